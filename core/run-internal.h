/*
 * core (internal): what the files of the code-execution flow share
 * (run.c, run-request.c, run-stream.c).
 */
#ifndef CORDON_CORE_RUN_INTERNAL_H
#define CORDON_CORE_RUN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include <cordon/sdk/bounds.h>
#include "core/config.h"
#include "core/internal.h"

/* Standard base64 of s[0..len) (malloc'd), NULL without memory. */
char *cordon__base64_encode(const unsigned char *s, size_t len);

/* The types of a run request's keys (workspace, image, inputs,
 * providers, allow_unsafe_local), and the count of its inputs. */
int cordon__run_check_types(const cJSON *request, struct cordon_error *err);

/* Limits: the run defaults, then the request's "limits" object; with
 * timeout_ms and retention_bytes, which are the host's. */
int cordon__run_read_limits(const cJSON *request, struct cordon_limits *ret_limits,
                            uint64_t *ret_timeout_ms, size_t *ret_retention,
                            struct cordon_error *err);

/* The request's candidates ("provider" or "providers"), each with the
 * request's consent and image in its config. */
int cordon__run_candidates(struct cordon_ctx *ctx, const cJSON *request,
                           struct cordon__candidate **ret, size_t *ret_n,
                           struct cordon_error *err);

#endif
