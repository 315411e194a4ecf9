/* sdk: the per-execution uid pool (see cordon/sdk/uid.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cordon/sdk/child.h>

#include <cordon/sdk/json.h>
#include <cordon/sdk/runner.h>
#include <cordon/sdk/uid.h>

#include "sdk/fs-internal.h"
#include <cordon/text.h>

#define OWNER_MAX CORDON_UID_OWNER_MAX
#define PART_MAX 128

static int check_name(const char *what, const char *s, size_t max, struct cordon_error *err)
{
    size_t n = s != NULL ? strlen(s) : 0;

    if (n == 0 || n > max)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: must be 1..%zu bytes", what, max);
    for (size_t i = 0; i < n; i++) {
        char c = s[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "%s: only [A-Za-z0-9._-] allowed (byte %zu)", what, i);
    }
    return 0;
}

/* "<host>.<id>", or id alone without a host: the content of the lock. */
static int make_owner(char buf[OWNER_MAX + 1], const char *host, const char *id,
                      struct cordon_error *err)
{
    bool with_host = host != NULL && host[0] != '\0';
    int r;

    if ((r = check_name("uid owner: execution id", id, PART_MAX, err)) < 0 ||
        (with_host && (r = check_name("uid owner: host instance id", host, PART_MAX, err)) < 0))
        return r;
    snprintf(buf, OWNER_MAX + 1, "%s%s%s", with_host ? host : "", with_host ? "." : "", id);
    return 0;
}

/* The pool directory (CORDON_UID_DIR when dir is NULL), made when missing;
 * it must be a real directory of ours. */
static int open_pool(const char *dir, struct cordon_error *err)
{
    struct stat st;
    int fd;

    if (dir == NULL)
        dir = CORDON_UID_DIR;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        /* the parent (/run/cordon) may be missing too */
        char parent[4096];
        char *slash;

        snprintf(parent, sizeof(parent), "%s", dir);
        slash = strrchr(parent, '/');
        if (errno != ENOENT || slash == NULL || slash == parent)
            return cordon_error_set(err, CORDON_E_IO, errno, "uid pool %s: %s", dir, strerror(errno));
        *slash = '\0';
        if ((mkdir(parent, 0755) != 0 && errno != EEXIST) || (mkdir(dir, 0700) != 0 && errno != EEXIST))
            return cordon_error_set(err, CORDON_E_IO, errno, "uid pool %s: %s", dir, strerror(errno));
    }
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "uid pool %s: %s", dir, strerror(errno));
    if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
        close(fd);
        return cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                "uid pool %s: must be a directory of uid %u, not writable by "
                                "group or others", dir, (unsigned)geteuid());
    }
    return fd;
}

