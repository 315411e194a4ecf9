/* Unit tests: loading providers (core/loader.c, sdk/abi.c) against real
 * shared objects: trusted-local and the fixture providers of tests/fixtures. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/abi.h"
#include "core/loader.h"
#include "tests/unit/helpers.h"

struct refusal {
    const char *id;
    int code;
    const char *needle;
};

/* Criterion workers are separate processes: parameters are indices
 * into this table, never pointers. */
static struct refusal refuses_bad_providers_cases[] = {
    { "abi2", CORDON_E_ABI, "ABI major 2" },
    { "noentry", CORDON_E_ABI, "no entry point cordon_provider_init_v1" },
    { "wrongid", CORDON_E_ABI, "differs from its file name \"wrongid\"" },
    { "newminor", CORDON_E_ABI, "newer than this host's" },
    { "smallstruct", CORDON_E_ABI, "struct_size 8" },
    { "noexec", CORDON_E_ABI, "required operation exec is missing" },
    /* The dynamic loader's own reason, not libltdl's "file not found". */
    { "unresolved", CORDON_E_ABI, "undefined symbol: cordon_fixture_nowhere" },
    { "not-there", CORDON_E_NOT_FOUND, "no not-there.so" },
    { "Bad_Id", CORDON_E_INVALID, "not a provider id" },
};

