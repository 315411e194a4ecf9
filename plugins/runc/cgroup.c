/*
 * runc provider: the cgroup side of an execution. The runtime creates the
 * cgroups from config.json; we read every limit back from the kernel's own
 * files before any code runs (fail closed), count OOM kills, and remove
 * what the runtime leaves behind. v1 (one hierarchy per controller under
 * /sys/fs/cgroup) and v2 (unified) are both handled.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "plugins/runc/runc.h"

#define CGROUP_ROOT "/sys/fs/cgroup"
#define CGROUP2_MAGIC 0x63677270
#define TEXT_MAX 4096
#define RETRY_MS 10

int runc__cgroup_version(void)
{
    struct statfs sf;

    return statfs(CGROUP_ROOT, &sf) == 0 && sf.f_type == CGROUP2_MAGIC ? 2 : 1;
}

bool runc__cgroup_has_memsw(int version)
{
    return version == 2 || access(CGROUP_ROOT "/memory/memory.memsw.limit_in_bytes", F_OK) == 0;
}

/* The file of a controller's cgroup for the execution; v2 ignores ctrl. */
static void cg_file(int version, const char *ctrl, const char *id, const char *file, char *buf,
                    size_t size)
{
    if (version == 2)
        snprintf(buf, size, CGROUP_ROOT RUNC_CGROUP_PREFIX "%s/%s", id, file);
    else
        snprintf(buf, size, CGROUP_ROOT "/%s" RUNC_CGROUP_PREFIX "%s/%s", ctrl, id, file);
}

/* A small kernel file, NUL-terminated, trailing newline removed; false if unreadable. */
static bool read_text(const char *path, char *buf, size_t size)
{
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return false;
    do
        n = read(fd, buf, size - 1);
    while (n < 0 && errno == EINTR);
    close(fd);
    if (n < 0)
        return false;
    buf[n] = '\0';
    while (n > 0 && buf[n - 1] == '\n')
        buf[--n] = '\0';
    return true;
}

/* The number after "key " on a line of a flat-keyed file (memory.events). */
static bool keyed_value(const char *text, const char *key, uint64_t *ret)
{
    size_t klen = strlen(key);

    for (const char *line = text; line != NULL && *line != '\0';) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ' ') {
            *ret = strtoull(line + klen + 1, NULL, 10);
            return true;
        }
        line = strchr(line, '\n');
        line = line != NULL ? line + 1 : NULL;
    }
    return false;
}

/* One limit: the file must read exactly want. */
static int expect(int version, const char *ctrl, const char *id, const char *file,
                  const char *what, const char *want, struct cordon_error *err)
{
    char path[512], got[TEXT_MAX];

    cg_file(version, ctrl, id, file, path, sizeof(path));
    if (!read_text(path, got, sizeof(got)))
        return cordon_error_set(err, CORDON_E_UNSAFE, errno,
                                "%s: the limit is not in place (%s: %s); refusing to run "
                                "without it", what, path, strerror(errno));
    if (strcmp(got, want) != 0)
        return cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                "%s: %s reads \"%.*s\", not the requested \"%s\"; refusing to "
                                "run without the limit",
                                what, path, cordon_text_fit(got, 64), got, want);
    return 0;
}

bool runc__cgroup_holds(int version, const char *execution_id, pid_t pid)
{
    char path[64], text[TEXT_MAX], want[160];

    snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
    if (!read_text(path, text, sizeof(text)))
        return false;
    /* v1 lines are "N:pids:/path", the unified one "0::/path". */
    snprintf(want, sizeof(want), "%s:" RUNC_CGROUP_PREFIX "%s", version == 2 ? "0:" : ":pids",
             execution_id);
    for (char *line = text; line != NULL && *line != '\0';) {
        char *end = strchr(line, '\n');
        char *at = strstr(line, want);

        if (end != NULL)
            *end = '\0';
        /* The match must end the line: "/cordon-a" is not "/cordon-ab". */
        if (at != NULL && at[strlen(want)] == '\0' && (version == 2 ? at == line : true))
            return true;
        line = end != NULL ? end + 1 : NULL;
    }
    return false;
}

