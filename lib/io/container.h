/* The checkpoint container: named, typed arrays in one zstd-compressed, checksummed
 * file, written atomically.
 *
 * File layout (little-endian), format version 1:
 *   header (64 bytes): magic "FASTRLCK", u32 format version, u32 flags (0),
 *     u64 payload size uncompressed, u64 payload size compressed,
 *     u32 CRC32C of the compressed payload, u32 section count, 20 reserved zero bytes,
 *     u32 CRC32C of the 60 bytes before it;
 *   payload: one zstd frame; uncompressed it is, per section, a 64-byte section header
 *     (name, NUL-padded, 40 bytes; u32 dtype; u32 reserved; u64 count; u64 byte offset
 *     of the data from the start of the uncompressed payload) and then the data, each
 *     section's data aligned to 64 bytes.
 *
 * Saving writes PATH.tmp.<pid>.<serial>.<salt>, fsyncs it, renames it over PATH and fsyncs the
 * directory, so a crash at any point leaves either the old or the new file, complete.
 * A process killed mid-save (SIGKILL, power loss) can leave its PATH.tmp.* file behind;
 * reading never looks at those, and removing them is the application's choice.
 * Section data is stored in host order; the library builds only on little-endian hosts.
 * The reader accepts gaps between a section header and its data (offsets need only be
 * 64-byte aligned and in order); the writer leaves none. */
#ifndef FRL_IO_CONTAINER_H
#define FRL_IO_CONTAINER_H

#include <stddef.h>
#include <stdint.h>

#include "fastrl.h"

/* FRL_CONTAINER_MAX_PAYLOAD caps the uncompressed payload (1 GiB), for the writer and
 * the reader alike, so a corrupted header cannot make the reader allocate more. */
enum {
    FRL_CONTAINER_VERSION = 1,
    FRL_SECTION_NAME_MAX = 40,
    FRL_CONTAINER_MAX_PAYLOAD = 1 << 30
};

typedef enum frl_dtype {
    FRL_DTYPE_U8 = 1,
    FRL_DTYPE_I32 = 2,
    FRL_DTYPE_I64 = 3,
    FRL_DTYPE_U64 = 4,
    FRL_DTYPE_F32 = 5,
    FRL_DTYPE_F64 = 6,
    FRL_DTYPE_TEXT = 7 /* UTF-8 bytes, count = length, no NUL */
} frl_dtype;

typedef struct frl_section {
    char name[FRL_SECTION_NAME_MAX]; /* NUL-terminated, unique in a file */
    frl_dtype dtype;
    uint64_t count;   /* elements */
    const void *data; /* count elements of dtype */
    int finite;       /* F32/F64 whose reader refuses NaN and infinity: so does the writer */
} frl_section;

/* Bytes of one element of dtype; 0 if unknown. */
size_t frl_dtype_size(frl_dtype dtype);

/* Append a section to s[*n] and count it (the name is copied, the data is not). */
void frl_section_add(frl_section *s, int32_t *n, const char *name, frl_dtype dtype,
                     uint64_t count, const void *data);

/* The same for a section that must be finite: frl_container_write then refuses, with
 * FRL_ERR_NONFINITE and nothing written, a file its reader would refuse (a diverged
 * run's optimiser state must not replace the last good checkpoint). */
void frl_section_add_finite(frl_section *s, int32_t *n, const char *name, frl_dtype dtype,
                            uint64_t count, const void *data);

/* Write sections[0..n) to path atomically. On failure returns FRL_ERR_IO (naming the
 * system call and errno text) or FRL_ERR_NOMEM, writes the message to err
 * (FRL_ERRMSG_SIZE bytes), removes the temporary file, and leaves an existing file at
 * path untouched. The one exception is the last step: if fsync of the directory fails,
 * the rename has already happened, so path holds the new, complete file, which a crash
 * might still undo; the call returns FRL_ERR_IO saying so. Bad sections (empty, long or
 * duplicate names, unknown dtype, NULL data) are FRL_ERR_INVALID_ARGUMENT or
 * FRL_ERR_NULL; a payload over FRL_CONTAINER_MAX_PAYLOAD is FRL_ERR_SIZE. */
frl_status frl_container_write(const char *path, const frl_allocator *alloc,
                               const frl_section *sections, int32_t n, char *err);

typedef struct frl_container frl_container;

/* Read and verify a whole file. FRL_ERR_IO (cannot open/read), FRL_ERR_FORMAT (not a
 * fastrl file, truncated, checksum mismatch, malformed sections), FRL_ERR_VERSION
 * (a newer format version), FRL_ERR_NOMEM; the message says which and where. Also
 * usable on a memory buffer (frl_container_parse), for the fuzzer. */
frl_status frl_container_read(frl_container **out, const char *path,
                              const frl_allocator *alloc, char *err);
frl_status frl_container_parse(frl_container **out, const void *bytes, size_t size,
                               const frl_allocator *alloc, char *err);
void frl_container_free(frl_container *c);

int32_t frl_container_count(const frl_container *c);
const frl_section *frl_container_at(const frl_container *c, int32_t i);

/* The section called name with that dtype and, if count >= 0, that many elements;
 * otherwise NULL with FRL_ERR_FORMAT's message in err naming what is missing or
 * which of dtype/count differs. Data pointers are 64-byte aligned. */
const frl_section *frl_container_find(const frl_container *c, const char *name,
                                      frl_dtype dtype, int64_t count, char *err);

/* A section that files may lack (older files, settings that save none): as find, but
 * NULL without any message where it is absent or not of that dtype and count, so a load
 * that succeeds leaves the thread's last error as it was. */
const frl_section *frl_container_optional(const frl_container *c, const char *name,
                                          frl_dtype dtype, int64_t count);

#endif
