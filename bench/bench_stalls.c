/* SPDX-License-Identifier: MIT */
/*
 * stalls: the worst frame of a workload that moves every entity twice a
 * frame. 2^20 entities with A (2^17 with --quick); each frame adds B to
 * all of them and removes it again, so every row leaves its chunk and comes
 * back. After a few warm-up frames, 200 frames are timed one by one.
 *
 * - stalls/add_remove_frame/<n>: through registered systems and
 *   weft_world_progress(): a PreUpdate system records weft_cmd_add(B) for
 *   every entity with A and without B into its context's command buffer,
 *   a PreRender system records weft_cmd_remove(B) for every entity with
 *   B; each phase's sync point applies them.
 * - stalls/owner_cmds/<n>: the owner-thread command path: one command
 *   buffer recorded on the calling thread and applied with
 *   weft_world_apply(), once with the adds and once with the removes.
 *
 * Unit: milliseconds per frame. The value is the worst frame of the 200
 * (p100), the baseline the median frame of the same run, and the ratio
 * p100 / median: target <= 2. A ratio to the same run's median rather
 * than a time, as the host's speed swings; a frame that stalls on memory
 * handed back to the kernel and faulted in again (issue 29: 7-12% of
 * frames up to 30x the median) shows here as a high ratio. The row is not
 * paired with a plain-C workload: its baseline is the workload's own
 * typical frame. On a machine shared with other busy processes a
 * preempted frame can miss the target too; the progress line on stderr
 * gives the distribution (p50, p90, p99, frames over 2x the median), the
 * worst frame's CPU time, how many slow frames were mostly off the CPU,
 * the thread's involuntary context switches and the page faults taken
 * during the timed frames, which tell the two apart.
 */
#define _GNU_SOURCE /* RUSAGE_THREAD */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <weft.h>

#include "harness.h"

#define STALLS_FRAMES 200u
#define STALLS_WARMUP 5u

typedef struct stalls_a_t {
  float v;
} stalls_a_t;
typedef struct stalls_b_t {
  float v;
} stalls_b_t;

typedef struct stalls_state_t {
  weft_world_t *world;
  weft_component_t a, b;
  uint32_t n;
  weft_entity_t *handles; /* owner_cmds only */
  weft_cmdbuf_t *buf;     /* owner_cmds only */
} stalls_state_t;

static int stalls_add(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  const stalls_state_t *s = ctx->user;
  const stalls_b_t bv = {1.0f};
  for (uint32_t r = 0; r < chunk->count; r++) {
    int rc = weft_cmd_add(ctx->cmd, chunk->entities[r], s->b, &bv);
    if (rc)
      return rc;
  }
  return 0;
}

static int stalls_remove(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  const stalls_state_t *s = ctx->user;
  for (uint32_t r = 0; r < chunk->count; r++) {
    int rc = weft_cmd_remove(ctx->cmd, chunk->entities[r], s->b);
    if (rc)
      return rc;
  }
  return 0;
}

/* A world with n entities holding A. */
static void stalls_open(stalls_state_t *s, uint32_t n, bool keep_handles) {
  memset(s, 0, sizeof *s);
  s->n = n;
  bench_check(weft_world_create(NULL, &s->world), "weft_world_create");
  weft_component_desc_t d = WEFT_COMPONENT_DESC(stalls_a_t);
  d.name = "A";
  bench_check(weft_component_register(s->world, &d, &s->a), "registering A");
  d = WEFT_COMPONENT_DESC(stalls_b_t);
  d.name = "B";
  bench_check(weft_component_register(s->world, &d, &s->b), "registering B");
  if (keep_handles)
    s->handles = bench_alloc((size_t)n * sizeof *s->handles);
  weft_component_t comps[2] = {s->a, WEFT_COMPONENT_NONE};
  bench_check(weft_spawn_batch(s->world, n, comps, NULL, NULL, s->handles),
              "weft_spawn_batch");
}

static void stalls_close(stalls_state_t *s) {
  if (s->buf)
    bench_check(weft_cmdbuf_destroy(s->buf), "weft_cmdbuf_destroy");
  if (s->handles)
    bench_free(s->handles);
  weft_world_destroy(s->world);
}

static void stalls_systems(stalls_state_t *s) {
  weft_system_t id;
  weft_system_desc_t d = {0};
  d.name = "stalls.add";
  d.phase = WEFT_PHASE_PRE_UPDATE;
  d.query.include[0] = s->a;
  d.query.exclude[0] = s->b;
  d.term_access[0] = WEFT_ACCESS_NONE;
  d.cmd_write[0] = s->b;
  d.run = stalls_add;
  d.user = s;
  bench_check(weft_system_register(s->world, &d, &id), "registering add");
  d = (weft_system_desc_t){0};
  d.name = "stalls.remove";
  d.phase = WEFT_PHASE_PRE_RENDER;
  d.query.include[0] = s->b;
  d.term_access[0] = WEFT_ACCESS_NONE;
  d.cmd_write[0] = s->b;
  d.run = stalls_remove;
  d.user = s;
  bench_check(weft_system_register(s->world, &d, &id), "registering remove");
}

static void frame_systems(stalls_state_t *s) {
  bench_check(weft_world_progress(s->world, 1.0 / 60.0), "weft_world_progress");
}

