/* SPDX-License-Identifier: MIT */
/*
 * Integration: gravity, damping, movement and bounds as four systems over
 * the SoA columns of Position and Velocity.
 *
 * Each callback resolves its float columns once (weft_iter_fields()) and
 * runs a branch-free loop over restrict-qualified arrays, so that GCC
 * vectorizes it; the queries use WEFT_QUERY_CHUNK_RUNS, so one call covers
 * a run of contiguous chunks. Checked with
 *   gcc -std=c11 -O3 -fopt-info-vec-optimized -I include -c systems/integrate.c
 * (GCC 12, x86-64): all six kernels (add, scale, axpy, wrap, clamp,
 * bounce) report "loop vectorized using 16 byte vectors" on the baseline
 * ISA and 32 byte vectors with -march=x86-64-v3 (Release builds use -O3;
 * GCC 12's -O2 cost model vectorizes none of them). floorf() needs SSE4.1
 * to vectorize, so wrap() uses floor_bf(); see keep_if() for why the
 * selects that feed arithmetic are bit masks.
 *
 * Every step rounds once per operation in float (C11 mode: no FMA
 * contraction), in the order gravity, damping, move, bounds, so a plain
 * scalar loop doing the same operations gives bit-identical results.
 *
 * The configuration lives in a resource ("weft.integrate.N") that the
 * systems read through their user pointer: the world keeps it alive as
 * long as the systems, and the declared read orders any writer of it.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <weft.h>
#include <weft/builtin.h>

#include "builtin_internal.h"

/* Query terms of every integration system. */
enum { T_POS = 0, T_VEL = 1 };

/* The resolved x and y arrays of SoA term @p term; false when the term is
 * not the two-float SoA component the systems expect. */
static bool xy(const weft_iter_t *it, uint32_t term, float **x, float **y) {
  void *f[WEFT_MAX_FIELDS];
  if (weft_iter_fields(it, term, f) != 2)
    return false;
  *x = f[0];
  *y = f[1];
  return true;
}

/* ---- kernels ------------------------------------------------------------ */

static void add(float *restrict a, uint32_t n, float s) {
  for (uint32_t i = 0; i < n; i++)
    a[i] += s;
}

static void scale(float *restrict a, uint32_t n, float s) {
  for (uint32_t i = 0; i < n; i++)
    a[i] *= s;
}

/* a += b * s */
static void axpy(float *restrict a, const float *restrict b, uint32_t n,
                 float s) {
  for (uint32_t i = 0; i < n; i++)
    a[i] += b[i] * s;
}

/* v when c holds, else +0, by masking v's bits. A plain `c ? v : 0`
 * feeding an addition is folded into `c ? x + v : x`, an addition GCC
 * will not speculate under -ftrapping-math, so the loop would keep a
 * branch and stay scalar; the integer mask keeps it straight-line. */
static inline float keep_if(bool c, float v) {
  uint32_t b;
  memcpy(&b, &v, sizeof b);
  b &= -(uint32_t)c;
  memcpy(&v, &b, sizeof v);
  return v;
}

/* floorf() for every float, vectorizable without SSE4.1 (no roundps):
 * for |t| < 2^23, adding and removing 2^23 with t's sign rounds t to an
 * integer, and the result steps down by one when that rounded up; larger
 * magnitudes, infinities and NaN pass through (m = 0). Equal to floorf()
 * under round-to-nearest, except that floor(-0) gives +0. */
static inline float floor_bf(float t) {
  const float big = 8388608.0f; /* 2^23: every float from here is integral */
  float m = keep_if(fabsf(t) < big, copysignf(big, t));
  float r = (t + m) - m;
  return r - keep_if(r > t, 1.0f);
}

/* a in [lo, hi): a -= w * floor((a - lo) / w); then what the rounding of
 * that expression leaves outside is folded back: just below lo moves up by
 * w, and what is still below (from so far away that an ulp of a exceeds w)
 * becomes lo, as does whatever reaches hi. */
static void wrap(float *restrict a, uint32_t n, float lo, float hi, float w) {
  for (uint32_t i = 0; i < n; i++) {
    float x = a[i];
    x -= w * floor_bf((x - lo) / w);
    x += keep_if(x < lo, w);
    x = x < lo ? lo : x;
    x = x >= hi ? lo : x;
    a[i] = x;
  }
}

static void clamp(float *restrict a, uint32_t n, float lo, float hi) {
  for (uint32_t i = 0; i < n; i++) {
    float x = a[i];
    x = x < lo ? lo : x;
    x = x > hi ? hi : x;
    a[i] = x;
  }
}

