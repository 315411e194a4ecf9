/*
 * trusted-local: explicit, unprotected host execution
 * (cordon-provider-trusted-local(7)).
 *
 * Runs argv directly on the host, in a per-execution directory beneath a
 * root, with best-effort hardening in the child: rlimits, the bounding set
 * emptied and a dedicated uid:gid when running as root, no_new_privs and a
 * libseccomp deny-list. It contains nothing: its probe claims neither
 * process_contained nor host_filesystem_restricted, network "host"; the
 * host's own observation judges the claim.
 *
 * Nothing global: every call works from the resource (parsed config and
 * the prepared seccomp program) and the execution's state JSON.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <cordon/provider.h>
#include <cordon/sdk/bounds.h>
#include <cordon/sdk/facts.h>
#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/json.h>
#include <cordon/sdk/request.h>
#include <cordon/sdk/tar.h>
#include <cordon/sdk/spec.h>
#include <cordon/sdk/uid.h>
#include <cordon/sdk/workspace.h>
#include "plugins/common/area.h"
#include "plugins/common/scmp.h"
#include "plugins/trusted-local/trusted-local.h"

/* ---- resource ----------------------------------------------------------- */

static void resource_free(struct cordon_resource *res)
{
    if (res == NULL)
        return;
    tl__config_clear(&res->cfg);
    free(res->prog.filter);
    free(res);
}

static int resource_new(const struct cordon_host_v1 *host, const char *config_json,
                        bool require_allow, struct cordon_resource **ret,
                        struct cordon_error *err)
{
    struct cordon_resource *res;
    int r;

    res = calloc(1, sizeof(*res));
    if (res == NULL)
        return tl__nomem(err, "ensure");
    res->host = host;
    r = tl__config_parse(host, config_json, &res->cfg, err);
    if (r < 0)
        goto out;
    if (require_allow && !res->cfg.allow_unsafe_local) {
        r = cordon_error_set(err, CORDON_E_DENIED, 0,
                             TL_ID ": refusing to run code unprotected on this host without "
                             "\"allow_unsafe_local\": true in the provider config");
        goto out;
    }
    r = area__root_prepare(res->cfg.root, res->cfg.switch_user, res->cfg.uid, err);
    if (r < 0)
        goto out;
    /* Built once per resource and shared read-only by every exec. */
    if (res->cfg.seccomp) {
        r = scmp__host_filter(&res->prog, err);
        if (r < 0)
            goto out;
    }
    *ret = res;
    res = NULL;
out:
    resource_free(res);
    return r;
}

/* ensure: running code needs allow_unsafe_local (probing does not). */
static int resource_make(const struct cordon_host_v1 *host, const char *config_json,
                         struct cordon_resource **ret, struct cordon_error *err)
{
    return resource_new(host, config_json, true, ret, err);
}

