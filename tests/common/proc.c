/* Test helper shared by the unit and mechanism suites. */
#include <dirent.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/common/proc.h"

/* Processes whose command line (arguments joined by spaces) contains
 * needle, or is exactly needle. */
static int count_matching(const char *needle, bool exact)
{
    DIR *proc = opendir("/proc");
    struct dirent *de;
    int count = 0;

    if (proc == NULL)
        return -1;
    while ((de = readdir(proc)) != NULL) {
        char path[300], cmd[4096];
        ssize_t n;
        int fd;

        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        n = read(fd, cmd, sizeof(cmd) - 1);
        close(fd);
        if (n <= 0)
            continue;
        if (cmd[n - 1] == '\0')
            n--;
        for (ssize_t i = 0; i < n; i++)
            if (cmd[i] == '\0')
                cmd[i] = ' ';
        cmd[n] = '\0';
        if (exact ? strcmp(cmd, needle) == 0 : strstr(cmd, needle) != NULL)
            count++;
    }
    closedir(proc);
    return count;
}

int test_count_processes(const char *needle)
{
    return count_matching(needle, false);
}

int test_count_command(const char *cmdline)
{
    return count_matching(cmdline, true);
}

int test_count_alive(const pid_t *pids, int n, char *ret_states, size_t size)
{
    size_t used = 0;
    int alive = 0;

    if (size > 0)
        ret_states[0] = '\0';
    for (int i = 0; i < n; i++) {
        char path[64], stat[512], *paren;
        ssize_t got;
        int fd;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pids[i]);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        got = read(fd, stat, sizeof(stat) - 1);
        close(fd);
        stat[got > 0 ? got : 0] = '\0';
        paren = strrchr(stat, ')');
        if (paren == NULL || paren[1] != ' ' || paren[2] == 'Z')
            continue;
        alive++;
        if (used < size) {
            int w = snprintf(ret_states + used, size - used, "%s%d %c", used > 0 ? ", " : "",
                             (int)pids[i], paren[2]);

            used += w > 0 ? (size_t)w : 0;
        }
    }
    return alive;
}
