/*
 * sdk: removing a tree beneath a directory fd (cordon/sdk/fs.h:
 * cordon_fs_remove_tree, cordon_fs_remove_tree_path), never following a
 * link, at any depth with a bounded number of fds open.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cordon/sdk/fs.h>

#include "sdk/fs-internal.h"

#define REMOVE_DEPTH_MAX 256
#define REMOVE_PASSES_MAX 16
#define REMOVE_MOVES_MAX 1000000

/*
 * One removal. The tree may be nested deeper than we hold directory fds for
 * (a sandbox can mkdir and chdir without end): a directory reached at
 * REMOVE_DEPTH_MAX is moved up into the top directory under a fresh name
 * and removed from there on a later pass, so any depth is removed with at
 * most REMOVE_DEPTH_MAX fds open.
 */
struct remove {
    const char *top;   /* the path the caller named, for messages */
    int top_fd;        /* the directory being removed, once open */
    unsigned long moved;
};

static int remove_at(struct remove *rm, int pfd, const char *name, unsigned depth,
                     struct cordon_error *err);

/* Move the directory name (in pfd) into the top directory; 1 when moved. */
static int remove_move_up(struct remove *rm, int pfd, const char *name, struct cordon_error *err)
{
    char fresh[48];

    if (rm->moved >= REMOVE_MOVES_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                "path \"%.*s\": directories nested deeper than %d, moved up "
                                "more than %d times: the tree is still growing",
                                cordon_text_fit(rm->top, 200), rm->top, REMOVE_DEPTH_MAX,
                                REMOVE_MOVES_MAX);
    for (int i = 0; i < CORDON__FS_TEMP_TRIES; i++) {
        snprintf(fresh, sizeof(fresh), ".cordon-deep-%lu", rm->moved++);
        if (renameat2(pfd, name, rm->top_fd, fresh, RENAME_NOREPLACE) == 0)
            return 1;
        if (errno != EEXIST && errno != ENOTEMPTY)
            return cordon__fs_fail(err, errno, rm->top, "move a deep directory up");
    }
    return cordon__fs_fail(err, EEXIST, rm->top, "move a deep directory up");
}

/* Remove everything inside the open directory dir; *ret_removed counts entries gone. */
static int remove_entries(struct remove *rm, DIR *dir, unsigned depth, size_t *ret_removed,
                          struct cordon_error *err)
{
    struct dirent *de;
    size_t removed = 0;
    int r;

    rewinddir(dir);
    for (;;) {
        errno = 0;
        de = readdir(dir);
        if (de == NULL)
            break;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        /* A non-directory goes with one unlink; the rest takes the careful path. */
        if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN &&
            unlinkat(dirfd(dir), de->d_name, 0) == 0) {
            removed++;
            continue;
        }
        r = remove_at(rm, dirfd(dir), de->d_name, depth + 1, err);
        if (r < 0)
            return r;
        removed++;
    }
    if (errno != 0)
        return cordon__fs_fail(err, errno, rm->top, "read directory");
    *ret_removed = removed;
    return 0;
}

static int remove_at(struct remove *rm, int pfd, const char *name, unsigned depth,
                     struct cordon_error *err)
{
    DIR *dir = NULL;
    struct stat st;
    int fd = -1, r = 0;

    if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : cordon__fs_fail(err, errno, rm->top, "stat");
    if (!S_ISDIR(st.st_mode)) {
        if (unlinkat(pfd, name, 0) < 0 && errno != ENOENT)
            return cordon__fs_fail(err, errno, rm->top, "remove");
        return 0;
    }
    if (depth >= REMOVE_DEPTH_MAX) {
        r = remove_move_up(rm, pfd, name, err);
        return r < 0 ? r : 0;
    }
    fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == EACCES) {
        /* A directory we may not read: make it ours to empty (never follows a link). */
        if (fchmodat(pfd, name, 0700, AT_SYMLINK_NOFOLLOW) == 0)
            fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        else
            errno = EACCES;
    }
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        return cordon__fs_fail(err, errno, rm->top, "open directory");
    }
    /* A read-only directory cannot lose its entries until it is writable. */
    if (fstat(fd, &st) == 0 && (st.st_mode & 0700) != 0700)
        fchmod(fd, (st.st_mode & 07777) | 0700);
    dir = fdopendir(fd);
    if (dir == NULL) {
        r = cordon__fs_fail(err, errno, rm->top, "open directory");
        close(fd);
        return r;
    }
    if (depth == 0)
        rm->top_fd = fd;
    /* Entries removed while reading may hide others from readdir, and deep
     * directories moved up arrive during a pass: repeat while a pass made
     * progress. Passes that only found what was moved up are not counted. */
    for (int pass = 0;; pass++) {
        unsigned long moved = rm->moved;
        size_t removed = 0;

        r = remove_entries(rm, dir, depth, &removed, err);
        if (r < 0)
            goto out;
        if (unlinkat(pfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
            break;
        if (depth == 0 && rm->moved != moved)
            pass = 0;
        if ((errno != ENOTEMPTY && errno != EEXIST) || removed == 0 ||
            pass + 1 >= REMOVE_PASSES_MAX) {
            r = cordon__fs_fail(err, errno, rm->top, "remove directory");
            goto out;
        }
    }
out:
    if (depth == 0)
        rm->top_fd = -1;
    closedir(dir);
    return r;
}

int cordon_fs_remove_tree(int dirfd, const char *name, struct cordon_error *err)
{
    char *parent = NULL, *base = NULL;
    int pfd = -1, r;

    r = cordon__fs_check_rel(name, err);
    if (r < 0)
        return r;
    r = cordon__fs_split_parent(name, &parent, &base, err);
    if (r < 0)
        return r;
    /* A missing parent means nothing to remove; a link on the way is refused. */
    pfd = cordon__fs_open_raw(dirfd, parent, O_PATH | O_DIRECTORY, 0);
    if (pfd == -ENOENT)
        goto out;
    if (pfd < 0) {
        r = cordon__fs_fail(err, -pfd, name, "open parent directory");
        goto out;
    }
    r = remove_at(&(struct remove){ .top = name, .top_fd = -1 }, pfd, base, 0, err);
out:
    if (pfd >= 0)
        close(pfd);
    free(parent);
    free(base);
    return r;
}

int cordon_fs_remove_tree_path(const char *path, struct cordon_error *err)
{
    char *copy = NULL, *slash;
    const char *parent, *base;
    size_t len;
    int pfd = -1, r = 0;

    if (path == NULL || path[0] == '\0')
        return cordon_error_set(err, CORDON_E_INVALID, 0, "path: missing");
    len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        len--;
    copy = strndup(path, len);
    if (copy == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "path: out of memory");
    slash = strrchr(copy, '/');
    if (slash == NULL) {
        parent = ".";
        base = copy;
    } else {
        *slash = '\0';
        parent = slash == copy ? "/" : copy;
        base = slash + 1;
    }
    if (base[0] == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0,
                             "path \"%.*s\": does not name an entry to remove",
                             cordon_text_fit(path, 200), path);
        goto out;
    }
    /* The parent is the caller's own path and may be reached through links. */
    pfd = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (pfd < 0) {
        if (errno != ENOENT)
            r = cordon__fs_fail(err, errno, path, "open parent directory");
        goto out;
    }
    r = remove_at(&(struct remove){ .top = path, .top_fd = -1 }, pfd, base, 0, err);
out:
    if (pfd >= 0)
        close(pfd);
    free(copy);
    return r;
}
