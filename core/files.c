/*
 * core: files in an execution's workspace (json.md §13) — write, read,
 * list and remove one path, on the provider's import_files, export_files
 * and export_tar, streamed through a pipe so that neither end holds a
 * file, and bounded by the execution's disk_bytes, never by
 * max_output_bytes.
 *
 * Every byte of a read comes from the sandbox, which may be hostile: the
 * stream is read here again with the rules the provider promised (one
 * entry, named as asked, a regular file no larger than the disk limit),
 * and a symbolic link is reported as a link, never followed. A write goes
 * through the provider's import_files, which refuses a link in the way.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cordon/cordon.h>
#include <cordon/sdk/fs.h>
#include <cordon/sdk/path.h>
#include <cordon/text.h>
#include "sdk/archive-lazy.h"
#include "core/hostflow.h"
#include "core/pump.h"
#include "core/record.h"

#define FILES_CHUNK (256u << 10)
/* Entries of a listing: one directory level, in the result document. */
#define FILES_LIST_MAX 10000

/* One call on an execution: its record (locked), the bound provider and
 * the provider's state, and the limits it was provisioned with. */
struct files_call {
    struct cordon__record *rec;
    struct cordon__bound b;
    char *state;
    struct cordon_limits limits;
};

/* Normalise a path the caller gave: "/workspace/x", "x" and (when root is
 * allowed) "/workspace", "." or "" name a place in the workspace; any
 * other absolute path, a ".." component, control characters are refused. */
static int files_path(const char *path, bool root_ok, char **ret, struct cordon_error *err)
{
    const char *p = path;
    int r;

    if (path == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "path: required");
    if (strcmp(p, "/workspace") == 0)
        p = "";
    else if (strncmp(p, "/workspace/", 11) == 0)
        p += 11;
    else if (p[0] == '/')
        return cordon_error_set(err, CORDON_E_UNSAFE, 0, "path: \"%.*s\" must be under /workspace",
                                cordon_text_fit(path, 200), path);
    if ((r = cordon_path_normalize_dir("path", p, ret, err)) < 0)
        return r;
    if (!root_ok && (*ret)[0] == '\0') {
        free(*ret);
        *ret = NULL;
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "path: names the workspace itself; a file inside it is required");
    }
    return 0;
}

static void files_call_close(struct files_call *c)
{
    cordon__unbind_provider(&c->b, NULL);
    cordon__record_close(c->rec);
    free(c->state);
    memset(c, 0, sizeof(*c));
}

/* Open, lock and bind the execution; an expired one is destroyed, as
 * every verb on an execution destroys it. */
static int files_call_open(struct cordon_ctx *ctx, const char *id, struct files_call *c,
                           struct cordon_error *err)
{
    int r;

    memset(c, 0, sizeof(*c));
    if ((r = cordon__record_open(ctx, id, false, &c->rec, err)) < 0 ||
        (r = cordon__bind_record(ctx, c->rec, &c->b, err)) < 0)
        goto fail;
    if (cordon__record_expired(c->rec, NULL)) {
        cordon__execution_destroy_bound(ctx, c->rec, &c->b, NULL);
        r = cordon_error_set(err, CORDON_E_TIMEOUT, 0, "execution %s: expired (terminated)", id);
        goto fail;
    }
    if ((r = cordon__record_limits(c->rec, &c->limits, err)) < 0)
        goto fail;
    c->state = cordon__record_state(c->rec);
    if (c->state == NULL) {
        r = cordon_error_set(err, CORDON_E_IO, 0, "execution %s: not ready", id);
        goto fail;
    }
    return 0;
fail:
    files_call_close(c);
    return r;
}

static int files_nomem(struct cordon_error *err)
{
    return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
}

/* The result every verb starts from: {"ok": true, "execution_id", "path"}. */
static cJSON *files_result(const char *id, const char *norm)
{
    cJSON *result = cJSON_CreateObject();

    cJSON_AddBoolToObject(result, "ok", true);
    cJSON_AddStringToObject(result, "execution_id", id);
    cJSON_AddStringToObject(result, "path", norm);
    return result;
}

