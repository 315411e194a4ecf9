/*
 * sdk: stdin relay. No host file descriptor may enter a sandbox: an fd
 * inside is a path out. A directory given as stdin lets the code inside
 * open /proc/self/fd/0/../.. and reach host files; a terminal lets it turn
 * echo off and, from a detached child, read what the user types after the
 * exec returned. Only an anonymous pipe (readlink of /proc/self/fd/N is
 * "pipe:[...]") or /dev/null may be handed in as it is; anything else is
 * copied through a fresh pipe by a relay thread, and the relay ends (its
 * write end closed, the source no longer read) when the caller closes it,
 * right after the process ended.
 */
#ifndef CORDON_SDK_RELAY_H
#define CORDON_SDK_RELAY_H

#include <stdbool.h>
#include <stdint.h>
#include <cordon/provider.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Relay even an anonymous pipe: the host uses it for a caller's stdin,
 * which may be a pipe that the caller writes more into after the exec. */
#define CORDON_RELAY_ALWAYS 0x1u

struct cordon_relay;

/* True when fd is an anonymous pipe or the character device /dev/null. */
CORDON_EXTERN bool cordon_fd_is_pipe_or_null(int fd);

/* Start relaying src_fd (borrowed; read only while the relay runs and only
 * after poll says it is readable, so that a terminal is never read from
 * once the relay is closed). *ret_fd is the fd to hand the sandbox: src_fd
 * itself when it is an anonymous pipe or /dev/null and flags lacks
 * CORDON_RELAY_ALWAYS (then *ret is NULL), else the read end of a fresh
 * pipe owned by the relay. Both stay valid until cordon_relay_close. */
CORDON_EXTERN int cordon_relay_open(int src_fd, uint32_t flags, int *ret_fd,
                                    struct cordon_relay **ret, struct cordon_error *err);

/* Stop the relay, wait for its thread and close its pipe; NULL is a no-op.
 * Returns at once: the thread never blocks on anything but poll. */
CORDON_EXTERN void cordon_relay_close(struct cordon_relay *relay);

/*
 * The three fds one command gets from the host's struct cordon_exec_io:
 * stdin relayed as above (or /dev/null when the host passed none and
 * CORDON_EXEC_STDIO_NULL_STDIN asks for it; else -1), stdout and stderr the
 * host's own or /dev/null when it passed none. Caller-owned: open, hand
 * the three to the command, close once it ended.
 */
struct cordon_exec_stdio {
    int stdin_fd, stdout_fd, stderr_fd;   /* for the command; valid until close */
    int null_in, null_out;                /* owned: /dev/null, or -1 */
    struct cordon_relay *relay;           /* owned: the stdin relay, or NULL */
};

/* A struct cordon_exec_stdio that holds nothing: close is a no-op. */
#define CORDON_EXEC_STDIO_INIT { -1, -1, -1, -1, -1, NULL }

/* Give stdin /dev/null when the host passed none (a mechanism that needs
 * an fd 0 to hand over). */
#define CORDON_EXEC_STDIO_NULL_STDIN 0x1u

/* Fill *ret from io (borrowed; its fds stay the host's): CORDON_E_IO when
 * /dev/null cannot be opened, another error from cordon_relay_open. On
 * failure nothing is left open and *ret is as after close. */
CORDON_EXTERN int cordon_exec_stdio_open(const struct cordon_exec_io *io, uint32_t flags,
                                         struct cordon_exec_stdio *ret,
                                         struct cordon_error *err);

/* End the relay (the command ended: so does its stdin) and close what s
 * owns; every fd is -1 afterwards, so a second close is a no-op. */
CORDON_EXTERN void cordon_exec_stdio_close(struct cordon_exec_stdio *s);

#ifdef __cplusplus
}
#endif
#endif
