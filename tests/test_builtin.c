/* SPDX-License-Identifier: MIT */
/*
 * What the built-in systems share (systems/builtin.c), through the public
 * API: each weft_sys_*() registers its systems under their documented
 * names, in the phase it was given and in the documented order; a second
 * registration is refused with WEFT_EEXIST and a message naming the
 * function and the system before it makes or changes anything, so the
 * world's digest and systems stay as they were and the first registration
 * runs on exactly as in a world that never saw the second call.
 *
 * Every test builds and destroys its own worlds.
 */
#include "support/weft_test.h"

#include <weft/builtin.h>

/* --- fixture ----------------------------------------------------------------
 */

#define FIXED 0.125 /* exact in float */
#define PHASE WEFT_PHASE_FIXED_UPDATE

/* Every built-in system's name, in registration order. */
static const char *const names[] = {
    "weft.gravity",    "weft.damping",    "weft.move",   "weft.bounds",
    "weft.grid.build", "weft.collide",    "weft.health", "weft.lifetime",
    "weft.spawners",   "weft.boids.plan", "weft.boids"};
#define NAMES (sizeof names / sizeof names[0])

typedef struct bt_t {
  weft_world_t *w;
  weft_pool_t *pool; /* NULL: everything inline */
  weft_std_t std;
  weft_grid_t *grid;  /* the one every system uses */
  weft_grid_t *other; /* a second grid, for the refused calls */
  weft_integrate_config_t integrate;
  weft_boids_config_t boids;
  weft_system_t ids[NAMES]; /* what the registrations returned */
} bt_t;

/* A world with every built-in system registered once, and entities that
 * collide, take damage, expire, spawn and flock. */
static bt_t bt_new(void) {
  bt_t b;
  memset(&b, 0, sizeof b);
  b.w = wt_world_pooled(0, 0, &b.pool);
  weft_world_t *w = b.w;
  assert_int_equal(weft_std_register(w, &b.std), WEFT_OK);
  weft_pipeline_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.fixed_dt = FIXED;
  pc.net_dt = -1.0;
  assert_int_equal(weft_pipeline_configure(w, &pc), WEFT_OK);

  weft_grid_config_t gc;
  memset(&gc, 0, sizeof gc);
  gc.cell = 2.0f;
  gc.min = (weft_vec2_t){-16.0f, -16.0f};
  gc.max = (weft_vec2_t){16.0f, 16.0f};
  assert_int_equal(weft_grid_create(w, &gc, &b.grid), WEFT_OK);
  assert_int_equal(weft_grid_create(w, &gc, &b.other), WEFT_OK);

  b.integrate.phase = PHASE;
  b.integrate.gravity = (weft_vec2_t){0.0f, -1.0f};
  b.integrate.damping = 0.25f;
  b.integrate.mode = WEFT_BOUNDS_BOUNCE;
  b.integrate.min = gc.min;
  b.integrate.max = gc.max;
  weft_integrate_systems_t is;
  assert_int_equal(weft_sys_integrate(w, &b.std, &b.integrate, &is), WEFT_OK);
  b.ids[0] = is.gravity;
  b.ids[1] = is.damping;
  b.ids[2] = is.move;
  b.ids[3] = is.bounds;
  assert_int_equal(weft_sys_grid(w, &b.std, b.grid, 0, PHASE, &b.ids[4]),
                   WEFT_OK);
  assert_int_equal(weft_sys_collide(w, &b.std, b.grid, PHASE, &b.ids[5]),
                   WEFT_OK);
  assert_int_equal(weft_sys_health(w, &b.std, PHASE, &b.ids[6]), WEFT_OK);
  assert_int_equal(weft_sys_lifetime(w, &b.std, PHASE, &b.ids[7]), WEFT_OK);
  assert_int_equal(weft_sys_spawners(w, &b.std, PHASE, &b.ids[8]), WEFT_OK);
  b.boids.phase = PHASE;
  assert_int_equal(weft_sys_boids(w, &b.std, b.grid, &b.boids, &b.ids[10]),
                   WEFT_OK);
  assert_int_equal(weft_system_lookup(w, "weft.boids.plan", &b.ids[9]),
                   WEFT_OK);

  /* A row of overlapping boids with health and damage, every third one
   * mortal, and a spawner in the middle. */
  const weft_component_t comps[] = {b.std.position, b.std.velocity,
                                    b.std.collider, b.std.health,
                                    b.std.damage,   b.std.boid};
  for (uint32_t i = 0; i < 24; i++) {
    weft_entity_t e;
    assert_int_equal(weft_spawn(w, &e), WEFT_OK);
    weft_vec2_t p = {-6.0f + 0.5f * (float)i, 0.25f * (float)(i % 3)};
    weft_vec2_t v = {(float)(i % 5) - 2.0f, 1.0f};
    weft_collider_t c = {WEFT_SHAPE_CIRCLE, 0.5f, 0, 0, 1, 1};
    weft_health_t h = {10.0f, 10.0f};
    weft_damage_t d = {1.5f};
    const void *values[] = {&p, &v, &c, &h, &d, NULL};
    for (uint32_t k = 0; k < 6; k++)
      assert_int_equal(weft_add(w, e, comps[k], values[k]), WEFT_OK);
    if (i % 3 == 0) {
      weft_lifetime_t lt = {0.5f + 0.125f * (float)i};
      assert_int_equal(weft_set(w, e, b.std.lifetime, &lt), WEFT_OK);
    }
  }
  weft_entity_t s;
  assert_int_equal(weft_spawn(w, &s), WEFT_OK);
  weft_vec2_t sp = {0.0f, -4.0f};
  weft_spawner_t spawner = {0.25f, 0.0f, 3.0f, 1.0f, 2.0f, 0.25f, 2, 1, 1};
  assert_int_equal(weft_set(w, s, b.std.position, &sp), WEFT_OK);
  assert_int_equal(weft_set(w, s, b.std.spawner, &spawner), WEFT_OK);
  return b;
}

