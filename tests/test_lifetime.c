/* SPDX-License-Identifier: MIT */
/*
 * weft_sys_lifetime() and weft_sys_spawners() (systems/lifetime.c) against
 * a plain-C reference: lifetimes count down and entities are despawned in
 * exactly the tick the reference expires them; spawners fire in the ticks
 * the reference says, with the burst's count and the projectiles' values
 * (directions from the documented random draw); dead spawners do not fire;
 * and the world after many ticks of spawners, lifetimes and movement is
 * the same on one worker as on two.
 *
 * Every test builds and destroys its own world (and pool).
 */
#include "support/weft_test.h"

#include <math.h>
#include <stdlib.h>

#include <weft/builtin.h>

/* --- fixture ----------------------------------------------------------------
 */

#define FIXED 0.125 /* exact in float: the reference's sums are exact too */

typedef struct fx_t {
  weft_world_t *w;
  weft_pool_t *pool;
  weft_std_t std;
  weft_component_t extra; /* u32: a second archetype */
} fx_t;

static fx_t fx_new(uint32_t workers) {
  fx_t f;
  memset(&f, 0, sizeof f);
  f.w = wt_world_pooled(workers, WEFT_CHUNK_SIZE_MIN, &f.pool);
  assert_int_equal(weft_std_register(f.w, &f.std), WEFT_OK);
  f.extra = wt_register(f.w, "test.Extra", sizeof(uint32_t), 0);
  weft_pipeline_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.fixed_dt = FIXED;
  pc.net_dt = -1.0;
  pc.inline_rows = workers ? 1 : 0; /* with a pool, everything goes to it */
  assert_int_equal(weft_pipeline_configure(f.w, &pc), WEFT_OK);
  return f;
}

static void fx_free(fx_t *f) {
  weft_world_destroy(f->w); /* before the pool it uses */
  if (f->pool)
    weft_pool_destroy(f->pool);
  memset(f, 0, sizeof *f);
}

/* One fixed step (ctx->tick advances, which the spawners' draws use). */
static void tick_ok(weft_world_t *w) {
  int rc = weft_world_progress(w, FIXED);
  if (rc != WEFT_OK)
    fail_msg("progress: %s (%s)", weft_strerror(rc), weft_world_last_error(w));
}

static float uniform(wt_rng_t *r, float lo, float hi) {
  float u = (float)(wt_next(r) >> 40) * 0x1.0p-24f;
  return lo + u * (hi - lo);
}

/* --- lifetimes
 * ---------------------------------------------------------------- */

typedef struct life_t {
  weft_entity_t e;
  float remaining;
  bool counts;  /* has an enabled Lifetime */
  int32_t dies; /* tick of the despawn, -1: never (so far) */
} life_t;

