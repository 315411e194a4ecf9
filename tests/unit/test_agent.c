/*
 * The resident agent driven directly: cordon-init --deadline-ms N --agent
 * started here (outside any sandbox: it is then a subreaper, not PID 1)
 * and the sdk's client (cordon/sdk/agent.h) talking to it. Results must
 * match what the runner gives for the same commands; hostile messages on
 * its channel must leave it serving; its death must be a typed error.
 * pidfd_getfd of the non-dumpable agent needs CAP_SYS_PTRACE: as a
 * non-root user the tests skip, saying so.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cordon/sdk/agent.h>

#include "sdk/agent-proto.h"
#include "tests/common/proc.h"
#include "tests/common/wait.h"

struct agent {
    pid_t pid;
    int pidfd;
    int fd;          /* the host's copy of the channel */
    int null_fd;
    bool pidns;      /* PID 1 of a pid namespace of its own */
};

/* cordon-init --deadline-ms 60000 [--agent], forked, or as PID 1 of a new
 * pid namespace (clone with CLONE_NEWPID; the child only execs). */
static pid_t init_spawn(bool new_pidns, bool agent)
{
    const char *init = getenv("CORDON_INIT");
    pid_t pid;

    if (init == NULL)
        cr_skip_test("CORDON_INIT is not set (make check sets it)");
    if (geteuid() != 0)
        cr_skip_test("pidfd_getfd of a non-dumpable agent needs root (CAP_SYS_PTRACE)");
    pid = new_pidns ? (pid_t)syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, NULL)
                    : fork();
    cr_assert_geq(pid, 0, "%s: %s", new_pidns ? "clone(CLONE_NEWPID)" : "fork", strerror(errno));
    if (pid == 0) {
        execl(init, init, "--deadline-ms", "60000", agent ? "--agent" : (char *)NULL,
              (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* The stop signals cordon-init blocks and takes with sigtimedwait, as a
 * mask of /proc/PID/status. */
#define STOP_SIGNALS ((1ull << (SIGTERM - 1)) | (1ull << (SIGINT - 1)) | (1ull << (SIGHUP - 1)))

/* /proc/pid/name's first size - 1 bytes into buf, terminated; false when
 * it cannot be read. */
static bool proc_text(pid_t pid, const char *name, char *buf, size_t size)
{
    char path[64];
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return false;
    n = read(fd, buf, size - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return n > 0;
}

/* The hex mask on the line of /proc/pid/status that starts with key
 * ("SigPnd:"); 0 when unreadable. */
static unsigned long long status_mask(pid_t pid, const char *key)
{
    char text[4096];
    const char *line;

    if (!proc_text(pid, "status", text, sizeof(text)))
        return 0;
    for (line = text; line != NULL; line = strchr(line, '\n')) {
        line += *line == '\n';
        if (strncmp(line, key, strlen(key)) == 0)
            return strtoull(line + strlen(key), NULL, 16);
    }
    return 0;
}

/* Whether pid has ended (a zombie or gone), without reaping it. */
static bool ended(pid_t pid)
{
    siginfo_t si = { 0 };

    return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == pid;
}

/* cordon-init sleeps in sigtimedwait: past its execve and its signal mask
 * (SigBlk reads 0 meanwhile: the kernel unblocks the awaited signals for
 * the length of the wait). */
static bool init_waits(pid_t pid)
{
    char text[64];

    /* "running", or the number of the system call it sleeps in */
    return proc_text(pid, "syscall", text, sizeof(text)) && strtol(text, NULL, 10) == SYS_rt_sigtimedwait;
}

/* The agent sleeps in its poll: past its signalfd, the last descriptor it
 * makes for itself. */
static bool agent_polls(pid_t pid)
{
    char text[64];
    long nr;

    if (!proc_text(pid, "syscall", text, sizeof(text)))
        return false;
    nr = strtol(text, NULL, 10);
#ifdef SYS_poll
    if (nr == SYS_poll)
        return true;
#endif
    return nr == SYS_ppoll;
}

/* cordon-init waits again with no stop signal pending: every stop signal
 * sent before has been taken and answered, so had one ended it, it would
 * have ended. */
static bool init_took_every_stop(pid_t pid)
{
    return init_waits(pid) && ((status_mask(pid, "SigPnd:") | status_mask(pid, "ShdPnd:")) & STOP_SIGNALS) == 0;
}

/* Whether /proc/pid/comm is name: pid is past its execve of name. */
static bool comm_is(pid_t pid, const char *name)
{
    char comm[32];

    if (!proc_text(pid, "comm", comm, sizeof(comm)))
        return false;
    comm[strcspn(comm, "\n")] = '\0';
    return strcmp(comm, name) == 0;
}

static void agent_start_in(struct agent *a, bool new_pidns)
{
    struct cordon_error err = { 0 };

    a->pid = init_spawn(new_pidns, true);
    a->pidns = new_pidns;
    a->pidfd = (int)syscall(SYS_pidfd_open, a->pid, 0);
    cr_assert_geq(a->pidfd, 0);
    /* The pair exists before the agent serves: retry until it is there. */
    a->fd = -1;
    TEST_WAIT_UNTIL(cordon_agent_open(a->pidfd, &a->fd, &err) == 0, 10000);
    cr_assert_geq(a->fd, 0, "cordon_agent_open: %s", err.message);
    a->null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    cr_assert_geq(a->null_fd, 0);
}

static void agent_start(struct agent *a)
{
    agent_start_in(a, false);
}

/* SIGTERM from here: the agent ends 0. As PID 1 of a pid namespace it
 * takes no stop signal from anyone: SIGKILL from here ends it. */
static void agent_stop(struct agent *a)
{
    int status;

    close(a->fd);
    close(a->null_fd);
    kill(a->pid, a->pidns ? SIGKILL : SIGTERM);
    cr_assert_eq(waitpid(a->pid, &status, 0), a->pid);
    if (a->pidns)
        cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
                  "SIGKILL from outside: cordon-init ended with wait status %#x", status);
    else
        cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "SIGTERM: cordon-init ended with wait status %#x, not exit 0", status);
    close(a->pidfd);
}

/* Run argv with stdout into a pipe; *out gets what it wrote (<= 255 bytes). */
static int agent_run(struct agent *a, const char *const *argv, const char *const *envp,
                     const char *cwd, int cancel_fd, uint64_t timeout_ms,
                     struct cordon_exec_outcome *o, char *out, struct cordon_error *err)
{
    int p[2], r;
    struct cordon_agent_cmd cmd = { argv, envp, cwd, a->null_fd, -1, a->null_fd };
    ssize_t n, got = 0;

    cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
    cmd.stdout_fd = p[1];
    r = cordon_agent_run(a->fd, a->pidfd, &cmd, cancel_fd, timeout_ms, o, err);
    close(p[1]);
    while ((n = read(p[0], out + got, 255 - (size_t)got)) > 0)
        got += n;
    out[got] = '\0';
    close(p[0]);
    return r;
}

static const char *const path_env[] = { "PATH=/usr/bin:/bin", NULL };

Test(agent, exit_codes_signals_and_output)
{
    static const struct {
        const char *script;
        enum cordon_run_status status;
        int value;
        const char *out;
    } rows[] = {
        { "true", CORDON_RUN_EXITED, 0, "" },
        { "exit 7", CORDON_RUN_EXITED, 7, "" },
        { "exit 137", CORDON_RUN_EXITED, 137, "" },
        { "echo hi; kill -TERM $$", CORDON_RUN_SIGNALED, SIGTERM, "hi\n" },
        { "kill -KILL $$", CORDON_RUN_SIGNALED, SIGKILL, "" },
        { "echo \"$FOO\"; pwd", CORDON_RUN_EXITED, 0, "bar\n/tmp\n" },
        /* A background child holding stdout dies with the group. */
        { "sleep 30 & echo started", CORDON_RUN_EXITED, 0, "started\n" },
    };
    static const char *const env[] = { "PATH=/usr/bin:/bin", "FOO=bar", NULL };
    struct agent a;

    agent_start(&a);
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const char *argv[] = { "sh", "-c", rows[i].script, NULL };
        struct cordon_exec_outcome o;
        struct cordon_error err = { 0 };
        char out[256];

        cr_assert_eq(agent_run(&a, argv, env, "/tmp", -1, 10000, &o, out, &err), 0, "%s: %s",
                     rows[i].script, err.message);
        cr_expect_eq(o.status, rows[i].status, "%s: status %d", rows[i].script, o.status);
        if (rows[i].status == CORDON_RUN_EXITED)
            cr_expect_eq(o.exit_code, rows[i].value, "%s: exit %d", rows[i].script, o.exit_code);
        else
            cr_expect_eq(o.signal, rows[i].value, "%s: signal %d", rows[i].script, o.signal);
        cr_expect_str_eq(out, rows[i].out, "%s", rows[i].script);
        cordon_exec_outcome_clear(&o);
    }
    agent_stop(&a);
}

Test(agent, not_found_and_bad_cwd)
{
    const char *missing[] = { "no-such-program-here", NULL }, *t[] = { "true", NULL };
    struct cordon_exec_outcome o;
    struct cordon_error err = { 0 };
    struct agent a;
    char out[256];

    agent_start(&a);
    cr_assert_eq(agent_run(&a, missing, path_env, "/", -1, 10000, &o, out, &err), 0);
    cr_expect_eq(o.status, CORDON_RUN_EXITED);
    cr_expect_eq(o.exit_code, 127);
    cr_assert_eq(agent_run(&a, t, path_env, "/no/such/dir", -1, 10000, &o, out, &err),
                 CORDON_E_PROVIDER);
    cr_expect(strstr(err.message, "working directory") != NULL &&
              strstr(err.message, "No such file") != NULL, "%s", err.message);
    agent_stop(&a);
}

/* Cancel and timeout end the command's whole group, and the agent serves on. */
Test(agent, cancel_and_timeout_kill_the_group)
{
    const char *argv[] = { "sh", "-c", "sleep 30 & exec sleep 30", NULL }, *t[] = { "true", NULL };
    struct cordon_exec_outcome o;
    struct cordon_error err = { 0 };
    struct agent a;
    struct timespec t0, t1;
    char out[256];
    int cancel = eventfd(0, EFD_CLOEXEC);

    agent_start(&a);
    cr_assert_eq(eventfd_write(cancel, 1), 0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(agent_run(&a, argv, path_env, "/", cancel, 0, &o, out, &err), 0, "%s",
                 err.message);
    cr_expect_eq(o.status, CORDON_RUN_CANCELLED);
    cr_assert_eq(agent_run(&a, argv, path_env, "/", -1, 100, &o, out, &err), 0, "%s",
                 err.message);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_expect_eq(o.status, CORDON_RUN_TIMEOUT);
    /* The pipe read to EOF above: nothing of either group still held stdout. */
    cr_expect_lt(t1.tv_sec - t0.tv_sec, 5);
    cr_assert_eq(agent_run(&a, t, path_env, "/", -1, 10000, &o, out, &err), 0, "%s",
                 err.message);
    cr_expect_eq(o.status, CORDON_RUN_EXITED);
    close(cancel);
    agent_stop(&a);
}

/* Raw messages on the channel: one row per way a message can be wrong. */
static void send_raw(int fd, const void *buf, size_t len, const int *fds, size_t nfds)
{
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int) * 8)];
    } c;
    struct iovec iov = { (void *)buf, len };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

    if (nfds > 0) {
        struct cmsghdr *cm;

        memset(c.buf, 0, sizeof(c.buf));
        mh.msg_control = c.buf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
    }
    (void)sendmsg(fd, &mh, MSG_NOSIGNAL);
}

