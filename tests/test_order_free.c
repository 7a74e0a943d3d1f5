/* SPDX-License-Identifier: MIT */
/*
 * Keyed mode and ghosts (builtin.h): the built-in systems give every keyed
 * entity the same bits whatever its handle, row, chunk or spawn order.
 *
 * The first tests build one set of keyed entities (described by a spec
 * list, the oracle) in several worlds that differ in everything but the
 * entities: spawn order (as listed, reversed, a seeded shuffle), churn
 * (filler entities spawned and despawned first, others kept in other
 * archetypes), handles chosen by weft_spawn_at(), chunk size and workers
 * (none, or a pool of two that takes every system). They run the
 * particles, boids and arena systems for a few ticks and compare every
 * keyed entity, matched by key, component by component, bitwise:
 * projectiles spawned mid-run (matched by their derived keys) and
 * despawns included.
 *
 * The split tests are the oracle of a distributed run: a world cut in two
 * at x = mid, each half owning its side's entities and holding ghost
 * copies of the other side's near the cut (refreshed by the test every
 * tick, owners migrating when they cross), gives the owned boids, units,
 * turrets and projectiles the same bits as one world holding all of them.
 * Smaller tests pin the rules that make that hold: ghosts are never
 * written, an owned entity takes a ghost's hits, a party killed earlier
 * in a run still deals its damage between keyed parties, and a keyed
 * spawner's projectiles get the documented keys and directions.
 *
 * Every test builds and destroys its own worlds (and pools).
 */
#include "support/weft_test.h"

#include <math.h>
#include <stdlib.h>

#include <weft/builtin.h>

enum { SCN_PARTICLES, SCN_BOIDS, SCN_ARENA };

/* What one keyed entity starts with: the oracle the worlds are built from. */
typedef struct spec_t {
  uint64_t key;
  weft_vec2_t p, v;
  bool boid, unit, turret;
  float hp;   /* 0: 3 for a unit, 20 for a turret */
  bool armor; /* Armor: flat 0.1, fraction 0.3 */
} spec_t;

/* The collision events of a run, by key, as a system after collide saw
 * them. */
typedef struct evlog_t {
  weft_world_t *w;
  weft_component_t key;
  weft_channel_t ch;
  uint64_t *v; /* per event: a's key, b's key, then nx, ny, depth bits */
  uint32_t n, cap;
} evlog_t;

/* One world of a comparison: its settings and what it made. */
typedef struct of_world_t {
  weft_world_t *w;
  evlog_t *log; /* arena only */
  weft_pool_t *pool;
  weft_std_t s;
  weft_grid_t *grid;
  weft_component_t filler; /* a component of the kept fillers */
} of_world_t;

#define OF_LO 0.0f
#define OF_HI 32.0f
#define OF_CELL 2.0f
#define OF_DT (1.0 / 32.0)

/* How a world differs from the others. */
typedef struct layout_t {
  uint32_t workers;
  uint32_t chunk_size; /* 0: default */
  int order;           /* 0: as listed, 1: reversed, 2: shuffled */
  uint32_t churn;      /* fillers spawned and despawned first */
  bool spawn_at;       /* handles chosen by the test, shuffled */
  uint64_t seed;       /* for the shuffles */
} layout_t;

static float frand(wt_rng_t *r, float lo, float hi) {
  return lo + (hi - lo) * (float)wt_below(r, 1000001) / 1000000.0f;
}

static void log_push(evlog_t *l, uint64_t v) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 1024;
    l->v = realloc(l->v, l->cap * sizeof *l->v);
    assert_non_null(l->v);
  }
  l->v[l->n++] = v;
}

static int log_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  evlog_t *l = ctx->user;
  uint32_t n = 0;
  const weft_collision_t *ev = weft_event_read(l->w, l->ch, &n);
  for (uint32_t i = 0; i < n; i++) {
    /* A party despawned at the sync point that published the event (a
     * projectile's lifetime ran out) reads as UINT64_MAX; every live one
     * is keyed, and a is the smaller key. */
    weft_key_t a = {UINT64_MAX}, b = {UINT64_MAX};
    bool la = weft_is_alive(l->w, ev[i].a), lb = weft_is_alive(l->w, ev[i].b);
    if ((la && weft_read(l->w, ev[i].a, l->key, &a) != WEFT_OK) ||
        (lb && weft_read(l->w, ev[i].b, l->key, &b) != WEFT_OK))
      return WEFT_EINVAL;
    if (la && lb && !(a.id < b.id))
      return WEFT_ELIMIT;
    uint32_t f[3];
    memcpy(&f[0], &ev[i].nx, 4);
    memcpy(&f[1], &ev[i].ny, 4);
    memcpy(&f[2], &ev[i].depth, 4);
    log_push(l, a.id);
    log_push(l, b.id);
    log_push(l, (uint64_t)f[0] << 32 | f[1]);
    log_push(l, f[2]);
  }
  return 0;
}

static void of_log(of_world_t *o) {
  o->log = calloc(1, sizeof *o->log);
  assert_non_null(o->log);
  o->log->w = o->w;
  o->log->key = o->s.key;
  o->log->ch = o->s.collisions;
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "test.log";
  d.phase = WEFT_PHASE_FIXED_UPDATE;
  d.run = log_run;
  d.user = o->log;
  d.receive[0] = o->s.collisions;
  d.read[0] = o->s.key;
  weft_system_t id = 0;
  int rc = weft_system_register(o->w, &d, &id);
  if (rc != WEFT_OK)
    fail_msg("test.log: %s", weft_world_last_error(o->w));
}

