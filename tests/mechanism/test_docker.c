/*
 * Mechanism tests of the docker provider against the real daemon: no mocks.
 *
 * Environment (scripts/test-all.sh starts a daemon of its own and names it
 * in DOCKER_HOST; by hand, tests/mechanism/dockerd.sh starts one on the
 * default socket; the images come from tests/images/build-images.sh --docker):
 *   CORDON_DOCKER_IMAGE_MINIMAL    sha256:<id> of the minimal image (required)
 *   CORDON_DOCKER_IMAGE_TOOLCHAIN  sha256:<id> of the toolchain image (required)
 *   CORDON_DOCKER_PROVIDER         docker.so (default <builddir>/.libs/docker.so)
 *   CORDON_OBSERVER                cordon-observe (default <builddir>/cordon-observe)
 *   CORDON_INIT                    cordon-init (default <builddir>/cordon-init)
 *   CORDON_BIN                     the cordon command (default <builddir>/cordon)
 *   DOCKER_HOST                    unix://PATH: the daemon's socket, as for docker.so
 *                                  and the docker command (default /var/run/docker.sock;
 *                                  scripts/test-all.sh names its own daemon's)
 *   CORDON_DOCKER_STOP_DAEMON=1    run suite docker_daemon, which starts a
 *                                  Docker daemon of its own beside the machine's
 *                                  (tests/mechanism/private-dockerd.sh), stops
 *                                  and restarts it; run it alone, with --filter
 *                                  docker_daemon/stopped_daemon_is_a_clear_error_and_reclaim_works_after_restart
 *                                  (the whole name: Criterion's filter does not
 *                                  match docker_daemon/ followed by a glob)
 *   CORDON_RUNC_IMAGE_MINIMAL      PATH@sha256:<hex> of the minimal rootfs
 *                                  tarball, imported into that daemon
 *   CORDON_TEST_RUN_ID             names that daemon's directory
 *                                  (TMPDIR/cordon-dockerd-<id>.XXXXXX)
 *
 * Every test labels what it makes with its own host instance id and
 * removes it in the suite's fini (terminate, then reclaim by id), so that
 * nothing is left: `docker ps -aq --filter label=org.cordon.execution-id`
 * is empty after a run. The docker command is used only to look at what
 * the daemon did, never by the provider.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>

#include <cordon/provider.h>
#include "core/abi.h"
#include "core/drive.h"
#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/json.h>
#include <cordon/sdk/uid.h>
#include <cordon/text.h>

#include "contract/fill.h"
#include "tests/common/hostile-agent.h"
#include "tests/common/frozen.h"
#include "tests/common/hostile-init.h"
#include "tests/common/proc.h"
#include "tests/common/sockets.h"

#ifndef CORDON_BUILDDIR
#define CORDON_BUILDDIR "."
#endif
#ifndef CORDON_SRCDIR
#define CORDON_SRCDIR "."
#endif

#define MIB (1024.0 * 1024.0)
#define MAX_TRACKED 8
#define CMD_OUTPUT_MAX (1u << 20)

static struct cordon_provider_v1 vt;
static struct cordon_host_v1 host;
static struct cordon_resource *res;
static char provider_path[PATH_MAX], observer[PATH_MAX], init_bin[PATH_MAX], host_id[48];
static char *tmp;                          /* state dir and scratch, removed in fini */
static char *states[MAX_TRACKED];
static char ids[MAX_TRACKED][48];
static const char *minimal, *toolchain, *socket_path;
static struct cordon_error err;

/* ---- process helpers (the docker command only looks) -------------------- */

/* Run argv (extra_env added to ours) with stdout captured, the first
 * CMD_OUTPUT_MAX bytes kept; returns the exit status or -1. */
static int capture(const char *const *argv, const char *const *extra_env, char **ret_out)
{
    extern char **environ;
    size_t len = 0, cap = 4096, nenv = 0, nextra = 0;
    char *buf = malloc(cap + 1), **envp;
    int p[2], status = 0;
    pid_t pid;

    while (environ[nenv] != NULL)
        nenv++;
    while (extra_env != NULL && extra_env[nextra] != NULL)
        nextra++;
    /* Built before the fork: the child only execs. */
    envp = calloc(nenv + nextra + 1, sizeof(*envp));
    cr_assert(buf != NULL && envp != NULL);
    memcpy(envp, extra_env != NULL ? extra_env : (const char *const *)environ,
           nextra * sizeof(*envp));
    memcpy(envp + nextra, environ, nenv * sizeof(*envp));
    cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
    pid = fork();
    cr_assert(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);

        if (dup2(p[1], 1) < 0 || (null >= 0 && dup2(null, 0) < 0))
            _exit(127);
        execvpe(argv[0], (char *const *)argv, envp);
        _exit(127);
    }
    close(p[1]);
    free(envp);
    for (;;) {
        char scratch[4096];
        ssize_t n;

        if (len == cap && cap < CMD_OUTPUT_MAX) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
            cr_assert_not_null(buf);
        }
        /* Past the bound the rest is read and dropped, so that the child ends. */
        n = len < cap ? read(p[0], buf + len, cap - len) : read(p[0], scratch, sizeof(scratch));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (len < cap)
            len += (size_t)n;
    }
    close(p[0]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    buf[len] = '\0';
    if (ret_out != NULL)
        *ret_out = buf;
    else
        free(buf);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static const char *str_or_empty(const cJSON *item)
{
    const char *s = cJSON_GetStringValue(item);

    return s != NULL ? s : "";
}

/* `docker ARGS...`; stdout in *ret_out (free) when not NULL. */
static int docker_cmd(char **ret_out, const char *a1, const char *a2, const char *a3,
                      const char *a4, const char *a5)
{
    const char *argv[] = { "docker", a1, a2, a3, a4, a5, NULL };

    return capture(argv, NULL, ret_out);
}

/* Containers the daemon still has with this label filter ("k=v"). */
static int count_labelled(const char *label)
{
    char filter[200], *out = NULL;
    int n = 0;

    snprintf(filter, sizeof(filter), "label=%s", label);
    cr_assert_eq(docker_cmd(&out, "ps", "-aq", "--filter", filter, NULL), 0,
                 "docker ps failed");
    for (char *p = out; *p != '\0'; p++)
        n += *p == '\n';
    free(out);
    return n;
}

static bool container_exists(const char *id)
{
    return docker_cmd(NULL, "inspect", "--type", "container", id, NULL) == 0;
}

/* Live host processes whose command line (NULs read as spaces) holds needle. */
static int count_processes(const char *needle)
{
    char *out = NULL;
    const char *argv[] = { "pgrep", "-f", "-c", needle, NULL };
    int n;

    capture(argv, NULL, &out);
    n = atoi(out);
    free(out);
    return n;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void random_hex(char *buf, size_t nbytes)
{
    FILE *f = fopen("/dev/urandom", "re");
    unsigned char raw[32];

    cr_assert(f != NULL && nbytes <= sizeof(raw) && fread(raw, 1, nbytes, f) == nbytes);
    fclose(f);
    for (size_t i = 0; i < nbytes; i++)
        snprintf(buf + 2 * i, 3, "%02x", raw[i]);
}

/* ---- suite setup ----------------------------------------------------------- */

static const char *env_or(const char *name, const char *fallback)
{
    const char *v = getenv(name);

    return v != NULL && v[0] != '\0' ? v : fallback;
}

static void setup(void)
{
    char hex[17];

    cordon_error_init(&err);
    memset(states, 0, sizeof(states));
    memset(ids, 0, sizeof(ids));
    minimal = env_or("CORDON_DOCKER_IMAGE_MINIMAL", NULL);
    toolchain = env_or("CORDON_DOCKER_IMAGE_TOOLCHAIN", NULL);
    /* The daemon docker.so and the docker command reach: DOCKER_HOST's. */
    socket_path = env_or("DOCKER_HOST", "unix:///var/run/docker.sock");
    cr_assert(strncmp(socket_path, "unix:///", 8) == 0,
              "DOCKER_HOST=%s: the tests need a unix:// socket", socket_path);
    socket_path += 7;
    cr_assert_not_null(realpath(env_or("CORDON_DOCKER_PROVIDER", CORDON_BUILDDIR
                                       "/.libs/docker.so"), provider_path),
                       "docker.so: %s (set CORDON_DOCKER_PROVIDER)", strerror(errno));
    cr_assert_not_null(realpath(env_or("CORDON_OBSERVER", CORDON_BUILDDIR "/cordon-observe"),
                                observer),
                       "cordon-observe: %s (set CORDON_OBSERVER)", strerror(errno));
    cr_assert_not_null(realpath(env_or("CORDON_INIT", CORDON_BUILDDIR "/cordon-init"), init_bin),
                       "cordon-init: %s (set CORDON_INIT)", strerror(errno));
    random_hex(hex, 8);
    snprintf(host_id, sizeof(host_id), "cordon-docker-tests-%s", hex);
    cr_assert_eq(cordon_fs_mkdtemp(env_or("TMPDIR", "/tmp"), "cordon-docker-test.", &tmp, &err),
                 0, "%s", err.message);
    cordon__host_table_init(&host, observer, init_bin, host_id, tmp);
    cr_assert_eq(cordon__provider_load(provider_path, &host, &vt, &err), 0, "load: %s",
                 err.message);
}

static void teardown(void)
{
    struct cordon_error e;

    cordon_error_init(&e);
    for (int i = 0; i < MAX_TRACKED; i++) {
        if (states[i] != NULL && res != NULL && vt.terminate(res, states[i], &e) < 0)
            cr_log_warn("fini: terminate: %s", e.message);
        free(states[i]);
        states[i] = NULL;
        if (ids[i][0] != '\0' && res != NULL && vt.reclaim(res, ids[i], &e) < 0)
            cr_log_warn("fini: reclaim %s: %s", ids[i], e.message);
        ids[i][0] = '\0';
    }
    if (res != NULL)
        vt.release(res, &e);
    res = NULL;
    if (tmp != NULL)
        cordon_fs_remove_tree_path(tmp, NULL);
    free(tmp);
    tmp = NULL;
}

/* Criterion runs no fini after a skip: clean up first. */
static void skip(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void skip(const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    teardown();
    cr_skip_test("%s", msg);
}

/* Every test needs the daemon and the two pinned test images. */
static void need_daemon(void)
{
    struct stat st;

    if (stat(socket_path, &st) != 0 || !S_ISSOCK(st.st_mode))
        skip("no Docker daemon socket at %s: start one with tests/mechanism/dockerd.sh start",
             socket_path);
    if (minimal == NULL || toolchain == NULL)
        skip("CORDON_DOCKER_IMAGE_MINIMAL and CORDON_DOCKER_IMAGE_TOOLCHAIN must name the test "
             "images (tests/images/build-images.sh --docker prints their ids)");
}

TestSuite(docker, .init = setup, .fini = teardown, .timeout = 180);

static int tar_with(const char *name, unsigned mode, const char *data);

/* ---- provider helpers ---------------------------------------------------------- */

static void ensure_with(const char *config)
{
    cr_assert_eq(vt.ensure(&host, config, &res, &err), 0, "ensure(%s): %s", config, err.message);
}

static void ensure_default(void)
{
    char config[200];

    if (res != NULL)
        return;
    snprintf(config, sizeof(config), "{\"image\": \"%s\"}", minimal);
    ensure_with(config);
}

struct limits {
    double cpus, memory_bytes, disk_bytes;
    int pids;
    double runtime_ms;
};

static const struct limits small = { 1, 256 * MIB, 64 * MIB, 128, 120000 };

static char *spec(const char *id, const char *image, const char *layout, const struct limits *l)
{
    char *text = NULL;

    cr_assert(asprintf(&text,
                       "{\"execution_id\": \"%s\", \"image\": \"%s\", \"layout\": \"%s\","
                       " \"resources\": {\"cpus\": %.17g, \"memory_bytes\": %.0f, \"disk_bytes\": %.0f,"
                       " \"pids\": %d, \"runtime_ms\": %.0f, \"max_output_bytes\": 1048576},"
                       " \"network\": {\"mode\": \"none\"}, \"environment\": {\"CORDON_TEST\": \"1\"},"
                       " \"expires_at_ms\": %llu}",
                       id, image, layout, l->cpus, l->memory_bytes, l->disk_bytes, l->pids,
                       l->runtime_ms,
                       (unsigned long long)(cordon_now_wall_ms() + (uint64_t)l->runtime_ms)) > 0);
    return text;
}

static int track_id(const char *id)
{
    for (int i = 0; i < MAX_TRACKED; i++) {
        if (ids[i][0] == '\0') {
            snprintf(ids[i], sizeof(ids[i]), "%s", id);
            return i;
        }
    }
    cr_assert_fail("more than %d executions in one test", MAX_TRACKED);
    return -1;
}

/* Provision (assert); the state is terminated and the id reclaimed in fini. */
static const char *provision_with(const char *image, const char *layout, const struct limits *l)
{
    char id[48], hex[13], *text;
    int slot;

    ensure_default();
    random_hex(hex, 6);
    snprintf(id, sizeof(id), "dt-%s", hex);
    slot = track_id(id);
    text = spec(id, image, layout, l);
    cr_assert_eq(vt.provision(res, text, &states[slot], &err), 0, "provision: %s", err.message);
    free(text);
    return states[slot];
}

static const char *provision_default(const char *layout)
{
    return provision_with(minimal, layout, &small);
}

/* The container id in a state. */
static const char *container_of(const char *state)
{
    static char id[80];
    cJSON *doc = cJSON_Parse(state);

    snprintf(id, sizeof(id), "%s",
             cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "container_id")));
    cJSON_Delete(doc);
    return id;
}

static const char *execution_of(const char *state)
{
    static char id[80];
    cJSON *doc = cJSON_Parse(state);

    snprintf(id, sizeof(id), "%s",
             cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "execution_id")));
    cJSON_Delete(doc);
    return id;
}

struct run_opts {
    uint64_t timeout_ms;
    uint64_t budget;
    int stdin_fd;
    const char *extra;          /* spliced into the request object */
};

static const struct run_opts defaults = { 30000, 4u << 20, -1, NULL };

static char *request_of(const char *const *argv, const struct run_opts *o)
{
    cJSON *req = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(req, "argv"), *env;
    char *text, *out = NULL;

    for (size_t i = 0; argv[i] != NULL; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateString(argv[i]));
    cJSON_AddStringToObject(req, "cwd", "");
    env = cJSON_AddObjectToObject(req, "env");
    cJSON_AddStringToObject(env, "PATH", "/usr/local/bin:/usr/bin:/bin");
    cJSON_AddNumberToObject(req, "timeout_ms", (double)o->timeout_ms + 5000);
    text = cJSON_PrintUnformatted(req);
    cJSON_Delete(req);
    cr_assert_not_null(text);
    text[strlen(text) - 1] = '\0';
    cr_assert(asprintf(&out, "%s%s}", text, o->extra != NULL ? o->extra : "") > 0);
    free(text);
    return out;
}

/* Through the host's driver; returns its code, fills o. */
static int run(const char *state, const char *const *argv, const struct run_opts *opts,
               struct cordon_exec_outcome *o)
{
    struct cordon_drive_opts d;
    char *req = request_of(argv, opts);
    int r;

