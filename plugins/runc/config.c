/*
 * runc provider: the OCI config.json of one execution (SANDBOX in
 * cordon-provider-runc(7)).
 *
 * A read-only root; a numeric non-root user; every capability set empty;
 * no_new_privs; new pid, mount, ipc, uts, net and cgroup namespaces; the
 * memory limit with swap equal to it, a CPU quota, a pids limit; the
 * writable tmpfs mounts /workspace (nosuid, nodev, exec), /tmp and /dev/shm
 * splitting disk_bytes between them (cordon_disk_split), so that all of
 * them together hold at most disk_bytes; /dev with the runtime's minimal
 * devices; runc's masked and read-only /proc and /sys
 * paths; our seccomp profile; and cordon-init as the first process,
 * bind-mounted read-only at /run/cordon-init on a tmpfs /run of its own, so
 * that the image needs neither a shell nor sleep, nor that path.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cordon/sdk/sandbox.h>
#include "plugins/runc/runc.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define DEV_BYTES (64u << 10)
#define RUN_BYTES (1u << 20)
#define NOFILE_MAX 1024

/* runc's defaults: kernel internals a sandbox has no need to read. */
static const char *const masked_paths[] = {
    "/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
    "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
    "/sys/firmware", "/sys/devices/virtual/powercap",
};
static const char *const readonly_paths[] = {
    "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
};
static const char *const namespaces[] = { "pid", "network", "ipc", "uts", "mount", "cgroup" };
static const char *const cap_sets[] = { "bounding", "effective", "permitted", "inheritable",
                                        "ambient" };

/* The process's rlimits, every one of them: a limit left out would be
 * inherited from whoever started the runtime or the provider (a caller's
 * `ulimit -s unlimited` changes how the sandboxed process lays out its
 * memory). As many files as a toolchain needs, no core dumps, the usual
 * 8 MiB stack; memory, disk and time are bounded by the cgroup, the tmpfs
 * and the host's clock, so their rlimits are unlimited. exec.c applies the
 * same table to the processes it starts itself. Without CAP_SYS_RESOURCE
 * a hard limit cannot be raised: runc__rlimit_value caps each one at the
 * provider's own hard limit, which the caller may lower but not raise. */
const struct runc_rlimit runc__rlimits[] = {
    { RLIMIT_CPU, "RLIMIT_CPU", RLIM_INFINITY },
    { RLIMIT_FSIZE, "RLIMIT_FSIZE", RLIM_INFINITY },
    { RLIMIT_DATA, "RLIMIT_DATA", RLIM_INFINITY },
    { RLIMIT_STACK, "RLIMIT_STACK", 8u << 20 },
    { RLIMIT_CORE, "RLIMIT_CORE", 0 },
    { RLIMIT_RSS, "RLIMIT_RSS", RLIM_INFINITY },
    /* Counted per uid across the host: the pids cgroup is the bound. */
    { RLIMIT_NPROC, "RLIMIT_NPROC", RLIM_INFINITY },
    { RLIMIT_NOFILE, "RLIMIT_NOFILE", NOFILE_MAX },
    { RLIMIT_MEMLOCK, "RLIMIT_MEMLOCK", 64u << 10 },
    { RLIMIT_AS, "RLIMIT_AS", RLIM_INFINITY },
    { RLIMIT_LOCKS, "RLIMIT_LOCKS", RLIM_INFINITY },
    { RLIMIT_SIGPENDING, "RLIMIT_SIGPENDING", 16384 },
    { RLIMIT_MSGQUEUE, "RLIMIT_MSGQUEUE", 819200 },
    { RLIMIT_NICE, "RLIMIT_NICE", 0 },
    { RLIMIT_RTPRIO, "RLIMIT_RTPRIO", 0 },
    { RLIMIT_RTTIME, "RLIMIT_RTTIME", RLIM_INFINITY },
    { 0, NULL, 0 },
};

uint64_t runc__rlimit_value(const struct runc_rlimit *l)
{
    struct rlimit own;

    if (getrlimit(l->resource, &own) == 0 && own.rlim_max != RLIM_INFINITY &&
        (uint64_t)own.rlim_max < l->value)
        return (uint64_t)own.rlim_max;
    return l->value;
}

