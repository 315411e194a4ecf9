/* Unit tests of the code-execution flow (core/run.c), end to end through
 * the real trusted-local provider on this host. */
#include <criterion/criterion.h>
#include <cordon/text.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/limits.h"
#include "core/run-internal.h"
#include "core/run.h"
#include "core/grant.h"
#include "tests/unit/helpers.h"

struct env {
    char *state;
    char *ws;
    struct cordon_ctx *ctx;
    cJSON *result;
    char *printed;   /* result_text's, freed with the env */
};

static void env_open(struct env *e)
{
    memset(e, 0, sizeof(*e));
    e->ctx = test_ctx_open(NULL, &e->state);
    cr_assert_not_null(e->ctx);
    e->ws = test_mkdtemp();
    cr_assert_not_null(e->ws);
}

static void env_close(struct env *e)
{
    free(e->printed);
    cJSON_Delete(e->result);
    cordon_ctx_free(e->ctx);
    test_rmtree(e->state);
    test_rmtree(e->ws);
    free(e->state);
    free(e->ws);
}

/* The result document as one line, owned by the env. */
static const char *result_text(struct env *e)
{
    free(e->printed);
    e->printed = cJSON_PrintUnformatted(e->result);
    cr_assert_not_null(e->printed);
    return e->printed;
}

/* A run request over trusted-local with one python file. */
static cJSON *python_request(const struct env *e, const char *source, bool with_ws)
{
    cJSON *r = cJSON_CreateObject(), *files = cJSON_AddArrayToObject(r, "files"), *f = cJSON_CreateObject();

    cJSON_AddStringToObject(r, "language", "python");
    cJSON_AddStringToObject(r, "entrypoint", "main.py");
    cJSON_AddStringToObject(f, "path", "main.py");
    cJSON_AddStringToObject(f, "content", source);
    cJSON_AddItemToArray(files, f);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(r, "providers"), cJSON_CreateString("trusted-local"));
    cJSON_AddStringToObject(r, "isolation", "none");
    cJSON_AddBoolToObject(r, "allow_unsafe_local", true);
    if (with_ws)
        cJSON_AddStringToObject(r, "workspace", e->ws);
    return r;
}

static void run(struct env *e, cJSON *request)
{
    cr_assert_eq(cordon__run(e->ctx, request, NULL, -1, &e->result, NULL), 0);
    cJSON_Delete(request);
}

static const char *str(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(obj, key);
    return cJSON_IsString(v) ? v->valuestring : "(missing)";
}

/* Nothing of ours remains: no execution areas under trusted-local's root,
 * no grant area in the task workspace, no run directory in the state dir. */
static void expect_no_residue(const struct env *e)
{
    char path[4096];
    struct stat st;
    const cJSON *id;
    DIR *d;
    struct dirent *de;

    snprintf(path, sizeof(path), "%s/.cordon", e->ws);
    cr_expect_neq(stat(path, &st), 0, "%s must not remain", path);
    d = opendir(e->state);
    while (d != NULL && (de = readdir(d)) != NULL)
        cr_expect_neq(strncmp(de->d_name, "run-", 4), 0, "state dir keeps %s", de->d_name);
    if (d != NULL)
        closedir(d);
    /* Other tests run at the same time: look for this run's area only. */
    id = cJSON_GetObjectItem(cJSON_GetObjectItem(e->result, "meta"), "execution_id");
    if (cJSON_IsString(id)) {
        snprintf(path, sizeof(path), "/run/cordon/trusted-local/%s", id->valuestring);
        cr_expect_neq(lstat(path, &st), 0, "the execution area %s remains", path);
    }
}

Test(run, python_hello_through_trusted_local)
{
    static const char *const order[] = { "validate", "grant", "select", "ensure", "provision", "land",
                                         "run", "terminate", "release", "close" };
    struct env e;
    const cJSON *meta, *events;

    env_open(&e);
    run(&e, python_request(&e, "import sys\nprint('hello from', sys.argv[0])\n", false));
    meta = cJSON_GetObjectItem(e.result, "meta");
    cr_expect_str_eq(str(e.result, "status"), "success", "%s", result_text(&e));
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(e.result, "ok")));
    cr_expect_eq(cJSON_GetObjectItem(e.result, "exit_code")->valueint, 0);
    cr_expect_str_eq(str(e.result, "stdout"), "hello from main.py\n");
    cr_expect_str_eq(str(meta, "provider_id"), "trusted-local");
    cr_expect_str_eq(str(meta, "contract"), "workspace_code_execution_v1");
    cr_expect_eq(strncmp(str(meta, "bundle_id"), "bundle-", 7), 0);
    cr_expect_eq(strncmp(str(meta, "bundle_digest"), "sha256:", 7), 0);
    cr_expect_eq(strncmp(str(meta, "grant_id"), "grant-", 6), 0);
    cr_expect_str_eq(str(cJSON_GetObjectItem(meta, "provider_facts"), "safety_class"), "trusted_local");
    events = cJSON_GetObjectItem(meta, "events");
    cr_assert_eq(cJSON_GetArraySize(events), 10, "%s", cJSON_PrintUnformatted(events));
    for (int i = 0; i < 10; i++)
        cr_expect_str_eq(str(cJSON_GetArrayItem(events, i), "step"), order[i]);
    expect_no_residue(&e);
    env_close(&e);
}

