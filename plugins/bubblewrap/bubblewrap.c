/*
 * bubblewrap: code in namespaces made by Debian's bwrap, for root and for
 * an ordinary user alike (cordon-provider-bubblewrap(7)).
 *
 * Each exec is one bwrap: a user namespace that maps one host uid (the
 * caller, or as root a uid of the sdk's pool that the execution holds) to
 * one unprivileged uid inside, and namespaces of its own for pids, mounts,
 * IPC, the network (empty) and the host name; the host's /usr read-only as
 * the userland, fresh /proc, /dev, /tmp and /dev/shm, the execution's
 * workspace at /workspace and nothing else of the host; no capability,
 * no_new_privs and the seccomp deny-list (plugins/common/scmp.c) handed
 * to bwrap on an fd. When the command ends, its pid namespace ends with
 * it: nothing of an exec outlives it.
 *
 * Nothing global: every call works from the resource (the parsed config
 * and the seccomp program) and the execution's state JSON.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <cordon/provider.h>
#include <cordon/sdk/bounds.h>
#include <cordon/sdk/child.h>
#include <cordon/sdk/facts.h>
#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/json.h>
#include <cordon/sdk/request.h>
#include <cordon/sdk/runner.h>
#include <cordon/sdk/sandbox.h>
#include <cordon/sdk/spec.h>
#include <cordon/sdk/uid.h>
#include <cordon/sdk/workspace.h>
#include "plugins/common/area.h"
#include "plugins/common/scmp.h"
#include "plugins/bubblewrap/bubblewrap.h"

int bw__nomem(struct cordon_error *err, const char *what)
{
    return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "%s: out of memory", what);
}

/* ---- config ------------------------------------------------------------- */

static void config_clear(struct bw_config *cfg)
{
    free(cfg->bwrap);
    free(cfg->root);
    memset(cfg, 0, sizeof(*cfg));
}

static int config_parse(const struct cordon_host_v1 *host, const char *json, struct bw_config *ret,
                        struct cordon_error *err)
{
    struct bw_config cfg = { 0 };
    const char *root = NULL, *bwrap = BW_BWRAP_DEFAULT;
    cJSON *doc = NULL, *item;
    bool ignored;
    int r;

    r = cordon_json_parse_object("config", json != NULL ? json : "{}", BW_CONFIG_MAX, &doc, err);
    if (r < 0)
        goto out;
    cJSON_ArrayForEach(item, doc) {
        const char *key = item->string;

        if (strcmp(key, "allow_unsafe_local") == 0) {
            /* Shared by every provider; this one never runs code unprotected. */
            if ((r = cordon_json_bool(item, "config", &ignored, err)) < 0)
                goto out;
        } else if (strcmp(key, "image") == 0) {
            /* The only userland is the host's (the man page, IMAGES). */
            if (!cJSON_IsNull(item) && !(cJSON_IsString(item) && strcmp(item->valuestring, "host") == 0)) {
                r = cordon_error_set(err, CORDON_E_UNSUPPORTED, 0,
                                     "config.image: " BW_ID " takes null or \"host\" (the host's /usr "
                                     "read-only), no other image");
                goto out;
            }
        } else if (strcmp(key, "root") == 0 || strcmp(key, "bwrap") == 0) {
            if (!cJSON_IsString(item)) {
                r = cordon_error_set(err, CORDON_E_INVALID, 0, "config.%s: must be a string", key);
                goto out;
            }
            if (key[0] == 'r')
                root = item->valuestring;
            else
                bwrap = item->valuestring;
        } else {
            r = cordon_error_set(err, CORDON_E_INVALID, 0,
                                 "config.%.*s: unknown key (known: allow_unsafe_local, bwrap, image, root)",
                                 cordon_text_fit(key, 64), key);
            goto out;
        }
    }
    cfg.pooled = geteuid() == 0;
    if (root != NULL) {
        cfg.root = strdup(root);
    } else if (cfg.pooled) {
        cfg.root = strdup(BW_ROOT_PRIVILEGED);
    } else {
        const char *sd = CORDON_HOST_HAS(host, state_dir) ? host->state_dir : NULL;

        /* An ordinary user's areas live in the host's state_dir
         * ($XDG_STATE_HOME/cordon, ~/.local/state/cordon): the user's own. */
        if (sd == NULL || sd[0] != '/') {
            r = cordon_error_set(err, CORDON_E_INVALID, 0,
                                 "config.root: no default (the host has no absolute state_dir); set \"root\"");
            goto out;
        }
        if (asprintf(&cfg.root, "%s/providers/" BW_ID "/executions", sd) < 0)
            cfg.root = NULL;
    }
    cfg.bwrap = strdup(bwrap);
    if (cfg.root == NULL || cfg.bwrap == NULL) {
        r = bw__nomem(err, "config");
        goto out;
    }
    if ((r = area__path_check("config.root", cfg.root, err)) < 0 ||
        (r = area__path_check("config.bwrap", cfg.bwrap, err)) < 0)
        goto out;
    *ret = cfg;
    memset(&cfg, 0, sizeof(cfg));
out:
    config_clear(&cfg);
    cJSON_Delete(doc);
    return r;
}

