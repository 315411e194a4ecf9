/* Unit tests of sdk/request.c: the exec request read and written once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <cordon/sdk/request.h>

/* Criterion runs each case in a fresh process where pointers taken in the
 * runner mean nothing: the parameters are indices into a static table. */
#define INDEX_PARAMS(table)                                                  \
    static size_t indices_[sizeof(table) / sizeof(table[0])];               \
    for (size_t i_ = 0; i_ < sizeof(indices_) / sizeof(indices_[0]); i_++) \
        indices_[i_] = i_;                                                   \
    return cr_make_param_array(size_t, indices_, sizeof(indices_) / sizeof(indices_[0]))

struct request_case {
    const char *json;
    int code;              /* 0 or the expected CORDON_E_* */
    const char *message;   /* the refusal names the field and the limit */
};

static const struct request_case request_cases[] = {
    { "{\"argv\":[\"id\"]}", 0, NULL },
    { "{\"argv\":[\"sh\",\"-c\",\"\"],\"cwd\":\"a/./b/\",\"env\":{\"A\":\"1\"},"
      "\"workspace_env\":{\"HOME\":\"build/home\"},\"timeout_ms\":5000,\"future\":true}", 0, NULL },
    { "{\"argv\":[\"id\"],\"cwd\":null,\"env\":null,\"workspace_env\":null,\"timeout_ms\":null}", 0,
      NULL },
    /* bad input: as many rows as good, and more */
    { "", CORDON_E_INVALID, "request" },
    { "{\"argv\": [", CORDON_E_INVALID, "request" },
    { "[]", CORDON_E_INVALID, "request" },
    { "{}", CORDON_E_INVALID, "argv: required, an array of 1 to 256 strings" },
    { "{\"argv\":\"id\"}", CORDON_E_INVALID, "argv: required, an array of 1 to 256 strings" },
    { "{\"argv\":[]}", CORDON_E_INVALID, "argv: required, an array of 1 to 256 strings" },
    { "{\"argv\":[\"id\",3]}", CORDON_E_INVALID, "argv[1]: must be a string" },
    { "{\"argv\":[\"\"]}", CORDON_E_INVALID, "argv[0]: must not be empty" },
    { "{\"argv\":[\"id\"],\"cwd\":7}", CORDON_E_INVALID, "cwd: must be a string" },
    { "{\"argv\":[\"id\"],\"cwd\":\"../..\"}", CORDON_E_UNSAFE, "cwd" },
    { "{\"argv\":[\"id\"],\"cwd\":\"/tmp\"}", CORDON_E_UNSAFE, "cwd" },
    { "{\"argv\":[\"id\"],\"env\":[]}", CORDON_E_INVALID, "env: must be an object of strings" },
    { "{\"argv\":[\"id\"],\"env\":{\"1A\":\"x\"}}", CORDON_E_INVALID,
      "env: name \"1A\" must match [A-Za-z_][A-Za-z0-9_]* (at most 256 bytes)" },
    { "{\"argv\":[\"id\"],\"env\":{\"A\":2}}", CORDON_E_INVALID,
      "env.A: must be a string of at most 131072 bytes" },
    { "{\"argv\":[\"id\"],\"env\":{\"A\":\"1\",\"A\":\"2\"}}", CORDON_E_INVALID,
      "env.A: appears twice" },
    { "{\"argv\":[\"id\"],\"workspace_env\":{\"HOME\":\"../out\"}}", CORDON_E_UNSAFE,
      "workspace_env.HOME" },
    { "{\"argv\":[\"id\"],\"workspace_env\":{\"HOME\":\"/abs\"}}", CORDON_E_UNSAFE,
      "workspace_env.HOME" },
    { "{\"argv\":[\"id\"],\"workspace_env\":{\"HOME\":1}}", CORDON_E_INVALID,
      "workspace_env.HOME: must be a string" },
    { "{\"argv\":[\"id\"],\"timeout_ms\":-1}", CORDON_E_INVALID, "timeout_ms" },
    { "{\"argv\":[\"id\"],\"timeout_ms\":1.5}", CORDON_E_INVALID, "timeout_ms" },
    { "{\"argv\":[\"id\"],\"timeout_ms\":\"5s\"}", CORDON_E_INVALID, "timeout_ms" },
    { "{\"argv\":[\"id\"],\"timeout_ms\":1e300}", CORDON_E_INVALID, "timeout_ms" },
};

ParameterizedTestParameters(request, parse)
{
    INDEX_PARAMS(request_cases);
}