Test(agent, garbage_messages_leave_it_serving)
{
    struct agent a;
    struct cordon_agent_request h = { CORDON_AGENT_MAGIC, CORDON_AGENT_VERSION, 1, 0 };
    static char big[CORDON_AGENT_MSG_MAX + 4096];
    char buf[256];
    const char *t[] = { "true", NULL };
    struct cordon_exec_outcome o;
    struct cordon_error err = { 0 };
    int rp[2], fds[8];
    struct cordon_agent_reply rep;

    agent_start(&a);
    cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, rp), 0);
    for (int i = 0; i < 8; i++)
        fds[i] = i < 3 ? a.null_fd : rp[1];
    /* Nothing, bytes without fds, a header alone, fds without a header. */
    send_raw(a.fd, "", 0, NULL, 0);
    send_raw(a.fd, "garbage", 7, NULL, 0);
    send_raw(a.fd, &h, sizeof(h), NULL, 0);
    send_raw(a.fd, "x", 1, fds, 4);
    /* Too few and too many fds with a valid request. */
    memcpy(buf, &h, sizeof(h));
    memcpy(buf + sizeof(h), "/\0true", 7);
    send_raw(a.fd, buf, sizeof(h) + 7, fds, 3);
    send_raw(a.fd, buf, sizeof(h) + 7, fds, 8);
    /* Wrong magic, version, counts; strings short or unterminated or too many. */
    {
        struct cordon_agent_request bad[] = {
            { 0xdeadbeef, CORDON_AGENT_VERSION, 1, 0 }, { CORDON_AGENT_MAGIC, 99, 1, 0 },
            { CORDON_AGENT_MAGIC, CORDON_AGENT_VERSION, 0, 0 },
            { CORDON_AGENT_MAGIC, CORDON_AGENT_VERSION, 100000, 0 },
            { CORDON_AGENT_MAGIC, CORDON_AGENT_VERSION, 1, 100000 },
            { CORDON_AGENT_MAGIC, CORDON_AGENT_VERSION, 2, 0 },
            { CORDON_AGENT_MAGIC, CORDON_AGENT_VERSION, 1, 1 },
        };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            memcpy(buf, &bad[i], sizeof(h));
            send_raw(a.fd, buf, sizeof(h) + 7, fds, 4);
            cr_assert_eq(recv(rp[0], &rep, sizeof(rep), 0), (ssize_t)sizeof(rep), "row %zu", i);
            cr_expect_eq(rep.kind, CORDON_AGENT_REFUSED, "row %zu", i);
            cr_expect_eq(rep.value, EINVAL, "row %zu", i);
        }
        memcpy(buf, &h, sizeof(h));
        send_raw(a.fd, buf, sizeof(h) + 6, fds, 4);           /* "true" without its NUL */
        send_raw(a.fd, buf, sizeof(h) + 2, fds, 4);           /* cwd only */
        memcpy(buf + sizeof(h), "rel\0true", 9);              /* relative cwd */
        send_raw(a.fd, buf, sizeof(h) + 9, fds, 4);
        memcpy(buf + sizeof(h), "/\0true\0extra", 13);        /* bytes after the last string */
        send_raw(a.fd, buf, sizeof(h) + 13, fds, 4);
        for (int i = 0; i < 4; i++) {
            cr_assert_eq(recv(rp[0], &rep, sizeof(rep), 0), (ssize_t)sizeof(rep));
            cr_expect_eq(rep.kind, CORDON_AGENT_REFUSED);
        }
    }
    /* Oversized: more than the agent reads (truncated), if the socket takes it. */
    {
        int sz = (int)sizeof(big) * 2;

        setsockopt(a.fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
        memset(big, 'a', sizeof(big));
        memcpy(big, &h, sizeof(h));
        big[sizeof(big) - 1] = '\0';
        send_raw(a.fd, big, sizeof(big), fds, 4);
    }
    /* The reply socket given as stdin: not a pipe, yet just a fd. A
     * non-socket as the reply: dropped without a reply. */
    fds[3] = a.null_fd;
    memcpy(buf, &h, sizeof(h));
    memcpy(buf + sizeof(h), "/\0true", 7);
    send_raw(a.fd, buf, sizeof(h) + 7, fds, 4);
    cr_expect_eq(kill(a.pid, 0), 0, "the agent died of the garbage");
    /* And it still serves. */
    cr_assert_eq(agent_run(&a, t, path_env, "/", -1, 10000, &o, buf, &err), 0, "%s", err.message);
    cr_expect_eq(o.status, CORDON_RUN_EXITED);
    cr_expect_eq(o.exit_code, 0);
    close(rp[0]);
    close(rp[1]);
    agent_stop(&a);
}

