/*
 * sdk: tar streams with safety checks, on libarchive.
 *
 * Reading refuses: absolute names, ".." components, hardlinks, symlinks
 * whose target is absolute or leaves the root (or any symlink without
 * CORDON_TAR_ALLOW_SYMLINKS), device nodes, FIFOs, sockets, setuid/setgid
 * bits, and more bytes or entries than the limits. Extraction is done with
 * fd-relative calls (<cordon/sdk/fs.h>) so that nothing already on disk is followed.
 * A refusal names the entry and the rule; what was extracted before it
 * stays, and the caller removes the destination.
 */
#ifndef CORDON_SDK_TAR_H
#define CORDON_SDK_TAR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <cordon/provider.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CORDON_TAR_ALLOW_SYMLINKS 0x1u  /* keep safe (relative, inside) symlinks as symlinks */
#define CORDON_TAR_SET_OWNER      0x2u  /* chown entries to limits->uid/gid */
#define CORDON_TAR_READ_ONLY      0x4u  /* strip write bits from every entry */
/*
 * Unpacking a container's root filesystem (extraction only; the filter
 * refuses it). The tree is resolved later by the container inside its own
 * root and never followed by the host, so: symlinks are kept with any
 * target, absolute ones too (as CORDON_TAR_ALLOW_SYMLINKS, without the
 * target check); hardlinks are created when their target is an earlier
 * regular file of the stream (a normalised name inside the root);
 * setuid, setgid and sticky bits are stripped instead of refused; device
 * nodes, FIFOs and sockets are skipped (the runtime supplies /dev).
 */
#define CORDON_TAR_ROOTFS         0x8u

struct cordon_tar_limits {
    uint64_t max_bytes;     /* sum of regular files' sizes; 0 = none */
    uint64_t max_entries;   /* 0 = none */
    uid_t uid;              /* with CORDON_TAR_SET_OWNER */
    gid_t gid;
};

struct cordon_tar_stats {
    uint64_t entries;
    uint64_t bytes;         /* sum of regular files' sizes */
};

/* Read a tar stream from tar_fd (to its end) and extract it beneath
 * dest_dirfd. ret_stats is optional. */
CORDON_EXTERN int cordon_tar_extract_fd(int tar_fd, int dest_dirfd,
                                        const struct cordon_tar_limits *limits, unsigned flags,
                                        struct cordon_tar_stats *ret_stats, struct cordon_error *err);

/* Write the tree at rel beneath src_dirfd ("" for the directory itself)
 * as a pax tar stream to tar_fd, entries named relative to it, symlinks
 * stored as links (never followed), only regular files, directories and
 * symlinks (anything else is refused). Bounded by limits. */
CORDON_EXTERN int cordon_tar_create_fd(int src_dirfd, const char *rel, int tar_fd,
                                       const struct cordon_tar_limits *limits,
                                       struct cordon_tar_stats *ret_stats, struct cordon_error *err);

/*
 * export_files (ABI 1.2) for providers whose workspace is reachable as a
 * directory fd: write exactly the paths of paths_json (a JSON array of at
 * most CORDON_TAR_PATHS_MAX relative paths, each normalised and checked
 * before anything is written) beneath src_dirfd as a pax stream, each entry
 * named by its path: a regular file with its bytes, a symbolic link as a
 * link (never followed), a directory as an entry of its own without its
 * contents. A path that does not exist, or whose parent is missing or not
 * a directory, is left out; one with a symbolic link among its parents, or
 * that is anything else (FIFO, device, socket), is refused. Nothing else of
 * the tree is read, however many files lie beside the named ones. Bounded
 * by limits as cordon_tar_create_fd.
 */
#define CORDON_TAR_PATHS_MAX 256
CORDON_EXTERN int cordon_tar_create_paths_fd(int src_dirfd, const char *paths_json, int tar_fd,
                                             const struct cordon_tar_limits *limits,
                                             struct cordon_tar_stats *ret_stats,
                                             struct cordon_error *err);

/* Who owns what a provider imports into /workspace (the layouts of
 * provider-abi.md §6.5). The two flags leave two bytes of padding before
 * uid; the layout is part of libcordon-sdk's ABI and stays, so clang's
 * -Wpadded is quieted for it alone. */
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wpadded"
#endif
struct cordon_workspace_owner {
    bool code_layout;   /* layout "code": source/ and below stay root's and read-only */
    bool set_owner;     /* chown entries (false: leave them to the caller's uid) */
    uid_t uid;          /* the sandbox user, for everything outside source/ */
    gid_t gid;
};
#if defined(__clang__)
#pragma clang diagnostic pop
#endif

