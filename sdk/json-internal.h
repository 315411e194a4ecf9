/*
 * The one bounded JSON parse of the tree, private to libcordon-sdk and the
 * core (hidden, in no installed header). Every JSON document cordon reads
 * from outside itself goes through cordon__json_parse: a request
 * or config from the caller (cordon__json_parse_bounded in core/internal.h), a provider's config,
 * spec, state, request or result (cordon_json_parse_object in
 * cordon/sdk/json.h), and what a provider hands back to the host (state,
 * facts, results in core/). One size bound per call, one depth bound
 * (CORDON_JSON_MAX_DEPTH) for all.
 */
#ifndef CORDON_SDK_JSON_INTERNAL_H
#define CORDON_SDK_JSON_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <cjson/cJSON.h>

#include <cordon/error.h>

/* True when v nests more than limit levels (v itself is level 1, each
 * member or element one more); stops at the first path past the limit. */
bool cordon__json_deeper_than(const cJSON *v, int limit);

/*
 * Parse text (NUL-terminated; the scan is bounded by max_bytes before
 * cJSON sees it) as one JSON value into *ret (free with cJSON_Delete),
 * nested at most CORDON_JSON_MAX_DEPTH levels. field names the document in
 * every refusal: CORDON_E_INVALID "FIELD: missing" or "FIELD: not valid
 * JSON (near byte N)"; CORDON_E_LIMIT "FIELD: more than MAX bytes of JSON"
 * or "FIELD: JSON nested deeper than 32 levels". *ret is written only on
 * success.
 */
int cordon__json_parse(const char *field, const char *text, size_t max_bytes, cJSON **ret,
                               struct cordon_error *err);

#endif
