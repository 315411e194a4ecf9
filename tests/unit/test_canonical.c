/* Unit tests of core/canonical.c: the text bundle digests are taken over. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "core/canonical.h"
#include "core/internal.h"

/* Criterion runs each case in a fresh process where pointers taken in the
 * runner mean nothing: the parameters are indices into a static table. */
#define INDEX_PARAMS(table)                                                  \
    static size_t indices_[sizeof(table) / sizeof(table[0])];               \
    for (size_t i_ = 0; i_ < sizeof(indices_) / sizeof(indices_[0]); i_++) \
        indices_[i_] = i_;                                                   \
    return cr_make_param_array(size_t, indices_, sizeof(indices_) / sizeof(indices_[0]))

struct canon_case {
    const char *input;     /* JSON text */
    const char *expected;  /* canonical text, or NULL: refused with CORDON_E_INVALID */
    const char *message;   /* part of the refusal's message */
};

static void check_case(const struct canon_case *c)
{
    struct cordon_error err;
    cJSON *value = cJSON_Parse(c->input);
    char *text = NULL;
    int r;

    cordon_error_init(&err);
    cr_assert_not_null(value, "test input does not parse: %s", c->input);
    r = cordon__json_canonical(value, &text, &err);
    if (c->expected != NULL) {
        cr_assert_eq(r, 0, "%s: %s", c->input, err.message);
        cr_assert_str_eq(text, c->expected, "input %s", c->input);
    } else {
        cr_assert_eq(r, CORDON_E_INVALID, "%s: got %d", c->input, r);
        cr_assert_null(text);
        cr_assert(strstr(err.message, c->message) != NULL, "message \"%s\" lacks \"%s\"",
                  err.message, c->message);
    }
    free(text);
    cJSON_Delete(value);
}

static const struct canon_case accepts_and_orders_cases[] = {
    { "{\"b\":1,\"a\":2}", "{\"a\":2,\"b\":1}", NULL },
    { " { \"a\" : [ 1 , 2 , { \"d\" : null , \"c\" : true } ] } ",
      "{\"a\":[1,2,{\"c\":true,\"d\":null}]}", NULL },
    /* Byte order: upper case before lower case, prefixes first, UTF-8 last. */
    { "{\"b\":0,\"B\":0,\"a\":0,\"\xc3\xa9\":0,\"aa\":0}",
      "{\"B\":0,\"a\":0,\"aa\":0,\"b\":0,\"\xc3\xa9\":0}", NULL },
    { "{\"z\":{\"y\":{\"x\":[],\"w\":{}}},\"a\":false}",
      "{\"a\":false,\"z\":{\"y\":{\"w\":{},\"x\":[]}}}", NULL },
    { "\"a\\\"b\\\\c\"", "\"a\\\"b\\\\c\"", NULL },
    { "\"\\n\\t\\u0001\\u001f\"", "\"\\u000a\\u0009\\u0001\\u001f\"", NULL },
    { "\"\\/ \\u00e9\"", "\"/ \xc3\xa9\"", NULL },
    { "\"\xe2\x82\xac \xf0\x9f\x98\x80\"", "\"\xe2\x82\xac \xf0\x9f\x98\x80\"", NULL },
    { "\"\x7f\"", "\"\x7f\"", NULL },
    { "-0", "0", NULL },
    { "1e3", "1000", NULL },
    { "-42", "-42", NULL },
    { "9007199254740992", "9007199254740992", NULL },
    { "[true,false,null,\"\"]", "[true,false,null,\"\"]", NULL },
    { "{\"k\\u0000\":1}", "{\"k\":1}", NULL },
};

ParameterizedTestParameters(canonical, accepts_and_orders)
{
    INDEX_PARAMS(accepts_and_orders_cases);
}

ParameterizedTest(size_t *index, canonical, accepts_and_orders)
{
    const struct canon_case *c = &accepts_and_orders_cases[*index];
    check_case(c);
}

static const struct canon_case refuses_unstable_values_cases[] = {
    { "1.5", NULL, "not an integer" },
    { "-0.25", NULL, "not an integer" },
    { "[1,2.5]", NULL, "not an integer" },
    { "{\"a\":{\"b\":0.1}}", NULL, "not an integer" },
    { "1e300", NULL, "2^53" },
    { "9007199254740994", NULL, "2^53" },
    { "-9007199254740994", NULL, "2^53" },
    { "{\"a\":1,\"a\":2}", NULL, "appears twice" },
    { "{\"x\":{\"b\":1,\"c\":2,\"b\":3}}", NULL, "appears twice" },
    { "\"\xff\"", NULL, "not valid UTF-8" },
    { "\"\xc0\xaf\"", NULL, "not valid UTF-8" },             /* overlong "/" */
    { "\"\xed\xa0\x80\"", NULL, "not valid UTF-8" },         /* a surrogate */
    { "\"\xf4\x90\x80\x80\"", NULL, "not valid UTF-8" },     /* above U+10FFFF */
    { "\"ab\xe2\x82\"", NULL, "not valid UTF-8" },           /* cut short */
    { "{\"\xfe\":1}", NULL, "not valid UTF-8" },
};

ParameterizedTestParameters(canonical, refuses_unstable_values)
{
    INDEX_PARAMS(refuses_unstable_values_cases);
}

