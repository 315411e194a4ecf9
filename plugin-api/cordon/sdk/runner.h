/*
 * sdk: a bounded process runner.
 *
 * argv only (never a shell), a new process group, stdin from /dev/null,
 * given bytes or a given fd, a timeout that sends SIGTERM to the whole
 * group then SIGKILL after a grace period, cancellation through an fd,
 * and either pass-through stdio (the child writes straight into fds the
 * caller gives) or bounded capture (struct cordon_capture). The child gets
 * fds 0, 1 and 2, and the fds of opts.pass_fds at their own numbers;
 * every other fd is closed before execve. Every child is reaped before the
 * call returns, and when the leader ends every other member of its process
 * group is killed and waited for until none is left (at most 1 s: a member
 * counts until whoever it was reparented to reaps it). A process that left
 * the group (setsid, setpgid) is not a member and is not killed.
 */
#ifndef CORDON_SDK_RUNNER_H
#define CORDON_SDK_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cordon/provider.h>
#include <cordon/sdk/capture.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Called in the child after stdio is in place and every other fd is
 * closed, right before execve. Must be async-signal-safe (raw syscalls,
 * no malloc, no libc wrapper that acts on every thread such as setuid):
 * the child is made with vfork semantics, so until execve it runs on the
 * caller's memory and must not write anything the caller reads. Returns
 * 0, or an errno value: the child then reports it to the parent and
 * _exits, and the run fails with CORDON_E_PROVIDER. */
typedef int (*cordon_runner_child_fn)(void *arg);

/* Put on a child_setup function and on every function of the provider's it
 * calls. Under AddressSanitizer it leaves them uninstrumented: until
 * execve they run on a stack of the runner's own, in memory shared with
 * the caller, where instrumented frames would leave stale poison in the
 * caller's shadow memory and where a limit the child has just set (a
 * RLIMIT_DATA, say) can refuse the sanitizer's own allocations. Empty in
 * other builds. */
#if defined(__SANITIZE_ADDRESS__)
#define CORDON_RUNNER_CHILD __attribute__((no_sanitize_address))
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CORDON_RUNNER_CHILD __attribute__((no_sanitize_address))
#endif
#endif
#ifndef CORDON_RUNNER_CHILD
#define CORDON_RUNNER_CHILD
#endif

struct cordon_runner_opts {
    uint32_t struct_size;          /* sizeof(struct cordon_runner_opts) */
    const char *const *argv;       /* required, argv[0] non-empty; without '/', searched in PATH of envp */
    const char *const *envp;       /* NULL: empty environment */
    const char *cwd;               /* NULL: inherit */
    int stdin_fd;                  /* >= 0: borrowed; -1: stdin_data, or /dev/null when that is NULL */
    const void *stdin_data;        /* borrowed; written by the runner */
    size_t stdin_len;
    int stdout_fd;                 /* >= 0: pass-through (borrowed); -1: capture */
    int stderr_fd;                 /* >= 0: pass-through (borrowed); -1: capture */
    size_t retention_bytes;        /* per captured stream */
    uint64_t output_budget;        /* combined, captured streams only; 0 = none */
    uint64_t timeout_ms;           /* 0 = none */
    uint64_t grace_ms;             /* SIGTERM to SIGKILL; 0 = SIGKILL at once */
    int cancel_fd;                 /* -1 = none; readable: kill the group, CORDON_RUN_CANCELLED */
    cordon_runner_child_fn child_setup; /* optional */
    void *child_setup_arg;
    /* Appended; a caller built before it passes a smaller struct_size and
     * gets false. true: the child is made with fork, on its own copy of the
     * caller's memory, for a child_setup that writes memory the caller
     * uses or changes what the memory carries (PR_SET_DUMPABLE, the argv
     * area). false: vfork semantics (faster: no page tables copied). */
    bool fork_child;
    /* Appended: fds the child inherits at the same numbers, close-on-exec
     * cleared in the child only (a seccomp program for `bwrap --seccomp
     * FD`, say). Each >= 3, open, no number twice, at most
     * CORDON_RUNNER_PASS_FDS_MAX; borrowed. Every other fd above 2 is
     * closed in the child, as before. */
    const int *pass_fds;
    size_t n_pass_fds;
};

#define CORDON_RUNNER_PASS_FDS_MAX 64

/* Initialise opts with every fd -1 and nothing set. */
CORDON_EXTERN void cordon_runner_opts_init(struct cordon_runner_opts *opts);

/* Run to completion. Returns 0 when the process ran (whatever its status:
 * read ret->status), a negative code when it could not be started
 * (CORDON_E_NOT_FOUND for a missing program). ret is cleared first;
 * release it with cordon_exec_outcome_clear. */
CORDON_EXTERN int cordon_runner_run(const struct cordon_runner_opts *opts,
                                    struct cordon_exec_outcome *ret, struct cordon_error *err);

#ifdef __cplusplus
}
#endif
#endif
