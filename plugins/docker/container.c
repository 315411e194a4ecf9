/*
 * docker: provisioning one execution as one container - the spec, create
 * (the body and its read-back are create.c's), start, the layout "code",
 * the init as the host sees it - and removing containers again.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cordon/sdk/agent.h>
#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/sandbox.h>
#include <cordon/sdk/spec.h>
#include <cordon/text.h>
#include "plugins/docker/docker.h"

#define DK_REMOVE_WAIT_MS 30000u
#define DK_INIT_EXEC_WAIT_MS 2000u     /* for runc's init to become cordon-init after start */
#define DK_LIFETIME_MAX_MS (366ull * 24 * 3600 * 1000) /* cordon-init's --deadline-ms bound */

/* ---- spec and state -------------------------------------------------------- */


void dk__state_clear(struct dk_state *st)
{
    if (st == NULL)
        return;
    cJSON_Delete(st->doc);
    memset(st, 0, sizeof(*st));
}

int dk__state_parse(const struct cordon_resource *res, const char *json, bool full,
                    struct dk_state *ret, struct cordon_error *err)
{
    struct dk_state st = { 0 };
    struct cordon_spec_state kept;
    const cJSON *socket;
    uint64_t v;
    int r;

    if (res == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "state: resource required");
    r = cordon_spec_state_parse(json, &st.doc, &st.execution_id, err);
    if (r < 0)
        goto out;
    /* The id goes into request paths: exactly what the daemon handed out. */
    st.container_id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st.doc,
                                                                             "container_id"));
    if (!dk__hex64(st.container_id)) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0,
                             "state.container_id: must be 64 lowercase hex digits");
        goto out;
    }
    /* The daemon the execution lives on: another one (a config or a
     * DOCKER_HOST that changed since) would answer "no such container",
     * which terminate would take for gone while the sandbox runs on. */
    socket = cJSON_GetObjectItemCaseSensitive(st.doc, "socket");
    if (socket != NULL && (!cJSON_IsString(socket) || strcmp(socket->valuestring, res->cfg.socket) != 0)) {
        r = cordon_error_set(err, CORDON_E_UNAVAILABLE, 0,
                             "state.socket: the execution lives on the daemon at %.*s; this "
                             "provider reaches %s (the config's socket, else DOCKER_HOST)",
                             cJSON_IsString(socket) ? cordon_text_fit(socket->valuestring, 120) : 1,
                             cJSON_IsString(socket) ? socket->valuestring : "?", res->cfg.socket);
        goto out;
    }
    if (!full)
        goto done;
    r = cordon_uid_from_state(NULL, st.doc, res->host->host_instance_id, st.execution_id, false,
                              &st.uid, &st.gid, err);
    if (r < 0)
        goto out;
    r = cordon_spec_state_from_json(st.doc, &kept, err);
    if (r < 0)
        goto out;
    st.code_layout = kept.layout == CORDON_SPEC_LAYOUT_CODE;
    st.limits = kept.resources;
    st.expires_at_ms = kept.expires_at_ms;
    /* Written by provision when the init is a reachable agent. */
    st.agent = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st.doc, "agent"));
    if (st.agent) {
        r = cordon_json_u64(cJSON_GetObjectItemCaseSensitive(st.doc, "init_pid"), "state.init_pid",
                            2, 0x7fffffff, &v, err);
        if (r == 0)
            r = cordon_json_u64(cJSON_GetObjectItemCaseSensitive(st.doc, "init_start"),
                                "state.init_start", 1, (uint64_t)CORDON_JSON_INT_MAX,
                                &st.init_start, err);
        if (r < 0)
            goto out;
        st.init_pid = (pid_t)v;
    }
done:
    *ret = st;
    memset(&st, 0, sizeof(st));
out:
    dk__state_clear(&st);
    return r;
}

static int spec_parse(const struct cordon_resource *res, const char *json, struct dk_spec *sp,
                      struct cordon_error *err)
{
    int r = cordon_spec_parse(json, &sp->in, err);