/* Killing the agent mid-command: a typed error, not a hang or a result. */
Test(agent, killed_agent_is_a_typed_error)
{
    char seconds[32], sleeper[48];
    const char *argv[] = { "sleep", seconds, NULL };
    struct cordon_exec_outcome o;
    struct cordon_error err = { 0 };
    struct agent a;
    char out[256];
    pid_t killer;
    int status;

    /* 3 s, spelled to be this test's own: "3.0<pid>" */
    snprintf(seconds, sizeof(seconds), "3.0%d", (int)getpid());
    snprintf(sleeper, sizeof(sleeper), "sleep %s", seconds);
    agent_start(&a);
    killer = fork();
    if (killer == 0) {
        /* mid-command: once the agent's sleep runs */
        TEST_WAIT_UNTIL(test_count_command(sleeper) > 0, 10000);
        kill(a.pid, SIGKILL);
        _exit(0);
    }
    cr_expect_eq(agent_run(&a, argv, path_env, "/", -1, 10000, &o, out, &err),
                 CORDON_E_UNAVAILABLE, "%s", err.message);
    cr_expect(strstr(err.message, "died") != NULL, "%s", err.message);
    waitpid(killer, &status, 0);
    waitpid(a.pid, &status, 0);
    /* With no pid namespace here the sleep it started outlives it (in a
     * sandbox the kernel kills it with PID 1): it ends by itself. */
    close(a.fd);
    close(a.null_fd);
    close(a.pidfd);
}

