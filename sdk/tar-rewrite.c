/*
 * sdk: rewriting tar streams for a mechanism that writes them itself, as
 * root (cordon/sdk/tar.h: cordon_tar_filter_workspace_fd,
 * cordon_tar_dirs_fd, cordon_files_tar_workspace_fd), and the writing of
 * entries that the export's rewrite (sdk/tar-export.c) shares.
 *
 * Import: the stream is checked whole by cordon_tar_filter_fd first, then
 * every entry is written again under the destination with the owners of
 * the workspace-owner policy, each directory on the way an entry of its
 * own, so that what the mechanism writes as root belongs to the sandbox
 * user (or, under source/ in layout "code", stays root's and read-only).
 * import_files for such a mechanism: the manifest checked whole, then the
 * files written as the same kind of stream, their bytes read from the
 * host's fd on the way, never spooled.
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

#include <cjson/cJSON.h>

#include "sdk/tar-internal.h"

#include <cordon/sdk/path.h>
#include <cordon/sdk/tar.h>


int cordon__tar_nomem(struct cordon_error *err, const char *what)
{
    return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "%s: out of memory", what);
}

/* ---- writing entries ------------------------------------------------------ */

/* pax, like the sdk's writer: long names and numeric owners survive. */
int cordon__tar_rewriter_open(int fd, struct archive **ret, struct cordon_error *err)
{
    struct archive *w;
    int r = cordon__archive_load(err);

    if (r < 0)
        return r;
    w = archive_write_new();
    if (w == NULL)
        return cordon__tar_nomem(err, "tar stream");
    if (archive_write_set_format_pax_restricted(w) != ARCHIVE_OK ||
        archive_write_set_bytes_in_last_block(w, 1) != ARCHIVE_OK ||
        archive_write_open_fd(w, fd) != ARCHIVE_OK) {
        r = cordon__tar_fail(err, w, "open writer");
        archive_write_free(w);
        return r;
    }
    *ret = w;
    return 0;
}

/* Finish with the end blocks when ok; otherwise leave the stream cut off,
 * so that it cannot pass for a complete one. */
int cordon__tar_rewriter_close(struct archive *w, bool ok, struct cordon_error *err)
{
    int r = 0;

    if (w == NULL)
        return 0;
    if (!ok)
        archive_write_fail(w);
    if (archive_write_close(w) != ARCHIVE_OK && ok)
        r = cordon__tar_fail(err, w, "finish");
    archive_write_free(w);
    return r;
}

/* A header of type and owner/mode, then (for a file) size bytes from rd. */
int cordon__tar_write_entry(struct archive *w, const char *name, mode_t type, mode_t perm,
                            uid_t uid, gid_t gid, struct archive_entry *from, struct archive *rd,
                            char *chunk, struct cordon_error *err)
{
    struct archive_entry *e = archive_entry_new();
    int64_t size = from != NULL && type == AE_IFREG ? archive_entry_size(from) : 0;
    int r = 0;

    if (e == NULL)
        return cordon__tar_nomem(err, "tar stream");
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
        r = cordon__tar_fail(err, w, "write header");
        goto out;
    }
    /* Exactly the size the header promised, or the stream is broken. */
    while (size > 0) {
        la_ssize_t n;

        if ((r = cordon__tar_read_chunk(rd, name, size, chunk, &n, err)) < 0)
            goto out;
        if (archive_write_data(w, chunk, (size_t)n) != n) {
            r = cordon__tar_fail(err, w, "write data");
            goto out;
        }
        size -= n;
    }
out:
    archive_entry_free(e);
    return r;
}

/* The entry's name, whatever form the stream stored it in. */
const char *cordon__tar_entry_name(struct archive_entry *e)
{
    const char *raw = archive_entry_pathname(e);

    return raw != NULL ? raw : archive_entry_pathname_utf8(e);
}

bool cordon__tar_entry_is_hardlink(struct archive_entry *e)
{
    return archive_entry_hardlink(e) != NULL || archive_entry_hardlink_utf8(e) != NULL ||
           archive_entry_hardlink_w(e) != NULL;
}

int cordon__tar_refuse_type(const char *name, mode_t type, struct cordon_error *err)
{
    const char *what = type == AE_IFCHR || type == AE_IFBLK ? "device nodes"
                       : type == AE_IFIFO                   ? "FIFOs"
                       : type == AE_IFSOCK                  ? "sockets"
                                                            : "entries of this type";

    return cordon_error_set(err, CORDON_E_UNSAFE, 0, "tar entry \"%.*s\": %s are not allowed",
                            cordon_text_fit(name, 300), name, what);
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
            return cordon__tar_nomem(err, "tar stream");
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
    const char *prefix;
    const struct cordon_workspace_owner *owner;
    struct archive *w;
    struct dir_set dirs;
    uint64_t entries, bytes;
};

