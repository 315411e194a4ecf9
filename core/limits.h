/*
 * core: the defaults of `cordon run`, the host's own bounds on a caller's
 * arguments, and the parsers for the command line's SIZE and DUR
 * arguments.
 */
#ifndef CORDON_CORE_LIMITS_H
#define CORDON_CORE_LIMITS_H

#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include <cordon/error.h>
#include <cordon/sdk/bounds.h>

/* The six limits, their keys and bounds are the sdk's (cordon/sdk/bounds.h):
 * struct cordon_limits, cordon_limit_keys, CORDON_LIMIT_*, and
 * cordon_limits_validate / cordon_limits_from_json, which read a provision
 * request and a checkpoint's manifest (data on disk) alike. */

/* Defaults of `cordon run` (provision has none). */
#define CORDON_RUN_DEFAULT_CPUS 1.0
#define CORDON_RUN_DEFAULT_MEMORY (512ull << 20)
#define CORDON_RUN_DEFAULT_DISK (256ull << 20)
#define CORDON_RUN_DEFAULT_PIDS 256ull
#define CORDON_RUN_DEFAULT_TIMEOUT_MS 30000ull
#define CORDON_RUN_RUNTIME_SLACK_MS 10000ull
#define CORDON_RUN_DEFAULT_OUTPUT (8ull << 20)
#define CORDON_RUN_DEFAULT_RETENTION (64ull << 10)

/*
 * Host policy: the arguments a caller gives (a run's "args", an exec's
 * "args"), each counted with its NUL, at most an eighth of the sdk's
 * CORDON_ARGS_TOTAL_MAX, the budget argv and environment share, so that
 * most of it is left to the variables the adapter and the caller add.
 * json.md documents 128 KiB. The count is the sdk's CORDON_ARGV_MAX.
 */
#define CORDON_HOST_ARGS_BYTES_MAX (CORDON_ARGS_TOTAL_MAX / 8)

/* Parse "512M", "1G", "4096" (K/M/G/T are powers of 1024). field names the
 * argument in the error. */
int cordon__parse_size(const char *field, const char *text, uint64_t *ret, struct cordon_error *err);
/* Parse "250ms", "10s", "5m", "1h" (a bare number is seconds). */
int cordon__parse_duration_ms(const char *field, const char *text, uint64_t *ret,
                              struct cordon_error *err);
#endif
