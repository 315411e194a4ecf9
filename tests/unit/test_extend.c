/* Unit tests of extend (core/hostflow-extend.c) and of the checkpoint
 * store's ls and rm (core/hostflow-checkpoint.c), through the real
 * trusted-local provider and the noextend/failextend fixtures; and of the
 * command line's dispatch of both (core/cli/cmd_extend.c, cmd_checkpoint.c). */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/runner.h>

#include "core/checkpoint.h"
#include "core/hostflow.h"
#include "core/record.h"
#include "tests/unit/helpers.h"

struct env {
    char *state;
    char *dir;
    struct cordon_ctx *ctx;
};

static struct env *open_env;

static void env_close(struct env *e)
{
    char left[1024];

    char **ids = NULL;
    size_t n = 0;

    open_env = NULL;
    /* Every execution a test made ends here, passed or failed. */
    if (cordon__record_list(e->ctx, &ids, &n, NULL) == 0) {
        for (size_t i = 0; i < n; i++) {
            char *out = NULL;

            cordon_terminate_json(e->ctx, ids[i], &out, NULL);
            free(out);
            free(ids[i]);
        }
        free(ids);
    }
    cordon_ctx_free(e->ctx);
    cr_expect_eq(test_unmount_under(e->dir, left, sizeof(left)), 0, "a mount left at %s", left);
    test_rmtree(e->state);
    test_rmtree(e->dir);
    free(e->state);
    free(e->dir);
}

static void env_fini(void)
{
    if (open_env != NULL)
        env_close(open_env);
}

TestSuite(extend, .fini = env_fini);
TestSuite(checkpoint_store, .fini = env_fini);

/* trusted-local and the two fixtures, each with a root of its own. */
static void env_open(struct env *e)
{
    char config[2048];

    e->dir = test_mkdtemp();
    cr_assert_not_null(e->dir);
    chmod(e->dir, 0711);
    snprintf(config, sizeof(config),
             "{\"provider_configs\":{\"trusted-local\":{\"root\":\"%s/tl\"},"
             "\"noextend\":{\"root\":\"%s/ne\"},\"failextend\":{\"root\":\"%s/fe\"}}}",
             e->dir, e->dir, e->dir);
    e->ctx = test_ctx_open(config, &e->state);
    open_env = e;
    cr_assert_not_null(e->ctx);
}

static void provision(struct env *e, const char *provider, const char *id, unsigned runtime_ms)
{
    char req[1024], *out = NULL;
    struct cordon_error err;

    snprintf(req, sizeof(req),
             "{\"provider\":\"%s\",\"allow_unsafe_local\":true,\"isolation\":\"none\","
             "\"execution_id\":\"%s\",\"resources\":{\"cpus\":1,\"memory_bytes\":268435456,"
             "\"disk_bytes\":67108864,\"pids\":128,\"runtime_ms\":%u,\"max_output_bytes\":1048576}}",
             provider, id, runtime_ms);
    cordon_error_init(&err);
    cr_assert_eq(cordon_provision_json(e->ctx, req, &out, &err), 0, "provision %s: %s", provider,
                 err.message);
    free(out);
}

/* record.json of id, as bytes (malloc'd). */
static char *record_text(const struct env *e, const char *id)
{
    char path[1200], *text = NULL;
    size_t len = 0;
    int fd;

    snprintf(path, sizeof(path), "%s/executions/%s", e->state, id);
    fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cr_assert_geq(fd, 0, "no record directory for %s", id);
    cr_assert_eq(cordon_fs_read_file(fd, "record.json", 1u << 20, &text, &len, NULL), 0);
    close(fd);
    return text;
}

