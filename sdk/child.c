/* sdk: a host process's child, before execve (cordon/sdk/child.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include <cordon/sdk/child.h>
#include <cordon/sdk/runner.h>

/* The highest capability number of the running kernel. */
static int cap_last(void)
{
    char buf[16];
    ssize_t n;
    int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);

    if (fd >= 0) {
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n > 0) {
            buf[n] = '\0';
            n = strtol(buf, NULL, 10);
            if (n > 0 && n < 64)
                return (int)n;
        }
    }
    /* No /proc: ask the bounding set, which answers EINVAL past the last
     * capability the kernel knows. */
    for (int cap = 63; cap > 0; cap--) {
        if (prctl(PR_CAPBSET_READ, (unsigned long)cap, 0UL, 0UL, 0UL) >= 0)
            return cap;
        if (errno != EINVAL)
            break;
    }
    /* Nothing usable: the headers' number. The child drops every number up
     * to 63 whatever this says; it only decides which refusals of that drop
     * may be ignored. */
    return CAP_LAST_CAP;
}

static void add_limit(struct cordon_child_plan *plan, int resource, uint64_t value)
{
    if (plan->n_limits < CORDON_CHILD_LIMITS_MAX) {
        plan->limits[plan->n_limits].resource = resource;
        plan->limits[plan->n_limits++].value = value;
    }
}

void cordon_child_plan_init(struct cordon_child_plan *plan, const struct cordon_limits *limits,
                            bool switch_user, uid_t uid, gid_t gid)
{
    uint64_t cpu_s = limits->runtime_ms / 1000 + (limits->runtime_ms % 1000 != 0) + 1;

    memset(plan, 0, sizeof(*plan));
    add_limit(plan, RLIMIT_DATA, limits->memory_bytes);
    add_limit(plan, RLIMIT_FSIZE, limits->disk_bytes);
    add_limit(plan, RLIMIT_CPU, cpu_s);
    add_limit(plan, RLIMIT_CORE, 0);
    add_limit(plan, RLIMIT_NOFILE, 1024);
    add_limit(plan, RLIMIT_STACK, 8u << 20);
    /* RLIMIT_NPROC counts every process of the real uid: a pids limit only
     * for a uid of the execution's own, never for the caller's. */
    if (switch_user)
        add_limit(plan, RLIMIT_NPROC, limits->pids);
    plan->switch_user = switch_user;
    plan->uid = uid;
    plan->gid = gid;
    plan->parent = getpid();
    plan->cap_last = cap_last();
}

CORDON_RUNNER_CHILD int cordon_child_become(uid_t uid, gid_t gid)
{
    /* Where the 32-bit calls exist, the plain ones take 16-bit ids. */
#ifdef SYS_setresuid32
    if (syscall(SYS_setgroups32, 0, NULL) != 0 || syscall(SYS_setresgid32, gid, gid, gid) != 0 ||
        syscall(SYS_setresuid32, uid, uid, uid) != 0)
        return -1;
#else
    if (syscall(SYS_setgroups, 0, NULL) != 0 || syscall(SYS_setresgid, gid, gid, gid) != 0 ||
        syscall(SYS_setresuid, uid, uid, uid) != 0)
        return -1;
#endif
    return 0;
}

/*
 * Raw syscalls only: this runs between fork and execve of a possibly
 * threaded host, and they touch only this task's credentials, without
 * glibc's all-threads setxid machinery.
 */
CORDON_RUNNER_CHILD int cordon_child_plan_apply(const struct cordon_child_plan *plan)
{
    struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[2] = { { 0, 0, 0 }, { 0, 0, 0 } };

    for (uint32_t i = 0; i < plan->n_limits && i < CORDON_CHILD_LIMITS_MAX; i++) {
        struct rlimit old, set;
        rlim_t v = (rlim_t)plan->limits[i].value;

        if (syscall(SYS_prlimit64, 0, plan->limits[i].resource, NULL, &old) != 0)
            return errno;
        /* Without privilege a hard limit can only go down. */
        if (!plan->switch_user && old.rlim_max != RLIM_INFINITY && v > old.rlim_max)
            v = old.rlim_max;
        set.rlim_cur = set.rlim_max = v;
        if (syscall(SYS_prlimit64, 0, plan->limits[i].resource, &set, NULL) != 0)
            return errno;
    }
    if (plan->switch_user) {
        /* Every number a capability can have, so that a kernel newer than
         * cap_last says is still emptied; EINVAL (no such capability) is
         * accepted only past cap_last, so that a filter answering EINVAL
         * to prctl cannot leave the set as it was. */
        for (int i = 0; i < 64; i++)
            if (syscall(SYS_prctl, PR_CAPBSET_DROP, (unsigned long)i, 0UL, 0UL, 0UL) != 0 &&
                (errno != EINVAL || i <= plan->cap_last))
                return errno;
        if (cordon_child_become(plan->uid, plan->gid) != 0)
            return errno;
    }
    /* Die with the process that started us: without it a kill -9 of the
     * host while the child was still being set up (as root) left a child
     * that went on to exec after its uid was swept. Set after the uid
     * change, which clears it; a parent already gone is caught by getppid. */
    if (syscall(SYS_prctl, PR_SET_PDEATHSIG, (unsigned long)SIGKILL, 0UL, 0UL, 0UL) != 0)
        return errno;
    if ((pid_t)syscall(SYS_getppid) != plan->parent)
        return ESRCH;
    /* Ambient and inheritable sets survive a uid change; empty them too. */
    if (syscall(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0UL, 0UL, 0UL) != 0 &&
        errno != EINVAL)
        return errno;
    if (syscall(SYS_capset, &hdr, data) != 0 ||
        syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL) != 0)
        return errno;
    return 0;
}
