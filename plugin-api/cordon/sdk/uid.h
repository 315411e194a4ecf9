/*
 * sdk: one host uid per execution.
 *
 * Per-user kernel limits (inotify instances and watches, POSIX message queue
 * bytes, RLIMIT_NPROC, signals to "every process of my uid") are counted by
 * the host uid a process runs as, across the whole machine. Sandboxes that
 * share a uid share those limits, and one can exhaust them for all the
 * others, or signal the others' processes where no pid namespace separates
 * them. A provider that runs each execution as a uid of its own, taken from
 * this pool, makes those limits per execution.
 *
 * The pool is CORDON_UID_COUNT uids from CORDON_UID_BASE (gid = uid), a range
 * that no distribution gives to users or to subordinate-id maps. A uid is
 * taken by creating a lock file named after it in the pool directory
 * (default CORDON_UID_DIR), atomically (link(2) of a complete file), whose
 * content is the owner: the execution id. Every cordon host and provider on
 * the machine shares the directory, so two executions never hold the same
 * uid at the same time. The directory is root's (0700): the pool is for
 * providers that run as root; without root a provider keeps its own uid.
 */
#ifndef CORDON_SDK_UID_H
#define CORDON_SDK_UID_H

#include <stdbool.h>
#include <sys/types.h>
#include <cjson/cJSON.h>
#include <cordon/provider.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CORDON_UID_BASE 0x70000000u  /* 1879048192 */
#define CORDON_UID_COUNT 65536u
#define CORDON_UID_DIR "/run/cordon/uids"

/* The longest owner: a host instance id, ".", an execution id. */
#define CORDON_UID_OWNER_MAX 200

/* True when uid lies in the pool's range. */
static inline bool cordon_uid_in_pool(uid_t uid)
{
    return uid >= CORDON_UID_BASE && uid - CORDON_UID_BASE < CORDON_UID_COUNT;
}

/*
 * A uid is held by an execution: host (the host_instance_id of the host that
 * made it, host->host_instance_id; NULL or "" for none) and id (its execution
 * id), each 1..128 bytes of [A-Za-z0-9._-]. Execution ids are unique per
 * host installation only, and two installations on one machine share the
 * pool, so the lock's owner is "<host>.<id>" (the id alone without a host).
 *
 * Take a free uid of the pool for (host, id). dir: the pool directory (NULL: CORDON_UID_DIR), made 0700
 * when missing. CORDON_E_EXISTS when owner holds a uid already (an id used
 * twice must never share, or free, another execution's uid); CORDON_E_LIMIT
 * when every uid is taken; CORDON_E_INVALID for a bad owner.
 */
CORDON_EXTERN int cordon_uid_take(const char *dir, const char *host, const char *id,
                                  uid_t *ret_uid, struct cordon_error *err);

/*
 * Give back the uid that (host, id) holds (none held is success). Only a
 * lock whose content is that owner is removed: a uid is never freed for
 * someone else.
 */
CORDON_EXTERN int cordon_uid_give_back(const char *dir, const char *host, const char *id,
                                       struct cordon_error *err);

/* The uid (host, id) holds: 1 and *ret_uid set, 0 when none, < 0 on error. */
CORDON_EXTERN int cordon_uid_held(const char *dir, const char *host, const char *id,
                                  uid_t *ret_uid, struct cordon_error *err);

/*
 * The check every exec, import and terminate makes of a state it was handed:
 * uid:gid must be the uid of the pool that (host, id) holds, gid = uid. It
 * reads the one lock file named uid (the cost does not grow with the
 * number of executions). 0 when it holds; CORDON_E_INVALID with
 * "state.uid: U:G is not the uid execution ID holds in the uid pool"
 * otherwise; another error when the pool cannot be read.
 */
CORDON_EXTERN int cordon_uid_check_state(const char *dir, const char *host, const char *id,
                                         uid_t uid, gid_t gid, struct cordon_error *err);

/*
 * A configured sandbox user, "UID:GID" in decimal (each at most 10 digits):
 * neither may be 0 (root) or (uid_t)-1 (which setresuid reads as
 * "unchanged"), nor lie in the pool's range, which is given out one uid per
 * execution and never shared by configuration. field names the key in
 * messages ("config.user"). CORDON_E_INVALID naming field otherwise.
 */
CORDON_EXTERN int cordon_uid_parse(const char *field, const char *text, uid_t *ret_uid,
                                   gid_t *ret_gid, struct cordon_error *err);

/*
 * The "uid" and "gid" of a provider's state document (doc, borrowed), as
 * provision wrote them: 1..(uid_t)-2 each. When pooled, or when either lies
 * in the pool's range, the uid must be the one (host, id) holds
 * (cordon_uid_check_state in dir). CORDON_E_INVALID
 * naming "state.uid" or "state.gid" otherwise.
 */
CORDON_EXTERN int cordon_uid_from_state(const char *dir, const cJSON *doc, const char *host,
                                        const char *id, bool pooled, uid_t *ret_uid,
                                        gid_t *ret_gid, struct cordon_error *err);

/*
 * Kill every process of uid, a uid of the pool (any other uid is left
 * alone: it may be shared): the processes an exec left behind that escaped
 * the runner's process-group kill with setsid(), wherever they went. As
 * root one kill(-1) from a child that takes the uid; else /proc is read,
 * each process pinned with a pidfd before the signal.
 */
CORDON_EXTERN void cordon_uid_sweep(uid_t uid);

/*
 * Kill the processes of uid, any uid, that match(pid, arg) says belong to
 * the execution (NULL: all of them), read from /proc, each pinned with a
 * pidfd and matched again before the signal, so a reused pid is never
 * hit; passes until one kills none. For a uid shared by executions (a
 * configured run_as), where only the provider can tell whose a process is.
 */
CORDON_EXTERN void cordon_uid_sweep_matching(uid_t uid, bool (*match)(pid_t pid, void *arg), void *arg);

#ifdef __cplusplus
}
#endif
#endif