/* A number of the record (key) or of its provider_state (in_state). */
static uint64_t record_u64(const struct env *e, const char *id, const char *key, bool in_state)
{
    char *text = record_text(e, id);
    cJSON *doc = cJSON_Parse(text), *o = in_state ? cJSON_GetObjectItem(doc, "provider_state") : doc;
    const cJSON *v = cJSON_GetObjectItem(o, key);
    uint64_t n;

    cr_assert(cJSON_IsNumber(v), "record %s has no %s", id, key);
    n = (uint64_t)v->valuedouble;
    cJSON_Delete(doc);
    free(text);
    return n;
}

/* Set a number of the record, as a damaged or aged record would hold it. */
static void record_set(struct env *e, const char *id, const char *key, uint64_t v)
{
    struct cordon__record *rec = NULL;

    cr_assert_eq(cordon__record_open(e->ctx, id, false, &rec, NULL), 0);
    cJSON_ReplaceItemInObjectCaseSensitive(rec->doc, key, cJSON_CreateNumber((double)v));
    cr_assert_eq(cordon__record_save(rec, NULL), 0);
    cordon__record_close(rec);
}

/* The record of id has exactly the bytes was (record_text's, freed here). */
static void expect_unchanged(const struct env *e, const char *id, char *was)
{
    char *now = record_text(e, id);

    cr_expect_str_eq(now, was, "a refused extend changed the record of %s", id);
    free(now);
    free(was);
}

static int extend(struct env *e, const char *id, const char *req, cJSON **ret, struct cordon_error *err)
{
    char *out = NULL;
    int r;

    cordon_error_init(err);
    r = cordon_extend_json(e->ctx, id, req, &out, err);
    if (ret != NULL)
        *ret = r == 0 ? cJSON_Parse(out) : NULL;
    free(out);
    return r;
}

/* extend of id with req is refused with code, its message saying says,
 * and the record's bytes stay as they were. */
static void expect_refused(struct env *e, const char *id, const char *req, int code, const char *says)
{
    struct cordon_error err;
    char *was = record_text(e, id);

    cr_expect_eq(extend(e, id, req, NULL, &err), code, "%s %s: %s", id, req, err.message);
    cr_expect(strstr(err.message, says) != NULL, "%s %s: \"%s\" does not say \"%s\"", id, req, err.message,
              says);
    expect_unchanged(e, id, was);
}

static const char *exec_status(struct env *e, const char *id, char *buf, size_t size)
{
    char *out = NULL;
    cJSON *doc;

    cr_assert_eq(cordon_exec_json(e->ctx, id, "{\"command\":\"true\"}", -1, -1, &out, NULL), 0);
    doc = cJSON_Parse(out);
    snprintf(buf, size, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(doc, "status")) ?: "?");
    cJSON_Delete(doc);
    free(out);
    return buf;
}

static bool expired(const struct env *e, const char *id)
{
    return record_u64(e, id, "expires_at_ms", false) <= cordon_now_wall_ms();
}

Test(extend, later_moves_the_record_and_the_providers_deadline)
{
    struct cordon_error err;
    struct env e;
    uint64_t before, after, old, at;
    cJSON *res = NULL;
    char st[32];

    env_open(&e);
    provision(&e, "trusted-local", "ext-1", 60000);
    old = record_u64(&e, "ext-1", "expires_at_ms", false);
    before = cordon_now_wall_ms();
    cr_assert_eq(extend(&e, "ext-1", "{\"runtime_ms\":3600000}", &res, &err), 0, "%s", err.message);
    after = cordon_now_wall_ms();
    at = record_u64(&e, "ext-1", "expires_at_ms", false);
    cr_expect(at >= before + 3600000 && at <= after + 3600000, "the deadline is now + runtime_ms");
    cr_expect_eq(record_u64(&e, "ext-1", "expires_at_ms", true), at, "the provider's state follows");
    cr_expect_eq((uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(res, "expires_at_ms")), at);
    cr_expect_eq((uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(res, "previous_expires_at_ms")), old);
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(res, "provider_id")), "trusted-local");
    cr_expect_str_eq(exec_status(&e, "ext-1", st, sizeof(st)), "exited");
    cJSON_Delete(res);
    env_close(&e);
}

