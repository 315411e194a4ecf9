/* sdk: tar streams extracted on libarchive, each header checked as cordon/sdk/tar.h lists
 * (sdk/tar-check.c), and the workspace imports built on extraction. */
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

#include "sdk/fs-internal.h"
#include "sdk/tar-internal.h"

#define TAR_BLOCK 10240
#define DRAIN_MAX (1u << 20)
#define TAR_EXTRACT_FLAGS (CORDON__TAR_FLAGS | CORDON_TAR_ROOTFS)

/* libarchive reports format errors with EILSEQ (its ARCHIVE_ERRNO_FILE_FORMAT
 * on Linux) or -1; real errnos come from the fd. */
int cordon__tar_fail(struct cordon_error *err, struct archive *a, const char *what)
{
    const char *msg = archive_error_string(a);
    int e = archive_errno(a);
    int code = CORDON_E_INVALID;

    if (e == ENOMEM)
        code = CORDON_E_NOMEM;
    else if (e > 0 && e != EILSEQ && e != EINVAL)
        code = CORDON_E_IO;
    return cordon_error_set(err, code, e > 0 ? e : 0, "tar stream: %s: %s", what,
                            msg != NULL ? msg : "unknown error");
}

int cordon__tar_read_chunk(struct archive *rd, const char *name, int64_t size, char *chunk,
                           la_ssize_t *ret_n, struct cordon_error *err)
{
    la_ssize_t n = archive_read_data(rd, chunk, CORDON__TAR_CHUNK);

    if (n < 0)
        return cordon__tar_fail(err, rd, "read data");
    if (n == 0 || n > size)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "tar entry \"%.*s\": the data does not match its size",
                                cordon_text_fit(name, 300), name);
    *ret_n = n;
    return 0;
}

/* Re-issue an error from sdk/fs.h with the entry it concerns in front. */
static int entry_fail(struct cordon_error *err, const char *entry, const struct cordon_error *in)
{
    return cordon_error_set(err, in->code, in->os_errno, "tar entry \"%.*s\": %s",
                            cordon_text_fit(entry, 300), entry, in->message);
}

/* ---- extraction -------------------------------------------------------- */

struct dir_record {
    char *path;
    mode_t mode;
    struct timespec mtime;
    bool has_mtime;
    size_t order;
};

struct extract {
    struct archive *a;        /* the stream being read; NULL when files come from data_fd */
    int data_fd;              /* cordon_files_import_workspace: the files' bytes */
    int dest;
    unsigned flags;
    uint64_t max_bytes, max_entries;
    uid_t uid;
    gid_t gid;
    struct cordon_tar_stats stats;
    struct dir_record *dirs;
    size_t ndirs, capdirs;
    char *chunk;
};

static mode_t entry_mode(const struct extract *x, mode_t perm)
{
    perm &= 0777;
    if (x->flags & CORDON_TAR_READ_ONLY)
        perm &= ~(mode_t)0222;
    return perm;
}

/*
 * Open the directory path beneath the destination (O_PATH), creating what
 * is missing 0755 and owned as asked. Each step refuses a symlink, so an
 * entry cannot be written through a link extracted before it.
 */
static int make_dirs(struct extract *x, const char *entry, const char *path, int *ret_fd,
                     struct cordon_error *err)
{
    struct cordon_error in;
    char comp[CORDON_PATH_COMPONENT_MAX + 1];
    const char *p = path;
    int cur = -1, fd, r;