    if (r < 0)
        return r;
    /* The spec's image wins over the config's. */
    sp->image = sp->in.image != NULL ? sp->in.image : res->cfg.image;
    if (sp->image == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "image: none in the spec and none in the provider config "
                                "(NAME@sha256:<64 hex> or sha256:<64 hex>)");
    r = dk__image_check("image", sp->image, res->cfg.allow_unpinned, &sp->pinned, err);
    if (r == 0)
        r = cordon_disk_split("resources.disk_bytes", sp->in.resources.disk_bytes, &sp->disk, err);
    if (r == 0)
        r = cordon_spec_deadline(&sp->in, cordon_now_wall_ms(), &sp->expires_at_ms, err);
    sp->code_layout = sp->in.layout == CORDON_SPEC_LAYOUT_CODE;
    return r;
}

/* The name makes a second provision of one id on one host fail (409). */
static void container_name(const struct cordon_resource *res, const char *id, char *buf,
                           size_t size)
{
    char hex[65];

    cordon_sha256_hex(dk__host_label(res), strlen(dk__host_label(res)), hex);
    snprintf(buf, size, "cordon-%.12s-%s", hex, id);
}

/* Give a failed start a hint when the daemon names what the image lacks. */
static int start_error(int r, struct cordon_error *err)
{
    char hint[200] = "";

    if (err == NULL)
        return r;
    if (strstr(err->message, DK_INIT_IN_CONTAINER) != NULL)
        snprintf(hint, sizeof(hint), " (the host's cordon-init is bound read-only at "
                                     DK_INIT_IN_CONTAINER " as the first process; the daemon "
                                     "must see the host's file system)");
    if (hint[0] != '\0' && strlen(err->message) + strlen(hint) < sizeof(err->message))
        strcat(err->message, hint);
    return r;
}

/* The layout "code" directories, written through the archive API as root. */
static int put_layout(const struct cordon_resource *res, const struct dk_spec *sp,
                      struct dk_conn *conn, const char *container_id, struct cordon_error *err)
{
    const char *const paths[] = { "source", "build", "output", "logs" };
    const uid_t uids[] = { 0, sp->uid, sp->uid, sp->uid };
    const gid_t gids[] = { 0, sp->gid, sp->gid, sp->gid };
    const mode_t modes[] = { 0755, 0755, 0755, 0755 };

    return dk__archive_put_dirs(res, conn, container_id, paths, uids, gids, modes, 4,
                                "provision: layout", err);
}

/* ---- the init as the host sees it (the resident agent) ------------------------ */

static int pidfd_open_pid(pid_t pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0u);
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

/* Field 22 of /proc/PID/stat, the start time in clock ticks since boot:
 * with the pid it names one process for as long as the machine runs. */
static uint64_t start_time(pid_t pid)
{
    char text[1024], *p;
    unsigned field = 2;

    if (dk__read_proc(pid, "stat", text, sizeof(text)) <= 0 || (p = strrchr(text, ')')) == NULL)
        return 0;
    /* After the comm, fields 3 onwards, separated by single spaces. */
    for (p++; *p != '\0' && field < 22; p++)
        if (*p == ' ')
            field++;
    return field == 22 ? strtoull(p, NULL, 10) : 0;
}

int dk__init_pin(const struct dk_state *st, int *ret_pidfd, struct cordon_error *err)
{
    int fd = st->init_pid > 1 ? pidfd_open_pid(st->init_pid) : -1;

    /* Opened first, compared after: a pid reused in between has another
     * start time, and the pidfd cannot move to another process. */
    if (fd < 0 || start_time(st->init_pid) != st->init_start) {
        if (fd >= 0)
            close(fd);
        return cordon_error_set(err, CORDON_E_NOT_FOUND, 0,
                                "exec: execution \"%s\": its init (pid %d) is gone (deadline "
                                "passed, killed, or terminated)", st->execution_id,
                                (int)st->init_pid);
    }
    *ret_pidfd = fd;
    return 0;
}

