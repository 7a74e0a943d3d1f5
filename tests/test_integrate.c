/* SPDX-License-Identifier: MIT */
/*
 * weft_sys_integrate() (systems/integrate.c) against a plain-C reference:
 * the same float operations in the same order (gravity, damping, move,
 * bounds) over arrays, compared bit for bit with the world after every
 * run, for each bounds mode, over several archetypes, with disabled
 * velocities and entities without Velocity, on no pool and on a pool of
 * two workers; plus the invariants of each bounds mode, the systems it
 * registers and their order, and the configuration errors.
 *
 * Every test builds and destroys its own world (and pool).
 */
#include "support/weft_test.h"

#include <math.h>
#include <stdlib.h>

#include <weft/builtin.h>

/* --- fixture ----------------------------------------------------------------
 */

#define N_ENT 3000u
#define TICKS 90u
#define DT (1.0 / 60.0)

typedef struct fx_t {
  weft_world_t *w;
  weft_pool_t *pool;
  weft_std_t std;
  weft_component_t extra; /* u32: a second archetype */
  weft_component_t tag;   /* tag: a third archetype */
} fx_t;

static fx_t fx_new(uint32_t workers) {
  fx_t f;
  memset(&f, 0, sizeof f);
  f.w = wt_world_pooled(
      workers, WEFT_CHUNK_SIZE_MIN /* many chunks per archetype */, &f.pool);
  assert_int_equal(weft_std_register(f.w, &f.std), WEFT_OK);
  f.extra = wt_register(f.w, "test.Extra", sizeof(uint32_t), 0);
  f.tag = wt_register_tag(f.w, "test.Tag");
  if (workers)
    wt_dispatch_everything(f.w);
  return f;
}

static void fx_free(fx_t *f) {
  weft_world_destroy(f->w); /* before the pool it uses */
  if (f->pool)
    weft_pool_destroy(f->pool);
  memset(f, 0, sizeof *f);
}

static void integrate_ok(fx_t *f, const weft_integrate_config_t *c,
                         weft_integrate_systems_t *out) {
  int rc = weft_sys_integrate(f->w, &f->std, c, out);
  if (rc != WEFT_OK)
    fail_msg("weft_sys_integrate: %s (%s)", weft_strerror(rc),
             weft_world_last_error(f->w));
}

static void step_ok(weft_world_t *w, double dt) {
  int rc = weft_world_run_phase(w, WEFT_PHASE_FIXED_UPDATE, dt);
  if (rc != WEFT_OK)
    fail_msg("run_phase: %s (%s)", weft_strerror(rc), weft_world_last_error(w));
}

/* --- the reference
 * ------------------------------------------------------------ */

/* One entity as the reference sees it. */
typedef struct ref_t {
  weft_entity_t e;
  float px, py, vx, vy;
  bool moves; /* has Position and an enabled Velocity */
  bool has_vel;
} ref_t;

static float uniform(wt_rng_t *r, float lo, float hi) {
  float u = (float)(wt_next(r) >> 40) * 0x1.0p-24f;
  return lo + u * (hi - lo);
}

/* Spawns N_ENT entities spread over Position+Velocity, +Extra, +Tag,
 * Position only, a tenth of those with Velocity disabled, in a shuffled
 * order (so every archetype's chunks hold scattered handles), positions in
 * [-spread, spread]^2 and velocities in [-80, 80]^2. */
static ref_t *populate(fx_t *f, uint64_t seed, float spread) {
  ref_t *r = calloc(N_ENT, sizeof *r);
  assert_non_null(r);
  wt_rng_t g = wt_rng(seed);
  for (uint32_t i = 0; i < N_ENT; i++) {
    weft_vec2_t p = {uniform(&g, -spread, spread),
                     uniform(&g, -spread, spread)};
    weft_vec2_t v = {uniform(&g, -80.0f, 80.0f), uniform(&g, -80.0f, 80.0f)};
    uint32_t kind = wt_below(&g, 10), x = i;
    weft_component_t comps[4] = {f->std.position, f->std.velocity, 0, 0};
    const void *values[3] = {&p, &v, &x};
    if (kind < 3)
      comps[2] = f->extra;
    else if (kind < 5)
      comps[2] = f->tag;
    else if (kind == 9)
      comps[1] = 0; /* Position only */
    r[i].e = wt_spawn_with(f->w, comps, values);
    r[i].px = p.x;
    r[i].py = p.y;
    r[i].has_vel = kind != 9;
    r[i].vx = r[i].has_vel ? v.x : 0.0f;
    r[i].vy = r[i].has_vel ? v.y : 0.0f;
    r[i].moves = r[i].has_vel;
    if (r[i].has_vel && wt_chance(&g, 1, 10)) {
      assert_int_equal(weft_disable(f->w, r[i].e, f->std.velocity), WEFT_OK);
      r[i].moves = false;
    }
  }
  return r;
}

