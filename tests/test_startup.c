/* SPDX-License-Identifier: MIT */
/*
 * Run-once phases (phase.h): Startup systems run once, at the first
 * weft_world_progress() that finds them pending, before PreUpdate, in
 * dependency order and with their sync point; Shutdown systems run once
 * at weft_world_shutdown() or weft_world_destroy(). The program of the
 * first test runs three ways, as in test_plain.c: on the plain path (no
 * pool), on the general serial path (time_inline) and on a pool of two
 * workers that takes every system, with the same digests and logs.
 */
#define _GNU_SOURCE /* nanosleep (support/pipeline_test.h) */
#include "support/weft_test.h"

#include "support/pipeline_test.h"

#define SU_LOG 64u
#define SU_FRAMES 4u

/* What ran, in order, by a short code per system. Callbacks that may run
 * on workers only touch atomics. */
typedef struct su_log_t {
  _Atomic uint32_t n;
  _Atomic uint32_t code[SU_LOG];
} su_log_t;

static void su_note(su_log_t *l, uint32_t code) {
  uint32_t i = atomic_fetch_add(&l->n, 1);
  if (i < SU_LOG)
    atomic_store(&l->code[i], code);
}

/* The program's state. */
typedef struct su_run_t {
  fx_t f;
  su_log_t log;
  _Atomic uint32_t seen[SU_FRAMES]; /* rows the PreUpdate reader saw */
  _Atomic uint32_t frame;
  _Atomic uint32_t bad;
  uint64_t digest[SU_FRAMES];
  weft_system_t spawn, tag, reader;
} su_run_t;

typedef struct su_user_t {
  su_run_t *run;
  uint32_t code;
} su_user_t;

static su_user_t su_users[3][4];

/* Startup "spawn": 100 entities with Pos and Vel, through commands. */
static int su_spawn(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)it;
  su_user_t *u = ctx->user;
  su_run_t *r = u->run;
  const weft_component_t comps[3] = {r->f.pos, r->f.vel, 0};
  for (uint32_t k = 0; k < 100; k++) {
    pos_t p = {(double)k, 0};
    vel_t v = {1, 1};
    const void *vals[2] = {&p, &v};
    weft_entity_t e;
    if (weft_cmd_spawn(ctx->cmd, comps, vals, &e))
      return WEFT_ENOMEM;
  }
  su_note(&r->log, u->code);
  return 0;
}

/* Startup "tag": after "spawn" (its sync point applied): tags every
 * entity it sees, so it must see them. */
static int su_tag(weft_sysctx_t *ctx, const weft_iter_t *it) {
  su_user_t *u = ctx->user;
  su_run_t *r = u->run;
  for (uint32_t i = 0; i < it->count; i++)
    if (weft_cmd_add(ctx->cmd, it->entities[i], r->f.tag, NULL))
      return WEFT_ENOMEM;
  if (it->count)
    su_note(&r->log, u->code);
  return 0;
}

/* PreUpdate "reader": counts the tagged entities each frame. */
static int su_reader(weft_sysctx_t *ctx, const weft_iter_t *it) {
  su_user_t *u = ctx->user;
  su_run_t *r = u->run;
  uint32_t f = atomic_load(&r->frame);
  atomic_fetch_add(&r->seen[f], it->count);
  su_note(&r->log, u->code); /* one chunk: one entry a frame */
  return 0;
}

/* A task that only notes its code. */
static int su_mark(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)it;
  su_user_t *u = ctx->user;
  su_note(&u->run->log, u->code);
  return 0;
}

