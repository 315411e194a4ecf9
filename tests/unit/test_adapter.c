/* Unit tests of core/adapter.c: argv plans and their environment. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "core/adapter.h"

/* Criterion runs each case in a fresh process where pointers taken in the
 * runner mean nothing: the parameters are indices into a static table. */
#define INDEX_PARAMS(table)                                                  \
    static size_t indices_[sizeof(table) / sizeof(table[0])];               \
    for (size_t i_ = 0; i_ < sizeof(indices_) / sizeof(indices_[0]); i_++) \
        indices_[i_] = i_;                                                   \
    return cr_make_param_array(size_t, indices_, sizeof(indices_) / sizeof(indices_[0]))

static struct cordon__bundle *bundle_of(const char *json)
{
    struct cordon__bundle *b = NULL;
    struct cordon_error err;
    cJSON *request = cJSON_Parse(json);

    cr_assert_not_null(request, "test request does not parse: %s", json);
    cordon_error_init(&err);
    cr_assert_eq(cordon__bundle_from_request(request, &b, &err), 0, "%s", err.message);
    cJSON_Delete(request);
    return b;
}

/* argv joined with '|', so that an argument with a space stays visible. */
static char *joined(const struct cordon__step *s)
{
    size_t len = 1;
    char *out;

    for (size_t i = 0; i < s->argc; i++)
        len += strlen(s->argv[i]) + 1;
    out = calloc(1, len);
    for (size_t i = 0; i < s->argc; i++) {
        if (i > 0)
            strcat(out, "|");
        strcat(out, s->argv[i]);
    }
    return out;
}

struct plan_case {
    const char *request;
    const char *toolchain;
    const char *min_version;   /* NULL: none */
    const char *build;         /* NULL: no build step */
    const char *run;
};

static const struct plan_case plans_per_language_cases[] = {
    { "{\"language\":\"python\",\"files\":[{\"path\":\"main.py\",\"content\":\"\"}],"
      "\"args\":[\"--n\",\"a b\"]}",
      "python", "3.10", NULL, "python3|main.py|--n|a b" },
    { "{\"language\":\"py\",\"entrypoint\":\"src/app.py\",\"files\":[{\"path\":\"src/app.py\",\"content\":\"\"}],"
      "\"toolchain\":{\"min_version\":\"3.12\"}}",
      "python", "3.12", NULL, "python3|src/app.py" },
    { "{\"files\":[{\"path\":\"main.py\",\"content\":\"\"}],\"toolchain\":{\"min_version\":\"3.9\"}}",
      "python", "3.10", NULL, "python3|main.py" },
    { "{\"files\":[{\"path\":\"main.py\",\"content\":\"\"}],\"toolchain\":{\"min_version\":\"3.10.4\"}}",
      "python", "3.10.4", NULL, "python3|main.py" },
    { "{\"language\":\"javascript\",\"files\":[{\"path\":\"index.js\",\"content\":\"\"}],\"args\":[\"x\"]}",
      "node", "18", NULL, "node|index.js|x" },
    { "{\"files\":[{\"path\":\"main.mjs\",\"content\":\"\"}],\"toolchain\":{\"min_version\":\"20.1\"}}",
      "node", "20.1", NULL, "node|main.mjs" },
    { "{\"language\":\"golang\",\"files\":[{\"path\":\"main.go\",\"content\":\"\"}],\"args\":[\"-v\",\"1\"]}",
      "go", NULL, "go|build|-o|../build/app|main.go", "../build/app|-v|1" },
    { "{\"files\":[{\"path\":\"cmd/tool.go\",\"content\":\"\"}],\"toolchain\":{\"min_version\":\"1.19\"}}",
      "go", "1.19", "go|build|-o|../build/app|cmd/tool.go", "../build/app" },
    { "{\"language\":\"c++\",\"files\":[{\"path\":\"main.cpp\",\"content\":\"\"},{\"path\":\"util.h\","
      "\"content\":\"\"}],\"args\":[\"in.txt\"]}",
      "c++", NULL, "c++|-std=c++17|-O2|-o|../build/app|main.cpp", "../build/app|in.txt" },
    { "{\"files\":[{\"path\":\"prog.cc\",\"content\":\"\"}]}",
      "c++", NULL, "c++|-std=c++17|-O2|-o|../build/app|prog.cc", "../build/app" },
};

ParameterizedTestParameters(adapter, plans_per_language)
{
    INDEX_PARAMS(plans_per_language_cases);
}

