/* SPDX-License-Identifier: MIT */
/*
 * Shared helpers for the frame pipeline's tests (test_fixed_step.c,
 * test_system_runif.c, test_sync_points.c, test_events.c and the others
 * split from one file by section): a fixture world with its optional pool
 * and the components most tests use, system registration with
 * assertions, the reference frame loop (an oracle accumulator) with one
 * probe per phase, a small simulation of parallel commands, and a
 * counting callback. Every test builds and destroys its own world (and
 * pool). Include after weft_test.h, with _GNU_SOURCE (or POSIX 2008)
 * defined for nanosleep. Header-only; every function is static inline.
 *
 * Callbacks that may run on pool workers never call cmocka's asserts (they
 * jump); they count what they saw in atomics that the test checks after
 * the frame.
 */
#ifndef WEFT_TEST_PIPELINE_TEST_H
#define WEFT_TEST_PIPELINE_TEST_H

#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

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

static inline fx_t fx_new(uint32_t workers, uint32_t chunk_size) {
  fx_t f;
  memset(&f, 0, sizeof f);
  f.w = wt_world_pooled(workers, chunk_size, &f.pool);
  f.pos = wt_register(f.w, "Pos", sizeof(pos_t), 0);
  f.vel = wt_register(f.w, "Vel", sizeof(vel_t), 0);
  f.mark = wt_register(f.w, "Mark", sizeof(uint32_t), 0);
  f.tag = wt_register_tag(f.w, "Tag");
  return f;
}

static inline void fx_free(fx_t *f) {
  weft_world_destroy(f->w); /* before the pool it uses */
  if (f->pool)
    weft_pool_destroy(f->pool);
  memset(f, 0, sizeof *f);
}

/*
 * A fixture whose pipeline runs one of three ways, so that a test can
 * check that every path gives the same result: mode 0 plain (no pool),
 * 1 plain with every system timed, 2 two workers with systems dispatched
 * to the pool from the first row. Fixed step FIXED.
 */
static inline fx_t fx_new_mode(uint32_t mode) {
  fx_t f = fx_new(mode == 2 ? 2 : 0, 0);
  weft_pipeline_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.fixed_dt = FIXED;
  pc.time_inline = mode == 1;
  pc.inline_rows = mode == 2 ? 1 : 0;
  assert_int_equal(weft_pipeline_configure(f.w, &pc), WEFT_OK);
  return f;
}

static inline void configure(weft_world_t *w, double fixed_dt,
                             uint32_t max_steps, weft_overload_t overload,
                             double net_dt, uint32_t inline_rows) {
  weft_pipeline_config_t c;
  memset(&c, 0, sizeof c);
  c.fixed_dt = fixed_dt;
  c.max_steps = max_steps;
  c.overload = overload;
  c.net_dt = net_dt;
  c.inline_rows = inline_rows;
  assert_int_equal(weft_pipeline_configure(w, &c), WEFT_OK);
}

static inline weft_system_desc_t sys_desc(const char *name, weft_phase_t phase,
                                          weft_system_fn run, void *user) {
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.phase = phase;
  d.run = run;
  d.user = user;
  return d;
}

static inline weft_system_t sys_add(weft_world_t *w,
                                    const weft_system_desc_t *d) {
  weft_system_t id = 0;
  int rc = weft_system_register(w, d, &id);
  if (rc != WEFT_OK)
    fail_msg("registering %s: %s (%s)", d->name, weft_strerror(rc),
             weft_world_last_error(w));
  assert_int_not_equal(id, 0);
  return id;
}

static inline weft_pipeline_state_t pstate(const weft_world_t *w) {
  weft_pipeline_state_t s;
  memset(&s, 0xa5, sizeof s);
  weft_pipeline_state(w, &s);
  return s;
}

static inline weft_system_stats_t sstats(const weft_world_t *w,
                                         weft_system_t id) {
  weft_system_stats_t s;
  memset(&s, 0xa5, sizeof s);
  assert_int_equal(weft_system_stats(w, id, &s), WEFT_OK);
  return s;
}

