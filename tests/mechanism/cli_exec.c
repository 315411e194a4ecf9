/* See cli_exec.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/runner.h>

#include "tests/common/proc.h"
#include "tests/common/wait.h"
#include "tests/mechanism/cli_exec.h"

#define CLI_TIMEOUT_MS 300000u
#define ARGS_MAX 48
#define LIVE_MAX 8

/* Executions provisioned and not yet terminated, for cli_exec_cleanup. */
static char *live[LIVE_MAX];

struct cli_cmd {
    const char *argv[ARGS_MAX], *envp[7];
    char docker_env[PATH_MAX + 32];
};

/* cordon's argv (under wrapper, a NULL-ended argv such as timeout(1), or
 * alone) and the environment it runs with. */
static void cli_cmd_build(const struct cli_exec *c, const char *const *wrapper, const char *const *args,
                          struct cli_cmd *cmd)
{
    const char *docker_host = getenv("DOCKER_HOST");
    size_t n = 0, k = 0;

    for (size_t i = 0; wrapper != NULL && wrapper[i] != NULL; i++)
        cmd->argv[n++] = wrapper[i];
    cmd->argv[n++] = c->bin;
    cmd->argv[n++] = "--config";
    cmd->argv[n++] = c->config;
    cmd->argv[n++] = "--state-dir";
    cmd->argv[n++] = c->state_dir;
    for (size_t i = 0; args[i] != NULL; i++) {
        cr_assert_lt(n, ARGS_MAX - 1);
        cmd->argv[n++] = args[i];
    }
    cmd->argv[n] = NULL;
    for (size_t i = 0; i < 4; i++)
        if (c->env[i][0] != '\0')
            cmd->envp[k++] = c->env[i];
    /* The Docker daemon the suite reaches (scripts/test-all.sh's own), not
     * the default socket: the command has this environment alone. */
    if (docker_host != NULL) {
        snprintf(cmd->docker_env, sizeof(cmd->docker_env), "DOCKER_HOST=%s", docker_host);
        cmd->envp[k++] = cmd->docker_env;
    }
    cmd->envp[k++] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
    cmd->envp[k] = NULL;
}

/* The command under wrapper (NULL-ended argv, e.g. timeout(1)), or alone. */
static int run_under(const struct cli_exec *c, const char *const *wrapper, const char *const *args,
                     int stdin_fd, char **ret_out)
{
    struct cli_cmd cmd;
    struct cordon_runner_opts opts;
    struct cordon_exec_outcome o = { 0 };
    struct cordon_error e;
    int code;

    cli_cmd_build(c, wrapper, args, &cmd);
    cordon_runner_opts_init(&opts);
    opts.argv = cmd.argv;
    opts.envp = cmd.envp;
    opts.stdin_fd = stdin_fd;
    opts.retention_bytes = 8u << 20;
    opts.timeout_ms = CLI_TIMEOUT_MS;
    cordon_error_init(&e);
    cr_assert_eq(cordon_runner_run(&opts, &o, &e), 0, "%s: %s", cmd.argv[0], e.message);
    code = o.status == CORDON_RUN_EXITED ? o.exit_code : -1;
    if (ret_out != NULL) {
        *ret_out = strndup(o.out.data != NULL ? o.out.data : "", o.out.len);
        cr_assert_not_null(*ret_out);
    }
    cordon_exec_outcome_clear(&o);
    return code;
}

int cli_exec_run(const struct cli_exec *c, const char *const *args, int stdin_fd, char **ret_out)
{
    return run_under(c, NULL, args, stdin_fd, ret_out);
}

