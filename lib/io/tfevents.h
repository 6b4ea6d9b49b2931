/* A TensorBoard event file of scalars, written without TensorFlow or protobuf.
 *
 * The file is a TFRecord stream: per record, u64 length, u32 masked CRC32C of those 8
 * bytes, the bytes, u32 masked CRC32C of the bytes. Each record is a serialized
 * tensorflow.Event message: the first holds file_version "brain.Event:2"; each
 * scalar is an Event{wall_time, step, summary{value{tag, simple_value}}}. */
#ifndef FRL_IO_TFEVENTS_H
#define FRL_IO_TFEVENTS_H

#include <stdint.h>

#include "fastrl.h"

typedef struct frl_tfevents frl_tfevents;

/* Create DIR/events.out.tfevents.<seconds>.<hostname>.<pid>.<n> (dir must exist; n
 * counts the writers this process has opened, from 0, so two never share a file) and
 * write the version record. FRL_ERR_IO with errno's text on failure. */
frl_status frl_tfevents_open(frl_tfevents **out, const char *dir,
                             const frl_allocator *alloc, char *err);
/* Append one scalar. Tags longer than 200 bytes are FRL_ERR_INVALID_ARGUMENT. */
frl_status frl_tfevents_scalar(frl_tfevents *w, const char *tag, int64_t step,
                               double wall_time, float value, char *err);
/* Push buffered records to the file (not fsync). Records are buffered (64 KiB) and
 * written whole; after a failed write the buffered records are dropped. */
frl_status frl_tfevents_flush(frl_tfevents *w, char *err);
/* Flush and close; a write error here cannot be reported, so flush first to see it. */
void frl_tfevents_close(frl_tfevents *w);
/* The path of the file, for messages and tests. */
const char *frl_tfevents_path(const frl_tfevents *w);

#endif
