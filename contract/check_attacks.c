/*
 * cordon-contract: attacks on every isolation axis the provider claims.
 * An axis claimed false is honest and its attack is skipped; an axis
 * claimed true that an attack gets through is a failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <cordon/sdk/facts.h>
#include <cordon/sdk/tar.h>
#include "core/observe/proc-status.h"
#include "contract/contract.h"

Test(contract, attack_host_canary_file_stays_unreadable)
{
    const char *argv[] = { "cat", NULL, NULL };
    struct cordon_exec_outcome out;
    char token[65], path[4096], msg[600];
    cJSON *facts = contract_require_claim(CORDON_AXIS_HOST_FS_RESTRICTED);
    const char *dir = contract_temp_dir(0755), *state;
    char *stdout_text, *stderr_text;
    int fd;

    /* World-readable, so that only the sandbox's boundary can hide it. */
    contract_random_hex(token, 32);
    snprintf(path, sizeof(path), "%s/canary.txt", dir);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    cr_assert(fd >= 0, "create %s: %s", path, strerror(errno));
    cr_assert_eq(write(fd, token, strlen(token)), (ssize_t)strlen(token));
    cr_assert_eq(fchmod(fd, 0644), 0);
    close(fd);

    state = contract_provision(NULL, CORDON_SPEC_LAYOUT_CODE);
    argv[1] = path;
    cr_assert_eq(contract_exec(state, argv, NULL, &out, msg, sizeof(msg)), 0,
                 "the provider could not run the attack: %s", msg);
    stdout_text = contract_stream_text(&out.out);
    stderr_text = contract_stream_text(&out.err);
    cr_expect(strstr(stdout_text, token) == NULL && strstr(stderr_text, token) == NULL,
              "host_filesystem_restricted is claimed, but `cat %s` inside printed the host "
              "canary's content", path);
    free(stdout_text);
    free(stderr_text);
    cordon_exec_outcome_clear(&out);
    cJSON_Delete(facts);
}

Test(contract, attack_host_process_stays_out_of_reach)
{
    struct cordon_exec_outcome out;
    char marker[64], script[160];
    cJSON *facts = contract_require_claim(CORDON_AXIS_PROCESS_CONTAINED);
    const char *state;
    char *text;
    pid_t pid;

    contract_sleep_marker(marker, sizeof(marker));
    pid = contract_spawn_sleeper(marker);
    state = contract_provision(NULL, CORDON_SPEC_LAYOUT_CODE);
    snprintf(script, sizeof(script), "kill -0 %d", (int)pid);
    contract_sh(state, script, &out);
    cr_expect_eq(kill(pid, 0), 0, "the host sleeper died during the attack");
    cr_expect(out.status == CORDON_RUN_EXITED && out.exit_code != 0,
              "process_contained is claimed, but `kill -0 %d` (a host process) succeeded inside "
              "(status %s, exit %d)", (int)pid, cordon_run_status_name(out.status), out.exit_code);
    cordon_exec_outcome_clear(&out);

    /* Not signalable is not enough (another uid gets EPERM): the host's
     * process must not be visible either. The marker is unique, so a
     * process that merely has the same pid inside does not count. */
    snprintf(script, sizeof(script), "cat /proc/%d/cmdline", (int)pid);
    contract_sh(state, script, &out);
    text = contract_stream_text(&out.out);
    for (size_t i = 0; i < out.out.len; i++)
        if (text[i] == '\0')
            text[i] = ' ';
    cr_expect(strstr(text, marker) == NULL,
              "process_contained is claimed, but the host process %d (sleep %s) is visible inside "
              "through /proc", (int)pid, marker);
    free(text);
    cordon_exec_outcome_clear(&out);
    cJSON_Delete(facts);
}