Test(agent, a_process_without_the_channel_is_refused)
{
    struct cordon_error err = { 0 };
    pid_t pid;
    int pidfd, fd = -1, status;

    if (geteuid() != 0)
        cr_skip_test("pidfd_getfd needs root here");
    pid = fork();
    if (pid == 0) {
        execl("/bin/sleep", "sleep", "30", (char *)NULL);
        _exit(127);
    }
    pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    cr_assert(TEST_WAIT_UNTIL(comm_is(pid, "sleep"), 10000), "the child never became sleep");
    cr_expect_eq(cordon_agent_open(pidfd, &fd, &err), CORDON_E_UNAVAILABLE);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    close(pidfd);
}

Test(agent, fits_bounds_the_message)
{
    static char huge[CORDON_AGENT_MSG_MAX];
    const char *small[] = { "true", NULL }, *big[] = { "echo", huge, NULL };
    struct cordon_agent_cmd cmd = { small, NULL, "/", 0, 1, 2 };

    cr_expect(cordon_agent_fits(&cmd));
    memset(huge, 'x', sizeof(huge) - 1);
    cmd.argv = big;
    cr_expect_not(cordon_agent_fits(&cmd));
}

/*
 * A live agent that drops a request (here: its descriptor limit leaves no
 * room for the request's four, which code inside could once set) is not
 * reported dead, which would make a provider destroy a live sandbox; with
 * its limit back it serves again.
 */
