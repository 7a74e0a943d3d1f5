/* SPDX-License-Identifier: MIT */
/*
 * stress_schedule.c: the system scheduler under load.
 *
 * 1. Determinism. A world of Pos, Vel, Health, Age and the tag Tagged
 *    (about 20k entities) runs 200 fixed ticks of parallel systems in
 *    FixedUpdate and PostFixedUpdate that move and age entities, draw
 *    counter-based random numbers (weft_sysctx_random) to spawn (with
 *    values, sometimes cancelled by a despawn of the pending handle),
 *    despawn, add and remove Tagged and Health, set values, emit events to
 *    two channels that later systems consume into resources, skip chunks
 *    whose Vel did not change, draw from a world random stream in a
 *    main-thread system and in a worker task serialized with it by a
 *    declared resource write, and spawn immigrants from an exclusive
 *    system. Jobs are small (batch 512, inline_rows 1) so the pool really
 *    dispatches; old lottery picks are tagged again 64 ticks later, by
 *    then sometimes dead (stale commands). The same program runs without a
 *    pool and with pools of 1, 2, 3, 4 and 8 workers, 4 workers with the
 *    caller participating, 4 workers on a synthetic two-node machine
 *    (chunks homed on two nodes, so the jobs are cut differently) and 3
 *    workers with the default inline_rows (small segments run serially,
 *    small systems where they are launched), and 2 with the default while
 *    two systems' measured costs cross the inline threshold back and
 *    forth (so some of their runs go inline, others to the pool); the
 *    digest at ticks 50, 100, 150 and 200, the resources, the world's
 *    counters and the commands recorded must be identical in every run.
 * 2. Conflicts at run time. Forty small systems with random (declared)
 *    access sets over eight components and three resources, all including
 *    a common component so no two queries are provably disjoint, some on
 *    the main thread, some tasks, some recording structural commands, some
 *    with explicit before/after edges, run 300 frames on 4 workers. Each
 *    callback writes what it declares writing and reads what it declares
 *    reading; a shared atomic checker per component and resource fails
 *    when a write overlaps any other system's access. Every conflicting
 *    pair must have an edge, and a global sequence number per callback
 *    entry and exit proves every edge a -> b was honoured (a's last exit
 *    before b's first entry in the frame).
 * 3. Churn. Systems are registered, removed, enabled and disabled between
 *    frames (and registered from a main-thread callback during frames) for
 *    200 frames on a pool; a disabled or removed system never runs and an
 *    enabled one runs exactly once per frame.
 * 4. Registration during a frame while a task on a worker calls
 *    weft_sysctx_count(): the registration grows the system table under
 *    the call, which must not read it (TSan, ASan).
 *
 * Runtimes on two cores: about 10 s in Debug, 20 s under ASan, 60 s under
 * TSan; sanitizer builds (WEFT_SYSTEM_MALLOC) halve test 2's world.
 * WEFT_SCHED_ENTITIES overrides test 1's initial population (20000).
 *
 * A regression test among them: test 3's gate holds a job inside its
 * callback while a main-thread system registers enough systems to grow the
 * system table; before successors were kept by pointer, the worker then
 * read the table the registration had just freed (TSan: data race in
 * complete() against weft_system_register()'s realloc).
 */
#include "support/weft_test.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#ifdef WEFT_SYSTEM_MALLOC
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 31);
}

static weft_pool_t *make_pool(uint32_t workers, bool caller,
                              const char *synthetic) {
  weft_pool_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.placement.workers = workers;
  cfg.placement.caller_participates = caller;
  cfg.synthetic = synthetic;
  weft_pool_t *p = NULL;
  assert_int_equal(weft_pool_create(&cfg, &p), WEFT_OK);
  assert_non_null(p);
  return p;
}

static weft_system_t reg(weft_world_t *w, const weft_system_desc_t *d) {
  weft_system_t id = 0;
  int rc = weft_system_register(w, d, &id);
  if (rc != WEFT_OK)
    print_error("registering %s: %s\n", d->name, weft_world_last_error(w));
  assert_int_equal(rc, WEFT_OK);
  assert_int_not_equal(id, 0);
  return id;
}

/* ======================================================================== */
/* 1. Determinism across thread counts                                      */
/* ======================================================================== */

#define TICKS 200u
#define CHECKPOINTS 4u /* digests at ticks 50, 100, 150, 200 */
#define WORLD_TAG 0x3c
#define BATCH 512u

typedef struct vec2_t {
  float x, y;
} vec2_t;

typedef struct health_t {
  int32_t hp, max;
} health_t;

typedef struct age_t {
  uint32_t ticks, gen;
} age_t;

typedef struct death_ev_t {
  uint64_t entity;
  uint32_t age, cause;
  float x, y;
} death_ev_t;

typedef struct tag_ev_t {
  uint64_t entity;
  int32_t hp;
  uint32_t on;
} tag_ev_t;

/* FixedUpdate's obituary writes it. */
typedef struct ledger_t {
  uint64_t deaths, age_sum, hash;
  uint64_t batches; /* ticks that saw deaths */
} ledger_t;

/* PostFixedUpdate's census writes it. */
typedef struct census_t {
  uint64_t deaths, starved, tags_on, tags_off, hash;
} census_t;

/* The main-thread lottery and the jackpot task write it. */
typedef struct lotto_t {
  uint64_t draws, hash, sets, jackpots;
  uint64_t pick;     /* the lottery's latest pick */
  uint64_t old[64];  /* one pick per tick, tagged again 64 ticks later */
  uint64_t revisits; /* commands naming old picks (some stale by then) */
} lotto_t;

/* Commands recorded by the callbacks (summed over workers). */
enum {
  K_SPAWN,
  K_CANCEL,
  K_DESPAWN,
  K_ADD,
  K_REMOVE,
  K_SET,
  K_EMIT,
  K_IMMIGRANT,
  NK
};

/* Random streams for weft_sysctx_random. */
enum { S_LIFE = 1, S_TAG, S_HEAL, S_REGROW, S_VEL, S_IMMIGRANT };

typedef struct det_t {
  weft_world_t *w;
  weft_component_t pos, vel, health, tagged, age;
  weft_resource_t r_ledger, r_census, r_lotto;
  weft_channel_t ch_death, ch_tag;
  weft_rng_t *rng; /* the world stream "lottery" */
  ledger_t *ledger;
  census_t *census;
  lotto_t *lotto;
  _Atomic uint64_t counts[NK];
  _Atomic uint32_t errors;
  bool stall; /* jackpot and heal stall on some ticks (costs change) */
} det_t;

typedef struct det_result_t {
  uint64_t digest[CHECKPOINTS];
  ledger_t ledger;
  census_t census;
  lotto_t lotto;
  uint64_t counts[NK];
  uint32_t alive;
  uint64_t spawns, despawns, moves, commands, commands_stale;
  uint64_t sync_points, jobs;
  double seconds;
} det_result_t;

static det_t *det_of(const weft_sysctx_t *ctx) {
  return ctx->user;
}

static void count(det_t *d, uint32_t k, uint64_t n) {
  atomic_fetch_add_explicit(&d->counts[k], n, memory_order_relaxed);
}

static double rnd(const weft_sysctx_t *ctx, weft_entity_t e, uint32_t stream,
                  uint32_t n) {
  return (double)(weft_sysctx_random(ctx, e, stream, n) >> 11) * 0x1.0p-53;
}

/* With d->stall, spins for @p us microseconds on ticks 16..31 of every 32
 * (and never on the others): the systems' measured costs then cross the
 * inline threshold both ways, so that some runs go inline and others to
 * the pool, which must not change any result. */
static void det_stall(const det_t *d, uint64_t tick, double us) {
  if (!d->stall || tick % 32 < 16)
    return;
  double t0 = wt_now_s();
  while ((wt_now_s() - t0) * 1e6 < us) {
  }
}

static int det_fail(det_t *d) {
  atomic_fetch_add_explicit(&d->errors, 1, memory_order_relaxed);
  return WEFT_EINVAL;
}

/* FixedUpdate: Pos += Vel * dt, wrapped into [-100, 100). */
static int sys_move(weft_sysctx_t *ctx, const weft_iter_t *it) {
  vec2_t *p = weft_iter_column(it, 0);
  const vec2_t *v = weft_iter_column(it, 1);
  float dt = (float)ctx->dt;
  for (uint32_t i = 0; i < it->count; i++) {
    p[i].x += v[i].x * dt;
    p[i].y += v[i].y * dt;
    if (p[i].x >= 100.0f)
      p[i].x -= 200.0f;
    if (p[i].x < -100.0f)
      p[i].x += 200.0f;
    if (p[i].y >= 100.0f)
      p[i].y -= 200.0f;
    if (p[i].y < -100.0f)
      p[i].y += 200.0f;
  }
  return 0;
}

static int sys_age(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)ctx;
  age_t *a = weft_iter_column(it, 0);
  for (uint32_t i = 0; i < it->count; i++)
    a[i].ticks++;
  return 0;
}

