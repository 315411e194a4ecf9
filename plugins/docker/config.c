/*
 * docker: the provider config ("socket", "image", "runtime", "user",
 * "exec_agent", "allow_unpinned") as cordon-provider-docker(7) describes
 * it, DOCKER_HOST where the config names no socket, and the check of an
 * image reference, which a spec's image goes through as well.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugins/docker/docker.h"

#define DK_CONFIG_MAX (64u << 10)
#define DK_RUNTIME_MAX 64u

/* [A-Za-z0-9] first, then [A-Za-z0-9_.-], at most max bytes. */
static bool name_valid(const char *s, size_t max)
{
    size_t i;

    if (s == NULL || s[0] == '\0')
        return false;
    for (i = 0; s[i] != '\0'; i++) {
        char c = s[i];
        bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');

        if (i >= max || !(alnum || (i > 0 && (c == '_' || c == '.' || c == '-'))))
            return false;
    }
    return true;
}

bool dk__hex64(const char *s)
{
    size_t i;

    for (i = 0; s != NULL && i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return s != NULL && s[64] == '\0';
}

int dk__image_check(const char *field, const char *ref, bool allow_unpinned, bool *ret_pinned,
                    struct cordon_error *err)
{
    const char *at;
    size_t len = strnlen(ref, 300);

    if (len == 0 || len > 255)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: must be 1 to 255 bytes (NAME@sha256:<64 hex> or "
                                "sha256:<64 hex>)", field);
    for (size_t i = 0; i < len; i++) {
        char c = ref[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-' || c == '/' || c == ':' || c == '@'))
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "%s: \"%.*s\": character '%c' is not allowed in an image "
                                    "reference",
                                    field, cordon_text_fit(ref, 80), ref, c);
    }
    at = strchr(ref, '@');
    /* A local image id, or a name pinned by its content digest. */
    if ((strncmp(ref, "sha256:", 7) == 0 && dk__hex64(ref + 7)) ||
        (at != NULL && at > ref && strncmp(at, "@sha256:", 8) == 0 && dk__hex64(at + 8) &&
         strchr(at + 1, '@') == NULL)) {
        *ret_pinned = true;
        return 0;
    }
    if (at != NULL || strncmp(ref, "sha256:", 7) == 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: \"%.*s\" is malformed: a digest is sha256: and 64 lowercase "
                                "hex digits",
                                field, cordon_text_fit(ref, 80), ref);
    if (!allow_unpinned)
        return cordon_error_set(err, CORDON_E_DENIED, 0,
                                "%s: \"%.*s\" is not pinned; use NAME@sha256:<64 hex> or a local "
                                "image id sha256:<64 hex> (or set \"allow_unpinned\": true in the "
                                "provider config)",
                                field, cordon_text_fit(ref, 80), ref);
    *ret_pinned = false;
    return 0;
}

/* ---- config ------------------------------------------------------------- */

/* The daemon the docker command would reach when the config names none:
 * DOCKER_HOST's unix:// path, else the default socket. Any other scheme
 * (tcp://, ssh://, npipe://) is refused rather than replaced by the
 * default socket, which would be another daemon than the one meant. */
static int socket_default(const char **ret, struct cordon_error *err)
{
    const char *env = secure_getenv("DOCKER_HOST");
    size_t len;

    if (env == NULL || env[0] == '\0') {
        *ret = DK_SOCKET_DEFAULT;
        return 0;
    }
    len = strnlen(env, DK_SOCKET_MAX + sizeof("unix://"));
    if (strncmp(env, "unix://", 7) != 0 || env[7] != '/' || len - 7 > DK_SOCKET_MAX)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "DOCKER_HOST: \"%.*s\" is not unix:// and an absolute path of at "
                                "most %u bytes; docker.so speaks to a local unix socket only (set "
                                "\"socket\" in the provider config, which wins over DOCKER_HOST)",
                                cordon_text_fit(env, 120), env, DK_SOCKET_MAX);
    *ret = env + 7;
    return 0;
}

void dk__config_clear(struct dk_config *cfg)
{
    if (cfg == NULL)
        return;
    free(cfg->image);
    free(cfg->runtime);
    memset(cfg, 0, sizeof(*cfg));
}

int dk__config_parse(const char *json, struct dk_config *ret, struct cordon_error *err)
{
    struct dk_config cfg = { .uid = DK_DEFAULT_UID, .gid = DK_DEFAULT_UID };
    char *socket = NULL;
    const char *path = DK_SOCKET_DEFAULT;
    cJSON *doc = NULL, *item;
    bool pinned, user_set = false, flag;
    int r;

    r = cordon_json_parse_object("config", json != NULL ? json : "{}", DK_CONFIG_MAX, &doc, err);
    if (r < 0)
        goto out;
    cJSON_ArrayForEach(item, doc) {
        const char *key = item->string;

        if (strcmp(key, "socket") == 0) {
            r = cordon_json_strdup(item, "config", &socket, err);
        } else if (strcmp(key, "image") == 0) {
            r = cordon_json_strdup(item, "config", &cfg.image, err);
        } else if (strcmp(key, "runtime") == 0) {
            r = cordon_json_strdup(item, "config", &cfg.runtime, err);
            if (r == 0 && !name_valid(cfg.runtime, DK_RUNTIME_MAX))
                r = cordon_error_set(err, CORDON_E_INVALID, 0,
                                     "config.runtime: \"%.*s\" must match "
                                     "[A-Za-z0-9][A-Za-z0-9_.-]{0,63}",
                                     cordon_text_fit(cfg.runtime, 80), cfg.runtime);
        } else if (strcmp(key, "user") == 0) {
            user_set = true; /* one user for all: they share its per-user limits */
            r = cordon_uid_parse("config.user", cJSON_GetStringValue(item), &cfg.uid, &cfg.gid,
                                 err);
        } else if (strcmp(key, "exec_agent") == 0) {
            r = cordon_json_bool(item, "config", &flag, err);
            cfg.no_agent = r == 0 && !flag;
        } else if (strcmp(key, "allow_unpinned") == 0) {
            r = cordon_json_bool(item, "config", &cfg.allow_unpinned, err);
        } else if (strcmp(key, "allow_unsafe_local") == 0) {
            /* The host's consent flag for trusted-local, merged into every
             * candidate's config; docker runs nothing unprotected. */
            r = cordon_json_bool(item, "config", &flag, err);
        } else {
            r = cordon_error_set(err, CORDON_E_INVALID, 0,
                                 "config.%.*s: unknown key (known: allow_unpinned, exec_agent, "
                                 "image, runtime, socket, user)",
                                 cordon_text_fit(key, 64), key);
        }
        if (r < 0)
            goto out;
    }
    if (socket != NULL)
        path = socket;
    else if ((r = socket_default(&path, err)) < 0)
        goto out;
    r = dk__engine_init(&(struct dk_engine){ 0 }, path, err);
    if (r < 0)
        goto out;
    snprintf(cfg.socket, sizeof(cfg.socket), "%s", path);
    if (cfg.image != NULL) {
        r = dk__image_check("config.image", cfg.image, cfg.allow_unpinned, &pinned, err);
        if (r < 0)
            goto out;
    }
    /* The pool is root's: a caller in the docker group keeps the fixed user. */
    cfg.pooled = !user_set && geteuid() == 0;
    *ret = cfg;
    memset(&cfg, 0, sizeof(cfg));
out:
    free(socket);
    dk__config_clear(&cfg);
    cJSON_Delete(doc);
    return r;
}
