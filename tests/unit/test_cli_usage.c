/* Unit tests of the cordon command line (core/cli): every verb's options,
 * abbreviations refused, and every usage error exits 2 with a line that
 * names the option or operand — before any provider or state is touched. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/helpers.h"

#define ARGS_MAX 12

/* Arrays, not pointers: Criterion hands parameters to a process of its
 * own, where the literals' addresses are not the same. "" ends args. */
struct usage_case {
    char args[ARGS_MAX][32]; /* after "cordon --state-dir DIR" */
    char says[128];          /* in stderr (or stdout with --json) */
};

/* Run cordon with args; stdout and stderr joined into out; exit status. */
static int cordon(const char *state, const char *const *args, char *out, size_t size);

static int cordon_case(const char *state, const struct usage_case *c, char *out, size_t size)
{
    const char *args[ARGS_MAX + 1];
    int n = 0;

    while (n < ARGS_MAX && c->args[n][0] != '\0') {
        args[n] = c->args[n];
        n++;
    }
    args[n] = NULL;
    return cordon(state, args, out, size);
}

static int cordon(const char *state, const char *const *args, char *out, size_t size)
{
    const char *argv[ARGS_MAX + 4];
    int pipefd[2], status, n = 0;
    size_t len = 0;
    ssize_t got;
    pid_t pid;

    argv[n++] = getenv("CORDON_BIN");
    argv[n++] = "--state-dir";
    argv[n++] = state;
    for (int i = 0; i < ARGS_MAX && args[i] != NULL; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    cr_assert_eq(pipe(pipefd), 0);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        dup2(pipefd[1], 1);
        dup2(pipefd[1], 2);
        close(pipefd[0]);
        setenv("CORDON_PROVIDER_PATH", "/nonexistent-provider-path", 1);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(pipefd[1]);
    while (len < size - 1 && (got = read(pipefd[0], out + len, size - 1 - len)) > 0)
        len += (size_t)got;
    out[len] = '\0';
    close(pipefd[0]);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status), "cordon died of a signal");
    return WEXITSTATUS(status);
}

static struct usage_case usage_cases[] = {
    /* getopt's prefix matching once took these for other options */
    { { "probe", "--provider", "docker" }, "unknown option '--provider' (options are named in full; did you mean "
                                           "--provider-config?)" },
    { { "run", "--lang", "python", "main.py" }, "unknown option '--lang'" },
    { { "--conf", "x", "ls" }, "unknown option '--conf'" },
    { { "provision", "--prov", "trusted-local" }, "unknown option '--prov'" },
    { { "exec", "x", "--time=5s", "--", "true" }, "unknown option '--time'" },
    /* unknown options, long and short */
    { { "run", "--bogus", "main.py" }, "unknown option '--bogus'" },
    { { "gc", "-x" }, "unknown option '-x'" },
    { { "providers", "--all" }, "unknown option '--all'" },
    /* an option of another verb */
    { { "exec", "x", "--image", "i", "--", "true" }, "option '--image' is not an option of exec" },
    { { "ls", "--cpus", "2" }, "option '--cpus' is not an option of ls" },
    { { "terminate", "x", "--provider", "p" }, "option '--provider' is not an option of terminate" },
    { { "checkpoint", "x", "--id", "y" }, "option '--id' is not an option of checkpoint" },
    { { "restore", "ckpt-x", "--cpus", "2" }, "option '--cpus' is not an option of restore" },
    { { "reclaim", "x", "--image", "i" }, "option '--image' is not an option of reclaim" },
    { { "gc", "--metadata", "{}" }, "option '--metadata' is not an option of gc" },
    /* a missing value */
    { { "exec", "x", "--timeout" }, "option '--timeout' needs a value" },
    { { "run", "main.py", "--provider" }, "option '--provider' needs a value" },
    { { "--state-dir" }, "option '--state-dir' needs a value" },
    /* operands */
    { { "exec" }, "an id is required" },
    { { "exec", "x" }, "a command is required after --" },
    { { "terminate" }, "an id is required" },
    { { "ls", "extra" }, "unexpected operand 'extra'" },
    { { "providers", "extra" }, "unexpected operand 'extra'" },
    { { "frob" }, "unknown verb \"frob\"" },
    { { "pool" }, "a subcommand is required: fill, ls or drain" },
    { { "pool", "frob" }, "unknown subcommand 'frob' (fill, ls or drain)" },
    { { "pool", "ls", "--size", "2" }, "option '--size' is not an option of pool" },
    { { "pool", "drain", "extra" }, "unexpected operand 'extra'" },
    { { "pool", "fill", "--provider", "runc" }, "--size is required (1..64)" },
    { { "pool", "fill", "--siz", "2" }, "unknown option '--siz'" },
    { { "pool", "fill", "--for", "exec", "--size", "1" }, "--for: run or provision, not 'exec'" },
    { { "files" }, "usage: cordon files put" },
    { { "files", "frob" }, "unknown subcommand 'frob' (put, get, ls or rm)" },
    { { "files", "get" }, "an execution id is required" },
    { { "files", "get", "x" }, "a path is required" },
    { { "files", "rm", "x", "a", "extra" }, "unexpected operand 'extra'" },
    { { "files", "put", "x", "a", "--to", "f" }, "option '--to' is not an option of files put" },
    { { "files", "ls", "x", "--from", "f" }, "option '--from' is not an option of files ls" },
    { { "files", "put", "x", "a", "--mode", "800" }, "--mode: \"800\" is not an octal mode of at most 0777" },
    { { "files", "get", "x", "a", "--json" }, "--json needs --to FILE (stdout carries the file)" },
    { { "" }, "usage: cordon" },
    /* with --json, the error is a JSON document naming the option */
    { { "gc", "--json", "--bogus" }, "{\"ok\":false,\"error\":{\"code\":\"invalid_input\",\"message\":\"unknown "
                                     "option '--bogus'" },
};