ParameterizedTest(size_t *index, adapter, plans_per_language)
{
    const struct plan_case *c = &plans_per_language_cases[*index];
    struct cordon__bundle *b = bundle_of(c->request);
    struct cordon__plan *p = NULL;
    struct cordon_error err;
    size_t run = c->build != NULL ? 1 : 0;
    char *text;

    cordon_error_init(&err);
    cr_assert_eq(cordon__adapter_plan(b, NULL, &p, &err), 0, "%s", err.message);
    cr_assert_str_eq(p->language, b->language);
    cr_assert_str_eq(p->toolchain, c->toolchain);
    if (c->min_version == NULL)
        cr_assert_null(p->min_version, "floor %s", p->min_version);
    else
        cr_assert_str_eq(p->min_version, c->min_version);
    cr_assert_eq(p->n_steps, run + 1);
    if (c->build != NULL) {
        text = joined(&p->steps[0]);
        cr_assert_str_eq(p->steps[0].name, "build");
        cr_assert_str_eq(text, c->build);
        cr_assert_str_eq(p->steps[0].cwd, "source");
        free(text);
    }
    text = joined(&p->steps[run]);
    cr_assert_str_eq(p->steps[run].name, "run");
    cr_assert_str_eq(text, c->run);
    cr_assert_str_eq(p->steps[run].cwd, "source");
    cr_assert_null(p->steps[run].argv[p->steps[run].argc], "argv is not NULL-terminated");
    free(text);
    cordon__plan_free(p);
    cordon__bundle_free(b);
}

struct env_case {
    double cpus;
    unsigned long long memory;
    const char *jobs;          /* GOMAXPROCS */
    const char *node_options;
};

static const struct env_case env_follows_limits_cases[] = {
    { 2.5, 512ull << 20, "2", "--max-old-space-size=384" },
    { 1.0, 512ull << 20, "1", "--max-old-space-size=384" },
    { 0.5, 1ull << 30, "1", "--max-old-space-size=768" },
    { 0.01, 16ull << 20, "1", "--max-old-space-size=16" },
    { 3.99, 20ull << 20, "3", "--max-old-space-size=16" },
    { 128.0, 512ull << 30, "128", "--max-old-space-size=393216" },
    { 4.0, (100ull << 20) + 12345, "4", "--max-old-space-size=75" },
};

ParameterizedTestParameters(adapter, env_follows_limits)
{
    INDEX_PARAMS(env_follows_limits_cases);
}

