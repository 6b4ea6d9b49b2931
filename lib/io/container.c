/* The checkpoint container (layout in container.h).
 *
 * Reading trusts nothing: the header is checked (magic, version, CRC, sizes) before
 * anything is allocated from it, the payload CRC before zstd sees it, and every section
 * header before its data is used. Sizes are compared by subtraction, never by
 * multiplication, so no overflow can let a section reach past the payload. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "core/alloc.h"
#include "core/error.h"
#include "io/container.h"
#include "io/crc32c.h"
#include "io/file.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the container stores section data in host order, which must be little-endian"
#endif

enum {
    HEADER_SIZE = 64,
    SECTION_HEADER_SIZE = 64,
    DATA_ALIGN = 64,
    ZSTD_LEVEL = 3,
};

static const char MAGIC[8] = {'F', 'A', 'S', 'T', 'R', 'L', 'C', 'K'};

struct frl_container {
    frl_allocator alloc;
    int32_t n;
    frl_section *sections;
    unsigned char *payload; /* uncompressed, DATA_ALIGN-aligned; sections point into it */
    char source[160];       /* path (possibly cut short) for find's messages */
};

/* The header fields, decoded. */
typedef struct header {
    uint32_t version, flags, payload_crc, nsections;
    uint64_t raw_size, comp_size;
} header;

/* ---- little-endian fields --------------------------------------------------------- */

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Element size of a dtype; 0 if unknown. */
static size_t dtype_size(uint32_t dtype)
{
    switch (dtype) {
    case FRL_DTYPE_U8:
    case FRL_DTYPE_TEXT:
        return 1;
    case FRL_DTYPE_I32:
    case FRL_DTYPE_F32:
        return 4;
    case FRL_DTYPE_I64:
    case FRL_DTYPE_U64:
    case FRL_DTYPE_F64:
        return 8;
    default:
        return 0;
    }
}

size_t frl_dtype_size(frl_dtype dtype)
{
    return dtype_size((uint32_t)dtype);
}

static const char *dtype_name(uint32_t dtype)
{
    static const char *const names[] = {"?", "u8", "i32", "i64", "u64", "f32", "f64", "text"};
    return dtype < sizeof names / sizeof names[0] ? names[dtype] : "?";
}

static int cmp_section_names(const void *a, const void *b)
{
    const frl_section *x = *(const frl_section *const *)a, *y = *(const frl_section *const *)b;
    return strcmp(x->name, y->name);
}

/* *dup = a name used twice, or NULL. Sorting keeps this O(n log n) for large files. */
static frl_status find_duplicate(const frl_allocator *a, const frl_section *s, int32_t n,
                                 const char **dup)
{
    *dup = NULL;
    if (n < 2)
        return FRL_OK;
    const frl_section **v = frl_alloc(a, (size_t)n * sizeof *v, sizeof *v);
    if (!v)
        return FRL_ERR_NOMEM;
    for (int32_t i = 0; i < n; i++)
        v[i] = &s[i];
    qsort(v, (size_t)n, sizeof *v, cmp_section_names);
    for (int32_t i = 1; i < n && !*dup; i++)
        if (strcmp(v[i - 1]->name, v[i]->name) == 0)
            *dup = v[i]->name;
    frl_free(a, v);
    return FRL_OK;
}

/* ---- writing ---------------------------------------------------------------------- */

