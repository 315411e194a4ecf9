/* sdk: writing tar streams, from a tree and from memory (see cordon/sdk/tar.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cordon/sdk/fs.h>
#include <cordon/sdk/path.h>
#include <cordon/sdk/tar.h>

#include "sdk/tar-internal.h"

#define CREATE_DEPTH_MAX 256

/* ---- creation ---------------------------------------------------------- */

struct create {
    struct archive *a;
    uint64_t max_bytes, max_entries;
    struct cordon_tar_stats stats;
    char *chunk;
    bool flat; /* a directory is an entry of its own, its contents are not walked */
};

static int name_cmp(const void *pa, const void *pb)
{
    return strcmp(*(char *const *)pa, *(char *const *)pb);
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* The sorted names in directory dfd, at most max of them. */
static int list_dir(int dfd, const char *shown, size_t max, char ***ret_names, size_t *ret_n,
                    struct cordon_error *err)
{
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    DIR *dir = NULL;
    int fd, r = 0;

    fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || (dir = fdopendir(fd)) == NULL) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "tar source \"%.*s\": open directory: %s",
                             cordon_text_fit(shown, 300), shown, strerror(errno));
        if (fd >= 0)
            close(fd);
        return r;
    }
    for (;;) {
        errno = 0;
        de = readdir(dir);
        if (de == NULL)
            break;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (n >= max) {
            r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                                 "tar source \"%.*s\": more entries than the limit",
                                 cordon_text_fit(shown, 300), shown);
            goto out;
        }
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 32;
            char **nn;

            nn = ncap <= SIZE_MAX / sizeof(*nn) ? realloc(names, ncap * sizeof(*nn)) : NULL;
            if (nn == NULL) {
                r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "tar source: out of memory");
                goto out;
            }
            names = nn;
            cap = ncap;
        }
        names[n] = strdup(de->d_name);
        if (names[n] == NULL) {
            r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "tar source: out of memory");
            goto out;
        }
        n++;
    }
    if (errno != 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "tar source \"%.*s\": read directory: %s",
                             cordon_text_fit(shown, 300), shown, strerror(errno));
        goto out;
    }
    if (n > 1)
        qsort(names, n, sizeof(*names), name_cmp);
    *ret_names = names;
    *ret_n = n;
    names = NULL;
out:
    if (names != NULL)
        free_names(names, n);
    closedir(dir);
    return r;
}

int cordon__tar_write_header(struct archive *a, struct archive_entry *entry, const char *path,
                        struct cordon_error *err)
{
    int r = archive_write_header(a, entry);

    /* ARCHIVE_WARN: a name the locale cannot convert to UTF-8 went out byte
     * for byte with hdrcharset=BINARY, which is what we want. */
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
        return cordon_error_set(err, CORDON_E_IO, archive_errno(a) > 0 ? archive_errno(a) : 0,
                                "tar entry \"%.*s\": write header: %s", cordon_text_fit(path, 300),
                                path, archive_error_string(a) ? archive_error_string(a) : "failed");
    return 0;
}

/* Copy exactly size bytes from fd into the current entry. */
static int write_data_fd(struct archive *a, char *chunk, int fd, uint64_t size, const char *path,
                         struct cordon_error *err)
{
    uint64_t done = 0;

    while (done < size) {
        size_t want = size - done < CORDON__TAR_CHUNK ? (size_t)(size - done) : CORDON__TAR_CHUNK;
        ssize_t n = read(fd, chunk, want);
        la_ssize_t w;

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return cordon_error_set(err, CORDON_E_IO, errno, "tar entry \"%.*s\": read: %s",
                                    cordon_text_fit(path, 300), path, strerror(errno));
        if (n == 0)
            return cordon_error_set(err, CORDON_E_IO, 0,
                                    "tar entry \"%.*s\": the file gave %" PRIu64 " of %" PRIu64
                                    " bytes",
                                    cordon_text_fit(path, 300), path, done, size);
        w = archive_write_data(a, chunk, (size_t)n);
        if (w != n)
            return cordon_error_set(err, CORDON_E_IO, archive_errno(a) > 0 ? archive_errno(a) : 0,
                                    "tar entry \"%.*s\": write data: %s",
                                    cordon_text_fit(path, 300), path,
                                    archive_error_string(a) ? archive_error_string(a) : "short");
        done += (uint64_t)n;
    }
    return 0;
}

