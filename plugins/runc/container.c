/*
 * runc provider: a running container from the host's side. Its init is
 * pinned with a pidfd and checked against the execution's cgroup, so that
 * a recycled pid is never mistaken for it; its root is /proc/<pid>/root,
 * opened once as a directory fd, and everything beneath (the /workspace
 * tmpfs of its mount namespace) goes only through the sdk (openat2
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS): the host never follows a link
 * the sandbox planted. Killing the init ends every process of the
 * container's pid namespace at once; destroy removes the rest.
 *
 * Entering (runc__enter_*) starts a process inside without the runtime,
 * as `runc exec` would: see the comment above runc__enter_child.
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
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/capability.h>
#include <linux/sched.h>
#include <linux/keyctl.h>
#include <linux/seccomp.h>

#include <cordon/sdk/fs.h>
#include <cordon/sdk/path.h>

#include "plugins/runc/runc.h"

#define KILL_WAIT_MS 5000u
#define THAW_STEP_MS 250u     /* thawing again while a kill is awaited */
#define CGROUP_RM_MS 2000u
#define WAIT_P_PIDFD 3                   /* waitid's P_PIDFD (linux/wait.h) */
#define ENTER_NS (CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET | \
                  CLONE_NEWCGROUP)
#define CAP_MAX_PROBE 64                 /* PR_CAPBSET_DROP answers EINVAL past the last cap */

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

/*
 * Kill the init (and with it every process of its pid namespace); wait.
 * The sandbox is thawed first and again at every step of the wait: a
 * frozen task acts on SIGKILL only once thawed, and a freeze still in
 * progress on the host side (FREEZING) can take a task back after one
 * thaw.
 */
bool runc__init_kill(const struct cordon_resource *res, const char *id, int pidfd)
{
    struct pollfd p = { .fd = pidfd, .events = POLLIN };
    siginfo_t si;
    int ready = 0;

    for (unsigned waited = 0; ready == 0 && waited < KILL_WAIT_MS; waited += THAW_STEP_MS) {
        runc__cgroup_thaw(res->cgroup_version, id);
        if (pidfd_signal(pidfd, SIGKILL) != 0 && errno != ESRCH)
            return false;
        do
            ready = poll(&p, 1, THAW_STEP_MS);
        while (ready < 0 && errno == EINTR);
        if (ready < 0)
            return false;
    }
    if (ready == 0)
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

/* ---- entering ------------------------------------------------------------- */

/* Where a start inside the container failed; the words go into errors. */
enum enter_step {
    ENTER_DUMPABLE = 1, ENTER_CGROUP_OPEN, ENTER_PIDFD, ENTER_IDENTITY, ENTER_SETNS, ENTER_FORK,
    ENTER_CGROUP_JOIN, ENTER_SESSION, ENTER_KEYRING, ENTER_RLIMIT, ENTER_BOUNDING, ENTER_USER,
    ENTER_CWD, ENTER_CAPS, ENTER_NNP, ENTER_PDEATHSIG, ENTER_RELAY_GONE, ENTER_SECCOMP, ENTER_EXEC,
    ENTER_STEPS_
};

static const char *const enter_steps[ENTER_STEPS_] = {
    [ENTER_DUMPABLE] = "making itself non-dumpable",
    [ENTER_CGROUP_OPEN] = "opening its cgroups",
    [ENTER_PIDFD] = "reaching its init",
    [ENTER_IDENTITY] = "checking that the pid is still its init",
    [ENTER_SETNS] = "entering its namespaces",
    [ENTER_FORK] = "forking into its pid namespace",
    [ENTER_CGROUP_JOIN] = "joining its cgroups",
    [ENTER_SESSION] = "starting a session",
    [ENTER_KEYRING] = "joining a new session keyring",
    [ENTER_RLIMIT] = "setting rlimits",
    [ENTER_BOUNDING] = "emptying the capability bounding set",
    [ENTER_USER] = "switching to the sandbox user",
    [ENTER_CWD] = "entering the working directory",
    [ENTER_CAPS] = "emptying the capability sets",
    [ENTER_NNP] = "setting no_new_privs",
    [ENTER_PDEATHSIG] = "asking to hear of its relay's end",
    [ENTER_RELAY_GONE] = "starting (its relay was already killed)",
    [ENTER_SECCOMP] = "loading the seccomp filter",
    [ENTER_EXEC] = "executing " RUNC_INIT_IN_CONTAINER,
};

/* What /proc/<pid>/cmdline shows of the entering processes, in place of
 * the host's own command line (which the sandbox could otherwise read). */
static const char enter_cmdline[] = "cordon-enter";

/* Where this process's command line lives (fields 48 and 49 of
 * /proc/self/stat): the child overwrites its copy. */
static int argv_area(unsigned long *ret_start, unsigned long *ret_end, struct cordon_error *err)
{
    char text[1024], *p;
    unsigned long start = 0, end = 0;
    ssize_t n;
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC), field = 2;

    n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
    if (fd >= 0)
        close(fd);
    p = n > 0 ? (text[n] = '\0', strrchr(text, ')')) : NULL;
    /* After the command name in parentheses, fields are single tokens. */
    for (char *tok = p != NULL ? strtok_r(p + 1, " ", &p) : NULL; tok != NULL;
         tok = strtok_r(NULL, " ", &p)) {
        if (++field == 48)
            start = strtoul(tok, NULL, 10);
        else if (field == 49)
            end = strtoul(tok, NULL, 10);
    }
    if (start == 0 || end < start + sizeof(enter_cmdline) || end - start > (2ul << 20))
        return cordon_error_set(err, CORDON_E_PROVIDER, errno,
                                "exec: /proc/self/stat gives no argument area (%lu-%lu)", start,
                                end);
    *ret_start = start;
    *ret_end = end;
    return 0;
}