Test(agent, dropped_request_from_a_live_agent_is_not_a_death)
{
    const char *echo[] = { "echo", "back", NULL };
    struct rlimit four = { 4, 4 }, was;
    struct cordon_exec_outcome o;
    struct cordon_error err = { 0 };
    struct agent a;
    char out[256];
    int r;

    agent_start(&a);
    /* Lowered before the agent made its signalfd, the limit would end it. */
    cr_assert(TEST_WAIT_UNTIL(agent_polls(a.pid), 10000), "the agent never waited in poll");
    cr_assert_eq(prlimit(a.pid, RLIMIT_NOFILE, NULL, &was), 0, "prlimit: %s", strerror(errno));
    /* The soft limit only: raising a hard one back needs CAP_SYS_RESOURCE. */
    four.rlim_max = was.rlim_max;
    cr_assert_eq(prlimit(a.pid, RLIMIT_NOFILE, &four, NULL), 0, "prlimit: %s", strerror(errno));
    r = agent_run(&a, echo, path_env, "/", -1, 10000, &o, out, &err);
    cr_expect_eq(r, CORDON_E_PROVIDER, "a dropped request gave %d: %s", r, err.message);
    cr_expect(strstr(err.message, "still runs") != NULL, "%s", err.message);
    cr_assert_eq(kill(a.pid, 0), 0, "the agent is gone");
    cr_assert_eq(prlimit(a.pid, RLIMIT_NOFILE, &was, NULL), 0, "prlimit: %s", strerror(errno));
    cr_assert_eq(agent_run(&a, echo, path_env, "/", -1, 10000, &o, out, &err), 0, "%s", err.message);
    cr_expect_str_eq(out, "back\n");
    cordon_exec_outcome_clear(&o);
    agent_stop(&a);
}

