/*
 * docker: the Docker provider (cordon-provider-docker(7)), over the Engine API.
 *
 * This file holds the probe, the resource, terminate and reclaim, and the
 * vtable; the config, provisioning, exec and the archive calls live in
 * their own files (docker.h lists them). Nothing is global but libcurl,
 * loaded once (curl-lazy.c), and the lock that publishes an engine's API
 * version: every call works from the resource and the state JSON.
 *
 * The runtime-variant seam: "runtime" in the config names a runtime the
 * daemon must have registered (docker info's Runtimes). It becomes
 * HostConfig.Runtime of every container; when the daemon does not know it
 * the probe says unavailable ("runtime_unregistered") and ensure refuses.
 * The default runtime is never used in its place.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cordon/sdk/bounds.h>
#include <cordon/sdk/facts.h>
#include <cordon/sdk/host.h>
#include "plugins/docker/docker.h"


static const char *const kinds[] = { "code_execution", NULL };
static const char *const access_modes[] = { "snapshot", NULL };

/* ---- helpers shared by the provider's files ------------------------------ */

int dk__nomem(struct cordon_error *err, const char *what)
{
    return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "%s: out of memory", what);
}

void dk__sleep_ms(unsigned ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

ssize_t dk__read_proc(pid_t pid, const char *name, char *buf, size_t size)
{
    char path[64];
    ssize_t n = 0, got = 0;
    int fd;

    snprintf(path, sizeof(path), "/proc/%ld/%s", (long)pid, name);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    /* Read to the end: one read of cmdline or status may stop short. */
    while ((size_t)got + 1 < size) {
        n = read(fd, buf + got, size - 1 - (size_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += n;
    }
    close(fd);
    buf[got] = '\0';
    return n < 0 && got == 0 ? -1 : got;
}

/* ---- what the daemon says about itself ------------------------------------ */

/* GET /info: the runtime must be registered (never replaced by the
 * default), and the kernel features behind the limits must be there. */
struct daemon_facts {
    cJSON *info;               /* the /info document */
    char server[64];
    bool runtime_ok;
    char detail[512];          /* why not, when !runtime_ok or !limits_ok */
    bool limits_ok;
};

static void daemon_facts_clear(struct daemon_facts *df)
{
    cJSON_Delete(df->info);
    memset(df, 0, sizeof(*df));
}

static int daemon_facts_read(struct dk_conn *conn, const struct dk_config *cfg,
                             struct daemon_facts *df, struct cordon_error *err)
{
    static const char *const needed[] = { "MemoryLimit", "SwapLimit", "PidsLimit",
                                          "CpuCfsQuota" };
    const cJSON *runtimes, *rt;
    size_t used = 0;
    int r;

    /* /info is the one place the daemon lists its runtimes and kernel features. */
    r = dk__api(conn, "GET", "/info", NULL, "GET /info", NULL, &df->info, err);
    if (r < 0)
        return r;
    runtimes = cJSON_GetObjectItemCaseSensitive(df->info, "Runtimes");
    df->runtime_ok = cfg->runtime == NULL ||
                     cJSON_GetObjectItemCaseSensitive(runtimes, cfg->runtime) != NULL;
    if (!df->runtime_ok) {
        used = (size_t)snprintf(df->detail, sizeof(df->detail),
                                "runtime \"%s\" is not registered in the daemon at %s "
                                "(registered:", cfg->runtime, cfg->socket);
        cJSON_ArrayForEach(rt, runtimes)
            if (used < sizeof(df->detail))
                used += (size_t)snprintf(df->detail + used, sizeof(df->detail) - used, " %s",
                                         rt->string);
        if (used < sizeof(df->detail))
            snprintf(df->detail + used, sizeof(df->detail) - used,
                     "); register it (dockerd --add-runtime or daemon.json \"runtimes\"): the "
                     "default runtime is never used in its place");
        return 0;
    }
    df->limits_ok = true;
    for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
        if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(df->info, needed[i]))) {
            df->limits_ok = false;
            snprintf(df->detail, sizeof(df->detail),
                     "the daemon reports %s false: the kernel cannot enforce a limit this "
                     "provider applies (memory with swap, pids, cpu quota)", needed[i]);
            break;
        }
    }
    return 0;
}

