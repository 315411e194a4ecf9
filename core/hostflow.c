/* core: the execution-host verbs' shared pieces (core/hostflow.h) — a
 * record's limits and lifetime, the result text — and the verbs that need
 * nothing more: terminate, reclaim, ls, gc (json.md §10-§11). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/json.h>
#include "core/checkpoint.h"
#include "core/config.h"
#include "core/hostflow.h"
#include "core/loader.h"
#include "core/pool.h"
#include "core/record.h"
#include "core/run.h"
#include "core/observe/observe-internal.h"

/* The limits rec was provisioned with, read as every resources object is
 * (once, into a struct): a record whose resources no longer read so is
 * damaged, and nothing goes by a guess at what it meant. */
int cordon__record_limits(const struct cordon__record *rec, struct cordon_limits *ret,
                          struct cordon_error *err)
{
    struct cordon_error perr;

    cordon_error_init(&perr);
    if (cordon_limits_from_json(cJSON_GetObjectItemCaseSensitive(rec->doc, "resources"), "resources",
                                ret, &perr) < 0)
        return cordon_error_set(err, CORDON_E_IO, 0, "record %s: %s", rec->id, perr.message);
    return 0;
}

int cordon__check_keys(const char *field, const cJSON *obj, const char *const *keys, size_t n,
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

bool cordon__record_expired(const struct cordon__record *rec, uint64_t *ret_left_ms)
{
    const cJSON *exp = cJSON_GetObjectItemCaseSensitive(rec->doc, "expires_at_ms");
    uint64_t now = cordon_now_wall_ms(), at = cJSON_IsNumber(exp) ? (uint64_t)exp->valuedouble : 0;

    if (ret_left_ms != NULL)
        *ret_left_ms = at > now ? at - now : 0;
    return at <= now;
}

char *cordon__checkpoint_store(struct cordon_ctx *ctx)
{
    const cJSON *dir = cJSON_GetObjectItemCaseSensitive(ctx->config, "checkpoint_dir");
    char *path = NULL;

    if (cJSON_IsString(dir) && dir->valuestring[0] == '/')
        return strdup(dir->valuestring);
    return asprintf(&path, "%s/checkpoints", ctx->state_dir) < 0 ? NULL : path;
}

/* --- terminate, reclaim, ls, gc ------------------------------------------------------- */

int cordon_terminate_json(struct cordon_ctx *ctx, const char *execution_id, char **ret_json,
                          struct cordon_error *err)
{
    struct cordon__record *rec = NULL;
    struct cordon__bound b = { NULL, NULL };
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
        return cordon__json_done(0, result, ret_json, err);
    }
    if (r == 0)
        r = cordon__bind_record(ctx, rec, &b, err);
    if (r == 0)
        r = cordon__execution_destroy_bound(ctx, rec, &b, err);
    cordon__unbind_provider(&b, NULL);
    cordon__record_close(rec);
    cJSON_AddBoolToObject(result, "already_gone", false);
    return cordon__json_done(r, result, ret_json, err);
}