/*
 * As PID 1 of a pid namespace, cordon-init takes no SIGTERM, SIGINT or
 * SIGHUP as "stop": code inside must not end its own sandbox. Through the
 * agent: a command sends all three to PID 1, and the agent serves the next
 * one.
 */
Test(agent, stop_signals_from_inside_the_pid_namespace_are_ignored)
{
    const char *kill_1[] = { "sh", "-c", "kill -TERM 1; kill -INT 1; kill -HUP 1; sleep 0.3; "
                                         "echo alive", NULL },
               *echo[] = { "echo", "still", NULL };
    struct cordon_exec_outcome o;
    struct cordon_error err = { 0 };
    struct agent a;
    char out[256];

    agent_start_in(&a, true);
    cr_assert_eq(agent_run(&a, kill_1, path_env, "/", -1, 10000, &o, out, &err), 0,
                 "kill -TERM 1 from inside ended the agent: %s", err.message);
    cr_expect(o.status == CORDON_RUN_EXITED && o.exit_code == 0, "status %d exit %d", o.status,
              o.exit_code);
    cr_expect_str_eq(out, "alive\n");
    cordon_exec_outcome_clear(&o);
    cr_assert_eq(agent_run(&a, echo, path_env, "/", -1, 10000, &o, out, &err), 0,
                 "the agent no longer serves after kill -TERM 1 from inside: %s", err.message);
    cr_expect_str_eq(out, "still\n");
    cordon_exec_outcome_clear(&o);
    agent_stop(&a);
}

/*
 * The same without the agent (the plain deadline loop), and with forged
 * senders: a process that joined the namespace sets PID 1's
 * RLIMIT_SIGPENDING to 0 (as root here; the sandbox's seccomp profile
 * refuses it there), so that a tgkill or sigqueue arrives without its
 * siginfo, which reads as SI_USER from pid 0, "from outside"; it sends the
 * three signals, tgkill, and rt_sigqueueinfo with si_pid 0 (SI_QUEUE); the
 * kernel must refuse it a forged SI_USER. The init stays, even after
 * SIGTERM from here; SIGKILL from here ends it.
 */
