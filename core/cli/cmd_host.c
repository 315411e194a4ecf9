/* cordon provision | exec | checkpoint | restore | terminate | reclaim | ls | gc:
 * the execution-host lifecycle on the command line. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"
#include "core/limits.h"
#include "core/cli/cli.h"
#include "core/cli/request.h"

/* Options every lifecycle verb shares. */
enum {
    O_JSON = 256, O_PROVIDER, O_IMAGE, O_WORKSPACE, O_ID, O_ENV, O_METADATA, O_UNSAFE, O_UNPINNED,
    O_PCONFIG, O_REQUEST, O_CWD, O_TIMEOUT, O_STDIN, O_ISOLATION, O_BEST_EFFORT,
};

static const struct option all_opts[] = {
    { "json", no_argument, NULL, O_JSON }, { "provider", required_argument, NULL, O_PROVIDER },
    { "image", required_argument, NULL, O_IMAGE }, { "workspace", required_argument, NULL, O_WORKSPACE },
    { "id", required_argument, NULL, O_ID }, { "env", required_argument, NULL, O_ENV },
    { "metadata", required_argument, NULL, O_METADATA },
    { "allow-unsafe-local", no_argument, NULL, O_UNSAFE },
    { "isolation", required_argument, NULL, O_ISOLATION },
    { "best-effort", required_argument, NULL, O_BEST_EFFORT },
    { "allow-unpinned", no_argument, NULL, O_UNPINNED },
    { "provider-config", required_argument, NULL, O_PCONFIG },
    { "request", required_argument, NULL, O_REQUEST }, { "cwd", required_argument, NULL, O_CWD },
    { "timeout", required_argument, NULL, O_TIMEOUT }, { "stdin", required_argument, NULL, O_STDIN },
    CLI_REQUEST_LIMIT_OPTIONS,
    { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
};

static const struct usage {
    const char *verb;
    const char *text;
} usages[] = {
    { "provision",
      "usage: cordon provision --provider P [--image REF] [--workspace empty|git:REPO@REV] [--id ID]\n"
      "                        --cpus N --memory SIZE --disk SIZE --pids N --runtime DUR --max-output SIZE\n"
      "                        [--env NAME=VALUE]... [--metadata JSON] [--isolation required|preferred|none]\n"
      "                        [--best-effort LIMIT[,LIMIT]...] [--allow-unsafe-local] [--allow-unpinned]\n"
      "                        [--provider-config JSON] [--json] [--request FILE|-]\n"
      "Create a long-lived execution. Every limit is required; the network is always none. The provider\n"
      "is probed and its isolation verified by the host first (--isolation, default required).\n"
      "--best-effort: limits (cpus, memory, disk, pids, runtime, max-output) isolation required may\n"
      "leave unenforced; the verdict lists them.\n" },
    { "exec",
      "usage: cordon exec ID [--cwd DIR] [--env NAME=VALUE]... [--timeout DUR] [--stdin FILE] [--json]\n"
      "                  -- ARGV...\n"
      "Run ARGV in the execution. Exit status: the command's own, 124 timeout/expired, 125 cordon\n"
      "failed, 137 killed (oom, output_limit, cancelled). Timeout, output overflow and cancellation\n"
      "(SIGINT/SIGTERM to cordon) end the command's process group; the execution stays ready.\n" },
    { "checkpoint", "usage: cordon checkpoint ID [--metadata JSON] [--json]\n"
                    "Save /workspace (files only: no processes, memory or sockets).\n" },
    { "restore", "usage: cordon restore CHECKPOINT_ID [--provider P] [--image REF] [--id ID]\n"
                 "                      [--isolation required|preferred|none] [--allow-unsafe-local]\n"
                 "                      [--provider-config JSON] [--json]\n"
                 "Provision a new execution holding the checkpoint's workspace (full validation again).\n" },
    { "terminate", "usage: cordon terminate ID [--json]\nDestroy the execution; already gone is success.\n" },
    { "reclaim", "usage: cordon reclaim ID [--provider P] [--json]\n"
                 "Destroy what any provider holds for ID, with or without its record.\n" },
    { "ls", "usage: cordon ls [--json]\nList executions: {\"executions\": [...]} with --json.\n" },
    { "gc", "usage: cordon gc [--json]\n"
            "Reclaim executions that expired or whose cordon died mid-call, and sandboxes of\n"
            "this host that no record names.\n" },
};

/* The options each verb takes (help is everyone's). */
static const char *const provision_opts[] = {
    "json", "provider", "image", "workspace", "id", "env", "metadata", "allow-unsafe-local",
    "isolation", "best-effort", "allow-unpinned", "provider-config", "request", "cpus", "memory", "disk",
    "pids", "runtime", "max-output", "help", NULL,
};
static const char *const exec_opts[] = { "json", "cwd", "env", "timeout", "stdin", "help", NULL };
static const char *const checkpoint_opts[] = { "json", "metadata", "help", NULL };
static const char *const restore_opts[] = { "json", "provider", "image", "id", "isolation",
                                            "allow-unsafe-local", "allow-unpinned",
                                            "provider-config", "request", "help", NULL };
static const char *const reclaim_opts[] = { "json", "provider", "help", NULL };
static const char *const plain_opts[] = { "json", "help", NULL };  /* terminate, ls, gc */

static const char *const *opts_of(const char *verb)
{
    return strcmp(verb, "provision") == 0    ? provision_opts
           : strcmp(verb, "exec") == 0       ? exec_opts
           : strcmp(verb, "checkpoint") == 0 ? checkpoint_opts
           : strcmp(verb, "restore") == 0    ? restore_opts
           : strcmp(verb, "reclaim") == 0    ? reclaim_opts
                                             : plain_opts;
}

static void usage_of(const char *verb, FILE *out)
{
    for (size_t i = 0; i < sizeof(usages) / sizeof(usages[0]); i++)
        if (strcmp(usages[i].verb, verb) == 0)
            fputs(usages[i].text, out);
}

struct args {
    bool json;
    const char *verb, *id, *request_path, *metadata, *provider, *stdin_path;
    cJSON *req;         /* the request being built */
    cJSON *resources;   /* its resources object, until added to req */
    cJSON *env;         /* its environment object, until added to req */
};

static int add_json(cJSON *req, const char *key, const char *text, bool json, const char *verb)
{
    cJSON *v = cJSON_Parse(text);
    char msg[80];

    if (!cJSON_IsObject(v)) {
        cJSON_Delete(v);
        snprintf(msg, sizeof(msg), "--%s: must be a JSON object", key);
        return cli_fail(verb, json, CORDON_E_INVALID, msg);
    }
    cJSON_AddItemToObject(req, key, v);
    return 0;
}

static int parse(int argc, char **argv, struct args *a)
{
    struct cordon_error err;
    uint64_t v;
    int c, rc = 0;

    a->verb = argv[0];
    a->req = cJSON_CreateObject();
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        a->json = a->json || strcmp(argv[i], "--json") == 0;
    cordon_error_init(&err);
    while (rc == 0 &&
           (c = cli_getopt(argc, argv, "h", all_opts, opts_of(a->verb), a->verb, a->json)) != -1) {
        switch (c) {
        case O_JSON: a->json = true; break;
        case O_PROVIDER: a->provider = optarg; cJSON_AddStringToObject(a->req, "provider", optarg); break;
        case O_IMAGE: cJSON_AddStringToObject(a->req, "image", optarg); break;
        case O_ID: cJSON_AddStringToObject(a->req, "execution_id", optarg); break;
        case O_UNSAFE: cJSON_AddBoolToObject(a->req, "allow_unsafe_local", true); break;
        case O_ISOLATION: cJSON_AddStringToObject(a->req, "isolation", optarg); break;
        case O_BEST_EFFORT:
            if (cli_request_best_effort(a->req, optarg, &err) < 0)
                rc = cli_fail(a->verb, a->json, err.code, err.message);
            break;
        case O_UNPINNED: cJSON_AddBoolToObject(a->req, "allow_unpinned", true); break;
        case O_REQUEST: a->request_path = optarg; break;
        case O_METADATA: a->metadata = optarg; rc = add_json(a->req, "metadata", optarg, a->json, a->verb); break;
        case O_PCONFIG: rc = add_json(a->req, "provider_config", optarg, a->json, a->verb); break;
        case O_ENV:
            if (cli_request_env(&a->env, optarg, &err) < 0)
                rc = cli_fail(a->verb, a->json, err.code, err.message);
            break;
        case O_CWD: cJSON_AddStringToObject(a->req, "cwd", optarg); break;
        case O_STDIN: a->stdin_path = optarg; break;
        case O_WORKSPACE: {
            cJSON *ws = cJSON_AddObjectToObject(a->req, "workspace");
            const char *at = strrchr(optarg, '@');
            if (strcmp(optarg, "empty") == 0) {
                cJSON_AddStringToObject(ws, "kind", "empty");
            } else if (strncmp(optarg, "git:", 4) == 0 && at != NULL && at > optarg + 4) {
                char repo[PATH_MAX];
                snprintf(repo, sizeof(repo), "%.*s", (int)(at - optarg - 4), optarg + 4);
                cJSON_AddStringToObject(ws, "kind", "git");
                cJSON_AddStringToObject(ws, "repository", repo);
                cJSON_AddStringToObject(ws, "revision", at + 1);
            } else {
                rc = cli_fail(a->verb, a->json, CORDON_E_INVALID, "--workspace: empty or git:REPO@REV");
            }
            break;
        }
        case O_TIMEOUT:
            if (cordon__parse_duration_ms("--timeout", optarg, &v, &err) < 0)
                rc = cli_fail(a->verb, a->json, err.code, err.message);
            else
                cJSON_AddNumberToObject(a->req, "timeout_ms", (double)v);
            break;
        case CLI_OPT_CPUS: case CLI_OPT_MEMORY: case CLI_OPT_DISK: case CLI_OPT_PIDS:
        case CLI_OPT_RUNTIME: case CLI_OPT_MAX_OUTPUT:
            if (cli_request_limit(&a->resources, c, optarg, &err) < 0)
                rc = cli_fail(a->verb, a->json, err.code, err.message);
            break;
        case 'h': usage_of(a->verb, stdout); return -1;
        default: usage_of(a->verb, stderr); return CLI_EXIT_USAGE;
        }
    }
    if (rc != 0)
        return rc;
    if (a->resources != NULL) {
        cJSON_AddItemToObject(a->req, "resources", a->resources);
        a->resources = NULL;
    }
    if (a->env != NULL) {
        cJSON_AddItemToObject(a->req, "environment", a->env);
        a->env = NULL;
    }
    if (a->request_path != NULL && cli_request_merge_file(&a->req, a->request_path, &err) < 0)
        return cli_fail(a->verb, a->json, err.code, err.message);
    return 0;
}

/* Decode base64 s and pass the bytes on as program output. */
static void write_base64(FILE *out, const char *s)
{
    size_t len = 0;
    char *bytes = malloc(strlen(s) / 4 * 3 + 3);
    uint32_t acc = 0;
    int bits = 0;

    if (bytes == NULL)
        return;
    for (; *s != '\0' && *s != '='; s++) {
        const char *t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const char *p = strchr(t, *s);
        if (p == NULL)
            continue;
        acc = (acc << 6) | (uint32_t)(p - t);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            bytes[len++] = (char)((acc >> bits) & 0xff);
        }
    }
    cli_program_output(out, bytes, len);
    free(bytes);
}

