/* See cli_extend.h. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <cordon/sdk/host.h>

#include "tests/common/wait.h"
#include "tests/mechanism/cli_extend.h"

/* A sandbox's init starts a moment after its deadline was fixed: its own
 * clock ends up to this much after the record's. */
#define INIT_START_SLACK_MS 3000

/* `cordon ARGS... --json`, parsed (the exit code into *ret_code). */
static cJSON *run_json(const struct cli_exec *c, const char *const *args, int *ret_code)
{
    char *out = NULL;
    cJSON *doc;

    *ret_code = cli_exec_run(c, args, -1, &out);
    doc = cJSON_Parse(out);
    cr_assert_not_null(doc, "%s: not JSON: %.800s", args[0], out);
    free(out);
    return doc;
}

static uint64_t expires_at(const struct cli_exec *c, const char *id)
{
    const char *args[] = { "ls", "--json", NULL };
    const cJSON *e;
    uint64_t at = 0;
    int code;
    cJSON *doc = run_json(c, args, &code);

    cJSON_ArrayForEach(e, cJSON_GetObjectItem(doc, "executions"))
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(e, "execution_id")) ?: "", id) == 0)
            at = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(e, "expires_at_ms"));
    cJSON_Delete(doc);
    cr_assert_gt(at, 0, "cordon ls shows no expires_at_ms for %s", id);
    return at;
}

void cli_extend_check_outlives_its_first_deadline(const struct cli_exec *c, const char *provider)
{
    struct cli_exec short_lived = *c;
    char *kept, *control;
    uint64_t first, moved;
    const char *extend_args[] = { "extend", NULL, "--runtime", "30s", "--json", NULL };
    cJSON *doc, *x;
    int code;

    short_lived.runtime = "3s";
    kept = cli_exec_provision(&short_lived, provider);
    control = cli_exec_provision(&short_lived, provider);
    first = expires_at(c, kept);
    extend_args[1] = kept;
    doc = run_json(c, extend_args, &code);
    cr_assert_eq(code, 0, "cordon extend under %s: %s", provider, cJSON_PrintUnformatted(doc));
    moved = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(doc, "expires_at_ms"));
    cr_expect_geq(moved, first + 20000, "the deadline moved by less than asked");
    cr_expect_eq(expires_at(c, kept), moved, "the record holds the new deadline");
    cJSON_Delete(doc);
    /* Waiting past the first deadline is the point: the clock is the condition. */
    cr_assert(TEST_WAIT_UNTIL(cordon_now_wall_ms() > first + INIT_START_SLACK_MS, 30000));
    x = cli_exec_sh(c, kept, NULL, -1, "echo alive");
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(x, "status")), "exited",
                     "%s: the extended execution did not outlive its first deadline: %s", provider,
                     cJSON_PrintUnformatted(x));
    cr_expect(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(x, "stdout")) ?: "", "alive") != NULL);
    cJSON_Delete(x);
    x = cli_exec_sh(c, control, NULL, -1, "echo alive");
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(x, "status")), "expired",
                     "%s: the execution that was not extended still ran", provider);
    cJSON_Delete(x);
    cli_exec_terminate(c, kept);
    cli_exec_terminate(c, control);
    free(kept);
    free(control);
}

/* How many checkpoints `checkpoint ls ID` lists; *ret_source the first's source. */
static int ls_count(const struct cli_exec *c, const char *id)
{
    const char *args[] = { "checkpoint", "ls", id, "--json", NULL };
    const cJSON *k;
    int code, n = 0;
    cJSON *doc = run_json(c, args, &code);

    cr_assert_eq(code, 0);
    cJSON_ArrayForEach(k, cJSON_GetObjectItem(doc, "checkpoints")) {
        cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(k, "source_execution_id")) ?: "", id);
        n++;
    }
    cJSON_Delete(doc);
    return n;
}

void cli_extend_check_checkpoint_ls_rm(const struct cli_exec *c, const char *provider)
{
    char *id = cli_exec_provision(c, provider), *ckpt;
    const char *ck_args[] = { "checkpoint", id, "--json", NULL };
    const char *rm_args[] = { "checkpoint", "rm", NULL, "--json", NULL };
    cJSON *doc, *x;
    int code;

    x = cli_exec_sh(c, id, NULL, -1, "echo kept > f");
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(x, "status")), "exited");
    cJSON_Delete(x);
    cr_expect_eq(ls_count(c, id), 0);
    doc = run_json(c, ck_args, &code);
    cr_assert_eq(code, 0, "checkpoint under %s failed", provider);
    ckpt = strdup(cJSON_GetStringValue(cJSON_GetObjectItem(doc, "checkpoint_id")));
    cJSON_Delete(doc);
    cr_expect_eq(ls_count(c, id), 1, "ls does not list the checkpoint of %s", id);
    rm_args[2] = ckpt;
    doc = run_json(c, rm_args, &code);
    cr_expect_eq(code, 0);
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(doc, "ok")));
    cJSON_Delete(doc);
    cr_expect_eq(ls_count(c, id), 0, "rm left the checkpoint listed");
    doc = run_json(c, rm_args, &code);
    cr_expect_eq(code, 125);
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "error"), "code")) ?: "",
                     "checkpoint_not_found");
    cJSON_Delete(doc);
    cli_exec_terminate(c, id);
    free(ckpt);
    free(id);
}
