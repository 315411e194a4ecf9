/*
 * cordon-contract: the host owns output and time. The output budget, the
 * timeout and a caller's cancel all fire cancel_fd; the provider must then
 * kill the whole tree and return promptly. Survivors are looked for on the
 * host, which sees container processes too. The execution outlives the
 * command: what it wrote before is still there for the next command,
 * unless the provider says (in its facts and in the result) that it can
 * only end a command by ending the whole execution.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <cordon/sdk/host.h>
#include "contract/contract.h"

#define PROMPT_MS 10000u     /* generous: "returned promptly" */
#define TEARDOWN_MS 2000u    /* processes must be gone within this after the return */

/* What the writer writes past the budget: enough to cross it, bounded,
 * whatever the provider does with it. */
#define FLOOD_MARGIN_BYTES (64u << 10)

/* The writer never stops by itself: it writes the budget and a little
 * more (`yes | head -c`), then sleeps forever. Only the budget can end the
 * exec, so a provider that waits for its program to finish, or ignores
 * cancel_fd, cannot pass; and a provider that ignores the budget gets no
 * more than budget + FLOOD_MARGIN_BYTES of output. */
Test(contract, output_budget_stops_the_exec)
{
    const char *argv[] = { "sh", "-c", NULL, NULL };
    struct contract_exec opts;
    struct cordon_exec_outcome out;
    const char *state = contract_provision(NULL, CORDON_SPEC_LAYOUT_CODE);
    char marker[64], script[200], msg[600];
    uint64_t start, took, written;

    contract_sleep_marker(marker, sizeof(marker));
    snprintf(script, sizeof(script), "yes %s | head -c %llu; exec sleep %s", marker,
             (unsigned long long)CONTRACT_MAX_OUTPUT_BYTES + FLOOD_MARGIN_BYTES, marker);
    argv[2] = script;
    contract_exec_init(&opts);
    opts.output_budget = CONTRACT_MAX_OUTPUT_BYTES;
    start = cordon_now_monotonic_ms();
    cr_assert_eq(contract_exec(state, argv, &opts, &out, msg, sizeof(msg)), 0,
                 "exec of an endless writer did not end by the output budget: %s", msg);
    took = cordon_now_monotonic_ms() - start;
    written = out.out.total_bytes + out.err.total_bytes;
    cr_expect_eq(out.status, CORDON_RUN_OUTPUT_LIMIT, "status is %s, not output_limit",
                 cordon_run_status_name(out.status));
    cr_expect_gt(written, CONTRACT_MAX_OUTPUT_BYTES,
                 "the exec ended after %llu bytes, within the %llu-byte budget",
                 (unsigned long long)written, (unsigned long long)CONTRACT_MAX_OUTPUT_BYTES);
    cr_expect_leq(took, PROMPT_MS, "the provider took %llu ms to return after the budget fired",
                  (unsigned long long)took);
    cr_expect_eq(contract_wait_no_processes(marker, TEARDOWN_MS), 0,
                 "the writer (sleep %s) still runs on the host after the budget fired", marker);
    cordon_exec_outcome_clear(&out);
}

Test(contract, timeout_kills_the_whole_tree)
{
    const char *argv[] = { "sh", "-c", NULL, NULL };
    struct contract_exec opts;
    struct cordon_exec_outcome out;
    const char *state = contract_provision(NULL, CORDON_SPEC_LAYOUT_CODE);
    char marker[64], script[160], msg[600];
    uint64_t start, took;

    contract_sleep_marker(marker, sizeof(marker));
    snprintf(script, sizeof(script), "sleep %s & sleep %s", marker, marker);
    argv[2] = script;
    contract_exec_init(&opts);
    opts.timeout_ms = 500;
    start = cordon_now_monotonic_ms();
    cr_assert_eq(contract_exec(state, argv, &opts, &out, msg, sizeof(msg)), 0, "exec failed: %s",
                 msg);
    took = cordon_now_monotonic_ms() - start;
    cr_expect_eq(out.status, CORDON_RUN_TIMEOUT, "status is %s, not timeout",
                 cordon_run_status_name(out.status));
    cr_expect_leq(took, PROMPT_MS, "the provider took %llu ms to return after a 500 ms timeout",
                  (unsigned long long)took);
    cr_expect_eq(contract_wait_no_processes(marker, TEARDOWN_MS), 0,
                 "processes of the timed-out tree (marker %s) survive on the host", marker);
    cordon_exec_outcome_clear(&out);
}

