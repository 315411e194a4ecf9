/*
 * core (internal): what the files of the code-execution flow share
 * (run.c, run-request.c, run-stream.c): the typed run request.
 */
#ifndef CORDON_CORE_RUN_INTERNAL_H
#define CORDON_CORE_RUN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include <cordon/sdk/bounds.h>
#include <cordon/sdk/request.h>
#include "core/config.h"
#include "core/internal.h"
#include "core/select.h"

/* Standard base64 of s[0..len) (malloc'd), NULL without memory. */
char *cordon__base64_encode(const unsigned char *s, size_t len);

/* A run request's inputs at most (host files copied into the grant). */
#define CORDON_RUN_MAX_INPUTS 128

/* A run request read and checked once, before anything exists
 * (cordon__run_request_parse); the steps read this, never the JSON.
 * Strings are borrowed from the request document, which must outlive it;
 * the rest is owned and freed with cordon__run_request_clear. */
struct cordon__run_request {
    const char *workspace;          /* absolute; NULL: a private one for the call */
    const char *image;              /* NULL: the provider's own */
    const char *inputs[CORDON_RUN_MAX_INPUTS];   /* host paths */
    size_t n_inputs;
    struct cordon_env environment;  /* the caller's variables, for the commands */
    bool allow_unsafe_local;
    enum cordon__isolation isolation;
    unsigned best_effort;           /* best_effort_limits (cordon__best_effort_parse) */
    struct cordon_limits limits;    /* the run defaults, then the request's */
    uint64_t timeout_ms;
    size_t retention;               /* limits.retention_bytes */
    struct cordon__candidate *cands; /* "provider" or "providers", with consent and image */
    size_t n_cands;
};

/* Read request into *ret: each refusal (CORDON_E_INVALID or _LIMIT) names
 * its field and limit, and leaves *ret empty. The bundle keys are not
 * read here (core/bundle.h). */
int cordon__run_request_parse(struct cordon_ctx *ctx, const cJSON *request,
                              struct cordon__run_request *ret, struct cordon_error *err);
void cordon__run_request_clear(struct cordon__run_request *req);

#endif
