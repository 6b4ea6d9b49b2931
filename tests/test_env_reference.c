/* Checks every built-in environment against transitions recorded from real
 * Gymnasium (tests/data/<id>.txt, written by tests/data/gen_reference.py).
 *
 * Each reference transition is replayed through the internal interface the
 * way the vec env drives it: set_state, set the elapsed counter, write the
 * action, step_range over a batch of one, then compare the observation,
 * reward, flags and get_state against the recording. A second pass replays
 * short chains of consecutive transitions open loop (at most 20 steps).
 *
 * Bars, per transition:
 *   state   |d| <= 1e-9 * max(1, |ref|)
 *   obs     within 1 float32 ulp of the reference, or 1e-6 absolute
 *   reward  |d| <= 1e-6 * max(1, |ref|)
 *   flags   equal, except terminated where the reference state lies within
 *           1e-9 of a termination threshold (counted and printed)
 *
 * Transitions that match bit for bit (state, obs, and the reward equal to the
 * float32 rounding of the recorded one) are counted and printed too; with
 * FRL_REFERENCE_EXACT=1 in the environment any other transition fails. That
 * stricter mode holds where the C library's sin, cos and pow are the ones
 * NumPy used when the data were recorded (glibc on x86-64 here).
 *
 * The data folder is argv[1], else $FRL_TEST_DATA_DIR, else tests/data. */
#include <check.h>

#include "test_util.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env/registry.h"
#include "env/step_range.h"

#define STATE_BAR 1e-9
#define OBS_ABS_BAR 1e-6
#define REWARD_BAR 1e-6
#define FLAG_MARGIN 1e-9
#define MAX_CHAIN 20
#define MAX_SHOWN 8

static const char *g_data_dir = "tests/data";
static int g_exact = 0; /* FRL_REFERENCE_EXACT: require bit-exact transitions */

static const char *const env_ids[] = {"CartPole-v1", "Pendulum-v1", "Acrobot-v1",
                                      "MountainCar-v0", "MountainCarContinuous-v0"};
enum { N_ENVS = sizeof(env_ids) / sizeof(env_ids[0]) };
enum { N_MEMORY_ENVS = 2 }; /* no Gymnasium reference: tests/test_memory_envs.c */

/* ---- reference data ---------------------------------------------------- */

typedef struct ref_transition {
    int32_t elapsed;
    double before[FRL_SIM_MAX_STATE];
    double action[1];
    double after[FRL_SIM_MAX_STATE];
    float obs[FRL_OBS_MAX_DIM];
    double reward;
    int terminated, truncated;
    int line;
} ref_transition;

typedef struct ref_data {
    int state_dim, action_dim, obs_dim, max_steps;
    int action_n, have_obs_low, have_obs_high, have_action_low, have_action_high;
    float obs_low[FRL_OBS_MAX_DIM], obs_high[FRL_OBS_MAX_DIM];
    float action_low[1], action_high[1];
    ref_transition *t;
    int n, cap;
} ref_data;

static int parse_numbers(const char *line, double *out, int want)
{
    const char *p = line;
    for (int i = 0; i < want; i++) {
        char *end;
        out[i] = strtod(p, &end);
        if (end == p)
            return -1;
        p = end;
    }
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return *p == '\0' ? 0 : -1;
}

/* Reads up to max floats after a "# key:" prefix; returns how many. */
static int parse_floats(const char *line, const char *key, float *out, int max)
{
    size_t n = strlen(key);
    if (strncmp(line, key, n) != 0)
        return -1;
    const char *p = line + n;
    int k = 0;
    for (; k < max; k++) {
        char *end;
        double v = strtod(p, &end);
        if (end == p)
            break;
        out[k] = (float)v;
        p = end;
    }
    return k;
}

