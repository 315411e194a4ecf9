/*
 * What the sdk's tar files share, and nothing else uses: sdk/tar.c
 * (extraction, the workspace imports), sdk/tar-check.c (the checks on one
 * header), sdk/tar-create.c (streams from a tree and from memory),
 * sdk/tar-filter.c (a stream checked on its way through), sdk/tar-rewrite.c (streams rewritten for a mechanism that
 * writes them as root) and sdk/tar-export.c (a mechanism's export
 * rewritten). Private to libcordon-sdk (hidden, in no installed header).
 */
#ifndef CORDON_SDK_TAR_INTERNAL_H
#define CORDON_SDK_TAR_INTERNAL_H

#include "sdk/archive-lazy.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>
#include <cordon/error.h>
#include <cordon/sdk/fs.h>
#include <cordon/sdk/tar.h>

/* The flags a caller may pass to extraction and filtering. */
#define CORDON__TAR_FLAGS (CORDON_TAR_ALLOW_SYMLINKS | CORDON_TAR_SET_OWNER | CORDON_TAR_READ_ONLY)
/* Bytes read or written at a time. */
#define CORDON__TAR_CHUNK (64u * 1024u)

/* libarchive's error on a as a cordon error: "tar stream: WHAT: MSG";
 * ENOMEM is NOMEM, a real errno from the fd is IO, a format error INVALID. */
int cordon__tar_fail(struct cordon_error *err, struct archive *a, const char *what);
/* The next chunk of entry name's data from rd into chunk (CORDON__TAR_CHUNK
 * bytes), size bytes still promised by its header: *ret_n is 1..size, or
 * the refusal "the data does not match its size". */
int cordon__tar_read_chunk(struct archive *rd, const char *name, int64_t size, char *chunk,
                           la_ssize_t *ret_n, struct cordon_error *err);

/* A reader of plain tar (ustar, pax, GNU) on fd: no compression; an empty
 * stream is no entries. Loads libarchive on first use. */
int cordon__tar_reader_open(int fd, struct archive **ret_a, struct cordon_error *err);

/* ---- sdk/tar.c ---------------------------------------------------------- */

/* Read what follows the end blocks (at most 1 MiB, CORDON__TAR_CHUNK at a
 * time into chunk) so that a writer on a pipe can finish. */
void cordon__tar_drain(int fd, char *chunk);

/* ---- sdk/tar-check.c ---------------------------------------------------- */

/*
 * The checks of cordon/sdk/tar.h on one header, shared by extraction and
 * cordon_tar_filter_fd so that both refuse exactly the same streams: the
 * entry count, the name (normalised into *ret_name, freed by the caller),
 * hardlinks, setuid/setgid, the type, symlink targets and the size the
 * header claims. stats holds what came before; this entry is counted here.
 */
int cordon__tar_entry_check(struct archive_entry *entry, unsigned flags, uint64_t max_bytes,
                            uint64_t max_entries, struct cordon_tar_stats *stats,
                            char **ret_name, struct cordon_error *err);
/* Any stored form of a link name marks a hardlink, whatever the locale can convert. */
bool cordon__tar_is_hardlink(struct archive_entry *entry);
/* A hardlink of a root filesystem names an earlier entry of the stream: its
 * target must be a normalised relative name. ret_target (optional) gets the
 * normalised name, freed by the caller. */
int cordon__tar_check_hardlink_target(struct archive_entry *entry, const char *name,
                                      char **ret_target, struct cordon_error *err);

/* ---- sdk/tar-create.c ----------------------------------------------------- */

/*
 * The output side of a stream. libarchive writes through sink_write, so
 * that an abandoned stream can be shut down (freeing libarchive's buffers)
 * without its end-of-archive blocks reaching the fd: a cut-off stream must
 * not look complete.
 */
struct cordon__tar_sink {
    struct archive *a;
    int fd;
    bool abandoned;
    struct cordon_sha256 *sha; /* optional: hash of exactly what reaches fd */
};

/* A libarchive writer for a pax stream on fd, without padding the last block. */
int cordon__tar_sink_open(struct cordon__tar_sink *sink, int tar_fd, struct cordon_error *err);
/* Finish the stream with its end blocks (ok) or abandon it, and free it. */
int cordon__tar_sink_close(struct cordon__tar_sink *sink, bool ok, struct cordon_error *err);
/* archive_write_header, its failure named by path. */
int cordon__tar_write_header(struct archive *a, struct archive_entry *entry, const char *path,
                             struct cordon_error *err);

/* ---- sdk/tar.c: files without tar ---------------------------------------- */

/* files_json, at most 8 MiB, parsed into *ret_doc (cJSON_Delete) with its
 * "files" array in *ret_files: errors name the manifest. */
int cordon__files_manifest(const char *files_json, cJSON **ret_doc, const cJSON **ret_files,
                           struct cordon_error *err);
/* Entry i of the manifest, f, checked (an object with a "path", a whole
 * "size" below 2^53, a "mode" of permission bits) with its name normalised
 * into *ret_name (malloc'd) and its size within max_bytes (0: none) after
 * the bytes of the entries before it. */
int cordon__files_entry(const cJSON *f, size_t i, uint64_t max_bytes, uint64_t bytes,
                        char **ret_name, uint64_t *ret_size, mode_t *ret_mode,
                        struct cordon_error *err);
/* Bytes left over on data_fd after the last file mean the manifest and the
 * data disagree: CORDON_E_INVALID then. */
int cordon__files_data_end(int data_fd, struct cordon_error *err);

/* ---- sdk/tar-rewrite.c ---------------------------------------------------- */

/* CORDON_E_NOMEM: "WHAT: out of memory". */
int cordon__tar_nomem(struct cordon_error *err, const char *what);
/* A pax writer on fd, as the sdk's own writer: long names and numeric
 * owners survive. */
int cordon__tar_rewriter_open(int fd, struct archive **ret, struct cordon_error *err);
/* Finish with the end blocks when ok; otherwise leave the stream cut off,
 * so that it cannot pass for a complete one. Frees w (NULL: nothing). */
int cordon__tar_rewriter_close(struct archive *w, bool ok, struct cordon_error *err);
/*
 * A fresh header of type and owner/mode (nothing of from's travels but
 * its mtime and symlink target), then for a file exactly the size from
 * claims, read from rd through chunk (CORDON__TAR_CHUNK bytes).
 */
int cordon__tar_write_entry(struct archive *w, const char *name, mode_t type, mode_t perm,
                            uid_t uid, gid_t gid, struct archive_entry *from, struct archive *rd,
                            char *chunk, struct cordon_error *err);
/* The entry's name, whatever form the stream stored it in. */
const char *cordon__tar_entry_name(struct archive_entry *e);
/* Any stored form of a link name marks a hardlink. */
bool cordon__tar_entry_is_hardlink(struct archive_entry *e);
/* CORDON_E_UNSAFE for a device node, FIFO, socket or other type. */
int cordon__tar_refuse_type(const char *name, mode_t type, struct cordon_error *err);

#endif
