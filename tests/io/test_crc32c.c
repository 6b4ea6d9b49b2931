/* CRC32C: published vectors (RFC 3720 appendix B.4), the TFRecord mask (values from
 * TensorBoard's own Python implementation), continuation, and the slicing-by-8 path
 * against a bitwise reference at every alignment and tail length. */
#include <check.h>
#include <string.h>

#include "io/crc32c.h"
#include "test_util.h"

static uint32_t bitwise_crc32c(const unsigned char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
    }
    return ~c;
}

START_TEST(known_vectors)
{
    ck_assert_uint_eq(frl_crc32c(0, "123456789", 9), 0xe3069283u);
    ck_assert_uint_eq(frl_crc32c(0, NULL, 0), 0);
    unsigned char b[32];
    memset(b, 0, sizeof b);
    ck_assert_uint_eq(frl_crc32c(0, b, 32), 0x8a9136aau);
    memset(b, 0xff, sizeof b);
    ck_assert_uint_eq(frl_crc32c(0, b, 32), 0x62a8ab43u);
    for (int i = 0; i < 32; i++)
        b[i] = (unsigned char)i;
    ck_assert_uint_eq(frl_crc32c(0, b, 32), 0x46dd794eu);
    for (int i = 0; i < 32; i++)
        b[i] = (unsigned char)(31 - i);
    ck_assert_uint_eq(frl_crc32c(0, b, 32), 0x113fdb5cu);
}
END_TEST

/* tensorboard.compat.tensorflow_stub.pywrap_tensorflow.masked_crc32c gives these. */
START_TEST(tfrecord_mask)
{
    ck_assert_uint_eq(frl_crc32c_mask(frl_crc32c(0, "123456789", 9)), 0xc78ab0e5u);
    ck_assert_uint_eq(frl_crc32c_mask(frl_crc32c(0, "", 0)), 0xa282ead8u);
    const unsigned char len24[8] = {24, 0, 0, 0, 0, 0, 0, 0}; /* a record length field */
    ck_assert_uint_eq(frl_crc32c_mask(frl_crc32c(0, len24, 8)), 0x224b7fa3u);
}
END_TEST

START_TEST(continuation_and_alignment)
{
    ck_assert_uint_eq(frl_crc32c(frl_crc32c(0, "1234", 4), "56789", 5), 0xe3069283u);
    unsigned char buf[256 + 8];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof buf; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (unsigned char)(x >> 16);
    }
    for (size_t off = 0; off < 8; off++)
        for (size_t n = 0; n <= 256; n++) {
            ck_assert_uint_eq(frl_crc32c(0, buf + off, n), bitwise_crc32c(buf + off, n));
            size_t k = n / 3;
            uint32_t first = frl_crc32c(0, buf + off, k);
            ck_assert_uint_eq(frl_crc32c(first, buf + off + k, n - k), bitwise_crc32c(buf + off, n));
        }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("crc32c");
    TCase *tc = tcase_create("crc32c");
    tcase_add_test(tc, known_vectors);
    tcase_add_test(tc, tfrecord_mask);
    tcase_add_test(tc, continuation_and_alignment);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