static void parse_header(ref_data *d, const char *line)
{
    int s, a, o, m;
    if (sscanf(line, "# dims: state %d action %d obs %d", &s, &a, &o) == 3) {
        d->state_dim = s;
        d->action_dim = a;
        d->obs_dim = o;
    } else if (sscanf(line, "# max_episode_steps: %d", &m) == 1) {
        d->max_steps = m;
    } else if (sscanf(line, "# action_n: %d", &m) == 1) {
        d->action_n = m;
    } else {
        int k;
        if ((k = parse_floats(line, "# obs_low:", d->obs_low, FRL_OBS_MAX_DIM)) >= 0)
            d->have_obs_low = k;
        else if ((k = parse_floats(line, "# obs_high:", d->obs_high, FRL_OBS_MAX_DIM)) >= 0)
            d->have_obs_high = k;
        else if ((k = parse_floats(line, "# action_low:", d->action_low, 1)) >= 0)
            d->have_action_low = k;
        else if ((k = parse_floats(line, "# action_high:", d->action_high, 1)) >= 0)
            d->have_action_high = k;
    }
}

static void add_transition(ref_data *d, const double *v, int line_no)
{
    if (d->n == d->cap) {
        d->cap = d->cap ? 2 * d->cap : 256;
        d->t = realloc(d->t, (size_t)d->cap * sizeof(*d->t));
        ck_assert_ptr_nonnull(d->t);
    }
    ref_transition *t = &d->t[d->n++];
    int k = 0, S = d->state_dim;
    t->elapsed = (int32_t)v[k++];
    for (int i = 0; i < S; i++)
        t->before[i] = v[k++];
    t->action[0] = v[k++];
    for (int i = 0; i < S; i++)
        t->after[i] = v[k++];
    for (int i = 0; i < d->obs_dim; i++)
        t->obs[i] = (float)v[k++];
    t->reward = v[k++];
    t->terminated = (int)v[k++];
    t->truncated = (int)v[k++];
    t->line = line_no;
}

static ref_data load_reference(const char *id)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s.txt", g_data_dir, id);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open reference data %s", path);
    ref_data d = {0};
    char line[4096];
    int line_no = 0;
    while (fgets(line, sizeof(line), f)) {
        line_no++;
        if (line[0] == '#') {
            parse_header(&d, line);
            continue;
        }
        if (line[0] == '\n')
            continue;
        ck_assert_msg(d.state_dim > 0 && d.action_dim == 1, "%s: missing dims header", path);
        int want = 1 + 2 * d.state_dim + d.action_dim + d.obs_dim + 3;
        double v[64];
        ck_assert_msg(parse_numbers(line, v, want) == 0, "%s:%d: malformed line", path, line_no);
        add_transition(&d, v, line_no);
    }
    fclose(f);
    ck_assert_msg(d.n > 0, "%s: no transitions", path);
    return d;
}

/* ---- a batch of one, as the vec env builds it --------------------------- */

typedef struct batch1 {
    frl_builtin_batch b;
    unsigned char *sims;
    frl_rng rng;
    union { int32_t i; float f; } action;
    float obs[FRL_OBS_MAX_DIM], reward, done_return;
    uint8_t terminated, truncated, reset_step, needs_reset;
    int32_t elapsed, done_length;
    double ep_return;
} batch1;

static void batch1_init(batch1 *w, const frl_env_class *c)
{
    memset(w, 0, sizeof(*w));
    w->sims = aligned_alloc(64, FRL_SIM_MAX_BYTES);
    ck_assert_ptr_nonnull(w->sims);
    memset(w->sims, 0, FRL_SIM_MAX_BYTES);
    w->rng = frl_rng_stream(1, 0);
    frl_builtin_batch *b = &w->b;
    b->sims = w->sims;
    b->rngs = &w->rng;
    b->actions = &w->action;
    b->obs = w->obs;
    b->rewards = &w->reward;
    b->terminated = &w->terminated;
    b->truncated = &w->truncated;
    b->reset_step = &w->reset_step;
    b->needs_reset = &w->needs_reset;
    b->elapsed = &w->elapsed;
    b->ep_return = &w->ep_return;
    b->done_return = &w->done_return;
    b->done_length = &w->done_length;
    b->max_episode_steps = c->max_episode_steps;
}

static void batch1_step(batch1 *w, const frl_env_class *c, const ref_transition *t)
{
    w->elapsed = t->elapsed;
    w->needs_reset = 0;
    if (c->action_n > 0)
        w->action.i = (int32_t)t->action[0];
    else
        w->action.f = (float)t->action[0];
    c->step_range(&w->b, 0, 1);
}

/* ---- comparisons -------------------------------------------------------- */

