/* core: providers by id on the search path; libltdl sits behind the sdk's
 * cordon__provider_load. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/abi.h"
#include "core/loader.h"

int cordon__loader_release(struct cordon__loaded *p, struct cordon_resource *res,
                           struct cordon_error *err)
{
    struct cordon_error perr;

    cordon_error_init(&perr);
    if (res == NULL || p->vt.release(res, &perr) == 0)
        return 0;
    p->quarantined = true;
    return cordon_error_set(err, CORDON_E_PROVIDER, perr.os_errno,
                            "release_failed: %s (provider quarantined)", perr.message);
}

char *cordon__loader_find(const struct cordon_ctx *ctx, const char *id)
{
    for (size_t i = 0; i < ctx->n_search_dirs; i++) {
        struct stat st;
        char *path = NULL;

        if (asprintf(&path, "%s/%s.so", ctx->search_dirs[i], id) < 0)
            return NULL;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
            return path;
        free(path);
    }
    return NULL;
}

int cordon__loader_get(struct cordon_ctx *ctx, const char *id, struct cordon__loaded **ret,
                       struct cordon_error *err)
{
    struct cordon__loaded *entry = NULL, **grown;
    int r;

    if (!cordon__provider_id_valid(id))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "provider \"%s\": not a provider id ([a-z0-9][a-z0-9-]{0,63})",
                                id != NULL ? id : "(null)");
    for (size_t i = 0; i < ctx->n_loaded; i++) {
        if (strcmp(ctx->loaded[i]->id, id) == 0) {
            *ret = ctx->loaded[i];
            return 0;
        }
    }
    entry = calloc(1, sizeof(*entry));
    if (entry == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
    snprintf(entry->id, sizeof(entry->id), "%s", id);
    entry->path = cordon__loader_find(ctx, id);
    if (entry->path == NULL) {
        r = cordon_error_set(err, CORDON_E_NOT_FOUND, 0,
                             "provider %s: no %s.so in the provider path", id, id);
        goto fail;
    }
    r = cordon__provider_load(entry->path, ctx->host, &entry->vt, err);
    if (r < 0)
        goto fail;
    grown = realloc(ctx->loaded, (ctx->n_loaded + 1) * sizeof(*grown));
    if (grown == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
        goto fail;
    }
    ctx->loaded = grown;
    ctx->loaded[ctx->n_loaded++] = entry;
    *ret = entry;
    return 0;
fail:
    if (entry != NULL)
        free(entry->path);
    free(entry);
    return r;
}

static int compare_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void cordon__loader_list_free(char **ids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
}

int cordon__loader_list(struct cordon_ctx *ctx, char ***ret_ids, size_t *ret_n,
                        struct cordon_error *err)
{
    char **ids = NULL;
    size_t n = 0, cap = 0;

    for (size_t d = 0; d < ctx->n_search_dirs; d++) {
        DIR *dir = opendir(ctx->search_dirs[d]);
        struct dirent *de;

        if (dir == NULL)
            continue;
        while ((de = readdir(dir)) != NULL) {
            char id[CORDON_PROVIDER_ID_MAX + 1];
            size_t len = strlen(de->d_name);
            bool seen = false;

            if (len < 4 || strcmp(de->d_name + len - 3, ".so") != 0)
                continue;
            if (cordon__provider_id_from_path(de->d_name, id, NULL) < 0)
                continue;
            for (size_t i = 0; i < n && !seen; i++)
                seen = strcmp(ids[i], id) == 0;
            if (seen)
                continue;
            if (n == cap) {
                char **grown = realloc(ids, (cap = cap ? cap * 2 : 8) * sizeof(*ids));
                if (grown == NULL) {
                    closedir(dir);
                    cordon__loader_list_free(ids, n);
                    return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
                }
                ids = grown;
            }
            ids[n] = strdup(id);
            if (ids[n] != NULL)
                n++;
        }
        closedir(dir);
    }
    if (n > 1)
        qsort(ids, n, sizeof(*ids), compare_str);
    *ret_ids = ids;
    *ret_n = n;
    return 0;
}
