/* model_forward's paths (FRL_CUDA_PATH_* in lib/core/plugin_api.h). What each is for,
 * as measured on an H200 with bench/gpu (bench/gpu/README.md has the figures; the
 * copies-plus-synchronise floor of a batch-1 call is about 9 us there):
 *
 * A batch of one to a few dozen rows costs launches and round trips, not arithmetic:
 * op by op (LAUNCH) it is an upload, two kernels a layer and a download, 45 us at batch
 * 1. A graph (GRAPH) pays one launch for all of them (26 us); the fused kernel on a
 * cluster (FUSED) makes the layers one kernel (17 to 20 us); MAPPED drops the copies
 * too, its kernel reading the observations and writing the outputs over the bus (19
 * us: the bus reads inside the kernel cost what the copies did). From a few hundred
 * rows the products are the work and GRAPH is best; from 16,384 rows the copies and the
 * products both matter, and STREAMS overlaps the one with the other by running chunks
 * on two streams (682 against 840 us at 65,536 rows). RUNS is one kernel on
 * page-locked memory, a block per 16 rows sharing each weight load: at 2,048 and 4,096
 * rows it beats GRAPH (60 and 78 against 70 and 96 us), at 1,024 and 8,192 it does
 * not (a launch and the bus reads inside the kernel, then too few blocks a
 * multiprocessor to hide the loads).
 *
 * Every path computes the same function; LAUNCH, GRAPH and STREAMS the same bits
 * (cuBLAS's products, one chunk's rows independent of another's), FUSED and MAPPED
 * theirs (the fused kernel sums in its own fixed order), RUNS its own (each sum in one
 * chain, in input order), within the products' tolerance of the others. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/model.h"

/* AUTO's choices, from the measurements above: the fused forward up to this many rows,
 * the two streams from this many, in chunks of about this many. */
enum { FUSED_AUTO_ROWS = 64, STREAMS_MIN_ROWS = 16384, STREAMS_CHUNK_ROWS = 16384 };
/* ...and RUNS over this range of rows, on page-locked memory (at 1,024 and 8,192 rows
 * GRAPH was faster on an H200; at 2,048 and 4,096 RUNS, by 14 and 19 %). */
enum { RUNS_AUTO_MIN = 2048, RUNS_AUTO_MAX = 4096 };

static const char *const path_names[FRL_CUDA_PATHS] = {"auto", "launch", "graph",
                                                       "fused", "mapped", "streams",
                                                       "runs"};

const char *frl_cuda_path_name(int32_t path)
{
    return path >= 0 && path < FRL_CUDA_PATHS ? path_names[path] : NULL;
}

/* ---- the plan of the fused kernel ---- */

void frl_cuda_model_plan(frl_cuda_model *m)
{
    const frl_net_desc *n = &m->net.desc;
    frl_dev_fused *f = &m->fused;
    *f = (frl_dev_fused){.obs_w = n->obs_w};
    /* the fused and run kernels read observations as the networks' input: no encoder,
     * no recurrent towers (model_step.c runs those) */
    m->fused_ok = !n->cnn.layers && !n->towers && n->obs_w <= FRL_DEV_FUSED_MAX_WIDTH &&
                  frl_dev_plan_mlp(&n->actor, FRL_DEV_FUSED_MAX_WIDTH, &f->actor) &&
                  frl_dev_plan_mlp(&n->critic, FRL_DEV_FUSED_MAX_WIDTH, &f->critic) &&
                  (!n->shared || frl_dev_plan_mlp(&n->trunk, FRL_DEV_FUSED_MAX_WIDTH, &f->trunk));
    m->fused_fast = m->fused_ok && m->net.ops->fused_blocks(m->net.d) > 1;
    m->runs_fit = m->fused_ok && frl_cuda_runs_fit(f, 1);
}

/* Every width of the trunk and the actor (and the critic, with `critic`) within
 * forward_runs' limit. */