/* The observer's report from inside state (imported and run there). */
static cJSON *report_inside(const char *state)
{
    const char *argv[] = { "./cordon-observe", NULL };
    struct cordon_exec_outcome out;
    char msg[600], *text;
    cJSON *report;
    int tar = contract_observer_tar();

    cr_assert_eq(contract_import(state, "", tar, msg, sizeof(msg)), 0,
                 "importing the observer failed: %s", msg);
    close(tar);
    cr_assert_eq(contract_exec(state, argv, NULL, &out, msg, sizeof(msg)), 0,
                 "the provider could not run the observer: %s", msg);
    text = contract_stream_text(&out.out);
    cr_assert(out.status == CORDON_RUN_EXITED && out.exit_code == 0,
              "the observer did not run (%s %d)", cordon_run_status_name(out.status),
              out.exit_code);
    report = cJSON_Parse(text);
    cr_assert(cJSON_IsObject(report), "the observer's report is not JSON: %s", CONTRACT_CLIP(text));
    free(text);
    cordon_exec_outcome_clear(&out);
    return report;
}

/* True when gVisor's Sentry answers the sandbox: its kernel log's first
 * line, at time 0 (no process on the host's kernel can show it). */
static bool answered_by_gvisor(const cJSON *report)
{
    const char *klog = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(report, "kernel"), "klog_first"));

    return klog != NULL && klog[0] == '[' &&
           strcmp(klog + 1 + strspn(klog + 1, " "), "0.000000] Starting gVisor...") == 0;
}

/*
 * Under gVisor an attack that got an answer inside got it from the Sentry,
 * not the host's kernel: it counts as stopped only where the suite's own
 * observation, from outside on the boundary, shows that every check named
 * held (docs/observation.md). Asserts; logs what it relied on.
 */
static void require_outside(const char *axis, const char *const *checks, const char *what)
{
    cJSON *observed = contract_observe();
    const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(observed, "isolation"), "mechanism_kind"));

    cr_assert(kind != NULL && strcmp(kind, "gvisor") == 0,
              "%s inside, and the suite's observation saw kernel %s, not gVisor's", what,
              kind != NULL ? kind : "none");
    for (size_t i = 0; checks[i] != NULL; i++) {
        const cJSON *c = contract_observed_check(observed, axis, checks[i]);

        cr_assert(c != NULL && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "ok")),
                  "%s inside gVisor, and from outside %s does not hold: %s", what, checks[i],
                  c != NULL ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "detail")) : "not checked");
    }
    cr_log_info("%s inside gVisor's Sentry; from outside the boundary holds (%s...)", what, checks[0]);
    cJSON_Delete(observed);
}

Test(contract, attack_privileges_are_not_held)
{
    const char *id_argv[] = { "id", "-u", NULL };
    const char *status_argv[] = { "cat", "/proc/self/status", NULL };
    struct cordon_exec_outcome out;
    char msg[600], capeff[128], nnp[32];
    cJSON *facts = contract_require_claim(CORDON_AXIS_PRIVESC_BLOCKED);
    const char *state = contract_provision(NULL, CORDON_SPEC_LAYOUT_CODE);
    char *text, *end;
    long uid;

    cr_assert_eq(contract_exec(state, id_argv, NULL, &out, msg, sizeof(msg)), 0,
                 "the provider could not run `id -u`: %s", msg);
    text = contract_stream_text(&out.out);
    cr_expect(out.status == CORDON_RUN_EXITED && out.exit_code == 0, "`id -u` did not run (%s %d)",
              cordon_run_status_name(out.status), out.exit_code);
    uid = strtol(text, &end, 10);
    cr_expect(end != text && uid != 0,
              "privilege_escalation_blocked is claimed, but `id -u` inside printed \"%s\"", text);
    free(text);
    cordon_exec_outcome_clear(&out);

    cr_assert_eq(contract_exec(state, status_argv, NULL, &out, msg, sizeof(msg)), 0,
                 "the provider could not run `cat /proc/self/status`: %s", msg);
    text = contract_stream_text(&out.out);
    cr_assert(cordon__status_value(text, "CapEff", capeff, sizeof(capeff)) != NULL,
              "no CapEff line in /proc/self/status inside");
    /* A value cut to the buffer could hide its last digits. */
    cr_expect(strlen(capeff) < sizeof(capeff) - 1 && strtoull(capeff, NULL, 16) == 0,
              "privilege_escalation_blocked is claimed, but CapEff inside is %s",
              CONTRACT_CLIP(capeff));
    if (cordon__status_value(text, "NoNewPrivs", nnp, sizeof(nnp)) != NULL) {
        cr_expect_str_eq(nnp, "1",
                         "privilege_escalation_blocked is claimed, but NoNewPrivs inside is %s",
                         CONTRACT_CLIP(nnp));
    } else {
        /* gVisor's status has no such line: its kernel still answers
         * prctl, and the Sentry's own confinement is seen from outside. */
        static const char *const outside[] = { "boundary_verified", "boundary_no_new_privs",
                                               "boundary_uid_not_root", "boundary_caps_not_host", NULL };
        cJSON *report = report_inside(state);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(report, "prctl"),
                                                          "no_new_privs");

        cr_assert(answered_by_gvisor(report), "no NoNewPrivs line in /proc/self/status inside");
        cr_expect(cJSON_IsNumber(v) && v->valuedouble == 1,
                  "privilege_escalation_blocked is claimed, but PR_GET_NO_NEW_PRIVS inside is not 1");
        require_outside(CORDON_AXIS_PRIVESC_BLOCKED, outside, "no NoNewPrivs line in /proc/self/status");
        cJSON_Delete(report);
    }
    free(text);
    cordon_exec_outcome_clear(&out);
    cJSON_Delete(facts);
}