/* ---- resource ------------------------------------------------------------- */

static void resource_free(struct cordon_resource *res)
{
    if (res == NULL)
        return;
    config_clear(&res->cfg);
    free(res->prog.filter);
    free(res);
}

static int resource_new(const struct cordon_host_v1 *host, const char *config_json,
                        struct cordon_resource **ret, struct cordon_error *err)
{
    struct cordon_resource *res = calloc(1, sizeof(*res));
    int r;

    if (res == NULL)
        return bw__nomem(err, "ensure");
    res->host = host;
    if ((r = config_parse(host, config_json, &res->cfg, err)) < 0)
        goto out;
    if (access(res->cfg.bwrap, X_OK) != 0) {
        r = cordon_error_set(err, CORDON_E_UNAVAILABLE, errno,
                             "config.bwrap: %s: %s (apt-get install bubblewrap)", res->cfg.bwrap, strerror(errno));
        goto out;
    }
    /* The pids limit is set inside the sandbox's user namespace, by
     * util-linux's prlimit from the host's /usr. */
    if (access(BW_PRLIMIT, X_OK) != 0) {
        r = cordon_error_set(err, CORDON_E_UNAVAILABLE, errno, BW_PRLIMIT ": %s (util-linux)", strerror(errno));
        goto out;
    }
    /* As root bwrap runs as the execution's pool uid, which must reach its area. */
    if ((r = area__root_prepare(res->cfg.root, res->cfg.pooled, CORDON_UID_BASE, err)) < 0 ||
        (r = scmp__host_filter(&res->prog, err)) < 0)
        goto out;
    *ret = res;
    res = NULL;
out:
    resource_free(res);
    return r;
}

static int health_check(struct cordon_resource *res, struct cordon_error *err)
{
    if (access(res->cfg.bwrap, X_OK) != 0 || access(res->cfg.root, F_OK) != 0)
        return cordon_error_set(err, CORDON_E_UNAVAILABLE, errno, "health_check: %s or %s: %s", res->cfg.bwrap,
                                res->cfg.root, strerror(errno));
    return 0;
}

/* ---- state ------------------------------------------------------------------- */

/* As root bwrap runs as the pool uid this execution holds, never as another;
 * as a user, as the caller. */
int bw__state_parse(const struct cordon_resource *res, const char *json, bool full, struct area_state *ret,
                    struct cordon_error *err)
{
    return area__state_parse_uid(res->host, res->cfg.root, res->cfg.pooled ? AREA_UID_POOL : AREA_UID_CALLER,
                                 json, full, ret, err);
}

/* ---- probe -------------------------------------------------------------------- */

static const char *const kinds[] = { "code_execution", NULL };
static const char *const access_modes[] = { "snapshot", NULL };
/* As root the area is a tmpfs: disk_bytes holds for the workspace, /tmp
 * and /dev/shm together. An ordinary user's workspace is a directory of
 * its state_dir, bounded per file only: disk_bytes is not claimed. */
