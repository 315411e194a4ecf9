/*
 * runc provider: pinned root filesystems.
 *
 * An image is a rootfs tarball named with its own SHA-256. It is unpacked
 * once into a content-addressed cache, <base>/rootfs/<sha256>/, through the
 * sdk's tar checks with CORDON_TAR_ROOTFS: absolute symlinks are kept as
 * links (only the container resolves them, inside its own root; the host
 * never follows one), hardlinks join names of the tree only, setuid and
 * setgid bits are stripped (with no_new_privs and empty capability sets
 * they could not raise anything anyway), device nodes are skipped. The
 * digest is computed while unpacking, by a thread that feeds the extractor,
 * and a tree whose digest differs is never published: publication is the
 * rename of a temp directory, under a flock per digest so that concurrent
 * first uses unpack once. The containers mount the tree read-only.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/tar.h>

#include "plugins/runc/runc.h"

#define PIN "@sha256:"
#define CHUNK (1u << 20)
#define ROOTFS_MAX_BYTES (64ull << 30)
#define ROOTFS_MAX_ENTRIES 2000000u
#define META_MAX 4096u

/* Mount points the runtime needs in any root (it would create them inside
 * the shared cache otherwise). */
static const char *const mount_points[] = { "proc", "sys", "dev", "tmp", "run", "workspace" };

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

void runc__image_clear(struct runc_image *img)
{
    if (img == NULL)
        return;
    free(img->tar_path);
    memset(img, 0, sizeof(*img));
}

static bool is_hex64(const char *s)
{
    for (int i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return s[64] == '\0';
}

int runc__image_parse(const char *ref, bool allow_unpinned, struct runc_image *ret,
                      struct cordon_error *err)
{
    struct runc_image img = { 0 };
    const char *at;
    size_t len;
    int r;

    if (ref == NULL || ref[0] == '\0')
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "image: required, as /absolute/path/rootfs.tar@sha256:<64 hex>");
    len = strnlen(ref, RUNC_PATH_MAX + sizeof(PIN) + 64);
    at = strstr(ref, PIN);
    while (at != NULL && strstr(at + 1, PIN) != NULL)
        at = strstr(at + 1, PIN);
    if (at == NULL && !allow_unpinned)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "image: \"%.*s\" is not pinned; use "
                                "/absolute/path/rootfs.tar@sha256:<64 hex> (the tarball's own "
                                "digest) or set allow_unpinned",
                                cordon_text_fit(ref, 200), ref);
    if (at != NULL && !is_hex64(at + strlen(PIN)))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "image: \"%.*s\": the digest after @sha256: must be 64 "
                                "lowercase hex digits",
                                cordon_text_fit(ref, 200), ref);
    img.tar_path = at != NULL ? strndup(ref, (size_t)(at - ref)) : strndup(ref, len);
    if (img.tar_path == NULL)
        return runc__nomem(err, "image");
    r = runc__check_abs_path("image", img.tar_path, err);
    if (r < 0) {
        runc__image_clear(&img);
        return r;
    }
    img.pinned = at != NULL;
    if (img.pinned)
        memcpy(img.digest, at + strlen(PIN), 65);
    *ret = img;
    return 0;
}

/* <base>/rootfs, created 0700 (with base) when missing. */
static int cache_dir(const char *base, char **ret, struct cordon_error *err)
{
    char *dir = NULL;
    int r;

    if (asprintf(&dir, "%s/rootfs", base) < 0)
        return runc__nomem(err, "rootfs cache");
    r = runc__mkdir_p("rootfs cache", dir, 0700, err);
    if (r < 0) {
        free(dir);
        return r;
    }
    *ret = dir;
    return 0;
}

