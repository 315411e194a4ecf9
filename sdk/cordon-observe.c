/*
 * cordon-observe: reports, from inside a sandbox, what the sandbox lets a
 * process see and do. Linked statically so that it runs in any rootfs.
 *
 *   cordon-observe [--canary-path P --canary-token T]
 *                  [--host-pid N --host-pid-token T2] [--host-ns STR]
 *                  [--host-boot-id UUID]
 *   cordon-observe --idle TOKEN SECONDS
 *   cordon-observe --hold-lease FILE SECONDS
 *
 * The first form prints one JSON object ("report_version": 1) on stdout and
 * exits 0; it never judges anything: the host compares the report with its
 * own view (sdk/observe.c). The second form only sleeps; the host starts it
 * as its canary process, so that /proc/<pid>/cmdline names TOKEN. The
 * third plays a hostile program for the contract suite: it takes a write
 * lease on FILE (made if missing) with SIGIO ignored, prints "lease held"
 * or "lease refused ERRNO", and holds it SECONDS before it exits (at once
 * when refused).
 * docs/observation.md describes every field.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/netlink.h>

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

#define REPORT_VERSION 1
#define MAX_REPORT_BYTES (512u * 1024u)
#define MAX_DEPTH 16
#define MAX_ERRORS 64
#define MAX_FDS 256
#define MAX_IFACES 256
#define MAX_TOKEN 256
#define MAX_IDLE_SECONDS 86400L
#define BOOT_ID_MAX 64
#define KLOG_BYTES 4096
#define KLOG_LINE_MAX 200
#define CAP_PROBE_MAX 64
/* The first line gVisor's Sentry writes to its own kernel log, at time 0
 * ("[   0.000000] Starting gVisor...", however wide the time is padded). */
#define GVISOR_KLOG_FIRST "0.000000] Starting gVisor..."

/* ---- a bounded JSON writer ---------------------------------------------- */

struct jw {
    char *buf;
    size_t len;
    size_t cap;
    unsigned depth;
    bool need_comma[MAX_DEPTH];
    bool failed;
};

