/*
 * core: the warm pool (docs/decisions.md, "A warm pool without a
 * daemon"). A pooled execution is an ordinary execution record whose
 * document carries "pool": {"key", "layout", "claimable_until_ms"}, and a
 * marker file <state_dir>/pool/<key>/<execution_id>. Claiming is
 * unlinking the marker: of any number of processes exactly one unlink
 * succeeds. The claimer then holds the record's lock until it has
 * destroyed the execution, so gc and drain (which never wait for a lock)
 * leave it alone; a record with "pool" whose lock one gets and whose
 * marker is gone was claimed by a cordon that died, and is destroyed, never
 * claimed again. A claimed execution is used once and destroyed
 * like a fresh one; nothing refills the pool but `cordon pool fill`.
 */
#ifndef CORDON_CORE_POOL_H
#define CORDON_CORE_POOL_H

#include <stdbool.h>
#include <stdint.h>
#include <cordon/sdk/bounds.h>
#include "core/internal.h"
#include "core/record.h"
#include "core/select.h"

/* Bounds of one fill: executions per key, and how long one stays claimable. */
#define CORDON_POOL_SIZE_MAX 64
#define CORDON_POOL_TTL_MIN_MS 1000ull
#define CORDON_POOL_TTL_MAX_MS (24ull * 3600 * 1000)
#define CORDON_POOL_TTL_DEFAULT_MS (10ull * 60 * 1000)

/*
 * The pool key: SHA-256 hex of the canonical JSON of everything that makes
 * one execution differ from another — provider id, its config (as ensure
 * gets it), image, resources, network, environment and layout. All
 * borrowed; image and environment may be NULL (null and {}).
 */
int cordon__pool_key(const char *provider_id, const cJSON *config, const cJSON *image,
                     const struct cordon_limits *limits, const cJSON *environment, const char *layout,
                     char ret_key[65], struct cordon_error *err);

/*
 * Claim one claimable execution of key. On success *ret_rec is its record,
 * locked (the caller keeps it locked while it uses the execution, destroys
 * the execution after one use, removes the record and closes it). No
 * claimable execution is 0 with *ret_rec NULL. An execution past its
 * claimable_until_ms is never claimed: until then it has at least the
 * runtime it was filled with left.
 */
int cordon__pool_claim(struct cordon_ctx *ctx, const char *key, struct cordon__record **ret_rec,
                       struct cordon_error *err);

/* What a fill provisions: the verified selection and the sandbox's spec. */
struct cordon__pool_target {
    struct cordon__selection sel;   /* owned; cleared by _clear */
    struct cordon_limits limits;
    cJSON *image;                   /* owned: a string or null */
    cJSON *environment;             /* owned: an object (the sandbox's, not a command's) */
    const char *layout;             /* "code" (cordon run) or "host" (cordon provision) */
    enum cordon__isolation isolation; /* what sel was judged under, for the record's verdict */
    char key[65];
};

void cordon__pool_target_clear(struct cordon__pool_target *t);

/* The size and ttl bounds above; a refusal names the field and the bound. */
int cordon__pool_check_bounds(uint64_t size, uint64_t ttl_ms, struct cordon_error *err);

/*
 * Top the pool of t up to size executions claimable for ttl_ms (bounds
 * above; a refusal names the field and its limit and creates nothing).
 * Serialised per key with flock on the key's directory. ret_json:
 * {"ok", "key", "provider_id", "size", "ready_before", "added": [...]}.
 */
int cordon__pool_fill(struct cordon_ctx *ctx, const struct cordon__pool_target *t, uint64_t size,
                      uint64_t ttl_ms, char **ret_json, struct cordon_error *err);

/* {"pools": [{"key", "provider_id", "image", "layout", "ready", "expired",
 * "executions": [...]}]}: the unclaimed pooled executions, by key. */
int cordon__pool_ls_json(struct cordon_ctx *ctx, char **ret_json, struct cordon_error *err);

/* Destroy every unclaimed pooled execution and remove the pool's
 * directories. {"ok", "drained": [...], "errors": [...]} */
int cordon__pool_drain_json(struct cordon_ctx *ctx, char **ret_json, struct cordon_error *err);

/* True when rec is a pooled execution past its claimable time (gc). */
bool cordon__pool_record_expired(const struct cordon__record *rec);

/* True when rec, whose lock the caller holds, is a pooled execution that
 * can no longer be claimed: past its claimable time, or unmarked (its
 * claimer died). gc reclaims it. */
bool cordon__pool_record_stale(struct cordon_ctx *ctx, const struct cordon__record *rec);

/* Remove the marker of rec, if any (gc and drain, holding its lock). */
void cordon__pool_unmark(struct cordon_ctx *ctx, const struct cordon__record *rec);

/* Remove <state_dir>/pool/<key> directories with no marker left. */
void cordon__pool_tidy(struct cordon_ctx *ctx);

#endif