/* floorf-based wrap, as documented, with the same one-ulp fix-ups. */
static float ref_wrap(float x, float lo, float hi) {
  float w = hi - lo;
  x -= w * floorf((x - lo) / w);
  if (x < lo)
    x += w;
  if (x < lo)
    x = lo;
  if (x >= hi)
    x = lo;
  return x;
}

static void ref_bounce(float *x, float *v, float lo, float hi) {
  if (*x < lo && *v < 0.0f)
    *v = -*v;
  if (*x > hi && *v > 0.0f)
    *v = -*v;
  if (*x < lo)
    *x = lo;
  if (*x > hi)
    *x = hi;
}

/* One step of the reference, system by system over all entities. */
static void ref_step(ref_t *r, uint32_t n, const weft_integrate_config_t *c,
                     double dt_) {
  float dt = (float)dt_;
  if (c->gravity.x != 0.0f || c->gravity.y != 0.0f) {
    float ax = c->gravity.x * dt, ay = c->gravity.y * dt;
    for (uint32_t i = 0; i < n; i++)
      if (r[i].moves) {
        r[i].vx += ax;
        r[i].vy += ay;
      }
  }
  if (c->damping > 0.0f) {
    float k = 1.0f - c->damping * dt;
    if (k < 0.0f)
      k = 0.0f;
    for (uint32_t i = 0; i < n; i++)
      if (r[i].moves) {
        r[i].vx *= k;
        r[i].vy *= k;
      }
  }
  for (uint32_t i = 0; i < n; i++)
    if (r[i].moves) {
      r[i].px += r[i].vx * dt;
      r[i].py += r[i].vy * dt;
    }
  for (uint32_t i = 0; i < n; i++) {
    if (!r[i].moves)
      continue;
    switch (c->mode) {
    case WEFT_BOUNDS_WRAP:
      r[i].px = ref_wrap(r[i].px, c->min.x, c->max.x);
      r[i].py = ref_wrap(r[i].py, c->min.y, c->max.y);
      break;
    case WEFT_BOUNDS_CLAMP:
      r[i].px = r[i].px < c->min.x ? c->min.x : r[i].px;
      r[i].px = r[i].px > c->max.x ? c->max.x : r[i].px;
      r[i].py = r[i].py < c->min.y ? c->min.y : r[i].py;
      r[i].py = r[i].py > c->max.y ? c->max.y : r[i].py;
      break;
    case WEFT_BOUNDS_BOUNCE:
      ref_bounce(&r[i].px, &r[i].vx, c->min.x, c->max.x);
      ref_bounce(&r[i].py, &r[i].vy, c->min.y, c->max.y);
      break;
    default:
      break;
    }
  }
}

static float field(fx_t *f, weft_entity_t e, weft_component_t c, uint32_t i) {
  const float *p = weft_get_field(f->w, e, c, i);
  if (!p)
    fail_msg("entity %llx has no field %u of component %u",
             (unsigned long long)e, i, c);
  return *p;
}

#define assert_float_same(what, i, got, want)                                  \
  do {                                                                         \
    float g_ = (got), w_ = (want);                                             \
    if (!(g_ == w_))                                                           \
      fail_msg("entity #%u: %s = %.9g, reference %.9g", (unsigned)(i), what,   \
               (double)g_, (double)w_);                                        \
  } while (0)

/* Compares every entity of the world with the reference, bit for bit
 * (== on floats: the arithmetic is the same, operation by operation). */
static void check_reference(fx_t *f, const ref_t *r, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    assert_true(weft_is_alive(f->w, r[i].e));
    assert_float_same("x", i, field(f, r[i].e, f->std.position, 0), r[i].px);
    assert_float_same("y", i, field(f, r[i].e, f->std.position, 1), r[i].py);
    if (!r[i].has_vel)
      continue;
    assert_float_same("vx", i, field(f, r[i].e, f->std.velocity, 0), r[i].vx);
    assert_float_same("vy", i, field(f, r[i].e, f->std.velocity, 1), r[i].vy);
  }
}

