/*
 * sdk (internal): checking a provider's facts document, the host's side of
 * probe facts. The host checks every probe with it and cordon-contract
 * checks a provider with it; a provider composes its facts with
 * cordon_facts_compose (cordon/sdk/facts.h) and has no use for it, so it
 * is in no installed header and neither library exports it. It lives in
 * sdk/facts.c beside the composition, which shares its key lists.
 */
#ifndef CORDON_SDK_FACTS_VALIDATE_H
#define CORDON_SDK_FACTS_VALIDATE_H

#include <stdbool.h>
#include <cjson/cJSON.h>
#include <cordon/provider.h>

/*
 * Validate a facts document: required keys and types (provider_id,
 * available, reason, supported_kinds, observed_by, safety_class from the
 * fixed list, isolation as an object with the four boolean axes — a string
 * label is refused with a message saying so —, network, languages,
 * toolchains keyed by canonical ids with normalised versions,
 * limits_enforced, mechanism_facts). Unavailable facts need only
 * provider_id, available and reason.
 */
int cordon__facts_validate(const char *facts_json, struct cordon_error *err);

/* The largest facts document either function accepts: 1 MiB. */
#define CORDON_FACTS_MAX_BYTES (1024u * 1024u)

/* The same check, handing back the parsed document when it passes (the
 * caller deletes it), so that a host reading facts parses them once.
 * Unlike most ret_ arguments, *ret_facts is also written on a refusal: NULL,
 * so that a caller may hand it on unchecked. */
int cordon__facts_parse_valid(const char *facts_json, cJSON **ret_facts, struct cordon_error *err);

/* True when safety_class is one of isolated, namespace, host_policy,
 * filesystem_only, trusted_local. */
bool cordon__safety_class_valid(const char *safety_class);

/* Put toolchains (taken; NULL for none) into facts in place of any there,
 * with the languages they serve: the host's observation supplies them.
 * False when out of memory (toolchains freed). */
bool cordon__facts_set_toolchains(cJSON *facts, cJSON *toolchains);

#endif
