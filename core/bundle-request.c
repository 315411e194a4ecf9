/* core: a bundle from a run request's keys (json.md §5): files given
 * inline as text or base64, each checked before its bytes are copied. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cordon/sdk/bounds.h>
#include <cordon/sdk/path.h>

#include "core/bundle-internal.h"
#include "core/bundle.h"
#include "core/internal.h"

/* A toolchain floor such as "3.10": short, dotted digits. */
#define MIN_VERSION_MAX 32

/* Top-level keys of a run request that a bundle accepts and ignores. */
static const char *const request_keys_ignored[] = {
    "provider", "providers", "isolation", "limits", "timeout_ms", "inputs", "workspace",
    "allow_unsafe_local", "image", "contract", "environment", "best_effort_limits",
};
static const char *const request_keys_bundle[] = {
    "language", "entrypoint", "args", "files", "outputs", "toolchain",
};

/* Accept a dotted version: digits, single dots between them, short. */
static int take_min_version(struct cordon__bundle *b, const char *v, struct cordon_error *err)
{
    size_t len = strnlen(v, MIN_VERSION_MAX + 1);
    bool digit = false;

    for (size_t i = 0; i < len; i++) {
        if (v[i] >= '0' && v[i] <= '9')
            digit = true;
        else if (v[i] == '.' && digit && v[i + 1] != '\0')
            digit = false;
        else
            len = 0;
    }
    if (len == 0 || len > MIN_VERSION_MAX || !digit)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "toolchain.min_version: \"%.*s\" is not a dotted version such as "
                                "\"3.10\" (at most %d characters)",
                                cordon_text_fit(v, 40), v, MIN_VERSION_MAX);
    if ((b->min_version = strdup(v)) == NULL)
        return cordon__bundle_nomem(err, "toolchain.min_version");
    return 0;
}

/* The 6-bit value of a standard base64 character, or -1. */
static int base64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Decoded length of standard base64 ("=" padding optional, no whitespace),
 * so that the limit is checked before anything is allocated. */
static int base64_length(const char *field, const char *in, size_t *ret_chars, size_t *ret_len,
                         struct cordon_error *err)
{
    size_t len = strlen(in), pad = 0;

    while (pad < 2 && len > 0 && in[len - 1] == '=')
        len--, pad++;
    if ((pad > 0 && (len + pad) % 4 != 0) || len % 4 == 1)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: invalid base64 (%zu characters is not a whole number of "
                                "groups)", field, len + pad);
    *ret_chars = len;
    *ret_len = len / 4 * 3 + (len % 4 == 0 ? 0 : len % 4 - 1);
    return 0;
}

/* Decode the first chars characters of in into out (ret length bytes). */
static int base64_decode(const char *field, const char *in, size_t chars, unsigned char *out,
                         struct cordon_error *err)
{
    uint32_t acc = 0;
    size_t o = 0;

    for (size_t i = 0; i < chars; i++) {
        int v = base64_value((unsigned char)in[i]);

        if (v < 0)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "%s: invalid base64 (character 0x%02x at offset %zu)", field,
                                    (unsigned char)in[i], i);
        acc = (acc << 6) | (uint32_t)v;
        if (i % 4 == 3) {
            out[o++] = (unsigned char)(acc >> 16);
            out[o++] = (unsigned char)(acc >> 8);
            out[o++] = (unsigned char)acc;
            acc = 0;
        }
    }
    /* A final partial group carries one or two bytes. */
    if (chars % 4 == 2) {
        out[o++] = (unsigned char)(acc >> 4);
    } else if (chars % 4 == 3) {
        out[o++] = (unsigned char)(acc >> 10);
        out[o++] = (unsigned char)(acc >> 2);
    }
    return 0;
}

/* An optional member that is missing or null means the same. */
static bool is_absent(const cJSON *item)
{
    return item == NULL || cJSON_IsNull(item);
}

/* Put c into the slot of its key among keys[]; false if the key is not there. */
static int match_key(const cJSON *c, const char *const *keys, size_t n_keys, const cJSON **slots,
                     const char *where, bool *ret_matched, struct cordon_error *err)
{
    *ret_matched = false;
    for (size_t k = 0; k < n_keys; k++) {
        if (strcmp(c->string, keys[k]) != 0)
            continue;
        if (slots[k] != NULL)
            return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: key \"%s\" appears twice",
                                    where, keys[k]);
        slots[k] = c;
        *ret_matched = true;
    }
    return 0;
}

