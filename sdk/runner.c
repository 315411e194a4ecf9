/*
 * sdk: the bounded process runner.
 *
 * The program is resolved before the child is made, the child gets a
 * process group of its own and only fds 0-2, and the parent waits in one
 * poll loop over the
 * capture pipes, the stdin pipe, the caller's cancel fd and a pidfd of the
 * leader. No signal handler is installed: SIGPIPE is blocked for the
 * calling thread only, for the duration of the run.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cordon/sdk/host.h>
#include <cordon/sdk/runner.h>

/* AddressSanitizer keeps the shadow of a stack it did not make: a child
 * stack mapped where an earlier one was would start with that one's stale
 * redzones, and the child's first noreturn call reports them. */
#if defined(__SANITIZE_ADDRESS__)
#define RUNNER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RUNNER_ASAN 1
#endif
#endif
#ifdef RUNNER_ASAN
#include <sanitizer/asan_interface.h>
#define stack_fresh(p, n) __asan_unpoison_memory_region((p), (n))
#else
#define stack_fresh(p, n) ((void)(p), (void)(n))
#endif

#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"
#define DRAIN_MS 200          /* reading on after the leader died */
#define SETTLE_MS 1000        /* waiting for a killed group's last members */
#define SETTLE_STEP_NS 1000000L
#define WAIT_POLL_MS 5        /* waitid polling when pidfd_open is missing */
#define IO_CHUNK 65536
#define READS_PER_WAKE 16     /* stay responsive to the deadline under a flood */
#define CHILD_STACK (256u << 10) /* the child's own stack until it execs */
/* cordon_runner_opts before fork_child was appended. */
#define RUNNER_OPTS_V1_SIZE (offsetof(struct cordon_runner_opts, child_setup_arg) + sizeof(void *))
/* With fork_child, before pass_fds was appended. */
#define RUNNER_OPTS_V2_SIZE offsetof(struct cordon_runner_opts, pass_fds)

/* What the child reports through the CLOEXEC pipe when it cannot exec. */
enum child_step { STEP_FDS = 1, STEP_CHDIR = 2, STEP_SETUP = 3, STEP_EXEC = 4 };
struct child_report {
    int step;
    int errnum;
};

/* Everything the child needs, prepared by the parent (the child shares
 * the parent's memory until it execs: it allocates nothing and writes
 * nothing of the parent's). */
struct child_plan {
    const char *path;
    char *const *argv;
    char *const *envp;
    const char *cwd;
    int fds[3];               /* become 0, 1 and 2 */
    int report_fd;
    int keep[CORDON_RUNNER_PASS_FDS_MAX + 1]; /* report_fd and pass_fds, ascending */
    size_t n_keep;
    long max_fd;              /* bound of the close loop when close_range is missing */
    cordon_runner_child_fn setup;
    void *setup_arg;
};

struct run {
    const struct cordon_runner_opts *o;
    struct cordon_capture *cap;
    int out_r, err_r, in_w;   /* the parent's pipe ends, -1 once closed */
    size_t in_off;
    bool epipe;
    pid_t pid;
    int pidfd;
    bool leader_gone;
    int wstatus;
    uint64_t end_ms;
    bool fired;               /* we decided to end the run: reason is set */
    enum cordon_run_status reason;
    int kill_sig;
    bool term_sent, killed;
    uint64_t kill_at;
};

void cordon_runner_opts_init(struct cordon_runner_opts *opts)
{
    if (opts == NULL)
        return;
    memset(opts, 0, sizeof(*opts));
    opts->struct_size = (uint32_t)sizeof(*opts);
    opts->stdin_fd = -1;
    opts->stdout_fd = -1;
    opts->stderr_fd = -1;
    opts->cancel_fd = -1;
}

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* ---- the child: async-signal-safe calls only -------------------------- */

static CORDON_RUNNER_CHILD void __attribute__((noreturn)) child_fail(int fd, int step, int errnum)
{
    struct child_report r = { step, errnum };
    ssize_t n;

    do
        n = write(fd, &r, sizeof(r));
    while (n < 0 && errno == EINTR);
    _exit(127);
}

/* Move fd out of 0-2 so that dup2 onto 0-2 never meets itself. */
static CORDON_RUNNER_CHILD int raise_fd(int fd)
{
    return fd >= 0 && fd < 3 ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : fd;
}