/*
 * After start: State.Pid and its start time, and whether it is a resident
 * agent this process can reach. Under runc that pid is the container's first
 * process, cordon-init (once runc's init has exec'd it: the start may
 * return a moment before); under runsc it is gVisor's sandbox process, and
 * cordon-init runs inside the Sentry where no host pidfd reaches: no
 * agent. The pid must also sit in a cgroup named after the container, so
 * that a daemon in another pid namespace never makes us pin a stranger.
 * Nothing here fails the provision: without an agent, exec uses the daemon.
 */
static int init_find(struct dk_conn *conn, const char *container_id, pid_t *ret_pid,
                     uint64_t *ret_start, bool *ret_agent, struct cordon_error *err)
{
    char path[160], text[4096];
    cJSON *inspect = NULL;
    const cJSON *pid;
    uint64_t until = cordon_now_monotonic_ms() + DK_INIT_EXEC_WAIT_MS;
    int pidfd = -1, agent_fd = -1, r;

    *ret_pid = 0;
    *ret_start = 0;
    *ret_agent = false;
    snprintf(path, sizeof(path), "/containers/%s/json", container_id);
    r = dk__api(conn, "GET", path, NULL, "provision: inspect", NULL, &inspect, err);
    if (r < 0)
        return r;
    pid = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(inspect, "State"),
                                           "Pid");
    if (!cJSON_IsNumber(pid) || pid->valuedouble < 2 || pid->valuedouble > 0x7fffffff)
        goto out;
    *ret_pid = (pid_t)pid->valuedouble;
    pidfd = pidfd_open_pid(*ret_pid);
    *ret_start = pidfd >= 0 ? start_time(*ret_pid) : 0;
    if (*ret_start == 0 || dk__read_proc(*ret_pid, "cgroup", text, sizeof(text)) <= 0 ||
        strstr(text, container_id) == NULL)
        goto out;
    /* runc's init is "runc:[2:INIT]" until its execve of the entrypoint. */
    while (dk__read_proc(*ret_pid, "comm", text, sizeof(text)) > 0 &&
           strncmp(text, "runc:[", 6) == 0 && cordon_now_monotonic_ms() < until) {
        struct pollfd p = { pidfd, POLLIN, 0 };

        if (poll(&p, 1, 2) != 0)
            goto out;
    }
    if (strcmp(text, "cordon-init\n") != 0)
        goto out;
    /* Reachable from here: the channel is there and ours to take. */
    if (cordon_agent_open(pidfd, &agent_fd, NULL) == 0) {
        close(agent_fd);
        *ret_agent = true;
    }
out:
    if (pidfd >= 0)
        close(pidfd);
    if (!*ret_agent)
        *ret_start = 0;
    cJSON_Delete(inspect);
    return 0;
}

static char *state_build(const struct cordon_resource *res, const struct dk_spec *sp,
                         const char *container_id, const char *name, pid_t init_pid,
                         uint64_t init_start, bool agent)
{
    const struct cordon_spec_state kept = { .resources = sp->in.resources,
                                            .expires_at_ms = sp->expires_at_ms,
                                            .layout = sp->in.layout };
    cJSON *st = cJSON_CreateObject();
    char *text = NULL;

    if (st != NULL && cJSON_AddStringToObject(st, "execution_id", sp->in.execution_id) &&
        cJSON_AddStringToObject(st, "container_id", container_id) &&
        cJSON_AddStringToObject(st, "container_name", name) &&
        cJSON_AddStringToObject(st, "socket", res->cfg.socket) &&
        cJSON_AddStringToObject(st, "image", sp->image) &&
        cJSON_AddNumberToObject(st, "uid", (double)sp->uid) &&
        cJSON_AddNumberToObject(st, "gid", (double)sp->gid) &&
        cordon_spec_state_add(st, &kept) &&
        cJSON_AddStringToObject(st, "runtime", res->cfg.runtime != NULL ? res->cfg.runtime : "") &&
        (!agent || (cJSON_AddTrueToObject(st, "agent") &&
                    cJSON_AddNumberToObject(st, "init_pid", (double)init_pid) &&
                    cJSON_AddNumberToObject(st, "init_start", (double)init_start))))
        text = cJSON_PrintUnformatted(st);
    cJSON_Delete(st);
    return text;
}