static void jw_raw(struct jw *w, const char *s, size_t n)
{
    if (w->failed)
        return;
    if (n > MAX_REPORT_BYTES - w->len) {
        w->failed = true;
        return;
    }
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        char *grown;

        while (cap < w->len + n)
            cap *= 2;
        grown = realloc(w->buf, cap);
        if (grown == NULL) {
            w->failed = true;
            return;
        }
        w->buf = grown;
        w->cap = cap;
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

static void jw_str(struct jw *w, const char *s)
{
    jw_raw(w, s, strlen(s));
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
    size_t len;
    uint32_t cp;

    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        len = 2, cp = s[0] & 0x1f;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        len = 3, cp = s[0] & 0x0f;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        len = 4, cp = s[0] & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    /* Overlong forms, UTF-16 surrogates and values past U+10FFFF. */
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/* A JSON string literal. Bytes that are not valid UTF-8 become U+00XX, so
 * that a planted file name can never break the report. */
static void jw_quoted(struct jw *w, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    char esc[8];

    jw_raw(w, "\"", 1);
    for (size_t i = 0; i < n;) {
        size_t seq = utf8_seq_len(p + i, n - i);

        if (p[i] == '"' || p[i] == '\\') {
            esc[0] = '\\';
            esc[1] = (char)p[i];
            jw_raw(w, esc, 2);
        } else if (p[i] == '\n') {
            jw_raw(w, "\\n", 2);
        } else if (p[i] == '\t') {
            jw_raw(w, "\\t", 2);
        } else if (p[i] < 0x20 || p[i] == 0x7f || seq == 0) {
            snprintf(esc, sizeof(esc), "\\u%04x", p[i]);
            jw_raw(w, esc, 6);
        } else {
            jw_raw(w, s + i, seq);
            i += seq;
            continue;
        }
        i++;
    }
    jw_raw(w, "\"", 1);
}

/* Separator and key before a value; key is NULL inside arrays. */
static void jw_key(struct jw *w, const char *key)
{
    if (w->depth > 0 && w->need_comma[w->depth - 1])
        jw_raw(w, ",", 1);
    if (w->depth > 0)
        w->need_comma[w->depth - 1] = true;
    if (key != NULL) {
        jw_quoted(w, key, strlen(key));
        jw_raw(w, ":", 1);
    }
}

static void jw_open(struct jw *w, const char *key, char bracket)
{
    jw_key(w, key);
    jw_raw(w, &bracket, 1);
    if (w->depth >= MAX_DEPTH) {
        w->failed = true;
        return;
    }
    w->need_comma[w->depth++] = false;
}

static void jw_close(struct jw *w, char bracket)
{
    if (w->depth > 0)
        w->depth--;
    jw_raw(w, &bracket, 1);
}

static void jw_string(struct jw *w, const char *key, const char *s)
{
    jw_key(w, key);
    if (s == NULL)
        jw_str(w, "null");
    else
        jw_quoted(w, s, strlen(s));
}

static void jw_string_n(struct jw *w, const char *key, const char *s, size_t n)
{
    jw_key(w, key);
    jw_quoted(w, s, n);
}

static void jw_int(struct jw *w, const char *key, long long v)
{
    char num[32];

    jw_key(w, key);
    snprintf(num, sizeof(num), "%lld", v);
    jw_str(w, num);
}

static void jw_uint(struct jw *w, const char *key, unsigned long long v)
{
    char num[32];

    jw_key(w, key);
    snprintf(num, sizeof(num), "%llu", v);
    jw_str(w, num);
}

static void jw_bool(struct jw *w, const char *key, bool v)
{
    jw_key(w, key);
    jw_str(w, v ? "true" : "false");
}

static void jw_null(struct jw *w, const char *key)
{
    jw_key(w, key);
    jw_str(w, "null");
}

/* errno as a number plus its symbolic name, e.g. "errno": 1, "errno_name": "EPERM". */
static void jw_errno(struct jw *w, int e)
{
    const char *name = e != 0 ? strerrorname_np(e) : NULL;

    jw_int(w, "errno", e);
    jw_string(w, "errno_name", name);
}

/* ---- what went wrong while observing ------------------------------------ */

static char g_errors[MAX_ERRORS][256];
static unsigned g_nerrors;

static void note_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note_error(const char *fmt, ...)
{
    va_list ap;

    if (g_nerrors >= MAX_ERRORS)
        return;
    va_start(ap, fmt);
    vsnprintf(g_errors[g_nerrors++], sizeof(g_errors[0]), fmt, ap);
    va_end(ap);
}

/* Read at most max bytes of path; returns the length or -1 with errno. */
static ssize_t read_small(const char *path, char *buf, size_t max)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    size_t got = 0;
    int saved;

    if (fd < 0)
        return -1;
    while (got < max) {
        ssize_t n = read(fd, buf + got, max - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            saved = errno;
            close(fd);
            errno = saved;
            return -1;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    return (ssize_t)got;
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
    note_error("ns.%s: cannot read %s: %s", name, path, strerror(errno));
    return false;
}

static void observe_ns(struct jw *w)
{
    static const char *const names[] = { "pid", "mnt", "net", "ipc", "uts", "user", "cgroup" };

    jw_open(w, "ns", '{');
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        unsigned long long ino;

        if (ns_inode(names[i], &ino))
            jw_uint(w, names[i], ino);
        else
            jw_null(w, names[i]);
    }
    jw_close(w, '}');
}

/* The kernel's boot id (a UUID per boot), trimmed; false when unreadable. */
static bool read_boot_id(char *out, size_t size, int *ret_errno)
{
    ssize_t n = read_small("/proc/sys/kernel/random/boot_id", out, size - 1);

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
static void observe_kernel(struct jw *w, const struct opts *o)
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

    jw_open(w, "kernel", '{');
    if (uname(&u) == 0) {
        jw_string(w, "sysname", u.sysname);
        jw_string(w, "release", u.release);
        jw_string(w, "version", u.version);
        jw_string(w, "machine", u.machine);
    } else {
        note_error("kernel: uname failed: %s", strerror(errno));
    }
    jw_string(w, "boot_id", have_boot ? boot_id : NULL);
    if (!have_boot)
        jw_errno(w, boot_errno);
    jw_string(w, "klog_first", have_klog ? klog : NULL);
    jw_int(w, "klog_errno", klog_errno);
    n = read_small("/proc/uptime", up, sizeof(up) - 1);
    if (n > 0) {
        char *end;
        double secs;

        up[n] = '\0';
        errno = 0;
        secs = strtod(up, &end);
        if (errno == 0 && end != up && secs >= 0)
            jw_uint(w, "uptime_ms", (unsigned long long)(secs * 1000.0));
        else
            jw_null(w, "uptime_ms");
    } else {
        note_error("kernel: cannot read /proc/uptime: %s", n < 0 ? strerror(errno) : "empty");
        jw_null(w, "uptime_ms");
    }
    hypervisor_vendor(hv);
    jw_string(w, "hypervisor", hv[0] != '\0' ? hv : NULL);
    if (have_boot && o->host_boot_id != NULL && strcmp(boot_id, o->host_boot_id) == 0)
        kind = "host";
    else if (gvisor)
        kind = "gvisor";
    else if (have_boot && o->host_boot_id != NULL)
        kind = "vm";
    else
        kind = "unknown";
    jw_string(w, "kind", kind);
    jw_close(w, '}');
}

/*
 * What prctl(2) says, for the kernels whose /proc/self/status is silent
 * (gVisor's has no NoNewPrivs and no CapAmb line). Ambient capabilities
 * are probed one by one; EINVAL for the first one means the kernel has
 * none at all, "unsupported".
 */
static void observe_prctl(struct jw *w)
{
    unsigned long long ambient = 0;
    bool unsupported = false, failed = false;
    int r;

    jw_open(w, "prctl", '{');
    errno = 0;
    r = prctl(PR_GET_NO_NEW_PRIVS, 0UL, 0UL, 0UL, 0UL);
    if (r >= 0)
        jw_int(w, "no_new_privs", r);
    else
        jw_null(w, "no_new_privs");
    errno = 0;
    r = prctl(PR_GET_SECCOMP, 0UL, 0UL, 0UL, 0UL);
    if (r >= 0)
        jw_int(w, "seccomp", r);
    else
        jw_null(w, "seccomp");
    for (int cap = 0; cap < CAP_PROBE_MAX; cap++) {
        errno = 0;
        r = prctl(PR_CAP_AMBIENT, (unsigned long)PR_CAP_AMBIENT_IS_SET, (unsigned long)cap, 0UL, 0UL);
        if (r < 0 && errno == EINVAL) {
            /* Past the kernel's last capability, or no ambient set at all. */
            unsupported = cap == 0;
            break;
        }
        if (r < 0) {
            failed = true;
            break;
        }
        if (r == 1)
            ambient |= 1ull << cap;
    }
    if (failed)
        jw_null(w, "ambient");
    else if (unsupported)
        jw_string(w, "ambient", "unsupported");
    else {
        char hex[17];

        snprintf(hex, sizeof(hex), "%016llx", ambient);
        jw_string(w, "ambient", hex);
    }
    jw_close(w, '}');
}

static void observe_canary_file(struct jw *w, const struct opts *o)
{
    size_t token_len = strlen(o->canary_token);
    char buf[MAX_TOKEN + 1];
    struct stat st;
    bool exists, readable = false, matches = false;
    int stat_errno = 0, read_errno = 0;
    ssize_t n;

    exists = stat(o->canary_path, &st) == 0;
    if (!exists)
        stat_errno = errno;
    /* One byte more than the token, so that a longer file does not match. */
    n = read_small(o->canary_path, buf, token_len + 1);
    if (n >= 0) {
        readable = true;
        matches = (size_t)n == token_len && memcmp(buf, o->canary_token, token_len) == 0;
    } else {
        read_errno = errno;
    }
    jw_open(w, "canary_file", '{');
    jw_string(w, "path", o->canary_path);
    jw_bool(w, "exists", exists);
    jw_int(w, "stat_errno", stat_errno);
    jw_bool(w, "readable", readable);
    jw_int(w, "read_errno", read_errno);
    jw_bool(w, "content_matches", matches);
    jw_close(w, '}');
}

/*
 * The canary process runs "cordon-observe --idle TOKEN SECONDS". Matching
 * "--idle\0TOKEN\0" rather than TOKEN alone keeps our own command line
 * (which carries TOKEN after --host-pid-token) from matching when the
 * host's pid number happens to be ours inside a pid namespace.
 */
static void observe_host_pid(struct jw *w, const struct opts *o)
{
    char path[64], cmd[4096], pattern[MAX_TOKEN + 16];
    size_t plen;
    bool readable, visible = false, signalable;
    int cmd_errno = 0, kill_errno = 0;
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/%ld/cmdline", o->host_pid);
    plen = (size_t)snprintf(pattern, sizeof(pattern), "--idle%c%s%c", '\0', o->host_pid_token, '\0');
    n = read_small(path, cmd, sizeof(cmd));
    readable = n >= 0;
    if (!readable)
        cmd_errno = errno;
    else
        visible = memmem(cmd, (size_t)n, pattern, plen) != NULL;
    signalable = kill((pid_t)o->host_pid, 0) == 0;
    if (!signalable)
        kill_errno = errno;
    jw_open(w, "host_pid", '{');
    jw_int(w, "pid", o->host_pid);
    jw_bool(w, "cmdline_readable", readable);
    jw_int(w, "cmdline_errno", cmd_errno);
    jw_bool(w, "visible", visible);
    jw_bool(w, "kill_ok", signalable);
    /* A pid that answers kill(0) but is not the canary is someone else. */
    jw_bool(w, "signalable", signalable && visible);
    jw_int(w, "kill_errno", kill_errno);
    jw_close(w, '}');
}

static void observe_writes(struct jw *w)
{
    static const char *const dirs[] = { "/", "/etc", "/usr", "/bin" };
    char suffix[17];

    random_hex(suffix, 8);
    jw_open(w, "writes", '[');
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
                note_error("writes: created %s but cannot remove it: %s", path, strerror(errno));
            }
        }
        jw_open(w, NULL, '{');
        jw_string(w, "path", dirs[i]);
        jw_bool(w, "writable", fd >= 0);
        jw_errno(w, e);
        if (fd >= 0)
            jw_bool(w, "removed", removed);
        jw_close(w, '}');
    }
    jw_close(w, ']');
}

