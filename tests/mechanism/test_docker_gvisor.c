/*
 * Mechanism tests of the docker provider under gVisor: the runtime runsc
 * registered in the real daemon (scripts/test-all.sh's daemon has it, as does
 * tests/mechanism/dockerd.sh's: tests/mechanism/private-dockerd.sh runtimes;
 * with --network=none), the real Sentry, no mocks.
 *
 *   - provision, exec and terminate run every container under runsc, the
 *     sandbox's kernel is gVisor's, and nothing of it stays on the host;
 *   - the observation, as the host makes it, sees gVisor and judges it from
 *     outside on the sandbox process: three axes true, and process_contained
 *     exactly as the Sentry's pid namespace on this host allows (runsc's
 *     ptrace platform leaves it in the host's);
 *   - `isolation: required` selects it exactly when all four hold;
 *   - a provider that names a pid which is not its sandbox's (the host's
 *     init, another gVisor sandbox) gets no axis at all;
 *   - a start that fails under runsc leaves no shim, sandbox or gofer.
 *
 * Environment: CORDON_DOCKER_IMAGE_MINIMAL (required), CORDON_DOCKER_PROVIDER,
 * CORDON_OBSERVER, CORDON_INIT, CORDON_BIN, DOCKER_HOST as for
 * test_docker.c. Every container is labelled with this suite's own host
 * instance id and removed in fini.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <cordon/provider.h>
#include "core/abi.h"
#include "core/drive.h"
#include <cordon/sdk/facts.h>
#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include "core/observe/observe.h"

#include "tests/common/hostile-init.h"
#include "tests/common/proc.h"
#include "tests/mechanism/cli_exec.h"

#ifndef CORDON_BUILDDIR
#define CORDON_BUILDDIR "."
#endif

#define TRACKED 4
#define GONE_WAIT_MS 15000u

static const char *const axes[] = {
    CORDON_AXIS_PROCESS_CONTAINED, CORDON_AXIS_HOST_FS_RESTRICTED,
    CORDON_AXIS_PRIVESC_BLOCKED, CORDON_AXIS_SYSCALLS_RESTRICTED,
};

static struct cordon_provider_v1 vt;
static struct cordon_host_v1 host;
static struct cordon_resource *res;
static char provider_path[PATH_MAX], observer[PATH_MAX], init_bin[PATH_MAX], host_id[48];
static char config[400], *tmp;
static char *states[TRACKED];
static char ids[TRACKED][48];
static const char *minimal;
static struct cordon_error err;

/* ---- helpers ----------------------------------------------------------------- */

static const char *env_or(const char *name, const char *fallback)
{
    const char *v = getenv(name);

    return v != NULL && v[0] != '\0' ? v : fallback;
}

