/* Trainer checkpoints: everything a run needs to continue exactly where it stopped. */
#include <stdio.h>
#include <string.h>

#include "env/vec_env_state.h"
#include "rl/trainer.h"

enum { MAX_SECTIONS = 40, COUNTERS = 7 };

typedef struct save_buf {
    char settings[FRL_SETTINGS_MAX];
    int64_t counters[COUNTERS];
    int64_t env_totals[4];
    double rn[4];
    uint64_t seed;
} save_buf;

static void trainer_sections(const frl_trainer *t, save_buf *b, frl_section *s, int32_t *n)
{
    const int64_t c[COUNTERS] = {t->env_steps, t->updates, t->rollout_steps, t->episodes,
                                 t->ppo.adam.t, t->started, t->B};
    memcpy(b->counters, c, sizeof c);
    b->rn[0] = t->rn_count;
    b->rn[1] = t->rn_mean;
    b->rn[2] = t->rn_m2;
    b->rn[3] = t->rn_scale;
    b->seed = t->seed;
    frl_section_add(s, n, "kind", FRL_DTYPE_TEXT, 7, "trainer");
    frl_section_add(s, n, "trainer.env", FRL_DTYPE_TEXT, strlen(t->env_name), t->env_name);
    frl_section_add(s, n, "trainer.settings", FRL_DTYPE_TEXT, strlen(b->settings), b->settings);
    frl_section_add(s, n, "trainer.counters", FRL_DTYPE_I64, COUNTERS, b->counters);
    frl_section_add(s, n, "trainer.seed", FRL_DTYPE_U64, 1, &b->seed);
    frl_section_add(s, n, "trainer.adam", FRL_DTYPE_F32, 2 * t->ppo.grad_stride, t->ppo.adam.m);
    frl_section_add(s, n, "trainer.recent_return", FRL_DTYPE_F32, FRL_RECENT_EPISODES, t->recent_return);
    frl_section_add(s, n, "trainer.recent_length", FRL_DTYPE_I32, FRL_RECENT_EPISODES, t->recent_length);
    frl_section_add(s, n, "trainer.reward_norm", FRL_DTYPE_F64, 4, b->rn);
    frl_section_add(s, n, "trainer.disc_return", FRL_DTYPE_F64, (uint64_t)t->B, t->disc_return);
}

FRL_API frl_status frl_trainer_save(const frl_trainer *ct, const char *path)
{
    if (!ct || !path)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_trainer_save: %s is NULL", ct ? "path" : "trainer");
    frl_trainer *t = (frl_trainer *)ct; /* for its error buffer only */
    if (t->as)
        return frl_fail(t->err, FRL_ERR_UNSUPPORTED,
                        "frl_trainer_save: an async trainer (sampler.mode=async) cannot be saved "
                        "yet: its rollouts in flight and env groups have no file format");
    save_buf b;
    frl_policy_blob pb;
    frl_section s[MAX_SECTIONS];
    int32_t n = 0;
    frl_status st = frl_trainer_settings_text(t, b.settings, sizeof b.settings);
    if (st != FRL_OK)
        return frl_fail_msg(t->err, st, frl_last_error());
    trainer_sections(t, &b, s, &n);
    st = frl_vec_env_snapshot(t->venv, s, &n, b.env_totals, t->err);
    if (st == FRL_OK)
        st = frl_policy_blob_make(t->policy, &pb, s, &n, t->err);
    if (st == FRL_OK) {
        st = frl_container_write(path, &t->rt->alloc, s, n, t->err);
        frl_policy_blob_free(&pb);
    }
    if (st != FRL_OK)
        frl_fail(NULL, st, "frl_trainer_save: %s", t->err);
    return st;
}

/* ---- loading ---- */

static frl_status text_of(const frl_container *c, const char *name, char *buf, size_t size,
                          char *err)
{
    const frl_section *s = frl_container_find(c, name, FRL_DTYPE_TEXT, -1, err);
    if (!s)
        return FRL_ERR_FORMAT;
    if (s->count >= size)
        return frl_fail(err, FRL_ERR_FORMAT, "section %s is too long", name);
    memcpy(buf, s->data, s->count);
    buf[s->count] = '\0';
    return FRL_OK;
}