/* FixedUpdate: deaths (despawn + event) and births (spawn with values). */
static int sys_life(weft_sysctx_t *ctx, const weft_iter_t *it) {
  det_t *d = det_of(ctx);
  const age_t *a = weft_iter_column(it, 0);
  const vec2_t *p = weft_iter_column(it, 1);
  const vec2_t *v = weft_iter_column(it, 2);
  if (!a || !p || !v)
    return det_fail(d);
  for (uint32_t i = 0; i < it->count; i++) {
    weft_entity_t e = it->entities[i];
    double u = rnd(ctx, e, S_LIFE, 0);
    double die = a[i].ticks > 300 ? 0.01 : 0.002;
    if (u < die) {
      death_ev_t ev = {e, a[i].ticks, 0, p[i].x, p[i].y};
      if (weft_cmd_despawn(ctx->cmd, e) != WEFT_OK ||
          weft_sysctx_emit(ctx, d->ch_death, &ev) != WEFT_OK)
        return det_fail(d);
      count(d, K_DESPAWN, 1);
      count(d, K_EMIT, 1);
      continue;
    }
    if (u < die + 0.004) {
      uint64_t r = weft_sysctx_random(ctx, e, S_LIFE, 1);
      vec2_t vel = {v[i].y + (float)(int)(r & 15) - 7.5f,
                    -v[i].x + (float)(int)(r >> 4 & 15) - 7.5f};
      age_t age = {0, a[i].gen + 1};
      health_t hp = {40 + (int32_t)(r >> 8 & 63), 100};
      bool tag = (r >> 16 & 3) == 0;
      weft_component_t comps[6] = {d->pos, d->vel, d->age, d->health, 0, 0};
      const void *vals[5] = {&p[i], &vel, &age, &hp, NULL};
      if (tag)
        comps[4] = d->tagged;
      weft_entity_t child = WEFT_ENTITY_NULL;
      if (weft_cmd_spawn(ctx->cmd, comps, vals, &child) != WEFT_OK ||
          !weft_entity_is_pending(child))
        return det_fail(d);
      count(d, K_SPAWN, 1);
      if ((r >> 20 & 15) == 0) { /* a stillbirth: the spawn is cancelled */
        if (weft_cmd_despawn(ctx->cmd, child) != WEFT_OK)
          return det_fail(d);
        count(d, K_CANCEL, 1);
      } else if ((r >> 24 & 7) == 0) { /* and it is tagged right away */
        if (weft_cmd_add(ctx->cmd, child, d->tagged, NULL) != WEFT_OK)
          return det_fail(d);
        count(d, K_ADD, 1);
      }
    }
  }
  return 0;
}

/* FixedUpdate: untagged entities with Health get tagged now and then. */
static int sys_tag_on(weft_sysctx_t *ctx, const weft_iter_t *it) {
  det_t *d = det_of(ctx);
  const health_t *h = weft_iter_column(it, 0);
  for (uint32_t i = 0; i < it->count; i++) {
    weft_entity_t e = it->entities[i];
    if (rnd(ctx, e, S_TAG, 0) < 0.01) {
      tag_ev_t ev = {e, h[i].hp, 1};
      if (weft_cmd_add(ctx->cmd, e, d->tagged, NULL) != WEFT_OK ||
          weft_sysctx_emit(ctx, d->ch_tag, &ev) != WEFT_OK)
        return det_fail(d);
      count(d, K_ADD, 1);
      count(d, K_EMIT, 1);
    }
  }
  return 0;
}

/* FixedUpdate: tagged entities lose the tag, or their Health. */
static int sys_tag_off(weft_sysctx_t *ctx, const weft_iter_t *it) {
  det_t *d = det_of(ctx);
  const health_t *h = weft_iter_column(it, 0);
  for (uint32_t i = 0; i < it->count; i++) {
    weft_entity_t e = it->entities[i];
    double u = rnd(ctx, e, S_TAG, 1);
    if (u < 0.02) {
      tag_ev_t ev = {e, h[i].hp, 0};
      if (weft_cmd_remove(ctx->cmd, e, d->tagged) != WEFT_OK ||
          weft_sysctx_emit(ctx, d->ch_tag, &ev) != WEFT_OK)
        return det_fail(d);
      count(d, K_REMOVE, 1);
      count(d, K_EMIT, 1);
    } else if (u < 0.03) {
      if (weft_cmd_remove(ctx->cmd, e, d->health) != WEFT_OK)
        return det_fail(d);
      count(d, K_REMOVE, 1);
    }
  }
  return 0;
}

/* FixedUpdate: tagged entities heal; some are set back to full health. */
static int sys_heal(weft_sysctx_t *ctx, const weft_iter_t *it) {
  det_t *d = det_of(ctx);
  health_t *h = weft_iter_column(it, 0);
  if (it->count)
    det_stall(d, ctx->tick, 2.0);
  for (uint32_t i = 0; i < it->count; i++) {
    if (h[i].hp < h[i].max)
      h[i].hp++;
    weft_entity_t e = it->entities[i];
    if (rnd(ctx, e, S_HEAL, 0) < 0.01) {
      health_t full = {h[i].max, h[i].max + 1};
      if (weft_cmd_set(ctx->cmd, e, d->health, &full) != WEFT_OK)
        return det_fail(d);
      count(d, K_SET, 1);
    }
  }
  return 0;
}

/* FixedUpdate: entities without Health grow it back. */
static int sys_regrow(weft_sysctx_t *ctx, const weft_iter_t *it) {
  det_t *d = det_of(ctx);
  for (uint32_t i = 0; i < it->count; i++) {
    weft_entity_t e = it->entities[i];
    if (rnd(ctx, e, S_REGROW, 0) < 0.05) {
      health_t h = {10, 80};
      if (weft_cmd_add(ctx->cmd, e, d->health, &h) != WEFT_OK)
        return det_fail(d);
      count(d, K_ADD, 1);
    }
  }
  return 0;
}

/* FixedUpdate: tagged entities turn; some get a new velocity by command. */
static int sys_steer(weft_sysctx_t *ctx, const weft_iter_t *it) {
  det_t *d = det_of(ctx);
  vec2_t *v = weft_iter_column(it, 0);
  for (uint32_t i = 0; i < it->count; i++) {
    vec2_t t = {-v[i].y * 0.999f, v[i].x * 0.999f};
    v[i] = t;
    weft_entity_t e = it->entities[i];
    uint64_t r = weft_sysctx_random(ctx, e, S_VEL, 0);
    if ((r & 127) == 0) {
      vec2_t nv = {(float)(int)(r >> 8 & 31) - 15.5f,
                   (float)(int)(r >> 16 & 31) - 15.5f};
      if (weft_cmd_set(ctx->cmd, e, d->vel, &nv) != WEFT_OK)
        return det_fail(d);
      count(d, K_SET, 1);
    }
  }
  return 0;
}

/* FixedUpdate task, after a sync point: the deaths of this tick. */
static int sys_obituary(weft_sysctx_t *ctx, const weft_iter_t *it) {
  det_t *d = det_of(ctx);
  if (it != NULL)
    return det_fail(d);
  uint32_t n = 0;
  const death_ev_t *ev = weft_event_read(ctx->world, d->ch_death, &n);
  if (n)
    d->ledger->batches++;
  for (uint32_t i = 0; i < n; i++) {
    d->ledger->deaths++;
    d->ledger->age_sum += ev[i].age;
    d->ledger->hash = mix(d->ledger->hash, ev[i].entity);
    d->ledger->hash =
        mix(d->ledger->hash, ev[i].age ^ (uint64_t)ctx->tick << 32);
  }
  return 0;
}

/* FixedUpdate, main thread: one draw of the world stream per chunk, in
 * chunk order; sometimes sets the Health of the row it picked. */
static int sys_lottery(weft_sysctx_t *ctx, const weft_iter_t *it) {
  det_t *d = det_of(ctx);
  uint64_t r = weft_rng_next(d->rng);
  d->lotto->draws++;
  d->lotto->hash = mix(d->lotto->hash, r ^ it->count);
  if ((r >> 32 & 3) == 0) {
    uint32_t row = (uint32_t)(r % it->count);
    health_t h = {1 + (int32_t)(r >> 40 & 63), 100};
    if (weft_cmd_set(ctx->cmd, it->entities[row], d->health, &h) != WEFT_OK)
      return det_fail(d);
    d->lotto->pick = it->entities[row];
    d->lotto->sets++;
    count(d, K_SET, 1);
  }
  return 0;
}

/* FixedUpdate task on a worker: draws from the same stream, serialized
 * with the lottery by their declared writes of the lotto resource. */
static int sys_jackpot(weft_sysctx_t *ctx, const weft_iter_t *it) {
  det_t *d = det_of(ctx);
  if (it != NULL)
    return det_fail(d);
  det_stall(d, ctx->tick, 300.0);
  uint32_t k = weft_rng_below(d->rng, 4);
  for (uint32_t i = 0; i <= k; i++)
    d->lotto->hash = mix(d->lotto->hash, weft_rng_next(d->rng));
  d->lotto->jackpots += k;
  /* An old pick is tagged again: it may have died since (a stale
   * command). */
  uint64_t *old = &d->lotto->old[ctx->tick % 64];
  if (*old) {
    if (weft_cmd_add(ctx->cmd, *old, d->tagged, NULL) != WEFT_OK)
      return det_fail(d);
    d->lotto->revisits++;
    count(d, K_ADD, 1);
  }
  *old = d->lotto->pick;
  return 0;
}

/* PostFixedUpdate: chunks whose Vel changed drift a little more. */
static int sys_drift(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)ctx;
  vec2_t *p = weft_iter_column(it, 0);
  const vec2_t *v = weft_iter_column(it, 1);
  for (uint32_t i = 0; i < it->count; i++) {
    p[i].x += v[i].x * 0.001f;
    p[i].y += v[i].y * 0.001f;
  }
  return 0;
}

/* PostFixedUpdate: the hazard zone (x > 40) hurts. */
static int sys_hazard(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)ctx;
  health_t *h = weft_iter_column(it, 0);
  const vec2_t *p = weft_iter_column(it, 1);
  for (uint32_t i = 0; i < it->count; i++)
    if (p[i].x > 40.0f)
      h[i].hp -= 2;
  return 0;
}

/* PostFixedUpdate: entities out of health die. */
static int sys_reaper(weft_sysctx_t *ctx, const weft_iter_t *it) {
  det_t *d = det_of(ctx);
  const health_t *h = weft_iter_column(it, 0);
  const age_t *a = weft_iter_column(it, 1);
  for (uint32_t i = 0; i < it->count; i++) {
    if (h[i].hp > 0)
      continue;
    weft_entity_t e = it->entities[i];
    death_ev_t ev = {e, a[i].ticks, 1, 0, 0};
    if (weft_cmd_despawn(ctx->cmd, e) != WEFT_OK ||
        weft_sysctx_emit(ctx, d->ch_death, &ev) != WEFT_OK)
      return det_fail(d);
    count(d, K_DESPAWN, 1);
    count(d, K_EMIT, 1);
  }
  return 0;
}

