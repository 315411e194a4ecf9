/* core: exec in an execution (json.md §8) — the caller's request
 * checked and rewritten as the provider's, run under the record's lock
 * and output budget. A command that times out, overflows or is cancelled
 * ends alone; the execution is destroyed only when its deadline passed or
 * the provider had to end it to end the command. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/drive.h"
#include <cordon/sdk/capture.h>
#include <cordon/sdk/path.h>
#include <cordon/sdk/request.h>
#include "core/env.h"
#include "core/hostflow.h"
#include "core/limits.h"
#include "core/loader.h"
#include "core/record.h"
#include "core/run.h"

/* Build the provider request text (malloc'd) from the caller's exec request. */
static int exec_request(const cJSON *req, uint64_t left_ms, char **ret, uint64_t *ret_timeout,
                        struct cordon_error *err)
{
    static const char *const keys[] = { "command", "args", "cwd", "environment", "timeout_ms" };
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(req, "command");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(req, "args");
    const cJSON *cwd = cJSON_GetObjectItemCaseSensitive(req, "cwd");
    const cJSON *env = cJSON_GetObjectItemCaseSensitive(req, "environment");
    const cJSON *timeout = cJSON_GetObjectItemCaseSensitive(req, "timeout_ms");
    const cJSON *a;
    struct cordon_exec_request prq;
    char *norm = NULL;
    size_t bytes = 0;
    int r;

    if (!cJSON_IsObject(req))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "request: must be a JSON object");
    if ((r = cordon__check_keys("", req, keys, 5, err)) < 0)
        return r;
    if (!cJSON_IsString(cmd) || cmd->valuestring[0] == '\0')
        return cordon_error_set(err, CORDON_E_INVALID, 0, "command: required, a program name or path");
    if (args != NULL && !cJSON_IsArray(args))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "args: must be an array of strings (one argv entry each), not a shell string");
    if (cJSON_GetArraySize(args) + 1 > CORDON_ARGV_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "args: %d entries exceed the limit of %d",
                                cJSON_GetArraySize(args) + 1, CORDON_ARGV_MAX);
    cJSON_ArrayForEach(a, args) {
        if (!cJSON_IsString(a))
            return cordon_error_set(err, CORDON_E_INVALID, 0, "args: every entry must be a string");
        bytes += strlen(a->valuestring) + 1;
    }
    if (bytes > CORDON_HOST_ARGS_BYTES_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "args: %zu bytes exceed the limit of %u", bytes,
                                CORDON_HOST_ARGS_BYTES_MAX);
    if ((r = cordon__env_validate("environment", env, err)) < 0)
        return r;
    *ret_timeout = left_ms;
    if (timeout != NULL) {
        if (!cJSON_IsNumber(timeout) || timeout->valuedouble < 1)
            return cordon_error_set(err, CORDON_E_INVALID, 0, "timeout_ms: must be a number >= 1");
        /* capped by the execution's remaining lifetime */
        if ((uint64_t)timeout->valuedouble < left_ms)
            *ret_timeout = (uint64_t)timeout->valuedouble;
    }
    /* cwd is under /workspace: "/workspace/x", "x" and "" all name a place in it */
    if (cwd != NULL) {
        const char *c;
        if (!cJSON_IsString(cwd))
            return cordon_error_set(err, CORDON_E_INVALID, 0, "cwd: must be a string");
        c = cwd->valuestring;
        if (strcmp(c, "/workspace") == 0)
            c = "";
        else if (strncmp(c, "/workspace/", 11) == 0)
            c += 11;
        else if (c[0] == '/')
            return cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                    "cwd: \"%.*s\" must be under /workspace",
                                    cordon_text_fit(c, 200), c);
        if ((r = cordon_path_normalize_dir("cwd", c, &norm, err)) < 0)
            return r;
    }
    /* The provider reads it with cordon_exec_request_parse: built as that
     * struct, printed by the one writer, which refuses what it would. */
    cordon_exec_request_init(&prq);
    prq.cwd = norm != NULL ? norm : strdup("");
    prq.timeout_ms = *ret_timeout;
    r = prq.cwd != NULL ? cordon_exec_request_add_arg(&prq, cmd->valuestring, err)
                        : cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
    cJSON_ArrayForEach(a, args) {
        if (r == 0)
            r = cordon_exec_request_add_arg(&prq, a->valuestring, err);
    }
    if (r == 0)
        r = cordon_env_from_json(env, "environment", &prq.env, err);
    if (r == 0 && cordon_env_get(&prq.env, "PATH") == NULL)
        r = cordon_env_set(&prq.env, "PATH", "/usr/local/bin:/usr/bin:/bin", err);
    if (r == 0)
        r = cordon_exec_request_print(&prq, ret, err);
    cordon_exec_request_clear(&prq);
    return r;
}

