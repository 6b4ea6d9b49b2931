/* The raycasting tasks: what a reset builds, what each frame rewards, when an episode
 * ends, and a scripted oracle that shows what a good return is (doc/environments.md
 * gives each task's reward, the oracle's return and the random policy's). */
#ifndef FRL_ENV_RAY_TASKS_H
#define FRL_ENV_RAY_TASKS_H

#include "env/ray/world.h"

/* One env's simulator: the world plus the episode's own random stream (pickups respawn
 * from it) and the distance the dense task measures progress from. */
typedef struct ray_sim {
    ray_world world;
    frl_rng rng;
    float prev_dist;
    int32_t maze_size; /* RayMaze-v0's cells a side (a setting, copied at creation) */
    const ray_world *layout; /* a host's map (frl_vec_env_create_ray_map), else NULL */
} ray_sim;

typedef struct ray_task {
    const char *name;
    int32_t limit; /* agent steps before truncation (each of frame_skip frames) */
    int32_t map_free; /* floor cells a host's map needs; 0: the task makes its own maps */
    int32_t (*map_side)(int32_t maze_size);
    void (*reset)(ray_sim *s);       /* from s->rng */
    float (*frame)(ray_sim *s, int *done); /* one frame after the agent moved */
    int32_t (*oracle)(const ray_sim *s);
    int32_t sprites;        /* every reset makes this many, all alive, */
    const int32_t *kinds;   /* of these kinds (ray_sprite_kind), kept for the episode */
} ray_task;

enum { RAY_TASKS = 3 };

const ray_task *ray_task_at(int32_t index); /* NULL past the last */
const ray_task *ray_task_find(const char *name);

/* The map every reset of a task with a fixed map (map_free > 0) builds into out: the
 * host's (s->layout) or the task's own room. */
void ray_task_map(const ray_task *t, const ray_sim *s, ray_world *out);

/* The action that turns the agent towards (x, y) and walks there. */
int32_t ray_steer(const ray_world *wd, float x, float y);

#endif
