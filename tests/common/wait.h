/* Test helper shared by the unit and mechanism suites: wait for a condition
 * instead of sleeping and hoping it came true meanwhile. A fixed sleep is
 * too short on a loaded machine and too long everywhere else; a poll with a
 * generous deadline is as quick as the condition and as patient as the
 * machine needs. */
#ifndef CORDON_TEST_COMMON_WAIT_H
#define CORDON_TEST_COMMON_WAIT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* Milliseconds on the monotonic clock. */
static inline int64_t test_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One pause between two looks at a condition: 1 ms at first, doubling to
 * 20 ms, so a condition that comes true at once is seen at once and one
 * that takes seconds costs little CPU. *step_ms starts at 0. */
static inline void test_wait_pause(int *step_ms)
{
    struct timespec ts;

    *step_ms = *step_ms <= 0 ? 1 : *step_ms >= 10 ? 20 : *step_ms * 2;
    ts.tv_sec = 0;
    ts.tv_nsec = (long)*step_ms * 1000000L;
    nanosleep(&ts, NULL);
}

/* Evaluates cond (any expression, evaluated again at each look) until it
 * is true or timeout_ms have passed; yields whether it came true. The last
 * look is at or after the deadline, so a test that expects something NOT
 * to stay (a process killed, a file removed) polls for its absence:
 *     cr_expect(TEST_WAIT_UNTIL(test_count_processes(m) == 0, 10000), ...);
 * A deadline is a bound on a failure, not the test's duration: make it
 * generous (seconds), the passing test does not wait for it. */
#define TEST_WAIT_UNTIL(cond, timeout_ms)                                                                              \
    __extension__({                                                                                                    \
        const int64_t test_wait_end_ = test_now_ms() + (timeout_ms);                                                   \
        int test_wait_step_ = 0;                                                                                       \
        bool test_wait_ok_;                                                                                            \
        while (!(test_wait_ok_ = (cond)) && test_now_ms() < test_wait_end_)                                            \
            test_wait_pause(&test_wait_step_);                                                                         \
        test_wait_ok_;                                                                                                 \
    })

#endif
