/*
 * docker: the container as provision asks the daemon for it - the create
 * body with every default of THE SANDBOX in cordon-provider-docker(7), the
 * seccomp profile and the labels - and the read-back of the container's
 * inspect against it, refused when the daemon did not apply any of it
 * (fail closed). container.c makes the calls.
 *
 * /workspace is an anonymous local volume of type tmpfs rather than a
 * HostConfig.Tmpfs mount: the archive API refuses to write into a
 * container with a read-only rootfs except into a volume, and only the
 * volume's mount options can say exec, uid, gid and mode. The volume goes
 * with the container (removed with v=1, and by AutoRemove).
 *
 * disk_bytes is one budget: /workspace, /tmp (HostConfig.Tmpfs) and
 * /dev/shm (HostConfig.ShmSize) share it as cordon_disk_split says, and
 * the read-back checks each size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cordon/sdk/host.h>
#include <cordon/sdk/sandbox.h>
#include "plugins/docker/docker.h"

/*
 * The seccomp profile (cordon-provider-docker(7)): every call allowed but
 * what sandboxed code has no business making. The daemon's default profile
 * lets io_uring through on some versions, and a profile cannot be stacked
 * on it, so this one stands alone. Another ABI (i386, x32) is not listed and
 * so hits the filter's bad-architecture action instead of slipping past
 * the numbers below.
 */
static const char *const denied_syscalls[] = {
    "keyctl", "add_key", "request_key", "bpf", "mount", "umount", "umount2", "pivot_root",
    "chroot", "init_module", "finit_module", "delete_module", "create_module", "query_module",
    "get_kernel_syms", "kexec_load", "kexec_file_load", "ptrace", "process_vm_readv",
    "process_vm_writev", "kcmp", "pidfd_getfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "setns", "unshare", "perf_event_open", "userfaultfd", "swapon", "swapoff", "reboot", "acct",
    "open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "quotactl", "nfsservctl",
    "uselib", "ustat", "sysfs", "_sysctl", "clock_adjtime", "clock_settime", "settimeofday",
    "stime", "iopl", "ioperm", "vm86", "vm86old",
};

#if defined(__x86_64__)
#define DK_SECCOMP_ARCH "SCMP_ARCH_X86_64"
#elif defined(__aarch64__)
#define DK_SECCOMP_ARCH "SCMP_ARCH_AARCH64"
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define DK_SECCOMP_ARCH "SCMP_ARCH_PPC64LE"
#elif defined(__s390x__)
#define DK_SECCOMP_ARCH "SCMP_ARCH_S390X"
#endif
#define DK_CLONE_NEWUSER 0x10000000
#define DK_ENOSYS 38
#define DK_EPERM 1
#define DK_F_SETLEASE 1024
#define DK_CMD_MASK 4294967295.0

