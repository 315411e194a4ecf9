/*
 * cordon-observe --limits and --flood: the observer's half of the host's
 * limit checks (docs/observation.md, "Limits"). Like the rest of the
 * observer it never judges: it reports how far each attempt got and why it
 * stopped, and the host decides (core/observe/observe-limits.c).
 *
 *   cordon-observe --limits --host-ns STR --disk BYTES --memory BYTES
 *                  --pids N --cpus-milli N
 *   cordon-observe --flood BYTES
 *
 * Every attempt consumes a resource, so every one is bounded by the limit
 * under test plus a small margin, cleans up after itself, and runs only
 * once the observer has seen for itself that its pid and mount namespaces
 * are not the host's (--host-ns, the host's own inodes). The host runs this
 * mode only after the same observation showed the sandbox contained; the
 * observer's own refusal is the second lock, for a host or a provider that
 * gets the order wrong.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inside/observer.h"

/* What may be written beyond disk_bytes before the check gives up, in all
 * writable mounts together: tmpfs rounds to pages, a file system to its
 * blocks. */
#define DISK_MARGIN (1ull << 20)
#define FILL_CHUNK (64u * 1024u)
#define MAX_MOUNTS 64
/* Children beyond the pids limit before the check gives up. */
#define PIDS_MARGIN 4u
/* Bytes beyond memory_bytes the child touches before it gives up. */
#define MEMORY_MARGIN (8ull << 20)
#define MEMORY_STEP (1ull << 20)
/* How long the CPU check spins (wall clock). */
#define CPU_WINDOW_MS 400u
/* The largest limit the mode accepts: an attempt is bounded by it. */
#define MAX_LIMIT_BYTES (1ull << 30)
#define MAX_PIDS 4096u
#define MAX_FLOOD_BYTES (64ull << 20)

struct limits_opts {
    const char *host_ns;
    unsigned long long disk, memory, pids, cpus_milli;
};

static uint64_t now_ms(clockid_t clock)
{
    struct timespec ts;

    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The inode of host_ns's "name:N" entry, or 0. */
static unsigned long long host_inode(const char *host_ns, const char *name)
{
    size_t len = strlen(name);

    for (const char *p = host_ns; p != NULL && *p != '\0';) {
        if (strncmp(p, name, len) == 0 && p[len] == ':')
            return strtoull(p + len + 1, NULL, 10);
        p = strchr(p, ',');
        p = p != NULL ? p + 1 : NULL;
    }
    return 0;
}

static bool own_inode(const char *name, unsigned long long *ret)
{
    char path[64];
    struct stat st;

    snprintf(path, sizeof(path), "/proc/self/ns/%s", name);
    if (stat(path, &st) != 0)
        return false;
    *ret = (unsigned long long)st.st_ino;
    return true;
}

/*
 * Contained, as far as the observer can tell: its pid namespace is readable
 * and not the host's, and its mount namespace is not the host's (absent
 * only under a kernel that has none to show, gVisor's: then the pid
 * namespace is gVisor's own). Anything unreadable on the host's side
 * counts against: nothing is filled, forked or allocated.
 */
static bool contained(struct cordon__jw *w, const char *host_ns)
{
    unsigned long long host_pid = host_inode(host_ns, "pid"), host_mnt = host_inode(host_ns, "mnt"), pid = 0, mnt = 0;
    char why[160] = "";
    bool have_mnt = own_inode("mnt", &mnt);

    if (host_pid == 0 || host_mnt == 0)
        snprintf(why, sizeof(why), "--host-ns names no pid and mnt inodes");
    else if (!own_inode("pid", &pid))
        snprintf(why, sizeof(why), "cannot read /proc/self/ns/pid: %s", strerror(errno));
    else if (pid == host_pid)
        snprintf(why, sizeof(why), "pid namespace %llu is the host's", pid);
    else if (have_mnt && mnt == host_mnt)
        snprintf(why, sizeof(why), "mount namespace %llu is the host's", mnt);
    cordon__jw_bool(w, "contained", why[0] == '\0');
    cordon__jw_string(w, "contained_detail", why[0] != '\0' ? why : NULL);
    return why[0] == '\0';
}

/* One check's object in the report: its limit and the cap of its attempt. */
static void section_open(struct cordon__jw *w, const char *key, unsigned long long limit, unsigned long long cap)
{
    cordon__jw_open(w, key, '{');
    cordon__jw_uint(w, "limit", limit);
    cordon__jw_uint(w, "cap", cap);
}

/* ...closed early: the check could not start, and says why. */
static void section_fail(struct cordon__jw *w, const char *why, int e)
{
    cordon__jw_string(w, "error", why);
    cordon__jw_errno(w, e);
    cordon__jw_close(w, '}');
}

/* ---- disk: every writable mount, one budget ------------------------------ */

/* Mount points of /proc/self/mountinfo, \ooo unescaped, with their type. */
static bool mountinfo_next(FILE *f, char *point, size_t point_size, char *fstype, size_t fstype_size,
                           bool *ret_rw)
{
    char line[4096], *fields[12], *save = NULL, *sep;
    size_t n = 0, o = 0;

    if (fgets(line, sizeof(line), f) == NULL)
        return false;
    for (char *t = strtok_r(line, " \n", &save); t != NULL && n < 12; t = strtok_r(NULL, " \n", &save))
        fields[n++] = t;
    point[0] = fstype[0] = '\0';
    *ret_rw = false;
    if (n < 10)
        return true;
    /* The optional fields end at "-"; the type follows it. */
    for (size_t i = 6; i + 1 < n; i++)
        if (strcmp(fields[i], "-") == 0) {
            snprintf(fstype, fstype_size, "%s", fields[i + 1]);
            break;
        }
    *ret_rw = strncmp(fields[5], "rw", 2) == 0 && (fields[5][2] == '\0' || fields[5][2] == ',');
    for (const char *s = fields[4]; *s != '\0' && o + 1 < point_size; o++) {
        if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' &&
            s[3] <= '7') {
            point[o] = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
            s += 4;
        } else {
            point[o] = *s++;
        }
    }
    point[o] = '\0';
    sep = strchr(fstype, '.');
    if (sep != NULL) /* "fuse.sshfs": the family is enough */
        *sep = '\0';
    return true;
}

