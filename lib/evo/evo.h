/* Internal view of frl_evo: the ask/tell optimisers of neuroevolution, OpenAI-ES
 * (es.c) and Deep GA (ga.c), behind one handle (evo.c). Both work on float parameter
 * vectors and know nothing of policies or environments. */
#ifndef FRL_EVO_EVO_H
#define FRL_EVO_EVO_H

#include "core/config.h"
#include "core/runtime.h"
#include "io/container.h"

/* A member's fitness and index, for sorting. */
typedef struct frl_evo_rank {
    double fitness;
    int32_t index;
} frl_evo_rank;

typedef struct frl_es {
    float *noise;             /* the shared noise table: standard normals */
    int64_t noise_n;
    float *m, *v;             /* Adam's moments [n] */
    double *grad;             /* [n]: the gradient estimate of the last tell */
    int64_t *offset;          /* [P / 2]: each pair's slice of the noise table */
    double *weight;           /* [P]: centred ranks */
    int32_t *order;           /* [P] */
    int64_t adam_t;
    double sigma, lr, weight_decay;
} frl_es;

typedef struct frl_ga {
    float *cur;               /* [P x n]: the generation being asked for */
    float *cache;             /* [T x n]: the parents' parameters (the parent cache) */
    float *best;              /* [n]: the member kept (frl_evo_best) */
    uint64_t *seeds, *next_seeds; /* [P x cap]: each member's genome */
    int32_t *len, *next_len;  /* [P] */
    int32_t cap;
    uint64_t *parent_seeds;   /* [T x cap] */
    int32_t *parent_len;      /* [T] */
    double *acc_sum;          /* [P]: fitness summed over the generations evaluated */
    int32_t *acc_count;       /* [P] */
    int32_t *order;           /* [P] */
    double *score;            /* [P] */
    double best_fitness;
    int32_t truncation, elites;
    double sigma, init_sigma;
} frl_ga;

struct frl_evo {
    frl_runtime *rt;
    int32_t algo;             /* FRL_TRAIN_ALGO_ES or _GA */
    int32_t P;
    int64_t n;
    uint64_t seed;
    int64_t generation;       /* told so far */
    int32_t asked;            /* this generation's members were handed out */
    int32_t in_fitness;       /* frl_evo_run's fitness callback is running: the calls that
                                 change the generation are refused from inside it */
    float *theta;             /* ES: the centre; GA: the base every genome starts from */
    frl_evo_rank *rank;       /* [P]: sorting scratch */
    double last_fitness[2];   /* of the last generation told: mean and best */
    frl_es es;
    frl_ga ga;
    char err[FRL_ERRMSG_SIZE];
};

/* Standard normals, n of them, of the stream (seed, stream): out[j] = scale * z_j
 * (add: out[j] += scale * z_j, in float, the product rounded first). A pure function
 * of its arguments, so a GA genome rebuilds bit for bit. */
void frl_evo_normals(uint64_t seed, uint64_t stream, float *out, int64_t n, double scale,
                     int add);

/* Each optimiser: set up (the settings are checked by evo.c), ask, tell, free. */
frl_status frl_es_init(frl_evo *e, const frl_config *cfg);
/* The noise table drawn from e->seed (after a restore adopted another seed). */
void frl_es_fill_noise(frl_evo *e);
void frl_es_ask(frl_evo *e, float *params);
/* FRL_ERR_NONFINITE (in e->err) with the optimiser unchanged when the step diverges. */
frl_status frl_es_tell(frl_evo *e, const double *fitness);
void frl_es_free(frl_evo *e);
size_t frl_es_bytes(const frl_config *cfg, int64_t n);

frl_status frl_ga_init(frl_evo *e, const frl_config *cfg);
void frl_ga_ask(frl_evo *e, float *params);
frl_status frl_ga_tell(frl_evo *e, const double *fitness);
void frl_ga_free(frl_evo *e);
size_t frl_ga_bytes(const frl_config *cfg, int64_t n);
/* A genome's parameters from its seeds alone. */
void frl_ga_rebuild(const frl_evo *e, const uint64_t *seeds, int32_t length, float *params);

/* Members by fitness, best first (ties by index), into order; scratch has P entries. */
void frl_evo_sort_desc(const double *fitness, int32_t P, frl_evo_rank *scratch, int32_t *order);
/* Centred ranks of fitness[P] into weight (rank / (P - 1) - 0.5, tied members sharing
 * their mean rank); order as frl_evo_sort_desc's. */
void frl_evo_centred_ranks(const double *fitness, int32_t P, frl_evo_rank *scratch,
                           int32_t *order, double *weight);

/* Checkpoints: the optimiser's state as sections (pointers into e), and back. */
enum { FRL_EVO_MAX_SECTIONS = 16 };
void frl_evo_sections(const frl_evo *e, frl_section *s, int32_t *n, int64_t *meta);
/* adopt_seed: a trainer's resume takes the file's seed, as the trainer does (an ES noise
 * table is drawn again); frl_evo_load refuses a file of another seed instead. */
frl_status frl_evo_restore(frl_evo *e, const frl_container *c, int adopt_seed, char *err);

/* ES's and GA's parts of the sections; restore checks every section before it changes
 * anything, then takes theta (the centre or the base) and the rest. */
void frl_es_sections(const frl_evo *e, frl_section *s, int32_t *n);
frl_status frl_es_restore(frl_evo *e, const frl_container *c, const float *theta, char *err);
void frl_ga_sections(const frl_evo *e, frl_section *s, int32_t *n);
frl_status frl_ga_restore(frl_evo *e, const frl_container *c, const float *theta, char *err);

#endif
