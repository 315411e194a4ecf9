/* core: the host verifies every isolation claim itself (core/verify.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cordon/sdk/bounds.h>
#include <cordon/sdk/facts.h>
#include <cordon/sdk/fs.h>
#include "core/observe/observe.h"
#include <cordon/text.h>
#include "core/loader.h"
#include "core/verify.h"
#include "sdk/facts-validate.h"

static const char *const axes[] = {
    CORDON_AXIS_PROCESS_CONTAINED, CORDON_AXIS_HOST_FS_RESTRICTED,
    CORDON_AXIS_PRIVESC_BLOCKED, CORDON_AXIS_SYSCALLS_RESTRICTED,
};

/* Every canonical toolchain: the host asks each, whatever the provider. */
static const char *const toolchains[] = { "python", "node", "go", "c++", NULL };

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

const char *cordon__verification_status(const cJSON *facts)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(facts, "verification");
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(v, "status");

    if (cJSON_IsString(status) &&
        (strcmp(status->valuestring, "verified") == 0 || strcmp(status->valuestring, "disproved") == 0))
        return status->valuestring;
    return "unverified";
}

static void replace(cJSON *obj, const char *key, cJSON *item)
{
    cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
    cJSON_AddItemToObject(obj, key, item);
}

static bool add_disproved(cJSON *list, const char *axis, const char *check, const char *detail)
{
    cJSON *d = cJSON_CreateObject();

    if (d == NULL || !cJSON_AddItemToArray(list, d))
        return cJSON_Delete(d), false;
    return cJSON_AddStringToObject(d, "axis", axis) && cJSON_AddStringToObject(d, "check", check) &&
           cJSON_AddStringToObject(d, "detail", detail);
}

/* Does the provider claim to enforce key: in limits_enforced, and not
 * "none" in limits_enforcement. */
static bool limit_claimed(const cJSON *facts, const char *key)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(facts, "limits_enforced"), *item;
    const cJSON *by = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(facts, "limits_enforcement"),
                                                       key);
    bool listed = false;

    cJSON_ArrayForEach(item, list)
        listed = listed || (cJSON_IsString(item) && strcmp(item->valuestring, key) == 0);
    return listed && !(cJSON_IsString(by) && strcmp(by->valuestring, "none") == 0);
}

/*
 * limits_verified: the host's verdict on each of the six limits, with what
 * the probe asked, and the provider's own word for how it enforces it
 * (limits_enforcement). Accepting a spec with a limit the provider claims
 * to enforce is the claim: every such limit the host saw not hold is named
 * in disproved, axis "limits", check its key; so is one whose check did
 * not report though the sandbox was contained (check "limits_not_observed"),
 * since a provider could fail just that exec. A limit it does not claim
 * (absent from limits_enforced, or "none") is "not_claimed", whatever was
 * seen ("observed" keeps it): it promised nothing.
 */
bool cordon__verify_merge_limits(cJSON *facts, const cJSON *observation, cJSON *disproved)
{
    const cJSON *seen = cJSON_GetObjectItemCaseSensitive(observation, "limits");
    const cJSON *how = cJSON_GetObjectItemCaseSensitive(facts, "limits_enforcement");
    cJSON *out = cJSON_CreateObject();

    for (size_t i = 0; out != NULL && i < CORDON_LIMIT_KEYS_COUNT; i++) {
        const char *key = cordon_limit_keys[i];
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(seen, key);
        const cJSON *status = cJSON_GetObjectItemCaseSensitive(v, "status");
        const cJSON *detail = cJSON_GetObjectItemCaseSensitive(v, "detail");
        const cJSON *asked = cJSON_GetObjectItemCaseSensitive(v, "asked");
        const cJSON *by = cJSON_GetObjectItemCaseSensitive(how, key);
        const char *st = cJSON_IsString(status) ? status->valuestring : "not_run";
        const char *dt = cJSON_IsString(detail) ? detail->valuestring : "not observed";
        bool claimed = limit_claimed(facts, key), ok;
        cJSON *o = cJSON_AddObjectToObject(out, key);
        char why[400];

        /* Only the three words the host writes; anything else was not run. */
        if (strcmp(st, "held") != 0 && strcmp(st, "disproved") != 0)
            st = "not_run";
        ok = o != NULL && cJSON_AddStringToObject(o, "status", claimed ? st : "not_claimed") &&
             cJSON_AddStringToObject(o, "detail", dt) &&
             (claimed || cJSON_AddStringToObject(o, "observed", st)) &&
             (cJSON_IsNumber(asked) ? cJSON_AddNumberToObject(o, "asked", asked->valuedouble) != NULL
                                    : cJSON_AddNullToObject(o, "asked") != NULL) &&
             (cJSON_IsString(by) ? cJSON_AddStringToObject(o, "enforced_by", by->valuestring) != NULL
                                 : cJSON_AddNullToObject(o, "enforced_by") != NULL);
        if (ok && claimed && strcmp(st, "disproved") == 0)
            ok = add_disproved(disproved, "limits", key, dt);
        if (ok && claimed && strcmp(st, "not_run") == 0 &&
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "unreported"))) {
            snprintf(why, sizeof(why), "%s: %.*s", key, cordon_text_fit(dt, 300), dt);
            ok = add_disproved(disproved, "limits", "limits_not_observed", why);
        }
        if (!ok) {
            cJSON_Delete(out);
            return false;
        }
    }
    if (out == NULL)
        return false;
    replace(facts, "limits_verified", out);
    return true;
}

