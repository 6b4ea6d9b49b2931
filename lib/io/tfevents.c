/* TensorBoard event files, encoded by hand (format in tfevents.h).
 *
 * The protobuf wire format needs only three things here: varints, length-delimited
 * fields, and fixed 32/64-bit fields. Field numbers are those of tensorflow.Event
 * (wall_time 1, step 2, file_version 3, summary 5), Summary (value 1) and
 * Summary.Value (tag 1, simple_value 2). */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"
#include "io/crc32c.h"
#include "io/file.h"
#include "io/protobuf.h"
#include "io/tfevents.h"

enum {
    BUF_SIZE = 64 * 1024,
    MAX_TAG = 200,
    MAX_RECORD = 512, /* framing + an event with a MAX_TAG tag fits */
};

struct frl_tfevents {
    frl_allocator alloc;
    int fd;
    size_t used;
    unsigned char buf[BUF_SIZE];
    char path[]; /* sized at open */
};

/* ---- protobuf wire format --------------------------------------------------------- */

static size_t put_fixed(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
    return (size_t)bytes;
}

/* A length-delimited field's key and length. */
static size_t put_len_key(unsigned char *p, int field, size_t len)
{
    p[0] = (unsigned char)(field << 3 | 2);
    return 1 + frl_pb_put_varint(p + 1, len);
}

static size_t put_wall_time_and_step(unsigned char *p, double wall_time, int64_t step)
{
    uint64_t bits;
    memcpy(&bits, &wall_time, sizeof bits);
    size_t n = 0;
    p[n++] = 1 << 3 | 1; /* wall_time: fixed64 */
    n += put_fixed(p + n, bits, 8);
    p[n++] = 2 << 3 | 0; /* step: varint; negative steps take ten bytes, as in protobuf */
    n += frl_pb_put_varint(p + n, (uint64_t)step);
    return n;
}

/* Event{wall_time, step, summary{value{tag, simple_value}}} into p; its length. */
static size_t encode_scalar(unsigned char *p, const char *tag, size_t tag_len, int64_t step,
                            double wall_time, float value)
{
    size_t value_len = 1 + frl_pb_varint_size(tag_len) + tag_len + 5;
    size_t summary_len = 1 + frl_pb_varint_size(value_len) + value_len;
    uint32_t vbits;
    memcpy(&vbits, &value, sizeof vbits);
    size_t n = put_wall_time_and_step(p, wall_time, step);
    n += put_len_key(p + n, 5, summary_len);
    n += put_len_key(p + n, 1, value_len);
    n += put_len_key(p + n, 1, tag_len);
    memcpy(p + n, tag, tag_len);
    n += tag_len;
    p[n++] = 2 << 3 | 5; /* simple_value: fixed32 */
    n += put_fixed(p + n, vbits, 4);
    return n;
}

/* ---- records ---------------------------------------------------------------------- */

static frl_status flush_buffer(frl_tfevents *w, const char *who, char *err)
{
    off_t end = lseek(w->fd, 0, SEEK_END);
    int e = frl_write_all(w->fd, w->buf, w->used);
    /* Dropped either way: retrying after a partial write would duplicate records. A
     * record cut short is cut off again: TensorBoard's reader stops at a torn record and
     * never read the records written after it. */
    w->used = 0;
    if (!e)
        return FRL_OK;
    if (end >= 0 && ftruncate(w->fd, end) != 0) {
        /* nothing more to do: the write's error is the one to report */
    }
    return frl_fail(err, FRL_ERR_IO, "%s: write %s: %s", who, w->path, strerror(e));
}

/* Frame the event at w->buf + used + 12 (len bytes) as a TFRecord and keep it. */
static void frame_record(frl_tfevents *w, size_t len)
{
    unsigned char *r = w->buf + w->used;
    put_fixed(r, len, 8);
    put_fixed(r + 8, frl_crc32c_mask(frl_crc32c(0, r, 8)), 4);
    put_fixed(r + 12 + len, frl_crc32c_mask(frl_crc32c(0, r + 12, len)), 4);
    w->used += 12 + len + 4;
}

