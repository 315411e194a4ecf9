/*
 * docker: one exec, through the resident agent (agent.c) or the exec API.
 *
 * The exec API stays for a state without the agent (exec_agent false,
 * gVisor, not root), or a command that does not fit one agent message:
 * create the exec, start it attached (the HTTP connection is upgraded to
 * the process's stdio), demultiplex the stream's 8-byte frame headers into
 * the host's stdout and stderr, feed stdin when the host gives one, and
 * watch cancel_fd: when it fires, the whole container goes (force remove),
 * which ends every process in it at once (the API cannot end one exec's
 * processes alone; the result says execution_ended). The host keeps the clock and the
 * output budget; the request's timeout is only a backstop. After the
 * stream ends the exec's exit code is read back, and an exit by SIGKILL is
 * looked up in the daemon's events to tell the memory limit's kill.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cordon/sdk/capture.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/path.h>
#include <cordon/sdk/request.h>
#include "plugins/docker/docker.h"

#define DK_RECV_CHUNK (64u << 10)
#define DK_WRITE_CHUNK 4096u              /* PIPE_BUF: never blocks after POLLOUT */
#define DK_EXIT_WAIT_MS 10000u
#define DK_HELD_MAX 4096u
#define DK_DIRS_MAX 1024u                 /* workspace_env directories, parents included */

/* The daemon reports a process that never started on the stdout stream. */
static const char start_failure[] = "OCI runtime exec failed";

static void request_clear(struct dk_request *rq)
{
    cordon_exec_request_clear(&rq->req);
    cJSON_Delete(rq->body);
    free(rq->workdir);
    for (size_t i = 0; i < rq->ndirs; i++)
        free(rq->dirs[i]);
    free(rq->dirs);
    free(rq->must_exist);
    cordon_env_clear(&rq->env);
    memset(rq, 0, sizeof(*rq));
}

/* "/workspace" or "/workspace/<norm>": what the sandbox sees; malloc'd. */
static char *workspace_path(const char *norm)
{
    char *p = NULL;

    if (asprintf(&p, DK_WORKSPACE "%s%s", norm[0] ? "/" : "", norm) < 0)
        return NULL;
    return p;
}

/* Remember norm and every parent of it, once each, parents first. */
static int add_dirs(struct dk_request *rq, const char *norm, struct cordon_error *err)
{
    char *copy = strdup(norm), *slash = copy;
    int r = 0;

    if (copy == NULL)
        return dk__nomem(err, "workspace_env");
    do {
        bool seen = false;
        char **grown;

        slash = strchr(slash + 1, '/');
        if (slash != NULL)
            *slash = '\0';
        for (size_t i = 0; i < rq->ndirs && !seen; i++)
            seen = strcmp(rq->dirs[i], copy) == 0;
        if (!seen && rq->ndirs >= DK_DIRS_MAX) {
            r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                                 "workspace_env: more than %u directories to create", DK_DIRS_MAX);
            break;
        }
        if (!seen) {
            grown = realloc(rq->dirs, (rq->ndirs + 1) * sizeof(*grown));
            if (grown == NULL || (grown[rq->ndirs] = strdup(copy)) == NULL) {
                if (grown != NULL)
                    rq->dirs = grown;
                r = dk__nomem(err, "workspace_env");
                break;
            }
            rq->dirs = grown;
            rq->ndirs++;
        }
        if (slash != NULL)
            *slash = '/';
    } while (slash != NULL);
    free(copy);
    return r;
}

/* The request as provider.h describes it, turned into an exec create body. */
static int request_parse(const struct dk_state *st, const char *json, bool attach_stdin,
                         struct dk_request *rq, struct cordon_error *err)
{
    struct cordon_env merged = { 0 };
    cJSON *arr, *cmd;
    char user[32];
    size_t total = 0;
    int r;

