/*
 * docker: import and export through the archive API, with the tar checks
 * of sdk/tar.h applied on the way.
 *
 * Import: the host's stream is read with libarchive, checked entry by
 * entry and rewritten with the right owners into a spool file; only a
 * stream that passed every check is sent (PUT) to the daemon, which writes
 * it as root. Export: the daemon's stream (GET) is spooled, then checked
 * and renamed on its way to the host's fd. Both are bounded by disk_bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* libarchive through the sdk's loader: docker.so does not link it, so that
 * an exec or a terminate does not load it (and libxml2, ICU, libstdc++). */
#include "sdk/archive-lazy.h"

#include <cordon/sdk/path.h>
#include <cordon/sdk/tar.h>
#include "plugins/docker/docker.h"

#define TAR_BLOCK 10240
#define DATA_CHUNK (64u << 10)
#define ARCHIVE_TIMEOUT_MS 600000L
#define EXPORT_SLACK (64ull << 20)       /* tar headers and padding over the file bytes */

/* ---- spools and the archive API ------------------------------------------ */

int dk_spool_open(const struct cordon_resource *res, int *ret_fd, struct cordon_error *err)
{
    int fd = open(res->spool_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

    /* A file system without O_TMPFILE: memory, still bounded by the caller. */
    if (fd < 0)
        fd = memfd_create("cordon-docker-spool", MFD_CLOEXEC);
    if (fd < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "spool: %s: %s", res->spool_dir,
                                strerror(errno));
    *ret_fd = fd;
    return 0;
}

int dk_archive_put(struct dk_conn *conn, const char *container_id, int fd, uint64_t len,
                   struct cordon_error *err)
{
    struct dk_reply reply;
    struct dk_req rq;
    char path[200];
    int r;

    snprintf(path, sizeof(path), "/containers/%s/archive?path=" DK_WORKSPACE
                                 "&noOverwriteDirNonDir=true", container_id);
    dk_req_init(&rq, "PUT", path);
    rq.upload_fd = fd;
    rq.upload_len = len;
    rq.timeout_ms = ARCHIVE_TIMEOUT_MS;
    r = dk_conn_call(conn, &rq, &reply, err);
    if (r == 0 && (reply.status < 200 || reply.status >= 300))
        r = dk_reply_error(&reply, "archive: write into the workspace", err);
    if (r == CORDON_E_NOT_FOUND)
        r = cordon_error_set(err, CORDON_E_NOT_FOUND, 0,
                             "archive: container %.12s is gone (terminated or expired)",
                             container_id);
    dk_reply_clear(&reply);
    return r;
}

/* ---- writing entries ------------------------------------------------------ */

static int archive_fail(struct archive *a, const char *what, struct cordon_error *err)
{
    const char *msg = archive_error_string(a);
    int e = archive_errno(a);

    /* libarchive reports format errors with EILSEQ or -1; real errnos come from the fd. */
    return cordon_error_set(err, e > 0 && e != EILSEQ && e != EINVAL ? CORDON_E_IO
                                                                      : CORDON_E_INVALID,
                            e > 0 ? e : 0, "tar stream: %s: %s", what,
                            msg != NULL ? msg : "unknown error");
}

/* pax, like the sdk's writer: long names and numeric owners survive. */
static int writer_open(int fd, struct archive **ret, struct cordon_error *err)
{
    struct archive *w;
    int r = cordon__archive_load(err);

    if (r < 0)
        return r;
    w = archive_write_new();
    if (w == NULL)
        return dk_nomem(err, "tar stream");
    if (archive_write_set_format_pax_restricted(w) != ARCHIVE_OK ||
        archive_write_set_bytes_in_last_block(w, 1) != ARCHIVE_OK ||
        archive_write_open_fd(w, fd) != ARCHIVE_OK) {
        r = archive_fail(w, "open writer", err);
        archive_write_free(w);
        return r;
    }
    *ret = w;
    return 0;
}

/* Finish with the end blocks when ok; otherwise leave the stream cut off,
 * so that it cannot pass for a complete one. */
static int writer_close(struct archive *w, bool ok, struct cordon_error *err)
{
    int r = 0;

    if (w == NULL)
        return 0;
    if (!ok)
        archive_write_fail(w);
    if (archive_write_close(w) != ARCHIVE_OK && ok)
        r = archive_fail(w, "finish", err);
    archive_write_free(w);
    return r;
}

/* A header of type and owner/mode, then (for a file) size bytes from rd. */
static int write_entry(struct archive *w, const char *name, mode_t type, mode_t perm, uid_t uid,
                       gid_t gid, struct archive_entry *from, struct archive *rd, char *chunk,
                       struct cordon_error *err)
{
    struct archive_entry *e = archive_entry_new();
    int64_t size = from != NULL && type == AE_IFREG ? archive_entry_size(from) : 0;
    int r = 0;

    if (e == NULL)
        return dk_nomem(err, "tar stream");
    /* A fresh entry: nothing of the source's header travels unless named
     * here (no xattrs, no ACLs, no setuid bits, no user names). */
    archive_entry_set_pathname(e, name);
    archive_entry_set_filetype(e, type);
    archive_entry_set_perm(e, perm & 0777);
    archive_entry_set_uid(e, uid);
    archive_entry_set_gid(e, gid);
    /* Entries made up here (directories on the way) are stamped now. */
    if (from != NULL && archive_entry_mtime_is_set(from))
        archive_entry_set_mtime(e, archive_entry_mtime(from), archive_entry_mtime_nsec(from));
    else
        archive_entry_set_mtime(e, time(NULL), 0);
    if (type == AE_IFLNK)
        archive_entry_set_symlink(e, archive_entry_symlink(from));
    if (type == AE_IFREG)
        archive_entry_set_size(e, size);
    if (archive_write_header(w, e) < ARCHIVE_WARN) {
        r = archive_fail(w, "write header", err);
        goto out;
    }
    /* Exactly the size the header promised, or the stream is broken. */
    while (size > 0) {
        la_ssize_t n = archive_read_data(rd, chunk, DATA_CHUNK);

        if (n < 0) {
            r = archive_fail(rd, "read data", err);
            goto out;
        }
        if (n == 0 || n > size) {
            r = cordon_error_set(err, CORDON_E_INVALID, 0,
                                 "tar entry \"%.300s\": the data does not match its size", name);
            goto out;
        }
        if (archive_write_data(w, chunk, (size_t)n) != n) {
            r = archive_fail(w, "write data", err);
            goto out;
        }
        size -= n;
    }
out:
    archive_entry_free(e);
    return r;
}

static int reader_open(int fd, struct archive **ret, struct cordon_error *err)
{
    struct archive *a;
    int r = cordon__archive_load(err);

    if (r < 0)
        return r;
    a = archive_read_new();
    if (a == NULL)
        return dk_nomem(err, "tar stream");
    /* Plain tar only (ustar, pax, GNU); no compression; empty is no entries. */
    if (archive_read_support_format_tar(a) != ARCHIVE_OK ||
        archive_read_support_format_empty(a) != ARCHIVE_OK ||
        archive_read_support_filter_none(a) != ARCHIVE_OK ||
        archive_read_open_fd(a, fd, TAR_BLOCK) != ARCHIVE_OK) {
        r = archive_fail(a, "open", err);
        archive_read_free(a);
        return r;
    }
    *ret = a;
    return 0;
}

/* The entry's name, whatever form the stream stored it in. */
static const char *entry_name(struct archive_entry *e)
{
    const char *raw = archive_entry_pathname(e);

    return raw != NULL ? raw : archive_entry_pathname_utf8(e);
}

static bool entry_is_hardlink(struct archive_entry *e)
{
    return archive_entry_hardlink(e) != NULL || archive_entry_hardlink_utf8(e) != NULL ||
           archive_entry_hardlink_w(e) != NULL;
}

static int refuse_type(const char *name, mode_t type, struct cordon_error *err)
{
    const char *what = type == AE_IFCHR || type == AE_IFBLK ? "device nodes"
                       : type == AE_IFIFO                   ? "FIFOs"
                       : type == AE_IFSOCK                  ? "sockets"
                                                            : "entries of this type";

    return cordon_error_set(err, CORDON_E_UNSAFE, 0, "tar entry \"%.300s\": %s are not allowed",
                            name, what);
}

/* ---- import ---------------------------------------------------------------- */

/* The directories an import wrote, so that each is written once, before
 * anything inside it (open addressing; bounded by the entry limit). */
struct dir_set {
    char **slots;
    size_t cap, used;
};

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;

    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static bool dir_set_has(const struct dir_set *set, const char *path)
{
    for (size_t i = set->cap ? fnv1a(path) & (set->cap - 1) : 0; set->cap != 0;
         i = (i + 1) & (set->cap - 1)) {
        if (set->slots[i] == NULL)
            return false;
        if (strcmp(set->slots[i], path) == 0)
            return true;
    }
    return false;
}

/* Takes path (malloc'd) in every case. */
static int dir_set_add(struct dir_set *set, char *path, struct cordon_error *err)
{
    size_t i;

    if (2 * (set->used + 1) > set->cap) {
        struct dir_set grown = { .cap = set->cap ? 2 * set->cap : 64 };

        grown.slots = calloc(grown.cap, sizeof(*grown.slots));
        if (grown.slots == NULL) {
            free(path);
            return dk_nomem(err, "tar stream");
        }
        for (i = 0; i < set->cap; i++) {
            size_t j;

            if (set->slots[i] == NULL)
                continue;
            for (j = fnv1a(set->slots[i]) & (grown.cap - 1); grown.slots[j] != NULL;
                 j = (j + 1) & (grown.cap - 1))
                ;
            grown.slots[j] = set->slots[i];
        }
        free(set->slots);
        set->slots = grown.slots;
        set->cap = grown.cap;
    }
    for (i = fnv1a(path) & (set->cap - 1); set->slots[i] != NULL; i = (i + 1) & (set->cap - 1))
        if (strcmp(set->slots[i], path) == 0) {
            free(path);
            return 0;
        }
    set->slots[i] = path;
    set->used++;
    return 0;
}

static void dir_set_clear(struct dir_set *set)
{
    for (size_t i = 0; i < set->cap; i++)
        free(set->slots[i]);
    free(set->slots);
    memset(set, 0, sizeof(*set));
}

struct importer {
    const struct dk_import_policy *p;
    struct archive *w;
    struct dir_set dirs;
    uint64_t entries, bytes;
};

static bool in_source(const struct importer *im, const char *full)
{
    return im->p->code_layout && cordon_path_is_under(full, "source");
}

static int importer_dir(struct importer *im, const char *full, mode_t perm,
                        struct archive_entry *from, struct cordon_error *err)
{
    bool src = in_source(im, full);
    char *copy = strdup(full);
    int r;

    if (copy == NULL)
        return dk_nomem(err, "tar stream");
    r = write_entry(im->w, full, AE_IFDIR, src ? perm & ~(mode_t)0222 : perm, src ? 0 : im->p->uid,
                    src ? 0 : im->p->gid, from, NULL, NULL, err);
    if (r < 0) {
        free(copy);
        return r;
    }
    return dir_set_add(&im->dirs, copy, err);
}

/* Write every ancestor directory of full not written yet. */
static int importer_parents(struct importer *im, const char *full, struct cordon_error *err)
{
    char *path = strdup(full), *slash;
    int r = 0;

    if (path == NULL)
        return dk_nomem(err, "tar stream");
    for (slash = strchr(path, '/'); slash != NULL && r == 0; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        if (!dir_set_has(&im->dirs, path))
            r = importer_dir(im, path, 0755, NULL, err);
        *slash = '/';
    }
    free(path);
    return r;
}

/* One entry of a stream the sdk's filter already checked (names normalised,
 * only files, directories and safe symlinks): place it and give it owners. */
static int import_entry(struct importer *im, struct archive *rd, struct archive_entry *e,
                        char *chunk, struct cordon_error *err)
{
    const char *name = entry_name(e);
    mode_t type = archive_entry_filetype(e), perm = archive_entry_perm(e);
    char *full = NULL;
    bool src;
    int r;

    /* The destination's own entry: it exists already (written first). */
    if (name == NULL || name[0] == '\0' || strcmp(name, ".") == 0 || strcmp(name, "./") == 0)
        return 0;
    if (asprintf(&full, "%s%s%s", im->p->prefix, im->p->prefix[0] ? "/" : "", name) < 0)
        return dk_nomem(err, "tar stream");
    /* A trailing slash (directories) would make two names for one path. */
    if (full[0] != '\0' && full[strlen(full) - 1] == '/')
        full[strlen(full) - 1] = '\0';
    src = in_source(im, full);
    if (strlen(full) > CORDON_PATH_MAX) {
        r = cordon_error_set(err, CORDON_E_LIMIT, 0, "tar entry \"%.300s\": path longer than %d "
                             "bytes", name, CORDON_PATH_MAX);
    } else if (type == AE_IFLNK && src) {
        r = cordon_error_set(err, CORDON_E_UNSAFE, 0,
                             "tar entry \"%.300s\": symbolic links are not allowed under "
                             "source/", name);
    } else if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
        r = refuse_type(name, type, err);
    } else {
        /* The way to it first, each directory an entry of its own. */
        r = importer_parents(im, full, err);
        if (r == 0 && type == AE_IFDIR)
            r = importer_dir(im, full, perm, e, err);
        else if (r == 0)
            r = write_entry(im->w, full, type, src ? perm & ~(mode_t)0222 : perm,
                            src ? 0 : im->p->uid, src ? 0 : im->p->gid, e, rd, chunk, err);
    }
    free(full);
    return r;
}