/* The owner written in lock file name, or "" when it cannot be read. */
static void read_owner(int dfd, const char *name, char *buf, size_t cap)
{
    if (cordon__fs_read_small(dfd, name, buf, cap) < 0)
        buf[0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
}

/* A lock file's name as a uid of the pool, or 0 for anything else. */
static uid_t name_uid(const char *name)
{
    char *end;
    unsigned long v;

    if (name[0] < '1' || name[0] > '9')
        return 0;
    errno = 0;
    v = strtoul(name, &end, 10);
    if (errno != 0 || *end != '\0' || v > UINT32_MAX || !cordon_uid_in_pool((uid_t)v))
        return 0;
    return (uid_t)v;
}

/* Find owner's lock: 1 with *ret_uid, 0 when none. remove: unlink it too. */
static int find_owner(int dfd, const char *owner, bool remove, uid_t *ret_uid,
                      struct cordon_error *err)
{
    int fd = dup(dfd), found = 0;
    DIR *d;
    struct dirent *de;
    char text[OWNER_MAX + 2];

    if (fd < 0 || (d = fdopendir(fd)) == NULL) {
        if (fd >= 0)
            close(fd);
        return cordon_error_set(err, CORDON_E_IO, errno, "uid pool: %s", strerror(errno));
    }
    while ((de = readdir(d)) != NULL) {
        uid_t uid = name_uid(de->d_name);

        if (uid == 0)
            continue;
        read_owner(dfd, de->d_name, text, sizeof(text));
        if (strcmp(text, owner) != 0)
            continue;
        if (remove && unlinkat(dfd, de->d_name, 0) != 0 && errno != ENOENT) {
            found = cordon_error_set(err, CORDON_E_IO, errno, "uid pool: removing %s: %s",
                                     de->d_name, strerror(errno));
            break;
        }
        if (ret_uid != NULL)
            *ret_uid = uid;
        found = 1;
        if (!remove)
            break;
    }
    closedir(d);
    return found;
}

/* find_owner for host and id in the pool at dir (CORDON_UID_DIR when NULL). */
static int pool_find(const char *dir, const char *host, const char *id, bool remove,
                     uid_t *ret_uid, struct cordon_error *err)
{
    char owner[OWNER_MAX + 1];
    int dfd, r;

    if ((r = make_owner(owner, host, id, err)) < 0)
        return r;
    if ((dfd = open_pool(dir, err)) < 0)
        return dfd;
    r = find_owner(dfd, owner, remove, ret_uid, err);
    close(dfd);
    return r;
}

int cordon_uid_held(const char *dir, const char *host, const char *id, uid_t *ret_uid,
                    struct cordon_error *err)
{
    return pool_find(dir, host, id, false, ret_uid, err);
}

int cordon_uid_check_state(const char *dir, const char *host, const char *id, uid_t uid,
                           gid_t gid, struct cordon_error *err)
{
    char owner[OWNER_MAX + 1], name[16], text[OWNER_MAX + 2];
    int dfd, r;

    if ((r = make_owner(owner, host, id, err)) < 0)
        return r;
    if (cordon_uid_in_pool(uid) && (uid_t)gid == uid) {
        if ((dfd = open_pool(dir, err)) < 0)
            return dfd;
        snprintf(name, sizeof(name), "%u", (unsigned)uid);
        read_owner(dfd, name, text, sizeof(text));
        close(dfd);
        if (strcmp(text, owner) == 0)
            return 0;
    }
    return cordon_error_set(err, CORDON_E_INVALID, 0,
                            "state.uid: %u:%u is not the uid execution %s holds in the uid pool",
                            (unsigned)uid, (unsigned)gid, id);
}

int cordon_uid_parse(const char *field, const char *text, uid_t *ret_uid, gid_t *ret_gid,
                     struct cordon_error *err)
{
    unsigned long long v[2];
    const char *p = text;
    char *end;

    if (field == NULL || ret_uid == NULL || ret_gid == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "uid: field and outputs required");
    if (text == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: must be a string \"UID:GID\"",
                                field);
    for (int i = 0; i < 2; i++) {
        /* strtoull alone would take a sign, blanks or "0x". */
        if (*p < '0' || *p > '9')
            goto bad;
        errno = 0;
        v[i] = strtoull(p, &end, 10);
        if (errno != 0 || end - p > 10 || v[i] >= 0xffffffffull || *end != (i == 0 ? ':' : '\0'))
            goto bad;
        p = end + 1;
    }
    if (v[0] == 0 || v[1] == 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: \"%s\" refused: the sandbox user and group must not be "
                                "root (0)", field, text);
    /* A pool uid shared by configuration would share one execution's
     * per-user limits, and its processes, with every other. */
    if (cordon_uid_in_pool((uid_t)v[0]) || cordon_uid_in_pool((uid_t)v[1]))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: \"%s\" refused: %u..%u is the uid pool, given out one uid "
                                "per execution", field, text, CORDON_UID_BASE,
                                CORDON_UID_BASE + CORDON_UID_COUNT - 1);
    *ret_uid = (uid_t)v[0];
    *ret_gid = (gid_t)v[1];
    return 0;
bad:
    return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: \"%.*s\" must be \"UID:GID\" in decimal",
                            field, cordon_text_fit(text, 64), text);
}

int cordon_uid_from_state(const char *dir, const cJSON *doc, const char *host, const char *id,
                          bool pooled, uid_t *ret_uid, gid_t *ret_gid, struct cordon_error *err)
{
    uint64_t uid, gid;
    int r;

    if (doc == NULL || ret_uid == NULL || ret_gid == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "state: document and outputs required");
    if ((r = cordon_json_u64(cJSON_GetObjectItemCaseSensitive(doc, "uid"), "state.uid", 1,
                             0xfffffffeu, &uid, err)) < 0 ||
        (r = cordon_json_u64(cJSON_GetObjectItemCaseSensitive(doc, "gid"), "state.gid", 1,
                             0xfffffffeu, &gid, err)) < 0)
        return r;
    /* A uid of the pool is the one this execution holds, never another's. */
    if ((pooled || cordon_uid_in_pool((uid_t)uid) || cordon_uid_in_pool((uid_t)gid)) &&
        (r = cordon_uid_check_state(dir, host, id, (uid_t)uid, (gid_t)gid, err)) < 0)
        return r;
    *ret_uid = (uid_t)uid;
    *ret_gid = (gid_t)gid;
    return 0;
}

int cordon_uid_take(const char *dir, const char *host, const char *id, uid_t *ret_uid,
                    struct cordon_error *err)
{
    char owner[OWNER_MAX + 1], tmp[64 + OWNER_MAX], name[16];
    uint32_t h = 2166136261u;
    int dfd, fd, r;
    size_t len;

