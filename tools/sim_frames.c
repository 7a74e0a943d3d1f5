/* SPDX-License-Identifier: MIT */
/*
 * weft-sim's pictures (sim_frames.h): entities are tallied per pixel and
 * kind with integer sums, which do not depend on the order of the visit,
 * then each pixel takes the colour of the most important kind it holds.
 * libpng writes the result.
 */
#include "sim_frames.h"

#include <errno.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The kinds a pixel tallies, most important (drawn over the rest) first. */
enum { K_TURRET, K_PROJECTILE, K_UNIT, K_DEAD, K_MOVER, K_COUNT };

struct sim_frame_px_t {
  uint16_t n[K_COUNT]; /* entities per kind, saturating */
  uint32_t health;     /* units: sum of health fractions in 1/255ths */
  int32_t vx, vy;      /* movers: sum of headings, fixed point */
};

#define SIM_PI 3.14159265358979323846

/* A heading's fixed-point scale: unit vectors of length 256. */
#define HEADING_ONE 256.0f

static const uint8_t background[3] = {14, 17, 22};

int sim_frames_init(sim_frames_t *f, const char *dir, uint32_t size) {
  memset(f, 0, sizeof *f);
  if (!dir || size < SIM_FRAME_MIN_SIZE || size > SIM_FRAME_MAX_SIZE ||
      strlen(dir) + 32 > sizeof f->dir)
    return WEFT_EINVAL;
  snprintf(f->dir, sizeof f->dir, "%s", dir);
  f->size = size;
  /* The folder is made and checked now, before a run that may be long. */
  if (mkdir(dir, 0777) != 0 && errno != EEXIST)
    return WEFT_EIO;
  struct stat st;
  if (stat(dir, &st) != 0)
    return WEFT_EIO;
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return WEFT_EIO;
  }
  if (access(dir, W_OK | X_OK) != 0)
    return WEFT_EIO;
  size_t px = (size_t)size * size;
  f->tally = malloc(px * sizeof *f->tally);
  f->rgb = malloc(px * 3);
  if (!f->tally || !f->rgb) {
    sim_frames_free(f);
    return WEFT_ENOMEM;
  }
  return 0;
}

void sim_frames_free(sim_frames_t *f) {
  free(f->tally);
  free(f->rgb);
  f->tally = NULL;
  f->rgb = NULL;
}

/* Where the world maps to pixels: x right, y up, [0, side) filling it. */
typedef struct view_t {
  sim_frame_px_t *tally;
  uint32_t size;
  float scale; /* pixels per world unit */
} view_t;

/* The pixel column or row of world coordinate @p v; false off the picture
 * (or not a number). */
static bool to_px(const view_t *v, float w, int32_t *out) {
  float p = floorf(w * v->scale);
  if (!(p >= 0.0f && p < (float)v->size))
    return false;
  *out = (int32_t)p;
  return true;
}

static sim_frame_px_t *at(const view_t *v, int32_t col, int32_t row) {
  return &v->tally[(size_t)(v->size - 1 - (uint32_t)row) * v->size +
                   (uint32_t)col];
}

static void count(sim_frame_px_t *p, int kind) {
  if (p->n[kind] < UINT16_MAX)
    p->n[kind]++;
}

/* A dot of @p kind at world (x, y); NULL when off the picture. */
static sim_frame_px_t *dot(const view_t *v, float x, float y, int kind) {
  int32_t col, row;
  if (!to_px(v, x, &col) || !to_px(v, y, &row))
    return NULL;
  sim_frame_px_t *p = at(v, col, row);
  count(p, kind);
  return p;
}

/* A turret: its 2 x 2 box, at least 3 pixels a side so that it shows. */
static void square(const view_t *v, float x, float y) {
  int32_t col, row;
  if (!to_px(v, x, &col) || !to_px(v, y, &row))
    return;
  int32_t half = (int32_t)(v->scale * 1.0f);
  if (half < 1)
    half = 1;
  for (int32_t r = row - half; r <= row + half; r++)
    for (int32_t c = col - half; c <= col + half; c++)
      if (r >= 0 && c >= 0 && r < (int32_t)v->size && c < (int32_t)v->size)
        count(at(v, c, r), K_TURRET);
}

/* Visits every entity with Position and all of @p include, none of
 * @p exclude, calling @p draw per chunk. */
