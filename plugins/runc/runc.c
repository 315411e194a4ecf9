/*
 * runc: the isolated provider that needs no daemon (cordon-provider-runc(7)).
 *
 * Drives an OCI runtime binary (runc; crun or runsc by runtime_path)
 * through its command line with a root directory of its own (runtime.c),
 * always through the sdk's bounded runner. One execution is one container:
 * a bundle directory under the host's state directory holding config.json
 * (config.c), a pinned, read-only root filesystem from the cache
 * (rootfs.c), cordon-init as its first process, and cgroup limits read
 * back before anything runs (cgroup.c). container.c reaches a running
 * container (its init, its workspace) and destroys it; provision.c
 * makes one and exec.c runs commands in it. This file holds the vtable:
 * config, resource, tar in and out, terminate, reclaim, list and probe.
 *
 * Nothing global: every call works from the resource (parsed config, the
 * runtime found) and the execution's state JSON.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cordon/provider.h>
#include <cordon/sdk/agent.h>
#include <cordon/sdk/bounds.h>
#include <cordon/sdk/facts.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/path.h>
#include <cordon/sdk/sandbox.h>
#include <cordon/sdk/spec.h>
#include <cordon/sdk/tar.h>
#include <cordon/sdk/workspace.h>

#include "plugins/runc/runc.h"

#define ROOT_DEFAULT "/run/cordon-runc"
#define DEFAULT_UID 65532u
#define CONFIG_MAX (64u << 10)

/* ---- small helpers ------------------------------------------------------ */

int runc__nomem(struct cordon_error *err, const char *what)
{
    return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "%s: out of memory", what);
}

/* [A-Za-z0-9][A-Za-z0-9_.-]{0,63}: one path component, and a runtime id. */
int runc__check_abs_path(const char *field, const char *path, struct cordon_error *err)
{
    size_t len = strnlen(path, RUNC_PATH_MAX + 1);

    if (len > RUNC_PATH_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "%s: longer than %u bytes", field,
                                RUNC_PATH_MAX);
    if (path[0] != '/' || len < 2 || path[len - 1] == '/')
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: \"%s\" must be an absolute path other than /", field, path);
    for (const char *p = path; *p != '\0'; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: control character in \"%s\"",
                                    field, path);
        if (*p == '/' && (p[1] == '/' || (p[1] == '.' && (p[2] == '/' || p[2] == '\0')) ||
                          (p[1] == '.' && p[2] == '.' && (p[3] == '/' || p[3] == '\0'))))
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "%s: \"%s\" must be normalised (no \"//\", \".\" or \"..\")",
                                    field, path);
    }
    return 0;
}

int runc__mkdir_p(const char *field, const char *path, mode_t mode, struct cordon_error *err)
{
    char buf[RUNC_PATH_MAX + 1];
    size_t len = strnlen(path, sizeof(buf));
    struct stat st;

    if (len >= sizeof(buf) || path[0] != '/')
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: \"%.*s\" is not an absolute "
                                "path of at most %u bytes",
                                field, cordon_text_fit(path, 200), path, RUNC_PATH_MAX);
    memcpy(buf, path, len + 1);
    for (size_t i = 1; i <= len; i++) {
        bool last = i == len;

        if (!last && buf[i] != '/')
            continue;
        buf[i] = '\0';
        if (mkdir(buf, last ? mode : 0755) != 0 && errno != EEXIST)
            return cordon_error_set(err, errno == EACCES ? CORDON_E_DENIED : CORDON_E_IO, errno,
                                    "%s: cannot create %s: %s", field, buf, strerror(errno));
        if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
            return cordon_error_set(err, CORDON_E_INVALID, errno, "%s: %s is not a directory",
                                    field, buf);
        if (!last)
            buf[i] = '/';
    }
    return 0;
}

