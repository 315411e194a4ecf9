/*
 * docker: import and export through the archive API, with the sdk's tar
 * filter and its workspace-owner policy applied on the way (sdk/tar.h).
 *
 * Import: the host's stream is checked entry by entry and rewritten with
 * the right owners into a spool file (cordon_tar_filter_workspace_fd);
 * only a stream that passed every check is sent (PUT) to the daemon, which
 * writes it as root. Export: the daemon's stream (GET) is spooled, then
 * renamed on its way to the host's fd (cordon_tar_export_rewrite_fd). Both
 * are bounded by disk_bytes. import_files builds its stream from the
 * host's files as the daemon reads it (a pipe fed by a thread of its own),
 * with the same policy and bounds, and spools nothing: the manifest is
 * checked whole before the first byte goes. docker.so never loads libarchive itself: the
 * sdk loads it on first use, so that an exec or a terminate does not.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cordon/sdk/path.h>
#include <cordon/sdk/sandbox.h>
#include <cordon/sdk/tar.h>
#include "plugins/docker/docker.h"

/*
 * The bounds of an archive call. The daemon's archive process opens every
 * file it copies, and an open can wait on what the sandbox holds (a file
 * lease waits the kernel's lease-break time, 45 s): the seccomp profile
 * refuses leases, and should anything else stall the stream, no byte
 * moving for ARCHIVE_STALL_MS ends the call as well as the whole bound.
 */
#define ARCHIVE_TIMEOUT_MS 600000L
#define ARCHIVE_STALL_MS 20000L
#define EXPORT_SLACK (64ull << 20)       /* tar headers and padding over the file bytes */

/* ---- spools and the archive API ------------------------------------------ */