static int create_walk(struct create *c, int dfd, const char *prefix, unsigned depth,
                       struct cordon_error *err);

/* Archive one entry of directory dfd; path is its name in the stream. */
static int create_entry(struct create *c, int dfd, const char *name, const char *path,
                        unsigned depth, struct cordon_error *err)
{
    struct archive_entry *entry = NULL;
    struct stat st, fst;
    char *target = NULL;
    int fd = -1, r = 0;

    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno == ENOENT)
            return 0; /* gone since the listing */
        return cordon_error_set(err, CORDON_E_IO, errno, "tar source \"%.*s\": stat: %s",
                                cordon_text_fit(path, 300), path, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
        return cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                "tar source \"%.*s\": only regular files, directories and "
                                "symbolic links can be archived",
                                cordon_text_fit(path, 300), path);
    c->stats.entries++;
    if (c->max_entries != 0 && c->stats.entries > c->max_entries)
        return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                "tar source: more than the limit of %" PRIu64 " entries",
                                c->max_entries);
    if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) {
        int fl = S_ISDIR(st.st_mode) ? O_RDONLY | O_DIRECTORY : O_RDONLY | O_NONBLOCK | O_NOCTTY;

        /* Open without following, then make sure it is the inode we stat'ed.
         * O_NONBLOCK: a file lease held by someone else fails the open at
         * once instead of making it wait the kernel's lease-break time. */
        fd = openat(dfd, name, fl | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == EWOULDBLOCK) {
            r = cordon_error_set(err, CORDON_E_IO, errno,
                                 "tar source \"%.*s\": open: another process holds a file lease "
                                 "on it (not waited for)", cordon_text_fit(path, 300), path);
            goto out;
        }
        if (fd < 0 || fstat(fd, &fst) < 0) {
            r = cordon_error_set(err, CORDON_E_IO, errno, "tar source \"%.*s\": open: %s",
                                 cordon_text_fit(path, 300), path, strerror(errno));
            goto out;
        }
        if (fst.st_dev != st.st_dev || fst.st_ino != st.st_ino) {
            r = cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                 "tar source \"%.*s\": changed while being archived",
                                 cordon_text_fit(path, 300), path);
            goto out;
        }
        st = fst;
    }
    entry = archive_entry_new();
    if (entry == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "tar source: out of memory");
        goto out;
    }
    /* Numeric owners only and the file's own mtime: the same tree gives the same stream. */
    archive_entry_set_pathname(entry, path);
    archive_entry_set_uid(entry, st.st_uid);
    archive_entry_set_gid(entry, st.st_gid);
    archive_entry_set_mtime(entry, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    /* Only permission bits travel: setuid and friends would be refused on the way in. */
    archive_entry_set_perm(entry, st.st_mode & 0777);
    if (S_ISLNK(st.st_mode)) {
        ssize_t n;

        target = malloc(CORDON_PATH_MAX + 1);
        if (target == NULL) {
            r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "tar source: out of memory");
            goto out;
        }
        n = readlinkat(dfd, name, target, CORDON_PATH_MAX + 1);
        if (n < 0 || n > CORDON_PATH_MAX) {
            r = cordon_error_set(err, n < 0 ? CORDON_E_IO : CORDON_E_LIMIT, n < 0 ? errno : 0,
                                 "tar source \"%.*s\": read link: %s", cordon_text_fit(path, 300),
                                 path, n < 0 ? strerror(errno) : "target longer than 4096 bytes");
            goto out;
        }
        target[n] = '\0';
        archive_entry_set_filetype(entry, AE_IFLNK);
        archive_entry_set_symlink(entry, target);
        r = cordon__tar_write_header(c->a, entry, path, err);
    } else if (S_ISDIR(st.st_mode)) {
        archive_entry_set_filetype(entry, AE_IFDIR);
        r = cordon__tar_write_header(c->a, entry, path, err);
        if (r == 0 && !c->flat)
            r = create_walk(c, fd, path, depth + 1, err);
    } else {
        uint64_t size = (uint64_t)st.st_size;

        if (c->max_bytes != 0 && size > c->max_bytes - c->stats.bytes) {
            r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                                 "tar source \"%.*s\": %" PRIu64 " bytes bring the total to "
                                 "more than the limit of %" PRIu64 " bytes",
                                 cordon_text_fit(path, 300), path, size, c->max_bytes);
            goto out;
        }
        c->stats.bytes += size;
        archive_entry_set_filetype(entry, AE_IFREG);
        archive_entry_set_size(entry, (la_int64_t)size);
        r = cordon__tar_write_header(c->a, entry, path, err);
        if (r == 0)
            r = write_data_fd(c->a, c->chunk, fd, size, path, err);
    }