int dk_tar_import_filter(int in_fd, int checked_fd, int out_fd,
                         const struct dk_import_policy *policy, struct cordon_error *err)
{
    struct cordon_tar_limits limits = { .max_bytes = policy->max_bytes,
                                        .max_entries = policy->max_entries };
    struct importer im = { .p = policy };
    struct archive *rd = NULL;
    struct archive_entry *e;
    char *chunk = malloc(DATA_CHUNK);
    unsigned flags = CORDON_TAR_ALLOW_SYMLINKS;
    int r;

    if (chunk == NULL) {
        r = dk_nomem(err, "tar stream");
        goto out;
    }
    /* The checks are the sdk's, the same as every extraction's; a
     * destination inside source/ admits no symlink at all. */
    if (policy->code_layout && cordon_path_is_under(policy->prefix, "source"))
        flags = 0;
    r = cordon_tar_filter_fd(in_fd, checked_fd, &limits, flags, NULL, NULL, err);
    if (r == 0 && lseek(checked_fd, 0, SEEK_SET) != 0)
        r = cordon_error_set(err, CORDON_E_IO, errno, "tar stream: spool: %s", strerror(errno));
    if (r == 0)
        r = reader_open(checked_fd, &rd, err);
    if (r == 0)
        r = writer_open(out_fd, &im.w, err);
    if (r < 0)
        goto out;
    /* The destination exists after an import, even of an empty stream. */
    if (policy->prefix[0] != '\0') {
        r = importer_parents(&im, policy->prefix, err);
        if (r == 0)
            r = importer_dir(&im, policy->prefix, 0755, NULL, err);
        if (r < 0)
            goto out;
    }
    for (;;) {
        int ar = archive_read_next_header(rd, &e);

        if (ar == ARCHIVE_EOF)
            break;
        if (ar != ARCHIVE_OK && ar != ARCHIVE_WARN) {
            r = archive_fail(rd, "read header", err);
            goto out;
        }
        r = import_entry(&im, rd, e, chunk, err);
        if (r < 0)
            goto out;
    }
out:
    if (im.w != NULL) {
        int c = writer_close(im.w, r == 0, err);

        if (r == 0)
            r = c;
    }
    if (rd != NULL)
        archive_read_free(rd);
    dir_set_clear(&im.dirs);
    free(chunk);
    return r;
}

