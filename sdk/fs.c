/* sdk: host file work beneath a directory fd that never follows a link (removal of a
 * tree: sdk/fs-remove.c). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cordon/sdk/fs.h>
#include <cordon/sdk/path.h>

#include "sdk/fs-internal.h"

#define COPY_CHUNK (64u * 1024u)
#define RESOLVE_SAFE (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

/* Set once the kernel said ENOSYS to openat2; the component walk is used from then on. */
static int openat2_missing;

const char *cordon__file_type_name(mode_t mode)
{
    switch (mode & S_IFMT) {
    case S_IFREG: return "regular file";
    case S_IFDIR: return "directory";
    case S_IFLNK: return "symbolic link";
    case S_IFIFO: return "FIFO";
    case S_IFSOCK: return "socket";
    case S_IFCHR: return "character device";
    case S_IFBLK: return "block device";
    default: return "file of unknown type";
    }
}

/* The CORDON_E_* code of a failed system call. */
static int code_of_errno(int e)
{
    switch (e) {
    case ENOENT: return CORDON_E_NOT_FOUND;
    case EEXIST: return CORDON_E_EXISTS;
    case ELOOP:
    case EXDEV: return CORDON_E_UNSAFE;
    case ENOMEM: return CORDON_E_NOMEM;
    default: return CORDON_E_IO;
    }
}

/* The error of a failed system call on rel; ELOOP and EXDEV come from the resolve flags. */
int cordon__fs_fail(struct cordon_error *err, int e, const char *rel, const char *what)
{
    if (e == ELOOP || e == EXDEV)
        return cordon_error_set(err, CORDON_E_UNSAFE, e,
                                "path \"%.*s\": %s: a symbolic link or a way out of the "
                                "directory is in the way",
                                cordon_text_fit(rel, 200), rel, what);
    return cordon_error_set(err, code_of_errno(e), e, "path \"%.*s\": %s: %s",
                            cordon_text_fit(rel, 200), rel, what, strerror(e));
}

/* True when rel has a ".." component. */
static bool has_dotdot(const char *rel)
{
    for (const char *p = rel; *p != '\0';) {
        size_t clen = strcspn(p, "/");

        if (clen == 2 && p[0] == '.' && p[1] == '.')
            return true;
        p += clen;
        p += strspn(p, "/");
    }
    return false;
}

/* Absolute paths and ".." are refused before the kernel sees them, so that
 * the openat2 path and the fallback walk agree. */
int cordon__fs_check_rel(const char *rel, struct cordon_error *err)
{
    if (rel == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "path: missing");
    if (rel[0] == '/')
        return cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                "path \"%.*s\": absolute paths are not allowed",
                                cordon_text_fit(rel, 200), rel);
    if (has_dotdot(rel))
        return cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                "path \"%.*s\": \"..\" components are not allowed",
                                cordon_text_fit(rel, 200), rel);
    return 0;
}

/* Fallback for kernels without openat2: one O_NOFOLLOW step per component.
 * Returns an fd or -errno. */
static int open_walk(int dirfd, const char *rel, int flags, mode_t mode)
{
    char comp[NAME_MAX + 1];
    const char *p = rel;
    int cur, e;

    cur = openat(dirfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (cur < 0)
        return -errno;
    for (;;) {
        size_t clen = strcspn(p, "/");
        const char *next = p + clen + strspn(p + clen, "/");
        struct stat st;
        int fd;

        if (clen > NAME_MAX) {
            close(cur);
            return -ENAMETOOLONG;
        }
        memcpy(comp, p, clen);
        comp[clen] = '\0';
        if (*next == '\0') {
            fd = openat(cur, clen == 0 ? "." : comp, flags, mode);
            e = errno;
            /* O_PATH | O_NOFOLLOW opens a final symlink instead of failing,
             * and with O_DIRECTORY it says ENOTDIR. */
            if (fd >= 0 && (flags & O_PATH) && fstat(fd, &st) == 0 && S_ISLNK(st.st_mode)) {
                close(fd);
                fd = -1;
                e = ELOOP;
            } else if (fd < 0 && e == ENOTDIR && clen > 0 &&
                       fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
                e = ELOOP;
            }
            close(cur);
            return fd >= 0 ? fd : -e;
        }
        p = next;
        if (clen == 0 || (clen == 1 && comp[0] == '.'))
            continue;
        fd = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            e = errno;
            if (e == ENOTDIR && fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                S_ISLNK(st.st_mode))
                e = ELOOP;
            close(cur);
            return -e;
        }
        close(cur);
        cur = fd;
    }
}

