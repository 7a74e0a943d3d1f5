/* SPDX-License-Identifier: MIT */
/*
 * The frame pipeline through its public API (system.h): the fixed-step
 * loop against an oracle accumulator (overload policies, alpha, network
 * ticks, phase order, ctx->dt and ctx->tick), single phases, run
 * conditions at a system's turn, commands and sync points, determinism
 * with a pool, events, resources, change versions, failing callbacks,
 * main-thread and exclusive systems, statistics, traces and the absence of
 * allocations in steady frames. Every test builds and destroys its own
 * world (and pool).
 *
 * Callbacks that may run on pool workers never call cmocka's asserts (they
 * jump); they count what they saw in atomics that the test checks after
 * the frame.
 */
#define _GNU_SOURCE /* mkstemp, nanosleep */
#include "support/weft_test.h"

/* weft__pool_hungry(): test_pipeline_idle_workers_split_jobs waits for
 * the condition under which a job splits. */
#include "scheduler/pool_internal.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* --- helpers ------------------------------------------------------------- */

#define FIXED 0.1
#define BIG_N 50000u

#define assert_double_exact(a, b)                                              \
  do {                                                                         \
    double a_ = (a), b_ = (b);                                                 \
    if (!(a_ == b_))                                                           \
      fail_msg("%s = %.17g, expected %.17g", #a, a_, b_);                      \
  } while (0)

typedef struct pos_t {
  double x, y;
} pos_t;

typedef struct vel_t {
  double dx, dy;
} vel_t;

/* A world, its optional pool and the components most tests use. */
typedef struct fx_t {
  weft_world_t *w;
  weft_pool_t *pool;
  weft_component_t pos, vel, mark, tag;
} fx_t;

static fx_t fx_new(uint32_t workers, uint32_t chunk_size) {
  fx_t f;
  memset(&f, 0, sizeof f);
  f.w = wt_world_pooled(workers, chunk_size, &f.pool);
  f.pos = wt_register(f.w, "Pos", sizeof(pos_t), 0);
  f.vel = wt_register(f.w, "Vel", sizeof(vel_t), 0);
  f.mark = wt_register(f.w, "Mark", sizeof(uint32_t), 0);
  f.tag = wt_register_tag(f.w, "Tag");
  return f;
}

static void fx_free(fx_t *f) {
  weft_world_destroy(f->w); /* before the pool it uses */
  if (f->pool)
    weft_pool_destroy(f->pool);
  memset(f, 0, sizeof *f);
}

static void configure(weft_world_t *w, double fixed_dt, uint32_t max_steps,
                      weft_overload_t overload, double net_dt,
                      uint32_t inline_rows) {
  weft_pipeline_config_t c;
  memset(&c, 0, sizeof c);
  c.fixed_dt = fixed_dt;
  c.max_steps = max_steps;
  c.overload = overload;
  c.net_dt = net_dt;
  c.inline_rows = inline_rows;
  assert_int_equal(weft_pipeline_configure(w, &c), WEFT_OK);
}

static weft_system_desc_t sys_desc(const char *name, weft_phase_t phase,
                                   weft_system_fn run, void *user) {
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.phase = phase;
  d.run = run;
  d.user = user;
  return d;
}

static weft_system_t sys_add(weft_world_t *w, const weft_system_desc_t *d) {
  weft_system_t id = 0;
  int rc = weft_system_register(w, d, &id);
  if (rc != WEFT_OK)
    fail_msg("registering %s: %s (%s)", d->name, weft_strerror(rc),
             weft_world_last_error(w));
  assert_int_not_equal(id, 0);
  return id;
}

static weft_pipeline_state_t pstate(const weft_world_t *w) {
  weft_pipeline_state_t s;
  memset(&s, 0xa5, sizeof s);
  weft_pipeline_state(w, &s);
  return s;
}

static weft_system_stats_t sstats(const weft_world_t *w, weft_system_t id) {
  weft_system_stats_t s;
  memset(&s, 0xa5, sizeof s);
  assert_int_equal(weft_system_stats(w, id, &s), WEFT_OK);
  return s;
}

static weft_phase_stats_t phstats(const weft_world_t *w, weft_phase_t ph) {
  weft_phase_stats_t s;
  memset(&s, 0xa5, sizeof s);
  assert_int_equal(weft_phase_stats(w, ph, &s), WEFT_OK);
  return s;
}

static weft_system_info_t sinfo(weft_world_t *w, weft_system_t id) {
  weft_system_info_t i;
  memset(&i, 0, sizeof i);
  assert_int_equal(weft_system_info(w, id, &i), WEFT_OK);
  return i;
}

static void progress_ok(weft_world_t *w, double dt) {
  int rc = weft_world_progress(w, dt);
  if (rc != WEFT_OK)
    fail_msg("progress(%g): %s (%s)", dt, weft_strerror(rc),
             weft_world_last_error(w));
}

static void fill_pv(void *user, const weft_iter_t *view, uint32_t first) {
  (void)user;
  pos_t *p = view->columns[0];
  vel_t *v = view->columns[1];
  for (uint32_t r = 0; r < view->count; r++) {
    uint32_t k = first + r;
    p[r] = (pos_t){(double)k, (double)(k % 97)};
    v[r] = (vel_t){1.0 + (double)(k % 5), -(double)(k % 3)};
  }
}

/* Spawns n entities with Pos, Vel and @p extra (0: none). */
static void populate(const fx_t *f, uint32_t n, weft_component_t extra) {
  const weft_component_t comps[4] = {f->pos, f->vel, extra, 0};
  assert_int_equal(weft_spawn_batch(f->w, n, comps, fill_pv, NULL, NULL),
                   WEFT_OK);
}

/* Chunks a query (include inc, exclude exc) visits, and the jobs of
 * `batch` rows the documented cutting rule makes of them on one node. */
static uint32_t count_chunks(weft_world_t *w, weft_component_t inc,
                             weft_component_t exc, uint32_t batch,
                             uint32_t *jobs) {
  weft_query_desc_t d;
  memset(&d, 0, sizeof d);
  d.include[0] = inc;
  d.exclude[0] = exc;
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(w, &d, &q), WEFT_OK);
  weft_iter_t it;
  weft_query_iter(q, &it);
  uint32_t n = 0, nj = 0;
  uint64_t rows = 0;
  while (weft_iter_next(&it)) {
    n++;
    rows += it.count;
    if (rows >= batch) {
      nj++;
      rows = 0;
    }
  }
  if (rows)
    nj++;
  weft_query_destroy(q);
  if (jobs)
    *jobs = nj;
  return n;
}

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* An execution log: one letter per callback. */
typedef struct xlog_t {
  char s[4096];
  uint32_t n;
} xlog_t;

static void log_reset(xlog_t *l) {
  l->n = 0;
  l->s[0] = 0;
}

static void log_put(xlog_t *l, char c) {
  if (l->n + 1 < sizeof l->s) {
    l->s[l->n++] = c;
    l->s[l->n] = 0;
  }
}

/* A task that logs its letter and what its context said. Owner thread
 * only (worlds without a pool). */
#define PROBE_CAP 2048u

typedef struct probe_t {
  xlog_t *log;
  char letter;
  uint32_t calls;
  uint32_t with_chunk; /* calls that got a chunk (a task gets none) */
  double dt[PROBE_CAP];
  uint64_t tick[PROBE_CAP];
} probe_t;

static int probe_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  probe_t *p = ctx->user;
  p->with_chunk += chunk != NULL;
  if (p->log)
    log_put(p->log, p->letter);
  if (p->calls < PROBE_CAP) {
    p->dt[p->calls] = ctx->dt;
    p->tick[p->calls] = ctx->tick;
  }
  p->calls++;
  return 0;
}

/* One probe per built-in phase, logging P, F, p, N and R. */
typedef struct frame_probes_t {
  xlog_t log;
  probe_t p[5];
  weft_system_t id[5];
} frame_probes_t;

static frame_probes_t *probes_add(weft_world_t *w) {
  static const char *const names[5] = {"probe.pre", "probe.fixed", "probe.post",
                                       "probe.net", "probe.render"};
  frame_probes_t *fp = calloc(1, sizeof *fp);
  assert_non_null(fp);
  for (uint32_t i = 0; i < 5; i++) {
    fp->p[i].log = &fp->log;
    fp->p[i].letter = "PFpNR"[i];
    weft_system_desc_t d = sys_desc(names[i], i + 1, probe_run, &fp->p[i]);
    fp->id[i] = sys_add(w, &d);
  }
  return fp;
}

/*
 * The reference frame loop: the accumulator gains the frame's dt and
 * yields fixed steps of fixed_dt, at most max_steps, past which DROP
 * discards the rest (counting whole steps) and ACCUMULATE keeps it. The
 * network clock advances by fixed_dt with each step (simulated time) and
 * NetworkTick follows the step that completes net_dt of it.
 */
typedef struct oracle_t {
  double fixed_dt, net_dt;
  uint32_t max_steps;
  weft_overload_t overload;
  double acc, net_acc, time_dropped;
  uint64_t steps_dropped, tick, net_ticks;
} oracle_t;

static oracle_t oracle_new(double fixed_dt, uint32_t max_steps,
                           weft_overload_t overload, double net_dt) {
  oracle_t o;
  memset(&o, 0, sizeof o);
  o.fixed_dt = fixed_dt;
  o.net_dt = net_dt;
  o.max_steps = max_steps;
  o.overload = overload;
  return o;
}

/* One frame; writes the expected phase letters to out; returns steps. */
static uint32_t oracle_frame(oracle_t *o, double dt, char *out, size_t cap) {
  size_t n = 0;
  out[n++] = 'P';
  o->acc += dt;
  uint32_t steps = 0;
  while (o->acc >= o->fixed_dt) {
    if (steps == o->max_steps) {
      if (o->overload == WEFT_OVERLOAD_DROP) {
        o->steps_dropped += (uint64_t)(o->acc / o->fixed_dt);
        o->time_dropped += o->acc;
        o->acc = 0;
      }
      break;
    }
    assert_true(n + 4 < cap);
    out[n++] = 'F';
    out[n++] = 'p';
    o->tick++;
    o->acc -= o->fixed_dt;
    steps++;
    if (o->net_dt > 0) {
      o->net_acc += o->fixed_dt;
      if (o->net_acc >= o->net_dt) {
        out[n++] = 'N';
        o->net_acc -= o->net_dt;
        o->net_ticks++;
      }
    }
  }
  out[n++] = 'R';
  out[n] = 0;
  return steps;
}

/* Runs frames of the given dts and checks each against the oracle: the
 * phase log, the fixed-step state and what every callback's context said. */
