/* Unit tests of core/limits.c: SIZE and DUR arguments and the bounds. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "core/limits.h"

/* Criterion runs each case in a fresh process where pointers taken in the
 * runner mean nothing: the parameters are indices into a static table. */
#define INDEX_PARAMS(table)                                                  \
    static size_t indices_[sizeof(table) / sizeof(table[0])];               \
    for (size_t i_ = 0; i_ < sizeof(indices_) / sizeof(indices_[0]); i_++) \
        indices_[i_] = i_;                                                   \
    return cr_make_param_array(size_t, indices_, sizeof(indices_) / sizeof(indices_[0]))

struct parse_case {
    const char *text;
    int code;              /* 0 or the expected CORDON_E_* */
    uint64_t value;        /* when code is 0 */
    const char *message;   /* part of the refusal's message */
};

static const struct parse_case parse_size_cases[] = {
    { "0", 0, 0, NULL },
    { "4096", 0, 4096, NULL },
    { "3K", 0, 3072, NULL },
    { "3KiB", 0, 3072, NULL },
    { "3k", 0, 3072, NULL },
    { "512M", 0, 512ull << 20, NULL },
    { "512m", 0, 512ull << 20, NULL },
    { "512MiB", 0, 512ull << 20, NULL },
    { "1G", 0, 1ull << 30, NULL },
    { "2gib", 0, 2ull << 30, NULL },
    { "1T", 0, 1ull << 40, NULL },
    { "1TiB", 0, 1ull << 40, NULL },
    { "18446744073709551615", 0, UINT64_MAX, NULL },
    { "16777215T", 0, 16777215ull << 40, NULL },
    /* bad input */
    { "", CORDON_E_INVALID, 0, "memory: empty size" },
    { NULL, CORDON_E_INVALID, 0, "memory: empty size" },
    { "-1", CORDON_E_INVALID, 0, "negative" },
    { "-1G", CORDON_E_INVALID, 0, "negative" },
    { "abc", CORDON_E_INVALID, 0, "must start with a digit" },
    { "M", CORDON_E_INVALID, 0, "must start with a digit" },
    { " 1G", CORDON_E_INVALID, 0, "must start with a digit" },
    { "1 G", CORDON_E_INVALID, 0, "unknown unit \" G\"" },
    { "12X", CORDON_E_INVALID, 0, "unknown unit \"X\"" },
    { "1.5G", CORDON_E_INVALID, 0, "unknown unit \".5G\"" },
    { "1GB", CORDON_E_INVALID, 0, "unknown unit" },
    { "1MiBs", CORDON_E_INVALID, 0, "unknown unit" },
    { "0x10", CORDON_E_INVALID, 0, "unknown unit" },
    { "18446744073709551616", CORDON_E_INVALID, 0, "too large" },
    { "16777216T", CORDON_E_INVALID, 0, "too large" },
    { "17179869184G", CORDON_E_INVALID, 0, "too large" },
    { "99999999999999999999999999999", CORDON_E_INVALID, 0, "too large" },
    { "1111111111111111111111111111111111111111111111111111111111111111111", CORDON_E_INVALID, 0,
      "longer than" },
};

ParameterizedTestParameters(limits, parse_size)
{
    INDEX_PARAMS(parse_size_cases);
}

ParameterizedTest(size_t *index, limits, parse_size)
{
    const struct parse_case *c = &parse_size_cases[*index];
    struct cordon_error err;
    uint64_t value = 12345;
    int r;

    cordon_error_init(&err);
    r = cordon__parse_size("memory", c->text, &value, &err);
    cr_assert_eq(r, c->code, "\"%s\": got %d (%s)", c->text, r, err.message);
    if (c->code == 0) {
        cr_assert_eq(value, c->value, "\"%s\": got %llu", c->text, (unsigned long long)value);
    } else {
        cr_assert_eq(value, 12345, "the result was written on failure");
        cr_assert(strstr(err.message, c->message) != NULL, "\"%s\" lacks \"%s\"", err.message,
                  c->message);
        cr_assert(strncmp(err.message, "memory: ", 8) == 0, "field not named: %s", err.message);
    }
}

static const struct parse_case parse_duration_cases[] = {
    { "250ms", 0, 250, NULL },
    { "1ms", 0, 1, NULL },
    { "10s", 0, 10000, NULL },
    { "7", 0, 7000, NULL },
    { "5m", 0, 300000, NULL },
    { "1h", 0, 3600000, NULL },
    { "24h", 0, 86400000, NULL },
    { "90m", 0, 5400000, NULL },
    /* bad input */
    { "0", CORDON_E_INVALID, 0, "zero" },
    { "0s", CORDON_E_INVALID, 0, "zero" },
    { "0ms", CORDON_E_INVALID, 0, "zero" },
    { "", CORDON_E_INVALID, 0, "empty duration" },
    { "-5s", CORDON_E_INVALID, 0, "negative" },
    { "1.5s", CORDON_E_INVALID, 0, "unknown unit" },
    { "10 s", CORDON_E_INVALID, 0, "unknown unit" },
    { "5M", CORDON_E_INVALID, 0, "unknown unit" },
    { "1d", CORDON_E_INVALID, 0, "unknown unit" },
    { "ms", CORDON_E_INVALID, 0, "must start with a digit" },
    { "s10", CORDON_E_INVALID, 0, "must start with a digit" },
    { "10sec", CORDON_E_INVALID, 0, "unknown unit" },
    { "18446744073709551615h", CORDON_E_INVALID, 0, "too large" },
    { "18446744073709551615", CORDON_E_INVALID, 0, "too large" },
    { "99999999999999999999ms", CORDON_E_INVALID, 0, "too large" },
};

