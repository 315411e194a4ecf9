/* Providers' libseccomp glue (see plugins/common/scmp.h). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cordon/sdk/sandbox.h>
#include "plugins/common/scmp.h"

static enum scmp_compare compare_of(enum cordon_seccomp_op op)
{
    switch (op) {
    case CORDON_SECCOMP_EQ:
        return SCMP_CMP_EQ;
    case CORDON_SECCOMP_NE:
        return SCMP_CMP_NE;
    case CORDON_SECCOMP_GE:
        return SCMP_CMP_GE;
    }
    return _SCMP_CMP_MIN;
}

int scmp__socket_rules(scmp_filter_ctx ctx)
{
    static const char *const names[] = { "socket", "socketpair" };
    struct cordon_socket_rule sr[CORDON_SOCKET_RULES_MAX];
    size_t n = cordon_socket_rules(sr, sizeof(sr) / sizeof(sr[0]));
    int rc = n > 0 ? 0 : -E2BIG;

    for (size_t i = 0; i < n && rc == 0; i++) {
        struct scmp_arg_cmp cmp[CORDON_SOCKET_RULE_ARGS];

        for (unsigned k = 0; k < sr[i].nargs; k++)
            cmp[k] = (struct scmp_arg_cmp){ sr[i].args[k].index, compare_of(sr[i].args[k].op),
                                            sr[i].args[k].value, 0 };
        for (size_t k = 0; k < (sr[i].socketpair ? 2u : 1u) && rc == 0; k++) {
            int nr = seccomp_syscall_resolve_name(names[k]);

            if (nr >= 0)
                rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO((unsigned)sr[i].errno_ret), nr,
                                            sr[i].nargs, cmp);
        }
    }
    return rc;
}

int scmp__export(scmp_filter_ctx ctx, struct sock_fprog *ret, struct cordon_error *err)
{
    struct sock_filter *buf = NULL;
    struct stat st;
    size_t got = 0;
    int fd = memfd_create("cordon-seccomp", MFD_CLOEXEC), rc, r = 0;

    if (fd < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "seccomp: memfd_create: %s",
                                strerror(errno));
    rc = seccomp_export_bpf(ctx, fd);
    if (rc < 0)
        r = cordon_error_set(err, CORDON_E_PROVIDER, -rc, "seccomp: export: %s", strerror(-rc));
    else if (fstat(fd, &st) != 0 || st.st_size <= 0 ||
             st.st_size % (off_t)sizeof(struct sock_filter) != 0 ||
             st.st_size / (off_t)sizeof(struct sock_filter) > BPF_MAXINSNS)
        r = cordon_error_set(err, CORDON_E_PROVIDER, 0,
                             "seccomp: the exported program has %lld bytes (at most %d "
                             "instructions)", (long long)st.st_size, BPF_MAXINSNS);
    else if ((buf = malloc((size_t)st.st_size)) == NULL)
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "seccomp: out of memory");
    while (r == 0 && got < (size_t)st.st_size) {
        ssize_t n = pread(fd, (char *)buf + got, (size_t)st.st_size - got, (off_t)got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            r = cordon_error_set(err, CORDON_E_IO, n < 0 ? errno : 0,
                                 "seccomp: reading the exported program back");
        else
            got += (size_t)n;
    }
    close(fd);
    if (r < 0) {
        free(buf);
        return r;
    }
    ret->len = (unsigned short)(st.st_size / (off_t)sizeof(struct sock_filter));
    ret->filter = buf;
    return 0;
}

/* What sandboxed code has no business calling: the kernel keyring, bpf,
 * mounts, modules, kexec, ptrace, io_uring, namespaces and a few more. */
static const char *const denied_syscalls[] = {
    "keyctl", "add_key", "request_key", "bpf", "mount", "umount2", "pivot_root", "chroot",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "ptrace", "process_vm_readv", "process_vm_writev",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "setns", "unshare", "perf_event_open", "userfaultfd", "swapon", "swapoff", "reboot",
    "acct", "open_by_handle_at", "name_to_handle_at",
};

int scmp__host_filter(struct sock_fprog *ret, struct cordon_error *err)
{
    scmp_filter_ctx ctx;
    size_t i;
    int rc, nr, r = 0;

    ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (ctx == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "seccomp: out of memory");
    /* Another ABI (i386, x32) would bypass the numbers below: kill it. The
     * default, killing the thread, remains where the kernel is too old. */
    seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    for (i = 0; i < sizeof(denied_syscalls) / sizeof(denied_syscalls[0]); i++) {
        /* Negative numbers are names this architecture does not have. */
        nr = seccomp_syscall_resolve_name(denied_syscalls[i]);
        if (nr < 0)
            continue;
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
        if (rc < 0) {
            r = cordon_error_set(err, CORDON_E_PROVIDER, -rc, "seccomp: rule for %s: %s",
                                 denied_syscalls[i], strerror(-rc));
            goto out;
        }
    }
    /* A new user namespace through clone; s390 passes the flags second. */
#if defined(__s390__) || defined(__s390x__)
    rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                          SCMP_A1(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
#else
    rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                          SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
#endif
    if (rc >= 0) {
        /* clone3 hides its flags in memory: ENOSYS makes libc fall back to clone. */
        nr = seccomp_syscall_resolve_name("clone3");
        if (nr >= 0)
            rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
    }
    /* prlimit64 on another process: PID 1 of a pid namespace (bwrap's
     * init, cordon-init) runs as the sandbox's uid, which is all prlimit
     * asks; its limits stay out of reach. pid 0 is the caller itself. */
    if (rc >= 0) {
        nr = seccomp_syscall_resolve_name("prlimit64");
        if (nr >= 0)
            rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, SCMP_A0(SCMP_CMP_NE, 0));
    }
    /* A file lease would make the host's export wait the lease-break time
     * (or fail): F_SETLEASE is refused, the low 32 bits of cmd compared, as
     * the kernel reads them. */
    for (i = 0; rc >= 0 && i < 2; i++) {
        nr = seccomp_syscall_resolve_name(i == 0 ? "fcntl" : "fcntl64");
        if (nr >= 0)
            rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
                                  SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffull, F_SETLEASE));
    }
    if (rc < 0) {
        r = cordon_error_set(err, CORDON_E_PROVIDER, -rc, "seccomp: clone and fcntl rules: %s",
                             strerror(-rc));
        goto out;
    }
    /* The sdk's socket-family allow-list, as docker and runc have it. The
     * network a command reaches is its namespace's (the host's under
     * trusted-local), but AF_VSOCK, AF_PACKET, netlink uevents and the rest are
     * refused: cheap, and no program of the documented kind needs them. */
    if ((rc = scmp__socket_rules(ctx)) < 0) {
        r = cordon_error_set(err, CORDON_E_PROVIDER, -rc, "seccomp: socket rules: %s",
                             strerror(-rc));
        goto out;
    }

    r = scmp__export(ctx, ret, err);
out:
    seccomp_release(ctx);
    return r;
}