/* "seccomp=<profile JSON>", the daemon's inline form; malloc'd. */
char *dk__seccomp_opt(void)
{
    cJSON *p = cJSON_CreateObject(), *calls, *rule, *arr, *arg;
    char *text = NULL, *opt = NULL;
    bool ok = p != NULL && cJSON_AddStringToObject(p, "defaultAction", "SCMP_ACT_ALLOW") &&
              (arr = cJSON_AddArrayToObject(p, "architectures")) != NULL &&
#ifdef DK_SECCOMP_ARCH
              cJSON_AddItemToArray(arr, cJSON_CreateString(DK_SECCOMP_ARCH)) &&
#endif
              (calls = cJSON_AddArrayToObject(p, "syscalls")) != NULL &&
              (rule = cJSON_CreateObject()) != NULL && cJSON_AddItemToArray(calls, rule) &&
              cJSON_AddItemToObject(rule, "names",
                                    cJSON_CreateStringArray(denied_syscalls,
                                                            (int)(sizeof(denied_syscalls) /
                                                                  sizeof(denied_syscalls[0])))) &&
              cJSON_AddStringToObject(rule, "action", "SCMP_ACT_ERRNO") &&
              cJSON_AddNumberToObject(rule, "errnoRet", DK_EPERM) &&
              /* A new user namespace through clone (s390 passes flags second). */
              (rule = cJSON_CreateObject()) != NULL && cJSON_AddItemToArray(calls, rule) &&
              cJSON_AddItemToObject(rule, "names", cJSON_CreateStringArray(
                                                       (const char *const[]){ "clone" }, 1)) &&
              cJSON_AddStringToObject(rule, "action", "SCMP_ACT_ERRNO") &&
              cJSON_AddNumberToObject(rule, "errnoRet", DK_EPERM) &&
              (arr = cJSON_AddArrayToObject(rule, "args")) != NULL &&
              (arg = cJSON_CreateObject()) != NULL && cJSON_AddItemToArray(arr, arg) &&
#if defined(__s390x__)
              cJSON_AddNumberToObject(arg, "index", 1) &&
#else
              cJSON_AddNumberToObject(arg, "index", 0) &&
#endif
              cJSON_AddNumberToObject(arg, "value", DK_CLONE_NEWUSER) &&
              cJSON_AddNumberToObject(arg, "valueTwo", DK_CLONE_NEWUSER) &&
              cJSON_AddStringToObject(arg, "op", "SCMP_CMP_MASKED_EQ") &&
              /* clone3 hides its flags in memory: ENOSYS makes libc fall back to clone. */
              (rule = cJSON_CreateObject()) != NULL && cJSON_AddItemToArray(calls, rule) &&
              cJSON_AddItemToObject(rule, "names", cJSON_CreateStringArray(
                                                       (const char *const[]){ "clone3" }, 1)) &&
              cJSON_AddStringToObject(rule, "action", "SCMP_ACT_ERRNO") &&
              cJSON_AddNumberToObject(rule, "errnoRet", DK_ENOSYS) &&
              /* A file lease makes the daemon's archive process wait the
               * lease-break time on every open of the file: F_SETLEASE is
               * refused, whatever the lease type. The kernel reads cmd as
               * 32 bits, so only those are compared. */
              (rule = cJSON_CreateObject()) != NULL && cJSON_AddItemToArray(calls, rule) &&
              cJSON_AddItemToObject(rule, "names",
                                    cJSON_CreateStringArray((const char *const[]){ "fcntl",
                                                                                   "fcntl64" },
                                                            2)) &&
              cJSON_AddStringToObject(rule, "action", "SCMP_ACT_ERRNO") &&
              cJSON_AddNumberToObject(rule, "errnoRet", DK_EPERM) &&
              (arr = cJSON_AddArrayToObject(rule, "args")) != NULL &&
              (arg = cJSON_CreateObject()) != NULL && cJSON_AddItemToArray(arr, arg) &&
              cJSON_AddNumberToObject(arg, "index", 1) &&
              cJSON_AddNumberToObject(arg, "value", DK_CMD_MASK) &&
              cJSON_AddNumberToObject(arg, "valueTwo", DK_F_SETLEASE) &&
              cJSON_AddStringToObject(arg, "op", "SCMP_CMP_MASKED_EQ") &&
              /* Another process's resource limits: PID 1 (cordon-init,
               * the agent) runs as the sandbox's uid, which is all prlimit
               * asks of a caller, and a limit of 0 pending signals or 4
               * descriptors stops it serving. Only pid 0 (the caller). */
              (rule = cJSON_CreateObject()) != NULL && cJSON_AddItemToArray(calls, rule) &&
              cJSON_AddItemToObject(rule, "names", cJSON_CreateStringArray(
                                                       (const char *const[]){ "prlimit64" }, 1)) &&
              cJSON_AddStringToObject(rule, "action", "SCMP_ACT_ERRNO") &&
              cJSON_AddNumberToObject(rule, "errnoRet", DK_EPERM) &&
              (arr = cJSON_AddArrayToObject(rule, "args")) != NULL &&
              (arg = cJSON_CreateObject()) != NULL && cJSON_AddItemToArray(arr, arg) &&
              cJSON_AddNumberToObject(arg, "index", 0) && cJSON_AddNumberToObject(arg, "value", 0) &&
              cJSON_AddStringToObject(arg, "op", "SCMP_CMP_NE") &&
              /* Network "none" means no family reaches outside: AF_VSOCK
               * (the hypervisor's host), AF_PACKET, netlink uevents (the
               * host's device events) and every other family but the
               * sdk's allow-list are refused. */
              cordon_socket_rules_oci(calls, NULL) == 0;

    if (ok)
        text = cJSON_PrintUnformatted(p);
    if (text != NULL && asprintf(&opt, "seccomp=%s", text) < 0)
        opt = NULL;
    free(text);
    cJSON_Delete(p);
    return opt;
}