static void of_systems(of_world_t *o, int scn) {
  weft_world_t *w = o->w;
  weft_integrate_config_t ic;
  memset(&ic, 0, sizeof ic);
  ic.mode = WEFT_BOUNDS_BOUNCE;
  ic.min = (weft_vec2_t){OF_LO, OF_LO};
  ic.max = (weft_vec2_t){OF_HI, OF_HI};
  if (scn == SCN_PARTICLES) {
    ic.gravity = (weft_vec2_t){0.0f, -9.8f};
    ic.damping = 0.05f;
  }
  if (scn != SCN_PARTICLES) {
    weft_grid_config_t gc;
    memset(&gc, 0, sizeof gc);
    gc.cell = OF_CELL;
    gc.min = (weft_vec2_t){OF_LO, OF_LO};
    gc.max = (weft_vec2_t){OF_HI, OF_HI};
    assert_int_equal(weft_grid_create(w, &gc, &o->grid), WEFT_OK);
    weft_component_t with = scn == SCN_BOIDS ? o->s.boid : 0;
    assert_int_equal(
        weft_sys_grid(w, &o->s, o->grid, with, WEFT_PHASE_FIXED_UPDATE, NULL),
        WEFT_OK);
  }
  if (scn == SCN_BOIDS) {
    weft_boids_config_t bc;
    memset(&bc, 0, sizeof bc);
    bc.radius = 1.9f;
    bc.max_speed = 4.0f;
    assert_int_equal(weft_sys_boids(w, &o->s, o->grid, &bc, NULL), WEFT_OK);
  }
  if (scn == SCN_ARENA) {
    const weft_phase_t ph = WEFT_PHASE_FIXED_UPDATE;
    assert_int_equal(weft_sys_collide(w, &o->s, o->grid, ph, NULL), WEFT_OK);
    assert_int_equal(weft_sys_health(w, &o->s, ph, NULL), WEFT_OK);
    assert_int_equal(weft_sys_lifetime(w, &o->s, ph, NULL), WEFT_OK);
    assert_int_equal(weft_sys_spawners(w, &o->s, ph, NULL), WEFT_OK);
    of_log(o);
  }
  assert_int_equal(weft_sys_integrate(w, &o->s, &ic, NULL), WEFT_OK);
}

static of_world_t of_new(const layout_t *l, int scn) {
  of_world_t o;
  memset(&o, 0, sizeof o);
  o.w = wt_world_pooled(l->workers, l->chunk_size, &o.pool);
  if (l->workers)
    wt_dispatch_everything(o.w);
  weft_pipeline_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.fixed_dt = OF_DT;
  if (l->workers)
    pc.inline_rows = 1;
  assert_int_equal(weft_pipeline_configure(o.w, &pc), WEFT_OK);
  assert_int_equal(weft_std_register(o.w, &o.s), WEFT_OK);
  o.filler = wt_register(o.w, "test.Filler", sizeof(uint64_t), 8);
  of_systems(&o, scn);
  return o;
}

static void of_free(of_world_t *o) {
  if (o->log)
    free(o->log->v);
  free(o->log);
  weft_grid_destroy(o->grid);
  weft_world_destroy(o->w);
  if (o->pool)
    weft_pool_destroy(o->pool);
  memset(o, 0, sizeof *o);
}

/* The components and values one spec spawns with. */
static uint32_t spec_comps(const of_world_t *o, const spec_t *sp,
                           weft_component_t *c, const void **v, weft_key_t *key,
                           weft_collider_t *col, weft_health_t *hp,
                           weft_spawner_t *spn, weft_armor_t *arm) {
  uint32_t n = 0;
  *key = (weft_key_t){sp->key};
  c[n] = o->s.key, v[n++] = key;
  c[n] = o->s.position, v[n++] = &sp->p;
  if (!sp->turret)
    c[n] = o->s.velocity, v[n++] = &sp->v;
  if (sp->boid)
    c[n] = o->s.boid, v[n++] = NULL;
  memset(col, 0, sizeof *col);
  if (sp->unit || sp->turret) {
    col->shape = sp->unit ? WEFT_SHAPE_CIRCLE : WEFT_SHAPE_BOX;
    col->r = 0.45f;
    col->hx = col->hy = 0.5f;
    col->layer = sp->unit ? 1u : 4u;
    col->mask = sp->unit ? 2u | 4u : 1u;
    c[n] = o->s.collider, v[n++] = col;
    float full = sp->hp > 0.0f ? sp->hp : sp->unit ? 3.0f : 20.0f;
    *hp = (weft_health_t){full, sp->hp > 0.0f ? full : 20.0f};
    c[n] = o->s.health, v[n++] = hp;
    *arm = (weft_armor_t){0.1f, 0.3f};
    if (sp->armor)
      c[n] = o->s.armor, v[n++] = arm;
    /* Units hurt each other on contact, as weft-sim's do. */
    static const weft_damage_t unit_dmg = {0.75f};
    if (sp->unit)
      c[n] = o->s.damage, v[n++] = &unit_dmg;
  }
  if (sp->turret) {
    memset(spn, 0, sizeof *spn);
    spn->interval = 0.25f;
    spn->timer = (float)(sp->key % 7) * 0.03125f;
    spn->speed = 7.0f;
    spn->lifetime = 0.75f;
    spn->damage = 1.0f;
    spn->radius = 0.2f;
    spn->burst = 3;
    spn->layer = 2u;
    spn->mask = 1u;
    c[n] = o->s.spawner, v[n++] = spn;
  }
  c[n] = 0;
  v[n] = NULL;
  return n;
}

