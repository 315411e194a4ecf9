/* cordon run: one code execution, from a bundle path or a JSON request. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cordon/sdk/json.h>

#include "core/bundle.h"
#include "core/limits.h"
#include "core/run.h"
#include "core/cli/cli.h"
#include "core/cli/request.h"

#define MAX_REPEAT 256

static void usage(FILE *out)
{
    fprintf(out,
            "usage: cordon run [--language L] [--provider P]... [--isolation required|preferred|none]\n"
            "                  [--best-effort LIMIT[,LIMIT]...] [--allow-unsafe-local] [--image REF]\n"
            "                  [--output PATH]... [--input PATH]...\n"
            "                  [--workspace DIR] [--env NAME=VALUE]... [--timeout DUR] [LIMITS]\n"
            "                  [--fresh] [--json] [--quiet]\n"
            "                  [--request FILE|-] [BUNDLE] [-- ARG...]\n"
            "LIMITS: --cpus N --memory SIZE --disk SIZE --pids N --runtime DUR --max-output SIZE\n"
            "        --retention SIZE (kept per stream, head and tail)\n"
            "BUNDLE is a source file or a directory (entrypoint main.py, main.js, index.js, main.go,\n"
            "main.cpp). Defaults: isolation required, timeout 30s, cpus 1, memory 512M, disk 256M,\n"
            "pids 256, runtime timeout+10s, max-output 8M, retention 64K. Declared outputs are\n"
            "copied to WORKSPACE/output/ (WORKSPACE defaults to the current directory when --output\n"
            "is given). SIZE: bytes or K/M/G; DUR: 250ms, 10s, 5m, 1h.\n"
            "Exit status: the program's own; 124 timeout; 125 cordon failed or no provider;\n"
            "126 cannot invoke; 127 not found; 137 killed (oom, output_limit, cancelled).\n"
            "--best-effort: limits (cpus, memory, disk, pids, runtime, max-output) isolation required may\n"
            "leave unenforced; the verdict lists them. SIGINT/SIGTERM cancel the run.\n");
}

static int duration_arg(const char *name, const char *text, cJSON *obj, const char *key, bool json)
{
    struct cordon_error err;
    uint64_t v;

    cordon_error_init(&err);
    if (cordon__parse_duration_ms(name, text, &v, &err) < 0)
        return cli_fail("run", json, err.code, err.message);
    cJSON_AddNumberToObject(obj, key, (double)v);
    return 0;
}

static int size_arg(const char *name, const char *text, cJSON *obj, const char *key, bool json)
{
    struct cordon_error err;
    uint64_t v;

    cordon_error_init(&err);
    if (cordon__parse_size(name, text, &v, &err) < 0)
        return cli_fail("run", json, err.code, err.message);
    cJSON_AddNumberToObject(obj, key, (double)v);
    return 0;
}

/* Print what people want to see: the program's output on our stdout and
 * stderr, then one line on which provider ran it and why (marked on a
 * terminal: core/cli/term.c). */
static void print_human(const cJSON *result, bool quiet)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(result, "meta");
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(result, "status");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(result, "exit_code");
    const cJSON *facts = cJSON_GetObjectItemCaseSensitive(meta, "provider_facts");
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(meta, "duration_ms");
    const cJSON *item;
    const char *streams[2] = { "stdout", "stderr" };
    char exit_part[32];

    for (int i = 0; i < 2; i++) {
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(result, streams[i]);
        if (cJSON_IsString(text))
            cli_program_output(i == 0 ? stdout : stderr, text->valuestring, strlen(text->valuestring));
    }
    if (quiet && strcmp(status->valuestring, "success") == 0)
        return;
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(result, "diagnostics")) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(item, "code");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(item, "message");
        cli_say("%s: %s", c->valuestring, m->valuestring);
    }
    if (quiet)
        return;
    exit_part[0] = '\0';
    if (cJSON_IsNumber(code))
        snprintf(exit_part, sizeof(exit_part), " (exit %d)", code->valueint);
    if (cli_str(meta, "provider_id", NULL) != NULL) {
        cli_say("%s%s under %s [%s] in %.0f ms", status->valuestring, exit_part,
                cli_str(meta, "provider_id", NULL), cli_str(facts, "safety_class", "?"),
                cJSON_IsNumber(ms) ? ms->valuedouble : 0.0);
        cli_say("chosen because %s", cli_str(meta, "selection_reason", "?"));
    } else {
        cli_say("%s%s", status->valuestring, exit_part);
    }
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(meta, "probes")) {
        const cJSON *skip = cJSON_GetObjectItemCaseSensitive(item, "skip");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(item, "provider_id");
        if (!cJSON_IsObject(skip))
            continue;
        cli_say("  skipped %s: %s (%s)", id->valuestring,
                cJSON_GetObjectItemCaseSensitive(skip, "reason")->valuestring,
                cJSON_GetObjectItemCaseSensitive(skip, "detail")->valuestring);
    }
}

