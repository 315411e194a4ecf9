/* core: parsing and bounds of the six execution limits (see limits.h). */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/limits.h"

/* Longest SIZE or DUR argument worth reading; anything longer is garbage. */
#define LIMITS_TEXT_MAX 64

/* A suffix and its multiplier; "" is the unit of a bare number. */
struct unit {
    const char *suffix;
    uint64_t factor;
};

static const struct unit size_units[] = {
    { "", 1 },
    { "K", 1ull << 10 }, { "KiB", 1ull << 10 },
    { "M", 1ull << 20 }, { "MiB", 1ull << 20 },
    { "G", 1ull << 30 }, { "GiB", 1ull << 30 },
    { "T", 1ull << 40 }, { "TiB", 1ull << 40 },
};

/* "" is not here: a bare number is seconds and handled by the caller. */
static const struct unit duration_units[] = {
    { "ms", 1 },
    { "s", 1000 },
    { "m", 60ull * 1000 },
    { "h", 3600ull * 1000 },
};

/* Split text into a decimal number and the suffix after it. */
static int parse_number(const char *field, const char *text, const char *what, uint64_t *ret_value,
                        const char **ret_suffix, struct cordon_error *err)
{
    uint64_t value = 0;
    const char *p = text;

    if (text == NULL || text[0] == '\0')
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: empty %s", field, what);
    if (strnlen(text, LIMITS_TEXT_MAX + 1) > LIMITS_TEXT_MAX)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: %s longer than %d characters",
                                field, what, LIMITS_TEXT_MAX);
    if (text[0] == '-')
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: \"%s\" is negative", field, text);
    if (!isdigit((unsigned char)text[0]))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: \"%s\" is not a %s (it must start with a digit)", field, text, what);
    /* Decimal only: a leading "0x" stops at the x and reads as a unit. */
    for (; isdigit((unsigned char)*p); p++) {
        unsigned digit = (unsigned)(*p - '0');

        if (value > (UINT64_MAX - digit) / 10)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "%s: \"%s\" is too large (does not fit in 64 bits)", field, text);
        value = value * 10 + digit;
    }
    *ret_value = value;
    *ret_suffix = p;
    return 0;
}

int cordon__parse_size(const char *field, const char *text, uint64_t *ret, struct cordon_error *err)
{
    const char *suffix;
    uint64_t value;
    int r;

    if (field == NULL)
        field = "size";
    r = parse_number(field, text, "size", &value, &suffix, err);
    if (r < 0)
        return r;
    /* Case does not matter for sizes: "512m" means what docker means by it. */
    for (size_t i = 0; i < sizeof(size_units) / sizeof(size_units[0]); i++) {
        if (strcasecmp(suffix, size_units[i].suffix) != 0)
            continue;
        if (value > UINT64_MAX / size_units[i].factor)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "%s: \"%s\" is too large (does not fit in 64 bits)", field, text);
        if (ret != NULL)
            *ret = value * size_units[i].factor;
        return 0;
    }
    return cordon_error_set(err, CORDON_E_INVALID, 0,
                            "%s: \"%s\" has an unknown unit \"%s\" (use bytes or K, M, G, T, "
                            "powers of 1024)", field, text, suffix);
}

int cordon__parse_duration_ms(const char *field, const char *text, uint64_t *ret,
                              struct cordon_error *err)
{
    const char *suffix;
    uint64_t value, factor = 0;
    int r;

    if (field == NULL)
        field = "duration";
    r = parse_number(field, text, "duration", &value, &suffix, err);
    if (r < 0)
        return r;
    if (suffix[0] == '\0')
        factor = 1000;   /* a bare number is seconds, like sleep(1) and timeout(1) */
    for (size_t i = 0; factor == 0 && i < sizeof(duration_units) / sizeof(duration_units[0]); i++)
        if (strcmp(suffix, duration_units[i].suffix) == 0)
            factor = duration_units[i].factor;
    if (factor == 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: \"%s\" has an unknown unit \"%s\" (use ms, s, m or h)",
                                field, text, suffix);
    /* A zero timeout would kill every run at once; nobody means that. */
    if (value == 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: \"%s\" is zero (a duration must be at least 1ms)", field, text);
    if (value > UINT64_MAX / factor)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: \"%s\" is too large (does not fit in 64 bits of milliseconds)",
                                field, text);
    if (ret != NULL)
        *ret = value * factor;
    return 0;
}

/* "600 GiB (644245094400)" for exact multiples, else the bytes alone. */
static void format_bytes(uint64_t v, char *buf, size_t size)
{
    static const struct unit units[] = {
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

/* Bounds of a byte count; the message shows it in the unit it was likely given in. */
static int check_bytes(const char *field, uint64_t v, uint64_t min, uint64_t max,
                       struct cordon_error *err)
{
    char text[64];

    format_bytes(v, text, sizeof(text));
    if (v < min)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "resources.%s: %s is below the minimum %" PRIu64,
                                field, text, min);
    if (v > max)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "resources.%s: %s exceeds the maximum %" PRIu64,
                                field, text, max);
    return 0;
}

