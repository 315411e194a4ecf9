/* cordon: the command line (docs/man/cordon.1). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    { "checkpoint", cmd_host, "save an execution's /workspace" },
    { "restore", cmd_host, "provision a new execution from a checkpoint" },
    { "terminate", cmd_host, "destroy an execution (idempotent)" },
    { "reclaim", cmd_host, "destroy what a provider holds for an id, record or not" },
    { "ls", cmd_host, "list executions" },
    { "gc", cmd_host, "reclaim expired, crashed and unrecorded executions" },
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: cordon [--config FILE] [--state-dir DIR] VERB [ARGS...]\n"
            "       cordon VERB --help\n\nverbs:\n");
    for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
        fprintf(out, "  %-10s %s\n", verbs[i].name, verbs[i].summary);
    fprintf(out, "\nexit status: the program's own for run; 124 timeout; 125 cordon failed\n"
                 "(bad input, no provider); 126 cannot invoke; 127 not found. See cordon(1).\n");
}

int cli_fail(const char *verb, bool json, int code, const char *message)
{
    if (json) {
        cJSON *doc = cJSON_CreateObject(), *e;
        char *text;

        cJSON_AddBoolToObject(doc, "ok", false);
        e = cJSON_AddObjectToObject(doc, "error");
        cJSON_AddStringToObject(e, "code", cordon_error_name(code));
        cJSON_AddStringToObject(e, "message", message);
        text = cJSON_PrintUnformatted(doc);
        if (text != NULL)
            cli_print_json(text);
        free(text);
        cJSON_Delete(doc);
    } else {
        fprintf(stderr, "cordon: %s: %s\n", verb, message);
    }
    return CLI_EXIT_FAILURE;
}

void cli_print_json(const char *text)
{
    fputs(text, stdout);
    fputc('\n', stdout);
    fflush(stdout);
}

char *cli_read_file(const char *path, size_t max, const char *verb, bool json, int *ret_exit)
{
    int fd = strcmp(path, "-") == 0 ? 0 : open(path, O_RDONLY | O_CLOEXEC);
    size_t len = 0, cap = 4096;
    char *buf = NULL, msg[600];

    if (fd < 0) {
        snprintf(msg, sizeof(msg), "%s: %s", path, strerror(errno));
        *ret_exit = cli_fail(verb, json, CORDON_E_NOT_FOUND, msg);
        return NULL;
    }
    buf = malloc(cap);
    while (buf != NULL) {
        ssize_t n;
        if (len + 1 == cap) {
            char *grown = len >= max ? NULL : realloc(buf, cap * 2);
            if (grown == NULL) {
                free(buf);
                buf = NULL;
                snprintf(msg, sizeof(msg), "%s: larger than %zu bytes", path, max);
                *ret_exit = cli_fail(verb, json, CORDON_E_LIMIT, msg);
                break;
            }
            buf = grown;
            cap *= 2;
        }
        n = read(fd, buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(msg, sizeof(msg), "%s: %s", path, strerror(errno));
            *ret_exit = cli_fail(verb, json, CORDON_E_IO, msg);
            free(buf);
            buf = NULL;
            break;
        }
        if (n == 0) {
            buf[len] = '\0';
            break;
        }
        len += (size_t)n;
    }
    if (fd > 0)
        close(fd);
    return buf;
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
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case 'c': g.config_path = optarg; break;
        case 's': g.state_dir = optarg; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("cordon %s (provider ABI %d.%d)\n", PACKAGE_VERSION, CORDON_ABI_MAJOR, CORDON_ABI_MINOR); return 0;
        default: usage(stderr); return CLI_EXIT_FAILURE;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return CLI_EXIT_FAILURE;
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
    return CLI_EXIT_FAILURE;
}
