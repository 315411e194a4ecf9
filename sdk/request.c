/* sdk: the exec request, read and written once (see cordon/sdk/request.h). */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <cordon/sdk/host.h>
#include <cordon/sdk/json.h>
#include <cordon/sdk/path.h>
#include <cordon/sdk/request.h>
#include <cordon/text.h>

static int nomem(struct cordon_error *err, const char *what)
{
    return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "%s: out of memory", what);
}

/* ---- environments -------------------------------------------------------- */

void cordon_env_init(struct cordon_env *env)
{
    memset(env, 0, sizeof(*env));
}

void cordon_env_clear(struct cordon_env *env)
{
    if (env == NULL)
        return;
    for (size_t i = 0; i < env->n; i++) {
        free(env->vars[i].name);
        free(env->vars[i].value);
    }
    free(env->vars);
    memset(env, 0, sizeof(*env));
}

static struct cordon_env_var *env_find(const struct cordon_env *env, const char *name)
{
    for (size_t i = 0; i < env->n; i++)
        if (strcmp(env->vars[i].name, name) == 0)
            return &env->vars[i];
    return NULL;
}

const char *cordon_env_get(const struct cordon_env *env, const char *name)
{
    const struct cordon_env_var *v = env != NULL && name != NULL ? env_find(env, name) : NULL;

    return v != NULL ? v->value : NULL;
}

int cordon_env_set(struct cordon_env *env, const char *name, const char *value,
                   struct cordon_error *err)
{
    struct cordon_env_var *v, *grown;
    char *copy;

    if (env == NULL || value == NULL || !cordon_env_name_valid(name))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "env: name \"%.*s\" must match [A-Za-z_][A-Za-z0-9_]* (at most "
                                "%u bytes)", cordon_text_fit(name != NULL ? name : "", 64),
                                name != NULL ? name : "", (unsigned)CORDON_ENV_NAME_MAX);
    if (strlen(value) > CORDON_ARG_BYTES_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "env.%s: value longer than %u bytes",
                                name, CORDON_ARG_BYTES_MAX);
    if ((copy = strdup(value)) == NULL)
        return nomem(err, "env");
    if ((v = env_find(env, name)) != NULL) {
        free(v->value);
        v->value = copy;
        return 0;
    }
    if (env->n >= CORDON_ENV_MAX) {
        free(copy);
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "env: more than %u entries",
                                (unsigned)CORDON_ENV_MAX);
    }
    grown = reallocarray(env->vars, env->n + 1, sizeof(*grown));
    if (grown == NULL) {
        free(copy);
        return nomem(err, "env");
    }
    env->vars = grown;
    env->vars[env->n].value = copy;
    if ((env->vars[env->n].name = strdup(name)) == NULL) {
        free(copy);
        return nomem(err, "env");
    }
    env->n++;
    return 0;
}

int cordon_env_from_json(const cJSON *obj, const char *field, struct cordon_env *ret,
                         struct cordon_error *err)
{
    struct cordon_env env = { 0 };
    const cJSON *item;
    int r;

    if (obj == NULL || cJSON_IsNull(obj))
        return 0;
    if ((r = cordon_env_object_check(obj, field, err)) < 0)
        return r;
    cJSON_ArrayForEach(item, obj) {
        /* cJSON keeps a repeated key and reads the first: one value per name. */
        if (env_find(&env, item->string) != NULL) {
            r = cordon_error_set(err, CORDON_E_INVALID, 0, "%s.%s: appears twice", field,
                                 item->string);
            break;
        }
        if ((r = cordon_env_set(&env, item->string, item->valuestring, err)) < 0)
            break;
    }
    if (r < 0) {
        cordon_env_clear(&env);
        return r;
    }
    *ret = env;
    return 0;
}

cJSON *cordon_env_to_json(const struct cordon_env *env)
{
    cJSON *obj = cJSON_CreateObject();

    for (size_t i = 0; obj != NULL && env != NULL && i < env->n; i++) {
        if (cJSON_AddStringToObject(obj, env->vars[i].name, env->vars[i].value) == NULL) {
            cJSON_Delete(obj);
            return NULL;
        }
    }
    return obj;
}

/* Bytes the variables take in an envp: NAME=VALUE and a NUL each. */
static size_t env_bytes(const struct cordon_env *env)
{
    size_t bytes = 0;

    for (size_t i = 0; i < env->n; i++)
        bytes += strlen(env->vars[i].name) + strlen(env->vars[i].value) + 2;
    return bytes;
}