const char *dk__host_label(const struct cordon_resource *res)
{
    const struct cordon_host_v1 *h = res->host;

    return CORDON_HOST_HAS(h, host_instance_id) && h->host_instance_id != NULL &&
                   h->host_instance_id[0] != '\0'
               ? h->host_instance_id
               : "unknown";
}

static bool add_labels(cJSON *obj, const struct cordon_resource *res, const char *id)
{
    cJSON *labels = cJSON_AddObjectToObject(obj, "Labels");

    return labels != NULL && cJSON_AddStringToObject(labels, DK_LABEL_EXECUTION, id) &&
           cJSON_AddStringToObject(labels, DK_LABEL_HOST, dk__host_label(res)) &&
           cJSON_AddStringToObject(labels, DK_LABEL_PROVIDER, DK_ID);
}

/* The mount options of the /workspace tmpfs; also what the read-back expects. */
static void workspace_options(const struct dk_spec *sp, uid_t uid, gid_t gid, char *buf,
                              size_t size)
{
    /* Layout "code": a root-owned root; "host": the sandbox user's. */
    snprintf(buf, size, "size=%llu,uid=%u,gid=%u,mode=0755,nosuid,nodev,exec",
             (unsigned long long)sp->disk.workspace_bytes, sp->code_layout ? 0u : (unsigned)uid,
             sp->code_layout ? 0u : (unsigned)gid);
}

/* cpus in nanoseconds of CPU per second, rounded to nearest (half away from
 * zero, as llround would) without libm: loading it cost a third of a
 * millisecond of every command that loads this provider. cpus is checked
 * between CORDON_LIMIT_CPUS_MIN and _MAX, so the product is far below 2^53
 * and x - trunc(x) is exact. Anything else gets the minimum, never 0, which
 * the daemon would read as no limit at all. */
static long long nano_cpus(double cpus)
{
    double x = cpus * 1e9;
    long long n;

    if (!(x >= CORDON_LIMIT_CPUS_MIN * 1e9))
        return (long long)(CORDON_LIMIT_CPUS_MIN * 1e9);
    n = (long long)x;
    return x - (double)n >= 0.5 ? n + 1 : n;
}

/* HostConfig.Tmpfs["/tmp"]; also what the read-back expects. */
static void tmp_options(const struct dk_spec *sp, char *buf, size_t size)
{
    snprintf(buf, size, "rw,nosuid,nodev,exec,size=%llu,mode=1777",
             (unsigned long long)sp->disk.tmp_bytes);
}

