/*
 * runc-cycle: drives runc.so through the sdk (cordon__provider_load and the
 * vtable, as the host does) for bench/run-runc.sh. Every mode prints one
 * JSON object with its timings on stdout.
 *
 *   runc-cycle OPTIONS cycle N        N x (provision + exec `true` + terminate),
 *                                     interleaved with N x `runc run` of the same
 *                                     bundle running `true`, and N x the fewest
 *                                     runtime commands of such a cycle by hand
 *                                     (run --detach, exec true, kill, delete): the
 *                                     ratios, same run, and where the cycle's time
 *                                     goes (provision, exec, terminate)
 *   runc-cycle OPTIONS unpack N       N cold first uses of the image (fresh state
 *                                     directories: unpack + provision) and the
 *                                     warm provision that follows each
 *   runc-cycle OPTIONS concurrent N   N code runs at once (provision, land a
 *                                     python file, run it, terminate)
 *
 * OPTIONS: --provider SO --init PATH --observer PATH --image REF --work DIR
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cordon/provider.h>
#include "core/abi.h"
#include "core/drive.h"
#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/runner.h>
#include <cordon/sdk/tar.h>

#define MAX_RUNS 1000
#define RUNTIME_ROOT "/run/cordon-runc"
#define CODE                                                                            \
    "primes = [n for n in range(2, 2000) if all(n % d for d in range(2, int(n ** 0.5) + 1))]\n" \
    "print(len(primes))\n"

struct opts {
    const char *provider, *init, *observer, *image, *work;
};

static struct opts o;
static unsigned counter;
static pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;

/* A loaded provider with its resource, over one state directory. */
struct bench {
    struct cordon_host_v1 host;
    struct cordon_provider_v1 vt;
    struct cordon_resource *res;
    char state_dir[4096];
};

/* Microseconds on the monotonic clock: the phases of a cycle are ~1 ms. */
static uint64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int fail(const char *what, const struct cordon_error *err)
{
    fprintf(stderr, "runc-cycle: %s: %s\n", what, err->message);
    return 1;
}

static int bench_open(struct bench *b, const char *state_dir)
{
    struct cordon_error err;
    char config[4200];

    snprintf(b->state_dir, sizeof(b->state_dir), "%s", state_dir);
    cordon__host_table_init(&b->host, o.observer, o.init, "72756e632d6379636c65000000000000" /* "runc-cycle" */,
                            b->state_dir);
    cordon_error_init(&err);
    if (cordon__provider_load(o.provider, &b->host, &b->vt, &err) != 0)
        return fail("load", &err);
    snprintf(config, sizeof(config), "{\"image\": \"%s\"}", o.image);
    if (b->vt.ensure(&b->host, config, &b->res, &err) != 0)
        return fail("ensure", &err);
    return 0;
}

static char *spec_for(const char *layout)
{
    char *s = NULL;
    unsigned n;

    pthread_mutex_lock(&counter_lock);
    n = counter++;
    pthread_mutex_unlock(&counter_lock);
    if (asprintf(&s, "{\"execution_id\": \"bench-%d-%u\", \"layout\": \"%s\", \"resources\": "
                     "{\"cpus\": 1, \"memory_bytes\": 268435456, \"disk_bytes\": 67108864, "
                     "\"pids\": 128, \"runtime_ms\": 120000, \"max_output_bytes\": 1048576}, "
                     "\"network\": {\"mode\": \"none\"}}",
                 (int)getpid(), n, layout) < 0)
        return NULL;
    return s;
}

static int exec_argv(struct bench *b, const char *state, const char *request,
                     struct cordon_exec_outcome *out, struct cordon_error *err)
{
    struct cordon_drive_opts d;

    cordon__drive_opts_init(&d);
    d.host = &b->host;
    d.provider = &b->vt;
    d.resource = b->res;
    d.state_json = state;
    d.request_json = request;
    d.timeout_ms = 60000;
    d.retention_bytes = 65536;
    d.output_budget = 1 << 20;
    return cordon__drive_exec(&d, out, err);
}

/* provision + exec argv + terminate; 0 when the program exited 0. The
 * microseconds of each phase go into ret_us[0..2] when it is not NULL. */