static int health_check(struct cordon_resource *res, struct cordon_error *err)
{
    struct stat st;

    if (stat(res->cfg.root, &st) != 0)
        return cordon_error_set(err, CORDON_E_UNAVAILABLE, errno, "root: %s: %s", res->cfg.root,
                                strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return cordon_error_set(err, CORDON_E_UNAVAILABLE, 0, "root: %s is not a directory",
                                res->cfg.root);
    return 0;
}

/* ---- processes left behind ---------------------------------------------- */

/* True when pid's working directory is dir or lies beneath it. */
static bool cwd_under(pid_t pid, const char *dir, size_t dlen)
{
    char link[64], cwd[PATH_MAX];
    ssize_t n;

    snprintf(link, sizeof(link), "/proc/%d/cwd", (int)pid);
    n = readlink(link, cwd, sizeof(cwd) - 1);
    if (n < 0 || (size_t)n < dlen)
        return false;
    cwd[n] = '\0';
    return strncmp(cwd, dir, dlen) == 0 && (cwd[dlen] == '\0' || cwd[dlen] == '/');
}

/*
 * Kill what escaped the runner's process-group kill with setsid(). With a
 * uid of the pool, the uid is the execution's alone: every process of it,
 * wherever it went (cordon_uid_sweep). With a configured run_as shared by every
 * execution, only those whose working directory lies in the execution
 * area; one that moved elsewhere is not found (the facts say
 * process_contained false).
 */
struct sweep_dir {
    const char *dir;
    size_t len;
};

static bool in_dir(pid_t pid, void *arg)
{
    const struct sweep_dir *d = arg;

    return cwd_under(pid, d->dir, d->len);
}

void tl__sweep(const char *dir, uid_t uid)
{
    struct sweep_dir d = { dir, strlen(dir) };

    if (cordon_uid_in_pool(uid))
        cordon_uid_sweep(uid);
    else
        cordon_uid_sweep_matching(uid, in_dir, &d);
}

/* ---- spec and state ----------------------------------------------------- */


/*
 * Parse a state written by provision (area__state_parse). A pooled uid is
 * the one this execution holds, never another's; the sandbox may be root
 * only when nobody switches users.
 */
int tl__state_parse(const struct cordon_resource *res, const char *json, bool full,
                    struct area_state *ret, struct cordon_error *err)
{
    enum area_uid_rule rule = res->cfg.pooled        ? AREA_UID_POOL
                              : res->cfg.switch_user ? AREA_UID_NOT_ROOT
                                                     : AREA_UID_ANY;

    return area__state_parse_uid(res->host, res->cfg.root, rule, json, full, ret, err);
}

/* ---- probe -------------------------------------------------------------- */

static const char *const kinds[] = { "code_execution", NULL };
static const char *const access_modes[] = { "snapshot", NULL };
/* pids only holds when children run as a dedicated uid (RLIMIT_NPROC). */
static const char *const limits_user[] = { "memory_bytes", "pids", "runtime_ms",
                                           "max_output_bytes", NULL };
static const char *const limits_self[] = { "memory_bytes", "runtime_ms", "max_output_bytes",
                                           NULL };
/* disk_bytes as a whole only when each area is a tmpfs of that size. */
static const char *const limits_area[] = { "memory_bytes", "disk_bytes", "pids", "runtime_ms",
                                           "max_output_bytes", NULL };

/* How each list's limits are enforced (json.md §3): rlimits of the child,
 * the area's tmpfs size, the host's deadline and output budget. */
#define TL_ENFORCEMENT(disk, pids)                                                                          \
    "{\"cpus\":\"none\",\"memory_bytes\":\"rlimit\",\"disk_bytes\":\"" disk "\",\"pids\":\"" pids    \
    "\",\"runtime_ms\":\"host\",\"max_output_bytes\":\"host\"}"

static char *mechanism_facts(const struct tl_config *cfg, bool area_tmpfs)
{
    cJSON *obj = cJSON_CreateObject();
    char run_as[32];
    char *text = NULL;

    if (cfg->pooled)
        snprintf(run_as, sizeof(run_as), "per-execution");
    else
        snprintf(run_as, sizeof(run_as), "%u:%u", (unsigned)cfg->uid, (unsigned)cfg->gid);
    if (obj != NULL && cJSON_AddNumberToObject(obj, "euid", (double)geteuid()) != NULL &&
        (!cfg->pooled || (cJSON_AddNumberToObject(obj, "uid_pool_base", CORDON_UID_BASE) != NULL &&
                          cJSON_AddNumberToObject(obj, "uid_pool_size", CORDON_UID_COUNT) != NULL)) &&
        cJSON_AddStringToObject(obj, "run_as", run_as) != NULL &&
        cJSON_AddBoolToObject(obj, "seccomp", cfg->seccomp) != NULL &&
        cJSON_AddStringToObject(obj, "root", cfg->root) != NULL &&
        cJSON_AddStringToObject(obj, "area", area_tmpfs ? "tmpfs" : "directory") != NULL &&
        cJSON_AddStringToObject(obj, "exec_cancel", "command") != NULL &&
        (cfg->switch_user || !cfg->run_as_set ||
         cJSON_AddBoolToObject(obj, "run_as_ignored", true) != NULL))
        text = cJSON_PrintUnformatted(obj);
    cJSON_Delete(obj);
    return text;
}

/* The facts, for the host: available with the claim, else why not. Never
 * contained: the host's processes, filesystem and network; as root, a uid
 * of its own without privilege, and the deny-list when seccomp is on. */
static int facts_compose(const struct cordon_host_v1 *host, bool available, const char *reason,
                         const struct tl_config *cfg, const char *const *limits, const char *mech,
                         char **ret, struct cordon_error *err)
{
    struct cordon_facts_parts parts = {
        .struct_size = sizeof(parts),
        .provider_id = TL_ID,
        .supported_kinds = kinds,
        .available = available,
        .reason = reason,
        .safety_class = "trusted_local",
        .mechanism = "host_process",
        .rootfs_read_only = false,
        .workspace_access_modes = access_modes,
        .limits_enforced = limits,
        .mechanism_facts_json = mech,
        .claims = (cfg->switch_user ? CORDON_CLAIM_PRIVESC_BLOCKED : 0) |
                  (cfg->seccomp ? CORDON_CLAIM_SYSCALLS_RESTRICTED : 0),
        .network = "host",
        .limits_enforcement_json = limits == limits_area   ? TL_ENFORCEMENT("tmpfs_size", "rlimit")
                                   : limits == limits_user ? TL_ENFORCEMENT("rlimit", "rlimit")
                                                           : TL_ENFORCEMENT("rlimit", "none"),
    };

    return cordon_facts_compose_host(host, &parts, ret, err);
}

/* Facts of an unavailable provider. */
static int facts_unavailable(const struct cordon_host_v1 *host, const char *reason, char **ret,
                             struct cordon_error *err)
{
    static const struct tl_config none = { 0 };

    return facts_compose(host, false, reason, &none, limits_self, NULL, ret, err);
}

static int op_probe(const struct cordon_host_v1 *host, const char *config_json, uint32_t flags,
                    char **ret_facts_json, struct cordon_error *err)
{
    struct cordon_resource *res = NULL;
    struct tl_config cfg = { 0 };
    struct cordon_error perr;
    char *mech = NULL;
    bool area_tmpfs;
    int r;

    if (host == NULL || ret_facts_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "probe: host and ret_facts_json required");
    cordon_error_init(&perr);
    /* A config we cannot parse is an error; a root we cannot use is facts. */
    r = tl__config_parse(host, config_json, &cfg, err);
    if (r < 0)
        goto out;

    if (flags & CORDON_PROBE_AVAILABILITY) {
        bool ok = area__root_prepare(cfg.root, cfg.switch_user, cfg.uid, &perr) == 0;

        r = cordon_facts_availability_host(host, TL_ID, ok ? "ready" : perr.message, NULL, ret_facts_json, err);
        goto out;
    }

    /* Probing runs nothing, so it needs no allow_unsafe_local. */
    if (resource_new(host, config_json, false, &res, &perr) < 0) {
        r = facts_unavailable(host, perr.message, ret_facts_json, err);
        goto out;
    }
    area_tmpfs = cfg.switch_user && area__tmpfs_works(TL_MOUNT_SOURCE, cfg.root);
    mech = mechanism_facts(&cfg, area_tmpfs);
    if (mech == NULL) {
        r = tl__nomem(err, "facts");
        goto out;
    }
    r = facts_compose(host, true, "ready", &cfg,
                      area_tmpfs ? limits_area : cfg.switch_user ? limits_user : limits_self,
                      mech, ret_facts_json, err);
out:
    free(mech);
    resource_free(res);
    tl__config_clear(&cfg);
    return r;
}

/* ---- provision ---------------------------------------------------------- */

/* dirfd/name made with mode, handed to uid:gid with give. */
static int mkdir_owned(int dirfd, const char *name, mode_t mode, bool give, uid_t uid,
                       gid_t gid, struct cordon_error *err)
{
    int fd, r = 0;

    if (mkdirat(dirfd, name, 0700) != 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "provision: mkdir %s: %s", name,
                                strerror(errno));
    fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fchmod(fd, mode) != 0 || (give && fchown(fd, uid, gid) != 0))
        r = cordon_error_set(err, CORDON_E_IO, errno, "provision: setting up %s: %s", name,
                             strerror(errno));
    if (fd >= 0)
        close(fd);
    return r;
}

