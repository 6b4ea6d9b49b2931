/* POSIX file helpers: loops over partial transfers and EINTR. */
#include <errno.h>
#include <unistd.h>

#include "io/file.h"

int frl_write_all(int fd, const void *data, size_t size)
{
    const char *p = data;
    while (size > 0) {
        ssize_t n = write(fd, p, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno;
        if (n == 0)
            return ENOSPC; /* no progress and no error: do not spin */
        p += n;
        size -= (size_t)n;
    }
    return 0;
}

int frl_read_all(int fd, void *data, size_t size)
{
    char *p = data;
    while (size > 0) {
        ssize_t n = read(fd, p, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno;
        if (n == 0)
            return -1;
        p += n;
        size -= (size_t)n;
    }
    return 0;
}

int frl_fsync(int fd)
{
    int rc;
    do
        rc = fsync(fd);
    while (rc != 0 && errno == EINTR);
    return rc == 0 ? 0 : errno;
}