static void random_hex(char *buf, size_t nbytes)
{
    FILE *f = fopen("/dev/urandom", "re");
    unsigned char raw[16];

    cr_assert(f != NULL && nbytes <= sizeof(raw) && fread(raw, 1, nbytes, f) == nbytes);
    fclose(f);
    for (size_t i = 0; i < nbytes; i++)
        snprintf(buf + 2 * i, 3, "%02x", raw[i]);
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* `PROGRAM ARGS...`; stdout in *ret_out. */
static int command(const char *program, char **ret_out, const char *const *args)
{
    const char *argv[16];
    size_t n = 0;
    int pipefd[2], status;
    char buf[65536];
    size_t len = 0;
    pid_t pid;

    argv[n++] = program;
    for (size_t i = 0; args[i] != NULL && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    cr_assert_eq(pipe2(pipefd, O_CLOEXEC), 0);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);

        if (dup2(pipefd[1], 1) < 0 || (null >= 0 && (dup2(null, 0) < 0 || dup2(null, 2) < 0)))
            _exit(127);
        execvp(program, (char *const *)argv);
        _exit(127);
    }
    close(pipefd[1]);
    for (;;) {
        ssize_t r = read(pipefd[0], buf + len, sizeof(buf) - 1 - len);

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(pipefd[0]);
    buf[len] = '\0';
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (ret_out != NULL)
        *ret_out = strdup(buf);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* `docker ARGS...`: the docker command only looks. */
static int docker(char **ret_out, const char *const *args)
{
    return command("docker", ret_out, args);
}

static void setup(void)
{
    char hex[17], *out = NULL;

    cordon_error_init(&err);
    memset(states, 0, sizeof(states));
    memset(ids, 0, sizeof(ids));
    res = NULL;
    minimal = env_or("CORDON_DOCKER_IMAGE_MINIMAL", NULL);
    cr_assert_not_null(minimal, "CORDON_DOCKER_IMAGE_MINIMAL must name the minimal test image "
                                "(tests/images/build-images.sh --docker prints it)");
    cr_assert_not_null(realpath(env_or("CORDON_DOCKER_PROVIDER", CORDON_BUILDDIR "/.libs/docker.so"),
                                provider_path), "docker.so: %s", strerror(errno));
    cr_assert_not_null(realpath(env_or("CORDON_OBSERVER", CORDON_BUILDDIR "/cordon-observe"), observer),
                       "cordon-observe: %s", strerror(errno));
    cr_assert_not_null(realpath(env_or("CORDON_INIT", CORDON_BUILDDIR "/cordon-init"), init_bin),
                       "cordon-init: %s", strerror(errno));
    /* runsc is registered in the test daemons (private-dockerd.sh runtimes); without it this
     * is a failure. */
    cr_assert_eq(docker(&out, (const char *const[]){ "info", "--format", "{{json .Runtimes}}", NULL }), 0,
                 "the Docker daemon does not answer: start it with tests/mechanism/dockerd.sh start");
    cr_assert(strstr(out, "\"runsc\"") != NULL,
              "the daemon has no runtime runsc (private-dockerd.sh runtimes registers it): %s", out);
    free(out);
    random_hex(hex, 8);
    snprintf(host_id, sizeof(host_id), "cordon-gvisor-tests-%s", hex);
    cr_assert_eq(cordon_fs_mkdtemp(env_or("TMPDIR", "/tmp"), "cordon-gvisor-test.", &tmp, &err), 0, "%s",
                 err.message);
    cordon__host_table_init(&host, observer, init_bin, host_id, tmp);
    cr_assert_eq(cordon__provider_load(provider_path, &host, &vt, &err), 0, "load: %s", err.message);
    cr_assert_not_null(vt.boundary, "docker.so has no boundary operation");
    snprintf(config, sizeof(config), "{\"image\": \"%s\", \"runtime\": \"runsc\"}", minimal);
}

static void teardown(void)
{
    struct cordon_error e;

    cordon_error_init(&e);
    for (int i = 0; i < TRACKED; i++) {
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

TestSuite(docker_gvisor, .init = setup, .fini = teardown, .timeout = 300);

static int track(const char *id)
{
    for (int i = 0; i < TRACKED; i++)
        if (ids[i][0] == '\0') {
            snprintf(ids[i], sizeof(ids[i]), "%s", id);
            return i;
        }
    cr_assert_fail("more than %d executions in one test", TRACKED);
    return -1;
}

static char *spec_of(const char *id, int pids)
{
    char *text = NULL;

    cr_assert(asprintf(&text,
                       "{\"execution_id\": \"%s\", \"image\": \"%s\", \"layout\": \"host\","
                       " \"resources\": {\"cpus\": 1, \"memory_bytes\": 268435456, \"disk_bytes\": 67108864,"
                       " \"pids\": %d, \"runtime_ms\": 120000, \"max_output_bytes\": 1048576},"
                       " \"network\": {\"mode\": \"none\"}, \"environment\": {},"
                       " \"expires_at_ms\": %llu}",
                       id, minimal, pids, (unsigned long long)(cordon_now_wall_ms() + 120000)) > 0);
    return text;
}

static const char *provision(void)
{
    char id[48], hex[13], *text;
    int slot;

    random_hex(hex, 6);
    snprintf(id, sizeof(id), "gv-%s", hex);
    slot = track(id);
    text = spec_of(id, 128);
    cr_assert_eq(vt.provision(res, text, &states[slot], &err), 0, "provision: %s", err.message);
    free(text);
    return states[slot];
}

static char *state_field(const char *state, const char *key)
{
    cJSON *doc = cJSON_Parse(state);
    char *v = strdup(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, key)) ?: "");

    cJSON_Delete(doc);
    return v;
}

/* inspect's State.Pid of a container, read by the test itself. */
static long state_pid(const char *container)
{
    char *out = NULL;
    long pid;

    cr_assert_eq(docker(&out, (const char *const[]){ "inspect", "-f", "{{.State.Pid}}", container, NULL }), 0);
    pid = atol(out);
    free(out);
    cr_assert_gt(pid, 1, "State.Pid of %s", container);
    return pid;
}

static unsigned long long ns_of(long pid, const char *ns)
{
    char path[64];
    struct stat st;

    snprintf(path, sizeof(path), "/proc/%ld/ns/%s", pid, ns);
    cr_assert_eq(stat(path, &st), 0, "%s: %s", path, strerror(errno));
    return (unsigned long long)st.st_ino;
}

/* Runs argv in the execution; its stdout (free). */
static char *run(const char *state, const char *const *argv)
{
    struct cordon_drive_opts d;
    struct cordon_exec_outcome o;
    cJSON *req = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(req, "argv");
    char *text, *out;

    for (size_t i = 0; argv[i] != NULL; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateString(argv[i]));
    cJSON_AddStringToObject(req, "cwd", "");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(req, "env"), "PATH", "/usr/local/bin:/usr/bin:/bin");
    cJSON_AddNumberToObject(req, "timeout_ms", 35000);
    text = cJSON_PrintUnformatted(req);
    cJSON_Delete(req);
    cordon__drive_opts_init(&d);
    d.host = &host;
    d.provider = &vt;
    d.resource = res;
    d.state_json = state;
    d.request_json = text;
    d.stdin_fd = -1;
    d.timeout_ms = 30000;
    d.retention_bytes = 64 * 1024;
    d.output_budget = 1u << 20;
    memset(&o, 0, sizeof(o));
    cr_assert_eq(cordon__drive_exec(&d, &o, &err), 0, "exec %s: %s", argv[0], err.message);
    cr_assert(o.status == CORDON_RUN_EXITED && o.exit_code == 0, "%s ended with status %d code %d", argv[0],
              (int)o.status, o.exit_code);
    out = strndup(o.out.data != NULL ? o.out.data : "", o.out.len);
    cordon_exec_outcome_clear(&o);
    free(text);
    return out;
}

/* Wait until no host process carries needle on its command line. */
static int processes_after_wait(const char *needle)
{
    uint64_t deadline = cordon_now_monotonic_ms() + GONE_WAIT_MS;
    int n;

    while ((n = test_count_processes(needle)) > 0 && cordon_now_monotonic_ms() < deadline)
        sleep_ms(100);
    return n;
}

/* The host's own observation through vt (or a vtable of the test's). */
static cJSON *observe_through(const struct cordon_provider_v1 *p)
{
    struct cordon_observe_opts oo = { .struct_size = sizeof(oo) };
    char name[17], *json = NULL;
    cJSON *obs;

    random_hex(name, 8);
    oo.host = &host;
    oo.provider = p;
    oo.resource = res;
    oo.image = minimal;
    oo.observer_name = name;
    cr_assert_eq(cordon_observe_run(&oo, &json, &err), 0, "observe: %s", err.message);
    obs = cJSON_Parse(json);
    cr_assert_not_null(obs);
    free(json);
    return obs;
}

static const cJSON *check_of(const cJSON *iso, const char *name, const char *axis)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, cJSON_GetObjectItem(iso, "checks"))
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(c, "check")), name) == 0 &&
            (axis == NULL || strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(c, "axis")), axis) == 0))
            return c;
    return NULL;
}

