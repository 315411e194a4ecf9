/* core: the warm pool's public calls (cordon_pool_*_json in cordon.h), one
 * request document for both kinds of target. */
#include <string.h>

#include "core/hostflow.h"
#include "core/internal.h"
#include "core/pool.h"
#include "core/run.h"

/* A whole number in 1..2^53 (exact in a double), or absent (dflt). */
static int whole(const cJSON *v, const char *field, uint64_t dflt, uint64_t *ret, struct cordon_error *err)
{
    if (v == NULL) {
        *ret = dflt;
        return 0;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 9007199254740992.0 ||
        v->valuedouble != (double)(uint64_t)v->valuedouble)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: must be a whole number", field);
    *ret = (uint64_t)v->valuedouble;
    return 0;
}

int cordon_pool_fill_json(struct cordon_ctx *ctx, const char *request_json, char **ret_json,
                          struct cordon_error *err)
{
    struct cordon__pool_target target;
    cJSON *req = NULL;
    const char *kind = "run";
    uint64_t size = 0, ttl = 0;
    int r;

    memset(&target, 0, sizeof(target));
    if (ctx == NULL || ret_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "ctx and ret_json are required");
    if ((r = cordon__json_parse_bounded("request", request_json, &req, err)) < 0)
        return r;
    if (!cJSON_IsObject(req)) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0, "request: must be a JSON object");
        goto out;
    }
    /* The pool's own keys; the rest is the run's or the provision's request. */
    if (cJSON_GetObjectItemCaseSensitive(req, "for") != NULL) {
        kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "for"));
        if (kind == NULL || (strcmp(kind, "run") != 0 && strcmp(kind, "provision") != 0)) {
            r = cordon_error_set(err, CORDON_E_INVALID, 0, "for: \"run\" or \"provision\"");
            goto out;
        }
    }
    if (cJSON_GetObjectItemCaseSensitive(req, "size") == NULL) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0, "size: required (1..%d)", CORDON_POOL_SIZE_MAX);
        goto out;
    }
    if ((r = whole(cJSON_GetObjectItemCaseSensitive(req, "size"), "size", 0, &size, err)) < 0 ||
        (r = whole(cJSON_GetObjectItemCaseSensitive(req, "ttl_ms"), "ttl_ms", CORDON_POOL_TTL_DEFAULT_MS, &ttl,
                   err)) < 0 ||
        (r = cordon__pool_check_bounds(size, ttl, err)) < 0)
        goto out;
    kind = strcmp(kind, "provision") == 0 ? "provision" : "run";
    cJSON_DeleteItemFromObjectCaseSensitive(req, "for");
    cJSON_DeleteItemFromObjectCaseSensitive(req, "size");
    cJSON_DeleteItemFromObjectCaseSensitive(req, "ttl_ms");
    r = strcmp(kind, "provision") == 0 ? cordon__provision_pool_target(ctx, req, &target, err)
                                       : cordon__run_pool_target(ctx, req, &target, err);
    if (r == 0)
        r = cordon__pool_fill(ctx, &target, size, ttl, ret_json, err);
    cordon__pool_target_clear(&target);
out:
    cJSON_Delete(req);
    return r;
}

int cordon_pool_ls_json(struct cordon_ctx *ctx, char **ret_json, struct cordon_error *err)
{
    if (ctx == NULL || ret_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "ctx and ret_json are required");
    return cordon__pool_ls_json(ctx, ret_json, err);
}

int cordon_pool_drain_json(struct cordon_ctx *ctx, char **ret_json, struct cordon_error *err)
{
    if (ctx == NULL || ret_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "ctx and ret_json are required");
    return cordon__pool_drain_json(ctx, ret_json, err);
}
