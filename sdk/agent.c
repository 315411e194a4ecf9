/*
 * sdk: the host's client of the resident agent (cordon/sdk/agent.h; the
 * wire format is sdk/agent-proto.h, shared with cordon-init).
 *
 * The reply socket is ours: the agent holds the other end, so it reads EOF
 * when the agent is gone, and the agent sees our close as cancel. The
 * agent's pidfd is watched beside it so that a dead agent is reported at
 * once, even when its death left our request unread in its queue.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cordon/sdk/agent.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/spec.h>

#include "sdk/agent-proto.h"
#include "sdk/fs-internal.h"

#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

#define OPEN_WAIT_MS 2000u   /* for a runtime's init to become cordon-init */
#define SEND_TIMEOUT_S 5      /* a full queue that long: the agent is not serving */
/* From cancel to the agent's report that the group is gone: its own bound
 * (CORDON_AGENT_SETTLE_MS) and room for a busy machine. */
#define CANCEL_WAIT_MS (CORDON_AGENT_SETTLE_MS + 1500u)

static uint64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Whether the process of pidfd runs cordon-init now: its comm, which only
 * the process itself can change (and cordon-init never does). */
static bool is_cordon_init(int pidfd)
{
    char path[64], text[256], *at;
    long pid;
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
    if (cordon__fs_read_small(AT_FDCWD, path, text, sizeof(text)) <= 0 || (at = strstr(text, "\nPid:")) == NULL ||
        (pid = strtol(at + 5, NULL, 10)) <= 0)
        return false;
    snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
    n = cordon__fs_read_small(AT_FDCWD, path, text, sizeof(text));
    return n > 0 && strcmp(text, "cordon-init\n") == 0;
}

int cordon_agent_open(int pidfd, int *ret_fd, struct cordon_error *err)
{
    struct timeval tv = { SEND_TIMEOUT_S, 0 };
    int fd, type = 0, domain = 0;
    socklen_t len = sizeof(type), dlen = sizeof(domain);

    if (pidfd < 0 || ret_fd == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "agent: pidfd and ret_fd required");
    /* Needs ptrace rights over the agent (PTRACE_MODE_ATTACH_REALCREDS).
     * A runtime's `run --detach` may return before its init has exec'd
     * cordon-init: no fd 4 yet (EBADF) is waited for, on the pidfd (which
     * also says when the process ended instead), for OPEN_WAIT_MS. */
    for (unsigned waited = 0;; waited += 2) {
        struct pollfd p = { pidfd, POLLIN, 0 };
        bool is_init = is_cordon_init(pidfd);

        /* The runtime's own init holds sockets at low numbers too: only
         * once the process is cordon-init is its fd 4 the agent's. */
        errno = EBADF;
        fd = is_init ? (int)syscall(SYS_pidfd_getfd, pidfd, CORDON_AGENT_FD_HOST, 0) : -1;
        if (fd >= 0 || errno != EBADF || waited >= OPEN_WAIT_MS || poll(&p, 1, 2) != 0)
            break;
    }
    if (fd < 0)
        return cordon_error_set(err, CORDON_E_UNAVAILABLE, errno,
                                "agent: cannot take fd %d of the agent: %s", CORDON_AGENT_FD_HOST,
                                strerror(errno));
    /* pidfd_getfd sets close-on-exec; a fd 4 that is not the pair is not an agent. */
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_SEQPACKET ||
        getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &dlen) != 0 || domain != AF_UNIX) {
        close(fd);
        return cordon_error_set(err, CORDON_E_UNAVAILABLE, 0,
                                "agent: fd %d of the process is not an agent's channel",
                                CORDON_AGENT_FD_HOST);
    }
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    *ret_fd = fd;
    return 0;
}

static size_t count(const char *const *v)
{
    size_t n = 0;

    while (v != NULL && v[n] != NULL)
        n++;
    return n;
}