char *dk__create_body(const struct cordon_resource *res, const struct dk_spec *sp,
                      uint64_t lifetime_ms, const char *seccomp)
{
    char user[32], ms[32], tmp[160], ws[200];
    cJSON *body = cJSON_CreateObject(), *hc, *arr = NULL, *mount, *vo, *dc, *opts, *ul;
    char *text = NULL;
    bool ok;

    snprintf(user, sizeof(user), "%u:%u", (unsigned)sp->uid, (unsigned)sp->gid);
    snprintf(ms, sizeof(ms), "%llu", (unsigned long long)lifetime_ms);
    tmp_options(sp, tmp, sizeof(tmp));
    workspace_options(sp, sp->uid, sp->gid, ws, sizeof(ws));
    ok = body != NULL && cJSON_AddStringToObject(body, "Image", sp->image) &&
         /*
          * The first process is the host's cordon-init: PID 1 of the pid
          * namespace reaps and holds the deadline. The kernel drops
          * SIGKILL and SIGSTOP sent to a namespace's init from inside,
          * and it makes itself non-dumpable against same-uid ptrace and
          * /proc/1/mem, so nothing inside can stop the clock. When it
          * exits at the deadline the container stops and AutoRemove
          * removes it, whether or not a cordon command runs.
          */
         (arr = cJSON_AddArrayToObject(body, "Entrypoint")) != NULL &&
         cJSON_AddItemToArray(arr, cJSON_CreateString(DK_INIT_IN_CONTAINER)) &&
         (arr = cJSON_AddArrayToObject(body, "Cmd")) != NULL &&
         cJSON_AddItemToArray(arr, cJSON_CreateString("--deadline-ms")) &&
         cJSON_AddItemToArray(arr, cJSON_CreateString(ms)) &&
         /* The resident agent (exec.c): exec without the daemon. */
         (res->cfg.no_agent || cJSON_AddItemToArray(arr, cJSON_CreateString("--agent"))) &&
         cJSON_AddStringToObject(body, "User", user) &&
         cJSON_AddStringToObject(body, "WorkingDir", DK_WORKSPACE) &&
         cJSON_AddBoolToObject(body, "NetworkDisabled", true) &&
         cJSON_AddStringToObject(body, "StopSignal", "SIGKILL") &&
         /* An image's HEALTHCHECK would run image code in the container
          * on the daemon's timer, outside any exec and outside the init's
          * tree: none. */
         (hc = cJSON_AddObjectToObject(body, "Healthcheck")) != NULL &&
         (arr = cJSON_AddArrayToObject(hc, "Test")) != NULL &&
         cJSON_AddItemToArray(arr, cJSON_CreateString("NONE")) &&
         cJSON_AddNumberToObject(body, "StopTimeout", 1) && add_labels(body, res, sp->in.execution_id) &&
         (arr = cJSON_AddArrayToObject(body, "Env")) != NULL;
    for (size_t i = 0; ok && i < sp->in.environment.n; i++) {
        const struct cordon_env_var *e = &sp->in.environment.vars[i];
        char *kv = NULL;

        if (asprintf(&kv, "%s=%s", e->name, e->value) < 0) {
            ok = false;
            break;
        }
        ok = cJSON_AddItemToArray(arr, cJSON_CreateString(kv));
        free(kv);
    }
    /* Every setting here has its read-back in verify. */
    ok = ok && (hc = cJSON_AddObjectToObject(body, "HostConfig")) != NULL &&
         cJSON_AddBoolToObject(hc, "AutoRemove", true) && cJSON_AddBoolToObject(hc, "Init", false) &&
         cJSON_AddBoolToObject(hc, "Privileged", false) &&
         cJSON_AddBoolToObject(hc, "ReadonlyRootfs", true) &&
         cJSON_AddStringToObject(hc, "NetworkMode", "none") &&
         cJSON_AddStringToObject(hc, "IpcMode", "private") &&
         (arr = cJSON_AddArrayToObject(hc, "CapDrop")) != NULL &&
         cJSON_AddItemToArray(arr, cJSON_CreateString("ALL")) &&
         (arr = cJSON_AddArrayToObject(hc, "SecurityOpt")) != NULL &&
         cJSON_AddItemToArray(arr, cJSON_CreateString("no-new-privileges")) &&
         cJSON_AddItemToArray(arr, cJSON_CreateString(seccomp)) &&
         cJSON_AddNumberToObject(hc, "NanoCpus", nano_cpus(sp->in.resources.cpus)) &&
         cJSON_AddNumberToObject(hc, "Memory", (double)sp->in.resources.memory_bytes) &&
         cJSON_AddNumberToObject(hc, "MemorySwap", (double)sp->in.resources.memory_bytes) &&
         cJSON_AddNumberToObject(hc, "PidsLimit", (double)sp->in.resources.pids) &&
         cJSON_AddNumberToObject(hc, "ShmSize", (double)sp->disk.shm_bytes) &&
         /* No core dumps, set rather than inherited: it is the one rlimit
          * the runtimes leave differently (runc the daemon's soft 0, runsc
          * gVisor's unlimited), and a dump is the sandbox's memory written
          * where the runtime chooses. */
         (arr = cJSON_AddArrayToObject(hc, "Ulimits")) != NULL &&
         (ul = cJSON_CreateObject()) != NULL && cJSON_AddItemToArray(arr, ul) &&
         cJSON_AddStringToObject(ul, "Name", "core") && cJSON_AddNumberToObject(ul, "Soft", 0) &&
         cJSON_AddNumberToObject(ul, "Hard", 0) &&
         (opts = cJSON_AddObjectToObject(hc, "Tmpfs")) != NULL &&
         cJSON_AddStringToObject(opts, "/tmp", tmp) &&
         (arr = cJSON_AddArrayToObject(hc, "Mounts")) != NULL &&
         (mount = cJSON_CreateObject()) != NULL && cJSON_AddItemToArray(arr, mount) &&
         cJSON_AddStringToObject(mount, "Type", "volume") &&
         cJSON_AddStringToObject(mount, "Target", DK_WORKSPACE) &&
         (vo = cJSON_AddObjectToObject(mount, "VolumeOptions")) != NULL &&
         add_labels(vo, res, sp->in.execution_id) &&
         (dc = cJSON_AddObjectToObject(vo, "DriverConfig")) != NULL &&
         cJSON_AddStringToObject(dc, "Name", "local") &&
         (opts = cJSON_AddObjectToObject(dc, "Options")) != NULL &&
         cJSON_AddStringToObject(opts, "type", "tmpfs") &&
         cJSON_AddStringToObject(opts, "device", "tmpfs") && cJSON_AddStringToObject(opts, "o", ws) &&
         (mount = cJSON_CreateObject()) != NULL && cJSON_AddItemToArray(arr, mount) &&
         cJSON_AddStringToObject(mount, "Type", "bind") &&
         cJSON_AddStringToObject(mount, "Source", res->init_path) &&
         cJSON_AddStringToObject(mount, "Target", DK_INIT_IN_CONTAINER) &&
         cJSON_AddBoolToObject(mount, "ReadOnly", true) &&
         (opts = cJSON_AddObjectToObject(hc, "LogConfig")) != NULL &&
         cJSON_AddStringToObject(opts, "Type", "none") &&
         (res->cfg.runtime == NULL || cJSON_AddStringToObject(hc, "Runtime", res->cfg.runtime));
    if (ok)
        text = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    return text;
}