/* Whether the root lies beneath a directory the child's own would hide
 * (a root in /tmp, as tests have): the area itself would vanish under it. */
static bool root_under_tmp_dirs(const char *root)
{
    char real_root[PATH_MAX], real_target[PATH_MAX];

    if (realpath(root, real_root) == NULL)
        return true;
    for (size_t i = 0; i < TL_TMP_DIRS; i++) {
        size_t n;

        if (realpath(tl__tmp_dirs[i].target, real_target) == NULL)
            continue;
        n = strlen(real_target);
        if (strncmp(real_root, real_target, n) == 0 &&
            (real_root[n] == '/' || real_root[n] == '\0'))
            return true;
    }
    return false;
}

/*
 * The execution's /tmp, /var/tmp and /dev/shm, in its tmpfs area: root's,
 * 01777 like the host's (sticky: one process of the sandbox cannot remove
 * another's file there). Whatever the sandbox writes in them counts in
 * disk_bytes and goes with the area at terminate; on the host's it would
 * stay, owned by a uid the pool hands to the next execution, and
 * /dev/shm would be host memory outside every limit.
 */
static int make_tmp_dirs(int dir_fd, struct cordon_error *err)
{
    int r = 0;

    for (size_t i = 0; r == 0 && i < TL_TMP_DIRS; i++)
        r = mkdir_owned(dir_fd, tl__tmp_dirs[i].name, 01777, false, 0, 0, err);
    return r;
}