Test(run, required_isolation_with_only_trusted_local_is_blocked)
{
    struct env e;
    cJSON *req;
    const cJSON *probes, *skip;

    env_open(&e);
    req = python_request(&e, "print(1)\n", false);
    cJSON_ReplaceItemInObject(req, "isolation", cJSON_CreateString("required"));
    run(&e, req);
    cr_expect_str_eq(str(e.result, "status"), "blocked");
    cr_expect_str_eq(str(cJSON_GetObjectItem(e.result, "error"), "code"), "provider_unavailable");
    probes = cJSON_GetObjectItem(cJSON_GetObjectItem(e.result, "meta"), "probes");
    cr_assert_eq(cJSON_GetArraySize(probes), 1);
    skip = cJSON_GetObjectItem(cJSON_GetArrayItem(probes, 0), "skip");
    cr_expect_str_eq(str(skip, "reason"), "capability_mismatch");
    cr_expect_str_eq(cordon_result_exit_status(result_text(&e)) == 125 ? "125" : "other", "125");
    expect_no_residue(&e);
    env_close(&e);
}

struct refusal {
    const char *what;
    const char *patch;   /* JSON merged over the request */
    const char *needle;
};

/* Criterion workers are separate processes: parameters are indices
 * into this table, never pointers. */
static struct refusal refuses_bad_requests_without_residue_cases[] = {
    { "dotdot path", "{\"files\":[{\"path\":\"../evil.py\",\"content\":\"x\"}],\"entrypoint\":\"../evil.py\"}", ".." },
    { "absolute path", "{\"files\":[{\"path\":\"/etc/evil.py\",\"content\":\"x\"}],\"entrypoint\":\"/etc/evil.py\"}",
      "absolute" },
    { "args as a shell string", "{\"args\":\"-c 'rm -rf /'\"}", "not a shell string" },
    { "output outside output/", "{\"outputs\":[\"../../etc/passwd\"]}", "output" },
    { "credential env", "{\"environment\":{\"OPENAI_API_KEY\":\"sk-x\"}}", "credential" },
    { "isolation label", "{\"isolation\":\"strict\"}", "isolation" },
    { "memory too big", "{\"limits\":{\"memory_bytes\":1099511627776}}",
      "limits.memory_bytes: 1 TiB (1099511627776) exceeds the maximum 549755813888" },
    { "unknown limit", "{\"limits\":{\"gpus\":1}}", "limits.gpus: unknown limit" },
    { "cpus a string", "{\"limits\":{\"cpus\":\"2\"}}", "limits.cpus: must be a positive number" },
    { "pids too few", "{\"limits\":{\"pids\":4}}", "limits.pids: 4 is below the minimum 8" },
    { "retention too big", "{\"limits\":{\"retention_bytes\":16777217}}",
      "limits.retention_bytes: 16777217 exceeds the maximum 16777216" },
    { "timeout past the runtime", "{\"timeout_ms\":5000,\"limits\":{\"runtime_ms\":1000}}",
      "timeout_ms: 5000 exceeds limits.runtime_ms 1000" },
    { "timeout leaves no slack", "{\"timeout_ms\":86400000}",
      "timeout_ms: 86400000 leaves the default limits.runtime_ms (timeout_ms + 10000) above the "
      "maximum 86400000" },
    { "relative workspace", "{\"workspace\":\"relative/dir\"}", "absolute" },
    { "provider label", "{\"providers\":[{\"provider_id\":\"trusted-local\",\"extra\":1}]}", "unknown key" },
    /* each key of the typed request, named with its limit */
    { "workspace a number", "{\"workspace\":7}", "workspace: must be a string" },
    { "image a number", "{\"image\":5}", "image: must be a string" },
    { "inputs a string", "{\"inputs\":\"/etc/passwd\"}", "inputs: must be an array" },
    { "an input not a path", "{\"inputs\":[\"/a\",\"/b\",4]}", "inputs[2]: must be a host path" },
    { "providers a string", "{\"providers\":\"trusted-local\"}", "providers: must be an array" },
    { "consent a string", "{\"allow_unsafe_local\":\"yes\"}", "allow_unsafe_local: must be true or false" },
    { "timeout zero", "{\"timeout_ms\":0}", "timeout_ms: 0 must be between 1 and 86400000" },
    { "timeout a fraction", "{\"timeout_ms\":1.5}", "request.timeout_ms: must be a whole number >= 0" },
    { "limits an array", "{\"limits\":[1]}", "limits: must be an object" },
    { "retention a string", "{\"limits\":{\"retention_bytes\":\"1\"}}",
      "limits.retention_bytes: must be a whole number >= 0" },
    { "environment name", "{\"environment\":{\"1X\":\"y\"}}", "environment" },
};

