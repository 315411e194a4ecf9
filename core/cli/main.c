/* cordon: the command line (docs/man/cordon.1). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cordon/sdk/json.h>

#include "core/cli/cli.h"

static const struct verb {
    const char *name;
    int (*fn)(const struct cli_global *g, int argc, char **argv);
    const char *summary;
} verbs[] = {
    { "providers", cmd_providers, "list installed providers and whether they load" },
    { "probe", cmd_probe, "observe what each provider isolates, and its toolchains" },
    { "run", cmd_run, "run a code bundle in the selected sandbox (grant to close)" },
    { "provision", cmd_host, "create a long-lived execution with hard limits" },
    { "exec", cmd_host, "run a command in an execution" },
    { "checkpoint", cmd_checkpoint, "save an execution's /workspace; ls, rm: the checkpoint store" },
    { "restore", cmd_host, "provision a new execution from a checkpoint" },
    { "extend", cmd_extend, "set an execution's remaining lifetime (--runtime DUR)" },
    { "terminate", cmd_host, "destroy an execution (idempotent)" },
    { "reclaim", cmd_host, "destroy what a provider holds for an id, record or not" },
    { "ls", cmd_host, "list executions" },
    { "gc", cmd_host, "reclaim expired, crashed and unrecorded executions" },
    { "files", cmd_files, "put, get, list or remove a file in an execution's /workspace" },
    { "pool", cmd_pool, "keep warm executions for cordon run: fill, ls, drain" },
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: cordon [--config FILE] [--state-dir DIR] VERB [ARGS...]\n"
            "       cordon VERB --help\n\nverbs:\n");
    for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
        fprintf(out, "  %-10s %s\n", verbs[i].name, verbs[i].summary);
    fprintf(out, "\nexit status: the program's own for run and exec; 2 usage error; 124 timeout;\n"
                 "125 cordon failed (bad input, no provider); 126 cannot invoke; 127 not found.\n"
                 "See cordon(1).\n");
}

int cli_fail(const char *verb, bool json, int code, const char *message)
{
    if (json) {
        cJSON *doc = cJSON_CreateObject(), *e;
        char *text;

        cJSON_AddBoolToObject(doc, "ok", false);
        e = cJSON_AddObjectToObject(doc, "error");
        cJSON_AddStringToObject(e, "code", cordon_error_name(code));
        cordon_json_add_text(e, "message", message);
        text = cJSON_PrintUnformatted(doc);
        if (text != NULL)
            cli_print_json(text);
        free(text);
        cJSON_Delete(doc);
    } else {
        cli_say("%s: %s", verb, message);
    }
    return CLI_EXIT_FAILURE;
}

int cli_usage_error(const char *verb, bool json, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cli_fail(verb, json, CORDON_E_INVALID, msg);
    return CLI_EXIT_USAGE;
}

/* The argv element that named the long option getopt just returned. */
static const char *option_text(char **argv, const struct option *o)
{
    /* "--name VALUE": the value is the last element taken, the name before it. */
    if (o->has_arg == required_argument && optind >= 2 && optarg == argv[optind - 1])
        return argv[optind - 2];
    return argv[optind - 1];
}

int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *opts,
               const char *const *allowed, const char *verb, bool json)
{
    char spec[64];
    const char *text;
    int idx = -1, c;
    size_t n;

    /* ':' after any '+': a missing value is ':', not '?'. */
    snprintf(spec, sizeof(spec), "%s:%s", shortopts[0] == '+' ? "+" : "",
             shortopts + (shortopts[0] == '+'));
    opterr = 0;
    c = getopt_long(argc, argv, spec, opts, &idx);
    if (c == -1)
        return c;
    text = optind >= 1 && optind <= argc ? argv[optind - 1] : "";
    if (c == '?') {
        if (optopt != 0 && strncmp(text, "--", 2) != 0)
            cli_usage_error(verb, json, "unknown option '-%c'", optopt);
        else
            cli_usage_error(verb, json, "unknown option '%.*s' (options are named in full)",
                            (int)strcspn(text, "="), text);
        return '?';
    }
    if (c == ':') {
        if (optopt != 0 && strncmp(text, "--", 2) != 0)
            cli_usage_error(verb, json, "option '-%c' needs a value", optopt);
        else
            cli_usage_error(verb, json, "option '%.*s' needs a value", (int)strcspn(text, "="), text);
        return '?';
    }
    if (idx < 0)
        return c;
    text = option_text(argv, &opts[idx]);
    n = strlen(opts[idx].name);
    if (strncmp(text, "--", 2) != 0 || strncmp(text + 2, opts[idx].name, n) != 0 ||
        (text[2 + n] != '\0' && text[2 + n] != '=')) {
        cli_usage_error(verb, json, "unknown option '%.*s' (options are named in full; did you "
                                    "mean --%s?)", (int)strcspn(text, "="), text, opts[idx].name);
        return '?';
    }
    if (allowed != NULL) {
        size_t i;

        for (i = 0; allowed[i] != NULL && strcmp(allowed[i], opts[idx].name) != 0; i++)
            ;
        if (allowed[i] == NULL) {
            cli_usage_error(verb, json, "option '--%s' is not an option of %s", opts[idx].name, verb);
            return '?';
        }
    }
    return c;
}