/* Borrowed pointers to the strings of a JSON array, checked one by one. */
static int string_list(const char *field, const cJSON *array, size_t max, const char ***ret,
                       size_t *ret_n, struct cordon_error *err)
{
    const char **list = NULL;
    size_t n = 0, i = 0;
    const cJSON *c;

    if (!cJSON_IsArray(array))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: must be an array of strings", field);
    cJSON_ArrayForEach(c, array)
        n++;
    if (n > max)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "%s: %zu entries exceeds the limit of %zu",
                                field, n, max);
    if (n > 0 && (list = calloc(n, sizeof(*list))) == NULL)
        return cordon__bundle_nomem(err, field);
    cJSON_ArrayForEach(c, array) {
        if (!cJSON_IsString(c) || c->valuestring == NULL) {
            free(list);
            return cordon_error_set(err, CORDON_E_INVALID, 0, "%s[%zu]: must be a string", field, i);
        }
        list[i++] = c->valuestring;
    }
    *ret = list;
    *ret_n = n;
    return 0;
}

/* One element of "files": shape, path, content (text or base64), limits. */
static int take_request_file(struct cordon__bundle *b, size_t index, const cJSON *item,
                             struct cordon_error *err)
{
    static const char *const keys[] = { "path", "content", "content_base64", "executable" };
    const cJSON *slots[4] = { NULL };
    unsigned char *data = NULL;
    char field[48], *norm = NULL;
    size_t len = 0, chars = 0;
    bool executable = false, matched;
    const cJSON *c;
    int r;

    snprintf(field, sizeof(field), "files[%zu]", index);
    if (!cJSON_IsObject(item))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: must be an object {\"path\", \"content\" or \"content_base64\", "
                                "\"executable\"}", field);
    cJSON_ArrayForEach(c, item) {
        if ((r = match_key(c, keys, 4, slots, field, &matched, err)) < 0)
            return r;
        if (!matched)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "%s: unknown key \"%.*s\" (path, content, content_base64, "
                                    "executable)",
                                    field, cordon_text_fit(c->string, 64), c->string);
    }
    if (!cJSON_IsString(slots[0]))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s.path: missing or not a string", field);
    snprintf(field, sizeof(field), "files[%zu].path", index);
    if ((r = cordon_path_normalize(field, slots[0]->valuestring, &norm, err)) < 0)
        return r;
    snprintf(field, sizeof(field), "files[%zu] (%.*s)", index, cordon_text_fit(norm, 24), norm);
    if (!is_absent(slots[3]) && !cJSON_IsBool(slots[3])) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0, "%s.executable: must be true or false", field);
        goto out;
    }
    executable = cJSON_IsTrue(slots[3]);
    if ((slots[1] != NULL) == (slots[2] != NULL)) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0,
                             "%s: give exactly one of \"content\" and \"content_base64\"", field);
        goto out;
    }
    c = slots[1] != NULL ? slots[1] : slots[2];
    if (!cJSON_IsString(c) || c->valuestring == NULL) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0, "%s.%s: must be a string", field, c->string);
        goto out;
    }
    if (slots[1] != NULL)
        len = strlen(c->valuestring);
    else if ((r = base64_length(field, c->valuestring, &chars, &len, err)) < 0)
        goto out;
    /* The limits hold before a byte is copied. */
    if ((r = cordon__bundle_check_file_room(b, norm, len, err)) < 0)
        goto out;
    if ((data = malloc(len + 1)) == NULL) {
        r = cordon__bundle_nomem(err, field);
        goto out;
    }
    if (slots[1] != NULL)
        memcpy(data, c->valuestring, len);
    else if ((r = base64_decode(field, c->valuestring, chars, data, err)) < 0)
        goto out;
    data[len] = '\0';
    r = cordon__bundle_add_file(b, norm, data, len, executable, err);
    norm = NULL;
    data = NULL;
out:
    free(norm);
    free(data);
    return r;
}

/* The "toolchain" object: only min_version, which may be null. */
static int take_request_toolchain(struct cordon__bundle *b, const cJSON *toolchain,
                                  struct cordon_error *err)
{
    const cJSON *c;
    int r;

    if (!cJSON_IsObject(toolchain))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "toolchain: must be an object {\"min_version\": \"3.10\"} or null");
    cJSON_ArrayForEach(c, toolchain) {
        if (strcmp(c->string, "min_version") != 0)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "toolchain: unknown key \"%.*s\" (min_version)",
                                    cordon_text_fit(c->string, 64), c->string);
        if (cJSON_IsNull(c))
            continue;
        if (!cJSON_IsString(c) || c->valuestring == NULL)
            return cordon_error_set(err, CORDON_E_INVALID, 0, "toolchain.min_version: must be a string");
        if (b->min_version != NULL)
            return cordon_error_set(err, CORDON_E_INVALID, 0, "toolchain: key \"min_version\" appears twice");
        if ((r = take_min_version(b, c->valuestring, err)) < 0)
            return r;
    }
    return 0;
}