char *cli_exec_provision(const struct cli_exec *c, const char *provider)
{
    const char *args[ARGS_MAX] = { "provision", "--provider", provider, "--cpus", "1",
                                   "--memory", "256M", "--disk", "64M", "--pids", "128",
                                   "--runtime", c->runtime != NULL ? c->runtime : "120s",
                                   "--max-output", "1M", "--json" };
    size_t n = 16;
    char *out = NULL, *id;
    cJSON *doc;

    for (size_t i = 0; c->provision_args[i] != NULL; i++)
        args[n++] = c->provision_args[i];
    args[n] = NULL;
    cli_exec_run(c, args, -1, &out);
    doc = cJSON_Parse(out);
    id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "execution_id"));
    cr_assert_not_null(id, "cordon provision --provider %s printed no execution_id: %.800s",
                       provider, out);
    id = strdup(id);
    cr_assert_not_null(id);
    for (size_t i = 0; i < LIVE_MAX; i++)
        if (live[i] == NULL) {
            live[i] = strdup(id);
            break;
        }
    cJSON_Delete(doc);
    free(out);
    return id;
}

cJSON *cli_exec_sh(const struct cli_exec *c, const char *id, const char *stdin_path, int stdin_fd,
                   const char *script)
{
    const char *args[] = { "exec", id, "--json", "--stdin", stdin_path, "--", "sh", "-c", script,
                           NULL };
    char *out = NULL;
    cJSON *doc;

    if (stdin_path == NULL) {
        /* no --stdin: shift the rest over it */
        args[3] = "--";
        args[4] = "sh";
        args[5] = "-c";
        args[6] = script;
        args[7] = NULL;
    }
    cli_exec_run(c, args, stdin_fd, &out);
    doc = cJSON_Parse(out);
    cr_assert(cJSON_IsObject(doc), "cordon exec printed no JSON object: %.800s", out);
    free(out);
    return doc;
}

static int terminate(const struct cli_exec *c, const char *id)
{
    const char *args[] = { "terminate", id, NULL };
    int rc = cli_exec_run(c, args, -1, NULL);

    for (size_t i = 0; i < LIVE_MAX && rc == 0; i++)
        if (live[i] != NULL && strcmp(live[i], id) == 0) {
            free(live[i]);
            live[i] = NULL;
        }
    return rc;
}

void cli_exec_terminate(const struct cli_exec *c, const char *id)
{
    cr_assert_eq(terminate(c, id), 0, "cordon terminate %s failed", id);
}

void cli_exec_cleanup(const struct cli_exec *c)
{
    for (size_t i = 0; i < LIVE_MAX; i++)
        if (live[i] != NULL) {
            char *id = live[i];

            /* out of the list first: terminate would free it there */
            live[i] = NULL;
            terminate(c, id);
            free(id);
        }
}

static const char *doc_str(const cJSON *doc, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, key)) ?: "";
}

static int doc_int(const cJSON *doc, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, key);

    return cJSON_IsNumber(v) ? v->valueint : -1;
}

static void random_hex(char *buf, size_t bytes)
{
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    unsigned char raw[32];

    cr_assert(fd >= 0 && bytes <= sizeof(raw) && read(fd, raw, bytes) == (ssize_t)bytes);
    close(fd);
    for (size_t i = 0; i < bytes; i++)
        sprintf(buf + 2 * i, "%02x", raw[i]);
}

/* What fd 0 is, and what it leads to, seen from inside. */
static const char fd0_probe[] =
    "echo \"link=$(readlink /proc/self/fd/0)\"; "
    "if test -t 0; then echo FD0_IS_A_TERMINAL; fi; "
    "if test -d /proc/self/fd/0; then echo FD0_IS_A_DIRECTORY; fi; "
    "if ls /proc/self/fd/0/ >/dev/null 2>&1; then echo FD0_LISTS; fi; "
    "if ls /proc/self/fd/0/../.. >/dev/null 2>&1; then echo FD0_PARENT_LISTS; fi; "
    "cat /proc/self/fd/0/marker 2>/dev/null; exit 0";

