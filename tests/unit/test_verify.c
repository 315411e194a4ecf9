/*
 * Unit tests: the host verifies every isolation claim itself
 * (core/verify.c), through the provider's own provision and exec, with
 * real providers: trusted-local.so (honest, uncontained), pretender.so
 * (claims four true axes without observing, runs everything on the host)
 * and synthetic.so (reports its config's facts).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cordon/sdk/bounds.h>
#include <cordon/sdk/fs.h>
#include "core/loader.h"
#include "core/probe_cache.h"
#include "core/select.h"
#include "core/verify.h"
#include "tests/unit/helpers.h"

static const char *const axes[] = { "process_contained", "host_filesystem_restricted",
                                    "privilege_escalation_blocked", "syscalls_restricted" };

static void setup(void)
{
    const char *tl = getenv("CORDON_TL_PROVIDER");

    /* The fixtures forward to trusted-local.so; make check names it. */
    if (tl != NULL && getenv("CORDON_FIXTURE_INNER") == NULL)
        setenv("CORDON_FIXTURE_INNER", tl, 1);
    cr_assert_not_null(getenv("CORDON_TEST_PROVIDER_DIR"), "CORDON_TEST_PROVIDER_DIR is not set");
    cr_assert_not_null(getenv("CORDON_OBSERVER"), "CORDON_OBSERVER is not set");
}

TestSuite(verify, .init = setup, .timeout = 120);

struct probed {
    char *state;
    struct cordon_ctx *ctx;
    struct cordon__loaded *p;
    cJSON *facts;
    bool cached;
};

static void probe(struct probed *pr, const char *id, const char *config_json)
{
    struct cordon_error err;
    cJSON *config = cJSON_Parse(config_json != NULL ? config_json : "{}");

    memset(pr, 0, sizeof(*pr));
    cordon_error_init(&err);
    pr->ctx = test_ctx_open(NULL, &pr->state);
    cr_assert_not_null(pr->ctx);
    cr_assert_eq(cordon__loader_get(pr->ctx, id, &pr->p, &err), 0, "%s", err.message);
    cr_assert_eq(cordon__probe_full(pr->ctx, pr->p, config, &pr->facts, &pr->cached, &err), 0, "%s",
                 err.message);
    cJSON_Delete(config);
}

static void probed_clear(struct probed *pr)
{
    cJSON_Delete(pr->facts);
    cordon_ctx_free(pr->ctx);
    test_rmtree(pr->state);
    free(pr->state);
}

static const char *str(const cJSON *obj, const char *key)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsString(item) ? item->valuestring : NULL;
}

static bool axis(const cJSON *facts, const char *object, const char *name)
{
    return cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(facts, object), name));
}

/* check NULL: any check of the axis. */
static bool disproved_has(const cJSON *facts, const char *ax, const char *check)
{
    const cJSON *d;

    cJSON_ArrayForEach(d, cJSON_GetObjectItem(cJSON_GetObjectItem(facts, "verification"), "disproved"))
        if (strcmp(str(d, "axis"), ax) == 0 && (check == NULL || strcmp(str(d, "check"), check) == 0) &&
            str(d, "detail") != NULL)
            return true;
    return false;
}

static void expect_digest(const cJSON *facts)
{
    const char *digest = str(facts, "observation_digest");

    cr_assert_not_null(digest, "observation_digest is missing");
    cr_expect_eq(strlen(digest), 7 + 64, "%s", digest);
    cr_expect_eq(strncmp(digest, "sha256:", 7), 0, "%s", digest);
    cr_expect_str_eq(str(cJSON_GetObjectItem(facts, "verification"), "observation_digest"), digest);
}