static bool is_dir(const char *path)
{
    struct stat st;

    return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The tarball size recorded when the digest was unpacked; 0 when unknown. */
static uint64_t recorded_size(const char *cache, const char *digest)
{
    char meta[128], *text = NULL;
    uint64_t size = 0;
    size_t len;
    int dfd = open(cache, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cJSON *doc;

    snprintf(meta, sizeof(meta), "%s.json", digest);
    if (dfd < 0)
        return 0;
    if (cordon_fs_read_file(dfd, meta, META_MAX, &text, &len, NULL) == 0) {
        doc = cJSON_ParseWithLength(text, len);
        if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(doc, "tar_bytes")))
            size = (uint64_t)cJSON_GetObjectItemCaseSensitive(doc, "tar_bytes")->valuedouble;
        cJSON_Delete(doc);
    }
    free(text);
    close(dfd);
    return size;
}

int runc__image_check(const char *base, const struct runc_image *img, bool *ret_cached,
                      struct cordon_error *err)
{
    char *path = NULL;
    struct stat st;
    uint64_t was;
    bool cached = false;

    if (stat(img->tar_path, &st) != 0)
        return cordon_error_set(err, CORDON_E_NOT_FOUND, errno, "image: %s: %s", img->tar_path,
                                strerror(errno));
    if (!S_ISREG(st.st_mode) || access(img->tar_path, R_OK) != 0)
        return cordon_error_set(err, CORDON_E_INVALID, errno,
                                "image: %s must be a readable regular file (a tar of the root "
                                "filesystem)", img->tar_path);
    if (img->pinned && asprintf(&path, "%s/rootfs/%s", base, img->digest) >= 0) {
        cached = is_dir(path);
        free(path);
        if (asprintf(&path, "%s/rootfs", base) < 0)
            path = NULL;
        was = cached && path != NULL ? recorded_size(path, img->digest) : 0;
        free(path);
        /* A different size means the file no longer has that digest. */
        if (was != 0 && was != (uint64_t)st.st_size)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "image: %s is %" PRIu64 " bytes, but the tarball unpacked "
                                    "for sha256:%s was %" PRIu64 " bytes: the file changed",
                                    img->tar_path, (uint64_t)st.st_size, img->digest, was);
    }
    if (ret_cached != NULL)
        *ret_cached = cached;
    return 0;
}

/* ---- unpacking ------------------------------------------------------------- */

/* Reads the tarball, hashes it, and feeds the extractor through a socket
 * (send with MSG_NOSIGNAL: an extractor that stops early is EPIPE, never
 * SIGPIPE). */
struct tee {
    int in_fd, out_fd;
    struct cordon_sha256 sha;
    uint64_t bytes;
    int error;
};

static void *tee_main(void *arg)
{
    struct tee *t = arg;
    char *buf = malloc(CHUNK);

    if (buf == NULL)
        t->error = ENOMEM;
    while (buf != NULL) {
        ssize_t n = read(t->in_fd, buf, CHUNK);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            t->error = n < 0 ? errno : 0;
            break;
        }
        cordon_sha256_update(&t->sha, buf, (size_t)n);
        t->bytes += (uint64_t)n;
        for (ssize_t off = 0; off < n && t->error == 0;) {
            ssize_t w = send(t->out_fd, buf + off, (size_t)(n - off), MSG_NOSIGNAL);

            if (w < 0 && errno != EINTR)
                t->error = errno;
            else if (w > 0)
                off += w;
        }
        if (t->error != 0)
            break;
    }
    /* EOF for the extractor. */
    shutdown(t->out_fd, SHUT_WR);
    free(buf);
    return NULL;
}

/* Read the socket to its end so that the tee hashes the whole file. */
static void drain(int fd)
{
    char buf[65536];

    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
    }
}

/* Mount points and a searchable root (mkdtemp made it 0700). */
static int finish_tree(int dfd, const char *const *dirs, size_t n, struct cordon_error *err)
{
    for (size_t i = 0; i < n; i++)
        if (mkdirat(dfd, dirs[i], 0755) != 0 && errno != EEXIST)
            return cordon_error_set(err, CORDON_E_IO, errno, "rootfs: mkdir %s: %s", dirs[i],
                                    strerror(errno));
    if (fchmod(dfd, 0755) != 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "rootfs: chmod: %s", strerror(errno));
    return 0;
}

