/* The raycaster (render.h). Per pixel column: one DDA walk to the first wall, the wall's
 * texture column stepped in 16.16 fixed point, then the floor below it and the ceiling
 * above it (mirror images about the horizon, since the eye is at half the wall height,
 * so one floor point gives both). Sprites come last, far to near, each column drawn
 * only where the sprite is nearer than the wall. The inner loops are specialised for 1
 * and 3 channels (ray_render picks), so a grayscale frame copies one byte a pixel. */
#include <math.h>

#include "env/ray/render.h"

enum { N = RAY_TEX_SIZE, MASK = RAY_TEX_SIZE - 1 };

/* Brightness 0..256 at distance d: linear fog to 30% at 10 cells. */
static uint32_t shade_at(float d)
{
    float s = 1.0f - 0.07f * d;
    return (uint32_t)((s < 0.3f ? 0.3f : s) * 256.0f);
}

int ray_view_init(ray_view *v, int32_t width, int32_t height, int32_t channels)
{
    if (width < RAY_MIN_SIDE || width > RAY_MAX_SIDE || height < RAY_MIN_SIDE ||
        height > RAY_MAX_SIDE || (channels != 1 && channels != 3))
        return -1;
    v->width = width;
    v->height = height;
    v->channels = channels;
    v->proj = 0.5f * (float)width;
    for (int32_t y = 0; y < height; y++) {
        float p = (float)y + 0.5f - 0.5f * (float)height;
        v->row_dist[y] = p > 0 ? 0.5f * v->proj / p : 64.0f; /* the horizon row: far */
        v->row_shade[y] = (uint16_t)shade_at(v->row_dist[y]);
    }
    return 0;
}

static inline void put(uint8_t *o, const uint8_t *src, int ch, uint32_t s)
{
    for (int c = 0; c < ch; c++)
        o[c] = (uint8_t)((src[c] * s) >> 8);
}

/* What one column's ray hit. */
typedef struct hit {
    float dist;    /* perpendicular to the view plane, so walls do not bulge */
    int32_t tex;   /* texture index */
    int32_t tex_x; /* texel column */
    int32_t side;  /* 1 for a wall facing north or south, drawn darker */
} hit;

static hit cast(const ray_world *wd, float rx, float ry)
{
    int32_t mx = (int32_t)floorf(wd->x), my = (int32_t)floorf(wd->y);
    float ddx = rx == 0 ? 1e30f : fabsf(1.0f / rx), ddy = ry == 0 ? 1e30f : fabsf(1.0f / ry);
    int32_t sx = rx < 0 ? -1 : 1, sy = ry < 0 ? -1 : 1;
    float tx = (rx < 0 ? wd->x - (float)mx : (float)mx + 1.0f - wd->x) * ddx;
    float ty = (ry < 0 ? wd->y - (float)my : (float)my + 1.0f - wd->y) * ddy;
    hit h = {0, 0, 0, 0};
    uint8_t v;
    do { /* ends: the map's border is wall (ray_cell) */
        if (tx < ty) {
            tx += ddx;
            mx += sx;
            h.side = 0;
        } else {
            ty += ddy;
            my += sy;
            h.side = 1;
        }
        v = ray_cell(wd, mx, my);
    } while (v == RAY_EMPTY);
    h.dist = h.side == 0 ? tx - ddx : ty - ddy;
    if (h.dist < 0.02f)
        h.dist = 0.02f;
    float along = h.side == 0 ? wd->y + h.dist * ry : wd->x + h.dist * rx;
    h.tex_x = (int32_t)((along - floorf(along)) * (float)N) & MASK;
    if ((h.side == 0 && rx > 0) || (h.side == 1 && ry < 0))
        h.tex_x = MASK - h.tex_x; /* textures read left to right from every side */
    h.tex = v == RAY_DOOR ? RAY_TEX_DOOR : v - 1;
    return h;
}

/* The wall's rows [start, height - start) of column x; returns start (clamped). */
static inline int32_t wall_column(const ray_textures *t, const ray_view *v, hit h,
                                  uint8_t *col, int ch)
{
    int32_t height = v->height, stride = v->width * ch;
    float line = v->proj / h.dist, top = 0.5f * ((float)height - line);
    int32_t start = (int32_t)ceilf(top - 0.5f);
    if (start < 0)
        start = 0;
    uint32_t step = (uint32_t)((float)N * 65536.0f / line);
    uint32_t pos = (uint32_t)(((float)start + 0.5f - top) * (float)N * 65536.0f / line);
    uint32_t s = shade_at(h.dist) * (h.side ? 205u : 256u) >> 8;
    const uint8_t *tex = (ch == 1 ? t->gray[h.tex] : t->rgb[h.tex]) + h.tex_x * N * ch;
    for (int32_t y = start; y < height - start; y++, pos += step)
        put(col + y * stride, tex + (int32_t)((pos >> 16) & MASK) * ch, ch, s);
    return start;
}

