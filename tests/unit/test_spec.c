/* Unit tests of sdk/spec.c: the provision spec read and written once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <cordon/sdk/spec.h>

/* Criterion runs each case in a fresh process where pointers taken in the
 * runner mean nothing: the parameters are indices into a static table. */
#define INDEX_PARAMS(table)                                                  \
    static size_t indices_[sizeof(table) / sizeof(table[0])];               \
    for (size_t i_ = 0; i_ < sizeof(indices_) / sizeof(indices_[0]); i_++) \
        indices_[i_] = i_;                                                   \
    return cr_make_param_array(size_t, indices_, sizeof(indices_) / sizeof(indices_[0]))

#define RES "\"resources\":{\"cpus\":0.5,\"memory_bytes\":268435456,\"disk_bytes\":67108864," \
            "\"pids\":64,\"runtime_ms\":300000,\"max_output_bytes\":1048576}"

struct spec_case {
    const char *json;
    int code;              /* 0 or the expected CORDON_E_* */
    const char *message;   /* the refusal names the field and the limit */
};

static const struct spec_case spec_cases[] = {
    { "{\"execution_id\":\"rec-demo\"," RES "}", 0, NULL },
    { "{\"execution_id\":\"rec-demo\",\"image\":null," RES ",\"network\":{\"mode\":\"none\"},"
      "\"environment\":{\"LANG\":\"C.UTF-8\"},\"layout\":\"host\",\"expires_at_ms\":1795946710761,"
      "\"future\":[1]}", 0, NULL },
    { "{\"execution_id\":\"a\",\"image\":\"\"," RES ",\"environment\":null,\"layout\":\"code\","
      "\"expires_at_ms\":null}", 0, NULL },
    /* bad input: as many rows as good, and more */
    { "", CORDON_E_INVALID, "spec" },
    { "{\"execution_id\": ", CORDON_E_INVALID, "spec" },
    { "[]", CORDON_E_INVALID, "spec" },
    { "{" RES "}", CORDON_E_INVALID, "execution_id" },
    { "{\"execution_id\":7," RES "}", CORDON_E_INVALID, "execution_id" },
    { "{\"execution_id\":\"../up\"," RES "}", CORDON_E_INVALID, "execution_id" },
    { "{\"execution_id\":\"-x\"," RES "}", CORDON_E_INVALID, "execution_id" },
    { "{\"execution_id\":\"a2345678901234567890123456789012345678901234567890123456789012345\","
      RES "}", CORDON_E_INVALID, "execution_id" },
    { "{\"execution_id\":\"a\",\"image\":3," RES "}", CORDON_E_INVALID,
      "image: must be a string or null" },
    { "{\"execution_id\":\"a\"}", CORDON_E_INVALID, "resources" },
    { "{\"execution_id\":\"a\",\"resources\":\"small\"}", CORDON_E_INVALID, "resources" },
    { "{\"execution_id\":\"a\",\"resources\":{\"cpus\":1,\"memory_bytes\":268435456,"
      "\"disk_bytes\":67108864,\"runtime_ms\":60000,\"max_output_bytes\":1048576}}",
      CORDON_E_INVALID, "resources.pids" },
    { "{\"execution_id\":\"a\",\"resources\":{\"cpus\":1,\"memory_bytes\":268435456,"
      "\"disk_bytes\":67108864,\"pids\":4,\"runtime_ms\":60000,\"max_output_bytes\":1048576}}",
      CORDON_E_LIMIT, "resources.pids" },
    { "{\"execution_id\":\"a\"," RES ",\"network\":\"none\"}", CORDON_E_INVALID,
      "network: must be {\"mode\": \"none\"}" },
    { "{\"execution_id\":\"a\"," RES ",\"network\":{}}", CORDON_E_INVALID,
      "network: must be {\"mode\": \"none\"}" },
    { "{\"execution_id\":\"a\"," RES ",\"network\":{\"mode\":\"bridge\"}}", CORDON_E_UNSUPPORTED,
      "network.mode: \"bridge\" refused" },
    { "{\"execution_id\":\"a\"," RES ",\"network\":{\"mode\":\"host\"}}", CORDON_E_UNSUPPORTED,
      "network.mode: \"host\" refused" },
    { "{\"execution_id\":\"a\"," RES ",\"environment\":[]}", CORDON_E_INVALID, "environment" },
    { "{\"execution_id\":\"a\"," RES ",\"environment\":{\"1A\":\"x\"}}", CORDON_E_INVALID,
      "environment" },
    { "{\"execution_id\":\"a\"," RES ",\"environment\":{\"A\":\"1\",\"A\":\"2\"}}",
      CORDON_E_INVALID, "environment.A: appears twice" },
    { "{\"execution_id\":\"a\"," RES ",\"layout\":\"everything\"}", CORDON_E_INVALID,
      "layout: must be \"code\" or \"host\"" },
    { "{\"execution_id\":\"a\"," RES ",\"layout\":null}", CORDON_E_INVALID,
      "layout: must be \"code\" or \"host\"" },
    { "{\"execution_id\":\"a\"," RES ",\"expires_at_ms\":0}", CORDON_E_INVALID, "expires_at_ms" },
    { "{\"execution_id\":\"a\"," RES ",\"expires_at_ms\":-5}", CORDON_E_INVALID, "expires_at_ms" },
    { "{\"execution_id\":\"a\"," RES ",\"expires_at_ms\":1.5}", CORDON_E_INVALID, "expires_at_ms" },
    { "{\"execution_id\":\"a\"," RES ",\"expires_at_ms\":1e300}", CORDON_E_INVALID,
      "expires_at_ms" },
};