/* Every fd we did not expect: a host directory fd leaked into the sandbox
 * (CVE-2024-21626, runc's leaked /sys/fs/cgroup fd) shows up here. */
static void observe_fds(struct jw *w)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    unsigned count = 0;
    int own;

    if (d == NULL) {
        note_error("fds: cannot open /proc/self/fd: %s", strerror(errno));
        jw_null(w, "fds");
        return;
    }
    own = dirfd(d);
    jw_open(w, "fds", '[');
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
            note_error("fds: more than %d inherited fds; the rest are not listed", MAX_FDS);
            break;
        }
        n = readlinkat(own, de->d_name, target, sizeof(target));
        jw_open(w, NULL, '{');
        jw_int(w, "fd", fd);
        if (n >= 0)
            jw_string_n(w, "target", target, (size_t)n);
        else
            jw_null(w, "target");
        jw_close(w, '}');
    }
    jw_close(w, ']');
    closedir(d);
}

/* Our user namespace's uid map as the kernel prints it (bounded): the host
 * maps our euid through it to the uid that would act on its files. */
static void observe_uid_map(struct jw *w)
{
    char map[1024];
    ssize_t n = -1;
    int fd = open("/proc/self/uid_map", O_RDONLY | O_CLOEXEC);

    if (fd >= 0) {
        n = read(fd, map, sizeof(map) - 1);
        close(fd);
    }
    if (n >= 0)
        jw_string_n(w, "uid_map", map, (size_t)n);
    else
        jw_null(w, "uid_map");
}

