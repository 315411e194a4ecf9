/* Unit tests of files in an execution (core/files.c): the caller's
 * arguments refused before anything runs, the C API end to end through
 * trusted-local, and the host's reader against hostile export streams
 * (tests/fixtures/hostile-export.c). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cordon/cordon.h>

#include "tests/unit/helpers.h"

struct env {
    char *state;
    char *dir;
    struct cordon_ctx *ctx;
    char id[65];
};

static struct env *open_env;

static void env_close(struct env *e)
{
    struct cordon_error err;
    char *out = NULL, left[512];

    open_env = NULL;
    if (e->id[0] != '\0') {
        cordon_error_init(&err);
        cordon_terminate_json(e->ctx, e->id, &out, &err);
        free(out);
    }
    cordon_ctx_free(e->ctx);
    test_unmount_under(e->dir, left, sizeof(left));
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

TestSuite(files_args);
TestSuite(files, .fini = env_fini, .timeout = 60);

/* A context whose providers (trusted-local and hostile-export) keep their
 * executions under a root of the test's own, and, with provider, one
 * execution of it with a disk of disk_mib. */
static void env_open(struct env *e, const char *provider, unsigned disk_mib)
{
    char config[2048], req[1024], *out = NULL;
    struct cordon_error err;
    cJSON *doc;

    memset(e, 0, sizeof(*e));
    /* hostile-export.so forwards to the trusted-local.so beside it */
    snprintf(config, sizeof(config), "%s/trusted-local.so", getenv("CORDON_TEST_PROVIDER_DIR") ?: ".");
    cr_assert_eq(setenv("CORDON_FIXTURE_INNER", config, 0), 0);
    e->dir = test_mkdtemp();
    cr_assert_not_null(e->dir);
    chmod(e->dir, 0711);
    snprintf(config, sizeof(config),
             "{\"provider_configs\":{\"trusted-local\":{\"root\":\"%s/tl\"},"
             "\"hostile-export\":{\"root\":\"%s/tl\"}}}", e->dir, e->dir);
    e->ctx = test_ctx_open(config, &e->state);
    cr_assert_not_null(e->ctx);
    open_env = e;
    if (provider == NULL)
        return;
    snprintf(req, sizeof(req),
             "{\"provider\":\"%s\",\"allow_unsafe_local\":true,\"isolation\":\"none\","
             "\"resources\":{\"cpus\":1,\"memory_bytes\":268435456,\"disk_bytes\":%u,\"pids\":64,"
             "\"runtime_ms\":60000,\"max_output_bytes\":65536}}", provider, disk_mib << 20);
    cordon_error_init(&err);
    cr_assert_eq(cordon_provision_json(e->ctx, req, &out, &err), 0, "%s", err.message);
    doc = cJSON_Parse(out);
    snprintf(e->id, sizeof(e->id), "%s",
             cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "execution_id")));
    cJSON_Delete(doc);
    free(out);
}

/* ---- arguments ---------------------------------------------------------------- */

struct bad_path {
    const char *path;
    int code;
    const char *needle;
};

/* Refused by every verb before the execution is even looked up. */
static const struct bad_path bad_paths[] = {
    { "/etc/passwd", CORDON_E_UNSAFE, "must be under /workspace" },
    { "/", CORDON_E_UNSAFE, "must be under /workspace" },
    { "/workspacex/a", CORDON_E_UNSAFE, "must be under /workspace" },
    { "../x", CORDON_E_UNSAFE, ".." },
    { "a/../../b", CORDON_E_UNSAFE, ".." },
    { "/workspace/../etc/passwd", CORDON_E_UNSAFE, ".." },
    { "a/..", CORDON_E_UNSAFE, ".." },
    { "a\nb", CORDON_E_INVALID, "control" },
    { "a\x1b[2Jb", CORDON_E_INVALID, "control" },
};

