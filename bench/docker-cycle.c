/*
 * docker-cycle: drives docker.so through libcordon-sdk for bench/run-docker.sh.
 *
 *   docker-cycle --provider SO --observer PATH --image REF MODE [ARGS]
 *     cycle [N]            N times: provision, exec `true`, terminate
 *     provision FILE       provision one execution, its state into FILE
 *     exec FILE [N]        N times exec `true` in the execution of FILE
 *     terminate FILE       terminate it and remove FILE
 *     concurrent N SOURCE  N code runs at once, each: provision (layout code),
 *                          land SOURCE as source/main.py, run python3 on it,
 *                          terminate; prints throughput and p50/p95 latency
 *
 * Nothing of the host (core) is used: this measures the provider and the
 * sdk's exec driver, which is what a host adds on top of the daemon.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cordon/provider.h>
#include "core/abi.h"
#include "core/drive.h"
#include <cordon/sdk/host.h>
#include <cordon/sdk/tar.h>

#define STATE_MAX (1u << 20)
#define SOURCE_MAX (1u << 20)
#define CONCURRENT_MAX 256

static struct cordon_provider_v1 vt;
static struct cordon_host_v1 host;
static struct cordon_resource *res;
static const char *image;

static int fail(const char *what, const struct cordon_error *err)
{
    fprintf(stderr, "docker-cycle: %s: %s\n", what, err->message);
    return 1;
}

/* A whole small file (the bench's own state and source files); malloc'd. */
static char *slurp(const char *path, size_t max, size_t *ret_len)
{
    FILE *f = fopen(path, "re");
    char *buf = malloc(max + 1);
    size_t n = 0;

    if (f != NULL && buf != NULL) {
        n = fread(buf, 1, max, f);
        buf[n] = '\0';
    }
    if (f == NULL || buf == NULL || ferror(f) || !feof(f)) {
        fprintf(stderr, "docker-cycle: %s: unreadable or over %zu bytes\n", path, max);
        free(buf);
        buf = NULL;
    }
    if (f != NULL)
        fclose(f);
    *ret_len = n;
    return buf;
}

static char *spec_for(const char *layout)
{
    static unsigned counter;
    char *text = NULL;

    /* Ids unique per process and call; the bench never reuses one. */
    if (asprintf(&text,
                 "{\"execution_id\": \"bench-%d-%u-%llu\", \"image\": \"%s\", \"layout\": \"%s\","
                 " \"resources\": {\"cpus\": 1, \"memory_bytes\": 268435456, \"disk_bytes\": "
                 "67108864, \"pids\": 128, \"runtime_ms\": 600000, \"max_output_bytes\": 1048576},"
                 " \"network\": {\"mode\": \"none\"}, \"environment\": {}}",
                 (int)getpid(), __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED),
                 (unsigned long long)cordon_now_monotonic_ms(), image, layout) < 0)
        return NULL;
    return text;
}

static int exec_argv(const char *state, const char *argv_json, struct cordon_exec_outcome *o,
                     struct cordon_error *err)
{
    struct cordon_drive_opts d;
    char request[1024];

    snprintf(request, sizeof(request),
             "{\"argv\": %s, \"cwd\": \"\", \"env\": {\"PATH\": "
             "\"/usr/local/bin:/usr/bin:/bin\"}, \"timeout_ms\": 60000}", argv_json);
    cordon__drive_opts_init(&d);
    d.host = &host;
    d.provider = &vt;
    d.resource = res;
    d.state_json = state;
    d.request_json = request;
    d.timeout_ms = 55000;
    d.retention_bytes = 64 * 1024;
    d.output_budget = 1u << 20;
    return cordon__drive_exec(&d, o, err);
}

/* exec `true`; 0 when it ran and exited 0. */
static int exec_true(const char *state, struct cordon_error *err)
{
    struct cordon_exec_outcome o;
    int r = exec_argv(state, "[\"true\"]", &o, err);

    if (r == 0 && (o.status != CORDON_RUN_EXITED || o.exit_code != 0))
        r = cordon_error_set(err, CORDON_E_PROVIDER, 0, "true ended with %s %d",
                             cordon_run_status_name(o.status), o.exit_code);
    cordon_exec_outcome_clear(&o);
    return r;
}