/* The configurations the reference tests run. */
static weft_integrate_config_t config(weft_bounds_mode_t mode, bool forces) {
  weft_integrate_config_t c;
  memset(&c, 0, sizeof c);
  c.mode = mode;
  c.min = (weft_vec2_t){-100.0f, -60.0f};
  c.max = (weft_vec2_t){100.0f, 90.0f};
  if (forces) {
    c.gravity = (weft_vec2_t){1.5f, -9.81f};
    c.damping = 0.3f;
  }
  return c;
}

/* Runs TICKS steps of @p c on a fresh population (checked against the
 * reference after every step) and returns the world's digest. */
static uint64_t run_reference(uint32_t workers,
                              const weft_integrate_config_t *c, uint64_t seed) {
  fx_t f = fx_new(workers);
  ref_t *r = populate(&f, seed, 130.0f);
  weft_integrate_systems_t s;
  integrate_ok(&f, c, &s);
  for (uint32_t t = 0; t < TICKS; t++) {
    step_ok(f.w, DT);
    ref_step(r, N_ENT, c, DT);
    check_reference(&f, r, N_ENT);
  }
  if (workers) { /* the systems really ran on the pool */
    weft_system_stats_t st;
    assert_int_equal(weft_system_stats(f.w, s.move, &st), WEFT_OK);
    assert_true(st.jobs > 0);
  }
  uint64_t d = weft_world_digest(f.w);
  free(r);
  fx_free(&f);
  return d;
}

/* --- tests ------------------------------------------------------------------
 */

static void test_integrate_none_matches_reference(void **state) {
  (void)state;
  weft_integrate_config_t c = config(WEFT_BOUNDS_NONE, true);
  run_reference(0, &c, 1);
}

static void test_integrate_move_only_matches_reference(void **state) {
  (void)state;
  weft_integrate_config_t c = config(WEFT_BOUNDS_NONE, false);
  run_reference(0, &c, 2);
}

static void test_integrate_wrap_matches_reference(void **state) {
  (void)state;
  weft_integrate_config_t c = config(WEFT_BOUNDS_WRAP, true);
  run_reference(0, &c, 3);
}

static void test_integrate_clamp_matches_reference(void **state) {
  (void)state;
  weft_integrate_config_t c = config(WEFT_BOUNDS_CLAMP, true);
  run_reference(0, &c, 4);
}

static void test_integrate_bounce_matches_reference(void **state) {
  (void)state;
  weft_integrate_config_t c = config(WEFT_BOUNDS_BOUNCE, true);
  run_reference(0, &c, 5);
}

/* The raw bits of a float, so that -0 and NaN payloads compare exactly. */
static uint32_t bits_of(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return b;
}

/*
 * Bounce at the walls with the velocities where a select can go wrong:
 * +0 and -0 (neither points out: kept, sign and all), NaN of either sign
 * (no comparison holds: kept), a velocity pointing back in (kept) and one
 * pointing out (reversed), below and above both walls and inside. The
 * reference decides, bit for bit.
 */
static void test_integrate_bounce_edge_velocities(void **state) {
  (void)state;
  fx_t f = fx_new(0);
  weft_integrate_config_t c = config(WEFT_BOUNDS_BOUNCE, false);
  integrate_ok(&f, &c, NULL);
  const float xs[] = {c.min.x - 5.0f, c.max.x + 5.0f, 0.0f, c.min.x, c.max.x};
  const float vs[] = {0.0f, -0.0f, NAN, -NAN, 3.0f, -3.0f};
  enum { NX = sizeof xs / sizeof xs[0], NV = sizeof vs / sizeof vs[0] };
  weft_entity_t e[NX * NV];
  ref_t r[NX * NV];
  const weft_component_t comps[] = {f.std.position, f.std.velocity, 0};
  for (uint32_t i = 0; i < NX * NV; i++) {
    weft_vec2_t p = {xs[i / NV], 0.0f}, v = {vs[i % NV], 0.0f};
    const void *values[] = {&p, &v};
    e[i] = wt_spawn_with(f.w, comps, values);
    r[i] = (ref_t){.e = e[i], .px = p.x, .py = p.y, .vx = v.x, .vy = v.y};
    /* The reference step: move, then bounce. */
    r[i].px += r[i].vx * (float)DT;
    r[i].py += r[i].vy * (float)DT;
    ref_bounce(&r[i].px, &r[i].vx, c.min.x, c.max.x);
    ref_bounce(&r[i].py, &r[i].vy, c.min.y, c.max.y);
  }
  step_ok(f.w, DT);
  for (uint32_t i = 0; i < NX * NV; i++) {
    uint32_t got_v = bits_of(field(&f, e[i], f.std.velocity, 0));
    uint32_t got_p = bits_of(field(&f, e[i], f.std.position, 0));
    if (got_v != bits_of(r[i].vx) || got_p != bits_of(r[i].px))
      fail_msg("x %g, v %g: position %08x velocity %08x, reference %08x "
               "%08x",
               (double)xs[i / NV], (double)vs[i % NV], got_p, got_v,
               bits_of(r[i].px), bits_of(r[i].vx));
  }
  fx_free(&f);
}

