/* SPDX-License-Identifier: MIT */
/*
 * Statistics (pipeline.h): per-system and per-phase counters, and the job
 * splitting they report (idle workers split jobs; jobs start as one part
 * per worker).
 */
#define _GNU_SOURCE /* nanosleep (support/pipeline_test.h) */
#include "support/weft_test.h"

#include "support/pipeline_test.h"

/* weft__pool_hungry(): test_stats_idle_workers_split_jobs waits for
 * the condition under which a job splits. */
#include "scheduler/pool_internal.h"

static int stat_touch(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)ctx;
  const pos_t *p = chunk->columns[0];
  volatile double sum = 0;
  for (uint32_t r = 0; r < chunk->count; r++)
    sum += p[r].x;
  (void)sum;
  return 0;
}

/* Notes which slot ran each chunk. The run's first callback holds its
 * thread until that thread would find an idle worker to hand work to
 * (weft__pool_hungry(), what the split asks before each chunk); the
 * holder's next callback waits until another slot has run a chunk. */
typedef struct slow_t {
  weft_pool_t *pool;
  _Atomic uint32_t calls;
  _Atomic uint32_t slot_calls[8];
  _Atomic uint32_t holder; /* slot + 1 of the run's first callback */
  _Atomic uint32_t holder_calls;
  _Atomic uint32_t hangs; /* waits that ended in vain */
} slow_t;

/* A wait that only a hang would make fail: the other threads have to be
 * scheduled, whatever else the machine runs. */
#define SPLIT_HANG_NS (60ull * 1000000000ull)

static int slow_touch(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  slow_t *sl = ctx->user;
  (void)chunk;
  atomic_fetch_add(&sl->calls, 1);
  if (ctx->worker < 8)
    atomic_fetch_add(&sl->slot_calls[ctx->worker], 1);
  uint32_t none = 0, me = ctx->worker + 1;
  bool first = atomic_compare_exchange_strong(&sl->holder, &none, me);
  if (!first && none != me)
    return 0;
  uint32_t n = atomic_fetch_add(&sl->holder_calls, 1);
  if (n > 1)
    return 0;
  uint64_t t0 = wt_now_ns();
  while (n == 0 ? !weft__pool_hungry(sl->pool, weft_sysctx_pool_worker(ctx))
                : atomic_load(&sl->calls) == atomic_load(&sl->holder_calls)) {
    sched_yield();
    if (wt_now_ns() - t0 > SPLIT_HANG_NS) {
      atomic_fetch_add(&sl->hangs, 1);
      return 0;
    }
  }
  return 0;
}

/* The run starts as one job per worker (two parts); an idle worker gets
 * the back half of a busy job, down to the batch. Whether a worker is idle
 * at a chunk boundary is timing, so the run's first callback waits until
 * its thread sees one: its next chunk boundary must then split (a third
 * job), and a second slot runs chunks. */
static void test_stats_idle_workers_split_jobs(void **state) {
  (void)state;
  fx_t f = fx_new(2, 0);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  populate(&f, BIG_N, 0);
  uint32_t nchunks = count_chunks(f.w, f.pos, 0, 1, NULL);
  assert_true(nchunks > 40);
  slow_t *sl = calloc(1, sizeof *sl);
  assert_non_null(sl);
  weft_system_desc_t d =
      sys_desc("slow", WEFT_PHASE_FIXED_UPDATE, slow_touch, sl);
  d.query.include[0] = f.pos;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.batch = 1;
  weft_system_t slow = sys_add(f.w, &d);
  for (uint32_t run = 1; run <= 5; run++) {
    weft_system_stats_t s0 = sstats(f.w, slow);
    memset(sl, 0, sizeof *sl);
    sl->pool = f.pool;
    progress_ok(f.w, FIXED);
    weft_system_stats_t s1 = sstats(f.w, slow);
    assert_int_equal(s1.runs, run);
    assert_int_equal(atomic_load(&sl->calls), nchunks);
    assert_int_equal(atomic_load(&sl->hangs), 0);
    uint64_t jobs = s1.jobs - s0.jobs;
    /* Two parts and at least one split; never more jobs than chunks. */
    if (jobs < 3 || jobs > nchunks)
      fail_msg("run %u: %llu jobs over %u chunks", run,
               (unsigned long long)jobs, nchunks);
    uint32_t slots = 0;
    for (uint32_t k = 0; k < 8; k++)
      slots += atomic_load(&sl->slot_calls[k]) > 0;
    assert_true(slots >= 2);
  }
  free(sl);
  fx_free(&f);
}

/* Counts calls and the rows they covered. */
typedef struct tally_t {
  _Atomic uint32_t calls;
  _Atomic uint32_t rows;
} tally_t;

