/*
 * Mechanism-test helper: `cordon files put|get|ls|rm` against a provider,
 * through the cordon command (each check on an execution of its own that
 * it terminates). Shared by the trusted-local, runc and docker suites.
 */
#ifndef CORDON_TEST_CLI_FILES_H
#define CORDON_TEST_CLI_FILES_H

#include "tests/mechanism/cli_exec.h"

/* put a file, `cat` it inside, get it back byte for byte, ls, rm. */
void cli_files_check_round_trip(const struct cli_exec *c, const char *provider);

/* Links, a FIFO and a directory the sandbox planted: get never reads
 * through a link (a host file's bytes never come out), put never writes
 * through one (the host file and directory stay as they were), get of a
 * FIFO fails at once, a failed get --to leaves no file. */
void cli_files_check_hostile(const struct cli_exec *c, const char *provider);

/* 50 MiB in and out byte for byte under a 1 MiB max_output_bytes; a put
 * beyond disk_bytes is refused naming the limit and leaves nothing, and so
 * does one that fills the disk part-way. */
void cli_files_check_large(const struct cli_exec *c, const char *provider);

#endif