Test(verify, a_provider_claiming_what_it_does_not_give_is_disproved)
{
    struct probed pr;

    probe(&pr, "pretender", NULL);
    cr_assert_str_eq(cordon__verification_status(pr.facts), "disproved");
    cr_expect_str_eq(str(pr.facts, "verified_by"), "cordon-host");
    expect_digest(pr.facts);
    for (size_t i = 0; i < 4; i++)
        cr_expect(axis(pr.facts, "claimed_isolation", axes[i]), "the claim %s stays visible", axes[i]);
    cr_expect_not(axis(pr.facts, "isolation", "process_contained"));
    cr_expect_not(axis(pr.facts, "isolation", "host_filesystem_restricted"));
    cr_expect(disproved_has(pr.facts, "process_contained", "pid_namespace"));
    cr_expect(disproved_has(pr.facts, "process_contained", "canary_pid_not_visible"));
    /* Which check: the inner trusted-local gives each execution its own
     * /tmp as root, where the host's canary file then is not. */
    cr_expect(disproved_has(pr.facts, "host_filesystem_restricted", NULL));
    cr_expect(disproved_has(pr.facts, "network", "network_none"));
    /* What the host saw is also the facts' network mode now. */
    cr_expect_str_eq(str(cJSON_GetObjectItem(pr.facts, "isolation"), "network_mode"), "host");
    probed_clear(&pr);
}

Test(verify, trusted_local_is_verified_and_means_what_it_meant)
{
    struct probed pr;

    probe(&pr, "trusted-local", NULL);
    cr_assert_str_eq(cordon__verification_status(pr.facts), "verified", "%s",
                     str(cJSON_GetObjectItem(pr.facts, "verification"), "reason"));
    cr_expect_str_eq(str(pr.facts, "safety_class"), "trusted_local");
    cr_expect_not(axis(pr.facts, "isolation", "process_contained"));
    cr_expect_not(axis(pr.facts, "isolation", "host_filesystem_restricted"));
    for (size_t i = 0; i < 4; i++)
        cr_expect_eq(axis(pr.facts, "isolation", axes[i]), axis(pr.facts, "claimed_isolation", axes[i]),
                     "%s: an honest claim is what the host saw", axes[i]);
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(pr.facts, "verification"),
                                                        "disproved")), 0);
    expect_digest(pr.facts);
    /* Uncontained: no limit is tried on the host, none disproved, and
     * each says how trusted-local would enforce it; cpus, which it does
     * not enforce, is not_claimed. */
    for (size_t i = 0; i < CORDON_LIMIT_KEYS_COUNT; i++) {
        const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(pr.facts, "limits_verified"), cordon_limit_keys[i]);
        const cJSON *e;
        bool claimed = false;

        cJSON_ArrayForEach(e, cJSON_GetObjectItem(pr.facts, "limits_enforced"))
            claimed = claimed || strcmp(cJSON_GetStringValue(e), cordon_limit_keys[i]) == 0;
        claimed = claimed && strcmp(str(v, "enforced_by") ?: "", "none") != 0;
        cr_expect(i != 0 || !claimed, "cpus is \"none\" in trusted-local's facts");
        cr_expect_str_eq(str(v, "status"), claimed ? "not_run" : "not_claimed", "%s", cordon_limit_keys[i]);
        cr_expect_str_eq(str(v, "detail"), "the sandbox is not contained", "%s", cordon_limit_keys[i]);
        cr_expect_not_null(str(v, "enforced_by"), "%s", cordon_limit_keys[i]);
    }
    probed_clear(&pr);
}

