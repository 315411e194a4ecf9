/* Unit tests of sdk/relay.c: what may be handed in, and what is relayed. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cordon/sdk/host.h>
#include <cordon/sdk/relay.h>
#include "tests/unit/helpers.h"

/* Everything fd gives until EOF or timeout_ms; returns the byte count, -1
 * when EOF did not come in time. */
static ssize_t read_to_eof(int fd, char *buf, size_t size, int timeout_ms)
{
    uint64_t end = cordon_now_monotonic_ms() + (uint64_t)timeout_ms;
    size_t len = 0;

    for (;;) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        uint64_t now = cordon_now_monotonic_ms();
        ssize_t n;

        if (now >= end || poll(&p, 1, (int)(end - now)) != 1)
            return -1;
        n = read(fd, buf + len, size - len);
        if (n == 0)
            return (ssize_t)len;
        if (n < 0 && errno != EINTR)
            return -1;
        if (n > 0)
            len += (size_t)n;
        if (len == size)
            return (ssize_t)len;
    }
}

Test(relay, only_anonymous_pipes_and_dev_null_pass)
{
    char *dir = test_mkdtemp(), fifo[4200];
    int p[2], sv[2], null_fd, zero_fd, dir_fd, fifo_fd;

    cr_assert_not_null(dir);
    cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    zero_fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    fifo_fd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    cr_assert(null_fd >= 0 && zero_fd >= 0 && dir_fd >= 0 && fifo_fd >= 0);

    cr_expect(cordon_fd_is_pipe_or_null(p[0]), "an anonymous pipe");
    cr_expect(cordon_fd_is_pipe_or_null(null_fd), "/dev/null");
    cr_expect_not(cordon_fd_is_pipe_or_null(zero_fd), "/dev/zero is another device");
    cr_expect_not(cordon_fd_is_pipe_or_null(dir_fd), "a directory");
    cr_expect_not(cordon_fd_is_pipe_or_null(fifo_fd), "a named FIFO is a path on the host");
    cr_expect_not(cordon_fd_is_pipe_or_null(sv[0]), "a socket");
    cr_expect_not(cordon_fd_is_pipe_or_null(-1), "no fd");
    close(p[0]), close(p[1]), close(sv[0]), close(sv[1]);
    close(null_fd), close(zero_fd), close(dir_fd), close(fifo_fd);
    test_rmtree(dir);
    free(dir);
}

Test(relay, a_pipe_is_handed_in_as_it_is)
{
    struct cordon_relay *rl = (struct cordon_relay *)1;
    struct cordon_error err;
    int p[2], fd = -1;

    cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
    cordon_error_init(&err);
    cr_assert_eq(cordon_relay_open(p[0], 0, &fd, &rl, &err), 0, "%s", err.message);
    cr_expect_eq(fd, p[0]);
    cr_expect_null(rl);
    cordon_relay_close(rl);
    cr_expect_neq(fcntl(p[0], F_GETFD), -1, "the caller's pipe was closed");
    close(p[0]), close(p[1]);
}

Test(relay, a_directory_becomes_an_empty_pipe)
{
    char *dir = test_mkdtemp(), buf[64];
    struct cordon_relay *rl = NULL;
    struct cordon_error err;
    int dfd, fd = -1;

    cr_assert_not_null(dir);
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cr_assert_geq(dfd, 0);
    cordon_error_init(&err);
    cr_assert_eq(cordon_relay_open(dfd, 0, &fd, &rl, &err), 0, "%s", err.message);
    cr_assert_not_null(rl);
    cr_expect_neq(fd, dfd);
    cr_expect(cordon_fd_is_pipe_or_null(fd), "the fd to hand in is not a pipe");
    cr_expect_eq(read_to_eof(fd, buf, sizeof(buf), 2000), 0, "a directory gave bytes or no EOF");
    cordon_relay_close(rl);
    cr_expect_neq(fcntl(dfd, F_GETFD), -1, "the caller's fd was closed");
    close(dfd);
    test_rmtree(dir);
    free(dir);
}

Test(relay, a_file_crosses_byte_for_byte)
{
    char *dir = test_mkdtemp(), path[4200], *data = malloc(300000), *got = malloc(300001);
    struct cordon_relay *rl = NULL;
    struct cordon_error err;
    int ffd, fd = -1;

    cr_assert(dir != NULL && data != NULL && got != NULL);
    for (size_t i = 0; i < 300000; i++)
        data[i] = (char)(i * 7 + i / 251);
    snprintf(path, sizeof(path), "%s/in", dir);
    cr_assert_eq(test_write_file(path, data, 300000), 0);
    ffd = open(path, O_RDONLY | O_CLOEXEC);
    cr_assert_geq(ffd, 0);
    cordon_error_init(&err);
    cr_assert_eq(cordon_relay_open(ffd, 0, &fd, &rl, &err), 0, "%s", err.message);
    /* More than a pipe holds: the relay waits for the reader, then ends. */
    cr_assert_eq(read_to_eof(fd, got, 300001, 5000), 300000);
    cr_expect_eq(memcmp(got, data, 300000), 0);
    cordon_relay_close(rl);
    close(ffd);
    test_rmtree(dir);
    free(dir);
    free(data);
    free(got);
}

/* A terminal: relayed while it runs, never read once closed, and closing
 * does not wait for a keystroke. */
