/*
 * core: the one mapping from a result's status to the `cordon` command's
 * exit status (cordon(1), EXIT STATUS), for a run's result document and an
 * exec's alike. The two documents spell a few things differently (a run's
 * "success" and "error" are an exec's "exited"); the numbers are the same.
 */
#include <string.h>

#include <cjson/cJSON.h>
#include <cordon/cordon.h>

#include "core/run.h"

enum {
    EXIT_TIMEOUT = 124,   /* timeout, expired */
    EXIT_CORDON = 125,    /* cordon's own failure, a refusal, no result */
    EXIT_KILLED = 137,    /* oom, output_limit, cancelled: killed as by SIGKILL */
};

int cordon__run_exit_status(const cJSON *doc)
{
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(doc, "status");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(doc, "exit_code");
    const cJSON *sig = cJSON_GetObjectItemCaseSensitive(doc, "signal");
    const char *s = cJSON_IsString(status) ? status->valuestring : "";

    if ((strcmp(s, "success") == 0 || strcmp(s, "exited") == 0) && cJSON_IsNumber(code))
        return code->valueint;
    if (strcmp(s, "error") == 0 && cJSON_IsNumber(code) && code->valueint != 0)
        /* "error" with exit 0: the program succeeded, cordon did not
         * (collect, release): cordon's failure. */
        return code->valueint;
    if (strcmp(s, "signaled") == 0 && cJSON_IsNumber(sig))
        return 128 + sig->valueint;
    if (strcmp(s, "timeout") == 0 || strcmp(s, "expired") == 0)
        return EXIT_TIMEOUT;
    if (strcmp(s, "oom") == 0 || strcmp(s, "output_limit") == 0 || strcmp(s, "cancelled") == 0)
        return EXIT_KILLED;
    return EXIT_CORDON;
}

static int exit_status(const char *result_json)
{
    cJSON *doc = result_json != NULL ? cJSON_Parse(result_json) : NULL;
    int rc = cordon__run_exit_status(doc);

    cJSON_Delete(doc);
    return rc;
}

int cordon_result_exit_status(const char *result_json)
{
    return exit_status(result_json);
}

int cordon_exec_exit_status(const char *result_json)
{
    return exit_status(result_json);
}