ParameterizedTest(size_t *index, request, parse)
{
    const struct request_case *c = &request_cases[*index];
    struct cordon_exec_request rq, again;
    struct cordon_error err;
    char *text = NULL, *text2 = NULL;
    int r;

    cordon_error_init(&err);
    cordon_exec_request_init(&rq);
    r = cordon_exec_request_parse(c->json, &rq, &err);
    cr_assert_eq(r, c->code, "%s: %d (%s)", c->json, r, err.message);
    if (r < 0) {
        cr_expect(strstr(err.message, c->message) != NULL, "%s: \"%s\" lacks \"%s\"", c->json,
                  err.message, c->message);
        cr_expect_null(rq.argv, "a refused request leaves the result alone");
        return;
    }
    /* parse -> print -> parse -> print is a fixed point. */
    cr_assert_eq(cordon_exec_request_print(&rq, &text, &err), 0, "%s", err.message);
    cordon_exec_request_init(&again);
    cr_assert_eq(cordon_exec_request_parse(text, &again, &err), 0, "%s", err.message);
    cr_assert_eq(cordon_exec_request_print(&again, &text2, &err), 0, "%s", err.message);
    cr_expect_str_eq(text, text2);
    cr_expect_eq(again.argc, rq.argc);
    cr_expect_null(again.argv[again.argc]);
    free(text);
    free(text2);
    cordon_exec_request_clear(&again);
    cordon_exec_request_clear(&rq);
}

Test(request, fields_are_normalised)
{
    struct cordon_exec_request rq;
    struct cordon_error err;

    cordon_error_init(&err);
    cordon_exec_request_init(&rq);
    cr_assert_eq(cordon_exec_request_parse(
                     "{\"argv\":[\"sh\",\"-c\",\"x\"],\"cwd\":\"./a//b/\",\"env\":{\"PATH\":\"/bin\"},"
                     "\"workspace_env\":{\"HOME\":\"build/./home/\",\"ROOT\":\".\"},\"timeout_ms\":42}",
                     &rq, &err), 0, "%s", err.message);
    cr_expect_eq(rq.argc, 3);
    cr_expect_str_eq(rq.argv[2], "x");
    cr_expect_str_eq(rq.cwd, "a/b");
    cr_expect_str_eq(cordon_env_get(&rq.env, "PATH"), "/bin");
    cr_expect_str_eq(cordon_env_get(&rq.workspace_env, "HOME"), "build/home");
    cr_expect_str_eq(cordon_env_get(&rq.workspace_env, "ROOT"), "");
    cr_expect_eq(rq.timeout_ms, 42);
    cordon_exec_request_clear(&rq);
    cr_assert_eq(cordon_exec_request_parse("{\"argv\":[\"id\"]}", &rq, &err), 0);
    cr_expect_str_eq(rq.cwd, "");
    cr_expect_eq(rq.env.n, 0);
    cr_expect_eq(rq.timeout_ms, 0);
    cordon_exec_request_clear(&rq);
    cordon_exec_request_clear(NULL);
}

/* {"argv": [n copies of "a"]} */
static char *argv_of(size_t n, size_t arg_len)
{
    size_t size = 16 + n * (arg_len + 3);
    char *text = malloc(size), *p = text;

    cr_assert_not_null(text);
    p += sprintf(p, "{\"argv\":[");
    for (size_t i = 0; i < n; i++) {
        *p++ = i ? ',' : ' ';
        *p++ = '"';
        memset(p, 'a', arg_len);
        p += arg_len;
        *p++ = '"';
    }
    strcpy(p, "]}");
    return text;
}

Test(request, argv_bounds_name_the_limit)
{
    struct cordon_exec_request rq;
    struct cordon_error err;
    char *text;

    cordon_exec_request_init(&rq);
    text = argv_of(CORDON_ARGV_MAX, 1);
    cr_expect_eq(cordon_exec_request_parse(text, &rq, NULL), 0);
    cordon_exec_request_clear(&rq);
    free(text);
    text = argv_of(CORDON_ARGV_MAX + 1, 1);
    cordon_error_init(&err);
    cr_expect_eq(cordon_exec_request_parse(text, &rq, &err), CORDON_E_LIMIT);
    cr_expect_str_eq(err.message, "argv: 257 entries exceed the limit of 256");
    free(text);
    text = argv_of(1, CORDON_ARG_BYTES_MAX + 1);
    cordon_error_init(&err);
    cr_expect_eq(cordon_exec_request_parse(text, &rq, &err), CORDON_E_LIMIT);
    cr_expect_str_eq(err.message, "argv[0]: 131073 bytes exceed the limit of 131072");
    free(text);
    /* Ten arguments of 128 KiB: each fits, together they do not. */
    text = argv_of(10, CORDON_ARG_BYTES_MAX);
    cordon_error_init(&err);
    cr_expect_eq(cordon_exec_request_parse(text, &rq, &err), CORDON_E_LIMIT);
    cr_expect_str_eq(err.message,
                     "argv and env: 1310730 bytes together exceed the limit of 1048576");
    free(text);
    cr_expect_null(rq.argv);
}

