/*
 * cordon-init: the first process of a container sandbox. Linked statically
 * so that it runs in any rootfs, even one without a shell or sleep.
 *
 *   cordon-init --deadline-ms N [--agent]
 *   cordon-init --exec PROGRAM [ARG...]
 *
 * As PID 1 of the container's pid namespace it reaps every orphan (the
 * processes that exec started are re-parented to it, and a zombie would
 * count against the pids limit) and holds the execution's deadline: when N
 * milliseconds have passed it exits, and the kernel kills every other
 * process of the namespace with it. As PID 1 it takes no stop signal
 * (SIGTERM, SIGINT, SIGHUP) from anyone: it ends at the deadline, or by
 * SIGKILL from an ancestor pid namespace (the runtime, the daemon, the
 * host), which the kernel always delivers to a namespace's init and never
 * from inside. It once took a stop signal that looked sent from outside
 * (si_code SI_USER, si_pid 0), but code inside can make its own signal
 * look so: with PID 1's RLIMIT_SIGPENDING at 0, or the uid's pending
 * signals at that limit, a sigqueue or tgkill arrives without its siginfo,
 * which the kernel hands over as SI_USER from pid 0. Outside a pid
 * namespace it makes itself the subreaper of its descendants instead and
 * ends on any stop signal. It never signals anything: it only collects
 * exits and watches the clock.
 *
 * Exit status: 0 after a stop signal (outside a pid namespace), 124 when
 * the deadline passed, 2 for a usage error.
 *
 * --agent makes it also the sandbox's resident agent (sdk/agent-proto.h,
 * docs/decisions.md): before anything else runs it holds a SOCK_SEQPACKET
 * socketpair at fds 3 and 4, which only the host can copy (pidfd_getfd:
 * this process is not dumpable, nothing inside has CAP_SYS_PTRACE), and
 * starts the commands the host sends on it, each with this process's own
 * confinement, each as the leader of its own process group, reporting how
 * each ended. The host may also move the deadline on it (`cordon extend`):
 * only the host, as only the host holds the channel. Reaping and the
 * deadline stay first: one poll loop serves the socket, the signals and
 * the clock.
 *
 * --exec wraps one command that the host runs in the sandbox: PROGRAM
 * (looked up in PATH) runs as the leader of a new process group; when it
 * ends, whatever is left of its group is killed, as the host's own runner
 * does, so that a background child cannot keep the command's output open,
 * and the wrapper ends as the program did: with its exit status, or
 * killed by the same signal N (re-raised on itself, without a core dump),
 * so that whoever waits on the wrapper sees "killed by N", not an exit
 * 128+N that a plain `exit 137` would also give. A runtime that folds the
 * signal into 128+N on its own side still loses the difference. A stop
 * signal (SIGTERM, SIGINT, SIGHUP) to the wrapper kills the program's group
 * at once, and the wrapper then ends as the program did. The wrapper is
 * not dumpable: code of the sandbox's uid cannot ptrace it or reach its
 * descriptors. 127: PROGRAM not found, 126: not executable.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sdk/agent-proto.h"

#define DEADLINE_MAX_MS CORDON_INIT_DEADLINE_MAX_MS /* a year: anything longer is a typo */
#define EXIT_DEADLINE 124
#define EXIT_USAGE 2

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int usage(const char *why)
{
    fprintf(stderr,
            "cordon-init: %s\nusage: cordon-init --deadline-ms N (1..%llu) [--agent]\n"
            "       cordon-init --exec PROGRAM [ARG...]\n",
            why, (unsigned long long)DEADLINE_MAX_MS);
    return EXIT_USAGE;
}

