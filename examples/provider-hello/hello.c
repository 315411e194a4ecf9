/*
 * hello.so: a small cordon provider built out of tree on the SDK alone.
 *
 * It runs argv on the host as a uid of its own per execution (the SDK's
 * uid pool), with no capability, no_new_privs and rlimits, and a private
 * /tmp, /var/tmp and /dev/shm. Nothing else: the host's filesystem and
 * network. Its probe claims just that (privilege_escalation_blocked,
 * network "host"); the host observes a sandbox of its own to judge it, so
 * --isolation required never selects it. It needs root, and runs only with
 * the caller's explicit allow_unsafe_local.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <cordon/sdk/child.h>
#include <cordon/sdk/facts.h>
#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/json.h>
#include <cordon/sdk/request.h>
#include <cordon/sdk/spec.h>
#include <cordon/sdk/uid.h>
#include <cordon/sdk/workspace.h>

#define HELLO_ID "hello"                 /* must equal the file name: hello.so */
#define HELLO_ROOT "/run/cordon/hello"   /* <root>/<execution id>/workspace */
#define HELLO_DOC_MAX (1u << 20)         /* config and state */

struct cordon_resource { const struct cordon_host_v1 *host; };

/* An execution, parsed back from its state. */
struct hello_state {
    char execution_id[CORDON_EXECUTION_ID_MAX + 1];
    char dir[512];              /* HELLO_ROOT/<id> */
    char workspace[600];        /* <dir>/workspace */
    uid_t uid;
    int ws_fd;                       /* the workspace, open (full states only) */
    struct cordon_spec_state kept;   /* the spec's layout, resources and deadline */
    struct cordon_env environment;   /* the spec's, for every exec */
};

static const char *const hello_kinds[] = { "code_execution", NULL };
static const char *const hello_modes[] = { "snapshot", NULL };
/* The child's rlimits (pids: RLIMIT_NPROC of its own uid), and the host's. */
static const char *const hello_limits[] = { "memory_bytes", "pids", "runtime_ms",
                                            "max_output_bytes", NULL };

/* ---- config and resource -------------------------------------------------- */

/* The only key is the caller's consent; any other key is refused. */
static int hello_config_parse(const char *json, bool *ret_consent, struct cordon_error *err)
{
    cJSON *doc = NULL;
    const cJSON *item;
    bool consent = false;
    int r = cordon_json_parse_object("config", json != NULL ? json : "{}", HELLO_DOC_MAX, &doc, err);

    cJSON_ArrayForEach(item, (r == 0 ? doc : NULL)) {
        if (strcmp(item->string, "allow_unsafe_local") != 0 || !cJSON_IsBool(item)) {
            r = cordon_error_set(err, CORDON_E_INVALID, 0, "config.%.64s: unknown key (" HELLO_ID
                                 " takes only allow_unsafe_local, a boolean)", item->string);
            break;
        }
        consent = cJSON_IsTrue(item);
    }
    cJSON_Delete(doc);
    if (r == 0)
        *ret_consent = consent;
    return r;
}

/* The root, 0711: sandbox uids pass through to their workspace only. */
static int hello_root_prepare(struct cordon_error *err)
{
    if (geteuid() != 0)
        return cordon_error_set(err, CORDON_E_UNAVAILABLE, 0,
                                HELLO_ID " needs root (a uid of its own per execution)");
    if ((mkdir("/run/cordon", 0755) != 0 && errno != EEXIST) ||
        (mkdir(HELLO_ROOT, 0711) != 0 && errno != EEXIST) || chmod(HELLO_ROOT, 0711) != 0)
        return cordon_error_set(err, CORDON_E_UNAVAILABLE, errno, "root: %s: %s", HELLO_ROOT,
                                strerror(errno));
    return 0;
}

static int hello_ensure(const struct cordon_host_v1 *host, const char *config_json,
                        struct cordon_resource **ret_resource, struct cordon_error *err)
{
    bool consent = false;
    int r = hello_config_parse(config_json, &consent, err);

    if (r == 0 && (host == NULL || ret_resource == NULL))
        r = cordon_error_set(err, CORDON_E_INVALID, 0, "ensure: host and ret_resource required");
    else if (r == 0 && !consent)
        r = cordon_error_set(err, CORDON_E_DENIED, 0, "allow_unsafe_local: " HELLO_ID " runs code on "
                             "the host without isolation and needs the caller's explicit consent");
    if (r < 0 || (r = hello_root_prepare(err)) < 0)
        return r;
    if ((*ret_resource = calloc(1, sizeof(**ret_resource))) == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, 0, "ensure: out of memory");
    (*ret_resource)->host = host;
    return 0;
}

