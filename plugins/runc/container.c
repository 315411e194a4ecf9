/*
 * runc provider: a running container from the host's side. Its init is
 * pinned with a pidfd and checked against the execution's cgroup, so that
 * a recycled pid is never mistaken for it; its root is /proc/<pid>/root,
 * opened once as a directory fd, and everything beneath (the /workspace
 * tmpfs of its mount namespace) goes only through the sdk (openat2
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS): the host never follows a link
 * the sandbox planted. Killing the init ends every process of the
 * container's pid namespace at once; destroy removes the rest.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cordon/sdk/fs.h>
#include <cordon/sdk/path.h>

#include "plugins/runc/runc.h"

#define KILL_WAIT_MS 5000u
#define CGROUP_RM_MS 2000u
#define WAIT_P_PIDFD 3                   /* waitid's P_PIDFD (linux/wait.h) */

/* ---- the container's init ------------------------------------------------ */

static int pidfd_open_pid(pid_t pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0u);
#else
    errno = ENOSYS;
    return -1;
#endif
}

static int pidfd_signal(int pidfd, int sig)
{
    return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0u);
}

/*
 * A pidfd of the execution's init: the pid must still be a member of the
 * execution's cgroup once pinned, so a recycled pid is never taken for it.
 */
int runc__init_pin(const struct cordon_resource *res, const char *id, pid_t pid, int *ret_fd,
                   struct cordon_error *err)
{
    int fd;

    if (pid <= 1)
        return cordon_error_set(err, CORDON_E_NOT_FOUND, 0, "execution %s: no init pid", id);
    fd = pidfd_open_pid(pid);
    if (fd < 0 || !runc__cgroup_holds(res->cgroup_version, id, pid)) {
        if (fd >= 0)
            close(fd);
        return cordon_error_set(err, CORDON_E_NOT_FOUND, errno,
                                "execution %s: its init (pid %d) is gone (deadline passed, "
                                "killed, or terminated)", id, (int)pid);
    }
    *ret_fd = fd;
    return 0;
}

/* The container's root as a directory fd: /proc/<pid>/root, a magic link
 * opened once here; everything beneath it goes through the sdk. */
int runc__init_root(int pidfd, pid_t pid, const char *id, int *ret_fd, struct cordon_error *err)
{
    char path[64];
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
    fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    /* Still alive after the open: the /proc entry was our init's. */
    if (fd < 0 || pidfd_signal(pidfd, 0) != 0) {
        if (fd >= 0)
            close(fd);
        return cordon_error_set(err, CORDON_E_NOT_FOUND, errno,
                                "execution %s: cannot reach its root through %s: %s", id, path,
                                strerror(errno));
    }
    *ret_fd = fd;
    return 0;
}

/* Kill the init (and with it every process of its pid namespace); wait. */
bool runc__init_kill(int pidfd)
{
    struct pollfd p = { .fd = pidfd, .events = POLLIN };
    siginfo_t si;

    if (pidfd_signal(pidfd, SIGKILL) != 0 && errno != ESRCH)
        return false;
    if (poll(&p, 1, KILL_WAIT_MS) <= 0)
        return false;
    /* If our process is a subreaper the init may be our child: reap it. */
    memset(&si, 0, sizeof(si));
    waitid((idtype_t)WAIT_P_PIDFD, (id_t)pidfd, &si, WEXITED | WNOHANG);
    return true;
}

/* Bring the loopback interface of the container's network namespace up
 * (runc leaves it down), from a thread that joins that namespace alone. */
struct lo_job {
    int pidfd;
    pid_t pid;
    int error;
};

/* setns takes a pidfd since Linux 5.8; older kernels need the ns file,
 * checked against the pidfd after opening it. */
static int join_net(const struct lo_job *job)
{
    char path[64];
    int fd, r;

    if (setns(job->pidfd, CLONE_NEWNET) == 0)
        return 0;
    if (errno != EINVAL)
        return errno;
    snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)job->pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    r = pidfd_signal(job->pidfd, 0) == 0 && setns(fd, CLONE_NEWNET) == 0 ? 0 : errno;
    close(fd);
    return r;
}

static void *lo_up_main(void *arg)
{
    struct lo_job *job = arg;
    struct ifreq ifr;
    int s;

    job->error = join_net(job);
    if (job->error != 0)
        return NULL;
    s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
    if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) != 0) {
        job->error = errno;
    } else {
        ifr.ifr_flags |= IFF_UP;
        if (ioctl(s, SIOCSIFFLAGS, &ifr) != 0)
            job->error = errno;
    }
    if (s >= 0)
        close(s);
    return NULL;
}