/* import_tar for providers whose workspace is reachable as a directory fd:
 * normalise dest, create it beneath ws_fd, and extract the stream there.
 * At or below source/ in layout "code": read-only, root-owned, no
 * symlinks; elsewhere: owned by the sandbox user, safe symlinks kept.
 * Bounded by max_bytes and max_entries. */
CORDON_EXTERN int cordon_tar_import_workspace(int tar_fd, int ws_fd, const char *dest,
                                              const struct cordon_workspace_owner *owner,
                                              uint64_t max_bytes, uint64_t max_entries,
                                              struct cordon_error *err);

/* import_files (ABI 1.1) for the same kind of provider: the entries of
 * files_json ({"files": [{"path", "size", "mode"}, ...]}, see provider.h)
 * with their bytes read from data_fd in order, placed, owned and bounded
 * exactly as cordon_tar_import_workspace places, owns and bounds a stream
 * of regular files. A manifest whose sizes do not add up to the bytes of
 * data_fd is refused. Does not load libarchive. */
CORDON_EXTERN int cordon_files_import_workspace(const char *files_json, int data_fd, int ws_fd,
                                                const char *dest,
                                                const struct cordon_workspace_owner *owner,
                                                uint64_t max_bytes, uint64_t max_entries,
                                                struct cordon_error *err);

/* A tar stream built from memory (landing a bundle, copying a helper in). */
struct cordon_tar_writer;
CORDON_EXTERN int cordon_tar_writer_open(int tar_fd, struct cordon_tar_writer **ret_writer,
                                         struct cordon_error *err);
/* path is a normalised relative path; parents are not added implicitly. */
CORDON_EXTERN int cordon_tar_writer_add_dir(struct cordon_tar_writer *w, const char *path,
                                            mode_t mode, struct cordon_error *err);
CORDON_EXTERN int cordon_tar_writer_add_file(struct cordon_tar_writer *w, const char *path,
                                             const void *data, size_t len, mode_t mode,
                                             struct cordon_error *err);
/* Add a host file's bytes (read from fd to EOF, size known) under path. */
CORDON_EXTERN int cordon_tar_writer_add_fd(struct cordon_tar_writer *w, const char *path, int fd,
                                           uint64_t size, mode_t mode, struct cordon_error *err);
/* Finish the stream (end-of-archive blocks) and free w; does not close
 * tar_fd. cordon_tar_writer_free without close abandons the stream. */
CORDON_EXTERN int cordon_tar_writer_close(struct cordon_tar_writer *w, struct cordon_error *err);
CORDON_EXTERN void cordon_tar_writer_free(struct cordon_tar_writer *w);

/* Add a symbolic link at path whose target is stored byte for byte. The
 * writer does not judge the target: one that is absolute or leaves the
 * root is written as given, and the reading side decides (extraction and
 * cordon_tar_filter_fd refuse it). */
CORDON_EXTERN int cordon_tar_writer_add_symlink(struct cordon_tar_writer *w, const char *path,
                                                const char *target, struct cordon_error *err);

/*
 * Read a tar stream from in_fd (to its end), check every entry with the
 * rules of cordon_tar_extract_fd (flags and limits as there; one check
 * serves both), and write a clean pax stream of the same entries to out_fd:
 * normalised names, type, permission bits, numeric owner (limits' uid/gid
 * with CORDON_TAR_SET_OWNER), mtime, link target and data, nothing else (no
 * user names, xattrs or ACLs). An entry at or beneath the name of an
 * earlier symlink is refused, as extraction would refuse it. ret_stats
 * (optional) counts entries and file bytes; ret_sha256_hex (optional, 65
 * bytes) is the SHA-256 of exactly the bytes written to out_fd. After a
 * refusal the output stops without end-of-archive blocks (it may be empty)
 * and the caller discards it; the input is not read further. Neither fd is
 * closed.
 */
CORDON_EXTERN int cordon_tar_filter_fd(int in_fd, int out_fd,
                                       const struct cordon_tar_limits *limits, unsigned flags,
                                       struct cordon_tar_stats *ret_stats,
                                       char ret_sha256_hex[65], struct cordon_error *err);

