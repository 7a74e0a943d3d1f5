/* SPDX-License-Identifier: MIT */
/*
 * stress_arena.c: weft-sim's arena scenario (tools/sim_scenarios.c: units,
 * turrets, projectiles, the grid, collisions, health, lifetimes and
 * spawners) at a size where every tick has several of health's blocks of
 * collision events (1,024 each), so health plans later blocks on the
 * workers while the calling thread applies earlier ones (test_health's
 * blocks test wraps its ring of plans, under TSan too).
 *
 * The same scene runs in lockstep without a pool and on pools of 2 and 4
 * workers (4 workers on two cores: preempted workers in the middle of a
 * block's planning); after every tick the three worlds must have the same
 * digest and entity count. The systems under test here are the built-in
 * ones through the public API, so this is the end-to-end check that their
 * parallel paths (grid bands, collide chunks, health planning, command
 * merges) stay deterministic under load; TSan runs it in CI.
 *
 * WEFT_ARENA_ENTITIES and WEFT_ARENA_TICKS override the size (200,000) and
 * the tick count (6). Runtime on two cores: about 2 s in Debug, 40 s under
 * TSan.
 */
#include "support/weft_test.h"

#include <stdlib.h>

#include "support/sim_test.h"

#define ARENA_WORLDS 3u

typedef struct arena_t {
  wt_sim_t sim;
  uint32_t min_events; /* fewest collision events a tick published */
} arena_t;

static uint32_t env_or(const char *name, uint32_t fallback) {
  const char *v = getenv(name);
  if (!v || !*v)
    return fallback;
  unsigned long n = strtoul(v, NULL, 10);
  return n > 0 && n < 10000000ul ? (uint32_t)n : fallback;
}

/* A task beside health that receives the same events and notes the
 * fewest of any tick (it runs on whichever worker; the test reads the
 * count after weft_world_progress() returned). */
static int count_events(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  arena_t *a = ctx->user;
  uint32_t n = 0;
  weft_event_read(ctx->world, a->sim.scene.std.collisions, &n);
  if (n < a->min_events)
    a->min_events = n;
  return 0;
}

static void arena_open(arena_t *a, uint32_t workers, uint32_t entities) {
  memset(a, 0, sizeof *a);
  wt_sim_open(&a->sim, SIM_ARENA, workers, entities, 11);
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "stress.count_events";
  d.phase = WEFT_PHASE_FIXED_UPDATE;
  d.receive[0] = a->sim.scene.std.collisions;
  d.run = count_events;
  d.user = a;
  weft_system_t sys = 0;
  int rc = weft_system_register(a->sim.w, &d, &sys);
  if (rc != WEFT_OK)
    fail_msg("registering the counter: %s (%s)", weft_strerror(rc),
             weft_world_last_error(a->sim.w));
  a->min_events = UINT32_MAX;
}

/* Health ran every tick. */
static void check_health_ran(const arena_t *a, uint32_t ticks) {
  weft_system_t sys = 0;
  assert_int_equal(weft_system_lookup(a->sim.w, "weft.health", &sys), WEFT_OK);
  weft_system_stats_t st;
  assert_int_equal(weft_system_stats(a->sim.w, sys, &st), WEFT_OK);
  assert_int_equal(st.runs, ticks);
}

static void stress_arena_lockstep_digests(void **state) {
  (void)state;
  const uint32_t entities = env_or("WEFT_ARENA_ENTITIES", 200000);
  const uint32_t ticks = env_or("WEFT_ARENA_TICKS", 6);
  static const uint32_t workers[ARENA_WORLDS] = {0, 2, 4};
  arena_t a[ARENA_WORLDS];
  for (uint32_t k = 0; k < ARENA_WORLDS; k++)
    arena_open(&a[k], workers[k], entities);
  uint64_t first = weft_world_digest(a[0].sim.w);
  for (uint32_t t = 0; t < ticks; t++) {
    for (uint32_t k = 0; k < ARENA_WORLDS; k++)
      wt_sim_tick(&a[k].sim);
    uint64_t d0 = weft_world_digest(a[0].sim.w);
    uint32_t n0 = weft_world_count(a[0].sim.w);
    for (uint32_t k = 1; k < ARENA_WORLDS; k++) {
      uint64_t dk = weft_world_digest(a[k].sim.w);
      if (dk != d0 || weft_world_count(a[k].sim.w) != n0)
        fail_msg("tick %u, %u workers: digest %016llx (%u entities), "
                 "inline %016llx (%u entities)",
                 t + 1, workers[k], (unsigned long long)dk,
                 weft_world_count(a[k].sim.w), (unsigned long long)d0, n0);
    }
  }
  /* The world moved, and every tick gave health several blocks of events,
   * so the overlap of planning and applying ran. */
  assert_true(weft_world_digest(a[0].sim.w) != first);
  if (a[0].min_events <= 4 * 1024)
    fail_msg("only %u collision events in a tick", a[0].min_events);
  for (uint32_t k = 0; k < ARENA_WORLDS; k++) {
    check_health_ran(&a[k], ticks);
    wt_sim_close(&a[k].sim);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(stress_arena_lockstep_digests),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
