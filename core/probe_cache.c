/* core: provider probes and their cache. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cordon/sdk/facts.h>
#include "sdk/facts-validate.h"
#include "sdk/json-internal.h"
#include <cordon/sdk/fs.h>
#include "core/canonical.h"
#include "core/probe_cache.h"
#include "core/verify.h"

static int cache_dir(struct cordon_ctx *ctx);

/* n lowercase hex digits. */
static bool lower_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* A file's digest is remembered only once its last change is this old:
 * the kernel stamps changes with a coarse clock, so two writes within one
 * tick can leave the same mtime and ctime (git's "racy" index entries). */
#define DIGEST_MEMO_SETTLED_S 2

/*
 * sha256 hex of a file's bytes (at most CORDON_PROBE_CACHE_MAX_FILE), or
 * an error. Hashing the observer and the provider (a megabyte or more) cost
 * every cordon command that selects a provider several milliseconds, so
 * the digest is remembered in the probe cache beside the facts, under the
 * file's identity: device, inode, size, mtime and ctime to the nanosecond.
 * Any write to the file, a rename over it or a new build changes one of
 * them; ctime cannot be set back by anyone but the clock's owner. A memo
 * that does not match is ignored and the file hashed again.
 */
static int file_digest(struct cordon_ctx *ctx, const char *path, char ret_hex[65])
{
    char pathsum[65], memo[48], identity[160], *text = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC), dfd = -1, r;
    size_t len = 0, ilen;
    struct stat st;

    if (fd < 0)
        return CORDON_E_IO;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return CORDON_E_IO;
    }
    snprintf(identity, sizeof(identity), "%ju %ju %jd %jd.%09ld %jd.%09ld ", (uintmax_t)st.st_dev,
             (uintmax_t)st.st_ino, (intmax_t)st.st_size, (intmax_t)st.st_mtim.tv_sec,
             st.st_mtim.tv_nsec, (intmax_t)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
    ilen = strlen(identity);
    cordon_sha256_hex(path, strlen(path), pathsum);
    snprintf(memo, sizeof(memo), "digest-%.32s", pathsum);
    dfd = cache_dir(ctx);
    if (dfd >= 0 && cordon_fs_read_file(dfd, memo, 256, &text, &len, NULL) == 0 &&
        len == ilen + 64 && memcmp(text, identity, ilen) == 0 && lower_hex(text + ilen, 64)) {
        memcpy(ret_hex, text + ilen, 64);
        ret_hex[64] = '\0';
        r = 0;
        goto out;
    }
    r = cordon_sha256_fd(fd, CORDON_PROBE_CACHE_MAX_FILE, ret_hex, NULL, NULL);
    if (r == 0 && dfd >= 0 && st.st_ctim.tv_sec + DIGEST_MEMO_SETTLED_S < time(NULL)) {
        char line[sizeof(identity) + 65];

        snprintf(line, sizeof(line), "%s%s", identity, ret_hex);
        cordon_fs_write_replace(dfd, memo, line, strlen(line), 0600, NULL);
    }
out:
    free(text);
    if (dfd >= 0)
        close(dfd);
    close(fd);
    return r;
}

/*
 * The cache key: the provider file's content digest (a rebuilt or replaced
 * .so is verified again even with the same path, size and mtime), its
 * version, the config (which carries the image) and its image again on its
 * own line, the observer's content digest, the version of the host's
 * judging rules (CORDON_VERIFY_JUDGE_VERSION) and DOCKER_HOST.
 */
static int cache_key(struct cordon_ctx *ctx, struct cordon__loaded *p, const cJSON *config,
                     char ret_key[65])
{
    const cJSON *image = cJSON_GetObjectItemCaseSensitive(config, "image");
    char so[65], ob[65], *canon = NULL, *text = NULL;
    const char *docker_host;
    int r;

    if (file_digest(ctx, p->path, so) < 0 || file_digest(ctx, ctx->observer_path, ob) < 0)
        return CORDON_E_IO;
    r = cordon__json_canonical(config, &canon, NULL);
    if (r < 0)
        return r;
    /* DOCKER_HOST stands in for docker.so's "socket" when its config names
     * none: facts verified on one daemon are never reused for another. */
    docker_host = getenv("DOCKER_HOST");
    if (asprintf(&text, "so sha256:%s\nversion %s\nobserver sha256:%s\nimage %s\nconfig %s\njudge %d\n"
                 "DOCKER_HOST %s", so, p->vt.version, ob, cJSON_IsString(image) ? image->valuestring : "-",
                 canon, CORDON_VERIFY_JUDGE_VERSION, docker_host != NULL ? docker_host : "-") < 0) {
        free(canon);
        return CORDON_E_NOMEM;
    }
    cordon_sha256_hex(text, strlen(text), ret_key);
    free(text);
    free(canon);
    return 0;
}

static int cache_dir(struct cordon_ctx *ctx)
{
    int sfd = open(ctx->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), dfd = -1;

    if (sfd < 0)
        return -1;
    if (mkdirat(sfd, "probe-cache", 0700) < 0 && errno != EEXIST)
        goto out;
    cordon_fs_open_beneath(sfd, "probe-cache", O_RDONLY | O_DIRECTORY, 0, &dfd, NULL);
out:
    close(sfd);
    return dfd;
}