    cordon__drive_opts_init(&d);
    d.host = &host;
    d.provider = &vt;
    d.resource = res;
    d.state_json = state;
    d.request_json = req;
    d.stdin_fd = opts->stdin_fd;
    d.timeout_ms = opts->timeout_ms;
    d.retention_bytes = 64 * 1024;
    d.output_budget = opts->budget;
    memset(o, 0, sizeof(*o));
    r = cordon__drive_exec(&d, o, &err);
    free(req);
    return r;
}

/* sh -c script; asserts that it ran; fills o (clear it). */
static void sh(const char *state, const char *script, struct cordon_exec_outcome *o)
{
    const char *argv[] = { "sh", "-c", script, NULL };

    cr_assert_eq(run(state, argv, &defaults, o), 0, "exec `%s`: %s", script, err.message);
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

static char *text_of(const struct cordon_stream_capture *s)
{
    char *t = malloc(s->len + 1);

    cr_assert_not_null(t);
    memcpy(t, s->data != NULL ? s->data : "", s->len);
    t[s->len] = '\0';
    return t;
}

/* NanoCpus is cpus times 1e9 rounded to nearest, half away from zero:
 * 0.2500000005 cpus is 250000000.5 ns, so 250000001. */
Test(docker, fractional_cpus_round_to_the_nearest_nanosecond)
{
    struct limits l = small;
    char *out = NULL;
    cJSON *doc, *hc;

    need_daemon();
    l.cpus = 0.2500000005;
    cr_assert_eq(docker_cmd(&out, "inspect", "--type", "container",
                            container_of(provision_with(minimal, "code", &l)), NULL), 0);
    doc = cJSON_Parse(out);
    free(out);
    hc = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(doc, 0), "HostConfig");
    cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(hc, "NanoCpus")),
                 250000001.0);
    cJSON_Delete(doc);
}

/* ---- the defaults of THE SANDBOX in cordon-provider-docker(7) --------------------- */

Test(docker, provision_applies_every_default_and_labels_the_container)
{
    const char *state, *cid;
    struct cordon_exec_outcome o;
    char *out = NULL, label[160], *text;
    cJSON *doc, *hc, *labels;

    need_daemon();
    state = provision_default("code");
    cid = container_of(state);
    cr_assert_eq(docker_cmd(&out, "inspect", "--type", "container", cid, NULL), 0);
    doc = cJSON_Parse(out);
    free(out);
    cr_assert(cJSON_IsArray(doc));
    hc = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(doc, 0), "HostConfig");
    labels = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(doc, 0), "Config"), "Labels");
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(hc, "ReadonlyRootfs")));
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(hc, "AutoRemove")));
    cr_expect(!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(hc, "Init")),
              "docker-init is PID 1: the deadline would be one of its children");
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(hc, "NetworkMode")),
                     "none");
    cr_expect_eq(cJSON_GetObjectItemCaseSensitive(hc, "Memory")->valuedouble, small.memory_bytes);
    cr_expect_eq(cJSON_GetObjectItemCaseSensitive(hc, "MemorySwap")->valuedouble,
                 small.memory_bytes, "MemorySwap differs from Memory: swap would be allowed");
    cr_expect_eq(cJSON_GetObjectItemCaseSensitive(hc, "PidsLimit")->valuedouble, small.pids);
    cr_expect_eq(cJSON_GetObjectItemCaseSensitive(hc, "NanoCpus")->valuedouble, 1e9);
    /* 64 MiB of disk, split: /tmp an eighth, /dev/shm a sixteenth. */
    cr_expect_eq(cJSON_GetObjectItemCaseSensitive(hc, "ShmSize")->valuedouble, 4 * MIB);
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                         cJSON_GetObjectItemCaseSensitive(hc, "Tmpfs"), "/tmp")),
                     "rw,nosuid,nodev,exec,size=8388608,mode=1777");
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetArrayItem(
                         cJSON_GetObjectItemCaseSensitive(hc, "CapDrop"), 0)), "ALL");
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(hc, "CapAdd")), 0);
    {
        /* No core dumps under any runtime: set, not the runtime's default. */
        const cJSON *ul = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(hc, "Ulimits"), 0);

        cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ul, "Name")), "core");
        cr_expect(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(ul, "Soft")) == 0 &&
                      cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(ul, "Hard")) == 0,
                  "the core ulimit is not 0:0");
    }
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels,
                                                                           "org.cordon.host")),
                     host_id);
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                         labels, "org.cordon.execution-id")), execution_of(state));
    cJSON_Delete(doc);

    /* Inside: the user, the layout, the mounts and the reaping init. */
    sh(state, "id -u; stat -c '%n %u %a' /workspace /workspace/source /workspace/build "
              "/workspace/output /workspace/logs; grep -E ' /workspace | /tmp ' /proc/mounts; "
              "tr '\\0' ' ' </proc/1/cmdline", &o);
    text = text_of(&o.out);
    cr_expect_eq(o.exit_code, 0, "the inspection failed: %s", text);
    {
        unsigned uid = (unsigned)state_uid(state);
        char want[64];

        snprintf(want, sizeof(want), "%u\n", uid);
        cr_expect(strncmp(text, want, strlen(want)) == 0, "the sandbox user is not %u: %s", uid,
                  text);
        for (int i = 0; i < 3; i++) {
            static const char *const dirs[] = { "build", "output", "logs" };

            snprintf(want, sizeof(want), "/workspace/%s %u 755\n", dirs[i], uid);
            cr_expect(strstr(text, want) != NULL, "%s/: %s", dirs[i], text);
        }
    }
    cr_expect(strstr(text, "/workspace 0 755\n") != NULL, "workspace root: %s", text);
    cr_expect(strstr(text, "/workspace/source 0 755\n") != NULL, "source/: %s", text);
    cr_expect(strstr(text, " /workspace tmpfs rw,nosuid,nodev") != NULL &&
                  strstr(text, "size=53248k") != NULL,
              "/workspace is not a nosuid,nodev tmpfs of disk_bytes less /tmp and /dev/shm: %s",
              text);
    cr_expect(strstr(text, "noexec") == NULL, "a workspace or /tmp mount is noexec: %s", text);
    cr_expect(strstr(text, "/run/cordon-init --deadline-ms ") != NULL,
              "pid 1 is not cordon-init holding the deadline: %s", text);
    free(text);
    cordon_exec_outcome_clear(&o);
    snprintf(label, sizeof(label), "org.cordon.execution-id=%s", execution_of(state));
    cr_expect_eq(count_labelled(label), 1, "the container is not labelled with its execution id");
}

/* ---- abuse ----------------------------------------------------------------------- */

/* The container's pids cgroup, read on the host through its init's pid. */
static bool read_pids(const char *cid, long *ret_current, long *ret_max)
{
    char *pid = NULL, path[PATH_MAX], line[512], cg[400] = "";
    bool v2 = false;
    FILE *f;

    if (docker_cmd(&pid, "inspect", "-f", "{{.State.Pid}}", cid, NULL) != 0 || atoi(pid) <= 0) {
        free(pid);
        return false;
    }
    snprintf(path, sizeof(path), "/proc/%d/cgroup", atoi(pid));
    free(pid);
    f = fopen(path, "re");
    if (f == NULL)
        return false;
    /* cgroup v1's pids line; the unified "0::" line only without one. */
    while (fgets(line, sizeof(line), f) != NULL) {
        char *p = strstr(line, ":pids:");

        if (p == NULL && strncmp(line, "0::", 3) == 0 && cg[0] == '\0') {
            p = line + 1;
            v2 = true;
        } else if (p != NULL) {
            v2 = false;
        }
        if (p != NULL) {
            snprintf(cg, sizeof(cg), "%s", strchr(p + 1, ':') + 1);
            cg[strcspn(cg, "\n")] = '\0';
        }
    }
    fclose(f);
    for (int i = 0; i < 2 && cg[0] != '\0'; i++) {
        long *dst = i == 0 ? ret_current : ret_max;

        snprintf(path, sizeof(path), "/sys/fs/cgroup%s%s/pids.%s", v2 ? "" : "/pids", cg,
                 i == 0 ? "current" : "max");
        f = fopen(path, "re");
        if (f == NULL || fgets(line, sizeof(line), f) == NULL) {
            if (f != NULL)
                fclose(f);
            return false;
        }
        fclose(f);
        *dst = atol(line);
    }
    return cg[0] != '\0';
}

struct bg_run {
    const char *state;
    const char *const *argv;
    struct run_opts opts;
    struct cordon_exec_outcome out;
    int rc;
};

static void *bg_main(void *arg)
{
    struct bg_run *b = arg;

    b->rc = run(b->state, b->argv, &b->opts, &b->out);
    return NULL;
}

Test(docker, fork_bomb_is_stopped_by_the_pids_limit)
{
    /* Forks until the kernel says no; the sleepers hold their pids. The
     * bomb is a subshell, which dies when fork fails: the leader then
     * execs (no fork needed) and keeps the group, which the agent kills
     * with its leader, alive until the clock ends it. */
    const char *argv[] = { "sh", "-c",
                           "(exec 2>/dev/null; while :; do sleep 1000 & done); exec sleep 60", NULL };
    struct limits l = small;
    struct bg_run b = { .argv = argv, .opts = defaults };
    const char *state;
    long cur = 0, max = 0, peak = 0;
    pthread_t t;
    char cid[80];

    need_daemon();
    l.pids = 32;
    state = provision_with(minimal, "host", &l);
    snprintf(cid, sizeof(cid), "%s", container_of(state));
    b.state = state;
    b.opts.timeout_ms = 6000;
    b.opts.budget = 16u << 20;
    cr_assert_eq(pthread_create(&t, NULL, bg_main, &b), 0);
    /* Watch from the host while the bomb presses against the limit. */
    for (int i = 0; i < 40; i++) {
        sleep_ms(100);
        if (read_pids(cid, &cur, &max) && cur > peak)
            peak = cur;
    }
    pthread_join(t, NULL);
    cr_assert_eq(b.rc, 0, "exec: %s", err.message);
    cr_expect_eq(max, 32, "pids.max of the container is %ld, not 32", max);
    cr_expect_leq(peak, 32, "the container held %ld processes with a limit of 32", peak);
    cr_expect_geq(peak, 24, "the bomb reached only %ld processes: it did not test the limit",
                  peak);
    /* The shell gives up when fork fails (or the clock ends it). */
    cr_expect((b.out.status == CORDON_RUN_EXITED && b.out.exit_code != 0) ||
                  b.out.status == CORDON_RUN_TIMEOUT,
              "status %s (exit %d): the loop did not hit the limit",
              cordon_run_status_name(b.out.status), b.out.exit_code);
    cordon_exec_outcome_clear(&b.out);
    cr_expect_eq(vt.terminate(res, state, &err), 0, "terminate: %s", err.message);
    cr_expect(!container_exists(cid), "the container survived terminate");
}

Test(docker, twice_the_memory_limit_is_killed_and_reported_as_oom)
{
    const char *argv[] = { "sh", "-c", "head -c 134217728 /dev/zero | tail > /dev/null", NULL };
    struct limits l = small;
    struct cordon_exec_outcome o;
    const char *state;

    need_daemon();
    l.memory_bytes = 64 * MIB;
    state = provision_with(minimal, "host", &l);
    cr_assert_eq(run(state, argv, &defaults, &o), 0, "exec: %s", err.message);
    cr_expect_eq(o.status, CORDON_RUN_OOM, "status %s (exit %d), not oom",
                 cordon_run_status_name(o.status), o.exit_code);
    cordon_exec_outcome_clear(&o);
    /* The kill hit the hog, not the execution: it still runs. */
    sh(state, "true", &o);
    cr_expect_eq(o.exit_code, 0, "the execution did not survive its OOM-killed process");
    cordon_exec_outcome_clear(&o);
}

Test(docker, writing_past_disk_bytes_fails)
{
    struct limits l = small;
    struct cordon_exec_outcome o;
    const char *state;
    char *text;

    need_daemon();
    l.disk_bytes = 8 * MIB;
    state = provision_with(minimal, "host", &l);
    sh(state, "head -c 16777216 /dev/zero > big", &o);
    text = text_of(&o.err);
    cr_expect_neq(o.exit_code, 0, "writing 16 MiB into 8 MiB succeeded");
    cr_expect(strstr(text, "No space left on device") != NULL, "stderr: %s", text);
    free(text);
    cordon_exec_outcome_clear(&o);
    sh(state, "stat -c %s big", &o);
    text = text_of(&o.out);
    cr_expect_leq(atol(text), 8 * 1024 * 1024, "big holds %s bytes past disk_bytes", text);
    free(text);
    cordon_exec_outcome_clear(&o);
}

/*
 * disk_bytes is one budget: filling /workspace, /tmp and /dev/shm at once
 * stores at most disk_bytes (64 MiB here), and almost all of it. They used
 * to get 64 MiB each, docker's default /dev/shm included: 192 MiB in all.
 */
Test(docker, writable_tmpfs_mounts_share_disk_bytes)
{
    struct cordon_exec_outcome o;
    const char *state;
    long long total;
    char *out, *script;

    need_daemon();
    state = provision_with(minimal, "host", &small);
    script = test_fill_tmpfs_script(
        "docker", small.disk_bytes, "grep -E ' /(workspace|tmp|dev/shm) ' /proc/mounts");
    cr_assert_not_null(script);
    sh(state, script, &o);
    free(script);
    out = text_of(&o.out);
    cr_assert_eq(o.exit_code, 0, "the fill script failed: %s", out);
    total = test_fill_value(out, "total");
    cr_expect(test_fill_has(out, "/workspace") && test_fill_has(out, "/tmp") &&
                  test_fill_has(out, "/dev/shm"),
              "a writable tmpfs was not filled: %s", out);
    cr_expect_eq(test_fill_value(out, "mounts"), 3, "writable tmpfs mounts beyond the three: %s",
                 out);
    cr_expect_leq(total, (long long)small.disk_bytes,
                  "the container stored %lld bytes with disk_bytes 64 MiB: %s", total, out);
    cr_expect_geq(total, (long long)(63 * MIB), "only %lld bytes of the 64 MiB are usable: %s",
                  total, out);
    cr_expect(strstr(out, "size=53248k") != NULL && strstr(out, "size=8192k") != NULL &&
                  strstr(out, "size=4096k") != NULL,
              "the tmpfs sizes are not 52, 8 and 4 MiB: %s", out);
    free(out);
    cordon_exec_outcome_clear(&o);
}

