/*
 * cordon-observe: reports, from inside a sandbox, what the sandbox lets a
 * process see and do. Linked statically so that it runs in any rootfs.
 *
 *   cordon-observe [--canary-path P --canary-token T]
 *                  [--host-pid N --host-pid-token T2] [--host-ns STR]
 *                  [--host-boot-id UUID]
 *   cordon-observe --idle TOKEN SECONDS
 *   cordon-observe --hold-lease FILE SECONDS
 *   cordon-observe --limits ... | --flood BYTES   (inside/observer-limits.c)
 *   cordon-observe --attack-pid1 HOST_PID_NS
 *
 * The first form prints one JSON object ("report_version": 1) on stdout and
 * exits 0; it never judges anything: the host compares the report with its
 * own view (core/observe/observe.c). The second form only sleeps; the host starts it
 * as its canary process, so that /proc/<pid>/cmdline names TOKEN. The
 * third plays a hostile program for the contract suite: it takes a write
 * lease on FILE (made if missing) with SIGIO ignored, prints "lease held"
 * or "lease refused ERRNO", and holds it SECONDS before it exits (at once
 * when refused). The fourth is another (inside/observer-reach.c): it goes
 * for PID 1 through its limits.
 * docs/observation.md describes every field. The JSON writer, the
 * process's privileges and the system calls tried are in inside/observer-*.c
 * (inside/observer.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "inside/observer.h"

#define REPORT_VERSION 1
#define MAX_ERRORS 64
#define MAX_FDS 256
#define MAX_IFACES 256
#define MAX_TOKEN 256
#define MAX_IDLE_SECONDS 86400L
#define BOOT_ID_MAX 64
#define KLOG_BYTES 4096
#define KLOG_LINE_MAX 200
/* The first line gVisor's Sentry writes to its own kernel log, at time 0
 * ("[   0.000000] Starting gVisor...", however wide the time is padded). */
#define GVISOR_KLOG_FIRST "0.000000] Starting gVisor..."

/* ---- what went wrong while observing ------------------------------------ */

static char g_errors[MAX_ERRORS][256];
static unsigned g_nerrors;

void cordon__note_error(const char *fmt, ...)
{
    va_list ap;

    if (g_nerrors >= MAX_ERRORS)
        return;
    va_start(ap, fmt);
    vsnprintf(g_errors[g_nerrors++], sizeof(g_errors[0]), fmt, ap);
    va_end(ap);
}

static void random_hex(char *out, size_t nbytes)
{
    unsigned char raw[16] = { 0 };
    static const char hex[] = "0123456789abcdef";

    if (nbytes > sizeof(raw))
        nbytes = sizeof(raw);
    /* A predictable name only risks a collision (O_EXCL catches it). */
    if (getrandom(raw, nbytes, 0) != (ssize_t)nbytes) {
        unsigned long long t = (unsigned long long)time(NULL) ^ (unsigned long long)getpid();
        memcpy(raw, &t, sizeof(t) < nbytes ? sizeof(t) : nbytes);
    }
    for (size_t i = 0; i < nbytes; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[2 * nbytes] = '\0';
}

/* ---- the observations --------------------------------------------------- */

struct opts {
    const char *canary_path;
    const char *canary_token;
    long host_pid;
    const char *host_pid_token;
    const char *host_ns;
    const char *host_boot_id;
};

/* Namespace inode from the nsfs link; parse "pid:[4026531836]" if stat fails. */
static bool ns_inode(const char *name, unsigned long long *ret)
{
    char path[64], link[128];
    struct stat st;
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/self/ns/%s", name);
    if (stat(path, &st) == 0) {
        *ret = (unsigned long long)st.st_ino;
        return true;
    }
    n = readlink(path, link, sizeof(link) - 1);
    if (n > 0) {
        char *open_br;

        link[n] = '\0';
        open_br = strchr(link, '[');
        if (open_br != NULL) {
            char *end;
            unsigned long long v;

            errno = 0;
            v = strtoull(open_br + 1, &end, 10);
            if (errno == 0 && end != open_br + 1 && *end == ']') {
                *ret = v;
                return true;
            }
        }
    }
    cordon__note_error("ns.%s: cannot read %s: %s", name, path, strerror(errno));
    return false;
}

static void observe_ns(struct cordon__jw *w)
{
    static const char *const names[] = { "pid", "mnt", "net", "ipc", "uts", "user", "cgroup" };

    cordon__jw_open(w, "ns", '{');
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        unsigned long long ino;

        if (ns_inode(names[i], &ino))
            cordon__jw_uint(w, names[i], ino);
        else
            cordon__jw_null(w, names[i]);
    }
    cordon__jw_close(w, '}');
}