    cordon_exec_request_init(&rq->req);
    r = cordon_exec_request_parse(json, &rq->req, err);
    if (r < 0)
        return r;
    for (size_t i = 0; i < rq->req.argc; i++)
        total += strlen(rq->req.argv[i]) + 1;
    rq->workdir = workspace_path(rq->req.cwd);
    if (rq->workdir == NULL)
        return dk__nomem(err, "cwd");
    rq->timeout_ms = rq->req.timeout_ms;
    /* env, then workspace_env over it: one set of names. */
    for (size_t i = 0; r == 0 && i < rq->req.env.n; i++)
        r = cordon_env_set(&merged, rq->req.env.vars[i].name, rq->req.env.vars[i].value, err);
    for (size_t i = 0; r == 0 && i < rq->req.workspace_env.n; i++) {
        const struct cordon_env_var *v = &rq->req.workspace_env.vars[i];
        char *value;

        /* Never create sandbox-owned directories inside read-only source/. */
        if (st->code_layout && cordon_path_is_under(v->value, "source")) {
            free(rq->must_exist);
            rq->must_exist = strdup(v->value);
            r = rq->must_exist != NULL ? 0 : dk__nomem(err, "workspace_env");
        } else if (v->value[0] != '\0') {
            r = add_dirs(rq, v->value, err);
        }
        value = r == 0 ? workspace_path(v->value) : NULL;
        if (r == 0 && value == NULL)
            r = dk__nomem(err, "workspace_env");
        if (r == 0)
            r = cordon_env_set(&merged, v->name, value, err);
        free(value);
    }
    if (r < 0)
        goto out;
    /* The user is named again although the container has it: an exec must
     * never run as anybody else, whatever the image's config says. */
    snprintf(user, sizeof(user), "%u:%u", (unsigned)st->uid, (unsigned)st->gid);
    rq->body = cJSON_CreateObject();
    if (rq->body == NULL || !cJSON_AddBoolToObject(rq->body, "AttachStdin", attach_stdin) ||
        !cJSON_AddBoolToObject(rq->body, "AttachStdout", true) ||
        !cJSON_AddBoolToObject(rq->body, "AttachStderr", true) ||
        !cJSON_AddBoolToObject(rq->body, "Tty", false) ||
        !cJSON_AddBoolToObject(rq->body, "Privileged", false) ||
        !cJSON_AddStringToObject(rq->body, "User", user) ||
        !cJSON_AddStringToObject(rq->body, "WorkingDir", rq->workdir) ||
        (cmd = cJSON_AddArrayToObject(rq->body, "Cmd")) == NULL ||
        (arr = cJSON_AddArrayToObject(rq->body, "Env")) == NULL) {
        r = dk__nomem(err, "exec");
        goto out;
    }
    for (size_t i = 0; i < rq->req.argc; i++) {
        if (!cJSON_AddItemToArray(cmd, cJSON_CreateString(rq->req.argv[i]))) {
            r = dk__nomem(err, "argv");
            goto out;
        }
    }
    for (size_t i = 0; i < merged.n; i++) {
        char *kv = NULL;

        total += strlen(merged.vars[i].name) + strlen(merged.vars[i].value) + 2;
        if (asprintf(&kv, "%s=%s", merged.vars[i].name, merged.vars[i].value) < 0 ||
            !cJSON_AddItemToArray(arr, cJSON_CreateString(kv))) {
            free(kv);
            r = dk__nomem(err, "env");
            goto out;
        }
        free(kv);
    }
    if (total > CORDON_ARGS_TOTAL_MAX)
        r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                             "argv and env: %zu bytes together, more than the limit of %u", total,
                             CORDON_ARGS_TOTAL_MAX);
    rq->env = merged;
    memset(&merged, 0, sizeof(merged));
out:
    cordon_env_clear(&merged);
    return r;
}

/* ---- the workspace_env directories ------------------------------------------ */

int dk__make_dirs(const struct cordon_resource *res, struct dk_conn *conn,
                  const struct dk_state *st, const struct dk_request *rq,
                  struct cordon_error *err)
{
    uid_t *uids = NULL;
    gid_t *gids = NULL;
    mode_t *modes = NULL;
    int r = 0;

