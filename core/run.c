/* core: the code-execution flow (core/run.h): the steps of one call,
 * from grant to close, each recorded in meta.events. The request is read
 * once by run-request.c; the execution goes through the one lifecycle of
 * core/execution.h (bind, provision, destroy, unbind); a stream becomes
 * result fields in run-stream.c. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <linux/magic.h>
#include <unistd.h>

#include "core/drive.h"
#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/json.h>
#include <cordon/sdk/spec.h>
#include <cordon/sdk/tar.h>
#include "core/adapter.h"
#include "core/execution.h"
#include "core/grant.h"
#include "core/limits.h"
#include "core/pool.h"
#include "core/record.h"
#include "core/run-internal.h"
#include "core/run.h"
#include "core/select.h"

/* Everything one call holds; released in run_finish whatever happened. */
struct run {
    struct cordon_ctx *ctx;
    cJSON *result, *meta, *events, *diagnostics;
    uint64_t started_ms;
    struct cordon__bundle *own_bundle;
    const struct cordon__bundle *bundle;
    struct cordon__plan *plan;
    struct cordon__run_request req;
    char *task_workspace;          /* a temporary task workspace we made, removed at the end */
    bool inline_outputs;           /* no caller's workspace: outputs go into the result */
    struct cordon__grant *grant;
    struct cordon__selection sel;
    struct cordon__bound b;
    bool provisioned;              /* provision was tried: something may exist to destroy */
    char *state;                   /* provider state of the execution (host alloc) */
    struct cordon__record *pooled; /* the claimed pool record, locked; removed after terminate */
    char execution_id[48];
    int cancel_fd;                 /* -1, or readable once the caller cancels */
    const char *status;
    int exit_code;                 /* -1 when none */
    double last_event_ms;          /* monotonic time of the last event */
};

/* Milliseconds since the last event, to the microsecond. */
static double step_ms(struct run *run)
{
    struct timespec ts;
    double now, d;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    now = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
    d = run->last_event_ms > 0 ? now - run->last_event_ms : 0;
    run->last_event_ms = now;
    return (double)(int64_t)(d * 1000 + 0.5) / 1000;
}

static void add_event(struct run *run, const char *step, uint64_t since_ms, bool ok,
                      const char *detail)
{
    cJSON *e = cJSON_CreateObject();

    (void)since_ms;
    cJSON_AddStringToObject(e, "step", step);
    cJSON_AddBoolToObject(e, "ok", ok);
    cJSON_AddNumberToObject(e, "ms", step_ms(run));
    if (detail != NULL)
        cordon_json_add_text(e, "detail", detail);
    cJSON_AddItemToArray(run->events, e);
}

/* {"code", "message"} into diagnostics: an error code, or a note's name. */
static void add_diag(cJSON *diagnostics, const char *code, const char *message)
{
    cJSON *d = cJSON_CreateObject();

    cJSON_AddStringToObject(d, "code", code);
    cordon_json_add_text(d, "message", message);
    cJSON_AddItemToArray(diagnostics, d);
}

/* A step failed in cordon or in the provider: record it, set the status. */
static int fail(struct run *run, const char *status, const char *step, uint64_t since,
                const struct cordon_error *e)
{
    add_event(run, step, since, false, e->message);
    add_diag(run->diagnostics, cordon_error_name(e->code != 0 ? e->code : CORDON_E_PROVIDER), e->message);
    run->status = status;
    return e->code != 0 ? e->code : CORDON_E_PROVIDER;
}

/* --- steps -------------------------------------------------------------- */

/*
 * Where a call's private task workspace goes: a file system in memory
 * when there is one, else the state directory. It holds only the bundle's
 * snapshot (bounded by the bundle limits) for the length of one call, so
 * it has no business on disk: there it costs a dozen directory creations
 * and removals (with `discard`, a device round trip for each freed block),
 * and a crash would leave it behind until someone looks. /dev/shm is used
 * when it is a root-owned sticky tmpfs: the directory mkdtemp makes there
 * (0700, a random name) cannot then be renamed or removed by anyone else.
 */
