/*
 * core (internal): what the execution-host verbs share. hostflow.c holds
 * it, with terminate, reclaim, ls and gc; hostflow-spec.c reads a
 * provision request, hostflow-provision.c provisions, hostflow-exec.c
 * runs a command in an execution, hostflow-checkpoint.c checkpoints and
 * restores (json.md §7-§11).
 */
#ifndef CORDON_CORE_HOSTFLOW_H
#define CORDON_CORE_HOSTFLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include <cordon/sdk/bounds.h>
#include "core/execution.h"
#include "core/internal.h"
#include "core/pool.h"
#include "core/record.h"
#include "core/select.h"

/* A provision request, validated (cordon__host_spec_validate). */
struct cordon__host_spec {
    const char *provider;
    enum cordon__isolation isolation;
    unsigned best_effort;    /* best_effort_limits (cordon__best_effort_parse) */
    cJSON *config;           /* owned */
    const cJSON *image;
    const cJSON *workspace;
    struct cordon_limits limits;
    const cJSON *environment;
    const cJSON *metadata;
    char id[65];
    bool id_given;           /* the caller named the execution: never a pooled one */
};

/* The limits rec was provisioned with; a record whose resources do not
 * read is CORDON_E_IO naming it. */
int cordon__record_limits(const struct cordon__record *rec, struct cordon_limits *ret,
                          struct cordon_error *err);
/* True when rec's lifetime is over; *ret_left_ms (when not NULL) gets
 * what is left of it. */
bool cordon__record_expired(const struct cordon__record *rec, uint64_t *ret_left_ms);

/* CORDON_E_INVALID naming "<field>.<key>" for a key of obj not in keys. */
int cordon__check_keys(const char *field, const cJSON *obj, const char *const *keys, size_t n,
                       struct cordon_error *err);

/* The checkpoint store's directory (malloc'd), NULL without memory. */
char *cordon__checkpoint_store(struct cordon_ctx *ctx);

/* Validate a provision request into *ret (ret->config is the caller's to
 * free, also on failure). */
int cordon__host_spec_validate(struct cordon_ctx *ctx, const cJSON *req,
                               struct cordon__host_spec *ret, struct cordon_error *err);
/* Provision from a validated spec; tar_fd >= 0 restores a checkpoint's
 * workspace instead of spec->workspace. On failure nothing remains but
 * the record of a sandbox that would not go, for gc. */
int cordon__provision(struct cordon_ctx *ctx, struct cordon__host_spec *spec, int tar_fd,
                      cJSON **ret, struct cordon_error *err);

/*
 * What `cordon pool fill --for provision` provisions for provision
 * requests like req (the provision keys, without execution_id, metadata
 * or a workspace other than empty): the provider selected and verified as
 * provision verifies it, and the key such a provision claims by.
 */
int cordon__provision_pool_target(struct cordon_ctx *ctx, const cJSON *req,
                                  struct cordon__pool_target *ret, struct cordon_error *err);

#endif
