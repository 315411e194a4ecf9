/* core: the per-language argv plans (the adapters of cordon(1) run). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/adapter.h"

/* Where a build step leaves the program, relative to the step's cwd. */
#define ADAPTER_APP "../build/app"

/* One row of the adapter table below. */
struct adapter {
    const char *language;
    const char *toolchain;
    const char *floor;                 /* oldest toolchain the adapter supports, or NULL */
    const char *const *build;          /* build argv before the entrypoint, or NULL */
    const char *run_tool;              /* run argv[0] before the entrypoint, or NULL: the built app */
};

static const char *const go_build[] = { "go", "build", "-o", ADAPTER_APP, NULL };
static const char *const cpp_build[] = { "c++", "-std=c++17", "-O2", "-o", ADAPTER_APP, NULL };

static const struct adapter adapters[] = {
    { "python", "python", "3.10", NULL, "python3" },
    { "node", "node", "18", NULL, "node" },
    { "go", "go", NULL, go_build, NULL },
    { "cpp", "c++", NULL, cpp_build, NULL },
};

/* Free what a step owns; argc counts only the entries already copied. */
static void step_clear(struct cordon__step *s)
{
    for (size_t i = 0; s->argv != NULL && i < s->argc; i++)
        free(s->argv[i]);
    free(s->argv);
    free(s->name);
    free(s->cwd);
}

void cordon__plan_free(struct cordon__plan *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; p->steps != NULL && i < p->n_steps; i++)
        step_clear(&p->steps[i]);
    free(p->steps);
    free(p->language);
    free(p->toolchain);
    free(p->min_version);
    cJSON_Delete(p->env);
    cJSON_Delete(p->workspace_env);
    free(p);
}

/* Compare dotted versions numerically ("3.9" < "3.10"); a missing part is 0. */
static int version_compare(const char *a, const char *b)
{
    while (*a != '\0' || *b != '\0') {
        unsigned long long x = strtoull(a, (char **)&a, 10);
        unsigned long long y = strtoull(b, (char **)&b, 10);

        if (x != y)
            return x < y ? -1 : 1;
        if (*a == '.')
            a++;
        if (*b == '.')
            b++;
        if ((*a != '\0' && (*a < '0' || *a > '9')) || (*b != '\0' && (*b < '0' || *b > '9')))
            break;   /* not a dotted version past here; the bundle validated its own */
    }
    return 0;
}

/* One step: head (NULL-terminated), then the optional entry, then args. */
static int step_init(struct cordon__step *s, const char *name, const char *const *head,
                     const char *entry, char *const *args, size_t n_args, struct cordon_error *err)
{
    size_t n_head = 0, argc;

    while (head[n_head] != NULL)
        n_head++;
    argc = n_head + (entry != NULL) + n_args;
    /* The bundle's bound on args alone leaves no room for the adapter's own
     * words: an exec takes at most CORDON_ARGV_MAX in all. */
    if (argc > CORDON_ARGV_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                "args: %zu arguments; this language's %s command takes %zu "
                                "words of the %d an exec allows, so at most %zu arguments",
                                n_args, name, argc - n_args, CORDON_ARGV_MAX,
                                (size_t)CORDON_ARGV_MAX - (argc - n_args));
    /* The argv stays NULL-terminated, so a caller can hand it to execv. */
    s->argv = calloc(argc + 1, sizeof(*s->argv));
    s->name = strdup(name);
    s->cwd = strdup("source");
    if (s->argv == NULL || s->name == NULL || s->cwd == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "plan: out of memory");
    for (size_t i = 0; i < argc; i++) {
        const char *arg = i < n_head ? head[i] : (entry != NULL && i == n_head) ? entry
                        : args[i - n_head - (entry != NULL)];

        if ((s->argv[i] = strdup(arg)) == NULL)
            return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "plan: out of memory");
        s->argc = i + 1;
    }
    return 0;
}

static bool env_set(cJSON *env, const char *name, const char *value)
{
    return cJSON_AddStringToObject(env, name, value) != NULL;
}

static bool env_set_number(cJSON *env, const char *name, const char *prefix, uint64_t value)
{
    char text[64];

    snprintf(text, sizeof(text), "%s%" PRIu64, prefix, value);
    return env_set(env, name, text);
}

/* The environment: fixed values, those that follow the limits, and the
 * language's switches. */
static bool fill_env(struct cordon__plan *p, const struct cordon_limits *limits)
{
    /* Toolchains size their worker pools from the cpu count; the pids and
     * memory limits must agree with them. */
    double cpus = limits->cpus >= 1.0 ? limits->cpus : 1.0;   /* NaN too */
    uint64_t jobs = (uint64_t)floor(cpus < CORDON_LIMIT_CPUS_MAX ? cpus : CORDON_LIMIT_CPUS_MAX);
    uint64_t heap_mib = limits->memory_bytes / (1024 * 1024) / 4 * 3;
    bool ok;

    if (heap_mib < 16)
        heap_mib = 16;
    ok = env_set(p->env, "PATH", "/usr/local/bin:/usr/bin:/bin") &&
         env_set(p->env, "LANG", "C.UTF-8") &&
         env_set_number(p->env, "GOMAXPROCS", "", jobs) &&
         env_set_number(p->env, "GOFLAGS", "-p=", jobs) &&
         env_set_number(p->env, "MAKEFLAGS", "-j", jobs) &&
         env_set_number(p->env, "NODE_OPTIONS", "--max-old-space-size=", heap_mib) &&
         env_set(p->workspace_env, "HOME", "build/home") &&
         env_set(p->workspace_env, "TMPDIR", "build/tmp");
    if (ok && strcmp(p->language, "python") == 0)
        ok = env_set(p->env, "PYTHONDONTWRITEBYTECODE", "1") &&
             env_set(p->env, "PYTHONUNBUFFERED", "1");
    /* Go must neither fetch a toolchain nor a module, nor need a C compiler. */
    if (ok && strcmp(p->language, "go") == 0)
        ok = env_set(p->env, "GOTOOLCHAIN", "local") &&
             env_set(p->env, "CGO_ENABLED", "0") &&
             env_set(p->env, "GOPROXY", "off") &&
             env_set(p->workspace_env, "GOCACHE", "build/gocache") &&
             env_set(p->workspace_env, "GOPATH", "build/gopath");
    return ok;
}

