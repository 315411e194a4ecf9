/* cordon pool fill | ls | drain: the warm pool on the command line. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/hostflow.h"
#include "core/internal.h"
#include "core/limits.h"
#include "core/pool.h"
#include "core/run.h"
#include "core/cli/cli.h"
#include "core/cli/request.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: cordon pool fill --provider P --size N [--for run|provision] [--image REF] [--ttl DUR]\n"
            "                        [--timeout DUR] [LIMITS] [--env NAME=VALUE]...\n"
            "                        [--isolation required|preferred|none] [--allow-unsafe-local]\n"
            "                        [--request FILE|-] [--watch [--interval DUR]] [--json]\n"
            "       cordon pool ls [--json]\n"
            "       cordon pool drain [--json]\n"
            "LIMITS as for cordon run: --cpus N --memory SIZE --disk SIZE --pids N --runtime DUR\n"
            "--max-output SIZE. fill tops the pool of the runs that give the same provider, image,\n"
            "timeout and limits up to N (at most %d) provisioned executions, claimable for --ttl\n"
            "(default 10m, at most 24h); `cordon run` claims one, uses it once and destroys it.\n"
            "--for provision: executions for `cordon provision` with the same provider, image, LIMITS\n"
            "(all six required, as for provision) and --env; the provision claims one instead.\n"
            "--watch fills again every --interval (default 1s) until SIGINT or SIGTERM.\n"
            "ls lists the unclaimed ones by key; drain destroys them all.\n",
            CORDON_POOL_SIZE_MAX);
}

enum { O_JSON = 256, O_PROVIDER, O_IMAGE, O_SIZE, O_TTL, O_TIMEOUT, O_ISOLATION, O_UNSAFE, O_REQUEST,
       O_WATCH, O_INTERVAL, O_FOR, O_ENV };

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

/* With quiet (--watch), a fill that added nothing prints nothing. */
static void print_fill(bool json, bool quiet, const char *text)
{
    cJSON *doc = cJSON_Parse(text);
    const cJSON *id;

    if (quiet && cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "added")) == 0) {
        cJSON_Delete(doc);
        return;
    }
    if (json) {
        cJSON_Delete(doc);
        cli_print_json(text);
        return;
    }
    cJSON_ArrayForEach(id, cJSON_GetObjectItemCaseSensitive(doc, "added"))
        cli_line(stdout, "added %s", id->valuestring);
    cli_line(stdout, "pool %.12s: %d ready before, size %d",
             cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "key")),
             (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(doc, "ready_before")),
             (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(doc, "size")));
    fflush(stdout);
    cJSON_Delete(doc);
}

static void print_ls(bool json, const char *text)
{
    cJSON *doc;
    const cJSON *p;

    if (json) {
        cli_print_json(text);
        return;
    }
    doc = cJSON_Parse(text);
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(doc, "pools")) {
        const char *image = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "image"));
        cli_line(stdout, "%.12s %-14s %-9s ready %d expired %d %s",
                 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "key")),
                 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "provider_id")),
                 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "layout")) != NULL &&
                         strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "layout")), "host") == 0
                     ? "provision" : "run",
                 (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(p, "ready")),
                 (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(p, "expired")),
                 image != NULL ? image : "-");
    }
    fflush(stdout);
    cJSON_Delete(doc);
}