/* PostFixedUpdate task: both channels, in publication order. */
static int sys_census(weft_sysctx_t *ctx, const weft_iter_t *it) {
  det_t *d = det_of(ctx);
  if (it != NULL)
    return det_fail(d);
  census_t *c = d->census;
  uint32_t n = 0;
  const death_ev_t *dv = weft_event_read(ctx->world, d->ch_death, &n);
  for (uint32_t i = 0; i < n; i++) {
    if (dv[i].cause)
      c->starved++;
    else
      c->deaths++;
    c->hash = mix(c->hash, dv[i].entity ^ (uint64_t)dv[i].cause << 63);
  }
  const tag_ev_t *tv = weft_event_read(ctx->world, d->ch_tag, &n);
  for (uint32_t i = 0; i < n; i++) {
    if (tv[i].on)
      c->tags_on++;
    else
      c->tags_off++;
    c->hash = mix(c->hash, tv[i].entity + (uint64_t)(uint32_t)tv[i].hp);
  }
  return 0;
}

/* PostFixedUpdate, exclusive: every 20 ticks a wave of immigrants, spawned
 * directly. */
static int sys_immigration(weft_sysctx_t *ctx, const weft_iter_t *it) {
  det_t *d = det_of(ctx);
  if (it != NULL || ctx->tick % 20 != 10)
    return it != NULL ? det_fail(d) : 0;
  uint64_t seed = weft_random_world_seed(ctx->world);
  weft_component_t comps[] = {d->pos, d->vel, d->age, d->health, 0};
  for (uint32_t i = 0; i < 64; i++) {
    uint64_t r = weft_random_at(seed, i, ctx->tick, S_IMMIGRANT, 0);
    vec2_t p = {-100.0f + (float)(r & 1023) * 0.125f, -90.0f};
    vec2_t v = {(float)(int)(r >> 10 & 31) - 15.5f, 5.0f};
    age_t a = {(uint32_t)(r >> 20 & 63), 0};
    health_t h = {100, 100};
    const void *vals[] = {&p, &v, &a, &h};
    weft_entity_t e;
    if (weft_spawn_with(ctx->world, comps, vals, &e) != WEFT_OK)
      return det_fail(d);
  }
  count(d, K_IMMIGRANT, 64);
  return 0;
}

static void det_fill(void *user, const weft_iter_t *view, uint32_t first) {
  (void)user;
  /* comps: pos, vel, age, health */
  vec2_t *p = view->columns[0];
  vec2_t *v = view->columns[1];
  age_t *a = view->columns[2];
  health_t *h = view->columns[3];
  for (uint32_t i = 0; i < view->count; i++) {
    uint64_t r = weft_random_at(42, first + i, 0, 99, 0);
    p[i].x = -100.0f + (float)(r & 0xffff) * (200.0f / 65536.0f);
    p[i].y = -100.0f + (float)(r >> 16 & 0xffff) * (200.0f / 65536.0f);
    v[i].x = (float)(int)(r >> 32 & 63) * 0.5f - 16.0f;
    v[i].y = (float)(int)(r >> 38 & 63) * 0.5f - 16.0f;
    a[i].ticks = (uint32_t)(r >> 44 & 255);
    a[i].gen = 0;
    h[i].hp = 20 + (int32_t)(r >> 52 & 63);
    h[i].max = 100;
  }
}

static uint32_t det_entities(void) {
  const char *s = getenv("WEFT_SCHED_ENTITIES");
  long v = s ? strtol(s, NULL, 10) : 0;
  if (v > 0 && v < 10000000)
    return (uint32_t)v;
  return 20000u;
}

static void det_setup(det_t *d, weft_pool_t *pool, uint32_t entities,
                      uint32_t inline_rows) {
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.world_tag = WORLD_TAG;
  cfg.chunk_size = 4096;
  cfg.pool = pool;
  d->w = wt_world_new(&cfg);
  weft_world_t *w = d->w;
  d->pos = wt_register(w, "Pos", sizeof(vec2_t), 4);
  d->vel = wt_register(w, "Vel", sizeof(vec2_t), 4);
  d->health = wt_register(w, "Health", sizeof(health_t), 4);
  d->tagged = wt_register_tag(w, "Tagged");
  d->age = wt_register(w, "Age", sizeof(age_t), 4);
  assert_int_equal(weft_resource_register(w, "ledger", sizeof(ledger_t), 0,
                                          NULL, &d->r_ledger),
                   WEFT_OK);
  assert_int_equal(weft_resource_register(w, "census", sizeof(census_t), 0,
                                          NULL, &d->r_census),
                   WEFT_OK);
  assert_int_equal(
      weft_resource_register(w, "lotto", sizeof(lotto_t), 0, NULL, &d->r_lotto),
      WEFT_OK);
  d->ledger = weft_resource_get(w, d->r_ledger);
  d->census = weft_resource_get(w, d->r_census);
  d->lotto = weft_resource_get(w, d->r_lotto);
  assert_int_equal(
      weft_channel_register(w, "death", sizeof(death_ev_t), &d->ch_death),
      WEFT_OK);
  assert_int_equal(
      weft_channel_register(w, "tag", sizeof(tag_ev_t), &d->ch_tag), WEFT_OK);
  assert_int_equal(weft_random_stream(w, "lottery", &d->rng), WEFT_OK);

  weft_component_t comps[] = {d->pos, d->vel, d->age, d->health, 0};
  assert_int_equal(weft_spawn_batch(w, entities, comps, det_fill, NULL, NULL),
                   WEFT_OK);
  /* A fifth of them tagged, a tenth without Health. */
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = d->pos;
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(w, &qd, &q), WEFT_OK);
  weft_entity_t *all = malloc(sizeof(*all) * entities);
  assert_non_null(all);
  uint32_t n = 0;
  weft_iter_t it;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it))
    for (uint32_t i = 0; i < it.count; i++)
      all[n++] = it.entities[i];
  assert_int_equal(n, entities);
  for (uint32_t i = 0; i < n; i++) {
    if (i % 5 == 1)
      assert_int_equal(weft_add(w, all[i], d->tagged, NULL), WEFT_OK);
    if (i % 10 == 3)
      assert_int_equal(weft_remove(w, all[i], d->health), WEFT_OK);
  }
  free(all);
  weft_query_destroy(q);

  weft_pipeline_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.fixed_dt = 1.0 / 60.0;
  pc.inline_rows = inline_rows;
  assert_int_equal(weft_pipeline_configure(w, &pc), WEFT_OK);

  /* FixedUpdate, in registration order. */
  weft_system_desc_t s;
#define SYS_BEGIN(nm, fn)                                                      \
  memset(&s, 0, sizeof s);                                                     \
  s.name = nm;                                                                 \
  s.run = fn;                                                                  \
  s.user = d;                                                                  \
  s.batch = BATCH;                                                             \
  s.phase = WEFT_PHASE_FIXED_UPDATE

  SYS_BEGIN("move", sys_move);
  s.query.include[0] = d->pos;
  s.query.include[1] = d->vel;
  s.term_access[0] = WEFT_ACCESS_WRITE;
  s.term_access[1] = WEFT_ACCESS_READ;
  reg(w, &s);

  SYS_BEGIN("age", sys_age);
  s.query.include[0] = d->age;
  s.term_access[0] = WEFT_ACCESS_WRITE;
  reg(w, &s);

  SYS_BEGIN("life", sys_life);
  s.query.include[0] = d->age;
  s.query.include[1] = d->pos;
  s.query.include[2] = d->vel;
  s.term_access[0] = WEFT_ACCESS_READ;
  s.term_access[1] = WEFT_ACCESS_READ;
  s.term_access[2] = WEFT_ACCESS_READ;
  s.cmd_write[0] = d->pos;
  s.cmd_write[1] = d->vel;
  s.cmd_write[2] = d->age;
  s.cmd_write[3] = d->health;
  s.cmd_write[4] = d->tagged;
  s.emit[0] = d->ch_death;
  s.flags = WEFT_SYSTEM_DESPAWNS;
  reg(w, &s);

  SYS_BEGIN("tag_on", sys_tag_on);
  s.query.include[0] = d->health;
  s.query.exclude[0] = d->tagged;
  s.term_access[0] = WEFT_ACCESS_READ;
  s.cmd_write[0] = d->tagged;
  s.emit[0] = d->ch_tag;
  reg(w, &s);

  SYS_BEGIN("tag_off", sys_tag_off);
  s.query.include[0] = d->health;
  s.query.include[1] = d->tagged;
  s.term_access[0] = WEFT_ACCESS_READ;
  s.term_access[1] = WEFT_ACCESS_NONE;
  s.cmd_write[0] = d->tagged;
  s.cmd_write[1] = d->health;
  s.emit[0] = d->ch_tag;
  reg(w, &s);

  SYS_BEGIN("heal", sys_heal);
  s.query.include[0] = d->health;
  s.query.include[1] = d->tagged;
  s.term_access[0] = WEFT_ACCESS_WRITE;
  s.term_access[1] = WEFT_ACCESS_NONE;
  s.cmd_write[0] = d->health;
  reg(w, &s);

  SYS_BEGIN("regrow", sys_regrow);
  s.query.include[0] = d->pos;
  s.query.exclude[0] = d->health;
  s.term_access[0] = WEFT_ACCESS_NONE;
  s.cmd_write[0] = d->health;
  reg(w, &s);

  SYS_BEGIN("steer", sys_steer);
  s.query.include[0] = d->vel;
  s.query.include[1] = d->tagged;
  s.term_access[0] = WEFT_ACCESS_WRITE;
  s.term_access[1] = WEFT_ACCESS_NONE;
  s.cmd_write[0] = d->vel;
  reg(w, &s);

  SYS_BEGIN("obituary", sys_obituary);
  s.receive[0] = d->ch_death;
  s.res_write[0] = d->r_ledger;
  reg(w, &s);

  SYS_BEGIN("lottery", sys_lottery);
  s.query.include[0] = d->health;
  s.term_access[0] = WEFT_ACCESS_NONE;
  s.res_write[0] = d->r_lotto;
  s.cmd_write[0] = d->health;
  s.flags = WEFT_SYSTEM_MAIN_THREAD;
  reg(w, &s);

  SYS_BEGIN("jackpot", sys_jackpot);
  s.res_write[0] = d->r_lotto;
  reg(w, &s);

  /* PostFixedUpdate. */
  SYS_BEGIN("drift", sys_drift);
  s.phase = WEFT_PHASE_POST_FIXED_UPDATE;
  s.query.include[0] = d->pos;
  s.query.include[1] = d->vel;
  s.term_access[0] = WEFT_ACCESS_WRITE;
  s.term_access[1] = WEFT_ACCESS_READ;
  s.changed[0] = d->vel;
  reg(w, &s);

  SYS_BEGIN("hazard", sys_hazard);
  s.phase = WEFT_PHASE_POST_FIXED_UPDATE;
  s.query.include[0] = d->health;
  s.query.include[1] = d->pos;
  s.term_access[0] = WEFT_ACCESS_WRITE;
  s.term_access[1] = WEFT_ACCESS_READ;
  reg(w, &s);

  SYS_BEGIN("reaper", sys_reaper);
  s.phase = WEFT_PHASE_POST_FIXED_UPDATE;
  s.query.include[0] = d->health;
  s.query.include[1] = d->age;
  s.term_access[0] = WEFT_ACCESS_READ;
  s.term_access[1] = WEFT_ACCESS_READ;
  s.emit[0] = d->ch_death;
  s.flags = WEFT_SYSTEM_DESPAWNS;
  reg(w, &s);

  SYS_BEGIN("census", sys_census);
  s.phase = WEFT_PHASE_POST_FIXED_UPDATE;
  s.receive[0] = d->ch_death;
  s.receive[1] = d->ch_tag;
  s.res_write[0] = d->r_census;
  reg(w, &s);

  SYS_BEGIN("immigration", sys_immigration);
  s.phase = WEFT_PHASE_POST_FIXED_UPDATE;
  s.flags = WEFT_SYSTEM_EXCLUSIVE;
  reg(w, &s);