static frl_status restore_counters(frl_trainer *t, const frl_container *c, char *err)
{
    const frl_section *cs = frl_container_find(c, "trainer.counters", FRL_DTYPE_I64, COUNTERS, err);
    const frl_section *sd = frl_container_find(c, "trainer.seed", FRL_DTYPE_U64, 1, err);
    const frl_section *ad = frl_container_find(c, "trainer.adam", FRL_DTYPE_F32,
                                               2 * (int64_t)t->ppo.grad_stride, err);
    const frl_section *rr = frl_container_find(c, "trainer.recent_return", FRL_DTYPE_F32,
                                               FRL_RECENT_EPISODES, err);
    const frl_section *rl = frl_container_find(c, "trainer.recent_length", FRL_DTYPE_I32,
                                               FRL_RECENT_EPISODES, err);
    const frl_section *rn = frl_container_find(c, "trainer.reward_norm", FRL_DTYPE_F64, 4, err);
    const frl_section *dr = frl_container_find(c, "trainer.disc_return", FRL_DTYPE_F64, t->B, err);
    if (!cs || !sd || !ad || !rr || !rl || !rn || !dr)
        return FRL_ERR_FORMAT;
    const int64_t *k = cs->data;
    if (k[0] < 0 || k[1] < 0 || k[2] < 0 || k[3] < 0 || k[4] < 0 || k[6] != t->B)
        return frl_fail(err, FRL_ERR_FORMAT, "trainer.counters are inconsistent");
    t->env_steps = k[0];
    t->updates = k[1];
    t->rollout_steps = k[2];
    t->episodes = k[3];
    t->ppo.adam.t = k[4];
    t->started = (int32_t)k[5];
    t->seed = *(const uint64_t *)sd->data;
    memcpy(t->ppo.adam.m, ad->data, sizeof(float) * 2 * t->ppo.grad_stride);
    t->ppo.dev_adam_stale = 1;
    memcpy(t->recent_return, rr->data, sizeof t->recent_return);
    memcpy(t->recent_length, rl->data, sizeof t->recent_length);
    const double *r = rn->data;
    t->rn_count = r[0];
    t->rn_mean = r[1];
    t->rn_m2 = r[2];
    t->rn_scale = (float)r[3];
    memcpy(t->disc_return, dr->data, sizeof(double) * (size_t)t->B);
    return FRL_OK;
}

/* Settings from the file, with the caller's keys on top. */
static frl_status load_settings(frl_runtime *rt, const frl_container *c, const frl_config *over,
                                frl_config **out, char *env, char *err)
{
    char text[FRL_SETTINGS_MAX];
    frl_status st = text_of(c, "trainer.env", env, FRL_ENV_NAME_MAX, err);
    if (st == FRL_OK)
        st = text_of(c, "trainer.settings", text, sizeof text, err);
    if (st == FRL_OK)
        st = frl_config_create(out, &rt->alloc);
    if (st != FRL_OK)
        return st;
    if (frl_config_parse(*out, text) != FRL_OK) {
        frl_fail(err, FRL_ERR_FORMAT, "trainer.settings: %s", frl_config_last_error(*out));
        frl_config_destroy(*out);
        return FRL_ERR_FORMAT;
    }
    frl_config_overlay(*out, over);
    return FRL_OK;
}

static frl_status restore(frl_trainer *t, const frl_container *c, char *err)
{
    frl_status st = restore_counters(t, c, err);
    if (st == FRL_OK)
        st = frl_policy_restore_state(t->policy, c, err);
    if (st == FRL_OK)
        st = frl_vec_env_restore(t->venv, c, err);
    return st;
}

static frl_status load_from(frl_trainer **out, frl_runtime *rt, const frl_container *c,
                            const frl_config *over, char *err)
{
    char env[FRL_ENV_NAME_MAX];
    frl_config *cfg;
    frl_status st = load_settings(rt, c, over, &cfg, env, err);
    if (st != FRL_OK)
        return st;
    if (frl_config_int(cfg, "sampler.mode") == 1) {
        frl_config_destroy(cfg);
        return frl_fail(err, FRL_ERR_UNSUPPORTED, "frl_trainer_load: continuing a run with "
                        "sampler.mode=async is not supported yet (load it in sync mode)");
    }
    frl_vec_env *venv;
    int32_t n = (int32_t)frl_config_int(cfg, "train.num_envs");
    if ((st = frl_vec_env_create_as(&venv, rt, env, n, cfg, "frl_trainer_load")) != FRL_OK) {
        frl_config_destroy(cfg);
        return frl_fail_msg(err, st, frl_last_error());
    }
    if ((st = frl_trainer_build(out, rt, &venv, 1, 1, cfg, env, "frl_trainer_load")) != FRL_OK)
        return frl_fail_msg(err, st, frl_last_error());
    if ((st = restore(*out, c, err)) != FRL_OK) {
        frl_trainer_destroy(*out);
        *out = NULL;
        return st;
    }
    (*out)->steps_at_start = (*out)->env_steps;
    frl_trainer_refresh_progress(*out);
    return FRL_OK;
}

FRL_API frl_status frl_trainer_load(frl_trainer **out, frl_runtime *rt, const char *path,
                                    const frl_config *cfg)
{
    if (out)
        *out = NULL;
    if (!out || !rt || !path)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_trainer_load: %s is NULL",
                        !out ? "out" : !rt ? "runtime" : "path");
    char err[FRL_ERRMSG_SIZE];
    frl_container *c;
    frl_status st = frl_container_read(&c, path, &rt->alloc, err);
    if (st != FRL_OK)
        return frl_fail(NULL, st, "frl_trainer_load: %s", err);
    char kind[16];
    st = text_of(c, "kind", kind, sizeof kind, err);
    if (st == FRL_OK && strcmp(kind, "trainer") != 0)
        st = frl_fail(err, FRL_ERR_FORMAT, "%s holds a %s, not a trainer checkpoint", path, kind);
    if (st == FRL_OK)
        st = load_from(out, rt, c, cfg, err);
    frl_container_free(c);
    return st == FRL_OK ? st : frl_fail(NULL, st, "frl_trainer_load: %s", err);
}