/* Spawns the specs into @p o as @p l says. */
static void of_populate(of_world_t *o, const layout_t *l, const spec_t *sp,
                        uint32_t n) {
  wt_rng_t r = wt_rng(l->seed);
  uint32_t *order = calloc(n, sizeof *order);
  assert_non_null(order);
  for (uint32_t i = 0; i < n; i++)
    order[i] = l->order == 1 ? n - 1 - i : i;
  if (l->order == 2)
    for (uint32_t i = n; i > 1; i--) {
      uint32_t j = wt_below(&r, i), t = order[i - 1];
      order[i - 1] = order[j];
      order[j] = t;
    }
  /* Churn: fillers with Position interleave with the first specs and are
   * despawned in a scattered order (holes, moved rows); every third is
   * kept, without Position, in another archetype. */
  weft_entity_t *fill = calloc(l->churn + 1, sizeof *fill);
  assert_non_null(fill);
  for (uint32_t i = 0; i < l->churn; i++) {
    weft_vec2_t p = {frand(&r, OF_LO, OF_HI), frand(&r, OF_LO, OF_HI)};
    uint64_t tag = i;
    const weft_component_t c[] = {i % 3 ? o->s.position : o->filler, 0};
    const void *v[] = {i % 3 ? (const void *)&p : &tag, NULL};
    fill[i] = wt_spawn_with(o->w, c, v);
  }
  for (uint32_t i = 0; i < l->churn; i++) {
    uint32_t j = (uint32_t)(((uint64_t)i * 7919u) % l->churn);
    if (j % 3)
      assert_int_equal(weft_despawn(o->w, fill[j]), WEFT_OK);
  }
  /* Handles for spawn_at: distinct slots past the fillers', shuffled, with
   * generations 1..3. */
  uint32_t *slots = calloc(n, sizeof *slots);
  assert_non_null(slots);
  for (uint32_t i = 0; i < n; i++)
    slots[i] = l->churn + 5 + 2 * i;
  for (uint32_t i = n; i > 1; i--) {
    uint32_t j = wt_below(&r, i), t = slots[i - 1];
    slots[i - 1] = slots[j];
    slots[j] = t;
  }
  for (uint32_t i = 0; i < n; i++) {
    weft_component_t c[8];
    const void *v[8];
    weft_key_t key;
    weft_collider_t col;
    weft_health_t hp;
    weft_spawner_t spn;
    weft_armor_t arm;
    spec_comps(o, &sp[order[i]], c, v, &key, &col, &hp, &spn, &arm);
    weft_entity_t e = WEFT_ENTITY_NULL;
    if (l->spawn_at) {
      weft_entity_t h = wt_handle(slots[i], 1 + wt_below(&r, 3), 42);
      assert_int_equal(weft_spawn_at(o->w, h, c, v, &e), WEFT_OK);
    } else {
      assert_int_equal(weft_spawn_with(o->w, c, v, &e), WEFT_OK);
    }
  }
  free(slots);
  free(fill);
  free(order);
}

static void of_tick(of_world_t *o) {
  int rc = weft_world_progress(o->w, OF_DT);
  if (rc != WEFT_OK)
    fail_msg("progress: %s (%s)", weft_strerror(rc),
             weft_world_last_error(o->w));
}

/* --- the comparison ------------------------------------------------------- */

/* Everything the systems may have changed of one keyed entity, as bytes:
 * each standard component's value (zero when absent) and its presence
 * and enabled bits. */
typedef struct rec_t {
  uint64_t key;
  uint32_t has, enabled;
  weft_vec2_t p, v;
  weft_collider_t col;
  weft_health_t hp;
  weft_damage_t dmg;
  weft_lifetime_t lt;
  weft_spawner_t spn;
} rec_t;

typedef struct dump_t {
  rec_t *r;
  uint32_t n, cap;
} dump_t;

static void rec_part(const of_world_t *o, weft_entity_t e, weft_component_t c,
                     uint32_t bit, void *out, rec_t *r) {
  if (!weft_has(o->w, e, c))
    return;
  r->has |= 1u << bit;
  r->enabled |= weft_is_enabled(o->w, e, c) ? 1u << bit : 0u;
  if (out)
    assert_int_equal(weft_read(o->w, e, c, out), WEFT_OK);
}

static int by_key(const void *pa, const void *pb) {
  const rec_t *a = pa, *b = pb;
  return a->key < b->key ? -1 : a->key > b->key;
}

/* Every keyed entity of @p o that is not a ghost, by key; and checks that
 * every entity with Position has a Key (projectiles included). */
