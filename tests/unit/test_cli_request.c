/* Unit tests of core/cli/request.c, the request builder that cordon run,
 * pool fill and provision share: each refusal names the flag and the
 * bound, and what is taken lands under the request's key. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <cordon/sdk/bounds.h>

#include "core/cli/request.h"

struct limit_case {
    int opt;
    const char *arg;
    int code;             /* 0: taken */
    const char *key;      /* taken: the key ... */
    double value;         /* ... and its value */
    const char *message;  /* refused: part of the message */
};

static const struct limit_case limit_cases[] = {
    { CLI_OPT_CPUS, "1.5", 0, "cpus", 1.5, NULL },
    { CLI_OPT_MEMORY, "512M", 0, "memory_bytes", 512.0 * 1024 * 1024, NULL },
    { CLI_OPT_DISK, "1G", 0, "disk_bytes", 1024.0 * 1024 * 1024, NULL },
    { CLI_OPT_PIDS, "64", 0, "pids", 64, NULL },
    { CLI_OPT_RUNTIME, "2s", 0, "runtime_ms", 2000, NULL },
    { CLI_OPT_MAX_OUTPUT, "1M", 0, "max_output_bytes", 1024.0 * 1024, NULL },
    /* each flag's bounds are the sdk's, named with the flag */
    { CLI_OPT_CPUS, "0", CORDON_E_LIMIT, NULL, 0, "--cpus: 0 is outside 0.01..128" },
    { CLI_OPT_CPUS, "129", CORDON_E_LIMIT, NULL, 0, "--cpus: 129 is outside 0.01..128" },
    { CLI_OPT_CPUS, "two", CORDON_E_INVALID, NULL, 0, "--cpus: \"two\" is not a number" },
    { CLI_OPT_CPUS, "nan", CORDON_E_INVALID, NULL, 0, "--cpus: \"nan\" is not a number" },
    { CLI_OPT_MEMORY, "1K", CORDON_E_LIMIT, NULL, 0, "--memory: 1K is outside 16777216..549755813888 bytes" },
    { CLI_OPT_MEMORY, "1T", CORDON_E_LIMIT, NULL, 0, "--memory: 1T is outside 16777216..549755813888 bytes" },
    { CLI_OPT_MEMORY, "12Q", CORDON_E_INVALID, NULL, 0, "--memory: \"12Q\" has an unknown unit" },
    { CLI_OPT_DISK, "1K", CORDON_E_LIMIT, NULL, 0, "--disk: 1K is outside 1048576..1099511627776 bytes" },
    { CLI_OPT_PIDS, "7", CORDON_E_LIMIT, NULL, 0, "--pids: 7 is outside 8..32768" },
    { CLI_OPT_PIDS, "40000", CORDON_E_LIMIT, NULL, 0, "--pids: 40000 is outside 8..32768" },
    { CLI_OPT_PIDS, "1.5", CORDON_E_INVALID, NULL, 0, "--pids: \"1.5\" is not a whole number" },
    { CLI_OPT_PIDS, "-8", CORDON_E_INVALID, NULL, 0, "--pids: \"-8\" is not a whole number" },
    { CLI_OPT_RUNTIME, "50ms", CORDON_E_LIMIT, NULL, 0, "--runtime: 50ms is outside 100..86400000 ms" },
    { CLI_OPT_RUNTIME, "25h", CORDON_E_LIMIT, NULL, 0, "--runtime: 25h is outside 100..86400000 ms" },
    { CLI_OPT_RUNTIME, "soon", CORDON_E_INVALID, NULL, 0, "--runtime: " },
    { CLI_OPT_MAX_OUTPUT, "100", CORDON_E_LIMIT, NULL, 0, "--max-output: 100 is outside 1024..67108864 bytes" },
    { CLI_OPT_MAX_OUTPUT, "65M", CORDON_E_LIMIT, NULL, 0, "--max-output: 65M is outside 1024..67108864 bytes" },
};

