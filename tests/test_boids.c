/* SPDX-License-Identifier: MIT */
/*
 * "weft.boids" and its kernel weft_boids_steer() (builtin.h): the kernel
 * against hand computations of each steering term and against a naive
 * implementation written here; one step of the grid and boids systems
 * against the naive O(n^2) computation over every other boid within the
 * radius, in handle order, bit for bit, including the boids the plan has
 * no step for and a run without the plan; the same run on a pool of two
 * with inline_rows 1, to the digest; the defaults and the rejected
 * settings.
 * Every test builds and destroys its own world (and pool).
 */
#include "support/weft_test.h"

#include <math.h>
#include <stdlib.h>

#include <weft/builtin.h>

#define assert_float_exact(a, b)                                               \
  do {                                                                         \
    float a_ = (a), b_ = (b);                                                  \
    if (!(a_ == b_))                                                           \
      fail_msg("%s = %.9g, expected %.9g", #a, (double)a_, (double)b_);        \
  } while (0)

static weft_grid_item_t item(weft_entity_t e, float x, float y, float vx,
                             float vy) {
  weft_grid_item_t it;
  memset(&it, 0, sizeof it);
  it.e = e;
  it.x = x;
  it.y = y;
  it.vx = vx;
  it.vy = vy;
  return it;
}

static float frand(wt_rng_t *r, float lo, float hi) {
  return lo + (hi - lo) * (float)wt_below(r, 100001) / 100000.0f;
}

/* --- the naive reference -------------------------------------------------- */

typedef struct ref_t {
  float radius, min_distance, ws, wa, wc, max_speed;
} ref_t;

/* The documented kernel, written out: neighbours are every other item of
 * @p all (handle order) strictly closer than the radius. Float throughout,
 * in the documented order of operations. */
static weft_vec2_t naive(const ref_t *c, const weft_grid_item_t *self,
                         const weft_grid_item_t *all, uint32_t n, float dt,
                         uint32_t *count) {
  float sx = 0, sy = 0, vx = 0, vy = 0, ox = 0, oy = 0;
  uint32_t k = 0;
  const float r2 = c->radius * c->radius;
  const float m2 = c->min_distance * c->min_distance;
  for (uint32_t j = 0; j < n; j++) {
    const weft_grid_item_t *o = &all[j];
    if (o->e == self->e)
      continue;
    float dx = self->x - o->x, dy = self->y - o->y;
    float d2 = dx * dx + dy * dy;
    if (!(d2 < r2))
      continue;
    if (d2 > 0.0f && d2 < m2) {
      sx += dx / d2;
      sy += dy / d2;
    }
    vx += o->vx;
    vy += o->vy;
    ox += o->x - self->x;
    oy += o->y - self->y;
    k++;
  }
  weft_vec2_t v = {self->vx, self->vy};
  if (k) {
    float fk = (float)k;
    float ax = vx / fk - self->vx, ay = vy / fk - self->vy;
    float cx = ox / fk, cy = oy / fk;
    v.x += dt * (c->ws * sx + c->wa * ax + c->wc * cx);
    v.y += dt * (c->ws * sy + c->wa * ay + c->wc * cy);
  }
  float s2 = v.x * v.x + v.y * v.y;
  if (s2 > c->max_speed * c->max_speed) {
    float f = c->max_speed / sqrtf(s2);
    v.x *= f;
    v.y *= f;
  }
  if (count)
    *count = k;
  return v;
}

/* The neighbours of @p self among @p all (handle order) into @p out. */
static uint32_t neighbours(const weft_grid_item_t *self,
                           const weft_grid_item_t *all, uint32_t n,
                           float radius, weft_grid_item_t *out) {
  uint32_t k = 0;
  for (uint32_t j = 0; j < n; j++) {
    float dx = self->x - all[j].x, dy = self->y - all[j].y;
    if (all[j].e != self->e && dx * dx + dy * dy < radius * radius)
      out[k++] = all[j];
  }
  return k;
}

/* --- the kernel ----------------------------------------------------------- */

static void test_boids_steer_terms_by_hand(void **state) {
  (void)state;
  weft_boids_config_t c;
  weft_vec2_t v;

  /* Separation alone: d = (-0.5, 0), |d|^2 = 0.25: d / |d|^2 = (-2, 0). */
  memset(&c, 0, sizeof c);
  c.radius = 2.0f;
  c.min_distance = 1.0f;
  c.separation = 2.0f;
  weft_grid_item_t s = item(1, 0.0f, 0.0f, 0.0f, 0.0f);
  weft_grid_item_t nb[3] = {item(2, 0.5f, 0.0f, 0.0f, 0.0f)};
  v = weft_boids_steer(&c, &s, nb, 1, 0.5f);
  assert_float_exact(v.x, -2.0f); /* 0.5 * 2 * -2 */
  assert_float_exact(v.y, 0.0f);
  /* At min_distance or beyond, or coincident: no push (and no NaN). */
  nb[0] = item(2, 1.0f, 0.0f, 0.0f, 0.0f);
  nb[1] = item(3, 0.0f, 0.0f, 0.0f, 0.0f);
  v = weft_boids_steer(&c, &s, nb, 2, 0.5f);
  assert_float_exact(v.x, 0.0f);
  assert_float_exact(v.y, 0.0f);

  /* Alignment alone: mean (2, 1) - (1, 0) = (1, 1). */
  memset(&c, 0, sizeof c);
  c.alignment = 1.0f;
  s = item(1, 0.0f, 0.0f, 1.0f, 0.0f);
  nb[0] = item(2, 0.1f, 0.0f, 3.0f, 0.0f);
  nb[1] = item(3, 0.0f, 0.1f, 1.0f, 2.0f);
  v = weft_boids_steer(&c, &s, nb, 2, 1.0f);
  assert_float_exact(v.x, 2.0f);
  assert_float_exact(v.y, 1.0f);

  /* Cohesion alone: mean of (2, 0) and (0, 4) = (1, 2), weight 0.5. */
  memset(&c, 0, sizeof c);
  c.cohesion = 0.5f;
  c.max_speed = 100.0f;
  s = item(1, 1.0f, 1.0f, 1.0f, -1.0f);
  nb[0] = item(2, 3.0f, 1.0f, 9.0f, 9.0f);
  nb[1] = item(3, 1.0f, 5.0f, -9.0f, 9.0f);
  v = weft_boids_steer(&c, &s, nb, 2, 1.0f);
  assert_float_exact(v.x, 1.5f);
  assert_float_exact(v.y, 0.0f);

  /* No neighbour: the velocity, clamped to max_speed (default 10). */
  v = weft_boids_steer(NULL, &s, NULL, 0, 1.0f);
  assert_float_exact(v.x, 1.0f);
  assert_float_exact(v.y, -1.0f);
  s = item(1, 0.0f, 0.0f, 30.0f, -40.0f);
  v = weft_boids_steer(NULL, &s, NULL, 0, 1.0f);
  assert_float_exact(v.x, 6.0f);
  assert_float_exact(v.y, -8.0f);
  memset(&c, 0, sizeof c);
  c.max_speed = 5.0f;
  v = weft_boids_steer(&c, &s, nb, 0, 1.0f);
  assert_float_exact(v.x, 3.0f);
  assert_float_exact(v.y, -4.0f);

  /* Default weights 1.5, 1, 1 (all three zero), with every term at once:
   * sep (-2, 0) (min_distance 1), ali (2, 0) - (0, 0), coh (0.5, 0). */
  memset(&c, 0, sizeof c);
  c.min_distance = 1.0f;
  s = item(1, 0.0f, 0.0f, 0.0f, 0.0f);
  nb[0] = item(2, 0.5f, 0.0f, 2.0f, 0.0f);
  v = weft_boids_steer(&c, &s, nb, 1, 0.25f);
  assert_float_exact(v.x, 0.25f * (1.5f * -2.0f + 2.0f + 0.5f));
  assert_float_exact(v.y, 0.0f);
  /* A zero radius stays 0 in the kernel: min_distance 0 then means no
   * separation. */
  c.min_distance = 0.0f;
  v = weft_boids_steer(&c, &s, nb, 1, 0.25f);
  assert_float_exact(v.x, 0.25f * (2.0f + 0.5f));
  /* ... and the radius gives min_distance radius / 2 when set. */
  c.radius = 2.0f;
  v = weft_boids_steer(&c, &s, nb, 1, 0.25f);
  assert_float_exact(v.x, 0.25f * (1.5f * -2.0f + 2.0f + 0.5f));
}

#define FLOCK 500u

/* A random flock in handle order: the kernel on each boid's neighbours
 * equals the naive computation, and the sums follow the given order
 * (reversing the neighbours changes some results). */
static void test_boids_steer_matches_naive(void **state) {
  (void)state;
  wt_rng_t r = wt_rng(77);
  weft_grid_item_t *all = calloc(FLOCK, sizeof *all);
  weft_grid_item_t *nb = calloc(FLOCK, sizeof *nb);
  assert_non_null(all);
  assert_non_null(nb);
  for (uint32_t i = 0; i < FLOCK; i++)
    all[i] = item(wt_handle(i + 1, 1, 9), frand(&r, 0.0f, 12.0f),
                  frand(&r, 0.0f, 12.0f), frand(&r, -3.0f, 3.0f),
                  frand(&r, -3.0f, 3.0f));
  for (uint32_t i = FLOCK - 5; i < FLOCK; i++) { /* stragglers, alone */
    all[i].x = 100.0f + 10.0f * (float)i;
    all[i].y = 100.0f;
  }
  weft_boids_config_t c;
  memset(&c, 0, sizeof c);
  c.radius = 1.5f;
  c.separation = 1.25f;
  c.alignment = 0.75f;
  c.cohesion = 0.5f;
  c.max_speed = 3.5f;
  const ref_t ref = {1.5f, 0.75f, 1.25f, 0.75f, 0.5f, 3.5f};
  const float dt = 0.2f;
  uint32_t lonely = 0, clamped = 0, order_sensitive = 0, total = 0;
  for (uint32_t i = 0; i < FLOCK; i++) {
    uint32_t k = neighbours(&all[i], all, FLOCK, c.radius, nb);
    uint32_t kn = 0;
    weft_vec2_t want = naive(&ref, &all[i], all, FLOCK, dt, &kn);
    assert_int_equal(k, kn);
    weft_vec2_t got = weft_boids_steer(&c, &all[i], nb, k, dt);
    if (got.x != want.x || got.y != want.y)
      fail_msg("boid %u (%u neighbours): (%.9g, %.9g), naive (%.9g, %.9g)", i,
               k, (double)got.x, (double)got.y, (double)want.x, (double)want.y);
    lonely += k == 0;
    total += k;
    float s2 = got.x * got.x + got.y * got.y;
    clamped += s2 > 3.49f * 3.49f;
    for (uint32_t a = 0, b = k ? k - 1 : 0; a < b; a++, b--) {
      weft_grid_item_t t = nb[a];
      nb[a] = nb[b];
      nb[b] = t;
    }
    weft_vec2_t rev = weft_boids_steer(&c, &all[i], nb, k, dt);
    order_sensitive += rev.x != got.x || rev.y != got.y;
  }
  /* The flock exercised every branch. */
  assert_int_equal(lonely, 5);
  assert_true(total / FLOCK >= 5);
  assert_true(clamped > 10);
  assert_true(order_sensitive > 0);
  free(all);
  free(nb);
}

/* --- the system ----------------------------------------------------------- */

typedef struct bx_t {
  weft_world_t *w;
  weft_pool_t *pool;
  weft_std_t s;
  weft_grid_t *grid;
  weft_system_t gsys, bsys;
} bx_t;

/* A world (pool of @p workers with inline_rows 1; small chunks so the
 * flock spans many), the std components and a grid over @p lo .. @p hi. */
static bx_t bx_new(uint32_t workers, float cell, float lo, float hi) {
  bx_t b;
  memset(&b, 0, sizeof b);
  b.w = wt_world_pooled(workers, WEFT_CHUNK_SIZE_MIN, &b.pool);
  if (workers)
    wt_dispatch_everything(b.w);
  assert_int_equal(weft_std_register(b.w, &b.s), WEFT_OK);
  weft_grid_config_t gc;
  memset(&gc, 0, sizeof gc);
  gc.cell = cell;
  gc.min = (weft_vec2_t){lo, lo};
  gc.max = (weft_vec2_t){hi, hi};
  assert_int_equal(weft_grid_create(b.w, &gc, &b.grid), WEFT_OK);
  return b;
}

static void bx_free(bx_t *b) {
  weft_grid_destroy(b->grid); /* before the world: it holds queries */
  weft_world_destroy(b->w);   /* before the pool it uses */
  if (b->pool)
    weft_pool_destroy(b->pool);
  memset(b, 0, sizeof *b);
}

/* The grid over Boid entities, then boids with @p cfg. */
static void bx_systems(bx_t *b, const weft_boids_config_t *cfg) {
  assert_int_equal(weft_sys_grid(b->w, &b->s, b->grid, b->s.boid,
                                 WEFT_PHASE_FIXED_UPDATE, &b->gsys),
                   WEFT_OK);
  int rc = weft_sys_boids(b->w, &b->s, b->grid, cfg, &b->bsys);
  if (rc != WEFT_OK)
    fail_msg("weft_sys_boids: %s", weft_strerror(rc));
  assert_int_not_equal(b->bsys, 0);
}

static weft_entity_t spawn_boid(bx_t *b, weft_vec2_t p, weft_vec2_t v,
                                bool boid) {
  const weft_component_t comps[] = {b->s.position, b->s.velocity,
                                    boid ? b->s.boid : 0, 0};
  const void *vals[] = {&p, &v, NULL, NULL};
  weft_entity_t e = WEFT_ENTITY_NULL;
  assert_int_equal(weft_spawn_with(b->w, comps, vals, &e), WEFT_OK);
  return e;
}

static weft_vec2_t get_vec(const bx_t *b, weft_entity_t e, weft_component_t c) {
  weft_vec2_t v = {NAN, NAN};
  assert_int_equal(weft_read(b->w, e, c, &v), WEFT_OK);
  return v;
}

static void run_fixed(bx_t *b, double dt) {
  int rc = weft_world_run_phase(b->w, WEFT_PHASE_FIXED_UPDATE, dt);
  if (rc != WEFT_OK)
    fail_msg("run_phase: %s (%s)", weft_strerror(rc),
             weft_world_last_error(b->w));
}

static int by_handle(const void *pa, const void *pb) {
  const weft_grid_item_t *a = pa, *b = pb;
  return a->e < b->e ? -1 : a->e > b->e;
}

#define SYS_FLOCK 600u
#define SYS_STILL 12u  /* boids with Velocity disabled: neighbours only */
#define SYS_OTHERS 40u /* Position + Velocity, no Boid: not in the grid */

/*
 * One step of grid + boids equals, for every boid, the naive computation
 * over all other boids within the radius in handle order. Some boids lie
 * outside the grid's area (border cells), some have Velocity disabled
 * (they steer nobody's sums but their own: in the grid with velocity 0,
 * not updated), and entities without Boid are neither neighbours nor
 * updated.
 */
static void test_boids_system_matches_naive(void **state) {
  (void)state;
  bx_t b = bx_new(0, 2.0f, 0.0f, 24.0f);
  weft_boids_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.radius = 1.75f;
  cfg.separation = 2.0f;
  cfg.alignment = 0.5f;
  cfg.cohesion = 0.75f;
  cfg.min_distance = 0.6f;
  cfg.max_speed = 3.0f;
  bx_systems(&b, &cfg);
  const ref_t ref = {1.75f, 0.6f, 2.0f, 0.5f, 0.75f, 3.0f};

  wt_rng_t r = wt_rng(4242);
  const uint32_t n = SYS_FLOCK + SYS_STILL;
  weft_grid_item_t *all = calloc(n, sizeof *all);
  weft_vec2_t *before = calloc(n, sizeof *before); /* stored velocities */
  weft_entity_t *others = calloc(SYS_OTHERS, sizeof *others);
  assert_non_null(all);
  assert_non_null(others);
  weft_vec2_t *other_v = calloc(SYS_OTHERS, sizeof *other_v);
  assert_non_null(other_v);
  assert_non_null(before);
  for (uint32_t i = 0, k = 0; i < n;) {
    weft_vec2_t p = {frand(&r, -2.0f, 26.0f), frand(&r, -2.0f, 26.0f)};
    weft_vec2_t v = {frand(&r, -2.5f, 2.5f), frand(&r, -2.5f, 2.5f)};
    if (k < SYS_OTHERS && wt_chance(&r, 1, 12)) { /* handles interleave */
      other_v[k] = v;
      others[k++] = spawn_boid(&b, p, v, false);
      continue;
    }
    weft_entity_t e = spawn_boid(&b, p, v, true);
    if (i % (n / SYS_STILL) == 0 && i / (n / SYS_STILL) < SYS_STILL) {
      assert_int_equal(weft_disable(b.w, e, b.s.velocity), WEFT_OK);
      v = (weft_vec2_t){0.0f, 0.0f}; /* the grid's view */
    }
    all[i++] = item(e, p.x, p.y, v.x, v.y);
  }
  for (uint32_t k = 0; k < SYS_OTHERS; k++)
    assert_int_not_equal(others[k], WEFT_ENTITY_NULL);
  qsort(all, n, sizeof *all, by_handle);
  for (uint32_t i = 0; i < n; i++)
    before[i] = get_vec(&b, all[i].e, b.s.velocity);

  const double dt = 0.125;
  run_fixed(&b, dt);
  assert_int_equal(weft_grid_count(b.grid), n);

  weft_grid_item_t *nb = calloc(n, sizeof *nb);
  assert_non_null(nb);
  uint32_t changed = 0, still = 0;
  for (uint32_t i = 0; i < n; i++) {
    weft_vec2_t got = get_vec(&b, all[i].e, b.s.velocity);
    if (!weft_is_enabled(b.w, all[i].e, b.s.velocity)) {
      /* Not in the query: kept as spawned (the grid saw 0). */
      assert_float_exact(got.x, before[i].x);
      assert_float_exact(got.y, before[i].y);
      still++;
      continue;
    }
    weft_vec2_t want = naive(&ref, &all[i], all, n, (float)dt, NULL);
    if (got.x != want.x || got.y != want.y)
      fail_msg("boid %u: (%.9g, %.9g), naive (%.9g, %.9g)", i, (double)got.x,
               (double)got.y, (double)want.x, (double)want.y);
    /* The kernel agrees on the same neighbour list. */
    uint32_t k = neighbours(&all[i], all, n, cfg.radius, nb);
    weft_vec2_t kern = weft_boids_steer(&cfg, &all[i], nb, k, (float)dt);
    assert_float_exact(kern.x, got.x);
    assert_float_exact(kern.y, got.y);
    changed += got.x != all[i].vx || got.y != all[i].vy;
  }
  assert_int_equal(still, SYS_STILL);
  assert_true(changed > SYS_FLOCK - SYS_FLOCK / 10);
  /* Non-boids are untouched. */
  for (uint32_t i = 0; i < SYS_OTHERS; i++) {
    weft_vec2_t v = get_vec(&b, others[i], b.s.velocity);
    assert_float_exact(v.x, other_v[i].x);
    assert_float_exact(v.y, other_v[i].y);
  }
  weft_system_stats_t st;
  assert_int_equal(weft_system_stats(b.w, b.bsys, &st), WEFT_OK);
  assert_int_equal(st.entities, SYS_FLOCK);
  assert_true(st.chunks > 2); /* the flock spans several chunks */
  /* The builder runs first: boids read its resource. */
  assert_true(weft_system_edge(b.w, b.gsys, b.bsys));
  free(nb);
  free(before);
  free(other_v);
  free(others);
  free(all);
  bx_free(&b);
}

/*
 * A flock far denser than the system buffers per boid (512 neighbours):
 * 700 boids in a disc of radius 0.5, where each has 699 neighbours and
 * takes the streaming merge, and 300 around it with fewer, which take the
 * buffered one; some have a few hundred. Every boid equals the naive
 * computation, bit for bit.
 */
static void test_boids_dense_flock_matches_naive(void **state) {
  (void)state;
  bx_t b = bx_new(0, 2.0f, 0.0f, 10.0f);
  weft_boids_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.radius = 2.0f;
  cfg.min_distance = 0.25f;
  cfg.max_speed = 4.0f;
  bx_systems(&b, &cfg);
  const ref_t ref = {2.0f, 0.25f, 1.5f, 1.0f, 1.0f, 4.0f};
  enum { DENSE = 700, SPREAD = 300, N = DENSE + SPREAD };
  weft_grid_item_t *all = calloc(N, sizeof *all);
  assert_non_null(all);
  wt_rng_t r = wt_rng(0xde45e);
  for (uint32_t i = 0; i < N; i++) {
    weft_vec2_t p;
    if (i < DENSE) { /* rejection-sample the disc */
      do
        p = (weft_vec2_t){frand(&r, -0.5f, 0.5f), frand(&r, -0.5f, 0.5f)};
      while (p.x * p.x + p.y * p.y > 0.25f);
      p.x += 5.0f;
      p.y += 5.0f;
    } else {
      p = (weft_vec2_t){frand(&r, 0.0f, 10.0f), frand(&r, 0.0f, 10.0f)};
    }
    weft_vec2_t v = {frand(&r, -1.0f, 1.0f), frand(&r, -1.0f, 1.0f)};
    all[i] = item(spawn_boid(&b, p, v, true), p.x, p.y, v.x, v.y);
  }
  qsort(all, N, sizeof *all, by_handle);
  const double dt = 0.0625;
  run_fixed(&b, dt);
  uint32_t crowded = 0;
  for (uint32_t i = 0; i < N; i++) {
    uint32_t k = 0;
    weft_vec2_t want = naive(&ref, &all[i], all, N, (float)dt, &k);
    weft_vec2_t got = get_vec(&b, all[i].e, b.s.velocity);
    if (got.x != want.x || got.y != want.y)
      fail_msg("boid %u (%u neighbours): (%.9g, %.9g), naive (%.9g, %.9g)", i,
               k, (double)got.x, (double)got.y, (double)want.x, (double)want.y);
    crowded += k > 512;
  }
  assert_true(crowded >= DENSE); /* the streaming merge ran */
  assert_true(crowded < N);      /* and the buffered one */
  free(all);
  bx_free(&b);
}

/* A move system for the multi-step runs: position += velocity * dt. */
static int move_run(weft_sysctx_t *ctx, const weft_iter_t *it) {
  void *p[WEFT_MAX_FIELDS], *v[WEFT_MAX_FIELDS];
  if (weft_iter_fields(it, 0, p) != 2 || weft_iter_fields(it, 1, v) != 2)
    return WEFT_ELAYOUT;
  float *px = p[0], *py = p[1];
  const float *vx = v[0], *vy = v[1];
  const float dt = (float)ctx->dt;
  for (uint32_t r = 0; r < it->count; r++) {
    px[r] += vx[r] * dt;
    py[r] += vy[r] * dt;
  }
  return 0;
}

#define POOL_FLOCK 3000u
#define POOL_STEPS 8u

/* The same flock, stepped with grid, boids and a move system, without a
 * pool and on a pool of two with inline_rows 1: equal digests every step;
 * the pooled boids ran as several jobs. */
static void test_boids_pool_matches_inline(void **state) {
  (void)state;
  bx_t b[2];
  for (uint32_t k = 0; k < 2; k++) {
    b[k] = bx_new(k ? 2 : 0, 1.0f, 0.0f, 30.0f);
    weft_boids_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.max_speed = 4.0f;
    bx_systems(&b[k], &cfg);
    weft_system_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = "test.move";
    d.query.include[0] = b[k].s.position;
    d.query.include[1] = b[k].s.velocity;
    d.term_access[0] = WEFT_ACCESS_WRITE;
    d.term_access[1] = WEFT_ACCESS_READ;
    d.batch = 256;
    d.run = move_run;
    weft_system_t mv = 0;
    assert_int_equal(weft_system_register(b[k].w, &d, &mv), WEFT_OK);
    wt_rng_t r = wt_rng(99);
    for (uint32_t i = 0; i < POOL_FLOCK; i++) {
      weft_vec2_t p = {frand(&r, 0.0f, 30.0f), frand(&r, 0.0f, 30.0f)};
      weft_vec2_t v = {frand(&r, -3.0f, 3.0f), frand(&r, -3.0f, 3.0f)};
      spawn_boid(&b[k], p, v, true);
    }
  }
  assert_int_equal(weft_world_digest(b[0].w), weft_world_digest(b[1].w));
  uint64_t first = weft_world_digest(b[0].w);
  for (uint32_t step = 0; step < POOL_STEPS; step++) {
    for (uint32_t k = 0; k < 2; k++)
      run_fixed(&b[k], 1.0 / 30.0);
    if (weft_world_digest(b[0].w) != weft_world_digest(b[1].w))
      fail_msg("step %u: the pooled run diverges from the inline one", step);
  }
  assert_int_not_equal(weft_world_digest(b[0].w), first); /* it moved */
  weft_system_stats_t s0, s1;
  assert_int_equal(weft_system_stats(b[0].w, b[0].bsys, &s0), WEFT_OK);
  assert_int_equal(weft_system_stats(b[1].w, b[1].bsys, &s1), WEFT_OK);
  assert_int_equal(s0.jobs, 0);
  assert_true(s1.jobs >= POOL_STEPS); /* it ran on the pool */
  assert_int_equal(s1.entities, (uint64_t)POOL_FLOCK * POOL_STEPS);
  for (uint32_t k = 0; k < 2; k++)
    bx_free(&b[k]);
}

/* A system that moves every fifth entity (by slot) 0.25 along x. */
static int nudge_run(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)ctx;
  float *px = weft_iter_field(it, 0, 0);
  if (!px)
    return WEFT_ELAYOUT;
  for (uint32_t r = 0; r < it->count; r++)
    if (weft_entity_index(it->entities[r]) % 5 == 0)
      px[r] += 0.25f;
  return 0;
}