static int one_run(struct bench *b, const char *layout, const char *request, int land_fd,
                   uint64_t *ret_us, struct cordon_error *err)
{
    struct cordon_exec_outcome out = { 0 };
    char *spec = spec_for(layout), *state = NULL;
    uint64_t t[4];
    int r;

    t[0] = now_us();
    r = spec != NULL ? b->vt.provision(b->res, spec, &state, err) : CORDON_E_NOMEM;
    if (r == 0 && land_fd >= 0)
        r = b->vt.import_tar(b->res, state, "source", land_fd, err);
    t[1] = now_us();
    if (r == 0)
        r = exec_argv(b, state, request, &out, err);
    if (r == 0 && (out.status != CORDON_RUN_EXITED || out.exit_code != 0))
        r = cordon_error_set(err, CORDON_E_PROVIDER, 0, "the program ended with %s %d",
                             cordon_run_status_name(out.status), out.exit_code);
    t[2] = now_us();
    if (state != NULL) {
        struct cordon_error terr;

        cordon_error_init(&terr);
        if (b->vt.terminate(b->res, state, &terr) != 0 && r == 0)
            r = cordon_error_set(err, terr.code, 0, "terminate: %s", terr.message);
        b->host.free(state);
    }
    t[3] = now_us();
    for (int i = 0; ret_us != NULL && i < 3; i++)
        ret_us[i] = t[i + 1] - t[i];
    cordon_exec_outcome_clear(&out);
    free(spec);
    return r;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* p in [0, 100] of n sorted samples (nearest rank). */
static uint64_t pct(const uint64_t *v, size_t n, unsigned p)
{
    size_t rank = (n * p + 99) / 100;

    return v[rank > 0 ? rank - 1 : 0];
}

static double mean(const uint64_t *v, size_t n)
{
    double s = 0;

    for (size_t i = 0; i < n; i++)
        s += (double)v[i];
    return n > 0 ? s / (double)n : 0;
}

/* Microseconds as milliseconds. */
static double ms(double us)
{
    return us / 1000.0;
}

/* ---- cycle: ours against `runc run` of the same bundle ---------------------- */

/* Write text as dir/config.json (dir created). */
static int write_bundle(const char *dir, const char *text, struct cordon_error *err)
{
    int dfd, r;

    if (mkdir(dir, 0700) != 0 || (dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "%s: %s", dir, strerror(errno));
    r = cordon_fs_write_new(dfd, "config.json", text, strlen(text), 0600, err);
    close(dfd);
    return r;
}

/*
 * Two bundles from the config.json of a provisioned execution (same rootfs,
 * mounts, seccomp, cgroup limits): dir runs /usr/bin/true as its only
 * process, for `runc run`; steps_dir keeps cordon-init, for the runtime
 * commands of one cycle by hand. Each has a top-level cgroup path of its
 * own, which the runtime removes with the container (a nested one would
 * leave its parent behind).
 */
static int raw_bundle(struct bench *b, const char *dir, const char *steps_dir,
                      struct cordon_error *err)
{
    char *spec = spec_for("host"), *state = NULL, *text = NULL, *out = NULL, path[4200];
    char cg_steps[64], cg_raw[64];
    cJSON *st = NULL, *cfg = NULL, *args;
    size_t len;
    int root = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC), r;

    r = spec != NULL ? b->vt.provision(b->res, spec, &state, err) : CORDON_E_NOMEM;
    if (r != 0)
        goto out;
    st = cJSON_Parse(state);
    snprintf(path, sizeof(path), "%s/config.json",
             cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "bundle")));
    r = cordon_fs_read_file(root, path + 1, 1 << 20, &text, &len, err);
    if (r != 0)
        goto out;
    cfg = cJSON_Parse(text);
    snprintf(cg_steps, sizeof(cg_steps), "/cordon-bench-steps-%d", (int)getpid());
    snprintf(cg_raw, sizeof(cg_raw), "/cordon-bench-raw-%d", (int)getpid());
    cJSON_ReplaceItemInObject(cJSON_GetObjectItemCaseSensitive(cfg, "linux"), "cgroupsPath",
                              cJSON_CreateString(cg_steps));
    out = cJSON_PrintUnformatted(cfg);
    r = write_bundle(steps_dir, out, err);
    if (r != 0)
        goto out;
    free(out);
    args = cJSON_CreateArray();
    cJSON_AddItemToArray(args, cJSON_CreateString("/usr/bin/true"));
    cJSON_ReplaceItemInObject(cJSON_GetObjectItemCaseSensitive(cfg, "process"), "args", args);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItemCaseSensitive(cfg, "linux"), "cgroupsPath",
                              cJSON_CreateString(cg_raw));
    out = cJSON_PrintUnformatted(cfg);
    r = write_bundle(dir, out, err);
out:
    if (state != NULL) {
        b->vt.terminate(b->res, state, NULL);
        b->host.free(state);
    }
    if (root >= 0)
        close(root);
    cJSON_Delete(st);
    cJSON_Delete(cfg);
    free(out);
    free(text);
    free(spec);
    return r;
}