typedef void (*draw_fn)(const view_t *v, const weft_std_t *std,
                        weft_iter_t *it);

static int visit(const view_t *v, const sim_scene_t *s,
                 const weft_component_t *include,
                 const weft_component_t *exclude, draw_fn draw) {
  weft_query_desc_t d = {0};
  d.include[0] = s->std.position;
  for (uint32_t i = 0; include[i]; i++)
    d.include[i + 1] = include[i];
  for (uint32_t i = 0; exclude[i]; i++)
    d.exclude[i] = exclude[i];
  weft_query_t *q;
  int rc = weft_query_create(s->world, &d, &q);
  if (rc)
    return rc;
  weft_iter_t it;
  for (weft_query_iter(q, &it); weft_iter_next(&it);)
    draw(v, &s->std, &it);
  weft_query_destroy(q);
  return 0;
}

static void draw_turrets(const view_t *v, const weft_std_t *std,
                         weft_iter_t *it) {
  (void)std;
  const float *x = weft_iter_field(it, 0, 0), *y = weft_iter_field(it, 0, 1);
  for (uint32_t i = 0; i < it->count; i++)
    square(v, x[i], y[i]);
}

/* A projectile: a small plus, so that one stands out among the units. */
static void draw_projectiles(const view_t *v, const weft_std_t *std,
                             weft_iter_t *it) {
  (void)std;
  const float *x = weft_iter_field(it, 0, 0), *y = weft_iter_field(it, 0, 1);
  static const int32_t arm[5][2] = {{0, 0}, {-1, 0}, {1, 0}, {0, -1}, {0, 1}};
  for (uint32_t i = 0; i < it->count; i++) {
    int32_t col, row;
    if (!to_px(v, x[i], &col) || !to_px(v, y[i], &row))
      continue;
    for (int k = 0; k < 5; k++) {
      int32_t c = col + arm[k][0], r = row + arm[k][1];
      if (r >= 0 && c >= 0 && r < (int32_t)v->size && c < (int32_t)v->size)
        count(at(v, c, r), K_PROJECTILE);
    }
  }
}

static void draw_dead(const view_t *v, const weft_std_t *std, weft_iter_t *it) {
  (void)std;
  const float *x = weft_iter_field(it, 0, 0), *y = weft_iter_field(it, 0, 1);
  for (uint32_t i = 0; i < it->count; i++)
    dot(v, x[i], y[i], K_DEAD);
}

static void draw_units(const view_t *v, const weft_std_t *std,
                       weft_iter_t *it) {
  const float *x = weft_iter_field(it, 0, 0), *y = weft_iter_field(it, 0, 1);
  const weft_health_t *h = weft_iter_column_of(it, std->health);
  for (uint32_t i = 0; i < it->count; i++) {
    sim_frame_px_t *p = dot(v, x[i], y[i], K_UNIT);
    if (!p)
      continue;
    float frac = h && h[i].max_hp > 0 ? h[i].hp / h[i].max_hp : 1.0f;
    frac = frac < 0 ? 0 : frac > 1 ? 1 : frac;
    p->health += (uint32_t)lrintf(frac * 255.0f);
  }
}

/* Boids and particles: Velocity is include term 1. */
static void draw_movers(const view_t *v, const weft_std_t *std,
                        weft_iter_t *it) {
  (void)std;
  const float *x = weft_iter_field(it, 0, 0), *y = weft_iter_field(it, 0, 1);
  const float *vx = weft_iter_field(it, 1, 0), *vy = weft_iter_field(it, 1, 1);
  for (uint32_t i = 0; i < it->count; i++) {
    sim_frame_px_t *p = dot(v, x[i], y[i], K_MOVER);
    float len = sqrtf(vx[i] * vx[i] + vy[i] * vy[i]);
    if (!p || !(len > 0.0f))
      continue;
    /* Headings are summed as integers: the same total in any order. */
    p->vx += (int32_t)lrintf(vx[i] / len * HEADING_ONE);
    p->vy += (int32_t)lrintf(vy[i] / len * HEADING_ONE);
  }
}

/* Brightness for @p n entities on one pixel: one is plain, more brighter. */
static float density(uint32_t n) {
  float b = 0.8f + 0.2f * (float)(n - 1);
  return b > 1.0f ? 1.0f : b;
}

