/*
 * sdk (internal): libarchive, loaded the first time a tar stream is read
 * or written. A command that never touches one (cordon exec, probe, ls,
 * a code run whose provider lands files without tar) does not pay for
 * libarchive and what Debian's build of it pulls in: libxml2, ICU and
 * libstdc++, 1.4 ms of a 2.3 ms start on the reference machine.
 *
 * tar.c (and the in-tree docker provider's archive.c) include this header
 * instead of archive.h; every archive_* call there then goes through the
 * table below, and every entry point calls cordon__archive_load first.
 */
#ifndef CORDON_SDK_ARCHIVE_LAZY_H
#define CORDON_SDK_ARCHIVE_LAZY_H

#include <archive.h>
#include <archive_entry.h>
#include <cordon/error.h>
#include <cordon/provider.h>

/* Every libarchive function the sdk calls. */
#define CORDON__ARCHIVE_FUNCS(X) \
    X(archive_entry_filetype) X(archive_entry_free) X(archive_entry_gid) \
    X(archive_entry_hardlink) X(archive_entry_hardlink_utf8) X(archive_entry_hardlink_w) \
    X(archive_entry_mtime) X(archive_entry_mtime_is_set) X(archive_entry_mtime_nsec) \
    X(archive_entry_new) X(archive_entry_pathname) X(archive_entry_pathname_utf8) \
    X(archive_entry_perm) X(archive_entry_set_filetype) X(archive_entry_set_gid) \
    X(archive_entry_set_mtime) X(archive_entry_set_pathname) X(archive_entry_set_perm) \
    X(archive_entry_set_size) X(archive_entry_set_symlink) X(archive_entry_set_uid) \
    X(archive_entry_size) X(archive_entry_size_is_set) X(archive_entry_symlink) \
    X(archive_entry_symlink_utf8) X(archive_entry_uid) X(archive_errno) \
    X(archive_error_string) X(archive_read_data) X(archive_read_free) X(archive_read_new) \
    X(archive_read_next_header) X(archive_read_open_fd) X(archive_read_support_filter_none) \
    X(archive_read_support_format_empty) X(archive_read_support_format_tar) \
    X(archive_set_error) X(archive_write_close) X(archive_write_data) X(archive_write_fail) X(archive_write_free) \
    X(archive_write_header) X(archive_write_new) X(archive_write_open) X(archive_write_open_fd) \
    X(archive_write_set_bytes_in_last_block) X(archive_write_set_format_pax_restricted)

/* Pointers with the exact types archive.h declares. */
struct cordon__archive_api {
#define CORDON__ARCHIVE_MEMBER(name) __typeof__(name) *name;
    CORDON__ARCHIVE_FUNCS(CORDON__ARCHIVE_MEMBER)
#undef CORDON__ARCHIVE_MEMBER
};

/* Exported from libcordon-sdk for the in-tree docker provider only: this
 * header is not installed and the two names are not part of the sdk's API. */
extern CORDON_EXTERN struct cordon__archive_api cordon__archive;

/* Load libarchive once per process (thread-safe). 0, or
 * CORDON_E_UNAVAILABLE naming the library and what dlopen said; a failed
 * load is not retried. */
CORDON_EXTERN int cordon__archive_load(struct cordon_error *err);

#ifndef CORDON__ARCHIVE_NO_REDIRECT
#define archive_entry_filetype cordon__archive.archive_entry_filetype
#define archive_entry_free cordon__archive.archive_entry_free
#define archive_entry_gid cordon__archive.archive_entry_gid
#define archive_entry_hardlink cordon__archive.archive_entry_hardlink
#define archive_entry_hardlink_utf8 cordon__archive.archive_entry_hardlink_utf8
#define archive_entry_hardlink_w cordon__archive.archive_entry_hardlink_w
#define archive_entry_mtime cordon__archive.archive_entry_mtime
#define archive_entry_mtime_is_set cordon__archive.archive_entry_mtime_is_set
#define archive_entry_mtime_nsec cordon__archive.archive_entry_mtime_nsec
#define archive_entry_new cordon__archive.archive_entry_new
#define archive_entry_pathname cordon__archive.archive_entry_pathname
#define archive_entry_pathname_utf8 cordon__archive.archive_entry_pathname_utf8
#define archive_entry_perm cordon__archive.archive_entry_perm
#define archive_entry_set_filetype cordon__archive.archive_entry_set_filetype
#define archive_entry_set_gid cordon__archive.archive_entry_set_gid
#define archive_entry_set_mtime cordon__archive.archive_entry_set_mtime
#define archive_entry_set_pathname cordon__archive.archive_entry_set_pathname
#define archive_entry_set_perm cordon__archive.archive_entry_set_perm
#define archive_entry_set_size cordon__archive.archive_entry_set_size
#define archive_entry_set_symlink cordon__archive.archive_entry_set_symlink
#define archive_entry_set_uid cordon__archive.archive_entry_set_uid
#define archive_entry_size cordon__archive.archive_entry_size
#define archive_entry_size_is_set cordon__archive.archive_entry_size_is_set
#define archive_entry_symlink cordon__archive.archive_entry_symlink
#define archive_entry_symlink_utf8 cordon__archive.archive_entry_symlink_utf8
#define archive_entry_uid cordon__archive.archive_entry_uid
#define archive_errno cordon__archive.archive_errno
#define archive_error_string cordon__archive.archive_error_string
#define archive_read_data cordon__archive.archive_read_data
#define archive_read_free cordon__archive.archive_read_free
#define archive_read_new cordon__archive.archive_read_new
#define archive_read_next_header cordon__archive.archive_read_next_header
#define archive_read_open_fd cordon__archive.archive_read_open_fd
#define archive_read_support_filter_none cordon__archive.archive_read_support_filter_none
#define archive_read_support_format_empty cordon__archive.archive_read_support_format_empty
#define archive_read_support_format_tar cordon__archive.archive_read_support_format_tar
#define archive_set_error cordon__archive.archive_set_error
#define archive_write_close cordon__archive.archive_write_close
#define archive_write_data cordon__archive.archive_write_data
#define archive_write_fail cordon__archive.archive_write_fail
#define archive_write_free cordon__archive.archive_write_free
#define archive_write_header cordon__archive.archive_write_header
#define archive_write_new cordon__archive.archive_write_new
#define archive_write_open cordon__archive.archive_write_open
#define archive_write_open_fd cordon__archive.archive_write_open_fd
#define archive_write_set_bytes_in_last_block cordon__archive.archive_write_set_bytes_in_last_block
#define archive_write_set_format_pax_restricted cordon__archive.archive_write_set_format_pax_restricted
#endif

#endif