static void su_build(su_run_t *r, uint32_t mode) {
  memset(r, 0, sizeof *r);
  r->f = fx_new_mode(mode);
  for (uint32_t i = 0; i < 4; i++)
    su_users[mode][i] = (su_user_t){r, i + 1};
  /* Registered in the reverse of their order: the graph orders them. */
  weft_system_desc_t d =
      sys_desc("reader", WEFT_PHASE_PRE_UPDATE, su_reader, &su_users[mode][2]);
  d.query.include[0] = r->f.pos;
  d.query.include[1] = r->f.tag;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.term_access[1] = WEFT_ACCESS_NONE;
  r->reader = sys_add(r->f.w, &d);
  d = sys_desc("tag", WEFT_PHASE_STARTUP, su_tag, &su_users[mode][1]);
  d.query.include[0] = r->f.pos;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.cmd_write[0] = r->f.tag;
  d.after[0] = "spawn";
  r->tag = sys_add(r->f.w, &d);
  d = sys_desc("spawn", WEFT_PHASE_STARTUP, su_spawn, &su_users[mode][0]);
  d.cmd_write[0] = r->f.pos;
  d.cmd_write[1] = r->f.vel;
  r->spawn = sys_add(r->f.w, &d);
  d = sys_desc("fixed", WEFT_PHASE_FIXED_UPDATE, su_mark, &su_users[mode][3]);
  sys_add(r->f.w, &d);
}

static void su_run(su_run_t *r, uint32_t mode) {
  su_build(r, mode);
  for (uint32_t f = 0; f < SU_FRAMES; f++) {
    atomic_store(&r->frame, f);
    progress_ok(r->f.w, FIXED);
    r->digest[f] = weft_world_digest(r->f.w);
  }
}

/* Startup runs once, first, in dependency order, its commands applied
 * before PreUpdate; the same on all three paths. */
static void test_startup_runs_once_first_in_order(void **state) {
  (void)state;
  static su_run_t runs[3];
  for (uint32_t m = 0; m < 3; m++) {
    su_run_t *r = &runs[m];
    su_run(r, m);
    /* spawn, tag, then per frame reader and one fixed step. */
    const uint32_t want[] = {1, 2, 3, 4, 3, 4, 3, 4, 3, 4};
    assert_int_equal(atomic_load(&r->log.n), 10);
    for (uint32_t i = 0; i < 10; i++)
      if (atomic_load(&r->log.code[i]) != want[i])
        fail_msg("mode %u, entry %u: %u, expected %u", m, i,
                 atomic_load(&r->log.code[i]), want[i]);
    for (uint32_t f = 0; f < SU_FRAMES; f++)
      assert_int_equal(atomic_load(&r->seen[f]), 100);
    assert_int_equal(sstats(r->f.w, r->spawn).runs, 1);
    assert_int_equal(sstats(r->f.w, r->tag).runs, 1);
    assert_int_equal(sstats(r->f.w, r->reader).runs, SU_FRAMES);
    weft_phase_stats_t ps = phstats(r->f.w, WEFT_PHASE_STARTUP);
    assert_int_equal(ps.runs, 1);
    assert_int_equal(ps.commands, 200); /* 100 spawns, then 100 tags */
    assert_int_equal(ps.sync_points, 2);
    /* Spent systems leave the phase's schedule. */
    assert_int_equal(weft_phase_systems(r->f.w, WEFT_PHASE_STARTUP, NULL, 0),
                     0);
    assert_int_equal(atomic_load(&r->bad), 0);
  }
  for (uint32_t f = 0; f < SU_FRAMES; f++) {
    assert_int_equal(runs[0].digest[f], runs[1].digest[f]);
    assert_int_equal(runs[0].digest[f], runs[2].digest[f]);
  }
  for (uint32_t m = 0; m < 3; m++)
    fx_free(&runs[m].f);
}

static int su_count(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)it;
  atomic_fetch_add((_Atomic uint32_t *)ctx->user, 1);
  return 0;
}

/* A Startup system registered after Startup ran, or enabled only later,
 * runs once at the next progress; the spent ones do not run again. */
