/* Unit tests of the execution-host lifecycle (core/hostflow.c, core/record.c),
 * end to end through the real trusted-local provider. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cordon/sdk/fs.h>
#include <cordon/text.h>

#include "core/limits.h"
#include "core/record.h"
#include "tests/unit/helpers.h"

static const char base_request[] =
    "{\"provider\":\"trusted-local\",\"allow_unsafe_local\":true,\"isolation\":\"none\","
    "\"resources\":{\"cpus\":1,\"memory_bytes\":268435456,\"disk_bytes\":67108864,\"pids\":128,"
    "\"runtime_ms\":60000,\"max_output_bytes\":1048576}}";

struct env {
    char *state;
    char *dir;          /* holds root */
    char root[600];     /* trusted-local's execution root, private to the test */
    struct cordon_ctx *ctx;
};

/* The env a test opened and has not closed yet: a failed cr_assert ends the
 * test before its env_close, and the suites' .fini closes it then, so that
 * a failing test leaves no directory or mount behind either. */
static struct env *open_env;

static void env_close(struct env *e);

static void env_fini(void)
{
    if (open_env != NULL)
        env_close(open_env);
}

TestSuite(hostflow, .fini = env_fini);
TestSuite(record, .fini = env_fini);

/* Each test gets its own trusted-local root, so tests running at the same
 * time (or a crashed earlier run) never see each other's executions. */
static void env_open(struct env *e)
{
    char *dir = test_mkdtemp(), config[1024];

    e->state = NULL;
    cr_assert_not_null(dir);
    chmod(dir, 0711);   /* the sandbox user passes through to its workspace */
    snprintf(e->root, sizeof(e->root), "%s/tl", dir);
    snprintf(config, sizeof(config), "{\"provider_configs\":{\"trusted-local\":{\"root\":\"%s\"}}}", e->root);
    e->ctx = test_ctx_open(config, &e->state);
    e->dir = dir;
    open_env = e;
    cr_assert_not_null(e->ctx);
}

static void env_close(struct env *e)
{
    char left[1024];
    int mounts;

    open_env = NULL;
    cordon_ctx_free(e->ctx);
    /* A CI run once found a trusted-local area of this suite still mounted
     * after every test had passed: each test now answers for its own. */
    mounts = test_unmount_under(e->dir, left, sizeof(left));
    cr_expect_eq(mounts, 0, "%d mount(s) left behind, the first at %s", mounts, left);
    test_rmtree(e->state);
    test_rmtree(e->dir);
    free(e->state);
    free(e->dir);
}

/* base_request with patch merged over it. */
static char *request(const char *patch)
{
    cJSON *base = cJSON_Parse(base_request), *p = cJSON_Parse(patch != NULL ? patch : "{}"), *m;
    char *text;

    cr_assert_not_null(p, "bad patch %s", patch);
    m = cordon__json_merge(base, p);
    text = cJSON_PrintUnformatted(m);
    cJSON_Delete(base);
    cJSON_Delete(p);
    cJSON_Delete(m);
    return text;
}

static cJSON *provision_ok(struct env *e, const char *patch)
{
    char *req = request(patch), *out = NULL;
    struct cordon_error err;
    cJSON *doc;

    cordon_error_init(&err);
    cr_assert_eq(cordon_provision_json(e->ctx, req, &out, &err), 0, "%s", err.message);
    doc = cJSON_Parse(out);
    free(req);
    free(out);
    return doc;
}

/* exec_argv with cancel_fd as the caller's cancel. */
static cJSON *exec_argv_cancel(struct env *e, const char *id, const char *json_args, const char *extra,
                               int cancel_fd)
{
    char req[8192], *out = NULL;
    struct cordon_error err;
    cJSON *doc;

    snprintf(req, sizeof(req), "{\"command\":\"sh\",\"args\":%s%s%s}", json_args, extra ? "," : "",
             extra ? extra : "");
    cordon_error_init(&err);
    cr_assert_eq(cordon_exec_json(e->ctx, id, req, -1, cancel_fd, &out, &err), 0, "%s", err.message);
    doc = cJSON_Parse(out);
    free(out);
    return doc;
}

static cJSON *exec_argv(struct env *e, const char *id, const char *json_args, const char *extra)
{
    return exec_argv_cancel(e, id, json_args, extra, -1);
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsString(v) ? v->valuestring : "(missing)";
}

/* terminate(id), its answer not needed: its code. */
static int terminate(const struct env *e, const char *id)
{
    char *out = NULL;
    int r = cordon_terminate_json(e->ctx, id, &out, NULL);

    free(out);
    return r;
}

/* The exit status the command line gives an exec result document. */
static int exit_status_of(const cJSON *x)
{
    char *text = cJSON_PrintUnformatted(x);
    int status = cordon_exec_exit_status(text);

    free(text);
    return status;
}

static int record_count(const struct env *e)
{
    char **ids = NULL;
    size_t n = 0;

    cr_assert_eq(cordon__record_list(e->ctx, &ids, &n, NULL), 0);
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
    return (int)n;
}

/* The phase `cordon ls` shows for id (it reads records without their lock). */
/* Whether cordon ls shows execution id with key equal to want (a string,
 * or a bool when want is NULL and key must be true). */
static bool ls_shows(const struct env *e, const char *id, const char *key, const char *want)
{
    const cJSON *item, *v;
    char *out = NULL;
    cJSON *doc;
    bool is = false;

    if (cordon_ls_json(e->ctx, &out, NULL) < 0)
        return false;
    doc = cJSON_Parse(out);
    free(out);
    cJSON_ArrayForEach(item, cJSON_GetObjectItem(doc, "executions")) {
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(item, "execution_id")) ?: "", id) != 0)
            continue;
        v = cJSON_GetObjectItem(item, key);
        is = want != NULL ? strcmp(cJSON_GetStringValue(v) ?: "", want) == 0 : cJSON_IsTrue(v);
    }
    cJSON_Delete(doc);
    return is;
}

static bool ls_phase_is(const struct env *e, const char *id, const char *phase)
{
    return ls_shows(e, id, "phase", phase);
}

static bool area_exists(const struct env *e, const char *id)
{
    char path[800];
    struct stat st;

    snprintf(path, sizeof(path), "%s/%s", e->root, id);
    return lstat(path, &st) == 0;
}

struct refusal {
    char what[48];
    char patch[400];
    int code;
    char needle[64];
};