#undef SYS_BEGIN

  assert_int_equal(weft_schedule_build(w), WEFT_OK);
}

/* The schedule the declarations must produce: edges and sync points. */
static void det_check_schedule(det_t *d) {
  weft_world_t *w = d->w;
  weft_system_t id[32];
  const char *names[] = {"move",     "age",     "life",    "tag_on",
                         "tag_off",  "heal",    "regrow",  "steer",
                         "obituary", "lottery", "jackpot", "drift",
                         "hazard",   "reaper",  "census",  "immigration"};
  enum {
    MOVE,
    AGE,
    LIFE,
    TAG_ON,
    TAG_OFF,
    HEAL,
    REGROW,
    STEER,
    OBIT,
    LOTTERY,
    JACKPOT,
    DRIFT,
    HAZARD,
    REAPER,
    CENSUS,
    IMMIGRATION,
    NSYS
  };
  weft_system_info_t info[NSYS];
  for (uint32_t i = 0; i < NSYS; i++) {
    assert_int_equal(weft_system_lookup(w, names[i], &id[i]), WEFT_OK);
    assert_int_equal(weft_system_info(w, id[i], &info[i]), WEFT_OK);
  }
  /* Conflicts: move writes Pos that life reads; age writes Age. */
  assert_true(weft_system_edge(w, id[MOVE], id[LIFE]));
  assert_true(weft_system_edge(w, id[AGE], id[LIFE]));
  /* heal writes Health that tag_on reads, but their queries are disjoint
   * (Tagged required / excluded); tag_off reads it and is not. */
  assert_false(weft_system_edge(w, id[TAG_ON], id[HEAL]));
  assert_true(weft_system_edge(w, id[TAG_OFF], id[HEAL]));
  /* Events: emitter -> receiver, with a sync point between. */
  assert_true(weft_system_edge(w, id[LIFE], id[OBIT]));
  assert_true(info[OBIT].segment > info[LIFE].segment);
  assert_true(weft_system_edge(w, id[REAPER], id[CENSUS]));
  assert_true(info[CENSUS].segment > info[REAPER].segment);
  /* tag_off's commands change Health, which heal touches. */
  assert_true(info[HEAL].segment > info[TAG_OFF].segment);
  /* The two stream users are serialized by the resource. */
  assert_true(weft_system_edge(w, id[LOTTERY], id[JACKPOT]));
  /* Independent systems share the first segment. */
  assert_int_equal(info[MOVE].segment, 0);
  assert_int_equal(info[AGE].segment, 0);
  assert_int_equal(info[TAG_ON].segment, 0);
  assert_false(weft_system_edge(w, id[MOVE], id[AGE]));
  assert_false(weft_system_edge(w, id[AGE], id[MOVE]));
  assert_true(info[IMMIGRATION].exclusive);
}

static void det_run(uint32_t workers, bool caller, const char *synthetic,
                    uint32_t inline_rows, bool stall, det_result_t *res) {
  weft_pool_t *pool =
      workers ? make_pool(workers, caller, synthetic) : (weft_pool_t *)NULL;
  det_t *d = calloc(1, sizeof(*d));
  assert_non_null(d);
  d->stall = stall;
  uint32_t entities = det_entities();
  det_setup(d, pool, entities, inline_rows);
  if (workers == 0 && !caller)
    det_check_schedule(d);
  memset(res, 0, sizeof(*res));
  double t0 = wt_now_s();
  for (uint32_t t = 1; t <= TICKS; t++) {
    int rc = weft_world_progress(d->w, 1.0 / 60.0);
    if (rc != WEFT_OK)
      print_error("tick %u: %s\n", t, weft_world_last_error(d->w));
    assert_int_equal(rc, WEFT_OK);
    assert_int_equal(atomic_load(&d->errors), 0);
    if (t % (TICKS / CHECKPOINTS) == 0)
      res->digest[t / (TICKS / CHECKPOINTS) - 1] = weft_world_digest(d->w);
  }
  res->seconds = wt_now_s() - t0;
  weft_pipeline_state_t ps;
  weft_pipeline_state(d->w, &ps);
  assert_int_equal(ps.tick, TICKS);
  assert_int_equal(ps.frames, TICKS);
  res->sync_points = ps.sync_points;
  res->ledger = *d->ledger;
  res->census = *d->census;
  res->lotto = *d->lotto;
  for (uint32_t k = 0; k < NK; k++)
    res->counts[k] = atomic_load(&d->counts[k]);
  weft_world_stats_t st = wt_stats(d->w);
  res->alive = st.alive;
  res->spawns = st.spawns;
  res->despawns = st.despawns;
  res->moves = st.moves;
  res->commands = st.commands;
  res->commands_stale = st.commands_stale;
  assert_int_equal(st.commands_dropped, 0);
  weft_system_t ids[64];
  uint32_t n = weft_phase_systems(d->w, WEFT_PHASE_FIXED_UPDATE, ids, 64);
  n += weft_phase_systems(d->w, WEFT_PHASE_POST_FIXED_UPDATE, ids + n, 64 - n);
  for (uint32_t i = 0; i < n; i++) {
    weft_system_stats_t ss;
    assert_int_equal(weft_system_stats(d->w, ids[i], &ss), WEFT_OK);
    assert_int_equal(ss.runs, TICKS);
    res->jobs += ss.jobs;
  }
  weft_world_destroy(d->w);
  free(d);
  weft_pool_destroy(pool);
}

static void det_print(const char *what, const det_result_t *r) {
  print_message(
      "%-18s %6.2f s  digest %016llx  alive %u  spawns %llu  despawns %llu  "
      "moves %llu  commands %llu (stale %llu)  syncs %llu  jobs %llu\n",
      what, r->seconds, (unsigned long long)r->digest[CHECKPOINTS - 1],
      r->alive, (unsigned long long)r->spawns, (unsigned long long)r->despawns,
      (unsigned long long)r->moves, (unsigned long long)r->commands,
      (unsigned long long)r->commands_stale, (unsigned long long)r->sync_points,
      (unsigned long long)r->jobs);
}

static void test_schedule_deterministic_across_pools(void **state) {
  (void)state;
  static const struct {
    const char *name;
    uint32_t workers;
    bool caller;
    const char *synthetic;
    uint32_t inline_rows; /* 0: the default; else 1, so that pools dispatch */
    bool stall;
  } runs[] = {
      {"no pool", 0, false, NULL, 1, false},
      {"1 worker", 1, false, NULL, 1, false},
      {"2 workers", 2, false, NULL, 1, false},
      {"3 workers", 3, false, NULL, 1, false},
      {"4 workers", 4, false, NULL, 1, false},
      {"8 workers", 8, false, NULL, 1, false},
      {"4 with caller", 4, true, NULL, 1, false},
      {"4 on two nodes", 4, false, "pack:1 numa:2 l3:1 core:2 pu:1", 1, false},
      /* Small segments run serially, small systems where launched. */
      {"3, inline default", 3, false, NULL, 0, false},
      /* The same while measured costs come and go. */
      {"2, costs change", 2, false, NULL, 0, true},
  };
  enum { NRUNS = sizeof runs / sizeof runs[0] };
  det_result_t res[NRUNS];
  for (uint32_t r = 0; r < NRUNS; r++) {
    det_run(runs[r].workers, runs[r].caller, runs[r].synthetic,
            runs[r].inline_rows, runs[r].stall, &res[r]);
    det_print(runs[r].name, &res[r]);
  }
  const det_result_t *base = &res[0];
  /* The world really changed. */
  assert_true(base->counts[K_SPAWN] > 1000);
  assert_true(base->counts[K_CANCEL] > 20);
  assert_true(base->counts[K_DESPAWN] > 1000);
  assert_true(base->counts[K_ADD] > 1000);
  assert_true(base->counts[K_REMOVE] > 500);
  assert_true(base->counts[K_SET] > 500);
  assert_true(base->counts[K_EMIT] > 1000);
  assert_true(base->spawns - det_entities() > 1000);
  assert_true(base->despawns > 1000);
  assert_true(base->moves > 1000);
  assert_true(base->ledger.deaths > 500);
  assert_true(base->census.starved > 50);
  assert_true(base->census.tags_on > 500 && base->census.tags_off > 200);
  assert_int_equal(base->census.deaths, base->ledger.deaths);
  assert_true(base->lotto.draws > TICKS && base->lotto.sets > 50);
  assert_true(base->lotto.jackpots > 0 && base->lotto.revisits > 100);
  assert_true(base->commands_stale > 0);
  assert_int_equal(base->jobs, 0);
  for (uint32_t r = 1; r < NRUNS; r++) {
    const det_result_t *x = &res[r];
    for (uint32_t c = 0; c < CHECKPOINTS; c++) {
      if (x->digest[c] != base->digest[c])
        print_error("%s: digest differs first at tick %u\n", runs[r].name,
                    (c + 1) * (TICKS / CHECKPOINTS));
      assert_int_equal(x->digest[c], base->digest[c]);
    }
    assert_memory_equal(&x->ledger, &base->ledger, sizeof(x->ledger));
    assert_memory_equal(&x->census, &base->census, sizeof(x->census));
    assert_memory_equal(&x->lotto, &base->lotto, sizeof(x->lotto));
    assert_memory_equal(x->counts, base->counts, sizeof(x->counts));
    assert_int_equal(x->alive, base->alive);
    assert_int_equal(x->spawns, base->spawns);
    assert_int_equal(x->despawns, base->despawns);
    assert_int_equal(x->moves, base->moves);
    assert_int_equal(x->commands, base->commands);
    assert_int_equal(x->commands_stale, base->commands_stale);
    assert_int_equal(x->sync_points, base->sync_points);
    /* The pool really ran jobs. */
    assert_true(x->jobs > (runs[r].inline_rows == 1 ? 1000u : 0u));
  }
}