/* Whether the Sentry gets a pid namespace of its own here, read by the test
 * itself on a sandbox of its own. runsc's ptrace platform leaves it in the
 * host's; its kvm platform does not. */
static bool sentry_has_own_pid_namespace(void)
{
    const char *state = provision();
    char *cid = state_field(state, "container_id");
    long pid = state_pid(cid);
    bool own = ns_of(pid, "pid") != ns_of((long)getpid(), "pid");

    cr_log_info("the Sentry of %.12s (pid %ld) has %s pid namespace", cid, pid, own ? "its own" : "the host's");
    free(cid);
    return own;
}

/* ---- the tests ---------------------------------------------------------------- */

Test(docker_gvisor, every_container_runs_under_runsc_and_nothing_stays)
{
    const char *state;
    char *cid, *out = NULL, *boundary = NULL, exe[PATH_MAX], path[64], cmd[64] = "";
    struct utsname host_uts;
    cJSON *doc;
    long pid;
    ssize_t n;
    int fd;

    cr_assert_eq(vt.ensure(&host, config, &res, &err), 0, "ensure: %s", err.message);
    state = provision();
    cid = state_field(state, "container_id");
    cr_assert_eq(docker(&out, (const char *const[]){ "inspect", "-f", "{{.HostConfig.Runtime}}", cid, NULL }),
                 0);
    cr_expect_str_eq(out, "runsc\n");
    free(out);
    /* State.Pid is the sandbox process that runs the Sentry. */
    pid = state_pid(cid);
    snprintf(path, sizeof(path), "/proc/%ld/exe", pid);
    n = readlink(path, exe, sizeof(exe) - 1);
    cr_assert_gt(n, 0);
    exe[n] = '\0';
    cr_expect(strcmp(strrchr(exe, '/'), "/runsc") == 0, "State.Pid runs %s", exe);
    snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    cr_assert_geq(fd, 0);
    cr_assert_gt(read(fd, cmd, sizeof(cmd) - 1), 0);
    close(fd);
    cr_expect_str_eq(cmd, "runsc-sandbox");
    /* The provider names exactly that pid. */
    cr_assert_eq(vt.boundary(res, state, &boundary, &err), 0, "boundary: %s", err.message);
    doc = cJSON_Parse(boundary);
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "pids")), 1, "%s", boundary);
    cr_expect_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "pids"), 0)->valuedouble, (double)pid, "%s",
                 boundary);
    cJSON_Delete(doc);
    free(boundary);
    /* gVisor's kernel answers the sandbox, not the host's. */
    cr_assert_eq(uname(&host_uts), 0);
    out = run(state, (const char *const[]){ "uname", "-r", NULL });
    cr_expect_neq(strncmp(out, host_uts.release, strlen(host_uts.release)), 0, "uname -r inside: %s", out);
    free(out);
    out = run(state, (const char *const[]){ "sh", "-c", "dmesg 2>/dev/null | head -n 1; echo x > f && cat f", NULL });
    cr_expect(strstr(out, "Starting gVisor") != NULL && strstr(out, "x\n") != NULL, "inside: %s", out);
    free(out);
    /* terminate: the container, its sandbox, gofer and shim all go. */
    cr_assert_eq(vt.terminate(res, state, &err), 0, "terminate: %s", err.message);
    for (int i = 0; i < TRACKED; i++)
        if (states[i] == state) {
            free(states[i]);
            states[i] = NULL;
        }
    cr_expect_neq(docker(NULL, (const char *const[]){ "inspect", "--type", "container", cid, NULL }), 0,
                  "container %.12s is still there", cid);
    cr_expect_eq(processes_after_wait(cid), 0, "a process of container %.12s is still running", cid);
    free(cid);
}