/* Distance in float32 units in the last place (ordered integer mapping). */
static int64_t ulp_distance(float a, float b)
{
    int32_t ia, ib;
    memcpy(&ia, &a, sizeof(ia));
    memcpy(&ib, &b, sizeof(ib));
    int64_t la = ia < 0 ? (int64_t)INT32_MIN - ia : ia;
    int64_t lb = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
    return la > lb ? la - lb : lb - la;
}

/* Whether the recorded state after the step sits within FLAG_MARGIN of the
 * termination threshold, where a last-bit difference may flip the flag. */
static int near_threshold(const char *id, const double *s)
{
    if (strcmp(id, "CartPole-v1") == 0) {
        const double theta_thr = 12 * 2 * 3.141592653589793 / 360;
        return fabs(fabs(s[0]) - 2.4) <= FLAG_MARGIN || fabs(fabs(s[2]) - theta_thr) <= FLAG_MARGIN;
    }
    if (strcmp(id, "Acrobot-v1") == 0)
        return fabs(-cos(s[0]) - cos(s[1] + s[0]) - 1.0) <= FLAG_MARGIN;
    if (strcmp(id, "MountainCar-v0") == 0 || strcmp(id, "MountainCarContinuous-v0") == 0) {
        /* Goal: position >= goal && velocity >= 0; a float32 state compares
         * with the goal rounded to float32, so both count as thresholds. */
        double goal = strcmp(id, "MountainCar-v0") == 0 ? 0.5 : 0.45;
        double goal32 = (double)(float)goal;
        int near_pos = fabs(s[0] - goal) <= FLAG_MARGIN || fabs(s[0] - goal32) <= FLAG_MARGIN;
        int near_vel = fabs(s[1]) <= FLAG_MARGIN;
        return (near_pos && s[1] >= -FLAG_MARGIN) ||
               (near_vel && s[0] >= fmin(goal, goal32) - FLAG_MARGIN);
    }
    return 0;
}

typedef struct stats {
    int checked, failed, flag_skips, terminated, truncated, exact;
    double state_ratio, reward_ratio, obs_abs;
    int64_t obs_ulps;
} stats;

/* Compares one stepped batch against t; returns a short reason or NULL. */
static const char *compare(const char *id, const frl_env_class *c, const batch1 *w,
                           const ref_transition *t, stats *st, char *why, size_t why_len)
{
    double state[FRL_SIM_MAX_STATE];
    c->get_state(w->sims, state);
    const char *bad = NULL;
    for (int i = 0; i < c->state_dim; i++) {
        double r = fabs(state[i] - t->after[i]) / (STATE_BAR * fmax(1.0, fabs(t->after[i])));
        st->state_ratio = fmax(st->state_ratio, r);
        if (!(r <= 1.0) && !bad) {
            snprintf(why, why_len, "state[%d] %.17g vs ref %.17g", i, state[i], t->after[i]);
            bad = why;
        }
    }
    for (int i = 0; i < c->obs_dim; i++) {
        int64_t u = ulp_distance(w->obs[i], t->obs[i]);
        double a = fabs((double)w->obs[i] - (double)t->obs[i]);
        if (u > st->obs_ulps)
            st->obs_ulps = u;
        st->obs_abs = fmax(st->obs_abs, a);
        if (!(u <= 1 || a <= OBS_ABS_BAR) && !bad) {
            snprintf(why, why_len, "obs[%d] %.9g vs ref %.9g", i, (double)w->obs[i], (double)t->obs[i]);
            bad = why;
        }
    }
    double rr = fabs((double)w->reward - t->reward) / (REWARD_BAR * fmax(1.0, fabs(t->reward)));
    st->reward_ratio = fmax(st->reward_ratio, rr);
    if (!(rr <= 1.0) && !bad) {
        snprintf(why, why_len, "reward %.9g vs ref %.17g", (double)w->reward, t->reward);
        bad = why;
    }
    if (w->terminated != t->terminated) {
        if (near_threshold(id, t->after)) {
            st->flag_skips++;
        } else if (!bad) {
            snprintf(why, why_len, "terminated %d vs ref %d", w->terminated, t->terminated);
            bad = why;
        }
    }
    if (w->truncated != t->truncated && !bad) {
        snprintf(why, why_len, "truncated %d vs ref %d", w->truncated, t->truncated);
        bad = why;
    }
    /* Bookkeeping the step loop must do around the dynamics. */
    if (!bad && (w->elapsed != t->elapsed + 1 || w->reset_step != 0 ||
                 w->needs_reset != (w->terminated | w->truncated))) {
        snprintf(why, why_len, "batch bookkeeping (elapsed %d, needs_reset %d)", w->elapsed,
                 w->needs_reset);
        bad = why;
    }
    int exact = memcmp(state, t->after, sizeof(double) * (size_t)c->state_dim) == 0 &&
                memcmp(w->obs, t->obs, sizeof(float) * (size_t)c->obs_dim) == 0 &&
                w->reward == (float)t->reward && w->terminated == t->terminated;
    st->exact += exact;
    if (g_exact && !exact && !bad) {
        snprintf(why, why_len, "not bit-exact (FRL_REFERENCE_EXACT is set)");
        bad = why;
    }
    st->checked++;
    st->terminated += t->terminated;
    st->truncated += t->truncated;
    return bad;
}

