/* Unit tests of sdk/json.c's one bounded parse: cordon__json_parse and the
 * provider's cordon_json_parse_object, each refusal naming the document
 * and the bound it broke. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <cordon/sdk/json.h>

#include "core/observe/compare.h"
#include "sdk/facts-validate.h"
#include "sdk/json-internal.h"

/* A document nested depth levels: arrays, or objects with key "k" around
 * a number (the number is the deepest level). */
static char *nested(int depth, bool objects)
{
    size_t open_len = objects ? 5 : 1;   /* {"k": */
    char *s = malloc((size_t)depth * (open_len + 1) + 2);
    size_t n = 0;
    int opens = objects ? depth - 1 : depth;

    cr_assert_not_null(s);
    for (int i = 0; i < opens; i++) {
        memcpy(s + n, objects ? "{\"k\":" : "[", open_len);
        n += open_len;
    }
    if (objects)
        s[n++] = '1';
    for (int i = 0; i < opens; i++)
        s[n++] = objects ? '}' : ']';
    s[n] = '\0';
    return s;
}

struct bound_case {
    int depth;           /* nested this deep ... */
    bool objects;        /* ... in objects (else arrays) */
    size_t max_bytes;    /* parsed within this size */
    int code;            /* 0, or the refusal's code */
    const char *message; /* part of the refusal's message */
};

static const struct bound_case bound_cases[] = {
    { 1, false, 64, 0, NULL },
    { CORDON_JSON_MAX_DEPTH, false, 4096, 0, NULL },
    { CORDON_JSON_MAX_DEPTH, true, 4096, 0, NULL },
    { CORDON_JSON_MAX_DEPTH + 1, false, 4096, CORDON_E_LIMIT, "doc: JSON nested deeper than 32 levels" },
    { CORDON_JSON_MAX_DEPTH + 1, true, 4096, CORDON_E_LIMIT, "doc: JSON nested deeper than 32 levels" },
    /* far past cJSON's own nesting limit: refused, not a crash */
    { 5000, false, 1u << 20, CORDON_E_INVALID, "doc: not valid JSON" },
    /* 64 bytes of "[[...]]" within 64, then one byte over */
    { 32, false, 64, 0, NULL },
    { 32, false, 63, CORDON_E_LIMIT, "doc: more than 63 bytes of JSON" },
    { 10, true, 20, CORDON_E_LIMIT, "doc: more than 20 bytes of JSON" },
};

ParameterizedTestParameters(json_bounded, cases)
{
    static size_t idx[sizeof(bound_cases) / sizeof(bound_cases[0])];
    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, json_bounded, cases)
{
    const struct bound_case *c = &bound_cases[*i];
    char *text = nested(c->depth, c->objects);
    struct cordon_error err;
    cJSON *v = NULL;
    int r;

    cordon_error_init(&err);
    r = cordon__json_parse("doc", text, c->max_bytes, &v, &err);
    cr_assert_eq(r, c->code, "depth %d in %zu bytes: %d (%s)", c->depth, c->max_bytes, r, err.message);
    if (c->code == 0) {
        cr_assert_not_null(v);
        cr_expect(!cordon__json_deeper_than(v, c->depth));
        cr_expect(cordon__json_deeper_than(v, c->depth - 1));
    } else {
        cr_assert_null(v);
        cr_assert(strstr(err.message, c->message) != NULL, "%s", err.message);
    }
    cJSON_Delete(v);
    free(text);
}