static bool nudged(weft_entity_t e) {
  return weft_entity_index(e) % 5 == 0;
}

#define PLAN_FLOCK 500u

/*
 * The system plans every step in the grid's order, then copies each
 * boid's planned step, and works the step out itself for a boid the plan
 * has none for: one the grid does not hold (here: boids without the
 * Flock tag the grid is built over) or one whose position changed after
 * the rebuild (a system between the two moves every fifth). Every boid
 * still equals the naive computation from its current position and
 * velocity over the grid's snapshot, bit for bit; and again with the
 * plan system disabled, when every step is worked out in chunk order.
 */
static void test_boids_unplanned_match_naive(void **state) {
  (void)state;
  bx_t b = bx_new(0, 2.0f, 0.0f, 24.0f);
  weft_component_t flock = 0;
  weft_component_desc_t fd;
  memset(&fd, 0, sizeof fd);
  fd.name = "Flock";
  assert_int_equal(weft_component_register(b.w, &fd, &flock), WEFT_OK);
  assert_int_equal(
      weft_sys_grid(b.w, &b.s, b.grid, flock, WEFT_PHASE_FIXED_UPDATE, &b.gsys),
      WEFT_OK);
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "test.nudge";
  d.phase = WEFT_PHASE_FIXED_UPDATE;
  d.query.include[0] = b.s.position;
  d.query.include[1] = b.s.boid;
  d.term_access[0] = WEFT_ACCESS_WRITE;
  d.term_access[1] = WEFT_ACCESS_NONE;
  d.run = nudge_run;
  weft_system_t nudge = 0;
  assert_int_equal(weft_system_register(b.w, &d, &nudge), WEFT_OK);
  weft_boids_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.radius = 2.0f;
  cfg.max_speed = 5.0f;
  assert_int_equal(weft_sys_boids(b.w, &b.s, b.grid, &cfg, &b.bsys), WEFT_OK);
  const ref_t ref = {2.0f, 1.0f, 1.5f, 1.0f, 1.0f, 5.0f};
  weft_system_t plan = 0;
  assert_int_equal(weft_system_lookup(b.w, "weft.boids.plan", &plan), WEFT_OK);

  wt_rng_t r = wt_rng(0x91a2);
  weft_entity_t *e = calloc(PLAN_FLOCK, sizeof *e);
  bool *tagged = calloc(PLAN_FLOCK, sizeof *tagged);
  weft_grid_item_t *snap = calloc(PLAN_FLOCK, sizeof *snap);
  assert_non_null(e);
  assert_non_null(tagged);
  assert_non_null(snap);
  for (uint32_t i = 0; i < PLAN_FLOCK; i++) {
    weft_vec2_t p = {frand(&r, 0.0f, 24.0f), frand(&r, 0.0f, 24.0f)};
    weft_vec2_t v = {frand(&r, -2.0f, 2.0f), frand(&r, -2.0f, 2.0f)};
    e[i] = spawn_boid(&b, p, v, true);
    tagged[i] = wt_chance(&r, 4, 5);
    if (tagged[i])
      assert_int_equal(weft_add(b.w, e[i], flock, NULL), WEFT_OK);
  }
  const double dt = 0.1;
  for (uint32_t step = 0; step < 2; step++) {
    /* The snapshot the grid will take, and each boid's state before. */
    uint32_t n = 0;
    weft_grid_item_t *self = calloc(PLAN_FLOCK, sizeof *self);
    assert_non_null(self);
    for (uint32_t i = 0; i < PLAN_FLOCK; i++) {
      weft_vec2_t p = get_vec(&b, e[i], b.s.position);
      weft_vec2_t v = get_vec(&b, e[i], b.s.velocity);
      if (tagged[i])
        snap[n++] = item(e[i], p.x, p.y, v.x, v.y);
      self[i] = item(e[i], nudged(e[i]) ? p.x + 0.25f : p.x, p.y, v.x, v.y);
    }
    qsort(snap, n, sizeof *snap, by_handle);
    if (step == 1) /* the second step without a plan */
      assert_int_equal(weft_system_enable(b.w, plan, false), WEFT_OK);
    run_fixed(&b, dt);
    uint32_t kinds[3] = {0, 0, 0}; /* planned, not in the grid, moved */
    for (uint32_t i = 0; i < PLAN_FLOCK; i++) {
      weft_vec2_t want = naive(&ref, &self[i], snap, n, (float)dt, NULL);
      weft_vec2_t got = get_vec(&b, e[i], b.s.velocity);
      if (got.x != want.x || got.y != want.y)
        fail_msg("step %u, boid %u (%s): (%.9g, %.9g), naive (%.9g, %.9g)",
                 step, i,
                 !tagged[i]     ? "not in the grid"
                 : nudged(e[i]) ? "moved"
                                : "planned",
                 (double)got.x, (double)got.y, (double)want.x, (double)want.y);
      kinds[!tagged[i] ? 1 : nudged(e[i]) ? 2 : 0]++;
    }
    for (uint32_t k = 0; k < 3; k++)
      assert_true(kinds[k] >= PLAN_FLOCK / 20);
    weft_system_stats_t st;
    assert_int_equal(weft_system_stats(b.w, plan, &st), WEFT_OK);
    assert_int_equal(st.runs, 1); /* it planned step 0 only */
    assert_int_equal(st.entities, kinds[0] + kinds[2]);
    free(self);
  }
  free(snap);
  free(tagged);
  free(e);
  bx_free(&b);
}

