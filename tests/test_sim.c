/* SPDX-License-Identifier: MIT */
/*
 * weft-sim's scenarios (tools/sim_scenarios.c) in their steady state:
 * after a warm-up the world's high-water marks (chunks, command buffers,
 * event channels, the grid's arrays, health's blocks) are reached, and
 * every later tick must allocate nothing: not through the world's
 * allocator (its counter covers every thread), not on this thread
 * (jemalloc's counter, where weft allocates through jemalloc). Each
 * scenario runs without a pool and on a pool of two workers. Every test
 * builds and destroys its own world.
 */
#include "support/weft_test.h"

#include <stdio.h>

#include "support/sim_test.h"

#define SIM_ENTITIES 4000u
#define SIM_SEED 5u

/*
 * Runs @p warm ticks, then @p ticks more under the allocation probes, and
 * checks that they allocated nothing while the world kept changing: the
 * digest moved on, and with @p structural the ticks spawned, despawned
 * and moved entities between archetypes (projectiles, deaths).
 */
static void check_steady(sim_kind_t kind, uint32_t workers, uint32_t warm,
                         uint32_t ticks, bool structural) {
  wt_sim_t s;
  wt_sim_open(&s, kind, workers, SIM_ENTITIES, SIM_SEED);
  for (uint32_t t = 0; t < warm; t++)
    wt_sim_tick(&s);
  const weft_world_stats_t before = wt_stats(s.w);
  const uint64_t digest = weft_world_digest(s.w);
  wt_alloc_probe_t probe = wt_alloc_probe(s.w);
  for (uint32_t t = 0; t < ticks; t++)
    wt_sim_tick(&s);
  char what[64];
  snprintf(what, sizeof what, "%u steady %s ticks on %u workers", ticks,
           sim_kind_name(kind), workers);
  wt_assert_no_alloc(s.w, &probe, what);
  const weft_world_stats_t after = wt_stats(s.w);
  assert_true(weft_world_digest(s.w) != digest);
  if (structural) {
    assert_true(after.spawns > before.spawns);
    assert_true(after.despawns > before.despawns);
    assert_true(after.moves > before.moves);
  }
  wt_sim_close(&s);
}

/* The arena grows for its first ~170 ticks at this size (projectiles in
 * flight, health's blocks, event channels reach their peaks), then holds. */
static void test_sim_arena_steady_ticks_allocate_nothing(void **state) {
  (void)state;
  check_steady(SIM_ARENA, 0, 200, 120, true);
  check_steady(SIM_ARENA, 2, 200, 120, true);
}

static void test_sim_boids_steady_ticks_allocate_nothing(void **state) {
  (void)state;
  check_steady(SIM_BOIDS, 0, 3, 60, false);
  check_steady(SIM_BOIDS, 2, 3, 60, false);
}

static void test_sim_particles_steady_ticks_allocate_nothing(void **state) {
  (void)state;
  check_steady(SIM_PARTICLES, 0, 3, 60, false);
  check_steady(SIM_PARTICLES, 2, 3, 60, false);
}

/* The probes are not blind: the first tick, which sizes everything,
 * allocates in every scenario. */
static void test_sim_first_tick_allocates(void **state) {
  (void)state;
  for (int k = SIM_ARENA; k <= SIM_PARTICLES; k++) {
    wt_sim_t s;
    wt_sim_open(&s, (sim_kind_t)k, 0, SIM_ENTITIES, SIM_SEED);
    wt_alloc_probe_t probe = wt_alloc_probe(s.w);
    wt_sim_tick(&s);
    assert_true(wt_stats(s.w).allocs > probe.allocs);
    if (probe.counter)
      assert_true(*probe.counter > probe.bytes);
    wt_sim_close(&s);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sim_arena_steady_ticks_allocate_nothing),
      cmocka_unit_test(test_sim_boids_steady_ticks_allocate_nothing),
      cmocka_unit_test(test_sim_particles_steady_ticks_allocate_nothing),
      cmocka_unit_test(test_sim_first_tick_allocates),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
