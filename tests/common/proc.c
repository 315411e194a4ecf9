/* Test helper shared by the unit and mechanism suites. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/common/proc.h"

int test_count_processes(const char *needle)
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
        for (ssize_t i = 0; i < n; i++)
            if (cmd[i] == '\0')
                cmd[i] = ' ';
        cmd[n] = '\0';
        if (strstr(cmd, needle) != NULL)
            count++;
    }
    closedir(proc);
    return count;
}