int runc__random_hex(char *buf, size_t bytes, struct cordon_error *err)
{
    unsigned char raw[16];

    if (bytes > sizeof(raw) || getrandom(raw, bytes, 0) != (ssize_t)bytes)
        return cordon_error_set(err, CORDON_E_IO, errno, "random: getrandom failed");
    for (size_t i = 0; i < bytes; i++)
        snprintf(buf + 2 * i, 3, "%02x", raw[i]);
    return 0;
}

/* ---- config -------------------------------------------------------------- */

static void config_clear(struct runc_config *cfg)
{
    free(cfg->runtime_path);
    free(cfg->root);
    free(cfg->image);
    memset(cfg, 0, sizeof(*cfg));
}

static int config_parse(const char *json, struct runc_config *ret, struct cordon_error *err)
{
    struct runc_config cfg = { .uid = DEFAULT_UID, .gid = DEFAULT_UID, .pooled = true };
    struct runc_image img = { 0 };
    cJSON *doc = NULL, *item;
    bool flag;
    int r;

    r = cordon_json_parse_object("config", json != NULL ? json : "{}", CONFIG_MAX, &doc, err);
    if (r < 0)
        goto out;
    cJSON_ArrayForEach(item, doc) {
        const char *key = item->string;

        if (strcmp(key, "runtime_path") == 0)
            r = cordon_json_strdup(item, "config", &cfg.runtime_path, err);
        else if (strcmp(key, "root") == 0)
            r = cordon_json_strdup(item, "config", &cfg.root, err);
        else if (strcmp(key, "image") == 0)
            r = cordon_json_strdup(item, "config", &cfg.image, err);
        else if (strcmp(key, "user") == 0) {
            /* One user for every execution: they share its per-user limits. */
            cfg.pooled = false;
            r = cordon_uid_parse("config.user", cJSON_GetStringValue(item), &cfg.uid, &cfg.gid,
                                 err);
        }
        else if (strcmp(key, "exec_agent") == 0) {
            r = cordon_json_bool(item, "config", &flag, err);
            cfg.no_agent = r == 0 && !flag;
        } else if (strcmp(key, "allow_unpinned") == 0)
            r = cordon_json_bool(item, "config", &cfg.allow_unpinned, err);
        else if (strcmp(key, "allow_unsafe_local") == 0)
            /* The host's consent to trusted-local; it changes nothing here
             * and is accepted for merged configs. */
            r = cordon_json_bool(item, "config", &flag, err);
        else
            r = cordon_error_set(err, CORDON_E_INVALID, 0,
                                 "config.%.*s: unknown key (known: runtime_path, root, image, "
                                 "user, exec_agent, allow_unpinned, allow_unsafe_local)",
                                 cordon_text_fit(key, 64), key);
        if (r < 0)
            goto out;
    }
    if (cfg.root == NULL && (cfg.root = strdup(ROOT_DEFAULT)) == NULL) {
        r = runc__nomem(err, "config.root");
        goto out;
    }
    r = runc__check_abs_path("config.root", cfg.root, err);
    if (r == 0 && cfg.runtime_path != NULL)
        r = runc__check_abs_path("config.runtime_path", cfg.runtime_path, err);
    /* The image's grammar is checked now; its file when it is used. */
    if (r == 0 && cfg.image != NULL)
        r = runc__image_parse(cfg.image, cfg.allow_unpinned, &img, err);
    if (r < 0)
        goto out;
    *ret = cfg;
    memset(&cfg, 0, sizeof(cfg));
out:
    runc__image_clear(&img);
    config_clear(&cfg);
    cJSON_Delete(doc);
    return r;
}

/* ---- resource ------------------------------------------------------------ */

static void resource_free(struct cordon_resource *res)
{
    if (res == NULL)
        return;
    config_clear(&res->cfg);
    runc__bpf_cache_free(res->seccomp);
    free(res->runtime);
    free(res->base);
    free(res);
}