out:
    archive_entry_free(entry);
    free(target);
    if (fd >= 0)
        close(fd);
    return r;
}

static int create_walk(struct create *c, int dfd, const char *prefix, unsigned depth,
                       struct cordon_error *err)
{
    char **names = NULL;
    size_t n = 0, max = SIZE_MAX;
    int r;

    if (depth >= CREATE_DEPTH_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                "tar source \"%.*s\": directories nested more than %d deep",
                                cordon_text_fit(prefix, 300), prefix, CREATE_DEPTH_MAX);
    /* The listing itself is bounded: one name past the entries left is enough to fail. */
    if (c->max_entries != 0 && c->max_entries - c->stats.entries < SIZE_MAX)
        max = (size_t)(c->max_entries - c->stats.entries) + 1;
    r = list_dir(dfd, prefix[0] ? prefix : ".", max, &names, &n, err);
    if (r < 0)
        return r;
    for (size_t i = 0; i < n && r == 0; i++) {
        char *path;

        if (prefix[0] == '\0')
            path = strdup(names[i]);
        else if (asprintf(&path, "%s/%s", prefix, names[i]) < 0)
            path = NULL;
        if (path == NULL) {
            r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "tar source: out of memory");
            break;
        }
        if (strlen(path) > CORDON_PATH_MAX)
            r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                                 "tar source \"%.*s\": path longer than %d bytes",
                                 cordon_text_fit(path, 300), path, CORDON_PATH_MAX);
        else
            r = create_entry(c, dfd, names[i], path, depth, err);
        free(path);
    }
    free_names(names, n);
    return r;
}


static la_ssize_t sink_write(struct archive *a, void *data, const void *buf, size_t len)
{
    struct cordon__tar_sink *sink = data;
    int e;

    if (sink->abandoned)
        return (la_ssize_t)len;
    e = cordon_fs_write_all(sink->fd, buf, len);
    if (e < 0) {
        archive_set_error(a, -e, "write: %s", strerror(-e));
        return -1;
    }
    if (sink->sha != NULL)
        cordon_sha256_update(sink->sha, buf, len);
    return (la_ssize_t)len;
}

int cordon__tar_sink_open(struct cordon__tar_sink *sink, int tar_fd, struct cordon_error *err)
{
    struct archive *a = archive_write_new();
    int r;

    if (a == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "tar stream: out of memory");
    sink->fd = tar_fd;
    sink->abandoned = false;
    if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
        archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
        archive_write_open(a, sink, NULL, sink_write, NULL) != ARCHIVE_OK) {
        r = cordon_error_set(err, CORDON_E_IO, archive_errno(a) > 0 ? archive_errno(a) : 0,
                             "tar stream: open writer: %s",
                             archive_error_string(a) ? archive_error_string(a) : "failed");
        archive_write_free(a);
        return r;
    }
    sink->a = a;
    return 0;
}

int cordon__tar_sink_close(struct cordon__tar_sink *sink, bool ok, struct cordon_error *err)
{
    int r = 0;

    if (sink->a == NULL)
        return 0;
    sink->abandoned = !ok;
    if (archive_write_close(sink->a) != ARCHIVE_OK && ok)
        r = cordon_error_set(err, CORDON_E_IO,
                             archive_errno(sink->a) > 0 ? archive_errno(sink->a) : 0,
                             "tar stream: finish: %s",
                             archive_error_string(sink->a) ? archive_error_string(sink->a)
                                                           : "failed");
    archive_write_free(sink->a);
    sink->a = NULL;
    return r;
}

