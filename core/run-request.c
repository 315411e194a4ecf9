/* core: a run request read once into struct cordon__run_request before
 * anything is created — the types of its keys, its limits over the run's
 * defaults, its variables, its candidate providers — and the pool target
 * of `cordon pool fill`, which reads a request the same way. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cordon/sdk/bounds.h>
#include "core/limits.h"
#include "core/env.h"
#include "core/run-internal.h"
#include "core/run.h"

/* Bytes of a stream kept per exec (limits.retention_bytes): held in memory
 * and carried in the result document. */
#define RUN_MAX_RETENTION (16ull << 20)

static int read_u64(const cJSON *obj, const char *key, const char *field, uint64_t *ret,
                    struct cordon_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (v == NULL)
        return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 9.0e15 ||
        v->valuedouble != (double)(uint64_t)v->valuedouble)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s.%s: must be a whole number >= 0",
                                field, key);
    *ret = (uint64_t)v->valuedouble;
    return 0;
}

/*
 * The request's "limits" (NULL or an object; every key may be left out)
 * over the run's defaults, as one complete resources object (new, into
 * *ret) that cordon_limits_from_json reads like any other: the six keys,
 * their kinds and bounds are the sdk's. retention_bytes is not one of the
 * six (it bounds what the host keeps of a stream, not the sandbox): it
 * goes to *ret_retention. A key given twice reaches the sdk twice, which
 * refuses it.
 */
static int limits_merge(const cJSON *given, const struct cordon_limits *defaults, cJSON **ret,
                        uint64_t *ret_retention, struct cordon_error *err)
{
    cJSON *defs = cordon_limits_to_json(defaults), *merged = cJSON_CreateObject();
    uint64_t retention = *ret_retention;
    int r = 0;

    if (defs == NULL || merged == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "limits: out of memory");
        goto out;
    }
    for (const cJSON *c = given != NULL ? given->child : NULL; r == 0 && c != NULL; c = c->next) {
        size_t i = 0;

        if (strcmp(c->string, "retention_bytes") == 0) {
            r = read_u64(given, "retention_bytes", "limits", &retention, err);
            continue;
        }
        while (i < CORDON_LIMIT_KEYS_COUNT && strcmp(c->string, cordon_limit_keys[i]) != 0)
            i++;
        if (i == CORDON_LIMIT_KEYS_COUNT)
            r = cordon_error_set(err, CORDON_E_INVALID, 0, "limits.%.*s: unknown limit",
                                 cordon_text_fit(c->string, 100), c->string);
        else if (!cJSON_AddItemToObject(merged, c->string, cJSON_Duplicate(c, 1)))
            r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "limits: out of memory");
    }
    for (size_t i = 0; r == 0 && i < CORDON_LIMIT_KEYS_COUNT; i++) {
        const char *key = cordon_limit_keys[i];

        if (cJSON_GetObjectItemCaseSensitive(merged, key) == NULL &&
            !cJSON_AddItemToObject(merged, key, cJSON_DetachItemFromObjectCaseSensitive(defs, key)))
            r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "limits: out of memory");
    }
    if (r < 0)
        goto out;
    *ret = merged;
    merged = NULL;
    *ret_retention = retention;
out:
    cJSON_Delete(merged);
    cJSON_Delete(defs);
    return r;
}

/* Limits: the run defaults, then the request's "limits" object; with
 * timeout_ms and retention_bytes, which are the host's. */