Test(verify, a_candidate_the_host_cannot_observe_is_unverified_and_not_cached)
{
    struct probed pr;
    struct cordon_error err;
    cJSON *config = cJSON_Parse("{\"image\": \"not-an-image\", \"facts\": {\"available\": true,"
                                " \"reason\": \"ready\", \"supported_kinds\": [\"code_execution\"],"
                                " \"safety_class\": \"isolated\", \"isolation\": {\"process_contained\": true,"
                                " \"host_filesystem_restricted\": true, \"privilege_escalation_blocked\": true,"
                                " \"syscalls_restricted\": true}, \"network\": \"none\","
                                " \"workspace_access_modes\": [\"snapshot\"], \"languages\": [],"
                                " \"toolchains\": {}, \"limits_enforced\": [], \"mechanism_facts\": {}}}");
    char *config_text = cJSON_PrintUnformatted(config);
    cJSON *again = NULL;
    bool cached = true;

    /* synthetic's resource is trusted-local's, which takes no image: the
     * host cannot bind it, so it cannot observe. */
    probe(&pr, "synthetic", config_text);
    free(config_text);
    cr_assert_str_eq(cordon__verification_status(pr.facts), "unverified");
    cr_expect(strstr(str(cJSON_GetObjectItem(pr.facts, "verification"), "reason"), "ensure failed") != NULL,
              "%s", str(cJSON_GetObjectItem(pr.facts, "verification"), "reason"));
    cr_expect(cJSON_IsNull(cJSON_GetObjectItem(pr.facts, "verified_by")));
    cr_expect(cJSON_IsNull(cJSON_GetObjectItem(pr.facts, "observation_digest")));
    for (size_t i = 0; i < 4; i++) {
        cr_expect(axis(pr.facts, "claimed_isolation", axes[i]));
        cr_expect_not(axis(pr.facts, "isolation", axes[i]), "%s: unobserved counts as false", axes[i]);
    }
    cordon_error_init(&err);
    pr.ctx->fresh = false;
    cr_assert_eq(cordon__probe_full(pr.ctx, pr.p, config, &again, &cached, &err), 0, "%s", err.message);
    cr_expect_not(cached, "unverified facts are asked again, never cached");
    cJSON_Delete(again);
    cJSON_Delete(config);
    probed_clear(&pr);
}

/* ---- the probe execution is an ordinary one ------------------------------------ */

static const struct cordon_provider_v1 *real;
static char landed[4][128], ran[4][128], ids[4][80];
static long long sizes[4];
static int n_landed, n_ran, n_tar, n_ids, n_tools;

static int rec_provision(struct cordon_resource *res, const char *spec, char **ret_state, struct cordon_error *err)
{
    cJSON *doc = cJSON_Parse(spec);

    if (n_ids < 4)
        snprintf(ids[n_ids++], sizeof(ids[0]), "%s", str(doc, "execution_id"));
    cJSON_Delete(doc);
    return real->provision(res, spec, ret_state, err);
}

static int rec_import_files(struct cordon_resource *res, const char *state, const char *dest,
                            const char *files_json, int data_fd, struct cordon_error *err)
{
    cJSON *doc = cJSON_Parse(files_json);
    const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "files"), 0);

    if (n_landed < 4 && cJSON_GetArraySize(cJSON_GetObjectItem(doc, "files")) == 1) {
        sizes[n_landed] = (long long)cJSON_GetObjectItem(first, "size")->valuedouble;
        snprintf(landed[n_landed++], sizeof(landed[0]), "%s", str(first, "path"));
    }
    cJSON_Delete(doc);
    return real->import_files(res, state, dest, files_json, data_fd, err);
}

static int rec_import_tar(struct cordon_resource *res, const char *state, const char *dest, int tar_fd,
                          struct cordon_error *err)
{
    n_tar++;
    return real->import_tar(res, state, dest, tar_fd, err);
}

static int rec_exec(struct cordon_resource *res, const char *state, const char *request,
                    const struct cordon_exec_io *io, char **ret_result, struct cordon_error *err)
{
    cJSON *doc = cJSON_Parse(request);
    const cJSON *argv0 = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "argv"), 0);

    /* The observer runs as ./NAME; the toolchains by their own names. */
    if (cJSON_IsString(argv0) && strncmp(argv0->valuestring, "./", 2) != 0)
        n_tools++;
    else if (n_ran < 4 && cJSON_IsString(argv0))
        snprintf(ran[n_ran++], sizeof(ran[0]), "%s", argv0->valuestring);
    cJSON_Delete(doc);
    return real->exec(res, state, request, io, ret_result, err);
}