static inline weft_phase_stats_t phstats(const weft_world_t *w,
                                         weft_phase_t ph) {
  weft_phase_stats_t s;
  memset(&s, 0xa5, sizeof s);
  assert_int_equal(weft_phase_stats(w, ph, &s), WEFT_OK);
  return s;
}

static inline weft_system_info_t sinfo(weft_world_t *w, weft_system_t id) {
  weft_system_info_t i;
  memset(&i, 0, sizeof i);
  assert_int_equal(weft_system_info(w, id, &i), WEFT_OK);
  return i;
}

static inline void progress_ok(weft_world_t *w, double dt) {
  int rc = weft_world_progress(w, dt);
  if (rc != WEFT_OK)
    fail_msg("progress(%g): %s (%s)", dt, weft_strerror(rc),
             weft_world_last_error(w));
}

static inline void fill_pv(void *user, const weft_iter_t *view,
                           uint32_t first) {
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
static inline void populate(const fx_t *f, uint32_t n, weft_component_t extra) {
  const weft_component_t comps[4] = {f->pos, f->vel, extra, 0};
  assert_int_equal(weft_spawn_batch(f->w, n, comps, fill_pv, NULL, NULL),
                   WEFT_OK);
}

/* Chunks a query (include inc, exclude exc) visits, and the jobs of
 * `batch` rows the documented cutting rule makes of them on one node. */
static inline uint32_t count_chunks(weft_world_t *w, weft_component_t inc,
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

static inline void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* An execution log: one letter per callback. */
typedef struct xlog_t {
  char s[4096];
  uint32_t n;
} xlog_t;

static inline void log_reset(xlog_t *l) {
  l->n = 0;
  l->s[0] = 0;
}

static inline void log_put(xlog_t *l, char c) {
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

static inline int probe_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
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

static inline frame_probes_t *probes_add(weft_world_t *w) {
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

static inline oracle_t oracle_new(double fixed_dt, uint32_t max_steps,
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
static inline uint32_t oracle_frame(oracle_t *o, double dt, char *out,
                                    size_t cap) {
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
static inline void check_frames(weft_world_t *w, frame_probes_t *fp,
                                oracle_t *o, const double *dts, uint32_t n) {
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

/* A small simulation: movement plus spawns, despawns, adds and removes
 * recorded from parallel chunks, all keyed by counter-based randomness. */
typedef struct sim_t {
  weft_component_t pos, vel, mark, tag;
  weft_system_t move;
} sim_t;

static inline int sim_move(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  pos_t *p = chunk->columns[0];
  const vel_t *v = chunk->columns[1];
  for (uint32_t r = 0; r < chunk->count; r++) {
    p[r].x += v[r].dx * ctx->dt;
    p[r].y += v[r].dy * ctx->dt;
  }
  return 0;
}

static inline int sim_spawn(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
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

static inline int sim_kill(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  for (uint32_t r = 0; r < chunk->count; r++)
    if (weft_sysctx_random(ctx, chunk->entities[r], 2, 0) % 4 == 0) {
      int rc = weft_cmd_despawn(ctx->cmd, chunk->entities[r]);
      if (rc)
        return rc;
    }
  return 0;
}

static inline int sim_tag(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  sim_t *s = ctx->user;
  for (uint32_t r = 0; r < chunk->count; r++)
    if (weft_sysctx_random(ctx, chunk->entities[r], 3, 0) % 50 == 0) {
      int rc = weft_cmd_add(ctx->cmd, chunk->entities[r], s->tag, NULL);
      if (rc)
        return rc;
    }
  return 0;
}

static inline int sim_untag(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  sim_t *s = ctx->user;
  for (uint32_t r = 0; r < chunk->count; r++)
    if (weft_sysctx_random(ctx, chunk->entities[r], 4, 0) % 3 == 0) {
      int rc = weft_cmd_remove(ctx->cmd, chunk->entities[r], s->tag);
      if (rc)
        return rc;
    }
  return 0;
}

static inline void sim_setup(fx_t *f, sim_t *s) {
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

/* Counts its calls in the atomic counter it is given as user data. */
static inline int err_count(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  atomic_fetch_add((_Atomic uint32_t *)ctx->user, 1);
  return 0;
}

#endif /* WEFT_TEST_PIPELINE_TEST_H */
