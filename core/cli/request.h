/*
 * The one request builder of `cordon run`, `cordon pool fill` and
 * `cordon provision`: what their --env, limit flags and --request add to
 * the request document. Each refusal is a struct cordon_error whose
 * message names the flag and the bound (cordon(1), REQUEST OPTIONS); the
 * verb prints it with cli_fail.
 */
#ifndef CORDON_CLI_REQUEST_H
#define CORDON_CLI_REQUEST_H

#include <getopt.h>
#include <stdbool.h>
#include <cjson/cJSON.h>
#include <cordon/error.h>

#include "core/internal.h"

/* The largest --request file: the library's own bound on a request
 * (CORDON_JSON_MAX_BYTES, 80 MiB; a run request carries its bundle's files
 * inline), so that the command refuses nothing the library would take. */
#define CLI_REQUEST_FILE_MAX CORDON_JSON_MAX_BYTES

/* --env NAME=VALUE into *env (the request's "environment" object, made
 * when NULL; owned by the caller); a later NAME replaces an earlier one.
 * Refused: no "=" or an empty NAME (CORDON_E_INVALID), a NAME of
 * CORDON_ENV_NAME_MAX bytes or more (CORDON_E_LIMIT). The name's grammar
 * and the count are checked with the request (cordon/sdk/bounds.h). */
int cli_request_env(cJSON **env, const char *arg, struct cordon_error *err);

/* The six limit flags, the same in every verb that takes them: their
 * option codes, and their entries for a verb's struct option table. */
enum {
    CLI_OPT_CPUS = 0x1000, CLI_OPT_MEMORY, CLI_OPT_DISK, CLI_OPT_PIDS, CLI_OPT_RUNTIME,
    CLI_OPT_MAX_OUTPUT,
};
#define CLI_REQUEST_LIMIT_OPTIONS                                                                  \
    { "cpus", required_argument, NULL, CLI_OPT_CPUS },                                             \
    { "memory", required_argument, NULL, CLI_OPT_MEMORY },                                         \
    { "disk", required_argument, NULL, CLI_OPT_DISK },                                             \
    { "pids", required_argument, NULL, CLI_OPT_PIDS },                                             \
    { "runtime", required_argument, NULL, CLI_OPT_RUNTIME },                                       \
    { "max-output", required_argument, NULL, CLI_OPT_MAX_OUTPUT }

/*
 * --best-effort LIMIT[,LIMIT]...: limit flag names (cpus, memory, disk,
 * pids, runtime, max-output) the caller accepts unenforced under
 * isolation required, appended to req's "best_effort_limits" as their
 * request keys ("memory_bytes"). An unknown name is CORDON_E_INVALID
 * naming it; a name twice is caught with the request.
 */
int cli_request_best_effort(cJSON *req, const char *arg, struct cordon_error *err);

/* True when opt is one of the CLI_OPT_* codes above. */
bool cli_request_is_limit(int opt);

/*
 * The limit flag opt (a CLI_OPT_* code) with its value arg, parsed and
 * held to the sdk's bounds (CORDON_LIMIT_*), into *limits (made when NULL;
 * owned by the caller, cJSON_Delete) under the limit's key
 * ("memory_bytes"). Refusals name the flag, the value and the bounds:
 * CORDON_E_INVALID "--pids: \"x\" is not a whole number", CORDON_E_LIMIT
 * "--memory: 1K is outside 16777216..549755813888 bytes".
 */
int cli_request_limit(cJSON **limits, int opt, const char *arg, struct cordon_error *err);

/*
 * --request PATH ("-" for stdin): a JSON object of at most
 * CLI_REQUEST_FILE_MAX bytes and CORDON_JSON_MAX_DEPTH levels, whose keys
 * come first and over which *req's (the command line's) are merged.
 * *req is replaced by the merged document on success.
 */
int cli_request_merge_file(cJSON **req, const char *path, struct cordon_error *err);

#endif
