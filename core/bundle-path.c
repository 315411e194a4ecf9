/* core: a bundle from a file or a directory on the host, read beneath
 * the path given without following a link below it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cordon/sdk/fs.h>
#include <cordon/sdk/path.h>

#include "core/bundle-internal.h"
#include "core/bundle.h"
#include "core/internal.h"
#include "sdk/fs-internal.h"

/* Directory levels below a bundle directory; each level holds one fd. */
#define BUNDLE_MAX_DIR_DEPTH 64
/* State of one directory walk: the bundle being filled and the root all
 * paths are opened beneath. */
struct walk {
    struct cordon__bundle *b;
    int root_fd;
};

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* The entries of dirfd, sorted, so that errors and reads are deterministic. */
static int list_dir(int dirfd, const char *rel, char ***ret_names, size_t *ret_n,
                    struct cordon_error *err)
{
    char **names = NULL, **grown;
    size_t n = 0, cap = 0;
    struct dirent *de;
    DIR *dir = NULL;
    int fd, r = 0;

    if ((fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0)) < 0 || (dir = fdopendir(fd)) == NULL) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "bundle: cannot list %.*s: %s",
                             cordon_text_fit(rel[0] ? rel : ".", 200), rel[0] ? rel : ".",
                             strerror(errno));
        if (fd >= 0)
            close(fd);
        return r;
    }
    while ((errno = 0, de = readdir(dir)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        /* Every entry becomes a file or is refused, so the file bound is the entry bound. */
        if (n >= CORDON_BUNDLE_MAX_FILES) {
            r = cordon_error_set(
                err, CORDON_E_LIMIT, 0,
                "files: directory %.*s has more than %d entries, exceeds the limit of %d files",
                cordon_text_fit(rel[0] ? rel : ".", 200), rel[0] ? rel : ".",
                CORDON_BUNDLE_MAX_FILES, CORDON_BUNDLE_MAX_FILES);
            goto out;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            if ((grown = realloc(names, cap * sizeof(*names))) == NULL) {
                r = cordon__bundle_nomem(err, "bundle");
                goto out;
            }
            names = grown;
        }
        if ((names[n] = strdup(de->d_name)) == NULL) {
            r = cordon__bundle_nomem(err, "bundle");
            goto out;
        }
        n++;
    }
    if (errno != 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "bundle: cannot list %.*s: %s",
                             cordon_text_fit(rel[0] ? rel : ".", 200), rel[0] ? rel : ".",
                             strerror(errno));
        goto out;
    }
    if (n > 1)
        qsort(names, n, sizeof(*names), cordon__bundle_string_order);
    *ret_names = names;
    *ret_n = n;
    names = NULL;
out:
    closedir(dir);
    if (names != NULL)
        free_names(names, n);
    return r;
}

/* Add every regular file below dirfd (at prefix, relative to the root);
 * links and special files end the walk with an error naming them. */
static int walk_dir(struct walk *w, int dirfd, const char *prefix, int depth, struct cordon_error *err)
{
    char **names = NULL, *rel = NULL, *norm = NULL, *data = NULL;
    size_t n = 0, len = 0;
    int r, sub = -1;

    if (depth > BUNDLE_MAX_DIR_DEPTH)
        return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                "bundle: %.*s: directories nested deeper than the limit of %d",
                                cordon_text_fit(prefix, 200), prefix, BUNDLE_MAX_DIR_DEPTH);
    if ((r = list_dir(dirfd, prefix, &names, &n, err)) < 0)
        return r;
    for (size_t i = 0; i < n; i++) {
        struct stat st;

        free(rel);
        rel = NULL;
        if (asprintf(&rel, "%s%s%s", prefix, prefix[0] ? "/" : "", names[i]) < 0) {
            rel = NULL;
            r = cordon__bundle_nomem(err, "bundle");
            goto out;
        }
        /* lstat semantics: a link is seen as a link, never as its target. */
        if (fstatat(dirfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
            r = cordon_error_set(err, CORDON_E_IO, errno, "bundle: %.*s: %s",
                                 cordon_text_fit(rel, 200), rel, strerror(errno));
            goto out;
        }
        if (S_ISLNK(st.st_mode)) {
            r = cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                 "bundle: %.*s is a symbolic link (refused; copy the file in)",
                                 cordon_text_fit(rel, 200), rel);
            goto out;
        }
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
            r = cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                 "bundle: %.*s is a %s, not a regular file (refused)",
                                 cordon_text_fit(rel, 200), rel, cordon__file_type_name(st.st_mode));
            goto out;
        }
        if ((r = cordon_path_normalize("bundle", rel, &norm, err)) < 0)
            goto out;
        if (S_ISDIR(st.st_mode)) {
            /* Re-opened beneath the root, so a directory swapped for a link is refused. */
            if ((r = cordon_fs_open_beneath(w->root_fd, norm, O_RDONLY | O_DIRECTORY, 0, &sub, err)) < 0 ||
                (r = walk_dir(w, sub, norm, depth + 1, err)) < 0)
                goto out;
            close(sub);
            sub = -1;
            free(norm);
            norm = NULL;
            continue;
        }
        /* The size from stat stops a huge file before it is read; the read is bounded too. */
        if ((r = cordon__bundle_check_file_room(w->b, norm, (uint64_t)st.st_size, err)) < 0 ||
            (r = cordon_fs_read_file(w->root_fd, norm, CORDON_BUNDLE_MAX_FILE_BYTES, &data, &len,
                                     err)) < 0)
            goto out;
        r = cordon__bundle_add_file(w->b, norm, (unsigned char *)data, len, (st.st_mode & 0111) != 0,
                                    err);
        norm = NULL;
        data = NULL;
        if (r < 0)
            goto out;
    }