static void observe_ids(struct jw *w)
{
    int groups = getgroups(0, NULL);

    jw_open(w, "ids", '{');
    jw_uint(w, "uid", getuid());
    jw_uint(w, "euid", geteuid());
    jw_uint(w, "gid", getgid());
    jw_uint(w, "egid", getegid());
    jw_int(w, "groups", groups);
    observe_uid_map(w);
    jw_close(w, '}');
}

/* The value after "Key:\t" in /proc/self/status, or NULL. */
static const char *status_field(const char *status, const char *key, char *out, size_t out_size)
{
    size_t klen = strlen(key);

    for (const char *line = status; line != NULL && *line != '\0';) {
        const char *nl = strchr(line, '\n');
        size_t llen = nl != NULL ? (size_t)(nl - line) : strlen(line);

        if (llen > klen && memcmp(line, key, klen) == 0 && line[klen] == ':') {
            const char *v = line + klen + 1;
            size_t vlen;

            while (v < line + llen && (*v == ' ' || *v == '\t'))
                v++;
            vlen = (size_t)(line + llen - v);
            if (vlen >= out_size)
                vlen = out_size - 1;
            memcpy(out, v, vlen);
            out[vlen] = '\0';
            return out;
        }
        line = nl != NULL ? nl + 1 : NULL;
    }
    return NULL;
}