ParameterizedTestParameters(cli_request, limits)
{
    static size_t idx[sizeof(limit_cases) / sizeof(limit_cases[0])];
    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, cli_request, limits)
{
    const struct limit_case *c = &limit_cases[*i];
    struct cordon_error err;
    cJSON *limits = NULL;
    int r;

    cordon_error_init(&err);
    r = cli_request_limit(&limits, c->opt, c->arg, &err);
    cr_assert_eq(r, c->code, "%s: %d (%s)", c->arg, r, err.message);
    if (c->code == 0) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(limits, c->key);
        cr_assert(cJSON_IsNumber(v), "%s", c->key);
        cr_expect_eq(v->valuedouble, c->value, "%s: %g", c->key, v->valuedouble);
        cr_expect_eq(cJSON_GetArraySize(limits), 1);
    } else {
        cr_assert_null(limits);
        cr_assert(strstr(err.message, c->message) != NULL, "wanted \"%s\", got \"%s\"", c->message,
                  err.message);
    }
    cJSON_Delete(limits);
}

Test(cli_request, every_limit_flag_is_in_the_option_table)
{
    static const struct option opts[] = { CLI_REQUEST_LIMIT_OPTIONS };
    static const char *const names[] = { "cpus", "memory", "disk", "pids", "runtime", "max-output" };

    cr_assert_eq(sizeof(opts) / sizeof(opts[0]), 6);
    for (size_t i = 0; i < 6; i++) {
        cr_expect_str_eq(opts[i].name, names[i]);
        cr_expect(cli_request_is_limit(opts[i].val));
    }
    cr_expect(!cli_request_is_limit(CLI_OPT_CPUS - 1));
    cr_expect(!cli_request_is_limit(CLI_OPT_MAX_OUTPUT + 1));
}

struct env_case {
    const char *arg;
    int code;
    const char *message;
};

static const struct env_case env_cases[] = {
    { "NOEQUALS", CORDON_E_INVALID, "--env: \"NOEQUALS\" is not NAME=VALUE" },
    { "=value", CORDON_E_INVALID, "--env: \"=value\" is not NAME=VALUE" },
    { "", CORDON_E_INVALID, "--env: \"\" is not NAME=VALUE" },
};

ParameterizedTestParameters(cli_request, env_refusals)
{
    static size_t idx[sizeof(env_cases) / sizeof(env_cases[0])];
    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, cli_request, env_refusals)
{
    struct cordon_error err;
    cJSON *env = NULL;

    cordon_error_init(&err);
    cr_assert_eq(cli_request_env(&env, env_cases[*i].arg, &err), env_cases[*i].code);
    cr_assert(strstr(err.message, env_cases[*i].message) != NULL, "%s", err.message);
    cr_assert_null(env);
}

Test(cli_request, env_names_the_length_limit_and_keeps_the_last_value)
{
    char arg[CORDON_ENV_NAME_MAX + 8];
    struct cordon_error err;
    cJSON *env = NULL;

    cordon_error_init(&err);
    /* the longest name taken, then one byte more */
    memset(arg, 'A', CORDON_ENV_NAME_MAX - 1);
    strcpy(arg + CORDON_ENV_NAME_MAX - 1, "=1");
    cr_assert_eq(cli_request_env(&env, arg, &err), 0, "%s", err.message);
    memset(arg, 'A', CORDON_ENV_NAME_MAX);
    strcpy(arg + CORDON_ENV_NAME_MAX, "=1");
    cr_assert_eq(cli_request_env(&env, arg, &err), CORDON_E_LIMIT);
    cr_assert(strstr(err.message, "--env: a NAME of 256 bytes, more than the limit of 255") != NULL, "%s",
              err.message);
    cr_assert_eq(cli_request_env(&env, "X=a=b", &err), 0);
    cr_assert_eq(cli_request_env(&env, "X=c", &err), 0);
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(env, "X")), "c");
    cr_expect_eq(cJSON_GetArraySize(env), 2);
    cJSON_Delete(env);
}

/* A file of text in a fresh temporary directory; returns its path. */
static char *file_of(char *dir, const char *text, size_t len)
{
    char *path = NULL;
    int fd;

    cr_assert_not_null(mkdtemp(dir));
    cr_assert_geq(asprintf(&path, "%s/request.json", dir), 0);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    cr_assert_geq(fd, 0);
    for (size_t off = 0; off < len;) {
        ssize_t n = write(fd, text + off, len - off);
        cr_assert_gt(n, 0);
        off += (size_t)n;
    }
    close(fd);
    return path;
}

static void remove_file(char *dir, char *path)
{
    unlink(path);
    rmdir(dir);
    free(path);
}

