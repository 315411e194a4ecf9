/*
 * sdk: host-side file work that never follows a link the sandboxed code
 * could have planted. Every path is relative to a directory fd and is
 * resolved with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS), falling back to a component-wise O_NOFOLLOW walk
 * on kernels without openat2. Every fd is O_CLOEXEC.
 */
#ifndef CORDON_SDK_FS_H
#define CORDON_SDK_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <cordon/provider.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Open rel beneath dirfd. flags as openat (O_CLOEXEC and O_NOFOLLOW are
 * added). A symlink anywhere on the way is CORDON_E_UNSAFE. */
CORDON_EXTERN int cordon_fs_open_beneath(int dirfd, const char *rel, int flags, mode_t mode,
                                         int *ret_fd, struct cordon_error *err);

/* Open rel beneath dirfd for reading and require a regular file no larger
 * than max_bytes (0 = no limit). */
CORDON_EXTERN int cordon_fs_open_regular(int dirfd, const char *rel, uint64_t max_bytes,
                                         int *ret_fd, uint64_t *ret_size, struct cordon_error *err);

/* Create every missing directory of rel beneath dirfd with mode. */
CORDON_EXTERN int cordon_fs_mkdirs_beneath(int dirfd, const char *rel, mode_t mode,
                                           struct cordon_error *err);

/* Open the directory rel (normalised, relative; "" is dirfd itself) beneath
 * dirfd without following any link. With create, each missing component
 * is made 0755, and with give also chowned to uid:gid. field names rel in
 * errors. *ret_fd is O_RDONLY|O_DIRECTORY. */
CORDON_EXTERN int cordon_fs_walk_dirs(int dirfd, const char *field, const char *rel, bool create,
                                      bool give, uid_t uid, gid_t gid, int *ret_fd,
                                      struct cordon_error *err);

/*
 * Whether argv0 names a program inside a sandbox whose root is root_fd, as
 * execvp inside would find it: with a '/' as given (relative to cwd, an
 * absolute directory inside), else in each absolute directory of path (a
 * PATH value) in turn; each candidate resolved as the sandbox resolves it
 * (openat2 RESOLVE_IN_ROOT, no magic links) and only stat'ed. 0 when it is
 * an executable regular file there, and also when the kernel has no
 * openat2 (the mechanism's own exec then decides); CORDON_E_NOT_FOUND
 * naming argv0 and the PATH searched; CORDON_E_INVALID for an argv0 or a
 * cwd longer than CORDON_PATH_MAX.
 */
CORDON_EXTERN int cordon_fs_find_program(int root_fd, const char *argv0, const char *cwd,
                                         const char *path, struct cordon_error *err);

/* Read a whole regular file (bounded). *ret_buf is malloc'd and
 * NUL-terminated (the NUL is not counted in ret_len). */
CORDON_EXTERN int cordon_fs_read_file(int dirfd, const char *rel, size_t max_bytes,
                                      char **ret_buf, size_t *ret_len, struct cordon_error *err);

/* Write all len bytes of buf to fd, retrying short writes and EINTR.
 * 0, or -errno of the write that failed (-EIO for a write that returned 0). */
CORDON_EXTERN int cordon_fs_write_all(int fd, const void *buf, size_t len);

/* Write buf to rel beneath dirfd atomically: a temporary file in the same
 * directory, fsync, rename over rel, fsync of the directory. */
CORDON_EXTERN int cordon_fs_write_atomic(int dirfd, const char *rel, const void *buf, size_t len,
                                         mode_t mode, struct cordon_error *err);

/* The same replacement without either fsync: a reader, or a writer killed
 * at any point, still sees the old file or the whole new one, but a power
 * loss may lose the change. For state that means something only while this
 * boot lasts (a phase with a live owner pid), on a path written often. */
CORDON_EXTERN int cordon_fs_write_replace(int dirfd, const char *rel, const void *buf, size_t len,
                                          mode_t mode, struct cordon_error *err);

/* Create rel beneath dirfd (it must not exist) holding buf, with mode; no
 * fsync: for scratch files that only have to appear whole to this host
 * (a failed write removes the file). */
CORDON_EXTERN int cordon_fs_write_new(int dirfd, const char *rel, const void *buf, size_t len,
                                      mode_t mode, struct cordon_error *err);

/* Copy the regular file src_rel (beneath src_dirfd) to dst_rel (beneath
 * dst_dirfd, parents created 0755, replaced atomically), at most max_bytes;
 * ret_sha256_hex (65 bytes) and ret_bytes are optional. */
CORDON_EXTERN int cordon_fs_copy_beneath(int src_dirfd, const char *src_rel, int dst_dirfd,
                                         const char *dst_rel, uint64_t max_bytes, mode_t mode,
                                         char *ret_sha256_hex, uint64_t *ret_bytes,
                                         struct cordon_error *err);

/* Remove name (a file, or a directory and everything below it) beneath
 * dirfd without following any link. Missing is success. */
CORDON_EXTERN int cordon_fs_remove_tree(int dirfd, const char *name, struct cordon_error *err);
/* The same for an absolute path. */
CORDON_EXTERN int cordon_fs_remove_tree_path(const char *path, struct cordon_error *err);

/* Create a fresh directory parent/<prefix>XXXXXX with mode 0700. */
CORDON_EXTERN int cordon_fs_mkdtemp(const char *parent, const char *prefix, char **ret_path,
                                    struct cordon_error *err);

/* SHA-256 of a buffer and of the rest of an fd (read to EOF, at most
 * max_bytes, 0 = no limit), as 64 lowercase hex digits plus NUL. */
CORDON_EXTERN void cordon_sha256_hex(const void *buf, size_t len, char ret_hex[65]);
CORDON_EXTERN int cordon_sha256_fd(int fd, uint64_t max_bytes, char ret_hex[65], uint64_t *ret_bytes,
                                   struct cordon_error *err);

/* Incremental SHA-256. */
struct cordon_sha256 {
    uint32_t state[8];
    uint64_t bytes;
    unsigned char block[64];
    size_t fill;
};
CORDON_EXTERN void cordon_sha256_init(struct cordon_sha256 *ctx);
CORDON_EXTERN void cordon_sha256_update(struct cordon_sha256 *ctx, const void *buf, size_t len);
CORDON_EXTERN void cordon_sha256_final_hex(struct cordon_sha256 *ctx, char ret_hex[65]);

#ifdef __cplusplus
}
#endif
#endif
