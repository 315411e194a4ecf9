/*
 * cordon-observe: the system calls and socket families a sandbox should
 * refuse, each tried once and undone at once: keyctl, bpf, mount,
 * unshare(CLONE_NEWUSER), io_uring_setup, a file lease, and sockets of
 * the families that reach past a network namespace.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/netlink.h>

#include "inside/observer.h"

#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif
/* Families an older libc may not name; the numbers are the kernel's. */
#ifndef AF_RDS
#define AF_RDS 21
#endif
#ifndef AF_CAN
#define AF_CAN 29
#endif
#ifndef AF_BLUETOOTH
#define AF_BLUETOOTH 31
#endif
#ifndef AF_NFC
#define AF_NFC 39
#endif
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef AF_QIPCRTR
#define AF_QIPCRTR 42
#endif
#ifndef AF_XDP
#define AF_XDP 44
#endif

/* A filter or a missing capability answers EPERM/EACCES/ENOSYS; any other
 * errno means the kernel got as far as the syscall's own argument checks. */
static const char *syscall_verdict(long rc, int e)
{
    if (rc >= 0)
        return "ok";
    if (e == EPERM || e == EACCES || e == ENOSYS)
        return "refused";
    return "reachable";
}

static void jw_syscall(struct cordon__jw *w, const char *name, const char *result, int e)
{
    cordon__jw_open(w, NULL, '{');
    cordon__jw_string(w, "name", name);
    cordon__jw_string(w, "result", result);
    cordon__jw_errno(w, e);
    cordon__jw_close(w, '}');
}

static void try_keyctl(struct cordon__jw *w)
{
    long rc = syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
    int e = rc < 0 ? errno : 0;

    jw_syscall(w, "keyctl", syscall_verdict(rc, e), e);
}

static void try_bpf(struct cordon__jw *w)
{
    union bpf_attr attr;
    long rc;
    int e;

    memset(&attr, 0, sizeof(attr));
    rc = syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
    e = rc < 0 ? errno : 0;
    if (rc >= 0)
        close((int)rc);
    jw_syscall(w, "bpf", syscall_verdict(rc, e), e);
}

/* mount a tmpfs on a directory of our own; undone at once if it worked. */
static void try_mount(struct cordon__jw *w)
{
    char dir[PATH_MAX] = "/tmp/.cordon-observe-mnt-XXXXXX";
    bool made = mkdtemp(dir) != NULL;
    long rc;
    int e;

    if (!made) {
        snprintf(dir, sizeof(dir), ".cordon-observe-mnt-XXXXXX");
        made = mkdtemp(dir) != NULL;
    }
    if (!made) {
        /* A path that does not exist still tells a filter (EPERM) from the
         * kernel's lookup (ENOENT); never fall back to an existing path. */
        cordon__note_error("syscalls.mount: no writable directory for a mount point; "
                           "used a missing path");
        snprintf(dir, sizeof(dir), "/.cordon-observe-missing-%ld", (long)getpid());
    }
    rc = syscall(SYS_mount, "none", dir, "tmpfs", 0UL, "size=4k");
    e = rc < 0 ? errno : 0;
    if (rc == 0 && umount2(dir, MNT_DETACH) != 0)
        cordon__note_error("syscalls.mount: mounted %s but cannot unmount it: %s", dir,
                           strerror(errno));
    if (made && rmdir(dir) != 0)
        cordon__note_error("syscalls.mount: cannot remove %s: %s", dir, strerror(errno));
    jw_syscall(w, "mount", syscall_verdict(rc, e), e);
}

/* unshare changes the caller, so a child tries it and exits with its errno. */
static void try_unshare_user(struct cordon__jw *w)
{
    int status;
    pid_t pid = fork();

    if (pid == 0) {
        long rc = syscall(SYS_unshare, CLONE_NEWUSER);

        _exit(rc == 0 ? 0 : (errno > 0 && errno < 255 ? errno : 255));
    }
    if (pid < 0) {
        int e = errno;

        cordon__note_error("syscalls.unshare_user: fork failed: %s", strerror(e));
        jw_syscall(w, "unshare_user", "untested", e);
        return;
    }
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            cordon__note_error("syscalls.unshare_user: waitpid failed: %s", strerror(errno));
            jw_syscall(w, "unshare_user", "untested", errno);
            return;
        }
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) == 255) {
        cordon__note_error("syscalls.unshare_user: the child did not report an errno (status %d)",
                           status);
        jw_syscall(w, "unshare_user", "untested", 0);
        return;
    }
    jw_syscall(w, "unshare_user", syscall_verdict(WEXITSTATUS(status) == 0 ? 0 : -1,
                                                  WEXITSTATUS(status)),
               WEXITSTATUS(status));
}

