/* core: the checkpoint store (json.md §9, §10). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cordon/sdk/fs.h>
#include <cordon/sdk/path.h>
#include <cordon/sdk/tar.h>
#include "core/checkpoint.h"
#include "core/internal.h"
#include "core/limits.h"

#define ID_PREFIX "ckpt-"
#define ID_HEX 24
#define TEXT_MAX 256
#define JSON_INT_MAX 9007199254740992.0 /* 2^53: larger integers lose digits in JSON */
#define STR_(x) #x
#define STR(x) STR_(x)

/* ---- the manifest's keys and their types ------------------------------- */

enum key_kind {
    K_VERSION,
    K_ID,
    K_TEXT,
    K_PROVIDER,
    K_IMAGE,
    K_RESOURCES,
    K_OBJECT,
    K_ENVIRONMENT,
    K_TIME,
    K_WORKSPACE,
};

struct key_rule {
    const char *key;
    enum key_kind kind;
    bool from_fields; /* supplied by the caller of cordon__checkpoint_write */
};

static const struct key_rule manifest_keys[] = {
    {"version", K_VERSION, false},
    {"checkpoint_id", K_ID, false},
    {"source_execution_id", K_TEXT, true},
    {"provider_id", K_PROVIDER, true},
    {"image", K_IMAGE, true},
    {"resources", K_RESOURCES, true},
    {"network", K_OBJECT, true},
    {"environment", K_ENVIRONMENT, true},
    {"metadata", K_OBJECT, true},
    {"created_at", K_TIME, false},
    {"workspace", K_WORKSPACE, false},
};
#define N_KEYS (sizeof(manifest_keys) / sizeof(manifest_keys[0]))

static const char *const workspace_keys[] = {"sha256", "bytes", "entries"};

bool cordon__checkpoint_id_valid(const char *id)
{
    if (id == NULL || strncmp(id, ID_PREFIX, strlen(ID_PREFIX)) != 0)
        return false;
    id += strlen(ID_PREFIX);
    for (size_t i = 0; i < ID_HEX; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
            return false;
    return id[ID_HEX] == '\0';
}

static bool is_uint(const cJSON *v)
{
    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= JSON_INT_MAX &&
           v->valuedouble == (double)(uint64_t)v->valuedouble;
}

/* A string of 1..max bytes without control characters. */
static bool is_text(const cJSON *v, size_t max)
{
    size_t len;

    if (!cJSON_IsString(v) || v->valuestring == NULL)
        return false;
    len = strnlen(v->valuestring, max + 1);
    if (len == 0 || len > max)
        return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)v->valuestring[i] < 0x20 || v->valuestring[i] == 0x7f)
            return false;
    return true;
}

static bool is_provider_id(const cJSON *v)
{
    const char *s;

    if (!is_text(v, 64))
        return false;
    s = v->valuestring;
    if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
        return false;
    return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == strlen(s);
}

static bool is_sha256_hex(const cJSON *v)
{
    return cJSON_IsString(v) && strlen(v->valuestring) == 64 &&
           strspn(v->valuestring, "0123456789abcdef") == 64;
}

/* "YYYY-MM-DDTHH:MM:SSZ", a real date and time in UTC. */
static bool is_rfc3339_utc(const cJSON *v)
{
    static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
    struct tm tm;
    const char *s, *end;

    if (!cJSON_IsString(v) || strlen(v->valuestring) != sizeof(shape) - 1)
        return false;
    s = v->valuestring;
    for (size_t i = 0; shape[i] != '\0'; i++)
        if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != shape[i])
            return false;
    memset(&tm, 0, sizeof(tm));
    end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return end != NULL && *end == '\0';
}

/*
 * obj must be an object holding each of keys exactly once and nothing
 * else; a failure is described in why, prefixed by field.
 */