/* A huge damping step stops entities instead of reversing them. */
static void test_integrate_damping_factor_floors_at_zero(void **state) {
  (void)state;
  fx_t f = fx_new(0);
  weft_integrate_config_t c;
  memset(&c, 0, sizeof c);
  c.damping = 1000.0f; /* 1 - 1000/60 < 0 */
  integrate_ok(&f, &c, NULL);
  weft_vec2_t p = {1.0f, 2.0f}, v = {30.0f, -40.0f};
  const weft_component_t comps[] = {f.std.position, f.std.velocity, 0};
  const void *values[] = {&p, &v};
  weft_entity_t e = wt_spawn_with(f.w, comps, values);
  step_ok(f.w, DT);
  assert_true(field(&f, e, f.std.velocity, 0) == 0.0f);
  assert_true(field(&f, e, f.std.velocity, 1) == 0.0f);
  assert_true(field(&f, e, f.std.position, 0) == 1.0f);
  assert_true(field(&f, e, f.std.position, 1) == 2.0f);
  fx_free(&f);
}

/* The bounds invariants after every step: WRAP in [min, max), CLAMP and
 * BOUNCE in [min, max], BOUNCE velocities pointing back in at the walls. */
static void check_invariants(fx_t *f, const ref_t *r,
                             const weft_integrate_config_t *c) {
  for (uint32_t i = 0; i < N_ENT; i++) {
    if (!r[i].moves)
      continue;
    float x = field(f, r[i].e, f->std.position, 0);
    float y = field(f, r[i].e, f->std.position, 1);
    assert_true(x >= c->min.x && y >= c->min.y);
    if (c->mode == WEFT_BOUNDS_WRAP) {
      assert_true(x < c->max.x && y < c->max.y);
    } else {
      assert_true(x <= c->max.x && y <= c->max.y);
    }
    if (c->mode == WEFT_BOUNDS_BOUNCE) {
      float vx = field(f, r[i].e, f->std.velocity, 0);
      if (x == c->min.x)
        assert_true(vx >= 0.0f);
      if (x == c->max.x)
        assert_true(vx <= 0.0f);
    }
  }
}

static void test_integrate_bounds_invariants(void **state) {
  (void)state;
  const weft_bounds_mode_t modes[] = {WEFT_BOUNDS_WRAP, WEFT_BOUNDS_CLAMP,
                                      WEFT_BOUNDS_BOUNCE};
  for (uint32_t m = 0; m < 3; m++) {
    fx_t f = fx_new(0);
    ref_t *r = populate(&f, 10 + m, 400.0f); /* most start outside */
    weft_integrate_config_t c = config(modes[m], false);
    integrate_ok(&f, &c, NULL);
    for (uint32_t t = 0; t < 20; t++) {
      step_ok(f.w, DT);
      check_invariants(&f, r, &c);
    }
    free(r);
    fx_free(&f);
  }
}

/* WRAP from far away, at every magnitude (where the quotient leaves the
 * range of exact float integers too) and on the edges themselves. */