void runc__cgroup_path(const char *execution_id, char *buf, size_t size)
{
    snprintf(buf, size, RUNC_CGROUP_PREFIX "%s", execution_id);
}

uint64_t runc__cpu_quota_us(double cpus)
{
    double x = cpus * RUNC_CPU_PERIOD_US;
    uint64_t q;

    /* The kernel's floor is 1 ms; the ceiling keeps the product finite
     * (and NaN goes to the floor). */
    if (!(x >= 1000))
        return 1000;
    if (x > 1e12)
        return 1000000000000ull;
    /* Rounded up without libm's ceil: loading libm cost a third of a
     * millisecond of every command that loads this provider. */
    q = (uint64_t)x;
    return (double)q < x ? q + 1 : q;
}

static cJSON *strings(const char *const *list, size_t n)
{
    return cJSON_CreateStringArray(list, (int)n);
}

/* {"destination", "type", "source", "options": [...]} appended to mounts. */
static bool add_mount(cJSON *mounts, const char *dest, const char *type, const char *source,
                      const char *const *options, size_t n)
{
    cJSON *m = cJSON_CreateObject();

    if (m == NULL || !cJSON_AddItemToArray(mounts, m)) {
        cJSON_Delete(m);
        return false;
    }
    return cJSON_AddStringToObject(m, "destination", dest) != NULL &&
           cJSON_AddStringToObject(m, "type", type) != NULL &&
           cJSON_AddStringToObject(m, "source", source) != NULL &&
           cJSON_AddItemToObject(m, "options", strings(options, n));
}

/* A tmpfs with a byte size and an owner: "size=", "mode=", "uid=", "gid=". */
static bool add_tmpfs(cJSON *mounts, const char *dest, const char *const *flags, size_t n,
                      uint64_t bytes, const char *mode, uid_t uid, gid_t gid)
{
    char size[40], mode_opt[24], uid_opt[24], gid_opt[24];
    const char *opts[12];
    size_t k = 0;

    for (size_t i = 0; i < n && k < COUNT(opts) - 4; i++)
        opts[k++] = flags[i];
    snprintf(size, sizeof(size), "size=%" PRIu64, bytes);
    snprintf(mode_opt, sizeof(mode_opt), "mode=%s", mode);
    snprintf(uid_opt, sizeof(uid_opt), "uid=%u", (unsigned)uid);
    snprintf(gid_opt, sizeof(gid_opt), "gid=%u", (unsigned)gid);
    opts[k++] = size;
    opts[k++] = mode_opt;
    opts[k++] = uid_opt;
    opts[k++] = gid_opt;
    return add_mount(mounts, dest, "tmpfs", "tmpfs", opts, k);
}

/* /dev and /run are root's (0755): the sandbox user writes only into the
 * three mounts that share disk_bytes. */
