/*
 * cordon checkpoint ls [ID] | rm CHECKPOINT_ID, and cordon checkpoint ID
 * (cmd_host) as before. The first operand picks the form: "ls" and "rm"
 * are valid execution ids too, so an execution of that name is named
 * after "--" (`cordon checkpoint -- ls`), which the old form always took.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli/cli.h"

static const char ls_usage[] =
    "usage: cordon checkpoint ls [ID] [--json]\n"
    "List the checkpoint store, or the checkpoints taken of execution ID (which may be gone):\n"
    "{\"checkpoints\": [...]} with --json.\n";
static const char rm_usage[] =
    "usage: cordon checkpoint rm CHECKPOINT_ID [--json]\n"
    "Remove a checkpoint; one that a restore is reading is busy, and stays.\n";

/* The index of the first operand when it is "ls" or "rm", else 0: the
 * options before it are the old form's (--json, --metadata JSON, --help). */
static int sub_verb_at(int argc, char **argv)
{
    int i = 1;

    while (i < argc && argv[i][0] == '-' && strcmp(argv[i], "--") != 0)
        i += strcmp(argv[i], "--metadata") == 0 ? 2 : 1;
    if (i < argc && (strcmp(argv[i], "ls") == 0 || strcmp(argv[i], "rm") == 0))
        return i;
    return 0;
}

static void print_list(const char *text)
{
    cJSON *doc = cJSON_Parse(text);
    const cJSON *c;

    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(doc, "checkpoints")) {
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "checkpoint_id"));
        const char *bad = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "invalid"));
        const char *src = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "source_execution_id"));
        const char *at = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "created_at"));
        const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(c, "workspace"), "bytes");

        if (bad != NULL)
            cli_line(stdout, "%-30s invalid: %s", id != NULL ? id : "?", bad);
        else
            cli_line(stdout, "%-30s %-40s %-20s %.0f", id != NULL ? id : "?", src != NULL ? src : "?",
                     at != NULL ? at : "?", cJSON_IsNumber(bytes) ? bytes->valuedouble : 0.0);
    }
    fflush(stdout);
    cJSON_Delete(doc);
}

int cmd_checkpoint(const struct cli_global *g, int argc, char **argv)
{
    static const struct option opts[] = {
        { "json", no_argument, NULL, 'j' }, { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
    };
    int at = sub_verb_at(argc, argv), vargc = 0, c, rc;
    const char *verb, *operand = NULL;
    struct cordon_ctx *ctx = NULL;
    struct cordon_error err;
    char **vargv, *text = NULL;
    bool json = false, is_ls;

    if (at == 0) {
        rc = cmd_host(g, argc, argv);
        /* The old form's help, then the sub-verbs'. */
        for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
            if (rc == 0 && (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)) {
                fputs(ls_usage, stdout);
                fputs(rm_usage, stdout);
                break;
            }
        return rc;
    }
    is_ls = strcmp(argv[at], "ls") == 0;
    verb = is_ls ? "checkpoint ls" : "checkpoint rm";
    /* argv without the sub-verb, for getopt. */
    vargv = calloc((size_t)argc + 1, sizeof(*vargv));
    if (vargv == NULL)
        return cli_fail(verb, false, CORDON_E_NOMEM, "out of memory");
    for (int i = 0; i < argc; i++)
        if (i != at)
            vargv[vargc++] = argv[i];
    for (int i = 1; i < vargc && strcmp(vargv[i], "--") != 0; i++)
        json = json || strcmp(vargv[i], "--json") == 0;
    while ((c = cli_getopt(vargc, vargv, "h", opts, NULL, verb, json)) != -1) {
        if (c == 'j') {
            json = true;
        } else if (c == 'h') {
            fputs(is_ls ? ls_usage : rm_usage, stdout);
            rc = 0;
            goto out;
        } else {
            fputs(is_ls ? ls_usage : rm_usage, stderr);
            rc = CLI_EXIT_USAGE;
            goto out;
        }
    }
    if (optind < vargc)
        operand = vargv[optind++];
    if (optind < vargc) {
        rc = cli_usage_error(verb, json, "unexpected operand '%s'", vargv[optind]);
        goto out;
    }
    if (!is_ls && operand == NULL) {
        rc = cli_usage_error(verb, json, "a checkpoint id is required");
        goto out;
    }
    if ((ctx = cli_ctx_open(g, json)) == NULL) {
        rc = CLI_EXIT_FAILURE;
        goto out;
    }
    cordon_error_init(&err);
    if ((is_ls ? cordon_checkpoint_list_json(ctx, operand, &text, &err)
               : cordon_checkpoint_remove_json(ctx, operand, &text, &err)) < 0) {
        rc = cli_fail(verb, json, err.code, err.message);
        goto out;
    }
    if (json)
        cli_print_json(text);
    else if (is_ls)
        print_list(text);
    rc = 0;
out:
    free(text);
    cordon_ctx_free(ctx);
    free(vargv);
    return rc;
}
