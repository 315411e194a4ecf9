/*
 * core (internal): the pure comparison of what the observer saw inside a
 * sandbox with the host's view of it (core/observe/compare.h). No I/O: a function
 * of two JSON documents. docs/observation.md explains every check; this is
 * the code a reviewer reads hardest, so each check says why it holds.
 * Which kernel answered and the boundary seen from outside are judged in
 * core/observe/compare-boundary.c (what the two share: core/observe/compare-internal.h).
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

#include "sdk/json-internal.h"
#include "core/observe/compare.h"
#include "core/observe/compare-internal.h"

#define MAX_JSON_BYTES (1024u * 1024u)

static const char *const axis_names[CORDON__AX_COUNT] = {
    CORDON_AXIS_PROCESS_CONTAINED, CORDON_AXIS_HOST_FS_RESTRICTED,
    CORDON_AXIS_PRIVESC_BLOCKED, CORDON_AXIS_SYSCALLS_RESTRICTED,
};

/* The names of enum cordon__kind, in its order. */
static const char *const kind_names[] = { "namespaces", "gvisor", "vm" };

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- comparison ----------------------------------------------------------- */

void cordon__compare_add_check(struct cordon__verdict *v, enum cordon__axis axis, const char *name, bool ok,
                               const char *fmt, ...)
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

const cJSON *cordon__compare_get(const cJSON *obj, const char *key)
{
    return cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
}

/* -1 when key is missing or not a boolean, else 0 or 1. */
int cordon__compare_get_bool(const cJSON *obj, const char *key)
{
    const cJSON *item = cordon__compare_get(obj, key);

    return cJSON_IsBool(item) ? cJSON_IsTrue(item) : -1;
}

bool cordon__compare_get_num(const cJSON *obj, const char *key, double *ret)
{
    const cJSON *item = cordon__compare_get(obj, key);

    if (!cJSON_IsNumber(item))
        return false;
    *ret = item->valuedouble;
    return true;
}

const char *cordon__compare_get_str(const cJSON *obj, const char *key)
{
    const cJSON *item = cordon__compare_get(obj, key);

    return cJSON_IsString(item) ? item->valuestring : NULL;
}

/* The entry of an array of objects whose field key equals value. */
static const cJSON *find_by(const cJSON *arr, const char *key, const char *value)
{
    const cJSON *item;

    if (!cJSON_IsArray(arr))
        return NULL;
    cJSON_ArrayForEach(item, arr) {
        const char *s = cordon__compare_get_str(item, key);

        if (s != NULL && strcmp(s, value) == 0)
            return item;
    }
    return NULL;
}

static void check_ns(struct cordon__verdict *v, enum cordon__axis axis, const char *check, const char *ns,
                     const cJSON *report, const cJSON *host)
{
    double mine, theirs;

    if (!cordon__compare_get_num(cordon__compare_get(report, "ns"), ns, &mine) ||
        !cordon__compare_get_num(cordon__compare_get(host, "ns"), ns, &theirs)) {
        cordon__compare_add_check(v, axis, check, false, "not reported");
        return;
    }
    cordon__compare_add_check(v, axis, check, mine != theirs, "%s namespace inode %.0f inside, %.0f on the host%s", ns,
                              mine, theirs, mine != theirs ? "" : ": the sandbox shares the host's namespace");
}

/* The canary process's checks; the pid namespace is the caller's, since
 * what a namespace inode means depends on the kernel that answered. */