static bool exact_members(const cJSON *obj, const char *field, const char *const *keys, size_t n,
                          char *why, size_t why_len)
{
    if (!cJSON_IsObject(obj)) {
        snprintf(why, why_len, "%s: must be a JSON object", field);
        return false;
    }
    for (const cJSON *c = obj->child; c != NULL; c = c->next) {
        size_t i = 0;

        while (i < n && strcmp(keys[i], c->string) != 0)
            i++;
        if (i == n) {
            snprintf(why, why_len, "%s.%.*s: unknown key", field, cordon_text_fit(c->string, 100),
                     c->string);
            return false;
        }
        for (const cJSON *d = obj->child; d != c; d = d->next)
            if (strcmp(d->string, c->string) == 0) {
                snprintf(why, why_len, "%s.%s: appears twice", field, c->string);
                return false;
            }
    }
    for (size_t i = 0; i < n; i++)
        if (cJSON_GetObjectItemCaseSensitive(obj, keys[i]) == NULL) {
            snprintf(why, why_len, "%s.%s: missing", field, keys[i]);
            return false;
        }
    return true;
}

/* Whether v has the type of kind; why names key (and a member) otherwise. */
static bool value_ok(const char *key, enum key_kind kind, const cJSON *v, char *why,
                     size_t why_len)
{
    const char *need = NULL;

    switch (kind) {
    case K_VERSION:
        if (!cJSON_IsNumber(v) || v->valuedouble != CORDON_CHECKPOINT_VERSION)
            need = "must be " STR(CORDON_CHECKPOINT_VERSION);
        break;
    case K_ID:
        if (!cJSON_IsString(v) || !cordon__checkpoint_id_valid(v->valuestring))
            need = "must be a checkpoint id (\"ckpt-\" and 24 lowercase hex digits)";
        break;
    case K_TEXT:
        if (!is_text(v, TEXT_MAX))
            need = "must be a string of 1 to 256 bytes without control characters";
        break;
    case K_PROVIDER:
        if (!is_provider_id(v))
            need = "must be a provider id ([a-z0-9][a-z0-9-]{0,63})";
        break;
    case K_IMAGE:
        if (!cJSON_IsNull(v) && !is_text(v, CORDON_PATH_MAX))
            need = "must be null or a string of 1 to 4096 bytes without control characters";
        break;
    case K_OBJECT:
        if (!cJSON_IsObject(v))
            need = "must be a JSON object";
        break;
    case K_ENVIRONMENT:
        if (!cJSON_IsObject(v)) {
            need = "must be a JSON object";
            break;
        }
        for (const cJSON *c = v->child; c != NULL; c = c->next)
            if (!cJSON_IsString(c)) {
                snprintf(why, why_len, "%s.%.*s: must be a string", key,
                         cordon_text_fit(c->string, 100), c->string);
                return false;
            }
        break;
    case K_TIME:
        if (!is_rfc3339_utc(v))
            need = "must be an RFC 3339 UTC time (\"2024-05-01T12:00:00Z\")";
        break;
    case K_RESOURCES: {
        /* The manifest is data on disk: its limits meet the bounds of a
         * provision request, checked by the same function. */
        struct cordon_limits limits;
        struct cordon_error in;

        cordon_error_init(&in);
        if (cordon_limits_from_json(v, "resources", &limits, &in) < 0) {
            snprintf(why, why_len, "%s", in.message);
            return false;
        }
        break;
    }
    case K_WORKSPACE:
        if (!exact_members(v, key, workspace_keys,
                           sizeof(workspace_keys) / sizeof(*workspace_keys), why, why_len))
            return false;
        if (!is_sha256_hex(cJSON_GetObjectItemCaseSensitive(v, "sha256")))
            need = "sha256 must be 64 lowercase hex digits";
        else if (!is_uint(cJSON_GetObjectItemCaseSensitive(v, "bytes")) ||
                 !is_uint(cJSON_GetObjectItemCaseSensitive(v, "entries")))
            need = "bytes and entries must be non-negative integers";
        break;
    }
    if (need != NULL) {
        snprintf(why, why_len, "%s: %s", key, need);
        return false;
    }
    return true;
}

/*
 * Check obj against the manifest's keys (only those from the caller when
 * fields_only): each exactly once, of its type, nothing else. The error
 * has code and reads "<what><sep><key>: <problem>".
 */
