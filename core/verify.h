/*
 * core: the host's own verification of a provider's isolation claim.
 *
 * A provider's probe facts are its claim. At every full probe the host
 * ensures the provider's resource with the candidate's config, provisions a
 * short execution through the provider's ordinary provision (the config's
 * image, small limits), lands the static observer as an ordinary file under
 * a random name and runs it with the provider's ordinary exec, with a fresh
 * challenge (canary file, sentinel process, the host's namespace inodes and
 * uid map). The axes the host then records are claim AND verdict.
 */
#ifndef CORDON_CORE_VERIFY_H
#define CORDON_CORE_VERIFY_H

#include "core/internal.h"

#define CORDON_VERIFIED_BY "cordon-host"

/* The version of the host's judging rules (the limit checks' thresholds
 * and words, core/observe/observe-limits.c; the merge below): part of the probe
 * cache's key and of every verification record, so that facts judged by
 * older rules are judged again. Bump it with any change to those rules. */
#define CORDON_VERIFY_JUDGE_VERSION 3   /* 3: toolchains are the host's finding */

/*
 * Verify the claim in facts (full, validated facts of p under config;
 * borrowed, rewritten in place) and record the outcome:
 *   "claimed_isolation"   the provider's isolation object as it came
 *   "isolation"           claim AND verdict per axis, the host's checks,
 *                         the host's network_mode
 *   "verified_by"         "cordon-host", or null when unverified
 *   "observation_digest"  "sha256:..." of the host's observation, or null
 *   "verification"        {"status": "verified" | "disproved" | "unverified",
 *                          "verified_by", "observation_digest",
 *                          "disproved": [{"axis", "check", "detail"}...],
 *                          "reason" (unverified only)}
 *   "limits_verified"     per limit {"status": "held" | "disproved" | "not_run"
 *                          | "not_claimed", "detail", "asked", "enforced_by"
 *                          (+ "observed" when not_claimed)}; a disproved
 *                          limit the provider claims is in "disproved" as
 *                          {"axis": "limits", "check": KEY}, one whose check
 *                          did not report as check "limits_not_observed"
 * Facts that say unavailable are left alone. A failed observation is not
 * an error: it makes the facts "unverified" (every axis false) with the
 * reason. Returns a negative CORDON_E_* only when out of memory.
 */
int cordon__verify_facts(struct cordon_ctx *ctx, struct cordon__loaded *p, const cJSON *config,
                         cJSON *facts, struct cordon_error *err);

/* facts.limits_verified (replaced) from observation's "limits" (both
 * borrowed; observation NULL: every limit not_run), each disproved limit
 * appended to disproved. False only when out of memory. */
bool cordon__verify_merge_limits(cJSON *facts, const cJSON *observation, cJSON *disproved);

/* "verified", "disproved" or "unverified" (also for facts without a
 * verification record). */
const char *cordon__verification_status(const cJSON *facts);

#endif
