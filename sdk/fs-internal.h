/*
 * What the sdk's host file work shares: sdk/fs.c (opening, reading,
 * writing and copying beneath a directory fd) and sdk/fs-remove.c
 * (removing a tree); the core uses cordon__file_type_name too, so that
 * every refusal names a file's type in the same words. Private to
 * libcordon-sdk (hidden, in no installed header).
 */
#ifndef CORDON_SDK_FS_INTERNAL_H
#define CORDON_SDK_FS_INTERNAL_H

#include <sys/types.h>

#include <cordon/error.h>
#include "sdk/read-small.h"

/* Fresh names tried before giving up. */
#define CORDON__FS_TEMP_TRIES 16

/* ---- sdk/fs.c ------------------------------------------------------------ */

/* "regular file", "directory", "symbolic link", "FIFO", "socket",
 * "character device", "block device" or "file of unknown type", for
 * "%s is a %s" messages. */
const char *cordon__file_type_name(mode_t mode);

/* The error of a failed system call on rel; ELOOP and EXDEV come from the resolve flags. */
int cordon__fs_fail(struct cordon_error *err, int e, const char *rel, const char *what);
/* Absolute paths and ".." are refused before the kernel sees them. */
int cordon__fs_check_rel(const char *rel, struct cordon_error *err);
/*
 * The one reader of a small file of the tree: fd (open already, the
 * caller's to close) read to EOF, at most max_bytes, into *ret_buf
 * (malloc'd, NUL-terminated; the NUL is not counted in *ret_len, which may
 * be NULL). size_hint (fstat's size, or 0) sizes the first buffer. name
 * starts every message: CORDON_E_LIMIT "NAME: more than the limit of MAX
 * bytes", CORDON_E_IO "NAME: read: ..." (os_errno set), CORDON_E_NOMEM.
 * Where the fd comes from is the caller's rule: beneath a directory fd
 * (cordon_fs_read_file), a path the caller named (core/host.c's config, a
 * --request file), stdin.
 */
int cordon__fs_read_fd(int fd, const char *name, size_t max_bytes, size_t size_hint, char **ret_buf,
                       size_t *ret_len, struct cordon_error *err);


/* Open rel (already checked) beneath dirfd, never through a link. Returns an fd or -errno. */
int cordon__fs_open_raw(int dirfd, const char *rel, int flags, mode_t mode);
/* Split rel into its parent ("." when none) and its last component, both
 * malloc'd. Trailing slashes are ignored; a rel that names no entry is
 * CORDON_E_INVALID. */
int cordon__fs_split_parent(const char *rel, char **ret_parent, char **ret_base,
                            struct cordon_error *err);

#endif