Test(verify, the_observer_lands_under_a_random_name_and_runs_through_exec)
{
    struct probed pr;
    struct cordon__loaded rec;
    struct cordon_error err;
    cJSON *config = cJSON_CreateObject();

    probe(&pr, "trusted-local", NULL);
    real = &pr.p->vt;
    cr_assert_not_null(real->import_files, "trusted-local lands files without tar");
    rec = *pr.p;
    rec.vt.import_files = rec_import_files;
    rec.vt.import_tar = rec_import_tar;
    rec.vt.exec = rec_exec;
    rec.vt.provision = rec_provision;
    for (int i = 0; i < 2; i++) {
        cJSON *facts = cJSON_Parse("{\"available\": true, \"isolation\": {\"process_contained\": false,"
                                   " \"host_filesystem_restricted\": false, \"privilege_escalation_blocked\": false,"
                                   " \"syscalls_restricted\": false}, \"network\": \"host\"}");

        cordon_error_init(&err);
        cr_assert_eq(cordon__verify_facts(pr.ctx, &rec, config, facts, &err), 0, "%s", err.message);
        cr_expect_str_eq(cordon__verification_status(facts), "verified", "%s",
                         str(cJSON_GetObjectItem(facts, "verification"), "reason"));
        /* The toolchains are the host's finding, one entry per canonical id. */
        cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(facts, "toolchains")), 4);
        cr_expect_str_eq(str(facts, "observed_by"), "cordon-observe");
        cJSON_Delete(facts);
    }
    cr_assert_eq(n_landed, 2, "one ordinary file landed per verification (import_files)");
    cr_expect_eq(n_tar, 0, "no tar when the provider lands files");
    cr_assert_eq(n_ran, 2, "one exec of the observer per verification");
    /* The same probe execution asks the four toolchains: the host's
     * verification is the only observation of a probe. */
    cr_assert_eq(n_tools, 2 * 4, "each canonical toolchain asked once per verification");
    for (int i = 0; i < 2; i++) {
        char want[140];

        cr_expect_eq(strlen(landed[i]), 16, "%s", landed[i]);
        cr_expect_eq(strspn(landed[i], "0123456789abcdef"), 16, "%s is random hex", landed[i]);
        cr_expect_null(strstr(landed[i], "observe"), "%s names the observer", landed[i]);
        snprintf(want, sizeof(want), "./%s", landed[i]);
        cr_expect_str_eq(ran[i], want, "what runs is the file that landed");
    }
    cr_expect_str_neq(landed[0], landed[1], "a fresh name each time");
    /* Nothing marks the probe execution as one: an ordinary host-flow id,
     * and an observer whose bytes differ from the installed file's. */
    cr_assert_eq(n_ids, 2);
    for (int i = 0; i < 2; i++) {
        struct stat st;

        cr_expect_eq(strncmp(ids[i], "exec-", 5), 0, "%s", ids[i]);
        cr_expect_eq(strlen(ids[i]), 5 + 24, "%s", ids[i]);
        cr_assert_eq(stat(getenv("CORDON_OBSERVER"), &st), 0);
        cr_expect_eq(sizes[i], (long long)st.st_size + 32, "random bytes follow the observer");
    }
    cJSON_Delete(config);
    probed_clear(&pr);
}

/* ---- the cache ------------------------------------------------------------------- */

static void copy_file(const char *from, const char *to)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = fopen(from, "rb");

    cr_assert_not_null(f);
    buf = malloc(64u << 20);
    cr_assert_not_null(buf);
    len = fread(buf, 1, 64u << 20, f);
    fclose(f);
    cr_assert_eq(test_write_file(to, buf, len), 0);
    free(buf);
}

/* Change the file at path and put its mtime back: append a byte (append)
 * or overwrite its last one (same size). */
static void change_keeping_mtime(const char *path, bool append)
{
    struct timespec times[2];
    struct stat st;
    int fd;

    cr_assert_eq(stat(path, &st), 0);
    fd = open(path, append ? O_WRONLY | O_APPEND : O_WRONLY);
    cr_assert_geq(fd, 0);
    if (append)
        cr_assert_eq(write(fd, "", 1), 1);
    else
        cr_assert_eq(pwrite(fd, "\x7f", 1, st.st_size - 1), 1);
    close(fd);
    times[0] = st.st_atim;
    times[1] = st.st_mtim;
    cr_assert_eq(utimensat(AT_FDCWD, path, times, 0), 0);
}