int cordon_tar_create_fd(int src_dirfd, const char *rel, int tar_fd,
                         const struct cordon_tar_limits *limits,
                         struct cordon_tar_stats *ret_stats, struct cordon_error *err)
{
    struct cordon__tar_sink sink = {NULL, -1, false, NULL};
    struct create c;
    char *norm = NULL;
    int root = -1, r;

    memset(&c, 0, sizeof(c));
    if (tar_fd < 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "tar stream: no fd");
    if ((r = cordon__archive_load(err)) < 0)
        return r;
    if (limits != NULL) {
        c.max_bytes = limits->max_bytes;
        c.max_entries = limits->max_entries;
    }
    r = cordon_path_normalize_dir("tar source", rel != NULL ? rel : "", &norm, err);
    if (r < 0)
        return r;
    r = cordon_fs_open_beneath(src_dirfd, norm, O_RDONLY | O_DIRECTORY, 0, &root, err);
    if (r < 0)
        goto out;
    c.chunk = malloc(CORDON__TAR_CHUNK);
    if (c.chunk == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "tar stream: out of memory");
        goto out;
    }
    r = cordon__tar_sink_open(&sink, tar_fd, err);
    if (r < 0)
        goto out;
    c.a = sink.a;
    r = create_walk(&c, root, "", 0, err);
    if (r == 0)
        r = cordon__tar_sink_close(&sink, true, err);
    if (r == 0 && ret_stats != NULL)
        *ret_stats = c.stats;
out:
    cordon__tar_sink_close(&sink, false, NULL);
    if (root >= 0)
        close(root);
    free(c.chunk);
    free(norm);
    return r;
}

/* The parent of a normalised path ("" at the top) and its last component. */
static int split_path(const char *norm, char **ret_parent, const char **ret_base)
{
    const char *slash = strrchr(norm, '/');

    *ret_parent = slash != NULL ? strndup(norm, (size_t)(slash - norm)) : strdup("");
    *ret_base = slash != NULL ? slash + 1 : norm;
    return *ret_parent != NULL ? 0 : -1;
}

int cordon_tar_create_paths_fd(int src_dirfd, const char *paths_json, int tar_fd,
                               const struct cordon_tar_limits *limits,
                               struct cordon_tar_stats *ret_stats, struct cordon_error *err)
{
    struct cordon__tar_sink sink = {NULL, -1, false, NULL};
    cJSON *doc = NULL;
    const cJSON *item;
    char **norm = NULL;
    struct create c;
    size_t n = 0;
    int r;

    memset(&c, 0, sizeof(c));
    c.flat = true;
    if (tar_fd < 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "tar stream: no fd");
    doc = paths_json != NULL ? cJSON_ParseWithLength(paths_json, strnlen(paths_json, 1u << 20))
                             : NULL;
    if (!cJSON_IsArray(doc)) {
        cJSON_Delete(doc);
        return cordon_error_set(err, CORDON_E_INVALID, 0, "paths: must be a JSON array of paths");
    }
    if ((size_t)cJSON_GetArraySize(doc) > CORDON_TAR_PATHS_MAX) {
        r = cordon_error_set(err, CORDON_E_LIMIT, 0, "paths: %d entries exceed the limit of %d",
                             cJSON_GetArraySize(doc), CORDON_TAR_PATHS_MAX);
        goto out;
    }
    norm = calloc((size_t)cJSON_GetArraySize(doc) + 1, sizeof(*norm));
    if (norm == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "tar stream: out of memory");
        goto out;
    }
    /* Every path is checked before a byte is written. */
    r = 0;
    cJSON_ArrayForEach(item, doc) {
        char field[32];

        snprintf(field, sizeof(field), "paths[%zu]", n);
        if (!cJSON_IsString(item)) {
            r = cordon_error_set(err, CORDON_E_INVALID, 0, "%s: must be a string", field);
            goto out;
        }
        if ((r = cordon_path_normalize(field, item->valuestring, &norm[n], err)) < 0)
            goto out;
        n++;
    }
    if ((r = cordon__archive_load(err)) < 0)
        goto out;
    if (limits != NULL) {
        c.max_bytes = limits->max_bytes;
        c.max_entries = limits->max_entries;
    }
    c.chunk = malloc(CORDON__TAR_CHUNK);
    if (c.chunk == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "tar stream: out of memory");
        goto out;
    }
    if ((r = cordon__tar_sink_open(&sink, tar_fd, err)) < 0)
        goto out;
    c.a = sink.a;
    for (size_t i = 0; i < n && r == 0; i++) {
        struct cordon_error e;
        const char *base;
        char *parent;
        int pfd = -1;

        if (split_path(norm[i], &parent, &base) < 0) {
            r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "tar stream: out of memory");
            break;
        }
        /* A parent that is missing or not a directory: the path is missing. */
        cordon_error_init(&e);
        r = cordon_fs_open_beneath(src_dirfd, parent[0] ? parent : ".", O_RDONLY | O_DIRECTORY, 0,
                                   &pfd, &e);
        if (r < 0 && (e.os_errno == ENOENT || e.os_errno == ENOTDIR))
            r = 0;
        else if (r < 0)
            r = cordon_error_set(err, e.code, e.os_errno, "tar source \"%.*s\": %s",
                                 cordon_text_fit(norm[i], 300), norm[i], e.message);
        else
            r = create_entry(&c, pfd, base, norm[i], 0, err);
        if (pfd >= 0)
            close(pfd);
        free(parent);
    }
    if (r == 0)
        r = cordon__tar_sink_close(&sink, true, err);
    if (r == 0 && ret_stats != NULL)
        *ret_stats = c.stats;
