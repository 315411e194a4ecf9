/* Providers' string vectors (see plugins/common/strv.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cordon/sdk/bounds.h>
#include "plugins/common/strv.h"

void strv__clear(struct strv *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->v[i]);
    free(a->v);
    memset(a, 0, sizeof(*a));
}

size_t strv__env_find(const struct strv *a, const char *pair)
{
    size_t len = strcspn(pair, "=");

    for (size_t i = 0; i < a->n; i++)
        if (strncmp(a->v[i], pair, len) == 0 && a->v[i][len] == '=')
            return i;
    return a->n;
}

/* s (taken) at i: in place of the entry there, or appended when i is a->n. */
static int put(struct strv *a, size_t i, char *s, struct cordon_error *err)
{
    size_t old = i < a->n ? strlen(a->v[i]) + 1 : 0;
    int r = 0;

    if (s == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "exec: out of memory");
    if (a->bytes - old + strlen(s) + 1 > CORDON_ARGS_TOTAL_MAX) {
        r = cordon_error_set(err, CORDON_E_LIMIT, 0, "exec: argv and environment exceed %u bytes",
                             CORDON_ARGS_TOTAL_MAX);
    } else if (i == a->n && a->n + 2 > a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        char **grown = reallocarray(a->v, cap, sizeof(*grown));

        if (grown == NULL) {
            r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "exec: out of memory");
        } else {
            a->v = grown;
            a->cap = cap;
        }
    }
    if (r < 0) {
        free(s);
        return r;
    }
    a->bytes += strlen(s) + 1 - old;
    if (i < a->n)
        free(a->v[i]);
    else
        a->v[++a->n] = NULL;
    a->v[i] = s;
    return 0;
}

int strv__take(struct strv *a, char *s, struct cordon_error *err)
{
    return put(a, a->n, s, err);
}

int strv__add(struct strv *a, const char *s, struct cordon_error *err)
{
    return put(a, a->n, strdup(s), err);
}

int strv__env_take(struct strv *a, char *pair, struct cordon_error *err)
{
    return put(a, pair != NULL ? strv__env_find(a, pair) : a->n, pair, err);
}

int strv__env_set(struct strv *a, const char *name, const char *value, struct cordon_error *err)
{
    char *pair = NULL;

    if (asprintf(&pair, "%s=%s", name, value) < 0)
        pair = NULL;
    return strv__env_take(a, pair, err);
}