int dk_tar_dirs(int out_fd, const char *const *paths, const uid_t *uids, const gid_t *gids,
                const mode_t *modes, size_t n, struct cordon_error *err)
{
    struct archive *w = NULL;
    int r = writer_open(out_fd, &w, err);

    for (size_t i = 0; r == 0 && i < n; i++)
        r = write_entry(w, paths[i], AE_IFDIR, modes[i], uids[i], gids[i], NULL, NULL, NULL, err);
    if (w != NULL) {
        int c = writer_close(w, r == 0, err);

        if (r == 0)
            r = c;
    }
    return r;
}

/* ---- export ---------------------------------------------------------------- */

struct exporter {
    const char *root;
    size_t root_len;
    const struct cordon_tar_limits *limits;
    struct archive *w;
    bool root_seen;
    uint64_t entries, bytes;
};

static int export_entry(struct exporter *ex, struct archive *rd, struct archive_entry *e,
                        char *chunk, struct cordon_error *err)
{
    const char *raw = entry_name(e), *rel;
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
                                 "src: \"%.300s\" is %s in the workspace, not a directory", name,
                                 type == AE_IFLNK ? "a symbolic link" : "not a directory");
        ex->root_seen = true;
        goto out;
    }
    if (!cordon_path_is_under(name, ex->root))
        goto out;
    rel = name + ex->root_len + (ex->root_len > 0);
    if (++ex->entries > ex->limits->max_entries) {
        r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                             "export: more than the limit of %" PRIu64 " entries",
                             ex->limits->max_entries);
        goto out;
    }
    if (entry_is_hardlink(e)) {
        r = cordon_error_set(err, CORDON_E_UNSAFE, 0,
                             "export entry \"%.300s\": hardlinks are not exported (the files "
                             "share one inode; copy one of them)", rel);
        goto out;
    }
    if (type == AE_IFREG) {
        int64_t size = archive_entry_size(e);

        if (size < 0 || (uint64_t)size > ex->limits->max_bytes - ex->bytes) {
            r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                                 "export entry \"%.300s\": the total passes the limit of %" PRIu64
                                 " bytes", rel, ex->limits->max_bytes);
            goto out;
        }
        ex->bytes += (uint64_t)size;
    } else if (type != AE_IFDIR && type != AE_IFLNK) {
        r = refuse_type(rel, type, err);
        goto out;
    }
    /* Only permission bits travel: setuid and friends would be refused on the way in. */
    r = write_entry(ex->w, rel, type, archive_entry_perm(e), archive_entry_uid(e),
                    archive_entry_gid(e), e, rd, chunk, err);
