/*
 * core: one observation of a provider's isolation, driven through the
 * provider's own vtable: the host's view (namespaces, a canary file, a
 * canary process), the observer landed and run exactly as user code, the
 * toolchains asked for their versions, and the comparison of core/observe/compare.c
 * applied to what came back. docs/observation.md explains every check.
 * How the observer lands in the sandbox is core/observe/observe-land.c.
 */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <cordon/sdk/facts.h>
#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/json.h>
#include "core/observe/observe.h"
#include <cordon/sdk/request.h>
#include <cordon/sdk/spec.h>

#include "core/observe/boundary.h"
#include "core/observe/compare.h"
#include "core/drive.h"
#include "sdk/fs-internal.h"
#include "core/observe/observe-internal.h"

#define OBSERVE_TIMEOUT_MS 20000u
#define OBSERVE_RETENTION (1024u * 1024u)
#define OBSERVE_BUDGET (2u * 1024u * 1024u)
#define OBSERVE_LIFETIME_MS 120000u
#define OBSERVE_PATH_ENV "/usr/local/bin:/usr/bin:/bin"
#define OBSERVER_IN_SANDBOX "./.cordon/cordon-observe"
#define OBSERVER_NAME_MAX 64
#define CANARY_IDLE_SECONDS "120"
#define CANARY_START_MS 3000u
#define MAX_JSON_BYTES (1024u * 1024u)
#define MAX_TOOLCHAINS 16
#define RAW_VERSION_MAX 256

/* The namespaces both sides read; the first three must be readable on the host. */
static const char *const ns_names[] = { "pid", "mnt", "net", "ipc", "uts", "user", "cgroup" };
#define NS_REQUIRED 3

/* Canonical toolchain ids and the command that prints each one's version. */
static const struct {
    const char *id;
    const char *argv[3];
} toolchain_cmds[] = {
    { "python", { "python3", "--version", NULL } },
    { "node", { "node", "--version", NULL } },
    { "go", { "go", "version", NULL } },
    { "c++", { "c++", "--version", NULL } },
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *get_str(const cJSON *obj, const char *key)
{
    const cJSON *item = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;

    return cJSON_IsString(item) ? item->valuestring : NULL;
}

/* ---- the host's view ------------------------------------------------------ */

int cordon__observe_random_hex(char *out, size_t nbytes, struct cordon_error *err)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[32];
    size_t got = 0;

    if (nbytes > sizeof(raw))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "observe: %zu random bytes asked, limit %zu", nbytes,
                                sizeof(raw));
    /* The canary is only worth something when the sandbox cannot guess it. */
    while (got < nbytes) {
        ssize_t n = getrandom(raw + got, nbytes - got, 0);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return cordon_error_set(err, CORDON_E_IO, errno, "observe: getrandom failed: %s", strerror(errno));
        got += (size_t)n;
    }
    for (size_t i = 0; i < nbytes; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[2 * nbytes] = '\0';
    return 0;
}

/* The host's namespace inodes into ns, and "pid:N,mnt:N,..." into arg. */
static int host_namespaces(cJSON *ns, char *arg, size_t arg_size, struct cordon_error *err)
{
    size_t used = 0;

    arg[0] = '\0';
    for (size_t i = 0; i < COUNT(ns_names); i++) {
        char path[64];
        struct stat st;
        int w;

        snprintf(path, sizeof(path), "/proc/self/ns/%s", ns_names[i]);
        if (stat(path, &st) != 0) {
            if (i < NS_REQUIRED)
                return cordon_error_set(err, CORDON_E_UNAVAILABLE, errno,
                                        "observe: host view failed: cannot stat %s: %s", path, strerror(errno));
            continue;
        }
        if (!cJSON_AddNumberToObject(ns, ns_names[i], (double)st.st_ino))
            return cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
        w = snprintf(arg + used, arg_size - used, "%s%s:%llu", used > 0 ? "," : "", ns_names[i],
                     (unsigned long long)st.st_ino);
        if (w < 0 || (size_t)w >= arg_size - used)
            return cordon_error_set(err, CORDON_E_LIMIT, 0, "observe: host namespace list over %zu bytes",
                                    arg_size);
        used += (size_t)w;
    }
    return 0;
}

