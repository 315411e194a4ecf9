/*
 * hello.so: a small cordon provider built out of tree on the SDK alone.
 *
 * It runs argv on the host with the SDK's runner, as a uid of its own per
 * execution (taken from the SDK's uid pool), with every capability
 * dropped, no_new_privs and rlimits, and a private /tmp, /var/tmp and
 * /dev/shm in a mount namespace of its own. It contains nothing else: no
 * other namespace, no seccomp filter, the host's filesystem and network. Its
 * probe claims just that (privilege_escalation_blocked alone, network
 * "host"); the host observes a sandbox of its own to judge the claim and
 * to find the toolchains, so --isolation required never selects it. Like trusted-local
 * it runs only with the caller's explicit allow_unsafe_local.
 *
 * It needs root (the uid pool, the switch to the sandbox uid); without it
 * the probe says unavailable and why.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include <cjson/cJSON.h>

#include <cordon/provider.h>
#include <cordon/sdk/bounds.h>
#include <cordon/sdk/facts.h>
#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/json.h>
#include <cordon/sdk/path.h>
#include <cordon/sdk/relay.h>
#include <cordon/sdk/request.h>
#include <cordon/sdk/runner.h>
#include <cordon/sdk/spec.h>
#include <cordon/sdk/uid.h>
#include <cordon/sdk/workspace.h>

#define HELLO_ID "hello"                 /* must equal the file name: hello.so */
#define HELLO_ROOT "/run/cordon/hello"   /* <root>/<execution id>/workspace */
#define HELLO_PATH "/usr/local/bin:/usr/bin:/bin"
#define HELLO_DOC_MAX (1u << 20)         /* config and state */

struct cordon_resource {
    const struct cordon_host_v1 *host;
};

/* An execution, parsed back from its state. */
struct hello_state {
    char execution_id[CORDON_EXECUTION_ID_MAX + 1];
    char dir[512];              /* HELLO_ROOT/<id> */
    char workspace[600];        /* <dir>/workspace */
    uid_t uid;
    bool code_layout;
    struct cordon_spec_state kept;   /* the spec's resources and deadline */
    struct cordon_env environment;   /* the spec's, for every exec */
};

/* What the child applies before execve, prepared by the parent. */
struct hello_child {
    struct { int resource; rlim_t value; } limits[7];
    int n_limits;
    uid_t uid;
    pid_t parent;
};

static const char *const hello_kinds[] = { "code_execution", NULL };
/* Given to each command afresh (hello_child_setup), HELLO_TMP_OPTIONS each. */
static const char *const hello_tmp_dirs[] = { "/tmp", "/var/tmp", "/dev/shm", NULL };
#define HELLO_TMP_OPTIONS "size=16m,mode=1777"
static const char *const hello_modes[] = { "snapshot", NULL };
/* What the child's rlimits hold (pids: RLIMIT_NPROC of a uid of its own),
 * and what the host enforces for every provider (runtime and output). */
static const char *const hello_limits[] = { "memory_bytes", "pids", "runtime_ms",
                                            "max_output_bytes", NULL };

static int hello_nomem(struct cordon_error *err, const char *what)
{
    return cordon_error_set(err, CORDON_E_NOMEM, 0, "%s: out of memory", what);
}

/* ---- config and resource -------------------------------------------------- */