static dump_t of_dump(const of_world_t *o) {
  dump_t d;
  memset(&d, 0, sizeof d);
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = o->s.position;
  qd.exclude[0] = o->s.ghost;
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(o->w, &qd, &q), WEFT_OK);
  weft_iter_t it;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    for (uint32_t i = 0; i < it.count; i++) {
      weft_entity_t e = it.entities[i];
      weft_key_t key;
      if (weft_read(o->w, e, o->s.key, &key) != WEFT_OK)
        fail_msg("entity %llx has Position but no Key", (unsigned long long)e);
      if (d.n == d.cap) {
        d.cap = d.cap ? 2 * d.cap : 256;
        d.r = realloc(d.r, d.cap * sizeof *d.r);
        assert_non_null(d.r);
      }
      rec_t *r = &d.r[d.n++];
      memset(r, 0, sizeof *r);
      r->key = key.id;
      rec_part(o, e, o->s.position, 0, &r->p, r);
      rec_part(o, e, o->s.velocity, 1, &r->v, r);
      rec_part(o, e, o->s.collider, 2, &r->col, r);
      rec_part(o, e, o->s.health, 3, &r->hp, r);
      rec_part(o, e, o->s.damage, 4, &r->dmg, r);
      rec_part(o, e, o->s.lifetime, 5, &r->lt, r);
      rec_part(o, e, o->s.spawner, 6, &r->spn, r);
      rec_part(o, e, o->s.dead, 7, NULL, r);
      rec_part(o, e, o->s.boid, 8, NULL, r);
    }
  }
  weft_iter_close(&it);
  weft_query_destroy(q);
  if (d.n)
    qsort(d.r, d.n, sizeof *d.r, by_key);
  for (uint32_t i = 1; i < d.n; i++)
    if (d.r[i].key == d.r[i - 1].key)
      fail_msg("key %llx twice", (unsigned long long)d.r[i].key);
  return d;
}

/* The two dumps hold the same keys with the same bytes. */
static void dump_equal(const dump_t *a, const dump_t *b, const char *what) {
  if (a->n != b->n)
    fail_msg("%s: %u keyed entities against %u", what, a->n, b->n);
  for (uint32_t i = 0; i < a->n; i++) {
    const rec_t *x = &a->r[i], *y = &b->r[i];
    if (x->key != y->key)
      fail_msg("%s: key %llx against %llx", what, (unsigned long long)x->key,
               (unsigned long long)y->key);
    if (memcmp(x, y, sizeof *x) != 0)
      fail_msg("%s: key %llx differs: p (%.9g, %.9g) / (%.9g, %.9g), "
               "v (%.9g, %.9g) / (%.9g, %.9g), hp %.9g / %.9g, has %x / %x",
               what, (unsigned long long)x->key, (double)x->p.x, (double)x->p.y,
               (double)y->p.x, (double)y->p.y, (double)x->v.x, (double)x->v.y,
               (double)y->v.x, (double)y->v.y, (double)x->hp.hp,
               (double)y->hp.hp, x->has, y->has);
  }
}

/* Keys that are not small consecutive numbers, nor in spawn order. */
static uint64_t spec_key(uint32_t i) {
  return weft_key_derive(0x5eedu, i) >> 1;
}

static spec_t *make_specs(int scn, uint32_t n, uint64_t seed) {
  spec_t *sp = calloc(n, sizeof *sp);
  assert_non_null(sp);
  wt_rng_t r = wt_rng(seed);
  for (uint32_t i = 0; i < n; i++) {
    sp[i].key = spec_key(i);
    /* Clustered, so that boids have many neighbours and units collide. */
    float cx = 8.0f + 16.0f * (float)(i % 2),
          cy = 8.0f + 16.0f * (float)(i % 3 == 0);
    sp[i].p =
        (weft_vec2_t){cx + frand(&r, -6.0f, 6.0f), cy + frand(&r, -6.0f, 6.0f)};
    sp[i].v = (weft_vec2_t){frand(&r, -3.0f, 3.0f), frand(&r, -3.0f, 3.0f)};
    sp[i].boid = scn == SCN_BOIDS;
    sp[i].turret = scn == SCN_ARENA && i % 16 == 0;
    sp[i].unit = scn == SCN_ARENA && !sp[i].turret;
  }
  return sp;
}

static const layout_t layouts[] = {
    {0, 0, 0, 0, false, 1},
    {0, WEFT_CHUNK_SIZE_MIN, 1, 37, false, 2},
    {2, WEFT_CHUNK_SIZE_MIN, 2, 101, false, 3},
    {2, 0, 2, 13, true, 4},
    {0, WEFT_CHUNK_SIZE_MIN, 0, 64, true, 5},
};
#define NLAYOUTS (sizeof layouts / sizeof *layouts)

/* Runs scenario @p scn for @p ticks in every layout and compares each
 * with the first after every few ticks. Returns the first world's final
 * dump's size through *count. */
static void compare_layouts(int scn, uint32_t n, uint32_t ticks,
                            uint32_t *count, uint32_t *dead, uint32_t *events) {
  spec_t *sp = make_specs(scn, n, 77 + (uint64_t)scn);
  of_world_t o[NLAYOUTS];
  for (uint32_t k = 0; k < NLAYOUTS; k++) {
    o[k] = of_new(&layouts[k], scn);
    of_populate(&o[k], &layouts[k], sp, n);
  }
  for (uint32_t t = 1; t <= ticks; t++) {
    for (uint32_t k = 0; k < NLAYOUTS; k++)
      of_tick(&o[k]);
    if (t % 8 && t != ticks)
      continue;
    dump_t ref = of_dump(&o[0]);
    for (uint32_t k = 1; k < NLAYOUTS; k++) {
      dump_t d = of_dump(&o[k]);
      char what[64];
      snprintf(what, sizeof what, "tick %u, layout %u", t, k);
      dump_equal(&ref, &d, what);
      free(d.r);
      /* The same collision events, by key, in the same order. */
      if (o[0].log) {
        assert_int_equal(o[k].log->n, o[0].log->n);
        assert_memory_equal(o[k].log->v, o[0].log->v,
                            o[0].log->n * sizeof *o[0].log->v);
      }
    }
    if (o[0].log && events)
      *events = o[0].log->n / 4;
    if (t == ticks) {
      *count = ref.n;
      *dead = 0;
      for (uint32_t i = 0; i < ref.n; i++)
        *dead += (ref.r[i].has >> 7) & 1u;
    }
    free(ref.r);
  }
  for (uint32_t k = 0; k < NLAYOUTS; k++)
    of_free(&o[k]);
  free(sp);
}

