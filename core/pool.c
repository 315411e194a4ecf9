/* core: the warm pool — key, fill, claim, ls, drain (core/pool.h). */
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
#include <cordon/sdk/host.h>
#include <cordon/sdk/json.h>
#include <cordon/sdk/spec.h>
#include "core/canonical.h"
#include "core/execution.h"
#include "core/loader.h"
#include "core/pool.h"

#define POOL_DIR "pool"

static bool hex_key(const char *s)
{
    size_t i;

    for (i = 0; s[i] != '\0'; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return i == 64;
}

int cordon__pool_key(const char *provider_id, const cJSON *config, const cJSON *image,
                     const struct cordon_limits *limits, const cJSON *environment, const char *layout,
                     char ret_key[65], struct cordon_error *err)
{
    cJSON *doc = cJSON_CreateObject();
    char *text = NULL;
    int r;

    cJSON_AddStringToObject(doc, "provider_id", provider_id);
    cJSON_AddItemToObject(doc, "provider_config",
                          config != NULL ? cJSON_Duplicate(config, 1) : cJSON_CreateObject());
    cJSON_AddItemToObject(doc, "image", cJSON_IsString(image) ? cJSON_Duplicate(image, 1) : cJSON_CreateNull());
    cJSON_AddItemToObject(doc, "resources", cordon_limits_to_json(limits));
    cJSON_AddStringToObject(cJSON_AddObjectToObject(doc, "network"), "mode", "none");
    cJSON_AddItemToObject(doc, "environment",
                          environment != NULL ? cJSON_Duplicate(environment, 1) : cJSON_CreateObject());
    cJSON_AddStringToObject(doc, "layout", layout);
    r = cordon__json_canonical(doc, &text, err);
    cJSON_Delete(doc);
    if (r < 0)
        return r;
    cordon_sha256_hex(text, strlen(text), ret_key);
    free(text);
    return 0;
}

/* <state_dir>/pool, or with key its <key> directory; created 0700 when
 * create is set. */
static int pool_dir(struct cordon_ctx *ctx, const char *key, bool create, int *ret_fd,
                    struct cordon_error *err)
{
    int sfd = open(ctx->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), pfd = -1, r;

    if (sfd < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "state_dir %s: %s", ctx->state_dir,
                                strerror(errno));
    if (create && mkdirat(sfd, POOL_DIR, 0700) < 0 && errno != EEXIST) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "state_dir %s/" POOL_DIR ": %s", ctx->state_dir,
                             strerror(errno));
        close(sfd);
        return r;
    }
    r = cordon_fs_open_beneath(sfd, POOL_DIR, O_RDONLY | O_DIRECTORY, 0, &pfd, err);
    close(sfd);
    if (r < 0 || key == NULL) {
        if (r == 0)
            *ret_fd = pfd;
        return r;
    }
    if (create && mkdirat(pfd, key, 0700) < 0 && errno != EEXIST) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "pool %s: %s", key, strerror(errno));
        close(pfd);
        return r;
    }
    r = cordon_fs_open_beneath(pfd, key, O_RDONLY | O_DIRECTORY, 0, ret_fd, err);
    close(pfd);
    return r;
}

static const cJSON *pool_of(const struct cordon__record *rec)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(rec->doc, "pool");

    return cJSON_IsObject(p) ? p : NULL;
}

bool cordon__pool_record_expired(const struct cordon__record *rec)
{
    const cJSON *until = cJSON_GetObjectItemCaseSensitive(pool_of(rec), "claimable_until_ms");

    if (pool_of(rec) == NULL)
        return false;
    return !cJSON_IsNumber(until) || (uint64_t)until->valuedouble <= cordon_now_wall_ms();
}

void cordon__pool_unmark(struct cordon_ctx *ctx, const struct cordon__record *rec)
{
    const char *key = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pool_of(rec), "key"));
    int fd = -1;

    if (key == NULL || !hex_key(key) || pool_dir(ctx, key, false, &fd, NULL) < 0)
        return;
    unlinkat(fd, rec->id, 0);
    close(fd);
}

void cordon__pool_tidy(struct cordon_ctx *ctx)
{
    struct dirent *de;
    DIR *dir;
    int fd = -1;

    if (pool_dir(ctx, NULL, false, &fd, NULL) < 0)
        return;
    dir = fdopendir(fd);
    if (dir == NULL) {
        close(fd);
        return;
    }
    /* rmdir refuses a directory that still holds a marker. */
    while ((de = readdir(dir)) != NULL)
        if (hex_key(de->d_name))
            unlinkat(dirfd(dir), de->d_name, AT_REMOVEDIR);
    closedir(dir);
}

