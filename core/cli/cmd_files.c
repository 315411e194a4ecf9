/* cordon files put | get | ls | rm: files in an execution's workspace on
 * the command line (json.md §13). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/cli/cli.h"

enum { O_JSON = 256, O_FROM, O_TO, O_MODE };

static const struct option files_opts[] = {
    { "json", no_argument, NULL, O_JSON }, { "from", required_argument, NULL, O_FROM },
    { "to", required_argument, NULL, O_TO }, { "mode", required_argument, NULL, O_MODE },
    { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
};

static const char usage_text[] =
    "usage: cordon files put ID PATH [--from FILE] [--mode OCTAL] [--json]\n"
    "       cordon files get ID PATH [--to FILE] [--json]\n"
    "       cordon files ls ID [PATH] [--json]\n"
    "       cordon files rm ID PATH [--json]\n"
    "Write (from stdin or FILE), read (to stdout or FILE), list or remove PATH in the execution's\n"
    "/workspace. Files stream: max_output_bytes does not apply; the execution's disk_bytes bounds\n"
    "them. A symbolic link in the sandbox is never followed.\n";

static const char *const put_opts[] = { "json", "from", "mode", "help", NULL };
static const char *const get_opts[] = { "json", "to", "help", NULL };
static const char *const plain_opts[] = { "json", "help", NULL };

struct files_args {
    const char *sub;
    const char *verb;      /* "files put", ... for messages */
    const char *id, *path, *from, *to;
    unsigned mode;
    bool json;
};

/* get --to FILE: the bytes go to a temporary file beside FILE, renamed
 * over it only once the whole file arrived; a failure leaves nothing. */
static int get_to_file(struct cordon_ctx *ctx, const struct files_args *a, char **ret_text,
                       struct cordon_error *err)
{
    char *dup = strdup(a->to), *tmp = NULL;
    int fd = -1, r;

    if (dup == NULL || asprintf(&tmp, "%s/.cordon-get-XXXXXX", dirname(dup)) < 0) {
        tmp = NULL;
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "out of memory");
        goto out;
    }
    fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "--to: cannot create a file beside %s: %s", a->to,
                             strerror(errno));
        goto out;
    }
    /* no fsync: a copy like cp(1)'s; the rename is what keeps a half file out */
    r = cordon_files_read_json(ctx, a->id, a->path, fd, ret_text, err);
    if (r == 0 && fchmod(fd, 0644 & ~umask(umask(0))) < 0)
        r = cordon_error_set(err, CORDON_E_IO, errno, "--to: chmod: %s", strerror(errno));
    if (r == 0 && rename(tmp, a->to) < 0)
        r = cordon_error_set(err, CORDON_E_IO, errno, "--to: rename to %s: %s", a->to, strerror(errno));
    if (r < 0) {
        unlink(tmp);
        if (*ret_text != NULL) {
            free(*ret_text);
            *ret_text = NULL;
        }
    }
out:
    if (fd >= 0)
        close(fd);
    free(tmp);
    free(dup);
    return r;
}

static void print_listing(const char *text)
{
    cJSON *doc = cJSON_Parse(text);
    const cJSON *e;

    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "entries")) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(e, "type");
        const cJSON *size = cJSON_GetObjectItemCaseSensitive(e, "size");
        const cJSON *target = cJSON_GetObjectItemCaseSensitive(e, "target");
        cli_line(stdout, "%-9s %12.0f %s%s%s", cJSON_IsString(type) ? type->valuestring : "?",
                 cJSON_IsNumber(size) ? size->valuedouble : 0, cJSON_IsString(name) ? name->valuestring : "?",
                 cJSON_IsString(target) ? " -> " : "", cJSON_IsString(target) ? target->valuestring : "");
    }
    fflush(stdout);
    cJSON_Delete(doc);
}