static void check_frames(weft_world_t *w, frame_probes_t *fp, oracle_t *o,
                         const double *dts, uint32_t n) {
  char expect[4096];
  for (uint32_t i = 0; i < n; i++) {
    weft_pipeline_state_t before = pstate(w);
    uint32_t c0[5];
    for (uint32_t k = 0; k < 5; k++)
      c0[k] = fp->p[k].calls;
    log_reset(&fp->log);
    progress_ok(w, dts[i]);
    uint32_t steps = oracle_frame(o, dts[i], expect, sizeof expect);
    if (strcmp(fp->log.s, expect) != 0)
      fail_msg("frame %u (dt %.17g): ran %s, expected %s", i, dts[i], fp->log.s,
               expect);
    weft_pipeline_state_t st = pstate(w);
    assert_int_equal(st.frames, before.frames + 1);
    assert_int_equal(st.tick, o->tick);
    assert_double_exact(st.accumulator, o->acc);
    assert_double_exact(st.alpha, o->acc / o->fixed_dt);
    assert_int_equal(st.steps_dropped, o->steps_dropped);
    assert_double_exact(st.time_dropped, o->time_dropped);
    assert_true(fp->p[4].calls < PROBE_CAP && fp->p[1].calls < PROBE_CAP);
    /* PreUpdate and PreRender see the frame's dt; fixed phases fixed_dt. */
    assert_double_exact(fp->p[0].dt[c0[0]], dts[i]);
    assert_int_equal(fp->p[0].tick[c0[0]], before.tick);
    for (uint32_t k = 0; k < steps; k++) {
      assert_double_exact(fp->p[1].dt[c0[1] + k], o->fixed_dt);
      assert_int_equal(fp->p[1].tick[c0[1] + k], before.tick + k);
      assert_double_exact(fp->p[2].dt[c0[2] + k], o->fixed_dt);
      assert_int_equal(fp->p[2].tick[c0[2] + k], before.tick + k);
    }
    for (uint32_t k = c0[3]; k < fp->p[3].calls; k++)
      assert_double_exact(fp->p[3].dt[k], o->net_dt);
    assert_double_exact(fp->p[4].dt[c0[4]], dts[i]);
    assert_int_equal(fp->p[4].tick[c0[4]], st.tick);
  }
  for (uint32_t k = 0; k < 5; k++)
    assert_int_equal(fp->p[k].with_chunk, 0);
}

/* --- the fixed-step loop ------------------------------------------------- */