/* A write's or a read's result: with the file's size and permission bits. */
static int files_done(const char *id, const char *norm, uint64_t size, unsigned mode, char **ret_json,
                      struct cordon_error *err)
{
    cJSON *result = files_result(id, norm);

    cJSON_AddNumberToObject(result, "size", (double)size);
    cJSON_AddNumberToObject(result, "mode", mode);
    return cordon__json_done(0, result, ret_json, err);
}

/* export_files' argument for the one path norm: ["norm"] (malloc'd). */
static char *one_path_json(const char *norm)
{
    cJSON *paths = cJSON_CreateArray();
    char *text = NULL;

    if (paths != NULL && cJSON_AddItemToArray(paths, cJSON_CreateString(norm)))
        text = cJSON_PrintUnformatted(paths);
    cJSON_Delete(paths);
    return text;
}

/* Write all of buf to fd (the sdk's loop), the failure named. */
static int write_all(int fd, const char *buf, size_t len, struct cordon_error *err)
{
    int r = cordon_fs_write_all(fd, buf, len);

    return r < 0 ? cordon_error_set(err, CORDON_E_IO, -r, "write: %s", strerror(-r)) : 0;
}

/*
 * The bytes of data_fd as a regular file the provider can take with a
 * size: data_fd itself when it is one (its size from the current offset),
 * else a spool (an unlinked file in the state directory) filled to at most
 * limit bytes. *ret_fd is data_fd or the spool (the caller closes the
 * spool when it differs).
 */
static int files_source(struct cordon_ctx *ctx, int data_fd, uint64_t limit, int *ret_fd,
                        uint64_t *ret_size, struct cordon_error *err)
{
    struct stat st;
    uint64_t total = 0;
    char *buf = NULL;
    off_t at;
    int fd = -1, r = 0;

    if (fstat(data_fd, &st) < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "data: fstat: %s", strerror(errno));
    if (S_ISREG(st.st_mode) && (at = lseek(data_fd, 0, SEEK_CUR)) >= 0) {
        uint64_t size = st.st_size > at ? (uint64_t)(st.st_size - at) : 0;
        if (size > limit)
            return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                    "size: %llu bytes exceed the execution's disk_bytes limit of %llu",
                                    (unsigned long long)size, (unsigned long long)limit);
        *ret_fd = data_fd;
        *ret_size = size;
        return 0;
    }
    fd = open(ctx->state_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "data: spool in %s: %s", ctx->state_dir,
                                strerror(errno));
    if ((buf = malloc(FILES_CHUNK)) == NULL) {
        r = files_nomem(err);
        goto out;
    }
    for (;;) {
        ssize_t n = read(data_fd, buf, FILES_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r = cordon_error_set(err, CORDON_E_IO, errno, "data: read: %s", strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        total += (uint64_t)n;
        if (total > limit) {
            r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                                 "size: more than the execution's disk_bytes limit of %llu bytes",
                                 (unsigned long long)limit);
            goto out;
        }
        if ((r = write_all(fd, buf, (size_t)n, err)) < 0)
            goto out;
    }
    if (lseek(fd, 0, SEEK_SET) < 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "data: lseek: %s", strerror(errno));
        goto out;
    }
    *ret_fd = fd;
    *ret_size = total;
    fd = -1;
out:
    if (fd >= 0)
        close(fd);
    free(buf);
    return r;
}

/*
 * Run `rm FLAG -- norm` in the execution; *ret_doc is the exec's result.
 * The provider ABI has no slot that removes: rm runs inside the sandbox,
 * with its user, its root and its mounts, through the ordinary exec, with
 * a fixed argv (no shell) and "--" before the path. It removes nothing the
 * sandboxed code could not remove itself, and a link is resolved where the
 * code lives, never on the host.
 */
