/*
 * docker: what a failed start leaves of the runtime, removed from the host.
 *
 * dockerd 20.10 cannot delete a containerd task that never left "created"
 * ("task must be stopped before deletion"), and with AutoRemove it drops
 * the container anyway. Under runc a failed start ends the task at once;
 * under runsc the task stays "created" while the sandbox process, its
 * gofer and the containerd shim go on running, and nothing ever removes
 * them: the daemon no longer knows the container, and containerd waits
 * for a delete that will not come. The provider only speaks the Engine
 * API, which has nothing left to ask; so after a failed start it looks on
 * the host for the shim whose "-id" is the container's id (64 hex digits
 * the daemon made for our own create, on nobody else's command line) and
 * kills it and everything below it. containerd, seeing its shim die,
 * deletes the task and the runtime's state itself.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cordon/sdk/host.h>
#include "plugins/docker/docker.h"

#define REAP_PROCS_MAX 256u
#define REAP_GRACE_MS 2000u     /* a shim that exits by itself does so at once */
#define REAP_WAIT_MS 10000u
#define REAP_POLL_MS 50u
#define CMDLINE_MAX 8192u

/* True when pid is a containerd shim whose argv holds "-id" <container_id>. */
static bool is_shim_of(pid_t pid, const char *container_id)
{
    char cmd[CMDLINE_MAX];
    ssize_t n = dk__read_proc(pid, "cmdline", cmd, sizeof(cmd));
    const char *arg0, *base;
    bool after_id = false;

    if (n <= 0)
        return false;
    arg0 = cmd;
    base = strrchr(arg0, '/');
    base = base != NULL ? base + 1 : arg0;
    if (strncmp(base, "containerd-shim", 15) != 0)
        return false;
    for (const char *a = cmd; a < cmd + n; a += strlen(a) + 1) {
        if (after_id && strcmp(a, container_id) == 0)
            return true;
        after_id = strcmp(a, "-id") == 0;
    }
    return false;
}

static size_t find_shims(const char *container_id, pid_t *out, size_t max)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    size_t n = 0;

    if (d == NULL)
        return 0;
    while ((de = readdir(d)) != NULL && n < max) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);

        if (*end != '\0' || pid <= 1 || pid == (long)getpid())
            continue;
        if (is_shim_of((pid_t)pid, container_id))
            out[n++] = (pid_t)pid;
    }
    closedir(d);
    return n;
}

/* Append the children of every thread of pid to procs (bounded, once each). */
static void add_children(pid_t pid, pid_t *procs, size_t *n, size_t max)
{
    char path[64];
    DIR *d;
    struct dirent *de;

    snprintf(path, sizeof(path), "/proc/%ld/task", (long)pid);
    d = opendir(path);
    if (d == NULL)
        return;
    while ((de = readdir(d)) != NULL && *n < max) {
        char name[96], list[CMDLINE_MAX];

        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        snprintf(name, sizeof(name), "task/%s/children", de->d_name);
        if (dk__read_proc(pid, name, list, sizeof(list)) < 0)
            continue;
        for (char *p = list, *end; *p != '\0' && *n < max; p = end) {
            long kid;
            bool seen = false;

            errno = 0;
            kid = strtol(p, &end, 10);
            if (errno != 0 || end == p)
                break;
            for (size_t i = 0; i < *n && !seen; i++)
                seen = procs[i] == (pid_t)kid;
            if (!seen && kid > 1)
                procs[(*n)++] = (pid_t)kid;
            while (*end == ' ' || *end == '\n')
                end++;
        }
    }
    closedir(d);
}

/* The parent of pid from its status, 0 when gone. */
static pid_t parent_of(pid_t pid)
{
    char status[4096], *p;

    if (dk__read_proc(pid, "status", status, sizeof(status)) <= 0 || (p = strstr(status, "\nPPid:")) == NULL)
        return 0;
    return (pid_t)atol(p + 6);
}

/*
 * SIGKILL through a pidfd taken while pid still has the parent we found it
 * under (or, for a shim, still is the shim of our container): a pid freed
 * and reused in between is never signalled.
 */
static void kill_checked(pid_t pid, pid_t parent, const char *container_id)
{
    int fd = (int)syscall(SYS_pidfd_open, pid, 0u);

    if (fd < 0)
        return;
    if (parent != 0 ? parent_of(pid) == parent : is_shim_of(pid, container_id))
        syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0u);
    close(fd);
}

static bool alive(pid_t pid)
{
    char state[512];
    const char *p;

    if (dk__read_proc(pid, "stat", state, sizeof(state)) <= 0 || (p = strrchr(state, ')')) == NULL)
        return false;
    /* A zombie waits for its reaper; it runs nothing any more. */
    return p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

int dk__runtime_reap(const char *container_id, struct cordon_error *err)
{
    pid_t shims[4], procs[REAP_PROCS_MAX], parents[REAP_PROCS_MAX];
    uint64_t deadline = cordon_now_monotonic_ms() + REAP_GRACE_MS;
    size_t nshims, n = 0;
    bool left;

    /* Whatever cleans up on its own is given the time to. */
    while ((nshims = find_shims(container_id, shims, 4)) > 0 && cordon_now_monotonic_ms() < deadline)
        dk__sleep_ms(REAP_POLL_MS);
    if (nshims == 0)
        return 0;
    for (size_t s = 0; s < nshims; s++) {
        size_t first = n;

        add_children(shims[s], procs, &n, REAP_PROCS_MAX);
        for (size_t i = first; i < n; i++)
            parents[i] = shims[s];
        /* Breadth first: what the children started, and so on. */
        for (size_t i = first; i < n; i++) {
            size_t before = n;

            add_children(procs[i], procs, &n, REAP_PROCS_MAX);
            for (size_t k = before; k < n; k++)
                parents[k] = procs[i];
        }
    }
    /* Children first: a shim killed before its sandbox would orphan it. */
    for (size_t i = n; i-- > 0;)
        kill_checked(procs[i], parents[i], container_id);
    for (size_t s = 0; s < nshims; s++)
        kill_checked(shims[s], 0, container_id);
    deadline = cordon_now_monotonic_ms() + REAP_WAIT_MS;
    do {
        left = false;
        for (size_t i = 0; i < n && !left; i++)
            left = alive(procs[i]);
        for (size_t s = 0; s < nshims && !left; s++)
            left = alive(shims[s]);
        if (left)
            dk__sleep_ms(REAP_POLL_MS);
    } while (left && cordon_now_monotonic_ms() < deadline);
    if (left)
        return cordon_error_set(err, CORDON_E_PROVIDER, 0,
                                "the runtime's processes of container %.12s (shim pid %ld) were still "
                                "running %u ms after SIGKILL", container_id, (long)shims[0], REAP_WAIT_MS);
    return (int)(n + nshims);
}