static bool add_mounts(cJSON *root, const struct runc_spec_in *in,
                       const struct cordon_disk_split *disk)
{
    static const char *const proc[] = { "nosuid", "noexec", "nodev" };
    static const char *const dev[] = { "nosuid", "strictatime", "noexec" };
    static const char *const pts[] = { "nosuid", "noexec", "newinstance", "ptmxmode=0666",
                                       "mode=0620" };
    static const char *const shm[] = { "nosuid", "noexec", "nodev" };
    static const char *const mqueue[] = { "nosuid", "noexec", "nodev" };
    static const char *const sys[] = { "nosuid", "noexec", "nodev", "ro" };
    static const char *const cgroup[] = { "nosuid", "noexec", "nodev", "relatime", "ro" };
    /* /workspace runs what build/ holds: exec, but never setuid or devices. */
    static const char *const workspace[] = { "nosuid", "nodev", "exec" };
    static const char *const tmp[] = { "nosuid", "nodev", "exec" };
    static const char *const run[] = { "nosuid", "nodev", "noexec" };
    static const char *const init[] = { "bind", "ro", "nosuid", "nodev" };
    bool code = in->code_layout;
    cJSON *mounts = cJSON_AddArrayToObject(root, "mounts");

    return mounts != NULL && add_mount(mounts, "/proc", "proc", "proc", proc, COUNT(proc)) &&
           add_tmpfs(mounts, "/dev", dev, COUNT(dev), DEV_BYTES, "755", 0, 0) &&
           add_mount(mounts, "/dev/pts", "devpts", "devpts", pts, COUNT(pts)) &&
           add_tmpfs(mounts, "/dev/shm", shm, COUNT(shm), disk->shm_bytes, "1777", 0, 0) &&
           add_mount(mounts, "/dev/mqueue", "mqueue", "mqueue", mqueue, COUNT(mqueue)) &&
           add_mount(mounts, "/sys", "sysfs", "sysfs", sys, COUNT(sys)) &&
           add_mount(mounts, "/sys/fs/cgroup", "cgroup", "cgroup", cgroup, COUNT(cgroup)) &&
           add_tmpfs(mounts, "/workspace", workspace, COUNT(workspace), disk->workspace_bytes,
                     "755", code ? 0 : in->uid, code ? 0 : in->gid) &&
           add_tmpfs(mounts, "/tmp", tmp, COUNT(tmp), disk->tmp_bytes, "1777", 0, 0) &&
           add_tmpfs(mounts, "/run", run, COUNT(run), RUN_BYTES, "755", 0, 0) &&
           add_mount(mounts, RUNC_INIT_IN_CONTAINER, "bind", in->init_path, init, COUNT(init));
}

static bool add_process(cJSON *root, const struct runc_spec_in *in)
{
    static const char *const path_env[] = { "PATH=" RUNC_DEFAULT_PATH };
    cJSON *p = cJSON_AddObjectToObject(root, "process"), *user, *caps, *rlimits, *rl;
    char deadline[24];
    const char *args[] = { RUNC_INIT_IN_CONTAINER, "--deadline-ms", deadline, "--agent" };

    snprintf(deadline, sizeof(deadline), "%" PRIu64, in->init_deadline_ms);
    if (p == NULL || cJSON_AddFalseToObject(p, "terminal") == NULL ||
        (user = cJSON_AddObjectToObject(p, "user")) == NULL ||
        cJSON_AddNumberToObject(user, "uid", (double)in->uid) == NULL ||
        cJSON_AddNumberToObject(user, "gid", (double)in->gid) == NULL ||
        !cJSON_AddItemToObject(p, "args", strings(args, COUNT(args) - (in->agent ? 0 : 1))) ||
        !cJSON_AddItemToObject(p, "env", strings(path_env, COUNT(path_env))) ||
        cJSON_AddStringToObject(p, "cwd", "/") == NULL ||
        (caps = cJSON_AddObjectToObject(p, "capabilities")) == NULL ||
        cJSON_AddTrueToObject(p, "noNewPrivileges") == NULL ||
        (rlimits = cJSON_AddArrayToObject(p, "rlimits")) == NULL)
        return false;
    /* Every set empty: not even the bounding set keeps anything for setuid. */
    for (size_t i = 0; i < COUNT(cap_sets); i++)
        if (cJSON_AddArrayToObject(caps, cap_sets[i]) == NULL)
            return false;
    for (const struct runc_rlimit *l = runc__rlimits; l->name != NULL; l++) {
        char num[24];

        /* Written exactly: a double would round RLIM_INFINITY (2^64-1). */
        snprintf(num, sizeof(num), "%" PRIu64, runc__rlimit_value(l));
        if ((rl = cJSON_CreateObject()) == NULL || !cJSON_AddItemToArray(rlimits, rl) ||
            cJSON_AddStringToObject(rl, "type", l->name) == NULL ||
            cJSON_AddRawToObject(rl, "hard", num) == NULL ||
            cJSON_AddRawToObject(rl, "soft", num) == NULL)
            return false;
    }
    return true;
}