ParameterizedTestParameters(run, refuses_bad_requests_without_residue)
{
    static size_t idx[sizeof(refuses_bad_requests_without_residue_cases) /
                      sizeof(refuses_bad_requests_without_residue_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *at, run, refuses_bad_requests_without_residue)
{
    struct refusal *c = &refuses_bad_requests_without_residue_cases[*at];
    struct env e;
    cJSON *req, *patch, *merged;
    const char *message;

    env_open(&e);
    req = python_request(&e, "print(1)\n", true);
    patch = cJSON_Parse(c->patch);
    cr_assert_not_null(patch, "%s", c->what);
    merged = cordon__json_merge(req, patch);
    cJSON_Delete(req);
    cJSON_Delete(patch);
    run(&e, merged);
    cr_expect_str_eq(str(e.result, "status"), "blocked", "%s: %s", c->what, result_text(&e));
    message = str(cJSON_GetObjectItem(e.result, "error"), "message");
    cr_expect(strstr(message, c->needle) != NULL, "%s: \"%s\" lacks \"%s\"", c->what, message, c->needle);
    expect_no_residue(&e);
    env_close(&e);
}

/* One input past the limit is refused by name and limit, before any grant. */
Test(run, too_many_inputs_names_the_limit)
{
    struct env e;
    cJSON *req, *inputs;
    const char *message;

    env_open(&e);
    req = python_request(&e, "print(1)\n", true);
    inputs = cJSON_AddArrayToObject(req, "inputs");
    for (int i = 0; i <= CORDON_RUN_MAX_INPUTS; i++)
        cJSON_AddItemToArray(inputs, cJSON_CreateString("/etc/hostname"));
    run(&e, req);
    cr_expect_str_eq(str(e.result, "status"), "blocked", "%s", result_text(&e));
    message = str(cJSON_GetObjectItem(e.result, "error"), "message");
    cr_expect_str_eq(message, "inputs: 129 exceeds the limit of 128");
    expect_no_residue(&e);
    env_close(&e);
}

/* A refusal after the variables were read (the candidates are read last)
 * leaves the request empty: nothing to clear, nothing held. */
Test(run, a_refused_request_holds_nothing)
{
    struct env e;
    struct cordon__run_request req;
    struct cordon_error err;
    cJSON *doc = cJSON_Parse("{\"environment\":{\"A\":\"1\"},\"inputs\":[\"/x\"],"
                             "\"providers\":[{\"provider_id\":\"trusted-local\",\"extra\":1}]}");

    env_open(&e);
    cordon_error_init(&err);
    cr_assert_lt(cordon__run_request_parse(e.ctx, doc, &req, &err), 0);
    cr_expect(strstr(err.message, "extra") != NULL, "%s", err.message);
    cr_expect_eq(req.environment.n, 0);
    cr_expect_null(req.environment.vars);
    cr_expect_null(req.cands);
    cr_expect_eq(req.n_cands, 0);
    /* and a good one is read into the struct */
    cJSON_DeleteItemFromObject(doc, "providers");
    cr_assert_eq(cordon__run_request_parse(e.ctx, doc, &req, &err), 0, "%s", err.message);
    cr_expect_eq(req.environment.n, 1);
    cr_expect_eq(req.n_inputs, 1);
    cr_expect_str_eq(req.inputs[0], "/x");
    cr_expect_eq(req.timeout_ms, CORDON_RUN_DEFAULT_TIMEOUT_MS);
    cordon__run_request_clear(&req);
    cJSON_Delete(doc);
    env_close(&e);
}

Test(run, too_many_files_and_too_big_a_file)
{
    struct env e;
    cJSON *req, *files;
    char *big;

    env_open(&e);
    req = python_request(&e, "print(1)\n", false);
    files = cJSON_GetObjectItem(req, "files");
    for (int i = 0; i < 1024; i++) {
        cJSON *f = cJSON_CreateObject();
        char name[32];
        snprintf(name, sizeof(name), "f%d.txt", i);
        cJSON_AddStringToObject(f, "path", name);
        cJSON_AddStringToObject(f, "content", "x");
        cJSON_AddItemToArray(files, f);
    }
    run(&e, req);
    cr_expect_str_eq(str(e.result, "status"), "blocked");
    cr_expect(strstr(str(cJSON_GetObjectItem(e.result, "error"), "message"), "1024") != NULL);
    cJSON_Delete(e.result);
    e.result = NULL;

    req = python_request(&e, "print(1)\n", false);
    big = malloc((17u << 20) + 1);
    memset(big, 'a', 17u << 20);
    big[17u << 20] = '\0';
    cJSON *f = cJSON_CreateObject();
    cJSON_AddStringToObject(f, "path", "big.txt");
    cJSON_AddStringToObject(f, "content", big);
    cJSON_AddItemToArray(cJSON_GetObjectItem(req, "files"), f);
    free(big);
    run(&e, req);
    cr_expect_str_eq(str(e.result, "status"), "blocked");
    cr_expect(strstr(str(cJSON_GetObjectItem(e.result, "error"), "message"), "16777216") != NULL, "%s",
              str(cJSON_GetObjectItem(e.result, "error"), "message"));
    expect_no_residue(&e);
    env_close(&e);
}

Test(run, declared_outputs_only_are_collected)
{
    struct env e;
    cJSON *req;
    const cJSON *outputs;
    char path[4096];
    struct stat st;

    env_open(&e);
    req = python_request(&e,
                         "open('../output/result.txt','w').write('42\\n')\n"
                         "open('../output/undeclared.txt','w').write('no')\n", true);
    cJSON_AddItemToObject(req, "outputs", cJSON_CreateStringArray((const char *[]){ "result.txt" }, 1));
    run(&e, req);
    cr_expect_str_eq(str(e.result, "status"), "success", "%s", result_text(&e));
    outputs = cJSON_GetObjectItem(e.result, "outputs");
    cr_assert_eq(cJSON_GetArraySize(outputs), 1);
    cr_expect_str_eq(str(cJSON_GetArrayItem(outputs, 0), "path"), "output/result.txt");
    cr_expect_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(outputs, 0), "bytes")->valueint, 3);
    snprintf(path, sizeof(path), "%s/output/result.txt", e.ws);
    cr_expect_eq(stat(path, &st), 0);
    snprintf(path, sizeof(path), "%s/output/undeclared.txt", e.ws);
    cr_expect_neq(stat(path, &st), 0, "an undeclared output is never copied back");
    expect_no_residue(&e);
    env_close(&e);
}

