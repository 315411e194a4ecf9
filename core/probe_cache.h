/*
 * core: probing a provider, with full probe facts cached in
 * <state_dir>/probe-cache/ keyed by the provider build (path, size, mtime,
 * version), the config digest and the observer build. Entries older than
 * CORDON_PROBE_CACHE_TTL_S are ignored; ctx->fresh bypasses the cache.
 */
#ifndef CORDON_CORE_PROBE_CACHE_H
#define CORDON_CORE_PROBE_CACHE_H

#include <stdbool.h>
#include "core/internal.h"

#define CORDON_PROBE_CACHE_TTL_S 3600

/* Full facts of p under config: from the cache when fresh enough, else by
 * calling the provider's probe (and storing the facts when they validate
 * and say available). ret_cached tells which. The facts are validated. */
int cordon__probe_full(struct cordon_ctx *ctx, struct cordon__loaded *p, const cJSON *config,
                       cJSON **ret_facts, bool *ret_cached, struct cordon_error *err);

/* The cheap availability re-check right before ensure. */
int cordon__probe_availability(struct cordon_ctx *ctx, struct cordon__loaded *p,
                               const cJSON *config, bool *ret_available, char **ret_reason,
                               struct cordon_error *err);

#endif