static void assert_fd0_is_a_pipe(const char *what, const cJSON *doc)
{
    const char *out = doc_str(doc, "stdout");

    cr_assert_str_eq(doc_str(doc, "status"), "exited", "%s", cJSON_PrintUnformatted(doc));
    cr_assert(strstr(out, "link=pipe:[") != NULL,
              "cordon exec with %s as stdin: fd 0 inside is not a pipe:\n%s", what, out);
    cr_assert_null(strstr(out, "FD0_"), "cordon exec with %s as stdin: fd 0 leads out:\n%s",
                   what, out);
}

void cli_exec_check_stdin_directory(const struct cli_exec *c, const char *provider)
{
    char dir[] = "/tmp/cordon-cli-stdin.XXXXXX", path[64], secret[33];
    char *id = cli_exec_provision(c, provider);
    cJSON *doc;
    int fd;

    cr_assert_not_null(mkdtemp(dir));
    random_hex(secret, 16);
    snprintf(path, sizeof(path), "%s/marker", dir);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    cr_assert(fd >= 0 && write(fd, secret, 32) == 32);
    close(fd);
    doc = cli_exec_sh(c, id, dir, -1, fd0_probe);
    cordon_fs_remove_tree_path(dir, NULL);
    cli_exec_terminate(c, id);
    assert_fd0_is_a_pipe("a directory (--stdin DIR)", doc);
    cr_assert_null(strstr(doc_str(doc, "stdout"), secret), "a host file was read through fd 0");
    cJSON_Delete(doc);
    free(id);
}

/*
 * `cordon exec --stdin -` from a terminal: inside, fd 0 is a pipe; a
 * setsid child that kept it reads nothing typed after cordon returned,
 * and the line typed then is still there for the user's shell.
 */
void cli_exec_check_stdin_terminal(const struct cli_exec *c, const char *provider)
{
    char *id = cli_exec_provision(c, provider), secret[33], line[40], got[64];
    struct pollfd pfd;
    cJSON *doc;
    ssize_t n;
    int m, s;

    m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    cr_assert_geq(m, 0);
    cr_assert(grantpt(m) == 0 && unlockpt(m) == 0);
    s = open(ptsname(m), O_RDWR | O_NOCTTY | O_CLOEXEC);
    cr_assert_geq(s, 0);
    doc = cli_exec_sh(c, id, "-", s, fd0_probe);
    assert_fd0_is_a_pipe("a terminal (--stdin -)", doc);
    cJSON_Delete(doc);
    doc = cli_exec_sh(c, id, "-", s,
                      "exec 3<&0; setsid sh -c 'IFS= read -r l <&3; echo \"got:$l\" > stolen' "
                      ">/dev/null 2>&1 & sleep 0.3; exit 0");
    cr_assert_str_eq(doc_str(doc, "status"), "exited");
    cJSON_Delete(doc);
    random_hex(secret, 16);
    snprintf(line, sizeof(line), "%s\n", secret);
    cr_assert_eq(write(m, line, strlen(line)), (ssize_t)strlen(line));
    usleep(500 * 1000);
    doc = cli_exec_sh(c, id, NULL, -1, "cat stolen 2>/dev/null; exit 0");
    cli_exec_terminate(c, id);
    cr_assert_null(strstr(doc_str(doc, "stdout"), secret),
                   "a child left in the sandbox read the terminal: %s", doc_str(doc, "stdout"));
    cJSON_Delete(doc);
    pfd = (struct pollfd){ .fd = s, .events = POLLIN };
    cr_assert_eq(poll(&pfd, 1, 2000), 1, "the line typed after the exec was taken");
    n = read(s, got, sizeof(got) - 1);
    cr_assert_gt(n, 0);
    got[n] = '\0';
    cr_assert_str_eq(got, line);
    close(s);
    close(m);
    free(id);
}

/* signals_true: the provider knows a signal death (else it reports the
 * fold, exited 128+N, as documented for its runtime path). */
