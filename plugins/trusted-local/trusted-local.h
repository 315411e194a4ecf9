/*
 * trusted-local's internals, shared by its files (cordon-provider-trusted-local(7)):
 * trusted-local.c the vtable, the resource, the probe, provision, the
 * files and terminate; config.c the provider config and the execution
 * root; exec.c running one command, with the child's hardening and the
 * seccomp filter (plugins/common/scmp.c builds it).
 *
 * Functions and variables shared across the files are tl__NAME (declared
 * here), types shared here tl_NAME; what one file keeps to itself is
 * static and unprefixed. A vtable operation is op_SLOT: static beside the
 * vtable in trusted-local.c, tl__op_SLOT when another file holds it.
 */
#ifndef CORDON_PLUGINS_TRUSTED_LOCAL_H
#define CORDON_PLUGINS_TRUSTED_LOCAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/filter.h>
#include <cjson/cJSON.h>

#include <cordon/provider.h>
#include <cordon/sdk/bounds.h>
#include "plugins/common/area.h"

#define TL_ID "trusted-local"
#define TL_ROOT_DEFAULT_PRIVILEGED "/run/cordon/trusted-local"
#define TL_ROOT_MAX AREA_ROOT_MAX
#define TL_DEFAULT_UID 65532u
#define TL_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

#define TL_CONFIG_MAX (64u << 10)
#define TL_MOUNT_SOURCE "cordon-" TL_ID      /* the area's tmpfs, as root */
#define TL_AREA_SLACK (1u << 20)             /* the area's tmpfs: the marker, directories */

/*
 * The execution's own /tmp, /var/tmp and /dev/shm: directories in its area
 * (so that what is written there counts in disk_bytes and goes with the
 * area), bound over the host's in a mount namespace of the child's own.
 * Only as root and with a tmpfs area; see exec.c.
 */
struct tl_tmp_dir {
    const char *name;     /* in the area */
    const char *target;   /* the host path it replaces in the child */
};
#define TL_TMP_DIRS 3
extern const struct tl_tmp_dir tl__tmp_dirs[TL_TMP_DIRS];

/* The parsed provider config. */
struct tl_config {
    bool allow_unsafe_local;
    bool seccomp;
    bool run_as_set;     /* "run_as" was given */
    bool switch_user;    /* euid 0: children switch to uid:gid */
    bool pooled;         /* each execution takes a uid of its own from the pool */
    uid_t uid;           /* the sandbox user (the current user when not root) */
    gid_t gid;
    uid_t run_as_uid;    /* as configured, for the facts */
    gid_t run_as_gid;
    char *root;
};

struct cordon_resource {
    const struct cordon_host_v1 *host;
    struct tl_config cfg;
    struct sock_fprog prog;  /* .filter malloc'd; NULL when seccomp is off */
};

/* ---- trusted-local.c ---------------------------------------------------- */

/*
 * Kill what escaped the runner's process-group kill with setsid(). With a
 * uid of the pool, the uid is the execution's alone: every process of it,
 * wherever it went. With a configured run_as shared by every execution,
 * only those whose working directory lies in the execution area; one that
 * moved elsewhere is not found (the facts say process_contained false).
 */
void tl__sweep(const char *dir, uid_t uid);
/*
 * Parse a state written by provision (area__state_parse); a pooled uid
 * must be the one this execution holds, and the sandbox may be root only
 * when nobody switches users. Its own key: private_tmp (read from doc).
 */
int tl__state_parse(const struct cordon_resource *res, const char *json, bool full,
                    struct area_state *ret, struct cordon_error *err);

/* ---- config.c ------------------------------------------------------------- */

int tl__nomem(struct cordon_error *err, const char *what);
void tl__config_clear(struct tl_config *cfg);
int tl__config_parse(const struct cordon_host_v1 *host, const char *json,
                     struct tl_config *ret, struct cordon_error *err);
/* ---- exec.c --------------------------------------------------------------- */

int tl__op_exec(struct cordon_resource *res, const char *state_json, const char *request_json,
                const struct cordon_exec_io *io, char **ret_result_json,
                struct cordon_error *err);

#endif