static void test_integrate_wrap_far_and_edges(void **state) {
  (void)state;
  fx_t f = fx_new(0);
  weft_integrate_config_t c = config(WEFT_BOUNDS_WRAP, false);
  integrate_ok(&f, &c, NULL);
  enum { N = 400 };
  ref_t r[N];
  memset(r, 0, sizeof r);
  wt_rng_t g = wt_rng(77);
  const weft_component_t comps[] = {f.std.position, f.std.velocity, 0};
  for (uint32_t i = 0; i < N; i++) {
    float x, y;
    if (i < 8) { /* the edges and just around them */
      const float xs[8] = {-100.0f,
                           100.0f,
                           nextafterf(100.0f, 0.0f),
                           nextafterf(-100.0f, -200.0f),
                           -300.0f,
                           300.0f,
                           0.0f,
                           -0.0f};
      x = xs[i];
      y = i & 1 ? 90.0f : -60.0f;
    } else {
      float mag = powf(10.0f, uniform(&g, -3.0f, 12.0f));
      x = wt_chance(&g, 1, 2) ? mag : -mag;
      mag = powf(10.0f, uniform(&g, -3.0f, 12.0f));
      y = wt_chance(&g, 1, 2) ? mag : -mag;
    }
    weft_vec2_t p = {x, y}, v = {0.0f, 0.0f};
    const void *values[] = {&p, &v};
    r[i].e = wt_spawn_with(f.w, comps, values);
    r[i] = (ref_t){r[i].e, x, y, 0.0f, 0.0f, true, true};
  }
  step_ok(f.w, DT);
  ref_step(r, N, &c, DT);
  check_reference(&f, r, N);
  for (uint32_t i = 0; i < N; i++) {
    float x = field(&f, r[i].e, f.std.position, 0);
    float y = field(&f, r[i].e, f.std.position, 1);
    assert_true(x >= -100.0f && x < 100.0f);
    assert_true(y >= -60.0f && y < 90.0f);
  }
  /* The edges: min stays, max becomes min, 300 is min + 2 widths. */
  assert_true(field(&f, r[0].e, f.std.position, 0) == -100.0f);
  assert_true(field(&f, r[1].e, f.std.position, 0) == -100.0f);
  assert_true(field(&f, r[2].e, f.std.position, 0) == nextafterf(100.0f, 0.0f));
  assert_true(field(&f, r[4].e, f.std.position, 0) == 100.0f - 200.0f);
  assert_true(field(&f, r[5].e, f.std.position, 0) == -100.0f);
  assert_true(field(&f, r[1].e, f.std.position, 1) == -60.0f);
  fx_free(&f);
}

/* Disabled Velocity stops an entity (its position and velocity stay);
 * enabling it again resumes the movement. */
static void test_integrate_disabled_velocity_stops(void **state) {
  (void)state;
  fx_t f = fx_new(0);
  weft_integrate_config_t c = config(WEFT_BOUNDS_BOUNCE, true);
  integrate_ok(&f, &c, NULL);
  weft_vec2_t p = {5.0f, 6.0f}, v = {10.0f, 20.0f};
  const weft_component_t comps[] = {f.std.position, f.std.velocity, 0};
  const void *values[] = {&p, &v};
  weft_entity_t a = wt_spawn_with(f.w, comps, values);
  weft_entity_t b = wt_spawn_with(f.w, comps, values);
  assert_int_equal(weft_disable(f.w, b, f.std.velocity), WEFT_OK);
  for (int t = 0; t < 5; t++)
    step_ok(f.w, DT);
  assert_true(field(&f, a, f.std.position, 0) != 5.0f);
  assert_true(field(&f, a, f.std.velocity, 1) != 20.0f);
  assert_true(field(&f, b, f.std.position, 0) == 5.0f);
  assert_true(field(&f, b, f.std.position, 1) == 6.0f);
  assert_true(field(&f, b, f.std.velocity, 0) == 10.0f);
  assert_true(field(&f, b, f.std.velocity, 1) == 20.0f);
  assert_int_equal(weft_enable(f.w, b, f.std.velocity), WEFT_OK);
  step_ok(f.w, DT);
  assert_true(field(&f, b, f.std.position, 0) != 5.0f);
  fx_free(&f);
}

/* On a pool of two workers, every system cut into jobs, the result is the
 * reference's and the digest the inline run's. */
static void test_integrate_pool_matches_inline(void **state) {
  (void)state;
  const weft_bounds_mode_t modes[] = {WEFT_BOUNDS_NONE, WEFT_BOUNDS_WRAP,
                                      WEFT_BOUNDS_CLAMP, WEFT_BOUNDS_BOUNCE};
  for (uint32_t m = 0; m < 4; m++) {
    weft_integrate_config_t c = config(modes[m], true);
    uint64_t inline_digest = run_reference(0, &c, 20 + m);
    uint64_t pool_digest = run_reference(2, &c, 20 + m);
    assert_true(inline_digest == pool_digest);
  }
}