/* GET /images/<ref>/json: present, and its id. ret_id holds 80 bytes. */
static int image_inspect(struct dk_conn *conn, const char *ref, char *ret_id,
                         struct cordon_error *err)
{
    char *esc = dk__escape(ref), path[400];
    cJSON *doc = NULL;
    long status = 0;
    int r;

    if (esc == NULL)
        return dk__nomem(err, "image");
    snprintf(path, sizeof(path), "/images/%s/json", esc);
    free(esc);
    r = dk__api(conn, "GET", path, NULL, "image", &status, &doc, err);
    if (r == CORDON_E_NOT_FOUND)
        r = cordon_error_set(err, CORDON_E_NOT_FOUND, 0,
                             "image: \"%s\" is not present in the daemon; load or pull it first "
                             "(this provider never pulls)", ref);
    if (r == 0) {
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "Id"));

        snprintf(ret_id, 80, "%s", id != NULL ? id : "");
    }
    cJSON_Delete(doc);
    return r;
}

/* ---- resource ------------------------------------------------------------- */

static void resource_free(struct cordon_resource *res)
{
    if (res == NULL)
        return;
    dk__config_clear(&res->cfg);
    free(res->spool_dir);
    free(res);
}

/* <state_dir>/providers/docker/spool when the host has a state dir we can
 * use, else $TMPDIR or /tmp: spools are O_TMPFILE and leave nothing. */
static char *spool_dir_choose(const struct cordon_host_v1 *host)
{
    const char *sd = CORDON_HOST_HAS(host, state_dir) ? host->state_dir : NULL;
    const char *tmp = getenv("TMPDIR");
    char *dir = NULL;

    /* A provider keeps files under <state_dir>/providers/<id>/ only (provider.h). */
    if (sd != NULL && sd[0] == '/' && asprintf(&dir, "%s/providers/" DK_ID "/spool", sd) >= 0) {
        char *p = dir;

        /* Each level 0700: the spools hold workspace bytes. */
        while ((p = strchr(p + 1, '/')) != NULL) {
            *p = '\0';
            if (p > dir + strlen(sd))
                mkdir(dir, 0700);
            *p = '/';
        }
        if (mkdir(dir, 0700) == 0 || errno == EEXIST)
            return dir;
        free(dir);
    }
    return strdup(tmp != NULL && tmp[0] == '/' ? tmp : "/tmp");
}

/*
 * The host's cordon-init, made the container's first process: as PID 1 of
 * the pid namespace it holds the deadline where nothing inside can stop it.
 * The daemon is local (a unix socket), so the host's path is the daemon's.
 */
static int check_init(const struct cordon_host_v1 *host, const char **ret,
                      struct cordon_error *err)
{
    const char *init = CORDON_HOST_HAS(host, init_path) ? host->init_path : NULL;
    struct stat st;

    if (init == NULL || init[0] != '/')
        return cordon_error_set(err, CORDON_E_UNAVAILABLE, 0,
                                "init: the host names no absolute cordon-init path (CORDON_INIT)");
    if (stat(init, &st) != 0 || !S_ISREG(st.st_mode) || access(init, X_OK) != 0)
        return cordon_error_set(err, CORDON_E_UNAVAILABLE, errno,
                                "init: %s is not an executable file (build cordon-init or set "
                                "CORDON_INIT)", init);
    *ret = init;
    return 0;
}

/* The daemon's socket is there and is a socket: the check ensure makes
 * without a call (a daemon that stopped behind it fails the first call). */
static int socket_check(const char *path, struct cordon_error *err)
{
    struct stat st;

    int e;

    if (stat(path, &st) != 0) {
        e = errno;
        return cordon_error_set(err, CORDON_E_UNAVAILABLE, e,
                                "socket: cannot connect to the Docker daemon at %s (%s); is "
                                "dockerd running?", path, strerror(e));
    }
    if (!S_ISSOCK(st.st_mode))
        return cordon_error_set(err, CORDON_E_UNAVAILABLE, 0,
                                "socket: cannot connect to the Docker daemon at %s (not a "
                                "socket); is dockerd running?", path);
    return 0;
}

/* Parse the config and check the daemon's socket; a runtime or an image
 * the config names is checked with the daemon. */