int runc__enter_open(const struct cordon_resource *res, const struct runc_state *st, int pidfd,
                     struct runc_enter *ret, struct cordon_error *err)
{
    struct runc_enter *e = ret;
    struct rlimit rl;
    struct stat sb;
    int r;

    memset(e, 0, sizeof(*e));
    e->ns_fd = -1;
    e->pid = st->pid;
    /* The child cannot inherit the pinned pidfd (the runner closes every
     * fd): it opens its own and checks it against this namespace, which
     * the open fd keeps alive so that its inode number stays unique. */
    snprintf(e->ns_path, sizeof(e->ns_path), "/proc/%d/ns/pid", (int)st->pid);
    e->ns_fd = open(e->ns_path, O_RDONLY | O_CLOEXEC);
    if (e->ns_fd < 0 || fstat(e->ns_fd, &sb) != 0 || pidfd_signal(pidfd, 0) != 0) {
        r = cordon_error_set(err, CORDON_E_NOT_FOUND, errno,
                             "execution %s: cannot reach the pid namespace of its init (%s): %s",
                             st->id, e->ns_path, strerror(errno));
        goto out;
    }
    e->ns_dev = sb.st_dev;
    e->ns_ino = sb.st_ino;
    r = runc__cgroup_join_files(res->cgroup_version, st->id, st->pid, &e->cgroups, err);
    if (r < 0)
        goto out;
    if ((r = argv_area(&e->arg_start, &e->arg_end, err)) < 0)
        goto out;
    e->uid = st->uid;
    e->gid = st->gid;
    e->max_fd = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
                        rl.rlim_cur < 1048576 ? (long)rl.rlim_cur : 1048576;
    if (res->seccomp == NULL)
        r = cordon_error_set(err, CORDON_E_PROVIDER, 0,
                             "exec: the runtime %s is not entered by setns", res->runtime_name);
    else
        r = runc__bpf_cache_get(res->seccomp, &e->seccomp, err);
    if (r < 0)
        goto out;
    e->report = mmap(NULL, sizeof(*e->report), PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (e->report == MAP_FAILED) {
        e->report = NULL;
        r = cordon_error_set(err, CORDON_E_NOMEM, errno, "exec: mmap: %s", strerror(errno));
    }
out:
    if (r < 0)
        runc__enter_close(e);
    return r;
}

void runc__enter_close(struct runc_enter *e)
{
    if (e->ns_fd >= 0)
        close(e->ns_fd);
    e->ns_fd = -1;
    if (e->report != NULL)
        munmap(e->report, sizeof(*e->report));
    e->report = NULL;
}

int runc__enter_error(const struct runc_enter *e, const char *id, int r, struct cordon_error *err)
{
    int step = e->report != NULL ? e->report->step : 0, errnum;

    if (step <= 0 || step >= ENTER_STEPS_)
        return r;
    errnum = e->report->errnum;
    /* The init gone between the pin and the child is the execution gone. */
    if (step == ENTER_PIDFD || step == ENTER_IDENTITY)
        return cordon_error_set(err, CORDON_E_NOT_FOUND, errnum,
                                "execution %s: its init (pid %d) is gone", id, (int)e->pid);
    return cordon_error_set(err, CORDON_E_PROVIDER, errnum,
                            "exec: starting the command in execution %s failed while %s: %s", id,
                            enter_steps[step], strerror(errnum));
}

/* ---- the child's side: raw system calls only, nothing allocated ------------ */

static int enter_fail(const struct runc_enter *e, int step, int errnum)
{
    e->report->step = step;
    e->report->errnum = errnum != 0 ? errnum : EIO;
    return e->report->errnum;
}

static void __attribute__((noreturn)) report_and_exit(int fd, int step, int errnum)
{
    struct runc_enter_report rep = { step, errnum != 0 ? errnum : EIO };
    ssize_t n;

    do
        n = write(fd, &rep, sizeof(rep));
    while (n < 0 && errno == EINTR);
    _exit(127);
}

static int close_from(int first, int last, long max_fd)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)first, (unsigned)last, 0u) == 0)
        return 0;
