/* core: canonical JSON (see canonical.h for the rules). */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/canonical.h"

/* Integers beyond 2^53 are not exactly representable in a double. */
#define CANONICAL_INT_MAX 9007199254740992.0

/* A growing NUL-terminated text; data is NULL until the first byte. */
struct canon_buf {
    char *data;
    size_t len;
    size_t cap;
};

/* Append n bytes, doubling the capacity so long documents stay linear. */
static int buf_add(struct canon_buf *buf, const char *s, size_t n, struct cordon_error *err)
{
    /* The +1 below is the NUL: check before it can wrap. */
    if (n > SIZE_MAX - buf->len - 1)
        return cordon_error_set(err, CORDON_E_NOMEM, 0, "canonical JSON: text too large");
    if (buf->len + n + 1 > buf->cap) {
        size_t cap = buf->cap ? buf->cap : 256;
        char *grown;

        while (cap < buf->len + n + 1)
            cap = cap > SIZE_MAX / 2 ? buf->len + n + 1 : cap * 2;
        grown = realloc(buf->data, cap);
        if (grown == NULL)
            return cordon_error_set(err, CORDON_E_NOMEM, 0, "canonical JSON: out of memory");
        buf->data = grown;
        buf->cap = cap;
    }
    memcpy(buf->data + buf->len, s, n);
    buf->len += n;
    buf->data[buf->len] = '\0';
    return 0;
}

static int buf_puts(struct canon_buf *buf, const char *s, struct cordon_error *err)
{
    return buf_add(buf, s, strlen(s), err);
}

/* Length of the UTF-8 sequence at s, or 0 when it is malformed (overlong
 * forms, surrogates and values above U+10FFFF included). */
static size_t utf8_sequence(const unsigned char *s)
{
    uint32_t cp;
    size_t n;

    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        n = 2, cp = s[0] & 0x1f;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        n = 3, cp = s[0] & 0x0f;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        n = 4, cp = s[0] & 0x07;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

/* A JSON string: plain runs are copied whole, only " \\ and bytes below
 * 0x20 are escaped, and malformed UTF-8 is refused rather than passed on. */
static int put_string(struct canon_buf *buf, const char *s, struct cordon_error *err)
{
    const unsigned char *p = (const unsigned char *)s;
    const unsigned char *run = p;
    int r;

    if ((r = buf_add(buf, "\"", 1, err)) < 0)
        return r;
    while (*p != '\0') {
        size_t n = utf8_sequence(p);
        char esc[8];

        if (n == 0)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "canonical JSON: string is not valid UTF-8 (byte 0x%02x at "
                                    "offset %zu)", *p, (size_t)(p - (const unsigned char *)s));
        if (*p >= 0x20 && *p != '"' && *p != '\\') {
            p += n;
            continue;
        }
        /* Flush the plain run before this byte, then its escape. */
        if ((r = buf_add(buf, (const char *)run, (size_t)(p - run), err)) < 0)
            return r;
        if (*p == '"' || *p == '\\')
            snprintf(esc, sizeof(esc), "\\%c", *p);
        else
            snprintf(esc, sizeof(esc), "\\u%04x", *p);
        if ((r = buf_puts(buf, esc, err)) < 0)
            return r;
        run = ++p;
    }
    if ((r = buf_add(buf, (const char *)run, (size_t)(p - run), err)) < 0)
        return r;
    return buf_add(buf, "\"", 1, err);
}

/* cJSON keeps numbers as doubles; only exact integers print the same
 * everywhere, so anything else would make a digest depend on printf. */
static int put_number(struct canon_buf *buf, const cJSON *item, struct cordon_error *err)
{
    double v = item->valuedouble;
    char text[32];

    if (!isfinite(v) || v != floor(v))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "canonical JSON: %g is not an integer (only integers have a "
                                "stable digest)", v);
    if (v > CANONICAL_INT_MAX || v < -CANONICAL_INT_MAX)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "canonical JSON: %.0f is outside the exact integer range +-2^53", v);
    /* (int64_t) of -0.0 is 0, so "-0" never appears. */
    snprintf(text, sizeof(text), "%" PRId64, (int64_t)v);
    return buf_puts(buf, text, err);
}