static const char *scratch_parent(const struct cordon_ctx *ctx)
{
    struct statfs sfs;
    struct stat st;

    if (statfs(ctx->state_dir, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC)
        return ctx->state_dir;
    if (lstat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0 &&
        (st.st_mode & S_ISVTX) != 0 && statfs("/dev/shm", &sfs) == 0 &&
        sfs.f_type == TMPFS_MAGIC)
        return "/dev/shm";
    return ctx->state_dir;
}

static int step_grant(struct run *run, struct cordon_error *err)
{
    uint64_t t = cordon_now_monotonic_ms();
    int r;

    if (run->req.workspace == NULL) {
        /* No task workspace: a private one for this call, removed at the
         * end; declared outputs come back inline in the result. */
        run->inline_outputs = true;
        r = cordon_fs_mkdtemp(scratch_parent(run->ctx), "cordon-run-", &run->task_workspace, err);
        if (r < 0)
            return fail(run, "error", "grant", t, err);
    }
    r = cordon__grant_open(run->req.workspace != NULL ? run->req.workspace : run->task_workspace,
                           CORDON_GRANT_SNAPSHOT, &run->grant, err);
    if (r < 0)
        return fail(run, "blocked", "grant", t, err);
    for (size_t i = 0; i < run->req.n_inputs; i++) {
        r = cordon__grant_add_input(run->grant, run->req.inputs[i], err);
        if (r < 0)
            return fail(run, "blocked", "grant", t, err);
    }
    r = cordon__grant_write_source(run->grant, run->bundle, err);
    if (r < 0)
        return fail(run, "error", "grant", t, err);
    cJSON_AddStringToObject(run->meta, "grant_id", run->grant->id);
    add_event(run, "grant", t, true, run->grant->id);
    return 0;
}

static int step_select(struct run *run, struct cordon_error *err)
{
    struct cordon__select_opts opts = { run->req.isolation, "code_execution", run->plan->toolchain,
                                        run->plan->min_version, run->req.best_effort };
    cJSON *probes = NULL;
    uint64_t t = cordon_now_monotonic_ms();
    int r;

    r = cordon__select(run->ctx, run->req.cands, run->req.n_cands, &opts, &run->sel, &probes, err);
    cJSON_AddItemToObject(run->meta, "probes", probes != NULL ? probes : cJSON_CreateArray());
    if (r < 0)
        return fail(run, "blocked", "select", t, err);
    cJSON_AddStringToObject(run->meta, "provider_id", run->sel.provider->id);
    cJSON_AddItemToObject(run->meta, "provider_facts", cJSON_Duplicate(run->sel.facts, 1));
    cJSON_AddStringToObject(run->meta, "selection_reason", run->sel.why);
    cJSON_AddItemToObject(run->meta, "verdict", cordon__selection_verdict(&run->sel, run->req.isolation));
    if (run->sel.best_effort != 0)
        add_diag(run->diagnostics, "best_effort_limits",
                 "the caller accepted some limits unenforced: see meta.verdict.limits_not_enforced");
    if (run->sel.preference_fallback)
        add_diag(run->diagnostics, "preference_fallback", "no candidate met the isolation preference");
    if (run->sel.unverified)
        add_diag(run->diagnostics, "unverified",
                 "the host could not observe the selected provider's isolation; its claimed axes count "
                 "as false");
    add_event(run, "select", t, true, run->sel.why);
    return 0;
}

/* Ensure: the selected provider bound with the selected config. */
static int step_ensure(struct run *run, struct cordon_error *err)
{
    uint64_t t = cordon_now_monotonic_ms();
    int r = cordon__bind_provider(run->ctx, run->sel.provider->id, run->sel.config, &run->b, err);

    if (r < 0)
        return fail(run, r == CORDON_E_DENIED ? "blocked" : "error", "ensure", t, err);
    add_event(run, "ensure", t, true, NULL);
    return 0;
}

static int step_provision(struct run *run, struct cordon_error *err)
{
    cJSON *image = run->req.image != NULL ? cJSON_CreateStringReference(run->req.image) : NULL;
    uint64_t t = cordon_now_monotonic_ms();
    char hex[17], key[65], *text = NULL;
    int r;

    /* A warm execution of exactly this sandbox, if `cordon pool fill`
     * left one: the selection above verified the provider as for a fresh
     * one, and the key holds everything the spec below would say. */
    r = cordon__pool_key(run->sel.provider->id, run->sel.config, image, &run->req.limits, NULL,
                         "code", key, err);
    if (r == 0)
        r = cordon__pool_claim(run->ctx, key, &run->pooled, err);
    if (r == 0 && run->pooled == NULL)
        r = cordon__random_hex(hex, 8, err);
    /* The pid in the id tells `cordon gc` that this unrecorded execution
     * belongs to a live run (see cordon__run_owner_alive). The run passes
     * the caller's image as given: the provider judges it. Its variables
     * go to its commands, not to the spec. */
    if (r == 0 && run->pooled == NULL) {
        snprintf(run->execution_id, sizeof(run->execution_id), "run-%ld-%s", (long)getpid(), hex);
        r = cordon__execution_spec(run->execution_id, &run->req.limits, CORDON_SPEC_LAYOUT_CODE,
                                   cordon_now_wall_ms() + run->req.limits.runtime_ms, image, NULL,
                                   &text, err);
    }
    cJSON_Delete(image);
    if (r < 0)
        return fail(run, "error", "provision", t, err);
    run->provisioned = true;
    if (run->pooled != NULL) {
        char *state = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(run->pooled->doc, "provider_state"));
        size_t len = state != NULL ? strlen(state) + 1 : 0;

        run->state = state != NULL ? run->ctx->host->alloc(len) : NULL;
        if (run->state == NULL) {
            free(state);
            cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
            return fail(run, "error", "provision", t, err);
        }
        memcpy(run->state, state, len);
        free(state);
        snprintf(run->execution_id, sizeof(run->execution_id), "%s", run->pooled->id);
        cJSON_AddStringToObject(run->meta, "execution_id", run->execution_id);
        cJSON_AddBoolToObject(run->meta, "pooled", true);
        add_event(run, "provision", t, true, "claimed from the pool");
        return 0;
    }
    /* No record: the id names its live cordon (gc leaves it alone). */
    r = cordon__execution_provision(run->ctx, &run->b, text, NULL, &run->state, err);
    free(text);
    if (r < 0)
        return fail(run, "error", "provision", t, err);
    cJSON_AddStringToObject(run->meta, "execution_id", run->execution_id);
    add_event(run, "provision", t, true, run->execution_id);
    return 0;
}

