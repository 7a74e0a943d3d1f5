/* SPDX-License-Identifier: MIT */
/*
 * Steady frames allocate nothing (with and without parallel recording),
 * and the pipeline's edges: systems removed during a frame, callback
 * return values, huge frame times and the context's checks of its
 * callers.
 */
#define _GNU_SOURCE /* nanosleep (support/pipeline_test.h) */
#include "support/weft_test.h"

#include "support/pipeline_test.h"

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

static void test_steady_state_allocates_nothing(void **state) {
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
static void test_steady_state_parallel_recording(void **state) {
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

static void test_steady_state_remove_during_frame(void **state) {
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

static void
test_steady_state_removed_system_stays_removed_in_frame(void **state) {
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

static void test_steady_state_callback_return_values(void **state) {
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
static void test_steady_state_progress_huge_dt(void **state) {
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

static void test_steady_state_sysctx_rejects_null_and_forged(void **state) {
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_steady_state_allocates_nothing),
      cmocka_unit_test(test_steady_state_parallel_recording),
      cmocka_unit_test(test_steady_state_remove_during_frame),
      cmocka_unit_test(test_steady_state_removed_system_stays_removed_in_frame),
      cmocka_unit_test(test_steady_state_callback_return_values),
      cmocka_unit_test(test_steady_state_progress_huge_dt),
      cmocka_unit_test(test_steady_state_sysctx_rejects_null_and_forged),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