int frl_cuda_runs_fit(const frl_dev_fused *f, int critic)
{
    const frl_dev_fused_mlp *ms[3] = {&f->trunk, &f->actor, &f->critic};
    if (f->obs_w > FRL_DEV_RUN_MAX_WIDTH)
        return 0;
    for (int i = 0; i < 2 + !!critic; i++)
        for (int32_t l = 0; l <= ms[i]->layers; l++)
            if (ms[i]->width[l] > FRL_DEV_RUN_MAX_WIDTH)
                return 0;
    return 1;
}

/* The plan with the normaliser as the model holds it now. */
static frl_dev_fused fused_now(const frl_cuda_model *m)
{
    frl_dev_fused f = m->fused;
    if (m->net.desc.obs_norm) {
        f.norm_mean = m->net.norm_mean;
        f.norm_inv_std = m->net.norm_inv_std;
        f.clip = m->net.norm_clip;
    }
    return f;
}

/* ---- page-locked staging ---- */

/* 0 when the staging buffers are there (allocated now if need be). Without page-locked
 * memory the paths that need it are off for the model, and the failure the ops kept is
 * cleared: nothing ran. */
static int stage_ready(frl_cuda_model *m)
{
    if (m->stage_in)
        return 0;
    if (m->stage_failed)
        return 1;
    const frl_dev_ops *o = m->net.ops;
    const frl_net_desc *n = &m->net.desc;
    size_t f = sizeof(float);
    m->stage_rows = n->max_rows < FRL_CUDA_STAGE_ROWS ? n->max_rows : FRL_CUDA_STAGE_ROWS;
    size_t rows = (size_t)m->stage_rows;
    m->stage_in = o->alloc_pinned(m->net.d, f * rows * (size_t)n->obs_w);
    m->stage_out = o->alloc_pinned(m->net.d, f * rows * (size_t)n->out_w);
    m->stage_value = o->alloc_pinned(m->net.d, f * rows);
    if (m->stage_in && m->stage_out && m->stage_value)
        return 0;
    char why[256];
    o->sync(m->net.d, why, sizeof why);
    o->release_pinned(m->net.d, m->stage_in);
    o->release_pinned(m->net.d, m->stage_out);
    o->release_pinned(m->net.d, m->stage_value);
    m->stage_in = m->stage_out = m->stage_value = NULL;
    m->stage_failed = 1;
    return 1;
}

/* ---- LAUNCH, and the work GRAPH and FUSED capture ---- */

/* One forward's work on the model's stream: obs to out and value, in the memory the
 * path says (device, or page-locked host for copies). */
typedef struct fwd_job {
    frl_cuda_model *m;
    int32_t path, rows;
    const float *obs;
    float *out, *value;
    float *state; /* FRL_CUDA_PATH_STEP: the rows' states, up and back */
} fwd_job;

static void enqueue_layers(const fwd_job *j)
{
    frl_cuda_model *m = j->m;
    const frl_net_desc *n = &m->net.desc;
    const frl_dev_ops *o = m->net.ops;
    size_t f = sizeof(float);
    frl_dev_pass pass;
    frl_dev_pass_layout(n, j->rows, 0, m->ws, &pass);
    frl_dev_net_forward(&m->net, j->rows, m->obs, &pass,
                        FRL_DEV_ACTOR | (j->value ? FRL_DEV_CRITIC : 0u));
    o->get(m->net.d, j->out, pass.out, f * (size_t)j->rows * (size_t)n->out_w);
    if (j->value)
        o->get(m->net.d, j->value, pass.value, f * (size_t)j->rows);
}

/* The fused kernel between the copies, its outputs in the workspace. */
static void enqueue_fused(const fwd_job *j)
{
    frl_cuda_model *m = j->m;
    const frl_dev_ops *o = m->net.ops;
    size_t f = sizeof(float), rows = (size_t)j->rows, ow = (size_t)m->net.desc.out_w;
    float *out = m->ws, *value = j->value ? m->ws + rows * ow : NULL;
    frl_dev_fused p = fused_now(m);
    o->forward_fused(m->net.d, j->rows, &p, m->net.params, m->obs, out, value);
    o->get(m->net.d, j->out, out, f * rows * ow);
    if (j->value)
        o->get(m->net.d, j->value, value, f * rows);
}