static int validate_object(const cJSON *obj, bool fields_only, const char *what, const char *sep,
                           int code, struct cordon_error *err)
{
    char why[400];
    bool seen[N_KEYS] = {false};

    if (!cJSON_IsObject(obj))
        return cordon_error_set(err, code, 0, "%s: must be a JSON object", what);
    for (const cJSON *c = obj->child; c != NULL; c = c->next) {
        size_t i = 0;

        while (i < N_KEYS && (strcmp(manifest_keys[i].key, c->string) != 0 ||
                              (fields_only && !manifest_keys[i].from_fields)))
            i++;
        if (i == N_KEYS)
            return cordon_error_set(err, code, 0, "%s%s%.*s: unknown key", what, sep,
                                    cordon_text_fit(c->string, 100), c->string);
        if (seen[i])
            return cordon_error_set(err, code, 0, "%s%s%s: appears twice", what, sep, c->string);
        seen[i] = true;
    }
    for (size_t i = 0; i < N_KEYS; i++) {
        const struct key_rule *k = &manifest_keys[i];

        if (fields_only && !k->from_fields)
            continue;
        if (!seen[i])
            return cordon_error_set(err, code, 0, "%s%s%s: missing", what, sep, k->key);
        if (!value_ok(k->key, k->kind, cJSON_GetObjectItemCaseSensitive(obj, k->key), why,
                      sizeof(why)))
            return cordon_error_set(err, code, 0, "%s%s%s", what, sep, why);
    }
    return 0;
}

/* ---- the store on disk ------------------------------------------------- */

/* mkdir -p of an absolute path: parents 0755, the store itself 0700. */
static int make_store(const char *path, struct cordon_error *err)
{
    char buf[PATH_MAX];
    size_t len = strlen(path);

    if (len >= sizeof(buf))
        return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                "checkpoint store: path is longer than %d bytes", PATH_MAX - 1);
    memcpy(buf, path, len + 1);
    for (char *p = buf + 1; *p != '\0'; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            return cordon_error_set(err, CORDON_E_IO, errno, "checkpoint store: create %s: %s",
                                    buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0700) < 0 && errno != EEXIST)
        return cordon_error_set(err, CORDON_E_IO, errno, "checkpoint store: create %s: %s", buf,
                                strerror(errno));
    return 0;
}

/* Open the store directory (created when create); a missing one is
 * CORDON_E_NOT_FOUND. */
