/*
 * What the providers whose executions live in host directories share
 * (trusted-local, bubblewrap): the root that holds one area per execution,
 * ROOT/EXECUTION_ID with its workspace/ and a marker naming the host
 * instance; the state that finds an area again; the area as a tmpfs of
 * its own when root can mount one. Compiled into each of them; not part
 * of libcordon-sdk.
 */
#ifndef CORDON_PLUGINS_COMMON_AREA_H
#define CORDON_PLUGINS_COMMON_AREA_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include <cordon/provider.h>
#include <cordon/sdk/bounds.h>

#define AREA_ROOT_MAX 1024u
#define AREA_HOST_MARK "host-instance"       /* in ROOT/ID/: whose execution */

/*
 * An absolute, clean directory path: no "." or ".." component, no "//",
 * no trailing '/', no control characters, not "/" itself. field names it
 * in the refusal ("root", "config.bwrap").
 */
int area__path_check(const char *field, const char *path, struct cordon_error *err);

/*
 * Create root and its missing parents (parents 0755, root 0711), then
 * check that it can hold executions: a directory of ours, not writable by
 * others, and with others_search every component searchable by others
 * (o+x), since the execution runs as another uid (sandbox_uid, named in
 * the refusal) that must reach its area.
 */
int area__root_prepare(const char *root, bool others_search, uid_t sandbox_uid, struct cordon_error *err);

/* ROOT/ID and, when ret_ws is not NULL, ROOT/ID/workspace (malloc'd). */
int area__paths(const char *root, const char *id, char **ret_dir, char **ret_ws, struct cordon_error *err);

/* One execution's state, parsed back from the state JSON provision wrote:
 * execution_id, dir, workspace, uid, gid, the spec's (cordon_spec_state)
 * and environment. A provider's own keys are read from doc. */
struct area_state {
    cJSON *doc;                 /* owns the strings below */
    const char *execution_id;
    char *dir;                  /* ROOT/ID, malloc'd */
    char *workspace;            /* ROOT/ID/workspace, malloc'd */
    uid_t uid;
    gid_t gid;
    bool code_layout;
    struct cordon_limits res;
    uint64_t expires_at_ms;
    const cJSON *environment;   /* object of strings, or NULL */
};

void area__state_clear(struct area_state *st);
/*
 * Parse a state. The paths are derived from root and the id, and a "dir"
 * that disagrees is refused: a damaged record must never make us remove
 * or run somewhere else. Without full, only the id and the paths.
 */
int area__state_parse(const char *root, const char *json, bool full, struct area_state *ret,
                      struct cordon_error *err);
/* Whose uid:gid a full state may name as the sandbox's (area__state_parse_uid). */
enum area_uid_rule {
    AREA_UID_ANY,       /* whatever provision wrote */
    AREA_UID_POOL,      /* the pool's that this execution holds (cordon_uid_check_state) */
    AREA_UID_NOT_ROOT,  /* any but root's (a configured run_as) */
    AREA_UID_CALLER,    /* the caller's effective uid:gid */
};
/* area__state_parse, and with full the sandbox's uid:gid checked by rule. */
int area__state_parse_uid(const struct cordon_host_v1 *host, const char *root, enum area_uid_rule rule,
                          const char *json, bool full, struct area_state *ret, struct cordon_error *err);
/*
 * extend (provider.h) for a provider whose sandbox runs nothing between two
 * execs (each exec's process group ends with it): its deadline is the
 * host's record and the backstop each exec takes from the state, so
 * moving the state's deadline moves all of it. The state must read back
 * (area__state_parse) before it is rewritten.
 */
int area__extend(const struct cordon_host_v1 *host, const char *root, const char *state_json,
                 uint64_t expires_at_ms, char **ret_state_json, struct cordon_error *err);

/* The workspace directory of st, opened O_NOFOLLOW (NOT_FOUND once terminated). */
int area__open_workspace(const struct area_state *st, int *ret_fd, struct cordon_error *err);