static int write_meta(const char *cache, const char *digest, const char *tar_path,
                      uint64_t tar_bytes, const struct cordon_tar_stats *stats,
                      struct cordon_error *err)
{
    char name[128], *text;
    cJSON *doc = cJSON_CreateObject();
    int dfd, r;

    snprintf(name, sizeof(name), "%s.json", digest);
    if (doc == NULL || cJSON_AddStringToObject(doc, "tar_path", tar_path) == NULL ||
        cJSON_AddNumberToObject(doc, "tar_bytes", (double)tar_bytes) == NULL ||
        cJSON_AddNumberToObject(doc, "entries", (double)stats->entries) == NULL ||
        cJSON_AddNumberToObject(doc, "file_bytes", (double)stats->bytes) == NULL ||
        (text = cJSON_PrintUnformatted(doc)) == NULL) {
        cJSON_Delete(doc);
        return runc__nomem(err, "rootfs");
    }
    cJSON_Delete(doc);
    dfd = open(cache, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    r = dfd < 0 ? cordon_error_set(err, CORDON_E_IO, errno, "rootfs: %s: %s", cache,
                                   strerror(errno))
                : cordon_fs_write_atomic(dfd, name, text, strlen(text), 0600, err);
    if (dfd >= 0)
        close(dfd);
    free(text);
    return r;
}

/* Unpack tar_fd into the fresh directory tmp and check the digest. */
static int unpack(int tar_fd, const char *tmp, const char *digest, uint64_t size,
                  struct cordon_tar_stats *ret_stats, struct cordon_error *err)
{
    struct cordon_tar_limits limits = { ROOTFS_MAX_BYTES, ROOTFS_MAX_ENTRIES, 0, 0 };
    struct tee t = { .in_fd = tar_fd, .out_fd = -1 };
    char got[65];
    pthread_t thread;
    int sv[2] = { -1, -1 }, dfd = -1, r;

    cordon_sha256_init(&t.sha);
    dfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "rootfs: %s: %s", tmp, strerror(errno));
        goto out;
    }
    t.out_fd = sv[1];
    if ((r = pthread_create(&thread, NULL, tee_main, &t)) != 0) {
        r = cordon_error_set(err, CORDON_E_IO, r, "rootfs: thread: %s", strerror(r));
        goto out;
    }
    r = cordon_tar_extract_fd(sv[0], dfd, &limits, CORDON_TAR_ROOTFS, ret_stats, err);
    if (r == 0)
        drain(sv[0]);
    /* After a refusal, closing our end stops the tee with EPIPE. */
    close(sv[0]);
    sv[0] = -1;
    pthread_join(thread, NULL);
    if (r < 0)
        goto out;
    if (t.error != 0 || t.bytes != size) {
        r = cordon_error_set(err, CORDON_E_IO, t.error,
                             "image: read %" PRIu64 " of %" PRIu64 " bytes of the tarball: %s",
                             t.bytes, size, t.error != 0 ? strerror(t.error) : "short read");
        goto out;
    }
    cordon_sha256_final_hex(&t.sha, got);
    if (strcmp(got, digest) != 0) {
        r = cordon_error_set(err, CORDON_E_UNSAFE, 0,
                             "image: the tarball's sha256 is %s, not the pinned %s; nothing "
                             "was published", got, digest);
        goto out;
    }
    r = finish_tree(dfd, mount_points, COUNT(mount_points), err);
out:
    if (sv[0] >= 0)
        close(sv[0]);
    if (sv[1] >= 0)
        close(sv[1]);
    if (dfd >= 0)
        close(dfd);
    return r;
}

