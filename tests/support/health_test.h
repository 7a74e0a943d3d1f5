/* SPDX-License-Identifier: MIT */
/*
 * A world for tests of "weft.health" (systems.h), through the public API:
 * the std components, optionally a pool and the health system; units with
 * what a test gives them; collision events; one FixedUpdate tick. Used by
 * test_health.c and by test_alloc.c's failure injection into the
 * pipeline's command buffers. Include after weft_test.h and
 * <weft/builtin.h>.
 */
#ifndef WEFT_TEST_HEALTH_TEST_H
#define WEFT_TEST_HEALTH_TEST_H

#define DT 0.1

typedef struct hx_t {
  weft_world_t *w;
  weft_pool_t *pool;
  weft_std_t s;
  weft_system_t sys;
} hx_t;

/* A world (with a pool of @p workers, inline_rows 1 so that the task runs
 * on it) and the std components; the health system when @p health. */
static inline hx_t hx_new(uint32_t workers, bool health) {
  hx_t h;
  memset(&h, 0, sizeof h);
  h.w = wt_world_pooled(workers, 0, &h.pool);
  if (workers) {
    weft_pipeline_config_t c;
    memset(&c, 0, sizeof c);
    c.inline_rows = 1;
    assert_int_equal(weft_pipeline_configure(h.w, &c), WEFT_OK);
  }
  assert_int_equal(weft_std_register(h.w, &h.s), WEFT_OK);
  if (health) {
    assert_int_equal(
        weft_sys_health(h.w, &h.s, WEFT_PHASE_FIXED_UPDATE, &h.sys), WEFT_OK);
    assert_int_not_equal(h.sys, 0);
  }
  return h;
}

static inline void hx_free(hx_t *h) {
  weft_world_destroy(h->w); /* before the pool it uses */
  if (h->pool)
    weft_pool_destroy(h->pool);
  memset(h, 0, sizeof *h);
}

/* What a unit carries; NULL pointers: component absent. */
typedef struct unit_t {
  const float *hp;
  const float *damage;
  const weft_armor_t *armor;
  bool dead;
} unit_t;

/* Spawns a unit with Position, Velocity, Collider and what @p u says. */
static inline weft_entity_t spawn_unit(hx_t *h, unit_t u) {
  weft_component_t comps[9];
  const void *vals[9];
  uint32_t n = 0;
  static const weft_vec2_t pos = {1.0f, 2.0f}, vel = {3.0f, -4.0f};
  static const weft_collider_t col = {WEFT_SHAPE_CIRCLE, 0.5f, 0, 0, 1, 1};
  weft_health_t hp;
  weft_damage_t dmg;
  comps[n] = h->s.position;
  vals[n++] = &pos;
  comps[n] = h->s.velocity;
  vals[n++] = &vel;
  comps[n] = h->s.collider;
  vals[n++] = &col;
  if (u.hp) {
    hp.hp = *u.hp;
    hp.max_hp = 100.0f;
    comps[n] = h->s.health;
    vals[n++] = &hp;
  }
  if (u.damage) {
    dmg.amount = *u.damage;
    comps[n] = h->s.damage;
    vals[n++] = &dmg;
  }
  if (u.armor) {
    comps[n] = h->s.armor;
    vals[n++] = u.armor;
  }
  if (u.dead) {
    comps[n] = h->s.dead;
    vals[n++] = NULL;
  }
  comps[n] = 0;
  vals[n] = NULL;
  weft_entity_t e = WEFT_ENTITY_NULL;
  assert_int_equal(weft_spawn_with(h->w, comps, vals, &e), WEFT_OK);
  return e;
}

static inline float hp_of(const hx_t *h, weft_entity_t e) {
  const weft_health_t *v = weft_get(h->w, e, h->s.health);
  assert_non_null(v);
  return v->hp;
}

static inline void push(hx_t *h, weft_entity_t a, weft_entity_t b) {
  weft_collision_t ev;
  memset(&ev, 0, sizeof ev);
  ev.a = a;
  ev.b = b;
  ev.nx = 1.0f;
  ev.depth = 0.1f;
  assert_int_equal(weft_event_push(h->w, h->s.collisions, &ev), WEFT_OK);
}

/* Runs FixedUpdate once (sync point included) and clears the channel, as
 * the fixed loop does after each tick. */
static inline void tick(hx_t *h) {
  int rc = weft_world_run_phase(h->w, WEFT_PHASE_FIXED_UPDATE, DT);
  if (rc != WEFT_OK)
    fail_msg("run_phase: %s (%s)", weft_strerror(rc),
             weft_world_last_error(h->w));
  weft_event_clear(h->w, h->s.collisions);
}

#endif /* WEFT_TEST_HEALTH_TEST_H */