/* Criterion workers are separate processes: parameters are indices. */
static struct refusal provision_refusals[] = {
    { "no resources", "{\"resources\":null}", CORDON_E_INVALID, "resources" },
    { "no cpus", "{\"resources\":{\"cpus\":null}}", CORDON_E_INVALID, "resources.cpus" },
    { "cpus over 128", "{\"resources\":{\"cpus\":129}}", CORDON_E_LIMIT, "cpus" },
    { "memory over 512 GiB", "{\"resources\":{\"memory_bytes\":550829555712}}", CORDON_E_LIMIT, "memory_bytes" },
    { "disk over 1 TiB", "{\"resources\":{\"disk_bytes\":2199023255552}}", CORDON_E_LIMIT, "disk_bytes" },
    { "pids over 32768", "{\"resources\":{\"pids\":40000}}", CORDON_E_LIMIT, "pids" },
    { "runtime over 24 h", "{\"resources\":{\"runtime_ms\":90000000}}", CORDON_E_LIMIT, "runtime_ms" },
    { "output over 64 MiB", "{\"resources\":{\"max_output_bytes\":68157440}}", CORDON_E_LIMIT, "max_output_bytes" },
    { "memory under the minimum", "{\"resources\":{\"memory_bytes\":1024}}", CORDON_E_LIMIT, "memory_bytes" },
    { "unknown resource", "{\"resources\":{\"gpus\":1}}", CORDON_E_INVALID, "resources.gpus" },
    { "network bridge", "{\"network\":{\"mode\":\"bridge\"}}", CORDON_E_UNSUPPORTED, "never downgraded" },
    { "network host", "{\"network\":{\"mode\":\"host\"}}", CORDON_E_UNSUPPORTED, "network" },
    { "unpinned image", "{\"image\":\"python:3.12\"}", CORDON_E_INVALID, "not pinned" },
    { "credential env", "{\"environment\":{\"GITHUB_TOKEN\":\"x\"}}", CORDON_E_DENIED, "credential" },
    { "bad env name", "{\"environment\":{\"1X\":\"x\"}}", CORDON_E_INVALID, "1X" },
    { "bad id", "{\"execution_id\":\"../evil\"}", CORDON_E_INVALID, "execution_id" },
    { "metadata not an object", "{\"metadata\":[1]}", CORDON_E_INVALID, "metadata" },
    { "metadata nine levels deep",
      "{\"metadata\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":1}}}}}}}}}",
      CORDON_E_LIMIT, "metadata: deeper than the limit of 8 levels" },
    { "unknown key", "{\"privileged\":true}", CORDON_E_INVALID, "privileged" },
    { "relative repository", "{\"workspace\":{\"kind\":\"git\",\"repository\":\"repo\",\"revision\":\"main\"}}",
      CORDON_E_INVALID, "absolute" },
    { "unknown workspace kind", "{\"workspace\":{\"kind\":\"bind\"}}", CORDON_E_INVALID, "workspace.kind" },
    { "no consent", "{\"allow_unsafe_local\":false}", CORDON_E_DENIED, "allow_unsafe_local" },
    { "isolation word", "{\"isolation\":\"strict\"}", CORDON_E_INVALID, "isolation" },
    { "trusted-local under isolation required", "{\"isolation\":\"required\"}", CORDON_E_PROVIDER_UNAVAILABLE,
      "trusted_local" },
    { "a provider the host disproves", "{\"provider\":\"pretender\",\"isolation\":\"none\"}",
      CORDON_E_PROVIDER_UNAVAILABLE, "claims_disproved" },
    { "the same under isolation required", "{\"provider\":\"pretender\",\"isolation\":\"required\"}",
      CORDON_E_PROVIDER_UNAVAILABLE, "claims_disproved: the host observed false" },
};

ParameterizedTestParameters(hostflow, provision_refusals)
{
    static size_t idx[sizeof(provision_refusals) / sizeof(provision_refusals[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *at, hostflow, provision_refusals)
{
    struct refusal *c = &provision_refusals[*at];
    struct env e;
    struct cordon_error err;
    char *req, *out = NULL, patch[512];

    env_open(&e);
    /* a fixed id, so that we can tell nothing of it was created */
    snprintf(patch, sizeof(patch), "%s", c->patch);
    req = request(patch);
    if (strstr(c->patch, "execution_id") == NULL) {
        cJSON *r = cJSON_Parse(req);
        cJSON_AddStringToObject(r, "execution_id", "refused-1");
        free(req);
        req = cJSON_PrintUnformatted(r);
        cJSON_Delete(r);
    }
    cordon_error_init(&err);
    cr_expect_eq(cordon_provision_json(e.ctx, req, &out, &err), c->code, "%s: %s", c->what, err.message);
    cr_expect_neq(strstr(err.message, c->needle), NULL, "%s: \"%s\" lacks \"%s\"", c->what, err.message, c->needle);
    cr_expect_null(out);
    cr_expect_eq(record_count(&e), 0, "%s: a record was left", c->what);
    cr_expect_not(area_exists(&e, "refused-1"), "%s: an execution area was left", c->what);
    free(req);
    env_close(&e);
}

/* Metadata one byte past 16 KiB: the refusal names the field, its size
 * and the limit, and nothing is created. */
Test(hostflow, provision_refuses_metadata_over_its_size)
{
    struct env e;
    struct cordon_error err;
    char *req, *out = NULL, *big = malloc(16384);
    cJSON *r;

    cr_assert_not_null(big);
    /* {"a":"xxx…"} printed is 16385 bytes: 8 of syntax, 16377 x. */
    memset(big, 'x', 16377);
    big[16377] = '\0';
    env_open(&e);
    req = request("{}");
    r = cJSON_Parse(req);
    cJSON_AddStringToObject(r, "execution_id", "refused-1");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(r, "metadata"), "a", big);
    free(req);
    req = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    cordon_error_init(&err);
    cr_expect_eq(cordon_provision_json(e.ctx, req, &out, &err), CORDON_E_LIMIT, "%s", err.message);
    cr_expect_str_eq(err.message, "metadata: 16385 bytes exceeds the limit of 16384");
    cr_expect_null(out);
    cr_expect_eq(record_count(&e), 0, "a record was left");
    cr_expect_not(area_exists(&e, "refused-1"), "an execution area was left");
    free(req);
    free(big);
    env_close(&e);
}

Test(hostflow, lifecycle_exec_terminate_twice)
{
    struct env e;
    cJSON *p, *x;
    char *out = NULL, id[80];

    env_open(&e);
    p = provision_ok(&e, "{\"execution_id\":\"life-1\",\"environment\":{\"GREETING\":\"hi\"}}");
    snprintf(id, sizeof(id), "%s", str(p, "execution_id"));
    cr_expect_str_eq(id, "life-1");
    cr_expect_eq(strncmp(str(p, "expires_at"), "20", 2), 0);
    cr_expect(area_exists(&e, id));
    x = exec_argv(&e, id, "[\"-c\",\"echo $GREETING; echo err >&2; pwd; exit 7\"]", NULL);
    cr_expect_str_eq(str(x, "status"), "exited");
    cr_expect_eq(cJSON_GetObjectItem(x, "exit_code")->valueint, 7);
    cr_expect_eq(strncmp(str(x, "stdout"), "hi\n/", 4), 0, "%s", str(x, "stdout"));
    cr_expect_str_eq(str(x, "stderr"), "err\n");
    cr_expect_eq(exit_status_of(x), 7);
    cJSON_Delete(x);
    /* the duplicate id is refused */
    {
        char *req = request("{\"execution_id\":\"life-1\"}");
        struct cordon_error err;
        cordon_error_init(&err);
        cr_expect_eq(cordon_provision_json(e.ctx, req, &out, &err), CORDON_E_EXISTS);
        free(req);
    }
    cr_assert_eq(cordon_terminate_json(e.ctx, id, &out, NULL), 0);
    cr_expect_neq(strstr(out, "\"already_gone\":false"), NULL, "%s", out);
    free(out);
    cr_assert_eq(cordon_terminate_json(e.ctx, id, &out, NULL), 0, "terminate twice is fine");
    cr_expect_neq(strstr(out, "\"already_gone\":true"), NULL, "%s", out);
    free(out);
    cr_expect_not(area_exists(&e, id));
    cr_assert_eq(cordon_ls_json(e.ctx, &out, NULL), 0);
    cr_expect_str_eq(out, "{\"executions\":[]}");
    free(out);
    cJSON_Delete(p);
    env_close(&e);
}

Test(hostflow, the_record_keeps_the_verdict_it_was_provisioned_under)
{
    struct env e;
    cJSON *p, *ls, *item;
    const cJSON *v;
    char *out = NULL;

    env_open(&e);
    p = provision_ok(&e, "{\"execution_id\":\"verdict-1\"}");
    v = cJSON_GetObjectItem(p, "verdict");
    cr_assert_not_null(v, "provision says what it was provisioned under");
    cr_expect_str_eq(str(v, "isolation_requested"), "none");
    cr_expect_str_eq(str(v, "status"), "verified");
    cr_expect_str_eq(str(v, "verified_by"), "cordon-host");
    cr_expect_eq(strncmp(str(v, "observation_digest"), "sha256:", 7), 0);
    cr_expect_str_eq(str(v, "safety_class"), "trusted_local");
    cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(v, "isolation"), "process_contained")));
    cr_assert_eq(cordon_ls_json(e.ctx, &out, NULL), 0);
    ls = cJSON_Parse(out);
    free(out);
    item = cJSON_GetArrayItem(cJSON_GetObjectItem(ls, "executions"), 0);
    cr_assert_not_null(item);
    cr_expect(cJSON_Compare(cJSON_GetObjectItem(item, "verdict"), v, true), "ls shows the same verdict");
    terminate(&e, "verdict-1");
    cJSON_Delete(ls);
    cJSON_Delete(p);
    env_close(&e);
}

