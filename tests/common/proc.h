/* Test helper shared by the unit and mechanism suites. */
#ifndef CORDON_TEST_COMMON_PROC_H
#define CORDON_TEST_COMMON_PROC_H

#include <stddef.h>
#include <sys/types.h>

/* Live processes whose command line (arguments joined by spaces) contains
 * needle; -1 when /proc cannot be read. */
int test_count_processes(const char *needle);

/* Live processes whose command line, arguments joined by spaces, is
 * exactly cmdline ("sleep 1000.4711" counts the sleeper, not the shell
 * whose script names it); -1 when /proc cannot be read. */
int test_count_command(const char *cmdline);

/* How many of pids still exist, zombies aside; "PID STATE, ..." of those
 * into ret_states (size bytes, cut when full). */
int test_count_alive(const pid_t *pids, int n, char *ret_states, size_t size);

/* A shell prefix that builds /tmp/ino in a sandbox with a C compiler: "hold" takes inotify instances until the
 * per-user limit refuses, writes the count to /tmp/n and waits; "try" prints
 * 1 when it gets one. */
#define TEST_INOTIFY_PROGRAM                                                                         \
    "printf '%s\\n' '#include <stdio.h>' '#include <string.h>' '#include <unistd.h>' "             \
    "'#include <sys/inotify.h>' 'int main(int c, char **v) { int n = 0; FILE *f;' "             \
    "'if (strcmp(v[1], \"try\") == 0) { printf(\"%d\\n\", inotify_init1(0) >= 0); return 0; }' "  \
    "'while (inotify_init1(0) >= 0) n++; f = fopen(\"/tmp/n\", \"w\"); fprintf(f, \"%d\", n);' "    \
    "'fclose(f); sleep(60); return 0; }' > /tmp/ino.c && cc -o /tmp/ino /tmp/ino.c && "

#endif
