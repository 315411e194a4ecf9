/* cordon-contract: the ABI, the probe facts, and the claims against an
 * independent observation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include "core/abi.h"
#include <cordon/sdk/facts.h>
#include "sdk/facts-validate.h"
#include "contract/contract.h"

static const char *const axes[] = {
    CORDON_AXIS_PROCESS_CONTAINED,
    CORDON_AXIS_HOST_FS_RESTRICTED,
    CORDON_AXIS_PRIVESC_BLOCKED,
    CORDON_AXIS_SYSCALLS_RESTRICTED,
};

static const char *string_of(const cJSON *obj, const char *key)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, key));

    return s != NULL ? s : "(missing)";
}

/* Dotted numbers only: "3.11.2", "20", never "v20" or "3.11.2+". */
static bool version_normalised(const char *v)
{
    bool digit = false;

    if (v == NULL || v[0] == '\0')
        return false;
    for (const char *p = v; *p != '\0'; p++) {
        if (*p >= '0' && *p <= '9') {
            digit = true;
        } else if (*p == '.' && digit && p[1] != '\0') {
            digit = false;
        } else {
            return false;
        }
    }
    return digit;
}

Test(contract, abi_vtable_matches_file_and_version)
{
    char id[CORDON_PROVIDER_ID_MAX + 1];
    struct cordon_error err;
    bool code_execution = false;

    /* The loader checked most of this already; re-checking the copy makes
     * each rule a named failure of its own. */
    contract_load();
    cordon_error_init(&err);
    cr_assert_eq(cordon__provider_id_from_path(contract.provider_path, id, &err), 0, "%s",
                 err.message);
    cr_expect_eq(CORDON_ABI_MAJOR_OF(contract.vt.abi_version), 1, "abi_version major is %u, not 1",
                 CORDON_ABI_MAJOR_OF(contract.vt.abi_version));
    cr_expect_leq(CORDON_ABI_MINOR_OF(contract.vt.abi_version), CORDON_ABI_MINOR,
                  "abi_version minor %u is newer than this suite's %u",
                  CORDON_ABI_MINOR_OF(contract.vt.abi_version), (unsigned)CORDON_ABI_MINOR);
    cr_expect(contract.vt.struct_size >= CORDON_PROVIDER_V1_0_SIZE &&
                  contract.vt.struct_size <= sizeof(struct cordon_provider_v1),
              "struct_size %u is outside %zu..%zu", contract.vt.struct_size,
              (size_t)CORDON_PROVIDER_V1_0_SIZE, sizeof(struct cordon_provider_v1));
    cr_expect_str_eq(contract.vt.provider_id, id, "provider_id \"%s\" is not the basename \"%s\"",
                     contract.vt.provider_id, id);
    cr_expect(contract.vt.version != NULL && contract.vt.version[0] != '\0',
              "the version string is empty");
    for (size_t i = 0; contract.vt.supported_kinds[i] != NULL && i < 64; i++)
        code_execution = code_execution ||
                         strcmp(contract.vt.supported_kinds[i], "code_execution") == 0;
    cr_expect(code_execution, "\"code_execution\" is not among supported_kinds");
}

Test(contract, probe_full_facts_are_valid)
{
    struct cordon_error err;
    const cJSON *iso, *tc, *kinds, *k;
    char *text = NULL;
    cJSON *facts = contract_probe(CORDON_PROBE_FULL, &text);
    bool code_execution = false;

    /* The sdk's validator is what the host applies; the checks after it
     * restate its key rules so that a failure names them directly. */
    cordon_error_init(&err);
    cr_expect_eq(cordon__facts_validate(text, &err), 0, "cordon__facts_validate refuses: %s",
                 err.message);
    cr_expect_str_eq(string_of(facts, "provider_id"), contract.vt.provider_id,
                     "facts.provider_id \"%s\" differs from the vtable's \"%s\"",
                     string_of(facts, "provider_id"), contract.vt.provider_id);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(facts, "available")),
              "the provider says it is unavailable (reason: %s): nothing else can be checked",
              string_of(facts, "reason"));
    cr_expect(cordon__safety_class_valid(string_of(facts, "safety_class")),
              "safety_class \"%s\" is not one of the fixed classes", string_of(facts, "safety_class"));
    kinds = cJSON_GetObjectItemCaseSensitive(facts, "supported_kinds");
    cJSON_ArrayForEach(k, kinds)
        code_execution = code_execution || (cJSON_IsString(k) && strcmp(k->valuestring,
                                                                        "code_execution") == 0);
    cr_expect(code_execution, "facts.supported_kinds lacks \"code_execution\"");

    iso = cJSON_GetObjectItemCaseSensitive(facts, "isolation");
    cr_assert(cJSON_IsObject(iso), "facts.isolation is not an object (a label such as \"%s\" "
                                   "is not an observation)",
              cJSON_IsString(iso) ? iso->valuestring : "?");
    for (size_t i = 0; i < sizeof(axes) / sizeof(axes[0]); i++)
        cr_expect(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(iso, axes[i])),
                  "facts.isolation.%s is not a boolean", axes[i]);

    tc = cJSON_GetObjectItemCaseSensitive(facts, "toolchains");
    cr_expect(cJSON_IsObject(tc), "facts.toolchains is not an object");
    cJSON_ArrayForEach(k, tc) {
        static const char *const ids[] = CORDON_TOOLCHAIN_IDS;
        bool canonical = false;

        for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
            canonical = canonical || strcmp(k->string, ids[i]) == 0;
        cr_expect(canonical, "toolchain id \"%s\" is not canonical (python, node, go, c++)",
                  k->string);
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(k, "available")))
            cr_expect(version_normalised(cJSON_GetStringValue(
                          cJSON_GetObjectItemCaseSensitive(k, "version"))),
                      "toolchains.%s.version \"%s\" is not dotted numbers", k->string,
                      string_of(k, "version"));
    }
    cJSON_Delete(facts);
    contract.host->free(text);
}