    cordon_error_init(&in);
    r = cordon_fs_open_beneath(x->dest, path, O_PATH | O_DIRECTORY, 0, &cur, &in);
    if (r == 0) {
        *ret_fd = cur;
        return 0;
    }
    /* Anything but a plain hit takes the walk, which names the failing step. */
    cur = -1;
    r = cordon_fs_open_beneath(x->dest, "", O_PATH | O_DIRECTORY, 0, &cur, &in);
    if (r < 0)
        return entry_fail(err, entry, &in);
    while (*p != '\0') {
        size_t clen = strcspn(p, "/");
        bool created;

        /* path is normalised: no empty, "." or ".." components, none too long. */
        memcpy(comp, p, clen);
        comp[clen] = '\0';
        p += clen;
        p += *p == '/';
        created = mkdirat(cur, comp, 0755) == 0;
        if (!created && errno != EEXIST) {
            r = cordon_error_set(err, CORDON_E_IO, errno,
                                 "tar entry \"%.*s\": create directory \"%s\": %s",
                                 cordon_text_fit(entry, 300), entry, comp, strerror(errno));
            goto out;
        }
        r = cordon_fs_open_beneath(cur, comp, O_PATH | O_DIRECTORY, 0, &fd, &in);
        if (r < 0 && in.os_errno == ENOTDIR) {
            r = cordon_error_set(err, CORDON_E_EXISTS, ENOTDIR,
                                 "tar entry \"%.*s\": \"%s\" exists and is not a directory",
                                 cordon_text_fit(entry, 300), entry, comp);
            goto out;
        }
        if (r < 0) {
            r = entry_fail(err, entry, &in);
            goto out;
        }
        close(cur);
        cur = fd;
        if (created && (x->flags & CORDON_TAR_SET_OWNER) &&
            fchownat(cur, "", x->uid, x->gid, AT_EMPTY_PATH) < 0) {
            r = cordon_error_set(err, CORDON_E_IO, errno, "tar entry \"%.*s\": chown: %s",
                                 cordon_text_fit(entry, 300), entry, strerror(errno));
            goto out;
        }
    }
    *ret_fd = cur;
    cur = -1;
out:
    if (cur >= 0)
        close(cur);
    return r;
}

/* Open the parent directory of the normalised name; *ret_base points into name. */
static int open_parent(struct extract *x, const char *name, int *ret_fd, const char **ret_base,
                       struct cordon_error *err)
{
    const char *slash = strrchr(name, '/');
    char *parent;
    int r;

    if (slash == NULL) {
        r = make_dirs(x, name, "", ret_fd, err);
        *ret_base = name;
        return r;
    }
    parent = strndup(name, (size_t)(slash - name));
    if (parent == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "tar entry: out of memory");
    r = make_dirs(x, name, parent, ret_fd, err);
    free(parent);
    *ret_base = slash + 1;
    return r;
}

/*
 * Make room for a new entry at base: an existing regular file is replaced;
 * a link, directory or anything else that is already there is refused.
 */
static int clear_slot(int pfd, const char *base, const char *entry, struct cordon_error *err)
{
    struct stat st;

    if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT
                   ? 0
                   : cordon_error_set(err, CORDON_E_IO, errno, "tar entry \"%.*s\": stat: %s",
                                      cordon_text_fit(entry, 300), entry, strerror(errno));
    if (S_ISLNK(st.st_mode))
        return cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                "tar entry \"%.*s\": a symbolic link is already there",
                                cordon_text_fit(entry, 300), entry);
    if (!S_ISREG(st.st_mode))
        return cordon_error_set(
            err, CORDON_E_EXISTS, 0, "tar entry \"%.*s\": a %s is already there",
            cordon_text_fit(entry, 300), entry, cordon__file_type_name(st.st_mode));
    if (unlinkat(pfd, base, 0) < 0 && errno != ENOENT)
        return cordon_error_set(err, CORDON_E_IO, errno, "tar entry \"%.*s\": replace file: %s",
                                cordon_text_fit(entry, 300), entry, strerror(errno));
    return 0;
}

static void entry_times(struct archive_entry *entry, struct timespec ts[2])
{
    ts[0].tv_sec = 0;
    ts[0].tv_nsec = UTIME_OMIT;
    ts[1].tv_sec = archive_entry_mtime(entry);
    ts[1].tv_nsec = archive_entry_mtime_nsec(entry);
}

