/* The key table made from FRL_CONFIG_KEYS (lib/core/config_keys.h): every key at its
 * enum's index and spelt like it, every default text parsing to the value the library
 * reads for an unset key (and back through that value's text), every choice enum as
 * long as its key's "a|b|c" and each enumerator naming its own choice. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "core/config.h"
#include "test_util.h"

typedef struct key_row {
    const char *id; /* TRAIN_NUM_ENVS */
    frl_key key;
    const char *name;
} key_row;

#define KEY_ROW(ID, NAME, ...) {#ID, FRL_KEY_##ID, NAME},
static const key_row keys[] = {FRL_CONFIG_KEYS(KEY_ROW)};

/* Each choice of each CHOICE key, and each CHOICE key with its enum's count. */
typedef struct choice_row {
    frl_key key;
    int32_t value;
    const char *text;
} choice_row;

typedef struct choice_key {
    frl_key key;
    int32_t count;
} choice_key;

#define CHOICE_ROW(K, NAME, TEXT) {FRL_KEY_##K, FRL_##K##_##NAME, TEXT},
#define CHOICE_ROWS_CHOICE(ID) FRL_CHOICES_##ID(CHOICE_ROW, ID)
#define CHOICE_KEY_CHOICE(ID) {FRL_KEY_##ID, FRL_##ID##_COUNT},
#define CHOICE_ROWS_INT(ID)
#define CHOICE_ROWS_FLOAT(ID)
#define CHOICE_ROWS_BOOL(ID)
#define CHOICE_ROWS_INT_LIST(ID)
#define CHOICE_KEY_INT(ID)
#define CHOICE_KEY_FLOAT(ID)
#define CHOICE_KEY_BOOL(ID)
#define CHOICE_KEY_INT_LIST(ID)
#define CHOICE_ROWS(ID, NAME, TYPE, ...) CHOICE_ROWS_##TYPE(ID)
#define CHOICE_KEY(ID, NAME, TYPE, ...) CHOICE_KEY_##TYPE(ID)
static const choice_row choices[] = {FRL_CONFIG_KEYS(CHOICE_ROWS)};
static const choice_key choice_keys[] = {FRL_CONFIG_KEYS(CHOICE_KEY)};

#define COUNT(a) ((int32_t)(sizeof(a) / sizeof((a)[0])))

START_TEST(each_key_at_its_enum)
{
    ck_assert_int_eq(COUNT(keys), FRL_KEY_COUNT);
    for (int32_t i = 0; i < FRL_KEY_COUNT; i++) {
        const key_row *r = &keys[i];
        ck_assert_int_eq(r->key, i);
        ck_assert_ptr_nonnull(frl_key_defs[i].name);
        ck_assert_str_eq(frl_key_defs[i].name, r->name);
        ck_assert_int_eq(frl_key_find(r->name), i);
        /* The enum spells the name: train.num_envs is FRL_KEY_TRAIN_NUM_ENVS. */
        char spelt[64];
        size_t n = strlen(r->name);
        ck_assert_uint_lt(n, sizeof spelt);
        for (size_t c = 0; c <= n; c++)
            spelt[c] = r->name[c] == '.' ? '_' : (char)toupper((unsigned char)r->name[c]);
        ck_assert_str_eq(spelt, r->id);
        /* A namespace's keys are one run, which the "did you mean" hints rely on. */
        size_t ns = strcspn(r->name, ".") + 1;
        for (int32_t j = 0; j + 1 < i; j++)
            ck_assert_msg(strncmp(keys[j].name, r->name, ns) != 0 ||
                              strncmp(keys[i - 1].name, r->name, ns) == 0,
                          "%s is apart from %s", r->name, keys[j].name);
    }
}
END_TEST