Test(contract, probe_facts_are_observed)
{
    cJSON *facts = contract_probe(CORDON_PROBE_FULL, NULL);
    const char *by = string_of(facts, "observed_by");

    /* "none": a claim, which the host observes itself (and so does
     * claims_hold_under_independent_observation); "cordon-observe": a
     * provider built to observe in its own probe. */
    if (strcmp(by, "synthetic") == 0 && contract.allow_synthetic)
        cr_log_info("observed_by is \"synthetic\", accepted because of --allow-synthetic");
    else
        cr_expect(strcmp(by, "none") == 0 || strcmp(by, "cordon-observe") == 0,
                  "observed_by is \"%s\": facts must be a claim (\"none\") for the host to observe, "
                  "or come from cordon-observe (\"synthetic\" is accepted only with --allow-synthetic)",
                  by);
    cJSON_Delete(facts);
}

Test(contract, probe_availability_says_available)
{
    cJSON *facts = contract_probe(CORDON_PROBE_AVAILABILITY, NULL);

    cr_expect_str_eq(string_of(facts, "provider_id"), contract.vt.provider_id,
                     "availability facts name provider \"%s\"", string_of(facts, "provider_id"));
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(facts, "available")),
              "an availability probe says unavailable (reason: %s)", string_of(facts, "reason"));
    cr_expect(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(facts, "reason")),
              "availability facts carry no reason");
    cJSON_Delete(facts);
}

/* Append the observation's failing checks of axis to failures, each
 * name and detail clipped on its own. */
static void append_failing_checks(struct contract_text *failures, const cJSON *observed,
                                  const char *axis)
{
    const cJSON *iso = cJSON_GetObjectItemCaseSensitive(observed, "isolation");
    const cJSON *check;

    cJSON_ArrayForEach(check, cJSON_GetObjectItemCaseSensitive(iso, "checks")) {
        if (strcmp(string_of(check, "axis"), axis) != 0 ||
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(check, "ok")))
            continue;
        contract_text_add(failures, " [%s: %s]", CONTRACT_CLIP(string_of(check, "check")),
                          CONTRACT_CLIP(string_of(check, "detail")));
    }
}

Test(contract, claims_hold_under_independent_observation)
{
    struct contract_text failures = { 0 };
    cJSON *facts, *observed;
    const char *claimed_net, *seen_net;

    /* Our own observation, through the provider's vtable, independent of
     * whatever its probe did. */
    facts = contract_probe(CORDON_PROBE_FULL, NULL);
    observed = contract_observe();

    /* Only claims are judged: an axis claimed false is honest. */
    for (size_t i = 0; i < sizeof(axes) / sizeof(axes[0]); i++) {
        bool claimed = contract_claims(facts, axes[i]), seen = contract_claims(observed, axes[i]);

        cr_log_info("%s: claimed %s, observed %s", axes[i], claimed ? "true" : "false",
                    seen ? "true" : "false");
        if (!claimed || seen)
            continue;
        contract_text_add(&failures, "%s%s is claimed true but observed false; failing checks:",
                          failures.len ? "; " : "", axes[i]);
        append_failing_checks(&failures, observed, axes[i]);
    }
    claimed_net = string_of(facts, "network");
    seen_net = string_of(observed, "network");
    if (strcmp(claimed_net, "none") == 0 && strcmp(seen_net, "none") != 0)
        contract_text_add(&failures, "%snetwork is claimed \"none\" but observed \"%s\"",
                          failures.len ? "; " : "", CONTRACT_CLIP(seen_net));
    cr_expect_eq(failures.len, 0, "claims disproved: %s", contract_text_str(&failures));
    contract_text_clear(&failures);
    cJSON_Delete(observed);
    cJSON_Delete(facts);
}