/* ======================================================================== */
/* 2. Declared conflicts are honoured at run time                           */
/* ======================================================================== */

#define NCOMP 8u
#define NRES 3u
#define NOBJ (NCOMP + 1 + NRES) /* components, Common, resources */
#define OBJ_COMMON NCOMP
#define OBJ_RES(r) (NCOMP + 1 + (r))
#define NSYS_C 40u
#define FRAMES_C 300u

typedef struct cval_t {
  uint64_t v;
} cval_t;

/* Access levels; A_DEFAULT (a term's read and write) counts as a write. */
enum { A_NONE, A_READ, A_WRITE, A_DEFAULT };

static void raise_acc(uint8_t *acc, uint8_t a) {
  if (a == A_DEFAULT)
    a = A_WRITE;
  if (a > *acc)
    *acc = a;
}

struct conf_t;

typedef struct csys_t {
  struct conf_t *cf;
  uint32_t idx;
  char name[16];
  weft_phase_t phase;
  bool task, main_thread, commands;
  bool big_batch;    /* one job per run: may run where it is launched */
  uint8_t acc[NOBJ]; /* A_* per object, as declared */
  /* Query terms: object index per term (Common first), and access. */
  uint32_t nterms;
  uint32_t term_obj[4];
  uint8_t term_acc[4];
  uint32_t xread[2], nxread, xwrite[1], nxwrite;
  uint32_t cmd_obj;
  weft_system_t id;
  uint32_t rank;
  _Atomic uint64_t first_in, last_out; /* per frame */
  _Atomic uint64_t calls;
} csys_t;

typedef struct conf_t {
  weft_world_t *w;
  weft_component_t comp[NCOMP + 1]; /* [NCOMP] is Common */
  weft_resource_t res[NRES];
  uint64_t *resv[NRES];
  csys_t sys[NSYS_C];
  /* Per object: bits 0-23 readers, 24-39 writer jobs, 40-63 writer id. */
  _Atomic uint64_t state[NOBJ];
  _Atomic uint64_t seq;
  _Atomic uint32_t violations;
  _Atomic uint32_t bad_calls;
  char first_violation[160];
  _Atomic uint32_t reported;
} conf_t;

#define RD_MASK 0xffffffull
#define WC_ONE (1ull << 24)
#define WC_MASK (0xffffull << 24)
#define WID_SHIFT 40

static void violation(conf_t *cf, const csys_t *y, uint32_t obj, uint64_t cur,
                      bool write) {
  atomic_fetch_add(&cf->violations, 1);
  if (atomic_exchange(&cf->reported, 1) == 0)
    snprintf(cf->first_violation, sizeof cf->first_violation,
             "system %s %s object %u while readers=%llu writers=%llu "
             "(writer sys #%llu)",
             y->name, write ? "writes" : "reads", obj,
             (unsigned long long)(cur & RD_MASK),
             (unsigned long long)((cur & WC_MASK) >> 24),
             (unsigned long long)(cur >> WID_SHIFT));
}

static void obj_enter(conf_t *cf, const csys_t *y, uint32_t obj) {
  _Atomic uint64_t *st = &cf->state[obj];
  uint64_t me = y->idx + 1;
  if (y->acc[obj] == A_WRITE) {
    uint64_t cur = atomic_load(st);
    for (;;) {
      uint64_t wc = (cur & WC_MASK) >> 24;
      if ((cur & RD_MASK) != 0 || (wc != 0 && (cur >> WID_SHIFT) != me))
        violation(cf, y, obj, cur, true);
      uint64_t nxt = (cur & RD_MASK) | ((wc + 1) << 24) | me << WID_SHIFT;
      if (atomic_compare_exchange_weak(st, &cur, nxt))
        break;
    }
  } else if (y->acc[obj] == A_READ) {
    uint64_t cur = atomic_fetch_add(st, 1);
    if ((cur & WC_MASK) != 0)
      violation(cf, y, obj, cur, false);
  }
}

static void obj_exit(conf_t *cf, const csys_t *y, uint32_t obj) {
  if (y->acc[obj] == A_WRITE)
    atomic_fetch_sub(&cf->state[obj], WC_ONE);
  else if (y->acc[obj] == A_READ)
    atomic_fetch_sub(&cf->state[obj], 1);
}

static void atomic_min64(_Atomic uint64_t *a, uint64_t v) {
  uint64_t cur = atomic_load(a);
  while (v < cur && !atomic_compare_exchange_weak(a, &cur, v))
    ;
}

static void atomic_max64(_Atomic uint64_t *a, uint64_t v) {
  uint64_t cur = atomic_load(a);
  while (v > cur && !atomic_compare_exchange_weak(a, &cur, v))
    ;
}

static uint64_t touch_col(cval_t *c, uint32_t n, uint8_t acc, uint64_t salt) {
  uint64_t sum = 0;
  if (!c)
    return 0;
  for (uint32_t i = 0; i < n; i++) {
    if (acc == A_WRITE)
      c[i].v = c[i].v * 3 + salt;
    else if (acc == A_DEFAULT)
      c[i].v += c[i].v >> 3 ^ salt;
    else
      sum += c[i].v;
  }
  return sum;
}

static int csys_run(weft_sysctx_t *ctx, const weft_iter_t *it) {
  csys_t *y = ctx->user;
  conf_t *cf = y->cf;
  if ((it == NULL) != y->task)
    atomic_fetch_add(&cf->bad_calls, 1);
  atomic_fetch_add(&y->calls, 1);
  atomic_min64(&y->first_in, atomic_fetch_add(&cf->seq, 1));
  for (uint32_t o = 0; o < NOBJ; o++)
    obj_enter(cf, y, o);
  uint64_t sum = 0;
  if (it) {
    for (uint32_t t = 0; t < y->nterms; t++)
      if (y->term_acc[t] != A_NONE)
        sum += touch_col(weft_iter_column(it, t), it->count, y->term_acc[t],
                         y->idx);
    for (uint32_t k = 0; k < y->nxread; k++)
      sum += touch_col(weft_iter_column_of(it, cf->comp[y->xread[k]]),
                       it->count, A_READ, 0);
    for (uint32_t k = 0; k < y->nxwrite; k++)
      touch_col(weft_iter_column_of(it, cf->comp[y->xwrite[k]]), it->count,
                A_WRITE, y->idx);
    if (y->commands && it->count > 0) {
      /* Flip component cmd_obj on one row, now and then. */
      uint64_t r = weft_sysctx_random(ctx, it->entities[0], y->idx, 0);
      if ((r & 3) == 0) {
        weft_entity_t e = it->entities[(r >> 8) % it->count];
        weft_component_t c = cf->comp[y->cmd_obj];
        cval_t v = {r};
        if (weft_iter_column_of(it, c))
          weft_cmd_remove(ctx->cmd, e, c);
        else
          weft_cmd_add(ctx->cmd, e, c, &v);
      }
    }
  }
  for (uint32_t r = 0; r < NRES; r++) {
    uint8_t acc = y->acc[OBJ_RES(r)];
    if (acc == A_WRITE)
      *cf->resv[r] = *cf->resv[r] * 5 + y->idx + sum;
    else if (acc == A_READ)
      sum += *cf->resv[r];
  }
  for (uint32_t o = NOBJ; o-- > 0;)
    obj_exit(cf, y, o);
  atomic_max64(&y->last_out, atomic_fetch_add(&cf->seq, 1));
  return sum == UINT64_MAX ? WEFT_EINVAL : 0; /* keep sum alive */
}

/* The conflict rule of schedule.h, over the test's own declarations. */
static bool declared_conflict(const csys_t *a, const csys_t *b) {
  for (uint32_t o = 0; o < NOBJ; o++) {
    if (a->acc[o] == A_WRITE && b->acc[o] != A_NONE)
      return true;
    if (b->acc[o] == A_WRITE && a->acc[o] != A_NONE)
      return true;
  }
  return false;
}