static void report_failure(const char *id, const char *pass, const ref_transition *t,
                           const char *why, stats *st)
{
    if (st->failed++ < MAX_SHOWN)
        printf("  FAIL %s (%s) data line %d: %s\n", id, pass, t->line, why);
}

static void print_stats(const char *id, const char *pass, const stats *st)
{
    printf("%-25s %-8s %4d transitions (%d terminated, %d truncated), %d bit-exact; max error: "
           "state %.3g of bar, obs %lld ulp (abs %.3g), reward %.3g of bar; "
           "flag skips near threshold %d; failures %d\n",
           id, pass, st->checked, st->terminated, st->truncated, st->exact, st->state_ratio,
           (long long)st->obs_ulps, st->obs_abs, st->reward_ratio, st->flag_skips, st->failed);
    fflush(stdout);
}

static const frl_env_class *find_class(int index)
{
    const frl_env_class *c = frl_env_class_find(env_ids[index]);
    ck_assert_msg(c != NULL, "%s not registered", env_ids[index]);
    return c;
}

/* Dimensions, time limit and space bounds equal Gymnasium's, bit for bit. */
static void check_dims(const frl_env_class *c, const ref_data *d)
{
    ck_assert_int_eq(d->state_dim, c->state_dim);
    ck_assert_int_eq(d->obs_dim, c->obs_dim);
    ck_assert_int_eq(d->action_dim, c->action_dim);
    ck_assert_int_eq(d->max_steps, c->max_episode_steps);
    ck_assert_int_eq(d->have_obs_low, c->obs_dim);
    ck_assert_int_eq(d->have_obs_high, c->obs_dim);
    ck_assert_mem_eq(d->obs_low, c->obs_low, sizeof(float) * (size_t)c->obs_dim);
    ck_assert_mem_eq(d->obs_high, c->obs_high, sizeof(float) * (size_t)c->obs_dim);
    ck_assert_int_eq(d->action_n, c->action_n);
    if (c->action_n == 0) {
        ck_assert_int_eq(d->have_action_low, 1);
        ck_assert_int_eq(d->have_action_high, 1);
        ck_assert_mem_eq(d->action_low, c->action_low, sizeof(float));
        ck_assert_mem_eq(d->action_high, c->action_high, sizeof(float));
    }
}

/* ---- tests -------------------------------------------------------------- */

START_TEST(test_reference_transitions)
{
    const char *id = env_ids[_i];
    const frl_env_class *c = find_class(_i);
    ref_data d = load_reference(id);
    check_dims(c, &d);
    batch1 w;
    batch1_init(&w, c);
    stats st = {0};
    char why[256];
    for (int k = 0; k < d.n; k++) {
        const ref_transition *t = &d.t[k];
        ck_assert_msg(c->set_state(w.sims, t->before) == 0, "%s line %d: set_state refused", id,
                      t->line);
        batch1_step(&w, c, t);
        const char *bad = compare(id, c, &w, t, &st, why, sizeof(why));
        if (bad)
            report_failure(id, "one-step", t, bad, &st);
    }
    print_stats(id, "one-step", &st);
    free(w.sims);
    free(d.t);
    ck_assert_msg(st.failed == 0, "%s: %d of %d transitions outside the bars", id, st.failed,
                  st.checked);
}
END_TEST