static bool list_has(const cJSON *arr, const char *const *accepted)
{
    const cJSON *item;

    cJSON_ArrayForEach(item, arr)
        for (size_t i = 0; cJSON_IsString(item) && accepted[i] != NULL; i++)
            if (strcasecmp(item->valuestring, accepted[i]) == 0)
                return true;
    return false;
}

static const char *hc_str(const cJSON *hc, const char *key)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(hc, key));

    return s != NULL ? s : "";
}

static double hc_num(const cJSON *hc, const char *key)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(hc, key);

    return cJSON_IsNumber(n) ? n->valuedouble : -1;
}

/* The first volume the image declares (VOLUME /data) that the container
 * got, or NULL. The daemon gives each an anonymous local volume on the
 * host's disk: outside disk_bytes, unlabelled, unchecked. */
static const char *image_volume(const cJSON *inspect)
{
    const cJSON *config = cJSON_GetObjectItemCaseSensitive(inspect, "Config"), *v;

    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(config, "Volumes"))
        if (v->string != NULL && strcmp(v->string, DK_WORKSPACE) != 0)
            return v->string;
    return NULL;
}

/* A mount in the container's own list (the image's volumes included, which
 * HostConfig.Mounts does not show) other than the two asked for. */
static const cJSON *foreign_mount(const cJSON *inspect)
{
    const cJSON *m;

    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(inspect, "Mounts"))
        if (strcmp(hc_str(m, "Destination"), DK_WORKSPACE) != 0 &&
            strcmp(hc_str(m, "Destination"), DK_INIT_IN_CONTAINER) != 0)
            return m;
    return NULL;
}

/* Config.Healthcheck.Test is exactly ["NONE"]. */
static bool healthcheck_none(const cJSON *config)
{
    const cJSON *test = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(config, "Healthcheck"), "Test");

    return cJSON_GetArraySize(test) == 1 &&
           strcmp(cJSON_GetStringValue(cJSON_GetArrayItem(test, 0)) ?: "", "NONE") == 0;
}

/*
 * Fail closed: compare what the daemon applied (the container's inspect)
 * with what was asked, setting by setting. The first one missing is named.
 */