static void test_lifetime_despawns_at_reference_tick(void **state) {
  (void)state;
  fx_t f = fx_new(0);
  weft_system_t sys = 0;
  assert_int_equal(weft_sys_lifetime(f.w, &f.std, 0, &sys), WEFT_OK);
  assert_int_not_equal(sys, 0);

  enum { N = 1500, TICKS = 40 };
  life_t *r = calloc(N, sizeof *r);
  assert_non_null(r);
  wt_rng_t g = wt_rng(9);
  for (uint32_t i = 0; i < N; i++) {
    weft_lifetime_t lt;
    uint32_t k = wt_below(&g, 8);
    if (k == 0) /* exact multiples of the step: expire on the dot */
      lt.remaining = (float)(FIXED * (double)wt_below(&g, 30));
    else if (k == 1) /* already expired: go in the first tick */
      lt.remaining = -uniform(&g, 0.0f, 1.0f);
    else
      lt.remaining = uniform(&g, 0.001f, 6.0f);
    weft_vec2_t p = {(float)i, 0.0f};
    uint32_t x = i;
    weft_component_t comps[4] = {f.std.lifetime, 0, 0, 0};
    const void *values[3] = {&lt, NULL, NULL};
    if (i % 3 == 1) {
      comps[1] = f.std.position;
      values[1] = &p;
    } else if (i % 3 == 2) {
      comps[1] = f.extra;
      values[1] = &x;
    }
    r[i].e = wt_spawn_with(f.w, comps, values);
    r[i].remaining = lt.remaining;
    r[i].counts = true;
    r[i].dies = -1;
    if (i % 17 == 0) { /* a disabled Lifetime does not count down */
      assert_int_equal(weft_disable(f.w, r[i].e, f.std.lifetime), WEFT_OK);
      r[i].counts = false;
    }
  }
  /* Bystanders without Lifetime. */
  weft_entity_t other[10];
  for (uint32_t i = 0; i < 10; i++)
    other[i] = wt_spawn(f.w);

  float dt = (float)FIXED;
  uint32_t died_total = 0;
  for (int32_t t = 0; t < TICKS; t++) {
    tick_ok(f.w);
    uint32_t alive = 10;
    for (uint32_t i = 0; i < N; i++) {
      if (r[i].counts && r[i].dies < 0) {
        r[i].remaining -= dt;
        if (r[i].remaining <= 0.0f) {
          r[i].dies = t;
          died_total++;
        }
      }
      bool live = r[i].dies < 0;
      if (weft_is_alive(f.w, r[i].e) != live)
        fail_msg("tick %d: entity #%u (lifetime %.9g) alive=%d, reference %d",
                 t, i, (double)r[i].remaining, !live, live);
      if (!live)
        continue;
      alive++;
      const weft_lifetime_t *lt = weft_get(f.w, r[i].e, f.std.lifetime);
      assert_non_null(lt);
      if (!(lt->remaining == r[i].remaining))
        fail_msg("tick %d: entity #%u remaining %.9g, reference %.9g", t, i,
                 (double)lt->remaining, (double)r[i].remaining);
    }
    assert_int_equal(weft_world_count(f.w), alive);
  }
  /* The scenario really despawned at many different ticks. */
  assert_true(died_total > N / 2);
  assert_true(died_total < N);
  for (uint32_t i = 0; i < 10; i++)
    assert_true(weft_is_alive(f.w, other[i]));
  weft_system_stats_t st;
  assert_int_equal(weft_system_stats(f.w, sys, &st), WEFT_OK);
  assert_int_equal(st.runs, TICKS);
  free(r);
  fx_free(&f);
}

/* --- spawners
 * ------------------------------------------------------------------ */

/* A projectile as compared: all fields 4 bytes, no padding, so sorted
 * arrays compare with memcmp. */
typedef struct proj_t {
  float damage;
  float px, py, vx, vy;
  float lifetime;
  float r, hx, hy;
  uint32_t shape, layer, mask;
} proj_t;

static int proj_cmp(const void *a, const void *b) {
  return memcmp(a, b, sizeof(proj_t));
}

typedef struct spawner_ref_t {
  weft_entity_t e;
  weft_spawner_t s;
  float x, y;
  bool fires; /* has Position and no Dead tag */
} spawner_ref_t;

/* One tick of the reference: appends the projectiles fired in tick @p tick
 * to out[*n]. */
static void ref_spawn(spawner_ref_t *sp, uint32_t ns, uint64_t seed,
                      uint64_t tick, proj_t *out, uint32_t *n, uint32_t cap) {
  float dt = (float)FIXED;
  for (uint32_t k = 0; k < ns; k++) {
    weft_spawner_t *s = &sp[k].s;
    if (!sp[k].fires)
      continue;
    s->timer -= dt;
    if (s->timer > 0.0f)
      continue;
    for (uint32_t b = 0; b < s->burst; b++) {
      uint64_t r = weft_random_at(seed, sp[k].e, tick, WEFT_SPAWNER_STREAM, b);
      double a = 6.283185307179586 * ((double)(r >> 11) * 0x1.0p-53);
      proj_t p;
      memset(&p, 0, sizeof p);
      p.damage = s->damage;
      p.px = sp[k].x;
      p.py = sp[k].y;
      p.vx = (float)(s->speed * cos(a));
      p.vy = (float)(s->speed * sin(a));
      p.lifetime = s->lifetime;
      p.r = s->radius;
      p.shape = WEFT_SHAPE_CIRCLE;
      p.layer = s->layer;
      p.mask = s->mask;
      assert_true(*n < cap);
      out[(*n)++] = p;
    }
    s->timer += s->interval;
    if (s->timer <= 0.0f)
      s->timer = s->interval;
  }
}

