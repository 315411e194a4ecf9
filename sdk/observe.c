/*
 * sdk: one observation of a provider's isolation, driven through the
 * provider's own vtable, and the pure comparison of what the observer saw
 * with the host's view. docs/observation.md explains every check.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <cordon/sdk/drive.h>
#include <cordon/sdk/facts.h>
#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/observe.h>
#include <cordon/sdk/tar.h>

#define OBSERVE_TIMEOUT_MS 20000u
#define OBSERVE_RETENTION (1024u * 1024u)
#define OBSERVE_BUDGET (2u * 1024u * 1024u)
#define OBSERVE_LIFETIME_MS 120000u
#define OBSERVE_PATH_ENV "/usr/local/bin:/usr/bin:/bin"
#define OBSERVER_IN_SANDBOX "./.cordon/cordon-observe"
#define OBSERVER_MAX_BYTES (64u * 1024u * 1024u)
#define CANARY_IDLE_SECONDS "120"
#define CANARY_START_MS 3000u
#define MAX_JSON_BYTES (1024u * 1024u)
#define MAX_TOOLCHAINS 16
#define RAW_VERSION_MAX 256

enum axis { AX_PROCESS, AX_HOST_FS, AX_PRIVESC, AX_SYSCALLS, AX_COUNT };

static const char *const axis_names[AX_COUNT] = {
    CORDON_AXIS_PROCESS_CONTAINED, CORDON_AXIS_HOST_FS_RESTRICTED,
    CORDON_AXIS_PRIVESC_BLOCKED, CORDON_AXIS_SYSCALLS_RESTRICTED,
};

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

/* ---- comparison ----------------------------------------------------------- */

struct verdict {
    cJSON *checks;
    bool axis_ok[AX_COUNT];
    bool oom;
};