/* One runtime command, its stdio /dev/null; 0 when it exited 0. */
static int runtime(const char *const *argv, struct cordon_error *err)
{
    static const char *const envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
    struct cordon_runner_opts ro;
    struct cordon_exec_outcome out = { 0 };
    int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC), r;

    cordon_runner_opts_init(&ro);
    ro.argv = argv;
    ro.envp = envp;
    ro.stdout_fd = ro.stderr_fd = null_fd;
    ro.timeout_ms = 60000;
    r = cordon_runner_run(&ro, &out, err);
    if (r == 0 && (out.status != CORDON_RUN_EXITED || out.exit_code != 0))
        r = cordon_error_set(err, CORDON_E_PROVIDER, 0, "%s %s ended with %s %d", argv[0],
                             argv[3], cordon_run_status_name(out.status), out.exit_code);
    cordon_exec_outcome_clear(&out);
    close(null_fd);
    return r;
}

static int raw_run(const char *rt, const char *bundle, unsigned i, struct cordon_error *err)
{
    char id[64];
    const char *argv[] = { rt, "--root", RUNTIME_ROOT, "run", "--bundle", bundle, id, NULL };

    snprintf(id, sizeof(id), "bench-raw-%d-%u", (int)getpid(), i);
    return runtime(argv, err);
}

/* The fewest runtime commands that make such a cycle, by hand: run
 * --detach, exec, kill, delete (retried until the init is gone: `delete
 * --force` of a running container would poll in 100 ms steps). The steps
 * bundle runs cordon-init. */
static int raw_steps(const char *rt, const char *bundle, unsigned i, struct cordon_error *err)
{
    char id[64];
    const char *run[] = { rt, "--root", RUNTIME_ROOT, "run", "--detach", "--bundle", bundle, id,
                          NULL };
    const char *exec[] = { rt, "--root", RUNTIME_ROOT, "exec", "--user", "65532:65532", id,
                           "/usr/bin/true", NULL };
    const char *kill[] = { rt, "--root", RUNTIME_ROOT, "kill", id, "KILL", NULL };
    const char *del[] = { rt, "--root", RUNTIME_ROOT, "delete", id, NULL };
    const char *force[] = { rt, "--root", RUNTIME_ROOT, "delete", "--force", id, NULL };
    int r, tries = 0;

    snprintf(id, sizeof(id), "bench-steps-%d-%u", (int)getpid(), i);
    r = runtime(run, err);
    if (r == 0)
        r = runtime(exec, err);
    if (r == 0)
        r = runtime(kill, err);
    while (r == 0 && runtime(del, NULL) != 0 && ++tries < 100)
        ;
    if (r != 0 || tries >= 100)
        runtime(force, NULL);
    return r != 0 ? r : tries >= 100 ? CORDON_E_PROVIDER : 0;
}

