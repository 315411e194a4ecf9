/* sdk: the rules host and providers share, each once (see cordon/sdk/bounds.h). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cordon/sdk/bounds.h>
#include <cordon/text.h>

const char *const cordon_limit_keys[CORDON_LIMIT_KEYS_COUNT + 1] = {
    "cpus", "memory_bytes", "disk_bytes", "pids", "runtime_ms", "max_output_bytes", NULL,
};

/* ---- the six limits ------------------------------------------------------ */

/* "600 GiB (644245094400)" for exact multiples, else the bytes alone. */
static void format_bytes(uint64_t v, char *buf, size_t size)
{
    static const struct { const char *suffix; uint64_t factor; } units[] = {
        { "TiB", 1ull << 40 }, { "GiB", 1ull << 30 }, { "MiB", 1ull << 20 }, { "KiB", 1ull << 10 },
    };

    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (v != 0 && v % units[i].factor == 0) {
            snprintf(buf, size, "%" PRIu64 " %s (%" PRIu64 ")", v / units[i].factor,
                     units[i].suffix, v);
            return;
        }
    }
    snprintf(buf, size, "%" PRIu64, v);
}

/* Bounds of one whole-number limit; a byte count is shown in the unit it
 * was likely given in. */
static int check_u64(const char *field, const char *key, uint64_t v, uint64_t min, uint64_t max,
                     bool bytes, struct cordon_error *err)
{
    char text[64];

    if (bytes)
        format_bytes(v, text, sizeof(text));
    else
        snprintf(text, sizeof(text), "%" PRIu64, v);
    if (v < min)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "%s.%s: %s is below the minimum %" PRIu64,
                                field, key, text, min);
    if (v > max)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "%s.%s: %s exceeds the maximum %" PRIu64,
                                field, key, text, max);
    return 0;
}

int cordon_limits_validate(const char *field, const struct cordon_limits *limits,
                           struct cordon_error *err)
{
    int r;

    if (field == NULL)
        field = "resources";
    if (limits == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: missing", field);
    /* NaN fails both comparisons, so test for it by name. */
    if (isnan(limits->cpus) || limits->cpus < CORDON_LIMIT_CPUS_MIN)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "%s.cpus: %g is below the minimum %g",
                                field, limits->cpus, CORDON_LIMIT_CPUS_MIN);
    if (limits->cpus > CORDON_LIMIT_CPUS_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "%s.cpus: %g exceeds the maximum %g",
                                field, limits->cpus, CORDON_LIMIT_CPUS_MAX);
    if ((r = check_u64(field, "memory_bytes", limits->memory_bytes, CORDON_LIMIT_MEMORY_MIN,
                       CORDON_LIMIT_MEMORY_MAX, true, err)) < 0 ||
        (r = check_u64(field, "disk_bytes", limits->disk_bytes, CORDON_LIMIT_DISK_MIN,
                       CORDON_LIMIT_DISK_MAX, true, err)) < 0 ||
        (r = check_u64(field, "pids", limits->pids, CORDON_LIMIT_PIDS_MIN, CORDON_LIMIT_PIDS_MAX,
                       false, err)) < 0 ||
        (r = check_u64(field, "runtime_ms", limits->runtime_ms, CORDON_LIMIT_RUNTIME_MIN,
                       CORDON_LIMIT_RUNTIME_MAX, false, err)) < 0 ||
        (r = check_u64(field, "max_output_bytes", limits->max_output_bytes,
                       CORDON_LIMIT_OUTPUT_MIN, CORDON_LIMIT_OUTPUT_MAX, true, err)) < 0)
        return r;
    return 0;
}

int cordon_limits_from_json(const cJSON *obj, const char *field, struct cordon_limits *ret,
                            struct cordon_error *err)
{
    struct cordon_limits l;
    uint64_t *fields[CORDON_LIMIT_KEYS_COUNT] = { NULL, &l.memory_bytes, &l.disk_bytes, &l.pids,
                                                  &l.runtime_ms, &l.max_output_bytes };
    int r;