void cli_exec_check_exit_status(const struct cli_exec *c, const char *provider, bool signals_true)
{
    static const struct {
        const char *script;
        int code, sig;
    } cases[] = {
        { "exit 137", 137, 0 }, { "exit 143", 143, 0 },
        { "kill -9 $$", -1, 9 }, { "kill -TERM $$", -1, 15 },
    };
    char *id = cli_exec_provision(c, provider);

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *args[] = { "exec", id, "--", "sh", "-c", cases[i].script, NULL };
        cJSON *doc = cli_exec_sh(c, id, NULL, -1, cases[i].script);
        const char *status = doc_str(doc, "status");
        bool folded = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "signal_folded"));
        int rc = cli_exec_run(c, args, -1, NULL);

        if (cases[i].code >= 0 || !signals_true) {
            int want = cases[i].code >= 0 ? cases[i].code : 128 + cases[i].sig;

            cr_expect_str_eq(status, "exited", "'%s' is %s", cases[i].script, status);
            cr_expect_eq(doc_int(doc, "exit_code"), want, "'%s' gave exit_code %d",
                         cases[i].script, doc_int(doc, "exit_code"));
            /* Where signals are known, an exit is never marked; where they are
             * folded, every 128+N is, so that nobody takes it for certain. */
            cr_expect_eq(folded, !signals_true, "'%s': signal_folded is %s", cases[i].script,
                         folded ? "true" : "absent");
        } else {
            cr_expect_str_eq(status, "signaled", "'%s' is %s", cases[i].script, status);
            cr_expect_eq(doc_int(doc, "signal"), cases[i].sig, "'%s' gave signal %d",
                         cases[i].script, doc_int(doc, "signal"));
        }
        /* Either way the command's own exit status is the shell's 128+N. */
        cr_expect_eq(rc, cases[i].code >= 0 ? cases[i].code : 128 + cases[i].sig,
                     "cordon exec -- sh -c '%s' exited %d", cases[i].script, rc);
        cJSON_Delete(doc);
    }
    cli_exec_terminate(c, id);
    free(id);
}

/* The soft value of a /proc/self/limits row, as text. */
static void limits_soft(const char *limits, const char *row, char *buf)
{
    const char *p = strstr(limits, row);

    buf[0] = '\0';
    if (p != NULL)
        sscanf(p + strlen(row), " %31s", buf);
}

/*
 * `ulimit -s unlimited; cordon exec ...`: the test raises its own soft
 * limits (inherited by the cordon it starts) and reads the sandboxed
 * process's.
 */
void cli_exec_check_rlimits(const struct cli_exec *c, const char *provider, const char *want_stack,
                            const char *want_nofile)
{
    char *id = cli_exec_provision(c, provider), stack[32], nofile[32], callers_nofile[32];
    struct rlimit rl;
    bool stack_raised;
    cJSON *doc;

    cr_assert_eq(getrlimit(RLIMIT_STACK, &rl), 0);
    rl.rlim_cur = rl.rlim_max;
    cr_assert_eq(setrlimit(RLIMIT_STACK, &rl), 0);
    stack_raised = rl.rlim_max == RLIM_INFINITY;
    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    cr_assert_gt(rl.rlim_max, 2048, "the hard RLIMIT_NOFILE %llu leaves no odd value",
                 (unsigned long long)rl.rlim_max);
    rl.rlim_cur = rl.rlim_max - 7;
    cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
    snprintf(callers_nofile, sizeof(callers_nofile), "%llu", (unsigned long long)rl.rlim_cur);
    doc = cli_exec_sh(c, id, NULL, -1, "cat /proc/self/limits");
    cli_exec_terminate(c, id);
    cr_assert_str_eq(doc_str(doc, "status"), "exited");
    limits_soft(doc_str(doc, "stdout"), "Max stack size", stack);
    limits_soft(doc_str(doc, "stdout"), "Max open files", nofile);
    if (stack_raised)
        cr_assert_str_neq(stack, "unlimited", "the stack limit inside follows the caller's "
                          "(unlimited):\n%s", doc_str(doc, "stdout"));
    cr_assert_str_neq(nofile, callers_nofile, "the open-files limit follows the caller's (%s)",
                      callers_nofile);
    if (want_stack != NULL)
        cr_assert_str_eq(stack, want_stack, "the stack limit inside is %s:\n%s", stack,
                         doc_str(doc, "stdout"));
    if (want_nofile != NULL)
        cr_assert_str_eq(nofile, want_nofile, "open files inside: %s", nofile);
    cJSON_Delete(doc);
    free(id);
}