out:
    free(name);
    return r;
}

int dk_tar_export_filter(int in_fd, int out_fd, const char *root,
                         const struct cordon_tar_limits *limits, struct cordon_error *err)
{
    struct exporter ex = { .root = root, .root_len = strlen(root), .limits = limits };
    struct archive *rd = NULL;
    struct archive_entry *e;
    char *chunk = malloc(DATA_CHUNK);
    int r;

    if (chunk == NULL) {
        r = dk_nomem(err, "export");
        goto out;
    }
    r = reader_open(in_fd, &rd, err);
    if (r == 0)
        r = writer_open(out_fd, &ex.w, err);
    while (r == 0) {
        int ar = archive_read_next_header(rd, &e);

        if (ar == ARCHIVE_EOF)
            break;
        if (ar != ARCHIVE_OK && ar != ARCHIVE_WARN) {
            r = archive_fail(rd, "read header", err);
            break;
        }
        r = export_entry(&ex, rd, e, chunk, err);
    }
    if (r == 0 && !ex.root_seen)
        r = cordon_error_set(err, CORDON_E_NOT_FOUND, 0, "src: \"%s\" is not in the workspace",
                             root);
out:
    if (ex.w != NULL) {
        int c = writer_close(ex.w, r == 0, err);

        if (r == 0)
            r = c;
    }
    if (rd != NULL)
        archive_read_free(rd);
    free(chunk);
    return r;
}