ParameterizedTestParameters(spec, parse)
{
    INDEX_PARAMS(spec_cases);
}

ParameterizedTest(size_t *index, spec, parse)
{
    const struct spec_case *c = &spec_cases[*index];
    struct cordon_spec spec, again;
    struct cordon_error err;
    char *text = NULL, *text2 = NULL;
    int r;

    cordon_error_init(&err);
    cordon_spec_init(&spec);
    r = cordon_spec_parse(c->json, &spec, &err);
    cr_assert_eq(r, c->code, "%s: %d (%s)", c->json, r, err.message);
    if (r < 0) {
        cr_expect(strstr(err.message, c->message) != NULL, "%s: \"%s\" lacks \"%s\"", c->json,
                  err.message, c->message);
        cr_expect_eq(spec.execution_id[0], '\0', "a refused spec leaves the result alone");
        cr_expect_null(spec.image);
        return;
    }
    /* parse -> print -> parse -> print is a fixed point. */
    cr_assert_eq(cordon_spec_print(&spec, &text, &err), 0, "%s", err.message);
    cordon_spec_init(&again);
    cr_assert_eq(cordon_spec_parse(text, &again, &err), 0, "%s", err.message);
    cr_assert_eq(cordon_spec_print(&again, &text2, &err), 0, "%s", err.message);
    cr_expect_str_eq(text, text2);
    cr_expect_str_eq(again.execution_id, spec.execution_id);
    cr_expect_eq(again.layout, spec.layout);
    cr_expect_eq(again.expires_at_ms, spec.expires_at_ms);
    cr_expect_eq(again.environment.n, spec.environment.n);
    cr_expect(memcmp(&again.resources, &spec.resources, sizeof(spec.resources)) == 0);
    free(text);
    free(text2);
    cordon_spec_clear(&again);
    cordon_spec_clear(&spec);
}

