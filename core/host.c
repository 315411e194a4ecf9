/* core: the host context (state directory, instance id, services table). */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/abi.h"
#include "core/verify.h"
#include <cordon/sdk/fs.h>
#include <cordon/sdk/json.h>
#include "sdk/fs-internal.h"
#include "core/internal.h"

int cordon__random_hex(char *ret, size_t n_bytes, struct cordon_error *err)
{
    static const char digits[] = "0123456789abcdef";
    unsigned char buf[64];

    if (n_bytes > sizeof(buf))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "random: %zu bytes asked, at most %zu",
                                n_bytes, sizeof(buf));
    if (getrandom(buf, n_bytes, 0) != (ssize_t)n_bytes)
        return cordon_error_set(err, CORDON_E_IO, errno, "random: getrandom failed: %s",
                                strerror(errno));
    for (size_t i = 0; i < n_bytes; i++) {
        ret[2 * i] = digits[buf[i] >> 4];
        ret[2 * i + 1] = digits[buf[i] & 15];
    }
    ret[2 * n_bytes] = '\0';
    return 0;
}

int cordon__json_done(int r, cJSON *doc, char **ret_json, struct cordon_error *err)
{
    char *text = NULL;

    /* What a provider sent is embedded as it came: the document leaves
     * here strict UTF-8. */
    if (r == 0 && doc != NULL) {
        cordon_json_sanitize(doc);
        text = cJSON_PrintUnformatted(doc);
    }
    cJSON_Delete(doc);
    if (r == 0 && text == NULL)
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
    if (r == 0)
        *ret_json = text;
    return r;
}

cJSON *cordon__json_merge(const cJSON *base, const cJSON *over)
{
    cJSON *out = cJSON_IsObject(base) ? cJSON_Duplicate(base, 1) : cJSON_CreateObject();

    if (out == NULL || !cJSON_IsObject(over))
        return out;
    for (const cJSON *c = over->child; c != NULL; c = c->next) {
        cJSON *have = cJSON_GetObjectItemCaseSensitive(out, c->string);
        cJSON *merged = (cJSON_IsObject(have) && cJSON_IsObject(c)) ? cordon__json_merge(have, c)
                                                                     : cJSON_Duplicate(c, 1);
        if (merged == NULL)
            continue;
        if (have != NULL)
            cJSON_ReplaceItemInObjectCaseSensitive(out, c->string, merged);
        else
            cJSON_AddItemToObject(out, c->string, merged);
    }
    return out;
}

static char *default_state_dir(void)
{
    const char *env = secure_getenv("CORDON_STATE_DIR");
    const char *xdg, *home;
    char *path = NULL;

    if (env != NULL && env[0] == '/')
        return strdup(env);
    if (geteuid() == 0)
        return strdup("/var/lib/cordon");
    xdg = secure_getenv("XDG_STATE_HOME");
    if (xdg != NULL && xdg[0] == '/')
        return asprintf(&path, "%s/cordon", xdg) < 0 ? NULL : path;
    home = secure_getenv("HOME");
    if (home != NULL && home[0] == '/')
        return asprintf(&path, "%s/.local/state/cordon", home) < 0 ? NULL : path;
    return NULL;
}

/* mkdir -p with the last component at mode (parents 0755). */
static int make_dir_chain(const char *path, mode_t mode, struct cordon_error *err)
{
    char buf[PATH_MAX];
    size_t len = strlen(path);

    if (len == 0 || len >= sizeof(buf) || path[0] != '/')
        return cordon_error_set(err, CORDON_E_INVALID, 0, "state_dir: \"%s\" must be an absolute path", path);
    memcpy(buf, path, len + 1);
    for (char *p = buf + 1; *p != '\0'; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            return cordon_error_set(err, CORDON_E_IO, errno, "state_dir: cannot create %s: %s", buf,
                                    strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, mode) < 0 && errno != EEXIST)
        return cordon_error_set(err, CORDON_E_IO, errno, "state_dir: cannot create %s: %s", buf,
                                strerror(errno));
    return 0;
}

/* The instance id persists in <state_dir>/instance-id, so that labels made
 * by one cordon process are recognised by the next (cordon gc). */
