/* The request builder of run, pool fill and provision (request.h). */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cordon/sdk/bounds.h>
#include <cordon/text.h>

#include "core/cli/request.h"
#include "core/limits.h"
#include "sdk/fs-internal.h"

int cli_request_env(cJSON **env, const char *arg, struct cordon_error *err)
{
    const char *eq = strchr(arg, '=');
    char name[CORDON_ENV_NAME_MAX];

    if (eq == NULL || eq == arg)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "--env: \"%.*s\" is not NAME=VALUE",
                                cordon_text_fit(arg, 64), arg);
    if ((size_t)(eq - arg) >= sizeof(name))
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "--env: a NAME of %zu bytes, more than the limit of %d",
                                (size_t)(eq - arg), CORDON_ENV_NAME_MAX - 1);
    memcpy(name, arg, (size_t)(eq - arg));
    name[eq - arg] = '\0';
    if (*env == NULL && (*env = cJSON_CreateObject()) == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "--env: out of memory");
    cJSON_DeleteItemFromObjectCaseSensitive(*env, name);
    if (cJSON_AddStringToObject(*env, name, eq + 1) == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "--env: out of memory");
    return 0;
}

enum limit_kind { SIZE, DURATION, COUNT, CPUS };

/* The six limit flags in CLI_OPT_* order, their keys (cordon_limit_keys)
 * and the sdk's bounds. */
static const struct limit_flag {
    const char *flag, *key;
    enum limit_kind kind;
    uint64_t min, max;
} limit_flags[] = {
    { "--cpus", "cpus", CPUS, 0, 0 },
    { "--memory", "memory_bytes", SIZE, CORDON_LIMIT_MEMORY_MIN, CORDON_LIMIT_MEMORY_MAX },
    { "--disk", "disk_bytes", SIZE, CORDON_LIMIT_DISK_MIN, CORDON_LIMIT_DISK_MAX },
    { "--pids", "pids", COUNT, CORDON_LIMIT_PIDS_MIN, CORDON_LIMIT_PIDS_MAX },
    { "--runtime", "runtime_ms", DURATION, CORDON_LIMIT_RUNTIME_MIN, CORDON_LIMIT_RUNTIME_MAX },
    { "--max-output", "max_output_bytes", SIZE, CORDON_LIMIT_OUTPUT_MIN, CORDON_LIMIT_OUTPUT_MAX },
};

bool cli_request_is_limit(int opt)
{
    return opt >= CLI_OPT_CPUS && opt <= CLI_OPT_MAX_OUTPUT;
}

int cli_request_limit(cJSON **limits, int opt, const char *arg, struct cordon_error *err)
{
    const struct limit_flag *l;
    const char *flag;
    double value;
    uint64_t v = 0;
    char *end = NULL;
    int r = 0;

    assert(cli_request_is_limit(opt));
    l = &limit_flags[opt - CLI_OPT_CPUS];
    flag = l->flag;
    if (l->kind == CPUS) {
        value = strtod(arg, &end);
        if (end == arg || *end != '\0' || !isfinite(value))
            return cordon_error_set(err, CORDON_E_INVALID, 0, "--cpus: \"%.*s\" is not a number",
                                    cordon_text_fit(arg, 40), arg);
        if (value < CORDON_LIMIT_CPUS_MIN || value > CORDON_LIMIT_CPUS_MAX)
            return cordon_error_set(err, CORDON_E_LIMIT, 0, "--cpus: %.*s is outside %g..%g",
                                    cordon_text_fit(arg, 40), arg,
                                    CORDON_LIMIT_CPUS_MIN, CORDON_LIMIT_CPUS_MAX);
        goto add;
    }
    if (l->kind == SIZE) {
        r = cordon__parse_size(flag, arg, &v, err);
    } else if (l->kind == DURATION) {
        r = cordon__parse_duration_ms(flag, arg, &v, err);
    } else {
        errno = 0;
        v = strtoull(arg, &end, 10);
        if (arg[0] < '0' || arg[0] > '9' || *end != '\0' || errno != 0)
            r = cordon_error_set(err, CORDON_E_INVALID, 0, "%s: \"%.*s\" is not a whole number", flag,
                                 cordon_text_fit(arg, 40), arg);
    }
    if (r < 0)
        return r;
    /* The sdk's bounds, the ones the request is held to after: refused
     * here, the message names the flag rather than the request's key. */
    if (v < l->min || v > l->max)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "%s: %.*s is outside %llu..%llu%s", flag,
                                cordon_text_fit(arg, 40), arg,
                                (unsigned long long)l->min, (unsigned long long)l->max,
                                l->kind == SIZE ? " bytes" : l->kind == DURATION ? " ms" : "");
    value = (double)v;
add:
    if (*limits == NULL && (*limits = cJSON_CreateObject()) == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "%s: out of memory", flag);
    cJSON_DeleteItemFromObjectCaseSensitive(*limits, l->key);
    if (cJSON_AddNumberToObject(*limits, l->key, value) == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "%s: out of memory", flag);
    return 0;
}

int cli_request_merge_file(cJSON **req, const char *path, struct cordon_error *err)
{
    bool is_stdin = strcmp(path, "-") == 0;
    int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    cJSON *file_req = NULL, *merged;
    char *text = NULL, name[128];
    int r;

    if (fd < 0)
        return cordon_error_set(err, errno == ENOENT ? CORDON_E_NOT_FOUND : CORDON_E_IO, errno,
                                "--request: %.*s: %s", cordon_text_fit(path, 200), path, strerror(errno));
    snprintf(name, sizeof(name), "--request %.*s", cordon_text_fit(path, 100), path);
    r = cordon__fs_read_fd(fd, name, CLI_REQUEST_FILE_MAX, 0, &text, NULL, err);
    if (!is_stdin)
        close(fd);
    if (r < 0)
        return r;
    r = cordon__json_parse(name, text, CLI_REQUEST_FILE_MAX, &file_req, err);
    free(text);
    if (r < 0)
        return r;
    if (!cJSON_IsObject(file_req)) {
        cJSON_Delete(file_req);
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: must be a JSON object", name);
    }
    merged = cordon__json_merge(file_req, *req);
    cJSON_Delete(file_req);
    if (merged == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "--request: out of memory");
    cJSON_Delete(*req);
    *req = merged;
    return 0;
}

int cli_request_best_effort(cJSON *req, const char *arg, struct cordon_error *err)
{
    static const struct { const char *flag, *key; } names[] = {
        { "cpus", "cpus" }, { "memory", "memory_bytes" }, { "disk", "disk_bytes" },
        { "pids", "pids" }, { "runtime", "runtime_ms" }, { "max-output", "max_output_bytes" },
    };
    cJSON *list = cJSON_GetObjectItemCaseSensitive(req, "best_effort_limits");
    const char *p = arg;

    if (list == NULL)
        list = cJSON_AddArrayToObject(req, "best_effort_limits");
    if (list == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
    do {
        size_t len = strcspn(p, ","), i;

        for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            if (strlen(names[i].flag) == len && strncmp(p, names[i].flag, len) == 0)
                break;
        if (i == sizeof(names) / sizeof(names[0]))
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "--best-effort: \"%.*s\" is not a limit (cpus, memory, disk, pids, runtime, "
                                    "max-output)", (int)(len > 64 ? 64 : len), p);
        cJSON_AddItemToArray(list, cJSON_CreateString(names[i].key));
        p += len;
    } while (*p++ == ',');
    return 0;
}
