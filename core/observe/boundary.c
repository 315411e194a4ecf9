/*
 * core: the host's view of an execution from outside (core/observe/boundary.h).
 * Everything is read from /proc through a directory fd of the process, so
 * that one process's fields cannot come from two different processes that
 * shared a pid; a process whose start time changed while we read it is
 * reported unreadable.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/nsfs.h>

#include <cordon/sdk/json.h>

#include "core/observe/boundary.h"
#include "sdk/fs-internal.h"
#include "core/observe/proc-status.h"

#define ANSWER_MAX 4096u
#define STATUS_MAX (64u * 1024u)
#define CHILDREN_MAX 8192u
#define FDS_MAX 4096u
#define TASKS_MAX 1024u
#define ANCESTORS_MAX 64u

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *const ns_names[] = { "pid", "mnt", "net", "ipc", "uts", "user", "cgroup" };

uint64_t cordon__now_boot_ms(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_BOOTTIME, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static bool add_status_int(cJSON *obj, const char *status, const char *key, const char *as)
{
    char v[64], *end;
    long n;

    if (cordon__status_value(status, key, v, sizeof(v)) == NULL)
        return cJSON_AddNullToObject(obj, as) != NULL;
    errno = 0;
    n = strtol(v, &end, 10);
    if (errno != 0 || end == v || (*end != '\0' && *end != ' ' && *end != '\t'))
        return cJSON_AddNullToObject(obj, as) != NULL;
    return cJSON_AddNumberToObject(obj, as, (double)n) != NULL;
}

/* Field 22 of /proc/<pid>/stat (start time in clock ticks after boot) and
 * field 3 (the state letter); the command name in field 2 may hold
 * anything, so fields are counted after its last ')'. */
static bool stat_fields(int dirfd, unsigned long long *ret_start, char *ret_state)
{
    char buf[2048], *p;
    unsigned long long v = 0;

    if (cordon__fs_read_small(dirfd, "stat", buf, sizeof(buf)) < 0 || (p = strrchr(buf, ')')) == NULL)
        return false;
    p++;
    for (int field = 3; field <= 22; field++) {
        while (*p == ' ')
            p++;
        if (*p == '\0')
            return false;
        if (field == 3)
            *ret_state = *p;
        if (field == 22) {
            char *end;

            errno = 0;
            v = strtoull(p, &end, 10);
            if (errno != 0 || end == p)
                return false;
        }
        p += strcspn(p, " ");
    }
    *ret_start = v;
    return true;
}

/* The inode of dirfd's ns/<name>, and of its user namespace's parent. */
static bool ns_inode_at(int dirfd, const char *name, unsigned long long *ret)
{
    char path[32];
    struct stat st;

    snprintf(path, sizeof(path), "ns/%s", name);
    if (fstatat(dirfd, path, &st, 0) != 0)
        return false;
    *ret = (unsigned long long)st.st_ino;
    return true;
}

static bool user_ns_parent(int dirfd, unsigned long long *ret)
{
    int fd = openat(dirfd, "ns/user", O_RDONLY | O_CLOEXEC), parent;
    struct stat st;
    bool ok;

    if (fd < 0)
        return false;
    /* EPERM when the parent lies outside our own user namespace. */
    parent = ioctl(fd, NS_GET_PARENT);
    close(fd);
    if (parent < 0)
        return false;
    ok = fstat(parent, &st) == 0;
    close(parent);
    if (ok)
        *ret = (unsigned long long)st.st_ino;
    return ok;
}

static bool add_u64_or_null(cJSON *obj, const char *key, bool have, unsigned long long v)
{
    return have ? cJSON_AddNumberToObject(obj, key, (double)v) != NULL
                : cJSON_AddNullToObject(obj, key) != NULL;
}

/* True when target is a path whose last components are "/" + rel. */
static bool ends_with_path(const char *target, const char *rel)
{
    size_t t = strlen(target), r = strlen(rel);

    return r > 0 && t > r && target[t - r - 1] == '/' && strcmp(target + t - r, rel) == 0;
}

