/* Protobuf wire format writer (protobuf.h). */
#include <string.h>

#include "io/protobuf.h"

enum { WIRE_VARINT = 0, WIRE_LEN = 2, WIRE_FIXED32 = 5 };

size_t frl_pb_put_varint(unsigned char *p, uint64_t v)
{
    size_t n = 0;
    do {
        p[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

size_t frl_pb_varint_size(uint64_t v)
{
    size_t n = 1;
    while (v > 0x7f) {
        v >>= 7;
        n++;
    }
    return n;
}

static void put_key(frl_bytes *b, int field, int wire)
{
    unsigned char k[10];
    frl_bytes_put(b, k, frl_pb_put_varint(k, (uint64_t)field << 3 | (uint64_t)wire));
}

void frl_pb_varint(frl_bytes *b, int field, uint64_t v)
{
    unsigned char p[10];
    put_key(b, field, WIRE_VARINT);
    frl_bytes_put(b, p, frl_pb_put_varint(p, v));
}

void frl_pb_float(frl_bytes *b, int field, float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    unsigned char p[4] = {(unsigned char)u, (unsigned char)(u >> 8), (unsigned char)(u >> 16),
                          (unsigned char)(u >> 24)};
    put_key(b, field, WIRE_FIXED32);
    frl_bytes_put(b, p, sizeof p);
}

void frl_pb_len_key(frl_bytes *b, int field, size_t n)
{
    unsigned char p[10];
    put_key(b, field, WIRE_LEN);
    frl_bytes_put(b, p, frl_pb_put_varint(p, n));
}

void frl_pb_bytes(frl_bytes *b, int field, const void *data, size_t n)
{
    frl_pb_len_key(b, field, n);
    frl_bytes_put(b, data, n);
}

void frl_pb_string(frl_bytes *b, int field, const char *s)
{
    frl_pb_bytes(b, field, s, strlen(s));
}

size_t frl_pb_begin(const frl_bytes *b)
{
    return b->len;
}

void frl_pb_end(frl_bytes *b, int field, size_t mark)
{
    if (b->failed)
        return;
    unsigned char head[20];
    size_t len = b->len - mark;
    size_t h = frl_pb_put_varint(head, (uint64_t)field << 3 | WIRE_LEN);
    h += frl_pb_put_varint(head + h, len);
    if (frl_bytes_reserve(b, h) != 0)
        return;
    memmove(b->data + mark + h, b->data + mark, len);
    memcpy(b->data + mark, head, h);
    b->len += h;
}