static void conf_make_system(conf_t *cf, csys_t *y, uint32_t idx,
                             wt_rng_t *rng) {
  static const weft_phase_t phases[] = {
      WEFT_PHASE_PRE_UPDATE,        WEFT_PHASE_FIXED_UPDATE,
      WEFT_PHASE_FIXED_UPDATE,      WEFT_PHASE_FIXED_UPDATE,
      WEFT_PHASE_POST_FIXED_UPDATE, WEFT_PHASE_PRE_RENDER};
  memset(y, 0, sizeof(*y));
  y->cf = cf;
  y->idx = idx;
  snprintf(y->name, sizeof y->name, "c%02u", idx);
  y->phase = phases[wt_below(rng, 6)];
  y->task = wt_chance(rng, 1, 6);
  y->main_thread = wt_chance(rng, 1, 8);
  y->rank = wt_below(rng, 1000);
  y->big_batch = wt_chance(rng, 1, 3);
  if (!y->task) {
    static const uint8_t accs[] = {A_READ, A_WRITE, A_NONE, A_DEFAULT};
    /* Term 0 is Common, so that no two queries are provably disjoint. */
    y->term_obj[0] = OBJ_COMMON;
    y->term_acc[0] = accs[wt_below(rng, 4)];
    y->nterms = 1 + 1 + wt_below(rng, 3);
    bool used[NCOMP] = {false};
    for (uint32_t t = 1; t < y->nterms; t++) {
      uint32_t c;
      do
        c = wt_below(rng, NCOMP);
      while (used[c]);
      used[c] = true;
      y->term_obj[t] = c;
      y->term_acc[t] = accs[wt_below(rng, 4)];
    }
    for (uint32_t t = 0; t < y->nterms; t++)
      raise_acc(&y->acc[y->term_obj[t]], y->term_acc[t]);
    y->nxread = wt_below(rng, 3);
    for (uint32_t k = 0; k < y->nxread; k++) {
      y->xread[k] = wt_below(rng, NCOMP);
      raise_acc(&y->acc[y->xread[k]], A_READ);
    }
    y->nxwrite = wt_chance(rng, 1, 4);
    for (uint32_t k = 0; k < y->nxwrite; k++) {
      y->xwrite[k] = wt_below(rng, NCOMP);
      raise_acc(&y->acc[y->xwrite[k]], A_WRITE);
    }
    y->commands = wt_chance(rng, 1, 6);
    y->cmd_obj = wt_below(rng, NCOMP);
  }
  /* Resources: parallel chunks of one system must not write one, so only
   * tasks and main-thread systems write; anyone may read. */
  for (uint32_t r = 0; r < NRES; r++) {
    uint32_t k = wt_below(rng, 6);
    if (k == 0 && (y->task || y->main_thread))
      y->acc[OBJ_RES(r)] = A_WRITE;
    else if (k == 1)
      y->acc[OBJ_RES(r)] = A_READ;
  }
}

static void conf_register(conf_t *cf, csys_t *y) {
  weft_system_desc_t s;
  memset(&s, 0, sizeof s);
  s.name = y->name;
  s.phase = y->phase;
  s.run = csys_run;
  s.user = y;
  s.batch = y->big_batch ? 4096 : 32;
  if (y->main_thread)
    s.flags |= WEFT_SYSTEM_MAIN_THREAD;
  if (!y->task) {
    for (uint32_t t = 0; t < y->nterms; t++) {
      s.query.include[t] = cf->comp[y->term_obj[t]];
      static const uint8_t map[] = {WEFT_ACCESS_NONE, WEFT_ACCESS_READ,
                                    WEFT_ACCESS_WRITE, WEFT_ACCESS_DEFAULT};
      s.term_access[t] = map[y->term_acc[t]];
    }
    uint32_t nr = 0, nw = 0;
    for (uint32_t k = 0; k < y->nxread; k++)
      s.read[nr++] = cf->comp[y->xread[k]];
    for (uint32_t k = 0; k < y->nxwrite; k++)
      s.write[nw++] = cf->comp[y->xwrite[k]];
    if (y->commands)
      s.cmd_write[0] = cf->comp[y->cmd_obj];
  }
  uint32_t nrr = 0, nrw = 0;
  for (uint32_t r = 0; r < NRES; r++) {
    if (y->acc[OBJ_RES(r)] == A_WRITE)
      s.res_write[nrw++] = cf->res[r];
    else if (y->acc[OBJ_RES(r)] == A_READ)
      s.res_read[nrr++] = cf->res[r];
  }
  /* Explicit order between ranks (always acyclic), in both registration
   * directions. */
  uint32_t nb = 0, na = 0;
  for (uint32_t j = 0; j < NSYS_C && nb < 3 && na < 3; j++) {
    const csys_t *o = &cf->sys[j];
    if (j == y->idx || o->phase != y->phase || (j * 7 + y->idx) % 9 != 0)
      continue;
    if (o->rank > y->rank)
      s.before[nb++] = o->name;
    else if (o->rank < y->rank)
      s.after[na++] = o->name;
  }
  y->id = reg(cf->w, &s);
}

static void test_schedule_conflicts_honoured(void **state) {
  (void)state;
  double t0 = wt_now_s();
  weft_pool_t *pool = make_pool(4, false, NULL);
  conf_t *cf = calloc(1, sizeof(*cf));
  assert_non_null(cf);
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.chunk_size = 4096;
  cfg.pool = pool;
  cf->w = wt_world_new(&cfg);
  weft_world_t *w = cf->w;
  char nm[16];
  for (uint32_t c = 0; c <= NCOMP; c++) {
    snprintf(nm, sizeof nm, c == NCOMP ? "Common" : "C%u", c);
    cf->comp[c] = wt_register(w, nm, sizeof(cval_t), 8);
  }
  for (uint32_t r = 0; r < NRES; r++) {
    snprintf(nm, sizeof nm, "R%u", r);
    assert_int_equal(
        weft_resource_register(w, nm, sizeof(uint64_t), 0, NULL, &cf->res[r]),
        WEFT_OK);
    cf->resv[r] = weft_resource_get(w, cf->res[r]);
  }
  wt_rng_t rng = wt_rng(0x5c4ed01e);
  uint32_t entities = SANITIZED ? 2000 : 4000;
  for (uint32_t i = 0; i < entities; i++) {
    weft_component_t comps[NCOMP + 2];
    uint32_t n = 0;
    comps[n++] = cf->comp[NCOMP];
    uint32_t bits = (uint32_t)wt_next(&rng);
    for (uint32_t c = 0; c < NCOMP; c++)
      if (bits >> c & 1)
        comps[n++] = cf->comp[c];
    comps[n] = 0;
    wt_spawn_with(w, comps, NULL);
  }
  wt_rng_t srng = wt_rng(0x5c4ed5);
  for (uint32_t i = 0; i < NSYS_C; i++)
    conf_make_system(cf, &cf->sys[i], i, &srng);
  for (uint32_t i = 0; i < NSYS_C; i++)
    conf_register(cf, &cf->sys[i]);
  weft_pipeline_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.inline_rows = 1;
  assert_int_equal(weft_pipeline_configure(w, &pc), WEFT_OK);
  assert_int_equal(weft_schedule_build(w), WEFT_OK);

  /* Every declared conflict in a phase is an edge; record the edges. */
  static bool edge[NSYS_C][NSYS_C];
  uint32_t conflicts = 0, edges = 0, segments = 0;
  for (uint32_t i = 0; i < NSYS_C; i++) {
    weft_system_info_t info;
    assert_int_equal(weft_system_info(w, cf->sys[i].id, &info), WEFT_OK);
    if (info.segment > segments)
      segments = info.segment;
    for (uint32_t j = 0; j < NSYS_C; j++) {
      const csys_t *a = &cf->sys[i], *b = &cf->sys[j];
      edge[i][j] = i != j && weft_system_edge(w, a->id, b->id);
      edges += edge[i][j];
      if (i < j && a->phase == b->phase && declared_conflict(a, b)) {
        conflicts++;
        if (!weft_system_edge(w, a->id, b->id) &&
            !weft_system_edge(w, b->id, a->id))
          print_error("no edge between conflicting %s and %s\n", a->name,
                      b->name);
        assert_true(weft_system_edge(w, a->id, b->id) ||
                    weft_system_edge(w, b->id, a->id));
      }
    }
  }

  uint64_t ordered = 0, overlapped = 0;
  for (uint32_t f = 0; f < FRAMES_C; f++) {
    if (f == FRAMES_C / 2) {
      /* From here on small segments run serially and small systems where
       * they are launched. */
      pc.inline_rows = 600;
      assert_int_equal(weft_pipeline_configure(w, &pc), WEFT_OK);
    }
    for (uint32_t i = 0; i < NSYS_C; i++) {
      atomic_store(&cf->sys[i].first_in, UINT64_MAX);
      atomic_store(&cf->sys[i].last_out, 0);
    }
    int rc = weft_world_progress(w, 1.0 / 60.0);
    if (rc != WEFT_OK)
      print_error("frame %u: %s\n", f, weft_world_last_error(w));
    assert_int_equal(rc, WEFT_OK);
    if (atomic_load(&cf->violations) != 0)
      print_error("frame %u: %s\n", f, cf->first_violation);
    assert_int_equal(atomic_load(&cf->violations), 0);
    assert_int_equal(atomic_load(&cf->bad_calls), 0);
    for (uint32_t i = 0; i < NSYS_C; i++)
      for (uint32_t j = 0; j < NSYS_C; j++) {
        const csys_t *a = &cf->sys[i], *b = &cf->sys[j];
        uint64_t a_out = atomic_load(&a->last_out);
        uint64_t b_in = atomic_load(&b->first_in);
        if (i == j || a_out == 0 || b_in == UINT64_MAX)
          continue; /* one of them visited no chunk */
        if (edge[i][j]) {
          if (a_out > b_in)
            print_error("frame %u: %s -> %s but %s left at %llu after %s "
                        "entered at %llu\n",
                        f, a->name, b->name, a->name, (unsigned long long)a_out,
                        b->name, (unsigned long long)b_in);
          assert_true(a_out < b_in);
          ordered++;
        } else if (i < j && a->phase == b->phase && !edge[j][i]) {
          uint64_t a_in = atomic_load(&a->first_in);
          uint64_t b_out = atomic_load(&b->last_out);
          overlapped += a_in < b_out && b_in < a_out;
        }
      }
  }
  uint64_t calls = 0, jobs = 0;
  for (uint32_t i = 0; i < NSYS_C; i++) {
    weft_system_stats_t ss;
    assert_int_equal(weft_system_stats(w, cf->sys[i].id, &ss), WEFT_OK);
    assert_int_equal(ss.runs, FRAMES_C);
    calls += atomic_load(&cf->sys[i].calls);
    jobs += ss.jobs;
  }
  weft_world_stats_t st = wt_stats(w);
  print_message("conflicts: %u systems, %u conflicting pairs, %u edges, %u "
                "segments max; %llu callbacks, %llu jobs, %llu ordered pairs "
                "checked, %llu unordered pairs overlapped, %llu moves; "
                "%.2f s\n",
                NSYS_C, conflicts, edges, segments + 1,
                (unsigned long long)calls, (unsigned long long)jobs,
                (unsigned long long)ordered, (unsigned long long)overlapped,
                (unsigned long long)st.moves, wt_now_s() - t0);
  assert_true(conflicts > 20);
  assert_true(jobs > 1000);
  assert_true(st.moves > 100);
  weft_world_destroy(w);
  free(cf);
  weft_pool_destroy(pool);
}