static void test_startup_late_and_disabled_systems_run_once(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  _Atomic uint32_t a = 0, b = 0, c = 0;
  weft_system_desc_t d = sys_desc("a", WEFT_PHASE_STARTUP, su_count, &a);
  sys_add(f.w, &d);
  d = sys_desc("c", WEFT_PHASE_STARTUP, su_count, &c);
  d.flags = WEFT_SYSTEM_DISABLED;
  weft_system_t cid = sys_add(f.w, &d);
  progress_ok(f.w, FIXED);
  progress_ok(f.w, FIXED);
  assert_int_equal(atomic_load(&a), 1);
  assert_int_equal(atomic_load(&c), 0);
  /* The disabled one is still pending. */
  weft_system_t listed[4];
  assert_int_equal(weft_phase_systems(f.w, WEFT_PHASE_STARTUP, listed, 4), 1);
  assert_int_equal(listed[0], cid);
  d = sys_desc("b", WEFT_PHASE_STARTUP, su_count, &b);
  sys_add(f.w, &d);
  progress_ok(f.w, FIXED);
  assert_int_equal(atomic_load(&a), 1);
  assert_int_equal(atomic_load(&b), 1);
  assert_int_equal(atomic_load(&c), 0);
  assert_int_equal(weft_system_enable(f.w, cid, true), WEFT_OK);
  /* weft_world_run_phase() runs the pending ones too. */
  assert_int_equal(weft_world_run_phase(f.w, WEFT_PHASE_STARTUP, FIXED),
                   WEFT_OK);
  assert_int_equal(atomic_load(&c), 1);
  for (uint32_t i = 0; i < 3; i++)
    progress_ok(f.w, FIXED);
  assert_int_equal(atomic_load(&a), 1);
  assert_int_equal(atomic_load(&b), 1);
  assert_int_equal(atomic_load(&c), 1);
  /* Frames 1-3 (c pending while disabled) and the explicit run. */
  assert_int_equal(phstats(f.w, WEFT_PHASE_STARTUP).runs, 4);
  /* A disabled Startup phase keeps its systems pending. */
  _Atomic uint32_t e = 0;
  d = sys_desc("e", WEFT_PHASE_STARTUP, su_count, &e);
  sys_add(f.w, &d);
  assert_int_equal(weft_phase_enable(f.w, WEFT_PHASE_STARTUP, false), WEFT_OK);
  progress_ok(f.w, FIXED);
  assert_int_equal(atomic_load(&e), 0);
  assert_int_equal(weft_phase_enable(f.w, WEFT_PHASE_STARTUP, true), WEFT_OK);
  progress_ok(f.w, FIXED);
  progress_ok(f.w, FIXED);
  assert_int_equal(atomic_load(&e), 1);
  fx_free(&f);
}

/* Shutdown "clear": despawns every entity with Pos through commands. */
static int su_clear(weft_sysctx_t *ctx, const weft_iter_t *it) {
  for (uint32_t i = 0; i < it->count; i++)
    if (weft_cmd_despawn(ctx->cmd, it->entities[i]))
      return WEFT_ENOMEM;
  atomic_fetch_add((_Atomic uint32_t *)ctx->user, 1);
  return 0;
}

/* weft_world_shutdown() runs the Shutdown systems once with their
 * commands applied; destroy does not run them again. */
