/* SPDX-License-Identifier: MIT */
/*
 * schedule: ecs_bench_suite's `schedule` workload. Four batches of 10,000
 * entities with float components (A, B), (A, B, C), (A, B, C, D) and
 * (A, B, C, E) (1,000 each with --quick), and three systems in FixedUpdate
 * that swap two components through a temporary: ab swaps A and B (40,000
 * entities), cd swaps C and D and ce swaps C and E (10,000 each), so a run
 * is 60,000 swaps. cd and ce both write C, so the scheduler orders ce after
 * cd; ab runs alongside. One repetition is one weft_world_run_phase(world,
 * FixedUpdate, 1/60), sync point included. Unit: ns per run of the three
 * systems. No target in the issue.
 *
 * schedule/st: a world without a pool (everything inline) against the
 * same three swaps as raw C loops over plain arrays laid out like the
 * archetypes (a and b of 40,000 floats; c of 30,000 whose second and third
 * 10,000 belong to the C+D and C+E entities; d and e of 10,000), 64-byte
 * aligned. gcc 12 -O3 -fopt-info-vec-optimized: "loop vectorized using 16
 * byte vectors" for sched_swap, no alias versioning (restrict survives
 * inlining), for the baseline and the weft callbacks alike.
 *
 * schedule/2w: a pool of two workers (the calling thread is worker 0)
 * against one OpenMP parallel region of two threads in which each thread
 * swaps its static share of each of the three loops (nowait: the loops
 * touch disjoint data), calling the same kernel on its share so that it
 * stays vectorized. Run with OMP_WAIT_POLICY=passive (see README).
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <weft.h>

#include "bench_systems.h"
#include "bench_omp.h"
#include "harness.h"

#define SCHED_DT (1.0 / 60.0)

typedef struct sched_state_t {
  uint32_t n; /* entities per batch */
  weft_pool_t *pool;
  weft_world_t *world;
  float *a, *b, *c, *d, *e; /* baseline arrays */
} sched_state_t;

/* Swaps x and y over n floats: the kernel both sides run. */
static inline void sched_swap(uint32_t n, float *restrict x,
                              float *restrict y) {
  for (uint32_t i = 0; i < n; ++i) {
    float t = x[i];
    x[i] = y[i];
    y[i] = t;
  }
}

static int sched_swap_system(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)ctx;
  sched_swap(chunk->count, chunk->columns[0], chunk->columns[1]);
  return 0;
}

/* ---- weft ------------------------------------------------------------------
 */

static uint64_t sched_weft(void *p, uint64_t reps) {
  sched_state_t *s = p;
  return bench_fixed_phases(s->world, SCHED_DT, reps);
}

/* ---- baselines -------------------------------------------------------------
 */

static uint64_t sched_base_st(void *p, uint64_t reps) {
  sched_state_t *s = p;
  uint32_t n = s->n;
  for (uint64_t r = 0; r < reps; ++r) {
    sched_swap(4 * n, s->a, s->b);
    sched_swap(n, s->c + n, s->d);
    sched_swap(n, s->c + 2 * n, s->e);
    bench_clobber();
  }
  return bench_f32_bits(s->a[0]);
}

static uint64_t sched_base_omp(void *p, uint64_t reps) {
  sched_state_t *s = p;
  uint32_t n = s->n;
  float *a = s->a, *b = s->b, *c = s->c, *d = s->d, *e = s->e;
  for (uint64_t r = 0; r < reps; ++r) {
#pragma omp parallel num_threads(2)
    {
      uint32_t lo, hi;
      bench_omp_share(4 * n, &lo, &hi);
      sched_swap(hi - lo, a + lo, b + lo);
      bench_omp_share(n, &lo, &hi);
      sched_swap(hi - lo, c + n + lo, d + lo);
      sched_swap(hi - lo, c + 2 * n + lo, e + lo);
    }
    bench_clobber();
  }
  return bench_f32_bits(s->a[0]);
}

/* ---- setup -----------------------------------------------------------------
 */

/* Initial values: entity k of batch g (both sides). */
static inline float sched_value(uint32_t comp, uint32_t g, uint32_t k) {
  return (float)(comp * 100000u + g * 10000u + k);
}

typedef struct sched_fill_t {
  uint32_t g;     /* batch */
  uint32_t terms; /* components in the batch */
} sched_fill_t;

