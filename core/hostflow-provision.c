/* core: provision (json.md §7) — the provider verified, a pooled
 * execution claimed or a new one made, its workspace empty, from git or
 * from a checkpoint; and what `cordon pool fill` provisions ahead. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cordon/sdk/capture.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/request.h>
#include <cordon/sdk/runner.h>
#include <cordon/sdk/spec.h>
#include "core/config.h"
#include "core/execution.h"
#include "core/gitws.h"   /* struct cordon__git_export: the helper's report */
#include "core/hostflow.h"
#include "core/loader.h"
#include "core/pool.h"
#include "core/pump.h"
#include "core/record.h"

static void rfc3339(uint64_t ms, char *buf, size_t len)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;

    gmtime_r(&s, &tm);
    snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned)(ms % 1000));
}

/* What every provision result says of the execution it made or claimed:
 * ok, its id and provider, its deadline, and the verdict (consumed). */
static void add_provisioned(cJSON *result, const char *id, const char *provider_id,
                            uint64_t expires, cJSON *verdict)
{
    char when[40];

    cJSON_AddBoolToObject(result, "ok", true);
    cJSON_AddStringToObject(result, "execution_id", id);
    cJSON_AddStringToObject(result, "provider_id", provider_id);
    rfc3339(expires, when, sizeof(when));
    cJSON_AddStringToObject(result, "expires_at", when);
    cJSON_AddNumberToObject(result, "expires_at_ms", (double)expires);
    cJSON_AddItemToObject(result, "verdict", verdict);
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

static int import_fd(const struct cordon__bound *b, const char *state, int fd,
                     struct cordon_error *err)
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

/* The spec's config with its image: what the provider is probed with,
 * and what a pool key names (NULL without memory). */
static cJSON *probe_config(const struct cordon__host_spec *spec)
{
    cJSON *config = cordon__json_merge(spec->config, NULL);

    if (config != NULL && spec->image != NULL && cJSON_IsString(spec->image)) {
        cJSON_DeleteItemFromObjectCaseSensitive(config, "image");
        cJSON_AddStringToObject(config, "image", spec->image->valuestring);
    }
    return config;
}

/*
 * The same verified facts as a run's: the named provider is the one
 * candidate, probed with the spec's config and image (the host verifies
 * its claim, core/verify.h) and judged under spec->isolation. ret_verdict
 * is what the record keeps. A refusal names the skip reason and detail.
 * ret_sel, when not NULL, receives the selection (the caller clears it).
 */
static int select_verified(struct cordon_ctx *ctx, const struct cordon__host_spec *spec,
                           cJSON **ret_verdict, struct cordon__selection *ret_sel,
                           struct cordon_error *err)
{
    struct cordon__select_opts opts = { spec->isolation, "code_execution", NULL, NULL, spec->best_effort };
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

static bool spec_has_git(const struct cordon__host_spec *spec)
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
static int claim_pooled(struct cordon_ctx *ctx, const struct cordon__host_spec *spec,
                        cJSON **verdict, cJSON **ret, struct cordon_error *err)
{
    struct cordon__record *rec = NULL;
    cJSON *config = probe_config(spec), *result, *ws;
    uint64_t expires;
    char key[65];
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
    add_provisioned(result, rec->id, spec->provider, expires, *verdict);
    *verdict = NULL;
    cJSON_AddBoolToObject(result, "pooled", true);
    cordon__record_close(rec);
    *ret = result;
    return 0;
}

int cordon__provision_pool_target(struct cordon_ctx *ctx, const cJSON *req,
                                  struct cordon__pool_target *ret, struct cordon_error *err)
{
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(req, "workspace");
    cJSON *verdict = NULL;
    struct cordon__host_spec spec;
    int r;

    memset(ret, 0, sizeof(*ret));
    if (cJSON_GetObjectItemCaseSensitive(req, "execution_id") != NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "execution_id: a pooled execution's id is its own; not a key of a pool request");
    if (cJSON_GetObjectItemCaseSensitive(req, "metadata") != NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "metadata: given by the provision that claims, not by the pool");
    r = cordon__host_spec_validate(ctx, req, &spec, err);
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

int cordon__provision(struct cordon_ctx *ctx, struct cordon__host_spec *spec, int tar_fd,
                      cJSON **ret, struct cordon_error *err)
{
    uint64_t expires;
    struct cordon__record *rec = NULL;
    struct cordon__bound b = { NULL, NULL };
    struct git_job git;
    cJSON *result = NULL, *ws, *verdict = NULL;
    char *state_text = NULL;
    int r;

    memset(&git, 0, sizeof(git));
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
    r = cordon__bind_provider(ctx, spec->provider, spec->config, &b, err);
    if (r < 0)
        goto out;
    /* The lifetime starts now, not before the probe. */
    expires = cordon_now_wall_ms() + spec->limits.runtime_ms;
    r = cordon__execution_create(
        ctx, &b,
        &(struct cordon__execution_intent){
            .id = spec->id, .provider_id = spec->provider, .provider_config = spec->config,
            .image = spec->image, .limits = &spec->limits, .environment = spec->environment,
            .metadata = spec->metadata, .verdict = verdict, .created_at_ms = cordon_now_wall_ms(),
            .expires_at_ms = expires },
        CORDON_SPEC_LAYOUT_HOST, &rec, err);
    if (r < 0)
        goto out;
    state_text = cordon__record_state(rec);
    if ((r = cordon__record_save(rec, err)) < 0)
        goto out;
    result = cJSON_CreateObject();
    ws = cJSON_AddObjectToObject(result, "workspace");
    if (tar_fd >= 0) {
        r = import_fd(&b, state_text, tar_fd, err);
        cJSON_AddStringToObject(ws, "kind", "checkpoint");
    } else if (spec->workspace != NULL &&
               strcmp(cJSON_GetObjectItemCaseSensitive(spec->workspace, "kind")->valuestring, "git") == 0) {
        struct cordon__pump pump;
        int rfd = -1;

        git.helper = ctx->git_export_path;
        git.repo = cJSON_GetObjectItemCaseSensitive(spec->workspace, "repository")->valuestring;
        git.rev = cJSON_GetObjectItemCaseSensitive(spec->workspace, "revision")->valuestring;
        git.max_bytes = spec->limits.disk_bytes;
        r = cordon__pump_start(&pump, git_produce, &git, &rfd, err);
        if (r == 0) {
            r = import_fd(&b, state_text, rfd, err);
            close(rfd);   /* a producer still writing gets EPIPE and stops */
            r = cordon__pump_join(&pump, r, err);
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
    add_provisioned(result, spec->id, spec->provider, expires, verdict);
    verdict = NULL;
    *ret = result;
    result = NULL;
out:
    /* Nothing half-done stays: the sandbox, then its record (one that would
     * not go keeps its record, for gc). */
    if (r < 0 && rec != NULL)
        cordon__execution_destroy_bound(ctx, rec, &b, NULL);
    cJSON_Delete(git.out.submodules);
    cordon__unbind_provider(&b, NULL);
    cordon__record_close(rec);
    free(state_text);
    cJSON_Delete(result);
    cJSON_Delete(verdict);
    return r;
}

int cordon_provision_json(struct cordon_ctx *ctx, const char *request_json, char **ret_json,
                          struct cordon_error *err)
{
    cJSON *req = NULL, *result = NULL;
    struct cordon__host_spec spec;
    int r;

    memset(&spec, 0, sizeof(spec));
    r = cordon__json_parse_bounded("request", request_json, &req, err);
    if (r == 0)
        r = cordon__host_spec_validate(ctx, req, &spec, err);
    if (r == 0)
        r = cordon__provision(ctx, &spec, -1, &result, err);
    r = cordon__json_done(r, result, ret_json, err);
    cJSON_Delete(spec.config);
    cJSON_Delete(req);
    return r;
}
