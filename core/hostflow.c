/* core: the execution-host lifecycle — provision, exec, checkpoint,
 * restore, terminate, reclaim, ls, gc (json.md §7-§11). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cordon/sdk/capture.h>
#include "sdk/drive.h"
#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/json.h>
#include <cordon/sdk/path.h>
#include <cordon/sdk/request.h>
#include <cordon/sdk/runner.h>
#include <cordon/sdk/spec.h>
#include "core/checkpoint.h"
#include "core/config.h"
#include "core/env.h"
#include "core/gitws.h"   /* struct cordon__git_export: the helper's report */
#include "core/limits.h"
#include "core/loader.h"
#include "core/pool.h"
#include "core/record.h"
#include "core/run.h"
#include "core/select.h"

#define METADATA_MAX_BYTES (16u << 10)

/* A bound provider for one call: loaded, ensured, released at the end. */
struct bound {
    struct cordon__loaded *p;
    struct cordon_resource *res;
};

static int done_json(cJSON *doc, char **ret_json, struct cordon_error *err)
{
    char *text;

    /* What the provider sent is embedded as it came: the document leaves
     * here strict UTF-8. */
    cordon_json_sanitize(doc);
    text = doc != NULL ? cJSON_PrintUnformatted(doc) : NULL;
    cJSON_Delete(doc);
    if (text == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
    *ret_json = text;
    return 0;
}

static void rfc3339(uint64_t ms, char *buf, size_t len)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;

    gmtime_r(&s, &tm);
    snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned)(ms % 1000));
}

/* --- binding -------------------------------------------------------------- */

static int bind_provider(struct cordon_ctx *ctx, const char *provider_id, const cJSON *config,
                         struct bound *ret, struct cordon_error *err)
{
    struct cordon_error perr;
    char *text;
    int r;

    memset(ret, 0, sizeof(*ret));
    r = cordon__loader_get(ctx, provider_id, &ret->p, err);
    if (r < 0)
        return r;
    text = cJSON_PrintUnformatted(config);
    if (text == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
    cordon_error_init(&perr);
    r = ret->p->vt.ensure(ctx->host, text, &ret->res, &perr);
    free(text);
    if (r != 0) {
        ret->res = NULL;
        return cordon_error_set(err, r < 0 ? r : CORDON_E_PROVIDER, perr.os_errno, "ensure %s: %s",
                                provider_id, perr.message);
    }
    return 0;
}

static void unbind_provider(struct bound *b)
{
    struct cordon_error perr;

    if (b->res != NULL) {
        cordon_error_init(&perr);
        if (b->p->vt.release(b->res, &perr) != 0)
            b->p->quarantined = true;
    }
    b->res = NULL;
}

static int bind_record(struct cordon_ctx *ctx, const struct cordon__record *rec, struct bound *ret,
                       struct cordon_error *err)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(rec->doc, "provider_id");

    if (!cJSON_IsString(id))
        return cordon_error_set(err, CORDON_E_IO, 0, "record %s: no provider_id", rec->id);
    return bind_provider(ctx, id->valuestring, cJSON_GetObjectItemCaseSensitive(rec->doc, "provider_config"),
                ret, err);
}

/* The provider's own state of a record as text, or NULL before it exists. */
static char *record_state(const struct cordon__record *rec)
{
    const cJSON *state = cJSON_GetObjectItemCaseSensitive(rec->doc, "provider_state");

    return cJSON_IsObject(state) ? cJSON_PrintUnformatted(state) : NULL;
}

/* The limits rec was provisioned with, read as every resources object is
 * (once, into a struct): a record whose resources no longer read so is
 * damaged, and nothing goes by a guess at what it meant. */
static int record_limits(const struct cordon__record *rec, struct cordon_limits *ret,
                         struct cordon_error *err)
{
    struct cordon_error perr;

    cordon_error_init(&perr);
    if (cordon_limits_from_json(cJSON_GetObjectItemCaseSensitive(rec->doc, "resources"), "resources",
                                ret, &perr) < 0)
        return cordon_error_set(err, CORDON_E_IO, 0, "record %s: %s", rec->id, perr.message);
    return 0;
}

/* Destroy the execution of rec (by its state, else by id) and remove the
 * record. A failure keeps the record, so that reclaim can try again. */
static int destroy(struct cordon_ctx *ctx, struct cordon__record *rec, const struct bound *b,
                   struct cordon_error *err)
{
    char *state = record_state(rec);
    struct cordon_error perr;
    int r;

    cordon_error_init(&perr);
    r = state != NULL ? b->p->vt.terminate(b->res, state, &perr)
                      : b->p->vt.reclaim(b->res, rec->id, &perr);
    free(state);
    if (r != 0)
        return cordon_error_set(err, r < 0 ? r : CORDON_E_PROVIDER, perr.os_errno,
                                "terminate %s: %s", rec->id, perr.message);
    return cordon__record_remove(ctx, rec, err);
}

int cordon__execution_destroy(struct cordon_ctx *ctx, struct cordon__record *rec,
                              struct cordon_error *err)
{
    struct bound b = { NULL, NULL };
    int r = bind_record(ctx, rec, &b, err);

    if (r == 0)
        r = destroy(ctx, rec, &b, err);
    unbind_provider(&b);
    return r;
}

/* --- provision validation -------------------------------------------------- */

struct spec {
    const char *provider;
    enum cordon__isolation isolation;
    cJSON *config;           /* owned */
    const cJSON *image;
    const cJSON *workspace;
    struct cordon_limits limits;
    const cJSON *environment;
    const cJSON *metadata;
    char id[65];
    bool id_given;           /* the caller named the execution: never a pooled one */
};

static int json_depth(const cJSON *v)
{
    int max = 0;

    for (const cJSON *c = v->child; c != NULL; c = c->next) {
        int d = json_depth(c);
        if (d > max)
            max = d;
    }
    return max + 1;
}

