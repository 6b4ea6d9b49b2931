/* CRC32C (Castagnoli), as used by the checkpoint container and TensorBoard records. */
#ifndef FRL_IO_CRC32C_H
#define FRL_IO_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC32C of data, continuing from crc (start with 0). */
uint32_t frl_crc32c(uint32_t crc, const void *data, size_t size);

/* TensorBoard's (TFRecord's) masked form: rotate right by 15, add 0xa282ead8. */
static inline uint32_t frl_crc32c_mask(uint32_t crc)
{
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

#endif