/* The message's size, or 0 when cmd does not fit one. */
static size_t message_size(const struct cordon_agent_cmd *cmd)
{
    size_t argc = count(cmd->argv), envc = count(cmd->envp);
    size_t total = sizeof(struct cordon_agent_request) + strnlen(cmd->cwd, CORDON_AGENT_MSG_MAX) + 1;

    if (argc == 0 || argc > CORDON_AGENT_ARGV_MAX || envc > CORDON_AGENT_ENV_MAX)
        return 0;
    /* Each string is bounded before it is added: no sum can wrap. */
    for (size_t i = 0; i < argc + envc && total <= CORDON_AGENT_MSG_MAX; i++) {
        const char *s = i < argc ? cmd->argv[i] : cmd->envp[i - argc];

        total += strnlen(s, CORDON_AGENT_MSG_MAX) + 1;
    }
    return total <= CORDON_AGENT_MSG_MAX ? total : 0;
}

bool cordon_agent_fits(const struct cordon_agent_cmd *cmd)
{
    return cmd != NULL && cmd->argv != NULL && cmd->cwd != NULL && message_size(cmd) != 0;
}

/* One message: the header, the strings, and the four descriptors. */
static int request_send(int agent_fd, const struct cordon_agent_cmd *cmd, size_t size,
                        int reply_end, struct cordon_error *err)
{
    struct cordon_agent_request h = { CORDON_AGENT_MAGIC, CORDON_AGENT_VERSION,
                                      (uint32_t)count(cmd->argv), (uint32_t)count(cmd->envp) };
    int fds[CORDON_AGENT_NFDS] = { cmd->stdin_fd, cmd->stdout_fd, cmd->stderr_fd, reply_end };
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(fds))];
    } c;
    char *buf = malloc(size), *p;
    struct iovec iov;
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
                         .msg_controllen = sizeof(c.buf) };
    struct cmsghdr *cm;
    ssize_t n;

    if (buf == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "agent: out of memory");
    memcpy(buf, &h, sizeof(h));
    p = buf + sizeof(h);
    p = stpcpy(p, cmd->cwd) + 1;
    for (size_t i = 0; i < h.argc; i++)
        p = stpcpy(p, cmd->argv[i]) + 1;
    for (size_t i = 0; i < h.envc; i++)
        p = stpcpy(p, cmd->envp[i]) + 1;
    iov.iov_base = buf;
    iov.iov_len = size;
    memset(c.buf, 0, sizeof(c.buf));
    cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(fds));
    memcpy(CMSG_DATA(cm), fds, sizeof(fds));
    do
        n = sendmsg(agent_fd, &mh, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    free(buf);
    if (n == (ssize_t)size)
        return 0;
    if (n < 0 && (errno == EPIPE || errno == ECONNREFUSED || errno == ECONNRESET))
        return cordon_error_set(err, CORDON_E_UNAVAILABLE, errno,
                                "agent: the sandbox's agent is gone (%s)", strerror(errno));
    return cordon_error_set(err, n < 0 && errno == EAGAIN ? CORDON_E_TIMEOUT : CORDON_E_IO,
                            n < 0 ? errno : 0, "agent: cannot send the request: %s",
                            n < 0 ? strerror(errno) : "short send");
}

static int refused(int value, struct cordon_error *err)
{
    if (value == EAGAIN)
        return cordon_error_set(err, CORDON_E_LIMIT, EAGAIN,
                                "agent: already runs %u commands", CORDON_AGENT_RUNNING_MAX);
    return cordon_error_set(err, value == EINVAL ? CORDON_E_INVALID : CORDON_E_PROVIDER, value,
                            "agent: refused the command: %s", strerror(value));
}

static int agent_died(struct cordon_error *err)
{
    return cordon_error_set(err, CORDON_E_UNAVAILABLE, 0,
                            "agent: the sandbox's agent (its init) died: the sandbox has ended");
}

/*
 * The reply socket ended before any reply. A dying agent closes it on its
 * way out, a moment before its pidfd turns readable; a live one drops a
 * request it cannot take (a descriptor limit too low to receive the
 * request's four, which code inside could once set), and the sandbox is
 * still whole. DROP_WAIT_MS tells the two apart: not "died", which would
 * make the provider destroy a live execution.
 */