int cordon__pool_claim(struct cordon_ctx *ctx, const char *key, struct cordon__record **ret_rec,
                       struct cordon_error *err)
{
    struct cordon__record *rec = NULL;
    struct dirent *de;
    DIR *dir;
    int fd = -1, r = 0;

    *ret_rec = NULL;
    if (pool_dir(ctx, key, false, &fd, NULL) < 0)
        return 0;   /* no pool for this key */
    dir = fdopendir(fd);
    if (dir == NULL) {
        close(fd);
        return 0;
    }
    while (r == 0 && *ret_rec == NULL && (de = readdir(dir)) != NULL) {
        const cJSON *p;
        const char *phase;
        struct cordon_error e;

        if (!cordon_execution_id_valid(de->d_name))
            continue;
        /* The claim: of every process that gets here, one unlink succeeds. */
        if (unlinkat(dirfd(dir), de->d_name, 0) < 0)
            continue;
        cordon_error_init(&e);
        /* Waits for a fill that still holds it (it marks before it unlocks). */
        if (cordon__record_open(ctx, de->d_name, false, &rec, &e) < 0)
            continue;
        p = pool_of(rec);
        phase = cordon__record_phase_now(rec);
        /* The marker alone proves nothing: the record, read under its lock,
         * must be of this key, ready, and claimable still. One that is not
         * stays for gc (expired) or drain. */
        if (p == NULL || phase == NULL || strcmp(phase, "ready") != 0 ||
            strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "key")) ?: "", key) != 0 ||
            cordon__pool_record_expired(rec)) {
            cordon__record_close(rec);
            rec = NULL;
            continue;
        }
        /* Nothing is written: the unlinked marker is the claim, and the
         * lock we keep until the execution is destroyed keeps gc and drain
         * away (an fsync'd save here cost a run ~10 ms). */
        *ret_rec = rec;
    }
    closedir(dir);
    return r;
}

void cordon__pool_target_clear(struct cordon__pool_target *t)
{
    if (t == NULL)
        return;
    cordon__selection_clear(&t->sel);
    cJSON_Delete(t->image);
    cJSON_Delete(t->environment);
    t->image = NULL;
    t->environment = NULL;
}

/* Markers of key whose records are claimable now. */
static size_t count_ready(struct cordon_ctx *ctx, int kfd)
{
    struct dirent *de;
    size_t n = 0;
    int fd = dup(kfd);
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;

    if (dir == NULL) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    while ((de = readdir(dir)) != NULL) {
        struct cordon__record *rec = NULL;

        if (!cordon_execution_id_valid(de->d_name) ||
            cordon__record_peek(ctx, de->d_name, &rec, NULL) < 0)
            continue;
        if (pool_of(rec) != NULL && !cordon__pool_record_expired(rec))
            n++;
        cordon__record_close(rec);
    }
    closedir(dir);
    return n;
}

/* One pooled execution of t: record, provision, ready, marker. On failure
 * nothing remains. */
static int fill_one(struct cordon_ctx *ctx, const struct cordon__pool_target *t,
                    const struct cordon__bound *b, int kfd, uint64_t ttl_ms, char ret_id[65],
                    struct cordon_error *err)
{
    struct cordon__record *rec = NULL;
    uint64_t now = cordon_now_wall_ms(), until = now + ttl_ms;
    cJSON *pool = cJSON_CreateObject(), *verdict = cordon__selection_verdict(&t->sel, t->isolation);
    char id[65], hex[25];
    int r, mfd;