/*
 * Code inside cannot end its own sandbox through PID 1's limits
 * (tests/common/hostile-init.h). runsc here loads no OCI seccomp filter
 * (it would take --oci-seccomp), so the Sentry lets the limit change: what
 * holds is that PID 1 takes no stop signal from anyone, and a stop signal
 * without its siginfo ends nothing.
 */
Test(docker_gvisor, code_inside_cannot_stop_its_sandbox_through_pid1s_limits)
{
    const char *state;
    char *out;

    cr_assert_eq(vt.ensure(&host, config, &res, &err), 0, "ensure: %s", err.message);
    state = provision();
    out = run(state, (const char *const[]){ "sh", "-c", TEST_HOSTILE_INIT_STOP, NULL });
    cr_assert(strstr(out, "alive") != NULL, "%s", out);
    free(out);
    out = run(state, (const char *const[]){ "echo", "still", NULL });
    cr_assert_str_eq(out, "still\n");
    free(out);
}

Test(docker_gvisor, observation_sees_gvisor_and_judges_it_from_outside)
{
    const cJSON *iso, *b, *p, *c;
    bool own_pid_ns;
    cJSON *obs;

    cr_assert_eq(vt.ensure(&host, config, &res, &err), 0, "ensure: %s", err.message);
    own_pid_ns = sentry_has_own_pid_namespace();
    obs = observe_through(&vt);
    iso = cJSON_GetObjectItem(obs, "isolation");
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(iso, "mechanism_kind")), "gvisor");
    for (size_t i = 1; i < 4; i++)
        cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(iso, axes[i])), "%s is not true", axes[i]);
    cr_expect_eq(cJSON_IsTrue(cJSON_GetObjectItem(iso, CORDON_AXIS_PROCESS_CONTAINED)), own_pid_ns,
                 "process_contained must follow the Sentry's pid namespace");
    /* Every check holds but the ones this runsc cannot pass, and those
     * say why. It loads no OCI seccomp filter (that takes --oci-seccomp
     * in the daemon's runtimeArgs), so the profile's refusal of prlimit64
     * on other pids does not apply, and gVisor lets a process of PID 1's
     * uid change PID 1's RLIMIT_NOFILE. */
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(iso, "checks")) {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(c, "check"));
        const char *detail = cJSON_GetStringValue(cJSON_GetObjectItem(c, "detail"));

        if (strcmp(name, "boundary_pid_namespace") == 0 && !own_pid_ns) {
            cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(c, "ok")));
            cr_expect(strstr(detail, "shares the host's pid namespace") != NULL, "%s", detail);
            continue;
        }
        if (strcmp(name, "pid1_limits_unreachable") == 0 && !own_pid_ns) {
            cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(c, "ok")), "%s", detail);
            cr_expect(strstr(detail, "can change PID 1's limits") != NULL, "%s", detail);
            continue;
        }
        cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(c, "ok")), "%s: %s", name, detail);
    }
    for (size_t i = 0; i < 4; i++)
        cr_expect_not_null(check_of(iso, "boundary_verified", axes[i]), "boundary_verified on %s", axes[i]);
    cr_expect_not_null(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(
                                  check_of(iso, "boundary_serves_syscalls", NULL), "detail")),
                              "platform"));
    /* What the host read is the Sentry: runsc, seccomp'd, holding the
     * observer's own file, with its stubs below it. */
    b = cJSON_GetObjectItem(cJSON_GetObjectItem(obs, "host_view"), "boundary");
    p = cJSON_GetArrayItem(cJSON_GetObjectItem(b, "processes"), 0);
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(b, "status")), "reported");
    cr_expect(strcmp(strrchr(cJSON_GetStringValue(cJSON_GetObjectItem(p, "exe")) ?: "/?", '/'), "/runsc") == 0);
    cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(p, "seccomp")), 2);
    cr_expect(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(p, "observer_fd")) ?: "",
                     cJSON_GetStringValue(cJSON_GetObjectItem(b, "observer"))) != NULL);
    cr_expect_gt(cJSON_GetArraySize(cJSON_GetObjectItem(b, "processes")), 1, "no stub below the Sentry");
    cJSON_Delete(obs);
}