/* cordon run --request - --json with a one-file python bundle writing
 * code's outputs; returns the result and the command's exit code. */
static cJSON *inline_run(const struct cli_exec *c, const char *provider, const char *isolation,
                         const char *code, const char *outputs_json, int *ret_code)
{
    cJSON *req = cJSON_CreateObject(), *f = cJSON_CreateObject(), *doc;
    char *text, *out = NULL;
    int fd;

    cJSON_AddStringToObject(req, "language", "python");
    cJSON_AddStringToObject(req, "entrypoint", "main.py");
    cJSON_AddStringToObject(f, "path", "main.py");
    cJSON_AddStringToObject(f, "content", code);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(req, "files"), f);
    cJSON_AddItemToObject(req, "outputs", cJSON_Parse(outputs_json));
    cJSON_AddItemToArray(cJSON_AddArrayToObject(req, "providers"), cJSON_CreateString(provider));
    cJSON_AddStringToObject(req, "isolation", isolation);
    text = cJSON_PrintUnformatted(req);
    cJSON_Delete(req);
    cr_assert_not_null(text);
    fd = memfd_create("cordon-inline-request", MFD_CLOEXEC);
    cr_assert(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text) &&
              lseek(fd, 0, SEEK_SET) == 0);
    free(text);
    *ret_code = cli_exec_run(c, (const char *const[]){ "run", "--request", "-", "--json", NULL }, fd,
                             &out);
    close(fd);
    doc = cJSON_Parse(out);
    cr_assert_not_null(doc, "cordon run printed no JSON: %s", out);
    free(out);
    return doc;
}

static const cJSON *output_at(const cJSON *doc, int i)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "outputs"), i);
}