/* Consecutive recorded transitions (state_before equal to the previous
 * state_after) are stepped without set_state, for at most MAX_CHAIN steps. */
START_TEST(test_reference_replay)
{
    const char *id = env_ids[_i];
    const frl_env_class *c = find_class(_i);
    ref_data d = load_reference(id);
    batch1 w;
    batch1_init(&w, c);
    stats st = {0};
    char why[256];
    int chain = 0;
    for (int k = 0; k < d.n; k++) {
        const ref_transition *t = &d.t[k];
        int continues = k > 0 && chain < MAX_CHAIN && !d.t[k - 1].terminated &&
                        !d.t[k - 1].truncated &&
                        memcmp(d.t[k - 1].after, t->before, sizeof(double) * (size_t)c->state_dim) == 0;
        if (!continues) {
            ck_assert_int_eq(c->set_state(w.sims, t->before), 0);
            chain = 0;
        }
        chain++;
        batch1_step(&w, c, t);
        const char *bad = compare(id, c, &w, t, &st, why, sizeof(why));
        if (bad)
            report_failure(id, "replay", t, bad, &st);
    }
    print_stats(id, "replay", &st);
    free(w.sims);
    free(d.t);
    ck_assert_msg(st.failed == 0, "%s: %d of %d replayed transitions outside the bars", id,
                  st.failed, st.checked);
}
END_TEST

START_TEST(test_registry)
{
    static const int32_t limits[N_ENVS] = {500, 200, 500, 200, 999};
    /* The reference ids come first; the environments for memory follow. */
    ck_assert_int_eq(frl_env_class_count(), N_ENVS + N_MEMORY_ENVS);
    for (int i = 0; i < N_ENVS; i++) {
        const frl_env_class *c = frl_env_class_find(env_ids[i]);
        ck_assert_ptr_nonnull(c);
        ck_assert_str_eq(c->name, env_ids[i]);
        ck_assert_ptr_eq(frl_env_class_at(i), c);
        ck_assert_int_eq(c->max_episode_steps, limits[i]);
        ck_assert_int_le(c->obs_dim, FRL_OBS_MAX_DIM);
        ck_assert_int_le(c->state_dim, FRL_SIM_MAX_STATE);
        ck_assert_int_eq(c->action_dim, 1);
        ck_assert_int_eq(c->action_n > 0, c->action_low == NULL);
    }
    ck_assert_ptr_null(frl_env_class_at(-1));
    ck_assert_ptr_null(frl_env_class_at(N_ENVS + N_MEMORY_ENVS));
    ck_assert_ptr_null(frl_env_class_find("cartpole-v1"));
    ck_assert_ptr_null(frl_env_class_find("CartPole-v0"));
    ck_assert_ptr_null(frl_env_class_find("CartPole-v1 "));
    ck_assert_ptr_null(frl_env_class_find(""));
    ck_assert_ptr_null(frl_env_class_find(NULL));
}
END_TEST

/* set_state refuses non-finite values in every slot and leaves the sim as
 * it was; get_state returns what set_state accepted. */
START_TEST(test_set_state_rejects)
{
    const frl_env_class *c = find_class(_i);
    unsigned char *sim = aligned_alloc(64, FRL_SIM_MAX_BYTES);
    ck_assert_ptr_nonnull(sim);
    frl_rng rng = frl_rng_stream(7, 0);
    float obs[FRL_OBS_MAX_DIM];
    c->reset(sim, &rng, obs);
    double good[FRL_SIM_MAX_STATE], got[FRL_SIM_MAX_STATE];
    c->get_state(sim, good);
    ck_assert_int_eq(c->set_state(sim, good), 0);
    const double bad_values[] = {(double)NAN, (double)INFINITY, -(double)INFINITY};
    for (int i = 0; i < c->state_dim; i++) {
        for (int j = 0; j < 3; j++) {
            double s[FRL_SIM_MAX_STATE];
            memcpy(s, good, sizeof(s));
            s[i] = bad_values[j];
            ck_assert_int_eq(c->set_state(sim, s), -1);
            c->get_state(sim, got);
            ck_assert_mem_eq(got, good, sizeof(double) * (size_t)c->state_dim);
        }
    }
    float obs2[FRL_OBS_MAX_DIM];
    c->observe(sim, obs2);
    ck_assert_mem_eq(obs, obs2, sizeof(float) * (size_t)c->obs_dim);
    free(sim);
}
END_TEST