static void check_canary_pid(struct cordon__verdict *v, const cJSON *report, const cJSON *host)
{
    const cJSON *hp = cordon__compare_get(report, "host_pid");
    double pid = 0, want = -1;
    int visible, signalable;

    /* The observer must have looked at the pid the host named. */
    if (!cordon__compare_get_num(hp, "pid", &pid) || !cordon__compare_get_num(host, "host_pid", &want) || pid != want) {
        cordon__compare_add_check(v, CORDON__AX_PROCESS, "canary_pid_not_visible", false, "not reported");
        cordon__compare_add_check(v, CORDON__AX_PROCESS, "canary_pid_not_signalable", false, "not reported");
        return;
    }
    visible = cordon__compare_get_bool(hp, "visible");
    signalable = cordon__compare_get_bool(hp, "signalable");
    if (visible < 0)
        cordon__compare_add_check(v, CORDON__AX_PROCESS, "canary_pid_not_visible", false, "not reported");
    else
        cordon__compare_add_check(v, CORDON__AX_PROCESS, "canary_pid_not_visible", visible == 0,
                                  visible ? "/proc/%.0f/cmdline shows the host's canary process" :
                            "the host's canary process (pid %.0f) is not visible", pid);
    if (signalable < 0)
        cordon__compare_add_check(v, CORDON__AX_PROCESS, "canary_pid_not_signalable", false, "not reported");
    else
        cordon__compare_add_check(v, CORDON__AX_PROCESS, "canary_pid_not_signalable", signalable == 0,
                                  signalable ? "kill(%.0f, 0) reached the host's canary process" :
                               "kill(%.0f, 0) cannot reach the host's canary process", pid);
}

/*
 * What code inside reaches of the processes it did not start (the
 * observer's "reach"). PID 1 runs as the sandbox's uid; if the observer
 * can set its limits (it writes back the values it read), so can any
 * code inside, and a PID 1 with no room for pending signals or
 * descriptors ends or stops serving: pid1_limits_unreachable. Anything
 * running that is neither PID 1 nor under this exec (an image's health
 * check, a daemon the image or an earlier exec left) is code the host did
 * not ask to run: no_foreign_processes, which needs the observer to have
 * read the whole table.
 */
static void check_reach(struct cordon__verdict *v, const cJSON *report)
{
    const cJSON *reach = cordon__compare_get(report, "reach"), *others, *o;
    const cJSON *pid1 = cordon__compare_get(reach, "pid1");
    int self = cordon__compare_get_bool(pid1, "self"), ok = cordon__compare_get_bool(pid1, "set_ok");
    int complete = cordon__compare_get_bool(reach, "complete");
    double count = -1, errno_v = 0;
    char list[200] = "";

    cordon__compare_get_num(pid1, "errno", &errno_v);
    if (self < 0 || ok < 0)
        cordon__compare_add_check(v, CORDON__AX_PROCESS, "pid1_limits_unreachable", false, "not reported");
    else
        cordon__compare_add_check(v, CORDON__AX_PROCESS, "pid1_limits_unreachable", ok == 0,
                                  ok ? "prlimit(1) set PID 1's RLIMIT_NOFILE (to the value it had): code "
                                       "inside can change PID 1's limits" :
                                  self ? "the observer is PID 1" :
                                         "prlimit(1) could not set PID 1's limits (errno %.0f)", errno_v);
    others = cordon__compare_get(reach, "others");
    if (complete < 0 || !cordon__compare_get_num(reach, "others_count", &count) || !cJSON_IsArray(others)) {
        cordon__compare_add_check(v, CORDON__AX_PROCESS, "no_foreign_processes", false, "not reported");
        return;
    }
    cJSON_ArrayForEach(o, others) {
        double pid = 0;
        const char *comm = cordon__compare_get_str(o, "comm");
        size_t len = strlen(list);

        cordon__compare_get_num(o, "pid", &pid);
        if (len + 40 < sizeof(list))
            snprintf(list + len, sizeof(list) - len, "%s%.0f (%.16s)", len > 0 ? ", " : "", pid,
                     comm != NULL ? comm : "?");
    }
    if (count != 0)
        cordon__compare_add_check(v, CORDON__AX_PROCESS, "no_foreign_processes", false,
                                  "%.0f processes run that neither are PID 1 nor were started by this "
                                  "exec: %s", count, list);
    else
        cordon__compare_add_check(v, CORDON__AX_PROCESS, "no_foreign_processes", complete == 1, "%s",
                                  complete == 1 ? "nothing runs but PID 1 and this exec's tree" :
                                                  "the process table was too large to read whole");
}