int cmd_pool(const struct cli_global *g, int argc, char **argv)
{
    static const struct option opts[] = {
        { "json", no_argument, NULL, O_JSON }, { "provider", required_argument, NULL, O_PROVIDER },
        { "image", required_argument, NULL, O_IMAGE }, { "size", required_argument, NULL, O_SIZE },
        { "ttl", required_argument, NULL, O_TTL }, { "timeout", required_argument, NULL, O_TIMEOUT },
        { "isolation", required_argument, NULL, O_ISOLATION },
        { "allow-unsafe-local", no_argument, NULL, O_UNSAFE },
        { "request", required_argument, NULL, O_REQUEST }, { "watch", no_argument, NULL, O_WATCH },
        { "interval", required_argument, NULL, O_INTERVAL }, CLI_REQUEST_LIMIT_OPTIONS,
        { "for", required_argument, NULL, O_FOR },
        { "env", required_argument, NULL, O_ENV }, { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    static const char *const plain[] = { "json", "help", NULL };
    struct cordon__pool_target target;
    struct cordon_ctx *ctx = NULL;
    struct cordon_error err;
    cJSON *req = cJSON_CreateObject(), *limits = NULL;
    const char *sub, *request_path = NULL;
    uint64_t size = 0, ttl = CORDON_POOL_TTL_DEFAULT_MS, interval = 1000, v;
    bool json = false, watch = false, have_size = false, for_provision = false;
    cJSON *env = NULL;
    char *text = NULL;
    int c, rc = 0, r;

    memset(&target, 0, sizeof(target));
    cordon_error_init(&err);
    for (int i = 1; i < argc; i++)
        json = json || strcmp(argv[i], "--json") == 0;
    if (argc < 2 || argv[1][0] == '-') {
        if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
            usage(stdout);
            goto out;
        }
        usage(stderr);
        rc = cli_usage_error("pool", json, "a subcommand is required: fill, ls or drain");
        goto out;
    }
    sub = argv[1];
    if (strcmp(sub, "fill") != 0 && strcmp(sub, "ls") != 0 && strcmp(sub, "drain") != 0) {
        usage(stderr);
        rc = cli_usage_error("pool", json, "unknown subcommand '%s' (fill, ls or drain)", sub);
        goto out;
    }
    argc--;
    argv++;
    while (rc == 0 && (c = cli_getopt(argc, argv, "h", opts, strcmp(sub, "fill") == 0 ? NULL : plain,
                                      "pool", json)) != -1) {
        switch (c) {
        case O_JSON: json = true; break;
        case O_PROVIDER: cJSON_AddStringToObject(req, "provider", optarg); break;
        case O_IMAGE: cJSON_AddStringToObject(req, "image", optarg); break;
        case O_ISOLATION: cJSON_AddStringToObject(req, "isolation", optarg); break;
        case O_UNSAFE: cJSON_AddBoolToObject(req, "allow_unsafe_local", true); break;
        case O_REQUEST: request_path = optarg; break;
        case O_WATCH: watch = true; break;
        case O_FOR:
            if (strcmp(optarg, "run") != 0 && strcmp(optarg, "provision") != 0)
                rc = cli_usage_error("pool", json, "--for: run or provision, not '%s'", optarg);
            for_provision = strcmp(optarg, "provision") == 0;
            break;
        case O_ENV:
            if (cli_request_env(&env, optarg, &err) < 0)
                rc = cli_fail("pool", json, err.code, err.message);
            break;
        case O_SIZE: {
            char *end = NULL;
            errno = 0;
            size = strtoull(optarg, &end, 10);
            if (optarg[0] == '-' || end == optarg || *end != '\0' || errno != 0)
                rc = cli_fail("pool", json, CORDON_E_INVALID, "--size: must be a whole number");
            have_size = true;
            break;
        }
        case O_TTL: case O_TIMEOUT: case O_INTERVAL:
            r = cordon__parse_duration_ms(c == O_TTL ? "--ttl" : c == O_TIMEOUT ? "--timeout" : "--interval",
                                          optarg, &v, &err);
            if (r < 0)
                rc = cli_fail("pool", json, err.code, err.message);
            else if (c == O_TTL)
                ttl = v;
            else if (c == O_INTERVAL)
                interval = v;
            else
                cJSON_AddNumberToObject(req, "timeout_ms", (double)v);
            break;
        case CLI_OPT_CPUS: case CLI_OPT_MEMORY: case CLI_OPT_DISK: case CLI_OPT_PIDS:
        case CLI_OPT_RUNTIME: case CLI_OPT_MAX_OUTPUT:
            if (cli_request_limit(&limits, c, optarg, &err) < 0)
                rc = cli_fail("pool", json, err.code, err.message);
            break;
        case 'h': usage(stdout); goto out;
        default: usage(stderr); rc = CLI_EXIT_USAGE; break;
        }
    }
    if (rc != 0)
        goto out;
    if (optind < argc) {
        rc = cli_usage_error("pool", json, "unexpected operand '%s'", argv[optind]);
        goto out;
    }
    if (strcmp(sub, "fill") == 0) {
        /* A run's limits are "limits" (with defaults); a provision's are
         * "resources" (all required). */
        if (limits != NULL) {
            cJSON_AddItemToObject(req, for_provision ? "resources" : "limits", limits);
            limits = NULL;
        }
        if (env != NULL && !for_provision) {
            rc = cli_usage_error("pool", json, "--env is for --for provision (a run's variables go to its "
                                               "commands, not its sandbox)");
            goto out;
        }
        if (env != NULL) {
            cJSON_AddItemToObject(req, "environment", env);
            env = NULL;
        }
        if (for_provision && cJSON_GetObjectItemCaseSensitive(req, "timeout_ms") != NULL) {
            rc = cli_usage_error("pool", json, "--timeout is for --for run (provision has --runtime)");
            goto out;
        }
        if (request_path != NULL && cli_request_merge_file(&req, request_path, &err) < 0) {
            rc = cli_fail("pool", json, err.code, err.message);
            goto out;
        }
        if (!have_size) {
            rc = cli_usage_error("pool", json, "--size is required (1..%d)", CORDON_POOL_SIZE_MAX);
            goto out;
        }
        if (watch && (interval < 100 || interval > 3600 * 1000)) {
            rc = cli_fail("pool", json, CORDON_E_LIMIT, "--interval: must be between 100ms and 1h");
            goto out;
        }
    } else if (watch) {
        rc = cli_usage_error("pool", json, "--watch is an option of pool fill");
        goto out;
    }
    /* fill: the size and ttl bounds before anything is opened or made. */
    if (strcmp(sub, "fill") == 0 && cordon__pool_check_bounds(size, ttl, &err) < 0) {
        rc = cli_fail("pool", json, err.code, err.message);
        goto out;
    }
    ctx = cli_ctx_open(g, json);
    if (ctx == NULL) {
        rc = CLI_EXIT_FAILURE;
        goto out;
    }
    if (strcmp(sub, "ls") == 0 || strcmp(sub, "drain") == 0) {
        r = strcmp(sub, "ls") == 0 ? cordon__pool_ls_json(ctx, &text, &err)
                                   : cordon__pool_drain_json(ctx, &text, &err);
        if (r < 0) {
            rc = cli_fail("pool", json, err.code, err.message);
            goto out;
        }
        if (strcmp(sub, "ls") == 0) {
            print_ls(json, text);
        } else if (json) {
            cli_print_json(text);
        } else {
            cJSON *doc = cJSON_Parse(text);
            const cJSON *id;
            cJSON_ArrayForEach(id, cJSON_GetObjectItemCaseSensitive(doc, "drained"))
                cli_line(stdout, "drained %s", id->valuestring);
            cJSON_Delete(doc);
        }
        rc = strstr(text, "\"ok\":false") != NULL ? CLI_EXIT_FAILURE : 0;
        goto out;
    }
    r = for_provision ? cordon__provision_pool_target(ctx, req, &target, &err)
                      : cordon__run_pool_target(ctx, req, &target, &err);
    if (r < 0) {
        rc = cli_fail("pool", json, err.code, err.message);
        goto out;
    }
    if (watch) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        /* A fill under way finishes (the provider's calls are restarted);
         * the loop ends after it. */
        sa.sa_flags = SA_RESTART;
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
    }
    do {
        r = cordon__pool_fill(ctx, &target, size, ttl, &text, &err);
        if (r < 0) {
            rc = cli_fail("pool", json, err.code, err.message);
            if (!watch)
                goto out;
            cordon_error_init(&err);
        } else {
            print_fill(json, watch, text);
        }
        free(text);
        text = NULL;
        if (watch && !stop) {
            struct timespec ts = { (time_t)(interval / 1000), (long)(interval % 1000) * 1000000L };
            nanosleep(&ts, NULL);   /* a signal ends it early */
        }
    } while (watch && !stop);
    rc = watch ? 0 : rc;
out:
    cordon__pool_target_clear(&target);
    free(text);
    cJSON_Delete(req);
    cJSON_Delete(limits);
    cJSON_Delete(env);
    cordon_ctx_free(ctx);
    return rc;
}