static int op_provision(struct cordon_resource *res, const char *spec_json, char **ret_state_json,
                        struct cordon_error *err)
{
    struct cordon_spec spec;
    struct cordon_spec_state kept = { 0 };
    struct area_new area = { .root_fd = -1, .dir_fd = -1 };
    bool private_tmp = false;
    int r;

    if (res == NULL || ret_state_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "provision: resource and ret_state_json required");
    cordon_spec_init(&spec);
    /* The network is "none" in every spec the sdk reads, and even that is
     * not enforced here: the facts say network "host", so a caller that
     * needs isolation sees it is not given. */
    r = area__spec_read(spec_json, &spec, &kept, err);
    if (r == 0 && spec.image != NULL)
        r = cordon_error_set(err, CORDON_E_UNSUPPORTED, 0,
                             "image: " TL_ID " runs on the host and takes no image");
    if (r < 0)
        goto out;
    {
        /*
         * As root, an execution's area is a tmpfs of its own, sized
         * disk_bytes: the limit then holds for the whole workspace rather
         * than per file, a program filling it cannot fill the file system
         * the root lives on, and removing the area is one unmount. Where
         * mounting is refused (no privilege, a container without
         * CAP_SYS_ADMIN) the area stays a plain directory and disk_bytes is
         * RLIMIT_FSIZE alone, as the man page says. Switching users, the
         * area is root's and the sandbox group's (area__create).
         */
        struct area_opts o = {
            .root = res->cfg.root, .id = spec.execution_id, .host = res->host,
            .take_uid = res->cfg.pooled, .give = res->cfg.switch_user,
            .uid = res->cfg.uid, .gid = res->cfg.gid, .mount_source = TL_MOUNT_SOURCE,
            .mount_bytes = kept.resources.disk_bytes + TL_AREA_SLACK,
            .code_layout = spec.layout == CORDON_SPEC_LAYOUT_CODE,
        };

        if ((r = area__create(&o, &area, err)) < 0)
            goto out;
    }
    if (res->cfg.switch_user && area.mounted && !root_under_tmp_dirs(res->cfg.root)) {
        if ((r = make_tmp_dirs(area.dir_fd, err)) < 0)
            goto out;
        private_tmp = true;
    }
    r = area__state_print(res->host, &area, &spec, &kept, "private_tmp", private_tmp, ret_state_json, err);
out:
    area__new_finish(&area, r < 0);
    cordon_spec_clear(&spec);
    return r;
}