/* Check the caller's sections and compute the uncompressed payload size. */
static frl_status check_sections(const frl_section *s, int32_t n, size_t *raw, char *err)
{
    static const char *const who = "frl_container_write";
    size_t total = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!memchr(s[i].name, 0, FRL_SECTION_NAME_MAX) || !s[i].name[0])
            return frl_fail(err, FRL_ERR_INVALID_ARGUMENT,
                            "%s: section %d: name is empty or longer than %d bytes", who,
                            (int)i, FRL_SECTION_NAME_MAX - 1);
        size_t size = dtype_size((uint32_t)s[i].dtype);
        if (!size)
            return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "%s: section \"%s\": unknown dtype %d",
                            who, s[i].name, (int)s[i].dtype);
        if (s[i].count > 0 && !s[i].data)
            return frl_fail(err, FRL_ERR_NULL, "%s: section \"%s\": data is NULL", who,
                            s[i].name);
        /* total <= the limit here, so room cannot wrap; count is compared, not multiplied. */
        size_t room = FRL_CONTAINER_MAX_PAYLOAD - total;
        if (room < SECTION_HEADER_SIZE || s[i].count > (room - SECTION_HEADER_SIZE) / size)
            return frl_fail(err, FRL_ERR_SIZE,
                            "%s: section \"%s\": the payload would exceed the %d-byte limit",
                            who, s[i].name, FRL_CONTAINER_MAX_PAYLOAD);
        total += SECTION_HEADER_SIZE + frl_align_up((size_t)s[i].count * size, DATA_ALIGN);
        if (total > FRL_CONTAINER_MAX_PAYLOAD)
            return frl_fail(err, FRL_ERR_SIZE, "%s: the payload would exceed the %d-byte limit",
                            who, FRL_CONTAINER_MAX_PAYLOAD);
    }
    *raw = total;
    return FRL_OK;
}

/* The index of the first value that is not finite, or count. */
static uint64_t first_nonfinite(const frl_section *s)
{
    for (uint64_t i = 0; i < s->count; i++)
        if (s->dtype == FRL_DTYPE_F32 ? !isfinite(((const float *)s->data)[i])
                                      : !isfinite(((const double *)s->data)[i]))
            return i;
    return s->count;
}

static frl_status check_finite(const frl_section *s, int32_t n, char *err)
{
    for (int32_t i = 0; i < n; i++) {
        if (!s[i].finite || (s[i].dtype != FRL_DTYPE_F32 && s[i].dtype != FRL_DTYPE_F64))
            continue;
        uint64_t at = first_nonfinite(&s[i]);
        if (at < s[i].count)
            return frl_fail(err, FRL_ERR_NONFINITE, "frl_container_write: section \"%s\" holds "
                            "a value that is not finite (element %llu of %llu): nothing was "
                            "written, an earlier file is kept", s[i].name,
                            (unsigned long long)at, (unsigned long long)s[i].count);
    }
    return FRL_OK;
}

/* Lay the sections out in raw (zero-filled, so the padding is zero). */
static void fill_payload(unsigned char *raw, const frl_section *s, int32_t n)
{
    size_t pos = 0;
    for (int32_t i = 0; i < n; i++) {
        unsigned char *h = raw + pos;
        size_t bytes = (size_t)s[i].count * dtype_size((uint32_t)s[i].dtype);
        memcpy(h, s[i].name, strlen(s[i].name));
        put_u32(h + 40, (uint32_t)s[i].dtype);
        put_u64(h + 48, s[i].count);
        put_u64(h + 56, pos + SECTION_HEADER_SIZE);
        if (bytes)
            memcpy(h + SECTION_HEADER_SIZE, s[i].data, bytes);
        pos += SECTION_HEADER_SIZE + frl_align_up(bytes, DATA_ALIGN);
    }
}

static void fill_header(unsigned char *h, size_t raw_size, size_t comp_size, int32_t n)
{
    memcpy(h, MAGIC, sizeof MAGIC);
    put_u32(h + 8, FRL_CONTAINER_VERSION);
    put_u32(h + 12, 0);
    put_u64(h + 16, raw_size);
    put_u64(h + 24, comp_size);
    put_u32(h + 32, frl_crc32c(0, h + HEADER_SIZE, comp_size));
    put_u32(h + 36, (uint32_t)n);
    memset(h + 40, 0, 20);
    put_u32(h + 60, frl_crc32c(0, h, 60));
}

