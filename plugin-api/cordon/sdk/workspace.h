/*
 * sdk: the four file slots (import_tar, import_files, export_tar,
 * export_files) for a provider whose workspace the host can open as a
 * directory: a bind mount, a directory of the host, a container's root
 * reached through /proc/PID/root.
 *
 * The provider writes one function, cordon_workspace_open_fn, that reads
 * its state and opens the execution's workspace; each slot is then one
 * call here, which checks the arguments, normalises the path, bounds the
 * stream by the sizes the provider gives and the shared tar-entry bound
 * (CORDON_TAR_ENTRIES_MAX), lands or reads every entry by the rules of
 * cordon/sdk/tar.h, and closes the workspace again. So every such
 * provider lands files alike, and none carries its own copy of the glue.
 *
 * Including this header needs cJSON's.
 */
#ifndef CORDON_SDK_WORKSPACE_H
#define CORDON_SDK_WORKSPACE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <cordon/provider.h>
#include <cordon/sdk/tar.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One execution's workspace, as the provider's open function gives it. */
struct cordon_workspace {
    int fd;                              /* the workspace directory, O_DIRECTORY; the sdk closes it */
    struct cordon_workspace_owner owner; /* who owns what an import lands */
    uint64_t import_max_bytes;           /* what one import may land (the workspace's size) */
    uint64_t export_max_bytes;           /* what one export may carry */
};

/*
 * Read state_json (the provider's own state, borrowed) and open its
 * execution's workspace into *ret; on failure nothing is left open. The
 * sdk calls it once per slot, after checking res and the fds.
 */
typedef int (*cordon_workspace_open_fn)(struct cordon_resource *res, const char *state_json,
                                        struct cordon_workspace *ret, struct cordon_error *err);

/* import_tar: the stream on tar_fd beneath dest (cordon_tar_import_workspace). */
CORDON_EXTERN int cordon_workspace_import_tar(cordon_workspace_open_fn open_ws,
                                              struct cordon_resource *res,
                                              const char *state_json, const char *dest,
                                              int tar_fd, struct cordon_error *err);
/* import_files (ABI 1.1): the files of files_json, their bytes on data_fd,
 * beneath dest (cordon_files_import_workspace). */
CORDON_EXTERN int cordon_workspace_import_files(cordon_workspace_open_fn open_ws,
                                                struct cordon_resource *res,
                                                const char *state_json, const char *dest,
                                                const char *files_json, int data_fd,
                                                struct cordon_error *err);
/* export_tar: the tree at src ("" or NULL the root) as a tar stream on
 * tar_fd (cordon_tar_create_fd; symlinks are never followed). */
CORDON_EXTERN int cordon_workspace_export_tar(cordon_workspace_open_fn open_ws,
                                              struct cordon_resource *res,
                                              const char *state_json, const char *src,
                                              int tar_fd, struct cordon_error *err);
/* export_files (ABI 1.2): only the paths of paths_json, whatever lies
 * beside them (cordon_tar_create_paths_fd). */
CORDON_EXTERN int cordon_workspace_export_files(cordon_workspace_open_fn open_ws,
                                                struct cordon_resource *res,
                                                const char *state_json, const char *paths_json,
                                                int tar_fd, struct cordon_error *err);

/*
 * Make the directory "workspace" beneath dir_fd for a new execution, every
 * directory 0755, never through a link. Layout "code" (code_layout): the
 * workspace and source/ stay root's, so the sandbox user can neither write
 * into source/ nor rename it away; build/, output/ and logs/ are uid:gid's
 * with give. Layout "host": the whole workspace is uid:gid's with give.
 * CORDON_E_IO naming the directory that could not be made.
 */
CORDON_EXTERN int cordon_workspace_make(int dir_fd, bool code_layout, bool give, uid_t uid,
                                        gid_t gid, struct cordon_error *err);

/*
 * Define the four slots as static functions PREFIX_import_tar,
 * PREFIX_import_files, PREFIX_export_tar and PREFIX_export_files, each
 * one call above with open_ws, ready for the vtable:
 *
 *     CORDON_WORKSPACE_SLOTS(example, example_workspace)
 *     ...
 *     vt->import_tar = example_import_tar;
 */
#define CORDON_WORKSPACE_SLOTS(prefix, open_ws)                                                  \
    static int prefix##_import_tar(struct cordon_resource *res_, const char *state_,          \
                                   const char *dest_, int fd_, struct cordon_error *err_)     \
    {                                                                                          \
        return cordon_workspace_import_tar(open_ws, res_, state_, dest_, fd_, err_);          \
    }                                                                                          \
    static int prefix##_import_files(struct cordon_resource *res_, const char *state_,        \
                                     const char *dest_, const char *files_, int fd_,          \
                                     struct cordon_error *err_)                                \
    {                                                                                          \
        return cordon_workspace_import_files(open_ws, res_, state_, dest_, files_, fd_, err_); \
    }                                                                                          \
    static int prefix##_export_tar(struct cordon_resource *res_, const char *state_,          \
                                   const char *src_, int fd_, struct cordon_error *err_)      \
    {                                                                                          \
        return cordon_workspace_export_tar(open_ws, res_, state_, src_, fd_, err_);           \
    }                                                                                          \
    static int prefix##_export_files(struct cordon_resource *res_, const char *state_,        \
                                     const char *paths_, int fd_, struct cordon_error *err_)  \
    {                                                                                          \
        return cordon_workspace_export_files(open_ws, res_, state_, paths_, fd_, err_);       \
    }

#ifdef __cplusplus
}
#endif
#endif
