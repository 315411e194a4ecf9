/* sdk: JSON chores shared by the providers (see json.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cordon/sdk/host.h>
#include <cordon/sdk/json.h>

#include "sdk/json-internal.h"

/* The recursion goes no deeper than limit + 1, however deep the tree. */
static bool deeper_at(const cJSON *v, int depth, int limit)
{
    if (depth > limit)
        return true;
    for (const cJSON *c = v->child; c != NULL; c = c->next)
        if (deeper_at(c, depth + 1, limit))
            return true;
    return false;
}

bool cordon__json_deeper_than(const cJSON *v, int limit)
{
    return v != NULL && deeper_at(v, 1, limit);
}

int cordon__json_parse(const char *field, const char *text, size_t max_bytes, cJSON **ret,
                               struct cordon_error *err)
{
    const char *end = NULL, *rest;
    size_t len;
    cJSON *v;

    if (text == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: missing", field);
    /* Bound the scan before cJSON sees the text. */
    len = strnlen(text, max_bytes + 1);
    if (len > max_bytes)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "%s: more than %zu bytes of JSON", field,
                                max_bytes);
    /* cJSON's own nesting limit (1000) bounds its recursion while parsing;
     * ours is the document's shape, checked on the result. The position
     * comes back through end, not cJSON's global error pointer, which
     * another thread's parse may have moved. */
    v = cJSON_ParseWithLengthOpts(text, len, &end, false);
    if (v == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: not valid JSON (near byte %td)", field,
                                end != NULL && end >= text ? end - text : (ptrdiff_t)0);
    /* One document: after it, whitespace only. Text after a document is
     * what a second writer, or a truncated-then-appended file, leaves. */
    for (rest = end; rest < text + len && (*rest == ' ' || *rest == '\t' || *rest == '\r' || *rest == '\n'); rest++)
        ;
    if (rest < text + len) {
        cJSON_Delete(v);
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: text after the JSON document (at byte %td)",
                                field, rest - text);
    }
    if (cordon__json_deeper_than(v, CORDON_JSON_MAX_DEPTH)) {
        cJSON_Delete(v);
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "%s: JSON nested deeper than %d levels",
                                field, CORDON_JSON_MAX_DEPTH);
    }
    *ret = v;
    return 0;
}

int cordon_json_parse_object(const char *field, const char *text, size_t max, cJSON **ret,
                             struct cordon_error *err)
{
    cJSON *doc = NULL;
    int r = cordon__json_parse(field, text, max, &doc, err);

    if (r < 0)
        return r;
    if (!cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: must be a JSON object", field);
    }
    *ret = doc;
    return 0;
}

int cordon_json_print_host(const struct cordon_host_v1 *host, const cJSON *doc, char **ret,
                           struct cordon_error *err)
{
    char *text = cJSON_PrintUnformatted(doc), *copy;

    copy = text != NULL ? cordon_host_strdup(host, text) : NULL;
    free(text);
    if (copy == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "result: out of memory");
    *ret = copy;
    return 0;
}

int cordon_json_boundary_host(const struct cordon_host_v1 *host, pid_t pid, char **ret,
                              struct cordon_error *err)
{
    cJSON *doc = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(doc, "pids");
    int r;

    if (arr == NULL || !cJSON_AddItemToArray(arr, cJSON_CreateNumber((double)pid)))
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "boundary: out of memory");
    else
        r = cordon_json_print_host(host, doc, ret, err);
    cJSON_Delete(doc);
    return r;
}

int cordon_json_bool(const cJSON *item, const char *parent, bool *ret, struct cordon_error *err)
{
    if (item == NULL || item->string == NULL || parent == NULL || ret == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "json: a named item and a result required");
    if (!cJSON_IsBool(item))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s.%.*s: must be true or false", parent,
                                cordon_text_fit(item->string, 64), item->string);
    *ret = cJSON_IsTrue(item);
    return 0;
}

int cordon_json_strdup(const cJSON *item, const char *parent, char **ret, struct cordon_error *err)
{
    char *copy;

    if (item == NULL || item->string == NULL || parent == NULL || ret == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "json: a named item and a result required");
    if (!cJSON_IsString(item))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s.%.*s: must be a string", parent,
                                cordon_text_fit(item->string, 64), item->string);
    copy = strdup(item->valuestring);
    if (copy == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "%s.%.*s: out of memory", parent,
                                cordon_text_fit(item->string, 64), item->string);
    free(*ret);
    *ret = copy;
    return 0;
}

int cordon_json_u64(const cJSON *item, const char *field, uint64_t min, uint64_t max,
                    uint64_t *ret, struct cordon_error *err)
{
    double v;

    if (!cJSON_IsNumber(item))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: must be a number", field);
    v = item->valuedouble;
    if (!isfinite(v) || v < 0 || v != floor(v) || v > CORDON_JSON_INT_MAX)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: must be a whole number between 0 and 2^53 (%g)", field, v);
    if ((uint64_t)v < min || (uint64_t)v > max)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: %.0f is outside %" PRIu64 "..%" PRIu64, field, v, min, max);
    *ret = (uint64_t)v;
    return 0;
}

cJSON *cordon_json_add_text(cJSON *obj, const char *key, const char *text)
{
    size_t len = text != NULL ? strlen(text) : 0;
    /* An escape is at most six bytes for one byte of input. */
    size_t cap = len < CORDON_JSON_TEXT_MAX / 6 ? len * 6 + 1 : CORDON_JSON_TEXT_MAX + 1;
    char *buf = malloc(cap);
    cJSON *item;

    if (buf == NULL)
        return NULL;
    cordon_text_escape(buf, cap, text != NULL ? text : "", len, 0, NULL);
    item = cJSON_AddStringToObject(obj, key, buf);
    free(buf);
    return item;
}

/* *text replaced by its escaped form when it is not UTF-8; 1 if it was. */
static size_t fix_utf8(char **text)
{
    size_t len = strlen(*text);
    char *fixed;

    if (cordon_text_is_utf8(*text, len))
        return 0;
    fixed = cJSON_malloc(len * 4 + 1);
    if (fixed == NULL)
        return 0;
    cordon_text_escape(fixed, len * 4 + 1, *text, len, CORDON_TEXT_KEEP_LINES, NULL);
    cJSON_free(*text);
    *text = fixed;
    return 1;
}

size_t cordon_json_sanitize(cJSON *doc)
{
    size_t n = 0;

    if (doc == NULL)
        return 0;
    if (doc->string != NULL && !(doc->type & cJSON_StringIsConst))
        n += fix_utf8(&doc->string);
    /* A reference shares its valuestring with the item it refers to. */
    if (cJSON_IsString(doc) && doc->valuestring != NULL && !(doc->type & cJSON_IsReference))
        n += fix_utf8(&doc->valuestring);
    for (cJSON *c = doc->child; c != NULL; c = c->next)
        n += cordon_json_sanitize(c);
    return n;
}