void cli_exec_check_inline_outputs(const struct cli_exec *c, const char *provider,
                                   const char *isolation)
{
    static const struct {
        const char *what, *code, *outputs, *error, *needle;
    } refused[] = {
        { "over the per-file limit", "open('../output/big.txt','w').write('a' * ((4 << 20) + 1))\n",
          "[\"big.txt\"]", "limit_exceeded",
          "outputs: big.txt is 4194305 bytes, exceeds the inline per-file limit of 4194304" },
        { "over the total limit",
          "for i in range(5):\n    open('../output/f%d.txt' % i,'w').write('a' * (7 << 19))\n",
          "[\"f0.txt\",\"f1.txt\",\"f2.txt\",\"f3.txt\",\"f4.txt\"]", "limit_exceeded",
          "exceeds the inline total limit of 16777216" },
        { "far over the total limit",
          "for i in range(6):\n    open('../output/f%d.txt' % i,'w').write('a' * (31 << 17))\n",
          "[\"f0.txt\",\"f1.txt\",\"f2.txt\",\"f3.txt\",\"f4.txt\",\"f5.txt\"]", "limit_exceeded",
          "more than the limit of 20971520 bytes" },
        { "a symbolic link out of the sandbox",
          "import os\nos.symlink('/etc/passwd', '../output/link.txt')\n", "[\"link.txt\"]",
          "unsafe_path", "symbolic link" },
        { "a relative symbolic link",
          "import os\nos.symlink('../../../../../../etc/passwd', '../output/link.txt')\n",
          "[\"link.txt\"]", "unsafe_path", "symbolic link" },
        { "a directory", "import os\nos.makedirs('../output/d/e')\n", "[\"d\"]", "unsafe_path",
          "not a regular file" },
    };
    const cJSON *o;
    cJSON *doc;
    char *text;
    int code;

    doc = inline_run(c, provider, isolation,
                     "open('../output/report.txt','w').write('h\\u00e9llo\\n')\n"
                     "open('../output/blob.bin','wb').write(bytes([0, 255, 1]))\n",
                     "[\"report.txt\", \"blob.bin\", \"absent.txt\"]", &code);
    text = cJSON_PrintUnformatted(doc);
    cr_assert_str_eq(doc_str(doc, "status"), "success", "%s: %.2000s", provider, text);
    cr_expect_eq(code, 0);
    /* sorted: absent.txt, blob.bin, report.txt */
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "outputs")), 3, "%s", text);
    o = output_at(doc, 0);
    cr_expect_str_eq(doc_str(o, "path"), "output/absent.txt", "%s", text);
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "missing")), "%s", text);
    o = output_at(doc, 1);
    cr_expect_str_eq(doc_str(o, "encoding"), "base64", "%s", text);
    cr_expect_str_eq(doc_str(o, "data"), "AP8B", "%s", text);
    cr_expect_eq(doc_int(o, "bytes"), 3);
    o = output_at(doc, 2);
    cr_expect_str_eq(doc_str(o, "encoding"), "utf-8", "%s", text);
    cr_expect_str_eq(doc_str(o, "data"), "h\xc3\xa9llo\n", "%s", text);
    cr_expect_null(cJSON_GetObjectItemCaseSensitive(o, "host_path"), "%s", text);
    free(text);
    cJSON_Delete(doc);
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        const cJSON *error;

        doc = inline_run(c, provider, isolation, refused[i].code, refused[i].outputs, &code);
        text = cJSON_PrintUnformatted(doc);
        error = cJSON_GetObjectItemCaseSensitive(doc, "error");
        cr_expect_str_eq(doc_str(doc, "status"), "error", "%s: %.2000s", refused[i].what, text);
        cr_expect_eq(code, 125, "%s: a program that exited 0 but whose outputs were refused",
                     refused[i].what);
        cr_expect_str_eq(doc_str(error, "code"), refused[i].error, "%s: %.2000s", refused[i].what, text);
        cr_expect(strstr(doc_str(error, "message"), refused[i].needle) != NULL, "%s: \"%s\" lacks \"%s\"",
                  refused[i].what, doc_str(error, "message"), refused[i].needle);
        cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "outputs")), 0, "%s",
                     refused[i].what);
        cr_expect_null(strstr(text, "root:"), "%s: a host file's content in the result", refused[i].what);
        free(text);
        cJSON_Delete(doc);
    }
}

/* The marker written before reads back: the execution outlived the command. */
static void expect_marker(const struct cli_exec *c, const char *id, const char *after)
{
    cJSON *doc = cli_exec_sh(c, id, NULL, -1, "cat marker");

    cr_expect_str_eq(doc_str(doc, "status"), "exited", "cat marker after %s: %s", after,
                     doc_str(doc, "status"));
    cr_expect_str_eq(doc_str(doc, "stdout"), "kept\n", "cat marker after %s printed \"%s\"", after,
                     doc_str(doc, "stdout"));
    cJSON_Delete(doc);
}

/* A result of a command ended by the host, its execution left ready. */
static void expect_ended_alone(const cJSON *doc, const char *what, const char *status,
                               const char *sleeper)
{
    cr_expect_str_eq(doc_str(doc, "status"), status, "%s: status %s", what, doc_str(doc, "status"));
    cr_expect(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(doc, "execution_terminated")),
              "%s: the execution was ended with the command", what);
    /* Every process of the command's group is gone when the answer comes,
     * the one a subshell orphaned too: not some time later. */
    if (sleeper != NULL)
        cr_expect_eq(test_count_command(sleeper), 0, "%s: \"%s\" outlived the answer", what, sleeper);
}

