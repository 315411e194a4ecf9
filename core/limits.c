/* core: the SIZE and DUR arguments of the command line (see limits.h). */
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
