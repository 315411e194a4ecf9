/*
 * cordon-init --agent: the serving loop of the resident agent (the wire
 * format is sdk/agent-proto.h, the design docs/decisions.md).
 *
 * Only the host can write to the socket (it copies fd 4 with pidfd_getfd,
 * which needs ptrace rights over this non-dumpable process), yet every
 * message is checked as if it were hostile: a wrong size, a missing or
 * extra descriptor, a string that does not end where the message ends, and
 * the message is dropped with its descriptors closed. Nothing here blocks:
 * one poll waits on the signals (a signalfd), the socket, the reply
 * sockets of the commands running and the deadline, and every send is
 * MSG_DONTWAIT, so that no host can stall the reaping or the clock.
 *
 * A command is forked from this process and inherits exactly its
 * confinement (namespaces, cgroup, seccomp filter, capabilities, uid,
 * no_new_privs, rlimits): nothing is set up, so nothing can be widened.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sdk/agent-proto.h"

#define EXIT_DEADLINE 124
#define FDS_ROOM 8u                  /* descriptors one message may carry before CTRUNC */
#define SETTLE_POLL_MS 2u            /* looking again at a group that is going */

extern char **environ;

/* A command started and not yet reported. Once cancelled, its reply
 * socket is no longer watched (the host shut its side) but still answered;
 * once its leader is reaped, the end waits until the group is gone. */
struct running {
    pid_t pid;
    int reply;
    bool cancelled, leader_gone;
    int status;                  /* the leader's, from waitpid */
    uint64_t gone_at;            /* when the leader was reaped */
};

static struct running running[CORDON_AGENT_RUNNING_MAX];
static size_t n_running;
/* One message, parsed in place: argv and envp point into it. */
static char msg[CORDON_AGENT_MSG_MAX + 1];
static char *argv_buf[CORDON_AGENT_ARGV_MAX + 1];
static char *envp_buf[CORDON_AGENT_ENV_MAX + 1];

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Never waits: a host that stopped reading loses the reply, not PID 1. */
static void reply_send(int fd, uint32_t kind, int32_t value)
{
    struct cordon_agent_reply r = { CORDON_AGENT_MAGIC, kind, value, 0 };

    (void)send(fd, &r, sizeof(r), MSG_DONTWAIT | MSG_NOSIGNAL);
}

static void close_all(const int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        close(fds[i]);
}

/* cwd, argv and envp of msg[0..len), pointing into msg; false unless it
 * is exactly a header and argc + envc + 1 NUL-terminated strings. */
static bool request_parse(size_t len, const char **ret_cwd)
{
    struct cordon_agent_request h;
    size_t off = sizeof(h), want;
    const char *cwd = NULL;

    if (len < sizeof(h))
        return false;
    memcpy(&h, msg, sizeof(h));
    if (h.magic != CORDON_AGENT_MAGIC || h.version != CORDON_AGENT_VERSION || h.argc < 1 ||
        h.argc > CORDON_AGENT_ARGV_MAX || h.envc > CORDON_AGENT_ENV_MAX)
        return false;
    want = 1 + (size_t)h.argc + h.envc;
    for (size_t i = 0; i < want; i++) {
        char *s, *nul;

        if (off >= len)
            return false;
        s = msg + off;
        nul = memchr(s, '\0', len - off);
        if (nul == NULL)
            return false;
        if (i == 0)
            cwd = s;
        else if (i <= h.argc)
            argv_buf[i - 1] = s;
        else if (s[0] == '=' || strchr(s, '=') == NULL)
            return false;
        else
            envp_buf[i - 1 - h.argc] = s;
        off = (size_t)(nul - msg) + 1;
    }
    if (off != len || cwd[0] != '/' || argv_buf[0][0] == '\0')
        return false;
    argv_buf[h.argc] = NULL;
    envp_buf[h.envc] = NULL;
    *ret_cwd = cwd;
    return true;
}

/* The forked child: a group of its own, the host's stdio, nothing else
 * open, then the program. The mask blocked for the signalfd is lifted. */
