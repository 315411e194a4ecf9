/* sdk: the file slots for a workspace the host can open (see cordon/sdk/workspace.h). */
#include <stdlib.h>
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