static int exec_flow(struct cordon_ctx *ctx, const char *execution_id, const char *request_json,
                     int stdin_fd, int stdout_fd, int stderr_fd, int cancel_fd, char **ret_json,
                     struct cordon_error *err)
{
    struct cordon__record *rec = NULL;
    struct cordon__bound b = { NULL, NULL };
    struct cordon_exec_outcome out;
    struct cordon_drive_opts opts;
    struct cordon_limits limits;
    cJSON *req = NULL, *result = NULL;
    char *state = NULL, *ptext = NULL;
    uint64_t left = 0, timeout = 0;
    bool terminated = false, marked = false, ended = false;
    int r;

    memset(&out, 0, sizeof(out));
    r = cordon__json_parse_bounded("request", request_json, &req, err);
    if (r < 0)
        return r;
    /* Validate what we can before taking the lock. */
    /* No execution lives longer than the runtime bound. */
    r = exec_request(req, CORDON_LIMIT_RUNTIME_MAX, &ptext, &timeout, err);
    free(ptext);
    ptext = NULL;
    if (r < 0)
        goto out;
    r = cordon__record_open(ctx, execution_id, false, &rec, err);
    if (r < 0)
        goto out;
    result = cJSON_CreateObject();
    cJSON_AddStringToObject(result, "execution_id", execution_id);
    if ((r = cordon__bind_record(ctx, rec, &b, err)) < 0)
        goto out;
    if (cordon__record_expired(rec, &left)) {
        /* The deadline passed: the execution goes, and the caller hears why. */
        r = cordon__execution_destroy_bound(ctx, rec, &b, err);
        if (r < 0)
            goto out;
        cJSON_AddBoolToObject(result, "ok", false);
        cJSON_AddStringToObject(result, "status", "expired");
        cJSON_AddNullToObject(result, "exit_code");
        cJSON_AddBoolToObject(result, "execution_terminated", true);
        cJSON_AddStringToObject(result, "execution_terminated_reason", "expired");
        cordon__result_add_stream(result, "stdout", "", 0, 0, 0);
        cordon__result_add_stream(result, "stderr", "", 0, 0, 0);
        goto done;
    }
    if ((r = exec_request(req, left, &ptext, &timeout, err)) < 0)
        goto out;
    state = cordon__record_state(rec);
    if (state == NULL || ptext == NULL) {
        r = cordon_error_set(err, CORDON_E_IO, 0, "execution %s: not ready (no provider state)", execution_id);
        goto out;
    }
    if ((r = cordon__record_limits(rec, &limits, err)) < 0)
        goto out;
    if ((r = cordon__record_exec_begin(rec, err)) < 0)
        goto out;
    marked = true;
    cordon__drive_opts_init(&opts);
    opts.host = ctx->host;
    opts.provider = &b.p->vt;
    opts.resource = b.res;
    opts.state_json = state;
    opts.request_json = ptext;
    opts.stdin_fd = stdin_fd;
    opts.timeout_ms = timeout;
    opts.retention_bytes = (size_t)limits.max_output_bytes;   /* within the budget, everything is kept */
    opts.output_budget = limits.max_output_bytes;
    opts.cancel_fd = cancel_fd;
    opts.stdout_sink_fd = stdout_fd;
    opts.stderr_sink_fd = stderr_fd;
    opts.ret_execution_ended = &ended;
    r = cordon__drive_exec(&opts, &out, err);
    if (r < 0)
        goto out;   /* the mechanism failed (daemon gone...): the record stays for reclaim */
    /* The execution's lifetime, not the caller's timeout, ended it: the
     * deadline killed the process (the host's clock or the sandbox's own). */
    if (timeout == left && (out.status == CORDON_RUN_TIMEOUT || out.status == CORDON_RUN_SIGNALED) &&
        cordon__record_expired(rec, NULL))
        out.status = CORDON_RUN_EXPIRED;
    cJSON_AddStringToObject(result, "status", cordon_run_status_name(out.status));
    cJSON_AddBoolToObject(result, "ok", out.status == CORDON_RUN_EXITED && out.exit_code == 0);
    if (out.status == CORDON_RUN_EXITED)
        cJSON_AddNumberToObject(result, "exit_code", out.exit_code);
    else
        cJSON_AddNullToObject(result, "exit_code");
    /* exit_code 128+N that a death by signal N would also have given. */
    if (out.status == CORDON_RUN_EXITED && out.signal != 0)
        cJSON_AddBoolToObject(result, "signal_folded", true);
    if (out.status == CORDON_RUN_SIGNALED)
        cJSON_AddNumberToObject(result, "signal", out.signal);
    cordon__result_add_stream(result, "stdout", out.out.data, out.out.len, out.out.head_len,
                              out.out.dropped_bytes);
    cordon__result_add_stream(result, "stderr", out.err.data, out.err.len, out.err.head_len,
                              out.err.dropped_bytes);
    cJSON_AddNumberToObject(result, "duration_ms", (double)out.duration_ms);
    /* Timeout, overflow and cancellation end the command's process group
     * and leave the execution ready; the provider waited for the group to
     * go before it answered. Only the execution's deadline, or a provider
     * that had to end the whole execution to end the command (its facts
     * say exec_cancel "execution"), ends the execution: the record goes. */
    if (out.status == CORDON_RUN_EXPIRED || ended) {
        struct cordon_error derr;
        cordon_error_init(&derr);
        terminated = cordon__execution_destroy_bound(ctx, rec, &b, &derr) == 0;
        if (terminated) {
            cordon__record_close(rec);
            rec = NULL;
        }
        /* Destroyed, the mark went with the record. Not destroyed, what the
         * process tree left may still run: the mark stays, and gc destroys
         * the execution as one whose exec never finished. */
        marked = false;
        cJSON_AddStringToObject(result, "execution_terminated_reason",
                                out.status == CORDON_RUN_EXPIRED ? "expired" : "provider_ended_execution");
    }
    r = 0;
    cJSON_AddBoolToObject(result, "execution_terminated", terminated);
done:
    r = cordon__json_done(0, result, ret_json, err);
    result = NULL;
out:
    /* Only the mark this call made goes, and only when the execution is
     * in a known state (the command ended, or the mechanism failed before
     * or around it and the record stays for reclaim, as before). */
    if (marked)
        cordon__record_exec_end(rec);
    cordon_exec_outcome_clear(&out);
    cordon__unbind_provider(&b, NULL);
    cordon__record_close(rec);
    cJSON_Delete(result);
    cJSON_Delete(req);
    free(state);
    free(ptext);
    return r;
}

int cordon_exec_json(struct cordon_ctx *ctx, const char *execution_id, const char *request_json,
                     int stdin_fd, int cancel_fd, char **ret_json, struct cordon_error *err)
{
    return exec_flow(ctx, execution_id, request_json, stdin_fd, -1, -1, cancel_fd, ret_json, err);
}

int cordon_exec_stream_json(struct cordon_ctx *ctx, const char *execution_id, const char *request_json,
                            int stdin_fd, int stdout_fd, int stderr_fd, int cancel_fd, char **ret_json,
                            struct cordon_error *err)
{
    return exec_flow(ctx, execution_id, request_json, stdin_fd, stdout_fd, stderr_fd, cancel_fd, ret_json,
                     err);
}