/* The world's projectiles (the entities with Lifetime), sorted. */
static uint32_t world_projectiles(fx_t *f, proj_t *out, uint32_t cap) {
  weft_query_desc_t d;
  memset(&d, 0, sizeof d);
  d.include[0] = f->std.lifetime;
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(f->w, &d, &q), WEFT_OK);
  weft_entity_t *es = calloc(cap + 1, sizeof *es);
  assert_non_null(es);
  uint32_t n = 0;
  weft_iter_t it;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it))
    for (uint32_t i = 0; i < it.count; i++) {
      assert_true(n < cap);
      es[n++] = it.entities[i];
    }
  weft_query_destroy(q);
  for (uint32_t i = 0; i < n; i++) {
    weft_vec2_t p, v;
    weft_lifetime_t lt;
    weft_collider_t c;
    weft_damage_t dm;
    assert_int_equal(weft_read(f->w, es[i], f->std.position, &p), WEFT_OK);
    assert_int_equal(weft_read(f->w, es[i], f->std.velocity, &v), WEFT_OK);
    assert_int_equal(weft_read(f->w, es[i], f->std.lifetime, &lt), WEFT_OK);
    assert_int_equal(weft_read(f->w, es[i], f->std.collider, &c), WEFT_OK);
    assert_int_equal(weft_read(f->w, es[i], f->std.damage, &dm), WEFT_OK);
    proj_t *o = &out[i];
    memset(o, 0, sizeof *o);
    *o = (proj_t){dm.amount, p.x,  p.y,  v.x,     v.y,     lt.remaining,
                  c.r,       c.hx, c.hy, c.shape, c.layer, c.mask};
  }
  free(es);
  qsort(out, n, sizeof *out, proj_cmp);
  return n;
}

/* Spawners of every kind: intervals from 0 (every tick) to 1 s, timers
 * already expired, on the dot or late, bursts of 0 to 4, in two
 * archetypes; some without Position and some Dead, which never fire. */
static spawner_ref_t *make_spawners(fx_t *f, uint32_t ns, uint64_t seed,
                                    bool with_misfits) {
  spawner_ref_t *sp = calloc(ns, sizeof *sp);
  assert_non_null(sp);
  wt_rng_t g = wt_rng(seed);
  const float intervals[6] = {0.0f, 0.125f, 0.25f, 0.3f, 0.5f, 1.0f};
  const float timers[6] = {0.0f, 0.125f, 0.2f, 0.6f, -5.0f, 1.5f};
  for (uint32_t k = 0; k < ns; k++) {
    weft_spawner_t s;
    memset(&s, 0, sizeof s);
    s.interval = intervals[wt_below(&g, 6)];
    s.timer = timers[wt_below(&g, 6)];
    s.speed = uniform(&g, 1.0f, 50.0f);
    s.lifetime = uniform(&g, 0.1f, 1.0f);
    s.damage = (float)(k + 1); /* names the spawner */
    s.radius = uniform(&g, 0.1f, 2.0f);
    s.burst = wt_below(&g, 5);
    s.layer = 1u << wt_below(&g, 8);
    s.mask = (uint32_t)wt_next(&g);
    weft_vec2_t p = {uniform(&g, -50.0f, 50.0f), uniform(&g, -50.0f, 50.0f)};
    uint32_t x = k;
    weft_component_t comps[4] = {f->std.spawner, f->std.position, 0, 0};
    const void *values[3] = {&s, &p, &x};
    uint32_t kind = with_misfits ? wt_below(&g, 10) : 9;
    if (kind == 0)
      comps[1] = 0; /* no Position: not a spawner the system sees */
    else if (kind < 5)
      comps[2] = f->extra;
    sp[k].e = wt_spawn_with(f->w, comps, values);
    sp[k].s = s;
    sp[k].x = p.x;
    sp[k].y = p.y;
    sp[k].fires = kind != 0;
    if (kind == 1) { /* dead */
      assert_int_equal(weft_add(f->w, sp[k].e, f->std.dead, NULL), WEFT_OK);
      sp[k].fires = false;
    }
  }
  return sp;
}

