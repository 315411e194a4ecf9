/* core: execution records in the state directory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cordon/sdk/fs.h>
#include "core/record.h"

#define RECORD_FILE "record.json"
#define RECORD_MAX_BYTES (1u << 20)

/* <state_dir>/executions, created 0700 on first use. */
static int executions_dir(struct cordon_ctx *ctx, int *ret_fd, struct cordon_error *err)
{
    int sfd = open(ctx->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r;

    if (sfd < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "state_dir %s: %s", ctx->state_dir,
                                strerror(errno));
    if (mkdirat(sfd, "executions", 0700) < 0 && errno != EEXIST) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "state_dir %s/executions: %s",
                             ctx->state_dir, strerror(errno));
        close(sfd);
        return r;
    }
    r = cordon_fs_open_beneath(sfd, "executions", O_RDONLY | O_DIRECTORY, 0, ret_fd, err);
    close(sfd);
    return r;
}

static int check_id(const char *id, struct cordon_error *err)
{
    return cordon_execution_id_check("execution_id", id, err);
}

static struct cordon__record *record_new(const char *id, int dir_fd)
{
    struct cordon__record *rec = calloc(1, sizeof(*rec));

    if (rec == NULL)
        return NULL;
    snprintf(rec->id, sizeof(rec->id), "%s", id);
    rec->dir_fd = dir_fd;
    return rec;
}

/* rec->doc into record.json, replaced atomically and fsync'd. */
static int record_write(struct cordon__record *rec, struct cordon_error *err)
{
    char *text = cJSON_Print(rec->doc);
    int r;

    if (text == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "record %s: out of memory", rec->id);
    r = cordon_fs_write_atomic(rec->dir_fd, RECORD_FILE, text, strlen(text), 0600, err);
    free(text);
    return r;
}

int cordon__record_save(struct cordon__record *rec, struct cordon_error *err)
{
    return record_write(rec, err);
}

int cordon__record_create(struct cordon_ctx *ctx, const char *id, const cJSON *doc,
                          struct cordon__record **ret, struct cordon_error *err)
{
    struct cordon__record *rec = NULL;
    int efd = -1, dfd = -1, r;

    if ((r = check_id(id, err)) < 0 || (r = executions_dir(ctx, &efd, err)) < 0)
        return r;
    if (mkdirat(efd, id, 0700) < 0) {
        r = cordon_error_set(err, errno == EEXIST ? CORDON_E_EXISTS : CORDON_E_IO, errno,
                             "execution_id: %s %s", id,
                             errno == EEXIST ? "already exists" : strerror(errno));
        close(efd);
        return r;
    }
    r = cordon_fs_open_beneath(efd, id, O_RDONLY | O_DIRECTORY, 0, &dfd, err);
    if (r == 0 && flock(dfd, LOCK_EX) < 0)
        r = cordon_error_set(err, CORDON_E_IO, errno, "record %s: flock: %s", id, strerror(errno));
    if (r == 0 && (rec = record_new(id, dfd)) == NULL)
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
    if (r == 0) {
        dfd = -1;
        rec->doc = cJSON_Duplicate(doc, 1);
        r = rec->doc != NULL ? cordon__record_save(rec, err)
                             : cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
    }
    if (r < 0) {
        cordon__record_close(rec);
        if (dfd >= 0)
            close(dfd);
        cordon_fs_remove_tree(efd, id, NULL);
        close(efd);
        return r;
    }
    close(efd);
    *ret = rec;
    return 0;
}

static int record_load(struct cordon_ctx *ctx, const char *id, int lock, struct cordon__record **ret,
                       struct cordon_error *err);

int cordon__record_open(struct cordon_ctx *ctx, const char *id, bool nowait,
                        struct cordon__record **ret, struct cordon_error *err)
{
    return record_load(ctx, id, LOCK_EX | (nowait ? LOCK_NB : 0), ret, err);
}

int cordon__record_peek(struct cordon_ctx *ctx, const char *id, struct cordon__record **ret,
                        struct cordon_error *err)
{
    return record_load(ctx, id, 0, ret, err);
}

static int record_load(struct cordon_ctx *ctx, const char *id, int lock, struct cordon__record **ret,
                       struct cordon_error *err)
{
    struct cordon__record *rec = NULL;
    int efd = -1, dfd = -1, r;
    char *text = NULL;
    size_t len = 0;