static void test_order_free_particles(void **state) {
  (void)state;
  uint32_t count = 0, dead = 0;
  compare_layouts(SCN_PARTICLES, 500, 24, &count, &dead, NULL);
  assert_int_equal(count, 500);
}

static void test_order_free_boids(void **state) {
  (void)state;
  uint32_t count = 0, dead = 0;
  compare_layouts(SCN_BOIDS, 700, 24, &count, &dead, NULL);
  assert_int_equal(count, 700);
}

/* Projectiles are spawned, hit, expire (despawns) and units die. */
static void test_order_free_arena(void **state) {
  (void)state;
  uint32_t count = 0, dead = 0, events = 0;
  const uint32_t n = 400, ticks = 40;
  compare_layouts(SCN_ARENA, n, ticks, &count, &dead, &events);
  assert_true(count > n);      /* projectiles alive, keyed */
  assert_true(dead > 0);       /* hits landed */
  assert_true(events > ticks); /* and collisions, more than one a tick */
}

/* weft_key_derive() is a documented mix: children of one parent, and the
 * same child of nearby parents, are all distinct, and never UINT64_MAX. */
static void test_order_free_key_derive(void **state) {
  (void)state;
  enum { P = 64, C = 64 };
  uint64_t *k = calloc(P * C, sizeof *k);
  assert_non_null(k);
  for (uint32_t p = 0; p < P; p++)
    for (uint32_t c = 0; c < C; c++) {
      k[p * C + c] = weft_key_derive(p, c);
      assert_true(k[p * C + c] != UINT64_MAX);
    }
  for (uint32_t i = 0; i < P * C; i++)
    for (uint32_t j = i + 1; j < P * C; j++)
      assert_true(k[i] != k[j]);
  /* A child is not its parent's sibling's child with another number. */
  assert_true(weft_key_derive(weft_key_derive(1, 2), 3) !=
              weft_key_derive(weft_key_derive(1, 3), 2));
  free(k);
}

/* --- the split world ------------------------------------------------------ */

#define SPLIT_MID 16.0f
#define SPLIT_HALO 2.0f /* >= the boids radius and any contact's reach */

/* The keyed entities of @p o, ghosts or owned ones, with their position. */
typedef struct owned_t {
  weft_entity_t e;
  uint64_t key;
  weft_vec2_t p;
} owned_t;

static uint32_t owned_list(const of_world_t *o, bool ghosts, owned_t **out) {
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = o->s.key;
  if (ghosts)
    qd.include[1] = o->s.ghost;
  else
    qd.exclude[0] = o->s.ghost;
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(o->w, &qd, &q), WEFT_OK);
  uint32_t n = weft_query_count(q), k = 0;
  owned_t *l = calloc(n + 1, sizeof *l);
  assert_non_null(l);
  weft_iter_t it;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it))
    for (uint32_t i = 0; i < it.count; i++) {
      owned_t *x = &l[k++];
      weft_key_t key;
      x->e = it.entities[i];
      assert_int_equal(weft_read(o->w, x->e, o->s.key, &key), WEFT_OK);
      x->key = key.id;
      assert_int_equal(weft_read(o->w, x->e, o->s.position, &x->p), WEFT_OK);
    }
  weft_iter_close(&it);
  weft_query_destroy(q);
  assert_int_equal(k, n);
  *out = l;
  return n;
}

/* Copies entity @p e of @p from into @p to: every standard component it
 * has, with its value and its enabled state, plus the Ghost tag when
 * @p ghost (what a halo exchange or a migration carries). Relation edges
 * stay behind. */
static void copy_entity(const of_world_t *from, weft_entity_t e, of_world_t *to,
                        bool ghost) {
  const weft_std_t *s = &from->s;
  const weft_component_t all[] = {
      s->key,    s->position, s->velocity, s->collider, s->health, s->armor,
      s->damage, s->lifetime, s->spawner,  s->boid,     s->dead};
  enum { N = sizeof all / sizeof *all };
  _Alignas(16) unsigned char buf[N][64];
  weft_component_t c[N + 2];
  const void *v[N + 2];
  bool off[N + 2];
  uint32_t k = 0;
  for (uint32_t i = 0; i < N; i++) {
    if (!weft_has(from->w, e, all[i]))
      continue;
    /* The two worlds registered the std components alike. */
    int rc = weft_read(from->w, e, all[i], buf[i]);
    assert_true(rc == WEFT_OK || rc == WEFT_ETAG);
    c[k] = all[i];
    v[k] = rc == WEFT_OK ? buf[i] : NULL;
    off[k++] = !weft_is_enabled(from->w, e, all[i]);
  }
  if (ghost) {
    c[k] = to->s.ghost;
    v[k] = NULL;
    off[k++] = false;
  }
  c[k] = 0;
  v[k] = NULL;
  weft_entity_t copy = wt_spawn_with(to->w, c, v);
  for (uint32_t i = 0; i < k; i++)
    if (off[i])
      assert_int_equal(weft_disable(to->w, copy, c[i]), WEFT_OK);
}

