/*
 * core: the host context and what every core module shares.
 */
#ifndef CORDON_CORE_INTERNAL_H
#define CORDON_CORE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <cjson/cJSON.h>

#include <cordon/cordon.h>
#include <cordon/provider.h>
#include <cordon/sdk/json.h>

#include "sdk/json-internal.h"

/* A provider the host loaded. Never unloaded; lives as long as the ctx. */
struct cordon__loaded {
    char id[65];
    char *path;                     /* absolute path of the .so */
    struct cordon_provider_v1 vt;   /* checked copy, host-sized */
    bool quarantined;               /* a release failed: never ensure again in this ctx */
};

/* How a full probe verifies a provider's claim (core/verify.h); facts are
 * rewritten in place. */
typedef int (*cordon__verify_fn)(struct cordon_ctx *ctx, struct cordon__loaded *p, const cJSON *config,
                                 cJSON *facts, struct cordon_error *err);

struct cordon_ctx {
    char *state_dir;
    char *observer_path;
    char *init_path;
    char *git_export_path;          /* the cordon-git-export helper */
    char instance_id[33];
    char **search_dirs;             /* provider directories, absolute, in order */
    size_t n_search_dirs;
    cJSON *config;                  /* the config file's object, or an empty object */
    bool fresh;
    /* cordon__verify_facts; nothing in the library or the command changes
     * it (only unit tests of selection's own logic replace it). */
    cordon__verify_fn verify;
    /* The services table providers get: interned for the life of the
     * process (a provider may keep it), shared by every context with the
     * same paths and instance id. */
    const struct cordon_host_v1 *host;
    struct cordon__loaded **loaded; /* grows; pointers stay valid */
    size_t n_loaded;
};

/* The size bound of every JSON entry point of the host (a request, the
 * config, a --request file of the command): a run request carries its
 * bundle's files inline. The depth bound is everyone's:
 * CORDON_JSON_MAX_DEPTH (cordon/sdk/json.h). */
#define CORDON_JSON_MAX_BYTES (80u << 20)

/* The host's config file (--config, CORDON_CONFIG). */
#define CORDON_CONFIG_MAX_BYTES (1u << 20)

/* Parse text as JSON within the host's bounds; field names the document in
 * errors ("request", "config"). */
static inline int cordon__json_parse_bounded(const char *field, const char *text, cJSON **ret,
                                             struct cordon_error *err)
{
    return cordon__json_parse(field, text, CORDON_JSON_MAX_BYTES, ret, err);
}

/* A result document out: with r 0, doc (consumed either way) as strict
 * UTF-8 text into *ret_json; any other r is returned as it is. */
int cordon__json_done(int r, cJSON *doc, char **ret_json, struct cordon_error *err);

/* Random lowercase hex of n_bytes * 2 digits plus NUL into ret. */
int cordon__random_hex(char *ret, size_t n_bytes, struct cordon_error *err);

/* Duplicate an object, then merge every key of over into it (objects
 * recursively, everything else replaced). Either may be NULL. */
cJSON *cordon__json_merge(const cJSON *base, const cJSON *over);

#endif
