/*
 * sdk: the stdin relay (see cordon/sdk/relay.h).
 *
 * One thread per relay copies the source into the write end of a fresh
 * pipe; the sandbox gets only the read end. The thread waits in poll on
 * the source (or the pipe, when it holds bytes the sandbox has not taken)
 * and on a stop eventfd, so cordon_relay_close always ends it at once.
 * Reads never block: a terminal or FIFO is read through a non-blocking
 * description of its own (reopened through /proc/self/fd, which leaves the
 * caller's description, shared with the user's shell, as it was), a socket
 * with MSG_DONTWAIT; files and directories do not block by nature.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cordon/sdk/relay.h>

#define RELAY_CHUNK 65536

struct cordon_relay {
    pthread_t thread;
    bool started;
    int src;        /* borrowed from the caller */
    int own_src;    /* our non-blocking reopening of src, or -1 */
    bool sock;      /* src is a socket: recv with MSG_DONTWAIT */
    int r, w;       /* the pipe: r for the sandbox, w for the thread */
    int stop_fd;    /* eventfd: readable once close began */
    char buf[RELAY_CHUNK];
};

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

bool cordon_fd_is_pipe_or_null(int fd)
{
    char path[64], link[64];
    struct stat st;
    ssize_t n;

    if (fd < 0 || fstat(fd, &st) != 0)
        return false;
    if (S_ISCHR(st.st_mode))
        return st.st_rdev == makedev(1, 3);   /* /dev/null on Linux */
    if (!S_ISFIFO(st.st_mode))
        return false;
    /* A named FIFO is a path in someone's filesystem; only pipefs is anonymous. */
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    n = readlink(path, link, sizeof(link) - 1);
    if (n < 0)
        return false;
    link[n] = '\0';
    return strncmp(link, "pipe:[", 6) == 0;
}

/* 0 at end of input (or a source that cannot be read, a directory), -1
 * with EAGAIN when nothing is there after all, else the byte count. */
static ssize_t source_read(struct cordon_relay *rl)
{
    ssize_t n;

    do {
        if (rl->sock)
            n = recv(rl->src, rl->buf, sizeof(rl->buf), MSG_DONTWAIT);
        else
            n = read(rl->own_src >= 0 ? rl->own_src : rl->src, rl->buf, sizeof(rl->buf));
    } while (n < 0 && errno == EINTR);
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
        return 0;   /* EISDIR, EIO (a hung-up terminal)...: the sandbox reads EOF */
    return n;
}