static bool hex64(const char *s)
{
    for (int i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return s[64] == '\0';
}

/* Pinned: "sha256:<64 hex>" or anything ending in "@sha256:<64 hex>". */
static bool image_pinned(const char *ref)
{
    const char *at = strrchr(ref, '@');

    if (strncmp(ref, "sha256:", 7) == 0 && hex64(ref + 7))
        return true;
    return at != NULL && strncmp(at + 1, "sha256:", 7) == 0 && hex64(at + 8);
}

static int check_keys(const char *field, const cJSON *obj, const char *const *keys, size_t n,
                      struct cordon_error *err)
{
    for (const cJSON *c = obj->child; c != NULL; c = c->next) {
        bool known = false;
        for (size_t i = 0; i < n && !known; i++)
            known = strcmp(c->string, keys[i]) == 0;
        if (!known)
            return cordon_error_set(err, CORDON_E_INVALID, 0, "%s%s%s: unknown key", field,
                                    field[0] ? "." : "", c->string);
    }
    return 0;
}

static int validate_spec(struct cordon_ctx *ctx, const cJSON *req, struct spec *ret,
                         struct cordon_error *err)
{
    static const char *const keys[] = { "provider", "provider_config", "allow_unsafe_local",
                                        "allow_unpinned", "image", "workspace", "resources",
                                        "network", "environment", "metadata", "execution_id",
                                        "isolation" };
    const cJSON *v, *mode;
    cJSON *over;
    char *meta;
    int r;

    memset(ret, 0, sizeof(*ret));
    if (!cJSON_IsObject(req))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "request: must be a JSON object");
    if ((r = check_keys("", req, keys, sizeof(keys) / sizeof(keys[0]), err)) < 0)
        return r;
    v = cJSON_GetObjectItemCaseSensitive(req, "provider");
    if (!cJSON_IsString(v))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "provider: required, a provider id");
    ret->provider = v->valuestring;
    if ((r = cordon__isolation_parse("isolation", cJSON_GetObjectItemCaseSensitive(req, "isolation"),
                                     &ret->isolation, err)) < 0)
        return r;
    if ((r = cordon_limits_from_json(cJSON_GetObjectItemCaseSensitive(req, "resources"), "resources", &ret->limits, err)) < 0)
        return r;
    /* Network: "none" only; anything else is refused, never downgraded. */
    v = cJSON_GetObjectItemCaseSensitive(req, "network");
    mode = cJSON_GetObjectItemCaseSensitive(v, "mode");
    if (v != NULL && (!cJSON_IsObject(v) || !cJSON_IsString(mode) || strcmp(mode->valuestring, "none") != 0 ||
                      cJSON_GetArraySize(v) != 1))
        return cordon_error_set(err, CORDON_E_UNSUPPORTED, 0,
                                "network: only {\"mode\": \"none\"} is supported; %s is refused, never downgraded",
                                cJSON_IsString(mode) ? mode->valuestring : "that value");
    ret->image = cJSON_GetObjectItemCaseSensitive(req, "image");
    if (ret->image != NULL && !cJSON_IsNull(ret->image)) {
        if (!cJSON_IsString(ret->image) || ret->image->valuestring[0] == '\0')
            return cordon_error_set(err, CORDON_E_INVALID, 0, "image: must be a string");
        if (!image_pinned(ret->image->valuestring) &&
            !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "allow_unpinned")))
            return cordon_error_set(
                err, CORDON_E_INVALID, 0,
                "image: \"%.*s\" is not pinned (NAME@sha256:<64 hex>, sha256:<64 hex> "
                "or PATH@sha256:<64 hex>); --allow-unpinned to accept it",
                cordon_text_fit(ret->image->valuestring, 200), ret->image->valuestring);
    }
    ret->workspace = cJSON_GetObjectItemCaseSensitive(req, "workspace");
    if (ret->workspace != NULL) {
        static const char *const wkeys[] = { "kind", "repository", "revision" };
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(ret->workspace, "kind");
        const cJSON *repo = cJSON_GetObjectItemCaseSensitive(ret->workspace, "repository");
        const cJSON *rev = cJSON_GetObjectItemCaseSensitive(ret->workspace, "revision");

        if (!cJSON_IsObject(ret->workspace) || !cJSON_IsString(kind))
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "workspace: must be {\"kind\": \"empty\"} or {\"kind\": \"git\", ...}");
        if ((r = check_keys("workspace", ret->workspace, wkeys, 3, err)) < 0)
            return r;
        if (strcmp(kind->valuestring, "git") == 0) {
            if (!cJSON_IsString(repo) || repo->valuestring[0] != '/')
                return cordon_error_set(err, CORDON_E_INVALID, 0,
                                        "workspace.repository: required, an absolute path");
            if (!cJSON_IsString(rev) || rev->valuestring[0] == '\0' || strlen(rev->valuestring) > 256)
                return cordon_error_set(err, CORDON_E_INVALID, 0,
                                        "workspace.revision: required, at most 256 bytes");
#ifndef HAVE_LIBGIT2
            /* Configured --without-libgit2: there is no cordon-git-export to
             * read the repository; refused before anything is provisioned. */
            return cordon_error_set(err, CORDON_E_UNSUPPORTED, 0,
                                    "workspace.kind: \"git\": this cordon was built without libgit2");
#endif
        } else if (strcmp(kind->valuestring, "empty") != 0 || repo != NULL || rev != NULL) {
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "workspace.kind: \"%.*s\" is not \"empty\" or \"git\"",
                                    cordon_text_fit(kind->valuestring, 40), kind->valuestring);
        }
    }
    ret->environment = cJSON_GetObjectItemCaseSensitive(req, "environment");
    if ((r = cordon__env_validate("environment", ret->environment, err)) < 0)
        return r;
    ret->metadata = cJSON_GetObjectItemCaseSensitive(req, "metadata");
    if (ret->metadata != NULL) {
        if (!cJSON_IsObject(ret->metadata))
            return cordon_error_set(err, CORDON_E_INVALID, 0, "metadata: must be a JSON object");
        meta = cJSON_PrintUnformatted(ret->metadata);
        r = meta != NULL && strlen(meta) <= METADATA_MAX_BYTES && json_depth(ret->metadata) <= 8;
        free(meta);
        if (!r)
            return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                    "metadata: more than %u bytes or deeper than 8 levels", METADATA_MAX_BYTES);
    }
    v = cJSON_GetObjectItemCaseSensitive(req, "execution_id");
    if (v != NULL) {
        if ((r = cordon_execution_id_check("execution_id", cJSON_GetStringValue(v), err)) < 0)
            return r;
        snprintf(ret->id, sizeof(ret->id), "%s", v->valuestring);
        ret->id_given = true;
    } else {
        char hex[25];
        if ((r = cordon__random_hex(hex, 12, err)) < 0)
            return r;
        snprintf(ret->id, sizeof(ret->id), "exec-%s", hex);
    }
    v = cJSON_GetObjectItemCaseSensitive(req, "provider_config");
    if (v != NULL && !cJSON_IsObject(v))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "provider_config: must be an object");
    over = cJSON_Duplicate(v != NULL ? v : NULL, 1);
    if (over == NULL)
        over = cJSON_CreateObject();
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "allow_unsafe_local")))
        cJSON_AddBoolToObject(over, "allow_unsafe_local", true);
    ret->config = cordon__json_merge(cordon__base_config(ctx, ret->provider), over);
    cJSON_Delete(over);
    return ret->config != NULL ? 0 : cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
}

/* --- streaming a tar between a producer and a consumer ------------------------ */

struct pump {
    pthread_t thread;
    int fd;                       /* the pipe end the producer writes */
    int (*produce)(void *arg, int fd, struct cordon_error *err);
    void *arg;
    int r;
    struct cordon_error err;
};

static void *pump_main(void *p)
{
    struct pump *pump = p;

    cordon_error_init(&pump->err);
    pump->r = pump->produce(pump->arg, pump->fd, &pump->err);
    /* EOF for the consumer, also when the producer failed half-way */
    close(pump->fd);
    pump->fd = -1;
    return NULL;
}

/* Run produce(arg, write_end) on a thread; the caller consumes *ret_read_fd
 * and then calls pump_join. */
static int pump_start(struct pump *pump, int (*produce)(void *, int, struct cordon_error *), void *arg,
                      int *ret_read_fd, struct cordon_error *err)
{
    int fds[2];

    memset(pump, 0, sizeof(*pump));
    if (pipe2(fds, O_CLOEXEC) < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "pipe: %s", strerror(errno));
    fcntl(fds[0], F_SETPIPE_SZ, 1 << 20);
    pump->fd = fds[1];
    pump->produce = produce;
    pump->arg = arg;
    if (pthread_create(&pump->thread, NULL, pump_main, pump) != 0) {
        close(fds[0]);
        close(fds[1]);
        return cordon_error_set(err, CORDON_E_NOMEM, errno, "cannot start a thread");
    }
    *ret_read_fd = fds[0];
    return 0;
}

/* Join the producer; its error wins over the consumer's (it came first). */
static int pump_join(struct pump *pump, int consumer_r, struct cordon_error *err)
{
    pthread_join(pump->thread, NULL);
    if (pump->r < 0) {
        if (err != NULL)
            *err = pump->err;
        return pump->r;
    }
    return consumer_r;
}

struct git_job {
    const char *helper;           /* cordon-git-export */
    const char *repo, *rev;
    uint64_t max_bytes;
    struct cordon__git_export out;
};

/* The tree comes from the cordon-git-export helper process: libgit2 parses
 * the repository there, not in this process. Its report is JSON on stderr. */