/* A provider that names something else than its sandbox. */
static long decoy_pid;

static int decoy_boundary(struct cordon_resource *r, const char *state_json, char **ret, struct cordon_error *e)
{
    (void)r;
    (void)state_json;
    (void)e;
    return asprintf(ret, "{\"pids\": [%ld]}", decoy_pid) < 0 ? CORDON_E_NOMEM : 0;
}

static void expect_refused(const cJSON *obs, const char *says)
{
    const cJSON *iso = cJSON_GetObjectItem(obs, "isolation");

    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(iso, "mechanism_kind")), "gvisor");
    for (size_t i = 0; i < 4; i++) {
        const cJSON *c = check_of(iso, "boundary_verified", axes[i]);
        const char *detail = c != NULL ? cJSON_GetStringValue(cJSON_GetObjectItem(c, "detail")) : "";

        cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(iso, axes[i])), "%s holds with pid %ld named", axes[i],
                  decoy_pid);
        cr_expect(c != NULL && cJSON_IsFalse(cJSON_GetObjectItem(c, "ok")), "boundary_verified on %s", axes[i]);
        cr_expect(strstr(detail, says) != NULL, "%s: %s", says, detail);
    }
    /* What succeeded inside counts for nothing now. */
    cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(check_of(iso, "io_uring_setup_refused", NULL), "ok")));
}