out:
    cordon__tar_sink_close(&sink, false, NULL);
    for (size_t i = 0; norm != NULL && i < n; i++)
        free(norm[i]);
    free(norm);
    free(c.chunk);
    cJSON_Delete(doc);
    return r;
}

/* ---- writer from memory ------------------------------------------------ */

struct cordon_tar_writer {
    struct cordon__tar_sink sink;
    struct archive *a;  /* sink.a */
    bool broken; /* an entry failed half-way: the stream can only be abandoned */
};

int cordon_tar_writer_open(int tar_fd, struct cordon_tar_writer **ret_writer,
                           struct cordon_error *err)
{
    struct cordon_tar_writer *w;
    int r;

    if (tar_fd < 0 || ret_writer == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "tar writer: no fd or result pointer");
    if ((r = cordon__archive_load(err)) < 0)
        return r;
    w = calloc(1, sizeof(*w));
    if (w == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "tar writer: out of memory");
    r = cordon__tar_sink_open(&w->sink, tar_fd, err);
    if (r < 0) {
        free(w);
        return r;
    }
    w->a = w->sink.a;
    *ret_writer = w;
    return 0;
}

/* A header for a new entry named path (validated), stamped now. */
static int writer_entry(struct cordon_tar_writer *w, const char *path, mode_t type, mode_t mode,
                        uint64_t size, struct archive_entry **ret_entry, struct cordon_error *err)
{
    struct archive_entry *entry;
    char *norm = NULL;
    int r;

    if (w == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "tar writer: missing");
    if (w->broken)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "tar writer: an earlier entry failed; the stream is abandoned");
    r = cordon_path_normalize("tar path", path, &norm, err);
    if (r < 0)
        return r;
    entry = archive_entry_new();
    if (entry == NULL) {
        free(norm);
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "tar writer: out of memory");
    }
    archive_entry_set_pathname(entry, norm);
    archive_entry_set_filetype(entry, type);
    archive_entry_set_perm(entry, mode & 0777);
    /* Nothing on disk stands behind these entries: they are stamped now. */
    archive_entry_set_mtime(entry, time(NULL), 0);
    if (type == AE_IFREG)
        archive_entry_set_size(entry, (la_int64_t)size);
    free(norm);
    *ret_entry = entry;
    return 0;
}

int cordon_tar_writer_add_dir(struct cordon_tar_writer *w, const char *path, mode_t mode,
                              struct cordon_error *err)
{
    struct archive_entry *entry;
    int r;

