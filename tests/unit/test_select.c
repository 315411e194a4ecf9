/* Unit tests: deterministic selection (core/select.c) against the synthetic
 * fixture provider, whose probe returns the facts its config carries. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/select.h"
#include "tests/unit/helpers.h"

/* Facts for the synthetic provider: axes as four 0/1 digits ("1111"). */
static cJSON *facts(const char *axes, const char *safety, const char *python_version)
{
    char text[2048];

    snprintf(text, sizeof(text),
             "{\"provider_id\":\"synthetic\",\"available\":true,\"reason\":\"ready\","
             "\"supported_kinds\":[\"code_execution\"],\"observed_by\":\"synthetic\","
             "\"safety_class\":\"%s\",\"isolation\":{\"process_contained\":%s,"
             "\"host_filesystem_restricted\":%s,\"privilege_escalation_blocked\":%s,"
             "\"syscalls_restricted\":%s},\"network\":\"none\",\"workspace_access_modes\":[\"snapshot\"],"
             "\"languages\":[\"python\"],\"toolchains\":{\"python\":{\"available\":true,\"version\":\"%s\","
             "\"raw_version\":\"Python %s\"}},\"limits_enforced\":[\"pids\"],\"mechanism_facts\":{}}",
             safety, axes[0] == '1' ? "true" : "false", axes[1] == '1' ? "true" : "false",
             axes[2] == '1' ? "true" : "false", axes[3] == '1' ? "true" : "false", python_version,
             python_version);
    return cJSON_Parse(text);
}

/*
 * Selection's own logic is tested over verdicts given here, not observed:
 * the synthetic provider runs on the host, so a real verification would
 * disprove every axis it claims (tests/unit/test_verify.c tests that).
 * config "test_verdict": "verified" (default: the claim as observed),
 * "disproved" (process_contained seen false) or "unverified".
 */
static int given_verdict(struct cordon_ctx *ctx, struct cordon__loaded *p, const cJSON *config, cJSON *facts,
                         struct cordon_error *err)
{
    const cJSON *want = cJSON_GetObjectItem(config, "test_verdict");
    const char *verdict = cJSON_IsString(want) ? want->valuestring : "verified";
    cJSON *v = cJSON_CreateObject(), *iso = cJSON_GetObjectItem(facts, "isolation");

    (void)ctx;
    (void)p;
    (void)err;
    cJSON_AddItemToObject(facts, "claimed_isolation", cJSON_Duplicate(iso, true));
    cJSON_AddStringToObject(v, "status", verdict);
    if (strcmp(verdict, "disproved") == 0) {
        cJSON *d = cJSON_CreateObject();

        cJSON_AddStringToObject(d, "axis", "process_contained");
        cJSON_AddStringToObject(d, "check", "pid_namespace");
        cJSON_AddStringToObject(d, "detail", "the sandbox shares the host's namespace");
        cJSON_AddItemToArray(cJSON_AddArrayToObject(v, "disproved"), d);
        cJSON_ReplaceItemInObject(iso, "process_contained", cJSON_CreateFalse());
    } else if (strcmp(verdict, "unverified") == 0) {
        cJSON_AddStringToObject(v, "reason", "provision failed: no image");
        cJSON_ReplaceItemInObject(iso, "process_contained", cJSON_CreateFalse());
        cJSON_ReplaceItemInObject(iso, "host_filesystem_restricted", cJSON_CreateFalse());
        cJSON_ReplaceItemInObject(iso, "privilege_escalation_blocked", cJSON_CreateFalse());
        cJSON_ReplaceItemInObject(iso, "syscalls_restricted", cJSON_CreateFalse());
    }
    cJSON_AddItemToObject(facts, "verification", v);
    /* config "test_not_claimed": a limit the host found not claimed. */
    if (cJSON_IsString(cJSON_GetObjectItem(config, "test_not_claimed"))) {
        cJSON *lv = cJSON_AddObjectToObject(facts, "limits_verified");
        const char *name = cJSON_GetObjectItem(config, "test_not_claimed")->valuestring;

        cJSON_AddStringToObject(cJSON_AddObjectToObject(lv, name), "status", "not_claimed");
    }
    return 0;
}