/* Open rel (already checked) beneath dirfd. Returns an fd or -errno. */
int cordon__fs_open_raw(int dirfd, const char *rel, int flags, mode_t mode)
{
    struct open_how how;
    bool creates = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;

    if (rel[0] == '\0')
        rel = ".";
    flags |= O_CLOEXEC | O_NOFOLLOW;
    if (__atomic_load_n(&openat2_missing, __ATOMIC_RELAXED))
        return open_walk(dirfd, rel, flags, mode);
    memset(&how, 0, sizeof(how));
    /* With O_NOFOLLOW a final symlink is opened itself (O_PATH) or gives
     * ENOTDIR (O_DIRECTORY); without it RESOLVE_NO_SYMLINKS says ELOOP. */
    how.flags = (uint64_t)(unsigned)((flags & (O_PATH | O_DIRECTORY)) ? flags & ~O_NOFOLLOW
                                                                         : flags);
    how.mode = creates ? (mode & 07777) : 0;
    how.resolve = RESOLVE_SAFE;
    /* EAGAIN: a concurrent rename or mount; the kernel asks for a retry. */
    for (int tries = 0;; tries++) {
        long fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));

        if (fd >= 0)
            return (int)fd;
        if (errno == EINTR || (errno == EAGAIN && tries < 8))
            continue;
        if (errno == ENOSYS) {
            __atomic_store_n(&openat2_missing, 1, __ATOMIC_RELAXED);
            return open_walk(dirfd, rel, flags, mode);
        }
        return -errno;
    }
}

int cordon_fs_open_beneath(int dirfd, const char *rel, int flags, mode_t mode, int *ret_fd,
                           struct cordon_error *err)
{
    int r, fd;

    r = cordon__fs_check_rel(rel, err);
    if (r < 0)
        return r;
    if (ret_fd == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "path \"%.*s\": no result pointer",
                                cordon_text_fit(rel, 200), rel);
    fd = cordon__fs_open_raw(dirfd, rel, flags, mode);
    if (fd < 0)
        return cordon__fs_fail(err, -fd, rel, "open");
    *ret_fd = fd;
    return 0;
}

int cordon_fs_open_regular(int dirfd, const char *rel, uint64_t max_bytes, int *ret_fd,
                           uint64_t *ret_size, struct cordon_error *err)
{
    struct stat st;
    int fd = -1, fl, r;

    if (ret_fd == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "path: no result pointer");
    /* O_NONBLOCK: opening a FIFO must not wait for a writer before we can refuse it. */
    r = cordon_fs_open_beneath(dirfd, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0, &fd, err);
    if (r < 0)
        return r;
    if (fstat(fd, &st) < 0) {
        r = cordon__fs_fail(err, errno, rel, "stat");
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        r = cordon_error_set(err, CORDON_E_UNSAFE, 0,
                             "path \"%.*s\": is a %s; only regular files are allowed",
                             cordon_text_fit(rel, 200), rel, cordon__file_type_name(st.st_mode));
        goto out;
    }
    if (max_bytes != 0 && (uint64_t)st.st_size > max_bytes) {
        r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                             "path \"%.*s\": file is %" PRIu64 " bytes, more than the limit "
                             "of %" PRIu64 " bytes",
                             cordon_text_fit(rel, 200), rel, (uint64_t)st.st_size, max_bytes);
        goto out;
    }
    fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        r = cordon__fs_fail(err, errno, rel, "fcntl");
        goto out;
    }
    *ret_fd = fd;
    fd = -1;
    if (ret_size != NULL)
        *ret_size = (uint64_t)st.st_size;
out:
    if (fd >= 0)
        close(fd);
    return r;
}