static void observe_status(struct jw *w)
{
    static const char *const int_keys[] = { "NoNewPrivs", "Seccomp", "Seccomp_filters" };
    static const char *const cap_keys[] = { "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb" };
    static char status[64 * 1024];
    ssize_t n = read_small("/proc/self/status", status, sizeof(status) - 1);
    cap_t caps;

    if (n < 0) {
        note_error("status: cannot read /proc/self/status: %s", strerror(errno));
        n = 0;
    }
    status[n] = '\0';
    jw_open(w, "status", '{');
    for (size_t i = 0; i < sizeof(int_keys) / sizeof(int_keys[0]); i++) {
        char v[64], *end;
        long val;

        if (status_field(status, int_keys[i], v, sizeof(v)) == NULL) {
            jw_null(w, int_keys[i]);
            continue;
        }
        val = strtol(v, &end, 10);
        if (end == v || *end != '\0') {
            note_error("status: %s has an unexpected value \"%s\"", int_keys[i], v);
            jw_null(w, int_keys[i]);
        } else {
            jw_int(w, int_keys[i], val);
        }
    }
    for (size_t i = 0; i < sizeof(cap_keys) / sizeof(cap_keys[0]); i++) {
        char v[64];

        jw_string(w, cap_keys[i], status_field(status, cap_keys[i], v, sizeof(v)));
    }
    caps = cap_get_proc();
    if (caps != NULL) {
        char *text = cap_to_text(caps, NULL);

        jw_string(w, "caps_text", text);
        if (text == NULL)
            note_error("status: cap_to_text failed: %s", strerror(errno));
        cap_free(text);
        cap_free(caps);
    } else {
        note_error("status: cap_get_proc failed: %s", strerror(errno));
        jw_null(w, "caps_text");
    }
    jw_close(w, '}');
}

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

static void jw_syscall(struct jw *w, const char *name, const char *result, int e)
{
    jw_open(w, NULL, '{');
    jw_string(w, "name", name);
    jw_string(w, "result", result);
    jw_errno(w, e);
    jw_close(w, '}');
}

static void try_keyctl(struct jw *w)
{
    long rc = syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
    int e = rc < 0 ? errno : 0;

    jw_syscall(w, "keyctl", syscall_verdict(rc, e), e);
}

static void try_bpf(struct jw *w)
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
static void try_mount(struct jw *w)
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
        note_error("syscalls.mount: no writable directory for a mount point; used a missing path");
        snprintf(dir, sizeof(dir), "/.cordon-observe-missing-%ld", (long)getpid());
    }
    rc = syscall(SYS_mount, "none", dir, "tmpfs", 0UL, "size=4k");
    e = rc < 0 ? errno : 0;
    if (rc == 0 && umount2(dir, MNT_DETACH) != 0)
        note_error("syscalls.mount: mounted %s but cannot unmount it: %s", dir, strerror(errno));
    if (made && rmdir(dir) != 0)
        note_error("syscalls.mount: cannot remove %s: %s", dir, strerror(errno));
    jw_syscall(w, "mount", syscall_verdict(rc, e), e);
}

/* unshare changes the caller, so a child tries it and exits with its errno. */
static void try_unshare_user(struct jw *w)
{
    int status;
    pid_t pid = fork();

    if (pid == 0) {
        long rc = syscall(SYS_unshare, CLONE_NEWUSER);

        _exit(rc == 0 ? 0 : (errno > 0 && errno < 255 ? errno : 255));
    }
    if (pid < 0) {
        int e = errno;

        note_error("syscalls.unshare_user: fork failed: %s", strerror(e));
        jw_syscall(w, "unshare_user", "untested", e);
        return;
    }
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            note_error("syscalls.unshare_user: waitpid failed: %s", strerror(errno));
            jw_syscall(w, "unshare_user", "untested", errno);
            return;
        }
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) == 255) {
        note_error("syscalls.unshare_user: the child did not report an errno (status %d)", status);
        jw_syscall(w, "unshare_user", "untested", 0);
        return;
    }
    jw_syscall(w, "unshare_user", syscall_verdict(WEXITSTATUS(status) == 0 ? 0 : -1,
                                                  WEXITSTATUS(status)),
               WEXITSTATUS(status));
}

