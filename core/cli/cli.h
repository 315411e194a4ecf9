/*
 * The cordon command: global options, verb table, and output helpers
 * shared by the verbs.
 */
#ifndef CORDON_CLI_H
#define CORDON_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <cjson/cJSON.h>
#include <cordon/cordon.h>

/* Exit statuses of the command (EXIT STATUS in cordon(1)). */
/* A usage error: an unknown, abbreviated, misplaced or valueless option, a
 * missing or extra operand. */
#define CLI_EXIT_USAGE 2
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

/* On a terminal, cordon's own lines start with CLI_TTY_RESET (and a
 * newline when program output left the cursor mid-line), then
 * CLI_TTY_MARK: "cordon" in bold reverse video, which program output,
 * whose control characters are shown escaped there, cannot draw. */
#define CLI_TTY_RESET "\033[0m"
#define CLI_TTY_MARK "\033[1;7mcordon\033[0m"

/* Write len bytes of a program's output to f: as they are when f is not a
 * terminal; on a terminal with control characters other than \n, \r and
 * \t, and bytes that are not UTF-8, shown escaped (cordon/text.h). */
void cli_program_output(FILE *f, const char *bytes, size_t len);

/* cordon exec's output as it comes: two pipes whose write ends
 * (*ret_stdout_fd, *ret_stderr_fd) go to cordon_exec_stream_json, and a
 * thread that passes what they carry to stdout and stderr through
 * cli_program_output. cli_stream_end closes the write ends, passes on the
 * rest and frees. Returns -1 when the pipes or the thread cannot be made. */
struct cli_stream;
int cli_stream_start(struct cli_stream **ret, int *ret_stdout_fd, int *ret_stderr_fd);
void cli_stream_end(struct cli_stream *s);

/* One line of cordon's own on stderr, "cordon: " and the formatted text,
 * escaped; on a terminal marked as above. */
void cli_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line of a human listing (probe, providers, ls) on f: the formatted
 * text escaped, as its fields are provider text, then a newline. */
void cli_line(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

struct option;

/*
 * getopt_long for the verbs, with three differences. Long options match
 * their whole name only: getopt's prefix matching took "--provider" for
 * "--provider-config" in a verb without --provider. When allowed is not
 * NULL (names without "--", NULL-terminated), a long option of opts that
 * is not in it is refused: opts may be shared by verbs that take different
 * options. And getopt prints nothing: a usage error (unknown, abbreviated
 * or refused option, missing value) prints one line naming the option
 * (JSON with json), "cordon VERB: ...", and returns '?'. shortopts may
 * start with '+'.
 */
int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *opts,
               const char *const *allowed, const char *verb, bool json);

/* A usage error of verb: the message as cli_fail prints it; returns
 * CLI_EXIT_USAGE. */
int cli_usage_error(const char *verb, bool json, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Print a JSON document on stdout followed by a newline. */
void cli_print_json(const char *text);

/* From now on SIGINT and SIGTERM cancel the call under way instead of
 * killing cordon: the returned fd becomes readable (a call's cancel_fd).
 * -1 when no pipe could be made (the signals then keep their default). */
int cli_cancel_fd(void);

/* obj's string member key, or fallback when there is none (or obj is not
 * an object): the fields of a human listing. */
const char *cli_str(const cJSON *obj, const char *key, const char *fallback);

int cmd_providers(const struct cli_global *g, int argc, char **argv);
int cmd_probe(const struct cli_global *g, int argc, char **argv);
int cmd_run(const struct cli_global *g, int argc, char **argv);
/* provision, exec, checkpoint, restore, terminate, reclaim, ls, gc */
int cmd_host(const struct cli_global *g, int argc, char **argv);
/* checkpoint ls | rm; checkpoint ID goes to cmd_host */
int cmd_checkpoint(const struct cli_global *g, int argc, char **argv);
/* extend ID --runtime DUR */
int cmd_extend(const struct cli_global *g, int argc, char **argv);
/* pool fill | ls | drain */
int cmd_pool(const struct cli_global *g, int argc, char **argv);
/* files put | get | ls | rm */
int cmd_files(const struct cli_global *g, int argc, char **argv);

#endif