/*
 * Land: the grant's source/ into the execution's source/, as files when
 * the provider takes them (ABI 1.1 import_files: no tar stream is written
 * or parsed, and libarchive is never loaded for a run), else as one tar
 * stream.
 */
static int step_land(struct run *run, struct cordon_error *err)
{
    const struct cordon_provider_v1 *vt = &run->b.p->vt;
    struct cordon_tar_limits lim = { CORDON_BUNDLE_MAX_BYTES + (64ull << 20), 4096, 0, 0 };
    uint64_t t = cordon_now_monotonic_ms();
    struct cordon_error perr;
    char *files = NULL;
    int fd = memfd_create("cordon-land", MFD_CLOEXEC), r;

    if (fd < 0) {
        cordon_error_set(err, CORDON_E_IO, errno, "land: memfd_create: %s", strerror(errno));
        return fail(run, "error", "land", t, err);
    }
    if (vt->import_files != NULL)
        r = cordon__grant_source_files(run->grant, fd, &files, err);
    else
        r = cordon_tar_create_fd(run->grant->source_fd, "", fd, &lim, NULL, err);
    if (r == 0 && lseek(fd, 0, SEEK_SET) < 0)
        r = cordon_error_set(err, CORDON_E_IO, errno, "land: lseek: %s", strerror(errno));
    if (r == 0) {
        cordon_error_init(&perr);
        r = files != NULL
                ? vt->import_files(run->b.res, run->state, "source", files, fd, &perr)
                : vt->import_tar(run->b.res, run->state, "source", fd, &perr);
        if (r != 0)
            r = cordon_error_set(err, r < 0 ? r : CORDON_E_PROVIDER, perr.os_errno, "land: %s",
                                 perr.message);
    }
    free(files);
    close(fd);
    if (r < 0)
        return fail(run, "error", "land", t, err);
    cJSON_AddItemToObject(run->meta, "landing_manifest", cordon__bundle_manifest(run->bundle));
    add_event(run, "land", t, true, run->bundle->digest);
    return 0;
}

