/* trusted-local: the provider config and the execution root (see trusted-local.h). */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <cordon/provider.h>
#include <cordon/sdk/uid.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/json.h>
#include "plugins/trusted-local/trusted-local.h"

/* ---- small helpers ------------------------------------------------------ */

int tl__nomem(struct cordon_error *err, const char *what)
{
    return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "%s: out of memory", what);
}

/* An absolute, clean directory path: no "." or ".." component, no "//",
 * no trailing '/', no control characters, not "/" itself. */
static int check_root(const char *root, struct cordon_error *err)
{
    size_t len = strnlen(root, TL_ROOT_MAX + 1);
    const char *p;

    if (len > TL_ROOT_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "root: longer than %u bytes", TL_ROOT_MAX);
    if (root[0] != '/' || len < 2 || root[len - 1] == '/')
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "root: \"%s\" must be an absolute directory path other than /",
                                root);
    for (p = root; *p != '\0'; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "root: control character in \"%s\"", root);
        if (*p == '/' && (p[1] == '/' || (p[1] == '.' && (p[2] == '/' || p[2] == '\0')) ||
                          (p[1] == '.' && p[2] == '.' && (p[3] == '/' || p[3] == '\0'))))
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "root: \"%s\" must be normalised (no \"//\", \".\" or \"..\")",
                                    root);
    }
    return 0;
}

/* ---- config ------------------------------------------------------------- */

void tl__config_clear(struct tl_config *cfg)
{
    if (cfg == NULL)
        return;
    free(cfg->root);
    cfg->root = NULL;
}

int tl__config_parse(const struct cordon_host_v1 *host, const char *json,
                     struct tl_config *ret, struct cordon_error *err)
{
    struct tl_config cfg = { .seccomp = true };
    const char *root = NULL;
    cJSON *doc = NULL, *item;
    int r;

    r = cordon_json_parse_object("config", json != NULL ? json : "{}", TL_CONFIG_MAX, &doc, err);
    if (r < 0)
        goto out;
    cJSON_ArrayForEach(item, doc) {
        const char *key = item->string;

        if (strcmp(key, "allow_unsafe_local") == 0 || strcmp(key, "seccomp") == 0) {
            r = cordon_json_bool(item, "config",
                                 key[0] == 'a' ? &cfg.allow_unsafe_local : &cfg.seccomp, err);
            if (r < 0)
                goto out;
        } else if (strcmp(key, "image") == 0) {
            /* the host passes a run's --image to every candidate */
            if (!cJSON_IsNull(item)) {
                r = cordon_error_set(err, CORDON_E_UNSUPPORTED, 0,
                                     "config.image: trusted-local runs on the host and takes no image");
                goto out;
            }
        } else if (strcmp(key, "root") == 0) {
            if (!cJSON_IsString(item)) {
                r = cordon_error_set(err, CORDON_E_INVALID, 0, "config.root: must be a string");
                goto out;
            }
            root = item->valuestring;
        } else if (strcmp(key, "run_as") == 0) {
            r = cordon_uid_parse("config.run_as", cJSON_GetStringValue(item), &cfg.run_as_uid,
                                 &cfg.run_as_gid, err);
            if (r < 0)
                goto out;
            cfg.run_as_set = true;
        } else {
            r = cordon_error_set(err, CORDON_E_INVALID, 0,
                                 "config.%.*s: unknown key (known: allow_unsafe_local, root, "
                                 "run_as, seccomp)",
                                 cordon_text_fit(key, 64), key);
            goto out;
        }
    }

    if (!cfg.run_as_set)
        cfg.run_as_uid = cfg.run_as_gid = TL_DEFAULT_UID;
    /* Only root can switch users; otherwise the sandbox is the current user. */
    cfg.switch_user = geteuid() == 0;
    cfg.uid = cfg.switch_user ? cfg.run_as_uid : geteuid();
    /* As root and with no run_as, every execution runs as a uid of its own:
     * per-user kernel limits and "kill every process of my uid" stay inside. */
    cfg.pooled = cfg.switch_user && !cfg.run_as_set;
    cfg.gid = cfg.switch_user ? cfg.run_as_gid : getegid();

    if (root != NULL) {
        cfg.root = strdup(root);
    } else if (cfg.switch_user) {
        cfg.root = strdup(TL_ROOT_DEFAULT_PRIVILEGED);
    } else {
        const char *sd = CORDON_HOST_HAS(host, state_dir) ? host->state_dir : NULL;

        if (sd == NULL || sd[0] != '/') {
            r = cordon_error_set(err, CORDON_E_INVALID, 0,
                                 "config.root: no default (the host has no absolute state_dir); "
                                 "set \"root\"");
            goto out;
        }
        if (asprintf(&cfg.root, "%s/providers/" TL_ID "/executions", sd) < 0)
            cfg.root = NULL;
    }
    if (cfg.root == NULL) {
        r = tl__nomem(err, "config.root");
        goto out;
    }
    r = check_root(cfg.root, err);
    if (r < 0)
        goto out;
    *ret = cfg;
    cfg.root = NULL;
out:
    tl__config_clear(&cfg);
    cJSON_Delete(doc);
    return r;
}

/* ---- the execution root ------------------------------------------------- */

/*
 * Create the root and its missing parents (parents 0755, the root 0711),
 * then check that it can hold executions: a directory of ours, not
 * writable by others, and - when children switch users - every component
 * searchable by that user, or its workspace would be out of its reach.
 */
int tl__root_prepare(const struct tl_config *cfg, struct cordon_error *err)
{
    char path[TL_ROOT_MAX + 1];
    struct stat st = { 0 };
    size_t i, len = strlen(cfg->root);

    memcpy(path, cfg->root, len + 1);
    for (i = 1; i <= len; i++) {
        bool last = i == len;
        mode_t mode = last ? 0711 : 0755;

        if (!last && path[i] != '/')
            continue;
        path[i] = '\0';
        if (mkdir(path, mode) == 0) {
            /* mkdir obeys the umask, which a provider may not change. */
            if (chmod(path, mode) != 0)
                return cordon_error_set(err, CORDON_E_IO, errno, "root: chmod %s: %s", path,
                                        strerror(errno));
        } else if (errno != EEXIST) {
            return cordon_error_set(err, errno == EACCES || errno == EPERM ? CORDON_E_DENIED
                                                                           : CORDON_E_IO,
                                    errno, "root: cannot create %s: %s", path, strerror(errno));
        }
        if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
            return cordon_error_set(err, CORDON_E_INVALID, errno, "root: %s is not a directory",
                                    path);
        if (cfg->switch_user && (st.st_mode & S_IXOTH) == 0)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "root: %s (mode %04o) is not searchable by the sandbox user "
                                    "%u; use a root whose every directory has o+x",
                                    path, (unsigned)(st.st_mode & 07777), (unsigned)cfg->uid);
        if (!last)
            path[i] = '/';
    }
    if (st.st_uid != geteuid() || (st.st_mode & 022) != 0)
        return cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                "root: %s must belong to uid %u and not be group/other writable "
                                "(owner %u, mode %04o)", cfg->root, (unsigned)geteuid(),
                                (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
    return 0;
}