ParameterizedTestParameters(limits, parse_duration)
{
    INDEX_PARAMS(parse_duration_cases);
}

ParameterizedTest(size_t *index, limits, parse_duration)
{
    const struct parse_case *c = &parse_duration_cases[*index];
    struct cordon_error err;
    uint64_t value = 12345;
    int r;

    cordon_error_init(&err);
    r = cordon__parse_duration_ms("timeout", c->text, &value, &err);
    cr_assert_eq(r, c->code, "\"%s\": got %d (%s)", c->text, r, err.message);
    if (c->code == 0) {
        cr_assert_eq(value, c->value, "\"%s\": got %llu", c->text, (unsigned long long)value);
    } else {
        cr_assert_eq(value, 12345, "the result was written on failure");
        cr_assert(strstr(err.message, c->message) != NULL, "\"%s\" lacks \"%s\"", err.message,
                  c->message);
        cr_assert(strncmp(err.message, "timeout: ", 9) == 0, "field not named: %s", err.message);
    }
}

static struct cordon_limits good_limits(void)
{
    struct cordon_limits l = {
        .cpus = 1.5,
        .memory_bytes = 512ull << 20,
        .disk_bytes = 256ull << 20,
        .pids = 256,
        .runtime_ms = 40000,
        .max_output_bytes = 8ull << 20,
    };
    return l;
}

Test(limits, validate_accepts_defaults_and_bounds)
{
    struct cordon_limits l = good_limits();
    struct cordon_error err;

    cordon_error_init(&err);
    cr_assert_eq(cordon_limits_validate("resources", &l, &err), 0, "%s", err.message);
    l.cpus = CORDON_LIMIT_CPUS_MIN;
    l.memory_bytes = CORDON_LIMIT_MEMORY_MIN;
    l.disk_bytes = CORDON_LIMIT_DISK_MIN;
    l.pids = CORDON_LIMIT_PIDS_MIN;
    l.runtime_ms = CORDON_LIMIT_RUNTIME_MIN;
    l.max_output_bytes = CORDON_LIMIT_OUTPUT_MIN;
    cr_assert_eq(cordon_limits_validate("resources", &l, &err), 0, "%s", err.message);
    l.cpus = CORDON_LIMIT_CPUS_MAX;
    l.memory_bytes = CORDON_LIMIT_MEMORY_MAX;
    l.disk_bytes = CORDON_LIMIT_DISK_MAX;
    l.pids = CORDON_LIMIT_PIDS_MAX;
    l.runtime_ms = CORDON_LIMIT_RUNTIME_MAX;
    l.max_output_bytes = CORDON_LIMIT_OUTPUT_MAX;
    cr_assert_eq(cordon_limits_validate("resources", &l, &err), 0, "%s", err.message);
}

struct bound_case {
    int field;             /* 0 cpus, 1 memory, 2 disk, 3 pids, 4 runtime, 5 output */
    double cpus;
    uint64_t value;
    const char *message;   /* the whole expected message */
};

static const struct bound_case validate_refuses_out_of_bounds_cases[] = {
    { 0, 0.0, 0, "resources.cpus: 0 is below the minimum 0.01" },
    { 0, -1.0, 0, "resources.cpus: -1 is below the minimum 0.01" },
    { 0, 200.0, 0, "resources.cpus: 200 exceeds the maximum 128" },
    { 0, NAN, 0, "resources.cpus: nan is below the minimum 0.01" },
    { 1, 0, 600ull << 30,
      "resources.memory_bytes: 600 GiB (644245094400) exceeds the maximum 549755813888" },
    { 1, 0, 1ull << 20, "resources.memory_bytes: 1 MiB (1048576) is below the minimum 16777216" },
    { 1, 0, 0, "resources.memory_bytes: 0 is below the minimum 16777216" },
    { 2, 0, 1000, "resources.disk_bytes: 1000 is below the minimum 1048576" },
    { 2, 0, 2ull << 40, "resources.disk_bytes: 2 TiB (2199023255552) exceeds the maximum 1099511627776" },
    { 3, 0, 7, "resources.pids: 7 is below the minimum 8" },
    { 3, 0, 40000, "resources.pids: 40000 exceeds the maximum 32768" },
    { 4, 0, 99, "resources.runtime_ms: 99 is below the minimum 100" },
    { 4, 0, 86400001, "resources.runtime_ms: 86400001 exceeds the maximum 86400000" },
    { 5, 0, 1023, "resources.max_output_bytes: 1023 is below the minimum 1024" },
    { 5, 0, 65ull << 20,
      "resources.max_output_bytes: 65 MiB (68157440) exceeds the maximum 67108864" },
};

ParameterizedTestParameters(limits, validate_refuses_out_of_bounds)
{
    INDEX_PARAMS(validate_refuses_out_of_bounds_cases);
}

ParameterizedTest(size_t *index, limits, validate_refuses_out_of_bounds)
{
    const struct bound_case *c = &validate_refuses_out_of_bounds_cases[*index];
    struct cordon_limits l = good_limits();
    struct cordon_error err;

    switch (c->field) {
    case 0: l.cpus = c->cpus; break;
    case 1: l.memory_bytes = c->value; break;
    case 2: l.disk_bytes = c->value; break;
    case 3: l.pids = c->value; break;
    case 4: l.runtime_ms = c->value; break;
    default: l.max_output_bytes = c->value; break;
    }
    cordon_error_init(&err);
    cr_assert_eq(cordon_limits_validate("resources", &l, &err), CORDON_E_LIMIT);
    cr_assert_str_eq(err.message, c->message);
}

Test(limits, validate_refuses_null)
{
    struct cordon_error err;

    cordon_error_init(&err);
    cr_assert_eq(cordon_limits_validate("resources", NULL, &err), CORDON_E_INVALID);
}