static int files_rm(struct cordon_ctx *ctx, const char *id, const char *flag, const char *norm,
                    cJSON **ret_doc, struct cordon_error *err)
{
    cJSON *req = cJSON_CreateObject(), *args;
    char *text = NULL, *reply = NULL;
    int r;

    cJSON_AddStringToObject(req, "command", "rm");
    args = cJSON_AddArrayToObject(req, "args");
    cJSON_AddItemToArray(args, cJSON_CreateString(flag));
    cJSON_AddItemToArray(args, cJSON_CreateString("--"));
    cJSON_AddItemToArray(args, cJSON_CreateString(norm));
    cJSON_AddStringToObject(req, "cwd", "/workspace");
    if ((text = cJSON_PrintUnformatted(req)) == NULL)
        r = files_nomem(err);
    else if ((r = cordon_exec_json(ctx, id, text, -1, -1, &reply, err)) == 0 &&
             (*ret_doc = cJSON_Parse(reply)) == NULL)
        r = files_nomem(err);
    cJSON_Delete(req);
    free(reply);
    free(text);
    return r;
}

int cordon_files_write_json(struct cordon_ctx *ctx, const char *execution_id, const char *path,
                            uint32_t mode, int data_fd, char **ret_json, struct cordon_error *err)
{
    struct files_call c = { 0 };
    struct cordon_error perr;
    cJSON *manifest = NULL, *file;
    char *norm = NULL, *files_json = NULL;
    uint64_t size = 0;
    bool partial = false;
    int r, fd = -1;

    if (ctx == NULL || execution_id == NULL || ret_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "files write: ctx, execution_id and ret_json required");
    if (data_fd < 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "data_fd: required (an open descriptor)");
    if (mode > 0777)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "mode: %#o has bits beyond 0777", mode);
    if ((r = files_path(path, false, &norm, err)) < 0)
        return r;
    if ((r = files_call_open(ctx, execution_id, &c, err)) < 0)
        goto out;
    if (c.b.p->vt.import_files == NULL) {
        r = cordon_error_set(err, CORDON_E_UNSUPPORTED, 0,
                             "files write: provider %s has no import_files (provider ABI 1.1)", c.b.p->id);
        goto out;
    }
    if ((r = files_source(ctx, data_fd, c.limits.disk_bytes, &fd, &size, err)) < 0)
        goto out;
    manifest = cJSON_CreateObject();
    file = cJSON_CreateObject();
    if (manifest == NULL || file == NULL ||
        !cJSON_AddItemToArray(cJSON_AddArrayToObject(manifest, "files"), file)) {
        cJSON_Delete(file);
        r = files_nomem(err);
        goto out;
    }
    cJSON_AddStringToObject(file, "path", norm);
    cJSON_AddNumberToObject(file, "size", (double)size);
    cJSON_AddNumberToObject(file, "mode", mode);
    if ((files_json = cJSON_PrintUnformatted(manifest)) == NULL) {
        r = files_nomem(err);
        goto out;
    }
    cordon_error_init(&perr);
    r = c.b.p->vt.import_files(c.b.res, c.state, "", files_json, fd, &perr);
    if (r != 0) {
        r = cordon_error_set(err, r < 0 ? r : CORDON_E_PROVIDER, perr.os_errno, "files write: %s",
                             perr.message);
        /* A mechanism that failed part-way (the sandbox's disk full) may
         * have left the start of the file, which the Docker daemon does not
         * take back; the file it replaced is gone either way. A refusal
         * (a link in the way, a limit) wrote nothing and keeps what is there. */
        partial = r == CORDON_E_PROVIDER || r == CORDON_E_IO;
        goto out;
    }
    r = files_done(execution_id, norm, size, mode, ret_json, err);
out:
    if (fd >= 0 && fd != data_fd)
        close(fd);
    files_call_close(&c);
    if (partial) {
        struct cordon_error ignored;
        cJSON *doc = NULL;

        cordon_error_init(&ignored);
        files_rm(ctx, execution_id, "-f", norm, &doc, &ignored);
        cJSON_Delete(doc);
    }
    cJSON_Delete(manifest);
    free(files_json);
    free(norm);
    return r;
}

/* ---- reading the provider's stream ------------------------------------------- */

/* What the producer thread runs: export_files of one path, or export_tar
 * of a directory. */
struct export_job {
    const struct files_call *c;
    const char *paths_json;   /* export_files; NULL: export_tar of dir */
    const char *dir;
};