static bool add_resources(cJSON *linux_obj, const struct runc_spec_in *in)
{
    cJSON *res = cJSON_AddObjectToObject(linux_obj, "resources"), *devices, *deny, *o;
    const struct cordon_limits *l = in->limits;

    /* Deny every device; the runtime adds its minimal set (null, zero, ...). */
    if (res == NULL || (devices = cJSON_AddArrayToObject(res, "devices")) == NULL ||
        (deny = cJSON_CreateObject()) == NULL || !cJSON_AddItemToArray(devices, deny) ||
        cJSON_AddFalseToObject(deny, "allow") == NULL ||
        cJSON_AddStringToObject(deny, "access", "rwm") == NULL)
        return false;
    if ((o = cJSON_AddObjectToObject(res, "memory")) == NULL ||
        cJSON_AddNumberToObject(o, "limit", (double)l->memory_bytes) == NULL ||
        (in->limit_swap && cJSON_AddNumberToObject(o, "swap", (double)l->memory_bytes) == NULL))
        return false;
    if ((o = cJSON_AddObjectToObject(res, "cpu")) == NULL ||
        cJSON_AddNumberToObject(o, "quota", (double)runc__cpu_quota_us(l->cpus)) == NULL ||
        cJSON_AddNumberToObject(o, "period", RUNC_CPU_PERIOD_US) == NULL)
        return false;
    return (o = cJSON_AddObjectToObject(res, "pids")) != NULL &&
           cJSON_AddNumberToObject(o, "limit", (double)l->pids) != NULL;
}

/* The linux object; *seccomp moves into it first, so that it has one owner. */
static bool add_linux(cJSON *root, const struct runc_spec_in *in, cJSON **seccomp)
{
    cJSON *lx = cJSON_AddObjectToObject(root, "linux"), *ns, *n;
    char cgpath[128];

    if (lx == NULL || !cJSON_AddItemToObject(lx, "seccomp", *seccomp))
        return false;
    *seccomp = NULL;
    if ((ns = cJSON_AddArrayToObject(lx, "namespaces")) == NULL)
        return false;
    for (size_t i = 0; i < COUNT(namespaces); i++)
        if ((n = cJSON_CreateObject()) == NULL || !cJSON_AddItemToArray(ns, n) ||
            cJSON_AddStringToObject(n, "type", namespaces[i]) == NULL)
            return false;
    runc__cgroup_path(in->execution_id, cgpath, sizeof(cgpath));
    return cJSON_AddStringToObject(lx, "cgroupsPath", cgpath) != NULL && add_resources(lx, in) &&
           cJSON_AddItemToObject(lx, "maskedPaths", strings(masked_paths, COUNT(masked_paths))) &&
           cJSON_AddItemToObject(lx, "readonlyPaths",
                                 strings(readonly_paths, COUNT(readonly_paths)));
}

int runc__spec_build(const struct runc_spec_in *in, char **ret_json, struct cordon_error *err)
{
    cJSON *root = cJSON_CreateObject(), *rootfs, *notes, *seccomp = NULL;
    struct cordon_disk_split disk;
    char *text = NULL;
    int r;

    r = cordon_disk_split("resources.disk_bytes", in->limits->disk_bytes, &disk, err);
    if (r == 0)
        r = runc__seccomp_profile(&seccomp, err);
    if (r < 0)
        goto out;
    /* Labels on the runtime's object: which execution, whose host. */
    if (root == NULL || cJSON_AddStringToObject(root, "ociVersion", "1.0.2") == NULL ||
        !add_process(root, in) || (rootfs = cJSON_AddObjectToObject(root, "root")) == NULL ||
        cJSON_AddStringToObject(rootfs, "path", in->rootfs) == NULL ||
        cJSON_AddTrueToObject(rootfs, "readonly") == NULL ||
        cJSON_AddStringToObject(root, "hostname", "cordon") == NULL ||
        !add_mounts(root, in, &disk) ||
        (notes = cJSON_AddObjectToObject(root, "annotations")) == NULL ||
        cJSON_AddStringToObject(notes, "org.cordon.execution_id", in->execution_id) == NULL ||
        (in->host_instance_id != NULL &&
         cJSON_AddStringToObject(notes, "org.cordon.host", in->host_instance_id) == NULL) ||
        !add_linux(root, in, &seccomp) || (text = cJSON_PrintUnformatted(root)) == NULL) {
        r = runc__nomem(err, "config.json");
        goto out;
    }
    *ret_json = text;
out:
    cJSON_Delete(seccomp);
    cJSON_Delete(root);
    return r;
}