    if (rq->must_exist != NULL) {
        char *where = workspace_path(rq->must_exist), *esc = where ? dk__escape(where) : NULL;
        char path[600];
        long status = 0;

        if (esc != NULL)
            snprintf(path, sizeof(path), "/containers/%s/archive?path=%s", st->container_id, esc);
        free(where);
        free(esc);
        if (esc == NULL)
            return dk__nomem(err, "workspace_env");
        r = dk__api(conn, "HEAD", path, NULL, "workspace_env", &status, NULL, err);
        if (status == 404)
            return cordon_error_set(err, CORDON_E_NOT_FOUND, 0,
                                    "workspace_env: \"%s\" is missing, and nothing is created "
                                    "inside the read-only source/", rq->must_exist);
        if (r < 0)
            return r;
    }
    if (rq->ndirs == 0)
        return 0;
    /* One PUT of directory entries, every parent with its own entry, so
     * that a link planted on the way is refused rather than followed. */
    uids = calloc(rq->ndirs, sizeof(*uids));
    gids = calloc(rq->ndirs, sizeof(*gids));
    modes = calloc(rq->ndirs, sizeof(*modes));
    if (uids == NULL || gids == NULL || modes == NULL) {
        r = dk__nomem(err, "workspace_env");
        goto out;
    }
    for (size_t i = 0; i < rq->ndirs; i++) {
        uids[i] = st->uid;
        gids[i] = st->gid;
        modes[i] = 0755;
    }
    r = dk__archive_put_dirs(res, conn, st->container_id, (const char *const *)rq->dirs, uids,
                             gids, modes, rq->ndirs, "workspace_env", err);
out:
    free(uids);
    free(gids);
    free(modes);
    return r;
}

/* ---- the attached stream ------------------------------------------------------ */

/* Why the pump stopped before the stream ended. */
enum stop { STOP_NONE, STOP_CANCEL, STOP_DEADLINE };

struct pump {
    struct dk_stream *s;
    const struct cordon_exec_io *io;
    uint64_t deadline;          /* monotonic ms of the backstop */
    unsigned char hdr[8];
    size_t hdr_len;
    uint32_t frame_left;
    int frame_type;
    bool delivered;             /* any output went to the host */
    bool holding;               /* the first stdout bytes may be the daemon's error */
    char held[DK_HELD_MAX];
    size_t held_len;
    enum stop stop;
};

static bool cancel_fired(int fd)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };

    return fd >= 0 && poll(&p, 1, 0) > 0;
}

/*
 * Write all of buf to fd, in chunks that never block after POLLOUT, while
 * still noticing cancel and the backstop. A host that passed no fd (or
 * whose reader went away) gets the bytes dropped.
 */