static int load_instance_id(struct cordon_ctx *ctx, struct cordon_error *err)
{
    int dfd = open(ctx->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char *buf = NULL, tmp[48];
    size_t len = 0;
    int r, tries = 0;

    if (dfd < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "state_dir: cannot open %s: %s",
                                ctx->state_dir, strerror(errno));
again:
    r = cordon_fs_read_file(dfd, "instance-id", 64, &buf, &len, NULL);
    if (r == 0) {
        /* What providers are promised: 32 lowercase hex digits (a newline
         * after them, as an editor leaves it, is fine). */
        bool hex = len == 32 || (len == 33 && buf[32] == '\n');

        for (size_t i = 0; hex && i < 32; i++)
            hex = (buf[i] >= '0' && buf[i] <= '9') || (buf[i] >= 'a' && buf[i] <= 'f');
        if (!hex) {
            r = cordon_error_set(err, CORDON_E_INVALID, 0,
                                 "state_dir: %s/instance-id is not 32 lowercase hex digits "
                                 "(remove it and a new id is made; sandboxes labelled with "
                                 "the old one are then no longer this host's)",
                                 ctx->state_dir);
            goto out;
        }
        memcpy(ctx->instance_id, buf, 32);
        ctx->instance_id[32] = '\0';
        goto out;
    }
    /* The first use of a state directory: written under a name of its own,
     * then link(2)ed into place, which fails when another cordon got there
     * first; then its id is the one. (A rename let the last of two
     * concurrent first uses win, while the first went on with an id no
     * file held: its sandboxes were then another host's.) */
    r = cordon__random_hex(ctx->instance_id, 16, err);
    if (r < 0)
        goto out;
    snprintf(tmp, sizeof(tmp), ".instance-id.%s", ctx->instance_id);
    r = cordon_fs_write_atomic(dfd, tmp, ctx->instance_id, 32, 0600, err);
    if (r < 0)
        goto out;
    if (linkat(dfd, tmp, dfd, "instance-id", 0) < 0) {
        int e = errno;

        unlinkat(dfd, tmp, 0);
        if (e == EEXIST && tries++ < 3)
            goto again;
        r = cordon_error_set(err, CORDON_E_IO, e, "state_dir: %s/instance-id: %s", ctx->state_dir,
                             strerror(e));
        goto out;
    }
    unlinkat(dfd, tmp, 0);
out:
    free(buf);
    close(dfd);
    return r;
}

static int add_search_dir(struct cordon_ctx *ctx, const char *dir)
{
    char **grown;

    if (dir == NULL || dir[0] != '/')
        return 0;   /* only absolute directories are searched */
    grown = realloc(ctx->search_dirs, (ctx->n_search_dirs + 1) * sizeof(*grown));
    if (grown == NULL)
        return CORDON_E_NOMEM;
    ctx->search_dirs = grown;
    ctx->search_dirs[ctx->n_search_dirs] = strdup(dir);
    if (ctx->search_dirs[ctx->n_search_dirs] == NULL)
        return CORDON_E_NOMEM;
    ctx->n_search_dirs++;
    return 0;
}

static int load_config(struct cordon_ctx *ctx, const char *path, struct cordon_error *err)
{
    char *text = NULL, name[PATH_MAX + 16];
    int fd, r;

    if (path == NULL) {
        ctx->config = cJSON_CreateObject();
        return ctx->config != NULL ? 0 : CORDON_E_NOMEM;
    }
    /* The config file is the caller's own, named by them: an ordinary
     * open, bounded. */
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "config %s: %s", path, strerror(errno));
    snprintf(name, sizeof(name), "config %s", path);
    r = cordon__fs_read_fd(fd, name, CORDON_CONFIG_MAX_BYTES, 0, &text, NULL, err);
    close(fd);
    if (r < 0)
        return r;
    r = cordon__json_parse_bounded("config", text, &ctx->config, err);
    free(text);
    if (r == 0 && !cJSON_IsObject(ctx->config))
        r = cordon_error_set(err, CORDON_E_INVALID, 0, "config %s: must be a JSON object", path);
    return r;
}

/*
 * The services table a provider receives lives for the life of the process,
 * as provider.h promises: a provider may keep the pointer, or its strings,
 * past the context that loaded it. One table per distinct set of paths and
 * instance id, never freed (a process makes few: one per state directory).
 */
struct interned_host {
    struct cordon_host_v1 host;
    char *observer_path, *init_path, *instance_id, *state_dir;
    struct interned_host *next;
};

static pthread_mutex_t interned_lock = PTHREAD_MUTEX_INITIALIZER;
static struct interned_host *interned;