/* The marker written before still reads back, and the execution is ready. */
static void expect_marker(struct env *e, const char *id)
{
    cJSON *x = exec_argv(e, id, "[\"-c\",\"cat marker\"]", NULL);

    cr_expect_str_eq(str(x, "status"), "exited");
    cr_expect_str_eq(str(x, "stdout"), "kept\n", "the workspace went with the command");
    cJSON_Delete(x);
    cr_expect(ls_shows(e, id, "phase", "ready"), "%s is not ready after the command ended", id);
}

static void write_marker(struct env *e, const char *id)
{
    cJSON *x = exec_argv(e, id, "[\"-c\",\"echo kept > marker\"]", NULL);

    cr_assert_str_eq(str(x, "status"), "exited");
    cJSON_Delete(x);
}

/* The output budget, the timeout and the caller's cancel end the
 * command's whole tree, gone before the answer, and leave the execution
 * ready. */
Test(hostflow, overflow_timeout_and_cancel_end_the_command_and_keep_the_execution)
{
    static const struct {
        const char *args, *extra, *status;
        bool cancel;      /* the cancel fd readable from the start */
        int exit_status;
    } cases[] = {
        { "[\"-c\",\"head -c 5000000 /dev/zero\"]", NULL, "output_limit", false, 137 },
        { "[\"-c\",\"sleep 1000.4242 & sleep 1000.4242\"]", "\"timeout_ms\":500", "timeout", false, 124 },
        { "[\"-c\",\"sleep 1000.4242 & sleep 1000.4242\"]", NULL, "cancelled", true, 137 },
    };
    struct env e;

    env_open(&e);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *p = provision_ok(&e, "{\"execution_id\":\"ends-1\"}"), *x;
        int cancel[2] = { -1, -1 };

        write_marker(&e, "ends-1");
        if (cases[i].cancel) {
            cr_assert_eq(pipe(cancel), 0);
            cr_assert_eq(write(cancel[1], "x", 1), 1);
        }
        x = exec_argv_cancel(&e, "ends-1", cases[i].args, cases[i].extra, cancel[0]);
        if (cases[i].cancel) {
            close(cancel[0]);
            close(cancel[1]);
        }
        cr_expect_str_eq(str(x, "status"), cases[i].status);
        cr_expect_eq(exit_status_of(x), cases[i].exit_status);
        cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(x, "execution_terminated")));
        cr_expect_null(cJSON_GetObjectItem(x, "execution_terminated_reason"));
        cr_expect_eq(test_count_processes("1000.4242"), 0, "a sleeper outlived the answer");
        cr_expect_eq(record_count(&e), 1);
        expect_marker(&e, "ends-1");
        cr_expect_eq(terminate(&e, "ends-1"), 0);
        cJSON_Delete(x);
        cJSON_Delete(p);
    }
    env_close(&e);
}

/* A provider that can only end a command with its execution says so in
 * the result: the host terminates the record and reports why. */
Test(hostflow, a_provider_that_ended_the_execution_is_reported_and_its_record_goes)
{
    struct env e;
    char config[1024], *out = NULL;
    struct cordon_error err;
    cJSON *p, *x;

    env_open(&e);
    cordon_ctx_free(e.ctx);
    snprintf(config, sizeof(config),
             "{\"provider_configs\":{\"synthetic\":{\"root\":\"%s\",\"end_execution_on_cancel\":true}}}",
             e.root);
    test_rmtree(e.state);   /* the first context's state, made for nothing */
    free(e.state);
    e.ctx = test_ctx_open(config, &e.state);
    cr_assert_not_null(e.ctx);
    p = provision_ok(&e, "{\"execution_id\":\"ender-1\",\"provider\":\"synthetic\"}");
    x = exec_argv(&e, "ender-1", "[\"-c\",\"sleep 1000.4545\"]", "\"timeout_ms\":300");
    cr_expect_str_eq(str(x, "status"), "timeout");
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(x, "execution_terminated")));
    cr_expect_str_eq(str(x, "execution_terminated_reason"), "provider_ended_execution");
    cr_expect_eq(record_count(&e), 0);
    cordon_error_init(&err);
    cr_expect_eq(cordon_exec_json(e.ctx, "ender-1", "{\"command\":\"true\"}", -1, -1, &out, &err),
                 CORDON_E_NOT_FOUND, "%s", err.message);
    free(out);
    cJSON_Delete(x);
    cJSON_Delete(p);
    env_close(&e);
}

Test(hostflow, exec_after_expiry_terminates_and_reports)
{
    struct env e;
    cJSON *p, *x;

    env_open(&e);
    p = provision_ok(&e, "{\"execution_id\":\"short-1\",\"resources\":{\"runtime_ms\":300}}");
    cr_assert(TEST_WAIT_UNTIL(ls_shows(&e, "short-1", "expired", NULL), 10000), "short-1 never expired");
    x = exec_argv(&e, "short-1", "[\"-c\",\"true\"]", NULL);
    cr_expect_str_eq(str(x, "status"), "expired");
    cr_expect_eq(exit_status_of(x), 124);
    cr_expect_eq(record_count(&e), 0);
    cr_expect_not(area_exists(&e, "short-1"));
    cJSON_Delete(x);
    cJSON_Delete(p);
    env_close(&e);
}