int dk__spool_open(const struct cordon_resource *res, int *ret_fd, struct cordon_error *err)
{
    int fd = open(res->spool_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

    /* A file system without O_TMPFILE: memory, still bounded by the caller. */
    if (fd < 0)
        fd = memfd_create("cordon-docker-spool", MFD_CLOEXEC);
    if (fd < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "spool: %s: %s", res->spool_dir,
                                strerror(errno));
    *ret_fd = fd;
    return 0;
}

int dk__archive_timeout(const char *what, struct cordon_error *err)
{
    return cordon_error_set(err, CORDON_E_TIMEOUT, 0,
                            "%s: the daemon's archive moved no byte for %ld ms or took over "
                            "%ld ms (the bounds of an archive call); something inside holds a "
                            "file it needs", what, ARCHIVE_STALL_MS, ARCHIVE_TIMEOUT_MS);
}

static int archive_put(struct dk_conn *conn, const char *container_id, int fd, uint64_t len,
                       const int *abort, struct cordon_error *err)
{
    struct dk_reply reply;
    struct dk_req rq;
    char path[200];
    int r;

    snprintf(path, sizeof(path), "/containers/%s/archive?path=" DK_WORKSPACE
                                 "&noOverwriteDirNonDir=true", container_id);
    dk__req_init(&rq, "PUT", path);
    rq.upload_fd = fd;
    rq.upload_len = len;
    rq.upload_abort = abort;
    rq.timeout_ms = ARCHIVE_TIMEOUT_MS;
    rq.stall_ms = ARCHIVE_STALL_MS;
    r = dk__conn_call(conn, &rq, &reply, err);
    if (r == CORDON_E_TIMEOUT)
        r = dk__archive_timeout("archive: write into the workspace", err);
    if (r == 0 && (reply.status < 200 || reply.status >= 300))
        r = dk__reply_error(&reply, "archive: write into the workspace", err);
    if (r == CORDON_E_NOT_FOUND)
        r = cordon_error_set(err, CORDON_E_NOT_FOUND, 0,
                             "archive: container %.*s is gone (terminated or expired)",
                             cordon_text_fit(container_id, 12), container_id);
    dk__reply_clear(&reply);
    return r;
}

int dk__archive_put(struct dk_conn *conn, const char *container_id, int fd, const char *what,
                    struct cordon_error *err)
{
    off_t len = lseek(fd, 0, SEEK_END);

    if (len < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "%s: %s", what, strerror(errno));
    return archive_put(conn, container_id, fd, (uint64_t)len, NULL, err);
}

int dk__archive_put_dirs(const struct cordon_resource *res, struct dk_conn *conn,
                         const char *container_id, const char *const *paths, const uid_t *uids,
                         const gid_t *gids, const mode_t *modes, size_t n, const char *what,
                         struct cordon_error *err)
{
    int fd = -1, r = dk__spool_open(res, &fd, err);

    if (r == 0)
        r = cordon_tar_dirs_fd(fd, paths, uids, gids, modes, n, err);
    if (r == 0)
        r = dk__archive_put(conn, container_id, fd, what, err);
    if (fd >= 0)
        close(fd);
    return r;
}

int dk__archive_put_stream(struct dk_conn *conn, const char *container_id, int fd,
                           const int *abort, struct cordon_error *err)
{
    return archive_put(conn, container_id, fd, DK_UPLOAD_STREAM, abort, err);
}

/* ---- the provider's import_tar and export_tar ----------------------------------- */

/* The /workspace volume's share of disk_bytes, the bound of what an import
 * writes there: one too big fails by its size rather than halfway. */
static uint64_t workspace_max(const struct dk_state *st)
{
    struct cordon_disk_split disk;

    return cordon_disk_split(NULL, st->limits.disk_bytes, &disk, NULL) == 0
               ? disk.workspace_bytes
               : st->limits.disk_bytes;
}

/* The daemon's archive of root (in_fd, -1 for none) for the host; only
 * (n_only names, NULL for everything) as export_files asked. The daemon
 * names entries after the directory asked for: the workspace's own names
 * relative to "workspace", a top-level directory's as they are. */
static int export_filter(int in_fd, int out_fd, const char *root,
                         const struct cordon_tar_limits *limits, char *const *only, size_t n_only,
                         struct cordon_error *err)
{
    const struct cordon_tar_export ex = {
        .struct_size = sizeof(ex),
        .root = root,
        .paths = (const char *const *)only,
        .n_paths = n_only,
        .paths_from_root = strcmp(root, "workspace") == 0,
        .max_bytes = limits->max_bytes,
        .max_entries = limits->max_entries,
    };

    return cordon_tar_export_rewrite_fd(in_fd, out_fd, &ex, err);
}

/* What both need first: the state, the normalised path, a spool. */
static int archive_begin(const struct cordon_resource *res, const char *state_json,
                         const char *field, const char *rel, struct dk_state *st,
                         char **ret_norm, int *ret_spool, struct cordon_error *err)
{
    int r = dk__state_parse(res, state_json, true, st, err);

    if (r == 0)
        r = cordon_path_normalize_dir(field, rel != NULL ? rel : "", ret_norm, err);
    if (r == 0)
        r = dk__spool_open(res, ret_spool, err);
    return r;
}

int dk__op_import_tar(struct cordon_resource *res, const char *state_json, const char *dest,
                      int tar_fd, struct cordon_error *err)
{
    struct cordon_workspace_owner owner = { .set_owner = true };
    struct dk_state st = { 0 };
    struct dk_conn *conn = NULL;
    char *norm = NULL;
    int checked = -1, spool = -1, r;

    if (res == NULL || tar_fd < 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "import_tar: resource and tar_fd required");
    r = archive_begin(res, state_json, "dest", dest, &st, &norm, &spool, err);
    if (r == 0)
        r = dk__spool_open(res, &checked, err);
    if (r < 0)
        goto out;
    owner.code_layout = st.code_layout;
    owner.uid = st.uid;
    owner.gid = st.gid;
    /* Checked whole before the daemon sees a byte of it. */
    r = cordon_tar_filter_workspace_fd(tar_fd, checked, spool, norm, &owner,
                                       workspace_max(&st), CORDON_TAR_ENTRIES_MAX, err);
    if (r < 0)
        goto out;
    r = dk__conn_open(&res->engine, &conn, err);
    if (r == 0)
        r = dk__archive_put(conn, st.container_id, spool, "import_tar: spool", err);
out:
    if (checked >= 0)
        close(checked);
    if (spool >= 0)
        close(spool);
    dk__conn_close(conn);
    free(norm);
    dk__state_clear(&st);
    return r;
}

/* ---- import_files: a stream, no spool ------------------------------------------- */

/* The writer's side of the pipe the daemon's PUT reads. */
struct files_job {
    const char *files_json;
    int data_fd;
    int out_fd;                /* the pipe's write end, closed by the job */
    const char *dest;
    struct cordon_workspace_owner owner;
    uint64_t max_bytes;
    int failed;                /* set before out_fd closes: the body is abandoned */
    int r;
    struct cordon_error err;
};

static void *files_job_main(void *arg)
{
    struct files_job *j = arg;

    j->r = cordon_files_tar_workspace_fd(j->files_json, j->data_fd, j->out_fd, j->dest, &j->owner,
                                         j->max_bytes, CORDON_TAR_ENTRIES_MAX, &j->err);
    if (j->r < 0)
        __atomic_store_n(&j->failed, 1, __ATOMIC_SEQ_CST);
    close(j->out_fd);
    return NULL;
}

int dk__op_import_files(struct cordon_resource *res, const char *state_json, const char *dest,
                        const char *files_json, int data_fd, struct cordon_error *err)
{
    struct files_job job = { .files_json = files_json, .data_fd = data_fd, .dest = dest };
    struct dk_state st = { 0 };
    struct dk_conn *conn = NULL;
    sigset_t pipe_only, saved;
    pthread_t thread;
    bool started = false;
    int p[2] = { -1, -1 }, r;

    if (res == NULL || files_json == NULL || data_fd < 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "import_files: resource, files_json and data_fd required");
    cordon_error_init(&job.err);
    r = dk__state_parse(res, state_json, true, &st, err);
    if (r == 0)
        r = dk__conn_open(&res->engine, &conn, err);
    if (r < 0)
        goto out;
    job.owner = (struct cordon_workspace_owner){ .code_layout = st.code_layout, .set_owner = true,
                                                 .uid = st.uid, .gid = st.gid };
    job.max_bytes = workspace_max(&st);
    if (pipe2(p, O_CLOEXEC) != 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "import_files: pipe: %s", strerror(errno));
        goto out;
    }
    job.out_fd = p[1];
    /* The writer gets EPIPE, never SIGPIPE, should the daemon stop
     * reading: the signal stays pending on its thread and ends with it. */
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &saved);
    started = pthread_create(&thread, NULL, files_job_main, &job) == 0;
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (!started) {
        r = cordon_error_set(err, CORDON_E_NOMEM, 0, "import_files: cannot start the writer");
        goto out;
    }
    p[1] = -1; /* the job's now */
    r = dk__archive_put_stream(conn, st.container_id, p[0], &job.failed, err);
    close(p[0]); /* a writer still at it gets EPIPE */
    p[0] = -1;
    pthread_join(thread, NULL);
    /* The stream's own refusal names the file and the daemon's error
     * follows from it; a writer cut off (EPIPE) by the daemon's refusal
     * is the other way round. */
    if (job.r < 0 && (r == 0 || job.err.os_errno != EPIPE)) {
        if (err != NULL)
            *err = job.err;
        r = job.r;
    }
