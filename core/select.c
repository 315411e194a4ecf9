/* core: deterministic provider selection with structured skip reasons. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cordon/sdk/bounds.h>
#include <cordon/sdk/facts.h>
#include <cordon/sdk/json.h>
#include "core/abi.h"
#include "core/loader.h"
#include "core/probe_cache.h"
#include "core/select.h"
#include "core/verify.h"

static const char *const axes[] = {
    CORDON_AXIS_PROCESS_CONTAINED, CORDON_AXIS_HOST_FS_RESTRICTED,
    CORDON_AXIS_PRIVESC_BLOCKED, CORDON_AXIS_SYSCALLS_RESTRICTED,
};

int cordon__isolation_parse(const char *field, const cJSON *value, enum cordon__isolation *ret,
                            struct cordon_error *err)
{
    static const char *const names[] = { "required", "preferred", "none" };

    if (value == NULL) {
        *ret = CORDON_ISOLATION_REQUIRED;
        return 0;
    }
    if (cJSON_IsString(value))
        for (int i = 0; i < 3; i++)
            if (strcmp(value->valuestring, names[i]) == 0) {
                *ret = (enum cordon__isolation)i;
                return 0;
            }
    return cordon_error_set(err, CORDON_E_INVALID, 0,
                            "%s: must be \"required\", \"preferred\" or \"none\"", field);
}

int cordon__best_effort_parse(const cJSON *value, unsigned *ret_mask, struct cordon_error *err)
{
    const cJSON *v;
    int i = 0;

    *ret_mask = 0;
    if (value == NULL || cJSON_IsNull(value))
        return 0;
    if (!cJSON_IsArray(value))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "best_effort_limits: must be an array of limit names");
    cJSON_ArrayForEach(v, value) {
        size_t k;

        for (k = 0; k < CORDON_LIMIT_KEYS_COUNT; k++)
            if (cJSON_IsString(v) && strcmp(v->valuestring, cordon_limit_keys[k]) == 0)
                break;
        if (k == CORDON_LIMIT_KEYS_COUNT)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "best_effort_limits[%d]: not a limit name (cpus, memory_bytes, disk_bytes, "
                                    "pids, runtime_ms, max_output_bytes)", i);
        if (*ret_mask & (1u << k))
            return cordon_error_set(err, CORDON_E_INVALID, 0, "best_effort_limits[%d]: %s named twice", i,
                                    cordon_limit_keys[k]);
        *ret_mask |= 1u << k;
        i++;
    }
    return 0;
}

bool cordon__facts_fully_isolated(const cJSON *facts)
{
    const cJSON *iso = cJSON_GetObjectItemCaseSensitive(facts, "isolation");

    for (size_t i = 0; i < sizeof(axes) / sizeof(axes[0]); i++)
        if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(iso, axes[i])))
            return false;
    return true;
}

void cordon__selection_clear(struct cordon__selection *sel)
{
    if (sel == NULL)
        return;
    cJSON_Delete(sel->config);
    cJSON_Delete(sel->facts);
    memset(sel, 0, sizeof(*sel));
}

/* Bytes of a skip's detail in a refusal: after "provider_unavailable: ",
 * a provider id (at most CORDON_PROVIDER_ID_MAX) and a reason (a word of
 * ours), 300 leave room below the 511 of a message for the escapes a
 * provider's text may need. */
#define REFUSAL_DETAIL_MAX 300

int cordon__select_refusal(int r, const char *provider_id, const cJSON *probes,
                           struct cordon_error *err)
{
    const cJSON *skip = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(probes, 0), "skip");
    const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(skip, "reason"));
    const char *detail = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(skip, "detail"));

    if (reason == NULL || provider_id == NULL)
        return r;
    if (detail == NULL)
        detail = "";
    return cordon_error_set(err, r, 0, "provider_unavailable: %.*s: %s: %.*s",
                            cordon_text_fit(provider_id, CORDON_PROVIDER_ID_MAX), provider_id, reason,
                            cordon_text_fit(detail, REFUSAL_DETAIL_MAX), detail);
}