static int git_produce(void *arg, int fd, struct cordon_error *err)
{
    static const char *const envp[] = { "PATH=/usr/local/bin:/usr/bin:/bin", NULL };
    struct git_job *job = arg;
    struct cordon_runner_opts opts;
    struct cordon_exec_outcome o;
    char bytes[32], entries[32], *text = NULL;
    const char *argv[] = { job->helper, job->repo, job->rev, bytes, entries, NULL };
    const cJSON *commit, *sub;
    cJSON *doc = NULL;
    int r;

    snprintf(bytes, sizeof(bytes), "%llu", (unsigned long long)job->max_bytes);
    snprintf(entries, sizeof(entries), "%llu", (unsigned long long)CORDON_TAR_ENTRIES_MAX);
    cordon_runner_opts_init(&opts);
    opts.argv = argv;
    opts.envp = envp;
    opts.stdout_fd = fd;
    opts.retention_bytes = 64u << 10;
    opts.output_budget = 1u << 20;
    memset(&o, 0, sizeof(o));
    r = cordon_runner_run(&opts, &o, err);
    if (r < 0)
        return r;
    text = o.err.data != NULL ? strndup(o.err.data, o.err.len) : NULL;
    doc = text != NULL ? cJSON_Parse(text) : NULL;
    if (o.status != CORDON_RUN_EXITED || o.exit_code != 0 || !cJSON_IsObject(doc)) {
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(doc, "message");
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(doc, "errno");
        r = cordon_error_set(err, cJSON_IsNumber(code) && code->valueint < 0 ? code->valueint : CORDON_E_IO, 0,
                             "%s", cJSON_IsString(msg) ? msg->valuestring : "git export failed");
        goto out;
    }
    commit = cJSON_GetObjectItemCaseSensitive(doc, "commit");
    snprintf(job->out.commit, sizeof(job->out.commit), "%s", cJSON_IsString(commit) ? commit->valuestring : "");
    job->out.entries = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(doc, "entries"));
    job->out.bytes = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(doc, "bytes"));
    sub = cJSON_GetObjectItemCaseSensitive(doc, "submodules");
    job->out.submodules = cJSON_IsArray(sub) ? cJSON_Duplicate(sub, 1) : cJSON_CreateArray();
out:
    cJSON_Delete(doc);
    free(text);
    cordon_exec_outcome_clear(&o);
    return r;
}

struct export_job {
    const struct bound *b;
    const char *state;
};

static int export_produce(void *arg, int fd, struct cordon_error *err)
{
    struct export_job *job = arg;
    struct cordon_error perr;
    int r;

    cordon_error_init(&perr);
    r = job->b->p->vt.export_tar(job->b->res, job->state, "", fd, &perr);
    if (r != 0)
        return cordon_error_set(err, r < 0 ? r : CORDON_E_PROVIDER, perr.os_errno, "export: %s",
                                perr.message);
    return 0;
}

static int import_fd(const struct bound *b, const char *state, int fd, struct cordon_error *err)
{
    struct cordon_error perr;
    int r;

    cordon_error_init(&perr);
    r = b->p->vt.import_tar(b->res, state, "", fd, &perr);
    if (r != 0)
        return cordon_error_set(err, r < 0 ? r : CORDON_E_PROVIDER, perr.os_errno, "import: %s",
                                perr.message);
    return 0;
}

/* --- provision ----------------------------------------------------------------- */

/*
 * The same verified facts as a run's: the named provider is the one
 * candidate, probed with the spec's config and image (the host verifies
 * its claim, core/verify.h) and judged under spec->isolation. ret_verdict
 * is what the record keeps. A refusal names the skip reason and detail.
 */
/* The spec's config with its image: what the provider is probed with,
 * and what a pool key names (NULL without memory). */
static cJSON *probe_config(const struct spec *spec)
{
    cJSON *config = cordon__json_merge(spec->config, NULL);

    if (config != NULL && spec->image != NULL && cJSON_IsString(spec->image)) {
        cJSON_DeleteItemFromObjectCaseSensitive(config, "image");
        cJSON_AddStringToObject(config, "image", spec->image->valuestring);
    }
    return config;
}

/* ret_sel, when not NULL, receives the selection (the caller clears it). */
static int select_verified(struct cordon_ctx *ctx, const struct spec *spec, cJSON **ret_verdict,
                           struct cordon__selection *ret_sel, struct cordon_error *err)
{
    struct cordon__select_opts opts = { spec->isolation, "code_execution", NULL, NULL };
    struct cordon__candidate cand = { 0, (char *)spec->provider, probe_config(spec) };
    struct cordon__selection sel;
    cJSON *probes = NULL;
    int r;

    if (cand.config == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
    memset(&sel, 0, sizeof(sel));
    r = cordon__select(ctx, &cand, 1, &opts, &sel, &probes, err);
    if (r < 0) {
        r = cordon__select_refusal(r, spec->provider, probes, err);
    } else {
        *ret_verdict = cordon__selection_verdict(&sel, spec->isolation);
        if (*ret_verdict == NULL)
            r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
    }
    if (r == 0 && ret_sel != NULL) {
        *ret_sel = sel;
        memset(&sel, 0, sizeof(sel));
    }
    cordon__selection_clear(&sel);
    cJSON_Delete(probes);
    cJSON_Delete(cand.config);
    return r;
}

static bool spec_has_git(const struct spec *spec)
{
    return spec->workspace != NULL &&
           strcmp(cJSON_GetObjectItemCaseSensitive(spec->workspace, "kind")->valuestring, "git") == 0;
}

/*
 * Claim a pooled execution for spec (core/pool.h): 0 with *ret the
 * provision result, 0 with *ret NULL when there is none. The claimed
 * record becomes the caller's: not pooled, its lifetime and metadata the
 * caller's (the provider's own deadline is later still: gc and exec go by
 * the record's), ready.
 */
static int claim_pooled(struct cordon_ctx *ctx, const struct spec *spec, cJSON **verdict, cJSON **ret,
                        struct cordon_error *err)
{
    struct cordon__record *rec = NULL;
    cJSON *config = probe_config(spec), *result, *ws;
    uint64_t expires;
    char key[65], when[40];
    int r;

    *ret = NULL;
    if (config == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
    r = cordon__pool_key(spec->provider, config, spec->image, &spec->limits, spec->environment, "host", key, err);
    cJSON_Delete(config);
    if (r == 0)
        r = cordon__pool_claim(ctx, key, &rec, err);
    if (r < 0 || rec == NULL)
        return r;
    expires = cordon_now_wall_ms() + spec->limits.runtime_ms;
    cJSON_DeleteItemFromObjectCaseSensitive(rec->doc, "pool");
    cJSON_ReplaceItemInObjectCaseSensitive(rec->doc, "expires_at_ms", cJSON_CreateNumber((double)expires));
    cJSON_ReplaceItemInObjectCaseSensitive(rec->doc, "metadata", spec->metadata != NULL
                                               ? cJSON_Duplicate(spec->metadata, 1) : cJSON_CreateObject());
    cJSON_ReplaceItemInObjectCaseSensitive(rec->doc, "verdict", cJSON_Duplicate(*verdict, 1));
    ws = cJSON_CreateObject();
    cJSON_AddStringToObject(ws, "kind", "empty");
    cJSON_DeleteItemFromObjectCaseSensitive(rec->doc, "workspace");
    cJSON_AddItemToObject(rec->doc, "workspace", cJSON_Duplicate(ws, 1));
    cJSON_AddNumberToObject(rec->doc, "pool_claimed_at_ms", (double)cordon_now_wall_ms());
    r = cordon__record_phase(rec, "ready", false, err);
    if (r < 0) {
        /* Unusable now, and never claimable again: destroyed. */
        cordon__execution_destroy(ctx, rec, NULL);
        cordon__record_close(rec);
        cJSON_Delete(ws);
        return r;
    }
    result = cJSON_CreateObject();
    cJSON_AddItemToObject(result, "workspace", ws);
    cJSON_AddBoolToObject(result, "ok", true);
    cJSON_AddStringToObject(result, "execution_id", rec->id);
    cJSON_AddStringToObject(result, "provider_id", spec->provider);
    rfc3339(expires, when, sizeof(when));
    cJSON_AddStringToObject(result, "expires_at", when);
    cJSON_AddNumberToObject(result, "expires_at_ms", (double)expires);
    cJSON_AddBoolToObject(result, "pooled", true);
    cJSON_AddItemToObject(result, "verdict", *verdict);
    *verdict = NULL;
    cordon__record_close(rec);
    *ret = result;
    return 0;
}

int cordon__provision_pool_target(struct cordon_ctx *ctx, const cJSON *req,
                                  struct cordon__pool_target *ret, struct cordon_error *err)
{
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(req, "workspace");
    cJSON *verdict = NULL;
    struct spec spec;
    int r;