/* Run the plan's steps in order, stopping at the first that does not exit 0. */
static int step_run(struct run *run, struct cordon_error *err)
{
    uint64_t deadline = cordon_now_monotonic_ms() + run->req.timeout_ms;
    struct cordon_exec_outcome out;
    int r = 0;

    memset(&out, 0, sizeof(out));
    for (size_t i = 0; i < run->plan->n_steps; i++) {
        uint64_t t = cordon_now_monotonic_ms(), left = deadline > t ? deadline - t : 1;
        struct cordon_drive_opts opts;
        struct cordon_exec_request req;
        char *text = NULL, detail[160];

        cordon_exec_request_init(&req);
        r = cordon__plan_step_request(run->plan, i, left, &req, err);
        /* The caller's variables join the adapter's; the adapter's win. */
        for (size_t k = 0; r == 0 && k < run->req.environment.n; k++) {
            const struct cordon_env_var *v = &run->req.environment.vars[k];

            if (cordon_env_get(&req.env, v->name) == NULL)
                r = cordon_env_set(&req.env, v->name, v->value, err);
        }
        if (r == 0)
            r = cordon_exec_request_print(&req, &text, err);
        cordon_exec_request_clear(&req);
        cordon_exec_outcome_clear(&out);
        if (r < 0)
            return fail(run, "error", run->plan->steps[i].name, t, err);
        cordon__drive_opts_init(&opts);
        opts.host = run->ctx->host;
        opts.provider = &run->b.p->vt;
        opts.resource = run->b.res;
        opts.state_json = run->state;
        opts.request_json = text;
        opts.timeout_ms = left;
        opts.retention_bytes = run->req.retention;
        opts.output_budget = run->req.limits.max_output_bytes;
        opts.cancel_fd = run->cancel_fd;
        r = cordon__drive_exec(&opts, &out, err);
        free(text);
        if (r < 0) {
            cordon_exec_outcome_clear(&out);
            run->exit_code = r == CORDON_E_NOT_FOUND ? 127 : -1;
            return fail(run, "error", run->plan->steps[i].name, t, err);
        }
        snprintf(detail, sizeof(detail), "%s%s%d", cordon_run_status_name(out.status),
                 out.status == CORDON_RUN_EXITED ? " " : " signal ",
                 out.status == CORDON_RUN_EXITED ? out.exit_code : out.signal);
        add_event(run, run->plan->steps[i].name, t,
                  out.status == CORDON_RUN_EXITED && out.exit_code == 0, detail);
        if (out.status != CORDON_RUN_EXITED || out.exit_code != 0)
            break;
    }
    /* The result carries the last step's streams: the failing build's
     * diagnostics, or the program's own output. */
    cordon__result_add_stream(run->result, "stdout", out.out.data, out.out.len, out.out.head_len,
                              out.out.dropped_bytes);
    cordon__result_add_stream(run->result, "stderr", out.err.data, out.err.len, out.err.head_len,
                              out.err.dropped_bytes);
    switch (out.status) {
    case CORDON_RUN_EXITED:
        run->exit_code = out.exit_code;
        run->status = out.exit_code == 0 ? "success" : "error";
        break;
    case CORDON_RUN_SIGNALED:
        run->exit_code = 128 + out.signal;
        cJSON_AddNumberToObject(run->result, "signal", out.signal);
        run->status = "error";
        break;
    default:
        run->status = cordon_run_status_name(out.status);
        break;
    }
    cordon_exec_outcome_clear(&out);
    return 0;
}

