/*
 * sdk: the host's side of a sandbox's resident agent (`cordon-init
 * --deadline-ms N --agent`, the init of a container execution). The agent
 * holds a SOCK_SEQPACKET socketpair that nothing inside the sandbox can
 * reach; the host takes its own copy of one end with pidfd_getfd (which
 * needs ptrace rights over the agent: root on the host has them, code in
 * the sandbox does not) and sends one message per command: argv, env,
 * cwd, and the command's stdio descriptors themselves (SCM_RIGHTS, no
 * copy), plus a reply socket on which the agent reports how the command
 * ended. The design is in decisions.md ("The resident agent"), installed
 * with the provider docs in share/doc/cordon.
 */
#ifndef CORDON_SDK_AGENT_H
#define CORDON_SDK_AGENT_H

#include <stdbool.h>
#include <stdint.h>
#include <cordon/provider.h>
#include <cordon/sdk/capture.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The host's copy of the agent's channel, taken from pidfd (borrowed: a
 * pidfd of the agent, which the caller has checked is the execution's
 * init). *ret_fd is close-on-exec, owned by the caller (close(2)). Waits
 * up to 2 s for a process that has not yet become the agent (a runtime's
 * init before its execve of cordon-init).
 * CORDON_E_UNAVAILABLE when the process holds no agent channel (started
 * without --agent, or not cordon-init at all). */
CORDON_EXTERN int cordon_agent_open(int pidfd, int *ret_fd, struct cordon_error *err);

/* One command for the agent; every pointer and fd is borrowed. */
struct cordon_agent_cmd {
    const char *const *argv;     /* NULL-terminated, argv[0] non-empty; searched in envp's PATH */
    const char *const *envp;     /* "NAME=VALUE", NULL-terminated; NULL: empty */
    const char *cwd;             /* absolute, inside the sandbox */
    int stdin_fd;                /* all three >= 0: handed to the command as they are */
    int stdout_fd;
    int stderr_fd;
};

/* True when cmd fits in one agent message (at most 256 arguments, 512
 * variables and 160 KiB in all); when it does not, use the mechanism's
 * own exec. */
CORDON_EXTERN bool cordon_agent_fits(const struct cordon_agent_cmd *cmd);

/*
 * Run cmd through the agent (agent_fd from cordon_agent_open) and wait for
 * its end. pidfd: the agent's (borrowed), watched so that its death is
 * seen at once. cancel_fd (-1: none) readable, or timeout_ms (0: none)
 * passed: the agent kills the command's process group, and this returns
 * once the agent reports the group gone (a few seconds at most), with
 * ret->status CORDON_RUN_CANCELLED or CORDON_RUN_TIMEOUT; the sandbox is
 * then free of the command and ready for the next. Otherwise
 * CORDON_RUN_EXITED or CORDON_RUN_SIGNALED as the command ended, also
 * reported once its group is gone (the command's exit 127 is "not found",
 * 126 "cannot execute", as a shell says). Errors: CORDON_E_TIMEOUT (the
 * agent did not report the cancelled group gone in time; ret->status says
 * which cancel it was, and the provider ends the sandbox to be sure),
 * CORDON_E_LIMIT (does not fit, see cordon_agent_fits; or the agent runs
 * too many commands), CORDON_E_INVALID (the agent refused the message),
 * CORDON_E_UNAVAILABLE (the agent died: the sandbox has ended with it),
 * CORDON_E_PROVIDER naming the working directory when the command could
 * not enter cwd, or saying that the agent dropped the command without a
 * reply while it still runs (it could not take the request; the sandbox
 * is whole, so this is not a death).
 * ret is cleared first; release it with cordon_exec_outcome_clear.
 */
CORDON_EXTERN int cordon_agent_run(int agent_fd, int pidfd, const struct cordon_agent_cmd *cmd,
                                   int cancel_fd, uint64_t timeout_ms,
                                   struct cordon_exec_outcome *ret, struct cordon_error *err);

/*
 * Move the sandbox's deadline: the agent (agent_fd from cordon_agent_open;
 * pidfd its pidfd, borrowed) ends the sandbox ms milliseconds (1 to a
 * year) after it reads the message, sooner or later than before. 0 once the
 * agent confirmed it. Errors leave the deadline as it was:
 * CORDON_E_TIMEOUT when it had already passed (the sandbox is ending) or no
 * reply came within 5 s; CORDON_E_UNAVAILABLE when the agent died;
 * CORDON_E_UNSUPPORTED when the agent predates the message (it dropped it).
 */
CORDON_EXTERN int cordon_agent_set_deadline(int agent_fd, int pidfd, uint64_t ms,
                                            struct cordon_error *err);

/*
 * The provider's extend (provider.h, ABI 1.3) for an execution whose init
 * is the resident agent (pidfd: the init, pinned and checked by the caller;
 * borrowed): the state's deadline rewritten (cordon_spec_state_set_deadline,
 * nothing changes yet), then the agent's clock moved to end at expires_at_ms
 * (wall-clock Unix ms), then *ret_state_json (host->alloc) the new state.
 * CORDON_E_UNSUPPORTED when this process cannot take the agent's channel;
 * otherwise the errors of cordon_agent_set_deadline. The state must read
 * back as cordon_spec_state_add wrote it.
 */
CORDON_EXTERN int cordon_agent_extend(const struct cordon_host_v1 *host, int pidfd, const char *state_json,
                                      uint64_t expires_at_ms, char **ret_state_json,
                                      struct cordon_error *err);

#ifdef __cplusplus
}
#endif
#endif