    if (ret_uid == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "uid: ret_uid required");
    if ((r = make_owner(owner, host, id, err)) < 0)
        return r;
    if ((dfd = open_pool(dir, err)) < 0)
        return dfd;
    r = find_owner(dfd, owner, false, NULL, err);
    if (r == 1)
        r = cordon_error_set(err, CORDON_E_EXISTS, 0,
                             "uid pool: %s already holds a uid (one per execution)", id);
    if (r != 0)
        goto out;
    /* The complete lock is written under a private name first, then linked
     * to its uid's name: whoever sees the uid's name sees its owner. */
    snprintf(tmp, sizeof(tmp), ".new-%s-%ld", owner, (long)getpid());
    len = strlen(owner);
    fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, owner, len) != (ssize_t)len || write(fd, "\n", 1) != 1) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "uid pool: writing a lock: %s",
                             strerror(errno));
        if (fd >= 0)
            close(fd);
        unlinkat(dfd, tmp, 0);
        goto out;
    }
    close(fd);
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)owner[i]) * 16777619u;
    r = 1;
    for (uint32_t k = 0; k < CORDON_UID_COUNT; k++) {
        uid_t uid = CORDON_UID_BASE + (h + k) % CORDON_UID_COUNT;

        snprintf(name, sizeof(name), "%u", (unsigned)uid);
        if (linkat(dfd, tmp, dfd, name, 0) == 0) {
            *ret_uid = uid;
            r = 0;
            break;
        }
        if (errno != EEXIST) {
            r = cordon_error_set(err, CORDON_E_IO, errno, "uid pool: taking %s: %s", name,
                                 strerror(errno));
            break;
        }
    }
    unlinkat(dfd, tmp, 0);
    if (r == 1)
        r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                             "uid pool: all %u uids from %u are taken (one per live execution)",
                             CORDON_UID_COUNT, CORDON_UID_BASE);
out:
    close(dfd);
    return r;
}

int cordon_uid_give_back(const char *dir, const char *host, const char *id,
                         struct cordon_error *err)
{
    int r = pool_find(dir, host, id, true, NULL, err);

    return r < 0 ? r : 0;
}

/* ---- every process of a uid ------------------------------------------------ */

/* The child of kill_all: become uid (raw syscalls: this task only, and no
 * capability is left after it) and signal every process it may. */
static CORDON_RUNNER_CHILD int kill_all_child(void *arg)
{
    uid_t uid = *(const uid_t *)arg;

    if (cordon_child_become(uid, (gid_t)uid) != 0)
        _exit(2);
    /* kill(-1) answers 0 while any other process exists, signalled or not:
     * its answer says nothing of uid's processes, only that it ran. */
    if (syscall(SYS_kill, -1, SIGKILL) != 0 && errno != ESRCH)
        _exit(2);
    _exit(0);
}

/*
 * Every process of uid, by one kill(-1) from a child that takes the uid.
 * The kernel signals, under its task list's lock, each process whose real
 * or saved uid is uid, where reading /proc cost a stat per process on the
 * machine and needed passes: a fork in progress is either on the list and
 * killed, or its parent was, and a parent with SIGKILL pending does not
 * finish a fork. The child shares our memory until it exits (CLONE_VFORK),
 * with every signal blocked so that no handler of ours runs on its stack.
 * false when this cannot be done (the caller then reads /proc).
 */
static bool kill_all(uid_t uid)
{
    char stack[16384] __attribute__((aligned(16)));
    sigset_t all, old;
    int status = 0;
    pid_t pid;

    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid = clone(kill_all_child, stack + sizeof(stack), CLONE_VM | CLONE_VFORK | SIGCHLD, &uid);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0)
        return false;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return false;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* uid owns pid (its /proc entry), and match, when given, says it is ours. */
static bool proc_matches(long pid, uid_t uid, bool (*match)(pid_t pid, void *arg), void *arg)
{
    char path[64];
    struct stat st;

    snprintf(path, sizeof(path), "/proc/%ld", pid);
    return stat(path, &st) == 0 && st.st_uid == uid && (match == NULL || match((pid_t)pid, arg));
}

void cordon_uid_sweep_matching(uid_t uid, bool (*match)(pid_t pid, void *arg), void *arg)
{
    for (int pass = 0; pass < 8; pass++) {
        DIR *proc = opendir("/proc");
        struct dirent *de;
        int killed = 0;

        if (proc == NULL)
            return;
        while ((de = readdir(proc)) != NULL) {
            char *end;
            long pid = strtol(de->d_name, &end, 10);
            int pidfd;

            if (*end != '\0' || pid <= 0 || pid == (long)getpid() || !proc_matches(pid, uid, match, arg))
                continue;
            /* Pin the process, then look again: the pid may have been reused. */
            pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
            if (pidfd < 0)
                continue;
            if (proc_matches(pid, uid, match, arg) && syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) == 0)
                killed++;
            close(pidfd);
        }
        closedir(proc);
        if (killed == 0)
            return;
        usleep(10000);
    }
}

void cordon_uid_sweep(uid_t uid)
{
    /* Without the kill(-1) child (no privilege to take the uid): /proc. */
    if (cordon_uid_in_pool(uid) && !kill_all(uid))
        cordon_uid_sweep_matching(uid, NULL, NULL);
}
