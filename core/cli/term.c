/*
 * What the cordon command prints around a program's output.
 *
 * The program is hostile by assumption and its output shares the
 * terminal with cordon's own status lines. On a terminal, its output is
 * passed through with every control character other than newline,
 * carriage return and tab made visible (cordon/text.h), so it cannot move
 * the cursor, set the window title, clear the screen or make text
 * invisible. cordon's own lines then start with an attribute reset and a
 * mark that only an escape sequence can draw (the word "cordon" in bold
 * reverse video): program output cannot draw it, so it cannot imitate
 * the line. Off a terminal (a pipe, a file) program output passes through
 * byte for byte, as docker and ssh pass it. Either way cordon's first line
 * starts a line of its own when the program left one open.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cordon/text.h>

#include "core/cli/cli.h"

/* Whether the last byte written where cordon's lines go ended a line. */
static bool at_line_start = true;

static bool is_tty(FILE *f)
{
    return isatty(fileno(f)) == 1;
}

/* Whether f is stderr or the same file (stdout and stderr on one terminal). */
static bool shares_stderr(FILE *f)
{
    struct stat a, b;

    if (f == stderr)
        return true;
    return fstat(fileno(f), &a) == 0 && fstat(fileno(stderr), &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

void cli_program_output(FILE *f, const char *bytes, size_t len)
{
    char buf[4096];
    bool ends_line;

    if (len == 0)
        return;
    ends_line = bytes[len - 1] == '\n';
    if (shares_stderr(f))
        at_line_start = ends_line;
    if (!is_tty(f)) {
        fwrite(bytes, 1, len, f);
        fflush(f);
        return;
    }
    while (len > 0) {
        size_t used = 0, n = cordon_text_escape(buf, sizeof(buf), bytes, len,
                                                CORDON_TEXT_KEEP_LINES, &used);
        if (used == 0)
            break;
        fwrite(buf, 1, n, f);
        bytes += used;
        len -= used;
    }
    fflush(f);
}

/* fmt formatted into buf (size bytes), cut between characters when long. */
__attribute__((format(printf, 3, 0))) static void format_cut(char *buf, size_t size, const char *fmt, va_list ap)
{
    int n = vsnprintf(buf, size, fmt, ap);

    if (n < 0)
        buf[0] = '\0';
    else if ((size_t)n >= size)
        buf[cordon_text_utf8_end(buf, size - 1)] = '\0';
}

void cli_line(FILE *f, const char *fmt, ...)
{
    char raw[2048], shown[2048];
    va_list ap;

    va_start(ap, fmt);
    format_cut(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    cordon_text_escape(shown, sizeof(shown), raw, strlen(raw), 0, NULL);
    fputs(shown, f);
    fputc('\n', f);
}

void cli_say(const char *fmt, ...)
{
    char raw[2048], shown[2048];
    va_list ap;

    va_start(ap, fmt);
    format_cut(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    /* The fields come from result documents, which carry provider text. */
    cordon_text_escape(shown, sizeof(shown), raw, strlen(raw), 0, NULL);
    fflush(stdout);
    if (is_tty(stderr)) {
        fprintf(stderr, "%s%s" CLI_TTY_MARK ": %s\n", CLI_TTY_RESET, at_line_start ? "" : "\n",
                shown);
    } else {
        fprintf(stderr, "%scordon: %s\n", at_line_start ? "" : "\n", shown);
    }
    at_line_start = true;
    fflush(stderr);
}
