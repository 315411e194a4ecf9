/* Unit tests of the warm pool (core/pool.c): fill, claim by cordon run and
 * by concurrent processes, use-once, expiry, gc, drain and bad input,
 * through the real trusted-local provider on this host. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/hostflow.h"
#include "core/pool.h"
#include "core/record.h"
#include "core/run.h"
#include "tests/unit/helpers.h"

struct env {
    char *state;
    struct cordon_ctx *ctx;
};

static void env_open(struct env *e)
{
    e->ctx = test_ctx_open(NULL, &e->state);
    cr_assert_not_null(e->ctx);
}

static void env_close(struct env *e)
{
    char *text = NULL;

    /* Whatever a test left, drained, so no sandbox outlives it. */
    if (cordon__pool_drain_json(e->ctx, &text, NULL) == 0)
        free(text);
    cordon_ctx_free(e->ctx);
    test_rmtree(e->state);
    free(e->state);
}

/* The pool request of trusted-local runs with timeout_ms. */
static cJSON *pool_request(double timeout_ms)
{
    cJSON *r = cJSON_CreateObject();

    cJSON_AddStringToObject(r, "provider", "trusted-local");
    cJSON_AddStringToObject(r, "isolation", "none");
    cJSON_AddBoolToObject(r, "allow_unsafe_local", true);
    cJSON_AddNumberToObject(r, "timeout_ms", timeout_ms);
    return r;
}

static void fill(struct env *e, uint64_t size, uint64_t ttl_ms, char key[65])
{
    struct cordon__pool_target t;
    struct cordon_error err;
    cJSON *req = pool_request(20000);
    char *text = NULL;

    cordon_error_init(&err);
    cr_assert_eq(cordon__run_pool_target(e->ctx, req, &t, &err), 0, "%s", err.message);
    cr_assert_eq(cordon__pool_fill(e->ctx, &t, size, ttl_ms, &text, &err), 0, "%s", err.message);
    snprintf(key, 65, "%s", t.key);
    free(text);
    cordon__pool_target_clear(&t);
    cJSON_Delete(req);
}

/* Unclaimed executions of the pool, as pool ls counts them. */
static int ready(struct env *e)
{
    char *text = NULL;
    cJSON *doc, *p;
    int n = 0;

    cr_assert_eq(cordon__pool_ls_json(e->ctx, &text, NULL), 0);
    doc = cJSON_Parse(text);
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(doc, "pools"))
        n += (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(p, "ready"));
    cJSON_Delete(doc);
    free(text);
    return n;
}

static size_t records(struct env *e)
{
    char **ids = NULL;
    size_t n = 0;

    cr_assert_eq(cordon__record_list(e->ctx, &ids, &n, NULL), 0);
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
    return n;
}

static bool pool_dir_exists(struct env *e)
{
    char path[4200];
    struct stat st;

    snprintf(path, sizeof(path), "%s/pool", e->state);
    return stat(path, &st) == 0;
}

/* A python hello run with the pool request's keys. */
static cJSON *run_hello(struct env *e, double timeout_ms)
{
    cJSON *req = pool_request(timeout_ms), *files = cJSON_AddArrayToObject(req, "files"), *f = cJSON_CreateObject();
    cJSON *result = NULL;

    cJSON_AddStringToObject(req, "language", "python");
    cJSON_AddStringToObject(req, "entrypoint", "main.py");
    cJSON_AddStringToObject(f, "path", "main.py");
    cJSON_AddStringToObject(f, "content", "print('hello')\n");
    cJSON_AddItemToArray(files, f);
    cr_assert_eq(cordon__run(e->ctx, req, NULL, -1, &result, NULL), 0);
    cJSON_Delete(req);
    return result;
}

static const cJSON *meta(const cJSON *result, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(result, "meta"), key);
}

