/*
 * cordon exec's output as it comes: the library writes each stream into a
 * pipe of ours, and a thread passes it on to stdout and stderr through
 * cli_program_output (escaped on a terminal), a UTF-8 sequence that a
 * read cut in two held back until its end arrives. The pipes are the
 * backpressure: a terminal that does not take the output stops the
 * reading from the sandbox, not the command's timeout. When stdout or
 * stderr is gone (a closed pipe), the thread cancels the exec as a
 * SIGTERM to cordon would, and reads on to let the exec end.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cordon/text.h>

#include "core/cli/cli.h"

struct cli_stream {
    int r[2], w[2];   /* stdout, stderr pipes: we read r, the library writes w */
    pthread_t thread;
    bool started;
};

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static void *pump(void *arg)
{
    struct cli_stream *s = arg;
    char buf[2][4096 + 4];
    size_t held[2] = { 0, 0 };
    bool gone = false;

    while (s->r[0] >= 0 || s->r[1] >= 0) {
        struct pollfd pfd[2];
        int n = 0, ix[2] = { -1, -1 };

        for (int i = 0; i < 2; i++) {
            if (s->r[i] >= 0)
                pfd[ix[i] = n++] = (struct pollfd){ .fd = s->r[i], .events = POLLIN };
        }
        if (poll(pfd, (nfds_t)n, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < 2; i++) {
            FILE *f = i == 0 ? stdout : stderr;
            ssize_t got;
            size_t len, ok;

            if (ix[i] < 0 || pfd[ix[i]].revents == 0)
                continue;
            got = read(s->r[i], buf[i] + held[i], 4096);
            if (got < 0 && errno == EINTR)
                continue;
            len = held[i] + (got > 0 ? (size_t)got : 0);
            /* At the end, a cut sequence goes as it is (escaped on a terminal). */
            ok = got > 0 ? cordon_text_utf8_end(buf[i], len) : len;
            if (ok == 0 && len >= 4)
                ok = len;   /* not a sequence that more bytes would complete */
            if (!gone && ok > 0) {
                clearerr(f);
                cli_program_output(f, buf[i], ok);
                if (ferror(f)) {
                    gone = true;
                    kill(getpid(), SIGTERM);   /* to the process: cli_cancel_fd's handler */
                }
            }
            held[i] = len - ok;
            memmove(buf[i], buf[i] + ok, held[i]);
            if (got <= 0)
                close_fd(&s->r[i]);
        }
    }
    return NULL;
}

int cli_stream_start(struct cli_stream **ret, int *ret_stdout_fd, int *ret_stderr_fd)
{
    struct cli_stream *s = calloc(1, sizeof(*s));
    sigset_t all, old;
    int p[2];

    *ret = NULL;
    if (s == NULL)
        return -1;
    s->r[0] = s->r[1] = s->w[0] = s->w[1] = -1;
    for (int i = 0; i < 2; i++) {
        if (pipe2(p, O_CLOEXEC) < 0)
            goto fail;
        s->r[i] = p[0];
        s->w[i] = p[1];
    }
    /* A closed stdout is seen as a write error, not a SIGPIPE that ends cordon. */
    signal(SIGPIPE, SIG_IGN);
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    s->started = pthread_create(&s->thread, NULL, pump, s) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!s->started)
        goto fail;
    *ret_stdout_fd = s->w[0];
    *ret_stderr_fd = s->w[1];
    *ret = s;
    return 0;
fail:
    cli_stream_end(s);
    return -1;
}

void cli_stream_end(struct cli_stream *s)
{
    if (s == NULL)
        return;
    close_fd(&s->w[0]);
    close_fd(&s->w[1]);
    if (s->started)
        pthread_join(s->thread, NULL);
    close_fd(&s->r[0]);
    close_fd(&s->r[1]);
    free(s);
}