static void bt_free(bt_t *b) {
  weft_grid_destroy(b->grid); /* before the world its queries belong to */
  weft_grid_destroy(b->other);
  weft_world_destroy(b->w);
  if (b->pool)
    weft_pool_destroy(b->pool);
  memset(b, 0, sizeof *b);
}

static void ticks_ok(weft_world_t *w, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    int rc = weft_world_progress(w, FIXED);
    if (rc != WEFT_OK)
      fail_msg("progress: %s (%s)", weft_strerror(rc),
               weft_world_last_error(w));
  }
}

/* The systems of PHASE, in dependency order; returns how many. */
static uint32_t phase_systems(weft_world_t *w, weft_system_t *out) {
  return weft_phase_systems(w, PHASE, out, (uint32_t)NAMES + 1);
}

static int noop(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)ctx;
  (void)chunk;
  return 0;
}

/* Expects @p rc to be WEFT_EEXIST with a message holding @p a and @p b. */
static void refused(weft_world_t *w, int rc, const char *a, const char *b) {
  assert_int_equal(rc, WEFT_EEXIST);
  const char *msg = weft_world_last_error(w);
  if (!strstr(msg, a) || !strstr(msg, b))
    fail_msg("message '%s' lacks '%s' or '%s'", msg, a, b);
}

/* --- tests ------------------------------------------------------------------
 */

static void test_builtin_systems_have_their_names_and_phase(void **state) {
  (void)state;
  bt_t b = bt_new();
  weft_system_t order[NAMES + 1];
  assert_int_equal(phase_systems(b.w, order), NAMES);
  for (uint32_t i = 0; i < NAMES; i++) {
    weft_system_t id = 0;
    assert_int_equal(weft_system_lookup(b.w, names[i], &id), WEFT_OK);
    assert_int_equal(id, b.ids[i]);
    weft_system_info_t info;
    assert_int_equal(weft_system_info(b.w, id, &info), WEFT_OK);
    assert_string_equal(info.name, names[i]);
    assert_int_equal(info.phase, PHASE);
    assert_true(info.enabled);
    assert_false(info.exclusive);
  }
  /* Registration order orders what conflicts: integration runs before
   * the grid snapshots positions, the grid before its readers, and the
   * boids' plan before the chunk loop that copies it. */
  for (uint32_t i = 0; i + 1 < 4; i++)
    assert_true(weft_system_edge(b.w, b.ids[i], b.ids[i + 1]));
  assert_true(weft_system_edge(b.w, b.ids[3], b.ids[4]));
  assert_true(weft_system_edge(b.w, b.ids[4], b.ids[5]));
  assert_true(weft_system_edge(b.w, b.ids[4], b.ids[9]));
  assert_true(weft_system_edge(b.w, b.ids[9], b.ids[10]));
  assert_true(weft_system_edge(b.w, b.ids[5], b.ids[6])); /* the events */
  ticks_ok(b.w, 4);
  bt_free(&b);
}

