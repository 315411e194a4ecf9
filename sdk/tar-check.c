/*
 * sdk: the checks of cordon/sdk/tar.h on one header: its name, links,
 * setuid and setgid bits, type and size. Extraction (sdk/tar.c) and
 * cordon_tar_filter_fd (sdk/tar-filter.c) both call
 * cordon__tar_entry_check, so that both refuse exactly the same streams.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cordon/sdk/path.h>
#include <cordon/sdk/tar.h>

#include "sdk/tar-internal.h"

/*
 * A symlink target must be relative and, read from the link's directory,
 * stay inside the root. ".." is allowed only at the start: after a name it
 * would climb out of whatever that name resolves to, and the name may be
 * another link. any_target (a root filesystem, resolved only inside its
 * container) keeps just the checks on emptiness and length.
 */
static int check_link_target(const char *name, const char *target, bool any_target,
                             struct cordon_error *err)
{
    size_t depth = 0;
    bool seen_name = false;

    if (target == NULL || target[0] == '\0')
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "tar entry \"%.*s\": symbolic link without a target",
                                cordon_text_fit(name, 300), name);
    if (strnlen(target, CORDON_PATH_MAX + 1) > CORDON_PATH_MAX)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "tar entry \"%.*s\": symbolic link target is longer than %d "
                                "bytes",
                                cordon_text_fit(name, 300), name, CORDON_PATH_MAX);
    if (any_target)
        return 0;
    if (target[0] == '/')
        return cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                "tar entry \"%.*s\": symbolic link to an absolute path "
                                "(\"%.*s\") is not allowed",
                                cordon_text_fit(name, 300), name, cordon_text_fit(target, 200),
                                target);
    for (const char *s = name; *s != '\0'; s++)
        depth += *s == '/';
    for (const char *p = target; *p != '\0';) {
        size_t clen = strcspn(p, "/");

        if (clen == 2 && p[0] == '.' && p[1] == '.') {
            if (seen_name)
                return cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                        "tar entry \"%.*s\": symbolic link target \"%.*s\" "
                                        "has \"..\" after a name, which is not allowed",
                                        cordon_text_fit(name, 300), name,
                                        cordon_text_fit(target, 200), target);
            if (depth == 0)
                return cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                        "tar entry \"%.*s\": symbolic link target \"%.*s\" "
                                        "leaves the extraction root",
                                        cordon_text_fit(name, 300), name,
                                        cordon_text_fit(target, 200), target);
            depth--;
        } else if (clen > 0 && !(clen == 1 && p[0] == '.')) {
            seen_name = true;
        }
        p += clen;
        p += strspn(p, "/");
    }
    return 0;
}

/* The refusal of a device node, FIFO or socket. */
static int special_refused(const char *name, mode_t type, struct cordon_error *err)
{
    const char *what = type == AE_IFIFO    ? "FIFOs"
                       : type == AE_IFSOCK ? "sockets"
                                           : "device nodes";

    return cordon_error_set(err, CORDON_E_UNSAFE, 0, "tar entry \"%.*s\": %s are not allowed",
                            cordon_text_fit(name, 300), name, what);
}

/* Any stored form of a link name marks a hardlink, whatever the locale can convert. */
bool cordon__tar_is_hardlink(struct archive_entry *entry)
{
    return archive_entry_hardlink(entry) != NULL || archive_entry_hardlink_utf8(entry) != NULL ||
           archive_entry_hardlink_w(entry) != NULL;
}

/*
 * A hardlink of a root filesystem names an earlier entry of the stream:
 * its target must be a normalised relative name (no "..", not absolute).
 * ret_target (optional) gets the normalised name, freed by the caller.
 */
int cordon__tar_check_hardlink_target(struct archive_entry *entry, const char *name,
                                      char **ret_target, struct cordon_error *err)
{
    const char *raw = archive_entry_hardlink(entry);
    char *target = NULL;
    int r;

    if (raw == NULL)
        raw = archive_entry_hardlink_utf8(entry);
    if (raw == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "tar entry \"%.*s\": the hardlink target cannot be read",
                                cordon_text_fit(name, 300), name);
    r = cordon_path_normalize("tar hardlink target", raw, &target, err);
    if (r < 0)
        return r;
    if (ret_target != NULL)
        *ret_target = target;
    else
        free(target);
    return 0;
}