/* Moves @p from's owned entities that left its side (x < mid for the left
 * world) to @p to: the migration. Returns how many moved. */
static uint32_t migrate(of_world_t *from, of_world_t *to, bool left) {
  owned_t *l = NULL;
  uint32_t n = owned_list(from, false, &l), moved = 0;
  for (uint32_t i = 0; i < n; i++) {
    bool mine = left ? l[i].p.x < SPLIT_MID : !(l[i].p.x < SPLIT_MID);
    if (mine)
      continue;
    copy_entity(from, l[i].e, to, false);
    assert_int_equal(weft_despawn(from->w, l[i].e), WEFT_OK);
    moved++;
  }
  free(l);
  return moved;
}

/* Replaces @p to's ghosts with copies of @p from's owned entities within
 * the halo of the cut. */
static uint32_t refresh_ghosts(const of_world_t *from, of_world_t *to) {
  owned_t *l = NULL;
  uint32_t n = owned_list(to, true, &l);
  for (uint32_t i = 0; i < n; i++)
    assert_int_equal(weft_despawn(to->w, l[i].e), WEFT_OK);
  free(l);
  n = owned_list(from, false, &l);
  uint32_t copied = 0;
  for (uint32_t i = 0; i < n; i++)
    if (fabsf(l[i].p.x - SPLIT_MID) < SPLIT_HALO) {
      copy_entity(from, l[i].e, to, true);
      copied++;
    }
  free(l);
  return copied;
}

/* Runs scenario @p scn on the specs in one world and in two halves cut at
 * SPLIT_MID, and compares every owned entity with the whole world's after
 * every tick. Returns the ghosts copied and the entities migrated. */
static void split_run(int scn, const spec_t *sp, uint32_t n, uint32_t ticks,
                      uint32_t *ghosts, uint32_t *moved, uint32_t *dead) {
  const layout_t whole_l = {0, 0, 0, 0, false, 1};
  const layout_t side_l[2] = {{2, WEFT_CHUNK_SIZE_MIN, 2, 17, false, 8},
                              {0, WEFT_CHUNK_SIZE_MIN, 1, 5, true, 9}};
  of_world_t whole = of_new(&whole_l, scn);
  of_populate(&whole, &whole_l, sp, n);
  of_world_t side[2];
  for (int s = 0; s < 2; s++) {
    side[s] = of_new(&side_l[s], scn);
    spec_t *mine = calloc(n, sizeof *mine);
    assert_non_null(mine);
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++)
      if ((sp[i].p.x < SPLIT_MID) == (s == 0))
        mine[k++] = sp[i];
    of_populate(&side[s], &side_l[s], mine, k);
    free(mine);
  }
  *ghosts = *moved = 0;
  for (uint32_t t = 1; t <= ticks; t++) {
    *ghosts += refresh_ghosts(&side[1], &side[0]);
    *ghosts += refresh_ghosts(&side[0], &side[1]);
    of_tick(&whole);
    of_tick(&side[0]);
    of_tick(&side[1]);
    *moved += migrate(&side[0], &side[1], true);
    *moved += migrate(&side[1], &side[0], false);
    /* The owned entities of both halves are the whole world's, bit for
     * bit. */
    dump_t a = of_dump(&side[0]), b = of_dump(&side[1]), w = of_dump(&whole);
    dump_t both;
    both.n = a.n + b.n;
    both.cap = both.n;
    both.r = calloc(both.n + 1, sizeof *both.r);
    assert_non_null(both.r);
    memcpy(both.r, a.r, a.n * sizeof *a.r);
    memcpy(both.r + a.n, b.r, b.n * sizeof *b.r);
    qsort(both.r, both.n, sizeof *both.r, by_key);
    char what[64];
    snprintf(what, sizeof what, "split, tick %u", t);
    dump_equal(&w, &both, what);
    *dead = 0;
    for (uint32_t i = 0; i < w.n; i++)
      *dead += (w.r[i].has >> 7) & 1u;
    free(a.r);
    free(b.r);
    free(w.r);
    free(both.r);
  }
  of_free(&whole);
  of_free(&side[0]);
  of_free(&side[1]);
}

static void test_order_free_split_boids(void **state) {
  (void)state;
  const uint32_t n = 600, ticks = 24;
  spec_t *sp = make_specs(SCN_BOIDS, n, 99);
  /* Everyone near the cut, so that many boids interact across it. */
  wt_rng_t r = wt_rng(5);
  for (uint32_t i = 0; i < n; i++)
    sp[i].p.x = SPLIT_MID + frand(&r, -7.0f, 7.0f);
  uint32_t ghosts = 0, moved = 0, dead = 0;
  split_run(SCN_BOIDS, sp, n, ticks, &ghosts, &moved, &dead);
  assert_true(ghosts > ticks * 20); /* the cut was crowded */
  assert_true(moved > 0);
  free(sp);
}

/* The arena split in two: units collide, take hits and die across the
 * cut, turrets near it fire projectiles that cross it and expire on
 * either side. */
static void test_order_free_split_arena(void **state) {
  (void)state;
  const uint32_t n = 500, ticks = 32;
  spec_t *sp = make_specs(SCN_ARENA, n, 123);
  wt_rng_t r = wt_rng(6);
  for (uint32_t i = 0; i < n; i++) {
    sp[i].p.x = SPLIT_MID + frand(&r, -6.0f, 6.0f);
    sp[i].armor = true; /* hits of 0.63: their order shows in the sums */
  }
  uint32_t ghosts = 0, moved = 0, dead = 0;
  split_run(SCN_ARENA, sp, n, ticks, &ghosts, &moved, &dead);
  assert_true(ghosts > ticks * 20);
  assert_true(moved > 0);
  assert_true(dead > 10);
  free(sp);
}