struct cordon_workspace;
/* The workspace of st for the sdk's file slots (CORDON_WORKSPACE_SLOTS):
 * opened as area__open_workspace, what lands handed to st's uid:gid when
 * give, each import and export bounded by disk_bytes. */
int area__workspace(const struct area_state *st, bool give, struct cordon_workspace *ret, struct cordon_error *err);

/* An area's end: its tmpfs detached, ROOT/ID removed (missing is
 * success), then with give_back the execution's pool uid returned. */
int area__remove(const struct cordon_host_v1 *host, const char *dir, const char *id, bool give_back,
                 struct cordon_error *err);

/* As root: dir made a tmpfs named source of bytes (nosuid, nodev, 65536
 * inodes, 0700); false when mounting is refused. */
bool area__mount(const char *source, const char *dir, uint64_t bytes);
/* Detach dir's tmpfs, if it has one (as root). */
void area__unmount(const char *dir);
/* Whether area__mount works under root here: tried, not assumed. */
bool area__tmpfs_works(const char *source, const char *root);

/* How provision makes an execution's area (area__create). */
struct area_opts {
    const char *root;
    const char *id;                      /* checked against the grammar already */
    const struct cordon_host_v1 *host;
    bool take_uid;                       /* a uid of the sdk's pool for this execution (root only) */
    bool give;                           /* the sandbox is another uid: area root:gid 0710, the
                                          * workspace made the sandbox's (cordon_workspace_make) */
    uid_t uid;                           /* the sandbox's, without take_uid */
    gid_t gid;
    const char *mount_source;            /* the area a tmpfs of this name (as root); NULL: none */
    uint64_t mount_bytes;
    bool code_layout;
};

/* An area provision is making; caller-owned, zeroed. */
struct area_new {
    char *dir;                           /* ROOT/ID, malloc'd */
    char *ws;                            /* ROOT/ID/workspace, malloc'd */
    int dir_fd;                          /* the area, open while it is made */
    uid_t uid;                           /* the sandbox's: the pool's, or opts' */
    gid_t gid;
    bool mounted;                        /* the area is a tmpfs */
    int root_fd;                         /* the rest: what area__new_finish undoes */
    bool created, took_uid;
    const char *host_id;
    const char *id;
};

/*
 * Make ROOT/ID (mkdirat is the existence check: two provisions of one id
 * cannot both succeed, CORDON_E_EXISTS), take a pool uid, mount the
 * tmpfs, set the area's owner and mode (0710 root:gid with give, else
 * 0700), make the workspace by layout and the host's marker. *ret is
 * filled as far as it got, also on failure: always end it with
 * area__new_finish.
 */
int area__create(const struct area_opts *o, struct area_new *ret, struct cordon_error *err);
/* Close what is open and free; with failed, also unmount and remove the
 * area and give its uid back. */
void area__new_finish(struct area_new *a, bool failed);

struct cordon_spec;
struct cordon_spec_state;
/* provision's first step: spec_json parsed into spec (cordon_spec_init'd
 * by the caller, cleared by it), and into *ret_kept what the state keeps
 * of it, with the deadline from now (cordon_spec_deadline). */
int area__spec_read(const char *spec_json, struct cordon_spec *spec, struct cordon_spec_state *ret_kept,
                    struct cordon_error *err);
/* provision's last step: the state of the area a made for spec (what
 * area__state_parse reads back) with the provider's own key: value,
 * printed into *ret_state_json from host->alloc. */
int area__state_print(const struct cordon_host_v1 *host, const struct area_new *a, const struct cordon_spec *spec,
                      const struct cordon_spec_state *kept, const char *key, bool value, char **ret_state_json,
                      struct cordon_error *err);

/* The marker: host's instance id in dir_fd/AREA_HOST_MARK (none without one). */
int area__mark(int dir_fd, const struct cordon_host_v1 *host, struct cordon_error *err);
/* list_executions: the ids under root whose marker names host's instance. */
int area__list(const struct cordon_host_v1 *host, const char *root, char **ret_ids_json,
               struct cordon_error *err);

#endif
