/*
 * core: probing a provider, with full, host-verified probe facts cached in
 * <state_dir>/probe-cache/ keyed by the provider file's content digest and
 * version, the config digest, the image and the observer's content digest.
 * Entries older than CORDON_PROBE_CACHE_TTL_S are ignored; ctx->fresh
 * bypasses the cache.
 */
#ifndef CORDON_CORE_PROBE_CACHE_H
#define CORDON_CORE_PROBE_CACHE_H

#include <stdbool.h>
#include "core/internal.h"

#define CORDON_PROBE_CACHE_TTL_S 3600
/* Provider and observer files are hashed for the key up to this size. */
#define CORDON_PROBE_CACHE_MAX_FILE (256u << 20)

/* Full facts of p under config: from the cache when fresh enough, else by
 * calling the provider's probe (its claim), which the host then verifies
 * itself (core/verify.h), storing the result when it says available and
 * was verified or disproved. ret_cached tells which. The facts are
 * validated. */
int cordon__probe_full(struct cordon_ctx *ctx, struct cordon__loaded *p, const cJSON *config,
                       cJSON **ret_facts, bool *ret_cached, struct cordon_error *err);

/* The cheap availability re-check right before ensure. */
int cordon__probe_availability(struct cordon_ctx *ctx, struct cordon__loaded *p,
                               const cJSON *config, bool *ret_available, char **ret_reason,
                               struct cordon_error *err);

#endif