Test(hostflow, exec_refuses_bad_requests)
{
    static const char *const bad[] = {
        "{\"command\":\"sh\",\"args\":\"-c 'echo x'\"}",
        "{\"args\":[\"x\"]}",
        "{\"command\":\"sh\",\"cwd\":\"/etc\"}",
        "{\"command\":\"sh\",\"cwd\":\"../..\"}",
        "{\"command\":\"sh\",\"environment\":{\"AWS_SECRET_ACCESS_KEY\":\"x\"}}",
        "{\"command\":\"sh\",\"shell\":true}",
    };
    struct env e;
    cJSON *p;

    env_open(&e);
    p = provision_ok(&e, "{\"execution_id\":\"bad-1\"}");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct cordon_error err;
        char *out = NULL;
        cordon_error_init(&err);
        cr_expect_lt(cordon_exec_json(e.ctx, "bad-1", bad[i], -1, -1, &out, &err), 0, "%s", bad[i]);
        cr_expect_null(out);
    }
    cr_expect_eq(cordon_exec_json(e.ctx, "no-such", "{\"command\":\"true\"}", -1, -1, &(char *){ NULL }, NULL),
                 CORDON_E_NOT_FOUND);
    cr_assert_eq(terminate(&e, "bad-1"), 0);
    cJSON_Delete(p);
    env_close(&e);
}

/* An exec's args: the sdk's CORDON_ARGV_MAX entries with the command, and
 * the host's CORDON_HOST_ARGS_BYTES_MAX bytes in all, each with its NUL;
 * refused before any record is looked at. */
Test(hostflow, exec_bounds_its_args)
{
    static const struct { size_t n, len; int code; const char *message; } cases[] = {
        { 1, CORDON_HOST_ARGS_BYTES_MAX - 1, CORDON_E_NOT_FOUND, NULL },
        { 1, CORDON_HOST_ARGS_BYTES_MAX, CORDON_E_LIMIT, "args: 131073 bytes exceed the limit of 131072" },
        { CORDON_ARGV_MAX - 1, 1, CORDON_E_NOT_FOUND, NULL },
        { CORDON_ARGV_MAX, 1, CORDON_E_LIMIT, "args: 257 entries exceed the limit of 256" },
    };
    struct env e;

    env_open(&e);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *req = cJSON_CreateObject(), *args = cJSON_AddArrayToObject(req, "args");
        char *arg = malloc(cases[i].len + 1), *text, *out = NULL;
        struct cordon_error err;

        cr_assert_not_null(arg);
        memset(arg, 'a', cases[i].len);
        arg[cases[i].len] = '\0';
        cJSON_AddStringToObject(req, "command", "true");
        for (size_t k = 0; k < cases[i].n; k++)
            cJSON_AddItemToArray(args, cJSON_CreateString(arg));
        text = cJSON_PrintUnformatted(req);
        cordon_error_init(&err);
        cr_expect_eq(cordon_exec_json(e.ctx, "no-such", text, -1, -1, &out, &err), cases[i].code,
                     "case %zu: %s", i, err.message);
        if (cases[i].message != NULL)
            cr_expect_str_eq(err.message, cases[i].message);
        cr_expect_null(out);
        free(text);
        free(arg);
        cJSON_Delete(req);
    }
    env_close(&e);
}

/* Exec and checkpoint read the record's limits as every resources object
 * is read: a record whose resources lost a key is refused as damaged,
 * naming it, never read as a zero budget or a crash. */
Test(hostflow, damaged_record_limits_are_refused)
{
    struct cordon__record *rec = NULL;
    struct cordon_error err;
    struct env e;
    char *out = NULL;
    cJSON *p;

    env_open(&e);
    p = provision_ok(&e, "{\"execution_id\":\"dmg-1\"}");
    cordon_error_init(&err);
    cr_assert_eq(cordon__record_open(e.ctx, "dmg-1", false, &rec, &err), 0, "%s", err.message);
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(rec->doc, "resources"),
                                            "max_output_bytes");
    cr_assert_eq(cordon__record_save(rec, &err), 0, "%s", err.message);
    cordon__record_close(rec);
    cr_expect_eq(cordon_exec_json(e.ctx, "dmg-1", "{\"command\":\"true\"}", -1, -1, &out, &err),
                 CORDON_E_IO);
    cr_expect_str_eq(err.message,
                     "record dmg-1: resources.max_output_bytes: required (every limit must be given)");
    cr_expect_null(out);
    cordon_error_init(&err);
    cr_expect_eq(cordon_checkpoint_json(e.ctx, "dmg-1", NULL, &out, &err), CORDON_E_IO);
    cr_expect_str_eq(err.message,
                     "record dmg-1: resources.max_output_bytes: required (every limit must be given)");
    cr_expect_null(out);
    cr_assert_eq(terminate(&e, "dmg-1"), 0);
    cJSON_Delete(p);
    env_close(&e);
}

/* Eight levels of metadata are within the bound (nine are refused above). */
Test(hostflow, metadata_eight_levels_deep_is_accepted)
{
    struct env e;
    cJSON *p;

    env_open(&e);
    p = provision_ok(&e, "{\"execution_id\":\"md-8\",\"metadata\":"
                         "{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":1}}}}}}}}");
    cJSON_Delete(p);
    cr_assert_eq(terminate(&e, "md-8"), 0);
    env_close(&e);
}

Test(hostflow, checkpoint_change_restore_shows_checkpointed_bytes)
{
    struct env e;
    cJSON *p, *x, *m, *r;
    char *out = NULL, ckpt[64], restored[80];

    env_open(&e);
    p = provision_ok(&e, "{\"execution_id\":\"ck-1\",\"metadata\":{\"task\":\"t1\"}}");
    x = exec_argv(&e, "ck-1", "[\"-c\",\"mkdir -p d && echo v1 > d/f && chmod 700 d\"]", NULL);
    cr_expect_eq(cJSON_GetObjectItem(x, "exit_code")->valueint, 0);
    cJSON_Delete(x);
    cr_assert_eq(cordon_checkpoint_json(e.ctx, "ck-1", "{\"reason\":\"handoff\"}", &out, NULL), 0);
    m = cJSON_Parse(out);
    free(out);
    snprintf(ckpt, sizeof(ckpt), "%s", str(m, "checkpoint_id"));
    cr_expect_eq(cJSON_GetObjectItem(m, "version")->valueint, 1);
    cr_expect_str_eq(str(m, "source_execution_id"), "ck-1");
    cr_expect_str_eq(str(cJSON_GetObjectItem(m, "metadata"), "reason"), "handoff");
    x = exec_argv(&e, "ck-1", "[\"-c\",\"echo v2 > d/f\"]", NULL);
    cJSON_Delete(x);
    /* restore runs the same selection: trusted-local never passes "required" */
    cr_expect_eq(cordon_restore_json(e.ctx, ckpt, "{\"execution_id\":\"ck-3\",\"allow_unsafe_local\":true}",
                                     &out, NULL), CORDON_E_PROVIDER_UNAVAILABLE);
    cr_assert_eq(cordon_restore_json(e.ctx, ckpt,
                                     "{\"execution_id\":\"ck-2\",\"allow_unsafe_local\":true,\"isolation\":\"none\"}",
                                     &out, NULL), 0);
    r = cJSON_Parse(out);
    free(out);
    snprintf(restored, sizeof(restored), "%s", str(r, "execution_id"));
    cr_expect_str_eq(str(r, "restored_from"), ckpt);
    x = exec_argv(&e, restored, "[\"-c\",\"cat d/f; stat -c %a d\"]", NULL);
    cr_expect_str_eq(str(x, "stdout"), "v1\n700\n", "the restored execution holds the checkpointed bytes");
    cJSON_Delete(x);
    x = exec_argv(&e, "ck-1", "[\"-c\",\"cat d/f\"]", NULL);
    cr_expect_str_eq(str(x, "stdout"), "v2\n", "the source execution kept its own change");
    cJSON_Delete(x);
    cr_expect_eq(cordon_restore_json(e.ctx, "ckpt-000000000000000000000000", "{}", &out, NULL),
                 CORDON_E_CHECKPOINT_NOT_FOUND);
    terminate(&e, "ck-1");
    terminate(&e, restored);
    cr_expect_eq(record_count(&e), 0);
    cJSON_Delete(p);
    cJSON_Delete(m);
    cJSON_Delete(r);
    env_close(&e);
}

