/*
 * sdk: a mechanism's archive of a directory rewritten for export
 * (cordon/sdk/tar.h: cordon_tar_export_rewrite_fd): renamed relative to
 * the directory, narrowed to the paths asked for, and every hardlink
 * written as a regular file of its own. Each entry is a fresh header:
 * nothing of the source's travels unless named here.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sdk/tar-internal.h"

#include <cordon/sdk/path.h>
#include <cordon/sdk/tar.h>

struct exporter {
    const char *root;
    size_t root_len;
    const struct cordon_tar_limits *limits;
    struct archive *w;
    bool root_seen;
    /* export_files: only these workspace-relative names, named so (NULL:
     * everything below root, named relative to it). workspace_root: root is
     * the daemon's "workspace" (names are relative to it), else root is a
     * top-level name of the workspace (names are the daemon's own). */
    const char *const *only;
    size_t n_only;
    bool workspace_root;
    uint64_t entries, bytes;
    /* Hardlinks seen, written as regular files once their targets are read. */
    struct export_link *links;
    size_t nlinks, links_cap;
};

/* A second name of a file: written with the content of target, its first
 * name in the stream, as a regular file of its own. */
struct export_link {
    char *rel;                 /* the name to write, relative to the root */
    char *target;              /* the target's normalised name in the daemon's stream */
    mode_t perm;
    uid_t uid;
    gid_t gid;
    bool done;
};

static void export_links_clear(struct exporter *ex)
{
    for (size_t i = 0; i < ex->nlinks; i++) {
        free(ex->links[i].rel);
        free(ex->links[i].target);
    }
    free(ex->links);
    ex->links = NULL;
    ex->nlinks = ex->links_cap = 0;
}

/* Remember the hardlink e (named rel), to be written in the second pass. */
static int export_link_add(struct exporter *ex, struct archive_entry *e, const char *rel,
                           struct cordon_error *err)
{
    const char *raw = archive_entry_hardlink(e);
    struct export_link *l;
    char *target = NULL;
    int r;

    if (raw == NULL)
        raw = archive_entry_hardlink_utf8(e);
    if (raw == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "export entry \"%.*s\": the hardlink target cannot be read",
                                cordon_text_fit(rel, 300), rel);
    r = cordon_path_normalize_dir("export hardlink target", raw, &target, err);
    if (r < 0)
        return r;
    /* Bounded: every link counted against the entry limit already. */
    if (ex->nlinks == ex->links_cap) {
        size_t cap = ex->links_cap != 0 ? ex->links_cap * 2 : 16;
        struct export_link *grown = realloc(ex->links, cap * sizeof(*grown));

        if (grown == NULL) {
            free(target);
            return cordon__tar_nomem(err, "export");
        }
        ex->links = grown;
        ex->links_cap = cap;
    }
    l = &ex->links[ex->nlinks];
    memset(l, 0, sizeof(*l));
    l->rel = strdup(rel);
    if (l->rel == NULL) {
        free(target);
        return cordon__tar_nomem(err, "export");
    }
    l->target = target;
    l->perm = archive_entry_perm(e);
    l->uid = archive_entry_uid(e);
    l->gid = archive_entry_gid(e);
    ex->nlinks++;
    return 0;
}

/* Whether export_files asked for the workspace-relative name. */
static bool wanted(const struct exporter *ex, const char *name)
{
    for (size_t i = 0; i < ex->n_only; i++)
        if (strcmp(ex->only[i], name) == 0)
            return true;
    return false;
}