/* Floor rows [height - start, height) and their mirrors, the ceiling rows above. */
static inline void floor_column(const ray_world *wd, const ray_textures *t, const ray_view *v,
                                float rx, float ry, int32_t start, uint8_t *col, int ch)
{
    int32_t height = v->height, stride = v->width * ch;
    const uint8_t *fl = ch == 1 ? t->gray[RAY_TEX_FLOOR] : t->rgb[RAY_TEX_FLOOR];
    const uint8_t *ce = ch == 1 ? t->gray[RAY_TEX_CEILING] : t->rgb[RAY_TEX_CEILING];
    for (int32_t y = height - start; y < height; y++) {
        float d = v->row_dist[y];
        int32_t fx = (int32_t)((wd->x + d * rx) * (float)N) & MASK;
        int32_t fy = (int32_t)((wd->y + d * ry) * (float)N) & MASK;
        int32_t texel = (fx * N + fy) * ch;
        put(col + y * stride, fl + texel, ch, v->row_shade[y]);
        put(col + (height - 1 - y) * stride, ce + texel, ch, v->row_shade[y]);
    }
}

typedef struct seen {
    float depth, lateral;
    int32_t kind;
} seen;

static int32_t visible_sprites(const ray_world *wd, seen *out)
{
    float c = cosf(wd->angle), s = sinf(wd->angle);
    int32_t n = 0;
    for (int32_t i = 0; i < wd->num_sprites; i++) {
        const ray_sprite *p = &wd->sprites[i];
        float rx = p->x - wd->x, ry = p->y - wd->y;
        float depth = rx * c + ry * s;
        if (!p->alive || depth < 0.1f)
            continue;
        seen e = {depth, ry * c - rx * s, p->kind};
        int32_t j = n++;
        for (; j > 0 && out[j - 1].depth < depth; j--) /* far to near */
            out[j] = out[j - 1];
        out[j] = e;
    }
    return n;
}

static inline void sprite(const ray_textures *t, const ray_view *v, const float *depth,
                          seen e, uint8_t *out, int ch)
{
    static const float size[RAY_SPRITE_KINDS] = {0.9f, 0.6f, 0.6f}; /* world units */
    int32_t w = v->width, h = v->height;
    float px = size[e.kind] * v->proj / e.depth, centre = 0.5f * (float)w * (1.0f + e.lateral / e.depth);
    float bottom = 0.5f * (float)h + 0.5f * v->proj / e.depth, left = centre - 0.5f * px;
    float top = bottom - px;
    int32_t x0 = (int32_t)ceilf(left - 0.5f), x1 = (int32_t)ceilf(left + px - 0.5f);
    int32_t y0 = (int32_t)ceilf(top - 0.5f), y1 = (int32_t)ceilf(bottom - 0.5f);
    x0 = x0 < 0 ? 0 : x0;
    y0 = y0 < 0 ? 0 : y0;
    x1 = x1 > w ? w : x1;
    y1 = y1 > h ? h : y1;
    const uint8_t *tex = ch == 1 ? t->gray[RAY_TEX_SPRITE0 + e.kind] : t->rgb[RAY_TEX_SPRITE0 + e.kind];
    const uint8_t *opaque = t->opaque[e.kind];
    uint32_t s = shade_at(e.depth);
    for (int32_t x = x0; x < x1; x++) {
        if (depth[x] <= e.depth)
            continue;
        int32_t tx = (int32_t)(((float)x + 0.5f - left) / px * (float)N) & MASK;
        for (int32_t y = y0; y < y1; y++) {
            int32_t ty = (int32_t)(((float)y + 0.5f - top) / px * (float)N) & MASK;
            if (opaque[tx * N + ty])
                put(out + (y * w + x) * ch, tex + (tx * N + ty) * ch, ch, s);
        }
    }
}

static inline void render_ch(const ray_world *wd, const ray_textures *t, const ray_view *v,
                             float *depth, uint8_t *out, int ch)
{
    float c = cosf(wd->angle), s = sinf(wd->angle);
    int32_t w = v->width;
    for (int32_t x = 0; x < w; x++) {
        /* the view plane is the agent's right, (-s, c), at distance 1: a 90-degree view */
        float cam = 2.0f * ((float)x + 0.5f) / (float)w - 1.0f;
        float rx = c - s * cam, ry = s + c * cam;
        hit h = cast(wd, rx, ry);
        depth[x] = h.dist;
        int32_t start = wall_column(t, v, h, out + x * ch, ch);
        floor_column(wd, t, v, rx, ry, start, out + x * ch, ch);
    }
    seen vis[RAY_MAX_SPRITES];
    int32_t n = visible_sprites(wd, vis);
    for (int32_t i = 0; i < n; i++)
        sprite(t, v, depth, vis[i], out, ch);
}

void ray_render(const ray_world *wd, const ray_textures *t, const ray_view *v, float *depth,
                uint8_t *out)
{
    if (v->channels == 1)
        render_ch(wd, t, v, depth, out, 1);
    else
        render_ch(wd, t, v, depth, out, 3);
}