ParameterizedTestParameters(files_args, every_verb_refuses_the_path)
{
    static size_t idx[sizeof(bad_paths) / sizeof(bad_paths[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, files_args, every_verb_refuses_the_path)
{
    const struct bad_path *b = &bad_paths[*i];
    struct env e;
    struct cordon_error err;
    char *out = NULL;
    int r[4];

    env_open(&e, NULL, 0);
    cordon_error_init(&err);
    r[0] = cordon_files_write_json(e.ctx, "no-such-execution", b->path, 0644, 0, &out, &err);
    cr_assert_not_null(strstr(err.message, b->needle), "write \"%s\": %s", b->path, err.message);
    cr_assert_not_null(strstr(err.message, "path"), "write: the message does not name the field: %s",
                       err.message);
    r[1] = cordon_files_read_json(e.ctx, "no-such-execution", b->path, 1, &out, &err);
    cr_assert_not_null(strstr(err.message, b->needle), "read \"%s\": %s", b->path, err.message);
    r[2] = cordon_files_list_json(e.ctx, "no-such-execution", b->path, &out, &err);
    cr_assert_not_null(strstr(err.message, b->needle), "list \"%s\": %s", b->path, err.message);
    r[3] = cordon_files_remove_json(e.ctx, "no-such-execution", b->path, &out, &err);
    cr_assert_not_null(strstr(err.message, b->needle), "remove \"%s\": %s", b->path, err.message);
    for (int k = 0; k < 4; k++)
        cr_assert_eq(r[k], b->code, "verb %d on \"%s\": %d, want %d", k, b->path, r[k], b->code);
    cr_assert_null(out);
    env_close(&e);
}

/* The workspace itself is a place to list, never a file to write, read or remove. */
Test(files_args, the_workspace_itself_is_listed_only)
{
    static const char *const roots[] = { "", ".", "/workspace", "/workspace/", "./" };
    struct cordon_error err;
    struct env e;
    char *out = NULL;

    env_open(&e, NULL, 0);
    for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
        cordon_error_init(&err);
        cr_assert_eq(cordon_files_write_json(e.ctx, "x", roots[i], 0644, 0, &out, &err), CORDON_E_INVALID);
        cr_assert_not_null(strstr(err.message, "workspace itself"), "%s", err.message);
        cr_assert_eq(cordon_files_read_json(e.ctx, "x", roots[i], 1, &out, &err), CORDON_E_INVALID);
        cr_assert_eq(cordon_files_remove_json(e.ctx, "x", roots[i], &out, &err), CORDON_E_INVALID);
        /* list gets past the path: the execution is what is missing */
        cr_assert_eq(cordon_files_list_json(e.ctx, "x", roots[i], &out, &err), CORDON_E_NOT_FOUND,
                     "list \"%s\": %s", roots[i], err.message);
    }
    cr_assert_eq(cordon_files_list_json(e.ctx, "x", NULL, &out, &err), CORDON_E_NOT_FOUND);
    cr_assert_null(out);
    env_close(&e);
}

Test(files_args, descriptors_and_mode_are_checked_first)
{
    struct cordon_error err;
    struct env e;
    char *out = NULL;

    env_open(&e, NULL, 0);
    cordon_error_init(&err);
    cr_assert_eq(cordon_files_write_json(e.ctx, "x", "a", 01000, 0, &out, &err), CORDON_E_INVALID);
    cr_assert_not_null(strstr(err.message, "mode"), "%s", err.message);
    cr_assert_eq(cordon_files_write_json(e.ctx, "x", "a", 0644, -1, &out, &err), CORDON_E_INVALID);
    cr_assert_not_null(strstr(err.message, "data_fd"), "%s", err.message);
    cr_assert_eq(cordon_files_read_json(e.ctx, "x", "a", -1, &out, &err), CORDON_E_INVALID);
    cr_assert_not_null(strstr(err.message, "out_fd"), "%s", err.message);
    cr_assert_eq(cordon_files_read_json(e.ctx, "no-such-execution", "a", 1, &out, &err), CORDON_E_NOT_FOUND);
    cr_assert_null(out);
    env_close(&e);
}

/* ---- through trusted-local ------------------------------------------------------- */

struct feeder {
    int fd;
    size_t bytes;
};

/* Write bytes of a known pattern into the pipe, then close it. */
static void *feed(void *arg)
{
    struct feeder *f = arg;
    char buf[4096];

    for (size_t done = 0; done < f->bytes;) {
        size_t n = f->bytes - done < sizeof(buf) ? f->bytes - done : sizeof(buf);
        for (size_t k = 0; k < n; k++)
            buf[k] = (char)((done + k) * 31 % 251);
        if (write(f->fd, buf, n) != (ssize_t)n)
            break;
        done += n;
    }
    close(f->fd);
    return NULL;
}

/* cordon_files_write_json from a pipe fed with bytes of the pattern. */
static int write_from_pipe(struct env *e, const char *path, size_t bytes, char **ret, struct cordon_error *err)
{
    struct feeder f;
    pthread_t t;
    int p[2], r;

    cr_assert_eq(pipe(p), 0);
    f.fd = p[1];
    f.bytes = bytes;
    cr_assert_eq(pthread_create(&t, NULL, feed, &f), 0);
    r = cordon_files_write_json(e->ctx, e->id, path, 0600, p[0], ret, err);
    close(p[0]);
    pthread_join(t, NULL);
    return r;
}

Test(files, a_pipe_goes_in_and_comes_back_byte_for_byte)
{
    const size_t bytes = 3u << 20;
    struct cordon_error err;
    struct env e;
    struct stat st;
    char *out = NULL, *map;
    cJSON *doc;
    int fd;

    env_open(&e, "trusted-local", 16);
    cordon_error_init(&err);
    cr_assert_eq(write_from_pipe(&e, "in/pipe.bin", bytes, &out, &err), 0, "%s", err.message);
    doc = cJSON_Parse(out);
    cr_assert_eq(cJSON_GetObjectItemCaseSensitive(doc, "size")->valuedouble, (double)bytes);
    cr_assert_eq(cJSON_GetObjectItemCaseSensitive(doc, "mode")->valuedouble, 0600);
    cJSON_Delete(doc);
    free(out);
    fd = memfd_create("files-read", MFD_CLOEXEC);
    cr_assert_geq(fd, 0);
    cr_assert_eq(cordon_files_read_json(e.ctx, e.id, "/workspace/in/pipe.bin", fd, &out, &err), 0, "%s",
                 err.message);
    free(out);
    cr_assert_eq(fstat(fd, &st), 0);
    cr_assert_eq((size_t)st.st_size, bytes);
    map = mmap(NULL, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    cr_assert_neq(map, MAP_FAILED);
    for (size_t k = 0; k < bytes; k++)
        cr_assert_eq(map[k], (char)(k * 31 % 251), "byte %zu differs", k);
    munmap(map, bytes);
    close(fd);
    cr_assert_eq(cordon_files_list_json(e.ctx, e.id, "in", &out, &err), 0, "%s", err.message);
    cr_assert_not_null(strstr(out, "\"name\":\"pipe.bin\",\"type\":\"file\",\"size\":3145728"), "%s", out);
    free(out);
    cr_assert_eq(cordon_files_remove_json(e.ctx, e.id, "in", &out, &err), 0, "%s", err.message);
    free(out);
    out = NULL;
    cr_assert_eq(cordon_files_read_json(e.ctx, e.id, "in/pipe.bin", 1, &out, &err), CORDON_E_NOT_FOUND);
    cr_assert_null(out);
    env_close(&e);
}

Test(files, a_pipe_beyond_the_disk_is_refused_and_leaves_nothing)
{
    struct cordon_error err;
    struct env e;
    char *out = NULL;

    env_open(&e, "trusted-local", 1);
    cordon_error_init(&err);
    cr_assert_eq(write_from_pipe(&e, "big.bin", (1u << 20) + 1, &out, &err), CORDON_E_LIMIT);
    cr_assert_not_null(strstr(err.message, "disk_bytes limit of 1048576"), "%s", err.message);
    cr_assert_null(out);
    cr_assert_eq(cordon_files_list_json(e.ctx, e.id, "", &out, &err), 0, "%s", err.message);
    cr_assert_null(strstr(out, "big.bin"), "a refused write left %s", out);
    free(out);
    env_close(&e);
}

/* ---- hostile streams ------------------------------------------------------------- */

struct hostile {
    const char *mode;
    int read_code;
    const char *read_needle;
    int list_code;            /* of the workspace, through export_tar */
    const char *list_needle;
};

static const struct hostile hostiles[] = {
    { "endless", CORDON_E_LIMIT, "disk_bytes limit", CORDON_E_LIMIT, "disk_bytes limit" },
    { "many", CORDON_E_PROVIDER, "more than the one entry", CORDON_E_LIMIT, "more than 10000 entries" },
    { "wrong-name", CORDON_E_PROVIDER, "not the path asked for", CORDON_E_UNSAFE, ".." },
    { "short", CORDON_E_PROVIDER, "the provider's stream", CORDON_E_PROVIDER, "the provider's stream" },
    { "symlink", CORDON_E_UNSAFE, "symlink", 0, "" },
    { "garbage", CORDON_E_PROVIDER, "the provider's stream", CORDON_E_PROVIDER, "the provider's stream" },
};

ParameterizedTestParameters(files, a_hostile_stream_is_refused_at_once)
{
    static size_t idx[sizeof(hostiles) / sizeof(hostiles[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, files, a_hostile_stream_is_refused_at_once)
{
    const struct hostile *h = &hostiles[*i];
    struct cordon_error err;
    struct env e;
    struct stat st;
    char *out = NULL;
    int fd, r;

    env_open(&e, "hostile-export", 4);
    cr_assert_eq(setenv("CORDON_FIXTURE_EXPORT", h->mode, 1), 0);
    fd = memfd_create("files-read", MFD_CLOEXEC);
    cr_assert_geq(fd, 0);
    cordon_error_init(&err);
    r = cordon_files_read_json(e.ctx, e.id, "f", fd, &out, &err);
    cr_assert_eq(r, h->read_code, "%s: read %d (%s), want %d", h->mode, r, err.message, h->read_code);
    cr_assert_not_null(strstr(err.message, h->read_needle), "%s: %s", h->mode, err.message);
    cr_assert_null(out);
    /* nothing of a refused entry was handed on, but for a cut-off file's start */
    cr_assert_eq(fstat(fd, &st), 0);
    cr_assert_leq(st.st_size, 10, "%s: %lld bytes handed on", h->mode, (long long)st.st_size);
    close(fd);
    cordon_error_init(&err);
    r = cordon_files_list_json(e.ctx, e.id, "", &out, &err);
    cr_assert_eq(r, h->list_code, "%s: list %d (%s), want %d", h->mode, r, err.message, h->list_code);
    if (r < 0)
        cr_assert_not_null(strstr(err.message, h->list_needle), "%s: %s", h->mode, err.message);
    free(out);
    cr_assert_eq(unsetenv("CORDON_FIXTURE_EXPORT"), 0);
    env_close(&e);
}