/* The kernel's boot id (a UUID per boot), trimmed; false when unreadable. */
static bool read_boot_id(char *out, size_t size, int *ret_errno)
{
    ssize_t n = cordon__fs_read_small(AT_FDCWD, "/proc/sys/kernel/random/boot_id", out, size);

    if (n < 0) {
        *ret_errno = errno;
        return false;
    }
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' '))
        n--;
    out[n] = '\0';
    *ret_errno = 0;
    return n > 0;
}

/* The first line of the kernel's log, its "<N>" level prefix cut off. */
static bool read_klog_first(char *out, size_t size, int *ret_errno)
{
    static char log[KLOG_BYTES + 1];
    int n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, log, KLOG_BYTES);
    const char *line = log;
    size_t len;

    if (n < 0) {
        *ret_errno = errno;
        return false;
    }
    *ret_errno = 0;
    log[n] = '\0';
    if (line[0] == '<') {
        const char *gt = strchr(line, '>');

        if (gt != NULL && gt - line <= 4)
            line = gt + 1;
    }
    len = strcspn(line, "\n");
    if (len >= size)
        len = size - 1;
    memcpy(out, line, len);
    out[len] = '\0';
    return true;
}

/* The hypervisor's CPUID vendor string, "" on bare metal or off x86. */
static void hypervisor_vendor(char out[13])
{
    out[0] = '\0';
#if defined(__x86_64__) || defined(__i386__)
    {
        unsigned a, b, c, d;

        if (__get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 31)) != 0) {
            __cpuid(0x40000000, a, b, c, d);
            memcpy(out, &b, 4);
            memcpy(out + 4, &c, 4);
            memcpy(out + 8, &d, 4);
            out[12] = '\0';
        }
    }
#endif
}

/*
 * Which kernel answers us. The host's own kernel has the host's boot id
 * (given as --host-boot-id). gVisor's Sentry answers syslog(2) with a
 * log of its own whose first line, at time 0, is "Starting gVisor...": no
 * process on the host's kernel can fake that first line (its log starts
 * with the kernel's version, and reading it needs CAP_SYSLOG). Another
 * boot id without that line is another kernel: a virtual machine's guest,
 * as far as we can tell. "kind" is only our reading: the host decides
 * from the raw fields, and checks from outside what a kind implies.
 */
