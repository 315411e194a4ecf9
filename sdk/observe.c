/*
 * sdk: one observation of a provider's isolation, driven through the
 * provider's own vtable, and the pure comparison of what the observer saw
 * with the host's view. docs/observation.md explains every check.
 */
#include <errno.h>
#include <stddef.h>
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
#include <cordon/sdk/request.h>
#include <cordon/sdk/tar.h>

#include "sdk/boundary.h"

#define OBSERVE_TIMEOUT_MS 20000u
#define OBSERVE_RETENTION (1024u * 1024u)
#define OBSERVE_BUDGET (2u * 1024u * 1024u)
#define OBSERVE_LIFETIME_MS 120000u
#define OBSERVE_PATH_ENV "/usr/local/bin:/usr/bin:/bin"
#define OBSERVER_IN_SANDBOX "./.cordon/cordon-observe"
#define OBSERVER_MAX_BYTES (64u * 1024u * 1024u)
#define OBSERVER_NAME_MAX 64
#define OBSERVER_PAD 32   /* random bytes after a landed observer (even) */
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

/* The canary process's checks; the pid namespace is the caller's, since
 * what a namespace inode means depends on the kernel that answered. */
static void check_canary_pid(struct verdict *v, const cJSON *report, const cJSON *host)
{
    const cJSON *hp = get(report, "host_pid");
    double pid = 0, want = -1;
    int visible, signalable;

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

/*
 * The uid that acts on the host's files when the sandbox's euid does: euid
 * mapped through the sandbox's own uid_map (lines "inside outside count").
 * A euid no line covers is the overflow uid, never root.
 */
static void check_uid_map(struct verdict *v, const cJSON *report, double euid)
{
    const char *map = get_str(get(report, "ids"), "uid_map");
    unsigned long long in, out, count, mapped = 0;
    bool covered = false;
    int used = 0;

    if (map == NULL) {
        add_check(v, AX_PRIVESC, "uid_not_host_root", false, "not reported");
        return;
    }
    for (const char *line = map; *line != '\0' && !covered; line += used) {
        if (sscanf(line, " %llu %llu %llu%n", &in, &out, &count, &used) != 3 || used <= 0)
            break;
        if (euid >= (double)in && euid < (double)in + (double)count) {
            covered = true;
            mapped = out + ((unsigned long long)euid - in);
        }
    }
    if (!covered)
        add_check(v, AX_PRIVESC, "uid_not_host_root", true,
                  "effective uid %.0f has no mapping in the sandbox's uid_map (overflow uid)", euid);
    else
        add_check(v, AX_PRIVESC, "uid_not_host_root", mapped != 0,
                  "effective uid %.0f is uid %llu outside the sandbox's user namespace", euid, mapped);
}

static void check_privileges(struct verdict *v, const cJSON *report)
{
    const cJSON *status = get(report, "status");
    double euid, nnp;

    if (!get_num(get(report, "ids"), "euid", &euid)) {
        add_check(v, AX_PRIVESC, "euid_not_root", false, "not reported");
        add_check(v, AX_PRIVESC, "uid_not_host_root", false, "not reported");
    } else {
        add_check(v, AX_PRIVESC, "euid_not_root", euid != 0, "effective uid %.0f", euid);
        check_uid_map(v, report, euid);
    }
    /* A kernel whose status has no NoNewPrivs line (gVisor's) still
     * answers prctl(PR_GET_NO_NEW_PRIVS). */
    if (get_num(status, "NoNewPrivs", &nnp))
        add_check(v, AX_PRIVESC, "no_new_privs", nnp == 1, "NoNewPrivs %.0f", nnp);
    else if (get_num(get(report, "prctl"), "no_new_privs", &nnp))
        add_check(v, AX_PRIVESC, "no_new_privs", nnp == 1, "PR_GET_NO_NEW_PRIVS %.0f (no NoNewPrivs line)", nnp);
    else
        add_check(v, AX_PRIVESC, "no_new_privs", false, "not reported");
    check_cap(v, status, "CapEff", "cap_effective_empty");
    check_cap(v, status, "CapPrm", "cap_permitted_empty");
    /* With an empty bounding set even a setuid-root binary gains nothing. */
    check_cap(v, status, "CapBnd", "cap_bounding_empty");
    if (get_str(status, "CapAmb") != NULL || get_str(get(report, "prctl"), "ambient") == NULL)
        check_cap(v, status, "CapAmb", "cap_ambient_empty");
    else if (strcmp(get_str(get(report, "prctl"), "ambient"), "unsupported") == 0)
        add_check(v, AX_PRIVESC, "cap_ambient_empty", true,
                  "the kernel has no ambient capabilities (PR_CAP_AMBIENT answers EINVAL; no CapAmb line)");
    else
        check_cap(v, get(report, "prctl"), "ambient", "cap_ambient_empty");
}

static void check_seccomp(struct verdict *v, const cJSON *report)
{
    double mode;

    if (!get_num(get(report, "status"), "Seccomp", &mode))
        add_check(v, AX_SYSCALLS, "seccomp_filter", false, "not reported");
    else
        add_check(v, AX_SYSCALLS, "seccomp_filter", mode == 2, "Seccomp mode %.0f%s", mode,
                  mode == 2 ? " (filter)" : ", not 2 (filter)");
}

/*
 * The calls behind a steady stream of kernel privilege escalations, and
 * the file lease. served: the host saw from outside that a userspace
 * kernel serves the sandbox's system calls, so that the first five never
 * reach the host's kernel whatever they answered inside; a lease must be
 * refused all the same (it stalls the host's own reads, wherever granted).
 */
static void check_calls(struct verdict *v, const cJSON *report, bool served)
{
    static const char *const calls[] = { "keyctl", "bpf", "mount", "unshare_user", "io_uring_setup",
                                         "file_lease" };
    const cJSON *syscalls = get(report, "syscalls");

    for (size_t i = 0; i < COUNT(calls); i++) {
        const cJSON *s = find_by(syscalls, "name", calls[i]);
        const char *result = get_str(s, "result"), *ename = get_str(s, "errno_name");
        bool kernel_call = strcmp(calls[i], "file_lease") != 0;
        char check[64];

        snprintf(check, sizeof(check), "%s_refused", calls[i]);
        if (ename == NULL)
            ename = "no errno";
        if (result == NULL)
            add_check(v, AX_SYSCALLS, check, false, "not reported");
        else if (strcmp(result, "refused") == 0)
            add_check(v, AX_SYSCALLS, check, true, "%s was refused (%s)", calls[i], ename);
        else if (served && kernel_call && (strcmp(result, "ok") == 0 || strcmp(result, "reachable") == 0))
            add_check(v, AX_SYSCALLS, check, true,
                      "%s %s inside gVisor's Sentry (%s): its own implementation answered, the host's "
                      "kernel never saw the call", calls[i], strcmp(result, "ok") == 0 ? "succeeded" : "was heard",
                      ename);
        else if (strcmp(result, "ok") == 0)
            add_check(v, AX_SYSCALLS, check, false, "%s succeeded", calls[i]);
        else if (strcmp(result, "reachable") == 0)
            add_check(v, AX_SYSCALLS, check, false,
                      "%s reached the kernel's own argument checks (%s): nothing refused it", calls[i], ename);
        else
            add_check(v, AX_SYSCALLS, check, false, "%s could not be tried (%s)", calls[i], ename);
    }
}

/*
 * The sockets the observer tries to create (report "sockets"). All but the
 * netlink uevent one reach past a network namespace: the hypervisor's
 * host, the link layer, the machine's hardware. A uevent socket only
 * hears the host's device events, and gVisor gives one that hears
 * nothing, so it counts against syscalls_restricted but not the network.
 */
static const struct {
    const char *name;
    bool way_out;
} socket_tries[] = {
    { "vsock", true }, { "packet", true }, { "xdp", true }, { "bluetooth", true }, { "can", true },
    { "nfc", true }, { "qipcrtr", true }, { "rds", true }, { "netlink_uevent", false },
};

/* 1 when the observer created a socket of the try, 0 when it could not, -1
 * when the report does not say. */
static int socket_created(const cJSON *report, const char *name)
{
    return get_bool(find_by(get(report, "sockets"), "name", name), "created");
}

/* sentry: gVisor's Sentry answered, whose netlink uevent socket is its
 * own and hears nothing of the host: only the families that reach outside
 * count there. */
static void check_sockets(struct verdict *v, const cJSON *report, bool sentry)
{
    char created[256] = "";
    size_t used = 0;
    bool reported = true;

    for (size_t i = 0; i < COUNT(socket_tries); i++) {
        int c = socket_created(report, socket_tries[i].name);

        if (c < 0)
            reported = false;
        else if (c == 1 && sentry && !socket_tries[i].way_out)
            continue;
        else if (c == 1 && used < sizeof(created))
            used += (size_t)snprintf(created + used, sizeof(created) - used, "%s%s",
                                     used > 0 ? ", " : "", socket_tries[i].name);
    }
    if (!reported)
        add_check(v, AX_SYSCALLS, "socket_families_refused", false, "not reported");
    else
        add_check(v, AX_SYSCALLS, "socket_families_refused", created[0] == '\0',
                  created[0] != '\0' ? "sockets were created: %s" :
                                        "no vsock, packet, xdp, bluetooth, can, nfc, qipcrtr, rds or "
                                        "netlink uevent socket could be created%s", created);
}

/* ---- the kernel that answered, and the boundary seen from outside -------- */

enum kind { KIND_NAMESPACES, KIND_GVISOR, KIND_VM };

static const char *const kind_names[] = { "namespaces", "gvisor", "vm" };

/* How far the Sentry's process may start before its kernel's clock, and
 * the tick rounding of either clock. */
#define GVISOR_BOOT_SLACK_MS 10000.0
#define CLOCK_ROUNDING_MS 1000.0

/* The first line gVisor's Sentry writes to its own kernel log. */
static bool gvisor_klog(const char *line)
{
    static const char sig[] = "0.000000] Starting gVisor...";

    return line != NULL && line[0] == '[' && strcmp(line + 1 + strspn(line + 1, " "), sig) == 0;
}

/*
 * Which kernel answered the observer, from its raw report (never from the
 * "kind" it wrote): the host's own when the boot ids match; gVisor's when
 * the kernel log begins with the Sentry's line and the boot id is not the
 * host's; another kernel (a virtual machine's guest) when the boot id is
 * another one. Without a boot id and without gVisor's line, the host's
 * own kernel is assumed, whose checks are the strictest from inside. A
 * report without "kernel" (an observer older than this comparison) is
 * the host's kernel, as before.
 */
static enum kind kernel_kind(const cJSON *report, const cJSON *host, char *evidence, size_t size)
{
    const cJSON *k = get(report, "kernel");
    const char *mine = get_str(k, "boot_id"), *theirs = get_str(host, "boot_id");
    const char *klog = get_str(k, "klog_first");

    snprintf(evidence, size, "no kernel facts reported");
    if (!cJSON_IsObject(k))
        return KIND_NAMESPACES;
    if (mine != NULL && theirs != NULL && strcmp(mine, theirs) == 0) {
        snprintf(evidence, size, "boot_id %.40s is the host's own", mine);
        return KIND_NAMESPACES;
    }
    if (gvisor_klog(klog)) {
        snprintf(evidence, size, "the kernel log begins \"%.60s\", boot_id %.40s (the host's is %.40s), "
                 "release %.40s", klog, mine != NULL ? mine : "unreadable", theirs != NULL ? theirs : "unknown",
                 get_str(k, "release") != NULL ? get_str(k, "release") : "?");
        return KIND_GVISOR;
    }
    if (mine != NULL && theirs != NULL) {
        snprintf(evidence, size, "boot_id %.40s is not the host's %.40s and the kernel log is not gVisor's "
                 "(release %.40s, hypervisor %.16s)", mine, theirs,
                 get_str(k, "release") != NULL ? get_str(k, "release") : "?",
                 get_str(k, "hypervisor") != NULL ? get_str(k, "hypervisor") : "none");
        return KIND_VM;
    }
    snprintf(evidence, size, "no boot_id to compare and no gVisor kernel log: taken for the host's kernel");
    return KIND_NAMESPACES;
}

struct boundary {
    const cJSON *view;           /* host_view.boundary */
    const cJSON *procs;          /* its processes: boundary ones first, then descendants */
    bool present;                /* the provider has the boundary operation */
    bool verified;               /* every boundary pid belongs to the sandbox observed */
    char why[320];               /* why not verified */
};

static bool num_in(const cJSON *arr, double v)
{
    const cJSON *item;

    cJSON_ArrayForEach(item, arr)
        if (cJSON_IsNumber(item) && item->valuedouble == v)
            return true;
    return false;
}

static const char *proc_name(const cJSON *p)
{
    const char *exe = get_str(p, "exe"), *name = get_str(p, "name");

    return exe != NULL ? exe : name != NULL ? name : "?";
}

/* A boundary pid tied to the observer's own namespaces: the observer ran
 * in the same pid, mount, ... namespaces as the process the provider
 * named, each that both sides could read. */
static bool tie_namespaces(struct boundary *b, const cJSON *p, const cJSON *report)
{
    static const char *const names[] = { "pid", "mnt", "net", "ipc", "uts", "cgroup", "user" };
    double pid = 0, mine, theirs;

    get_num(p, "pid", &pid);
    for (size_t i = 0; i < COUNT(names); i++) {
        bool have_mine = get_num(get(report, "ns"), names[i], &mine);
        bool have_theirs = get_num(get(p, "ns"), names[i], &theirs);

        if (i < 2 && (!have_mine || !have_theirs)) {
            snprintf(b->why, sizeof(b->why), "pid %.0f cannot be tied to the sandbox: the %s namespace of %s is "
                     "not known", pid, names[i], have_mine ? "the boundary" : "the observer");
            return false;
        }
        if (have_mine && have_theirs && mine != theirs) {
            snprintf(b->why, sizeof(b->why), "pid %.0f (%.60s) is in %s namespace %.0f, the observer ran in %.0f: "
                     "it is not the sandbox the host observed", pid, proc_name(p), names[i], theirs, mine);
            return false;
        }
    }
    return true;
}

/*
 * A boundary pid tied to gVisor's kernel: its Sentry's clock starts when
 * the sandbox process boots it, so the observer's uptime, read inside
 * the host's window around its exec, says when the process must have
 * started. Another process (the host's init, another sandbox) started at
 * another time.
 */
static bool tie_gvisor(struct boundary *b, const cJSON *p, const cJSON *report)
{
    const cJSON *win = get(b->view, "window_ms");
    double pid = 0, up, start, before, after;

    get_num(p, "pid", &pid);
    if (!get_num(get(report, "kernel"), "uptime_ms", &up) || !get_num(p, "starttime_ms", &start) ||
        !get_num(win, "before", &before) || !get_num(win, "after", &after)) {
        snprintf(b->why, sizeof(b->why), "pid %.0f cannot be tied to the sandbox: the observer's uptime, the "
                 "process's start time or the host's window is not known", pid);
        return false;
    }
    if (start < before - up - GVISOR_BOOT_SLACK_MS || start > after - up + CLOCK_ROUNDING_MS) {
        snprintf(b->why, sizeof(b->why), "pid %.0f (%.60s) started at %.1f s after the host's boot, but the "
                 "sandbox's kernel, %.1f s old when the observer ran, started between %.1f s and %.1f s: it "
                 "is not the sandbox the host observed", pid, proc_name(p), start / 1000.0, up / 1000.0,
                 (before - up) / 1000.0, (after - up) / 1000.0);
        return false;
    }
    /* The Sentry that ran the observer holds an fd on its file: a
     * sandbox started at the same moment never opened that name. */
    if (get_str(b->view, "observer") != NULL && get_str(p, "observer_fd") == NULL) {
        snprintf(b->why, sizeof(b->why), "pid %.0f (%.60s) holds no fd on the observer's file %.40s: it is "
                 "not the Sentry that ran the observer", pid, proc_name(p), get_str(b->view, "observer"));
        return false;
    }
    return true;
}

/* Whether the pids the provider named are plausibly the sandbox's: real,
 * not the host or its ancestors, in a mount namespace that is neither the
 * host's nor pid 1's, and tied to what the observer saw. */
static void boundary_verify(struct boundary *b, enum kind kind, const cJSON *report, const cJSON *host)
{
    const char *status;
    const cJSON *p;
    double host_mnt = -1, pid1_mnt = -1, self = -1;
    int boundaries = 0;

    memset(b, 0, sizeof(*b));
    b->view = get(host, "boundary");
    status = get_str(b->view, "status");
    if (status == NULL || strcmp(status, "unsupported") == 0) {
        snprintf(b->why, sizeof(b->why), "the provider names no boundary process (it has no boundary "
                 "operation): the host cannot look at the sandbox from outside");
        return;
    }
    b->present = true;
    if (strcmp(status, "reported") != 0) {
        snprintf(b->why, sizeof(b->why), "%.300s",
                 get_str(b->view, "error") != NULL ? get_str(b->view, "error") : "the boundary was not reported");
        return;
    }
    b->procs = get(b->view, "processes");
    get_num(get(host, "ns"), "mnt", &host_mnt);
    get_num(get(host, "pid1_ns"), "mnt", &pid1_mnt);
    get_num(get(host, "self"), "pid", &self);
    cJSON_ArrayForEach(p, b->procs) {
        double pid = 0, mnt = -1;
        const char *state = get_str(p, "state");

        if (get_bool(p, "boundary") != 1)
            continue;
        boundaries++;
        get_num(p, "pid", &pid);
        if (get_bool(p, "readable") != 1) {
            snprintf(b->why, sizeof(b->why), "pid %.0f: %.200s", pid,
                     get_str(p, "error") != NULL ? get_str(p, "error") : "not read");
            return;
        }
        if (pid <= 1 || pid == self || num_in(get(get(host, "self"), "ancestors"), pid)) {
            snprintf(b->why, sizeof(b->why), "pid %.0f is the host's init, the host itself or one of its "
                     "ancestors, never a sandbox", pid);
            return;
        }
        if (state != NULL && (strcmp(state, "Z") == 0 || strcmp(state, "X") == 0)) {
            snprintf(b->why, sizeof(b->why), "pid %.0f has exited (state %s)", pid, state);
            return;
        }
        if (!get_num(get(p, "ns"), "mnt", &mnt) || mnt == host_mnt || mnt == pid1_mnt) {
            snprintf(b->why, sizeof(b->why), "pid %.0f (%.60s) is in the host's own mount namespace: it is not "
                     "inside a sandbox", pid, proc_name(p));
            return;
        }
        if (kind == KIND_NAMESPACES && !tie_namespaces(b, p, report))
            return;
        if (kind == KIND_GVISOR && !tie_gvisor(b, p, report))
            return;
    }
    if (boundaries == 0) {
        snprintf(b->why, sizeof(b->why), "the provider's boundary names no process");
        return;
    }
    if (get_bool(b->view, "truncated") == 1) {
        snprintf(b->why, sizeof(b->why), "the boundary has more than %d processes below it: the host did not "
                 "see them all", CORDON__BOUNDARY_PROCS_MAX);
        return;
    }
    b->verified = true;
}

static void check_boundary_verified(struct verdict *v, enum axis axis, const struct boundary *b)
{
    const cJSON *p;
    char pids[96] = "";
    size_t used = 0;

    if (!b->verified) {
        add_check(v, axis, "boundary_verified", false, "%s", b->why);
        return;
    }
    cJSON_ArrayForEach(p, b->procs) {
        double pid = 0;
        int w;

        if (get_bool(p, "boundary") != 1 || !get_num(p, "pid", &pid))
            continue;
        w = snprintf(pids + used, sizeof(pids) - used, "%s%.0f", used > 0 ? ", " : "", pid);
        if (w > 0 && used + (size_t)w < sizeof(pids))
            used += (size_t)w;
    }
    add_check(v, axis, "boundary_verified", true, "boundary pid %s is the sandbox the host observed", pids);
}

/*
 * One check over every process of the boundary (the named ones and all
 * that descend from them): test returns false with a reason for the
 * first process that fails. An unverified boundary fails every such
 * check: facts about a process that may not be the sandbox prove nothing.
 */
typedef bool (*proc_test)(const cJSON *p, const cJSON *host, char *why, size_t size);

static void check_each(struct verdict *v, enum axis axis, const char *check, const struct boundary *b,
                       const cJSON *host, proc_test test, const char *all_ok)
{
    const cJSON *p;
    char why[240];
    int n = 0;

    if (!b->verified) {
        add_check(v, axis, check, false, "boundary not verified: %s", b->why);
        return;
    }
    cJSON_ArrayForEach(p, b->procs) {
        double pid = 0;

        get_num(p, "pid", &pid);
        if (get_bool(p, "readable") != 1) {
            add_check(v, axis, check, false, "pid %.0f below the boundary could not be read: %.160s", pid,
                      get_str(p, "error") != NULL ? get_str(p, "error") : "?");
            return;
        }
        if (!test(p, host, why, sizeof(why))) {
            add_check(v, axis, check, false, "pid %.0f (%.60s%s): %s", pid, proc_name(p),
                      get_bool(p, "boundary") == 1 ? ", the boundary" : "", why);
            return;
        }
        n++;
    }
    add_check(v, axis, check, true, "%s (%d host process%s)", all_ok, n, n == 1 ? "" : "es");
}

static bool t_seccomp(const cJSON *p, const cJSON *host, char *why, size_t size)
{
    double mode;

    (void)host;
    if (!get_num(p, "seccomp", &mode))
        snprintf(why, size, "Seccomp not reported");
    else if (mode != 2)
        snprintf(why, size, "Seccomp %.0f, not 2 (filter)", mode);
    else
        return true;
    return false;
}

static bool t_no_new_privs(const cJSON *p, const cJSON *host, char *why, size_t size)
{
    double nnp;

    (void)host;
    if (!get_num(p, "no_new_privs", &nnp))
        snprintf(why, size, "NoNewPrivs not reported");
    else if (nnp != 1)
        snprintf(why, size, "NoNewPrivs %.0f", nnp);
    else
        return true;
    return false;
}

static bool t_uid_not_root(const cJSON *p, const cJSON *host, char *why, size_t size)
{
    const cJSON *uids = get(p, "uids"), *u;
    int n = 0;

    (void)host;
    cJSON_ArrayForEach(u, uids) {
        if (!cJSON_IsNumber(u) || u->valuedouble == 0) {
            snprintf(why, size, "runs as host uid 0 (real, effective, saved or file-system uid)");
            return false;
        }
        n++;
    }
    if (n == 4)
        return true;
    snprintf(why, size, "its uids are not reported");
    return false;
}

static bool hex_zero(const char *hex)
{
    char *end;
    unsigned long long v;

    if (hex == NULL)
        return false;
    errno = 0;
    v = strtoull(hex, &end, 16);
    return errno == 0 && end != hex && *end == '\0' && v == 0;
}

/* True when no line of a uid_map ("inside outside count") maps onto uid 0. */
static bool maps_no_root(const char *map)
{
    unsigned long long in, out, count;
    int used = 0;

    if (map == NULL)
        return false;
    for (const char *line = map; *line != '\0'; line += used) {
        if (sscanf(line, " %llu %llu %llu%n", &in, &out, &count, &used) != 3 || used <= 0)
            break;
        if (out == 0 && count > 0)
            return false;
    }
    return true;
}

/*
 * No capability in the host's user namespace: none held at all, or held
 * only inside a user namespace of its own, a child of the host's whose
 * uid_map maps nothing onto root: such capabilities act on that
 * namespace's own objects (its mounts, its network), never on the host's.
 */
static bool t_caps_not_host(const cJSON *p, const cJSON *host, char *why, size_t size)
{
    const cJSON *caps = get(p, "caps");
    double user = -1, parent = -1, host_user = -2;
    bool none = hex_zero(get_str(caps, "eff")) && hex_zero(get_str(caps, "prm")) &&
                (get_str(caps, "amb") == NULL || hex_zero(get_str(caps, "amb")));

    if (none)
        return true;
    get_num(get(p, "ns"), "user", &user);
    get_num(p, "user_ns_parent", &parent);
    get_num(get(host, "ns"), "user", &host_user);
    if (user >= 0 && user != host_user && parent == host_user && maps_no_root(get_str(p, "uid_map")))
        return true;
    snprintf(why, size, "CapEff %.16s, CapPrm %.16s in %s", get_str(caps, "eff") ? get_str(caps, "eff") : "?",
             get_str(caps, "prm") ? get_str(caps, "prm") : "?",
             user == host_user ? "the host's own user namespace"
             : parent != host_user ? "a user namespace that is not a child of the host's"
                                   : "a user namespace whose uid_map maps a uid onto host root");
    return false;
}

static bool t_ns_differs(const cJSON *p, const cJSON *host, const char *ns, char *why, size_t size)
{
    double mine = -1, theirs = -2;

    if (get_num(get(p, "ns"), ns, &mine) && get_num(get(host, "ns"), ns, &theirs) && mine != theirs)
        return true;
    if (mine < 0)
        snprintf(why, size, "its %s namespace is not known", ns);
    else
        snprintf(why, size, "shares the host's %s namespace (inode %.0f)", ns, mine);
    return false;
}

static bool t_pid_ns(const cJSON *p, const cJSON *host, char *why, size_t size)
{
    bool ok = t_ns_differs(p, host, "pid", why, size);
    size_t len = strlen(why);

    /* What that means: a second layer missing, not a first one broken. */
    if (!ok && strncmp(why, "shares", 6) == 0)
        snprintf(why + len, size - len, ": code that escapes the Sentry could name and signal host processes");
    return ok;
}

static bool t_mnt_ns(const cJSON *p, const cJSON *host, char *why, size_t size)
{
    return t_ns_differs(p, host, "mnt", why, size);
}

/*
 * That the boundary serves its sandbox's system calls, as the host sees
 * the two platforms of gVisor it knows: ptrace (every process below the
 * boundary is traced by one of the boundary's own threads, and there is
 * at least one: the sandbox's code runs in those stubs, and each of its
 * system calls stops in the Sentry) or kvm (the boundary holds a KVM VM
 * and whatever runs below it is traced by it too).
 */
static bool serves_syscalls(const struct boundary *b, char *why, size_t size)
{
    const cJSON *bp, *p;

    if (!b->verified) {
        snprintf(why, size, "boundary not verified: %s", b->why);
        return false;
    }
    cJSON_ArrayForEach(bp, b->procs) {
        double root = 0, below = 0;
        bool kvm = get_bool(bp, "kvm_vm_fd") == 1;

        if (get_bool(bp, "boundary") != 1 || !get_num(bp, "pid", &root))
            continue;
        cJSON_ArrayForEach(p, b->procs) {
            double r = 0, pid = 0, tracer = -1;

            if (get_bool(p, "boundary") == 1 || !get_num(p, "root", &r) || r != root)
                continue;
            get_num(p, "pid", &pid);
            get_num(p, "tracer", &tracer);
            if (tracer <= 0 || !num_in(get(bp, "tasks"), tracer)) {
                snprintf(why, size, "pid %.0f (%.60s) below the boundary pid %.0f is %s: its system calls do "
                         "not stop in the boundary", pid, proc_name(p), root,
                         tracer > 0 ? "traced by a process outside the boundary" : "not traced");
                return false;
            }
            below++;
        }
        if (below == 0 && !kvm) {
            snprintf(why, size, "the boundary pid %.0f (%.60s) has no traced process below it and no KVM VM: "
                     "the host cannot tell that the sandbox's system calls stop in it (it knows gVisor's ptrace "
                     "and kvm platforms)", root, proc_name(bp));
            return false;
        }
        snprintf(why, size, "%s: %.0f process%s below boundary pid %.0f, each traced by its threads",
                 kvm ? "kvm platform" : "ptrace platform", below, below == 1 ? "" : "es", root);
    }
    return true;
}

/* gVisor: the axes as docs/observation.md defines them for a userspace kernel. */
static void compare_gvisor(struct verdict *v, const cJSON *report, const cJSON *host, const struct boundary *b,
                           const char *evidence)
{
    char why[320];
    bool served = serves_syscalls(b, why, sizeof(why));

    check_canary_pid(v, report, host);
    check_boundary_verified(v, AX_PROCESS, b);
    check_each(v, AX_PROCESS, "boundary_pid_namespace", b, host, t_pid_ns,
               "the boundary and every process below it have a pid namespace of their own");

    check_boundary_verified(v, AX_HOST_FS, b);
    check_each(v, AX_HOST_FS, "boundary_mount_namespace", b, host, t_mnt_ns,
               "the boundary and every process below it have a mount namespace of their own");
    check_canary_file(v, report, host);
    check_writes(v, report);
    check_fds(v, report);
    check_readable_file(v, report, "proc_kcore", "proc_kcore_not_readable", "/proc/kcore");
    check_readable_file(v, report, "sys_firmware", "sys_firmware_not_readable", "/sys/firmware");

    check_privileges(v, report);
    check_boundary_verified(v, AX_PRIVESC, b);
    check_each(v, AX_PRIVESC, "boundary_no_new_privs", b, host, t_no_new_privs,
               "NoNewPrivs 1 on the boundary and every process below it");
    check_each(v, AX_PRIVESC, "boundary_uid_not_root", b, host, t_uid_not_root,
               "no host uid 0 on the boundary or below it");
    check_each(v, AX_PRIVESC, "boundary_caps_not_host", b, host, t_caps_not_host,
               "no capability in the host's user namespace on the boundary or below it");

    add_check(v, AX_SYSCALLS, "userspace_kernel", true, "gVisor's Sentry answered the observer: %s", evidence);
    check_boundary_verified(v, AX_SYSCALLS, b);
    add_check(v, AX_SYSCALLS, "boundary_serves_syscalls", served, "%s", why);
    check_each(v, AX_SYSCALLS, "boundary_seccomp_filter", b, host, t_seccomp,
               "Seccomp 2 (filter) on the boundary and every process below it");
    check_calls(v, report, served);
}

/* "none": only loopback (or nothing), and no socket of a family that
 * reaches past the namespace could be created (a report that does not say
 * is not "none"); "private": its own namespace; else "host". Under gVisor
 * the namespace that counts is the boundary's on the host: the one inside
 * is the Sentry's own. */
static const char *network_mode(const cJSON *report, const cJSON *host, enum kind kind, const struct boundary *b)
{
    const cJSON *ifaces = get(get(report, "net"), "interfaces");
    double mine, theirs;

    if (cJSON_IsArray(ifaces)) {
        const cJSON *i;
        bool only_lo = true;

        cJSON_ArrayForEach(i, ifaces)
            only_lo = only_lo && cJSON_IsString(i) && strcmp(i->valuestring, "lo") == 0;
        for (size_t k = 0; k < COUNT(socket_tries); k++)
            only_lo = only_lo && (!socket_tries[k].way_out ||
                                  socket_created(report, socket_tries[k].name) == 0);
        if (only_lo)
            return "none";
    }
    if (kind == KIND_GVISOR) {
        const cJSON *p;
        bool own = b->verified;

        cJSON_ArrayForEach(p, b->procs)
            own = own && (get_bool(p, "boundary") != 1 ||
                          (get_num(get(p, "ns"), "net", &mine) && get_num(get(host, "ns"), "net", &theirs) &&
                           mine != theirs));
        return own ? "private" : "host";
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
    struct boundary b;
    double version = 0, pid;
    char *text, evidence[320];
    enum kind kind;
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
    kind = kernel_kind(report, host, evidence, sizeof(evidence));
    boundary_verify(&b, kind, report, host);
    if (kind == KIND_GVISOR) {
        compare_gvisor(&v, report, host, &b, evidence);
    } else {
        /* The host's own kernel (and, for the record, another one): the
         * inside view is the kernel's truth about the observer itself. */
        check_ns(&v, AX_PROCESS, "pid_namespace", "pid", report, host);
        check_canary_pid(&v, report, host);
        check_ns(&v, AX_HOST_FS, "mount_namespace", "mnt", report, host);
        check_canary_file(&v, report, host);
        check_writes(&v, report);
        check_fds(&v, report);
        check_readable_file(&v, report, "proc_kcore", "proc_kcore_not_readable", "/proc/kcore");
        check_readable_file(&v, report, "sys_firmware", "sys_firmware_not_readable", "/sys/firmware");
        check_privileges(&v, report);
        check_seccomp(&v, report);
        check_calls(&v, report, false);
        /* A provider that names its boundary must name the sandbox's. */
        for (int a = 0; kind == KIND_NAMESPACES && b.present && a < AX_COUNT; a++)
            check_boundary_verified(&v, (enum axis)a, &b);
        /* Another kernel: its namespace inodes and its /proc say nothing
         * about the host's, and the host has no outside check for it. */
        for (int a = 0; kind == KIND_VM && a < AX_COUNT; a++)
            add_check(&v, (enum axis)a, "mechanism_verifiable", false,
                      "another kernel answered the observer (%s): a virtual machine's guest, as far as the "
                      "host can tell, which it has no way to check from outside", evidence);
    }
    /* Whatever answered: no socket family that reaches outside. */
    check_sockets(&v, report, kind == KIND_GVISOR);
    for (int a = 0; a < AX_COUNT; a++)
        if (!cJSON_AddBoolToObject(iso, axis_names[a], v.axis_ok[a]))
            v.oom = true;
    if (!cJSON_AddStringToObject(iso, "mechanism_kind", kind_names[kind]) ||
        !cJSON_AddStringToObject(iso, "network_mode", network_mode(report, host, kind, &b)) ||
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

/* The observer, opened and checked: a regular file within OBSERVER_MAX_BYTES. */
static int observer_open(const char *observer, int *ret_fd, uint64_t *ret_size, struct cordon_error *err)
{
    struct stat st;
    int fd = open(observer, O_RDONLY | O_CLOEXEC);

    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;

        if (fd >= 0)
            close(fd);
        return cordon_error_set(err, CORDON_E_NOT_FOUND, e, "observe: observer %s: %s", observer, strerror(e));
    }
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > OBSERVER_MAX_BYTES) {
        close(fd);
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "observe: observer %s must be a regular file of at most %u bytes", observer,
                                OBSERVER_MAX_BYTES);
    }
    *ret_fd = fd;
    *ret_size = (uint64_t)st.st_size;
    return 0;
}

/* Exactly size bytes from src to dst: a file that changed length while we
 * read it is refused, not landed half. */
static int copy_exact(int src, int dst, uint64_t size, struct cordon_error *err)
{
    char buf[65536];
    uint64_t done = 0;

    while (done < size) {
        size_t want = size - done < sizeof(buf) ? (size_t)(size - done) : sizeof(buf);
        ssize_t n = read(src, buf, want);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return cordon_error_set(err, CORDON_E_IO, n < 0 ? errno : 0,
                                    "observe: reading the observer stopped at byte %llu of %llu",
                                    (unsigned long long)done, (unsigned long long)size);
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(dst, buf + off, (size_t)(n - off));

            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0)
                return cordon_error_set(err, CORDON_E_IO, errno, "observe: copying the observer failed: %s",
                                        strerror(errno));
            off += w;
        }
        done += (uint64_t)n;
    }
    return 0;
}