    if ((r = check_id(id, err)) < 0 || (r = executions_dir(ctx, &efd, err)) < 0)
        return r;
    r = cordon_fs_open_beneath(efd, id, O_RDONLY | O_DIRECTORY, 0, &dfd, NULL);
    close(efd);
    if (r < 0)
        return cordon_error_set(err, CORDON_E_NOT_FOUND, 0, "execution %s: no such execution", id);
    if (lock != 0 && flock(dfd, lock) < 0) {
        r = errno == EWOULDBLOCK
                ? cordon_error_set(err, CORDON_E_BUSY, errno, "execution %s: busy (another call holds it)", id)
                : cordon_error_set(err, CORDON_E_IO, errno, "record %s: flock: %s", id, strerror(errno));
        goto fail;
    }
    /* Removed while we waited for the lock: as good as never there. */
    r = cordon_fs_read_file(dfd, RECORD_FILE, RECORD_MAX_BYTES, &text, &len, NULL);
    if (r < 0) {
        r = cordon_error_set(err, CORDON_E_NOT_FOUND, 0, "execution %s: no such execution", id);
        goto fail;
    }
    rec = record_new(id, dfd);
    if (rec == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
        goto fail;
    }
    dfd = -1;
    rec->doc = cJSON_Parse(text);
    if (!cJSON_IsObject(rec->doc)) {
        r = cordon_error_set(err, CORDON_E_IO, 0, "record %s: %s/executions/%s/%s is not a JSON object",
                             id, ctx->state_dir, id, RECORD_FILE);
        goto fail;
    }
    free(text);
    *ret = rec;
    return 0;
fail:
    free(text);
    cordon__record_close(rec);
    if (dfd >= 0)
        close(dfd);
    return r;
}

int cordon__record_remove(struct cordon_ctx *ctx, struct cordon__record *rec,
                          struct cordon_error *err)
{
    int efd = -1, r;

    if (rec == NULL)
        return 0;
    r = executions_dir(ctx, &efd, err);
    if (r < 0)
        return r;
    /* The file first: a reader that got the lock after us finds nothing. */
    if (unlinkat(rec->dir_fd, RECORD_FILE, 0) < 0 && errno != ENOENT)
        r = cordon_error_set(err, CORDON_E_IO, errno, "record %s: %s", rec->id, strerror(errno));
    if (r == 0)
        r = cordon_fs_remove_tree(efd, rec->id, err);
    close(efd);
    return r;
}

void cordon__record_close(struct cordon__record *rec)
{
    if (rec == NULL)
        return;
    if (rec->dir_fd >= 0)
        close(rec->dir_fd);   /* drops the flock */
    cJSON_Delete(rec->doc);
    free(rec);
}

static int compare_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int cordon__record_list(struct cordon_ctx *ctx, char ***ret_ids, size_t *ret_n,
                        struct cordon_error *err)
{
    char **ids = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    int efd = -1, r;
    DIR *dir;

    r = executions_dir(ctx, &efd, err);
    if (r < 0)
        return r;
    dir = fdopendir(efd);
    if (dir == NULL) {
        close(efd);
        return cordon_error_set(err, CORDON_E_IO, errno, "state_dir: %s", strerror(errno));
    }
    while ((de = readdir(dir)) != NULL) {
        if (!cordon_execution_id_valid(de->d_name))
            continue;
        if (n == cap) {
            char **grown = realloc(ids, (cap = cap ? cap * 2 : 16) * sizeof(*ids));
            if (grown == NULL) {
                r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
                break;
            }
            ids = grown;
        }
        if ((ids[n] = strdup(de->d_name)) != NULL)
            n++;
    }
    closedir(dir);
    if (r < 0) {
        for (size_t i = 0; i < n; i++)
            free(ids[i]);
        free(ids);
        return r;
    }
    if (n > 1)
        qsort(ids, n, sizeof(*ids), compare_str);
    *ret_ids = ids;
    *ret_n = n;
    return 0;
}

int cordon__record_phase(struct cordon__record *rec, const char *phase, bool owned,
                         struct cordon_error *err)
{
    cJSON_DeleteItemFromObjectCaseSensitive(rec->doc, "phase");
    cJSON_DeleteItemFromObjectCaseSensitive(rec->doc, "owner_pid");
    cJSON_AddStringToObject(rec->doc, "phase", phase);
    if (owned)
        cJSON_AddNumberToObject(rec->doc, "owner_pid", (double)getpid());
    return record_write(rec, err);
}

int cordon__record_exec_begin(struct cordon__record *rec, struct cordon_error *err)
{
    /* A mark left by a cordon that died mid-exec is taken over as it is. */
    int fd = openat(rec->dir_fd, CORDON__RECORD_EXEC_MARK,
                    O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

    if (fd < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "record %s: %s: %s", rec->id,
                                CORDON__RECORD_EXEC_MARK, strerror(errno));
    close(fd);
    return 0;
}

void cordon__record_exec_end(struct cordon__record *rec)
{
    if (rec != NULL)
        (void)unlinkat(rec->dir_fd, CORDON__RECORD_EXEC_MARK, 0);
}

const char *cordon__record_phase_at(int dir_fd, const cJSON *doc)
{
    struct stat st;

    /* A mark we cannot rule out counts as there: gc then destroys rather
     * than keeps, and a pool claim passes it by. */
    if (fstatat(dir_fd, CORDON__RECORD_EXEC_MARK, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
        return "exec";
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "phase"));
}

const char *cordon__record_phase_now(const struct cordon__record *rec)
{
    return cordon__record_phase_at(rec->dir_fd, rec->doc);
}