/* setsid moves the child out of the command's process group and session:
 * it is no longer the command's, and a timeout need not end it (the
 * execution stays ready), but it is the execution's, and terminate must. */
Test(contract, a_child_that_left_the_session_ends_with_terminate)
{
    const char *argv[] = { "sh", "-c", NULL, NULL };
    struct contract_exec opts;
    struct cordon_exec_outcome out;
    struct cordon_error err;
    const char *state = contract_provision(NULL, CORDON_SPEC_LAYOUT_CODE);
    char marker[64], script[256], msg[600];

    contract_sleep_marker(marker, sizeof(marker));
    snprintf(script, sizeof(script),
             "command -v setsid >/dev/null || exit 99; setsid sleep %s & sleep %s", marker, marker);
    argv[2] = script;
    contract_exec_init(&opts);
    opts.timeout_ms = 1000;
    cr_assert_eq(contract_exec(state, argv, &opts, &out, msg, sizeof(msg)), 0, "exec failed: %s",
                 msg);
    if (out.status == CORDON_RUN_EXITED && out.exit_code == 99) {
        cordon_exec_outcome_clear(&out);
        contract_skip("the sandbox has no setsid command: cannot start a child in its own session");
    }
    cr_expect_eq(out.status, CORDON_RUN_TIMEOUT, "status is %s, not timeout",
                 cordon_run_status_name(out.status));
    cordon_exec_outcome_clear(&out);
    cordon_error_init(&err);
    cr_assert_eq(contract.vt.terminate(contract.resource, state, &err), 0, "terminate failed: %s",
                 err.message);
    contract_untrack(state);
    cr_expect_eq(contract_wait_no_processes(marker, TEARDOWN_MS), 0,
                 "a child in its own session (sleep %s) survives terminate on the host", marker);
}

struct delayed_write {
    int fd;
    unsigned ms;
};