static frl_status zstd_failure(char *err, size_t code, const char *what)
{
    frl_status st = ZSTD_getErrorCode(code) == ZSTD_error_memory_allocation ? FRL_ERR_NOMEM
                                                                              : FRL_ERR_INTERNAL;
    return frl_fail(err, st, "frl_container_write: zstd %s failed: %s", what,
                    ZSTD_getErrorName(code));
}

/* The whole file image: header and compressed payload, in *file (*size bytes). */
static frl_status encode(const frl_allocator *a, const frl_section *s, int32_t n,
                         size_t raw_size, unsigned char **file, size_t *size, char *err)
{
    size_t bound = ZSTD_compressBound(raw_size);
    unsigned char *raw = frl_alloc(a, raw_size, DATA_ALIGN);
    unsigned char *out = raw ? frl_alloc(a, HEADER_SIZE + bound, DATA_ALIGN) : NULL;
    if (!out) {
        frl_free(a, raw);
        return frl_fail(err, FRL_ERR_NOMEM, "frl_container_write: out of memory for a %zu-byte "
                        "payload", raw_size);
    }
    fill_payload(raw, s, n);
    size_t comp = ZSTD_compress(out + HEADER_SIZE, bound, raw, raw_size, ZSTD_LEVEL);
    frl_free(a, raw);
    if (ZSTD_isError(comp)) {
        frl_free(a, out);
        return zstd_failure(err, comp, "compression");
    }
    fill_header(out, raw_size, comp, n);
    *file = out;
    *size = HEADER_SIZE + comp;
    return FRL_OK;
}

frl_status frl_container_write(const char *path, const frl_allocator *alloc,
                               const frl_section *sections, int32_t n, char *err)
{
    if (!path || (n > 0 && !sections))
        return frl_fail(err, FRL_ERR_NULL, "frl_container_write: %s is NULL",
                        path ? "sections" : "path");
    if (n < 0)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "frl_container_write: n = %d < 0",
                        (int)n);
    if (!path[0]) /* else a whole file is written as ".tmp.<pid>.<n>", then not renamed */
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "frl_container_write: the path is empty");
    frl_allocator a;
    frl_status st = frl_allocator_copy(&a, alloc, "frl_container_write");
    if (st != FRL_OK)
        return frl_fail(err, st, "%s", frl_last_error());
    size_t raw_size = 0;
    st = check_sections(sections, n, &raw_size, err);
    if (st == FRL_OK)
        st = check_finite(sections, n, err);
    if (st != FRL_OK)
        return st;
    /* After check_sections: names are known to be NUL-terminated here. */
    const char *dup = NULL;
    if (find_duplicate(&a, sections, n, &dup) != FRL_OK)
        return frl_fail(err, FRL_ERR_NOMEM, "frl_container_write: out of memory");
    if (dup)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT,
                        "frl_container_write: two sections are named \"%s\"", dup);
    unsigned char *file = NULL;
    size_t size = 0;
    st = encode(&a, sections, n, raw_size, &file, &size, err);
    if (st != FRL_OK)
        return st;
    st = frl_file_replace(&a, path, file, size, "frl_container_write", err);
    frl_free(&a, file);
    return st;
}

/* ---- reading ---------------------------------------------------------------------- */

/* Check the header. h holds min(total, 64) bytes of a file of total bytes; src names
 * the file in messages. */