    memset(ret, 0, sizeof(*ret));
    if (cJSON_GetObjectItemCaseSensitive(req, "execution_id") != NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "execution_id: a pooled execution's id is its own; not a key of a pool request");
    if (cJSON_GetObjectItemCaseSensitive(req, "metadata") != NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "metadata: given by the provision that claims, not by the pool");
    r = validate_spec(ctx, req, &spec, err);
    if (r == 0 && ws != NULL && spec_has_git(&spec))
        r = cordon_error_set(err, CORDON_E_INVALID, 0, "workspace: only \"empty\" is pooled");
    if (r == 0)
        r = select_verified(ctx, &spec, &verdict, &ret->sel, err);
    cJSON_Delete(verdict);
    if (r == 0) {
        ret->image = spec.image != NULL && cJSON_IsString(spec.image) ? cJSON_Duplicate(spec.image, 1)
                                                                      : cJSON_CreateNull();
        ret->environment = spec.environment != NULL ? cJSON_Duplicate(spec.environment, 1) : cJSON_CreateObject();
        ret->limits = spec.limits;
        cJSON *config = probe_config(&spec);

        ret->layout = "host";
        ret->isolation = spec.isolation;
        /* The key exactly as claim_pooled computes it. */
        r = config == NULL ? cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory")
                           : cordon__pool_key(spec.provider, config, spec.image, &spec.limits,
                                              ret->environment, "host", ret->key, err);
        cJSON_Delete(config);
    }
    cJSON_Delete(spec.config);
    if (r < 0)
        cordon__pool_target_clear(ret);
    return r;
}

/* Provision from a validated spec; tar_fd >= 0 restores a checkpoint's
 * workspace instead of spec->workspace. On failure nothing remains. */
static int provision(struct cordon_ctx *ctx, struct spec *spec, int tar_fd, cJSON **ret,
                     struct cordon_error *err)
{
    uint64_t expires;
    struct cordon__record *rec = NULL;
    struct bound b = { NULL, NULL };
    struct git_job git;
    struct cordon_spec pspec;
    cJSON *doc = cJSON_CreateObject(), *state = NULL, *result = NULL, *ws, *verdict = NULL;
    char *text = NULL, *state_text = NULL, when[40];
    struct cordon_error perr;
    bool created = false;
    int r;

    memset(&git, 0, sizeof(git));
    cordon_spec_init(&pspec);
    /* Before anything exists: is this provider, as the host sees it, good
     * enough for what was asked? */
    r = select_verified(ctx, spec, &verdict, NULL, err);
    if (r < 0)
        goto out;
    /* A pooled execution of exactly this sandbox, verified again just now. */
    if (tar_fd < 0 && !spec->id_given && !spec_has_git(spec)) {
        r = claim_pooled(ctx, spec, &verdict, ret, err);
        if (r != 0 || *ret != NULL)
            goto out;
    }
    /* The lifetime starts now, not before the probe. */
    expires = cordon_now_wall_ms() + spec->limits.runtime_ms;
    /* The provider's spec, complete before anything exists. */
    snprintf(pspec.execution_id, sizeof(pspec.execution_id), "%s", spec->id);
    pspec.resources = spec->limits;
    pspec.layout = CORDON_SPEC_LAYOUT_HOST;
    pspec.expires_at_ms = expires;
    r = cordon_spec_set_image(&pspec, cJSON_GetStringValue(spec->image), err);
    if (r == 0)
        r = cordon_env_from_json(spec->environment, "environment", &pspec.environment, err);
    if (r == 0)
        r = cordon_spec_print(&pspec, &text, err);
    cordon_spec_clear(&pspec);
    if (r < 0)
        goto out;
    /* The record (an intent) exists before anything else is created. */
    cJSON_AddNumberToObject(doc, "version", CORDON_RECORD_VERSION);
    cJSON_AddStringToObject(doc, "execution_id", spec->id);
    cJSON_AddStringToObject(doc, "provider_id", spec->provider);
    cJSON_AddItemToObject(doc, "provider_config", cJSON_Duplicate(spec->config, 1));
    cJSON_AddItemToObject(doc, "image", spec->image != NULL ? cJSON_Duplicate(spec->image, 1) : cJSON_CreateNull());
    cJSON_AddItemToObject(doc, "resources", cordon_limits_to_json(&spec->limits));
    cJSON_AddStringToObject(cJSON_AddObjectToObject(doc, "network"), "mode", "none");
    cJSON_AddItemToObject(doc, "environment", spec->environment != NULL ? cJSON_Duplicate(spec->environment, 1)
                                                                       : cJSON_CreateObject());
    cJSON_AddItemToObject(doc, "metadata", spec->metadata != NULL ? cJSON_Duplicate(spec->metadata, 1)
                                                                 : cJSON_CreateObject());
    cJSON_AddNumberToObject(doc, "created_at_ms", (double)cordon_now_wall_ms());
    cJSON_AddNumberToObject(doc, "expires_at_ms", (double)expires);
    cJSON_AddStringToObject(doc, "host_instance_id", ctx->instance_id);
    cJSON_AddStringToObject(doc, "phase", "creating");
    cJSON_AddNumberToObject(doc, "owner_pid", (double)getpid());
    cJSON_AddNullToObject(doc, "provider_state");
    cJSON_AddItemToObject(doc, "verdict", cJSON_Duplicate(verdict, 1));
    r = cordon__record_create(ctx, spec->id, doc, &rec, err);
    if (r < 0)
        goto out;
    r = bind_provider(ctx, spec->provider, spec->config, &b, err);
    if (r < 0)
        goto out;
    cordon_error_init(&perr);
    r = b.p->vt.provision(b.res, text, &state_text, &perr);
    created = true;   /* from here, a failure must destroy what may exist */
    if (r != 0) {
        state_text = NULL;
        r = cordon_error_set(err, r < 0 ? r : CORDON_E_PROVIDER, perr.os_errno, "provision: %s", perr.message);
        goto out;
    }
    state = cJSON_Parse(state_text);
    if (!cJSON_IsObject(state)) {
        r = cordon_error_set(err, CORDON_E_PROVIDER, 0, "provision: the provider's state is not a JSON object");
        goto out;
    }
    cJSON_ReplaceItemInObjectCaseSensitive(rec->doc, "provider_state", state);
    state = NULL;
    if ((r = cordon__record_save(rec, err)) < 0)
        goto out;
    result = cJSON_CreateObject();
    ws = cJSON_AddObjectToObject(result, "workspace");
    if (tar_fd >= 0) {
        r = import_fd(&b, state_text, tar_fd, err);
        cJSON_AddStringToObject(ws, "kind", "checkpoint");
    } else if (spec->workspace != NULL &&
               strcmp(cJSON_GetObjectItemCaseSensitive(spec->workspace, "kind")->valuestring, "git") == 0) {
        struct pump pump;
        int rfd = -1;

        git.helper = ctx->git_export_path;
        git.repo = cJSON_GetObjectItemCaseSensitive(spec->workspace, "repository")->valuestring;
        git.rev = cJSON_GetObjectItemCaseSensitive(spec->workspace, "revision")->valuestring;
        git.max_bytes = spec->limits.disk_bytes;
        r = pump_start(&pump, git_produce, &git, &rfd, err);
        if (r == 0) {
            r = import_fd(&b, state_text, rfd, err);
            close(rfd);   /* a producer still writing gets EPIPE and stops */
            r = pump_join(&pump, r, err);
        }
        cJSON_AddStringToObject(ws, "kind", "git");
        cJSON_AddStringToObject(ws, "repository", git.repo);
        cJSON_AddStringToObject(ws, "revision", git.rev);
        cJSON_AddStringToObject(ws, "commit", git.out.commit);
        cJSON_AddNumberToObject(ws, "entries", (double)git.out.entries);
        cJSON_AddNumberToObject(ws, "bytes", (double)git.out.bytes);
        cJSON_AddItemToObject(ws, "submodules_skipped",
                              git.out.submodules != NULL ? cJSON_Duplicate(git.out.submodules, 1)
                                                         : cJSON_CreateArray());
    } else {
        cJSON_AddStringToObject(ws, "kind", "empty");
    }
    if (r < 0)
        goto out;
    if (cJSON_GetObjectItemCaseSensitive(rec->doc, "workspace") != NULL)
        cJSON_ReplaceItemInObjectCaseSensitive(rec->doc, "workspace", cJSON_Duplicate(ws, 1));
    else
        cJSON_AddItemToObject(rec->doc, "workspace", cJSON_Duplicate(ws, 1));
    if ((r = cordon__record_phase(rec, "ready", false, err)) < 0)
        goto out;
    cJSON_AddBoolToObject(result, "ok", true);
    cJSON_AddStringToObject(result, "execution_id", spec->id);
    cJSON_AddStringToObject(result, "provider_id", spec->provider);
    rfc3339(expires, when, sizeof(when));
    cJSON_AddStringToObject(result, "expires_at", when);
    cJSON_AddNumberToObject(result, "expires_at_ms", (double)expires);
    cJSON_AddItemToObject(result, "verdict", verdict);
    verdict = NULL;
    *ret = result;
    result = NULL;
out:
    if (r < 0 && rec != NULL) {
        /* Nothing half-done stays: the sandbox (by state or by id), then the record. */
        if (created && b.res != NULL)
            destroy(ctx, rec, &b, NULL);
        cordon__record_remove(ctx, rec, NULL);
    }
    cJSON_Delete(git.out.submodules);
    unbind_provider(&b);
    cordon__record_close(rec);
    if (state_text != NULL)
        ctx->host->free(state_text);
    free(text);
    cJSON_Delete(result);
    cJSON_Delete(state);
    cJSON_Delete(doc);
    cJSON_Delete(verdict);
    return r;
}

int cordon_provision_json(struct cordon_ctx *ctx, const char *request_json, char **ret_json,
                          struct cordon_error *err)
{
    cJSON *req = NULL, *result = NULL;
    struct spec spec;
    int r;