/*
 * The host could not observe: every axis false (nothing the host saw holds
 * it up), the claim kept beside, and the reason. Selection never lets such
 * facts satisfy "isolation: required".
 */
static int mark_unverified(cJSON *facts, const cJSON *claim, const char *reason, struct cordon_error *err)
{
    cJSON *iso = cJSON_Duplicate(claim, true), *v = cJSON_CreateObject();

    if (iso == NULL || v == NULL)
        goto nomem;
    for (size_t i = 0; i < COUNT(axes); i++)
        replace(iso, axes[i], cJSON_CreateFalse());
    cJSON_DeleteItemFromObjectCaseSensitive(iso, "checks");
    /* Nothing was observed: no kernel either. */
    cJSON_DeleteItemFromObjectCaseSensitive(iso, "mechanism_kind");
    if (!cJSON_AddStringToObject(v, "status", "unverified") || !cJSON_AddNullToObject(v, "verified_by") ||
        !cJSON_AddNullToObject(v, "observation_digest") || !cJSON_AddArrayToObject(v, "disproved") ||
        !cJSON_AddStringToObject(v, "reason", reason))
        goto nomem;
    /* Nor any toolchain: the host names only what it saw answer. */
    if (!cordon__verify_merge_limits(facts, NULL, cJSON_GetObjectItemCaseSensitive(v, "disproved")) ||
        !cordon__facts_set_toolchains(facts, NULL))
        goto nomem;
    replace(facts, "isolation", iso);
    replace(facts, "verified_by", cJSON_CreateNull());
    replace(facts, "observation_digest", cJSON_CreateNull());
    replace(facts, "verification", v);
    return 0;
nomem:
    cJSON_Delete(iso);
    cJSON_Delete(v);
    return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "verify: out of memory");
}

/* Is axis in the claim's "deferred" list (the provider left it to us)? */
static bool deferred(const cJSON *claim, const char *axis)
{
    const cJSON *d;

    cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(claim, "deferred"))
        if (cJSON_IsString(d) && strcmp(d->valuestring, axis) == 0)
            return true;
    return false;
}

/*
 * Claim AND verdict. Every axis the provider claimed true and the host saw
 * false is disproved, with each failed check behind it; so is a claimed
 * network of "none" the host saw otherwise. Axes claimed false stay false
 * whatever the host saw: a provider may promise less than it gives. An
 * axis the provider deferred (one its mechanism's configuration decides,
 * such as gVisor's platform) is what the host saw, never a disproval.
 */
static int merge(cJSON *facts, const cJSON *claim, const cJSON *observation, const char *digest,
                 struct cordon_error *err)
{
    const cJSON *seen = cJSON_GetObjectItemCaseSensitive(observation, "isolation");
    const cJSON *checks = cJSON_GetObjectItemCaseSensitive(seen, "checks");
    const cJSON *net = cJSON_GetObjectItemCaseSensitive(observation, "network");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(seen, "mechanism_kind");
    const cJSON *claimed_net = cJSON_GetObjectItemCaseSensitive(facts, "network");
    cJSON *iso = cJSON_Duplicate(claim, true), *v = cJSON_CreateObject(), *disproved;
    const cJSON *c;
    bool ok = iso != NULL && v != NULL && cJSON_IsString(net);