Test(docker, output_flood_ends_with_output_limit_and_the_container_stays)
{
    const char *argv[] = { "head", "-c", "104857600", "/dev/zero", NULL };
    struct run_opts opts = defaults;
    struct cordon_exec_outcome o;
    const char *state;
    char cid[80], label[160];
    uint64_t start;

    need_daemon();
    state = provision_default("code");
    snprintf(cid, sizeof(cid), "%s", container_of(state));
    opts.budget = 1u << 20;
    start = cordon_now_monotonic_ms();
    cr_assert_eq(run(state, argv, &opts, &o), 0, "exec: %s", err.message);
    cr_expect_eq(o.status, CORDON_RUN_OUTPUT_LIMIT, "status %s, not output_limit",
                 cordon_run_status_name(o.status));
    cr_expect_lt(o.out.total_bytes, 100u << 20, "all 100 MiB went through: nothing stopped it");
    cr_expect_leq(cordon_now_monotonic_ms() - start, 20000, "the flood was not stopped promptly");
    cordon_exec_outcome_clear(&o);
    /* The command ended, not the sandbox: one container, still there. */
    cr_expect(container_exists(cid), "the container went with the output limit");
    snprintf(label, sizeof(label), "org.cordon.execution-id=%s", execution_of(state));
    cr_expect_eq(count_labelled(label), 1, "the execution does not have exactly its container");
}

Test(docker, background_sleeper_after_a_timeout_is_gone_and_the_container_stays)
{
    const char *argv[] = { "sh", "-c", NULL, NULL };
    struct run_opts opts = defaults;
    struct cordon_exec_outcome o;
    char marker[48], script[160], hex[13], cid[80];
    const char *state;
    int left = -1;

    need_daemon();
    state = provision_default("code");
    snprintf(cid, sizeof(cid), "%s", container_of(state));
    random_hex(hex, 6);
    snprintf(marker, sizeof(marker), "1000.%llu", strtoull(hex, NULL, 16));
    snprintf(script, sizeof(script), "sleep %s & sleep %s", marker, marker);
    argv[2] = script;
    opts.timeout_ms = 1000;
    cr_assert_eq(run(state, argv, &opts, &o), 0, "exec: %s", err.message);
    cr_expect_eq(o.status, CORDON_RUN_TIMEOUT, "status %s, not timeout",
                 cordon_run_status_name(o.status));
    cordon_exec_outcome_clear(&o);
    cr_expect(container_exists(cid), "the container went with the timeout");
    /* The agent reported the end once the group was gone: no wait here. */
    left = count_processes(marker);
    cr_expect_eq(left, 0, "the background sleeper (sleep %s) outlived the timeout's answer", marker);
}

Test(docker, writing_to_the_root_file_system_fails)
{
    struct cordon_exec_outcome o;
    const char *state;
    char *out, *errs;

    need_daemon();
    state = provision_default("code");
    sh(state, "for d in / /etc /usr /bin /var; do touch $d/cordon-write-test && echo WROTE $d; "
              "done; echo checked", &o);
    out = text_of(&o.out);
    errs = text_of(&o.err);
    cr_expect(strstr(out, "checked") != NULL, "the script did not run: %s", out);
    cr_expect(strstr(out, "WROTE") == NULL, "the root file system is writable: %s", out);
    cr_expect(strstr(errs, "Read-only file system") != NULL, "stderr: %s", errs);
    free(out);
    free(errs);
    cordon_exec_outcome_clear(&o);
}

