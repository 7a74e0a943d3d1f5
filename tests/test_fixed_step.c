/* SPDX-License-Identifier: MIT */
/*
 * The fixed-step loop through the public API (pipeline.h): frames against
 * an oracle accumulator (overload policies, alpha, network ticks, phase
 * order, ctx->dt and ctx->tick), bad frame times, a frame started inside
 * a callback, and single phases.
 */
#define _GNU_SOURCE /* nanosleep (support/pipeline_test.h) */
#include "support/weft_test.h"

#include "support/pipeline_test.h"

static void test_fixed_step_steps_follow_accumulator(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  frame_probes_t *fp = probes_add(f.w);
  oracle_t o = oracle_new(FIXED, 8, WEFT_OVERLOAD_DROP, -1.0);
  double dts[80] = {0.0, 0.05, 0.05,  0.1,   0.25, 0.33, 0.01, 0.099,
                    0.2, 0.7,  0.016, 0.034, 0.3,  0.1,  0.45, 0.0999999};
  wt_rng_t r = wt_rng(11);
  for (uint32_t i = 16; i < 80; i++)
    dts[i] = (double)wt_below(&r, 500) / 1000.0; /* 0 .. 0.499 */
  check_frames(f.w, fp, &o, dts, 80);
  assert_true(o.tick > 100); /* the sequence did step */
  assert_int_equal(fp->p[1].calls, o.tick);
  assert_int_equal(fp->p[2].calls, o.tick);
  assert_int_equal(fp->p[3].calls, 0); /* net_dt < 0: never */
  assert_int_equal(fp->p[0].calls, 80);
  assert_int_equal(fp->p[4].calls, 80);
  assert_int_equal(pstate(f.w).steps_dropped, 0);
  free(fp);
  fx_free(&f);
}

static void test_fixed_step_overload_drop_discards_time(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  configure(f.w, FIXED, 3, WEFT_OVERLOAD_DROP, -1.0, 0);
  frame_probes_t *fp = probes_add(f.w);
  oracle_t o = oracle_new(FIXED, 3, WEFT_OVERLOAD_DROP, -1.0);
  /* 1.0 s: three steps run, the remaining ~0.7 s (7 steps) is dropped. */
  const double first = 1.0;
  check_frames(f.w, fp, &o, &first, 1);
  weft_pipeline_state_t st = pstate(f.w);
  assert_int_equal(st.tick, 3);
  assert_int_equal(st.steps_dropped, 7);
  assert_true(fabs(st.time_dropped - 0.7) < 1e-9);
  assert_double_exact(st.accumulator, 0.0);
  assert_double_exact(st.alpha, 0.0);
  /* Dropped time is gone: a zero frame runs nothing. */
  const double zero = 0.0;
  check_frames(f.w, fp, &o, &zero, 1);
  assert_int_equal(pstate(f.w).tick, 3);
  const double more[] = {0.25, 0.35, 0.05, 2.0, 0.3, 0.31, 0.0, 0.6};
  check_frames(f.w, fp, &o, more, sizeof more / sizeof more[0]);
  st = pstate(f.w);
  assert_true(st.steps_dropped > 7 + 10); /* 2.0 s dropped most of itself */
  /* Simulated plus dropped plus pending time is all the time given. */
  double given = 1.0 + 0.25 + 0.35 + 0.05 + 2.0 + 0.3 + 0.31 + 0.6;
  assert_true(fabs((double)st.tick * FIXED + st.time_dropped + st.accumulator -
                   given) < 1e-9);
  free(fp);
  fx_free(&f);
}

static void test_fixed_step_overload_accumulate_keeps_time(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  configure(f.w, FIXED, 3, WEFT_OVERLOAD_ACCUMULATE, -1.0, 0);
  frame_probes_t *fp = probes_add(f.w);
  oracle_t o = oracle_new(FIXED, 3, WEFT_OVERLOAD_ACCUMULATE, -1.0);
  const double first = 1.0;
  check_frames(f.w, fp, &o, &first, 1);
  weft_pipeline_state_t st = pstate(f.w);
  assert_int_equal(st.tick, 3);
  assert_true(fabs(st.accumulator - 0.7) < 1e-9);
  assert_true(fabs(st.alpha - 7.0) < 1e-6); /* accumulator / fixed_dt */
  /* Later frames catch up three steps at a time, even with dt 0. */
  const double zeros[] = {0.0, 0.0, 0.0};
  check_frames(f.w, fp, &o, zeros, 3);
  st = pstate(f.w);
  assert_true(st.tick >= 9);
  assert_int_equal(st.steps_dropped, 0);
  assert_double_exact(st.time_dropped, 0.0);
  assert_true(st.accumulator < FIXED);
  assert_true(fabs((double)st.tick * FIXED + st.accumulator - 1.0) < 1e-9);
  const double more[] = {0.45, 0.05, 0.9, 0.0, 0.0, 0.0, 0.12};
  check_frames(f.w, fp, &o, more, sizeof more / sizeof more[0]);
  st = pstate(f.w);
  assert_int_equal(st.steps_dropped, 0);
  assert_true(fabs((double)st.tick * FIXED + st.accumulator - 2.52) < 1e-9);
  free(fp);
  fx_free(&f);
}

