/* Unit tests: environment validation (core/env.c). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

#include "core/env.h"

struct env_case {
    const char *json;
    int code;            /* 0 = accepted */
    const char *needle;  /* in the message */
};

/* Criterion workers are separate processes: parameters are indices
 * into this table, never pointers. */
static struct env_case validate_cases[] = {
    { "{}", 0, NULL },
    { "{\"LANG\":\"C\",\"_X1\":\"y\",\"MODE\":\"\"}", 0, NULL },
    { "{\"GITHUB_TOKEN\":\"x\"}", CORDON_E_DENIED, "GITHUB_TOKEN" },
    { "{\"api_key\":\"x\"}", CORDON_E_DENIED, "credential" },
    { "{\"ApiKey\":\"x\"}", CORDON_E_DENIED, "ApiKey" },
    { "{\"AWS_SECRET_ACCESS_KEY\":\"x\"}", CORDON_E_DENIED, "AWS_SECRET_ACCESS_KEY" },
    { "{\"DB_PASSWORD\":\"x\"}", CORDON_E_DENIED, "DB_PASSWORD" },
    { "{\"MYSQL_PASSWD\":\"x\"}", CORDON_E_DENIED, "MYSQL_PASSWD" },
    { "{\"SSH_PRIVATE_KEY\":\"x\"}", CORDON_E_DENIED, "SSH_PRIVATE_KEY" },
    { "{\"GOOGLE_APPLICATION_CREDENTIALS\":\"x\"}", CORDON_E_DENIED, "GOOGLE_APPLICATION_CREDENTIALS" },
    { "{\"AccessKeyId\":\"x\"}", CORDON_E_DENIED, "AccessKeyId" },
    { "{\"1ABC\":\"x\"}", CORDON_E_INVALID, "1ABC" },
    { "{\"A-B\":\"x\"}", CORDON_E_INVALID, "A-B" },
    { "{\"\":\"x\"}", CORDON_E_INVALID, "must match" },
    { "{\"A\":1}", CORDON_E_INVALID, "must be a string" },
    { "[\"A=1\"]", CORDON_E_INVALID, "must be an object" },
    { "\"A=1\"", CORDON_E_INVALID, "must be an object" },
};

ParameterizedTestParameters(env, validate)
{
    static size_t idx[sizeof(validate_cases) / sizeof(validate_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *at, env, validate)
{
    struct env_case *c = &validate_cases[*at];
    cJSON *env = cJSON_Parse(c->json);
    struct cordon_error err;
    int r;

    cordon_error_init(&err);
    cr_assert_not_null(env);
    r = cordon__env_validate("environment", env, &err);
    cr_expect_eq(r, c->code, "%s: got %d (%s)", c->json, r, err.message);
    if (c->needle != NULL)
        cr_expect(strstr(err.message, c->needle) != NULL, "%s: message \"%s\" lacks \"%s\"", c->json,
                  err.message, c->needle);
    cJSON_Delete(env);
}

Test(env, too_many_entries)
{
    cJSON *env = cJSON_CreateObject();
    struct cordon_error err;

    for (int i = 0; i <= CORDON_ENV_MAX; i++) {
        char name[16];
        snprintf(name, sizeof(name), "V%d", i);
        cJSON_AddStringToObject(env, name, "x");
    }
    cordon_error_init(&err);
    cr_expect_eq(cordon__env_validate("environment", env, &err), CORDON_E_LIMIT);
    cr_expect(strstr(err.message, "128") != NULL, "%s", err.message);
    cJSON_Delete(env);
}

Test(env, ordinary_names_are_not_credentials)
{
    static const char *const names[] = { "PATH", "HOME", "TOKENIZERS_PARALLELISM_OFF", "LANG", "KEYBOARD",
                                         "SECRETARY_NAME" };
    /* "TOKENIZERS..." and "SECRETARY" contain the words: cordon errs on the safe side. */
    cr_expect(!cordon__env_name_is_credential(names[0]));
    cr_expect(!cordon__env_name_is_credential(names[1]));
    cr_expect(cordon__env_name_is_credential(names[2]));
    cr_expect(!cordon__env_name_is_credential(names[3]));
    cr_expect(!cordon__env_name_is_credential(names[4]));
    cr_expect(cordon__env_name_is_credential(names[5]));
}

/* The host's value bound is its own policy below the sdk's: a value past
 * it is a limit the host names; one past the sdk's is the sdk's refusal. */
Test(env, value_bounds_host_then_sdk)
{
    static const struct { size_t len; int code; const char *message; } cases[] = {
        { CORDON_ENV_HOST_VALUE_MAX, 0, "" },
        { CORDON_ENV_HOST_VALUE_MAX + 1, CORDON_E_LIMIT, "environment.BIG: value longer than 32768 bytes" },
        { CORDON_ARG_BYTES_MAX + 1, CORDON_E_INVALID,
          "environment.BIG: must be a string of at most 131072 bytes" },
    };

    cr_assert_eq(CORDON_ENV_HOST_VALUE_MAX, 32u << 10);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *value = malloc(cases[i].len + 1);
        cJSON *env = cJSON_CreateObject();
        struct cordon_error err;

        cr_assert_not_null(value);
        memset(value, 'v', cases[i].len);
        value[cases[i].len] = '\0';
        cJSON_AddStringToObject(env, "BIG", value);
        cordon_error_init(&err);
        cr_expect_eq(cordon__env_validate("environment", env, &err), cases[i].code, "%zu: %s",
                     cases[i].len, err.message);
        cr_expect_str_eq(err.message, cases[i].message, "%zu", cases[i].len);
        cJSON_Delete(env);
        free(value);
    }
}