static cJSON *skip_new(const char *reason, const char *detail)
{
    cJSON *skip = cJSON_CreateObject();

    cJSON_AddStringToObject(skip, "reason", reason);
    cordon_json_add_text(skip, "detail", detail);
    return skip;
}

/* claims_disproved, with "failed": every check the host saw fail behind a
 * claimed-true axis, and a detail naming them. */
static cJSON *skip_disproved(const cJSON *facts)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(facts, "verification"),
                                                         "disproved");
    const cJSON *d;
    char detail[512];
    size_t used;
    cJSON *skip;

    used = (size_t)snprintf(detail, sizeof(detail), "the host observed false what the provider claimed true:");
    cJSON_ArrayForEach(d, list) {
        const cJSON *axis = cJSON_GetObjectItemCaseSensitive(d, "axis");
        const cJSON *check = cJSON_GetObjectItemCaseSensitive(d, "check");
        int w;

        if (used >= sizeof(detail) - 1)
            break;
        w = snprintf(detail + used, sizeof(detail) - used, "%s %s/%s", d == list->child ? "" : ",",
                     cJSON_IsString(axis) ? axis->valuestring : "?",
                     cJSON_IsString(check) ? check->valuestring : "?");
        if (w > 0)
            used += (size_t)w;
    }
    skip = skip_new("claims_disproved", detail);
    cJSON_AddItemToObject(skip, "failed", cJSON_IsArray(list) ? cJSON_Duplicate(list, true) : cJSON_CreateArray());
    return skip;
}

/* Why facts do not fit the request, as a skip object, or NULL when they do.
 * "meets_preference" tells whether all four axes hold. */
