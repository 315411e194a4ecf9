/*
 * core: provider candidates and their config. A candidate is a string id
 * or {"provider_id": ..., "config": {...}}; its config is merged over the
 * base config for that candidate only.
 */
#ifndef CORDON_CORE_CONFIG_H
#define CORDON_CORE_CONFIG_H

#include <stddef.h>
#include "core/internal.h"

struct cordon__candidate {
    size_t index;             /* position in the ordered list */
    char *provider_id;
    cJSON *config;            /* base, then candidate, then overrides; owned */
};

/* The config file's base config for one provider:
 * "provider_configs": {"<provider_id>": {...}}; NULL when there is none. */
const cJSON *cordon__base_config(const struct cordon_ctx *ctx, const char *provider_id);

/*
 * Build the ordered candidates. list: the request's "providers" (NULL: the
 * config file's "providers", else every installed provider in name order).
 * Base config: cordon__base_config of the candidate's provider. overrides (may
 * be NULL) are merged last into every candidate (the command line's
 * --provider-config and --allow-unsafe-local). field names the list in
 * errors.
 */
int cordon__candidates_build(struct cordon_ctx *ctx, const char *field, const cJSON *list,
                             const cJSON *overrides, struct cordon__candidate **ret,
                             size_t *ret_n, struct cordon_error *err);
void cordon__candidates_free(struct cordon__candidate *cands, size_t n);

#endif