Test(spec, fields_are_read)
{
    struct cordon_spec spec;
    struct cordon_error err;

    cordon_error_init(&err);
    cordon_spec_init(&spec);
    cr_assert_eq(cordon_spec_parse("{\"execution_id\":\"exec-1\",\"image\":\"img@sha256:ab\"," RES
                                   ",\"environment\":{\"LANG\":\"C.UTF-8\"},\"layout\":\"host\","
                                   "\"expires_at_ms\":42}", &spec, &err), 0, "%s", err.message);
    cr_expect_str_eq(spec.execution_id, "exec-1");
    cr_expect_str_eq(spec.image, "img@sha256:ab");
    cr_expect_eq(spec.resources.cpus, 0.5);
    cr_expect_eq(spec.resources.pids, 64);
    cr_expect_eq(spec.resources.runtime_ms, 300000);
    cr_expect_str_eq(cordon_env_get(&spec.environment, "LANG"), "C.UTF-8");
    cr_expect_eq(spec.layout, CORDON_SPEC_LAYOUT_HOST);
    cr_expect_str_eq(cordon_spec_layout_name(spec.layout), "host");
    cr_expect_eq(spec.expires_at_ms, 42);
    cordon_spec_clear(&spec);
    cr_expect_null(spec.image);
    /* absent keys: no image, code layout, no deadline, no variables */
    cr_assert_eq(cordon_spec_parse("{\"execution_id\":\"a\",\"image\":\"\"," RES "}", &spec, &err),
                 0, "%s", err.message);
    cr_expect_null(spec.image);
    cr_expect_eq(spec.layout, CORDON_SPEC_LAYOUT_CODE);
    cr_expect_eq(spec.expires_at_ms, 0);
    cr_expect_eq(spec.environment.n, 0);
    cordon_spec_clear(&spec);
    cordon_spec_clear(NULL);
}

Test(spec, printed_text_has_every_key)
{
    struct cordon_spec spec;
    struct cordon_error err;
    char *text = NULL;

    cordon_error_init(&err);
    cordon_spec_init(&spec);
    cr_assert_eq(cordon_spec_parse("{\"execution_id\":\"a\"," RES "}", &spec, &err), 0);
    cr_assert_eq(cordon_spec_print(&spec, &text, &err), 0, "%s", err.message);
    cr_expect_str_eq(text, "{\"execution_id\":\"a\",\"image\":null,\"resources\":{\"cpus\":0.5,"
                           "\"memory_bytes\":268435456,\"disk_bytes\":67108864,\"pids\":64,"
                           "\"runtime_ms\":300000,\"max_output_bytes\":1048576},"
                           "\"network\":{\"mode\":\"none\"},\"environment\":{},"
                           "\"layout\":\"code\",\"expires_at_ms\":null}");
    free(text);
    cordon_spec_clear(&spec);
}

/* cpus is read to the nanosecond: a value one bit past 1 (which a printer
 * writing 15 digits would print as 1) reads as 1, so what is printed reads
 * back as the same limits; half a nanosecond rounds away from zero. */
Test(spec, cpus_are_read_to_the_nanosecond_and_round_trip)
{
    static const struct {
        const char *cpus;
        double want;
    } cases[] = {
        { "1.0000000000000002", 1.0 },
        { "0.5000000000000001", 0.5 },
        { "0.2500000005", 0.250000001 },
        { "127.999999999", 127.999999999 },
        { "0.123456789012345678", 0.123456789 },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cordon_spec spec, again;
        struct cordon_error err;
        char json[512], *text = NULL;

        cordon_error_init(&err);
        cordon_spec_init(&spec);
        cordon_spec_init(&again);
        snprintf(json, sizeof(json),
                 "{\"execution_id\":\"a\",\"resources\":{\"cpus\":%s,"
                 "\"memory_bytes\":268435456,\"disk_bytes\":67108864,\"pids\":64,"
                 "\"runtime_ms\":300000,\"max_output_bytes\":1048576}}", cases[i].cpus);
        cr_assert_eq(cordon_spec_parse(json, &spec, &err), 0, "%s: %s", cases[i].cpus,
                     err.message);
        cr_expect(spec.resources.cpus == cases[i].want, "%s read as %.17g", cases[i].cpus,
                  spec.resources.cpus);
        cr_assert_eq(cordon_spec_print(&spec, &text, &err), 0, "%s", err.message);
        cr_assert_eq(cordon_spec_parse(text, &again, &err), 0, "%s", err.message);
        cr_expect(memcmp(&again.resources, &spec.resources, sizeof(spec.resources)) == 0,
                  "%s: printed as %s, read back differently", cases[i].cpus, text);
        free(text);
        cordon_spec_clear(&spec);
        cordon_spec_clear(&again);
    }
}