/* The checks on one header (sdk/tar-internal.h). */
int cordon__tar_entry_check(struct archive_entry *entry, unsigned flags, uint64_t max_bytes,
                       uint64_t max_entries, struct cordon_tar_stats *stats, char **ret_name,
                       struct cordon_error *err)
{
    const char *raw = archive_entry_pathname(entry), *target;
    mode_t type = archive_entry_filetype(entry);
    mode_t perm = archive_entry_perm(entry);
    int64_t size;
    char *name = NULL;
    int r;

    stats->entries++;
    if (max_entries != 0 && stats->entries > max_entries)
        return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                "tar stream: more than the limit of %" PRIu64 " entries",
                                max_entries);
    /* In the C locale libarchive keeps a non-ASCII name as raw bytes; the
     * UTF-8 form is the fallback when only that one is stored. */
    if (raw == NULL)
        raw = archive_entry_pathname_utf8(entry);
    if (raw == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "tar entry %" PRIu64 ": the name cannot be read", stats->entries);
    /* "./" names the destination itself; any other entry needs a real name. */
    if (type == AE_IFDIR)
        r = cordon_path_normalize_dir("tar entry", raw, &name, err);
    else
        r = cordon_path_normalize("tar entry", raw, &name, err);
    if (r < 0)
        return r;
    if (cordon__tar_is_hardlink(entry)) {
        if (flags & CORDON_TAR_ROOTFS)
            r = cordon__tar_check_hardlink_target(entry, name, NULL, err);
        else
            r = cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                 "tar entry \"%.*s\": hardlinks are not allowed",
                                 cordon_text_fit(name, 300), name);
        goto out;
    }
    /* A root filesystem keeps its setuid programs, without the bits (entry_mode). */
    if ((perm & (S_ISUID | S_ISGID)) && !(flags & CORDON_TAR_ROOTFS)) {
        r = cordon_error_set(err, CORDON_E_UNSAFE, 0,
                             "%s bit on tar entry \"%.*s\": not "
                             "allowed",
                             (perm & S_ISUID) ? "setuid" : "setgid", cordon_text_fit(name, 300),
                             name);
        goto out;
    }
    switch (type) {
    case AE_IFDIR:
        break;
    case AE_IFREG:
        size = archive_entry_size_is_set(entry) ? archive_entry_size(entry) : 0;
        if (size < 0)
            r = cordon_error_set(err, CORDON_E_INVALID, 0,
                                 "tar entry \"%.*s\": negative size in the header",
                                 cordon_text_fit(name, 300), name);
        else if (max_bytes != 0 && (uint64_t)size > max_bytes - stats->bytes)
            r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                                 "tar entry \"%.*s\": %" PRId64 " bytes bring the total to "
                                 "more than the limit of %" PRIu64 " bytes",
                                 cordon_text_fit(name, 300), name, size, max_bytes);
        break;
    case AE_IFLNK:
        if (!(flags & (CORDON_TAR_ALLOW_SYMLINKS | CORDON_TAR_ROOTFS))) {
            r = cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                 "tar entry \"%.*s\": symbolic links are not allowed",
                                 cordon_text_fit(name, 300), name);
            break;
        }
        target = archive_entry_symlink(entry);
        if (target == NULL)
            target = archive_entry_symlink_utf8(entry);
        r = check_link_target(name, target, (flags & CORDON_TAR_ROOTFS) != 0, err);
        break;
    case AE_IFCHR:
    case AE_IFBLK:
    case AE_IFIFO:
    case AE_IFSOCK:
        if (flags & CORDON_TAR_ROOTFS)
            break; /* skipped by extraction: the runtime supplies /dev */
        r = special_refused(name, type, err);
        break;
    default:
        r = cordon_error_set(err, CORDON_E_UNSAFE, 0,
                             "tar entry \"%.*s\": entry type %#o is not allowed",
                             cordon_text_fit(name, 300), name, (unsigned)type);
        break;
    }
out:
    if (r < 0)
        free(name);
    else
        *ret_name = name;
    return r;
}