int cordon__bundle_from_request(const cJSON *request, struct cordon__bundle **ret,
                                struct cordon_error *err)
{
    enum { K_LANGUAGE, K_ENTRYPOINT, K_ARGS, K_FILES, K_OUTPUTS, K_TOOLCHAIN, K_N };
    const cJSON *slots[K_N] = { NULL }, *ignored[sizeof(request_keys_ignored) / sizeof(char *)] = { NULL };
    struct cordon__bundle *b = NULL;
    const char **list = NULL;
    size_t n = 0, i = 0;
    const cJSON *c;
    bool matched;
    int r;

    if (!cJSON_IsObject(request))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "request: must be a JSON object");
    if (cordon__json_deeper_than(request, CORDON_JSON_MAX_DEPTH))
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "request: nesting deeper than the limit of %d",
                                CORDON_JSON_MAX_DEPTH);
    /* Keys first: an unknown one is refused before any content is looked at. */
    cJSON_ArrayForEach(c, request) {
        if ((r = match_key(c, request_keys_bundle, K_N, slots, "request", &matched, err)) < 0)
            return r;
        if (!matched && (r = match_key(c, request_keys_ignored, sizeof(ignored) / sizeof(ignored[0]),
                                       ignored, "request", &matched, err)) < 0)
            return r;
        if (!matched)
            return cordon_error_set(
                err, CORDON_E_INVALID, 0,
                "request: unknown key \"%.*s\" (a bundle has language, entrypoint, "
                "args, files, outputs, toolchain)",
                cordon_text_fit(c->string, 64), c->string);
    }
    if ((b = calloc(1, sizeof(*b))) == NULL)
        return cordon__bundle_nomem(err, "bundle");

    if (!is_absent(slots[K_LANGUAGE])) {
        if (!cJSON_IsString(slots[K_LANGUAGE])) {
            r = cordon_error_set(err, CORDON_E_INVALID, 0, "language: must be a string");
            goto out;
        }
        if ((r = cordon__bundle_set_language(b, "language", slots[K_LANGUAGE]->valuestring,
                                             err)) < 0)
            goto out;
    }
    if (cJSON_IsString(slots[K_ARGS])) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0,
                             "args: must be an array of strings (one argv entry each), not a shell string");
        goto out;
    }
    if (!is_absent(slots[K_ARGS])) {
        if ((r = string_list("args", slots[K_ARGS], CORDON_ARGV_MAX, &list, &n, err)) < 0 ||
            (r = cordon__bundle_take_args(b, list, n, err)) < 0)
            goto out;
        free(list);
        list = NULL;
    }

    c = slots[K_FILES];
    if (!cJSON_IsArray(c)) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0,
                             "files: %s (an array of {\"path\", \"content\"} objects)",
                             c == NULL ? "missing" : "must be an array");
        goto out;
    }
    /* The count is checked before any file is copied. */
    n = (size_t)cJSON_GetArraySize(c);
    if (n > CORDON_BUNDLE_MAX_FILES) {
        r = cordon_error_set(err, CORDON_E_LIMIT, 0, "files: %zu files exceeds the limit of %d", n,
                             CORDON_BUNDLE_MAX_FILES);
        goto out;
    }
    cJSON_ArrayForEach(c, slots[K_FILES])
        if ((r = take_request_file(b, i++, c, err)) < 0)
            goto out;

    if (!is_absent(slots[K_OUTPUTS])) {
        if ((r = string_list("outputs", slots[K_OUTPUTS], CORDON_BUNDLE_MAX_OUTPUTS, &list, &n, err)) < 0 ||
            (r = cordon__bundle_take_outputs(b, list, n, err)) < 0)
            goto out;
    }
    if (!is_absent(slots[K_TOOLCHAIN]) &&
        (r = take_request_toolchain(b, slots[K_TOOLCHAIN], err)) < 0)
        goto out;
    if (!is_absent(slots[K_ENTRYPOINT])) {
        if (!cJSON_IsString(slots[K_ENTRYPOINT])) {
            r = cordon_error_set(err, CORDON_E_INVALID, 0, "entrypoint: must be a string");
            goto out;
        }
        if ((r = cordon_path_normalize("entrypoint", slots[K_ENTRYPOINT]->valuestring,
                                       &b->entrypoint, err)) < 0)
            goto out;
    }
    if ((r = cordon__bundle_finish(b, "the request", err)) < 0)
        goto out;
    *ret = b;
    b = NULL;
out:
    free(list);
    cordon__bundle_free(b);
    return r;
}