static int read_limits(const cJSON *request, struct cordon_limits *ret_limits,
                       uint64_t *ret_timeout_ms, size_t *ret_retention, struct cordon_error *err)
{
    const cJSON *limits = cJSON_GetObjectItemCaseSensitive(request, "limits");
    uint64_t retention = CORDON_RUN_DEFAULT_RETENTION, timeout = CORDON_RUN_DEFAULT_TIMEOUT_MS;
    struct cordon_limits defaults, read;
    cJSON *resources = NULL;
    bool runtime_given;
    int r;

    r = read_u64(request, "timeout_ms", "request", &timeout, err);
    if (r < 0)
        return r;
    if (timeout == 0 || timeout > CORDON_LIMIT_RUNTIME_MAX)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "timeout_ms: %llu must be between 1 and %llu",
                                (unsigned long long)timeout, CORDON_LIMIT_RUNTIME_MAX);
    if (limits != NULL && !cJSON_IsObject(limits))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "limits: must be an object");
    runtime_given = cJSON_GetObjectItemCaseSensitive(limits, "runtime_ms") != NULL;
    defaults = (struct cordon_limits){ CORDON_RUN_DEFAULT_CPUS, CORDON_RUN_DEFAULT_MEMORY,
                                       CORDON_RUN_DEFAULT_DISK, CORDON_RUN_DEFAULT_PIDS,
                                       timeout + CORDON_RUN_RUNTIME_SLACK_MS,
                                       CORDON_RUN_DEFAULT_OUTPUT };
    /* The default runtime is derived from timeout_ms: name the key the
     * caller gave, not one that was left out. */
    if (!runtime_given && defaults.runtime_ms > CORDON_LIMIT_RUNTIME_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                "timeout_ms: %llu leaves the default limits.runtime_ms "
                                "(timeout_ms + %llu) above the maximum %llu; "
                                "give limits.runtime_ms",
                                (unsigned long long)timeout, CORDON_RUN_RUNTIME_SLACK_MS,
                                CORDON_LIMIT_RUNTIME_MAX);
    r = limits_merge(limits, &defaults, &resources, &retention, err);
    if (r == 0)
        r = cordon_limits_from_json(resources, "limits", &read, err);
    cJSON_Delete(resources);
    if (r < 0)
        return r;
    if (runtime_given && timeout > read.runtime_ms)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "timeout_ms: %llu exceeds limits.runtime_ms %llu",
                                (unsigned long long)timeout, (unsigned long long)read.runtime_ms);
    if (retention > RUN_MAX_RETENTION)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "limits.retention_bytes: %llu exceeds the maximum %llu",
                                (unsigned long long)retention, RUN_MAX_RETENTION);
    *ret_limits = read;
    *ret_timeout_ms = timeout;
    *ret_retention = (size_t)retention;
    return 0;
}

/* The key types of a run request (workspace, image, inputs, providers,
 * allow_unsafe_local), the workspace absolute and the inputs bounded. */
static int check_types(const cJSON *request, struct cordon_error *err)
{
    static const struct { const char *key; int type; } types[] = {
        { "workspace", cJSON_String }, { "image", cJSON_String }, { "inputs", cJSON_Array },
        { "providers", cJSON_Array },
    };
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(request, "allow_unsafe_local");

    if (v != NULL && !cJSON_IsBool(v))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "allow_unsafe_local: must be true or false");
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        v = cJSON_GetObjectItemCaseSensitive(request, types[i].key);
        if (v != NULL && !cJSON_IsNull(v) && (v->type & 0xff) != types[i].type)
            return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: must be %s", types[i].key,
                                    types[i].type == cJSON_String ? "a string" : "an array");
    }
    v = cJSON_GetObjectItemCaseSensitive(request, "workspace");
    if (cJSON_IsString(v) && v->valuestring[0] != '/')
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "workspace: \"%.*s\" must be an absolute path",
                                cordon_text_fit(v->valuestring, 200), v->valuestring);
    v = cJSON_GetObjectItemCaseSensitive(request, "inputs");
    if (cJSON_GetArraySize(v) > CORDON_RUN_MAX_INPUTS)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "inputs: %d exceeds the limit of %d",
                                cJSON_GetArraySize(v), CORDON_RUN_MAX_INPUTS);
    for (int i = 0; i < cJSON_GetArraySize(v); i++)
        if (!cJSON_IsString(cJSON_GetArrayItem(v, i)))
            return cordon_error_set(err, CORDON_E_INVALID, 0, "inputs[%d]: must be a host path", i);
    return 0;
}

/* The request's candidates ("provider" or "providers"), each with the
 * request's consent and image in its config. */
static int read_candidates(struct cordon_ctx *ctx, const cJSON *request,
                           struct cordon__run_request *req, struct cordon_error *err)
{
    const cJSON *one = cJSON_GetObjectItemCaseSensitive(request, "provider");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(request, "providers");
    cJSON *overrides = cJSON_CreateObject(), *own = NULL;
    int r;