    if (field == NULL)
        field = "resources";
    if (!cJSON_IsObject(obj))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: %s with cpus, memory_bytes, disk_bytes, pids, "
                                "runtime_ms and max_output_bytes", field,
                                obj == NULL ? "required, an object" : "must be a JSON object");
    for (const cJSON *c = obj->child; c != NULL; c = c->next) {
        size_t i = 0;

        while (i < CORDON_LIMIT_KEYS_COUNT && strcmp(c->string, cordon_limit_keys[i]) != 0)
            i++;
        if (i == CORDON_LIMIT_KEYS_COUNT)
            return cordon_error_set(err, CORDON_E_INVALID, 0, "%s.%.*s: unknown key", field,
                                    cordon_text_fit(c->string, 100), c->string);
        /* cJSON keeps duplicates and reads the first: one value per key. */
        for (const cJSON *d = obj->child; d != c; d = d->next)
            if (strcmp(d->string, c->string) == 0)
                return cordon_error_set(err, CORDON_E_INVALID, 0, "%s.%s: appears twice", field,
                                        c->string);
    }
    memset(&l, 0, sizeof(l));
    for (size_t i = 0; i < CORDON_LIMIT_KEYS_COUNT; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, cordon_limit_keys[i]);

        if (v == NULL)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "%s.%s: required (every limit must be given)", field,
                                    cordon_limit_keys[i]);
        /* 9e15 < 2^53: every whole number below it is exact in a double. */
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 ||
            v->valuedouble > 9.0e15 ||
            (i > 0 && v->valuedouble != (double)(uint64_t)v->valuedouble))
            return cordon_error_set(err, CORDON_E_INVALID, 0, "%s.%s: must be a %s number >= 0",
                                    field, cordon_limit_keys[i], i > 0 ? "whole" : "positive");
        /* cpus is kept to the nanosecond of cpu per second (Docker's NanoCpus;
         * runc's quota is coarser): a value with at most 12 significant digits,
         * which every JSON printer writes exactly, so a document read, printed
         * and read again holds the same limits. */
        if (i == 0)
            l.cpus = round(v->valuedouble * 1e9) / 1e9;
        else
            *fields[i] = (uint64_t)v->valuedouble;
    }
    if ((r = cordon_limits_validate(field, &l, err)) < 0)
        return r;
    *ret = l;
    return 0;
}

cJSON *cordon_limits_to_json(const struct cordon_limits *limits)
{
    cJSON *obj = cJSON_CreateObject();
    const double v[CORDON_LIMIT_KEYS_COUNT] = {
        limits->cpus, (double)limits->memory_bytes, (double)limits->disk_bytes,
        (double)limits->pids, (double)limits->runtime_ms, (double)limits->max_output_bytes,
    };

    for (size_t i = 0; obj != NULL && i < CORDON_LIMIT_KEYS_COUNT; i++) {
        if (cJSON_AddNumberToObject(obj, cordon_limit_keys[i], v[i]) == NULL) {
            cJSON_Delete(obj);
            return NULL;
        }
    }
    return obj;
}

/* ---- execution ids ------------------------------------------------------- */

bool cordon_execution_id_valid(const char *id)
{
    size_t i;

    if (id == NULL || id[0] == '\0')
        return false;
    for (i = 0; id[i] != '\0'; i++) {
        char c = id[i];
        bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');

        if (i >= CORDON_EXECUTION_ID_MAX || !(alnum || (i > 0 && (c == '_' || c == '.' || c == '-'))))
            return false;
    }
    return true;
}

int cordon_execution_id_check(const char *field, const char *id, struct cordon_error *err)
{
    if (cordon_execution_id_valid(id))
        return 0;
    return cordon_error_set(err, CORDON_E_INVALID, 0,
                            "%s: \"%.*s\" must match [A-Za-z0-9][A-Za-z0-9_.-]{0,63}",
                            field != NULL ? field : "execution_id",
                            cordon_text_fit(id != NULL ? id : "", 80), id != NULL ? id : "");
}

/* ---- environments -------------------------------------------------------- */

bool cordon_env_name_valid(const char *name)
{
    size_t i;

    if (name == NULL || name[0] == '\0')
        return false;
    for (i = 0; name[i] != '\0'; i++) {
        char c = name[i];
        bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';

        if (i >= CORDON_ENV_NAME_MAX || !(alpha || (i > 0 && c >= '0' && c <= '9')))
            return false;
    }
    return true;
}

int cordon_env_object_check(const cJSON *obj, const char *field, struct cordon_error *err)
{
    const cJSON *item;
    size_t n = 0;

    if (!cJSON_IsObject(obj))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: must be an object of strings",
                                field);
    cJSON_ArrayForEach(item, obj) {
        if (++n > CORDON_ENV_MAX)
            return cordon_error_set(err, CORDON_E_LIMIT, 0, "%s: more than %u entries", field,
                                    (unsigned)CORDON_ENV_MAX);
        if (!cordon_env_name_valid(item->string))
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "%s: name \"%.*s\" must match [A-Za-z_][A-Za-z0-9_]* (at most "
                                    "%u bytes)", field, cordon_text_fit(item->string, 64),
                                    item->string, (unsigned)CORDON_ENV_NAME_MAX);
        if (!cJSON_IsString(item) || strlen(item->valuestring) > CORDON_ARG_BYTES_MAX)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "%s.%s: must be a string of at most %u bytes", field,
                                    item->string, CORDON_ARG_BYTES_MAX);
    }
    return 0;
}

bool cordon_limits_add(cJSON *parent, const char *key, const struct cordon_limits *limits)
{
    cJSON *obj = cordon_limits_to_json(limits);

    if (obj != NULL && parent != NULL && key != NULL && cJSON_AddItemToObject(parent, key, obj))
        return true;
    cJSON_Delete(obj);
    return false;
}