static void check_canary_file(struct cordon__verdict *v, const cJSON *report, const cJSON *host)
{
    const cJSON *cf = cordon__compare_get(report, "canary_file");
    const char *path = cordon__compare_get_str(cf, "path"), *want = cordon__compare_get_str(host, "canary_path");
    int exists = cordon__compare_get_bool(cf, "exists"), readable = cordon__compare_get_bool(cf, "readable");

    if (path == NULL || want == NULL || strcmp(path, want) != 0)
        exists = readable = -1;
    if (exists < 0)
        cordon__compare_add_check(v, CORDON__AX_HOST_FS, "canary_file_not_visible", false, "not reported");
    else
        cordon__compare_add_check(v, CORDON__AX_HOST_FS, "canary_file_not_visible", exists == 0,
                                  exists ? "the host's canary file %s exists inside" : "%s does not exist inside",
                                  want);
    if (readable < 0)
        cordon__compare_add_check(v, CORDON__AX_HOST_FS, "canary_file_not_readable", false, "not reported");
    else
        cordon__compare_add_check(v, CORDON__AX_HOST_FS, "canary_file_not_readable", readable == 0,
                                  readable ? "the host's canary file %s is readable inside%s"
                                           : "%s cannot be read inside%s",
                                  want, readable && cordon__compare_get_bool(cf, "content_matches") == 1
                                            ? " and holds the host's token" : "");
}

static void check_writes(struct cordon__verdict *v, const cJSON *report)
{
    static const char *const rootfs[] = { "/etc", "/usr", "/bin" };
    const cJSON *writes = cordon__compare_get(report, "writes");
    const cJSON *root = find_by(writes, "path", "/");
    char writable[64] = "";
    bool reported = true;
    int w = cordon__compare_get_bool(root, "writable");

    if (w < 0)
        cordon__compare_add_check(v, CORDON__AX_HOST_FS, "root_not_writable", false, "not reported");
    else
        cordon__compare_add_check(v, CORDON__AX_HOST_FS, "root_not_writable", w == 0,
                                  w ? "a new file could be created in /" : "creating a file in / failed");
    for (size_t i = 0; i < COUNT(rootfs); i++) {
        int ok = cordon__compare_get_bool(find_by(writes, "path", rootfs[i]), "writable");

        if (ok < 0)
            reported = false;
        else if (ok == 1) {
            strcat(writable, writable[0] != '\0' ? ", " : "");
            strcat(writable, rootfs[i]);
        }
    }
    if (!reported)
        cordon__compare_add_check(v, CORDON__AX_HOST_FS, "rootfs_not_writable", false, "not reported");
    else
        cordon__compare_add_check(v, CORDON__AX_HOST_FS, "rootfs_not_writable", writable[0] == '\0',
                                  writable[0] != '\0' ? "new files could be created in %s" :
                                        "creating files in /etc, /usr and /bin failed%s", writable);
}

static void check_fds(struct cordon__verdict *v, const cJSON *report)
{
    const cJSON *fds = cordon__compare_get(report, "fds");
    const cJSON *fd;
    char list[256] = "";
    size_t used = 0;
    int n = 0;

    if (!cJSON_IsArray(fds)) {
        cordon__compare_add_check(v, CORDON__AX_HOST_FS, "no_inherited_fds", false, "not reported");
        return;
    }
    cJSON_ArrayForEach(fd, fds) {
        double num = -1;
        const char *target = cordon__compare_get_str(fd, "target");
        int w;

        cordon__compare_get_num(fd, "fd", &num);
        w = snprintf(list + used, sizeof(list) - used, "%sfd %.0f -> %s", n > 0 ? ", " : "", num,
                     target != NULL ? target : "?");
        if (w > 0)
            used = used + (size_t)w < sizeof(list) ? used + (size_t)w : sizeof(list) - 1;
        n++;
    }
    cordon__compare_add_check(v, CORDON__AX_HOST_FS, "no_inherited_fds", n == 0,
                              n == 0 ? "only stdin, stdout and stderr are open%s" : "inherited beyond stdio: %s", list);
}

static void check_readable_file(struct cordon__verdict *v, const cJSON *report, const char *key, const char *check,
                                const char *path)
{
    int r = cordon__compare_get_bool(cordon__compare_get(cordon__compare_get(report, "files"), key), "readable");

    if (r < 0)
        cordon__compare_add_check(v, CORDON__AX_HOST_FS, check, false, "not reported");
    else
        cordon__compare_add_check(v, CORDON__AX_HOST_FS, check, r == 0, "%s is %sreadable inside", path,
                                  r ? "" : "not ");
}