int dk__verify(const struct cordon_resource *res, const struct dk_spec *sp,
               const char *seccomp, const cJSON *inspect, struct cordon_error *err)
{
    static const char *const all[] = { "ALL", "CAP_ALL", NULL };
    static const char *const nnp[] = { "no-new-privileges", "no-new-privileges:true",
                                       "no-new-privileges=true", NULL };
    const cJSON *hc = cJSON_GetObjectItemCaseSensitive(inspect, "HostConfig");
    const cJSON *config = cJSON_GetObjectItemCaseSensitive(inspect, "Config");
    const cJSON *mounts = cJSON_GetObjectItemCaseSensitive(hc, "Mounts"), *m;
    const char *tmp = cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(hc, "Tmpfs"), "/tmp"));
    const char *image = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(inspect, "Image"));
    char user[32], ws[200], tmp_want[160], what[160] = "", got[200] = "";
    double mem = (double)sp->in.resources.memory_bytes;
    bool ws_ok = false, init_ok = false, core_ok = false;
    const char *volume = image_volume(inspect);
    const cJSON *foreign = foreign_mount(inspect);

    /* Refused rather than covered: a tmpfs over each would take a share
     * of disk_bytes the caller did not plan for, and hide what the image's
     * author meant to keep. */
    if (volume != NULL)
        return cordon_error_set(err, CORDON_E_UNSUPPORTED, 0,
                                "image: %s declares VOLUME %.200s, which the daemon would put on "
                                "the host's disk outside disk_bytes; images with volumes are "
                                "refused (the container and its volume were removed)",
                                sp->image, volume);

    snprintf(user, sizeof(user), "%u:%u", (unsigned)sp->uid, (unsigned)sp->gid);
    workspace_options(sp, sp->uid, sp->gid, ws, sizeof(ws));
    tmp_options(sp, tmp_want, sizeof(tmp_want));
    cJSON_ArrayForEach(m, mounts) {
        const cJSON *dc = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(m, "VolumeOptions"), "DriverConfig");
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(dc, "Options");

        if (strcmp(hc_str(m, "Target"), DK_WORKSPACE) == 0 && strcmp(hc_str(o, "type"), "tmpfs") == 0 &&
            strcmp(hc_str(o, "o"), ws) == 0)
            ws_ok = true;
        if (strcmp(hc_str(m, "Target"), DK_INIT_IN_CONTAINER) == 0 &&
            strcmp(hc_str(m, "Type"), "bind") == 0 &&
            strcmp(hc_str(m, "Source"), res->init_path) == 0 &&
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "ReadOnly")))
            init_ok = true;
    }
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(hc, "Ulimits"))
        if (strcmp(hc_str(m, "Name"), "core") == 0)
            core_ok = hc_num(m, "Soft") == 0 && hc_num(m, "Hard") == 0;