static int open_store(const char *store_dir, bool create, int *ret_fd, struct cordon_error *err)
{
    int fd, r;

    if (store_dir == NULL || store_dir[0] != '/')
        return cordon_error_set(
            err, CORDON_E_INVALID, 0, "checkpoint store: \"%.*s\" must be an absolute path",
            cordon_text_fit(store_dir ? store_dir : "", 300), store_dir ? store_dir : "");
    if (create && (r = make_store(store_dir, err)) < 0)
        return r;
    fd = open(store_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return cordon_error_set(err, errno == ENOENT ? CORDON_E_NOT_FOUND : CORDON_E_IO, errno,
                                "checkpoint store %.*s: open: %s", cordon_text_fit(store_dir, 300),
                                store_dir, strerror(errno));
    *ret_fd = fd;
    return 0;
}

static int now_rfc3339(char ret[32], struct cordon_error *err)
{
    time_t t = time(NULL);
    struct tm tm;

    if (gmtime_r(&t, &tm) == NULL || strftime(ret, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "checkpoint: cannot format the time");
    return 0;
}

/* The manifest: fields' members (copied), then what the store adds. */
static cJSON *manifest_new(const cJSON *fields, const char *id, const char *created_at,
                           const char *sha256, uint64_t bytes, uint64_t entries)
{
    cJSON *m = cJSON_CreateObject(), *ws = cJSON_CreateObject();
    bool ok = m != NULL && ws != NULL;

    ok = ok && cJSON_AddNumberToObject(m, "version", CORDON_CHECKPOINT_VERSION) != NULL;
    ok = ok && cJSON_AddStringToObject(m, "checkpoint_id", id) != NULL;
    for (size_t i = 0; ok && i < N_KEYS; i++) {
        const struct key_rule *k = &manifest_keys[i];
        cJSON *copy;

        if (!k->from_fields)
            continue;
        copy = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(fields, k->key), true);
        ok = copy != NULL && cJSON_AddItemToObject(m, k->key, copy);
        if (!ok)
            cJSON_Delete(copy);
    }
    ok = ok && cJSON_AddStringToObject(m, "created_at", created_at) != NULL;
    ok = ok && cJSON_AddStringToObject(ws, "sha256", sha256) != NULL;
    ok = ok && cJSON_AddNumberToObject(ws, "bytes", (double)bytes) != NULL;
    ok = ok && cJSON_AddNumberToObject(ws, "entries", (double)entries) != NULL;
    if (ok && cJSON_AddItemToObject(m, "workspace", ws))
        return m;
    cJSON_Delete(ws);
    cJSON_Delete(m);
    return NULL;
}

/* The tar stream into <dir>/workspace.tar, checked on the way; its digest,
 * size and entry count for the manifest. */
static int write_workspace(int dirfd, int tar_in_fd, uint64_t max_bytes, uint64_t max_entries,
                           char ret_sha[65], uint64_t *ret_bytes, uint64_t *ret_entries,
                           struct cordon_error *err)
{
    struct cordon_tar_limits limits = {max_bytes, max_entries, 0, 0};
    struct cordon_tar_stats stats;
    struct cordon_error in;
    struct stat st;
    int fd, r;

    fd = openat(dirfd, "workspace.tar", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                0600);
    if (fd < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "checkpoint: create workspace.tar: %s",
                                strerror(errno));
    cordon_error_init(&in);
    /* Safe relative symlinks are part of a workspace; every other entry
     * that cordon/sdk/tar.h lists is refused. */
    r = cordon_tar_filter_fd(tar_in_fd, fd, &limits, CORDON_TAR_ALLOW_SYMLINKS, &stats, ret_sha,
                             &in);
    if (r < 0) {
        r = cordon_error_set(err, in.code, in.os_errno, "checkpoint: workspace: %s", in.message);
        goto out;
    }
    if (fsync(fd) < 0 || fstat(fd, &st) < 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "checkpoint: sync workspace.tar: %s",
                             strerror(errno));
        goto out;
    }
    *ret_bytes = (uint64_t)st.st_size;
    *ret_entries = stats.entries;
out:
    close(fd);
    return r;
}

int cordon__checkpoint_write(const char *store_dir, int tar_in_fd, const cJSON *fields,
                             uint64_t max_bytes, uint64_t max_entries, cJSON **ret_manifest,
                             struct cordon_error *err)
{
    char id[CORDON_CHECKPOINT_ID_SIZE], tmp[CORDON_CHECKPOINT_ID_SIZE + 8], sha[65], created[32];
    uint64_t bytes = 0, entries = 0;
    cJSON *m = NULL;
    char *text = NULL;
    int store = -1, dir = -1, r;
    bool made = false;