Test(docker, only_loopback_exists_and_connecting_out_fails)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t alen = sizeof(addr);
    struct cordon_exec_outcome o;
    const char *state;
    char script[300], *out;
    int lfd, cfd;

    need_daemon();
    /* A listener on the host's loopback: the sandbox's 127.0.0.1 is its own. */
    lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    cr_assert(lfd >= 0);
    cr_assert_eq(bind(lfd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    cr_assert_eq(listen(lfd, 4), 0);
    cr_assert_eq(getsockname(lfd, (struct sockaddr *)&addr, &alen), 0);
    state = provision_default("code");
    snprintf(script, sizeof(script),
             "ls /sys/class/net; bash -c 'exec 3<>/dev/tcp/127.0.0.1/%u' 2>/dev/null && "
             "echo CONNECTED; echo done", ntohs(addr.sin_port));
    sh(state, script, &o);
    out = text_of(&o.out);
    cr_expect_str_eq(out, "lo\ndone\n", "interfaces or connection: %s", out);
    free(out);
    cordon_exec_outcome_clear(&o);
    cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    cr_expect(cfd < 0 && (errno == EAGAIN || errno == EWOULDBLOCK),
              "the host listener got a connection from the sandbox");
    if (cfd >= 0)
        close(cfd);
    close(lfd);
}

/*
 * Network "none" means no family reaches outside: AF_VSOCK (this VM's
 * hypervisor is one connect away), AF_PACKET, socketpair of a refused
 * family and a family dressed up with high bits all get EAFNOSUPPORT, a
 * netlink protocol other than NETLINK_ROUTE (uevents: the host's device
 * events) EPROTONOSUPPORT. What ordinary programs use still works.
 */
Test(docker, socket_families_outside_the_allow_list_are_refused)
{
    struct cordon_exec_outcome o;
    const char *state;
    char *out, *errtext;

    need_daemon();
    state = provision_with(toolchain, "host", &small);
    sh(state, TEST_SOCKETS_SCRIPT, &o);
    out = text_of(&o.out);
    errtext = text_of(&o.err);
    cr_assert_eq(o.exit_code, 0, "the program did not run: %s %s", out, errtext);
    cr_expect(strstr(out, TEST_SOCKETS_ALLOWED) != NULL, "an allowed family was refused: %s", out);
    cr_expect(strstr(out, TEST_SOCKETS_REFUSED) != NULL,
              "a family outside the allow-list was not refused as the kernel would: %s", out);
    cr_expect(strstr(out, "\nifaces lo\n") != NULL, "the interface list is not lo alone: %s", out);
    free(errtext);
    free(out);
    cordon_exec_outcome_clear(&o);
}

Test(docker, host_canary_file_is_not_visible)
{
    struct cordon_exec_outcome o;
    char dir[] = "/tmp/cordon-docker-canary.XXXXXX", path[80], token[33], script[300], *out;
    const char *state;
    int fd;

    need_daemon();
    cr_assert_not_null(mkdtemp(dir));
    cr_assert_eq(chmod(dir, 0755), 0);
    snprintf(path, sizeof(path), "%s/canary", dir);
    random_hex(token, 16);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    cr_assert(fd >= 0 && write(fd, token, 32) == 32);
    close(fd);
    state = provision_default("code");
    snprintf(script, sizeof(script), "cat %s 2>/dev/null; test -e %s && echo VISIBLE; echo done",
             path, path);
    sh(state, script, &o);
    out = text_of(&o.out);
    unlink(path);
    rmdir(dir);
    cr_expect_str_eq(out, "done\n", "the host canary is visible inside: %s", out);
    free(out);
    cordon_exec_outcome_clear(&o);
}

Test(docker, import_never_follows_a_planted_symlink_into_source)
{
    struct cordon_exec_outcome o;
    const char *state;
    int fd, r;

    need_daemon();
    state = provision_default("code");
    /* The sandbox owns output/: it plants a link to the read-only source/. */
    sh(state, "ln -s ../source output/x", &o);
    cr_assert_eq(o.exit_code, 0, "planting the link failed");
    cordon_exec_outcome_clear(&o);
    fd = tar_with("x/evil", 0644, "written through a planted link\n");
    r = vt.import_tar(res, state, "output", fd, &err);
    close(fd);
    cr_expect_lt(r, 0, "an import through the planted link output/x was accepted");
    if (r < 0)
        cr_log_info("refused: %s", err.message);
    sh(state, "test ! -e source/evil && test -L output/x", &o);
    cr_expect_eq(o.exit_code, 0, "the import wrote into source/ through the planted link");
    cordon_exec_outcome_clear(&o);
}

/* Names of the entries of a tar stream in fd, "a b c" (rewound first). */
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

Test(docker, export_of_a_nested_directory_follows_no_link)
{
    struct cordon_exec_outcome o;
    const char *state;
    char *names;
    int fd, r;

    need_daemon();
    state = provision_default("host");
    sh(state, "mkdir -p a/b && echo hi > a/b/f && ln -s /etc a/etc && ln -s b a/lb", &o);
    cr_assert_eq(o.exit_code, 0, "preparing the tree failed");
    cordon_exec_outcome_clear(&o);
    fd = memfd_create("export", MFD_CLOEXEC);
    cr_assert_eq(vt.export_tar(res, state, "a/b", fd, &err), 0, "export a/b: %s", err.message);
    names = tar_names(fd);
    cr_expect_str_eq(names, "f", "export of a/b holds [%s]", names);
    free(names);
    close(fd);
    /* A link in the place of the source is refused, at any depth. */
    for (int i = 0; i < 2; i++) {
        fd = memfd_create("export", MFD_CLOEXEC);
        r = vt.export_tar(res, state, i == 0 ? "a/etc" : "a/lb", fd, &err);
        cr_expect_eq(r, CORDON_E_UNSAFE, "export through the link %s: %d (%s)",
                     i == 0 ? "a/etc" : "a/lb", r, err.message);
        close(fd);
    }
    fd = memfd_create("export", MFD_CLOEXEC);
    r = vt.export_tar(res, state, "a/missing", fd, &err);
    cr_expect_eq(r, CORDON_E_NOT_FOUND, "export of a missing directory: %d (%s)", r, err.message);
    close(fd);
}

/* export_files names only what was asked for: 20,000 files and a FIFO
 * beside a declared output change nothing; paths in several top-level
 * directories, a path under a link (not followed: left out) and paths that
 * are all missing work too. */
Test(docker, export_files_reads_only_the_named_paths)
{
    struct cordon_exec_outcome o;
    const char *state;
    char *names;
    int fd;

    need_daemon();
    state = provision_default("code");
    sh(state, "mkdir output/scratch && cd output/scratch && seq 1 20000 | xargs touch && "
              "cd .. && echo 42 > r.txt && mkfifo pipe && ln -s /etc etc && echo l > ../logs/l",
       &o);
    cr_assert_eq(o.exit_code, 0, "preparing the tree failed");
    cordon_exec_outcome_clear(&o);
    fd = memfd_create("export", MFD_CLOEXEC);
    cr_assert_eq(vt.export_files(res, state, "[\"output/r.txt\", \"output/none\"]", fd, &err), 0,
                 "export_files: %s", err.message);
    names = tar_names(fd);
    cr_expect_str_eq(names, "output/r.txt", "export_files wrote [%s]", names);
    free(names);
    close(fd);
    fd = memfd_create("export", MFD_CLOEXEC);
    cr_assert_eq(vt.export_files(res, state, "[\"logs/l\", \"output/r.txt\", \"output/etc/passwd\"]",
                                 fd, &err), 0, "export_files: %s", err.message);
    names = tar_names(fd);
    cr_expect_str_eq(names, "logs/l output/r.txt", "export_files wrote [%s]", names);
    free(names);
    close(fd);
    fd = memfd_create("export", MFD_CLOEXEC);
    cr_assert_eq(vt.export_files(res, state, "[\"nothing/here\"]", fd, &err), 0,
                 "export_files of a missing top-level directory: %s", err.message);
    names = tar_names(fd);
    cr_expect_str_eq(names, "", "export_files wrote [%s]", names);
    free(names);
    close(fd);
    fd = memfd_create("export", MFD_CLOEXEC);
    cr_expect_lt(vt.export_files(res, state, "[\"output/pipe\"]", fd, &err), 0,
                 "export_files of a FIFO was not refused");
    close(fd);
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
 * sequence, a screen clear and a byte that is not UTF-8; the daemon's
 * archive of it is refused by name, escaped, and the message put into JSON
 * the way the host puts it there is strict UTF-8. */
Test(docker, hostile_fifo_name_is_escaped_in_the_refusal)
{
    struct cordon_exec_outcome o;
    const char *state;
    cJSON *doc = cJSON_CreateObject();
    char *text;
    int fd;

    need_daemon();
    state = provision_default("host");
    sh(state, "mkdir d && mkfifo \"d/$(printf '\\033]0;pwned\\007\\033[2J\\377')\"", &o);
    cr_assert_eq(o.exit_code, 0, "mkfifo failed");
    cordon_exec_outcome_clear(&o);
    fd = memfd_create("export", MFD_CLOEXEC);
    cordon_error_init(&err);
    cr_assert_lt(vt.export_tar(res, state, "d", fd, &err), 0, "a FIFO is refused");
    close(fd);
    cr_expect(shows_safely(err.message), "the refusal carries the raw name: %s", err.message);
    cr_expect_not_null(strstr(err.message, "\\x1b]0;pwned\\x07\\x1b[2J\\xff"), "%s", err.message);
    cr_assert_not_null(cordon_json_add_text(doc, "message", err.message));
    text = cJSON_PrintUnformatted(doc);
    cr_expect(cordon_text_is_utf8(text, strlen(text)), "%s", text);
    cr_expect_null(strstr(text, "\\u001b"), "JSON carries ESC: %s", text);
    free(text);
    cJSON_Delete(doc);
}

/* ---- privilege escalation ----------------------------------------------------------- */

/* A tar stream in a memfd holding one entry. */
static int tar_with(const char *name, unsigned mode, const char *data)
{
    struct archive *a = archive_write_new();
    struct archive_entry *e = archive_entry_new();
    int fd = memfd_create("test.tar", MFD_CLOEXEC);
    size_t len = strlen(data);

    cr_assert(fd >= 0 && a != NULL && e != NULL);
    archive_write_set_format_pax_restricted(a);
    cr_assert_eq(archive_write_open_fd(a, fd), ARCHIVE_OK);
    archive_entry_set_pathname(e, name);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, mode);
    archive_entry_set_size(e, (la_int64_t)len);
    cr_assert_eq(archive_write_header(a, e), ARCHIVE_OK);
    cr_assert_eq(archive_write_data(a, data, len), (la_ssize_t)len);
    archive_entry_free(e);
    cr_assert_eq(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
    return fd;
}

/* ---- nothing inside stops the clock or stalls the host ------------------------------ */

static const struct limits brief = { 1, 256 * MIB, 64 * MIB, 128, 8000 };

/*
 * The deadline is held by PID 1 (cordon-init), which the kernel shields
 * from SIGSTOP and SIGKILL sent from inside its namespace. Everything
 * inside is stopped, then killed; the container must still be gone at
 * its deadline with no cordon call in between: the init exits, the
 * container stops and AutoRemove removes it.
 */
Test(docker, deadline_ends_the_container_when_everything_inside_is_stopped)
{
    static const char *const attack =
        "sleep 1000 & kill -STOP -1; kill -STOP 1; "
        "for p in /proc/[0-9]*; do p=${p#/proc/}; [ \"$p\" = $$ ] || kill -STOP $p; done; "
        "grep '^State' /proc/1/status; "
        "for p in /proc/[0-9]*; do p=${p#/proc/}; [ \"$p\" = $$ ] || kill -KILL $p; done; "
        "grep '^State' /proc/1/status";
    struct cordon_exec_outcome o;
    char cid[80], *text;
    const char *state;
    uint64_t expires, gone = 0;

    need_daemon();
    expires = cordon_now_wall_ms() + (uint64_t)brief.runtime_ms;
    state = provision_with(minimal, "host", &brief);
    snprintf(cid, sizeof(cid), "%s", container_of(state));
    sh(state, attack, &o);
    text = text_of(&o.out);
    cr_expect(strstr(text, "(stopped)") == NULL, "PID 1 was stopped from inside: %s", text);
    free(text);
    cordon_exec_outcome_clear(&o);
    cr_assert(container_exists(cid), "the container ended before its deadline");
    /* No cordon call from here on: only the daemon is looked at. */
    while (cordon_now_wall_ms() < expires + 15000) {
        if (!container_exists(cid)) {
            gone = cordon_now_wall_ms();
            break;
        }
        sleep_ms(250);
    }
    cr_expect(gone != 0, "the container outlived its deadline by 15 s after everything inside "
                         "was stopped");
    cr_expect(gone == 0 || gone + 1000 >= expires, "the container ended %llu ms before its deadline",
              (unsigned long long)(expires - gone));
}

/*
 * A program that takes write leases (ignoring SIGIO, so that only the
 * lease-break time would end them) on a workspace file, through fcntl and
 * through the raw syscall with high bits set in cmd, then leaves a child
 * holding the descriptor. The profile refuses both; a checkpoint (export
 * of the workspace), an export of the file's directory and terminate all
 * finish well inside the kernel's 45 s lease-break time.
 */
static const char lease_c[] =
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
    "}\n";

Test(docker, file_lease_is_refused_and_export_and_terminate_stay_bounded)
{
    struct cordon_exec_outcome o;
    uint64_t t0;
    char *text, *names;
    const char *state;
    int fd, r;

    need_daemon();
    state = provision_with(toolchain, "host", &small);
    fd = tar_with("lease.c", 0644, lease_c);
    cr_assert_eq(vt.import_tar(res, state, "", fd, &err), 0, "import: %s", err.message);
    close(fd);
    sh(state, "mkdir -p out && echo data > out/leased && cc -o lease lease.c && "
              "./lease out/leased 300", &o);
    text = text_of(&o.out);
    cr_assert_eq(o.exit_code, 0, "the lease program did not run: %s", text);
    cr_expect(strstr(text, "lease -1 1 raw -1 1") != NULL,
              "a lease was not refused with EPERM both ways: %s", text);
    free(text);
    cordon_exec_outcome_clear(&o);

    t0 = cordon_now_monotonic_ms();
    fd = memfd_create("checkpoint", MFD_CLOEXEC);
    r = vt.export_tar(res, state, "", fd, &err);
    cr_expect_eq(r, 0, "checkpoint export: %s", err.message);
    names = tar_names(fd);
    cr_expect(strstr(names, "out/leased") != NULL, "the checkpoint holds [%s]", names);
    free(names);
    close(fd);
    fd = memfd_create("collect", MFD_CLOEXEC);
    r = vt.export_tar(res, state, "out", fd, &err);
    cr_expect_eq(r, 0, "export of out: %s", err.message);
    close(fd);
    cr_expect_lt(cordon_now_monotonic_ms() - t0, 10000, "two exports took %llu ms",
                 (unsigned long long)(cordon_now_monotonic_ms() - t0));
    t0 = cordon_now_monotonic_ms();
    cr_expect_eq(vt.terminate(res, state, &err), 0, "terminate: %s", err.message);
    cr_expect_lt(cordon_now_monotonic_ms() - t0, 10000, "terminate took %llu ms",
                 (unsigned long long)(cordon_now_monotonic_ms() - t0));
}

/*
 * Hard links: every provider stores each name of a multiply-linked file
 * as a regular file of its own, so a checkpoint restores both names with
 * the content (as two files, no longer linked).
 */
Test(docker, checkpoint_of_a_hard_link_restores_both_files)
{
    struct cordon_exec_outcome o;
    const char *first, *second;
    char *text;
    int fd;

    need_daemon();
    first = provision_default("host");
    sh(first, "mkdir d && printf content > d/a && ln d/a d/b && ln d/a top", &o);
    cr_assert_eq(o.exit_code, 0, "making the links failed");
    cordon_exec_outcome_clear(&o);
    fd = memfd_create("checkpoint", MFD_CLOEXEC);
    cr_assert_eq(vt.export_tar(res, first, "", fd, &err), 0, "checkpoint export: %s",
                 err.message);
    cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
    second = provision_default("host");
    cr_assert_eq(vt.import_tar(res, second, "", fd, &err), 0, "restore: %s", err.message);
    close(fd);
    sh(second, "cat d/a; echo; cat d/b; echo; cat top; echo; stat -c '%h %s' d/a d/b top", &o);
    text = text_of(&o.out);
    cr_expect_eq(o.exit_code, 0, "reading the restored files failed: %s", text);
    cr_expect_str_eq(text, "content\ncontent\ncontent\n1 7\n1 7\n1 7\n",
                     "the restored names differ: %s", text);
    free(text);
    cordon_exec_outcome_clear(&o);
    /* An export of the directory alone carries both of its names too. */
    fd = memfd_create("collect", MFD_CLOEXEC);
    cr_assert_eq(vt.export_tar(res, first, "d", fd, &err), 0, "export of d: %s", err.message);
    text = tar_names(fd);
    cr_expect_str_eq(text, "a b", "export of d holds [%s]", text);
    free(text);
    close(fd);
}

Test(docker, setuid_file_through_the_archive_is_refused)
{
    struct cordon_exec_outcome o;
    const char *state;
    int fd, r;

    need_daemon();
    state = provision_default("host");
    fd = tar_with("suid", 04755, "#!/bin/sh\nid -u\n");
    r = vt.import_tar(res, state, "", fd, &err);
    close(fd);
    cr_expect_eq(r, CORDON_E_UNSAFE, "a setuid entry was not refused (%d): %s", r, err.message);
    cr_expect(strstr(err.message, "setuid") != NULL, "message: %s", err.message);
    sh(state, "test ! -e suid", &o);
    cr_expect_eq(o.exit_code, 0, "the refused entry reached the workspace");
    cordon_exec_outcome_clear(&o);
}

Test(docker, setuid_root_binary_in_the_image_does_not_raise_euid)
{
    const char *argv[] = { "/usr/local/bin/suid-observe", NULL };
    struct cordon_exec_outcome o;
    char copy[PATH_MAX], *cid = NULL, *image = NULL, target[200], *text;
    const char *state;
    cJSON *report;
    int in, outfd;

    need_daemon();
    /* An image with a setuid-root copy of the (static) observer: it reports
     * the effective uid it runs with. */
    snprintf(copy, sizeof(copy), "%s/suid-observe", tmp);
    in = open(observer, O_RDONLY | O_CLOEXEC);
    outfd = open(copy, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
    cr_assert(in >= 0 && outfd >= 0);
    for (;;) {
        char buf[65536];
        ssize_t n = read(in, buf, sizeof(buf));

        cr_assert(n >= 0);
        if (n == 0)
            break;
        cr_assert_eq(write(outfd, buf, (size_t)n), n);
    }
    close(in);
    close(outfd);
    cr_assert_eq(chown(copy, 0, 0), 0, "chown root: %s (run as root)", strerror(errno));
    cr_assert_eq(chmod(copy, 04755), 0);
    cr_assert_eq(docker_cmd(&cid, "create", minimal, "true", NULL, NULL), 0);
    cid[strcspn(cid, "\n")] = '\0';
    snprintf(target, sizeof(target), "%s:/usr/local/bin/suid-observe", cid);
    cr_assert_eq(docker_cmd(NULL, "cp", copy, target, NULL, NULL), 0);
    cr_assert_eq(docker_cmd(&image, "commit", cid, NULL, NULL, NULL), 0);
    docker_cmd(NULL, "rm", "-f", cid, NULL, NULL);
    free(cid);
    image[strcspn(image, "\n")] = '\0';

    state = provision_with(image, "host", &small);
    sh(state, "stat -c '%a %u' /usr/local/bin/suid-observe", &o);
    text = text_of(&o.out);
    cr_expect_str_eq(text, "4755 0\n", "the binary is not setuid root in the image: %s", text);
    free(text);
    cordon_exec_outcome_clear(&o);
    cr_assert_eq(run(state, argv, &defaults, &o), 0, "exec: %s", err.message);
    text = text_of(&o.out);
    report = cJSON_Parse(text);
    cr_expect_eq(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(report, "ids"),
                                                  "euid")->valuedouble,
                 state_uid(state), "a setuid-root binary ran with another euid than the "
                 "execution's: %s", text);
    cr_expect_eq(cJSON_GetObjectItemCaseSensitive(
                     cJSON_GetObjectItemCaseSensitive(report, "status"), "NoNewPrivs")->valuedouble,
                 1, "NoNewPrivs is not set: %s", text);
    cJSON_Delete(report);
    free(text);
    cordon_exec_outcome_clear(&o);
    vt.terminate(res, state, &err);
    docker_cmd(NULL, "rmi", "-f", image, NULL, NULL);
    free(image);
}

/* ---- exec ------------------------------------------------------------------------------ */

Test(docker, exec_feeds_stdin_and_keeps_stdout_and_stderr_apart)
{
    const char *argv[] = { "sh", "-c", "cat; echo to-stderr >&2; exit 7", NULL };
    struct run_opts opts = defaults;
    struct cordon_exec_outcome o;
    const char *state;
    char *out, *errs;
    int fd;

    need_daemon();
    state = provision_default("code");
    fd = memfd_create("stdin", MFD_CLOEXEC);
    cr_assert(fd >= 0 && write(fd, "from-stdin\n", 11) == 11 && lseek(fd, 0, SEEK_SET) == 0);
    opts.stdin_fd = fd;
    cr_assert_eq(run(state, argv, &opts, &o), 0, "exec: %s", err.message);
    close(fd);
    out = text_of(&o.out);
    errs = text_of(&o.err);
    cr_expect_eq(o.status, CORDON_RUN_EXITED);
    cr_expect_eq(o.exit_code, 7);
    cr_expect_str_eq(out, "from-stdin\n");
    cr_expect_str_eq(errs, "to-stderr\n");
    free(out);
    free(errs);
    cordon_exec_outcome_clear(&o);
}

Test(docker, exec_streams_large_stdin_and_stdout_together)
{
    const char *argv[] = { "cat", NULL };
    struct run_opts opts = defaults;
    struct cordon_exec_outcome o;
    const size_t size = 8u << 20;
    char *buf = malloc(size);
    const char *state;
    int fd;

    need_daemon();
    state = provision_default("code");
    cr_assert_not_null(buf);
    for (size_t i = 0; i < size; i++)
        buf[i] = (char)('a' + i % 26);
    fd = memfd_create("stdin", MFD_CLOEXEC);
    cr_assert(fd >= 0 && write(fd, buf, size) == (ssize_t)size && lseek(fd, 0, SEEK_SET) == 0);
    free(buf);
    /* Both directions at once: stdin must not wait for stdout or the reverse. */
    opts.stdin_fd = fd;
    opts.budget = 64u << 20;
    cr_assert_eq(run(state, argv, &opts, &o), 0, "exec: %s", err.message);
    close(fd);
    cr_expect_eq(o.status, CORDON_RUN_EXITED, "status %s", cordon_run_status_name(o.status));
    cr_expect_eq(o.out.total_bytes, size, "cat echoed %llu of %zu bytes",
                 (unsigned long long)o.out.total_bytes, size);
    cr_expect(o.out.len > 0 && o.out.data[0] == 'a', "the stream does not start with the input");
    cordon_exec_outcome_clear(&o);
}

Test(docker, process_that_ignores_its_stdin_still_finishes)
{
    const char *argv[] = { "head", "-c", "3", NULL };
    struct run_opts opts = defaults;
    struct cordon_exec_outcome o;
    const size_t size = 16u << 20;
    const char *state;
    int fd;

    need_daemon();
    state = provision_default("code");
    fd = memfd_create("stdin", MFD_CLOEXEC);
    cr_assert(fd >= 0 && ftruncate(fd, (off_t)size) == 0);
    opts.stdin_fd = fd;
    cr_assert_eq(run(state, argv, &opts, &o), 0, "exec: %s", err.message);
    close(fd);
    cr_expect_eq(o.status, CORDON_RUN_EXITED, "status %s", cordon_run_status_name(o.status));
    cr_expect_eq(o.exit_code, 0);
    cr_expect_eq(o.out.total_bytes, 3, "head echoed %llu bytes",
                 (unsigned long long)o.out.total_bytes);
    cordon_exec_outcome_clear(&o);
}

Test(docker, missing_program_is_not_found)
{
    const char *argv[] = { "no-such-program-here", NULL };
    struct cordon_exec_outcome o;
    const char *state;
    int r;

    need_daemon();
    state = provision_default("code");
    r = run(state, argv, &defaults, &o);
    cr_expect_eq(r, CORDON_E_NOT_FOUND, "exec of a missing program: %d (%s)", r, err.message);
    cr_expect(strstr(err.message, "no-such-program-here") != NULL, "message: %s", err.message);
    cordon_exec_outcome_clear(&o);
}

Test(docker, workspace_env_directories_belong_to_the_sandbox_user)
{
    const char *argv[] = { "sh", "-c", "stat -c '%u %a' \"$GOCACHE\"; echo \"$GOCACHE\"", NULL };
    struct run_opts opts = defaults;
    struct cordon_exec_outcome o;
    const char *state;
    char *out;

    need_daemon();
    state = provision_default("code");
    opts.extra = ", \"workspace_env\": {\"GOCACHE\": \"build/cache/go\"}";
    cr_assert_eq(run(state, argv, &opts, &o), 0, "exec: %s", err.message);
    out = text_of(&o.out);
    {
        char want[96];

        snprintf(want, sizeof(want), "%u 755\n/workspace/build/cache/go\n",
                 (unsigned)state_uid(state));
        cr_expect_str_eq(out, want, "GOCACHE: %s", out);
    }
    free(out);
    cordon_exec_outcome_clear(&o);
}

/* An execution's state names the daemon it was made on: a provider that
 * reaches the same daemon by another socket path (as one would reach
 * another daemon) refuses to act on it, where "no such container" would
 * have read as gone; the right provider then ends it. */
Test(docker, a_state_made_on_another_socket_is_refused_not_taken_for_gone)
{
    struct cordon_resource *other = NULL;
    struct cordon_exec_outcome o;
    char link[600], config[900];
    const char *state;

    need_daemon();
    state = provision_default("code");
    snprintf(link, sizeof(link), "%s/another.sock", tmp);
    cr_assert_eq(symlink(socket_path, link), 0, "%s: %s", link, strerror(errno));
    snprintf(config, sizeof(config), "{\"image\": \"%s\", \"socket\": \"%s\"}", minimal, link);
    cr_assert_eq(vt.ensure(&host, config, &other, &err), 0, "ensure(%s): %s", config, err.message);
    cr_expect_eq(vt.terminate(other, state, &err), CORDON_E_UNAVAILABLE, "terminate through %s", link);
    cr_expect_neq(strstr(err.message, "state.socket"), NULL, "%s", err.message);
    cr_expect_neq(strstr(err.message, link), NULL, "the message names the socket reached: %s",
                  err.message);
    cr_expect(container_exists(container_of(state)), "the refused terminate removed the container");
    vt.release(other, &err);
    /* The provider that made it still reaches it. */
    sh(state, "echo still", &o);
    cr_expect_eq(o.exit_code, 0);
    cordon_exec_outcome_clear(&o);
}

Test(docker, list_executions_names_what_this_host_holds)
{
    char *listed = NULL, id[80];
    const char *state;

    need_daemon();
    state = provision_default("host");
    snprintf(id, sizeof(id), "\"%s\"", execution_of(state));
    cr_assert_eq(vt.list_executions(res, &listed, &err), 0, "list_executions: %s", err.message);
    cr_expect(strstr(listed, id) != NULL, "%s is not listed: %s", id, listed);
    free(listed);
    cr_assert_eq(vt.terminate(res, state, &err), 0, "terminate: %s", err.message);
    cr_assert_eq(vt.list_executions(res, &listed, &err), 0, "list_executions: %s", err.message);
    cr_expect(strstr(listed, id) == NULL, "%s is still listed after terminate: %s", id, listed);
    free(listed);
}

/* ---- config and the runtime seam --------------------------------------------------------- */

struct bad_config {
    char name[48];
    char config[160];
    char says[48];        /* the error message names this */
};

ParameterizedTestParameters(docker, bad_config_is_refused_naming_the_key)
{
    static struct bad_config rows[] = {
        { "an unknown key", "{\"colour\": \"blue\"}", "config.colour: unknown key" },
        { "privileged", "{\"privileged\": true}", "config.privileged: unknown key" },
        { "an unpinned image", "{\"image\": \"debian:12\"}", "not pinned" },
        { "a short digest", "{\"image\": \"debian@sha256:abcd\"}", "malformed" },
        { "an upper-case digest",
          "{\"image\": \"sha256:ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789\"}",
          "malformed" },
        { "root as the user", "{\"user\": \"0:0\"}", "must not be root" },
        { "a named user", "{\"user\": \"nobody\"}", "UID:GID" },
        { "a user of the uid pool", "{\"user\": \"1879048200:1879048200\"}", "is the uid pool" },
        { "a relative socket", "{\"socket\": \"docker.sock\"}", "absolute" },
        { "a runtime with a slash", "{\"runtime\": \"../runc\"}", "config.runtime" },
        { "allow_unpinned not a boolean", "{\"allow_unpinned\": \"yes\"}", "true or false" },
        { "not an object", "[1, 2]", "JSON object" },
    };

    return cr_make_param_array(struct bad_config, rows, sizeof(rows) / sizeof(rows[0]));
}

ParameterizedTest(struct bad_config *row, docker, bad_config_is_refused_naming_the_key)
{
    char *facts = NULL;
    int r;

    r = vt.probe(&host, row->config, CORDON_PROBE_AVAILABILITY, &facts, &err);
    cr_expect_lt(r, 0, "probe accepted %s", row->name);
    cr_expect(strstr(err.message, row->says) != NULL, "%s: the message \"%s\" lacks \"%s\"",
              row->name, err.message, row->says);
    r = vt.ensure(&host, row->config, &res, &err);
    cr_expect_lt(r, 0, "ensure accepted %s", row->name);
    if (r == 0) {
        vt.release(res, &err);
        res = NULL;
    }
    free(facts);
}

/* s with its "@" replaced by the suite's socket path, into buf. */
static const char *at_socket(char *buf, size_t size, const char *s)
{
    const char *at = strchr(s, '@');

    if (at == NULL)
        snprintf(buf, size, "%s", s);
    else
        snprintf(buf, size, "%.*s%s%s", (int)(at - s), s, socket_path, at + 1);
    return buf;
}

struct good_config {
    char name[48];
    char extra[120];       /* spliced after the image key */
    bool available;
    char reason[32];
};

ParameterizedTestParameters(docker, good_config_probes_as_expected)
{
    static struct good_config rows[] = {
        { "the image alone", "", true, "ready" },
        { "a numeric user", ", \"user\": \"1000:1000\"", true, "ready" },
        { "the socket named", ", \"socket\": \"@\"", true, "ready" },
        { "the host's consent flag", ", \"allow_unsafe_local\": true", true, "ready" },
        { "a socket nobody listens on", ", \"socket\": \"/nonexistent/docker.sock\"", false,
          "daemon_unreachable" },
        { "an unregistered runtime", ", \"runtime\": \"cordon-no-such-runtime\"", false,
          "runtime_unregistered" },
    };

    return cr_make_param_array(struct good_config, rows, sizeof(rows) / sizeof(rows[0]));
}

ParameterizedTest(struct good_config *row, docker, good_config_probes_as_expected)
{
    char config[600], extra[300], *facts = NULL;
    cJSON *doc;

    need_daemon();
    /* "@" is the socket the suite uses (the daemon DOCKER_HOST names). */
    snprintf(config, sizeof(config), "{\"image\": \"%s\"%s}", minimal,
             at_socket(extra, sizeof(extra), row->extra));
    cr_assert_eq(vt.probe(&host, config, CORDON_PROBE_AVAILABILITY, &facts, &err), 0,
                 "probe of %s: %s", row->name, err.message);
    doc = cJSON_Parse(facts);
    cr_expect_eq(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "available")), row->available,
                 "%s: %s", row->name, facts);
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "reason")),
                     row->reason, "%s: %s", row->name, facts);
    cJSON_Delete(doc);
    free(facts);
}