static bool in_source(const struct importer *im, const char *full)
{
    return im->owner->code_layout && cordon_path_is_under(full, "source");
}

/* The owner of an entry at full: root under source/ in layout "code",
 * else the policy's user, or the stream's own without set_owner. */
static void entry_owner(const struct importer *im, bool src, struct archive_entry *e,
                        uid_t *ret_uid, gid_t *ret_gid)
{
    if (src) {
        *ret_uid = 0;
        *ret_gid = 0;
    } else if (im->owner->set_owner || e == NULL) {
        *ret_uid = im->owner->uid;
        *ret_gid = im->owner->gid;
    } else {
        *ret_uid = (uid_t)archive_entry_uid(e);
        *ret_gid = (gid_t)archive_entry_gid(e);
    }
}

static int importer_dir(struct importer *im, const char *full, mode_t perm,
                        struct archive_entry *from, struct cordon_error *err)
{
    bool src = in_source(im, full);
    char *copy = strdup(full);
    uid_t uid;
    gid_t gid;
    int r;

    if (copy == NULL)
        return cordon__tar_nomem(err, "tar stream");
    entry_owner(im, src, from, &uid, &gid);
    r = cordon__tar_write_entry(im->w, full, AE_IFDIR, src ? perm & ~(mode_t)0222 : perm, uid, gid,
                                from, NULL, NULL, err);
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
        return cordon__tar_nomem(err, "tar stream");
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
    const char *name = cordon__tar_entry_name(e);
    mode_t type = archive_entry_filetype(e), perm = archive_entry_perm(e);
    char *full = NULL;
    bool src;
    int r;

    /* The destination's own entry: it exists already (written first). */
    if (name == NULL || name[0] == '\0' || strcmp(name, ".") == 0 || strcmp(name, "./") == 0)
        return 0;
    if (asprintf(&full, "%s%s%s", im->prefix, im->prefix[0] ? "/" : "", name) < 0)
        return cordon__tar_nomem(err, "tar stream");
    /* A trailing slash (directories) would make two names for one path. */
    if (full[0] != '\0' && full[strlen(full) - 1] == '/')
        full[strlen(full) - 1] = '\0';
    src = in_source(im, full);
    if (strlen(full) > CORDON_PATH_MAX) {
        r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                             "tar entry \"%.*s\": path longer than %d "
                             "bytes",
                             cordon_text_fit(name, 300), name, CORDON_PATH_MAX);
    } else if (type == AE_IFLNK && src) {
        r = cordon_error_set(err, CORDON_E_UNSAFE, 0,
                             "tar entry \"%.*s\": symbolic links are not allowed under "
                             "source/",
                             cordon_text_fit(name, 300), name);
    } else if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
        r = cordon__tar_refuse_type(name, type, err);
    } else {
        uid_t uid;
        gid_t gid;

        /* The way to it first, each directory an entry of its own. */
        entry_owner(im, src, e, &uid, &gid);
        r = importer_parents(im, full, err);
        if (r == 0 && type == AE_IFDIR)
            r = importer_dir(im, full, perm, e, err);
        else if (r == 0)
            r = cordon__tar_write_entry(im->w, full, type, src ? perm & ~(mode_t)0222 : perm, uid,
                                        gid, e, rd, chunk, err);
    }
    free(full);
    return r;
}

int cordon_tar_filter_workspace_fd(int in_fd, int checked_fd, int out_fd, const char *dest,
                                   const struct cordon_workspace_owner *owner, uint64_t max_bytes,
                                   uint64_t max_entries, struct cordon_error *err)
{
    struct cordon_tar_limits limits = { .max_bytes = max_bytes, .max_entries = max_entries };
    struct importer im = { .prefix = dest, .owner = owner };
    struct archive *rd = NULL;
    struct archive_entry *e;
    char *chunk = malloc(CORDON__TAR_CHUNK);
    unsigned flags = CORDON_TAR_ALLOW_SYMLINKS;
    int r;

    if (in_fd < 0 || checked_fd < 0 || out_fd < 0 || dest == NULL || owner == NULL) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0,
                             "tar stream: three fds, dest and owner are required");
        goto out;
    }
    if (chunk == NULL) {
        r = cordon__tar_nomem(err, "tar stream");
        goto out;
    }
    /* The checks are the sdk's, the same as every extraction's; a
     * destination inside source/ admits no symlink at all. */
    if (owner->code_layout && cordon_path_is_under(dest, "source"))
        flags = 0;
    r = cordon_tar_filter_fd(in_fd, checked_fd, &limits, flags, NULL, NULL, err);
    if (r == 0 && lseek(checked_fd, 0, SEEK_SET) != 0)
        r = cordon_error_set(err, CORDON_E_IO, errno, "tar stream: spool: %s", strerror(errno));
    if (r == 0)
        r = cordon__tar_reader_open(checked_fd, &rd, err);
    if (r == 0)
        r = cordon__tar_rewriter_open(out_fd, &im.w, err);
    if (r < 0)
        goto out;
    /* The destination exists after an import, even of an empty stream. */
    if (dest[0] != '\0') {
        r = importer_parents(&im, dest, err);
        if (r == 0)
            r = importer_dir(&im, dest, 0755, NULL, err);
        if (r < 0)
            goto out;
    }
    for (;;) {
        int ar = archive_read_next_header(rd, &e);

        if (ar == ARCHIVE_EOF)
            break;
        if (ar != ARCHIVE_OK && ar != ARCHIVE_WARN) {
            r = cordon__tar_fail(err, rd, "read header");
            goto out;
        }
        r = import_entry(&im, rd, e, chunk, err);
        if (r < 0)
            goto out;
    }