static void add_check(struct verdict *v, enum axis axis, const char *name, bool ok, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void add_check(struct verdict *v, enum axis axis, const char *name, bool ok, const char *fmt, ...)
{
    char detail[320];
    cJSON *c = cJSON_CreateObject();
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    v->axis_ok[axis] = v->axis_ok[axis] && ok;
    if (c == NULL || !cJSON_AddItemToArray(v->checks, c)) {
        cJSON_Delete(c);
        v->oom = true;
        return;
    }
    if (!cJSON_AddStringToObject(c, "axis", axis_names[axis]) || !cJSON_AddStringToObject(c, "check", name) ||
        !cJSON_AddBoolToObject(c, "ok", ok) || !cJSON_AddStringToObject(c, "detail", detail))
        v->oom = true;
}

static const cJSON *get(const cJSON *obj, const char *key)
{
    return cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
}

/* -1 when key is missing or not a boolean, else 0 or 1. */
static int get_bool(const cJSON *obj, const char *key)
{
    const cJSON *item = get(obj, key);

    return cJSON_IsBool(item) ? cJSON_IsTrue(item) : -1;
}

static bool get_num(const cJSON *obj, const char *key, double *ret)
{
    const cJSON *item = get(obj, key);

    if (!cJSON_IsNumber(item))
        return false;
    *ret = item->valuedouble;
    return true;
}

static const char *get_str(const cJSON *obj, const char *key)
{
    const cJSON *item = get(obj, key);

    return cJSON_IsString(item) ? item->valuestring : NULL;
}

/* The entry of an array of objects whose field key equals value. */
static const cJSON *find_by(const cJSON *arr, const char *key, const char *value)
{
    const cJSON *item;

    if (!cJSON_IsArray(arr))
        return NULL;
    cJSON_ArrayForEach(item, arr) {
        const char *s = get_str(item, key);

        if (s != NULL && strcmp(s, value) == 0)
            return item;
    }
    return NULL;
}

static void check_ns(struct verdict *v, enum axis axis, const char *check, const char *ns,
                     const cJSON *report, const cJSON *host)
{
    double mine, theirs;

    if (!get_num(get(report, "ns"), ns, &mine) || !get_num(get(host, "ns"), ns, &theirs)) {
        add_check(v, axis, check, false, "not reported");
        return;
    }
    add_check(v, axis, check, mine != theirs, "%s namespace inode %.0f inside, %.0f on the host%s", ns, mine,
              theirs, mine != theirs ? "" : ": the sandbox shares the host's namespace");
}

static void check_process(struct verdict *v, const cJSON *report, const cJSON *host)
{
    const cJSON *hp = get(report, "host_pid");
    double pid = 0, want = -1;
    int visible, signalable;

    check_ns(v, AX_PROCESS, "pid_namespace", "pid", report, host);
    /* The observer must have looked at the pid the host named. */
    if (!get_num(hp, "pid", &pid) || !get_num(host, "host_pid", &want) || pid != want) {
        add_check(v, AX_PROCESS, "canary_pid_not_visible", false, "not reported");
        add_check(v, AX_PROCESS, "canary_pid_not_signalable", false, "not reported");
        return;
    }
    visible = get_bool(hp, "visible");
    signalable = get_bool(hp, "signalable");
    if (visible < 0)
        add_check(v, AX_PROCESS, "canary_pid_not_visible", false, "not reported");
    else
        add_check(v, AX_PROCESS, "canary_pid_not_visible", visible == 0,
                  visible ? "/proc/%.0f/cmdline shows the host's canary process" :
                            "the host's canary process (pid %.0f) is not visible", pid);
    if (signalable < 0)
        add_check(v, AX_PROCESS, "canary_pid_not_signalable", false, "not reported");
    else
        add_check(v, AX_PROCESS, "canary_pid_not_signalable", signalable == 0,
                  signalable ? "kill(%.0f, 0) reached the host's canary process" :
                               "kill(%.0f, 0) cannot reach the host's canary process", pid);
}

static void check_canary_file(struct verdict *v, const cJSON *report, const cJSON *host)
{
    const cJSON *cf = get(report, "canary_file");
    const char *path = get_str(cf, "path"), *want = get_str(host, "canary_path");
    int exists = get_bool(cf, "exists"), readable = get_bool(cf, "readable");

    if (path == NULL || want == NULL || strcmp(path, want) != 0)
        exists = readable = -1;
    if (exists < 0)
        add_check(v, AX_HOST_FS, "canary_file_not_visible", false, "not reported");
    else
        add_check(v, AX_HOST_FS, "canary_file_not_visible", exists == 0,
                  exists ? "the host's canary file %s exists inside" : "%s does not exist inside", want);
    if (readable < 0)
        add_check(v, AX_HOST_FS, "canary_file_not_readable", false, "not reported");
    else
        add_check(v, AX_HOST_FS, "canary_file_not_readable", readable == 0,
                  readable ? "the host's canary file %s is readable inside%s" : "%s cannot be read inside%s",
                  want, readable && get_bool(cf, "content_matches") == 1 ? " and holds the host's token" : "");
}

static void check_writes(struct verdict *v, const cJSON *report)
{
    static const char *const rootfs[] = { "/etc", "/usr", "/bin" };
    const cJSON *writes = get(report, "writes");
    const cJSON *root = find_by(writes, "path", "/");
    char writable[64] = "";
    bool reported = true;
    int w = get_bool(root, "writable");

    if (w < 0)
        add_check(v, AX_HOST_FS, "root_not_writable", false, "not reported");
    else
        add_check(v, AX_HOST_FS, "root_not_writable", w == 0,
                  w ? "a new file could be created in /" : "creating a file in / failed");
    for (size_t i = 0; i < COUNT(rootfs); i++) {
        int ok = get_bool(find_by(writes, "path", rootfs[i]), "writable");

        if (ok < 0)
            reported = false;
        else if (ok == 1) {
            strcat(writable, writable[0] != '\0' ? ", " : "");
            strcat(writable, rootfs[i]);
        }
    }
    if (!reported)
        add_check(v, AX_HOST_FS, "rootfs_not_writable", false, "not reported");
    else
        add_check(v, AX_HOST_FS, "rootfs_not_writable", writable[0] == '\0',
                  writable[0] != '\0' ? "new files could be created in %s" :
                                        "creating files in /etc, /usr and /bin failed%s", writable);
}

static void check_fds(struct verdict *v, const cJSON *report)
{
    const cJSON *fds = get(report, "fds");
    const cJSON *fd;
    char list[256] = "";
    size_t used = 0;
    int n = 0;

    if (!cJSON_IsArray(fds)) {
        add_check(v, AX_HOST_FS, "no_inherited_fds", false, "not reported");
        return;
    }
    cJSON_ArrayForEach(fd, fds) {
        double num = -1;
        const char *target = get_str(fd, "target");
        int w;

        get_num(fd, "fd", &num);
        w = snprintf(list + used, sizeof(list) - used, "%sfd %.0f -> %s", n > 0 ? ", " : "", num,
                     target != NULL ? target : "?");
        if (w > 0)
            used = used + (size_t)w < sizeof(list) ? used + (size_t)w : sizeof(list) - 1;
        n++;
    }
    add_check(v, AX_HOST_FS, "no_inherited_fds", n == 0,
              n == 0 ? "only stdin, stdout and stderr are open%s" : "inherited beyond stdio: %s", list);
}

static void check_readable_file(struct verdict *v, const cJSON *report, const char *key, const char *check,
                                const char *path)
{
    int r = get_bool(get(get(report, "files"), key), "readable");

    if (r < 0)
        add_check(v, AX_HOST_FS, check, false, "not reported");
    else
        add_check(v, AX_HOST_FS, check, r == 0, "%s is %sreadable inside", path, r ? "" : "not ");
}

static void check_cap(struct verdict *v, const cJSON *status, const char *field, const char *check)
{
    const char *hex = get_str(status, field);
    char *end;
    unsigned long long caps;

    if (hex == NULL) {
        add_check(v, AX_PRIVESC, check, false, "not reported");
        return;
    }
    errno = 0;
    caps = strtoull(hex, &end, 16);
    if (errno != 0 || end == hex || *end != '\0') {
        add_check(v, AX_PRIVESC, check, false, "not reported (%s is \"%.32s\")", field, hex);
        return;
    }
    add_check(v, AX_PRIVESC, check, caps == 0, "%s %s", field, hex);
}

static void check_privileges(struct verdict *v, const cJSON *report)
{
    const cJSON *status = get(report, "status");
    double euid, nnp;

    if (!get_num(get(report, "ids"), "euid", &euid))
        add_check(v, AX_PRIVESC, "euid_not_root", false, "not reported");
    else
        add_check(v, AX_PRIVESC, "euid_not_root", euid != 0, "effective uid %.0f", euid);
    if (!get_num(status, "NoNewPrivs", &nnp))
        add_check(v, AX_PRIVESC, "no_new_privs", false, "not reported");
    else
        add_check(v, AX_PRIVESC, "no_new_privs", nnp == 1, "NoNewPrivs %.0f", nnp);
    check_cap(v, status, "CapEff", "cap_effective_empty");
    check_cap(v, status, "CapPrm", "cap_permitted_empty");
    /* With an empty bounding set even a setuid-root binary gains nothing. */
    check_cap(v, status, "CapBnd", "cap_bounding_empty");
    check_cap(v, status, "CapAmb", "cap_ambient_empty");
}

static void check_syscalls(struct verdict *v, const cJSON *report)
{
    static const char *const calls[] = { "keyctl", "bpf", "mount", "unshare_user", "io_uring_setup" };
    const cJSON *syscalls = get(report, "syscalls");
    double mode;

    if (!get_num(get(report, "status"), "Seccomp", &mode))
        add_check(v, AX_SYSCALLS, "seccomp_filter", false, "not reported");
    else
        add_check(v, AX_SYSCALLS, "seccomp_filter", mode == 2, "Seccomp mode %.0f%s", mode,
                  mode == 2 ? " (filter)" : ", not 2 (filter)");
    for (size_t i = 0; i < COUNT(calls); i++) {
        const cJSON *s = find_by(syscalls, "name", calls[i]);
        const char *result = get_str(s, "result"), *ename = get_str(s, "errno_name");
        char check[64];

        snprintf(check, sizeof(check), "%s_refused", calls[i]);
        if (ename == NULL)
            ename = "no errno";
        if (result == NULL)
            add_check(v, AX_SYSCALLS, check, false, "not reported");
        else if (strcmp(result, "refused") == 0)
            add_check(v, AX_SYSCALLS, check, true, "%s was refused (%s)", calls[i], ename);
        else if (strcmp(result, "ok") == 0)
            add_check(v, AX_SYSCALLS, check, false, "%s succeeded", calls[i]);
        else if (strcmp(result, "reachable") == 0)
            add_check(v, AX_SYSCALLS, check, false,
                      "%s reached the kernel's own argument checks (%s): nothing refused it", calls[i], ename);
        else
            add_check(v, AX_SYSCALLS, check, false, "%s could not be tried (%s)", calls[i], ename);
    }
}

/* "none": only loopback (or nothing); "private": its own namespace; else "host". */
static const char *network_mode(const cJSON *report, const cJSON *host)
{
    const cJSON *ifaces = get(get(report, "net"), "interfaces");
    double mine, theirs;

    if (cJSON_IsArray(ifaces)) {
        const cJSON *i;
        bool only_lo = true;

        cJSON_ArrayForEach(i, ifaces)
            only_lo = only_lo && cJSON_IsString(i) && strcmp(i->valuestring, "lo") == 0;
        if (only_lo)
            return "none";
    }
    if (get_num(get(report, "ns"), "net", &mine) && get_num(get(host, "ns"), "net", &theirs) && mine != theirs)
        return "private";
    return "host";
}

static int parse_object(const char *json, const char *what, cJSON **ret, struct cordon_error *err)
{
    size_t len;
    cJSON *obj;

    if (json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "observe: %s is required", what);
    len = strnlen(json, MAX_JSON_BYTES + 1);
    if (len > MAX_JSON_BYTES)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "observe: %s is over the limit of %u bytes", what,
                                MAX_JSON_BYTES);
    obj = cJSON_ParseWithLength(json, len);
    if (!cJSON_IsObject(obj)) {
        cJSON_Delete(obj);
        return cordon_error_set(err, CORDON_E_INVALID, 0, "observe: %s is not a JSON object", what);
    }
    *ret = obj;
    return 0;
}