static void check_projectiles(fx_t *f, proj_t *want, uint32_t nwant,
                              proj_t *got, uint32_t cap, int tick) {
  uint32_t ngot = world_projectiles(f, got, cap);
  if (ngot != nwant)
    fail_msg("tick %d: %u projectiles, reference %u", tick, ngot, nwant);
  qsort(want, nwant, sizeof *want, proj_cmp);
  for (uint32_t i = 0; i < nwant; i++)
    if (memcmp(&got[i], &want[i], sizeof *want) != 0)
      fail_msg("tick %d: projectile %u of spawner %g: got v (%.9g, %.9g) at "
               "(%.9g, %.9g), reference v (%.9g, %.9g) at (%.9g, %.9g)",
               tick, i, (double)want[i].damage, (double)got[i].vx,
               (double)got[i].vy, (double)got[i].px, (double)got[i].py,
               (double)want[i].vx, (double)want[i].vy, (double)want[i].px,
               (double)want[i].py);
}

static void test_lifetime_spawners_fire_on_schedule(void **state) {
  (void)state;
  fx_t f = fx_new(0);
  enum { NS = 120, TICKS = 24, CAP = NS * 4 * TICKS };
  spawner_ref_t *sp = make_spawners(&f, NS, 31, true);
  weft_system_t sys = 0;
  assert_int_equal(weft_sys_spawners(f.w, &f.std, 0, &sys), WEFT_OK);
  proj_t *want = calloc(CAP, sizeof *want), *got = calloc(CAP, sizeof *got);
  assert_non_null(want);
  assert_non_null(got);
  uint64_t seed = weft_random_world_seed(f.w);
  uint32_t nwant = 0, fired_ticks = 0;
  for (int t = 0; t < TICKS; t++) {
    uint32_t before = nwant;
    tick_ok(f.w);
    ref_spawn(sp, NS, seed, (uint64_t)t, want, &nwant, CAP);
    fired_ticks += nwant > before;
    check_projectiles(&f, want, nwant, got, CAP, t);
    for (uint32_t k = 0; k < NS; k++) {
      const weft_spawner_t *s = weft_get(f.w, sp[k].e, f.std.spawner);
      assert_non_null(s);
      if (!(s->timer == sp[k].s.timer))
        fail_msg("tick %d: spawner %u timer %.9g, reference %.9g", t, k,
                 (double)s->timer, (double)sp[k].s.timer);
    }
  }
  assert_true(fired_ticks == TICKS); /* interval-0 spawners fire every tick */
  assert_true(nwant > NS);
  /* The directions are unit vectors times the speed, and a burst's
   * projectiles fly in different directions. */
  for (uint32_t i = 0; i < nwant; i++) {
    const spawner_ref_t *s = &sp[(uint32_t)want[i].damage - 1];
    double v = hypot(want[i].vx, want[i].vy);
    assert_true(fabs(v - s->s.speed) <= 1e-5 * s->s.speed);
    if (i && want[i - 1].damage == want[i].damage)
      assert_true(want[i - 1].vx != want[i].vx);
  }
  fx_free(&f);
  free(sp);
  free(want);
  free(got);
}

/* A dead spawner keeps its timer and fires nothing; once the Dead tag is
 * gone it fires again. */
