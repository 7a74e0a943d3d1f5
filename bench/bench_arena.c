/* SPDX-License-Identifier: MIT */
/*
 * arena/2w/scaling: weft-sim's arena scenario (units, turrets,
 * projectiles, the spatial grid, collisions, health, lifetimes; see
 * tools/sim_scenarios.c) at 1M entities, on two workers against the same
 * world on one worker, ticks of 1/60 s. The target is a parallel
 * efficiency of at least 90%.
 *
 * As heavy_compute/2w/scaling does, the baseline side (one worker) counts
 * twice the operations, so the ratio is 2 * t2 / t1 = 1 / efficiency and
 * the target is <= 1/0.9; the efficiency goes into the JSON.
 *
 * The two worlds evolve (projectiles spawn and expire, units die), so they
 * are kept in step: before its timed ticks, the world that is behind runs
 * untimed ticks until it reached the other one's tick. Every timed window
 * then starts from the same state on both sides. At the end both reach
 * the same tick, and their digests must match (or the bench fails).
 *
 * Both sides are weft itself; there is no loop to vectorize here. --quick
 * uses 20,000 entities.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft.h>

#include "bench_systems.h"
#include "harness.h"

#define ARENA_DT (1.0 / 60.0)

void bench_arena_open(bench_arena_side_t *a, uint32_t workers, bool bind_caller,
                      uint32_t n) {
  memset(a, 0, sizeof *a);
  a->pool = bench_pool_new(workers, bind_caller);
  /* One tag for both worlds: handles carry it, and the digests compared
   * at the end cover handles. */
  weft_world_config_t wc = {.pool = a->pool, .world_tag = 1};
  bench_check(weft_world_create(&wc, &a->world), "weft_world_create");
  weft_pipeline_config_t cfg = {.fixed_dt = ARENA_DT};
  bench_check(weft_pipeline_configure(a->world, &cfg), "configure");
  bench_check(sim_scene_build(&a->scene, a->world, SIM_ARENA, n, 1),
              "sim_scene_build");
}

void bench_arena_close(bench_arena_side_t *a) {
  sim_scene_free(&a->scene);
  weft_world_destroy(a->world);
  weft_pool_destroy(a->pool);
}

static void arena_tick(bench_arena_side_t *a) {
  bench_check(weft_world_progress(a->world, ARENA_DT), "weft_world_progress");
  a->ticks++;
}

void bench_arena_pair(bench_arena_side_t *a, bench_arena_side_t *b) {
  a->other = b;
  b->other = a;
  for (int k = 0; k < 3; k++) { /* warm both up: first-touch, plans */
    arena_tick(a);
    arena_tick(b);
  }
}

uint64_t bench_arena_run(void *state, uint64_t reps) {
  bench_arena_side_t *a = state;
  while (a->ticks < a->other->ticks)
    arena_tick(a);
  double t0 = bench_now_ns();
  for (uint64_t r = 0; r < reps; r++)
    arena_tick(a);
  return (uint64_t)(bench_now_ns() - t0);
}

void bench_arena_same(const char *name, bench_arena_side_t *a,
                      bench_arena_side_t *b) {
  bench_arena_run(a, 0);
  bench_arena_run(b, 0);
  if (weft_world_digest(a->world) != weft_world_digest(b->world)) {
    fprintf(stderr,
            "\nweft-bench: %s: %u and %u workers reached different worlds "
            "at tick %llu\n",
            name, weft_pool_workers(a->pool), weft_pool_workers(b->pool),
            (unsigned long long)a->ticks);
    exit(1);
  }
}

void bench_arena(bench_ctx_t *ctx) {
  const char *name = "arena/2w/scaling";
  if (!bench_selected(ctx, name))
    return;
  uint32_t n = ctx->quick ? 20000u : 1000000u;
  static bench_arena_side_t one, two;
  bench_arena_open(&one, 1, false, n);
  bench_arena_open(&two, 2, false, n);
  bench_arena_pair(&one, &two);
  bench_case_t c = {
      .name = name,
      .unit = "ns/entity",
      .n = n,
      .work = {"weft_2w", bench_arena_run, &two, (double)n, true},
      .base = {"weft_1w_x2", bench_arena_run, &one, 2.0 * n, true},
      .target_kind = BENCH_TARGET_RATIO,
      .target = 1.0 / 0.9,
      .workers = 2,
  };
  bench_result_t *r = bench_compare(ctx, &c);
  r->efficiency = 1.0 / r->ratio;
  fprintf(stderr,
          "%-28s    parallel efficiency %.1f%% (%u entities at the "
          "end, tick %llu)\n",
          name, 100.0 * r->efficiency, weft_world_count(two.world),
          (unsigned long long)two.ticks);
  /* The worlds must be the same at the same tick whatever the workers:
   * the one behind catches up, then the digests must match. */
  bench_arena_same(name, &one, &two);
  bench_arena_close(&one);
  bench_arena_close(&two);
}
