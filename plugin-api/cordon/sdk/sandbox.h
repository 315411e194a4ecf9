/*
 * sdk: what every sandbox of cordon's container providers gets alike, kept
 * in one place so that runc and docker (and trusted-local, where it
 * applies) cannot drift apart:
 *
 * - one disk budget: disk_bytes is split once across the sandbox's
 *   writable tmpfs mounts (/workspace, /tmp, /dev/shm), so that all of
 *   them together hold at most disk_bytes;
 * - the socket families a sandbox may create: an allow-list, written as
 *   seccomp rules for socket(2) and socketpair(2).
 *
 * Including this header needs cJSON's.
 */
#ifndef CORDON_SDK_SANDBOX_H
#define CORDON_SDK_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include <cordon/provider.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- one disk budget ---------------------------------------------------- */

/* The smallest disk_bytes a sandbox can be split from (the host's own
 * lower bound for disk_bytes too). */
#define CORDON_DISK_MIN_BYTES (1ull << 20)
/* /dev/shm never gets more than this (docker's own default size). */
#define CORDON_DISK_SHM_MAX_BYTES (64ull << 20)

struct cordon_disk_split {
    uint64_t workspace_bytes;  /* the /workspace tmpfs: what is left */
    uint64_t tmp_bytes;        /* /tmp: an eighth */
    uint64_t shm_bytes;        /* /dev/shm: a sixteenth, at most 64 MiB */
};

/*
 * Split disk_bytes into the sizes of the sandbox's writable tmpfs mounts.
 * /tmp gets disk_bytes / 8, /dev/shm disk_bytes / 16 but at most
 * CORDON_DISK_SHM_MAX_BYTES, /workspace the rest. Each part is rounded
 * down to whole pages of this machine: the kernel rounds a tmpfs size up
 * to a page, so sizes that are whole pages add up to at most disk_bytes.
 * CORDON_E_INVALID naming field (e.g. "resources.disk_bytes") and the
 * minimum when disk_bytes is below CORDON_DISK_MIN_BYTES.
 */
CORDON_EXTERN int cordon_disk_split(const char *field, uint64_t disk_bytes,
                                    struct cordon_disk_split *ret, struct cordon_error *err);

/* ---- socket families ---------------------------------------------------- */

/*
 * A sandbox may create sockets of AF_UNIX, AF_INET and AF_INET6 (an empty
 * network namespace leaves those nothing but loopback) and AF_NETLINK with
 * protocol NETLINK_ROUTE (getifaddrs, if_nameindex, `ip`, the interface
 * lists of Go and Node ask it; in an empty namespace it only knows lo).
 * Every other family fails with EAFNOSUPPORT, as on a kernel built without
 * it: AF_VSOCK would reach the hypervisor's host, AF_PACKET and AF_XDP the
 * link layer, bluetooth, CAN or NFC the machine's hardware, and any family
 * a future kernel adds is refused before anyone has looked at it. Other
 * netlink protocols fail with EPROTONOSUPPORT: NETLINK_KOBJECT_UEVENT
 * would hand the sandbox the host's device events, and the rest (sock_diag,
 * netfilter, audit, generic netlink...) is kernel surface a sandbox has no
 * use for.
 *
 * The policy is a list of seccomp rules, each refusing socket (and, when
 * socketpair is set, socketpair) with errno_ret when every comparison of
 * its arguments holds. The families are compared as the whole 64-bit
 * register: a value with bits above 31 set is refused by the "family >="
 * rule whatever its low bits, so high bits cannot dress up a refused
 * family as an allowed one.
 */
enum cordon_seccomp_op {
    CORDON_SECCOMP_EQ,
    CORDON_SECCOMP_NE,
    CORDON_SECCOMP_GE,
};

struct cordon_seccomp_arg {
    unsigned index;            /* the syscall argument, 0-based */
    enum cordon_seccomp_op op;
    uint64_t value;
};

#define CORDON_SOCKET_RULE_ARGS 2
#define CORDON_SOCKET_RULES_MAX 32

struct cordon_socket_rule {
    bool socketpair;           /* socketpair is refused too, not only socket */
    int errno_ret;
    unsigned nargs;
    struct cordon_seccomp_arg args[CORDON_SOCKET_RULE_ARGS];
};

/* The families the policy allows (AF_UNIX, AF_INET, AF_INET6, AF_NETLINK),
 * *ret_count of them; static storage. */
CORDON_EXTERN const int *cordon_socket_families_allowed(size_t *ret_count);

/* The rules, in order, into out (room for max, CORDON_SOCKET_RULES_MAX is
 * enough); returns how many, or 0 when max is too small. */
CORDON_EXTERN size_t cordon_socket_rules(struct cordon_socket_rule *out, size_t max);

/* "SCMP_CMP_EQ", "SCMP_CMP_NE", "SCMP_CMP_GE": the op as OCI and docker
 * seccomp profiles name it. */
CORDON_EXTERN const char *cordon_seccomp_op_name(enum cordon_seccomp_op op);

/*
 * Append the rules to the "syscalls" array of an OCI (or docker) seccomp
 * profile, one {"names", "action": "SCMP_ACT_ERRNO", "errnoRet", "args"}
 * object each. Rules with several comparisons use distinct argument
 * indexes: runtimes AND those, where they would OR repeated ones.
 * CORDON_E_NOMEM when out of memory (syscalls may then hold some rules).
 */
CORDON_EXTERN int cordon_socket_rules_oci(cJSON *syscalls, struct cordon_error *err);

#ifdef __cplusplus
}
#endif
#endif