Test(spec, print_refuses_what_parse_refuses)
{
    struct cordon_spec spec;
    struct cordon_error err;
    char *text = NULL;

    cordon_error_init(&err);
    cordon_spec_init(&spec);
    /* no id, no resources */
    cr_expect_eq(cordon_spec_print(&spec, &text, &err), CORDON_E_INVALID);
    cr_expect(strstr(err.message, "execution_id") != NULL, "%s", err.message);
    snprintf(spec.execution_id, sizeof(spec.execution_id), "ok-id");
    cordon_error_init(&err);
    cr_expect_eq(cordon_spec_print(&spec, &text, &err), CORDON_E_LIMIT);
    cr_expect(strstr(err.message, "resources.") != NULL, "%s", err.message);
    spec.resources = (struct cordon_limits){ 1, 256u << 20, 64u << 20, 64, 1000, 4096 };
    spec.expires_at_ms = 1ull << 60;
    cordon_error_init(&err);
    cr_expect_eq(cordon_spec_print(&spec, &text, &err), CORDON_E_INVALID);
    cr_expect(strstr(err.message, "expires_at_ms") != NULL, "%s", err.message);
    cr_expect_null(text);
    spec.expires_at_ms = 10;
    cr_assert_eq(cordon_spec_print(&spec, &text, &err), 0, "%s", err.message);
    free(text);
    cr_expect_eq(cordon_spec_print(NULL, &text, &err), CORDON_E_INVALID);
    cordon_spec_clear(&spec);
}

Test(spec, image_bound_names_the_limit)
{
    struct cordon_spec spec;
    struct cordon_error err;
    size_t n = CORDON_IMAGE_REF_MAX + 1;
    const size_t at = strlen("{\"execution_id\":\"a\",\"image\":\"");
    char *text = malloc(n + 256);

    cr_assert_not_null(text);
    cordon_spec_init(&spec);
    cordon_error_init(&err);
    memcpy(text, "{\"execution_id\":\"a\",\"image\":\"", at);
    memset(text + at, 'x', n);
    strcpy(text + at + n, "\"," RES "}");
    cr_expect_eq(cordon_spec_parse(text, &spec, &err), CORDON_E_LIMIT);
    cr_expect_str_eq(err.message, "image: longer than 4096 bytes");
    text[at + n - 1] = '"';
    strcpy(text + at + n, "," RES "}");
    cr_expect_eq(cordon_spec_parse(text, &spec, &err), 0, "%s", err.message);
    cr_expect_eq(strlen(spec.image), CORDON_IMAGE_REF_MAX);
    cordon_spec_clear(&spec);
    free(text);
}

Test(spec, deadline)
{
    struct cordon_spec spec;
    struct cordon_error err;
    uint64_t at = 0;

    cordon_spec_init(&spec);
    cordon_error_init(&err);
    spec.resources.runtime_ms = 5000;
    /* none given: runtime_ms from now */
    cr_expect_eq(cordon_spec_deadline(&spec, 1000, &at, &err), 0);
    cr_expect_eq(at, 6000);
    spec.expires_at_ms = 1500;
    cr_expect_eq(cordon_spec_deadline(&spec, 1000, &at, &err), 0);
    cr_expect_eq(at, 1500);
    /* passed, or now: refused, saying by how much, *ret untouched */
    at = 7;
    cr_expect_eq(cordon_spec_deadline(&spec, 1500, &at, &err), CORDON_E_TIMEOUT);
    cr_expect_str_eq(err.message, "expires_at_ms: already passed (0 ms ago)");
    cr_expect_eq(cordon_spec_deadline(&spec, 2500, &at, &err), CORDON_E_TIMEOUT);
    cr_expect_str_eq(err.message, "expires_at_ms: already passed (1000 ms ago)");
    cr_expect_eq(at, 7);
    cr_expect_eq(cordon_spec_deadline(NULL, 0, &at, &err), CORDON_E_INVALID);
}