/* reclaim(id) through one provider; ensure consents to cleanup only. */
static int reclaim_with(struct cordon_ctx *ctx, const char *provider_id, const cJSON *config,
                        const char *id, struct cordon_error *err)
{
    cJSON *cfg = cordon__json_merge(config, NULL);
    struct cordon__bound b;
    struct cordon_error perr;
    int r;

    /* Destroying needs no consent to run code: allow_unsafe_local only
     * lets trusted-local bind for the cleanup. */
    cJSON_DeleteItemFromObjectCaseSensitive(cfg, "allow_unsafe_local");
    cJSON_AddBoolToObject(cfg, "allow_unsafe_local", true);
    r = cordon__bind_provider(ctx, provider_id, cfg, &b, err);
    cJSON_Delete(cfg);
    if (r < 0)
        return r;
    cordon_error_init(&perr);
    r = b.p->vt.reclaim(b.res, id, &perr);
    if (r != 0)
        r = cordon_error_set(err, r < 0 ? r : CORDON_E_PROVIDER, perr.os_errno, "reclaim %s with %s: %s", id,
                             provider_id, perr.message);
    cordon__unbind_provider(&b, NULL);
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
    cJSON_AddBoolToObject(result, "ok", true);
    return cordon__json_done(r, result, ret_json, err);
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
        const char *phase;
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
        rec = cJSON_Parse(text);
        free(text);
        phase = cordon__record_phase_at(fd, rec);   /* an exec's mark shows as "exec" */
        close(fd);
        item = cJSON_CreateObject();
        for (size_t k = 0; k < sizeof(shown) / sizeof(shown[0]); k++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec, shown[k]);
            if (strcmp(shown[k], "phase") == 0 && phase != NULL)
                cJSON_AddStringToObject(item, "phase", phase);
            else if (v != NULL)
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
    cordon__loader_list_free(ids, n);
    return cordon__json_done(r, doc, ret_json, err);
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
        struct cordon__bound b = { NULL, NULL };
        struct cordon_error perr;
        const char *phase;

        cordon_error_init(&perr);
        /* A held lock means a live cordon is using it: not ours to take. */
        if (cordon__record_open(ctx, ids[i], true, &rec, &perr) < 0) {
            kept++;
            continue;
        }
        phase = cordon__record_phase_now(rec);
        /* We hold the lock, so a phase other than "ready" (or an exec's
         * mark) means the cordon that set it died mid-call (kill -9, a
         * crash): its execution is in an unknown state and goes, like an
         * expired one. A pooled one goes when it can no longer be claimed. */
        if (!cordon__record_expired(rec, NULL) && !cordon__pool_record_stale(ctx, rec) &&
            phase != NULL && strcmp(phase, "ready") == 0) {
            kept++;
            cordon__record_close(rec);
            continue;
        }
        cordon__pool_unmark(ctx, rec);   /* an expired pooled one is claimed by nobody now */
        if (cordon__bind_record(ctx, rec, &b, &perr) == 0 &&
            cordon__execution_destroy_bound(ctx, rec, &b, &perr) == 0) {
            cJSON_AddItemToArray(reclaimed, cJSON_CreateString(ids[i]));
        } else {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "execution_id", ids[i]);
            cordon_json_add_text(e, "message", perr.message);
            cJSON_AddItemToArray(errors, e);
        }
        cordon__unbind_provider(&b, NULL);
        cordon__record_close(rec);
    }
    /* Sandboxes of this host that no record names (a crash before the
     * record was saved, a removed state directory). */
    if (r == 0)
        r = cordon__loader_list(ctx, &providers, &n_providers, err);
    for (size_t p = 0; r == 0 && p < n_providers; p++) {
        struct cordon__loaded *lp = NULL;
        struct cordon__bound b = { NULL, NULL };
        struct cordon_error perr;
        cJSON *cfg, *list = NULL, *id;
        char *text = NULL;

        cordon_error_init(&perr);
        if (cordon__loader_get(ctx, providers[p], &lp, &perr) < 0 || lp->vt.list_executions == NULL)
            continue;
        cfg = cordon__json_merge(cordon__base_config(ctx, providers[p]), NULL);
        cJSON_AddBoolToObject(cfg, "allow_unsafe_local", true);
        if (cordon__bind_provider(ctx, providers[p], cfg, &b, &perr) == 0 &&
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
        cordon__unbind_provider(&b, NULL);
    }
    cordon__loader_list_free(providers, n_providers);
    cordon__pool_tidy(ctx);
    cordon__loader_list_free(ids, n);
    if (r < 0) {
        cJSON_Delete(doc);
        return r;
    }
    /* What a checkpoint (or its removal) left when its cordon died mid-way. */
    {
        cJSON *partial = cJSON_AddArrayToObject(doc, "partial_checkpoints_removed");
        char *store = cordon__checkpoint_store(ctx);
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
    /* What an observation left when its cordon died mid-probe. */
    cJSON_AddNumberToObject(doc, "canaries_removed", (double)cordon__observe_sweep_canaries());
    cJSON_AddNumberToObject(doc, "kept", kept);
    cJSON_AddBoolToObject(doc, "ok", cJSON_GetArraySize(errors) == 0);
    return cordon__json_done(0, doc, ret_json, err);
}
