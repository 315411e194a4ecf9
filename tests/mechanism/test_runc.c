/*
 * Mechanism tests of the runc provider: real runc, real cgroups, a real
 * Debian rootfs. No mocks.
 *
 * Environment (paths relative to the build directory by default):
 *   CORDON_RUNC_IMAGE    the toolchain image, /abs/toolchain.tar@sha256:<hex>
 *                        (bash tests/images/build-images.sh prints it); every
 *                        test is skipped, saying so, when it is not set
 *   CORDON_RUNC_PROVIDER runc.so              (default .libs/runc.so)
 *   CORDON_OBSERVER      cordon-observe       (default ./cordon-observe)
 *   CORDON_INIT          cordon-init          (default ./cordon-init)
 *   CORDON_BIN           the cordon command   (default ./cordon)
 *   CORDON_EXAMPLES      examples/ of the source tree (default: next to this file)
 *
 * main() makes one state directory for the whole run (so the 1 GB rootfs
 * is unpacked once, and the CLI's probe cache is shared), hands it to
 * Criterion's workers through the environment, and after the run removes
 * it and checks that nothing of the run is left: no container under the
 * runtime's root, no cgroup, no mount. Each test terminates what it
 * provisioned in the suite's fini.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/filter.h>

#include <archive.h>
#include <archive_entry.h>
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>

#include <cordon/provider.h>
#include "core/abi.h"
#include "core/drive.h"
#include <cordon/sdk/bounds.h>
#include <cordon/sdk/facts.h>
#include "sdk/facts-validate.h"
#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/json.h>
#include "core/observe/observe.h"
#include <cordon/sdk/runner.h>
#include <cordon/sdk/uid.h>
#include <cordon/text.h>

#include "contract/fill.h"
#include "tests/common/hostile-agent.h"
#include "tests/common/frozen.h"
#include "tests/common/hostile-init.h"
#include "tests/common/proc.h"
#include "tests/common/sockets.h"
#include "tests/common/wait.h"

#define ENV_SHARED "CORDON_RUNC_TEST_SHARED"   /* main -> workers */
#define RUNTIME_ROOT "/run/cordon-runc"
#define SANDBOX_UID 65532
#define MIB (1024.0 * 1024.0)
#define CLI_TIMEOUT_MS 300000u
#define MAX_TRACKED 8

static const struct cordon_provider_v1 *prov;
static struct cordon_host_v1 host;
static struct cordon_resource *res;
static struct cordon_error err;
static char shared[PATH_MAX];        /* the run's state dir, made by main */
static char image[PATH_MAX + 80];
static char observer[PATH_MAX], init_bin[PATH_MAX], cordon_bin[PATH_MAX], provider_so[PATH_MAX];
static char *states[MAX_TRACKED];    /* terminated in fini */
static char *private_dir;            /* a test's own state dir, when it needs a cold cache */

/* ---- small host helpers ------------------------------------------------------ */

static const char *env_or(const char *name, const char *fallback)
{
    const char *v = getenv(name);

    return v != NULL && v[0] != '\0' ? v : fallback;
}

static void abs_path(const char *name, const char *fallback, char *out)
{
    const char *p = env_or(name, fallback);

    cr_assert_not_null(realpath(p, out), "%s: %s (set %s)", p, strerror(errno), name);
}

/* The id of an execution this run made, for main's leftover check. */
static void record_id(const char *id)
{
    char path[PATH_MAX + 16];
    int fd;

    snprintf(path, sizeof(path), "%s/ids", shared);
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    cr_assert_geq(fd, 0);
    cr_assert_eq(dprintf(fd, "%s\n", id) > 0, true);
    close(fd);
}

static void random_hex(char *buf, size_t bytes)
{
    unsigned char raw[16];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

    cr_assert(bytes <= sizeof(raw) && fd >= 0);
    cr_assert_eq(read(fd, raw, bytes), (ssize_t)bytes);
    close(fd);
    for (size_t i = 0; i < bytes; i++)
        snprintf(buf + 2 * i, 3, "%02x", raw[i]);
}

/* A small host file (kernel files included), NUL-terminated; NULL if unreadable. */
static char *read_text(const char *path)
{
    char *text = calloc(1, 65536);
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    cr_assert_not_null(text);
    n = fd >= 0 ? read(fd, text, 65535) : -1;
    if (fd >= 0)
        close(fd);
    if (n < 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* examples/ of the source tree: next to this file unless CORDON_EXAMPLES says. */
static void examples_dir(char *buf, size_t size)
{
    const char *tail = "tests/mechanism/test_runc.c", *file = __FILE__;
    size_t len = strlen(file), tlen = strlen(tail);

    if (getenv("CORDON_EXAMPLES") != NULL || len < tlen)
        snprintf(buf, size, "%s", env_or("CORDON_EXAMPLES", "examples"));
    else
        snprintf(buf, size, "%.*sexamples", (int)(len - tlen), file);
}

static bool exists(const char *path)
{
    struct stat st;

    return lstat(path, &st) == 0;
}

/* Wait up to ms for no process to carry needle; returns how many are left. */
static int processes_left(const char *needle, unsigned ms)
{
    int n = 0;

    for (unsigned waited = 0; waited <= ms; waited += 50) {
        n = test_count_processes(needle);
        if (n == 0)
            break;
        nanosleep(&(struct timespec){ 0, 50 * 1000 * 1000 }, NULL);
    }
    return n;
}

/* Run argv on the host with captured output; returns the exit code. */
static int host_run(const char *const *argv, const char *const *envp, char **ret_out)
{
    struct cordon_runner_opts opts;
    struct cordon_exec_outcome o = { 0 };
    struct cordon_error e;
    int code;

    cordon_runner_opts_init(&opts);
    opts.argv = argv;
    opts.envp = envp;
    opts.retention_bytes = 8u << 20;
    opts.timeout_ms = CLI_TIMEOUT_MS;
    cordon_error_init(&e);
    cr_assert_eq(cordon_runner_run(&opts, &o, &e), 0, "%s: %s", argv[0], e.message);
    code = o.status == CORDON_RUN_EXITED ? o.exit_code : -1;
    if (ret_out != NULL) {
        *ret_out = strndup(o.out.data != NULL ? o.out.data : "", o.out.len);
        cr_assert_not_null(*ret_out);
    }
    cordon_exec_outcome_clear(&o);
    return code;
}

/* Whether the runtime still knows the container id. */
static bool runtime_knows(const char *id)
{
    const char *argv[] = { "runc", "--root", RUNTIME_ROOT, "state", id, NULL };
    const char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };

    return host_run(argv, envp, NULL) == 0;
}

/* Cgroup directories of id left in any hierarchy. */
static int cgroups_left(const char *id)
{
    DIR *d = opendir("/sys/fs/cgroup");
    struct dirent *de;
    int n = 0;

    cr_assert_not_null(d);
    while ((de = readdir(d)) != NULL) {
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/cordon-%s", de->d_name, id);
        n += de->d_name[0] != '.' && exists(path);
    }
    closedir(d);
    return n;
}

/* ---- the suite ------------------------------------------------------------------ */

/* The freezer file a test froze and the pidfds of the processes it
 * stopped, thawed and continued by frozen_thaw (and by the suite's fini
 * through it): a failing test must never leave processes stopped. */
static char frozen_file[PATH_MAX];
static int stopped_fds[32];
static int n_stopped;

static void frozen_thaw(void)
{
    int fd;

    /* Through pidfds taken before the SIGSTOP: never another process. */
    for (int i = 0; i < n_stopped; i++) {
        syscall(SYS_pidfd_send_signal, stopped_fds[i], SIGCONT, NULL, 0);
        close(stopped_fds[i]);
    }
    n_stopped = 0;
    if (frozen_file[0] == '\0')
        return;
    fd = open(frozen_file, O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        (void)!write(fd, "THAWED", 6);
        close(fd);
    }
    frozen_file[0] = '\0';
}

static void teardown(void)
{
    struct cordon_error e;

    cordon_error_init(&e);
    frozen_thaw();
    for (int i = 0; i < MAX_TRACKED; i++) {
        if (states[i] != NULL && res != NULL)
            prov->terminate(res, states[i], &e);
        free(states[i]);
        states[i] = NULL;
    }
    if (res != NULL)
        prov->release(res, &e);
    res = NULL;
    if (private_dir != NULL)
        cordon_fs_remove_tree_path(private_dir, NULL);
    free(private_dir);
    private_dir = NULL;
}

static void setup(void)
{
    cordon_provider_init_v1_fn init;
    void *dl;

    cordon_error_init(&err);
    snprintf(image, sizeof(image), "%s", env_or("CORDON_RUNC_IMAGE", ""));
    snprintf(shared, sizeof(shared), "%s", env_or(ENV_SHARED, ""));
    if (image[0] == '\0' || geteuid() != 0)
        return; /* each test skips, saying why */
    cr_assert_neq(shared[0], '\0', "%s is not set: run the tests through this program's main",
                  ENV_SHARED);
    abs_path("CORDON_RUNC_PROVIDER", ".libs/runc.so", provider_so);
    abs_path("CORDON_OBSERVER", "./cordon-observe", observer);
    abs_path("CORDON_INIT", "./cordon-init", init_bin);
    abs_path("CORDON_BIN", "./cordon", cordon_bin);
    dl = dlopen(provider_so, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(dl, "dlopen %s: %s", provider_so, dlerror());
    init = (cordon_provider_init_v1_fn)dlsym(dl, CORDON_PROVIDER_INIT_SYMBOL);
    cr_assert_not_null(init);
    {
        static char instance[40];

        /* Of this process: the uid pool is the machine's (another run of the
         * suite beside this one must not share owners). */
        snprintf(instance, sizeof(instance), "cordon-runc-tests-%ld", (long)getpid());
        cordon__host_table_init(&host, observer, init_bin, instance, shared);
    }
    cr_assert_eq(init(&host, 0, &prov, &err), 0, "init: %s", err.message);
}

TestSuite(runc, .init = setup, .fini = teardown, .timeout = 600);

static void require_setup(void)
{
    if (geteuid() != 0)
        cr_skip_test("runc needs root");
    if (image[0] == '\0')
        cr_skip_test("CORDON_RUNC_IMAGE is not set (bash tests/images/build-images.sh prints the "
                     "toolchain image as PATH and SHA256: use PATH@sha256:SHA256)");
}

static void ensure_with(const char *config)
{
    require_setup();
    cr_assert_eq(prov->ensure(&host, config, &res, &err), 0, "ensure: %s", err.message);
}

static void ensure(void)
{
    char config[PATH_MAX + 128];

    snprintf(config, sizeof(config), "{\"image\": \"%s\"}", image);
    ensure_with(config);
}

/* Without the resident agent: exec enters the container itself. */
static void ensure_setns(void)
{
    char config[PATH_MAX + 128];

    snprintf(config, sizeof(config), "{\"image\": \"%s\", \"exec_agent\": false}", image);
    ensure_with(config);
}

struct limits {
    double memory_mib, disk_mib;
    int pids;
    unsigned runtime_ms;     /* 0: ten minutes */
    double cpus;             /* 0: one */
};

static const struct limits default_limits = { 256, 64, 128, 0, 0 };

static char *spec(const char *id, const char *img, const char *layout, const struct limits *l)
{
    char *s = NULL;

    cr_assert(asprintf(&s,
                       "{\"execution_id\": \"%s\", \"image\": %s%s%s, \"layout\": \"%s\","
                       " \"resources\": {\"cpus\": %.17g, \"memory_bytes\": %.0f,"
                       " \"disk_bytes\": %.0f, \"pids\": %d, \"runtime_ms\": %u,"
                       " \"max_output_bytes\": 1048576}, \"network\": {\"mode\": \"none\"},"
                       " \"environment\": {\"CORDON_TEST\": \"yes\"}}",
                       id, img != NULL ? "\"" : "", img != NULL ? img : "null",
                       img != NULL ? "\"" : "", layout, l->cpus > 0 ? l->cpus : 1.0,
                       l->memory_mib * MIB, l->disk_mib * MIB,
                       l->pids, l->runtime_ms != 0 ? l->runtime_ms : 600000u) > 0);
    return s;
}

static void new_id(char *buf, size_t size)
{
    char hex[17];

    random_hex(hex, 8);
    snprintf(buf, size, "rt-%s", hex);
    record_id(buf);
}

static void track(char *state)
{
    for (int i = 0; i < MAX_TRACKED; i++)
        if (states[i] == NULL) {
            states[i] = state;
            return;
        }
    cr_assert_fail("more than %d executions in one test", MAX_TRACKED);
}

/* Provision (asserting success) and track; returns the state. */
static const char *provision_with(const char *layout, const struct limits *l, char *ret_id)
{
    char id[40], *state = NULL, *s;

    new_id(id, sizeof(id));
    s = spec(id, image, layout, l);
    cr_assert_eq(prov->provision(res, s, &state, &err), 0, "provision: %s", err.message);
    free(s);
    track(state);
    if (ret_id != NULL)
        strcpy(ret_id, id);
    return state;
}

static const char *provision(char *ret_id)
{
    return provision_with("host", &default_limits, ret_id);
}

static pid_t state_pid(const char *state)
{
    cJSON *doc = cJSON_Parse(state);
    pid_t pid = (pid_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(doc, "pid"));

    cJSON_Delete(doc);
    return pid;
}

/* An exec of argv through the host's driver. */
static int drive(const char *state, const char *const *argv, uint64_t timeout_ms,
                 uint64_t budget, struct cordon_exec_outcome *o)
{
    struct cordon_drive_opts opts;
    cJSON *req = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(req, "argv");
    char *text;
    int r;

    for (size_t i = 0; argv[i] != NULL; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateString(argv[i]));
    cJSON_AddStringToObject(req, "cwd", "");
    cJSON_AddNumberToObject(req, "timeout_ms", (double)timeout_ms);
    text = cJSON_PrintUnformatted(req);
    cJSON_Delete(req);
    cordon__drive_opts_init(&opts);
    opts.host = &host;
    opts.provider = prov;
    opts.resource = res;
    opts.state_json = state;
    opts.request_json = text;
    opts.timeout_ms = timeout_ms;
    opts.retention_bytes = 256 * 1024;
    opts.output_budget = budget;
    r = cordon__drive_exec(&opts, o, &err);
    free(text);
    return r;
}

/* sh -c script; its stdout (NUL-terminated, malloc'd) in *ret_out. */
static struct cordon_exec_outcome sh(const char *state, const char *script, char **ret_out)
{
    const char *argv[] = { "sh", "-c", script, NULL };
    struct cordon_exec_outcome o = { 0 };

    cr_assert_eq(drive(state, argv, 120000, 4u << 20, &o), 0, "exec %s: %s", script,
                 err.message);
    if (ret_out != NULL)
        *ret_out = strndup(o.out.data != NULL ? o.out.data : "", o.out.len);
    return o;
}

/* The uid an execution runs as, from its state: one of the pool's. */
static uid_t state_uid(const char *state)
{
    cJSON *doc = cJSON_Parse(state);
    uid_t uid = (uid_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(doc, "uid"));

    cJSON_Delete(doc);
    cr_assert(cordon_uid_in_pool(uid), "state.uid %u is not in the uid pool", (unsigned)uid);
    return uid;
}

static bool uid_lock_exists(uid_t uid)
{
    char path[64];

    snprintf(path, sizeof(path), CORDON_UID_DIR "/%u", (unsigned)uid);
    return access(path, F_OK) == 0;
}

static char *stream_text(const struct cordon_stream_capture *s)
{
    char *t = strndup(s->data != NULL ? s->data : "", s->len);

    cr_assert_not_null(t);
    return t;
}

/* ---- the cordon command ---------------------------------------------------------- */

/* cordon --config ... run --isolation required --image IMG --json ARGS...; parsed JSON. */
static cJSON *cli_run(const char *const *args)
{
    char provider_path[PATH_MAX + 32], obs_env[PATH_MAX + 32], init_env[PATH_MAX + 32];
    char config[PATH_MAX + 32], state_dir[PATH_MAX + 32], *out = NULL;
    const char *argv[32];
    char inner_env[PATH_MAX + 32], probe_inner_env[PATH_MAX + 32];
    const char *envp[] = { provider_path, obs_env, init_env, "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
                           inner_env, probe_inner_env, NULL };
    const char *id;
    size_t n = 0;
    cJSON *doc;

    /* Where the twoface fixture (linked beside runc.so) finds its inners. */
    snprintf(inner_env, sizeof(inner_env), "CORDON_FIXTURE_INNER=%s", env_or("CORDON_FIXTURE_INNER", ""));
    snprintf(probe_inner_env, sizeof(probe_inner_env), "CORDON_FIXTURE_PROBE_INNER=%s", provider_so);
    snprintf(provider_path, sizeof(provider_path), "CORDON_PROVIDER_PATH=%s/providers", shared);
    snprintf(obs_env, sizeof(obs_env), "CORDON_OBSERVER=%s", observer);
    snprintf(init_env, sizeof(init_env), "CORDON_INIT=%s", init_bin);
    snprintf(config, sizeof(config), "%s/cli-config.json", shared);
    snprintf(state_dir, sizeof(state_dir), "%s/cli-state", shared);
    argv[n++] = cordon_bin;
    argv[n++] = "--config";
    argv[n++] = config;
    argv[n++] = "--state-dir";
    argv[n++] = state_dir;
    argv[n++] = "run";
    argv[n++] = "--isolation";
    argv[n++] = "required";
    argv[n++] = "--image";
    argv[n++] = image;
    argv[n++] = "--json";
    for (size_t i = 0; args[i] != NULL && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    host_run(argv, envp, &out);
    doc = cJSON_Parse(out);
    cr_assert(cJSON_IsObject(doc), "cordon run printed no JSON object: %.500s", out);
    free(out);
    id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(doc, "meta"), "execution_id"));
    if (id != NULL)
        record_id(id);
    return doc;
}

static const char *str_at(const cJSON *doc, const char *a, const char *b)
{
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(doc, a);

    return cJSON_GetStringValue(b != NULL ? cJSON_GetObjectItemCaseSensitive(o, b) : o) ?: "";
}

/* A CLI run's first probe record (meta.probes[0]). */
static const cJSON *first_probe(const cJSON *doc)
{
    return cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "meta"), "probes"), 0);
}