/* ---- tar in and out ----------------------------------------------------- */

/* The execution's workspace, for the sdk's four file slots; who owns what
 * lands in it: not root, everything stays the invoking user's (see the
 * man page). */
static int workspace_for_slots(struct cordon_resource *res, const char *state_json,
                               struct cordon_workspace *ret, struct cordon_error *err)
{
    struct area_state st = { 0 };
    int r = tl__state_parse(res, state_json, true, &st, err);

    if (r == 0)
        r = area__workspace(&st, geteuid() == 0, ret, err);
    area__state_clear(&st);
    return r;
}

CORDON_WORKSPACE_SLOTS(op, workspace_for_slots)

/* ---- terminate and reclaim ---------------------------------------------- */

/* Kill what is left in the execution's area and remove it; missing is
 * success. The execution's uid goes back to the pool only once nothing
 * runs as it. */
static int destroy(const struct cordon_resource *res, const char *id, uid_t uid, struct cordon_error *err)
{
    char *dir = NULL;
    uid_t held;
    int r = area__paths(res->cfg.root, id, &dir, NULL, err);

    if (r < 0)
        return r;
    if (cordon_uid_held(NULL, res->host->host_instance_id, id, &held, NULL) == 1)
        uid = held;
    tl__sweep(dir, uid);
    r = area__remove(res->host, dir, id, cordon_uid_in_pool(uid), err);
    free(dir);
    return r;
}

/* extend (provider.h): nothing of an execution runs between two execs. */
static int op_extend(struct cordon_resource *res, const char *state_json, uint64_t expires_at_ms,
                     char **ret_state_json, struct cordon_error *err)
{
    if (res == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "extend: resource required");
    return area__extend(res->host, res->cfg.root, state_json, expires_at_ms, ret_state_json, err);
}

/* Only the id is needed: terminate works from every state. The uid the
 * execution ran as, when the state has it, finds what it left behind. */
static int terminate(struct cordon_resource *res, const char *state_json, struct cordon_error *err)
{
    struct area_state st = { 0 };
    struct cordon_error ignored;
    uint64_t uid = res->cfg.uid;
    int r = tl__state_parse(res, state_json, false, &st, err);

    if (r == 0) {
        cordon_json_u64(cJSON_GetObjectItemCaseSensitive(st.doc, "uid"), "state.uid", 0,
                        0xfffffffeu, &uid, &ignored);
        r = destroy(res, st.execution_id, (uid_t)uid, err);
    }
    area__state_clear(&st);
    return r;
}

static int reclaim(struct cordon_resource *res, const char *execution_id, struct cordon_error *err)
{
    return destroy(res, execution_id, res->cfg.uid, err);
}

static int list_executions(struct cordon_resource *res, char **ret_ids_json, struct cordon_error *err)
{
    return area__list(res->host, res->cfg.root, ret_ids_json, err);
}

/* ---- entry point -------------------------------------------------------- */

CORDON_LIFECYCLE_OPS(op, resource_make, health_check, resource_free, terminate, reclaim, list_executions)

static const struct cordon_provider_v1 provider = {
    .abi_version = CORDON_ABI_VERSION,
    .struct_size = sizeof(struct cordon_provider_v1),
    .provider_id = TL_ID,
    .version = PACKAGE_VERSION,
    .supported_kinds = kinds,
    .probe = op_probe,
    .ensure = op_ensure,
    .health_check = op_health_check,
    .release = op_release,
    .provision = op_provision,
    .exec = tl__op_exec,
    .import_tar = op_import_tar,
    .export_tar = op_export_tar,
    .export_files = op_export_files,
    .terminate = op_terminate,
    .reclaim = op_reclaim,
    .list_executions = op_list_executions,
    .import_files = op_import_files,
    .extend = op_extend,
};

CORDON_PROVIDER_DEFINE(provider)
