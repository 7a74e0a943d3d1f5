/* SPDX-License-Identifier: MIT */
/*
 * Callbacks that fail (pipeline.h): the error names the system, the rest of
 * its phase runs and the later phases of the frame do not, and with a pool
 * the lowest failing chunk is the one reported.
 */
#define _GNU_SOURCE /* nanosleep (support/pipeline_test.h) */
#include "support/weft_test.h"

#include "support/pipeline_test.h"

typedef struct err_t {
  weft_component_t mark;
  bool fail;
  uint32_t frame;
  _Atomic uint32_t bad_calls, good_calls, later_rows, post_calls, render_calls,
      fixed_calls;
} err_t;

static int err_bad(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  err_t *e = ctx->user;
  atomic_fetch_add(&e->bad_calls, 1);
  if (e->fail && (ctx->chunk == 3 || ctx->chunk == 5))
    return WEFT_EINVAL;
  return 0;
}

static int err_good(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  err_t *e = ctx->user;
  atomic_fetch_add(&e->good_calls, 1);
  const weft_component_t comps[] = {e->mark, 0};
  weft_entity_t p;
  return weft_cmd_spawn(ctx->cmd, comps, NULL, &p);
}

static int err_later(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  err_t *e = ctx->user;
  atomic_fetch_add(&e->later_rows, chunk->count);
  return 0;
}

static int err_pre_fails(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  return *(const bool *)ctx->user ? WEFT_ENOMEM : 0;
}

static void test_failing_callbacks_error_reports_system(void **state) {
  (void)state;
  fx_t f = fx_new(0, 4096);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  populate(&f, 2000, 0);
  uint32_t nchunks = count_chunks(f.w, f.pos, 0, 1, NULL);
  assert_true(nchunks > 6);
  err_t *e = calloc(1, sizeof *e);
  assert_non_null(e);
  e->mark = f.mark;
  e->fail = true;
  weft_system_desc_t d = sys_desc("good", WEFT_PHASE_FIXED_UPDATE, err_good, e);
  d.query.include[0] = f.vel;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.cmd_write[0] = f.mark;
  sys_add(f.w, &d);
  d = sys_desc("bad", WEFT_PHASE_FIXED_UPDATE, err_bad, e);
  d.query.include[0] = f.pos;
  d.term_access[0] = WEFT_ACCESS_READ;
  weft_system_t bad = sys_add(f.w, &d);
  d = sys_desc("later", WEFT_PHASE_FIXED_UPDATE, err_later, e);
  d.query.include[0] = f.mark;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.after[0] = "good";
  weft_system_t later = sys_add(f.w, &d);
  d = sys_desc("post", WEFT_PHASE_POST_FIXED_UPDATE, err_count, &e->post_calls);
  sys_add(f.w, &d);
  d = sys_desc("render", WEFT_PHASE_PRE_RENDER, err_count, &e->render_calls);
  sys_add(f.w, &d);
  assert_int_equal(sinfo(f.w, bad).segment, 0);
  assert_int_equal(sinfo(f.w, later).segment, 1);

  assert_int_equal(weft_world_progress(f.w, 0.1), WEFT_ESYSTEM);
  const char *msg = weft_world_last_error(f.w);
  assert_non_null(strstr(msg, "bad"));
  assert_non_null(strstr(msg, "chunk 3"));
  /* The rest of the phase ran, sync point included. */
  assert_int_equal(e->bad_calls, nchunks);
  assert_int_equal(e->good_calls, nchunks);
  assert_int_equal(e->later_rows, nchunks);
  assert_int_equal(weft_world_count(f.w), 2000 + nchunks);
  /* Later phases of the frame did not. */
  assert_int_equal(e->post_calls, 0);
  assert_int_equal(e->render_calls, 0);
  wt_check_slot_invariant(f.w);
  uint64_t digest = weft_world_digest(f.w);
  assert_int_equal(weft_world_digest(f.w), digest);
  assert_int_equal(pstate(f.w).frames, 1);
  /* Still failing: the same report. */
  assert_int_equal(weft_world_progress(f.w, 0.1), WEFT_ESYSTEM);
  assert_non_null(strstr(weft_world_last_error(f.w), "chunk 3"));
  assert_int_equal(weft_world_count(f.w), 2000 + 2 * nchunks);
  /* Fixed: frames run whole again. */
  e->fail = false;
  progress_ok(f.w, 0.1);
  assert_int_equal(e->post_calls, 1);
  assert_int_equal(e->render_calls, 1);
  /* Disabled while failing works too. */
  e->fail = true;
  assert_int_equal(weft_system_enable(f.w, bad, false), WEFT_OK);
  progress_ok(f.w, 0.1);
  assert_int_equal(e->post_calls, 2);
  assert_int_equal(e->render_calls, 2);
  assert_int_equal(weft_world_count(f.w), 2000 + 4 * nchunks);
  wt_check_slot_invariant(f.w);

  /* A failure in PreUpdate stops the frame before the fixed loop. */
  bool pre_fail = true;
  d = sys_desc("bad.pre", WEFT_PHASE_PRE_UPDATE, err_pre_fails, &pre_fail);
  sys_add(f.w, &d);
  d = sys_desc("fixed", WEFT_PHASE_FIXED_UPDATE, err_count, &e->fixed_calls);
  sys_add(f.w, &d);
  assert_int_equal(weft_world_progress(f.w, 0.1), WEFT_ESYSTEM);
  assert_non_null(strstr(weft_world_last_error(f.w), "bad.pre"));
  assert_int_equal(e->fixed_calls, 0);
  assert_int_equal(e->render_calls, 2);
  pre_fail = false;
  progress_ok(f.w, 0.1);
  assert_true(e->fixed_calls >= 1);
  assert_int_equal(e->render_calls, 3);
  free(e);
  fx_free(&f);
}

