/*
 * runc provider: the seccomp profile we ship, as the OCI linux.seccomp
 * object that the runtime compiles ("Seccomp profile" in
 * cordon-provider-runc(7)).
 *
 * A deny-list over an allowing default, in the spirit of Docker's default
 * profile: what sandboxed code has no business calling is answered with
 * EPERM, a new user namespace through clone too, and clone3 with ENOSYS so
 * that libc falls back to clone, whose flags a filter can read. No
 * "architectures" list: the runtime then filters the native ABI only and
 * kills a process that enters through another one (i386, x32), so the
 * numbers behind the names cannot be dodged.
 *
 * The rules are data (rules[] below, then the sdk's socket-family
 * allow-list, cordon/sdk/sandbox.h), walked by two builders: the JSON
 * profile the runtime compiles into the container's init, and the same
 * filter compiled here with libseccomp for processes the provider starts
 * in the container itself (exec.c): both go through the same library, in
 * the same order, so the two filters are the same program.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <seccomp.h>

#include <cordon/sdk/sandbox.h>
#include "plugins/common/scmp.h"
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

/* clone with CLONE_NEWUSER in its flags; clone3 keeps its flags in memory
 * the filter cannot read, so it answers ENOSYS and libc falls back. */
static const char *const clone_names[] = { "clone" };
static const char *const clone3_names[] = { "clone3" };
/* A file lease makes every later open of the file by anyone, the host's
 * export included, wait the kernel's lease-break time: F_SETLEASE is
 * refused whatever the lease type. */
static const char *const fcntl_names[] = { "fcntl", "fcntl64" };
/* Another process's resource limits: PID 1 (the init, the agent) shares
 * the sandbox's uid, which is all prlimit asks of a caller, and a limit of
 * 0 pending signals or 4 descriptors stops it from serving, or makes a
 * signal from inside look sent from outside. Only pid 0 (the caller) is
 * let through; getrlimit and setrlimit act on the caller alone. */
static const char *const prlimit_names[] = { "prlimit64" };

/* s390 passes clone's flags second. */
#if defined(__s390__) || defined(__s390x__)
#define CLONE_FLAGS_ARG 1
#else
#define CLONE_FLAGS_ARG 0
#endif
#ifndef F_SETLEASE
#define F_SETLEASE 1024
#endif
/* The kernel reads fcntl's cmd as 32 bits: compare only those, so that
 * high bits set in the register cannot slip a lease past the rule. */
#define CMD_MASK 0xffffffffull

/* One rule of the profile: names refused with errno_ret; when masked,
 * only calls whose argument arg has (value & mask) == match; when
 * nonzero, only calls whose argument arg is not 0. */
struct rule {
    const char *const *names;
    size_t count;
    int errno_ret;
    bool masked;
    bool nonzero;
    unsigned arg;
    uint64_t mask, match;
    bool required;               /* the profile is refused if none resolves */
};

static const struct rule rules[] = {
    { denied, COUNT(denied), EPERM, false, false, 0, 0, 0, true },
    { clone_names, COUNT(clone_names), EPERM, true, false, CLONE_FLAGS_ARG, CLONE_NEWUSER,
      CLONE_NEWUSER, false },
    { clone3_names, COUNT(clone3_names), ENOSYS, false, false, 0, 0, 0, false },
    { fcntl_names, COUNT(fcntl_names), EPERM, true, false, 1, CMD_MASK, F_SETLEASE, true },
    { prlimit_names, COUNT(prlimit_names), EPERM, false, true, 0, 0, 0, true },
};

static int none_resolved(struct cordon_error *err)
{
    return cordon_error_set(err, CORDON_E_UNSUPPORTED, 0,
                            "seccomp profile: libseccomp resolves none of the %zu denied "
                            "syscalls on this architecture", COUNT(denied));
}