/* The next chunk of the current file: from the archive, or at most `left`
 * bytes of data_fd. 0 at the file's end, < 0 on a failure (err is set). */
static ssize_t read_chunk(struct extract *x, const char *name, uint64_t left,
                          struct cordon_error *err)
{
    char what[352];
    ssize_t n;

    if (x->a != NULL) {
        n = archive_read_data(x->a, x->chunk, CORDON__TAR_CHUNK);
        if (n < 0) {
            snprintf(what, sizeof(what), "entry \"%.*s\": read data", cordon_text_fit(name, 300),
                     name);
            return cordon__tar_fail(err, x->a, what);
        }
        return n;
    }
    if (left == 0)
        return 0;
    do
        n = read(x->data_fd, x->chunk, left < CORDON__TAR_CHUNK ? (size_t)left : CORDON__TAR_CHUNK);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "file \"%.*s\": read data: %s",
                                cordon_text_fit(name, 300), name, strerror(errno));
    if (n == 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "file \"%.*s\": the data ends "
                                "%" PRIu64 " bytes early",
                                cordon_text_fit(name, 300), name, left);
    return n;
}

/* A regular file at name with perm; mtime NULL leaves the time of
 * writing. From data_fd (no archive) the file is exactly size bytes. */
static int extract_file(struct extract *x, const char *name, mode_t perm,
                        const struct timespec *mtime, uint64_t size, struct cordon_error *err)
{
    struct cordon_error in;
    struct timespec ts[2] = { { 0, UTIME_OMIT }, { 0, UTIME_OMIT } };
    const char *base;
    uint64_t written = 0;
    bool created = false;
    int pfd = -1, fd = -1, r;

    /* entry_check has checked the header's size before anything is written... */
    r = open_parent(x, name, &pfd, &base, err);
    if (r < 0)
        return r;
    cordon_error_init(&in);
    r = cordon_fs_open_beneath(pfd, base, O_WRONLY | O_CREAT | O_EXCL, 0600, &fd, &in);
    if (r == CORDON_E_EXISTS) {
        r = clear_slot(pfd, base, name, err);
        if (r < 0)
            goto out;
        r = cordon_fs_open_beneath(pfd, base, O_WRONLY | O_CREAT | O_EXCL, 0600, &fd, &in);
    }
    if (r < 0) {
        r = entry_fail(err, name, &in);
        goto out;
    }
    created = true;
    /* ...and the data is counted as it arrives, never trusting the header alone. */
    for (;;) {
        ssize_t n = read_chunk(x, name, size - written, err);
        int e;

        if (n < 0) {
            r = (int)n;
            goto out;
        }
        if (n == 0)
            break;
        written += (uint64_t)n;
        if (x->max_bytes != 0 && written > x->max_bytes - x->stats.bytes) {
            r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                                 "tar entry \"%.*s\": data brings the total to more than the "
                                 "limit of %" PRIu64 " bytes",
                                 cordon_text_fit(name, 300), name, x->max_bytes);
            goto out;
        }
        e = cordon_fs_write_all(fd, x->chunk, (size_t)n);
        if (e < 0) {
            r = cordon_error_set(err, CORDON_E_IO, -e, "tar entry \"%.*s\": write: %s",
                                 cordon_text_fit(name, 300), name, strerror(-e));
            goto out;
        }
    }
    if (mtime != NULL)
        ts[1] = *mtime;
    if (((x->flags & CORDON_TAR_SET_OWNER) && fchown(fd, x->uid, x->gid) < 0) ||
        fchmod(fd, entry_mode(x, perm)) < 0 || (mtime != NULL && futimens(fd, ts) < 0)) {
        r = cordon_error_set(err, CORDON_E_IO, errno,
                             "tar entry \"%.*s\": set owner, mode "
                             "or time: %s",
                             cordon_text_fit(name, 300), name, strerror(errno));
        goto out;
    }
    x->stats.bytes += written;