/* Bounds of a plain count (pids, milliseconds). */
static int check_count(const char *field, uint64_t v, uint64_t min, uint64_t max,
                       struct cordon_error *err)
{
    if (v < min)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "resources.%s: %" PRIu64 " is below the minimum %" PRIu64,
                                field, v, min);
    if (v > max)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "resources.%s: %" PRIu64 " exceeds the maximum %" PRIu64,
                                field, v, max);
    return 0;
}

int cordon__limits_validate(const struct cordon__limits *limits, struct cordon_error *err)
{
    int r;

    if (limits == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "resources: missing");
    /* NaN fails both comparisons, so test for it by name. */
    if (isnan(limits->cpus) || limits->cpus < CORDON_LIMIT_CPUS_MIN)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "resources.cpus: %g is below the minimum %g",
                                limits->cpus, CORDON_LIMIT_CPUS_MIN);
    if (limits->cpus > CORDON_LIMIT_CPUS_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "resources.cpus: %g exceeds the maximum %g",
                                limits->cpus, CORDON_LIMIT_CPUS_MAX);
    if ((r = check_bytes("memory_bytes", limits->memory_bytes, CORDON_LIMIT_MEMORY_MIN,
                         CORDON_LIMIT_MEMORY_MAX, err)) < 0 ||
        (r = check_bytes("disk_bytes", limits->disk_bytes, CORDON_LIMIT_DISK_MIN,
                         CORDON_LIMIT_DISK_MAX, err)) < 0 ||
        (r = check_count("pids", limits->pids, CORDON_LIMIT_PIDS_MIN, CORDON_LIMIT_PIDS_MAX, err)) < 0 ||
        (r = check_count("runtime_ms", limits->runtime_ms, CORDON_LIMIT_RUNTIME_MIN,
                         CORDON_LIMIT_RUNTIME_MAX, err)) < 0 ||
        (r = check_bytes("max_output_bytes", limits->max_output_bytes, CORDON_LIMIT_OUTPUT_MIN,
                         CORDON_LIMIT_OUTPUT_MAX, err)) < 0)
        return r;
    return 0;
}

const char *const cordon__limit_keys[CORDON_LIMIT_N_KEYS] = { "cpus", "memory_bytes", "disk_bytes",
                                                              "pids", "runtime_ms",
                                                              "max_output_bytes" };

int cordon__limits_from_json(const cJSON *res, struct cordon__limits *ret, struct cordon_error *err)
{
    struct cordon__limits l;
    uint64_t *fields[CORDON_LIMIT_N_KEYS] = { NULL, &l.memory_bytes, &l.disk_bytes, &l.pids,
                                              &l.runtime_ms, &l.max_output_bytes };
    int r;

    if (!cJSON_IsObject(res))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "resources: %s with cpus, memory_bytes, disk_bytes, pids, "
                                "runtime_ms and max_output_bytes",
                                res == NULL ? "required, an object" : "must be a JSON object");
    for (const cJSON *c = res->child; c != NULL; c = c->next) {
        size_t i = 0;

        while (i < CORDON_LIMIT_N_KEYS && strcmp(c->string, cordon__limit_keys[i]) != 0)
            i++;
        if (i == CORDON_LIMIT_N_KEYS)
            return cordon_error_set(err, CORDON_E_INVALID, 0, "resources.%.*s: unknown key",
                                    cordon_text_fit(c->string, 100), c->string);
        /* cJSON keeps duplicates and reads the first: one value per key. */
        for (const cJSON *d = res->child; d != c; d = d->next)
            if (strcmp(d->string, c->string) == 0)
                return cordon_error_set(err, CORDON_E_INVALID, 0, "resources.%s: appears twice",
                                        c->string);
    }
    memset(&l, 0, sizeof(l));
    for (size_t i = 0; i < CORDON_LIMIT_N_KEYS; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(res, cordon__limit_keys[i]);
        if (v == NULL)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "resources.%s: required (every limit must be given)",
                                    cordon__limit_keys[i]);
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 ||
            v->valuedouble > 9.0e15 ||
            (i > 0 && v->valuedouble != (double)(uint64_t)v->valuedouble))
            return cordon_error_set(err, CORDON_E_INVALID, 0, "resources.%s: must be a %s number >= 0",
                                    cordon__limit_keys[i], i > 0 ? "whole" : "positive");
        if (i == 0)
            l.cpus = v->valuedouble;
        else
            *fields[i] = (uint64_t)v->valuedouble;
    }
    if ((r = cordon__limits_validate(&l, err)) < 0)
        return r;
    *ret = l;
    return 0;
}
