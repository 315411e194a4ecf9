/*
 * core (internal): the comparison's look from outside (core/observe/compare-internal.h):
 * which kernel answered the observer, whether the pids a provider names as
 * its boundary are the sandbox the host observed, and the tests every
 * process of that boundary must pass. Like core/observe/compare.c, no I/O: the
 * host read /proc (core/observe/boundary.c) and this judges what it read; each
 * check says why it holds.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/observe/boundary.h"
#include "core/observe/compare-internal.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

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
enum cordon__kind cordon__compare_kernel_kind(const cJSON *report, const cJSON *host, char *evidence, size_t size)
{
    const cJSON *k = cordon__compare_get(report, "kernel");
    const char *mine = cordon__compare_get_str(k, "boot_id"), *theirs = cordon__compare_get_str(host, "boot_id");
    const char *klog = cordon__compare_get_str(k, "klog_first");

    snprintf(evidence, size, "no kernel facts reported");
    if (!cJSON_IsObject(k))
        return CORDON__KIND_NAMESPACES;
    if (mine != NULL && theirs != NULL && strcmp(mine, theirs) == 0) {
        snprintf(evidence, size, "boot_id %.40s is the host's own", mine);
        return CORDON__KIND_NAMESPACES;
    }
    if (gvisor_klog(klog)) {
        snprintf(evidence, size, "the kernel log begins \"%.60s\", boot_id %.40s (the host's is %.40s), "
                 "release %.40s", klog, mine != NULL ? mine : "unreadable", theirs != NULL ? theirs : "unknown",
                 cordon__compare_get_str(k, "release") != NULL ? cordon__compare_get_str(k, "release") : "?");
        return CORDON__KIND_GVISOR;
    }
    if (mine != NULL && theirs != NULL) {
        snprintf(evidence, size, "boot_id %.40s is not the host's %.40s and the kernel log is not gVisor's "
                 "(release %.40s, hypervisor %.16s)", mine, theirs,
                 cordon__compare_get_str(k, "release") != NULL ? cordon__compare_get_str(k, "release") : "?",
                 cordon__compare_get_str(k, "hypervisor") != NULL ? cordon__compare_get_str(k, "hypervisor") : "none");
        return CORDON__KIND_VM;
    }
    snprintf(evidence, size, "no boot_id to compare and no gVisor kernel log: taken for the host's kernel");
    return CORDON__KIND_NAMESPACES;
}

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
    const char *exe = cordon__compare_get_str(p, "exe"), *name = cordon__compare_get_str(p, "name");

    return exe != NULL ? exe : name != NULL ? name : "?";
}

/* A boundary pid tied to the observer's own namespaces: the observer ran
 * in the same pid, mount, ... namespaces as the process the provider
 * named, each that both sides could read. */
