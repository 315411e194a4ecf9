/* sdk (internal): a small file read whole (see read-small.h). */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "sdk/read-small.h"

ssize_t cordon__fs_read_small(int dirfd, const char *name, char *buf, size_t size)
{
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
    size_t got = 0;
    int saved;

    if (fd < 0)
        return -1;
    while (got + 1 < size) {
        ssize_t n = read(fd, buf + got, size - 1 - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            saved = errno;
            close(fd);
            errno = saved;
            return -1;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    return (ssize_t)got;
}
