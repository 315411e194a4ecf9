/*
 * Mechanism-test checks of `cordon extend` and `cordon checkpoint ls|rm`
 * through the command, shared by the suites of every provider that has
 * them (trusted-local, runc, docker): each provisions what it needs with
 * cli_exec_provision, so the suite's fini terminates what a failed check
 * left.
 */
#ifndef CORDON_TEST_CLI_EXTEND_H
#define CORDON_TEST_CLI_EXTEND_H

#include "tests/mechanism/cli_exec.h"

/* Two executions of --runtime 3s; one is extended to 30s. Past the first
 * deadline (the wall clock itself is the condition, with the time a
 * sandbox's init takes to start) the extended one still runs commands,
 * its sandbox's own clock moved; the other is expired. */
void cli_extend_check_outlives_its_first_deadline(const struct cli_exec *c, const char *provider);

/* checkpoint, ls ID lists it (with its source), rm removes it, ls no
 * longer lists it, a second rm is checkpoint_not_found (exit 125). */
void cli_extend_check_checkpoint_ls_rm(const struct cli_exec *c, const char *provider);

#endif