static int write_out(struct pump *p, int fd, const char *buf, size_t len,
                     struct cordon_error *err)
{
    while (len > 0 && fd >= 0) {
        struct pollfd pfd[2] = { { .fd = fd, .events = POLLOUT },
                                 { .fd = p->io->cancel_fd, .events = POLLIN } };
        uint64_t now = cordon_now_monotonic_ms();
        ssize_t n;
        int k;

        if (now >= p->deadline) {
            p->stop = STOP_DEADLINE;
            return 0;
        }
        k = poll(pfd, p->io->cancel_fd >= 0 ? 2 : 1, (int)(p->deadline - now < INT_MAX
                                                             ? p->deadline - now : INT_MAX));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return cordon_error_set(err, CORDON_E_IO, errno, "exec: poll: %s", strerror(errno));
        if (p->io->cancel_fd >= 0 && pfd[1].revents != 0) {
            p->stop = STOP_CANCEL;
            return 0;
        }
        if (pfd[0].revents == 0)
            continue;
        n = write(fd, buf, len < DK_WRITE_CHUNK ? len : DK_WRITE_CHUNK);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        /* Nobody reads any more: the process still runs to its end. */
        if (n < 0 && errno == EPIPE)
            return 0;
        if (n < 0)
            return cordon_error_set(err, CORDON_E_IO, errno, "exec: writing the output: %s",
                                    strerror(errno));
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static int flush_held(struct pump *p, struct cordon_error *err)
{
    size_t len = p->held_len;

    p->holding = false;
    p->held_len = 0;
    p->delivered = p->delivered || len > 0;
    return write_out(p, p->io->stdout_fd, p->held, len, err);
}

/* One frame's payload bytes to its stream. */
static int deliver(struct pump *p, const char *buf, size_t len, struct cordon_error *err)
{
    int fd = p->frame_type == 1 ? p->io->stdout_fd : p->io->stderr_fd;
    int r;

    if (p->holding && p->frame_type == 1) {
        size_t keep = len < DK_HELD_MAX - p->held_len ? len : DK_HELD_MAX - p->held_len;
        size_t cmp;

        memcpy(p->held + p->held_len, buf, keep);
        p->held_len += keep;
        cmp = p->held_len < sizeof(start_failure) - 1 ? p->held_len : sizeof(start_failure) - 1;
        /* Still looks like the daemon's message: keep it back until the end. */
        if (keep == len && memcmp(p->held, start_failure, cmp) == 0)
            return 0;
        r = flush_held(p, err);
        if (r < 0 || p->stop != STOP_NONE)
            return r;
        buf += keep;
        len -= keep;
    } else if (p->holding) {
        r = flush_held(p, err);
        if (r < 0 || p->stop != STOP_NONE)
            return r;
    }
    p->delivered = p->delivered || len > 0;
    return write_out(p, fd, buf, len, err);
}

/* Split received bytes into frames: [type, 0, 0, 0, size (big endian)]. */
static int feed(struct pump *p, const char *buf, size_t len, struct cordon_error *err)
{
    while (len > 0 && p->stop == STOP_NONE) {
        int r;

        if (p->frame_left == 0) {
            p->hdr[p->hdr_len++] = (unsigned char)*buf++;
            len--;
            if (p->hdr_len < 8)
                continue;
            p->hdr_len = 0;
            p->frame_type = p->hdr[0];
            p->frame_left = (uint32_t)p->hdr[4] << 24 | (uint32_t)p->hdr[5] << 16 |
                            (uint32_t)p->hdr[6] << 8 | p->hdr[7];
            /* 3 is the daemon's own error stream (newer APIs): stderr. */
            if (p->frame_type == 3)
                p->frame_type = 2;
            if (p->frame_type != 1 && p->frame_type != 2)
                return cordon_error_set(err, CORDON_E_PROVIDER, 0,
                                        "exec stream: frame of unknown type %d", p->hdr[0]);
            continue;
        }
        {
            size_t n = len < p->frame_left ? len : p->frame_left;

            r = deliver(p, buf, n, err);
            if (r < 0)
                return r;
            buf += n;
            len -= n;
            p->frame_left -= (uint32_t)n;
        }
    }
    return 0;
}

/* True for the host's /dev/null: then the process gets no stdin at all. */
static bool is_dev_null(int fd)
{
    struct stat st;

    return fd < 0 || (fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 &&
                      minor(st.st_rdev) == 3);
}

/* Run the stream until it ends, cancel fires or the backstop passes. */
static int pump_run(struct pump *p, bool attach_stdin, struct cordon_error *err)
{
    char *rbuf = malloc(DK_RECV_CHUNK), *ibuf = attach_stdin ? malloc(DK_RECV_CHUNK) : NULL;
    size_t in_off = 0, in_len = 0;
    bool stdin_open = attach_stdin, eof = false;
    int r = 0;

    if (rbuf == NULL || (attach_stdin && ibuf == NULL)) {
        r = dk__nomem(err, "exec");
        goto out;
    }
    while (!eof && p->stop == STOP_NONE) {
        struct pollfd pfd[3];
        int n = 0, i_cancel = -1, i_in = -1, k;
        uint64_t now = cordon_now_monotonic_ms();

        if (now >= p->deadline) {
            p->stop = STOP_DEADLINE;
            break;
        }
        pfd[n++] = (struct pollfd){ .fd = p->s->fd,
                                    .events = (short)(POLLIN | (in_len > 0 ? POLLOUT : 0)) };
        if (p->io->cancel_fd >= 0)
            pfd[i_cancel = n++] = (struct pollfd){ .fd = p->io->cancel_fd, .events = POLLIN };
        if (stdin_open && in_len == 0)
            pfd[i_in = n++] = (struct pollfd){ .fd = p->io->stdin_fd, .events = POLLIN };
        /* Bytes read with the headers are waiting: do not sleep on the socket. */
        k = poll(pfd, (nfds_t)n, p->s->pending_len > 0 ? 0
                                 : (int)(p->deadline - now < INT_MAX ? p->deadline - now
                                                                     : INT_MAX));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            r = cordon_error_set(err, CORDON_E_IO, errno, "exec: poll: %s", strerror(errno));
            break;
        }
        /* Cancel first: a flood of output must not delay the kill. */
        if (i_cancel >= 0 && pfd[i_cancel].revents != 0) {
            p->stop = STOP_CANCEL;
            break;
        }
        if (in_len > 0 && (pfd[0].revents & POLLOUT)) {
            size_t sent = 0;

            /* A process that exited before reading all of its stdin closes
             * that side: the rest is dropped, its output still comes. */
            r = dk__stream_send(p->s, ibuf + in_off, in_len, &sent, NULL);
            if (r < 0) {
                stdin_open = false;
                sent = in_len;
            }
            in_off += r != 1 ? sent : 0;
            in_len -= r != 1 ? sent : 0;
            r = 0;
        }
        if (i_in >= 0 && pfd[i_in].revents != 0) {
            ssize_t got = read(p->io->stdin_fd, ibuf, DK_RECV_CHUNK);

            if (got > 0) {
                in_off = 0;
                in_len = (size_t)got;
            } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
                /* End of stdin: the process reads EOF; its output keeps coming. */
                stdin_open = false;
                shutdown(p->s->fd, SHUT_WR);
            }
        }
        if ((pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) || p->s->pending_len > 0) {
            size_t got = 0;

            r = dk__stream_recv(p->s, rbuf, DK_RECV_CHUNK, &got, &eof, err);
            if (r == 1) {
                r = 0;
                continue;
            }
            if (r < 0)
                break;
            r = feed(p, rbuf, got, err);
            if (r < 0)
                break;
        }
    }
out:
    free(rbuf);
    free(ibuf);
    return r;
}