/* A CLI run refused its one candidate as claims_disproved, naming
 * AXIS/CHECK in the skip's detail; its probe record. */
static const cJSON *refused_for(const cJSON *doc, const char *failed)
{
    const cJSON *rec = first_probe(doc), *skip = cJSON_GetObjectItemCaseSensitive(rec, "skip");

    cr_assert_str_eq(str_at(doc, "status", NULL), "blocked", "%s", str_at(doc, "stdout", NULL));
    cr_assert_str_eq(str_at(skip, "reason", NULL), "claims_disproved", "%s", str_at(skip, "detail", NULL));
    cr_expect(strstr(str_at(skip, "detail", NULL), failed) != NULL, "%s", str_at(skip, "detail", NULL));
    return rec;
}

/* After a CLI run: the execution is gone from the runtime, the cgroups, the disk. */
static void assert_execution_gone(const cJSON *doc)
{
    const char *id = str_at(doc, "meta", "execution_id");

    cr_assert_neq(id[0], '\0', "no meta.execution_id");
    cr_assert_not(runtime_knows(id), "the runtime still knows container %s", id);
    cr_assert_eq(cgroups_left(id), 0, "cgroups of %s remain", id);
}

struct example {
    char path[64];
    char greeting[32];
};

static struct example examples[] = {
    { "python/hello.py", "hello from python 3." },
    { "node/hello.js", "hello from node v" },
    { "go/main.go", "hello from go1." },
    { "cpp/main.cpp", "hello from c++" },
};

ParameterizedTestParameters(runc, cli_example_runs_isolated)
{
    return cr_make_param_array(struct example, examples, sizeof(examples) / sizeof(examples[0]));
}

ParameterizedTest(struct example *ex, runc, cli_example_runs_isolated)
{
    static const char *const axes[] = {
        CORDON_AXIS_PROCESS_CONTAINED, CORDON_AXIS_HOST_FS_RESTRICTED,
        CORDON_AXIS_PRIVESC_BLOCKED, CORDON_AXIS_SYSCALLS_RESTRICTED,
    };
    char bundle[PATH_MAX * 2], dir[PATH_MAX];
    /* runc by name: the directory also holds fixtures that are runc too. */
    const char *args[] = { "--provider", "runc", "--timeout", "120s", bundle, NULL };
    const cJSON *facts, *iso;
    cJSON *doc;

    require_setup();
    examples_dir(dir, sizeof(dir));
    snprintf(bundle, sizeof(bundle), "%s/%s", dir, ex->path);
    doc = cli_run(args);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "ok")),
              "%s: not ok: status %s, error %s, stderr %.500s", ex->path,
              str_at(doc, "status", NULL), str_at(doc, "error", "message"),
              str_at(doc, "stderr", NULL));
    cr_assert_str_eq(str_at(doc, "status", NULL), "success");
    cr_assert(strstr(str_at(doc, "stdout", NULL), ex->greeting) != NULL, "%s printed \"%s\"",
              ex->path, str_at(doc, "stdout", NULL));
    cr_assert_str_eq(str_at(doc, "meta", "provider_id"), "runc");
    facts = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "meta"),
                                             "provider_facts");
    cr_assert_str_eq(str_at(facts, "observed_by", NULL), "cordon-observe");
    cr_assert_str_eq(str_at(facts, "safety_class", NULL), "isolated");
    iso = cJSON_GetObjectItemCaseSensitive(facts, "isolation");
    for (size_t i = 0; i < 4; i++)
        cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(iso, axes[i])),
                  "%s: facts.isolation.%s is not observed true", ex->path, axes[i]);
    assert_execution_gone(doc);
    cJSON_Delete(doc);
}

/* A one-file bundle in the shared dir: name with body. */
static void write_bundle(const char *name, const char *body, char *ret_path, size_t size)
{
    char dir[PATH_MAX], hex[9];
    int fd;

    random_hex(hex, 4);
    snprintf(dir, sizeof(dir), "%s/bundle-%s", shared, hex);
    cr_assert_eq(mkdir(dir, 0755), 0);
    snprintf(ret_path, size, "%s/%s", dir, name);
    fd = open(ret_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, body, strlen(body)), (ssize_t)strlen(body));
    close(fd);
}

Test(runc, cli_output_flood_ends_with_output_limit_and_no_container)
{
    char bundle[PATH_MAX + 32];
    const char *args[] = { "--max-output", "1M", "--timeout", "60s", bundle, NULL };
    cJSON *doc;

    require_setup();
    /* 100 MiB against a budget of 1 MiB. */
    write_bundle("main.py",
                 "import sys\nchunk = b'x' * (1 << 20)\n"
                 "for _ in range(100):\n    sys.stdout.buffer.write(chunk)\n",
                 bundle, sizeof(bundle));
    doc = cli_run(args);
    cr_assert_str_eq(str_at(doc, "status", NULL), "output_limit", "status %s (%s)",
                     str_at(doc, "status", NULL), str_at(doc, "error", "message"));
    assert_execution_gone(doc);
    cJSON_Delete(doc);
}

/* twoface.so runs runc's own probe (an honest observation of a runc
 * container) but every exec directly on the host: the host's own
 * verification, through twoface's exec, must refuse it. */
Test(runc, cli_refuses_a_provider_whose_probe_is_confined_but_not_its_exec)
{
    char bundle[PATH_MAX + 32], *path;
    const char *args[] = { "--provider", "twoface", bundle, NULL };
    const cJSON *rec, *facts;
    cJSON *doc;

    require_setup();
    path = realpath(env_or("CORDON_FIXTURE_INNER", ""), NULL);
    cr_assert_not_null(path, "CORDON_FIXTURE_INNER (trusted-local.so) is not set (make check sets it)");
    free(path);
    write_bundle("main.py", "print('ran on the host')\n", bundle, sizeof(bundle));
    doc = cli_run(args);
    rec = refused_for(doc, "process_contained/pid_namespace");
    /* Its own probe really observed runc: the claim was honest about the
     * probe's container, and only the host's look through exec differs. */
    facts = cJSON_GetObjectItemCaseSensitive(rec, "facts");
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(facts, "claimed_isolation"), CORDON_AXIS_PROCESS_CONTAINED)));
    cr_expect(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(facts, "isolation"), CORDON_AXIS_PROCESS_CONTAINED)));
    cr_expect_str_eq(str_at(cJSON_GetObjectItemCaseSensitive(facts, "mechanism_facts"), "runtime", NULL), "runc");
    cJSON_Delete(doc);
}

/* ---- limits the host checks -------------------------------------------------------- */

/* runc with a dodge of the host's limit checks (tests/fixtures/memlax.c),
 * linked beside runc.so. */
static const char *const lax_fixtures[] = { "memlax", "nolimits", "memfloor", "fsizelax" };

static const char *limit_status(const cJSON *facts, const char *key, const char *field)
{
    return str_at(cJSON_GetObjectItemCaseSensitive(facts, "limits_verified"), key, field);
}

/* cordon run --provider id, which succeeds; the run's document (the
 * caller's) and the candidate's facts in it. */
static cJSON *run_selected(const char *id, const cJSON **ret_facts)
{
    char bundle[PATH_MAX + 32];
    const char *args[] = { "--provider", id, bundle, NULL };
    cJSON *doc;

    require_setup();
    write_bundle("main.py", "print('hi')\n", bundle, sizeof(bundle));
    doc = cli_run(args);
    cr_assert_str_eq(str_at(doc, "status", NULL), "success", "%s", str_at(doc, "error", "message"));
    *ret_facts = cJSON_GetObjectItemCaseSensitive(first_probe(doc), "facts");
    return doc;
}

/* cordon run --provider id, refused with claims_disproved naming failed
 * (refused_for); the run's document (the caller's) and the candidate's
 * facts in it. */
static cJSON *run_refused(const char *id, const char *failed, const cJSON **ret_facts)
{
    char bundle[PATH_MAX + 32];
    const char *args[] = { "--provider", id, bundle, NULL };
    cJSON *doc;

    require_setup();
    write_bundle("main.py", "print('never runs')\n", bundle, sizeof(bundle));
    doc = cli_run(args);
    *ret_facts = cJSON_GetObjectItemCaseSensitive(refused_for(doc, failed), "facts");
    return doc;
}

/* The host's probe execution gets small limits and checks from inside
 * that each holds: runc's cgroup and tmpfs sizes do, the host's output
 * budget does, and the deadline is not waited out. */
Test(runc, cli_host_sees_every_limit_of_runc_hold)
{
    static const char *const held[] = { "cpus", "memory_bytes", "disk_bytes", "pids", "max_output_bytes" };
    const cJSON *facts;
    cJSON *doc = run_selected("runc", &facts);

    for (size_t i = 0; i < sizeof(held) / sizeof(held[0]); i++)
        cr_expect_str_eq(limit_status(facts, held[i], "status"), "held", "%s: %s", held[i],
                         limit_status(facts, held[i], "detail"));
    cr_expect_str_eq(limit_status(facts, "runtime_ms", "status"), "not_run");
    /* What was asked, drawn for this probe within its range. */
    {
        const cJSON *mem = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(facts, "limits_verified"), "memory_bytes");
        double asked = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(mem, "asked"));

        cr_expect(asked >= 128.0 * 1024 * 1024 && asked <= 176.0 * 1024 * 1024, "memory asked %.0f", asked);
    }
    /* runc's /dev is a read-write tmpfs only root may write: it stores
     * nothing for this uid, and the detail says so. */
    cr_expect(strstr(limit_status(facts, "disk_bytes", "detail"), "no place this uid can write: /dev") != NULL,
              "%s", limit_status(facts, "disk_bytes", "detail"));
    cr_expect_str_eq(limit_status(facts, "memory_bytes", "enforced_by"), "cgroup");
    cr_expect_str_eq(limit_status(facts, "disk_bytes", "enforced_by"), "tmpfs_size");
    cr_expect_str_eq(limit_status(facts, "max_output_bytes", "enforced_by"), "host");
    cJSON_Delete(doc);
}

/* memlax.so accepts a 64 MiB memory limit and gives runc 1 GiB: the host
 * disproves memory_bytes and "isolation: required" refuses it. */
