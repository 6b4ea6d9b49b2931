/* Fuzz target for the checkpoint reader (frl_container_parse).
 *
 * Every byte of every section is read, so under ASan a section reaching past the
 * payload is caught; the promised invariants (NUL-terminated unique names, known
 * dtypes, 64-byte aligned data) are checked and abort() if broken, which a fuzzer
 * reports as a crash. The input is parsed as given: callers pass an exact-size buffer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "fuzz_container.h"
#include "io/container.h"

static void require(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_container: invariant broken: %s\n", what);
        abort();
    }
}

static size_t elem_size(frl_dtype t)
{
    switch (t) {
    case FRL_DTYPE_U8:
    case FRL_DTYPE_TEXT:
        return 1;
    case FRL_DTYPE_I32:
    case FRL_DTYPE_F32:
        return 4;
    case FRL_DTYPE_I64:
    case FRL_DTYPE_U64:
    case FRL_DTYPE_F64:
        return 8;
    }
    return 0;
}

/* Where the bytes read go, so the compiler cannot drop the reads. */
static volatile unsigned sink;

static void use_sections(const frl_container *c)
{
    unsigned sum = 0;
    int32_t n = frl_container_count(c);
    for (int32_t i = 0; i < n; i++) {
        const frl_section *s = frl_container_at(c, i);
        require(s != NULL, "frl_container_at(i < count) is NULL");
        require(memchr(s->name, 0, FRL_SECTION_NAME_MAX) && s->name[0], "name");
        require(elem_size(s->dtype) != 0, "dtype");
        require((uintptr_t)s->data % 64 == 0, "alignment");
        const unsigned char *p = s->data;
        for (size_t k = 0; k < s->count * elem_size(s->dtype); k++)
            sum += p[k];
        char err[FRL_ERRMSG_SIZE];
        require(frl_container_find(c, s->name, s->dtype, (int64_t)s->count, err) == s,
                "find returns the first section of a unique name");
    }
    sink = sum;
}

int frl_fuzz_container_one(const uint8_t *data, size_t size)
{
    char err[FRL_ERRMSG_SIZE];
    frl_container *c = NULL;
    frl_status st = frl_container_parse(&c, data, size, NULL, err);
    require((st == FRL_OK) == (c != NULL), "*out set exactly on success");
    require(st == FRL_OK || st == FRL_ERR_FORMAT || st == FRL_ERR_VERSION ||
                st == FRL_ERR_NOMEM, "status");
    require(st == FRL_OK || strlen(err) > 0, "a failure has a message");
    if (!c)
        return st;
    use_sections(c);
    /* Lookups that usually miss, with each kind of mismatch. */
    frl_container_find(c, "seq", FRL_DTYPE_U64, 1, err);
    frl_container_find(c, "data", FRL_DTYPE_F64, -1, err);
    frl_container_find(c, "weights", FRL_DTYPE_F32, 0, err);
    frl_container_find(c, "", FRL_DTYPE_TEXT, -1, err);
    frl_container_free(c);
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    frl_fuzz_container_one(data, size);
    return 0;
}