static int check_init(const struct cordon_host_v1 *host, struct cordon_error *err)
{
    const char *init = CORDON_HOST_HAS(host, init_path) ? host->init_path : NULL;

    if (init == NULL || init[0] != '/')
        return cordon_error_set(err, CORDON_E_UNAVAILABLE, 0,
                                "init: the host names no absolute cordon-init path "
                                "(CORDON_INIT)");
    if (!runc__executable(init))
        return cordon_error_set(err, CORDON_E_UNAVAILABLE, errno,
                                "init: %s is not an executable file (build cordon-init or set "
                                "CORDON_INIT)", init);
    return 0;
}

/* The runtime's root: ours alone (0700 when we make it, never writable by others). */
static int root_prepare(const struct runc_config *cfg, struct cordon_error *err)
{
    struct stat st;
    int r = runc__mkdir_p("config.root", cfg->root, 0700, err);

    if (r < 0)
        return r;
    if (lstat(cfg->root, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 022) != 0)
        return cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                "config.root: %s must be a directory of uid %u, not writable by "
                                "group or others", cfg->root, (unsigned)geteuid());
    return 0;
}

/* Whether the running kernel is at least major.minor. */
static bool kernel_at_least(unsigned major, unsigned minor)
{
    struct utsname u;
    unsigned a = 0, b = 0;

    return uname(&u) == 0 && sscanf(u.release, "%u.%u", &a, &b) == 2 &&
           (a > major || (a == major && b >= minor));
}

static int resource_new(const struct cordon_host_v1 *host, const char *config_json,
                        struct cordon_resource **ret, struct cordon_error *err)
{
    struct cordon_resource *res = calloc(1, sizeof(*res));
    const char *sd = CORDON_HOST_HAS(host, state_dir) ? host->state_dir : NULL;
    int r;

    if (res == NULL)
        return runc__nomem(err, "ensure");
    res->host = host;
    r = config_parse(config_json, &res->cfg, err);
    if (r < 0)
        goto out;
    if (geteuid() != 0) {
        r = cordon_error_set(err, CORDON_E_UNAVAILABLE, 0,
                             RUNC_ID ": needs root (rootless containers are not supported)");
        goto out;
    }
    if (sd == NULL || sd[0] != '/') {
        r = cordon_error_set(err, CORDON_E_UNAVAILABLE, 0,
                             "state_dir: the host has no absolute state directory for the "
                             "bundles and the rootfs cache");
        goto out;
    }
    if (asprintf(&res->base, "%s/providers/" RUNC_ID, sd) < 0) {
        res->base = NULL;
        r = runc__nomem(err, "ensure");
        goto out;
    }
    /* Bundle paths (base/bundles/<id>/...) must fit our fixed buffers. */
    if (strlen(res->base) > RUNC_PATH_MAX - 128) {
        r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                             "state_dir: \"%.*s...\" is longer than "
                             "%u bytes",
                             cordon_text_fit(sd, 100), sd, RUNC_PATH_MAX - 128 - 15);
        goto out;
    }
    if ((r = check_init(host, err)) < 0 ||
        (r = runc__runtime_find(&res->cfg, &res->runtime, err)) < 0 ||
        (r = runc__mkdir_p("state_dir", res->base, 0700, err)) < 0 ||
        (r = runc__runtime_version(res, err)) < 0 || (r = root_prepare(&res->cfg, err)) < 0)
        goto out;
    res->cgroup_version = runc__cgroup_version();
    res->memsw = runc__cgroup_has_memsw(res->cgroup_version);
    /* runc and crun containers are namespaces and cgroups that exec can
     * enter itself (setns by pidfd and CLONE_INTO_CGROUP: Linux 5.8); any
     * other runtime (runsc is a kernel of its own) is only ever entered
     * through its own exec. The name is the binary's own, from --version. */
    res->exec_setns = (strcmp(res->runtime_name, "runc") == 0 ||
                       strcmp(res->runtime_name, "crun") == 0) && kernel_at_least(5, 8);
    if (res->exec_setns && (r = runc__bpf_cache_new(&res->seccomp, err)) < 0)
        goto out;
    *ret = res;
    res = NULL;