/* Only the declared outputs are read: 20,000 scratch files and a FIFO left
 * beside the declared result change nothing (they once failed collect at
 * 4096 entries, and a FIFO anywhere in output/ refused the whole tree). */
Test(run, undeclared_files_beside_an_output_change_nothing, .timeout = 120)
{
    struct env e;
    cJSON *req;
    const cJSON *outputs;

    env_open(&e);
    req = python_request(&e,
                         "import os\n"
                         "os.makedirs('../output/scratch')\n"
                         "for i in range(20000):\n"
                         "    open('../output/scratch/%d' % i, 'w').close()\n"
                         "os.mkfifo('../output/pipe')\n"
                         "open('../output/result.txt','w').write('42\\n')\n", true);
    cJSON_AddItemToObject(req, "outputs", cJSON_CreateStringArray((const char *[]){ "result.txt" }, 1));
    run(&e, req);
    cr_expect_str_eq(str(e.result, "status"), "success", "%s", result_text(&e));
    outputs = cJSON_GetObjectItem(e.result, "outputs");
    cr_assert_eq(cJSON_GetArraySize(outputs), 1);
    cr_expect_str_eq(str(cJSON_GetArrayItem(outputs, 0), "path"), "output/result.txt");
    cr_expect_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(outputs, 0), "bytes")->valueint, 3);
    expect_no_residue(&e);
    env_close(&e);
}

Test(run, symlinked_output_never_reads_the_host_file)
{
    /* The Judge0 CVE-2024-28185 pattern: the program replaces its declared
     * output with a symlink to a host file. */
    struct env e;
    cJSON *req;
    char secret[4096], code[8192], path[4096], buf[64] = { 0 };
    struct stat st;
    FILE *f;

    env_open(&e);
    snprintf(secret, sizeof(secret), "%s/host-secret", e.state);
    test_write_file(secret, "TOP-SECRET", 10);
    chmod(secret, 0644);
    snprintf(code, sizeof(code), "import os\nos.symlink('%s', '../output/result.txt')\n", secret);
    req = python_request(&e, code, true);
    cJSON_AddItemToObject(req, "outputs", cJSON_CreateStringArray((const char *[]){ "result.txt" }, 1));
    run(&e, req);
    cr_expect_str_eq(str(e.result, "status"), "error", "%s", result_text(&e));
    cr_expect_neq(strstr(result_text(&e), "symbolic link"), NULL, "%s",
                  result_text(&e));
    cr_expect_null(strstr(result_text(&e), "TOP-SECRET"));
    snprintf(path, sizeof(path), "%s/output/result.txt", e.ws);
    cr_expect_neq(lstat(path, &st), 0, "nothing was written into the output root");
    f = fopen(secret, "r");
    cr_assert_not_null(f);
    cr_expect_eq(fread(buf, 1, sizeof(buf) - 1, f), 10u);
    fclose(f);
    cr_expect_str_eq(buf, "TOP-SECRET", "the host file is unchanged");
    expect_no_residue(&e);
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

/* A declared output whose name sets the window title, clears the screen
 * and is not UTF-8: the refusal names it escaped, in the diagnostics, the
 * error and the events, and the result document is strict UTF-8. */
Test(run, hostile_names_are_escaped_in_the_result)
{
    static const char name[] = "\x1b]0;pwned\x07\x1b[2J\xff.txt";
    struct env e;
    cJSON *req;
    const cJSON *d;
    const char *text;
    bool named = false;

    env_open(&e);
    req = python_request(&e, "print('never runs')\n", true);
    cJSON_AddItemToObject(req, "outputs", cJSON_CreateStringArray((const char *[]){ name }, 1));
    run(&e, req);
    text = result_text(&e);
    cr_expect_str_eq(str(e.result, "status"), "blocked", "%s", text);
    cr_expect(cordon_text_is_utf8(text, strlen(text)), "the result is strict UTF-8: %s", text);
    cJSON_ArrayForEach(d, cJSON_GetObjectItem(e.result, "diagnostics")) {
        const char *m = str(d, "message");
        cr_expect(shows_safely(m), "diagnostic carries a control character: %s", m);
        named = named || strstr(m, "\\x1b]0;pwned\\x07\\x1b[2J\\xff.txt") != NULL;
    }
    cr_expect(named, "a diagnostic names the output, escaped: %s", text);
    cr_expect(shows_safely(str(cJSON_GetObjectItem(e.result, "error"), "message")));
    cJSON_ArrayForEach(d, cJSON_GetObjectItem(cJSON_GetObjectItem(e.result, "meta"), "events"))
        cr_expect(!cJSON_IsString(cJSON_GetObjectItem(d, "detail")) || shows_safely(str(d, "detail")),
                  "event detail carries a control character: %s", str(d, "detail"));
    expect_no_residue(&e);
    env_close(&e);
}

Test(run, ten_mib_of_output_is_bounded_head_and_tail)
{
    struct env e;
    const char *out;
    const cJSON *dropped;
    cJSON *req;

    env_open(&e);
    req = python_request(&e, "import sys\nsys.stdout.write('HEAD' + 'x' * (10 * 1024 * 1024 - 8) + 'TAIL')\n",
                         false);
    /* over the 8 MiB default budget: raise it so that retention is what bounds */
    cJSON_AddItemToObject(req, "limits", cJSON_Parse("{\"max_output_bytes\": 33554432}"));
    run(&e, req);
    cr_expect_str_eq(str(e.result, "status"), "success");
    out = str(e.result, "stdout");
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(e.result, "stdout_truncated")));
    dropped = cJSON_GetObjectItem(e.result, "stdout_dropped_bytes");
    cr_expect_eq((long long)dropped->valuedouble, 10LL * 1024 * 1024 - 64 * 1024);
    cr_expect_eq(strncmp(out, "HEAD", 4), 0);
    cr_expect_str_eq(out + strlen(out) - 4, "TAIL");
    cr_expect_neq(strstr(out, "bytes dropped]"), NULL);
    env_close(&e);
}

