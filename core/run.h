/*
 * core: the code-execution flow (json.md §6.1): grant, select, ensure,
 * provision, land, run, collect, terminate, release, close — each step
 * recorded in meta.events, the grant closed whatever failed.
 */
#ifndef CORDON_CORE_RUN_H
#define CORDON_CORE_RUN_H

#include "core/bundle.h"
#include "core/internal.h"
#include "core/pool.h"

/* The contract name every result carries in meta.contract. */
#define CORDON_RUN_CONTRACT "workspace_code_execution_v1"

/*
 * Run request (the run keys of docs/json.md) with a bundle: when bundle is
 * NULL it is read from the request itself (files inline); otherwise the
 * request's bundle keys are ignored and bundle is borrowed. ret_result is
 * always a result document (status "blocked" for a refused request).
 * cancel_fd (-1: none) readable ends the run as "cancelled": the command
 * under way is killed, what the run made is torn down. Returns 0, or a
 * negative code only when no document could be made.
 */
int cordon__run(struct cordon_ctx *ctx, const cJSON *request, const struct cordon__bundle *bundle, int cancel_fd,
                cJSON **ret_result, struct cordon_error *err);

/*
 * What `cordon pool fill` provisions for runs of request (the run keys
 * provider — one —, image, limits, timeout_ms, isolation,
 * allow_unsafe_local; any other key is refused): the provider selected
 * and verified as a run selects it (no toolchain asked), the limits a run
 * of the same request gets, and the key such a run claims by.
 */
int cordon__run_pool_target(struct cordon_ctx *ctx, const cJSON *request,
                            struct cordon__pool_target *ret, struct cordon_error *err);

/* The exit code of a run's or an exec's result document, parsed
 * (core/exit-status.c; cordon_result_exit_status and
 * cordon_exec_exit_status parse the text and call it): the program's own
 * for success, exited and error, 128 + N for signaled, 124 timeout or
 * expired, 137 oom, output_limit or cancelled, else 125. */
int cordon__run_exit_status(const cJSON *result);

/* True when execution_id names a code-execution sandbox ("run-<pid>-...")
 * whose cordon process is still alive: `cordon gc` leaves it alone. */
bool cordon__run_owner_alive(const char *execution_id);

/* The bytes of one stream as result fields: <name> (UTF-8 text; with a
 * "[cordon: N bytes dropped]" line between head and tail when truncated),
 * <name>_truncated, <name>_dropped_bytes, and <name>_base64 (the retained
 * bytes exactly) when they are not valid UTF-8. */
void cordon__result_add_stream(cJSON *result, const char *name, const char *data, size_t len,
                               size_t head_len, uint64_t dropped);

#endif