Test(runc, cli_refuses_a_provider_that_does_not_apply_its_memory_limit)
{
    const cJSON *facts, *d;
    bool named = false;
    cJSON *doc = run_refused("memlax", "limits/memory_bytes", &facts);

    cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(first_probe(doc), "skip"),
                                                            "failed"))
        named = named || (strcmp(str_at(d, "axis", NULL), "limits") == 0 &&
                          strcmp(str_at(d, "check", NULL), "memory_bytes") == 0);
    cr_expect(named, "skip.failed names limits/memory_bytes");
    /* Only the lie is disproved: its other limits are runc's and hold. */
    cr_expect_str_eq(limit_status(facts, "memory_bytes", "status"), "disproved");
    cr_expect_str_eq(limit_status(facts, "pids", "status"), "held");
    cJSON_Delete(doc);
}

/* nolimits.so fails the one exec that checks the limits: every limit it
 * claims goes unobserved, which is a disproval, not a free not_run. */
Test(runc, cli_refuses_a_provider_whose_limit_check_never_reports)
{
    const cJSON *facts;
    cJSON *doc = run_refused("nolimits", "limits/limits_not_observed", &facts);

    cr_expect_str_eq(limit_status(facts, "memory_bytes", "status"), "not_run");
    cr_expect_str_eq(limit_status(facts, "runtime_ms", "status"), "not_run");
    cJSON_Delete(doc);
}

/* memfloor.so refuses memory below 192 MiB, as a VM with a floor would:
 * the host observes its isolation all the same, with the ordinary limits,
 * and checks its limits against those: refusing the small limits buys no
 * way out of the checks. */
Test(runc, cli_a_provider_refusing_the_small_limits_is_still_verified)
{
    static const char *const held[] = { "cpus", "memory_bytes", "disk_bytes", "pids" };
    const cJSON *facts, *mem;
    cJSON *doc = run_selected("memfloor", &facts);

    cr_expect_str_eq(str_at(facts, "verification", "status"), "verified");
    for (size_t i = 0; i < sizeof(held) / sizeof(held[0]); i++) {
        cr_expect_str_eq(limit_status(facts, held[i], "status"), "held", "%s: %s", held[i],
                         limit_status(facts, held[i], "detail"));
        cr_expect(strstr(limit_status(facts, held[i], "detail"), "refused the small limits") != NULL, "%s: %s",
                  held[i], limit_status(facts, held[i], "detail"));
    }
    mem = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(facts, "limits_verified"),
                                           "memory_bytes");
    cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(mem, "asked")), 256.0 * 1024 * 1024,
                 "memory asked: the ordinary 256 MiB");
    cJSON_Delete(doc);
}

/* fsizelax.so gives a 256 MiB disk and runs the limit checks under a
 * 512 KiB per-file limit (prlimit --fsize): a per-file limit is not a
 * budget, and the fill, file after file, shows it. (Before, SIGXFSZ
 * killed the observer and every limit went unjudged, at no cost.) */
Test(runc, cli_refuses_a_per_file_limit_passed_off_as_the_disk_budget)
{
    const cJSON *facts;
    cJSON *doc = run_refused("fsizelax", "limits/disk_bytes", &facts);

    cr_expect_str_eq(limit_status(facts, "disk_bytes", "status"), "disproved", "%s",
                     limit_status(facts, "disk_bytes", "detail"));
    cr_expect_str_eq(limit_status(facts, "pids", "status"), "held", "%s", limit_status(facts, "pids", "detail"));
    cJSON_Delete(doc);
}

/* ---- probe ------------------------------------------------------------------------- */

/* The probe claims every axis and no network; the observation the host
 * runs through the same vtable (cordon_observe_run, as core/verify.c does)
 * sees them hold and finds the image's toolchains. */
Test(runc, probe_claims_all_axes_and_the_observation_holds_them)
{
    static const char *const tools[] = { "python", "node", "go", "c++", NULL };
    static const char *const axes[] = { CORDON_AXIS_PROCESS_CONTAINED, CORDON_AXIS_HOST_FS_RESTRICTED,
                                        CORDON_AXIS_PRIVESC_BLOCKED, CORDON_AXIS_SYSCALLS_RESTRICTED };
    char config[PATH_MAX + 128], *facts = NULL, *seen = NULL;
    const cJSON *iso, *tc, *mech;
    struct cordon_resource *mine = NULL;
    cJSON *doc, *obs;

    require_setup();
    snprintf(config, sizeof(config), "{\"image\": \"%s\"}", image);
    cr_assert_eq(prov->probe(&host, config, CORDON_PROBE_FULL, &facts, &err), 0, "probe: %s",
                 err.message);
    cr_assert_eq(cordon__facts_validate(facts, &err), 0, "%s", err.message);
    doc = cJSON_Parse(facts);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "available")), "%s", facts);
    iso = cJSON_GetObjectItemCaseSensitive(doc, "isolation");
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(iso, CORDON_AXIS_PROCESS_CONTAINED)));
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(iso, CORDON_AXIS_HOST_FS_RESTRICTED)));
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(iso, CORDON_AXIS_PRIVESC_BLOCKED)));
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(iso, CORDON_AXIS_SYSCALLS_RESTRICTED)));
    cr_assert_str_eq(str_at(doc, "network", NULL), "none");
    cr_assert_str_eq(str_at(doc, "observed_by", NULL), "none");
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "toolchains")), 0);
    cr_assert_eq(prov->ensure(&host, config, &mine, &err), 0, "ensure: %s", err.message);
    {
        struct cordon_observe_opts oo = {
            .struct_size = sizeof(oo), .host = &host, .provider = prov, .resource = mine,
            .image = image, .toolchains = tools, .flags = CORDON_OBSERVE_CHECK_LIMITS,
        };

        cr_assert_eq(cordon_observe_run(&oo, &seen, &err), 0, "observe: %s", err.message);
    }
    prov->release(mine, &err);
    obs = cJSON_Parse(seen);
    iso = cJSON_GetObjectItemCaseSensitive(obs, "isolation");
    for (size_t i = 0; i < 4; i++)
        cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(iso, axes[i])), "%s: %s", axes[i], seen);
    cr_assert_str_eq(str_at(obs, "network", NULL), "none");
    tc = cJSON_GetObjectItemCaseSensitive(obs, "toolchains");
    for (size_t i = 0; tools[i] != NULL; i++)
        cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
                      cJSON_GetObjectItemCaseSensitive(tc, tools[i]), "available")),
                  "toolchain %s is not available: %s", tools[i], seen);
    cJSON_Delete(obs);
    free(seen);
    mech = cJSON_GetObjectItemCaseSensitive(doc, "mechanism_facts");
    cr_assert_str_eq(str_at(mech, "runtime", NULL), "runc");
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(mech, "image_pinned")));
    cr_assert_str_eq(str_at(mech, "loopback", NULL), "up");
    /* runc is entered by the provider itself, never through `runc exec`. */
    cr_assert_str_eq(str_at(mech, "exec_path", NULL), "agent");
    cJSON_Delete(doc);
    free(facts);
}

Test(runc, availability_probe_checks_without_hashing)
{
    char config[PATH_MAX + 256], *facts = NULL;
    cJSON *doc;

    require_setup();
    /* A pinned reference to a missing file is unavailable, and says why. */
    snprintf(config, sizeof(config),
             "{\"image\": \"%s/missing.tar@sha256:%064d\"}", shared, 0);
    cr_assert_eq(prov->probe(&host, config, CORDON_PROBE_AVAILABILITY, &facts, &err), 0, "%s",
                 err.message);
    doc = cJSON_Parse(facts);
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(doc, "available")), "%s", facts);
    cr_assert(strstr(str_at(doc, "reason", NULL), "missing.tar") != NULL, "%s", facts);
    cJSON_Delete(doc);
    free(facts);
    snprintf(config, sizeof(config), "{\"image\": \"%s\"}", image);
    cr_assert_eq(prov->probe(&host, config, CORDON_PROBE_AVAILABILITY, &facts, &err), 0, "%s",
                 err.message);
    doc = cJSON_Parse(facts);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "available")), "%s", facts);
    cJSON_Delete(doc);
    free(facts);
}

/* ---- limits read back and enforced ---------------------------------------------------- */

static char *cgroup_file(const char *ctrl, const char *id, const char *file)
{
    char path[PATH_MAX], *t;

    snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/cordon-%s/%s", ctrl, id, file);
    t = read_text(path);
    cr_assert_not_null(t, "%s is missing", path);
    t[strcspn(t, "\n")] = '\0';
    return t;
}

Test(runc, limits_are_in_the_cgroup)
{
    static const struct limits l = { 96, 32, 40, 0, 0 };
    char id[40], *v;

    ensure();
    provision_with("code", &l, id);
    if (access("/sys/fs/cgroup/memory", F_OK) != 0)
        cr_skip_test("cgroup v2: the read-back is checked by provision itself");
    v = cgroup_file("memory", id, "memory.limit_in_bytes");
    cr_assert_str_eq(v, "100663296");
    free(v);
    v = cgroup_file("pids", id, "pids.max");
    cr_assert_str_eq(v, "40");
    free(v);
    v = cgroup_file("cpu", id, "cpu.cfs_quota_us");
    cr_assert_str_eq(v, "100000");
    free(v);
}

/* The quota is cpus times the 100 ms period, rounded up: a third of a cpu
 * is 33334 us, and half a cpu exactly 50000 (not one more). */
Test(runc, fractional_cpus_round_up_to_a_whole_microsecond)
{
    static const struct { double cpus; const char *quota; } cases[] = {
        { 0.3333333333, "33334" }, { 0.5, "50000" }, { 1.2345678915, "123457" },
    };
    char id[40], *v;

    ensure();
    if (access("/sys/fs/cgroup/cpu", F_OK) != 0)
        cr_skip_test("cgroup v2: the read-back is checked by provision itself");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct limits l = { 64, 16, 32, 0, cases[i].cpus };

        provision_with("code", &l, id);
        v = cgroup_file("cpu", id, "cpu.cfs_quota_us");
        cr_expect_str_eq(v, cases[i].quota, "cpus %.17g", cases[i].cpus);
        free(v);
    }
}

Test(runc, fork_bomb_is_stopped_by_pids)
{
    static const struct limits l = { 256, 64, 32, 0, 0 };
    const char *state;
    char *out;
    struct cordon_exec_outcome o;

    ensure();
    state = provision_with("host", &l, NULL);
    /* Fork sleepers until fork fails; report how far it got. */
    o = sh(state,
           "python3 -c '\n"
           "import os, signal, time\n"
           "kids = []\n"
           "try:\n"
           "    for _ in range(1000):\n"
           "        pid = os.fork()\n"
           "        if pid == 0:\n"
           "            time.sleep(60)\n"
           "            os._exit(0)\n"
           "        kids.append(pid)\n"
           "    print(\"forked\", len(kids), \"no limit\")\n"
           "except OSError as e:\n"
           "    print(\"forked\", len(kids), \"errno\", e.errno)\n"
           "for k in kids:\n"
           "    os.kill(k, signal.SIGKILL)\n"
           "'",
           &out);
    cr_assert_eq(o.status, CORDON_RUN_EXITED, "status %s", cordon_run_status_name(o.status));
    cr_assert(strstr(out, "errno 11") != NULL, "fork was never refused: %s", out);
    cr_assert(atoi(out + strlen("forked ")) < 32, "more forks than pids allows: %s", out);
    cordon_exec_outcome_clear(&o);
    free(out);
}

Test(runc, twice_the_memory_limit_is_oom)
{
    static const struct limits l = { 64, 64, 64, 0, 0 };
    const char *argv[] = { "python3", "-c",
                           "b = bytearray(128 << 20)\n"
                           "for i in range(0, len(b), 4096):\n    b[i] = 1\nprint('survived')",
                           NULL };
    struct cordon_exec_outcome o = { 0 };
    const char *state;

    ensure();
    state = provision_with("host", &l, NULL);
    cr_assert_eq(drive(state, argv, 60000, 1 << 20, &o), 0, "%s", err.message);
    cr_assert_eq(o.status, CORDON_RUN_OOM, "status %s, not oom", cordon_run_status_name(o.status));
    cordon_exec_outcome_clear(&o);
}

Test(runc, writing_past_disk_bytes_fails)
{
    static const struct limits l = { 256, 8, 64, 0, 0 };
    const char *state;
    char *out;
    struct cordon_exec_outcome o;

    ensure();
    state = provision_with("host", &l, NULL);
    o = sh(state,
           "dd if=/dev/zero of=/workspace/big bs=1M count=16 2>&1; echo rc=$?; "
           "stat -c size=%s /workspace/big; "
           "dd if=/dev/zero of=/tmp/big bs=1M count=16 2>&1; echo tmp_rc=$?",
           &out);
    cr_assert_eq(o.status, CORDON_RUN_EXITED);
    cr_assert(strstr(out, "No space left on device") != NULL, "%s", out);
    cr_assert(strstr(out, "rc=1") != NULL && strstr(out, "tmp_rc=1") != NULL, "%s", out);
    cr_assert(atoll(strstr(out, "size=") + 5) <= 8 * 1024 * 1024, "%s", out);
    cordon_exec_outcome_clear(&o);
    free(out);
}

/*
 * disk_bytes is one budget: filling /workspace, /tmp and /dev/shm at once
 * stores at most disk_bytes (64 MiB here), and almost all of it. Each used
 * to get 64 MiB of its own: 192 MiB in all.
 */