static int tally_touch(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  tally_t *t = ctx->user;
  atomic_fetch_add(&t->calls, 1);
  atomic_fetch_add(&t->rows, chunk->count);
  return 0;
}

/* A run starts as one job per worker, of nearly equal rows, when each
 * holds a batch: with a batch of a third of the rows, three workers get
 * exactly three jobs every run (a third cannot split again); with a batch
 * over half of them, one job. Every row is visited once either way. */
static void test_stats_jobs_start_as_one_part_per_worker(void **state) {
  (void)state;
  fx_t f = fx_new(3, 0);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  populate(&f, BIG_N, 0);
  tally_t *t = calloc(2, sizeof *t);
  assert_non_null(t);
  const uint32_t batch[2] = {BIG_N / 3, BIG_N / 2 + 1};
  const uint64_t want[2] = {3, 1};
  weft_system_t sys[2];
  for (int i = 0; i < 2; i++) {
    weft_system_desc_t d = sys_desc(
        i ? "halves" : "thirds", WEFT_PHASE_FIXED_UPDATE, tally_touch, &t[i]);
    d.query.include[0] = f.pos;
    d.term_access[0] = WEFT_ACCESS_READ;
    d.batch = batch[i];
    sys[i] = sys_add(f.w, &d);
  }
  for (uint32_t run = 1; run <= 5; run++) {
    weft_system_stats_t s0[2] = {sstats(f.w, sys[0]), sstats(f.w, sys[1])};
    memset(t, 0, 2 * sizeof *t);
    progress_ok(f.w, FIXED);
    for (int i = 0; i < 2; i++) {
      weft_system_stats_t s1 = sstats(f.w, sys[i]);
      assert_int_equal(s1.jobs - s0[i].jobs, want[i]);
      assert_int_equal(atomic_load(&t[i].rows), BIG_N);
    }
  }
  free(t);
  fx_free(&f);
}

static void test_stats_per_system(void **state) {
  (void)state;
  for (uint32_t workers = 0; workers <= 2; workers += 2) {
    fx_t f = fx_new(workers, 0);
    weft_pipeline_config_t pc;
    memset(&pc, 0, sizeof pc);
    pc.fixed_dt = FIXED;
    pc.net_dt = -1.0;
    pc.time_inline = true; /* inline runs are timed only when asked */
    assert_int_equal(weft_pipeline_configure(f.w, &pc), WEFT_OK);
    populate(&f, BIG_N, 0);
    populate(&f, 100, f.tag);
    uint32_t jobs_min = 0;
    uint32_t nbig = count_chunks(f.w, f.vel, 0, 1024, &jobs_min);
    uint32_t nsmall = count_chunks(f.w, f.tag, 0, 1, NULL);
    weft_system_desc_t d =
        sys_desc("big", WEFT_PHASE_FIXED_UPDATE, stat_touch, NULL);
    d.query.include[0] = f.pos;
    d.query.include[1] = f.vel;
    d.term_access[0] = WEFT_ACCESS_READ;
    d.term_access[1] = WEFT_ACCESS_READ;
    d.batch = 1024;
    weft_system_t big = sys_add(f.w, &d);
    /* Alone in its phase and under inline_rows: runs inline. */
    d = sys_desc("small", WEFT_PHASE_POST_FIXED_UPDATE, stat_touch, NULL);
    d.query.include[0] = f.pos;
    d.query.include[1] = f.tag;
    d.term_access[0] = WEFT_ACCESS_READ;
    d.term_access[1] = WEFT_ACCESS_NONE;
    weft_system_t small = sys_add(f.w, &d);
    d = sys_desc("task", WEFT_PHASE_PRE_RENDER, stat_touch, NULL);
    d.run = err_count;
    _Atomic uint32_t task_calls = 0;
    d.user = (void *)&task_calls;
    weft_system_t task = sys_add(f.w, &d);
    for (uint32_t i = 0; i < 4; i++)
      progress_ok(f.w, 0.1);
    weft_system_stats_t s = sstats(f.w, big);
    assert_int_equal(s.runs, 4);
    assert_int_equal(s.skipped, 0);
    assert_int_equal(s.entities, 4ull * (BIG_N + 100));
    assert_int_equal(s.chunks, 4ull * nbig);
    if (workers) {
      /* At least one job per run; more when idle workers split them
       * (down to the batch, never inside a chunk). */
      assert_true(s.jobs >= 4ull);
      (void)jobs_min;
      assert_true(s.jobs <= 4ull * nbig);
    } else {
      assert_int_equal(s.jobs, 0);
    }
    assert_true(s.worker_ns > 0);
    assert_true(s.wall_ns > 0);
    s = sstats(f.w, small);
    assert_int_equal(s.runs, 4);
    assert_int_equal(s.entities, 400);
    assert_int_equal(s.chunks, 4ull * nsmall);
    assert_int_equal(s.jobs, 0);
    s = sstats(f.w, task);
    assert_int_equal(s.runs, 4);
    assert_int_equal(s.chunks, 4);
    assert_int_equal(s.entities, 0);
    assert_int_equal(task_calls, 4);
    assert_int_equal(weft_system_stats(f.w, 0, &s), WEFT_ENONAME);
    assert_int_equal(weft_system_stats(f.w, 999, &s), WEFT_ENONAME);
    fx_free(&f);
  }
}