/* {"names": [...], "action": "SCMP_ACT_ERRNO", "errnoRet": N, "args": [...]}. */
static cJSON *json_rule(const struct rule *ru)
{
    cJSON *rule = cJSON_CreateObject(), *names, *args, *arg;

    if (rule == NULL || (names = cJSON_AddArrayToObject(rule, "names")) == NULL ||
        cJSON_AddStringToObject(rule, "action", "SCMP_ACT_ERRNO") == NULL ||
        cJSON_AddNumberToObject(rule, "errnoRet", ru->errno_ret) == NULL)
        goto nomem;
    /* The runtime refuses a name it cannot resolve: keep only this arch's. */
    for (size_t i = 0; i < ru->count; i++)
        if (seccomp_syscall_resolve_name(ru->names[i]) >= 0 &&
            !cJSON_AddItemToArray(names, cJSON_CreateString(ru->names[i])))
            goto nomem;
    if (!ru->masked && !ru->nonzero)
        return rule;
    /* OCI's SCMP_CMP_MASKED_EQ: value is the mask, valueTwo the datum. */
    if ((args = cJSON_AddArrayToObject(rule, "args")) == NULL ||
        (arg = cJSON_CreateObject()) == NULL || !cJSON_AddItemToArray(args, arg) ||
        cJSON_AddNumberToObject(arg, "index", ru->arg) == NULL ||
        cJSON_AddNumberToObject(arg, "value", ru->nonzero ? 0 : (double)ru->mask) == NULL ||
        (!ru->nonzero && cJSON_AddNumberToObject(arg, "valueTwo", (double)ru->match) == NULL) ||
        cJSON_AddStringToObject(arg, "op", ru->nonzero ? "SCMP_CMP_NE" : "SCMP_CMP_MASKED_EQ") ==
            NULL)
        goto nomem;
    return rule;
nomem:
    cJSON_Delete(rule);
    return NULL;
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
    cJSON *profile = cJSON_CreateObject(), *syscalls, *rule;
    int rc;

    if (profile == NULL ||
        cJSON_AddStringToObject(profile, "defaultAction", "SCMP_ACT_ALLOW") == NULL ||
        (syscalls = cJSON_AddArrayToObject(profile, "syscalls")) == NULL)
        goto nomem;
    for (size_t r = 0; r < COUNT(rules); r++) {
        int kept;

        if ((rule = json_rule(&rules[r])) == NULL)
            goto nomem;
        kept = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(rule, "names"));
        if (kept == 0) {
            cJSON_Delete(rule);
            if (!rules[r].required)
                continue;
            cJSON_Delete(profile);
            return none_resolved(err);
        }
        if (!cJSON_AddItemToArray(syscalls, rule)) {
            cJSON_Delete(rule);
            goto nomem;
        }
    }
    /* Network "none" means no family reaches outside: the allow-list. */
    if ((rc = cordon_socket_rules_oci(syscalls, err)) < 0) {
        cJSON_Delete(profile);
        return rc;
    }
    *ret = profile;
    return 0;
nomem:
    cJSON_Delete(profile);
    return runc__nomem(err, "seccomp profile");
}

void runc__seccomp_bpf_clear(struct sock_fprog *bpf)
{
    free(bpf->filter);
    memset(bpf, 0, sizeof(*bpf));
}

/*
 * The filter the runtime builds from runc__seccomp_profile, built the way
 * it builds it: an allowing default, this architecture only (libseccomp
 * kills a call through another ABI), one rule_add per resolvable name in
 * the profile's order, no_new_privs left to the caller.
 */
int runc__seccomp_bpf(struct sock_fprog *ret, struct cordon_error *err)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    struct sock_fprog bpf = { 0 };
    int r = 0, rc = 0;

    if (ctx == NULL)
        return runc__nomem(err, "seccomp profile");
    rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
    for (size_t i = 0; i < COUNT(rules) && rc == 0; i++) {
        const struct rule *ru = &rules[i];
        size_t kept = 0;

        for (size_t k = 0; k < ru->count && rc == 0; k++) {
            int nr = seccomp_syscall_resolve_name(ru->names[k]);

            if (nr < 0)
                continue;
            kept++;
            if (ru->masked)
                rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO((unsigned)ru->errno_ret), nr, 1,
                                      SCMP_CMP(ru->arg, SCMP_CMP_MASKED_EQ, ru->mask, ru->match));
            else if (ru->nonzero)
                rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO((unsigned)ru->errno_ret), nr, 1,
                                      SCMP_CMP(ru->arg, SCMP_CMP_NE, 0));
            else
                rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO((unsigned)ru->errno_ret), nr, 0);
        }
        if (rc == 0 && kept == 0 && ru->required)
            r = none_resolved(err);
        if (r < 0)
            break;
    }
    if (r == 0 && rc == 0)
        rc = scmp__socket_rules(ctx);
    if (r == 0 && rc != 0)
        r = cordon_error_set(err, CORDON_E_PROVIDER, -rc, "seccomp: building the filter: %s",
                             strerror(-rc));
    if (r == 0 && (r = scmp__export(ctx, &bpf, err)) == 0)
        *ret = bpf;
    seccomp_release(ctx);
    return r;
}

struct runc_bpf_cache {
    pthread_mutex_t lock;
    bool built;
    struct sock_fprog prog;
};

int runc__bpf_cache_new(struct runc_bpf_cache **ret, struct cordon_error *err)
{
    struct runc_bpf_cache *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return runc__nomem(err, "seccomp profile");
    pthread_mutex_init(&c->lock, NULL);
    *ret = c;
    return 0;
}

void runc__bpf_cache_free(struct runc_bpf_cache *c)
{
    if (c == NULL)
        return;
    runc__seccomp_bpf_clear(&c->prog);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

int runc__bpf_cache_get(struct runc_bpf_cache *c, struct sock_fprog *ret,
                        struct cordon_error *err)
{
    int r = 0;

    pthread_mutex_lock(&c->lock);
    if (!c->built && (r = runc__seccomp_bpf(&c->prog, err)) == 0)
        c->built = true;
    if (r == 0)
        *ret = c->prog;
    pthread_mutex_unlock(&c->lock);
    return r;
}
