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

/* fmt formatted, cut between characters when long, then escaped into
 * shown: the fields come from result documents, which carry provider text. */
#define SHOWN_MAX 2048
__attribute__((format(printf, 2, 0))) static void format_shown(char shown[SHOWN_MAX], const char *fmt,
                                                               va_list ap)
{
    char raw[SHOWN_MAX];
    int n = vsnprintf(raw, sizeof(raw), fmt, ap);

    if (n < 0)
        raw[0] = '\0';
    else if ((size_t)n >= sizeof(raw))
        raw[cordon_text_utf8_end(raw, sizeof(raw) - 1)] = '\0';
    cordon_text_escape(shown, SHOWN_MAX, raw, strlen(raw), 0, NULL);
}

void cli_line(FILE *f, const char *fmt, ...)
{
    char shown[SHOWN_MAX];
    va_list ap;

    va_start(ap, fmt);
    format_shown(shown, fmt, ap);
    va_end(ap);
    fputs(shown, f);
    fputc('\n', f);
}

void cli_say(const char *fmt, ...)
{
    char shown[SHOWN_MAX];
    va_list ap;

    va_start(ap, fmt);
    format_shown(shown, fmt, ap);
    va_end(ap);
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
