/* sdk: a tar stream checked and rewritten on its way through (see cordon/sdk/tar.h). */
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


/* ---- filtering --------------------------------------------------------- */

#define FNV_BASIS 14695981039346656037ull
#define FNV_PRIME 1099511628211ull

/* The names of the symlinks a filtered stream has held so far (an
 * open-addressing set, FNV-1a), so that no later entry goes through one. */
struct link_set {
    char **slots;
    size_t cap, n; /* cap is 0 or a power of two */
};

static uint64_t name_hash(const char *s, size_t len)
{
    uint64_t h = FNV_BASIS;

    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * FNV_PRIME;
    return h;
}

static bool link_set_has(const struct link_set *s, const char *name, size_t len, uint64_t h)
{
    if (s->n == 0)
        return false;
    for (size_t i = h & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        const char *k = s->slots[i];

        if (k == NULL)
            return false;
        if (strncmp(k, name, len) == 0 && k[len] == '\0')
            return true;
    }
}

static void link_set_put(char **slots, size_t cap, char *name)
{
    size_t i = name_hash(name, strlen(name)) & (cap - 1);

    while (slots[i] != NULL)
        i = (i + 1) & (cap - 1);
    slots[i] = name;
}

/* Add the first len bytes of name (not yet in the set); the table stays
 * at most half full. */
static int link_set_add_n(struct link_set *s, const char *name, size_t len,
                          struct cordon_error *err)
{
    char *copy = strndup(name, len);

    if (copy == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "tar stream: out of memory");
    if ((s->n + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        char **slots = cap <= SIZE_MAX / sizeof(*slots) ? calloc(cap, sizeof(*slots)) : NULL;

        if (slots == NULL) {
            free(copy);
            return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "tar stream: out of memory");
        }
        for (size_t i = 0; i < s->cap; i++)
            if (s->slots[i] != NULL)
                link_set_put(slots, cap, s->slots[i]);
        free(s->slots);
        s->slots = slots;
        s->cap = cap;
    }
    link_set_put(s->slots, s->cap, copy);
    s->n++;
    return 0;
}

static int link_set_add(struct link_set *s, const char *name, struct cordon_error *err)
{
    return link_set_add_n(s, name, strlen(name), err);
}

/* Add unless already there. */
static int link_set_ensure_n(struct link_set *s, const char *name, size_t len,
                             struct cordon_error *err)
{
    return link_set_has(s, name, len, name_hash(name, len)) ? 0
                                                            : link_set_add_n(s, name, len, err);
}

static void link_set_clear(struct link_set *s)
{
    for (size_t i = 0; i < s->cap; i++)
        free(s->slots[i]);
    free(s->slots);
}

/* Whether name is, or lies beneath, a symlink of the set: every prefix
 * ending before a '/' is looked up, hashed as the scan goes. */
static bool link_set_covers(const struct link_set *s, const char *name)
{
    uint64_t h = FNV_BASIS;
    size_t i;

    for (i = 0; name[i] != '\0'; i++) {
        if (name[i] == '/' && link_set_has(s, name, i, h))
            return true;
        h = (h ^ (unsigned char)name[i]) * FNV_PRIME;
    }
    return link_set_has(s, name, i, h);
}

struct filter {
    struct archive *in;
    struct cordon__tar_sink sink;
    struct cordon_sha256 sha;
    unsigned flags;
    uint64_t max_bytes, max_entries;
    uid_t uid;
    gid_t gid;
    struct cordon_tar_stats stats;
    struct link_set links;
    /* What extraction would find on disk: a directory (every explicit one
     * and every parent it creates on the way) or a regular file. */
    struct link_set dirs, files;
    char *chunk;
};

/*
 * The rules extraction applies to what is already on disk, on the names
 * alone, so that a filtered stream always extracts: no entry beneath a
 * regular file, no directory where a file or link is, no file or link
 * where a directory is. A regular file or link may replace a regular file
 * (extraction replaces it too). Then the entry is recorded.
 */