static void test_pipeline_fixed_steps_follow_accumulator(void **state) {
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

static void test_pipeline_overload_drop_discards_time(void **state) {
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

static void test_pipeline_overload_accumulate_keeps_time(void **state) {
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

static void test_pipeline_network_tick_every_net_dt(void **state) {
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

static void test_pipeline_negative_net_dt_never_ticks(void **state) {
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

static void test_pipeline_progress_rejects_bad_dt(void **state) {
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

static void test_pipeline_progress_inside_callback_is_busy(void **state) {
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

static void test_pipeline_run_phase_runs_one_phase(void **state) {
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

/* --- run conditions ------------------------------------------------------ */

static void test_pipeline_runif_every_matches_condition(void **state) {
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

static void test_pipeline_runif_after_runs_once_then_removed(void **state) {
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

static void test_pipeline_disabled_system_skips_condition(void **state) {
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

static void test_pipeline_disabled_phase_skips_condition(void **state) {
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

/* --- commands and sync points -------------------------------------------- */

typedef struct cmd_ctx_t {
  weft_component_t pos, vel, mark, tag;
  uint32_t count0;
  uint32_t wrong; /* callbacks that saw the world changed mid-phase */
  uint32_t chunks, peeks, seen, later_count, post_count;
  uint32_t marks[512];
  uint32_t nvictims;
  weft_entity_t victims[128], tagged[128];
} cmd_ctx_t;

static int cmd_spawner(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  cmd_ctx_t *c = ctx->user;
  if (weft_world_count(ctx->world) != c->count0)
    c->wrong++;
  for (uint32_t k = 0; k < 2; k++) {
    pos_t p = {(double)ctx->chunk, (double)k};
    uint32_t m = ctx->chunk * 2 + k + 1;
    const weft_component_t comps[] = {c->pos, c->mark, 0};
    const void *vals[] = {&p, &m};
    weft_entity_t pending = WEFT_ENTITY_NULL;
    if (weft_cmd_spawn(ctx->cmd, comps, vals, &pending) != WEFT_OK ||
        !weft_entity_is_pending(pending))
      c->wrong++;
  }
  weft_entity_t first = chunk->entities[0];
  weft_entity_t last = chunk->entities[chunk->count - 1];
  if (weft_cmd_add(ctx->cmd, first, c->tag, NULL) != WEFT_OK)
    c->wrong++;
  if (weft_cmd_despawn(ctx->cmd, last) != WEFT_OK)
    c->wrong++;
  if (c->nvictims < 128) {
    c->tagged[c->nvictims] = first;
    c->victims[c->nvictims++] = last;
  }
  c->chunks++;
  return 0;
}

/* Same segment as the spawner: its commands are not applied yet. */
static int cmd_peek(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  cmd_ctx_t *c = ctx->user;
  if (weft_world_count(ctx->world) != c->count0)
    c->wrong++;
  for (uint32_t i = 0; i < c->nvictims; i++)
    if (!weft_is_alive(ctx->world, c->victims[i]) ||
        weft_has(ctx->world, c->tagged[i], c->tag))
      c->wrong++;
  c->peeks++;
  return 0;
}

/* After a sync point: sees the spawned rows. */
static int cmd_see(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  cmd_ctx_t *c = ctx->user;
  const uint32_t *m = chunk->columns[0];
  for (uint32_t r = 0; r < chunk->count && c->seen < 512; r++)
    c->marks[c->seen++] = m[r];
  c->later_count = weft_world_count(ctx->world);
  return 0;
}

static int cmd_post(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  cmd_ctx_t *c = ctx->user;
  c->post_count = weft_world_count(ctx->world);
  return 0;
}

static void test_pipeline_commands_apply_at_phase_end(void **state) {
  (void)state;
  fx_t f = fx_new(0, 4096);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  populate(&f, 1000, 0);
  uint32_t nchunks = count_chunks(f.w, f.pos, f.mark, 1, NULL);
  assert_true(nchunks >= 3 && nchunks <= 100);
  cmd_ctx_t *c = calloc(1, sizeof *c);
  assert_non_null(c);
  c->pos = f.pos;
  c->vel = f.vel;
  c->mark = f.mark;
  c->tag = f.tag;
  c->count0 = weft_world_count(f.w);

  weft_system_desc_t d =
      sys_desc("spawner", WEFT_PHASE_FIXED_UPDATE, cmd_spawner, c);
  d.query.include[0] = f.pos;
  d.query.exclude[0] = f.mark;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.cmd_write[0] = f.pos;
  d.cmd_write[1] = f.mark;
  d.cmd_write[2] = f.tag;
  d.flags = WEFT_SYSTEM_DESPAWNS;
  weft_system_t spawner = sys_add(f.w, &d);
  d = sys_desc("peek", WEFT_PHASE_FIXED_UPDATE, cmd_peek, c);
  d.query.include[0] = f.vel;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.after[0] = "spawner";
  weft_system_t peek = sys_add(f.w, &d);
  d = sys_desc("see", WEFT_PHASE_FIXED_UPDATE, cmd_see, c);
  d.query.include[0] = f.mark;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.after[0] = "spawner";
  weft_system_t see = sys_add(f.w, &d);
  d = sys_desc("post", WEFT_PHASE_POST_FIXED_UPDATE, cmd_post, c);
  sys_add(f.w, &d);

  /* The sync point goes before "see" (it follows the spawner and queries
   * what the spawner's commands write) and nowhere else. */
  assert_true(weft_system_edge(f.w, spawner, peek));
  assert_int_equal(sinfo(f.w, spawner).segment, 0);
  assert_int_equal(sinfo(f.w, peek).segment, 0);
  assert_int_equal(sinfo(f.w, see).segment, 1);

  progress_ok(f.w, 0.1);
  assert_int_equal(c->chunks, nchunks);
  assert_int_equal(c->wrong, 0);
  assert_true(c->peeks > 0);
  /* The later segment saw every spawn, in key order. */
  assert_int_equal(c->seen, 2 * nchunks);
  for (uint32_t i = 0; i < c->seen; i++)
    assert_int_equal(c->marks[i], i + 1);
  assert_int_equal(c->later_count, c->count0 + nchunks);
  assert_int_equal(c->post_count, c->count0 + nchunks);
  assert_int_equal(weft_world_count(f.w), c->count0 + nchunks);
  for (uint32_t i = 0; i < c->nvictims; i++) {
    assert_false(weft_is_alive(f.w, c->victims[i]));
    assert_true(weft_has(f.w, c->tagged[i], f.tag));
  }
  weft_phase_stats_t ps = phstats(f.w, WEFT_PHASE_FIXED_UPDATE);
  assert_int_equal(ps.runs, 1);
  assert_int_equal(ps.sync_points, 1); /* segment 1 recorded nothing */
  /* An add and a despawn per chunk, and its two spawns, which a buffer may
   * record as one run (weft_cmdbuf_count() counts records). */
  assert_true(ps.commands >= 3 * nchunks && ps.commands <= 4 * nchunks);
  wt_check_slot_invariant(f.w);
  free(c);
  fx_free(&f);
}

/* A small simulation: movement plus spawns, despawns, adds and removes
 * recorded from parallel chunks, all keyed by counter-based randomness. */
typedef struct sim_t {
  weft_component_t pos, vel, mark, tag;
  weft_system_t move;
} sim_t;

static int sim_move(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  pos_t *p = chunk->columns[0];
  const vel_t *v = chunk->columns[1];
  for (uint32_t r = 0; r < chunk->count; r++) {
    p[r].x += v[r].dx * ctx->dt;
    p[r].y += v[r].dy * ctx->dt;
  }
  return 0;
}

static int sim_spawn(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  sim_t *s = ctx->user;
  const pos_t *p = chunk->columns[0];
  for (uint32_t r = 0; r < chunk->count; r++) {
    uint64_t x = weft_sysctx_random(ctx, chunk->entities[r], 1, 0);
    if (x % 64 != 0)
      continue;
    uint32_t m = (uint32_t)(x >> 32);
    const weft_component_t comps[] = {s->pos, s->mark, 0};
    const void *vals[] = {&p[r], &m};
    weft_entity_t e;
    int rc = weft_cmd_spawn(ctx->cmd, comps, vals, &e);
    if (rc)
      return rc;
  }
  return 0;
}

static int sim_kill(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  for (uint32_t r = 0; r < chunk->count; r++)
    if (weft_sysctx_random(ctx, chunk->entities[r], 2, 0) % 4 == 0) {
      int rc = weft_cmd_despawn(ctx->cmd, chunk->entities[r]);
      if (rc)
        return rc;
    }
  return 0;
}

static int sim_tag(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  sim_t *s = ctx->user;
  for (uint32_t r = 0; r < chunk->count; r++)
    if (weft_sysctx_random(ctx, chunk->entities[r], 3, 0) % 50 == 0) {
      int rc = weft_cmd_add(ctx->cmd, chunk->entities[r], s->tag, NULL);
      if (rc)
        return rc;
    }
  return 0;
}

static int sim_untag(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  sim_t *s = ctx->user;
  for (uint32_t r = 0; r < chunk->count; r++)
    if (weft_sysctx_random(ctx, chunk->entities[r], 4, 0) % 3 == 0) {
      int rc = weft_cmd_remove(ctx->cmd, chunk->entities[r], s->tag);
      if (rc)
        return rc;
    }
  return 0;
}

static void sim_setup(fx_t *f, sim_t *s) {
  configure(f->w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  populate(f, BIG_N, 0);
  s->pos = f->pos;
  s->vel = f->vel;
  s->mark = f->mark;
  s->tag = f->tag;
  weft_system_desc_t d =
      sys_desc("sim.move", WEFT_PHASE_FIXED_UPDATE, sim_move, s);
  d.query.include[0] = f->pos;
  d.query.include[1] = f->vel;
  d.term_access[0] = WEFT_ACCESS_WRITE;
  d.term_access[1] = WEFT_ACCESS_READ;
  d.batch = 1024;
  s->move = sys_add(f->w, &d);
  d = sys_desc("sim.spawn", WEFT_PHASE_FIXED_UPDATE, sim_spawn, s);
  d.query.include[0] = f->pos;
  d.query.include[1] = f->vel;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.term_access[1] = WEFT_ACCESS_READ;
  d.cmd_write[0] = f->pos;
  d.cmd_write[1] = f->mark;
  d.batch = 1024;
  sys_add(f->w, &d);
  d = sys_desc("sim.kill", WEFT_PHASE_FIXED_UPDATE, sim_kill, s);
  d.query.include[0] = f->mark;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.flags = WEFT_SYSTEM_DESPAWNS;
  d.batch = 1024;
  sys_add(f->w, &d);
  d = sys_desc("sim.tag", WEFT_PHASE_FIXED_UPDATE, sim_tag, s);
  d.query.include[0] = f->pos;
  d.query.exclude[0] = f->tag;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.cmd_write[0] = f->tag;
  d.batch = 1024;
  sys_add(f->w, &d);
  d = sys_desc("sim.untag", WEFT_PHASE_POST_FIXED_UPDATE, sim_untag, s);
  d.query.include[0] = f->tag;
  d.term_access[0] = WEFT_ACCESS_NONE;
  d.cmd_write[0] = f->tag;
  d.batch = 1024;
  sys_add(f->w, &d);
}

static void test_pipeline_pool_digest_matches_inline(void **state) {
  (void)state;
  fx_t f[3];
  sim_t s[3];
  const uint32_t workers[3] = {0, 2, 3};
  for (uint32_t i = 0; i < 3; i++) {
    f[i] = fx_new(workers[i], 0);
    sim_setup(&f[i], &s[i]);
    assert_int_equal(weft_pipeline_slots(f[i].w), workers[i] + 1);
  }
  assert_int_equal(weft_world_digest(f[0].w), weft_world_digest(f[1].w));
  const double dts[] = {0.1, 0.1, 0.3, 0.1, 0.05, 0.15, 0.2, 0.1, 0.1, 0.25};
  for (uint32_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
    for (uint32_t i = 0; i < 3; i++)
      progress_ok(f[i].w, dts[k]);
    uint64_t d0 = weft_world_digest(f[0].w);
    for (uint32_t i = 1; i < 3; i++) {
      if (weft_world_digest(f[i].w) != d0)
        fail_msg("frame %u: %u workers diverge from the inline run", k,
                 workers[i]);
      assert_int_equal(weft_world_count(f[i].w), weft_world_count(f[0].w));
    }
  }
  /* The runs really did work: commands applied, jobs spread. */
  weft_world_stats_t ws = wt_stats(f[0].w);
  assert_true(ws.spawns > BIG_N + 1000);
  assert_true(ws.despawns > 100);
  assert_true(ws.moves > 100);
  /* Every pooled run went through the pool (at least one job each); how
   * often idle workers split them is timing, which
   * test_pipeline_idle_workers_split_jobs covers. */
  weft_system_stats_t m0 = sstats(f[0].w, s[0].move);
  assert_true(m0.runs >= 10);
  assert_int_equal(m0.jobs, 0);
  for (uint32_t i = 1; i < 3; i++) {
    weft_system_stats_t m = sstats(f[i].w, s[i].move);
    assert_int_equal(m.runs, m0.runs);
    assert_true(m.jobs >= m.runs);
  }
  for (uint32_t i = 0; i < 3; i++) {
    wt_check_slot_invariant(f[i].w);
    fx_free(&f[i]);
  }
}

/* --- events -------------------------------------------------------------- */

typedef struct hit_t {
  uint64_t e;
  uint32_t chunk, row;
} hit_t;

typedef struct recv_t {
  weft_channel_t ch;
  hit_t *buf;
  uint32_t cap, n, calls;
} recv_t;

static int ev_emit(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  const weft_channel_t *ch = ctx->user;
  for (uint32_t r = 0; r < chunk->count; r++)
    if (weft_entity_index(chunk->entities[r]) % 3 == 0) {
      hit_t h = {chunk->entities[r], ctx->chunk, r};
      int rc = weft_sysctx_emit(ctx, *ch, &h);
      if (rc)
        return rc;
    }
  return 0;
}

static int ev_recv(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  recv_t *v = ctx->user;
  uint32_t n = 0;
  const hit_t *h = weft_event_read(ctx->world, v->ch, &n);
  v->n = n;
  if (n)
    memcpy(v->buf, h, (size_t)(n < v->cap ? n : v->cap) * sizeof *h);
  v->calls++;
  return 0;
}

typedef struct ev_world_t {
  fx_t f;
  weft_channel_t ch;
  recv_t fixed, post;
  weft_system_t emit, fixed_id;
} ev_world_t;

static void ev_world_setup(ev_world_t *e, uint32_t workers, uint32_t cap) {
  memset(e, 0, sizeof *e);
  e->f = fx_new(workers, 0);
  configure(e->f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  populate(&e->f, BIG_N, 0);
  assert_int_equal(weft_channel_register(e->f.w, "hits", sizeof(hit_t), &e->ch),
                   WEFT_OK);
  recv_t *rs[2] = {&e->fixed, &e->post};
  for (uint32_t i = 0; i < 2; i++) {
    rs[i]->ch = e->ch;
    rs[i]->cap = cap;
    rs[i]->buf = calloc(cap, sizeof(hit_t));
    assert_non_null(rs[i]->buf);
  }
  weft_system_desc_t d =
      sys_desc("ev.emit", WEFT_PHASE_FIXED_UPDATE, ev_emit, &e->ch);
  d.query.include[0] = e->f.pos;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.emit[0] = e->ch;
  d.batch = 512;
  e->emit = sys_add(e->f.w, &d);
  d = sys_desc("ev.fixed", WEFT_PHASE_FIXED_UPDATE, ev_recv, &e->fixed);
  d.receive[0] = e->ch;
  e->fixed_id = sys_add(e->f.w, &d);
  d = sys_desc("ev.post", WEFT_PHASE_POST_FIXED_UPDATE, ev_recv, &e->post);
  d.receive[0] = e->ch;
  sys_add(e->f.w, &d);
}

static void ev_world_free(ev_world_t *e) {
  free(e->fixed.buf);
  free(e->post.buf);
  fx_free(&e->f);
}

static void test_pipeline_events_parallel_keep_order(void **state) {
  (void)state;
  const uint32_t cap = BIG_N / 3 + 16;
  ev_world_t *ev = calloc(2, sizeof *ev);
  assert_non_null(ev);
  ev_world_setup(&ev[0], 0, cap);
  ev_world_setup(&ev[1], 3, cap);
  /* A sync point publishes them before the receiver in the same phase. */
  assert_int_equal(sinfo(ev[1].f.w, ev[1].emit).segment, 0);
  assert_int_equal(sinfo(ev[1].f.w, ev[1].fixed_id).segment, 1);
  /* The expected order: the query's rows in order. */
  hit_t *expect = calloc(cap, sizeof *expect);
  assert_non_null(expect);
  uint32_t nexp = 0;
  {
    weft_query_desc_t qd;
    memset(&qd, 0, sizeof qd);
    qd.include[0] = ev[1].f.pos;
    weft_query_t *q = NULL;
    assert_int_equal(weft_query_create(ev[1].f.w, &qd, &q), WEFT_OK);
    weft_iter_t it;
    weft_query_iter(q, &it);
    while (weft_iter_next(&it))
      for (uint32_t r = 0; r < it.count; r++)
        if (weft_entity_index(it.entities[r]) % 3 == 0)
          expect[nexp++].e = it.entities[r];
    weft_query_destroy(q);
  }
  assert_true(nexp > BIG_N / 4);
  for (uint32_t frame = 0; frame < 3; frame++) {
    for (uint32_t i = 0; i < 2; i++) {
      ev[i].fixed.n = ev[i].post.n = 0;
      progress_ok(ev[i].f.w, 0.1);
      assert_int_equal(ev[i].fixed.n, nexp);
      assert_int_equal(ev[i].post.n, nexp);
      for (uint32_t k = 0; k < nexp; k++) {
        if (ev[i].fixed.buf[k].e != expect[k].e)
          fail_msg("world %u frame %u: event %u out of order", i, frame, k);
        assert_true(ev[i].post.buf[k].e == expect[k].e);
      }
      /* Channels clear after PostFixedUpdate. */
      uint32_t left = 99;
      weft_event_read(ev[i].f.w, ev[i].ch, &left);
      assert_int_equal(left, 0);
    }
    /* Chunk numbers and rows too: identical to the single-threaded run. */
    assert_memory_equal(ev[0].fixed.buf, ev[1].fixed.buf, nexp * sizeof(hit_t));
    assert_memory_equal(ev[0].post.buf, ev[1].post.buf, nexp * sizeof(hit_t));
  }
  weft_system_stats_t es = sstats(ev[1].f.w, ev[1].emit);
  assert_int_equal(es.runs, 3);
  assert_true(es.jobs >= es.runs);
  free(expect);
  ev_world_free(&ev[0]);
  ev_world_free(&ev[1]);
  free(ev);
}

/* A task that splits its work in parts on the pool and emits from them. */
#define PARTS_N 300u
#define PARTS_MARK UINT64_MAX

typedef struct parts_t {
  weft_channel_t ch;
  const weft_sysctx_t *task;
  atomic_uint bad; /* part contexts that were refused or malformed */
  int rc_worker, rc_limit, rc_null, rc_query;
} parts_t;

/* Part p emits p % 5 + 1 events (p, i); parts of odd number spin a while
 * first, so that on a pool they finish out of order. */
static void parts_body(void *arg, uint32_t begin, uint32_t end,
                       uint32_t worker) {
  parts_t *pt = arg;
  for (uint32_t p = begin; p < end; p++) {
    weft_sysctx_t pc;
    memset(&pc, 0xa5, sizeof pc);
    if (weft_sysctx_part(pt->task, worker, p, &pc) != WEFT_OK ||
        pc.cmd != NULL || pc.world != pt->task->world) {
      atomic_fetch_add(&pt->bad, 1u);
      continue;
    }
    volatile uint32_t spin = 0;
    for (uint32_t k = 0; k < (p & 1u) * 20000u; k++)
      spin += k;
    for (uint32_t i = 0; i <= p % 5; i++) {
      hit_t h = {p, i, 0};
      if (weft_sysctx_emit(&pc, pt->ch, &h) != WEFT_OK)
        atomic_fetch_add(&pt->bad, 1u);
    }
    weft_sysctx_count(&pc, p % 5 + 1); /* the events count as its rows */
  }
}

static int parts_task(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  parts_t *pt = ctx->user;
  pt->task = ctx;
  /* The task's own events come before every part's, even when emitted
   * after them. */
  weft_pool_t *pool = weft_world_pool(ctx->world);
  if (pool)
    weft_pool_parallel_for(pool, weft_sysctx_pool_worker(ctx), 0, PARTS_N, 1,
                           parts_body, pt);
  else
    parts_body(pt, 0, PARTS_N, WEFT_WORKER_EXTERNAL);
  hit_t mark = {PARTS_MARK, 0, 0};
  int rc = weft_sysctx_emit(ctx, pt->ch, &mark);
  weft_sysctx_count(ctx, 1);
  weft_sysctx_count(NULL, 1000); /* ignored */
  weft_sysctx_t pc;
  pt->rc_worker = weft_sysctx_part(ctx, 1000, 0, &pc);
  pt->rc_limit =
      weft_sysctx_part(ctx, WEFT_WORKER_EXTERNAL, WEFT_SYSCTX_PARTS, &pc);
  pt->rc_null = weft_sysctx_part(NULL, WEFT_WORKER_EXTERNAL, 0, &pc);
  return rc;
}

/* A chunk callback is no task: it may not make part contexts. */
static int parts_not_task(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  parts_t *pt = ctx->user;
  weft_sysctx_t pc;
  pt->rc_query = weft_sysctx_part(ctx, WEFT_WORKER_EXTERNAL, 0, &pc);
  return 0;
}

/* Events emitted from the parts of a task publish in part order, then
 * emission order, after the task's own, whatever the number of workers
 * and the order the parts finish in; bad part requests are refused; rows
 * the task and its parts count add up in the system's stats. */
static void test_pipeline_task_parts_keep_order(void **state) {
  (void)state;
  const uint32_t cap = PARTS_N * 5 + 16;
  hit_t *got[2];
  uint32_t ngot[2];
  for (uint32_t i = 0; i < 2; i++) {
    fx_t f = fx_new(i ? 3 : 0, 0);
    configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
    populate(&f, 100, 0);
    parts_t pt;
    memset(&pt, 0, sizeof pt);
    atomic_init(&pt.bad, 0u);
    pt.rc_query = 1;
    assert_int_equal(weft_channel_register(f.w, "parts", sizeof(hit_t), &pt.ch),
                     WEFT_OK);
    recv_t rv = {pt.ch, calloc(cap, sizeof(hit_t)), cap, 0, 0};
    assert_non_null(rv.buf);
    weft_system_desc_t d =
        sys_desc("parts", WEFT_PHASE_FIXED_UPDATE, parts_task, &pt);
    d.emit[0] = pt.ch;
    weft_system_t task = sys_add(f.w, &d);
    d = sys_desc("parts.query", WEFT_PHASE_FIXED_UPDATE, parts_not_task, &pt);
    d.query.include[0] = f.pos;
    d.term_access[0] = WEFT_ACCESS_READ;
    sys_add(f.w, &d);
    d = sys_desc("parts.recv", WEFT_PHASE_FIXED_UPDATE, ev_recv, &rv);
    d.receive[0] = pt.ch;
    sys_add(f.w, &d);
    progress_ok(f.w, 0.1);

    assert_int_equal(atomic_load(&pt.bad), 0);
    assert_int_equal(pt.rc_worker, WEFT_EINVAL);
    assert_int_equal(pt.rc_limit, WEFT_ELIMIT);
    assert_int_equal(pt.rc_null, WEFT_EINVAL);
    assert_int_equal(pt.rc_query, WEFT_EINVAL);
    assert_int_equal(rv.calls, 1);
    /* The oracle: the mark, then part by part, event by event. */
    assert_true(rv.buf[0].e == PARTS_MARK);
    uint32_t k = 1;
    for (uint32_t p = 0; p < PARTS_N; p++)
      for (uint32_t e = 0; e <= p % 5; e++, k++) {
        if (k >= rv.n || rv.buf[k].e != p || rv.buf[k].chunk != e)
          fail_msg("world %u: event %u is not (%u, %u)", i, k, p, e);
      }
    assert_int_equal(rv.n, k);
    /* Rows counted by the task and its parts, from any worker: one per
     * event. */
    assert_int_equal(sstats(f.w, task).entities, k);
    got[i] = rv.buf;
    ngot[i] = rv.n;
    fx_free(&f);
  }
  assert_int_equal(ngot[0], ngot[1]);
  assert_memory_equal(got[0], got[1], ngot[0] * sizeof(hit_t));
  free(got[0]);
  free(got[1]);
}

/* Logs the events of a channel as letters: [abc]. */
typedef struct evlog_t {
  weft_channel_t ch;
  xlog_t log;
} evlog_t;

static int evlog_read(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  evlog_t *l = ctx->user;
  uint32_t n = 0;
  const uint32_t *v = weft_event_read(ctx->world, l->ch, &n);
  log_put(&l->log, '[');
  for (uint32_t i = 0; i < n; i++)
    log_put(&l->log, (char)('a' + v[i]));
  log_put(&l->log, ']');
  return 0;
}

static int evlog_emit(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  const weft_channel_t *ch = ctx->user;
  uint32_t a = 10, b = 11;
  int rc = weft_sysctx_emit(ctx, *ch, &a);
  return rc ? rc : weft_sysctx_emit(ctx, *ch, &b);
}

static void test_pipeline_events_clear_after_post_fixed(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  weft_channel_t ch = 0;
  assert_int_equal(weft_channel_register(f.w, "ev", sizeof(uint32_t), &ch),
                   WEFT_OK);
  evlog_t *l = calloc(4, sizeof *l);
  assert_non_null(l);
  const weft_phase_t phases[4] = {
      WEFT_PHASE_PRE_UPDATE, WEFT_PHASE_FIXED_UPDATE,
      WEFT_PHASE_POST_FIXED_UPDATE, WEFT_PHASE_PRE_RENDER};
  const char *const names[4] = {"read.pre", "read.fixed", "read.post",
                                "read.render"};
  weft_system_desc_t d =
      sys_desc("emit", WEFT_PHASE_FIXED_UPDATE, evlog_emit, &ch);
  d.emit[0] = ch;
  sys_add(f.w, &d);
  for (uint32_t i = 0; i < 4; i++) {
    l[i].ch = ch;
    d = sys_desc(names[i], phases[i], evlog_read, &l[i]);
    d.receive[0] = ch;
    sys_add(f.w, &d);
  }
  /* Frame 1: one step. Pushed events are readable at once. */
  uint32_t v = 0, n = 0;
  assert_int_equal(weft_event_push(f.w, ch, &v), WEFT_OK);
  assert_non_null(weft_event_read(f.w, ch, &n));
  assert_int_equal(n, 1);
  progress_ok(f.w, 0.1);
  assert_string_equal(l[0].log.s, "[a]");
  assert_string_equal(l[1].log.s, "[akl]");
  assert_string_equal(l[2].log.s, "[akl]");
  assert_string_equal(l[3].log.s, "[]");
  assert_null(weft_event_read(f.w, ch, &n));
  assert_int_equal(n, 0);
  /* Frame 2: two steps; the second starts from a cleared channel. */
  for (uint32_t i = 0; i < 4; i++)
    log_reset(&l[i].log);
  v = 1;
  assert_int_equal(weft_event_push(f.w, ch, &v), WEFT_OK);
  progress_ok(f.w, 0.2);
  assert_int_equal(pstate(f.w).tick, 3);
  assert_string_equal(l[0].log.s, "[b]");
  assert_string_equal(l[1].log.s, "[bkl][kl]");
  assert_string_equal(l[2].log.s, "[bkl][kl]");
  assert_string_equal(l[3].log.s, "[]");
  /* Frame 3: no fixed step, nothing clears. */
  for (uint32_t i = 0; i < 4; i++)
    log_reset(&l[i].log);
  v = 2;
  assert_int_equal(weft_event_push(f.w, ch, &v), WEFT_OK);
  progress_ok(f.w, 0.01);
  assert_int_equal(pstate(f.w).tick, 3);
  assert_string_equal(l[0].log.s, "[c]");
  assert_string_equal(l[1].log.s, "");
  assert_string_equal(l[3].log.s, "[c]");
  weft_event_read(f.w, ch, &n);
  assert_int_equal(n, 1);
  /* Frame 4: one step. */
  for (uint32_t i = 0; i < 4; i++)
    log_reset(&l[i].log);
  progress_ok(f.w, 0.1);
  assert_int_equal(pstate(f.w).tick, 4);
  assert_string_equal(l[0].log.s, "[c]");
  assert_string_equal(l[1].log.s, "[ckl]");
  assert_string_equal(l[2].log.s, "[ckl]");
  assert_string_equal(l[3].log.s, "[]");
  free(l);
  fx_free(&f);
}

/* --- resources ----------------------------------------------------------- */

typedef struct res_ctx_t {
  weft_resource_t r;
  uint64_t before[64], after[64];
  uint32_t nbefore, nafter;
} res_ctx_t;

static int res_writer(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  res_ctx_t *c = ctx->user;
  sleep_us(500); /* a reader not ordered after it would win the race */
  uint64_t *v = weft_resource_get(ctx->world, c->r);
  *v = *v * 3 + 1;
  return 0;
}

static int res_read_before(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  res_ctx_t *c = ctx->user;
  const uint64_t *v = weft_resource_get(ctx->world, c->r);
  if (c->nbefore < 64)
    c->before[c->nbefore++] = *v;
  return 0;
}

static int res_read_after(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  res_ctx_t *c = ctx->user;
  const uint64_t *v = weft_resource_get(ctx->world, c->r);
  if (c->nafter < 64)
    c->after[c->nafter++] = *v;
  return 0;
}

static void test_pipeline_resource_writer_orders_readers(void **state) {
  (void)state;
  fx_t f = fx_new(3, 0);
  /* inline_rows 1: even tasks go to the pool. */
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 1);
  res_ctx_t c;
  memset(&c, 0, sizeof c);
  const uint64_t init = 5;
  assert_int_equal(
      weft_resource_register(f.w, "score", sizeof(uint64_t), 0, &init, &c.r),
      WEFT_OK);
  weft_system_desc_t d =
      sys_desc("reader.before", WEFT_PHASE_FIXED_UPDATE, res_read_before, &c);
  d.res_read[0] = c.r;
  weft_system_t rb = sys_add(f.w, &d);
  d = sys_desc("writer", WEFT_PHASE_FIXED_UPDATE, res_writer, &c);
  d.res_write[0] = c.r;
  weft_system_t wr = sys_add(f.w, &d);
  d = sys_desc("reader.after", WEFT_PHASE_FIXED_UPDATE, res_read_after, &c);
  d.res_read[0] = c.r;
  weft_system_t ra = sys_add(f.w, &d);
  assert_true(weft_system_edge(f.w, rb, wr));
  assert_true(weft_system_edge(f.w, wr, ra));
  assert_false(weft_system_edge(f.w, ra, wr));
  assert_false(weft_system_edge(f.w, rb, ra)); /* two readers: no conflict */
  for (uint32_t i = 0; i < 8; i++)
    progress_ok(f.w, 0.1);
  assert_int_equal(c.nbefore, 8);
  assert_int_equal(c.nafter, 8);
  uint64_t v = init;
  for (uint32_t i = 0; i < 8; i++) {
    assert_int_equal(c.before[i], v);
    v = v * 3 + 1;
    assert_int_equal(c.after[i], v);
  }
  assert_int_equal(*(const uint64_t *)weft_resource_get(f.w, c.r), v);
  fx_free(&f);
}

/* --- change versions ----------------------------------------------------- */

typedef struct chg_t {
  weft_component_t pos, tag;
  bool write_now, rw_now;
  uint32_t writer_version;
  uint32_t visits, tagged_visits, stale_version, wrong_version;
  uint32_t first_last_run; /* ctx->last_run of the reader's first chunk */
  uint32_t last_version;   /* weft_iter_version of the last chunk visited */
  uint32_t reader_runs_chunks;
  weft_entity_t target;
  uint32_t target_found;
  uint32_t ro_versions[256];
  uint32_t ro_n;
} chg_t;

static bool chg_write_gate(weft_world_t *w, double dt, void *user) {
  (void)w;
  (void)dt;
  return ((chg_t *)user)->write_now;
}

static bool chg_rw_gate(weft_world_t *w, double dt, void *user) {
  (void)w;
  (void)dt;
  return ((chg_t *)user)->rw_now;
}

static int chg_writer(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  chg_t *c = ctx->user;
  pos_t *p = chunk->columns[0];
  for (uint32_t r = 0; r < chunk->count; r++)
    p[r].x += 1.0;
  c->writer_version = ctx->version;
  return 0;
}

static int chg_reader(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  chg_t *c = ctx->user;
  if (c->visits == 0)
    c->first_last_run = ctx->last_run;
  c->visits++;
  c->tagged_visits += weft_has(ctx->world, chunk->entities[0], c->tag);
  uint32_t v = weft_iter_version(chunk, c->pos);
  if (v <= ctx->last_run || v >= ctx->version)
    c->stale_version++;
  c->last_version = v;
  for (uint32_t r = 0; r < chunk->count; r++)
    if (chunk->entities[r] == c->target)
      c->target_found++;
  return 0;
}

/* Reads Pos only, recording its chunk versions. */
static int chg_read_only(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  chg_t *c = ctx->user;
  if (c->ro_n < 256)
    c->ro_versions[c->ro_n++] = weft_iter_version(chunk, c->pos);
  return 0;
}

static weft_system_t add_changed_reader(fx_t *f, chg_t *c) {
  weft_system_desc_t d =
      sys_desc("changed.reader", WEFT_PHASE_FIXED_UPDATE, chg_reader, c);
  d.query.include[0] = f->pos;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.changed[0] = f->pos;
  return sys_add(f->w, &d);
}

/* A `changed` reader of one component: counts its chunks and rows, and
 * the chunks whose version of it is not the writer's last one. */
typedef struct chg2_t {
  weft_component_t comp;
  const uint32_t *writer_version;
  uint32_t chunks, rows, off_version;
} chg2_t;

static int chg2_writer(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  uint32_t *version = ctx->user;
  pos_t *p = chunk->columns[0];
  vel_t *v = chunk->columns[1];
  for (uint32_t r = 0; r < chunk->count; r++) {
    p[r].x += 1.0;
    v[r].dx += 1.0;
  }
  *version = ctx->version;
  return 0;
}

static int chg2_reader(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  chg2_t *c = ctx->user;
  c->chunks++;
  c->rows += chunk->count;
  if (weft_iter_version(chunk, c->comp) != *c->writer_version)
    c->off_version++;
  return 0;
}

/* Registers the two-column writer over Pos, Vel and Tag (runs of
 * chunks) and a reader of each column: with a `changed` filter, or
 * without one over the tagged (written) chunks. */
static void chg2_systems(fx_t *f, uint32_t *version, chg2_t rd[2],
                         bool filter) {
  weft_system_desc_t d =
      sys_desc("writer2", WEFT_PHASE_FIXED_UPDATE, chg2_writer, version);
  d.query.include[0] = f->pos;
  d.query.include[1] = f->vel;
  d.query.include[2] = f->tag;
  d.query.flags = WEFT_QUERY_CHUNK_RUNS;
  d.term_access[0] = WEFT_ACCESS_WRITE;
  d.term_access[1] = WEFT_ACCESS_WRITE;
  d.term_access[2] = WEFT_ACCESS_NONE;
  sys_add(f->w, &d);
  const char *names[2] = {"reader.pos", "reader.vel"};
  for (int k = 0; k < 2; k++) {
    rd[k] = (chg2_t){k ? f->vel : f->pos, version, 0, 0, 0};
    d = sys_desc(names[k], WEFT_PHASE_FIXED_UPDATE, chg2_reader, &rd[k]);
    d.query.include[0] = rd[k].comp;
    d.term_access[0] = WEFT_ACCESS_READ;
    if (filter) { /* the filter alone keeps it to the writer's chunks */
      d.changed[0] = rd[k].comp;
    } else {
      d.query.include[1] = f->tag;
      d.term_access[1] = WEFT_ACCESS_NONE;
    }
    sys_add(f->w, &d);
  }
}

/*
 * A system that writes two components stamps both, in every chunk of
 * its runs (the writer iterates runs of chunks). With `changed` readers
 * in the segment the stamps are written when the run is planned, else by
 * the writer's jobs: either way the readers, which run after the writer,
 * find its version on every chunk of both columns, and the filtered ones
 * visit exactly the writer's rows. On a pool of two.
 */
static void test_pipeline_changed_sees_every_written_column(void **state) {
  (void)state;
  for (int filter = 0; filter < 2; filter++) {
    fx_t f = fx_new(2, 4096);
    configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
    populate(&f, 3000, f.tag);
    populate(&f, 2000, 0);
    uint32_t version = 0;
    chg2_t rd[2];
    chg2_systems(&f, &version, rd, filter);
    progress_ok(f.w, 0.1);
    for (uint32_t frame = 0; frame < 3; frame++) {
      for (int k = 0; k < 2; k++)
        rd[k].chunks = rd[k].rows = rd[k].off_version = 0;
      progress_ok(f.w, 0.1);
      for (int k = 0; k < 2; k++) {
        assert_int_equal(rd[k].rows, 3000); /* the tagged rows */
        assert_true(rd[k].chunks > 1);
        assert_int_equal(rd[k].off_version, 0);
      }
    }
    fx_free(&f);
  }
}

static void test_pipeline_changed_skips_unwritten_chunks(void **state) {
  (void)state;
  fx_t f = fx_new(0, 4096);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  populate(&f, 3000, 0);
  populate(&f, 2000, f.tag);
  uint32_t na = count_chunks(f.w, f.pos, f.tag, 1, NULL);
  uint32_t nb = count_chunks(f.w, f.tag, 0, 1, NULL);
  assert_true(na >= 10 && nb >= 5);
  chg_t *c = calloc(1, sizeof *c);
  assert_non_null(c);
  c->pos = f.pos;
  c->tag = f.tag;
  c->target = WEFT_ENTITY_NULL;
  weft_runif_t *gate = NULL;
  assert_int_equal(weft_runif_custom(f.w, chg_write_gate, c, &gate), WEFT_OK);
  /* The writer touches only the tagged archetype's chunks. */
  weft_system_desc_t d =
      sys_desc("writer", WEFT_PHASE_FIXED_UPDATE, chg_writer, c);
  d.query.include[0] = f.pos;
  d.query.include[1] = f.tag;
  d.term_access[0] = WEFT_ACCESS_WRITE;
  d.term_access[1] = WEFT_ACCESS_NONE;
  d.run_if = gate;
  sys_add(f.w, &d);
  weft_system_t reader = add_changed_reader(&f, c);

  /* First run: every chunk, with last_run 0. */
  uint32_t cv0 = weft_world_change_version(f.w);
  progress_ok(f.w, 0.1);
  assert_int_equal(c->visits, na + nb);
  assert_int_equal(c->first_last_run, 0);
  assert_int_equal(c->stale_version, 0);
  assert_true(weft_world_change_version(f.w) > cv0);
  /* Nothing written since: nothing visited. */
  c->visits = 0;
  progress_ok(f.w, 0.1);
  assert_int_equal(c->visits, 0);
  /* The writer ran: exactly its chunks, stamped with its version. */
  uint32_t prev = c->last_version;
  for (uint32_t frame = 2; frame < 14; frame++) {
    c->write_now = frame % 3 == 0;
    c->visits = c->tagged_visits = 0;
    progress_ok(f.w, 0.1);
    if (!c->write_now) {
      assert_int_equal(c->visits, 0);
      continue;
    }
    assert_int_equal(c->visits, nb);
    assert_int_equal(c->tagged_visits, nb);
    assert_int_equal(c->last_version, c->writer_version);
    assert_true(c->last_version > prev); /* versions increase */
    prev = c->last_version;
  }
  assert_int_equal(c->stale_version, 0);
  weft_system_stats_t s = sstats(f.w, reader);
  assert_int_equal(s.runs, 14);
  assert_int_equal(s.chunks, na + nb + 4 * nb);
  free(c);
  fx_free(&f);
}

static int chg_cmd_spawn(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  fx_t *f = ctx->user;
  if (ctx->tick != 2)
    return 0;
  const weft_component_t comps[] = {f->pos, f->vel, 0};
  weft_entity_t e;
  return weft_cmd_spawn(ctx->cmd, comps, NULL, &e);
}

static void test_pipeline_structural_change_marks_chunk(void **state) {
  (void)state;
  fx_t f = fx_new(0, 4096);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  populate(&f, 3000, 0);
  uint32_t na = count_chunks(f.w, f.pos, 0, 1, NULL);
  chg_t *c = calloc(1, sizeof *c);
  assert_non_null(c);
  c->pos = f.pos;
  c->tag = f.tag;
  add_changed_reader(&f, c);
  /* A PostFixedUpdate system spawns one row by command on tick 3. */
  weft_system_desc_t d =
      sys_desc("cmd.spawn", WEFT_PHASE_POST_FIXED_UPDATE, chg_cmd_spawn, &f);
  d.cmd_write[0] = f.pos;
  d.cmd_write[1] = f.vel;
  sys_add(f.w, &d);
  progress_ok(f.w, 0.1);
  assert_int_equal(c->visits, na);
  c->visits = 0;
  progress_ok(f.w, 0.1);
  assert_int_equal(c->visits, 0);
  /* A direct spawn between frames lands in one chunk, which changed. */
  const weft_component_t pv[] = {f.pos, f.vel, 0};
  c->target = wt_spawn_with(f.w, pv, NULL);
  progress_ok(f.w, 0.1);
  assert_int_equal(c->visits, 1);
  assert_int_equal(c->target_found, 1);
  assert_int_equal(c->stale_version, 0);
  /* That frame's tick 2 spawned by command: the next frame sees one chunk
   * again (the row it received), then nothing. */
  c->visits = 0;
  progress_ok(f.w, 0.1);
  assert_int_equal(c->visits, 1);
  c->visits = 0;
  progress_ok(f.w, 0.1);
  assert_int_equal(c->visits, 0);
  assert_int_equal(weft_world_count(f.w), 3002);
  assert_int_equal(c->stale_version, 0);
  free(c);
  fx_free(&f);
}

static void test_pipeline_read_only_does_not_mark(void **state) {
  (void)state;
  fx_t f = fx_new(0, 4096);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  populate(&f, 2000, 0);
  uint32_t na = count_chunks(f.w, f.pos, 0, 1, NULL);
  chg_t *c = calloc(1, sizeof *c);
  assert_non_null(c);
  c->pos = f.pos;
  c->tag = f.tag;
  weft_runif_t *gate = NULL;
  assert_int_equal(weft_runif_custom(f.w, chg_rw_gate, c, &gate), WEFT_OK);
  weft_system_desc_t d =
      sys_desc("read.only", WEFT_PHASE_FIXED_UPDATE, chg_read_only, c);
  d.query.include[0] = f.pos;
  d.term_access[0] = WEFT_ACCESS_READ;
  sys_add(f.w, &d);
  /* Default access (read and write): stamps. */
  d = sys_desc("read.write", WEFT_PHASE_FIXED_UPDATE, chg_read_only, c);
  d.query.include[0] = f.pos;
  d.run_if = gate;
  sys_add(f.w, &d);
  add_changed_reader(&f, c);
  progress_ok(f.w, 0.1);
  assert_int_equal(c->visits, na);
  assert_int_equal(c->ro_n, na);
  uint32_t first[256];
  memcpy(first, c->ro_versions, sizeof first);
  for (uint32_t i = 0; i < 4; i++) {
    c->visits = 0;
    c->ro_n = 0;
    progress_ok(f.w, 0.1);
    assert_int_equal(c->visits, 0);
    assert_int_equal(c->ro_n, na);
    assert_memory_equal(c->ro_versions, first, na * sizeof(uint32_t));
  }
  /* A system that may write Pos marks every chunk it visits. */
  c->rw_now = true;
  c->visits = 0;
  c->ro_n = 0;
  progress_ok(f.w, 0.1);
  assert_int_equal(c->visits, na);
  assert_int_equal(c->ro_n, 2 * na);
  /* Afterwards the chunks carry its newer version, and nothing is new. */
  c->rw_now = false;
  c->visits = 0;
  c->ro_n = 0;
  progress_ok(f.w, 0.1);
  assert_int_equal(c->visits, 0);
  assert_int_equal(c->ro_n, na);
  for (uint32_t i = 0; i < na; i++)
    assert_true(c->ro_versions[i] > first[i]);
  assert_int_equal(c->stale_version, 0);
  free(c);
  fx_free(&f);
}

/* --- failing callbacks --------------------------------------------------- */

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

static int err_count(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  atomic_fetch_add((_Atomic uint32_t *)ctx->user, 1);
  return 0;
}

static int err_pre_fails(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  return *(const bool *)ctx->user ? WEFT_ENOMEM : 0;
}

static void test_pipeline_error_reports_system(void **state) {
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

static void test_pipeline_error_lowest_chunk_with_pool(void **state) {
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

/* --- main-thread and exclusive systems ----------------------------------- */

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

static void test_pipeline_main_thread_system(void **state) {
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

static void test_pipeline_exclusive_runs_alone(void **state) {
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

static void test_pipeline_exclusive_query_structural_calls(void **state) {
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

/* --- statistics ---------------------------------------------------------- */

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

static uint64_t split_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

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
  uint64_t t0 = split_now_ns();
  while (n == 0 ? !weft__pool_hungry(sl->pool, weft_sysctx_pool_worker(ctx))
                : atomic_load(&sl->calls) == atomic_load(&sl->holder_calls)) {
    sched_yield();
    if (split_now_ns() - t0 > SPLIT_HANG_NS) {
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
static void test_pipeline_idle_workers_split_jobs(void **state) {
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
static void test_pipeline_jobs_start_as_one_part_per_worker(void **state) {
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

static void test_pipeline_system_stats(void **state) {
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

static void test_pipeline_phase_stats(void **state) {
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

/* --- traces -------------------------------------------------------------- */

static char *read_all(const char *path, size_t *len) {
  FILE *fp = fopen(path, "rb");
  assert_non_null(fp);
  assert_int_equal(fseek(fp, 0, SEEK_END), 0);
  long n = ftell(fp);
  assert_true(n > 0);
  rewind(fp);
  char *buf = malloc((size_t)n + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
  buf[n] = 0;
  fclose(fp);
  *len = (size_t)n;
  return buf;
}

/* Braces and brackets balance outside strings, and strings close. */
static bool json_balanced(const char *s) {
  char stack[64];
  int depth = 0;
  bool in_str = false;
  for (; *s; s++) {
    if (in_str) {
      if (*s == '\\' && s[1])
        s++;
      else if (*s == '"')
        in_str = false;
      continue;
    }
    if (*s == '"') {
      in_str = true;
    } else if (*s == '{' || *s == '[') {
      if (depth == 64)
        return false;
      stack[depth++] = *s;
    } else if (*s == '}' || *s == ']') {
      if (depth == 0 || stack[depth - 1] != (*s == '}' ? '{' : '['))
        return false;
      depth--;
    }
  }
  return depth == 0 && !in_str;
}

static void test_pipeline_trace_write(void **state) {
  (void)state;
  fx_t f = fx_new(2, 0);
  sim_t s;
  sim_setup(&f, &s);
  assert_int_equal(weft_trace_start(f.w, 4096), WEFT_OK);
  for (uint32_t i = 0; i < 3; i++)
    progress_ok(f.w, 0.1);
  weft_trace_stop(f.w);
  progress_ok(f.w, 0.1); /* not recorded */
  char path[] = "/tmp/weft-trace-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(weft_trace_write(f.w, path), WEFT_OK);
  size_t len = 0;
  char *text = read_all(path, &len);
  assert_non_null(strstr(text, "\"traceEvents\":["));
  assert_non_null(strstr(text, "\"sim.move\""));
  assert_non_null(strstr(text, "\"sim.spawn\""));
  assert_non_null(strstr(text, "\"sync\""));
  assert_non_null(strstr(text, "driver"));
  assert_non_null(strstr(text, "\"dropped\":0"));
  assert_true(json_balanced(text));
  assert_true(len > 2 && text[len - 2] == '}');
  free(text);
  /* A tiny trace drops spans and says so. */
  assert_int_equal(weft_trace_start(f.w, 2), WEFT_OK);
  for (uint32_t i = 0; i < 3; i++)
    progress_ok(f.w, 0.1);
  assert_int_equal(weft_trace_write(f.w, path), WEFT_OK);
  text = read_all(path, &len);
  assert_true(json_balanced(text));
  assert_null(strstr(text, "\"dropped\":0\n"));
  assert_non_null(strstr(text, "\"dropped\":"));
  free(text);
  unlink(path);
  fx_free(&f);
}

static void test_pipeline_trace_errors(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  /* No scheduler, then a scheduler but no trace. */
  assert_int_equal(weft_trace_write(f.w, "/tmp/weft-never.json"), WEFT_EINVAL);
  probe_t *pr = calloc(1, sizeof *pr);
  assert_non_null(pr);
  weft_system_desc_t d = sys_desc("t", WEFT_PHASE_PRE_UPDATE, probe_run, pr);
  sys_add(f.w, &d);
  progress_ok(f.w, 0.1);
  assert_int_equal(weft_trace_write(f.w, "/tmp/weft-never.json"), WEFT_EINVAL);
  assert_int_equal(access("/tmp/weft-never.json", F_OK), -1);
  assert_int_equal(weft_trace_start(f.w, 0), WEFT_EINVAL);
  assert_int_equal(weft_trace_start(f.w, 64), WEFT_OK);
  progress_ok(f.w, 0.1);
  const char *bad = "/nonexistent-weft-dir/sub/trace.json";
  assert_int_equal(weft_trace_write(f.w, bad), WEFT_EIO);
  assert_non_null(strstr(weft_world_last_error(f.w), bad));
  assert_int_equal(weft_trace_write(f.w, "/"), WEFT_EIO);
  assert_int_equal(weft_trace_write(f.w, NULL), WEFT_EINVAL);
  free(pr);
  fx_free(&f);
}

/* --- steady state -------------------------------------------------------- */

typedef struct steady_t {
  weft_component_t pos, mark;
  weft_channel_t ch;
  uint64_t received;
} steady_t;

static int steady_spawn(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  steady_t *s = ctx->user;
  const pos_t *p = chunk->columns[0];
  uint32_t m = ctx->chunk;
  const weft_component_t comps[] = {s->pos, s->mark, 0};
  const void *vals[] = {&p[0], &m};
  weft_entity_t e;
  return weft_cmd_spawn(ctx->cmd, comps, vals, &e);
}

static int steady_reap(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  for (uint32_t r = 0; r < chunk->count; r++) {
    int rc = weft_cmd_despawn(ctx->cmd, chunk->entities[r]);
    if (rc)
      return rc;
  }
  return 0;
}

static int steady_emit(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  steady_t *s = ctx->user;
  for (uint32_t r = 0; r < chunk->count; r += 64) {
    uint32_t v = r;
    int rc = weft_sysctx_emit(ctx, s->ch, &v);
    if (rc)
      return rc;
  }
  return 0;
}

static int steady_recv(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  steady_t *s = ctx->user;
  uint32_t n = 0;
  weft_event_read(ctx->world, s->ch, &n);
  s->received += n;
  return 0;
}

/* A world in steady state: movement over 20000 rows, one spawn per chunk
 * balanced by a despawn of every spawned row in PostFixedUpdate, events
 * emitted per chunk and read, and a NetworkTick system. The recording
 * systems carry @p record_flags. */
typedef struct steady_world_t {
  fx_t f;
  steady_t s;
  probe_t net;
  weft_system_t move;
} steady_world_t;

static steady_world_t *steady_new(uint32_t workers, uint32_t record_flags) {
  steady_world_t *sw = calloc(1, sizeof *sw);
  assert_non_null(sw);
  sw->f = fx_new(workers, 0);
  fx_t *f = &sw->f;
  steady_t *s = &sw->s;
  configure(f->w, FIXED, 8, WEFT_OVERLOAD_DROP, 0.2, 0);
  populate(f, 20000, 0);
  s->pos = f->pos;
  s->mark = f->mark;
  assert_int_equal(
      weft_channel_register(f->w, "steady", sizeof(uint32_t), &s->ch), WEFT_OK);
  weft_system_desc_t d =
      sys_desc("steady.move", WEFT_PHASE_FIXED_UPDATE, sim_move, s);
  d.query.include[0] = f->pos;
  d.query.include[1] = f->vel;
  d.term_access[0] = WEFT_ACCESS_WRITE;
  d.term_access[1] = WEFT_ACCESS_READ;
  d.batch = 1024;
  sw->move = sys_add(f->w, &d);
  d = sys_desc("steady.spawn", WEFT_PHASE_FIXED_UPDATE, steady_spawn, s);
  d.query.include[0] = f->pos;
  d.query.exclude[0] = f->mark;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.cmd_write[0] = f->pos;
  d.cmd_write[1] = f->mark;
  d.batch = 1024;
  d.flags = record_flags;
  sys_add(f->w, &d);
  d = sys_desc("steady.emit", WEFT_PHASE_FIXED_UPDATE, steady_emit, s);
  d.query.include[0] = f->vel;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.emit[0] = s->ch;
  d.batch = 1024;
  d.flags = record_flags;
  sys_add(f->w, &d);
  d = sys_desc("steady.reap", WEFT_PHASE_POST_FIXED_UPDATE, steady_reap, s);
  d.query.include[0] = f->mark;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.flags = WEFT_SYSTEM_DESPAWNS | record_flags;
  sys_add(f->w, &d);
  d = sys_desc("steady.recv", WEFT_PHASE_POST_FIXED_UPDATE, steady_recv, s);
  d.receive[0] = s->ch;
  sys_add(f->w, &d);
  d = sys_desc("steady.net", WEFT_PHASE_NETWORK_TICK, probe_run, &sw->net);
  sys_add(f->w, &d);
  return sw;
}

static void steady_free(steady_world_t *sw) {
  fx_free(&sw->f);
  free(sw);
}

/* Warms up, then checks that 50 frames allocate nothing, counted by the
 * world and, where weft allocates through jemalloc, by jemalloc's counter
 * of the driving thread. */
static void steady_check(steady_world_t *sw) {
  weft_world_t *w = sw->f.w;
  for (uint32_t i = 0; i < 10; i++)
    progress_ok(w, 0.1);
  uint32_t count = weft_world_count(w);
  assert_int_equal(count, 20000);
  weft_world_stats_t s0 = wt_stats(w);
  const uint64_t *counter = wt_thread_allocated();
  uint64_t bytes0 = counter ? *counter : 0;
  uint64_t received0 = sw->s.received;
  uint32_t net0 = sw->net.calls;
  for (uint32_t i = 0; i < 50; i++)
    progress_ok(w, 0.1);
  uint64_t bytes = counter ? *counter - bytes0 : 0;
  weft_world_stats_t s1 = wt_stats(w);
  if (s1.allocs != s0.allocs)
    fail_msg("%llu allocations (%llu bytes) in 50 steady frames",
             (unsigned long long)(s1.allocs - s0.allocs),
             (unsigned long long)(s1.alloc_bytes - s0.alloc_bytes));
  if (bytes != 0)
    fail_msg("jemalloc saw %llu bytes allocated on the driving thread",
             (unsigned long long)bytes);
  /* The frames did their work. */
  assert_true(s1.spawns - s0.spawns >= 50 * 10);
  assert_int_equal(s1.spawns - s0.spawns, s1.despawns - s0.despawns);
  assert_true(sw->s.received - received0 >= 50 * 100);
  assert_int_equal(weft_world_count(w), count);
  assert_int_equal(sw->net.calls - net0, 25);
}

static void test_pipeline_steady_state_allocates_nothing(void **state) {
  (void)state;
  /* Without a pool. */
  steady_world_t *sw = steady_new(0, 0);
  steady_check(sw);
  steady_free(sw);
  /* With a pool of two: movement runs on the pool; what records commands
   * and events runs on the driving thread, so that every buffer sees the
   * same load each frame. */
  sw = steady_new(2, WEFT_SYSTEM_MAIN_THREAD);
  steady_check(sw);
  assert_true(sstats(sw->f.w, sw->move).jobs > 0);
  steady_free(sw);
}

/*
 * The same with the recording systems' chunks spread over the pool. Which
 * worker records how much depends on timing; the scheduler gives every
 * worker's buffer and event slot room for a whole segment's recording (a
 * sum that does not depend on timing), so steady frames still allocate
 * nothing.
 */
static void test_pipeline_steady_state_parallel_recording(void **state) {
  (void)state;
  steady_world_t *sw = steady_new(2, 0);
  steady_check(sw);
  steady_free(sw);
}

/* A callback removes a later system during the frame: the removal
 * succeeds, the victim runs no more in that frame (not in PreRender), and
 * it is gone once the frame ends. */
typedef struct remover_t {
  weft_system_t victim;
  int rc;
  uint32_t calls;
} remover_t;

static int remove_victim(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  remover_t *r = ctx->user;
  if (r->calls++ == 0)
    r->rc = weft_system_remove(ctx->world, r->victim);
  return 0;
}

static void test_pipeline_remove_during_frame(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  configure(f.w, 0.1, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  probe_t victim_probe;
  memset(&victim_probe, 0, sizeof victim_probe);
  remover_t r = {0, -1, 0};
  weft_system_desc_t d =
      sys_desc("remover", WEFT_PHASE_PRE_UPDATE, remove_victim, &r);
  d.flags = WEFT_SYSTEM_MAIN_THREAD;
  sys_add(f.w, &d);
  d = sys_desc("victim", WEFT_PHASE_PRE_RENDER, probe_run, &victim_probe);
  r.victim = sys_add(f.w, &d);
  progress_ok(f.w, 0.1);
  assert_int_equal(r.rc, WEFT_OK);
  assert_int_equal(victim_probe.calls, 0); /* stopped within the frame */
  weft_system_t id;
  assert_int_equal(weft_system_lookup(f.w, "victim", &id), WEFT_ENONAME);
  assert_int_equal(weft_system_remove(f.w, r.victim), WEFT_ENONAME);
  progress_ok(f.w, 0.1);
  assert_int_equal(victim_probe.calls, 0);
  assert_int_equal(r.calls, 2);
  fx_free(&f);
}

/* A callback removes a system, then enables it again: the enable fails
 * (the system is gone), and the victim runs no more in that frame, not in
 * the three fixed steps that follow. */
typedef struct revive_t {
  weft_system_t victim;
  int remove_rc, enable_rc, again_rc;
  uint32_t calls;
} revive_t;

static int revive_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  revive_t *r = ctx->user;
  if (r->calls++ == 0) {
    r->remove_rc = weft_system_remove(ctx->world, r->victim);
    r->enable_rc = weft_system_enable(ctx->world, r->victim, true);
    r->again_rc = weft_system_remove(ctx->world, r->victim);
  }
  return 0;
}

static void test_pipeline_removed_system_stays_removed_in_frame(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  configure(f.w, 0.1, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  revive_t r = {0, -1, -1, -1, 0};
  weft_system_desc_t d =
      sys_desc("reviver", WEFT_PHASE_PRE_UPDATE, revive_run, &r);
  d.flags = WEFT_SYSTEM_MAIN_THREAD;
  sys_add(f.w, &d);
  probe_t *victim = calloc(1, sizeof *victim);
  assert_non_null(victim);
  d = sys_desc("victim", WEFT_PHASE_FIXED_UPDATE, probe_run, victim);
  r.victim = sys_add(f.w, &d);
  progress_ok(f.w, 0.35); /* three fixed steps */
  assert_int_equal(pstate(f.w).tick, 3);
  assert_int_equal(r.remove_rc, WEFT_OK);
  assert_int_equal(r.enable_rc, WEFT_ENONAME);
  assert_int_equal(r.again_rc, WEFT_ENONAME);
  assert_non_null(strstr(weft_world_last_error(f.w), "removed"));
  assert_int_equal(victim->calls, 0);
  weft_system_t id;
  assert_int_equal(weft_system_lookup(f.w, "victim", &id), WEFT_ENONAME);
  progress_ok(f.w, 0.35);
  assert_int_equal(victim->calls, 0);
  /* The name is free for a new system, which runs. */
  d = sys_desc("victim", WEFT_PHASE_FIXED_UPDATE, probe_run, victim);
  sys_add(f.w, &d);
  progress_ok(f.w, 0.1);
  assert_int_equal(victim->calls, 1);
  free(victim);
  fx_free(&f);
}

/* What a callback returns: 0 is success; anything else fails the frame
 * with WEFT_ESYSTEM, and the message names the system and the value. A
 * WEFT_E* code is named; another value (positive, INT_MIN, an
 * application's own negative code) is reported as the number it is, not
 * as some unrelated WEFT_E* message. */
static int ret_value(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  return *(const int *)ctx->user;
}

static void test_pipeline_callback_return_values(void **state) {
  (void)state;
  for (uint32_t workers = 0; workers <= 2; workers += 2) {
    fx_t f = fx_new(workers, 0);
    configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 1);
    int value = 0;
    weft_system_desc_t d =
        sys_desc("returner", WEFT_PHASE_FIXED_UPDATE, ret_value, &value);
    sys_add(f.w, &d);
    progress_ok(f.w, FIXED);
    static const struct {
      int value;
      const char *says;
    } cases[] = {
        {WEFT_ENOTFOUND, "WEFT_ENOTFOUND"},
        {WEFT_EIO, "WEFT_EIO"},
        {1, "returned 1,"},
        {7, "returned 7,"},
        {INT_MAX, "returned 2147483647,"},
        {INT_MIN, "returned -2147483648,"},
        {-1000, "returned -1000,"},
    };
    for (uint32_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      value = cases[i].value;
      assert_int_equal(weft_world_progress(f.w, FIXED), WEFT_ESYSTEM);
      const char *msg = weft_world_last_error(f.w);
      if (!strstr(msg, "returner") || !strstr(msg, cases[i].says))
        fail_msg("returning %d: \"%s\" lacks \"%s\"", value, msg,
                 cases[i].says);
      /* A value that is no code is never described as one. */
      if (value >= 0 || value == INT_MIN || value == -1000)
        assert_non_null(strstr(msg, "not a WEFT_E* code"));
    }
    value = 0;
    progress_ok(f.w, FIXED);
    fx_free(&f);
  }
}

/* dt is any finite, non-negative number of seconds, DBL_MAX included: the
 * dropped-step count saturates instead of overflowing its conversion, and
 * WEFT_OVERLOAD_ACCUMULATE keeps a finite backlog (2^32 steps' worth; the
 * rest is dropped) instead of an infinite accumulator. NaN, infinities and
 * negative values are refused with a message. */
static void test_pipeline_progress_huge_dt(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  configure(f.w, FIXED, 4, WEFT_OVERLOAD_DROP, -1.0, 0);
  frame_probes_t *fp = probes_add(f.w);
  progress_ok(f.w, DBL_MAX);
  weft_pipeline_state_t st = pstate(f.w);
  assert_int_equal(st.tick, 4);
  assert_int_equal(fp->p[1].calls, 4);
  assert_double_exact(st.accumulator, 0.0);
  assert_int_equal(st.steps_dropped, UINT64_MAX);
  assert_true(isfinite(st.time_dropped));
  progress_ok(f.w, DBL_MAX);
  st = pstate(f.w);
  assert_int_equal(st.steps_dropped, UINT64_MAX);
  assert_double_exact(st.time_dropped, DBL_MAX);
  progress_ok(f.w, FIXED); /* back to one step a frame */
  assert_int_equal(pstate(f.w).tick, 9);
  /* 3e17 s: past the range of the step count's old conversion. */
  progress_ok(f.w, 3e17);
  assert_int_equal(pstate(f.w).tick, 13);
  assert_int_equal(pstate(f.w).steps_dropped, UINT64_MAX);

  configure(f.w, FIXED, 4, WEFT_OVERLOAD_ACCUMULATE, -1.0, 0);
  double dropped0 = pstate(f.w).time_dropped;
  for (int i = 0; i < 3; i++) {
    progress_ok(f.w, DBL_MAX);
    st = pstate(f.w);
    assert_true(isfinite(st.accumulator));
    assert_true(st.accumulator <= 0x1p32 * FIXED);
    assert_true(st.accumulator >= 0x1p32 * FIXED - 5 * FIXED);
    assert_true(isfinite(st.alpha));
  }
  assert_true(st.time_dropped >= dropped0);
  /* The backlog shrinks as steps run: subtracting a step still counts. */
  double acc0 = st.accumulator;
  progress_ok(f.w, 0.0);
  assert_true(pstate(f.w).accumulator < acc0);
  /* Switching to DROP clears it. */
  configure(f.w, FIXED, 4, WEFT_OVERLOAD_DROP, -1.0, 0);
  progress_ok(f.w, 0.0);
  assert_double_exact(pstate(f.w).accumulator, 0.0);
  uint64_t tick = pstate(f.w).tick;
  progress_ok(f.w, FIXED);
  assert_int_equal(pstate(f.w).tick, tick + 1);

  /* Refused, with the world unchanged. */
  const double bad[] = {NAN, -NAN, INFINITY, -INFINITY, -DBL_MIN, -DBL_MAX};
  st = pstate(f.w);
  for (uint32_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(weft_world_progress(f.w, bad[i]), WEFT_EINVAL);
    assert_non_null(strstr(weft_world_last_error(f.w), "dt must be finite"));
  }
  assert_int_equal(pstate(f.w).frames, st.frames);
  assert_int_equal(pstate(f.w).tick, st.tick);
  free(fp);
  fx_free(&f);
}

/* The sysctx_* calls given NULL or a context the scheduler did not make:
 * errors or neutral answers, never a crash or a write to the world. */
typedef struct ctxcheck_t {
  weft_channel_t ch;
  int emit_rc, part_rc;
  uint64_t draw;
} ctxcheck_t;

static int ctx_draw(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  ctxcheck_t *c = ctx->user;
  c->draw = weft_sysctx_random(ctx, 0, 1, 2);
  weft_sysctx_t part;
  c->part_rc = weft_sysctx_part(ctx, WEFT_WORKER_EXTERNAL, 0, &part);
  uint32_t v = 3;
  c->emit_rc = weft_sysctx_emit(ctx, c->ch, &v);
  return 0;
}

static void test_pipeline_sysctx_rejects_null_and_forged(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  ctxcheck_t c;
  memset(&c, 0, sizeof c);
  assert_int_equal(weft_channel_register(f.w, "ev", sizeof(uint32_t), &c.ch),
                   WEFT_OK);
  uint32_t v = 1;
  weft_sysctx_t part;
  assert_int_equal(weft_sysctx_random(NULL, 1, 2, 3), 0);
  assert_int_equal(weft_sysctx_emit(NULL, c.ch, &v), WEFT_EINVAL);
  assert_int_equal(weft_sysctx_part(NULL, 0, 0, &part), WEFT_EINVAL);
  weft_sysctx_count(NULL, 5);
  assert_int_equal(weft_sysctx_pool_worker(NULL), WEFT_WORKER_EXTERNAL);
  /* A context made up by the caller, not handed out by the scheduler. */
  weft_sysctx_t forged;
  memset(&forged, 0, sizeof forged);
  forged.world = f.w;
  assert_int_equal(weft_sysctx_random(&forged, 1, 2, 3),
                   weft_random_at(weft_random_world_seed(f.w), 1, 0, 2, 3));
  forged.world = NULL;
  assert_int_equal(weft_sysctx_random(&forged, 1, 2, 3), 0);
  forged.world = f.w;
  assert_int_equal(weft_sysctx_emit(&forged, c.ch, &v), WEFT_EINVAL);
  assert_int_equal(weft_sysctx_part(&forged, WEFT_WORKER_EXTERNAL, 0, &part),
                   WEFT_EINVAL);
  weft_sysctx_count(&forged, 5);
  assert_int_equal(weft_sysctx_pool_worker(&forged), WEFT_WORKER_EXTERNAL);
  /* Nothing was staged: after PreRender's sync point the channel holds
   * the one event the callback emitted. */
  weft_system_desc_t d =
      sys_desc("drawer", WEFT_PHASE_PRE_RENDER, ctx_draw, &c);
  weft_system_t drawer = sys_add(f.w, &d);
  progress_ok(f.w, FIXED);
  uint32_t n = 99;
  weft_event_read(f.w, c.ch, &n);
  assert_int_equal(n, 1); /* the callback's own event, no forged one */
  assert_int_equal(c.emit_rc, WEFT_OK);
  assert_int_equal(c.part_rc, WEFT_OK);
  assert_int_equal(c.draw, weft_random_at(weft_random_world_seed(f.w), 0,
                                          pstate(f.w).tick, 1, 2));
  assert_int_equal(sstats(f.w, drawer).entities, 0);
  fx_free(&f);
}

/* --- inline or dispatch -------------------------------------------------- */

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

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
  double t0 = mono_s();
  for (;;) {
    saw = saw || atomic_load(&o->inside) == 2;
    double t = mono_s() - t0;
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
static void test_pipeline_independent_heavy_systems_overlap(void **state) {
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
    double t0 = mono_s();
    while (mono_s() - t0 < 0.002) {
    }
  }
  return 0;
}

static void test_pipeline_cheap_tasks_stay_inline(void **state) {
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
      cmocka_unit_test(test_pipeline_fixed_steps_follow_accumulator),
      cmocka_unit_test(test_pipeline_overload_drop_discards_time),
      cmocka_unit_test(test_pipeline_overload_accumulate_keeps_time),
      cmocka_unit_test(test_pipeline_network_tick_every_net_dt),
      cmocka_unit_test(test_pipeline_negative_net_dt_never_ticks),
      cmocka_unit_test(test_pipeline_progress_rejects_bad_dt),
      cmocka_unit_test(test_pipeline_progress_inside_callback_is_busy),
      cmocka_unit_test(test_pipeline_run_phase_runs_one_phase),
      cmocka_unit_test(test_pipeline_runif_every_matches_condition),
      cmocka_unit_test(test_pipeline_runif_after_runs_once_then_removed),
      cmocka_unit_test(test_pipeline_disabled_system_skips_condition),
      cmocka_unit_test(test_pipeline_disabled_phase_skips_condition),
      cmocka_unit_test(test_pipeline_commands_apply_at_phase_end),
      cmocka_unit_test(test_pipeline_pool_digest_matches_inline),
      cmocka_unit_test(test_pipeline_events_parallel_keep_order),
      cmocka_unit_test(test_pipeline_task_parts_keep_order),
      cmocka_unit_test(test_pipeline_events_clear_after_post_fixed),
      cmocka_unit_test(test_pipeline_resource_writer_orders_readers),
      cmocka_unit_test(test_pipeline_changed_skips_unwritten_chunks),
      cmocka_unit_test(test_pipeline_changed_sees_every_written_column),
      cmocka_unit_test(test_pipeline_structural_change_marks_chunk),
      cmocka_unit_test(test_pipeline_read_only_does_not_mark),
      cmocka_unit_test(test_pipeline_error_reports_system),
      cmocka_unit_test(test_pipeline_error_lowest_chunk_with_pool),
      cmocka_unit_test(test_pipeline_main_thread_system),
      cmocka_unit_test(test_pipeline_exclusive_runs_alone),
      cmocka_unit_test(test_pipeline_exclusive_query_structural_calls),
      cmocka_unit_test(test_pipeline_system_stats),
      cmocka_unit_test(test_pipeline_idle_workers_split_jobs),
      cmocka_unit_test(test_pipeline_jobs_start_as_one_part_per_worker),
      cmocka_unit_test(test_pipeline_phase_stats),
      cmocka_unit_test(test_pipeline_trace_write),
      cmocka_unit_test(test_pipeline_trace_errors),
      cmocka_unit_test(test_pipeline_steady_state_allocates_nothing),
      cmocka_unit_test(test_pipeline_steady_state_parallel_recording),
      cmocka_unit_test(test_pipeline_remove_during_frame),
      cmocka_unit_test(test_pipeline_removed_system_stays_removed_in_frame),
      cmocka_unit_test(test_pipeline_callback_return_values),
      cmocka_unit_test(test_pipeline_progress_huge_dt),
      cmocka_unit_test(test_pipeline_sysctx_rejects_null_and_forged),
      cmocka_unit_test(test_pipeline_independent_heavy_systems_overlap),
      cmocka_unit_test(test_pipeline_cheap_tasks_stay_inline),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