static int export_entry(struct exporter *ex, struct archive *rd, struct archive_entry *e,
                        char *chunk, struct cordon_error *err)
{
    const char *raw = cordon__tar_entry_name(e), *rel;
    mode_t type = archive_entry_filetype(e);
    char *name = NULL;
    int r;

    if (raw == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "export: an entry's name cannot be read");
    r = cordon_path_normalize_dir("export entry", raw, &name, err);
    if (r < 0)
        return r;
    /* The daemon names entries after the directory asked for: strip it. */
    if (strcmp(name, ex->root) == 0) {
        if (type != AE_IFDIR)
            r = cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                 "src: \"%.*s\" is %s in the workspace, not a directory",
                                 cordon_text_fit(name, 300), name,
                                 type == AE_IFLNK ? "a symbolic link" : "not a directory");
        ex->root_seen = true;
        /* export_files of a top-level directory itself: an entry of its own. */
        if (r == 0 && ex->only != NULL && !ex->workspace_root && wanted(ex, name))
            r = cordon__tar_write_entry(ex->w, name, AE_IFDIR, archive_entry_perm(e),
                                        archive_entry_uid(e), archive_entry_gid(e), e, rd, chunk,
                                        err);
        goto out;
    }
    if (!cordon_path_is_under(name, ex->root))
        goto out;
    rel = name + ex->root_len + (ex->root_len > 0);
    /* export_files: what was not asked for is neither counted nor read. */
    if (ex->only != NULL) {
        if (!ex->workspace_root)
            rel = name;
        if (!wanted(ex, rel))
            goto out;
    }
    if (++ex->entries > ex->limits->max_entries) {
        r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                             "export: more than the limit of %" PRIu64 " entries",
                             ex->limits->max_entries);
        goto out;
    }
    /* Every provider exports each name of a file as a regular file of its
     * own: the content comes in the second pass, from the target's entry. */
    if (cordon__tar_entry_is_hardlink(e)) {
        r = export_link_add(ex, e, rel, err);
        goto out;
    }
    if (type == AE_IFREG) {
        int64_t size = archive_entry_size(e);

        if (size < 0 || (uint64_t)size > ex->limits->max_bytes - ex->bytes) {
            r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                                 "export entry \"%.*s\": the total passes the limit of %" PRIu64
                                 " bytes",
                                 cordon_text_fit(rel, 300), rel, ex->limits->max_bytes);
            goto out;
        }
        ex->bytes += (uint64_t)size;
    } else if (type != AE_IFDIR && type != AE_IFLNK) {
        r = cordon__tar_refuse_type(rel, type, err);
        goto out;
    }
    /* Only permission bits travel: setuid and friends would be refused on the way in. */
    r = cordon__tar_write_entry(ex->w, rel, type, archive_entry_perm(e), archive_entry_uid(e),
                                archive_entry_gid(e), e, rd, chunk, err);
out:
    free(name);
    return r;
}

/* The content of entry e, read from rd into a memfd (size bytes); rewound. */
static int copy_data(struct archive *rd, const char *name, int64_t size, char *chunk, int *ret_fd,
                     struct cordon_error *err)
{
    int fd = memfd_create("cordon-docker-link", MFD_CLOEXEC), r = 0;

    if (fd < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "export: memfd: %s", strerror(errno));
    while (size > 0) {
        la_ssize_t n;

        if ((r = cordon__tar_read_chunk(rd, name, size, chunk, &n, err)) < 0)
            goto out;
        if ((r = cordon_fs_write_all(fd, chunk, (size_t)n)) < 0) {
            r = cordon_error_set(err, CORDON_E_IO, -r, "export: memfd: %s", strerror(-r));
            goto out;
        }
        size -= n;
    }
    if (lseek(fd, 0, SEEK_SET) != 0)
        r = cordon_error_set(err, CORDON_E_IO, errno, "export: memfd: %s", strerror(errno));
out:
    if (r < 0) {
        close(fd);
        return r;
    }
    *ret_fd = fd;
    return 0;
}

/* One link written as a regular file: the target's header fields but the
 * link's own name, mode and owners, then size bytes from data_fd. */
static int write_link(struct exporter *ex, const struct export_link *l, struct archive_entry *from,
                      int data_fd, int64_t size, char *chunk, struct cordon_error *err)
{
    struct archive_entry *e = archive_entry_new();
    int r = 0;

    if (e == NULL)
        return cordon__tar_nomem(err, "tar stream");
    if ((uint64_t)size > ex->limits->max_bytes - ex->bytes) {
        r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                             "export entry \"%.*s\": the total passes the limit of %" PRIu64
                             " bytes", cordon_text_fit(l->rel, 300), l->rel, ex->limits->max_bytes);
        goto out;
    }
    ex->bytes += (uint64_t)size;
    archive_entry_set_pathname(e, l->rel);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, l->perm & 0777);
    archive_entry_set_uid(e, l->uid);
    archive_entry_set_gid(e, l->gid);
    if (archive_entry_mtime_is_set(from))
        archive_entry_set_mtime(e, archive_entry_mtime(from), archive_entry_mtime_nsec(from));
    else
        archive_entry_set_mtime(e, time(NULL), 0);
    archive_entry_set_size(e, size);
    if (archive_write_header(ex->w, e) < ARCHIVE_WARN) {
        r = cordon__tar_fail(err, ex->w, "write header");
        goto out;
    }
    if (lseek(data_fd, 0, SEEK_SET) != 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "export: memfd: %s", strerror(errno));
        goto out;
    }
    while (size > 0) {
        ssize_t n = read(data_fd, chunk,
                         size < CORDON__TAR_CHUNK ? (size_t)size : CORDON__TAR_CHUNK);

        if (n <= 0) {
            r = cordon_error_set(err, CORDON_E_IO, n < 0 ? errno : 0,
                                 "export: memfd: %s", n < 0 ? strerror(errno) : "short read");
            goto out;
        }
        if (archive_write_data(ex->w, chunk, (size_t)n) != n) {
            r = cordon__tar_fail(err, ex->w, "write data");
            goto out;
        }
        size -= n;
    }
out:
    archive_entry_free(e);
    return r;
}