/* One candidate of the synthetic provider with the given facts and flags. */
static cJSON *candidate(cJSON *f, const char *flag)
{
    cJSON *c = cJSON_CreateObject(), *config = cJSON_AddObjectToObject(c, "config");

    cJSON_AddStringToObject(c, "provider_id", "synthetic");
    if (f != NULL)
        cJSON_AddItemToObject(config, "facts", f);
    if (flag != NULL)
        cJSON_AddBoolToObject(config, flag, true);
    return c;
}

struct fixture {
    char *state;
    struct cordon_ctx *ctx;
    struct cordon__candidate *cands;
    size_t n;
    struct cordon__selection sel;
    cJSON *probes;
    struct cordon_error err;
};

/* The best_effort_limits of the next run_select (then reset). */
static unsigned next_best_effort;

static int run_select(struct fixture *fx, cJSON *list, enum cordon__isolation iso, const char *tool,
                      const char *min)
{
    struct cordon__select_opts opts = { iso, "code_execution", tool, min, next_best_effort };
    int r;

    memset(fx, 0, sizeof(*fx));
    fx->ctx = test_ctx_open(NULL, &fx->state);
    cr_assert_not_null(fx->ctx);
    fx->ctx->verify = given_verdict;
    cr_assert_eq(cordon__candidates_build(fx->ctx, "providers", list, NULL, &fx->cands, &fx->n, NULL), 0);
    cJSON_Delete(list);
    cordon_error_init(&fx->err);
    r = cordon__select(fx->ctx, fx->cands, fx->n, &opts, &fx->sel, &fx->probes, &fx->err);
    cr_assert_not_null(fx->probes, "the probe records are there also on failure");
    cr_assert_eq((size_t)cJSON_GetArraySize(fx->probes), fx->n);
    return r;
}

static void done(struct fixture *fx)
{
    cordon__selection_clear(&fx->sel);
    cJSON_Delete(fx->probes);
    cordon__candidates_free(fx->cands, fx->n);
    cordon_ctx_free(fx->ctx);
    test_rmtree(fx->state);
    free(fx->state);
}

static const cJSON *skip_of(const struct fixture *fx, int i)
{
    return cJSON_GetObjectItem(cJSON_GetArrayItem(fx->probes, i), "skip");
}

static const char *skip_reason(const struct fixture *fx, int i)
{
    const cJSON *r = cJSON_GetObjectItem(skip_of(fx, i), "reason");
    return cJSON_IsString(r) ? r->valuestring : "(none)";
}

static cJSON *list_of(cJSON *a, cJSON *b, cJSON *c)
{
    cJSON *l = cJSON_CreateArray();
    if (a) cJSON_AddItemToArray(l, a);
    if (b) cJSON_AddItemToArray(l, b);
    if (c) cJSON_AddItemToArray(l, c);
    return l;
}

Test(select, required_picks_fully_isolated)
{
    struct fixture fx;

    cr_assert_eq(run_select(&fx, list_of(candidate(facts("1111", "isolated", "3.11.2"), NULL), NULL, NULL),
                            CORDON_ISOLATION_REQUIRED, "python", "3.10"), 0, "%s", fx.err.message);
    cr_expect_str_eq(fx.sel.provider->id, "synthetic");
    cr_expect(cJSON_IsNull(skip_of(&fx, 0)));
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(fx.probes, 0), "selected")));
    cr_expect(strstr(fx.sel.why, "all four isolation axes") != NULL, "%s", fx.sel.why);
    done(&fx);
}

Test(select, required_never_selects_trusted_local)
{
    struct fixture fx;

    cr_expect_eq(run_select(&fx, list_of(candidate(facts("1111", "trusted_local", "3.11.2"), NULL), NULL, NULL),
                            CORDON_ISOLATION_REQUIRED, NULL, NULL), CORDON_E_PROVIDER_UNAVAILABLE);
    cr_expect_str_eq(skip_reason(&fx, 0), "capability_mismatch");
    cr_expect_str_eq(cJSON_GetObjectItem(skip_of(&fx, 0), "key")->valuestring, "safety_class");
    cr_expect(strstr(fx.err.message, "provider_unavailable") != NULL, "%s", fx.err.message);
    done(&fx);
}

