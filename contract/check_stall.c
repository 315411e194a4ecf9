/*
 * cordon-contract: nothing inside an execution stalls the host or stops
 * its clock.
 *
 * A file lease held inside makes every other open of the file wait the
 * kernel's lease-break time (45 s by default): a provider refuses leases,
 * or its export and terminate do not wait on them. What holds the runtime
 * deadline lives where the sandbox cannot stop it: an execution whose
 * every visible process was sent SIGSTOP and SIGKILL from inside still
 * ends at its deadline, with no call from the host.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <cordon/sdk/facts.h>
#include <cordon/sdk/host.h>
#include "contract/contract.h"

/* Under the 45 s lease-break time: a call that waited for a lease fails it. */
#define STALL_BOUND_MS 25000u
#define LEASE_HOLD_S "40"
#define DEADLINE_RUNTIME_MS 8000u
#define DEADLINE_GRACE_MS 15000u

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* The holder's exec, on a thread of its own; it never asserts. */
struct holder {
    const char *state;
    struct cordon_exec_outcome out;
    char msg[600];
    int r;
};

static void *holder_main(void *arg)
{
    static const char *const argv[] = { "./cordon-observe", "--hold-lease", "leased",
                                        LEASE_HOLD_S, NULL };
    struct holder *h = arg;
    struct contract_exec opts;

    contract_exec_init(&opts);
    opts.timeout_ms = 60000;
    h->r = contract_exec(h->state, argv, &opts, &h->out, h->msg, sizeof(h->msg));
    return NULL;
}

Test(contract, attack_file_lease_stalls_neither_export_nor_terminate)
{
    static const char *const files[] = { "leased", "data\n", NULL };
    struct holder h = { 0 };
    char msg[600], *text;
    pthread_t thread;
    uint64_t t0, took;
    int tar, r;

    h.state = contract_provision(NULL, CORDON_SPEC_LAYOUT_HOST);
    tar = contract_tar_of(files);
    cr_assert_eq(contract_import(h.state, "", tar, msg, sizeof(msg)), 0, "import failed: %s", msg);
    close(tar);
    tar = contract_observer_tar();
    cr_assert_eq(contract_import(h.state, "", tar, msg, sizeof(msg)), 0,
                 "importing the observer failed: %s", msg);
    close(tar);
    /* A refused lease ends the holder at once; a granted one is held while
     * the host reads the workspace. */
    cr_assert_eq(pthread_create(&thread, NULL, holder_main, &h), 0);
    sleep_ms(2000);

    t0 = cordon_now_monotonic_ms();
    r = contract_export(h.state, "", &tar, msg, sizeof(msg));
    took = cordon_now_monotonic_ms() - t0;
    if (r == 0)
        close(tar);
    else
        cr_log_info("export_tar with a lease held inside failed (allowed, if quick): %s", msg);
    cr_expect_lt(took, STALL_BOUND_MS,
                 "export_tar of the workspace took %llu ms while a lease was taken inside (the "
                 "bound is %u ms, under the kernel's lease-break time)",
                 (unsigned long long)took, STALL_BOUND_MS);

    t0 = cordon_now_monotonic_ms();
    {
        struct cordon_error err;

        cordon_error_init(&err);
        r = contract.vt.terminate(contract.resource, h.state, &err);
        took = cordon_now_monotonic_ms() - t0;
        cr_expect_eq(r, 0, "terminate with a lease held inside failed: %s", err.message);
    }
    cr_expect_lt(took, STALL_BOUND_MS, "terminate took %llu ms while a lease was taken inside",
                 (unsigned long long)took);
    pthread_join(thread, NULL);
    text = contract_stream_text(&h.out.out);
    cr_log_info("the lease holder said: %s (%s)", text, h.msg);
    cr_expect(strncmp(text, "lease ", 6) == 0 || h.r != 0 || h.out.status != CORDON_RUN_EXITED,
              "the holder did not run: %s %s", text, h.msg);
    free(text);
    cordon_exec_outcome_clear(&h.out);
}