Test(agent, plain_init_ignores_stop_signals_from_inside_its_pid_namespace)
{
    pid_t init = init_spawn(true, false), helper;
    int status;

    cr_assert(TEST_WAIT_UNTIL(init_waits(init), 10000), "cordon-init never waited in sigtimedwait");
    helper = fork();
    cr_assert_geq(helper, 0);
    if (helper == 0) {
        char path[64];
        int ns, w;
        pid_t inside;

        snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)init);
        if ((ns = open(path, O_RDONLY | O_CLOEXEC)) < 0 || setns(ns, CLONE_NEWPID) != 0)
            _exit(10);
        if ((inside = fork()) == 0) {
            struct rlimit zero = { 0, 0 };
            siginfo_t si;

            if (prlimit(1, RLIMIT_SIGPENDING, &zero, NULL) != 0)
                _exit(17);
            if (kill(1, SIGTERM) != 0 || kill(1, SIGINT) != 0 || kill(1, SIGHUP) != 0)
                _exit(11);
            if (syscall(SYS_tgkill, 1, 1, SIGTERM) != 0)
                _exit(12);
            memset(&si, 0, sizeof(si));
            si.si_signo = SIGTERM;
            si.si_code = SI_QUEUE;
            if (syscall(SYS_rt_sigqueueinfo, 1, SIGTERM, &si) != 0)
                _exit(13);
            si.si_code = SI_USER;
            if (syscall(SYS_rt_sigqueueinfo, 1, SIGTERM, &si) == 0 || errno != EPERM)
                _exit(14);
            _exit(0);
        }
        if (inside < 0 || waitpid(inside, &w, 0) != inside)
            _exit(15);
        _exit(WIFEXITED(w) ? WEXITSTATUS(w) : 16);
    }
    cr_assert_eq(waitpid(helper, &status, 0), helper);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the sender inside failed at step %d (10 setns, 11 kill, 12 tgkill, 13 sigqueue, "
              "14 a forged SI_USER was not refused with EPERM, 17 prlimit)",
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    cr_assert(TEST_WAIT_UNTIL(init_took_every_stop(init) || ended(init), 10000));
    cr_expect_eq(waitpid(init, &status, WNOHANG), 0,
                 "cordon-init as PID 1 ended after stop signals from inside its namespace "
                 "(wait status %#x)", status);
    kill(init, SIGTERM);
    cr_assert(TEST_WAIT_UNTIL(init_took_every_stop(init) || ended(init), 10000));
    cr_expect_eq(waitpid(init, &status, WNOHANG), 0,
                 "cordon-init as PID 1 ended after SIGTERM (wait status %#x)", status);
    kill(init, SIGKILL);
    cr_assert_eq(waitpid(init, &status, 0), init);
    cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
              "SIGKILL from outside: wait status %#x", status);
}

/* A new deadline moves the agent's own clock, both ways: set to 300 ms
 * then to a minute, it outlives the 300 ms (the clock is the condition)
 * and still serves; set to 200 ms, it ends at that deadline (exit 124). */
Test(agent, a_new_deadline_moves_its_clock_both_ways)
{
    static const char *const argv[] = { "sh", "-c", "echo up", NULL };
    struct cordon_exec_outcome o = { 0 };
    struct cordon_error err = { sizeof(err), 0, 0, "" };
    struct agent a;
    char out[256];
    int64_t short_end;
    int status;

    agent_start(&a);
    short_end = test_now_ms() + 300;
    cr_assert_eq(cordon_agent_set_deadline(a.fd, a.pidfd, 300, &err), 0, "%s", err.message);
    cr_assert_eq(cordon_agent_set_deadline(a.fd, a.pidfd, 60000, &err), 0, "%s", err.message);
    cr_assert(TEST_WAIT_UNTIL(test_now_ms() > short_end + 500, 5000));
    cr_expect_not(ended(a.pid), "the agent ended at the deadline it no longer had");
    cr_expect_eq(agent_run(&a, argv, path_env, "/tmp", -1, 0, &o, out, &err), 0, "%s", err.message);
    cr_expect_str_eq(out, "up\n");
    cordon_exec_outcome_clear(&o);
    cr_assert_eq(cordon_agent_set_deadline(a.fd, a.pidfd, 200, &err), 0, "%s", err.message);
    cr_assert(TEST_WAIT_UNTIL(ended(a.pid), 10000), "the sooner deadline did not end the agent");
    cr_assert_eq(waitpid(a.pid, &status, 0), a.pid);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 124, "wait status %#x, not exit 124", status);
    /* Gone: a new deadline is a death, never a success. */
    cr_expect_eq(cordon_agent_set_deadline(a.fd, a.pidfd, 60000, &err), CORDON_E_UNAVAILABLE, "%s",
                 err.message);
    close(a.fd);
    close(a.null_fd);
    close(a.pidfd);
}