ParameterizedTestParameters(loader, refuses_bad_providers)
{
    static size_t idx[sizeof(refuses_bad_providers_cases) / sizeof(refuses_bad_providers_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *at, loader, refuses_bad_providers)
{
    struct refusal *c = &refuses_bad_providers_cases[*at];
    char *state = NULL;
    struct cordon_ctx *ctx = test_ctx_open(NULL, &state);
    struct cordon__loaded *p = NULL;
    struct cordon_error err;

    cr_assert_not_null(ctx);
    cordon_error_init(&err);
    cr_expect_eq(cordon__loader_get(ctx, c->id, &p, &err), c->code, "%s: %s", c->id, err.message);
    cr_expect(strstr(err.message, c->needle) != NULL, "%s: \"%s\" lacks \"%s\"", c->id, err.message,
              c->needle);
    cr_expect(strchr(err.message, '\n') == NULL, "one line: %s", err.message);
    cr_expect_null(p);
    /* A provider that fails to load does not take the host down. */
    cordon_error_init(&err);
    cr_expect_eq(cordon__loader_get(ctx, "trusted-local", &p, &err), 0, "%s", err.message);
    cordon_ctx_free(ctx);
    test_rmtree(state);
    free(state);
}

Test(loader, loads_trusted_local_once)
{
    char *state = NULL;
    struct cordon_ctx *ctx = test_ctx_open(NULL, &state);
    struct cordon__loaded *a = NULL, *b = NULL;

    cr_assert_not_null(ctx);
    cr_assert_eq(cordon__loader_get(ctx, "trusted-local", &a, NULL), 0);
    cr_expect_str_eq(a->vt.provider_id, "trusted-local");
    cr_expect_eq(a->vt.abi_version >> 16, 1u);
    cr_expect_str_eq(a->vt.supported_kinds[0], "code_execution");
    cr_expect(a->path[0] == '/');
    cr_assert_eq(cordon__loader_get(ctx, "trusted-local", &b, NULL), 0);
    cr_expect_eq(a, b, "the same entry is returned, the provider is not loaded twice");
    cordon_ctx_free(ctx);
    test_rmtree(state);
    free(state);
}

Test(loader, lists_installed_sorted)
{
    char *state = NULL, **ids = NULL;
    struct cordon_ctx *ctx = test_ctx_open(NULL, &state);
    size_t n = 0;
    bool tl = false;

    cr_assert_not_null(ctx);
    cr_assert_eq(cordon__loader_list(ctx, &ids, &n, NULL), 0);
    cr_expect_gt(n, 2);
    for (size_t i = 0; i < n; i++) {
        tl = tl || strcmp(ids[i], "trusted-local") == 0;
        if (i > 0)
            cr_expect_lt(strcmp(ids[i - 1], ids[i]), 0, "sorted and unique: %s, %s", ids[i - 1], ids[i]);
    }
    cr_expect(tl);
    cordon__loader_list_free(ids, n);
    cordon_ctx_free(ctx);
    test_rmtree(state);
    free(state);
}

Test(loader, only_absolute_paths)
{
    struct cordon_host_v1 host;
    struct cordon_provider_v1 vt;
    struct cordon_error err;

    cordon__host_table_init(&host, "/nonexistent", NULL, "test", "/tmp");
    cordon_error_init(&err);
    cr_expect_eq(cordon__provider_load("trusted-local.so", &host, &vt, &err), CORDON_E_INVALID);
    cr_expect(strstr(err.message, "only absolute paths") != NULL, "%s", err.message);
}

Test(loader, relative_search_dirs_are_ignored)
{
    char *state = test_mkdtemp();
    struct cordon_ctx_opts opts = { sizeof(opts), state, NULL, NULL, false };
    struct cordon_ctx *ctx = NULL;
    struct cordon__loaded *p = NULL;
    char *found;

    /* "." would let a file in the caller's cwd become a provider. */
    setenv("CORDON_PROVIDER_PATH", ".:relative/dir", 1);
    cr_assert_eq(cordon_ctx_new(&opts, &ctx, NULL), 0);
    for (size_t i = 0; i < ctx->n_search_dirs; i++)
        cr_expect(ctx->search_dirs[i][0] == '/', "%s", ctx->search_dirs[i]);
    found = cordon__loader_find(ctx, "trusted-local");
    cr_expect_eq(cordon__loader_get(ctx, "trusted-local", &p, NULL) == 0, found != NULL);
    free(found);
    cordon_ctx_free(ctx);
    test_rmtree(state);
    free(state);
}

struct id_case {
    const char *id;
    bool valid;
};

/* Criterion workers are separate processes: parameters are indices
 * into this table, never pointers. */
static struct id_case provider_ids_cases[] = {
    { "docker", true }, { "trusted-local", true }, { "a", true }, { "0x", true },
    { "", false }, { "-a", false }, { "Docker", false }, { "a_b", false }, { "a.b", false },
    { "../x", false },
    { "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", true },
    { "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false },
};

ParameterizedTestParameters(loader, provider_ids)
{
    static size_t idx[sizeof(provider_ids_cases) / sizeof(provider_ids_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *at, loader, provider_ids)
{
    struct id_case *c = &provider_ids_cases[*at];
    cr_expect_eq(cordon__provider_id_valid(c->id), c->valid, "\"%s\"", c->id);
}

/* provider.h: the services table, and every string in it, is valid for
 * the life of the process; a provider may keep it past its context. */
Test(loader, host_table_outlives_its_context)
{
    char *a = test_mkdtemp(), *b = test_mkdtemp();
    struct cordon_ctx_opts oa = { sizeof(oa), a, NULL, NULL, false };
    struct cordon_ctx_opts ob = { sizeof(ob), b, NULL, NULL, false };
    struct cordon_ctx *c1 = NULL, *c2 = NULL, *c3 = NULL;
    const struct cordon_host_v1 *kept;
    char *state = NULL;

    cr_assert_eq(cordon_ctx_new(&oa, &c1, NULL), 0);
    kept = c1->host;
    state = strdup(kept->state_dir);
    cr_assert_not_null(state);
    cordon_ctx_free(c1);
    /* Another context over the same state directory shares the table. */
    cr_assert_eq(cordon_ctx_new(&oa, &c2, NULL), 0);
    cr_expect_eq(c2->host, kept, "a second context with the same paths got another table");
    cordon_ctx_free(c2);
    /* One over another directory gets its own; the kept one is unchanged. */
    cr_assert_eq(cordon_ctx_new(&ob, &c3, NULL), 0);
    cr_expect_neq(c3->host, kept);
    cr_expect_str_neq(c3->host->state_dir, kept->state_dir);
    cordon_ctx_free(c3);
    cr_expect_str_eq(kept->state_dir, state, "the kept table changed after its context went");
    cr_expect_eq(kept->struct_size, sizeof(struct cordon_host_v1));
    cr_expect_not_null(kept->alloc);
    free(state);
    test_rmtree(a);
    test_rmtree(b);
    free(a);
    free(b);
}

/* The instance id providers are promised is 32 lowercase hex digits: a
 * state directory holding anything else is refused, naming the file. */
Test(loader, instance_id_that_is_not_hex_is_refused)
{
    static const char *const bad[] = { "not-an-id-at-all-not-an-id-at-al",
                                       "0123456789ABCDEF0123456789ABCDEF",
                                       "0123456789abcdef0123456789abcdef0" };
    char *state = test_mkdtemp(), path[512];
    struct cordon_ctx_opts opts = { sizeof(opts), state, NULL, NULL, false };
    struct cordon_ctx *ctx = NULL;
    struct cordon_error err;
    FILE *f;

    snprintf(path, sizeof(path), "%s/instance-id", state);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        f = fopen(path, "w");
        cr_assert_not_null(f);
        fputs(bad[i], f);
        fclose(f);
        cordon_error_init(&err);
        cr_expect_eq(cordon_ctx_new(&opts, &ctx, &err), CORDON_E_INVALID, "%s accepted", bad[i]);
        cr_expect(strstr(err.message, "instance-id is not 32 lowercase hex digits") != NULL, "%s",
                  err.message);
    }
    /* With a newline after it, as an editor leaves it, an id is fine. */
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("0123456789abcdef0123456789abcdef\n", f);
    fclose(f);
    cr_assert_eq(cordon_ctx_new(&opts, &ctx, &err), 0, "%s", err.message);
    cr_expect_str_eq(ctx->host->host_instance_id, "0123456789abcdef0123456789abcdef");
    cordon_ctx_free(ctx);
    test_rmtree(state);
    free(state);
}

/* Concurrent first uses of a state directory agree on one instance id (a
 * rename into place once let the last writer win while the first went on
 * with an id that no file held, and its sandboxes were another host's). */
Test(loader, concurrent_first_uses_share_one_instance_id)
{
    enum { N = 8 };
    char *dir = test_mkdtemp(), state[4200], ids[N][33], file[64] = "";
    int fds[N][2];
    pid_t pids[N];

    cr_assert_not_null(dir);
    snprintf(state, sizeof(state), "%s/state", dir);
    cr_assert_eq(mkdir(state, 0700), 0);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(pipe(fds[i]), 0);
        pids[i] = fork();
        cr_assert_geq(pids[i], 0);
        if (pids[i] == 0) {
            struct cordon_ctx_opts opts = { sizeof(opts), state, NULL, NULL, true };
            struct cordon_ctx *ctx = NULL;
            char id[33] = "";

            if (cordon_ctx_new(&opts, &ctx, NULL) == 0)
                snprintf(id, sizeof(id), "%s", ctx->host->host_instance_id);
            _exit(write(fds[i][1], id, sizeof(id)) == (ssize_t)sizeof(id) ? 0 : 1);
        }
        close(fds[i][1]);
    }
    for (int i = 0; i < N; i++) {
        int status;

        cr_assert_eq(read(fds[i][0], ids[i], sizeof(ids[i])), (ssize_t)sizeof(ids[i]));
        close(fds[i][0]);
        cr_assert_eq(waitpid(pids[i], &status, 0), pids[i]);
        cr_assert_eq(strlen(ids[i]), 32);
    }
    {
        char path[4300];
        FILE *f;

        snprintf(path, sizeof(path), "%s/instance-id", state);
        f = fopen(path, "re");
        cr_assert_not_null(f);
        cr_assert_not_null(fgets(file, sizeof(file), f));
        fclose(f);
    }
    for (int i = 0; i < N; i++)
        cr_assert_str_eq(ids[i], file, "process %d went on with %s, the file holds %s", i, ids[i], file);
    test_rmtree(dir);
    free(dir);
}