/*
 * A fresh 0755 directory holding a 0644 canary, so that only isolation, not
 * permissions, can hide it from the sandbox. It goes in /run where the host
 * may write there (root), else in /tmp: a provider that gives each command
 * a private /tmp, /var/tmp and /dev/shm (trusted-local as root does) would
 * hide a canary kept there without restricting the rest of the host.
 */
static const char *const canary_parents[] = { "/run", "/tmp" };

/* The inode of this process's pid namespace: a canary directory's name
 * carries it with the pid that made it, so that only a cordon in the same
 * pid namespace judges whether its maker still runs. */
static unsigned long long pidns_inode(void)
{
    struct stat st;

    return stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

static int canary_file_create(char *dir, size_t dir_size, char *path, size_t path_size, char token[33],
                              struct cordon_error *err)
{
    int fd, rc;

    if ((rc = cordon__observe_random_hex(token, 16, err)) < 0)
        return rc;
    for (size_t i = 0; i < sizeof(canary_parents) / sizeof(canary_parents[0]); i++) {
        snprintf(dir, dir_size, "%s/cordon-observe-%llu-%ld-XXXXXX", canary_parents[i],
                 pidns_inode(), (long)getpid());
        if (mkdtemp(dir) != NULL)
            break;
        rc = errno;
        dir[0] = '\0';
    }
    if (dir[0] == '\0')
        return cordon_error_set(err, CORDON_E_IO, rc, "observe: canary directory in /run or /tmp failed: %s",
                                strerror(rc));
    snprintf(path, path_size, "%s/canary", dir);
    if (chmod(dir, 0755) != 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "observe: chmod 0755 %s failed: %s", dir,
                                strerror(errno));
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "observe: canary file %s failed: %s", path,
                                strerror(errno));
    if (fchmod(fd, 0644) != 0 || write(fd, token, 32) != 32) {
        rc = cordon_error_set(err, CORDON_E_IO, errno, "observe: writing canary file %s failed: %s", path,
                              strerror(errno));
        close(fd);
        return rc;
    }
    close(fd);
    return 0;
}