#endif
    for (long fd = first; fd <= last && fd < max_fd; fd++)
        close((int)fd);
    return 0;
}

/*
 * The process the command becomes, forked inside the container's pid
 * namespace: what `runc exec` applies to its process, in its order, then
 * execve of RUNC_INIT_IN_CONTAINER --exec ARGV (the container's own file,
 * bind-mounted read-only: /proc/self/exe is never a host binary when the
 * command's program is resolved, unlike CVE-2019-5736). Root until
 * ENTER_USER, never dumpable, so that no container process can ptrace it
 * or open its /proc files while it still holds the host's privileges.
 */
static void __attribute__((noreturn)) enter_exec(const struct runc_enter *e, const int *tasks,
                                                 int rfd)
{
    struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3];
    char cwd[64];

    memset(none, 0, sizeof(none));
    /* Born in the cgroup2 one (CLONE_INTO_CGROUP); the v1 ones now. */
    for (size_t i = 0; i < e->cgroups.n_tasks; i++) {
        if (write(tasks[i], "0", 1) != 1)
            report_and_exit(rfd, ENTER_CGROUP_JOIN, errno);
        close(tasks[i]);
    }
    /* A session of its own: no controlling terminal of the host's. */
    if (setsid() < 0)
        report_and_exit(rfd, ENTER_SESSION, errno);
    if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0 && errno != ENOSYS)
        report_and_exit(rfd, ENTER_KEYRING, errno);
    for (const struct runc_rlimit *l = runc__rlimits; l->name != NULL; l++) {
        rlim_t v = (rlim_t)runc__rlimit_value(l);
        struct rlimit rl = { v, v };

        if (setrlimit(l->resource, &rl) != 0)
            report_and_exit(rfd, ENTER_RLIMIT, errno);
    }
    for (int cap = 0;; cap++) {
        if (prctl(PR_CAPBSET_DROP, (unsigned long)cap, 0UL, 0UL, 0UL) == 0)
            continue;
        if (errno == EINVAL && cap > 0)
            break;
        report_and_exit(rfd, ENTER_BOUNDING, errno);
    }
    if (syscall(SYS_setgroups, 0, NULL) != 0 ||
        syscall(SYS_setresgid, e->gid, e->gid, e->gid) != 0 ||
        syscall(SYS_setresuid, e->uid, e->uid, e->uid) != 0)
        report_and_exit(rfd, ENTER_USER, errno);
    /* As the sandbox user, in the container's root: only a cwd the user
     * may enter (runc tries as root first), and one not reachable from /
     * is refused (the check runc added for CVE-2024-21626). */
    if (chdir(e->cwd) != 0)
        report_and_exit(rfd, ENTER_CWD, errno);
    if (syscall(SYS_getcwd, cwd, sizeof(cwd)) < 0 && errno != ERANGE)
        report_and_exit(rfd, ENTER_CWD, errno);
    if (errno != ERANGE && cwd[0] != '/')
        report_and_exit(rfd, ENTER_CWD, EXDEV);
    if (syscall(SYS_capset, &hdr, none) != 0 ||
        (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0UL, 0UL, 0UL) != 0 && errno != EINVAL))
        report_and_exit(rfd, ENTER_CAPS, errno);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL) != 0)
        report_and_exit(rfd, ENTER_NNP, errno);
    /* Nothing of the host's but stdio; the report pipe closes on exec. */
    if (rfd > 3)
        close_from(3, rfd - 1, e->max_fd);
    close_from(rfd + 1, ~0u >> 1, e->max_fd);
    /* A session of its own puts the command beyond the runner's kill of
     * the relay's group (timeout, cancel, overflow): cordon-init --exec
     * hears of the relay's end as SIGTERM and kills the command's group
     * itself. Asked for after the credential changes, which clear it. A
     * relay killed before that closed the report pipe's only other end
     * (ours to it are closed above): its write end polls POLLERR. */
    if (prctl(PR_SET_PDEATHSIG, (unsigned long)SIGTERM, 0UL, 0UL, 0UL) != 0)
        report_and_exit(rfd, ENTER_PDEATHSIG, errno);
    {
        struct pollfd pf = { rfd, 0, 0 };

        if (poll(&pf, 1, 0) > 0 && (pf.revents & POLLERR) != 0)
            report_and_exit(rfd, ENTER_RELAY_GONE, ESRCH);
    }
    /* Last, so that as few calls as possible run under the filter. */
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0u, &e->seccomp) != 0)
        report_and_exit(rfd, ENTER_SECCOMP, errno);
    execve(RUNC_INIT_IN_CONTAINER, e->argv, e->envp);
    report_and_exit(rfd, ENTER_EXEC, errno);
}

