/* A replay of transitions with random access: the storage an off-policy learner
 * declares (frl_storage_need), beside the ring the samplers fill.
 *
 * Layout. The replay is a circular buffer of `blocks` blocks; each holds one committed
 * ring slot ([T x B] rows) and the slot's B bootstrap observations. Row (t, b) of block
 * k is transition index i = k*T*B + t*B + b (the ring's time-major order). Rows are
 * stored as records, env-major: block k holds, for each env b, the T + 1 records
 * (k*B + b)*(T+1) + t, t = 0..T, each one step's observation x, action, reward and
 * flags (terminated, truncated, reset) side by side (record t = T holds only the
 * bootstrap observation, flagged reset). Observations are stored once: the x' of a row
 * is the x of the next record, for every row, the last step included. A draw reads one
 * record and its neighbour, one or two cache lines, where an array per field would
 * take seven (a random gather costs about a memory latency per line, bench/README.md).
 * With next-step autoreset the row after an episode's last step is a reset row whose
 * observation is the episode's final one: a truncated transition's x' is the final
 * observation, a terminated one's x' is stored but not bootstrapped from, and reset
 * rows are never sampled (priority 0, rejected by uniform draws). n-step targets walk
 * the env's records, stopping at the episode's end or the bootstrap record.
 *
 * Memory (frl_replay_memory_size): blocks*B*(T+1) records of R bytes, R = 4W + 4A' +
 * 4 + 3 rounded up to a multiple of 8 (A' = action width, 1 for discrete); prioritised
 * replays add a float64 sum tree and a float32 min tree over the C = blocks*T*B rows
 * (about 8C/7 nodes each with 8 children per node: about 13.7C bytes); plus a count
 * per block and the owned minibatch arrays. Storing x and x' per row would take
 * 2*T*B*4W bytes of observations per block: this takes (T+1)/(2T) of that. A frame
 * stack of k adds each block's (k - 1) earlier frames per env (the states array) and
 * makes the minibatch's x and x' rows k frames wide: stored frames are never copied.
 *
 * Nothing is allocated after create: adding a slot and sampling write into the arena.
 * One thread at a time (the learner's). */
#ifndef FRL_RL_REPLAY_H
#define FRL_RL_REPLAY_H

#include "core/rng.h"
#include "core/runtime.h"
#include "io/container.h"
#include "rl/ring.h"

/* The arrays (frl_replay_array_id, fastrl.h): the records (their layout above, field
 * offsets in the handle), the sum and min trees (FRL_REPLAY_SUM_TREE: double, the levels
 * of a tree of FRL_REPLAY_FANOUT children per node, leaves first (row i's leaf is i),
 * level L at tree_off[L], node m's children at m*FANOUT of the level below, the root the
 * one node of level tree_top, each level padded to whole groups of children with 0;
 * FRL_REPLAY_MIN_TREE: float, the same shape, +inf where no transition) and the states. */

/* Children per tree node: 8 doubles are one 64-byte line, so a descent reads one line
 * per level and a 1M-row tree has 7 levels instead of a binary tree's 20. */
enum { FRL_REPLAY_FANOUT = 8, FRL_REPLAY_MAX_LEVELS = 24 }; /* replay.c assumes 8 */

/* What a replay is made for (internal, so a struct, not config keys). */
typedef struct frl_replay_shape {
    int64_t capacity;   /* transitions wanted; rounded up to whole blocks of T*B rows */
    int32_t steps, envs;  /* T and B of the ring slots it is filled from */
    int32_t obs_w, act_w; /* act_w: 1 for discrete (int32 actions) */
    int32_t discrete;
    int32_t actions;      /* discrete: how many (a loaded file's actions are checked
                             against it); 0: unchecked */
    int32_t prioritized;  /* keep the sum and min trees */
    double alpha;         /* priority exponent (prioritised): a leaf holds p^alpha */
    int32_t batch_rows;   /* rows of the replay-owned minibatch (0: none) */
    int32_t state_w;      /* floats of recurrent state kept per env and block (0: none):
                             the ring slot's state0, for sequences (R2D2) */
    int32_t stack;        /* frames a minibatch row stacks (policy.frame_stack; 0 or 1:
                             none): x and x' are each the stack of k frames ending there,
                             oldest first, zeros before its episode began, the frames
                             before a block from its state0 (state_w = (k - 1) obs_w);
                             still each frame stored once */
    int32_t pixel_words;  /* the first floats of each observation that hold an image's
                             bytes (an image row, or a mixed row's image part; 0: none):
                             any bit pattern, so a loaded file's are not checked finite */
} frl_replay_shape;