typedef struct phs_t {
  weft_component_t mark, tag;
  weft_entity_t targets[3];
} phs_t;

static int phs_spawn(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  phs_t *p = ctx->user;
  const weft_component_t comps[] = {p->mark, 0};
  weft_entity_t e;
  return weft_cmd_spawn(ctx->cmd, comps, NULL, &e);
}

/* Three commands (adding a tag the entity may have is still a command). */
static int phs_tag(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  phs_t *p = ctx->user;
  for (uint32_t i = 0; i < 3; i++) {
    int rc = weft_cmd_add(ctx->cmd, p->targets[i], p->tag, NULL);
    if (rc)
      return rc;
  }
  return 0;
}

static void test_stats_per_phase(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  phs_t p;
  memset(&p, 0, sizeof p);
  p.mark = f.mark;
  p.tag = f.tag;
  for (uint32_t i = 0; i < 3; i++)
    p.targets[i] = wt_spawn(f.w);
  weft_system_desc_t d =
      sys_desc("fixed.spawn", WEFT_PHASE_FIXED_UPDATE, phs_spawn, &p);
  d.cmd_write[0] = f.mark;
  sys_add(f.w, &d);
  probe_t *pr = calloc(2, sizeof *pr);
  assert_non_null(pr);
  d = sys_desc("fixed.idle", WEFT_PHASE_FIXED_UPDATE, probe_run, &pr[0]);
  sys_add(f.w, &d);
  d = sys_desc("post.idle", WEFT_PHASE_POST_FIXED_UPDATE, probe_run, &pr[1]);
  sys_add(f.w, &d);
  d = sys_desc("render.tag", WEFT_PHASE_PRE_RENDER, phs_tag, &p);
  d.cmd_write[0] = f.tag;
  sys_add(f.w, &d);
  for (uint32_t i = 0; i < 6; i++)
    progress_ok(f.w, 0.1);
  weft_phase_stats_t s = phstats(f.w, WEFT_PHASE_FIXED_UPDATE);
  assert_int_equal(s.runs, 6);
  assert_int_equal(s.sync_points, 6);
  assert_int_equal(s.commands, 6);
  assert_true(s.wall_ns > 0);
  s = phstats(f.w, WEFT_PHASE_POST_FIXED_UPDATE);
  assert_int_equal(s.runs, 6);
  assert_int_equal(s.sync_points, 0);
  assert_int_equal(s.commands, 0);
  s = phstats(f.w, WEFT_PHASE_PRE_RENDER);
  assert_int_equal(s.runs, 6);
  assert_int_equal(s.sync_points, 6);
  assert_int_equal(s.commands, 18);
  s = phstats(f.w, WEFT_PHASE_PRE_UPDATE);
  assert_int_equal(s.runs, 6);
  assert_int_equal(s.sync_points, 0);
  s = phstats(f.w, WEFT_PHASE_NETWORK_TICK);
  assert_int_equal(s.runs, 0);
  assert_int_equal(weft_world_count(f.w), 3 + 6);
  for (uint32_t i = 0; i < 3; i++)
    assert_true(weft_has(f.w, p.targets[i], f.tag));
  weft_pipeline_state_t st = pstate(f.w);
  assert_int_equal(st.sync_points, 12);
  /* The schedule is built once, not per frame, and again after a change. */
  assert_int_equal(st.builds, 1);
  d = sys_desc("late", WEFT_PHASE_PRE_UPDATE, probe_run, &pr[0]);
  sys_add(f.w, &d);
  progress_ok(f.w, 0.1);
  progress_ok(f.w, 0.1);
  assert_int_equal(pstate(f.w).builds, 2);
  weft_phase_stats_t bad;
  assert_int_equal(weft_phase_stats(f.w, 0, &bad), WEFT_ENONAME);
  assert_int_equal(weft_phase_stats(f.w, 60, &bad), WEFT_ENONAME);
  free(pr);
  fx_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stats_per_system),
      cmocka_unit_test(test_stats_idle_workers_split_jobs),
      cmocka_unit_test(test_stats_jobs_start_as_one_part_per_worker),
      cmocka_unit_test(test_stats_per_phase),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