/* ---- after the stream ------------------------------------------------------------ */

/* The exec's exit code and pid, once the daemon has seen it end. */
static int exec_wait(struct dk_conn *conn, const char *exec_id, const struct pump *p,
                     int *ret_code, long *ret_pid, enum stop *ret_stop, struct cordon_error *err)
{
    uint64_t until = cordon_now_monotonic_ms() + DK_EXIT_WAIT_MS;
    char path[160];
    unsigned pause = 1;

    snprintf(path, sizeof(path), "/exec/%s/json", exec_id);
    for (;;) {
        cJSON *doc = NULL;
        long status = 0;
        int r = dk__api(conn, "GET", path, NULL, "exec: inspect", &status, &doc, err);
        const cJSON *code, *pid;
        bool running;

        if (status == 404)
            return cordon_error_set(err, CORDON_E_NOT_FOUND, 0,
                                    "exec: the container ended during the exec (terminated or "
                                    "expired)");
        if (r < 0)
            return r;
        running = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "Running"));
        code = cJSON_GetObjectItemCaseSensitive(doc, "ExitCode");
        pid = cJSON_GetObjectItemCaseSensitive(doc, "Pid");
        if (!running && cJSON_IsNumber(code)) {
            *ret_code = code->valueint;
            *ret_pid = cJSON_IsNumber(pid) ? (long)pid->valuedouble : -1;
            cJSON_Delete(doc);
            return 0;
        }
        cJSON_Delete(doc);
        /* The stream can close a moment before the daemon records the exit. */
        if (cancel_fired(p->io->cancel_fd)) {
            *ret_stop = STOP_CANCEL;
            return 0;
        }
        if (cordon_now_monotonic_ms() >= p->deadline) {
            *ret_stop = STOP_DEADLINE;
            return 0;
        }
        if (cordon_now_monotonic_ms() >= until)
            return cordon_error_set(err, CORDON_E_PROVIDER, 0,
                                    "exec: the stream ended but the daemon still reports the "
                                    "process running after %u ms", DK_EXIT_WAIT_MS);
        dk__sleep_ms(pause);
        pause = pause < 20 ? pause * 2 : 20;
    }
}