struct docker_host_row {
    char name[48];
    char docker_host[120]; /* "@" is the suite's socket path */
    char extra[120];       /* spliced after the image key; "@" as well */
    int rc;                /* of the probe */
    char reason[32];       /* when it answered */
    char says[64];         /* in the reason's detail, or the error */
};

ParameterizedTestParameters(docker, docker_host_names_the_socket_when_the_config_does_not)
{
    static struct docker_host_row rows[] = {
        { "DOCKER_HOST's socket", "unix://@", "", 0, "ready", "" },
        { "DOCKER_HOST naming no daemon", "unix:///nonexistent/docker.sock", "", 0,
          "daemon_unreachable", "/nonexistent/docker.sock" },
        { "the config's socket over DOCKER_HOST", "unix:///nonexistent/docker.sock",
          ", \"socket\": \"@\"", 0, "ready", "" },
        { "a tcp DOCKER_HOST", "tcp://127.0.0.1:2375", "", CORDON_E_INVALID, "",
          "DOCKER_HOST: \"tcp://127.0.0.1:2375\"" },
        { "a tcp DOCKER_HOST and the config's socket", "tcp://127.0.0.1:2375",
          ", \"socket\": \"@\"", 0, "ready", "" },
        { "a relative unix DOCKER_HOST", "unix://docker.sock", "", CORDON_E_INVALID, "",
          "DOCKER_HOST: \"unix://docker.sock\"" },
    };

    return cr_make_param_array(struct docker_host_row, rows, sizeof(rows) / sizeof(rows[0]));
}

/* docker.so reaches the daemon the docker command would: a test run points
 * both at a daemon of its own with DOCKER_HOST alone. */
ParameterizedTest(struct docker_host_row *row, docker,
                  docker_host_names_the_socket_when_the_config_does_not)
{
    char config[600], extra[300], env[300], *facts = NULL;
    const char *detail;
    cJSON *doc;
    int r;

    need_daemon();
    snprintf(config, sizeof(config), "{\"image\": \"%s\"%s}", minimal,
             at_socket(extra, sizeof(extra), row->extra));
    cr_assert_eq(setenv("DOCKER_HOST", at_socket(env, sizeof(env), row->docker_host), 1), 0);
    r = vt.probe(&host, config, CORDON_PROBE_AVAILABILITY, &facts, &err);
    cr_expect_eq(r, row->rc, "%s: probe returned %d (%s)", row->name, r, err.message);
    if (r < 0) {
        cr_expect(strstr(err.message, row->says) != NULL, "%s: the error \"%s\" lacks \"%s\"",
                  row->name, err.message, row->says);
        cr_expect_lt(vt.ensure(&host, config, &res, &err), 0, "%s: ensure accepted it", row->name);
    } else {
        doc = cJSON_Parse(facts);
        detail = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "detail"));
        cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "reason")),
                         row->reason, "%s: %s", row->name, facts);
        cr_expect(strstr(detail != NULL ? detail : "", row->says) != NULL,
                  "%s: the detail lacks \"%s\": %s", row->name, row->says, facts);
        cJSON_Delete(doc);
    }
    if (res != NULL) {
        vt.release(res, &err);
        res = NULL;
    }
    unsetenv("DOCKER_HOST");
    free(facts);
}

Test(docker, unpinned_image_in_a_spec_is_refused)
{
    char *text, *state = NULL;

    need_daemon();
    ensure_default();
    track_id("dt-unpinned");
    text = spec("dt-unpinned", "debian:12", "code", &small);
    cr_expect_eq(vt.provision(res, text, &state, &err), CORDON_E_DENIED,
                 "an unpinned image was accepted: %s", err.message);
    cr_expect(strstr(err.message, "not pinned") != NULL, "message: %s", err.message);
    free(text);
    free(state);
    cr_expect_eq(count_labelled("org.cordon.execution-id=dt-unpinned"), 0);
}

Test(docker, unregistered_runtime_is_unavailable_and_never_replaced)
{
    char config[200], *facts = NULL;
    cJSON *doc;
    int r;

    need_daemon();
    snprintf(config, sizeof(config),
             "{\"image\": \"%s\", \"runtime\": \"cordon-no-such-runtime\"}", minimal);
    cr_assert_eq(vt.probe(&host, config, CORDON_PROBE_FULL, &facts, &err), 0, "%s", err.message);
    doc = cJSON_Parse(facts);
    cr_expect(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(doc, "available")), "%s", facts);
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "reason")),
                     "runtime_unregistered", "%s", facts);
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                         cJSON_GetObjectItemCaseSensitive(doc, "mechanism_facts"), "runtime")),
                     "cordon-no-such-runtime", "%s", facts);
    cJSON_Delete(doc);
    free(facts);
    r = vt.ensure(&host, config, &res, &err);
    cr_expect_eq(r, CORDON_E_UNAVAILABLE, "ensure with an unregistered runtime: %d", r);
    cr_expect(strstr(err.message, "runtime_unregistered") != NULL, "message: %s", err.message);
    if (r == 0) {
        vt.release(res, &err);
        res = NULL;
    }
}

Test(docker, registered_runtime_variant_runs_every_container)
{
    char config[200], *facts = NULL, *out = NULL;
    struct cordon_exec_outcome o;
    const char *state;
    cJSON *doc;

    need_daemon();
    cr_assert_eq(docker_cmd(&out, "info", "--format", "{{json .Runtimes}}", NULL, NULL), 0);
    if (strstr(out, "cordon-test-runc") == NULL) {
        free(out);
        skip("the daemon has no runtime cordon-test-runc: start it with "
             "tests/mechanism/dockerd.sh (dockerd --add-runtime cordon-test-runc=runc)");
    }
    free(out);
    snprintf(config, sizeof(config), "{\"image\": \"%s\", \"runtime\": \"cordon-test-runc\"}",
             minimal);
    cr_assert_eq(vt.probe(&host, config, CORDON_PROBE_FULL, &facts, &err), 0, "%s", err.message);
    doc = cJSON_Parse(facts);
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "available")), "%s", facts);
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                         cJSON_GetObjectItemCaseSensitive(doc, "mechanism_facts"), "runtime")),
                     "cordon-test-runc", "%s", facts);
    cJSON_Delete(doc);
    free(facts);
    ensure_with(config);
    state = provision_default("code");
    cr_assert_eq(docker_cmd(&out, "inspect", "-f", "{{.HostConfig.Runtime}}",
                            container_of(state), NULL), 0);
    cr_expect_str_eq(out, "cordon-test-runc\n", "the container runs under %s", out);
    free(out);
    sh(state, "id -u", &o);
    cr_expect_eq(o.exit_code, 0);
    cordon_exec_outcome_clear(&o);
}

/* ---- the cordon command ------------------------------------------------------------------- */

struct example {
    char language[16];
    char path[48];
    char greeting[40];
};

ParameterizedTestParameters(docker, cordon_run_required_isolation_runs_the_examples)
{
    static struct example rows[] = {
        { "python", "examples/python/hello.py", "hello from python" },
        { "node", "examples/node/hello.js", "hello from node" },
        { "go", "examples/go/main.go", "hello from go" },
        { "cpp", "examples/cpp/main.cpp", "hello from c++" },
    };

    return cr_make_param_array(struct example, rows, sizeof(rows) / sizeof(rows[0]));
}

ParameterizedTest(struct example *row, docker, cordon_run_required_isolation_runs_the_examples)
{
    static const char *const axes[] = { "process_contained", "host_filesystem_restricted",
                                        "privilege_escalation_blocked", "syscalls_restricted" };
    char bin[PATH_MAX], dir[PATH_MAX], cfg[PATH_MAX], state_dir[PATH_MAX], ws[PATH_MAX];
    char example[PATH_MAX], env_path[PATH_MAX + 32], env_obs[PATH_MAX + 32], label[120];
    char *out = NULL, *instance = NULL;
    const cJSON *facts, *iso;
    cJSON *doc;
    FILE *f;
    int rc;

    need_daemon();
    cr_assert_not_null(realpath(env_or("CORDON_BIN", CORDON_BUILDDIR "/cordon"), bin),
                       "the cordon command: %s (set CORDON_BIN)", strerror(errno));
    snprintf(dir, sizeof(dir), "%s", provider_path);
    *strrchr(dir, '/') = '\0';
    snprintf(cfg, sizeof(cfg), "%s/config.json", tmp);
    snprintf(state_dir, sizeof(state_dir), "%s/state", tmp);
    snprintf(ws, sizeof(ws), "%s/ws", tmp);
    snprintf(example, sizeof(example), "%s/%s", CORDON_SRCDIR, row->path);
    cr_assert_eq(mkdir(ws, 0755), 0);
    f = fopen(cfg, "we");
    cr_assert_not_null(f);
    fprintf(f, "{\"provider_configs\": {\"docker\": {\"image\": \"%s\"}}}\n", toolchain);
    fclose(f);
    snprintf(env_path, sizeof(env_path), "CORDON_PROVIDER_PATH=%s", dir);
    snprintf(env_obs, sizeof(env_obs), "CORDON_OBSERVER=%s", observer);
    {
        const char *argv[] = { bin, "--config", cfg, "--state-dir", state_dir, "run", "--json",
                               "--isolation", "required", "--provider", "docker", "--image",
                               toolchain, "--workspace", ws, example, NULL };
        const char *env[] = { env_path, env_obs, NULL };

        rc = capture(argv, env, &out);
    }
    doc = cJSON_Parse(out);
    cr_assert(cJSON_IsObject(doc), "cordon run --json printed no JSON (exit %d): %.500s", rc, out);
    cr_expect_eq(rc, 0, "cordon run exited %d: %.800s", rc, out);
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "ok")), "not ok: %.800s", out);
    cr_expect(strstr(str_or_empty(cJSON_GetObjectItemCaseSensitive(doc, "stdout")),
                     row->greeting) != NULL,
              "%s printed no \"%s\": %.500s", row->language, row->greeting, out);
    facts = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "meta"),
                                             "provider_facts");
    cr_expect_str_eq(str_or_empty(cJSON_GetObjectItemCaseSensitive(
                         cJSON_GetObjectItemCaseSensitive(doc, "meta"), "provider_id")),
                     "docker");
    cr_expect_str_eq(str_or_empty(cJSON_GetObjectItemCaseSensitive(facts, "observed_by")),
                     "cordon-observe");
    iso = cJSON_GetObjectItemCaseSensitive(facts, "isolation");
    for (size_t i = 0; i < sizeof(axes) / sizeof(axes[0]); i++)
        cr_expect(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(iso, axes[i])),
                  "the facts do not show %s observed true", axes[i]);
    cJSON_Delete(doc);
    free(out);
    /* Nothing of the run's own host instance remains on the daemon. */
    snprintf(cfg, sizeof(cfg), "%s/instance-id", state_dir);
    f = fopen(cfg, "re");
    cr_assert_not_null(f);
    instance = calloc(1, 64);
    cr_assert(fgets(instance, 64, f) != NULL);
    fclose(f);
    snprintf(label, sizeof(label), "org.cordon.host=%s", instance);
    cr_expect_eq(count_labelled(label), 0, "cordon run left a container behind");
    free(instance);
}