/* Ghosts are read but never written: a ghost boid, particle, unit or
 * spawner keeps its values and spawns nothing. */
static void test_order_free_ghosts_not_written(void **state) {
  (void)state;
  for (int scn = SCN_PARTICLES; scn <= SCN_ARENA; scn++) {
    const layout_t l = {0, 0, 0, 0, false, 1};
    of_world_t o = of_new(&l, scn);
    spec_t *sp = make_specs(scn, 64, 3);
    of_populate(&o, &l, sp, 64);
    /* Every entity becomes a ghost. */
    owned_t *all = NULL;
    uint32_t n = owned_list(&o, false, &all);
    for (uint32_t i = 0; i < n; i++)
      assert_int_equal(weft_add(o.w, all[i].e, o.s.ghost, NULL), WEFT_OK);
    free(all);
    dump_t before = of_dump(&o);
    const uint32_t count0 = weft_world_count(o.w);
    for (uint32_t t = 0; t < 12; t++)
      of_tick(&o);
    /* of_dump() leaves ghosts out: dump them by asking for everything. */
    dump_t after = of_dump(&o);
    assert_int_equal(after.n, 0);
    assert_int_equal(before.n, 0);
    assert_int_equal(weft_world_count(o.w), count0);
    owned_t *g = NULL;
    uint32_t ng = owned_list(&o, true, &g);
    assert_int_equal(ng, n);
    for (uint32_t i = 0; i < ng; i++) {
      const spec_t *s = NULL;
      for (uint32_t j = 0; j < 64 && !s; j++)
        if (sp[j].key == g[i].key)
          s = &sp[j];
      assert_non_null(s);
      assert_memory_equal(&g[i].p, &s->p, sizeof s->p);
      weft_vec2_t v;
      if (!s->turret) {
        assert_int_equal(weft_read(o.w, g[i].e, o.s.velocity, &v), WEFT_OK);
        assert_memory_equal(&v, &s->v, sizeof s->v);
      }
      weft_health_t hp;
      if (weft_read(o.w, g[i].e, o.s.health, &hp) == WEFT_OK)
        assert_true(hp.hp == (s->unit ? 3.0f : 20.0f));
      assert_false(weft_has(o.w, g[i].e, o.s.dead));
    }
    free(g);
    free(before.r);
    free(after.r);
    free(sp);
    of_free(&o);
  }
}

/* Spawns a circle at (x, y) with Health @p hp (0: none), Damage @p dmg (0:
 * none), a Key, and the Ghost tag when @p ghost. */
static weft_entity_t hit_body(of_world_t *o, uint64_t key, float x, float hp,
                              float dmg, bool ghost) {
  weft_key_t k = {key};
  weft_vec2_t p = {x, 10.0f};
  weft_collider_t col;
  memset(&col, 0, sizeof col);
  col.shape = WEFT_SHAPE_CIRCLE;
  col.r = 0.5f;
  weft_health_t h = {hp, hp};
  weft_damage_t d = {dmg};
  weft_component_t c[8];
  const void *v[8];
  uint32_t n = 0;
  c[n] = o->s.key, v[n++] = &k;
  c[n] = o->s.position, v[n++] = &p;
  c[n] = o->s.collider, v[n++] = &col;
  if (hp > 0.0f)
    c[n] = o->s.health, v[n++] = &h;
  if (dmg > 0.0f)
    c[n] = o->s.damage, v[n++] = &d;
  if (ghost)
    c[n] = o->s.ghost, v[n++] = NULL;
  c[n] = 0;
  return wt_spawn_with(o->w, c, v);
}

static float hp_of(const of_world_t *o, weft_entity_t e) {
  weft_health_t h;
  assert_int_equal(weft_read(o->w, e, o->s.health, &h), WEFT_OK);
  return h.hp;
}

/* A collision between an owned entity and a ghost has its effect on the
 * owned side only: an owned unit takes the hits of owned and ghost
 * damagers; a ghost unit takes none, and is not killed. */
static void test_order_free_ghost_hits(void **state) {
  (void)state;
  for (uint32_t workers = 0; workers <= 2; workers += 2) {
    const layout_t l = {workers, 0, 0, 0, false, 1};
    of_world_t o = of_new(&l, SCN_ARENA);
    /* Four bodies within reach of one another, at x 10 .. 10.6. */
    weft_entity_t unit = hit_body(&o, 10, 10.0f, 5.0f, 0.0f, false);
    weft_entity_t gunit = hit_body(&o, 11, 10.2f, 1.5f, 0.0f, true);
    (void)hit_body(&o, 12, 10.4f, 0.0f, 1.0f, false);
    (void)hit_body(&o, 13, 10.6f, 0.0f, 2.0f, true);
    of_tick(&o);
    assert_true(hp_of(&o, unit) == 5.0f - 1.0f - 2.0f);
    assert_true(hp_of(&o, gunit) == 1.5f);
    assert_false(weft_has(o.w, gunit, o.s.dead));
    /* Every pair collided but the two ghosts (their owner reports it). */
    assert_int_equal(o.log->n / 4, 5);
    of_tick(&o);
    assert_true(hp_of(&o, unit) == 5.0f - 6.0f);
    assert_true(weft_has(o.w, unit, o.s.dead));
    assert_true(hp_of(&o, gunit) == 1.5f);
    assert_false(weft_has(o.w, gunit, o.s.dead));
    of_free(&o);
  }
}