/* The command started: hold nothing, wait for it, end as it ended. */
static void __attribute__((noreturn)) enter_relay(pid_t pid, long max_fd)
{
    struct rlimit none = { 0, 0 };
    struct sigaction dfl;
    int status, sig;
    pid_t w;

    /* Our stdio too: the host reads the command's output until EOF. */
    close_from(0, ~0u >> 1, max_fd);
    do
        w = waitpid(pid, &status, 0);
    while (w < 0 && errno == EINTR);
    if (w < 0)
        _exit(126);
    if (WIFEXITED(status))
        _exit(WEXITSTATUS(status));
    /* Die of the same signal, without a core of this copy of the host. */
    sig = WTERMSIG(status);
    setrlimit(RLIMIT_CORE, &none);
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    kill(getpid(), sig);
    _exit(128 + sig);
}

/*
 * The runner's child_setup for exec_setns. Runs in the runner's child (a
 * new process group, stdio in place, every other fd closed), which stays
 * on the host's side of the pid namespace as the command's relay:
 *
 *   1. open the cgroup.procs files while /sys/fs/cgroup is still the
 *      host's (the child writes them: this process, a copy of the host's
 *      memory, never joins the container's memory or pids cgroup);
 *   2. pidfd_open the init and check it is the pinned one (its pid
 *      namespace is the inode runc__enter_open read);
 *   3. setns into its mount, pid, ipc, uts, net and cgroup namespaces
 *      (the user namespace stays the host's, as the runtime leaves it);
 *   4. fork: the child is inside the pid namespace (enter_exec); this
 *      process waits for its execve (the report pipe closes on exec) or
 *      its failure, and then relays its exit status (enter_relay).
 */