out:
    resource_free(res);
    return r;
}

static int health_check(struct cordon_resource *res, struct cordon_error *err)
{
    struct stat st;

    if (!runc__executable(res->runtime))
        return cordon_error_set(err, CORDON_E_UNAVAILABLE, errno, "runtime: %s is gone",
                                res->runtime);
    if (stat(res->cfg.root, &st) != 0 || !S_ISDIR(st.st_mode))
        return cordon_error_set(err, CORDON_E_UNAVAILABLE, errno, "config.root: %s is gone",
                                res->cfg.root);
    return 0;
}

/* ---- spec and state ------------------------------------------------------ */

/* A state's disk_bytes must split: /workspace, /tmp and /dev/shm share it. */
static int limits_check(const struct cordon_limits *l, const char *field, struct cordon_error *err)
{
    struct cordon_disk_split disk;
    char name[64];

    snprintf(name, sizeof(name), "%s.disk_bytes", field);
    return cordon_disk_split(name, l->disk_bytes, &disk, err);
}

char *runc__bundle_path(const struct cordon_resource *res, const char *id)
{
    char *p = NULL;

    return asprintf(&p, "%s/bundles/%s", res->base, id) < 0 ? NULL : p;
}

void runc__state_clear(struct runc_state *st)
{
    cJSON_Delete(st->doc);
    free(st->bundle);
    memset(st, 0, sizeof(*st));
}

/*
 * Parse a state written by provision. The bundle path and the runtime root
 * are derived from the resource and the id, and a state that disagrees is
 * refused: a damaged record must never make us delete or run elsewhere.
 */
int runc__state_parse(const struct cordon_resource *res, const char *json, bool full,
                      struct runc_state *ret, struct cordon_error *err)
{
    struct runc_state st = { 0 };
    struct cordon_spec_state kept;
    const cJSON *item;
    uint64_t v;
    int r;

    r = cordon_spec_state_parse(json, &st.doc, &st.id, err);
    if (r < 0)
        goto out;
    st.bundle = runc__bundle_path(res, st.id);
    if (st.bundle == NULL) {
        r = runc__nomem(err, "state");
        goto out;
    }
    item = cJSON_GetObjectItemCaseSensitive(st.doc, "bundle");
    if (item != NULL && (!cJSON_IsString(item) || strcmp(item->valuestring, st.bundle) != 0)) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0,
                             "state.bundle: must be %s (the state directory and the id)",
                             st.bundle);
        goto out;
    }
    item = cJSON_GetObjectItemCaseSensitive(st.doc, "root");
    if (item != NULL && (!cJSON_IsString(item) || strcmp(item->valuestring, res->cfg.root) != 0)) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0,
                             "state.root: the execution lives under runtime root \"%.*s\", "
                             "this config uses %s",
                             cordon_text_fit(cJSON_GetStringValue(item) ?: "?", 200),
                             cJSON_GetStringValue(item) ?: "?", res->cfg.root);
        goto out;
    }
    item = cJSON_GetObjectItemCaseSensitive(st.doc, "pid");
    if (item != NULL && cordon_json_u64(item, "state.pid", 2, 0x7fffffff, &v, NULL) == 0)
        st.pid = (pid_t)v;
    if (!full)
        goto done;

    if (st.pid == 0) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0, "state.pid: missing");
        goto out;
    }
    r = cordon_uid_from_state(NULL, st.doc, res->host->host_instance_id, st.id, res->cfg.pooled,
                              &st.uid, &st.gid, err);
    if (r < 0)
        goto out;
    r = cordon_spec_state_from_json(st.doc, &kept, err);
    if (r == 0)
        r = limits_check(&kept.resources, "state.resources", err);
    if (r < 0)
        goto out;
    st.code_layout = kept.layout == CORDON_SPEC_LAYOUT_CODE;
    st.limits = kept.resources;
    st.expires_at_ms = kept.expires_at_ms;
    st.environment = cJSON_GetObjectItemCaseSensitive(st.doc, "environment");
    if (st.environment != NULL &&
        (r = cordon_env_object_check(st.environment, "state.environment", err)) < 0)
        goto out;
    /* Written by provision when the init was started with --agent. */
    st.agent = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st.doc, "agent"));
