/* core: checkpoint an execution's workspace into the store, and restore
 * one as a new execution (json.md §9). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/checkpoint.h"
#include "core/hostflow.h"
#include "core/loader.h"
#include "core/pump.h"
#include "core/record.h"

struct export_job {
    const struct cordon__bound *b;
    const char *state;
};

static int export_produce(void *arg, int fd, struct cordon_error *err)
{
    struct export_job *job = arg;
    struct cordon_error perr;
    int r;

    cordon_error_init(&perr);
    r = job->b->p->vt.export_tar(job->b->res, job->state, "", fd, &perr);
    if (r != 0)
        return cordon_error_set(err, r < 0 ? r : CORDON_E_PROVIDER, perr.os_errno, "export: %s",
                                perr.message);
    return 0;
}

int cordon_checkpoint_json(struct cordon_ctx *ctx, const char *execution_id, const char *metadata_json,
                           char **ret_json, struct cordon_error *err)
{
    static const char *const copied[] = { "provider_id", "image", "resources", "network", "environment" };
    struct cordon__record *rec = NULL;
    struct cordon__bound b = { NULL, NULL };
    struct export_job job;
    struct cordon__pump pump;
    cJSON *meta = NULL, *fields = NULL, *manifest = NULL;
    struct cordon_limits limits;
    char *state = NULL, *store = NULL;
    int r, rfd = -1;

    if (metadata_json != NULL) {
        r = cordon__json_parse_bounded("metadata", metadata_json, &meta, err);
        if (r < 0)
            return r;
        if (!cJSON_IsObject(meta)) {
            cJSON_Delete(meta);
            return cordon_error_set(err, CORDON_E_INVALID, 0, "metadata: must be a JSON object");
        }
    }
    store = cordon__checkpoint_store(ctx);
    /* The lock: a checkpoint waits for an exec under way, and no exec
     * starts until it is done. */
    if (store == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
        goto out;
    }
    if ((r = cordon__record_open(ctx, execution_id, false, &rec, err)) < 0 ||
        (r = cordon__bind_record(ctx, rec, &b, err)) < 0)
        goto out;
    if (cordon__record_expired(rec, NULL)) {
        cordon__execution_destroy_bound(ctx, rec, &b, NULL);
        r = cordon_error_set(err, CORDON_E_TIMEOUT, 0, "execution %s: expired (terminated)", execution_id);
        goto out;
    }
    state = cordon__record_state(rec);
    if (state == NULL) {
        r = cordon_error_set(err, CORDON_E_IO, 0, "execution %s: not ready", execution_id);
        goto out;
    }
    fields = cJSON_CreateObject();
    cJSON_AddStringToObject(fields, "source_execution_id", execution_id);
    for (size_t i = 0; i < sizeof(copied) / sizeof(copied[0]); i++)
        cJSON_AddItemToObject(fields, copied[i],
                              cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(rec->doc, copied[i]), 1));
    cJSON_AddItemToObject(fields, "metadata", meta != NULL ? meta : cJSON_CreateObject());
    meta = NULL;
    if ((r = cordon__record_limits(rec, &limits, err)) < 0 ||
        (r = cordon__record_phase(rec, "checkpointing", true, err)) < 0)
        goto out;
    job.b = &b;
    job.state = state;
    r = cordon__pump_start(&pump, export_produce, &job, &rfd, err);
    if (r == 0) {
        r = cordon__checkpoint_write(store, rfd, fields, limits.disk_bytes, CORDON_TAR_ENTRIES_MAX,
                                     &manifest, err);
        close(rfd);
        r = cordon__pump_join(&pump, r, err);
        if (r < 0 && manifest != NULL) {
            /* the export failed after the store accepted a short stream */
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(manifest, "checkpoint_id");
            if (cJSON_IsString(id))
                cordon__checkpoint_remove(store, id->valuestring, NULL);
        }
    }
    cordon__record_phase(rec, "ready", false, NULL);
    if (r < 0)
        goto out;
    r = cordon__json_done(0, manifest, ret_json, err);
    manifest = NULL;
out:
    cordon__unbind_provider(&b, NULL);
    cordon__record_close(rec);
    cJSON_Delete(manifest);
    cJSON_Delete(fields);
    cJSON_Delete(meta);
    free(state);
    free(store);
    return r;
}

