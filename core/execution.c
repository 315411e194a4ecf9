/* core: the one lifecycle of an execution — bind, spec, record,
 * provision, destroy, unbind (core/execution.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cordon/sdk/json.h>
#include <cordon/sdk/request.h>
#include "core/execution.h"
#include "core/loader.h"

int cordon__bind_provider(struct cordon_ctx *ctx, const char *provider_id, const cJSON *config,
                          struct cordon__bound *ret, struct cordon_error *err)
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

int cordon__unbind_provider(struct cordon__bound *b, struct cordon_error *err)
{
    int r = b->res != NULL ? cordon__loader_release(b->p, b->res, err) : 0;

    b->res = NULL;
    return r;
}

int cordon__bind_record(struct cordon_ctx *ctx, const struct cordon__record *rec,
                        struct cordon__bound *ret, struct cordon_error *err)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(rec->doc, "provider_id");

    if (!cJSON_IsString(id))
        return cordon_error_set(err, CORDON_E_IO, 0, "record %s: no provider_id", rec->id);
    return cordon__bind_provider(ctx, id->valuestring,
                                 cJSON_GetObjectItemCaseSensitive(rec->doc, "provider_config"), ret, err);
}

char *cordon__record_state(const struct cordon__record *rec)
{
    const cJSON *state = cJSON_GetObjectItemCaseSensitive(rec->doc, "provider_state");

    return cJSON_IsObject(state) ? cJSON_PrintUnformatted(state) : NULL;
}

int cordon__execution_spec(const char *id, const struct cordon_limits *limits,
                           enum cordon_spec_layout layout, uint64_t expires_at_ms,
                           const cJSON *image, const cJSON *environment, char **ret,
                           struct cordon_error *err)
{
    struct cordon_spec spec;
    int r;

    cordon_spec_init(&spec);
    snprintf(spec.execution_id, sizeof(spec.execution_id), "%s", id);
    spec.resources = *limits;
    spec.layout = layout;
    spec.expires_at_ms = expires_at_ms;
    r = cordon_spec_set_image(&spec, cJSON_GetStringValue(image), err);
    if (r == 0)
        r = cordon_env_from_json(environment, "environment", &spec.environment, err);
    if (r == 0)
        r = cordon_spec_print(&spec, ret, err);
    cordon_spec_clear(&spec);
    return r;
}

/* The record document of intent (new; NULL without memory): phase
 * "creating", owned by this process, no provider state yet. */
static cJSON *record_doc(const struct cordon_ctx *ctx, const struct cordon__execution_intent *in)
{
    cJSON *doc = cJSON_CreateObject();

    if (doc == NULL)
        return NULL;
    cJSON_AddNumberToObject(doc, "version", CORDON_RECORD_VERSION);
    cJSON_AddStringToObject(doc, "execution_id", in->id);
    cJSON_AddStringToObject(doc, "provider_id", in->provider_id);
    cJSON_AddItemToObject(doc, "provider_config", cJSON_Duplicate(in->provider_config, 1));
    cJSON_AddItemToObject(doc, "image",
                          in->image != NULL ? cJSON_Duplicate(in->image, 1) : cJSON_CreateNull());
    cJSON_AddItemToObject(doc, "resources", cordon_limits_to_json(in->limits));
    cJSON_AddStringToObject(cJSON_AddObjectToObject(doc, "network"), "mode", "none");
    cJSON_AddItemToObject(doc, "environment", in->environment != NULL
                                                  ? cJSON_Duplicate(in->environment, 1)
                                                  : cJSON_CreateObject());
    cJSON_AddItemToObject(doc, "metadata", in->metadata != NULL ? cJSON_Duplicate(in->metadata, 1)
                                                               : cJSON_CreateObject());
    cJSON_AddNumberToObject(doc, "created_at_ms", (double)in->created_at_ms);
    cJSON_AddNumberToObject(doc, "expires_at_ms", (double)in->expires_at_ms);
    cJSON_AddStringToObject(doc, "host_instance_id", ctx->instance_id);
    cJSON_AddStringToObject(doc, "phase", "creating");
    cJSON_AddNumberToObject(doc, "owner_pid", (double)getpid());
    cJSON_AddNullToObject(doc, "provider_state");
    cJSON_AddItemToObject(doc, "verdict", cJSON_Duplicate(in->verdict, 1));
    if (in->pool != NULL)
        cJSON_AddItemToObject(doc, "pool", cJSON_Duplicate(in->pool, 1));
    return doc;
}