static const char *const limits_root[] = { "memory_bytes", "disk_bytes", "pids", "runtime_ms", "max_output_bytes",
                                           NULL };
static const char *const limits_user[] = { "memory_bytes", "pids", "runtime_ms", "max_output_bytes", NULL };
static const char *const limits_nopids[] = { "memory_bytes", "runtime_ms", "max_output_bytes", NULL };

#define BW_ENFORCEMENT(disk, pids)                                                                                 \
    "{\"cpus\":\"none\",\"memory_bytes\":\"rlimit\",\"disk_bytes\":\"" disk "\",\"pids\":\"" pids                  \
    "\",\"runtime_ms\":\"host\",\"max_output_bytes\":\"host\"}"

/* RLIMIT_NPROC counts per user namespace from Linux 5.14 on; before, it
 * counts every process of the host uid, which is no pids limit of ours. */
static bool nproc_per_userns(void)
{
    struct utsname u;
    unsigned major = 0, minor = 0;

    return uname(&u) == 0 && sscanf(u.release, "%u.%u", &major, &minor) == 2 &&
           (major > 5 || (major == 5 && minor >= 14));
}

/* As root the trial runs as nobody, as a pool uid would. */
static CORDON_RUNNER_CHILD int trial_child(void *arg)
{
    const struct cordon_child_plan *plan = arg;

    return plan != NULL ? cordon_child_plan_apply(plan) : 0;
}

/*
 * Can bwrap make its namespaces here, as the user it will run as? One
 * bwrap of /usr/bin/true, with a user, pid and network namespace and a
 * fresh /proc: a kernel or an AppArmor policy that refuses unprivileged
 * user namespaces makes the provider unavailable, saying bwrap's words.
 */
static int bwrap_trial(const struct bw_config *cfg, char *why, size_t why_size, char *version, size_t version_size)
{
    const char *argv[] = { cfg->bwrap, "--unshare-user", "--unshare-pid", "--unshare-net",
                           "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib",
                           "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin",
                           "--proc", "/proc", "/usr/bin/true", NULL };
    const char *vargv[] = { cfg->bwrap, "--version", NULL };
    /* pids at its maximum: uid 65534's other processes (another sandbox of
     * nobody's) must not make the trial fail. */
    static const struct cordon_limits lim = { 1, 256u << 20, 64u << 20, CORDON_LIMIT_PIDS_MAX, 10000, 1u << 20 };
    struct cordon_child_plan plan;
    struct cordon_runner_opts opts;
    struct cordon_exec_outcome out = { 0 };
    struct cordon_error e;
    bool ok;

    cordon_error_init(&e);
    cordon_runner_opts_init(&opts);
    opts.argv = vargv;
    opts.retention_bytes = 256;
    opts.timeout_ms = 10000;
    version[0] = '\0';
    if (cordon_runner_run(&opts, &out, &e) == 0 && out.status == CORDON_RUN_EXITED && out.exit_code == 0 &&
        out.out.data != NULL)
        snprintf(version, version_size, "%.*s", (int)strcspn(out.out.data, "\n"), out.out.data);
    cordon_exec_outcome_clear(&out);

    cordon_child_plan_init(&plan, &lim, cfg->pooled, 65534, 65534);
    opts.argv = argv;
    opts.cwd = "/";
    opts.retention_bytes = 512;
    opts.child_setup = trial_child;
    opts.child_setup_arg = &plan;
    if (cordon_runner_run(&opts, &out, &e) < 0) {
        snprintf(why, why_size, "%s", e.message);
        return -1;
    }
    ok = out.status == CORDON_RUN_EXITED && out.exit_code == 0;
    if (!ok)
        snprintf(why, why_size, "bwrap cannot make a sandbox as uid %u here (exit %d): %.300s",
                 cfg->pooled ? 65534u : (unsigned)geteuid(), out.exit_code,
                 out.err.data != NULL ? out.err.data : "");
    cordon_exec_outcome_clear(&out);
    return ok ? 0 : -1;
}

