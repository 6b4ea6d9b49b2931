/* Writes the checkpoint-reader corpus into a directory: make_corpus DIR [SEED].
 *
 * Names carry the expected outcome (see fuzz_main.c): ok_, format_, version_, any_.
 *   - valid files of format version 1 (the only one): a few variants;
 *   - every truncation of one valid file, and 256 random single-bit flips of it;
 *   - 256 bit flips INSIDE the uncompressed payload, re-compressed and re-checksummed, so
 *     they reach the section parser (they may or may not still be valid: any_);
 *   - hand-made corruptions: bad offsets, huge and overflowing counts, bad names and
 *     dtypes, a wrong CRC with everything else right, header sizes that disagree with the
 *     zstd frame or the file, a frame without a content size, two frames, newer versions. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>

#include "ckpt_forge.h"
#include "core/error.h"
#include "io/container.h"

static const char *dir;
static int written;

static void emit(const char *name, const void *data, size_t size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (forge_write(path, data, size) != 0) {
        fprintf(stderr, "make_corpus: cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
    written++;
}

static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static void die(const char *what)
{
    fprintf(stderr, "make_corpus: %s\n", what);
    exit(1);
}

/* ---- valid files, through the library's writer ----------------------------------- */

static unsigned char *write_valid(const char *name, const frl_section *s, int n, size_t *size)
{
    char path[4096], err[FRL_ERRMSG_SIZE];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (frl_container_write(path, NULL, s, n, err) != FRL_OK)
        die(err);
    written++;
    unsigned char *b = forge_read(path, size);
    if (!b)
        die("cannot read back a valid file");
    return b;
}

static void set(frl_section *s, const char *name, frl_dtype t, uint64_t n, const void *p)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->dtype = t, s->count = n, s->data = p;
}

static unsigned char *valid_files(size_t *basic_size, unsigned char **all, size_t *all_size)
{
    static const double w[4] = {0.5, -1, 2, 1e-9};
    static const uint64_t seq[1] = {42};
    static int32_t i32[100];
    static float f32[33];
    static int64_t i64[3] = {-1, 0, 1};
    static uint8_t u8[65];
    for (int i = 0; i < 100; i++)
        i32[i] = i * i - 50;
    for (int i = 0; i < 33; i++)
        f32[i] = (float)i / 3;
    memset(u8, 0xab, sizeof u8);
    frl_section s[12];
    set(&s[0], "weights", FRL_DTYPE_F64, 4, w);
    set(&s[1], "seq", FRL_DTYPE_U64, 1, seq);
    set(&s[2], "note", FRL_DTYPE_TEXT, 5, "hello");
    unsigned char *basic = write_valid("ok_v1_basic", s, 3, basic_size);
    size_t size;
    free(write_valid("ok_v1_no_sections", s, 0, &size));
    set(&s[3], "i32", FRL_DTYPE_I32, 100, i32);
    set(&s[4], "f32", FRL_DTYPE_F32, 33, f32);
    set(&s[5], "i64", FRL_DTYPE_I64, 3, i64);
    set(&s[6], "u8", FRL_DTYPE_U8, 65, u8);
    set(&s[7], "empty_f64", FRL_DTYPE_F64, 0, NULL);
    set(&s[8], "empty_text", FRL_DTYPE_TEXT, 0, NULL);
    set(&s[9], "empty_u8", FRL_DTYPE_U8, 0, NULL);
    set(&s[10], "data", FRL_DTYPE_F64, 2, w);
    set(&s[11], "a_name_of_exactly_thirty_nine_bytes_xyz", FRL_DTYPE_I32, 1, i32);
    *all = write_valid("ok_v1_all_dtypes", s, 12, all_size);
    return basic;
}

/* ---- damage to a valid file ------------------------------------------------------ */

static void truncations(const unsigned char *b, size_t size)
{
    char name[64];
    for (size_t n = 0; n < size; n++) {
        snprintf(name, sizeof name, "format_trunc_%05zu", n);
        emit(name, b, n);
    }
}

