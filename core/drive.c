/*
 * core: the host side of one exec through a provider.
 *
 * provider->exec runs on a thread of its own; this thread owns output and
 * time. Everything the provider's thread touches lives in one heap object
 * (struct call) so that a provider that ignores its cancel fd can be left
 * behind without its fds being closed or reused under it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/drive.h"
#include <cordon/sdk/host.h>
#include <cordon/sdk/relay.h>
#include <cordon/sdk/request.h>

#define DRAIN_MS 200            /* reading on after the provider returned */
#define ABANDON_MS 10000        /* waiting for the provider after cancel */
#define IO_CHUNK 65536
#define READS_PER_WAKE 16

typedef int (*exec_fn)(struct cordon_resource *, const char *, const char *,
                       const struct cordon_exec_io *, char **, struct cordon_error *);

struct call {
    pthread_mutex_t lock;
    bool finished, abandoned;   /* under lock */
    exec_fn exec;
    const struct cordon_host_v1 *host;
    struct cordon_resource *resource;
    char *state_json, *request_json;   /* copies: they outlive an abandoned call */
    struct cordon_exec_io io;
    int null_fd, in_fd, out_r, out_w, err_r, err_w, cancel_r, cancel_w, done_fd;
    /* the provider's answer, written by the thread before it signals done_fd */
    int rc;
    char *result;
    struct cordon_error perr;
};

void cordon__drive_opts_init(struct cordon_drive_opts *opts)
{
    if (opts == NULL)
        return;
    memset(opts, 0, sizeof(*opts));
    opts->struct_size = (uint32_t)sizeof(*opts);
    opts->stdin_fd = -1;
    opts->cancel_fd = -1;
    opts->stdout_sink_fd = -1;
    opts->stderr_sink_fd = -1;
}

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static void call_free(struct call *c)
{
    if (c == NULL)
        return;
    close_fd(&c->null_fd);
    close_fd(&c->in_fd);
    close_fd(&c->out_r);
    close_fd(&c->out_w);
    close_fd(&c->err_r);
    close_fd(&c->err_w);
    close_fd(&c->cancel_r);
    close_fd(&c->cancel_w);
    close_fd(&c->done_fd);
    if (c->result != NULL && c->host != NULL)
        c->host->free(c->result);
    free(c->state_json);
    free(c->request_json);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static void *call_main(void *arg)
{
    struct call *c = arg;
    struct cordon_error perr;
    char *result = NULL;
    uint64_t one = 1;
    bool abandoned;
    int rc;

    cordon_error_init(&perr);
    rc = c->exec(c->resource, c->state_json, c->request_json, &c->io, &result, &perr);
    pthread_mutex_lock(&c->lock);
    c->rc = rc;
    c->result = result;
    c->perr = perr;
    c->perr.message[sizeof(c->perr.message) - 1] = '\0';
    c->finished = true;
    abandoned = c->abandoned;
    if (!abandoned && write(c->done_fd, &one, sizeof(one)) < 0) {
        /* an eventfd write only fails on counter overflow: cannot happen */
    }
    pthread_mutex_unlock(&c->lock);
    /* Nobody waits any more: the call is ours to clean up. */
    if (abandoned)
        call_free(c);
    return NULL;
}

static int validate(const struct cordon_drive_opts *o, struct cordon_exec_outcome *ret,
                    struct cordon_error *err)
{
    if (o == NULL || ret == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "drive: opts and ret must be set");
    if (o->struct_size != sizeof(*o))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "opts.struct_size: %u, expected %zu (cordon__drive_opts_init)",
                                o->struct_size, sizeof(*o));
    if (o->host == NULL || o->host->free == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "host: a services table with free is required");
    if (o->provider == NULL || o->provider->exec == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "provider: a vtable with exec is required");
    if (o->state_json == NULL || o->request_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "drive: state_json and request_json are required");
    return 0;
}