static void test_lifetime_dead_spawners_do_not_fire(void **state) {
  (void)state;
  fx_t f = fx_new(0);
  assert_int_equal(weft_sys_spawners(f.w, &f.std, 0, NULL), WEFT_OK);
  weft_spawner_t s;
  memset(&s, 0, sizeof s);
  s.interval = 0.25f;
  s.timer = 0.125f;
  s.speed = 3.0f;
  s.lifetime = 9.0f;
  s.burst = 2;
  weft_vec2_t p = {1.0f, 2.0f};
  const weft_component_t comps[] = {f.std.spawner, f.std.position, 0};
  const void *values[] = {&s, &p};
  weft_entity_t live = wt_spawn_with(f.w, comps, values);
  weft_entity_t dead = wt_spawn_with(f.w, comps, values);
  assert_int_equal(weft_add(f.w, dead, f.std.dead, NULL), WEFT_OK);
  for (int t = 0; t < 8; t++)
    tick_ok(f.w);
  /* live fired at ticks 0, 2, 4, 6: 8 projectiles; dead none. */
  assert_int_equal(weft_world_count(f.w), 2 + 8);
  const weft_spawner_t *d = weft_get(f.w, dead, f.std.spawner);
  assert_true(d->timer == 0.125f);
  const weft_spawner_t *l = weft_get(f.w, live, f.std.spawner);
  assert_true(l->timer == 0.125f);
  /* Both timers run out in the next tick. */
  assert_int_equal(weft_remove(f.w, dead, f.std.dead), WEFT_OK);
  tick_ok(f.w);
  assert_int_equal(weft_world_count(f.w), 2 + 8 + 2 + 2);
  fx_free(&f);
}

/* Projectiles die of their Lifetime when both systems run. */
static void test_lifetime_projectiles_expire(void **state) {
  (void)state;
  fx_t f = fx_new(0);
  assert_int_equal(weft_sys_spawners(f.w, &f.std, 0, NULL), WEFT_OK);
  assert_int_equal(weft_sys_lifetime(f.w, &f.std, 0, NULL), WEFT_OK);
  weft_spawner_t s;
  memset(&s, 0, sizeof s);
  s.interval = 100.0f;
  s.timer = 0.125f; /* fires in the first tick only */
  s.lifetime = 0.5f;
  s.burst = 3;
  weft_vec2_t p = {0.0f, 0.0f};
  const weft_component_t comps[] = {f.std.spawner, f.std.position, 0};
  const void *values[] = {&s, &p};
  wt_spawn_with(f.w, comps, values);
  tick_ok(f.w);
  assert_int_equal(weft_world_count(f.w), 4);
  /* Whether the spawning tick already counted them down depends on where
   * the scheduler puts the sync point; from what they have left, each
   * tick takes 0.125 and the tick that reaches 0 despawns them. */
  weft_query_desc_t d;
  memset(&d, 0, sizeof d);
  d.include[0] = f.std.lifetime;
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(f.w, &d, &q), WEFT_OK);
  weft_iter_t it;
  weft_query_iter(q, &it);
  assert_true(weft_iter_next(&it));
  assert_int_equal(it.count, 3);
  float left = ((const weft_lifetime_t *)it.columns[0])[0].remaining;
  weft_iter_close(&it);
  weft_query_destroy(q);
  assert_true(left == 0.5f || left == 0.375f);
  int ticks_left = (int)(left / 0.125f);
  for (int t = 1; t < ticks_left; t++) {
    tick_ok(f.w);
    assert_int_equal(weft_world_count(f.w), 4);
  }
  tick_ok(f.w);
  assert_int_equal(weft_world_count(f.w), 1);
  fx_free(&f);
}

/* Spawners, lifetimes and movement for many ticks: the same world on one
 * worker as on two, every tick. */