    memset(&spec, 0, sizeof(spec));
    r = cordon__json_parse_bounded("request", request_json, &req, err);
    if (r == 0)
        r = validate_spec(ctx, req, &spec, err);
    if (r == 0)
        r = provision(ctx, &spec, -1, &result, err);
    if (r == 0)
        r = done_json(result, ret_json, err);
    cJSON_Delete(spec.config);
    cJSON_Delete(req);
    return r;
}

/* --- exec ----------------------------------------------------------------------- */

static bool expired(const struct cordon__record *rec, uint64_t *ret_left_ms)
{
    const cJSON *exp = cJSON_GetObjectItemCaseSensitive(rec->doc, "expires_at_ms");
    uint64_t now = cordon_now_wall_ms(), at = cJSON_IsNumber(exp) ? (uint64_t)exp->valuedouble : 0;

    if (ret_left_ms != NULL)
        *ret_left_ms = at > now ? at - now : 0;
    return at <= now;
}

/* Build the provider request text (malloc'd) from the caller's exec request. */
static int exec_request(const cJSON *req, uint64_t left_ms, char **ret, uint64_t *ret_timeout,
                        struct cordon_error *err)
{
    static const char *const keys[] = { "command", "args", "cwd", "environment", "timeout_ms" };
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(req, "command");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(req, "args");
    const cJSON *cwd = cJSON_GetObjectItemCaseSensitive(req, "cwd");
    const cJSON *env = cJSON_GetObjectItemCaseSensitive(req, "environment");
    const cJSON *timeout = cJSON_GetObjectItemCaseSensitive(req, "timeout_ms");
    const cJSON *a;
    struct cordon_exec_request prq;
    char *norm = NULL;
    size_t bytes = 0;
    int r;

    if (!cJSON_IsObject(req))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "request: must be a JSON object");
    if ((r = check_keys("", req, keys, 5, err)) < 0)
        return r;
    if (!cJSON_IsString(cmd) || cmd->valuestring[0] == '\0')
        return cordon_error_set(err, CORDON_E_INVALID, 0, "command: required, a program name or path");
    if (args != NULL && !cJSON_IsArray(args))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "args: must be an array of strings (one argv entry each), not a shell string");
    if (cJSON_GetArraySize(args) + 1 > CORDON_ARGV_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "args: %d entries exceed the limit of %d",
                                cJSON_GetArraySize(args) + 1, CORDON_ARGV_MAX);
    cJSON_ArrayForEach(a, args) {
        if (!cJSON_IsString(a))
            return cordon_error_set(err, CORDON_E_INVALID, 0, "args: every entry must be a string");
        bytes += strlen(a->valuestring) + 1;
    }
    if (bytes > CORDON_HOST_ARGS_BYTES_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "args: %zu bytes exceed the limit of %u", bytes,
                                CORDON_HOST_ARGS_BYTES_MAX);
    if ((r = cordon__env_validate("environment", env, err)) < 0)
        return r;
    *ret_timeout = left_ms;
    if (timeout != NULL) {
        if (!cJSON_IsNumber(timeout) || timeout->valuedouble < 1)
            return cordon_error_set(err, CORDON_E_INVALID, 0, "timeout_ms: must be a number >= 1");
        /* capped by the execution's remaining lifetime */
        if ((uint64_t)timeout->valuedouble < left_ms)
            *ret_timeout = (uint64_t)timeout->valuedouble;
    }
    /* cwd is under /workspace: "/workspace/x", "x" and "" all name a place in it */
    if (cwd != NULL) {
        const char *c;
        if (!cJSON_IsString(cwd))
            return cordon_error_set(err, CORDON_E_INVALID, 0, "cwd: must be a string");
        c = cwd->valuestring;
        if (strcmp(c, "/workspace") == 0)
            c = "";
        else if (strncmp(c, "/workspace/", 11) == 0)
            c += 11;
        else if (c[0] == '/')
            return cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                    "cwd: \"%.*s\" must be under /workspace",
                                    cordon_text_fit(c, 200), c);
        if ((r = cordon_path_normalize_dir("cwd", c, &norm, err)) < 0)
            return r;
    }
    /* The provider reads it with cordon_exec_request_parse: built as that
     * struct, printed by the one writer, which refuses what it would. */
    cordon_exec_request_init(&prq);
    prq.cwd = norm != NULL ? norm : strdup("");
    prq.timeout_ms = *ret_timeout;
    r = prq.cwd != NULL ? cordon_exec_request_add_arg(&prq, cmd->valuestring, err)
                        : cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
    cJSON_ArrayForEach(a, args) {
        if (r == 0)
            r = cordon_exec_request_add_arg(&prq, a->valuestring, err);
    }
    if (r == 0)
        r = cordon_env_from_json(env, "environment", &prq.env, err);
    if (r == 0 && cordon_env_get(&prq.env, "PATH") == NULL)
        r = cordon_env_set(&prq.env, "PATH", "/usr/local/bin:/usr/bin:/bin", err);
    if (r == 0)
        r = cordon_exec_request_print(&prq, ret, err);
    cordon_exec_request_clear(&prq);
    return r;
}

