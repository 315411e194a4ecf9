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

#define TL_ID "trusted-local"
#define TL_ROOT_DEFAULT_PRIVILEGED "/run/cordon/trusted-local"
#define TL_ROOT_MAX 1024u
#define TL_DEFAULT_UID 65532u
#define TL_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

#define TL_CONFIG_MAX (64u << 10)
#define TL_HOST_MARK "host-instance"         /* in <root>/<id>/: whose execution */
#define TL_AREA_SLACK (1u << 20)             /* the area's tmpfs: the marker, directories */
#define TL_AREA_INODES 65536u

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

/* One execution's state, parsed back from the state JSON. */
struct tl_state {
    cJSON *doc;                 /* owns the strings below */
    const char *execution_id;
    char *dir;                  /* <root>/<id>, malloc'd */
    char *workspace;            /* <dir>/workspace, malloc'd */
    uid_t uid;
    gid_t gid;
    bool code_layout;
    bool private_tmp;           /* the area holds tl__tmp_dirs for the child */
    struct cordon_limits res;
    uint64_t expires_at_ms;
    const cJSON *environment;   /* object of strings, or NULL */
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
void tl__state_clear(struct tl_state *st);
/*
 * Parse a state written by provision. The paths are derived from the root
 * and the id, and a "dir" that disagrees is refused: a damaged record must
 * never make us remove or run somewhere else.
 */
int tl__state_parse(const struct cordon_resource *res, const char *json, bool full,
                    struct tl_state *ret, struct cordon_error *err);
int tl__open_workspace(const struct tl_state *st, int *ret_fd, struct cordon_error *err);

/* ---- config.c ------------------------------------------------------------- */

int tl__nomem(struct cordon_error *err, const char *what);
void tl__config_clear(struct tl_config *cfg);
int tl__config_parse(const struct cordon_host_v1 *host, const char *json,
                     struct tl_config *ret, struct cordon_error *err);
/*
 * Create the root and its missing parents (parents 0755, the root 0711),
 * then check that it can hold executions: a directory of ours, not
 * writable by others, and - when children switch users - every component
 * searchable by that user, or its workspace would be out of its reach.
 */
int tl__root_prepare(const struct tl_config *cfg, struct cordon_error *err);

/* ---- exec.c --------------------------------------------------------------- */

int tl__op_exec(struct cordon_resource *res, const char *state_json, const char *request_json,
                const struct cordon_exec_io *io, char **ret_result_json,
                struct cordon_error *err);

#endif
