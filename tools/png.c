/* The PNG writer (png.h): signature, IHDR, one IDAT holding a zlib stream of stored
 * deflate blocks (RFC 1950/1951), IEND. Each chunk ends with the CRC-32 of its type
 * and data (the PNG polynomial, table-driven); the zlib stream with Adler-32. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "png.h"

static uint32_t crc_table[256];

static void make_crc_table(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

static uint32_t crc_update(uint32_t crc, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return crc;
}

static void be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static int chunk(FILE *f, const char *type, const uint8_t *data, size_t n)
{
    uint8_t head[8], tail[4];
    be32(head, (uint32_t)n);
    memcpy(head + 4, type, 4);
    uint32_t crc = crc_update(0xffffffffu, head + 4, 4);
    be32(tail, crc_update(crc, data, n) ^ 0xffffffffu);
    return fwrite(head, 1, 8, f) == 8 && fwrite(data, 1, n, f) == n &&
                   fwrite(tail, 1, 4, f) == 4 ? 0 : -1;
}

/* The image data: each row a filter byte (0, none) and its pixels. */
static uint8_t *raw_rows(const uint8_t *px, int32_t w, int32_t h, int32_t ch, size_t *n)
{
    size_t row = (size_t)w * (size_t)ch;
    *n = (row + 1) * (size_t)h;
    uint8_t *raw = malloc(*n);
    for (int32_t y = 0; raw && y < h; y++) {
        raw[(row + 1) * (size_t)y] = 0;
        memcpy(raw + (row + 1) * (size_t)y + 1, px + row * (size_t)y, row);
    }
    return raw;
}

/* A zlib stream of stored blocks of at most 65,535 bytes. */
static uint8_t *zlib_stored(const uint8_t *raw, size_t n, size_t *out_n)
{
    size_t blocks = n / 65535 + 1;
    uint8_t *z = malloc(2 + n + 5 * blocks + 4);
    if (!z)
        return NULL;
    size_t o = 0;
    z[o++] = 0x78; /* deflate, 32 KiB window */
    z[o++] = 0x01; /* no preset dictionary; 0x7801 is a multiple of 31 */
    uint32_t a = 1, b = 0;
    for (size_t i = 0; i < n; i++) {
        a = (a + raw[i]) % 65521u;
        b = (b + a) % 65521u;
    }
    for (size_t done = 0, k = 0; k < blocks; k++) {
        size_t len = n - done < 65535 ? n - done : 65535;
        z[o++] = k + 1 == blocks; /* BFINAL on the last; BTYPE 00, stored */
        z[o++] = (uint8_t)len;
        z[o++] = (uint8_t)(len >> 8);
        z[o++] = (uint8_t)~len;
        z[o++] = (uint8_t)(~len >> 8);
        memcpy(z + o, raw + done, len);
        o += len;
        done += len;
    }
    be32(z + o, (b << 16) | a);
    *out_n = o + 4;
    return z;
}

/* The name the file is written under: beside path, renamed over it once whole, so a
 * failed write (a full disk) leaves what path held; "" to write path in place when it
 * is not a plain file (/dev/stdout, a FIFO, a link to follow). 0, or -1 with errno. */
static int staging_name(const char *path, char *tmp, size_t size)
{
    struct stat st;
    tmp[0] = '\0';
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return 0;
    int n = snprintf(tmp, size, "%s.tmp.%ld", path, (long)getpid());
    if (n < 0 || (size_t)n >= size) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

static int write_file(FILE *f, const uint8_t *ihdr, const uint8_t *z, size_t z_n)
{
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    return fwrite(sig, 1, 8, f) == 8 && chunk(f, "IHDR", ihdr, 13) == 0 &&
                   chunk(f, "IDAT", z, z_n) == 0 && chunk(f, "IEND", ihdr, 0) == 0 ? 0 : -1;
}

int png_write(const char *path, const uint8_t *pixels, int32_t width, int32_t height,
              int32_t channels)
{
    uint8_t ihdr[13];
    be32(ihdr, (uint32_t)width);
    be32(ihdr + 4, (uint32_t)height);
    ihdr[8] = 8;                    /* bits a sample */
    ihdr[9] = channels == 1 ? 0 : 2; /* grayscale or truecolour */
    ihdr[10] = ihdr[11] = ihdr[12] = 0;
    make_crc_table();
    size_t raw_n = 0, z_n = 0;
    char tmp[4096];
    uint8_t *raw = raw_rows(pixels, width, height, channels, &raw_n);
    uint8_t *z = raw ? zlib_stored(raw, raw_n, &z_n) : NULL;
    int rc = -1, err = ENOMEM;
    FILE *f = NULL;
    if (z && staging_name(path, tmp, sizeof tmp) == 0 && (f = fopen(tmp[0] ? tmp : path, "wb")))
        rc = write_file(f, ihdr, z, z_n);
    if (rc != 0 && z)
        err = errno; /* staging_name's, fopen's or a write's */
    if (f && fclose(f) != 0 && rc == 0) {
        rc = -1;
        err = errno;
    }
    if (f && tmp[0] && rc == 0 && rename(tmp, path) != 0) {
        rc = -1;
        err = errno;
    }
    if (f && tmp[0] && rc != 0)
        unlink(tmp); /* path keeps what it held */
    free(raw);
    free(z);
    if (rc != 0)
        errno = err;
    return rc;
}