int cordon_exec_json(struct cordon_ctx *ctx, const char *execution_id, const char *request_json,
                     int stdin_fd, int cancel_fd, char **ret_json, struct cordon_error *err)
{
    struct cordon__record *rec = NULL;
    struct bound b = { NULL, NULL };
    struct cordon_exec_outcome out;
    struct cordon_drive_opts opts;
    struct cordon_limits limits;
    cJSON *req = NULL, *result = NULL;
    char *state = NULL, *ptext = NULL;
    uint64_t left = 0, timeout = 0;
    bool terminated = false;
    int r;

    memset(&out, 0, sizeof(out));
    r = cordon__json_parse_bounded("request", request_json, &req, err);
    if (r < 0)
        return r;
    /* Validate what we can before taking the lock. */
    /* No execution lives longer than the runtime bound. */
    r = exec_request(req, CORDON_LIMIT_RUNTIME_MAX, &ptext, &timeout, err);
    free(ptext);
    ptext = NULL;
    if (r < 0)
        goto out;
    r = cordon__record_open(ctx, execution_id, false, &rec, err);
    if (r < 0)
        goto out;
    result = cJSON_CreateObject();
    cJSON_AddStringToObject(result, "execution_id", execution_id);
    if ((r = bind_record(ctx, rec, &b, err)) < 0)
        goto out;
    if (expired(rec, &left)) {
        /* The deadline passed: the execution goes, and the caller hears why. */
        r = destroy(ctx, rec, &b, err);
        if (r < 0)
            goto out;
        cJSON_AddBoolToObject(result, "ok", false);
        cJSON_AddStringToObject(result, "status", "expired");
        cJSON_AddNullToObject(result, "exit_code");
        cJSON_AddBoolToObject(result, "execution_terminated", true);
        cordon__result_add_stream(result, "stdout", "", 0, 0, 0);
        cordon__result_add_stream(result, "stderr", "", 0, 0, 0);
        goto done;
    }
    if ((r = exec_request(req, left, &ptext, &timeout, err)) < 0)
        goto out;
    state = record_state(rec);
    if (state == NULL || ptext == NULL) {
        r = cordon_error_set(err, CORDON_E_IO, 0, "execution %s: not ready (no provider state)", execution_id);
        goto out;
    }
    if ((r = record_limits(rec, &limits, err)) < 0)
        goto out;
    if ((r = cordon__record_phase_passing(rec, "exec", true, err)) < 0)
        goto out;
    cordon_drive_opts_init(&opts);
    opts.host = ctx->host;
    opts.provider = &b.p->vt;
    opts.resource = b.res;
    opts.state_json = state;
    opts.request_json = ptext;
    opts.stdin_fd = stdin_fd;
    opts.timeout_ms = timeout;
    opts.retention_bytes = (size_t)limits.max_output_bytes;   /* within the budget, everything is kept */
    opts.output_budget = limits.max_output_bytes;
    opts.cancel_fd = cancel_fd;
    r = cordon_drive_exec(&opts, &out, err);
    if (r < 0)
        goto out;   /* the mechanism failed (daemon gone...): the record stays for reclaim */
    /* The execution's lifetime, not the caller's timeout, ended it: the
     * deadline killed the process (the host's clock or the sandbox's own). */
    if (timeout == left && (out.status == CORDON_RUN_TIMEOUT || out.status == CORDON_RUN_SIGNALED) &&
        expired(rec, NULL))
        out.status = CORDON_RUN_EXPIRED;
    cJSON_AddStringToObject(result, "status", cordon_run_status_name(out.status));
    cJSON_AddBoolToObject(result, "ok", out.status == CORDON_RUN_EXITED && out.exit_code == 0);
    if (out.status == CORDON_RUN_EXITED)
        cJSON_AddNumberToObject(result, "exit_code", out.exit_code);
    else
        cJSON_AddNullToObject(result, "exit_code");
    /* exit_code 128+N that a death by signal N would also have given. */
    if (out.status == CORDON_RUN_EXITED && out.signal != 0)
        cJSON_AddBoolToObject(result, "signal_folded", true);
    if (out.status == CORDON_RUN_SIGNALED)
        cJSON_AddNumberToObject(result, "signal", out.signal);
    cordon__result_add_stream(result, "stdout", out.out.data, out.out.len, out.out.head_len,
                              out.out.dropped_bytes);
    cordon__result_add_stream(result, "stderr", out.err.data, out.err.len, out.err.head_len,
                              out.err.dropped_bytes);
    cJSON_AddNumberToObject(result, "duration_ms", (double)out.duration_ms);
    /* Timeout, overflow and cancellation destroy the whole execution:
     * whatever the process tree left running goes with it. */
    if (out.status == CORDON_RUN_TIMEOUT || out.status == CORDON_RUN_OUTPUT_LIMIT ||
        out.status == CORDON_RUN_CANCELLED || out.status == CORDON_RUN_EXPIRED) {
        struct cordon_error derr;
        cordon_error_init(&derr);
        terminated = destroy(ctx, rec, &b, &derr) == 0;
        if (terminated) {
            cordon__record_close(rec);
            rec = NULL;
        }
    } else {
        r = cordon__record_phase_passing(rec, "ready", false, err);
        if (r < 0)
            goto out;
    }
    r = 0;
    cJSON_AddBoolToObject(result, "execution_terminated", terminated);
done:
    r = done_json(result, ret_json, err);
    result = NULL;
out:
    if (rec != NULL && r < 0 &&
        cJSON_IsString(cJSON_GetObjectItemCaseSensitive(rec->doc, "phase")) &&
        strcmp(cJSON_GetObjectItemCaseSensitive(rec->doc, "phase")->valuestring, "exec") == 0)
        cordon__record_phase_passing(rec, "ready", false, NULL);
    cordon_exec_outcome_clear(&out);
    unbind_provider(&b);
    cordon__record_close(rec);
    cJSON_Delete(result);
    cJSON_Delete(req);
    free(state);
    free(ptext);
    return r;
}

int cordon_exec_exit_status(const char *result_json)
{
    cJSON *doc = cJSON_Parse(result_json);
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(doc, "status");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(doc, "exit_code");
    const cJSON *sig = cJSON_GetObjectItemCaseSensitive(doc, "signal");
    int rc = 125;

    if (cJSON_IsString(status)) {
        const char *s = status->valuestring;
        if (strcmp(s, "exited") == 0 && cJSON_IsNumber(code))
            rc = code->valueint;
        else if (strcmp(s, "signaled") == 0 && cJSON_IsNumber(sig))
            rc = 128 + sig->valueint;
        else if (strcmp(s, "timeout") == 0 || strcmp(s, "expired") == 0)
            rc = 124;
        else if (strcmp(s, "oom") == 0 || strcmp(s, "output_limit") == 0 || strcmp(s, "cancelled") == 0)
            rc = 137;
    }
    cJSON_Delete(doc);
    return rc;
}

/* --- checkpoint and restore ------------------------------------------------------- */

static char *checkpoint_store(struct cordon_ctx *ctx)
{
    const cJSON *dir = cJSON_GetObjectItemCaseSensitive(ctx->config, "checkpoint_dir");
    char *path = NULL;

    if (cJSON_IsString(dir) && dir->valuestring[0] == '/')
        return strdup(dir->valuestring);
    return asprintf(&path, "%s/checkpoints", ctx->state_dir) < 0 ? NULL : path;
}

int cordon_checkpoint_json(struct cordon_ctx *ctx, const char *execution_id, const char *metadata_json,
                           char **ret_json, struct cordon_error *err)
{
    static const char *const copied[] = { "provider_id", "image", "resources", "network", "environment" };
    struct cordon__record *rec = NULL;
    struct bound b = { NULL, NULL };
    struct export_job job;
    struct pump pump;
    cJSON *meta = NULL, *fields = NULL, *manifest = NULL;
    struct cordon_limits limits;
    char *state = NULL, *store = NULL;
    int r, rfd = -1;

    if (metadata_json != NULL) {
        r = cordon__json_parse_bounded("metadata", metadata_json, &meta, err);
        if (r < 0)
            return r;
        if (!cJSON_IsObject(meta)) {
            cJSON_Delete(meta);
            return cordon_error_set(err, CORDON_E_INVALID, 0, "metadata: must be a JSON object");
        }
    }
    store = checkpoint_store(ctx);
    /* The lock: a checkpoint waits for an exec under way, and no exec
     * starts until it is done. */
    if (store == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
        goto out;
    }
    if ((r = cordon__record_open(ctx, execution_id, false, &rec, err)) < 0 ||
        (r = bind_record(ctx, rec, &b, err)) < 0)
        goto out;
    if (expired(rec, NULL)) {
        destroy(ctx, rec, &b, NULL);
        r = cordon_error_set(err, CORDON_E_TIMEOUT, 0, "execution %s: expired (terminated)", execution_id);
        goto out;
    }
    state = record_state(rec);
    if (state == NULL) {
        r = cordon_error_set(err, CORDON_E_IO, 0, "execution %s: not ready", execution_id);
        goto out;
    }
    fields = cJSON_CreateObject();
    cJSON_AddStringToObject(fields, "source_execution_id", execution_id);
    for (size_t i = 0; i < sizeof(copied) / sizeof(copied[0]); i++)
        cJSON_AddItemToObject(fields, copied[i],
                              cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(rec->doc, copied[i]), 1));
    cJSON_AddItemToObject(fields, "metadata", meta != NULL ? meta : cJSON_CreateObject());
    meta = NULL;
    if ((r = record_limits(rec, &limits, err)) < 0 ||
        (r = cordon__record_phase(rec, "checkpointing", true, err)) < 0)
        goto out;
    job.b = &b;
    job.state = state;
    r = pump_start(&pump, export_produce, &job, &rfd, err);
    if (r == 0) {
        r = cordon__checkpoint_write(store, rfd, fields, limits.disk_bytes, CORDON_TAR_ENTRIES_MAX,
                                     &manifest, err);
        close(rfd);
        r = pump_join(&pump, r, err);
        if (r < 0 && manifest != NULL) {
            /* the export failed after the store accepted a short stream */
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(manifest, "checkpoint_id");
            if (cJSON_IsString(id))
                cordon__checkpoint_remove(store, id->valuestring, NULL);
        }
    }
    cordon__record_phase(rec, "ready", false, NULL);
    if (r < 0)
        goto out;
    r = done_json(manifest, ret_json, err);
    manifest = NULL;
