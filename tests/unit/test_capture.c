/* Unit tests of sdk/capture.c: retention, budget and status names. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

#include <cordon/sdk/capture.h>

static struct cordon_capture *new_capture(size_t retention, uint64_t budget)
{
    struct cordon_capture *c = NULL;
    struct cordon_error err;

    cordon_error_init(&err);
    cr_assert_eq(cordon_capture_new(retention, budget, &c, &err), 0, "%s", err.message);
    cr_assert_not_null(c);
    return c;
}

static void take(struct cordon_capture *c, int stream, struct cordon_stream_capture *sc)
{
    struct cordon_error err;

    cordon_error_init(&err);
    cr_assert_eq(cordon_capture_take(c, stream, sc, &err), 0, "%s", err.message);
    cr_assert_not_null(sc->data);
}

/* ---- status names -------------------------------------------------------- */

struct status_case {
    enum cordon_run_status status;
    const char *name;
};

static const struct status_case status_cases[] = {
    { CORDON_RUN_EXITED, "exited" },         { CORDON_RUN_SIGNALED, "signaled" },
    { CORDON_RUN_TIMEOUT, "timeout" },       { CORDON_RUN_OUTPUT_LIMIT, "output_limit" },
    { CORDON_RUN_CANCELLED, "cancelled" },   { CORDON_RUN_OOM, "oom" },
    { CORDON_RUN_EXPIRED, "expired" },       { CORDON_RUN_HOST_ERROR, "host_error" },
};

Test(capture, status_names_round_trip)
{
    for (size_t i = 0; i < sizeof(status_cases) / sizeof(status_cases[0]); i++) {
        cr_assert_str_eq(cordon_run_status_name(status_cases[i].status), status_cases[i].name);
        cr_assert_eq(cordon_run_status_parse(status_cases[i].name), (int)status_cases[i].status);
    }
}

Test(capture, status_parse_refuses_unknown_names)
{
    static const char *const bad[] = { "", "EXITED", "exit", "timeout ", " oom", "canceled",
                                       "output-limit", "host_error\n" };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(cordon_run_status_parse(bad[i]), -1, "accepted \"%s\"", bad[i]);
    cr_assert_eq(cordon_run_status_parse(NULL), -1);
    cr_assert_str_eq(cordon_run_status_name((enum cordon_run_status)99), "host_error");
}

/* ---- retention ----------------------------------------------------------- */

Test(capture, small_output_is_kept_whole)
{
    struct cordon_capture *c = new_capture(64, 0);
    struct cordon_stream_capture out, err;

    cr_assert_not(cordon_capture_feed(c, 1, "hello ", 6));
    cr_assert_not(cordon_capture_feed(c, 2, "oops", 4));
    cr_assert_not(cordon_capture_feed(c, 1, "world", 5));
    take(c, 1, &out);
    take(c, 2, &err);
    cr_assert_eq(out.len, 11);
    cr_assert_eq(memcmp(out.data, "hello world", 11), 0);
    cr_assert_eq(out.head_len, out.len, "no gap: the whole stream is head");
    cr_assert_eq(out.total_bytes, 11);
    cr_assert_eq(out.dropped_bytes, 0);
    cr_assert_eq(err.len, 4);
    cr_assert_eq(memcmp(err.data, "oops", 4), 0);
    /* A NUL follows the data, so a text reader may take it as a string. */
    cr_assert_eq(out.data[out.len], '\0');
    cr_assert_eq(err.data[err.len], '\0');
    free(out.data);
    free(err.data);
    cordon_capture_free(c);
}

/* Output that exactly fills head and tail is still whole. */
Test(capture, output_of_exactly_the_retention_is_whole)
{
    struct cordon_capture *c = new_capture(10, 0);
    struct cordon_stream_capture sc;

    cordon_capture_feed(c, 1, "0123456789", 10);
    take(c, 1, &sc);
    cr_assert_eq(sc.len, 10);
    cr_assert_eq(memcmp(sc.data, "0123456789", 10), 0);
    cr_assert_eq(sc.head_len, 10);
    cr_assert_eq(sc.dropped_bytes, 0);
    free(sc.data);
    cordon_capture_free(c);
}