size_t cordon__observe_sweep_canaries(void)
{
    unsigned long long ns = pidns_inode();
    size_t removed = 0;

    for (size_t i = 0; i < sizeof(canary_parents) / sizeof(canary_parents[0]); i++) {
        DIR *d = opendir(canary_parents[i]);
        struct dirent *e;

        if (d == NULL)
            continue;
        while ((e = readdir(d)) != NULL) {
            unsigned long long their_ns;
            long pid;
            int end = 0;
            char path[PATH_MAX];
            struct stat st;

            if (sscanf(e->d_name, "cordon-observe-%llu-%ld-%n", &their_ns, &pid, &end) != 2 ||
                end == 0 || strlen(e->d_name + end) != 6 || their_ns != ns || pid <= 0 ||
                (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
                continue;
            snprintf(path, sizeof(path), "%s/%s", canary_parents[i], e->d_name);
            /* Ours only: a directory this uid made, never a link. */
            if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
                !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
                continue;
            if (cordon_fs_remove_tree_path(path, NULL) == 0)
                removed++;
        }
        closedir(d);
    }
    return removed;
}

/* True while the canary file at path holds exactly its 32-digit token. */
static bool canary_file_holds(const char *path, const char *token)
{
    char buf[40];

    return cordon__fs_read_small(AT_FDCWD, path, buf, sizeof(buf)) == 32 && memcmp(buf, token, 32) == 0;
}

/* True while pid's command line carries "--idle\0TOKEN\0". */
static bool canary_running(pid_t pid, const char *token)
{
    char path[64], cmd[4096], pattern[64];
    size_t plen = (size_t)snprintf(pattern, sizeof(pattern), "--idle%c%s%c", '\0', token, '\0');
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "/proc/%ld/cmdline", (long)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    n = read(fd, cmd, sizeof(cmd));
    close(fd);
    return n > 0 && memmem(cmd, (size_t)n, pattern, plen) != NULL;
}

static void canary_stop(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

/*
 * The host's canary process: the observer in --idle mode. We wait until its
 * command line carries the token: a canary that never started would look
 * exactly like a contained one.
 */
static int canary_start(const char *observer, const char *token, pid_t *ret_pid, struct cordon_error *err)
{
    char *const argv[] = { (char *)observer, (char *)"--idle", (char *)token, (char *)CANARY_IDLE_SECONDS, NULL };
    char *const envp[] = { NULL };
    uint64_t deadline;
    int devnull, status;
    pid_t pid;

    devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "observe: canary process: /dev/null: %s",
                                strerror(errno));
    pid = fork();
    if (pid == 0) {
        setsid();
        if (dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 || dup2(devnull, 2) < 0)
            _exit(127);
        execve(observer, argv, envp);
        _exit(127);
    }
    close(devnull);
    if (pid < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "observe: canary process: fork failed: %s",
                                strerror(errno));
    deadline = cordon_now_monotonic_ms() + CANARY_START_MS;
    while (!canary_running(pid, token)) {
        struct timespec pause = { 0, 2 * 1000 * 1000 };

        if (waitpid(pid, &status, WNOHANG) == pid)
            return cordon_error_set(err, CORDON_E_IO, 0,
                                    "observe: canary process %s --idle exited at once (%s %d; 127: cannot "
                                    "execute)", observer, WIFEXITED(status) ? "code" : "signal",
                                    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        if (cordon_now_monotonic_ms() > deadline) {
            canary_stop(pid);
            return cordon_error_set(err, CORDON_E_TIMEOUT, 0,
                                    "observe: canary process %s did not start within %u ms", observer,
                                    CANARY_START_MS);
        }
        nanosleep(&pause, NULL);
    }
    *ret_pid = pid;
    return 0;
}

/* ---- driving the provider ------------------------------------------------- */

static bool check_limits(const struct cordon_observe_opts *opts)
{
    return opts->struct_size >= offsetof(struct cordon_observe_opts, flags) + sizeof(opts->flags) &&
           (opts->flags & CORDON_OBSERVE_CHECK_LIMITS) != 0;
}

/* The ordinary resources: enough for the observer, small enough anywhere.
 * Also what a provider that refuses the small limits gets. */
static const struct cordon_limits ordinary_limits = { 1, 256u << 20, 64u << 20, 128, OBSERVE_LIFETIME_MS,
                                                      1u << 20 };

static int build_spec(const struct cordon_observe_opts *opts, const char *execution_id,
                      const struct cordon_limits *limits, char **ret, struct cordon_error *err)
{
    struct cordon_spec spec;
    cJSON *env = NULL;
    int rc = 0;

    cordon_spec_init(&spec);
    snprintf(spec.execution_id, sizeof(spec.execution_id), "%s", execution_id);
    spec.resources = *limits;
    spec.layout = CORDON_SPEC_LAYOUT_HOST;
    spec.expires_at_ms = cordon_now_wall_ms() + OBSERVE_LIFETIME_MS;
    rc = cordon_spec_set_image(&spec, opts->image, err);
    if (rc == 0 && opts->environment_json != NULL)
        rc = cordon_json_parse_object("observe: environment_json", opts->environment_json,
                                      MAX_JSON_BYTES, &env, err);
    if (rc == 0)
        rc = cordon_env_from_json(env, "observe: environment_json", &spec.environment, err);
    if (rc == 0)
        rc = cordon_spec_print(&spec, ret, err);
    cordon_spec_clear(&spec);
    cJSON_Delete(env);
    return rc;
}

static char *exec_request(const char *const *argv, uint64_t timeout_ms)
{
    struct cordon_exec_request rq;
    char *text = NULL;
    int r = 0;

    cordon_exec_request_init(&rq);
    for (size_t i = 0; r == 0 && argv[i] != NULL; i++)
        r = cordon_exec_request_add_arg(&rq, argv[i], NULL);
    rq.cwd = strdup("");
    rq.timeout_ms = timeout_ms;
    if (r == 0 && rq.cwd != NULL && cordon_env_set(&rq.env, "PATH", OBSERVE_PATH_ENV, NULL) == 0 &&
        cordon_exec_request_print(&rq, &text, NULL) < 0)
        text = NULL;
    cordon_exec_request_clear(&rq);
    return text;
}

int cordon__observe_drive(const struct cordon_observe_opts *opts, const char *state, const char *const *argv,
                          uint64_t timeout_ms, uint64_t retention, uint64_t budget,
                          struct cordon_exec_outcome *ret, struct cordon_error *err)
{
    struct cordon_drive_opts d;
    char *request = exec_request(argv, timeout_ms);
    int rc;

    if (request == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
    cordon__drive_opts_init(&d);
    d.host = opts->host;
    d.provider = opts->provider;
    d.resource = opts->resource;
    d.state_json = state;
    d.request_json = request;
    d.stdin_fd = -1;
    d.timeout_ms = timeout_ms;
    d.retention_bytes = retention;
    d.output_budget = budget;
    d.cancel_fd = -1;
    rc = cordon__drive_exec(&d, ret, err);
    free(request);
    return rc;
}

/* The first line of a captured stream, at most RAW_VERSION_MAX bytes. */
static void first_line(const struct cordon_stream_capture *s, char *out, size_t out_size)
{
    size_t n = 0;

    while (n < s->len && n + 1 < out_size && s->data[n] != '\n' && s->data[n] != '\r')
        n++;
    if (n > 0)
        memcpy(out, s->data, n);
    out[n] = '\0';
}

static const char *status_text(const struct cordon_exec_outcome *o, char *buf, size_t size)
{
    if (o->status == CORDON_RUN_EXITED)
        snprintf(buf, size, "exited with code %d", o->exit_code);
    else if (o->status == CORDON_RUN_SIGNALED)
        snprintf(buf, size, "killed by signal %d", o->signal);
    else
        snprintf(buf, size, "ended with status %s", cordon_run_status_name(o->status));
    return buf;
}

static int run_observer(const struct cordon_observe_opts *opts, const char *state, const char *const *argv,
                        uint64_t timeout_ms, cJSON **ret_report, struct cordon_error *err)
{
    struct cordon_exec_outcome o;
    struct cordon_error derr;
    char why[64], line[RAW_VERSION_MAX];
    cJSON *report;
    int rc;

    memset(&o, 0, sizeof(o));
    cordon_error_init(&derr);
    rc = cordon__observe_drive(opts, state, argv, timeout_ms, OBSERVE_RETENTION, OBSERVE_BUDGET, &o, &derr);
    if (rc < 0) {
        rc = cordon_error_set(err, rc, derr.os_errno, "observe: exec of the observer failed: %s", derr.message);
        goto out;
    }
    if (o.status != CORDON_RUN_EXITED || o.exit_code != 0) {
        first_line(&o.err, line, sizeof(line));
        rc = cordon_error_set(err, o.status == CORDON_RUN_TIMEOUT ? CORDON_E_TIMEOUT : CORDON_E_PROVIDER, 0,
                              "observe: the observer %s: %s", status_text(&o, why, sizeof(why)), line);
        goto out;
    }
    if (o.out.dropped_bytes > 0 || o.out.len == 0) {
        rc = cordon_error_set(err, CORDON_E_PROVIDER, 0,
                              "observe: the observer's report is %llu bytes (limit %u, and not empty)",
                              (unsigned long long)o.out.total_bytes, OBSERVE_RETENTION);
        goto out;
    }
    report = cJSON_ParseWithLength(o.out.data, o.out.len);
    if (!cJSON_IsObject(report)) {
        cJSON_Delete(report);
        rc = cordon_error_set(err, CORDON_E_PROVIDER, 0, "observe: the observer's report is not a JSON object");
        goto out;
    }
    *ret_report = report;
    rc = 0;
out:
    cordon_exec_outcome_clear(&o);
    return rc;
}

/* Ask one toolchain for its version; a tool that is missing or fails is
 * "available": false with a reason, never an error of the observation. */
static int probe_toolchain(const struct cordon_observe_opts *opts, const char *state, size_t idx,
                           uint64_t timeout_ms, cJSON *toolchains, struct cordon_error *err)
{
    struct cordon_exec_outcome o;
    struct cordon_error derr;
    char raw[RAW_VERSION_MAX], version[72], reason[sizeof(derr.message)] = "";
    cJSON *t = cJSON_AddObjectToObject(toolchains, toolchain_cmds[idx].id);
    int rc;

    if (t == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
    memset(&o, 0, sizeof(o));
    cordon_error_init(&derr);
    raw[0] = '\0';
    rc = cordon__observe_drive(opts, state, toolchain_cmds[idx].argv, timeout_ms, OBSERVE_RETENTION,
                               OBSERVE_BUDGET, &o, &derr);
    if (rc == CORDON_E_NOT_FOUND) {
        snprintf(reason, sizeof(reason), "%s not found", toolchain_cmds[idx].argv[0]);
    } else if (rc < 0) {
        rc = cordon_error_set(err, rc, derr.os_errno, "observe: toolchain %s: exec failed: %s",
                              toolchain_cmds[idx].id, derr.message);
        goto out;
    } else if (o.status != CORDON_RUN_EXITED || o.exit_code != 0) {
        snprintf(reason, sizeof(reason), "%s %s", toolchain_cmds[idx].argv[0],
                 status_text(&o, version, sizeof(version)));
    } else {
        first_line(o.out.len > 0 ? &o.out : &o.err, raw, sizeof(raw));
        if (raw[0] == '\0')
            snprintf(reason, sizeof(reason), "%s printed no version", toolchain_cmds[idx].argv[0]);
        else if (cordon_version_normalize(toolchain_cmds[idx].id, raw, version, sizeof(version), &derr) < 0)
            snprintf(reason, sizeof(reason), "%s", derr.message);
    }
    if (!cJSON_AddBoolToObject(t, "available", reason[0] == '\0') ||
        (reason[0] == '\0' && (!cJSON_AddStringToObject(t, "version", version) ||
                               !cJSON_AddStringToObject(t, "raw_version", raw))) ||
        (reason[0] != '\0' && !cJSON_AddStringToObject(t, "reason", reason))) {
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
        goto out;
    }
    rc = 0;
out:
    cordon_exec_outcome_clear(&o);
    return rc;
}

/* The options struct as first published, before observer_name. */
#define OPTS_V1_SIZE (offsetof(struct cordon_observe_opts, timeout_ms) + sizeof(uint64_t))

static const char *observer_name_of(const struct cordon_observe_opts *opts)
{
    if (opts->struct_size < offsetof(struct cordon_observe_opts, observer_name) + sizeof(opts->observer_name))
        return NULL;
    return opts->observer_name;
}

static int check_opts(const struct cordon_observe_opts *opts, size_t *ret_tool_idx, size_t *ret_ntools,
                      struct cordon_error *err)
{
    const struct cordon_provider_v1 *p;
    size_t n = 0;

    if (opts == NULL || opts->struct_size < OPTS_V1_SIZE || opts->struct_size > sizeof(*opts))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "observe: opts.struct_size must be %zu to %zu",
                                (size_t)OPTS_V1_SIZE, sizeof(*opts));
    if (!CORDON_HOST_HAS(opts->host, observer_path) || opts->host->observer_path == NULL ||
        opts->host->observer_path[0] != '/' || opts->host->free == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "observe: host.observer_path must be an absolute path (and host.free set)");
    p = opts->provider;
    if (p == NULL || p->provision == NULL || p->import_tar == NULL || p->exec == NULL || p->terminate == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "observe: provider with provision, import_tar, exec and terminate is required");
    if (observer_name_of(opts) != NULL) {
        size_t len = strlen(opts->observer_name);
        bool ok = len > 0 && len <= OBSERVER_NAME_MAX && opts->observer_name[0] != '.';

        for (size_t i = 0; ok && i < len; i++) {
            char c = opts->observer_name[i];

            ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
        }
        if (!ok)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "observe: observer_name must be 1 to %d of [a-z0-9._-], not starting "
                                    "with '.'", OBSERVER_NAME_MAX);
    }
    if (opts->environment_json != NULL) {
        cJSON *env = NULL;
        int rc = cordon_json_parse_object("observe: environment_json", opts->environment_json,
                                          MAX_JSON_BYTES, &env, err);

        cJSON_Delete(env);
        if (rc < 0)
            return rc;
    }
    for (; opts->toolchains != NULL && opts->toolchains[n] != NULL; n++) {
        size_t k = 0;

        if (n >= MAX_TOOLCHAINS)
            return cordon_error_set(err, CORDON_E_LIMIT, 0, "observe: toolchains: more than %d entries",
                                    MAX_TOOLCHAINS);
        while (k < COUNT(toolchain_cmds) && strcmp(opts->toolchains[n], toolchain_cmds[k].id) != 0)
            k++;
        if (k == COUNT(toolchain_cmds))
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "observe: toolchains[%zu]: \"%.64s\" is not a canonical id (python, node, "
                                    "go, c++)", n, opts->toolchains[n]);
        ret_tool_idx[n] = k;
    }
    *ret_ntools = n;
    return 0;
}

/* The host's own uid map, for the record of what the host saw. */
static void host_uid_map(char *out, size_t size)
{
    ssize_t n = -1;
    int fd = open("/proc/self/uid_map", O_RDONLY | O_CLOEXEC);

    if (fd >= 0) {
        n = read(fd, out, size - 1);
        close(fd);
    }
    out[n > 0 ? n : 0] = '\0';
}

static cJSON *host_view(cJSON *ns, const char *canary_path, const char *token, pid_t pid)
{
    cJSON *view = cJSON_CreateObject();
    char uid_map[1024];

    if (view == NULL || !cJSON_AddItemToObject(view, "ns", ns)) {
        cJSON_Delete(view);
        cJSON_Delete(ns);
        return NULL;
    }
    if (!cJSON_AddStringToObject(view, "canary_path", canary_path) ||
        !cJSON_AddStringToObject(view, "canary_token", token) ||
        !cJSON_AddNumberToObject(view, "host_pid", (double)pid)) {
        cJSON_Delete(view);
        return NULL;
    }
    host_uid_map(uid_map, sizeof(uid_map));
    /* Its boot id tells the host's kernel from another; its own pid and
     * ancestors and pid 1's mount namespace are what no boundary is. */
    if (!cJSON_AddStringToObject(view, "uid_map", uid_map) || !cordon__host_self(view)) {
        cJSON_Delete(view);
        return NULL;
    }
    return view;
}

/* The host's comparison of the report with its view: the isolation object
 * (*ret_iso, the caller's). */
static int compare(const cJSON *report, const cJSON *view, cJSON **ret_iso, struct cordon_error *err)
{
    char *report_text = cJSON_PrintUnformatted(report), *view_text = cJSON_PrintUnformatted(view);
    char *iso_text = NULL;
    cJSON *iso = NULL;
    int rc;

    if (report_text == NULL || view_text == NULL) {
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
        goto out;
    }
    if ((rc = cordon__observe_compare(report_text, view_text, &iso_text, err)) < 0)
        goto out;
    iso = cJSON_Parse(iso_text);
    if (iso == NULL) {
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
        goto out;
    }
    *ret_iso = iso;
out:
    free(iso_text);
    free(view_text);
    free(report_text);
    return rc;
}

/* Put the pieces together as observe.h documents; every argument stays the
 * caller's. */
static int assemble(cJSON *report, cJSON *view, cJSON *iso, cJSON *toolchains, cJSON *limits, char **ret_json,
                    struct cordon_error *err)
{
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(report, "net");
    cJSON *result = cJSON_CreateObject(), *ifaces;
    char *text = NULL;
    int rc;

    src = cJSON_IsObject(src) ? cJSON_GetObjectItemCaseSensitive(src, "interfaces") : NULL;
    ifaces = cJSON_IsArray(src) ? cJSON_Duplicate(src, true) : cJSON_CreateArray();
    if (result == NULL || !cJSON_AddItemToObject(result, "interfaces", ifaces)) {
        cJSON_Delete(ifaces);
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
        goto out;
    }
    /* References: what the caller owns stays the caller's. */
    if (!cJSON_AddStringToObject(result, "observed_by", "cordon-observe") ||
        !cJSON_AddStringToObject(result, "network", get_str(iso, "network_mode")) ||
        !cJSON_AddItemReferenceToObject(result, "isolation", iso) ||
        !cJSON_AddItemReferenceToObject(result, "toolchains", toolchains) ||
        !cJSON_AddItemReferenceToObject(result, "report", report) ||
        !cJSON_AddItemReferenceToObject(result, "host_view", view) ||
        (limits != NULL && !cJSON_AddItemReferenceToObject(result, "limits", limits)) ||
        (text = cJSON_PrintUnformatted(result)) == NULL) {
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
        goto out;
    }
    *ret_json = text;
    rc = 0;
out:
    cJSON_Delete(result);
    return rc;
}

int cordon_observe_run(const struct cordon_observe_opts *opts, char **ret_json, struct cordon_error *err)
{
    size_t tool_idx[MAX_TOOLCHAINS], ntools = 0;
    char canary_dir[64] = "", canary_path[96], token[33], pid_token[33], exec_hex[25], execution_id[32];
    char ns_arg[512], pid_arg[24], observer_argv0[80];
    cJSON *ns = NULL, *view = NULL, *report = NULL, *toolchains = NULL, *limits = NULL, *iso = NULL, *boundary;
    struct cordon_error perr;
    char *spec = NULL, *state = NULL, *result = NULL, refused[sizeof(perr.message)] = "";
    struct cordon_limits small = ordinary_limits;
    bool flood = false;
    uint64_t timeout_ms, before_ms = 0, after_ms = 0;
    pid_t canary = -1;
    int tar_fd = -1, rc;

    if (ret_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "observe: ret_json is required");
    if ((rc = check_opts(opts, tool_idx, &ntools, err)) < 0)
        return rc;
    timeout_ms = opts->timeout_ms != 0 ? opts->timeout_ms : OBSERVE_TIMEOUT_MS;
    cordon_error_init(&perr);

    /* (a) the host's view: namespaces, canary file, canary process. */
    ns = cJSON_CreateObject();
    toolchains = cJSON_CreateObject();
    if (ns == NULL || toolchains == NULL) {
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
        goto out;
    }
    if ((rc = host_namespaces(ns, ns_arg, sizeof(ns_arg), err)) < 0 ||
        (rc = cordon__observe_random_hex(pid_token, 16, err)) < 0 ||
        (rc = cordon__observe_random_hex(exec_hex, 12, err)) < 0 ||
        (rc = canary_file_create(canary_dir, sizeof(canary_dir), canary_path, sizeof(canary_path), token,
                                 err)) < 0 ||
        (rc = canary_start(opts->host->observer_path, pid_token, &canary, err)) < 0)
        goto out;
    /* Landed as an ordinary file, the observer also gets an ordinary
     * execution: the id a host-flow provision gets by default. */
    if (observer_name_of(opts) != NULL)
        snprintf(execution_id, sizeof(execution_id), "exec-%s", exec_hex);
    else
        snprintf(execution_id, sizeof(execution_id), "observe-%.12s", exec_hex);
    snprintf(pid_arg, sizeof(pid_arg), "%ld", (long)canary);
    view = host_view(ns, canary_path, token, canary);
    ns = NULL;
    if (view == NULL) {
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
        goto out;
    }

    /* (b) provision exactly as a user's execution would be, with the small
     * limits drawn for this probe. A provider that refuses them (a VM with
     * a memory floor) gets the ordinary ones once: its isolation is still
     * observed, and its limits are checked against those. */
    if (check_limits(opts) && (rc = cordon__observe_small_limits(&small, err)) < 0)
        goto out;
    if ((rc = build_spec(opts, execution_id, &small, &spec, err)) < 0)
        goto out;
    rc = opts->provider->provision(opts->resource, spec, &state, &perr);
    if (check_limits(opts) && (rc < 0 || state == NULL)) {
        snprintf(refused, sizeof(refused), "%s", rc < 0 ? perr.message : "no state returned");
        if (state != NULL)
            opts->host->free(state);
        state = NULL;
        if (opts->provider->reclaim != NULL)
            opts->provider->reclaim(opts->resource, execution_id, &perr);
        free(spec);
        spec = NULL;
        cordon_error_init(&perr);
        /* The limit checks below then hold the provider to these. */
        small = ordinary_limits;
        if ((rc = build_spec(opts, execution_id, &ordinary_limits, &spec, err)) < 0)
            goto out;
        rc = opts->provider->provision(opts->resource, spec, &state, &perr);
    }
    if (rc < 0 || state == NULL) {
        rc = cordon_error_set(err, rc < 0 ? rc : CORDON_E_PROVIDER, perr.os_errno,
                              "observe: provision failed: %s", rc < 0 ? perr.message : "no state returned");
        state = NULL;
        /* Whatever a failed provision left behind goes now, found by id. */
        if (opts->provider->reclaim != NULL)
            opts->provider->reclaim(opts->resource, execution_id, &perr);
        goto out;
    }

    /* (c) copy the observer in: under the caller's name as an ordinary
     * file, or as the provider-facing .cordon/cordon-observe. */
    if (observer_name_of(opts) != NULL) {
        if ((rc = cordon__observer_land_as(opts, state, opts->observer_name, err)) < 0)
            goto out;
        snprintf(observer_argv0, sizeof(observer_argv0), "./%s", opts->observer_name);
    } else {
        if ((rc = cordon__observer_tar(opts->host->observer_path, &tar_fd, err)) < 0)
            goto out;
        rc = opts->provider->import_tar(opts->resource, state, "", tar_fd, &perr);
        if (rc < 0) {
            rc = cordon_error_set(err, rc, perr.os_errno, "observe: import_tar failed: %s", perr.message);
            goto out;
        }
        snprintf(observer_argv0, sizeof(observer_argv0), "%s", OBSERVER_IN_SANDBOX);
    }

    /* (d) run it with the host's canaries named on its command line. */
    {
        const char *boot_id = get_str(view, "boot_id");
        const char *const argv[] = {
            observer_argv0, "--canary-path", canary_path, "--canary-token", token,
            "--host-pid", pid_arg, "--host-pid-token", pid_token, "--host-ns", ns_arg,
            boot_id != NULL ? "--host-boot-id" : NULL, boot_id, NULL,
        };

        before_ms = cordon__now_boot_ms();
        if ((rc = run_observer(opts, state, argv, timeout_ms, &report, err)) < 0)
            goto out;
        after_ms = cordon__now_boot_ms();
    }
    /* A canary that died while we waited would pass for a contained one. */
    if (!canary_running(canary, pid_token)) {
        rc = cordon_error_set(err, CORDON_E_PROVIDER, 0,
                              "observe: the canary process (pid %ld) ended before the observer looked; "
                              "its absence would prove nothing", (long)canary);
        goto out;
    }
    /* So would a canary file removed meanwhile (a tmp cleaner, a provider
     * that tidies /run): it must still hold its token. */
    if (!canary_file_holds(canary_path, token)) {
        rc = cordon_error_set(err, CORDON_E_PROVIDER, 0,
                              "observe: the canary file %s was removed or changed while the observer "
                              "looked; its absence would prove nothing", canary_path);
        goto out;
    }

    /* (e) the boundary from outside, while the execution still lives:
     * the processes the provider names, read from the host's /proc. */
    boundary = cordon__boundary_view(opts->host, opts->provider, opts->resource, state, observer_argv0 + 2,
                                     before_ms, after_ms);
    if (boundary == NULL || !cJSON_AddItemToObject(view, "boundary", boundary)) {
        cJSON_Delete(boundary);
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
        goto out;
    }

    /* (f) compare, then the limits once the comparison showed them safe
     * to try, in the execution still running, before any program of the
     * image runs; (g) the toolchain versions; (h) the output check last,
     * since an output_limit may take the execution's process tree down;
     * teardown follows below on every path. */
    if ((rc = compare(report, view, &iso, err)) < 0 ||
        (check_limits(opts) &&
         (rc = cordon__observe_limits(opts, state, observer_argv0, ns_arg, timeout_ms, iso, &small,
                                      refused[0] != '\0' ? refused : NULL, &limits, &flood, err)) < 0))
        goto out;
    for (size_t i = 0; i < ntools; i++)
        if ((rc = probe_toolchain(opts, state, tool_idx[i], timeout_ms, toolchains, err)) < 0)
            goto out;
    if (flood && !cordon__observe_limits_output(opts, state, observer_argv0, timeout_ms, small.max_output_bytes,
                                                limits)) {
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
        goto out;
    }
    rc = assemble(report, view, iso, toolchains, limits, &result, err);
out:
    if (state != NULL) {
        struct cordon_error terr;
        int trc;

        cordon_error_init(&terr);
        trc = opts->provider->terminate(opts->resource, state, &terr);
        /* A sandbox left running is a failure even when the observation
         * worked; reclaim by id is the second try at removing it. */
        if (trc < 0 && rc == 0)
            rc = cordon_error_set(err, trc, terr.os_errno, "observe: terminate failed: %s", terr.message);
        if (trc < 0 && opts->provider->reclaim != NULL) {
            cordon_error_init(&terr);
            opts->provider->reclaim(opts->resource, execution_id, &terr);
        }
        opts->host->free(state);
    }
    canary_stop(canary);
    if (canary_dir[0] != '\0')
        cordon_fs_remove_tree_path(canary_dir, NULL);
    if (tar_fd >= 0)
        close(tar_fd);
    free(spec);
    cJSON_Delete(toolchains);
    cJSON_Delete(limits);
    cJSON_Delete(iso);
    cJSON_Delete(report);
    cJSON_Delete(view);
    cJSON_Delete(ns);
    if (rc == 0)
        *ret_json = result;
    else
        free(result);
    return rc;
}