int cordon_observe_compare(const char *report_json, const char *host_view_json, char **ret_isolation_json,
                           struct cordon_error *err)
{
    cJSON *report = NULL, *host = NULL, *iso = NULL;
    struct verdict v = { .checks = NULL };
    double version = 0, pid;
    char *text;
    int rc;

    if (ret_isolation_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "observe: ret_isolation_json is required");
    if ((rc = parse_object(report_json, "report", &report, err)) < 0 ||
        (rc = parse_object(host_view_json, "host view", &host, err)) < 0)
        goto out;
    if (!get_num(report, "report_version", &version) || version != 1) {
        rc = cordon_error_set(err, CORDON_E_INVALID, 0,
                              "observe: report_version %.0f is not supported (want 1)", version);
        goto out;
    }
    if (!cJSON_IsObject(get(host, "ns")) || get_str(host, "canary_path") == NULL ||
        !get_num(host, "host_pid", &pid)) {
        rc = cordon_error_set(err, CORDON_E_INVALID, 0,
                              "observe: host view needs \"ns\", \"canary_path\" and \"host_pid\"");
        goto out;
    }
    iso = cJSON_CreateObject();
    v.checks = cJSON_CreateArray();
    if (iso == NULL || v.checks == NULL) {
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
        goto out;
    }
    for (int a = 0; a < AX_COUNT; a++)
        v.axis_ok[a] = true;
    check_process(&v, report, host);
    check_ns(&v, AX_HOST_FS, "mount_namespace", "mnt", report, host);
    check_canary_file(&v, report, host);
    check_writes(&v, report);
    check_fds(&v, report);
    check_readable_file(&v, report, "proc_kcore", "proc_kcore_not_readable", "/proc/kcore");
    check_readable_file(&v, report, "sys_firmware", "sys_firmware_not_readable", "/sys/firmware");
    check_privileges(&v, report);
    check_syscalls(&v, report);
    for (int a = 0; a < AX_COUNT; a++)
        if (!cJSON_AddBoolToObject(iso, axis_names[a], v.axis_ok[a]))
            v.oom = true;
    if (!cJSON_AddStringToObject(iso, "network_mode", network_mode(report, host)) ||
        !cJSON_AddItemToObject(iso, "checks", v.checks))
        v.oom = true;
    else
        v.checks = NULL;
    text = v.oom ? NULL : cJSON_PrintUnformatted(iso);
    if (text == NULL) {
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
        goto out;
    }
    *ret_isolation_json = text;
    rc = 0;
out:
    cJSON_Delete(v.checks);
    cJSON_Delete(iso);
    cJSON_Delete(host);
    cJSON_Delete(report);
    return rc;
}