static cJSON *check_facts(const cJSON *facts, const struct cordon__select_opts *opts)
{
    const cJSON *kinds = cJSON_GetObjectItemCaseSensitive(facts, "supported_kinds");
    const cJSON *iso = cJSON_GetObjectItemCaseSensitive(facts, "isolation");
    const cJSON *safety = cJSON_GetObjectItemCaseSensitive(facts, "safety_class");
    const cJSON *reason = cJSON_GetObjectItemCaseSensitive(facts, "reason");
    const cJSON *kind, *tc, *version;
    char detail[512];
    bool kind_ok = false;
    cJSON *skip;

    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(facts, "available")))
        return skip_new("unavailable", cJSON_IsString(reason) ? reason->valuestring : "unavailable");
    cJSON_ArrayForEach(kind, kinds)
        kind_ok = kind_ok || (cJSON_IsString(kind) && strcmp(kind->valuestring, opts->kind) == 0);
    if (!kind_ok) {
        snprintf(detail, sizeof(detail), "does not serve kind %s", opts->kind);
        return skip_new("kind_unsupported", detail);
    }
    /* A provider caught claiming what the host saw was false is never
     * used, whatever isolation was asked for: its other facts are claims
     * too. */
    if (strcmp(cordon__verification_status(facts), "disproved") == 0)
        return skip_disproved(facts);
    if (opts->isolation == CORDON_ISOLATION_REQUIRED) {
        if (cJSON_IsString(safety) && strcmp(safety->valuestring, "trusted_local") == 0) {
            skip = skip_new("capability_mismatch",
                            "isolation required can never select a trusted_local provider");
            cJSON_AddStringToObject(skip, "key", "safety_class");
            cJSON_AddStringToObject(skip, "wanted", "not trusted_local");
            cJSON_AddStringToObject(skip, "observed", "trusted_local");
            return skip;
        }
        if (strcmp(cordon__verification_status(facts), "verified") != 0) {
            const cJSON *why = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(facts, "verification"), "reason");

            snprintf(detail, sizeof(detail), "isolation required, but the host could not observe it: %s",
                     cJSON_IsString(why) ? why->valuestring : "no verification");
            return skip_new("unverified", detail);
        }
        for (size_t i = 0; i < sizeof(axes) / sizeof(axes[0]); i++) {
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(iso, axes[i])))
                continue;
            snprintf(detail, sizeof(detail), "isolation required: %s was not observed true", axes[i]);
            skip = skip_new("capability_mismatch", detail);
            snprintf(detail, sizeof(detail), "isolation.%s", axes[i]);
            cJSON_AddStringToObject(skip, "key", detail);
            cJSON_AddBoolToObject(skip, "wanted", true);
            cJSON_AddBoolToObject(skip, "observed", false);
            return skip;
        }
        /* A limit the provider does not claim to enforce is never a lie
         * (limits_verified says not_claimed); but every execution asks
         * for all six, and isolation required wants each one enforced. */
        for (size_t i = 0; i < CORDON_LIMIT_KEYS_COUNT; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(facts, "limits_verified"), cordon_limit_keys[i]);
            const cJSON *st = cJSON_GetObjectItemCaseSensitive(v, "status");

            /* ... unless the caller accepted it unenforced, by name. */
            if (!cJSON_IsString(st) || strcmp(st->valuestring, "not_claimed") != 0 || (opts->best_effort & (1u << i)))
                continue;
            snprintf(detail, sizeof(detail), "isolation required: the provider does not enforce %s",
                     cordon_limit_keys[i]);
            skip = skip_new("capability_mismatch", detail);
            snprintf(detail, sizeof(detail), "limits_enforced.%s", cordon_limit_keys[i]);
            cJSON_AddStringToObject(skip, "key", detail);
            cJSON_AddBoolToObject(skip, "wanted", true);
            cJSON_AddBoolToObject(skip, "observed", false);
            return skip;
        }
    }
    if (opts->toolchain == NULL)
        return NULL;
    tc = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(facts, "toolchains"),
                                          opts->toolchain);
    version = cJSON_GetObjectItemCaseSensitive(tc, "version");
    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(tc, "available")) || !cJSON_IsString(version) ||
        (opts->min_version != NULL && cordon_version_compare(version->valuestring, opts->min_version) < 0)) {
        snprintf(detail, sizeof(detail), "%s %s%s needed, observed %s", opts->toolchain,
                 opts->min_version != NULL ? ">= " : "", opts->min_version != NULL ? opts->min_version : "",
                 cJSON_IsString(version) ? version->valuestring : "none");
        skip = skip_new("toolchain_version", detail);
        cJSON_AddStringToObject(skip, "tool", opts->toolchain);
        if (opts->min_version != NULL)
            cJSON_AddStringToObject(skip, "wanted", opts->min_version);
        else
            cJSON_AddStringToObject(skip, "wanted", "any");
        if (cJSON_IsString(version))
            cJSON_AddStringToObject(skip, "observed", version->valuestring);
        else
            cJSON_AddNullToObject(skip, "observed");
        return skip;
    }
    return NULL;
}

/* Load and fully probe one candidate into its record; returns the facts
 * when the candidate is eligible, NULL when skipped. */
static cJSON *consider(struct cordon_ctx *ctx, const struct cordon__candidate *cand,
                       const struct cordon__select_opts *opts, cJSON *record,
                       struct cordon__loaded **ret_provider)
{
    struct cordon__loaded *p = NULL;
    struct cordon_error perr;
    cJSON *facts = NULL, *skip;
    bool cached = false;
    int r;

