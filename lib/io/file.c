/* POSIX file helpers: loops over partial transfers and EINTR, and atomic replacement. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"
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

static frl_status io_fail(char *err, const char *who, const char *call, const char *path, int e)
{
    return frl_fail(err, FRL_ERR_IO, "%s: %s %s: %s", who, call, path, strerror(e));
}

/* 32 bits no other writer will guess: the kernel's, else the clock's and the address
 * space's. */
static unsigned tmp_salt(void)
{
    unsigned r;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) == (ssize_t)sizeof r)
        return r;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned)ts.tv_nsec ^ (unsigned)(uintptr_t)&ts ^ (unsigned)ts.tv_sec * 2654435761u;
}

/* A new file under a temporary name beside path, into tmp: PATH.tmp.<pid>.<n>.<salt>.
 * O_EXCL never opens what is already there (a link planted in a shared folder, another
 * writer's file: two processes of one pid in two containers on one volume took one
 * name, and the unlink that cleared it removed the other's file mid-save); a taken name
 * is skipped for another. Returns the fd, or -1 with errno. */
static int open_tmp(const char *path, char *tmp, size_t tmp_size, int mode)
{
    static atomic_uint serial; /* two threads saving to one path use different tmp files */
    for (int attempt = 0; attempt < 16; attempt++) {
        if ((size_t)snprintf(tmp, tmp_size, "%s.tmp.%ld.%u.%08x", path, (long)getpid(),
                             atomic_fetch_add(&serial, 1), tmp_salt()) >= tmp_size) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode >= 0 ? 0600 : 0666);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1; /* EEXIST sixteen times */
}

/* Write the image to fd (tmp) and make it durable; on failure tmp is removed. mode >= 0
 * is the permission bits of the file tmp will replace: the new file keeps them (a
 * private checkpoint stays private), and tmp is private until it has them. */
static frl_status write_tmp(int fd, const char *tmp, const void *file, size_t size, int mode,
                            const char *who, char *err)
{
    const char *call = "fchmod";
    int e = mode >= 0 && fchmod(fd, (mode_t)mode) != 0 ? errno : 0;
    if (!e) {
        call = "write";
        e = frl_write_all(fd, file, size);
    }
    if (!e) {
        call = "fsync";
        e = frl_fsync(fd);
    }
    /* close can report a deferred write error (NFS), so its result counts. */
    if (close(fd) != 0 && !e) {
        call = "close";
        e = errno;
    }
    if (e) {
        unlink(tmp);
        return io_fail(err, who, call, tmp, e);
    }
    return FRL_OK;
}

/* fsync the directory holding path, so the rename itself survives a crash. */
static frl_status sync_dir(const char *path, char *dir, const char *who, char *err)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        strcpy(dir, ".");
    else if (slash == path)
        strcpy(dir, "/");
    else {
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash - path] = 0;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    /* A directory the process may write but not read (a drop box) cannot be opened to
     * sync: the rename stands, unsynced, as where its name does not fit (the save is
     * done; failing it, with the new file in place, said the opposite). */
    if (fd < 0 && (errno == EACCES || errno == EPERM))
        return FRL_OK;
    int e = fd < 0 ? errno : frl_fsync(fd);
    if (fd >= 0)
        close(fd);
    /* EINVAL: this file system cannot sync directories; nothing more can be done. */
    if (e && e != EINVAL)
        return frl_fail(err, FRL_ERR_IO,
                        "%s: %s directory %s: %s (the new file is in place at %s but "
                        "may not survive a crash)", who, fd < 0 ? "open" : "fsync", dir,
                        strerror(e), path);
    return FRL_OK;
}

frl_status frl_file_stage(const char *path, const void *data, size_t size, const char *who,
                          char *tmp, size_t tmp_size, char *err)
{
    /* The rename would replace whatever is there: a device node (/dev/full, as root), a
     * FIFO or a directory is the caller's mistake, refused before anything is written
     * (so a C export's later file cannot fail after an earlier one was renamed). */
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode))
        return frl_fail(err, FRL_ERR_IO, "%s: %s is %s, not a regular file: nothing written",
                        who, path,
                        S_ISDIR(st.st_mode) ? "a directory" : "a device or special file");
    /* The replaced file's permission bits, not its setuid, setgid or sticky bit: the
     * new bytes are not what someone marked so. */
    int mode = exists ? (int)(st.st_mode & 0777) : -1;
    int fd = open_tmp(path, tmp, tmp_size, mode);
    if (fd < 0 && errno == ENAMETOOLONG && strlen(tmp) + 1 >= tmp_size)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "%s: the path %s is too long", who, path);
    frl_status s = fd < 0 ? io_fail(err, who, "open", tmp, errno)
                          : write_tmp(fd, tmp, data, size, mode, who, err);
    if (s != FRL_OK) { /* the temporary name alone hid the file the caller asked for */
        char why[FRL_ERRMSG_SIZE];
        snprintf(why, sizeof why, "%s", err);
        frl_fail(err, s, "%s (writing %s)", why, path);
    }
    return s;
}

frl_status frl_file_rename(const char *tmp, const char *path, const char *who, char *err)
{
    if (rename(tmp, path) != 0) {
        frl_status st = frl_fail(err, FRL_ERR_IO, "%s: rename %s to %s: %s", who, tmp, path,
                                 strerror(errno));
        unlink(tmp);
        return st;
    }
    return FRL_OK;
}

frl_status frl_file_sync_dir(const char *path, const char *who, char *err)
{
    /* The directory's name fits in the temporary name's room. */
    char dir[4096];
    if (strlen(path) >= sizeof dir)
        return FRL_OK; /* no room to name it: the rename stands, unsynced */
    return sync_dir(path, dir, who, err);
}

frl_status frl_file_commit(const char *tmp, const char *path, const char *who, char *err)
{
    frl_status st = frl_file_rename(tmp, path, who, err);
    return st == FRL_OK ? frl_file_sync_dir(path, who, err) : st;
}

const char *frl_file_target(const char *path, char *buf)
{
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode))
        return path;
    return realpath(path, buf) ? buf : path;
}

/* The temporary name fits in strlen(path) + 48. */
frl_status frl_file_replace(const frl_allocator *a, const char *path, const void *file,
                            size_t size, const char *who, char *err)
{
    char target[PATH_MAX];
    path = frl_file_target(path, target);
    size_t len = strlen(path) + 48;
    char *tmp = frl_alloc(a, len, 1);
    if (!tmp)
        return frl_fail(err, FRL_ERR_NOMEM, "%s: out of memory", who);
    frl_status st = frl_file_stage(path, file, size, who, tmp, len, err);
    if (st == FRL_OK)
        st = frl_file_commit(tmp, path, who, err);
    frl_free(a, tmp);
    return st;
}