ParameterizedTestParameters(cli_usage, usage_errors_exit_2_and_name_the_option)
{
    return cr_make_param_array(struct usage_case, usage_cases,
                               sizeof(usage_cases) / sizeof(usage_cases[0]));
}

ParameterizedTest(struct usage_case *c, cli_usage, usage_errors_exit_2_and_name_the_option,
                  .timeout = 30)
{
    char *state = test_mkdtemp(), out[8192], executions[4096];
    struct stat st;
    int rc;

    cr_assert_not_null(getenv("CORDON_BIN"), "CORDON_BIN is not set (make check sets it)");
    rc = cordon_case(state, c, out, sizeof(out));
    cr_expect_eq(rc, 2, "%s %s: exit %d, not 2: %s", c->args[0], c->args[1], rc, out);
    cr_expect_neq(strstr(out, c->says), NULL, "expected \"%s\" in: %s", c->says, out);
    /* Refused before anything: no record, no execution. */
    snprintf(executions, sizeof(executions), "%s/executions", state);
    cr_expect(stat(executions, &st) != 0 || st.st_nlink == 2, "a usage error left records");
    test_rmtree(state);
    free(state);
}

/* Every verb's own options are taken by their whole name; --help of each
 * verb exits 0 and shows its usage. */
Test(cli_usage, every_verb_has_help_and_its_usage_names_its_options, .timeout = 60)
{
    static const struct {
        const char *verb;
        const char *options[20];
    } verbs[] = {
        { "providers", { "--json" } },
        { "probe", { "--provider-config", "--fresh", "--json" } },
        { "run", { "--language", "--provider", "--isolation", "--allow-unsafe-local", "--image",
                   "--output", "--input", "--workspace", "--env", "--timeout", "--cpus", "--memory",
                   "--disk", "--pids", "--runtime", "--max-output", "--retention", "--fresh",
                   "--json", "--request" } },
        { "provision", { "--provider", "--image", "--workspace", "--id", "--cpus", "--memory",
                         "--disk", "--pids", "--runtime", "--max-output", "--env", "--metadata",
                         "--isolation", "--allow-unsafe-local", "--allow-unpinned",
                         "--provider-config", "--json", "--request" } },
        { "exec", { "--cwd", "--env", "--timeout", "--stdin", "--json" } },
        { "checkpoint", { "--metadata", "--json" } },
        { "restore", { "--provider", "--image", "--id", "--isolation", "--allow-unsafe-local",
                       "--provider-config", "--json" } },
        { "terminate", { "--json" } },
        { "reclaim", { "--provider", "--json" } },
        { "ls", { "--json" } },
        { "gc", { "--json" } },
        { "files", { "put", "get", "ls", "rm", "--from", "--to", "--mode", "--json" } },
        { "pool", { "fill", "ls", "drain", "--provider", "--size", "--for", "--image", "--ttl",
                    "--timeout", "--env", "--isolation", "--allow-unsafe-local", "--request", "--watch",
                    "--interval", "--json" } },
    };
    char *state = test_mkdtemp(), out[8192];

    cr_assert_not_null(getenv("CORDON_BIN"), "CORDON_BIN is not set (make check sets it)");
    for (size_t v = 0; v < sizeof(verbs) / sizeof(verbs[0]); v++) {
        const char *args[] = { verbs[v].verb, "--help", NULL };

        cr_expect_eq(cordon(state, args, out, sizeof(out)), 0, "%s --help", verbs[v].verb);
        for (size_t o = 0; o < 20 && verbs[v].options[o] != NULL; o++)
            cr_expect_neq(strstr(out, verbs[v].options[o]), NULL, "%s --help does not show %s: %s",
                          verbs[v].verb, verbs[v].options[o], out);
    }
    test_rmtree(state);
    free(state);
}