static void observe_kernel(struct cordon__jw *w, const struct opts *o)
{
    char boot_id[BOOT_ID_MAX + 1], klog[KLOG_LINE_MAX + 1], hv[13], up[64];
    struct utsname u;
    int boot_errno = 0, klog_errno = 0;
    bool have_boot = read_boot_id(boot_id, sizeof(boot_id), &boot_errno);
    bool have_klog = read_klog_first(klog, sizeof(klog), &klog_errno);
    bool gvisor = have_klog && klog[0] == '[' &&
                  strcmp(klog + 1 + strspn(klog + 1, " "), GVISOR_KLOG_FIRST) == 0;
    ssize_t n;
    const char *kind;

    cordon__jw_open(w, "kernel", '{');
    if (uname(&u) == 0) {
        cordon__jw_string(w, "sysname", u.sysname);
        cordon__jw_string(w, "release", u.release);
        cordon__jw_string(w, "version", u.version);
        cordon__jw_string(w, "machine", u.machine);
    } else {
        cordon__note_error("kernel: uname failed: %s", strerror(errno));
    }
    cordon__jw_string(w, "boot_id", have_boot ? boot_id : NULL);
    if (!have_boot)
        cordon__jw_errno(w, boot_errno);
    cordon__jw_string(w, "klog_first", have_klog ? klog : NULL);
    cordon__jw_int(w, "klog_errno", klog_errno);
    n = cordon__fs_read_small(AT_FDCWD, "/proc/uptime", up, sizeof(up));
    if (n > 0) {
        char *end;
        double secs;

        up[n] = '\0';
        errno = 0;
        secs = strtod(up, &end);
        if (errno == 0 && end != up && secs >= 0)
            cordon__jw_uint(w, "uptime_ms", (unsigned long long)(secs * 1000.0));
        else
            cordon__jw_null(w, "uptime_ms");
    } else {
        cordon__note_error("kernel: cannot read /proc/uptime: %s", n < 0 ? strerror(errno) : "empty");
        cordon__jw_null(w, "uptime_ms");
    }
    hypervisor_vendor(hv);
    cordon__jw_string(w, "hypervisor", hv[0] != '\0' ? hv : NULL);
    if (have_boot && o->host_boot_id != NULL && strcmp(boot_id, o->host_boot_id) == 0)
        kind = "host";
    else if (gvisor)
        kind = "gvisor";
    else if (have_boot && o->host_boot_id != NULL)
        kind = "vm";
    else
        kind = "unknown";
    cordon__jw_string(w, "kind", kind);
    cordon__jw_close(w, '}');
}

static void observe_canary_file(struct cordon__jw *w, const struct opts *o)
{
    size_t token_len = strlen(o->canary_token);
    char buf[MAX_TOKEN + 2];
    struct stat st;
    bool exists, readable = false, matches = false;
    int stat_errno = 0, read_errno = 0;
    ssize_t n;

    exists = stat(o->canary_path, &st) == 0;
    if (!exists)
        stat_errno = errno;
    /* One byte more than the token, so that a longer file does not match. */
    n = cordon__fs_read_small(AT_FDCWD, o->canary_path, buf, token_len + 2);
    if (n >= 0) {
        readable = true;
        matches = (size_t)n == token_len && memcmp(buf, o->canary_token, token_len) == 0;
    } else {
        read_errno = errno;
    }
    cordon__jw_open(w, "canary_file", '{');
    cordon__jw_string(w, "path", o->canary_path);
    cordon__jw_bool(w, "exists", exists);
    cordon__jw_int(w, "stat_errno", stat_errno);
    cordon__jw_bool(w, "readable", readable);
    cordon__jw_int(w, "read_errno", read_errno);
    cordon__jw_bool(w, "content_matches", matches);
    cordon__jw_close(w, '}');
}

/*
 * The canary process runs "cordon-observe --idle TOKEN SECONDS". Matching
 * "--idle\0TOKEN\0" rather than TOKEN alone keeps our own command line
 * (which carries TOKEN after --host-pid-token) from matching when the
 * host's pid number happens to be ours inside a pid namespace.
 */
static void observe_host_pid(struct cordon__jw *w, const struct opts *o)
{
    char path[64], cmd[4096], pattern[MAX_TOKEN + 16];
    size_t plen;
    bool readable, visible = false, signalable;
    int cmd_errno = 0, kill_errno = 0;
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/%ld/cmdline", o->host_pid);
    plen = (size_t)snprintf(pattern, sizeof(pattern), "--idle%c%s%c", '\0', o->host_pid_token, '\0');
    n = cordon__fs_read_small(AT_FDCWD, path, cmd, sizeof(cmd));
    readable = n >= 0;
    if (!readable)
        cmd_errno = errno;
    else
        visible = memmem(cmd, (size_t)n, pattern, plen) != NULL;
    signalable = kill((pid_t)o->host_pid, 0) == 0;
    if (!signalable)
        kill_errno = errno;
    cordon__jw_open(w, "host_pid", '{');
    cordon__jw_int(w, "pid", o->host_pid);
    cordon__jw_bool(w, "cmdline_readable", readable);
    cordon__jw_int(w, "cmdline_errno", cmd_errno);
    cordon__jw_bool(w, "visible", visible);
    cordon__jw_bool(w, "kill_ok", signalable);
    /* A pid that answers kill(0) but is not the canary is someone else. */
    cordon__jw_bool(w, "signalable", signalable && visible);
    cordon__jw_int(w, "kill_errno", kill_errno);
    cordon__jw_close(w, '}');
}