Test(pool, fill_then_run_claims_one_and_uses_it_once)
{
    struct env e;
    char key[65];
    cJSON *a, *b;

    env_open(&e);
    fill(&e, 2, 60000, key);
    cr_assert_eq(ready(&e), 2);
    cr_assert_eq(records(&e), 2);
    a = run_hello(&e, 20000);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "stdout")), "hello\n");
    cr_assert(cJSON_IsTrue(meta(a, "pooled")), "the run did not claim: %s", cJSON_PrintUnformatted(a));
    /* Used once: destroyed after the run, record and all; not refilled. */
    cr_assert_eq(ready(&e), 1);
    cr_assert_eq(records(&e), 1);
    b = run_hello(&e, 20000);
    cr_assert(cJSON_IsTrue(meta(b, "pooled")));
    cr_assert_str_neq(cJSON_GetStringValue(meta(a, "execution_id")), cJSON_GetStringValue(meta(b, "execution_id")));
    cr_assert_eq(ready(&e), 0);
    cr_assert_eq(records(&e), 0);
    cJSON_Delete(a);
    cJSON_Delete(b);
    /* An empty pool: a fresh execution, as without one. */
    a = run_hello(&e, 20000);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "status")), "success");
    cr_assert_null(meta(a, "pooled"));
    cJSON_Delete(a);
    env_close(&e);
}

Test(pool, a_run_that_differs_does_not_claim)
{
    struct env e;
    char key[65];
    cJSON *a;

    env_open(&e);
    fill(&e, 1, 60000, key);
    /* Another timeout is another runtime limit: another sandbox. */
    a = run_hello(&e, 15000);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "status")), "success");
    cr_assert_null(meta(a, "pooled"));
    cr_assert_eq(ready(&e), 1);
    cJSON_Delete(a);
    env_close(&e);
}

Test(pool, concurrent_claimers_never_share_one)
{
    enum { FILLED = 4, CLAIMERS = 8 };
    struct env e;
    char key[65], got[CLAIMERS][65];
    int fds[CLAIMERS][2], hold[2], claimed = 0;
    pid_t pids[CLAIMERS];

    env_open(&e);
    fill(&e, FILLED, 60000, key);
    /* The claimers hold what they claimed until all have answered: this
     * pipe's end of file lets them go. */
    cr_assert_eq(pipe(hold), 0);
    for (int i = 0; i < CLAIMERS; i++) {
        cr_assert_eq(pipe(fds[i]), 0);
        pids[i] = fork();
        cr_assert_geq(pids[i], 0);
        if (pids[i] == 0) {
            struct cordon__record *rec = NULL;
            char buf[65] = "", c;

            /* Each child claims and keeps it until it exits, like a run. */
            close(hold[1]);
            if (cordon__pool_claim(e.ctx, key, &rec, NULL) == 0 && rec != NULL)
                snprintf(buf, sizeof(buf), "%s", rec->id);
            if (write(fds[i][1], buf, sizeof(buf)) != (ssize_t)sizeof(buf))
                _exit(2);
            while (read(hold[0], &c, 1) < 0 && errno == EINTR)
                continue;
            _exit(0);
        }
        close(fds[i][1]);
    }
    close(hold[0]);
    for (int i = 0; i < CLAIMERS; i++) {
        cr_assert_eq(read(fds[i][0], got[i], sizeof(got[i])), (ssize_t)sizeof(got[i]));
        close(fds[i][0]);
    }
    close(hold[1]);
    for (int i = 0; i < CLAIMERS; i++) {
        int status;

        cr_assert_eq(waitpid(pids[i], &status, 0), pids[i]);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        if (got[i][0] == '\0')
            continue;
        claimed++;
        for (int j = 0; j < i; j++)
            cr_assert_str_neq(got[i], got[j], "claimers %d and %d both got %s", j, i, got[i]);
    }
    cr_assert_eq(claimed, FILLED);
    cr_assert_eq(ready(&e), 0);
    /* Their claimers died holding them: gc destroys them, never a claim. */
    {
        char *text = NULL;
        cr_assert_eq(cordon_gc_json(e.ctx, &text, NULL), 0);
        free(text);
    }
    cr_assert_eq(records(&e), 0);
    env_close(&e);
}

Test(pool, expired_ones_are_not_claimed_and_gc_reclaims_them)
{
    struct cordon__record *rec = NULL;
    struct env e;
    char key[65], *text = NULL;

    env_open(&e);
    fill(&e, 2, 1000, key);
    /* pool ls counts an execution past its claimable time as expired */
    cr_assert(TEST_WAIT_UNTIL(ready(&e) == 0, 10000), "the pool's executions never expired");
    cr_assert_eq(cordon__pool_claim(e.ctx, key, &rec, NULL), 0);
    cr_assert_null(rec);
    cr_assert_eq(ready(&e), 0);
    cr_assert_eq(records(&e), 2);
    cr_assert_eq(cordon_gc_json(e.ctx, &text, NULL), 0);
    cr_assert(strstr(text, "\"reclaimed\":[\"pool-") != NULL, "%s", text);
    free(text);
    cr_assert_eq(records(&e), 0);
    cr_assert_not(pool_dir_exists(&e) && ready(&e) != 0);
    env_close(&e);
}