static int export_produce(void *arg, int fd, struct cordon_error *err)
{
    struct export_job *job = arg;
    const struct cordon_provider_v1 *vt = &job->c->b.p->vt;
    struct cordon_error perr;
    sigset_t pipe_set;
    int r;

    /* the reader may stop early (a refused entry): EPIPE, not a signal */
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, NULL);
    cordon_error_init(&perr);
    if (job->paths_json != NULL)
        r = vt->export_files(job->c->b.res, job->c->state, job->paths_json, fd, &perr);
    else
        r = vt->export_tar(job->c->b.res, job->c->state, job->dir, fd, &perr);
    if (r != 0)
        return cordon_error_set(err, r < 0 ? r : CORDON_E_PROVIDER, perr.os_errno, "%s: %s",
                                job->paths_json != NULL ? "export_files" : "export_tar", perr.message);
    return 0;
}

/* A reader of the provider's stream on a pump. */
struct stream {
    struct cordon__pump pump;
    struct archive *a;
    int fd;
    bool started;
};

static int stream_open(struct stream *s, struct export_job *job, struct cordon_error *err)
{
    int r;

    memset(s, 0, sizeof(*s));
    s->fd = -1;
    if ((r = cordon__archive_load(err)) < 0)
        return r;
    if ((r = cordon__pump_start(&s->pump, export_produce, job, &s->fd, err)) < 0)
        return r;
    s->started = true;
    s->a = archive_read_new();
    if (s->a == NULL || archive_read_support_format_tar(s->a) != ARCHIVE_OK ||
        archive_read_support_format_empty(s->a) != ARCHIVE_OK ||
        archive_read_support_filter_none(s->a) != ARCHIVE_OK ||
        archive_read_open_fd(s->a, s->fd, FILES_CHUNK) != ARCHIVE_OK)
        return cordon_error_set(err, CORDON_E_PROVIDER, 0, "the provider's stream: %s",
                                s->a != NULL && archive_error_string(s->a) != NULL
                                    ? archive_error_string(s->a) : "cannot be read");
    return 0;
}

/*
 * Stop reading and join the producer. The consumer's own refusal wins:
 * a producer cut off by it fails with EPIPE, which says nothing. With
 * early (the reader had what it needed before the end) a producer failure
 * after that is not the caller's concern either.
 */
static int stream_close(struct stream *s, int r, bool early, struct cordon_error *err)
{
    struct cordon_error perr;
    int pr;

    if (s->a != NULL)
        archive_read_free(s->a);
    s->a = NULL;
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    if (!s->started)
        return r;
    s->started = false;
    cordon_error_init(&perr);
    pr = cordon__pump_join(&s->pump, 0, &perr);
    if (r < 0 || early)
        return r;
    if (pr < 0) {
        *err = perr;
        return pr;
    }
    return 0;
}

static int stream_error(struct stream *s, const char *what, struct cordon_error *err)
{
    const char *why = archive_error_string(s->a);
    return cordon_error_set(err, CORDON_E_PROVIDER, 0, "the provider's stream: %s: %s", what,
                            why != NULL ? why : "unreadable");
}

/* An entry's name as the reader compares it: no "./" lead, no trailing '/'. */
static void entry_name(struct archive_entry *e, char *buf, size_t size)
{
    const char *n = archive_entry_pathname(e);
    size_t len;

    if (n == NULL)
        n = "";
    while (strncmp(n, "./", 2) == 0)
        n += 2;
    snprintf(buf, size, "%s", strcmp(n, ".") == 0 ? "" : n);
    len = strlen(buf);
    while (len > 0 && buf[len - 1] == '/')
        buf[--len] = '\0';
}

static const char *type_name(unsigned t)
{
    switch (t) {
    case AE_IFREG: return "file";
    case AE_IFDIR: return "directory";
    case AE_IFLNK: return "symlink";
    default: return "other";
    }
}

/* The first entry of a one-path stream: it must be the path asked for.
 * An empty stream is CORDON_E_NOT_FOUND. */
static int stream_first(struct stream *s, const char *norm, struct archive_entry **ret,
                        struct cordon_error *err)
{
    struct archive_entry *e;
    char name[CORDON_PATH_MAX + 2];
    int ar = archive_read_next_header(s->a, &e);