/* ======================================================================== */
/* 3. Register / remove / enable / disable between frames                   */
/* ======================================================================== */

#define CHURN_SLOTS 400u
#define CHURN_FRAMES 200u

struct churn_t;

typedef struct cspec_t {
  struct churn_t *ch;
  char name[24];
  weft_system_t id;
  weft_phase_t phase;
  _Atomic bool live;    /* registered and not removed */
  _Atomic bool enabled; /* as the test last set it */
  _Atomic uint32_t calls;
  bool writes;          /* term 0 is declared written */
  bool pinned;          /* never removed or disabled by the test */
  uint64_t runs_before; /* stats.runs at the start of the frame */
  bool registered_in_frame;
} cspec_t;

typedef struct churn_t {
  weft_world_t *w;
  weft_component_t a, b, c;
  cspec_t spec[CHURN_SLOTS];
  uint32_t nspec;
  _Atomic uint32_t bad;
  uint32_t mid_frame_regs;
  bool phase_on[WEFT_PHASE_PRE_RENDER + 1];
  /* The burst handshake (relaxed on purpose: it must not order the
   * registrar's writes before the gate's completion for TSan). */
  _Atomic uint32_t gate_armed, gate_in, reg_done;
  uint32_t handshakes;
} churn_t;

static bool burst_tick(uint64_t tick) {
  return tick % 40 == 20;
}

/* Spins until *flag is set. The other side only has to be scheduled, so
 * the bound is a hang guard, not a timing bound: a busy machine may keep
 * a worker off its CPU for a long while, and a handshake missed that way
 * would fail the test. */
static bool await_flag(_Atomic uint32_t *flag) {
  double t0 = wt_now_s();
  while (!atomic_load_explicit(flag, memory_order_relaxed)) {
    if (wt_now_s() - t0 > 60.0)
      return false;
    sched_yield();
  }
  return true;
}

static int churn_run(weft_sysctx_t *ctx, const weft_iter_t *it) {
  cspec_t *y = ctx->user;
  if (!atomic_load(&y->live) || !atomic_load(&y->enabled))
    atomic_fetch_add(&y->ch->bad, 1);
  atomic_fetch_add(&y->calls, 1);
  uint32_t *col = it ? weft_iter_column(it, 0) : NULL;
  uint32_t sum = 0;
  for (uint32_t i = 0; col && i < it->count; i++) {
    if (y->writes)
      col[i] += 1;
    else
      sum += col[i];
  }
  if (sum == UINT32_MAX)
    atomic_fetch_add(&y->ch->bad, 0); /* keep the reads */
  return 0;
}

static void churn_register(churn_t *ch, uint32_t k, wt_rng_t *rng,
                           bool mid_frame);

/* Main thread, during a frame: registers one more system (allowed from the
 * owner thread while a frame runs; it joins later), and every 40 frames
 * enough of them to grow the scheduler's system table while workers
 * finish the heavy systems' jobs. */
static int churn_registrar(weft_sysctx_t *ctx, const weft_iter_t *it) {
  cspec_t *y = ctx->user;
  churn_t *ch = y->ch;
  churn_run(ctx, it);
  if (it != NULL)
    return 0;
  wt_rng_t rng = wt_rng(ctx->tick * 977 + 5);
  uint32_t until = ch->nspec + 1;
  bool burst = burst_tick(ctx->tick);
  if (burst) {
    uint32_t pow2 = 16;
    while (pow2 < ch->nspec)
      pow2 *= 2;
    until = pow2 + 1; /* ids count up from 1: this one needs a new table */
    /* Register while the gate's job is inside its callback on a worker. */
    if (await_flag(&ch->gate_in))
      ch->handshakes++;
  }
  while (ch->nspec < until && ch->nspec < CHURN_SLOTS)
    churn_register(ch, ch->nspec, &rng, true);
  if (burst)
    atomic_store_explicit(&ch->reg_done, 1, memory_order_relaxed);
  return 0;
}

/* A one-job system: on burst ticks its first chunk holds the worker until
 * the registrar has registered, so that the job completes (and starts its
 * successor) right after the system table moved. */
static int churn_gate(weft_sysctx_t *ctx, const weft_iter_t *it) {
  cspec_t *y = ctx->user;
  churn_t *ch = y->ch;
  churn_run(ctx, it);
  if (burst_tick(ctx->tick) && atomic_exchange(&ch->gate_armed, 0)) {
    atomic_store_explicit(&ch->gate_in, 1, memory_order_relaxed);
    /* Only on a worker: on the driving thread the registrar could not run
     * until this returns. */
    if (weft_sysctx_pool_worker(ctx) != WEFT_WORKER_EXTERNAL)
      await_flag(&ch->reg_done);
  }
  return 0;
}

static void churn_register(churn_t *ch, uint32_t k, wt_rng_t *rng,
                           bool mid_frame) {
  static const weft_phase_t phases[] = {
      WEFT_PHASE_PRE_UPDATE, WEFT_PHASE_FIXED_UPDATE,
      WEFT_PHASE_POST_FIXED_UPDATE, WEFT_PHASE_PRE_RENDER};
  cspec_t *y = &ch->spec[k];
  memset(y, 0, sizeof(*y));
  y->ch = ch;
  snprintf(y->name, sizeof y->name, "churn%u", k);
  y->phase = phases[wt_below(rng, 4)];
  weft_system_desc_t s;
  memset(&s, 0, sizeof s);
  s.name = y->name;
  s.phase = y->phase;
  s.run = churn_run;
  s.user = y;
  s.batch = 16;
  bool task = wt_chance(rng, 1, 5);
  if (!task) {
    weft_component_t comps[] = {ch->a, ch->b, ch->c};
    uint32_t first = wt_below(rng, 3);
    s.query.include[0] = comps[first];
    y->writes = wt_chance(rng, 1, 2);
    s.term_access[0] = y->writes ? WEFT_ACCESS_WRITE : WEFT_ACCESS_READ;
    if (wt_chance(rng, 1, 3))
      s.query.include[1] = comps[(first + 1) % 3];
  }
  if (wt_chance(rng, 1, 6))
    s.flags |= WEFT_SYSTEM_MAIN_THREAD;
  bool disabled = wt_chance(rng, 1, 4);
  if (disabled)
    s.flags |= WEFT_SYSTEM_DISABLED;
  if (k > 0 && wt_chance(rng, 1, 3))
    s.after[0] = ch->spec[wt_below(rng, k)].name; /* maybe removed */
  atomic_store(&y->enabled, !disabled);
  atomic_store(&y->live, true);
  y->registered_in_frame = mid_frame;
  y->id = 0;
  int rc = weft_system_register(ch->w, &s, &y->id);
  if (rc != WEFT_OK) {
    atomic_fetch_add(&ch->bad, 1);
    atomic_store(&y->live, false);
    return;
  }
  if (mid_frame)
    ch->mid_frame_regs++;
  ch->nspec = k + 1 > ch->nspec ? k + 1 : ch->nspec;
}