static void observe_writes(struct cordon__jw *w)
{
    static const char *const dirs[] = { "/", "/etc", "/usr", "/bin" };
    char suffix[17];

    random_hex(suffix, 8);
    cordon__jw_open(w, "writes", '[');
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        char path[PATH_MAX];
        int fd, e = 0;
        bool removed = true;

        snprintf(path, sizeof(path), "%s%s.cordon-observe-%ld-%s", dirs[i],
                 strcmp(dirs[i], "/") == 0 ? "" : "/", (long)getpid(), suffix);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0) {
            e = errno;
        } else {
            close(fd);
            if (unlink(path) != 0) {
                removed = false;
                cordon__note_error("writes: created %s but cannot remove it: %s", path,
                                   strerror(errno));
            }
        }
        cordon__jw_open(w, NULL, '{');
        cordon__jw_string(w, "path", dirs[i]);
        cordon__jw_bool(w, "writable", fd >= 0);
        cordon__jw_errno(w, e);
        if (fd >= 0)
            cordon__jw_bool(w, "removed", removed);
        cordon__jw_close(w, '}');
    }
    cordon__jw_close(w, ']');
}

/* Every fd we did not expect: a host directory fd leaked into the sandbox
 * (CVE-2024-21626, runc's leaked /sys/fs/cgroup fd) shows up here. */
static void observe_fds(struct cordon__jw *w)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    unsigned count = 0;
    int own;

    if (d == NULL) {
        cordon__note_error("fds: cannot open /proc/self/fd: %s", strerror(errno));
        cordon__jw_null(w, "fds");
        return;
    }
    own = dirfd(d);
    cordon__jw_open(w, "fds", '[');
    while ((de = readdir(d)) != NULL) {
        char target[PATH_MAX];
        char *end;
        long fd;
        ssize_t n;

        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        fd = strtol(de->d_name, &end, 10);
        if (*end != '\0' || fd <= 2 || fd == own)
            continue;
        if (++count > MAX_FDS) {
            cordon__note_error("fds: more than %d inherited fds; the rest are not listed", MAX_FDS);
            break;
        }
        n = readlinkat(own, de->d_name, target, sizeof(target));
        cordon__jw_open(w, NULL, '{');
        cordon__jw_int(w, "fd", fd);
        if (n >= 0)
            cordon__jw_string_n(w, "target", target, (size_t)n);
        else
            cordon__jw_null(w, "target");
        cordon__jw_close(w, '}');
    }
    cordon__jw_close(w, ']');
    closedir(d);
}

static void observe_net(struct cordon__jw *w)
{
    static char dev[64 * 1024];
    ssize_t n = cordon__fs_read_small(AT_FDCWD, "/proc/net/dev", dev, sizeof(dev));
    unsigned line_no = 0, count = 0;

    cordon__jw_open(w, "net", '{');
    if (n < 0) {
        cordon__note_error("net: cannot read /proc/net/dev: %s", strerror(errno));
        cordon__jw_null(w, "interfaces");
        cordon__jw_close(w, '}');
        return;
    }
    dev[n] = '\0';
    cordon__jw_open(w, "interfaces", '[');
    for (char *line = dev; line != NULL && *line != '\0'; line_no++) {
        char *nl = strchr(line, '\n');
        char *colon;

        if (nl != NULL)
            *nl = '\0';
        colon = strchr(line, ':');
        /* Two header lines, then "  name: counters". */
        if (line_no >= 2 && colon != NULL && count < MAX_IFACES) {
            char *name = line;

            while (*name == ' ')
                name++;
            cordon__jw_string_n(w, NULL, name, (size_t)(colon - name));
            count++;
        }
        line = nl != NULL ? nl + 1 : NULL;
    }
    cordon__jw_close(w, ']');
    cordon__jw_close(w, '}');
}

