/*
 * core: the six hard limits of an execution, their units and bounds, and
 * the parsers for the command line's SIZE and DUR arguments.
 */
#ifndef CORDON_CORE_LIMITS_H
#define CORDON_CORE_LIMITS_H

#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include <cordon/error.h>

/* The resources object of a provision spec (json.md §7). */
struct cordon__limits {
    double cpus;                /* fractional cpus, > 0 */
    uint64_t memory_bytes;
    uint64_t disk_bytes;        /* size of /workspace */
    uint64_t pids;
    uint64_t runtime_ms;        /* lifetime of the execution */
    uint64_t max_output_bytes;  /* one budget for stdout+stderr of each exec */
};

/* Bounds enforced on every spec: {min, max} per field. */
#define CORDON_LIMIT_CPUS_MIN 0.01
#define CORDON_LIMIT_CPUS_MAX 128.0
#define CORDON_LIMIT_MEMORY_MIN (16ull << 20)
#define CORDON_LIMIT_MEMORY_MAX (512ull << 30)
#define CORDON_LIMIT_DISK_MIN (1ull << 20)
#define CORDON_LIMIT_DISK_MAX (1ull << 40)
#define CORDON_LIMIT_PIDS_MIN 8ull
#define CORDON_LIMIT_PIDS_MAX 32768ull
#define CORDON_LIMIT_RUNTIME_MIN 100ull
#define CORDON_LIMIT_RUNTIME_MAX (24ull * 3600 * 1000)
#define CORDON_LIMIT_OUTPUT_MIN 1024ull
#define CORDON_LIMIT_OUTPUT_MAX (64ull << 20)

/* Defaults of `cordon run` (provision has none). */
#define CORDON_RUN_DEFAULT_CPUS 1.0
#define CORDON_RUN_DEFAULT_MEMORY (512ull << 20)
#define CORDON_RUN_DEFAULT_DISK (256ull << 20)
#define CORDON_RUN_DEFAULT_PIDS 256ull
#define CORDON_RUN_DEFAULT_TIMEOUT_MS 30000ull
#define CORDON_RUN_RUNTIME_SLACK_MS 10000ull
#define CORDON_RUN_DEFAULT_OUTPUT (8ull << 20)
#define CORDON_RUN_DEFAULT_RETENTION (64ull << 10)

/* Parse "512M", "1G", "4096" (K/M/G/T are powers of 1024). field names the
 * argument in the error. */
int cordon__parse_size(const char *field, const char *text, uint64_t *ret, struct cordon_error *err);
/* Parse "250ms", "10s", "5m", "1h" (a bare number is seconds). */
int cordon__parse_duration_ms(const char *field, const char *text, uint64_t *ret,
                              struct cordon_error *err);
/* Check every field against its bounds; the message names the field, the
 * value and the bound. */
int cordon__limits_validate(const struct cordon__limits *limits, struct cordon_error *err);

/* The keys of a resources object, in the order of struct cordon__limits. */
#define CORDON_LIMIT_N_KEYS 6
extern const char *const cordon__limit_keys[CORDON_LIMIT_N_KEYS];

/*
 * Read a resources object (borrowed) into *ret: exactly the six keys, each
 * once, numbers of the right kind, each within its bounds
 * (cordon__limits_validate). The one reading of limits from JSON: a
 * provision request and a checkpoint's manifest, which is data on disk,
 * go through it alike. Errors name "resources.<key>" and the bound.
 */
int cordon__limits_from_json(const cJSON *res, struct cordon__limits *ret, struct cordon_error *err);

#endif