static void *relay_main(void *arg)
{
    struct cordon_relay *rl = arg;
    size_t len = 0, off = 0;

    for (;;) {
        struct pollfd pfd[2];
        int src = rl->own_src >= 0 ? rl->own_src : rl->src;

        pfd[0] = (struct pollfd){ .fd = rl->stop_fd, .events = POLLIN };
        pfd[1] = len == off ? (struct pollfd){ .fd = src, .events = POLLIN }
                            : (struct pollfd){ .fd = rl->w, .events = POLLOUT };
        if (poll(pfd, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (pfd[0].revents != 0)
            break;
        if (pfd[1].revents == 0)
            continue;
        if (len == off) {
            ssize_t n = source_read(rl);

            if (n == 0)
                break;
            if (n > 0)
                len = (size_t)n, off = 0;
            continue;
        }
        {
            ssize_t n = write(rl->w, rl->buf + off, len - off);

            if (n > 0)
                off += (size_t)n;
            else if (n < 0 && errno != EINTR && errno != EAGAIN)
                break;   /* EPIPE: nobody inside reads any more */
        }
    }
    /* End of input, or told to stop: the sandbox reads EOF. */
    close_fd(&rl->w);
    return NULL;
}

/* A non-blocking description of src for a terminal or FIFO; -1 if none. */
static int reopen_nonblocking(int src, const struct stat *st)
{
    char path[64];

    if (!S_ISCHR(st->st_mode) && !S_ISFIFO(st->st_mode))
        return -1;
    snprintf(path, sizeof(path), "/proc/self/fd/%d", src);
    return open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
}

int cordon_relay_open(int src_fd, uint32_t flags, int *ret_fd, struct cordon_relay **ret,
                      struct cordon_error *err)
{
    struct cordon_relay *rl = NULL;
    sigset_t all, old;
    struct stat st;
    int p[2], e, rc = 0;

    if (ret_fd == NULL || ret == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "relay: ret_fd and ret are required");
    if (src_fd < 0 || fstat(src_fd, &st) != 0)
        return cordon_error_set(err, CORDON_E_INVALID, src_fd < 0 ? 0 : errno,
                                "relay: src_fd %d is not an open descriptor", src_fd);
    if ((flags & CORDON_RELAY_ALWAYS) == 0 && cordon_fd_is_pipe_or_null(src_fd)) {
        *ret_fd = src_fd;
        *ret = NULL;
        return 0;
    }
    rl = calloc(1, sizeof(*rl));
    if (rl == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "relay: out of memory");
    rl->src = src_fd;
    rl->sock = S_ISSOCK(st.st_mode);
    rl->own_src = reopen_nonblocking(src_fd, &st);
    rl->r = rl->w = -1;
    rl->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (rl->stop_fd < 0 || pipe2(p, O_CLOEXEC) < 0) {
        rc = cordon_error_set(err, CORDON_E_IO, errno, "relay: cannot create the pipe: %s",
                              strerror(errno));
        goto out;
    }
    rl->r = p[0], rl->w = p[1];
    /* Only the thread's write end is non-blocking: the sandbox reads as it likes. */
    if (fcntl(rl->w, F_SETFL, O_NONBLOCK) < 0) {
        rc = cordon_error_set(err, CORDON_E_IO, errno, "relay: fcntl: %s", strerror(errno));
        goto out;
    }
    /* Every asynchronous signal stays with the application's threads, and
     * a write to a pipe nobody reads any more is EPIPE, not SIGPIPE. */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    e = pthread_create(&rl->thread, NULL, relay_main, rl);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e != 0) {
        rc = cordon_error_set(err, CORDON_E_IO, e, "relay: cannot start a thread: %s",
                              strerror(e));
        goto out;
    }
    rl->started = true;
    *ret_fd = rl->r;
    *ret = rl;
    rl = NULL;
out:
    cordon_relay_close(rl);
    return rc;
}

void cordon_relay_close(struct cordon_relay *rl)
{
    uint64_t one = 1;

    if (rl == NULL)
        return;
    if (rl->started) {
        if (write(rl->stop_fd, &one, sizeof(one)) < 0) {
            /* an eventfd write only fails on counter overflow: cannot happen */
        }
        pthread_join(rl->thread, NULL);
    }
    close_fd(&rl->w);
    close_fd(&rl->r);
    close_fd(&rl->own_src);
    close_fd(&rl->stop_fd);
    free(rl);
}

void cordon_exec_stdio_close(struct cordon_exec_stdio *s)
{
    if (s == NULL)
        return;
    cordon_relay_close(s->relay);
    if (s->null_in >= 0)
        close(s->null_in);
    if (s->null_out >= 0)
        close(s->null_out);
    *s = (struct cordon_exec_stdio){ .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1,
                                     .null_in = -1, .null_out = -1 };
}

int cordon_exec_stdio_open(const struct cordon_exec_io *io, uint32_t flags,
                           struct cordon_exec_stdio *ret, struct cordon_error *err)
{
    struct cordon_exec_stdio s = { .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1,
                                   .null_in = -1, .null_out = -1 };
    int r = 0;

    if (ret == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "exec: stdio result required");
    *ret = s;
    if (io == NULL || io->struct_size < CORDON_EXEC_IO_V1_0_SIZE)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "exec: io (struct_size >= %zu) required",
                                (size_t)CORDON_EXEC_IO_V1_0_SIZE);
    /* A host that passes no descriptor gets the stream discarded. */
    if ((io->stdout_fd < 0 || io->stderr_fd < 0) &&
        (s.null_out = open("/dev/null", O_WRONLY | O_CLOEXEC)) < 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "exec: /dev/null: %s", strerror(errno));
        goto out;
    }
    /* A terminal or a directory as stdin is relayed, never handed over:
     * an fd inside is a path out (/proc/self/fd/0/..). */
    if (io->stdin_fd >= 0)
        r = cordon_relay_open(io->stdin_fd, 0, &s.stdin_fd, &s.relay, err);
    else if ((flags & CORDON_EXEC_STDIO_NULL_STDIN) &&
             (s.null_in = s.stdin_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
        r = cordon_error_set(err, CORDON_E_IO, errno, "exec: /dev/null: %s", strerror(errno));
    if (r < 0)
        goto out;
    s.stdout_fd = io->stdout_fd >= 0 ? io->stdout_fd : s.null_out;
    s.stderr_fd = io->stderr_fd >= 0 ? io->stderr_fd : s.null_out;
    *ret = s;
    return 0;
out:
    cordon_exec_stdio_close(&s);
    return r;
}