static void enqueue_forward(void *arg)
{
    const fwd_job *j = arg;
    frl_cuda_model *m = j->m;
    if (j->path == FRL_CUDA_PATH_STEP) {
        frl_cuda_enqueue_step(m, j->rows, j->obs, j->state, j->out, j->value, j->state);
        return;
    }
    size_t bytes = sizeof(float) * (size_t)j->rows * (size_t)m->net.desc.obs_w;
    m->net.ops->put(m->net.d, m->obs, j->obs, bytes);
    if (j->path == FRL_CUDA_PATH_FUSED)
        enqueue_fused(j);
    else
        enqueue_layers(j);
}

static int forward_launch(frl_cuda_model *m, int32_t rows, const float *obs, float *out,
                          float *value, char *err, size_t err_size)
{
    fwd_job j = {m, FRL_CUDA_PATH_LAUNCH, rows, obs, out, value, NULL};
    enqueue_forward(&j);
    return m->net.ops->sync(m->net.d, err, err_size);
}

/* ---- GRAPH and FUSED ---- */

void frl_cuda_model_drop_graphs(frl_cuda_model *m)
{
    for (int32_t i = 0; i < FRL_CUDA_FWD_GRAPHS; i++) {
        m->net.ops->graph_destroy(m->net.d, m->graphs[i].g);
        m->graphs[i] = (frl_cuda_fwd_graph){0};
    }
}

static int same_key(const frl_cuda_fwd_key *a, const frl_cuda_fwd_key *b)
{
    return a->path == b->path && a->rows == b->rows && a->obs == b->obs && a->out == b->out &&
           a->value == b->value && a->clip == b->clip;
}

/* The entry of key k, or the least recently used one, emptied and given the key. */
static frl_cuda_fwd_graph *graph_entry(frl_cuda_model *m, const frl_cuda_fwd_key *k)
{
    frl_cuda_fwd_graph *lru = &m->graphs[0];
    for (int32_t i = 0; i < FRL_CUDA_FWD_GRAPHS; i++) {
        frl_cuda_fwd_graph *e = &m->graphs[i];
        if (e->used && same_key(&e->key, k))
            return e;
        lru = e->used < lru->used ? e : lru;
    }
    m->net.ops->graph_destroy(m->net.d, lru->g);
    *lru = (frl_cuda_fwd_graph){.key = *k};
    return lru;
}

/* The job's graph: cached, or captured now on the key's second sighting; NULL when the
 * caller enqueues the work instead (first sighting, or capture refused). */
static void *graph_for(frl_cuda_model *m, const fwd_job *j)
{
    frl_cuda_fwd_key k = {j->path, j->rows, j->obs, j->out, j->value, m->net.norm_clip};
    frl_cuda_fwd_graph *e = graph_entry(m, &k);
    int seen = e->used != 0;
    e->used = ++m->forwards;
    if (e->g || !seen || e->refused)
        return e->g;
    char why[256];
    e->g = m->net.ops->graph_capture(m->net.d, enqueue_forward, (void *)j, why, sizeof why);
    e->refused = e->g == NULL;
    return e->g;
}

static int run_job(frl_cuda_model *m, const fwd_job *j, char *err, size_t err_size)
{
    void *g = graph_for(m, j);
    if (g)
        m->net.ops->graph_launch(m->net.d, g);
    else
        enqueue_forward((void *)j);
    return m->net.ops->sync(m->net.d, err, err_size);
}

/* Straight from and to the caller's memory when it is all page-locked (pinned), else
 * through the staging buffers, so that one graph serves a caller whose buffers move. */
