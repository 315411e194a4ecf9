/* core: the `providers` and `probe` verbs' library side. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cordon/sdk/json.h>

#include "core/config.h"
#include "core/loader.h"
#include "core/probe_cache.h"

static int finish(cJSON *doc, char **ret_json, struct cordon_error *err)
{
    char *text;

    /* Facts are the provider's text: the document leaves here strict UTF-8. */
    cordon_json_sanitize(doc);
    text = doc != NULL ? cJSON_PrintUnformatted(doc) : NULL;
    cJSON_Delete(doc);
    if (text == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
    *ret_json = text;
    return 0;
}

int cordon_providers_json(struct cordon_ctx *ctx, char **ret_json, struct cordon_error *err)
{
    cJSON *doc = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(doc, "providers");
    char **ids = NULL;
    size_t n = 0;
    int r = cordon__loader_list(ctx, &ids, &n, err);

    if (r < 0) {
        cJSON_Delete(doc);
        return r;
    }
    for (size_t i = 0; i < n; i++) {
        cJSON *item = cJSON_CreateObject(), *kinds;
        struct cordon__loaded *p = NULL;
        struct cordon_error perr;
        char *path = cordon__loader_find(ctx, ids[i]);

        cordon_error_init(&perr);
        cJSON_AddStringToObject(item, "provider_id", ids[i]);
        cJSON_AddStringToObject(item, "path", path != NULL ? path : "");
        free(path);
        if (cordon__loader_get(ctx, ids[i], &p, &perr) == 0) {
            cJSON_AddBoolToObject(item, "loaded", true);
            cJSON_AddStringToObject(item, "version", p->vt.version);
            cJSON_AddNumberToObject(item, "abi_major", CORDON_ABI_MAJOR_OF(p->vt.abi_version));
            cJSON_AddNumberToObject(item, "abi_minor", CORDON_ABI_MINOR_OF(p->vt.abi_version));
            kinds = cJSON_AddArrayToObject(item, "kinds");
            for (const char *const *k = p->vt.supported_kinds; *k != NULL; k++)
                cJSON_AddItemToArray(kinds, cJSON_CreateString(*k));
        } else {
            cJSON_AddBoolToObject(item, "loaded", false);
            cordon_json_add_text(item, "error", perr.message);
        }
        cJSON_AddItemToArray(list, item);
    }
    cordon__loader_list_free(ids, n);
    return finish(doc, ret_json, err);
}

int cordon_probe_json(struct cordon_ctx *ctx, const char *const *ids, const char *config_json,
                      char **ret_json, struct cordon_error *err)
{
    struct cordon__candidate *cands = NULL;
    cJSON *overrides = NULL, *list = NULL, *doc = NULL, *probes;
    size_t n = 0;
    int r = 0;

    if (config_json != NULL) {
        r = cordon__json_parse_bounded("provider config", config_json, &overrides, err);
        if (r < 0)
            return r;
        if (!cJSON_IsObject(overrides)) {
            r = cordon_error_set(err, CORDON_E_INVALID, 0, "provider config: must be a JSON object");
            goto out;
        }
    }
    if (ids != NULL && ids[0] != NULL) {
        list = cJSON_CreateArray();
        for (const char *const *id = ids; *id != NULL; id++)
            cJSON_AddItemToArray(list, cJSON_CreateString(*id));
    }
    r = cordon__candidates_build(ctx, "providers", list, overrides, &cands, &n, err);
    if (r < 0)
        goto out;
    doc = cJSON_CreateObject();
    probes = cJSON_AddArrayToObject(doc, "probes");
    for (size_t i = 0; i < n; i++) {
        struct cordon__loaded *p = NULL;
        struct cordon_error perr;
        cJSON *facts = NULL;
        bool cached = false;

        cordon_error_init(&perr);
        if (cordon__loader_get(ctx, cands[i].provider_id, &p, &perr) == 0 &&
            cordon__probe_full(ctx, p, cands[i].config, &facts, &cached, &perr) == 0) {
            cJSON_AddBoolToObject(facts, "cached", cached);
            cJSON_AddItemToArray(probes, facts);
            continue;
        }
        facts = cJSON_CreateObject();
        cJSON_AddStringToObject(facts, "provider_id", cands[i].provider_id);
        cJSON_AddBoolToObject(facts, "available", false);
        cJSON_AddStringToObject(facts, "reason",
                                p == NULL ? (perr.code == CORDON_E_NOT_FOUND ? "not_installed" : "abi_mismatch")
                                          : "probe_failed");
        cordon_json_add_text(facts, "error", perr.message);
        cJSON_AddItemToArray(probes, facts);
    }
    r = finish(doc, ret_json, err);
    doc = NULL;
out:
    cJSON_Delete(doc);
    cJSON_Delete(list);
    cJSON_Delete(overrides);
    cordon__candidates_free(cands, n);
    return r;
}