int cordon__execution_provision(struct cordon_ctx *ctx, const struct cordon__bound *b,
                                const char *spec_text, struct cordon__record *rec,
                                char **ret_state, struct cordon_error *err)
{
    struct cordon_error perr;
    char *text = NULL;
    cJSON *state;
    int r;

    cordon_error_init(&perr);
    r = b->p->vt.provision(b->res, spec_text, &text, &perr);
    if (r != 0)
        return cordon_error_set(err, r < 0 ? r : CORDON_E_PROVIDER, perr.os_errno, "provision: %s",
                                perr.message);
    /* The provider's state is outside input too: the SDK's bounds. */
    state = NULL;
    r = cordon_json_parse_object("provision: the provider's state", text, CORDON_STATE_MAX, &state, &perr);
    if (r < 0) {
        if (text != NULL)
            ctx->host->free(text);
        return cordon_error_set(err, r == CORDON_E_LIMIT ? r : CORDON_E_PROVIDER, 0, "%s", perr.message);
    }
    if (rec != NULL)
        cJSON_ReplaceItemInObjectCaseSensitive(rec->doc, "provider_state", state);
    else
        cJSON_Delete(state);
    *ret_state = text;
    return 0;
}

int cordon__execution_create(struct cordon_ctx *ctx, const struct cordon__bound *b,
                             const struct cordon__execution_intent *in,
                             enum cordon_spec_layout layout, struct cordon__record **ret_rec,
                             struct cordon_error *err)
{
    struct cordon__record *rec = NULL;
    char *text = NULL, *state = NULL;
    cJSON *doc = NULL;
    int r;

    r = cordon__execution_spec(in->id, in->limits, layout, in->expires_at_ms, in->image,
                               in->environment, &text, err);
    if (r == 0) {
        doc = record_doc(ctx, in);
        r = doc != NULL ? cordon__record_create(ctx, in->id, doc, &rec, err)
                        : cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
    }
    if (r == 0 && (r = cordon__execution_provision(ctx, b, text, rec, &state, err)) < 0) {
        /* Whatever provision said, the sandbox may exist: destroyed by id.
         * One that would not go keeps its record ("creating": gc's). */
        cordon__execution_destroy_bound(ctx, rec, b, NULL);
        cordon__record_close(rec);
    }
    if (r == 0)
        *ret_rec = rec;
    if (state != NULL)
        ctx->host->free(state);
    free(text);
    cJSON_Delete(doc);
    return r;
}

int cordon__execution_end(const struct cordon__bound *b, const char *id, const char *state,
                          struct cordon_error *err)
{
    struct cordon_error perr;
    int r;

    cordon_error_init(&perr);
    r = state != NULL ? b->p->vt.terminate(b->res, state, &perr) : b->p->vt.reclaim(b->res, id, &perr);
    if (r != 0)
        return cordon_error_set(err, r < 0 ? r : CORDON_E_PROVIDER, perr.os_errno,
                                "terminate %s: %s", id, perr.message);
    return 0;
}

int cordon__execution_destroy_bound(struct cordon_ctx *ctx, struct cordon__record *rec,
                                    const struct cordon__bound *b, struct cordon_error *err)
{
    char *state = cordon__record_state(rec);
    int r = cordon__execution_end(b, rec->id, state, err);

    free(state);
    return r < 0 ? r : cordon__record_remove(ctx, rec, err);
}

int cordon__execution_destroy(struct cordon_ctx *ctx, struct cordon__record *rec,
                              struct cordon_error *err)
{
    struct cordon__bound b = { NULL, NULL };
    int r = cordon__bind_record(ctx, rec, &b, err);

    if (r == 0)
        r = cordon__execution_destroy_bound(ctx, rec, &b, err);
    cordon__unbind_provider(&b, NULL);
    return r;
}