int cmd_run(const struct cli_global *g, int argc, char **argv)
{
    enum { O_JSON = 256, O_LANG, O_PROVIDER, O_ISOLATION, O_UNSAFE, O_IMAGE, O_OUTPUT, O_INPUT,
           O_WORKSPACE, O_TIMEOUT, O_RETENTION, O_REQUEST, O_FRESH, O_QUIET, O_ENV, O_BEST_EFFORT };
    static const struct option opts[] = {
        { "json", no_argument, NULL, O_JSON }, { "language", required_argument, NULL, O_LANG },
        { "provider", required_argument, NULL, O_PROVIDER },
        { "isolation", required_argument, NULL, O_ISOLATION },
        { "best-effort", required_argument, NULL, O_BEST_EFFORT },
        { "allow-unsafe-local", no_argument, NULL, O_UNSAFE },
        { "image", required_argument, NULL, O_IMAGE }, { "output", required_argument, NULL, O_OUTPUT },
        { "input", required_argument, NULL, O_INPUT },
        { "workspace", required_argument, NULL, O_WORKSPACE },
        { "timeout", required_argument, NULL, O_TIMEOUT }, CLI_REQUEST_LIMIT_OPTIONS,
        { "retention", required_argument, NULL, O_RETENTION },
        { "request", required_argument, NULL, O_REQUEST }, { "fresh", no_argument, NULL, O_FRESH },
        { "quiet", no_argument, NULL, O_QUIET }, { "env", required_argument, NULL, O_ENV },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *language = NULL, *request_path = NULL, *outputs[MAX_REPEAT];
    cJSON *request = cJSON_CreateObject(), *limits = NULL, *env = NULL, *providers = NULL,
          *inputs = NULL, *result = NULL;
    struct cordon__bundle *bundle = NULL;
    struct cli_global mine = *g;
    struct cordon_ctx *ctx = NULL;
    struct cordon_error err;
    size_t n_outputs = 0;
    bool json = false, quiet = false, workspace_given = false;
    char *text = NULL, cwd[PATH_MAX];
    int c, rc = 0;

    /* --json first, so that early errors already come out as JSON. */
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        json = json || strcmp(argv[i], "--json") == 0;
    cordon_error_init(&err);
    while (rc == 0 && (c = cli_getopt(argc, argv, "hq", opts, NULL, "run", json)) != -1) {
        switch (c) {
        case O_JSON: json = true; break;
        case O_QUIET: case 'q': quiet = true; break;
        case O_FRESH: mine.fresh = true; break;
        case O_LANG: language = optarg; break;
        case O_REQUEST: request_path = optarg; break;
        case O_UNSAFE: cJSON_AddBoolToObject(request, "allow_unsafe_local", true); break;
        case O_ISOLATION: cJSON_AddStringToObject(request, "isolation", optarg); break;
        case O_BEST_EFFORT:
            if (cli_request_best_effort(request, optarg, &err) < 0)
                rc = cli_fail("run", json, err.code, err.message);
            break;
        case O_IMAGE: cJSON_AddStringToObject(request, "image", optarg); break;
        case O_ENV:
            if (cli_request_env(&env, optarg, &err) < 0)
                rc = cli_fail("run", json, err.code, err.message);
            break;
        case O_WORKSPACE: {
            char real[PATH_MAX];
            if (realpath(optarg, real) == NULL) {
                rc = cli_fail("run", json, CORDON_E_NOT_FOUND, "--workspace: no such directory");
                break;
            }
            cJSON_AddStringToObject(request, "workspace", real);
            workspace_given = true;
            break;
        }
        case O_PROVIDER:
            if (providers == NULL)
                providers = cJSON_AddArrayToObject(request, "providers");
            cJSON_AddItemToArray(providers, cJSON_CreateString(optarg));
            break;
        case O_INPUT: {
            char real[PATH_MAX];
            if (inputs == NULL)
                inputs = cJSON_AddArrayToObject(request, "inputs");
            /* absolute, but the last component is not resolved: a symlink stays one and is refused */
            if (optarg[0] == '/' || getcwd(real, sizeof(real)) == NULL)
                snprintf(real, sizeof(real), "%s", optarg);
            else
                snprintf(real + strlen(real), sizeof(real) - strlen(real), "/%s", optarg);
            cJSON_AddItemToArray(inputs, cJSON_CreateString(real));
            break;
        }
        case O_OUTPUT:
            if (n_outputs == MAX_REPEAT) {
                rc = cli_fail("run", json, CORDON_E_LIMIT, "--output: more than 256 given");
                break;
            }
            outputs[n_outputs++] = optarg;
            break;
        case O_TIMEOUT: rc = duration_arg("--timeout", optarg, request, "timeout_ms", json); break;
        case O_RETENTION:
            if (limits == NULL)
                limits = cJSON_CreateObject();
            rc = size_arg("--retention", optarg, limits, "retention_bytes", json);
            break;
        case CLI_OPT_CPUS: case CLI_OPT_MEMORY: case CLI_OPT_DISK: case CLI_OPT_PIDS:
        case CLI_OPT_RUNTIME: case CLI_OPT_MAX_OUTPUT:
            if (cli_request_limit(&limits, c, optarg, &err) < 0)
                rc = cli_fail("run", json, err.code, err.message);
            break;
        case 'h': usage(stdout); goto out;
        default: usage(stderr); rc = CLI_EXIT_USAGE; break;
        }
    }
    if (rc != 0)
        goto out;
    if (limits != NULL) {
        cJSON_AddItemToObject(request, "limits", limits);
        limits = NULL;
    }
    if (env != NULL) {
        cJSON_AddItemToObject(request, "environment", env);
        env = NULL;
    }
    if (n_outputs > 0 && !workspace_given && getcwd(cwd, sizeof(cwd)) != NULL)
        cJSON_AddStringToObject(request, "workspace", cwd);

    if (request_path != NULL) {
        /* A JSON request: its keys first, the command line's over them. */
        if (cli_request_merge_file(&request, request_path, &err) < 0) {
            rc = cli_fail("run", json, err.code, err.message);
            goto out;
        }
    }
    if (request_path != NULL && optind < argc) {
        rc = cli_fail("run", json, CORDON_E_INVALID,
                      "with --request, give the bundle and its args in the request, not as operands");
        goto out;
    }
    if (optind < argc) {
        /* BUNDLE, then the program's args (getopt moved them after the options). */
        const char *path = argv[optind++];
        const char *const *args = NULL;
        size_t n_args = 0;

        args = (const char *const *)argv + optind;
        n_args = (size_t)(argc - optind);
        if (cordon__bundle_from_path(path, language, args, n_args, outputs, n_outputs, &bundle, &err) < 0) {
            /* A refused bundle is a blocked run: the same document as any refusal. */
            cJSON *r = cJSON_CreateObject(), *d = cJSON_CreateObject();
            cJSON_AddBoolToObject(r, "ok", false);
            cJSON_AddStringToObject(r, "status", "blocked");
            cJSON_AddStringToObject(d, "code", cordon_error_name(err.code));
            cordon_json_add_text(d, "message", err.message);
            cJSON_AddItemToObject(r, "error", cJSON_Duplicate(d, 1));
            cJSON_AddItemToArray(cJSON_AddArrayToObject(r, "diagnostics"), d);
            result = r;
            goto print;
        }
    } else if (request_path == NULL) {
        rc = cli_fail("run", json, CORDON_E_INVALID, "a BUNDLE path or --request is required");
        goto out;
    }
    ctx = cli_ctx_open(&mine, json);
    if (ctx == NULL) {
        rc = CLI_EXIT_FAILURE;
        goto out;
    }
    /* A signal to cordon during the run cancels it: what it made is torn down. */
    if (cordon__run(ctx, request, bundle, cli_cancel_fd(), &result, &err) < 0) {
        rc = cli_fail("run", json, err.code, err.message);
        goto out;
    }
print:
    text = json ? cJSON_PrintUnformatted(result) : NULL;
    if (json && text == NULL) {
        rc = cli_fail("run", json, CORDON_E_NOMEM, "out of memory");
        goto out;
    }
    if (json)
        cli_print_json(text);
    else
        print_human(result, quiet);
    rc = cordon__run_exit_status(result);
out:
    free(text);
    cJSON_Delete(result);
    cJSON_Delete(request);
    cJSON_Delete(limits);
    cJSON_Delete(env);
    cordon__bundle_free(bundle);
    cordon_ctx_free(ctx);
    return rc;
}
