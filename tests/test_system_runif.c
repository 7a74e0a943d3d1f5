/* SPDX-License-Identifier: MIT */
/*
 * Run conditions at a system's turn (pipeline.h): a system runs in the
 * frames its condition allows, a one-shot condition runs once and goes,
 * and a disabled system or phase does not consume its condition. The
 * conditions themselves are tested in test_runif.c.
 */
#define _GNU_SOURCE /* nanosleep (support/pipeline_test.h) */
#include "support/weft_test.h"

#include "support/pipeline_test.h"

static void test_system_runif_every_matches_condition(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  xlog_t log;
  log_reset(&log);
  probe_t *pr = calloc(3, sizeof *pr);
  assert_non_null(pr);
  const char letters[3] = {'Q', 'F', 'E'};
  for (uint32_t i = 0; i < 3; i++) {
    pr[i].log = &log;
    pr[i].letter = letters[i];
  }
  weft_runif_t *c_pre = NULL, *c_every = NULL, *twin_pre = NULL,
               *twin_every = NULL;
  assert_int_equal(weft_runif_every(f.w, 0.25, &c_pre), WEFT_OK);
  assert_int_equal(weft_runif_every(f.w, 0.3, &c_every), WEFT_OK);
  assert_int_equal(weft_runif_every(f.w, 0.25, &twin_pre), WEFT_OK);
  assert_int_equal(weft_runif_every(f.w, 0.3, &twin_every), WEFT_OK);
  weft_system_desc_t d =
      sys_desc("pre", WEFT_PHASE_PRE_UPDATE, probe_run, &pr[0]);
  d.run_if = c_pre;
  weft_system_t pre = sys_add(f.w, &d);
  d = sys_desc("always", WEFT_PHASE_FIXED_UPDATE, probe_run, &pr[1]);
  sys_add(f.w, &d);
  d = sys_desc("every", WEFT_PHASE_FIXED_UPDATE, probe_run, &pr[2]);
  d.run_if = c_every;
  weft_system_t every = sys_add(f.w, &d);

  oracle_t o = oracle_new(FIXED, 8, WEFT_OVERLOAD_DROP, -1.0);
  wt_rng_t r = wt_rng(3);
  uint64_t fires = 0, pre_fires = 0, steps_total = 0;
  for (uint32_t i = 0; i < 60; i++) {
    double dt = i < 20 ? 0.1 : (double)wt_below(&r, 350) / 1000.0;
    log_reset(&log);
    progress_ok(f.w, dt);
    char tmp[256], expect[256];
    uint32_t steps = oracle_frame(&o, dt, tmp, sizeof tmp);
    size_t n = 0;
    if (weft_runif_eval(twin_pre, dt, NULL)) {
      expect[n++] = 'Q';
      pre_fires++;
    }
    for (uint32_t k = 0; k < steps; k++) {
      expect[n++] = 'F';
      if (weft_runif_eval(twin_every, FIXED, NULL)) {
        expect[n++] = 'E';
        fires++;
      }
    }
    expect[n] = 0;
    if (strcmp(log.s, expect) != 0)
      fail_msg("frame %u: ran %s, expected %s", i, log.s, expect);
    steps_total += steps;
  }
  assert_true(fires > 5 && fires < steps_total);
  weft_system_stats_t s = sstats(f.w, every);
  assert_int_equal(s.runs, fires);
  assert_int_equal(s.skipped, steps_total - fires);
  s = sstats(f.w, pre);
  assert_int_equal(s.runs, pre_fires);
  assert_int_equal(s.skipped, 60 - pre_fires);
  free(pr);
  fx_free(&f);
}

static void test_system_runif_after_runs_once_then_removed(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  probe_t *pr = calloc(2, sizeof *pr);
  assert_non_null(pr);
  weft_runif_t *c = NULL;
  assert_int_equal(weft_runif_after(f.w, 0.35, &c), WEFT_OK);
  weft_system_desc_t d =
      sys_desc("once", WEFT_PHASE_FIXED_UPDATE, probe_run, &pr[0]);
  d.run_if = c;
  weft_system_t id = sys_add(f.w, &d);
  weft_system_t found = 0;
  /* 0.1, 0.2, 0.3 s evaluated: not yet. */
  for (uint32_t i = 0; i < 3; i++) {
    progress_ok(f.w, 0.1);
    assert_int_equal(pr[0].calls, 0);
    assert_int_equal(weft_system_lookup(f.w, "once", &found), WEFT_OK);
    assert_int_equal(found, id);
  }
  assert_int_equal(sstats(f.w, id).skipped, 3);
  /* The fourth step fires it; after the frame it is gone. */
  progress_ok(f.w, 0.1);
  assert_int_equal(pr[0].calls, 1);
  assert_int_equal(pr[0].tick[0], 3);
  assert_int_equal(weft_system_lookup(f.w, "once", &found), WEFT_ENONAME);
  weft_system_stats_t s;
  assert_int_equal(weft_system_stats(f.w, id, &s), WEFT_ENONAME);
  assert_int_equal(weft_phase_systems(f.w, WEFT_PHASE_FIXED_UPDATE, NULL, 0),
                   0);
  for (uint32_t i = 0; i < 5; i++)
    progress_ok(f.w, 0.3);
  assert_int_equal(pr[0].calls, 1);

  /* Firing mid-frame: the later steps of that frame do not run it. */
  weft_runif_t *c2 = NULL;
  assert_int_equal(weft_runif_after(f.w, 0.25, &c2), WEFT_OK);
  d = sys_desc("once2", WEFT_PHASE_FIXED_UPDATE, probe_run, &pr[1]);
  d.run_if = c2;
  sys_add(f.w, &d);
  uint64_t tick0 = pstate(f.w).tick;
  progress_ok(f.w, 0.8); /* 8 steps */
  assert_int_equal(pstate(f.w).tick, tick0 + 8);
  assert_int_equal(pr[1].calls, 1);
  assert_int_equal(pr[1].tick[0], tick0 + 2); /* third step: 0.3 s */
  assert_int_equal(weft_system_lookup(f.w, "once2", &found), WEFT_ENONAME);
  progress_ok(f.w, 0.8);
  assert_int_equal(pr[1].calls, 1);
  free(pr);
  fx_free(&f);
}

