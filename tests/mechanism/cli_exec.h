/*
 * Mechanism-test helper: the cordon command's host flow, driven as an
 * integrator would (provision, exec with --stdin, terminate), with the
 * command's own stdin, rlimits and environment chosen by the test. Shared
 * by the runc and trusted-local suites, and with the stdin, exit-status
 * and rlimit regression tests themselves (cli_exec_check_*), which each
 * suite runs against its provider.
 */
#ifndef CORDON_TEST_CLI_EXEC_H
#define CORDON_TEST_CLI_EXEC_H

#include <limits.h>
#include <stdbool.h>

#include <cjson/cJSON.h>

struct cli_exec {
    char bin[PATH_MAX];                  /* the cordon command */
    char config[PATH_MAX + 32];          /* --config */
    char state_dir[PATH_MAX + 32];       /* --state-dir */
    char env[4][PATH_MAX + 64];          /* CORDON_PROVIDER_PATH=..., CORDON_OBSERVER=... */
    const char *provision_args[8];       /* provider-specific provision flags, NULL-ended */
    const char *runtime;                 /* provision's --runtime; NULL: 120s */
};

/* cordon --config C --state-dir S ARGS... with stdin_fd as its fd 0 (-1:
 * /dev/null); returns its exit code and, in *ret_out, its stdout (free). */
int cli_exec_run(const struct cli_exec *c, const char *const *args, int stdin_fd, char **ret_out);

/* provision --provider P ... --json with the suite's limits; asserts
 * success and returns the execution id (free). */
char *cli_exec_provision(const struct cli_exec *c, const char *provider);

/* exec ID [--stdin PATH] --json -- sh -c SCRIPT; asserts a JSON object. */
cJSON *cli_exec_sh(const struct cli_exec *c, const char *id, const char *stdin_path, int stdin_fd,
                   const char *script);

/* terminate ID (asserts). */
void cli_exec_terminate(const struct cli_exec *c, const char *id);
/* Terminate whatever a failed check left provisioned (a suite's fini). */
void cli_exec_cleanup(const struct cli_exec *c);

/* The checks, each on an execution of its own that it terminates. */
void cli_exec_check_stdin_directory(const struct cli_exec *c, const char *provider);
void cli_exec_check_stdin_terminal(const struct cli_exec *c, const char *provider);
void cli_exec_check_exit_status(const struct cli_exec *c, const char *provider, bool signals_true);
/* want_stack, want_nofile: the soft values the provider sets, as
 * /proc/self/limits spells them; NULL: only "not the caller's". */
void cli_exec_check_rlimits(const struct cli_exec *c, const char *provider, const char *want_stack,
                            const char *want_nofile);

/* Without --json, cordon exec passes each stream on as it comes, to its
 * own fd: the first lines are out while the command still waits. */
void cli_exec_check_output_streams(const struct cli_exec *c, const char *provider);
/* Timeout (--timeout), cancel (timeout(1)'s SIGTERM to cordon exec) and
 * twice the output budget each end the command's whole process group
 * (gone when the answer comes) with its typed status and exit code, and
 * leave the execution ready: a marker written before reads back. */
void cli_exec_check_command_ends_alone(const struct cli_exec *c, const char *provider);
/* Where the provider cannot end one command alone: a timeout ends the
 * execution, the result says so (execution_terminated, its reason) and the
 * next exec finds nothing. */
void cli_exec_check_command_ends_execution(const struct cli_exec *c, const char *provider);

/* `cordon run --request - --json` without a workspace, under provider at
 * isolation: declared outputs come back inline (text, base64, missing),
 * and one over a bound, a symbolic link or a directory fails the collect
 * step with the field and the limit named. */
void cli_exec_check_inline_outputs(const struct cli_exec *c, const char *provider,
                                   const char *isolation);

#endif