static void test_fixed_step_network_tick_every_net_dt(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, 0.2, 0);
  frame_probes_t *fp = probes_add(f.w);
  oracle_t o = oracle_new(FIXED, 8, WEFT_OVERLOAD_DROP, 0.2);
  /* One step per frame: NetworkTick on every second frame, after the
   * fixed phases. */
  double ones[10];
  for (uint32_t i = 0; i < 10; i++)
    ones[i] = 0.1;
  char expect[64];
  log_reset(&fp->log);
  progress_ok(f.w, 0.1);
  assert_string_equal(fp->log.s, "PFpR");
  log_reset(&fp->log);
  progress_ok(f.w, 0.1);
  assert_string_equal(fp->log.s, "PFpNR");
  (void)oracle_frame(&o, 0.1, expect, sizeof expect);
  (void)oracle_frame(&o, 0.1, expect, sizeof expect);
  check_frames(f.w, fp, &o, ones, 10);
  assert_int_equal(fp->p[3].calls, 6);
  /* Several steps per frame: the tick follows the step that completes
   * 0.2 s of fixed time. */
  log_reset(&fp->log);
  progress_ok(f.w, 0.2);
  assert_string_equal(fp->log.s, "PFpFpNR");
  (void)oracle_frame(&o, 0.2, expect, sizeof expect);
  const double mixed[] = {0.3, 0.3, 0.05, 0.15, 0.25, 0.7, 0.01, 0.1, 0.45};
  check_frames(f.w, fp, &o, mixed, sizeof mixed / sizeof mixed[0]);
  /* A hitch: 5 s under DROP runs 8 steps (0.8 s), so 4 network ticks, and
   * the dropped time does not make later frames tick faster. */
  uint32_t n0 = fp->p[3].calls;
  const double hitch = 5.0;
  check_frames(f.w, fp, &o, &hitch, 1);
  assert_int_equal(fp->p[3].calls - n0, 4);
  n0 = fp->p[3].calls;
  check_frames(f.w, fp, &o, ones, 10);
  assert_int_equal(fp->p[3].calls - n0, 5);
  assert_int_equal(fp->p[3].calls, o.net_ticks);
  assert_int_equal(phstats(f.w, WEFT_PHASE_NETWORK_TICK).runs, o.net_ticks);
  free(fp);
  fx_free(&f);
}

static void test_fixed_step_negative_net_dt_never_ticks(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -0.5, 0);
  frame_probes_t *fp = probes_add(f.w);
  for (uint32_t i = 0; i < 40; i++)
    progress_ok(f.w, 0.35);
  assert_true(fp->p[1].calls >= 130);
  assert_int_equal(fp->p[3].calls, 0);
  assert_int_equal(phstats(f.w, WEFT_PHASE_NETWORK_TICK).runs, 0);
  /* The same world with net_dt 0 (the default, 1/30 s) ticks again. */
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, 0.0, 0);
  progress_ok(f.w, 0.35);
  assert_true(fp->p[3].calls > 0);
  free(fp);
  fx_free(&f);
}

static void test_fixed_step_progress_rejects_bad_dt(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  frame_probes_t *fp = probes_add(f.w);
  const double bad[] = {-0.001, -1.0, NAN, INFINITY, -INFINITY};
  for (uint32_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(weft_world_progress(f.w, bad[i]), WEFT_EINVAL);
    assert_int_equal(weft_world_run_phase(f.w, WEFT_PHASE_PRE_UPDATE, bad[i]),
                     WEFT_EINVAL);
    assert_non_null(strstr(weft_world_last_error(f.w), "dt"));
  }
  weft_pipeline_state_t st = pstate(f.w);
  assert_int_equal(st.frames, 0);
  assert_double_exact(st.accumulator, 0.0);
  for (uint32_t k = 0; k < 5; k++)
    assert_int_equal(fp->p[k].calls, 0);
  /* Unknown phases. */
  assert_int_equal(weft_world_run_phase(f.w, 0, 0.1), WEFT_ENONAME);
  assert_int_equal(weft_world_run_phase(f.w, 99, 0.1), WEFT_ENONAME);
  /* The world still works. */
  progress_ok(f.w, 0.1);
  assert_int_equal(fp->p[1].calls, 1);
  free(fp);
  fx_free(&f);
}

typedef struct nest_t {
  int progress_rc, phase_rc, build_rc, configure_rc;
  uint32_t calls;
} nest_t;