/* Kernel interfaces that hold no user data; writing to them fills nothing. */
static bool pseudo_fs(const char *t)
{
    static const char *const names[] = { "proc", "sysfs", "cgroup", "cgroup2", "mqueue", "devpts",
                                          "securityfs", "debugfs", "tracefs", "bpf", "pstore",
                                          "fusectl", "configfs", "binfmt_misc", "autofs", "nsfs",
                                          "hugetlbfs", "efivarfs", "selinuxfs", "rpc_pipefs" };

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(t, names[i]) == 0)
            return true;
    return false;
}

/* A fill writes files of at most FILL_FILE bytes: a per-file limit
 * (RLIMIT_FSIZE, EFBIG) only ends one file, the next one goes on, so only a
 * budget of the whole mount stops the fill. */
#define FILL_FILE (1ull << 20)
/* Files per mount before the fill gives up (EFBIG): 1 GiB + 1 MiB in files
 * of 1 MiB is 1025; only a per-file limit far below 1 MiB reaches it. */
#define FILL_MAX_FILES 2048u
#define FILL_DEPTH_DIRS 256u

struct fill {
    char dir[PATH_MAX];
    char name[40]; /* ".cordon-fill-<hex>"; files are name-0, name-1, ... */
    unsigned long long written;
    unsigned files; /* made so far, each removed at the end */
    int err;        /* why it stopped; 0: the cap */
};

static void fill_file_path(const struct fill *f, unsigned i, char *out, size_t size)
{
    snprintf(out, size, "%s%s%s-%u", f->dir, strcmp(f->dir, "/") == 0 ? "" : "/", f->name, i);
}

/* Write into f->dir, file after file, until the file system says stop
 * (ENOSPC, EDQUOT, or a new file that takes nothing) or cap bytes are
 * written. EFBIG ends a file, never the fill. */