static void test_startup_shutdown_runs_once_with_commands(void **state) {
  (void)state;
  for (uint32_t workers = 0; workers <= 2; workers += 2) {
    fx_t f = fx_new(workers, 0);
    configure(f.w, FIXED, 0, WEFT_OVERLOAD_DROP, 0, workers ? 1 : 0);
    populate(&f, 5000, 0);
    _Atomic uint32_t cleared = 0, fixed = 0;
    weft_system_desc_t d =
        sys_desc("clear", WEFT_PHASE_SHUTDOWN, su_clear, &cleared);
    d.query.include[0] = f.pos;
    d.flags = WEFT_SYSTEM_DESPAWNS;
    sys_add(f.w, &d);
    d = sys_desc("fixed", WEFT_PHASE_FIXED_UPDATE, su_count, &fixed);
    sys_add(f.w, &d);
    for (uint32_t i = 0; i < 3; i++)
      progress_ok(f.w, FIXED);
    assert_int_equal(atomic_load(&cleared), 0); /* not in a frame */
    assert_int_equal(wt_stats(f.w).alive, 5000);
    assert_int_equal(weft_world_shutdown(f.w), WEFT_OK);
    assert_true(atomic_load(&cleared) > 0);
    assert_int_equal(wt_stats(f.w).alive, 0);
    uint32_t calls = atomic_load(&cleared);
    /* Once: a second call and later frames run nothing of Shutdown. */
    assert_int_equal(weft_world_shutdown(f.w), WEFT_OK);
    progress_ok(f.w, FIXED);
    assert_int_equal(atomic_load(&cleared), calls);
    assert_int_equal(atomic_load(&fixed), 4);
    assert_int_equal(phstats(f.w, WEFT_PHASE_SHUTDOWN).runs, 1);
    fx_free(&f);
    assert_int_equal(atomic_load(&cleared), calls);
  }
}

/* Startup "maker": spawns ten entities and asks for a commit, declaring
 * no cmd_write, so only the request shows them to "counter". */
static int su_maker(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)it;
  weft_component_t *pos = ctx->user;
  const weft_component_t comps[2] = {*pos, 0};
  for (uint32_t k = 0; k < 10; k++) {
    pos_t p = {(double)k, 0};
    const void *vals[1] = {&p};
    weft_entity_t e;
    if (weft_cmd_spawn(ctx->cmd, comps, vals, &e))
      return WEFT_ENOMEM;
  }
  return weft_sysctx_commit(ctx);
}

/* Startup "counter", after "maker": adds the rows it sees. */
static int su_counter(weft_sysctx_t *ctx, const weft_iter_t *it) {
  atomic_fetch_add((_Atomic uint32_t *)ctx->user, it->count);
  return 0;
}

/* A Startup system's commit request works as in any phase, and the
 * systems of a Startup run that took two rounds are spent all the same. */
static void test_startup_commit_request_inside_startup(void **state) {
  (void)state;
  for (uint32_t workers = 0; workers <= 2; workers += 2) {
    fx_t f = fx_new(workers, 0);
    configure(f.w, FIXED, 0, WEFT_OVERLOAD_DROP, 0, workers ? 1 : 0);
    _Atomic uint32_t seen = 0;
    weft_system_desc_t d =
        sys_desc("maker", WEFT_PHASE_STARTUP, su_maker, &f.pos);
    weft_system_t maker = sys_add(f.w, &d);
    d = sys_desc("counter", WEFT_PHASE_STARTUP, su_counter, &seen);
    d.query.include[0] = f.pos;
    d.term_access[0] = WEFT_ACCESS_READ;
    d.after[0] = "maker";
    weft_system_t counter = sys_add(f.w, &d);
    for (uint32_t i = 0; i < 3; i++)
      progress_ok(f.w, FIXED);
    assert_int_equal(atomic_load(&seen), 10);
    assert_int_equal(sstats(f.w, maker).runs, 1);
    assert_int_equal(sstats(f.w, counter).runs, 1);
    assert_int_equal(wt_stats(f.w).alive, 10);
    assert_int_equal(phstats(f.w, WEFT_PHASE_STARTUP).runs, 1);
    assert_int_equal(phstats(f.w, WEFT_PHASE_STARTUP).sync_points, 1);
    fx_free(&f);
  }
}

static _Atomic uint32_t su_destroyed;

static int su_at_destroy(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)it;
  /* The world is whole here: read it, and record a command. */
  weft_entity_t e;
  const weft_component_t none[1] = {0};
  if (weft_cmd_spawn(ctx->cmd, none, NULL, &e))
    return WEFT_ENOMEM;
  atomic_fetch_add(&su_destroyed, 1 + (uint32_t)weft_query_count(ctx->user));
  return 0;
}

