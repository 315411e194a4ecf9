/* core: making a new execution — its spec, its record, its provision
 * (core/execution.h). */
#include <stdio.h>
#include <unistd.h>

#include <cordon/sdk/json.h>
#include <cordon/sdk/request.h>
#include "core/execution.h"

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

cJSON *cordon__execution_record(const struct cordon_ctx *ctx,
                                const struct cordon__execution_intent *in)
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
    return doc;
}

int cordon__execution_provision(struct cordon_ctx *ctx, const struct cordon_provider_v1 *vt,
                                struct cordon_resource *res, const char *spec_text,
                                struct cordon__record *rec, char **ret_state,
                                struct cordon_error *err)
{
    struct cordon_error perr;
    char *text = NULL;
    cJSON *state;
    int r;

    cordon_error_init(&perr);
    r = vt->provision(res, spec_text, &text, &perr);
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
    cJSON_ReplaceItemInObjectCaseSensitive(rec->doc, "provider_state", state);
    *ret_state = text;
    return 0;
}