/* Key k reads the same on c as unset (its default), by its type. */
static void assert_default_value(const frl_config *c, frl_key k)
{
    const char *name = frl_key_defs[k].name;
    frl_int_list a, b;
    switch (frl_key_defs[k].type) {
    case FRL_CONFIG_INT: ck_assert_int_eq(frl_cfg_int(c, k), frl_cfg_int(NULL, k)); break;
    case FRL_CONFIG_FLOAT:
        ck_assert_msg(frl_cfg_float(c, k) == frl_cfg_float(NULL, k), "%s: %.17g != %.17g", name,
                      frl_cfg_float(c, k), frl_cfg_float(NULL, k));
        break;
    case FRL_CONFIG_BOOL: ck_assert_int_eq(frl_cfg_bool(c, k), frl_cfg_bool(NULL, k)); break;
    case FRL_CONFIG_CHOICE: ck_assert_int_eq(frl_cfg_choice(c, k), frl_cfg_choice(NULL, k)); break;
    case FRL_CONFIG_INT_LIST:
        a = frl_cfg_list(c, k);
        b = frl_cfg_list(NULL, k);
        ck_assert_int_eq(a.n, b.n);
        ck_assert_msg(memcmp(a.v, b.v, sizeof a.v[0] * (size_t)a.n) == 0, "%s differs", name);
        break;
    }
}

/* Set text on a new config, check it reads as key k's default, and free it. */
static void assert_parses_to_default(frl_key k, const char *text)
{
    frl_config *c;
    ck_assert_int_eq(frl_config_create(&c, NULL), FRL_OK);
    ck_assert_msg(frl_config_set(c, frl_key_defs[k].name, text) == FRL_OK, "%s=%s: %s",
                  frl_key_defs[k].name, text, frl_config_last_error(c));
    ck_assert(frl_cfg_is_set(c, k));
    assert_default_value(c, k);
    frl_config_destroy(c);
}

START_TEST(defaults_parse_to_their_values)
{
    for (int32_t i = 0; i < FRL_KEY_COUNT; i++) {
        frl_key k = (frl_key)i;
        const frl_key_def *d = &frl_key_defs[k];
        ck_assert_int_eq(frl_cfg_is_set(NULL, k), 0);
        if (strcmp(d->default_text, "none") == 0 && d->type != FRL_CONFIG_CHOICE) {
            ck_assert_int_eq(d->type, FRL_CONFIG_FLOAT); /* read only through is_set */
            continue;
        }
        assert_parses_to_default(k, d->default_text);
        /* And back: the value's own text (%.17g for a float) parses to it again. */
        char text[256];
        ck_assert_int_eq(frl_config_get_text(NULL, d->name, text, sizeof text), FRL_OK);
        assert_parses_to_default(k, text);
    }
}
END_TEST

static int32_t count_choices(const char *text)
{
    int32_t n = 1;
    for (const char *p = text; *p; p++)
        n += *p == '|';
    return n;
}

START_TEST(choice_enums_match_their_keys)
{
    int32_t choice_rows = 0, listed = 0;
    for (int32_t k = 0; k < FRL_KEY_COUNT; k++)
        choice_rows += frl_key_defs[k].type == FRL_CONFIG_CHOICE;
    ck_assert_int_eq(COUNT(choice_keys), choice_rows);
    for (int32_t i = 0; i < COUNT(choice_keys); i++) {
        const frl_key_def *d = &frl_key_defs[choice_keys[i].key];
        ck_assert_int_eq(d->type, FRL_CONFIG_CHOICE);
        ck_assert_msg(d->choices[0] && !strstr(d->choices, "||") &&
                          d->choices[strlen(d->choices) - 1] != '|',
                      "%s: choices '%s'", d->name, d->choices);
        ck_assert_int_eq(count_choices(d->choices), choice_keys[i].count);
        listed += choice_keys[i].count;
    }
    ck_assert_int_eq(COUNT(choices), listed);
    /* Each enumerator is the index of its own text. */
    frl_config *c;
    ck_assert_int_eq(frl_config_create(&c, NULL), FRL_OK);
    for (int32_t i = 0; i < COUNT(choices); i++) {
        const choice_row *r = &choices[i];
        ck_assert_int_eq(frl_config_set(c, frl_key_defs[r->key].name, r->text), FRL_OK);
        ck_assert_int_eq(frl_cfg_choice(c, r->key), r->value);
    }
    frl_config_destroy(c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("config_keys");
    TCase *tc = tcase_create("config_keys");
    tcase_add_test(tc, each_key_at_its_enum);
    tcase_add_test(tc, defaults_parse_to_their_values);
    tcase_add_test(tc, choice_enums_match_their_keys);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