/* A limit the provider does not claim is no lie, so it is selected when
 * isolation is only preferred; isolation required wants every limit an
 * execution asks for enforced, and names the one that is not. */
Test(select, required_refuses_a_limit_not_claimed_and_preferred_takes_it)
{
    struct fixture fx;
    cJSON *c = candidate(facts("1111", "isolated", "3.11.2"), NULL);

    cJSON_AddStringToObject(cJSON_GetObjectItem(c, "config"), "test_not_claimed", "cpus");
    cr_expect_eq(run_select(&fx, list_of(c, NULL, NULL), CORDON_ISOLATION_REQUIRED, NULL, NULL),
                 CORDON_E_PROVIDER_UNAVAILABLE);
    cr_expect_str_eq(skip_reason(&fx, 0), "capability_mismatch");
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(skip_of(&fx, 0), "key")), "limits_enforced.cpus");
    done(&fx);
    c = candidate(facts("1111", "isolated", "3.11.2"), NULL);
    cJSON_AddStringToObject(cJSON_GetObjectItem(c, "config"), "test_not_claimed", "cpus");
    cr_expect_eq(run_select(&fx, list_of(c, NULL, NULL), CORDON_ISOLATION_PREFERRED, NULL, NULL), 0, "%s",
                 fx.err.message);
    done(&fx);
}

/* Isolation required takes a limit the provider does not enforce only
 * when the caller named it best effort, and the verdict says so. */
Test(select, best_effort_names_the_limits_required_may_leave_and_the_verdict_lists_them)
{
    struct fixture fx;
    struct cordon_error err;
    unsigned mask = 0;
    cJSON *c, *v, *names;
    char *text;

    cordon_error_init(&err);
    names = cJSON_Parse("[\"cpus\", \"disk_bytes\"]");
    cr_assert_eq(cordon__best_effort_parse(names, &mask, &err), 0, "%s", err.message);
    cJSON_Delete(names);
    /* Another limit named: cpus is still refused. */
    next_best_effort = mask & ~1u;
    c = candidate(facts("1111", "isolated", "3.11.2"), NULL);
    cJSON_AddStringToObject(cJSON_GetObjectItem(c, "config"), "test_not_claimed", "cpus");
    cr_expect_eq(run_select(&fx, list_of(c, NULL, NULL), CORDON_ISOLATION_REQUIRED, NULL, NULL),
                 CORDON_E_PROVIDER_UNAVAILABLE);
    done(&fx);
    next_best_effort = mask;
    c = candidate(facts("1111", "isolated", "3.11.2"), NULL);
    cJSON_AddStringToObject(cJSON_GetObjectItem(c, "config"), "test_not_claimed", "cpus");
    cr_expect_eq(run_select(&fx, list_of(c, NULL, NULL), CORDON_ISOLATION_REQUIRED, NULL, NULL), 0, "%s",
                 fx.err.message);
    next_best_effort = 0;
    v = cordon__selection_verdict(&fx.sel, CORDON_ISOLATION_REQUIRED);
    text = cJSON_PrintUnformatted(cJSON_GetObjectItem(v, "limits_not_enforced"));
    cr_expect_str_eq(text, "[\"cpus\"]");
    free(text);
    text = cJSON_PrintUnformatted(cJSON_GetObjectItem(v, "best_effort_limits"));
    cr_expect_str_eq(text, "[\"cpus\",\"disk_bytes\"]");
    free(text);
    cJSON_Delete(v);
    done(&fx);
}

Test(select, best_effort_refuses_what_is_not_a_limit_by_index)
{
    static const struct {
        const char *json;
        const char *message;
    } bad[] = {
        { "\"cpus\"", "best_effort_limits: must be an array of limit names" },
        { "[\"cpus\", \"gpus\"]", "best_effort_limits[1]: not a limit name" },
        { "[\"memory\"]", "best_effort_limits[0]: not a limit name" },
        { "[\"pids\", \"pids\"]", "best_effort_limits[1]: pids named twice" },
        { "[1]", "best_effort_limits[0]: not a limit name" },
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct cordon_error err;
        cJSON *v = cJSON_Parse(bad[i].json);
        unsigned mask = 0;

        cordon_error_init(&err);
        cr_expect_eq(cordon__best_effort_parse(v, &mask, &err), CORDON_E_INVALID, "%zu", i);
        cr_expect(strstr(err.message, bad[i].message) != NULL, "%zu: %s", i, err.message);
        cJSON_Delete(v);
    }
}