    if (overrides == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
    if (req->allow_unsafe_local)
        cJSON_AddBoolToObject(overrides, "allow_unsafe_local", true);
    /* the image is part of what a candidate is probed with (its toolchains) */
    if (req->image != NULL)
        cJSON_AddStringToObject(overrides, "image", req->image);
    /* "provider": "x" is the one-candidate form of "providers": ["x"] */
    if (one != NULL && list == NULL) {
        list = own = cJSON_CreateArray();
        cJSON_AddItemToArray(own, cJSON_Duplicate(one, 1));
    }
    r = cordon__candidates_build(ctx, own != NULL ? "provider" : "providers", list, overrides,
                                 &req->cands, &req->n_cands, err);
    cJSON_Delete(own);
    cJSON_Delete(overrides);
    return r;
}

int cordon__run_request_parse(struct cordon_ctx *ctx, const cJSON *request,
                              struct cordon__run_request *ret, struct cordon_error *err)
{
    const cJSON *inputs = cJSON_GetObjectItemCaseSensitive(request, "inputs");
    const cJSON *env = cJSON_GetObjectItemCaseSensitive(request, "environment");
    int r;

    memset(ret, 0, sizeof(*ret));
    if (!cJSON_IsObject(request))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "request: must be a JSON object");
    if ((r = check_types(request, err)) < 0 ||
        (r = read_limits(request, &ret->limits, &ret->timeout_ms, &ret->retention, err)) < 0 ||
        (r = cordon__env_validate("environment", env, err)) < 0 ||
        (r = cordon_env_from_json(env, "environment", &ret->environment, err)) < 0 ||
        (r = cordon__isolation_parse("isolation", cJSON_GetObjectItemCaseSensitive(request, "isolation"),
                                     &ret->isolation, err)) < 0 ||
        (r = cordon__best_effort_parse(cJSON_GetObjectItemCaseSensitive(request, "best_effort_limits"),
                                       &ret->best_effort, err)) < 0)
        goto out;
    ret->workspace = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(request, "workspace"));
    ret->image = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(request, "image"));
    ret->allow_unsafe_local = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(request, "allow_unsafe_local"));
    for (const cJSON *in = inputs != NULL ? inputs->child : NULL; in != NULL; in = in->next)
        ret->inputs[ret->n_inputs++] = in->valuestring;
    r = read_candidates(ctx, request, ret, err);
out:
    if (r < 0)
        cordon__run_request_clear(ret);
    return r;
}

void cordon__run_request_clear(struct cordon__run_request *req)
{
    cordon_env_clear(&req->environment);
    cordon__candidates_free(req->cands, req->n_cands);
    req->cands = NULL;
    req->n_cands = 0;
}

int cordon__run_pool_target(struct cordon_ctx *ctx, const cJSON *request,
                            struct cordon__pool_target *ret, struct cordon_error *err)
{
    static const char *const keys[] = { "provider", "image", "limits", "timeout_ms", "isolation",
                                        "allow_unsafe_local", "best_effort_limits", NULL };
    struct cordon__select_opts opts = { CORDON_ISOLATION_REQUIRED, "code_execution", NULL, NULL, 0 };
    struct cordon__run_request req;
    cJSON *probes = NULL;
    int r;

    memset(ret, 0, sizeof(*ret));
    if (!cJSON_IsObject(request))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "request: must be a JSON object");
    for (const cJSON *c = request->child; c != NULL; c = c->next) {
        size_t i;
        for (i = 0; keys[i] != NULL && strcmp(keys[i], c->string) != 0; i++)
            ;
        if (keys[i] == NULL)
            return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: not a key of a pool request", c->string);
    }
    if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(request, "provider")))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "provider: required, one provider id");
    /* The request exactly as a run reads it. */
    r = cordon__run_request_parse(ctx, request, &req, err);
    if (r < 0)
        return r;
    opts.isolation = req.isolation;
    opts.best_effort = req.best_effort;
    r = cordon__select(ctx, req.cands, req.n_cands, &opts, &ret->sel, &probes, err);
    if (r < 0)
        r = cordon__select_refusal(
            r, cJSON_GetObjectItemCaseSensitive(request, "provider")->valuestring, probes, err);
    cJSON_Delete(probes);
    if (r == 0) {
        ret->image = req.image != NULL ? cJSON_CreateString(req.image) : cJSON_CreateNull();
        ret->limits = req.limits;
        ret->environment = cJSON_CreateObject();   /* a run's variables go to its commands */
        ret->layout = "code";
        ret->isolation = opts.isolation;
        r = cordon__pool_key(ret->sel.provider->id, ret->sel.config, ret->image, &ret->limits, NULL,
                             "code", ret->key, err);
    }
    cordon__run_request_clear(&req);
    if (r < 0)
        cordon__pool_target_clear(ret);
    return r;
}