    if (!ok)
        goto nomem;
    disproved = cJSON_AddArrayToObject(v, "disproved");
    ok = disproved != NULL;
    for (size_t i = 0; ok && i < COUNT(axes); i++) {
        bool claimed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(claim, axes[i]));
        bool observed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(seen, axes[i]));

        if (!claimed && deferred(claim, axes[i]))
            claimed = observed;
        replace(iso, axes[i], cJSON_CreateBool(claimed && observed));
        if (!claimed || observed)
            continue;
        cJSON_ArrayForEach(c, checks) {
            const cJSON *axis = cJSON_GetObjectItemCaseSensitive(c, "axis");
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(c, "check");
            const cJSON *detail = cJSON_GetObjectItemCaseSensitive(c, "detail");

            if (!cJSON_IsString(axis) || strcmp(axis->valuestring, axes[i]) != 0 ||
                !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(c, "ok")))
                continue;
            ok = ok && add_disproved(disproved, axes[i], cJSON_IsString(name) ? name->valuestring : "?",
                                     cJSON_IsString(detail) ? detail->valuestring : "");
        }
    }
    if (ok && cJSON_IsString(claimed_net) && strcmp(claimed_net->valuestring, "none") == 0 &&
        strcmp(net->valuestring, "none") != 0) {
        char detail[128];

        snprintf(detail, sizeof(detail), "network \"none\" claimed, the host observed \"%s\"", net->valuestring);
        ok = add_disproved(disproved, "network", "network_none", detail);
    }
    /* The toolchains (and the languages they serve) are the host's
     * finding alone: a provider's probe only claims. */
    if (!ok || !cordon__verify_merge_limits(facts, observation, disproved) ||
        !cordon__facts_set_toolchains(facts, cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(observation,
                                                                                            "toolchains"), true)))
        goto nomem;
    cJSON_DeleteItemFromObjectCaseSensitive(iso, "deferred");   /* decided: claimed_isolation keeps it */
    replace(iso, "checks", checks != NULL ? cJSON_Duplicate(checks, true) : cJSON_CreateArray());
    replace(iso, "network_mode", cJSON_CreateString(net->valuestring));
    /* Which kernel answered is the host's finding too, never the claim's. */
    replace(iso, "mechanism_kind", cJSON_CreateString(cJSON_IsString(kind) ? kind->valuestring : "namespaces"));
    if (!cJSON_AddStringToObject(v, "status", cJSON_GetArraySize(disproved) > 0 ? "disproved" : "verified") ||
        !cJSON_AddStringToObject(v, "verified_by", CORDON_VERIFIED_BY) ||
        !cJSON_AddStringToObject(v, "observation_digest", digest) ||
        !cJSON_AddStringToObject(v, "observed_network", net->valuestring) ||
        !cJSON_AddNumberToObject(v, "judge_version", CORDON_VERIFY_JUDGE_VERSION))
        goto nomem;
    replace(facts, "isolation", iso);
    replace(facts, "verified_by", cJSON_CreateString(CORDON_VERIFIED_BY));
    replace(facts, "observed_by", cJSON_CreateString("cordon-observe"));
    replace(facts, "observation_digest", cJSON_CreateString(digest));
    replace(facts, "verification", v);
    return 0;
nomem:
    cJSON_Delete(iso);
    cJSON_Delete(v);
    return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "verify: out of memory");
}

/*
 * One observation through p's own vtable, as a user's execution would get:
 * ensure with the candidate's config, provision, import, exec, terminate,
 * release. ret_observation is the observer's result (cordon_observe_run);
 * on failure why says which step failed.
 */
static int observe(struct cordon_ctx *ctx, struct cordon__loaded *p, const cJSON *config,
                   char **ret_observation, char *why, size_t why_size)
{
    const cJSON *image = cJSON_GetObjectItemCaseSensitive(config, "image");
    struct cordon_resource *res = NULL;
    struct cordon_error perr;
    char name[33], *text = NULL, *observation = NULL;
    cJSON *cfg = cordon__json_merge(config, NULL);
    int r;

    /* The probe execution runs only the host's own observer, never code of
     * a user: like reclaim, it needs no consent to run code unprotected,
     * so a provider that asks for that consent binds for it too. */
    if (cfg != NULL) {
        cJSON_DeleteItemFromObjectCaseSensitive(cfg, "allow_unsafe_local");
        cJSON_AddBoolToObject(cfg, "allow_unsafe_local", true);
        text = cJSON_PrintUnformatted(cfg);
        cJSON_Delete(cfg);
    }
    cordon_error_init(&perr);
    if (text == NULL) {
        snprintf(why, why_size, "out of memory");
        return CORDON_E_NOMEM;
    }
    r = p->vt.ensure(ctx->host, text, &res, &perr);
    free(text);
    if (r != 0 || res == NULL) {
        snprintf(why, why_size, "ensure failed: %s", perr.message[0] ? perr.message : "no resource");
        return r < 0 ? r : CORDON_E_PROVIDER;
    }
    /* A name the provider cannot know in advance: whatever it does for
     * "the observer" it must do for every program. */
    r = cordon__random_hex(name, 8, &perr);
    if (r == 0) {
        struct cordon_observe_opts oo = {
            .struct_size = sizeof(oo),
            .host = ctx->host,
            .provider = &p->vt,
            .resource = res,
            .image = cJSON_IsString(image) ? image->valuestring : NULL,
            .toolchains = toolchains,
            .observer_name = name,
            .flags = CORDON_OBSERVE_CHECK_LIMITS,
        };

        r = cordon_observe_run(&oo, &observation, &perr);
    }
    if (r < 0)
        snprintf(why, why_size, "%s", perr.message);
    cordon_error_init(&perr);
    if (cordon__loader_release(p, res, &perr) < 0) {
        if (r == 0)
            snprintf(why, why_size, "%s", perr.message);
        r = r < 0 ? r : CORDON_E_PROVIDER;
    }
    if (r < 0) {
        free(observation);
        return r;
    }
    *ret_observation = observation;
    return 0;
}