    r = writer_entry(w, path, AE_IFDIR, mode, 0, &entry, err);
    if (r < 0)
        return r;
    r = cordon__tar_write_header(w->a, entry, archive_entry_pathname(entry), err);
    if (r < 0)
        w->broken = true;
    archive_entry_free(entry);
    return r;
}

int cordon_tar_writer_add_file(struct cordon_tar_writer *w, const char *path, const void *data,
                               size_t len, mode_t mode, struct cordon_error *err)
{
    struct archive_entry *entry;
    const char *p = data;
    int r;

    if (data == NULL && len > 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "tar path \"%.*s\": no data",
                                cordon_text_fit(path ? path : "", 300), path ? path : "");
    r = writer_entry(w, path, AE_IFREG, mode, len, &entry, err);
    if (r < 0)
        return r;
    r = cordon__tar_write_header(w->a, entry, archive_entry_pathname(entry), err);
    while (r == 0 && len > 0) {
        la_ssize_t n = archive_write_data(w->a, p, len);

        if (n <= 0) {
            int e = archive_errno(w->a);

            r = cordon_error_set(
                err, CORDON_E_IO, e > 0 ? e : 0, "tar entry \"%.*s\": write data: %s",
                cordon_text_fit(archive_entry_pathname(entry), 300), archive_entry_pathname(entry),
                archive_error_string(w->a) ? archive_error_string(w->a) : "failed");
            break;
        }
        p += n;
        len -= (size_t)n;
    }
    if (r < 0)
        w->broken = true;
    archive_entry_free(entry);
    return r;
}

int cordon_tar_writer_add_fd(struct cordon_tar_writer *w, const char *path, int fd, uint64_t size,
                             mode_t mode, struct cordon_error *err)
{
    struct archive_entry *entry;
    char *chunk;
    int r;

    if (fd < 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "tar path \"%.*s\": no fd",
                                cordon_text_fit(path ? path : "", 300), path ? path : "");
    r = writer_entry(w, path, AE_IFREG, mode, size, &entry, err);
    if (r < 0)
        return r;
    chunk = malloc(CORDON__TAR_CHUNK);
    if (chunk == NULL)
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "tar writer: out of memory");
    if (r == 0)
        r = cordon__tar_write_header(w->a, entry, archive_entry_pathname(entry), err);
    /* The header promised size bytes: fewer from the fd breaks the stream. */
    if (r == 0)
        r = write_data_fd(w->a, chunk, fd, size, archive_entry_pathname(entry), err);
    if (r < 0)
        w->broken = true;
    free(chunk);
    archive_entry_free(entry);
    return r;
}

int cordon_tar_writer_close(struct cordon_tar_writer *w, struct cordon_error *err)
{
    int r;

    if (w == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "tar writer: missing");
    if (w->broken) {
        cordon__tar_sink_close(&w->sink, false, NULL);
        r = cordon_error_set(err, CORDON_E_IO, 0,
                             "tar writer: an earlier entry failed; the stream is abandoned");
    } else {
        r = cordon__tar_sink_close(&w->sink, true, err);
    }
    free(w);
    return r;
}

void cordon_tar_writer_free(struct cordon_tar_writer *w)
{
    if (w == NULL)
        return;
    cordon__tar_sink_close(&w->sink, false, NULL);
    free(w);
}

int cordon_tar_writer_add_symlink(struct cordon_tar_writer *w, const char *path,
                                  const char *target, struct cordon_error *err)
{
    struct archive_entry *entry;
    int r;

    if (target == NULL || target[0] == '\0')
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "tar path \"%.*s\": symbolic link without a target",
                                cordon_text_fit(path ? path : "", 300), path ? path : "");
    if (strnlen(target, CORDON_PATH_MAX + 1) > CORDON_PATH_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                "tar path \"%.*s\": symbolic link target is longer than %d bytes",
                                cordon_text_fit(path ? path : "", 300), path ? path : "",
                                CORDON_PATH_MAX);
    r = writer_entry(w, path, AE_IFLNK, 0777, 0, &entry, err);
    if (r < 0)
        return r;
    archive_entry_set_symlink(entry, target);
    r = cordon__tar_write_header(w->a, entry, archive_entry_pathname(entry), err);
    if (r < 0)
        w->broken = true;
    archive_entry_free(entry);
    return r;
}