Test(spec, set_image_copies_and_bounds)
{
    struct cordon_spec spec;
    struct cordon_error err;
    char ref[] = "img@sha256:00", *big = malloc(CORDON_IMAGE_REF_MAX + 2);

    cr_assert_not_null(big);
    cordon_spec_init(&spec);
    cordon_error_init(&err);
    cr_assert_eq(cordon_spec_set_image(&spec, ref, &err), 0);
    ref[0] = 'X';
    cr_expect_str_eq(spec.image, "img@sha256:00", "the spec holds a copy");
    /* "" and NULL leave none */
    cr_expect_eq(cordon_spec_set_image(&spec, "", &err), 0);
    cr_expect_null(spec.image);
    cr_expect_eq(cordon_spec_set_image(&spec, "a", &err), 0);
    cr_expect_eq(cordon_spec_set_image(&spec, NULL, &err), 0);
    cr_expect_null(spec.image);
    /* past the bound: refused, naming it, and the image stays as it was */
    cr_expect_eq(cordon_spec_set_image(&spec, "kept", &err), 0);
    memset(big, 'x', CORDON_IMAGE_REF_MAX + 1);
    big[CORDON_IMAGE_REF_MAX + 1] = '\0';
    cr_expect_eq(cordon_spec_set_image(&spec, big, &err), CORDON_E_LIMIT);
    cr_expect_str_eq(err.message, "image: longer than 4096 bytes");
    cr_expect_str_eq(spec.image, "kept");
    cr_expect_eq(cordon_spec_set_image(NULL, "a", &err), CORDON_E_INVALID);
    cordon_spec_clear(&spec);
    free(big);
}

Test(spec, layout_from_json)
{
    struct cordon_error err;
    enum cordon_spec_layout l = CORDON_SPEC_LAYOUT_HOST;
    cJSON *code = cJSON_CreateString("code"), *host = cJSON_CreateString("host"),
          *bad = cJSON_CreateString("Code"), *num = cJSON_CreateNumber(1);

    cordon_error_init(&err);
    cr_expect_eq(cordon_spec_layout_from_json(code, "state.layout", false, &l, &err), 0);
    cr_expect_eq(l, CORDON_SPEC_LAYOUT_CODE);
    cr_expect_eq(cordon_spec_layout_from_json(host, "state.layout", false, &l, &err), 0);
    cr_expect_eq(l, CORDON_SPEC_LAYOUT_HOST);
    /* absent: code only where the document allows it */
    cr_expect_eq(cordon_spec_layout_from_json(NULL, "layout", true, &l, &err), 0);
    cr_expect_eq(l, CORDON_SPEC_LAYOUT_CODE);
    l = CORDON_SPEC_LAYOUT_HOST;
    cr_expect_eq(cordon_spec_layout_from_json(NULL, "state.layout", false, &l, &err),
                 CORDON_E_INVALID);
    cr_expect_str_eq(err.message, "state.layout: must be \"code\" or \"host\"");
    cr_expect_eq(l, CORDON_SPEC_LAYOUT_HOST, "a refusal leaves the result alone");
    cr_expect_eq(cordon_spec_layout_from_json(bad, "state.layout", true, &l, &err),
                 CORDON_E_INVALID);
    cr_expect_eq(cordon_spec_layout_from_json(num, "state.layout", true, &l, &err),
                 CORDON_E_INVALID);
    cJSON_Delete(code);
    cJSON_Delete(host);
    cJSON_Delete(bad);
    cJSON_Delete(num);
}

