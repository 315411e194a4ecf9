/* Test helper shared by the mechanism suites and the contract: how much a sandbox can store. */
#ifndef CORDON_TEST_COMMON_FILL_H
#define CORDON_TEST_COMMON_FILL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How far past its budget a fill may write, in all: enough to see a
 * sandbox that stores more than its budget (a tmpfs rounds its size up by
 * at most a page, 64 KiB on any Linux, per mount), never the whole of a
 * host's tmpfs. */
#define TEST_FILL_MARGIN_BYTES (1ull << 20)
#define TEST_FILL_BLOCK_BYTES 65536ull

/*
 * A shell script (POSIX sh, dd, wc) that writes zeros into every tmpfs of
 * the sandbox its user can write to, each until the kernel says no or the
 * script has written budget_bytes + TEST_FILL_MARGIN_BYTES in all (a later
 * mount then gets an empty file), and keeps every file until all are
 * written: what the sandbox can store at once, bounded whatever the
 * sandbox turns out to be. Prints "fill MOUNTPOINT BYTES" per mount, then
 * "mounts N" and "total BYTES". The files are named .cordon-fill-TAG-PID;
 * a trap removes them on every exit the shell sees, and the script first
 * removes any .cordon-fill-TAG-* an earlier run could not. then (may be
 * "") runs after the fill, before the files go. Returns malloc'd text, or
 * NULL when out of memory.
 */
static inline char *test_fill_tmpfs_script(const char *tag, unsigned long long budget_bytes,
                                           const char *then)
{
    static const char fmt[] =
        "fill_left=%llu; total=0; n=0; files=''\n"
        "trap 'rm -f $files' EXIT; trap 'exit 129' HUP; trap 'exit 130' INT; "
        "trap 'exit 143' TERM\n"
        "while read -r _ _ _ _ mp rest; do\n"
        "  case \"$rest\" in *' - tmpfs '*) ;; *) continue ;; esac\n"
        "  [ -d \"$mp\" ] && [ -w \"$mp\" ] || continue\n"
        "  rm -f \"$mp\"/.cordon-fill-%s-*\n"
        "  f=\"$mp/.cordon-fill-%s-$$\"; files=\"$files $f\"\n"
        "  dd if=/dev/zero of=\"$f\" bs=%llu count=$fill_left 2>/dev/null\n"
        "  [ -f \"$f\" ] || continue\n"
        "  b=$(wc -c < \"$f\")\n"
        "  echo \"fill $mp $b\"\n"
        "  total=$((total + b)); n=$((n + 1))\n"
        "  fill_left=$((fill_left - (b + %llu - 1) / %llu)); [ $fill_left -gt 0 ] || fill_left=0\n"
        "done < /proc/self/mountinfo\n"
        "echo \"mounts $n\"; echo \"total $total\"\n"
        "%s";
    unsigned long long blocks =
        (budget_bytes + TEST_FILL_MARGIN_BYTES + TEST_FILL_BLOCK_BYTES - 1) / TEST_FILL_BLOCK_BYTES;
    int n = snprintf(NULL, 0, fmt, blocks, tag, tag, TEST_FILL_BLOCK_BYTES, TEST_FILL_BLOCK_BYTES,
                     TEST_FILL_BLOCK_BYTES, then);
    char *text = n >= 0 ? (char *)malloc((size_t)n + 1) : NULL;

    if (text != NULL)
        snprintf(text, (size_t)n + 1, fmt, blocks, tag, tag, TEST_FILL_BLOCK_BYTES,
                 TEST_FILL_BLOCK_BYTES, TEST_FILL_BLOCK_BYTES, then);
    return text;
}

/* The value after "key " at the start of a line of out, -1 when none. */
static inline long long test_fill_value(const char *out, const char *key)
{
    size_t klen = strlen(key);

    for (const char *line = out; line != NULL && *line != '\0';) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
            return atoll(line + klen + 1);
        line = strchr(line, '\n');
        line = line != NULL ? line + 1 : NULL;
    }
    return -1;
}

/* Whether the script filled mountpoint (a line "fill MOUNTPOINT BYTES"). */
static inline int test_fill_has(const char *out, const char *mountpoint)
{
    size_t n = strlen(mountpoint);

    for (const char *line = out; line != NULL && *line != '\0';) {
        if (strncmp(line, "fill ", 5) == 0 && strncmp(line + 5, mountpoint, n) == 0 &&
            line[5 + n] == ' ')
            return 1;
        line = strchr(line, '\n');
        line = line != NULL ? line + 1 : NULL;
    }
    return 0;
}

#endif