Test(docker_gvisor, boundary_that_is_not_the_sandbox_is_refused)
{
    struct cordon_provider_v1 liar = vt;
    const char *other;
    char *cid;
    cJSON *obs;

    cr_assert_eq(vt.ensure(&host, config, &res, &err), 0, "ensure: %s", err.message);
    liar.boundary = decoy_boundary;
    /* The host's own init. */
    decoy_pid = 1;
    obs = observe_through(&liar);
    expect_refused(obs, "the host's init");
    cJSON_Delete(obs);
    /* A real gVisor Sentry, confined as well, started moments before:
     * only it never ran this observer. */
    other = provision();
    cid = state_field(other, "container_id");
    decoy_pid = state_pid(cid);
    free(cid);
    obs = observe_through(&liar);
    expect_refused(obs, "is not the");
    cJSON_Delete(obs);
}

/* The cordon command in tmp, finding docker.so alone, with an empty config. */
static void cli_in_tmp(struct cli_exec *c)
{
    char dir[PATH_MAX + 16], link[PATH_MAX + 48];
    FILE *f;

    cr_assert_not_null(realpath(env_or("CORDON_BIN", CORDON_BUILDDIR "/cordon"), c->bin));
    snprintf(dir, sizeof(dir), "%s/cli-providers", tmp);
    snprintf(link, sizeof(link), "%s/docker.so", dir);
    cr_assert(mkdir(dir, 0755) == 0 && symlink(provider_path, link) == 0);
    snprintf(c->config, sizeof(c->config), "%s/config.json", tmp);
    f = fopen(c->config, "we");
    cr_assert_not_null(f);
    fprintf(f, "{}\n");
    fclose(f);
    snprintf(c->state_dir, sizeof(c->state_dir), "%s/state", tmp);
    snprintf(c->env[0], sizeof(c->env[0]), "CORDON_PROVIDER_PATH=%s", dir);
    snprintf(c->env[1], sizeof(c->env[1]), "CORDON_OBSERVER=%s", observer);
    snprintf(c->env[2], sizeof(c->env[2]), "CORDON_INIT=%s", init_bin);
}

Test(docker_gvisor, required_isolation_selects_gvisor_only_when_all_four_axes_hold)
{
    struct cli_exec c = { 0 };
    char cfg_arg[sizeof(config) + 8];
    bool own_pid_ns;
    char *out = NULL;
    cJSON *doc;
    int rc;

    cr_assert_eq(vt.ensure(&host, config, &res, &err), 0, "ensure: %s", err.message);
    own_pid_ns = sentry_has_own_pid_namespace();
    cli_in_tmp(&c);
    snprintf(cfg_arg, sizeof(cfg_arg), "%s", config);
    rc = cli_exec_run(&c,
                      (const char *const[]){ "provision", "--provider", "docker", "--provider-config", cfg_arg,
                                             "--isolation", "required", "--id", "gv-required", "--cpus", "1",
                                             "--memory", "256M", "--disk", "64M", "--pids", "128",
                                             "--runtime", "60s", "--max-output", "1M", "--json", NULL },
                      -1, &out);
    doc = cJSON_Parse(out);
    cr_assert(cJSON_IsObject(doc), "provision printed no JSON (exit %d): %.400s", rc, out);
    if (own_pid_ns) {
        cr_expect_eq(rc, 0, "required refused a gVisor whose four axes hold: %.400s", out);
        rc = cli_exec_run(&c, (const char *const[]){ "terminate", "gv-required", NULL }, -1, NULL);
        cr_expect_eq(rc, 0);
    } else {
        cr_expect_eq(rc, 125, "required accepted a Sentry in the host's pid namespace: %.400s", out);
        cr_expect(strstr(out, "process_contained was not observed true") != NULL, "%.400s", out);
    }
    cJSON_Delete(doc);
    free(out);
}

/* The host's probe execution, with its small limits, still starts under
 * runsc (the Sentry's threads share the pids count: 32 was too few and
 * left it unverified). Where the Sentry shares the host's pid namespace
 * the sandbox is not contained and no limit is tried; else each holds. */