static int forward_graph(frl_cuda_model *m, int32_t path, int pinned, int32_t rows,
                         const float *obs, float *out, float *value, char *err,
                         size_t err_size)
{
    const frl_net_desc *n = &m->net.desc;
    size_t f = sizeof(float), ob = f * (size_t)rows * (size_t)n->obs_w;
    size_t outb = f * (size_t)rows * (size_t)n->out_w;
    if (pinned) {
        fwd_job j = {m, path, rows, obs, out, value, NULL};
        return run_job(m, &j, err, err_size);
    }
    memcpy(m->stage_in, obs, ob);
    fwd_job j = {m, path, rows, m->stage_in, m->stage_out, value ? m->stage_value : NULL, NULL};
    if (run_job(m, &j, err, err_size))
        return 1;
    memcpy(out, m->stage_out, outb);
    if (value)
        memcpy(value, m->stage_value, f * (size_t)rows);
    return 0;
}

/* ---- a recurrent model's step, captured ---- */

int frl_cuda_step_graph(frl_cuda_model *m, int32_t rows, const float *obs, float *state,
                        float *out, float *value, char *err, size_t err_size)
{
    if (m->path == FRL_CUDA_PATH_LAUNCH || !m->state_host_pinned || stage_ready(m) ||
        rows > m->stage_rows)
        return -1;
    const frl_net_desc *n = &m->net.desc;
    size_t f = sizeof(float), r = (size_t)rows, sb = f * r * (size_t)n->state_w;
    memcpy(m->stage_in, obs, f * r * (size_t)n->obs_w);
    memcpy(m->state_host, state, sb);
    fwd_job j = {m, FRL_CUDA_PATH_STEP, rows, m->stage_in, m->stage_out,
                 value ? m->stage_value : NULL, m->state_host};
    if (run_job(m, &j, err, err_size))
        return 1; /* the caller's state as it was */
    memcpy(out, m->stage_out, f * r * (size_t)n->out_w);
    if (value)
        memcpy(value, m->stage_value, f * r);
    memcpy(state, m->state_host, sb);
    return 0;
}

/* ---- MAPPED ---- */

/* The caller's memory where the kernel can address it, else the staging buffer. */
static const float *mapped_in(frl_cuda_model *m, const float *p, size_t bytes)
{
    if (m->net.ops->mapped(m->net.d, p, bytes))
        return p;
    memcpy(m->stage_in, p, bytes);
    return m->stage_in;
}

static float *mapped_out(frl_cuda_model *m, float *p, size_t bytes, float *stage)
{
    return p && !m->net.ops->mapped(m->net.d, p, bytes) ? stage : p;
}

/* MAPPED and RUNS: one kernel on the caller's page-locked memory (or the staging's). */
static int forward_mapped(frl_cuda_model *m, int32_t path, int32_t rows, const float *obs,
                          float *out, float *value, char *err, size_t err_size)
{
    const frl_dev_ops *o = m->net.ops;
    size_t f = sizeof(float), r = (size_t)rows;
    size_t ob = f * r * (size_t)m->net.desc.obs_w, outb = f * r * (size_t)m->net.desc.out_w;
    const float *x = mapped_in(m, obs, ob);
    float *y = mapped_out(m, out, outb, m->stage_out);
    float *v = mapped_out(m, value, f * r, m->stage_value);
    frl_dev_fused p = fused_now(m);
    if (path == FRL_CUDA_PATH_RUNS)
        o->forward_runs(m->net.d, rows, 0, &p, m->net.params, NULL, NULL, x, y, v);
    else
        o->forward_fused(m->net.d, rows, &p, m->net.params, x, y, v);
    if (o->sync(m->net.d, err, err_size))
        return 1;
    if (y != out)
        memcpy(out, y, outb);
    if (v != value)
        memcpy(value, v, f * r);
    return 0;
}

/* ---- STREAMS ---- */

/* The second stream, its workspace and the events between the streams, released. */
static void streams_release(frl_cuda_model *m)
{
    const frl_dev_ops *o = m->net.ops;
    if (m->fork)
        o->event_destroy(m->net.d, m->fork);
    if (m->d2) {
        if (m->join)
            o->event_destroy(m->d2, m->join);
        o->release(m->d2, m->ws2);
        o->close(m->d2);
    }
    m->d2 = NULL;
    m->ws2 = NULL;
    m->fork = m->join = NULL;
}