/* Strict UTF-8 without control characters: what a terminal shows as is. */
static bool shows_safely(const char *s)
{
    if (!cordon_text_is_utf8(s, strlen(s)))
        return false;
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++)
        if (*p < 0x20 || *p == 0x7f)
            return false;
    return true;
}

/* The sandboxed program names a FIFO in its workspace with escape
 * sequences and a byte that is not UTF-8; the checkpoint that refuses it
 * names it escaped. */
Test(hostflow, checkpoint_names_a_hostile_fifo_escaped)
{
    struct env e;
    struct cordon_error err;
    cJSON *p, *x;
    char *out = NULL;

    env_open(&e);
    p = provision_ok(&e, "{\"execution_id\":\"fifo-1\"}");
    x = exec_argv(&e, "fifo-1",
                  "[\"-c\",\"mkfifo \\\"$(printf '\\\\033]0;pwned\\\\007\\\\033[2J\\\\377')\\\"\"]", NULL);
    cr_expect_eq(cJSON_GetObjectItem(x, "exit_code")->valueint, 0, "%s", cJSON_PrintUnformatted(x));
    cJSON_Delete(x);
    cordon_error_init(&err);
    cr_expect_lt(cordon_checkpoint_json(e.ctx, "fifo-1", NULL, &out, &err), 0, "a FIFO is refused");
    cr_expect(shows_safely(err.message), "the message carries the raw name: %s", err.message);
    cr_expect_not_null(strstr(err.message, "\\x1b]0;pwned\\x07\\x1b[2J\\xff"), "%s", err.message);
    terminate(&e, "fifo-1");
    cJSON_Delete(p);
    env_close(&e);
}

/* A checkpoint's manifest is data on disk: restore reads its limits with
 * the bounds of a provision request and refuses one past them as
 * checkpoint_invalid, before anything is provisioned. */
static const struct {
    const char *key;
    double value;
    const char *needle;
} restore_limit_cases[] = {
    {"cpus", 1000, "resources.cpus: 1000 exceeds the maximum 128"},
    {"memory_bytes", 1099511627776.0, "resources.memory_bytes: 1 TiB (1099511627776) exceeds the maximum"},
    {"disk_bytes", 512, "resources.disk_bytes: 512 is below the minimum 1048576"},
    {"pids", 1000000, "resources.pids: 1000000 exceeds the maximum 32768"},
    {"runtime_ms", 1, "resources.runtime_ms: 1 is below the minimum 100"},
    {"max_output_bytes", 1073741824, "resources.max_output_bytes: 1 GiB (1073741824) exceeds the maximum"},
};

ParameterizedTestParameters(hostflow, restore_refuses_tampered_limits)
{
    static size_t idx[sizeof(restore_limit_cases) / sizeof(restore_limit_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *at, hostflow, restore_refuses_tampered_limits)
{
    struct env e;
    struct cordon_error err;
    cJSON *p, *m;
    char *out = NULL, *text, path[1024], id[32], patch[64];
    FILE *f;

    /* The cases run side by side and an execution id holds a uid of the
     * machine-wide pool: each case provisions an id of its own. */
    snprintf(id, sizeof(id), "lim-%zu", *at);
    snprintf(patch, sizeof(patch), "{\"execution_id\":\"%s\"}", id);
    env_open(&e);
    p = provision_ok(&e, patch);
    cr_assert_eq(cordon_checkpoint_json(e.ctx, id, NULL, &out, NULL), 0);
    m = cJSON_Parse(out);
    free(out);
    cr_assert_eq(terminate(&e, id), 0);
    cr_assert_eq(record_count(&e), 0);
    /* The tampered manifest, as someone with write access to the store left it. */
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(m, "resources"), restore_limit_cases[*at].key,
                              cJSON_CreateNumber(restore_limit_cases[*at].value));
    snprintf(path, sizeof(path), "%s/checkpoints/%s/manifest.json", e.state, str(m, "checkpoint_id"));
    text = cJSON_Print(m);
    cr_assert_not_null(f = fopen(path, "w"));
    fputs(text, f);
    fclose(f);
    cordon_error_init(&err);
    cr_assert_eq(cordon_restore_json(e.ctx, str(m, "checkpoint_id"),
                                     "{\"execution_id\":\"lim-2\",\"allow_unsafe_local\":true}", &out, &err),
                 CORDON_E_CHECKPOINT_INVALID, "%s", err.message);
    cr_expect(strstr(err.message, restore_limit_cases[*at].needle) != NULL, "\"%s\" lacks \"%s\"",
              err.message, restore_limit_cases[*at].needle);
    cr_expect_eq(record_count(&e), 0, "a record was left");
    cr_expect_not(area_exists(&e, "lim-2"), "an execution area was left");
    free(text);
    cJSON_Delete(m);
    cJSON_Delete(p);
    env_close(&e);
}

struct bg_exec {
    struct cordon_ctx *ctx;
    int r;
};

static void *slow_writer(void *arg)
{
    struct bg_exec *bg = arg;
    char *out = NULL;

    bg->r = cordon_exec_json(bg->ctx, "wait-1",
                             "{\"command\":\"sh\",\"args\":[\"-c\",\"sleep 1; echo late > late.txt\"]}", -1, -1,
                             &out, NULL);
    free(out);
    return NULL;
}

Test(hostflow, checkpoint_waits_for_a_running_exec)
{
    struct env e;
    struct bg_exec bg;
    pthread_t t;
    cJSON *p, *m;
    char *out = NULL;

    env_open(&e);
    p = provision_ok(&e, "{\"execution_id\":\"wait-1\"}");
    bg.ctx = e.ctx;
    pthread_create(&t, NULL, slow_writer, &bg);
    /* the exec holds the execution's lock once ls shows its mark: the
     * checkpoint waits for it */
    cr_assert(TEST_WAIT_UNTIL(ls_phase_is(&e, "wait-1", "exec"), 10000), "the exec never began");
    cr_assert_eq(cordon_checkpoint_json(e.ctx, "wait-1", NULL, &out, NULL), 0);
    pthread_join(t, NULL);
    cr_expect_eq(bg.r, 0);
    m = cJSON_Parse(out);
    free(out);
    cr_expect_gt(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "workspace"), "bytes")->valuedouble, 4.0,
                 "late.txt, written at the end of the exec, is in the checkpoint");
    terminate(&e, "wait-1");
    cJSON_Delete(m);
    cJSON_Delete(p);
    env_close(&e);
}