/*
 * The thread ids of the process; whether any of its fds is a KVM VM
 * (gVisor's kvm platform runs the sandbox inside one); and the fd it
 * holds on the observer's own file, if any: gVisor's Sentry keeps an fd
 * of every file its sandbox opened or executed through the gofer, so the
 * Sentry that ran this observation holds one on a file whose name
 * (random, the host's) no other sandbox ever had.
 */
static bool add_tasks_and_fds(cJSON *proc, int pfd, const char *observer_rel)
{
    cJSON *tasks = cJSON_AddArrayToObject(proc, "tasks");
    int fd = openat(pfd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char held[PATH_MAX] = "";
    unsigned n = 0;
    bool kvm = false, ok = tasks != NULL;
    DIR *d;

    if (ok && fd >= 0 && (d = fdopendir(fd)) != NULL) {
        struct dirent *de;

        while (ok && (de = readdir(d)) != NULL && n < TASKS_MAX) {
            if (de->d_name[0] < '0' || de->d_name[0] > '9')
                continue;
            ok = cJSON_AddItemToArray(tasks, cJSON_CreateNumber(atof(de->d_name)));
            n++;
        }
        closedir(d);
    } else if (fd >= 0) {
        close(fd);
    }
    fd = openat(pfd, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (ok && fd >= 0 && (d = fdopendir(fd)) != NULL) {
        struct dirent *de;
        unsigned seen = 0;

        while ((de = readdir(d)) != NULL && seen++ < FDS_MAX) {
            char target[PATH_MAX];
            ssize_t len = readlinkat(dirfd(d), de->d_name, target, sizeof(target) - 1);

            if (len <= 0)
                continue;
            target[len] = '\0';
            kvm = kvm || strcmp(target, "anon_inode:kvm-vm") == 0;
            if (held[0] == '\0' && observer_rel != NULL && ends_with_path(target, observer_rel))
                snprintf(held, sizeof(held), "%s", target);
        }
        closedir(d);
    } else if (fd >= 0) {
        close(fd);
    }
    return ok && cJSON_AddBoolToObject(proc, "kvm_vm_fd", kvm) != NULL &&
           (held[0] != '\0' ? cordon_json_add_text(proc, "observer_fd", held) != NULL
                             : cJSON_AddNullToObject(proc, "observer_fd") != NULL);
}

/* The children of every thread of the process, appended to kids. */
static void children_of(int pfd, pid_t *kids, size_t *n, size_t max)
{
    int fd = openat(pfd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d;
    struct dirent *de;

    if (fd < 0 || (d = fdopendir(fd)) == NULL) {
        if (fd >= 0)
            close(fd);
        return;
    }
    while ((de = readdir(d)) != NULL && *n < max) {
        char path[64], list[CHILDREN_MAX];

        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "%s/children", de->d_name);
        if (cordon__fs_read_small(dirfd(d), path, list, sizeof(list)) < 0)
            continue;
        for (char *p = list, *end; *p != '\0' && *n < max; p = end) {
            long v;

            errno = 0;
            v = strtol(p, &end, 10);
            if (errno != 0 || end == p)
                break;
            if (v > 0)
                kids[(*n)++] = (pid_t)v;
            while (*end == ' ' || *end == '\n')
                end++;
        }
    }
    closedir(d);
}

/*
 * One process as the host sees it. kids (optional) gets its children.
 * The object always says "readable"; when false, "error" says why and
 * nothing else of it is there to be trusted.
 */
static cJSON *read_process(pid_t pid, pid_t root, bool boundary, const char *observer_rel, pid_t *kids,
                           size_t *nkids, size_t max)
{
    static const char *const caps[][2] = { { "CapInh", "inh" }, { "CapPrm", "prm" }, { "CapEff", "eff" },
                                           { "CapBnd", "bnd" }, { "CapAmb", "amb" } };
    cJSON *p = cJSON_CreateObject(), *obj;
    char path[32], exe[PATH_MAX], v[128], map[1024], state = '?', *status = malloc(STATUS_MAX);
    unsigned long long start = 0, again = 0, ino = 0;
    const char *why = NULL;
    long clk = sysconf(_SC_CLK_TCK);
    ssize_t n;
    int dirfd;
    bool ok;

    if (p == NULL || status == NULL || !cJSON_AddNumberToObject(p, "pid", pid) ||
        !cJSON_AddNumberToObject(p, "root", root) || !cJSON_AddBoolToObject(p, "boundary", boundary)) {
        cJSON_Delete(p);
        free(status);
        return NULL;
    }
    snprintf(path, sizeof(path), "/proc/%ld", (long)pid);
    dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0)
        why = errno == ENOENT ? "no such process" : strerror(errno);
    else if (!stat_fields(dirfd, &start, &state))
        why = "its stat cannot be read";
    else if (cordon__fs_read_small(dirfd, "status", status, STATUS_MAX) < 0)
        why = "its status cannot be read";
    if (why != NULL) {
        ok = cJSON_AddBoolToObject(p, "readable", false) && cJSON_AddStringToObject(p, "error", why);
        goto out;
    }
    ok = cJSON_AddBoolToObject(p, "readable", true) != NULL &&
         cJSON_AddStringToObject(p, "state", (char[]){ state, '\0' }) != NULL &&
         cJSON_AddNumberToObject(p, "starttime_ms",
                                 clk > 0 ? (double)start * 1000.0 / (double)clk : 0.0) != NULL;
    if (ok && cordon__status_value(status, "Name", v, sizeof(v)) != NULL)
        ok = cordon_json_add_text(p, "name", v);
    n = readlinkat(dirfd, "exe", exe, sizeof(exe) - 1);
    if (ok && n > 0) {
        exe[n] = '\0';
        ok = cordon_json_add_text(p, "exe", exe);
    }
    ok = ok && add_status_int(p, status, "PPid", "parent") && add_status_int(p, status, "TracerPid", "tracer") &&
         add_status_int(p, status, "NoNewPrivs", "no_new_privs") && add_status_int(p, status, "Seccomp", "seccomp");
    /* Real, effective, saved and filesystem uid, as the host numbers them. */
    if (ok && cordon__status_value(status, "Uid", v, sizeof(v)) != NULL) {
        cJSON *uids = cJSON_AddArrayToObject(p, "uids");
        char *s = v, *end;

        ok = uids != NULL;
        for (int i = 0; ok && i < 4; i++, s = end) {
            unsigned long long u;

            errno = 0;
            u = strtoull(s, &end, 10);
            if (errno != 0 || end == s)
                break;
            ok = cJSON_AddItemToArray(uids, cJSON_CreateNumber((double)u));
        }
    }
    obj = ok ? cJSON_AddObjectToObject(p, "caps") : NULL;
    ok = obj != NULL;
    for (size_t i = 0; ok && i < COUNT(caps); i++) {
        const char *hex = cordon__status_value(status, caps[i][0], v, sizeof(v));

        ok = hex != NULL ? cJSON_AddStringToObject(obj, caps[i][1], hex) != NULL
                         : cJSON_AddNullToObject(obj, caps[i][1]) != NULL;
    }
    obj = ok ? cJSON_AddObjectToObject(p, "ns") : NULL;
    ok = obj != NULL;
    for (size_t i = 0; ok && i < COUNT(ns_names); i++) {
        bool have = ns_inode_at(dirfd, ns_names[i], &ino);

        ok = add_u64_or_null(obj, ns_names[i], have, ino);
    }
    if (ok) {
        bool have = user_ns_parent(dirfd, &ino);

        ok = add_u64_or_null(p, "user_ns_parent", have, ino);
    }
    if (ok) {
        n = cordon__fs_read_small(dirfd, "uid_map", map, sizeof(map));
        ok = n >= 0 ? cJSON_AddStringToObject(p, "uid_map", map) != NULL
                    : cJSON_AddNullToObject(p, "uid_map") != NULL;
    }
    if (ok && boundary)
        ok = add_tasks_and_fds(p, dirfd, observer_rel);
    if (ok && kids != NULL)
        children_of(dirfd, kids, nkids, max);
    /* The same process from the first read to the last, or none of it. */
    if (ok && (!stat_fields(dirfd, &again, &state) || again != start)) {
        cJSON_DeleteItemFromObjectCaseSensitive(p, "readable");
        ok = cJSON_AddBoolToObject(p, "readable", false) &&
             cJSON_AddStringToObject(p, "error", "it changed while the host read it");
    }
out:
    free(status);
    if (dirfd >= 0)
        close(dirfd);
    if (!ok) {
        cJSON_Delete(p);
        return NULL;
    }
    return p;
}

bool cordon__host_self(cJSON *view)
{
    unsigned long long ino = 0;
    char boot_id[80];
    cJSON *self, *anc, *ns;
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, boot_id, sizeof(boot_id) - 1) : -1;
    bool have_ino, ok;
    pid_t pid = getpid();

    if (fd >= 0)
        close(fd);
    while (n > 0 && (boot_id[n - 1] == '\n' || boot_id[n - 1] == ' '))
        n--;
    if (n > 0)
        boot_id[n] = '\0';
    ok = n > 0 ? cJSON_AddStringToObject(view, "boot_id", boot_id) != NULL
               : cJSON_AddNullToObject(view, "boot_id") != NULL;
    self = ok ? cJSON_AddObjectToObject(view, "self") : NULL;
    anc = self != NULL && cJSON_AddNumberToObject(self, "pid", pid) ? cJSON_AddArrayToObject(self, "ancestors")
                                                                    : NULL;
    ok = anc != NULL;
    /* Our own ancestors: a boundary pid among them is no sandbox of ours. */
    for (unsigned i = 0; ok && i < ANCESTORS_MAX && pid > 1; i++) {
        char path[64], status[4096], v[32];
        int dfd;

        snprintf(path, sizeof(path), "/proc/%ld", (long)pid);
        dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
            break;
        n = cordon__fs_read_small(dfd, "status", status, sizeof(status));
        close(dfd);
        if (n < 0 || cordon__status_value(status, "PPid", v, sizeof(v)) == NULL || (pid = (pid_t)atol(v)) <= 0)
            break;
        ok = cJSON_AddItemToArray(anc, cJSON_CreateNumber(pid));
    }
    fd = open("/proc/1", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    have_ino = fd >= 0 && ns_inode_at(fd, "mnt", &ino);
    if (fd >= 0)
        close(fd);
    ns = ok ? cJSON_AddObjectToObject(view, "pid1_ns") : NULL;
    return ns != NULL && add_u64_or_null(ns, "mnt", have_ino, ino);
}

static cJSON *failed(cJSON *view, const char *what, const char *detail)
{
    char msg[512];

    snprintf(msg, sizeof(msg), "%s: %s", what, detail);
    cJSON_DeleteItemFromObjectCaseSensitive(view, "status");
    if (!cJSON_AddStringToObject(view, "status", "failed") || !cordon_json_add_text(view, "error", msg)) {
        cJSON_Delete(view);
        return NULL;
    }
    return view;
}

static bool has_boundary(const struct cordon_provider_v1 *p)
{
    return p->struct_size >= offsetof(struct cordon_provider_v1, boundary) + sizeof(p->boundary) &&
           p->boundary != NULL;
}

/* The provider's answer, checked: {"pids": [1 to 8 positive pids]}. */
static int answer_pids(const char *answer, pid_t *pids, size_t *ret_n, const char **ret_why)
{
    cJSON *doc = answer != NULL && strnlen(answer, ANSWER_MAX + 1) <= ANSWER_MAX ? cJSON_Parse(answer) : NULL;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(doc, "pids"), *item;
    size_t n = 0;
    int r = -1;

    *ret_why = "it is not a JSON object of at most 4096 bytes with \"pids\": [1 to 8 pids]";
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1 ||
        cJSON_GetArraySize(arr) > CORDON__BOUNDARY_PIDS_MAX)
        goto out;
    cJSON_ArrayForEach(item, arr) {
        double v = cJSON_GetNumberValue(item);

        if (!cJSON_IsNumber(item) || v < 1 || v > INT_MAX || v != (double)(pid_t)v) {
            *ret_why = "a pid is not a whole number from 1 to 2147483647";
            goto out;
        }
        pids[n++] = (pid_t)v;
    }
    *ret_n = n;
    r = 0;
out:
    cJSON_Delete(doc);
    return r;
}