/* -u when c holds, else u: the sign bit flipped through an integer mask,
 * which is what IEEE negation does: it vectorizes into a xor, where two
 * chained `c ? -u : u` selects vectorize into masks and blends. */
static inline float negate_if(bool c, float u) {
  uint32_t b;
  memcpy(&b, &u, sizeof b);
  b ^= -(uint32_t)c & UINT32_C(0x80000000);
  memcpy(&u, &b, sizeof u);
  return u;
}

/* Clamps p to [lo, hi]; a velocity that points out through the side p
 * crossed is reversed (one that already points back in is kept). Below lo
 * and above hi exclude each other (lo < hi), so both tests read the
 * incoming velocity, as the two steps in turn would. */
static void bounce(float *restrict p, float *restrict v, uint32_t n, float lo,
                   float hi) {
  for (uint32_t i = 0; i < n; i++) {
    float x = p[i], u = v[i];
    bool out = ((x < lo) & (u < 0.0f)) | ((x > hi) & (u > 0.0f));
    u = negate_if(out, u);
    x = x < lo ? lo : x;
    x = x > hi ? hi : x;
    p[i] = x;
    v[i] = u;
  }
}

/* ---- systems ------------------------------------------------------------- */

static int gravity_run(weft_sysctx_t *ctx, const weft_iter_t *it) {
  const weft_integrate_config_t *c = ctx->user;
  float *vx, *vy;
  if (!xy(it, T_VEL, &vx, &vy))
    return WEFT_EINVAL;
  float dt = (float)ctx->dt;
  add(vx, it->count, c->gravity.x * dt);
  add(vy, it->count, c->gravity.y * dt);
  return 0;
}

/* The factor never goes below 0: a step longer than 1 / damping stops the
 * entity instead of reversing it. */
static int damping_run(weft_sysctx_t *ctx, const weft_iter_t *it) {
  const weft_integrate_config_t *c = ctx->user;
  float *vx, *vy;
  if (!xy(it, T_VEL, &vx, &vy))
    return WEFT_EINVAL;
  float k = 1.0f - c->damping * (float)ctx->dt;
  k = k > 0.0f ? k : 0.0f;
  scale(vx, it->count, k);
  scale(vy, it->count, k);
  return 0;
}

static int move_run(weft_sysctx_t *ctx, const weft_iter_t *it) {
  float *px, *py, *vx, *vy;
  if (!xy(it, T_POS, &px, &py) || !xy(it, T_VEL, &vx, &vy))
    return WEFT_EINVAL;
  float dt = (float)ctx->dt;
  axpy(px, vx, it->count, dt);
  axpy(py, vy, it->count, dt);
  return 0;
}

static int bounds_run(weft_sysctx_t *ctx, const weft_iter_t *it) {
  const weft_integrate_config_t *c = ctx->user;
  float *px, *py;
  if (!xy(it, T_POS, &px, &py))
    return WEFT_EINVAL;
  uint32_t n = it->count;
  switch (c->mode) {
  case WEFT_BOUNDS_WRAP:
    wrap(px, n, c->min.x, c->max.x, c->max.x - c->min.x);
    wrap(py, n, c->min.y, c->max.y, c->max.y - c->min.y);
    return 0;
  case WEFT_BOUNDS_CLAMP:
    clamp(px, n, c->min.x, c->max.x);
    clamp(py, n, c->min.y, c->max.y);
    return 0;
  case WEFT_BOUNDS_BOUNCE: {
    float *vx, *vy;
    if (!xy(it, T_VEL, &vx, &vy))
      return WEFT_EINVAL;
    bounce(px, vx, n, c->min.x, c->max.x);
    bounce(py, vy, n, c->min.y, c->max.y);
    return 0;
  }
  default:
    return 0;
  }
}

/* ---- registration
 * ------------------------------------------------------------ */

static bool finite2(weft_vec2_t v) {
  return isfinite(v.x) && isfinite(v.y);
}

static bool config_ok(const weft_integrate_config_t *c) {
  if (!finite2(c->gravity) || !isfinite(c->damping) || !(c->damping >= 0.0f))
    return false;
  if (c->mode == WEFT_BOUNDS_NONE)
    return true;
  if (c->mode != WEFT_BOUNDS_WRAP && c->mode != WEFT_BOUNDS_CLAMP &&
      c->mode != WEFT_BOUNDS_BOUNCE)
    return false;
  /* The extent must be finite too: wrap divides by it. */
  return finite2(c->min) && finite2(c->max) && c->min.x < c->max.x &&
         c->min.y < c->max.y && isfinite(c->max.x - c->min.x) &&
         isfinite(c->max.y - c->min.y);
}

