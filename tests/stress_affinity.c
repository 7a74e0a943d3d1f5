/* SPDX-License-Identifier: MIT */
/*
 * stress_affinity.c: on a pool of two workers (the caller one of them),
 * a segment without a main-thread system hands each worker its own part
 * of every system, so that its rows stay in its caches from system to
 * system and from frame to frame.
 *
 * Two independent systems (each writes its own component) run over 64
 * chunks for 60 frames; each system is cut into two parts of 32 chunks.
 * The driving thread (worker 0) submits the jobs of both systems together
 * to its own deque, the other worker's parts first (submit_affine() in
 * scheduler/pipeline.c): a thief's first steal takes the top, part 1 of
 * the first system, while the driving thread pops its own part 0 of the
 * last one. Launched one system at a time, the thief took part 0 of the
 * first system and the driving thread part 1 of the last.
 *
 * Where each worker goes after its first job depends on timing: on a busy
 * machine a worker that loses its CPU loses its rows to the other. So the
 * test checks only what is exact under any load: each worker's first
 * callback of a frame waits until the other worker has reached its own
 * (neither can have taken a second job by then), which makes the first
 * jobs, and so the assignment, observable; and every chunk ran exactly
 * once per system and frame, on one of the two workers. The share of
 * visits that stay on a chunk's usual worker is weft-bench's affinity/2w
 * row.
 *
 * The pool plans on a synthetic one-node machine, so that both workers
 * share one NUMA group (one part each) whatever machine runs the test.
 *
 * A second check runs the same frames with a main-thread system in the
 * segment, where affinity is off (the driving thread cannot take its full
 * share of rows), and only checks that every chunk ran once per system
 * and frame: the record itself is exact there too.
 *
 * Runtime on two cores: well under a second in Debug, a few seconds under
 * TSan.
 */
#include "support/weft_test.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define AFF_CHUNKS 64u
#define AFF_FRAMES 60u
#define AFF_CHUNK_SIZE 4096u
#define AFF_WORK 64 /* multiply-adds per row and system */
/* How long a worker waits for the other at the start of a frame before the
 * test calls it a hang (the other only has to be scheduled once). */
#define AFF_HANG_NS (60ull * 1000000000ull)

typedef struct aff_t {
  weft_world_t *w;
  weft_pool_t *pool;
  weft_component_t a, b, c;
  uint32_t rows;        /* rows per chunk */
  uint32_t frame;       /* written between frames by the driving thread */
  weft_entity_t *first; /* first handle of each chunk */
  bool meet; /* each worker's first callback of a frame waits for the other's */
  /* worker + 1 that ran (frame, system, chunk); 0: not run */
  _Atomic uint32_t ran[AFF_FRAMES][2][AFF_CHUNKS];
  /* each worker's first callback of each frame: system * AFF_CHUNKS +
   * chunk, + 1; 0: none yet */
  _Atomic uint32_t first_visit[AFF_FRAMES][2];
  _Atomic uint32_t misses; /* callbacks on a chunk the test does not know */
  _Atomic uint32_t hangs;  /* first callbacks that waited in vain */
} aff_t;

/* The chunk a callback got, by its first handle; UINT32_MAX if unknown. */
static uint32_t chunk_of(const aff_t *t, const weft_iter_t *it) {
  for (uint32_t k = 0; k < AFF_CHUNKS; k++)
    if (t->first[k] == it->entities[0])
      return k;
  return UINT32_MAX;
}

/* Notes the first callback of @p worker in frame f and waits until the
 * other worker has made its first one too. While it waits, this worker
 * holds its first job and takes no other, and the other worker can only
 * be in its first job when it arrives: the first jobs are the ones the
 * submission order hands out, whatever the timing. */