/* 0 when STREAMS can run (set up now if need be). A half-made setup is undone, so that
 * m->d2 means all of it is there: a later call must not find the stream without its
 * workspace or events and launch into them. The failure the ops kept is cleared here,
 * as nothing ran: the call falls back to LAUNCH. */
static int streams_ready(frl_cuda_model *m)
{
    if (m->d2)
        return 0;
    if (m->streams_failed)
        return 1;
    const frl_dev_ops *o = m->net.ops;
    const frl_net_desc *n = &m->net.desc;
    char why[256];
    int32_t half = (n->max_rows + 1) / 2;
    if (o->open(&m->d2, m->device, m->tf32, why, sizeof why) == 0) {
        m->ws2 = o->alloc(m->d2, sizeof(float) * frl_dev_pass_floats(n, half, 0));
        m->fork = o->event_create(m->net.d);
        m->join = o->event_create(m->d2);
        if (m->ws2 && m->fork && m->join)
            return 0;
        streams_release(m);
        o->sync(m->net.d, why, sizeof why);
    }
    m->streams_failed = 1;
    return 1;
}

/* Chunk c of k rows from row first on stream d with workspace ws. */
static void enqueue_chunk(frl_cuda_model *m, frl_dev *d, float *ws, int32_t first, int32_t k,
                          const float *obs, float *out, float *value)
{
    const frl_net_desc *n = &m->net.desc;
    const frl_dev_ops *o = m->net.ops;
    size_t f = sizeof(float), ow = (size_t)n->obs_w, w = (size_t)n->out_w, r = (size_t)first;
    frl_dev_net net = m->net;
    net.d = d;
    frl_dev_pass pass;
    frl_dev_pass_layout(n, k, 0, ws, &pass);
    o->put(d, m->obs + r * ow, obs + r * ow, f * (size_t)k * ow);
    frl_dev_net_forward(&net, k, m->obs + r * ow, &pass,
                        FRL_DEV_ACTOR | (value ? FRL_DEV_CRITIC : 0u));
    o->get(d, out + r * w, pass.out, f * (size_t)k * w);
    if (value)
        o->get(d, value + r, pass.value, f * (size_t)k);
}

/* Chunks alternate between the model's stream and the second one: while one chunk's
 * observations go up, the other's layers run. The second stream starts behind what the
 * model's stream was given before (a new version of the weights), and the model's
 * stream goes on behind the second's last chunk. */
static int forward_streams(frl_cuda_model *m, int32_t rows, const float *obs, float *out,
                           float *value, char *err, size_t err_size)
{
    const frl_dev_ops *o = m->net.ops;
    int32_t chunks = (rows + STREAMS_CHUNK_ROWS - 1) / STREAMS_CHUNK_ROWS;
    chunks = chunks < 2 ? 2 : chunks;
    int32_t size = (rows + chunks - 1) / chunks;
    o->record(m->net.d, m->fork);
    o->wait(m->d2, m->fork);
    for (int32_t c = 0, first = 0; first < rows; c++, first += size) {
        int32_t k = rows - first < size ? rows - first : size;
        enqueue_chunk(m, c % 2 ? m->d2 : m->net.d, c % 2 ? m->ws2 : m->ws, first, k, obs, out,
                      value);
    }
    o->record(m->d2, m->join);
    o->wait(m->net.d, m->join);
    int bad = o->sync(m->d2, err, err_size);
    char again[256];
    if (o->sync(m->net.d, bad ? again : err, bad ? sizeof again : err_size))
        bad = 1;
    return bad;
}

/* ---- choosing ---- */

/* 1 when the call's obs, out and value (if any) all lie in page-locked memory. */
static int all_pinned(frl_cuda_model *m, int32_t rows, const float *obs, const float *out,
                      const float *value)
{
    const frl_dev_ops *o = m->net.ops;
    size_t f = sizeof(float), r = (size_t)rows;
    return o->mapped(m->net.d, obs, f * r * (size_t)m->net.desc.obs_w) &&
           o->mapped(m->net.d, out, f * r * (size_t)m->net.desc.out_w) &&
           (!value || o->mapped(m->net.d, value, f * r));
}