/* Did the memory cgroup kill something in the container since since_ms? */
static bool oom_since(struct dk_conn *conn, const char *container_id, uint64_t since_ms)
{
    char filters[200], *esc, path[400];
    struct dk_reply reply = { 0 };
    struct dk_req rq;
    uint64_t until = cordon_now_wall_ms();
    bool oom = false;

    snprintf(filters, sizeof(filters), "{\"container\":[\"%s\"],\"event\":[\"oom\"]}",
             container_id);
    esc = dk__escape(filters);
    if (esc == NULL)
        return false;
    /* until in the past makes the events call answer at once. */
    snprintf(path, sizeof(path), "/events?since=%" PRIu64 ".%03" PRIu64 "000000&until=%" PRIu64
                                 ".%03" PRIu64 "000000&filters=%s",
             since_ms / 1000, since_ms % 1000, until / 1000, until % 1000, esc);
    free(esc);
    dk__req_init(&rq, "GET", path);
    rq.timeout_ms = 10000;
    if (dk__conn_call(conn, &rq, &reply, NULL) == 0 && reply.status == 200 && reply.body != NULL)
        oom = strstr(reply.body, "\"oom\"") != NULL;
    dk__reply_clear(&reply);
    return oom;
}

/* SIGKILL from the memory cgroup shows only in the daemon's events,
 * which may trail the exit by a moment: look twice. */
bool dk__oom_killed(struct dk_conn *conn, const char *container_id, uint64_t since_ms)
{
    if (oom_since(conn, container_id, since_ms))
        return true;
    dk__sleep_ms(100);
    return oom_since(conn, container_id, since_ms);
}

/* A process that never started: the daemon's words, as an error. */
static int start_failed(const struct pump *p, const char *argv0, struct cordon_error *err)
{
    char text[400];
    size_t n = p->held_len < sizeof(text) - 1 ? p->held_len : sizeof(text) - 1;
    bool missing;

    for (size_t i = 0; i < n; i++)
        text[i] = (unsigned char)p->held[i] < 0x20 ? ' ' : p->held[i];
    text[n] = '\0';
    while (n > 0 && text[n - 1] == ' ')
        text[--n] = '\0';
    missing = strstr(text, "not found") != NULL || strstr(text, "no such file") != NULL;
    return cordon_error_set(err, missing ? CORDON_E_NOT_FOUND : CORDON_E_PROVIDER, 0,
                            "exec: \"%.100s\" could not be started in the sandbox: %s", argv0,
                            n > 0 ? text : "the daemon gave no reason");
}

/* The daemon's exec inspect folds a death by signal N into ExitCode 128+N
 * (containerd's shim does), so an exit 128+N may have been a signal: the
 * result says so ("signal_folded") rather than guess either way. */
int dk__exec_result(const struct cordon_host_v1 *host, const char *status, int code, int sig,
                    bool backstop, bool folded, char **ret, struct cordon_error *err)
{
    const struct cordon_exec_result r = { (enum cordon_run_status)cordon_run_status_parse(status),
                                          code, sig, folded, backstop, false };

    return cordon_exec_result_print_host(host, &r, ret, err);
}

int dk__exec_result_ended(const struct cordon_host_v1 *host, bool cancelled, bool folded,
                          char **ret, struct cordon_error *err)
{
    struct cordon_exec_result r = { CORDON_RUN_CANCELLED, 0, 0, folded, false, true };

    if (!cancelled) {
        r.status = CORDON_RUN_SIGNALED;
        r.signal = SIGKILL;
        r.backstop_timeout = true;
    }
    return cordon_exec_result_print_host(host, &r, ret, err);
}

