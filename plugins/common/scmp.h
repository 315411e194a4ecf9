/*
 * What the providers that build a seccomp filter with libseccomp share:
 * runc's filter for the commands it starts itself, the deny-list
 * trusted-local applies to every command and bubblewrap hands to bwrap.
 * Compiled into each of them; not part of libcordon-sdk, which does not
 * link libseccomp (the rules themselves are the sdk's: cordon_socket_rules,
 * <cordon/sdk/sandbox.h>).
 */
#ifndef CORDON_PLUGINS_COMMON_SCMP_H
#define CORDON_PLUGINS_COMMON_SCMP_H

#include <linux/filter.h>
#include <seccomp.h>
#include <cordon/provider.h>

/* The sdk's socket rules added to ctx: socket, and socketpair where a
 * rule says so, each refusing with its errno. 0 or -errno. */
int scmp__socket_rules(scmp_filter_ctx ctx);

/* ctx as classic BPF (libseccomp 2.5 writes it to an fd only): at most
 * BPF_MAXINSNS instructions; ret->filter is malloc'd. */
int scmp__export(scmp_filter_ctx ctx, struct sock_fprog *ret, struct cordon_error *err);

/*
 * The deny-list of a command that runs as a host process (trusted-local)
 * or under bwrap (bubblewrap): keyrings, bpf, mounts, modules, kexec,
 * ptrace, io_uring, namespaces (also clone with CLONE_NEWUSER; clone3
 * ENOSYS), file leases and the socket families of cordon_socket_rules
 * refused, other ABIs killed. Built with libseccomp in the parent, kept as
 * raw BPF (ret->filter malloc'd), so that a child needs only
 * prctl(PR_SET_SECCOMP) or bwrap reads it from an fd.
 */
int scmp__host_filter(struct sock_fprog *ret, struct cordon_error *err);

#endif