static int cycle(int n)
{
    struct cordon_error err;

    cordon_error_init(&err);
    for (int i = 0; i < n; i++) {
        char *spec = spec_for("host"), *state = NULL;
        int r = spec != NULL ? vt.provision(res, spec, &state, &err) : CORDON_E_NOMEM;

        free(spec);
        if (r == 0)
            r = exec_true(state, &err);
        if (state != NULL && vt.terminate(res, state, r == 0 ? &err : NULL) < 0 && r == 0)
            r = -1;
        free(state);
        if (r != 0)
            return fail("cycle", &err);
    }
    return 0;
}

static int file_op(const char *mode, const char *path, int n)
{
    struct cordon_error err;
    char *state = NULL;
    size_t len = 0;
    int r = 0;

    cordon_error_init(&err);
    if (strcmp(mode, "provision") == 0) {
        char *spec = spec_for("host");

        r = spec != NULL ? vt.provision(res, spec, &state, &err) : CORDON_E_NOMEM;
        free(spec);
        if (r == 0) {
            FILE *f = fopen(path, "we");
            bool written = f != NULL && fputs(state, f) >= 0;

            if (f != NULL && fclose(f) != 0)
                written = false;
            /* No file, no way to terminate it later: do it now. */
            if (!written) {
                r = cordon_error_set(&err, CORDON_E_IO, errno, "%s: %s", path, strerror(errno));
                vt.terminate(res, state, NULL);
            }
        }
        free(state);
        return r == 0 ? 0 : fail("provision", &err);
    }
    state = slurp(path, STATE_MAX, &len);
    if (state == NULL)
        return 1;
    if (strcmp(mode, "exec") == 0) {
        for (int i = 0; i < n && r == 0; i++)
            r = exec_true(state, &err);
    } else {
        r = vt.terminate(res, state, &err);
        if (r == 0)
            unlink(path);
    }
    free(state);
    return r == 0 ? 0 : fail(mode, &err);
}

/* ---- concurrent code runs ------------------------------------------------ */

struct code_run {
    const char *source;
    size_t source_len;
    uint64_t ms;
    int rc;
    struct cordon_error err;
};