/*
 * A grid over every entity with a Position, boids a quarter of them: the
 * plan would steer four items for every boid that reads one, so it plans
 * nothing and the chunk loop steers the boids, which still equal the
 * naive computation over the whole snapshot (non-boids are neighbours
 * too, as the grid holds them).
 */
static void test_boids_plan_skips_crowded_grid(void **state) {
  (void)state;
  bx_t b = bx_new(0, 2.0f, 0.0f, 16.0f);
  assert_int_equal(
      weft_sys_grid(b.w, &b.s, b.grid, 0, WEFT_PHASE_FIXED_UPDATE, &b.gsys),
      WEFT_OK);
  assert_int_equal(weft_sys_boids(b.w, &b.s, b.grid, NULL, &b.bsys), WEFT_OK);
  const ref_t ref = {2.0f, 1.0f, 1.5f, 1.0f, 1.0f, 10.0f};
  enum { N = 400 };
  weft_grid_item_t *all = calloc(N, sizeof *all);
  assert_non_null(all);
  wt_rng_t r = wt_rng(0x5ca1e);
  for (uint32_t i = 0; i < N; i++) {
    weft_vec2_t p = {frand(&r, 0.0f, 16.0f), frand(&r, 0.0f, 16.0f)};
    weft_vec2_t v = {frand(&r, -2.0f, 2.0f), frand(&r, -2.0f, 2.0f)};
    all[i] = item(spawn_boid(&b, p, v, i % 4 == 0), p.x, p.y, v.x, v.y);
  }
  bool *boid = calloc(N, sizeof *boid);
  assert_non_null(boid);
  for (uint32_t i = 0; i < N; i++)
    boid[i] = weft_has(b.w, all[i].e, b.s.boid);
  run_fixed(&b, 0.1);
  uint32_t steered = 0;
  for (uint32_t i = 0; i < N; i++) {
    weft_vec2_t got = get_vec(&b, all[i].e, b.s.velocity);
    weft_vec2_t want =
        boid[i] ? naive(&ref, &all[i], all, N, 0.1f, NULL)
                : (weft_vec2_t){all[i].vx, all[i].vy}; /* not a boid */
    if (got.x != want.x || got.y != want.y)
      fail_msg("entity %u (%s): (%.9g, %.9g), expected (%.9g, %.9g)", i,
               boid[i] ? "boid" : "other", (double)got.x, (double)got.y,
               (double)want.x, (double)want.y);
    steered += boid[i];
  }
  assert_int_equal(steered, N / 4);
  weft_system_t plan = 0;
  assert_int_equal(weft_system_lookup(b.w, "weft.boids.plan", &plan), WEFT_OK);
  weft_system_stats_t st;
  assert_int_equal(weft_system_stats(b.w, plan, &st), WEFT_OK);
  assert_int_equal(st.runs, 1);
  assert_int_equal(st.entities, 0); /* it planned nothing */
  assert_int_equal(weft_system_stats(b.w, b.bsys, &st), WEFT_OK);
  assert_int_equal(st.entities, N / 4);
  free(boid);
  free(all);
  bx_free(&b);
}

