/* SPDX-License-Identifier: MIT */
/*
 * Collisions (systems/collide.c) through the public API: the narrowphase
 * against hand-computed cases (overlap, touching, separated, normal and
 * depth) and its antisymmetry, and weft_sys_collide() over a grid against
 * an O(n^2) oracle built on weft_collide_test(): the same set of pairs,
 * each once, with the oracle's normal and depth, with dead entities and
 * disabled colliders left out; and the same events, byte for byte, with a
 * pool of two workers. Every test builds and destroys its own world.
 */
#include "support/weft_test.h"

#include <math.h>
#include <stdlib.h>

#define assert_float_near(a, b)                                                \
  do {                                                                         \
    double a_ = (a), b_ = (b);                                                 \
    if (!(fabs(a_ - b_) <= 1e-5))                                              \
      fail_msg("%s = %.9g, expected %.9g", #a, a_, b_);                        \
  } while (0)

static weft_collider_t circle(float r) {
  weft_collider_t c;
  memset(&c, 0, sizeof c);
  c.shape = WEFT_SHAPE_CIRCLE;
  c.r = r;
  return c;
}

static weft_collider_t box(float hx, float hy) {
  weft_collider_t c;
  memset(&c, 0, sizeof c);
  c.shape = WEFT_SHAPE_BOX;
  c.hx = hx;
  c.hy = hy;
  return c;
}

/* Asserts a contact of a at (ax, ay) with b at (bx, by), with normal
 * (nx, ny) and depth d, and that the reversed test mirrors it. */
static void expect_hit(weft_collider_t a, float ax, float ay, weft_collider_t b,
                       float bx, float by, float nx, float ny, float d) {
  float gx = 99, gy = 99, gd = 99;
  if (!weft_collide_test(&a, ax, ay, &b, bx, by, &gx, &gy, &gd))
    fail_msg("no contact between (%g,%g) and (%g,%g)", ax, ay, bx, by);
  assert_float_near(gx, nx);
  assert_float_near(gy, ny);
  assert_float_near(gd, d);
  float rx = 99, ry = 99, rd = 99;
  assert_true(weft_collide_test(&b, bx, by, &a, ax, ay, &rx, &ry, &rd));
  assert_float_near(rx, -nx);
  assert_float_near(ry, -ny);
  assert_float_near(rd, d);
}

static void expect_miss(weft_collider_t a, float ax, float ay,
                        weft_collider_t b, float bx, float by) {
  float gx = 99, gy = 99, gd = 99;
  if (weft_collide_test(&a, ax, ay, &b, bx, by, &gx, &gy, &gd))
    fail_msg("contact between (%g,%g) and (%g,%g): n (%g,%g) depth %g", ax, ay,
             bx, by, gx, gy, gd);
  assert_false(weft_collide_test(&b, bx, by, &a, ax, ay, &gx, &gy, &gd));
  /* A miss leaves the outputs alone. */
  assert_true(gx == 99 && gy == 99 && gd == 99);
}

/* ---- narrowphase --------------------------------------------------------- */

static void test_collide_circle_circle(void **state) {
  (void)state;
  /* Overlap along x: centres 1.5 apart, radii 1 and 1. */
  expect_hit(circle(1), 0, 0, circle(1), 1.5f, 0, 1, 0, 0.5f);
  /* Along -y, different radii: 3 - 2.5. */
  expect_hit(circle(2), 4, 5, circle(1), 4, 2.5f, 0, -1, 0.5f);
  /* Diagonal: |d| = 5 (3-4-5), radii 3 + 2.5. */
  expect_hit(circle(3), 1, 1, circle(2.5f), 4, 5, 0.6f, 0.8f, 0.5f);
  /* Touching and separated. */
  expect_miss(circle(1), 0, 0, circle(1), 2, 0);
  expect_miss(circle(1), 0, 0, circle(1.5f), 0, -2.5f);
  expect_miss(circle(1), 0, 0, circle(1), 3, 3);
  /* Coincident centres: (1, 0), depth the sum of the radii. */
  float nx, ny, d;
  weft_collider_t a = circle(1), b = circle(0.5f);
  assert_true(weft_collide_test(&a, 7, 7, &b, 7, 7, &nx, &ny, &d));
  assert_true(nx == 1.0f && ny == 0.0f);
  assert_float_near(d, 1.5f);
}

static void test_collide_circle_box(void **state) {
  (void)state;
  weft_collider_t b = box(2, 1);
  /* Circle right of the box: closest point (2, 0), 0.5 away, radius 1.
   * From the circle (a) to the box (b) the normal points left. */
  expect_hit(circle(1), 2.5f, 0, b, 0, 0, -1, 0, 0.5f);
  /* Box first: the normal points from the box to the circle. */
  expect_hit(b, 0, 0, circle(1), 2.5f, 0, 1, 0, 0.5f);
  /* Above the box, shifted frame. */
  expect_hit(b, 10, 10, circle(0.75f), 11, 11.5f, 0, 1, 0.25f);
  /* Corner region: closest point (2, 1), offset (0.75, 1), distance 1.25
   * (all exact in binary). */
  expect_miss(b, 0, 0, circle(1.25f), 2.75f, 2.0f); /* touching */
  expect_hit(b, 0, 0, circle(1.75f), 2.75f, 2.0f, 0.6f, 0.8f, 0.5f);
  expect_hit(circle(1.75f), 2.75f, 2.0f, b, 0, 0, -0.6f, -0.8f, 0.5f);
  expect_miss(b, 0, 0, circle(1), 2.75f, 2.0f);
  /* Touching a side, and separated. */
  expect_miss(circle(1), 3, 0, b, 0, 0);
  expect_miss(circle(1), 0, -2, b, 0, 0);
  expect_miss(circle(1), 0, 5, b, 0, 0);
  /* Centre inside the box: out along the shortest way, x here
   * (2 - 1.5 + 0.5 = 1 against 1 - 0.2 + 0.5 = 1.3). */
  expect_hit(b, 0, 0, circle(0.5f), 1.5f, 0.2f, 1, 0, 1.0f);
  /* ... and y here (2 - 0.5 + 0.5 = 2 against 1 - 0.8 + 0.5 = 0.7). */
  expect_hit(b, 0, 0, circle(0.5f), -0.5f, -0.8f, 0, -1, 0.7f);
  /* Equal ways out (1 - 0.25 + 0.5 on both axes): x wins the tie. */
  expect_hit(box(1, 1), 0, 0, circle(0.5f), 0.25f, 0.25f, 1, 0, 1.25f);
  /* Centre on the box's centre: x is the shorter way for a tall box. */
  expect_hit(box(1, 3), 0, 0, circle(1), 0, 0, 1, 0, 2.0f);
}

static void test_collide_box_box(void **state) {
  (void)state;
  weft_collider_t a = box(1, 1), b = box(1, 2);
  /* ox = 2 - 1.5 = 0.5, oy = 3 - 0.5 = 2.5: x is the minimal axis. */
  expect_hit(a, 0, 0, b, 1.5f, 0.5f, 1, 0, 0.5f);
  expect_hit(a, 0, 0, b, -1.5f, 0.5f, -1, 0, 0.5f);
  /* ox = 2 - 0.25 = 1.75, oy = 3 - 2.75 = 0.25: y. */
  expect_hit(a, 0, 0, b, 0.25f, -2.75f, 0, -1, 0.25f);
  /* Touching on either axis, and separated. */
  expect_miss(a, 0, 0, b, 2, 0);
  expect_miss(a, 0, 0, b, 0, 3);
  expect_miss(a, 0, 0, b, 2, 3);
  expect_miss(a, 0, 0, b, 5, -1);
  /* Tall boxes stacked exactly above each other: x is the minimal axis
   * (2 against 9) but dx is 0, so the sign comes from dy. */
  expect_hit(box(1, 5), 0, 0, box(1, 5), 0, 1, 1, 0, 2.0f);
  expect_hit(box(1, 5), 0, 0, box(1, 5), 0, -1, -1, 0, 2.0f);
  /* Equal overlaps on both axes: x wins the tie. */
  expect_hit(a, 0, 0, a, 0.5f, 0.5f, 1, 0, 1.5f);
  expect_hit(a, 0, 0, a, -0.5f, -0.5f, -1, 0, 1.5f);
  /* Coincident centres: (1, 0). */
  float nx, ny, d;
  assert_true(weft_collide_test(&a, 3, 3, &b, 3, 3, &nx, &ny, &d));
  assert_true(nx == 1.0f && ny == 0.0f);
  assert_float_near(d, 2.0f);
}

static void test_collide_degenerate_shapes(void **state) {
  (void)state;
  weft_collider_t zero;
  memset(&zero, 0, sizeof zero);
  /* A zeroed collider (a grid item without one) never touches anything,
   * not even a box around it. */
  expect_miss(zero, 0, 0, box(5, 5), 0, 0);
  expect_miss(zero, 0, 0, circle(5), 1, 0);
  expect_miss(box(0, 3), 0, 0, box(3, 3), 0, 0);
  expect_miss(box(3, -1), 0, 0, circle(3), 0, 0);
  expect_miss(circle(-1), 0, 0, circle(3), 0, 0);
  weft_collider_t odd = circle(1);
  odd.shape = 7;
  expect_miss(odd, 0, 0, circle(3), 0, 0);
  expect_miss(circle(1), NAN, 0, circle(3), 0, 0);
  expect_miss(box(1, 1), 0, NAN, box(3, 3), 0, 0);
  /* NULL colliders, and NULL outputs. */
  weft_collider_t c = circle(1);
  assert_false(weft_collide_test(NULL, 0, 0, &c, 0, 0, NULL, NULL, NULL));
  assert_false(weft_collide_test(&c, 0, 0, NULL, 0, 0, NULL, NULL, NULL));
  assert_true(weft_collide_test(&c, 0, 0, &c, 1, 0, NULL, NULL, NULL));
}

/* Random pairs: contact is symmetric, the normals opposite and of unit
 * length, the depths equal and positive. */
static void test_collide_symmetric(void **state) {
  (void)state;
  wt_rng_t r = wt_rng(1234);
  uint32_t hits = 0, kinds[3] = {0};
  for (uint32_t i = 0; i < 50000; i++) {
    weft_collider_t c[2];
    float p[2][2];
    for (int k = 0; k < 2; k++) {
      float s1 = 0.1f + (float)wt_below(&r, 3000) / 1000.0f;
      float s2 = 0.1f + (float)wt_below(&r, 3000) / 1000.0f;
      c[k] = wt_chance(&r, 1, 2) ? circle(s1) : box(s1, s2);
      /* Coarse coordinates make zero deltas on one axis common. */
      p[k][0] = (float)wt_below(&r, 24) / 4.0f;
      p[k][1] = (float)wt_below(&r, 24) / 4.0f;
    }
    if (p[0][0] == p[1][0] && p[0][1] == p[1][1])
      continue; /* coincident centres pick (1, 0) both ways */
    float ax, ay, ad, bx, by, bd;
    bool h1 = weft_collide_test(&c[0], p[0][0], p[0][1], &c[1], p[1][0],
                                p[1][1], &ax, &ay, &ad);
    bool h2 = weft_collide_test(&c[1], p[1][0], p[1][1], &c[0], p[0][0],
                                p[0][1], &bx, &by, &bd);
    assert_int_equal(h1, h2);
    if (!h1)
      continue;
    hits++;
    kinds[c[0].shape + c[1].shape]++;
    if (!(ax == -bx && ay == -by && ad == bd))
      fail_msg("pair %u: n (%g,%g) depth %g, reversed (%g,%g) depth %g", i, ax,
               ay, ad, bx, by, bd);
    assert_true(ad > 0);
    assert_float_near(ax * ax + ay * ay, 1.0);
    /* The normal points from a to b (never against the centres' delta). */
    float dx = p[1][0] - p[0][0], dy = p[1][1] - p[0][1];
    assert_true(ax * dx + ay * dy >= 0);
  }
  assert_true(hits > 1000);
  for (int k = 0; k < 3; k++)
    assert_true(kinds[k] > 100);
}

/* ---- the system against an oracle ---------------------------------------- */

#define SCENE_N 2000
#define SCENE_CELL 3.0f /* 2 x the largest extent, 1.5 */

typedef struct body_t {
  weft_entity_t e;
  float x, y;
  weft_collider_t c;
  bool active; /* enabled Collider and no Dead tag */
} body_t;

typedef struct scene_t {
  weft_world_t *w;
  weft_pool_t *pool;
  weft_std_t std;
  weft_grid_t *grid;
  weft_system_t build, collide;
  body_t b[SCENE_N];
} scene_t;

static void must(weft_world_t *w, int rc, const char *what) {
  if (rc)
    fail_msg("%s: %s (%s)", what, weft_strerror(rc), weft_world_last_error(w));
}

static float frand(wt_rng_t *r, float lo, float hi) {
  return lo + (hi - lo) * (float)wt_below(r, 1u << 20) / (float)(1u << 20);
}

/*
 * 2000 bodies over [-6, 156)^2 (the grid covers [0, 150)^2, so the border
 * cells take the rest), plus a clump beyond the corner: circles and boxes
 * of extent up to 1.5, random layers and masks (a quarter unfiltered),
 * some with Velocity (another archetype), some with a disabled Collider,
 * some Dead, some without Collider. A few are despawned and respawned so
 * that handle order is not spawn order.
 */
static scene_t *scene_new_sized(uint32_t workers, uint64_t seed,
                                uint32_t chunk_size) {
  scene_t *s = calloc(1, sizeof *s);
  assert_non_null(s);
  s->w = wt_world_pooled(workers, chunk_size, &s->pool);
  if (workers)
    wt_dispatch_everything(s->w);
  assert_int_equal(weft_std_register(s->w, &s->std), WEFT_OK);
  weft_grid_config_t gc;
  memset(&gc, 0, sizeof gc);
  gc.cell = SCENE_CELL;
  gc.min = (weft_vec2_t){0, 0};
  gc.max = (weft_vec2_t){150, 150};
  assert_int_equal(weft_grid_create(s->w, &gc, &s->grid), WEFT_OK);
  must(s->w,
       weft_sys_grid(s->w, &s->std, s->grid, 0, WEFT_PHASE_FIXED_UPDATE,
                     &s->build),
       "weft_sys_grid");
  must(s->w,
       weft_sys_collide(s->w, &s->std, s->grid, WEFT_PHASE_FIXED_UPDATE,
                        &s->collide),
       "weft_sys_collide");
  assert_int_not_equal(s->build, 0);
  assert_int_not_equal(s->collide, 0);

  wt_rng_t r = wt_rng(seed);
  const weft_std_t *st = &s->std;
  for (uint32_t i = 0; i < SCENE_N; i++) {
    body_t *b = &s->b[i];
    if (i % 20 == 0) { /* a clump beyond the far corner */
      b->x = frand(&r, 160, 166);
      b->y = frand(&r, 160, 166);
    } else {
      b->x = frand(&r, -6, 156);
      b->y = frand(&r, -6, 156);
    }
    float e1 = frand(&r, 0.2f, 1.5f), e2 = frand(&r, 0.2f, 1.5f);
    b->c = wt_chance(&r, 1, 2) ? circle(e1) : box(e1, e2);
    if (!wt_chance(&r, 1, 4)) {
      static const uint32_t layers[4] = {0, 1, 2, 4};
      b->c.layer = layers[wt_below(&r, 4)];
      b->c.mask = wt_below(&r, 8);
    }
    weft_vec2_t p = {b->x, b->y}, v = {1, -1};
    weft_component_t comps[6] = {st->position, 0};
    const void *vals[6] = {&p};
    uint32_t k = 1;
    bool has_col = !wt_chance(&r, 1, 20);
    if (has_col) {
      comps[k] = st->collider;
      vals[k++] = &b->c;
    }
    if (wt_chance(&r, 1, 3)) {
      comps[k] = st->velocity;
      vals[k++] = &v;
    }
    bool dead = wt_chance(&r, 1, 20);
    if (dead)
      comps[k++] = st->dead;
    comps[k] = 0;
    b->e = wt_spawn_with(s->w, comps, vals);
    b->active = has_col && !dead;
    if (has_col && wt_chance(&r, 1, 10)) {
      assert_int_equal(weft_disable(s->w, b->e, st->collider), WEFT_OK);
      b->active = false;
    }
  }
  /* Respawn a few in place: their slots come back with a new generation,
   * so their handles sort after every other. */
  for (uint32_t i = 0; i < SCENE_N; i += 97) {
    body_t *b = &s->b[i];
    assert_int_equal(weft_despawn(s->w, b->e), WEFT_OK);
    weft_vec2_t p = {b->x, b->y};
    const weft_component_t comps[3] = {st->position, st->collider, 0};
    const void *vals[2] = {&p, &b->c};
    b->e = wt_spawn_with(s->w, comps, vals);
    b->active = true;
  }
  return s;
}

/* About a hundred rows per chunk: many chunks, and jobs to split. */
static scene_t *scene_new(uint32_t workers, uint64_t seed) {
  return scene_new_sized(workers, seed, 4096);
}

static void scene_free(scene_t *s) {
  weft_grid_destroy(s->grid);
  weft_world_destroy(s->w);
  if (s->pool)
    weft_pool_destroy(s->pool);
  free(s);
}

static void scene_run(scene_t *s) {
  weft_event_clear(s->w, s->std.collisions);
  int rc = weft_world_run_phase(s->w, WEFT_PHASE_FIXED_UPDATE, 1.0 / 60);
  if (rc)
    fail_msg("run_phase: %s (%s)", weft_strerror(rc),
             weft_world_last_error(s->w));
}

static bool layers_match(const weft_collider_t *a, const weft_collider_t *b) {
  if ((a->layer == 0 && a->mask == 0) || (b->layer == 0 && b->mask == 0))
    return true;
  return (a->layer & b->mask) || (b->layer & a->mask);
}

static int by_pair(const void *pa, const void *pb) {
  const weft_collision_t *a = pa, *b = pb;
  if (a->a != b->a)
    return a->a < b->a ? -1 : 1;
  if (a->b != b->b)
    return a->b < b->b ? -1 : 1;
  return 0;
}

/* The O(n^2) oracle: every active pair, a < b, that passes the layers and
 * the narrowphase. Returns a sorted array of *n events. */
static weft_collision_t *oracle(const scene_t *s, uint32_t *n) {
  uint32_t cap = 1024, k = 0;
  weft_collision_t *out = malloc(cap * sizeof *out);
  assert_non_null(out);
  for (uint32_t i = 0; i < SCENE_N; i++) {
    for (uint32_t j = i + 1; j < SCENE_N; j++) {
      const body_t *p = &s->b[i], *q = &s->b[j];
      if (!p->active || !q->active || !layers_match(&p->c, &q->c))
        continue;
      if (q->e < p->e) {
        const body_t *t = p;
        p = q;
        q = t;
      }
      weft_collision_t ev;
      memset(&ev, 0, sizeof ev);
      if (!weft_collide_test(&p->c, p->x, p->y, &q->c, q->x, q->y, &ev.nx,
                             &ev.ny, &ev.depth))
        continue;
      ev.a = p->e;
      ev.b = q->e;
      if (k == cap) {
        cap *= 2;
        out = realloc(out, cap * sizeof *out);
        assert_non_null(out);
      }
      out[k++] = ev;
    }
  }
  qsort(out, k, sizeof *out, by_pair);
  *n = k;
  return out;
}

/* The published events equal the oracle's as a set, each pair once, with
 * the same normal and depth. Returns how many. */
static uint32_t check_against_oracle(const scene_t *s) {
  uint32_t n = 0, m = 0;
  const weft_collision_t *ev = weft_event_read(s->w, s->std.collisions, &n);
  weft_collision_t *got = malloc((n ? n : 1) * sizeof *got);
  assert_non_null(got);
  if (n)
    memcpy(got, ev, n * sizeof *got);
  for (uint32_t i = 0; i < n; i++)
    if (!(got[i].a < got[i].b))
      fail_msg("event %u: a %#llx is not below b %#llx", i,
               (unsigned long long)got[i].a, (unsigned long long)got[i].b);
  qsort(got, n, sizeof *got, by_pair);
  for (uint32_t i = 1; i < n; i++)
    if (by_pair(&got[i - 1], &got[i]) == 0)
      fail_msg("pair (%#llx, %#llx) reported twice",
               (unsigned long long)got[i].a, (unsigned long long)got[i].b);
  weft_collision_t *want = oracle(s, &m);
  uint32_t i = 0, j = 0;
  while (i < n || j < m) {
    int c = i == n ? 1 : j == m ? -1 : by_pair(&got[i], &want[j]);
    if (c < 0)
      fail_msg("unexpected pair (%#llx, %#llx)", (unsigned long long)got[i].a,
               (unsigned long long)got[i].b);
    if (c > 0)
      fail_msg("missing pair (%#llx, %#llx) (%u found, %u expected)",
               (unsigned long long)want[j].a, (unsigned long long)want[j].b, n,
               m);
    assert_memory_equal(&got[i], &want[j], sizeof got[i]);
    i++;
    j++;
  }
  free(want);
  free(got);
  return n;
}

static void test_collide_matches_brute_force(void **state) {
  (void)state;
  scene_t *s = scene_new(0, 0xc0111de);
  assert_true(weft_system_edge(s->w, s->build, s->collide));
  scene_run(s);
  uint32_t n = check_against_oracle(s);
  assert_true(n > 200); /* the scene is dense enough to mean something */

  /* Move everything a little and again. */
  wt_rng_t r = wt_rng(99);
  for (uint32_t i = 0; i < SCENE_N; i++) {
    body_t *b = &s->b[i];
    b->x += frand(&r, -1, 1);
    b->y += frand(&r, -1, 1);
    weft_vec2_t p = {b->x, b->y};
    assert_int_equal(weft_set(s->w, b->e, s->std.position, &p), WEFT_OK);
  }
  scene_run(s);
  n = check_against_oracle(s);
  assert_true(n > 200);
  scene_free(s);
}

/* Dead entities and disabled colliders take no part, on either side. */
/* 64 KiB chunks hold about 1,600 rows: the callback works through each
 * chunk in blocks of rows (cells computed ahead), and the pairs must come
 * out as with small chunks. */
static void test_collide_big_chunks_match_brute_force(void **state) {
  (void)state;
  scene_t *s = scene_new_sized(0, 0xb16c4, 1u << 16);
  assert_true(weft_system_edge(s->w, s->build, s->collide));
  scene_run(s);
  assert_true(check_against_oracle(s) > 200);
  scene_free(s);
}

/* Clears the collisions channel, runs one fixed phase and returns the
 * number of collisions it published. */
static uint32_t tick_events(weft_world_t *w, const weft_std_t *st) {
  weft_event_clear(w, st->collisions);
  assert_int_equal(weft_world_run_phase(w, WEFT_PHASE_FIXED_UPDATE, 0.1),
                   WEFT_OK);
  uint32_t n = 0;
  weft_event_read(w, st->collisions, &n);
  return n;
}

/* A world (on a pool of @p workers; 0: none) with the standard components
 * and a grid of 4-unit cells over [0, side)^2 with its builder. */
static weft_world_t *grid_world(uint32_t workers, float side,
                                weft_pool_t **pool, weft_std_t *st,
                                weft_grid_t **g) {
  weft_world_t *w = wt_world_pooled(workers, 0, pool);
  assert_int_equal(weft_std_register(w, st), WEFT_OK);
  weft_grid_config_t gc;
  memset(&gc, 0, sizeof gc);
  gc.cell = 4;
  gc.max = (weft_vec2_t){side, side};
  assert_int_equal(weft_grid_create(w, &gc, g), WEFT_OK);
  assert_int_equal(weft_sys_grid(w, st, *g, 0, 0, NULL), WEFT_OK);
  return w;
}

/* An empty grid runs clean, a pair reports once with the smaller handle
 * as a and the normal from a to b, and the grid empties again. */
static void test_collide_empty_and_single_pair(void **state) {
  (void)state;
  weft_pool_t *pool = NULL;
  weft_std_t st;
  weft_grid_t *g = NULL;
  weft_world_t *w = grid_world(2, 400, &pool, &st, &g);
  weft_system_t cs = 0;
  assert_int_equal(weft_sys_collide(w, &st, g, 0, &cs), WEFT_OK);
  assert_int_equal(tick_events(w, &st), 0);

  /* Spawned right to left, so the left body gets the larger handle; they
   * sit across a cell border and a part border (8 rows of 4 units). */
  weft_entity_t e[2];
  weft_collider_t c = circle(1);
  for (int i = 0; i < 2; i++) {
    weft_vec2_t p = {i ? 99.5f : 100.5f, i ? 31.5f : 32.5f};
    const weft_component_t comps[3] = {st.position, st.collider, 0};
    const void *vals[2] = {&p, &c};
    e[i] = wt_spawn_with(w, comps, vals);
  }
  assert_true(e[0] < e[1]);
  assert_int_equal(tick_events(w, &st), 1);
  uint32_t n = 0;
  const weft_collision_t *ev = weft_event_read(w, st.collisions, &n);
  assert_true(ev[0].a == e[0] && ev[0].b == e[1]);
  /* From a (100.5, 32.5) to b (99.5, 31.5): down and to the left. */
  assert_true(ev[0].nx < 0 && ev[0].ny < 0 && ev[0].depth > 0);

  assert_int_equal(weft_despawn(w, e[0]), WEFT_OK);
  assert_int_equal(weft_despawn(w, e[1]), WEFT_OK);
  assert_int_equal(tick_events(w, &st), 0);
  /* Three runs walked 0, 2 and 0 items. */
  weft_system_stats_t ss;
  assert_int_equal(weft_system_stats(w, cs, &ss), WEFT_OK);
  assert_true(ss.runs == 3 && ss.entities == 2);
  weft_grid_destroy(g);
  weft_world_destroy(w);
  weft_pool_destroy(pool);
}

static void test_collide_skips_dead_and_disabled(void **state) {
  (void)state;
  weft_pool_t *pool = NULL;
  weft_std_t st;
  weft_grid_t *g = NULL;
  weft_world_t *w = grid_world(0, 40, &pool, &st, &g);
  weft_system_t cs = 0;
  assert_int_equal(weft_sys_collide(w, &st, g, 0, &cs), WEFT_OK);
  assert_int_equal(weft_sys_collide(w, &st, g, 0, NULL), WEFT_EEXIST);
  assert_int_equal(weft_sys_collide(w, &st, NULL, 0, NULL), WEFT_EINVAL);
  assert_non_null(strstr(weft_world_last_error(w), "the grid is NULL"));

  /* Four unit circles 0.5 apart along x: every pair within 2 overlaps. */
  weft_entity_t e[4];
  weft_collider_t c = circle(1);
  for (int i = 0; i < 4; i++) {
    weft_vec2_t p = {10.0f + 0.5f * (float)i, 10};
    const weft_component_t comps[3] = {st.position, st.collider, 0};
    const void *vals[2] = {&p, &c};
    e[i] = wt_spawn_with(w, comps, vals);
  }
  assert_int_equal(tick_events(w, &st), 6);

  /* e[0] dead (the smaller handle of its pairs), e[3] disabled (the
   * larger): only (e[1], e[2]) is left. */
  assert_int_equal(weft_add(w, e[0], st.dead, NULL), WEFT_OK);
  assert_int_equal(weft_disable(w, e[3], st.collider), WEFT_OK);
  assert_int_equal(tick_events(w, &st), 1);
  uint32_t n = 0;
  const weft_collision_t *ev = weft_event_read(w, st.collisions, &n);
  assert_true(ev[0].a == e[1] && ev[0].b == e[2]);
  assert_float_near(ev[0].nx, 1);
  assert_float_near(ev[0].ny, 0);
  assert_float_near(ev[0].depth, 1.5);

  /* Layers: 1 against mask 2 and 2 against mask 1 never meet. */
  weft_collider_t c1 = c, c2 = c;
  c1.layer = 1;
  c1.mask = 1;
  c2.layer = 2;
  c2.mask = 2;
  assert_int_equal(weft_set(w, e[1], st.collider, &c1), WEFT_OK);
  assert_int_equal(weft_set(w, e[2], st.collider, &c2), WEFT_OK);
  assert_int_equal(tick_events(w, &st), 0);
  c2.mask = 1; /* now e[2] accepts layer 1 */
  assert_int_equal(weft_set(w, e[2], st.collider, &c2), WEFT_OK);
  assert_int_equal(tick_events(w, &st), 1);

  weft_grid_destroy(g);
  weft_world_destroy(w);
}

/* Two workers, every system on the pool: the events are the same bytes
 * in the same order as without a pool. */
static void test_collide_pool_is_byte_identical(void **state) {
  (void)state;
  scene_t *a = scene_new(0, 0x5eed);
  scene_t *b = scene_new(2, 0x5eed);
  for (uint32_t round = 0; round < 2; round++) {
    scene_run(a);
    scene_run(b);
    uint32_t na = 0, nb = 0;
    const void *ea = weft_event_read(a->w, a->std.collisions, &na);
    const void *eb = weft_event_read(b->w, b->std.collisions, &nb);
    assert_true(na > 200);
    assert_int_equal(na, nb);
    assert_memory_equal(ea, eb, na * sizeof(weft_collision_t));
    check_against_oracle(b);
  }
  weft_system_stats_t st;
  assert_int_equal(weft_system_stats(b->w, b->collide, &st), WEFT_OK);
  /* A task that really ran on the pool, once per run. */
  assert_true(st.jobs > 0);
  assert_int_equal(st.chunks, st.runs);
  scene_free(b);
  scene_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_collide_circle_circle),
      cmocka_unit_test(test_collide_circle_box),
      cmocka_unit_test(test_collide_box_box),
      cmocka_unit_test(test_collide_degenerate_shapes),
      cmocka_unit_test(test_collide_symmetric),
      cmocka_unit_test(test_collide_matches_brute_force),
      cmocka_unit_test(test_collide_big_chunks_match_brute_force),
      cmocka_unit_test(test_collide_empty_and_single_pair),
      cmocka_unit_test(test_collide_skips_dead_and_disabled),
      cmocka_unit_test(test_collide_pool_is_byte_identical),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
