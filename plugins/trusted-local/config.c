/* trusted-local: the provider config and the execution root (see trusted-local.h). */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <cordon/provider.h>
#include <cordon/sdk/uid.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/json.h>
#include "plugins/common/area.h"
#include "plugins/trusted-local/trusted-local.h"

/* ---- small helpers ------------------------------------------------------ */

int tl__nomem(struct cordon_error *err, const char *what)
{
    return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "%s: out of memory", what);
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
    r = area__path_check("root", cfg.root, err);
    if (r < 0)
        goto out;
    *ret = cfg;
    cfg.root = NULL;
out:
    tl__config_clear(&cfg);
    cJSON_Delete(doc);
    return r;
}