/* Zero radius means the cell size: two boids 1.5 apart in cells of 2
 * steer each other; with an explicit radius of 1 they do not. */
static void test_boids_radius_defaults_to_cell(void **state) {
  (void)state;
  for (uint32_t explicit_radius = 0; explicit_radius < 2; explicit_radius++) {
    bx_t b = bx_new(0, 2.0f, 0.0f, 10.0f);
    weft_boids_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.radius = explicit_radius ? 1.0f : 0.0f;
    bx_systems(&b, &cfg);
    weft_entity_t a = spawn_boid(&b, (weft_vec2_t){3.0f, 3.0f},
                                 (weft_vec2_t){1.0f, 0.0f}, true);
    weft_entity_t c = spawn_boid(&b, (weft_vec2_t){4.5f, 3.0f},
                                 (weft_vec2_t){-1.0f, 0.0f}, true);
    run_fixed(&b, 0.5);
    weft_vec2_t va = get_vec(&b, a, b.s.velocity);
    weft_vec2_t vc = get_vec(&b, c, b.s.velocity);
    if (explicit_radius) {
      assert_float_exact(va.x, 1.0f);
      assert_float_exact(vc.x, -1.0f);
    } else {
      /* Defaults: radius 2, min_distance 1 (1.5 is past it: no push),
       * weights 1.5, 1, 1: a gets 0.5 * ((-1 - 1) + 1.5) = -0.25. */
      assert_float_exact(va.x, 0.75f);
      assert_float_exact(vc.x, -0.75f);
    }
    assert_float_exact(va.y, 0.0f);
    assert_float_exact(vc.y, 0.0f);
    bx_free(&b);
  }
}