#define VERIFY_ATTEMPTS 3

/* True when a toolchain's version command of the observation text timed
 * out: the mechanism lost that exec (the sandbox went with it on a runtime
 * that ends an execution with a cancelled exec), not the toolchain. */
static bool toolchain_timed_out(const char *text)
{
    cJSON *doc = cJSON_Parse(text);
    const cJSON *t;
    bool lost = false;

    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(doc, "toolchains")) {
        const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "reason"));

        lost = lost || (reason != NULL && strstr(reason, "ended with status timeout") != NULL);
    }
    cJSON_Delete(doc);
    return lost;
}

int cordon__verify_facts(struct cordon_ctx *ctx, struct cordon__loaded *p, const cJSON *config,
                         cJSON *facts, struct cordon_error *err)
{
    const cJSON *iso = cJSON_GetObjectItemCaseSensitive(facts, "isolation");
    cJSON *claim = NULL, *observation = NULL;
    char why[sizeof(err->message)] = "", first[sizeof(err->message)] = "", hex[65], digest[72], *text = NULL;
    int r, attempts = 1;

    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(facts, "available")))
        return 0;
    claim = cJSON_IsObject(iso) ? cJSON_Duplicate(iso, true) : cJSON_CreateObject();
    if (claim == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "verify: out of memory");
    /* An observation that failed, or lost a toolchain's version command to
     * a timeout, is made again in a sandbox of its own, as strict as the
     * first, up to VERIFY_ATTEMPTS in all: a runtime that loses an exec now
     * and then (gVisor's, about one probe in eight on a busy machine here)
     * would otherwise leave a sound provider unverified, or without its
     * toolchains, until the cache expires. A failure proves nothing, so
     * trying again weakens nothing: only an observation that completed is
     * judged. The verification says how many it took and why the first
     * failed. */
    for (;;) {
        r = observe(ctx, p, config, &text, why, sizeof(why));
        if (r == CORDON_E_NOMEM || attempts == VERIFY_ATTEMPTS || (r == 0 && !toolchain_timed_out(text)))
            break;
        if (attempts == 1)
            snprintf(first, sizeof(first), "%s", r == 0 ? "a toolchain's version command timed out" : why);
        attempts++;
        free(text);
        text = NULL;
    }
    if (r == CORDON_E_NOMEM) {
        r = cordon_error_set(err, r, ENOMEM, "verify: %s", why);
        goto out;
    }
    if (r == 0) {
        observation = cJSON_Parse(text);
        if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(observation, "isolation"))) {
            snprintf(why, sizeof(why), "the observation is not a JSON object with \"isolation\"");
            r = CORDON_E_PROVIDER;
        }
    }
    if (r < 0)
        r = mark_unverified(facts, claim, why, err);
    else {
        /* The digest names exactly what the host saw (report, host view,
         * checks), so that a record can be matched to its observation. */
        cordon_sha256_hex(text, strlen(text), hex);
        snprintf(digest, sizeof(digest), "sha256:%s", hex);
        r = merge(facts, claim, observation, digest, err);
    }
    if (r == 0) {
        cJSON_DeleteItemFromObjectCaseSensitive(facts, "claimed_isolation");
        cJSON_AddItemToObject(facts, "claimed_isolation", claim);
        claim = NULL;
    }
    if (attempts > 1) {
        cJSON *v = cJSON_GetObjectItemCaseSensitive(facts, "verification");

        cJSON_AddNumberToObject(v, "attempts", attempts);
        cordon_json_add_text(v, "first_attempt", first);
    }
out:
    cJSON_Delete(observation);
    cJSON_Delete(claim);
    free(text);
    return r;
}