static void check_cap(struct cordon__verdict *v, const cJSON *status, const char *field, const char *check)
{
    const char *hex = cordon__compare_get_str(status, field);
    char *end;
    unsigned long long caps;

    if (hex == NULL) {
        cordon__compare_add_check(v, CORDON__AX_PRIVESC, check, false, "not reported");
        return;
    }
    errno = 0;
    caps = strtoull(hex, &end, 16);
    if (errno != 0 || end == hex || *end != '\0') {
        cordon__compare_add_check(v, CORDON__AX_PRIVESC, check, false, "not reported (%s is \"%.32s\")", field, hex);
        return;
    }
    cordon__compare_add_check(v, CORDON__AX_PRIVESC, check, caps == 0, "%s %s", field, hex);
}

/*
 * The uid that acts on the host's files when the sandbox's euid does: euid
 * mapped through the sandbox's own uid_map (lines "inside outside count").
 * A euid no line covers is the overflow uid, never root.
 */
static void check_uid_map(struct cordon__verdict *v, const cJSON *report, double euid)
{
    const char *map = cordon__compare_get_str(cordon__compare_get(report, "ids"), "uid_map");
    unsigned long long in, out, count, mapped = 0;
    bool covered = false;
    int used = 0;

    if (map == NULL) {
        cordon__compare_add_check(v, CORDON__AX_PRIVESC, "uid_not_host_root", false, "not reported");
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
        cordon__compare_add_check(v, CORDON__AX_PRIVESC, "uid_not_host_root", true,
                                  "effective uid %.0f has no mapping in the sandbox's uid_map (overflow uid)", euid);
    else
        cordon__compare_add_check(v, CORDON__AX_PRIVESC, "uid_not_host_root", mapped != 0,
                                  "effective uid %.0f is uid %llu outside the sandbox's user namespace", euid, mapped);
}

static void check_privileges(struct cordon__verdict *v, const cJSON *report)
{
    const cJSON *status = cordon__compare_get(report, "status");
    double euid, nnp;

    if (!cordon__compare_get_num(cordon__compare_get(report, "ids"), "euid", &euid)) {
        cordon__compare_add_check(v, CORDON__AX_PRIVESC, "euid_not_root", false, "not reported");
        cordon__compare_add_check(v, CORDON__AX_PRIVESC, "uid_not_host_root", false, "not reported");
    } else {
        cordon__compare_add_check(v, CORDON__AX_PRIVESC, "euid_not_root", euid != 0, "effective uid %.0f", euid);
        check_uid_map(v, report, euid);
    }
    /* A kernel whose status has no NoNewPrivs line (gVisor's) still
     * answers prctl(PR_GET_NO_NEW_PRIVS). */
    if (cordon__compare_get_num(status, "NoNewPrivs", &nnp))
        cordon__compare_add_check(v, CORDON__AX_PRIVESC, "no_new_privs", nnp == 1, "NoNewPrivs %.0f", nnp);
    else if (cordon__compare_get_num(cordon__compare_get(report, "prctl"), "no_new_privs", &nnp))
        cordon__compare_add_check(v, CORDON__AX_PRIVESC, "no_new_privs", nnp == 1,
                                  "PR_GET_NO_NEW_PRIVS %.0f (no NoNewPrivs line)", nnp);
    else
        cordon__compare_add_check(v, CORDON__AX_PRIVESC, "no_new_privs", false, "not reported");
    check_cap(v, status, "CapEff", "cap_effective_empty");
    check_cap(v, status, "CapPrm", "cap_permitted_empty");
    /* With an empty bounding set even a setuid-root binary gains nothing. */
    check_cap(v, status, "CapBnd", "cap_bounding_empty");
    if (cordon__compare_get_str(status, "CapAmb") != NULL ||
        cordon__compare_get_str(cordon__compare_get(report, "prctl"), "ambient") == NULL)
        check_cap(v, status, "CapAmb", "cap_ambient_empty");
    else if (strcmp(cordon__compare_get_str(cordon__compare_get(report, "prctl"), "ambient"), "unsupported") == 0)
        cordon__compare_add_check(v, CORDON__AX_PRIVESC, "cap_ambient_empty", true,
                                  "the kernel has no ambient capabilities (PR_CAP_AMBIENT answers EINVAL; "
                                  "no CapAmb line)");
    else
        check_cap(v, cordon__compare_get(report, "prctl"), "ambient", "cap_ambient_empty");
}

static void check_seccomp(struct cordon__verdict *v, const cJSON *report)
{
    double mode;

    if (!cordon__compare_get_num(cordon__compare_get(report, "status"), "Seccomp", &mode))
        cordon__compare_add_check(v, CORDON__AX_SYSCALLS, "seccomp_filter", false, "not reported");
    else
        cordon__compare_add_check(v, CORDON__AX_SYSCALLS, "seccomp_filter", mode == 2, "Seccomp mode %.0f%s", mode,
                                  mode == 2 ? " (filter)" : ", not 2 (filter)");
}

/*
 * The calls behind a steady stream of kernel privilege escalations, and
 * the file lease. served: the host saw from outside that a userspace
 * kernel serves the sandbox's system calls, so that the first five never
 * reach the host's kernel whatever they answered inside; a lease must be
 * refused all the same (it stalls the host's own reads, wherever granted).
 */
static void check_calls(struct cordon__verdict *v, const cJSON *report, bool served)
{
    static const char *const calls[] = { "keyctl", "bpf", "mount", "unshare_user", "io_uring_setup",
                                         "file_lease" };
    const cJSON *syscalls = cordon__compare_get(report, "syscalls");

    for (size_t i = 0; i < COUNT(calls); i++) {
        const cJSON *s = find_by(syscalls, "name", calls[i]);
        const char *result = cordon__compare_get_str(s, "result"), *ename = cordon__compare_get_str(s, "errno_name");
        bool kernel_call = strcmp(calls[i], "file_lease") != 0;
        char check[64];

        snprintf(check, sizeof(check), "%s_refused", calls[i]);
        if (ename == NULL)
            ename = "no errno";
        if (result == NULL)
            cordon__compare_add_check(v, CORDON__AX_SYSCALLS, check, false, "not reported");
        else if (strcmp(result, "refused") == 0)
            cordon__compare_add_check(v, CORDON__AX_SYSCALLS, check, true, "%s was refused (%s)", calls[i], ename);
        else if (served && kernel_call && (strcmp(result, "ok") == 0 || strcmp(result, "reachable") == 0))
            cordon__compare_add_check(v, CORDON__AX_SYSCALLS, check, true,
                                      "%s %s inside gVisor's Sentry (%s): its own implementation answered, the host's "
                                      "kernel never saw the call",
                                      calls[i], strcmp(result, "ok") == 0 ? "succeeded" : "was heard", ename);
        else if (strcmp(result, "ok") == 0)
            cordon__compare_add_check(v, CORDON__AX_SYSCALLS, check, false, "%s succeeded", calls[i]);
        else if (strcmp(result, "reachable") == 0)
            cordon__compare_add_check(v, CORDON__AX_SYSCALLS, check, false,
                                      "%s reached the kernel's own argument checks (%s): nothing refused it", calls[i],
                                      ename);
        else
            cordon__compare_add_check(v, CORDON__AX_SYSCALLS, check, false, "%s could not be tried (%s)", calls[i],
                                      ename);
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
    return cordon__compare_get_bool(find_by(cordon__compare_get(report, "sockets"), "name", name), "created");
}

/* sentry: gVisor's Sentry answered, whose netlink uevent socket is its
 * own and hears nothing of the host: only the families that reach outside
 * count there. */
static void check_sockets(struct cordon__verdict *v, const cJSON *report, bool sentry)
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
        cordon__compare_add_check(v, CORDON__AX_SYSCALLS, "socket_families_refused", false, "not reported");
    else
        cordon__compare_add_check(v, CORDON__AX_SYSCALLS, "socket_families_refused", created[0] == '\0',
                                  created[0] != '\0' ? "sockets were created: %s" :
                                        "no vsock, packet, xdp, bluetooth, can, nfc, qipcrtr, rds or "
                                        "netlink uevent socket could be created%s", created);
}

/* gVisor: the axes as docs/observation.md defines them for a userspace kernel. */
static void compare_gvisor(struct cordon__verdict *v, const cJSON *report, const cJSON *host,
                           const struct cordon__boundary *b, const char *evidence)
{
    char why[320];
    bool served = cordon__compare_serves_syscalls(b, why, sizeof(why));

    check_canary_pid(v, report, host);
    check_reach(v, report);
    cordon__compare_check_boundary_verified(v, CORDON__AX_PROCESS, b);
    cordon__compare_check_each(v, CORDON__AX_PROCESS, "boundary_pid_namespace", b, host, cordon__compare_t_pid_ns,
                               "the boundary and every process below it have a pid namespace of their own");

    cordon__compare_check_boundary_verified(v, CORDON__AX_HOST_FS, b);
    cordon__compare_check_each(v, CORDON__AX_HOST_FS, "boundary_mount_namespace", b, host, cordon__compare_t_mnt_ns,
                               "the boundary and every process below it have a mount namespace of their own");
    check_canary_file(v, report, host);
    check_writes(v, report);
    check_fds(v, report);
    check_readable_file(v, report, "proc_kcore", "proc_kcore_not_readable", "/proc/kcore");
    check_readable_file(v, report, "sys_firmware", "sys_firmware_not_readable", "/sys/firmware");

    check_privileges(v, report);
    cordon__compare_check_boundary_verified(v, CORDON__AX_PRIVESC, b);
    cordon__compare_check_each(v, CORDON__AX_PRIVESC, "boundary_no_new_privs", b, host, cordon__compare_t_no_new_privs,
                               "NoNewPrivs 1 on the boundary and every process below it");
    cordon__compare_check_each(v, CORDON__AX_PRIVESC, "boundary_uid_not_root", b, host, cordon__compare_t_uid_not_root,
                               "no host uid 0 on the boundary or below it");
    cordon__compare_check_each(v, CORDON__AX_PRIVESC, "boundary_caps_not_host", b, host,
                               cordon__compare_t_caps_not_host,
                               "no capability in the host's user namespace on the boundary or below it");

    cordon__compare_add_check(v, CORDON__AX_SYSCALLS, "userspace_kernel", true,
                              "gVisor's Sentry answered the observer: %s", evidence);
    cordon__compare_check_boundary_verified(v, CORDON__AX_SYSCALLS, b);
    cordon__compare_add_check(v, CORDON__AX_SYSCALLS, "boundary_serves_syscalls", served, "%s", why);
    cordon__compare_check_each(v, CORDON__AX_SYSCALLS, "boundary_seccomp_filter", b, host, cordon__compare_t_seccomp,
                               "Seccomp 2 (filter) on the boundary and every process below it");
    check_calls(v, report, served);
}

/* "none": only loopback (or nothing), and no socket of a family that
 * reaches past the namespace could be created (a report that does not say
 * is not "none"); "private": its own namespace; else "host". Under gVisor
 * the namespace that counts is the boundary's on the host: the one inside
 * is the Sentry's own. */
static const char *network_mode(const cJSON *report, const cJSON *host, enum cordon__kind kind,
                                const struct cordon__boundary *b)
{
    const cJSON *ifaces = cordon__compare_get(cordon__compare_get(report, "net"), "interfaces");
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
    if (kind == CORDON__KIND_GVISOR) {
        const cJSON *p;
        bool own = b->verified;

        cJSON_ArrayForEach(p, b->procs)
            own = own && (cordon__compare_get_bool(p, "boundary") != 1 ||
                          (cordon__compare_get_num(cordon__compare_get(p, "ns"), "net", &mine) &&
                           cordon__compare_get_num(cordon__compare_get(host, "ns"), "net", &theirs) &&
                           mine != theirs));
        return own ? "private" : "host";
    }
    if (cordon__compare_get_num(cordon__compare_get(report, "ns"), "net", &mine) &&
        cordon__compare_get_num(cordon__compare_get(host, "ns"), "net", &theirs) && mine != theirs)
        return "private";
    return "host";
}

static int parse_object(const char *json, const char *what, cJSON **ret, struct cordon_error *err)
{
    char field[64];
    cJSON *obj = NULL;
    int r;

    if (json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "observe: %s is required", what);
    /* The sandbox's report and the host's view: the one bounded parse
     * (size and depth); a bound broken is named as such. */
    snprintf(field, sizeof(field), "observe: %s", what);
    r = cordon__json_parse(field, json, MAX_JSON_BYTES, &obj, err);
    if (r == CORDON_E_LIMIT)
        return r;
    if (!cJSON_IsObject(obj)) {
        cJSON_Delete(obj);
        return cordon_error_set(err, CORDON_E_INVALID, 0, "observe: %s is not a JSON object", what);
    }
    *ret = obj;
    return 0;
}

int cordon__observe_compare(const char *report_json, const char *host_view_json, char **ret_isolation_json,
                           struct cordon_error *err)
{
    cJSON *report = NULL, *host = NULL, *iso = NULL;
    struct cordon__verdict v = { .checks = NULL };
    struct cordon__boundary b;
    double version = 0, pid;
    char *text, evidence[320];
    enum cordon__kind kind;
    int rc;

    if (ret_isolation_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "observe: ret_isolation_json is required");
    if ((rc = parse_object(report_json, "report", &report, err)) < 0 ||
        (rc = parse_object(host_view_json, "host view", &host, err)) < 0)
        goto out;
    if (!cordon__compare_get_num(report, "report_version", &version) || version != 1) {
        rc = cordon_error_set(err, CORDON_E_INVALID, 0,
                              "observe: report_version %.0f is not supported (want 1)", version);
        goto out;
    }
    if (!cJSON_IsObject(cordon__compare_get(host, "ns")) || cordon__compare_get_str(host, "canary_path") == NULL ||
        !cordon__compare_get_num(host, "host_pid", &pid)) {
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
    for (int a = 0; a < CORDON__AX_COUNT; a++)
        v.axis_ok[a] = true;
    kind = cordon__compare_kernel_kind(report, host, evidence, sizeof(evidence));
    cordon__compare_boundary_verify(&b, kind, report, host);
    if (kind == CORDON__KIND_GVISOR) {
        compare_gvisor(&v, report, host, &b, evidence);
    } else {
        /* The host's own kernel (and, for the record, another one): the
         * inside view is the kernel's truth about the observer itself. */
        check_ns(&v, CORDON__AX_PROCESS, "pid_namespace", "pid", report, host);
        check_canary_pid(&v, report, host);
        check_reach(&v, report);
        check_ns(&v, CORDON__AX_HOST_FS, "mount_namespace", "mnt", report, host);
        check_canary_file(&v, report, host);
        check_writes(&v, report);
        check_fds(&v, report);
        check_readable_file(&v, report, "proc_kcore", "proc_kcore_not_readable", "/proc/kcore");
        check_readable_file(&v, report, "sys_firmware", "sys_firmware_not_readable", "/sys/firmware");
        check_privileges(&v, report);
        check_seccomp(&v, report);
        check_calls(&v, report, false);
        /* A provider that names its boundary must name the sandbox's. */
        for (int a = 0; kind == CORDON__KIND_NAMESPACES && b.present && a < CORDON__AX_COUNT; a++)
            cordon__compare_check_boundary_verified(&v, (enum cordon__axis)a, &b);
        /* Another kernel: its namespace inodes and its /proc say nothing
         * about the host's, and the host has no outside check for it. */
        for (int a = 0; kind == CORDON__KIND_VM && a < CORDON__AX_COUNT; a++)
            cordon__compare_add_check(&v, (enum cordon__axis)a, "mechanism_verifiable", false,
                                      "another kernel answered the observer (%s): a virtual machine's guest, "
                                      "as far as the host can tell, which it has no way to check from outside",
                                      evidence);
    }
    /* Whatever answered: no socket family that reaches outside. */
    check_sockets(&v, report, kind == CORDON__KIND_GVISOR);
    for (int a = 0; a < CORDON__AX_COUNT; a++)
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