/* Sooner is allowed too (the lifetime left is set, not added): the
 * execution then expires at the new deadline. */
Test(extend, sooner_ends_the_execution_sooner)
{
    struct cordon_error err;
    struct env e;
    char st[32];

    env_open(&e);
    provision(&e, "trusted-local", "ext-2", 600000);
    cr_assert_eq(extend(&e, "ext-2", "{\"runtime_ms\":300}", NULL, &err), 0, "%s", err.message);
    cr_assert(TEST_WAIT_UNTIL(expired(&e, "ext-2"), 10000), "the sooner deadline never passed");
    cr_expect_str_eq(exec_status(&e, "ext-2", st, sizeof(st)), "expired");
    env_close(&e);
}

/* Every refusal names its field and bound, and leaves the record's bytes as they were. */
Test(extend, refusals_name_the_field_and_change_nothing)
{
    static const struct {
        const char *req;
        int code;
        const char *says;
    } bad[] = {
        { "{\"runtime_ms\":0}", CORDON_E_INVALID, "runtime_ms: 0 is outside 100..86400000" },
        { "{\"runtime_ms\":99}", CORDON_E_INVALID, "runtime_ms: 99 is outside 100..86400000" },
        { "{\"runtime_ms\":86400001}", CORDON_E_INVALID, "outside 100..86400000" },
        { "{\"runtime_ms\":1.5}", CORDON_E_INVALID, "runtime_ms: must be a whole number" },
        { "{\"runtime_ms\":\"30s\"}", CORDON_E_INVALID, "runtime_ms: must be a number" },
        { "{\"runtime_ms\":-5}", CORDON_E_INVALID, "runtime_ms: must be a whole number" },
        { "{}", CORDON_E_INVALID, "runtime_ms: required" },
        { "{\"runtime_ms\":1000,\"extra\":1}", CORDON_E_INVALID, "extra: unknown key" },
        { "[1000]", CORDON_E_INVALID, "request: must be a JSON object" },
        { "{\"runtime_ms\":", CORDON_E_INVALID, "request" },
    };
    struct cordon_error err;
    struct env e;

    env_open(&e);
    provision(&e, "trusted-local", "ext-3", 60000);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect_refused(&e, "ext-3", bad[i].req, bad[i].code, bad[i].says);
    cr_expect_eq(extend(&e, "no-such", "{\"runtime_ms\":1000}", NULL, &err), CORDON_E_NOT_FOUND);
    cr_expect(strstr(err.message, "no-such") != NULL, "%s", err.message);
    cr_expect_eq(extend(&e, "../ext-3", "{\"runtime_ms\":1000}", NULL, &err), CORDON_E_INVALID);
    cr_expect(strstr(err.message, "execution_id") != NULL, "%s", err.message);
    env_close(&e);
}

/* The maximum counts from the execution's creation: an execution made
 * nearly 24 h ago may only live to its 24th hour. */
Test(extend, over_the_maximum_from_creation_is_refused)
{
    struct cordon_error err;
    struct env e;

    env_open(&e);
    provision(&e, "trusted-local", "ext-4", 60000);
    record_set(&e, "ext-4", "created_at_ms", cordon_now_wall_ms() - CORDON_LIMIT_RUNTIME_MAX + 120000);
    expect_refused(&e, "ext-4", "{\"runtime_ms\":600000}", CORDON_E_LIMIT,
                   "runtime_ms: 600000 ms from now ends execution ext-4");
    expect_refused(&e, "ext-4", "{\"runtime_ms\":600000}", CORDON_E_LIMIT,
                   "over the limit of 86400000 ms counted from its creation");
    /* Within what is left, it extends. */
    cr_expect_eq(extend(&e, "ext-4", "{\"runtime_ms\":60000}", NULL, &err), 0, "%s", err.message);
    env_close(&e);
}

