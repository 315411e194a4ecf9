/* Test helper shared by the mechanism suites and the contract: how much a sandbox can store. */
#ifndef CORDON_TEST_COMMON_FILL_H
#define CORDON_TEST_COMMON_FILL_H

#include <stdlib.h>
#include <string.h>

/*
 * A shell script (POSIX sh, dd, wc) that writes zeros into every tmpfs of
 * the sandbox its user can write to, each until the kernel says no, and
 * keeps every file until all are full: what the sandbox can store at once.
 * Prints "fill MOUNTPOINT BYTES" per mount, then "mounts N" and "total
 * BYTES", and removes the files again.
 */
#define TEST_FILL_TMPFS_SCRIPT                                                                 \
    "total=0; n=0; files=''\n"                                                                 \
    "while read -r _ _ _ _ mp rest; do\n"                                                      \
    "  case \"$rest\" in *' - tmpfs '*) ;; *) continue ;; esac\n"                              \
    "  [ -d \"$mp\" ] && [ -w \"$mp\" ] || continue\n"                                         \
    "  f=\"$mp/.cordon-fill-$$\"\n"                                                            \
    "  dd if=/dev/zero of=\"$f\" bs=65536 2>/dev/null\n"                                       \
    "  [ -f \"$f\" ] || continue\n"                                                            \
    "  b=$(wc -c < \"$f\")\n"                                                                  \
    "  echo \"fill $mp $b\"\n"                                                                 \
    "  files=\"$files $f\"; total=$((total + b)); n=$((n + 1))\n"                              \
    "done < /proc/self/mountinfo\n"                                                            \
    "echo \"mounts $n\"; echo \"total $total\"\n"                                              \
    "rm -f $files\n"

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