typedef struct pred_t {
  uint32_t calls;
} pred_t;

/* True on every other evaluation, counting them. */
static bool pred_alternate(weft_world_t *w, double dt, void *user) {
  (void)w;
  (void)dt;
  pred_t *p = user;
  return p->calls++ % 2 == 0;
}

static void test_system_runif_disabled_system_skips_condition(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  probe_t *pr = calloc(1, sizeof *pr);
  assert_non_null(pr);
  pred_t pred = {0};
  weft_runif_t *c = NULL;
  assert_int_equal(weft_runif_custom(f.w, pred_alternate, &pred, &c), WEFT_OK);
  weft_system_desc_t d =
      sys_desc("gated", WEFT_PHASE_FIXED_UPDATE, probe_run, pr);
  d.run_if = c;
  d.flags = WEFT_SYSTEM_DISABLED;
  weft_system_t id = sys_add(f.w, &d);
  assert_false(sinfo(f.w, id).enabled);
  for (uint32_t i = 0; i < 5; i++)
    progress_ok(f.w, 0.1);
  assert_int_equal(pstate(f.w).tick, 5);
  assert_int_equal(pred.calls, 0);
  assert_int_equal(pr->calls, 0);
  weft_system_stats_t s = sstats(f.w, id);
  assert_int_equal(s.runs, 0);
  assert_int_equal(s.skipped, 0);
  /* Enabled: evaluated at each of its turns, runs when it holds. */
  assert_int_equal(weft_system_enable(f.w, id, true), WEFT_OK);
  assert_true(sinfo(f.w, id).enabled);
  for (uint32_t i = 0; i < 6; i++)
    progress_ok(f.w, 0.1);
  assert_int_equal(pred.calls, 6);
  assert_int_equal(pr->calls, 3);
  s = sstats(f.w, id);
  assert_int_equal(s.runs, 3);
  assert_int_equal(s.skipped, 3);
  /* Disabled again: no more evaluations. */
  assert_int_equal(weft_system_enable(f.w, id, false), WEFT_OK);
  for (uint32_t i = 0; i < 4; i++)
    progress_ok(f.w, 0.1);
  assert_int_equal(pred.calls, 6);
  assert_int_equal(pr->calls, 3);
  assert_int_equal(sstats(f.w, id).skipped, 3);
  assert_int_equal(weft_system_enable(f.w, 9999, true), WEFT_ENONAME);
  free(pr);
  fx_free(&f);
}

static void test_system_runif_disabled_phase_skips_condition(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  frame_probes_t *fp = probes_add(f.w);
  pred_t pred = {0};
  weft_runif_t *c = NULL;
  assert_int_equal(weft_runif_custom(f.w, pred_alternate, &pred, &c), WEFT_OK);
  probe_t *gated = calloc(1, sizeof *gated);
  assert_non_null(gated);
  weft_system_desc_t d =
      sys_desc("gated", WEFT_PHASE_FIXED_UPDATE, probe_run, gated);
  d.run_if = c;
  weft_system_t id = sys_add(f.w, &d);
  assert_int_equal(weft_phase_enable(f.w, WEFT_PHASE_FIXED_UPDATE, false),
                   WEFT_OK);
  for (uint32_t i = 0; i < 5; i++) {
    log_reset(&fp->log);
    progress_ok(f.w, 0.1);
    assert_string_equal(fp->log.s, "PpR"); /* only FixedUpdate is off */
  }
  assert_int_equal(weft_world_run_phase(f.w, WEFT_PHASE_FIXED_UPDATE, 0.1),
                   WEFT_OK);
  assert_int_equal(pred.calls, 0);
  assert_int_equal(gated->calls, 0);
  assert_int_equal(fp->p[1].calls, 0);
  assert_int_equal(sstats(f.w, id).skipped, 0);
  assert_int_equal(weft_phase_enable(f.w, WEFT_PHASE_FIXED_UPDATE, true),
                   WEFT_OK);
  for (uint32_t i = 0; i < 4; i++)
    progress_ok(f.w, 0.1);
  assert_int_equal(pred.calls, 4);
  assert_int_equal(gated->calls, 2);
  assert_int_equal(fp->p[1].calls, 4);
  assert_int_equal(weft_phase_enable(f.w, 77, false), WEFT_ENONAME);
  free(gated);
  free(fp);
  fx_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_system_runif_every_matches_condition),
      cmocka_unit_test(test_system_runif_after_runs_once_then_removed),
      cmocka_unit_test(test_system_runif_disabled_system_skips_condition),
      cmocka_unit_test(test_system_runif_disabled_phase_skips_condition),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