static void fill_one(struct fill *f, unsigned long long cap)
{
    static char chunk[FILL_CHUNK];
    char hex[17], path[PATH_MAX + 64];

    for (size_t i = 0; i < 8; i++)
        snprintf(hex + 2 * i, 3, "%02x", (unsigned)(rand() & 0xff));
    snprintf(f->name, sizeof(f->name), ".cordon-fill-%s", hex);
    memset(chunk, 0x5a, sizeof(chunk));
    while (f->written < cap && f->err == 0) {
        unsigned long long in_file = 0;
        int fd;

        if (f->files >= FILL_MAX_FILES) {
            f->err = EFBIG;
            break;
        }
        fill_file_path(f, f->files, path, sizeof(path));
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
            f->err = errno;
            break;
        }
        f->files++;
        while (in_file < FILL_FILE && f->written < cap) {
            unsigned long long left = cap - f->written < FILL_FILE - in_file ? cap - f->written
                                                                             : FILL_FILE - in_file;
            ssize_t n = write(fd, chunk, left < FILL_CHUNK ? (size_t)left : FILL_CHUNK);

            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                /* A file that took nothing at all: the mount is full, or a
                 * per-file limit lets no file grow (then EFBIG reaches the
                 * host, which counts it as no stop). */
                if (n < 0 && errno == EFBIG && in_file > 0)
                    break;
                f->err = n < 0 ? errno : ENOSPC;
                break;
            }
            in_file += (unsigned long long)n;
            f->written += (unsigned long long)n;
        }
        /* Space a file system only reserved may fail at close. */
        if (close(fd) != 0 && f->err == 0)
            f->err = errno;
    }
}

/* Can this uid make a file in dir? (Asked with a test file, since access()
 * answers for the real uid and knows nothing of read-only binds.) */
static bool dir_writable(const char *dir)
{
    char path[PATH_MAX + 64], hex[17];
    int fd;

    for (size_t i = 0; i < 8; i++)
        snprintf(hex + 2 * i, 3, "%02x", (unsigned)(rand() & 0xff));
    snprintf(path, sizeof(path), "%s%s.cordon-try-%s", dir, strcmp(dir, "/") == 0 ? "" : "/", hex);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return false;
    close(fd);
    unlink(path);
    return true;
}

/* dir is a directory of the mount at point (the same device, below it). */
static bool on_mount(const char *dir, const char *point, dev_t dev)
{
    size_t len = strlen(point);
    struct stat st;

    if (strcmp(point, "/") != 0 && (strncmp(dir, point, len) != 0 || (dir[len] != '/' && dir[len] != '\0')))
        return false;
    return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == dev;
}

static bool sticky_world_writable(const char *dir)
{
    struct stat st;

    return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 01777;
}

/* A sticky 1777 directory at depth 1 or 2 below point, on its device,
 * that this uid can write, into out; false when there is none. */
static bool sticky_below(const char *point, dev_t dev, unsigned depth, char *out, size_t size)
{
    DIR *d = opendir(point);
    struct dirent *e;
    unsigned seen = 0;
    bool found = false;

    if (d == NULL)
        return false;
    while (!found && seen++ < FILL_DEPTH_DIRS && (e = readdir(d)) != NULL) {
        char sub[PATH_MAX];

        if (e->d_name[0] == '.' && (e->d_name[1] == '\0' || (e->d_name[1] == '.' && e->d_name[2] == '\0')))
            continue;
        if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN)
            continue;
        if ((size_t)snprintf(sub, sizeof(sub), "%s%s%s", point, strcmp(point, "/") == 0 ? "" : "/",
                             e->d_name) >= sizeof(sub) ||
            !on_mount(sub, point, dev))
            continue;
        if (sticky_world_writable(sub) && dir_writable(sub)) {
            snprintf(out, size, "%s", sub);
            found = true;
        } else if (depth > 1) {
            found = sticky_below(sub, dev, depth - 1, out, size);
        }
    }
    closedir(d);
    return found;
}

/*
 * Where this uid can write on the mount at point: the point itself, else
 * the world-writable places a program would use (/tmp, /var/tmp, /dev/shm,
 * $HOME) when they are on this mount, else a sticky 1777 directory at
 * depth 2 at most. A mount whose root is root's but whose /var/tmp is
 * anyone's stores a user's bytes all the same.
 */
static bool writable_place(const char *point, char *out, size_t size)
{
    const char *const common[] = { "/tmp", "/var/tmp", "/dev/shm", getenv("HOME") };
    struct stat st;

    if (dir_writable(point)) {
        snprintf(out, size, "%s", point);
        return true;
    }
    if (stat(point, &st) != 0)
        return false;
    for (size_t i = 0; i < sizeof(common) / sizeof(common[0]); i++)
        if (common[i] != NULL && common[i][0] == '/' && on_mount(common[i], point, st.st_dev) &&
            dir_writable(common[i])) {
            snprintf(out, size, "%s", common[i]);
            return true;
        }
    return sticky_below(point, st.st_dev, 2, out, size);
}