static int parse(int argc, char **argv, struct files_args *a)
{
    const char *const *allowed;
    char *end;
    int c;

    for (int i = 1; i < argc; i++)
        a->json = a->json || strcmp(argv[i], "--json") == 0;
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(usage_text, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : -1;
    }
    a->sub = argv[1];
    if (strcmp(a->sub, "put") == 0)
        a->verb = "files put", allowed = put_opts;
    else if (strcmp(a->sub, "get") == 0)
        a->verb = "files get", allowed = get_opts;
    else if (strcmp(a->sub, "ls") == 0)
        a->verb = "files ls", allowed = plain_opts;
    else if (strcmp(a->sub, "rm") == 0)
        a->verb = "files rm", allowed = plain_opts;
    else
        return cli_usage_error("files", a->json, "unknown subcommand '%s' (put, get, ls or rm)", a->sub);
    a->mode = 0644;
    /* the subcommand is argv[0] of its own options */
    argc--;
    argv++;
    optind = 0;
    while ((c = cli_getopt(argc, argv, "h", files_opts, allowed, a->verb, a->json)) != -1) {
        switch (c) {
        case O_JSON: a->json = true; break;
        case O_FROM: a->from = optarg; break;
        case O_TO: a->to = optarg; break;
        case O_MODE:
            errno = 0;
            a->mode = (unsigned)strtoul(optarg, &end, 8);
            if (errno != 0 || end == optarg || *end != '\0' || a->mode > 0777)
                return cli_usage_error(a->verb, a->json, "--mode: \"%s\" is not an octal mode of at most 0777",
                                       optarg);
            break;
        case 'h': fputs(usage_text, stdout); return -1;
        default: return CLI_EXIT_USAGE;
        }
    }
    if (optind < argc)
        a->id = argv[optind++];
    if (optind < argc)
        a->path = argv[optind++];
    if (a->id == NULL)
        return cli_usage_error(a->verb, a->json, "an execution id is required");
    if (a->path == NULL && strcmp(a->sub, "ls") != 0)
        return cli_usage_error(a->verb, a->json, "a path is required");
    if (optind < argc)
        return cli_usage_error(a->verb, a->json, "unexpected operand '%s'", argv[optind]);
    if (strcmp(a->sub, "get") == 0 && a->json && a->to == NULL)
        return cli_usage_error(a->verb, a->json, "--json needs --to FILE (stdout carries the file)");
    return 0;
}

int cmd_files(const struct cli_global *g, int argc, char **argv)
{
    struct files_args a;
    struct cordon_ctx *ctx;
    struct cordon_error err;
    char *text = NULL;
    int rc, r, fd = -1;

    memset(&a, 0, sizeof(a));
    rc = parse(argc, argv, &a);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    if (a.from != NULL && (fd = open(a.from, O_RDONLY | O_CLOEXEC)) < 0)
        return cli_fail(a.verb, a.json, CORDON_E_NOT_FOUND, "--from: cannot open the file");
    ctx = cli_ctx_open(g, a.json);
    if (ctx == NULL) {
        if (fd >= 0)
            close(fd);
        return CLI_EXIT_FAILURE;
    }
    cordon_error_init(&err);
    if (strcmp(a.sub, "put") == 0)
        r = cordon_files_write_json(ctx, a.id, a.path, a.mode, fd >= 0 ? fd : STDIN_FILENO, &text, &err);
    else if (strcmp(a.sub, "get") == 0 && a.to != NULL)
        r = get_to_file(ctx, &a, &text, &err);
    else if (strcmp(a.sub, "get") == 0)
        r = cordon_files_read_json(ctx, a.id, a.path, STDOUT_FILENO, &text, &err);
    else if (strcmp(a.sub, "ls") == 0)
        r = cordon_files_list_json(ctx, a.id, a.path, &text, &err);
    else
        r = cordon_files_remove_json(ctx, a.id, a.path, &text, &err);
    if (r < 0) {
        /* get to stdout: what was written stays, cut off; the status says so */
        rc = cli_fail(a.verb, a.json, err.code, err.message);
    } else if (a.json) {
        cli_print_json(text);
    } else if (strcmp(a.sub, "ls") == 0) {
        print_listing(text);
    }
    free(text);
    if (fd >= 0)
        close(fd);
    cordon_ctx_free(ctx);
    return rc;
}