/* ---- the daemon going away (a daemon of the test's own) ------------------------------------ */

/* The test stops and restarts a daemon: never the machine's (a developer's
 * containers run there), always one it starts itself, with its own socket,
 * data and exec roots and containerd, all in private_dir, which the suite's
 * fini removes with the daemon on every path an assertion can take. */
static char *private_dir;

static int private_dockerd(const char *verb, const char *arg, char **ret_out)
{
    const char *argv[] = { "bash", CORDON_SRCDIR "/tests/mechanism/private-dockerd.sh", verb,
                           private_dir, arg, NULL };

    return capture(argv, NULL, ret_out);
}

static void daemon_teardown(void)
{
    teardown();
    if (private_dir != NULL && private_dockerd("remove", NULL, NULL) != 0)
        cr_log_warn("fini: could not remove the private daemon in %s", private_dir);
    free(private_dir);
    private_dir = NULL;
}

TestSuite(docker_daemon, .init = setup, .fini = daemon_teardown, .timeout = 300);

static pid_t state_init(const char *state);

/* The pids of every dockerd on the machine, space-separated (the private
 * one is not running when this is asked). Zombies are left out: the
 * private dockerd, once stopped, waits for this machine's init to reap
 * it, which can take seconds. */
static char *dockerd_pids(void)
{
    const char *argv[] = { "sh", "-c", "ps -C dockerd -o stat=,pid= | awk '$1 !~ /^Z/ { print $2 }'",
                           NULL };
    char *out = NULL;
    size_t len;

    capture(argv, NULL, &out);
    len = strlen(out);
    while (len > 0 && out[len - 1] == '\n')
        out[--len] = '\0';
    for (char *p = out; *p != '\0'; p++)
        if (*p == '\n')
            *p = ' ';
    return out;
}

Test(docker_daemon, stopped_daemon_is_a_clear_error_and_reclaim_works_after_restart)
{
    const char *argv[] = { "true", NULL };
    struct cordon_exec_outcome o;
    char id[80], label[160], config[600], host_env[300], tar_path[PATH_MAX];
    char *image = NULL, *pids_before, *pids_after, *nl;
    const char *state, *run_id = env_or("CORDON_TEST_RUN_ID", host_id), *tarball;
    static char sock[PATH_MAX], prefix[80];
    int r;

    if (strcmp(env_or("CORDON_DOCKER_STOP_DAEMON", "0"), "1") != 0)
        skip("starts, stops and restarts a Docker daemon of its own: run alone with "
             "CORDON_DOCKER_STOP_DAEMON=1 and --filter "
             "'docker_daemon/stopped_daemon_is_a_clear_error_and_reclaim_works_after_restart' "
             "(Criterion's filter does not match 'docker_daemon/*')");
    tarball = env_or("CORDON_RUNC_IMAGE_MINIMAL", NULL);
    cr_assert_not_null(tarball, "CORDON_RUNC_IMAGE_MINIMAL must name the minimal rootfs tarball "
                                "(tests/images/build-images.sh prints it), which this test "
                                "imports into its own daemon");
    cr_assert(strspn(run_id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
                  == strlen(run_id) && strlen(run_id) <= 40,
              "CORDON_TEST_RUN_ID: \"%s\" must be at most 40 of [A-Za-z0-9_-]", run_id);
    pids_before = dockerd_pids();
    snprintf(prefix, sizeof(prefix), "cordon-dockerd-%s.", run_id);
    cr_assert_eq(cordon_fs_mkdtemp(env_or("TMPDIR", "/tmp"), prefix, &private_dir, &err), 0,
                 "%s", err.message);
    /* containerd's socket, the longest path under it, must fit a sockaddr_un */
    cr_assert(strlen(private_dir) + sizeof("/exec/containerd/containerd.sock.ttrpc") <= 108,
              "the private daemon's directory %s is too long for a socket path (at most %zu "
              "bytes): set TMPDIR to a shorter one", private_dir,
              108 - sizeof("/exec/containerd/containerd.sock.ttrpc"));
    cr_assert_eq(private_dockerd("start", NULL, NULL), 0,
                 "private-dockerd.sh start %s failed (its log: %s/dockerd.log)", private_dir,
                 private_dir);
    snprintf(sock, sizeof(sock), "%s/docker.sock", private_dir);
    socket_path = sock;
    /* The docker command the checks below run looks at that daemon too. */
    snprintf(host_env, sizeof(host_env), "unix://%s", sock);
    cr_assert_eq(setenv("DOCKER_HOST", host_env, 1), 0);
    snprintf(tar_path, sizeof(tar_path), "%.*s", (int)strcspn(tarball, "@"), tarball);
    cr_assert_eq(private_dockerd("import", tar_path, &image), 0, "importing %s failed", tar_path);
    if ((nl = strchr(image, '\n')) != NULL)
        *nl = '\0';
    cr_assert(strncmp(image, "sha256:", 7) == 0 && strlen(image) == 71 &&
                  strspn(image + 7, "0123456789abcdef") == 64,
              "private-dockerd.sh import printed \"%s\", not an image id", image);
    minimal = image;
    snprintf(config, sizeof(config), "{\"image\": \"%s\", \"socket\": \"%s\"}", image, sock);
    ensure_with(config);

    state = provision_default("code");
    snprintf(id, sizeof(id), "%s", execution_of(state));
    cr_assert_eq(private_dockerd("stop", NULL, NULL), 0, "private-dockerd.sh stop failed");
    r = run(state, argv, &defaults, &o);
    cordon_exec_outcome_clear(&o);
    /* Through the exec API the daemon is needed and gone. Through the
     * agent it is not, but dockerd's shutdown (no live-restore) stopped the
     * container: its init is gone, the exec fails closed, and removing
     * what is left needed the daemon, which the message says. */
    if (state_init(state) > 0)
        cr_expect_eq(r, CORDON_E_NOT_FOUND, "agent exec with the daemon stopped: %d (%s)", r,
                     err.message);
    else
        cr_expect_eq(r, CORDON_E_UNAVAILABLE, "exec with the daemon stopped: %d (%s)", r,
                     err.message);
    cr_expect(strstr(err.message, socket_path) != NULL, "the error does not name the socket: %s",
              err.message);
    cr_assert_eq(private_dockerd("start", NULL, NULL), 0, "private-dockerd.sh start (again) failed");
    /* The record (our state) survived; reclaim by id clears whatever is left. */
    cr_expect_eq(vt.reclaim(res, id, &err), 0, "reclaim after the restart: %s", err.message);
    snprintf(label, sizeof(label), "org.cordon.execution-id=%s", id);
    cr_expect_eq(count_labelled(label), 0, "the execution's container survived reclaim");

    /* Done with it: the daemon goes now, so that the machine's can be
     * compared; fini would remove it on any other path. */
    teardown();
    cr_assert_eq(private_dockerd("remove", NULL, NULL), 0, "private-dockerd.sh remove failed");
    free(private_dir);
    private_dir = NULL;
    pids_after = dockerd_pids();
    cr_expect_str_eq(pids_after, pids_before,
                     "the machine's dockerd pids changed across the test: before [%s] after [%s]",
                     pids_before, pids_after);
    cr_log_info("the machine's dockerd pids, the same before and after: [%s]", pids_before);
    free(pids_after);
    free(pids_before);
    minimal = NULL;
    free(image);
}

/* ---- one uid per execution ------------------------------------------------------- */

Test(docker, each_execution_has_a_uid_and_per_user_limits_of_its_own)
{
    struct cordon_exec_outcome o;
    const char *a, *b;
    char *out, want[64];
    uid_t ua, ub;
    int n = 0;

    need_daemon();
    a = provision_with(toolchain, "host", &small);
    b = provision_with(toolchain, "host", &small);
    ua = state_uid(a);
    ub = state_uid(b);
    cr_assert_neq(ua, ub, "two executions share uid %u", (unsigned)ua);
    /* A holds every inotify instance its per-user limit allows, in the background... */
    sh(a, TEST_INOTIFY_PROGRAM "setsid /tmp/ino hold </dev/null >/dev/null 2>/tmp/err & "
          "for i in $(seq 200); do [ -s /tmp/n ] && break; sleep 0.05; done; "
          "cat /tmp/n /tmp/err; echo; id -u", &o);
    out = text_of(&o.out);
    cordon_exec_outcome_clear(&o);
    snprintf(want, sizeof(want), "\n%u\n", (unsigned)ua);
    cr_assert(sscanf(out, "%d", &n) == 1 && n > 0 && strstr(out, want) != NULL, "A: %s", out);
    free(out);
    /* ...and B, another uid, still gets one. */
    sh(b, TEST_INOTIFY_PROGRAM "/tmp/ino try; id -u", &o);
    out = text_of(&o.out);
    cordon_exec_outcome_clear(&o);
    snprintf(want, sizeof(want), "1\n%u\n", (unsigned)ub);
    cr_assert_str_eq(out, want, "B, while A held %d inotify instances: %s", n, out);
    free(out);
}

/* ---- the resident agent (mechanism_facts.exec_path "agent") --------------------------- */

/* state's init_pid (0 without the agent). */
static pid_t state_init(const char *state)
{
    cJSON *doc = cJSON_Parse(state);
    pid_t pid = (pid_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(doc, "init_pid"));

    cJSON_Delete(doc);
    return pid > 0 ? pid : 0;
}

/* A full probe's mechanism_facts.exec_path (and _reason) for config. */
static void probe_exec_path(const char *config, char *ret, size_t size, char *ret_reason,
                            size_t rsize)
{
    char *facts = NULL;
    cJSON *doc, *mech;

    cr_assert_eq(vt.probe(&host, config, CORDON_PROBE_FULL, &facts, &err), 0, "%s", err.message);
    doc = cJSON_Parse(facts);
    mech = cJSON_GetObjectItemCaseSensitive(doc, "mechanism_facts");
    snprintf(ret, size, "%s", str_or_empty(cJSON_GetObjectItemCaseSensitive(mech, "exec_path")));
    snprintf(ret_reason, rsize, "%s",
             str_or_empty(cJSON_GetObjectItemCaseSensitive(mech, "exec_path_reason")));
    cJSON_Delete(doc);
    host.free(facts);
}

/* status code signal [stdout] [stderr] of sh -c script through res. */
static char *result_line(const char *state, const char *script)
{
    struct cordon_exec_outcome o;
    char *out, *errtext, *line = NULL;

    sh(state, script, &o);
    out = text_of(&o.out);
    errtext = text_of(&o.err);
    cr_assert(asprintf(&line, "%s %d %d [%s] [%s]", cordon_run_status_name(o.status), o.exit_code,
                       o.signal, out, errtext) > 0);
    cordon_exec_outcome_clear(&o);
    free(out);
    free(errtext);
    return line;
}

/* The agent and the exec API on one container: the same outputs, exits,
 * env (the image's, the spec's, the request's, PATH, HOME, HOSTNAME), cwd
 * and user; a signal is a real one through the agent, where the exec API
 * can only say "exit 128+N, maybe a signal". */
Test(docker, agent_exec_matches_the_engine_and_reports_real_signals)
{
    static const char *const same[] = {
        "echo out; echo err >&2; exit 3",
        "env | sort; pwd; id",
        "exit 127",
        "cat /proc/self/status | grep -E '^(Cap|NoNewPrivs|Seccomp:|Groups)'; ulimit -a",
        "cd /tmp && echo in tmp && ls /proc/self/fd",
    };
    struct cordon_resource *agent_res, *engine_res = NULL;
    struct cordon_exec_outcome o;
    char config[300], path[32], reason[200];
    const char *state;

    need_daemon();
    snprintf(config, sizeof(config), "{\"image\": \"%s\"}", minimal);
    probe_exec_path(config, path, sizeof(path), reason, sizeof(reason));
    cr_expect_str_eq(path, "agent", "exec_path %s (%s)", path, reason);
    state = provision_default("code");
    cr_assert(strstr(state, "\"agent\":true") != NULL, "not provisioned with the agent: %s", state);
    cr_assert_gt(state_init(state), 1, "no init pid in %s", state);
    agent_res = res;
    snprintf(config, sizeof(config), "{\"image\": \"%s\", \"exec_agent\": false}", minimal);
    cr_assert_eq(vt.ensure(&host, config, &engine_res, &err), 0, "%s", err.message);
    for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
        char *a, *e;

        res = agent_res;
        a = result_line(state, same[i]);
        res = engine_res;
        e = result_line(state, same[i]);
        res = agent_res;
        cr_expect_str_eq(a, e, "`%s`: agent %s, engine %s", same[i], a, e);
        free(a);
        free(e);
    }
    /* ls's own directory fd is 3: nothing else above 2 came in. */
    sh(state, "ls /proc/self/fd | tr '\\n' ' '", &o);
    {
        char *fds = text_of(&o.out);

        cr_expect_str_eq(fds, "0 1 2 3 ", "fds inside: %s", fds);
        free(fds);
    }
    cordon_exec_outcome_clear(&o);
    sh(state, "kill -TERM $$", &o);
    cr_expect(o.status == CORDON_RUN_SIGNALED && o.signal == SIGTERM, "status %s signal %d exit %d",
              cordon_run_status_name(o.status), o.signal, o.exit_code);
    cordon_exec_outcome_clear(&o);
    sh(state, "kill -KILL $$", &o);
    cr_expect(o.status == CORDON_RUN_SIGNALED && o.signal == SIGKILL, "status %s signal %d",
              cordon_run_status_name(o.status), o.signal);
    cordon_exec_outcome_clear(&o);
    /* The agent saw a real exit 137: not marked as a possible signal. */
    sh(state, "exit 137", &o);
    cr_expect(o.status == CORDON_RUN_EXITED && o.exit_code == 137 && o.signal == 0,
              "status %s exit %d signal %d", cordon_run_status_name(o.status), o.exit_code,
              o.signal);
    cordon_exec_outcome_clear(&o);
    /* Through the exec API the same death is an exit 128+15, marked folded. */
    res = engine_res;
    sh(state, "kill -TERM $$", &o);
    res = agent_res;
    cr_expect(o.status == CORDON_RUN_EXITED && o.exit_code == 143 && o.signal == SIGTERM,
              "engine: status %s exit %d signal %d", cordon_run_status_name(o.status), o.exit_code,
              o.signal);
    cordon_exec_outcome_clear(&o);
    /* The request's cwd, and a missing program, as the exec API gives them. */
    {
        const char *argv[] = { "no-such-program", NULL };

        cr_expect_eq(run(state, argv, &defaults, &o), CORDON_E_NOT_FOUND, "%s", err.message);
        cordon_exec_outcome_clear(&o);
    }
    vt.release(engine_res, &err);
}