/* stdin_fd: the relay's pipe (borrowed, duplicated here) or -1 for /dev/null. */
static int call_new(const struct cordon_drive_opts *o, int stdin_fd, struct call **ret_call,
                    struct cordon_error *err)
{
    struct call *c = calloc(1, sizeof(*c));
    int p[2], rc = 0;

    if (c == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "drive: out of memory");
    pthread_mutex_init(&c->lock, NULL);
    c->null_fd = c->in_fd = c->out_r = c->out_w = c->err_r = c->err_w = -1;
    c->cancel_r = c->cancel_w = c->done_fd = -1;
    c->exec = o->provider->exec;
    c->host = o->host;
    c->resource = o->resource;
    c->state_json = strdup(o->state_json);
    c->request_json = strdup(o->request_json);
    if (c->state_json == NULL || c->request_json == NULL) {
        rc = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "drive: out of memory");
        goto out;
    }
    if (pipe2(p, O_CLOEXEC) < 0)
        goto io_error;
    c->out_r = p[0], c->out_w = p[1];
    if (pipe2(p, O_CLOEXEC) < 0)
        goto io_error;
    c->err_r = p[0], c->err_w = p[1];
    if (pipe2(p, O_CLOEXEC) < 0)
        goto io_error;
    c->cancel_r = p[0], c->cancel_w = p[1];
    c->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (c->done_fd < 0)
        goto io_error;
    /* Only the host's read ends are non-blocking; the provider writes as it likes. */
    if (fcntl(c->out_r, F_SETFL, O_NONBLOCK) < 0 || fcntl(c->err_r, F_SETFL, O_NONBLOCK) < 0)
        goto io_error;
    /* The call's own copy: an abandoned provider may still hold it. */
    if (stdin_fd >= 0 && (c->in_fd = fcntl(stdin_fd, F_DUPFD_CLOEXEC, 3)) < 0)
        goto io_error;
    if (stdin_fd < 0) {
        c->null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (c->null_fd < 0)
            goto io_error;
    }
    c->io = (struct cordon_exec_io){
        .abi_version = CORDON_ABI_VERSION,
        .struct_size = (uint32_t)sizeof(struct cordon_exec_io),
        .stdin_fd = c->in_fd >= 0 ? c->in_fd : c->null_fd,
        .stdout_fd = c->out_w,
        .stderr_fd = c->err_w,
        .cancel_fd = c->cancel_r,
    };
    *ret_call = c;
    c = NULL;
    goto out;
io_error:
    rc = cordon_error_set(err, CORDON_E_IO, errno, "drive: cannot create the exec's fds: %s",
                          strerror(errno));
out:
    call_free(c);
    return rc;
}

/* One stream's copy to the caller's fd: at most one chunk held, so a
 * sink that does not take its bytes stops the reading of its stream and
 * the sandbox's writes block on the pipe, bounded host memory. */
struct sink {
    int fd;                     /* borrowed; -1 = none */
    bool nonblock, broken;      /* broken: a write failed, forwarding stopped */
    size_t off, len;            /* buf[off, len) still to write */
    char buf[IO_CHUNK];
};

struct sinks {
    struct sink s[2];           /* stdout, stderr */
    uint64_t budget, forwarded; /* bytes past the combined budget are not forwarded */
};

static bool sink_on(const struct sink *k)
{
    return k->fd >= 0 && !k->broken;
}

static bool sink_pending(const struct sink *k)
{
    return sink_on(k) && k->off < k->len;
}

/* A blocking fd is written only after poll said it is writable, and no
 * more than PIPE_BUF at once: a pipe then takes it without blocking. */
