/* SPDX-License-Identifier: MIT */
/*
 * Main-thread and exclusive systems (pipeline.h): where they run, that an
 * exclusive system runs alone, and the structural calls it may make.
 */
#define _GNU_SOURCE /* nanosleep (support/pipeline_test.h) */
#include "support/weft_test.h"

#include "support/pipeline_test.h"

typedef struct thr_t {
  pthread_t driver;
  uint32_t slots;
  _Atomic uint32_t main_calls, main_off, bad_slot, par_calls, par_off, task_off,
      task_calls;
} thr_t;

static int thr_main(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  thr_t *t = ctx->user;
  atomic_fetch_add(&t->main_calls, 1);
  if (!pthread_equal(pthread_self(), t->driver))
    atomic_fetch_add(&t->main_off, 1);
  if (ctx->worker >= t->slots)
    atomic_fetch_add(&t->bad_slot, 1);
  (void)chunk;
  return 0;
}

static int thr_par(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  thr_t *t = ctx->user;
  atomic_fetch_add(&t->par_calls, 1);
  if (!pthread_equal(pthread_self(), t->driver))
    atomic_fetch_add(&t->par_off, 1);
  if (ctx->worker >= t->slots)
    atomic_fetch_add(&t->bad_slot, 1);
  (void)chunk;
  sleep_us(50); /* give the workers a share */
  return 0;
}

static int thr_task(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  thr_t *t = ctx->user;
  (void)chunk;
  atomic_fetch_add(&t->task_calls, 1);
  if (!pthread_equal(pthread_self(), t->driver))
    atomic_fetch_add(&t->task_off, 1);
  if (ctx->worker >= t->slots)
    atomic_fetch_add(&t->bad_slot, 1);
  return 0;
}

static void test_system_threads_main_thread_system(void **state) {
  (void)state;
  fx_t f = fx_new(3, 0);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 1);
  populate(&f, BIG_N, 0);
  uint32_t nchunks = count_chunks(f.w, f.pos, 0, 1, NULL);
  thr_t *t = calloc(1, sizeof *t);
  assert_non_null(t);
  t->driver = pthread_self();
  t->slots = weft_pipeline_slots(f.w);
  assert_int_equal(t->slots, 4);
  weft_system_desc_t d = sys_desc("main", WEFT_PHASE_FIXED_UPDATE, thr_main, t);
  d.query.include[0] = f.pos;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.flags = WEFT_SYSTEM_MAIN_THREAD;
  d.batch = 1024;
  sys_add(f.w, &d);
  d = sys_desc("par", WEFT_PHASE_FIXED_UPDATE, thr_par, t);
  d.query.include[0] = f.vel;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.batch = 1024;
  weft_system_t par = sys_add(f.w, &d);
  /* A main-thread task that waits for the parallel one. */
  d = sys_desc("main.task", WEFT_PHASE_FIXED_UPDATE, thr_task, t);
  d.flags = WEFT_SYSTEM_MAIN_THREAD;
  d.after[0] = "par";
  sys_add(f.w, &d);
  for (uint32_t i = 0; i < 5; i++)
    progress_ok(f.w, 0.1);
  assert_int_equal(t->main_calls, 5 * nchunks);
  assert_int_equal(t->main_off, 0);
  assert_int_equal(t->task_calls, 5);
  assert_int_equal(t->task_off, 0);
  assert_int_equal(t->par_calls, 5 * nchunks);
  assert_int_equal(t->bad_slot, 0);
  assert_true(sstats(f.w, par).jobs > 0);
  free(t);
  fx_free(&f);
}

typedef struct excl_t {
  pthread_t driver;
  weft_component_t mark;
  _Atomic uint32_t inside, excl, overlap, off_thread, calls;
  uint32_t spawn_fail, count_before, count_after, alive_now;
  uint32_t marks_seen;
} excl_t;

static void excl_enter(excl_t *x) {
  atomic_fetch_add(&x->inside, 1);
  if (atomic_load(&x->excl) != 0)
    atomic_fetch_add(&x->overlap, 1);
}

static int excl_plain(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  excl_t *x = ctx->user;
  excl_enter(x);
  pos_t *p = chunk->columns[0];
  for (uint32_t r = 0; r < chunk->count; r++)
    p[r].y += 1.0;
  if (atomic_load(&x->excl) != 0)
    atomic_fetch_add(&x->overlap, 1);
  atomic_fetch_sub(&x->inside, 1);
  return 0;
}

static int excl_alone(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  excl_t *x = ctx->user;
  if (atomic_fetch_add(&x->inside, 1) != 0)
    atomic_fetch_add(&x->overlap, 1);
  atomic_store(&x->excl, 1);
  if (!pthread_equal(pthread_self(), x->driver))
    atomic_fetch_add(&x->off_thread, 1);
  atomic_fetch_add(&x->calls, 1);
  /* Direct structural access takes effect at once. */
  x->count_before = weft_world_count(ctx->world);
  const weft_component_t comps[] = {x->mark, 0};
  weft_entity_t e = WEFT_ENTITY_NULL;
  if (weft_spawn_with(ctx->world, comps, NULL, &e) != WEFT_OK)
    x->spawn_fail++;
  x->alive_now += weft_is_alive(ctx->world, e);
  x->count_after = weft_world_count(ctx->world);
  sleep_us(2000); /* anything running beside it would show up now */
  if (atomic_load(&x->inside) != 1)
    atomic_fetch_add(&x->overlap, 1);
  atomic_store(&x->excl, 0);
  atomic_fetch_sub(&x->inside, 1);
  return 0;
}