/* Temp trees a crashed unpack of this digest left; we hold its lock. */
static void remove_stale(const char *cache, const char *prefix)
{
    size_t plen = strlen(prefix);
    struct dirent *de;
    DIR *dir = opendir(cache);

    while (dir != NULL && (de = readdir(dir)) != NULL) {
        char *path;

        if (strncmp(de->d_name, prefix, plen) != 0 || asprintf(&path, "%s/%s", cache,
                                                                 de->d_name) < 0)
            continue;
        cordon_fs_remove_tree_path(path, NULL);
        free(path);
    }
    if (dir != NULL)
        closedir(dir);
}

/* Hash an unpinned tarball to find its cache key. */
static int hash_file(int fd, char *ret_hex, struct cordon_error *err)
{
    int r = cordon_sha256_fd(fd, 0, ret_hex, NULL, err);

    if (r == 0 && lseek(fd, 0, SEEK_SET) != 0)
        r = cordon_error_set(err, CORDON_E_IO, errno, "image: rewind: %s", strerror(errno));
    return r;
}

int runc__rootfs_ensure(const char *base, const struct runc_image *img, char **ret_path,
                        char *ret_digest, struct cordon_error *err)
{
    struct cordon_tar_stats stats = { 0, 0 };
    char digest[65], prefix[96];
    char *cache = NULL, *dir = NULL, *tmp = NULL, *lock_name = NULL;
    struct stat st;
    int tar_fd = -1, lock_fd = -1, r;

    r = cache_dir(base, &cache, err);
    if (r < 0)
        return r;
    tar_fd = open(img->tar_path, O_RDONLY | O_CLOEXEC);
    if (tar_fd < 0 || fstat(tar_fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        r = cordon_error_set(err, errno == ENOENT ? CORDON_E_NOT_FOUND : CORDON_E_INVALID, errno,
                             "image: %s must be a readable regular file: %s", img->tar_path,
                             tar_fd < 0 ? strerror(errno) : "not a regular file");
        goto out;
    }
    if (img->pinned)
        memcpy(digest, img->digest, sizeof(digest));
    else if ((r = hash_file(tar_fd, digest, err)) < 0)
        goto out;
    if (asprintf(&dir, "%s/%s", cache, digest) < 0) {
        dir = NULL;
        r = runc__nomem(err, "rootfs");
        goto out;
    }
    if (is_dir(dir))
        goto done;

    /* One unpack per digest: the others wait here, then find the tree. */
    if (asprintf(&lock_name, "%s/%s.lock", cache, digest) < 0) {
        lock_name = NULL;
        r = runc__nomem(err, "rootfs");
        goto out;
    }
    lock_fd = open(lock_name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (lock_fd < 0 || flock(lock_fd, LOCK_EX) != 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "rootfs: lock %s: %s", lock_name,
                             strerror(errno));
        goto out;
    }
    if (is_dir(dir))
        goto done;
    snprintf(prefix, sizeof(prefix), ".unpack-%s-", digest);
    remove_stale(cache, prefix);
    r = cordon_fs_mkdtemp(cache, prefix, &tmp, err);
    if (r < 0)
        goto out;
    r = unpack(tar_fd, tmp, digest, (uint64_t)st.st_size, &stats, err);
    if (r == 0)
        r = write_meta(cache, digest, img->tar_path, (uint64_t)st.st_size, &stats, err);
    if (r < 0)
        goto out;
    if (rename(tmp, dir) != 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "rootfs: publish %s: %s", dir,
                             strerror(errno));
        goto out;
    }
done:
    if (ret_digest != NULL)
        memcpy(ret_digest, digest, sizeof(digest));
    if (ret_path != NULL) {
        *ret_path = dir;
        dir = NULL;
    }
    r = 0;
out:
    if (tmp != NULL && r < 0)
        cordon_fs_remove_tree_path(tmp, NULL);
    if (lock_fd >= 0)
        close(lock_fd);
    if (tar_fd >= 0)
        close(tar_fd);
    free(lock_name);
    free(tmp);
    free(dir);
    free(cache);
    return r;
}