/*
 * The second pass, when the first saw hardlinks: read the stream again and,
 * at each regular file that is a link's target, write every link to it as
 * a regular file with its content. A tar names a link's target before the
 * link, so every target is in the stream; one that is not is refused.
 */
static int export_links(struct exporter *ex, int in_fd, char *chunk, struct cordon_error *err)
{
    struct archive *rd = NULL;
    struct archive_entry *e;
    size_t left = ex->nlinks;
    int r;

    if (lseek(in_fd, 0, SEEK_SET) != 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "export: spool: %s", strerror(errno));
    r = cordon__tar_reader_open(in_fd, &rd, err);
    while (r == 0 && left > 0) {
        int ar = archive_read_next_header(rd, &e), data_fd = -1;
        const char *raw;
        char *name = NULL;

        if (ar == ARCHIVE_EOF)
            break;
        if (ar != ARCHIVE_OK && ar != ARCHIVE_WARN) {
            r = cordon__tar_fail(err, rd, "read header");
            break;
        }
        raw = cordon__tar_entry_name(e);
        if (raw == NULL || archive_entry_filetype(e) != AE_IFREG ||
            cordon__tar_entry_is_hardlink(e) ||
            cordon_path_normalize_dir("export entry", raw, &name, NULL) < 0) {
            free(name);
            continue;
        }
        for (size_t i = 0; r == 0 && i < ex->nlinks; i++) {
            struct export_link *l = &ex->links[i];

            if (l->done || strcmp(l->target, name) != 0)
                continue;
            if (data_fd < 0)
                r = copy_data(rd, name, archive_entry_size(e), chunk, &data_fd, err);
            if (r == 0)
                r = write_link(ex, l, e, data_fd, archive_entry_size(e), chunk, err);
            l->done = true;
            left--;
        }
        if (data_fd >= 0)
            close(data_fd);
        free(name);
    }
    for (size_t i = 0; r == 0 && i < ex->nlinks; i++)
        if (!ex->links[i].done)
            r = cordon_error_set(err, CORDON_E_INVALID, 0,
                                 "export entry \"%.*s\": its hardlink target \"%.*s\" is not "
                                 "a regular file of the archive",
                                 cordon_text_fit(ex->links[i].rel, 200), ex->links[i].rel,
                                 cordon_text_fit(ex->links[i].target, 200), ex->links[i].target);
    if (rd != NULL)
        archive_read_free(rd);
    return r;
}

int cordon_tar_export_rewrite_fd(int in_fd, int out_fd, const struct cordon_tar_export *opts,
                                 struct cordon_error *err)
{
    struct cordon_tar_limits limits = { 0 };
    struct exporter ex = { .limits = &limits };
    struct archive *rd = NULL;
    struct archive_entry *e;
    char *chunk = malloc(CORDON__TAR_CHUNK);
    int r;

    if (out_fd < 0 || opts == NULL || opts->struct_size < sizeof(*opts) || opts->root == NULL ||
        (opts->paths == NULL && opts->n_paths > 0)) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0,
                             "export: out_fd and options with a root are required");
        goto out;
    }
    ex.root = opts->root;
    ex.root_len = strlen(opts->root);
    ex.only = opts->paths;
    ex.n_only = opts->paths != NULL ? opts->n_paths : 0;
    ex.workspace_root = opts->paths_from_root;
    limits.max_bytes = opts->max_bytes;
    limits.max_entries = opts->max_entries;
    if (chunk == NULL) {
        r = cordon__tar_nomem(err, "export");
        goto out;
    }
    /* in_fd < 0: nothing to read, an empty stream (export_files of paths
     * that are all missing). */
    r = in_fd >= 0 ? cordon__tar_reader_open(in_fd, &rd, err) : 0;
    if (r == 0)
        r = cordon__tar_rewriter_open(out_fd, &ex.w, err);
    while (r == 0 && rd != NULL) {
        int ar = archive_read_next_header(rd, &e);

        if (ar == ARCHIVE_EOF)
            break;
        if (ar != ARCHIVE_OK && ar != ARCHIVE_WARN) {
            r = cordon__tar_fail(err, rd, "read header");
            break;
        }
        r = export_entry(&ex, rd, e, chunk, err);
    }
    if (r == 0 && !ex.root_seen && ex.only == NULL)
        r = cordon_error_set(err, CORDON_E_NOT_FOUND, 0, "src: \"%s\" is not in the workspace",
                             ex.root);
    if (r == 0 && ex.nlinks > 0)
        r = export_links(&ex, in_fd, chunk, err);
out:
    export_links_clear(&ex);
    if (ex.w != NULL) {
        int c = cordon__tar_rewriter_close(ex.w, r == 0, err);

        if (r == 0)
            r = c;
    }
    if (rd != NULL)
        archive_read_free(rd);
    free(chunk);
    return r;
}