/* The path this call takes: the one asked for, when it can run the call, else LAUNCH;
 * AUTO by size and memory. */
static int32_t choose(frl_cuda_model *m, int32_t rows, int pinned)
{
    int32_t p = m->path;
    if (p == FRL_CUDA_PATH_AUTO)
        p = m->fused_fast && rows <= FUSED_AUTO_ROWS    ? FRL_CUDA_PATH_FUSED
            : rows >= STREAMS_MIN_ROWS && pinned        ? FRL_CUDA_PATH_STREAMS
            : rows >= RUNS_AUTO_MIN && rows <= RUNS_AUTO_MAX && pinned && m->runs_fit
                ? FRL_CUDA_PATH_RUNS
            : rows <= FRL_CUDA_STAGE_ROWS || pinned     ? FRL_CUDA_PATH_GRAPH
                                                        : FRL_CUDA_PATH_LAUNCH;
    int fused = p == FRL_CUDA_PATH_FUSED || p == FRL_CUDA_PATH_MAPPED;
    int staged = (p == FRL_CUDA_PATH_GRAPH && !pinned) || fused ||
                 (p == FRL_CUDA_PATH_RUNS && !pinned);
    if ((fused && !m->fused_ok) || (p == FRL_CUDA_PATH_RUNS && !m->runs_fit) ||
        (staged && (stage_ready(m) || rows > m->stage_rows)) ||
        (p == FRL_CUDA_PATH_STREAMS && (rows < 2 || streams_ready(m))))
        return FRL_CUDA_PATH_LAUNCH;
    return p;
}

int frl_cuda_model_forward(frl_cuda_model *m, int32_t rows, const float *obs, float *out,
                           float *value, char *err, size_t err_size)
{
    int pinned = all_pinned(m, rows, obs, out, value);
    int32_t p = choose(m, rows, pinned);
    m->last_path = p;
    switch (p) {
    case FRL_CUDA_PATH_GRAPH:
    case FRL_CUDA_PATH_FUSED:
        return forward_graph(m, p, pinned, rows, obs, out, value, err, err_size);
    case FRL_CUDA_PATH_MAPPED:
    case FRL_CUDA_PATH_RUNS:
        return forward_mapped(m, p, rows, obs, out, value, err, err_size);
    case FRL_CUDA_PATH_STREAMS:
        return forward_streams(m, rows, obs, out, value, err, err_size);
    default:
        return forward_launch(m, rows, obs, out, value, err, err_size);
    }
}

/* ---- a population (Such et al.'s batched per-member inference) ---- */

/* The runs' arrays, host and device, for max_rows rows and `members` members. */
static int alloc_runs(frl_cuda_model *m, int32_t members)
{
    const frl_dev_ops *o = m->net.ops;
    const frl_net_desc *n = &m->net.desc;
    size_t rows = (size_t)n->max_rows;
    if (!m->run_start) {
        m->run_start = o->alloc(m->net.d, sizeof(int32_t) * (rows + 1));
        m->run_member = o->alloc(m->net.d, sizeof(int32_t) * rows);
        m->h_start = malloc(sizeof(int32_t) * (rows + 1));
        m->h_member = malloc(sizeof(int32_t) * rows);
        m->h_order = malloc(sizeof(int32_t) * rows);
        m->h_obs = malloc(sizeof(float) * rows * (size_t)n->obs_w);
        m->h_out = malloc(sizeof(float) * rows * (size_t)n->out_w);
    }
    if (members + 1 > m->count_cap) {
        free(m->h_count);
        m->h_count = malloc(sizeof(int32_t) * ((size_t)members + 1));
        m->count_cap = m->h_count ? members + 1 : 0;
    }
    return m->run_start && m->run_member && m->h_start && m->h_member && m->h_order &&
           m->h_obs && m->h_out && m->h_count;
}

