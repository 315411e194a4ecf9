/*
 * core: extend an execution's lifetime (json.md §11.1). The new deadline is
 * now + runtime_ms, sooner or later than the one it replaces, and never
 * more than CORDON_LIMIT_RUNTIME_MAX after the execution's creation: a
 * caller that extends again and again still has a sandbox that ends.
 *
 * The record must never say the sandbox lives longer than it will: gc and
 * exec trust it. So a later deadline is first moved where the sandbox
 * enforces it (the provider's extend: its init's clock, its state's
 * backstop) and written to the record only once the provider says it
 * holds; a sooner one is written to the record first. Whatever fails in
 * between leaves the record at the sooner of the two deadlines. The
 * record's lock is held throughout (taken without waiting: an exec or a
 * checkpoint under way makes extend busy), so that no exec, checkpoint or
 * gc sees a half-moved deadline, and an execution whose deadline passes
 * before the provider moves it is refused by the provider (its clock has
 * run out), with the record left as it was: expired.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cordon/sdk/host.h>
#include <cordon/sdk/json.h>
#include "core/hostflow.h"
#include "core/loader.h"
#include "core/record.h"

/* The record's deadline (or creation time) as a whole number of ms. */
static int record_ms(const struct cordon__record *rec, const char *key, uint64_t *ret,
                     struct cordon_error *err)
{
    struct cordon_error in;

    cordon_error_init(&in);
    if (cordon_json_u64(cJSON_GetObjectItemCaseSensitive(rec->doc, key), key, 1,
                        (uint64_t)CORDON_JSON_INT_MAX, ret, &in) < 0)
        return cordon_error_set(err, CORDON_E_IO, 0, "record %s: %s", rec->id, in.message);
    return 0;
}

/* The deadline (and the provider's new state, taken in every case, when
 * not NULL) into the record, saved. */
static int record_set_deadline(struct cordon__record *rec, uint64_t expires_at_ms, cJSON *state,
                               struct cordon_error *err)
{
    cJSON *at = cJSON_CreateNumber((double)expires_at_ms);

    if (at == NULL || !cJSON_ReplaceItemInObjectCaseSensitive(rec->doc, "expires_at_ms", at)) {
        cJSON_Delete(at);
        cJSON_Delete(state);
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "record %s: out of memory", rec->id);
    }
    if (state != NULL && !cJSON_ReplaceItemInObjectCaseSensitive(rec->doc, "provider_state", state)) {
        cJSON_Delete(state);
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "record %s: out of memory", rec->id);
    }
    return cordon__record_save(rec, err);
}

/* The provider's extend through b; *ret_state its new state, parsed and bounded. */
static int provider_extend(struct cordon_ctx *ctx, const struct cordon__bound *b, const char *state,
                           uint64_t expires_at_ms, cJSON **ret_state, struct cordon_error *err)
{
    struct cordon_error perr;
    char *text = NULL;
    int r;

    cordon_error_init(&perr);
    r = b->p->vt.extend(b->res, state, expires_at_ms, &text, &perr);
    if (r != 0) {
        if (text != NULL)
            ctx->host->free(text);
        return cordon_error_set(err, r < 0 ? r : CORDON_E_PROVIDER, perr.os_errno, "extend with %s: %s",
                                b->p->vt.provider_id, perr.message);
    }
    /* The provider's state is outside input too: the SDK's bounds. */
    r = cordon_json_parse_object("extend: the provider's state", text, CORDON_STATE_MAX, ret_state, &perr);
    if (text != NULL)
        ctx->host->free(text);
    if (r < 0)
        return cordon_error_set(err, r == CORDON_E_LIMIT ? r : CORDON_E_PROVIDER, 0, "%s", perr.message);
    return 0;
}

/* The request: {"runtime_ms": N}, N within the sdk's runtime bounds. */
static int extend_request(const char *request_json, uint64_t *ret_runtime_ms, struct cordon_error *err)
{
    static const char *const keys[] = { "runtime_ms" };
    cJSON *req = NULL;
    int r;

    r = cordon__json_parse_bounded("request", request_json != NULL ? request_json : "{}", &req, err);
    if (r == 0 && !cJSON_IsObject(req))
        r = cordon_error_set(err, CORDON_E_INVALID, 0, "request: must be a JSON object");
    if (r == 0)
        r = cordon__check_keys("", req, keys, 1, err);
    if (r == 0 && cJSON_GetObjectItemCaseSensitive(req, "runtime_ms") == NULL)
        r = cordon_error_set(err, CORDON_E_INVALID, 0,
                             "runtime_ms: required, the lifetime left from now in ms (%llu..%llu)",
                             (unsigned long long)CORDON_LIMIT_RUNTIME_MIN,
                             (unsigned long long)CORDON_LIMIT_RUNTIME_MAX);
    if (r == 0)
        r = cordon_json_u64(cJSON_GetObjectItemCaseSensitive(req, "runtime_ms"), "runtime_ms",
                            CORDON_LIMIT_RUNTIME_MIN, CORDON_LIMIT_RUNTIME_MAX, ret_runtime_ms, err);
    cJSON_Delete(req);
    return r;
}