/* Single-bit flips outside the version field are FORMAT; in it, maybe VERSION. */
static void bit_flips(const char *tag, const unsigned char *b, size_t size, int count)
{
    unsigned char *copy = malloc(size);
    char name[64];
    for (int i = 0; i < count; i++) {
        memcpy(copy, b, size);
        size_t bit = (size_t)(rnd() % (size * 8));
        copy[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        int version = bit / 8 >= 8 && bit / 8 < 12;
        snprintf(name, sizeof name, "%s_flip_%s_%04d_bit%zu", version ? "any" : "format", tag, i,
                 bit);
        emit(name, copy, size);
    }
    free(copy);
}

static size_t dsize(uint32_t t)
{
    if (t == FRL_DTYPE_U8 || t == FRL_DTYPE_TEXT)
        return 1;
    return t == FRL_DTYPE_I32 || t == FRL_DTYPE_F32 ? 4 : 8;
}

/* Where each section header of a valid payload starts. */
static void section_offsets(const unsigned char *raw, uint32_t n, size_t *at)
{
    size_t pos = 0;
    for (uint32_t i = 0; i < n; i++) {
        at[i] = pos;
        uint64_t end = forge_get64(raw + pos + 56) +
                       forge_get64(raw + pos + 48) * dsize(forge_get32(raw + pos + 40));
        pos = (size_t)((end + 63) & ~(uint64_t)63);
    }
}

/* Flips in the uncompressed payload, sealed again so the CRCs pass. Three in four land
 * in a section header, where the parser's decisions are. */
static void payload_flips(const char *tag, const unsigned char *file, size_t size, int count)
{
    size_t raw_size, hdr[64];
    unsigned char *raw = forge_unpack(file, size, &raw_size);
    uint32_t nsec = forge_get32(file + 36);
    if (!raw || nsec == 0 || nsec > 64)
        die("cannot unpack a valid file");
    section_offsets(raw, nsec, hdr);
    char name[64];
    for (int i = 0; i < count; i++) {
        int bits = 1 + (int)(rnd() % 3);
        size_t at[3];
        for (int k = 0; k < bits; k++) {
            size_t in_header = (hdr[rnd() % nsec] + (size_t)(rnd() % 64)) * 8 + rnd() % 8;
            at[k] = rnd() % 4 ? in_header : (size_t)(rnd() % (raw_size * 8));
            raw[at[k] / 8] ^= (unsigned char)(1u << (at[k] % 8));
        }
        size_t fsize;
        unsigned char *f = forge_file(raw, raw_size, nsec, &fsize);
        if (!f)
            die("out of memory");
        snprintf(name, sizeof name, "any_payload_flip_%s_%04d", tag, i);
        emit(name, f, fsize);
        free(f);
        for (int k = bits - 1; k >= 0; k--)
            raw[at[k] / 8] ^= (unsigned char)(1u << (at[k] % 8));
    }
    free(raw);
}

/* ---- hand-made corruptions -------------------------------------------------------- */

/* A payload of two sections: "a" (8 f64 at 64) and "b" (64 u8 at 192); 256 bytes. */
static void two_sections(unsigned char *raw)
{
    memset(raw, 0, 512);
    forge_section(raw, "a", FRL_DTYPE_F64, 8, 64);
    forge_section(raw + 128, "b", FRL_DTYPE_U8, 64, 192);
}

static void emit_forged(const char *name, const unsigned char *raw, size_t raw_size, uint32_t n)
{
    size_t size;
    unsigned char *f = forge_file(raw, raw_size, n, &size);
    if (!f)
        die("out of memory");
    emit(name, f, size);
    free(f);
}

static void section_corruptions(void)
{
    unsigned char raw[512];
    struct { const char *name; const char *sname; uint32_t dtype; uint64_t count, off; } v[] = {
        {"ok_forged", "b", FRL_DTYPE_U8, 64, 192},
        {"format_offset_misaligned", "b", FRL_DTYPE_U8, 64, 200},
        {"format_offset_overlaps_previous", "b", FRL_DTYPE_U8, 64, 64},
        {"format_offset_inside_own_header", "b", FRL_DTYPE_U8, 0, 128},
        {"format_offset_past_end", "b", FRL_DTYPE_U8, 0, 320},
        {"format_offset_huge", "b", FRL_DTYPE_U8, 1, UINT64_MAX - 63},
        {"format_count_one_too_many", "b", FRL_DTYPE_U8, 65, 192},
        {"format_count_huge", "b", FRL_DTYPE_U8, UINT64_MAX, 192},
        {"format_count_times_size_wraps", "b", FRL_DTYPE_F64, (UINT64_MAX / 8) + 2, 192},
        {"format_count_times_size_wraps_i32", "b", FRL_DTYPE_I32, (1ull << 62) + 1, 192},
        {"format_dtype_zero", "b", 0, 64, 192},
        {"format_dtype_unknown", "b", 8, 64, 192},
        {"format_dtype_huge", "b", 0xffffffffu, 64, 192},
        {"format_name_empty", "", FRL_DTYPE_U8, 64, 192},
        {"format_name_duplicate", "a", FRL_DTYPE_U8, 64, 192},
        {"format_name_unterminated", "0123456789012345678901234567890123456789", FRL_DTYPE_U8,
         64, 192},
        {"format_unused_tail", "b", FRL_DTYPE_U8, 10, 192},
        {"ok_gap_before_data", "b", FRL_DTYPE_U8, 0, 256},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        two_sections(raw);
        forge_section(raw + 128, v[i].sname, v[i].dtype, v[i].count, v[i].off);
        emit_forged(v[i].name, raw, strstr(v[i].name, "tail") ? 320 : 256, 2);
    }
    two_sections(raw);
    forge_put32(raw + 128 + 44, 1);
    emit_forged("format_section_reserved_nonzero", raw, 256, 2);
    two_sections(raw);
    emit_forged("format_nsections_one_more", raw, 256, 3);
    emit_forged("format_nsections_too_many", raw, 256, 5);
    emit_forged("format_nsections_huge", raw, 256, 0xffffffffu);
    emit_forged("format_nsections_zero_but_payload", raw, 256, 0);
    emit_forged("format_nsections_one", raw, 256, 1);
}

/* Many sections: the sort that finds duplicate names, with and without one. */
static void many_sections(void)
{
    enum { M = 1000 };
    unsigned char *raw = calloc(M, 128);
    for (int i = 0; i < M; i++) {
        char name[16];
        snprintf(name, sizeof name, "s%d", (i * 7919) % M);
        forge_section(raw + 128 * i, name, FRL_DTYPE_U8, 1, 128 * (uint64_t)i + 64);
    }
    emit_forged("ok_many_sections", raw, 128 * M, M);
    forge_section(raw + 128 * (M - 1), "s0", FRL_DTYPE_U8, 1, 128 * (uint64_t)(M - 1) + 64);
    emit_forged("format_many_sections_duplicate", raw, 128 * M, M);
    free(raw);
}

/* Header fields that disagree with the rest, sealed so only that disagreement shows. */
static void header_corruptions(const unsigned char *b, size_t size)
{
    unsigned char *c = malloc(size + 64);
    struct { const char *name; int field; uint64_t value; int wide, seal; } v[] = {
        {"version_2", 8, 2, 0, 1},
        {"version_255_unsealed", 8, 255, 0, 0},
        {"format_version_0", 8, 0, 0, 1},
        {"format_flags_nonzero", 12, 1, 0, 1},
        {"format_reserved_nonzero", 44, 7, 0, 1},
        {"format_raw_size_off_by_one", 16, 0, 1, 1}, /* value set below */
        {"format_raw_size_over_limit", 16, (1ull << 30) + 64, 1, 1},
        {"format_raw_size_huge", 16, UINT64_MAX, 1, 1},
        {"format_comp_size_short", 24, 0, 1, 1},
        {"format_comp_size_long", 24, 0, 1, 1},
        {"format_comp_size_huge", 24, UINT64_MAX, 1, 1},
        {"format_payload_crc_wrong", 32, 0, 0, 2},
        {"format_header_crc_wrong", 60, 0, 0, 0},
    };
    uint64_t raw = forge_get64(b + 16), comp = forge_get64(b + 24);
    v[5].value = raw + 64, v[8].value = comp - 1, v[9].value = comp + 1;
    v[11].value = forge_get32(b + 32) ^ 1;
    v[12].value = forge_get32(b + 60) + 1;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        memcpy(c, b, size);
        if (v[i].wide)
            forge_put64(c + v[i].field, v[i].value);
        else
            forge_put32(c + v[i].field, (uint32_t)v[i].value);
        if (v[i].seal)
            forge_seal_header(c);
        emit(v[i].name, c, size);
    }
    memcpy(c, b, size);
    memcpy(c, "FASTRLCX", 8);
    emit("format_bad_magic", c, size);
    memcpy(c, b, size);
    memset(c + size, 0, 64);
    emit("format_trailing_zeros", c, size + 64);
    free(c);
}