    cordon_error_init(&perr);
    r = cordon__loader_get(ctx, cand->provider_id, &p, &perr);
    if (r < 0) {
        cJSON_AddBoolToObject(record, "probed", false);
        cJSON_AddItemToObject(record, "skip", skip_new(r == CORDON_E_NOT_FOUND ? "not_installed"
                                                                              : "abi_mismatch",
                                                      perr.message));
        return NULL;
    }
    if (p->quarantined) {
        cJSON_AddBoolToObject(record, "probed", false);
        cJSON_AddItemToObject(record, "skip",
                              skip_new("unavailable", "quarantined after a failed release"));
        return NULL;
    }
    r = cordon__probe_full(ctx, p, cand->config, &facts, &cached, &perr);
    cJSON_AddBoolToObject(record, "probed", true);
    cJSON_AddBoolToObject(record, "cached", cached);
    if (r < 0) {
        cJSON_AddItemToObject(record, "skip", skip_new("probe_failed", perr.message));
        return NULL;
    }
    cJSON_AddItemToObject(record, "facts", cJSON_Duplicate(facts, 1));
    skip = check_facts(facts, opts);
    if (skip != NULL) {
        cJSON_AddItemToObject(record, "skip", skip);
        cJSON_Delete(facts);
        return NULL;
    }
    *ret_provider = p;
    return facts;
}

static void drop(cJSON **facts)
{
    cJSON_Delete(*facts);
    *facts = NULL;
}

/* The availability re-check right before ensure; records a skip when it fails. */
static bool reprobe(struct cordon_ctx *ctx, const struct cordon__candidate *cand,
                    struct cordon__loaded *p, cJSON *record)
{
    struct cordon_error perr;
    bool available = false;
    char *reason = NULL;

    cordon_error_init(&perr);
    if (cordon__probe_availability(ctx, p, cand->config, &available, &reason, &perr) == 0 && available) {
        free(reason);
        return true;
    }
    cJSON_AddItemToObject(record, "skip",
                          skip_new("reprobe_unavailable",
                                   reason != NULL && reason[0] ? reason : perr.message));
    free(reason);
    return false;
}

/* None could be used: the refusal names each candidate's skip (reason and
 * the start of its detail), so that a missing image, a wrong digest, an
 * unknown provider and a provider below the isolation asked for read
 * apart; meta.probes keeps the whole of each. */
static int refuse_all(cJSON *const *records, size_t n, struct cordon_error *err)
{
    char msg[sizeof(err->message)];
    size_t used, room;

    used = (size_t)snprintf(msg, sizeof(msg), "provider_unavailable: none of %zu candidate(s) could be used", n);
    /* Each candidate gets an equal share of what is left, at least 48 bytes. */
    room = n > 0 ? (sizeof(msg) - used) / n : 0;
    if (room < 48)
        room = 48;
    for (size_t i = 0; i < n && used + 1 < sizeof(msg); i++) {
        const cJSON *skip = cJSON_GetObjectItemCaseSensitive(records[i], "skip");
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(records[i], "provider_id"));
        const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(skip, "reason"));
        const char *detail = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(skip, "detail"));
        char part[sizeof(msg)];
        int w;

        w = snprintf(part, sizeof(part), "%s %.*s: %s%s%s", i == 0 ? ":" : ";",
                     cordon_text_fit(id != NULL ? id : "?", CORDON_PROVIDER_ID_MAX), id != NULL ? id : "?",
                     reason != NULL ? reason : "not considered", detail != NULL && detail[0] ? ": " : "",
                     detail != NULL ? detail : "");
        if (w < 0)
            break;
        /* Cut to the share, never inside a UTF-8 sequence. */
        w = cordon_text_fit(part, room < sizeof(msg) - 1 - used ? room : sizeof(msg) - 1 - used);
        memcpy(msg + used, part, (size_t)w);
        used += (size_t)w;
        msg[used] = '\0';
    }
    return cordon_error_set(err, CORDON_E_PROVIDER_UNAVAILABLE, 0, "%s", msg);
}