int runc__cgroup_verify(int version, const char *execution_id, pid_t pid,
                        const struct cordon_limits *limits, bool swap, struct cordon_error *err)
{
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    /* The kernel keeps memory limits in whole pages, rounded down. */
    uint64_t mem = limits->memory_bytes / page * page;
    char want_mem[32], want_pids[32], want_quota[32], want_period[32], want_cpu[64];
    int r;

    snprintf(want_mem, sizeof(want_mem), "%" PRIu64, mem);
    snprintf(want_pids, sizeof(want_pids), "%" PRIu64, limits->pids);
    snprintf(want_quota, sizeof(want_quota), "%" PRIu64, runc__cpu_quota_us(limits->cpus));
    snprintf(want_period, sizeof(want_period), "%u", RUNC_CPU_PERIOD_US);
    snprintf(want_cpu, sizeof(want_cpu), "%s %s", want_quota, want_period);
    if (version == 2) {
        /* memory.swap.max is swap beyond memory: 0 when swap equals memory. */
        r = expect(2, NULL, execution_id, "memory.max", "memory_bytes", want_mem, err);
        if (r == 0 && swap)
            r = expect(2, NULL, execution_id, "memory.swap.max", "memory_bytes (swap)", "0", err);
        if (r == 0)
            r = expect(2, NULL, execution_id, "pids.max", "pids", want_pids, err);
        if (r == 0)
            r = expect(2, NULL, execution_id, "cpu.max", "cpus", want_cpu, err);
    } else {
        r = expect(1, "memory", execution_id, "memory.limit_in_bytes", "memory_bytes", want_mem,
                   err);
        if (r == 0 && swap)
            r = expect(1, "memory", execution_id, "memory.memsw.limit_in_bytes",
                       "memory_bytes (memory+swap)", want_mem, err);
        if (r == 0)
            r = expect(1, "pids", execution_id, "pids.max", "pids", want_pids, err);
        if (r == 0)
            r = expect(1, "cpu", execution_id, "cpu.cfs_quota_us", "cpus (quota)", want_quota, err);
        if (r == 0)
            r = expect(1, "cpu", execution_id, "cpu.cfs_period_us", "cpus (period)", want_period,
                       err);
    }
    if (r == 0 && !runc__cgroup_holds(version, execution_id, pid))
        r = cordon_error_set(err, CORDON_E_UNSAFE, 0,
                             "cgroup: the container's init (pid %d) is not in cgroup "
                             RUNC_CGROUP_PREFIX "%s; its limits would not apply",
                             (int)pid, execution_id);
    return r;
}

uint64_t runc__cgroup_oom_kills(int version, const char *execution_id)
{
    char path[512], text[TEXT_MAX];
    uint64_t n = 0;

    cg_file(version, "memory", execution_id, version == 2 ? "memory.events" : "memory.oom_control",
            path, sizeof(path));
    if (read_text(path, text, sizeof(text)))
        keyed_value(text, "oom_kill", &n);
    return n;
}

/* How many lines of pid's /proc/<pid>/cgroup name the execution's cgroup
 * (one per hierarchy: "N:controllers:/cordon-<id>"); -1 if unreadable. */
static int member_lines(const char *execution_id, pid_t pid)
{
    char path[64], text[TEXT_MAX], want[128];
    int n = 0;

    snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
    snprintf(want, sizeof(want), ":" RUNC_CGROUP_PREFIX "%s", execution_id);
    if (!read_text(path, text, sizeof(text)))
        return -1;
    for (char *line = text; line != NULL && *line != '\0';) {
        char *end = strchr(line, '\n');
        char *colon;

        if (end != NULL)
            *end = '\0';
        colon = strchr(line, ':');
        colon = colon != NULL ? strchr(colon + 1, ':') : NULL;
        n += colon != NULL && strcmp(colon, want) == 0;
        line = end != NULL ? end + 1 : NULL;
    }
    return n;
}

int runc__cgroup_join_files(int version, const char *execution_id, pid_t pid,
                            struct runc_cgroup_join *ret, struct cordon_error *err)
{
    struct runc_cgroup_join j = { .n_tasks = 0, .dir2 = "" };
    struct dirent *de;
    struct statfs sf;
    struct stat st;
    int lines = member_lines(execution_id, pid), r = 0;
    size_t found = 0;
    DIR *dir;

    if (version == 2) {
        snprintf(j.dir2, sizeof(j.dir2), CGROUP_ROOT RUNC_CGROUP_PREFIX "%s", execution_id);
        found = access(j.dir2, W_OK) == 0 ? 1 : 0;
    } else if ((dir = opendir(CGROUP_ROOT)) == NULL) {
        return cordon_error_set(err, CORDON_E_IO, errno, "cgroup: %s: %s", CGROUP_ROOT,
                                strerror(errno));
    } else {
        /* Every mounted hierarchy; a symlink (cpu -> cpu,cpuacct) names one twice. */
        while ((de = readdir(dir)) != NULL && r == 0) {
            char path[RUNC_CGROUP_FILE_MAX];

            if (de->d_name[0] == '.' || strlen(de->d_name) > 64)
                continue;
            snprintf(path, sizeof(path), CGROUP_ROOT "/%s", de->d_name);
            if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || statfs(path, &sf) != 0)
                continue;
            /* Hybrid: the unified hierarchy is joined at fork, the others by thread. */
            if (sf.f_type == CGROUP2_MAGIC) {
                snprintf(path, sizeof(path), CGROUP_ROOT "/%s" RUNC_CGROUP_PREFIX "%s",
                         de->d_name, execution_id);
                if (access(path, W_OK) == 0 && j.dir2[0] == '\0') {
                    memcpy(j.dir2, path, sizeof(path));
                    found++;
                }
                continue;
            }
            cg_file(1, de->d_name, execution_id, "tasks", path, sizeof(path));
            if (access(path, W_OK) != 0)
                continue;
            if (j.n_tasks == RUNC_ENTER_CGROUPS_MAX)
                r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                                     "cgroup: more than %u hierarchies hold " RUNC_CGROUP_PREFIX
                                     "%s", RUNC_ENTER_CGROUPS_MAX, execution_id);
            else
                memcpy(j.tasks[j.n_tasks++], path, sizeof(path));
            found++;
        }
        closedir(dir);
    }
    /* A hierarchy we would not join is a limit the process would escape. */
    if (r == 0 && (found == 0 || (int)found != lines))
        r = cordon_error_set(err, CORDON_E_UNSAFE, 0,
                             "cgroup: the init (pid %d) is in " RUNC_CGROUP_PREFIX "%s of %d "
                             "hierarchies, %zu of them found under " CGROUP_ROOT "; refusing to "
                             "start a process that would not join them all", (int)pid,
                             execution_id, lines, found);
    if (r == 0)
        *ret = j;
    return r;
}