out:
    if (fd >= 0)
        close(fd);
    /* A half-written file does not stay behind. */
    if (r < 0 && created)
        unlinkat(pfd, base, 0);
    if (pfd >= 0)
        close(pfd);
    return r;
}

static int extract_symlink(struct extract *x, struct archive_entry *entry, const char *name,
                           struct cordon_error *err)
{
    const char *target = archive_entry_symlink(entry);
    const char *base;
    struct timespec ts[2];
    int pfd = -1, r;

    /* entry_check has allowed links and checked the target. */
    if (target == NULL)
        target = archive_entry_symlink_utf8(entry);
    r = open_parent(x, name, &pfd, &base, err);
    if (r < 0)
        return r;
    if (symlinkat(target, pfd, base) < 0) {
        int e = errno;

        if (e == EEXIST) {
            r = clear_slot(pfd, base, name, err);
            if (r < 0)
                goto out;
            e = symlinkat(target, pfd, base) < 0 ? errno : 0;
        }
        if (e != 0) {
            r = cordon_error_set(err, CORDON_E_IO, e, "tar entry \"%.*s\": symlink: %s",
                                 cordon_text_fit(name, 300), name, strerror(e));
            goto out;
        }
    }
    entry_times(entry, ts);
    /* Both calls act on the link itself, never on what it points to. */
    if (((x->flags & CORDON_TAR_SET_OWNER) &&
         fchownat(pfd, base, x->uid, x->gid, AT_SYMLINK_NOFOLLOW) < 0) ||
        (archive_entry_mtime_is_set(entry) &&
         utimensat(pfd, base, ts, AT_SYMLINK_NOFOLLOW) < 0)) {
        r = cordon_error_set(err, CORDON_E_IO, errno,
                             "tar entry \"%.*s\": set owner or time "
                             "of the link: %s",
                             cordon_text_fit(name, 300), name, strerror(errno));
        goto out;
    }
out:
    if (pfd >= 0)
        close(pfd);
    return r;
}

/*
 * A hardlink of a root filesystem (CORDON_TAR_ROOTFS): both names are
 * opened beneath the destination without following a link, and the target
 * must already be a regular file there, so the link can only join two
 * names of the tree being extracted.
 */
static int extract_hardlink(struct extract *x, struct archive_entry *entry, const char *name,
                            struct cordon_error *err)
{
    struct cordon_error in;
    struct stat st;
    const char *base, *tbase;
    char *target = NULL;
    int pfd = -1, tfd = -1, r;

    r = cordon__tar_check_hardlink_target(entry, name, &target, err);
    if (r < 0)
        return r;
    cordon_error_init(&in);
    r = open_parent(x, target, &tfd, &tbase, &in);
    if (r < 0) {
        r = cordon_error_set(err, in.code, in.os_errno, "tar entry \"%.*s\": hardlink target: %s",
                             cordon_text_fit(name, 300), name, in.message);
        goto out;
    }
    if (fstatat(tfd, tbase, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode)) {
        r = cordon_error_set(err, CORDON_E_UNSAFE, errno,
                             "tar entry \"%.*s\": hardlink target \"%.*s\" is not an earlier "
                             "regular file of the stream",
                             cordon_text_fit(name, 300), name, cordon_text_fit(target, 300),
                             target);
        goto out;
    }
    r = open_parent(x, name, &pfd, &base, err);
    if (r < 0)
        goto out;
    if (linkat(tfd, tbase, pfd, base, 0) < 0) {
        int e = errno;

        if (e == EEXIST) {
            r = clear_slot(pfd, base, name, err);
            if (r < 0)
                goto out;
            e = linkat(tfd, tbase, pfd, base, 0) < 0 ? errno : 0;
        }
        if (e != 0)
            r = cordon_error_set(err, CORDON_E_IO, e, "tar entry \"%.*s\": link: %s",
                                 cordon_text_fit(name, 300), name, strerror(e));
    }
out:
    if (pfd >= 0)
        close(pfd);
    if (tfd >= 0)
        close(tfd);
    free(target);
    return r;
}

