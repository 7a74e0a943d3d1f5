/* SPDX-License-Identifier: MIT */
/*
 * jobs: the worker pool (weft/pool.h) against OpenMP (libgomp) on the same
 * machine, in the same run. Each workload creates one pool with
 * caller_participates and one worker per online CPU (sysconf), and sets
 * OpenMP to the same number of threads; weft is always called as worker 0
 * (the calling thread). OpenMP is only linked into weft-bench.
 *
 * jobs/empty: submit n empty jobs (1,048,576; 65,536 with --quick) from
 * the calling thread against one counter, then wait. Unit: ns per job;
 * target <= 50 ns (absolute). Baseline: n empty OpenMP tasks created in
 * one `single` of a parallel region, then taskwait.
 *
 * jobs/parallel_for/empty: one parallel-for over 1M items (with --quick
 * too: the cost does not grow with n) with an empty body and grain n/256
 * (256 ranges). Unit: ns per call; target ratio <= 1.5. Baseline: `omp parallel
 * for schedule(static)` over the same items; its body is `last = i` with
 * lastprivate(last) stored to a volatile sink, which gcc 12 -O3 turns into one
 * store per thread's chunk (no per-item loop), so only the split and the
 * fork-join remain, as in weft's empty ranges.
 *
 * jobs/parallel_for/light: y[i] = a * x[i] + y[i] over 1M floats (262,144
 * with --quick; 64-byte aligned) through parallel-for with grain n/256,
 * against `omp parallel for schedule(static)` over the same kernel. Unit:
 * ns per item; target ratio <= 1.1. gcc 12 -O3 -fopt-info-vec-optimized:
 * "loop vectorized using 16 byte vectors" for both the weft range kernel
 * and the OpenMP loop body (the latter "versioned for vectorization because
 * of possible aliasing": restrict does not survive outlining, so it costs
 * one overlap check per thread's chunk).
 *
 * jobs/fork_join: one parallel-for over as many items as workers with
 * grain 1 (one range per worker), empty body, against an empty `omp
 * parallel` region. Unit: ns per fork-join; target ratio <= 1.5.
 *
 * jobs/fib: fib(25) by nested fork-join (fib(20) with --quick): each call
 * at n >= 12 submits fib(n-1) as a job against a local counter, computes
 * fib(n-2) inline and waits; below 12 it recurses serially. Baseline: the
 * same with OpenMP tasks and taskwait in one `single`. Unit: ns per run of
 * fib(N); no target.
 */
#define _POSIX_C_SOURCE 200809L

#include <omp.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <weft.h>

#include "harness.h"

#define JOBS_FIB_CUTOFF 12u

typedef struct jobs_state_t {
  weft_pool_t *pool;
  uint32_t workers;
  uint32_t n;     /* jobs, items or fib's argument */
  uint32_t grain; /* parallel-for grain */
  float a;
  float *x;
  float *y;
  volatile uint32_t sink;
} jobs_state_t;

/* ---- bodies -----------------------------------------------------------------
 */

static void jobs_empty_job(void *arg, uint32_t worker) {
  (void)arg;
  (void)worker;
}

static void jobs_empty_range(void *arg, uint32_t begin, uint32_t end,
                             uint32_t worker) {
  (void)arg;
  (void)begin;
  (void)end;
  (void)worker;
}

/* y = a * x + y over n items; the kernel both sides run. */
static void jobs_saxpy(uint32_t n, float a, const float *restrict x,
                       float *restrict y) {
  for (uint32_t i = 0; i < n; ++i)
    y[i] = a * x[i] + y[i];
}

static void jobs_saxpy_range(void *arg, uint32_t begin, uint32_t end,
                             uint32_t worker) {
  (void)worker;
  jobs_state_t *s = arg;
  jobs_saxpy(end - begin, s->a, s->x + begin, s->y + begin);
}

static uint64_t jobs_fib_serial(uint32_t n) {
  return n < 2 ? n : jobs_fib_serial(n - 1) + jobs_fib_serial(n - 2);
}

/* ---- weft side --------------------------------------------------------------
 */

static uint64_t jobs_weft_empty(void *p, uint64_t reps) {
  jobs_state_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    weft_counter_t done;
    memset(&done, 0, sizeof done);
    for (uint32_t i = 0; i < s->n; ++i)
      weft_pool_submit(s->pool, 0, jobs_empty_job, NULL, &done,
                       WEFT_WORKER_EXTERNAL);
    weft_pool_wait(s->pool, 0, &done);
    sum += s->n;
  }
  return sum;
}