static void fill_remove(const struct fill *f, int *unlink_errno)
{
    char path[PATH_MAX + 64];

    for (unsigned i = 0; i < f->files; i++) {
        fill_file_path(f, i, path, sizeof(path));
        if (unlink(path) != 0 && *unlink_errno == 0)
            *unlink_errno = errno;
    }
}

/*
 * Fill every writable mount point (directories only: a file bind-mounted
 * writable is the host's file, and is only reported), keeping every file
 * until all are filled, since two mounts may be one file system and one
 * budget. At most disk + DISK_MARGIN bytes in all. Every file made is
 * removed before the report is written. More than MAX_MOUNTS writable
 * mounts are reported ("more_mounts"): the host cannot call a fill held
 * that never tried the rest.
 */
static void check_disk(struct cordon__jw *w, unsigned long long disk)
{
    static struct fill fills[MAX_MOUNTS];
    static char seen[MAX_MOUNTS][128];
    unsigned long long cap = disk + DISK_MARGIN, total = 0;
    char point[PATH_MAX], fstype[64];
    size_t nfills = 0, nseen = 0;
    bool rw, capped = false, more = false;
    int unlink_errno = 0;
    FILE *f = fopen("/proc/self/mountinfo", "re");

    section_open(w, "disk_bytes", disk, cap);
    if (f == NULL) {
        section_fail(w, "cannot read /proc/self/mountinfo", errno);
        return;
    }
    srand((unsigned)(now_ms(CLOCK_MONOTONIC) ^ (uint64_t)getpid()));
    cordon__jw_open(w, "mounts", '[');
    while (mountinfo_next(f, point, sizeof(point), fstype, sizeof(fstype), &rw)) {
        struct stat st;
        bool dup = false;

        if (!rw || point[0] != '/' || pseudo_fs(fstype))
            continue;
        /* The same point mounted twice: only the top one is visible. */
        for (size_t i = 0; i < nseen; i++)
            dup = dup || strcmp(seen[i], point) == 0;
        if (dup)
            continue;
        if (nseen >= MAX_MOUNTS || nfills >= MAX_MOUNTS) {
            more = true;
            break;
        }
        snprintf(seen[nseen++], sizeof(seen[0]), "%s", point);
        cordon__jw_open(w, NULL, '{');
        cordon__jw_string(w, "path", point);
        cordon__jw_string(w, "fstype", fstype);
        if (stat(point, &st) != 0 || !S_ISDIR(st.st_mode)) {
            cordon__jw_string(w, "skipped", "not a directory");
        } else if (total >= cap) {
            capped = true;
            cordon__jw_string(w, "skipped", "the cap was reached");
        } else {
            struct fill *fl = &fills[nfills];

            memset(fl, 0, sizeof(*fl));
            if (!writable_place(point, fl->dir, sizeof(fl->dir))) {
                cordon__jw_string(w, "skipped", "no place this uid can write");
            } else {
                nfills++;
                fill_one(fl, cap - total);
                total += fl->written;
                capped = capped || total >= cap;
                if (strcmp(fl->dir, point) != 0)
                    cordon__jw_string(w, "into", fl->dir);
                cordon__jw_uint(w, "written", fl->written);
                cordon__jw_uint(w, "files", fl->files);
                if (fl->err != 0)
                    cordon__jw_errno(w, fl->err);
            }
        }
        cordon__jw_close(w, '}');
    }
    fclose(f);
    cordon__jw_close(w, ']');
    for (size_t i = 0; i < nfills; i++)
        fill_remove(&fills[i], &unlink_errno);
    cordon__jw_uint(w, "written", total);
    cordon__jw_bool(w, "capped", capped);
    cordon__jw_bool(w, "more_mounts", more);
    cordon__jw_uint(w, "max_mounts", MAX_MOUNTS);
    cordon__jw_bool(w, "removed", unlink_errno == 0);
    cordon__jw_close(w, '}');
}

/* ---- pids: children that pause ------------------------------------------- */