/* Directories are created now and given their mode at the end, so that a
 * read-only directory can still receive the entries that follow it. */
static int extract_dir(struct extract *x, struct archive_entry *entry, const char *name,
                       struct cordon_error *err)
{
    struct dir_record *rec;
    int fd = -1, r;

    if (name[0] == '\0')
        return 0; /* "./": the destination itself keeps its mode */
    r = make_dirs(x, name, name, &fd, err);
    if (r < 0)
        return r;
    close(fd);
    if (x->ndirs == x->capdirs) {
        size_t cap = x->capdirs ? x->capdirs * 2 : 16;
        struct dir_record *nd;

        if (cap > SIZE_MAX / sizeof(*nd))
            return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "tar stream: out of memory");
        nd = realloc(x->dirs, cap * sizeof(*nd));
        if (nd == NULL)
            return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "tar stream: out of memory");
        x->dirs = nd;
        x->capdirs = cap;
    }
    rec = &x->dirs[x->ndirs];
    rec->path = strdup(name);
    if (rec->path == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "tar stream: out of memory");
    rec->mode = entry_mode(x, archive_entry_perm(entry));
    rec->has_mtime = archive_entry_mtime_is_set(entry);
    rec->mtime.tv_sec = archive_entry_mtime(entry);
    rec->mtime.tv_nsec = archive_entry_mtime_nsec(entry);
    rec->order = x->ndirs++;
    return 0;
}

/* Deepest first (a descendant sorts after its ancestor), the last record of a path first. */
static int dir_record_cmp(const void *pa, const void *pb)
{
    const struct dir_record *a = pa, *b = pb;
    int c = strcmp(b->path, a->path);

    if (c != 0)
        return c;
    return a->order < b->order ? 1 : a->order > b->order ? -1 : 0;
}

static int apply_dirs(struct extract *x, struct cordon_error *err)
{
    struct cordon_error in;
    const char *prev = NULL;

    cordon_error_init(&in);
    if (x->ndirs > 1)
        qsort(x->dirs, x->ndirs, sizeof(*x->dirs), dir_record_cmp);
    for (size_t i = 0; i < x->ndirs; i++) {
        const struct dir_record *rec = &x->dirs[i];
        struct timespec ts[2] = {{0, UTIME_OMIT}, rec->mtime};
        int fd, r;

        if (prev != NULL && strcmp(prev, rec->path) == 0)
            continue;
        prev = rec->path;
        r = cordon_fs_open_beneath(x->dest, rec->path, O_RDONLY | O_DIRECTORY, 0, &fd, &in);
        if (r < 0)
            return entry_fail(err, rec->path, &in);
        if (((x->flags & CORDON_TAR_SET_OWNER) && fchown(fd, x->uid, x->gid) < 0) ||
            fchmod(fd, rec->mode) < 0 || (rec->has_mtime && futimens(fd, ts) < 0)) {
            r = cordon_error_set(err, CORDON_E_IO, errno,
                                 "tar entry \"%.*s\": set owner, mode or time: %s",
                                 cordon_text_fit(rec->path, 300), rec->path, strerror(errno));
            close(fd);
            return r;
        }
        close(fd);
    }
    return 0;
}