/* The only key is the caller's consent; any other key is refused. */
static int hello_config_parse(const char *json, bool *ret_consent, struct cordon_error *err)
{
    cJSON *doc = NULL;
    const cJSON *item;
    bool consent = false;
    int r = cordon_json_parse_object("config", json != NULL ? json : "{}", HELLO_DOC_MAX, &doc, err);

    if (r < 0)
        return r;
    cJSON_ArrayForEach(item, doc) {
        if (strcmp(item->string, "allow_unsafe_local") == 0 && cJSON_IsBool(item)) {
            consent = cJSON_IsTrue(item);
        } else {
            r = cordon_error_set(err, CORDON_E_INVALID, 0,
                                 "config.%.64s: unknown key (" HELLO_ID " takes only "
                                 "allow_unsafe_local, a boolean)", item->string);
            break;
        }
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

static int hello_resource_new(const struct cordon_host_v1 *host, const char *config_json,
                              bool need_consent, struct cordon_resource **ret,
                              struct cordon_error *err)
{
    struct cordon_resource *res;
    bool consent = false;
    int r = hello_config_parse(config_json, &consent, err);

    if (r < 0)
        return r;
    if (need_consent && !consent)
        return cordon_error_set(err, CORDON_E_DENIED, 0,
                                "allow_unsafe_local: " HELLO_ID " runs code on the host without "
                                "isolation and needs the caller's explicit consent");
    if ((r = hello_root_prepare(err)) < 0)
        return r;
    res = calloc(1, sizeof(*res));
    if (res == NULL)
        return hello_nomem(err, "ensure");
    res->host = host;
    *ret = res;
    return 0;
}

static int hello_ensure(const struct cordon_host_v1 *host, const char *config_json,
                        struct cordon_resource **ret_resource, struct cordon_error *err)
{
    if (host == NULL || ret_resource == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "ensure: host and ret_resource required");
    return hello_resource_new(host, config_json, true, ret_resource, err);
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
        .struct_size = sizeof(parts),
        .provider_id = HELLO_ID,
        .supported_kinds = hello_kinds,
        .available = true,
        .reason = "ready",
        .safety_class = "trusted_local",   /* what it is: host execution */
        .mechanism = "host_process",
        .workspace_access_modes = hello_modes,
        .limits_enforced = hello_limits,
        /* json.md §3: the child's rlimits, the host's deadline and budget. */
        .limits_enforcement_json = "{\"cpus\":\"none\",\"memory_bytes\":\"rlimit\","
                                   "\"disk_bytes\":\"rlimit\",\"pids\":\"rlimit\","
                                   "\"runtime_ms\":\"host\",\"max_output_bytes\":\"host\"}",
        .claims = CORDON_CLAIM_PRIVESC_BLOCKED,   /* a uid of its own, no capability */
        .network = "host",
    };
    struct cordon_error why;
    bool consent;
    int r;

    if (host == NULL || ret_facts_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "probe: host and ret_facts_json required");
    /* A config we cannot read is an error; a host we cannot use is facts. */
    if ((r = hello_config_parse(config_json, &consent, err)) < 0)
        return r;
    cordon_error_init(&why);
    if (hello_root_prepare(&why) < 0) {
        parts.available = false;
        parts.reason = why.message;
    }
    (void)flags;   /* the availability facts are the same claim */
    return cordon_facts_compose_host(host, &parts, ret_facts_json, err);
}

/* ---- state ---------------------------------------------------------------- */

static void hello_state_clear(struct hello_state *st)
{
    cordon_env_clear(&st->environment);
    memset(st, 0, sizeof(*st));
}

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

/* The state is input: the uid must be the one the pool holds for the id. */
static int hello_state_parse(const struct cordon_resource *res, const char *json, bool full,
                             struct hello_state *ret, struct cordon_error *err)
{
    struct hello_state st = { 0 };
    cJSON *doc = NULL;
    const cJSON *item;
    uid_t held = 0;
    int r = cordon_json_parse_object("state", json, HELLO_DOC_MAX, &doc, err);

    if (r < 0)
        goto out;
    item = cJSON_GetObjectItemCaseSensitive(doc, "execution_id");
    if ((r = hello_state_paths(&st, cJSON_GetStringValue(item), err)) < 0 || !full)
        goto out;
    if ((r = cordon_spec_state_from_json(doc, &st.kept, err)) < 0 ||
        (r = cordon_env_from_json(cJSON_GetObjectItemCaseSensitive(doc, "environment"),
                                  "state.environment", &st.environment, err)) < 0)
        goto out;
    st.code_layout = st.kept.layout == CORDON_SPEC_LAYOUT_CODE;
    r = cordon_uid_held(NULL, res->host->host_instance_id, st.execution_id, &held, err);
    if (r == 0)
        r = cordon_error_set(err, CORDON_E_NOT_FOUND, 0,
                             "state: execution %s holds no uid (terminated?)", st.execution_id);
    if (r < 0)
        goto out;
    st.uid = held;
    r = 0;
out:
    if (r == 0) {
        *ret = st;
        memset(&st, 0, sizeof(st));
    }
    hello_state_clear(&st);
    cJSON_Delete(doc);
    return r;
}

static int hello_open_workspace(const struct hello_state *st, int *ret_fd, struct cordon_error *err)
{
    int fd = open(st->workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

    if (fd < 0)
        return cordon_error_set(err, errno == ENOENT ? CORDON_E_NOT_FOUND : CORDON_E_IO, errno,
                                "workspace: %s: %s", st->workspace, strerror(errno));
    *ret_fd = fd;
    return 0;
}

/* ---- processes left behind ------------------------------------------------ */

/*
 * The runner kills the process group; a child that called setsid() left
 * it. The uid is this execution's alone, so every process of it goes,
 * wherever it went. Each is pinned with a pidfd and checked again before
 * the signal, so a reused pid is never hit.
 */
static void hello_sweep(uid_t uid)
{
    int pass;

    for (pass = 0; pass < 8 && cordon_uid_in_pool(uid); pass++) {
        DIR *proc = opendir("/proc");
        struct dirent *de;
        int killed = 0;

        if (proc == NULL)
            return;
        while ((de = readdir(proc)) != NULL) {
            char path[64], *end;
            struct stat st;
            long pid = strtol(de->d_name, &end, 10);
            int pidfd;

            if (*end != '\0' || pid <= 0)
                continue;
            snprintf(path, sizeof(path), "/proc/%ld", pid);
            if (stat(path, &st) != 0 || st.st_uid != uid)
                continue;
            pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
            if (pidfd < 0)
                continue;
            if (stat(path, &st) == 0 && st.st_uid == uid &&
                syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) == 0)
                killed++;
            close(pidfd);
        }
        closedir(proc);
        if (killed == 0)
            return;
        usleep(10000);
    }
}

/* ---- provision ------------------------------------------------------------ */

static int hello_mkdir(int dirfd, const char *name, uid_t owner, struct cordon_error *err)
{
    int fd, r = 0;

    if (mkdirat(dirfd, name, 0700) != 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "provision: mkdir %s: %s", name,
                                strerror(errno));
    fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fchown(fd, owner, owner) != 0 || fchmod(fd, 0755) != 0)
        r = cordon_error_set(err, CORDON_E_IO, errno, "provision: %s: %s", name, strerror(errno));
    if (fd >= 0)
        close(fd);
    return r;
}

