/* cordon extend ID --runtime DUR: move an execution's deadline to DUR from
 * now (cordon(1), json.md §11.1). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/limits.h"
#include "core/cli/cli.h"

static const char usage_text[] =
    "usage: cordon extend ID --runtime DUR [--json]\n"
    "Set the execution's remaining lifetime to DUR from now (sooner or later than before), at most\n"
    "24h after its creation, wherever its provider enforces the deadline. A provider that cannot\n"
    "move the deadline is refused (unsupported), and nothing changes.\n";

int cmd_extend(const struct cli_global *g, int argc, char **argv)
{
    enum { O_JSON = 256, O_RUNTIME };
    static const struct option opts[] = {
        { "json", no_argument, NULL, O_JSON }, { "runtime", required_argument, NULL, O_RUNTIME },
        { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
    };
    struct cordon_ctx *ctx = NULL;
    struct cordon_error err;
    const char *runtime = NULL, *id;
    char req[64], *text = NULL;
    uint64_t ms = 0;
    bool json = false;
    int c, rc;

    for (int i = 1; i < argc; i++)
        json = json || strcmp(argv[i], "--json") == 0;
    while ((c = cli_getopt(argc, argv, "h", opts, NULL, "extend", json)) != -1) {
        switch (c) {
        case O_JSON: json = true; break;
        case O_RUNTIME: runtime = optarg; break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: fputs(usage_text, stderr); return CLI_EXIT_USAGE;
        }
    }
    if (optind >= argc)
        return cli_usage_error("extend", json, "an execution id is required");
    id = argv[optind++];
    if (optind < argc)
        return cli_usage_error("extend", json, "unexpected operand '%s'", argv[optind]);
    if (runtime == NULL)
        return cli_usage_error("extend", json, "--runtime DUR is required (the lifetime left from now)");
    cordon_error_init(&err);
    if (cordon__parse_duration_ms("--runtime", runtime, &ms, &err) < 0)
        return cli_fail("extend", json, err.code, err.message);
    snprintf(req, sizeof(req), "{\"runtime_ms\":%llu}", (unsigned long long)ms);
    if ((ctx = cli_ctx_open(g, json)) == NULL)
        return CLI_EXIT_FAILURE;
    if (cordon_extend_json(ctx, id, req, &text, &err) < 0) {
        rc = cli_fail("extend", json, err.code, err.message);
    } else if (json) {
        cli_print_json(text);
        rc = 0;
    } else {
        cJSON *doc = cJSON_Parse(text);
        const cJSON *at = cJSON_GetObjectItemCaseSensitive(doc, "expires_at_ms");
        time_t t = cJSON_IsNumber(at) ? (time_t)(at->valuedouble / 1000) : 0;
        char when[32] = "?";
        struct tm tm;

        if (gmtime_r(&t, &tm) != NULL)
            strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
        cli_line(stdout, "%s expires at %s", id, when);
        fflush(stdout);
        cJSON_Delete(doc);
        rc = 0;
    }
    free(text);
    cordon_ctx_free(ctx);
    return rc;
}