char **cordon_env_envp(const struct cordon_env *env)
{
    size_t n = env != NULL ? env->n : 0, head = (n + 1) * sizeof(char *);
    char **envp = malloc(head + (env != NULL ? env_bytes(env) : 0)), *p;

    if (envp == NULL)
        return NULL;
    p = (char *)envp + head;
    for (size_t i = 0; i < n; i++) {
        envp[i] = p;
        p = stpcpy(stpcpy(stpcpy(p, env->vars[i].name), "="), env->vars[i].value) + 1;
    }
    envp[n] = NULL;
    return envp;
}

/* ---- the exec request ---------------------------------------------------- */

void cordon_exec_request_init(struct cordon_exec_request *rq)
{
    memset(rq, 0, sizeof(*rq));
}

void cordon_exec_request_clear(struct cordon_exec_request *rq)
{
    if (rq == NULL)
        return;
    for (size_t i = 0; rq->argv != NULL && i < rq->argc; i++)
        free(rq->argv[i]);
    free(rq->argv);
    free(rq->cwd);
    cordon_env_clear(&rq->env);
    cordon_env_clear(&rq->workspace_env);
    memset(rq, 0, sizeof(*rq));
}

int cordon_exec_request_add_arg(struct cordon_exec_request *rq, const char *arg,
                                struct cordon_error *err)
{
    char **grown, *copy;
    size_t len = arg != NULL ? strlen(arg) : 0;

    if (rq == NULL || arg == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "argv[%zu]: must be a string",
                                rq != NULL ? rq->argc : 0);
    if (rq->argc >= CORDON_ARGV_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "argv: more than %u entries",
                                (unsigned)CORDON_ARGV_MAX);
    if (len > CORDON_ARG_BYTES_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                "argv[%zu]: %zu bytes exceed the limit of %u", rq->argc, len,
                                CORDON_ARG_BYTES_MAX);
    grown = reallocarray(rq->argv, rq->argc + 2, sizeof(*grown));
    if (grown == NULL)
        return nomem(err, "argv");
    rq->argv = grown;
    if ((copy = strdup(arg)) == NULL) {
        rq->argv[rq->argc] = NULL;
        return nomem(err, "argv");
    }
    rq->argv[rq->argc++] = copy;
    rq->argv[rq->argc] = NULL;
    return 0;
}

static int parse_argv(const cJSON *argv, struct cordon_exec_request *rq, struct cordon_error *err)
{
    const cJSON *item;
    int n = cJSON_IsArray(argv) ? cJSON_GetArraySize(argv) : 0, r;

    if (n == 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "argv: required, an array of 1 to %u strings",
                                (unsigned)CORDON_ARGV_MAX);
    if (n > CORDON_ARGV_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                "argv: %d entries exceed the limit of %u", n,
                                (unsigned)CORDON_ARGV_MAX);
    cJSON_ArrayForEach(item, argv) {
        if (!cJSON_IsString(item))
            return cordon_error_set(err, CORDON_E_INVALID, 0, "argv[%zu]: must be a string",
                                    rq->argc);
        if (rq->argc == 0 && item->valuestring[0] == '\0')
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "argv[0]: must not be empty (the program to run)");
        if ((r = cordon_exec_request_add_arg(rq, item->valuestring, err)) < 0)
            return r;
    }
    return 0;
}

/* A directory relative to /workspace: a string, or null/absent for "". */
static int parse_dir(const cJSON *item, const char *field, char **ret, struct cordon_error *err)
{
    if (item != NULL && !cJSON_IsNull(item) && !cJSON_IsString(item))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: must be a string, a directory relative to /workspace",
                                field);
    return cordon_path_normalize_dir(field, cJSON_IsString(item) ? item->valuestring : "", ret,
                                     err);
}

static int parse_workspace_env(const cJSON *wenv, struct cordon_exec_request *rq,
                               struct cordon_error *err)
{
    struct cordon_env raw = { 0 };
    int r = cordon_env_from_json(wenv, "workspace_env", &raw, err);

    /* Each value is a directory in the workspace: normalised as cwd is. */
    for (size_t i = 0; r == 0 && i < raw.n; i++) {
        char field[CORDON_ENV_NAME_MAX + 32], *norm = NULL;
        cJSON *s = cJSON_CreateString(raw.vars[i].value);

        snprintf(field, sizeof(field), "workspace_env.%s", raw.vars[i].name);
        r = s != NULL ? parse_dir(s, field, &norm, err) : nomem(err, "workspace_env");
        cJSON_Delete(s);
        if (r == 0)
            r = cordon_env_set(&rq->workspace_env, raw.vars[i].name, norm, err);
        free(norm);
    }
    cordon_env_clear(&raw);
    return r;
}

int cordon_exec_request_parse(const char *json, struct cordon_exec_request *ret,
                              struct cordon_error *err)
{
    struct cordon_exec_request rq;
    cJSON *doc = NULL;
    const cJSON *item;
    size_t bytes = 0;
    int r;