/* What gets registered: only the systems the configuration needs, in the
 * order gravity, damping, move, bounds (edges from their accesses). */
static void test_integrate_registers_and_orders(void **state) {
  (void)state;
  fx_t f = fx_new(0);
  weft_integrate_config_t c = config(WEFT_BOUNDS_BOUNCE, true);
  weft_integrate_systems_t s;
  integrate_ok(&f, &c, &s);
  assert_true(s.gravity && s.damping && s.move && s.bounds);
  const char *names[4] = {"weft.gravity", "weft.damping", "weft.move",
                          "weft.bounds"};
  const weft_system_t ids[4] = {s.gravity, s.damping, s.move, s.bounds};
  for (uint32_t i = 0; i < 4; i++) {
    weft_system_t id = 0;
    assert_int_equal(weft_system_lookup(f.w, names[i], &id), WEFT_OK);
    assert_int_equal(id, ids[i]);
    weft_system_info_t info;
    assert_int_equal(weft_system_info(f.w, id, &info), WEFT_OK);
    assert_int_equal(info.phase, WEFT_PHASE_FIXED_UPDATE);
    if (i)
      assert_true(weft_system_edge(f.w, ids[i - 1], ids[i]));
  }
  /* Once per world: the names are taken. */
  assert_int_equal(weft_sys_integrate(f.w, &f.std, &c, NULL), WEFT_EEXIST);
  fx_free(&f);

  /* The zero configuration: move only, in FixedUpdate. */
  f = fx_new(0);
  weft_integrate_config_t zero;
  memset(&zero, 0, sizeof zero);
  integrate_ok(&f, &zero, &s);
  assert_true(!s.gravity && !s.damping && s.move && !s.bounds);
  weft_system_t id;
  assert_int_not_equal(weft_system_lookup(f.w, "weft.gravity", &id), WEFT_OK);
  assert_int_not_equal(weft_system_lookup(f.w, "weft.bounds", &id), WEFT_OK);
  fx_free(&f);

  /* A user phase. */
  f = fx_new(0);
  weft_phase_t ph;
  assert_int_equal(
      weft_phase_register(f.w, "test.Physics", WEFT_PHASE_PRE_UPDATE, &ph),
      WEFT_OK);
  zero.phase = ph;
  integrate_ok(&f, &zero, &s);
  weft_system_info_t info;
  assert_int_equal(weft_system_info(f.w, s.move, &info), WEFT_OK);
  assert_int_equal(info.phase, ph);
  fx_free(&f);
}

static void test_integrate_config_errors(void **state) {
  (void)state;
  fx_t f = fx_new(0);
  const float nan = nanf(""), inf = INFINITY;
  weft_integrate_config_t bad[16];
  uint32_t n = 0;
  for (int mode = WEFT_BOUNDS_WRAP; mode <= WEFT_BOUNDS_BOUNCE; mode++) {
    bad[n] = config((weft_bounds_mode_t)mode, false);
    bad[n++].max.x = -100.0f; /* min.x == max.x */
    bad[n] = config((weft_bounds_mode_t)mode, false);
    bad[n++].min.y = 95.0f; /* min.y > max.y */
  }
  bad[n] = config(WEFT_BOUNDS_NONE, true);
  bad[n++].damping = -0.5f;
  bad[n] = config(WEFT_BOUNDS_NONE, true);
  bad[n++].damping = nan;
  bad[n] = config(WEFT_BOUNDS_NONE, true);
  bad[n++].gravity.y = inf;
  bad[n] = config(WEFT_BOUNDS_NONE, true);
  bad[n++].gravity.x = nan;
  bad[n] = config(WEFT_BOUNDS_CLAMP, false);
  bad[n++].max.x = inf;
  bad[n] = config(WEFT_BOUNDS_WRAP, false);
  bad[n++].min.y = nan;
  bad[n] = config(WEFT_BOUNDS_WRAP, false);
  bad[n].min.x = -3e38f; /* the width overflows */
  bad[n++].max.x = 3e38f;
  bad[n] = config((weft_bounds_mode_t)7, false);
  n++;
  for (uint32_t i = 0; i < n; i++) {
    weft_integrate_systems_t s;
    memset(&s, 0xa5, sizeof s);
    if (weft_sys_integrate(f.w, &f.std, &bad[i], &s) != WEFT_EINVAL)
      fail_msg("bad config %u accepted", i);
    assert_non_null(strstr(weft_world_last_error(f.w), "bad config"));
    /* nothing registered, *out untouched */
    weft_system_t id;
    assert_int_not_equal(weft_system_lookup(f.w, "weft.move", &id), WEFT_OK);
    assert_int_equal(s.move, 0xa5a5a5a5u);
  }
  weft_integrate_config_t ok = config(WEFT_BOUNDS_NONE, true);
  assert_int_equal(weft_sys_integrate(NULL, &f.std, &ok, NULL), WEFT_EINVAL);
  assert_int_equal(weft_sys_integrate(f.w, NULL, &ok, NULL), WEFT_EINVAL);
  assert_non_null(strstr(weft_world_last_error(f.w), "std is NULL"));
  /* With mode NONE the box is not looked at; NULL means the defaults. */
  ok.min = (weft_vec2_t){5.0f, 5.0f};
  ok.max = (weft_vec2_t){-5.0f, nan};
  integrate_ok(&f, &ok, NULL);
  fx_free(&f);
  f = fx_new(0);
  integrate_ok(&f, NULL, NULL);
  fx_free(&f);
}