/* ---- the provider's import_tar and export_tar ----------------------------------- */

/* What both need first: the state, the normalised path, a spool. */
static int archive_begin(const struct cordon_resource *res, const char *state_json,
                         const char *field, const char *rel, struct dk_state *st,
                         char **ret_norm, int *ret_spool, struct cordon_error *err)
{
    int r = dk_state_parse(state_json, true, st, err);

    if (r == 0)
        r = cordon_path_normalize_dir(field, rel != NULL ? rel : "", ret_norm, err);
    if (r == 0)
        r = dk_spool_open(res, ret_spool, err);
    return r;
}

int dk_import_tar(struct cordon_resource *res, const char *state_json, const char *dest,
                  int tar_fd, struct cordon_error *err)
{
    struct dk_import_policy policy = { 0 };
    struct dk_state st = { 0 };
    struct dk_conn *conn = NULL;
    char *norm = NULL;
    off_t len;
    int checked = -1, spool = -1, r;

    if (res == NULL || tar_fd < 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "import_tar: resource and tar_fd required");
    r = archive_begin(res, state_json, "dest", dest, &st, &norm, &spool, err);
    if (r == 0)
        r = dk_spool_open(res, &checked, err);
    if (r < 0)
        goto out;
    policy.prefix = norm;
    policy.code_layout = st.code_layout;
    policy.uid = st.uid;
    policy.gid = st.gid;
    policy.max_bytes = st.limits.disk_bytes;
    policy.max_entries = DK_TAR_ENTRIES_MAX;
    /* Checked whole before the daemon sees a byte of it. */
    r = dk_tar_import_filter(tar_fd, checked, spool, &policy, err);
    if (r < 0)
        goto out;
    len = lseek(spool, 0, SEEK_END);
    if (len < 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "import_tar: spool: %s", strerror(errno));
        goto out;
    }
    r = dk_conn_open(&res->engine, &conn, err);
    if (r == 0)
        r = dk_archive_put(conn, st.container_id, spool, (uint64_t)len, err);