/* A keyed spawner keys projectile n of its burst in tick t as documented,
 * weft_key_derive(weft_key_derive(spawner key, t), n), and draws its
 * direction by its own key, not its handle. */
static void test_order_free_spawner_keys(void **state) {
  (void)state;
  const layout_t l = {0, 0, 0, 0, false, 1};
  of_world_t o = of_new(&l, SCN_ARENA);
  /* Filler handles first, so that the spawner's handle is not its key. */
  for (int i = 0; i < 5; i++)
    (void)wt_spawn(o.w);
  spec_t sp;
  memset(&sp, 0, sizeof sp);
  sp.key = 0x1234567u * 7u; /* timer (key % 7) / 32 = 0: fires at once */
  sp.turret = true;
  sp.p = (weft_vec2_t){10.0f, 10.0f};
  of_populate(&o, &l, &sp, 1);
  const uint64_t seed = weft_random_world_seed(o.w);
  uint32_t seen = 0;
  for (uint64_t tick = 0; tick < 12; tick++) {
    of_tick(&o);
    /* This tick's burst, if any, found by its keys. */
    for (uint32_t n = 0; n < 3; n++) {
      uint64_t want = weft_key_derive(weft_key_derive(sp.key, tick), n);
      weft_query_desc_t qd;
      memset(&qd, 0, sizeof qd);
      qd.include[0] = o.s.key;
      qd.include[1] = o.s.lifetime;
      weft_query_t *q = NULL;
      assert_int_equal(weft_query_create(o.w, &qd, &q), WEFT_OK);
      weft_iter_t it;
      weft_query_iter(q, &it);
      bool found = false;
      while (weft_iter_next(&it))
        for (uint32_t i = 0; i < it.count; i++) {
          weft_key_t k;
          assert_int_equal(weft_read(o.w, it.entities[i], o.s.key, &k),
                           WEFT_OK);
          if (k.id != want)
            continue;
          found = true;
          weft_vec2_t v;
          assert_int_equal(weft_read(o.w, it.entities[i], o.s.velocity, &v),
                           WEFT_OK);
          uint64_t r =
              weft_random_at(seed, sp.key, tick, WEFT_SPAWNER_STREAM, n);
          double a = 6.283185307179586 * ((double)(r >> 11) * 0x1.0p-53);
          assert_true(v.x == (float)(7.0f * cos(a)));
          assert_true(v.y == (float)(7.0f * sin(a)));
        }
      weft_iter_close(&it);
      weft_query_destroy(q);
      seen += found;
    }
  }
  /* Interval 0.25 s at 1/32 s a tick: bursts at ticks 0 and 7. */
  assert_int_equal(seen, 6);
  of_free(&o);
}

/*
 * The keyed rule, where split worlds would otherwise part: K kills G, then
 * G touches X across the cut, in that order (cell 7 holds K and G, K's
 * key first; X is in cell 8). G is owned left of the cut, X right of it.
 * On the right, G is a ghost that nothing kills; so in every world G,
 * killed earlier in the run, still deals its damage to X.
 */
static void test_order_free_split_kill(void **state) {
  (void)state;
  const layout_t l = {0, 0, 0, 0, false, 1};
  of_world_t whole = of_new(&l, SCN_ARENA), left = of_new(&l, SCN_ARENA),
             right = of_new(&l, SCN_ARENA);
  weft_entity_t x[3], g[3];
  for (int k = 0; k < 3; k++) {
    of_world_t *o = k == 0 ? &whole : k == 1 ? &left : &right;
    (void)hit_body(o, 20, 15.2f, 0.0f, 5.0f, k == 2);   /* K */
    g[k] = hit_body(o, 21, 15.8f, 1.0f, 1.0f, k == 2);  /* G */
    x[k] = hit_body(o, 22, 16.5f, 10.0f, 0.0f, k == 1); /* X */
  }
  of_tick(&whole);
  of_tick(&left);
  of_tick(&right);
  /* (K, G) then (G, X) in the whole world, and G died. */
  assert_int_equal(whole.log->n / 4, 2);
  assert_true(whole.log->v[0] == 20 && whole.log->v[1] == 21);
  assert_true(weft_has(whole.w, g[0], whole.s.dead));
  assert_true(weft_has(left.w, g[1], left.s.dead));
  /* X took G's hit in the whole world as on its own side. */
  assert_true(hp_of(&whole, x[0]) == 9.0f);
  assert_true(hp_of(&right, x[2]) == 9.0f);
  /* The ghosts kept their values. */
  assert_true(hp_of(&right, g[2]) == 1.0f);
  assert_false(weft_has(right.w, g[2], right.s.dead));
  assert_true(hp_of(&left, x[1]) == 10.0f);
  of_free(&whole);
  of_free(&left);
  of_free(&right);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_order_free_key_derive),
      cmocka_unit_test(test_order_free_particles),
      cmocka_unit_test(test_order_free_boids),
      cmocka_unit_test(test_order_free_arena),
      cmocka_unit_test(test_order_free_split_boids),
      cmocka_unit_test(test_order_free_split_arena),
      cmocka_unit_test(test_order_free_ghosts_not_written),
      cmocka_unit_test(test_order_free_ghost_hits),
      cmocka_unit_test(test_order_free_split_kill),
      cmocka_unit_test(test_order_free_spawner_keys),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