    if (tar_in_fd < 0 || ret_manifest == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "checkpoint: no workspace stream or result pointer");
    r = validate_object(fields, true, "fields", ".", CORDON_E_INVALID, err);
    if (r < 0)
        return r;
    r = open_store(store_dir, true, &store, err);
    if (r < 0)
        return r;
    memcpy(id, ID_PREFIX, strlen(ID_PREFIX));
    r = cordon__random_hex(id + strlen(ID_PREFIX), ID_HEX / 2, err);
    if (r < 0)
        goto out;
    snprintf(tmp, sizeof(tmp), ".tmp-%s", id);
    /* Everything is written under a dot name that listing skips, then renamed. */
    if (mkdirat(store, tmp, 0700) < 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "checkpoint store %.*s: create %s: %s",
                             cordon_text_fit(store_dir, 300), store_dir, tmp, strerror(errno));
        goto out;
    }
    made = true;
    dir = openat(store, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    /* Held until the end: gc removes a partial checkpoint only when nobody
     * holds it (its writer died: kill -9, a crash). */
    if (dir < 0 || flock(dir, LOCK_EX | LOCK_NB) < 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "checkpoint store %.*s: open %s: %s",
                             cordon_text_fit(store_dir, 300), store_dir, tmp, strerror(errno));
        goto out;
    }
    r = write_workspace(dir, tar_in_fd, max_bytes, max_entries, sha, &bytes, &entries, err);
    if (r < 0)
        goto out;
    r = now_rfc3339(created, err);
    if (r < 0)
        goto out;
    m = manifest_new(fields, id, created, sha, bytes, entries);
    text = m != NULL ? cJSON_Print(m) : NULL;
    if (text == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "checkpoint: out of memory");
        goto out;
    }
    if (strlen(text) > CORDON_CHECKPOINT_MANIFEST_MAX) {
        r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                             "checkpoint: manifest of %zu bytes (metadata, environment) exceeds "
                             "the limit of %u bytes",
                             strlen(text), CORDON_CHECKPOINT_MANIFEST_MAX);
        goto out;
    }
    /* Written and synced; the directory's own sync comes with the rename below. */
    r = cordon_fs_write_atomic(dir, "manifest.json", text, strlen(text), 0600, err);
    if (r < 0)
        goto out;
    if (fsync(dir) < 0 || renameat2(store, tmp, store, id, RENAME_NOREPLACE) < 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "checkpoint store %.*s: publish %s: %s",
                             cordon_text_fit(store_dir, 300), store_dir, id, strerror(errno));
        goto out;
    }
    made = false;
    /* The rename is durable only once the store is synced; a failure takes it back. */
    if (fsync(store) < 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "checkpoint store %.*s: sync: %s",
                             cordon_text_fit(store_dir, 300), store_dir, strerror(errno));
        cordon_fs_remove_tree(store, id, NULL);
        goto out;
    }
    *ret_manifest = m;
    m = NULL;
out:
    if (made)
        cordon_fs_remove_tree(store, tmp, NULL);
    if (dir >= 0)
        close(dir);
    close(store);
    free(text);
    cJSON_Delete(m);
    return r;
}

/* ---- reading ----------------------------------------------------------- */

static int id_refused(const char *id, struct cordon_error *err)
{
    return cordon_error_set(err, CORDON_E_INVALID, 0,
                            "checkpoint_id: \"%.*s\" is not a checkpoint id (\"ckpt-\" and "
                            "24 lowercase hex digits)",
                            cordon_text_fit(id ? id : "", 100), id ? id : "");
}

static int not_found(struct cordon_error *err, const char *id, const char *store_dir)
{
    return cordon_error_set(err, CORDON_E_CHECKPOINT_NOT_FOUND, 0,
                            "checkpoint %s: not found in %.*s", id, cordon_text_fit(store_dir, 300),
                            store_dir);
}

/*
 * Load and validate checkpoint id beneath store; with ret_tar_fd, also
 * check workspace.tar's digest and hand it over at offset 0. Without it
 * only the size is checked (listing).
 */
