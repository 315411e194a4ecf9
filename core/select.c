/* core: deterministic provider selection with structured skip reasons. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cordon/sdk/facts.h>
#include "core/loader.h"
#include "core/probe_cache.h"
#include "core/select.h"

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

static cJSON *skip_new(const char *reason, const char *detail)
{
    cJSON *skip = cJSON_CreateObject();

    cJSON_AddStringToObject(skip, "reason", reason);
    cJSON_AddStringToObject(skip, "detail", detail);
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
    if (opts->isolation == CORDON_ISOLATION_REQUIRED) {
        if (cJSON_IsString(safety) && strcmp(safety->valuestring, "trusted_local") == 0) {
            skip = skip_new("capability_mismatch",
                            "isolation required can never select a trusted_local provider");
            cJSON_AddStringToObject(skip, "key", "safety_class");
            cJSON_AddStringToObject(skip, "wanted", "not trusted_local");
            cJSON_AddStringToObject(skip, "observed", "trusted_local");
            return skip;
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
        r = cordon_error_set(err, CORDON_E_PROVIDER_UNAVAILABLE, 0,
                             "provider_unavailable: none of %zu candidate(s) could be used; "
                             "see meta.probes for each one's skip reason", n);
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
    snprintf(ret->why, sizeof(ret->why), "%s: candidate %zu of %zu, %s%s", ret->provider->id,
             chosen + 1, n,
             opts->isolation == CORDON_ISOLATION_REQUIRED ? "all four isolation axes observed true"
             : ret->preference_fallback ? "no candidate met the isolation preference (preference_fallback)"
             : opts->isolation == CORDON_ISOLATION_PREFERRED ? "first to meet the isolation preference"
                                                             : "first usable candidate (isolation none)",
             chosen > 0 ? "; earlier candidates were skipped (see meta.probes)" : "");
out:
    for (size_t i = 0; i < n && eligible != NULL; i++)
        cJSON_Delete(eligible[i]);
    free(eligible);
    free(records);
    free(providers);
    return r;
}