/* Close every fd above 2 but those of keep (ascending, each >= 3). */
static CORDON_RUNNER_CHILD void close_all_but(const int *keep, size_t n_keep, long max_fd)
{
    unsigned from = 3;
    size_t k = 0;

#ifdef SYS_close_range
    bool ok = true;

    for (k = 0; k < n_keep && ok; k++) {
        if ((unsigned)keep[k] > from && syscall(SYS_close_range, from, (unsigned)keep[k] - 1, 0u) != 0)
            ok = false;
        from = (unsigned)keep[k] + 1;
    }
    if (ok && syscall(SYS_close_range, from, ~0u, 0u) == 0)
        return;
#endif
    k = 0;
    for (long fd = 3; fd < max_fd; fd++) {
        while (k < n_keep && keep[k] < fd)
            k++;
        if (k < n_keep && keep[k] == fd)
            continue;
        close((int)fd);
    }
    (void)from;
}

static CORDON_RUNNER_CHILD int __attribute__((noreturn)) child_exec(void *arg)
{
    const struct child_plan *p = arg;
    struct sigaction dfl;
    sigset_t none;
    int fds[3], report = p->report_fd, e;

    setpgid(0, 0);
    /* The parent blocked every signal around clone, so none of its handlers
     * can run here on the shared memory: reset them, then unblock. */
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        sigaction(sig, &dfl, NULL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);

    report = raise_fd(report);
    if (report < 0)
        _exit(127);
    for (int i = 0; i < 3; i++) {
        fds[i] = raise_fd(p->fds[i]);
        if (fds[i] < 0)
            child_fail(report, STEP_FDS, errno);
    }
    for (int i = 0; i < 3; i++)
        if (dup2(fds[i], i) < 0)
            child_fail(report, STEP_FDS, errno);
    /* report may have moved (raise_fd): keep where it is now. */
    {
        int keep[CORDON_RUNNER_PASS_FDS_MAX + 1];
        size_t n = 0;

        for (size_t i = 0; i < p->n_keep; i++) {
            int fd = p->keep[i] == p->report_fd ? report : p->keep[i];

            /* insertion keeps the list ascending; n is at most 65 */
            size_t j = n++;
            while (j > 0 && keep[j - 1] > fd) {
                keep[j] = keep[j - 1];
                j--;
            }
            keep[j] = fd;
        }
        close_all_but(keep, n, p->max_fd);
    }
    for (size_t i = 0; i < p->n_keep; i++)
        if (p->keep[i] != p->report_fd && fcntl(p->keep[i], F_SETFD, 0) < 0)
            child_fail(report, STEP_FDS, errno);
    if (p->cwd != NULL && chdir(p->cwd) < 0)
        child_fail(report, STEP_CHDIR, errno);
    if (p->setup != NULL && (e = p->setup(p->setup_arg)) != 0)
        child_fail(report, STEP_SETUP, e);
    execve(p->path, p->argv, p->envp);
    child_fail(report, STEP_EXEC, errno);
}

/* ---- the parent -------------------------------------------------------- */

static bool is_executable_file(const char *path, bool *ret_exists)
{
    struct stat st;

    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return false;
    *ret_exists = true;
    return access(path, X_OK) == 0;
}

/* argv[0] with a '/' is used as is (checked relative to cwd, where the
 * child will be); otherwise the absolute entries of envp's PATH are tried. */