Test(select, required_names_the_missing_axis)
{
    struct fixture fx;

    cr_expect_eq(run_select(&fx, list_of(candidate(facts("1110", "isolated", "3.11.2"), NULL), NULL, NULL),
                            CORDON_ISOLATION_REQUIRED, NULL, NULL), CORDON_E_PROVIDER_UNAVAILABLE);
    cr_expect_str_eq(skip_reason(&fx, 0), "capability_mismatch");
    cr_expect_str_eq(cJSON_GetObjectItem(skip_of(&fx, 0), "key")->valuestring, "isolation.syscalls_restricted");
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(skip_of(&fx, 0), "wanted")));
    cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(skip_of(&fx, 0), "observed")));
    done(&fx);
}

Test(select, toolchain_too_old)
{
    struct fixture fx;
    const cJSON *skip;

    cr_expect_eq(run_select(&fx, list_of(candidate(facts("1111", "isolated", "3.9.18"), NULL), NULL, NULL),
                            CORDON_ISOLATION_REQUIRED, "python", "3.10"), CORDON_E_PROVIDER_UNAVAILABLE);
    skip = skip_of(&fx, 0);
    cr_expect_str_eq(skip_reason(&fx, 0), "toolchain_version");
    cr_expect_str_eq(cJSON_GetObjectItem(skip, "tool")->valuestring, "python");
    cr_expect_str_eq(cJSON_GetObjectItem(skip, "wanted")->valuestring, "3.10");
    cr_expect_str_eq(cJSON_GetObjectItem(skip, "observed")->valuestring, "3.9.18");
    done(&fx);
}

Test(select, each_failure_gets_its_reason_and_the_next_is_used)
{
    struct fixture fx;
    cJSON *l = list_of(cJSON_CreateString("not-installed"), cJSON_CreateString("abi2"),
                       candidate(NULL, "fail_probe"));
    cJSON *label = facts("1111", "isolated", "3.11.2");

    cJSON_ReplaceItemInObject(label, "isolation", cJSON_CreateString("required"));
    cJSON_AddItemToArray(l, candidate(label, NULL));
    cJSON_AddItemToArray(l, candidate(facts("1111", "isolated", "3.11.2"), NULL));
    cr_assert_eq(run_select(&fx, l, CORDON_ISOLATION_REQUIRED, NULL, NULL), 0, "%s", fx.err.message);
    cr_expect_str_eq(skip_reason(&fx, 0), "not_installed");
    cr_expect_str_eq(skip_reason(&fx, 1), "abi_mismatch");
    cr_expect_str_eq(skip_reason(&fx, 2), "probe_failed");
    cr_expect_str_eq(skip_reason(&fx, 3), "probe_failed");
    cr_expect(strstr(cJSON_GetObjectItem(skip_of(&fx, 3), "detail")->valuestring, "string label") != NULL,
              "a string label in place of the axes is refused with a message that says so: %s",
              cJSON_GetObjectItem(skip_of(&fx, 3), "detail")->valuestring);
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(fx.probes, 4), "selected")));
    cr_expect_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(fx.probes, 4), "index")->valueint, 4);
    done(&fx);
}

Test(select, unavailable_and_kind_unsupported)
{
    struct fixture fx;
    cJSON *down = facts("1111", "isolated", "3.11.2"), *other = facts("1111", "isolated", "3.11.2");

    cJSON_ReplaceItemInObject(down, "available", cJSON_CreateFalse());
    cJSON_ReplaceItemInObject(down, "reason", cJSON_CreateString("daemon not reachable"));
    cJSON_ReplaceItemInObject(other, "supported_kinds", cJSON_CreateStringArray((const char *[]){ "other_kind" }, 1));
    cr_expect_eq(run_select(&fx, list_of(candidate(down, NULL), candidate(other, NULL), NULL),
                            CORDON_ISOLATION_NONE, NULL, NULL), CORDON_E_PROVIDER_UNAVAILABLE);
    cr_expect_str_eq(skip_reason(&fx, 0), "unavailable");
    cr_expect_str_eq(cJSON_GetObjectItem(skip_of(&fx, 0), "detail")->valuestring, "daemon not reachable");
    cr_expect_str_eq(skip_reason(&fx, 1), "kind_unsupported");
    /* The refusal itself says why each one was passed over. */
    cr_expect(strncmp(fx.err.message,
                      "provider_unavailable: none of 2 candidate(s) could be used: "
                      "synthetic: unavailable: daemon not reachable; synthetic: kind_unsupported",
                      strlen("provider_unavailable: none of 2 candidate(s) could be used: "
                             "synthetic: unavailable: daemon not reachable; synthetic: kind_unsupported")) == 0,
              "%s", fx.err.message);
    done(&fx);
}