static int filter_slots(struct filter *f, const char *name, mode_t type, struct cordon_error *err)
{
    size_t len = strlen(name);
    uint64_t h = FNV_BASIS;
    const char *why = NULL;
    int r = 0;

    if (len == 0)
        return 0;
    for (size_t i = 0; i < len; i++) {
        if (name[i] == '/' && link_set_has(&f->files, name, i, h)) {
            return cordon_error_set(err, CORDON_E_EXISTS, ENOTDIR,
                                    "tar entry \"%.*s\": \"%.*s\" is an earlier regular file, "
                                    "not a directory",
                                    cordon_text_fit(name, 300), name, (int)i, name);
        }
        h = (h ^ (unsigned char)name[i]) * FNV_PRIME;
    }
    if (type == AE_IFDIR && link_set_has(&f->files, name, len, h))
        why = "regular file";
    else if (type != AE_IFDIR && link_set_has(&f->dirs, name, len, h))
        why = "directory";
    if (why != NULL)
        return cordon_error_set(err, CORDON_E_EXISTS, 0,
                                "tar entry \"%.*s\": an earlier entry's %s is already there",
                                cordon_text_fit(name, 300), name, why);
    for (size_t i = 0; r == 0 && i < len; i++)
        if (name[i] == '/')
            r = link_set_ensure_n(&f->dirs, name, i, err);
    if (r == 0 && type == AE_IFDIR)
        r = link_set_ensure_n(&f->dirs, name, len, err);
    if (r == 0 && type == AE_IFREG)
        r = link_set_ensure_n(&f->files, name, len, err);
    return r;
}

/* Copy the current entry's data, counted as it arrives like extraction does. */
static int filter_data(struct filter *f, const char *name, uint64_t size,
                       struct cordon_error *err)
{
    uint64_t copied = 0;

    for (;;) {
        la_ssize_t n = archive_read_data(f->in, f->chunk, CORDON__TAR_CHUNK);

        if (n < 0) {
            char what[352];

            snprintf(what, sizeof(what), "entry \"%.*s\": read data", cordon_text_fit(name, 300),
                     name);
            return cordon__tar_fail(err, f->in, what);
        }
        if (n == 0)
            break;
        copied += (uint64_t)n;
        if (f->max_bytes != 0 && copied > f->max_bytes - f->stats.bytes)
            return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                    "tar entry \"%.*s\": data brings the total to more than "
                                    "the limit of %" PRIu64 " bytes",
                                    cordon_text_fit(name, 300), name, f->max_bytes);
        if (archive_write_data(f->sink.a, f->chunk, (size_t)n) != n)
            return cordon_error_set(
                err, CORDON_E_IO, archive_errno(f->sink.a) > 0 ? archive_errno(f->sink.a) : 0,
                "tar entry \"%.*s\": write data: %s", cordon_text_fit(name, 300), name,
                archive_error_string(f->sink.a) ? archive_error_string(f->sink.a) : "short");
    }
    if (copied != size)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "tar entry \"%.*s\": %" PRIu64 " bytes of data where the header "
                                "says %" PRIu64,
                                cordon_text_fit(name, 300), name, copied, size);
    f->stats.bytes += copied;
    return 0;
}