    cordon_exec_request_init(&rq);
    if (ret == NULL) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0, "request: no result pointer");
        goto out;
    }
    if ((r = cordon_json_parse_object("request", json, CORDON_REQUEST_MAX, &doc, err)) < 0 ||
        (r = parse_argv(cJSON_GetObjectItemCaseSensitive(doc, "argv"), &rq, err)) < 0 ||
        (r = parse_dir(cJSON_GetObjectItemCaseSensitive(doc, "cwd"), "cwd", &rq.cwd, err)) < 0 ||
        (r = cordon_env_from_json(cJSON_GetObjectItemCaseSensitive(doc, "env"), "env", &rq.env,
                                  err)) < 0 ||
        (r = parse_workspace_env(cJSON_GetObjectItemCaseSensitive(doc, "workspace_env"), &rq,
                                 err)) < 0)
        goto out;
    item = cJSON_GetObjectItemCaseSensitive(doc, "timeout_ms");
    if (item != NULL && !cJSON_IsNull(item) &&
        (r = cordon_json_u64(item, "timeout_ms", 0, (uint64_t)CORDON_JSON_INT_MAX, &rq.timeout_ms,
                             err)) < 0)
        goto out;
    /* One budget for what the kernel copies into the new process. */
    for (size_t i = 0; i < rq.argc; i++)
        bytes += strlen(rq.argv[i]) + 1;
    bytes += env_bytes(&rq.env) + env_bytes(&rq.workspace_env);
    if (bytes > CORDON_ARGS_TOTAL_MAX) {
        r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                             "argv and env: %zu bytes together exceed the limit of %u", bytes,
                             CORDON_ARGS_TOTAL_MAX);
        goto out;
    }
    *ret = rq;
    cordon_exec_request_init(&rq);
out:
    cJSON_Delete(doc);
    cordon_exec_request_clear(&rq);
    return r;
}

int cordon_exec_request_print(const struct cordon_exec_request *rq, char **ret_json,
                              struct cordon_error *err)
{
    struct cordon_exec_request check;
    cJSON *doc = NULL, *argv;
    char *text = NULL;
    bool ok;
    int r;

    if (rq == NULL || ret_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "request: no request or result pointer");
    doc = cJSON_CreateObject();
    ok = doc != NULL && (argv = cJSON_AddArrayToObject(doc, "argv")) != NULL;
    for (size_t i = 0; ok && i < rq->argc; i++)
        ok = rq->argv[i] != NULL && cJSON_AddItemToArray(argv, cJSON_CreateString(rq->argv[i]));
    ok = ok && cJSON_AddStringToObject(doc, "cwd", rq->cwd != NULL ? rq->cwd : "") != NULL &&
         cJSON_AddItemToObject(doc, "env", cordon_env_to_json(&rq->env)) &&
         cJSON_AddItemToObject(doc, "workspace_env", cordon_env_to_json(&rq->workspace_env)) &&
         cJSON_AddNumberToObject(doc, "timeout_ms", (double)rq->timeout_ms) != NULL;
    if (ok)
        text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    if (text == NULL)
        return nomem(err, "request");
    /* What is printed is what a provider will read: read it the same way. */
    cordon_exec_request_init(&check);
    r = cordon_exec_request_parse(text, &check, err);
    cordon_exec_request_clear(&check);
    if (r < 0) {
        free(text);
        return r;
    }
    *ret_json = text;
    return 0;
}

/* ---- the exec result ----------------------------------------------------- */

int cordon_exec_result_parse(const char *json, struct cordon_exec_result *ret,
                             struct cordon_error *err)
{
    struct cordon_exec_result res = { 0 };
    const cJSON *item;
    cJSON *doc = NULL;
    uint64_t v;
    int st, r;

    if (ret == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "result_json: no result pointer");
    if ((r = cordon_json_parse_object("result_json", json, CORDON_RESULT_MAX, &doc, err)) < 0)
        return r;
    st = cordon_run_status_parse(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc,
                                                                                     "status")));
    if (st < 0) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0,
                             "result_json.status: missing or unknown (want exited, signaled, "
                             "oom or cancelled)");
        goto out;
    }
    res.status = (enum cordon_run_status)st;
    item = cJSON_GetObjectItemCaseSensitive(doc, "exit_code");
    if (res.status == CORDON_RUN_EXITED) {
        if ((r = cordon_json_u64(item, "result_json.exit_code", 0, 255, &v, err)) < 0)
            goto out;
        res.exit_code = (int)v;
    }
    /* Required with signaled; with another status a signal 1..64 is kept
     * (the one that ended an oom, say) and anything else ignored. */
    item = cJSON_GetObjectItemCaseSensitive(doc, "signal");
    if (res.status == CORDON_RUN_SIGNALED) {
        if ((r = cordon_json_u64(item, "result_json.signal", 1, 64, &v, err)) < 0)
            goto out;
        res.signal = (int)v;
    } else if (res.status != CORDON_RUN_EXITED &&
               cordon_json_u64(item, "result_json.signal", 1, 64, &v, NULL) == 0) {
        res.signal = (int)v;
    }
    /* The mechanism folds signals into 128+N: it says so, never guesses. */
    res.signal_folded = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "signal_folded")) &&
                        res.status == CORDON_RUN_EXITED && res.exit_code > 128 &&
                        res.exit_code <= 128 + 64;
    res.backstop_timeout = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "backstop_timeout"));
    res.execution_ended = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "execution_ended"));
    r = 0;
    *ret = res;