done:
    *ret = st;
    memset(&st, 0, sizeof(st));
out:
    runc__state_clear(&st);
    return r;
}

/* ---- tar in and out ------------------------------------------------------- */

/* The /workspace tmpfs's share of disk_bytes (config.c): the bound of an
 * import, so that one too big fails by its size rather than halfway. */
static uint64_t workspace_bytes(const struct cordon_limits *l)
{
    struct cordon_disk_split d;

    return cordon_disk_split(NULL, l->disk_bytes, &d, NULL) == 0 ? d.workspace_bytes : l->disk_bytes;
}

/* The execution's workspace, for the sdk's four file slots. */
static int workspace_for_slots(struct cordon_resource *res, const char *state_json,
                               struct cordon_workspace *ret, struct cordon_error *err)
{
    struct runc_state st = { 0 };
    int r;

    if ((r = runc__state_parse(res, state_json, true, &st, err)) == 0 &&
        (r = runc__state_workspace(res, &st, &ret->fd, err)) == 0) {
        ret->owner = (struct cordon_workspace_owner){ st.code_layout, true, st.uid, st.gid };
        ret->import_max_bytes = workspace_bytes(&st.limits);
        ret->export_max_bytes = st.limits.disk_bytes;
    }
    runc__state_clear(&st);
    return r;
}

CORDON_WORKSPACE_SLOTS(op, workspace_for_slots)

/* ---- terminate, reclaim, list ---------------------------------------------- */

static int terminate(struct cordon_resource *res, const char *state_json, struct cordon_error *err)
{
    struct runc_state st = { 0 };
    int r;

    /* Only the id is needed: terminate works from every state. */
    r = runc__state_parse(res, state_json, false, &st, err);
    if (r == 0)
        r = runc__destroy(res, st.id, st.pid, err);
    runc__state_clear(&st);
    return r;
}

static int reclaim(struct cordon_resource *res, const char *execution_id, struct cordon_error *err)
{
    return runc__destroy(res, execution_id, 0, err);
}

/*
 * The boundary (provider.h): the container's init, pinned first so that a
 * recycled pid is never named (it must still be a member of the
 * execution's cgroup). The host checks it against the observer's own
 * namespaces.
 */
static int op_boundary(struct cordon_resource *res, const char *state_json,
                       char **ret_boundary_json, struct cordon_error *err)
{
    struct runc_state st = { 0 };
    int r, pidfd = -1;

    if (res == NULL || ret_boundary_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "boundary: resource and ret_boundary_json required");
    r = runc__state_parse(res, state_json, false, &st, err);
    if (r == 0)
        r = runc__init_pin(res, st.id, st.pid, &pidfd, err);
    if (r < 0)
        goto out;
    r = cordon_json_boundary_host(res->host, st.pid, ret_boundary_json, err);
out:
    if (pidfd >= 0)
        close(pidfd);
    runc__state_clear(&st);
    return r;
}

/*
 * extend (provider.h): the deadline lives in the container's init,
 * cordon-init, whose clock only the host moves, through the agent's
 * channel; the state's copy (exec's backstop) follows. An init started
 * without the agent (exec_agent false, or no setns for exec) keeps the
 * deadline it was started with: the extend is refused and nothing changes.
 */
