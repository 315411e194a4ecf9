/* core: a provision request read and checked into struct
 * cordon__host_spec before anything exists (json.md §7). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/env.h"
#include "core/hostflow.h"

#define METADATA_MAX_BYTES (16u << 10)
#define METADATA_MAX_DEPTH 8

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

int cordon__host_spec_validate(struct cordon_ctx *ctx, const cJSON *req,
                               struct cordon__host_spec *ret, struct cordon_error *err)
{
    static const char *const keys[] = { "provider", "provider_config", "allow_unsafe_local",
                                        "allow_unpinned", "image", "workspace", "resources",
                                        "network", "environment", "metadata", "execution_id",
                                        "isolation", "best_effort_limits" };
    const cJSON *v, *mode;
    cJSON *over;
    char *meta;
    size_t len;
    int r;

    memset(ret, 0, sizeof(*ret));
    if (!cJSON_IsObject(req))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "request: must be a JSON object");
    if ((r = cordon__check_keys("", req, keys, sizeof(keys) / sizeof(keys[0]), err)) < 0)
        return r;
    v = cJSON_GetObjectItemCaseSensitive(req, "provider");
    if (!cJSON_IsString(v))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "provider: required, a provider id");
    ret->provider = v->valuestring;
    if ((r = cordon__isolation_parse("isolation", cJSON_GetObjectItemCaseSensitive(req, "isolation"),
                                     &ret->isolation, err)) < 0 ||
        (r = cordon__best_effort_parse(cJSON_GetObjectItemCaseSensitive(req, "best_effort_limits"),
                                       &ret->best_effort, err)) < 0)
        return r;
    if ((r = cordon_limits_from_json(cJSON_GetObjectItemCaseSensitive(req, "resources"), "resources",
                                     &ret->limits, err)) < 0)
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
        if ((r = cordon__check_keys("workspace", ret->workspace, wkeys, 3, err)) < 0)
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
        if (cordon__json_deeper_than(ret->metadata, METADATA_MAX_DEPTH))
            return cordon_error_set(err, CORDON_E_LIMIT, 0, "metadata: deeper than the limit of %d levels",
                                    METADATA_MAX_DEPTH);
        meta = cJSON_PrintUnformatted(ret->metadata);
        if (meta == NULL)
            return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "metadata: out of memory");
        len = strlen(meta);
        free(meta);
        if (len > METADATA_MAX_BYTES)
            return cordon_error_set(err, CORDON_E_LIMIT, 0, "metadata: %zu bytes exceeds the limit of %u",
                                    len, METADATA_MAX_BYTES);
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