int dk__op_provision(struct cordon_resource *res, const char *spec_json, char **ret_state_json,
                     struct cordon_error *err)
{
    struct dk_spec sp = { 0 };
    struct dk_conn *conn = NULL;
    struct cordon_error ignored;
    char name[160], path[320], container_id[DK_CONTAINER_ID_LEN + 1] = "";
    char *body = NULL, *state = NULL, *seccomp = NULL;
    cJSON *reply = NULL, *inspect = NULL;
    uint64_t now = cordon_now_wall_ms(), init_start = 0;
    long status = 0;
    pid_t init_pid = 0;
    bool took_uid = false, reap = false, agent = false;
    int r;

    if (res == NULL || ret_state_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "provision: resource and ret_state_json required");
    r = spec_parse(res, spec_json, &sp, err);
    if (r < 0)
        goto out;
    sp.uid = res->cfg.uid;
    sp.gid = res->cfg.gid;
    if (sp.expires_at_ms - now > DK_LIFETIME_MAX_MS) {
        r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                             "expires_at_ms: %llu ms away, over the limit of %llu ms (366 days, "
                             "what cordon-init holds)",
                             (unsigned long long)(sp.expires_at_ms - now), DK_LIFETIME_MAX_MS);
        goto out;
    }
    /* A uid of its own; held already means the id is in use. */
    if (res->cfg.pooled) {
        r = cordon_uid_take(NULL, res->host->host_instance_id, sp.in.execution_id, &sp.uid, err);
        if (r == CORDON_E_EXISTS)
            r = cordon_error_set(err, CORDON_E_EXISTS, 0,
                                 "execution_id: \"%s\" already runs on this host",
                                 sp.in.execution_id);
        if (r < 0)
            goto out;
        took_uid = true;
        sp.gid = (gid_t)sp.uid;
    }
    seccomp = dk__seccomp_opt();
    body = seccomp != NULL ? dk__create_body(res, &sp, sp.expires_at_ms - now, seccomp) : NULL;
    if (body == NULL) {
        r = dk__nomem(err, "provision");
        goto out;
    }
    r = dk__conn_open(&res->engine, &conn, err);
    if (r < 0)
        goto out;
    container_name(res, sp.in.execution_id, name, sizeof(name));
    snprintf(path, sizeof(path), "/containers/create?name=%s", name);
    r = dk__api(conn, "POST", path, body, "provision: create", &status, &reply, err);
    if (r == CORDON_E_EXISTS)
        r = cordon_error_set(err, CORDON_E_EXISTS, 0,
                             "execution_id: \"%s\" already has a container on this daemon (%s)",
                             sp.in.execution_id, name);
    else if (r == CORDON_E_NOT_FOUND)
        r = cordon_error_set(err, CORDON_E_NOT_FOUND, 0,
                             "image: \"%s\" is not present in the daemon; load or pull it first "
                             "(this provider never pulls)", sp.image);
    if (r < 0)
        goto out;
    if (!dk__hex64(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(reply, "Id")))) {
        r = cordon_error_set(err, CORDON_E_PROVIDER, 0, "provision: create answered no valid Id");
        dk__remove_labelled(conn, res, sp.in.execution_id, NULL);
        goto out;
    }
    snprintf(container_id, sizeof(container_id), "%s",
             cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(reply, "Id")));

    /* Read back what the daemon applied before anything runs in it. */
    snprintf(path, sizeof(path), "/containers/%s/json", container_id);
    r = dk__api(conn, "GET", path, NULL, "provision: inspect", NULL, &inspect, err);
    if (r == 0)
        r = dk__verify(res, &sp, seccomp, inspect, err);
    if (r < 0)
        goto fail;
    /* Started before the layout: the volume's tmpfs is mounted at start,
     * and what the archive API wrote into it earlier would be lost. */
    snprintf(path, sizeof(path), "/containers/%s/start", container_id);
    r = dk__api(conn, "POST", path, NULL, "provision: start", NULL, NULL, err);
    if (r < 0) {
        start_error(r, err);
        reap = true;
        goto fail;
    }
    if (sp.code_layout) {
        r = put_layout(res, &sp, conn, container_id, err);
        if (r < 0)
            goto fail;
    }
    if (!res->cfg.no_agent) {
        r = init_find(conn, container_id, &init_pid, &init_start, &agent, err);
        if (r < 0)
            goto fail;
    }
    state = state_build(res, &sp, container_id, name, init_pid, init_start, agent);
    if (state == NULL || (*ret_state_json = cordon_host_strdup(res->host, state)) == NULL) {
        r = dk__nomem(err, "provision: state");
        goto fail;
    }
    took_uid = false; /* the execution's now, given back by terminate */
    goto out;