int dk__op_exec(struct cordon_resource *res, const char *state_json, const char *request_json,
                const struct cordon_exec_io *io, char **ret_result_json, struct cordon_error *err)
{
    struct dk_state st = { 0 };
    struct dk_request rq = { 0 };
    struct dk_stream stream = { .fd = -1 };
    struct dk_conn *conn = NULL;
    struct pump *p = NULL;
    cJSON *created = NULL;
    char path[200], exec_id[DK_CONTAINER_ID_LEN + 1], *body = NULL;
    uint64_t remaining, started_wall;
    bool attach_stdin, oom = false;
    int code = -1, r;
    long pid = -1;

    if (res == NULL || io == NULL || ret_result_json == NULL ||
        io->struct_size < CORDON_EXEC_IO_V1_0_SIZE)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "exec: resource, io (struct_size >= %zu) and ret_result_json "
                                "required", (size_t)CORDON_EXEC_IO_V1_0_SIZE);
    /* Attaching stdin costs a pipe and a half-close; /dev/null needs neither. */
    attach_stdin = !is_dev_null(io->stdin_fd);
    r = dk__state_parse(res, state_json, true, &st, err);
    if (r == 0)
        r = request_parse(&st, request_json, attach_stdin, &rq, err);
    if (r < 0)
        goto out;
    /* A backstop only: the host keeps the clock and fires cancel_fd. */
    r = cordon_exec_backstop_ms(st.expires_at_ms, rq.timeout_ms, cordon_now_wall_ms(), &remaining,
                                err);
    if (r < 0)
        goto out;
    p = calloc(1, sizeof(*p));
    if (p == NULL) {
        r = dk__nomem(err, "exec");
        goto out;
    }
    p->deadline = cordon_now_monotonic_ms() + remaining;
    p->io = io;
    p->holding = true;
    p->s = &stream;
    if (st.agent && !res->cfg.no_agent) {
        bool used = false;

        r = dk__agent_exec(res, &st, &rq, io, remaining, &used, ret_result_json, err);
        if (used || r < 0)
            goto out;
    }

    r = dk__conn_open(&res->engine, &conn, err);
    if (r == 0)
        r = dk__make_dirs(res, conn, &st, &rq, err);
    if (r < 0)
        goto out;
    body = cJSON_PrintUnformatted(rq.body);
    if (body == NULL) {
        r = dk__nomem(err, "exec");
        goto out;
    }
    snprintf(path, sizeof(path), "/containers/%s/exec", st.container_id);
    {
        long status = 0;

        r = dk__api(conn, "POST", path, body, "exec: create", &status, &created, err);
        if (status == 404 || status == 409)
            r = cordon_error_set(err, CORDON_E_NOT_FOUND, 0,
                                 "exec: execution \"%s\" has no running container (terminated "
                                 "or expired)", st.execution_id);
        if (r < 0)
            goto out;
    }
    {
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(created, "Id"));

        snprintf(exec_id, sizeof(exec_id), "%s", id != NULL ? id : "");
    }
    if (strspn(exec_id, "0123456789abcdef") != DK_CONTAINER_ID_LEN) {
        r = cordon_error_set(err, CORDON_E_PROVIDER, 0, "exec: create answered no valid Id");
        goto out;
    }
    started_wall = cordon_now_wall_ms();
    snprintf(path, sizeof(path), "/exec/%s/start", exec_id);
    r = dk__stream_open(&res->engine, path, "{\"Detach\":false,\"Tty\":false}", &stream, err);
    if (r == 0)
        r = pump_run(p, attach_stdin, err);
    dk__stream_close(&stream);
    if (r < 0)
        goto out;
    if (p->stop == STOP_NONE)
        r = exec_wait(conn, exec_id, p, &code, &pid, &p->stop, err);
    if (r < 0)
        goto out;
    if (p->stop != STOP_NONE) {
        /* The exec API cannot end one exec's processes (the daemon kills
         * nothing when the client goes): the whole execution goes, every
         * process in it at once, and the result says so. */
        r = dk__container_remove(conn, st.container_id, err);
        if (r == 0)
            r = dk__exec_result_ended(res->host, p->stop == STOP_CANCEL, true, ret_result_json,
                                      err);
        goto out;
    }
    /* Pid 0: the runtime never started the process; what we held back is
     * the daemon's reason, not the program's output. */
    if (pid == 0) {
        r = start_failed(p, rq.req.argv[0], err);
        goto out;
    }
    if (p->holding) {
        r = flush_held(p, err);
        if (r < 0)
            goto out;
    }
    if (code == DK_OOM_EXIT)
        oom = dk__oom_killed(conn, st.container_id, started_wall);
    r = oom ? dk__exec_result(res->host, "oom", 0, SIGKILL, false, true, ret_result_json, err)
            : dk__exec_result(res->host, "exited", code, 0, false, true, ret_result_json, err);
out:
    dk__stream_close(&stream);
    free(body);
    free(p);
    cJSON_Delete(created);
    dk__conn_close(conn);
    request_clear(&rq);
    dk__state_clear(&st);
    return r;
}