static char *mechanism_facts(const struct bw_config *cfg, bool area_tmpfs, bool nproc, const char *version)
{
    cJSON *obj = cJSON_CreateObject(), *lim = cJSON_CreateObject();
    char *text = NULL;
    bool ok = obj != NULL && lim != NULL;

    ok = ok && cJSON_AddStringToObject(obj, "bwrap", cfg->bwrap) != NULL &&
         cJSON_AddStringToObject(obj, "bwrap_version", version) != NULL &&
         cJSON_AddNumberToObject(obj, "euid", (double)geteuid()) != NULL &&
         cJSON_AddStringToObject(obj, "run_as", cfg->pooled ? "per-execution pool uid" : "caller") != NULL &&
         cJSON_AddNumberToObject(obj, "sandbox_uid", BW_SANDBOX_UID) != NULL &&
         cJSON_AddStringToObject(obj, "image", "host") != NULL &&
         cJSON_AddStringToObject(obj, "userland", "the host's /usr, read-only") != NULL &&
         cJSON_AddStringToObject(obj, "root", cfg->root) != NULL &&
         cJSON_AddStringToObject(obj, "area", area_tmpfs ? "tmpfs" : "directory") != NULL &&
         cJSON_AddStringToObject(obj, "exec_cancel", "command") != NULL &&
         (!cfg->pooled || (cJSON_AddNumberToObject(obj, "uid_pool_base", CORDON_UID_BASE) != NULL &&
                           cJSON_AddNumberToObject(obj, "uid_pool_size", CORDON_UID_COUNT) != NULL));
    /* How each limit is held, in words (limits_enforcement has the kinds). */
    ok = ok && cJSON_AddStringToObject(lim, "cpus", "not enforced: no cgroup of the provider's") != NULL &&
         cJSON_AddStringToObject(lim, "memory_bytes", "RLIMIT_DATA of every process") != NULL &&
         cJSON_AddStringToObject(lim, "disk_bytes",
                                 area_tmpfs ? "tmpfs sizes: the area (workspace), /tmp and /dev/shm together"
                                            : "not enforced: the workspace is a host directory (RLIMIT_FSIZE per "
                                              "file; /tmp and /dev/shm are sized tmpfs)") != NULL &&
         cJSON_AddStringToObject(lim, "pids", nproc ? "RLIMIT_NPROC inside the sandbox's user namespace"
                                                    : "not enforced: Linux < 5.14 counts RLIMIT_NPROC per host uid")
             != NULL &&
         cJSON_AddStringToObject(lim, "runtime_ms", "the host's deadline; RLIMIT_CPU; bwrap dies with its parent")
             != NULL &&
         cJSON_AddStringToObject(lim, "max_output_bytes", "the host's output budget") != NULL &&
         cJSON_AddItemToObject(obj, "limits", lim);
    if (ok) {
        lim = NULL;
        text = cJSON_PrintUnformatted(obj);
    }
    cJSON_Delete(lim);
    cJSON_Delete(obj);
    return text;
}

static int facts_compose(const struct cordon_host_v1 *host, bool available, const char *reason,
                         const char *const *limits, const char *enforcement, const char *mech, char **ret,
                         struct cordon_error *err)
{
    struct cordon_facts_parts parts = {
        .struct_size = sizeof(parts),
        .provider_id = BW_ID,
        .supported_kinds = kinds,
        .available = available,
        .reason = reason,
        .safety_class = "namespace",
        .mechanism = "namespaces",
        .rootfs_read_only = true,
        .workspace_access_modes = access_modes,
        .limits_enforced = limits,
        .limits_enforcement_json = enforcement,
        .mechanism_facts_json = mech,
        .claims = available ? CORDON_CLAIM_ALL : 0,
        .network = "none",
    };

    return cordon_facts_compose_host(host, &parts, ret, err);
}