static int resource_new(const struct cordon_host_v1 *host, const char *config_json,
                        struct cordon_resource **ret, struct cordon_error *err)
{
    struct daemon_facts df = { 0 };
    struct cordon_resource *res;
    struct dk_conn *conn = NULL;
    char image_id[80];
    int r;

    res = calloc(1, sizeof(*res));
    if (res == NULL)
        return dk__nomem(err, "ensure");
    res->host = host;
    r = dk__config_parse(config_json, &res->cfg, err);
    if (r == 0)
        r = check_init(host, &res->init_path, err);
    if (r < 0)
        goto out;
    r = dk__engine_init(&res->engine, res->cfg.socket, err);
    res->engine.host = host;
    if (r == 0)
        r = socket_check(res->cfg.socket, err);
    /* Only what the config names needs the daemon's answer now. The API
     * version is chosen on the first call that needs it, and libcurl is
     * loaded then: an exec through the resident agent needs neither. */
    if (r == 0 && (res->cfg.runtime != NULL || res->cfg.image != NULL))
        r = dk__conn_open(&res->engine, &conn, err);
    if (r < 0)
        goto out;
    if (res->cfg.runtime != NULL) {
        r = daemon_facts_read(conn, &res->cfg, &df, err);
        if (r == 0 && !df.runtime_ok)
            r = cordon_error_set(err, CORDON_E_UNAVAILABLE, 0, "runtime_unregistered: %s",
                                 df.detail);
        if (r < 0)
            goto out;
    }
    if (res->cfg.image != NULL) {
        r = image_inspect(conn, res->cfg.image, image_id, err);
        if (r < 0)
            goto out;
    }
    res->spool_dir = spool_dir_choose(host);
    if (res->spool_dir == NULL) {
        r = dk__nomem(err, "ensure");
        goto out;
    }
    *ret = res;
    res = NULL;
out:
    daemon_facts_clear(&df);
    dk__conn_close(conn);
    resource_free(res);
    return r;
}

static int health_check(struct cordon_resource *res, struct cordon_error *err)
{
    struct dk_conn *conn = NULL;
    struct dk_reply reply = { 0 };
    struct dk_req rq;
    int r;

    r = dk__conn_open(&res->engine, &conn, err);
    if (r < 0)
        return r;
    dk__req_init(&rq, "GET", "/_ping");
    rq.unversioned = true;
    rq.timeout_ms = 10000;
    r = dk__conn_call(conn, &rq, &reply, err);
    if (r == 0 && reply.status != 200) {
        dk__reply_error(&reply, "GET /_ping", err);
        r = cordon_error_set(err, CORDON_E_UNAVAILABLE, 0, "socket %s: the daemon is not "
                             "healthy (ping answered %ld)", res->engine.socket, reply.status);
    }
    dk__reply_clear(&reply);
    dk__conn_close(conn);
    return r;
}

/* ---- probe ---------------------------------------------------------------- */

/* Facts of an unavailable provider: reason, the detail and what is known. */
static int facts_unavailable(const struct cordon_host_v1 *host, const char *reason,
                             const char *detail, cJSON *mech, char **ret, struct cordon_error *err)
{
    struct cordon_facts_parts parts = {
        .struct_size = sizeof(parts),
        .provider_id = DK_ID,
        .supported_kinds = kinds,
        .available = false,
        .reason = reason,
    };
    char *text = NULL;
    cJSON *doc = NULL;
    int r;

    r = cordon_facts_compose(&parts, &text, err);
    if (r < 0)
        return r;
    doc = cJSON_Parse(text);
    if (doc == NULL || cJSON_AddStringToObject(doc, "detail", detail) == NULL ||
        (mech != NULL && !cJSON_AddItemReferenceToObject(doc, "mechanism_facts", mech)))
        r = dk__nomem(err, "facts");
    else
        r = cordon_json_print_host(host, doc, ret, err);
    cJSON_Delete(doc);
    free(text);
    return r;
}

static bool add_string_list(cJSON *obj, const char *key, const cJSON *src, bool keys)
{
    cJSON *arr = cJSON_AddArrayToObject(obj, key);
    const cJSON *item;

    if (arr == NULL)
        return false;
    cJSON_ArrayForEach(item, src) {
        const char *s = keys ? item->string : cJSON_GetStringValue(item);

        if (s != NULL && !cJSON_AddItemToArray(arr, cJSON_CreateString(s)))
            return false;
    }
    return true;
}