/* Layout "code": the workspace and source/ stay root's, build/, output/
 * and logs/ are the sandbox user's. Layout "host": all of it is. */
static int hello_workspace_make(int dir_fd, bool code, uid_t uid, struct cordon_error *err)
{
    static const char *const user_dirs[] = { "build", "output", "logs" };
    int ws_fd, r = hello_mkdir(dir_fd, "workspace", code ? 0 : uid, err);
    size_t i;

    if (r < 0 || !code)
        return r;
    ws_fd = openat(dir_fd, "workspace", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (ws_fd < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "provision: workspace: %s", strerror(errno));
    r = hello_mkdir(ws_fd, "source", 0, err);
    for (i = 0; r == 0 && i < sizeof(user_dirs) / sizeof(user_dirs[0]); i++)
        r = hello_mkdir(ws_fd, user_dirs[i], uid, err);
    close(ws_fd);
    return r;
}

static int hello_provision(struct cordon_resource *res, const char *spec_json,
                           char **ret_state_json, struct cordon_error *err)
{
    struct cordon_spec spec;
    struct hello_state st = { 0 };
    cJSON *state = NULL;
    struct cordon_spec_state kept = { 0 };
    uid_t uid = 0;
    int dir_fd = -1, r;
    bool created = false, took_uid = false;

    if (res == NULL || ret_state_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "provision: resource and ret_state_json required");
    cordon_spec_init(&spec);
    /* The sdk refuses a network other than "none"; that one is not
     * enforced here: the facts say network "host", as observed, so no
     * caller is misled. */
    r = cordon_spec_parse(spec_json, &spec, err);
    if (r == 0 && spec.image != NULL)
        r = cordon_error_set(err, CORDON_E_UNSUPPORTED, 0, "image: " HELLO_ID " runs on the host and takes no image");
    if (r == 0)
        r = cordon_spec_deadline(&spec, cordon_now_wall_ms(), &kept.expires_at_ms, err);
    if (r < 0 || (r = hello_state_paths(&st, spec.execution_id, err)) < 0)
        goto out;
    /* mkdir is the existence check: one id cannot be provisioned twice. */
    if (mkdir(st.dir, 0700) != 0) {
        r = cordon_error_set(err, errno == EEXIST ? CORDON_E_EXISTS : CORDON_E_IO, errno,
                             "execution_id: %s: %s", st.dir, strerror(errno));
        goto out;
    }
    created = true;
    if ((r = cordon_uid_take(NULL, res->host->host_instance_id, st.execution_id, &uid, err)) < 0)
        goto out;
    took_uid = true;
    dir_fd = open(st.dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir_fd < 0 || fchmod(dir_fd, 0711) != 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "provision: %s: %s", st.dir, strerror(errno));
        goto out;
    }
    if ((r = hello_workspace_make(dir_fd, spec.layout == CORDON_SPEC_LAYOUT_CODE, uid, err)) < 0)
        goto out;
    kept.resources = spec.resources;
    kept.layout = spec.layout;
    state = cJSON_CreateObject();
    if (state == NULL || !cJSON_AddStringToObject(state, "execution_id", st.execution_id) ||
        !cordon_spec_state_add(state, &kept) ||
        !cJSON_AddItemToObject(state, "environment", cordon_env_to_json(&spec.environment))) {
        r = hello_nomem(err, "state");
        goto out;
    }
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

/* A request as this provider runs it: the sdk's parse, then the cwd and
 * the environment resolved against the execution. */
struct hello_request {
    struct cordon_exec_request req;
    char **envp;                /* cordon_env_envp's: one block */
    char cwd[1200];
};

static void hello_request_clear(struct hello_request *rq)
{
    cordon_exec_request_clear(&rq->req);
    free(rq->envp);
    memset(rq, 0, sizeof(*rq));
}

/* The absolute path inside the execution of rel, a normalised directory
 * of the workspace. */
static void hello_workspace_path(const struct hello_state *st, const char *rel, char *buf,
                                 size_t size)
{
    snprintf(buf, size, "%s%s%s", st->workspace, rel[0] != '\0' ? "/" : "", rel);
}

/* cwd (an existing directory in the workspace, never through a link) and
 * the environment: PATH, the spec's, the request's, then the
 * workspace_env directories (made the sandbox user's). */
static int hello_request_parse(const struct hello_state *st, int ws_fd, const char *json,
                               struct hello_request *ret, struct cordon_error *err)
{
    struct hello_request rq = { 0 };
    struct cordon_env env;
    size_t i;
    int fd = -1, r;

    cordon_env_init(&env);
    cordon_exec_request_init(&rq.req);
    r = cordon_exec_request_parse(json, &rq.req, err);
    if (r == 0)
        r = cordon_fs_walk_dirs(ws_fd, "cwd", rq.req.cwd, false, false, 0, 0, &fd, err);
    if (r == 0)
        r = cordon_env_set(&env, "PATH", HELLO_PATH, err);
    for (i = 0; r == 0 && i < st->environment.n; i++)
        r = cordon_env_set(&env, st->environment.vars[i].name, st->environment.vars[i].value, err);
    for (i = 0; r == 0 && i < rq.req.env.n; i++)
        r = cordon_env_set(&env, rq.req.env.vars[i].name, rq.req.env.vars[i].value, err);
    for (i = 0; r == 0 && i < rq.req.workspace_env.n; i++) {
        const struct cordon_env_var *w = &rq.req.workspace_env.vars[i];
        /* Never a sandbox-owned directory inside the read-only source/. */
        bool in_source = st->code_layout && cordon_path_is_under(w->value, "source");
        char field[300], value[1200];
        int dfd = -1;

        snprintf(field, sizeof(field), "workspace_env.%.255s", w->name);
        r = cordon_fs_walk_dirs(ws_fd, field, w->value, !in_source, true, st->uid, st->uid, &dfd,
                                err);
        if (r == 0) {
            close(dfd);
            hello_workspace_path(st, w->value, value, sizeof(value));
            r = cordon_env_set(&env, w->name, value, err);
        }
    }
    if (r == 0 && (rq.envp = cordon_env_envp(&env)) == NULL)
        r = hello_nomem(err, "env");
    if (r == 0) {
        hello_workspace_path(st, rq.req.cwd, rq.cwd, sizeof(rq.cwd));
        *ret = rq;
        memset(&rq, 0, sizeof(rq));
    }
    if (fd >= 0)
        close(fd);
    cordon_env_clear(&env);
    hello_request_clear(&rq);
    return r;
}

/*
 * In the child, right before execve (async-signal-safe: raw syscalls
 * only): every rlimit, the bounding set emptied, groups, gid and uid
 * switched, death with the parent, no capabilities, no_new_privs.
 */
static int hello_child_setup(void *arg)
{
    const struct hello_child *c = arg;
    struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[2] = { { 0, 0, 0 }, { 0, 0, 0 } };
    int i;

    /*
     * The command's own /tmp, /var/tmp and /dev/shm: a small tmpfs each in a
     * mount namespace of its own (slave: nothing propagates to the host),
     * gone with the command's last process. On the host's, a file would
     * outlive terminate, owned by a uid the next execution may be given. A
     * target the host lacks is left alone.
     */
    if (syscall(SYS_unshare, CLONE_NEWNS | CLONE_NEWIPC) != 0 ||
        syscall(SYS_mount, NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0)
        return errno;
    for (i = 0; hello_tmp_dirs[i] != NULL; i++)
        if (syscall(SYS_mount, "hello-tmp", hello_tmp_dirs[i], "tmpfs", MS_NOSUID | MS_NODEV,
                    HELLO_TMP_OPTIONS) != 0 && errno != ENOENT)
            return errno;
    for (i = 0; i < c->n_limits; i++) {
        struct rlimit set = { c->limits[i].value, c->limits[i].value };

        if (syscall(SYS_prlimit64, 0, c->limits[i].resource, &set, NULL) != 0)
            return errno;
    }
    for (i = 0; i < 64; i++)
        if (syscall(SYS_prctl, PR_CAPBSET_DROP, (unsigned long)i, 0UL, 0UL, 0UL) != 0 &&
            errno != EINVAL)
            return errno;
    if (syscall(SYS_setgroups, 0, NULL) != 0 ||
        syscall(SYS_setresgid, c->uid, c->uid, c->uid) != 0 ||
        syscall(SYS_setresuid, c->uid, c->uid, c->uid) != 0)
        return errno;
    /* Set after the uid change, which clears it; a parent already gone is
     * caught by getppid. */
    if (syscall(SYS_prctl, PR_SET_PDEATHSIG, (unsigned long)SIGKILL, 0UL, 0UL, 0UL) != 0)
        return errno;
    if ((pid_t)syscall(SYS_getppid) != c->parent)
        return ESRCH;
    if (syscall(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0UL, 0UL, 0UL) != 0 &&
        errno != EINVAL)
        return errno;
    if (syscall(SYS_capset, &hdr, data) != 0 ||
        syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL) != 0)
        return errno;
    return 0;
}

static void hello_child_prepare(const struct hello_state *st, struct hello_child *c)
{
    /* RLIMIT_DATA, not RLIMIT_AS: node and go reserve large virtual ranges.
     * Every one is set, so nothing is inherited from the caller. */
    const struct { int resource; rlim_t value; } limits[] = {
        { RLIMIT_DATA, (rlim_t)st->kept.resources.memory_bytes },
        { RLIMIT_FSIZE, (rlim_t)st->kept.resources.disk_bytes },
        { RLIMIT_CPU, (rlim_t)(st->kept.resources.runtime_ms / 1000 + 2) },
        { RLIMIT_CORE, 0 },
        { RLIMIT_NOFILE, 1024 },
        { RLIMIT_STACK, 8u << 20 },
        { RLIMIT_NPROC, (rlim_t)st->kept.resources.pids },   /* the uid is this execution's alone */
    };
    size_t i;

    memset(c, 0, sizeof(*c));
    for (i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
        c->limits[i].resource = limits[i].resource;
        c->limits[i].value = limits[i].value;
    }
    c->n_limits = (int)i;
    c->uid = st->uid;
    c->parent = getpid();
}

static int hello_result(const struct cordon_host_v1 *host, const struct cordon_exec_outcome *o,
                        char **ret, struct cordon_error *err)
{
    struct cordon_exec_result res;
    int r = cordon_exec_result_from_outcome(o, &res, err);

    return r < 0 ? r : cordon_exec_result_print_host(host, &res, ret, err);
}

static int hello_exec(struct cordon_resource *res, const char *state_json, const char *request_json,
                      const struct cordon_exec_io *io, char **ret_result_json,
                      struct cordon_error *err)
{
    struct hello_state st = { 0 };
    struct hello_request rq = { 0 };
    struct hello_child child;
    struct cordon_runner_opts opts;
    struct cordon_exec_outcome outcome = { 0 };
    struct cordon_relay *relay = NULL;
    uint64_t timeout;
    int ws_fd = -1, null_out = -1, stdin_fd = -1, r;
    bool ran = false;

    if (res == NULL || io == NULL || ret_result_json == NULL ||
        io->struct_size < CORDON_EXEC_IO_V1_0_SIZE)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "exec: resource, io and ret_result_json required");
    if ((r = hello_state_parse(res, state_json, true, &st, err)) < 0 ||
        (r = hello_open_workspace(&st, &ws_fd, err)) < 0 ||
        (r = hello_request_parse(&st, ws_fd, request_json, &rq, err)) < 0)
        goto out;
    /* A backstop only: the host keeps the clock and fires cancel_fd. */
    r = cordon_exec_backstop_ms(st.kept.expires_at_ms, rq.req.timeout_ms, cordon_now_wall_ms(),
                                &timeout, err);
    if (r < 0)
        goto out;
    if (io->stdout_fd < 0 || io->stderr_fd < 0) {
        null_out = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (null_out < 0) {
            r = cordon_error_set(err, CORDON_E_IO, errno, "exec: /dev/null: %s", strerror(errno));
            goto out;
        }
    }
    /* A terminal or a directory as stdin is relayed, never handed over. */
    if (io->stdin_fd >= 0 && (r = cordon_relay_open(io->stdin_fd, 0, &stdin_fd, &relay, err)) < 0)
        goto out;
    hello_child_prepare(&st, &child);
    cordon_runner_opts_init(&opts);
    opts.argv = (const char *const *)rq.req.argv;
    opts.envp = (const char *const *)rq.envp;
    opts.cwd = rq.cwd;
    opts.stdin_fd = stdin_fd;
    opts.stdout_fd = io->stdout_fd >= 0 ? io->stdout_fd : null_out;
    opts.stderr_fd = io->stderr_fd >= 0 ? io->stderr_fd : null_out;
    opts.timeout_ms = timeout;
    opts.cancel_fd = io->cancel_fd;
    opts.child_setup = hello_child_setup;
    opts.child_setup_arg = &child;
    ran = true;
    r = cordon_runner_run(&opts, &outcome, err);
    cordon_relay_close(relay);
    relay = NULL;
    if (r == 0)
        r = hello_result(res->host, &outcome, ret_result_json, err);
out:
    cordon_relay_close(relay);
    if (ran)
        hello_sweep(st.uid);
    cordon_exec_outcome_clear(&outcome);
    if (null_out >= 0)
        close(null_out);
    if (ws_fd >= 0)
        close(ws_fd);
    hello_request_clear(&rq);
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
    struct hello_state st = { 0 };
    int r = hello_state_parse(res, state_json, true, &st, err);

    if (r == 0)
        r = hello_open_workspace(&st, &ret->fd, err);
    if (r == 0) {
        ret->owner = (struct cordon_workspace_owner){ st.code_layout, true, st.uid, st.uid };
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
static int hello_destroy(const struct cordon_resource *res, const char *id, struct cordon_error *err)
{
    struct hello_state st = { 0 };
    uid_t uid;
    int r = hello_state_paths(&st, id, err);

    if (r < 0)
        return r;
    r = cordon_uid_held(NULL, res->host->host_instance_id, id, &uid, err);
    if (r < 0)
        return r;
    if (r == 1)
        hello_sweep(uid);
    r = cordon_fs_remove_tree_path(st.dir, err);
    if (r == 0)
        r = cordon_uid_give_back(NULL, res->host->host_instance_id, id, err);
    return r;
}

static int hello_terminate(struct cordon_resource *res, const char *state_json,
                           struct cordon_error *err)
{
    struct hello_state st = { 0 };
    int r;

    if (res == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "terminate: resource required");
    /* The id is enough: terminate works from every state. */
    r = hello_state_parse(res, state_json, false, &st, err);
    if (r == 0)
        r = hello_destroy(res, st.execution_id, err);
    hello_state_clear(&st);
    return r;
}

static int hello_reclaim(struct cordon_resource *res, const char *execution_id,
                         struct cordon_error *err)
{
    if (res == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "reclaim: resource required");
    return hello_destroy(res, execution_id, err);
}

/* ---- entry point ---------------------------------------------------------- */

static const struct cordon_provider_v1 hello_provider = {
    .abi_version = CORDON_ABI_VERSION,
    .struct_size = sizeof(struct cordon_provider_v1),
    .provider_id = HELLO_ID,
    .version = "0.1.0",
    .supported_kinds = hello_kinds,
    .probe = hello_probe,
    .ensure = hello_ensure,
    .release = hello_release,
    .provision = hello_provision,
    .exec = hello_exec,
    .import_tar = hello_import_tar,
    .export_tar = hello_export_tar,
    .terminate = hello_terminate,
    .reclaim = hello_reclaim,
    .import_files = hello_import_files,
    .export_files = hello_export_files,
};

CORDON_PROVIDER_DEFINE(hello_provider)