int cordon_restore_json(struct cordon_ctx *ctx, const char *checkpoint_id, const char *request_json,
                        char **ret_json, struct cordon_error *err)
{
    static const char *const keys[] = { "provider", "provider_config", "image", "execution_id",
                                        "allow_unsafe_local", "allow_unpinned", "isolation" };
    /* The request's key, then the manifest's. */
    static const char *const restored[][2] = {
        { "provider", "provider_id" }, { "image", "image" }, { "resources", "resources" },
        { "network", "network" }, { "environment", "environment" }, { "metadata", "metadata" },
    };
    cJSON *opts = NULL, *manifest = NULL, *req = NULL, *result = NULL;
    char *store = cordon__checkpoint_store(ctx);
    struct cordon__host_spec spec;
    int r, fd = -1;

    memset(&spec, 0, sizeof(spec));
    if (store == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
    r = cordon__json_parse_bounded("request", request_json != NULL ? request_json : "{}", &opts, err);
    if (r == 0 && !cJSON_IsObject(opts))
        r = cordon_error_set(err, CORDON_E_INVALID, 0, "request: must be a JSON object");
    if (r == 0)
        r = cordon__check_keys("", opts, keys, sizeof(keys) / sizeof(keys[0]), err);
    if (r == 0)
        r = cordon__checkpoint_open(store, checkpoint_id, &manifest, &fd, err);
    if (r < 0)
        goto out;
    /* A provision request from the manifest, the caller's choices over it;
     * then the whole provision validation runs again. */
    req = cJSON_CreateObject();
    for (size_t i = 0; i < sizeof(restored) / sizeof(restored[0]); i++)
        cJSON_AddItemToObject(req, restored[i][0],
                              cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(manifest, restored[i][1]), 1));
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(opts, keys[i]);
        if (v == NULL)
            continue;
        cJSON_DeleteItemFromObjectCaseSensitive(req, keys[i]);
        cJSON_AddItemToObject(req, keys[i], cJSON_Duplicate(v, 1));
    }
    /* a checkpoint taken under one provider restores under another: its
     * image is the other provider's business */
    if (cJSON_GetObjectItemCaseSensitive(opts, "provider") != NULL &&
        cJSON_GetObjectItemCaseSensitive(opts, "image") == NULL) {
        cJSON_DeleteItemFromObjectCaseSensitive(req, "image");
    }
    if ((r = cordon__host_spec_validate(ctx, req, &spec, err)) < 0)
        goto out;
    if ((r = cordon__provision(ctx, &spec, fd, &result, err)) < 0)
        goto out;
    cJSON_AddStringToObject(result, "restored_from", checkpoint_id);
    r = cordon__json_done(0, result, ret_json, err);
    result = NULL;
out:
    if (fd >= 0)
        close(fd);
    cJSON_Delete(spec.config);
    cJSON_Delete(result);
    cJSON_Delete(req);
    cJSON_Delete(manifest);
    cJSON_Delete(opts);
    free(store);
    return r;
}

int cordon_checkpoint_list_json(struct cordon_ctx *ctx, const char *execution_id, char **ret_json,
                                struct cordon_error *err)
{
    cJSON *all = NULL, *doc = NULL, *list, *item, *next;
    char *store = NULL;
    int r;

    if (ctx == NULL || ret_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "checkpoint ls: ctx and ret_json required");
    /* The execution need not exist any more: its checkpoints outlive it. */
    if (execution_id != NULL && (r = cordon_execution_id_check("execution_id", execution_id, err)) < 0)
        return r;
    if ((store = cordon__checkpoint_store(ctx)) == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
    r = cordon__checkpoint_list(store, &all, err);
    free(store);
    if (r < 0)
        return r;
    doc = cJSON_CreateObject();
    list = cJSON_AddArrayToObject(doc, "checkpoints");
    for (item = all != NULL ? all->child : NULL; item != NULL; item = next) {
        const cJSON *src = cJSON_GetObjectItemCaseSensitive(item, "source_execution_id");

        next = item->next;
        /* Filtered by execution, a broken checkpoint (no source to tell) is left out. */
        if (execution_id != NULL && (!cJSON_IsString(src) || strcmp(src->valuestring, execution_id) != 0))
            continue;
        cJSON_AddItemToArray(list, cJSON_DetachItemViaPointer(all, item));
    }
    cJSON_Delete(all);
    return cordon__json_done(0, doc, ret_json, err);
}

int cordon_checkpoint_remove_json(struct cordon_ctx *ctx, const char *checkpoint_id, char **ret_json,
                                  struct cordon_error *err)
{
    cJSON *doc;
    char *store;
    int r;

    if (ctx == NULL || ret_json == NULL || checkpoint_id == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "checkpoint rm: ctx, checkpoint_id and ret_json required");
    if ((store = cordon__checkpoint_store(ctx)) == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
    r = cordon__checkpoint_remove(store, checkpoint_id, err);
    free(store);
    if (r < 0)
        return r;
    doc = cJSON_CreateObject();
    cJSON_AddBoolToObject(doc, "ok", true);
    cJSON_AddStringToObject(doc, "checkpoint_id", checkpoint_id);
    return cordon__json_done(0, doc, ret_json, err);
}