static int hello_release(struct cordon_resource *res, struct cordon_error *err)
{
    (void)err;
    free(res);
    return 0;
}

/* ---- probe ---------------------------------------------------------------- */

/* The claim, and nothing observed: the host judges it with an observation
 * of its own. Unavailable facts say why (root, the config). */
static int hello_probe(const struct cordon_host_v1 *host, const char *config_json, uint32_t flags,
                       char **ret_facts_json, struct cordon_error *err)
{
    struct cordon_facts_parts parts = {
        .struct_size = sizeof(parts), .provider_id = HELLO_ID, .supported_kinds = hello_kinds,
        .available = true, .reason = "ready",
        .safety_class = "trusted_local", .mechanism = "host_process",   /* what it is */
        .workspace_access_modes = hello_modes, .limits_enforced = hello_limits,
        /* json.md §3: the child's rlimits, the host's deadline and budget. */
        .limits_enforcement_json = "{\"cpus\":\"none\",\"memory_bytes\":\"rlimit\","
                                   "\"disk_bytes\":\"rlimit\",\"pids\":\"rlimit\","
                                   "\"runtime_ms\":\"host\",\"max_output_bytes\":\"host\"}",
        .claims = CORDON_CLAIM_PRIVESC_BLOCKED,   /* a uid of its own, no capability */
        .network = "host",
    };
    struct cordon_error why;
    bool consent;
    /* A config we cannot read is an error; a host we cannot use is facts. */
    int r = hello_config_parse(config_json, &consent, err);

    if (r < 0 || host == NULL || ret_facts_json == NULL)
        return r < 0 ? r : cordon_error_set(err, CORDON_E_INVALID, 0, "probe: host and ret_facts_json required");
    cordon_error_init(&why);
    if (hello_root_prepare(&why) < 0) {
        parts.available = false;
        parts.reason = why.message;
    }
    (void)flags;   /* the availability facts are the same claim */
    return cordon_facts_compose_host(host, &parts, ret_facts_json, err);
}

/* ---- state ---------------------------------------------------------------- */

static int hello_state_paths(struct hello_state *st, const char *id, struct cordon_error *err)
{
    int r = cordon_execution_id_check("execution_id", id, err);

    if (r == 0) {
        snprintf(st->execution_id, sizeof(st->execution_id), "%s", id);
        snprintf(st->dir, sizeof(st->dir), "%s/%s", HELLO_ROOT, id);
        snprintf(st->workspace, sizeof(st->workspace), "%s/workspace", st->dir);
    }
    return r;
}

/* The state is input: the uid must be the one the pool holds for the id.
 * Without full, only the id is read; with it, the workspace is opened. */
static int hello_state_parse(const struct cordon_resource *res, const char *json, bool full,
                             struct hello_state *ret, struct cordon_error *err)
{
    struct hello_state st = { .ws_fd = -1 };
    cJSON *doc = NULL;
    int r = cordon_json_parse_object("state", json, HELLO_DOC_MAX, &doc, err);