int cordon_extend_json(struct cordon_ctx *ctx, const char *execution_id, const char *request_json,
                       char **ret_json, struct cordon_error *err)
{
    struct cordon__record *rec = NULL;
    struct cordon__bound b = { NULL, NULL };
    uint64_t runtime_ms = 0, created, old, now, want, max;
    cJSON *state = NULL, *result = NULL;
    const char *phase;
    char *text = NULL;
    int r;

    if (ctx == NULL || ret_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "extend: ctx and ret_json required");
    if ((r = cordon_execution_id_check("execution_id", execution_id, err)) < 0 ||
        (r = extend_request(request_json, &runtime_ms, err)) < 0 ||
        (r = cordon__record_open(ctx, execution_id, true, &rec, err)) < 0 ||
        (r = record_ms(rec, "created_at_ms", &created, err)) < 0 ||
        (r = record_ms(rec, "expires_at_ms", &old, err)) < 0)
        goto out;
    phase = cordon__record_phase_now(rec);
    if (cJSON_GetObjectItemCaseSensitive(rec->doc, "pool") != NULL) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0,
                             "execution %s: held in a warm pool for cordon run, whose lifetime the "
                             "pool sets", execution_id);
        goto out;
    }
    if (phase == NULL || strcmp(phase, "ready") != 0) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0, "execution %s: phase \"%s\": only a ready execution "
                             "extends", execution_id, phase != NULL ? phase : "");
        goto out;
    }
    now = cordon_now_wall_ms();
    if (old <= now) {
        /* Over is over: the sandbox's own clock may already have ended it. */
        r = cordon_error_set(err, CORDON_E_TIMEOUT, 0,
                             "expires_at_ms: execution %s expired %llu ms ago; an expired execution "
                             "is not extended (gc removes it)", execution_id,
                             (unsigned long long)(now - old));
        goto out;
    }
    want = now + runtime_ms;
    max = created + CORDON_LIMIT_RUNTIME_MAX;
    if (want > max) {
        r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                             "runtime_ms: %llu ms from now ends execution %s %llu ms after its creation, "
                             "over the limit of %llu ms counted from its creation (at most %llu ms "
                             "from now)", (unsigned long long)runtime_ms, execution_id,
                             (unsigned long long)(want - created), (unsigned long long)CORDON_LIMIT_RUNTIME_MAX,
                             (unsigned long long)(max > now ? max - now : 0));
        goto out;
    }
    if ((text = cordon__record_state(rec)) == NULL) {
        r = cordon_error_set(err, CORDON_E_IO, 0, "execution %s: no provider state (not ready)", execution_id);
        goto out;
    }
    if ((r = cordon__bind_record(ctx, rec, &b, err)) < 0)
        goto out;
    if (b.p->vt.extend == NULL) {
        r = cordon_error_set(err, CORDON_E_UNSUPPORTED, 0,
                             "extend: provider %s cannot move an execution's deadline (it has no extend "
                             "operation); execution %s still ends at its deadline",
                             b.p->vt.provider_id, execution_id);
        goto out;
    }
    /* Sooner: the record first; later: the sandbox first (see the top). */
    if (want < old && (r = record_set_deadline(rec, want, NULL, err)) < 0)
        goto out;
    if ((r = provider_extend(ctx, &b, text, want, &state, err)) < 0)
        goto out;
    r = record_set_deadline(rec, want, state, err);
    state = NULL;
    if (r < 0)
        goto out;
    result = cJSON_CreateObject();
    cJSON_AddBoolToObject(result, "ok", true);
    cJSON_AddStringToObject(result, "execution_id", execution_id);
    cJSON_AddStringToObject(result, "provider_id", b.p->vt.provider_id);
    cJSON_AddNumberToObject(result, "runtime_ms", (double)runtime_ms);
    cJSON_AddNumberToObject(result, "expires_at_ms", (double)want);
    cJSON_AddNumberToObject(result, "previous_expires_at_ms", (double)old);
    cJSON_AddNumberToObject(result, "max_expires_at_ms", (double)max);
    r = cordon__json_done(0, result, ret_json, err);
out:
    cordon__unbind_provider(&b, NULL);
    cordon__record_close(rec);
    cJSON_Delete(state);
    free(text);
    return r;
}