/* Copies @p c into a fresh resource "weft.integrate.N" and returns it. */
static int keep_config(weft_world_t *w, const weft_integrate_config_t *c,
                       weft_resource_t *res, const void **kept) {
  char name[48];
  weft_resource_t r;
  for (uint32_t n = 0;; n++) {
    snprintf(name, sizeof name, "weft.integrate.%u", n);
    if (weft_resource_lookup(w, name, &r) != 0)
      break;
  }
  int rc = weft_resource_register(w, name, sizeof *c,
                                  _Alignof(weft_integrate_config_t), c, &r);
  if (rc)
    return rc;
  *res = r;
  *kept = weft_resource_get(w, r);
  return *kept ? 0 : WEFT_ENOMEM;
}

/* A system over Position (term 0) and Velocity (term 1) with the given
 * term access; the configuration is filled in later. */
static weft_system_desc_t desc(const char *name, const weft_std_t *std,
                               weft_phase_t phase, uint8_t pos, uint8_t vel,
                               weft_system_fn run) {
  weft_system_desc_t d = weft__builtin_desc(name, phase, run, NULL);
  d.query.include[T_POS] = std->position;
  d.query.include[T_VEL] = std->velocity;
  d.query.exclude[0] = std->ghost; /* another world moves those */
  d.query.flags = WEFT_QUERY_CHUNK_RUNS;
  d.term_access[T_POS] = pos;
  d.term_access[T_VEL] = vel;
  return d;
}

int weft_sys_integrate(weft_world_t *w, const weft_std_t *std,
                       const weft_integrate_config_t *config,
                       weft_integrate_systems_t *out) {
  weft_integrate_config_t c;
  memset(&c, 0, sizeof c);
  if (config)
    c = *config;
  if (!w || !std)
    return weft_world_fail(w, WEFT_EINVAL, "weft_sys_integrate: std is NULL");
  if (!config_ok(&c))
    return weft_world_fail(
        w, WEFT_EINVAL,
        "weft_sys_integrate: bad config (gravity finite, damping finite "
        "and >= 0, a known bounds mode, a finite box with min < max)");
  if (!c.phase)
    c.phase = WEFT_PHASE_FIXED_UPDATE;

  enum { R = WEFT_ACCESS_READ, W = WEFT_ACCESS_WRITE, N = WEFT_ACCESS_NONE };
  weft_system_desc_t d[4];
  weft_system_t *slot[4];
  weft_integrate_systems_t s;
  memset(&s, 0, sizeof s);
  uint32_t nd = 0;
  if (c.gravity.x != 0.0f || c.gravity.y != 0.0f) {
    d[nd] = desc("weft.gravity", std, c.phase, N, W, gravity_run);
    slot[nd++] = &s.gravity;
  }
  if (c.damping > 0.0f) {
    d[nd] = desc("weft.damping", std, c.phase, N, W, damping_run);
    slot[nd++] = &s.damping;
  }
  d[nd] = desc("weft.move", std, c.phase, W, R, move_run);
  slot[nd++] = &s.move;
  if (c.mode != WEFT_BOUNDS_NONE) {
    /* Without BOUNCE the velocity only selects the entities. */
    uint8_t vel = c.mode == WEFT_BOUNDS_BOUNCE ? W : N;
    d[nd] = desc("weft.bounds", std, c.phase, W, vel, bounds_run);
    slot[nd++] = &s.bounds;
  }

  int rc = 0;
  for (uint32_t i = 0; i < nd && !rc; i++)
    rc = weft__builtin_unique(w, "weft_sys_integrate", d[i].name);
  if (rc)
    return rc;
  weft_resource_t res;
  const void *kept;
  rc = keep_config(w, &c, &res, &kept);
  if (rc)
    return rc;
  for (uint32_t i = 0; i < nd; i++) {
    d[i].res_read[0] = res;
    d[i].user = (void *)kept;
  }

  /* Registration order orders the systems (their accesses conflict). All
   * or nothing: a failure removes the systems registered before it. */
  for (uint32_t i = 0; i < nd; i++) {
    rc = weft__builtin_register(w, &d[i], slot[i]);
    if (rc) {
      while (i--)
        weft_system_remove(w, *slot[i]);
      return rc;
    }
  }
  if (out)
    *out = s;
  return 0;
}
