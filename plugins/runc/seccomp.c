/*
 * runc provider: the seccomp profile we ship, as the OCI linux.seccomp
 * object that the runtime compiles (DESIGN.md §7).
 *
 * A deny-list over an allowing default, in the spirit of Docker's default
 * profile: what sandboxed code has no business calling is answered with
 * EPERM, a new user namespace through clone too, and clone3 with ENOSYS so
 * that libc falls back to clone, whose flags a filter can read. No
 * "architectures" list: the runtime then filters the native ABI only and
 * kills a process that enters through another one (i386, x32), so the
 * numbers behind the names cannot be dodged.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include <seccomp.h>

#include "plugins/runc/runc.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Refused with EPERM. Names this architecture lacks are dropped. */
static const char *const denied[] = {
    /* kernel keyring, bpf, perf, userfaultfd: attack surface, no use here */
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    /* mounts and root changes (also the new mount API) */
    "mount", "umount2", "umount", "pivot_root", "chroot", "mount_setattr", "move_mount",
    "open_tree", "fsopen", "fsconfig", "fsmount", "fspick",
    /* kernel modules and kexec */
    "init_module", "finit_module", "delete_module", "create_module", "kexec_load",
    "kexec_file_load",
    /* other processes' memory */
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    /* io_uring: its own syscall path around this filter */
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    /* namespaces */
    "setns", "unshare",
    /* host-wide state */
    "swapon", "swapoff", "reboot", "acct", "settimeofday", "clock_settime", "clock_adjtime",
    "adjtimex", "stime", "syslog", "quotactl", "quotactl_fd", "nfsservctl", "lookup_dcookie",
    "fanotify_init", "iopl", "ioperm", "uselib", "_sysctl", "vm86", "vm86old",
    /* file handles bypass path checks */
    "open_by_handle_at", "name_to_handle_at",
};

static int nomem(struct cordon_error *err)
{
    return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "seccomp profile: out of memory");
}

/* A rule {"names": [...], "action": "SCMP_ACT_ERRNO", "errnoRet": errno_ret}. */
static cJSON *errno_rule(cJSON *syscalls, int errno_ret)
{
    cJSON *rule = cJSON_CreateObject();

    if (rule == NULL || !cJSON_AddItemToArray(syscalls, rule)) {
        cJSON_Delete(rule);
        return NULL;
    }
    if (cJSON_AddArrayToObject(rule, "names") == NULL ||
        cJSON_AddStringToObject(rule, "action", "SCMP_ACT_ERRNO") == NULL ||
        cJSON_AddNumberToObject(rule, "errnoRet", errno_ret) == NULL)
        return NULL;
    return rule;
}

static bool add_name(cJSON *rule, const char *name)
{
    return cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(rule, "names"),
                                cJSON_CreateString(name));
}

int runc__seccomp_denied_count(void)
{
    int n = 0;

    for (size_t i = 0; i < COUNT(denied); i++)
        n += seccomp_syscall_resolve_name(denied[i]) >= 0;
    return n;
}

int runc__seccomp_profile(cJSON **ret, struct cordon_error *err)
{
    cJSON *profile = cJSON_CreateObject(), *syscalls, *rule, *args, *arg;
    size_t kept = 0;

    if (profile == NULL ||
        cJSON_AddStringToObject(profile, "defaultAction", "SCMP_ACT_ALLOW") == NULL ||
        (syscalls = cJSON_AddArrayToObject(profile, "syscalls")) == NULL ||
        (rule = errno_rule(syscalls, EPERM)) == NULL)
        goto nomem;
    /* The runtime refuses a name it cannot resolve: keep only this arch's. */
    for (size_t i = 0; i < COUNT(denied); i++) {
        if (seccomp_syscall_resolve_name(denied[i]) < 0)
            continue;
        if (!add_name(rule, denied[i]))
            goto nomem;
        kept++;
    }
    if (kept == 0) {
        cJSON_Delete(profile);
        return cordon_error_set(err, CORDON_E_UNSUPPORTED, 0,
                                "seccomp profile: libseccomp resolves none of the %zu denied "
                                "syscalls on this architecture", COUNT(denied));
    }

    /* clone with CLONE_NEWUSER in its flags; s390 passes the flags second. */
    if ((rule = errno_rule(syscalls, EPERM)) == NULL || !add_name(rule, "clone") ||
        (args = cJSON_AddArrayToObject(rule, "args")) == NULL ||
        (arg = cJSON_CreateObject()) == NULL || !cJSON_AddItemToArray(args, arg))
        goto nomem;
#if defined(__s390__) || defined(__s390x__)
    if (cJSON_AddNumberToObject(arg, "index", 1) == NULL)
        goto nomem;
#else
    if (cJSON_AddNumberToObject(arg, "index", 0) == NULL)
        goto nomem;
#endif
    if (cJSON_AddNumberToObject(arg, "value", CLONE_NEWUSER) == NULL ||
        cJSON_AddNumberToObject(arg, "valueTwo", CLONE_NEWUSER) == NULL ||
        cJSON_AddStringToObject(arg, "op", "SCMP_CMP_MASKED_EQ") == NULL)
        goto nomem;

    /* clone3 keeps its flags in memory the filter cannot read. */
    if (seccomp_syscall_resolve_name("clone3") >= 0 &&
        ((rule = errno_rule(syscalls, ENOSYS)) == NULL || !add_name(rule, "clone3")))
        goto nomem;
    *ret = profile;
    return 0;
nomem:
    cJSON_Delete(profile);
    return nomem(err);
}
