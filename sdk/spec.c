/* sdk: the provision spec, read and written once (see cordon/sdk/spec.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <cordon/sdk/json.h>
#include <cordon/sdk/spec.h>
#include <cordon/text.h>

void cordon_spec_init(struct cordon_spec *spec)
{
    memset(spec, 0, sizeof(*spec));
}

void cordon_spec_clear(struct cordon_spec *spec)
{
    if (spec == NULL)
        return;
    free(spec->image);
    cordon_env_clear(&spec->environment);
    memset(spec, 0, sizeof(*spec));
}

const char *cordon_spec_layout_name(enum cordon_spec_layout layout)
{
    return layout == CORDON_SPEC_LAYOUT_HOST ? "host" : "code";
}

int cordon_spec_set_image(struct cordon_spec *spec, const char *image, struct cordon_error *err)
{
    char *copy = NULL;

    if (spec == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "spec: no spec");
    if (image != NULL && strlen(image) > CORDON_IMAGE_REF_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "image: longer than %u bytes",
                                (unsigned)CORDON_IMAGE_REF_MAX);
    if (image != NULL && image[0] != '\0' && (copy = strdup(image)) == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "image: out of memory");
    free(spec->image);
    spec->image = copy;
    return 0;
}

static int parse_image(const cJSON *item, struct cordon_spec *spec, struct cordon_error *err)
{
    if (item != NULL && !cJSON_IsNull(item) && !cJSON_IsString(item))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "image: must be a string or null");
    return cordon_spec_set_image(spec, cJSON_GetStringValue(item), err);
}

/* Only "none" is defined: anything else is refused, never downgraded. */
static int parse_network(const cJSON *item, struct cordon_error *err)
{
    const cJSON *mode = cJSON_GetObjectItemCaseSensitive(item, "mode");

    if (item == NULL)
        return 0;
    if (!cJSON_IsObject(item) || !cJSON_IsString(mode))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "network: must be {\"mode\": \"none\"}");
    if (strcmp(mode->valuestring, "none") != 0)
        return cordon_error_set(err, CORDON_E_UNSUPPORTED, 0,
                                "network.mode: \"%.*s\" refused: \"none\" is the only mode a "
                                "spec may ask for", cordon_text_fit(mode->valuestring, 32),
                                mode->valuestring);
    return 0;
}

int cordon_spec_layout_from_json(const cJSON *item, const char *field, bool absent_ok,
                                 enum cordon_spec_layout *ret, struct cordon_error *err)
{
    if (item == NULL && absent_ok) {
        *ret = CORDON_SPEC_LAYOUT_CODE;
        return 0;
    }
    if (cJSON_IsString(item) && strcmp(item->valuestring, "code") == 0)
        *ret = CORDON_SPEC_LAYOUT_CODE;
    else if (cJSON_IsString(item) && strcmp(item->valuestring, "host") == 0)
        *ret = CORDON_SPEC_LAYOUT_HOST;
    else
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: must be \"code\" or \"host\"",
                                field != NULL ? field : "layout");
    return 0;
}

int cordon_spec_parse(const char *json, struct cordon_spec *ret, struct cordon_error *err)
{
    struct cordon_spec spec;
    cJSON *doc = NULL;
    const cJSON *item;
    int r;

    cordon_spec_init(&spec);
    if (ret == NULL) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0, "spec: no result pointer");
        goto out;
    }
    if ((r = cordon_json_parse_object("spec", json, CORDON_SPEC_MAX, &doc, err)) < 0)
        goto out;
    item = cJSON_GetObjectItemCaseSensitive(doc, "execution_id");
    if ((r = cordon_execution_id_check("execution_id", cJSON_GetStringValue(item), err)) < 0)
        goto out;
    memcpy(spec.execution_id, item->valuestring, strlen(item->valuestring) + 1);
    if ((r = parse_image(cJSON_GetObjectItemCaseSensitive(doc, "image"), &spec, err)) < 0 ||
        (r = cordon_limits_from_json(cJSON_GetObjectItemCaseSensitive(doc, "resources"),
                                     "resources", &spec.resources, err)) < 0 ||
        (r = parse_network(cJSON_GetObjectItemCaseSensitive(doc, "network"), err)) < 0 ||
        (r = cordon_env_from_json(cJSON_GetObjectItemCaseSensitive(doc, "environment"),
                                  "environment", &spec.environment, err)) < 0 ||
        (r = cordon_spec_layout_from_json(cJSON_GetObjectItemCaseSensitive(doc, "layout"),
                                          "layout", true, &spec.layout, err)) < 0)
        goto out;
    item = cJSON_GetObjectItemCaseSensitive(doc, "expires_at_ms");
    if (item != NULL && !cJSON_IsNull(item) &&
        (r = cordon_json_u64(item, "expires_at_ms", 1, (uint64_t)CORDON_JSON_INT_MAX,
                             &spec.expires_at_ms, err)) < 0)
        goto out;
    *ret = spec;
    cordon_spec_init(&spec);
out:
    cJSON_Delete(doc);
    cordon_spec_clear(&spec);
    return r;
}