static int op_extend(struct cordon_resource *res, const char *state_json, uint64_t expires_at_ms,
                     char **ret_state_json, struct cordon_error *err)
{
    struct runc_state st = { 0 };
    int pidfd = -1, r;

    if (res == NULL || ret_state_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "extend: resource and ret_state_json required");
    if ((r = runc__state_parse(res, state_json, true, &st, err)) < 0)
        goto out;
    if (!st.agent) {
        r = cordon_error_set(err, CORDON_E_UNSUPPORTED, 0,
                             "extend: runc execution \"%s\" was started without the resident agent "
                             "(exec_agent false, or exec cannot enter the container): its deadline "
                             "cannot move", st.id);
        goto out;
    }
    if ((r = runc__init_pin(res, st.id, st.pid, &pidfd, err)) == 0)
        r = cordon_agent_extend(res->host, pidfd, state_json, expires_at_ms, ret_state_json, err);
out:
    if (pidfd >= 0)
        close(pidfd);
    runc__state_clear(&st);
    return r;
}

static void add_unique(cJSON *ids, const char *id)
{
    const cJSON *item;

    cJSON_ArrayForEach(item, ids) {
        if (strcmp(item->valuestring, id) == 0)
            return;
    }
    cJSON_AddItemToArray(ids, cJSON_CreateString(id));
}

/* Bundles under this host's state directory, and the runtime's containers
 * labelled with this host's instance id (a bundle may be gone already). */
static int list_executions(struct cordon_resource *res, char **ret_ids_json, struct cordon_error *err)
{
    const char *args[] = { "list", "--format", "json", NULL };
    const char *me = res->host->host_instance_id;
    struct runc_cmd_result c = { 0 };
    cJSON *ids = cJSON_CreateArray(), *list = NULL, *item;
    char *dir_path = NULL;
    struct dirent *de;
    DIR *dir;
    int r;

    if (ids == NULL)
        return runc__nomem(err, "list_executions");
    dir = asprintf(&dir_path, "%s/bundles", res->base) < 0 ? NULL : opendir(dir_path);
    while (dir != NULL && (de = readdir(dir)) != NULL)
        if (cordon_execution_id_check("bundle", de->d_name, NULL) == 0)
            add_unique(ids, de->d_name);
    if (dir != NULL)
        closedir(dir);
    r = runc__runtime_cmd(res, args, &c, err);
    if (r == 0 && c.exit_code == 0 && me != NULL)
        list = cJSON_Parse(c.out);
    cJSON_ArrayForEach(item, list) {
        const cJSON *notes = cJSON_GetObjectItemCaseSensitive(item, "annotations");
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "id"));
        const char *host = cJSON_GetStringValue(
            cJSON_GetObjectItemCaseSensitive(notes, "org.cordon.host"));

        if (id != NULL && host != NULL && strcmp(host, me) == 0 &&
            cordon_execution_id_check("id", id, NULL) == 0)
            add_unique(ids, id);
    }
    if (r == 0)
        r = cordon_json_print_host(res->host, ids, ret_ids_json, err);
    cJSON_Delete(list);
    cJSON_Delete(ids);
    runc__cmd_result_clear(&c);
    free(dir_path);
    return r;
}

/* ---- probe ----------------------------------------------------------------- */

static const char *const kinds[] = { "code_execution", NULL };
static const char *const access_modes[] = { "snapshot", NULL };

/* The facts, for the host: available with the claim (every axis, no
 * network), else why not. */