static int op_probe(const struct cordon_host_v1 *host, const char *config_json, uint32_t flags,
                    char **ret_facts_json, struct cordon_error *err)
{
    struct cordon_resource *res = NULL;
    struct cordon_error why;
    char *mech = NULL, trial[512], version[64];
    const char *reason = NULL;
    bool area_tmpfs, nproc;
    int r;

    if (host == NULL || ret_facts_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "probe: host and ret_facts_json required");
    cordon_error_init(&why);
    if (resource_new(host, config_json, &res, &why) < 0) {
        /* A config that does not parse is an error; a missing bwrap is facts. */
        if (why.code == CORDON_E_INVALID || why.code == CORDON_E_UNSUPPORTED || why.code == CORDON_E_LIMIT)
            return cordon_error_set(err, why.code, why.os_errno, "%s", why.message);
        reason = why.message;
    } else if (bwrap_trial(&res->cfg, trial, sizeof(trial), version, sizeof(version)) < 0) {
        reason = trial;
    }
    if (flags & CORDON_PROBE_AVAILABILITY) {
        r = cordon_facts_availability_host(host, BW_ID, reason != NULL ? reason : "ready", NULL, ret_facts_json,
                                           err);
        goto out;
    }
    if (reason != NULL) {
        r = facts_compose(host, false, reason, limits_nopids, NULL, NULL, ret_facts_json, err);
        goto out;
    }
    area_tmpfs = res->cfg.pooled && area__tmpfs_works(BW_MOUNT_SOURCE, res->cfg.root);
    nproc = nproc_per_userns();
    if ((mech = mechanism_facts(&res->cfg, area_tmpfs, nproc, version)) == NULL) {
        r = bw__nomem(err, "facts");
        goto out;
    }
    if (area_tmpfs)
        r = facts_compose(host, true, "ready", nproc ? limits_root : limits_nopids,
                          nproc ? BW_ENFORCEMENT("tmpfs_size", "rlimit") : BW_ENFORCEMENT("tmpfs_size", "none"),
                          mech, ret_facts_json, err);
    else
        r = facts_compose(host, true, "ready", nproc ? limits_user : limits_nopids,
                          nproc ? BW_ENFORCEMENT("none", "rlimit") : BW_ENFORCEMENT("none", "none"), mech,
                          ret_facts_json, err);
out:
    free(mech);
    resource_free(res);
    return r;
}

/* ---- provision ---------------------------------------------------------------- */

static int op_provision(struct cordon_resource *res, const char *spec_json, char **ret_state_json,
                        struct cordon_error *err)
{
    struct cordon_spec spec;
    struct cordon_spec_state kept = { 0 };
    struct cordon_disk_split split;
    struct area_new area = { .root_fd = -1, .dir_fd = -1 };
    int r;

    if (res == NULL || ret_state_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "provision: resource and ret_state_json required");
    cordon_spec_init(&spec);
    r = area__spec_read(spec_json, &spec, &kept, err);
    if (r == 0 && spec.image != NULL && strcmp(spec.image, "host") != 0)
        r = cordon_error_set(err, CORDON_E_UNSUPPORTED, 0,
                             "image: \"%.*s\": " BW_ID " runs the host's userland (image null or \"host\")",
                             cordon_text_fit(spec.image, 128), spec.image);
    if (r == 0)
        r = cordon_disk_split("resources.disk_bytes", spec.resources.disk_bytes, &split, err);
    if (r < 0)
        goto out;
    {
        /*
         * As root: a pool uid for bwrap, the area root's and the pool gid's
         * (bwrap, as that uid, reaches the workspace and nothing else), and
         * a tmpfs sized to the workspace's share of disk_bytes exactly
         * (/tmp and /dev/shm are bwrap's, sized with the rest; the marker
         * takes a page of the workspace's share). As a user: the user's.
         */
        struct area_opts o = {
            .root = res->cfg.root, .id = spec.execution_id, .host = res->host,
            .take_uid = res->cfg.pooled, .give = res->cfg.pooled, .uid = geteuid(), .gid = getegid(),
            .mount_source = res->cfg.pooled ? BW_MOUNT_SOURCE : NULL, .mount_bytes = split.workspace_bytes,
            .code_layout = spec.layout == CORDON_SPEC_LAYOUT_CODE,
        };

        if ((r = area__create(&o, &area, err)) < 0)
            goto out;
    }
    r = area__state_print(res->host, &area, &spec, &kept, "area_tmpfs", area.mounted, ret_state_json, err);
out:
    area__new_finish(&area, r < 0);
    cordon_spec_clear(&spec);
    return r;
}