static void sink_write(struct sink *k)
{
    size_t n = k->len - k->off;
    ssize_t w;

    if (!k->nonblock && n > PIPE_BUF)
        n = PIPE_BUF;
    w = write(k->fd, k->buf + k->off, n);
    if (w > 0)
        k->off += (size_t)w;
    else if (w < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    else
        k->broken = true;
    if (k->broken || k->off == k->len)
        k->off = k->len = 0;
}

/* The sinks poll said writable (ix: their pollfd, -1 for none). One fd
 * for both streams gets one write a round: poll vouched for one. */
static void sinks_write(struct sinks *sk, const struct pollfd *pfd, const int ix[2])
{
    bool wrote = false;

    for (int s = 0; s < 2; s++) {
        if (ix[s] < 0 || pfd[ix[s]].revents == 0 || pfd[ix[s]].events != POLLOUT)
            continue;
        if (s == 1 && wrote && sk->s[1].fd == sk->s[0].fd)
            continue;
        sink_write(&sk->s[s]);
        wrote = true;
    }
}

static void read_stream(struct cordon_capture *cap, int *fd, int stream, struct sinks *sk)
{
    struct sink *k = sk != NULL ? &sk->s[stream - 1] : NULL;
    char local[IO_CHUNK];

    for (int i = 0; i < READS_PER_WAKE; i++) {
        char *buf = k != NULL && sink_on(k) ? k->buf : local;
        ssize_t n = read(*fd, buf, IO_CHUNK);
        if (n > 0) {
            cordon_capture_feed(cap, stream, buf, (size_t)n);
            if (k != NULL && buf == k->buf) {
                uint64_t left = sk->budget == 0 ? (uint64_t)n
                                : sk->budget > sk->forwarded ? sk->budget - sk->forwarded : 0;
                k->off = 0;
                k->len = (uint64_t)n < left ? (size_t)n : (size_t)left;
                sk->forwarded += k->len;
                if (k->nonblock && k->len > 0)
                    sink_write(k);
                if (sink_pending(k))
                    return;   /* held: read on once the sink took it */
            }
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        close_fd(fd);
        return;
    }
}

/* Read whatever is left once the provider returned (its write ends are
 * closed, but a process it leaked may still hold a copy) for DRAIN_MS,
 * and hand the sinks what they still hold until flush_end or the cancel. */
static void drain(struct call *c, struct cordon_capture *cap, struct sinks *sk, uint64_t flush_end,
                  int cancel_fd)
{
    uint64_t read_end = cordon_now_monotonic_ms() + DRAIN_MS;

    for (;;) {
        struct pollfd pfd[5];
        int n = 0, ix[2] = { -1, -1 }, i_cancel = -1, *fds[2] = { &c->out_r, &c->err_r };
        uint64_t now = cordon_now_monotonic_ms(), until = 0;

        for (int s = 0; s < 2; s++) {
            if (sk != NULL && sink_pending(&sk->s[s])) {
                if (now >= flush_end)
                    continue;
                pfd[ix[s] = n++] = (struct pollfd){ .fd = sk->s[s].fd, .events = POLLOUT };
                until = until == 0 || flush_end < until ? flush_end : until;
            } else if (*fds[s] >= 0 && now < read_end) {
                pfd[ix[s] = n++] = (struct pollfd){ .fd = *fds[s], .events = POLLIN };
                until = until == 0 || read_end < until ? read_end : until;
            }
        }
        if (n == 0)
            break;
        if (sk != NULL && cancel_fd >= 0 && flush_end > now)
            pfd[i_cancel = n++] = (struct pollfd){ .fd = cancel_fd, .events = POLLIN };
        if (poll(pfd, (nfds_t)n, (int)(until - now)) < 0 && errno != EINTR)
            break;
        if (i_cancel >= 0 && pfd[i_cancel].revents != 0)
            flush_end = 0;   /* the caller gave up: what the sinks hold is dropped */
        for (int s = 0; s < 2; s++) {
            if (ix[s] >= 0 && pfd[ix[s]].revents != 0 && pfd[ix[s]].events == POLLIN)
                read_stream(cap, fds[s], s + 1, sk);
        }
        if (sk != NULL)
            sinks_write(sk, pfd, ix);
    }
}

static int sinks_new(const struct cordon_drive_opts *o, struct sinks **ret, struct cordon_error *err)
{
    struct sinks *sk;
    int fds[2] = { o->stdout_sink_fd, o->stderr_sink_fd };

    *ret = NULL;
    if (fds[0] < 0 && fds[1] < 0)
        return 0;
    sk = calloc(1, sizeof(*sk));
    if (sk == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "drive: out of memory");
    sk->budget = o->output_budget;
    for (int s = 0; s < 2; s++) {
        int fl = fds[s] >= 0 ? fcntl(fds[s], F_GETFL) : 0;
        if (fl < 0 || (fds[s] >= 0 && (fl & O_ACCMODE) == O_RDONLY)) {
            free(sk);
            return cordon_error_set(err, CORDON_E_INVALID, fl < 0 ? errno : 0,
                                    "%s: not a file descriptor open for writing",
                                    s == 0 ? "stdout_fd" : "stderr_fd");
        }
        sk->s[s].fd = fds[s];
        sk->s[s].nonblock = (fl & O_NONBLOCK) != 0;
    }
    *ret = sk;
    return 0;
}

/* Turn the provider's result JSON into a status, code and signal. */
static int parse_result(const char *provider_id, const char *result,
                        struct cordon_exec_outcome *ret, bool *ret_ended, struct cordon_error *err)
{
    struct cordon_exec_result res;
    struct cordon_error perr;

    if (result == NULL)
        return cordon_error_set(err, CORDON_E_PROVIDER, 0,
                                "%s: exec returned 0 without result_json", provider_id);
    cordon_error_init(&perr);
    if (cordon_exec_result_parse(result, &res, &perr) < 0)
        return cordon_error_set(err, CORDON_E_PROVIDER, 0, "%s: %s", provider_id, perr.message);
    ret->status = res.status;
    ret->exit_code = res.status == CORDON_RUN_EXITED ? res.exit_code : -1;
    /* A folded exit says which signal it may have been, never guesses. */
    ret->signal = res.signal_folded ? res.exit_code - 128 : res.signal;
    if (ret_ended != NULL)
        *ret_ended = res.execution_ended;
    return 0;
}

/* Block asynchronous signals in the provider's thread so that the
 * application's signals keep going to the threads that expect them. */
static int start_thread(struct call *c, pthread_t *ret_thread, struct cordon_error *err)
{
    static const int sync_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS };
    sigset_t all, old;
    int e;

    sigfillset(&all);
    for (size_t i = 0; i < sizeof(sync_signals) / sizeof(sync_signals[0]); i++)
        sigdelset(&all, sync_signals[i]);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    e = pthread_create(ret_thread, NULL, call_main, c);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e != 0)
        return cordon_error_set(err, CORDON_E_PROVIDER, e, "drive: cannot start a thread: %s",
                                strerror(e));
    return 0;
}