static int resolve_program(const char *name, const char *const *envp, const char *cwd,
                           char **ret_path, struct cordon_error *err)
{
    char candidate[PATH_MAX], fallback[PATH_MAX] = "";
    const char *path = NULL, *p;
    size_t name_len = strlen(name);

    if (strchr(name, '/') != NULL) {
        const char *check = name;
        if (name[0] != '/' && cwd != NULL) {
            if ((size_t)snprintf(candidate, sizeof(candidate), "%s/%s", cwd, name) >=
                sizeof(candidate))
                return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                        "argv[0]: path under cwd longer than %d bytes", PATH_MAX);
            check = candidate;
        }
        if (access(check, F_OK) != 0)
            return cordon_error_set(err, CORDON_E_NOT_FOUND, errno,
                                    "argv[0]: program not found (%s)", name);
        *ret_path = strdup(name);
        goto done;
    }
    for (size_t i = 0; envp != NULL && envp[i] != NULL; i++)
        if (strncmp(envp[i], "PATH=", 5) == 0) {
            path = envp[i] + 5;
            break;
        }
    if (path == NULL)
        path = DEFAULT_PATH;
    for (p = path; *p != '\0';) {
        const char *end = strchrnul(p, ':');
        size_t dir_len = (size_t)(end - p);
        bool exists = false;

        /* Relative entries would mean something else after the child's chdir. */
        if (dir_len > 0 && p[0] == '/' && dir_len + 1 + name_len < sizeof(candidate)) {
            memcpy(candidate, p, dir_len);
            candidate[dir_len] = '/';
            memcpy(candidate + dir_len + 1, name, name_len + 1);
            if (is_executable_file(candidate, &exists)) {
                *ret_path = strdup(candidate);
                goto done;
            }
            if (exists && fallback[0] == '\0')
                memcpy(fallback, candidate, sizeof(candidate));
        }
        p = *end == ':' ? end + 1 : end;
    }
    /* Like execvp: a file without x permission makes exec report EACCES. */
    if (fallback[0] == '\0')
        return cordon_error_set(err, CORDON_E_NOT_FOUND, ENOENT,
                                "argv[0]: program not found in PATH (%s, PATH=%s)", name, path);
    *ret_path = strdup(fallback);
done:
    if (*ret_path == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "argv[0]: out of memory");
    return 0;
}

static int validate(const struct cordon_runner_opts *o, struct cordon_exec_outcome *ret,
                    struct cordon_error *err)
{
    if (o == NULL || ret == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "runner: opts and ret must be set");
    if (o->struct_size != sizeof(*o) && o->struct_size != RUNNER_OPTS_V1_SIZE &&
        o->struct_size != RUNNER_OPTS_V2_SIZE)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "opts.struct_size: %u, expected %zu (cordon_runner_opts_init)",
                                o->struct_size, sizeof(*o));
    if (o->struct_size == sizeof(*o)) {
        if (o->n_pass_fds > CORDON_RUNNER_PASS_FDS_MAX)
            return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                    "pass_fds: %zu fds, more than the limit of %d",
                                    o->n_pass_fds, CORDON_RUNNER_PASS_FDS_MAX);
        if (o->n_pass_fds > 0 && o->pass_fds == NULL)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "pass_fds: NULL with n_pass_fds %zu", o->n_pass_fds);
        for (size_t i = 0; i < o->n_pass_fds; i++) {
            int fd = o->pass_fds[i];

            if (fd < 3)
                return cordon_error_set(err, CORDON_E_INVALID, 0,
                                        "pass_fds[%zu]: %d, must be 3 or more (0-2 are stdio)",
                                        i, fd);
            if (fcntl(fd, F_GETFD) < 0)
                return cordon_error_set(err, CORDON_E_INVALID, errno,
                                        "pass_fds[%zu]: %d is not an open fd", i, fd);
            for (size_t j = 0; j < i; j++)
                if (o->pass_fds[j] == fd)
                    return cordon_error_set(err, CORDON_E_INVALID, 0,
                                            "pass_fds[%zu]: %d is given twice", i, fd);
        }
    }
    if (o->argv == NULL || o->argv[0] == NULL || o->argv[0][0] == '\0')
        return cordon_error_set(err, CORDON_E_INVALID, 0, "argv: must hold a non-empty argv[0]");
    if (o->stdin_fd >= 0 && o->stdin_data != NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "stdin_fd: %d given together with stdin_data", o->stdin_fd);
    if (o->stdin_data == NULL && o->stdin_len > 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "stdin_len: %zu bytes without stdin_data", o->stdin_len);
    if (o->cwd != NULL && o->cwd[0] == '\0')
        return cordon_error_set(err, CORDON_E_INVALID, 0, "cwd: empty string (use NULL)");
    return 0;
}

static int child_failure(const struct child_report *r, const char *path, const char *cwd,
                         struct cordon_error *err)
{
    int e = r->errnum;

    switch (r->step) {
    case STEP_EXEC:
        return cordon_error_set(err, e == ENOENT ? CORDON_E_NOT_FOUND : CORDON_E_PROVIDER, e,
                                "argv[0]: cannot execute %s: %s", path, strerror(e));
    case STEP_CHDIR:
        return cordon_error_set(err, e == ENOENT ? CORDON_E_NOT_FOUND : CORDON_E_PROVIDER, e,
                                "cwd: cannot enter %s: %s", cwd, strerror(e));
    case STEP_SETUP:
        return cordon_error_set(err, CORDON_E_PROVIDER, e,
                                "child_setup: failed in the child: %s (errno %d)", strerror(e), e);
    default:
        return cordon_error_set(err, CORDON_E_PROVIDER, e,
                                "stdio: cannot set up the child's fds: %s", strerror(e));
    }
}