int cordon__select(struct cordon_ctx *ctx, const struct cordon__candidate *cands, size_t n,
                   const struct cordon__select_opts *opts, struct cordon__selection *ret,
                   cJSON **ret_probes, struct cordon_error *err)
{
    cJSON *probes = cJSON_CreateArray();
    cJSON **records = calloc(n ? n : 1, sizeof(*records));
    cJSON **eligible = calloc(n ? n : 1, sizeof(*eligible));
    struct cordon__loaded **providers = calloc(n ? n : 1, sizeof(*providers));
    size_t chosen = n, probed_upto = 0;
    int r = 0;

    *ret_probes = probes;
    if (probes == NULL || records == NULL || eligible == NULL || providers == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        records[i] = cJSON_CreateObject();
        cJSON_AddNumberToObject(records[i], "index", (double)cands[i].index);
        cJSON_AddStringToObject(records[i], "provider_id", cands[i].provider_id);
        cJSON_AddItemToArray(probes, records[i]);
    }
    /* Walk the candidates in order; the first eligible one (for
     * "preferred", the first that also meets the preference) is re-probed
     * for availability, and a failed re-probe sends us on. */
    for (size_t i = 0; i < n && chosen == n; i++) {
        probed_upto = i + 1;
        eligible[i] = consider(ctx, &cands[i], opts, records[i], &providers[i]);
        if (eligible[i] == NULL)
            continue;
        if (opts->isolation == CORDON_ISOLATION_PREFERRED && !cordon__facts_fully_isolated(eligible[i]))
            continue;
        if (reprobe(ctx, &cands[i], providers[i], records[i]))
            chosen = i;
        else
            drop(&eligible[i]);
    }
    /* "preferred" with nobody meeting it: fall back to the first eligible. */
    for (size_t i = 0; i < probed_upto && chosen == n && opts->isolation == CORDON_ISOLATION_PREFERRED; i++) {
        if (eligible[i] == NULL)
            continue;
        if (reprobe(ctx, &cands[i], providers[i], records[i]))
            chosen = i;
        else
            drop(&eligible[i]);
    }
    for (size_t i = 0; i < n; i++) {
        cJSON_AddBoolToObject(records[i], "selected", i == chosen);
        if (i >= probed_upto && i != chosen) {
            cJSON_AddBoolToObject(records[i], "probed", false);
            cJSON_AddItemToObject(records[i], "skip",
                                  skip_new("preference_lost", "an earlier candidate was selected"));
        } else if (eligible[i] != NULL && i != chosen &&
                   cJSON_GetObjectItemCaseSensitive(records[i], "skip") == NULL) {
            cJSON_AddItemToObject(records[i], "skip",
                                  skip_new("preference_lost",
                                           opts->isolation == CORDON_ISOLATION_PREFERRED
                                               ? "eligible, but another candidate met the isolation preference"
                                               : "eligible, but an earlier candidate was selected"));
        }
        if (cJSON_GetObjectItemCaseSensitive(records[i], "skip") == NULL)
            cJSON_AddNullToObject(records[i], "skip");
    }
    if (chosen == n) {
        r = refuse_all(records, n, err);
        goto out;
    }
    memset(ret, 0, sizeof(*ret));
    ret->provider = providers[chosen];
    ret->facts = eligible[chosen];
    eligible[chosen] = NULL;
    ret->config = cJSON_Duplicate(cands[chosen].config, 1);
    ret->preference_fallback = opts->isolation == CORDON_ISOLATION_PREFERRED &&
                               !cordon__facts_fully_isolated(ret->facts);
    if (ret->preference_fallback)
        cJSON_AddBoolToObject(records[chosen], "preference_fallback", true);
    ret->unverified = strcmp(cordon__verification_status(ret->facts), "verified") != 0;
    ret->best_effort = opts->best_effort;
    cJSON_AddBoolToObject(records[chosen], "unverified", ret->unverified);
    snprintf(ret->why, sizeof(ret->why), "%s: candidate %zu of %zu, %s%s%s", ret->provider->id,
             chosen + 1, n,
             opts->isolation == CORDON_ISOLATION_REQUIRED ? "all four isolation axes observed true by the host"
             : ret->preference_fallback ? "no candidate met the isolation preference (preference_fallback)"
             : opts->isolation == CORDON_ISOLATION_PREFERRED ? "first to meet the isolation preference"
                                                             : "first usable candidate (isolation none)",
             ret->unverified ? "; unverified: the host could not observe its isolation" : "",
             chosen > 0 ? "; earlier candidates were skipped (see meta.probes)" : "");
out:
    for (size_t i = 0; i < n && eligible != NULL; i++)
        cJSON_Delete(eligible[i]);
    free(eligible);
    free(records);
    free(providers);
    return r;
}