static int load(int store, const char *store_dir, const char *id, cJSON **ret_manifest,
                int *ret_tar_fd, struct cordon_error *err)
{
    char what[80], sha[65];
    const cJSON *ws, *want_sha;
    struct cordon_error in;
    uint64_t size = 0, hashed = 0, want_bytes;
    cJSON *m = NULL;
    char *text = NULL;
    size_t len = 0;
    int dir = -1, tar = -1, r;

    if (!cordon__checkpoint_id_valid(id))
        return id_refused(id, err);
    cordon_error_init(&in);
    r = cordon_fs_open_beneath(store, id, O_RDONLY | O_DIRECTORY, 0, &dir, &in);
    if (r == CORDON_E_NOT_FOUND)
        return not_found(err, id, store_dir);
    if (r < 0)
        return cordon_error_set(err, CORDON_E_CHECKPOINT_INVALID, in.os_errno,
                                "checkpoint %s: %s", id, in.message);
    snprintf(what, sizeof(what), "checkpoint %s: manifest.json", id);
    /* Never through a link: a planted manifest -> /etc/shadow is refused, not read. */
    r = cordon_fs_read_file(dir, "manifest.json", CORDON_CHECKPOINT_MANIFEST_MAX, &text, &len,
                            &in);
    if (r < 0) {
        r = cordon_error_set(err, r == CORDON_E_NOMEM ? r : CORDON_E_CHECKPOINT_INVALID,
                             in.os_errno, "%s: %s", what, in.message);
        goto out;
    }
    /* Trailing bytes after the object and NULs inside it are not ignored. */
    m = strlen(text) == len ? cJSON_ParseWithOpts(text, NULL, true) : NULL;
    if (m == NULL) {
        r = cordon_error_set(err, CORDON_E_CHECKPOINT_INVALID, 0, "%s: not valid JSON", what);
        goto out;
    }
    r = validate_object(m, false, what, ": ", CORDON_E_CHECKPOINT_INVALID, err);
    if (r < 0)
        goto out;
    if (strcmp(cJSON_GetObjectItemCaseSensitive(m, "checkpoint_id")->valuestring, id) != 0) {
        r = cordon_error_set(err, CORDON_E_CHECKPOINT_INVALID, 0,
                             "%s: checkpoint_id: \"%s\" is not the directory's name", what,
                             cJSON_GetObjectItemCaseSensitive(m, "checkpoint_id")->valuestring);
        goto out;
    }
    ws = cJSON_GetObjectItemCaseSensitive(m, "workspace");
    want_bytes = (uint64_t)cJSON_GetObjectItemCaseSensitive(ws, "bytes")->valuedouble;
    want_sha = cJSON_GetObjectItemCaseSensitive(ws, "sha256");
    r = cordon_fs_open_regular(dir, "workspace.tar", 0, &tar, &size, &in);
    if (r < 0) {
        r = cordon_error_set(err, r == CORDON_E_NOMEM ? r : CORDON_E_CHECKPOINT_INVALID,
                             in.os_errno, "checkpoint %s: workspace.tar: %s", id, in.message);
        goto out;
    }
    if (size != want_bytes) {
        r = cordon_error_set(err, CORDON_E_CHECKPOINT_INVALID, 0,
                             "checkpoint %s: workspace.bytes mismatch: the manifest says %" PRIu64
                             ", workspace.tar has %" PRIu64,
                             id, want_bytes, size);
        goto out;
    }
    if (ret_tar_fd != NULL) {
        struct stat st;

        /* A restore holds workspace.tar shared until it has read it, so
         * that a removal (which takes it exclusively) refuses the
         * checkpoint while it is in use; one being removed is gone. */
        if (flock(tar, LOCK_SH | LOCK_NB) < 0 || fstat(tar, &st) < 0 || st.st_nlink == 0) {
            r = not_found(err, id, store_dir);
            goto out;
        }
        /* One byte past the size is enough to see a file that grew meanwhile. */
        r = cordon_sha256_fd(tar, size + 1, sha, &hashed, &in);
        if (r < 0) {
            r = cordon_error_set(err, CORDON_E_CHECKPOINT_INVALID, in.os_errno,
                                 "checkpoint %s: workspace.tar: %s", id, in.message);
            goto out;
        }
        if (hashed != size || strcmp(sha, want_sha->valuestring) != 0) {
            r = cordon_error_set(err, CORDON_E_CHECKPOINT_INVALID, 0,
                                 "checkpoint %s: workspace.sha256 mismatch: the manifest says "
                                 "%s, workspace.tar has %s",
                                 id, want_sha->valuestring, sha);
            goto out;
        }
        if (lseek(tar, 0, SEEK_SET) != 0) {
            r = cordon_error_set(err, CORDON_E_IO, errno, "checkpoint %s: workspace.tar: seek: %s",
                                 id, strerror(errno));
            goto out;
        }
        *ret_tar_fd = tar;
        tar = -1;
    }
    *ret_manifest = m;
    m = NULL;
out:
    if (tar >= 0)
        close(tar);
    if (dir >= 0)
        close(dir);
    cJSON_Delete(m);
    free(text);
    return r;
}

/* The store that should hold id (valid): without a store there is no checkpoint. */
static int open_store_of(const char *store_dir, const char *id, int *ret_fd,
                         struct cordon_error *err)
{
    int r;

    if (!cordon__checkpoint_id_valid(id))
        return id_refused(id, err);
    r = open_store(store_dir, false, ret_fd, err);
    return r == CORDON_E_NOT_FOUND ? not_found(err, id, store_dir) : r;
}