static int cycle(unsigned n)
{
    static const char request[] = "{\"argv\": [\"true\"], \"cwd\": \"\"}";
    uint64_t *ours = calloc(n, sizeof(*ours)), *raw = calloc(n, sizeof(*raw));
    uint64_t *steps = calloc(n, sizeof(*steps)), phase[3], phases[3] = { 0, 0, 0 };
    struct cordon_error err;
    struct bench b;
    char state_dir[4096], bundle[4200], steps_bundle[4200];
    const char *rt = "/usr/bin/runc";
    int rc = 1;

    snprintf(state_dir, sizeof(state_dir), "%s/cycle-state", o.work);
    snprintf(bundle, sizeof(bundle), "%s/raw-bundle", o.work);
    snprintf(steps_bundle, sizeof(steps_bundle), "%s/steps-bundle", o.work);
    cordon_error_init(&err);
    if (ours == NULL || raw == NULL || steps == NULL || bench_open(&b, state_dir) != 0)
        goto out;
    if (raw_bundle(&b, bundle, steps_bundle, &err) != 0) {
        rc = fail("raw bundle", &err);
        goto out;
    }
    if (access(rt, X_OK) != 0)
        rt = "/usr/sbin/runc";
    /* One of each first, unmeasured: caches and the runtime binary warm up. */
    if (one_run(&b, "host", request, -1, NULL, &err) != 0 || raw_run(rt, bundle, n, &err) != 0 ||
        raw_steps(rt, steps_bundle, n, &err) != 0) {
        rc = fail("warm-up", &err);
        goto out;
    }
    for (unsigned i = 0; i < n; i++) {
        uint64_t t0 = now_us();

        if (one_run(&b, "host", request, -1, phase, &err) != 0) {
            rc = fail("cycle", &err);
            goto out;
        }
        ours[i] = now_us() - t0;
        for (int k = 0; k < 3; k++)
            phases[k] += phase[k];
        t0 = now_us();
        if (raw_run(rt, bundle, i, &err) != 0) {
            rc = fail("runc run", &err);
            goto out;
        }
        raw[i] = now_us() - t0;
        t0 = now_us();
        if (raw_steps(rt, steps_bundle, i, &err) != 0) {
            rc = fail("runc steps", &err);
            goto out;
        }
        steps[i] = now_us() - t0;
    }
    qsort(ours, n, sizeof(*ours), cmp_u64);
    qsort(raw, n, sizeof(*raw), cmp_u64);
    qsort(steps, n, sizeof(*steps), cmp_u64);
    printf("{\"mode\": \"cycle\", \"runs\": %u, \"cordon_mean_ms\": %.1f, \"cordon_p50_ms\": %.1f, "
           "\"cordon_p95_ms\": %.1f, \"runc_run_mean_ms\": %.1f, \"runc_run_p50_ms\": %.1f, "
           "\"runc_run_p95_ms\": %.1f, \"ratio_mean\": %.2f, \"ratio_p50\": %.2f, "
           "\"runc_steps_mean_ms\": %.1f, \"runc_steps_p50_ms\": %.1f, "
           "\"runc_steps_p95_ms\": %.1f, \"steps_ratio_mean\": %.2f, "
           "\"provision_mean_ms\": %.2f, \"exec_mean_ms\": %.2f, \"terminate_mean_ms\": %.2f}\n",
           n, ms(mean(ours, n)), ms((double)pct(ours, n, 50)), ms((double)pct(ours, n, 95)),
           ms(mean(raw, n)), ms((double)pct(raw, n, 50)), ms((double)pct(raw, n, 95)),
           mean(ours, n) / mean(raw, n), (double)pct(ours, n, 50) / (double)pct(raw, n, 50),
           ms(mean(steps, n)), ms((double)pct(steps, n, 50)), ms((double)pct(steps, n, 95)),
           mean(ours, n) / mean(steps, n), ms((double)phases[0] / n),
           ms((double)phases[1] / n), ms((double)phases[2] / n));
    rc = 0;
out:
    free(ours);
    free(raw);
    free(steps);
    return rc;
}

/* ---- unpack: cold first use ----------------------------------------------------- */

static int unpack(unsigned n)
{
    static const char request[] = "{\"argv\": [\"true\"], \"cwd\": \"\"}";
    uint64_t *cold = calloc(n, sizeof(*cold)), *warm = calloc(n, sizeof(*warm));
    struct cordon_error err;
    struct stat st;
    char dir[4200], tar[4200];
    int rc = 1;

    snprintf(tar, sizeof(tar), "%s", o.image);
    if (strstr(tar, "@sha256:") != NULL)
        *strstr(tar, "@sha256:") = '\0';
    if (cold == NULL || warm == NULL || stat(tar, &st) != 0)
        goto out;
    cordon_error_init(&err);
    for (unsigned i = 0; i < n; i++) {
        struct bench b;
        uint64_t t0;

        snprintf(dir, sizeof(dir), "%s/unpack-%u", o.work, i);
        if (mkdir(dir, 0700) != 0 || bench_open(&b, dir) != 0)
            goto out;
        t0 = cordon_now_monotonic_ms();
        if (one_run(&b, "host", request, -1, NULL, &err) != 0) {
            rc = fail("cold run", &err);
            goto out;
        }
        cold[i] = cordon_now_monotonic_ms() - t0;
        t0 = cordon_now_monotonic_ms();
        if (one_run(&b, "host", request, -1, NULL, &err) != 0) {
            rc = fail("warm run", &err);
            goto out;
        }
        warm[i] = cordon_now_monotonic_ms() - t0;
        b.vt.release(b.res, &err);
        cordon_fs_remove_tree_path(dir, NULL);
    }
    qsort(cold, n, sizeof(*cold), cmp_u64);
    qsort(warm, n, sizeof(*warm), cmp_u64);
    printf("{\"mode\": \"unpack\", \"runs\": %u, \"tar_bytes\": %lld, \"cold_mean_ms\": %.1f, "
           "\"warm_mean_ms\": %.1f, \"unpack_ms\": %.1f, \"unpack_mib_per_s\": %.1f}\n",
           n, (long long)st.st_size, mean(cold, n), mean(warm, n), mean(cold, n) - mean(warm, n),
           (double)st.st_size / 1048576.0 / ((mean(cold, n) - mean(warm, n)) / 1000.0));
    rc = 0;
out:
    free(cold);
    free(warm);
    return rc;
}

