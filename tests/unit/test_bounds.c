/* Unit tests of sdk/bounds.c: the rules host and providers share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <cordon/sdk/bounds.h>

/* Criterion runs each case in a fresh process where pointers taken in the
 * runner mean nothing: the parameters are indices into a static table. */
#define INDEX_PARAMS(table)                                                  \
    static size_t indices_[sizeof(table) / sizeof(table[0])];               \
    for (size_t i_ = 0; i_ < sizeof(indices_) / sizeof(indices_[0]); i_++) \
        indices_[i_] = i_;                                                   \
    return cr_make_param_array(size_t, indices_, sizeof(indices_) / sizeof(indices_[0]))

Test(bounds, limit_keys_are_the_six_in_spec_order)
{
    static const char *const want[] = { "cpus", "memory_bytes", "disk_bytes", "pids",
                                        "runtime_ms", "max_output_bytes" };

    for (size_t i = 0; i < CORDON_LIMIT_KEYS_COUNT; i++)
        cr_expect_str_eq(cordon_limit_keys[i], want[i]);
    cr_expect_null(cordon_limit_keys[CORDON_LIMIT_KEYS_COUNT]);
}

/* ---- execution ids ------------------------------------------------------- */

Test(bounds, execution_id_grammar)
{
    static const char *const good[] = { "a", "Z", "0", "exec-0123", "run-12-ab", "a_b.c-d",
        "0123456789012345678901234567890123456789012345678901234567890123" };
    static const char *const bad[] = { "", "-a", "_a", ".a", "a/b", "a b", "../x", "a\n",
        "é", "01234567890123456789012345678901234567890123456789012345678901234" };

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        cr_expect(cordon_execution_id_valid(good[i]), "%s", good[i]);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_not(cordon_execution_id_valid(bad[i]), "%s", bad[i]);
    cr_expect_not(cordon_execution_id_valid(NULL));
}

Test(bounds, execution_id_check_names_field_and_grammar)
{
    struct cordon_error err;

    cordon_error_init(&err);
    cr_assert_eq(cordon_execution_id_check("state.execution_id", "a/b", &err), CORDON_E_INVALID);
    cr_expect_str_eq(err.message,
                     "state.execution_id: \"a/b\" must match [A-Za-z0-9][A-Za-z0-9_.-]{0,63}");
    cordon_error_init(&err);
    cr_assert_eq(cordon_execution_id_check("execution_id", NULL, &err), CORDON_E_INVALID);
    cr_expect(strstr(err.message, "execution_id: \"\"") != NULL, "%s", err.message);
    cr_expect_eq(cordon_execution_id_check("execution_id", "ok-1", NULL), 0);
}

/* ---- environments -------------------------------------------------------- */

Test(bounds, env_name_grammar)
{
    char longest[CORDON_ENV_NAME_MAX + 2];

    cr_expect(cordon_env_name_valid("PATH"));
    cr_expect(cordon_env_name_valid("_x9"));
    cr_expect_not(cordon_env_name_valid(""));
    cr_expect_not(cordon_env_name_valid(NULL));
    cr_expect_not(cordon_env_name_valid("9X"));
    cr_expect_not(cordon_env_name_valid("A-B"));
    cr_expect_not(cordon_env_name_valid("A=B"));
    memset(longest, 'A', CORDON_ENV_NAME_MAX);
    longest[CORDON_ENV_NAME_MAX] = '\0';
    cr_expect(cordon_env_name_valid(longest));
    longest[CORDON_ENV_NAME_MAX] = 'A';
    longest[CORDON_ENV_NAME_MAX + 1] = '\0';
    cr_expect_not(cordon_env_name_valid(longest));
}

struct env_case {
    const char *json;
    int code;
    const char *message;   /* part of the refusal's message */
};

static const struct env_case env_cases[] = {
    { "{}", 0, NULL },
    { "{\"A\":\"1\",\"_b\":\"\"}", 0, NULL },
    { "[]", CORDON_E_INVALID, "env: must be an object of strings" },
    { "\"A=1\"", CORDON_E_INVALID, "env: must be an object of strings" },
    { "{\"9A\":\"1\"}", CORDON_E_INVALID, "env: name \"9A\" must match [A-Za-z_][A-Za-z0-9_]* (at most 256 bytes)" },
    { "{\"A-B\":\"1\"}", CORDON_E_INVALID, "env: name \"A-B\" must match" },
    { "{\"A\":1}", CORDON_E_INVALID, "env.A: must be a string of at most 131072 bytes" },
    { "{\"A\":null}", CORDON_E_INVALID, "env.A: must be a string of at most 131072 bytes" },
};

ParameterizedTestParameters(bounds, env_object_check)
{
    INDEX_PARAMS(env_cases);
}

ParameterizedTest(size_t *index, bounds, env_object_check)
{
    const struct env_case *c = &env_cases[*index];
    cJSON *doc = cJSON_Parse(c->json);
    struct cordon_error err;
    int r;

    cr_assert_not_null(doc, "%s", c->json);
    cordon_error_init(&err);
    r = cordon_env_object_check(doc, "env", &err);
    cJSON_Delete(doc);
    cr_assert_eq(r, c->code, "%s: %d (%s)", c->json, r, err.message);
    if (c->message != NULL)
        cr_expect(strstr(err.message, c->message) != NULL, "%s: %s", c->json, err.message);
}