out:
    cJSON_Delete(doc);
    return r;
}

int cordon_exec_result_print_host(const struct cordon_host_v1 *host,
                                  const struct cordon_exec_result *res, char **ret_json,
                                  struct cordon_error *err)
{
    struct cordon_exec_result check;
    const char *name = res != NULL ? cordon_run_status_name(res->status) : NULL;
    cJSON *doc;
    bool ok;
    int r;

    if (host == NULL || res == NULL || ret_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "result_json: host, result and ret_json required");
    doc = cJSON_CreateObject();
    ok = doc != NULL && name != NULL && cJSON_AddStringToObject(doc, "status", name) != NULL;
    if (ok && res->status == CORDON_RUN_EXITED)
        ok = cJSON_AddNumberToObject(doc, "exit_code", res->exit_code) != NULL &&
             (!res->signal_folded || res->exit_code <= 128 || res->exit_code > 128 + 64 ||
              cJSON_AddTrueToObject(doc, "signal_folded") != NULL);
    else if (ok && res->signal != 0)
        ok = cJSON_AddNumberToObject(doc, "signal", res->signal) != NULL;
    if (ok && res->backstop_timeout)
        ok = cJSON_AddTrueToObject(doc, "backstop_timeout") != NULL;
    if (ok && res->execution_ended)
        ok = cJSON_AddTrueToObject(doc, "execution_ended") != NULL;
    if (!ok) {
        cJSON_Delete(doc);
        return name == NULL ? cordon_error_set(err, CORDON_E_INVALID, 0,
                                               "result_json.status: not a status")
                            : nomem(err, "result_json");
    }
    r = cordon_json_print_host(host, doc, ret_json, err);
    cJSON_Delete(doc);
    if (r < 0)
        return r;
    /* What is printed is what the host will read: read it the same way. */
    r = cordon_exec_result_parse(*ret_json, &check, err);
    if (r < 0) {
        host->free(*ret_json);
        *ret_json = NULL;
    }
    return r;
}

int cordon_exec_result_from_outcome(const struct cordon_exec_outcome *o,
                                    struct cordon_exec_result *ret, struct cordon_error *err)
{
    struct cordon_exec_result res = { 0 };

    if (o == NULL || ret == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "result: outcome and ret required");
    res.status = o->status;
    switch (o->status) {
    case CORDON_RUN_EXITED:
        res.exit_code = o->exit_code;
        break;
    case CORDON_RUN_SIGNALED:
        res.signal = o->signal;
        break;
    case CORDON_RUN_CANCELLED:
    case CORDON_RUN_OOM:
        break;
    case CORDON_RUN_TIMEOUT:
        /* The backstop fired before the host's clock: it was killed. */
        res.status = CORDON_RUN_SIGNALED;
        res.signal = SIGKILL;
        res.backstop_timeout = true;
        break;
    default:
        return cordon_error_set(err, CORDON_E_PROVIDER, 0, "exec: the runner ended with status %s",
                                cordon_run_status_name(o->status));
    }
    *ret = res;
    return 0;
}

int cordon_exec_backstop_ms(uint64_t expires_at_ms, uint64_t timeout_ms, uint64_t now_ms,
                            uint64_t *ret_ms, struct cordon_error *err)
{
    uint64_t left;

    if (ret_ms == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "backstop: ret_ms required");
    if (expires_at_ms <= now_ms)
        return cordon_error_set(err, CORDON_E_TIMEOUT, 0,
                                "expires_at_ms: the execution expired %" PRIu64 " ms ago",
                                now_ms - expires_at_ms);
    left = expires_at_ms - now_ms;
    /* timeout_ms + slack < left, written so that it cannot overflow. */
    if (timeout_ms != 0 && left > CORDON_EXEC_BACKSTOP_SLACK_MS &&
        timeout_ms < left - CORDON_EXEC_BACKSTOP_SLACK_MS)
        left = timeout_ms + CORDON_EXEC_BACKSTOP_SLACK_MS;
    *ret_ms = left;
    return 0;
}