Test(runc, writable_tmpfs_mounts_share_disk_bytes)
{
    const char *state;
    char *out, *script;
    struct cordon_exec_outcome o;
    long long total;

    ensure();
    state = provision(NULL);
    script = test_fill_tmpfs_script(
        "runc", 64 * MIB, "grep -E ' /(workspace|tmp|dev/shm) ' /proc/mounts");
    cr_assert_not_null(script);
    o = sh(state, script, &out);
    free(script);
    cr_assert(o.status == CORDON_RUN_EXITED && o.exit_code == 0, "%s", out);
    total = test_fill_value(out, "total");
    cr_expect(test_fill_has(out, "/workspace") && test_fill_has(out, "/tmp") &&
                  test_fill_has(out, "/dev/shm"),
              "a writable tmpfs was not filled: %s", out);
    cr_expect_eq(test_fill_value(out, "mounts"), 3, "writable tmpfs mounts beyond the three: %s",
                 out);
    cr_expect_leq(total, (long long)(64 * MIB), "the sandbox stored %lld bytes with disk_bytes 64 MiB: %s",
                  total, out);
    cr_expect_geq(total, (long long)(63 * MIB), "only %lld bytes of the 64 MiB are usable: %s", total,
                  out);
    /* The split itself: /tmp an eighth, /dev/shm a sixteenth, the rest the workspace's. */
    cr_expect(strstr(out, " /workspace tmpfs ") != NULL && strstr(out, "size=53248k") != NULL &&
                  strstr(out, "size=8192k") != NULL && strstr(out, "size=4096k") != NULL,
              "the tmpfs sizes are not 52, 8 and 4 MiB: %s", out);
    cordon_exec_outcome_clear(&o);
    free(out);
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

/* The sandboxed program plants a FIFO in /workspace named with a title
 * sequence, a screen clear, a fake "cordon: success" line and a byte that
 * is not UTF-8. The export that refuses it names it escaped, and the
 * message put into JSON the way the host puts it there is strict UTF-8. */
Test(runc, hostile_fifo_name_is_escaped_in_the_refusal)
{
    const char *state;
    struct cordon_exec_outcome o;
    cJSON *doc = cJSON_CreateObject();
    char *text;
    int fd;

    ensure();
    state = provision(NULL);
    o = sh(state, "mkfifo \"/workspace/$(printf '\\033]0;pwned\\007\\033[2J\\rcordon: success\\n\\377')\"",
           NULL);
    cr_assert(o.status == CORDON_RUN_EXITED && o.exit_code == 0, "mkfifo: %d %d", o.status, o.exit_code);
    cordon_exec_outcome_clear(&o);
    fd = memfd_create("out.tar", MFD_CLOEXEC);
    cordon_error_init(&err);
    cr_assert_lt(prov->export_tar(res, state, "", fd, &err), 0, "a FIFO is refused");
    close(fd);
    cr_expect(shows_safely(err.message), "the refusal carries the raw name: %s", err.message);
    cr_expect_not_null(strstr(err.message, "\\x1b]0;pwned\\x07\\x1b[2J\\x0dcordon: success\\x0a\\xff"),
                       "%s", err.message);
    cr_assert_not_null(cordon_json_add_text(doc, "message", err.message));
    text = cJSON_PrintUnformatted(doc);
    cr_expect(cordon_text_is_utf8(text, strlen(text)), "%s", text);
    cr_expect_null(strstr(text, "\\u001b"), "JSON carries ESC: %s", text);
    free(text);
    cJSON_Delete(doc);
}

/* ---- timeouts and teardown ------------------------------------------------------------ */

/* A timeout ends the command's process group and leaves the container; a
 * sleeper that left the command's session (setsid) is no longer the
 * command's and runs on until terminate. Through the agent the group is
 * gone when the answer comes; entered (setns), the command runs in a
 * session of its own beyond the runner's kill of its relay, and ends as
 * the relay goes (cordon-init --exec hears of it), within moments. */
static void check_timeout_ends_the_commands_group(bool setns)
{
    const char *argv[] = { "sh", "-c", NULL, NULL };
    struct cordon_exec_outcome o = { 0 };
    char marker[48], away[48], script[240], hex[9], id[40], path[PATH_MAX];
    const char *state;

    if (setns)
        ensure_setns();
    else
        ensure();
    state = provision(id);
    cr_assert_gt(state_pid(state), 1);
    random_hex(hex, 4);
    snprintf(marker, sizeof(marker), "1000.%u", (unsigned)strtoul(hex, NULL, 16));
    snprintf(away, sizeof(away), "2000.%u", (unsigned)strtoul(hex, NULL, 16));
    snprintf(script, sizeof(script), "setsid sleep %s & (sleep %s &); sleep %s & sleep %s", away,
             marker, marker, marker);
    argv[2] = script;
    cr_assert_eq(drive(state, argv, 700, 1 << 20, &o), 0, "%s", err.message);
    cr_assert_eq(o.status, CORDON_RUN_TIMEOUT, "status %s", cordon_run_status_name(o.status));
    cordon_exec_outcome_clear(&o);
    if (setns)
        cr_expect(TEST_WAIT_UNTIL(test_count_processes(marker) == 0, 10000),
                  "sleepers (%s) outlived the timeout", marker);
    else
        cr_expect_eq(test_count_processes(marker), 0, "sleepers (%s) outlived the timeout's answer",
                     marker);
    cr_expect_eq(test_count_processes(away), 1, "the sleeper in a session of its own (%s) is "
                 "not the command's, and runs on", away);
    cr_assert(runtime_knows(id), "the container went with the timeout");
    /* The next exec runs in the same container. */
    o = sh(state, "echo again", NULL);
    cr_expect_eq(o.status, CORDON_RUN_EXITED, "the next exec: %s", cordon_run_status_name(o.status));
    cordon_exec_outcome_clear(&o);
    /* Terminate removes what is left: the escaped sleeper, the runtime's
     * record, cgroups, bundle. */
    cr_assert_eq(prov->terminate(res, state, &err), 0, "%s", err.message);
    cr_expect_eq(processes_left(away, 2000), 0, "the escaped sleeper survives terminate");
    cr_assert_not(runtime_knows(id));
    cr_assert_eq(cgroups_left(id), 0);
    snprintf(path, sizeof(path), "%s/providers/runc/bundles/%s", shared, id);
    cr_assert_not(exists(path), "%s remains", path);
}

Test(runc, timeout_ends_the_commands_group_and_the_container_stays)
{
    check_timeout_ends_the_commands_group(false);
}

Test(runc, timeout_of_an_entered_command_ends_its_group_and_the_container_stays)
{
    check_timeout_ends_the_commands_group(true);
}

Test(runc, terminate_and_reclaim_are_idempotent)
{
    char id[40], path[PATH_MAX];
    const char *state;

    ensure();
    state = provision(id);
    cr_assert_eq(prov->reclaim(res, id, &err), 0, "reclaim: %s", err.message);
    cr_assert_not(runtime_knows(id));
    cr_assert_eq(cgroups_left(id), 0);
    snprintf(path, sizeof(path), "%s/providers/runc/bundles/%s", shared, id);
    cr_assert_not(exists(path));
    /* Already gone is success, by state and by id. */
    cr_assert_eq(prov->terminate(res, state, &err), 0, "%s", err.message);
    cr_assert_eq(prov->reclaim(res, id, &err), 0, "%s", err.message);
}

Test(runc, init_reaps_orphans)
{
    const char *state;
    char *out;
    struct cordon_exec_outcome o;

    ensure();
    state = provision(NULL);
    /* Twenty orphans, re-parented to the init as their parents exit. */
    o = sh(state, "for i in $(seq 20); do (sleep 0.2 &) ; done; exit 0", NULL);
    cordon_exec_outcome_clear(&o);
    o = sh(state, "sleep 1; ps -eo stat= | grep -c '^Z' || true", &out);
    cr_assert_eq(o.status, CORDON_RUN_EXITED);
    cr_assert_eq(atoi(out), 0, "zombies in the container: %s", out);
    cordon_exec_outcome_clear(&o);
    free(out);
}

Test(runc, deadline_ends_the_container)
{
    static const struct limits l = { 128, 16, 32, 2500, 0 };
    char id[40], marker[48], hex[9], script[400], path[PATH_MAX], *procs = NULL;
    const char *state;
    struct cordon_exec_outcome o;
    uint64_t start;

    ensure();
    state = provision_with("host", &l, id);
    start = cordon_now_monotonic_ms();
    random_hex(hex, 4);
    snprintf(marker, sizeof(marker), "1000.%u", (unsigned)strtoul(hex, NULL, 16));
    /* A sleeper in a session of its own survives the exec (the script waits
     * until it has left the exec's process group, which ends with it)... */
    snprintf(script, sizeof(script),
             "setsid sleep %s > /dev/null 2>&1 < /dev/null & "
             "while [ \"$(ps -o sid= -p $!)\" = \"$(ps -o sid= -p $$)\" ]; do sleep 0.05; done",
             marker);
    o = sh(state, script, NULL);
    cr_assert_eq(o.status, CORDON_RUN_EXITED);
    cordon_exec_outcome_clear(&o);
    cr_assert_eq(test_count_processes(marker), 1, "the sleeper did not start");
    /* ...until cordon-init's deadline ends the container, with no help from the host. */
    cr_assert_eq(processes_left(marker, 6000), 0, "the sleeper outlived the deadline");
    cr_assert_geq(cordon_now_monotonic_ms() - start, 2000, "gone before the deadline");
    /* The sleeper's end is not the container's: init and a zombie it has
     * not reaped yet leave the cgroup while the pid namespace goes down. */
    snprintf(path, sizeof(path), "/sys/fs/cgroup/pids/cordon-%s/cgroup.procs", id);
    for (int i = 0; i < 60; i++) {
        free(procs);
        procs = read_text(path);
        if (procs == NULL || procs[0] == '\0')
            break;
        usleep(50 * 1000);
    }
    cr_assert(procs == NULL || procs[0] == '\0', "the container still runs 3 s after: %s", procs);
    free(procs);
}

/* ---- isolation attacks ------------------------------------------------------------------ */

Test(runc, writing_to_the_root_filesystem_fails)
{
    const char *state;
    char *out;
    struct cordon_exec_outcome o;

    ensure();
    state = provision(NULL);
    o = sh(state,
           "for p in /x /etc/x /usr/bin/x /bin/x; do "
           "  if echo pwned > $p 2>/dev/null; then echo WROTE $p; else echo refused $p; fi; "
           "done; touch /workspace/ok && echo workspace-ok",
           &out);
    cr_assert_eq(o.status, CORDON_RUN_EXITED);
    cr_assert(strstr(out, "WROTE") == NULL, "%s", out);
    cr_assert(strstr(out, "refused /etc/x") != NULL && strstr(out, "workspace-ok") != NULL, "%s",
              out);
    cordon_exec_outcome_clear(&o);
    free(out);
}

Test(runc, only_loopback_and_no_way_out)
{
    const char *state;
    char *out;
    struct cordon_exec_outcome o;

    ensure();
    state = provision(NULL);
    o = sh(state,
           "ls /sys/class/net; python3 -c '\n"
           "import socket\n"
           "try:\n"
           "    socket.create_connection((\"1.1.1.1\", 53), timeout=3)\n"
           "    print(\"OUT-CONNECTED\")\n"
           "except OSError as e:\n"
           "    print(\"out-refused\", e.errno)\n"
           "s = socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(1)\n"
           "c = socket.create_connection(s.getsockname(), timeout=3)\n"
           "print(\"loopback-ok\")\n"
           "'",
           &out);
    cr_assert_eq(o.status, CORDON_RUN_EXITED, "%s", out);
    cr_assert_eq(strncmp(out, "lo\nout-", 7), 0, "interfaces other than lo: %s", out);
    cr_assert(strstr(out, "OUT-CONNECTED") == NULL && strstr(out, "out-refused") != NULL, "%s",
              out);
    cr_assert(strstr(out, "loopback-ok") != NULL, "lo is not up: %s", out);
    cordon_exec_outcome_clear(&o);
    free(out);
}

Test(runc, setuid_binary_does_not_gain_root)
{
    char rootfs[PATH_MAX], suid[PATH_MAX + 64], src[PATH_MAX + 64];
    const char *digest = strrchr(image, ':') + 1;
    const char *state;
    char *out;
    struct cordon_exec_outcome o;
    int in, outfd;
    char buf[65536];
    ssize_t n;

    ensure();
    state = provision(NULL);
    /* The cache strips the bits of the image's own setuid programs... */
    o = sh(state, "stat -c '%a %U' /usr/bin/passwd /usr/bin/su", &out);
    cr_assert(strstr(out, "4755") == NULL && strstr(out, "755 root") != NULL, "%s", out);
    cordon_exec_outcome_clear(&o);
    free(out);
    /* ...and even a setuid-root program planted in the root gains nothing. */
    snprintf(rootfs, sizeof(rootfs), "%s/providers/runc/rootfs/%s", shared, digest);
    snprintf(src, sizeof(src), "%s/usr/bin/id", rootfs);
    snprintf(suid, sizeof(suid), "%s/usr/local/bin/cordon-test-suid-id", rootfs);
    in = open(src, O_RDONLY | O_CLOEXEC);
    outfd = open(suid, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
    cr_assert(in >= 0 && outfd >= 0, "%s: %s", suid, strerror(errno));
    while ((n = read(in, buf, sizeof(buf))) > 0)
        cr_assert_eq(write(outfd, buf, (size_t)n), n);
    cr_assert_eq(fchown(outfd, 0, 0), 0);
    cr_assert_eq(fchmod(outfd, 04755), 0);
    close(in);
    close(outfd);
    o = sh(state, "ls -l /usr/local/bin/cordon-test-suid-id; cordon-test-suid-id -u", &out);
    unlink(suid);
    cr_assert(strstr(out, "rws") != NULL, "the planted program is not setuid: %s", out);
    snprintf(buf, sizeof(buf), "\n%u\n", (unsigned)state_uid(state));
    cr_assert(strstr(out, buf) != NULL, "the setuid program ran as: %s (not %s)", out, buf + 1);
    cordon_exec_outcome_clear(&o);
    free(out);
}

Test(runc, host_canary_is_not_visible)
{
    char dir[PATH_MAX + 32], path[PATH_MAX + 64], token[33], script[PATH_MAX + 200];
    const char *state;
    char *out;
    struct cordon_exec_outcome o;
    int fd;

    ensure();
    random_hex(token, 16);
    /* World-readable on the host: only the container's boundary can hide it. */
    snprintf(dir, sizeof(dir), "%s/canary-%.8s", shared, token);
    cr_assert_eq(mkdir(dir, 0755), 0);
    cr_assert_eq(chmod(dir, 0755), 0);
    snprintf(path, sizeof(path), "%s/canary.txt", dir);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    cr_assert_eq(write(fd, token, 32), 32);
    close(fd);
    state = provision(NULL);
    snprintf(script, sizeof(script), "cat %s; ls %s; cat /proc/1/cmdline", path, dir);
    o = sh(state, script, &out);
    {
        char *errtext = stream_text(&o.err);

        cr_assert(strstr(out, token) == NULL && strstr(errtext, token) == NULL,
                  "the host canary was read inside");
        cr_assert(strstr(errtext, "No such file") != NULL, "%s", errtext);
        cr_assert(strstr(out, "cordon-init") != NULL, "pid 1 is not cordon-init: %s", out);
        free(errtext);
    }
    cordon_exec_outcome_clear(&o);
    free(out);
}

Test(runc, denied_syscalls_fail_with_eperm)
{
    const char *state;
    char *out;
    struct cordon_exec_outcome o;

    ensure();
    state = provision(NULL);
    /* Compiled inside (python3-minimal has no ctypes): keyctl, unshare of a
     * user namespace, mount and bpf get EPERM; clone3 ENOSYS, so that libc
     * falls back to clone. */
    o = sh(state,
           "cat > /workspace/s.c <<'EOF'\n"
           "#define _GNU_SOURCE\n"
           "#include <errno.h>\n"
           "#include <sched.h>\n"
           "#include <stdio.h>\n"
           "#include <sys/mount.h>\n"
           "#include <sys/syscall.h>\n"
           "#include <unistd.h>\n"
           "static void show(const char *name, long r)\n"
           "{ printf(\"%s %ld %d\\n\", name, r, errno); errno = 0; }\n"
           "int main(void) {\n"
           "    show(\"keyctl\", syscall(SYS_keyctl, 0, 0, 0, 0, 0));\n"
           "    show(\"unshare\", unshare(CLONE_NEWUSER));\n"
           "    show(\"mount\", mount(\"none\", \"/tmp\", \"tmpfs\", 0, NULL));\n"
           "    show(\"bpf\", syscall(SYS_bpf, 0, NULL, 0));\n"
           "#ifdef SYS_clone3\n"
           "    show(\"clone3\", syscall(SYS_clone3, NULL, 0));\n"
           "#endif\n"
           "    return 0;\n"
           "}\n"
           "EOF\n"
           "cc -o /workspace/s /workspace/s.c && /workspace/s",
           &out);
    {
        char *errtext = stream_text(&o.err);

        cr_assert(o.status == CORDON_RUN_EXITED && o.exit_code == 0, "%s %s", out, errtext);
        free(errtext);
    }
    cr_assert(strstr(out, "keyctl -1 1\n") != NULL, "keyctl was not refused with EPERM: %s", out);
    cr_assert(strstr(out, "unshare -1 1\n") != NULL, "unshare was not refused with EPERM: %s",
              out);
    cr_assert(strstr(out, "mount -1 1\n") != NULL, "mount was not refused with EPERM: %s", out);
    cr_assert(strstr(out, "bpf -1 1\n") != NULL, "bpf was not refused with EPERM: %s", out);
    cr_assert(strstr(out, "clone3 -1 38\n") != NULL, "clone3 did not answer ENOSYS: %s", out);
    cordon_exec_outcome_clear(&o);
    free(out);
}

/*
 * Network "none" means no family reaches outside: AF_VSOCK (this VM's
 * hypervisor is one connect away), AF_PACKET, socketpair of a refused
 * family and a family dressed up with high bits all get EAFNOSUPPORT, a
 * netlink protocol other than NETLINK_ROUTE EPROTONOSUPPORT. What ordinary
 * programs use still works, netlink's interface list (lo only) included.
 */
Test(runc, socket_families_outside_the_allow_list_are_refused)
{
    const char *state;
    char *out;
    struct cordon_exec_outcome o;

    ensure();
    state = provision(NULL);
    o = sh(state, "cd /workspace && " TEST_SOCKETS_SCRIPT, &out);
    {
        char *errtext = stream_text(&o.err);

        cr_assert(o.status == CORDON_RUN_EXITED && o.exit_code == 0, "%s %s", out, errtext);
        free(errtext);
    }
    cr_expect(strstr(out, TEST_SOCKETS_ALLOWED) != NULL, "an allowed family was refused: %s", out);
    cr_expect(strstr(out, TEST_SOCKETS_REFUSED) != NULL,
              "a family outside the allow-list was not refused as the kernel would: %s", out);
    cr_expect(strstr(out, "\nifaces lo\n") != NULL, "the interface list is not lo alone: %s", out);
    cordon_exec_outcome_clear(&o);
    free(out);
}

/*
 * A program that takes write leases on a workspace file (SIGIO ignored, so
 * that only the kernel's 45 s lease-break time would end them), through
 * fcntl and through the raw syscall with high bits set in cmd, and leaves
 * a child of its own session holding the descriptor. The profile refuses
 * both; a checkpoint (export of the workspace), an export of the file's
 * directory and terminate all finish well inside the lease-break time.
 */
Test(runc, file_lease_is_refused_and_export_and_terminate_stay_bounded)
{
    const char *state;
    char *out;
    struct cordon_exec_outcome o;
    uint64_t t0;
    int fd, r;

    ensure();
    state = provision(NULL);
    o = sh(state,
           "mkdir -p /workspace/out && echo data > /workspace/out/leased && "
           "cat > /workspace/lease.c <<'EOF'\n"
           "#define _GNU_SOURCE\n"
           "#include <errno.h>\n#include <fcntl.h>\n#include <signal.h>\n#include <stdio.h>\n"
           "#include <stdlib.h>\n#include <sys/syscall.h>\n#include <unistd.h>\n"
           "int main(int argc, char **argv) {\n"
           "  int fd = open(argv[1], O_RDONLY), e1, e2;\n"
           "  long r1, r2;\n"
           "  signal(SIGIO, SIG_IGN);\n"
           "  r1 = fcntl(fd, F_SETLEASE, F_WRLCK); e1 = r1 < 0 ? errno : 0;\n"
           "  r2 = syscall(SYS_fcntl, fd, 0x100000000L | F_SETLEASE, (long)F_WRLCK);\n"
           "  e2 = r2 < 0 ? errno : 0;\n"
           "  printf(\"lease %ld %d raw %ld %d\\n\", r1, e1, r2, e2);\n"
           "  fflush(stdout);\n"
           "  if (fork() == 0) { setsid(); sleep(atoi(argv[2])); _exit(0); }\n"
           "  return 0;\n"
           "}\n"
           "EOF\n"
           "cc -o /workspace/lease /workspace/lease.c && /workspace/lease /workspace/out/leased 300",
           &out);
    cr_assert(o.status == CORDON_RUN_EXITED && o.exit_code == 0, "the lease program: %s", out);
    cr_expect(strstr(out, "lease -1 1 raw -1 1") != NULL,
              "a lease was not refused with EPERM both ways: %s", out);
    cordon_exec_outcome_clear(&o);
    free(out);

    t0 = cordon_now_monotonic_ms();
    fd = memfd_create("checkpoint", MFD_CLOEXEC);
    r = prov->export_tar(res, state, "", fd, &err);
    cr_expect_eq(r, 0, "checkpoint export: %s", err.message);
    close(fd);
    fd = memfd_create("collect", MFD_CLOEXEC);
    r = prov->export_tar(res, state, "out", fd, &err);
    cr_expect_eq(r, 0, "export of out: %s", err.message);
    close(fd);
    cr_expect_lt(cordon_now_monotonic_ms() - t0, 10000, "two exports took %llu ms",
                 (unsigned long long)(cordon_now_monotonic_ms() - t0));
    t0 = cordon_now_monotonic_ms();
    cr_expect_eq(prov->terminate(res, state, &err), 0, "terminate: %s", err.message);
    cr_expect_lt(cordon_now_monotonic_ms() - t0, 10000, "terminate took %llu ms",
                 (unsigned long long)(cordon_now_monotonic_ms() - t0));
}

/* The names of a tar stream in fd, "a b c" (rewound first; malloc'd). */
static char *tar_names(int fd)
{
    struct archive *a = archive_read_new();
    struct archive_entry *e;
    char *names = calloc(1, 4096);
    size_t len = 0;

    cr_assert(a != NULL && names != NULL && lseek(fd, 0, SEEK_SET) == 0);
    archive_read_support_format_tar(a);
    archive_read_support_format_empty(a);
    cr_assert_eq(archive_read_open_fd(a, fd, 10240), ARCHIVE_OK);
    while (archive_read_next_header(a, &e) == ARCHIVE_OK && len < 4000)
        len += (size_t)snprintf(names + len, 4096 - len, "%s%s", len ? " " : "",
                                archive_entry_pathname(e));
    archive_read_free(a);
    return names;
}

/*
 * Hard links: every provider stores each name of a multiply-linked file
 * as a regular file of its own, so a checkpoint restores both names with
 * the content (as two files, no longer linked).
 */
Test(runc, checkpoint_of_a_hard_link_restores_both_files)
{
    const char *first, *second;
    char *out;
    struct cordon_exec_outcome o;
    int fd;

    ensure();
    first = provision(NULL);
    o = sh(first, "cd /workspace && mkdir d && printf content > d/a && ln d/a d/b && ln d/a top",
           NULL);
    cr_assert(o.status == CORDON_RUN_EXITED && o.exit_code == 0, "making the links failed");
    cordon_exec_outcome_clear(&o);
    fd = memfd_create("checkpoint", MFD_CLOEXEC);
    cr_assert_eq(prov->export_tar(res, first, "", fd, &err), 0, "checkpoint export: %s",
                 err.message);
    cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
    second = provision(NULL);
    cr_assert_eq(prov->import_tar(res, second, "", fd, &err), 0, "restore: %s", err.message);
    close(fd);
    o = sh(second, "cd /workspace && cat d/a; echo; cat d/b; echo; cat top; echo; "
                   "stat -c '%h %s' d/a d/b top", &out);
    cr_expect(o.status == CORDON_RUN_EXITED && o.exit_code == 0, "reading back: %s", out);
    cr_expect_str_eq(out, "content\ncontent\ncontent\n1 7\n1 7\n1 7\n",
                     "the restored names differ: %s", out);
    cordon_exec_outcome_clear(&o);
    free(out);
    fd = memfd_create("collect", MFD_CLOEXEC);
    cr_assert_eq(prov->export_tar(res, first, "d", fd, &err), 0, "export of d: %s", err.message);
    out = tar_names(fd);
    cr_expect_str_eq(out, "a b", "export of d holds [%s]", out);
    free(out);
    close(fd);
}

/* ---- exec by entering the container (exec_path "setns") ------------------------------------ */

#define FILTER_MAX 4096

/* The lines of text that start with one of the prefixes, in order. */
static char *lines_with(const char *text, const char *const *prefixes, size_t n)
{
    char *out = calloc(1, strlen(text) + 1), *o = out;

    cr_assert_not_null(out);
    for (const char *line = text; line != NULL && *line != '\0';) {
        const char *end = strchrnul(line, '\n');

        for (size_t i = 0; i < n; i++)
            if (strncmp(line, prefixes[i], strlen(prefixes[i])) == 0) {
                memcpy(o, line, (size_t)(end - line));
                o += end - line;
                *o++ = '\n';
                break;
            }
        line = *end == '\n' ? end + 1 : NULL;
    }
    return out;
}

/* The confinement fields of a /proc/<pid>/status. */
static char *status_fields(const char *status)
{
    static const char *const fields[] = { "Uid:", "Gid:", "Groups:", "CapInh:", "CapPrm:",
                                          "CapEff:", "CapBnd:", "CapAmb:", "NoNewPrivs:",
                                          "Seccomp:", "Seccomp_filters:" };

    return lines_with(status, fields, sizeof(fields) / sizeof(fields[0]));
}

/* "ns mnt:[N]" lines of a host pid, as the command prints its own. */
static char *ns_lines(pid_t pid)
{
    static const char *const names[] = { "mnt", "pid", "net", "ipc", "uts", "cgroup", "user" };
    char *out = calloc(1, 1024);
    size_t len = 0;

    cr_assert_not_null(out);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char path[64], link[128] = "";

        snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, names[i]);
        cr_assert_gt(readlink(path, link, sizeof(link) - 1), 0, "%s: %s", path, strerror(errno));
        len += (size_t)snprintf(out + len, 1024 - len, "ns %s\n", link);
    }
    return out;
}