int cordon_spec_print(const struct cordon_spec *spec, char **ret_json, struct cordon_error *err)
{
    struct cordon_spec check;
    cJSON *doc, *net;
    char *text = NULL;
    bool ok;
    int r;

    if (spec == NULL || ret_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "spec: no spec or result pointer");
    doc = cJSON_CreateObject();
    ok = doc != NULL && cJSON_AddStringToObject(doc, "execution_id", spec->execution_id) &&
         cJSON_AddItemToObject(doc, "image", spec->image != NULL ? cJSON_CreateString(spec->image)
                                                                 : cJSON_CreateNull()) &&
         cJSON_AddItemToObject(doc, "resources", cordon_limits_to_json(&spec->resources)) &&
         (net = cJSON_AddObjectToObject(doc, "network")) != NULL &&
         cJSON_AddStringToObject(net, "mode", "none") &&
         cJSON_AddItemToObject(doc, "environment", cordon_env_to_json(&spec->environment)) &&
         cJSON_AddStringToObject(doc, "layout", cordon_spec_layout_name(spec->layout)) &&
         cJSON_AddItemToObject(doc, "expires_at_ms", spec->expires_at_ms != 0
                                                         ? cJSON_CreateNumber((double)spec->expires_at_ms)
                                                         : cJSON_CreateNull());
    if (ok)
        text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    if (text == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "spec: out of memory");
    /* What is printed is what a provider will read: read it the same way. */
    cordon_spec_init(&check);
    r = cordon_spec_parse(text, &check, err);
    cordon_spec_clear(&check);
    if (r < 0) {
        free(text);
        return r;
    }
    *ret_json = text;
    return 0;
}

int cordon_spec_deadline(const struct cordon_spec *spec, uint64_t now_ms, uint64_t *ret_ms,
                         struct cordon_error *err)
{
    uint64_t at;

    if (spec == NULL || ret_ms == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "spec: no spec or result pointer");
    at = spec->expires_at_ms != 0 ? spec->expires_at_ms : now_ms + spec->resources.runtime_ms;
    if (at <= now_ms)
        return cordon_error_set(err, CORDON_E_TIMEOUT, 0,
                                "expires_at_ms: already passed (%" PRIu64 " ms ago)", now_ms - at);
    *ret_ms = at;
    return 0;
}

bool cordon_spec_state_add(cJSON *state, const struct cordon_spec_state *kept)
{
    return state != NULL && kept != NULL &&
           cJSON_AddStringToObject(state, "layout", cordon_spec_layout_name(kept->layout)) != NULL &&
           cordon_limits_add(state, "resources", &kept->resources) &&
           cJSON_AddNumberToObject(state, "expires_at_ms", (double)kept->expires_at_ms) != NULL;
}

int cordon_spec_state_from_json(const cJSON *state, struct cordon_spec_state *ret,
                                struct cordon_error *err)
{
    struct cordon_spec_state k;
    int r;

    if (state == NULL || ret == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "state: document and result required");
    if ((r = cordon_spec_layout_from_json(cJSON_GetObjectItemCaseSensitive(state, "layout"),
                                          "state.layout", false, &k.layout, err)) < 0 ||
        (r = cordon_limits_from_json(cJSON_GetObjectItemCaseSensitive(state, "resources"),
                                     "state.resources", &k.resources, err)) < 0 ||
        (r = cordon_json_u64(cJSON_GetObjectItemCaseSensitive(state, "expires_at_ms"),
                             "state.expires_at_ms", 1, (uint64_t)CORDON_JSON_INT_MAX,
                             &k.expires_at_ms, err)) < 0)
        return r;
    *ret = k;
    return 0;
}

int cordon_spec_state_set_deadline(const struct cordon_host_v1 *host, const char *state_json,
                                   uint64_t expires_at_ms, char **ret_state_json,
                                   struct cordon_error *err)
{
    struct cordon_spec_state kept;
    cJSON *doc = NULL;
    int r;

    if (host == NULL || ret_state_json == NULL || expires_at_ms == 0 ||
        expires_at_ms > (uint64_t)CORDON_JSON_INT_MAX)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "extend: host, ret_state_json and expires_at_ms (1..%.0f) required",
                                (double)CORDON_JSON_INT_MAX);
    /* The state must read as provision wrote it before one key changes. */
    if ((r = cordon_json_parse_object("state", state_json, CORDON_STATE_MAX, &doc, err)) < 0 ||
        (r = cordon_spec_state_from_json(doc, &kept, err)) < 0)
        goto out;
    if (!cJSON_ReplaceItemInObjectCaseSensitive(doc, "expires_at_ms",
                                                cJSON_CreateNumber((double)expires_at_ms))) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "state: out of memory");
        goto out;
    }
    r = cordon_json_print_host(host, doc, ret_state_json, err);
out:
    cJSON_Delete(doc);
    return r;
}

int cordon_spec_state_parse(const char *json, cJSON **ret_doc, const char **ret_id,
                            struct cordon_error *err)
{
    cJSON *doc = NULL;
    int r = cordon_json_parse_object("state", json, CORDON_STATE_MAX, &doc, err);

    *ret_id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "execution_id"));
    if (r == 0)
        r = cordon_execution_id_check("state.execution_id", *ret_id, err);
    if (r < 0) {
        cJSON_Delete(doc);
        doc = NULL;
        *ret_id = NULL;
    }
    *ret_doc = doc;
    return r;
}