static int facts_compose(const struct cordon_host_v1 *host, bool available, const char *reason,
                         const char *mech, char **ret, struct cordon_error *err)
{
    struct cordon_facts_parts parts = {
        .struct_size = sizeof(parts),
        .provider_id = RUNC_ID,
        .supported_kinds = kinds,
        .available = available,
        .reason = reason,
        .safety_class = "isolated",
        .mechanism = "container",
        .rootfs_read_only = true,
        .workspace_access_modes = access_modes,
        .limits_enforced = cordon_limit_keys,
        .mechanism_facts_json = mech,
        .claims = CORDON_CLAIM_ALL,
        .network = "none",
        /* The container's cgroup, its tmpfs sizes, cordon-init's deadline,
         * the host's output budget. */
        .limits_enforcement_json = "{\"cpus\":\"cgroup\",\"memory_bytes\":\"cgroup\","
                                   "\"disk_bytes\":\"tmpfs_size\",\"pids\":\"cgroup\","
                                   "\"runtime_ms\":\"sandbox_init\",\"max_output_bytes\":\"host\"}",
    };

    return cordon_facts_compose_host(host, &parts, ret, err);
}

static int facts_unavailable(const struct cordon_host_v1 *host, const char *reason, char **ret,
                             struct cordon_error *err)
{
    return facts_compose(host, false, reason, NULL, ret, err);
}

/* Availability only: the runtime is there, the init is there, the image
 * file is there with the size it had when unpacked. Never hashes. */
static int probe_availability(const struct cordon_host_v1 *host, const struct runc_config *cfg,
                              char **ret, struct cordon_error *err)
{
    struct runc_image img = { 0 };
    struct cordon_error why;
    char *runtime = NULL, *base = NULL;
    const char *sd = CORDON_HOST_HAS(host, state_dir) ? host->state_dir : NULL;
    int r;

    cordon_error_init(&why);
    r = check_init(host, &why);
    if (r == 0)
        r = runc__runtime_find(cfg, &runtime, &why);
    if (r == 0 && cfg->image != NULL) {
        if (sd == NULL || asprintf(&base, "%s/providers/" RUNC_ID, sd) < 0)
            base = NULL;
        r = runc__image_parse(cfg->image, cfg->allow_unpinned, &img, &why);
        if (r == 0)
            r = runc__image_check(base != NULL ? base : "/nonexistent", &img, NULL, &why);
    }
    r = cordon_facts_availability_host(host, RUNC_ID, r == 0 ? "ready" : why.message, NULL, ret, err);
    runc__image_clear(&img);
    free(runtime);
    free(base);
    return r;
}

static char *mechanism_facts(const struct cordon_resource *res, const char *image,
                             bool pinned, bool cached)
{
    cJSON *m = cJSON_CreateObject();
    char user[32], *text = NULL;

    if (res->cfg.pooled)
        snprintf(user, sizeof(user), "per-execution");
    else
        snprintf(user, sizeof(user), "%u:%u", (unsigned)res->cfg.uid, (unsigned)res->cfg.gid);
    if (m != NULL && cJSON_AddStringToObject(m, "runtime", res->runtime_name) != NULL &&
        (!res->cfg.pooled ||
         (cJSON_AddNumberToObject(m, "uid_pool_base", CORDON_UID_BASE) != NULL &&
          cJSON_AddNumberToObject(m, "uid_pool_size", CORDON_UID_COUNT) != NULL)) &&
        cJSON_AddStringToObject(m, "runtime_path", res->runtime) != NULL &&
        cJSON_AddStringToObject(m, "runtime_version", res->runtime_version) != NULL &&
        cJSON_AddStringToObject(m, "oci_spec_version", res->spec_version) != NULL &&
        cJSON_AddStringToObject(m, "root", res->cfg.root) != NULL &&
        cJSON_AddNumberToObject(m, "cgroup_version", res->cgroup_version) != NULL &&
        cJSON_AddBoolToObject(m, "memory_swap_limited", res->memsw) != NULL &&
        cJSON_AddStringToObject(m, "user", user) != NULL &&
        cJSON_AddItemToObject(m, "image", image != NULL ? cJSON_CreateString(image)
                                                        : cJSON_CreateNull()) &&
        cJSON_AddBoolToObject(m, "image_pinned", image != NULL && pinned) != NULL &&
        cJSON_AddBoolToObject(m, "allow_unpinned", res->cfg.allow_unpinned) != NULL &&
        cJSON_AddBoolToObject(m, "rootfs_cached", cached) != NULL &&
        cJSON_AddBoolToObject(m, "rootfs_cacheable", image != NULL) != NULL &&
        cJSON_AddStringToObject(m, "observed_rootfs", image != NULL ? "image" : "empty") != NULL &&
        cJSON_AddNumberToObject(m, "seccomp_denied_syscalls",
                                runc__seccomp_denied_count()) != NULL &&
        cJSON_AddStringToObject(m, "seccomp_clone3", "ENOSYS") != NULL &&
        cJSON_AddStringToObject(m, "loopback", "up") != NULL &&
        cJSON_AddStringToObject(m, "exec_path", runc__agent_wanted(res) ? "agent"
                                                : res->exec_setns ? "setns" : "runtime") != NULL &&
        /* the runtime's exec (runsc) ends only its client: the init goes */
        cJSON_AddStringToObject(m, "exec_cancel", res->exec_setns ? "command" : "execution") != NULL &&
        cJSON_AddStringToObject(m, "init", RUNC_INIT_IN_CONTAINER) != NULL)
        text = cJSON_PrintUnformatted(m);
    cJSON_Delete(m);
    return text;
}