static void free_runs(frl_cuda_model *m)
{
    const frl_dev_ops *o = m->net.ops;
    o->release(m->net.d, m->run_start);
    o->release(m->net.d, m->run_member);
    free(m->h_start);
    free(m->h_member);
    free(m->h_order);
    free(m->h_obs);
    free(m->h_out);
    free(m->h_count);
}

/* Why the fused kernel, the members' only one, cannot run m's networks (2: the caller
 * may act on the CPU instead), or 0. */
static int members_refusal(const frl_cuda_model *m, char *err, size_t err_size)
{
    const frl_net_desc *n = &m->net.desc;
    if (m->fused_ok)
        return 0;
    snprintf(err, err_size, "model_members: the network has %s, and the members' kernel runs "
             "MLPs of up to %d layers of %d units", n->cnn.layers ? "an image encoder"
             : n->towers ? "a recurrent core" : n->obs_w > FRL_DEV_FUSED_MAX_WIDTH
             ? "wider observations" : "a wider layer or more layers",
             FRL_DEV_FUSED_MAX_LAYERS, FRL_DEV_FUSED_MAX_WIDTH);
    return 2;
}

int frl_cuda_model_members(frl_cuda_model *m, int32_t members, int64_t stride,
                           const float *params, char *err, size_t err_size)
{
    const frl_dev_ops *o = m->net.ops;
    int refused = members_refusal(m, err, err_size);
    if (refused)
        return refused;
    if (members < 1 || stride < 1 || (uint64_t)stride > m->net.desc.num_params) {
        snprintf(err, err_size, "model_members: %d members of %lld floats (1 or more, of at "
                 "most %llu)", (int)members, (long long)stride,
                 (unsigned long long)m->net.desc.num_params);
        return 1;
    }
    int64_t floats = (int64_t)members * stride;
    if (floats > m->member_floats) {
        o->release(m->net.d, m->member_params);
        m->member_floats = 0;
        m->member_params = o->alloc(m->net.d, sizeof(float) * (size_t)floats);
        if (!m->member_params) {
            snprintf(err, err_size, "model_members: out of device memory for %lld floats",
                     (long long)floats);
            return 1;
        }
        m->member_floats = floats;
    }
    if (!m->member_idx &&
        !(m->member_idx = o->alloc(m->net.d, sizeof(int32_t) * (size_t)m->net.desc.max_rows))) {
        snprintf(err, err_size, "model_members: out of device memory");
        return 1;
    }
    m->runs_ok = frl_cuda_runs_fit(&m->fused, 0) && alloc_runs(m, members);
    o->put(m->net.d, m->member_params, params, sizeof(float) * (size_t)floats);
    m->members = members;
    m->member_stride = stride;
    return o->sync(m->net.d, err, err_size);
}

/* Sort rows rows by member (stable counting sort) into runs of at most FRL_DEV_RUN_ROWS
 * rows of one member; returns the number of runs. */
static int32_t make_runs(frl_cuda_model *m, int32_t rows, const int32_t *members,
                         const float *obs)
{
    size_t w = (size_t)m->net.desc.obs_w;
    int32_t *count = m->h_count;
    memset(count, 0, sizeof(int32_t) * ((size_t)m->members + 1));
    for (int32_t r = 0; r < rows; r++)
        count[members[r] + 1]++;
    for (int32_t i = 0; i < m->members; i++)
        count[i + 1] += count[i];
    for (int32_t r = 0; r < rows; r++)
        m->h_order[count[members[r]]++] = r;
    int32_t runs = 0;
    for (int32_t s = 0; s < rows; s++) {
        int32_t mem = members[m->h_order[s]];
        if (s == 0 || mem != m->h_member[runs - 1] ||
            s - m->h_start[runs - 1] == FRL_DEV_RUN_ROWS) {
            m->h_start[runs] = s;
            m->h_member[runs++] = mem;
        }
        memcpy(m->h_obs + (size_t)s * w, obs + (size_t)m->h_order[s] * w, sizeof(float) * w);
    }
    m->h_start[runs] = rows;
    return runs;
}