out:
    if (!started && p[1] >= 0)
        close(p[1]);
    if (p[0] >= 0)
        close(p[0]);
    dk__conn_close(conn);
    dk__state_clear(&st);
    return r;
}

/* The daemon's archive of norm (a normalised src) through the filter into
 * tar_fd; only/n_only as for export_filter. */
static int export_src(struct cordon_resource *res, const struct dk_state *st, const char *norm,
                      int spool, int tar_fd, char *const *only, size_t n_only,
                      struct cordon_error *err)
{
    struct cordon_tar_limits limits = { 0 };
    struct dk_conn *conn = NULL;
    struct dk_reply reply = { 0 };
    struct dk_req rq;
    char *path = NULL, *root = NULL;
    bool nested;
    int r = 0;

    /*
     * The daemon follows symlinks in every component of the path but the
     * last. A top-level name cannot be swapped for a link in layout "code"
     * and is never followed as the last component; a deeper src is taken
     * from the archive of the whole workspace, where every directory on
     * the way is an entry of its own and nothing is followed.
     */
    nested = strchr(norm, '/') != NULL;
    if (asprintf(&root, "%s%s%s", nested || norm[0] == '\0' ? "workspace" : "",
                 nested ? "/" : "", norm) < 0) {
        root = NULL;
        r = dk__nomem(err, "export_tar");
        goto out;
    }
    {
        char *where = NULL, *esc = NULL;

        if (asprintf(&where, DK_WORKSPACE "%s%s", nested || norm[0] == '\0' ? "" : "/",
                     nested ? "" : norm) >= 0)
            esc = dk__escape(where);
        if (esc == NULL || asprintf(&path, "/containers/%s/archive?path=%s", st->container_id,
                                    esc) < 0)
            path = NULL;
        free(where);
        free(esc);
        if (path == NULL) {
            r = dk__nomem(err, "export_tar");
            goto out;
        }
    }
    limits.max_bytes = st->limits.disk_bytes;
    limits.max_entries = CORDON_TAR_ENTRIES_MAX;
    r = dk__conn_open(&res->engine, &conn, err);
    if (r < 0)
        goto out;
    dk__req_init(&rq, "GET", path);
    rq.download_fd = spool;
    rq.max_bytes = st->limits.disk_bytes > UINT64_MAX / 2 - EXPORT_SLACK
                       ? UINT64_MAX
                       : 2 * st->limits.disk_bytes + EXPORT_SLACK;
    rq.timeout_ms = ARCHIVE_TIMEOUT_MS;
    rq.stall_ms = ARCHIVE_STALL_MS;
    r = dk__conn_call(conn, &rq, &reply, err);
    if (r == CORDON_E_TIMEOUT)
        r = dk__archive_timeout(only != NULL ? "export_files" : "export_tar", err);
    else if (r == 0 && reply.status == 404 && only != NULL)
        r = 1; /* no such top-level directory: every path under it is missing */
    else if (r == 0 && reply.status == 404)
        r = cordon_error_set(err, CORDON_E_NOT_FOUND, 0,
                             "src: \"%s\" is not in the workspace (or the execution is gone)",
                             norm);
    else if (r == 0 && (reply.status < 200 || reply.status >= 300))
        r = dk__reply_error(&reply, only != NULL ? "export_files" : "export_tar", err);
    if (r == 1) {
        r = export_filter(-1, tar_fd, root, &limits, only, 0, err);
        goto out;
    }
    if (r < 0)
        goto out;
    if (lseek(spool, 0, SEEK_SET) != 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "export: spool: %s", strerror(errno));
        goto out;
    }
    r = export_filter(spool, tar_fd, root, &limits, only, n_only, err);