struct trunc_case {
    size_t retention;
    size_t chunk;   /* bytes per feed */
    size_t total;   /* stream length; byte i is (i * 7 + 3) % 256 */
};

ParameterizedTestParameters(capture, long_output_keeps_exact_head_and_tail)
{
    static struct trunc_case cases[] = {
        { 10, 1, 100 },   { 10, 3, 100 },       { 10, 7, 100 },     { 10, 100, 100 },
        { 11, 4, 1000 },  { 1, 1, 50 },         { 2, 5, 50 },       { 4096, 1000, 100000 },
        { 4096, 65536, 300000 }, { 65536, 4096, 1 << 20 },
    };
    return cr_make_param_array(struct trunc_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct trunc_case *tc, capture, long_output_keeps_exact_head_and_tail)
{
    struct cordon_capture *c = new_capture(tc->retention, 0);
    struct cordon_stream_capture sc;
    size_t head = tc->retention / 2, tail = tc->retention - head;
    unsigned char *data = malloc(tc->total);

    cr_assert_not_null(data);
    for (size_t i = 0; i < tc->total; i++)
        data[i] = (unsigned char)((i * 7 + 3) % 256);
    for (size_t off = 0; off < tc->total; off += tc->chunk) {
        size_t n = tc->total - off < tc->chunk ? tc->total - off : tc->chunk;
        cr_assert_not(cordon_capture_feed(c, 1, data + off, n));
    }
    take(c, 1, &sc);
    cr_assert_eq(sc.len, tc->retention);
    cr_assert_eq(sc.head_len, head);
    cr_assert_eq(sc.total_bytes, tc->total);
    cr_assert_eq(sc.dropped_bytes, tc->total - tc->retention);
    cr_assert_eq(memcmp(sc.data, data, head), 0, "head bytes differ");
    cr_assert_eq(memcmp(sc.data + head, data + tc->total - tail, tail), 0, "tail bytes differ");
    free(sc.data);
    free(data);
    cordon_capture_free(c);
}

Test(capture, binary_data_with_nuls_is_kept)
{
    static const char bin[] = { 0, 'a', 0, 0, (char)0xff, 'b', 0 };
    struct cordon_capture *c = new_capture(4, 0);
    struct cordon_stream_capture sc;

    cordon_capture_feed(c, 2, bin, sizeof(bin));
    take(c, 2, &sc);
    cr_assert_eq(sc.len, 4);
    cr_assert_eq(sc.head_len, 2);
    cr_assert_eq(memcmp(sc.data, "\0a", 2), 0);
    cr_assert_eq(memcmp(sc.data + 2, "b\0", 2), 0);
    cr_assert_eq(sc.dropped_bytes, 3);
    free(sc.data);
    cordon_capture_free(c);
}

Test(capture, zero_retention_counts_but_keeps_nothing)
{
    struct cordon_capture *c = new_capture(0, 0);
    struct cordon_stream_capture sc;

    cordon_capture_feed(c, 1, "abcdef", 6);
    take(c, 1, &sc);
    cr_assert_eq(sc.len, 0);
    cr_assert_eq(sc.total_bytes, 6);
    cr_assert_eq(sc.dropped_bytes, 6);
    free(sc.data);
    cordon_capture_free(c);
}

/* ---- budget -------------------------------------------------------------- */

Test(capture, budget_counts_both_streams_together)
{
    struct cordon_capture *c = new_capture(64, 10);
    struct cordon_stream_capture out, err;

    cr_assert_not(cordon_capture_feed(c, 1, "abcdef", 6));
    cr_assert_not(cordon_capture_feed(c, 2, "ghij", 4), "exactly the budget is not over it");
    cr_assert_not(cordon_capture_over_budget(c));
    cr_assert(cordon_capture_feed(c, 2, "KL", 2));
    cr_assert(cordon_capture_over_budget(c));
    cr_assert(cordon_capture_feed(c, 1, "M", 1), "stays over budget");
    take(c, 1, &out);
    take(c, 2, &err);
    cr_assert_eq(out.len, 6, "bytes past the budget are not retained");
    cr_assert_eq(memcmp(out.data, "abcdef", 6), 0);
    cr_assert_eq(out.total_bytes, 7);
    cr_assert_eq(out.dropped_bytes, 1);
    cr_assert_eq(err.len, 4);
    cr_assert_eq(memcmp(err.data, "ghij", 4), 0);
    cr_assert_eq(err.total_bytes, 6);
    cr_assert_eq(err.dropped_bytes, 2);
    free(out.data);
    free(err.data);
    cordon_capture_free(c);
}

Test(capture, feed_straddling_the_budget_keeps_the_part_within)
{
    struct cordon_capture *c = new_capture(64, 5);
    struct cordon_stream_capture sc;

    cr_assert(cordon_capture_feed(c, 1, "0123456789", 10));
    take(c, 1, &sc);
    cr_assert_eq(sc.len, 5);
    cr_assert_eq(memcmp(sc.data, "01234", 5), 0);
    cr_assert_eq(sc.total_bytes, 10);
    free(sc.data);
    cordon_capture_free(c);
}

Test(capture, no_budget_is_never_over)
{
    struct cordon_capture *c = new_capture(16, 0);
    char buf[4096];

    memset(buf, 'x', sizeof(buf));
    for (int i = 0; i < 1000; i++)
        cr_assert_not(cordon_capture_feed(c, i % 2 + 1, buf, sizeof(buf)));
    cr_assert_not(cordon_capture_over_budget(c));
    cordon_capture_free(c);
}

/* ---- take ---------------------------------------------------------------- */

Test(capture, take_twice_returns_empty_the_second_time)
{
    struct cordon_capture *c = new_capture(8, 0);
    struct cordon_stream_capture first, second;

    cordon_capture_feed(c, 1, "0123456789abcdef", 16);
    take(c, 1, &first);
    take(c, 1, &second);
    cr_assert_eq(first.len, 8);
    cr_assert_eq(memcmp(first.data, "0123cdef", 8), 0);
    cr_assert_eq(second.len, 0);
    cr_assert_eq(second.total_bytes, 0);
    cr_assert_eq(second.dropped_bytes, 0);
    /* The stream starts afresh after a take. */
    cordon_capture_feed(c, 1, "xy", 2);
    free(second.data);
    take(c, 1, &second);
    cr_assert_eq(second.len, 2);
    cr_assert_eq(memcmp(second.data, "xy", 2), 0);
    free(first.data);
    free(second.data);
    cordon_capture_free(c);
}

Test(capture, bad_arguments_are_refused)
{
    static const int bad_streams[] = { 0, 3, -1, 100 };
    struct cordon_capture *c = new_capture(8, 0);
    struct cordon_stream_capture sc;
    struct cordon_error err;

    for (size_t i = 0; i < sizeof(bad_streams) / sizeof(bad_streams[0]); i++) {
        cordon_error_init(&err);
        cr_assert_not(cordon_capture_feed(c, bad_streams[i], "x", 1));
        cr_assert_eq(cordon_capture_take(c, bad_streams[i], &sc, &err), CORDON_E_INVALID);
        cr_assert_neq(strstr(err.message, "stream"), NULL, "%s", err.message);
    }
    cr_assert_eq(cordon_capture_take(c, 1, NULL, &err), CORDON_E_INVALID);
    cr_assert_eq(cordon_capture_take(NULL, 1, &sc, &err), CORDON_E_INVALID);
    cr_assert_eq(cordon_capture_new(8, 0, NULL, &err), CORDON_E_INVALID);
    cr_assert_not(cordon_capture_feed(NULL, 1, "x", 1));
    cr_assert_not(cordon_capture_over_budget(NULL));
    cordon_capture_free(c);
    cordon_capture_free(NULL);
}

Test(capture, outcome_clear_frees_and_zeroes)
{
    struct cordon_exec_outcome o;

    memset(&o, 0, sizeof(o));
    cordon_exec_outcome_clear(&o);
    cordon_exec_outcome_clear(NULL);
    o.status = CORDON_RUN_TIMEOUT;
    o.out.data = strdup("x");
    o.out.len = 1;
    o.err.data = strdup("y");
    o.exit_code = 3;
    cordon_exec_outcome_clear(&o);
    cr_assert_null(o.out.data);
    cr_assert_null(o.err.data);
    cr_assert_eq(o.out.len, 0);
    cr_assert_eq(o.exit_code, 0);
    cr_assert_eq(o.status, CORDON_RUN_EXITED);
}