static int extract_entry(struct extract *x, struct archive_entry *entry, struct cordon_error *err)
{
    char *name = NULL;
    int r;

    r = cordon__tar_entry_check(entry, x->flags, x->max_bytes, x->max_entries, &x->stats, &name, err);
    if (r < 0)
        return r;
    /* entry_check lets a hardlink or a special file through only with CORDON_TAR_ROOTFS. */
    if (cordon__tar_is_hardlink(entry)) {
        r = extract_hardlink(x, entry, name, err);
        free(name);
        return r;
    }
    switch (archive_entry_filetype(entry)) {
    case AE_IFREG: {
        struct timespec ts[2];

        entry_times(entry, ts);
        r = extract_file(x, name, archive_entry_perm(entry),
                         archive_entry_mtime_is_set(entry) ? &ts[1] : NULL, 0, err);
        break;
    }
    case AE_IFDIR:
        r = extract_dir(x, entry, name, err);
        break;
    case AE_IFLNK:
        r = extract_symlink(x, entry, name, err);
        break;
    default: /* a device node, FIFO or socket of a root filesystem: skipped */
        break;
    }
    free(name);
    return r;
}

int cordon__tar_reader_open(int fd, struct archive **ret_a, struct cordon_error *err)
{
    struct archive *a;
    int r = cordon__archive_load(err);

    if (r < 0)
        return r;
    a = archive_read_new();
    if (a == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "tar stream: out of memory");
    if (archive_read_support_format_tar(a) != ARCHIVE_OK ||
        archive_read_support_format_empty(a) != ARCHIVE_OK ||
        archive_read_support_filter_none(a) != ARCHIVE_OK) {
        r = cordon__tar_fail(err, a, "set up reader");
        archive_read_free(a);
        return r;
    }
    if (archive_read_open_fd(a, fd, TAR_BLOCK) != ARCHIVE_OK) {
        r = cordon__tar_fail(err, a, "open");
        archive_read_free(a);
        return r;
    }
    *ret_a = a;
    return 0;
}

/* Read what follows the end blocks so that a writer on a pipe can finish. */
void cordon__tar_drain(int fd, char *chunk)
{
    for (size_t drained = 0; drained < DRAIN_MAX;) {
        ssize_t n = read(fd, chunk, CORDON__TAR_CHUNK);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        drained += (size_t)n;
    }
}

int cordon_tar_extract_fd(int tar_fd, int dest_dirfd, const struct cordon_tar_limits *limits,
                          unsigned flags, struct cordon_tar_stats *ret_stats,
                          struct cordon_error *err)
{
    struct extract x;
    struct archive_entry *entry;
    int r = 0;

    memset(&x, 0, sizeof(x));
    x.data_fd = -1;
    if (tar_fd < 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "tar stream: no fd");
    if ((r = cordon__archive_load(err)) < 0)
        return r;
    if (flags & ~TAR_EXTRACT_FLAGS)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "tar stream: unknown flags %#x",
                                flags & ~TAR_EXTRACT_FLAGS);
    if ((flags & CORDON_TAR_SET_OWNER) && limits == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "tar stream: set owner asked without a uid and gid");
    x.dest = dest_dirfd;
    x.flags = flags;
    if (limits != NULL) {
        x.max_bytes = limits->max_bytes;
        x.max_entries = limits->max_entries;
        x.uid = limits->uid;
        x.gid = limits->gid;
    }
    x.chunk = malloc(CORDON__TAR_CHUNK);
    if (x.chunk == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "tar stream: out of memory");
        goto out;
    }
    r = cordon__tar_reader_open(tar_fd, &x.a, err);
    if (r < 0)
        goto out;
    for (;;) {
        int ar = archive_read_next_header(x.a, &entry);

        if (ar == ARCHIVE_EOF)
            break;
        /* ARCHIVE_WARN: e.g. a name the locale cannot convert; it is still read raw. */
        if (ar != ARCHIVE_OK && ar != ARCHIVE_WARN) {
            r = cordon__tar_fail(err, x.a, "read header");
            goto out;
        }
        r = extract_entry(&x, entry, err);
        if (r < 0)
            goto out;
    }
    r = apply_dirs(&x, err);
    if (r < 0)
        goto out;
    cordon__tar_drain(tar_fd, x.chunk);
    if (ret_stats != NULL)
        *ret_stats = x.stats;