/* Three candidates with long reasons: each keeps a share of the message,
 * so the last one's reason is still read. */
Test(select, a_refusal_names_every_candidates_reason_within_the_message)
{
    struct fixture fx;
    cJSON *f[3];
    char detail[700];
    int seen;

    memset(detail, 'x', sizeof(detail) - 1);
    detail[sizeof(detail) - 1] = '\0';
    for (int i = 0; i < 3; i++) {
        f[i] = facts("1111", "isolated", "3.11.2");
        cJSON_ReplaceItemInObject(f[i], "available", cJSON_CreateFalse());
        cJSON_ReplaceItemInObject(f[i], "reason", cJSON_CreateString(detail));
    }
    cr_expect_eq(run_select(&fx, list_of(candidate(f[0], NULL), candidate(f[1], NULL), candidate(f[2], NULL)),
                            CORDON_ISOLATION_NONE, NULL, NULL), CORDON_E_PROVIDER_UNAVAILABLE);
    seen = 0;
    for (const char *at = strstr(fx.err.message, "synthetic: unavailable: xxx"); at != NULL;
         at = strstr(at + 1, "synthetic: unavailable: xxx"))
        seen++;
    cr_expect_eq(seen, 3, "%s", fx.err.message);
    done(&fx);
}

Test(select, reprobe_unavailable_moves_on)
{
    struct fixture fx;

    cr_assert_eq(run_select(&fx, list_of(candidate(facts("1111", "isolated", "3.11.2"), "unavailable_on_reprobe"),
                                         candidate(facts("1111", "isolated", "3.12.1"), NULL), NULL),
                            CORDON_ISOLATION_REQUIRED, NULL, NULL), 0, "%s", fx.err.message);
    cr_expect_str_eq(skip_reason(&fx, 0), "reprobe_unavailable");
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(fx.probes, 1), "selected")));
    cr_expect_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(fx.sel.facts, "toolchains"),
                                                             "python"), "version")->valuestring, "3.12.1");
    done(&fx);
}

Test(select, preferred_orders_isolated_first)
{
    struct fixture fx;

    cr_assert_eq(run_select(&fx, list_of(candidate(facts("0011", "trusted_local", "3.11.2"), NULL),
                                         candidate(facts("1111", "isolated", "3.11.2"), NULL), NULL),
                            CORDON_ISOLATION_PREFERRED, NULL, NULL), 0);
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(fx.probes, 1), "selected")));
    cr_expect_str_eq(skip_reason(&fx, 0), "preference_lost");
    cr_expect_not(fx.sel.preference_fallback);
    done(&fx);
}

Test(select, preferred_falls_back_and_says_so)
{
    struct fixture fx;

    cr_assert_eq(run_select(&fx, list_of(candidate(facts("0011", "trusted_local", "3.11.2"), NULL),
                                         candidate(facts("0111", "namespace", "3.11.2"), NULL), NULL),
                            CORDON_ISOLATION_PREFERRED, NULL, NULL), 0);
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(fx.probes, 0), "selected")));
    cr_expect(fx.sel.preference_fallback);
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(fx.probes, 0), "preference_fallback")));
    cr_expect_str_eq(skip_reason(&fx, 1), "preference_lost");
    done(&fx);
}

