/* sdk: the file slots for a workspace the host can open (see cordon/sdk/workspace.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cordon/sdk/bounds.h>
#include <cordon/sdk/path.h>
#include <cordon/sdk/workspace.h>

/* Check what every slot needs, then open the workspace. */
static int workspace_open(const char *slot, cordon_workspace_open_fn open_ws,
                          struct cordon_resource *res, const char *state_json, int fd,
                          struct cordon_workspace *ret, struct cordon_error *err)
{
    int r;

    *ret = (struct cordon_workspace){ .fd = -1 };
    if (open_ws == NULL || res == NULL || fd < 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: resource and fd required", slot);
    r = open_ws(res, state_json, ret, err);
    if (r == 0 && ret->fd < 0)
        r = cordon_error_set(err, CORDON_E_PROVIDER, 0, "%s: the workspace was not opened", slot);
    return r;
}

static int workspace_close(struct cordon_workspace *ws, int r)
{
    if (ws->fd >= 0)
        close(ws->fd);
    ws->fd = -1;
    return r;
}

int cordon_workspace_import_tar(cordon_workspace_open_fn open_ws, struct cordon_resource *res,
                                const char *state_json, const char *dest, int tar_fd,
                                struct cordon_error *err)
{
    struct cordon_workspace ws;
    int r = workspace_open("import_tar", open_ws, res, state_json, tar_fd, &ws, err);

    if (r == 0)
        r = cordon_tar_import_workspace(tar_fd, ws.fd, dest, &ws.owner, ws.import_max_bytes,
                                        CORDON_TAR_ENTRIES_MAX, err);
    return workspace_close(&ws, r);
}

int cordon_workspace_import_files(cordon_workspace_open_fn open_ws, struct cordon_resource *res,
                                  const char *state_json, const char *dest,
                                  const char *files_json, int data_fd, struct cordon_error *err)
{
    struct cordon_workspace ws = { .fd = -1 };
    int r = 0;

    if (files_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "import_files: files_json required");
    r = workspace_open("import_files", open_ws, res, state_json, data_fd, &ws, err);
    if (r == 0)
        r = cordon_files_import_workspace(files_json, data_fd, ws.fd, dest, &ws.owner,
                                          ws.import_max_bytes, CORDON_TAR_ENTRIES_MAX, err);
    return workspace_close(&ws, r);
}

int cordon_workspace_export_tar(cordon_workspace_open_fn open_ws, struct cordon_resource *res,
                                const char *state_json, const char *src, int tar_fd,
                                struct cordon_error *err)
{
    struct cordon_workspace ws = { .fd = -1 };
    struct cordon_tar_limits limits = { 0 };
    char *norm = NULL;
    int r;

    /* tar.c resolves src beneath the workspace without following links. */
    r = cordon_path_normalize_dir("src", src != NULL ? src : "", &norm, err);
    if (r == 0)
        r = workspace_open("export_tar", open_ws, res, state_json, tar_fd, &ws, err);
    if (r == 0) {
        limits.max_bytes = ws.export_max_bytes;
        limits.max_entries = CORDON_TAR_ENTRIES_MAX;
        r = cordon_tar_create_fd(ws.fd, norm, tar_fd, &limits, NULL, err);
    }
    free(norm);
    return workspace_close(&ws, r);
}

int cordon_workspace_export_files(cordon_workspace_open_fn open_ws, struct cordon_resource *res,
                                  const char *state_json, const char *paths_json, int tar_fd,
                                  struct cordon_error *err)
{
    struct cordon_workspace ws;
    struct cordon_tar_limits limits = { 0 };
    int r = workspace_open("export_files", open_ws, res, state_json, tar_fd, &ws, err);

    if (r == 0) {
        limits.max_bytes = ws.export_max_bytes;
        limits.max_entries = CORDON_TAR_ENTRIES_MAX;
        r = cordon_tar_create_paths_fd(ws.fd, paths_json, tar_fd, &limits, NULL, err);
    }
    return workspace_close(&ws, r);
}

/* dirfd/name, 0755, handed to uid:gid with give. */
static int mkdir_owned(int dirfd, const char *name, bool give, uid_t uid, gid_t gid, struct cordon_error *err)
{
    int fd, r = 0;

    if (mkdirat(dirfd, name, 0700) != 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "provision: mkdir %s: %s", name, strerror(errno));
    fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fchmod(fd, 0755) != 0 || (give && fchown(fd, uid, gid) != 0))
        r = cordon_error_set(err, CORDON_E_IO, errno, "provision: %s: %s", name, strerror(errno));
    if (fd >= 0)
        close(fd);
    return r;
}

int cordon_workspace_make(int dir_fd, bool code_layout, bool give, uid_t uid, gid_t gid,
                          struct cordon_error *err)
{
    static const char *const user_dirs[] = { "build", "output", "logs" };
    int ws_fd, r = mkdir_owned(dir_fd, "workspace", give && !code_layout, uid, gid, err);

    if (r < 0 || !code_layout)
        return r;
    ws_fd = openat(dir_fd, "workspace", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (ws_fd < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "provision: workspace: %s", strerror(errno));
    r = mkdir_owned(ws_fd, "source", false, 0, 0, err);
    for (size_t i = 0; r == 0 && i < sizeof(user_dirs) / sizeof(user_dirs[0]); i++)
        r = mkdir_owned(ws_fd, user_dirs[i], give, uid, gid, err);
    close(ws_fd);
    return r;
}