/*
 * From inside: a marked sleeper in a session of its own, then SIGSTOP to
 * every process the sandbox can signal (kill -1, then each pid in /proc
 * but the script's own, PID 1 included), then SIGKILL to PID 1. Whatever
 * holds the deadline is stopped if the sandbox can reach it: a keeper of
 * the sandbox's uid, PID 1 or not, must not be (DESIGN: the deadline
 * keeper is PID 1 of the sandbox's pid namespace or outside it); killing
 * it instead would only end the execution early. The stopped sleeper
 * must be gone from the host by the deadline (plus grace) without any
 * call to the provider; only then is the execution looked at, and
 * terminated for cleanup.
 *
 * Nothing at all is signalled unless the sandbox is seen to be contained
 * and the script proves it is in neither the suite's pid namespace nor,
 * on the suite's kernel, the initial one (contain.c): kill -1 and /proc
 * then reach only the sandbox's own processes. A provider that runs
 * commands on the host as root would have had the host's every process
 * stopped.
 */
Test(contract, attack_stopping_every_process_inside_does_not_stop_the_deadline)
{
    char marker[48], script[900], msg[600], *spec, *text;
    const char *state, *argv[] = { "true", NULL };
    struct cordon_exec_outcome out;
    cJSON *facts = contract_require_contained(CONTRACT_HARM_SIGNAL);
    struct cordon_limits limits = contract_limits;
    uint64_t expires, now;
    bool visible;
    int r, left;

    contract_sleep_marker(marker, sizeof(marker));
    /* The suite's spec with a short runtime, and the deadline it gives. */
    limits.runtime_ms = DEADLINE_RUNTIME_MS;
    spec = contract_spec_with(NULL, CORDON_SPEC_LAYOUT_HOST, &limits, &expires);
    r = contract_try_provision(spec, &state, msg, sizeof(msg));
    free(spec);
    cr_assert_eq(r, 0, "provision with runtime_ms %u failed: %s", DEADLINE_RUNTIME_MS, msg);
    /* The sleeper runs in a session of its own (setsid), and is seen to be
     * sleep (its own command line, after setsid) before anything is
     * stopped: a provider may kill the command's process group when the
     * command ends (cordon-init's agent does), and a forked child stopped
     * before its execve would be in that group, under the shell's command
     * line. It must be the deadline that ends it. An image without setsid
     * gets no sleeper, and the execution is checked after the deadline. */
    snprintf(script, sizeof(script),
             "m=; if command -v setsid >/dev/null; then "
             "setsid sleep %s </dev/null >/dev/null 2>&1 & m=$!; "
             "for i in $(seq 1 500); do case \"$(tr '\\0' ' ' </proc/$m/cmdline 2>/dev/null)\" in "
             "sleep*) break;; esac; sleep 0.01; done; "
             "else echo nosetsid; fi; "
             "kill -STOP -1; kill -STOP 1; "
             "for p in /proc/[0-9]*; do p=${p#/proc/}; [ \"$p\" = $$ ] || kill -STOP $p; done; "
             "kill -KILL 1; echo attacked",
             marker);
    contract_sh_contained(state, CONTRACT_HARM_SIGNAL, script, &out);
    text = contract_stream_text(&out.out);
    cordon_exec_outcome_clear(&out);
    visible = strstr(text, "nosetsid") == NULL && contract_count_processes(marker) > 0;
    if (strstr(text, "nosetsid") != NULL)
        cr_log_info("the image has no setsid: no sleeper; checking the execution after the "
                    "deadline");
    free(text);
    if (visible) {
        now = cordon_now_wall_ms();
        left = contract_wait_no_processes(
            marker, (unsigned)(expires > now ? expires - now : 0) + DEADLINE_GRACE_MS);
        cr_expect_eq(left, 0,
                     "a stopped process of the execution outlived its deadline by %u ms: what "
                     "holds the deadline can be stopped from inside",
                     DEADLINE_GRACE_MS);
        cr_expect_geq(cordon_now_wall_ms() + 1000, expires,
                      "the execution ended %llu ms before its deadline",
                      (unsigned long long)(expires - cordon_now_wall_ms()));
    } else {
        /* Processes inside are not host processes (a VM, gVisor): wait out
         * the deadline, then the execution must be gone. */
        cr_log_info("the sandbox's processes are not visible on the host; checking the "
                    "execution itself after the deadline");
        now = cordon_now_wall_ms();
        if (expires + DEADLINE_GRACE_MS > now)
            sleep_ms((unsigned)(expires + DEADLINE_GRACE_MS - now));
    }
    r = contract_exec(state, argv, NULL, &out, msg, sizeof(msg));
    cr_expect(r != 0 || out.status != CORDON_RUN_EXITED || out.exit_code != 0,
              "an exec %u ms after the deadline still ran", DEADLINE_GRACE_MS);
    cordon_exec_outcome_clear(&out);
    cJSON_Delete(facts);
}