/* Print a result: JSON as is, or a short human form. */
/* streamed: exec's output was passed on as it came, only the status is left. */
static void print_result(const struct args *a, const char *text, bool streamed)
{
    cJSON *doc;
    const cJSON *v;

    if (a->json) {
        cli_print_json(text);
        return;
    }
    doc = cJSON_Parse(text);
    if (strcmp(a->verb, "exec") == 0) {
        const cJSON *b64;
        for (int i = 0; i < 2 && !streamed; i++) {
            const char *name = i == 0 ? "stdout" : "stderr";
            char field[32];
            snprintf(field, sizeof(field), "%s_base64", name);
            b64 = cJSON_GetObjectItemCaseSensitive(doc, field);
            v = cJSON_GetObjectItemCaseSensitive(doc, name);
            /* bytes that are not UTF-8 come back exactly, from base64 */
            if (cJSON_IsString(b64))
                write_base64(i == 0 ? stdout : stderr, b64->valuestring);
            else if (cJSON_IsString(v))
                cli_program_output(i == 0 ? stdout : stderr, v->valuestring, strlen(v->valuestring));
        }
        v = cJSON_GetObjectItemCaseSensitive(doc, "status");
        if (cJSON_IsString(v) && strcmp(v->valuestring, "exited") != 0)
            cli_say("exec ended: %s%s", v->valuestring,
                    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "execution_terminated"))
                        ? " (the execution was destroyed)" : "");
    } else if (strcmp(a->verb, "ls") == 0) {
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "executions")) {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "execution_id");
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(e, "provider_id");
            const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "phase");
            cli_line(stdout, "%-40s %-14s %-14s%s%s", cJSON_IsString(id) ? id->valuestring : "?",
                   cJSON_IsString(p) ? p->valuestring : "?", cJSON_IsString(ph) ? ph->valuestring : "?",
                   cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(e, "pool")) ? " pool" : "",
                   cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "expired")) ? " expired" : "");
        }
    } else if ((v = cJSON_GetObjectItemCaseSensitive(doc, "checkpoint_id")) != NULL &&
               strcmp(a->verb, "checkpoint") == 0) {
        printf("%s\n", v->valuestring);
    } else if ((v = cJSON_GetObjectItemCaseSensitive(doc, "execution_id")) != NULL &&
               (strcmp(a->verb, "provision") == 0 || strcmp(a->verb, "restore") == 0)) {
        printf("%s\n", v->valuestring);
    } else if (strcmp(a->verb, "gc") == 0) {
        const cJSON *r;
        cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "reclaimed"))
            cli_line(stdout, "reclaimed %s", r->valuestring);
        cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "partial_checkpoints_removed"))
            cli_line(stdout, "removed partial checkpoint %s", r->valuestring);
    }
    fflush(stdout);
    cJSON_Delete(doc);
}

