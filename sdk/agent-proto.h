/*
 * The wire format between cordon-init's agent mode (inside/cordon-init.c) and
 * the host's client (sdk/agent.c): one home for both sides. Not installed:
 * providers use <cordon/sdk/agent.h>. See docs/decisions.md, "The resident
 * agent".
 *
 * The agent holds both ends of a SOCK_SEQPACKET socketpair at fixed fds:
 * it reads requests from CORDON_AGENT_FD_SERVE; the host takes its own copy
 * of CORDON_AGENT_FD_HOST with pidfd_getfd. A request is one message:
 *
 *   struct cordon_agent_request, then exactly argc + envc + 1 NUL-terminated
 *   strings: cwd (absolute), argv[0..argc), env[0..envc) ("NAME=VALUE")
 *
 * with one SCM_RIGHTS carrying exactly CORDON_AGENT_NFDS descriptors: the
 * command's stdin, stdout, stderr and the reply socket (one end of a
 * SOCK_SEQPACKET pair the host made). The agent answers on the reply socket
 * with struct cordon_agent_reply messages: STARTED (value: the pid inside),
 * then one of EXITED (value: the code) or SIGNALED (value: the signal); or
 * REFUSED (value: an errno) and nothing else. A command that cannot enter
 * its cwd sends CWD_FAILED (value: the errno) from the child before it ends.
 *
 * The command's end is reported once its process group is gone: when the
 * leader ends the agent kills the group and waits until no process of it
 * is left (at most CORDON_AGENT_SETTLE_MS). The host shutting the write
 * side of its reply socket (or closing it) is cancel: the agent kills the
 * group and, the same way, reports the end once the group is gone, so the
 * host knows when the sandbox is free of the command.
 *
 * A new deadline is a message of its own: struct cordon_agent_deadline and
 * nothing else, with one SCM_RIGHTS carrying exactly the reply socket. The
 * agent answers DEADLINE_SET (value 0) once its clock ends ms milliseconds
 * after it read the message, or REFUSED: EINVAL for a malformed message,
 * ETIME when its deadline had already passed (it is ending). An agent older
 * than the deadline message drops it without a reply.
 */
#ifndef CORDON_AGENT_PROTO_H
#define CORDON_AGENT_PROTO_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#define CORDON_AGENT_MAGIC 0x31474143u      /* "CAG1" little-endian */
#define CORDON_AGENT_VERSION 1u
#define CORDON_AGENT_FD_SERVE 3              /* the agent's end */
#define CORDON_AGENT_FD_HOST 4               /* the end the host copies */
/* Below the default unix socket send buffer (net.core.wmem_default
 * 212992) so that one message always fits; a larger request is refused by
 * the client and the provider uses the mechanism's exec. */
#define CORDON_AGENT_MSG_MAX (160u << 10)
#define CORDON_AGENT_ARGV_MAX 256u
#define CORDON_AGENT_ENV_MAX 512u
#define CORDON_AGENT_NFDS 4u                 /* stdin, stdout, stderr, reply */
#define CORDON_AGENT_RUNNING_MAX 64u         /* commands running at once */
#define CORDON_AGENT_SETTLE_MS 1000u         /* a killed group's longest wait for its end */
#define CORDON_AGENT_DEADLINE_MAGIC 0x31444143u  /* "CAD1" little-endian */
/* cordon-init's longest deadline, --deadline-ms or a new one: a year. */
#define CORDON_INIT_DEADLINE_MAX_MS (366ull * 24 * 3600 * 1000)

/* Fixed-width, host byte order (both ends run on the same kernel). */
struct cordon_agent_request {
    uint32_t magic;
    uint32_t version;
    uint32_t argc;               /* 1..CORDON_AGENT_ARGV_MAX */
    uint32_t envc;               /* 0..CORDON_AGENT_ENV_MAX */
};

enum cordon_agent_kind {
    CORDON_AGENT_STARTED = 1,
    CORDON_AGENT_EXITED = 2,
    CORDON_AGENT_SIGNALED = 3,
    CORDON_AGENT_REFUSED = 4,
    CORDON_AGENT_CWD_FAILED = 5,     /* value: chdir's errno; EXITED 126 follows */
    CORDON_AGENT_DEADLINE_SET = 6,   /* the new deadline holds; value 0 */
};

struct cordon_agent_deadline {
    uint32_t magic;              /* CORDON_AGENT_DEADLINE_MAGIC */
    uint32_t version;            /* CORDON_AGENT_VERSION */
    uint64_t ms;                 /* 1..CORDON_INIT_DEADLINE_MAX_MS from when it is read */
};

struct cordon_agent_reply {
    uint32_t magic;
    uint32_t kind;               /* enum cordon_agent_kind */
    int32_t value;
    uint32_t reserved;           /* 0 */
};

/* cordon-init's side (inside/init-agent.c): serve until end_ms (CLOCK_MONOTONIC,
 * moved by a deadline message) or a stop signal; the signals of main's set are already blocked and
 * fds 3 and 4 are the pair. Returns cordon-init's exit status. */
int cordon__init_agent(uint64_t end_ms, const sigset_t *stop);

/* Whether a stop signal (SIGTERM, SIGINT, SIGHUP) may end cordon-init:
 * never as PID 1 of a pid namespace (inside/cordon-init.c says why). */
bool cordon__init_takes_stop(void);

#endif