static void observe_files(struct cordon__jw *w)
{
    int fd = open("/proc/kcore", O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    int kcore_errno = fd < 0 ? errno : 0;
    DIR *d;
    bool firmware = false;
    int fw_errno = 0;

    if (fd >= 0)
        close(fd);
    cordon__jw_open(w, "files", '{');
    cordon__jw_open(w, "proc_kcore", '{');
    cordon__jw_bool(w, "readable", fd >= 0);
    cordon__jw_errno(w, kcore_errno);
    cordon__jw_close(w, '}');

    /* An empty tmpfs mounted over /sys/firmware (docker's masking) lists
     * nothing, so readable means an entry beyond . and .. showed up. */
    d = opendir("/sys/firmware");
    if (d == NULL) {
        fw_errno = errno;
    } else {
        struct dirent *de;

        errno = 0;
        while ((de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
                firmware = true;
                break;
            }
        }
        fw_errno = firmware ? 0 : errno;
        closedir(d);
    }
    cordon__jw_open(w, "sys_firmware", '{');
    cordon__jw_bool(w, "readable", firmware);
    cordon__jw_errno(w, fw_errno);
    cordon__jw_close(w, '}');
    cordon__jw_close(w, '}');
}

int cordon__write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static int report(const struct opts *o)
{
    struct cordon__jw w = { 0 };

    cordon__jw_open(&w, NULL, '{');
    cordon__jw_int(&w, "report_version", REPORT_VERSION);
    cordon__jw_string(&w, "observer", "cordon-observe");
    cordon__jw_int(&w, "pid", getpid());
    cordon__jw_string(&w, "host_ns", o->host_ns);
    cordon__jw_string(&w, "host_boot_id", o->host_boot_id);
    observe_kernel(&w, o);
    observe_ns(&w);
    if (o->canary_path != NULL)
        observe_canary_file(&w, o);
    else
        cordon__jw_null(&w, "canary_file");
    if (o->host_pid > 0)
        observe_host_pid(&w, o);
    else
        cordon__jw_null(&w, "host_pid");
    cordon__observe_reach(&w);
    observe_writes(&w);
    observe_fds(&w);
    cordon__observe_ids(&w);
    cordon__observe_status(&w);
    cordon__observe_prctl(&w);
    cordon__observe_syscalls(&w);
    cordon__observe_sockets(&w);
    observe_net(&w);
    observe_files(&w);
    cordon__jw_open(&w, "errors", '[');
    for (unsigned i = 0; i < g_nerrors; i++)
        cordon__jw_string(&w, NULL, g_errors[i]);
    cordon__jw_close(&w, ']');
    cordon__jw_close(&w, '}');
    cordon__jw_raw(&w, "\n", 1);
    if (w.failed) {
        fprintf(stderr, "cordon-observe: the report does not fit in %u bytes\n",
                CORDON__MAX_REPORT_BYTES);
        free(w.buf);
        return 1;
    }
    if (cordon__write_all(STDOUT_FILENO, w.buf, w.len) != 0) {
        fprintf(stderr, "cordon-observe: writing the report failed: %s\n", strerror(errno));
        free(w.buf);
        return 1;
    }
    free(w.buf);
    return 0;
}

static int idle(const char *token, const char *seconds)
{
    char *end;
    long secs;
    struct timespec ts;

    errno = 0;
    secs = strtol(seconds, &end, 10);
    if (token[0] == '\0' || errno != 0 || end == seconds || *end != '\0' || secs < 0 ||
        secs > MAX_IDLE_SECONDS) {
        fprintf(stderr, "cordon-observe: --idle wants TOKEN SECONDS (0..%ld)\n", MAX_IDLE_SECONDS);
        return 2;
    }
    ts.tv_sec = secs;
    ts.tv_nsec = 0;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    return 0;
}

static int hold_lease(const char *path, const char *seconds)
{
    struct timespec ts;
    char *end;
    long secs, rc;
    int fd, e;

    errno = 0;
    secs = strtol(seconds, &end, 10);
    if (path[0] == '\0' || errno != 0 || end == seconds || *end != '\0' || secs < 0 ||
        secs > MAX_IDLE_SECONDS) {
        fprintf(stderr, "cordon-observe: --hold-lease wants FILE SECONDS (0..%ld)\n",
                MAX_IDLE_SECONDS);
        return 2;
    }
    fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "cordon-observe: --hold-lease: %s: %s\n", path, strerror(errno));
        return 1;
    }
    /* Ignored, SIGIO cannot make the holder let go before the lease-break time. */
    signal(SIGIO, SIG_IGN);
    rc = fcntl(fd, F_SETLEASE, F_WRLCK);
    e = errno;
    if (rc < 0) {
        printf("lease refused %d\n", e);
        fflush(stdout);
        close(fd);
        return 0;
    }
    printf("lease held\n");
    fflush(stdout);
    ts.tv_sec = secs;
    ts.tv_nsec = 0;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    close(fd);
    return 0;
}

