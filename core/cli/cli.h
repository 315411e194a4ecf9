/*
 * The cordon command: global options, verb table, and output helpers
 * shared by the verbs.
 */
#ifndef CORDON_CLI_H
#define CORDON_CLI_H

#include <stdbool.h>
#include <cjson/cJSON.h>
#include <cordon/cordon.h>

/* Exit statuses of the command (DESIGN.md §8). */
#define CLI_EXIT_TIMEOUT 124
#define CLI_EXIT_FAILURE 125
#define CLI_EXIT_CANNOT_INVOKE 126
#define CLI_EXIT_NOT_FOUND 127

struct cli_global {
    const char *config_path;
    const char *state_dir;
    bool fresh;
};

/* Open the context the verbs share; prints the error (JSON when json). */
struct cordon_ctx *cli_ctx_open(const struct cli_global *g, bool json);

/* Print a failure of cordon itself: {"ok": false, "error": {...}} with
 * --json, else "cordon: <verb>: message" on stderr. Returns 125. */
int cli_fail(const char *verb, bool json, int code, const char *message);

/* Print a JSON document on stdout followed by a newline. */
void cli_print_json(const char *text);

/* Read a whole file ("-" for stdin), at most max bytes; malloc'd, NUL-terminated. */
char *cli_read_file(const char *path, size_t max, const char *verb, bool json, int *ret_exit);

int cmd_providers(const struct cli_global *g, int argc, char **argv);
int cmd_probe(const struct cli_global *g, int argc, char **argv);
int cmd_run(const struct cli_global *g, int argc, char **argv);
/* provision, exec, checkpoint, restore, terminate, reclaim, ls, gc */
int cmd_host(const struct cli_global *g, int argc, char **argv);

#endif