cJSON *cordon__selection_verdict(const struct cordon__selection *sel, enum cordon__isolation isolation)
{
    static const char *const words[] = { "required", "preferred", "none" };
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(sel->facts, "verification");
    const cJSON *by = cJSON_GetObjectItemCaseSensitive(v, "verified_by");
    const cJSON *digest = cJSON_GetObjectItemCaseSensitive(v, "observation_digest");
    const cJSON *safety = cJSON_GetObjectItemCaseSensitive(sel->facts, "safety_class");
    cJSON *out = cJSON_CreateObject(), *observed, *claimed;

    if (out == NULL)
        return NULL;
    cJSON_AddStringToObject(out, "isolation_requested", words[isolation]);
    cJSON_AddStringToObject(out, "status", cordon__verification_status(sel->facts));
    cJSON_AddItemToObject(out, "verified_by", cJSON_IsString(by) ? cJSON_CreateString(by->valuestring)
                                                                : cJSON_CreateNull());
    cJSON_AddItemToObject(out, "observation_digest", cJSON_IsString(digest)
                                                         ? cJSON_CreateString(digest->valuestring)
                                                         : cJSON_CreateNull());
    cJSON_AddItemToObject(out, "safety_class", cJSON_IsString(safety) ? cJSON_CreateString(safety->valuestring)
                                                                      : cJSON_CreateNull());
    observed = cJSON_AddObjectToObject(out, "isolation");
    claimed = cJSON_AddObjectToObject(out, "claimed_isolation");
    for (size_t i = 0; i < sizeof(axes) / sizeof(axes[0]); i++) {
        const cJSON *iso = cJSON_GetObjectItemCaseSensitive(sel->facts, "isolation");
        const cJSON *claim = cJSON_GetObjectItemCaseSensitive(sel->facts, "claimed_isolation");

        cJSON_AddBoolToObject(observed, axes[i], cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(iso, axes[i])));
        cJSON_AddBoolToObject(claimed, axes[i], cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(claim, axes[i])));
    }
    cJSON_AddBoolToObject(out, "unverified", sel->unverified);
    cJSON_AddBoolToObject(out, "preference_fallback", sel->preference_fallback);
    /* Never a weaker limit silently: what this sandbox does not enforce,
     * and what the caller accepted so. */
    {
        cJSON *weak = cJSON_AddArrayToObject(out, "limits_not_enforced");
        cJSON *accepted = cJSON_AddArrayToObject(out, "best_effort_limits");
        const cJSON *lv = cJSON_GetObjectItemCaseSensitive(sel->facts, "limits_verified");

        for (size_t i = 0; i < CORDON_LIMIT_KEYS_COUNT; i++) {
            const cJSON *st = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(lv, cordon_limit_keys[i]), "status");

            if (cJSON_IsString(st) && strcmp(st->valuestring, "not_claimed") == 0)
                cJSON_AddItemToArray(weak, cJSON_CreateString(cordon_limit_keys[i]));
            if (sel->best_effort & (1u << i))
                cJSON_AddItemToArray(accepted, cJSON_CreateString(cordon_limit_keys[i]));
        }
    }
    return out;
}