static void check_pids(struct cordon__jw *w, unsigned long long pids)
{
    static pid_t kids[MAX_PIDS + PIDS_MARGIN];
    unsigned long long cap = pids + PIDS_MARGIN, n = 0;
    int err = 0;

    while (n < cap) {
        pid_t pid = fork();

        if (pid == 0) {
            /* Only a child this check started, and it dies with it. */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            for (;;)
                pause();
        }
        if (pid < 0) {
            err = errno;
            break;
        }
        kids[n++] = pid;
    }
    for (unsigned long long i = 0; i < n; i++)
        kill(kids[i], SIGKILL);
    for (unsigned long long i = 0; i < n; i++)
        while (waitpid(kids[i], NULL, 0) < 0 && errno == EINTR)
            ;
    section_open(w, "pids", pids, cap);
    cordon__jw_uint(w, "forked", n);
    if (err != 0)
        cordon__jw_errno(w, err);
    cordon__jw_close(w, '}');
}

/* ---- memory: a child that touches pages ---------------------------------- */

static void check_memory(struct cordon__jw *w, unsigned long long memory)
{
    unsigned long long cap = memory + MEMORY_MARGIN;
    /* The child's progress, where the parent still reads it after a kill. */
    volatile unsigned long long *touched = mmap(NULL, sizeof(*touched), PROT_READ | PROT_WRITE,
                                                MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int status = 0, map_errno = 0;
    pid_t pid;

    section_open(w, "memory_bytes", memory, cap);
    if (touched == MAP_FAILED) {
        section_fail(w, "cannot map the progress page", errno);
        return;
    }
    *touched = 0;
    pid = fork();
    if (pid == 0) {
        unsigned char *p;

        prctl(PR_SET_PDEATHSIG, SIGKILL);
        /* Step by step, so that a refusal says how far it got. */
        while (*touched < cap) {
            p = mmap(NULL, MEMORY_STEP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED)
                _exit(3);
            for (size_t off = 0; off < MEMORY_STEP; off += 4096)
                p[off] = 1;
            *touched += MEMORY_STEP;
        }
        _exit(0);
    }
    if (pid < 0) {
        map_errno = errno;
    } else {
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    }
    cordon__jw_uint(w, "touched", *touched);
    if (pid < 0) {
        cordon__jw_string(w, "error", "fork failed");
        cordon__jw_errno(w, map_errno);
    } else if (WIFSIGNALED(status)) {
        cordon__jw_string(w, "end", "signal");
        cordon__jw_int(w, "signal", WTERMSIG(status));
    } else {
        /* 0: everything touched; 3: an allocation was refused. */
        cordon__jw_string(w, "end", WEXITSTATUS(status) == 0 ? "completed" : "refused");
    }
    cordon__jw_close(w, '}');
    munmap((void *)touched, sizeof(*touched));
}

/* ---- cpus: spin, and compare CPU time with wall time ---------------------- */

/*
 * CPU_SPINNERS children spin for CPU_WINDOW_MS each, and their CPU time
 * (RUSAGE_CHILDREN) is set against the wall time: one spinner shows at
 * most 1.0 cpus, which a busy host may bring below what a small limit
 * allows; two show about 2.0 where nothing limits them.
 */
#define CPU_SPINNERS 2u

static uint64_t children_cpu_ms(void)
{
    struct rusage ru;

    if (getrusage(RUSAGE_CHILDREN, &ru) != 0)
        return 0;
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000u +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000u;
}

static void check_cpus(struct cordon__jw *w, unsigned long long cpus_milli)
{
    /* The earlier checks' children are in the sum already: only the
     * difference is the spinners'. */
    uint64_t cpu0 = children_cpu_ms(), wall0 = now_ms(CLOCK_MONOTONIC), wall, cpu;
    pid_t kids[CPU_SPINNERS];
    unsigned started = 0;
    int fork_errno = 0;

    for (; started < CPU_SPINNERS; started++) {
        pid_t pid = fork();

        if (pid == 0) {
            volatile unsigned long spin = 0;

            prctl(PR_SET_PDEATHSIG, SIGKILL);
            do {
                for (unsigned i = 0; i < 100000; i++)
                    spin++;
            } while (now_ms(CLOCK_MONOTONIC) - wall0 < CPU_WINDOW_MS);
            _exit(0);
        }
        if (pid < 0) {
            fork_errno = errno;
            break;
        }
        kids[started] = pid;
    }
    for (unsigned i = 0; i < started; i++)
        while (waitpid(kids[i], NULL, 0) < 0 && errno == EINTR)
            ;
    wall = now_ms(CLOCK_MONOTONIC) - wall0;
    cpu = children_cpu_ms() - cpu0;
    cordon__jw_open(w, "cpus", '{');
    cordon__jw_uint(w, "limit_milli", cpus_milli);
    cordon__jw_uint(w, "spinners", started);
    if (fork_errno != 0)
        cordon__jw_errno(w, fork_errno);
    cordon__jw_uint(w, "wall_ms", wall);
    cordon__jw_uint(w, "cpu_ms", cpu);
    cordon__jw_close(w, '}');
}

/* ---- the modes ------------------------------------------------------------ */

static bool parse_ull(const char *s, unsigned long long max, unsigned long long *ret)
{
    char *end;
    unsigned long long v;

    if (s == NULL || s[0] < '0' || s[0] > '9')
        return false;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v == 0 || v > max)
        return false;
    *ret = v;
    return true;
}