static int noop(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)ctx;
  (void)it;
  return 0;
}

/* A failing registration leaves nothing behind: with a bad component id
 * the first system fails; with room for two systems only, gravity and
 * damping register, move fails, and the two are removed again. */
static void test_integrate_registration_error_is_atomic(void **state) {
  (void)state;
  fx_t f = fx_new(0);
  weft_std_t std = f.std;
  std.velocity = 999;
  weft_integrate_config_t c = config(WEFT_BOUNDS_BOUNCE, true);
  assert_int_not_equal(weft_sys_integrate(f.w, &std, &c, NULL), WEFT_OK);
  weft_system_t id;
  assert_int_not_equal(weft_system_lookup(f.w, "weft.gravity", &id), WEFT_OK);

  weft_system_t *fill = calloc(WEFT_MAX_SYSTEMS + 1, sizeof *fill);
  assert_non_null(fill);
  uint32_t nf = 0;
  for (;;) {
    char name[32];
    snprintf(name, sizeof name, "test.fill.%u", nf);
    weft_system_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.run = noop;
    int rc = weft_system_register(f.w, &d, &fill[nf]);
    if (rc == WEFT_ETOOMANY)
      break;
    assert_int_equal(rc, WEFT_OK);
    assert_true(++nf <= WEFT_MAX_SYSTEMS);
  }
  for (int i = 0; i < 2; i++)
    assert_int_equal(weft_system_remove(f.w, fill[--nf]), WEFT_OK);
  assert_int_equal(weft_sys_integrate(f.w, &f.std, &c, NULL), WEFT_ETOOMANY);
  assert_int_not_equal(weft_system_lookup(f.w, "weft.gravity", &id), WEFT_OK);
  assert_int_not_equal(weft_system_lookup(f.w, "weft.damping", &id), WEFT_OK);
  /* Room for all four: it works. */
  for (int i = 0; i < 2; i++)
    assert_int_equal(weft_system_remove(f.w, fill[--nf]), WEFT_OK);
  integrate_ok(&f, &c, NULL);
  free(fill);
  fx_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_integrate_none_matches_reference),
      cmocka_unit_test(test_integrate_move_only_matches_reference),
      cmocka_unit_test(test_integrate_wrap_matches_reference),
      cmocka_unit_test(test_integrate_clamp_matches_reference),
      cmocka_unit_test(test_integrate_bounce_matches_reference),
      cmocka_unit_test(test_integrate_bounce_edge_velocities),
      cmocka_unit_test(test_integrate_damping_factor_floors_at_zero),
      cmocka_unit_test(test_integrate_bounds_invariants),
      cmocka_unit_test(test_integrate_wrap_far_and_edges),
      cmocka_unit_test(test_integrate_disabled_velocity_stops),
      cmocka_unit_test(test_integrate_pool_matches_inline),
      cmocka_unit_test(test_integrate_registers_and_orders),
      cmocka_unit_test(test_integrate_config_errors),
      cmocka_unit_test(test_integrate_registration_error_is_atomic),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
