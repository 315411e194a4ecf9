/*
 * cordon-contract: what code inside can reach of its sandbox's PID 1
 * beyond signals (check_attacks.c sends those): its resource limits. The
 * observer's "reach" section judges, in every observation, whether PID 1's
 * limits can be read; this check attacks through them and holds the
 * provider to the outcome: the sandbox neither ends early nor stops
 * serving.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <cordon/sdk/facts.h>
#include "contract/contract.h"

/*
 * Code inside sets PID 1's RLIMIT_SIGPENDING to 0 and sends it SIGTERM,
 * SIGINT and SIGHUP with sigqueue and tgkill, which then arrive without
 * their siginfo and look sent from outside (SI_USER, pid 0); then it
 * lowers PID 1's RLIMIT_NOFILE to 4, which leaves an agent no room for a
 * request's descriptors (cordon-observe --attack-pid1). The exec must end
 * normally and the next one must run. The observer refuses to send
 * anything when PID 1 shares this process's pid namespace.
 */
Test(contract, attack_code_inside_cannot_stop_its_sandbox_through_pid1s_limits)
{
    struct cordon_exec_outcome out;
    /* Signals PID 1 inside: only where the suite saw the sandbox contained. */
    cJSON *facts = contract_require_contained(CONTRACT_HARM_SIGNAL);
    const char *state = contract_provision(NULL, CORDON_SPEC_LAYOUT_HOST);
    const char *argv[] = { "./cordon-observe", "--attack-pid1", NULL, NULL };
    const char *echo[] = { "echo", "still", NULL };
    char host_ns[64] = "", msg[600], *text, clip[300];
    ssize_t n = readlink("/proc/self/ns/pid", host_ns, sizeof(host_ns) - 1);
    int tar, r;

    cr_assert(n > 0, "readlink /proc/self/ns/pid: %s", strerror(errno));
    host_ns[n] = '\0';
    argv[2] = host_ns;
    tar = contract_observer_tar();
    cr_assert_eq(contract_import(state, "", tar, msg, sizeof(msg)), 0,
                 "importing the observer failed: %s", msg);
    close(tar);
    r = contract_exec(state, argv, NULL, &out, msg, sizeof(msg));
    cr_assert_eq(r, 0, "going for PID 1's limits from inside made the exec fail (%s): code "
                 "inside stopped its own sandbox", msg);
    text = contract_stream_text(&out.out);
    cr_log_info("the attacker said: %s", contract_clip(text, 200, clip, sizeof(clip)));
    cr_assert(strcmp(text, "host\n") != 0,
              "process_contained is claimed, but PID 1 inside is in the host's pid namespace (%s)",
              host_ns);
    cr_assert(out.status == CORDON_RUN_EXITED && out.exit_code == 0 && strstr(text, "alive") != NULL,
              "the attacker did not end normally (%s %d): %s", cordon_run_status_name(out.status),
              out.exit_code, contract_clip(text, 200, clip, sizeof(clip)));
    free(text);
    cordon_exec_outcome_clear(&out);
    r = contract_exec(state, echo, NULL, &out, msg, sizeof(msg));
    cr_assert_eq(r, 0, "after PID 1's limits were attacked from inside, the next exec failed (%s)",
                 msg);
    text = contract_stream_text(&out.out);
    cr_expect_str_eq(text, "still\n", "the next exec printed %s",
                     contract_clip(text, 200, clip, sizeof(clip)));
    free(text);
    cordon_exec_outcome_clear(&out);
    cJSON_Delete(facts);
}