static int usage(const char *why)
{
    fprintf(stderr,
            "cordon-observe: %s\n"
            "usage: cordon-observe [--canary-path P --canary-token T] "
            "[--host-pid N --host-pid-token T2] [--host-ns STR] [--host-boot-id UUID]\n"
            "       cordon-observe --idle TOKEN SECONDS\n"
            "       cordon-observe --hold-lease FILE SECONDS\n"
            "       cordon-observe --limits ... | --flood BYTES\n"
            "       cordon-observe --attack-pid1 HOST_PID_NS\n",
            why);
    return 2;
}

int main(int argc, char **argv)
{
    struct opts o = { 0 };

    if (argc == 4 && strcmp(argv[1], "--idle") == 0)
        return idle(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "--hold-lease") == 0)
        return hold_lease(argv[2], argv[3]);
    if (argc >= 2 && strcmp(argv[1], "--limits") == 0)
        return cordon__limits_main(argc - 1, argv + 1);
    if (argc == 3 && strcmp(argv[1], "--flood") == 0)
        return cordon__flood_main(argv[2]);
    if (argc == 3 && strcmp(argv[1], "--attack-pid1") == 0)
        return cordon__attack_pid1(argv[2]);
    /* Every option takes a value: they come in pairs. */
    for (int i = 1; i < argc; i += 2) {
        const char *arg = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;

        if (val == NULL)
            return usage("every option takes a value");
        if (strcmp(arg, "--canary-path") == 0) {
            o.canary_path = val;
        } else if (strcmp(arg, "--canary-token") == 0) {
            o.canary_token = val;
        } else if (strcmp(arg, "--host-pid") == 0) {
            char *end;

            errno = 0;
            o.host_pid = strtol(val, &end, 10);
            if (errno != 0 || end == val || *end != '\0' || o.host_pid <= 0 || o.host_pid > INT_MAX)
                return usage("--host-pid wants a positive pid");
        } else if (strcmp(arg, "--host-pid-token") == 0) {
            o.host_pid_token = val;
        } else if (strcmp(arg, "--host-ns") == 0) {
            o.host_ns = val;
        } else if (strcmp(arg, "--host-boot-id") == 0) {
            if (val[0] == '\0' || strlen(val) > BOOT_ID_MAX)
                return usage("--host-boot-id is 1 to 64 bytes");
            o.host_boot_id = val;
        } else {
            return usage("unknown option");
        }
    }
    if ((o.canary_path == NULL) != (o.canary_token == NULL))
        return usage("--canary-path and --canary-token go together");
    if ((o.host_pid == 0) != (o.host_pid_token == NULL))
        return usage("--host-pid and --host-pid-token go together");
    if ((o.canary_token != NULL && (o.canary_token[0] == '\0' || strlen(o.canary_token) > MAX_TOKEN)) ||
        (o.host_pid_token != NULL &&
         (o.host_pid_token[0] == '\0' || strlen(o.host_pid_token) > MAX_TOKEN)))
        return usage("tokens are 1 to 256 bytes");
    if (o.canary_path != NULL && (o.canary_path[0] == '\0' || strlen(o.canary_path) >= PATH_MAX))
        return usage("--canary-path is empty or too long");
    return report(&o);
}