static const char *env_value(const cJSON *env, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(env, name);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

ParameterizedTest(size_t *index, adapter, env_follows_limits)
{
    const struct env_case *c = &env_follows_limits_cases[*index];
    struct cordon__bundle *b = bundle_of("{\"files\":[{\"path\":\"main.go\",\"content\":\"\"}]}");
    struct cordon_limits limits = {
        .cpus = c->cpus, .memory_bytes = c->memory, .disk_bytes = 1ull << 30, .pids = 256,
        .runtime_ms = 10000, .max_output_bytes = 1 << 20,
    };
    struct cordon__plan *p = NULL;
    struct cordon_error err;
    char want[32];

    cordon_error_init(&err);
    cr_assert_eq(cordon__adapter_plan(b, &limits, &p, &err), 0, "%s", err.message);
    cr_assert_str_eq(env_value(p->env, "GOMAXPROCS"), c->jobs);
    snprintf(want, sizeof(want), "-p=%s", c->jobs);
    cr_assert_str_eq(env_value(p->env, "GOFLAGS"), want);
    snprintf(want, sizeof(want), "-j%s", c->jobs);
    cr_assert_str_eq(env_value(p->env, "MAKEFLAGS"), want);
    cr_assert_str_eq(env_value(p->env, "NODE_OPTIONS"), c->node_options);
    cordon__plan_free(p);
    cordon__bundle_free(b);
}

struct lang_env_case {
    const char *request;
    const char *present;       /* names that must be set, space-separated */
    const char *absent;        /* names that must not be */
};

static const struct lang_env_case env_per_language_cases[] = {
    { "{\"files\":[{\"path\":\"main.py\",\"content\":\"\"}]}",
      "PATH LANG PYTHONDONTWRITEBYTECODE PYTHONUNBUFFERED", "GOTOOLCHAIN CGO_ENABLED GOPROXY" },
    { "{\"files\":[{\"path\":\"main.js\",\"content\":\"\"}]}",
      "PATH LANG NODE_OPTIONS", "PYTHONUNBUFFERED GOPROXY GOTOOLCHAIN" },
    { "{\"files\":[{\"path\":\"main.go\",\"content\":\"\"}]}",
      "PATH LANG GOTOOLCHAIN CGO_ENABLED GOPROXY GOMAXPROCS GOFLAGS", "PYTHONUNBUFFERED" },
    { "{\"files\":[{\"path\":\"main.cpp\",\"content\":\"\"}]}",
      "PATH LANG MAKEFLAGS", "PYTHONUNBUFFERED GOTOOLCHAIN GOPROXY" },
};

ParameterizedTestParameters(adapter, env_per_language)
{
    INDEX_PARAMS(env_per_language_cases);
}

ParameterizedTest(size_t *index, adapter, env_per_language)
{
    const struct lang_env_case *c = &env_per_language_cases[*index];
    struct cordon__bundle *b = bundle_of(c->request);
    struct cordon__plan *p = NULL;
    struct cordon_error err;
    char names[256], *save = NULL;
    bool go = strcmp(b->language, "go") == 0;

    cordon_error_init(&err);
    cr_assert_eq(cordon__adapter_plan(b, NULL, &p, &err), 0, "%s", err.message);
    snprintf(names, sizeof(names), "%s", c->present);
    for (char *n = strtok_r(names, " ", &save); n != NULL; n = strtok_r(NULL, " ", &save))
        cr_assert_not_null(env_value(p->env, n), "%s missing for %s", n, b->language);
    snprintf(names, sizeof(names), "%s", c->absent);
    for (char *n = strtok_r(names, " ", &save); n != NULL; n = strtok_r(NULL, " ", &save))
        cr_assert_null(env_value(p->env, n), "%s set for %s", n, b->language);
    cr_assert_str_eq(env_value(p->env, "PATH"), "/usr/local/bin:/usr/bin:/bin");
    cr_assert_str_eq(env_value(p->env, "LANG"), "C.UTF-8");
    /* Defaults of cordon run: one cpu, 512 MiB. */
    cr_assert_str_eq(env_value(p->env, "GOMAXPROCS"), "1");
    cr_assert_str_eq(env_value(p->env, "NODE_OPTIONS"), "--max-old-space-size=384");
    cr_assert_str_eq(env_value(p->workspace_env, "HOME"), "build/home");
    cr_assert_str_eq(env_value(p->workspace_env, "TMPDIR"), "build/tmp");
    if (go) {
        cr_assert_str_eq(env_value(p->env, "CGO_ENABLED"), "0");
        cr_assert_str_eq(env_value(p->env, "GOPROXY"), "off");
        cr_assert_str_eq(env_value(p->env, "GOTOOLCHAIN"), "local");
        cr_assert_str_eq(env_value(p->workspace_env, "GOCACHE"), "build/gocache");
        cr_assert_str_eq(env_value(p->workspace_env, "GOPATH"), "build/gopath");
    } else {
        cr_assert_null(env_value(p->workspace_env, "GOCACHE"));
        cr_assert_null(env_value(p->workspace_env, "GOPATH"));
    }
    /* Nothing in any plan installs dependencies. */
    for (size_t i = 0; i < p->n_steps; i++)
        for (size_t j = 0; j < p->steps[i].argc; j++)
            cr_assert(strcmp(p->steps[i].argv[j], "pip") != 0 && strcmp(p->steps[i].argv[j], "npm") != 0 &&
                      strcmp(p->steps[i].argv[j], "get") != 0 && strcmp(p->steps[i].argv[j], "mod") != 0);
    cordon__plan_free(p);
    cordon__bundle_free(b);
}

Test(adapter, refuses_unknown_language_and_missing_bundle)
{
    struct cordon__bundle *b = bundle_of("{\"files\":[{\"path\":\"main.py\",\"content\":\"\"}]}");
    struct cordon__plan *p = NULL;
    struct cordon_error err;
    char *saved = b->language;

    cordon_error_init(&err);
    b->language = "cobol";
    cr_assert_eq(cordon__adapter_plan(b, NULL, &p, &err), CORDON_E_UNSUPPORTED);
    cr_assert_null(p);
    cr_assert(strstr(err.message, "language: no adapter for \"cobol\"") != NULL, "%s", err.message);
    /* Aliases are resolved when the bundle is built, not here. */
    b->language = "py";
    cr_assert_eq(cordon__adapter_plan(b, NULL, &p, &err), CORDON_E_UNSUPPORTED);
    b->language = saved;
    cr_assert_eq(cordon__adapter_plan(NULL, NULL, &p, &err), CORDON_E_INVALID);
    cr_assert_null(p);
    cordon__plan_free(NULL);
    cordon__bundle_free(b);
}

Test(adapter, step_request_is_the_abi_object)
{
    struct cordon__bundle *b = bundle_of("{\"files\":[{\"path\":\"main.cpp\",\"content\":\"\"}],"
                                         "\"args\":[\"a\"]}");
    struct cordon__plan *p = NULL;
    struct cordon_exec_request req;
    struct cordon_error err;
    char *text = NULL;
    cJSON *doc;

    cordon_error_init(&err);
    cr_assert_eq(cordon__adapter_plan(b, NULL, &p, &err), 0, "%s", err.message);
    cordon_exec_request_init(&req);
    cr_assert_eq(cordon__plan_step_request(p, 1, 4500, &req, &err), 0, "%s", err.message);
    cr_assert_eq(req.argc, 2);
    cr_assert_str_eq(req.argv[0], "../build/app");
    cr_assert_str_eq(req.argv[1], "a");
    cr_assert_null(req.argv[2]);
    cr_assert_str_eq(req.cwd, "source");
    cr_assert_eq(req.timeout_ms, 4500);
    cr_assert_str_eq(cordon_env_get(&req.env, "MAKEFLAGS"), "-j1");
    cr_assert_str_eq(cordon_env_get(&req.workspace_env, "HOME"), "build/home");
    /* Printed, it is the ABI object with its five keys. */
    cr_assert_eq(cordon_exec_request_print(&req, &text, &err), 0, "%s", err.message);
    doc = cJSON_Parse(text);
    cr_assert_eq(cJSON_GetArraySize(doc), 5);
    cr_assert_str_eq(env_value(cJSON_GetObjectItem(doc, "env"), "MAKEFLAGS"), "-j1");
    cJSON_Delete(doc);
    free(text);
    cordon_exec_request_clear(&req);
    cr_assert_eq(cordon__plan_step_request(p, 0, 1, &req, &err), 0, "%s", err.message);
    cr_assert_str_eq(req.argv[0], "c++");
    cordon_exec_request_clear(&req);
    cr_assert_eq(cordon__plan_step_request(p, 2, 1, &req, &err), CORDON_E_INVALID);
    cr_assert_eq(cordon__plan_step_request(NULL, 0, 1, &req, &err), CORDON_E_INVALID);
    cordon__plan_free(p);
    cordon__bundle_free(b);
}

/* A bundle may carry CORDON_ARGV_MAX arguments, but the adapter's own
 * words (python3 main.py) count against the exec's CORDON_ARGV_MAX: the plan
 * refuses what no provider would run, naming args and the room left. */
Test(adapter, args_leave_room_for_the_command)
{
    char json[8192];
    size_t len;
    struct cordon__bundle *b;
    struct cordon__plan *p = NULL;
    struct cordon_error err;

    for (size_t n = CORDON_ARGV_MAX - 3; n <= CORDON_ARGV_MAX - 1; n++) {
        len = (size_t)snprintf(json, sizeof(json),
                               "{\"files\":[{\"path\":\"main.py\",\"content\":\"\"}],\"args\":[");
        for (size_t i = 0; i < n; i++)
            len += (size_t)snprintf(json + len, sizeof(json) - len, "%s\"a\"", i > 0 ? "," : "");
        snprintf(json + len, sizeof(json) - len, "]}");
        b = bundle_of(json);
        cordon_error_init(&err);
        if (n <= CORDON_ARGV_MAX - 2) {
            cr_assert_eq(cordon__adapter_plan(b, NULL, &p, &err), 0, "%zu args: %s", n, err.message);
            cr_assert_eq(p->steps[0].argc, n + 2);
            cordon__plan_free(p);
            p = NULL;
        } else {
            cr_assert_eq(cordon__adapter_plan(b, NULL, &p, &err), CORDON_E_LIMIT);
            cr_assert_null(p);
            cr_assert(strstr(err.message, "args: 255 arguments") != NULL &&
                      strstr(err.message, "at most 254 arguments") != NULL, "%s", err.message);
        }
        cordon__bundle_free(b);
    }
}