/* ---- concurrent code runs --------------------------------------------------------- */

struct job {
    struct bench *b;
    uint64_t ms;
    int rc;
    char msg[256];
};

static int code_tar(void)
{
    struct cordon_tar_writer *w = NULL;
    struct cordon_error err;
    int fd = memfd_create("code.tar", MFD_CLOEXEC);

    cordon_error_init(&err);
    if (fd < 0 || cordon_tar_writer_open(fd, &w, &err) != 0 ||
        cordon_tar_writer_add_file(w, "main.py", CODE, strlen(CODE), 0644, &err) != 0 ||
        cordon_tar_writer_close(w, &err) != 0 || lseek(fd, 0, SEEK_SET) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static void *code_run(void *arg)
{
    static const char request[] = "{\"argv\": [\"python3\", \"main.py\"], \"cwd\": \"source\"}";
    struct job *j = arg;
    struct cordon_error err;
    uint64_t t0 = cordon_now_monotonic_ms();
    int fd = code_tar();

    cordon_error_init(&err);
    j->rc = fd >= 0 ? one_run(j->b, "code", request, fd, NULL, &err) : -1;
    j->ms = cordon_now_monotonic_ms() - t0;
    snprintf(j->msg, sizeof(j->msg), "%s", err.message);
    if (fd >= 0)
        close(fd);
    return NULL;
}

static int concurrent(unsigned n)
{
    pthread_t *t = calloc(n, sizeof(*t));
    struct job *jobs = calloc(n, sizeof(*jobs));
    uint64_t *ms = calloc(n, sizeof(*ms)), t0, wall;
    struct bench b;
    char state_dir[4096];
    unsigned failed = 0;
    int rc = 1;

    snprintf(state_dir, sizeof(state_dir), "%s/cycle-state", o.work);
    if (t == NULL || jobs == NULL || ms == NULL || bench_open(&b, state_dir) != 0)
        goto out;
    t0 = cordon_now_monotonic_ms();
    for (unsigned i = 0; i < n; i++) {
        jobs[i].b = &b;
        pthread_create(&t[i], NULL, code_run, &jobs[i]);
    }
    for (unsigned i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        ms[i] = jobs[i].ms;
        if (jobs[i].rc != 0) {
            failed++;
            fprintf(stderr, "runc-cycle: run %u: %s\n", i, jobs[i].msg);
        }
    }
    wall = cordon_now_monotonic_ms() - t0;
    qsort(ms, n, sizeof(*ms), cmp_u64);
    printf("{\"mode\": \"concurrent\", \"runs\": %u, \"cpus\": %ld, \"wall_ms\": %llu, "
           "\"runs_per_s\": %.2f, \"p50_ms\": %llu, \"p95_ms\": %llu, \"failed\": %u}\n",
           n, sysconf(_SC_NPROCESSORS_ONLN), (unsigned long long)wall,
           (double)n * 1000.0 / (double)wall, (unsigned long long)pct(ms, n, 50),
           (unsigned long long)pct(ms, n, 95), failed);
    rc = failed == 0 ? 0 : 1;
out:
    free(t);
    free(jobs);
    free(ms);
    return rc;
}

static int usage(void)
{
    fprintf(stderr, "usage: runc-cycle --provider SO --init PATH --observer PATH --image REF "
                    "--work DIR (cycle|unpack|concurrent) N\n");
    return 2;
}

CORDON_EXTERN int main(int argc, char **argv);

CORDON_EXTERN int main(int argc, char **argv)
{
    const char **slots[] = { &o.provider, &o.init, &o.observer, &o.image, &o.work };
    static const char *const names[] = { "--provider", "--init", "--observer", "--image",
                                         "--work" };
    const char *mode = NULL;
    long n = 0;

    for (int i = 1; i < argc; i++) {
        bool taken = false;

        for (size_t k = 0; k < 5 && !taken; k++)
            if (strcmp(argv[i], names[k]) == 0 && i + 1 < argc) {
                *slots[k] = argv[++i];
                taken = true;
            }
        if (taken)
            continue;
        if (mode == NULL)
            mode = argv[i];
        else
            n = strtol(argv[i], NULL, 10);
    }
    for (size_t k = 0; k < 5; k++)
        if (*slots[k] == NULL)
            return usage();
    if (mode == NULL || n <= 0 || n > MAX_RUNS)
        return usage();
    if (strcmp(mode, "cycle") == 0)
        return cycle((unsigned)n);
    if (strcmp(mode, "unpack") == 0)
        return unpack((unsigned)n);
    if (strcmp(mode, "concurrent") == 0)
        return concurrent((unsigned)n);
    return usage();
}