static int excl_marks(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  excl_t *x = ctx->user;
  excl_enter(x);
  x->marks_seen += chunk->count;
  atomic_fetch_sub(&x->inside, 1);
  return 0;
}

static void test_system_threads_exclusive_runs_alone(void **state) {
  (void)state;
  fx_t f = fx_new(3, 0);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 1);
  populate(&f, BIG_N, 0);
  excl_t *x = calloc(1, sizeof *x);
  assert_non_null(x);
  x->driver = pthread_self();
  x->mark = f.mark;
  weft_system_desc_t d =
      sys_desc("plain.a", WEFT_PHASE_FIXED_UPDATE, excl_plain, x);
  d.query.include[0] = f.pos;
  d.term_access[0] = WEFT_ACCESS_WRITE;
  d.batch = 1024;
  weft_system_t a = sys_add(f.w, &d);
  d = sys_desc("alone", WEFT_PHASE_FIXED_UPDATE, excl_alone, x);
  d.flags = WEFT_SYSTEM_EXCLUSIVE;
  weft_system_t alone = sys_add(f.w, &d);
  d = sys_desc("plain.b", WEFT_PHASE_FIXED_UPDATE, excl_plain, x);
  d.query.include[0] = f.pos;
  d.query.include[1] = f.vel;
  d.term_access[0] = WEFT_ACCESS_WRITE;
  d.term_access[1] = WEFT_ACCESS_READ;
  d.batch = 1024;
  weft_system_t b = sys_add(f.w, &d);
  /* Reads Mark (only "alone" creates it, directly): sees this frame's. */
  d = sys_desc("marks", WEFT_PHASE_FIXED_UPDATE, excl_marks, x);
  d.query.include[0] = f.mark;
  d.term_access[0] = WEFT_ACCESS_READ;
  sys_add(f.w, &d);
  weft_system_info_t ia = sinfo(f.w, a), ix = sinfo(f.w, alone),
                     ib = sinfo(f.w, b);
  assert_true(ix.exclusive);
  assert_false(ia.exclusive);
  assert_true(ia.segment < ix.segment && ix.segment < ib.segment);
  for (uint32_t i = 0; i < 5; i++) {
    x->marks_seen = 0;
    progress_ok(f.w, 0.1);
    assert_int_equal(x->count_after, x->count_before + 1);
    assert_int_equal(x->marks_seen, i + 1);
  }
  assert_int_equal(x->calls, 5);
  assert_int_equal(x->alive_now, 5);
  assert_int_equal(x->spawn_fail, 0);
  assert_int_equal(x->off_thread, 0);
  assert_int_equal(x->overlap, 0);
  assert_int_equal(weft_world_count(f.w), BIG_N + 5);
  assert_true(sstats(f.w, a).jobs > 0);
  free(x);
  fx_free(&f);
}

typedef struct excl_q_t {
  weft_component_t mark;
  uint32_t calls, fails, count_in;
} excl_q_t;

/* An exclusive system with a query: structural calls made while it walks
 * its chunks stage and apply when the walk ends. */
static int excl_query_spawn(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  excl_q_t *q = ctx->user;
  const weft_component_t comps[] = {q->mark, 0};
  weft_entity_t e;
  if (weft_spawn_with(ctx->world, comps, NULL, &e) != WEFT_OK)
    q->fails++;
  q->calls++;
  return 0;
}

static int excl_query_count(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  excl_q_t *q = ctx->user;
  q->count_in = weft_world_count(ctx->world);
  return 0;
}

static void test_system_threads_exclusive_query_structural_calls(void **state) {
  (void)state;
  fx_t f = fx_new(0, 4096);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  populate(&f, 1000, 0);
  uint32_t nchunks = count_chunks(f.w, f.vel, 0, 1, NULL);
  excl_q_t q;
  memset(&q, 0, sizeof q);
  q.mark = f.mark;
  weft_system_desc_t d =
      sys_desc("excl.query", WEFT_PHASE_FIXED_UPDATE, excl_query_spawn, &q);
  d.query.include[0] = f.vel;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.flags = WEFT_SYSTEM_EXCLUSIVE;
  sys_add(f.w, &d);
  d = sys_desc("after.excl", WEFT_PHASE_FIXED_UPDATE, excl_query_count, &q);
  sys_add(f.w, &d);
  progress_ok(f.w, 0.1);
  assert_int_equal(q.calls, nchunks);
  assert_int_equal(q.fails, 0);
  assert_int_equal(q.count_in, 1000 + nchunks); /* the next segment sees */
  assert_int_equal(weft_world_count(f.w), 1000 + nchunks);
  assert_int_equal(weft_world_defer_depth(f.w), 0);
  wt_check_slot_invariant(f.w);
  fx_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_system_threads_main_thread_system),
      cmocka_unit_test(test_system_threads_exclusive_runs_alone),
      cmocka_unit_test(test_system_threads_exclusive_query_structural_calls),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
