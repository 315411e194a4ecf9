/*
 * sdk (internal): the pure comparison of what the observer saw inside a
 * sandbox with the host's view of it (sdk/compare.h). No I/O: a function
 * of two JSON documents. docs/observation.md explains every check; this is
 * the code a reviewer reads hardest, so each check says why it holds.
 */
#include <errno.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <cordon/sdk/facts.h>

#include "sdk/boundary.h"
#include "sdk/compare.h"

#define MAX_JSON_BYTES (1024u * 1024u)

enum axis { AX_PROCESS, AX_HOST_FS, AX_PRIVESC, AX_SYSCALLS, AX_COUNT };

static const char *const axis_names[AX_COUNT] = {
    CORDON_AXIS_PROCESS_CONTAINED, CORDON_AXIS_HOST_FS_RESTRICTED,
    CORDON_AXIS_PRIVESC_BLOCKED, CORDON_AXIS_SYSCALLS_RESTRICTED,
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