static void meet(aff_t *t, uint32_t f, uint32_t worker, uint32_t visit) {
  uint32_t none = 0;
  if (!atomic_compare_exchange_strong(&t->first_visit[f][worker], &none,
                                      visit + 1))
    return; /* not this worker's first callback of the frame */
  uint64_t t0 = wt_now_ns();
  while (atomic_load(&t->first_visit[f][1 - worker]) == 0) {
    sched_yield();
    if (atomic_load(&t->hangs) != 0)
      return; /* failed already: do not wait out every frame */
    if (wt_now_ns() - t0 > AFF_HANG_NS) {
      atomic_fetch_add(&t->hangs, 1);
      return;
    }
  }
}

static void record(aff_t *t, uint32_t sys, weft_sysctx_t *ctx,
                   const weft_iter_t *it) {
  uint32_t k = chunk_of(t, it);
  uint32_t worker = weft_sysctx_pool_worker(ctx);
  if (k == UINT32_MAX || it->count != t->rows || worker > 1) {
    atomic_fetch_add(&t->misses, 1);
    return;
  }
  if (t->meet)
    meet(t, t->frame, worker, sys * AFF_CHUNKS + k);
  atomic_store(&t->ran[t->frame][sys][k], worker + 1);
}

/* Enough work per row that a frame lasts long enough (milliseconds) for
 * both workers to take part, however late the second one wakes. */
static uint32_t churn(uint32_t x) {
  for (int r = 0; r < AFF_WORK; r++)
    x = x * 1664525u + 1013904223u;
  return x;
}

static int sys_a(weft_sysctx_t *ctx, const weft_iter_t *it) {
  aff_t *t = ctx->user;
  uint32_t *x = it->columns[0];
  for (uint32_t i = 0; i < it->count; i++)
    x[i] = churn(x[i]);
  record(t, 0, ctx, it);
  return 0;
}

static int sys_b(weft_sysctx_t *ctx, const weft_iter_t *it) {
  aff_t *t = ctx->user;
  uint32_t *y = it->columns[0];
  for (uint32_t i = 0; i < it->count; i++)
    y[i] = churn(y[i] + 1);
  record(t, 1, ctx, it);
  return 0;
}

static int sys_main(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)ctx;
  (void)it;
  return 0;
}

static void add_system(aff_t *t, const char *name, weft_component_t c,
                       weft_system_fn fn, uint32_t flags) {
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.phase = WEFT_PHASE_FIXED_UPDATE;
  d.query.include[0] = c;
  d.term_access[0] = WEFT_ACCESS_WRITE;
  d.run = fn;
  d.user = t;
  d.batch = 1; /* small jobs: the pool, not one call, runs them */
  d.flags = flags;
  weft_system_t sys;
  int rc = weft_system_register(t->w, &d, &sys);
  if (rc != WEFT_OK)
    fail_msg("registering %s: %s (%s)", name, weft_strerror(rc),
             weft_world_last_error(t->w));
}

static aff_t *aff_new(bool with_main) {
  aff_t *t = calloc(1, sizeof *t);
  assert_non_null(t);
  weft_pool_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.synthetic = "core:2 pu:1";
  pc.placement.workers = 2;
  pc.placement.caller_participates = true;
  assert_int_equal(weft_pool_create(&pc, &t->pool), WEFT_OK);
  weft_world_config_t wc;
  memset(&wc, 0, sizeof wc);
  wc.chunk_size = AFF_CHUNK_SIZE;
  wc.pool = t->pool;
  t->w = wt_world_new(&wc);
  t->a = wt_register(t->w, "aff.A", sizeof(uint32_t), 0);
  t->b = wt_register(t->w, "aff.B", sizeof(uint32_t), 0);
  t->c = wt_register(t->w, "aff.C", sizeof(uint32_t), 0);
  weft_pipeline_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.inline_rows = 1; /* every system goes to the pool */
  assert_int_equal(weft_pipeline_configure(t->w, &cfg), WEFT_OK);

  /* Fill AFF_CHUNKS chunks exactly: a first batch shows how many rows a
   * chunk holds (all but the last chunk of a batch are full). */
  const weft_component_t comps[] = {t->a, t->b, t->c, 0};
  weft_query_t *q;
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = t->a;
  assert_int_equal(weft_query_create(t->w, &qd, &q), WEFT_OK);
  assert_int_equal(weft_spawn_batch(t->w, 100000, comps, NULL, NULL, NULL),
                   WEFT_OK);
  weft_iter_t it;
  weft_query_iter(q, &it);
  assert_true(weft_iter_next(&it));
  t->rows = it.count;
  weft_iter_close(&it);
  weft_world_clear(t->w);
  assert_int_equal(
      weft_spawn_batch(t->w, AFF_CHUNKS * t->rows, comps, NULL, NULL, NULL),
      WEFT_OK);
  t->first = malloc(AFF_CHUNKS * sizeof *t->first);
  assert_non_null(t->first);
  uint32_t k = 0;
  for (weft_query_iter(q, &it); weft_iter_next(&it); k++) {
    assert_true(k < AFF_CHUNKS);
    assert_int_equal(it.count, t->rows);
    t->first[k] = it.entities[0];
  }
  assert_int_equal(k, AFF_CHUNKS);
  weft_query_destroy(q);

  add_system(t, "aff.a", t->a, sys_a, 0);
  add_system(t, "aff.b", t->b, sys_b, 0);
  if (with_main)
    add_system(t, "aff.main", t->c, sys_main, WEFT_SYSTEM_MAIN_THREAD);
  return t;
}