Test(bounds, env_object_check_bounds_entries_and_values)
{
    cJSON *doc = cJSON_CreateObject();
    struct cordon_error err;
    char name[16], *big = malloc(CORDON_ARG_BYTES_MAX + 2);

    cr_assert(doc != NULL && big != NULL);
    for (int i = 0; i < CORDON_ENV_MAX; i++) {
        snprintf(name, sizeof(name), "V%d", i);
        cJSON_AddStringToObject(doc, name, "x");
    }
    cr_expect_eq(cordon_env_object_check(doc, "environment", NULL), 0);
    cJSON_AddStringToObject(doc, "ONE_MORE", "x");
    cordon_error_init(&err);
    cr_expect_eq(cordon_env_object_check(doc, "environment", &err), CORDON_E_LIMIT);
    cr_expect_str_eq(err.message, "environment: more than 128 entries");
    cJSON_Delete(doc);

    memset(big, 'x', CORDON_ARG_BYTES_MAX + 1);
    big[CORDON_ARG_BYTES_MAX + 1] = '\0';
    doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "BIG", big);
    cordon_error_init(&err);
    cr_expect_eq(cordon_env_object_check(doc, "environment", &err), CORDON_E_INVALID);
    cr_expect_str_eq(err.message, "environment.BIG: must be a string of at most 131072 bytes");
    cJSON_Delete(doc);
    free(big);
}

/* ---- a resources object -------------------------------------------------- */

#define GOOD_RES "\"cpus\":0.5,\"memory_bytes\":268435456,\"disk_bytes\":67108864,\"pids\":64," \
                 "\"runtime_ms\":60000,\"max_output_bytes\":1048576"

static const struct env_case limits_cases[] = {
    { "{" GOOD_RES "}", 0, NULL },
    { "null", CORDON_E_INVALID, "state.resources: required, an object with cpus, memory_bytes" },
    { "[]", CORDON_E_INVALID, "state.resources: must be a JSON object" },
    { "{" GOOD_RES ",\"gpus\":1}", CORDON_E_INVALID, "state.resources.gpus: unknown key" },
    { "{" GOOD_RES ",\"pids\":64}", CORDON_E_INVALID, "state.resources.pids: appears twice" },
    { "{\"cpus\":1}", CORDON_E_INVALID, "state.resources.memory_bytes: required" },
    { "{\"cpus\":\"1\",\"memory_bytes\":268435456,\"disk_bytes\":67108864,\"pids\":64,"
      "\"runtime_ms\":60000,\"max_output_bytes\":1048576}", CORDON_E_INVALID,
      "state.resources.cpus: must be a positive number >= 0" },
    { "{\"cpus\":1,\"memory_bytes\":1.5,\"disk_bytes\":67108864,\"pids\":64,"
      "\"runtime_ms\":60000,\"max_output_bytes\":1048576}", CORDON_E_INVALID,
      "state.resources.memory_bytes: must be a whole number >= 0" },
    { "{\"cpus\":1,\"memory_bytes\":-1,\"disk_bytes\":67108864,\"pids\":64,"
      "\"runtime_ms\":60000,\"max_output_bytes\":1048576}", CORDON_E_INVALID,
      "state.resources.memory_bytes: must be a whole number >= 0" },
    { "{\"cpus\":1,\"memory_bytes\":268435456,\"disk_bytes\":67108864,\"pids\":4,"
      "\"runtime_ms\":60000,\"max_output_bytes\":1048576}", CORDON_E_LIMIT,
      "state.resources.pids: 4 is below the minimum 8" },
    { "{\"cpus\":500,\"memory_bytes\":268435456,\"disk_bytes\":67108864,\"pids\":64,"
      "\"runtime_ms\":60000,\"max_output_bytes\":1048576}", CORDON_E_LIMIT,
      "state.resources.cpus: 500 exceeds the maximum 128" },
};

ParameterizedTestParameters(bounds, limits_from_json)
{
    INDEX_PARAMS(limits_cases);
}

ParameterizedTest(size_t *index, bounds, limits_from_json)
{
    const struct env_case *c = &limits_cases[*index];
    cJSON *doc = cJSON_Parse(c->json), *back;
    struct cordon_limits l, again;
    struct cordon_error err;
    int r;

    cr_assert_not_null(doc, "%s", c->json);
    cordon_error_init(&err);
    memset(&l, 0xa5, sizeof(l));
    r = cordon_limits_from_json(cJSON_IsNull(doc) ? NULL : doc, "state.resources", &l, &err);
    cJSON_Delete(doc);
    cr_assert_eq(r, c->code, "%s: %d (%s)", c->json, r, err.message);
    if (c->message != NULL) {
        cr_expect(strstr(err.message, c->message) != NULL, "%s: %s", c->json, err.message);
        return;
    }
    /* A good one round-trips exactly. */
    back = cordon_limits_to_json(&l);
    cr_assert_not_null(back);
    cr_assert_eq(cordon_limits_from_json(back, "resources", &again, &err), 0, "%s", err.message);
    cJSON_Delete(back);
    cr_expect(memcmp(&l, &again, sizeof(l)) == 0);
    cr_expect_eq(l.cpus, 0.5);
    cr_expect_eq(l.pids, 64);
}

Test(bounds, limits_add_puts_the_object_under_its_key)
{
    const struct cordon_limits l = { 0.5, 256u << 20, 64u << 20, 64, 1000, 4096 };
    struct cordon_limits back;
    struct cordon_error err;
    cJSON *st = cJSON_CreateObject();

    cordon_error_init(&err);
    cr_assert(cordon_limits_add(st, "resources", &l));
    cr_assert_eq(cordon_limits_from_json(cJSON_GetObjectItem(st, "resources"), "resources", &back,
                                         &err), 0, "%s", err.message);
    cr_expect(memcmp(&back, &l, sizeof(l)) == 0, "what was added reads back the same");
    cr_expect_not(cordon_limits_add(NULL, "resources", &l));
    cr_expect_not(cordon_limits_add(st, NULL, &l));
    cr_expect_eq(cJSON_GetArraySize(st), 1);
    cJSON_Delete(st);
}