out:
    unbind_provider(&b);
    cordon__record_close(rec);
    cJSON_Delete(manifest);
    cJSON_Delete(fields);
    cJSON_Delete(meta);
    free(state);
    free(store);
    return r;
}

int cordon_restore_json(struct cordon_ctx *ctx, const char *checkpoint_id, const char *request_json,
                        char **ret_json, struct cordon_error *err)
{
    static const char *const keys[] = { "provider", "provider_config", "image", "execution_id",
                                        "allow_unsafe_local", "allow_unpinned", "isolation" };
    cJSON *opts = NULL, *manifest = NULL, *req = NULL, *result = NULL;
    char *store = checkpoint_store(ctx);
    struct spec spec;
    int r, fd = -1;

    memset(&spec, 0, sizeof(spec));
    if (store == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
    r = cordon__json_parse_bounded("request", request_json != NULL ? request_json : "{}", &opts, err);
    if (r == 0 && !cJSON_IsObject(opts))
        r = cordon_error_set(err, CORDON_E_INVALID, 0, "request: must be a JSON object");
    if (r == 0)
        r = check_keys("", opts, keys, sizeof(keys) / sizeof(keys[0]), err);
    if (r == 0)
        r = cordon__checkpoint_open(store, checkpoint_id, &manifest, &fd, err);
    if (r < 0)
        goto out;
    /* A provision request from the manifest, the caller's choices over it;
     * then the whole provision validation runs again. */
    req = cJSON_CreateObject();
    cJSON_AddItemToObject(req, "provider", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(manifest, "provider_id"), 1));
    cJSON_AddItemToObject(req, "image", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(manifest, "image"), 1));
    cJSON_AddItemToObject(req, "resources", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(manifest, "resources"), 1));
    cJSON_AddItemToObject(req, "network", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(manifest, "network"), 1));
    cJSON_AddItemToObject(req, "environment", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(manifest, "environment"), 1));
    cJSON_AddItemToObject(req, "metadata", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(manifest, "metadata"), 1));
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(opts, keys[i]);
        if (v == NULL)
            continue;
        cJSON_DeleteItemFromObjectCaseSensitive(req, keys[i]);
        cJSON_AddItemToObject(req, keys[i], cJSON_Duplicate(v, 1));
    }
    /* a checkpoint taken under one provider restores under another: its
     * image is the other provider's business */
    if (cJSON_GetObjectItemCaseSensitive(opts, "provider") != NULL &&
        cJSON_GetObjectItemCaseSensitive(opts, "image") == NULL) {
        cJSON_DeleteItemFromObjectCaseSensitive(req, "image");
    }
    if ((r = validate_spec(ctx, req, &spec, err)) < 0)
        goto out;
    if ((r = provision(ctx, &spec, fd, &result, err)) < 0)
        goto out;
    cJSON_AddStringToObject(result, "restored_from", checkpoint_id);
    r = done_json(result, ret_json, err);
    result = NULL;
out:
    if (fd >= 0)
        close(fd);
    cJSON_Delete(spec.config);
    cJSON_Delete(result);
    cJSON_Delete(req);
    cJSON_Delete(manifest);
    cJSON_Delete(opts);
    free(store);
    return r;
}

/* --- terminate, reclaim, ls, gc ------------------------------------------------------- */

int cordon_terminate_json(struct cordon_ctx *ctx, const char *execution_id, char **ret_json,
                          struct cordon_error *err)
{
    struct cordon__record *rec = NULL;
    struct bound b = { NULL, NULL };
    cJSON *result = cJSON_CreateObject();
    int r;

    cJSON_AddBoolToObject(result, "ok", true);
    cJSON_AddStringToObject(result, "execution_id", execution_id != NULL ? execution_id : "");
    r = cordon__record_open(ctx, execution_id, true, &rec, err);
    if (r == CORDON_E_BUSY) {
        /* An exec (or checkpoint) holds the execution: terminate does not
         * wait for it, it destroys the sandbox under it; the holder then
         * finds its execution gone. */
        r = cordon__record_peek(ctx, execution_id, &rec, err);
    }
    if (r == CORDON_E_NOT_FOUND) {
        /* already gone is success */
        cJSON_AddBoolToObject(result, "already_gone", true);
        return done_json(result, ret_json, err);
    }
    if (r == 0)
        r = bind_record(ctx, rec, &b, err);
    if (r == 0)
        r = destroy(ctx, rec, &b, err);
    unbind_provider(&b);
    cordon__record_close(rec);
    if (r < 0) {
        cJSON_Delete(result);
        return r;
    }
    cJSON_AddBoolToObject(result, "already_gone", false);
    return done_json(result, ret_json, err);
}

/* reclaim(id) through one provider; ensure consents to cleanup only. */
static int reclaim_with(struct cordon_ctx *ctx, const char *provider_id, const cJSON *config,
                        const char *id, struct cordon_error *err)
{
    cJSON *cfg = cordon__json_merge(config, NULL);
    struct bound b;
    struct cordon_error perr;
    int r;

    /* Destroying needs no consent to run code: allow_unsafe_local only
     * lets trusted-local bind for the cleanup. */
    cJSON_DeleteItemFromObjectCaseSensitive(cfg, "allow_unsafe_local");
    cJSON_AddBoolToObject(cfg, "allow_unsafe_local", true);
    r = bind_provider(ctx, provider_id, cfg, &b, err);
    cJSON_Delete(cfg);
    if (r < 0)
        return r;
    cordon_error_init(&perr);
    r = b.p->vt.reclaim(b.res, id, &perr);
    if (r != 0)
        r = cordon_error_set(err, r < 0 ? r : CORDON_E_PROVIDER, perr.os_errno, "reclaim %s with %s: %s", id,
                             provider_id, perr.message);
    unbind_provider(&b);
    return r;
}

int cordon_reclaim_json(struct cordon_ctx *ctx, const char *execution_id, const char *provider_id,
                        char **ret_json, struct cordon_error *err)
{
    struct cordon__record *rec = NULL;
    cJSON *result = NULL, *tried;
    char **ids = NULL;
    size_t n = 0;
    int r;

    if ((r = cordon_execution_id_check("execution_id", execution_id, err)) < 0)
        return r;
    r = cordon__record_open(ctx, execution_id, false, &rec, NULL);
    result = cJSON_CreateObject();
    cJSON_AddStringToObject(result, "execution_id", execution_id);
    tried = cJSON_AddArrayToObject(result, "providers");
    if (r == 0 && provider_id == NULL) {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(rec->doc, "provider_id");
        r = reclaim_with(ctx, cJSON_IsString(p) ? p->valuestring : "", 
                         cJSON_GetObjectItemCaseSensitive(rec->doc, "provider_config"), execution_id, err);
        cJSON_AddItemToArray(tried, cJSON_CreateString(cJSON_IsString(p) ? p->valuestring : ""));
    } else if (provider_id != NULL) {
        r = reclaim_with(ctx, provider_id, cordon__base_config(ctx, provider_id),
                         execution_id, err);
        cJSON_AddItemToArray(tried, cJSON_CreateString(provider_id));
    } else {
        /* No record and no provider named: ask every installed provider. */
        r = cordon__loader_list(ctx, &ids, &n, err);
        for (size_t i = 0; r == 0 && i < n; i++) {
            struct cordon_error perr;
            cordon_error_init(&perr);
            if (reclaim_with(ctx, ids[i], cordon__base_config(ctx, ids[i]),
                             execution_id, &perr) == 0)
                cJSON_AddItemToArray(tried, cJSON_CreateString(ids[i]));
        }
        cordon__loader_list_free(ids, n);
    }
    if (r == 0 && rec != NULL)
        r = cordon__record_remove(ctx, rec, err);
    cordon__record_close(rec);
    if (r < 0) {
        cJSON_Delete(result);
        return r;
    }
    cJSON_AddBoolToObject(result, "ok", true);
    return done_json(result, ret_json, err);
}