fail:
    /* Nothing half-made stays behind. */
    cordon_error_init(&ignored);
    dk__container_remove(conn, container_id, &ignored);
    dk__remove_labelled(conn, res, sp.in.execution_id, &ignored);
    /* Not even what the daemon itself forgot (reap.c). */
    if (reap) {
        int killed = dk__runtime_reap(container_id, &ignored);
        char note[200];

        if (killed > 0)
            snprintf(note, sizeof(note), " (the daemon left %d of the runtime's processes running; "
                     "they were killed)", killed);
        else if (killed < 0)
            snprintf(note, sizeof(note), "; and %.150s", ignored.message);
        if (killed != 0 && err != NULL && strlen(err->message) + strlen(note) < sizeof(err->message))
            strcat(err->message, note);
    }
out:
    if (r < 0 && took_uid)
        cordon_uid_give_back(NULL, res->host->host_instance_id, sp.in.execution_id, NULL);
    free(state);
    free(body);
    free(seccomp);
    cJSON_Delete(reply);
    cJSON_Delete(inspect);
    cordon_spec_clear(&sp.in);
    dk__conn_close(conn);
    return r;
}

/* ---- removal ---------------------------------------------------------------- */

int dk__container_remove(struct dk_conn *conn, const char *container_id, struct cordon_error *err)
{
    uint64_t deadline = cordon_now_monotonic_ms() + DK_REMOVE_WAIT_MS;
    char path[160];
    long status = 0;
    int r;

    if (!dk__hex64(container_id))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "container_id: must be 64 lowercase hex digits");
    /* force: SIGKILL to every process at once; v: the workspace volume too. */
    snprintf(path, sizeof(path), "/containers/%s?force=1&v=1", container_id);
    r = dk__api(conn, "DELETE", path, NULL, "remove container", &status, NULL, err);
    if (r == 0 || status == 404)
        return 0;
    if (status != 409)
        return r;
    /* AutoRemove is already at it (the deadline passed): wait for the end. */
    snprintf(path, sizeof(path), "/containers/%s/json", container_id);
    while (cordon_now_monotonic_ms() < deadline) {
        r = dk__api(conn, "GET", path, NULL, "remove container", &status, NULL, err);
        if (status == 404)
            return 0;
        if (r < 0 && status == 0)
            return r;
        dk__sleep_ms(50);
    }
    return cordon_error_set(err, CORDON_E_TIMEOUT, 0,
                            "remove container %.12s: still there %u ms after its removal began",
                            container_id, DK_REMOVE_WAIT_MS);
}

/* ?filters={"label":["org.cordon.host=HOST"(,"org.cordon.execution-id=ID")]},
 * escaped; execution_id NULL lists the whole host's. */
static char *label_query(const struct cordon_resource *res, const char *execution_id)
{
    cJSON *f = cJSON_CreateObject(), *arr;
    char *label = NULL, *text = NULL, *esc = NULL;
    bool ok = f != NULL && (arr = cJSON_AddArrayToObject(f, "label")) != NULL &&
              asprintf(&label, DK_LABEL_HOST "=%s", dk__host_label(res)) >= 0 &&
              cJSON_AddItemToArray(arr, cJSON_CreateString(label));

    free(label);
    label = NULL;
    if (ok && execution_id != NULL)
        ok = asprintf(&label, DK_LABEL_EXECUTION "=%s", execution_id) >= 0 &&
             cJSON_AddItemToArray(arr, cJSON_CreateString(label));
    if (ok)
        text = cJSON_PrintUnformatted(f);
    if (text != NULL)
        esc = dk__escape(text);
    free(label);
    free(text);
    cJSON_Delete(f);
    return esc;
}

