/* Unit tests: provider candidates and per-candidate config (core/config.c). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "tests/unit/helpers.h"

static struct cordon_ctx *ctx_with(const char *config, char **state)
{
    struct cordon_ctx *ctx = test_ctx_open(config, state);
    cr_assert_not_null(ctx);
    return ctx;
}

Test(config, candidate_config_merges_over_base_for_that_candidate_only)
{
    char *state = NULL;
    struct cordon_ctx *ctx = ctx_with("{\"provider_configs\":{"
                                      "\"runc\":{\"image\":\"base\",\"nested\":{\"a\":1,\"b\":2}},"
                                      "\"docker\":{\"image\":\"base\",\"nested\":{\"a\":1,\"b\":2}}}}", &state);
    cJSON *list = cJSON_Parse("[{\"provider_id\":\"runc\",\"config\":{\"image\":\"mine\",\"nested\":{\"b\":3}}},"
                              "\"docker\"]");
    cJSON *over = cJSON_Parse("{\"allow_unsafe_local\":true}");
    struct cordon__candidate *c = NULL;
    size_t n = 0;

    cr_assert_eq(cordon__candidates_build(ctx, "providers", list, over, &c, &n, NULL), 0);
    cr_assert_eq(n, 2);
    cr_expect_str_eq(c[0].provider_id, "runc");
    cr_expect_eq(c[0].index, 0);
    cr_expect_str_eq(cJSON_GetObjectItem(c[0].config, "image")->valuestring, "mine");
    cr_expect_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(c[0].config, "nested"), "a")->valueint, 1);
    cr_expect_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(c[0].config, "nested"), "b")->valueint, 3);
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(c[0].config, "allow_unsafe_local")));
    cr_expect_str_eq(c[1].provider_id, "docker");
    cr_expect_str_eq(cJSON_GetObjectItem(c[1].config, "image")->valuestring, "base",
                     "runc's config must not leak into docker's");
    cr_expect_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(c[1].config, "nested"), "b")->valueint, 2);
    cordon__candidates_free(c, n);
    cJSON_Delete(list);
    cJSON_Delete(over);
    cordon_ctx_free(ctx);
    test_rmtree(state);
    free(state);
}

Test(config, config_file_list_then_installed)
{
    char *state = NULL;
    struct cordon_ctx *ctx = ctx_with("{\"providers\":[\"trusted-local\"]}", &state);
    struct cordon__candidate *c = NULL;
    size_t n = 0;

    cr_assert_eq(cordon__candidates_build(ctx, "providers", NULL, NULL, &c, &n, NULL), 0);
    cr_expect_eq(n, 1);
    cr_expect_str_eq(c[0].provider_id, "trusted-local");
    cordon__candidates_free(c, n);
    cordon_ctx_free(ctx);
    test_rmtree(state);
    free(state);

    ctx = ctx_with(NULL, &state);
    cr_assert_eq(cordon__candidates_build(ctx, "providers", NULL, NULL, &c, &n, NULL), 0);
    cr_expect_gt(n, 1, "every installed provider");
    for (size_t i = 1; i < n; i++)
        cr_expect_lt(strcmp(c[i - 1].provider_id, c[i].provider_id), 0, "name order");
    cordon__candidates_free(c, n);
    cordon_ctx_free(ctx);
    test_rmtree(state);
    free(state);
}

struct bad_list {
    const char *json;
    const char *needle;
};

/* Criterion workers are separate processes: parameters are indices
 * into this table, never pointers. */
static struct bad_list refuses_bad_candidates_cases[] = {
    { "[1]", "providers[0]: must be a provider id" },
    { "[\"ok\", null]", "providers[1]: must be a provider id" },
    { "[{\"provider_id\":\"x\",\"extra\":1}]", "providers[0]: unknown key \"extra\"" },
    { "[{\"provider_id\":7}]", "providers[0].provider_id: must be a string" },
    { "[{\"provider_id\":\"x\",\"config\":\"strict\"}]", "providers[0].config: must be an object" },
    { "[\"Docker\"]", "providers[0]: \"Docker\" is not a provider id" },
    { "[\"../evil\"]", "is not a provider id" },
    { "{\"provider_id\":\"x\"}", "providers: must be an array" },
};

ParameterizedTestParameters(config, refuses_bad_candidates)
{
    static size_t idx[sizeof(refuses_bad_candidates_cases) / sizeof(refuses_bad_candidates_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *at, config, refuses_bad_candidates)
{
    struct bad_list *c = &refuses_bad_candidates_cases[*at];
    char *state = NULL;
    struct cordon_ctx *ctx = ctx_with(NULL, &state);
    cJSON *list = cJSON_Parse(c->json);
    struct cordon__candidate *cands = NULL;
    struct cordon_error err;
    size_t n = 0;

    cordon_error_init(&err);
    cr_assert_not_null(list);
    cr_expect_eq(cordon__candidates_build(ctx, "providers", list, NULL, &cands, &n, &err), CORDON_E_INVALID);
    cr_expect(strstr(err.message, c->needle) != NULL, "\"%s\" lacks \"%s\"", err.message, c->needle);
    cr_expect_null(cands);
    cJSON_Delete(list);
    cordon_ctx_free(ctx);
    test_rmtree(state);
    free(state);
}

Test(config, too_many_candidates)
{
    char *state = NULL;
    struct cordon_ctx *ctx = ctx_with(NULL, &state);
    cJSON *list = cJSON_CreateArray();
    struct cordon__candidate *cands = NULL;
    struct cordon_error err;
    size_t n = 0;

    for (int i = 0; i < 65; i++)
        cJSON_AddItemToArray(list, cJSON_CreateString("x"));
    cordon_error_init(&err);
    cr_expect_eq(cordon__candidates_build(ctx, "providers", list, NULL, &cands, &n, &err), CORDON_E_LIMIT);
    cr_expect(strstr(err.message, "64") != NULL, "%s", err.message);
    cJSON_Delete(list);
    cordon_ctx_free(ctx);
    test_rmtree(state);
    free(state);
}

Test(config, config_file_must_be_an_object)
{
    char *state = test_mkdtemp(), *path = NULL;
    struct cordon_ctx_opts opts = { sizeof(opts), state, NULL, NULL, false };
    struct cordon_ctx *ctx = NULL;
    struct cordon_error err;

    cr_assert(asprintf(&path, "%s/c.json", state) > 0);
    test_write_file(path, "[1,2]", 5);
    opts.config_path = path;
    cordon_error_init(&err);
    cr_expect_eq(cordon_ctx_new(&opts, &ctx, &err), CORDON_E_INVALID);
    cr_expect(strstr(err.message, "must be a JSON object") != NULL, "%s", err.message);
    test_rmtree(state);
    free(path);
    free(state);
}