Test(hostflow, kill_9_mid_exec_then_gc_leaves_nothing, .timeout = 60)
{
    const char *cordon = getenv("CORDON_BIN");
    struct env e;
    cJSON *p;
    char *out = NULL;
    pid_t pid;

    if (cordon == NULL)
        cr_skip_test("CORDON_BIN is not set (make check sets it)");
    env_open(&e);
    p = provision_ok(&e, "{\"execution_id\":\"crash-1\"}");
    pid = fork();
    if (pid == 0) {
        char config[700];
        snprintf(config, sizeof(config), "%s/config.json", e.state);
        execl(cordon, cordon, "--state-dir", e.state, "--config", config, "exec", "crash-1", "--", "sh", "-c",
              "sleep 1000.5151", (char *)NULL);
        _exit(127);
    }
    /* wait until the exec is under way: ls says so (the exec's mark beside
     * the record), and the sleeper runs (cordon's own command line names it
     * too: 2 or more) */
    cr_assert(TEST_WAIT_UNTIL(ls_phase_is(&e, "crash-1", "exec") && test_count_processes("1000.5151") >= 2,
                              10000));
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    cr_expect_eq(record_count(&e), 1, "the record stays for gc");
    cr_assert_eq(cordon_gc_json(e.ctx, &out, NULL), 0);
    cr_expect_neq(strstr(out, "\"crash-1\""), NULL, "%s", out);
    free(out);
    cr_expect(TEST_WAIT_UNTIL(test_count_processes("1000.5151") == 0, 10000),
              "no process of that execution remains");
    cr_expect_eq(record_count(&e), 0);
    cr_expect_not(area_exists(&e, "crash-1"));
    cJSON_Delete(p);
    env_close(&e);
}

/* An exec leaves the record as it was: no rewrite, the mark gone, ls back
 * at "ready"; a mark left by a cordon that died mid-exec is taken over by
 * the next exec and removed by it. */