int cordon_fs_mkdirs_beneath(int dirfd, const char *rel, mode_t mode, struct cordon_error *err)
{
    char comp[NAME_MAX + 1];
    const char *p;
    int cur = -1, r;

    r = cordon__fs_check_rel(rel, err);
    if (r < 0)
        return r;
    cur = openat(dirfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (cur < 0)
        return cordon__fs_fail(err, errno, rel, "open the base directory");
    for (p = rel; *p != '\0';) {
        size_t clen = strcspn(p, "/");
        int fd;

        if (clen > NAME_MAX) {
            r = cordon_error_set(err, CORDON_E_INVALID, 0,
                                 "path \"%.*s\": a component is longer than %d bytes",
                                 cordon_text_fit(rel, 200), rel, NAME_MAX);
            goto out;
        }
        memcpy(comp, p, clen);
        comp[clen] = '\0';
        p += clen;
        p += strspn(p, "/");
        if (clen == 0 || strcmp(comp, ".") == 0)
            continue;
        /* mkdirat never follows a link; EEXIST is checked by the open below. */
        if (mkdirat(cur, comp, mode) < 0 && errno != EEXIST) {
            r = cordon__fs_fail(err, errno, rel, "create directory");
            goto out;
        }
        fd = cordon__fs_open_raw(cur, comp, O_PATH | O_DIRECTORY, 0);
        if (fd == -ENOTDIR) {
            r = cordon_error_set(err, CORDON_E_EXISTS, ENOTDIR,
                                 "path \"%.*s\": \"%s\" exists and is not a directory",
                                 cordon_text_fit(rel, 200), rel, comp);
            goto out;
        }
        if (fd < 0) {
            r = cordon__fs_fail(err, -fd, rel, "open directory");
            goto out;
        }
        close(cur);
        cur = fd;
    }
out:
    if (cur >= 0)
        close(cur);
    return r;
}

int cordon__fs_read_fd(int fd, const char *name, size_t max_bytes, size_t size_hint, char **ret_buf,
                       size_t *ret_len, struct cordon_error *err)
{
    /* max_bytes + 1 must fit, with the NUL */
    size_t limit = max_bytes < SIZE_MAX - 1 ? max_bytes : SIZE_MAX - 2;
    size_t len = 0, cap = (size_hint < limit ? size_hint : limit) + 1;
    char *buf = malloc(cap);
    int r = 0;

    if (buf == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "%s: out of memory", name);
    /* A size from fstat is a hint: the file may grow, and is read to EOF
     * under the limit, one byte past it to tell "exactly the limit" from
     * "more". */
    for (;;) {
        ssize_t n;

        if (len == cap - 1) {
            char *nbuf;

            if (len == limit + 1) {
                r = cordon_error_set(err, CORDON_E_LIMIT, 0, "%s: more than the limit of %zu bytes", name,
                                     limit);
                goto out;
            }
            cap = cap - 1 < (limit + 1) / 2 ? cap * 2 : limit + 2;
            nbuf = realloc(buf, cap);
            if (nbuf == NULL) {
                r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "%s: out of memory", name);
                goto out;
            }
            buf = nbuf;
        }
        n = read(fd, buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r = cordon_error_set(err, CORDON_E_IO, errno, "%s: read: %s", name, strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    *ret_buf = buf;
    buf = NULL;
    if (ret_len != NULL)
        *ret_len = len;
out:
    free(buf);
    return r;
}

int cordon_fs_read_file(int dirfd, const char *rel, size_t max_bytes, char **ret_buf,
                        size_t *ret_len, struct cordon_error *err)
{
    /* 0 is "no limit" as for open_regular. */
    size_t limit = max_bytes != 0 ? max_bytes : SIZE_MAX;
    char name[256];
    uint64_t size;
    int fd = -1, r;

    if (ret_buf == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "path: no result pointer");
    r = cordon_fs_open_regular(dirfd, rel, limit, &fd, &size, err);
    if (r < 0)
        return r;
    snprintf(name, sizeof(name), "path \"%.*s\"", cordon_text_fit(rel, 200), rel);
    r = cordon__fs_read_fd(fd, name, limit, (size_t)size, ret_buf, ret_len, err);
    close(fd);
    return r;
}

int cordon_fs_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t n = write(fd, p, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return -EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/*
 * Split rel into its parent ("." when none; malloc'd) and its last
 * component (points into rel). Trailing slashes are ignored.
 */
int cordon__fs_split_parent(const char *rel, char **ret_parent, char **ret_base,
                            struct cordon_error *err)
{
    size_t len = strlen(rel);
    char *copy, *slash, *parent, *base;

    while (len > 1 && rel[len - 1] == '/')
        len--;
    copy = strndup(rel, len);
    if (copy == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "path \"%.*s\": out of memory",
                                cordon_text_fit(rel, 200), rel);
    slash = strrchr(copy, '/');
    if (slash == NULL) {
        base = strdup(copy);
        parent = strdup(".");
    } else {
        *slash = '\0';
        base = strdup(slash + 1);
        parent = strdup(copy);
    }
    free(copy);
    if (base == NULL || parent == NULL) {
        free(base);
        free(parent);
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "path \"%.*s\": out of memory",
                                cordon_text_fit(rel, 200), rel);
    }
    if (base[0] == '\0' || strcmp(base, ".") == 0) {
        free(base);
        free(parent);
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "path \"%.*s\": names a directory, not an entry in it",
                                cordon_text_fit(rel, 200), rel);
    }
    *ret_parent = parent;
    *ret_base = base;
    return 0;
}

/* A fresh file ".cordon-tmp-<random>" in pfd, 0600. Returns an fd or -errno. */
static int make_temp(int pfd, char name[32])
{
    static uint64_t counter;

    for (int tries = 0; tries < CORDON__FS_TEMP_TRIES; tries++) {
        uint64_t rnd;
        int fd;

        if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd)) {
            struct timespec ts;

            clock_gettime(CLOCK_MONOTONIC, &ts);
            rnd = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^
                  __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
        }
        snprintf(name, 32, ".cordon-tmp-%016" PRIx64, rnd);
        fd = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST)
            return -errno;
    }
    return -EEXIST;
}

