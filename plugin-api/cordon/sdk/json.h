/*
 * sdk: the JSON chores of a provider written with cJSON, as the in-tree
 * ones are: reading a bounded document the host passed (config, spec,
 * state, request), handing one back in text from host->alloc, and reading
 * a whole-number field exactly. Including this header needs cJSON's.
 */
#ifndef CORDON_SDK_JSON_H
#define CORDON_SDK_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <cjson/cJSON.h>
#include <cordon/provider.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The largest integer a JSON number (a double in cJSON) holds exactly: 2^53. */
#define CORDON_JSON_INT_MAX 9007199254740992.0

/* How deep any JSON document cordon reads may nest (the top value is
 * level 1, each member or element one more): the host's requests and
 * configs, and what providers and the host pass each other. */
#define CORDON_JSON_MAX_DEPTH 32

/* Parse text, at most max bytes (the scan is bounded before cJSON sees
 * it) nested at most CORDON_JSON_MAX_DEPTH levels, as a JSON object into
 * *ret (free with cJSON_Delete). Errors name field: missing, more than max
 * bytes, not valid JSON, nested too deep, not an object. */
CORDON_EXTERN int cordon_json_parse_object(const char *field, const char *text, size_t max,
                                           cJSON **ret, struct cordon_error *err);

/* doc printed compactly into *ret, allocated with host->alloc (the host
 * frees it). */
CORDON_EXTERN int cordon_json_print_host(const struct cordon_host_v1 *host, const cJSON *doc,
                                         char **ret, struct cordon_error *err);

/* The boundary answer (provider.h) of an execution whose outermost
 * process is pid: {"pids": [pid]}, in text from host->alloc. */
CORDON_EXTERN int cordon_json_boundary_host(const struct cordon_host_v1 *host, pid_t pid,
                                            char **ret, struct cordon_error *err);

/* A key of an object (parent "config", say: item->string is the key's
 * name) as a boolean: CORDON_E_INVALID "config.KEY: must be true or false"
 * otherwise. *ret is written only on success. */
CORDON_EXTERN int cordon_json_bool(const cJSON *item, const char *parent, bool *ret,
                                   struct cordon_error *err);

/* A key of an object as a string, copied into *ret (malloc'd, free();
 * a string *ret held already is freed first): CORDON_E_INVALID
 * "config.KEY: must be a string" otherwise, or CORDON_E_NOMEM. */
CORDON_EXTERN int cordon_json_strdup(const cJSON *item, const char *parent, char **ret,
                                     struct cordon_error *err);

/* item as a whole number in min..max, at most 2^53 (beyond it a double is
 * no longer exact). Errors name field and the bounds. */
CORDON_EXTERN int cordon_json_u64(const cJSON *item, const char *field, uint64_t min,
                                  uint64_t max, uint64_t *ret, struct cordon_error *err);

/*
 * Add text that came from a sandbox or a provider (a message, a name, a
 * reason) to obj under key, escaped with cordon_text_escape (cordon/text.h):
 * printable strict UTF-8, at most CORDON_JSON_TEXT_MAX bytes. This is how
 * such text enters a JSON document. Returns the new item, NULL when out of
 * memory.
 */
#define CORDON_JSON_TEXT_MAX 4096
CORDON_EXTERN cJSON *cordon_json_add_text(cJSON *obj, const char *key, const char *text);

/*
 * Make every string and key of doc strict UTF-8, at the last moment before
 * the document is printed for someone else: one that is not is replaced by
 * its escaped form (newlines and tabs kept). Text that is already UTF-8,
 * such as program output with control characters in it, stays as it is:
 * JSON escapes those itself. Returns the number of strings replaced.
 */
CORDON_EXTERN size_t cordon_json_sanitize(cJSON *doc);

#ifdef __cplusplus
}
#endif
#endif