#define DROP_WAIT_MS 200
static int agent_dropped(int pidfd, struct cordon_error *err)
{
    struct pollfd p = { pidfd, POLLIN, 0 };
    int n;

    do
        n = poll(&p, 1, DROP_WAIT_MS);
    while (n < 0 && errno == EINTR);
    if (n != 0)
        return agent_died(err);
    return cordon_error_set(err, CORDON_E_PROVIDER, 0,
                            "agent: the sandbox's agent dropped the command without a reply and "
                            "still runs (it could not take the request, e.g. its descriptor limit "
                            "is too low for the request's four); the sandbox is left as it was");
}

/*
 * Cancel the command: shutting our write side makes the reply socket
 * readable for the agent, which kills the command's process group and
 * reports its end once the group is gone; we keep reading for that.
 * Returns when to give up waiting.
 */
static uint64_t cancel(int reply_fd, struct cordon_exec_outcome *ret, enum cordon_run_status why)
{
    ret->status = why;
    ret->signal = SIGKILL;
    shutdown(reply_fd, SHUT_WR);
    return mono_ms() + CANCEL_WAIT_MS;
}

int cordon_agent_run(int agent_fd, int pidfd, const struct cordon_agent_cmd *cmd, int cancel_fd,
                     uint64_t timeout_ms, struct cordon_exec_outcome *ret,
                     struct cordon_error *err)
{
    uint64_t start = mono_ms(), now, stop = 0;
    size_t size;
    int pair[2] = { -1, -1 }, r;