/* GET prefix + the label query: the objects listed in *ret. */
static int list_labelled(struct dk_conn *conn, const char *prefix, const char *query,
                         const char *what, cJSON **ret, struct cordon_error *err)
{
    char path[1024];

    if (snprintf(path, sizeof(path), "%s%s", prefix, query) >= (int)sizeof(path))
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "%s: the label query is over %zu bytes",
                                what, sizeof(path));
    return dk__api(conn, "GET", path, NULL, what, NULL, ret, err);
}

int dk__remove_labelled(struct dk_conn *conn, const struct cordon_resource *res,
                        const char *execution_id, struct cordon_error *err)
{
    char *query = label_query(res, execution_id);
    cJSON *list = NULL;
    const cJSON *item;
    int r;

    if (query == NULL)
        return dk__nomem(err, "reclaim");
    r = list_labelled(conn, "/containers/json?all=1&filters=", query, "reclaim: list containers",
                      &list, err);
    cJSON_ArrayForEach(item, list) {
        r = dk__container_remove(conn, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item,
                                                                                          "Id")),
                                 err);
        if (r < 0)
            goto out;
    }
    cJSON_Delete(list);
    list = NULL;
    /* A volume outlives its container when the daemon stopped half-way. */
    if (r == 0)
        r = list_labelled(conn, "/volumes?filters=", query, "reclaim: list volumes", &list, err);
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(list, "Volumes")) {
        const char *vname = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "Name"));
        char *esc = vname != NULL ? dk__escape(vname) : NULL, vpath[400];
        long status = 0;

        if (esc == NULL)
            continue;
        snprintf(vpath, sizeof(vpath), "/volumes/%s?force=1", esc);
        free(esc);
        r = dk__api(conn, "DELETE", vpath, NULL, "reclaim: remove volume", &status, NULL, err);
        if (r < 0 && status != 404)
            goto out;
        r = 0;
    }
out:
    cJSON_Delete(list);
    free(query);
    return r;
}

/* Add the execution id labelled on each object of list, once. */
static void add_ids(cJSON *ids, const cJSON *list)
{
    const cJSON *item, *have;

    cJSON_ArrayForEach(item, list) {
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(item, "Labels"), DK_LABEL_EXECUTION));
        bool seen = false;

        if (cordon_execution_id_check("label", id, NULL) < 0)
            continue;
        cJSON_ArrayForEach(have, ids)
            seen = seen || strcmp(have->valuestring, id) == 0;
        if (!seen)
            cJSON_AddItemToArray(ids, cJSON_CreateString(id));
    }
}

int dk__list_labelled(struct dk_conn *conn, const struct cordon_resource *res, cJSON **ret_ids,
                      struct cordon_error *err)
{
    char *query = label_query(res, NULL);
    cJSON *ids = cJSON_CreateArray(), *list = NULL;
    int r;

    if (query == NULL || ids == NULL) {
        r = dk__nomem(err, "list_executions");
        goto out;
    }
    r = list_labelled(conn, "/containers/json?all=1&filters=", query,
                      "list_executions: containers", &list, err);
    add_ids(ids, list);
    cJSON_Delete(list);
    list = NULL;
    /* A volume alone still needs its reclaim. */
    if (r == 0)
        r = list_labelled(conn, "/volumes?filters=", query, "list_executions: volumes", &list,
                          err);
    add_ids(ids, cJSON_GetObjectItemCaseSensitive(list, "Volumes"));
    if (r == 0) {
        *ret_ids = ids;
        ids = NULL;
    }
out:
    cJSON_Delete(list);
    cJSON_Delete(ids);
    free(query);
    return r;
}
