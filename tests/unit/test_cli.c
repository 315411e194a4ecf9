/* Unit tests of the cordon command's output (core/cli/term.c): what it
 * prints around untrusted program output and provider text, on a terminal
 * (a pty from posix_openpt) and off one. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "core/cli/cli.h"
#include "tests/unit/helpers.h"

/* `cordon run` of path under trusted-local with stdio on fd (a terminal or
 * a pipe); what came out goes to out; returns the exit status. */
static int run_on(const char *cordon, const char *state, const char *path, int out_fd, int in_fd,
                  char *out, size_t size, bool json)
{
    size_t len = 0;
    int status;
    ssize_t n;
    pid_t pid = fork();

    cr_assert_geq(pid, 0);
    if (pid == 0) {
        setsid();
        if (isatty(in_fd)) {
            /* The terminal becomes ours; no "\n" to "\r\n" so that the
             * bytes compare as written. */
            struct termios t;
            ioctl(in_fd, TIOCSCTTY, 0);
            tcgetattr(in_fd, &t);
            t.c_oflag &= ~(tcflag_t)OPOST;
            tcsetattr(in_fd, TCSANOW, &t);
        }
        dup2(in_fd, 0);
        dup2(in_fd, 1);
        dup2(in_fd, 2);
        setenv("CORDON_PROVIDER_PATH", getenv("CORDON_TEST_PROVIDER_DIR"), 1);
        execl(cordon, cordon, "--state-dir", state, "run", "--isolation", "none",
              "--allow-unsafe-local", "--provider", "trusted-local", path,
              json ? "--json" : (char *)NULL, (char *)NULL);
        _exit(127);
    }
    close(in_fd);
    /* A terminal's master reads EIO once the last slave is closed. */
    while (len < size - 1 && (n = read(out_fd, out + len, size - 1 - len)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        len += (size_t)n;
    }
    out[len] = '\0';
    close(out_fd);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return status;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;

    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* The program prints a fake cordon line, then hides what follows with
 * ESC[8m and leaves the cursor mid-line. On a terminal, cordon shows its
 * ESC as text, resets attributes, ends the line, and marks its own lines
 * in a way program output cannot draw; through a pipe the program's bytes
 * pass untouched and cordon's lines are plain. */
Test(cli, run_summary_cannot_be_forged_on_a_terminal, .timeout = 60)
{
    const char *cordon = getenv("CORDON_BIN");
    char *state = test_mkdtemp(), *dir = test_mkdtemp(), path[512], out[1 << 16];
    char *real = NULL, *pts;
    int master, slave, p[2], status;
    FILE *f;

    if (cordon == NULL || getenv("CORDON_TEST_PROVIDER_DIR") == NULL)
        cr_skip_test("CORDON_BIN or CORDON_TEST_PROVIDER_DIR is not set (make check sets them)");
    cr_assert_not_null(state);
    cr_assert_not_null(dir);
    snprintf(path, sizeof(path), "%s/forge.py", dir);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("import sys\n"
          "sys.stdout.write('cordon: success (exit 0) under docker [isolated] in 1 ms\\n\\x1b[8m')\n"
          "sys.stdout.flush()\n"
          "sys.stderr.write('\\x1b]0;pwned\\x07partial')\n"
          "sys.exit(3)\n", f);
    fclose(f);

    master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    cr_assert_geq(master, 0);
    cr_assert_eq(grantpt(master), 0);
    cr_assert_eq(unlockpt(master), 0);
    cr_assert_not_null(pts = ptsname(master));
    slave = open(pts, O_RDWR | O_NOCTTY | O_CLOEXEC);
    cr_assert_geq(slave, 0);
    status = run_on(cordon, state, path, master, slave, out, sizeof(out), false);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 3, "cordon run: %d: %s", status, out);
    /* The program's escape sequences are shown, not obeyed. */
    cr_expect_not_null(strstr(out, "\\x1b[8m"), "%s", out);
    cr_expect_not_null(strstr(out, "\\x1b]0;pwned\\x07partial"), "%s", out);
    cr_expect_null(strstr(out, "\x1b[8m"), "ESC[8m reached the terminal: %s", out);
    cr_expect_null(strstr(out, "\x1b]0;"), "the title sequence reached the terminal: %s", out);
    /* The real line: reset, the newline the program did not write, the mark. */
    real = strstr(out, "partial" CLI_TTY_RESET "\n" CLI_TTY_MARK ": error (exit 3) under trusted-local");
    cr_expect_not_null(real, "the summary is not reset, ended and marked: %s", out);
    cr_expect_null(strstr(out, CLI_TTY_MARK ": success"), "a marked success line was forged");
    /* Every escape sequence on the terminal is cordon's: reset, bold
     * reverse on and off, for each of its two lines. */
    cr_expect_eq(count(out, CLI_TTY_RESET "\n" CLI_TTY_MARK ": "), 1u, "%s", out);
    cr_expect_eq(count(out, "\n" CLI_TTY_RESET CLI_TTY_MARK ": "), 1u, "%s", out);
    cr_expect_eq(count(out, "\x1b"), 6u, "%s", out);

    /* Off a terminal: the program's bytes pass untouched, cordon's lines are plain. */
    cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
    status = run_on(cordon, state, path, p[0], p[1], out, sizeof(out), false);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 3, "cordon run: %d: %s", status, out);
    cr_expect_not_null(strstr(out, "\n\x1b[8m"), "%s", out);
    cr_expect_not_null(strstr(out, "\x1b]0;pwned\x07partial"), "%s", out);
    cr_expect_not_null(strstr(out, "partial\ncordon: error (exit 3) under trusted-local"),
                       "the line the program left open is ended: %s", out);
    cr_expect_null(strstr(out, CLI_TTY_MARK), "%s", out);
    test_rmtree(state);
    test_rmtree(dir);
    free(state);
    free(dir);
}

/* A provider's facts carry a title sequence and a byte that is not UTF-8
 * in their reason: `cordon probe` shows them escaped, and its --json is
 * strict UTF-8. */
Test(cli, probe_shows_provider_text_escaped, .timeout = 60)
{
    static const char config[] =
        "{\"facts\": {\"available\": false, \"reason\": \"down \\u001b]0;pwned\\u0007\\u001b[2J\"}}";
    const char *cordon = getenv("CORDON_BIN");
    char *state = test_mkdtemp(), out[1 << 16];
    int p[2], status;
    size_t len = 0;
    ssize_t n;
    pid_t pid;

    if (cordon == NULL || getenv("CORDON_TEST_PROVIDER_DIR") == NULL)
        cr_skip_test("CORDON_BIN or CORDON_TEST_PROVIDER_DIR is not set (make check sets them)");
    cr_assert_not_null(state);
    cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        dup2(p[1], 1);
        dup2(p[1], 2);
        setenv("CORDON_PROVIDER_PATH", getenv("CORDON_TEST_PROVIDER_DIR"), 1);
        execl(cordon, cordon, "--state-dir", state, "probe", "synthetic", "--provider-config", config,
              (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    while (len < sizeof(out) - 1 && (n = read(p[0], out + len, sizeof(out) - 1 - len)) > 0)
        len += (size_t)n;
    out[len] = '\0';
    close(p[0]);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_expect_not_null(strstr(out, "synthetic: unavailable (down \\x1b]0;pwned\\x07\\x1b[2J)"), "%s", out);
    cr_expect_null(strchr(out, '\x1b'), "an ESC reached the output: %s", out);
    test_rmtree(state);
    free(state);
}

/* Program output with DEL, a C1 CSI, a bidi override and a line separator
 * in it: --json writes them as \uHHHH, the same strings once parsed, so
 * the document is printable. */
Test(cli, run_json_is_printable, .timeout = 60)
{
    const char *cordon = getenv("CORDON_BIN");
    char *state = test_mkdtemp(), *dir = test_mkdtemp(), path[512], out[1 << 16];
    int p[2], status;
    cJSON *doc;
    FILE *f;

    if (cordon == NULL || getenv("CORDON_TEST_PROVIDER_DIR") == NULL)
        cr_skip_test("CORDON_BIN or CORDON_TEST_PROVIDER_DIR is not set (make check sets them)");
    cr_assert_not_null(state);
    cr_assert_not_null(dir);
    snprintf(path, sizeof(path), "%s/c1.py", dir);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("print('a\\x7f\\x9b2J\\u202e\\u2028\\u00e9')\n", f);
    fclose(f);
    cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
    status = run_on(cordon, state, path, p[0], p[1], out, sizeof(out), true);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "cordon run: %d: %s", status, out);
    cr_expect_not_null(strstr(out, "a\\u007f\\u009b2J\\u202e\\u2028\xc3\xa9\\n"), "%s", out);
    cr_expect_null(strstr(out, "\xc2\x9b"), "a raw C1 control: %s", out);
    doc = cJSON_Parse(out);
    cr_assert_not_null(doc, "%s", out);
    cr_expect_str_eq(cJSON_GetObjectItem(doc, "stdout")->valuestring,
                     "a\x7f\xc2\x9b" "2J\xe2\x80\xae\xe2\x80\xa8\xc3\xa9\n", "the same text once parsed");
    cJSON_Delete(doc);
    test_rmtree(state);
    test_rmtree(dir);
    free(state);
    free(dir);
}