/* Point the probed provider at a copy of its file in dir (path in copy),
 * and let the next probes use the cache. */
static void load_from_a_copy(struct probed *pr, const char *dir, char *copy, size_t size)
{
    snprintf(copy, size, "%s/trusted-local.so", dir);
    copy_file(pr->p->path, copy);
    free(pr->p->path);
    pr->p->path = strdup(copy);
    pr->ctx->fresh = false;
}

Test(verify, a_changed_provider_file_is_verified_again_even_with_the_same_mtime)
{
    struct probed pr;
    struct cordon_error err;
    char *dir = test_mkdtemp(), copy[512];
    cJSON *config = cJSON_CreateObject(), *facts = NULL;
    bool cached = false;

    probe(&pr, "trusted-local", NULL);
    cr_assert_not(pr.cached);
    load_from_a_copy(&pr, dir, copy, sizeof(copy));
    cordon_error_init(&err);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(cordon__probe_full(pr.ctx, pr.p, config, &facts, &cached, &err), 0, "%s", err.message);
        /* The same bytes elsewhere are the same provider, as verified
         * by the first probe (which stored its facts). */
        cr_expect(cached, "probe %d: not cached", i);
        cr_expect_str_eq(cordon__verification_status(facts), "verified", "the cache keeps verified facts");
        cr_expect_not_null(cJSON_GetObjectItem(facts, "claimed_isolation"));
        cJSON_Delete(facts);
    }
    /* Same path, size + 1, mtime put back: only the content tells. */
    change_keeping_mtime(copy, true);
    cr_assert_eq(cordon__probe_full(pr.ctx, pr.p, config, &facts, &cached, &err), 0, "%s", err.message);
    cr_expect_not(cached, "a changed .so is verified again");
    cJSON_Delete(facts);
    cJSON_Delete(config);
    test_rmtree(dir);
    free(dir);
    probed_clear(&pr);
}

/* Whether path's last change (ctime) is more than seconds old by the wall
 * clock, as core/probe_cache.c reckons it. */
static bool changed_longer_ago_than(const char *path, time_t seconds)
{
    struct stat st;

    return stat(path, &st) == 0 && st.st_ctim.tv_sec + seconds < time(NULL);
}

/* The provider's digest is remembered under its identity (core/probe_cache.c):
 * a memo is used while the file is unchanged, and a file changed in place,
 * same size and mtime put back, is hashed again (its ctime moved). */