static void test_lifetime_same_on_one_and_two_workers(void **state) {
  (void)state;
  enum { NS = 400, TICKS = 40 };
  fx_t a = fx_new(1), b = fx_new(2);
  fx_t *fs[2] = {&a, &b};
  spawner_ref_t *sp[2];
  weft_integrate_config_t ic;
  memset(&ic, 0, sizeof ic);
  ic.mode = WEFT_BOUNDS_WRAP;
  ic.min = (weft_vec2_t){-60.0f, -60.0f};
  ic.max = (weft_vec2_t){60.0f, 60.0f};
  weft_system_t spawners[2];
  for (int i = 0; i < 2; i++) {
    sp[i] = make_spawners(fs[i], NS, 55, true);
    assert_int_equal(weft_sys_spawners(fs[i]->w, &fs[i]->std, 0, &spawners[i]),
                     WEFT_OK);
    assert_int_equal(weft_sys_lifetime(fs[i]->w, &fs[i]->std, 0, NULL),
                     WEFT_OK);
    assert_int_equal(weft_sys_integrate(fs[i]->w, &fs[i]->std, &ic, NULL),
                     WEFT_OK);
  }
  uint32_t peak = 0;
  for (int t = 0; t < TICKS; t++) {
    tick_ok(a.w);
    tick_ok(b.w);
    assert_int_equal(weft_world_count(a.w), weft_world_count(b.w));
    if (weft_world_digest(a.w) != weft_world_digest(b.w))
      fail_msg("tick %d: digests differ", t);
    if (weft_world_count(a.w) > peak)
      peak = weft_world_count(a.w);
  }
  assert_true(peak > 2 * NS); /* the scenario spawned plenty */
  weft_system_stats_t st;
  assert_int_equal(weft_system_stats(b.w, spawners[1], &st), WEFT_OK);
  assert_true(st.jobs > 0); /* it ran on the pool */
  for (int i = 0; i < 2; i++) {
    free(sp[i]);
    fx_free(fs[i]);
  }
}

static void test_lifetime_registration_errors(void **state) {
  (void)state;
  fx_t f = fx_new(0);
  assert_int_equal(weft_sys_lifetime(NULL, &f.std, 0, NULL), WEFT_EINVAL);
  assert_int_equal(weft_sys_lifetime(f.w, NULL, 0, NULL), WEFT_EINVAL);
  assert_int_equal(weft_sys_spawners(NULL, &f.std, 0, NULL), WEFT_EINVAL);
  assert_int_equal(weft_sys_spawners(f.w, NULL, 0, NULL), WEFT_EINVAL);
  /* An unknown phase. */
  assert_int_not_equal(weft_sys_lifetime(f.w, &f.std, 60, NULL), WEFT_OK);
  assert_int_not_equal(weft_sys_spawners(f.w, &f.std, 60, NULL), WEFT_OK);
  weft_system_t a = 0, b = 0;
  assert_int_equal(weft_sys_lifetime(f.w, &f.std, 0, &a), WEFT_OK);
  assert_int_equal(weft_sys_spawners(f.w, &f.std, 0, &b), WEFT_OK);
  weft_system_t id = 0;
  assert_int_equal(weft_system_lookup(f.w, "weft.lifetime", &id), WEFT_OK);
  assert_int_equal(id, a);
  assert_int_equal(weft_system_lookup(f.w, "weft.spawners", &id), WEFT_OK);
  assert_int_equal(id, b);
  weft_system_info_t info;
  assert_int_equal(weft_system_info(f.w, b, &info), WEFT_OK);
  assert_int_equal(info.phase, WEFT_PHASE_FIXED_UPDATE);
  /* Once per world. */
  assert_int_equal(weft_sys_lifetime(f.w, &f.std, 0, NULL), WEFT_EEXIST);
  assert_int_equal(weft_sys_spawners(f.w, &f.std, 0, NULL), WEFT_EEXIST);
  assert_non_null(strstr(weft_world_last_error(f.w), "'weft.spawners'"));
  fx_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lifetime_despawns_at_reference_tick),
      cmocka_unit_test(test_lifetime_spawners_fire_on_schedule),
      cmocka_unit_test(test_lifetime_dead_spawners_do_not_fire),
      cmocka_unit_test(test_lifetime_projectiles_expire),
      cmocka_unit_test(test_lifetime_same_on_one_and_two_workers),
      cmocka_unit_test(test_lifetime_registration_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