static bool has_import_files(const struct cordon_provider_v1 *p)
{
    return p->struct_size >= offsetof(struct cordon_provider_v1, import_files) + sizeof(p->import_files) &&
           p->import_files != NULL;
}

/*
 * Land the observer as one ordinary file, name, at the workspace root:
 * through import_files when the provider has it (the way a bundle's source
 * lands), else as a one-entry tar through import_tar. The bytes are the
 * host's own copy plus OBSERVER_PAD random bytes after its end (the kernel
 * never reads past the ELF's segments), read through a memfd so that what
 * lands is what the host checked, and so that no two landings share a
 * digest a provider could recognise.
 */
static int observer_land_as(const struct cordon_observe_opts *opts, const char *state, const char *name,
                            struct cordon_error *err)
{
    struct cordon_tar_writer *w = NULL;
    struct cordon_error perr;
    char *files = NULL, pad[OBSERVER_PAD + 1];
    uint64_t size = 0;
    int bin_fd = -1, copy = -1, tar = -1, rc;

    cordon_error_init(&perr);
    if ((rc = observer_open(opts->host->observer_path, &bin_fd, &size, err)) < 0)
        return rc;
    copy = memfd_create("cordon-observer", MFD_CLOEXEC);
    if (copy < 0) {
        rc = cordon_error_set(err, CORDON_E_IO, errno, "observe: memfd for the observer failed: %s",
                              strerror(errno));
        goto out;
    }
    if ((rc = copy_exact(bin_fd, copy, size, err)) < 0 || (rc = random_hex(pad, OBSERVER_PAD / 2, err)) < 0)
        goto out;
    if (write(copy, pad, OBSERVER_PAD) != OBSERVER_PAD || lseek(copy, 0, SEEK_SET) != 0) {
        rc = cordon_error_set(err, CORDON_E_IO, errno, "observe: preparing the observer failed: %s",
                              strerror(errno));
        goto out;
    }
    size += OBSERVER_PAD;
    if (has_import_files(opts->provider)) {
        if (asprintf(&files, "{\"files\":[{\"path\":\"%s\",\"size\":%llu,\"mode\":493}]}", name,
                     (unsigned long long)size) < 0) {
            files = NULL;
            rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
            goto out;
        }
        rc = opts->provider->import_files(opts->resource, state, "", files, copy, &perr);
    } else {
        tar = memfd_create("cordon-observer.tar", MFD_CLOEXEC);
        if (tar < 0) {
            rc = cordon_error_set(err, CORDON_E_IO, errno, "observe: memfd for the observer tar failed: %s",
                                  strerror(errno));
            goto out;
        }
        if ((rc = cordon_tar_writer_open(tar, &w, err)) < 0 ||
            (rc = cordon_tar_writer_add_fd(w, name, copy, size, 0755, err)) < 0)
            goto out;
        rc = cordon_tar_writer_close(w, err);
        w = NULL;
        if (rc < 0)
            goto out;
        if (lseek(tar, 0, SEEK_SET) != 0) {
            rc = cordon_error_set(err, CORDON_E_IO, errno, "observe: rewinding the observer tar failed: %s",
                                  strerror(errno));
            goto out;
        }
        rc = opts->provider->import_tar(opts->resource, state, "", tar, &perr);
    }
    if (rc < 0)
        rc = cordon_error_set(err, rc, perr.os_errno, "observe: %s failed: %s",
                              files != NULL ? "import_files" : "import_tar", perr.message);
out:
    cordon_tar_writer_free(w);
    free(files);
    if (tar >= 0)
        close(tar);
    if (copy >= 0)
        close(copy);
    if (bin_fd >= 0)
        close(bin_fd);
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
        !cJSON_AddItemReferenceToObject(result, "host_view", view) ||
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
    char canary_dir[64] = "", canary_path[96], token[33], pid_token[33], exec_hex[25], execution_id[32];
    char ns_arg[512], pid_arg[24], observer_argv0[80];
    cJSON *ns = NULL, *view = NULL, *report = NULL, *toolchains = NULL, *boundary;
    char *spec = NULL, *state = NULL, *result = NULL;
    struct cordon_error perr;
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
        (rc = random_hex(pid_token, 16, err)) < 0 || (rc = random_hex(exec_hex, 12, err)) < 0 ||
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