Test(select, none_takes_the_first_usable_and_is_deterministic)
{
    struct fixture a, b;
    char *ta, *tb;

    cr_assert_eq(run_select(&a, list_of(candidate(facts("0011", "trusted_local", "3.11.2"), NULL),
                                        candidate(facts("1111", "isolated", "3.11.2"), NULL), NULL),
                            CORDON_ISOLATION_NONE, NULL, NULL), 0);
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(a.probes, 0), "selected")));
    cr_expect_str_eq(skip_reason(&a, 1), "preference_lost");
    cr_assert_eq(run_select(&b, list_of(candidate(facts("0011", "trusted_local", "3.11.2"), NULL),
                                        candidate(facts("1111", "isolated", "3.11.2"), NULL), NULL),
                            CORDON_ISOLATION_NONE, NULL, NULL), 0);
    ta = cJSON_PrintUnformatted(a.probes);
    tb = cJSON_PrintUnformatted(b.probes);
    cr_expect_str_eq(ta, tb, "the same inputs give the same records");
    free(ta);
    free(tb);
    done(&a);
    done(&b);
}

/* The verdict a candidate gets: facts "1111", config test_verdict. */
static cJSON *judged(const char *verdict)
{
    cJSON *c = candidate(facts("1111", "isolated", "3.11.2"), NULL);

    cJSON_AddStringToObject(cJSON_GetObjectItem(c, "config"), "test_verdict", verdict);
    return c;
}

Test(select, claims_disproved_is_skipped_at_every_isolation_level_naming_the_checks)
{
    static const enum cordon__isolation levels[] = { CORDON_ISOLATION_REQUIRED, CORDON_ISOLATION_PREFERRED,
                                                     CORDON_ISOLATION_NONE };

    for (size_t i = 0; i < 3; i++) {
        struct fixture fx;
        const cJSON *failed, *first;

        cr_expect_eq(run_select(&fx, list_of(judged("disproved"), NULL, NULL), levels[i], NULL, NULL),
                     CORDON_E_PROVIDER_UNAVAILABLE, "level %zu", i);
        cr_expect_str_eq(skip_reason(&fx, 0), "claims_disproved", "level %zu", i);
        failed = cJSON_GetObjectItem(skip_of(&fx, 0), "failed");
        cr_assert_eq(cJSON_GetArraySize(failed), 1);
        first = cJSON_GetArrayItem(failed, 0);
        cr_expect_str_eq(cJSON_GetObjectItem(first, "axis")->valuestring, "process_contained");
        cr_expect_str_eq(cJSON_GetObjectItem(first, "check")->valuestring, "pid_namespace");
        cr_expect_not_null(cJSON_GetObjectItem(first, "detail"));
        cr_expect(strstr(cJSON_GetObjectItem(skip_of(&fx, 0), "detail")->valuestring,
                         "process_contained/pid_namespace") != NULL);
        done(&fx);
    }
}

Test(select, a_disproved_candidate_is_passed_over_for_the_next)
{
    struct fixture fx;

    cr_assert_eq(run_select(&fx, list_of(judged("disproved"), judged("verified"), NULL),
                            CORDON_ISOLATION_REQUIRED, NULL, NULL), 0, "%s", fx.err.message);
    cr_expect_str_eq(skip_reason(&fx, 0), "claims_disproved");
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(fx.probes, 1), "selected")));
    cr_expect_not(fx.sel.unverified);
    done(&fx);
}

Test(select, unverified_never_satisfies_required)
{
    struct fixture fx;

    cr_expect_eq(run_select(&fx, list_of(judged("unverified"), NULL, NULL), CORDON_ISOLATION_REQUIRED, NULL,
                            NULL), CORDON_E_PROVIDER_UNAVAILABLE);
    cr_expect_str_eq(skip_reason(&fx, 0), "unverified");
    cr_expect(strstr(cJSON_GetObjectItem(skip_of(&fx, 0), "detail")->valuestring, "no image") != NULL);
    done(&fx);
}

Test(select, facts_without_a_verification_are_unverified)
{
    struct fixture fx;
    cJSON *c = judged("verified");

    /* A verdict word this host does not know counts as none. */
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(c, "config"), "test_verdict", cJSON_CreateString("trusted"));
    cr_expect_eq(run_select(&fx, list_of(c, NULL, NULL), CORDON_ISOLATION_REQUIRED, NULL, NULL),
                 CORDON_E_PROVIDER_UNAVAILABLE);
    cr_expect_str_eq(skip_reason(&fx, 0), "unverified");
    done(&fx);
}