/* A minibatch: arrays of at least `rows` rows, the caller's or the replay's own. */
typedef struct frl_replay_batch {
    int32_t rows;
    float *obs;          /* [rows x W] x ([rows x k W] with a frame stack) */
    void *action;        /* int32 [rows] or float [rows x A] */
    float *reward;       /* [rows] sum of gamma^j r_{t+j} over the n (or fewer) steps */
    float *next_obs;     /* [rows x W] x' after those steps ([rows x k W] likewise) */
    float *discount;     /* [rows] gamma^k to apply to the bootstrap value; 0 if terminated */
    uint8_t *terminated; /* [rows] the episode terminated within the steps: no bootstrap */
    float *weight;       /* [rows] importance weight, max-normalised (1 when uniform) */
    int64_t *index;      /* [rows] transition indices, for frl_replay_update */
} frl_replay_batch;

/* A minibatch of sequences (frl_replay_sample_sequences): an env's whole block, its T
 * steps and the observation after them, in arrays of at least `rows` sequences. */
typedef struct frl_replay_seq_batch {
    int32_t rows;
    float *obs;          /* [rows x (T+1) x W]: x_0..x_T (x_T the bootstrap observation) */
    void *action;        /* int32 [rows x T] or float [rows x T x A] */
    float *reward;       /* [rows x T] */
    uint8_t *terminated, *truncated, *reset; /* [rows x T] each (reset: an autoreset row,
                                                not a transition; x_t of it is the final
                                                observation of the episode before) */
    float *state0;       /* [rows x state_w]: the recurrent state at x_0 (NULL if none) */
    int64_t *index;      /* [rows] sequence k*B + b */
} frl_replay_seq_batch;

/* One draw (frl_replay_sample). */
typedef struct frl_replay_draw {
    int32_t rows;        /* minibatch rows */
    int32_t n_step;      /* >= 1 */
    double gamma;        /* discount in [0, 1] */
    int32_t prioritized; /* 1: stratified proportional to p^alpha; 0: uniform */
    double beta;         /* importance-weight exponent in [0, 1] (prioritised) */
} frl_replay_draw;

typedef struct frl_replay {
    frl_runtime *rt;
    frl_replay_shape shape;
    int64_t capacity;       /* rows: blocks * T * B */
    int64_t blocks, block_rows; /* block_rows = T * B */
    double inv_block_rows, inv_envs; /* 1 / block_rows, 1 / B: divisions as products */
    size_t rec_bytes;       /* one record: x, action, reward, flags (see the layout) */
    size_t off_action, off_reward, off_flags;
    int64_t filled;         /* blocks holding a slot */
    int64_t next;           /* the block the next slot goes into */
    int64_t size;           /* transitions (rows that are not reset rows) */
    int32_t obs_w, act_w;
    double max_priority;    /* largest priority seen (new rows get it), starts at 1 */
    int64_t cursor[3];      /* capacity, filled, next, as frl_replay_save writes them */
    void *arena;
    size_t arena_bytes;
    void *array[FRL_REPLAY_ARRAY_COUNT];
    size_t bytes[FRL_REPLAY_ARRAY_COUNT];
    int32_t *block_size;    /* transitions in each block */
    int32_t tree_top;       /* the root's level (0 when C = 1) */
    int64_t tree_off[FRL_REPLAY_MAX_LEVELS]; /* where each tree level starts, in nodes */
    frl_replay_batch batch; /* the owned minibatch (shape.batch_rows rows; NULL arrays if 0) */
} frl_replay;

/* A prioritised replay's sum of p^alpha over its transitions, and the smallest p^alpha
 * (the roots of its trees). */
static inline double frl_replay_priority_total(const frl_replay *r)
{
    return ((const double *)r->array[FRL_REPLAY_SUM_TREE])[r->tree_off[r->tree_top]];
}