/* Whether the runtime's containers run under gVisor (runsc): its init is
 * then the Sentry's guest, which no host pidfd reaches. */
static bool runtime_is_gvisor(const cJSON *info, const char *runtime)
{
    const cJSON *rt = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(info, "Runtimes"), runtime);
    const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rt, "path"));
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rt, "runtimeType"));
    const char *base = path != NULL && strrchr(path, '/') != NULL ? strrchr(path, '/') + 1 : path;

    return strcmp(runtime, "runsc") == 0 || (base != NULL && strcmp(base, "runsc") == 0) ||
           (type != NULL && strstr(type, "runsc") != NULL);
}

/* mechanism_facts.exec_path before a sandbox was seen: "agent" where
 * provision will find cordon-init as State.Pid and may take its channel
 * (root), "engine" otherwise; exec_path_reason says why not. */
static const char *exec_path(const struct dk_config *cfg, const cJSON *info, const char *rt,
                             const char **ret_reason)
{
    *ret_reason = NULL;
    if (cfg->no_agent)
        *ret_reason = "exec_agent is false";
    else if (runtime_is_gvisor(info, rt))
        *ret_reason = "gVisor: State.Pid is the Sentry's sandbox process, not cordon-init";
    else if (geteuid() != 0)
        *ret_reason = "not root: the agent's channel is taken with pidfd_getfd, which needs "
                      "ptrace rights over the container's init";
    return *ret_reason == NULL ? "agent" : "engine";
}

/* mechanism_facts: the daemon, the runtime, the image and our settings. */
static cJSON *mechanism_facts(const struct dk_config *cfg, const struct dk_engine *e,
                              const struct daemon_facts *df, const char *init,
                              const char *image_id, bool pinned)
{
    const cJSON *info = df->info;
    const char *def = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info,
                                                                             "DefaultRuntime"));
    const char *cg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info,
                                                                            "CgroupVersion"));
    const char *rt = cfg->runtime != NULL ? cfg->runtime : def != NULL ? def : "runc";
    const char *why, *path = exec_path(cfg, info, rt, &why);
    cJSON *m = cJSON_CreateObject();
    char user[32];
    bool ok;

    if (cfg->pooled)
        snprintf(user, sizeof(user), "per-execution");
    else
        snprintf(user, sizeof(user), "%u:%u", (unsigned)cfg->uid, (unsigned)cfg->gid);
    ok = m != NULL && cJSON_AddStringToObject(m, "socket", cfg->socket) &&
         (!cfg->pooled || (cJSON_AddNumberToObject(m, "uid_pool_base", CORDON_UID_BASE) &&
                           cJSON_AddNumberToObject(m, "uid_pool_size", CORDON_UID_COUNT))) &&
         cJSON_AddStringToObject(m, "server_version", df->server) &&
         cJSON_AddStringToObject(m, "api_version", e->version) &&
         cJSON_AddStringToObject(m, "runtime", cfg->runtime != NULL ? cfg->runtime
                                               : def != NULL ? def : "runc") &&
         cJSON_AddBoolToObject(m, "runtime_configured", cfg->runtime != NULL) &&
         cJSON_AddStringToObject(m, "default_runtime", def != NULL ? def : "") &&
         add_string_list(m, "runtimes", cJSON_GetObjectItemCaseSensitive(info, "Runtimes"),
                         true) &&
         cJSON_AddNumberToObject(m, "cgroup_version", cg != NULL ? atoi(cg) : 1) &&
         add_string_list(m, "security_options",
                         cJSON_GetObjectItemCaseSensitive(info, "SecurityOptions"), false) &&
         cJSON_AddStringToObject(m, "init_binary", init != NULL ? init : "") &&
         cJSON_AddStringToObject(m, "user", user) &&
         cJSON_AddStringToObject(m, "image", cfg->image != NULL ? cfg->image : "") &&
         cJSON_AddStringToObject(m, "image_id", image_id) &&
         cJSON_AddBoolToObject(m, "image_pinned", pinned) &&
         cJSON_AddBoolToObject(m, "allow_unpinned", cfg->allow_unpinned) &&
         cJSON_AddBoolToObject(m, "exec_agent", !cfg->no_agent) &&
         cJSON_AddStringToObject(m, "exec_path", path) &&
         /* the exec API kills nothing of an exec: only the container can go */
         cJSON_AddStringToObject(m, "exec_cancel", strcmp(path, "agent") == 0 ? "command"
                                                                             : "execution") &&
         (why == NULL || cJSON_AddStringToObject(m, "exec_path_reason", why));
    if (!ok) {
        cJSON_Delete(m);
        return NULL;
    }
    return m;
}

