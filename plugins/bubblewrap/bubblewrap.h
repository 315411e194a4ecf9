/*
 * bubblewrap's internals, shared by its files (cordon-provider-bubblewrap(7)):
 * bubblewrap.c the vtable, the config, the probe, provision, the files,
 * terminate and reclaim; exec.c one command under bwrap: its command line,
 * the seccomp program on an fd, the child's limits.
 *
 * Functions shared across the files are bw__NAME (declared here), types
 * bw_NAME; what one file keeps to itself is static and unprefixed. A
 * vtable operation is op_SLOT: static beside the vtable in bubblewrap.c,
 * bw__op_SLOT when another file holds it.
 */
#ifndef CORDON_PLUGINS_BUBBLEWRAP_H
#define CORDON_PLUGINS_BUBBLEWRAP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/filter.h>
#include <cjson/cJSON.h>

#include <cordon/provider.h>
#include <cordon/sdk/bounds.h>
#include "plugins/common/area.h"

#define BW_ID "bubblewrap"
#define BW_BWRAP_DEFAULT "/usr/bin/bwrap"
#define BW_PRLIMIT "/usr/bin/prlimit"
/* As root the pool uid running bwrap must reach the area: not under the
 * host's state_dir (0700), but here, every component searchable. */
#define BW_ROOT_PRIVILEGED "/run/cordon/bubblewrap"
#define BW_CONFIG_MAX (64u << 10)
#define BW_MOUNT_SOURCE "cordon-" BW_ID      /* the area's tmpfs, as root */
/* The one uid and gid the sandbox has: the caller (or the execution's pool
 * uid) is mapped to it in a user namespace of its own; nothing else is. */
#define BW_SANDBOX_UID 1000u
#define BW_SANDBOX_GID 1000u
#define BW_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

/* The parsed provider config. */
struct bw_config {
    char *bwrap;         /* absolute path of the bwrap program */
    char *root;          /* where execution areas live */
    bool pooled;         /* euid 0: each execution runs bwrap as a pool uid of its own */
};

struct cordon_resource {
    const struct cordon_host_v1 *host;
    struct bw_config cfg;
    struct sock_fprog prog;  /* the seccomp program bwrap loads, .filter malloc'd */
};

/* ---- bubblewrap.c ----------------------------------------------------------- */

int bw__nomem(struct cordon_error *err, const char *what);
/*
 * Parse a state written by provision (area__state_parse), and hold its
 * uid to the execution's: as root the pool uid it holds, otherwise the
 * caller's own.
 */
int bw__state_parse(const struct cordon_resource *res, const char *json, bool full,
                    struct area_state *ret, struct cordon_error *err);

/* ---- exec.c ------------------------------------------------------------------ */

int bw__op_exec(struct cordon_resource *res, const char *state_json, const char *request_json,
                const struct cordon_exec_io *io, char **ret_result_json,
                struct cordon_error *err);

#endif