/* Deadline messages that are wrong are refused or dropped; the clock and
 * the serving go on. */
Test(agent, bad_deadline_messages_change_nothing)
{
    static const char *const argv[] = { "true", NULL };
    struct cordon_agent_deadline zero = { CORDON_AGENT_DEADLINE_MAGIC, CORDON_AGENT_VERSION, 0 };
    struct cordon_agent_deadline far = { CORDON_AGENT_DEADLINE_MAGIC, CORDON_AGENT_VERSION,
                                         CORDON_INIT_DEADLINE_MAX_MS + 1 };
    struct cordon_agent_deadline wrong = { CORDON_AGENT_DEADLINE_MAGIC, CORDON_AGENT_VERSION + 7, 1 };
    struct cordon_agent_deadline ok = { CORDON_AGENT_DEADLINE_MAGIC, CORDON_AGENT_VERSION, 100 };
    const struct cordon_agent_deadline *refused[] = { &zero, &far, &wrong };
    struct cordon_exec_outcome o = { 0 };
    struct cordon_error err = { sizeof(err), 0, 0, "" };
    struct cordon_agent_reply rep;
    struct agent a;
    char out[256];
    int pair[2], two[2];
    int64_t sent;

    agent_start(&a);
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
        send_raw(a.fd, refused[i], sizeof(*refused[i]), &pair[1], 1);
        close(pair[1]);
        cr_expect_eq(recv(pair[0], &rep, sizeof(rep), 0), (ssize_t)sizeof(rep), "row %zu: no reply", i);
        cr_expect(rep.kind == CORDON_AGENT_REFUSED && rep.value == EINVAL, "row %zu: kind %u value %d", i,
                  rep.kind, rep.value);
        close(pair[0]);
    }
    /* A short one is refused too; a right one with two descriptors is dropped, unanswered. */
    cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
    send_raw(a.fd, &ok, sizeof(ok) - 4, &pair[1], 1);
    close(pair[1]);
    cr_expect_eq(recv(pair[0], &rep, sizeof(rep), 0), (ssize_t)sizeof(rep), "a short message: no reply");
    cr_expect(rep.kind == CORDON_AGENT_REFUSED && rep.value == EINVAL, "short: kind %u value %d", rep.kind,
              rep.value);
    close(pair[0]);
    cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
    cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, two), 0);
    sent = test_now_ms();
    send_raw(a.fd, &ok, sizeof(ok), (int[]){ pair[1], two[1] }, 2);
    close(pair[1]);
    close(two[1]);
    cr_expect_eq(recv(pair[0], &rep, sizeof(rep), 0), 0, "two descriptors: the message had a reply");
    close(pair[0]);
    close(two[0]);
    /* Had any of them set its 100 ms (or 1 ms), the agent would have ended by now. */
    cr_assert(TEST_WAIT_UNTIL(test_now_ms() > sent + 600, 5000));
    cr_expect_not(ended(a.pid), "a refused deadline message moved the clock");
    cr_expect_eq(agent_run(&a, argv, path_env, "/tmp", -1, 0, &o, out, &err), 0, "%s", err.message);
    cr_expect_eq(o.status, CORDON_RUN_EXITED);
    cordon_exec_outcome_clear(&o);
    agent_stop(&a);
}