/* What a provider's state keeps of its spec: added, then read back. */
Test(spec, state_keeps_layout_resources_and_deadline)
{
    struct cordon_spec spec;
    struct cordon_spec_state kept, back = { 0 };
    struct cordon_error err;
    cJSON *state = cJSON_CreateObject();

    cordon_error_init(&err);
    cordon_spec_init(&spec);
    cr_assert_eq(cordon_spec_parse("{\"execution_id\":\"rec-demo\",\"layout\":\"host\"," RES "}",
                                   &spec, &err), 0, "%s", err.message);
    kept = (struct cordon_spec_state){ .resources = spec.resources,
                                       .expires_at_ms = 1700000000123ull,
                                       .layout = spec.layout };
    cr_assert(cordon_spec_state_add(state, &kept));
    cr_assert_eq(cordon_spec_state_from_json(state, &back, &err), 0, "%s", err.message);
    cr_expect_eq(back.layout, CORDON_SPEC_LAYOUT_HOST);
    cr_expect_eq(back.expires_at_ms, 1700000000123ull);
    cr_expect_eq(back.resources.pids, 64);
    cr_expect_eq(back.resources.disk_bytes, 67108864);
    cr_expect_eq(back.resources.max_output_bytes, 1048576);
    cr_expect(back.resources.cpus == 0.5);
    cJSON_Delete(state);
    cordon_spec_clear(&spec);
    cr_expect_not(cordon_spec_state_add(NULL, &kept));

    static const struct {
        const char *json, *message;
    } bad[] = {
        { "{\"resources\":{},\"expires_at_ms\":1}", "state.layout" },
        { "{\"layout\":\"else\"," RES ",\"expires_at_ms\":1}", "state.layout" },
        { "{\"layout\":\"code\",\"expires_at_ms\":1}", "state.resources" },
        { "{\"layout\":\"code\",\"resources\":{\"cpus\":1},\"expires_at_ms\":1}", "state.resources." },
        { "{\"layout\":\"code\"," RES "}", "state.expires_at_ms" },
        { "{\"layout\":\"code\"," RES ",\"expires_at_ms\":0}", "state.expires_at_ms" },
        { "{\"layout\":\"code\"," RES ",\"expires_at_ms\":\"soon\"}", "state.expires_at_ms" },
        { "{\"layout\":\"code\"," RES ",\"expires_at_ms\":1e300}", "state.expires_at_ms" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        state = cJSON_Parse(bad[i].json);
        cr_assert_not_null(state, "%s", bad[i].json);
        back.expires_at_ms = 7;
        cr_expect_eq(cordon_spec_state_from_json(state, &back, &err), CORDON_E_INVALID, "%s",
                     bad[i].json);
        cr_expect(strstr(err.message, bad[i].message) != NULL, "%s: %s", bad[i].json, err.message);
        cr_expect_eq(back.expires_at_ms, 7, "a refusal wrote its result");
        cJSON_Delete(state);
    }
}

/* A state handed back: its document and checked id, or a refusal naming
 * the field that leaves nothing to free. */
Test(spec, state_parse_reads_the_document_and_its_id)
{
    struct cordon_error err;
    const char *id = "x";
    cJSON *doc = NULL;
    char *big;

    cordon_error_init(&err);
    cr_assert_eq(cordon_spec_state_parse("{\"execution_id\":\"exec-1\",\"pid\":7}", &doc, &id, &err), 0,
                 "%s", err.message);
    cr_expect_str_eq(id, "exec-1");
    cr_expect_eq(cJSON_GetObjectItemCaseSensitive(doc, "pid")->valueint, 7);
    cJSON_Delete(doc);
    cr_expect_eq(cordon_spec_state_parse("{\"execution_id\":\"../x\"}", &doc, &id, &err), CORDON_E_INVALID);
    cr_expect(strstr(err.message, "state.execution_id") != NULL, "%s", err.message);
    cr_expect_null(doc);
    cr_expect_null(id);
    cr_expect_eq(cordon_spec_state_parse("[1]", &doc, &id, &err), CORDON_E_INVALID);
    cr_expect(strstr(err.message, "state") != NULL, "%s", err.message);
    big = malloc(CORDON_STATE_MAX + 2);
    cr_assert_not_null(big);
    memset(big, ' ', CORDON_STATE_MAX + 1);
    big[CORDON_STATE_MAX + 1] = '\0';
    cr_expect_eq(cordon_spec_state_parse(big, &doc, &id, &err), CORDON_E_LIMIT);
    cr_expect_null(doc);
    free(big);
}