    /* (c) copy the observer in: under the caller's name as an ordinary
     * file, or as the provider-facing .cordon/cordon-observe. */
    if (observer_name_of(opts) != NULL) {
        if ((rc = observer_land_as(opts, state, opts->observer_name, err)) < 0)
            goto out;
        snprintf(observer_argv0, sizeof(observer_argv0), "./%s", opts->observer_name);
    } else {
        if ((rc = observer_tar(opts->host->observer_path, &tar_fd, err)) < 0)
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

    /* (e) the boundary from outside, while the execution still lives:
     * the processes the provider names, read from the host's /proc. */
    boundary = cordon__boundary_view(opts->host, opts->provider, opts->resource, state, observer_argv0 + 2,
                                     before_ms, after_ms);
    if (boundary == NULL || !cJSON_AddItemToObject(view, "boundary", boundary)) {
        cJSON_Delete(boundary);
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
        goto out;
    }

    /* (f) toolchain versions, inside the same execution. */
    for (size_t i = 0; i < ntools; i++)
        if ((rc = probe_toolchain(opts, state, tool_idx[i], timeout_ms, toolchains, err)) < 0)
            goto out;

    /* (h) compare; (g) teardown follows below on every path. */
    rc = assemble(report, view, toolchains, &result, err);
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
    cJSON_Delete(report);
    cJSON_Delete(view);
    cJSON_Delete(ns);
    if (rc == 0)
        *ret_json = result;
    else
        free(result);
    return rc;
}