static bool same_text(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static char *dup_text(const char *s, bool *ok)
{
    char *d = s != NULL ? strdup(s) : NULL;

    *ok = *ok && (s == NULL || d != NULL);
    return d;
}

static const struct cordon_host_v1 *host_table(const struct cordon_ctx *ctx)
{
    struct interned_host *h;
    bool ok = true;

    pthread_mutex_lock(&interned_lock);
    for (h = interned; h != NULL; h = h->next)
        if (same_text(h->observer_path, ctx->observer_path) &&
            same_text(h->init_path, ctx->init_path) && same_text(h->instance_id, ctx->instance_id) &&
            same_text(h->state_dir, ctx->state_dir))
            goto out;
    h = calloc(1, sizeof(*h));
    if (h != NULL) {
        h->observer_path = dup_text(ctx->observer_path, &ok);
        h->init_path = dup_text(ctx->init_path, &ok);
        h->instance_id = dup_text(ctx->instance_id, &ok);
        h->state_dir = dup_text(ctx->state_dir, &ok);
        if (!ok) {
            free(h->observer_path);
            free(h->init_path);
            free(h->instance_id);
            free(h->state_dir);
            free(h);
            h = NULL;
            goto out;
        }
        cordon__host_table_init(&h->host, h->observer_path, h->init_path, h->instance_id,
                               h->state_dir);
        h->next = interned;
        interned = h;
    }
out:
    pthread_mutex_unlock(&interned_lock);
    return h != NULL ? &h->host : NULL;
}

const char *cordon_version(void)
{
    return PACKAGE_VERSION;
}

int cordon_ctx_new(const struct cordon_ctx_opts *opts, struct cordon_ctx **ret_ctx,
                   struct cordon_error *err)
{
    struct cordon_ctx *ctx = calloc(1, sizeof(*ctx));
    const char *env;
    int r;

    if (ctx == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
    ctx->fresh = opts != NULL && opts->fresh;
    ctx->verify = cordon__verify_facts;
    ctx->state_dir = (opts != NULL && opts->state_dir != NULL) ? strdup(opts->state_dir)
                                                              : default_state_dir();
    if (ctx->state_dir == NULL) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0,
                             "state_dir: none given and no default (set CORDON_STATE_DIR)");
        goto fail;
    }
    r = make_dir_chain(ctx->state_dir, 0700, err);
    if (r < 0)
        goto fail;
    r = load_instance_id(ctx, err);
    if (r < 0)
        goto fail;
    env = (opts != NULL && opts->observer_path != NULL) ? opts->observer_path
                                                        : secure_getenv("CORDON_OBSERVER");
    ctx->observer_path = strdup(env != NULL && env[0] == '/' ? env : CORDON_HELPERDIR "/cordon-observe");
    env = secure_getenv("CORDON_INIT");
    ctx->init_path = strdup(env != NULL && env[0] == '/' ? env : CORDON_HELPERDIR "/cordon-init");
    env = secure_getenv("CORDON_GIT_EXPORT");
    ctx->git_export_path = strdup(env != NULL && env[0] == '/' ? env : CORDON_HELPERDIR "/cordon-git-export");
    if (ctx->observer_path == NULL || ctx->init_path == NULL || ctx->git_export_path == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
        goto fail;
    }
    /* CORDON_PROVIDER_PATH (absolute directories, ':'-separated) comes
     * before the installed provider directory. */
    env = secure_getenv("CORDON_PROVIDER_PATH");
    if (env != NULL) {
        char *copy = strdup(env), *save = NULL;
        for (char *dir = copy != NULL ? strtok_r(copy, ":", &save) : NULL; dir != NULL;
             dir = strtok_r(NULL, ":", &save))
            add_search_dir(ctx, dir);
        free(copy);
    }
    add_search_dir(ctx, CORDON_PROVIDERDIR);
    r = load_config(ctx, opts != NULL ? opts->config_path : NULL, err);
    if (r < 0)
        goto fail;
    ctx->host = host_table(ctx);
    if (ctx->host == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "context: out of memory");
        goto fail;
    }
    *ret_ctx = ctx;
    return 0;
fail:
    cordon_ctx_free(ctx);
    return r;
}

void cordon_ctx_free(struct cordon_ctx *ctx)
{
    if (ctx == NULL)
        return;
    /* Loaded providers stay mapped (the host never unloads one); only our
     * bookkeeping goes. */
    for (size_t i = 0; i < ctx->n_loaded; i++) {
        free(ctx->loaded[i]->path);
        free(ctx->loaded[i]);
    }
    free(ctx->loaded);
    for (size_t i = 0; i < ctx->n_search_dirs; i++)
        free(ctx->search_dirs[i]);
    free(ctx->search_dirs);
    cJSON_Delete(ctx->config);
    free(ctx->state_dir);
    free(ctx->observer_path);
    free(ctx->init_path);
    free(ctx->git_export_path);
    free(ctx);
}

void cordon_free(void *p)
{
    free(p);
}
