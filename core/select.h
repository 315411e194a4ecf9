/*
 * core: deterministic provider selection (json.md §6.2). Candidates are
 * taken in order; each is loaded and probed and either kept or skipped
 * with one structured reason; the chosen one is re-probed for availability
 * right before ensure.
 */
#ifndef CORDON_CORE_SELECT_H
#define CORDON_CORE_SELECT_H

#include <stdbool.h>
#include "core/config.h"
#include "core/internal.h"

enum cordon__isolation {
    CORDON_ISOLATION_REQUIRED = 0,   /* all four axes claimed and observed true by the host */
    CORDON_ISOLATION_PREFERRED = 1,  /* candidates meeting it first, else fall back */
    CORDON_ISOLATION_NONE = 2,
};

/* "required", "preferred", "none"; anything else is CORDON_E_INVALID
 * naming field. */
int cordon__isolation_parse(const char *field, const cJSON *value, enum cordon__isolation *ret,
                            struct cordon_error *err);

struct cordon__select_opts {
    enum cordon__isolation isolation;
    const char *kind;          /* "code_execution" */
    const char *toolchain;     /* canonical toolchain id needed, or NULL */
    const char *min_version;   /* its floor, or NULL */
    unsigned best_effort;      /* limits (bit i: cordon_limit_keys[i]) isolation required may leave unenforced */
};

/* "best_effort_limits": an array of limit names (cordon_limit_keys) the
 * caller accepts unenforced under isolation required, each at most once;
 * absent is none. *ret_mask: bit i for cordon_limit_keys[i]. */
int cordon__best_effort_parse(const cJSON *value, unsigned *ret_mask, struct cordon_error *err);

struct cordon__selection {
    struct cordon__loaded *provider;   /* owned by ctx */
    cJSON *config;                     /* the chosen candidate's config; owned */
    cJSON *facts;                      /* its full facts; owned */
    bool preference_fallback;
    bool unverified;                   /* the host could not observe its isolation */
    unsigned best_effort;              /* the caller's best_effort_limits, for the verdict */
    char why[512];                     /* one sentence for people */
};

/*
 * Select among cands. ret_probes (always set, also on failure; the caller
 * owns it) is the array of candidate records: {"index", "provider_id",
 * "probed", "cached", "selected", "skip": {"reason", "detail", ...} | null,
 * "facts"}. Fails with CORDON_E_PROVIDER_UNAVAILABLE when nothing survives.
 */
int cordon__select(struct cordon_ctx *ctx, const struct cordon__candidate *cands, size_t n,
                   const struct cordon__select_opts *opts, struct cordon__selection *ret,
                   cJSON **ret_probes, struct cordon_error *err);
void cordon__selection_clear(struct cordon__selection *sel);

/*
 * After cordon__select refused (r < 0) the one candidate provider_id: the
 * refusal as "provider_unavailable: <provider_id>: <reason>: <detail>"
 * from probes' first skip, the detail cut between characters to fit the
 * message. r, and err as it was, when there is no skip reason to name.
 */
int cordon__select_refusal(int r, const char *provider_id, const cJSON *probes,
                           struct cordon_error *err);

/* What a selection decided, for an execution's record (new object, the
 * caller's): {"isolation_requested", "status" (verified, disproved,
 * unverified), "verified_by", "observation_digest", "safety_class",
 * "isolation" {four axes: claim AND verdict}, "claimed_isolation" {four
 * axes}, "unverified", "preference_fallback"}; NULL when out of memory. */
cJSON *cordon__selection_verdict(const struct cordon__selection *sel, enum cordon__isolation isolation);

/* True when the facts' four isolation axes are all true. */
bool cordon__facts_fully_isolated(const cJSON *facts);

#endif
