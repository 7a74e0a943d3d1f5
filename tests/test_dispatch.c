/* SPDX-License-Identifier: MIT */
/*
 * Inline or dispatch (pipeline.h): independent heavy systems run at the same
 * time on a pool, and cheap tasks, once measured, run inline.
 */
#define _GNU_SOURCE /* nanosleep (support/pipeline_test.h) */
#include "support/weft_test.h"

#include "support/pipeline_test.h"

/* Two heavy systems with nothing in common: each spins for at least 3 ms
 * (so its measured cost is far past inline_rows' worth), and longer while
 * it has not seen the other inside (up to 1 s), noting whether it did. */
typedef struct overlap_t {
  _Atomic uint32_t inside;
  _Atomic uint32_t overlapped;
  _Atomic uint32_t calls;
} overlap_t;

static int heavy_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  overlap_t *o = ctx->user;
  atomic_fetch_add(&o->calls, 1);
  bool saw = atomic_fetch_add(&o->inside, 1) + 1 == 2;
  double t0 = wt_now_s();
  for (;;) {
    saw = saw || atomic_load(&o->inside) == 2;
    double t = wt_now_s() - t0;
    if (t >= 0.003 && (saw || t >= 1.0))
      break;
  }
  if (saw)
    atomic_fetch_add(&o->overlapped, 1);
  atomic_fetch_sub(&o->inside, 1);
  return 0;
}

/*
 * Two independent heavy systems run at the same time on two workers,
 * under the default inline_rows (where a task used to count as one row
 * and the two ran one after the other on the driving thread). Asserted on
 * the schedule: they share a segment with no edge, both go to the pool in
 * every frame (a task with no measured cost yet is dispatched, then its
 * measured cost keeps it there), and their runs overlapped in at least one
 * of up to ten frames (on a loaded machine a worker may start late).
 * Tasks, then query systems over a few rows.
 */
static void test_dispatch_independent_heavy_systems_overlap(void **state) {
  (void)state;
  for (int query = 0; query < 2; query++) {
    fx_t f = fx_new(2, 0);
    configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
    populate(&f, 4, 0);
    overlap_t *o = calloc(1, sizeof *o);
    assert_non_null(o);
    weft_system_t id[2];
    for (int i = 0; i < 2; i++) {
      weft_system_desc_t d = sys_desc(i ? "heavy.b" : "heavy.a",
                                      WEFT_PHASE_FIXED_UPDATE, heavy_run, o);
      if (query) {
        d.query.include[0] = i ? f.vel : f.pos;
        d.term_access[0] = WEFT_ACCESS_READ;
      }
      id[i] = sys_add(f.w, &d);
    }
    assert_false(weft_system_edge(f.w, id[0], id[1]));
    assert_false(weft_system_edge(f.w, id[1], id[0]));
    assert_int_equal(sinfo(f.w, id[0]).segment, sinfo(f.w, id[1]).segment);
    /* A query system's first estimate comes from its rows (four): its
     * first run may be inline, and is timed. */
    uint32_t frames = 0;
    if (query) {
      progress_ok(f.w, FIXED);
      frames++;
      atomic_store(&o->overlapped, 0);
    }
    while (frames < 11 && atomic_load(&o->overlapped) == 0) {
      weft_system_stats_t s0[2] = {sstats(f.w, id[0]), sstats(f.w, id[1])};
      progress_ok(f.w, FIXED);
      frames++;
      for (int i = 0; i < 2; i++) {
        weft_system_stats_t s1 = sstats(f.w, id[i]);
        assert_int_equal(s1.runs - s0[i].runs, 1);
        if (s1.jobs == s0[i].jobs)
          fail_msg("%s frame %u: system %d ran inline",
                   query ? "query" : "task", frames, i);
      }
    }
    assert_int_equal(atomic_load(&o->calls), 2 * frames);
    assert_true(atomic_load(&o->overlapped) > 0);
    free(o);
    fx_free(&f);
  }
}

/* Tiny tasks on a pool: once measured they run inline, with no dispatch
 * at all, in at least one of 40 frames (on a loaded machine a run that
 * was preempted while timed may send them to the pool for a frame). A
 * task that then becomes heavy is dispatched again within a few runs (the
 * segment, timed as a whole, took too long: its systems are timed in the
 * next runs). */
typedef struct tiny_t {
  _Atomic uint32_t calls;
  _Atomic bool heavy;
} tiny_t;

static int tiny_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  tiny_t *t = ctx->user;
  atomic_fetch_add(&t->calls, 1);
  if (atomic_load(&t->heavy)) {
    double t0 = wt_now_s();
    while (wt_now_s() - t0 < 0.002) {
    }
  }
  return 0;
}

static void test_dispatch_cheap_tasks_stay_inline(void **state) {
  (void)state;
  enum { NTASKS = 50 };
  fx_t f = fx_new(2, 0);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  tiny_t *t = calloc(NTASKS, sizeof *t);
  assert_non_null(t);
  weft_system_t id[NTASKS];
  for (uint32_t i = 0; i < NTASKS; i++) {
    char name[16];
    snprintf(name, sizeof name, "tiny%u", i);
    weft_system_desc_t d =
        sys_desc(name, WEFT_PHASE_FIXED_UPDATE, tiny_run, &t[i]);
    id[i] = sys_add(f.w, &d);
  }
  uint64_t jobs_before[NTASKS];
  bool inline_frame = false;
  for (uint32_t frame = 0; frame < 40 && !inline_frame; frame++) {
    for (uint32_t i = 0; i < NTASKS; i++)
      jobs_before[i] = sstats(f.w, id[i]).jobs;
    assert_int_equal(weft_world_run_phase(f.w, WEFT_PHASE_FIXED_UPDATE, FIXED),
                     WEFT_OK);
    uint64_t dispatched = 0;
    for (uint32_t i = 0; i < NTASKS; i++)
      dispatched += sstats(f.w, id[i]).jobs - jobs_before[i];
    /* Unknown cost: the first run of each goes to the pool. */
    if (frame == 0)
      assert_int_equal(dispatched, NTASKS);
    else
      inline_frame = dispatched == 0;
  }
  assert_true(inline_frame);
  for (uint32_t i = 0; i < NTASKS; i++)
    assert_true(atomic_load(&t[i].calls) >= 2);
  /* One of them turns heavy. */
  atomic_store(&t[7].heavy, true);
  uint64_t jobs0 = sstats(f.w, id[7]).jobs;
  for (uint32_t run = 0; run < 40 && sstats(f.w, id[7]).jobs == jobs0; run++)
    assert_int_equal(weft_world_run_phase(f.w, WEFT_PHASE_FIXED_UPDATE, FIXED),
                     WEFT_OK);
  assert_true(sstats(f.w, id[7]).jobs > jobs0);
  free(t);
  fx_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dispatch_independent_heavy_systems_overlap),
      cmocka_unit_test(test_dispatch_cheap_tasks_stay_inline),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
