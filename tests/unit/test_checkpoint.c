/* Unit tests of core/checkpoint.c: write, open, strict checks, hostile streams, list, remove. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <cordon/sdk/fs.h>
#include <cordon/sdk/tar.h>
#include "core/checkpoint.h"
#include "tests/unit/helpers.h"

#define SECRET "outside-secret-contents"

/* <tmp>/store (made by the first write), <tmp>/outside/secret, <tmp>/in.tar. */
static char *tmp, *store, *outside;
static int tmpfd = -1;

static void setup(void)
{
    tmp = test_mkdtemp();
    cr_assert_not_null(tmp);
    cr_assert(asprintf(&store, "%s/store", tmp) > 0);
    cr_assert(asprintf(&outside, "%s/outside", tmp) > 0);
    tmpfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cr_assert_geq(tmpfd, 0);
    cr_assert_eq(mkdir(outside, 0755), 0);
    cr_assert_eq(mkdirat(tmpfd, "src", 0755), 0);
    cr_assert_eq(mkdirat(tmpfd, "dest", 0755), 0);
}

static void teardown(void)
{
    if (tmpfd >= 0)
        close(tmpfd);
    test_rmtree(tmp);
    free(tmp);
    free(store);
    free(outside);
}

TestSuite(checkpoint, .init = setup, .fini = teardown, .timeout = 60);

/* ---- helpers ----------------------------------------------------------- */

static char *path_in(const char *dir, const char *name)
{
    char *p = NULL;

    cr_assert(asprintf(&p, "%s/%s", dir, name) > 0);
    return p;
}

static char *slurp(const char *path, size_t *ret_len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    size_t len = 0, cap = 1 << 16;
    char *buf = malloc(cap + 1);
    ssize_t n;

    cr_assert_geq(fd, 0, "%s", path);
    while ((n = read(fd, buf + len, cap - len)) > 0) {
        len += (size_t)n;
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
        }
    }
    close(fd);
    buf[len] = '\0';
    if (ret_len != NULL)
        *ret_len = len;
    return buf;
}

static void spit(const char *path, const char *text, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);

    cr_assert_geq(fd, 0, "%s", path);
    cr_assert_eq(write(fd, text, len), (ssize_t)len);
    close(fd);
}

