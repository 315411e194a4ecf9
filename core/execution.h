/*
 * core (internal): making a new execution, as provision
 * (hostflow-provision.c) and pool fill (pool.c) both do, in this order:
 * the provider's spec, complete before anything exists; the record (an
 * intent, json.md §12) created before the sandbox, so that a crash at any
 * moment leaves something reclaim can find; the provider's provision,
 * whose state the record then keeps. A run's spec (run.c) is written the
 * same way.
 */
#ifndef CORDON_CORE_EXECUTION_H
#define CORDON_CORE_EXECUTION_H

#include <stdint.h>
#include <cjson/cJSON.h>
#include <cordon/sdk/bounds.h>
#include <cordon/sdk/spec.h>
#include "core/internal.h"
#include "core/record.h"

/* The provider's spec of execution id as text (malloc'd, into *ret):
 * limits, layout, deadline, image (a string, or NULL/null for none) and
 * environment (an object, or NULL/null for none). */
int cordon__execution_spec(const char *id, const struct cordon_limits *limits,
                           enum cordon_spec_layout layout, uint64_t expires_at_ms,
                           const cJSON *image, const cJSON *environment, char **ret,
                           struct cordon_error *err);

/* What the record of a new execution says before its sandbox exists;
 * everything borrowed. */
struct cordon__execution_intent {
    const char *id;
    const char *provider_id;
    const cJSON *provider_config;
    const cJSON *image;              /* NULL: null */
    const struct cordon_limits *limits;
    const cJSON *environment;        /* NULL: {} */
    const cJSON *metadata;           /* NULL: {} */
    const cJSON *verdict;            /* the selection's (cordon__selection_verdict) */
    uint64_t created_at_ms, expires_at_ms;
};

/* The record document of intent (new; NULL without memory): phase
 * "creating", owned by this process, no provider state yet. */
cJSON *cordon__execution_record(const struct cordon_ctx *ctx,
                                const struct cordon__execution_intent *intent);

/* Provision spec_text through vt and res, and keep the provider's state
 * (a JSON object) in rec->doc's "provider_state" (the caller saves rec).
 * *ret_state gets the state's text (host->alloc'd: free it with
 * ctx->host->free). Whatever it returns, the sandbox may exist after it. */
int cordon__execution_provision(struct cordon_ctx *ctx, const struct cordon_provider_v1 *vt,
                                struct cordon_resource *res, const char *spec_text,
                                struct cordon__record *rec, char **ret_state,
                                struct cordon_error *err);

#endif