Test(extend, an_expired_execution_is_not_revived)
{
    struct env e;

    env_open(&e);
    provision(&e, "trusted-local", "ext-5", 300);
    cr_assert(TEST_WAIT_UNTIL(expired(&e, "ext-5"), 10000), "ext-5 never expired");
    expect_refused(&e, "ext-5", "{\"runtime_ms\":60000}", CORDON_E_TIMEOUT,
                   "expires_at_ms: execution ext-5 expired");
    env_close(&e);
}

/* extend never waits behind an exec or a checkpoint: busy, unchanged. */
Test(extend, a_held_execution_is_busy)
{
    struct cordon__record *held = NULL;
    struct env e;

    env_open(&e);
    provision(&e, "trusted-local", "ext-6", 60000);
    cr_assert_eq(cordon__record_open(e.ctx, "ext-6", false, &held, NULL), 0);
    /* record_text reads without the lock: the held one does not stop it. */
    expect_refused(&e, "ext-6", "{\"runtime_ms\":60000}", CORDON_E_BUSY, "busy");
    cordon__record_close(held);
    env_close(&e);
}

/* A provider without extend (built for ABI 1.2): unsupported, naming it. */
Test(extend, a_provider_without_extend_is_named_and_nothing_changes)
{
    struct env e;

    env_open(&e);
    provision(&e, "noextend", "ext-7", 60000);
    expect_refused(&e, "ext-7", "{\"runtime_ms\":120000}", CORDON_E_UNSUPPORTED, "provider noextend");
    env_close(&e);
}

/* The provider failing: a later deadline stays unwritten (the sandbox was
 * not moved); a sooner one stays written (it may have been): the record
 * never says the sandbox lives longer than it will. */
Test(extend, a_failing_provider_leaves_the_sooner_deadline)
{
    struct cordon_error err;
    struct env e;
    uint64_t old, at;

    env_open(&e);
    provision(&e, "failextend", "ext-8", 60000);
    old = record_u64(&e, "ext-8", "expires_at_ms", false);
    cr_expect_eq(extend(&e, "ext-8", "{\"runtime_ms\":600000}", NULL, &err), CORDON_E_PROVIDER);
    cr_expect(strstr(err.message, "failextend") != NULL, "%s", err.message);
    cr_expect_eq(record_u64(&e, "ext-8", "expires_at_ms", false), old, "a later deadline was recorded");
    cr_expect_eq(extend(&e, "ext-8", "{\"runtime_ms\":30000}", NULL, &err), CORDON_E_PROVIDER);
    at = record_u64(&e, "ext-8", "expires_at_ms", false);
    cr_expect(at < old && at <= cordon_now_wall_ms() + 30000, "the sooner deadline was not kept");
    env_close(&e);
}

/* ---- checkpoint ls / rm ---------------------------------------------------- */

static char *checkpoint(struct env *e, const char *id)
{
    char *out = NULL, *ckpt;
    struct cordon_error err;
    cJSON *doc;

    cordon_error_init(&err);
    cr_assert_eq(cordon_checkpoint_json(e->ctx, id, NULL, &out, &err), 0, "%s", err.message);
    doc = cJSON_Parse(out);
    ckpt = strdup(cJSON_GetStringValue(cJSON_GetObjectItem(doc, "checkpoint_id")));
    cJSON_Delete(doc);
    free(out);
    return ckpt;
}

/* How many checkpoints ls lists (of id, when not NULL); -1 on an error. */
static int ls_count(struct env *e, const char *id)
{
    char *out = NULL;
    cJSON *doc;
    int n;

    if (cordon_checkpoint_list_json(e->ctx, id, &out, NULL) < 0)
        return -1;
    doc = cJSON_Parse(out);
    n = cJSON_GetArraySize(cJSON_GetObjectItem(doc, "checkpoints"));
    cJSON_Delete(doc);
    free(out);
    return n;
}

static int rm(struct env *e, const char *ckpt, struct cordon_error *err)
{
    char *out = NULL;
    int r;

    cordon_error_init(err);
    r = cordon_checkpoint_remove_json(e->ctx, ckpt, &out, err);
    free(out);
    return r;
}