static int limits_usage(const char *why)
{
    fprintf(stderr,
            "cordon-observe: %s\n"
            "usage: cordon-observe --limits --host-ns STR --disk BYTES --memory BYTES --pids N "
            "--cpus-milli N\n"
            "       cordon-observe --flood BYTES\n",
            why);
    return 2;
}

static int print_report(struct cordon__jw *w)
{
    if (w->failed) {
        fprintf(stderr, "cordon-observe: the report does not fit in %u bytes\n", CORDON__MAX_REPORT_BYTES);
        return 1;
    }
    return cordon__write_all(STDOUT_FILENO, w->buf, w->len) == 0 ? 0 : 1;
}

int cordon__limits_main(int argc, char **argv)
{
    struct limits_opts o = { 0 };
    struct cordon__jw w = { 0 };
    int rc;

    for (int i = 1; i < argc; i += 2) {
        const char *arg = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = val != NULL;

        if (ok && strcmp(arg, "--host-ns") == 0)
            o.host_ns = val;
        else if (ok && strcmp(arg, "--disk") == 0)
            ok = parse_ull(val, MAX_LIMIT_BYTES, &o.disk);
        else if (ok && strcmp(arg, "--memory") == 0)
            ok = parse_ull(val, MAX_LIMIT_BYTES, &o.memory);
        else if (ok && strcmp(arg, "--pids") == 0)
            ok = parse_ull(val, MAX_PIDS, &o.pids);
        else if (ok && strcmp(arg, "--cpus-milli") == 0)
            ok = parse_ull(val, 1000u * 128u, &o.cpus_milli);
        else
            ok = false;
        if (!ok)
            return limits_usage("--limits: an unknown option, or a value missing or out of range (bytes up "
                                "to 1 GiB, pids up to 4096)");
    }
    if (o.host_ns == NULL || o.disk == 0 || o.memory == 0 || o.pids == 0 || o.cpus_milli == 0)
        return limits_usage("--limits wants --host-ns, --disk, --memory, --pids and --cpus-milli");
    /* A per-file size limit must end a file (EFBIG), not the observer
     * and with it the whole report. */
    signal(SIGXFSZ, SIG_IGN);
    cordon__jw_open(&w, NULL, '{');
    cordon__jw_int(&w, "limits_version", 2);
    /* Tmpfs pages are memory too: disk first, its files gone before the
     * memory check; forks before the spin, so that no child competes. */
    if (contained(&w, o.host_ns)) {
        check_disk(&w, o.disk);
        check_memory(&w, o.memory);
        check_pids(&w, o.pids);
        check_cpus(&w, o.cpus_milli);
    }
    cordon__jw_close(&w, '}');
    cordon__jw_raw(&w, "\n", 1);
    rc = print_report(&w);
    free(w.buf);
    return rc;
}

int cordon__flood_main(const char *bytes)
{
    static char chunk[FILL_CHUNK];
    unsigned long long n, done = 0;

    if (!parse_ull(bytes, MAX_FLOOD_BYTES, &n))
        return limits_usage("--flood wants 1 to 64 MiB");
    memset(chunk, 'x', sizeof(chunk));
    for (; done < n; done += FILL_CHUNK)
        if (cordon__write_all(STDOUT_FILENO, chunk, n - done < FILL_CHUNK ? (size_t)(n - done) : FILL_CHUNK) != 0)
            return 1;
    return 0;
}