/* Room for one more record, flushing first if needed. */
static frl_status reserve(frl_tfevents *w, const char *who, char *err)
{
    return BUF_SIZE - w->used < MAX_RECORD ? flush_buffer(w, who, err) : FRL_OK;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static frl_status write_version(frl_tfevents *w, char *err)
{
    static const char version[] = "brain.Event:2";
    unsigned char *p = w->buf + w->used + 12;
    size_t n = put_wall_time_and_step(p, now_seconds(), 0);
    n += put_len_key(p + n, 3, sizeof version - 1);
    memcpy(p + n, version, sizeof version - 1);
    frame_record(w, n + sizeof version - 1);
    return flush_buffer(w, "frl_tfevents_open", err);
}

/* ---- public ----------------------------------------------------------------------- */

/* DIR/events.out.tfevents.<seconds>.<host>.<pid>.<serial>: the serial keeps two writers
 * opened by one process in the same second apart. */
static void make_path(char *path, size_t size, const char *dir)
{
    static atomic_uint serial;
    char host[256] = "localhost";
    if (gethostname(host, sizeof host) != 0)
        strcpy(host, "localhost");
    host[sizeof host - 1] = 0;
    snprintf(path, size, "%s/events.out.tfevents.%lld.%s.%ld.%u", dir, (long long)time(NULL),
             host, (long)getpid(), atomic_fetch_add(&serial, 1));
}

frl_status frl_tfevents_open(frl_tfevents **out, const char *dir, const frl_allocator *alloc,
                             char *err)
{
    if (!out || !dir)
        return frl_fail(err, FRL_ERR_NULL, "frl_tfevents_open: %s is NULL", out ? "dir" : "out");
    *out = NULL;
    frl_allocator a;
    frl_status st = frl_allocator_copy(&a, alloc, "frl_tfevents_open");
    if (st != FRL_OK)
        return frl_fail(err, st, "%s", frl_last_error());
    size_t path_size = strlen(dir) + 360;
    frl_tfevents *w = frl_alloc(&a, sizeof *w + path_size, 8);
    if (!w)
        return frl_fail(err, FRL_ERR_NOMEM, "frl_tfevents_open: out of memory");
    w->alloc = a;
    make_path(w->path, path_size, dir);
    w->fd = open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0666);
    if (w->fd < 0) {
        st = frl_fail(err, FRL_ERR_IO, "frl_tfevents_open: open %s: %s", w->path,
                                 strerror(errno));
        frl_free(&a, w);
        return st;
    }
    st = write_version(w, err);
    if (st != FRL_OK) { /* no empty event file left behind */
        unlink(w->path);
        frl_tfevents_close(w);
        return st;
    }
    *out = w;
    return FRL_OK;
}

frl_status frl_tfevents_scalar(frl_tfevents *w, const char *tag, int64_t step, double wall_time,
                               float value, char *err)
{
    if (!w || !tag)
        return frl_fail(err, FRL_ERR_NULL, "frl_tfevents_scalar: %s is NULL", w ? "tag" : "writer");
    size_t tag_len = strnlen(tag, MAX_TAG + 1);
    if (tag_len == 0 || tag_len > MAX_TAG)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT,
                        "frl_tfevents_scalar: tag is empty or longer than %d bytes", MAX_TAG);
    frl_status st = reserve(w, "frl_tfevents_scalar", err);
    if (st != FRL_OK)
        return st;
    frame_record(w, encode_scalar(w->buf + w->used + 12, tag, tag_len, step, wall_time, value));
    return FRL_OK;
}

frl_status frl_tfevents_flush(frl_tfevents *w, char *err)
{
    if (!w)
        return frl_fail(err, FRL_ERR_NULL, "frl_tfevents_flush: writer is NULL");
    return flush_buffer(w, "frl_tfevents_flush", err);
}

void frl_tfevents_close(frl_tfevents *w)
{
    if (!w)
        return;
    /* Errors here have nowhere to go; call frl_tfevents_flush first to see them. */
    if (w->used)
        flush_buffer(w, "frl_tfevents_close", NULL);
    close(w->fd);
    frl_allocator a = w->alloc;
    frl_free(&a, w);
}

const char *frl_tfevents_path(const frl_tfevents *w)
{
    return w ? w->path : NULL;
}