#define DK_REQUIRE(cond, name, ...)                                                   \
    do {                                                                              \
        if (!(cond) && what[0] == '\0') {                                             \
            snprintf(what, sizeof(what), "%s", name);                                 \
            snprintf(got, sizeof(got), __VA_ARGS__);                                  \
        }                                                                             \
    } while (0)
    DK_REQUIRE(cJSON_IsObject(hc) && cJSON_IsObject(config), "HostConfig", "no HostConfig");
    DK_REQUIRE(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(hc, "AutoRemove")),
               "HostConfig.AutoRemove", "not true");
    /* docker-init would be PID 1 and the deadline's keeper one of its children. */
    DK_REQUIRE(!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(hc, "Init")), "HostConfig.Init",
               "true: docker-init would be PID 1, not cordon-init");
    DK_REQUIRE(!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(hc, "Privileged")),
               "HostConfig.Privileged", "true");
    DK_REQUIRE(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(hc, "ReadonlyRootfs")),
               "HostConfig.ReadonlyRootfs", "not true");
    DK_REQUIRE(strcmp(hc_str(hc, "NetworkMode"), "none") == 0, "HostConfig.NetworkMode",
               "\"%s\", not \"none\"", hc_str(hc, "NetworkMode"));
    DK_REQUIRE(hc_num(hc, "NanoCpus") == (double)nano_cpus(sp->in.resources.cpus),
               "HostConfig.NanoCpus", "%.0f, asked %lld", hc_num(hc, "NanoCpus"),
               nano_cpus(sp->in.resources.cpus));
    DK_REQUIRE(hc_num(hc, "Memory") == mem, "HostConfig.Memory", "%.0f, asked %.0f",
               hc_num(hc, "Memory"), mem);
    DK_REQUIRE(hc_num(hc, "MemorySwap") == mem, "HostConfig.MemorySwap",
               "%.0f, asked %.0f (equal to Memory: no swap)", hc_num(hc, "MemorySwap"), mem);
    DK_REQUIRE(hc_num(hc, "PidsLimit") == (double)sp->in.resources.pids, "HostConfig.PidsLimit",
               "%.0f, asked %llu", hc_num(hc, "PidsLimit"), (unsigned long long)sp->in.resources.pids);
    DK_REQUIRE(core_ok, "HostConfig.Ulimits[core]", "not 0:0");
    DK_REQUIRE(list_has(cJSON_GetObjectItemCaseSensitive(hc, "CapDrop"), all),
               "HostConfig.CapDrop", "ALL is not dropped");
    DK_REQUIRE(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(hc, "CapAdd")) == 0,
               "HostConfig.CapAdd", "capabilities are added");
    DK_REQUIRE(list_has(cJSON_GetObjectItemCaseSensitive(hc, "SecurityOpt"), nnp),
               "HostConfig.SecurityOpt", "no-new-privileges is missing");
    DK_REQUIRE(list_has(cJSON_GetObjectItemCaseSensitive(hc, "SecurityOpt"),
                        (const char *const[]){ seccomp, NULL }),
               "HostConfig.SecurityOpt", "the seccomp profile is not cordon's");
    DK_REQUIRE(strcmp(hc_str(config, "User"), user) == 0, "Config.User", "\"%s\", asked \"%s\"",
               hc_str(config, "User"), user);
    /* The three writable tmpfs mounts share disk_bytes: each size as asked. */
    DK_REQUIRE(tmp != NULL && strcmp(tmp, tmp_want) == 0, "HostConfig.Tmpfs[/tmp]",
               "\"%s\", asked \"%s\"", tmp != NULL ? tmp : "none", tmp_want);
    DK_REQUIRE(hc_num(hc, "ShmSize") == (double)sp->disk.shm_bytes, "HostConfig.ShmSize",
               "%.0f, asked %llu", hc_num(hc, "ShmSize"), (unsigned long long)sp->disk.shm_bytes);
    DK_REQUIRE(ws_ok, "HostConfig.Mounts[/workspace]", "no tmpfs volume with \"%s\"", ws);
    DK_REQUIRE(init_ok, "HostConfig.Mounts[" DK_INIT_IN_CONTAINER "]",
               "no read-only bind of %s", res->init_path);
    DK_REQUIRE(foreign == NULL, "Mounts", "a %s mount at %.100s that was not asked for",
               hc_str(foreign, "Type"), hc_str(foreign, "Destination"));
    DK_REQUIRE(healthcheck_none(config), "Config.Healthcheck", "the image's health check would run");
    DK_REQUIRE(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(hc, "Binds")) == 0 &&
                   cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(hc, "Devices")) == 0 &&
                   cJSON_GetArraySize(mounts) == 2,
               "HostConfig.Binds/Devices/Mounts", "host paths or devices are mounted");
    DK_REQUIRE(strcmp(hc_str(hc, "PidMode"), "host") != 0 &&
                   strcmp(hc_str(hc, "IpcMode"), "host") != 0 &&
                   strcmp(hc_str(hc, "UTSMode"), "host") != 0 &&
                   strcmp(hc_str(hc, "UsernsMode"), "host") != 0,
               "HostConfig.PidMode/IpcMode/UTSMode/UsernsMode", "a host namespace is shared");
    DK_REQUIRE(res->cfg.runtime == NULL || strcmp(hc_str(hc, "Runtime"), res->cfg.runtime) == 0,
               "HostConfig.Runtime", "\"%s\", asked \"%s\"", hc_str(hc, "Runtime"),
               res->cfg.runtime != NULL ? res->cfg.runtime : "");
    DK_REQUIRE(strcmp(hc_str(inspect, "Path"), DK_INIT_IN_CONTAINER) == 0, "Path",
               "\"%s\", not " DK_INIT_IN_CONTAINER, hc_str(inspect, "Path"));
    /* A local id pins the image itself: the container must use exactly it. */
    DK_REQUIRE(strncmp(sp->image, "sha256:", 7) != 0 ||
                   (image != NULL && strcmp(image, sp->image) == 0),
               "Image", "%s, asked %s", image != NULL ? image : "none", sp->image);
#undef DK_REQUIRE
    if (what[0] == '\0')
        return 0;
    return cordon_error_set(err, CORDON_E_UNSUPPORTED, 0,
                            "provision: the daemon did not apply %s (%s); refusing to run without "
                            "it (the container was removed)", what, got);
}