/* ---- files ---------------------------------------------------------------------- */

/* The execution's workspace for the sdk's four file slots; as root what
 * lands is handed to the pool uid, as a user it stays the user's. */
static int workspace_for_slots(struct cordon_resource *res, const char *state_json, struct cordon_workspace *ret,
                               struct cordon_error *err)
{
    struct area_state st = { 0 };
    int r = bw__state_parse(res, state_json, true, &st, err);

    if (r == 0)
        r = area__workspace(&st, res->cfg.pooled, ret, err);
    area__state_clear(&st);
    return r;
}

CORDON_WORKSPACE_SLOTS(op, workspace_for_slots)

/* ---- terminate and reclaim -------------------------------------------------------- */

/*
 * Nothing of an exec outlives it (its pid namespace ends with the command,
 * bwrap dies with its parent); as root a straggler of the pool uid is
 * killed all the same before the uid goes back. Then the area goes.
 */
static int destroy(const struct cordon_resource *res, const char *id, struct cordon_error *err)
{
    char *dir = NULL;
    uid_t held;
    bool holds = res->cfg.pooled && cordon_uid_held(NULL, res->host->host_instance_id, id, &held, NULL) == 1;
    int r = area__paths(res->cfg.root, id, &dir, NULL, err);

    if (r < 0)
        return r;
    if (holds)
        cordon_uid_sweep(held);
    r = area__remove(res->host, dir, id, holds, err);
    free(dir);
    return r;
}

/* Only the id is needed: terminate works from every state. */
static int terminate(struct cordon_resource *res, const char *state_json, struct cordon_error *err)
{
    struct area_state st = { 0 };
    int r = bw__state_parse(res, state_json, false, &st, err);

    if (r == 0)
        r = destroy(res, st.execution_id, err);
    area__state_clear(&st);
    return r;
}

static int reclaim(struct cordon_resource *res, const char *execution_id, struct cordon_error *err)
{
    return destroy(res, execution_id, err);
}

static int list_executions(struct cordon_resource *res, char **ret_ids_json, struct cordon_error *err)
{
    return area__list(res->host, res->cfg.root, ret_ids_json, err);
}

/* extend (provider.h): nothing of an execution runs between two execs. */
static int op_extend(struct cordon_resource *res, const char *state_json, uint64_t expires_at_ms,
                     char **ret_state_json, struct cordon_error *err)
{
    if (res == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "extend: resource required");
    return area__extend(res->host, res->cfg.root, state_json, expires_at_ms, ret_state_json, err);
}

/* ---- entry point -------------------------------------------------------------------- */

CORDON_LIFECYCLE_OPS(op, resource_new, health_check, resource_free, terminate, reclaim, list_executions)

static const struct cordon_provider_v1 provider = {
    .abi_version = CORDON_ABI_VERSION,
    .struct_size = sizeof(struct cordon_provider_v1),
    .provider_id = BW_ID,
    .version = PACKAGE_VERSION,
    .supported_kinds = kinds,
    .probe = op_probe,
    .ensure = op_ensure,
    .health_check = op_health_check,
    .release = op_release,
    .provision = op_provision,
    .exec = bw__op_exec,
    .import_tar = op_import_tar,
    .export_tar = op_export_tar,
    .terminate = op_terminate,
    .reclaim = op_reclaim,
    .list_executions = op_list_executions,
    .import_files = op_import_files,
    .export_files = op_export_files,
    .extend = op_extend,
};

CORDON_PROVIDER_DEFINE(provider)
