/* CRC32C, slicing-by-8: eight bytes per step from eight 256-entry tables. Portable C;
 * a few GB/s, well above zstd's compression speed, so the checksum never dominates a
 * checkpoint save. */
#include <pthread.h>

#include "io/crc32c.h"

#define CRC32C_POLY_REFLECTED 0x82f63b78u

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void make_tables(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (CRC32C_POLY_REFLECTED & (0u - (c & 1u)));
        table[0][i] = c;
    }
    /* table[k][i]: the CRC of byte i followed by k zero bytes. */
    for (int k = 1; k < 8; k++)
        for (int i = 0; i < 256; i++)
            table[k][i] = (table[k - 1][i] >> 8) ^ table[0][table[k - 1][i] & 0xff];
}

static uint32_t load_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint32_t frl_crc32c(uint32_t crc, const void *data, size_t size)
{
    pthread_once(&table_once, make_tables);
    const unsigned char *p = data;
    uint32_t c = ~crc;
    for (; size >= 8; size -= 8, p += 8) {
        uint32_t lo = c ^ load_le32(p), hi = load_le32(p + 4);
        c = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
            table[4][lo >> 24] ^ table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
            table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
    }
    for (; size > 0; size--, p++)
        c = (c >> 8) ^ table[0][(c ^ *p) & 0xff];
    return ~c;
}