out:
    if (x.a != NULL)
        archive_read_free(x.a);
    for (size_t i = 0; i < x.ndirs; i++)
        free(x.dirs[i].path);
    free(x.dirs);
    free(x.chunk);
    return r;
}

/* ---- import_tar for a workspace directory ------------------------------ */

/*
 * Where import_tar and import_files put things in a workspace: dest is
 * created beneath ws_fd; at or below source/ in layout "code" everything is
 * root's and read-only, elsewhere the sandbox user's with safe symlinks.
 */
static int import_target(int ws_fd, const char *dest, const struct cordon_workspace_owner *owner,
                         int *ret_dest_fd, unsigned *ret_flags, struct cordon_tar_limits *limits,
                         struct cordon_error *err)
{
    unsigned flags;
    char *norm = NULL;
    bool in_source;
    int r;

    r = cordon_path_normalize_dir("dest", dest != NULL ? dest : "", &norm, err);
    if (r < 0)
        return r;
    in_source = owner->code_layout && cordon_path_is_under(norm, "source");
    r = cordon_fs_walk_dirs(ws_fd, "dest", norm, true, owner->set_owner && !in_source, owner->uid,
                            owner->gid, ret_dest_fd, err);
    free(norm);
    if (r < 0)
        return r;
    if (in_source) {
        /* limits' uid/gid stay 0: root owns every entry; no symlinks at all */
        flags = CORDON_TAR_READ_ONLY;
    } else {
        flags = CORDON_TAR_ALLOW_SYMLINKS;
        limits->uid = owner->uid;
        limits->gid = owner->gid;
    }
    if (owner->set_owner)
        flags |= CORDON_TAR_SET_OWNER;
    *ret_flags = flags;
    return 0;
}

int cordon_tar_import_workspace(int tar_fd, int ws_fd, const char *dest,
                                const struct cordon_workspace_owner *owner, uint64_t max_bytes,
                                uint64_t max_entries, struct cordon_error *err)
{
    struct cordon_tar_limits limits = { max_bytes, max_entries, 0, 0 };
    unsigned flags;
    int dest_fd = -1, r;

    r = import_target(ws_fd, dest, owner, &dest_fd, &flags, &limits, err);
    if (r == 0) {
        r = cordon_tar_extract_fd(tar_fd, dest_fd, &limits, flags, NULL, err);
        close(dest_fd);
    }
    return r;
}

/* ---- files without tar (import_files, ABI 1.1) -------------------------- */

#define FILES_JSON_MAX (8u << 20)
#define FILES_SIZE_MAX 9007199254740992.0   /* 2^53: exact in a double */

int cordon__files_manifest(const char *files_json, cJSON **ret_doc, const cJSON **ret_files,
                           struct cordon_error *err)
{
    cJSON *doc;

    if (strnlen(files_json, FILES_JSON_MAX + 1) > FILES_JSON_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "files: the manifest exceeds %u bytes",
                                FILES_JSON_MAX);
    doc = cJSON_Parse(files_json);
    *ret_files = cJSON_GetObjectItemCaseSensitive(doc, "files");
    if (!cJSON_IsArray(*ret_files)) {
        cJSON_Delete(doc);
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "files: the manifest must be {\"files\": [...]}");
    }
    *ret_doc = doc;
    return 0;
}

int cordon__files_data_end(int data_fd, struct cordon_error *err)
{
    ssize_t n;
    char extra;

    do
        n = read(data_fd, &extra, 1);
    while (n < 0 && errno == EINTR);
    if (n != 0)
        return cordon_error_set(err, n > 0 ? CORDON_E_INVALID : CORDON_E_IO, n > 0 ? 0 : errno,
                                "files: %s", n > 0 ? "data_fd holds more bytes than the files"
                                                   : strerror(errno));
    return 0;
}