Test(run, timeout_leaves_no_process)
{
    struct env e;
    cJSON *req;

    env_open(&e);
    req = python_request(&e,
                         "import subprocess, time\n"
                         "subprocess.Popen(['sleep', '1000.271828'])\n"
                         "time.sleep(1000)\n", false);
    cJSON_AddNumberToObject(req, "timeout_ms", 1000);
    run(&e, req);
    cr_expect_str_eq(str(e.result, "status"), "timeout");
    cr_expect_eq(cordon_result_exit_status(result_text(&e)), 124);
    cr_expect(TEST_WAIT_UNTIL(test_count_processes("1000.271828") == 0, 10000),
              "the sleeper outlived the timeout");
    expect_no_residue(&e);
    env_close(&e);
}

struct cancel_after {
    int fd;          /* written once the program has begun */
    const char *mark;/* its command line's mark */
};

static void *cancel_when_running(void *arg)
{
    struct cancel_after *c = arg;

    if (TEST_WAIT_UNTIL(test_count_processes(c->mark) >= 1, 30000))
        (void)!write(c->fd, "x", 1);
    return NULL;
}

/* Cancelled mid-program from another thread: the program's processes
 * go, the run says "cancelled" (exit 137), and nothing of it remains. */
Test(run, a_cancel_from_another_thread_ends_the_run_and_leaves_nothing, .timeout = 60)
{
    struct cancel_after c = { -1, "1000.314159" };
    struct env e;
    pthread_t t;
    int p[2];

    env_open(&e);
    cr_assert_eq(pipe(p), 0);
    c.fd = p[1];
    pthread_create(&t, NULL, cancel_when_running, &c);
    cr_assert_eq(cordon__run(e.ctx,
                             python_request(&e,
                                            "import subprocess, time\n"
                                            "subprocess.Popen(['sleep', '1000.314159'])\n"
                                            "time.sleep(1000)\n", false),
                             NULL, p[0], &e.result, NULL), 0);
    pthread_join(t, NULL);
    cr_expect_str_eq(str(e.result, "status"), "cancelled", "%s", result_text(&e));
    cr_expect_eq(cordon_result_exit_status(result_text(&e)), 137);
    cr_expect(TEST_WAIT_UNTIL(test_count_processes("1000.314159") == 0, 10000),
              "the program outlived the cancel");
    expect_no_residue(&e);
    close(p[0]);
    close(p[1]);
    env_close(&e);
}

/* Cancelled before it began: nothing is provisioned at all. */
Test(run, a_cancel_before_the_run_provisions_nothing)
{
    struct env e;
    int p[2];

    env_open(&e);
    cr_assert_eq(pipe(p), 0);
    cr_assert_eq(write(p[1], "x", 1), 1);
    cr_assert_eq(cordon__run(e.ctx, python_request(&e, "print(1)\n", false), NULL, p[0], &e.result, NULL), 0);
    cr_expect_str_eq(str(e.result, "status"), "cancelled", "%s", result_text(&e));
    cr_expect(strstr(result_text(&e), "\"provision\"") == NULL, "%s", result_text(&e));
    cr_expect(strstr(result_text(&e), "\"code\":\"cancelled\"") != NULL, "%s", result_text(&e));
    expect_no_residue(&e);
    close(p[0]);
    close(p[1]);
    env_close(&e);
}

Test(run, nonzero_exit_is_an_error_with_the_code)
{
    struct env e;

    env_open(&e);
    run(&e, python_request(&e, "import sys\nprint('bad', file=sys.stderr)\nsys.exit(3)\n", false));
    cr_expect_str_eq(str(e.result, "status"), "error");
    cr_expect_eq(cJSON_GetObjectItem(e.result, "exit_code")->valueint, 3);
    cr_expect_str_eq(str(e.result, "stderr"), "bad\n");
    cr_expect_eq(cordon_result_exit_status(result_text(&e)), 3);
    env_close(&e);
}