static void expect_set_state(const frl_env_class *c, const double *s, int want)
{
    unsigned char *sim = aligned_alloc(64, FRL_SIM_MAX_BYTES);
    ck_assert_ptr_nonnull(sim);
    ck_assert_int_eq(c->set_state(sim, s), want);
    free(sim);
}

START_TEST(test_set_state_impossible)
{
    const double pi = 3.141592653589793;
    const frl_env_class *ac = frl_env_class_find("Acrobot-v1");
    expect_set_state(ac, (const double[]){pi, -pi, 4 * pi, -9 * pi}, 0);
    expect_set_state(ac, (const double[]){nextafter(pi, 4), 0, 0, 0}, -1);
    expect_set_state(ac, (const double[]){0, -3.5, 0, 0}, -1);
    expect_set_state(ac, (const double[]){0, 0, 13, 0}, -1);
    expect_set_state(ac, (const double[]){0, 0, 0, -29}, -1);
    const frl_env_class *mcc = frl_env_class_find("MountainCarContinuous-v0");
    expect_set_state(mcc, (const double[]){-0.5, 0.01, 0}, 0);
    expect_set_state(mcc, (const double[]){-0.5, 0.0, 1}, 0);
    expect_set_state(mcc, (const double[]){-0.5, 0.01, 1}, -1); /* 0.01 is not a float32 */
    expect_set_state(mcc, (const double[]){-0.5, (double)0.01f, 1}, 0);
    expect_set_state(mcc, (const double[]){-0.5, 0.0, 0.5}, -1);
    expect_set_state(mcc, (const double[]){-0.5, 0.0, 2}, -1);
    expect_set_state(mcc, (const double[]){-0.5, 0.0, (double)NAN}, -1);
}
END_TEST

/* Autoreset: the step after an episode end ignores its action, resets, and
 * reports a zero reward with reset_step set. */
START_TEST(test_autoreset_step)
{
    const frl_env_class *c = find_class(_i);
    batch1 w;
    batch1_init(&w, c);
    frl_rng rng = frl_rng_stream(3, 0);
    float obs[FRL_OBS_MAX_DIM];
    c->reset(w.sims, &rng, obs);
    w.needs_reset = 1;
    w.elapsed = 17;
    w.rng = frl_rng_stream(3, 0);
    w.action.i = 0;
    c->step_range(&w.b, 0, 1);
    ck_assert_int_eq(w.reset_step, 1);
    ck_assert_int_eq(w.needs_reset, 0);
    ck_assert_int_eq(w.elapsed, 0);
    ck_assert(w.reward == 0.0f);
    ck_assert_mem_eq(w.obs, obs, sizeof(float) * (size_t)c->obs_dim);
    free(w.sims);
}
END_TEST

static Suite *reference_suite(void)
{
    Suite *s = suite_create("env_reference");
    TCase *tc = tcase_create("reference");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_reference_transitions, 0, N_ENVS);
    tcase_add_loop_test(tc, test_reference_replay, 0, N_ENVS);
    suite_add_tcase(s, tc);
    TCase *api = tcase_create("interface");
    tcase_add_test(api, test_registry);
    tcase_add_loop_test(api, test_set_state_rejects, 0, N_ENVS);
    tcase_add_test(api, test_set_state_impossible);
    tcase_add_loop_test(api, test_autoreset_step, 0, N_ENVS);
    suite_add_tcase(s, api);
    return s;
}

int main(int argc, char **argv)
{
    const char *env_dir = getenv("FRL_TEST_DATA_DIR");
    const char *exact = getenv("FRL_REFERENCE_EXACT");
    g_exact = exact != NULL && *exact != '\0' && strcmp(exact, "0") != 0;
    if (argc > 1)
        g_data_dir = argv[1];
    else if (env_dir && *env_dir)
        g_data_dir = env_dir;
    return frl_test_run(reference_suite());
}