/* CORDON_PROBE_AVAILABILITY: version, image inspect, runtime registered. */
static int probe_availability(const struct cordon_host_v1 *host, const struct dk_config *cfg,
                              char **ret, struct cordon_error *err)
{
    struct daemon_facts df = { 0 };
    struct dk_engine e;
    struct dk_conn *conn = NULL;
    struct cordon_error perr;
    const char *reason = "ready";
    char image_id[80];
    int r;

    cordon_error_init(&perr);
    if (dk__engine_init(&e, cfg->socket, &perr) < 0 || dk__engine_negotiate(&e, NULL, &perr) < 0 ||
        dk__conn_open(&e, &conn, &perr) < 0)
        reason = "daemon_unreachable";
    else if (cfg->image == NULL)
        reason = "no_image";
    else if (image_inspect(conn, cfg->image, image_id, &perr) < 0)
        reason = perr.code == CORDON_E_NOT_FOUND ? "image_missing" : "daemon_unreachable";
    else if (cfg->runtime != NULL &&
             (daemon_facts_read(conn, cfg, &df, &perr) < 0 || !df.runtime_ok))
        reason = df.info == NULL ? "daemon_unreachable" : "runtime_unregistered";
    r = cordon_facts_availability_host(host, DK_ID, reason,
                                       strcmp(reason, "no_image") == 0
                                           ? "no image configured: set \"image\" in the provider config"
                                       : df.detail[0] != '\0' ? df.detail : perr.message,
                                       ret, err);
    daemon_facts_clear(&df);
    dk__conn_close(conn);
    return r;
}

