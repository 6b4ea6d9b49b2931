/* The plugin's side of frl_mujoco_array and frl_mujoco_name_id: MuJoCo's named arrays
 * and objects for hosts without MuJoCo's headers (the Python binding). The list of
 * arrays is MuJoCo's own (mjxmacro.h), so it follows the pinned version with no table of
 * ours to keep in step. */
#include <string.h>

#include <mujoco/mjxmacro.h>

#include "mujoco/plugin.h"

/* The element type of an array from its element's C type; 0 (refused) for arrays of
 * structs, strings (char) and pointer-sized integers. */
#define ELEMENT_TYPE(elem)                                                                   \
    _Generic((elem), mjtNum: FRL_MUJOCO_FLOAT64, float: FRL_MUJOCO_FLOAT32,              \
             int: FRL_MUJOCO_INT32, unsigned char: FRL_MUJOCO_UINT8,                       \
             _Bool: FRL_MUJOCO_UINT8, int64_t: FRL_MUJOCO_INT64, default: 0)

static int found(void *ptr, int64_t rows, int64_t cols, int32_t type, frl_mujoco_found *out)
{
    if (type == 0)
        return -1;
    /* An arena array this step did not lay out (dof_island with no constraints) has no
     * memory: it reads as empty, not as rows at NULL */
    if (!ptr)
        rows = 0;
    out->ptr = rows * cols > 0 ? ptr : NULL;
    out->rows = rows;
    out->cols = cols;
    out->type = type;
    return 0;
}

/* One comparison per array, in mjxmacro.h's order (a few hundred strcmp: hosts look an
 * array up once per env and keep the pointer). */
static int model_array(const mjModel *m, const char *name, frl_mujoco_found *out)
{
    MJMODEL_POINTERS_PREAMBLE(m)
#define X(type, field, nr, nc)                                                              \
    if (strcmp(name, #field) == 0)                                                          \
        return found((void *)m->field, (int64_t)m->nr, (int64_t)(nc),                       \
                     ELEMENT_TYPE(m->field[0]), out);
#define XNV X
    MJMODEL_POINTERS
#undef XNV
#undef X
    (void)nuser_body, (void)nuser_jnt, (void)nuser_geom, (void)nuser_site, (void)nuser_cam;
    (void)nuser_tendon, (void)nuser_actuator, (void)nuser_sensor, (void)nq, (void)nv;
    (void)na, (void)nu, (void)nmocap, (void)nplastic;
    return -1;
}

/* The arrays MuJoCo lays out in d's arena at every step (contacts, the constraint
 * solver's efc_*, islands): sized by counts of the data (nefc, ncon) or of the model, and
 * moved by each step, so a host looks them up in every callback call. */
static int arena_array(const mjModel *m, const mjData *d, const char *name,
                       frl_mujoco_found *out)
{
#undef MJ_M
#undef MJ_D
#define MJ_M(n) m->n
#define MJ_D(n) d->n
#define X(type, field, nr, nc)                                                              \
    if (strcmp(name, #field) == 0)                                                          \
        return found((void *)d->field, (int64_t)(nr), (int64_t)(nc),                        \
                     ELEMENT_TYPE(d->field[0]), out);
#define XNV X
    MJDATA_ARENA_POINTERS
#undef XNV
#undef X
#undef MJ_D
#undef MJ_M
#define MJ_M(n) n
#define MJ_D(n) n
    return -1;
}

/* mjData's own arrays (sized by the model), then its fixed-size vectors (energy: 2 x 1,
 * solver_niter) and its scalars (time, ncon, nefc: 1 x 1 arrays). */
static int data_array(const mjModel *m, const mjData *d, const char *name,
                      frl_mujoco_found *out)
{
#define X(type, field, nr, nc)                                                              \
    if (strcmp(name, #field) == 0)                                                          \
        return found((void *)d->field, (int64_t)m->nr, (int64_t)(nc),                       \
                     ELEMENT_TYPE(d->field[0]), out);
#define XNV X
    MJDATA_POINTERS
#undef X
#define X(type, field, nr, nc)                                                              \
    if (strcmp(name, #field) == 0)                                                          \
        return found((void *)d->field, (int64_t)(nr), (int64_t)(nc),                        \
                     ELEMENT_TYPE(d->field[0]), out);
    MJDATA_VECTOR
#undef X
#define X(type, field)                                                                      \
    if (strcmp(name, #field) == 0)                                                          \
        return found((void *)&d->field, 1, 1, ELEMENT_TYPE(d->field), out);
    MJDATA_SCALAR
#undef X
#undef XNV
    return arena_array(m, d, name, out);
}

int mjt_array(const void *model, const void *data, const char *name, frl_mujoco_found *out)
{
    return data ? data_array(model, data, name, out) : model_array(model, name, out);
}

int mjt_name_id(const void *model, const char *kind, const char *name)
{
    int type = mju_str2Type(kind);
    if (type == mjOBJ_UNKNOWN)
        return -2;
    return mj_name2id(model, type, name);
}