int cordon__drive_exec(const struct cordon_drive_opts *opts, struct cordon_exec_outcome *ret,
                      struct cordon_error *err)
{
    struct cordon_capture *cap = NULL;
    struct cordon_exec_outcome out;
    struct cordon_relay *relay = NULL;
    struct sinks *sk = NULL;
    struct call *c = NULL;
    pthread_t thread;
    bool started = false, done = false, fired = false;
    enum cordon_run_status reason = CORDON_RUN_HOST_ERROR;
    uint64_t start, deadline = 0, abandon_at = 0, end;
    int cancel_fd, rc, poll_errno = 0, stdin_fd = -1;
    const char *who;          /* the provider's id, for messages */

    if (ret != NULL) {
        memset(ret, 0, sizeof(*ret));
        ret->exit_code = -1;
    }
    memset(&out, 0, sizeof(out));
    rc = validate(opts, ret, err);
    if (rc < 0)
        return rc;
    who = opts->provider->provider_id != NULL ? opts->provider->provider_id : "provider";
    rc = cordon_capture_new(opts->retention_bytes, opts->output_budget, &cap, err);
    if (rc < 0)
        goto out;
    rc = sinks_new(opts, &sk, err);
    if (rc < 0)
        goto out;
    /* The caller's stdin never reaches the provider, not even a pipe: the
     * provider gets a pipe of ours, whose write end closes when the exec
     * ends, so nothing left inside reads what the caller's fd gives later. */
    if (opts->stdin_fd >= 0 &&
        (rc = cordon_relay_open(opts->stdin_fd, CORDON_RELAY_ALWAYS, &stdin_fd, &relay, err)) < 0)
        goto out;
    rc = call_new(opts, stdin_fd, &c, err);
    if (rc < 0)
        goto out;
    start = cordon_now_monotonic_ms();
    if (opts->timeout_ms > 0)
        deadline = opts->timeout_ms > UINT64_MAX - start ? UINT64_MAX : start + opts->timeout_ms;
    rc = start_thread(c, &thread, err);
    if (rc < 0)
        goto out;
    started = true;
    cancel_fd = opts->cancel_fd;