static bool tie_namespaces(struct cordon__boundary *b, const cJSON *p, const cJSON *report)
{
    static const char *const names[] = { "pid", "mnt", "net", "ipc", "uts", "cgroup", "user" };
    double pid = 0, mine, theirs;

    cordon__compare_get_num(p, "pid", &pid);
    for (size_t i = 0; i < COUNT(names); i++) {
        bool have_mine = cordon__compare_get_num(cordon__compare_get(report, "ns"), names[i], &mine);
        bool have_theirs = cordon__compare_get_num(cordon__compare_get(p, "ns"), names[i], &theirs);

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
static bool tie_gvisor(struct cordon__boundary *b, const cJSON *p, const cJSON *report)
{
    const cJSON *win = cordon__compare_get(b->view, "window_ms");
    double pid = 0, up, start, before, after;

    cordon__compare_get_num(p, "pid", &pid);
    if (!cordon__compare_get_num(cordon__compare_get(report, "kernel"), "uptime_ms", &up) ||
        !cordon__compare_get_num(p, "starttime_ms", &start) || !cordon__compare_get_num(win, "before", &before) ||
        !cordon__compare_get_num(win, "after", &after)) {
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
    if (cordon__compare_get_str(b->view, "observer") != NULL && cordon__compare_get_str(p, "observer_fd") == NULL) {
        snprintf(b->why, sizeof(b->why),
                 "pid %.0f (%.60s) holds no fd on the observer's file %.40s: it is "
                 "not the Sentry that ran the observer",
                 pid, proc_name(p), cordon__compare_get_str(b->view, "observer"));
        return false;
    }
    return true;
}

/* Whether the pids the provider named are plausibly the sandbox's: real,
 * not the host or its ancestors, in a mount namespace that is neither the
 * host's nor pid 1's, and tied to what the observer saw. */
void cordon__compare_boundary_verify(struct cordon__boundary *b, enum cordon__kind kind, const cJSON *report,
                                     const cJSON *host)
{
    const char *status;
    const cJSON *p;
    double host_mnt = -1, pid1_mnt = -1, self = -1;
    int boundaries = 0;

    memset(b, 0, sizeof(*b));
    b->view = cordon__compare_get(host, "boundary");
    status = cordon__compare_get_str(b->view, "status");
    if (status == NULL || strcmp(status, "unsupported") == 0) {
        snprintf(b->why, sizeof(b->why), "the provider names no boundary process (it has no boundary "
                 "operation): the host cannot look at the sandbox from outside");
        return;
    }
    b->present = true;
    if (strcmp(status, "reported") != 0) {
        snprintf(b->why, sizeof(b->why), "%.300s",
                 cordon__compare_get_str(b->view, "error") != NULL ? cordon__compare_get_str(b->view, "error")
                                                                   : "the boundary was not reported");
        return;
    }
    b->procs = cordon__compare_get(b->view, "processes");
    cordon__compare_get_num(cordon__compare_get(host, "ns"), "mnt", &host_mnt);
    cordon__compare_get_num(cordon__compare_get(host, "pid1_ns"), "mnt", &pid1_mnt);
    cordon__compare_get_num(cordon__compare_get(host, "self"), "pid", &self);
    cJSON_ArrayForEach(p, b->procs) {
        double pid = 0, mnt = -1;
        const char *state = cordon__compare_get_str(p, "state");

        if (cordon__compare_get_bool(p, "boundary") != 1)
            continue;
        boundaries++;
        cordon__compare_get_num(p, "pid", &pid);
        if (cordon__compare_get_bool(p, "readable") != 1) {
            snprintf(b->why, sizeof(b->why), "pid %.0f: %.200s", pid,
                     cordon__compare_get_str(p, "error") != NULL ? cordon__compare_get_str(p, "error") : "not read");
            return;
        }
        if (pid <= 1 || pid == self ||
            num_in(cordon__compare_get(cordon__compare_get(host, "self"), "ancestors"), pid)) {
            snprintf(b->why, sizeof(b->why), "pid %.0f is the host's init, the host itself or one of its "
                     "ancestors, never a sandbox", pid);
            return;
        }
        if (state != NULL && (strcmp(state, "Z") == 0 || strcmp(state, "X") == 0)) {
            snprintf(b->why, sizeof(b->why), "pid %.0f has exited (state %s)", pid, state);
            return;
        }
        if (!cordon__compare_get_num(cordon__compare_get(p, "ns"), "mnt", &mnt) || mnt == host_mnt || mnt == pid1_mnt) {
            snprintf(b->why, sizeof(b->why), "pid %.0f (%.60s) is in the host's own mount namespace: it is not "
                     "inside a sandbox", pid, proc_name(p));
            return;
        }
        if (kind == CORDON__KIND_NAMESPACES && !tie_namespaces(b, p, report))
            return;
        if (kind == CORDON__KIND_GVISOR && !tie_gvisor(b, p, report))
            return;
    }
    if (boundaries == 0) {
        snprintf(b->why, sizeof(b->why), "the provider's boundary names no process");
        return;
    }
    if (cordon__compare_get_bool(b->view, "truncated") == 1) {
        snprintf(b->why, sizeof(b->why), "the boundary has more than %d processes below it: the host did not "
                 "see them all", CORDON__BOUNDARY_PROCS_MAX);
        return;
    }
    b->verified = true;
}

void cordon__compare_check_boundary_verified(struct cordon__verdict *v, enum cordon__axis axis,
                                             const struct cordon__boundary *b)
{
    const cJSON *p;
    char pids[96] = "";
    size_t used = 0;

    if (!b->verified) {
        cordon__compare_add_check(v, axis, "boundary_verified", false, "%s", b->why);
        return;
    }
    cJSON_ArrayForEach(p, b->procs) {
        double pid = 0;
        int w;

        if (cordon__compare_get_bool(p, "boundary") != 1 || !cordon__compare_get_num(p, "pid", &pid))
            continue;
        w = snprintf(pids + used, sizeof(pids) - used, "%s%.0f", used > 0 ? ", " : "", pid);
        if (w > 0 && used + (size_t)w < sizeof(pids))
            used += (size_t)w;
    }
    cordon__compare_add_check(v, axis, "boundary_verified", true, "boundary pid %s is the sandbox the host observed",
                              pids);
}

/*
 * One check over every process of the boundary (the named ones and all
 * that descend from them): test returns false with a reason for the
 * first process that fails. An unverified boundary fails every such
 * check: facts about a process that may not be the sandbox prove nothing.
 */
void cordon__compare_check_each(struct cordon__verdict *v, enum cordon__axis axis, const char *check,
                                const struct cordon__boundary *b, const cJSON *host, cordon__proc_test test,
                                const char *all_ok)
{
    const cJSON *p;
    char why[240];
    int n = 0;

    if (!b->verified) {
        cordon__compare_add_check(v, axis, check, false, "boundary not verified: %s", b->why);
        return;
    }
    cJSON_ArrayForEach(p, b->procs) {
        double pid = 0;

        cordon__compare_get_num(p, "pid", &pid);
        if (cordon__compare_get_bool(p, "readable") != 1) {
            cordon__compare_add_check(v, axis, check, false, "pid %.0f below the boundary could not be read: %.160s",
                                      pid, cordon__compare_get_str(p, "error") != NULL
                                               ? cordon__compare_get_str(p, "error") : "?");
            return;
        }
        if (!test(p, host, why, sizeof(why))) {
            cordon__compare_add_check(v, axis, check, false, "pid %.0f (%.60s%s): %s", pid, proc_name(p),
                                      cordon__compare_get_bool(p, "boundary") == 1 ? ", the boundary" : "", why);
            return;
        }
        n++;
    }
    cordon__compare_add_check(v, axis, check, true, "%s (%d host process%s)", all_ok, n, n == 1 ? "" : "es");
}

bool cordon__compare_t_seccomp(const cJSON *p, const cJSON *host, char *why, size_t size)
{
    double mode;

    (void)host;
    if (!cordon__compare_get_num(p, "seccomp", &mode))
        snprintf(why, size, "Seccomp not reported");
    else if (mode != 2)
        snprintf(why, size, "Seccomp %.0f, not 2 (filter)", mode);
    else
        return true;
    return false;
}

bool cordon__compare_t_no_new_privs(const cJSON *p, const cJSON *host, char *why, size_t size)
{
    double nnp;

    (void)host;
    if (!cordon__compare_get_num(p, "no_new_privs", &nnp))
        snprintf(why, size, "NoNewPrivs not reported");
    else if (nnp != 1)
        snprintf(why, size, "NoNewPrivs %.0f", nnp);
    else
        return true;
    return false;
}

bool cordon__compare_t_uid_not_root(const cJSON *p, const cJSON *host, char *why, size_t size)
{
    const cJSON *uids = cordon__compare_get(p, "uids"), *u;
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
bool cordon__compare_t_caps_not_host(const cJSON *p, const cJSON *host, char *why, size_t size)
{
    const cJSON *caps = cordon__compare_get(p, "caps");
    double user = -1, parent = -1, host_user = -2;
    bool none = hex_zero(cordon__compare_get_str(caps, "eff")) && hex_zero(cordon__compare_get_str(caps, "prm")) &&
                (cordon__compare_get_str(caps, "amb") == NULL || hex_zero(cordon__compare_get_str(caps, "amb")));

    if (none)
        return true;
    cordon__compare_get_num(cordon__compare_get(p, "ns"), "user", &user);
    cordon__compare_get_num(p, "user_ns_parent", &parent);
    cordon__compare_get_num(cordon__compare_get(host, "ns"), "user", &host_user);
    if (user >= 0 && user != host_user && parent == host_user && maps_no_root(cordon__compare_get_str(p, "uid_map")))
        return true;
    snprintf(why, size, "CapEff %.16s, CapPrm %.16s in %s",
             cordon__compare_get_str(caps, "eff") ? cordon__compare_get_str(caps, "eff") : "?",
             cordon__compare_get_str(caps, "prm") ? cordon__compare_get_str(caps, "prm") : "?",
             user == host_user     ? "the host's own user namespace"
             : parent != host_user ? "a user namespace that is not a child of the host's"
                                   : "a user namespace whose uid_map maps a uid onto host root");
    return false;
}

static bool t_ns_differs(const cJSON *p, const cJSON *host, const char *ns, char *why, size_t size)
{
    double mine = -1, theirs = -2;

    if (cordon__compare_get_num(cordon__compare_get(p, "ns"), ns, &mine) &&
        cordon__compare_get_num(cordon__compare_get(host, "ns"), ns, &theirs) && mine != theirs)
        return true;
    if (mine < 0)
        snprintf(why, size, "its %s namespace is not known", ns);
    else
        snprintf(why, size, "shares the host's %s namespace (inode %.0f)", ns, mine);
    return false;
}

bool cordon__compare_t_pid_ns(const cJSON *p, const cJSON *host, char *why, size_t size)
{
    bool ok = t_ns_differs(p, host, "pid", why, size);
    size_t len = strlen(why);

    /* What that means: a second layer missing, not a first one broken. */
    if (!ok && strncmp(why, "shares", 6) == 0)
        snprintf(why + len, size - len, ": code that escapes the Sentry could name and signal host processes");
    return ok;
}

bool cordon__compare_t_mnt_ns(const cJSON *p, const cJSON *host, char *why, size_t size)
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
bool cordon__compare_serves_syscalls(const struct cordon__boundary *b, char *why, size_t size)
{
    const cJSON *bp, *p;

    if (!b->verified) {
        snprintf(why, size, "boundary not verified: %s", b->why);
        return false;
    }
    cJSON_ArrayForEach(bp, b->procs) {
        double root = 0, below = 0;
        bool kvm = cordon__compare_get_bool(bp, "kvm_vm_fd") == 1;

        if (cordon__compare_get_bool(bp, "boundary") != 1 || !cordon__compare_get_num(bp, "pid", &root))
            continue;
        cJSON_ArrayForEach(p, b->procs) {
            double r = 0, pid = 0, tracer = -1;

            if (cordon__compare_get_bool(p, "boundary") == 1 || !cordon__compare_get_num(p, "root", &r) || r != root)
                continue;
            cordon__compare_get_num(p, "pid", &pid);
            cordon__compare_get_num(p, "tracer", &tracer);
            if (tracer <= 0 || !num_in(cordon__compare_get(bp, "tasks"), tracer)) {
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
