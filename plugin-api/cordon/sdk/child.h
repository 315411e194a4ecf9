/*
 * sdk: what a provider that runs commands as host processes applies in the
 * child, right before execve (cordon_runner_opts.child_setup): the
 * execution's rlimits and, as root, a uid of its own with no privilege.
 *
 * The parent fills a plan (cordon_child_plan_init); the child applies it
 * (cordon_child_plan_apply), async-signal-safe: raw syscalls only, no
 * allocation, no libc state, so it is safe after fork in a threaded host.
 * Mounts or a seccomp filter of the provider's own go before (mounts,
 * still as root) or after (the filter, once no_new_privs is set).
 */
#ifndef CORDON_SDK_CHILD_H
#define CORDON_SDK_CHILD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <cordon/provider.h>
#include <cordon/sdk/bounds.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CORDON_CHILD_LIMITS_MAX 8

/* Caller-owned; filled by cordon_child_plan_init, read by the child. */
struct cordon_child_plan {
    struct {
        int32_t resource;                  /* RLIMIT_* */
        uint32_t padding_0;                /* the layout's own gap, named; leave 0 */
        uint64_t value;                    /* soft and hard */
    } limits[CORDON_CHILD_LIMITS_MAX];
    uint32_t n_limits;
    uid_t uid;
    gid_t gid;
    pid_t parent;                          /* the child dies with this process */
    int32_t cap_last;                      /* the kernel's highest capability number */
    bool switch_user;                      /* empty the bounding set, become uid:gid */
    char padding_1[3];                     /* leave 0 */
};

/*
 * The plan for one command of an execution with limits (borrowed):
 * RLIMIT_DATA memory_bytes (not RLIMIT_AS: node and go reserve large
 * virtual ranges), RLIMIT_FSIZE disk_bytes, RLIMIT_CPU the runtime in whole
 * seconds plus one, RLIMIT_CORE 0, RLIMIT_NOFILE 1024, RLIMIT_STACK 8 MiB
 * (the usual stack, not the caller's), and with switch_user RLIMIT_NPROC
 * pids (a pids limit only for a uid of the execution's own). The parent is
 * the calling process.
 */
CORDON_EXTERN void cordon_child_plan_init(struct cordon_child_plan *plan,
                                          const struct cordon_limits *limits, bool switch_user,
                                          uid_t uid, gid_t gid);

/*
 * In the child: every rlimit (without privilege a hard limit is only
 * lowered), with switch_user every capability dropped from the bounding
 * set and groups, gid and uid switched; death with the parent (ESRCH when
 * it is already gone); the ambient set and every capability cleared;
 * no_new_privs. Returns 0 or the errno of the step that failed.
 */
CORDON_EXTERN int cordon_child_plan_apply(const struct cordon_child_plan *plan);

/* Become uid:gid in the calling task only (raw setgroups, setresgid,
 * setresuid; async-signal-safe): 0, or -1 with errno. */
CORDON_EXTERN int cordon_child_become(uid_t uid, gid_t gid);

#ifdef __cplusplus
}
#endif
#endif