    if (pool == NULL || verdict == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
        goto out;
    }
    if ((r = cordon__random_hex(hex, 12, err)) < 0)
        goto out;
    snprintf(id, sizeof(id), "pool-%s", hex);
    cJSON_AddStringToObject(pool, "key", t->key);
    cJSON_AddStringToObject(pool, "layout", t->layout);
    cJSON_AddNumberToObject(pool, "claimable_until_ms", (double)until);
    /* The sandbox lives through its claimable time and then one whole run. */
    r = cordon__execution_create(
        ctx, b,
        &(struct cordon__execution_intent){
            .id = id, .provider_id = t->sel.provider->id, .provider_config = t->sel.config,
            .image = t->image, .limits = &t->limits, .environment = t->environment,
            .verdict = verdict, .pool = pool, .created_at_ms = now,
            .expires_at_ms = until + t->limits.runtime_ms },
        strcmp(t->layout, "host") == 0 ? CORDON_SPEC_LAYOUT_HOST : CORDON_SPEC_LAYOUT_CODE, &rec, err);
    if (r < 0 || (r = cordon__record_phase(rec, "ready", false, err)) < 0)
        goto out;
    /* Claimable from here: the marker is made last, under the record's lock. */
    mfd = openat(kfd, id, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (mfd < 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "pool %s: marker %s: %s", t->key, id, strerror(errno));
        goto out;
    }
    close(mfd);
    snprintf(ret_id, 65, "%s", id);
out:
    /* A sandbox that would not go keeps its record (gc reclaims it). */
    if (r < 0 && rec != NULL)
        cordon__execution_destroy_bound(ctx, rec, b, NULL);
    cordon__record_close(rec);
    cJSON_Delete(verdict);
    cJSON_Delete(pool);
    return r;
}

int cordon__pool_check_bounds(uint64_t size, uint64_t ttl_ms, struct cordon_error *err)
{
    if (size < 1 || size > CORDON_POOL_SIZE_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "size: %llu is outside 1..%d",
                                (unsigned long long)size, CORDON_POOL_SIZE_MAX);
    if (ttl_ms < CORDON_POOL_TTL_MIN_MS || ttl_ms > CORDON_POOL_TTL_MAX_MS)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "ttl_ms: %llu is outside %llu..%llu",
                                (unsigned long long)ttl_ms, CORDON_POOL_TTL_MIN_MS, CORDON_POOL_TTL_MAX_MS);
    return 0;
}

int cordon__pool_fill(struct cordon_ctx *ctx, const struct cordon__pool_target *t, uint64_t size,
                      uint64_t ttl_ms, char **ret_json, struct cordon_error *err)
{
    struct cordon__bound b = { NULL, NULL };
    cJSON *doc = NULL, *added;
    size_t ready = 0;
    int kfd = -1, r;

    /* Refused before anything is created. */
    if ((r = cordon__pool_check_bounds(size, ttl_ms, err)) < 0)
        return r;
    if ((r = pool_dir(ctx, t->key, true, &kfd, err)) < 0)
        return r;
    /* Two fills of one key do not both top it up. */
    if (flock(kfd, LOCK_EX) < 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "pool %s: flock: %s", t->key, strerror(errno));
        goto out;
    }
    doc = cJSON_CreateObject();
    added = cJSON_CreateArray();
    ready = count_ready(ctx, kfd);
    if (ready < size)
        r = cordon__bind_provider(ctx, t->sel.provider->id, t->sel.config, &b, err);
    for (size_t i = ready; r == 0 && i < size; i++) {
        char id[65];

        r = fill_one(ctx, t, &b, kfd, ttl_ms, id, err);
        if (r == 0)
            cJSON_AddItemToArray(added, cJSON_CreateString(id));
    }
    cordon__unbind_provider(&b, NULL);
    cJSON_AddBoolToObject(doc, "ok", r == 0);
    cJSON_AddStringToObject(doc, "key", t->key);
    cJSON_AddStringToObject(doc, "provider_id", t->sel.provider->id);
    cJSON_AddNumberToObject(doc, "size", (double)size);
    cJSON_AddNumberToObject(doc, "ready_before", (double)ready);
    cJSON_AddItemToObject(doc, "added", added);
    r = cordon__json_done(r, doc, ret_json, err);
out:
    if (kfd >= 0)
        close(kfd);   /* drops the flock */
    if (r < 0 && ready == 0)
        cordon__pool_tidy(ctx);
    return r;
}

static bool marked(struct cordon_ctx *ctx, const char *key, const char *id)
{
    int fd = -1;
    bool yes;

    if (!hex_key(key) || pool_dir(ctx, key, false, &fd, NULL) < 0)
        return false;
    yes = faccessat(fd, id, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
    close(fd);
    return yes;
}

bool cordon__pool_record_stale(struct cordon_ctx *ctx, const struct cordon__record *rec)
{
    const char *key = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pool_of(rec), "key"));

    if (pool_of(rec) == NULL)
        return false;
    return key == NULL || cordon__pool_record_expired(rec) || !marked(ctx, key, rec->id);
}

