/* POSIX file helpers shared by the checkpoint container and the event writer. */
#ifndef FRL_IO_FILE_H
#define FRL_IO_FILE_H

#include <stddef.h>

#include "fastrl.h"

/* Write all size bytes, retrying partial writes and EINTR. 0, or the errno of the
 * failure (ENOSPC when write keeps returning 0). */
int frl_write_all(int fd, const void *data, size_t size);

/* Read exactly size bytes, retrying partial reads and EINTR. 0, -1 at an early end of
 * file, or the errno of the failure. */
int frl_read_all(int fd, void *data, size_t size);

/* fsync, retried on EINTR. 0 or errno. */
int frl_fsync(int fd);

/* path, or, where path is a symbolic link, the file it points to (resolved into buf, of
 * PATH_MAX bytes): a save through a link replaces the link's target and keeps the link,
 * as writing through it in place would. A dangling link is path itself (it is replaced). */
const char *frl_file_target(const char *path, char *buf);

/* Replace path with size bytes of data atomically: written to a temporary file beside
 * it (beside a symbolic link's target: frl_file_target), flushed, renamed over it, and
 * the directory synced, so a crash leaves the old file or the new one, never a mix.
 * Errors (FRL_ERR_IO naming the call and the path, FRL_ERR_NOMEM) start with who; the
 * temporary file is removed on failure. */
frl_status frl_file_replace(const frl_allocator *a, const char *path, const void *data,
                            size_t size, const char *who, char *err);

/* frl_file_replace in two halves, for several files that should all change or none:
 * stage each (written and flushed under a temporary name, returned in tmp, which needs
 * strlen(path) + 48 bytes), and commit them once every stage succeeded (rename over
 * path, sync the directory). A failed stage leaves nothing behind; the caller unlinks
 * the files it staged before. */
frl_status frl_file_stage(const char *path, const void *data, size_t size, const char *who,
                          char *tmp, size_t tmp_size, char *err);
frl_status frl_file_commit(const char *tmp, const char *path, const char *who, char *err);
/* frl_file_commit's halves, for files that change together: rename every one, then sync
 * their directories, so that a sync's error (the renames stand) cannot leave some of
 * them unrenamed. A failed rename removes tmp. */
frl_status frl_file_rename(const char *tmp, const char *path, const char *who, char *err);
frl_status frl_file_sync_dir(const char *path, const char *who, char *err);

#endif