static void sched_fill(void *user, const weft_iter_t *view, uint32_t first) {
  const sched_fill_t *f = user;
  for (uint32_t t = 0; t < f->terms; ++t) {
    float *col = view->columns[t];
    /* batches list A, B, C, then D or E: component index of term t */
    uint32_t comp = t < 3 ? t : (f->g == 2 ? 3 : 4);
    for (uint32_t i = 0; i < view->count; ++i)
      col[i] = sched_value(comp, f->g, first + i);
  }
}

static void sched_setup(sched_state_t *s, uint32_t n, uint32_t workers) {
  memset(s, 0, sizeof *s);
  s->n = n;
  weft_world_config_t wc = {0};
  if (workers) {
    s->pool = bench_pool_new(workers, false);
    wc.pool = s->pool;
  }
  bench_check(weft_world_create(&wc, &s->world), "weft_world_create");
  weft_component_t id[5];
  static const char *const names[5] = {"A", "B", "C", "D", "E"};
  for (int k = 0; k < 5; ++k) {
    weft_component_desc_t d = WEFT_COMPONENT_DESC(float);
    d.name = names[k];
    bench_check(weft_component_register(s->world, &d, &id[k]),
                "registering a component");
  }
  bench_check(weft_world_reserve(s->world, 4 * n), "weft_world_reserve");
  const weft_component_t batches[4][5] = {{id[0], id[1], 0},
                                          {id[0], id[1], id[2], 0},
                                          {id[0], id[1], id[2], id[3], 0},
                                          {id[0], id[1], id[2], id[4], 0}};
  for (uint32_t g = 0; g < 4; ++g) {
    sched_fill_t f = {g, g == 0 ? 2u : (g == 1 ? 3u : 4u)};
    bench_check(weft_spawn_batch(s->world, n, batches[g], sched_fill, &f, NULL),
                "weft_spawn_batch");
  }
  struct {
    const char *name;
    weft_component_t x, y;
  } sys[3] = {{"ab", id[0], id[1]}, {"cd", id[2], id[3]}, {"ce", id[2], id[4]}};
  for (int k = 0; k < 3; ++k) {
    weft_system_desc_t d = {.name = sys[k].name, .run = sched_swap_system};
    d.query.include[0] = sys[k].x;
    d.query.include[1] = sys[k].y;
    weft_system_t out;
    bench_check(weft_system_register(s->world, &d, &out),
                "weft_system_register");
  }
  bench_check(weft_schedule_build(s->world), "weft_schedule_build");

  /* The baseline: the same values, laid out like the archetypes. */
  s->a = bench_alloc((size_t)4 * n * sizeof(float));
  s->b = bench_alloc((size_t)4 * n * sizeof(float));
  s->c = bench_alloc((size_t)3 * n * sizeof(float));
  s->d = bench_alloc((size_t)n * sizeof(float));
  s->e = bench_alloc((size_t)n * sizeof(float));
  for (uint32_t g = 0; g < 4; ++g)
    for (uint32_t k = 0; k < n; ++k) {
      s->a[g * n + k] = sched_value(0, g, k);
      s->b[g * n + k] = sched_value(1, g, k);
      if (g >= 1)
        s->c[(g - 1) * n + k] = sched_value(2, g, k);
      if (g == 2)
        s->d[k] = sched_value(3, g, k);
      if (g == 3)
        s->e[k] = sched_value(4, g, k);
    }
}

static void sched_teardown(sched_state_t *s) {
  weft_world_destroy(s->world);
  weft_pool_destroy(s->pool);
  bench_free(s->a);
  bench_free(s->b);
  bench_free(s->c);
  bench_free(s->d);
  bench_free(s->e);
}

static void sched_run(bench_ctx_t *ctx, const char *name, uint32_t n,
                      uint32_t workers) {
  if (!bench_selected(ctx, name))
    return;
  sched_state_t s;
  sched_setup(&s, n, workers);
  bench_case_t c = {
      .name = name,
      .unit = "ns/run",
      .n = 4 * (uint64_t)n,
      .work = {"weft", sched_weft, &s, 1.0, false},
      .base = workers
                  ? (bench_side_t){"omp_2t_static_shares", sched_base_omp, &s,
                                   1.0, false}
                  : (bench_side_t){"c_loops", sched_base_st, &s, 1.0, false},
      .target_kind = BENCH_TARGET_NONE,
      .workers = workers ? workers : 1,
  };
  bench_compare(ctx, &c);
  sched_teardown(&s);
}

void bench_schedule(bench_ctx_t *ctx) {
  uint32_t n = ctx->quick ? 1000u : 10000u;
  sched_run(ctx, "schedule/st", n, 0);
  sched_run(ctx, "schedule/2w", n, 2);
}