static cJSON *cache_get(struct cordon_ctx *ctx, const char *name)
{
    int dfd = cache_dir(ctx), fd = -1;
    char *text = NULL;
    size_t len = 0;
    struct stat st;
    cJSON *facts = NULL;

    if (dfd < 0)
        return NULL;
    if (cordon_fs_open_beneath(dfd, name, O_RDONLY, 0, &fd, NULL) < 0 || fstat(fd, &st) < 0)
        goto out;
    if (time(NULL) - st.st_mtime > CORDON_PROBE_CACHE_TTL_S)
        goto out;
    /* What call_probe would accept from the provider, and no more: the
     * cache holds a document the host itself wrote, but the state
     * directory is a file like any other. */
    if (cordon_fs_read_file(dfd, name, CORDON_FACTS_MAX_BYTES, &text, &len, NULL) < 0)
        goto out;
    cordon__facts_parse_valid(text, &facts, NULL);
    /* Facts judged by other rules than this host's are judged again, even
     * under a key that matches. */
    if (facts != NULL &&
        cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(facts, "verification"),
                                                              "judge_version")) != CORDON_VERIFY_JUDGE_VERSION) {
        cJSON_Delete(facts);
        facts = NULL;
    }
out:
    free(text);
    if (fd >= 0)
        close(fd);
    close(dfd);
    return facts;
}

static void cache_put(struct cordon_ctx *ctx, const char *name, const char *text)
{
    int dfd = cache_dir(ctx);

    if (dfd < 0)
        return;
    cordon_fs_write_atomic(dfd, name, text, strlen(text), 0600, NULL);
    close(dfd);
}

static int call_probe(struct cordon_ctx *ctx, struct cordon__loaded *p, const cJSON *config,
                      uint32_t flags, cJSON **ret_facts, char **ret_text, struct cordon_error *err)
{
    char *config_text = cJSON_PrintUnformatted(config), *facts_text = NULL;
    struct cordon_error perr;
    int r;

    if (config_text == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
    cordon_error_init(&perr);
    r = p->vt.probe(ctx->host, config_text, flags, &facts_text, &perr);
    free(config_text);
    if (r != 0 || facts_text == NULL) {
        r = cordon_error_set(err, r < 0 ? r : CORDON_E_PROVIDER, perr.os_errno, "%s",
                             perr.message[0] ? perr.message : "probe returned no facts");
        goto out;
    }
    if (flags == CORDON_PROBE_FULL) {
        r = cordon__facts_parse_valid(facts_text, ret_facts, err);
        if (r < 0)
            goto out;
    } else {
        /* An availability answer is bounded like the full facts. */
        r = cordon__json_parse("probe facts", facts_text, CORDON_FACTS_MAX_BYTES, ret_facts, err);
        if (r < 0)
            goto out;
    }
    if (*ret_facts == NULL || !cJSON_IsObject(*ret_facts)) {
        cJSON_Delete(*ret_facts);
        *ret_facts = NULL;
        r = cordon_error_set(err, CORDON_E_PROVIDER, 0, "probe facts are not a JSON object");
        goto out;
    }
    if (ret_text != NULL) {
        *ret_text = strdup(facts_text);
    }
out:
    if (facts_text != NULL)
        ctx->host->free(facts_text);
    return r;
}

int cordon__probe_full(struct cordon_ctx *ctx, struct cordon__loaded *p, const cJSON *config,
                       cJSON **ret_facts, bool *ret_cached, struct cordon_error *err)
{
    char key[65], name[160], *text = NULL;
    bool keyed = cache_key(ctx, p, config, key) == 0;
    cJSON *facts = NULL;
    int r;

    if (keyed)
        snprintf(name, sizeof(name), "%s-%.32s.json", p->id, key);
    if (keyed && !ctx->fresh) {
        facts = cache_get(ctx, name);
        if (facts != NULL) {
            *ret_facts = facts;
            *ret_cached = true;
            return 0;
        }
    }
    r = call_probe(ctx, p, config, CORDON_PROBE_FULL, &facts, NULL, err);
    if (r < 0)
        return r;
    /* The provider's facts are its claim; the host observes for itself. */
    r = ctx->verify(ctx, p, config, facts, err);
    if (r < 0) {
        cJSON_Delete(facts);
        return r;
    }
    /* Only verified facts of a usable provider are worth keeping: an
     * unavailable or unverified one must be asked again next time. */
    if (keyed && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(facts, "available")) &&
        strcmp(cordon__verification_status(facts), "unverified") != 0 &&
        (text = cJSON_PrintUnformatted(facts)) != NULL)
        cache_put(ctx, name, text);
    free(text);
    *ret_facts = facts;
    *ret_cached = false;
    return 0;
}

int cordon__probe_availability(struct cordon_ctx *ctx, struct cordon__loaded *p,
                               const cJSON *config, bool *ret_available, char **ret_reason,
                               struct cordon_error *err)
{
    cJSON *facts = NULL;
    const cJSON *reason;
    int r = call_probe(ctx, p, config, CORDON_PROBE_AVAILABILITY, &facts, NULL, err);

    if (r < 0)
        return r;
    reason = cJSON_GetObjectItemCaseSensitive(facts, "reason");
    *ret_available = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(facts, "available"));
    /* The reason is said in one line of a skip: a bounded copy. */
    *ret_reason = strndup(cJSON_IsString(reason) ? reason->valuestring : "", 512);
    cJSON_Delete(facts);
    return 0;
}