Test(pool, drain_leaves_no_trace)
{
    struct env e;
    char key[65], *text = NULL;

    env_open(&e);
    fill(&e, 3, 60000, key);
    cr_assert(pool_dir_exists(&e));
    cr_assert_eq(cordon__pool_drain_json(e.ctx, &text, NULL), 0);
    cr_assert(strstr(text, "\"ok\":true") != NULL, "%s", text);
    free(text);
    cr_assert_eq(records(&e), 0);
    cr_assert_not(pool_dir_exists(&e));
    env_close(&e);
}

Test(pool, fill_tops_up_and_never_overfills)
{
    struct env e;
    char key[65];

    env_open(&e);
    fill(&e, 2, 60000, key);
    fill(&e, 3, 60000, key);
    cr_assert_eq(ready(&e), 3);
    fill(&e, 1, 60000, key);
    cr_assert_eq(ready(&e), 3);
    env_close(&e);
}

/* Bad input: each refusal names the field and the limit, and leaves nothing. */
struct bad {
    const char *json;    /* the pool request, or NULL for pool_request */
    uint64_t size, ttl;
    const char *message; /* a part of the refusal */
};

/* Criterion passes each row's index: the strings stay in this process. */
#define INDEX_PARAMS(table)                                                  \
    static size_t indices_[sizeof(table) / sizeof(table[0])];               \
    for (size_t i_ = 0; i_ < sizeof(indices_) / sizeof(indices_[0]); i_++) \
        indices_[i_] = i_;                                                   \
    return cr_make_param_array(size_t, indices_, sizeof(indices_) / sizeof(indices_[0]))

static const struct bad bad_rows[] = {
    { NULL, 0, 60000, "size: 0 is outside 1..64" },
    { NULL, 65, 60000, "size: 65 is outside 1..64" },
    { NULL, 1, 999, "ttl_ms: 999 is outside 1000..86400000" },
    { NULL, 1, 86400001, "ttl_ms: 86400001 is outside 1000..86400000" },
    { "{\"provider\":\"trusted-local\",\"isolation\":\"none\",\"allow_unsafe_local\":true,\"files\":[]}", 1,
      60000, "files: not a key of a pool request" },
    { "{\"isolation\":\"none\"}", 1, 60000, "provider: required" },
    { "{\"provider\":\"trusted-local\",\"isolation\":\"none\",\"allow_unsafe_local\":true,\"timeout_ms\":0}", 1,
      60000, "timeout_ms: 0 must be between 1 and" },
    { "{\"provider\":\"trusted-local\",\"isolation\":\"none\",\"allow_unsafe_local\":true,"
      "\"limits\":{\"pids\":0}}", 1, 60000, "limits.pids: 0 is below the minimum 8" },
    { "{\"provider\":\"trusted-local\",\"isolation\":\"required\",\"allow_unsafe_local\":true}", 1, 60000,
      "provider_unavailable: trusted-local: " },
    { "{\"provider\":\"no-such\",\"isolation\":\"none\"}", 1, 60000, "no-such" },
};

ParameterizedTestParameters(pool, refusals)
{
    INDEX_PARAMS(bad_rows);
}

ParameterizedTest(size_t *index, pool, refusals)
{
    const struct bad *row = &bad_rows[*index];
    struct cordon__pool_target t;
    struct cordon_error err;
    struct env e;
    cJSON *req;
    char *text = NULL;
    int r;

    env_open(&e);
    req = row->json != NULL ? cJSON_Parse(row->json) : pool_request(20000);
    cordon_error_init(&err);
    memset(&t, 0, sizeof(t));
    r = cordon__run_pool_target(e.ctx, req, &t, &err);
    if (r == 0)
        r = cordon__pool_fill(e.ctx, &t, row->size, row->ttl, &text, &err);
    cr_assert_lt(r, 0, "accepted: %s", row->json != NULL ? row->json : "(size/ttl)");
    cr_assert(strstr(err.message, row->message) != NULL, "\"%s\" does not say \"%s\"", err.message,
              row->message);
    cr_assert_eq(records(&e), 0);
    cr_assert_not(pool_dir_exists(&e), "a refused fill left %s/pool", e.state);
    cordon__pool_target_clear(&t);
    cJSON_Delete(req);
    env_close(&e);
}