/* ["output/<p>", ...] of the bundle's declared outputs; NULL without memory. */
static char *declared_paths(const struct cordon__bundle *b)
{
    cJSON *a = cJSON_CreateArray();
    char *text = NULL;
    bool ok = a != NULL;

    for (size_t i = 0; ok && i < b->n_outputs; i++) {
        char *p = NULL;

        if (asprintf(&p, "output/%s", b->outputs[i]) < 0)
            break;
        ok = cJSON_AddItemToArray(a, cJSON_CreateString(p));
        free(p);
    }
    ok = ok && (size_t)cJSON_GetArraySize(a) == b->n_outputs;
    if (ok)
        text = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    return text;
}

/*
 * Without a task workspace of the caller's, each collected output is read
 * back from the call's own output root (cordon placed it there a moment
 * ago, bounded by the inline limits) into its entry: "encoding" "utf-8"
 * with the text in "data" when the bytes are strict UTF-8 without NUL,
 * else "base64" with the bytes in standard base64.
 */
static int inline_data(const struct cordon__grant *g, cJSON *outputs, struct cordon_error *err)
{
    cJSON *o;

    cJSON_ArrayForEach(o, outputs) {
        const cJSON *path = cJSON_GetObjectItemCaseSensitive(o, "path");
        char *buf = NULL, *b64 = NULL;
        size_t len = 0;
        bool text;
        int r;

        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "missing")))
            continue;
        /* "output/<p>" names <p> beneath the output root */
        r = cordon_fs_read_file(g->output_fd, path->valuestring + strlen("output/"),
                                CORDON_GRANT_INLINE_MAX_FILE_BYTES, &buf, &len, err);
        if (r < 0)
            return r;
        text = cordon_text_is_utf8(buf, len) && memchr(buf, '\0', len) == NULL;
        if (!text && (b64 = cordon__base64_encode((const unsigned char *)buf, len)) == NULL) {
            free(buf);
            return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "outputs: out of memory");
        }
        cJSON_AddStringToObject(o, "encoding", text ? "utf-8" : "base64");
        if (cJSON_AddStringToObject(o, "data", text ? buf : b64) == NULL)
            r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "outputs: out of memory");
        free(buf);
        free(b64);
        if (r < 0)
            return r;
    }
    return 0;
}