static void try_io_uring(struct cordon__jw *w)
{
    struct io_uring_params params;
    long rc;
    int e;

    memset(&params, 0, sizeof(params));
    rc = syscall(SYS_io_uring_setup, 1, &params);
    e = rc < 0 ? errno : 0;
    if (rc >= 0)
        close((int)rc);
    jw_syscall(w, "io_uring_setup", syscall_verdict(rc, e), e);
}

/*
 * A write lease on a file of our own. A lease makes every other open of
 * the file (the host's export or checkpoint reading the workspace) wait
 * the kernel's lease-break time, 45 s by default, so a sandbox must not
 * be able to take one. The file is made in the working directory (the
 * workspace the host reads), else in /tmp, reopened read-only so that no
 * other descriptor of it is open, and removed again; a lease that was
 * granted is released at once. EINVAL counts as refused: the kernel or
 * filesystem (gVisor's) has no leases to grant.
 */
static void try_lease(struct cordon__jw *w)
{
    char path[PATH_MAX] = ".cordon-observe-lease-XXXXXX";
    int fd = mkstemp(path), e;
    long rc;

    if (fd < 0) {
        snprintf(path, sizeof(path), "/tmp/.cordon-observe-lease-XXXXXX");
        fd = mkstemp(path);
    }
    if (fd < 0) {
        e = errno;
        cordon__note_error("syscalls.file_lease: no writable directory for a file: %s", strerror(e));
        jw_syscall(w, "file_lease", "untested", e);
        return;
    }
    close(fd);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    e = errno;
    if (unlink(path) != 0)
        cordon__note_error("syscalls.file_lease: cannot remove %s: %s", path, strerror(errno));
    if (fd < 0) {
        cordon__note_error("syscalls.file_lease: cannot reopen %s: %s", path, strerror(e));
        jw_syscall(w, "file_lease", "untested", e);
        return;
    }
    rc = fcntl(fd, F_SETLEASE, F_WRLCK);
    e = rc < 0 ? errno : 0;
    if (rc == 0)
        fcntl(fd, F_SETLEASE, F_UNLCK);
    close(fd);
    jw_syscall(w, "file_lease", rc < 0 && e == EINVAL ? "refused" : syscall_verdict(rc, e), e);
}

void cordon__observe_syscalls(struct cordon__jw *w)
{
    cordon__jw_open(w, "syscalls", '[');
    try_keyctl(w);
    try_bpf(w);
    try_mount(w);
    try_unshare_user(w);
    try_io_uring(w);
    try_lease(w);
    cordon__jw_close(w, ']');
}

/*
 * Sockets of the families that reach past a network namespace: the
 * hypervisor's host (vsock), the link layer (packet, xdp), the machine's
 * hardware (bluetooth, can, nfc, a modem's qipcrtr, rds over InfiniBand),
 * and the host's device events (a netlink uevent socket). Each is only
 * created and closed at once, with a type and protocol the family accepts,
 * so that an error is the family's refusal and not a wrong argument. On a
 * kernel with nothing to refuse them, creating one may load its module.
 */
void cordon__observe_sockets(struct cordon__jw *w)
{
    static const struct {
        const char *name;
        int family, type, protocol;
    } tries[] = {
        { "vsock", AF_VSOCK, SOCK_STREAM, 0 },
        { "packet", AF_PACKET, SOCK_DGRAM, 0 },
        { "xdp", AF_XDP, SOCK_RAW, 0 },
        { "bluetooth", AF_BLUETOOTH, SOCK_SEQPACKET, 0 },   /* BTPROTO_L2CAP */
        { "can", AF_CAN, SOCK_RAW, 1 },                     /* CAN_RAW */
        { "nfc", AF_NFC, SOCK_SEQPACKET, 1 },               /* NFC_SOCKPROTO_LLCP */
        { "qipcrtr", AF_QIPCRTR, SOCK_DGRAM, 0 },
        { "rds", AF_RDS, SOCK_SEQPACKET, 0 },
        { "netlink_uevent", AF_NETLINK, SOCK_DGRAM, NETLINK_KOBJECT_UEVENT },
    };

    cordon__jw_open(w, "sockets", '[');
    for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
        long fd = syscall(SYS_socket, tries[i].family, tries[i].type | SOCK_CLOEXEC,
                          tries[i].protocol);
        int e = fd < 0 ? errno : 0;

        if (fd >= 0)
            close((int)fd);
        cordon__jw_open(w, NULL, '{');
        cordon__jw_string(w, "name", tries[i].name);
        cordon__jw_int(w, "family", tries[i].family);
        cordon__jw_int(w, "protocol", tries[i].protocol);
        cordon__jw_bool(w, "created", fd >= 0);
        cordon__jw_errno(w, e);
        cordon__jw_close(w, '}');
    }
    cordon__jw_close(w, ']');
}