/* Names in the store (all of them, dot names too), or -1 when it is missing. */
static int store_entries(void)
{
    DIR *d = opendir(store);
    struct dirent *de;
    int n = 0;

    if (d == NULL)
        return -1;
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static cJSON *fields_new(void)
{
    cJSON *f = cJSON_Parse(
        "{\"source_execution_id\": \"exec-0123\", \"provider_id\": \"trusted-local\","
        " \"image\": null,"
        " \"resources\": {\"cpus\": 1.5, \"memory_bytes\": 536870912, \"disk_bytes\": 268435456,"
        "   \"pids\": 256, \"runtime_ms\": 60000, \"max_output_bytes\": 8388608},"
        " \"network\": {\"mode\": \"none\"}, \"environment\": {\"LANG\": \"C.UTF-8\"},"
        " \"metadata\": {\"reason\": \"test\", \"n\": [1, 2]}}");

    cr_assert_not_null(f);
    return f;
}

enum ttype { T_FILE, T_DIR, T_LINK, T_HARD, T_CHR, T_FIFO };

struct tent {
    enum ttype type;
    const char *name;
    const char *link; /* symlink target or hardlink name; "@OUT@" is outside/ */
    unsigned mode;    /* 0: 0644 files, 0755 directories */
    const char *data; /* NULL: size bytes of 'x' */
    size_t size;
};

/* s with "@OUT@" replaced by the absolute path of outside/. */
static char *subst(const char *s)
{
    const char *at = strstr(s, "@OUT@");
    char *r = NULL;

    if (at == NULL)
        return strdup(s);
    cr_assert(asprintf(&r, "%.*s%s%s", (int)(at - s), s, outside, at + 5) > 0);
    return r;
}

/* Write es as a tar to <tmp>/in.tar with libarchive itself (so that hostile
 * entries can be made) and return an fd reading it from the start. */
static int build_tar(const struct tent *es, size_t n)
{
    struct archive *a = archive_write_new();
    int fd = openat(tmpfd, "in.tar", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

    cr_assert_geq(fd, 0);
    cr_assert_eq(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
    cr_assert_eq(archive_write_open_fd(a, fd), ARCHIVE_OK);
    for (size_t i = 0; i < n; i++) {
        static const mode_t types[] = {AE_IFREG, AE_IFDIR, AE_IFLNK, AE_IFREG, AE_IFCHR,
                                       AE_IFIFO};
        const struct tent *t = &es[i];
        struct archive_entry *e = archive_entry_new();
        char *name = subst(t->name), *link = t->link ? subst(t->link) : NULL, *data = NULL;
        size_t size = 0;

        archive_entry_set_pathname(e, name);
        archive_entry_set_mode(e, types[t->type] |
                                      (t->mode ? t->mode : t->type == T_DIR ? 0755 : 0644));
        archive_entry_set_mtime(e, 1700000000, 0);
        if (t->type == T_LINK)
            archive_entry_set_symlink(e, link);
        if (t->type == T_HARD)
            archive_entry_set_hardlink(e, link);
        if (t->type == T_CHR)
            archive_entry_set_rdev(e, makedev(1, 3));
        if (t->type == T_FILE) {
            size = t->data ? strlen(t->data) : t->size;
            data = malloc(size + 1);
            if (t->data)
                memcpy(data, t->data, size);
            else
                memset(data, 'x', size);
            archive_entry_set_size(e, (la_int64_t)size);
        }
        cr_assert_geq(archive_write_header(a, e), ARCHIVE_WARN, "%s", archive_error_string(a));
        if (size > 0)
            cr_assert_eq(archive_write_data(a, data, size), (la_ssize_t)size);
        archive_entry_free(e);
        free(name);
        free(link);
        free(data);
    }
    cr_assert_eq(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
    return fd;
}

static const struct tent good_tree[] = {
    {T_DIR, "./", NULL, 0755, NULL, 0},
    {T_DIR, "src", NULL, 0755, NULL, 0},
    {T_FILE, "src/main.py", NULL, 0644, "print('hi')\n", 0},
    {T_FILE, "src/run", NULL, 0755, "#!/bin/sh\n", 0},
    {T_LINK, "entry", "src/main.py", 0777, NULL, 0},
    {T_FILE, "big.bin", NULL, 0600, NULL, 300000},
    {T_DIR, "empty", NULL, 0700, NULL, 0},
};
#define N_GOOD (sizeof(good_tree) / sizeof(good_tree[0]))

/* A valid checkpoint of good_tree; its manifest in *ret_manifest. */
static char *write_good(cJSON **ret_manifest)
{
    cJSON *fields = fields_new(), *m = NULL;
    struct cordon_error err;
    char *id;
    int fd = build_tar(good_tree, N_GOOD);

    cordon_error_init(&err);
    cr_assert_eq(cordon__checkpoint_write(store, fd, fields, 1 << 20, 100, &m, &err), 0, "%s",
                 err.message);
    close(fd);
    cJSON_Delete(fields);
    id = strdup(cJSON_GetObjectItem(m, "checkpoint_id")->valuestring);
    if (ret_manifest != NULL)
        *ret_manifest = m;
    else
        cJSON_Delete(m);
    return id;
}

/* ---- round trips ------------------------------------------------------- */

Test(checkpoint, round_trip)
{
    cJSON *m = NULL, *opened = NULL, *fields = fields_new(), *ws;
    struct cordon_tar_stats stats;
    struct cordon_error err;
    struct stat st;
    char *id = write_good(&m), *dir = path_in(store, id), *tarpath = path_in(dir, "workspace.tar");
    char *text, sha[65];
    size_t len;
    int fd = -1, destfd;

    cr_assert(cordon__checkpoint_id_valid(id), "%s", id);
    /* The manifest: the caller's fields as given, then the store's own keys. */
    for (const cJSON *f = fields->child; f != NULL; f = f->next)
        cr_expect(cJSON_Compare(f, cJSON_GetObjectItem(m, f->string), true), "%s", f->string);
    cr_expect_eq(cJSON_GetObjectItem(m, "version")->valuedouble, CORDON_CHECKPOINT_VERSION);
    cr_expect_eq(strlen(cJSON_GetObjectItem(m, "created_at")->valuestring), 20);
    cr_expect_eq(cJSON_GetArraySize(m), 11);
    ws = cJSON_GetObjectItem(m, "workspace");
    cr_expect_eq(cJSON_GetObjectItem(ws, "entries")->valuedouble, N_GOOD);
    text = slurp(tarpath, &len);
    cordon_sha256_hex(text, len, sha);
    free(text);
    cr_expect_eq(cJSON_GetObjectItem(ws, "bytes")->valuedouble, (double)len);
    cr_expect_str_eq(cJSON_GetObjectItem(ws, "sha256")->valuestring, sha);
    /* Private on disk: the store and checkpoint 0700, the files 0600. */
    cr_assert_eq(stat(store, &st), 0);
    cr_expect_eq(st.st_mode & 07777, 0700);
    cr_assert_eq(stat(dir, &st), 0);
    cr_expect_eq(st.st_mode & 07777, 0700);
    cr_assert_eq(stat(tarpath, &st), 0);
    cr_expect_eq(st.st_mode & 07777, 0600);
    cr_expect_eq(store_entries(), 1, "no temporary directory is left");

    cordon_error_init(&err);
    cr_assert_eq(cordon__checkpoint_open(store, id, &opened, &fd, &err), 0, "%s", err.message);
    cr_expect(cJSON_Compare(m, opened, true), "the manifest read equals the one written");
    cr_assert_eq(lseek(fd, 0, SEEK_CUR), 0);
    cr_assert_eq(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    destfd = openat(tmpfd, "dest", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cr_assert_eq(cordon_tar_extract_fd(fd, destfd, NULL, CORDON_TAR_ALLOW_SYMLINKS, &stats, &err),
                 0, "%s", err.message);
    close(destfd);
    close(fd);
    cr_expect_eq(stats.entries, N_GOOD);
    cr_expect_eq(stats.bytes, strlen("print('hi')\n") + strlen("#!/bin/sh\n") + 300000);
    {
        char *p = path_in(tmp, "dest/src/main.py"), *s = slurp(p, NULL);
        char *q = path_in(tmp, "dest/big.bin"), *b = slurp(q, &len);
        char *l = path_in(tmp, "dest/entry"), target[64] = "";
        char *x = path_in(tmp, "dest/src/run");

        cr_expect_str_eq(s, "print('hi')\n");
        cr_expect_eq(len, 300000);
        cr_expect_eq(strspn(b, "x"), 300000);
        cr_expect_gt(readlink(l, target, sizeof(target) - 1), 0);
        cr_expect_str_eq(target, "src/main.py");
        cr_assert_eq(stat(x, &st), 0);
        cr_expect_eq(st.st_mode & 0777, 0755);
        free(p), free(s), free(q), free(b), free(l), free(x);
    }
    cJSON_Delete(m);
    cJSON_Delete(opened);
    cJSON_Delete(fields);
    free(tarpath);
    free(dir);
    free(id);
}

struct producer {
    int srcfd, pipe_w, r;
    struct cordon_error err;
};

static void *produce(void *arg)
{
    struct producer *p = arg;

    cordon_error_init(&p->err);
    p->r = cordon_tar_create_fd(p->srcfd, "", p->pipe_w, NULL, NULL, &p->err);
    close(p->pipe_w);
    return NULL;
}

/* The way a provider's export arrives: through a pipe, from another writer. */
Test(checkpoint, writes_from_a_pipe)
{
    struct producer p;
    struct cordon_error err;
    pthread_t th;
    cJSON *m = NULL, *fields = fields_new();
    int fds[2];
    char *f;

    f = path_in(tmp, "src/a.txt");
    spit(f, "alpha", 5);
    free(f);
    cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
    p.srcfd = openat(tmpfd, "src", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    p.pipe_w = fds[1];
    cr_assert_eq(pthread_create(&th, NULL, produce, &p), 0);
    cordon_error_init(&err);
    cr_expect_eq(cordon__checkpoint_write(store, fds[0], fields, 0, 0, &m, &err), 0, "%s",
                 err.message);
    pthread_join(th, NULL);
    cr_expect_eq(p.r, 0, "%s", p.err.message);
    cr_expect_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "workspace"), "entries")->valuedouble,
                 1);
    close(fds[0]);
    close(p.srcfd);
    cJSON_Delete(m);
    cJSON_Delete(fields);
}

/* ---- strict validation of what is read back ---------------------------- */

enum tamper {
    TAMPER_EXTRA_KEY,
    TAMPER_MISSING_KEY,
    TAMPER_VERSION_2,
    TAMPER_RESOURCES_TYPE,
    TAMPER_RESOURCE_MEMBER,
    TAMPER_DUPLICATE_KEY,
    TAMPER_TRAILING_BYTES,
    TAMPER_CREATED_AT,
    TAMPER_ID_MISMATCH,
    TAMPER_DIGEST,
    TAMPER_SIZE,
    TAMPER_MANIFEST_SYMLINK,
    TAMPER_TAR_SYMLINK,
    TAMPER_NO_MANIFEST,
};

static const struct {
    enum tamper how;
    const char *needle;
    bool listed_invalid; /* listing skips the digest, so it cannot see every case */
} tamper_cases[] = {
    {TAMPER_EXTRA_KEY, "manifest.json: extra: unknown key", true},
    {TAMPER_MISSING_KEY, "manifest.json: metadata: missing", true},
    {TAMPER_VERSION_2, "manifest.json: version: must be 1", true},
    {TAMPER_RESOURCES_TYPE, "manifest.json: resources: must be a JSON object", true},
    {TAMPER_RESOURCE_MEMBER, "resources.pids: must be a whole number >= 0", true},
    {TAMPER_DUPLICATE_KEY, "manifest.json: version: appears twice", true},
    {TAMPER_TRAILING_BYTES, "manifest.json: not valid JSON", true},
    {TAMPER_CREATED_AT, "created_at: must be an RFC 3339 UTC time", true},
    {TAMPER_ID_MISMATCH, "checkpoint_id: \"ckpt-000000000000000000000000\" is not the directory",
     true},
    {TAMPER_DIGEST, "workspace.sha256 mismatch", false},
    {TAMPER_SIZE, "workspace.bytes mismatch", true},
    {TAMPER_MANIFEST_SYMLINK, "manifest.json", true},
    {TAMPER_TAR_SYMLINK, "workspace.tar", true},
    {TAMPER_NO_MANIFEST, "manifest.json", true},
};

ParameterizedTestParameters(checkpoint, open_refuses_tampering)
{
    static size_t idx[sizeof(tamper_cases) / sizeof(tamper_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *at, checkpoint, open_refuses_tampering)
{
    cJSON *m = NULL, *got = NULL, *list = NULL, *item;
    struct cordon_error err;
    struct stat before, after;
    char *id = write_good(&m), *dir = path_in(store, id);
    char *mpath = path_in(dir, "manifest.json"), *tpath = path_in(dir, "workspace.tar");
    char *secret = path_in(outside, "secret"), *text = NULL, *s;
    size_t len;
    int fd = -1;

    text = slurp(mpath, &len);
    /* The host file holds a manifest that would pass: only the link can be refused. */
    spit(secret, text, len);
    cr_assert_eq(stat(secret, &before), 0);
    switch (tamper_cases[*at].how) {
    case TAMPER_EXTRA_KEY: cJSON_AddNumberToObject(m, "extra", 1); break;
    case TAMPER_MISSING_KEY: cJSON_DeleteItemFromObject(m, "metadata"); break;
    case TAMPER_VERSION_2: cJSON_SetNumberValue(cJSON_GetObjectItem(m, "version"), 2); break;
    case TAMPER_RESOURCES_TYPE:
        cJSON_ReplaceItemInObject(m, "resources", cJSON_CreateString("big"));
        break;
    case TAMPER_RESOURCE_MEMBER:
        cJSON_ReplaceItemInObject(cJSON_GetObjectItem(m, "resources"), "pids",
                                  cJSON_CreateString("256"));
        break;
    case TAMPER_DUPLICATE_KEY: cJSON_AddNumberToObject(m, "version", 1); break;
    case TAMPER_CREATED_AT:
        cJSON_ReplaceItemInObject(m, "created_at", cJSON_CreateString("2024-13-01T00:00:00Z"));
        break;
    case TAMPER_ID_MISMATCH:
        cJSON_ReplaceItemInObject(m, "checkpoint_id",
                                  cJSON_CreateString("ckpt-000000000000000000000000"));
        break;
    default: break;
    }
    free(text);
    text = cJSON_Print(m);
    switch (tamper_cases[*at].how) {
    case TAMPER_TRAILING_BYTES:
        s = NULL;
        cr_assert(asprintf(&s, "%s\n{}", text) > 0);
        spit(mpath, s, strlen(s));
        free(s);
        break;
    case TAMPER_DIGEST:
        /* One bit, same size: only the digest can tell. */
        s = slurp(tpath, &len);
        s[len / 2] ^= 1;
        spit(tpath, s, len);
        free(s);
        break;
    case TAMPER_SIZE:
        s = slurp(tpath, &len);
        spit(tpath, s, len - 512);
        free(s);
        break;
    case TAMPER_MANIFEST_SYMLINK:
        cr_assert_eq(unlink(mpath), 0);
        cr_assert_eq(symlink(secret, mpath), 0);
        break;
    case TAMPER_TAR_SYMLINK:
        cr_assert_eq(unlink(tpath), 0);
        cr_assert_eq(symlink(secret, tpath), 0);
        break;
    case TAMPER_NO_MANIFEST: cr_assert_eq(unlink(mpath), 0); break;
    default: spit(mpath, text, strlen(text)); break;
    }
    cordon_error_init(&err);
    cr_assert_eq(cordon__checkpoint_open(store, id, &got, &fd, &err), CORDON_E_CHECKPOINT_INVALID,
                 "%s", err.message);
    cr_expect(strstr(err.message, tamper_cases[*at].needle) != NULL, "\"%s\" lacks \"%s\"",
              err.message, tamper_cases[*at].needle);
    cr_expect_null(got);
    cr_expect_eq(fd, -1);
    /* Listing shows the broken checkpoint with its reason instead of hiding it. */
    cr_assert_eq(cordon__checkpoint_list(store, &list, &err), 0, "%s", err.message);
    cr_assert_eq(cJSON_GetArraySize(list), 1);
    item = cJSON_GetArrayItem(list, 0);
    cr_expect_str_eq(cJSON_GetObjectItem(item, "checkpoint_id")->valuestring, id);
    cr_expect_eq(cJSON_HasObjectItem(item, "invalid"), tamper_cases[*at].listed_invalid);
    /* Nothing was done to the host file a link pointed at. */
    cr_assert_eq(stat(secret, &after), 0);
    cr_expect_eq(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
    cr_expect_eq(after.st_mode, before.st_mode);
    cr_expect_eq(after.st_size, before.st_size);
    cJSON_Delete(list);
    cJSON_Delete(m);
    free(text);
    free(secret);
    free(mpath);
    free(tpath);
    free(dir);
    free(id);
}

Test(checkpoint, not_found)
{
    struct cordon_error err;
    cJSON *m = NULL;
    int fd = -1;

    cordon_error_init(&err);
    /* A store that does not exist yet, then one that exists without the id. */
    cr_expect_eq(cordon__checkpoint_open(store, "ckpt-0123456789abcdef01234567", &m, &fd, &err),
                 CORDON_E_CHECKPOINT_NOT_FOUND);
    free(write_good(NULL));
    cr_expect_eq(cordon__checkpoint_open(store, "ckpt-0123456789abcdef01234567", &m, &fd, &err),
                 CORDON_E_CHECKPOINT_NOT_FOUND);
    cr_expect(strstr(err.message, "checkpoint ckpt-0123456789abcdef01234567: not found in /") !=
                  NULL,
              "%s", err.message);
    cr_expect_eq(cordon__checkpoint_remove(store, "ckpt-0123456789abcdef01234567", &err),
                 CORDON_E_CHECKPOINT_NOT_FOUND);
    cr_expect_null(m);
    cr_expect_eq(fd, -1);
}

static const char *const bad_ids[] = {
    "../x",
    "ckpt-",
    "ckpt-0123456789abcdef0123456",   /* 23 digits */
    "ckpt-0123456789abcdef012345678", /* 25 digits */
    "ckpt-0123456789ABCDEF01234567",
    "ckpt-0123456789abcdef0123456g",
    "CKPT-0123456789abcdef01234567",
    "ckpt-0123456789abcdef01234567/..",
    "",
};

Test(checkpoint, refuses_malformed_ids)
{
    struct cordon_error err;
    cJSON *m = NULL;
    int fd = -1;

    free(write_good(NULL));
    cordon_error_init(&err);
    cr_expect(cordon__checkpoint_id_valid("ckpt-0123456789abcdef01234567"));
    cr_expect_not(cordon__checkpoint_id_valid(NULL));
    for (size_t i = 0; i < sizeof(bad_ids) / sizeof(bad_ids[0]); i++) {
        cr_expect_not(cordon__checkpoint_id_valid(bad_ids[i]), "%s", bad_ids[i]);
        cr_expect_eq(cordon__checkpoint_open(store, bad_ids[i], &m, &fd, &err), CORDON_E_INVALID,
                     "%s", bad_ids[i]);
        cr_expect(strstr(err.message, "checkpoint_id: ") != NULL, "%s", err.message);
        cr_expect_eq(cordon__checkpoint_remove(store, bad_ids[i], &err), CORDON_E_INVALID, "%s",
                     bad_ids[i]);
    }
    cr_expect_eq(cordon__checkpoint_open(store, NULL, &m, &fd, &err), CORDON_E_INVALID);
    cr_expect_null(m);
    cr_expect_eq(store_entries(), 1, "the store is untouched");
}

/* ---- hostile streams and bad fields leave nothing behind --------------- */

static const struct {
    struct tent es[3];
    size_t n;
    int code;
    const char *needle;
} hostile_cases[] = {
    {{{T_FILE, "../evil", NULL, 0, "x", 0}}, 1, CORDON_E_UNSAFE, "\"..\""},
    {{{T_FILE, "@OUT@/evil", NULL, 0, "x", 0}}, 1, CORDON_E_UNSAFE, "absolute"},
    {{{T_LINK, "root", "/", 0, NULL, 0}, {T_FILE, "root/tmp/evil", NULL, 0, "x", 0}},
     2,
     CORDON_E_UNSAFE,
     "absolute path"},
    {{{T_LINK, "up", "../..", 0, NULL, 0}}, 1, CORDON_E_UNSAFE, "leaves"},
    /* A safe link, then a file written through it: extraction would refuse it. */
    {{{T_LINK, "l", ".", 0, NULL, 0}, {T_FILE, "l/f", NULL, 0, "x", 0}},
     2,
     CORDON_E_UNSAFE,
     "beneath an earlier symbolic link"},
    {{{T_LINK, "l", "x", 0, NULL, 0}, {T_FILE, "l", NULL, 0, "x", 0}},
     2,
     CORDON_E_UNSAFE,
     "at or beneath an earlier symbolic link"},
    {{{T_HARD, "h", "@OUT@/secret", 0, NULL, 0}}, 1, CORDON_E_UNSAFE, "hardlink"},
    {{{T_FILE, "a", NULL, 0, "x", 0}, {T_HARD, "h", "a", 0, NULL, 0}},
     2,
     CORDON_E_UNSAFE,
     "hardlink"},
    {{{T_CHR, "null", NULL, 0, NULL, 0}}, 1, CORDON_E_UNSAFE, "device"},
    {{{T_FIFO, "fifo", NULL, 0, NULL, 0}}, 1, CORDON_E_UNSAFE, "FIFO"},
    {{{T_FILE, "suid", NULL, 04755, "x", 0}}, 1, CORDON_E_UNSAFE, "setuid"},
    {{{T_FILE, "sgid", NULL, 02755, "x", 0}}, 1, CORDON_E_UNSAFE, "setgid"},
    /* max_bytes is 4096 below: twice that in one file, then in two. */
    {{{T_FILE, "big", NULL, 0, NULL, 8192}}, 1, CORDON_E_LIMIT, "limit of 4096 bytes"},
    {{{T_FILE, "a", NULL, 0, NULL, 4096}, {T_FILE, "b", NULL, 0, NULL, 4096}},
     2,
     CORDON_E_LIMIT,
     "limit of 4096 bytes"},
    /* max_entries is 2 below. */
    {{{T_FILE, "a", NULL, 0, "x", 0}, {T_FILE, "b", NULL, 0, "x", 0},
      {T_FILE, "c", NULL, 0, "x", 0}},
     3,
     CORDON_E_LIMIT,
     "limit of 2 entries"},
};

ParameterizedTestParameters(checkpoint, refuses_hostile_streams)
{
    static size_t idx[sizeof(hostile_cases) / sizeof(hostile_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *at, checkpoint, refuses_hostile_streams)
{
    cJSON *fields = fields_new(), *m = NULL, *list = NULL;
    struct cordon_error err;
    char *secret = path_in(outside, "secret"), *s;
    int fd, n_before;

    spit(secret, SECRET, strlen(SECRET));
    /* One good checkpoint already there: a refusal must not touch it either. */
    free(write_good(NULL));
    n_before = store_entries();
    fd = build_tar(hostile_cases[*at].es, hostile_cases[*at].n);
    cordon_error_init(&err);
    cr_assert_eq(cordon__checkpoint_write(store, fd, fields, 4096, 2, &m, &err),
                 hostile_cases[*at].code, "%s", err.message);
    close(fd);
    cr_expect(strstr(err.message, hostile_cases[*at].needle) != NULL, "\"%s\" lacks \"%s\"",
              err.message, hostile_cases[*at].needle);
    cr_expect_null(m);
    /* No new directory, no .tmp-* left, nothing outside changed. */
    cr_expect_eq(store_entries(), n_before);
    cr_assert_eq(cordon__checkpoint_list(store, &list, &err), 0);
    cr_expect_eq(cJSON_GetArraySize(list), 1);
    s = slurp(secret, NULL);
    cr_expect_str_eq(s, SECRET);
    free(s);
    s = path_in(tmp, "evil");
    cr_expect_neq(access(s, F_OK), 0);
    free(s);
    cJSON_Delete(list);
    cJSON_Delete(fields);
    free(secret);
}

/* A stream cut short (a provider that died half-way) is refused too. */
Test(checkpoint, refuses_truncated_stream)
{
    cJSON *fields = fields_new(), *m = NULL;
    struct cordon_error err;
    int fd = build_tar(good_tree, N_GOOD);

    cr_assert_eq(ftruncate(fd, 150000), 0);
    cordon_error_init(&err);
    cr_expect_lt(cordon__checkpoint_write(store, fd, fields, 0, 0, &m, &err), 0);
    cr_expect_null(m);
    cr_expect_eq(store_entries(), 0);
    close(fd);
    cJSON_Delete(fields);
}

/* A manifest is data on disk: limits past the bounds of a provision request
 * make it invalid, with the field and the bound named. One row per key and
 * side. */
static const struct {
    const char *key;
    double value;
    const char *needle;
} limit_cases[] = {
    {"cpus", 0.001, "resources.cpus: 0.001 is below the minimum 0.01"},
    {"cpus", 129, "resources.cpus: 129 exceeds the maximum 128"},
    {"memory_bytes", 1048576, "resources.memory_bytes: 1 MiB (1048576) is below the minimum 16777216"},
    {"memory_bytes", 549755813888.0 + 1024,
     "resources.memory_bytes: 536870913 KiB (549755814912) exceeds the maximum 549755813888"},
    {"disk_bytes", 4096, "resources.disk_bytes: 4 KiB (4096) is below the minimum 1048576"},
    {"disk_bytes", 2199023255552.0, "resources.disk_bytes: 2 TiB (2199023255552) exceeds the maximum 1099511627776"},
    {"pids", 7, "resources.pids: 7 is below the minimum 8"},
    {"pids", 32769, "resources.pids: 32769 exceeds the maximum 32768"},
    {"runtime_ms", 99, "resources.runtime_ms: 99 is below the minimum 100"},
    {"runtime_ms", 86400001, "resources.runtime_ms: 86400001 exceeds the maximum 86400000"},
    {"max_output_bytes", 1023, "resources.max_output_bytes: 1023 is below the minimum 1024"},
    {"max_output_bytes", 67108865, "resources.max_output_bytes: 67108865 exceeds the maximum 67108864"},
};

ParameterizedTestParameters(checkpoint, open_refuses_limits_out_of_bounds)
{
    static size_t idx[sizeof(limit_cases) / sizeof(limit_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *at, checkpoint, open_refuses_limits_out_of_bounds)
{
    cJSON *m = NULL, *got = NULL;
    struct cordon_error err;
    char *id = write_good(&m), *dir = path_in(store, id), *mpath = path_in(dir, "manifest.json");
    char *text;
    int fd = -1;

    cr_assert_not_null(cJSON_GetObjectItem(m, "resources"));
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(m, "resources"), limit_cases[*at].key,
                              cJSON_CreateNumber(limit_cases[*at].value));
    text = cJSON_Print(m);
    spit(mpath, text, strlen(text));
    cordon_error_init(&err);
    cr_assert_eq(cordon__checkpoint_open(store, id, &got, &fd, &err), CORDON_E_CHECKPOINT_INVALID,
                 "%s", err.message);
    cr_expect(strstr(err.message, "manifest.json: ") != NULL, "\"%s\" names the manifest", err.message);
    cr_expect(strstr(err.message, limit_cases[*at].needle) != NULL, "\"%s\" lacks \"%s\"",
              err.message, limit_cases[*at].needle);
    cr_expect_null(got);
    cr_expect_eq(fd, -1);
    cJSON_Delete(m);
    free(text);
    free(mpath);
    free(dir);
    free(id);
}

static const struct {
    const char *patch; /* merged over good fields; "-key" deletes key */
    const char *needle;
} bad_fields_cases[] = {
    {"{\"workspace\": {}}", "fields.workspace: unknown key"},
    {"{\"version\": 1}", "fields.version: unknown key"},
    {"-provider_id", "fields.provider_id: missing"},
    {"{\"provider_id\": \"Docker\"}", "fields.provider_id: must be a provider id"},
    {"{\"source_execution_id\": \"\"}", "fields.source_execution_id: must be a string"},
    {"{\"image\": 5}", "fields.image: must be null or a string"},
    {"{\"environment\": {\"A\": 1}}", "fields.environment.A: must be a string"},
    {"{\"network\": \"none\"}", "fields.network: must be a JSON object"},
    {"{\"resources\": {\"cpus\": 1}}", "fields.resources.memory_bytes: required"},
    {"{\"resources\": {\"cpus\": -1, \"pids\": 1, \"memory_bytes\": 1, \"disk_bytes\": 1, "
     "\"runtime_ms\": 1, \"max_output_bytes\": 1}}",
     "fields.resources.cpus: must be a positive number"},
    {"{\"resources\": {\"cpus\": 1, \"pids\": 1.5, \"memory_bytes\": 1, \"disk_bytes\": 1, "
     "\"runtime_ms\": 1, \"max_output_bytes\": 1}}",
     "fields.resources.pids: must be a whole number >= 0"},
    {"{\"metadata\": [1]}", "fields.metadata: must be a JSON object"},
};

ParameterizedTestParameters(checkpoint, refuses_bad_fields)
{
    static size_t idx[sizeof(bad_fields_cases) / sizeof(bad_fields_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *at, checkpoint, refuses_bad_fields)
{
    cJSON *fields = fields_new(), *m = NULL;
    const char *patch = bad_fields_cases[*at].patch;
    struct cordon_error err;
    int fd = build_tar(good_tree, N_GOOD);

    if (patch[0] == '-') {
        cJSON_DeleteItemFromObject(fields, patch + 1);
    } else {
        cJSON *p = cJSON_Parse(patch);

        cr_assert_not_null(p);
        for (cJSON *c = p->child; c != NULL; c = c->next) {
            cJSON_DeleteItemFromObject(fields, c->string);
            cJSON_AddItemToObject(fields, c->string, cJSON_Duplicate(c, true));
        }
        cJSON_Delete(p);
    }
    cordon_error_init(&err);
    cr_assert_eq(cordon__checkpoint_write(store, fd, fields, 0, 0, &m, &err), CORDON_E_INVALID,
                 "%s", err.message);
    cr_expect(strstr(err.message, bad_fields_cases[*at].needle) != NULL, "\"%s\" lacks \"%s\"",
              err.message, bad_fields_cases[*at].needle);
    cr_expect_null(m);
    cr_expect_eq(store_entries(), -1, "nothing made, not even the store");
    close(fd);
    cJSON_Delete(fields);
}

/* ---- listing and removing ---------------------------------------------- */

Test(checkpoint, list_reports_every_entry)
{
    struct cordon_error err;
    cJSON *list = NULL;
    char *a = write_good(NULL), *b = write_good(NULL), *p;
    const char *prev = "";
    int n_valid = 0, n_invalid = 0;

    cordon_error_init(&err);
    cr_assert_eq(cordon__checkpoint_list(store, &list, &err), 0, "%s", err.message);
    cr_expect_eq(cJSON_GetArraySize(list), 2);
    cJSON_Delete(list);
    /* Something that is not a checkpoint, an empty checkpoint, and a write in progress. */
    p = path_in(store, "junk");
    cr_assert_eq(mkdir(p, 0700), 0);
    free(p);
    p = path_in(store, "ckpt-ffffffffffffffffffffffff");
    cr_assert_eq(mkdir(p, 0700), 0);
    free(p);
    p = path_in(store, ".tmp-ckpt-eeeeeeeeeeeeeeeeeeeeeeee");
    cr_assert_eq(mkdir(p, 0700), 0);
    free(p);
    cr_assert_eq(cordon__checkpoint_list(store, &list, &err), 0, "%s", err.message);
    cr_assert_eq(cJSON_GetArraySize(list), 4);
    for (cJSON *c = list->child; c != NULL; c = c->next) {
        const char *id = cJSON_GetObjectItem(c, "checkpoint_id")->valuestring;

        cr_expect_gt(strcmp(id, prev), 0, "sorted by id");
        prev = id;
        if (cJSON_HasObjectItem(c, "invalid")) {
            n_invalid++;
            cr_expect(strcmp(id, "junk") == 0 || strcmp(id, "ckpt-ffffffffffffffffffffffff") == 0,
                      "%s", id);
        } else {
            n_valid++;
            cr_expect(strcmp(id, a) == 0 || strcmp(id, b) == 0, "%s", id);
            cr_expect(cJSON_HasObjectItem(c, "workspace"));
        }
    }
    cr_expect_eq(n_valid, 2);
    cr_expect_eq(n_invalid, 2);
    cJSON_Delete(list);
    free(a);
    free(b);
}

Test(checkpoint, list_of_a_missing_store_is_empty)
{
    struct cordon_error err;
    cJSON *list = NULL;

    cordon_error_init(&err);
    cr_assert_eq(cordon__checkpoint_list(store, &list, &err), 0, "%s", err.message);
    cr_expect(cJSON_IsArray(list));
    cr_expect_eq(cJSON_GetArraySize(list), 0);
    cJSON_Delete(list);
    cr_expect_eq(cordon__checkpoint_list("relative/store", &list, &err), CORDON_E_INVALID);
}

Test(checkpoint, remove)
{
    struct cordon_error err;
    char *a = write_good(NULL), *b = write_good(NULL);
    cJSON *m = NULL;
    int fd = -1;

    cordon_error_init(&err);
    cr_assert_eq(cordon__checkpoint_remove(store, a, &err), 0, "%s", err.message);
    cr_expect_eq(store_entries(), 1, "only the other checkpoint is left");
    cr_expect_eq(cordon__checkpoint_open(store, a, &m, &fd, &err), CORDON_E_CHECKPOINT_NOT_FOUND);
    cr_expect_eq(cordon__checkpoint_remove(store, a, &err), CORDON_E_CHECKPOINT_NOT_FOUND);
    cr_assert_eq(cordon__checkpoint_open(store, b, &m, &fd, &err), 0, "%s", err.message);
    close(fd);
    cJSON_Delete(m);
    free(a);
    free(b);
}

/* What a checkpoint whose cordon was killed leaves (.tmp-ckpt-*, .rm-ckpt-*)
 * goes once nobody holds it and it is old enough; a live writer's (locked)
 * and a fresh one (its writer may be about to lock it) stay. */
static void partial_dir(const char *name, time_t age)
{
    char *p = path_in(store, name), *f = NULL;
    struct timespec t[2];

    cr_assert_eq(mkdir(p, 0700), 0, "%s", p);
    cr_assert(asprintf(&f, "%s/workspace.tar", p) > 0);
    test_write_file(f, "half", 4);
    t[0].tv_sec = t[1].tv_sec = time(NULL) - age;
    t[0].tv_nsec = t[1].tv_nsec = 0;
    cr_assert_eq(utimensat(AT_FDCWD, p, t, 0), 0);
    free(f);
    free(p);
}

Test(checkpoint, sweep_removes_what_a_killed_writer_left)
{
    struct cordon_error err;
    char *good = write_good(NULL), *locked;
    cJSON *removed = cJSON_CreateArray();
    char *text;
    int lfd;

    partial_dir(".tmp-ckpt-0000000000000000000000dead", 3600);
    partial_dir(".rm-ckpt-0000000000000000000000gone", 3600);
    partial_dir(".tmp-ckpt-000000000000000000000fresh", 0);
    partial_dir(".tmp-ckpt-00000000000000000000locked", 3600);
    partial_dir(".tmp-other", 3600);
    locked = path_in(store, ".tmp-ckpt-00000000000000000000locked");
    lfd = open(locked, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cr_assert_geq(lfd, 0);
    cr_assert_eq(flock(lfd, LOCK_EX), 0);
    cordon_error_init(&err);
    cr_assert_eq(cordon__checkpoint_sweep(store, 10, removed, &err), 0, "%s", err.message);
    text = cJSON_PrintUnformatted(removed);
    cr_expect_eq(cJSON_GetArraySize(removed), 2, "%s", text);
    cr_expect_neq(strstr(text, "\".tmp-ckpt-0000000000000000000000dead\""), NULL, "%s", text);
    cr_expect_neq(strstr(text, "\".rm-ckpt-0000000000000000000000gone\""), NULL, "%s", text);
    cr_expect_eq(store_entries(), 4, "the checkpoint, the fresh, the locked and the foreign stay");
    close(lfd);
    cJSON_Delete(removed);
    free(text);
    free(locked);
    free(good);
    cordon_error_init(&err);
    cr_expect_eq(cordon__checkpoint_sweep("/nonexistent-store", 10, NULL, &err), 0, "%s",
                 err.message);
}