Test(docker, exec_agent_false_keeps_the_engine_path)
{
    struct cordon_exec_outcome o;
    char config[300], path[32], reason[200], *out;
    const char *state;

    need_daemon();
    snprintf(config, sizeof(config), "{\"image\": \"%s\", \"exec_agent\": false}", minimal);
    probe_exec_path(config, path, sizeof(path), reason, sizeof(reason));
    cr_expect_str_eq(path, "engine");
    cr_expect(strstr(reason, "exec_agent") != NULL, "reason: %s", reason);
    ensure_with(config);
    state = provision_default("host");
    cr_assert(strstr(state, "\"agent\"") == NULL && state_init(state) == 0, "%s", state);
    /* cordon-init runs without --agent: no channel at fd 3 or 4. */
    sh(state, "cat /proc/1/cmdline | tr '\\0' ' '; exit 4", &o);
    out = text_of(&o.out);
    cr_expect(o.status == CORDON_RUN_EXITED && o.exit_code == 4, "status %s exit %d",
              cordon_run_status_name(o.status), o.exit_code);
    cr_expect(strstr(out, "--agent") == NULL && strstr(out, "cordon-init") != NULL, "%s", out);
    free(out);
    cordon_exec_outcome_clear(&o);
}

/* Calls to the daemon, counted from the engine's debug line per call
 * ("GET /_ping: 200 in 1 ms"). */
static unsigned daemon_calls;

static void count_daemon_calls(enum cordon_log_level level, const char *provider_id,
                               const char *msg)
{
    static const char *const methods[] = { "GET ", "POST ", "PUT ", "HEAD ", "DELETE " };

    (void)level;
    (void)provider_id;
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
        if (strncmp(msg, methods[i], strlen(methods[i])) == 0)
            __atomic_add_fetch(&daemon_calls, 1, __ATOMIC_SEQ_CST);
}

/* An ensure whose config names no image or runtime, and an exec through
 * the agent, make no call to the daemon: they never load libcurl either.
 * The exec API's path makes calls, so the count is seen to move. */
Test(docker, agent_exec_and_a_plain_ensure_make_no_daemon_call)
{
    struct cordon_resource *plain = NULL, *engine_res = NULL, *first;
    struct cordon_exec_outcome o;
    const char *state;
    unsigned before;

    need_daemon();
    host.log = count_daemon_calls;
    state = provision_default("code");
    cr_assert_gt(daemon_calls, 0u, "the provision made no daemon call that the log counted");
    first = res;
    before = daemon_calls;
    cr_assert_eq(vt.ensure(&host, "{}", &plain, &err), 0, "ensure {}: %s", err.message);
    cr_expect_eq(daemon_calls, before, "ensure {} made %u daemon calls", daemon_calls - before);
    res = plain;
    sh(state, "exit 5", &o);
    cr_expect(o.status == CORDON_RUN_EXITED && o.exit_code == 5, "status %s exit %d",
              cordon_run_status_name(o.status), o.exit_code);
    cordon_exec_outcome_clear(&o);
    cr_expect_eq(daemon_calls, before, "the agent exec made %u daemon calls",
                 daemon_calls - before);
    cr_assert_eq(vt.ensure(&host, "{\"exec_agent\": false}", &engine_res, &err), 0, "%s",
                 err.message);
    res = engine_res;
    sh(state, "exit 6", &o);
    cr_expect(o.status == CORDON_RUN_EXITED && o.exit_code == 6, "engine: status %s exit %d",
              cordon_run_status_name(o.status), o.exit_code);
    cordon_exec_outcome_clear(&o);
    cr_expect_gt(daemon_calls, before, "the exec API's path made no daemon call");
    vt.release(engine_res, &err);
    vt.release(first, &err);
    res = plain;   /* teardown terminates through it */
}

/* ensure checks the socket without a call: a path with no socket is
 * refused there, naming it, and leaves no resource. */
Test(docker, ensure_refuses_a_socket_path_with_no_socket)
{
    static const char *const configs[] = { "{\"socket\": \"/nonexistent/docker.sock\"}",
                                           "{\"socket\": \"/etc/hostname\"}" };

    for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); i++) {
        struct cordon_resource *r = NULL;

        cr_expect_eq(vt.ensure(&host, configs[i], &r, &err), CORDON_E_UNAVAILABLE, "%s: %s",
                     configs[i], err.message);
        cr_expect(r == NULL, "%s: a resource was returned", configs[i]);
        cr_expect(strstr(err.message, i == 0 ? "/nonexistent/docker.sock" : "not a socket") != NULL,
                  "%s: %s", configs[i], err.message);
    }
}

struct exec_job {
    const char *state;
    const char *const *argv;
    struct cordon_exec_outcome o;
    int rc;
};

static void *exec_job_main(void *arg)
{
    struct exec_job *j = arg;

    j->rc = run(j->state, j->argv, &defaults, &j->o);
    return NULL;
}

/* kill -9 of the agent (the container's init) from the host while a
 * command runs: a typed error, the container gone, and the next exec a
 * typed error too, never an exec into something else. */
Test(docker, killed_agent_fails_the_exec_closed)
{
    const char *argv[] = { "sleep", "30", NULL };
    struct exec_job job = { .argv = argv };
    struct cordon_exec_outcome o;
    char cid[80], children[64], *text = NULL;
    pthread_t t;
    pid_t init;
    bool running = false;

    need_daemon();
    job.state = provision_default("host");
    snprintf(cid, sizeof(cid), "%s", container_of(job.state));
    init = state_init(job.state);
    cr_assert_gt(init, 1, "no agent in %s", job.state);
    cr_assert_eq(pthread_create(&t, NULL, exec_job_main, &job), 0);
    snprintf(children, sizeof(children), "/proc/%d/task/%d/children", (int)init, (int)init);
    for (int i = 0; i < 500 && !running; i++) {
        FILE *f = fopen(children, "re");
        char buf[64] = "";

        running = f != NULL && fgets(buf, sizeof(buf), f) != NULL && atoi(buf) > 0;
        if (f != NULL)
            fclose(f);
        sleep_ms(10);
    }
    cr_assert_eq(kill(init, SIGKILL), 0, "kill %d: %s", (int)init, strerror(errno));
    pthread_join(t, NULL);
    cr_assert(running, "the command never started under the agent");
    cr_assert_eq(job.rc, CORDON_E_UNAVAILABLE, "rc %d status %s after %llu ms: %s", job.rc,
                 cordon_run_status_name(job.o.status), (unsigned long long)job.o.duration_ms,
                 err.message);
    cr_assert(strstr(err.message, "agent") != NULL, "%s", err.message);
    cordon_exec_outcome_clear(&job.o);
    cr_expect_not(container_exists(cid), "the container outlived its agent");
    cr_expect_neq(run(job.state, argv, &defaults, &o), 0, "an exec after the agent died ran");
    cr_expect_eq(err.code, CORDON_E_NOT_FOUND, "code %d: %s", err.code, err.message);
    cordon_exec_outcome_clear(&o);
    free(text);
}

/* A state whose init_start does not match the pid's (a reused pid, or a
 * forged state): refused, and the container named in it removed. */
Test(docker, init_with_another_start_time_is_refused)
{
    const char *argv[] = { "true", NULL };
    struct cordon_exec_outcome o;
    char cid[80], *forged = NULL;
    const char *state;
    cJSON *doc;

    need_daemon();
    state = provision_default("host");
    snprintf(cid, sizeof(cid), "%s", container_of(state));
    doc = cJSON_Parse(state);
    cJSON_ReplaceItemInObjectCaseSensitive(
        doc, "init_start",
        cJSON_CreateNumber(cJSON_GetNumberValue(cJSON_GetObjectItem(doc, "init_start")) + 1));
    forged = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    cr_expect_eq(run(forged, argv, &defaults, &o), CORDON_E_NOT_FOUND, "%s", err.message);
    cr_expect(strstr(err.message, "init") != NULL, "%s", err.message);
    cordon_exec_outcome_clear(&o);
    cr_expect_not(container_exists(cid), "the container is still there");
    free(forged);
}

/* The init (the agent) is the same process and runs the next exec. */
static void still_serves(const char *state, pid_t init)
{
    struct cordon_exec_outcome o;
    char *out;

    cr_assert_eq(kill(init, 0), 0, "the init (pid %d) is gone", (int)init);
    sh(state, "echo still", &o);
    out = text_of(&o.out);
    cr_assert(o.status == CORDON_RUN_EXITED && strcmp(out, "still\n") == 0, "%s", out);
    free(out);
    cordon_exec_outcome_clear(&o);
}

/*
 * Code inside tries every way to the agent's channel, as in runc's test
 * (tests/common/hostile-agent.h): nothing may be reached, and the agent
 * serves the next exec.
 */
Test(docker, code_inside_cannot_reach_the_agents_channel)
{
    struct cordon_exec_outcome o;
    char path[PATH_MAX], *out, *errtext;
    const char *state;
    pid_t init;
    int fd;

    need_daemon();
    state = provision_with(toolchain, "host", &small);
    init = state_init(state);
    cr_assert_gt(init, 1, "not provisioned with the agent: %s", state);
    snprintf(path, sizeof(path), "/proc/%d/root/workspace/hostile.c", (int)init);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    cr_assert_eq(write(fd, test_hostile_agent_c, sizeof(test_hostile_agent_c) - 1),
                 (ssize_t)sizeof(test_hostile_agent_c) - 1);
    close(fd);
    sh(state, "cc -o /tmp/hostile /workspace/hostile.c && /tmp/hostile", &o);
    out = text_of(&o.out);
    errtext = text_of(&o.err);
    cr_assert(strstr(out, "control ok") != NULL,
              "the program could not open its own child's fd, the test proves nothing: %s %s",
              out, errtext);
    cr_assert(o.status == CORDON_RUN_EXITED && o.exit_code == 0, "status %s exit %d: %s %s",
              cordon_run_status_name(o.status), o.exit_code, out, errtext);
    cr_assert(strstr(out, "reached 0") != NULL, "%s", out);
    free(out);
    free(errtext);
    cordon_exec_outcome_clear(&o);
    still_serves(state, init);
}

/*
 * Run a script of tests/common/hostile-init.h in a fresh execution: it
 * must end normally and print `last`, PID 1's limits must have stayed out
 * of its reach (the seccomp profile refuses prlimit on any other process),
 * and the init must serve the next exec.
 */
static void hostile_init_survived(const char *script, const char *last)
{
    struct cordon_exec_outcome o;
    const char *state;
    char *out;
    pid_t init;

    need_daemon();
    state = provision_default("host");
    init = state_init(state);
    sh(state, script, &o);
    out = text_of(&o.out);
    cr_assert(o.status == CORDON_RUN_EXITED && o.exit_code == 0 && strstr(out, last) != NULL,
              "status %s exit %d: %s", cordon_run_status_name(o.status), o.exit_code, out);
    cr_expect(strstr(out, "SET") == NULL, "code inside changed PID 1's limits: %s", out);
    free(out);
    cordon_exec_outcome_clear(&o);
    still_serves(state, init);
}

/* Code inside cannot end its own sandbox through PID 1's limits: PID 1
 * takes no stop signal from anyone, whatever its siginfo says. */
Test(docker, code_inside_cannot_stop_its_sandbox_through_pid1s_limits)
{
    hostile_init_survived(TEST_HOSTILE_INIT_STOP, "alive");
}

/* Nor starve the agent of descriptors: the next exec is served. */
Test(docker, code_inside_cannot_starve_the_agent_of_descriptors)
{
    hostile_init_survived(TEST_HOSTILE_INIT_NOFILE, "done");
}

/* ---- hostile images ------------------------------------------------------------ */

/* The minimal image with one Dockerfile instruction more (docker commit
 * --change); its id, malloc'd. Remove it with docker rmi. */
static char *image_with(const char *change)
{
    char *cid = NULL, *img = NULL;

    int r;

    cr_assert_eq(docker_cmd(&cid, "create", "--entrypoint", "/bin/sh", minimal, NULL), 0);
    cid[strcspn(cid, "\n")] = '\0';
    r = docker_cmd(&img, "commit", "--change", change, cid, NULL);
    docker_cmd(NULL, "rm", "-f", cid, NULL, NULL); /* before any assert: nothing stays */
    free(cid);
    cr_assert_eq(r, 0, "docker commit --change '%s'", change);
    img[strcspn(img, "\n")] = '\0';
    cr_assert(strncmp(img, "sha256:", 7) == 0, "docker commit printed %s", img);
    return img;
}

/* The daemon's volumes, one "name labels" line each. */
static char *volumes_now(void)
{
    char *out = NULL;

    cr_assert_eq(docker_cmd(&out, "volume", "ls", "--format", "{{.Name}} {{.Labels}}", NULL), 0);
    return out;
}

/* Volumes in after, not in before, without cordon's label: leaked. */
static int unlabelled_new_volumes(const char *before, const char *after)
{
    int n = 0;

    for (const char *line = after; *line != '\0';) {
        size_t len = strcspn(line, "\n");
        char *one = strndup(line, len);

        if (strstr(before, one) == NULL && strstr(one, "org.cordon.execution-id") == NULL) {
            cr_log_warn("a new volume without cordon's label: %s", one);
            n++;
        }
        free(one);
        line += len + (line[len] != '\0');
    }
    return n;
}

/*
 * An image's VOLUME would be an anonymous volume on the host's disk,
 * outside disk_bytes and the read-back: provision refuses the image,
 * naming the volume, and leaves no container and no volume behind.
 */
Test(docker, image_with_a_volume_is_refused_and_nothing_stays)
{
    char id[48], hex[13], label[120], *img, *text, *state = NULL, *before, *after;
    int r, slot;

    need_daemon();
    ensure_default();
    img = image_with("VOLUME /data");
    before = volumes_now();
    random_hex(hex, 6);
    snprintf(id, sizeof(id), "dt-%s", hex);
    slot = track_id(id);
    text = spec(id, img, "host", &small);
    r = vt.provision(res, text, &state, &err);
    free(text);
    after = volumes_now();
    if (r == 0) {
        states[slot] = state;
        vt.terminate(res, state, NULL); /* so that the image can go */
    }
    docker_cmd(NULL, "rmi", "-f", img, NULL, NULL);
    free(img);
    cr_assert_eq(r, CORDON_E_UNSUPPORTED, "provision of an image with VOLUME /data: rc %d %s", r,
                 err.message);
    cr_expect(strstr(err.message, "VOLUME /data") != NULL, "%s", err.message);
    snprintf(label, sizeof(label), "org.cordon.execution-id=%s", id);
    cr_expect_eq(count_labelled(label), 0, "the refused container is still there");
    cr_expect_eq(unlabelled_new_volumes(before, after), 0, "the image's volume was left behind");
    free(before);
    free(after);
}

