/* sdk: JSON chores shared by the providers (see json.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cordon/sdk/host.h>
#include <cordon/sdk/json.h>

int cordon_json_parse_object(const char *field, const char *text, size_t max, cJSON **ret,
                             struct cordon_error *err)
{
    size_t len;
    cJSON *doc;

    if (text == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: missing", field);
    /* Bound the scan before cJSON sees the text. */
    len = strnlen(text, max + 1);
    if (len > max)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "%s: longer than %zu bytes", field, max);
    doc = cJSON_ParseWithLength(text, len);
    if (doc == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: not valid JSON", field);
    if (!cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: must be a JSON object", field);
    }
    *ret = doc;
    return 0;
}

int cordon_json_print_host(const struct cordon_host_v1 *host, const cJSON *doc, char **ret,
                           struct cordon_error *err)
{
    char *text = cJSON_PrintUnformatted(doc), *copy;

    copy = text != NULL ? cordon_host_strdup(host, text) : NULL;
    free(text);
    if (copy == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "result: out of memory");
    *ret = copy;
    return 0;
}

int cordon_json_u64(const cJSON *item, const char *field, uint64_t min, uint64_t max,
                    uint64_t *ret, struct cordon_error *err)
{
    double v;

    if (!cJSON_IsNumber(item))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: must be a number", field);
    v = item->valuedouble;
    if (!isfinite(v) || v < 0 || v != floor(v) || v > CORDON_JSON_INT_MAX)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: must be a whole number between 0 and 2^53 (%g)", field, v);
    if ((uint64_t)v < min || (uint64_t)v > max)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: %.0f is outside %" PRIu64 "..%" PRIu64, field, v, min, max);
    *ret = (uint64_t)v;
    return 0;
}
