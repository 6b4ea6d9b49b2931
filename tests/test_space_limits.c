/* A mixed space whose parts are each valid but whose row is over 2^31 - 1 bytes: the
 * vec env, policy and ring hold row widths in int32, so frl_space_create_mixed must
 * refuse it (FRL_ERR_RANGE) rather than accept a width that wraps. The box part is built
 * by hand (a real one of 2^29 floats needs 4 GiB of bounds); the constructor reads only
 * its kind, count and shape before copying it. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/space.h"
#include "test_util.h"

/* An unbounded box of n floats, shape {n}, as frl_space_create_box would make it. */
static frl_space fake_box(int64_t n)
{
    frl_space b;
    memset(&b, 0, sizeof b);
    frl_allocator_default(&b.alloc);
    b.kind = FRL_SPACE_BOX;
    b.n = n;
    b.rank = 1;
    b.shape[0] = n;
    return b;
}

START_TEST(mixed_row_over_int32_refused)
{
    size_t gib = (size_t)1 << 30; /* a size past the checks fails as FRL_ERR_NOMEM */
    frl_allocator small = frl_test_capped_allocator(&gib);
    frl_space *image = NULL, *mixed = (frl_space *)&small;
    ck_assert_int_eq(frl_space_create_image(&image, NULL, 4096, 4096, 1), FRL_OK);
    /* 2^24 image bytes + 4 * floats: the most that fits, and one float more. */
    int64_t most = (INT32_MAX - image->n) / 4;
    frl_space over = fake_box(most + 1);
    ck_assert_int_eq(frl_space_create_mixed(&mixed, &small, image, &over), FRL_ERR_RANGE);
    ck_assert_ptr_null(mixed);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "over 2^31 - 1 bytes"));
    frl_space fits = fake_box(most);
    ck_assert_int_eq(frl_space_create_mixed(&mixed, &small, image, &fits), FRL_ERR_NOMEM);
    ck_assert_ptr_null(mixed);
    frl_space_destroy(image);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("space_limits");
    TCase *tc = tcase_create("space_limits");
    tcase_add_test(tc, mixed_row_over_int32_refused);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