Test(contract, attack_forbidden_syscalls_are_refused)
{
    static const char *const forbidden[] = { "keyctl", "bpf", "mount", "unshare_user",
                                              "io_uring_setup", "file_lease" };
    static const char *const families[] = { "vsock", "packet", "xdp", "bluetooth", "can", "nfc",
                                            "qipcrtr", "rds", "netlink_uevent" };
    static const char *const outside[] = { "boundary_verified", "boundary_serves_syscalls",
                                           "boundary_seccomp_filter", NULL };
    cJSON *facts = contract_require_claim(CORDON_AXIS_SYSCALLS_RESTRICTED);
    const char *state = contract_provision(NULL, CORDON_SPEC_LAYOUT_HOST);
    const cJSON *calls, *c;
    struct contract_text answered = { 0 };
    cJSON *report;

    report = report_inside(state);
    calls = cJSON_GetObjectItemCaseSensitive(report, "syscalls");
    for (size_t i = 0; i < sizeof(forbidden) / sizeof(forbidden[0]); i++) {
        const char *result = NULL;

        cJSON_ArrayForEach(c, calls) {
            if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "name")) ?: "",
                       forbidden[i]) == 0)
                result = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "result"));
        }
        /* A kernel call gVisor's Sentry answered never reached the host's
         * kernel; a lease must be refused wherever it is taken. */
        if (result != NULL && strcmp(forbidden[i], "file_lease") != 0 && answered_by_gvisor(report) &&
            (strcmp(result, "ok") == 0 || strcmp(result, "reachable") == 0)) {
            contract_text_add(&answered, "%s%s", answered.len ? ", " : "", forbidden[i]);
            continue;
        }
        cr_expect(result != NULL && strcmp(result, "refused") == 0,
                  "syscalls_restricted is claimed, but %s was %s inside", forbidden[i],
                  result != NULL ? result : "not reported");
    }
    /* No family that reaches past the network namespace, no uevents. */
    for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
        const cJSON *created = NULL;

        /* gVisor's Sentry answers a uevent socket of its own, which hears
         * nothing of the host: only the families that reach outside count. */
        if (strcmp(families[i], "netlink_uevent") == 0 && answered_by_gvisor(report))
            continue;

        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(report, "sockets")) {
            if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "name")) ?: "",
                       families[i]) == 0)
                created = cJSON_GetObjectItemCaseSensitive(c, "created");
        }
        cr_expect(cJSON_IsFalse(created), "syscalls_restricted is claimed, but a %s socket %s inside",
                  families[i], created == NULL ? "was not reported" : "could be created");
    }
    if (answered.len > 0) {
        contract_text_add(&answered, " answered");
        require_outside(CORDON_AXIS_SYSCALLS_RESTRICTED, outside, contract_text_str(&answered));
    }
    contract_text_clear(&answered);
    cJSON_Delete(report);
    cJSON_Delete(facts);
}