/* Every record with "pool", read without its lock, for ls. */
int cordon__pool_ls_json(struct cordon_ctx *ctx, char **ret_json, struct cordon_error *err)
{
    cJSON *doc = cJSON_CreateObject(), *pools = cJSON_AddArrayToObject(doc, "pools");
    char **ids = NULL;
    size_t n = 0;
    int r = cordon__record_list(ctx, &ids, &n, err);

    for (size_t i = 0; r == 0 && i < n; i++) {
        struct cordon__record *rec = NULL;
        const cJSON *p;
        const char *key;
        cJSON *entry = NULL, *e;
        bool exp;

        if (cordon__record_peek(ctx, ids[i], &rec, NULL) < 0)
            continue;
        p = pool_of(rec);
        key = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "key"));
        if (key == NULL) {
            cordon__record_close(rec);
            continue;
        }
        cJSON_ArrayForEach(e, pools)
            if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "key")), key) == 0)
                entry = e;
        if (entry == NULL) {
            entry = cJSON_CreateObject();
            cJSON_AddStringToObject(entry, "key", key);
            cJSON_AddItemToObject(entry, "provider_id",
                                  cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(rec->doc, "provider_id"), 1));
            cJSON_AddItemToObject(entry, "image",
                                  cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(rec->doc, "image"), 1));
            cJSON_AddItemToObject(entry, "layout",
                                  cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(p, "layout"), 1));
            cJSON_AddItemToObject(entry, "resources",
                                  cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(rec->doc, "resources"), 1));
            cJSON_AddNumberToObject(entry, "ready", 0);
            cJSON_AddNumberToObject(entry, "expired", 0);
            cJSON_AddArrayToObject(entry, "executions");
            cJSON_AddItemToArray(pools, entry);
        }
        exp = cordon__pool_record_expired(rec);
        /* Unmarked and not expired: claimed, by a run that holds it now. */
        if (!exp && !marked(ctx, key, rec->id)) {
            cordon__record_close(rec);
            continue;
        }
        e = cJSON_GetObjectItemCaseSensitive(entry, exp ? "expired" : "ready");
        cJSON_SetNumberValue(e, e->valuedouble + 1);
        e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "execution_id", rec->id);
        cJSON_AddItemToObject(e, "claimable_until_ms",
                              cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(p, "claimable_until_ms"), 1));
        cJSON_AddBoolToObject(e, "expired", exp);
        cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(entry, "executions"), e);
        cordon__record_close(rec);
    }
    cordon__loader_list_free(ids, n);
    return cordon__json_done(r, doc, ret_json, err);
}

int cordon__pool_drain_json(struct cordon_ctx *ctx, char **ret_json, struct cordon_error *err)
{
    cJSON *doc = cJSON_CreateObject(), *drained = cJSON_AddArrayToObject(doc, "drained");
    cJSON *errors = cJSON_AddArrayToObject(doc, "errors");
    char **ids = NULL;
    size_t n = 0;
    int r = cordon__record_list(ctx, &ids, &n, err);

    for (size_t i = 0; r == 0 && i < n; i++) {
        struct cordon__record *rec = NULL;
        struct cordon_error e;

        cordon_error_init(&e);
        /* A held lock is a fill still at work or a run that claimed it
         * (that run destroys it); a pooled record whose lock we get is
         * nobody's. */
        if (cordon__record_open(ctx, ids[i], true, &rec, &e) < 0)
            continue;
        if (pool_of(rec) != NULL) {
            cordon__pool_unmark(ctx, rec);
            if (cordon__execution_destroy(ctx, rec, &e) == 0) {
                cJSON_AddItemToArray(drained, cJSON_CreateString(ids[i]));
            } else {
                cJSON *x = cJSON_CreateObject();
                cJSON_AddStringToObject(x, "execution_id", ids[i]);
                cordon_json_add_text(x, "message", e.message);
                cJSON_AddItemToArray(errors, x);
            }
        }
        cordon__record_close(rec);
    }
    cordon__loader_list_free(ids, n);
    if (r == 0) {
        int pfd = -1;

        cordon__pool_tidy(ctx);
        /* No pool left: no trace of one either. */
        if (pool_dir(ctx, NULL, false, &pfd, NULL) == 0) {
            int sfd = open(ctx->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            close(pfd);
            if (sfd >= 0) {
                unlinkat(sfd, POOL_DIR, AT_REMOVEDIR);
                close(sfd);
            }
        }
        cJSON_AddBoolToObject(doc, "ok", cJSON_GetArraySize(errors) == 0);
    }
    return cordon__json_done(r, doc, ret_json, err);
}