Test(verify, the_digest_memo_holds_only_while_the_file_is_unchanged, .timeout = 60)
{
    struct probed pr;
    struct cordon_error err;
    char *dir = test_mkdtemp(), copy[512], sum[65], memo[900], line[400], *text = NULL;
    cJSON *config = cJSON_CreateObject(), *facts = NULL;
    bool cached = false;
    size_t len = 0;

    probe(&pr, "trusted-local", NULL);
    load_from_a_copy(&pr, dir, copy, sizeof(copy));
    cordon_error_init(&err);
    /* A memo is written only for a file whose last change is 2 s old. */
    cr_assert(TEST_WAIT_UNTIL(changed_longer_ago_than(copy, 2), 10000), "%s: its ctime never got 2 s old", copy);
    cr_assert_eq(cordon__probe_full(pr.ctx, pr.p, config, &facts, &cached, &err), 0, "%s", err.message);
    cr_expect(cached, "the same bytes at another path are the same provider");
    cJSON_Delete(facts);
    cordon_sha256_hex(copy, strlen(copy), sum);
    snprintf(memo, sizeof(memo), "%s/probe-cache/digest-%.32s", pr.ctx->state_dir, sum);
    {
        FILE *f = fopen(memo, "r");

        cr_assert_not_null(f, "no digest memo at %s", memo);
        text = calloc(1, 400);
        cr_assert_not_null(text);
        len = fread(text, 1, 399, f);
        fclose(f);
    }
    cr_assert_gt(len, 64u, "memo: %s", text);
    /* The memo is what the key is made of: a planted digest (same identity)
     * makes another key, so the facts are not found in the cache. */
    snprintf(line, sizeof(line), "%.*s%s", (int)(len - 64), text,
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    cr_assert_eq(test_write_file(memo, line, strlen(line)), 0);
    cr_assert_eq(cordon__probe_full(pr.ctx, pr.p, config, &facts, &cached, &err), 0, "%s", err.message);
    cr_expect_not(cached, "the memo was not used");
    cJSON_Delete(facts);
    /* One byte changed in place, size and mtime kept: the planted memo no
     * longer matches the file, which is hashed again; its bytes are new,
     * so it is verified again (a stale memo would have found the facts
     * the probe above stored under the planted digest). */
    change_keeping_mtime(copy, false);
    cr_assert_eq(cordon__probe_full(pr.ctx, pr.p, config, &facts, &cached, &err), 0, "%s", err.message);
    cr_expect_not(cached, "a file changed in place was taken by its memo");
    cJSON_Delete(facts);
    free(text);
    cJSON_Delete(config);
    test_rmtree(dir);
    free(dir);
    probed_clear(&pr);
}

/* ---- the command --------------------------------------------------------------------- */

/* Run the cordon command with args; stdout into out, the exit code back. */
static int cordon(const char *const *args, char *out, size_t size)
{
    char cmd[4096], *state = test_mkdtemp();
    size_t used = 0, n = 0;
    FILE *p;
    int status;

    cr_assert_not_null(state);
    used = (size_t)snprintf(cmd, sizeof(cmd), "CORDON_PROVIDER_PATH='%s' '%s' --state-dir '%s'",
                            getenv("CORDON_TEST_PROVIDER_DIR"), getenv("CORDON_BIN"), state);
    for (size_t i = 0; args[i] != NULL; i++)
        used += (size_t)snprintf(cmd + used, sizeof(cmd) - used, " '%s'", args[i]);
    p = popen(cmd, "r");
    cr_assert_not_null(p);
    while (n + 1 < size) {
        size_t got = fread(out + n, 1, size - 1 - n, p);

        if (got == 0)
            break;
        n += got;
    }
    out[n] = '\0';
    status = pclose(p);
    test_rmtree(state);
    free(state);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Test(verify, cli_run_refuses_the_pretender_with_claims_disproved)
{
    static char out[1 << 20];
    char *dir = test_mkdtemp(), bundle[512];
    const cJSON *probe0, *skip;
    cJSON *doc;

    cr_assert_not_null(getenv("CORDON_BIN"), "CORDON_BIN is not set");
    snprintf(bundle, sizeof(bundle), "%s/main.py", dir);
    cr_assert_eq(test_write_file(bundle, "print('ran')\n", 13), 0);
    {
        const char *args[] = { "run", "--isolation", "required", "--provider", "pretender", "--json", bundle,
                               NULL };

        cr_assert_eq(cordon(args, out, sizeof(out)), 125, "%.2000s", out);
    }
    doc = cJSON_Parse(out);
    cr_assert_not_null(doc, "%.500s", out);
    cr_expect_str_eq(str(doc, "status"), "blocked");
    probe0 = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "meta"), "probes"), 0);
    skip = cJSON_GetObjectItem(probe0, "skip");
    cr_assert_str_eq(str(skip, "reason"), "claims_disproved", "%.1000s", out);
    cr_expect_gt(cJSON_GetArraySize(cJSON_GetObjectItem(skip, "failed")), 0);
    cr_expect(strstr(str(skip, "detail"), "process_contained/pid_namespace") != NULL, "%s", str(skip, "detail"));
    cr_expect_null(strstr(out, "\"stdout\":\"ran"), "the pretender's exec never ran user code");
    cJSON_Delete(doc);
    test_rmtree(dir);
    free(dir);
}