static int make_pipe(int fds[2], struct cordon_error *err, const char *what)
{
    if (pipe2(fds, O_CLOEXEC) != 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "%s: pipe: %s", what, strerror(errno));
    return 0;
}

static int set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);

    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Signal the whole group; the fallback covers a child that had not yet
 * reached setpgid when both attempts raced. */
static void kill_group(struct run *r, int sig)
{
    if (kill(-r->pid, sig) < 0 && errno == ESRCH)
        kill(r->pid, sig);
}

/* Decide to end the run. The first reason wins; a later one may still
 * escalate to SIGKILL. Once the leader is gone there is no group to kill. */
static void fire(struct run *r, enum cordon_run_status reason, int sig, uint64_t now)
{
    if (!r->fired) {
        r->fired = true;
        r->reason = reason;
    }
    if (r->leader_gone || r->killed || (sig == SIGTERM && r->term_sent))
        return;
    kill_group(r, sig);
    r->kill_sig = sig;
    if (sig == SIGTERM) {
        r->term_sent = true;
        r->kill_at = now + r->o->grace_ms;
    } else {
        r->killed = true;
    }
}

static void read_stream(struct run *r, int *fd, int stream)
{
    char buf[IO_CHUNK];

    for (int i = 0; i < READS_PER_WAKE; i++) {
        ssize_t n = read(*fd, buf, sizeof(buf));
        if (n > 0) {
            cordon_capture_feed(r->cap, stream, buf, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        close_fd(fd);     /* EOF, or an error we cannot recover from */
        return;
    }
}

static void write_stdin(struct run *r)
{
    const char *data = r->o->stdin_data;

    while (r->in_off < r->o->stdin_len) {
        size_t n = min_u64(r->o->stdin_len - r->in_off, IO_CHUNK);
        ssize_t w = write(r->in_w, data + r->in_off, n);
        if (w > 0) {
            r->in_off += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN)
            return;
        if (w < 0 && errno == EPIPE)
            r->epipe = true;
        break;    /* the child stopped reading: nothing more to give it */
    }
    close_fd(&r->in_w);
}

/* True once the leader has exited; it stays a zombie (WNOWAIT) so that its
 * pid, and with it the group id, cannot be reused before we kill the group. */
static bool leader_exited(const struct run *r, const struct pollfd *pidfd_poll)
{
    siginfo_t si;

    if (r->pidfd >= 0)
        return pidfd_poll != NULL && (pidfd_poll->revents & (POLLIN | POLLHUP | POLLERR));
    memset(&si, 0, sizeof(si));
    if (waitid(P_PID, (id_t)r->pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
        return errno == ECHILD;
    return si.si_pid == r->pid;
}

/*
 * Background members must not outlive the run: killed with the leader, and
 * waited for until no process of the group is left (killed again at every
 * look, so that a fork in flight is caught), for at most SETTLE_MS. The
 * group's id cannot name anyone else while a member lives (it holds the
 * id), and the look stops at the first ESRCH, or when only zombies are
 * left: a member killed after its parent waits in its new parent's table
 * (the host's init) until that one reaps it, which a slow init takes its
 * time over, and a zombie runs nothing.
 */
static bool group_runs(pid_t pgid)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    bool runs = false;

    if (d == NULL)
        return true;   /* cannot tell: wait on, within the bound */
    while (!runs && (de = readdir(d)) != NULL) {
        char path[64], buf[512], state, *p;
        int fd, ppid, pgrp;
        ssize_t n;

        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
        if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
            continue;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
            continue;
        buf[n] = '\0';
        /* pid (comm) state ppid pgrp ...: comm may hold anything but the last ')'. */
        if ((p = strrchr(buf, ')')) != NULL && sscanf(p + 1, " %c %d %d", &state, &ppid, &pgrp) == 3 &&
            pgrp == pgid && state != 'Z' && state != 'X')
            runs = true;
    }
    closedir(d);
    return runs;
}

static void settle_group(pid_t pgid)
{
    uint64_t end = cordon_now_monotonic_ms() + SETTLE_MS;
    const struct timespec step = { 0, SETTLE_STEP_NS };

    for (unsigned i = 0; kill(-pgid, SIGKILL) == 0 && cordon_now_monotonic_ms() < end; i++) {
        /* Every tenth look, whether what is left still runs at all. */
        if (i % 10 == 9 && !group_runs(pgid))
            break;
        nanosleep(&step, NULL);
    }
}

static int reap_leader(struct run *r, struct cordon_error *err)
{
    pid_t w;

    kill(-r->pid, SIGKILL);
    do
        w = waitpid(r->pid, &r->wstatus, 0);
    while (w < 0 && errno == EINTR);
    if (w == r->pid)
        settle_group(r->pid);
    r->leader_gone = true;
    r->end_ms = cordon_now_monotonic_ms();
    close_fd(&r->pidfd);
    if (w < 0)
        return cordon_error_set(err, CORDON_E_PROVIDER, errno,
                                "waitpid: lost the status of pid %d: %s (is SIGCHLD ignored?)",
                                (int)r->pid, strerror(errno));
    return 0;
}

static int poll_loop(struct run *r, uint64_t start, struct cordon_error *err)
{
    const struct cordon_runner_opts *o = r->o;
    uint64_t deadline = 0, drain_end = 0;
    int cancel_fd = o->cancel_fd >= 0 ? o->cancel_fd : -1;

    if (o->timeout_ms > 0)
        deadline = o->timeout_ms > UINT64_MAX - start ? UINT64_MAX : start + o->timeout_ms;
    for (;;) {
        struct pollfd pfd[5];
        int n = 0, i_out = -1, i_err = -1, i_in = -1, i_cancel = -1, i_pid = -1, rc;
        int64_t timeout = -1;
        uint64_t now = cordon_now_monotonic_ms();

        if (r->leader_gone) {
            if ((r->out_r < 0 && r->err_r < 0) || now >= drain_end)
                return 0;
            timeout = (int64_t)(drain_end - now);
        } else {
            if (r->pidfd < 0)
                timeout = WAIT_POLL_MS;
            if (deadline != 0 && !r->fired)
                timeout = (int64_t)min_u64((uint64_t)timeout, deadline > now ? deadline - now : 0);
            if (r->term_sent && !r->killed)
                timeout = (int64_t)min_u64((uint64_t)timeout,
                                           r->kill_at > now ? r->kill_at - now : 0);
        }
        if (r->out_r >= 0)
            pfd[i_out = n++] = (struct pollfd){ .fd = r->out_r, .events = POLLIN };
        if (r->err_r >= 0)
            pfd[i_err = n++] = (struct pollfd){ .fd = r->err_r, .events = POLLIN };
        if (r->in_w >= 0)
            pfd[i_in = n++] = (struct pollfd){ .fd = r->in_w, .events = POLLOUT };
        if (cancel_fd >= 0 && !r->leader_gone)
            pfd[i_cancel = n++] = (struct pollfd){ .fd = cancel_fd, .events = POLLIN };
        if (r->pidfd >= 0)
            pfd[i_pid = n++] = (struct pollfd){ .fd = r->pidfd, .events = POLLIN };

        rc = poll(pfd, (nfds_t)n, timeout > INT32_MAX ? INT32_MAX : (int)timeout);
        if (rc < 0 && errno != EINTR)
            return cordon_error_set(err, CORDON_E_IO, errno, "runner: poll: %s", strerror(errno));
        if (rc < 0)
            continue;
        now = cordon_now_monotonic_ms();

        if (i_out >= 0 && pfd[i_out].revents != 0)
            read_stream(r, &r->out_r, 1);
        if (i_err >= 0 && pfd[i_err].revents != 0)
            read_stream(r, &r->err_r, 2);
        if (cordon_capture_over_budget(r->cap))
            fire(r, CORDON_RUN_OUTPUT_LIMIT, SIGKILL, now);
        if (i_in >= 0 && pfd[i_in].revents != 0)
            write_stdin(r);
        if (i_cancel >= 0 && pfd[i_cancel].revents != 0) {
            fire(r, CORDON_RUN_CANCELLED, SIGKILL, now);
            cancel_fd = -1;   /* stays readable: stop watching it */
        }
        if (r->leader_gone)
            continue;
        if (leader_exited(r, i_pid >= 0 ? &pfd[i_pid] : NULL)) {
            rc = reap_leader(r, err);
            if (rc < 0)
                return rc;
            close_fd(&r->in_w);
            drain_end = now + DRAIN_MS;
            continue;
        }
        if (deadline != 0 && now >= deadline && !r->fired)
            fire(r, CORDON_RUN_TIMEOUT, o->grace_ms > 0 ? SIGTERM : SIGKILL, now);
        if (r->term_sent && !r->killed && now >= r->kill_at)
            fire(r, CORDON_RUN_TIMEOUT, SIGKILL, now);
    }
}

static void fill_status(const struct run *r, struct cordon_exec_outcome *ret)
{
    int ws = r->wstatus;

    ret->exit_code = -1;
    ret->signal = 0;
    if (r->fired) {
        ret->status = r->reason;
        ret->signal = WIFSIGNALED(ws) ? WTERMSIG(ws) : r->kill_sig;
    } else if (WIFSIGNALED(ws)) {
        ret->status = CORDON_RUN_SIGNALED;
        ret->signal = WTERMSIG(ws);
    } else {
        ret->status = CORDON_RUN_EXITED;
        ret->exit_code = WEXITSTATUS(ws);
    }
}

int cordon_runner_run(const struct cordon_runner_opts *opts, struct cordon_exec_outcome *ret,
                      struct cordon_error *err)
{
    static char *const empty_env[] = { NULL };
    struct run r = { .o = opts, .out_r = -1, .err_r = -1, .in_w = -1, .pid = -1, .pidfd = -1 };
    struct child_plan plan;
    struct child_report report;
    struct cordon_exec_outcome out;
    struct rlimit rl;
    sigset_t all, pipe_only, old, pending;
    bool masked = false, pipe_was_pending = false;
    int out_p[2] = { -1, -1 }, err_p[2] = { -1, -1 }, in_p[2] = { -1, -1 };
    int report_p[2] = { -1, -1 }, null_fd = -1, spawn_errno, rc;
    char *path = NULL;
    void *stack;
    uint64_t start;
    ssize_t n;
    size_t got = 0;

    if (ret != NULL) {
        memset(ret, 0, sizeof(*ret));
        ret->exit_code = -1;
    }
    memset(&out, 0, sizeof(out));
    rc = validate(opts, ret, err);
    if (rc < 0)
        return rc;
    rc = resolve_program(opts->argv[0], opts->envp, opts->cwd, &path, err);
    if (rc < 0)
        goto out;

    if (opts->stdout_fd < 0 || opts->stderr_fd < 0) {
        rc = cordon_capture_new(opts->retention_bytes, opts->output_budget, &r.cap, err);
        if (rc < 0)
            goto out;
    }
    if ((opts->stdout_fd < 0 && (rc = make_pipe(out_p, err, "stdout")) < 0) ||
        (opts->stderr_fd < 0 && (rc = make_pipe(err_p, err, "stderr")) < 0) ||
        (opts->stdin_data != NULL && (rc = make_pipe(in_p, err, "stdin")) < 0) ||
        (rc = make_pipe(report_p, err, "runner")) < 0)
        goto out;
    if ((out_p[0] >= 0 && set_nonblock(out_p[0]) < 0) ||
        (err_p[0] >= 0 && set_nonblock(err_p[0]) < 0) ||
        (in_p[1] >= 0 && set_nonblock(in_p[1]) < 0)) {
        rc = cordon_error_set(err, CORDON_E_IO, errno, "runner: O_NONBLOCK: %s", strerror(errno));
        goto out;
    }
    if (opts->stdin_fd < 0 && opts->stdin_data == NULL) {
        null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null_fd < 0) {
            rc = cordon_error_set(err, CORDON_E_IO, errno, "stdin: cannot open /dev/null: %s",
                                  strerror(errno));
            goto out;
        }
    }

    plan = (struct child_plan){
        .path = path,
        .argv = (char *const *)opts->argv,
        .envp = opts->envp != NULL ? (char *const *)opts->envp : empty_env,
        .cwd = opts->cwd,
        .fds = { opts->stdin_fd >= 0 ? opts->stdin_fd : in_p[0] >= 0 ? in_p[0] : null_fd,
                 opts->stdout_fd >= 0 ? opts->stdout_fd : out_p[1],
                 opts->stderr_fd >= 0 ? opts->stderr_fd : err_p[1] },
        .report_fd = report_p[1],
        .max_fd = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
                          rl.rlim_cur < INT_MAX ? (long)rl.rlim_cur : 65536,
        .setup = opts->child_setup,
        .setup_arg = opts->child_setup_arg,
    };
    plan.keep[plan.n_keep++] = report_p[1];
    if (opts->struct_size == sizeof(*opts))
        for (size_t i = 0; i < opts->n_pass_fds; i++)
            plan.keep[plan.n_keep++] = opts->pass_fds[i];

    /* SIGPIPE stays blocked in this thread for the run (EPIPE instead);
     * around clone every signal is, so no handler runs in the child. */
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    masked = true;
    if (sigpending(&pending) == 0)
        pipe_was_pending = sigismember(&pending, SIGPIPE) == 1;
    start = cordon_now_monotonic_ms();
    /* vfork semantics: no copy of the caller's address space (a host maps
     * some thirty libraries), and this thread sleeps until the child has
     * exec'd or failed. */
    if (opts->struct_size > RUNNER_OPTS_V1_SIZE && opts->fork_child) {
        r.pid = fork();
        if (r.pid == 0)
            child_exec(&plan);
        spawn_errno = errno;
    } else {
        stack = mmap(NULL, CHILD_STACK, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
        if (stack != MAP_FAILED)
            stack_fresh(stack, CHILD_STACK);
        r.pid = stack == MAP_FAILED ? -1
                                    : clone(child_exec, (char *)stack + CHILD_STACK,
                                            CLONE_VM | CLONE_VFORK | SIGCHLD, &plan);
        spawn_errno = errno;
        if (stack != MAP_FAILED)
            munmap(stack, CHILD_STACK);
    }
    {
        sigset_t run_mask = old;
        sigaddset(&run_mask, SIGPIPE);
        pthread_sigmask(SIG_SETMASK, &run_mask, NULL);
    }
    if (r.pid < 0) {
        rc = cordon_error_set(err, CORDON_E_PROVIDER, spawn_errno, "runner: cannot start "
                              "the child: %s", strerror(spawn_errno));
        goto out;
    }
    /* Both sides set the group, so that a kill never races the child. */
    setpgid(r.pid, r.pid);
    close_fd(&report_p[1]);
    close_fd(&out_p[1]);
    close_fd(&err_p[1]);
    close_fd(&in_p[0]);
    close_fd(&null_fd);

    /* EOF means exec happened (the pipe is close-on-exec). */
    while (got < sizeof(report)) {
        n = read(report_p[0], (char *)&report + got, sizeof(report) - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close_fd(&report_p[0]);
    if (got == sizeof(report)) {
        reap_leader(&r, NULL);
        rc = child_failure(&report, path, opts->cwd, err);
        goto out;
    }

#ifdef SYS_pidfd_open
    r.pidfd = (int)syscall(SYS_pidfd_open, r.pid, 0u);
#endif
    r.out_r = out_p[0];
    r.err_r = err_p[0];
    r.in_w = in_p[1];
    out_p[0] = err_p[0] = in_p[1] = -1;
    if (r.in_w >= 0 && opts->stdin_len == 0)
        close_fd(&r.in_w);

    rc = poll_loop(&r, start, err);
    if (rc < 0)
        goto out;
    fill_status(&r, &out);
    out.duration_ms = r.end_ms - start;
    if ((opts->stdout_fd < 0 && (rc = cordon_capture_take(r.cap, 1, &out.out, err)) < 0) ||
        (opts->stderr_fd < 0 && (rc = cordon_capture_take(r.cap, 2, &out.err, err)) < 0))
        goto out;
    *ret = out;
    memset(&out, 0, sizeof(out));
    rc = 0;
out:
    if (r.pid > 0 && !r.leader_gone) {
        kill_group(&r, SIGKILL);
        reap_leader(&r, NULL);
    }
    close_fd(&r.pidfd);
    close_fd(&r.out_r);
    close_fd(&r.err_r);
    close_fd(&r.in_w);
    for (int i = 0; i < 2; i++) {
        close_fd(&out_p[i]);
        close_fd(&err_p[i]);
        close_fd(&in_p[i]);
        close_fd(&report_p[i]);
    }
    close_fd(&null_fd);
    if (masked) {
        /* Swallow the SIGPIPE our own write raised, then restore the mask. */
        if (r.epipe && !pipe_was_pending) {
            struct timespec zero = { 0, 0 };
            sigtimedwait(&pipe_only, NULL, &zero);
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    cordon_exec_outcome_clear(&out);
    cordon_capture_free(r.cap);
    free(path);
    return rc;
}