Test(docker_gvisor, host_probe_starts_with_small_limits_and_tries_them_only_when_contained)
{
    static const char *const tried[] = { "cpus", "memory_bytes", "disk_bytes", "pids", "max_output_bytes" };
    struct cli_exec c = { 0 };
    char cfg_arg[sizeof(config) + 8];
    const cJSON *facts, *limits;
    bool own_pid_ns;
    char *out = NULL;
    cJSON *doc;

    cr_assert_eq(vt.ensure(&host, config, &res, &err), 0, "ensure: %s", err.message);
    own_pid_ns = sentry_has_own_pid_namespace();
    cli_in_tmp(&c);
    snprintf(cfg_arg, sizeof(cfg_arg), "%s", config);
    cr_assert_eq(cli_exec_run(&c,
                              (const char *const[]){ "probe", "docker", "--provider-config", cfg_arg, "--fresh",
                                                     "--json", NULL },
                              -1, &out), 0, "%.400s", out);
    doc = cJSON_Parse(out);
    facts = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "probes"), 0);
    {
        char *v = cJSON_PrintUnformatted(cJSON_GetObjectItem(facts, "verification"));

        cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(facts, "verification"),
                                                                  "status")) ?: "",
                         "verified", "verification: %.900s", v != NULL ? v : out);
        free(v);
    }
    limits = cJSON_GetObjectItem(facts, "limits_verified");
    for (size_t i = 0; i < sizeof(tried) / sizeof(tried[0]); i++) {
        const cJSON *v = cJSON_GetObjectItem(limits, tried[i]);

        cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(v, "status")) ?: "", own_pid_ns ? "held" : "not_run",
                         "%s: %s", tried[i], cJSON_GetStringValue(cJSON_GetObjectItem(v, "detail")) ?: "");
        if (!own_pid_ns)
            cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(v, "detail")) ?: "",
                             "the sandbox is not contained");
    }
    cJSON_Delete(doc);
    free(out);
}

/* The resource keeps a pointer to its host table, and fini reclaims
 * through it after the test returned: the table outlives the test. */
static struct cordon_host_v1 bad;
static char bad_init[PATH_MAX];

Test(docker_gvisor, failed_start_leaves_no_shim_sandbox_or_gofer)
{
    char since[32], until[32], label[96], *text, *state = NULL, *out = NULL;
    time_t t0 = time(NULL);
    int fd, r;

    /* An "init" that is not a program: the container is created, and
     * runsc's start fails when the Sentry cannot load it. */
    snprintf(bad_init, sizeof(bad_init), "%s/not-an-init", tmp);
    fd = open(bad_init, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, "not a program\n", 14), 14);
    close(fd);
    bad = host;
    bad.init_path = bad_init;
    cr_assert_eq(vt.ensure(&bad, config, &res, &err), 0, "ensure: %s", err.message);
    track("gv-badstart");
    text = spec_of("gv-badstart", 128);
    r = vt.provision(res, text, &state, &err);
    free(text);
    cr_assert_lt(r, 0, "a container without a usable init was provisioned");
    cr_expect(strstr(err.message, "provision: start") != NULL, "%s", err.message);
    cr_log_info("%s", err.message);
    /* The container the daemon made, from its events. */
    snprintf(since, sizeof(since), "%lld", (long long)t0 - 1);
    snprintf(until, sizeof(until), "%lld", (long long)time(NULL) + 1);
    snprintf(label, sizeof(label), "label=org.cordon.execution-id=gv-badstart");
    cr_assert_eq(docker(&out, (const char *const[]){ "events", "--since", since, "--until", until, "--filter",
                                                     label, "--filter", "event=create", "--format", "{{.ID}}",
                                                     NULL }),
                 0);
    cr_assert_eq(strlen(out), 65, "no single create event for gv-badstart: %s", out);
    out[64] = '\0';
    /* Nothing of it runs: provision killed the shim and what was below it,
     * and containerd's own clean-up of a dead shim (a short "shim delete")
     * ends by itself. Without the provider's kill the shim runs forever. */
    cr_expect_eq(processes_after_wait(out), 0, "a shim, sandbox or gofer of %.12s is still running", out);
    cr_expect_neq(docker(NULL, (const char *const[]){ "inspect", "--type", "container", out, NULL }), 0);
    /* What the Engine API cannot reach: containerd's record of the
     * container the daemon forgot (no process, no mount). The test removes
     * it, so that its run leaves nothing. */
    command("ctr", NULL, (const char *const[]){ "--address", "/var/run/docker/containerd/containerd.sock",
                                                "--namespace", "moby", "containers", "rm", out, NULL });
    free(out);
}