static void test_builtin_second_registration_changes_nothing(void **state) {
  (void)state;
  bt_t b = bt_new(), twin = bt_new();
  ticks_ok(b.w, 3);
  ticks_ok(twin.w, 3);
  const uint64_t digest = weft_world_digest(b.w);
  assert_int_equal(digest, weft_world_digest(twin.w));
  weft_system_t before[NAMES + 1], after[NAMES + 1];
  assert_int_equal(phase_systems(b.w, before), NAMES);

  /* Every second call: another configuration, the other grid, another
   * phase, an out pointer that must stay untouched. */
  weft_world_t *w = b.w;
  weft_integrate_config_t ic = b.integrate;
  ic.gravity.y = -9.0f;
  weft_integrate_systems_t is = {7, 7, 7, 7};
  refused(w, weft_sys_integrate(w, &b.std, &ic, &is), "weft_sys_integrate",
          "'weft.gravity' exists already");
  assert_int_equal(is.gravity, 7);
  weft_system_t out = 7;
  refused(w, weft_sys_collide(w, &b.std, b.other, PHASE, &out),
          "weft_sys_collide", "'weft.collide' exists already");
  refused(w, weft_sys_health(w, &b.std, WEFT_PHASE_PRE_UPDATE, &out),
          "weft_sys_health", "'weft.health' exists already");
  refused(w, weft_sys_lifetime(w, &b.std, PHASE, &out), "weft.lifetime",
          "exists");
  refused(w, weft_sys_spawners(w, &b.std, PHASE, &out), "weft_sys_spawners",
          "'weft.spawners' exists already");
  weft_boids_config_t bc = b.boids;
  bc.max_speed = 1.0f;
  refused(w, weft_sys_boids(w, &b.std, b.other, &bc, &out), "weft_sys_boids",
          "'weft.boids' exists already");
  assert_int_equal(out, 7);

  /* Nothing was made (no resource: the digest counts them by name) and
   * nothing was changed, so both worlds go on alike. */
  assert_int_equal(weft_world_digest(w), digest);
  assert_int_equal(phase_systems(w, after), NAMES);
  assert_memory_equal(before, after, sizeof before[0] * NAMES);
  ticks_ok(b.w, 6);
  ticks_ok(twin.w, 6);
  assert_int_equal(weft_world_digest(b.w), weft_world_digest(twin.w));
  assert_int_not_equal(weft_world_digest(b.w), digest); /* it moved on */
  bt_free(&twin);
  bt_free(&b);
}

static void test_builtin_grid_builder_name_taken(void **state) {
  (void)state;
  weft_pool_t *pool;
  weft_world_t *w = wt_world_pooled(0, 0, &pool);
  weft_std_t std;
  assert_int_equal(weft_std_register(w, &std), WEFT_OK);
  weft_grid_config_t gc;
  memset(&gc, 0, sizeof gc);
  gc.min = (weft_vec2_t){0.0f, 0.0f};
  gc.max = (weft_vec2_t){8.0f, 8.0f};
  weft_grid_t *g = NULL;
  assert_int_equal(weft_grid_create(w, &gc, &g), WEFT_OK);
  /* A user system holds the builder's name: the grid gets no builder,
   * and a system of that name is all there is. */
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "weft.grid.build";
  d.run = noop;
  weft_system_t user = 0;
  assert_int_equal(weft_system_register(w, &d, &user), WEFT_OK);
  weft_system_t out = 7;
  refused(w, weft_sys_grid(w, &std, g, 0, 0, &out), "weft_sys_grid",
          "'weft.grid.build' exists already");
  assert_int_equal(out, 7);
  weft_system_t only[2];
  assert_int_equal(weft_phase_systems(w, WEFT_PHASE_FIXED_UPDATE, only, 2), 1);
  assert_int_equal(only[0], user);
  /* With the name free again the builder registers. */
  assert_int_equal(weft_system_remove(w, user), WEFT_OK);
  assert_int_equal(weft_sys_grid(w, &std, g, 0, 0, &out), WEFT_OK);
  assert_int_not_equal(out, 7);
  weft_grid_destroy(g);
  weft_world_destroy(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_builtin_systems_have_their_names_and_phase),
      cmocka_unit_test(test_builtin_second_registration_changes_nothing),
      cmocka_unit_test(test_builtin_grid_builder_name_taken),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