const char *cli_str(const cJSON *obj, const char *key, const char *fallback)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, key));

    return s != NULL ? s : fallback;
}

void cli_print_json(const char *text)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t len = strlen(text);

    /* JSON escapes C0 controls itself; DEL, C1 controls, bidi controls and
     * line separators in program output are written as \uHHHH too (the
     * same string once parsed), so the document is printable text that a
     * terminal does not obey. Such characters only occur inside strings. */
    for (size_t i = 0, n; i < len; i += n) {
        uint32_t cp = 0;

        n = cordon_text_utf8_seq(s + i, len - i, &cp);
        if (n == 0)
            n = 1; /* not UTF-8 (the libraries sanitise before this): as is */
        else if ((n > 1 || cp == 0x7f) && cordon_text_hidden(cp, 0)) {
            printf("\\u%04x", (unsigned)cp);
            continue;
        }
        fwrite(s + i, 1, n, stdout);
    }
    fputc('\n', stdout);
    fflush(stdout);
}

struct cordon_ctx *cli_ctx_open(const struct cli_global *g, bool json)
{
    struct cordon_ctx_opts opts = { sizeof(opts), g->state_dir, g->config_path, NULL, g->fresh };
    struct cordon_ctx *ctx = NULL;
    struct cordon_error err;

    cordon_error_init(&err);
    if (cordon_ctx_new(&opts, &ctx, &err) < 0) {
        cli_fail("setup", json, err.code, err.message);
        return NULL;
    }
    return ctx;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "config", required_argument, NULL, 'c' },
        { "state-dir", required_argument, NULL, 's' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    struct cli_global g = { NULL, NULL, false };
    int c;

    /* "+": stop at the verb; each verb parses its own options. */
    while ((c = cli_getopt(argc, argv, "+h", opts, NULL, "options", false)) != -1) {
        switch (c) {
        case 'c': g.config_path = optarg; break;
        case 's': g.state_dir = optarg; break;
        case 'h': usage(stdout); return 0;
        case 'V':
            printf("cordon %s (provider ABI %d.%d)\n", PACKAGE_VERSION, CORDON_ABI_MAJOR, CORDON_ABI_MINOR);
            return 0;
        default: usage(stderr); return CLI_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
        if (strcmp(argv[optind], verbs[i].name) == 0) {
            int vargc = argc - optind;
            char **vargv = argv + optind;
            optind = 0; /* reset getopt for the verb */
            return verbs[i].fn(&g, vargc, vargv);
        }
    }
    fprintf(stderr, "cordon: unknown verb \"%s\"\n", argv[optind]);
    usage(stderr);
    return CLI_EXIT_USAGE;
}

static int cancel_pipe[2] = { -1, -1 };

static void on_cancel_signal(int sig)
{
    int saved = errno;
    char c = (char)sig;

    if (cancel_pipe[1] >= 0 && write(cancel_pipe[1], &c, 1) < 0) {
        /* nothing to do: the pipe is full, so cancel is already pending */
    }
    errno = saved;
}

int cli_cancel_fd(void)
{
    struct sigaction sa;

    if (cancel_pipe[0] >= 0)
        return cancel_pipe[0];
    if (pipe2(cancel_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        return -1;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_cancel_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    return cancel_pipe[0];
}