int runc__enter_child(void *arg)
{
    const struct runc_enter *e = arg;
    struct clone_args args;
    struct runc_enter_report rep;
    struct stat sb;
    int tasks[RUNC_ENTER_CGROUPS_MAX], p[2], pidfd, fd;
    size_t got = 0;
    pid_t pid;
    bool same;

    memset(&args, 0, sizeof(args));
    /* Never dumpable, the host's command line hidden: see enter_exec. */
    if (prctl(PR_SET_DUMPABLE, 0UL, 0UL, 0UL, 0UL) != 0)
        return enter_fail(e, ENTER_DUMPABLE, errno);
    prctl(PR_SET_NAME, (unsigned long)enter_cmdline, 0UL, 0UL, 0UL);
    /* The runner forked us: this is our own copy of the host's argv area
     * (/proc/<pid>/cmdline reads it; /proc/<pid>/environ needs ptrace). */
    memset((void *)e->arg_start, 0, e->arg_end - e->arg_start);
    memcpy((void *)e->arg_start, enter_cmdline, sizeof(enter_cmdline));
    for (size_t i = 0; i < e->cgroups.n_tasks; i++)
        if ((tasks[i] = open(e->cgroups.tasks[i], O_WRONLY | O_CLOEXEC)) < 0)
            return enter_fail(e, ENTER_CGROUP_OPEN, errno);
    /* The cgroup2 hierarchy is joined by clone3 itself (CLONE_INTO_CGROUP). */
    if (e->cgroups.dir2[0] != '\0') {
        int dir2 = open(e->cgroups.dir2, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (dir2 < 0)
            return enter_fail(e, ENTER_CGROUP_OPEN, errno);
        args.flags = CLONE_INTO_CGROUP;
        args.cgroup = (uint64_t)dir2;
    }
    pidfd = pidfd_open_pid(e->pid);
    if (pidfd < 0)
        return enter_fail(e, ENTER_PIDFD, errno);
    fd = open(e->ns_path, O_RDONLY | O_CLOEXEC);
    same = fd >= 0 && fstat(fd, &sb) == 0 && sb.st_dev == e->ns_dev && sb.st_ino == e->ns_ino;
    if (fd >= 0)
        close(fd);
    /* Alive after the check: the /proc entry we read was pidfd's process. */
    if (!same || pidfd_signal(pidfd, 0) != 0)
        return enter_fail(e, ENTER_IDENTITY, ESRCH);
    if (setns(pidfd, ENTER_NS) != 0)
        return enter_fail(e, ENTER_SETNS, errno);
    close(pidfd);
    if (pipe2(p, O_CLOEXEC) != 0)
        return enter_fail(e, ENTER_FORK, errno);
    /* A fork (no stack of its own) into the pid namespace we entered. */
    args.exit_signal = SIGCHLD;
    pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
    if (pid < 0)
        return enter_fail(e, ENTER_FORK, errno);
    if (pid == 0)
        enter_exec(e, tasks, p[1]);
    close(p[1]);
    while (got < sizeof(rep)) {
        ssize_t n = read(p[0], (char *)&rep + got, sizeof(rep) - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (got == sizeof(rep)) {
        int status;

        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        return enter_fail(e, rep.step, rep.errnum);
    }
    enter_relay(pid, e->max_fd);
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
    char msg[320], *bundle = runc__bundle_path(res, id), *state = NULL;
    int pidfd = -1, r = 0;
    bool pinned = false, stopped = false;

    if (bundle == NULL || asprintf(&state, "%s/%s", res->cfg.root, id) < 0) {
        free(bundle);
        return runc__nomem(err, "terminate");
    }
    if (pid <= 0)
        pid = runc__runtime_pid(res, id);
    /* A sandbox frozen or stopped from the host side is still ours to end.
     * runc__init_kill thaws it; this thaw is for the case without an init
     * to pin, whose processes die of their pid namespace only once thawed. */
    runc__cgroup_thaw(res->cgroup_version, id);
    /* Killing the init ends its pid namespace at once; runc delete --force
     * would poll for that in 100 ms steps. An init that is not there any
     * more took every process of the container with it. */
    pinned = pid > 0 && runc__init_pin(res, id, pid, &pidfd, NULL) == 0;
    stopped = pinned && runc__init_kill(res, id, pidfd);
    if (pinned && !stopped) {
        r = runc__runtime_cmd(res, kill_args, &c, err);
        runc__cmd_result_clear(&c);
    }
    /*
     * runc's delete of a stopped container is its destroy(): remove the
     * cgroups, remove <root>/<id>, run the poststop hooks (config.json has
     * none). When we saw the init die, we do that here rather than start
     * the runtime for it; any other case, or runtime, asks the runtime.
     */
    if (r == 0 && !(stopped && strcmp(res->runtime_name, "runc") == 0))
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
    if (cordon_fs_remove_tree_path(state, &e2) < 0 && r == 0)
        r = cordon_error_set(err, e2.code, e2.os_errno, "%s", e2.message);
    if (cordon_fs_remove_tree_path(bundle, &e2) < 0 && r == 0)
        r = cordon_error_set(err, e2.code, e2.os_errno, "%s", e2.message);
    /* Nothing runs as the execution's uid any more: it goes back. */
    if (r == 0 && res->cfg.pooled)
        r = cordon_uid_give_back(NULL, res->host->host_instance_id, id, err);
    if (pidfd >= 0)
        close(pidfd);
    free(state);
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