int cordon_fs_walk_dirs(int dirfd, const char *field, const char *rel, bool create, bool give,
                        uid_t uid, gid_t gid, int *ret_fd, struct cordon_error *err)
{
    struct cordon_error in;
    char comp[CORDON_PATH_COMPONENT_MAX + 1];
    const char *p = rel;
    int cur, next, r = 0;

    cordon_error_init(&in);
    r = cordon_fs_open_beneath(dirfd, "", O_RDONLY | O_DIRECTORY, 0, &cur, err);
    if (r < 0)
        return r;
    while (*p != '\0') {
        size_t n = strcspn(p, "/");
        bool made = false;

        /* rel is normalised: components are non-empty and short enough. */
        memcpy(comp, p, n);
        comp[n] = '\0';
        p += n + (p[n] == '/');
        if (create && mkdirat(cur, comp, 0755) == 0)
            made = true;
        else if (create && errno != EEXIST) {
            r = cordon_error_set(err, CORDON_E_IO, errno, "%s: mkdir %s in \"%s\": %s", field,
                                 comp, rel, strerror(errno));
            break;
        }
        r = cordon_fs_open_beneath(cur, comp, O_RDONLY | O_DIRECTORY, 0, &next, &in);
        if (r < 0) {
            r = cordon_error_set(err, in.code, in.os_errno, "%s: \"%s\": %s", field, rel,
                                 in.message);
            break;
        }
        close(cur);
        cur = next;
        if (made && (fchmod(cur, 0755) != 0 || (give && fchown(cur, uid, gid) != 0))) {
            r = cordon_error_set(err, CORDON_E_IO, errno, "%s: setting up %s in \"%s\": %s",
                                 field, comp, rel, strerror(errno));
            break;
        }
    }
    if (r < 0) {
        close(cur);
        return r;
    }
    *ret_fd = cur;
    return 0;
}

int cordon_fs_write_new(int dirfd, const char *rel, const void *buf, size_t len, mode_t mode,
                        struct cordon_error *err)
{
    const char *p = buf;
    size_t done = 0;
    int fd = -1, r;

