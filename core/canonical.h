/*
 * core: canonical JSON, the byte-exact text that bundle digests are taken
 * over. Two requests that mean the same thing give the same text.
 */
#ifndef CORDON_CORE_CANONICAL_H
#define CORDON_CORE_CANONICAL_H

#include <cjson/cJSON.h>
#include <cordon/error.h>

/* Deepest nesting cordon__json_canonical accepts. */
#define CORDON_CANONICAL_MAX_DEPTH 64

/*
 * Print value (borrowed) as canonical JSON into *ret_text (malloc'd, freed
 * with free): object members sorted by the bytes of their keys, no
 * whitespace, strings escaped only where JSON requires (\" \\ and control
 * characters below 0x20 as \u00xx, lowercase hex; everything else as its
 * UTF-8 bytes), integers in plain decimal, true/false/null.
 * Refused with CORDON_E_INVALID: a number that is not an integer or lies
 * outside +-2^53 (its text would not be stable), a string that is not valid
 * UTF-8, a key that appears twice in one object, raw cJSON items, nesting
 * deeper than CORDON_CANONICAL_MAX_DEPTH.
 */
int cordon__json_canonical(const cJSON *value, char **ret_text, struct cordon_error *err);

#endif