Test(checkpoint_store, ls_by_execution_and_rm)
{
    struct cordon_error err;
    struct env e;
    char *a1, *a2, *b1, *out = NULL;

    env_open(&e);
    cr_expect_eq(ls_count(&e, NULL), 0, "an empty store lists nothing");
    provision(&e, "trusted-local", "ck-a", 60000);
    provision(&e, "trusted-local", "ck-b", 60000);
    a1 = checkpoint(&e, "ck-a");
    a2 = checkpoint(&e, "ck-a");
    b1 = checkpoint(&e, "ck-b");
    cr_expect_eq(ls_count(&e, NULL), 3);
    cr_expect_eq(ls_count(&e, "ck-a"), 2);
    cr_expect_eq(ls_count(&e, "ck-b"), 1);
    cr_expect_eq(ls_count(&e, "ck-none"), 0);
    cr_expect_eq(cordon_checkpoint_list_json(e.ctx, "../x", &out, &err), CORDON_E_INVALID);
    cr_expect(strstr(err.message, "execution_id") != NULL, "%s", err.message);
    cr_expect_eq(rm(&e, a1, &err), 0, "%s", err.message);
    cr_expect_eq(ls_count(&e, "ck-a"), 1);
    cr_expect_eq(rm(&e, a1, &err), CORDON_E_CHECKPOINT_NOT_FOUND, "%s", err.message);
    cr_expect_eq(rm(&e, "ckpt-../../etc", &err), CORDON_E_INVALID, "%s", err.message);
    cr_expect_eq(rm(&e, "ck-a", &err), CORDON_E_INVALID, "an execution id is not a checkpoint id");
    /* Checkpoints outlive their execution, and are listed by its id still. */
    cr_expect_eq(cordon_terminate_json(e.ctx, "ck-b", &out, NULL), 0);
    free(out);
    cr_expect_eq(ls_count(&e, "ck-b"), 1);
    cr_expect_eq(ls_count(&e, NULL), 2);
    free(a1);
    free(a2);
    free(b1);
    env_close(&e);
}

/* A restore reading a checkpoint holds it: rm is busy and the checkpoint stays. */
Test(checkpoint_store, rm_refuses_a_checkpoint_a_restore_reads)
{
    struct cordon_error err;
    struct env e;
    cJSON *manifest = NULL;
    char *ckpt, *store;
    int fd = -1;

    env_open(&e);
    provision(&e, "trusted-local", "ck-r", 60000);
    ckpt = checkpoint(&e, "ck-r");
    store = cordon__checkpoint_store(e.ctx);
    cr_assert_eq(cordon__checkpoint_open(store, ckpt, &manifest, &fd, &err), 0, "%s", err.message);
    cr_expect_eq(rm(&e, ckpt, &err), CORDON_E_BUSY, "%s", err.message);
    cr_expect(strstr(err.message, "in use by a restore") != NULL, "%s", err.message);
    cr_expect_eq(ls_count(&e, "ck-r"), 1, "a busy checkpoint was removed");
    close(fd);
    cr_expect_eq(rm(&e, ckpt, &err), 0, "%s", err.message);
    cr_expect_eq(ls_count(&e, "ck-r"), 0);
    cJSON_Delete(manifest);
    free(store);
    free(ckpt);
    env_close(&e);
}

/* ---- the command line ------------------------------------------------------- */

