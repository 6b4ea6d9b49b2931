/* The plugin's model (lib/core/plugin_api.h): a policy's networks on the device, the
 * buffers its forward passes use, and the snapshots it staged for another model. Shared
 * by plugin.c (creation, loading, snapshots, the learner) and model_forward.c (the
 * forward's paths). */
#ifndef FRL_CUDA_MODEL_H
#define FRL_CUDA_MODEL_H

#include "core/plugin_api.h"
#include "cuda/dev_net.h"

/* A snapshot of a model's parameters and frozen normaliser for another model to take:
 * buf holds num_params + 2 * obs_w floats; ready is recorded once they are written. */
typedef struct frl_cuda_snapshot {
    float *buf;
    void *ready;
    float clip;
    int32_t norm; /* the normaliser was staged */
} frl_cuda_snapshot;

/* A forward captured as a graph: its path, batch size and the host memory its copies
 * read and write (the model's staging buffers, or the caller's page-locked ones) are its
 * key, with the normaliser's clip, which the graph holds by value. A key is captured the
 * second time it is seen (a caller that never repeats its buffers gets no graphs, and
 * pays no captures); the least recently used graph makes room. */
typedef struct frl_cuda_fwd_key {
    int32_t path, rows;
    const float *obs;
    float *out, *value;
    float clip;
} frl_cuda_fwd_key;

typedef struct frl_cuda_fwd_graph {
    frl_cuda_fwd_key key;
    void *g;                     /* NULL: seen once, or its capture was refused */
    int32_t refused;             /* the capture failed: enqueue, do not try again */
    uint64_t used;               /* the forward that last used it */
} frl_cuda_fwd_graph;

/* Enough for a trainer's every (ring slot, step) pointer pair at 2 slots x 64 steps. */
enum { FRL_CUDA_FWD_GRAPHS = 128 };

typedef struct frl_cuda_model {
    frl_dev_net net;
    int32_t device, tf32;        /* the context's, for the second stream */
    float *obs, *ws;             /* device: max_rows observations; an inference pass */
    frl_cuda_snapshot snap[2];
    /* the forward's paths (model_forward.c) */
    int32_t path, last_path;     /* FRL_CUDA_PATH_*: the one asked for, the last taken */
    frl_dev_fused fused;         /* the networks as the fused kernel reads them */
    int32_t fused_ok;            /* every width fits the fused kernel */
    int32_t fused_fast;          /* ...and it runs a row on a cluster: AUTO's choice */
    int32_t runs_fit;            /* every width fits forward_runs (RUNS) */
    /* page-locked staging for the graphs and the mapped path: [stage_rows x obs_w],
     * [stage_rows x out_w], [stage_rows]; allocated on first use */
    float *stage_in, *stage_out, *stage_value;
    int32_t stage_rows, stage_failed;
    frl_cuda_fwd_graph graphs[FRL_CUDA_FWD_GRAPHS];
    uint64_t forwards;           /* forwards through graphs so far: the entries' clock */
    /* the second stream of STREAMS, its workspace and the events between the two */
    frl_dev *d2;
    float *ws2;
    void *fork, *join;
    int32_t streams_failed;
    /* a population (model_members): [members x member_stride] parameters and the rows'
     * member indices [max_rows], on the device */
    float *member_params;
    int32_t *member_idx;
    int64_t member_floats, member_stride;
    int32_t members;
    /* ...and its runs (forward_runs, when every width fits it): the rows sorted by
     * member on the host, [max_rows + 1] run starts and [max_rows] run members on the
     * device and here, the sort's counts [members + 1] and order [max_rows], the sorted
     * observations and outputs (host, page-locked when it can be had) */
    int32_t runs_ok;
    int32_t *run_start, *run_member;         /* device */
    int32_t *h_start, *h_member, *h_count, *h_order;
    float *h_obs, *h_out;
    int32_t count_cap;
    /* a recurrent model's step (model_step.c): the rows' state [max_rows x state_w] and
     * the towers' work, on the device, and the new state's landing place on the host
     * (page-locked, else malloc's: pinned 1 or 0), copied to the caller's only once the
     * step succeeded; NULL without towers */
    float *state, *step_ws, *state_host;
    int32_t state_host_pinned;
} frl_cuda_model;

/* Fill m->fused from the networks' description (and m->fused_ok, runs_fit). */
void frl_cuda_model_plan(frl_cuda_model *m);
/* Whether every width of the trunk and actor (and critic) fits forward_runs. */
int frl_cuda_runs_fit(const frl_dev_fused *f, int critic);
/* model_forward: rows host observations to host outputs by the path m->path (or the
 * one AUTO picks). */
int frl_cuda_model_forward(frl_cuda_model *m, int32_t rows, const float *obs, float *out,
                           float *value, char *err, size_t err_size);
/* model_members and model_forward_members (model_forward.c). */
int frl_cuda_model_members(frl_cuda_model *m, int32_t members, int64_t stride,
                           const float *params, char *err, size_t err_size);
int frl_cuda_model_forward_members(frl_cuda_model *m, int32_t rows, const int32_t *members,
                                   const float *obs, float *out, char *err, size_t err_size);
/* A captured step's path number in the graph cache's keys: past the public paths. */
enum { FRL_CUDA_PATH_STEP = FRL_CUDA_PATHS };
/* A recurrent model's step enqueued on its stream (model_step.c): rows observations and
 * states up from obs and state, the towers and heads, the outputs and the new states
 * down into out, value (NULL: none) and state_out (which may be state). All host
 * pointers page-locked when the work is captured. */
void frl_cuda_enqueue_step(frl_cuda_model *m, int32_t rows, const float *obs,
                           const float *state, float *out, float *value, float *state_out);
/* That step captured as a graph on its key's second sighting and replayed after (the
 * forward's cache), through the staging buffers and m->state_host, then synchronised:
 * 0, or 1 with the reason; -1 when it cannot be captured here (too many rows, no
 * page-locked staging, FRL_CUDA_FORWARD=launch): the caller enqueues it itself. */
int frl_cuda_step_graph(frl_cuda_model *m, int32_t rows, const float *obs, float *state,
                        float *out, float *value, char *err, size_t err_size);
/* A recurrent model's step buffers (m->state, m->step_ws, m->state_host): 0, else 1
 * with the reason; release frees them. */
int frl_cuda_step_alloc(frl_cuda_model *m, char *err, size_t err_size);
void frl_cuda_step_release(frl_cuda_model *m);
/* model_step: rows host observations and their state [rows x state_w] (read and
 * replaced) one step on; out and value (may be NULL) into host memory. */
int frl_cuda_model_step(frl_cuda_model *m, int32_t rows, const float *obs, float *state,
                        float *out, float *value, char *err, size_t err_size);
/* Free what the forward's paths allocated (graphs, staging, the second stream). */
void frl_cuda_model_forward_release(frl_cuda_model *m);
/* Drop the captured graphs (the normaliser's clip changed, or the model goes). */
void frl_cuda_model_drop_graphs(frl_cuda_model *m);
/* The path's name ("auto", "launch", ...), or NULL for a number that is none. */
const char *frl_cuda_path_name(int32_t path);

#endif