Test(run, binary_output_keeps_exact_bytes_in_base64)
{
    struct env e;

    env_open(&e);
    run(&e, python_request(&e, "import sys\nsys.stdout.buffer.write(b'\\xff\\x00ok')\n", false));
    cr_expect_str_eq(str(e.result, "status"), "success");
    cr_expect_str_eq(str(e.result, "stdout_base64"), "/wBvaw==");
    env_close(&e);
}

Test(run, not_json_is_blocked)
{
    char *state = NULL, *text = NULL;
    struct cordon_ctx *ctx = test_ctx_open(NULL, &state);
    cJSON *doc;

    cr_assert_eq(cordon_run_json(ctx, "{not json", &text, NULL), 0);
    doc = cJSON_Parse(text);
    cr_expect_str_eq(str(doc, "status"), "blocked");
    cr_expect_eq(cordon_result_exit_status(text), 125);
    cJSON_Delete(doc);
    free(text);
    cordon_ctx_free(ctx);
    test_rmtree(state);
    free(state);
}

struct lang_case {
    const char *language;
    const char *entry;
    const char *source;
};

/* Criterion workers are separate processes: parameters are indices
 * into this table, never pointers. */
static struct lang_case four_languages_cases[] = {
    { "node", "main.js", "console.log('hello ' + process.argv.length)\n" },
    { "go", "main.go", "package main\nimport \"fmt\"\nfunc main() { fmt.Println(\"hello 2\") }\n" },
    { "cpp", "main.cpp", "#include <iostream>\nint main() { std::cout << \"hello 2\\n\"; }\n" },
    { "python", "main.py", "print('hello 2')\n" },
};

ParameterizedTestParameters(run, four_languages)
{
    static size_t idx[sizeof(four_languages_cases) / sizeof(four_languages_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *at, run, four_languages, .timeout = 120)
{
    struct lang_case *c = &four_languages_cases[*at];
    struct env e;
    cJSON *req;

    env_open(&e);
    req = python_request(&e, c->source, false);
    cJSON_ReplaceItemInObject(req, "language", cJSON_CreateString(c->language));
    cJSON_ReplaceItemInObject(req, "entrypoint", cJSON_CreateString(c->entry));
    cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(req, "files"), 0), "path",
                              cJSON_CreateString(c->entry));
    cJSON_AddNumberToObject(req, "timeout_ms", 110000);
    run(&e, req);
    cr_expect_str_eq(str(e.result, "status"), "success", "%s: %s", c->language, result_text(&e));
    cr_expect_str_eq(str(e.result, "stdout"), "hello 2\n", "%s", c->language);
    expect_no_residue(&e);
    env_close(&e);
}

/* `cordon run -q` of path with the loader tracing the files it maps into
 * trace; returns the exit status. */
static int run_traced(const char *cordon, const char *state, const char *path, char *trace,
                      size_t size)
{
    size_t len = 0;
    char sink[512];
    int p[2], status;
    ssize_t n;
    pid_t pid;

    cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        dup2(p[1], 1);
        dup2(p[1], 2);
        setenv("LD_DEBUG", "files", 1);
        setenv("CORDON_PROVIDER_PATH", getenv("CORDON_TEST_PROVIDER_DIR"), 1);
        execl(cordon, cordon, "--state-dir", state, "run", "-q", "--isolation", "none",
              "--allow-unsafe-local", "--provider", "trusted-local", path, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    while (len < size - 1 && (n = read(p[0], trace + len, size - 1 - len)) > 0)
        len += (size_t)n;
    while (read(p[0], sink, sizeof(sink)) > 0)
        ;
    trace[len] = '\0';
    close(p[0]);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return status;
}

/* Landing through import_files (ABI 1.1) means a plain run never loads
 * libarchive and its dependencies: 1.4 ms of every `cordon run` here. The
 * dynamic loader's own trace of the command is the witness (the second
 * run: the first one probes, and the observer is copied in as tar). */
Test(run, a_run_without_outputs_never_loads_libarchive, .timeout = 60)
{
    const char *cordon = getenv("CORDON_BIN");
    char *state = test_mkdtemp(), *dir = test_mkdtemp(), path[512], trace[1 << 16];
    int status;
    FILE *f;

    if (cordon == NULL || getenv("CORDON_TEST_PROVIDER_DIR") == NULL)
        cr_skip_test("CORDON_BIN or CORDON_TEST_PROVIDER_DIR is not set (make check sets them)");
    cr_assert_not_null(state);
    cr_assert_not_null(dir);
    snprintf(path, sizeof(path), "%s/hello.py", dir);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("print('hello')\n", f);
    fclose(f);
    for (int i = 0; i < 2; i++) {
        status = run_traced(cordon, state, path, trace, sizeof(trace));
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "cordon run failed: %.2000s",
                  trace);
    }
    cr_assert_not_null(strstr(trace, "trusted-local.so"), "no loader trace: %.500s", trace);
    cr_expect_null(strstr(trace, "libarchive"), "libarchive was loaded for a plain run");
    test_rmtree(state);
    test_rmtree(dir);
    free(state);
    free(dir);
}