    r = cordon_fs_open_beneath(dirfd, rel, O_WRONLY | O_CREAT | O_EXCL, mode & 0777, &fd, err);
    if (r < 0)
        return r;
    while (done < len) {
        ssize_t n = write(fd, p + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            r = cordon_error_set(err, CORDON_E_IO, errno, "%s: write: %s", rel, strerror(errno));
            break;
        }
        done += (size_t)n;
    }
    /* the umask may have narrowed the mode at creation */
    if (r == 0 && fchmod(fd, mode & 0777) < 0)
        r = cordon_error_set(err, CORDON_E_IO, errno, "%s: chmod: %s", rel, strerror(errno));
    close(fd);
    if (r < 0)
        unlinkat(dirfd, rel, 0);
    return r;
}

/*
 * The temporary file fd (closed here in every case) given its mode and,
 * with durable, synced, then renamed over base: mode and data are settled
 * before the rename, so that a crash leaves the old file or the whole new
 * one, never an empty or 0600 one.
 */
static int temp_settle(int pfd, int fd, const char *tmp, const char *base, mode_t mode,
                       bool durable, const char *rel, struct cordon_error *err)
{
    const char *what = durable ? "chmod and sync" : "chmod";
    int e = fchmod(fd, mode & 0777) < 0 || (durable && fsync(fd) < 0) ? errno : 0;

    if (close(fd) < 0 && e == 0) {
        e = errno;
        what = "close";
    }
    if (e == 0 && renameat(pfd, tmp, pfd, base) < 0) {
        e = errno;
        what = "rename into place";
    }
    return e == 0 ? 0 : cordon__fs_fail(err, e, rel, what);
}

/* The temporary file beside rel, then the rename over it; with durable,
 * fsync of the file before the rename and of the directory after it. */
static int replace_file(int dirfd, const char *rel, const void *buf, size_t len, mode_t mode,
                        bool durable, struct cordon_error *err)
{
    char *parent = NULL, *base = NULL, tmp[32];
    bool tmp_live = false;
    int pfd = -1, fd = -1, r, e;

    r = cordon__fs_check_rel(rel, err);
    if (r < 0)
        return r;
    if (buf == NULL && len > 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "path \"%.*s\": no data",
                                cordon_text_fit(rel, 200), rel);
    r = cordon__fs_split_parent(rel, &parent, &base, err);
    if (r < 0)
        return r;
    /* O_RDONLY rather than O_PATH: the directory may be fsync'd after the rename. */
    r = cordon_fs_open_beneath(dirfd, parent, O_RDONLY | O_DIRECTORY, 0, &pfd, err);
    if (r < 0)
        goto out;
    fd = make_temp(pfd, tmp);
    if (fd < 0) {
        r = cordon__fs_fail(err, -fd, rel, "create temporary file");
        goto out;
    }
    tmp_live = true;
    e = cordon_fs_write_all(fd, buf, len);
    if (e < 0) {
        r = cordon__fs_fail(err, -e, rel, "write");
        goto out;
    }
    r = temp_settle(pfd, fd, tmp, base, mode, durable, rel, err);
    fd = -1;
    if (r < 0)
        goto out;
    tmp_live = false;
    if (durable && fsync(pfd) < 0)
        r = cordon__fs_fail(err, errno, rel, "sync directory");
out:
    if (fd >= 0)
        close(fd);
    if (tmp_live)
        unlinkat(pfd, tmp, 0);
    if (pfd >= 0)
        close(pfd);
    free(parent);
    free(base);
    return r;
}

int cordon_fs_write_atomic(int dirfd, const char *rel, const void *buf, size_t len, mode_t mode,
                           struct cordon_error *err)
{
    return replace_file(dirfd, rel, buf, len, mode, true, err);
}

int cordon_fs_write_replace(int dirfd, const char *rel, const void *buf, size_t len, mode_t mode,
                            struct cordon_error *err)
{
    return replace_file(dirfd, rel, buf, len, mode, false, err);
}