static int key_order(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a;
    const cJSON *y = *(const cJSON *const *)b;

    /* strcmp compares as unsigned char: byte order, as promised. */
    return strcmp(x->string, y->string);
}

static int put_value(struct canon_buf *buf, const cJSON *item, int depth, struct cordon_error *err);

/* Members are sorted through an array of pointers: the cJSON list itself
 * is borrowed and stays in the caller's order. */
static int put_object(struct canon_buf *buf, const cJSON *item, int depth, struct cordon_error *err)
{
    const cJSON **members = NULL;
    size_t n = 0, i = 0;
    int r;

    for (const cJSON *c = item->child; c != NULL; c = c->next)
        n++;
    if (n > 0 && (members = calloc(n, sizeof(*members))) == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, 0, "canonical JSON: out of memory");
    for (const cJSON *c = item->child; c != NULL; c = c->next) {
        if (c->string == NULL) {
            r = cordon_error_set(err, CORDON_E_INVALID, 0, "canonical JSON: object member without a key");
            goto out;
        }
        members[i++] = c;
    }
    if (n > 1)
        qsort(members, n, sizeof(*members), key_order);
    if ((r = buf_add(buf, "{", 1, err)) < 0)
        goto out;
    for (i = 0; i < n; i++) {
        /* Sorted, so a duplicate key sits next to its twin. */
        if (i > 0 && strcmp(members[i - 1]->string, members[i]->string) == 0) {
            r = cordon_error_set(err, CORDON_E_INVALID, 0,
                                 "canonical JSON: key \"%.*s\" appears twice in one object",
                                 cordon_text_fit(members[i]->string, 100), members[i]->string);
            goto out;
        }
        if ((i > 0 && (r = buf_add(buf, ",", 1, err)) < 0) ||
            (r = put_string(buf, members[i]->string, err)) < 0 ||
            (r = buf_add(buf, ":", 1, err)) < 0 ||
            (r = put_value(buf, members[i], depth + 1, err)) < 0)
            goto out;
    }
    r = buf_add(buf, "}", 1, err);
out:
    free(members);
    return r;
}

static int put_value(struct canon_buf *buf, const cJSON *item, int depth, struct cordon_error *err)
{
    int r;

    if (depth > CORDON_CANONICAL_MAX_DEPTH)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "canonical JSON: nesting deeper than the limit of %d",
                                CORDON_CANONICAL_MAX_DEPTH);
    /* The low byte is the type; higher bits are cJSON's ownership flags. */
    switch (item->type & 0xff) {
    case cJSON_NULL:
        return buf_puts(buf, "null", err);
    case cJSON_True:
        return buf_puts(buf, "true", err);
    case cJSON_False:
        return buf_puts(buf, "false", err);
    case cJSON_Number:
        return put_number(buf, item, err);
    case cJSON_String:
        if (item->valuestring == NULL)
            return cordon_error_set(err, CORDON_E_INVALID, 0, "canonical JSON: string without a value");
        return put_string(buf, item->valuestring, err);
    case cJSON_Array:
        if ((r = buf_add(buf, "[", 1, err)) < 0)
            return r;
        for (const cJSON *c = item->child; c != NULL; c = c->next) {
            if ((c != item->child && (r = buf_add(buf, ",", 1, err)) < 0) ||
                (r = put_value(buf, c, depth + 1, err)) < 0)
                return r;
        }
        return buf_add(buf, "]", 1, err);
    case cJSON_Object:
        return put_object(buf, item, depth, err);
    default:
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "canonical JSON: unsupported item type 0x%x", item->type & 0xff);
    }
}

int cordon__json_canonical(const cJSON *value, char **ret_text, struct cordon_error *err)
{
    struct canon_buf buf = { 0 };
    int r;

    if (value == NULL || ret_text == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "canonical JSON: no value given");
    r = put_value(&buf, value, 1, err);
    if (r < 0)
        goto out;
    *ret_text = buf.data;
    buf.data = NULL;
out:
    free(buf.data);
    return r;
}