static inline float frl_replay_priority_min(const frl_replay *r)
{
    return ((const float *)r->array[FRL_REPLAY_MIN_TREE])[r->tree_off[r->tree_top]];
}

/* Bytes a replay of this shape takes (arena and handle). FRL_ERR_RANGE for a bad shape
 * and FRL_ERR_SIZE when the size does not fit a size_t: the message gives the bytes. */
frl_status frl_replay_memory_size(const frl_replay_shape *s, size_t *bytes, char *err);
/* One allocation; FRL_ERR_NOMEM says how many bytes could not be had. */
frl_status frl_replay_create(frl_replay **out, frl_runtime *rt, const frl_replay_shape *s,
                             char *err);
void frl_replay_destroy(frl_replay *r);

/* Copy a committed ring slot into the next block (the oldest when full): its rows, its
 * bootstrap observations, and for each transition the largest priority seen so far.
 * The ring's T and B must be the replay's. */
frl_status frl_replay_add_slot(frl_replay *r, frl_ring *ring, int32_t slot, char *err);

/* d->rows transitions into out (arrays of at least d->rows rows), drawn from rng:
 * uniform, or one draw in each of d->rows equal segments of the priority total
 * (Schaul et al., 2016), with weights (N P(i))^-beta / max_j (N P(j))^-beta.
 * FRL_ERR_STATE when the replay holds no transition. */
frl_status frl_replay_sample(frl_replay *r, frl_rng *rng, const frl_replay_draw *d,
                             frl_replay_batch *out, char *err);

/* rows sequences drawn uniformly from rng among the filled blocks' B env columns into
 * out. FRL_ERR_STATE when nothing is filled yet; FRL_ERR_RANGE for rows < 1. */
frl_status frl_replay_sample_sequences(frl_replay *r, frl_rng *rng, int32_t rows,
                                       frl_replay_seq_batch *out, char *err);

/* One env's steps over consecutive blocks (R2D2's sequences, which overlap: a sequence
 * of n blocks shares n - 1 of them with the one before), written time-major into column
 * `o` of `cols`, the layout a recurrent pass reads (row t * cols + o):
 * obs [(n*T + 1) x cols x W] (the last row the observation after the last step),
 * action int32 [n*T x cols], reward [n*T x cols], terminated, truncated [n*T x cols],
 * reset [(n*T + 1) x cols] (an autoreset row: the state starts from zeros there; row
 * n*T is one when step n*T - 1 ended an episode), state0 [cols x state_w] (the first
 * block's, the state acting had at its first step). */
typedef struct frl_replay_span {
    int32_t cols;
    float *obs;
    int32_t *action;
    float *reward;
    uint8_t *terminated, *truncated, *reset;
    float *state0;
} frl_replay_span;

/* Env b's blocks last - n + 1 .. last (block indices, wrapping) into column o of out;
 * discrete actions only (the caller checks; no other check: the learner's inner loop). */
void frl_replay_gather_span(const frl_replay *r, int64_t last, int32_t b, int32_t n, int32_t o,
                            const frl_replay_span *out);

/* New priorities for n sampled transitions (prioritised replays): finite and > 0, else
 * FRL_ERR_NONFINITE / FRL_ERR_RANGE and nothing changes. */
frl_status frl_replay_update(frl_replay *r, const int64_t *index, const float *priority,
                             int32_t n, char *err);

/* The contents as checkpoint sections "replay.*" (pointing into the replay), and back:
 * load checks every section's type and size against this replay's shape. A prioritised
 * replay records its alpha ("replay.alpha"); a file saved under another one has its
 * leaves made again, p^a_saved into p^a (the raw priorities are recovered exactly, see
 * frl_priority_of_leaf), and one saved under alpha 0, whose leaves keep no priority, is
 * refused (FRL_ERR_INVALID_ARGUMENT, both values and the way on named). A file from
 * before replay.alpha was made under saved_alpha (the trainer passes its saved
 * settings' train.per_alpha; NaN: this replay's own). */
enum { FRL_REPLAY_SECTIONS = 6 }; /* at most this many */
void frl_replay_save(frl_replay *r, frl_section *s, int32_t *n);
frl_status frl_replay_load(frl_replay *r, const frl_container *c, double saved_alpha,
                           char *err);

#endif