/* The seccomp program a process runs under (the newest filter), as the
 * kernel holds it: PTRACE_SECCOMP_GET_FILTER on the stopped process. */
static long seccomp_filter(pid_t pid, struct sock_filter *buf)
{
    int st;
    long n;

    cr_assert_eq(ptrace(PTRACE_SEIZE, pid, NULL, NULL), 0, "seize %d: %s", (int)pid,
                 strerror(errno));
    cr_assert_eq(ptrace(PTRACE_INTERRUPT, pid, NULL, NULL), 0);
    cr_assert_eq(waitpid(pid, &st, __WALL), pid);
    n = ptrace(PTRACE_SECCOMP_GET_FILTER, pid, (void *)0, buf);
    cr_assert_gt(n, 0, "PTRACE_SECCOMP_GET_FILTER %d: %s", (int)pid, strerror(errno));
    cr_assert_leq(n, FILTER_MAX);
    ptrace(PTRACE_DETACH, pid, NULL, NULL);
    return n;
}

/* The host pids in the execution's pids cgroup other than its init. */
static int container_pids(const char *id, pid_t init, pid_t *ret, int max)
{
    char path[PATH_MAX], *text, *p;
    int n = 0;

    snprintf(path, sizeof(path), "/sys/fs/cgroup/pids/cordon-%s/cgroup.procs", id);
    text = read_text(path);
    cr_assert_not_null(text, "%s", path);
    for (p = text; *p != '\0' && n < max;) {
        pid_t pid = (pid_t)strtol(p, &p, 10);

        if (pid > 0 && pid != init)
            ret[n++] = pid;
        while (*p == '\n')
            p++;
    }
    free(text);
    return n;
}

/* Run sh -c script through prov->exec with a pipe of ours as stdout; its
 * output in *ret_out (malloc'd), the pipe's inode in *ret_ino. */
static void exec_to_pipe(const char *state, const char *script, char **ret_out,
                         unsigned long *ret_ino)
{
    struct cordon_exec_io io = { .abi_version = CORDON_ABI_VERSION, .struct_size = sizeof(io),
                                 .stdin_fd = -1, .stderr_fd = -1, .cancel_fd = -1 };
    cJSON *req = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(req, "argv");
    char *request, *result = NULL, *out = calloc(1, 1 << 16);
    struct stat pst;
    int pipefd[2];
    ssize_t got = 0, k;

    cr_assert_not_null(out);
    cJSON_AddItemToArray(arr, cJSON_CreateString("sh"));
    cJSON_AddItemToArray(arr, cJSON_CreateString("-c"));
    cJSON_AddItemToArray(arr, cJSON_CreateString(script));
    cJSON_AddStringToObject(req, "cwd", "");
    request = cJSON_PrintUnformatted(req);
    cr_assert_eq(pipe2(pipefd, O_CLOEXEC), 0);
    io.stdout_fd = pipefd[1];
    /* The output fits the pipe's buffer: read it after the exec returned. */
    cr_assert_eq(prov->exec(res, state, request, &io, &result, &err), 0, "exec: %s",
                 err.message);
    close(pipefd[1]);
    while (got < (1 << 16) - 1 &&
           (k = read(pipefd[0], out + got, (size_t)((1 << 16) - 1 - got))) > 0)
        got += k;
    cr_assert(strstr(result, "\"exited\"") != NULL, "%s\n%s", result, out);
    cr_assert_eq(fstat(pipefd[0], &pst), 0);
    close(pipefd[0]);
    *ret_out = out;
    *ret_ino = (unsigned long)pst.st_ino;
    free(request);
    free(result);
    cJSON_Delete(req);
}