static frl_status check_header(const char *src, const unsigned char *h, size_t total,
                               header *hd, char *err)
{
    if (total == 0)
        return frl_fail(err, FRL_ERR_FORMAT, "%s: empty file, not a fastrl checkpoint", src);
    if (memcmp(h, MAGIC, total < sizeof MAGIC ? total : sizeof MAGIC) != 0)
        return frl_fail(err, FRL_ERR_FORMAT,
                        "%s: not a fastrl checkpoint (no FASTRLCK magic at the start)", src);
    if (total < HEADER_SIZE)
        return frl_fail(err, FRL_ERR_FORMAT,
                        "%s: truncated: %zu bytes, less than the %d-byte header", src, total,
                        HEADER_SIZE);
    hd->version = get_u32(h + 8);
    int crc_ok = get_u32(h + 60) == frl_crc32c(0, h, 60);
    /* Before the CRC: a newer version may lay its header out differently. So a flipped
     * version bit reads as a newer version too; the message says which it may be. */
    if (hd->version > FRL_CONTAINER_VERSION)
        return frl_fail(err, FRL_ERR_VERSION,
                        "%s: checkpoint format version %u is newer than this libfastrl reads "
                        "(up to %d)%s", src, hd->version, FRL_CONTAINER_VERSION,
                        crc_ok ? "" : ", or the header is corrupted (its checksum, as this "
                                      "version lays it out, does not match)");
    if (!crc_ok)
        return frl_fail(err, FRL_ERR_FORMAT, "%s: header checksum mismatch (corrupted file)",
                        src);
    hd->flags = get_u32(h + 12);
    hd->raw_size = get_u64(h + 16);
    hd->comp_size = get_u64(h + 24);
    hd->payload_crc = get_u32(h + 32);
    hd->nsections = get_u32(h + 36);
    static const unsigned char zero[20];
    if (hd->version == 0 || hd->flags != 0 || memcmp(h + 40, zero, sizeof zero) != 0)
        return frl_fail(err, FRL_ERR_FORMAT,
                        "%s: bad header (version %u, flags 0x%x, or reserved bytes not zero)",
                        src, hd->version, hd->flags);
    return FRL_OK;
}

/* The header's sizes against the file size and the limits. */
static frl_status check_sizes(const char *src, const header *hd, size_t total, char *err)
{
    if (hd->raw_size > FRL_CONTAINER_MAX_PAYLOAD)
        return frl_fail(err, FRL_ERR_FORMAT, "%s: payload of %llu bytes exceeds the %d-byte "
                        "limit", src, (unsigned long long)hd->raw_size,
                        FRL_CONTAINER_MAX_PAYLOAD);
    if (hd->comp_size > ZSTD_compressBound((size_t)hd->raw_size))
        return frl_fail(err, FRL_ERR_FORMAT, "%s: compressed size %llu is impossible for %llu "
                        "bytes", src, (unsigned long long)hd->comp_size,
                        (unsigned long long)hd->raw_size);
    if (total - HEADER_SIZE != hd->comp_size)
        return frl_fail(err, FRL_ERR_FORMAT, "%s: %s: %zu bytes, the header says %llu", src,
                        total - HEADER_SIZE < hd->comp_size ? "truncated" : "trailing bytes",
                        total, (unsigned long long)(HEADER_SIZE + hd->comp_size));
    if (hd->nsections > hd->raw_size / SECTION_HEADER_SIZE)
        return frl_fail(err, FRL_ERR_FORMAT, "%s: %u sections cannot fit in %llu bytes", src,
                        hd->nsections, (unsigned long long)hd->raw_size);
    return FRL_OK;
}

/* Verify and decompress the payload into c->payload. */
static frl_status decode_payload(frl_container *c, const char *src, const header *hd,
                                 const unsigned char *comp, char *err)
{
    size_t csize = (size_t)hd->comp_size, rsize = (size_t)hd->raw_size;
    if (frl_crc32c(0, comp, csize) != hd->payload_crc)
        return frl_fail(err, FRL_ERR_FORMAT, "%s: payload checksum mismatch (corrupted file)",
                        src);
    unsigned long long fcs = ZSTD_getFrameContentSize(comp, csize);
    if (fcs != hd->raw_size)
        return frl_fail(err, FRL_ERR_FORMAT, "%s: payload is not one zstd frame of %zu bytes",
                        src, rsize);
    size_t frame = ZSTD_findFrameCompressedSize(comp, csize);
    if (ZSTD_isError(frame) || frame != csize)
        return frl_fail(err, FRL_ERR_FORMAT, "%s: payload is not exactly one zstd frame", src);
    c->payload = frl_alloc(&c->alloc, rsize, DATA_ALIGN);
    if (!c->payload)
        return frl_fail(err, FRL_ERR_NOMEM, "%s: out of memory for a %zu-byte payload", src,
                        rsize);
    size_t got = ZSTD_decompress(c->payload, rsize, comp, csize);
    if (ZSTD_isError(got) && ZSTD_getErrorCode(got) == ZSTD_error_memory_allocation)
        return frl_fail(err, FRL_ERR_NOMEM, "%s: out of memory in zstd", src);
    if (ZSTD_isError(got) || got != rsize)
        return frl_fail(err, FRL_ERR_FORMAT, "%s: payload does not decompress: %s", src,
                        ZSTD_isError(got) ? ZSTD_getErrorName(got) : "wrong size");
    return FRL_OK;
}

