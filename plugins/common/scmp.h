/*
 * What the providers that build a seccomp filter with libseccomp share:
 * runc's filter for the commands it starts itself, trusted-local's for
 * every command. Compiled into each of them; not part of libcordon-sdk,
 * which does not link libseccomp (the rules themselves are the sdk's:
 * cordon_socket_rules, <cordon/sdk/sandbox.h>).
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

#endif