out:
    if (sub >= 0)
        close(sub);
    free(rel);
    free(norm);
    free(data);
    free_names(names, n);
    return r;
}

/* The bundle is the single regular file open on fd. */
static int take_single_file(struct cordon__bundle *b, int fd, const char *path,
                            const struct stat *st, struct cordon_error *err)
{
    const char *base = strrchr(path, '/');
    char *data = NULL, *norm = NULL, name[256];
    size_t len = 0;
    int r;

    base = base != NULL ? base + 1 : path;
    if ((r = cordon_path_normalize("bundle", base, &norm, err)) < 0)
        return r;
    /* The size was checked; the bound holds a file that grows meanwhile. */
    snprintf(name, sizeof(name), "files[0] (%.*s)", cordon_text_fit(norm, 200), norm);
    if ((r = cordon__bundle_check_file_room(b, norm, (uint64_t)st->st_size, err)) < 0 ||
        (r = cordon__fs_read_fd(fd, name, CORDON_BUNDLE_MAX_FILE_BYTES, (size_t)st->st_size, &data, &len,
                                err)) < 0)
        goto out;
    if ((b->entrypoint = strdup(norm)) == NULL) {
        r = cordon__bundle_nomem(err, "entrypoint");
        goto out;
    }
    r = cordon__bundle_add_file(b, norm, (unsigned char *)data, len, (st->st_mode & 0111) != 0, err);
    norm = NULL;
    data = NULL;
out:
    free(norm);
    free(data);
    return r;
}

int cordon__bundle_from_path(const char *path, const char *language, const char *const *args,
                             size_t n_args, const char *const *outputs, size_t n_outputs,
                             struct cordon__bundle **ret, struct cordon_error *err)
{
    struct cordon__bundle *b = NULL;
    struct walk w;
    struct stat st;
    int r, fd = -1;

    if (path == NULL || path[0] == '\0')
        return cordon_error_set(err, CORDON_E_INVALID, 0, "bundle: no path given");
    if ((n_args > 0 && args == NULL) || (n_outputs > 0 && outputs == NULL))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "bundle: args or outputs missing");
    if ((b = calloc(1, sizeof(*b))) == NULL)
        return cordon__bundle_nomem(err, "bundle");
    /* Cheap checks of the caller's own arguments come before any reading. */
    if ((language != NULL && (r = cordon__bundle_set_language(b, "language", language, err)) < 0) ||
        (r = cordon__bundle_take_args(b, args, n_args, err)) < 0 ||
        (r = cordon__bundle_take_outputs(b, outputs, n_outputs, err)) < 0)
        goto out;
    /* O_NONBLOCK: a FIFO given by mistake must not hang the open. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        r = cordon_error_set(err, errno == ENOENT ? CORDON_E_NOT_FOUND : CORDON_E_IO, errno,
                             "bundle: cannot open %.*s: %s", cordon_text_fit(path, 200), path,
                             strerror(errno));
        goto out;
    }
    if (fstat(fd, &st) < 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "bundle: %.*s: %s",
                             cordon_text_fit(path, 200), path, strerror(errno));
        goto out;
    }
    /* fstat of the open fd: what was opened is what is read. */
    if (S_ISDIR(st.st_mode)) {
        w.b = b;
        w.root_fd = fd;
        r = walk_dir(&w, fd, "", 1, err);
    } else if (S_ISREG(st.st_mode)) {
        /* Back to blocking reads now that it is known to be a regular file. */
        if (fcntl(fd, F_SETFL, 0) < 0) {
            r = cordon_error_set(err, CORDON_E_IO, errno, "bundle: %.*s: %s",
                                 cordon_text_fit(path, 200), path, strerror(errno));
            goto out;
        }
        r = take_single_file(b, fd, path, &st, err);
    } else {
        r = cordon_error_set(err, CORDON_E_UNSAFE, 0,
                             "bundle: %.*s is a %s, not a regular file or directory (refused)",
                             cordon_text_fit(path, 200), path, cordon__file_type_name(st.st_mode));
    }
    if (r < 0 || (r = cordon__bundle_finish(b, path, err)) < 0)
        goto out;
    *ret = b;
    b = NULL;
out:
    if (fd >= 0)
        close(fd);
    cordon__bundle_free(b);
    return r;
}