static void frame_owner(stalls_state_t *s) {
  const stalls_b_t bv = {1.0f};
  for (uint32_t i = 0; i < s->n; i++)
    bench_check(weft_cmd_add(s->buf, s->handles[i], s->b, &bv), "weft_cmd_add");
  bench_check(weft_world_apply(s->world, &s->buf, 1), "weft_world_apply");
  for (uint32_t i = 0; i < s->n; i++)
    bench_check(weft_cmd_remove(s->buf, s->handles[i], s->b),
                "weft_cmd_remove");
  bench_check(weft_world_apply(s->world, &s->buf, 1), "weft_world_apply");
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* Faults and involuntary context switches of the calling thread so far. */
typedef struct stalls_usage_t {
  uint64_t minor, major, preempted;
} stalls_usage_t;

static stalls_usage_t thread_usage(void) {
  struct rusage ru;
  memset(&ru, 0, sizeof ru);
  (void)getrusage(RUSAGE_THREAD, &ru);
  return (stalls_usage_t){(uint64_t)ru.ru_minflt, (uint64_t)ru.ru_majflt,
                          (uint64_t)ru.ru_nivcsw};
}

/* CPU time of the calling thread, in milliseconds. */
static double thread_cpu_ms(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
    return NAN;
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Warms up, times STALLS_FRAMES frames one by one and records the row. */
static void stalls_measure(bench_ctx_t *ctx, const char *name,
                           stalls_state_t *s, void (*frame)(stalls_state_t *)) {
  for (uint32_t i = 0; i < STALLS_WARMUP; i++)
    frame(s);
  if (weft_world_count(s->world) != s->n)
    bench_die(name, WEFT_EINVAL);
  weft_world_stats_t st0, st1;
  weft_world_stats(s->world, &st0);
  stalls_usage_t u0 = thread_usage();
  /* Wall and CPU time per frame: a frame that took long on the CPU
   * stalled in the work (or in the hypervisor, which the guest counts as
   * running), one that took long off it was preempted by another
   * process. */
  double t[STALLS_FRAMES], cpu[STALLS_FRAMES];
  uint32_t worst_at = 0;
  for (uint32_t i = 0; i < STALLS_FRAMES; i++) {
    double c0 = thread_cpu_ms();
    double t0 = bench_now_ns();
    frame(s);
    t[i] = (bench_now_ns() - t0) * 1e-6;
    cpu[i] = thread_cpu_ms() - c0;
    if (t[i] > t[worst_at])
      worst_at = i;
  }
  stalls_usage_t u1 = thread_usage();
  weft_world_stats(s->world, &st1);
  /* Every frame moved every entity there and back. */
  uint64_t moves = st1.moves - st0.moves;
  if (moves != 2ull * STALLS_FRAMES * s->n ||
      weft_world_count(s->world) != s->n)
    bench_die(name, WEFT_EINVAL);
  double worst = t[worst_at], worst_cpu = cpu[worst_at];
  double sorted[STALLS_FRAMES];
  memcpy(sorted, t, sizeof sorted);
  qsort(sorted, STALLS_FRAMES, sizeof sorted[0], cmp_double);
  double median =
      0.5 * (sorted[STALLS_FRAMES / 2 - 1] + sorted[STALLS_FRAMES / 2]);
  uint32_t over = 0, off_cpu = 0;
  for (uint32_t i = 0; i < STALLS_FRAMES; i++) {
    over += t[i] > 2.0 * median;
    off_cpu += t[i] > 2.0 * median && cpu[i] < 0.5 * t[i];
  }
  fprintf(stderr,
          "%-28s frames: p50 %.2f ms, p90 %.2f, p99 %.2f, max %.2f (frame "
          "%u, %.2f on the CPU); %u of %u over 2x the median, %u of them "
          "mostly off the CPU; %llu preemptions; faults %llu minor, %llu "
          "major; %llu allocations; %u chunks live, %u spare\n",
          name, median, sorted[STALLS_FRAMES * 9 / 10],
          sorted[STALLS_FRAMES * 99 / 100], worst, worst_at, worst_cpu, over,
          STALLS_FRAMES, off_cpu,
          (unsigned long long)(u1.preempted - u0.preempted),
          (unsigned long long)(u1.minor - u0.minor),
          (unsigned long long)(u1.major - u0.major),
          (unsigned long long)(st1.allocs - st0.allocs), st1.chunks_live,
          st1.chunks_spare);
  bench_result_t r = {
      .unit = "ms/frame",
      .n = s->n,
      .value = worst,
      .baseline_value = median,
      .ratio = median > 0 ? worst / median : NAN,
      .ratio_min = NAN,
      .ratio_max = NAN,
      .target_kind = BENCH_TARGET_RATIO,
      .target = 2.0,
      .efficiency = NAN,
  };
  snprintf(r.name, sizeof r.name, "%s", name);
  snprintf(r.baseline, sizeof r.baseline, "median_frame");
  bench_record(ctx, &r);
}

void bench_stalls(bench_ctx_t *ctx) {
  uint32_t n = ctx->quick ? 1u << 17 : 1u << 20;
  const char *label = ctx->quick ? "128k" : "1M";
  char name[64];

  snprintf(name, sizeof name, "stalls/add_remove_frame/%s", label);
  if (bench_selected(ctx, name)) {
    stalls_state_t s;
    stalls_open(&s, n, false);
    stalls_systems(&s);
    stalls_measure(ctx, name, &s, frame_systems);
    stalls_close(&s);
  }

  snprintf(name, sizeof name, "stalls/owner_cmds/%s", label);
  if (bench_selected(ctx, name)) {
    stalls_state_t s;
    stalls_open(&s, n, true);
    bench_check(weft_cmdbuf_create(s.world, &s.buf), "weft_cmdbuf_create");
    stalls_measure(ctx, name, &s, frame_owner);
    stalls_close(&s);
  }
}
