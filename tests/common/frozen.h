/* Test helper shared by the runc and docker mechanism suites: an exec into
 * a sandbox frozen from the host side. */
#ifndef CORDON_TEST_COMMON_FROZEN_H
#define CORDON_TEST_COMMON_FROZEN_H

#include <stdint.h>

#include <criterion/criterion.h>
#include <cordon/sdk/capture.h>
#include <cordon/sdk/host.h>

/* The exec's own timeout, and the bound on its answer: the host's clock
 * ends it, whatever the sandbox is doing. */
#define TEST_FROZEN_EXEC_TIMEOUT_MS 2000u
#define TEST_FROZEN_EXEC_BOUND_MS 6000u

/* Expect what an exec through cordon__drive_exec gave (its code r, its
 * outcome o, begun at t0 on the monotonic clock) to be a typed end
 * (timeout or host_error) within the bound. Clears o. */
static inline void test_expect_frozen_exec_ended(int r, struct cordon_exec_outcome *o, uint64_t t0)
{
    uint64_t took = cordon_now_monotonic_ms() - t0;

    cr_expect(r < 0 || o->status == CORDON_RUN_TIMEOUT || o->status == CORDON_RUN_HOST_ERROR,
              "exec into a frozen sandbox: r %d status %s", r, cordon_run_status_name(o->status));
    cr_expect_lt(took, TEST_FROZEN_EXEC_BOUND_MS, "exec with a %u ms timeout took %llu ms",
                 TEST_FROZEN_EXEC_TIMEOUT_MS, (unsigned long long)took);
    cordon_exec_outcome_clear(o);
}

#endif