/*
 * A process started through exec is confined exactly as the container's
 * init, which runc itself started from config.json: the same credentials,
 * capability sets, no_new_privs and seccomp state, the same namespaces, the
 * same cgroups, and the very same seccomp program. The command also writes
 * straight into the host's pipe (no runtime relaying its output): the
 * path is the provider's own, not `runc exec`.
 */
Test(runc, exec_confinement_equals_the_init)
{
    const char *script =
        "setsid sleep 60 < /dev/null > /dev/null 2>&1 & "
        "cat /proc/self/status; "
        "for n in mnt pid net ipc uts cgroup user; do echo \"ns $(readlink /proc/self/ns/$n)\"; "
        /* The shell's fds, listed by a child while the shell only waits:
         * in a pipeline or a redirection of its own, the shell holds a
         * pipe end or a saved fd for a moment. */
        "done; echo \"fd1 $(readlink /proc/$$/fd/1)\"; "
        "sh -c 'ls /proc/$PPID/fd | tr \"\\\\n\" \" \"'; "
        "echo; echo '--cgroup'; cat /proc/self/cgroup; echo '--init-cgroup'; cat /proc/1/cgroup; "
        "echo '--env'; env | sort";
    struct sock_filter *init_prog = calloc(FILTER_MAX, sizeof(*init_prog));
    struct sock_filter *cmd_prog = calloc(FILTER_MAX, sizeof(*cmd_prog));
    char id[40], path[64], *out = NULL, fd1[64];
    char *init_status, *mine, *theirs, *ns, *cg, *init_cg, *env;
    const char *state;
    unsigned long ino;
    pid_t init, sleeper[4];
    int n;
    long ni, nc;

    ensure();
    state = provision(id);
    init = state_pid(state);
    exec_to_pipe(state, script, &out, &ino);
    /* Its output went into our pipe itself, and it holds nothing else. */
    snprintf(fd1, sizeof(fd1), "fd1 pipe:[%lu]\n", ino);
    cr_assert(strstr(out, fd1) != NULL, "stdout is not the host's pipe (%s): %s", fd1, out);
    cr_assert(strstr(out, "\n0 1 2 \n") != NULL, "descriptors beyond stdio: %s", out);

    /* Credentials, capabilities, no_new_privs, seccomp: as the init's. */
    snprintf(path, sizeof(path), "/proc/%d/status", (int)init);
    init_status = read_text(path);
    cr_assert_not_null(init_status);
    mine = status_fields(out);
    theirs = status_fields(init_status);
    cr_assert_str_eq(mine, theirs, "the command:\n%s\nthe init:\n%s", mine, theirs);
    cr_assert(strstr(mine, "CapBnd:\t0000000000000000") != NULL, "%s", mine);
    cr_assert(strstr(mine, "NoNewPrivs:\t1") != NULL && strstr(mine, "Seccomp:\t2") != NULL,
              "%s", mine);
    /* Namespaces and cgroups: the init's (the user namespace is the host's). */
    ns = ns_lines(init);
    cr_assert(strstr(out, ns) != NULL, "namespaces differ; the init's:\n%s\nthe command's:\n%s",
              ns, out);
    /* Sections of the output, cut apart: cgroups, the init's, the env. */
    cg = strstr(out, "--cgroup\n");
    init_cg = strstr(out, "--init-cgroup\n");
    env = strstr(out, "--env\n");
    cr_assert(cg != NULL && init_cg != NULL && env != NULL && cg < init_cg && init_cg < env,
              "%s", out);
    *init_cg = *env = '\0';
    cr_assert_str_eq(cg + strlen("--cgroup\n"), init_cg + strlen("--init-cgroup\n"),
                     "cgroups differ");
    /* The environment runc exec gives: config.json's PATH, the spec's, HOME. */
    env += strlen("--env\n");
    cr_assert(strstr(env, "CORDON_TEST=yes\nHOME=/\nPATH=/usr/local/bin:/usr/bin:/bin\n") != NULL,
              "%s", env);

    /* The background sleeper it left: the same seccomp program as the init,
     * instruction for instruction, and the same status and namespaces. */
    n = container_pids(id, init, sleeper, 4);
    cr_assert_eq(n, 1, "expected the init and one sleeper in the cgroup, found %d others", n);
    snprintf(path, sizeof(path), "/proc/%d/status", (int)sleeper[0]);
    free(mine);
    init_status = (free(init_status), read_text(path));
    cr_assert_not_null(init_status);
    mine = status_fields(init_status);
    cr_assert_str_eq(mine, theirs);
    free(ns);
    ns = ns_lines(sleeper[0]);
    cr_assert_str_eq(ns, ns_lines(init));
    ni = seccomp_filter(init, init_prog);
    nc = seccomp_filter(sleeper[0], cmd_prog);
    cr_assert_eq(nc, ni, "seccomp programs differ in length: %ld vs the init's %ld", nc, ni);
    cr_assert_eq(memcmp(cmd_prog, init_prog, (size_t)ni * sizeof(*init_prog)), 0,
                 "the seccomp program differs from the one runc installed in the init");

    free(init_prog);
    free(cmd_prog);
    free(init_status);
    free(mine);
    free(theirs);
    free(ns);
    free(out);
}

/*
 * A failure inside the entering child comes back as an error naming its
 * step: here a cwd the sandbox user may not enter (root's, 0700, made from
 * the host). It is entered as that user; runc 1.1's exec would enter it as
 * root first and leave the command in a directory it cannot read.
 */
Test(runc, exec_into_a_cwd_the_user_cannot_enter_fails_naming_the_step)
{
    const char *argv[] = { "true", NULL };
    struct cordon_exec_outcome o = { 0 };
    struct cordon_drive_opts opts;
    char path[PATH_MAX];
    const char *state;

    ensure();
    state = provision(NULL);
    snprintf(path, sizeof(path), "/proc/%d/root/workspace/closed", (int)state_pid(state));
    cr_assert_eq(mkdir(path, 0700), 0, "%s: %s", path, strerror(errno));
    cordon__drive_opts_init(&opts);
    opts.host = &host;
    opts.provider = prov;
    opts.resource = res;
    opts.state_json = state;
    opts.request_json = "{\"argv\": [\"true\"], \"cwd\": \"closed\"}";
    opts.timeout_ms = 30000;
    cr_assert_neq(cordon__drive_exec(&opts, &o, &err), 0, "the exec ran in a closed directory");
    cr_assert(strstr(err.message, "working directory") != NULL &&
              strstr(err.message, "Permission denied") != NULL, "%s", err.message);
    cordon_exec_outcome_clear(&o);
    /* The execution is still usable. */
    cr_assert_eq(drive(state, argv, 30000, 1 << 20, &o), 0, "%s", err.message);
    cr_assert_eq(o.exit_code, 0);
    cordon_exec_outcome_clear(&o);
}

/*
 * Any runtime but runc and crun is entered only through its own exec
 * (runsc: entering its namespaces would bypass gVisor). A runtime that
 * names itself otherwise in --version, wrapping runc, takes that path: the
 * command's output comes through the runtime's own pipe, not ours, and
 * the process is as confined.
 */
Test(runc, other_runtimes_are_entered_through_their_exec)
{
    static const char wrapper_text[] =
        "#!/bin/sh\n"
        "if [ \"$1\" = --version ]; then printf 'othert version 1.1.5\\nspec: 1.0.2-dev\\n'; exit 0; fi\n"
        "exec runc \"$@\"\n";
    char wrapper[PATH_MAX + 32], config[2 * PATH_MAX + 128], fd1[64], *out = NULL, *mine;
    const char *state;
    unsigned long ino;
    int fd;

    require_setup();
    snprintf(wrapper, sizeof(wrapper), "%s/othert", shared);
    fd = open(wrapper, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, wrapper_text, strlen(wrapper_text)), (ssize_t)strlen(wrapper_text));
    close(fd);
    snprintf(config, sizeof(config), "{\"image\": \"%s\", \"runtime_path\": \"%s\"}", image,
             wrapper);
    ensure_with(config);
    state = provision(NULL);
    exec_to_pipe(state,
                 "echo \"fd1 $(readlink /proc/$$/fd/1)\"; grep -E '^(Cap|NoNewPrivs|Seccomp)' "
                 "/proc/self/status",
                 &out, &ino);
    snprintf(fd1, sizeof(fd1), "fd1 pipe:[%lu]\n", ino);
    cr_assert(strstr(out, "fd1 pipe:[") != NULL && strstr(out, fd1) == NULL,
              "the command wrote into our pipe: the runtime's exec was bypassed: %s", out);
    mine = status_fields(out);
    cr_assert(strstr(mine, "CapBnd:\t0000000000000000") != NULL &&
              strstr(mine, "NoNewPrivs:\t1") != NULL && strstr(mine, "Seccomp:\t2") != NULL,
              "%s", mine);
    free(mine);
    free(out);
}

struct exec_job {
    const char *state;
    int rc;
    struct cordon_exec_outcome o;
};

static void *exec_thread(void *arg)
{
    static const char *const argv[] = { "sleep", "2", NULL };
    struct exec_job *j = arg;

    j->rc = drive(j->state, argv, 30000, 1 << 20, &j->o);
    return NULL;
}

/* The first line of a host /proc file that starts with key, value only. */
static long status_value(pid_t pid, const char *key)
{
    char path[64], *text, *at;
    long v = -1;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    text = read_text(path);
    if (text != NULL && (at = strstr(text, key)) != NULL)
        v = strtol(at + strlen(key), NULL, 10);
    free(text);
    return v;
}

/*
 * The process that relays the command's exit stays on the host's side: in
 * no cgroup of the container and outside its pid namespace, where nothing
 * inside can name it; and neither it nor the command before its execve
 * shows the host's command line (only "cordon-enter"). Everything is read
 * while the exec runs and asserted after it returned (an assertion must not
 * end the test under a running exec).
 */
Test(runc, exec_relay_stays_outside_and_shows_no_host_argv)
{
    struct exec_job job = { 0 };
    char id[40], path[64], *cmdline = NULL, *status = NULL, *line;
    pid_t init, inside[4], relay = 0;
    char *own_before = read_text("/proc/self/cmdline"), *own_after;
    pthread_t t;
    int n = 0;

    ensure_setns();
    job.state = provision(id);
    init = state_pid(job.state);
    cr_assert_eq(pthread_create(&t, NULL, exec_thread, &job), 0);
    /* cordon-init --exec and sleep: wait for them to be in the cgroup. */
    for (int i = 0; i < 200 && n < 2; i++) {
        nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
        n = container_pids(id, init, inside, 4);
    }
    for (int i = 0; i < n && relay == 0; i++) {
        long ppid = status_value(inside[i], "PPid:");

        if (ppid > 0 && ppid != init)
            relay = (pid_t)ppid;
    }
    if (relay > 0) {
        snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)relay);
        cmdline = read_text(path);
        snprintf(path, sizeof(path), "/proc/%d/status", (int)relay);
        status = read_text(path);
    }
    pthread_join(t, NULL);

    cr_assert_eq(n, 2, "the command did not start (%d processes besides the init)", n);
    cr_assert_gt(relay, 0, "no process outside the container is a parent of the command");
    cr_assert(cmdline != NULL && status != NULL);
    cr_assert_str_eq(cmdline, "cordon-enter", "the relay shows \"%s\"", cmdline);
    /* One pid namespace only (the host's): nothing inside can see it. */
    line = strstr(status, "NSpid:\t");
    cr_assert_not_null(line, "%s", status);
    line[strcspn(line, "\n")] = '\0';
    cr_assert_null(strchr(line + 7, '\t'), "the relay is in a pid namespace below the host's: %s",
                   line);
    cr_assert_eq(job.rc, 0, "%s", err.message);
    cr_assert_eq(job.o.status, CORDON_RUN_EXITED);
    cr_assert_eq(job.o.exit_code, 0);
    /* The relay's changes were made on its own copy of the host's memory:
     * the host keeps its command line and stays dumpable. */
    own_after = read_text("/proc/self/cmdline");
    cr_assert(own_before != NULL && own_after != NULL);
    cr_assert_str_eq(own_after, own_before, "the host's own command line was overwritten");
    cr_assert_eq(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 1, "the host was made non-dumpable");
    cordon_exec_outcome_clear(&job.o);
    free(own_before);
    free(own_after);
    free(cmdline);
    free(status);
}

/* ---- the rootfs cache -------------------------------------------------------------------- */

