/*
 * cordon-observe: the bounded JSON writer its report is written with
 * (inside/observer.h). A report that would pass CORDON__MAX_REPORT_BYTES or
 * nest deeper than CORDON__JW_MAX_DEPTH marks the writer failed instead.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inside/observer.h"

void cordon__jw_raw(struct cordon__jw *w, const char *s, size_t n)
{
    if (w->failed)
        return;
    if (n > CORDON__MAX_REPORT_BYTES - w->len) {
        w->failed = true;
        return;
    }
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        char *grown;

        while (cap < w->len + n)
            cap *= 2;
        grown = realloc(w->buf, cap);
        if (grown == NULL) {
            w->failed = true;
            return;
        }
        w->buf = grown;
        w->cap = cap;
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

static void jw_str(struct cordon__jw *w, const char *s)
{
    cordon__jw_raw(w, s, strlen(s));
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
    size_t len;
    uint32_t cp;

    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        len = 2, cp = s[0] & 0x1f;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        len = 3, cp = s[0] & 0x0f;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        len = 4, cp = s[0] & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    /* Overlong forms, UTF-16 surrogates and values past U+10FFFF. */
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/* A JSON string literal. Bytes that are not valid UTF-8 become U+00XX, so
 * that a planted file name can never break the report. */
static void jw_quoted(struct cordon__jw *w, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    char esc[8];

    cordon__jw_raw(w, "\"", 1);
    for (size_t i = 0; i < n;) {
        size_t seq = utf8_seq_len(p + i, n - i);

        if (p[i] == '"' || p[i] == '\\') {
            esc[0] = '\\';
            esc[1] = (char)p[i];
            cordon__jw_raw(w, esc, 2);
        } else if (p[i] == '\n') {
            cordon__jw_raw(w, "\\n", 2);
        } else if (p[i] == '\t') {
            cordon__jw_raw(w, "\\t", 2);
        } else if (p[i] < 0x20 || p[i] == 0x7f || seq == 0) {
            snprintf(esc, sizeof(esc), "\\u%04x", p[i]);
            cordon__jw_raw(w, esc, 6);
        } else {
            cordon__jw_raw(w, s + i, seq);
            i += seq;
            continue;
        }
        i++;
    }
    cordon__jw_raw(w, "\"", 1);
}

/* Separator and key before a value; key is NULL inside arrays. */
static void jw_key(struct cordon__jw *w, const char *key)
{
    if (w->depth > 0 && w->need_comma[w->depth - 1])
        cordon__jw_raw(w, ",", 1);
    if (w->depth > 0)
        w->need_comma[w->depth - 1] = true;
    if (key != NULL) {
        jw_quoted(w, key, strlen(key));
        cordon__jw_raw(w, ":", 1);
    }
}

void cordon__jw_open(struct cordon__jw *w, const char *key, char bracket)
{
    jw_key(w, key);
    cordon__jw_raw(w, &bracket, 1);
    if (w->depth >= CORDON__JW_MAX_DEPTH) {
        w->failed = true;
        return;
    }
    w->need_comma[w->depth++] = false;
}

void cordon__jw_close(struct cordon__jw *w, char bracket)
{
    if (w->depth > 0)
        w->depth--;
    cordon__jw_raw(w, &bracket, 1);
}

void cordon__jw_string(struct cordon__jw *w, const char *key, const char *s)
{
    jw_key(w, key);
    if (s == NULL)
        jw_str(w, "null");
    else
        jw_quoted(w, s, strlen(s));
}

void cordon__jw_string_n(struct cordon__jw *w, const char *key, const char *s, size_t n)
{
    jw_key(w, key);
    jw_quoted(w, s, n);
}

void cordon__jw_int(struct cordon__jw *w, const char *key, long long v)
{
    char num[32];

    jw_key(w, key);
    snprintf(num, sizeof(num), "%lld", v);
    jw_str(w, num);
}

void cordon__jw_uint(struct cordon__jw *w, const char *key, unsigned long long v)
{
    char num[32];

    jw_key(w, key);
    snprintf(num, sizeof(num), "%llu", v);
    jw_str(w, num);
}

void cordon__jw_bool(struct cordon__jw *w, const char *key, bool v)
{
    jw_key(w, key);
    jw_str(w, v ? "true" : "false");
}

void cordon__jw_null(struct cordon__jw *w, const char *key)
{
    jw_key(w, key);
    jw_str(w, "null");
}

/* errno as a number plus its symbolic name, e.g. "errno": 1, "errno_name": "EPERM". */
void cordon__jw_errno(struct cordon__jw *w, int e)
{
    const char *name = e != 0 ? strerrorname_np(e) : NULL;

    cordon__jw_int(w, "errno", e);
    cordon__jw_string(w, "errno_name", name);
}