/* The exec's own timeout; cancel, as timeout(1)'s SIGTERM to cordon exec
 * (124 is timeout's own status); twice the output budget. */
static const struct {
    const char *what, *status, *timeout;
    bool by_signal, flood;
    int rc;
} enders[] = {
    { "a --timeout", "timeout", "700ms", false, false, 124 },
    { "a SIGTERM to cordon exec", "cancelled", NULL, true, false, 124 },
    { "twice max_output_bytes", "output_limit", NULL, false, true, 137 },
};

void cli_exec_check_command_ends_alone(const struct cli_exec *c, const char *provider)
{
    static const char *const under_timeout[] = { "timeout", "2", NULL };
    char *id = cli_exec_provision(c, provider), *out = NULL, sleeper[40], script[200];
    cJSON *doc;
    uint64_t t0;
    int rc;

    snprintf(sleeper, sizeof(sleeper), "sleep 1000.%u", (unsigned)getpid());
    /* A command that ignores SIGTERM and leaves an orphan in its group. */
    snprintf(script, sizeof(script), "trap '' TERM; (%s &); %s & exec %s", sleeper, sleeper, sleeper);
    doc = cli_exec_sh(c, id, NULL, -1, "echo kept > marker");
    cr_assert_str_eq(doc_str(doc, "status"), "exited", "writing the marker: %s", doc_str(doc, "status"));
    cJSON_Delete(doc);

    for (size_t i = 0; i < sizeof(enders) / sizeof(enders[0]); i++) {
        const char *args[12] = { "exec", id, "--json" }, *what = enders[i].what;
        size_t n = 3;

        if (enders[i].timeout != NULL) {
            args[n++] = "--timeout";
            args[n++] = enders[i].timeout;
        }
        args[n++] = "--";
        if (enders[i].flood) {
            args[n++] = "head";
            args[n++] = "-c";
            args[n++] = "2097152";   /* twice --max-output 1M */
            args[n++] = "/dev/zero";
        } else {
            args[n++] = "sh";
            args[n++] = "-c";
            args[n++] = script;
        }
        args[n] = NULL;
        t0 = cordon_now_monotonic_ms();
        rc = run_under(c, enders[i].by_signal ? under_timeout : NULL, args, -1, &out);
        doc = cJSON_Parse(out);
        cr_expect_eq(rc, enders[i].rc, "%s: cordon exec exited %d", what, rc);
        cr_expect(cJSON_IsObject(doc), "%s: no result: %.400s", what, out);
        free(out);
        expect_ended_alone(doc, what, enders[i].status, enders[i].flood ? NULL : sleeper);
        /* Promptly: the agent's and the runner's waits are bounded. */
        cr_expect_lt(cordon_now_monotonic_ms() - t0, 12000u, "%s took %llu ms", what,
                     (unsigned long long)(cordon_now_monotonic_ms() - t0));
        cJSON_Delete(doc);
        expect_marker(c, id, what);
    }
    cli_exec_terminate(c, id);
    free(id);
}

void cli_exec_check_command_ends_execution(const struct cli_exec *c, const char *provider)
{
    const char *cat[] = { "exec", NULL, "--json", "--", "cat", "marker", NULL };
    char *id = cli_exec_provision(c, provider), *out = NULL;
    cJSON *doc;
    int rc;

    cat[1] = id;
    doc = cli_exec_sh(c, id, NULL, -1, "echo kept > marker");
    cr_assert_str_eq(doc_str(doc, "status"), "exited");
    cJSON_Delete(doc);
    {
        const char *args[] = { "exec", id, "--timeout", "700ms", "--json", "--", "sleep", "1000",
                               NULL };

        rc = cli_exec_run(c, args, -1, &out);
        doc = cJSON_Parse(out);
        free(out);
    }
    cr_expect_eq(rc, 124, "cordon exec --timeout exited %d", rc);
    cr_expect_str_eq(doc_str(doc, "status"), "timeout");
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "execution_terminated")),
              "a provider that cannot end one command alone must say the execution ended");
    cr_expect_str_eq(doc_str(doc, "execution_terminated_reason"), "provider_ended_execution");
    cJSON_Delete(doc);
    /* It really is gone: the next exec finds nothing. */
    rc = cli_exec_run(c, cat, -1, NULL);
    cr_expect_neq(rc, 0, "exec after the execution ended succeeded");
    for (size_t i = 0; i < LIVE_MAX; i++)
        if (live[i] != NULL && strcmp(live[i], id) == 0) {
            free(live[i]);
            live[i] = NULL;
        }
    free(id);
}