    if (ret == NULL || agent_fd < 0 || pidfd < 0 || cmd == NULL || cmd->argv == NULL ||
        cmd->argv[0] == NULL || cmd->argv[0][0] == '\0' || cmd->cwd == NULL ||
        cmd->cwd[0] != '/' || cmd->stdin_fd < 0 || cmd->stdout_fd < 0 || cmd->stderr_fd < 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "agent: agent_fd, pidfd, argv[0], an absolute cwd and three "
                                "stdio fds required");
    memset(ret, 0, sizeof(*ret));
    ret->exit_code = -1;
    if ((size = message_size(cmd)) == 0)
        return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                "agent: the command exceeds one message (%u arguments, %u "
                                "variables, %u bytes)", CORDON_AGENT_ARGV_MAX,
                                CORDON_AGENT_ENV_MAX, CORDON_AGENT_MSG_MAX);
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "agent: socketpair: %s",
                                strerror(errno));
    r = request_send(agent_fd, cmd, size, pair[1], err);
    close(pair[1]);
    if (r < 0)
        goto out;
    for (bool started = false;;) {
        struct pollfd p[3] = { { pair[0], POLLIN, 0 }, { pidfd, POLLIN, 0 },
                               { cancel_fd, POLLIN, 0 } };
        struct cordon_agent_reply rep;
        int wait_ms = -1;
        ssize_t n;

        now = mono_ms();
        if (stop != 0) {
            /* Cancelled: only the end the agent reports, once the group is gone. */
            if (now >= stop) {
                r = cordon_error_set(err, CORDON_E_TIMEOUT, 0,
                                     "agent: the command's process group was not reported gone "
                                     "within %u ms of its cancel", CANCEL_WAIT_MS);
                goto out;
            }
            wait_ms = (int)(stop - now);
        } else if (timeout_ms != 0) {
            if (now - start >= timeout_ms) {
                stop = cancel(pair[0], ret, CORDON_RUN_TIMEOUT);
                continue;
            }
            wait_ms = (int)(timeout_ms - (now - start) > 60000 ? 60000
                                                                : timeout_ms - (now - start));
        }
        if (poll(p, cancel_fd >= 0 && stop == 0 ? 3 : 2, wait_ms) < 0) {
            if (errno == EINTR)
                continue;
            r = cordon_error_set(err, CORDON_E_IO, errno, "agent: poll: %s", strerror(errno));
            goto out;
        }
        /* The reply first: an end already reported wins over a death after it. */
        if (p[0].revents != 0) {
            n = recv(pair[0], &rep, sizeof(rep), MSG_DONTWAIT);
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (n == 0 && !started) {
                r = agent_dropped(pidfd, err);
                goto out;
            }
            if (n != (ssize_t)sizeof(rep) || rep.magic != CORDON_AGENT_MAGIC) {
                r = agent_died(err);
                goto out;
            }
            if (rep.kind == CORDON_AGENT_STARTED) {
                started = true;
                continue;
            }
            if (rep.kind == CORDON_AGENT_REFUSED) {
                r = refused(rep.value, err);
                goto out;
            }
            if (rep.kind == CORDON_AGENT_CWD_FAILED && stop == 0) {
                r = cordon_error_set(err, CORDON_E_PROVIDER, rep.value,
                                     "agent: entering the working directory %.*s failed: %s",
                                     cordon_text_fit(cmd->cwd, 200), cmd->cwd,
                                     strerror(rep.value));
                goto out;
            }
            if (rep.kind == CORDON_AGENT_CWD_FAILED)
                continue;
            if (stop != 0 && (rep.kind == CORDON_AGENT_EXITED || rep.kind == CORDON_AGENT_SIGNALED))
                break;   /* the cancel's status stands: the group is gone */
            if (rep.kind == CORDON_AGENT_EXITED && rep.value >= 0 && rep.value <= 255) {
                ret->status = CORDON_RUN_EXITED;
                ret->exit_code = rep.value;
            } else if (rep.kind == CORDON_AGENT_SIGNALED && rep.value > 0 && rep.value < 65) {
                ret->status = CORDON_RUN_SIGNALED;
                ret->signal = rep.value;
            } else {
                r = cordon_error_set(err, CORDON_E_PROVIDER, 0,
                                     "agent: reply kind %u value %d makes no sense",
                                     (unsigned)rep.kind, (int)rep.value);
                goto out;
            }
            break;
        }
        if (p[1].revents != 0) {
            r = agent_died(err);
            goto out;
        }
        if (stop == 0 && cancel_fd >= 0 && p[2].revents != 0)
            stop = cancel(pair[0], ret, CORDON_RUN_CANCELLED);
    }
    ret->duration_ms = mono_ms() - start;
    r = 0;
out:
    /* Closing our end is cancel for a command still running (an error above). */
    if (pair[0] >= 0)
        close(pair[0]);
    return r;
}

#define DEADLINE_REPLY_MS 5000   /* an agent serves its socket between two polls */