Test(hostflow, exec_marks_itself_beside_the_record_and_removes_the_mark)
{
    struct env e;
    cJSON *p;
    char path[800], *out = NULL, *before = NULL, *after = NULL;
    size_t len = 0;
    int fd;

    env_open(&e);
    p = provision_ok(&e, "{\"execution_id\":\"mark-1\"}");
    snprintf(path, sizeof(path), "%s/executions/mark-1", e.state);
    fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cr_assert_geq(fd, 0);
    cr_assert_eq(cordon_fs_read_file(fd, "record.json", 1u << 20, &before, &len, NULL), 0);
    cr_assert_eq(cordon_exec_json(e.ctx, "mark-1", "{\"command\": \"true\"}", -1, -1, &out, NULL), 0);
    cr_expect_neq(strstr(out, "\"exited\""), NULL, "%s", out);
    free(out);
    cr_assert_eq(cordon_fs_read_file(fd, "record.json", 1u << 20, &after, &len, NULL), 0);
    cr_expect_str_eq(after, before, "the exec rewrote the record");
    cr_expect_neq(faccessat(fd, "exec.running", F_OK, AT_SYMLINK_NOFOLLOW), 0, "the mark stayed");
    cr_expect(ls_phase_is(&e, "mark-1", "ready"));
    /* A mark from a cordon that died: ls says exec, the next exec clears it. */
    close(openat(fd, "exec.running", O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
    cr_expect(ls_phase_is(&e, "mark-1", "exec"));
    cr_assert_eq(cordon_exec_json(e.ctx, "mark-1", "{\"command\": \"true\"}", -1, -1, &out, NULL), 0);
    free(out);
    cr_expect_neq(faccessat(fd, "exec.running", F_OK, AT_SYMLINK_NOFOLLOW), 0, "the mark stayed");
    cr_expect(ls_phase_is(&e, "mark-1", "ready"));
    close(fd);
    free(before);
    free(after);
    terminate(&e, "mark-1");
    cJSON_Delete(p);
    env_close(&e);
}

Test(hostflow, gc_keeps_live_and_reclaims_unrecorded)
{
    struct env e;
    cJSON *p;
    char *out = NULL, path[512];

    env_open(&e);
    p = provision_ok(&e, "{\"execution_id\":\"live-1\"}");
    cJSON_Delete(p);
    p = provision_ok(&e, "{\"execution_id\":\"orphan-1\"}");
    /* the record of orphan-1 vanishes (a wiped state directory) */
    snprintf(path, sizeof(path), "%s/executions/orphan-1", e.state);
    test_rmtree(path);
    cr_assert_eq(cordon_gc_json(e.ctx, &out, NULL), 0);
    cr_expect_neq(strstr(out, "\"orphan-1\""), NULL, "%s", out);
    cr_expect_null(strstr(out, "\"live-1\""), "%s", out);
    free(out);
    cr_expect_not(area_exists(&e, "orphan-1"));
    cr_expect(area_exists(&e, "live-1"));
    /* A checkpoint whose cordon was killed mid-write left its directory. */
    {
        struct timespec old[2] = { { time(NULL) - 60, 0 }, { time(NULL) - 60, 0 } };

        snprintf(path, sizeof(path), "%s/checkpoints", e.state);
        mkdir(path, 0700);
        snprintf(path, sizeof(path), "%s/checkpoints/.tmp-ckpt-killed", e.state);
        cr_assert_eq(mkdir(path, 0700), 0);
        cr_assert_eq(utimensat(AT_FDCWD, path, old, 0), 0);
        cr_assert_eq(cordon_gc_json(e.ctx, &out, NULL), 0);
        cr_expect_neq(strstr(out, "\"partial_checkpoints_removed\":[\".tmp-ckpt-killed\"]"), NULL,
                      "%s", out);
        cr_expect_neq(access(path, F_OK), 0, "gc left %s", path);
        free(out);
    }
    terminate(&e, "live-1");
    cJSON_Delete(p);
    env_close(&e);
}

/* A cordon killed mid-probe leaves its canary directory: gc removes it when
 * its maker no longer runs, and leaves a live maker's and another pid
 * namespace's alone. */
Test(hostflow, gc_removes_the_canaries_of_dead_observations_only)
{
    struct env e;
    struct stat st;
    char dead[128], live[128], foreign[128], file[160], *out = NULL;
    pid_t gone;
    int status;

    cr_assert_eq(stat("/proc/self/ns/pid", &st), 0);
    gone = fork();
    cr_assert_geq(gone, 0);
    if (gone == 0)
        _exit(0);
    cr_assert_eq(waitpid(gone, &status, 0), gone);
    snprintf(dead, sizeof(dead), "/tmp/cordon-observe-%llu-%ld-AbC123",
             (unsigned long long)st.st_ino, (long)gone);
    snprintf(live, sizeof(live), "/tmp/cordon-observe-%llu-%ld-AbC123",
             (unsigned long long)st.st_ino, (long)getpid());
    snprintf(foreign, sizeof(foreign), "/tmp/cordon-observe-%llu-%ld-AbC123",
             (unsigned long long)st.st_ino + 1, (long)gone);
    cr_assert_eq(mkdir(dead, 0755), 0, "%s: %s", dead, strerror(errno));
    snprintf(file, sizeof(file), "%s/canary", dead);
    cr_assert_eq(test_write_file(file, "0123", 4), 0);
    cr_assert_eq(mkdir(live, 0755), 0);
    cr_assert_eq(mkdir(foreign, 0755), 0);
    env_open(&e);
    cr_assert_eq(cordon_gc_json(e.ctx, &out, NULL), 0);
    cr_expect_neq(access(dead, F_OK), 0, "gc left %s", dead);
    cr_expect_eq(access(live, F_OK), 0, "gc removed a live observation's %s", live);
    cr_expect_eq(access(foreign, F_OK), 0, "gc removed another pid namespace's %s", foreign);
    /* The count is this gc's: another test's gc, running beside this one,
     * may have swept the same directory first. */
    cr_expect_neq(strstr(out, "\"canaries_removed\":"), NULL, "%s", out);
    free(out);
    rmdir(live);
    rmdir(foreign);
    test_rmtree(dead);
    env_close(&e);
}

#ifdef HAVE_LIBGIT2
Test(hostflow, git_workspace_at_a_revision)
{
    struct env e;
    cJSON *p, *x;
    char repo[600], cmd[2048];

    env_open(&e);
    snprintf(repo, sizeof(repo), "%s/repo", e.state);
    snprintf(cmd, sizeof(cmd),
             "set -e; git init -q -b main '%s' && cd '%s' && git config user.email t@t && git config user.name t"
             " && echo one > a.txt && git add a.txt && git commit -qm one && git tag v1"
             " && echo two > a.txt && mkdir sub && echo s > sub/b.txt && git add -A && git commit -qm two",
             repo, repo);
    cr_assert_eq(system(cmd), 0);
    snprintf(cmd, sizeof(cmd),
             "{\"execution_id\":\"git-1\",\"workspace\":{\"kind\":\"git\",\"repository\":\"%s\",\"revision\":\"v1\"}}",
             repo);
    p = provision_ok(&e, cmd);
    cr_expect_str_eq(str(cJSON_GetObjectItem(p, "workspace"), "kind"), "git");
    cr_expect_eq(strlen(str(cJSON_GetObjectItem(p, "workspace"), "commit")), 40u);
    x = exec_argv(&e, "git-1", "[\"-c\",\"cat a.txt; ls -a | tr '\\\\n' ' '\"]", NULL);
    cr_expect_str_eq(str(x, "stdout"), "one\n. .. a.txt ", "the tree at v1, and no .git");
    cJSON_Delete(x);
    terminate(&e, "git-1");
    cJSON_Delete(p);
    /* a bad revision is a clear error and leaves nothing */
    snprintf(cmd, sizeof(cmd),
             "{\"execution_id\":\"git-2\","
             "\"workspace\":{\"kind\":\"git\",\"repository\":\"%s\",\"revision\":\"nope\"}}",
             repo);
    {
        char *req = request(cmd), *out = NULL;
        struct cordon_error err;
        cordon_error_init(&err);
        cr_expect_lt(cordon_provision_json(e.ctx, req, &out, &err), 0);
        cr_expect_neq(strstr(err.message, "nope"), NULL, "%s", err.message);
        free(req);
    }
    cr_expect_eq(record_count(&e), 0);
    cr_expect_not(area_exists(&e, "git-2"));
    env_close(&e);
}
#else
/* Built --without-libgit2: a well-formed git workspace is refused, naming the field. */
Test(hostflow, git_workspace_unsupported_without_libgit2)
{
    struct env e;
    char *req, *out = NULL;
    struct cordon_error err;

    env_open(&e);
    req = request("{\"execution_id\":\"git-1\",\"workspace\":{\"kind\":\"git\",\"repository\":\"/nonexistent\","
                  "\"revision\":\"main\"}}");
    cordon_error_init(&err);
    cr_expect_eq(cordon_provision_json(e.ctx, req, &out, &err), CORDON_E_UNSUPPORTED);
    cr_expect_neq(strstr(err.message, "workspace.kind"), NULL, "%s", err.message);
    cr_expect_neq(strstr(err.message, "without libgit2"), NULL, "%s", err.message);
    cr_expect_null(out);
    cr_expect_eq(record_count(&e), 0);
    free(req);
    env_close(&e);
}
#endif

Test(record, lock_and_duplicates)
{
    struct env e;
    struct cordon__record *a = NULL, *b = NULL;
    struct cordon_error err;
    cJSON *doc = cJSON_Parse("{\"phase\":\"ready\"}");

    env_open(&e);
    cr_assert_eq(cordon__record_create(e.ctx, "rec-1", doc, &a, NULL), 0);
    cordon_error_init(&err);
    cr_expect_eq(cordon__record_create(e.ctx, "rec-1", doc, &b, &err), CORDON_E_EXISTS);
    cr_expect_eq(cordon__record_open(e.ctx, "rec-1", true, &b, &err), CORDON_E_BUSY, "held by a");
    cordon__record_close(a);
    cr_assert_eq(cordon__record_open(e.ctx, "rec-1", true, &b, NULL), 0);
    cr_expect_str_eq(str(b->doc, "phase"), "ready");
    cr_assert_eq(cordon__record_remove(e.ctx, b, NULL), 0);
    cordon__record_close(b);
    cr_expect_eq(cordon__record_open(e.ctx, "rec-1", true, &b, NULL), CORDON_E_NOT_FOUND);
    cr_expect_eq(record_count(&e), 0);
    cJSON_Delete(doc);
    env_close(&e);
}

Test(record, execution_ids)
{
    static const char *const good[] = { "a", "A9", "exec-1", "x.y_z-1",
                                        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" };
    static const char *const bad[] = { "", "-a", ".a", "_a", "a/b", "../x", "a b",
                                       "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" };

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        cr_expect(cordon_execution_id_valid(good[i]), "%s", good[i]);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_not(cordon_execution_id_valid(bad[i]), "%s", bad[i]);
}

/* A provider's list_executions reply is bounded, must be an array, and only
 * ids of the execution-id grammar reach reclaim. */
static char *gc_with_list_reply(const char *synthetic_config)
{
    struct cordon_ctx *ctx;
    char config[1024], *state = NULL, *out = NULL;

    snprintf(config, sizeof(config), "{\"provider_configs\":{\"synthetic\":%s}}", synthetic_config);
    ctx = test_ctx_open(config, &state);
    cr_assert_not_null(ctx);
    cr_assert_eq(cordon_gc_json(ctx, &out, NULL), 0);
    cordon_ctx_free(ctx);
    test_rmtree(state);
    free(state);
    return out;
}

Test(hostflow, gc_bounds_what_list_executions_returns)
{
    char *out;

    out = gc_with_list_reply("{\"list_reply_pad\": 9000000}");
    cr_expect_neq(strstr(out, "\"provider_id\":\"synthetic\",\"message\":\"list_executions: the "
                              "reply exceeds the limit of 8388608 bytes\""), NULL, "%s", out);
    free(out);
    out = gc_with_list_reply("{\"list_reply\": \"{\\\"a\\\": 1}\"}");
    cr_expect_neq(strstr(out, "list_executions: the reply is not a JSON array"), NULL, "%s", out);
    free(out);
    out = gc_with_list_reply("{\"list_reply\": \"[\\\"../../etc\\\", \\\"\\\", 7, \\\"gone-1\\\"]\"}");
    cr_expect_neq(strstr(out, "\"reclaimed\":[\"gone-1\"]"), NULL, "%s", out);
    cr_expect_null(strstr(out, "../../etc"), "%s", out);
    free(out);
}

struct bg_stream {
    struct cordon_ctx *ctx;
    const char *request;
    int in, out, err, r;
    char *result;
    volatile int done;
};

static void *stream_exec(void *arg)
{
    struct bg_stream *bg = arg;

    bg->r = cordon_exec_stream_json(bg->ctx, "stream-1", bg->request, bg->in, bg->out, bg->err, -1, &bg->result,
                                    NULL);
    __atomic_store_n(&bg->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* Append what fd has now (non-blocking) to buf; true when buf holds want. */
static bool read_has(int fd, char *buf, size_t size, const char *want)
{
    size_t len = strlen(buf);
    ssize_t n = read(fd, buf + len, size - 1 - len);

    if (n > 0)
        buf[len + (size_t)n] = '\0';
    return strstr(buf, want) != NULL;
}

/* Each stream's bytes reach the caller's own fd while the command still
 * runs: the command waits on stdin for a line the test writes only once it
 * read the first line, so a call that forwarded at the end never gets it. */
Test(hostflow, exec_stream_forwards_each_stream_as_it_comes_apart)
{
    struct env e;
    struct bg_stream bg;
    pthread_t t;
    int in[2], out[2], err[2];
    char got_out[256] = "", got_err[256] = "";
    cJSON *p, *x;

    env_open(&e);
    p = provision_ok(&e, "{\"execution_id\":\"stream-1\"}");
    cr_assert(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC | O_NONBLOCK) == 0 &&
              pipe2(err, O_CLOEXEC | O_NONBLOCK) == 0);
    memset(&bg, 0, sizeof(bg));
    bg.ctx = e.ctx;
    bg.request = "{\"command\":\"sh\",\"args\":[\"-c\","
                 "\"echo first; echo e1 >&2; read x; echo second $x; echo e2 >&2\"]}";
    bg.in = in[0];
    bg.out = out[1];
    bg.err = err[1];
    pthread_create(&t, NULL, stream_exec, &bg);
    cr_assert(TEST_WAIT_UNTIL(read_has(out[0], got_out, sizeof(got_out), "first\n"), 20000),
              "the first line never came before the command ended: \"%s\"", got_out);
    cr_assert(TEST_WAIT_UNTIL(read_has(err[0], got_err, sizeof(got_err), "e1\n"), 20000),
              "stderr's first line never came: \"%s\"", got_err);
    cr_expect_eq(__atomic_load_n(&bg.done, __ATOMIC_SEQ_CST), 0, "the exec ended before its stdin line");
    cr_assert_eq(write(in[1], "go\n", 3), 3);
    close(in[1]);
    pthread_join(t, NULL);
    cr_assert_eq(bg.r, 0);
    read_has(out[0], got_out, sizeof(got_out), "");
    read_has(err[0], got_err, sizeof(got_err), "");
    cr_expect_str_eq(got_out, "first\nsecond go\n");
    cr_expect_str_eq(got_err, "e1\ne2\n");
    x = cJSON_Parse(bg.result);
    cr_expect_str_eq(str(x, "status"), "exited");
    cr_expect_str_eq(str(x, "stdout"), "first\nsecond go\n", "the result keeps the streams as exec does");
    cr_expect_str_eq(str(x, "stderr"), "e1\ne2\n");
    free(bg.result);
    cJSON_Delete(x);
    close(in[0]);
    close(out[0]);
    close(out[1]);
    close(err[0]);
    close(err[1]);
    cr_expect_eq(terminate(&e, "stream-1"), 0);
    cJSON_Delete(p);
    env_close(&e);
}

/* The budget counts what is forwarded: no byte past max_output_bytes
 * reaches the fd, the command ends with output_limit, the execution stays.
 * A sink nobody reads stops the reading, not the command's timeout; a
 * sink that fails stops its forwarding, not the command. */
Test(hostflow, exec_stream_keeps_the_budget_and_the_timeout)
{
    struct env e;
    struct cordon_error cerr;
    char path[700], *res = NULL;
    int fd, blocked[2];
    struct stat st;
    cJSON *p, *x;

    env_open(&e);
    p = provision_ok(&e, "{\"execution_id\":\"stream-2\"}");
    snprintf(path, sizeof(path), "%s/forwarded", e.dir);
    fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    cr_assert_geq(fd, 0);
    cordon_error_init(&cerr);
    cr_assert_eq(cordon_exec_stream_json(e.ctx, "stream-2",
                                         "{\"command\":\"head\",\"args\":[\"-c\",\"5000000\",\"/dev/zero\"]}",
                                         -1, fd, fd, -1, &res, &cerr), 0, "%s", cerr.message);
    x = cJSON_Parse(res);
    cr_expect_str_eq(str(x, "status"), "output_limit");
    cr_expect_eq(fstat(fd, &st), 0);
    cr_expect_eq(st.st_size, 1048576, "forwarded %lld bytes past a 1 MiB budget", (long long)st.st_size);
    cr_expect(ls_shows(&e, "stream-2", "phase", "ready"), "the execution went with the command");
    cJSON_Delete(x);
    free(res);
    res = NULL;
    close(fd);

    cr_assert_eq(pipe2(blocked, O_CLOEXEC), 0);
    cr_assert_eq(cordon_exec_stream_json(e.ctx, "stream-2",
                                         "{\"command\":\"head\",\"args\":[\"-c\",\"5000000\",\"/dev/zero\"],"
                                         "\"timeout_ms\":1000}",
                                         -1, blocked[1], -1, -1, &res, &cerr), 0, "%s", cerr.message);
    x = cJSON_Parse(res);
    cr_expect_str_eq(str(x, "status"), "timeout", "a sink that takes nothing: %s", res);
    cr_expect(ls_shows(&e, "stream-2", "phase", "ready"), "the execution went with the command");
    cJSON_Delete(x);
    free(res);
    res = NULL;
    close(blocked[0]);

    /* A sink whose reader left: forwarding stops, the command runs to its end. */
    signal(SIGPIPE, SIG_IGN);
    cr_assert_eq(cordon_exec_stream_json(e.ctx, "stream-2",
                                         "{\"command\":\"sh\",\"args\":[\"-c\",\"echo one; echo two\"]}",
                                         -1, blocked[1], -1, -1, &res, &cerr), 0, "%s", cerr.message);
    x = cJSON_Parse(res);
    cr_expect_str_eq(str(x, "status"), "exited");
    cr_expect_str_eq(str(x, "stdout"), "one\ntwo\n");
    cJSON_Delete(x);
    free(res);
    close(blocked[1]);
    cr_expect_eq(terminate(&e, "stream-2"), 0);
    cJSON_Delete(p);
    env_close(&e);
}