int cmd_host(const struct cli_global *g, int argc, char **argv)
{
    struct args a;
    struct cordon_ctx *ctx = NULL;
    struct cordon_error err;
    char *req_text = NULL, *text = NULL;
    struct cli_stream *stream = NULL;
    bool streamed = false;
    int rc, r = 0, stdin_fd = -1;
    bool wants_id;

    memset(&a, 0, sizeof(a));
    rc = parse(argc, argv, &a);
    if (rc != 0) {
        cJSON_Delete(a.req);
        cJSON_Delete(a.resources);
        cJSON_Delete(a.env);
        return rc < 0 ? 0 : rc;
    }
    wants_id = strcmp(a.verb, "ls") != 0 && strcmp(a.verb, "gc") != 0 && strcmp(a.verb, "provision") != 0;
    if (wants_id) {
        if (optind >= argc) {
            usage_of(a.verb, stderr);
            rc = cli_usage_error(a.verb, a.json, "an id is required");
            goto out;
        }
        a.id = argv[optind++];
    }
    if (strcmp(a.verb, "exec") == 0) {
        cJSON *args;
        /* getopt moved the operands after the options and dropped "--":
         * what follows the id is the command line, in order. */
        if (optind >= argc) {
            rc = cli_usage_error(a.verb, a.json, "a command is required after --");
            goto out;
        }
        cJSON_AddStringToObject(a.req, "command", argv[optind++]);
        args = cJSON_AddArrayToObject(a.req, "args");
        while (optind < argc)
            cJSON_AddItemToArray(args, cJSON_CreateString(argv[optind++]));
        if (a.stdin_path != NULL) {
            stdin_fd = strcmp(a.stdin_path, "-") == 0 ? 0 : open(a.stdin_path, O_RDONLY | O_CLOEXEC);
            if (stdin_fd < 0) {
                rc = cli_fail(a.verb, a.json, CORDON_E_NOT_FOUND, "--stdin: cannot open the file");
                goto out;
            }
        }
    } else if (optind < argc) {
        rc = cli_usage_error(a.verb, a.json, "unexpected operand '%s'", argv[optind]);
        goto out;
    }
    ctx = cli_ctx_open(g, a.json);
    if (ctx == NULL) {
        rc = CLI_EXIT_FAILURE;
        goto out;
    }
    cordon_error_init(&err);
    if (strcmp(a.verb, "provision") == 0 || strcmp(a.verb, "restore") == 0 || strcmp(a.verb, "exec") == 0) {
        if (strcmp(a.verb, "restore") == 0) {
            /* restore takes its own keys: provider, image, id, consent, config */
            cJSON_DeleteItemFromObjectCaseSensitive(a.req, "resources");
        }
        req_text = cJSON_PrintUnformatted(a.req);
    }
    if (strcmp(a.verb, "provision") == 0) {
        r = cordon_provision_json(ctx, req_text, &text, &err);
    } else if (strcmp(a.verb, "exec") == 0) {
        /* A signal to cordon during exec cancels it. Without --json the
         * output is passed on as it comes, streams apart, as docker exec does. */
        int cancel_fd = cli_cancel_fd(), out_fd = -1, err_fd = -1;
        if (!a.json && cli_stream_start(&stream, &out_fd, &err_fd) < 0) {
            rc = cli_fail(a.verb, a.json, CORDON_E_IO, "cannot set up the output's pipes");
            goto out;
        }
        streamed = stream != NULL;
        if (streamed)
            r = cordon_exec_stream_json(ctx, a.id, req_text, stdin_fd, out_fd, err_fd, cancel_fd, &text, &err);
        else
            r = cordon_exec_json(ctx, a.id, req_text, stdin_fd, cancel_fd, &text, &err);
        cli_stream_end(stream);   /* the rest of the output before cordon's own lines */
        stream = NULL;
    } else if (strcmp(a.verb, "checkpoint") == 0) {
        r = cordon_checkpoint_json(ctx, a.id, a.metadata, &text, &err);
    } else if (strcmp(a.verb, "restore") == 0) {
        r = cordon_restore_json(ctx, a.id, req_text, &text, &err);
    } else if (strcmp(a.verb, "terminate") == 0) {
        r = cordon_terminate_json(ctx, a.id, &text, &err);
    } else if (strcmp(a.verb, "reclaim") == 0) {
        r = cordon_reclaim_json(ctx, a.id, a.provider, &text, &err);
    } else if (strcmp(a.verb, "ls") == 0) {
        r = cordon_ls_json(ctx, &text, &err);
    } else {
        r = cordon_gc_json(ctx, &text, &err);
    }
    if (r < 0) {
        rc = cli_fail(a.verb, a.json, err.code, err.message);
        goto out;
    }
    print_result(&a, text, streamed);
    rc = strcmp(a.verb, "exec") == 0 ? cordon_exec_exit_status(text)
         : strstr(text, "\"ok\":false") != NULL ? CLI_EXIT_FAILURE   /* gc with errors */
                                                 : 0;
out:
    if (stdin_fd > 0)
        close(stdin_fd);
    free(text);
    free(req_text);
    cJSON_Delete(a.req);
    cordon_ctx_free(ctx);
    return rc;
}
