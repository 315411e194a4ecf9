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
    const cJSON *facts, *tc, *d;

    cJSON_ArrayForEach(facts, cJSON_GetObjectItemCaseSensitive(doc, "probes")) {
        const cJSON *iso = cJSON_GetObjectItemCaseSensitive(facts, "isolation");
        const cJSON *claimed = cJSON_GetObjectItemCaseSensitive(facts, "claimed_isolation");
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(facts, "verification");
        const char *reason = cli_str(facts, "reason", NULL), *why = cli_str(v, "reason", NULL);

        cli_line(stdout, "%s: %s%s%s%s", cli_str(facts, "provider_id", "?"),
                 cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(facts, "available")) ? "available" : "unavailable",
                 reason != NULL ? " (" : "", reason != NULL ? reason : "", reason != NULL ? ")" : "");
        if (cli_str(facts, "error", NULL) != NULL)
            cli_line(stdout, "  error: %s", cli_str(facts, "error", NULL));
        if (!cJSON_IsObject(iso))
            continue;
        cli_line(stdout, "  safety class: %s, observed by %s, network %s", cli_str(facts, "safety_class", "?"),
                 cli_str(facts, "observed_by", "?"), cli_str(facts, "network", "?"));
        /* Which kernel answered the observer decides what the axes mean. */
        if (cli_str(iso, "mechanism_kind", NULL) != NULL)
            cli_line(stdout, "  observed kernel: %s", cli_str(iso, "mechanism_kind", NULL));
        cli_line(stdout, "  verification: %s%s%s", cli_str(v, "status", "unverified"), why != NULL ? ": " : "",
                 why != NULL ? why : "");
        cli_line(stdout, "  %-30s %-8s %s", "axis", "claimed", "isolation (claimed and observed by the host)");
        for (size_t i = 0; i < 4; i++)
            cli_line(stdout, "  %-30s %-8s %s", axes[i],
                     cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(claimed, axes[i])) ? "yes" : "no",
                     cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(iso, axes[i])) ? "yes" : "NO");
        cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(v, "disproved"))
            cli_line(stdout, "  disproved %s/%s: %s", cli_str(d, "axis", "?"), cli_str(d, "check", "?"),
                     cli_str(d, "detail", ""));
        /* The host's verdict on each limit of its probe execution. */
        cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(facts, "limits_verified"))
            cli_line(stdout, "  limit %-16s %-9s (%s) %s", d->string, cli_str(d, "status", "not_run"),
                     cli_str(d, "enforced_by", "enforcement not said"), cli_str(d, "detail", ""));
        cJSON_ArrayForEach(tc, cJSON_GetObjectItemCaseSensitive(facts, "toolchains"))
            cli_line(stdout, "  toolchain %-6s %s", tc->string,
                     cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(tc, "available"))
                         ? cli_str(tc, "version", "not available") : "not available");
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

    for (int i = 1; i < argc; i++)
        json = json || strcmp(argv[i], "--json") == 0;
    while ((c = cli_getopt(argc, argv, "h", opts, NULL, "probe", json)) != -1) {
        switch (c) {
        case 'j': json = true; break;
        case 'f': mine.fresh = true; break;
        case 'p': config = optarg; break;
        default:
            fprintf(c == 'h' ? stdout : stderr,
                    "usage: cordon probe [PROVIDER...] [--provider-config JSON] [--fresh] [--json]\n"
                    "Probe each provider (every installed one when none is named): the provider\n"
                    "claims, then cordon runs its observer in one sandbox of the provider's and\n"
                    "reports the four isolation axes as it saw them, the limits, the safety class\n"
                    "and the toolchain versions it found. Facts are cached for an hour per\n"
                    "provider build and config; --fresh observes again.\n");
            return c == 'h' ? 0 : CLI_EXIT_USAGE;
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