/* A tiny root filesystem tarball in dir: returns its digest (65 bytes). */
static void tiny_rootfs(const char *tar_path, char digest[65])
{
    static const char *const dirs[] = { "etc", "usr", "usr/bin", "tmp" };
    struct archive *a = archive_write_new();
    struct archive_entry *e;
    struct cordon_error e2;
    int fd = open(tar_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

    cr_assert_geq(fd, 0);
    archive_write_set_format_pax_restricted(a);
    cr_assert_eq(archive_write_open_fd(a, fd), ARCHIVE_OK);
    for (size_t i = 0; i < 4; i++) {
        e = archive_entry_new();
        archive_entry_set_pathname(e, dirs[i]);
        archive_entry_set_filetype(e, AE_IFDIR);
        archive_entry_set_perm(e, 0755);
        cr_assert_eq(archive_write_header(a, e), ARCHIVE_OK);
        archive_entry_free(e);
    }
    e = archive_entry_new();
    archive_entry_set_pathname(e, "bin");
    archive_entry_set_filetype(e, AE_IFLNK);
    archive_entry_set_symlink(e, "/usr/bin");
    cr_assert_eq(archive_write_header(a, e), ARCHIVE_OK);
    archive_entry_free(e);
    cr_assert_eq(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
    cordon_error_init(&e2);
    cr_assert_eq(cordon_sha256_fd(fd, 0, digest, NULL, &e2), 0);
    close(fd);
}

struct concurrent {
    const char *spec;
    char *state;
    int rc;
    struct cordon_error err;
};

static void *provision_thread(void *arg)
{
    struct concurrent *c = arg;

    cordon_error_init(&c->err);
    c->rc = prov->provision(res, c->spec, &c->state, &c->err);
    return NULL;
}

static void private_state_dir(void)
{
    char tmpl[PATH_MAX];

    snprintf(tmpl, sizeof(tmpl), "%s/private-XXXXXX", shared);
    cr_assert_not_null(mkdtemp(tmpl));
    private_dir = strdup(tmpl);
    /* A host of its own: a cold cache in its own state directory. */
    host.state_dir = private_dir;
}

Test(runc, concurrent_first_use_unpacks_once)
{
    static const struct limits l = { 64, 8, 16, 0, 0 };
    char tar[PATH_MAX + 16], digest[65], ref[PATH_MAX + 96], ids[2][40], cache[PATH_MAX + 96];
    struct concurrent c[2];
    pthread_t t[2];
    int entries = 0;
    struct dirent *de;
    DIR *d;

    require_setup();
    private_state_dir();
    snprintf(tar, sizeof(tar), "%s/tiny.tar", private_dir);
    tiny_rootfs(tar, digest);
    snprintf(ref, sizeof(ref), "%s@sha256:%s", tar, digest);
    ensure_with("{}");
    for (int i = 0; i < 2; i++) {
        new_id(ids[i], sizeof(ids[i]));
        memset(&c[i], 0, sizeof(c[i]));
        c[i].spec = spec(ids[i], ref, "host", &l);
        cr_assert_eq(pthread_create(&t[i], NULL, provision_thread, &c[i]), 0);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        if (c[i].state != NULL)
            track(c[i].state);
        free((char *)c[i].spec);
        cr_assert_eq(c[i].rc, 0, "provision %d: %s", i, c[i].err.message);
    }
    /* One tree for the digest, its record, its lock; no temp dir left. */
    snprintf(cache, sizeof(cache), "%s/providers/runc/rootfs", private_dir);
    d = opendir(cache);
    cr_assert_not_null(d);
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.' && (de->d_name[1] == '\0' || strcmp(de->d_name, "..") == 0))
            continue;
        cr_assert_eq(strncmp(de->d_name, digest, 64), 0, "unexpected \"%s\" in the cache %s",
                     de->d_name, cache);
        entries++;
    }
    closedir(d);
    cr_assert_eq(entries, 3, "the cache holds %d entries, not tree + record + lock", entries);
}

Test(runc, bad_image_references_are_refused_and_leave_nothing)
{
    static const struct limits l = { 64, 8, 16, 0, 0 };
    char tar[PATH_MAX + 16], digest[65], ref[PATH_MAX + 96], id[40], *s, *state = NULL;
    char cache[PATH_MAX + 96], bundles[PATH_MAX + 96];
    enum { WRONG_DIGEST, UNPINNED, SHORT_DIGEST, RELATIVE };
    static const struct {
        int kind;
        int code;
        const char *fragment;
    } rows[] = {
        { WRONG_DIGEST, CORDON_E_UNSAFE, "not the pinned" },
        { UNPINNED, CORDON_E_INVALID, "not pinned" },
        { SHORT_DIGEST, CORDON_E_INVALID, "64 lowercase hex" },
        { RELATIVE, CORDON_E_INVALID, "absolute" },
    };

    require_setup();
    private_state_dir();
    snprintf(tar, sizeof(tar), "%s/tiny.tar", private_dir);
    tiny_rootfs(tar, digest);
    ensure_with("{}");
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        /* A digest that differs from the file's in its last digit. */
        char wrong[65];

        memcpy(wrong, digest, 65);
        wrong[63] = wrong[63] == '0' ? '1' : '0';
        switch (rows[i].kind) {
        case WRONG_DIGEST: snprintf(ref, sizeof(ref), "%s@sha256:%s", tar, wrong); break;
        case UNPINNED: snprintf(ref, sizeof(ref), "%s", tar); break;
        case SHORT_DIGEST: snprintf(ref, sizeof(ref), "%s@sha256:%.60s", tar, digest); break;
        default: snprintf(ref, sizeof(ref), "relative.tar@sha256:%s", digest); break;
        }
        new_id(id, sizeof(id));
        s = spec(id, ref, "host", &l);
        cordon_error_init(&err);
        cr_assert_eq(prov->provision(res, s, &state, &err), rows[i].code, "%s: %s", ref,
                     err.message);
        cr_assert(strstr(err.message, rows[i].fragment) != NULL, "%s: %s", ref, err.message);
        free(s);
        cr_assert_not(runtime_knows(id));
    }
    snprintf(cache, sizeof(cache), "%s/providers/runc/rootfs/%s", private_dir, digest);
    cr_assert_not(exists(cache), "a tree was published for a digest that did not match");
    snprintf(bundles, sizeof(bundles), "%s/providers/runc/bundles", private_dir);
    cr_assert(!exists(bundles) || rmdir(bundles) == 0, "bundles were left in %s", bundles);
}

/* ---- main: one state dir for the run, and the leftover check ------------------------------ */

/* Whatever of this run's executions is left: containers, cgroups, mounts. */
static int leftovers(const char *dir)
{
    char path[PATH_MAX + 16], line[256];
    FILE *f;
    int n = 0;

    snprintf(path, sizeof(path), "%s/ids", dir);
    f = fopen(path, "re");
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        DIR *d = opendir("/sys/fs/cgroup");
        struct dirent *de;
        char state_path[300];
        struct stat st;

        line[strcspn(line, "\n")] = '\0';
        snprintf(state_path, sizeof(state_path), RUNTIME_ROOT "/%s", line);
        if (stat(state_path, &st) == 0) {
            fprintf(stderr, "leftover: container %s under " RUNTIME_ROOT "\n", line);
            n++;
        }
        while (d != NULL && (de = readdir(d)) != NULL) {
            char cg[PATH_MAX];

            snprintf(cg, sizeof(cg), "/sys/fs/cgroup/%s/cordon-%s", de->d_name, line);
            if (de->d_name[0] != '.' && stat(cg, &st) == 0) {
                fprintf(stderr, "leftover: cgroup %s\n", cg);
                n++;
            }
        }
        if (d != NULL)
            closedir(d);
    }
    if (f != NULL)
        fclose(f);
    f = fopen("/proc/self/mountinfo", "re");
    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        if (strstr(line, dir) != NULL) {
            fprintf(stderr, "leftover: mount %s", line);
            n++;
        }
    if (f != NULL)
        fclose(f);
    return n;
}

static char *make_shared(void)
{
    char tmpl[PATH_MAX], link_dir[PATH_MAX + 16], link[PATH_MAX + 32], config[PATH_MAX + 32];
    char so[PATH_MAX];
    const char *img = getenv("CORDON_RUNC_IMAGE");
    FILE *f;

    snprintf(tmpl, sizeof(tmpl), "%s/cordon-runc-tests.XXXXXX", env_or("TMPDIR", "/tmp"));
    /* 0711: the canary test's world-readable directory lives inside. */
    if (mkdtemp(tmpl) == NULL || chmod(tmpl, 0711) != 0)
        return NULL;
    /* The cordon command finds runc.so in this directory, with the
     * fixtures below beside it. */
    snprintf(link_dir, sizeof(link_dir), "%s/providers", tmpl);
    snprintf(link, sizeof(link), "%s/runc.so", link_dir);
    if (mkdir(link_dir, 0755) != 0 ||
        realpath(env_or("CORDON_RUNC_PROVIDER", ".libs/runc.so"), so) == NULL ||
        symlink(so, link) != 0)
        fprintf(stderr, "runc-tests: cannot link runc.so into %s\n", link_dir);
    /* ...and the twoface fixture beside it (make check builds it). */
    snprintf(link, sizeof(link), "%s/twoface.so", link_dir);
    if (realpath(env_or("CORDON_TWOFACE_PROVIDER", "tests/fixtures/.libs/twoface.so"), so) == NULL ||
        symlink(so, link) != 0)
        fprintf(stderr, "runc-tests: cannot link twoface.so into %s\n", link_dir);
    /* ...and memlax, runc with a memory limit it does not apply, and its
     * siblings, each with another dodge of the host's limit checks. */
    for (size_t i = 0; i < sizeof(lax_fixtures) / sizeof(lax_fixtures[0]); i++) {
        char built[PATH_MAX];

        snprintf(link, sizeof(link), "%s/%s.so", link_dir, lax_fixtures[i]);
        snprintf(built, sizeof(built), "tests/fixtures/.libs/%s.so", lax_fixtures[i]);
        if (realpath(built, so) == NULL || symlink(so, link) != 0)
            fprintf(stderr, "runc-tests: cannot link %s.so into %s\n", lax_fixtures[i], link_dir);
    }
    snprintf(config, sizeof(config), "%s/cli-config.json", tmpl);
    f = fopen(config, "we");
    if (f != NULL) {
        fprintf(f, "{\"provider_configs\": {\"runc\": {\"image\": \"%s\"}", img != NULL ? img : "");
        for (size_t i = 0; i < sizeof(lax_fixtures) / sizeof(lax_fixtures[0]); i++)
            fprintf(f, ", \"%s\": {\"image\": \"%s\"}", lax_fixtures[i], img != NULL ? img : "");
        fprintf(f, "}}\n");
        fclose(f);
    }
    return strdup(tmpl);
}

CORDON_EXTERN int main(int argc, char **argv);

CORDON_EXTERN int main(int argc, char **argv)
{
    struct criterion_test_set *tests = criterion_initialize();
    char *dir = NULL;
    int rc = 1, left;

    /* Only the parent gets here: a worker runs its test inside initialize. */
    dir = make_shared();
    if (dir == NULL || setenv(ENV_SHARED, dir, 1) != 0) {
        fprintf(stderr, "runc-tests: cannot make the shared state directory\n");
        goto out;
    }
    if (criterion_handle_args(argc, argv, true))
        rc = criterion_run_all_tests(tests) ? 0 : 1;
    else
        rc = 0;
    left = leftovers(dir);
    if (left > 0) {
        fprintf(stderr, "runc-tests: %d leftover(s) of this run\n", left);
        rc = 1;
    }
out:
    if (dir != NULL)
        cordon_fs_remove_tree_path(dir, NULL);
    free(dir);
    criterion_finalize(tests);
    return rc;
}

/* ---- one uid per execution ------------------------------------------------------- */

Test(runc, each_execution_has_a_uid_and_per_user_limits_of_its_own)
{
    const char *a, *b;
    char *out = NULL, want[64], *forged;
    struct cordon_exec_outcome o;
    uid_t ua, ub;
    cJSON *doc;
    int n = 0;

    ensure();
    a = provision(NULL);
    b = provision(NULL);
    ua = state_uid(a);
    ub = state_uid(b);
    cr_assert_neq(ua, ub, "two executions share uid %u", (unsigned)ua);
    cr_assert(uid_lock_exists(ua) && uid_lock_exists(ub));
    /* A holds every inotify instance its per-user limit allows, in the background... */
    o = sh(a, TEST_INOTIFY_PROGRAM "setsid /tmp/ino hold </dev/null >/dev/null 2>/tmp/err & "
              "for i in $(seq 200); do [ -s /tmp/n ] && break; sleep 0.05; done; "
              "cat /tmp/n /tmp/err; echo; id -u", &out);
    cr_assert_eq(o.status, CORDON_RUN_EXITED);
    cordon_exec_outcome_clear(&o);
    snprintf(want, sizeof(want), "\n%u\n", (unsigned)ua);
    cr_assert(sscanf(out, "%d", &n) == 1 && n > 0 && strstr(out, want) != NULL, "A: %s", out);
    free(out);
    /* ...and B, another uid, still gets one. */
    o = sh(b, TEST_INOTIFY_PROGRAM "/tmp/ino try; id -u", &out);
    cordon_exec_outcome_clear(&o);
    snprintf(want, sizeof(want), "1\n%u\n", (unsigned)ub);
    cr_assert_str_eq(out, want, "B, while A held %d inotify instances: %s", n, out);
    free(out);
    /* A state that names another execution's uid is refused. */
    doc = cJSON_Parse(b);
    cJSON_ReplaceItemInObject(doc, "uid", cJSON_CreateNumber((double)ua));
    cJSON_ReplaceItemInObject(doc, "gid", cJSON_CreateNumber((double)ua));
    forged = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    {
        const char *argv[] = { "true", NULL };
        struct cordon_exec_outcome f = { 0 };

        cr_assert_lt(drive(forged, argv, 30000, 1u << 20, &f), 0);
        cr_assert(strstr(err.message, "state.uid") != NULL, "%s", err.message);
        cordon_exec_outcome_clear(&f);
    }
    free(forged);
    /* terminate gives the uid back */
    cr_assert_eq(prov->terminate(res, a, &err), 0, "%s", err.message);
    cr_assert_not(uid_lock_exists(ua), "uid %u still taken after terminate", (unsigned)ua);
}

/* ---- the resident agent (exec_path "agent") ------------------------------------------------ */

/*
 * Code inside the sandbox tries every way to the agent's channel
 * (tests/common/hostile-agent.h): none may reach anything, and the agent
 * must serve the next exec. (ptrace, process_vm_readv and pidfd_getfd are
 * also refused by the seccomp profile: a second wall, not the one tested
 * by /proc/1/fd.)
 */
Test(runc, code_inside_cannot_reach_the_agents_channel)
{
    const char *state;
    char path[PATH_MAX], *out = NULL, *errtext;
    struct cordon_exec_outcome o;
    pid_t init;

    ensure();
    state = provision(NULL);
    init = state_pid(state);
    cr_assert(strstr(state, "\"agent\":true") != NULL, "not provisioned with the agent: %s", state);
    snprintf(path, sizeof(path), "/proc/%d/root/workspace/hostile.c", (int)init);
    {
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

        cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
        cr_assert_eq(write(fd, test_hostile_agent_c, sizeof(test_hostile_agent_c) - 1),
                     (ssize_t)sizeof(test_hostile_agent_c) - 1);
        close(fd);
    }
    o = sh(state, "cc -o /tmp/hostile /workspace/hostile.c && /tmp/hostile", &out);
    errtext = stream_text(&o.err);
    cr_assert(strstr(out, "control ok") != NULL,
              "pidfd_getfd of the program's own child failed, the test proves nothing: %s %s",
              out, errtext);
    cr_assert(o.status == CORDON_RUN_EXITED && o.exit_code == 0, "status %s exit %d: %s %s",
              cordon_run_status_name(o.status), o.exit_code, out, errtext);
    cr_assert(strstr(out, "reached 0") != NULL, "%s", out);
    cordon_exec_outcome_clear(&o);
    free(out);
    free(errtext);
    /* The agent is the same process and still serves. */
    cr_assert_eq(kill(init, 0), 0, "the agent (pid %d) is gone", (int)init);
    o = sh(state, "echo still", &out);
    cr_assert(o.status == CORDON_RUN_EXITED && o.exit_code == 0 && strcmp(out, "still\n") == 0,
              "%s", out);
    cordon_exec_outcome_clear(&o);
    free(out);
}