int runc__lo_up(int pidfd, pid_t pid, struct cordon_error *err)
{
    struct lo_job job = { .pidfd = pidfd, .pid = pid, .error = 0 };
    pthread_t t;
    int r = pthread_create(&t, NULL, lo_up_main, &job);

    if (r != 0)
        return cordon_error_set(err, CORDON_E_IO, r, "loopback: thread: %s", strerror(r));
    pthread_join(t, NULL);
    if (job.error != 0)
        return cordon_error_set(err, CORDON_E_IO, job.error,
                                "loopback: bringing lo up in the container: %s",
                                strerror(job.error));
    return 0;
}

/* ---- destroying ---------------------------------------------------------- */

static bool gone_message(const char *msg)
{
    return strstr(msg, "not exist") != NULL || strstr(msg, "no such") != NULL;
}

/*
 * Everything of one execution, from every state: the init (and with it the
 * pid namespace), the runtime's container, the cgroups, the bundle.
 * Already gone is success; the first real failure is reported, after
 * every other step was still tried.
 */
int runc__destroy(const struct cordon_resource *res, const char *id, pid_t pid,
                  struct cordon_error *err)
{
    const char *kill_args[] = { "kill", "--all", id, "KILL", NULL };
    const char *delete_args[] = { "delete", "--force", id, NULL };
    struct cordon_error e2;
    struct runc_cmd_result c = { 0 };
    char msg[320], *bundle = runc__bundle_path(res, id);
    int pidfd = -1, r = 0;

    if (bundle == NULL)
        return runc__nomem(err, "terminate");
    if (pid <= 0)
        pid = runc__runtime_pid(res, id);
    /* Killing the init ends its pid namespace at once; runc delete --force
     * would poll for that in 100 ms steps. An init that is not there any
     * more took every process of the container with it. */
    if (pid > 0 && runc__init_pin(res, id, pid, &pidfd, NULL) == 0 &&
        !runc__init_kill(pidfd)) {
        r = runc__runtime_cmd(res, kill_args, &c, err);
        runc__cmd_result_clear(&c);
    }
    if (r == 0)
        r = runc__runtime_cmd(res, delete_args, &c, err);
    if (r == 0 && c.exit_code != 0) {
        runc__cmd_message(c.errtext, msg, sizeof(msg));
        if (!gone_message(msg))
            r = cordon_error_set(err, CORDON_E_PROVIDER, 0, "%s delete %s: %s (exit %d)",
                                 res->runtime_name, id, msg, c.exit_code);
    }
    runc__cmd_result_clear(&c);
    cordon_error_init(&e2);
    if (runc__cgroup_remove(res->cgroup_version, id, CGROUP_RM_MS, &e2) < 0 && r == 0)
        r = cordon_error_set(err, e2.code, e2.os_errno, "%s", e2.message);
    if (cordon_fs_remove_tree_path(bundle, &e2) < 0 && r == 0)
        r = cordon_error_set(err, e2.code, e2.os_errno, "%s", e2.message);
    if (pidfd >= 0)
        close(pidfd);
    free(bundle);
    return r;
}

/* ---- workspace ------------------------------------------------------------ */

/* /workspace of the container as a directory fd. */
int runc__workspace_open(int root_fd, int *ret_fd, struct cordon_error *err)
{
    return cordon_fs_open_beneath(root_fd, "workspace", O_RDONLY | O_DIRECTORY, 0, ret_fd, err);
}

/*
 * Open the normalised directory rel beneath ws_fd, never through a link.
 * With create, missing directories are made 0755 and, with give, handed
 * to uid:gid.
 */
/* Layout "code": source/ stays root's, build/ output/ logs/ are the user's. */
int runc__workspace_layout(int ws_fd, uid_t uid, gid_t gid, struct cordon_error *err)
{
    static const char *const dirs[] = { "source", "build", "output", "logs" };
    int fd, r = 0;

    for (size_t i = 0; i < 4 && r == 0; i++) {
        r = cordon_fs_walk_dirs(ws_fd, "workspace", dirs[i], true, i > 0, uid, gid, &fd, err);
        if (r == 0)
            close(fd);
    }
    return r;
}

/* The workspace of a running execution as a directory fd. */
int runc__state_workspace(const struct cordon_resource *res, const struct runc_state *st,
                          int *ret_fd, struct cordon_error *err)
{
    int pidfd = -1, root_fd = -1, r;

    r = runc__init_pin(res, st->id, st->pid, &pidfd, err);
    if (r == 0)
        r = runc__init_root(pidfd, st->pid, st->id, &root_fd, err);
    if (r == 0)
        r = runc__workspace_open(root_fd, ret_fd, err);
    if (root_fd >= 0)
        close(root_fd);
    if (pidfd >= 0)
        close(pidfd);
    return r;
}