/* Check section i's header at c->payload + *pos and record it; *pos moves past its
 * data. Offsets must be aligned, after the header, and in order. */
static frl_status parse_section(frl_container *c, const char *src, int32_t i, size_t raw,
                                size_t *pos, char *err)
{
    if (*pos > raw || raw - *pos < SECTION_HEADER_SIZE)
        return frl_fail(err, FRL_ERR_FORMAT, "%s: section %d's header runs past the payload",
                        src, (int)i);
    const unsigned char *h = c->payload + *pos;
    frl_section *s = &c->sections[i];
    if (!memchr(h, 0, FRL_SECTION_NAME_MAX) || !h[0])
        return frl_fail(err, FRL_ERR_FORMAT, "%s: section %d's name is empty or not "
                        "NUL-terminated", src, (int)i);
    memcpy(s->name, h, FRL_SECTION_NAME_MAX);
    uint32_t dtype = get_u32(h + 40);
    size_t size = dtype_size(dtype);
    if (!size || get_u32(h + 44) != 0)
        return frl_fail(err, FRL_ERR_FORMAT, "%s: section \"%s\": unknown dtype %u or reserved "
                        "field not zero", src, s->name, dtype);
    uint64_t count = get_u64(h + 48), off = get_u64(h + 56);
    if (off % DATA_ALIGN || off < *pos + SECTION_HEADER_SIZE || off > raw)
        return frl_fail(err, FRL_ERR_FORMAT, "%s: section \"%s\": data offset %llu is "
                        "misaligned, out of order or past the payload", src, s->name,
                        (unsigned long long)off);
    if (count > (raw - off) / size)
        return frl_fail(err, FRL_ERR_FORMAT, "%s: section \"%s\": %llu elements run past the "
                        "payload", src, s->name, (unsigned long long)count);
    s->dtype = (frl_dtype)dtype;
    s->count = count;
    s->data = c->payload + off;
    *pos = frl_align_up((size_t)off + (size_t)count * size, DATA_ALIGN);
    return FRL_OK;
}

static frl_status parse_sections(frl_container *c, const char *src, const header *hd,
                                 char *err)
{
    c->n = (int32_t)hd->nsections; /* at most 2^24: bounded by raw_size / 64 */
    c->sections = frl_alloc(&c->alloc, (size_t)c->n * sizeof *c->sections, 8);
    if (!c->sections)
        return frl_fail(err, FRL_ERR_NOMEM, "%s: out of memory for %d sections", src, (int)c->n);
    size_t pos = 0, raw = (size_t)hd->raw_size;
    for (int32_t i = 0; i < c->n; i++) {
        frl_status st = parse_section(c, src, i, raw, &pos, err);
        if (st != FRL_OK)
            return st;
    }
    if (pos != raw)
        return frl_fail(err, FRL_ERR_FORMAT, "%s: the payload has %zu bytes, its sections end "
                        "at %zu", src, raw, pos);
    const char *dup = NULL;
    if (find_duplicate(&c->alloc, c->sections, c->n, &dup) != FRL_OK)
        return frl_fail(err, FRL_ERR_NOMEM, "%s: out of memory", src);
    if (dup)
        return frl_fail(err, FRL_ERR_FORMAT, "%s: two sections are named \"%s\"", src, dup);
    return FRL_OK;
}

