/*
 * A NULL-terminated string vector that owns its strings: the argv and
 * environment a provider builds for one exec (docker's agent, runc's
 * exec). Compiled into each provider that uses it; not part of
 * libcordon-sdk. All of its strings together stay within
 * CORDON_ARGS_TOTAL_MAX bytes (CORDON_E_LIMIT past it).
 */
#ifndef CORDON_PLUGINS_COMMON_STRV_H
#define CORDON_PLUGINS_COMMON_STRV_H

#include <stddef.h>
#include <cordon/provider.h>

struct strv {
    char **v;                 /* v[n] is NULL once anything was added */
    size_t n, cap, bytes;     /* bytes: of the strings with their NULs */
};

void strv__clear(struct strv *a);
/* s appended, taken in every case (malloc'd; NULL is CORDON_E_NOMEM). */
int strv__take(struct strv *a, char *s, struct cordon_error *err);
/* A copy of s appended. */
int strv__add(struct strv *a, const char *s, struct cordon_error *err);
/* The index of the entry NAME=... that pair ("NAME=VALUE" or "NAME=")
 * names, or a->n. */
size_t strv__env_find(const struct strv *a, const char *pair);
/* pair ("NAME=VALUE", taken as strv__take takes it) in place of an earlier
 * NAME, else appended. */
int strv__env_take(struct strv *a, char *pair, struct cordon_error *err);
/* NAME=VALUE in place of an earlier NAME, else appended. */
int strv__env_set(struct strv *a, const char *name, const char *value, struct cordon_error *err);

#endif
