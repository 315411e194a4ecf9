/*
 * core (internal): the one lifecycle of an execution, whichever flow
 * drives it (provision and exec in hostflow*.c, pool fill in pool.c,
 * `cordon run` in run.c): bind (load and ensure the provider), the
 * provider's spec, complete before anything exists; the record (an
 * intent, json.md §12) created before the sandbox, so that a crash at any
 * moment leaves something reclaim can find (a run's execution has none:
 * its id names its live cordon); provision, whose state is checked the
 * same way for every flow; destroy (terminate by state, else reclaim by
 * id); unbind (release; a failed release quarantines the provider).
 */
#ifndef CORDON_CORE_EXECUTION_H
#define CORDON_CORE_EXECUTION_H

#include <stdint.h>
#include <cjson/cJSON.h>
#include <cordon/sdk/bounds.h>
#include <cordon/sdk/spec.h>
#include "core/internal.h"
#include "core/record.h"

/* A bound provider for one call: loaded, ensured, released at the end. */
struct cordon__bound {
    struct cordon__loaded *p;      /* owned by ctx */
    struct cordon_resource *res;   /* NULL when not ensured */
};

/* Load and ensure provider_id with config (borrowed); ensure's failure is
 * "ensure <provider_id>: <why>" with the provider's code. */
int cordon__bind_provider(struct cordon_ctx *ctx, const char *provider_id, const cJSON *config,
                          struct cordon__bound *ret, struct cordon_error *err);
/* The same for the provider and config rec was provisioned with. */
int cordon__bind_record(struct cordon_ctx *ctx, const struct cordon__record *rec,
                        struct cordon__bound *ret, struct cordon_error *err);
/* Release b's resource (cordon__loader_release: a failure quarantines the
 * provider and is returned); b is unbound either way. */
int cordon__unbind_provider(struct cordon__bound *b, struct cordon_error *err);

/* The provider's own state of a record as text (malloc'd), or NULL before
 * it exists. */
char *cordon__record_state(const struct cordon__record *rec);

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
    const cJSON *pool;               /* NULL: not pooled (core/pool.h) */
    uint64_t created_at_ms, expires_at_ms;
};

/*
 * Make the execution of intent through b: its spec (layout), complete
 * before anything exists; its record (phase "creating", no provider state
 * yet) created before the sandbox; the provision, whose state the record
 * then holds (unsaved: the caller saves it, or sets its phase). On success
 * *ret_rec is the record, locked. On failure nothing remains but the
 * record of a sandbox that would not go, for gc.
 */
int cordon__execution_create(struct cordon_ctx *ctx, const struct cordon__bound *b,
                             const struct cordon__execution_intent *intent,
                             enum cordon_spec_layout layout, struct cordon__record **ret_rec,
                             struct cordon_error *err);

/* Provision spec_text through b; the provider's state must be a JSON
 * object, which rec (when not NULL) keeps in rec->doc's "provider_state"
 * (the caller saves rec). *ret_state gets the state's text (host->alloc'd:
 * free it with ctx->host->free). Whatever it returns, the sandbox may exist
 * after it. */
int cordon__execution_provision(struct cordon_ctx *ctx, const struct cordon__bound *b,
                                const char *spec_text, struct cordon__record *rec,
                                char **ret_state, struct cordon_error *err);

/* Destroy execution id through b: terminate by state (text) when there is
 * one, else reclaim by id. A failure is "terminate <id>: <why>". */
int cordon__execution_end(const struct cordon__bound *b, const char *id, const char *state,
                          struct cordon_error *err);
/* Destroy the execution of rec through b (cordon__execution_end with its
 * state) and remove the record. A failure keeps the record, so that
 * reclaim can try again. */
int cordon__execution_destroy_bound(struct cordon_ctx *ctx, struct cordon__record *rec,
                                    const struct cordon__bound *b, struct cordon_error *err);
/* The same, binding the provider rec names for the call. */
int cordon__execution_destroy(struct cordon_ctx *ctx, struct cordon__record *rec,
                              struct cordon_error *err);

#endif