/* Payloads that are not one zstd frame with a content size. */
static void frame_corruptions(void)
{
    unsigned char raw[512], buf[2048];
    two_sections(raw);
    ZSTD_CCtx *cx = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cx, ZSTD_c_contentSizeFlag, 0);
    size_t n = ZSTD_compress2(cx, buf + 64, sizeof buf - 64, raw, 256);
    ZSTD_freeCCtx(cx);
    if (ZSTD_isError(n))
        die("zstd");
    size_t size;
    unsigned char *f = forge_file(raw, 256, 2, &size);
    memcpy(buf, f, 64);
    forge_put64(buf + 24, n);
    forge_seal(buf, 64 + n);
    emit("format_frame_without_size", buf, 64 + n);

    /* The valid frame followed by a second (empty) frame. */
    memcpy(buf, f, size);
    size_t m = ZSTD_compress(buf + size, sizeof buf - size, "", 0, 3);
    forge_put64(buf + 24, size - 64 + m);
    forge_seal(buf, size + m);
    emit("format_two_frames", buf, size + m);

    /* Not zstd at all, checksums right. */
    memcpy(buf, f, 64);
    for (int i = 0; i < 100; i++)
        buf[64 + i] = (unsigned char)rnd();
    forge_put64(buf + 24, 100);
    forge_seal(buf, 164);
    emit("format_not_zstd", buf, 164);

    /* The frame cut short, sizes and checksums adjusted to match. */
    memcpy(buf, f, size);
    forge_put64(buf + 24, size - 64 - 3);
    forge_seal(buf, size - 3);
    emit("format_frame_cut_short", buf, size - 3);
    free(f);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: make_corpus DIR [SEED]\n");
        return 2;
    }
    dir = argv[1];
    rng_state = argc > 2 ? strtoull(argv[2], NULL, 10) : 20240601;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        die("cannot create the corpus directory");
    size_t basic_size, all_size;
    unsigned char *all;
    unsigned char *basic = valid_files(&basic_size, &all, &all_size);
    truncations(basic, basic_size);
    bit_flips("basic", basic, basic_size, 256);
    bit_flips("all", all, all_size, 64);
    payload_flips("all", all, all_size, 256);
    payload_flips("basic", basic, basic_size, 64);
    section_corruptions();
    many_sections();
    header_corruptions(basic, basic_size);
    frame_corruptions();
    free(basic);
    free(all);
    printf("make_corpus: %d files in %s\n", written, dir);
    return 0;
}