/* --- outputs inline, without a task workspace --------------------------- */

/* A run without "workspace" whose program writes `code` and declares outputs. */
static const cJSON *inline_run(struct env *e, const char *code, const char *const *outputs, int n)
{
    cJSON *req = python_request(e, code, false);

    cJSON_AddItemToObject(req, "outputs", cJSON_CreateStringArray(outputs, n));
    run(e, req);
    return cJSON_GetObjectItem(e->result, "outputs");
}

Test(run, inline_text_output_comes_back_in_the_result)
{
    static const char *const outs[] = { "report.txt", "sub/more.txt" };
    const cJSON *outputs, *o;
    struct env e;

    env_open(&e);
    outputs = inline_run(&e,
                         "import os\nos.makedirs('../output/sub')\n"
                         "open('../output/report.txt','w').write('h\\u00e9llo\\n')\n"
                         "open('../output/sub/more.txt','w').write('')\n",
                         outs, 2);
    cr_expect_str_eq(str(e.result, "status"), "success", "%s", result_text(&e));
    cr_assert_eq(cJSON_GetArraySize(outputs), 2, "%s", result_text(&e));
    o = cJSON_GetArrayItem(outputs, 0);
    cr_expect_str_eq(str(o, "path"), "output/report.txt");
    cr_expect_str_eq(str(o, "encoding"), "utf-8");
    cr_expect_str_eq(str(o, "data"), "h\xc3\xa9llo\n");
    cr_expect_eq(cJSON_GetObjectItem(o, "bytes")->valueint, 7);
    cr_expect_str_eq(str(o, "sha256"), "b95becd154aa095f76c4ca47a5aeb8350d6dfcb838404edfc9dae06628de938d");
    cr_expect_null(cJSON_GetObjectItem(o, "host_path"), "a private workspace has no host path to give");
    o = cJSON_GetArrayItem(outputs, 1);
    cr_expect_str_eq(str(o, "path"), "output/sub/more.txt");
    cr_expect_str_eq(str(o, "encoding"), "utf-8");
    cr_expect_str_eq(str(o, "data"), "");
    cr_expect_eq(cJSON_GetObjectItem(o, "bytes")->valueint, 0);
    cr_expect_str_eq(str(o, "sha256"), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect_no_residue(&e);
    env_close(&e);
}

Test(run, inline_binary_output_is_base64)
{
    static const char *const outs[] = { "blob.bin", "nul.txt" };
    const cJSON *outputs, *o;
    struct env e;

    env_open(&e);
    outputs = inline_run(&e,
                         "open('../output/blob.bin','wb').write(bytes(range(256)))\n"
                         "open('../output/nul.txt','wb').write(b'a\\x00b')\n",
                         outs, 2);
    cr_expect_str_eq(str(e.result, "status"), "success", "%s", result_text(&e));
    cr_assert_eq(cJSON_GetArraySize(outputs), 2, "%s", result_text(&e));
    o = cJSON_GetArrayItem(outputs, 0);
    cr_expect_str_eq(str(o, "encoding"), "base64");
    cr_expect_eq(cJSON_GetObjectItem(o, "bytes")->valueint, 256);
    cr_expect_eq(strncmp(str(o, "data"), "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8g", 44), 0, "%s",
                 str(o, "data"));
    cr_expect_eq(strlen(str(o, "data")), 344u, "256 bytes are 344 base64 characters");
    /* NUL is valid UTF-8 but not text: the exact bytes, as for the streams */
    o = cJSON_GetArrayItem(outputs, 1);
    cr_expect_str_eq(str(o, "encoding"), "base64");
    cr_expect_str_eq(str(o, "data"), "YQBi");
    expect_no_residue(&e);
    env_close(&e);
}

Test(run, inline_missing_output_is_reported_missing)
{
    static const char *const outs[] = { "absent.txt", "here.txt" };
    const cJSON *outputs, *o;
    struct env e;

    env_open(&e);
    outputs = inline_run(&e, "open('../output/here.txt','w').write('x')\n", outs, 2);
    cr_expect_str_eq(str(e.result, "status"), "success", "%s", result_text(&e));
    cr_assert_eq(cJSON_GetArraySize(outputs), 2);
    o = cJSON_GetArrayItem(outputs, 0);
    cr_expect_str_eq(str(o, "path"), "output/absent.txt");
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(o, "missing")));
    cr_expect_null(cJSON_GetObjectItem(o, "data"));
    cr_expect_null(cJSON_GetObjectItem(o, "encoding"));
    cr_expect_str_eq(str(cJSON_GetArrayItem(outputs, 1), "data"), "x");
    expect_no_residue(&e);
    env_close(&e);
}

/* A file of exactly the inline per-file limit is returned whole. */
Test(run, inline_output_at_the_per_file_limit_is_whole, .timeout = 60)
{
    static const char *const outs[] = { "full.txt" };
    const cJSON *outputs;
    struct env e;

    env_open(&e);
    outputs = inline_run(&e, "open('../output/full.txt','w').write('a' * (4 << 20))\n", outs, 1);
    cr_expect_str_eq(str(e.result, "status"), "success", "%.300s", result_text(&e));
    cr_expect_eq(strlen(str(cJSON_GetArrayItem(outputs, 0), "data")), (size_t)CORDON_GRANT_INLINE_MAX_FILE_BYTES);
    env_close(&e);
}