/*
 * Run a script of tests/common/hostile-init.h in a fresh execution: it
 * must end normally and print `last`, PID 1's limits must have stayed out
 * of its reach, and the init must serve the next exec.
 */
static void hostile_init_survived(const char *script, const char *last)
{
    const char *state;
    char *out = NULL;
    struct cordon_exec_outcome o;
    pid_t init;

    ensure();
    state = provision(NULL);
    init = state_pid(state);
    o = sh(state, script, &out);
    cr_assert(o.status == CORDON_RUN_EXITED && o.exit_code == 0 && strstr(out, last) != NULL,
              "status %s exit %d: %s", cordon_run_status_name(o.status), o.exit_code, out);
    cr_expect(strstr(out, "SET") == NULL, "code inside changed PID 1's limits: %s", out);
    cordon_exec_outcome_clear(&o);
    free(out);
    cr_assert_eq(kill(init, 0), 0, "the init (pid %d) is gone", (int)init);
    o = sh(state, "echo still", &out);
    cr_assert(o.status == CORDON_RUN_EXITED && strcmp(out, "still\n") == 0, "%s", out);
    cordon_exec_outcome_clear(&o);
    free(out);
}

/*
 * Code inside cannot end its own sandbox through PID 1's limits: the
 * seccomp profile refuses prlimit on any other process, and PID 1 takes no
 * stop signal from anyone, so even a stop signal that arrives without its
 * siginfo ends nothing.
 */
Test(runc, code_inside_cannot_stop_its_sandbox_through_pid1s_limits)
{
    hostile_init_survived(TEST_HOSTILE_INIT_STOP, "alive");
}

/* Nor starve the agent of descriptors: the next exec is served. */
Test(runc, code_inside_cannot_starve_the_agent_of_descriptors)
{
    hostile_init_survived(TEST_HOSTILE_INIT_NOFILE, "done");
}

/*
 * The observer's "reach" in a real sandbox (docs/observation.md): a
 * process an earlier exec left running (its own session, so the agent's
 * kill of the command's group missed it) is neither PID 1 nor in the
 * observer's exec's tree, and is listed; PID 1's limits cannot be read.
 */
Test(runc, observer_lists_a_process_an_earlier_exec_left_running)
{
    const char *state;
    char path[PATH_MAX], *out = NULL;
    struct cordon_exec_outcome o;
    const cJSON *reach, *other;
    cJSON *report;
    bool sleep_listed = false;
    int in, dst;
    pid_t init;

    ensure();
    state = provision(NULL);
    init = state_pid(state);
    snprintf(path, sizeof(path), "/proc/%d/root/workspace/cordon-observe", (int)init);
    in = open(observer, O_RDONLY | O_CLOEXEC);
    dst = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
    cr_assert(in >= 0 && dst >= 0, "%s: %s", path, strerror(errno));
    for (;;) {
        char buf[65536];
        ssize_t n = read(in, buf, sizeof(buf));

        cr_assert_geq(n, 0);
        if (n == 0)
            break;
        cr_assert_eq(write(dst, buf, (size_t)n), n);
    }
    close(in);
    close(dst);
    o = sh(state, "setsid sleep 60 </dev/null >/dev/null 2>&1 & sleep 0.3; echo left", &out);
    cr_assert(o.status == CORDON_RUN_EXITED && strcmp(out, "left\n") == 0, "%s", out);
    cordon_exec_outcome_clear(&o);
    free(out);
    o = sh(state, "/workspace/cordon-observe", &out);
    cr_assert(o.status == CORDON_RUN_EXITED && o.exit_code == 0, "observer: %s", out);
    report = cJSON_Parse(out);
    reach = cJSON_GetObjectItemCaseSensitive(report, "reach");
    cr_assert(cJSON_IsObject(reach), "no reach in %.300s", out);
    cr_expect(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(
                  cJSON_GetObjectItemCaseSensitive(reach, "pid1"), "set_ok")),
              "PID 1's limits could be set: %.300s", out);
    cJSON_ArrayForEach(other, cJSON_GetObjectItemCaseSensitive(reach, "others"))
        sleep_listed |= strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(other, "comm"))
                                   ?: "", "sleep") == 0;
    cr_expect(sleep_listed, "the sleep left running is not among the others: %.600s", out);
    cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(reach, "others_count")), 1,
                 "%.600s", out);
    cJSON_Delete(report);
    cordon_exec_outcome_clear(&o);
    free(out);
}

/* The agent killed from the host in the middle of an exec: a typed error,
 * and nothing of the execution left (the provider destroyed it). */
Test(runc, killed_agent_fails_the_exec_closed)
{
    struct exec_job job = { 0 };
    char id[40], path[PATH_MAX];
    pthread_t t;
    pid_t init, inside[4];
    int n = 0;

    ensure();
    job.state = provision(id);
    init = state_pid(job.state);
    cr_assert_eq(pthread_create(&t, NULL, exec_thread, &job), 0);
    /* Once the sleep runs beside the init (asserted after the join). */
    snprintf(path, sizeof(path), "/sys/fs/cgroup/pids/cordon-%s/cgroup.procs", id);
    for (int i = 0; i < 500 && n < 1; i++) {
        char *procs;

        nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
        if ((procs = read_text(path)) == NULL)
            break;
        free(procs);
        n = container_pids(id, init, inside, 4);
    }
    kill(init, SIGKILL);
    pthread_join(t, NULL);
    cr_assert_eq(n, 1, "the command did not start (%d processes besides the init): rc %d %s", n,
                 job.rc, err.message);
    cr_assert_eq(job.rc, CORDON_E_UNAVAILABLE, "rc %d status %s signal %d after %llu ms: %s",
                 job.rc, cordon_run_status_name(job.o.status), job.o.signal,
                 (unsigned long long)job.o.duration_ms, err.message);
    cr_assert(strstr(err.message, "agent") != NULL, "%s", err.message);
    cordon_exec_outcome_clear(&job.o);
    cr_assert_not(runtime_knows(id), "the runtime still knows %s", id);
    cr_assert_eq(cgroups_left(id), 0, "cgroups of %s remain", id);
    /* Its parent (not this process) reaps it: wait for that. */
    snprintf(path, sizeof(path), "/proc/%d", (int)init);
    for (int i = 0; i < 100 && exists(path); i++)
        nanosleep(&(struct timespec){ 0, 20 * 1000 * 1000 }, NULL);
    if (exists(path)) {
        char stat_path[PATH_MAX], *stat;

        snprintf(stat_path, sizeof(stat_path), "%s/stat", path);
        stat = read_text(stat_path);
        cr_assert_fail("the init %d is still there: %s", (int)init, stat ? stat : "?");
    }
}

/* The same results through the agent and through setns, side by side. */
Test(runc, agent_and_setns_give_the_same_results)
{
    static const char *const scripts[] = {
        "echo out; echo err >&2; exit 3", "kill -TERM $$", "kill -KILL $$",
        "echo $CORDON_TEST $HOME; pwd; [ \"$(id -u)\" -ne 0 ] && echo not root", "exit 137",
    };
    char *results[2][sizeof(scripts) / sizeof(scripts[0])];

    for (int pass = 0; pass < 2; pass++) {
        const char *state;

        if (pass == 0)
            ensure();
        else
            ensure_setns();
        state = provision(NULL);
        for (size_t i = 0; i < sizeof(scripts) / sizeof(scripts[0]); i++) {
            char *out = NULL, *errtext;
            struct cordon_exec_outcome o = sh(state, scripts[i], &out);

            errtext = stream_text(&o.err);
            cr_assert(asprintf(&results[pass][i], "%s %d %d [%s] [%s]",
                               cordon_run_status_name(o.status), o.exit_code, o.signal, out,
                               errtext) > 0);
            cordon_exec_outcome_clear(&o);
            free(out);
            free(errtext);
        }
    }
    for (size_t i = 0; i < sizeof(scripts) / sizeof(scripts[0]); i++) {
        cr_expect_str_eq(results[0][i], results[1][i], "%s: agent %s, setns %s", scripts[i],
                         results[0][i], results[1][i]);
        free(results[0][i]);
        free(results[1][i]);
    }
}

/* ---- a sandbox frozen from the host --------------------------------------------- */

static void write_text(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);

    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text), "%s: %s", path,
                 strerror(errno));
    close(fd);
}

/* Freeze the execution's own freezer cgroup (v1) and wait until it is. */
static void freeze_execution(const char *id)
{
    char *text = NULL;

    snprintf(frozen_file, sizeof(frozen_file), "/sys/fs/cgroup/freezer/cordon-%s/freezer.state",
             id);
    cr_assert(exists(frozen_file), "%s: no freezer cgroup (this test needs cgroup v1)",
              frozen_file);
    write_text(frozen_file, "FROZEN");
    for (int i = 0; i < 100; i++) {
        free(text);
        text = read_text(frozen_file);
        if (text != NULL && strncmp(text, "FROZEN", 6) == 0)
            break;
        nanosleep(&(struct timespec){ 0, 50 * 1000 * 1000 }, NULL);
    }
    /* A freeze can stay FREEZING (a task the freezer cannot catch yet):
     * what a host sees too, and as much ours to end. */
    cr_assert(text != NULL && (strncmp(text, "FROZEN", 6) == 0 || strncmp(text, "FREEZING", 8) == 0),
              "%s: %s", frozen_file, text != NULL ? text : "unreadable");
    free(text);
}

/*
 * A sandbox whose every process was frozen from the host side is still
 * ours to end: exec gives a typed answer near its timeout (the host's
 * clock), and terminate thaws before it kills, within a bound, leaving
 * no container, cgroup or process. Without an exec first, terminate does
 * not wait out a kill that a frozen init cannot act on (5 s) before it
 * thaws: terminate_ms is the tighter bound. how: its freezer cgroup
 * frozen, or SIGSTOP to each of its processes.
 */
/* SIGSTOP each of pids, the execution's, through a pidfd checked to be
 * in its cgroup once taken; wait until each is stopped. */
static void stop_execution(const char *id, const pid_t *pids, int n)
{
    for (int i = 0; i < n; i++) {
        int fd = (int)syscall(SYS_pidfd_open, pids[i], 0);
        char path[64], *cg;
        bool ours;

        cr_assert_geq(fd, 0, "pidfd_open %d: %s", (int)pids[i], strerror(errno));
        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pids[i]);
        cg = read_text(path);
        ours = cg != NULL && strstr(cg, id) != NULL;
        free(cg);
        if (!ours) {
            close(fd);
            cr_assert_fail("pid %d is not in the cgroup of %s", (int)pids[i], id);
        }
        stopped_fds[n_stopped++] = fd;
        cr_assert_eq(syscall(SYS_pidfd_send_signal, fd, SIGSTOP, NULL, 0), 0);
    }
    for (int i = 0; i < n; i++) {
        char path[64], *stat = NULL, *paren = NULL;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pids[i]);
        for (int tries = 0; tries < 100; tries++) {
            free(stat);
            stat = read_text(path);
            paren = stat != NULL ? strrchr(stat, ')') : NULL;
            if (paren != NULL && paren[2] == 'T')
                break;
            nanosleep(&(struct timespec){ 0, 20 * 1000 * 1000 }, NULL);
        }
        cr_assert(paren != NULL && paren[2] == 'T', "pid %d did not stop", (int)pids[i]);
        free(stat);
    }
}

enum stop_how { STOP_FREEZER, STOP_SIGNAL };

static void frozen_sandbox_case(enum stop_how how, bool with_exec, unsigned terminate_ms)
{
    static const char *const argv[] = { "true", NULL };
    struct cordon_exec_outcome o = { 0 };
    pid_t pids[32];
    char id[40], left[256];
    const char *state;
    uint64_t t0, took;
    int n, r;

    ensure();
    state = provision(id);
    pids[0] = state_pid(state);
    n = 1 + container_pids(id, pids[0], pids + 1, 31);
    if (how == STOP_FREEZER)
        freeze_execution(id);
    else
        stop_execution(id, pids, n);

    if (with_exec) {
        t0 = cordon_now_monotonic_ms();
        r = drive(state, argv, TEST_FROZEN_EXEC_TIMEOUT_MS, 1u << 20, &o);
        test_expect_frozen_exec_ended(r, &o, t0);
    }

    t0 = cordon_now_monotonic_ms();
    r = prov->terminate(res, state, &err);
    took = cordon_now_monotonic_ms() - t0;
    frozen_thaw();
    cr_expect_eq(r, 0, "terminate of a frozen sandbox: %s", err.message);
    cr_expect_lt(took, terminate_ms, "terminate took %llu ms", (unsigned long long)took);
    cr_expect(!runtime_knows(id), "the runtime still knows %s", id);
    cr_expect_eq(cgroups_left(id), 0, "cgroups of %s are left", id);
    cr_expect_eq(test_count_alive(pids, n, left, sizeof(left)), 0, "processes of %s are left: %s",
                 id, left);
}

Test(runc, frozen_sandbox_exec_times_out_and_terminate_ends_it)
{
    frozen_sandbox_case(STOP_FREEZER, true, 10000);
}

Test(runc, frozen_sandbox_is_terminated_at_once)
{
    frozen_sandbox_case(STOP_FREEZER, false, 3000);
}

/* The init and every process of the sandbox sent SIGSTOP from the host. */
Test(runc, stopped_sandbox_exec_times_out_and_terminate_ends_it)
{
    frozen_sandbox_case(STOP_SIGNAL, true, 10000);
}

Test(runc, stopped_sandbox_is_terminated_at_once)
{
    frozen_sandbox_case(STOP_SIGNAL, false, 3000);
}
