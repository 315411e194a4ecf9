/* cordon probe: observed isolation and toolchains of each provider. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli/cli.h"

static void print_human(const cJSON *doc)
{
    static const char *const axes[] = { "process_contained", "host_filesystem_restricted",
                                        "privilege_escalation_blocked", "syscalls_restricted" };
    const cJSON *facts;

    cJSON_ArrayForEach(facts, cJSON_GetObjectItemCaseSensitive(doc, "probes")) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(facts, "provider_id");
        const cJSON *reason = cJSON_GetObjectItemCaseSensitive(facts, "reason");
        const cJSON *error = cJSON_GetObjectItemCaseSensitive(facts, "error");
        const cJSON *iso = cJSON_GetObjectItemCaseSensitive(facts, "isolation");
        const cJSON *safety = cJSON_GetObjectItemCaseSensitive(facts, "safety_class");
        const cJSON *observed = cJSON_GetObjectItemCaseSensitive(facts, "observed_by");
        const cJSON *network = cJSON_GetObjectItemCaseSensitive(facts, "network");
        const cJSON *tc;

        printf("%s: %s", cJSON_IsString(id) ? id->valuestring : "?",
               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(facts, "available")) ? "available" : "unavailable");
        if (cJSON_IsString(reason))
            printf(" (%s)", reason->valuestring);
        printf("\n");
        if (cJSON_IsString(error))
            printf("  error: %s\n", error->valuestring);
        if (!cJSON_IsObject(iso))
            continue;
        printf("  safety class: %s, observed by %s, network %s\n",
               cJSON_IsString(safety) ? safety->valuestring : "?",
               cJSON_IsString(observed) ? observed->valuestring : "?",
               cJSON_IsString(network) ? network->valuestring : "?");
        for (size_t i = 0; i < 4; i++)
            printf("  %-30s %s\n", axes[i],
                   cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(iso, axes[i])) ? "yes" : "NO");
        cJSON_ArrayForEach(tc, cJSON_GetObjectItemCaseSensitive(facts, "toolchains")) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(tc, "version");
            printf("  toolchain %-6s %s\n", tc->string,
                   cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(tc, "available")) && cJSON_IsString(v)
                       ? v->valuestring : "not available");
        }
    }
}

int cmd_probe(const struct cli_global *g, int argc, char **argv)
{
    static const struct option opts[] = {
        { "json", no_argument, NULL, 'j' },
        { "fresh", no_argument, NULL, 'f' },
        { "provider-config", required_argument, NULL, 'p' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct cli_global mine = *g;
    const char *config = NULL;
    struct cordon_ctx *ctx;
    struct cordon_error err;
    char *text = NULL;
    bool json = false;
    int c, rc = 0;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = true; break;
        case 'f': mine.fresh = true; break;
        case 'p': config = optarg; break;
        default:
            fprintf(c == 'h' ? stdout : stderr,
                    "usage: cordon probe [PROVIDER...] [--provider-config JSON] [--fresh] [--json]\n"
                    "Probe each provider (every installed one when none is named): it runs the\n"
                    "observer inside its own sandbox and reports the four isolation axes, the safety\n"
                    "class and the toolchain versions it saw. Facts are cached for an hour per\n"
                    "provider build and config; --fresh observes again.\n");
            return c == 'h' ? 0 : CLI_EXIT_FAILURE;
        }
    }
    ctx = cli_ctx_open(&mine, json);
    if (ctx == NULL)
        return CLI_EXIT_FAILURE;
    cordon_error_init(&err);
    /* getopt_long permuted the operands to the end: they are the ids. */
    argv[argc] = NULL;
    if (cordon_probe_json(ctx, (const char *const *)argv + optind, config, &text, &err) < 0) {
        rc = cli_fail("probe", json, err.code, err.message);
    } else if (json) {
        cli_print_json(text);
    } else {
        cJSON *doc = cJSON_Parse(text);
        print_human(doc);
        cJSON_Delete(doc);
    }
    free(text);
    cordon_ctx_free(ctx);
    return rc;
}