Test(cli_request, request_file_merges_under_the_command_line)
{
    char dir[] = "/tmp/cordon-cli-request-XXXXXX";
    const char *text = "{\"image\":\"file\",\"limits\":{\"cpus\":2,\"pids\":9},\"isolation\":\"none\"}";
    char *path = file_of(dir, text, strlen(text));
    cJSON *req = cJSON_Parse("{\"image\":\"flag\",\"limits\":{\"cpus\":1}}");
    struct cordon_error err;

    cordon_error_init(&err);
    cr_assert_eq(cli_request_merge_file(&req, path, &err), 0, "%s", err.message);
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "image")), "flag");
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "isolation")), "none");
    cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
                     cJSON_GetObjectItemCaseSensitive(req, "limits"), "cpus")), 1);
    cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
                     cJSON_GetObjectItemCaseSensitive(req, "limits"), "pids")), 9);
    cJSON_Delete(req);
    remove_file(dir, path);
}

struct file_case {
    const char *text;      /* NULL: nested past the depth bound */
    int code;
    const char *message;   /* after "--request PATH" */
};

static const struct file_case file_cases[] = {
    { "[1, 2]", CORDON_E_INVALID, ": must be a JSON object" },
    { "{\"a\":", CORDON_E_INVALID, ": not valid JSON" },
    { NULL, CORDON_E_LIMIT, ": JSON nested deeper than 32 levels" },
};

ParameterizedTestParameters(cli_request, request_file_refusals)
{
    static size_t idx[sizeof(file_cases) / sizeof(file_cases[0])];
    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, cli_request, request_file_refusals)
{
    const struct file_case *c = &file_cases[*i];
    char dir[] = "/tmp/cordon-cli-request-XXXXXX", deep[2 * (CORDON_JSON_MAX_DEPTH + 1) + 16];
    char *path, want[256];
    cJSON *req = cJSON_CreateObject();
    struct cordon_error err;

    if (c->text == NULL) {
        /* {"k":{"k":...{}...}}: the innermost object is level 33 */
        size_t n = 0;
        for (int d = 0; d < CORDON_JSON_MAX_DEPTH; d++)
            n += (size_t)sprintf(deep + n, "[");
        n += (size_t)sprintf(deep + n, "{}");
        for (int d = 0; d < CORDON_JSON_MAX_DEPTH; d++)
            n += (size_t)sprintf(deep + n, "]");
        path = file_of(dir, deep, n);
    } else {
        path = file_of(dir, c->text, strlen(c->text));
    }
    cordon_error_init(&err);
    cr_assert_eq(cli_request_merge_file(&req, path, &err), c->code, "%s", err.message);
    snprintf(want, sizeof(want), "--request %s%s", path, c->message);
    cr_assert(strstr(err.message, want) != NULL, "wanted \"%s\", got \"%s\"", want, err.message);
    cr_expect_eq(cJSON_GetArraySize(req), 0, "the command line's request is left as it was");
    cJSON_Delete(req);
    remove_file(dir, path);
}

/* One byte over the documented cap is refused naming --request and the
 * cap; the file is sparse, so the test writes almost nothing. */
Test(cli_request, request_file_over_the_cap_names_it)
{
    char dir[] = "/tmp/cordon-cli-request-XXXXXX", *path, want[256];
    cJSON *req = cJSON_CreateObject();
    struct cordon_error err;
    int fd;

    path = file_of(dir, "{", 1);
    fd = open(path, O_WRONLY | O_CLOEXEC);
    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, (off_t)CLI_REQUEST_FILE_MAX + 1), 0);
    close(fd);
    cordon_error_init(&err);
    cr_assert_eq(cli_request_merge_file(&req, path, &err), CORDON_E_LIMIT, "%s", err.message);
    snprintf(want, sizeof(want), "--request %s: more than the limit of %u bytes", path,
             (unsigned)CLI_REQUEST_FILE_MAX);
    cr_assert(strstr(err.message, want) != NULL, "wanted \"%s\", got \"%s\"", want, err.message);
    cr_assert_eq(CLI_REQUEST_FILE_MAX, 80u << 20, "cordon(1) documents 80 MiB");
    cJSON_Delete(req);
    remove_file(dir, path);
}

Test(cli_request, request_file_missing_is_not_found)
{
    cJSON *req = cJSON_CreateObject();
    struct cordon_error err;

    cordon_error_init(&err);
    cr_assert_eq(cli_request_merge_file(&req, "/nonexistent/cordon-request.json", &err), CORDON_E_NOT_FOUND);
    cr_assert(strstr(err.message, "--request: /nonexistent/cordon-request.json: No such file") != NULL, "%s",
              err.message);
    cJSON_Delete(req);
}