static void try_io_uring(struct jw *w)
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
static void try_lease(struct jw *w)
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
        note_error("syscalls.file_lease: no writable directory for a file: %s", strerror(e));
        jw_syscall(w, "file_lease", "untested", e);
        return;
    }
    close(fd);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    e = errno;
    if (unlink(path) != 0)
        note_error("syscalls.file_lease: cannot remove %s: %s", path, strerror(errno));
    if (fd < 0) {
        note_error("syscalls.file_lease: cannot reopen %s: %s", path, strerror(e));
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

static void observe_syscalls(struct jw *w)
{
    jw_open(w, "syscalls", '[');
    try_keyctl(w);
    try_bpf(w);
    try_mount(w);
    try_unshare_user(w);
    try_io_uring(w);
    try_lease(w);
    jw_close(w, ']');
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
static void observe_sockets(struct jw *w)
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

    jw_open(w, "sockets", '[');
    for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
        long fd = syscall(SYS_socket, tries[i].family, tries[i].type | SOCK_CLOEXEC,
                          tries[i].protocol);
        int e = fd < 0 ? errno : 0;

        if (fd >= 0)
            close((int)fd);
        jw_open(w, NULL, '{');
        jw_string(w, "name", tries[i].name);
        jw_int(w, "family", tries[i].family);
        jw_int(w, "protocol", tries[i].protocol);
        jw_bool(w, "created", fd >= 0);
        jw_errno(w, e);
        jw_close(w, '}');
    }
    jw_close(w, ']');
}

static void observe_net(struct jw *w)
{
    static char dev[64 * 1024];
    ssize_t n = read_small("/proc/net/dev", dev, sizeof(dev) - 1);
    unsigned line_no = 0, count = 0;

    jw_open(w, "net", '{');
    if (n < 0) {
        note_error("net: cannot read /proc/net/dev: %s", strerror(errno));
        jw_null(w, "interfaces");
        jw_close(w, '}');
        return;
    }
    dev[n] = '\0';
    jw_open(w, "interfaces", '[');
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
            jw_string_n(w, NULL, name, (size_t)(colon - name));
            count++;
        }
        line = nl != NULL ? nl + 1 : NULL;
    }
    jw_close(w, ']');
    jw_close(w, '}');
}

static void observe_files(struct jw *w)
{
    int fd = open("/proc/kcore", O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    int kcore_errno = fd < 0 ? errno : 0;
    DIR *d;
    bool firmware = false;
    int fw_errno = 0;

    if (fd >= 0)
        close(fd);
    jw_open(w, "files", '{');
    jw_open(w, "proc_kcore", '{');
    jw_bool(w, "readable", fd >= 0);
    jw_errno(w, kcore_errno);
    jw_close(w, '}');

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
    jw_open(w, "sys_firmware", '{');
    jw_bool(w, "readable", firmware);
    jw_errno(w, fw_errno);
    jw_close(w, '}');
    jw_close(w, '}');
}

static int write_all(int fd, const char *buf, size_t len)
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
    struct jw w = { 0 };

    jw_open(&w, NULL, '{');
    jw_int(&w, "report_version", REPORT_VERSION);
    jw_string(&w, "observer", "cordon-observe");
    jw_int(&w, "pid", getpid());
    jw_string(&w, "host_ns", o->host_ns);
    jw_string(&w, "host_boot_id", o->host_boot_id);
    observe_kernel(&w, o);
    observe_ns(&w);
    if (o->canary_path != NULL)
        observe_canary_file(&w, o);
    else
        jw_null(&w, "canary_file");
    if (o->host_pid > 0)
        observe_host_pid(&w, o);
    else
        jw_null(&w, "host_pid");
    observe_writes(&w);
    observe_fds(&w);
    observe_ids(&w);
    observe_status(&w);
    observe_prctl(&w);
    observe_syscalls(&w);
    observe_sockets(&w);
    observe_net(&w);
    observe_files(&w);
    jw_open(&w, "errors", '[');
    for (unsigned i = 0; i < g_nerrors; i++)
        jw_string(&w, NULL, g_errors[i]);
    jw_close(&w, ']');
    jw_close(&w, '}');
    jw_raw(&w, "\n", 1);
    if (w.failed) {
        fprintf(stderr, "cordon-observe: the report does not fit in %u bytes\n", MAX_REPORT_BYTES);
        free(w.buf);
        return 1;
    }
    if (write_all(STDOUT_FILENO, w.buf, w.len) != 0) {
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
            "       cordon-observe --hold-lease FILE SECONDS\n",
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