int cordon__checkpoint_open(const char *store_dir, const char *checkpoint_id, cJSON **ret_manifest,
                            int *ret_tar_fd, struct cordon_error *err)
{
    int store = -1, r;

    if (ret_manifest == NULL || ret_tar_fd == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "checkpoint: no result pointer");
    r = open_store_of(store_dir, checkpoint_id, &store, err);
    if (r < 0)
        return r;
    r = load(store, store_dir, checkpoint_id, ret_manifest, ret_tar_fd, err);
    close(store);
    return r;
}

int cordon__checkpoint_remove(const char *store_dir, const char *checkpoint_id,
                              struct cordon_error *err)
{
    char gone[CORDON_CHECKPOINT_ID_SIZE + 8];
    struct cordon_error in;
    int store = -1, dir = -1, tar = -1, r;

    r = open_store_of(store_dir, checkpoint_id, &store, err);
    if (r < 0)
        return r;
    /* A restore under way holds workspace.tar shared: the checkpoint is in
     * use. Held exclusively from here to the end, so that no restore
     * starts on what is being removed (a checkpoint without the file is
     * broken and restores nothing: removed without the lock). */
    if (cordon_fs_open_beneath(store, checkpoint_id, O_RDONLY | O_DIRECTORY, 0, &dir, NULL) == 0) {
        tar = openat(dir, "workspace.tar", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (tar >= 0 && flock(tar, LOCK_EX | LOCK_NB) < 0) {
            r = cordon_error_set(err, errno == EWOULDBLOCK ? CORDON_E_BUSY : CORDON_E_IO, errno,
                                 "checkpoint %s: %s", checkpoint_id,
                                 errno == EWOULDBLOCK ? "in use by a restore under way" : strerror(errno));
            goto out;
        }
    }
    /* Out of the namespace first, so that nobody opens a half-deleted checkpoint. */
    snprintf(gone, sizeof(gone), ".rm-%s", checkpoint_id);
    if (renameat2(store, checkpoint_id, store, gone, RENAME_NOREPLACE) < 0) {
        r = errno == ENOENT
                ? not_found(err, checkpoint_id, store_dir)
                : cordon_error_set(err, CORDON_E_IO, errno, "checkpoint %s: remove from %.*s: %s",
                                   checkpoint_id, cordon_text_fit(store_dir, 300), store_dir,
                                   strerror(errno));
        goto out;
    }
    cordon_error_init(&in);
    r = cordon_fs_remove_tree(store, gone, &in);
    if (r < 0)
        r = cordon_error_set(err, r, in.os_errno, "checkpoint %s: remove: %s", checkpoint_id,
                             in.message);
out:
    if (tar >= 0)
        close(tar);
    if (dir >= 0)
        close(dir);
    close(store);
    return r;
}

int cordon__checkpoint_sweep(const char *store_dir, unsigned min_age_s, cJSON *removed,
                             struct cordon_error *err)
{
    struct dirent *de;
    int store = -1, fd, r;
    DIR *d;