/* cordon --state-dir S ARGS... ; its stdout then stderr into out; its exit status. */
static int cli(const struct env *e, const char *const *args, char *out, size_t size)
{
    const char *argv[16], *envp[3];
    char path_env[1200];
    struct cordon_runner_opts opts;
    struct cordon_exec_outcome o = { 0 };
    size_t n = 0;
    int code;

    argv[n++] = getenv("CORDON_BIN") ?: "./cordon";
    argv[n++] = "--state-dir";
    argv[n++] = e->state;
    for (size_t i = 0; args[i] != NULL && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    snprintf(path_env, sizeof(path_env), "CORDON_PROVIDER_PATH=%s", getenv("CORDON_TEST_PROVIDER_DIR") ?: "");
    envp[0] = path_env;
    envp[1] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
    envp[2] = NULL;
    cordon_runner_opts_init(&opts);
    opts.argv = argv;
    opts.envp = envp;
    opts.retention_bytes = 64u << 10;
    opts.timeout_ms = 60000;
    cr_assert_eq(cordon_runner_run(&opts, &o, NULL), 0, "%s did not run", argv[0]);
    snprintf(out, size, "%.*s%.*s", (int)o.out.len, o.out.data ?: "", (int)o.err.len, o.err.data ?: "");
    code = o.status == CORDON_RUN_EXITED ? o.exit_code : -1;
    cordon_exec_outcome_clear(&o);
    return code;
}

/* "ls" and "rm" are valid execution ids: as the first operand they are the
 * store's verbs, after "--" an execution's name (the old form). */
Test(checkpoint_store, cli_sub_verbs_and_the_old_form)
{
    static const char *const ls[] = { "checkpoint", "ls", "--json", NULL };
    static const char *const ls_late[] = { "checkpoint", "--json", "ls", NULL };
    static const char *const old_form[] = { "checkpoint", "--json", "--", "ls", NULL };
    static const char *const rm_none[] = { "checkpoint", "rm", "--json", NULL };
    static const char *const rm_bad[] = { "checkpoint", "rm", "ckpt-0123456789abcdef01234567", "--json", NULL };
    char out[4096];
    struct env e;

    env_open(&e);
    cr_expect_eq(cli(&e, ls, out, sizeof(out)), 0, "%s", out);
    cr_expect(strstr(out, "{\"checkpoints\":[]}") != NULL, "%s", out);
    cr_expect_eq(cli(&e, ls_late, out, sizeof(out)), 0, "%s", out);
    cr_expect(strstr(out, "{\"checkpoints\":[]}") != NULL, "%s", out);
    cr_expect_eq(cli(&e, old_form, out, sizeof(out)), 125, "%s", out);
    cr_expect(strstr(out, "execution ls: no such execution") != NULL, "%s", out);
    cr_expect_eq(cli(&e, rm_none, out, sizeof(out)), 2, "%s", out);
    cr_expect(strstr(out, "a checkpoint id is required") != NULL, "%s", out);
    cr_expect_eq(cli(&e, rm_bad, out, sizeof(out)), 125, "%s", out);
    cr_expect(strstr(out, "checkpoint_not_found") != NULL, "%s", out);
    env_close(&e);
}

Test(extend, cli_refusals)
{
    static const char *const no_runtime[] = { "extend", "some-id", "--json", NULL };
    static const char *const bad_dur[] = { "extend", "some-id", "--runtime", "soon", "--json", NULL };
    static const char *const no_id[] = { "extend", "--runtime", "30s", NULL };
    static const char *const unknown[] = { "extend", "some-id", "--runtime", "30s", "--json", NULL };
    char out[4096];
    struct env e;

    env_open(&e);
    cr_expect_eq(cli(&e, no_runtime, out, sizeof(out)), 2, "%s", out);
    cr_expect(strstr(out, "--runtime DUR is required") != NULL, "%s", out);
    cr_expect_eq(cli(&e, bad_dur, out, sizeof(out)), 125, "%s", out);
    cr_expect(strstr(out, "--runtime") != NULL, "%s", out);
    cr_expect_eq(cli(&e, no_id, out, sizeof(out)), 2, "%s", out);
    cr_expect_eq(cli(&e, unknown, out, sizeof(out)), 125, "%s", out);
    cr_expect(strstr(out, "\"code\":\"not_found\"") != NULL, "%s", out);
    env_close(&e);
}