ParameterizedTest(size_t *index, canonical, refuses_unstable_values)
{
    const struct canon_case *c = &refuses_unstable_values_cases[*index];
    check_case(c);
}

Test(canonical, refuses_nesting_beyond_the_limit)
{
    struct cordon_error err;
    char text[2 * (CORDON_CANONICAL_MAX_DEPTH + 2) + 1];
    size_t depth = CORDON_CANONICAL_MAX_DEPTH + 1, o = 0;
    cJSON *value;
    char *out = NULL;

    for (size_t i = 0; i < depth; i++)
        text[o++] = '[';
    for (size_t i = 0; i < depth; i++)
        text[o++] = ']';
    text[o] = '\0';
    value = cJSON_Parse(text);
    cr_assert_not_null(value);
    cordon_error_init(&err);
    cr_assert_eq(cordon__json_canonical(value, &out, &err), CORDON_E_INVALID);
    cr_assert(strstr(err.message, "nesting") != NULL, "%s", err.message);
    cJSON_Delete(value);

    /* One level less is fine. */
    text[depth - 1] = ' ';
    text[depth] = ' ';
    value = cJSON_Parse(text);
    cr_assert_not_null(value);
    cr_assert_eq(cordon__json_canonical(value, &out, &err), 0, "%s", err.message);
    cr_assert_eq(strlen(out), 2 * (depth - 1));
    free(out);
    cJSON_Delete(value);
}

Test(canonical, refuses_raw_items_and_missing_arguments)
{
    struct cordon_error err;
    cJSON *raw = cJSON_CreateRaw("1.5");
    char *out = NULL;

    cordon_error_init(&err);
    cr_assert_eq(cordon__json_canonical(raw, &out, &err), CORDON_E_INVALID);
    cr_assert_null(out);
    cr_assert_eq(cordon__json_canonical(NULL, &out, &err), CORDON_E_INVALID);
    cr_assert_eq(cordon__json_canonical(raw, NULL, &err), CORDON_E_INVALID);
    cJSON_Delete(raw);
}

Test(canonical, same_meaning_gives_same_text)
{
    const char *a = "{\"files\":[{\"size\":3,\"path\":\"a\"}],\"language\":\"go\",\"args\":[]}";
    const char *b = "{ \"args\" : [ ], \"language\":\"go\",\n\"files\":[{\"path\":\"a\",\"size\":3.0}]}";
    struct cordon_error err;
    cJSON *x = cJSON_Parse(a), *y = cJSON_Parse(b);
    char *tx = NULL, *ty = NULL;

    cordon_error_init(&err);
    cr_assert_eq(cordon__json_canonical(x, &tx, &err), 0, "%s", err.message);
    cr_assert_eq(cordon__json_canonical(y, &ty, &err), 0, "%s", err.message);
    cr_assert_str_eq(tx, ty);
    cr_assert_str_eq(tx, "{\"args\":[],\"files\":[{\"path\":\"a\",\"size\":3}],\"language\":\"go\"}");
    free(tx);
    free(ty);
    cJSON_Delete(x);
    cJSON_Delete(y);
}

/* ---- the nesting bound every JSON entry point shares ----------------------- */

Test(json_depth, the_root_is_level_one_and_every_member_one_more)
{
    static const struct { const char *text; int depth; } cases[] = {
        { "1", 1 }, { "{}", 1 }, { "[[1]]", 3 }, { "{\"a\": {\"b\": []}}", 3 },
        /* the deepest path counts, wherever it is among its siblings */
        { "[1, [2, [3]], {}]", 4 }, { "[[[[0]]], 1]", 5 },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *v = cJSON_Parse(cases[i].text);

        cr_assert_not_null(v, "%s", cases[i].text);
        cr_expect(cordon__json_deeper_than(v, cases[i].depth - 1), "%s", cases[i].text);
        cr_expect(!cordon__json_deeper_than(v, cases[i].depth), "%s", cases[i].text);
        cJSON_Delete(v);
    }
    cr_expect(!cordon__json_deeper_than(NULL, 0));
}

/* arrays nested depth deep: "[[...]]" */
static char *nested(int depth)
{
    char *s = malloc((size_t)depth * 2 + 1);

    cr_assert_not_null(s);
    memset(s, '[', (size_t)depth);
    memset(s + depth, ']', (size_t)depth);
    s[depth * 2] = '\0';
    return s;
}

Test(json_depth, parse_bounded_takes_the_limit_and_refuses_one_more)
{
    struct cordon_error err;
    char *text = nested(CORDON_JSON_MAX_DEPTH);
    cJSON *v = NULL;

    cordon_error_init(&err);
    cr_assert_eq(cordon__json_parse_bounded("request", text, &v, &err), 0, "%s", err.message);
    cJSON_Delete(v);
    free(text);
    v = NULL;
    text = nested(CORDON_JSON_MAX_DEPTH + 1);
    cr_assert_eq(cordon__json_parse_bounded("request", text, &v, &err), CORDON_E_LIMIT);
    cr_assert_null(v);
    cr_assert(strstr(err.message, "request: JSON nested deeper than 32 levels") != NULL, "%s",
              err.message);
    free(text);
}