static frl_status new_container(frl_container **c, const char *src, const frl_allocator *alloc,
                                const char *who, char *err)
{
    frl_allocator a;
    frl_status st = frl_allocator_copy(&a, alloc, who);
    if (st != FRL_OK)
        return frl_fail(err, st, "%s", frl_last_error());
    *c = frl_alloc(&a, sizeof **c, 8);
    if (!*c)
        return frl_fail(err, FRL_ERR_NOMEM, "%s: out of memory", who);
    (*c)->alloc = a;
    snprintf((*c)->source, sizeof (*c)->source, "%s", src);
    return FRL_OK;
}

/* Everything after the header: payload and sections. Frees c on failure. */
static frl_status finish(frl_container **out, frl_container *c, const header *hd,
                         const unsigned char *comp, char *err)
{
    frl_status st = decode_payload(c, c->source, hd, comp, err);
    if (st == FRL_OK)
        st = parse_sections(c, c->source, hd, err);
    if (st != FRL_OK) {
        frl_container_free(c);
        return st;
    }
    *out = c;
    return FRL_OK;
}

frl_status frl_container_parse(frl_container **out, const void *bytes, size_t size,
                               const frl_allocator *alloc, char *err)
{
    if (!out || (!bytes && size))
        return frl_fail(err, FRL_ERR_NULL, "frl_container_parse: %s is NULL",
                        out ? "bytes" : "out");
    *out = NULL;
    static const char *const src = "checkpoint buffer";
    header hd;
    frl_status st = check_header(src, bytes, size, &hd, err);
    if (st == FRL_OK)
        st = check_sizes(src, &hd, size, err);
    frl_container *c = NULL;
    if (st == FRL_OK)
        st = new_container(&c, src, alloc, "frl_container_parse", err);
    if (st != FRL_OK)
        return st;
    return finish(out, c, &hd, (const unsigned char *)bytes + HEADER_SIZE, err);
}

/* Read the header of the open file fd of total bytes and the compressed payload into
 * *comp (allocated from c's allocator). */
static frl_status read_file(int fd, frl_container *c, size_t total, header *hd,
                            unsigned char **comp, char *err)
{
    const char *src = c->source;
    unsigned char h[HEADER_SIZE];
    size_t head = total < HEADER_SIZE ? total : HEADER_SIZE;
    int e = frl_read_all(fd, h, head);
    frl_status st = FRL_OK;
    if (e)
        return frl_fail(err, e < 0 ? FRL_ERR_FORMAT : FRL_ERR_IO, "%s: read: %s", src,
                        e < 0 ? "the file shrank while being read" : strerror(e));
    st = check_header(src, h, total, hd, err);
    if (st == FRL_OK)
        st = check_sizes(src, hd, total, err);
    if (st != FRL_OK)
        return st;
    *comp = frl_alloc(&c->alloc, (size_t)hd->comp_size, DATA_ALIGN);
    if (!*comp)
        return frl_fail(err, FRL_ERR_NOMEM, "%s: out of memory for %llu bytes", src,
                        (unsigned long long)hd->comp_size);
    e = frl_read_all(fd, *comp, (size_t)hd->comp_size);
    if (e)
        return frl_fail(err, e < 0 ? FRL_ERR_FORMAT : FRL_ERR_IO, "%s: read: %s", src,
                        e < 0 ? "the file shrank while being read" : strerror(e));
    return FRL_OK;
}

/* Open path as a regular file; *total is its size. */
static frl_status open_file(const char *path, int *fd, size_t *total, char *err)
{
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; regular files ignore it. */
    *fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (*fd < 0)
        return frl_fail(err, FRL_ERR_IO, "frl_container_read: open %s: %s", path,
                        strerror(errno));
    struct stat st;
    int bad = fstat(*fd, &st) != 0 ? errno : 0;
    if (bad || !S_ISREG(st.st_mode)) {
        close(*fd);
        return frl_fail(err, FRL_ERR_IO, "frl_container_read: %s: %s", path,
                        bad ? strerror(bad) : "not a regular file");
    }
    *total = (size_t)st.st_size;
    return FRL_OK;
}