    if (ar == ARCHIVE_EOF)
        return cordon_error_set(err, CORDON_E_NOT_FOUND, 0,
                                "path: \"%.*s\" not found in the workspace (missing, a parent missing, or a kind "
                                "of file that is never exported: a FIFO, device or socket)",
                                cordon_text_fit(norm, 300), norm);
    if (ar != ARCHIVE_OK && ar != ARCHIVE_WARN)
        return stream_error(s, "header", err);
    entry_name(e, name, sizeof(name));
    if (strcmp(name, norm) != 0)
        return cordon_error_set(err, CORDON_E_PROVIDER, 0,
                                "the provider's stream: entry \"%.*s\" is not the path asked for",
                                cordon_text_fit(name, 200), name);
    *ret = e;
    return 0;
}

int cordon_files_read_json(struct cordon_ctx *ctx, const char *execution_id, const char *path,
                           int out_fd, char **ret_json, struct cordon_error *err)
{
    struct files_call c = { 0 };
    struct stream s = { .fd = -1 };
    struct export_job job = { &c, NULL, NULL };
    struct archive_entry *e = NULL;
    char *norm = NULL, *paths_json = NULL, *buf = NULL;
    uint64_t size = 0, got = 0;
    unsigned mode = 0;
    int r;

    if (ctx == NULL || execution_id == NULL || ret_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "files read: ctx, execution_id and ret_json required");
    if (out_fd < 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "out_fd: required (an open descriptor)");
    if ((r = files_path(path, false, &norm, err)) < 0)
        return r;
    if ((r = files_call_open(ctx, execution_id, &c, err)) < 0)
        goto out;
    if (c.b.p->vt.export_files == NULL) {
        r = cordon_error_set(err, CORDON_E_UNSUPPORTED, 0,
                             "files read: provider %s has no export_files (provider ABI 1.2)", c.b.p->id);
        goto out;
    }
    if ((paths_json = one_path_json(norm)) == NULL || (buf = malloc(FILES_CHUNK)) == NULL) {
        r = files_nomem(err);
        goto out;
    }
    job.paths_json = paths_json;
    if ((r = stream_open(&s, &job, err)) < 0 || (r = stream_first(&s, norm, &e, err)) < 0)
        goto done;
    if (archive_entry_filetype(e) != AE_IFREG) {
        r = cordon_error_set(err, archive_entry_filetype(e) == AE_IFDIR ? CORDON_E_INVALID : CORDON_E_UNSAFE, 0,
                             "path: \"%.*s\" is a %s; read takes a regular file (a link is never followed)",
                             cordon_text_fit(norm, 300), norm, type_name(archive_entry_filetype(e)));
        goto done;
    }
    /* nothing in the sandbox can be larger than its disk */
    size = archive_entry_size_is_set(e) ? (uint64_t)archive_entry_size(e) : 0;
    mode = (unsigned)archive_entry_perm(e) & 0777;
    if (size > c.limits.disk_bytes) {
        r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                             "the provider's stream: entry \"%.*s\" of %llu bytes exceeds the execution's "
                             "disk_bytes limit of %llu", cordon_text_fit(norm, 300), norm,
                             (unsigned long long)size, (unsigned long long)c.limits.disk_bytes);
        goto done;
    }
    for (;;) {
        la_ssize_t n = archive_read_data(s.a, buf, FILES_CHUNK);
        if (n < 0) {
            r = stream_error(&s, "data", err);
            goto done;
        }
        if (n == 0)
            break;
        got += (uint64_t)n;
        if (got > size) {
            r = cordon_error_set(err, CORDON_E_PROVIDER, 0, "the provider's stream: more data than the "
                                 "entry's size of %llu", (unsigned long long)size);
            goto done;
        }
        if ((r = write_all(out_fd, buf, (size_t)n, err)) < 0)
            goto done;
    }
    if (got != size) {
        r = cordon_error_set(err, CORDON_E_PROVIDER, 0, "the provider's stream: %llu of %llu bytes",
                             (unsigned long long)got, (unsigned long long)size);
        goto done;
    }
    /* one path asked, one entry: anything after it is refused, and the
     * reader stops there (an endless stream is not read) */
    r = archive_read_next_header(s.a, &e);
    if (r == ARCHIVE_EOF)
        r = 0;
    else
        r = cordon_error_set(err, CORDON_E_PROVIDER, 0,
                             "the provider's stream: more than the one entry asked for");