static int step_collect(struct run *run, struct cordon_error *err)
{
    const struct cordon_provider_v1 *vt = &run->b.p->vt;
    struct cordon_tar_limits lim = { 64ull << 20, 4096, 0, 0 };
    uint64_t t = cordon_now_monotonic_ms();
    int fd = -1, staging = -1, r;
    struct cordon_error perr;
    cJSON *outputs = NULL;
    char *paths = NULL;

    if (run->bundle->n_outputs == 0)
        return 0;
    fd = memfd_create("cordon-collect", MFD_CLOEXEC);
    if (fd < 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "collect: memfd_create: %s", strerror(errno));
        goto out;
    }
    /* Only the declared outputs are read where the provider can name them
     * (export_files, ABI 1.2): what else the program left in output/
     * changes neither the outcome nor the time. Otherwise all of output/,
     * bounded. */
    cordon_error_init(&perr);
    if (vt->export_files != NULL) {
        paths = declared_paths(run->bundle);
        if (paths == NULL)
            r = cordon_error_set(&perr, CORDON_E_NOMEM, ENOMEM, "out of memory");
        else
            r = vt->export_files(run->b.res, run->state, paths, fd, &perr);
        lim.max_entries = run->bundle->n_outputs;
        /* Inline, staging lives in the call's own workspace (often memory):
         * unpack no more than the inline total plus one file, so that
         * grant_collect still names the inline limit an output passed. */
        if (run->inline_outputs)
            lim.max_bytes = CORDON_GRANT_INLINE_MAX_TOTAL_BYTES + CORDON_GRANT_INLINE_MAX_FILE_BYTES;
    } else {
        r = vt->export_tar(run->b.res, run->state, "output", fd, &perr);
    }
    if (r != 0) {
        r = cordon_error_set(err, r < 0 ? r : CORDON_E_PROVIDER, perr.os_errno, "collect: %s",
                             perr.message);
        goto out;
    }
    r = cordon_fs_mkdirs_beneath(run->grant->area_fd, "staging", 0700, err);
    if (r == 0)
        r = cordon_fs_open_beneath(run->grant->area_fd, "staging", O_RDONLY | O_DIRECTORY, 0,
                                   &staging, err);
    if (r == 0 && lseek(fd, 0, SEEK_SET) < 0)
        r = cordon_error_set(err, CORDON_E_IO, errno, "collect: lseek: %s", strerror(errno));
    /* Symlinks are kept as links in staging so that collect can name the
     * declared output that is one; nothing ever follows them. */
    if (r == 0)
        r = cordon_tar_extract_fd(fd, staging, &lim, CORDON_TAR_ALLOW_SYMLINKS, NULL, err);
    /* export_files names entries from /workspace, export_tar from output/. */
    if (r == 0 && paths != NULL) {
        int out_fd = -1;

        r = cordon_fs_mkdirs_beneath(staging, "output", 0700, err);
        if (r == 0)
            r = cordon_fs_open_beneath(staging, "output", O_RDONLY | O_DIRECTORY, 0, &out_fd, err);
        if (r == 0) {
            close(staging);
            staging = out_fd;
        }
    }
    if (r == 0)
        r = cordon__grant_collect(run->grant, staging, run->bundle, run->inline_outputs, &outputs,
                                  err);
    if (r == 0 && run->inline_outputs)
        r = inline_data(run->grant, outputs, err);
out:
    free(paths);
    if (fd >= 0)
        close(fd);
    if (staging >= 0)
        close(staging);
    if (r < 0) {
        char msg[sizeof(err->message)];
        snprintf(msg, sizeof(msg), "%s", err->message);
        cordon_error_set(err, r, err->os_errno, "collect: %s", msg);
        return fail(run, "error", "collect", t, err);
    }
    cJSON_ReplaceItemInObjectCaseSensitive(run->result, "outputs", outputs);
    add_event(run, "collect", t, true, NULL);
    return 0;
}

/* A teardown step that failed: recorded, and the call is no success. */
static void fail_after(struct run *run, const char *step, uint64_t t, const struct cordon_error *e)
{
    add_event(run, step, t, false, e->message);
    add_diag(run->diagnostics, cordon_error_name(e->code), e->message);
    run->status = strcmp(run->status, "success") == 0 ? "error" : run->status;
}