static int op_probe(const struct cordon_host_v1 *host, const char *config_json, uint32_t flags,
                    char **ret_facts_json, struct cordon_error *err)
{
    struct cordon_resource *res = NULL;
    struct runc_config cfg = { 0 };
    struct runc_image img = { 0 };
    struct cordon_error why;
    char *mech = NULL;
    bool cached = false;
    int r;

    if (host == NULL || ret_facts_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "probe: host and ret_facts_json required");
    cordon_error_init(&why);
    /* A config we cannot parse is an error; a runtime we cannot use is facts. */
    if ((r = config_parse(config_json, &cfg, err)) < 0)
        goto out;
    if (flags & CORDON_PROBE_AVAILABILITY) {
        r = probe_availability(host, &cfg, ret_facts_json, err);
        goto out;
    }
    if (resource_new(host, config_json, &res, &why) < 0 ||
        (cfg.image != NULL &&
         (runc__image_parse(cfg.image, cfg.allow_unpinned, &img, &why) < 0 ||
          runc__image_check(res->base, &img, &cached, &why) < 0))) {
        r = facts_unavailable(host, why.message, ret_facts_json, err);
        goto out;
    }
    mech = mechanism_facts(res, cfg.image, img.pinned, cached);
    if (mech == NULL) {
        r = runc__nomem(err, "facts");
        goto out;
    }
    r = facts_compose(host, true, "ready", mech, ret_facts_json, err);
out:
    free(mech);
    runc__image_clear(&img);
    resource_free(res);
    config_clear(&cfg);
    return r;
}

/* ---- entry point ------------------------------------------------------------ */

CORDON_LIFECYCLE_OPS(op, resource_new, health_check, resource_free, terminate, reclaim, list_executions)

static const struct cordon_provider_v1 provider = {
    .abi_version = CORDON_ABI_VERSION,
    .struct_size = sizeof(struct cordon_provider_v1),
    .provider_id = RUNC_ID,
    .version = PACKAGE_VERSION,
    .supported_kinds = kinds,
    .probe = op_probe,
    .ensure = op_ensure,
    .health_check = op_health_check,
    .release = op_release,
    .provision = runc__op_provision,
    .exec = runc__op_exec,
    .import_tar = op_import_tar,
    .export_tar = op_export_tar,
    .export_files = op_export_files,
    .terminate = op_terminate,
    .reclaim = op_reclaim,
    .list_executions = op_list_executions,
    .import_files = op_import_files,
    .boundary = op_boundary,
    .extend = op_extend,
};

CORDON_PROVIDER_DEFINE(provider)