static int err_pool_bad(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  err_t *e = ctx->user;
  atomic_fetch_add(&e->bad_calls, 1);
  uint32_t k = ctx->chunk;
  if (k < 7 || k % 4 != 3)
    return 0;
  /* Make the lowest failure finish last on some frames, first on others. */
  if ((k == 7) == (e->frame % 2 == 0))
    sleep_us(2000);
  return k % 8 == 7 ? WEFT_EINVAL : WEFT_ENOTFOUND;
}

static void test_failing_callbacks_error_lowest_chunk_with_pool(void **state) {
  (void)state;
  fx_t f = fx_new(3, 0);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  populate(&f, BIG_N, 0);
  uint32_t nchunks = count_chunks(f.w, f.pos, 0, 1, NULL);
  assert_true(nchunks > 40);
  err_t *e = calloc(1, sizeof *e);
  assert_non_null(e);
  e->mark = f.mark;
  weft_system_desc_t d =
      sys_desc("pool.bad", WEFT_PHASE_FIXED_UPDATE, err_pool_bad, e);
  d.query.include[0] = f.pos;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.batch = 256;
  weft_system_t bad = sys_add(f.w, &d);
  for (uint32_t frame = 0; frame < 6; frame++) {
    e->frame = frame;
    atomic_store(&e->bad_calls, 0);
    assert_int_equal(weft_world_progress(f.w, 0.1), WEFT_ESYSTEM);
    const char *msg = weft_world_last_error(f.w);
    if (!strstr(msg, "pool.bad") || !strstr(msg, "chunk 7:"))
      fail_msg("frame %u: %s", frame, msg);
    assert_int_equal(e->bad_calls, nchunks);
  }
  weft_system_stats_t bs = sstats(f.w, bad);
  assert_int_equal(bs.runs, 6);
  assert_true(bs.jobs >= bs.runs);
  wt_check_slot_invariant(f.w);
  free(e);
  fx_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_failing_callbacks_error_reports_system),
      cmocka_unit_test(test_failing_callbacks_error_lowest_chunk_with_pool),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
