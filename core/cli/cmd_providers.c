/* cordon providers: what is installed and whether it loads. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli/cli.h"

int cmd_providers(const struct cli_global *g, int argc, char **argv)
{
    static const struct option opts[] = {
        { "json", no_argument, NULL, 'j' }, { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
    };
    struct cordon_ctx *ctx;
    struct cordon_error err;
    char *text = NULL;
    bool json = false;
    cJSON *doc, *item;
    int c, rc = 0;

    for (int i = 1; i < argc; i++)
        json = json || strcmp(argv[i], "--json") == 0;
    while ((c = cli_getopt(argc, argv, "h", opts, NULL, "providers", json)) != -1) {
        if (c == 'j') {
            json = true;
        } else {
            fprintf(c == 'h' ? stdout : stderr,
                    "usage: cordon providers [--json]\n"
                    "List every provider .so on the provider path (CORDON_PROVIDER_PATH, then the\n"
                    "installed provider directory), with its version and ABI, or why it does not load.\n");
            return c == 'h' ? 0 : CLI_EXIT_USAGE;
        }
    }
    if (optind < argc)
        return cli_usage_error("providers", json, "unexpected operand '%s'", argv[optind]);
    ctx = cli_ctx_open(g, json);
    if (ctx == NULL)
        return CLI_EXIT_FAILURE;
    cordon_error_init(&err);
    if (cordon_providers_json(ctx, &text, &err) < 0) {
        rc = cli_fail("providers", json, err.code, err.message);
        goto out;
    }
    if (json) {
        cli_print_json(text);
        goto out;
    }
    doc = cJSON_Parse(text);
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(doc, "providers")) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(item, "provider_id");
        const cJSON *path = cJSON_GetObjectItemCaseSensitive(item, "path");
        const cJSON *version = cJSON_GetObjectItemCaseSensitive(item, "version");
        const cJSON *error = cJSON_GetObjectItemCaseSensitive(item, "error");

        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(item, "loaded")))
            cli_line(stdout, "%-16s %-10s %s", id->valuestring, version->valuestring, path->valuestring);
        else
            cli_line(stdout, "%-16s %-10s %s (does not load: %s)", id->valuestring, "-", path->valuestring,
                     error->valuestring);
    }
    cJSON_Delete(doc);
out:
    free(text);
    cordon_ctx_free(ctx);
    return rc;
}