static int nest_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  nest_t *n = ctx->user;
  weft_pipeline_config_t c;
  memset(&c, 0, sizeof c);
  n->progress_rc = weft_world_progress(ctx->world, 0.1);
  n->phase_rc = weft_world_run_phase(ctx->world, WEFT_PHASE_PRE_RENDER, 0.1);
  n->configure_rc = weft_pipeline_configure(ctx->world, &c);
  n->calls++;
  return 0;
}

static void test_fixed_step_progress_inside_callback_is_busy(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  nest_t n;
  memset(&n, 0, sizeof n);
  probe_t render;
  memset(&render, 0, sizeof render);
  weft_system_desc_t d =
      sys_desc("nest", WEFT_PHASE_FIXED_UPDATE, nest_run, &n);
  sys_add(f.w, &d);
  d = sys_desc("render", WEFT_PHASE_PRE_RENDER, probe_run, &render);
  sys_add(f.w, &d);
  progress_ok(f.w, 0.1);
  assert_int_equal(n.calls, 1);
  assert_int_equal(n.progress_rc, WEFT_EBUSY);
  assert_int_equal(n.phase_rc, WEFT_EBUSY);
  assert_int_equal(n.configure_rc, WEFT_EBUSY);
  assert_int_equal(render.calls, 1); /* only the outer frame's PreRender */
  assert_int_equal(pstate(f.w).frames, 1);
  /* Inside a deferred scope too. */
  weft_world_defer_begin(f.w);
  assert_int_equal(weft_world_progress(f.w, 0.1), WEFT_EBUSY);
  assert_int_equal(weft_world_run_phase(f.w, WEFT_PHASE_FIXED_UPDATE, 0.1),
                   WEFT_EBUSY);
  assert_int_equal(weft_world_defer_end(f.w), WEFT_OK);
  assert_int_equal(n.calls, 1);
  progress_ok(f.w, 0.1);
  assert_int_equal(n.calls, 2);
  assert_int_equal(pstate(f.w).frames, 2);
  fx_free(&f);
}

static void test_fixed_step_run_phase_runs_one_phase(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, 0.2, 0);
  frame_probes_t *fp = probes_add(f.w);
  /* A user phase anchored to FixedUpdate runs right after it. */
  weft_phase_t after_fixed = 0;
  assert_int_equal(weft_phase_register(f.w, "AfterFixed",
                                       WEFT_PHASE_FIXED_UPDATE, &after_fixed),
                   WEFT_OK);
  weft_phase_t found = 0;
  assert_int_equal(weft_phase_lookup(f.w, "AfterFixed", &found), WEFT_OK);
  assert_int_equal(found, after_fixed);
  probe_t user;
  memset(&user, 0, sizeof user);
  user.log = &fp->log;
  user.letter = 'A';
  weft_system_desc_t d = sys_desc("user", after_fixed, probe_run, &user);
  sys_add(f.w, &d);

  log_reset(&fp->log);
  assert_int_equal(weft_world_run_phase(f.w, WEFT_PHASE_PRE_RENDER, 0.5),
                   WEFT_OK);
  assert_string_equal(fp->log.s, "R");
  assert_double_exact(fp->p[4].dt[0], 0.5);
  log_reset(&fp->log);
  assert_int_equal(weft_world_run_phase(f.w, WEFT_PHASE_FIXED_UPDATE, 0.25),
                   WEFT_OK);
  assert_string_equal(fp->log.s, "FA");
  assert_double_exact(fp->p[1].dt[0], 0.25);
  assert_double_exact(user.dt[0], 0.25);
  log_reset(&fp->log);
  assert_int_equal(weft_world_run_phase(f.w, WEFT_PHASE_NETWORK_TICK, 0.125),
                   WEFT_OK);
  assert_string_equal(fp->log.s, "N");
  log_reset(&fp->log);
  assert_int_equal(weft_world_run_phase(f.w, after_fixed, 0.125), WEFT_OK);
  assert_string_equal(fp->log.s, "A");
  /* No frame ran: the fixed-step state did not move. */
  weft_pipeline_state_t st = pstate(f.w);
  assert_int_equal(st.frames, 0);
  assert_int_equal(st.tick, 0);
  assert_double_exact(st.accumulator, 0.0);
  /* In a frame the user phase follows every FixedUpdate. */
  log_reset(&fp->log);
  progress_ok(f.w, 0.2);
  assert_string_equal(fp->log.s, "PFApFApNR");
  free(fp);
  fx_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fixed_step_steps_follow_accumulator),
      cmocka_unit_test(test_fixed_step_overload_drop_discards_time),
      cmocka_unit_test(test_fixed_step_overload_accumulate_keeps_time),
      cmocka_unit_test(test_fixed_step_network_tick_every_net_dt),
      cmocka_unit_test(test_fixed_step_negative_net_dt_never_ticks),
      cmocka_unit_test(test_fixed_step_progress_rejects_bad_dt),
      cmocka_unit_test(test_fixed_step_progress_inside_callback_is_busy),
      cmocka_unit_test(test_fixed_step_run_phase_runs_one_phase),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