struct inline_refusal {
    const char *what;
    const char *code;      /* the program */
    const char *outputs;   /* JSON array of declared outputs */
    const char *error;     /* the error code's name */
    const char *needle;    /* in the error message */
};

static struct inline_refusal inline_refusals_cases[] = {
    { "over the per-file limit", "open('../output/big.txt','w').write('a' * ((4 << 20) + 1))\n",
      "[\"big.txt\"]", "limit_exceeded",
      "outputs: big.txt is 4194305 bytes, exceeds the inline per-file limit of 4194304 (give a "
      "\"workspace\" to collect larger outputs)" },
    { "over the total limit",
      "for i in range(5):\n    open('../output/f%d.txt' % i,'w').write('a' * (7 << 19))\n",
      "[\"f0.txt\",\"f1.txt\",\"f2.txt\",\"f3.txt\",\"f4.txt\"]", "limit_exceeded",
      "outputs: 18350080 bytes in total (at f4.txt) exceeds the inline total limit of 16777216" },
    { "far over the total limit: the unpacking stops",
      "for i in range(6):\n    open('../output/f%d.txt' % i,'w').write('a' * (31 << 17))\n",
      "[\"f0.txt\",\"f1.txt\",\"f2.txt\",\"f3.txt\",\"f4.txt\",\"f5.txt\"]", "limit_exceeded",
      "bring the total to more than the limit of 20971520 bytes" },
    { "a symbolic link out of the sandbox", "import os\nos.symlink('/etc/passwd', '../output/link.txt')\n",
      "[\"link.txt\"]", "unsafe_path", "symbolic link to an absolute path" },
    { "a symbolic link to a file beside it",
      "import os\nopen('../output/real.txt','w').write('x')\nos.symlink('real.txt', '../output/link.txt')\n",
      "[\"link.txt\"]", "unsafe_path", "outputs: link.txt is a symbolic link, not a regular file (refused)" },
    { "a directory", "import os\nos.makedirs('../output/d/e')\nopen('../output/d/e/f','w').write('x')\n",
      "[\"d\"]", "unsafe_path", "not a regular file" },
};

ParameterizedTestParameters(run, inline_refusals)
{
    static size_t idx[sizeof(inline_refusals_cases) / sizeof(inline_refusals_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

/* A refused output fails the collect step: status error, nothing inline,
 * nothing read through a link, no residue. */
ParameterizedTest(size_t *at, run, inline_refusals, .timeout = 60)
{
    struct inline_refusal *c = &inline_refusals_cases[*at];
    const cJSON *error;
    struct env e;
    cJSON *req;

    env_open(&e);
    req = python_request(&e, c->code, false);
    cJSON_AddItemToObject(req, "outputs", cJSON_Parse(c->outputs));
    run(&e, req);
    cr_expect_str_eq(str(e.result, "status"), "error", "%s: %.400s", c->what, result_text(&e));
    error = cJSON_GetObjectItem(e.result, "error");
    cr_expect_str_eq(str(error, "code"), c->error, "%s", c->what);
    cr_expect(strstr(str(error, "message"), c->needle) != NULL, "%s: \"%s\" lacks \"%s\"", c->what,
              str(error, "message"), c->needle);
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(e.result, "outputs")), 0, "%s", c->what);
    cr_expect_null(strstr(result_text(&e), "root:"), "%s: no host file content", c->what);
    expect_no_residue(&e);
    env_close(&e);
}

/* A stream's text: every byte that is not strict UTF-8 (an overlong form,
 * a surrogate, a code point past U+10FFFF, NUL) becomes U+FFFD, and the
 * exact bytes go to base64; a character cut by the head/tail boundary is
 * dropped, not counted as invalid. */
Test(run, stream_fields_replace_what_is_not_strict_utf8)
{
    static const char data[] = "a\xc0\x80" "b\xed\xa0\x80" "c\xf4\x90\x80\x80" "d\0e\xf0\x9f\x98\x80";
    static const char want[] = "a\xef\xbf\xbd\xef\xbf\xbd"
                               "b\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                               "c\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                               "d\xef\xbf\xbd" "e\xf0\x9f\x98\x80";
    cJSON *r = cJSON_CreateObject();

    cordon__result_add_stream(r, "stdout", data, sizeof(data) - 1, sizeof(data) - 1, 0);
    cr_expect_str_eq(str(r, "stdout"), want);
    cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(r, "stdout_truncated")));
    cr_expect_not_null(cJSON_GetObjectItem(r, "stdout_base64"));
    cJSON_Delete(r);

    /* "é" cut in two by the head's end: the head keeps the whole one only. */
    r = cJSON_CreateObject();
    cordon__result_add_stream(r, "stderr", "\xc3\xa9\xc3\xa9", 4, 3, 5);
    cr_expect_str_eq(str(r, "stderr"), "\xc3\xa9\n[cordon: 5 bytes dropped]\n");
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(r, "stderr_truncated")));
    cr_expect_null(cJSON_GetObjectItem(r, "stderr_base64"));
    cJSON_Delete(r);
}