    while (!done) {
        struct pollfd pfd[6];
        int n = 0, i_out = -1, i_err = -1, i_cancel = -1, i_done, timeout = -1, i_sink[2] = { -1, -1 };
        uint64_t now = cordon_now_monotonic_ms(), until = fired ? abandon_at : deadline;
        int why = -1;
        bool finished;

        if (until != 0)
            timeout = until > now ? (until - now > INT32_MAX ? INT32_MAX : (int)(until - now)) : 0;
        /* A stream whose sink still holds a chunk is not read: backpressure. */
        for (int s = 0; s < 2 && sk != NULL; s++) {
            if (sink_pending(&sk->s[s]))
                pfd[i_sink[s] = n++] = (struct pollfd){ .fd = sk->s[s].fd, .events = POLLOUT };
        }
        if (c->out_r >= 0 && i_sink[0] < 0)
            pfd[i_out = n++] = (struct pollfd){ .fd = c->out_r, .events = POLLIN };
        if (c->err_r >= 0 && i_sink[1] < 0)
            pfd[i_err = n++] = (struct pollfd){ .fd = c->err_r, .events = POLLIN };
        if (cancel_fd >= 0 && !fired)
            pfd[i_cancel = n++] = (struct pollfd){ .fd = cancel_fd, .events = POLLIN };
        pfd[i_done = n++] = (struct pollfd){ .fd = c->done_fd, .events = POLLIN };
        if (poll(pfd, (nfds_t)n, timeout) < 0) {
            if (errno == EINTR)
                continue;
            /* Cannot watch any more: stop the provider, then wait for it. */
            if (poll_errno == 0)
                poll_errno = errno;
            for (int i = 0; i < n; i++)
                pfd[i].revents = 0;
            why = CORDON_RUN_HOST_ERROR;
            if (fired)
                usleep(10000);
        }
        now = cordon_now_monotonic_ms();
        finished = pfd[i_done].revents != 0;
        if (sk != NULL)
            sinks_write(sk, pfd, i_sink);
        if (i_out >= 0 && pfd[i_out].revents != 0)
            read_stream(cap, &c->out_r, 1, sk);
        if (i_err >= 0 && pfd[i_err].revents != 0)
            read_stream(cap, &c->err_r, 2, sk);
        if (why < 0 && cordon_capture_over_budget(cap))
            why = CORDON_RUN_OUTPUT_LIMIT;
        /* A provider that already returned is not cancelled after the fact. */
        if (why < 0 && !finished && i_cancel >= 0 && pfd[i_cancel].revents != 0)
            why = CORDON_RUN_CANCELLED;
        if (why < 0 && !finished && deadline != 0 && now >= deadline)
            why = CORDON_RUN_TIMEOUT;
        if (why >= 0 && !fired) {
            ssize_t w;
            fired = true;
            reason = (enum cordon_run_status)why;
            abandon_at = now + ABANDON_MS;
            do
                w = write(c->cancel_w, "x", 1);
            while (w < 0 && errno == EINTR);
        }
        if (finished) {
            done = true;
        } else if (fired && now >= abandon_at) {
            /* A thread cannot be killed: leave it, with everything it uses. */
            pthread_mutex_lock(&c->lock);
            done = c->finished;
            if (!done)
                c->abandoned = true;
            pthread_mutex_unlock(&c->lock);
            if (!done) {
                pthread_detach(thread);
                started = false;
                c = NULL;
                rc = cordon_error_set(err, CORDON_E_TIMEOUT, 0,
                                      "%s: exec did not return within %d ms after cancel "
                                      "(%s); its thread was left running detached",
                                      who, ABANDON_MS, cordon_run_status_name(reason));
                out.status = CORDON_RUN_HOST_ERROR;
                out.exit_code = -1;
                out.duration_ms = now - start;
                goto take;
            }
        }
    }
    pthread_join(thread, NULL);
    started = false;
    end = cordon_now_monotonic_ms();
    cordon_relay_close(relay);
    relay = NULL;
    /* The provider is done with its write ends: EOF comes once its leftovers go. */
    close_fd(&c->out_w);
    close_fd(&c->err_w);
    /* What the sinks still hold goes until the command's deadline, or
     * for DRAIN_MS when the command was stopped or has none. */
    drain(c, cap, sk, !fired && deadline != 0 ? deadline : end + DRAIN_MS, opts->cancel_fd);
    if (!fired && cordon_capture_over_budget(cap)) {
        /* The overflow was still in the pipes: the output is cut all the same. */
        fired = true;
        reason = CORDON_RUN_OUTPUT_LIMIT;
    }
    out.duration_ms = end - start;
    if (c->rc != 0) {
        int code = c->rc < 0 && c->rc >= CORDON_E_MAX_ ? c->rc : CORDON_E_PROVIDER;
        if (c->perr.message[0] != '\0')
            rc = cordon_error_set(err, code, c->perr.os_errno, "%s", c->perr.message);
        else
            rc = cordon_error_set(err, code, c->perr.os_errno, "%s: exec failed (%s)", who,
                                  cordon_error_name(code));
        out.status = CORDON_RUN_HOST_ERROR;
        out.exit_code = -1;
    } else {
        rc = parse_result(who, c->result, &out, opts->ret_execution_ended, err);
        if (rc == 0 && poll_errno != 0)
            rc = cordon_error_set(err, CORDON_E_IO, poll_errno, "drive: poll: %s",
                                  strerror(poll_errno));
        if (rc < 0) {
            out.status = CORDON_RUN_HOST_ERROR;
            out.exit_code = -1;
        } else if (fired) {
            /* The provider saw our cancel; why we sent it is the status. */
            out.status = reason;
            out.exit_code = -1;
            if (out.signal == 0)
                out.signal = SIGKILL;
        }
    }
take:
    {
        struct cordon_error terr;
        int trc;

        cordon_error_init(&terr);
        trc = cordon_capture_take(cap, 1, &out.out, &terr);
        if (trc == 0)
            trc = cordon_capture_take(cap, 2, &out.err, &terr);
        if (trc < 0 && rc == 0) {
            rc = trc;
            if (err != NULL)
                *err = terr;
            goto out;
        }
    }
    *ret = out;
    memset(&out, 0, sizeof(out));
out:
    if (started) {
        pthread_join(thread, NULL);
    }
    call_free(c);
    cordon_relay_close(relay);   /* the caller's fd is not read after we return */
    cordon_exec_outcome_clear(&out);
    cordon_capture_free(cap);
    free(sk);
    return rc;
}