static void aff_free(aff_t *t) {
  weft_world_destroy(t->w);
  weft_pool_destroy(t->pool);
  free(t->first);
  free(t);
}

static void aff_run(aff_t *t) {
  for (t->frame = 0; t->frame < AFF_FRAMES; t->frame++) {
    int rc = weft_world_run_phase(t->w, WEFT_PHASE_FIXED_UPDATE, 1.0 / 60);
    if (rc != WEFT_OK)
      fail_msg("frame %u: %s (%s)", t->frame, weft_strerror(rc),
               weft_world_last_error(t->w));
  }
  assert_int_equal(atomic_load(&t->misses), 0);
  assert_int_equal(atomic_load(&t->hangs), 0);
  /* Every chunk ran once per system and frame, on worker 0 or 1. */
  for (uint32_t f = 0; f < AFF_FRAMES; f++)
    for (uint32_t s = 0; s < 2; s++)
      for (uint32_t k = 0; k < AFF_CHUNKS; k++) {
        uint32_t r = atomic_load(&t->ran[f][s][k]);
        if (r != 1 && r != 2)
          fail_msg("frame %u, system %u, chunk %u: ran on %u", f, s, k, r);
      }
}

/* In every frame the driving thread (worker 0) starts on its own part of
 * one system (part 0: chunks from 0) and the other worker on its part of
 * the other system (part 1: chunks from AFF_CHUNKS / 2). */
static void stress_affinity_each_worker_starts_on_its_own_part(void **state) {
  (void)state;
  aff_t *t = aff_new(false);
  t->meet = true;
  aff_run(t);
  for (uint32_t f = 0; f < AFF_FRAMES; f++) {
    uint32_t v0 = atomic_load(&t->first_visit[f][0]) - 1;
    uint32_t v1 = atomic_load(&t->first_visit[f][1]) - 1;
    uint32_t s0 = v0 / AFF_CHUNKS, k0 = v0 % AFF_CHUNKS;
    uint32_t s1 = v1 / AFF_CHUNKS, k1 = v1 % AFF_CHUNKS;
    if (k0 != 0 || k1 != AFF_CHUNKS / 2 || s0 == s1)
      fail_msg("frame %u: worker 0 started on system %u chunk %u, worker 1 "
               "on system %u chunk %u (want chunk 0 and chunk %u of the "
               "other system)",
               f, s0, k0, s1, k1, AFF_CHUNKS / 2);
  }
  aff_free(t);
}

static void stress_affinity_main_thread_segment_runs_every_chunk(void **state) {
  (void)state;
  aff_t *t = aff_new(true);
  aff_run(t);
  aff_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(stress_affinity_each_worker_starts_on_its_own_part),
      cmocka_unit_test(stress_affinity_main_thread_segment_runs_every_chunk),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