static void put(uint8_t *out, float r, float g, float b, float k) {
  out[0] = (uint8_t)lrintf(fminf(255.0f, r * k));
  out[1] = (uint8_t)lrintf(fminf(255.0f, g * k));
  out[2] = (uint8_t)lrintf(fminf(255.0f, b * k));
}

/* A fully saturated colour of hue @p h in [0, 1). */
static void hue(float h, float *r, float *g, float *b) {
  float c[3];
  for (int i = 0; i < 3; i++) {
    float t = fmodf(h + (float)(2 - i) / 3.0f, 1.0f) * 6.0f;
    float d = fabsf(t - 3.0f);
    c[i] = d < 1.0f ? 1.0f : d < 2.0f ? 2.0f - d : 0.0f;
  }
  /* Pastel: a third white, so dark hues still show on the background. */
  *r = 255.0f * (0.35f + 0.65f * c[0]);
  *g = 255.0f * (0.35f + 0.65f * c[1]);
  *b = 255.0f * (0.35f + 0.65f * c[2]);
}

static void shade(const sim_frame_px_t *p, uint8_t *out) {
  if (p->n[K_TURRET]) {
    put(out, 255, 160, 40, 1.0f);
  } else if (p->n[K_PROJECTILE]) {
    put(out, 255, 240, 120, density(p->n[K_PROJECTILE]));
  } else if (p->n[K_UNIT]) {
    /* Blue at full health, red near death. */
    float f = (float)p->health / (255.0f * (float)p->n[K_UNIT]);
    put(out, 240 - 150 * f, 70 + 130 * f, 70 + 185 * f, density(p->n[K_UNIT]));
  } else if (p->n[K_DEAD]) {
    put(out, 110, 110, 110, 1.0f);
  } else if (p->n[K_MOVER]) {
    float r = 200, g = 200, b = 200;
    if (p->vx || p->vy)
      hue((float)(atan2((double)p->vy, (double)p->vx) / (2 * SIM_PI) + 0.5), &r,
          &g, &b);
    put(out, r, g, b, density(p->n[K_MOVER]));
  } else {
    memcpy(out, background, 3);
  }
}

int sim_frames_render(sim_frames_t *f, const sim_scene_t *s) {
  if (!f->tally || !s || !(s->side > 0))
    return WEFT_EINVAL;
  size_t px = (size_t)f->size * f->size;
  memset(f->tally, 0, px * sizeof *f->tally);
  view_t v = {f->tally, f->size, (float)f->size / s->side};
  const weft_std_t *d = &s->std;
  int rc = visit(&v, s, (weft_component_t[]){d->spawner, 0},
                 (weft_component_t[]){0}, draw_turrets);
  if (!rc)
    rc = visit(&v, s, (weft_component_t[]){d->lifetime, 0},
               (weft_component_t[]){d->spawner, 0}, draw_projectiles);
  if (!rc)
    rc = visit(&v, s, (weft_component_t[]){d->dead, 0},
               (weft_component_t[]){d->spawner, d->lifetime, 0}, draw_dead);
  if (!rc)
    rc = visit(&v, s, (weft_component_t[]){d->health, 0},
               (weft_component_t[]){d->spawner, d->lifetime, d->dead, 0},
               draw_units);
  if (!rc)
    rc = visit(
        &v, s, (weft_component_t[]){d->velocity, 0},
        (weft_component_t[]){d->spawner, d->lifetime, d->dead, d->health, 0},
        draw_movers);
  if (rc)
    return rc;
  for (size_t i = 0; i < px; i++)
    shade(&f->tally[i], &f->rgb[i * 3]);
  return 0;
}

int sim_frames_write(sim_frames_t *f, const sim_scene_t *s, uint64_t tick) {
  int rc = sim_frames_render(f, s);
  if (rc)
    return rc;
  char path[sizeof f->dir + 32];
  snprintf(path, sizeof path, "%s/frame-%06llu.png", f->dir,
           (unsigned long long)tick);
  png_image img;
  memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  img.width = f->size;
  img.height = f->size;
  img.format = PNG_FORMAT_RGB;
  if (!png_image_write_to_file(&img, path, 0, f->rgb, 0, NULL)) {
    snprintf(f->why, sizeof f->why, "%s: %s", path, img.message);
    png_image_free(&img);
    return WEFT_EIO;
  }
  f->written++;
  return 0;
}
