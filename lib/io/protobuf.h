/* The protobuf wire format, written by hand: what an ONNX model (and a TensorBoard
 * event) needs is varints, 32-bit floats and length-delimited fields, nested by
 * wrapping what was written since a mark. Readers accept fields in any order, so a
 * message's repeated fields may be interleaved. */
#ifndef FRL_IO_PROTOBUF_H
#define FRL_IO_PROTOBUF_H

#include <stdint.h>

#include "io/bytes.h"

/* Encode v as a varint at p (room for 10 bytes); returns its length. */
size_t frl_pb_put_varint(unsigned char *p, uint64_t v);
size_t frl_pb_varint_size(uint64_t v);

void frl_pb_varint(frl_bytes *b, int field, uint64_t v);
void frl_pb_float(frl_bytes *b, int field, float v);
void frl_pb_bytes(frl_bytes *b, int field, const void *data, size_t n);
void frl_pb_string(frl_bytes *b, int field, const char *s);
/* The key and length of a length-delimited field whose n bytes the caller appends. */
void frl_pb_len_key(frl_bytes *b, int field, size_t n);

/* A nested message: its fields are written after frl_pb_begin's mark, and
 * frl_pb_end(b, field, mark) turns them into one length-delimited field. */
size_t frl_pb_begin(const frl_bytes *b);
void frl_pb_end(frl_bytes *b, int field, size_t mark);

#endif