out:
    if (im.w != NULL) {
        int c = cordon__tar_rewriter_close(im.w, r == 0, err);

        if (r == 0)
            r = c;
    }
    if (rd != NULL)
        archive_read_free(rd);
    dir_set_clear(&im.dirs);
    free(chunk);
    return r;
}

int cordon_tar_dirs_fd(int out_fd, const char *const *paths, const uid_t *uids, const gid_t *gids,
                const mode_t *modes, size_t n, struct cordon_error *err)
{
    struct archive *w = NULL;
    int r;

    if (out_fd < 0 || (n > 0 && (paths == NULL || uids == NULL || gids == NULL || modes == NULL)))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "tar stream: an fd and n of each are required");
    r = cordon__tar_rewriter_open(out_fd, &w, err);
    for (size_t i = 0; r == 0 && i < n; i++)
        r = cordon__tar_write_entry(w, paths[i], AE_IFDIR, modes[i], uids[i], gids[i], NULL, NULL,
                                    NULL, err);
    if (w != NULL) {
        int c = cordon__tar_rewriter_close(w, r == 0, err);

        if (r == 0)
            r = c;
    }
    return r;
}

/* ---- import_files as a stream ------------------------------------------------ */

/* One regular file's header, then exactly size bytes of data_fd. */
static int write_file_fd(struct archive *w, const char *name, mode_t perm, uid_t uid, gid_t gid,
                         int data_fd, uint64_t size, char *chunk, struct cordon_error *err)
{
    struct archive_entry *e = archive_entry_new();
    uint64_t left = size;
    int r = 0;

    if (e == NULL)
        return cordon__tar_nomem(err, "tar stream");
    archive_entry_set_pathname(e, name);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, perm & 0777);
    archive_entry_set_uid(e, uid);
    archive_entry_set_gid(e, gid);
    archive_entry_set_mtime(e, time(NULL), 0);
    archive_entry_set_size(e, (int64_t)size);
    if (archive_write_header(w, e) < ARCHIVE_WARN) {
        r = cordon__tar_fail(err, w, "write header");
        goto out;
    }
    while (left > 0) {
        ssize_t n = read(data_fd, chunk,
                         left < CORDON__TAR_CHUNK ? (size_t)left : CORDON__TAR_CHUNK);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            r = cordon_error_set(err, n < 0 ? CORDON_E_IO : CORDON_E_INVALID, n < 0 ? errno : 0,
                                 "files: data_fd ended %" PRIu64 " bytes into \"%.*s\" (size %"
                                 PRIu64 ")%s%s", size - left, cordon_text_fit(name, 300), name,
                                 size, n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
            goto out;
        }
        if (archive_write_data(w, chunk, (size_t)n) != n) {
            r = cordon__tar_fail(err, w, "write data");
            goto out;
        }
        left -= (uint64_t)n;
    }
out:
    archive_entry_free(e);
    return r;
}

/* The manifest, checked whole as cordon_files_import_workspace checks it. */
struct files_manifest {
    char **names;              /* dest/NAME, normalised */
    uint64_t *sizes;
    mode_t *modes;
    size_t n;
    uint64_t bytes;
};

static void manifest_clear(struct files_manifest *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->names[i]);
    free(m->names);
    free(m->sizes);
    free(m->modes);
    memset(m, 0, sizeof(*m));
}