static int op_probe(const struct cordon_host_v1 *host, const char *config_json, uint32_t flags,
                    char **ret_facts_json, struct cordon_error *err)
{
    struct daemon_facts df = { 0 };
    struct dk_config cfg = { 0 };
    struct cordon_resource *res = NULL;
    struct dk_engine e;
    struct dk_conn *conn = NULL;
    struct cordon_error perr;
    char image_id[80] = "", *mech_text = NULL;
    const char *rt;
    bool gvisor;
    const char *init = NULL;
    cJSON *mech = NULL;
    struct cordon_error iperr;
    bool pinned = false;
    int r;

    if (host == NULL || ret_facts_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "probe: host and ret_facts_json required");
    cordon_error_init(&perr);
    cordon_error_init(&iperr);
    /* A config we cannot parse is an error; a daemon we cannot use is facts. */
    r = dk__config_parse(config_json, &cfg, err);
    if (r < 0)
        goto out;
    if (flags & CORDON_PROBE_AVAILABILITY) {
        r = probe_availability(host, &cfg, ret_facts_json, err);
        goto out;
    }
    if (dk__engine_init(&e, cfg.socket, &perr) < 0 ||
        dk__engine_negotiate(&e, df.server, &perr) < 0 || dk__conn_open(&e, &conn, &perr) < 0 ||
        daemon_facts_read(conn, &cfg, &df, &perr) < 0) {
        r = facts_unavailable(host, "daemon_unreachable", perr.message, NULL, ret_facts_json, err);
        goto out;
    }
    if (cfg.image != NULL) {
        dk__image_check("config.image", cfg.image, cfg.allow_unpinned, &pinned, NULL);
        if (image_inspect(conn, cfg.image, image_id, &perr) < 0) {
            r = facts_unavailable(host, perr.code == CORDON_E_NOT_FOUND ? "image_missing"
                                                                     : "daemon_unreachable",
                                  perr.message, NULL, ret_facts_json, err);
            goto out;
        }
    }
    /* What is known goes into the facts even when the provider is unavailable. */
    check_init(host, &init, &iperr);
    mech = mechanism_facts(&cfg, &e, &df, init, image_id, pinned);
    if (mech == NULL) {
        r = dk__nomem(err, "facts");
        goto out;
    }
    if (!df.runtime_ok) {
        r = facts_unavailable(host, "runtime_unregistered", df.detail, mech, ret_facts_json, err);
        goto out;
    }
    if (!df.limits_ok) {
        r = facts_unavailable(host, "limits_unsupported", df.detail, mech, ret_facts_json, err);
        goto out;
    }
    if (init == NULL) {
        r = facts_unavailable(host, "init_missing", iperr.message, mech, ret_facts_json, err);
        goto out;
    }
    if (cfg.image == NULL) {
        r = facts_unavailable(host, "no_image",
                              "no image configured: set \"image\" in the provider config "
                              "(NAME@sha256:<64 hex> or sha256:<64 hex>); the host observes the "
                              "sandbox it would give, which needs the image", mech, ret_facts_json, err);
        goto out;
    }
    /* A resource made exactly as a user's would be: the host's own
     * observation then provisions through it. */
    if (resource_new(host, config_json, &res, &perr) < 0) {
        r = facts_unavailable(host, "daemon_unreachable", perr.message, mech, ret_facts_json, err);
        goto out;
    }
    rt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(mech, "runtime"));
    gvisor = runtime_is_gvisor(df.info, rt != NULL ? rt : "runc");
    mech_text = cJSON_PrintUnformatted(mech);
    if (mech_text == NULL) {
        r = dk__nomem(err, "facts");
        goto out;
    }
    {
        struct cordon_facts_parts parts = {
            .struct_size = sizeof(parts),
            .provider_id = DK_ID,
            .supported_kinds = kinds,
            .available = true,
            .reason = "ready",
            .safety_class = "isolated",
            .mechanism = "container",
            .rootfs_read_only = true,
            .workspace_access_modes = access_modes,
            .limits_enforced = cordon_limit_keys,
            .mechanism_facts_json = mech_text,
            /* Under gVisor whether the Sentry has a pid namespace of its own
             * is runsc's platform's choice (ptrace shares the host's): left
             * to the host's observation. */
            .claims = gvisor ? CORDON_CLAIM_ALL & ~CORDON_CLAIM_PROCESS_CONTAINED : CORDON_CLAIM_ALL,
            .deferred = gvisor ? CORDON_CLAIM_PROCESS_CONTAINED : 0,
            .network = "none",
            /* The container's cgroup, its tmpfs sizes, cordon-init's
             * deadline, the host's output budget. */
            .limits_enforcement_json = "{\"cpus\":\"cgroup\",\"memory_bytes\":\"cgroup\","
                                       "\"disk_bytes\":\"tmpfs_size\",\"pids\":\"cgroup\","
                                       "\"runtime_ms\":\"sandbox_init\",\"max_output_bytes\":\"host\"}",
        };
        r = cordon_facts_compose_host(host, &parts, ret_facts_json, err);
    }
out:
    free(mech_text);
    cJSON_Delete(mech);
    resource_free(res);
    dk__conn_close(conn);
    daemon_facts_clear(&df);
    dk__config_clear(&cfg);
    return r;
}

/* ---- terminate and reclaim ------------------------------------------------ */

static int uid_give_back(const struct cordon_resource *res, const char *id,
                         struct cordon_error *err)
{
    return res->cfg.pooled ? cordon_uid_give_back(NULL, res->host->host_instance_id, id, err) : 0;
}

/* Remove the container, then anything else labelled for the execution:
 * a container gone by AutoRemove is success, a volume it left is not. */
static int terminate(struct cordon_resource *res, const char *state_json, struct cordon_error *err)
{
    struct dk_state st = { 0 };
    struct dk_conn *conn = NULL;
    int r;

    /* Only the ids are needed: terminate works from every state. */
    r = dk__state_parse(res, state_json, false, &st, err);
    if (r == 0)
        r = dk__conn_open(&res->engine, &conn, err);
    if (r == 0)
        r = dk__container_remove(conn, st.container_id, err);
    /* What the container's removal may have missed (its volume). */
    if (r == 0)
        r = dk__remove_labelled(conn, res, st.execution_id, err);
    /* Nothing runs as the execution's uid any more: it goes back. */
    if (r == 0)
        r = uid_give_back(res, st.execution_id, err);
    dk__conn_close(conn);
    dk__state_clear(&st);
    return r;
}