int cordon_fs_copy_beneath(int src_dirfd, const char *src_rel, int dst_dirfd, const char *dst_rel,
                           uint64_t max_bytes, mode_t mode, char *ret_sha256_hex,
                           uint64_t *ret_bytes, struct cordon_error *err)
{
    struct cordon_sha256 sha;
    char *parent = NULL, *base = NULL, *chunk = NULL, tmp[32];
    uint64_t total = 0;
    bool tmp_live = false;
    int sfd = -1, pfd = -1, fd = -1, r, e;

    r = cordon__fs_check_rel(dst_rel, err);
    if (r < 0)
        return r;
    r = cordon_fs_open_regular(src_dirfd, src_rel, max_bytes, &sfd, NULL, err);
    if (r < 0)
        return r;
    r = cordon__fs_split_parent(dst_rel, &parent, &base, err);
    if (r < 0)
        goto out;
    r = cordon_fs_mkdirs_beneath(dst_dirfd, parent, 0755, err);
    if (r < 0)
        goto out;
    r = cordon_fs_open_beneath(dst_dirfd, parent, O_PATH | O_DIRECTORY, 0, &pfd, err);
    if (r < 0)
        goto out;
    chunk = malloc(COPY_CHUNK);
    if (chunk == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "path \"%.*s\": out of memory",
                             cordon_text_fit(dst_rel, 200), dst_rel);
        goto out;
    }
    /* The temporary file sits next to dst, so the rename never crosses file
     * systems; no fsync, as a copy only has to appear whole, not survive a crash. */
    fd = make_temp(pfd, tmp);
    if (fd < 0) {
        r = cordon__fs_fail(err, -fd, dst_rel, "create temporary file");
        goto out;
    }
    tmp_live = true;
    cordon_sha256_init(&sha);
    /* The source may grow after open_regular checked its size: count what is read. */
    for (;;) {
        ssize_t n = read(sfd, chunk, COPY_CHUNK);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r = cordon__fs_fail(err, errno, src_rel, "read");
            goto out;
        }
        if (n == 0)
            break;
        total += (uint64_t)n;
        if (max_bytes != 0 && total > max_bytes) {
            r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                                 "path \"%.*s\": file grew to more than the limit of %" PRIu64
                                 " bytes",
                                 cordon_text_fit(src_rel, 200), src_rel, max_bytes);
            goto out;
        }
        cordon_sha256_update(&sha, chunk, (size_t)n);
        e = cordon_fs_write_all(fd, chunk, (size_t)n);
        if (e < 0) {
            r = cordon__fs_fail(err, -e, dst_rel, "write");
            goto out;
        }
    }
    r = temp_settle(pfd, fd, tmp, base, mode, false, dst_rel, err);
    fd = -1;
    if (r < 0)
        goto out;
    tmp_live = false;
    if (ret_sha256_hex != NULL)
        cordon_sha256_final_hex(&sha, ret_sha256_hex);
    if (ret_bytes != NULL)
        *ret_bytes = total;
out:
    if (fd >= 0)
        close(fd);
    if (tmp_live)
        unlinkat(pfd, tmp, 0);
    if (pfd >= 0)
        close(pfd);
    if (sfd >= 0)
        close(sfd);
    free(chunk);
    free(parent);
    free(base);
    return r;
}

int cordon_fs_mkdtemp(const char *parent, const char *prefix, char **ret_path,
                      struct cordon_error *err)
{
    char *path = NULL;

    if (parent == NULL || parent[0] == '\0' || ret_path == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "mkdtemp: parent is missing");
    if (prefix == NULL)
        prefix = "";
    if (strchr(prefix, '/') != NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "mkdtemp: prefix \"%.*s\" contains a '/'",
                                cordon_text_fit(prefix, 100), prefix);
    if (asprintf(&path, "%s/%sXXXXXX", parent, prefix) < 0)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "mkdtemp: out of memory");
    /* mkdtemp creates the directory 0700. */
    if (mkdtemp(path) == NULL) {
        int e = errno;

        free(path);
        return cordon_error_set(err, code_of_errno(e), e, "mkdtemp: \"%.*s/%.*sXXXXXX\": %s",
                                cordon_text_fit(parent, 200), parent, cordon_text_fit(prefix, 100),
                                prefix, strerror(e));
    }
    *ret_path = path;
    return 0;
}