/*
 * import_tar for providers whose mechanism writes the stream itself, as
 * root (the Docker Engine's archive API): the workspace-owner policy
 * applied to a stream rather than to a directory. in_fd is checked whole
 * with cordon_tar_filter_fd (the rules of extraction, max_bytes and
 * max_entries) into checked_fd, a seekable spool the caller made, before
 * anything is written to out_fd; then every entry is written again to
 * out_fd as a pax stream: named dest/NAME (dest normalised, "" for the
 * workspace root; no longer than CORDON_PATH_MAX), each directory on the
 * way (and dest itself, even for an empty stream) an entry of its own
 * written once before anything inside it (so that a mechanism told not to
 * overwrite a directory with a non-directory refuses, rather than
 * follows, a symlink the sandbox planted where a directory should be),
 * and owned as
 * cordon_tar_import_workspace owns what it extracts: at or below source/
 * in layout "code" root's with the write bits stripped and no symlinks at
 * all; elsewhere owner->uid/gid (set_owner false: the stream's own, for
 * the entries that have one), safe symlinks kept. Only the type,
 * permission bits, owners, mtime, link target and data travel. After a
 * refusal out_fd holds a cut-off stream that the caller discards. No fd is
 * closed.
 */
CORDON_EXTERN int cordon_tar_filter_workspace_fd(int in_fd, int checked_fd, int out_fd,
                                                 const char *dest,
                                                 const struct cordon_workspace_owner *owner,
                                                 uint64_t max_bytes, uint64_t max_entries,
                                                 struct cordon_error *err);

/* import_files (ABI 1.1) for the same kind of mechanism: files_json and
 * data_fd as cordon_files_import_workspace takes them, written to out_fd
 * as the pax stream cordon_tar_filter_workspace_fd writes (dest and each
 * directory on the way an entry of its own, owners and modes by the same
 * policy), each file's bytes read from data_fd as it goes: no spool. The
 * manifest is checked whole first (paths, modes, max_bytes, max_entries),
 * and a regular data_fd's size against it; data_fd ending early or
 * holding more refuses the call and leaves out_fd cut off, without the
 * end of the stream, which the caller must not hand on as complete.
 * Fails on a write error of out_fd (a pipe whose reader went away: block
 * SIGPIPE in the writing thread). No fd is closed. */
CORDON_EXTERN int cordon_files_tar_workspace_fd(const char *files_json, int data_fd, int out_fd,
                                                const char *dest,
                                                const struct cordon_workspace_owner *owner,
                                                uint64_t max_bytes, uint64_t max_entries,
                                                struct cordon_error *err);

/* Write n directory entries to out_fd as a pax stream: paths[i] (normalised,
 * relative) with modes[i] (permission bits), uids[i] and gids[i], in the
 * order given (parents first). For a mechanism that creates directories
 * only through an archive. */
CORDON_EXTERN int cordon_tar_dirs_fd(int out_fd, const char *const *paths, const uid_t *uids,
                                     const gid_t *gids, const mode_t *modes, size_t n,
                                     struct cordon_error *err);

/* What cordon_tar_export_rewrite_fd keeps of a mechanism's archive. */
struct cordon_tar_export {
    uint32_t struct_size;       /* sizeof(struct cordon_tar_export) */
    const char *root;           /* normalised name of the directory the archive is of: its
                                   entries are at or under it, and it must be a directory */
    const char *const *paths;   /* NULL: every entry under root, named relative to it; else only
                                   the entries named here (normalised), by the names below */
    size_t n_paths;
    bool paths_from_root;       /* with paths: names are relative to root (else they are the
                                   archive's own names, root itself one of them) */
    uint64_t max_bytes;         /* sum of regular files' sizes, link copies included */
    uint64_t max_entries;       /* entries kept; unlike cordon_tar_limits, 0 admits none */
};

/*
 * export_tar and export_files for the same kind of provider: rewrite the
 * mechanism's archive of opts->root, read from in_fd (seekable: hardlinks
 * take a second pass; -1 for an empty archive, as when every path asked
 * for is missing), into a pax stream on out_fd for the host. Only the
 * entries opts keeps, renamed as it says; only permission bits travel
 * (setuid/setgid stripped); each hardlink is written as a regular file of
 * its own with its target's content (a target not in the archive is
 * refused); devices, FIFOs and sockets are refused; symlinks pass as
 * links, never followed (the host's extraction judges their targets).
 * Without paths, root missing from the archive is CORDON_E_NOT_FOUND and
 * root not a directory CORDON_E_UNSAFE. Bounded by max_bytes and
 * max_entries; what was not asked for is neither counted nor read. No fd
 * is closed.
 */
CORDON_EXTERN int cordon_tar_export_rewrite_fd(int in_fd, int out_fd,
                                               const struct cordon_tar_export *opts,
                                               struct cordon_error *err);

#ifdef __cplusplus
}
#endif
#endif