/*
 * An image's HEALTHCHECK would run image code in the container on the
 * daemon's timer, outside any exec: none runs, and the read-back holds
 * the container to it.
 */
Test(docker, image_healthcheck_never_runs)
{
    struct cordon_exec_outcome o;
    const char *state;
    char *img, *out, *hc = NULL;

    need_daemon();
    img = image_with("HEALTHCHECK --interval=1s CMD touch /tmp/hc");
    state = provision_with(img, "host", &small);
    cr_expect_eq(docker_cmd(&hc, "inspect", "-f", "{{json .Config.Healthcheck}}",
                            container_of(state), NULL), 0);
    cr_expect(hc != NULL && strstr(hc, "NONE") != NULL, "Config.Healthcheck is %s", hc);
    free(hc);
    sleep(3);
    cr_expect_eq(run(state, (const char *const[]){ "sh", "-c",
                                                   "if [ -e /tmp/hc ]; then echo ran; else echo "
                                                   "never; fi", NULL }, &defaults, &o), 0,
                 "exec: %s", err.message);
    out = text_of(&o.out);
    cr_expect_str_eq(out, "never\n", "the image's health check ran inside the sandbox");
    free(out);
    cordon_exec_outcome_clear(&o);
    /* The image goes once nothing uses it. */
    cr_expect_eq(vt.terminate(res, state, &err), 0, "terminate: %s", err.message);
    cr_expect_eq(docker_cmd(NULL, "rmi", "-f", img, NULL, NULL), 0, "docker rmi %s", img);
    free(img);
}

/* Under gVisor State.Pid is the Sentry's sandbox process: no agent, the
 * exec API, and the facts say why. */
Test(docker, runsc_keeps_the_engine_path_and_says_so)
{
    struct cordon_exec_outcome o;
    char config[300], path[32], reason[200], *info = NULL, *out;
    const char *state;

    need_daemon();
    docker_cmd(&info, "info", "--format", "{{json .Runtimes}}", NULL, NULL);
    if (info == NULL || strstr(info, "\"runsc\"") == NULL) {
        free(info);
        skip("runsc is not registered in the daemon (tests/mechanism/dockerd.sh registers it)");
    }
    free(info);
    snprintf(config, sizeof(config), "{\"image\": \"%s\", \"runtime\": \"runsc\"}", minimal);
    probe_exec_path(config, path, sizeof(path), reason, sizeof(reason));
    cr_expect_str_eq(path, "engine");
    cr_expect(strstr(reason, "gVisor") != NULL, "reason: %s", reason);
    ensure_with(config);
    state = provision_default("host");
    cr_assert(strstr(state, "\"agent\"") == NULL, "an agent under runsc: %s", state);
    sh(state, "echo gvisor; exit 5", &o);
    out = text_of(&o.out);
    cr_expect(o.status == CORDON_RUN_EXITED && o.exit_code == 5 && strcmp(out, "gvisor\n") == 0,
              "status %s exit %d: %s", cordon_run_status_name(o.status), o.exit_code, out);
    free(out);
    cordon_exec_outcome_clear(&o);
    /* cordon-init is PID 1 in the Sentry too: the stop signals from inside
     * are ignored there as on the host's kernel, and the execution serves. */
    sh(state, "kill -TERM 1; kill -INT 1; kill -HUP 1; sleep 1; echo alive", &o);
    out = text_of(&o.out);
    cr_expect(o.status == CORDON_RUN_EXITED && o.exit_code == 0 && strcmp(out, "alive\n") == 0,
              "kill -TERM 1 from inside gVisor: status %s exit %d: %s",
              cordon_run_status_name(o.status), o.exit_code, out);
    free(out);
    cordon_exec_outcome_clear(&o);
    sh(state, "echo still", &o);
    out = text_of(&o.out);
    cr_expect(o.status == CORDON_RUN_EXITED && strcmp(out, "still\n") == 0,
              "after kill -TERM 1 from inside gVisor: status %s: %s",
              cordon_run_status_name(o.status), out);
    free(out);
    cordon_exec_outcome_clear(&o);
}

/* ---- import_files: the host's files streamed into the archive API ------------------ */

struct feed_job {
    int fd;
    size_t len;
};

/* Write len bytes of a 16-byte pattern into fd, then close it. */
static void *feed_main(void *arg)
{
    struct feed_job *j = arg;
    static const char pattern[] = "0123456789abcde\n";

    signal(SIGPIPE, SIG_IGN);
    for (size_t left = j->len; left > 0;) {
        size_t n = left < 16 ? left : 16;

        if (write(j->fd, pattern, n) != (ssize_t)n)
            break;
        left -= n;
    }
    close(j->fd);
    return NULL;
}

/* import_files of json with data_len pattern bytes from a pipe. */
static int import_files_piped(const char *state, const char *dest, const char *json,
                              size_t data_len)
{
    struct feed_job j = { .len = data_len };
    pthread_t t;
    int p[2], r;

    cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
    j.fd = p[1];
    cr_assert_eq(pthread_create(&t, NULL, feed_main, &j), 0);
    r = vt.import_files(res, state, dest, json, p[0], &err);
    close(p[0]);
    pthread_join(t, NULL);
    return r;
}

Test(docker, import_files_streams_with_the_owners_and_bounds_of_import_tar)
{
    struct cordon_exec_outcome o;
    char want[200], *out, json[400];
    const char *state;
    uid_t uid;
    int fd;

    need_daemon();
    cr_assert_not_null(vt.import_files, "docker.so has no import_files");
    state = provision_default("code");
    uid = state_uid(state);
    /* 8 MiB and a nested name, from a pipe (no length known up front). */
    snprintf(json, sizeof(json),
             "{\"files\":[{\"path\":\"deep/sub/big.txt\",\"size\":%u,\"mode\":416},"
             "{\"path\":\"run.sh\",\"size\":16,\"mode\":493}]}", 8u << 20);
    cr_assert_eq(import_files_piped(state, "build", json, (8u << 20) + 16), 0, "%s", err.message);
    sh(state, "cd build && stat -c '%u:%g %a %n' deep deep/sub deep/sub/big.txt run.sh && "
              "wc -c < deep/sub/big.txt && tail -c 16 run.sh", &o);
    out = text_of(&o.out);
    snprintf(want, sizeof(want),
             "%u:%u 755 deep\n%u:%u 755 deep/sub\n%u:%u 640 deep/sub/big.txt\n%u:%u 755 run.sh\n"
             "8388608\n0123456789abcde\n", (unsigned)uid, (unsigned)uid, (unsigned)uid,
             (unsigned)uid, (unsigned)uid, (unsigned)uid, (unsigned)uid, (unsigned)uid);
    cr_expect_str_eq(out, want, "got %s", out);
    free(out);
    cordon_exec_outcome_clear(&o);
    /* Under source/ in layout "code": root's, the write bits stripped. */
    cr_assert_eq(import_files_piped(state, "source",
                                    "{\"files\":[{\"path\":\"lib/m.py\",\"size\":32,\"mode\":420}]}",
                                    32), 0, "%s", err.message);
    sh(state, "stat -c '%u:%g %a' source/lib source/lib/m.py", &o);
    out = text_of(&o.out);
    cr_expect_str_eq(out, "0:0 555\n0:0 444\n");
    free(out);
    cordon_exec_outcome_clear(&o);

    /* Over the workspace's share of disk_bytes (64 MiB): refused by the
     * manifest, before a byte goes, naming the file and the limit. */
    cr_expect_eq(import_files_piped(state, "build",
                                    "{\"files\":[{\"path\":\"huge\",\"size\":104857600,\"mode\":420}]}",
                                    0), CORDON_E_LIMIT, "%s", err.message);
    cr_expect(strstr(err.message, "huge") != NULL && strstr(err.message, "limit") != NULL, "%s",
              err.message);
    /* A name that climbs out, a bad mode: refused, naming the field. */
    cr_expect_eq(import_files_piped(state, "build",
                                    "{\"files\":[{\"path\":\"../x\",\"size\":1,\"mode\":420}]}", 1),
                 CORDON_E_UNSAFE, "%s", err.message);
    cr_expect_eq(import_files_piped(state, "build",
                                    "{\"files\":[{\"path\":\"x\",\"size\":1,\"mode\":2541}]}", 1),
                 CORDON_E_INVALID, "%s", err.message);
    cr_expect(strstr(err.message, "files[0].mode") != NULL, "%s", err.message);
    /* Data that ends early: refused, and the stream abandoned. */
    cr_expect_eq(import_files_piped(state, "build",
                                    "{\"files\":[{\"path\":\"short\",\"size\":100,\"mode\":420}]}",
                                    10), CORDON_E_INVALID, "%s", err.message);
    cr_expect(strstr(err.message, "data_fd ended") != NULL, "%s", err.message);
    /* A regular data file whose size disagrees: refused before anything lands. */
    {
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s/data", tmp);
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        cr_assert_geq(fd, 0);
        cr_assert_eq(write(fd, "0123456789", 10), 10);
        cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
        cr_expect_eq(vt.import_files(res, state, "build",
                                     "{\"files\":[{\"path\":\"mismatch\",\"size\":4,\"mode\":420}]}",
                                     fd, &err), CORDON_E_INVALID, "%s", err.message);
        close(fd);
    }
    sh(state, "ls build; test ! -e build/huge && test ! -e build/mismatch", &o);
    out = text_of(&o.out);
    cr_expect(o.exit_code == 0, "a refused import landed something: %s", out);
    free(out);
    cordon_exec_outcome_clear(&o);
}

/* ---- a sandbox frozen from the host ----------------------------------------------- */

/* What a test froze, undone by frozen_undo (the test's fini): a failing
 * test must never leave processes frozen on the host. */
static char paused_cid[80];               /* docker pause */
static char frozen_file[PATH_MAX];        /* a freezer.state written by hand */

static void frozen_undo(void)
{
    if (paused_cid[0] != '\0' && container_exists(paused_cid))
        docker_cmd(NULL, "unpause", paused_cid, NULL, NULL, NULL);
    paused_cid[0] = '\0';
    if (frozen_file[0] != '\0') {
        int fd = open(frozen_file, O_WRONLY | O_CLOEXEC);

        if (fd >= 0) {
            (void)!write(fd, "THAWED", 6);
            close(fd);
        }
    }
    frozen_file[0] = '\0';
}

/* Host pids of a container's processes (docker top), into pids. */
static int container_host_pids(const char *cid, pid_t *pids, int max)
{
    char *out = NULL, *p;
    int n = 0;

    cr_assert_eq(docker_cmd(&out, "top", cid, "-o", "pid", NULL), 0, "docker top %s", cid);
    p = strchr(out, '\n');   /* past the header */
    while (p != NULL && *p != '\0' && n < max) {
        long pid = strtol(p, &p, 10);

        if (pid > 0)
            pids[n++] = (pid_t)pid;
        while (*p == '\n' || *p == ' ')
            p++;
    }
    free(out);
    cr_assert_gt(n, 0, "docker top %s listed no process", cid);
    return n;
}

/* Freeze the v1 freezer cgroup of the container's init by hand, as an
 * administrator would: the daemon does not know it is paused. */
static void freeze_by_hand(pid_t init)
{
    char path[64], text[4096] = "", *line;
    ssize_t got;
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)init);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    got = read(fd, text, sizeof(text) - 1);
    close(fd);
    cr_assert_gt(got, 0);
    line = strstr(text, ":freezer:/");
    cr_assert_not_null(line, "no v1 freezer cgroup in %s (this test needs cgroup v1)", path);
    line += strlen(":freezer:");
    line[strcspn(line, "\n")] = '\0';
    cr_assert(strlen(line) > 1, "the container's init is in the root freezer cgroup");
    snprintf(frozen_file, sizeof(frozen_file), "/sys/fs/cgroup/freezer%s/freezer.state", line);
    fd = open(frozen_file, O_WRONLY | O_CLOEXEC);
    cr_assert_geq(fd, 0, "%s: %s", frozen_file, strerror(errno));
    cr_assert_eq(write(fd, "FROZEN", 6), 6, "%s: %s", frozen_file, strerror(errno));
    close(fd);
}

/*
 * A container whose processes were frozen from the host side is still
 * ours to end: exec gives a typed answer near its timeout and terminate
 * thaws before it removes, within a bound, leaving no container and no
 * process. Two ways to freeze: docker pause (the daemon knows), and the
 * container's freezer cgroup written by hand (it does not).
 */
static void frozen_sandbox_case(bool by_hand, bool with_exec)
{
    static const char *const argv[] = { "true", NULL };
    struct run_opts ro = defaults;
    struct cordon_exec_outcome o;
    pid_t pids[32];
    const char *state;
    char cid[80], left[256];
    uint64_t t0, took;
    int n, r;

    need_daemon();
    state = provision_default("host");
    snprintf(cid, sizeof(cid), "%s", container_of(state));
    n = container_host_pids(cid, pids, 32);
    if (by_hand) {
        freeze_by_hand(pids[0]);
    } else {
        snprintf(paused_cid, sizeof(paused_cid), "%s", cid);
        cr_assert_eq(docker_cmd(NULL, "pause", cid, NULL, NULL, NULL), 0, "docker pause %s", cid);
    }

    if (with_exec) {
        ro.timeout_ms = TEST_FROZEN_EXEC_TIMEOUT_MS;
        t0 = cordon_now_monotonic_ms();
        r = run(state, argv, &ro, &o);
        test_expect_frozen_exec_ended(r, &o, t0);
    }

    t0 = cordon_now_monotonic_ms();
    r = vt.terminate(res, state, &err);
    took = cordon_now_monotonic_ms() - t0;
    frozen_undo();
    cr_expect_eq(r, 0, "terminate of a frozen sandbox: %s", err.message);
    cr_expect_lt(took, 5000, "terminate took %llu ms", (unsigned long long)took);
    cr_expect(!container_exists(cid), "container %s is left", cid);
    cr_expect_eq(test_count_alive(pids, n, left, sizeof(left)), 0, "processes of %s are left: %s",
                 cid, left);
}

Test(docker, paused_sandbox_exec_times_out_and_terminate_ends_it, .fini = frozen_undo)
{
    frozen_sandbox_case(false, true);
}

Test(docker, frozen_sandbox_exec_times_out_and_terminate_ends_it, .fini = frozen_undo)
{
    frozen_sandbox_case(true, true);
}

/* Without an exec first (whose timeout ends the execution): terminate
 * itself meets the frozen container. */
Test(docker, paused_sandbox_is_terminated_at_once, .fini = frozen_undo)
{
    frozen_sandbox_case(false, false);
}

Test(docker, frozen_sandbox_is_terminated_at_once, .fini = frozen_undo)
{
    frozen_sandbox_case(true, false);
}