Test(request, print_refuses_what_parse_refuses)
{
    struct cordon_exec_request rq;
    struct cordon_error err;
    char *text = NULL;

    cordon_error_init(&err);
    cordon_exec_request_init(&rq);
    /* no argv */
    cr_expect_eq(cordon_exec_request_print(&rq, &text, &err), CORDON_E_INVALID);
    cr_expect(strstr(err.message, "argv: required") != NULL, "%s", err.message);
    cr_assert_eq(cordon_exec_request_add_arg(&rq, "id", &err), 0);
    rq.cwd = strdup("../up");
    cordon_error_init(&err);
    cr_expect_eq(cordon_exec_request_print(&rq, &text, &err), CORDON_E_UNSAFE);
    cr_expect(strstr(err.message, "cwd") != NULL, "%s", err.message);
    free(rq.cwd);
    rq.cwd = NULL;
    rq.timeout_ms = 1ull << 60;
    cordon_error_init(&err);
    cr_expect_eq(cordon_exec_request_print(&rq, &text, &err), CORDON_E_INVALID);
    cr_expect(strstr(err.message, "timeout_ms") != NULL, "%s", err.message);
    cr_expect_null(text);
    rq.timeout_ms = 10;
    cr_assert_eq(cordon_exec_request_print(&rq, &text, &err), 0, "%s", err.message);
    cr_expect_str_eq(text,
                     "{\"argv\":[\"id\"],\"cwd\":\"\",\"env\":{},\"workspace_env\":{},\"timeout_ms\":10}");
    free(text);
    cordon_exec_request_clear(&rq);
}

Test(request, env_set_replaces_and_bounds)
{
    struct cordon_env env;
    struct cordon_error err;
    char name[16];

    cordon_env_init(&env);
    cr_assert_eq(cordon_env_set(&env, "A", "1", NULL), 0);
    cr_assert_eq(cordon_env_set(&env, "A", "2", NULL), 0);
    cr_expect_eq(env.n, 1);
    cr_expect_str_eq(cordon_env_get(&env, "A"), "2");
    cr_expect_null(cordon_env_get(&env, "B"));
    cordon_error_init(&err);
    cr_expect_eq(cordon_env_set(&env, "A=B", "1", &err), CORDON_E_INVALID);
    cr_expect(strstr(err.message, "must match") != NULL, "%s", err.message);
    for (int i = 1; i < CORDON_ENV_MAX; i++) {
        snprintf(name, sizeof(name), "V%d", i);
        cr_assert_eq(cordon_env_set(&env, name, "x", NULL), 0);
    }
    cordon_error_init(&err);
    cr_expect_eq(cordon_env_set(&env, "ONE_MORE", "x", &err), CORDON_E_LIMIT);
    cr_expect_str_eq(err.message, "env: more than 128 entries");
    cordon_env_clear(&env);
    cr_expect_eq(env.n, 0);
    cordon_env_clear(NULL);
}

Test(request, env_as_envp)
{
    struct cordon_env env;
    struct cordon_error err;
    char **envp;

    cordon_env_init(&env);
    cordon_error_init(&err);
    envp = cordon_env_envp(&env);
    cr_assert_not_null(envp);
    cr_expect_null(envp[0], "an empty environment is an empty envp");
    free(envp);
    cr_assert_eq(cordon_env_set(&env, "PATH", "/bin", &err), 0);
    cr_assert_eq(cordon_env_set(&env, "A", "", &err), 0);
    cr_assert_eq(cordon_env_set(&env, "PATH", "/usr/bin:/bin", &err), 0);
    envp = cordon_env_envp(&env);
    cr_assert_not_null(envp);
    /* document order, a name set again keeps its place with the new value */
    cr_expect_str_eq(envp[0], "PATH=/usr/bin:/bin");
    cr_expect_str_eq(envp[1], "A=");
    cr_expect_null(envp[2]);
    free(envp);   /* one block */
    cordon_env_clear(&env);
    envp = cordon_env_envp(NULL);
    cr_assert_not_null(envp);
    cr_expect_null(envp[0]);
    free(envp);
}