static void child_run(const int *fds, const char *cwd)
{
    sigset_t none;
    int e;

    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    setpgid(0, 0);
    /* Received fds are above 4 (0-2 /dev/null, 3-4 the pair): no clash. */
    for (int i = 0; i < 3; i++)
        if (dup2(fds[i], i) < 0)
            _exit(126);
    /* Entered as the sandbox's user: a directory it cannot enter fails
     * here, and the host hears why before the exit. */
    if (chdir(cwd) != 0) {
        e = errno;
        reply_send(fds[3], CORDON_AGENT_CWD_FAILED, e);
        dprintf(2, "cordon-init: cannot enter %s: %s\n", cwd, strerror(e));
        _exit(126);
    }
    if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
    environ = envp_buf;
    execvp(argv_buf[0], argv_buf);
    e = errno;
    dprintf(2, "cordon-init: cannot execute %s: %s\n", argv_buf[0], strerror(e));
    _exit(e == ENOENT ? 127 : 126);
}

static bool is_seqpacket(int fd)
{
    int type = 0;
    socklen_t len = sizeof(type);

    return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_SEQPACKET;
}

/*
 * A deadline message (len bytes in msg, fds its descriptors): *end_ms moves
 * to ms from now, which may be sooner or later than before. Only the host
 * holds the channel, so only the host moves the clock; code inside cannot
 * reach it. Once the deadline has passed nothing revives it: the loop ends
 * the sandbox at its top, and the host hears ETIME.
 */
static void deadline_set(size_t len, int flags, const int *fds, size_t nfds, uint64_t *end_ms)
{
    struct cordon_agent_deadline d;
    uint64_t now = now_ms();

    if (nfds != 1 || !is_seqpacket(fds[0])) {
        close_all(fds, nfds);
        return;
    }
    memcpy(&d, msg, sizeof(d));
    if (len != sizeof(d) || (flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 ||
        d.version != CORDON_AGENT_VERSION || d.ms == 0 || d.ms > CORDON_INIT_DEADLINE_MAX_MS) {
        reply_send(fds[0], CORDON_AGENT_REFUSED, EINVAL);
    } else if (now >= *end_ms) {
        reply_send(fds[0], CORDON_AGENT_REFUSED, ETIME);
    } else {
        *end_ms = now + d.ms;
        reply_send(fds[0], CORDON_AGENT_DEADLINE_SET, 0);
    }
    close(fds[0]);
}

/* Read one message and start its command (or move the deadline), or drop it. */
static void serve_one(int sock, uint64_t *end_ms)
{
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int) * FDS_ROOM)];
    } c;
    struct iovec iov = { msg, sizeof(msg) };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
                         .msg_controllen = sizeof(c.buf) };
    int fds[FDS_ROOM], reply = -1;
    size_t nfds = 0;
    const char *cwd = NULL;
    ssize_t len = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    pid_t pid;

    if (len < 0)
        return;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm)) {
        size_t n;

        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
            cm->cmsg_len < CMSG_LEN(0))
            continue;
        n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n && nfds < FDS_ROOM; i++)
            memcpy(&fds[nfds++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
    }
    if ((size_t)len >= sizeof(uint32_t) && memcmp(msg, &(uint32_t){ CORDON_AGENT_DEADLINE_MAGIC },
                                                  sizeof(uint32_t)) == 0) {
        deadline_set((size_t)len, mh.msg_flags, fds, nfds, end_ms);
        return;
    }
    if (nfds == CORDON_AGENT_NFDS && is_seqpacket(fds[3]))
        reply = fds[3];
    if (reply < 0 || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 ||
        (size_t)len > CORDON_AGENT_MSG_MAX || !request_parse((size_t)len, &cwd)) {
        if (reply >= 0)
            reply_send(reply, CORDON_AGENT_REFUSED, EINVAL);
        close_all(fds, nfds);
        return;
    }
    if (n_running == CORDON_AGENT_RUNNING_MAX) {
        reply_send(reply, CORDON_AGENT_REFUSED, EAGAIN);
        close_all(fds, nfds);
        return;
    }
    pid = fork();
    if (pid == 0)
        child_run(fds, cwd);
    if (pid < 0) {
        reply_send(reply, CORDON_AGENT_REFUSED, errno);
        close_all(fds, nfds);
        return;
    }
    /* Both sides set the group, so that a kill of it never misses. */
    setpgid(pid, pid);
    close_all(fds, 3);
    running[n_running] = (struct running){ .pid = pid, .reply = reply };
    n_running++;
    reply_send(reply, CORDON_AGENT_STARTED, pid);
}