Test(verify, cli_probe_shows_claim_beside_verdict)
{
    static char out[1 << 20];
    const cJSON *facts;
    cJSON *doc;

    {
        const char *args[] = { "probe", "pretender", "--json", NULL };

        cr_assert_eq(cordon(args, out, sizeof(out)), 0, "%.2000s", out);
    }
    doc = cJSON_Parse(out);
    cr_assert_not_null(doc, "%.500s", out);
    facts = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "probes"), 0);
    cr_expect(axis(facts, "claimed_isolation", "process_contained"));
    cr_expect_not(axis(facts, "isolation", "process_contained"));
    cr_expect_str_eq(str(cJSON_GetObjectItem(facts, "verification"), "status"), "disproved");
    cJSON_Delete(doc);
    {
        const char *args[] = { "probe", "pretender", NULL };

        cr_assert_eq(cordon(args, out, sizeof(out)), 0, "%.2000s", out);
    }
    cr_expect(strstr(out, "verification: disproved") != NULL, "%s", out);
    cr_expect(strstr(out, "claimed") != NULL, "%s", out);
    cr_expect(strstr(out, "disproved process_contained/pid_namespace") != NULL, "%s", out);
}

Test(verify, cli_run_with_trusted_local_and_isolation_none_still_works)
{
    static char out[1 << 20];
    char *dir = test_mkdtemp(), bundle[512];
    const cJSON *facts;
    cJSON *doc;

    snprintf(bundle, sizeof(bundle), "%s/main.py", dir);
    cr_assert_eq(test_write_file(bundle, "print('ran')\n", 13), 0);
    {
        const char *args[] = { "run", "--isolation", "none", "--allow-unsafe-local", "--provider",
                               "trusted-local", "--json", bundle, NULL };

        cr_assert_eq(cordon(args, out, sizeof(out)), 0, "%.2000s", out);
    }
    doc = cJSON_Parse(out);
    cr_assert_not_null(doc);
    cr_expect_str_eq(str(doc, "stdout"), "ran\n");
    facts = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "meta"), "provider_facts");
    cr_expect_str_eq(str(cJSON_GetObjectItem(facts, "verification"), "status"), "verified");
    cr_expect_str_eq(str(facts, "verified_by"), "cordon-host");
    cJSON_Delete(doc);
    test_rmtree(dir);
    free(dir);
}

Test(verify, cli_provision_refuses_the_pretender_at_any_isolation)
{
    static const char *const levels[] = { "required", "none" };
    static char out[1 << 16];

    for (size_t i = 0; i < 2; i++) {
        const char *args[] = { "provision", "--provider", "pretender", "--isolation", levels[i],
                               "--cpus", "1", "--memory", "256M", "--disk", "64M", "--pids", "64",
                               "--runtime", "60s", "--max-output", "1M", "--json", NULL };
        cJSON *doc;

        cr_assert_eq(cordon(args, out, sizeof(out)), 125, "%s: %.2000s", levels[i], out);
        doc = cJSON_Parse(out);
        cr_assert_not_null(doc, "%.500s", out);
        cr_expect(strstr(str(cJSON_GetObjectItem(doc, "error"), "message"), "claims_disproved") != NULL,
                  "%s: %s", levels[i], out);
        cJSON_Delete(doc);
    }
}

/* Facts judged by other rules than this host's (an older judge version,
 * left in the cache) are not used: the host judges them again. */
/* DOCKER_HOST stands in for docker.so's socket: facts verified while it
 * named one daemon are not taken from the cache when it names another. */
Test(verify, a_changed_docker_host_is_verified_again)
{
    struct probed pr;
    struct cordon_error err;
    cJSON *config = cJSON_CreateObject(), *facts = NULL;
    bool cached = false;

    unsetenv("DOCKER_HOST");
    probe(&pr, "trusted-local", NULL);
    cr_assert_not(pr.cached);
    pr.ctx->fresh = false;
    cordon_error_init(&err);
    cr_assert_eq(cordon__probe_full(pr.ctx, pr.p, config, &facts, &cached, &err), 0, "%s", err.message);
    cr_assert(cached, "the same environment's facts come from the cache");
    cJSON_Delete(facts);
    setenv("DOCKER_HOST", "unix:///run/another-daemon.sock", 1);
    cr_assert_eq(cordon__probe_full(pr.ctx, pr.p, config, &facts, &cached, &err), 0, "%s", err.message);
    cr_expect_not(cached, "facts verified with another DOCKER_HOST were reused");
    cJSON_Delete(facts);
    unsetenv("DOCKER_HOST");
    cJSON_Delete(config);
    probed_clear(&pr);
}