static uint64_t jobs_weft_pf_empty(void *p, uint64_t reps) {
  jobs_state_t *s = p;
  for (uint64_t r = 0; r < reps; ++r)
    weft_pool_parallel_for(s->pool, 0, 0, s->n, s->grain, jobs_empty_range, s);
  return reps;
}

static uint64_t jobs_weft_pf_light(void *p, uint64_t reps) {
  jobs_state_t *s = p;
  for (uint64_t r = 0; r < reps; ++r) {
    weft_pool_parallel_for(s->pool, 0, 0, s->n, s->grain, jobs_saxpy_range, s);
    bench_clobber();
  }
  return bench_f32_bits(s->y[s->n - 1]);
}

typedef struct jobs_fib_t {
  weft_pool_t *pool;
  uint32_t n;
  uint64_t result;
} jobs_fib_t;

static uint64_t jobs_fib_weft(weft_pool_t *pool, uint32_t self, uint32_t n);

static void jobs_fib_job(void *arg, uint32_t worker) {
  jobs_fib_t *f = arg;
  f->result = jobs_fib_weft(f->pool, worker, f->n);
}

static uint64_t jobs_fib_weft(weft_pool_t *pool, uint32_t self, uint32_t n) {
  if (n < JOBS_FIB_CUTOFF)
    return jobs_fib_serial(n);
  jobs_fib_t f = {.pool = pool, .n = n - 1};
  weft_counter_t done;
  memset(&done, 0, sizeof done);
  weft_pool_submit(pool, self, jobs_fib_job, &f, &done, WEFT_WORKER_EXTERNAL);
  uint64_t y = jobs_fib_weft(pool, self, n - 2);
  weft_pool_wait(pool, self, &done);
  return f.result + y;
}

static uint64_t jobs_weft_fib(void *p, uint64_t reps) {
  jobs_state_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r)
    sum += jobs_fib_weft(s->pool, 0, s->n);
  return sum;
}

/* ---- OpenMP side ------------------------------------------------------------
 */

static uint64_t jobs_omp_empty(void *p, uint64_t reps) {
  jobs_state_t *s = p;
  uint32_t n = s->n;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
#pragma omp parallel
#pragma omp single
    {
      for (uint32_t i = 0; i < n; ++i) {
#pragma omp task
        __asm__ volatile("");
      }
#pragma omp taskwait
    }
    sum += n;
  }
  return sum;
}

static uint64_t jobs_omp_pf_empty(void *p, uint64_t reps) {
  jobs_state_t *s = p;
  uint32_t n = s->n;
  for (uint64_t r = 0; r < reps; ++r) {
    uint32_t last = 0;
#pragma omp parallel for schedule(static) lastprivate(last)
    for (uint32_t i = 0; i < n; ++i)
      last = i;
    s->sink = last;
  }
  return reps;
}

static uint64_t jobs_omp_pf_light(void *p, uint64_t reps) {
  jobs_state_t *s = p;
  uint32_t n = s->n;
  float a = s->a;
  const float *restrict x = s->x;
  float *restrict y = s->y;
  for (uint64_t r = 0; r < reps; ++r) {
#pragma omp parallel for schedule(static)
    for (uint32_t i = 0; i < n; ++i)
      y[i] = a * x[i] + y[i];
    bench_clobber();
  }
  return bench_f32_bits(s->y[n - 1]);
}

static uint64_t jobs_omp_fork_join(void *p, uint64_t reps) {
  (void)p;
  for (uint64_t r = 0; r < reps; ++r) {
#pragma omp parallel
    __asm__ volatile("");
  }
  return reps;
}

static uint64_t jobs_fib_omp(uint32_t n) {
  if (n < JOBS_FIB_CUTOFF)
    return jobs_fib_serial(n);
  uint64_t x;
#pragma omp task shared(x)
  x = jobs_fib_omp(n - 1);
  uint64_t y = jobs_fib_omp(n - 2);
#pragma omp taskwait
  return x + y;
}

static uint64_t jobs_omp_fib(void *p, uint64_t reps) {
  jobs_state_t *s = p;
  uint32_t n = s->n;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    uint64_t v = 0;
#pragma omp parallel
#pragma omp single
    v = jobs_fib_omp(n);
    sum += v;
  }
  return sum;
}

/* ---- setup ------------------------------------------------------------------
 */

static uint32_t jobs_online_cpus(void) {
  long c = sysconf(_SC_NPROCESSORS_ONLN);
  return c > 0 ? (uint32_t)c : 1u;
}