int cordon__files_entry(const cJSON *f, size_t i, uint64_t max_bytes, uint64_t bytes,
                        char **ret_name, uint64_t *ret_size, mode_t *ret_mode,
                        struct cordon_error *err)
{
    const cJSON *path = cJSON_GetObjectItemCaseSensitive(f, "path");
    const cJSON *size = cJSON_GetObjectItemCaseSensitive(f, "size");
    const cJSON *mode = cJSON_GetObjectItemCaseSensitive(f, "mode");
    int r;

    if (!cJSON_IsObject(f) || !cJSON_IsString(path))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "files[%zu]: must be an object with a string \"path\"", i);
    if (!cJSON_IsNumber(size) || size->valuedouble < 0 || size->valuedouble >= FILES_SIZE_MAX ||
        size->valuedouble != (double)(uint64_t)size->valuedouble)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "files[%zu].size: must be a whole number of bytes below 2^53", i);
    if (!cJSON_IsNumber(mode) || mode->valuedouble < 0 || mode->valuedouble > 0777 ||
        mode->valuedouble != (double)(int)mode->valuedouble)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "files[%zu].mode: must be permission bits 0 to 0777 (no setuid, "
                                "setgid or sticky bit)", i);
    r = cordon_path_normalize("files", path->valuestring, ret_name, err);
    if (r < 0)
        return r;
    *ret_size = (uint64_t)size->valuedouble;
    *ret_mode = (mode_t)mode->valueint;
    if (max_bytes != 0 && *ret_size > max_bytes - bytes) {
        r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                             "file \"%.*s\": %" PRIu64 " bytes bring the total to more than "
                             "the limit of %" PRIu64 " bytes",
                             cordon_text_fit(*ret_name, 300), *ret_name, *ret_size, max_bytes);
        free(*ret_name);
        *ret_name = NULL;
    }
    return r;
}

int cordon_files_import_workspace(const char *files_json, int data_fd, int ws_fd,
                                  const char *dest, const struct cordon_workspace_owner *owner,
                                  uint64_t max_bytes, uint64_t max_entries,
                                  struct cordon_error *err)
{
    struct cordon_tar_limits limits = { max_bytes, max_entries, 0, 0 };
    struct extract x;
    cJSON *doc = NULL;
    const cJSON *files, *f;
    size_t i = 0;
    int r;

    memset(&x, 0, sizeof(x));
    x.dest = -1;
    x.data_fd = data_fd;
    if (files_json == NULL || data_fd < 0 || owner == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "files: no manifest, data fd or owner");
    r = cordon__files_manifest(files_json, &doc, &files, err);
    if (r < 0)
        return r;
    r = import_target(ws_fd, dest, owner, &x.dest, &x.flags, &limits, err);
    if (r < 0)
        goto out;
    x.max_bytes = limits.max_bytes;
    x.max_entries = limits.max_entries;
    x.uid = limits.uid;
    x.gid = limits.gid;
    if ((x.chunk = malloc(CORDON__TAR_CHUNK)) == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "files: out of memory");
        goto out;
    }
    cJSON_ArrayForEach(f, files) {
        char *name = NULL;
        uint64_t size = 0;
        mode_t mode = 0;

        if (x.max_entries != 0 && ++x.stats.entries > x.max_entries)
            r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                                 "files: more than the limit of %" PRIu64 " entries", x.max_entries);
        else
            r = cordon__files_entry(f, i++, x.max_bytes, x.stats.bytes, &name, &size, &mode, err);
        if (r == 0)
            r = extract_file(&x, name, mode, NULL, size, err);
        free(name);
        if (r < 0)
            goto out;
    }
    r = cordon__files_data_end(data_fd, err);
out:
    if (x.dest >= 0)
        close(x.dest);
    free(x.chunk);
    cJSON_Delete(doc);
    return r;
}