frl_status frl_container_read(frl_container **out, const char *path,
                              const frl_allocator *alloc, char *err)
{
    if (!out || !path)
        return frl_fail(err, FRL_ERR_NULL, "frl_container_read: %s is NULL",
                        out ? "path" : "out");
    *out = NULL;
    if (!path[0])
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "frl_container_read: the path is empty");
    int fd = -1;
    size_t total = 0;
    frl_status st = open_file(path, &fd, &total, err);
    if (st != FRL_OK)
        return st;
    frl_container *c = NULL;
    st = new_container(&c, path, alloc, "frl_container_read", err);
    header hd;
    unsigned char *comp = NULL;
    if (st == FRL_OK)
        st = read_file(fd, c, total, &hd, &comp, err);
    close(fd);
    if (st == FRL_OK) {
        frl_allocator a = c->alloc; /* finish frees c on failure */
        st = finish(out, c, &hd, comp, err);
        frl_free(&a, comp);
        return st;
    }
    if (c) {
        frl_free(&c->alloc, comp);
        frl_container_free(c);
    }
    return st;
}

void frl_container_free(frl_container *c)
{
    if (!c)
        return;
    frl_allocator a = c->alloc;
    frl_free(&a, c->sections);
    frl_free(&a, c->payload);
    frl_free(&a, c);
}

int32_t frl_container_count(const frl_container *c)
{
    return c ? c->n : 0;
}

const frl_section *frl_container_at(const frl_container *c, int32_t i)
{
    return c && i >= 0 && i < c->n ? &c->sections[i] : NULL;
}

static const frl_section *section_named(const frl_container *c, const char *name)
{
    for (int32_t i = 0; i < c->n; i++)
        if (strcmp(c->sections[i].name, name) == 0)
            return &c->sections[i];
    return NULL;
}

const frl_section *frl_container_optional(const frl_container *c, const char *name,
                                          frl_dtype dtype, int64_t count)
{
    const frl_section *s = c && name ? section_named(c, name) : NULL;
    return s && s->dtype == dtype && (count < 0 || s->count == (uint64_t)count) ? s : NULL;
}

const frl_section *frl_container_find(const frl_container *c, const char *name,
                                      frl_dtype dtype, int64_t count, char *err)
{
    if (!c || !name) {
        frl_fail(err, FRL_ERR_NULL, "frl_container_find: %s is NULL", c ? "name" : "container");
        return NULL;
    }
    const frl_section *s = section_named(c, name);
    if (!s)
        frl_fail(err, FRL_ERR_FORMAT, "%s: no section \"%s\"", c->source, name);
    else if (s->dtype != dtype)
        frl_fail(err, FRL_ERR_FORMAT, "%s: section \"%s\" is %s, expected %s", c->source, name,
                 dtype_name(s->dtype), dtype_name(dtype));
    else if (count >= 0 && s->count != (uint64_t)count)
        frl_fail(err, FRL_ERR_FORMAT, "%s: section \"%s\" has %llu elements, expected %lld",
                 c->source, name, (unsigned long long)s->count, (long long)count);
    else
        return s;
    return NULL;
}

void frl_section_add(frl_section *s, int32_t *n, const char *name, frl_dtype dtype,
                     uint64_t count, const void *data)
{
    frl_section *x = &s[(*n)++];
    memset(x, 0, sizeof *x);
    snprintf(x->name, sizeof x->name, "%s", name);
    x->dtype = dtype;
    x->count = count;
    x->data = data;
}

void frl_section_add_finite(frl_section *s, int32_t *n, const char *name, frl_dtype dtype,
                            uint64_t count, const void *data)
{
    frl_section_add(s, n, name, dtype, count, data);
    s[*n - 1].finite = 1;
}