/* One chunk by runs: the sorted rows up, the run kernel, the outputs back in row order. */
static int forward_by_runs(frl_cuda_model *m, int32_t rows, const int32_t *members,
                           const float *obs, float *out, char *err, size_t err_size)
{
    const frl_dev_ops *o = m->net.ops;
    const frl_net_desc *n = &m->net.desc;
    size_t f = sizeof(float), ow = (size_t)n->out_w;
    int32_t runs = make_runs(m, rows, members, obs);
    o->put(m->net.d, m->obs, m->h_obs, f * (size_t)rows * (size_t)n->obs_w);
    o->put(m->net.d, m->run_start, m->h_start, sizeof(int32_t) * ((size_t)runs + 1));
    o->put(m->net.d, m->run_member, m->h_member, sizeof(int32_t) * (size_t)runs);
    frl_dev_fused p = fused_now(m);
    p.member_stride = m->member_stride;
    o->forward_runs(m->net.d, rows, runs, &p, m->member_params, m->run_start, m->run_member,
                    m->obs, m->ws, NULL);
    o->get(m->net.d, m->h_out, m->ws, f * (size_t)rows * ow);
    if (o->sync(m->net.d, err, err_size))
        return 1;
    for (int32_t s = 0; s < rows; s++)
        memcpy(out + (size_t)m->h_order[s] * ow, m->h_out + (size_t)s * ow, f * ow);
    return 0;
}

/* One chunk: observations and members up, the fused kernel, the outputs down. */
static void enqueue_members(frl_cuda_model *m, int32_t rows, const int32_t *members,
                            const float *obs, float *out)
{
    const frl_dev_ops *o = m->net.ops;
    const frl_net_desc *n = &m->net.desc;
    size_t f = sizeof(float);
    o->put(m->net.d, m->obs, obs, f * (size_t)rows * (size_t)n->obs_w);
    o->put(m->net.d, m->member_idx, members, sizeof(int32_t) * (size_t)rows);
    frl_dev_fused p = fused_now(m);
    p.members = m->member_idx;
    p.member_stride = m->member_stride;
    o->forward_fused(m->net.d, rows, &p, m->member_params, m->obs, m->ws, NULL);
    o->get(m->net.d, out, m->ws, f * (size_t)rows * (size_t)n->out_w);
}

int frl_cuda_model_forward_members(frl_cuda_model *m, int32_t rows, const int32_t *members,
                                   const float *obs, float *out, char *err, size_t err_size)
{
    const frl_net_desc *n = &m->net.desc;
    if (members_refusal(m, err, err_size))
        return 1;
    if (!m->member_params) {
        snprintf(err, err_size, "model_forward_members: no members uploaded");
        return 1;
    }
    for (int32_t i = 0; i < rows; i++)
        if (members[i] < 0 || members[i] >= m->members) {
            snprintf(err, err_size, "model_forward_members: row %d names member %d of %d",
                     (int)i, (int)members[i], (int)m->members);
            return 1;
        }
    for (int32_t first = 0; first < rows; first += n->max_rows) {
        int32_t k = rows - first < n->max_rows ? rows - first : n->max_rows;
        const int32_t *mem = members + first;
        const float *x = obs + (size_t)first * (size_t)n->obs_w;
        float *y = out + (size_t)first * (size_t)n->out_w;
        /* Runs share each weight load among a member's rows; the fused kernel, a block a
         * row, takes any width. */
        if (m->runs_ok) {
            if (forward_by_runs(m, k, mem, x, y, err, err_size))
                return 1;
            continue;
        }
        enqueue_members(m, k, mem, x, y);
        if (m->net.ops->sync(m->net.d, err, err_size))
            return 1;
    }
    return 0;
}

void frl_cuda_model_forward_release(frl_cuda_model *m)
{
    const frl_dev_ops *o = m->net.ops;
    frl_cuda_model_drop_graphs(m);
    o->release(m->net.d, m->member_params);
    o->release(m->net.d, m->member_idx);
    free_runs(m);
    o->release_pinned(m->net.d, m->stage_in);
    o->release_pinned(m->net.d, m->stage_out);
    o->release_pinned(m->net.d, m->stage_value);
    streams_release(m);
}