out:
    dk__reply_clear(&reply);
    dk__conn_close(conn);
    free(root);
    free(path);
    return r;
}

int dk__op_export_tar(struct cordon_resource *res, const char *state_json, const char *src,
                      int tar_fd, struct cordon_error *err)
{
    struct dk_state st = { 0 };
    char *norm = NULL;
    int spool = -1, r;

    if (res == NULL || tar_fd < 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "export_tar: resource and tar_fd required");
    r = archive_begin(res, state_json, "src", src, &st, &norm, &spool, err);
    if (r == 0)
        r = export_src(res, &st, norm, spool, tar_fd, NULL, 0, err);
    if (spool >= 0)
        close(spool);
    free(norm);
    dk__state_clear(&st);
    return r;
}

/*
 * export_files (ABI 1.2): the daemon's archive of the one top-level
 * directory every path lies in (output/ for a run's collect step), or of the
 * whole workspace when they lie in several, filtered down to the named
 * paths: what else lies there is neither counted nor written. A path under
 * a symbolic link is not in the daemon's archive (it does not descend into
 * one) and is left out, as a missing path is.
 */
int dk__op_export_files(struct cordon_resource *res, const char *state_json, const char *paths_json,
                        int tar_fd, struct cordon_error *err)
{
    struct dk_state st = { 0 };
    cJSON *doc = NULL;
    const cJSON *item;
    char **only = NULL, *top = NULL, *norm = NULL;
    size_t n = 0, top_len = 0;
    bool whole = false;
    int spool = -1, r;

    if (res == NULL || tar_fd < 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "export_files: resource and tar_fd required");
    doc = paths_json != NULL ? cJSON_ParseWithLength(paths_json, strnlen(paths_json, 1u << 20))
                             : NULL;
    if (!cJSON_IsArray(doc)) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0, "paths: must be a JSON array of paths");
        goto out;
    }
    if (cJSON_GetArraySize(doc) > CORDON_TAR_PATHS_MAX) {
        r = cordon_error_set(err, CORDON_E_LIMIT, 0, "paths: %d entries exceed the limit of %d",
                             cJSON_GetArraySize(doc), CORDON_TAR_PATHS_MAX);
        goto out;
    }
    only = calloc((size_t)cJSON_GetArraySize(doc) + 1, sizeof(*only));
    if (only == NULL) {
        r = dk__nomem(err, "export_files");
        goto out;
    }
    cJSON_ArrayForEach(item, doc) {
        char field[32];
        size_t len;

        snprintf(field, sizeof(field), "paths[%zu]", n);
        if (!cJSON_IsString(item)) {
            r = cordon_error_set(err, CORDON_E_INVALID, 0, "%s: must be a string", field);
            goto out;
        }
        if ((r = cordon_path_normalize(field, item->valuestring, &only[n], err)) < 0)
            goto out;
        len = strcspn(only[n], "/");
        if (only[n][len] == '\0') {
            /* a top-level name itself: the daemon's archive of it is not a
             * directory's (a file, a link), so it comes from the workspace's */
            whole = true;
        } else if (n == 0) {
            top = only[0];
            top_len = len;
        } else if (top != NULL && (len != top_len || strncmp(only[n], top, len) != 0)) {
            top = NULL; /* several top-level names: the whole workspace */
        }
        n++;
    }
    if (whole)
        top = NULL;
    if (n == 0) {
        r = export_filter(-1, tar_fd, "workspace", &(struct cordon_tar_limits){ 0 }, only, 0, err);
        goto out;
    }
    r = archive_begin(res, state_json, "paths", "", &st, &norm, &spool, err);
    if (r == 0) {
        char *src = top != NULL ? strndup(top, top_len) : strdup("");

        r = src != NULL ? export_src(res, &st, src, spool, tar_fd, only, n, err)
                        : dk__nomem(err, "export_files");
        free(src);
    }
out:
    for (size_t i = 0; only != NULL && i < n; i++)
        free(only[i]);
    free(only);
    free(norm);
    cJSON_Delete(doc);
    if (spool >= 0)
        close(spool);
    dk__state_clear(&st);
    return r;
}