out:
    if (checked >= 0)
        close(checked);
    if (spool >= 0)
        close(spool);
    dk_conn_close(conn);
    free(norm);
    dk_state_clear(&st);
    return r;
}

int dk_export_tar(struct cordon_resource *res, const char *state_json, const char *src,
                  int tar_fd, struct cordon_error *err)
{
    struct cordon_tar_limits limits = { 0 };
    struct dk_state st = { 0 };
    struct dk_conn *conn = NULL;
    struct dk_reply reply = { 0 };
    struct dk_req rq;
    char *norm = NULL, *path = NULL, *root = NULL;
    bool nested;
    int spool = -1, r;

    if (res == NULL || tar_fd < 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "export_tar: resource and tar_fd required");
    r = archive_begin(res, state_json, "src", src, &st, &norm, &spool, err);
    if (r < 0)
        goto out;
    /*
     * The daemon follows symlinks in every component of the path but the
     * last. A top-level name cannot be swapped for a link in layout "code"
     * and is never followed as the last component; a deeper src is taken
     * from the archive of the whole workspace, where every directory on
     * the way is an entry of its own and nothing is followed.
     */
    nested = strchr(norm, '/') != NULL;
    if (asprintf(&root, "%s%s%s", nested || norm[0] == '\0' ? "workspace" : "",
                 nested ? "/" : "", norm) < 0) {
        root = NULL;
        r = dk_nomem(err, "export_tar");
        goto out;
    }
    {
        char *where = NULL, *esc = NULL;

        if (asprintf(&where, DK_WORKSPACE "%s%s", nested || norm[0] == '\0' ? "" : "/",
                     nested ? "" : norm) >= 0)
            esc = dk_escape(where);
        if (esc == NULL || asprintf(&path, "/containers/%s/archive?path=%s", st.container_id,
                                    esc) < 0)
            path = NULL;
        free(where);
        free(esc);
        if (path == NULL) {
            r = dk_nomem(err, "export_tar");
            goto out;
        }
    }
    limits.max_bytes = st.limits.disk_bytes;
    limits.max_entries = DK_TAR_ENTRIES_MAX;
    r = dk_conn_open(&res->engine, &conn, err);
    if (r < 0)
        goto out;
    dk_req_init(&rq, "GET", path);
    rq.download_fd = spool;
    rq.max_bytes = st.limits.disk_bytes > UINT64_MAX / 2 - EXPORT_SLACK
                       ? UINT64_MAX
                       : 2 * st.limits.disk_bytes + EXPORT_SLACK;
    rq.timeout_ms = ARCHIVE_TIMEOUT_MS;
    r = dk_conn_call(conn, &rq, &reply, err);
    if (r == 0 && reply.status == 404)
        r = cordon_error_set(err, CORDON_E_NOT_FOUND, 0,
                             "src: \"%s\" is not in the workspace (or the execution is gone)",
                             norm);
    else if (r == 0 && (reply.status < 200 || reply.status >= 300))
        r = dk_reply_error(&reply, "export_tar", err);
    if (r < 0)
        goto out;
    if (lseek(spool, 0, SEEK_SET) != 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "export_tar: spool: %s", strerror(errno));
        goto out;
    }
    r = dk_tar_export_filter(spool, tar_fd, root, &limits, err);
out:
    if (spool >= 0)
        close(spool);
    dk_reply_clear(&reply);
    dk_conn_close(conn);
    free(root);
    free(path);
    free(norm);
    dk_state_clear(&st);
    return r;
}