done:
    r = stream_close(&s, r, false, err);
    if (r == 0)
        r = files_done(execution_id, norm, size, mode, ret_json, err);
out:
    files_call_close(&c);
    free(paths_json);
    free(norm);
    free(buf);
    return r;
}

/* ---- list -------------------------------------------------------------------- */

/* {"name", "type", "size", "mode", "mtime", "target"} of an entry. */
static cJSON *entry_doc(struct archive_entry *e, const char *name)
{
    cJSON *d = cJSON_CreateObject();
    unsigned t = archive_entry_filetype(e);

    cJSON_AddStringToObject(d, "name", name);
    cJSON_AddStringToObject(d, "type", type_name(t));
    cJSON_AddNumberToObject(d, "size", t == AE_IFREG ? (double)archive_entry_size(e) : 0);
    cJSON_AddNumberToObject(d, "mode", (unsigned)archive_entry_perm(e) & 07777);
    cJSON_AddNumberToObject(d, "mtime", (double)archive_entry_mtime(e));
    if (t == AE_IFLNK) {
        const char *target = archive_entry_symlink(e);
        cJSON_AddStringToObject(d, "target", target != NULL ? target : "");
    }
    return d;
}

/* The directory's children from export_tar of it: its direct entries
 * only, every deeper one read past (its bytes bounded by disk_bytes). */
static int list_dir(struct files_call *c, const char *norm, cJSON *entries, struct cordon_error *err)
{
    struct export_job job = { c, NULL, norm };
    struct stream s;
    struct archive_entry *e;
    char name[CORDON_PATH_MAX + 2], *checked = NULL;
    uint64_t n_entries = 0, bytes = 0;
    int r, n = 0;

    if ((r = stream_open(&s, &job, err)) < 0)
        return stream_close(&s, r, false, err);
    for (;;) {
        int ar = archive_read_next_header(s.a, &e);
        if (ar == ARCHIVE_EOF)
            break;
        if (ar != ARCHIVE_OK && ar != ARCHIVE_WARN) {
            r = stream_error(&s, "header", err);
            break;
        }
        if (++n_entries > CORDON_TAR_ENTRIES_MAX) {
            r = cordon_error_set(err, CORDON_E_LIMIT, 0, "the provider's stream: more than %u entries",
                                 CORDON_TAR_ENTRIES_MAX);
            break;
        }
        if (archive_entry_filetype(e) == AE_IFREG)
            bytes += (uint64_t)archive_entry_size(e);
        if (bytes > c->limits.disk_bytes) {
            r = cordon_error_set(err, CORDON_E_LIMIT, 0, "the provider's stream: more than the execution's "
                                 "disk_bytes limit of %llu", (unsigned long long)c->limits.disk_bytes);
            break;
        }
        entry_name(e, name, sizeof(name));
        if (name[0] == '\0')
            continue;
        /* every name is held to the caller's rules, the deeper ones too */
        if ((r = cordon_path_normalize("the provider's stream: entry", name, &checked, err)) < 0)
            break;
        free(checked);
        checked = NULL;
        if (strchr(name, '/') != NULL)
            continue;
        if (++n > FILES_LIST_MAX) {
            r = cordon_error_set(err, CORDON_E_LIMIT, 0, "path: \"%.*s\" holds more than %d entries",
                                 cordon_text_fit(norm, 300), norm, FILES_LIST_MAX);
            break;
        }
        cJSON_AddItemToArray(entries, entry_doc(e, name));
    }
    return stream_close(&s, r, false, err);
}