/* Append what fd has now to buf (NUL-ended); true once buf holds want. */
static bool pipe_has(int fd, char *buf, size_t size, const char *want)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    size_t len = strlen(buf);
    ssize_t n;

    if (poll(&pfd, 1, 0) == 1 && (n = read(fd, buf + len, size - 1 - len)) > 0)
        buf[len + (size_t)n] = '\0';
    return strstr(buf, want) != NULL;
}

static bool read_more(int fd, char *buf, size_t size)
{
    size_t len = strlen(buf);
    ssize_t n = read(fd, buf + len, size - 1 - len);

    if (n <= 0)
        return false;
    buf[len + (size_t)n] = '\0';
    return true;
}

void cli_exec_check_output_streams(const struct cli_exec *c, const char *provider)
{
    char *id = cli_exec_provision(c, provider), out[256] = "", err[256] = "";
    const char *args[] = { "exec", id, "--stdin", "-", "--", "sh", "-c",
                           "echo first; echo e1 >&2; read x; echo second $x; echo e2 >&2", NULL };
    struct cli_cmd cmd;
    int in[2], po[2], pe[2], status;
    pid_t pid;

    cli_cmd_build(c, NULL, args, &cmd);
    cr_assert(pipe2(in, O_CLOEXEC) == 0 && pipe2(po, O_CLOEXEC) == 0 && pipe2(pe, O_CLOEXEC) == 0);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        if (dup2(in[0], 0) < 0 || dup2(po[1], 1) < 0 || dup2(pe[1], 2) < 0)
            _exit(127);
        execve(cmd.argv[0], (char *const *)cmd.argv, (char *const *)cmd.envp);
        _exit(127);
    }
    close(in[0]);
    close(po[1]);
    close(pe[1]);
    /* The command waits for a line on stdin that is written only once its
     * first lines were seen: cordon exec must pass them on as they come. */
    cr_expect(TEST_WAIT_UNTIL(pipe_has(po[0], out, sizeof(out), "first\n"), 60000),
              "%s: cordon exec printed no first line before the command ended: \"%s\"", provider, out);
    cr_expect(TEST_WAIT_UNTIL(pipe_has(pe[0], err, sizeof(err), "e1\n"), 60000),
              "%s: stderr's first line never came: \"%s\"", provider, err);
    cr_expect_eq(waitpid(pid, &status, WNOHANG), 0, "%s: cordon exec ended before its stdin line", provider);
    cr_expect_eq(write(in[1], "go\n", 3), 3);
    close(in[1]);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    /* cordon exited: the rest is in the pipes, then their end. */
    while (strlen(out) < sizeof(out) - 1 && read_more(po[0], out, sizeof(out)))
        continue;
    while (strlen(err) < sizeof(err) - 1 && read_more(pe[0], err, sizeof(err)))
        continue;
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: cordon exec: status 0x%x", provider, status);
    cr_expect_str_eq(out, "first\nsecond go\n", "%s: stdout", provider);
    cr_expect_str_eq(err, "e1\ne2\n", "%s: stderr", provider);
    close(po[0]);
    close(pe[0]);
    cli_exec_terminate(c, id);
    free(id);
}
