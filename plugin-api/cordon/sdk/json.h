/*
 * sdk: the JSON chores of a provider written with cJSON, as the in-tree
 * ones are: reading a bounded document the host passed (config, spec,
 * state, request), handing one back in text from host->alloc, and reading
 * a whole-number field exactly. Including this header needs cJSON's.
 */
#ifndef CORDON_SDK_JSON_H
#define CORDON_SDK_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include <cordon/provider.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The largest integer a JSON number (a double in cJSON) holds exactly: 2^53. */
#define CORDON_JSON_INT_MAX 9007199254740992.0

/* Parse text, at most max bytes (the scan is bounded before cJSON sees
 * it), as a JSON object into *ret (free with cJSON_Delete). Errors name
 * field: missing, longer than max, not valid JSON, not an object. */
CORDON_EXTERN int cordon_json_parse_object(const char *field, const char *text, size_t max,
                                           cJSON **ret, struct cordon_error *err);

/* doc printed compactly into *ret, allocated with host->alloc (the host
 * frees it). */
CORDON_EXTERN int cordon_json_print_host(const struct cordon_host_v1 *host, const cJSON *doc,
                                         char **ret, struct cordon_error *err);

/* item as a whole number in min..max, at most 2^53 (beyond it a double is
 * no longer exact). Errors name field and the bounds. */
CORDON_EXTERN int cordon_json_u64(const cJSON *item, const char *field, uint64_t min,
                                  uint64_t max, uint64_t *ret, struct cordon_error *err);

#ifdef __cplusplus
}
#endif
#endif