static void jobs_setup(jobs_state_t *s, uint32_t n) {
  memset(s, 0, sizeof *s);
  s->n = n;
  uint32_t workers = jobs_online_cpus();
  s->pool = bench_pool_new(workers, false);
  s->workers = weft_pool_workers(s->pool);
  omp_set_num_threads((int)s->workers);
}

static void jobs_teardown(jobs_state_t *s) {
  weft_pool_destroy(s->pool);
  bench_free(s->x);
  bench_free(s->y);
}

static void jobs_run(bench_ctx_t *ctx, jobs_state_t *s, const char *name,
                     const char *unit, double ops, bench_fn weft, bench_fn omp,
                     const char *omp_name, bench_target_kind_t kind,
                     double target) {
  bench_case_t c = {
      .name = name,
      .unit = unit,
      .n = s->n,
      .work = {"weft", weft, s, ops, false},
      .base = {omp_name, omp, s, ops, false},
      .target_kind = kind,
      .target = target,
      .workers = s->workers,
  };
  bench_compare(ctx, &c);
}

static void jobs_run_empty(bench_ctx_t *ctx, uint32_t n) {
  const char *name = "jobs/empty";
  if (!bench_selected(ctx, name))
    return;
  jobs_state_t s;
  jobs_setup(&s, n);
  jobs_run(ctx, &s, name, "ns/job", n, jobs_weft_empty, jobs_omp_empty,
           "omp_task", BENCH_TARGET_VALUE, 50.0);
  jobs_teardown(&s);
}

static void jobs_run_pf_empty(bench_ctx_t *ctx, uint32_t n) {
  const char *name = "jobs/parallel_for/empty";
  if (!bench_selected(ctx, name))
    return;
  jobs_state_t s;
  jobs_setup(&s, n);
  s.grain = (n + 255) / 256;
  jobs_run(ctx, &s, name, "ns/call", 1.0, jobs_weft_pf_empty, jobs_omp_pf_empty,
           "omp_for_static", BENCH_TARGET_RATIO, 1.5);
  jobs_teardown(&s);
}

static void jobs_run_pf_light(bench_ctx_t *ctx, uint32_t n) {
  const char *name = "jobs/parallel_for/light";
  if (!bench_selected(ctx, name))
    return;
  jobs_state_t s;
  jobs_setup(&s, n);
  s.grain = (n + 255) / 256;
  s.a = 1e-6f;
  s.x = bench_alloc((size_t)n * sizeof(float));
  s.y = bench_alloc((size_t)n * sizeof(float));
  for (uint32_t i = 0; i < n; ++i) {
    s.x[i] = (float)(i & 1023);
    s.y[i] = 1.0f;
  }
  jobs_run(ctx, &s, name, "ns/item", n, jobs_weft_pf_light, jobs_omp_pf_light,
           "omp_for_static", BENCH_TARGET_RATIO, 1.1);
  jobs_teardown(&s);
}

static void jobs_run_fork_join(bench_ctx_t *ctx) {
  const char *name = "jobs/fork_join";
  if (!bench_selected(ctx, name))
    return;
  jobs_state_t s;
  jobs_setup(&s, 0);
  s.n = s.workers;
  s.grain = (s.n + s.workers - 1) / s.workers; /* 1: a range per worker */
  jobs_run(ctx, &s, name, "ns/fork", 1.0, jobs_weft_pf_empty,
           jobs_omp_fork_join, "omp_parallel", BENCH_TARGET_RATIO, 1.5);
  jobs_teardown(&s);
}

static void jobs_run_fib(bench_ctx_t *ctx, uint32_t n) {
  const char *name = "jobs/fib";
  if (!bench_selected(ctx, name))
    return;
  jobs_state_t s;
  jobs_setup(&s, n);
  uint64_t want = jobs_fib_serial(n);
  if (jobs_fib_weft(s.pool, 0, n) != want || jobs_omp_fib(&s, 1) != want)
    bench_die("checking fib", WEFT_EINVAL);
  jobs_run(ctx, &s, name, "ns/run", 1.0, jobs_weft_fib, jobs_omp_fib,
           "omp_task", BENCH_TARGET_NONE, 0.0);
  jobs_teardown(&s);
}

void bench_jobs(bench_ctx_t *ctx) {
  bool q = ctx->quick;
  jobs_run_empty(ctx, q ? 65536u : 1048576u);
  jobs_run_pf_empty(ctx, 1048576u);
  jobs_run_pf_light(ctx, q ? 262144u : 1048576u);
  jobs_run_fork_join(ctx);
  jobs_run_fib(ctx, q ? 20u : 25u);
}