/* ---- cordon provision ---------------------------------------------------- */

#define PROVISION_REQ                                                                            \
    "{\"provider\":\"trusted-local\",\"isolation\":\"none\",\"allow_unsafe_local\":true,"       \
    "\"resources\":{\"cpus\":1,\"memory_bytes\":268435456,\"disk_bytes\":67108864,\"pids\":128," \
    "\"runtime_ms\":60000,\"max_output_bytes\":1048576}"
/* The environment the pool is filled with. */
#define POOL_ENV ",\"environment\":{\"A\":\"1\"}"

static void fill_provision(struct env *e, uint64_t size)
{
    struct cordon__pool_target t;
    struct cordon_error err;
    cJSON *req = cJSON_Parse(PROVISION_REQ POOL_ENV "}");
    char *text = NULL;

    cordon_error_init(&err);
    cr_assert_eq(cordon__provision_pool_target(e->ctx, req, &t, &err), 0, "%s", err.message);
    cr_assert_eq(cordon__pool_fill(e->ctx, &t, size, 60000, &text, &err), 0, "%s", err.message);
    free(text);
    cordon__pool_target_clear(&t);
    cJSON_Delete(req);
}

/* The provision result; *ret_pooled says whether it claimed. */
static char *provision(struct env *e, const char *tail, bool *ret_pooled)
{
    struct cordon_error err;
    char req[1024], *out = NULL, *id;
    cJSON *doc;

    snprintf(req, sizeof(req), PROVISION_REQ "%s}", tail);
    cordon_error_init(&err);
    cr_assert_eq(cordon_provision_json(e->ctx, req, &out, &err), 0, "%s", err.message);
    doc = cJSON_Parse(out);
    *ret_pooled = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "pooled"));
    id = strdup(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "execution_id")));
    cJSON_Delete(doc);
    free(out);
    return id;
}

static void terminate(struct env *e, const char *id)
{
    char *out = NULL;

    cr_assert_eq(cordon_terminate_json(e->ctx, id, &out, NULL), 0);
    free(out);
}

Test(pool, provision_claims_a_matching_one_as_its_own)
{
    struct cordon__record *rec = NULL;
    struct env e;
    bool pooled;
    char *id, *other;

    env_open(&e);
    fill_provision(&e, 1);
    cr_assert_eq(ready(&e), 1);
    id = provision(&e, POOL_ENV ",\"metadata\":{\"who\":\"me\"}", &pooled);
    cr_assert(pooled);
    cr_assert_eq(ready(&e), 0);
    /* Now an ordinary record: not pooled, the caller's metadata, ready. */
    cr_assert_eq(cordon__record_peek(e.ctx, id, &rec, NULL), 0);
    cr_assert_null(cJSON_GetObjectItemCaseSensitive(rec->doc, "pool"));
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                         cJSON_GetObjectItemCaseSensitive(rec->doc, "metadata"), "who")), "me");
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rec->doc, "phase")), "ready");
    cordon__record_close(rec);
    /* An empty pool: fresh, as without one. */
    other = provision(&e, POOL_ENV, &pooled);
    cr_assert_not(pooled);
    terminate(&e, id);
    terminate(&e, other);
    cr_assert_eq(records(&e), 0);
    free(id);
    free(other);
    env_close(&e);
}

Test(pool, provision_that_differs_or_names_its_id_does_not_claim)
{
    struct env e;
    bool pooled;
    char *a, *b;

    env_open(&e);
    fill_provision(&e, 1);
    /* Another environment is another sandbox. */
    a = provision(&e, ",\"environment\":{\"A\":\"2\"}", &pooled);
    cr_assert_not(pooled);
    /* A caller-chosen id is never a pooled one's. */
    b = provision(&e, POOL_ENV ",\"execution_id\":\"mine-1\"", &pooled);
    cr_assert_not(pooled);
    cr_assert_str_eq(b, "mine-1");
    cr_assert_eq(ready(&e), 1);
    terminate(&e, a);
    terminate(&e, b);
    free(a);
    free(b);
    env_close(&e);
}

