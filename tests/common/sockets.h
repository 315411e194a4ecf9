/* Test helper shared by the mechanism suites: which socket families a sandbox can create. */
#ifndef CORDON_TEST_COMMON_SOCKETS_H
#define CORDON_TEST_COMMON_SOCKETS_H

/*
 * A shell script for a sandbox with a C compiler: builds ./sockets in the
 * working directory and runs it. It prints one line "NAME ok 0" or "NAME
 * refused ERRNO" per attempt, then "ifaces" and the interface names that
 * if_nameindex (netlink, NETLINK_ROUTE) lists.
 *
 * Without the allow-list of cordon/sdk/sandbox.h, on this kind of machine
 * (a VM with vsock): vsock, vsock_high and netlink_uevent are "ok",
 * pair_vsock answers EOPNOTSUPP and packet EPERM (no CAP_NET_RAW). With it
 * they answer EAFNOSUPPORT (97), netlink_uevent EPROTONOSUPPORT (93), and
 * the first five lines stay "ok".
 */
#define TEST_SOCKETS_SCRIPT                                                                    \
    "cat > sockets.c <<'EOF'\n"                                                                \
    "#define _GNU_SOURCE\n"                                                                    \
    "#include <errno.h>\n#include <net/if.h>\n#include <stdio.h>\n#include <sys/socket.h>\n"  \
    "#include <sys/syscall.h>\n#include <unistd.h>\n#include <linux/netlink.h>\n"             \
    "static void show(const char *name, long fd)\n"                                           \
    "{ printf(\"%s %s %d\\n\", name, fd >= 0 ? \"ok\" : \"refused\", fd >= 0 ? 0 : errno);\n" \
    "  if (fd >= 0) close((int)fd); errno = 0; }\n"                                            \
    "static long pair(int family)\n"                                                          \
    "{ int sv[2]; if (socketpair(family, SOCK_STREAM, 0, sv) != 0) return -1;\n"             \
    "  close(sv[1]); return sv[0]; }\n"                                                        \
    "int main(void) {\n"                                                                       \
    "  struct if_nameindex *ifs, *i;\n"                                                        \
    "  show(\"unix\", socket(AF_UNIX, SOCK_STREAM, 0));\n"                                    \
    "  show(\"inet\", socket(AF_INET, SOCK_DGRAM, 0));\n"                                     \
    "  show(\"inet6\", socket(AF_INET6, SOCK_DGRAM, 0));\n"                                   \
    "  show(\"netlink_route\", socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE));\n"               \
    "  show(\"pair_unix\", pair(AF_UNIX));\n"                                                 \
    "  show(\"vsock\", socket(AF_VSOCK, SOCK_STREAM, 0));\n"                                  \
    "  show(\"vsock_high\", syscall(SYS_socket, (1L << 32) | AF_VSOCK, SOCK_STREAM, 0));\n"   \
    "  show(\"pair_vsock\", pair(AF_VSOCK));\n"                                               \
    "  show(\"packet\", socket(AF_PACKET, SOCK_DGRAM, 0));\n"                                 \
    "  show(\"netlink_uevent\", socket(AF_NETLINK, SOCK_DGRAM, NETLINK_KOBJECT_UEVENT));\n"   \
    "  ifs = if_nameindex();\n"                                                                \
    "  printf(\"ifaces\");\n"                                                                  \
    "  for (i = ifs; i != NULL && i->if_index != 0; i++) printf(\" %s\", i->if_name);\n"      \
    "  printf(\"\\n\");\n"                                                                     \
    "  return 0;\n"                                                                            \
    "}\n"                                                                                      \
    "EOF\n"                                                                                    \
    "cc -o sockets sockets.c && ./sockets"

/* What the allowed families print, and what the refused ones must. */
#define TEST_SOCKETS_ALLOWED                                                                   \
    "unix ok 0\ninet ok 0\ninet6 ok 0\nnetlink_route ok 0\npair_unix ok 0\n"
#define TEST_SOCKETS_REFUSED                                                                   \
    "vsock refused 97\nvsock_high refused 97\npair_vsock refused 97\npacket refused 97\n"      \
    "netlink_uevent refused 93\n"

#endif