/* Collect every child that ended: a leader is marked (its group is
 * killed, as --exec does), the rest (members of a group, reparented to
 * us) only go. */
static void reap(void)
{
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);

        if (pid < 0 && errno == EINTR)
            continue;
        if (pid <= 0)
            return;
        for (size_t i = 0; i < n_running; i++) {
            if (running[i].pid != pid || running[i].leader_gone)
                continue;
            kill(-pid, SIGKILL);
            running[i].leader_gone = true;
            running[i].status = status;
            running[i].gone_at = now_ms();
            break;
        }
    }
}

/*
 * Report the commands whose group is gone. The leader's end is only half
 * of it: the host hears of the end once no process of the group is left
 * (killed again at every look, so that a fork in flight is caught), which
 * is what lets it call the sandbox ready for the next command. A group
 * kept alive by a zombie whose parent is not ours (a member moved into
 * the group by another command of the sandbox) is reported after
 * CORDON_AGENT_SETTLE_MS all the same: every process in it was killed.
 * Returns whether a group is still going.
 */
static bool settle(void)
{
    bool going = false;

    for (size_t i = 0; i < n_running;) {
        struct running *r = &running[i];

        if (!r->leader_gone) {
            i++;
            continue;
        }
        if (kill(-r->pid, SIGKILL) == 0 && now_ms() - r->gone_at < CORDON_AGENT_SETTLE_MS) {
            going = true;
            i++;
            continue;
        }
        if (WIFSIGNALED(r->status))
            reply_send(r->reply, CORDON_AGENT_SIGNALED, WTERMSIG(r->status));
        else
            reply_send(r->reply, CORDON_AGENT_EXITED, WEXITSTATUS(r->status));
        close(r->reply);
        *r = running[--n_running];
    }
    return going;
}

int cordon__init_agent(uint64_t end_ms, const sigset_t *stop)
{
    struct pollfd p[2 + CORDON_AGENT_RUNNING_MAX];
    size_t owner[2 + CORDON_AGENT_RUNNING_MAX];
    int sfd = signalfd(-1, stop, SFD_CLOEXEC | SFD_NONBLOCK);

    if (sfd < 0)
        return 2;
    for (;;) {
        uint64_t now, left;
        struct signalfd_siginfo si;
        size_t k = 2;
        bool going;

        reap();
        going = settle();
        now = now_ms();
        if (now >= end_ms)
            return EXIT_DEADLINE;
        left = end_ms - now;
        if (going && left > SETTLE_POLL_MS)
            left = SETTLE_POLL_MS;
        p[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
        p[1] = (struct pollfd){ .fd = CORDON_AGENT_FD_SERVE, .events = POLLIN };
        for (size_t i = 0; i < n_running; i++) {
            if (running[i].cancelled || running[i].leader_gone)
                continue;
            p[k] = (struct pollfd){ .fd = running[i].reply, .events = POLLIN };
            owner[k++] = i;
        }
        if (poll(p, (nfds_t)k, left > INT_MAX ? INT_MAX : (int)left) < 0)
            continue;
        while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
            if ((si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT || si.ssi_signo == SIGHUP) &&
                cordon__init_takes_stop())
                return 0;
        /* The host shut (or closed, or wrote to) a reply socket: cancel.
         * The group is killed; the leader is reaped at the top of the loop
         * and the end reported once the group is gone (settle). */
        for (size_t j = 2; j < k; j++) {
            struct running *r = &running[owner[j]];

            if (p[j].revents == 0)
                continue;
            /* The leader too, by its pid: one that moved itself to another
             * group is still our unreaped child, so its pid names it alone. */
            kill(-r->pid, SIGKILL);
            kill(r->pid, SIGKILL);
            r->cancelled = true;
        }
        if (p[1].revents & POLLIN)
            serve_one(CORDON_AGENT_FD_SERVE, &end_ms);
    }
}