static int manifest_read(const char *files_json, const char *dest, uint64_t max_bytes,
                         uint64_t max_entries, struct files_manifest *m, struct cordon_error *err)
{
    cJSON *doc = NULL;
    const cJSON *files, *f;
    size_t count, i = 0;
    int r = 0;

    r = cordon__files_manifest(files_json, &doc, &files, err);
    if (r < 0)
        return r;
    count = (size_t)cJSON_GetArraySize(files);
    if (max_entries != 0 && count > max_entries) {
        r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                             "files: more than the limit of %" PRIu64 " entries", max_entries);
        goto out;
    }
    m->names = calloc(count + 1, sizeof(*m->names));
    m->sizes = calloc(count + 1, sizeof(*m->sizes));
    m->modes = calloc(count + 1, sizeof(*m->modes));
    if (m->names == NULL || m->sizes == NULL || m->modes == NULL) {
        r = cordon__tar_nomem(err, "files");
        goto out;
    }
    cJSON_ArrayForEach(f, files) {
        char *name = NULL;

        r = cordon__files_entry(f, i, max_bytes, m->bytes, &name, &m->sizes[i], &m->modes[i], err);
        if (r < 0)
            goto out;
        if (name[0] == '\0') {
            free(name);
            r = cordon_error_set(err, CORDON_E_INVALID, 0,
                                 "files[%zu].path: names the destination itself, not a file", i);
            goto out;
        }
        if (asprintf(&m->names[i], "%s%s%s", dest, dest[0] ? "/" : "", name) < 0) {
            m->names[i] = NULL;
            free(name);
            r = cordon__tar_nomem(err, "files");
            goto out;
        }
        free(name);
        m->n = ++i;
        if (strlen(m->names[i - 1]) > CORDON_PATH_MAX) {
            r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                                 "files[%zu].path: longer than %d bytes under the destination",
                                 i - 1, CORDON_PATH_MAX);
            goto out;
        }
        m->bytes += m->sizes[i - 1];
    }
out:
    cJSON_Delete(doc);
    return r;
}

int cordon_files_tar_workspace_fd(const char *files_json, int data_fd, int out_fd,
                                  const char *dest, const struct cordon_workspace_owner *owner,
                                  uint64_t max_bytes, uint64_t max_entries,
                                  struct cordon_error *err)
{
    struct importer im = { .owner = owner };
    struct files_manifest m = { 0 };
    char *norm = NULL, *chunk = NULL;
    struct stat st;
    int r;

    if (files_json == NULL || data_fd < 0 || out_fd < 0 || owner == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "files: a manifest, data_fd, out_fd and owner are required");
    r = cordon_path_normalize_dir("dest", dest != NULL ? dest : "", &norm, err);
    if (r == 0)
        r = manifest_read(files_json, norm, max_bytes, max_entries, &m, err);
    if (r < 0)
        goto out;
    /* A file's bytes are known before the first is sent: they must add up. */
    if (fstat(data_fd, &st) == 0 && S_ISREG(st.st_mode)) {
        off_t at = lseek(data_fd, 0, SEEK_CUR);

        if (at >= 0 && (uint64_t)(st.st_size - at) != m.bytes) {
            r = cordon_error_set(err, CORDON_E_INVALID, 0,
                                 "files: data_fd holds %" PRIu64 " bytes, the manifest's files "
                                 "%" PRIu64, (uint64_t)(st.st_size - at), m.bytes);
            goto out;
        }
    }
    im.prefix = norm;
    chunk = malloc(CORDON__TAR_CHUNK);
    if (chunk == NULL) {
        r = cordon__tar_nomem(err, "files");
        goto out;
    }
    r = cordon__tar_rewriter_open(out_fd, &im.w, err);
    /* The destination exists after an import, even of no file. */
    if (r == 0 && norm[0] != '\0') {
        r = importer_parents(&im, norm, err);
        if (r == 0)
            r = importer_dir(&im, norm, 0755, NULL, err);
    }
    for (size_t i = 0; r == 0 && i < m.n; i++) {
        bool src = in_source(&im, m.names[i]);
        uid_t uid;
        gid_t gid;

        entry_owner(&im, src, NULL, &uid, &gid);
        r = importer_parents(&im, m.names[i], err);
        if (r == 0)
            r = write_file_fd(im.w, m.names[i], src ? m.modes[i] & ~(mode_t)0222 : m.modes[i],
                              uid, gid, data_fd, m.sizes[i], chunk, err);
    }
    /* Bytes left over mean the manifest and the data disagree: the
     * stream is then left cut off, never finished. */
    if (r == 0)
        r = cordon__files_data_end(data_fd, err);
out:
    if (im.w != NULL) {
        int c = cordon__tar_rewriter_close(im.w, r == 0, err);

        if (r == 0)
            r = c;
    }
    dir_set_clear(&im.dirs);
    manifest_clear(&m);
    free(chunk);
    free(norm);
    return r;
}