Test(pool, provision_pool_refuses_its_own_id_and_metadata)
{
    static const char *const tails[] = { ",\"execution_id\":\"x\"}", ",\"metadata\":{}}" };
    static const char *const fields[] = { "execution_id", "metadata" };
    struct cordon__pool_target t;
    struct env e;

    env_open(&e);
    for (size_t i = 0; i < 2; i++) {
        struct cordon_error err;
        char text[1024];
        cJSON *req;

        snprintf(text, sizeof(text), PROVISION_REQ "%s", tails[i]);
        req = cJSON_Parse(text);
        cordon_error_init(&err);
        cr_assert_lt(cordon__provision_pool_target(e.ctx, req, &t, &err), 0);
        cr_assert(strncmp(err.message, fields[i], strlen(fields[i])) == 0, "%s", err.message);
        cJSON_Delete(req);
    }
    cr_assert_eq(records(&e), 0);
    cr_assert_not(pool_dir_exists(&e));
    env_close(&e);
}

/* The public call: one request document, the pool's keys beside the run's
 * or the provision's; each refusal names its field and leaves nothing. */
Test(pool, the_public_fill_reads_one_request_and_refuses_by_field)
{
    static const struct {
        const char *extra; /* the pool's keys, in the run's pool request */
        int code;
        const char *message;
    } bad[] = {
        { "", CORDON_E_INVALID, "size: required (1..64)" },
        { "\"size\":0", CORDON_E_LIMIT, "size: 0 is outside 1..64" },
        { "\"size\":65", CORDON_E_LIMIT, "size: 65 is outside 1..64" },
        { "\"size\":1.5", CORDON_E_INVALID, "size: must be a whole number" },
        { "\"size\":-1", CORDON_E_INVALID, "size: must be a whole number" },
        { "\"size\":1,\"ttl_ms\":10", CORDON_E_LIMIT, "ttl_ms: 10 is outside 1000..86400000" },
        { "\"size\":1,\"for\":\"box\"", CORDON_E_INVALID, "for: \"run\" or \"provision\"" },
        { "\"size\":1,\"for\":\"provision\"", CORDON_E_INVALID, "timeout_ms: unknown key" },
    };
    struct cordon_error err;
    struct env e;
    char req[512], *text = NULL;
    cJSON *doc, *result;

    env_open(&e);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(req, sizeof(req),
                 "{\"provider\":\"trusted-local\",\"isolation\":\"none\",\"allow_unsafe_local\":true,"
                 "\"timeout_ms\":20000%s%s}", bad[i].extra[0] ? "," : "", bad[i].extra);
        cordon_error_init(&err);
        cr_expect_eq(cordon_pool_fill_json(e.ctx, req, &text, &err), bad[i].code, "%zu: %s", i, err.message);
        cr_expect(strstr(err.message, bad[i].message) != NULL, "%zu: \"%s\" lacks \"%s\"", i, err.message,
                  bad[i].message);
        cr_expect_eq(records(&e), 0, "%zu left a record", i);
    }
    cr_expect_not(pool_dir_exists(&e));
    cordon_error_init(&err);
    cr_assert_eq(cordon_pool_fill_json(e.ctx,
                                       "{\"provider\":\"trusted-local\",\"isolation\":\"none\","
                                       "\"allow_unsafe_local\":true,\"timeout_ms\":20000,\"size\":2,\"ttl_ms\":60000}",
                                       &text, &err), 0, "%s", err.message);
    doc = cJSON_Parse(text);
    free(text);
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "added")), 2);
    cJSON_Delete(doc);
    cr_assert_eq(cordon_pool_ls_json(e.ctx, &text, NULL), 0);
    cr_expect(strstr(text, "\"ready\":2") != NULL, "%s", text);
    free(text);
    /* The same run as the request claims one. */
    result = run_hello(&e, 20000);
    cr_expect(cJSON_IsTrue(meta(result, "pooled")));
    cJSON_Delete(result);
    cr_assert_eq(cordon_pool_drain_json(e.ctx, &text, NULL), 0);
    cr_expect(strstr(text, "\"ok\":true") != NULL, "%s", text);
    free(text);
    cr_expect_eq(records(&e), 0);
    env_close(&e);
}
