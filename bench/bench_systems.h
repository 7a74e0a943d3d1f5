/* SPDX-License-Identifier: MIT */
/*
 * Entry points of the system-scheduler scenarios (bench_schedule.c,
 * bench_heavy_compute.c, bench_frame.c, bench_update.c, bench_bandwidth.c,
 * bench_affinity.c, bench_oversub.c).
 * They live here rather than in harness.h so that the harness stays the
 * measurement code only; main.c includes both.
 */
#ifndef WEFT_BENCH_SYSTEMS_H
#define WEFT_BENCH_SYSTEMS_H

#include "harness.h"
#include "sim_scenarios.h"

void bench_schedule(bench_ctx_t *ctx);
void bench_heavy_compute(bench_ctx_t *ctx);
void bench_frame(bench_ctx_t *ctx);
void bench_update(bench_ctx_t *ctx);
void bench_bandwidth(bench_ctx_t *ctx);
void bench_arena(bench_ctx_t *ctx);
void bench_affinity(bench_ctx_t *ctx);
void bench_oversub(bench_ctx_t *ctx);

/*
 * weft-sim's arena on a pool of its own, for rows that compare two such
 * worlds tick for tick (bench_arena.c, bench_oversub.c): the side behind
 * catches up untimed before each timed window, so both start every window
 * from the same state.
 */
typedef struct bench_arena_side_t {
  weft_pool_t *pool;
  weft_world_t *world;
  sim_scene_t scene;
  uint64_t ticks;
  struct bench_arena_side_t *other;
} bench_arena_side_t;

/* n entities on `workers` workers, the caller taking part as worker 0
 * (bound to its place with bind_caller); ticks of 1/60 s. */
void bench_arena_open(bench_arena_side_t *a, uint32_t workers, bool bind_caller,
                      uint32_t n);
void bench_arena_close(bench_arena_side_t *a);
/* Pairs two sides and warms both up (first-touch, plans). */
void bench_arena_pair(bench_arena_side_t *a, bench_arena_side_t *b);
/* A self-timed bench_fn: catches up with the other side untimed, then
 * times reps ticks. */
uint64_t bench_arena_run(void *state, uint64_t reps);
/* Brings both to the same tick; exits unless their digests match. */
void bench_arena_same(const char *name, bench_arena_side_t *a,
                      bench_arena_side_t *b);

#endif /* WEFT_BENCH_SYSTEMS_H */