/* terminate, release, close: run whatever happened before. */
static void teardown(struct run *run)
{
    struct cordon_error perr;
    uint64_t t;

    cordon_error_init(&perr);
    if (run->provisioned) {
        t = cordon_now_monotonic_ms();
        /* Used once: a pooled execution goes with its record. One that
         * would not terminate keeps it ("running", unlocked below), and gc
         * reclaims it. */
        if ((run->pooled != NULL ? cordon__execution_destroy_bound(run->ctx, run->pooled, &run->b, &perr)
                                 : cordon__execution_end(&run->b, run->execution_id, run->state, &perr)) < 0)
            fail_after(run, "terminate", t, &perr);
        else
            add_event(run, "terminate", t, true, NULL);
    }
    if (run->state != NULL)
        run->ctx->host->free(run->state);
    run->state = NULL;
    cordon__record_close(run->pooled);
    run->pooled = NULL;
    if (run->b.res != NULL) {
        t = cordon_now_monotonic_ms();
        cordon_error_init(&perr);
        if (cordon__unbind_provider(&run->b, &perr) < 0) {
            fail_after(run, "release", t, &perr);
            cJSON_AddBoolToObject(run->meta, "quarantined", true);
        } else {
            add_event(run, "release", t, true, NULL);
        }
    }
    if (run->grant != NULL) {
        t = cordon_now_monotonic_ms();
        cordon_error_init(&perr);
        if (cordon__grant_close(run->grant, &perr) < 0) {
            add_event(run, "close", t, false, perr.message);
            add_diag(run->diagnostics, cordon_error_name(perr.code), perr.message);
        } else {
            add_event(run, "close", t, true, NULL);
        }
        cordon__grant_free(run->grant);
        run->grant = NULL;
    }
    if (run->task_workspace != NULL) {
        cordon_fs_remove_tree_path(run->task_workspace, NULL);
        free(run->task_workspace);
        run->task_workspace = NULL;
    }
}

static cJSON *result_new(void)
{
    cJSON *r = cJSON_CreateObject();

    cJSON_AddBoolToObject(r, "ok", false);
    cJSON_AddStringToObject(r, "status", "blocked");
    cJSON_AddNullToObject(r, "exit_code");
    cJSON_AddArrayToObject(r, "outputs");
    cJSON_AddArrayToObject(r, "diagnostics");
    cJSON_AddObjectToObject(r, "meta");
    return r;
}

/* The caller cancelled (cancel_fd readable): the run stops before its next
 * step, records why, and its teardown destroys what it made. */
static bool cancelled(struct run *run, const char *before)
{
    struct pollfd p = { .fd = run->cancel_fd, .events = POLLIN };

    if (run->cancel_fd < 0 || poll(&p, 1, 0) <= 0)
        return false;
    run->status = "cancelled";
    add_event(run, before, cordon_now_monotonic_ms(), false, "cancelled before this step");
    add_diag(run->diagnostics, "cancelled", "the caller cancelled the run");
    return true;
}