int cordon_agent_set_deadline(int agent_fd, int pidfd, uint64_t ms, struct cordon_error *err)
{
    struct cordon_agent_deadline d = { CORDON_AGENT_DEADLINE_MAGIC, CORDON_AGENT_VERSION, ms };
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } c;
    struct iovec iov = { &d, sizeof(d) };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
                         .msg_controllen = sizeof(c.buf) };
    struct cordon_agent_reply rep;
    struct cmsghdr *cm;
    uint64_t until;
    int pair[2] = { -1, -1 }, r;
    ssize_t n;

    if (agent_fd < 0 || pidfd < 0 || ms == 0 || ms > CORDON_INIT_DEADLINE_MAX_MS)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "agent: agent_fd, pidfd and ms (1..%llu) required",
                                (unsigned long long)CORDON_INIT_DEADLINE_MAX_MS);
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "agent: socketpair: %s",
                                strerror(errno));
    memset(c.buf, 0, sizeof(c.buf));
    cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &pair[1], sizeof(int));
    do
        n = sendmsg(agent_fd, &mh, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    close(pair[1]);
    if (n != (ssize_t)sizeof(d)) {
        r = n < 0 && (errno == EPIPE || errno == ECONNREFUSED || errno == ECONNRESET)
                ? agent_died(err)
                : cordon_error_set(err, CORDON_E_IO, n < 0 ? errno : 0,
                                   "agent: cannot send the deadline: %s",
                                   n < 0 ? strerror(errno) : "short send");
        goto out;
    }
    /* The reply says whether the clock moved; without one it did not. */
    until = mono_ms() + DEADLINE_REPLY_MS;
    for (;;) {
        struct pollfd p[2] = { { pair[0], POLLIN, 0 }, { pidfd, POLLIN, 0 } };
        uint64_t now = mono_ms();

        if (now >= until) {
            r = cordon_error_set(err, CORDON_E_TIMEOUT, 0,
                                 "agent: no reply to the new deadline in %u ms; the deadline is "
                                 "unchanged", DEADLINE_REPLY_MS);
            goto out;
        }
        if (poll(p, 2, (int)(until - now)) < 0 && errno != EINTR) {
            r = cordon_error_set(err, CORDON_E_IO, errno, "agent: poll: %s", strerror(errno));
            goto out;
        }
        if (p[0].revents != 0)
            break;
        if (p[1].revents != 0) {
            r = agent_died(err);
            goto out;
        }
    }
    n = recv(pair[0], &rep, sizeof(rep), MSG_DONTWAIT);
    if (n == 0) {
        /* Dropped: an agent that predates the message, or one that died. */
        r = agent_dropped(pidfd, err);
        if (r == CORDON_E_PROVIDER)
            r = cordon_error_set(err, CORDON_E_UNSUPPORTED, 0,
                                 "agent: the sandbox's cordon-init does not take a new deadline "
                                 "(it predates the deadline message); the deadline is unchanged");
    } else if (n != (ssize_t)sizeof(rep) || rep.magic != CORDON_AGENT_MAGIC) {
        r = agent_died(err);
    } else if (rep.kind == CORDON_AGENT_DEADLINE_SET) {
        r = 0;
    } else if (rep.kind == CORDON_AGENT_REFUSED && rep.value == ETIME) {
        r = cordon_error_set(err, CORDON_E_TIMEOUT, ETIME,
                             "agent: the sandbox's deadline has already passed (it is ending)");
    } else {
        r = cordon_error_set(err, CORDON_E_PROVIDER, rep.kind == CORDON_AGENT_REFUSED ? rep.value : 0,
                             "agent: refused the new deadline (reply kind %u value %d)",
                             (unsigned)rep.kind, (int)rep.value);
    }
out:
    close(pair[0]);
    return r;
}

int cordon_agent_extend(const struct cordon_host_v1 *host, int pidfd, const char *state_json,
                        uint64_t expires_at_ms, char **ret_state_json, struct cordon_error *err)
{
    struct cordon_error in;
    char *state = NULL;
    uint64_t now;
    int agent_fd = -1, r;

    if (host == NULL || pidfd < 0 || ret_state_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "extend: host, pidfd and ret_state_json required");
    /* The new state first: it changes nothing until the clock has moved. */
    if ((r = cordon_spec_state_set_deadline(host, state_json, expires_at_ms, &state, err)) < 0)
        return r;
    cordon_error_init(&in);
    if (cordon_agent_open(pidfd, &agent_fd, &in) < 0) {
        /* Without the channel (not root on the host) nothing moves the clock. */
        r = cordon_error_set(err, CORDON_E_UNSUPPORTED, in.os_errno,
                             "extend: %s (only root on the host may take the init's channel)", in.message);
        goto out;
    }
    now = cordon_now_wall_ms();
    if (expires_at_ms <= now) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0, "extend: expires_at_ms is %llu ms in the past",
                             (unsigned long long)(now - expires_at_ms));
        goto out;
    }
    if ((r = cordon_agent_set_deadline(agent_fd, pidfd, expires_at_ms - now, err)) < 0)
        goto out;
    *ret_state_json = state;
    state = NULL;
out:
    if (state != NULL)
        host->free(state);
    if (agent_fd >= 0)
        close(agent_fd);
    return r;
}