static void *fire_later(void *arg)
{
    struct delayed_write *dw = arg;
    struct timespec ts = { .tv_sec = dw->ms / 1000, .tv_nsec = (long)(dw->ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
    if (write(dw->fd, "x", 1) != 1)
        return (void *)1;
    return NULL;
}

Test(contract, cancel_kills_the_whole_tree)
{
    const char *argv[] = { "sh", "-c", NULL, NULL };
    struct contract_exec opts;
    struct cordon_exec_outcome out;
    struct delayed_write dw;
    const char *state = contract_provision(NULL, CORDON_SPEC_LAYOUT_CODE);
    char marker[64], script[160], msg[600];
    pthread_t thread;
    int cancel[2], r;

    contract_sleep_marker(marker, sizeof(marker));
    snprintf(script, sizeof(script), "sleep %s & sleep %s", marker, marker);
    argv[2] = script;
    cr_assert_eq(pipe2(cancel, O_CLOEXEC), 0, "pipe: %s", strerror(errno));
    dw.fd = cancel[1];
    dw.ms = 300;
    cr_assert_eq(pthread_create(&thread, NULL, fire_later, &dw), 0);
    contract_exec_init(&opts);
    opts.cancel_fd = cancel[0];
    r = contract_exec(state, argv, &opts, &out, msg, sizeof(msg));
    pthread_join(thread, NULL);
    close(cancel[0]);
    close(cancel[1]);
    cr_assert_eq(r, 0, "exec failed: %s", msg);
    cr_expect_eq(out.status, CORDON_RUN_CANCELLED, "status is %s, not cancelled",
                 cordon_run_status_name(out.status));
    cr_expect_eq(contract_wait_no_processes(marker, TEARDOWN_MS), 0,
                 "processes of the cancelled tree (marker %s) survive on the host", marker);
    cordon_exec_outcome_clear(&out);
}

/* How the command is ended: the exec's timeout, the caller's cancel, or
 * twice the output budget. */
enum ender { BY_TIMEOUT, BY_CANCEL, BY_BUDGET };

static const struct {
    enum ender how;
    const char *name;
    enum cordon_run_status status;
} enders[] = {
    { BY_TIMEOUT, "a timeout", CORDON_RUN_TIMEOUT },
    { BY_CANCEL, "a cancel", CORDON_RUN_CANCELLED },
    { BY_BUDGET, "twice the output budget", CORDON_RUN_OUTPUT_LIMIT },
};

/* The provider ended the execution with the command: honest only when its
 * facts say it must (mechanism_facts.exec_cancel "execution"). */
static void expect_declared(const char *how)
{
    cJSON *facts = contract_probe(CORDON_PROBE_FULL, NULL);
    const cJSON *mech = cJSON_GetObjectItemCaseSensitive(facts, "mechanism_facts");
    const char *says = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(mech, "exec_cancel"));

    cr_expect(says != NULL && strcmp(says, "execution") == 0,
              "after %s the provider ended the whole execution, but its facts do not say "
              "mechanism_facts.exec_cancel \"execution\" (they say %s)", how,
              says != NULL ? says : "nothing");
    cJSON_Delete(facts);
}

Test(contract, an_ended_command_leaves_the_execution_ready)
{
    /* The host flow's layout: /workspace is one writable tree. One
     * execution for all three, unless the provider ends it. */
    const char *state = NULL;

    for (size_t i = 0; i < sizeof(enders) / sizeof(enders[0]); i++) {
        const char *argv[] = { "sh", "-c", NULL, NULL };
        struct contract_exec opts;
        struct cordon_exec_outcome out;
        struct delayed_write dw;
        pthread_t thread;
        char marker[64], script[200], msg[600], *text;
        int cancel[2] = { -1, -1 }, r;
        bool ended = false;

        if (state == NULL)
            state = contract_provision(NULL, CORDON_SPEC_LAYOUT_HOST);
        contract_sleep_marker(marker, sizeof(marker));
        contract_sh(state, "echo kept > marker", &out);
        cr_assert(out.status == CORDON_RUN_EXITED && out.exit_code == 0, "writing the marker: %s %d",
                  cordon_run_status_name(out.status), out.exit_code);
        cordon_exec_outcome_clear(&out);
        /* It ignores SIGTERM and orphans a member of its group. */
        if (enders[i].how == BY_BUDGET)
            snprintf(script, sizeof(script), "yes %s | head -c %llu; exec sleep %s", marker,
                     2ull * CONTRACT_MAX_OUTPUT_BYTES, marker);
        else
            snprintf(script, sizeof(script), "trap '' TERM; (sleep %s &); sleep %s & exec sleep %s",
                     marker, marker, marker);
        argv[2] = script;
        contract_exec_init(&opts);
        opts.ret_execution_ended = &ended;
        if (enders[i].how == BY_TIMEOUT)
            opts.timeout_ms = 700;
        if (enders[i].how == BY_CANCEL) {
            cr_assert_eq(pipe2(cancel, O_CLOEXEC), 0, "pipe: %s", strerror(errno));
            dw = (struct delayed_write){ cancel[1], 300 };
            cr_assert_eq(pthread_create(&thread, NULL, fire_later, &dw), 0);
            opts.cancel_fd = cancel[0];
        }
        r = contract_exec(state, argv, &opts, &out, msg, sizeof(msg));
        if (enders[i].how == BY_CANCEL) {
            pthread_join(thread, NULL);
            close(cancel[0]);
            close(cancel[1]);
        }
        cr_assert_eq(r, 0, "exec ended by %s failed: %s", enders[i].name, msg);
        cr_expect_eq(out.status, enders[i].status, "ended by %s, the status is %s",
                     enders[i].name, cordon_run_status_name(out.status));
        cordon_exec_outcome_clear(&out);
        /* Gone when the answer comes, not some time after it: the next
         * command must find the sandbox free of this one. */
        cr_expect_eq(contract_wait_no_processes(marker, ended ? TEARDOWN_MS : 0), 0,
                     "processes of the command ended by %s (marker %s) outlive the answer",
                     enders[i].name, marker);
        if (ended) {
            expect_declared(enders[i].name);
            state = NULL;   /* gone; teardown's terminate of it is a no-op */
            continue;
        }
        contract_sh(state, "cat marker", &out);
        text = contract_stream_text(&out.out);
        cr_expect(out.status == CORDON_RUN_EXITED && strcmp(text, "kept\n") == 0,
                  "after %s the execution lost what it wrote before: cat marker gave %s \"%s\"",
                  enders[i].name, cordon_run_status_name(out.status), text);
        free(text);
        cordon_exec_outcome_clear(&out);
    }
}