    if (r == 0)
        r = hello_state_paths(&st, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "execution_id")),
                              err);
    if (r == 0 && full &&
        (r = cordon_spec_state_from_json(doc, &st.kept, err)) == 0 &&
        (r = cordon_env_from_json(cJSON_GetObjectItemCaseSensitive(doc, "environment"),
                                  "state.environment", &st.environment, err)) == 0 &&
        (r = cordon_uid_held(NULL, res->host->host_instance_id, st.execution_id, &st.uid, err)) == 0)
        r = cordon_error_set(err, CORDON_E_NOT_FOUND, 0,
                             "state: execution %s holds no uid (terminated?)", st.execution_id);
    if (r > 0 && (st.ws_fd = open(st.workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        r = cordon_error_set(err, errno == ENOENT ? CORDON_E_NOT_FOUND : CORDON_E_IO, errno,
                             "workspace: %s: %s", st.workspace, strerror(errno));
    cJSON_Delete(doc);
    if (r >= 0) {
        *ret = st;
        return 0;
    }
    cordon_env_clear(&st.environment);
    return r;
}

static void hello_state_clear(struct hello_state *st)
{
    if (st->ws_fd >= 0)
        close(st->ws_fd);
    cordon_env_clear(&st->environment);
}

/* ---- provision ------------------------------------------------------------ */

/* A directory of its own (mkdir is the existence check: one id cannot be
 * provisioned twice), a uid of the pool, the workspace by its layout. */
static int hello_provision(struct cordon_resource *res, const char *spec_json, char **ret_state_json,
                           struct cordon_error *err)
{
    struct hello_state st = { 0 };
    struct cordon_spec spec;
    struct cordon_spec_state kept = { 0 };
    cJSON *state = NULL;
    uid_t uid = 0;
    int dir_fd = -1, r;
    bool created = false, took_uid = false;

    if (res == NULL || ret_state_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "provision: resource and ret_state_json required");
    cordon_spec_init(&spec);
    /* The sdk refuses a network other than "none"; that one is not
     * enforced here: the facts say network "host", so no caller is misled. */
    r = cordon_spec_parse(spec_json, &spec, err);
    if (r == 0 && spec.image != NULL)
        r = cordon_error_set(err, CORDON_E_UNSUPPORTED, 0, "image: " HELLO_ID " runs on the host and takes no image");
    if (r == 0)
        r = cordon_spec_deadline(&spec, cordon_now_wall_ms(), &kept.expires_at_ms, err);
    if (r < 0 || (r = hello_state_paths(&st, spec.execution_id, err)) < 0)
        goto out;
    if (mkdir(st.dir, 0700) != 0) {
        r = cordon_error_set(err, errno == EEXIST ? CORDON_E_EXISTS : CORDON_E_IO, errno,
                             "execution_id: %s: %s", st.dir, strerror(errno));
        goto out;
    }
    created = true;
    if ((r = cordon_uid_take(NULL, res->host->host_instance_id, st.execution_id, &uid, err)) < 0)
        goto out;
    took_uid = true;
    if ((dir_fd = open(st.dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 || fchmod(dir_fd, 0711) != 0)
        r = cordon_error_set(err, CORDON_E_IO, errno, "provision: %s: %s", st.dir, strerror(errno));
    else
        r = cordon_workspace_make(dir_fd, spec.layout == CORDON_SPEC_LAYOUT_CODE, true, uid, uid, err);
    if (r < 0)
        goto out;
    kept.resources = spec.resources, kept.layout = spec.layout;
    state = cJSON_CreateObject();
    if (state == NULL || !cJSON_AddStringToObject(state, "execution_id", st.execution_id) ||
        !cordon_spec_state_add(state, &kept) ||
        !cJSON_AddItemToObject(state, "environment", cordon_env_to_json(&spec.environment)))
        r = cordon_error_set(err, CORDON_E_NOMEM, 0, "state: out of memory");
    else
        r = cordon_json_print_host(res->host, state, ret_state_json, err);
out:
    if (dir_fd >= 0)
        close(dir_fd);
    if (r < 0 && created)
        cordon_fs_remove_tree_path(st.dir, NULL);
    if (r < 0 && took_uid)
        cordon_uid_give_back(NULL, res->host->host_instance_id, st.execution_id, NULL);
    cJSON_Delete(state);
    cordon_spec_clear(&spec);
    return r;
}

/* ---- exec ----------------------------------------------------------------- */

/*
 * In the child before execve (raw syscalls only), as root: the command's
 * own /tmp, /var/tmp and /dev/shm, a tmpfs each in a mount namespace of
 * its own (slave: nothing propagates to the host), gone with its last
 * process; on the host's a file would outlive terminate, owned by a uid
 * the next execution may get. Then the sdk's plan: rlimits, the uid.
 */
static int hello_child_setup(void *arg)
{
    static const char *const tmp_dirs[] = { "/tmp", "/var/tmp", "/dev/shm" };

    if (syscall(SYS_unshare, CLONE_NEWNS | CLONE_NEWIPC) != 0 ||
        syscall(SYS_mount, NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0)
        return errno;
    for (int i = 0; i < 3; i++)
        if (syscall(SYS_mount, "hello-tmp", tmp_dirs[i], "tmpfs", MS_NOSUID | MS_NODEV,
                    "size=16m,mode=1777") != 0 && errno != ENOENT)
            return errno;
    return cordon_child_plan_apply(arg);
}

static int hello_exec(struct cordon_resource *res, const char *state_json, const char *request_json,
                      const struct cordon_exec_io *io, char **ret_result_json,
                      struct cordon_error *err)
{
    struct hello_state st = { .ws_fd = -1 };
    struct cordon_exec_plan plan = { 0 };
    struct cordon_child_plan child;
    int r = res != NULL ? hello_state_parse(res, state_json, true, &st, err)
                        : cordon_error_set(err, CORDON_E_INVALID, 0, "exec: resource required");

    if (r < 0)
        return r;
    {
        /* cwd and every workspace_env directory inside the workspace,
         * never through a link, the directories made the sandbox user's. */
        struct cordon_exec_place place = {
            .ws_fd = st.ws_fd, .ws_path = st.workspace, .path = "/usr/local/bin:/usr/bin:/bin",
            .env = &st.environment, .code_layout = st.kept.layout == CORDON_SPEC_LAYOUT_CODE,
            .chown = true, .uid = st.uid, .gid = st.uid,
        };

        if ((r = cordon_exec_plan_build(&place, request_json, &plan, err)) < 0)
            goto out;
    }
    cordon_child_plan_init(&child, &st.kept.resources, true, st.uid, st.uid);
    r = cordon_exec_plan_run(res->host, &plan, io, st.kept.expires_at_ms, hello_child_setup, &child,
                             ret_result_json, err);
    /* The runner killed the process group; what left it with setsid()
     * still has the execution's uid, which is its alone. */
    cordon_uid_sweep(st.uid);
out:
    cordon_exec_plan_clear(&plan);
    hello_state_clear(&st);
    return r;
}

/* ---- files in and out ----------------------------------------------------- */

/* The four file slots are the sdk's: it lands what goes into source/
 * (layout "code") root's and read-only, the rest the sandbox user's, and
 * never follows a link on the way out. */
static int hello_workspace(struct cordon_resource *res, const char *state_json,
                           struct cordon_workspace *ret, struct cordon_error *err)
{
    struct hello_state st = { .ws_fd = -1 };
    int r = hello_state_parse(res, state_json, true, &st, err);

    if (r == 0) {
        ret->fd = st.ws_fd;   /* the sdk closes it */
        st.ws_fd = -1;
        ret->owner = (struct cordon_workspace_owner){ st.kept.layout == CORDON_SPEC_LAYOUT_CODE, true,
                                                      st.uid, st.uid };
        ret->import_max_bytes = st.kept.resources.disk_bytes;
        ret->export_max_bytes = st.kept.resources.disk_bytes;
    }
    hello_state_clear(&st);
    return r;
}

CORDON_WORKSPACE_SLOTS(hello, hello_workspace)

/* ---- terminate and reclaim ------------------------------------------------ */

/* Kill every process of the execution's uid, remove its directory, and
 * only then give the uid back. Nothing there is success. */
static int hello_reclaim(struct cordon_resource *res, const char *id, struct cordon_error *err)
{
    struct hello_state st = { 0 };
    uid_t uid;
    int r = res != NULL ? hello_state_paths(&st, id, err)
                        : cordon_error_set(err, CORDON_E_INVALID, 0, "reclaim: resource required");

    if (r == 0 && (r = cordon_uid_held(NULL, res->host->host_instance_id, id, &uid, err)) == 1)
        cordon_uid_sweep(uid);
    if (r >= 0 && (r = cordon_fs_remove_tree_path(st.dir, err)) == 0)
        r = cordon_uid_give_back(NULL, res->host->host_instance_id, id, err);
    return r;
}

/* The id is enough: terminate works from every state. */
static int hello_terminate(struct cordon_resource *res, const char *state_json, struct cordon_error *err)
{
    struct hello_state st = { .ws_fd = -1 };
    int r = res != NULL ? hello_state_parse(res, state_json, false, &st, err)
                        : cordon_error_set(err, CORDON_E_INVALID, 0, "terminate: resource required");

    return r < 0 ? r : hello_reclaim(res, st.execution_id, err);
}

/* ---- entry point ---------------------------------------------------------- */

static const struct cordon_provider_v1 hello_provider = {
    .abi_version = CORDON_ABI_VERSION,
    .struct_size = sizeof(struct cordon_provider_v1),
    .provider_id = HELLO_ID,
    .version = "0.2.0",
    .supported_kinds = hello_kinds,
    .probe = hello_probe, .ensure = hello_ensure, .release = hello_release,
    .provision = hello_provision, .exec = hello_exec,
    .terminate = hello_terminate, .reclaim = hello_reclaim,
    .import_tar = hello_import_tar, .export_tar = hello_export_tar,
    .import_files = hello_import_files, .export_files = hello_export_files,
};

CORDON_PROVIDER_DEFINE(hello_provider)