Test(select, unverified_may_serve_preferred_and_none_and_says_so)
{
    static const enum cordon__isolation levels[] = { CORDON_ISOLATION_PREFERRED, CORDON_ISOLATION_NONE };

    for (size_t i = 0; i < 2; i++) {
        struct fixture fx;

        cr_assert_eq(run_select(&fx, list_of(judged("unverified"), NULL, NULL), levels[i], NULL, NULL), 0,
                     "%s", fx.err.message);
        cr_expect(fx.sel.unverified);
        cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(fx.probes, 0), "unverified")));
        cr_expect(strstr(fx.sel.why, "unverified") != NULL, "%s", fx.sel.why);
        /* Its claimed axes count for nothing: "preferred" fell back. */
        cr_expect_eq(fx.sel.preference_fallback, levels[i] == CORDON_ISOLATION_PREFERRED);
        done(&fx);
    }
}

Test(select, isolation_words)
{
    static const char *const bad[] = { "\"Required\"", "\"strict\"", "true", "{\"process_contained\":true}" };
    enum cordon__isolation iso;
    cJSON *v;

    v = cJSON_Parse("\"preferred\"");
    cr_expect_eq(cordon__isolation_parse("isolation", v, &iso, NULL), 0);
    cr_expect_eq(iso, CORDON_ISOLATION_PREFERRED);
    cJSON_Delete(v);
    cr_expect_eq(cordon__isolation_parse("isolation", NULL, &iso, NULL), 0);
    cr_expect_eq(iso, CORDON_ISOLATION_REQUIRED, "required by default");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct cordon_error err;
        cordon_error_init(&err);
        v = cJSON_Parse(bad[i]);
        cr_expect_eq(cordon__isolation_parse("isolation", v, &iso, &err), CORDON_E_INVALID, "%s", bad[i]);
        cr_expect(strstr(err.message, "isolation") != NULL);
        cJSON_Delete(v);
    }
}

/* A refusal names the provider, the reason and as much of the detail as
 * fits a message, cut between characters: a long provider text is never
 * cut inside a UTF-8 sequence nor lets the reason fall off the end. */
Test(select, refusal_fits_the_detail_between_characters)
{
    cJSON *probes = cJSON_Parse("[{\"skip\":{\"reason\":\"claims_disproved\"}}]");
    cJSON *skip = cJSON_GetObjectItem(cJSON_GetArrayItem(probes, 0), "skip");
    static const char prefix[] = "provider_unavailable: synthetic: claims_disproved: ";
    char detail[2001];
    struct cordon_error err;
    size_t len;

    /* "x" then "é" (two bytes) 999 times: a cut at an even byte count
     * would split one. */
    detail[0] = 'x';
    for (size_t i = 0; i < 999; i++)
        memcpy(detail + 1 + 2 * i, "\xc3\xa9", 2);
    detail[1999] = '\0';
    cJSON_AddStringToObject(skip, "detail", detail);
    cordon_error_init(&err);
    cr_assert_eq(cordon__select_refusal(CORDON_E_PROVIDER_UNAVAILABLE, "synthetic", probes, &err),
                 CORDON_E_PROVIDER_UNAVAILABLE);
    len = strlen(err.message);
    cr_expect_eq(strncmp(err.message, prefix, strlen(prefix)), 0, "%s", err.message);
    cr_expect_eq(len, strlen(prefix) + 299, "%zu", len);
    cr_expect_lt(len, sizeof(err.message) - 1, "the detail was cut by the message, not fitted: %zu", len);
    cr_expect(cordon_text_is_utf8(err.message, len), "%s", err.message);
    cr_expect_str_eq(err.message + len - 2, "\xc3\xa9");
    /* No skip reason: the refusal is left as it was. */
    cJSON_Delete(probes);
    probes = cJSON_Parse("[{\"skip\":null}]");
    cordon_error_init(&err);
    cr_expect_eq(cordon__select_refusal(CORDON_E_PROVIDER_UNAVAILABLE, "synthetic", probes, &err),
                 CORDON_E_PROVIDER_UNAVAILABLE);
    cr_expect_str_eq(err.message, "");
    cJSON_Delete(probes);
}