cJSON *cordon__boundary_view(const struct cordon_host_v1 *host, const struct cordon_provider_v1 *p,
                             struct cordon_resource *res, const char *state, const char *observer_rel,
                             uint64_t before_ms, uint64_t after_ms)
{
    pid_t pids[CORDON__BOUNDARY_PIDS_MAX], queue[CORDON__BOUNDARY_PROCS_MAX], roots[CORDON__BOUNDARY_PROCS_MAX];
    cJSON *view = cJSON_CreateObject(), *arr, *procs, *win;
    struct cordon_error perr;
    char *answer = NULL;
    const char *why = NULL;
    size_t n = 0, queued = 0;
    bool truncated = false;
    int r;

    if (view == NULL)
        return NULL;
    if (!has_boundary(p)) {
        if (!cJSON_AddStringToObject(view, "status", "unsupported")) {
            cJSON_Delete(view);
            return NULL;
        }
        return view;
    }
    if (!cJSON_AddStringToObject(view, "status", "reported")) {
        cJSON_Delete(view);
        return NULL;
    }
    cordon_error_init(&perr);
    r = p->boundary(res, state, &answer, &perr);
    if (r < 0)
        return failed(view, "the provider's boundary failed", perr.message);
    r = answer_pids(answer, pids, &n, &why);
    if (answer != NULL)
        host->free(answer);
    if (r < 0)
        return failed(view, "the provider's boundary answer is refused", why);
    arr = cJSON_AddArrayToObject(view, "pids");
    procs = cJSON_AddArrayToObject(view, "processes");
    win = cJSON_AddObjectToObject(view, "window_ms");
    if (arr == NULL || procs == NULL || win == NULL || !cJSON_AddNumberToObject(win, "before", (double)before_ms) ||
        !cordon_json_add_text(view, "observer", observer_rel) ||
        !cJSON_AddNumberToObject(win, "after", (double)after_ms) ||
        !cJSON_AddNumberToObject(view, "clk_tck", (double)sysconf(_SC_CLK_TCK))) {
        cJSON_Delete(view);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (!cJSON_AddItemToArray(arr, cJSON_CreateNumber(pids[i]))) {
            cJSON_Delete(view);
            return NULL;
        }
        queue[queued] = pids[i];
        roots[queued++] = pids[i];
    }
    /* Breadth first: the boundary processes, then what descends from them. */
    for (size_t i = 0; i < queued; i++) {
        pid_t kids[CORDON__BOUNDARY_PROCS_MAX];
        size_t nkids = 0;
        cJSON *proc = read_process(queue[i], roots[i], i < n, observer_rel, kids, &nkids, COUNT(kids));

        if (proc == NULL || !cJSON_AddItemToArray(procs, proc)) {
            cJSON_Delete(proc);
            cJSON_Delete(view);
            return NULL;
        }
        for (size_t k = 0; k < nkids; k++) {
            bool seen = false;

            for (size_t j = 0; j < queued && !seen; j++)
                seen = queue[j] == kids[k];
            if (seen)
                continue;
            if (queued == COUNT(queue)) {
                truncated = true;
                break;
            }
            queue[queued] = kids[k];
            roots[queued++] = roots[i];
        }
    }
    if (!cJSON_AddBoolToObject(view, "truncated", truncated)) {
        cJSON_Delete(view);
        return NULL;
    }
    return view;
}