/* ---- the exec result ------------------------------------------------------ */

static const struct cordon_host_v1 result_host = { .abi_version = CORDON_ABI_VERSION,
                                                   .struct_size = sizeof(result_host),
                                                   .alloc = malloc, .free = free };

struct result_case {
    const char *json;
    int code;              /* 0 or CORDON_E_INVALID */
    const char *message;   /* the refusal names the key */
    const char *printed;   /* what it prints back, when accepted */
};

static const struct result_case result_cases[] = {
    { "{\"status\":\"exited\",\"exit_code\":3}", 0, NULL, "{\"status\":\"exited\",\"exit_code\":3}" },
    { "{\"status\":\"signaled\",\"signal\":9}", 0, NULL, "{\"status\":\"signaled\",\"signal\":9}" },
    { "{\"status\":\"oom\"}", 0, NULL, "{\"status\":\"oom\"}" },
    { "{\"status\":\"cancelled\",\"future\":1}", 0, NULL, "{\"status\":\"cancelled\"}" },
    { "{\"status\":\"exited\",\"exit_code\":137,\"signal_folded\":true}", 0, NULL,
      "{\"status\":\"exited\",\"exit_code\":137,\"signal_folded\":true}" },
    /* a fold claimed where no signal could give that code is dropped */
    { "{\"status\":\"exited\",\"exit_code\":2,\"signal_folded\":true}", 0, NULL,
      "{\"status\":\"exited\",\"exit_code\":2}" },
    { "{\"status\":\"signaled\",\"signal\":9,\"backstop_timeout\":true}", 0, NULL,
      "{\"status\":\"signaled\",\"signal\":9,\"backstop_timeout\":true}" },
    /* the provider ended the whole execution to end the command */
    { "{\"status\":\"cancelled\",\"execution_ended\":true}", 0, NULL,
      "{\"status\":\"cancelled\",\"execution_ended\":true}" },
    { "{\"status\":\"cancelled\",\"execution_ended\":1}", 0, NULL, "{\"status\":\"cancelled\"}" },
    /* optional keys are read leniently, as the host always has */
    { "{\"status\":\"oom\",\"signal\":9}", 0, NULL, "{\"status\":\"oom\",\"signal\":9}" },
    { "{\"status\":\"oom\",\"signal\":0,\"backstop_timeout\":\"yes\"}", 0, NULL,
      "{\"status\":\"oom\"}" },
    { "{\"status\":\"exited\",\"exit_code\":255,\"signal\":0,\"signal_folded\":1}", 0,
      NULL, "{\"status\":\"exited\",\"exit_code\":255}" },
    /* bad input */
    { "", CORDON_E_INVALID, "result_json", NULL },
    { "[]", CORDON_E_INVALID, "result_json", NULL },
    { "{}", CORDON_E_INVALID, "result_json.status: missing or unknown", NULL },
    { "{\"status\":\"done\"}", CORDON_E_INVALID, "result_json.status", NULL },
    { "{\"status\":\"exited\"}", CORDON_E_INVALID, "result_json.exit_code", NULL },
    { "{\"status\":\"exited\",\"exit_code\":256}", CORDON_E_INVALID, "result_json.exit_code", NULL },
    { "{\"status\":\"exited\",\"exit_code\":1.5}", CORDON_E_INVALID, "result_json.exit_code", NULL },
    { "{\"status\":\"signaled\"}", CORDON_E_INVALID, "result_json.signal", NULL },
    { "{\"status\":\"signaled\",\"signal\":65}", CORDON_E_INVALID, "result_json.signal", NULL },
    { "{\"status\":\"signaled\",\"signal\":0}", CORDON_E_INVALID, "result_json.signal", NULL },
    { "{\"status\":\"exited\",\"exit_code\":1.5,\"signal\":9}", CORDON_E_INVALID,
      "result_json.exit_code", NULL },
};

ParameterizedTestParameters(request, result_parse)
{
    INDEX_PARAMS(result_cases);
}

ParameterizedTest(size_t *index, request, result_parse)
{
    const struct result_case *c = &result_cases[*index];
    struct cordon_exec_result res = { .exit_code = 77 };
    struct cordon_error err;
    char *text = NULL;
    int r;

    cordon_error_init(&err);
    r = cordon_exec_result_parse(c->json, &res, &err);
    cr_assert_eq(r, c->code, "%s: %d (%s)", c->json, r, err.message);
    if (r < 0) {
        cr_expect(strstr(err.message, c->message) != NULL, "%s: \"%s\" lacks \"%s\"", c->json,
                  err.message, c->message);
        cr_expect_eq(res.exit_code, 77, "a refused result leaves the struct alone");
        return;
    }
    cr_assert_eq(cordon_exec_result_print_host(&result_host, &res, &text, &err), 0, "%s",
                 err.message);
    cr_expect_str_eq(text, c->printed);
    free(text);
}