int cordon__run(struct cordon_ctx *ctx, const cJSON *request, const struct cordon__bundle *bundle, int cancel_fd,
                cJSON **ret_result, struct cordon_error *err)
{
    struct run run;
    struct cordon_error e;
    uint64_t t;

    memset(&run, 0, sizeof(run));
    run.ctx = ctx;
    run.cancel_fd = cancel_fd;
    run.started_ms = cordon_now_monotonic_ms();
    step_ms(&run);
    run.result = result_new();
    if (run.result == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
    run.meta = cJSON_GetObjectItemCaseSensitive(run.result, "meta");
    run.diagnostics = cJSON_GetObjectItemCaseSensitive(run.result, "diagnostics");
    cJSON_AddStringToObject(run.meta, "contract", CORDON_RUN_CONTRACT);
    run.events = cJSON_AddArrayToObject(run.meta, "events");
    run.status = "blocked";
    run.exit_code = -1;
    cordon_error_init(&e);

    /* Validate everything from outside before anything is created. */
    t = cordon_now_monotonic_ms();
    run.bundle = bundle;
    if (!cJSON_IsObject(request))
        cordon_error_set(&e, CORDON_E_INVALID, 0, "request: must be a JSON object");
    else if (bundle == NULL && cordon__bundle_from_request(request, &run.own_bundle, &e) == 0)
        run.bundle = run.own_bundle;
    if (run.bundle == NULL || cordon__run_request_parse(ctx, request, &run.req, &e) < 0 ||
        cordon__adapter_plan(run.bundle, &run.req.limits, &run.plan, &e) < 0) {
        fail(&run, "blocked", "validate", t, &e);
        goto done;
    }
    cJSON_AddStringToObject(run.meta, "bundle_id", run.bundle->id);
    cJSON_AddStringToObject(run.meta, "bundle_digest", run.bundle->digest);
    add_event(&run, "validate", t, true, NULL);

    if (cancelled(&run, "grant") || step_grant(&run, &e) < 0 || cancelled(&run, "select") ||
        step_select(&run, &e) < 0 || cancelled(&run, "ensure") || step_ensure(&run, &e) < 0 ||
        cancelled(&run, "provision") || step_provision(&run, &e) < 0 || cancelled(&run, "land") ||
        step_land(&run, &e) < 0 || cancelled(&run, "run") || step_run(&run, &e) < 0)
        goto done;
    if (strcmp(run.status, "success") == 0 || strcmp(run.status, "error") == 0)
        step_collect(&run, &e);
done:
    teardown(&run);
    cJSON_ReplaceItemInObjectCaseSensitive(run.result, "status", cJSON_CreateString(run.status));
    cJSON_ReplaceItemInObjectCaseSensitive(run.result, "ok",
                                           cJSON_CreateBool(strcmp(run.status, "success") == 0));
    if (run.exit_code >= 0)
        cJSON_ReplaceItemInObjectCaseSensitive(run.result, "exit_code",
                                               cJSON_CreateNumber(run.exit_code));
    if (strcmp(run.status, "success") != 0 && cJSON_GetArraySize(run.diagnostics) > 0)
        cJSON_AddItemToObject(run.result, "error",
                              cJSON_Duplicate(cJSON_GetArrayItem(run.diagnostics, 0), 1));
    if (cJSON_GetObjectItemCaseSensitive(run.result, "stdout") == NULL) {
        cordon__result_add_stream(run.result, "stdout", "", 0, 0, 0);
        cordon__result_add_stream(run.result, "stderr", "", 0, 0, 0);
    }
    cJSON_AddNumberToObject(run.meta, "duration_ms", (double)(cordon_now_monotonic_ms() - run.started_ms));
    cordon__selection_clear(&run.sel);
    cordon__run_request_clear(&run.req);
    cordon__plan_free(run.plan);
    cordon__bundle_free(run.own_bundle);
    /* Facts, states and results from the provider are embedded as they
     * came: the document leaves here strict UTF-8. */
    cordon_json_sanitize(run.result);
    *ret_result = run.result;
    return 0;
}

int cordon_run_json(struct cordon_ctx *ctx, const char *request_json, char **ret_result_json,
                    struct cordon_error *err)
{
    return cordon_run_cancellable_json(ctx, request_json, -1, ret_result_json, err);
}

int cordon_run_cancellable_json(struct cordon_ctx *ctx, const char *request_json, int cancel_fd,
                                char **ret_result_json, struct cordon_error *err)
{
    cJSON *request = NULL, *result = NULL;
    struct cordon_error perr;
    int r;

    if (ctx == NULL || ret_result_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "cordon_run_json: ctx and ret_result_json are required");
    cordon_error_init(&perr);
    r = cordon__json_parse_bounded("request", request_json, &request, &perr);
    if (r < 0) {
        /* A request that is not even JSON still gets a result document. */
        result = result_new();
        add_diag(cJSON_GetObjectItemCaseSensitive(result, "diagnostics"), cordon_error_name(r), perr.message);
        cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(result, "meta"), "contract",
                                CORDON_RUN_CONTRACT);
    } else {
        r = cordon__run(ctx, request, NULL, cancel_fd, &result, err);
        cJSON_Delete(request);
        if (r < 0)
            return r;
    }
    *ret_result_json = cJSON_PrintUnformatted(result);
    cJSON_Delete(result);
    return *ret_result_json != NULL ? 0 : cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
}

bool cordon__run_owner_alive(const char *execution_id)
{
    char *end = NULL;
    long pid;

    if (strncmp(execution_id, "run-", 4) != 0)
        return false;
    pid = strtol(execution_id + 4, &end, 10);
    if (end == execution_id + 4 || *end != '-' || pid <= 0)
        return false;
    return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}