static void *code_run_main(void *arg)
{
    struct code_run *cr = arg;
    struct cordon_tar_writer *w = NULL;
    struct cordon_exec_outcome o = { 0 };
    uint64_t start = cordon_now_monotonic_ms();
    char *spec = spec_for("code"), *state = NULL;
    int fd = memfd_create("source.tar", MFD_CLOEXEC), r;

    cordon_error_init(&cr->err);
    r = spec != NULL && fd >= 0 ? vt.provision(res, spec, &state, &cr->err) : CORDON_E_NOMEM;
    /* Land the source as the host would: a tar into source/. */
    if (r == 0)
        r = cordon_tar_writer_open(fd, &w, &cr->err);
    if (r == 0)
        r = cordon_tar_writer_add_file(w, "main.py", cr->source, cr->source_len, 0644, &cr->err);
    if (r == 0) {
        r = cordon_tar_writer_close(w, &cr->err);
        w = NULL;
    }
    if (r == 0 && lseek(fd, 0, SEEK_SET) != 0)
        r = cordon_error_set(&cr->err, CORDON_E_IO, errno, "rewind");
    if (r == 0)
        r = vt.import_tar(res, state, "source", fd, &cr->err);
    if (r == 0)
        r = exec_argv(state, "[\"python3\", \"source/main.py\"]", &o, &cr->err);
    if (r == 0 && (o.status != CORDON_RUN_EXITED || o.exit_code != 0))
        r = cordon_error_set(&cr->err, CORDON_E_PROVIDER, 0, "python3 ended with %s %d",
                             cordon_run_status_name(o.status), o.exit_code);
    if (state != NULL && vt.terminate(res, state, r == 0 ? &cr->err : NULL) < 0 && r == 0)
        r = -1;
    cordon_tar_writer_free(w);
    cordon_exec_outcome_clear(&o);
    if (fd >= 0)
        close(fd);
    free(state);
    free(spec);
    cr->ms = cordon_now_monotonic_ms() - start;
    cr->rc = r;
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

static int concurrent(int n, const char *source_path)
{
    struct code_run runs[CONCURRENT_MAX];
    pthread_t threads[CONCURRENT_MAX];
    uint64_t ms[CONCURRENT_MAX], start, wall;
    struct cordon_error err;
    char *source = NULL;
    size_t len = 0;
    int failed = 0;

    cordon_error_init(&err);
    if (n < 1 || n > CONCURRENT_MAX) {
        fprintf(stderr, "docker-cycle: concurrent: N must be 1..%d\n", CONCURRENT_MAX);
        return 2;
    }
    source = slurp(source_path, SOURCE_MAX, &len);
    if (source == NULL)
        return 1;
    start = cordon_now_monotonic_ms();
    for (int i = 0; i < n; i++) {
        runs[i] = (struct code_run){ .source = source, .source_len = len };
        if (pthread_create(&threads[i], NULL, code_run_main, &runs[i]) != 0) {
            n = i;
            failed++;
            break;
        }
    }
    for (int i = 0; i < n; i++) {
        pthread_join(threads[i], NULL);
        ms[i] = runs[i].ms;
        if (runs[i].rc != 0) {
            fprintf(stderr, "docker-cycle: run %d: %s\n", i, runs[i].err.message);
            failed++;
        }
    }
    wall = cordon_now_monotonic_ms() - start;
    qsort(ms, (size_t)n, sizeof(ms[0]), cmp_u64);
    printf("{\"runs\": %d, \"failed\": %d, \"wall_ms\": %llu, \"throughput_per_s\": %.2f, "
           "\"p50_ms\": %llu, \"p95_ms\": %llu, \"max_ms\": %llu}\n",
           n, failed, (unsigned long long)wall, wall > 0 ? n * 1000.0 / (double)wall : 0.0,
           (unsigned long long)ms[(n - 1) / 2], (unsigned long long)ms[(n * 95 + 99) / 100 - 1],
           (unsigned long long)ms[n - 1]);
    free(source);
    return failed == 0 ? 0 : 1;
}

CORDON_EXTERN int main(int argc, char **argv)
{
    const char *provider = NULL, *observer = NULL;
    char config[512];
    struct cordon_error err;
    int i = 1, rc;

    for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
        if (strcmp(argv[i], "--provider") == 0)
            provider = argv[i + 1];
        else if (strcmp(argv[i], "--observer") == 0)
            observer = argv[i + 1];
        else if (strcmp(argv[i], "--image") == 0)
            image = argv[i + 1];
    }
    if (provider == NULL || image == NULL || i >= argc) {
        fprintf(stderr, "usage: docker-cycle --provider SO [--observer PATH] --image REF "
                        "cycle [N] | provision FILE | exec FILE [N] | terminate FILE | "
                        "concurrent N SOURCE\n");
        return 2;
    }
    cordon_error_init(&err);
    cordon__host_table_init(&host, observer != NULL ? observer : "/nonexistent", NULL,
                           "636f72646f6e2d62656e636800000000" /* "cordon-bench" */, NULL);
    if (cordon__provider_load(provider, &host, &vt, &err) < 0)
        return fail("load", &err);
    snprintf(config, sizeof(config), "{\"image\": \"%s\"}", image);
    if (vt.ensure(&host, config, &res, &err) < 0)
        return fail("ensure", &err);
    if (strcmp(argv[i], "cycle") == 0)
        rc = cycle(i + 1 < argc ? atoi(argv[i + 1]) : 1);
    else if (strcmp(argv[i], "concurrent") == 0 && i + 2 < argc)
        rc = concurrent(atoi(argv[i + 1]), argv[i + 2]);
    else if (i + 1 < argc && (strcmp(argv[i], "provision") == 0 || strcmp(argv[i], "exec") == 0 ||
                              strcmp(argv[i], "terminate") == 0))
        rc = file_op(argv[i], argv[i + 1], i + 2 < argc ? atoi(argv[i + 2]) : 1);
    else {
        fprintf(stderr, "docker-cycle: unknown mode %s\n", argv[i]);
        rc = 2;
    }
    vt.release(res, &err);
    return rc;
}