Test(relay, a_terminal_is_relayed_and_left_alone_after_close)
{
    struct cordon_relay *rl = NULL;
    struct cordon_error err;
    char buf[64];
    uint64_t start;
    ssize_t n;
    int m, s, fd = -1;

    m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    cr_assert_geq(m, 0);
    cr_assert(grantpt(m) == 0 && unlockpt(m) == 0);
    s = open(ptsname(m), O_RDWR | O_NOCTTY | O_CLOEXEC);
    cr_assert_geq(s, 0);
    cordon_error_init(&err);
    cr_assert_eq(cordon_relay_open(s, 0, &fd, &rl, &err), 0, "%s", err.message);
    cr_expect(cordon_fd_is_pipe_or_null(fd));
    cr_assert_eq(write(m, "during\n", 7), 7);
    n = read(fd, buf, sizeof(buf));
    cr_expect_eq(n, 7, "the line typed during the relay did not cross");
    start = cordon_now_monotonic_ms();
    cordon_relay_close(rl);
    cr_expect_lt(cordon_now_monotonic_ms() - start, 1000, "close waited for the terminal");
    cr_assert_eq(write(m, "after\n", 6), 6);
    {
        struct pollfd p = { .fd = s, .events = POLLIN };

        cr_assert_eq(poll(&p, 1, 2000), 1, "the line typed after close was taken");
    }
    n = read(s, buf, sizeof(buf));
    cr_expect_eq(n, 6);
    cr_expect_eq(fcntl(s, F_GETFL) & O_NONBLOCK, 0, "the caller's terminal became non-blocking");
    close(s);
    close(m);
}

/* CORDON_RELAY_ALWAYS: a caller's pipe is relayed too, and whoever holds
 * the relayed end reads EOF at close while the caller's writer stays open. */
Test(relay, always_relays_a_pipe_and_ends_at_close)
{
    struct cordon_relay *rl = NULL;
    struct cordon_error err;
    struct stat a, b;
    char buf[64];
    int p[2], fd = -1, held;

    cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
    cordon_error_init(&err);
    cr_assert_eq(cordon_relay_open(p[0], CORDON_RELAY_ALWAYS, &fd, &rl, &err), 0, "%s",
                 err.message);
    cr_assert_not_null(rl);
    cr_assert(fstat(fd, &a) == 0 && fstat(p[0], &b) == 0);
    cr_expect_neq(a.st_ino, b.st_ino, "the caller's own pipe was handed in");
    held = dup(fd);   /* what a process left inside would keep */
    cr_assert_eq(write(p[1], "abc", 3), 3);
    cr_expect_eq(read(held, buf, sizeof(buf)), 3);
    cordon_relay_close(rl);
    cr_assert_eq(write(p[1], "later", 5), 5);
    cr_expect_eq(read_to_eof(held, buf, sizeof(buf), 2000), 0,
                 "the relayed end gave bytes written after close");
    close(held);
    close(p[0]), close(p[1]);
}

/* The three fds of one command: the host's, /dev/null where it passed none,
 * a relay for a stdin that must not be handed in. */
Test(relay, exec_stdio_hands_in_only_what_may_go_in)
{
    struct cordon_exec_io io = { .struct_size = sizeof(io), .stdin_fd = -1, .stdout_fd = -1,
                                 .stderr_fd = -1, .cancel_fd = -1 };
    struct cordon_exec_stdio s = CORDON_EXEC_STDIO_INIT;
    struct cordon_error err;
    int p[2], dir;

    cordon_error_init(&err);
    /* Nothing passed: stdout and stderr discarded, no stdin unless asked. */
    cr_assert_eq(cordon_exec_stdio_open(&io, 0, &s, &err), 0, "%s", err.message);
    cr_expect_eq(s.stdin_fd, -1);
    cr_expect(s.stdout_fd >= 0 && s.stdout_fd == s.stderr_fd && s.stdout_fd == s.null_out);
    cr_expect(cordon_fd_is_pipe_or_null(s.stdout_fd), "stdout is not /dev/null");
    cordon_exec_stdio_close(&s);
    cr_expect(s.null_out == -1 && s.stdout_fd == -1 && s.relay == NULL);
    cordon_exec_stdio_close(&s); /* a second close is a no-op */
    cr_assert_eq(cordon_exec_stdio_open(&io, CORDON_EXEC_STDIO_NULL_STDIN, &s, &err), 0);
    cr_expect(s.stdin_fd >= 0 && s.stdin_fd == s.null_in);
    cordon_exec_stdio_close(&s);

    /* The host's pipes go in as they are; nothing of ours is opened. */
    cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
    io.stdin_fd = p[0];
    io.stdout_fd = p[1];
    io.stderr_fd = 2;
    cr_assert_eq(cordon_exec_stdio_open(&io, CORDON_EXEC_STDIO_NULL_STDIN, &s, &err), 0);
    cr_expect_eq(s.stdin_fd, p[0]);
    cr_expect_eq(s.stdout_fd, p[1]);
    cr_expect_eq(s.stderr_fd, 2);
    cr_expect(s.null_in == -1 && s.null_out == -1 && s.relay == NULL);
    cordon_exec_stdio_close(&s);
    cr_expect_eq(fcntl(p[0], F_GETFD), FD_CLOEXEC, "close closed the host's fd");

    /* A directory as stdin is relayed: the command gets a fresh pipe. */
    dir = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cr_assert_geq(dir, 0);
    io.stdin_fd = dir;
    cr_assert_eq(cordon_exec_stdio_open(&io, 0, &s, &err), 0, "%s", err.message);
    cr_expect_neq(s.stdin_fd, dir);
    cr_expect_not_null(s.relay);
    cr_expect(cordon_fd_is_pipe_or_null(s.stdin_fd));
    cordon_exec_stdio_close(&s);
    close(dir);
    close(p[0]);
    close(p[1]);

    /* An io too small is refused, and leaves nothing open. */
    io.struct_size = 4;
    s.null_out = 12345;
    cr_expect_eq(cordon_exec_stdio_open(&io, 0, &s, &err), CORDON_E_INVALID);
    cr_expect(s.null_out == -1 && s.relay == NULL);
}
