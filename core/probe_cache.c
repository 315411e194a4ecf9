/* core: provider probes and their cache. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cordon/sdk/facts.h>
#include <cordon/sdk/fs.h>
#include "core/canonical.h"
#include "core/probe_cache.h"

static int cache_key(struct cordon_ctx *ctx, struct cordon__loaded *p, const cJSON *config,
                     char ret_key[65])
{
    struct stat so, ob;
    char *canon = NULL, *text = NULL;
    int r;

    if (stat(p->path, &so) < 0)
        return CORDON_E_IO;
    if (stat(ctx->observer_path, &ob) < 0)
        memset(&ob, 0, sizeof(ob));
    r = cordon__json_canonical(config, &canon, NULL);
    if (r < 0)
        return r;
    if (asprintf(&text, "%s\n%lld.%ld %lld\n%s\n%lld.%ld %lld\n%s", p->path,
                 (long long)so.st_mtim.tv_sec, so.st_mtim.tv_nsec, (long long)so.st_size,
                 p->vt.version, (long long)ob.st_mtim.tv_sec, ob.st_mtim.tv_nsec,
                 (long long)ob.st_size, canon) < 0) {
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
    if (cordon_fs_read_file(dfd, name, 4u << 20, &text, &len, NULL) < 0)
        goto out;
    if (cordon_facts_validate(text, NULL) == 0)
        facts = cJSON_Parse(text);
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
    r = p->vt.probe(&ctx->host, config_text, flags, &facts_text, &perr);
    free(config_text);
    if (r != 0 || facts_text == NULL) {
        r = cordon_error_set(err, r < 0 ? r : CORDON_E_PROVIDER, perr.os_errno, "%s",
                             perr.message[0] ? perr.message : "probe returned no facts");
        goto out;
    }
    if (flags == CORDON_PROBE_FULL) {
        r = cordon_facts_validate(facts_text, err);
        if (r < 0)
            goto out;
    }
    *ret_facts = cJSON_Parse(facts_text);
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
        ctx->host.free(facts_text);
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
    r = call_probe(ctx, p, config, CORDON_PROBE_FULL, &facts, &text, err);
    if (r < 0)
        return r;
    /* Only facts of a usable provider are worth keeping: an unavailable
     * one must be asked again next time. */
    if (keyed && text != NULL && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(facts, "available")))
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
    *ret_reason = strdup(cJSON_IsString(reason) ? reason->valuestring : "");
    cJSON_Delete(facts);
    return 0;
}