/* Write text to a cgroup file; a file that is not there is nothing to do. */
static void write_if_there(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);

    if (fd < 0)
        return;
    (void)!write(fd, text, strlen(text));
    close(fd);
}

/*
 * Undo a host-side stop. A frozen task (v1 freezer, v2 cgroup.freeze)
 * does not act on SIGKILL until it is thawed, so that the kill that ends
 * an execution would wait for someone to thaw it by hand; a task stopped
 * by SIGSTOP dies of SIGKILL but stays stopped otherwise. Each process in
 * the cgroup gets SIGCONT through a pidfd taken before the cgroup is read
 * again, so that a pid reused by a host process is never signalled.
 */
void runc__cgroup_thaw(int version, const char *execution_id)
{
    char path[512], *text, *p;
    int fd;
    ssize_t n;

    cg_file(version, "freezer", execution_id, version == 2 ? "cgroup.freeze" : "freezer.state",
            path, sizeof(path));
    write_if_there(path, version == 2 ? "0" : "THAWED");
    cg_file(version, "pids", execution_id, "cgroup.procs", path, sizeof(path));
    text = malloc(RUNC_THAW_PROCS_MAX);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    n = text != NULL && fd >= 0 ? read(fd, text, RUNC_THAW_PROCS_MAX - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n < 0) {
        free(text);
        return;
    }
    text[n] = '\0';
    for (p = text; *p != '\0';) {
        pid_t pid = (pid_t)strtol(p, &p, 10);
        int pidfd = pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0u) : -1;

        if (pidfd >= 0 && runc__cgroup_holds(version, execution_id, pid))
            (void)syscall(SYS_pidfd_send_signal, pidfd, SIGCONT, NULL, 0u);
        if (pidfd >= 0)
            close(pidfd);
        while (*p == '\n')
            p++;
        if (pid <= 0 && *p != '\0')
            p++;
    }
    free(text);
}

static void pause_ms(unsigned ms)
{
    struct timespec ts = { 0, (long)ms * 1000000L };

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* rmdir one cgroup directory, retrying while its last processes exit. */
static int remove_dir(const char *path, unsigned timeout_ms, struct cordon_error *err)
{
    for (unsigned waited = 0;; waited += RETRY_MS) {
        if (rmdir(path) == 0 || errno == ENOENT || errno == ENOTDIR)
            return 0;
        if (errno != EBUSY || waited >= timeout_ms)
            return cordon_error_set(err, CORDON_E_IO, errno, "cgroup: cannot remove %s: %s",
                                    path, strerror(errno));
        pause_ms(RETRY_MS);
    }
}

int runc__cgroup_remove(int version, const char *execution_id, unsigned timeout_ms,
                        struct cordon_error *err)
{
    char path[512];
    struct dirent *de;
    DIR *dir;
    int r = 0;

    if (version == 2) {
        snprintf(path, sizeof(path), CGROUP_ROOT RUNC_CGROUP_PREFIX "%s", execution_id);
        return remove_dir(path, timeout_ms, err);
    }
    /* Every hierarchy the runtime may have used, named ones included. */
    dir = opendir(CGROUP_ROOT);
    if (dir == NULL)
        return cordon_error_set(err, CORDON_E_IO, errno, "cgroup: %s: %s", CGROUP_ROOT,
                                strerror(errno));
    while ((de = readdir(dir)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), CGROUP_ROOT "/%s" RUNC_CGROUP_PREFIX "%s", de->d_name,
                 execution_id);
        if (r == 0)
            r = remove_dir(path, timeout_ms, err);
        else
            remove_dir(path, 0, NULL);
    }
    closedir(dir);
    return r;
}