int cordon_ls_json(struct cordon_ctx *ctx, char **ret_json, struct cordon_error *err)
{
    static const char *const shown[] = { "execution_id", "provider_id", "phase", "image", "resources",
                                         "metadata", "workspace", "created_at_ms", "expires_at_ms",
                                         "verdict", "pool" };
    cJSON *doc = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(doc, "executions");
    char **ids = NULL;
    size_t n = 0;
    int r = cordon__record_list(ctx, &ids, &n, err);

    for (size_t i = 0; r == 0 && i < n; i++) {
        /* Without the lock: ls never waits for a long exec. */
        char path[4200], *text = NULL;
        size_t len = 0;
        cJSON *rec, *item;
        int fd;

        snprintf(path, sizeof(path), "%s/executions/%s", ctx->state_dir, ids[i]);
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || cordon_fs_read_file(fd, "record.json", 1u << 20, &text, &len, NULL) < 0) {
            if (fd >= 0)
                close(fd);
            continue;
        }
        close(fd);
        rec = cJSON_Parse(text);
        free(text);
        item = cJSON_CreateObject();
        for (size_t k = 0; k < sizeof(shown) / sizeof(shown[0]); k++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec, shown[k]);
            if (v != NULL)
                cJSON_AddItemToObject(item, shown[k], cJSON_Duplicate(v, 1));
        }
        {
            const cJSON *exp = cJSON_GetObjectItemCaseSensitive(rec, "expires_at_ms");
            cJSON_AddBoolToObject(item, "expired",
                                  cJSON_IsNumber(exp) && (uint64_t)exp->valuedouble <= cordon_now_wall_ms());
        }
        cJSON_AddItemToArray(list, item);
        cJSON_Delete(rec);
    }
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
    if (r < 0) {
        cJSON_Delete(doc);
        return r;
    }
    return done_json(doc, ret_json, err);
}

/* A partial checkpoint younger than this may still be on its way to its
 * writer's lock (a live writer locks it right after its mkdir). */
#define GC_PARTIAL_MIN_AGE_S 10
/* A provider's list_executions reply: 65536 ids of at most 64 bytes. */
#define GC_LIST_MAX (8u << 20)
#define GC_LIST_IDS_MAX 65536

int cordon_gc_json(struct cordon_ctx *ctx, char **ret_json, struct cordon_error *err)
{
    cJSON *doc = cJSON_CreateObject(), *reclaimed = cJSON_AddArrayToObject(doc, "reclaimed");
    cJSON *errors = cJSON_AddArrayToObject(doc, "errors");
    char **ids = NULL, **providers = NULL;
    size_t n = 0, n_providers = 0;
    int kept = 0, r;

    r = cordon__record_list(ctx, &ids, &n, err);
    for (size_t i = 0; r == 0 && i < n; i++) {
        struct cordon__record *rec = NULL;
        struct bound b = { NULL, NULL };
        struct cordon_error perr;
        const cJSON *phase;

        cordon_error_init(&perr);
        /* A held lock means a live cordon is using it: not ours to take. */
        if (cordon__record_open(ctx, ids[i], true, &rec, &perr) < 0) {
            kept++;
            continue;
        }
        phase = cJSON_GetObjectItemCaseSensitive(rec->doc, "phase");
        /* We hold the lock, so a phase other than "ready" means the cordon
         * that set it died mid-call (kill -9, a crash): its execution is in
         * an unknown state and goes, like an expired one. A pooled one
         * goes when it can no longer be claimed. */
        if (!expired(rec, NULL) && !cordon__pool_record_stale(ctx, rec) && cJSON_IsString(phase) &&
            strcmp(phase->valuestring, "ready") == 0) {
            kept++;
            unbind_provider(&b);
            cordon__record_close(rec);
            continue;
        }
        cordon__pool_unmark(ctx, rec);   /* an expired pooled one is claimed by nobody now */
        if (bind_record(ctx, rec, &b, &perr) == 0 && destroy(ctx, rec, &b, &perr) == 0) {
            cJSON_AddItemToArray(reclaimed, cJSON_CreateString(ids[i]));
        } else {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "execution_id", ids[i]);
            cordon_json_add_text(e, "message", perr.message);
            cJSON_AddItemToArray(errors, e);
        }
        unbind_provider(&b);
        cordon__record_close(rec);
    }
    /* Sandboxes of this host that no record names (a crash before the
     * record was saved, a removed state directory). */
    if (r == 0)
        r = cordon__loader_list(ctx, &providers, &n_providers, err);
    for (size_t p = 0; r == 0 && p < n_providers; p++) {
        struct cordon__loaded *lp = NULL;
        struct bound b = { NULL, NULL };
        struct cordon_error perr;
        cJSON *cfg, *list = NULL, *id;
        char *text = NULL;

        cordon_error_init(&perr);
        if (cordon__loader_get(ctx, providers[p], &lp, &perr) < 0 || lp->vt.list_executions == NULL)
            continue;
        cfg = cordon__json_merge(cordon__base_config(ctx, providers[p]), NULL);
        cJSON_AddBoolToObject(cfg, "allow_unsafe_local", true);
        if (bind_provider(ctx, providers[p], cfg, &b, &perr) == 0 &&
            lp->vt.list_executions(b.res, &text, &perr) == 0 && text != NULL) {
            /* The provider's reply is bounded like everything it returns. */
            if (strnlen(text, GC_LIST_MAX + 1) > GC_LIST_MAX)
                cordon_error_set(&perr, CORDON_E_LIMIT, 0,
                                 "list_executions: the reply exceeds the limit of %u bytes",
                                 GC_LIST_MAX);
            else if (!cJSON_IsArray(list = cJSON_Parse(text)))
                cordon_error_set(&perr, CORDON_E_PROVIDER, 0,
                                 "list_executions: the reply is not a JSON array");
            else if (cJSON_GetArraySize(list) > GC_LIST_IDS_MAX)
                cordon_error_set(&perr, CORDON_E_LIMIT, 0,
                                 "list_executions: %d ids exceed the limit of %d",
                                 cJSON_GetArraySize(list), GC_LIST_IDS_MAX);
            if (perr.code != 0) {
                cJSON *e = cJSON_CreateObject();

                cordon_json_add_text(e, "provider_id", providers[p]);
                cordon_json_add_text(e, "message", perr.message);
                cJSON_AddItemToArray(errors, e);
                cJSON_Delete(list);
                list = NULL;
            }
        }
        if (text != NULL)
            ctx->host->free(text);
        cJSON_ArrayForEach(id, list) {
            struct cordon__record *rec = NULL;
            struct cordon_error e2;
            bool recorded;

            /* Only ids of the execution-id grammar reach a record or reclaim. */
            if (!cJSON_IsString(id) || !cordon_execution_id_valid(id->valuestring) ||
                cordon__run_owner_alive(id->valuestring))
                continue;
            cordon_error_init(&e2);
            recorded = cordon__record_open(ctx, id->valuestring, true, &rec, &e2) == 0 || e2.code == CORDON_E_BUSY;
            cordon__record_close(rec);
            if (recorded)
                continue;
            if (b.p->vt.reclaim(b.res, id->valuestring, &e2) == 0)
                cJSON_AddItemToArray(reclaimed, cJSON_CreateString(id->valuestring));
        }
        cJSON_Delete(list);
        cJSON_Delete(cfg);
        unbind_provider(&b);
    }
    cordon__loader_list_free(providers, n_providers);
    cordon__pool_tidy(ctx);
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
    if (r < 0) {
        cJSON_Delete(doc);
        return r;
    }
    /* What a checkpoint (or its removal) left when its cordon died mid-way. */
    {
        cJSON *partial = cJSON_AddArrayToObject(doc, "partial_checkpoints_removed");
        char *store = checkpoint_store(ctx);
        struct cordon_error perr;

        cordon_error_init(&perr);
        if (store == NULL)
            cordon_error_set(&perr, CORDON_E_NOMEM, ENOMEM, "checkpoint store: out of memory");
        if (store == NULL ||
            cordon__checkpoint_sweep(store, GC_PARTIAL_MIN_AGE_S, partial, &perr) < 0) {
            cJSON *e = cJSON_CreateObject();

            cordon_json_add_text(e, "message", perr.message);
            cJSON_AddItemToArray(errors, e);
        }
        free(store);
    }
    cJSON_AddNumberToObject(doc, "kept", kept);
    cJSON_AddBoolToObject(doc, "ok", cJSON_GetArraySize(errors) == 0);
    return done_json(doc, ret_json, err);
}