/*
 * Every provider's command starts with fds 0, 1 and 2 and nothing else:
 * an fd above 2 is a channel out of the sandbox (a provider's socket to
 * its mechanism or agent, a host file, a pipe of the host's), whatever the
 * axes claim. A subshell lists the command's own fds (its parent's, $$),
 * so that the listing's directory fd is not among them; the waiting shell
 * holds no fd of its own.
 */
Test(contract, attack_exec_inherits_only_stdin_stdout_stderr)
{
    struct cordon_exec_outcome out;
    const char *state = contract_provision(NULL, CORDON_SPEC_LAYOUT_CODE);
    char *text, clip[300];

    contract_sh(state, "(for f in /proc/$$/fd/*; do printf '%s ' \"${f##*/}\"; done)", &out);
    text = contract_stream_text(&out.out);
    cr_expect(out.status == CORDON_RUN_EXITED && out.exit_code == 0,
              "listing /proc/self/fd did not run (%s %d)", cordon_run_status_name(out.status),
              out.exit_code);
    cr_expect_str_eq(text, "0 1 2 ",
                     "the command inherited descriptors other than 0, 1 and 2 (/proc/self/fd "
                     "holds %s): a channel out of the sandbox",
                     contract_clip(text, 200, clip, sizeof(clip)));
    free(text);
    cordon_exec_outcome_clear(&out);
}

/*
 * Code inside cannot end its own sandbox: a runtime limit is the host's to
 * enforce. The sandbox's PID 1 (an init that takes SIGTERM, SIGINT or SIGHUP
 * as "stop", say) must ignore those signals from inside and keep serving;
 * the same signals from outside (the runtime's kill) still stop it, which
 * the lifecycle checks show. Signalled only where the sandbox is seen to
 * be contained and the script proves from inside that it is not in the
 * suite's pid namespace (contain.c): PID 1 is then its own sandbox's init,
 * never the host's.
 */
Test(contract, attack_code_inside_cannot_stop_its_own_sandbox)
{
    struct cordon_exec_outcome out;
    cJSON *facts = contract_require_contained(CONTRACT_HARM_SIGNAL);
    const char *state = contract_provision(NULL, CORDON_SPEC_LAYOUT_CODE);
    const char *argv[] = { "sh", "-c", NULL, NULL };
    char msg[600], *text, *script, clip[300];
    int r;

    script = contract_contained_script(CONTRACT_HARM_SIGNAL,
                                       "kill -TERM 1; kill -INT 1; kill -HUP 1; sleep 1; echo alive");
    argv[2] = script;
    r = contract_exec(state, argv, NULL, &out, msg, sizeof(msg));
    free(script);
    cr_assert_eq(r, 0, "`kill -TERM 1; kill -INT 1; kill -HUP 1` from inside made the exec fail "
                 "(%s): code inside stopped its own sandbox", msg);
    text = contract_stream_text(&out.out);
    cr_assert(!contract_refused_as_not_contained(&out, text), "%s", CONTRACT_CLIP(text));
    cr_expect(out.status == CORDON_RUN_EXITED && out.exit_code == 0 && strcmp(text, "alive\n") == 0,
              "`kill -TERM 1; kill -INT 1; kill -HUP 1` from inside ended the command (%s %d, "
              "stdout \"%s\"): code inside stopped its own sandbox",
              cordon_run_status_name(out.status), out.exit_code,
              contract_clip(text, 200, clip, sizeof(clip)));
    free(text);
    cordon_exec_outcome_clear(&out);
    argv[2] = "true";
    r = contract_exec(state, argv, NULL, &out, msg, sizeof(msg));
    cr_assert_eq(r, 0, "after `kill -TERM 1` from inside, the next exec in the same execution "
                 "failed (%s): code inside stopped its own sandbox", msg);
    cr_expect(out.status == CORDON_RUN_EXITED && out.exit_code == 0,
              "after `kill -TERM 1` from inside, the next exec in the same execution failed "
              "(%s %d): code inside stopped its own sandbox",
              cordon_run_status_name(out.status), out.exit_code);
    cordon_exec_outcome_clear(&out);
    cJSON_Delete(facts);
}