static void test_schedule_churn(void **state) {
  (void)state;
  double t0 = wt_now_s();
  weft_pool_t *pool = make_pool(3, false, NULL);
  churn_t *ch = calloc(1, sizeof(*ch));
  assert_non_null(ch);
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.chunk_size = 4096;
  cfg.pool = pool;
  ch->w = wt_world_new(&cfg);
  weft_world_t *w = ch->w;
  ch->a = wt_register(w, "A", 4, 4);
  ch->b = wt_register(w, "B", 4, 4);
  ch->c = wt_register(w, "C", 4, 4);
  weft_component_t ab[] = {ch->a, ch->b, 0}, bc[] = {ch->b, ch->c, 0},
                   abc[] = {ch->a, ch->b, ch->c, 0};
  for (uint32_t i = 0; i < 1500; i++)
    wt_spawn_with(w, i % 3 == 0 ? ab : i % 3 == 1 ? bc : abc, NULL);
  weft_pipeline_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.inline_rows = 1;
  assert_int_equal(weft_pipeline_configure(w, &pc), WEFT_OK);
  for (uint32_t p = 1; p <= WEFT_PHASE_PRE_RENDER; p++)
    ch->phase_on[p] = true;

  /* The gate (one job over every row with C) and its successor, two heavy
   * systems (small jobs over every row with A; the second follows the
   * first), and the registrar: a main-thread task in the same segment, so
   * registration happens while workers run and complete the others' jobs.
   */
  for (uint32_t i = 0; i < 5; i++) {
    uint32_t k = ch->nspec;
    cspec_t *y = &ch->spec[k];
    memset(y, 0, sizeof(*y));
    y->ch = ch;
    y->pinned = true;
    y->phase = WEFT_PHASE_FIXED_UPDATE;
    weft_system_desc_t s;
    memset(&s, 0, sizeof s);
    s.name = y->name;
    s.user = y;
    if (i < 4) {
      snprintf(y->name, sizeof y->name, "%s%u", i < 2 ? "gate" : "heavy",
               i % 2);
      s.run = i == 0 ? churn_gate : churn_run;
      s.query.include[0] = i < 2 ? ch->c : ch->a;
      s.term_access[0] = WEFT_ACCESS_WRITE;
      s.batch = i < 2 ? 1u << 20 : 8;
      y->writes = true;
    } else {
      snprintf(y->name, sizeof y->name, "registrar");
      s.run = churn_registrar;
      s.flags = WEFT_SYSTEM_MAIN_THREAD;
    }
    atomic_store(&y->enabled, true);
    atomic_store(&y->live, true);
    y->id = reg(w, &s);
    ch->nspec = k + 1;
  }
  assert_true(weft_system_edge(w, ch->spec[0].id, ch->spec[1].id));
  assert_true(weft_system_edge(w, ch->spec[2].id, ch->spec[3].id));
  wt_rng_t rng = wt_rng(0xc4u);
  for (uint32_t k = 0; k < 24; k++)
    churn_register(ch, ch->nspec, &rng, false);

  uint32_t removed = 0, toggled = 0, registered = 0, phase_toggles = 0;
  for (uint32_t f = 0; f < CHURN_FRAMES; f++) {
    /* Between frames: a few random operations. */
    uint32_t ops = wt_below(&rng, 5);
    for (uint32_t o = 0; o < ops; o++) {
      uint32_t what = wt_below(&rng, 10);
      uint32_t k = wt_below(&rng, ch->nspec);
      cspec_t *y = &ch->spec[k];
      if (what < 3 && ch->nspec < CHURN_SLOTS / 2) {
        churn_register(ch, ch->nspec, &rng, false);
        registered++;
      } else if (what < 5 && atomic_load(&y->live) && !y->pinned) {
        assert_int_equal(weft_system_remove(w, y->id), WEFT_OK);
        atomic_store(&y->live, false);
        assert_int_equal(weft_system_remove(w, y->id), WEFT_ENONAME);
        removed++;
      } else if (what < 9 && atomic_load(&y->live) && !y->pinned) {
        bool en = !atomic_load(&y->enabled);
        atomic_store(&y->enabled, en);
        assert_int_equal(weft_system_enable(w, y->id, en), WEFT_OK);
        toggled++;
      } else if (what == 9) {
        weft_phase_t p = WEFT_PHASE_PRE_UPDATE + wt_below(&rng, 4);
        if (p == WEFT_PHASE_NETWORK_TICK)
          p = WEFT_PHASE_PRE_RENDER;
        ch->phase_on[p] = !ch->phase_on[p];
        assert_int_equal(weft_phase_enable(w, p, ch->phase_on[p]), WEFT_OK);
        phase_toggles++;
      }
    }
    /* Keep the registrar's phase on most of the time. */
    if (f % 20 == 0 && !ch->phase_on[WEFT_PHASE_FIXED_UPDATE]) {
      ch->phase_on[WEFT_PHASE_FIXED_UPDATE] = true;
      assert_int_equal(weft_phase_enable(w, WEFT_PHASE_FIXED_UPDATE, true),
                       WEFT_OK);
    }
    atomic_store(&ch->gate_armed, 1);
    atomic_store(&ch->gate_in, 0);
    atomic_store(&ch->reg_done, 0);
    uint32_t nspec0 = ch->nspec;
    for (uint32_t k = 0; k < nspec0; k++) {
      cspec_t *y = &ch->spec[k];
      atomic_store(&y->calls, 0);
      y->registered_in_frame = false;
      weft_system_stats_t ss = {0};
      if (atomic_load(&y->live))
        assert_int_equal(weft_system_stats(w, y->id, &ss), WEFT_OK);
      y->runs_before = ss.runs;
    }
    int rc = weft_world_progress(w, 1.0 / 60.0);
    if (rc != WEFT_OK)
      print_error("frame %u: %s\n", f, weft_world_last_error(w));
    assert_int_equal(rc, WEFT_OK);
    assert_int_equal(atomic_load(&ch->bad), 0);
    for (uint32_t k = 0; k < ch->nspec; k++) {
      cspec_t *y = &ch->spec[k];
      if (!atomic_load(&y->live)) {
        assert_int_equal(atomic_load(&y->calls), 0);
        continue;
      }
      weft_system_stats_t ss;
      assert_int_equal(weft_system_stats(w, y->id, &ss), WEFT_OK);
      if (k >= nspec0) { /* registered during the frame: joins the next */
        assert_int_equal(ss.runs, 0);
        assert_int_equal(atomic_load(&y->calls), 0);
        continue;
      }
      bool should = atomic_load(&y->enabled) && ch->phase_on[y->phase];
      uint64_t runs = ss.runs - y->runs_before;
      if (runs != (should ? 1u : 0u))
        print_error("frame %u: %s (phase %u, %s) ran %llu times\n", f, y->name,
                    y->phase, should ? "on" : "off", (unsigned long long)runs);
      assert_int_equal(runs, should ? 1 : 0);
      if (!should)
        assert_int_equal(atomic_load(&y->calls), 0);
    }
  }
  assert_int_equal(weft_schedule_build(w), WEFT_OK);
  print_message("churn: %u frames, %u registered between frames, %u during "
                "frames (%u bursts in step with the gate), %u removed, %u "
                "toggled, %u phase toggles; %.2f s\n",
                CHURN_FRAMES, registered, ch->mid_frame_regs, ch->handshakes,
                removed, toggled, phase_toggles, wt_now_s() - t0);
  assert_true(removed > 20 && toggled > 50);
  assert_true(ch->mid_frame_regs > 200);
  assert_true(ch->handshakes >= 2);
  weft_world_destroy(w);
  free(ch);
  weft_pool_destroy(pool);
}

/* ======================================================================== */
/* 4. Registration while workers call into the scheduler                    */
/* ======================================================================== */

#define COUNT_FRAMES 6u

typedef struct counting_t {
  weft_world_t *w;
  _Atomic uint32_t in, done; /* relaxed: the handshake orders nothing */
  uint64_t counted;          /* weft_sysctx_count calls (the counter's) */
  uint32_t registered, handshakes;
} counting_t;

static int noop_run(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)ctx;
  (void)it;
  return 0;
}

/* On a worker: counts rows, one call at a time, for as long as the
 * registrar is registering (at most two seconds). */
static int counting_task(weft_sysctx_t *ctx, const weft_iter_t *it) {
  counting_t *c = ctx->user;
  (void)it;
  atomic_store_explicit(&c->in, 1, memory_order_relaxed);
  double t0 = wt_now_s();
  uint64_t n = 0;
  do {
    weft_sysctx_count(ctx, 1);
    n++;
  } while (!atomic_load_explicit(&c->done, memory_order_relaxed) &&
           wt_now_s() - t0 < 2.0);
  weft_sysctx_count(ctx, 1);
  c->counted += n + 1; /* read after the frame */
  return 0;
}

/* On the driving thread, in the same segment: once the counter runs,
 * registers systems until the scheduler's table of systems has grown
 * (ids count up from 1; the table doubles from 16). */
static int counting_registrar(weft_sysctx_t *ctx, const weft_iter_t *it) {
  counting_t *c = ctx->user;
  (void)it;
  if (await_flag(&c->in))
    c->handshakes++;
  uint32_t pow2 = 16;
  while (pow2 <= c->registered + 2)
    pow2 *= 2;
  while (c->registered + 2 <= pow2) {
    char name[32];
    snprintf(name, sizeof name, "late%u", c->registered);
    weft_system_desc_t s;
    memset(&s, 0, sizeof s);
    s.name = name;
    s.phase = WEFT_PHASE_PRE_RENDER;
    s.run = noop_run;
    weft_system_t id;
    if (weft_system_register(ctx->world, &s, &id) != WEFT_OK)
      return WEFT_EINVAL;
    c->registered++;
  }
  atomic_store_explicit(&c->done, 1, memory_order_relaxed);
  return 0;
}

/*
 * A main-thread system registers systems during a frame (the header
 * allows it) while a task on a pool worker calls weft_sysctx_count(), so
 * that the registration grows the scheduler's table of systems while the
 * worker is inside the call. The worker must not read that table (TSan:
 * data race on it; ASan: a read of the freed array); every count arrives.
 */
static void test_schedule_register_while_workers_count(void **state) {
  (void)state;
  weft_pool_t *pool = make_pool(2, false, NULL);
  counting_t *c = calloc(1, sizeof(*c));
  assert_non_null(c);
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.pool = pool;
  c->w = wt_world_new(&cfg);
  weft_pipeline_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.inline_rows = 1; /* both go to the pool whatever their cost */
  assert_int_equal(weft_pipeline_configure(c->w, &pc), WEFT_OK);
  weft_system_desc_t s;
  memset(&s, 0, sizeof s);
  s.name = "counter";
  s.run = counting_task;
  s.user = c;
  weft_system_t counter = reg(c->w, &s);
  s.name = "registrar";
  s.run = counting_registrar;
  s.flags = WEFT_SYSTEM_MAIN_THREAD;
  weft_system_t registrar = reg(c->w, &s);
  assert_false(weft_system_edge(c->w, counter, registrar));
  for (uint32_t f = 0; f < COUNT_FRAMES; f++) {
    atomic_store(&c->in, 0);
    atomic_store(&c->done, 0);
    int rc = weft_world_progress(c->w, 1.0 / 60.0);
    if (rc != WEFT_OK)
      print_error("frame %u: %s\n", f, weft_world_last_error(c->w));
    assert_int_equal(rc, WEFT_OK);
  }
  weft_system_stats_t st;
  assert_int_equal(weft_system_stats(c->w, counter, &st), WEFT_OK);
  assert_int_equal(st.runs, COUNT_FRAMES);
  assert_int_equal(st.entities, c->counted);
  print_message("register while counting: %u systems registered in %u "
                "frames (%u in step with the counter), %llu counts\n",
                c->registered, COUNT_FRAMES, c->handshakes,
                (unsigned long long)c->counted);
  assert_true(c->registered >= 64);
  assert_true(c->handshakes >= 1);
  weft_world_destroy(c->w);
  free(c);
  weft_pool_destroy(pool);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_schedule_deterministic_across_pools),
      cmocka_unit_test(test_schedule_conflicts_honoured),
      cmocka_unit_test(test_schedule_churn),
      cmocka_unit_test(test_schedule_register_while_workers_count),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