int cordon_files_list_json(struct cordon_ctx *ctx, const char *execution_id, const char *path,
                           char **ret_json, struct cordon_error *err)
{
    struct files_call c = { 0 };
    cJSON *result = NULL, *entries;
    char *norm = NULL, *paths_json = NULL;
    const char *type = "directory";
    int r;

    if (ctx == NULL || execution_id == NULL || ret_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "files list: ctx, execution_id and ret_json required");
    if ((r = files_path(path != NULL ? path : "", true, &norm, err)) < 0)
        return r;
    if ((r = files_call_open(ctx, execution_id, &c, err)) < 0)
        goto out;
    if (c.b.p->vt.export_files == NULL) {
        r = cordon_error_set(err, CORDON_E_UNSUPPORTED, 0,
                             "files list: provider %s has no export_files (provider ABI 1.2)", c.b.p->id);
        goto out;
    }
    result = files_result(execution_id, norm);
    entries = cJSON_CreateArray();
    if (norm[0] != '\0') {
        /* What the path is, from export_files, which refuses a link among
         * its parents and reads nothing but the one entry's header here. */
        struct export_job job = { &c, NULL, NULL };
        struct stream s;
        struct archive_entry *e = NULL;

        if ((paths_json = one_path_json(norm)) == NULL) {
            cJSON_Delete(entries);
            r = files_nomem(err);
            goto out;
        }
        job.paths_json = paths_json;
        r = stream_open(&s, &job, err);
        if (r == 0)
            r = stream_first(&s, norm, &e, err);
        if (r == 0) {
            type = type_name(archive_entry_filetype(e));
            if (archive_entry_filetype(e) != AE_IFDIR) {
                const char *base = strrchr(norm, '/');
                cJSON_AddItemToArray(entries, entry_doc(e, base != NULL ? base + 1 : norm));
            }
        }
        r = stream_close(&s, r, true, err);
        if (r < 0) {
            cJSON_Delete(entries);
            goto out;
        }
    }
    if (strcmp(type, "directory") == 0 && (r = list_dir(&c, norm, entries, err)) < 0) {
        cJSON_Delete(entries);
        goto out;
    }
    cJSON_AddStringToObject(result, "type", type);
    cJSON_AddItemToObject(result, "entries", entries);
    r = cordon__json_done(0, result, ret_json, err);
    result = NULL;
out:
    files_call_close(&c);
    cJSON_Delete(result);
    free(paths_json);
    free(norm);
    return r;
}

/* ---- remove ------------------------------------------------------------------ */

int cordon_files_remove_json(struct cordon_ctx *ctx, const char *execution_id, const char *path,
                             char **ret_json, struct cordon_error *err)
{
    cJSON *doc = NULL;
    const cJSON *status, *code, *stderr_text;
    char *norm = NULL;
    int r;

    if (ctx == NULL || execution_id == NULL || ret_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "files remove: ctx, execution_id and ret_json required");
    if ((r = files_path(path, false, &norm, err)) < 0)
        return r;
    if ((r = files_rm(ctx, execution_id, "-r", norm, &doc, err)) < 0)
        goto out;
    status = cJSON_GetObjectItemCaseSensitive(doc, "status");
    code = cJSON_GetObjectItemCaseSensitive(doc, "exit_code");
    stderr_text = cJSON_GetObjectItemCaseSensitive(doc, "stderr");
    if (!cJSON_IsString(status) || strcmp(status->valuestring, "exited") != 0) {
        r = cordon_error_set(err, CORDON_E_IO, 0, "files remove: rm in the execution ended: %s",
                             cJSON_IsString(status) ? status->valuestring : "(no status)");
        goto out;
    }
    if (!cJSON_IsNumber(code) || code->valueint != 0) {
        const char *msg = cJSON_IsString(stderr_text) ? stderr_text->valuestring : "";
        int len = (int)strcspn(msg, "\n");
        r = cordon_error_set(err, strstr(msg, "No such file") != NULL ? CORDON_E_NOT_FOUND : CORDON_E_IO, 0,
                             "files remove: rm in the execution exited %d: %.*s",
                             cJSON_IsNumber(code) ? code->valueint : -1, len > 300 ? 300 : len, msg);
        goto out;
    }
    r = cordon__json_done(0, files_result(execution_id, norm), ret_json, err);
out:
    cJSON_Delete(doc);
    free(norm);
    return r;
}
