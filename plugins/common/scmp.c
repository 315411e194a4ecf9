/* Providers' libseccomp glue (see plugins/common/scmp.h). */
#include <errno.h>
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
