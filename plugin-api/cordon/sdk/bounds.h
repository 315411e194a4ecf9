/*
 * sdk: the rules that the host and every provider apply alike, each one
 * defined here once so that they cannot drift apart: the six limit keys
 * and their bounds, the execution-id grammar, the bounds of argv and of
 * environments, of the documents that cross the ABI, and of a workspace's
 * tar stream. (They once did drift: the host let a checkpoint hold
 * 1,000,000 tar entries while every provider refused more than 100,000.)
 *
 * Including this header needs cJSON's.
 */
#ifndef CORDON_SDK_BOUNDS_H
#define CORDON_SDK_BOUNDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include <cordon/provider.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the six limits ------------------------------------------------------ */

/* The keys of a spec's "resources" object, in the order of struct
 * cordon_limits, NULL-terminated (usable as a facts' limits_enforced). */
#define CORDON_LIMIT_KEYS_COUNT 6
CORDON_EXTERN extern const char *const cordon_limit_keys[CORDON_LIMIT_KEYS_COUNT + 1];

/* The hard limits of one execution. */
struct cordon_limits {
    double cpus;                /* fractional cpus */
    uint64_t memory_bytes;      /* memory, swap included */
    uint64_t disk_bytes;        /* every writable tmpfs together */
    uint64_t pids;
    uint64_t runtime_ms;        /* lifetime of the execution */
    uint64_t max_output_bytes;  /* one budget for stdout+stderr of each exec */
};

/* The bounds every spec is held to, {min, max} per limit. */
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

/* Check every limit against its bounds. field prefixes each message
 * ("resources" gives "resources.pids: 4 is below the minimum 8");
 * CORDON_E_LIMIT naming the limit, the value and the bound. */
CORDON_EXTERN int cordon_limits_validate(const char *field, const struct cordon_limits *limits,
                                         struct cordon_error *err);

/*
 * Read a resources object (borrowed) into *ret: exactly the six keys, each
 * once, numbers of the right kind (cpus may be fractional, the rest are
 * whole), each within its bounds. CORDON_E_INVALID names "<field>.<key>"
 * for a missing, unknown, repeated or malformed key; CORDON_E_LIMIT for a
 * bound. *ret is written only on success.
 */
CORDON_EXTERN int cordon_limits_from_json(const cJSON *obj, const char *field,
                                          struct cordon_limits *ret, struct cordon_error *err);

/* The limits as a new resources object (free with cJSON_Delete), the
 * keys in cordon_limit_keys order; NULL when out of memory. */
CORDON_EXTERN cJSON *cordon_limits_to_json(const struct cordon_limits *limits);
/* The same object added to parent under key (a state's "resources");
 * false, with parent unchanged, when out of memory. */
CORDON_EXTERN bool cordon_limits_add(cJSON *parent, const char *key,
                                     const struct cordon_limits *limits);

/* ---- execution ids ------------------------------------------------------- */

/* An execution id is [A-Za-z0-9][A-Za-z0-9_.-]{0,63}: safe as one path
 * component, a container name and a label value. */
#define CORDON_EXECUTION_ID_MAX 64
CORDON_EXTERN bool cordon_execution_id_valid(const char *id);
/* CORDON_E_INVALID naming field, the id (escaped) and the grammar when it
 * is not valid (NULL included). */
CORDON_EXTERN int cordon_execution_id_check(const char *field, const char *id,
                                            struct cordon_error *err);

/* ---- argv and environments ----------------------------------------------- */

/* Entries of one argv. */
#define CORDON_ARGV_MAX 256
/* One argument or one variable's value: the kernel's MAX_ARG_STRLEN. */
#define CORDON_ARG_BYTES_MAX (128u << 10)
/* argv and environment of one exec together, each string with its NUL
 * (and "NAME=" for a variable), well below ARG_MAX. */
#define CORDON_ARGS_TOTAL_MAX (1u << 20)
/* Variables of one environment object (a spec's environment, a request's
 * env or workspace_env). */
#define CORDON_ENV_MAX 128
/* Bytes of one variable name. */
#define CORDON_ENV_NAME_MAX 256

/* True for a name [A-Za-z_][A-Za-z0-9_]* of at most CORDON_ENV_NAME_MAX bytes. */
CORDON_EXTERN bool cordon_env_name_valid(const char *name);

/* An environment object (borrowed): at most CORDON_ENV_MAX string values
 * of at most CORDON_ARG_BYTES_MAX bytes under valid names. CORDON_E_LIMIT
 * for too many entries, CORDON_E_INVALID naming "<field>" or
 * "<field>.<name>" and the rule for the rest. */
CORDON_EXTERN int cordon_env_object_check(const cJSON *obj, const char *field,
                                          struct cordon_error *err);

/* ---- documents and streams ------------------------------------------------- */

/* Bytes of an image reference in a spec: a path or NAME@sha256:<hex>. */
#define CORDON_IMAGE_REF_MAX 4096

/* Text of a spec, a state and an exec request, as a provider reads them. */
#define CORDON_SPEC_MAX (1u << 20)
#define CORDON_STATE_MAX (1u << 20)
#define CORDON_REQUEST_MAX (4u << 20)

/*
 * Entries of one workspace tar stream: an import, an export, a checkpoint,
 * a restore, a git workspace. Host and providers refuse more alike, so a
 * checkpoint the host accepts is one every provider can restore. 100,000
 * is far above a real workspace (a large node_modules holds some tens of
 * thousands of files) and bounds what a hostile stream costs: a header
 * parsed, a path checked and an inode made per entry.
 */
#define CORDON_TAR_ENTRIES_MAX 100000u

#ifdef __cplusplus
}
#endif
#endif