Test(verify, cached_facts_of_another_judge_version_are_judged_again)
{
    struct probed pr;
    struct cordon_error err;
    char dir[600], path[900], *text;
    cJSON *config = cJSON_CreateObject(), *facts = NULL, *doc;
    bool cached = false;
    struct dirent *e;
    DIR *d;
    FILE *f;
    long len;

    probe(&pr, "trusted-local", NULL);
    cr_assert_not(pr.cached);
    cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(pr.facts, "verification"),
                                                          "judge_version")),
                 CORDON_VERIFY_JUDGE_VERSION);
    pr.ctx->fresh = false;
    cordon_error_init(&err);
    cr_assert_eq(cordon__probe_full(pr.ctx, pr.p, config, &facts, &cached, &err), 0, "%s", err.message);
    cr_assert(cached, "the same judge's facts are used from the cache");
    cJSON_Delete(facts);
    /* The stored facts, with the judge version of older rules. */
    snprintf(dir, sizeof(dir), "%s/probe-cache", pr.ctx->state_dir);
    d = opendir(dir);
    cr_assert_not_null(d, "%s", dir);
    path[0] = '\0';
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, "trusted-local-", 14) == 0)
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    closedir(d);
    cr_assert_neq(path[0], '\0', "no cached facts in %s", dir);
    f = fopen(path, "r");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    rewind(f);
    text = calloc(1, (size_t)len + 1);
    cr_assert_eq(fread(text, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    doc = cJSON_Parse(text);
    free(text);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(doc, "verification"), "judge_version",
                              cJSON_CreateNumber(CORDON_VERIFY_JUDGE_VERSION - 1));
    text = cJSON_PrintUnformatted(doc);
    cr_assert_eq(test_write_file(path, text, strlen(text)), 0);
    free(text);
    cJSON_Delete(doc);
    cr_assert_eq(cordon__probe_full(pr.ctx, pr.p, config, &facts, &cached, &err), 0, "%s", err.message);
    cr_expect_not(cached, "facts of another judge were used from the cache");
    cJSON_Delete(facts);
    cJSON_Delete(config);
    probed_clear(&pr);
}

/* An axis the provider defers is what the host saw, never a disproval:
 * trusted-local's process is not contained (false, not disproved), and
 * as root its uid of its own blocks privilege escalation (true). */
Test(verify, a_deferred_axis_takes_what_the_host_saw)
{
    struct probed pr;
    struct cordon_error err;
    cJSON *config = cJSON_CreateObject();
    cJSON *facts = cJSON_Parse("{\"available\": true, \"isolation\": {\"process_contained\": false,"
                               " \"host_filesystem_restricted\": false, \"privilege_escalation_blocked\": false,"
                               " \"syscalls_restricted\": false,"
                               " \"deferred\": [\"process_contained\", \"privilege_escalation_blocked\"]},"
                               " \"network\": \"host\"}");

    probe(&pr, "trusted-local", NULL);
    cordon_error_init(&err);
    cr_assert_eq(cordon__verify_facts(pr.ctx, pr.p, config, facts, &err), 0, "%s", err.message);
    cr_expect_str_eq(cordon__verification_status(facts), "verified", "%s",
                     str(cJSON_GetObjectItem(facts, "verification"), "reason"));
    cr_expect_not(axis(facts, "isolation", axes[0]), "not contained, as seen");
    cr_expect_eq(axis(facts, "isolation", axes[2]), geteuid() == 0, "privilege escalation as seen");
    cr_expect_not(axis(facts, "isolation", axes[3]), "not deferred, not claimed: false");
    cr_expect_null(cJSON_GetObjectItem(cJSON_GetObjectItem(facts, "isolation"), "deferred"));
    cJSON_Delete(facts);
    cJSON_Delete(config);
    probed_clear(&pr);
}