int cordon__adapter_plan(const struct cordon__bundle *b, const struct cordon_limits *limits,
                         struct cordon__plan **ret, struct cordon_error *err)
{
    static const char *const no_head[] = { NULL };
    const struct cordon_limits defaults = {
        .cpus = CORDON_RUN_DEFAULT_CPUS,
        .memory_bytes = CORDON_RUN_DEFAULT_MEMORY,
        .disk_bytes = CORDON_RUN_DEFAULT_DISK,
        .pids = CORDON_RUN_DEFAULT_PIDS,
        .runtime_ms = CORDON_RUN_DEFAULT_TIMEOUT_MS + CORDON_RUN_RUNTIME_SLACK_MS,
        .max_output_bytes = CORDON_RUN_DEFAULT_OUTPUT,
    };
    const struct adapter *a = NULL;
    struct cordon__plan *p = NULL;
    const char *floor_version;
    int r = 0;

    if (b == NULL || b->language == NULL || b->entrypoint == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "plan: no bundle given");
    for (size_t i = 0; i < sizeof(adapters) / sizeof(adapters[0]); i++)
        if (strcmp(b->language, adapters[i].language) == 0)
            a = &adapters[i];
    if (a == NULL)
        return cordon_error_set(err, CORDON_E_UNSUPPORTED, 0,
                                "language: no adapter for \"%.*s\" (python, node, go, cpp)",
                                cordon_text_fit(b->language, 64), b->language);
    if (limits == NULL)
        limits = &defaults;
    if ((p = calloc(1, sizeof(*p))) == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "plan: out of memory");
    /* The bundle may ask for a newer toolchain than the adapter needs, never an older one. */
    floor_version = a->floor;
    if (b->min_version != NULL && (floor_version == NULL || version_compare(b->min_version, floor_version) > 0))
        floor_version = b->min_version;
    p->language = strdup(a->language);
    p->toolchain = strdup(a->toolchain);
    p->min_version = floor_version != NULL ? strdup(floor_version) : NULL;
    p->env = cJSON_CreateObject();
    p->workspace_env = cJSON_CreateObject();
    p->steps = calloc(2, sizeof(*p->steps));
    if (p->language == NULL || p->toolchain == NULL || (floor_version != NULL && p->min_version == NULL) ||
        p->env == NULL || p->workspace_env == NULL || p->steps == NULL || !fill_env(p, limits)) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "plan: out of memory");
        goto out;
    }
    if (a->build != NULL) {
        /* Compiled languages: build the entrypoint, then run what was built. */
        const char *const app[] = { ADAPTER_APP, NULL };

        if ((r = step_init(&p->steps[p->n_steps++], "build", a->build, b->entrypoint, NULL, 0, err)) < 0 ||
            (r = step_init(&p->steps[p->n_steps++], "run", app, NULL, b->args, b->n_args, err)) < 0)
            goto out;
    } else {
        const char *const tool[] = { a->run_tool, NULL };

        if ((r = step_init(&p->steps[p->n_steps++], "run", a->run_tool ? tool : no_head,
                           b->entrypoint, b->args, b->n_args, err)) < 0)
            goto out;
    }
    *ret = p;
    p = NULL;
out:
    cordon__plan_free(p);
    return r;
}

int cordon__plan_step_request(const struct cordon__plan *p, size_t step, uint64_t timeout_ms,
                              struct cordon_exec_request *ret, struct cordon_error *err)
{
    /* Every member is a copy: the request outlives or crosses threads apart from the plan. */
    struct cordon_exec_request rq;
    const struct cordon__step *s;
    int r = 0;

    if (p == NULL || step >= p->n_steps || ret == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "plan: no step %zu", step);
    s = &p->steps[step];
    cordon_exec_request_init(&rq);
    for (size_t i = 0; r == 0 && i < s->argc; i++)
        r = cordon_exec_request_add_arg(&rq, s->argv[i], err);
    if (r == 0 && (rq.cwd = strdup(s->cwd)) == NULL)
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "plan: out of memory");
    if (r == 0)
        r = cordon_env_from_json(p->env, "env", &rq.env, err);
    if (r == 0)
        r = cordon_env_from_json(p->workspace_env, "workspace_env", &rq.workspace_env, err);
    rq.timeout_ms = timeout_ms;
    if (r < 0) {
        cordon_exec_request_clear(&rq);
        return r;
    }
    *ret = rq;
    return 0;
}