Test(request, result_print_refuses_what_parse_refuses)
{
    struct cordon_exec_result res = { CORDON_RUN_EXITED, 300, 0, false, false, false };
    struct cordon_error err;
    char *text = NULL;

    cordon_error_init(&err);
    cr_expect_eq(cordon_exec_result_print_host(&result_host, &res, &text, &err), CORDON_E_INVALID);
    cr_expect(strstr(err.message, "result_json.exit_code") != NULL, "%s", err.message);
    cr_expect_null(text);
    res = (struct cordon_exec_result){ CORDON_RUN_SIGNALED, 0, 0, false, false, false };
    cr_expect_eq(cordon_exec_result_print_host(&result_host, &res, &text, &err), CORDON_E_INVALID);
    cr_expect_null(text);
    cr_expect_eq(cordon_exec_result_print_host(NULL, &res, &text, &err), CORDON_E_INVALID);
}

Test(request, result_from_outcome)
{
    struct cordon_exec_outcome o = { .status = CORDON_RUN_TIMEOUT, .exit_code = -1, .signal = 9 };
    struct cordon_exec_result res;
    struct cordon_error err;

    cordon_error_init(&err);
    cr_assert_eq(cordon_exec_result_from_outcome(&o, &res, &err), 0);
    cr_expect_eq(res.status, CORDON_RUN_SIGNALED, "the backstop's kill is a signal");
    cr_expect_eq(res.signal, 9);
    cr_expect(res.backstop_timeout);
    o = (struct cordon_exec_outcome){ .status = CORDON_RUN_EXITED, .exit_code = 4 };
    cr_assert_eq(cordon_exec_result_from_outcome(&o, &res, &err), 0);
    cr_expect_eq(res.exit_code, 4);
    cr_expect_not(res.backstop_timeout);
    o = (struct cordon_exec_outcome){ .status = CORDON_RUN_OUTPUT_LIMIT };
    cr_expect_eq(cordon_exec_result_from_outcome(&o, &res, &err), CORDON_E_PROVIDER);
    cr_expect(strstr(err.message, "output_limit") != NULL, "%s", err.message);
}

/* cordon_exec_backstop_ms: the provider's own clock for one exec. */
Test(request, backstop_is_the_lifetime_or_the_timeout_plus_slack)
{
    const uint64_t now = 1700000000000ull, slack = CORDON_EXEC_BACKSTOP_SLACK_MS;
    static const struct {
        uint64_t left, timeout, want;
    } cases[] = {
        { 60000, 0, 60000 },           /* no timeout: the whole lifetime */
        { 60000, 5000, 5000 + 1000 },  /* a sooner timeout, plus the slack */
        { 60000, 59000, 60000 },       /* timeout + slack == left: the lifetime */
        { 60000, 58999, 59999 },
        { 60000, 90000, 60000 },       /* a later timeout never extends it */
        { 500, 100, 500 },             /* less left than the slack */
        { 1, 1, 1 },
        { 60000, UINT64_MAX - 10, 60000 }, /* no overflow */
    };
    struct cordon_error err;
    uint64_t got;

    cordon_error_init(&err);
    cr_assert_eq(slack, 1000);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        got = 0;
        cr_assert_eq(cordon_exec_backstop_ms(now + cases[i].left, cases[i].timeout, now, &got, &err),
                     0, "%s", err.message);
        cr_expect_eq(got, cases[i].want, "left %llu, timeout %llu: %llu",
                     (unsigned long long)cases[i].left, (unsigned long long)cases[i].timeout,
                     (unsigned long long)got);
    }
    got = 7;
    cr_expect_eq(cordon_exec_backstop_ms(now - 1500, 0, now, &got, &err), CORDON_E_TIMEOUT);
    cr_expect_str_eq(err.message, "expires_at_ms: the execution expired 1500 ms ago");
    cr_expect_eq(cordon_exec_backstop_ms(now, 1000, now, &got, &err), CORDON_E_TIMEOUT,
                 "the deadline itself is expired");
    cr_expect_str_eq(err.message, "expires_at_ms: the execution expired 0 ms ago");
    cr_expect_eq(got, 7, "a refusal wrote its output");
    cr_expect_eq(cordon_exec_backstop_ms(now + 1, 0, now, NULL, &err), CORDON_E_INVALID);
}