static int reclaim(struct cordon_resource *res, const char *execution_id, struct cordon_error *err)
{
    struct dk_conn *conn = NULL;
    int r = dk__conn_open(&res->engine, &conn, err);

    if (r == 0)
        r = dk__remove_labelled(conn, res, execution_id, err);
    if (r == 0)
        r = uid_give_back(res, execution_id, err);
    dk__conn_close(conn);
    return r;
}

static int list_executions(struct cordon_resource *res, char **ret_ids_json, struct cordon_error *err)
{
    struct dk_conn *conn = NULL;
    cJSON *ids = NULL;
    int r = dk__conn_open(&res->engine, &conn, err);

    if (r == 0)
        r = dk__list_labelled(conn, res, &ids, err);
    if (r == 0)
        r = cordon_json_print_host(res->host, ids, ret_ids_json, err);
    cJSON_Delete(ids);
    dk__conn_close(conn);
    return r;
}

/*
 * The boundary (provider.h): the container's init as the host numbers it,
 * inspect's State.Pid. Under runc that is the container's first process
 * (cordon-init), under runsc the sandbox process that runs gVisor's
 * Sentry. The host checks the pid itself; a daemon in a pid namespace
 * other than the host's would name a pid that the host's checks refuse.
 */
static int op_boundary(struct cordon_resource *res, const char *state_json,
                       char **ret_boundary_json, struct cordon_error *err)
{
    struct dk_state st = { 0 };
    struct dk_conn *conn = NULL;
    cJSON *inspect = NULL;
    const cJSON *state, *pid;
    char path[160];
    int r;

    if (res == NULL || ret_boundary_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "boundary: resource and ret_boundary_json required");
    r = dk__state_parse(res, state_json, false, &st, err);
    if (r == 0)
        r = dk__conn_open(&res->engine, &conn, err);
    if (r == 0) {
        snprintf(path, sizeof(path), "/containers/%s/json", st.container_id);
        r = dk__api(conn, "GET", path, NULL, "boundary: inspect", NULL, &inspect, err);
    }
    if (r < 0)
        goto out;
    state = cJSON_GetObjectItemCaseSensitive(inspect, "State");
    pid = cJSON_GetObjectItemCaseSensitive(state, "Pid");
    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(state, "Running")) || !cJSON_IsNumber(pid) ||
        pid->valuedouble < 2 || pid->valuedouble > 0x7fffffff) {
        r = cordon_error_set(err, CORDON_E_NOT_FOUND, 0,
                             "boundary: container %.12s does not run (State.Pid %.0f)",
                             st.container_id, cJSON_IsNumber(pid) ? pid->valuedouble : 0.0);
        goto out;
    }
    r = cordon_json_boundary_host(res->host, (pid_t)pid->valuedouble, ret_boundary_json, err);
out:
    cJSON_Delete(inspect);
    dk__conn_close(conn);
    dk__state_clear(&st);
    return r;
}

/* ---- entry point ---------------------------------------------------------- */

CORDON_LIFECYCLE_OPS(op, resource_new, health_check, resource_free, terminate, reclaim, list_executions)

static const struct cordon_provider_v1 provider = {
    .abi_version = CORDON_ABI_VERSION,
    .struct_size = sizeof(struct cordon_provider_v1),
    .provider_id = DK_ID,
    .version = PACKAGE_VERSION,
    .supported_kinds = kinds,
    .probe = op_probe,
    .ensure = op_ensure,
    .health_check = op_health_check,
    .release = op_release,
    .provision = dk__op_provision,
    .exec = dk__op_exec,
    .import_tar = dk__op_import_tar,
    .import_files = dk__op_import_files,
    .export_tar = dk__op_export_tar,
    .export_files = dk__op_export_files,
    .terminate = op_terminate,
    .reclaim = op_reclaim,
    .list_executions = op_list_executions,
    .boundary = op_boundary,
    .extend = dk__op_extend,
};

CORDON_PROVIDER_DEFINE(provider)