/* Decimal digits only, 1..DEADLINE_MAX_MS. */
static bool parse_ms(const char *text, uint64_t *ret)
{
    uint64_t v = 0;

    if (text == NULL || *text == '\0')
        return false;
    for (const char *p = text; *p != '\0'; p++) {
        if (*p < '0' || *p > '9' || v > DEADLINE_MAX_MS)
            return false;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (v == 0 || v > DEADLINE_MAX_MS)
        return false;
    *ret = v;
    return true;
}

/* Collect every child that has ended; none is left a zombie. */
static void reap_all(void)
{
    for (;;) {
        pid_t pid = waitpid(-1, NULL, WNOHANG);

        if (pid > 0 || (pid < 0 && errno == EINTR))
            continue;
        return; /* 0: children still run; ECHILD: none left */
    }
}

/* stdio pointed at /dev/null: the runtime's descriptors (a host file or
 * pipe) must not stay reachable through this long-lived process. */
static void detach_stdio(void)
{
    int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

    if (fd < 0)
        return;
    for (int i = 0; i < 3; i++)
        dup2(fd, i);
    if (fd > 2)
        close(fd);
}

/* End this process as status says the program ended: exit with its code,
 * or die of its signal. 128+N only if the signal does not kill by default. */
static int end_as(int status)
{
    struct rlimit none = { 0, 0 };
    sigset_t set;
    int sig;

    if (!WIFSIGNALED(status))
        return WEXITSTATUS(status);
    sig = WTERMSIG(status);
    setrlimit(RLIMIT_CORE, &none);
    signal(sig, SIG_DFL);
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    kill(getpid(), sig);
    return 128 + sig;
}

/* --exec: run argv as a group leader, then end its group. A stop signal
 * (SIGTERM, SIGINT, SIGHUP) ends the group at once: the runc provider,
 * whose entered command runs in a session of its own, asks for SIGTERM
 * when the relay that started it dies (PR_SET_PDEATHSIG), which is how a
 * timeout, cancel or overflow reaches the command. The signals are blocked
 * before the fork and waited for, so none is lost between two looks. The
 * wait also wakes every LEADER_LOOK_MS: SIGCHLD's default action is to be
 * ignored, and a kernel may drop an ignored signal even while it is
 * blocked (gVisor's Sentry did: the wrapper then waited for an exit that
 * had already happened until the host's deadline). A handler of its own
 * makes it a signal to deliver, and the look catches the rest. */
#define LEADER_LOOK_MS 100

static void on_child(int sig)
{
    (void)sig;
}

static int run_leader(char **argv)
{
    const struct timespec look = { 0, LEADER_LOOK_MS * 1000000L };
    struct sigaction sa;
    sigset_t set, old;
    int status, e, sig;
    pid_t pid, w;

    prctl(PR_SET_DUMPABLE, 0UL, 0UL, 0UL, 0UL);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_child;
    sigaction(SIGCHLD, &sa, NULL);
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, &old);
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "cordon-init: fork: %s\n", strerror(errno));
        return 126;
    }
    if (pid == 0) {
        sa.sa_handler = SIG_DFL;
        sigaction(SIGCHLD, &sa, NULL);
        sigprocmask(SIG_SETMASK, &old, NULL);
        setpgid(0, 0);
        execvp(argv[0], argv);
        e = errno;
        fprintf(stderr, "cordon-init: cannot execute %s: %s\n", argv[0], strerror(e));
        _exit(e == ENOENT ? 127 : 126);
    }
    /* Both sides set the group, so that the kill below never misses it. */
    setpgid(pid, pid);
    for (;;) {
        w = waitpid(pid, &status, WNOHANG);
        if (w != 0 && !(w < 0 && errno == EINTR))
            break;
        sig = sigtimedwait(&set, NULL, &look);
        if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
            /* the leader by its pid too, should it have left the group */
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
        }
    }
    kill(-pid, SIGKILL);
    if (w < 0)
        return 126;
    return end_as(status);
}

bool cordon__init_takes_stop(void)
{
    return getpid() != 1;
}

/* --agent: close what the runtime left above stderr, then the pair lands
 * at 3 (served) and 4 (the host's copy comes from here). */
static bool agent_pair(void)
{
    int sv[2];

    if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return false;
    return sv[0] == CORDON_AGENT_FD_SERVE && sv[1] == CORDON_AGENT_FD_HOST;
}

int main(int argc, char **argv)
{
    sigset_t set;
    uint64_t deadline_ms, end;
    bool agent;

    if (argc >= 3 && strcmp(argv[1], "--exec") == 0 && argv[2][0] != '\0')
        return run_leader(argv + 2);
    agent = argc == 4 && strcmp(argv[3], "--agent") == 0;
    if ((argc != 3 && !agent) || strcmp(argv[1], "--deadline-ms") != 0)
        return usage("expected --deadline-ms N [--agent] or --exec PROGRAM [ARG...]");
    if (!parse_ms(argv[2], &deadline_ms))
        return usage("--deadline-ms wants a whole number of milliseconds");
    end = now_ms() + deadline_ms;
    /* The pair first, at fds 3 and 4, before the runtime's stderr goes:
     * whatever else the runtime left open is not ours to keep. */
    if (agent && !agent_pair())
        return usage("--agent: cannot make the socketpair at fds 3 and 4");

    /* PID 1 of a namespace reaps by nature; anywhere else ask for it. */
    if (getpid() != 1)
        prctl(PR_SET_CHILD_SUBREAPER, 1UL, 0UL, 0UL, 0UL);
    /* The sandbox user shares our uid: keep /proc/1/fd and friends closed to it. */
    prctl(PR_SET_DUMPABLE, 0UL, 0UL, 0UL, 0UL);
    detach_stdio();

    /* Blocked, the stop signals are taken here (and dropped as PID 1)
     * rather than acted on by a kernel that might not treat this process
     * as a namespace's init (gVisor's); sigtimedwait takes them in turn. */
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0)
        return EXIT_USAGE;
    if (agent)
        return cordon__init_agent(end, &set);
    for (;;) {
        uint64_t now = now_ms(), left;
        struct timespec ts;
        siginfo_t si;
        int sig;

        reap_all();
        if (now >= end)
            return EXIT_DEADLINE;
        left = end - now;
        ts.tv_sec = (time_t)(left / 1000u);
        ts.tv_nsec = (long)(left % 1000u) * 1000000L;
        sig = sigtimedwait(&set, &si, &ts);
        if ((sig == SIGTERM || sig == SIGINT || sig == SIGHUP) && cordon__init_takes_stop())
            return 0;
        /* SIGCHLD, a timeout or EINTR: reap and look at the clock again. */
    }
}