static int filter_entry(struct filter *f, struct archive_entry *in, struct cordon_error *err)
{
    struct archive_entry *out = NULL;
    mode_t type = archive_entry_filetype(in);
    mode_t perm = archive_entry_perm(in) & 0777;
    uint64_t size = 0;
    char *name = NULL;
    int r;

    r = cordon__tar_entry_check(in, f->flags, f->max_bytes, f->max_entries, &f->stats, &name, err);
    if (r < 0)
        return r;
    /* Extraction refuses to write at or through a link it made; so does the filter. */
    if (link_set_covers(&f->links, name)) {
        r = cordon_error_set(err, CORDON_E_UNSAFE, 0,
                             "tar entry \"%.*s\": lies at or beneath an earlier symbolic link",
                             cordon_text_fit(name, 300), name);
        goto out;
    }
    if ((r = filter_slots(f, name, type, err)) < 0)
        goto out;
    if (type == AE_IFLNK && (r = link_set_add(&f->links, name, err)) < 0)
        goto out;
    out = archive_entry_new();
    if (out == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "tar stream: out of memory");
        goto out;
    }
    /* Only what extraction uses is carried over: a clean, reproducible header. */
    archive_entry_set_pathname(out, name[0] != '\0' ? name : ".");
    archive_entry_set_filetype(out, type);
    archive_entry_set_perm(out, (f->flags & CORDON_TAR_READ_ONLY) ? perm & ~(mode_t)0222 : perm);
    archive_entry_set_uid(out, (f->flags & CORDON_TAR_SET_OWNER) ? (la_int64_t)f->uid
                                                                 : archive_entry_uid(in));
    archive_entry_set_gid(out, (f->flags & CORDON_TAR_SET_OWNER) ? (la_int64_t)f->gid
                                                                 : archive_entry_gid(in));
    if (archive_entry_mtime_is_set(in))
        archive_entry_set_mtime(out, archive_entry_mtime(in), archive_entry_mtime_nsec(in));
    if (type == AE_IFLNK)
        archive_entry_set_symlink(out, archive_entry_symlink(in) != NULL
                                           ? archive_entry_symlink(in)
                                           : archive_entry_symlink_utf8(in));
    if (type == AE_IFREG) {
        /* entry_check refused a negative size. */
        size = archive_entry_size_is_set(in) ? (uint64_t)archive_entry_size(in) : 0;
        archive_entry_set_size(out, (la_int64_t)size);
    }
    r = cordon__tar_write_header(f->sink.a, out, name, err);
    if (r == 0 && type == AE_IFREG)
        r = filter_data(f, name, size, err);
out:
    archive_entry_free(out);
    free(name);
    return r;
}

int cordon_tar_filter_fd(int in_fd, int out_fd, const struct cordon_tar_limits *limits,
                         unsigned flags, struct cordon_tar_stats *ret_stats,
                         char ret_sha256_hex[65], struct cordon_error *err)
{
    struct archive_entry *entry;
    struct filter f;
    int r;

    memset(&f, 0, sizeof(f));
    f.sink.fd = -1;
    if (in_fd < 0 || out_fd < 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "tar stream: no fd");
    if ((r = cordon__archive_load(err)) < 0)
        return r;
    if (flags & ~CORDON__TAR_FLAGS)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "tar stream: unknown flags %#x",
                                flags & ~CORDON__TAR_FLAGS);
    if ((flags & CORDON_TAR_SET_OWNER) && limits == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "tar stream: set owner asked without a uid and gid");
    f.flags = flags;
    if (limits != NULL) {
        f.max_bytes = limits->max_bytes;
        f.max_entries = limits->max_entries;
        f.uid = limits->uid;
        f.gid = limits->gid;
    }
    cordon_sha256_init(&f.sha);
    f.sink.sha = &f.sha;
    f.chunk = malloc(CORDON__TAR_CHUNK);
    if (f.chunk == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "tar stream: out of memory");
        goto out;
    }
    r = cordon__tar_reader_open(in_fd, &f.in, err);
    if (r == 0)
        r = cordon__tar_sink_open(&f.sink, out_fd, err);
    while (r == 0) {
        int ar = archive_read_next_header(f.in, &entry);

        if (ar == ARCHIVE_EOF)
            break;
        /* ARCHIVE_WARN: e.g. a name the locale cannot convert; it is still read raw. */
        if (ar != ARCHIVE_OK && ar != ARCHIVE_WARN)
            r = cordon__tar_fail(err, f.in, "read header");
        else
            r = filter_entry(&f, entry, err);
    }
    if (r < 0)
        goto out;
    r = cordon__tar_sink_close(&f.sink, true, err);
    if (r < 0)
        goto out;
    cordon__tar_drain(in_fd, f.chunk);
    if (ret_stats != NULL)
        *ret_stats = f.stats;
    if (ret_sha256_hex != NULL)
        cordon_sha256_final_hex(&f.sha, ret_sha256_hex);
out:
    cordon__tar_sink_close(&f.sink, false, NULL);
    if (f.in != NULL)
        archive_read_free(f.in);
    link_set_clear(&f.links);
    link_set_clear(&f.dirs);
    link_set_clear(&f.files);
    free(f.chunk);
    return r;
}

