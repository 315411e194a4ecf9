/* core: ordered provider candidates with per-candidate config. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/abi.h"
#include "core/config.h"
#include "core/loader.h"

#define CANDIDATES_MAX 64

void cordon__candidates_free(struct cordon__candidate *cands, size_t n)
{
    if (cands == NULL)
        return;
    for (size_t i = 0; i < n; i++) {
        free(cands[i].provider_id);
        cJSON_Delete(cands[i].config);
    }
    free(cands);
}

/* Read one list element: a string id or {"provider_id", "config"}. */
static int parse_candidate(const char *field, size_t i, const cJSON *item, const char **ret_id,
                           const cJSON **ret_config, struct cordon_error *err)
{
    const cJSON *id, *config;

    if (cJSON_IsString(item)) {
        *ret_id = item->valuestring;
        *ret_config = NULL;
    } else if (cJSON_IsObject(item)) {
        for (const cJSON *c = item->child; c != NULL; c = c->next)
            if (strcmp(c->string, "provider_id") != 0 && strcmp(c->string, "config") != 0)
                return cordon_error_set(err, CORDON_E_INVALID, 0,
                                        "%s[%zu]: unknown key \"%s\" (allowed: provider_id, config)",
                                        field, i, c->string);
        id = cJSON_GetObjectItemCaseSensitive(item, "provider_id");
        config = cJSON_GetObjectItemCaseSensitive(item, "config");
        if (!cJSON_IsString(id))
            return cordon_error_set(err, CORDON_E_INVALID, 0, "%s[%zu].provider_id: must be a string",
                                    field, i);
        if (config != NULL && !cJSON_IsObject(config))
            return cordon_error_set(err, CORDON_E_INVALID, 0, "%s[%zu].config: must be an object",
                                    field, i);
        *ret_id = id->valuestring;
        *ret_config = config;
    } else {
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s[%zu]: must be a provider id or {\"provider_id\", \"config\"}",
                                field, i);
    }
    if (!cordon__provider_id_valid(*ret_id))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s[%zu]: \"%s\" is not a provider id ([a-z0-9][a-z0-9-]{0,63})",
                                field, i, *ret_id);
    return 0;
}

const cJSON *cordon__base_config(const struct cordon_ctx *ctx, const char *provider_id)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(ctx->config, "provider_configs"), provider_id);

    return cJSON_IsObject(c) ? c : NULL;
}

int cordon__candidates_build(struct cordon_ctx *ctx, const char *field, const cJSON *list,
                             const cJSON *overrides, struct cordon__candidate **ret,
                             size_t *ret_n, struct cordon_error *err)
{
    const cJSON *configs = cJSON_GetObjectItemCaseSensitive(ctx->config, "provider_configs");
    struct cordon__candidate *cands = NULL;
    char **installed = NULL;
    size_t n = 0, n_installed = 0;
    int r = 0;

    if (configs != NULL && !cJSON_IsObject(configs))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "config.provider_configs: must be an object of provider id -> config");
    if (list == NULL || cJSON_IsNull(list)) {
        list = cJSON_GetObjectItemCaseSensitive(ctx->config, "providers");
        field = "config.providers";
    }
    if (list != NULL && !cJSON_IsArray(list))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: must be an array", field);
    if (list == NULL || cJSON_GetArraySize(list) == 0) {
        r = cordon__loader_list(ctx, &installed, &n_installed, err);
        if (r < 0)
            return r;
    }
    n = list != NULL && cJSON_GetArraySize(list) > 0 ? (size_t)cJSON_GetArraySize(list) : n_installed;
    if (n > CANDIDATES_MAX) {
        r = cordon_error_set(err, CORDON_E_LIMIT, 0, "%s: %zu candidates exceeds the limit of %d",
                             field, n, CANDIDATES_MAX);
        goto out;
    }
    cands = calloc(n ? n : 1, sizeof(*cands));
    if (cands == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const char *id = installed != NULL ? installed[i] : NULL;
        const cJSON *own = NULL;
        cJSON *merged;

        if (installed == NULL) {
            r = parse_candidate(field, i, cJSON_GetArrayItem(list, (int)i), &id, &own, err);
            if (r < 0)
                goto out;
        }
        merged = cordon__json_merge(cordon__base_config(ctx, id), own);
        cands[i].config = cordon__json_merge(merged, overrides);
        cJSON_Delete(merged);
        cands[i].provider_id = strdup(id);
        cands[i].index = i;
        if (cands[i].config == NULL || cands[i].provider_id == NULL) {
            r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
            goto out;
        }
    }
    *ret = cands;
    *ret_n = n;
    cands = NULL;
out:
    cordon__candidates_free(cands, n);
    cordon__loader_list_free(installed, n_installed);
    return r;
}
