/* Test helpers that build checkpoint files by hand, around any uncompressed payload,
 * with correct checksums: a file that passes every CRC but is malformed inside is the
 * only way to reach the section parser, since random damage is caught by the CRCs.
 * Header-only; used by tests/io/test_container.c and tests/fuzz/make_corpus.c. */
#ifndef FRL_TESTS_CKPT_FORGE_H
#define FRL_TESTS_CKPT_FORGE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "io/crc32c.h"

enum { FORGE_HEADER = 64, FORGE_SECTION = 64 };

static inline void forge_put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline void forge_put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint32_t forge_get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t forge_get64(const unsigned char *p)
{
    return (uint64_t)forge_get32(p) | (uint64_t)forge_get32(p + 4) << 32;
}

/* Recompute the payload CRC (over everything after the header) and the header CRC. */
static inline void forge_seal(unsigned char *file, size_t size)
{
    forge_put32(file + 32, frl_crc32c(0, file + FORGE_HEADER, size - FORGE_HEADER));
    forge_put32(file + 60, frl_crc32c(0, file, 60));
}

/* Only the header CRC, after patching a header field. */
static inline void forge_seal_header(unsigned char *file)
{
    forge_put32(file + 60, frl_crc32c(0, file, 60));
}

/* A version-1 file around raw[0..raw_size) claiming nsections, checksums correct.
 * malloc'd; NULL only if out of memory. */
static inline unsigned char *forge_file(const void *raw, size_t raw_size, uint32_t nsections,
                                        size_t *size)
{
    *size = 0;
    size_t bound = ZSTD_compressBound(raw_size);
    unsigned char *f = calloc(1, FORGE_HEADER + bound);
    if (!f)
        return NULL;
    size_t comp = ZSTD_compress(f + FORGE_HEADER, bound, raw, raw_size, 3);
    if (ZSTD_isError(comp)) {
        free(f);
        return NULL;
    }
    memcpy(f, "FASTRLCK", 8);
    forge_put32(f + 8, 1);
    forge_put64(f + 16, raw_size);
    forge_put64(f + 24, comp);
    forge_put32(f + 36, nsections);
    *size = FORGE_HEADER + comp;
    forge_seal(f, *size);
    return f;
}

/* A section header at p. */
static inline void forge_section(unsigned char *p, const char *name, uint32_t dtype,
                                 uint64_t count, uint64_t offset)
{
    memset(p, 0, FORGE_SECTION);
    memcpy(p, name, strlen(name) < 40 ? strlen(name) : 40);
    forge_put32(p + 40, dtype);
    forge_put64(p + 48, count);
    forge_put64(p + 56, offset);
}

/* The uncompressed payload of a valid file (malloc'd, *raw_size bytes), or NULL. */
static inline unsigned char *forge_unpack(const unsigned char *file, size_t size,
                                          size_t *raw_size)
{
    *raw_size = 0;
    if (size < FORGE_HEADER)
        return NULL;
    size_t n = (size_t)forge_get64(file + 16);
    unsigned char *raw = malloc(n ? n : 1);
    if (raw && ZSTD_decompress(raw, n, file + FORGE_HEADER, size - FORGE_HEADER) != n) {
        free(raw);
        return NULL;
    }
    *raw_size = n;
    return raw;
}

static inline unsigned char *forge_read(const char *path, size_t *size)
{
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char *buf = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (n == cap) {
            unsigned char *b = realloc(buf, cap = cap ? 2 * cap : 4096);
            if (!b)
                break;
            buf = b;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    fclose(f);
    *size = n;
    return buf ? buf : malloc(1);
}

static inline int forge_write(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t put = size ? fwrite(data, 1, size, f) : 0;
    return fclose(f) == 0 && put == size ? 0 : -1;
}

#endif