/* weft_world_destroy() runs the Shutdown systems nobody ran, with the
 * world whole, before it frees anything (ASan checks the rest). */
static void test_startup_destroy_runs_pending_shutdown(void **state) {
  (void)state;
  fx_t f = fx_new(2, 0);
  populate(&f, 10, 0);
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = f.pos;
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(f.w, &qd, &q), WEFT_OK);
  atomic_store(&su_destroyed, 0);
  weft_system_desc_t d = sys_desc("bye", WEFT_PHASE_SHUTDOWN, su_at_destroy, q);
  sys_add(f.w, &d);
  progress_ok(f.w, FIXED);
  assert_int_equal(atomic_load(&su_destroyed), 0);
  fx_free(&f);
  assert_int_equal(atomic_load(&su_destroyed), 11);
  /* A world that never used the scheduler shuts down with nothing. */
  fx_t g = fx_new(0, 0);
  assert_int_equal(weft_world_shutdown(g.w), WEFT_OK);
  fx_free(&g);
}

static int su_shutdown_inside(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)it;
  *(int *)ctx->user = weft_world_shutdown(ctx->world);
  return 0;
}

/* Bad input: clear codes and messages. */
static void test_startup_bad_input(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  weft_phase_t ph = 0;
  assert_int_equal(weft_phase_lookup(f.w, "Startup", &ph), WEFT_OK);
  assert_int_equal(ph, WEFT_PHASE_STARTUP);
  assert_int_equal(weft_phase_lookup(f.w, "Shutdown", &ph), WEFT_OK);
  assert_int_equal(ph, WEFT_PHASE_SHUTDOWN);
  /* A run-once system takes no run condition. */
  weft_runif_t *every = NULL;
  assert_int_equal(weft_runif_every(f.w, 1.0, &every), WEFT_OK);
  _Atomic uint32_t n = 0;
  weft_system_desc_t d = sys_desc("cond", WEFT_PHASE_STARTUP, su_count, &n);
  d.run_if = every;
  weft_system_t id = 0;
  assert_int_equal(weft_system_register(f.w, &d, &id), WEFT_EINVAL);
  assert_non_null(strstr(weft_world_last_error(f.w), "runs once"));
  d.phase = WEFT_PHASE_SHUTDOWN;
  assert_int_equal(weft_system_register(f.w, &d, &id), WEFT_EINVAL);
  /* Nothing hangs off a run-once phase. */
  assert_int_equal(weft_phase_register(f.w, "late", WEFT_PHASE_STARTUP, &ph),
                   WEFT_EINVAL);
  assert_non_null(strstr(weft_world_last_error(f.w), "Startup"));
  assert_int_equal(
      weft_phase_register_child(f.w, WEFT_PHASE_SHUTDOWN, "kid", &ph),
      WEFT_EINVAL);
  assert_non_null(strstr(weft_world_last_error(f.w), "Shutdown"));
  assert_int_equal(weft_world_shutdown(NULL), WEFT_EINVAL);
  /* Not from a callback. */
  int inside = 0;
  d = sys_desc("inside", WEFT_PHASE_FIXED_UPDATE, su_shutdown_inside, &inside);
  sys_add(f.w, &d);
  progress_ok(f.w, FIXED);
  assert_int_equal(inside, WEFT_EBUSY);
  /* Nor inside a deferred scope. */
  assert_true(weft_world_defer_begin(f.w) >= 0);
  assert_int_equal(weft_world_shutdown(f.w), WEFT_EBUSY);
  weft_world_defer_end(f.w);
  fx_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_startup_runs_once_first_in_order),
      cmocka_unit_test(test_startup_late_and_disabled_systems_run_once),
      cmocka_unit_test(test_startup_shutdown_runs_once_with_commands),
      cmocka_unit_test(test_startup_destroy_runs_pending_shutdown),
      cmocka_unit_test(test_startup_commit_request_inside_startup),
      cmocka_unit_test(test_startup_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