/* ---- the host's view ------------------------------------------------------ */

static int random_hex(char *out, size_t nbytes, struct cordon_error *err)
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

/* A fresh 0755 directory holding a 0644 canary, so that only isolation, not
 * permissions, can hide it from the sandbox. */
static int canary_file_create(char *dir, size_t dir_size, char *path, size_t path_size, char token[33],
                              struct cordon_error *err)
{
    int fd, rc;

    if ((rc = random_hex(token, 16, err)) < 0)
        return rc;
    snprintf(dir, dir_size, "/tmp/cordon-observe-XXXXXX");
    if (mkdtemp(dir) == NULL) {
        dir[0] = '\0';
        return cordon_error_set(err, CORDON_E_IO, errno, "observe: canary directory in /tmp failed: %s",
                                strerror(errno));
    }
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

static int build_spec(const struct cordon_observe_opts *opts, const char *execution_id, char **ret,
                      struct cordon_error *err)
{
    cJSON *spec = cJSON_CreateObject(), *res, *env = NULL;
    char *text = NULL;
    int rc;

    if (opts->environment_json != NULL && (rc = parse_object(opts->environment_json, "environment_json",
                                                             &env, err)) < 0)
        goto out;
    if (env == NULL)
        env = cJSON_CreateObject();
    if (spec == NULL || env == NULL || !cJSON_AddStringToObject(spec, "execution_id", execution_id) ||
        !cJSON_AddItemToObject(spec, "image", opts->image != NULL ? cJSON_CreateString(opts->image) :
                                                                    cJSON_CreateNull()) ||
        (res = cJSON_AddObjectToObject(spec, "resources")) == NULL ||
        !cJSON_AddNumberToObject(res, "cpus", 1) ||
        !cJSON_AddNumberToObject(res, "memory_bytes", 268435456.0) ||
        !cJSON_AddNumberToObject(res, "disk_bytes", 67108864.0) ||
        !cJSON_AddNumberToObject(res, "pids", 128) ||
        !cJSON_AddNumberToObject(res, "runtime_ms", OBSERVE_LIFETIME_MS) ||
        !cJSON_AddNumberToObject(res, "max_output_bytes", 1048576.0) ||
        cJSON_AddObjectToObject(spec, "network") == NULL ||
        !cJSON_AddStringToObject(cJSON_GetObjectItem(spec, "network"), "mode", "none") ||
        !cJSON_AddItemToObject(spec, "environment", env)) {
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
        goto out;
    }
    env = NULL;
    if (!cJSON_AddStringToObject(spec, "layout", "host") ||
        !cJSON_AddNumberToObject(spec, "expires_at_ms", (double)(cordon_now_wall_ms() + OBSERVE_LIFETIME_MS)) ||
        (text = cJSON_PrintUnformatted(spec)) == NULL) {
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
        goto out;
    }
    *ret = text;
    rc = 0;
out:
    cJSON_Delete(env);
    cJSON_Delete(spec);
    return rc;
}

/* A tar stream in a memfd holding .cordon/ and .cordon/cordon-observe. */
static int observer_tar(const char *observer, int *ret_fd, struct cordon_error *err)
{
    struct cordon_tar_writer *w = NULL;
    struct stat st;
    int tar_fd, bin_fd = -1, rc;

    tar_fd = memfd_create("cordon-observe.tar", MFD_CLOEXEC);
    if (tar_fd < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "observe: memfd for the observer tar failed: %s",
                                strerror(errno));
    bin_fd = open(observer, O_RDONLY | O_CLOEXEC);
    if (bin_fd < 0 || fstat(bin_fd, &st) != 0) {
        rc = cordon_error_set(err, CORDON_E_NOT_FOUND, errno, "observe: observer %s: %s", observer,
                              strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > OBSERVER_MAX_BYTES) {
        rc = cordon_error_set(err, CORDON_E_INVALID, 0,
                              "observe: observer %s must be a regular file of at most %u bytes", observer,
                              OBSERVER_MAX_BYTES);
        goto out;
    }
    if ((rc = cordon_tar_writer_open(tar_fd, &w, err)) < 0 ||
        (rc = cordon_tar_writer_add_dir(w, ".cordon", 0755, err)) < 0 ||
        (rc = cordon_tar_writer_add_fd(w, ".cordon/cordon-observe", bin_fd, (uint64_t)st.st_size, 0755, err)) < 0)
        goto out;
    rc = cordon_tar_writer_close(w, err);
    w = NULL;
    if (rc < 0)
        goto out;
    if (lseek(tar_fd, 0, SEEK_SET) != 0) {
        rc = cordon_error_set(err, CORDON_E_IO, errno, "observe: rewinding the observer tar failed: %s",
                              strerror(errno));
        goto out;
    }
    *ret_fd = tar_fd;
    tar_fd = -1;
    rc = 0;
out:
    cordon_tar_writer_free(w);
    if (bin_fd >= 0)
        close(bin_fd);
    if (tar_fd >= 0)
        close(tar_fd);
    return rc;
}

static char *exec_request(const char *const *argv, uint64_t timeout_ms)
{
    cJSON *req = cJSON_CreateObject(), *arr, *env;
    char *text = NULL;

    if (req == NULL || (arr = cJSON_AddArrayToObject(req, "argv")) == NULL)
        goto out;
    for (size_t i = 0; argv[i] != NULL; i++)
        if (!cJSON_AddItemToArray(arr, cJSON_CreateString(argv[i])))
            goto out;
    if (!cJSON_AddStringToObject(req, "cwd", "") || (env = cJSON_AddObjectToObject(req, "env")) == NULL ||
        !cJSON_AddStringToObject(env, "PATH", OBSERVE_PATH_ENV) ||
        cJSON_AddObjectToObject(req, "workspace_env") == NULL ||
        !cJSON_AddNumberToObject(req, "timeout_ms", (double)timeout_ms))
        goto out;
    text = cJSON_PrintUnformatted(req);
out:
    cJSON_Delete(req);
    return text;
}

/* One exec through the host-side driver; 0 means it ran (read ret->status). */
static int drive(const struct cordon_observe_opts *opts, const char *state, const char *const *argv,
                 uint64_t timeout_ms, struct cordon_exec_outcome *ret, struct cordon_error *err)
{
    struct cordon_drive_opts d;
    char *request = exec_request(argv, timeout_ms);
    int rc;

    if (request == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
    cordon_drive_opts_init(&d);
    d.host = opts->host;
    d.provider = opts->provider;
    d.resource = opts->resource;
    d.state_json = state;
    d.request_json = request;
    d.stdin_fd = -1;
    d.timeout_ms = timeout_ms;
    d.retention_bytes = OBSERVE_RETENTION;
    d.output_budget = OBSERVE_BUDGET;
    d.cancel_fd = -1;
    rc = cordon_drive_exec(&d, ret, err);
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
    rc = drive(opts, state, argv, timeout_ms, &o, &derr);
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
    rc = drive(opts, state, toolchain_cmds[idx].argv, timeout_ms, &o, &derr);
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

static int check_opts(const struct cordon_observe_opts *opts, size_t *ret_tool_idx, size_t *ret_ntools,
                      struct cordon_error *err)
{
    const struct cordon_provider_v1 *p;
    size_t n = 0;

    if (opts == NULL || opts->struct_size < sizeof(*opts))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "observe: opts.struct_size must be %zu",
                                sizeof(*opts));
    if (!CORDON_HOST_HAS(opts->host, observer_path) || opts->host->observer_path == NULL ||
        opts->host->observer_path[0] != '/' || opts->host->free == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "observe: host.observer_path must be an absolute path (and host.free set)");
    p = opts->provider;
    if (p == NULL || p->provision == NULL || p->import_tar == NULL || p->exec == NULL || p->terminate == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "observe: provider with provision, import_tar, exec and terminate is required");
    if (opts->environment_json != NULL) {
        cJSON *env = NULL;
        int rc = parse_object(opts->environment_json, "environment_json", &env, err);

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

static cJSON *host_view(cJSON *ns, const char *canary_path, const char *token, pid_t pid)
{
    cJSON *view = cJSON_CreateObject();

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
    return view;
}

/* Compare and put the pieces together as observe.h documents. */
static int assemble(cJSON *report, cJSON *view, cJSON *toolchains, char **ret_json, struct cordon_error *err)
{
    char *report_text = cJSON_PrintUnformatted(report), *view_text = cJSON_PrintUnformatted(view);
    char *iso_text = NULL, *text = NULL;
    cJSON *result = NULL, *iso = NULL, *ifaces;
    const cJSON *src;
    int rc;

    if (report_text == NULL || view_text == NULL) {
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
        goto out;
    }
    if ((rc = cordon_observe_compare(report_text, view_text, &iso_text, err)) < 0)
        goto out;
    iso = cJSON_Parse(iso_text);
    src = get(get(report, "net"), "interfaces");
    ifaces = cJSON_IsArray(src) ? cJSON_Duplicate(src, true) : cJSON_CreateArray();
    result = cJSON_CreateObject();
    if (result == NULL || !cJSON_AddItemToObject(result, "interfaces", ifaces)) {
        cJSON_Delete(ifaces);
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
        goto out;
    }
    if (iso == NULL || !cJSON_AddStringToObject(result, "observed_by", "cordon-observe") ||
        !cJSON_AddStringToObject(result, "network", get_str(iso, "network_mode")) ||
        !cJSON_AddItemToObject(result, "isolation", iso)) {
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
        goto out;
    }
    iso = NULL;
    /* References: report and toolchains stay owned by the caller. */
    if (!cJSON_AddItemReferenceToObject(result, "toolchains", toolchains) ||
        !cJSON_AddItemReferenceToObject(result, "report", report) ||
        (text = cJSON_PrintUnformatted(result)) == NULL) {
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
        goto out;
    }
    *ret_json = text;
    rc = 0;
out:
    cJSON_Delete(result);
    cJSON_Delete(iso);
    free(iso_text);
    free(view_text);
    free(report_text);
    return rc;
}

int cordon_observe_run(const struct cordon_observe_opts *opts, char **ret_json, struct cordon_error *err)
{
    size_t tool_idx[MAX_TOOLCHAINS], ntools = 0;
    char canary_dir[64] = "", canary_path[96], token[33], pid_token[33], exec_hex[13], execution_id[32];
    char ns_arg[512], pid_arg[24];
    cJSON *ns = NULL, *view = NULL, *report = NULL, *toolchains = NULL;
    char *spec = NULL, *state = NULL, *result = NULL;
    struct cordon_error perr;
    uint64_t timeout_ms;
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
        (rc = random_hex(pid_token, 16, err)) < 0 || (rc = random_hex(exec_hex, 6, err)) < 0 ||
        (rc = canary_file_create(canary_dir, sizeof(canary_dir), canary_path, sizeof(canary_path), token,
                                 err)) < 0 ||
        (rc = canary_start(opts->host->observer_path, pid_token, &canary, err)) < 0)
        goto out;
    snprintf(execution_id, sizeof(execution_id), "observe-%s", exec_hex);
    snprintf(pid_arg, sizeof(pid_arg), "%ld", (long)canary);
    view = host_view(ns, canary_path, token, canary);
    ns = NULL;
    if (view == NULL) {
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
        goto out;
    }

    /* (b) provision exactly as a user's execution would be. */
    if ((rc = build_spec(opts, execution_id, &spec, err)) < 0)
        goto out;
    rc = opts->provider->provision(opts->resource, spec, &state, &perr);
    if (rc < 0 || state == NULL) {
        rc = cordon_error_set(err, rc < 0 ? rc : CORDON_E_PROVIDER, perr.os_errno,
                              "observe: provision failed: %s", rc < 0 ? perr.message : "no state returned");
        state = NULL;
        /* Whatever a failed provision left behind goes now, found by id. */
        if (opts->provider->reclaim != NULL)
            opts->provider->reclaim(opts->resource, execution_id, &perr);
        goto out;
    }

    /* (c) copy the observer in. */
    if ((rc = observer_tar(opts->host->observer_path, &tar_fd, err)) < 0)
        goto out;
    rc = opts->provider->import_tar(opts->resource, state, "", tar_fd, &perr);
    if (rc < 0) {
        rc = cordon_error_set(err, rc, perr.os_errno, "observe: import_tar failed: %s", perr.message);
        goto out;
    }

    /* (d) run it with the host's canaries named on its command line. */
    {
        const char *const argv[] = {
            OBSERVER_IN_SANDBOX, "--canary-path", canary_path, "--canary-token", token,
            "--host-pid", pid_arg, "--host-pid-token", pid_token, "--host-ns", ns_arg, NULL,
        };

        if ((rc = run_observer(opts, state, argv, timeout_ms, &report, err)) < 0)
            goto out;
    }
    /* A canary that died while we waited would pass for a contained one. */
    if (!canary_running(canary, pid_token)) {
        rc = cordon_error_set(err, CORDON_E_PROVIDER, 0,
                              "observe: the canary process (pid %ld) ended before the observer looked; "
                              "its absence would prove nothing", (long)canary);
        goto out;
    }

    /* (e) toolchain versions, inside the same execution. */
    for (size_t i = 0; i < ntools; i++)
        if ((rc = probe_toolchain(opts, state, tool_idx[i], timeout_ms, toolchains, err)) < 0)
            goto out;

    /* (g) compare; (f) teardown follows below on every path. */
    rc = assemble(report, view, toolchains, &result, err);
out:
    if (state != NULL) {
        struct cordon_error terr;
        int trc;

        cordon_error_init(&terr);
        trc = opts->provider->terminate(opts->resource, state, &terr);
        /* A sandbox left running is a failure even when the observation worked. */
        if (trc < 0 && rc == 0)
            rc = cordon_error_set(err, trc, terr.os_errno, "observe: terminate failed: %s", terr.message);
        opts->host->free(state);
    }
    canary_stop(canary);
    if (canary_dir[0] != '\0')
        cordon_fs_remove_tree_path(canary_dir, NULL);
    if (tar_fd >= 0)
        close(tar_fd);
    free(spec);
    cJSON_Delete(toolchains);
    cJSON_Delete(report);
    cJSON_Delete(view);
    cJSON_Delete(ns);
    if (rc == 0)
        *ret_json = result;
    else
        free(result);
    return rc;
}