    r = open_store(store_dir, false, &store, err);
    if (r == CORDON_E_NOT_FOUND)
        return 0;
    if (r < 0)
        return r;
    fd = dup(store);
    d = fd >= 0 ? fdopendir(fd) : NULL;
    if (d == NULL) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "checkpoint store %.*s: list: %s",
                             cordon_text_fit(store_dir, 300), store_dir, strerror(errno));
        if (fd >= 0)
            close(fd);
        close(store);
        return r;
    }
    while ((de = readdir(d)) != NULL) {
        const char *name = de->d_name;
        struct cordon_error in;
        struct stat st;
        int dfd;

        /* What a writer (.tmp-) or a removal (.rm-) leaves when it dies. */
        if (strncmp(name, ".tmp-" ID_PREFIX, 5 + strlen(ID_PREFIX)) != 0 &&
            strncmp(name, ".rm-" ID_PREFIX, 4 + strlen(ID_PREFIX)) != 0)
            continue;
        dfd = openat(store, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
            continue;
        /* Locked: its writer lives. Young: its writer may not have locked it
         * yet (between mkdir and flock). */
        if (flock(dfd, LOCK_EX | LOCK_NB) < 0 || fstat(dfd, &st) < 0 ||
            time(NULL) - st.st_mtime < (time_t)min_age_s) {
            close(dfd);
            continue;
        }
        cordon_error_init(&in);
        r = cordon_fs_remove_tree(store, name, &in);
        close(dfd);
        if (r < 0) {
            r = cordon_error_set(err, r, in.os_errno, "checkpoint store %.*s: remove %s: %s",
                                 cordon_text_fit(store_dir, 300), store_dir, name, in.message);
            break;
        }
        if (removed != NULL)
            cJSON_AddItemToArray(removed, cJSON_CreateString(name));
    }
    closedir(d);
    close(store);
    return r;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in the store that do not start with '.', sorted, at most the list's bound. */
static int store_names(int store, char ***ret_names, size_t *ret_n, struct cordon_error *err)
{
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    DIR *d;
    int fd, r = 0;

    fd = openat(store, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    d = fd >= 0 ? fdopendir(fd) : NULL;
    if (d == NULL) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "checkpoint store: read: %s",
                             strerror(errno));
        if (fd >= 0)
            close(fd);
        return r;
    }
    while ((errno = 0, de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        if (n == CORDON_CHECKPOINT_LIST_MAX) {
            r = cordon_error_set(err, CORDON_E_LIMIT, 0, "checkpoint store: more than %u entries",
                                 CORDON_CHECKPOINT_LIST_MAX);
            goto out;
        }
        if (n == cap) {
            char **more = realloc(names, (cap ? cap * 2 : 64) * sizeof(*names));

            if (more == NULL) {
                r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM,
                                     "checkpoint store: out of memory");
                goto out;
            }
            names = more;
            cap = cap ? cap * 2 : 64;
        }
        names[n] = strdup(de->d_name);
        if (names[n] == NULL) {
            r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "checkpoint store: out of memory");
            goto out;
        }
        n++;
    }
    if (errno != 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "checkpoint store: read: %s",
                             strerror(errno));
        goto out;
    }
    if (n > 1)
        qsort(names, n, sizeof(*names), name_cmp);
    *ret_names = names;
    *ret_n = n;
    names = NULL;
out:
    if (names != NULL) {
        for (size_t i = 0; i < n; i++)
            free(names[i]);
        free(names);
    }
    closedir(d);
    return r;
}

int cordon__checkpoint_list(const char *store_dir, cJSON **ret_array, struct cordon_error *err)
{
    char **names = NULL;
    size_t n = 0;
    cJSON *arr = NULL;
    int store = -1, r;

    if (ret_array == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "checkpoint: no result pointer");
    r = open_store(store_dir, false, &store, err);
    if (r == CORDON_E_NOT_FOUND) {
        store = -1;
        r = 0;
    } else if (r == 0) {
        r = store_names(store, &names, &n, err);
    }
    if (r < 0)
        goto out;
    arr = cJSON_CreateArray();
    if (arr == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "checkpoint store: out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        struct cordon_error in;
        cJSON *item = NULL;

        cordon_error_init(&in);
        r = load(store, store_dir, names[i], &item, NULL, &in);
        if (r == CORDON_E_NOMEM) {
            r = cordon_error_set(err, r, in.os_errno, "%s", in.message);
            goto out;
        }
        /* A broken checkpoint is shown with its reason, never dropped silently. */
        if (r < 0 && (item = cJSON_CreateObject()) != NULL &&
            (cJSON_AddStringToObject(item, "checkpoint_id", names[i]) == NULL ||
             cJSON_AddStringToObject(item, "invalid", in.message) == NULL)) {
            cJSON_Delete(item);
            item = NULL;
        }
        if (item == NULL || !cJSON_AddItemToArray(arr, item)) {
            cJSON_Delete(item);
            r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "checkpoint store: out of memory");
            goto out;
        }
    }
    r = 0;
    *ret_array = arr;
    arr = NULL;
out:
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    cJSON_Delete(arr);
    if (store >= 0)
        close(store);
    return r;
}