/* Settings that cannot work are rejected before anything is registered. */
static void test_boids_register_rejects_bad_config(void **state) {
  (void)state;
  bx_t b = bx_new(0, 2.0f, 0.0f, 10.0f);
  weft_boids_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  weft_system_t sys = 0;
  assert_int_equal(weft_sys_boids(NULL, &b.s, b.grid, &cfg, &sys), WEFT_EINVAL);
  assert_int_equal(weft_sys_boids(b.w, NULL, b.grid, &cfg, &sys), WEFT_EINVAL);
  assert_int_equal(weft_sys_boids(b.w, &b.s, NULL, &cfg, &sys), WEFT_EINVAL);
  const float bad_radius[] = {2.001f, 3.0f, -1.0f, NAN, INFINITY};
  for (uint32_t i = 0; i < 5; i++) {
    cfg.radius = bad_radius[i];
    assert_int_equal(weft_sys_boids(b.w, &b.s, b.grid, &cfg, &sys),
                     WEFT_EINVAL);
  }
  cfg.radius = 0.0f;
  cfg.min_distance = -0.5f;
  assert_int_equal(weft_sys_boids(b.w, &b.s, b.grid, &cfg, &sys), WEFT_EINVAL);
  cfg.min_distance = 0.0f;
  cfg.max_speed = -1.0f;
  assert_int_equal(weft_sys_boids(b.w, &b.s, b.grid, &cfg, &sys), WEFT_EINVAL);
  cfg.max_speed = 0.0f;
  cfg.cohesion = NAN;
  assert_int_equal(weft_sys_boids(b.w, &b.s, b.grid, &cfg, &sys), WEFT_EINVAL);
  assert_non_null(strstr(weft_world_last_error(b.w), "bad config"));
  assert_int_equal(weft_system_lookup(b.w, "weft.boids", &sys), WEFT_ENONAME);
  /* The cell size itself is fine; a second registration is not. */
  cfg.cohesion = 0.0f;
  cfg.radius = 2.0f;
  cfg.phase = WEFT_PHASE_PRE_UPDATE;
  assert_int_equal(weft_sys_boids(b.w, &b.s, b.grid, &cfg, NULL), WEFT_OK);
  assert_int_equal(weft_system_lookup(b.w, "weft.boids", &sys), WEFT_OK);
  weft_system_info_t info;
  assert_int_equal(weft_system_info(b.w, sys, &info), WEFT_OK);
  assert_int_equal(info.phase, WEFT_PHASE_PRE_UPDATE);
  weft_system_t again = 0;
  assert_int_equal(weft_sys_boids(b.w, &b.s, b.grid, NULL, &again),
                   WEFT_EEXIST);
  bx_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_boids_steer_terms_by_hand),
      cmocka_unit_test(test_boids_steer_matches_naive),
      cmocka_unit_test(test_boids_system_matches_naive),
      cmocka_unit_test(test_boids_dense_flock_matches_naive),
      cmocka_unit_test(test_boids_pool_matches_inline),
      cmocka_unit_test(test_boids_unplanned_match_naive),
      cmocka_unit_test(test_boids_plan_skips_crowded_grid),
      cmocka_unit_test(test_boids_radius_defaults_to_cell),
      cmocka_unit_test(test_boids_register_rejects_bad_config),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