/* A provider's parse has the same depth bound, then wants an object. */
Test(json_bounded, parse_object_holds_the_depth_and_wants_an_object)
{
    struct cordon_error err;
    char *deep = nested(CORDON_JSON_MAX_DEPTH + 1, true), *fits = nested(CORDON_JSON_MAX_DEPTH, true);
    cJSON *v = NULL;

    cordon_error_init(&err);
    cr_assert_eq(cordon_json_parse_object("state", deep, 1u << 20, &v, &err), CORDON_E_LIMIT);
    cr_assert_null(v);
    cr_assert(strstr(err.message, "state: JSON nested deeper than 32 levels") != NULL, "%s", err.message);
    cr_assert_eq(cordon_json_parse_object("state", fits, 1u << 20, &v, &err), 0, "%s", err.message);
    cJSON_Delete(v);
    v = NULL;
    cr_assert_eq(cordon_json_parse_object("state", "[1]", 1u << 20, &v, &err), CORDON_E_INVALID);
    cr_assert(strstr(err.message, "state: must be a JSON object") != NULL, "%s", err.message);
    cr_assert_eq(cordon_json_parse_object("state", NULL, 16, &v, &err), CORDON_E_INVALID);
    cr_assert(strstr(err.message, "state: missing") != NULL, "%s", err.message);
    cr_assert_null(v);
    free(deep);
    free(fits);
}

/* One document and nothing after it but whitespace; a refusal says where. */
Test(json_bounded, text_after_the_document_is_refused_with_its_offset)
{
    static const struct {
        const char *text;
        int code;
        const char *message;
    } cases[] = {
        { "{\"a\":1}", 0, NULL },
        { " {\"a\":1} \n\t\r\n", 0, NULL },
        { "{\"a\":1}x", CORDON_E_INVALID, "doc: text after the JSON document (at byte 7)" },
        { "{\"a\":1}\n{\"b\":2}\n", CORDON_E_INVALID, "doc: text after the JSON document (at byte 8)" },
        { "[1] [2]", CORDON_E_INVALID, "doc: text after the JSON document (at byte 4)" },
        { "{\"a\":}", CORDON_E_INVALID, "doc: not valid JSON (near byte 5)" },
    };
    struct cordon_error err;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *v = NULL;
        int r;

        cordon_error_init(&err);
        r = cordon__json_parse("doc", cases[i].text, 1024, &v, &err);
        cr_assert_eq(r, cases[i].code, "%zu: %d (%s)", i, r, err.message);
        if (cases[i].code == 0) {
            cr_assert_not_null(v);
        } else {
            cr_assert_null(v);
            cr_assert_str_eq(err.message, cases[i].message);
        }
        cJSON_Delete(v);
    }
}

/* What the host reads from a provider and from the sandbox goes through
 * the same bound: a provider's facts, the observer's report. */
Test(json_bounded, provider_facts_and_the_observers_report_hold_the_depth)
{
    char *deep = nested(CORDON_JSON_MAX_DEPTH + 1, true);
    struct cordon_error err;
    char *out = NULL;
    cJSON *v = NULL;

    cordon_error_init(&err);
    cr_assert_eq(cordon__facts_parse_valid(deep, &v, &err), CORDON_E_LIMIT);
    cr_assert_null(v);
    cr_assert(strstr(err.message, "facts: JSON nested deeper than 32 levels") != NULL, "%s", err.message);
    cr_assert_eq(cordon__observe_compare(deep, "{}", &out, &err), CORDON_E_LIMIT);
    cr_assert_null(out);
    cr_assert(strstr(err.message, "observe: report: JSON nested deeper than 32 levels") != NULL, "%s",
              err.message);
    free(deep);
}

static void *plain_alloc(size_t n)
{
    return malloc(n);
}

/* The boundary answer of one pid, as provider.h describes it. */
Test(json, boundary_host_names_one_pid)
{
    const struct cordon_host_v1 host = { .abi_version = CORDON_ABI_VERSION,
                                         .struct_size = sizeof(host), .alloc = plain_alloc,
                                         .free = free };
    struct cordon_error err;
    char *json = NULL;

    cordon_error_init(&err);
    cr_assert_eq(cordon_json_boundary_host(&host, 4242, &json, &err), 0, "%s", err.message);
    cr_expect_str_eq(json, "{\"pids\":[4242]}");
    free(json);
}
