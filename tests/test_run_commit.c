/* SPDX-License-Identifier: MIT */
/*
 * Run-time commits (context.h, weft_sysctx_commit()): a system's request
 * holds its dependents in its segment until a sync point has applied what
 * the segment recorded, so they see it in the same frame; systems that do
 * not depend on it run as usual. The program runs three ways, as in
 * test_plain.c (the plain path, the general serial path, a pool of two
 * workers that takes every system and splits the big one) and a fourth
 * (a pool of two whose segments all run inline), each with and
 * without requests, and an oracle says what every system must see.
 */
#define _GNU_SOURCE /* nanosleep (support/pipeline_test.h) */
#include "support/weft_test.h"

#include "support/pipeline_test.h"

#define RC_FRAMES 12u
#define RC_SYSTEMS 8u
#define RC_POP 4000u
/* Plain, general serial, pool dispatching all, pool running all inline. */
#define RC_MODES 4u

enum { SPAWNER, READER, TAGGED, BYSTANDER, SPLITTER, AFTER_SPLIT, ECHO, ECHO2 };

static bool rc_spawner_asks(uint32_t f) {
  return f % 2 == 0;
}
static bool rc_reader_asks(uint32_t f) {
  return f % 3 == 0;
}
static bool rc_splitter_asks(uint32_t f) {
  return f % 4 == 1;
}

typedef struct rc_run_t {
  fx_t f;
  weft_component_t heat, tag2;
  bool ask; /* the systems call weft_sysctx_commit() */
  _Atomic uint32_t frame;
  _Atomic uint32_t bad;
  _Atomic uint32_t rows[RC_SYSTEMS][RC_FRAMES];
  _Atomic uint32_t split_tagged[RC_FRAMES]; /* rows the splitter tagged */
  weft_system_t ids[RC_SYSTEMS];
  uint64_t digest[RC_FRAMES];
  uint32_t version[RC_FRAMES];
  uint64_t split_jobs[RC_FRAMES]; /* the splitter's pool jobs so far */
  weft_phase_stats_t fixed;
} rc_run_t;

typedef struct rc_user_t {
  rc_run_t *run;
  uint32_t index;
} rc_user_t;

static rc_user_t rc_users[2][RC_MODES][RC_SYSTEMS];

static void rc_count(weft_sysctx_t *ctx, uint32_t rows) {
  rc_user_t *u = ctx->user;
  atomic_fetch_add(&u->run->rows[u->index][atomic_load(&u->run->frame)], rows);
}

static void rc_ask(weft_sysctx_t *ctx) {
  rc_user_t *u = ctx->user;
  if (weft_sysctx_commit(ctx) != WEFT_OK)
    atomic_fetch_add(&u->run->bad, 1);
}

/* A task: three entities with Pos, Vel and Mark a frame; asks on even
 * frames. Declares no cmd_write, so nothing but the request puts a sync
 * point between it and the reader. */
static int rc_spawner(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)it;
  rc_user_t *u = ctx->user;
  rc_run_t *r = u->run;
  uint32_t f = atomic_load(&r->frame);
  const weft_component_t comps[4] = {r->f.pos, r->f.vel, r->f.mark, 0};
  for (uint32_t k = 0; k < 3; k++) {
    pos_t p = {(double)(f * 3 + k), 1.0};
    vel_t v = {0.5, -0.25};
    uint32_t m = f;
    const void *vals[3] = {&p, &v, &m};
    weft_entity_t e;
    if (weft_cmd_spawn(ctx->cmd, comps, vals, &e))
      return WEFT_ENOMEM;
  }
  if (r->ask && rc_spawner_asks(f))
    rc_ask(ctx);
  return 0;
}

/* After the spawner: counts the spawned entities (Pos and Mark); every
 * third frame tags all it sees and asks. */
static int rc_reader(weft_sysctx_t *ctx, const weft_iter_t *it) {
  rc_user_t *u = ctx->user;
  rc_run_t *r = u->run;
  uint32_t f = atomic_load(&r->frame);
  if (rc_reader_asks(f)) {
    for (uint32_t i = 0; i < it->count; i++)
      if (weft_cmd_add(ctx->cmd, it->entities[i], r->f.tag, NULL))
        return WEFT_ENOMEM;
    if (r->ask)
      rc_ask(ctx);
  }
  rc_count(ctx, it->count);
  return 0;
}

/* Counts rows: tagged (after the reader), with Vel (the bystander,
 * which depends on none of the others), Pos and Mark (echo2, which
 * depends on the spawner through the task echo alone). */
static int rc_rows(weft_sysctx_t *ctx, const weft_iter_t *it) {
  rc_count(ctx, it ? it->count : 0); /* a task counts nothing */
  return 0;
}

/* Over every row with Heat, in many small jobs on the pool; on some
 * frames the chunk with sequence 1, on whichever worker runs it, tags its
 * rows with Tag2 and asks. */
static int rc_splitter(weft_sysctx_t *ctx, const weft_iter_t *it) {
  rc_user_t *u = ctx->user;
  rc_run_t *r = u->run;
  uint32_t f = atomic_load(&r->frame);
  double *h = it->columns[0];
  for (uint32_t i = 0; i < it->count; i++)
    h[i] += ctx->dt;
  if (ctx->chunk == 1 && rc_splitter_asks(f)) {
    for (uint32_t i = 0; i < it->count; i++)
      if (weft_cmd_add(ctx->cmd, it->entities[i], r->tag2, NULL))
        return WEFT_ENOMEM;
    atomic_fetch_add(&r->split_tagged[f], it->count);
    if (r->ask)
      rc_ask(ctx);
  }
  rc_count(ctx, it->count);
  return 0;
}

static void rc_build(rc_run_t *r, uint32_t mode, bool ask) {
  memset(r, 0, sizeof *r);
  r->ask = ask;
  r->f = fx_new(mode >= 2 ? 2 : 0, 4096);
  r->heat = wt_register(r->f.w, "Heat", sizeof(double), 0);
  r->tag2 = wt_register_tag(r->f.w, "Tag2");
  weft_pipeline_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.fixed_dt = FIXED;
  pc.time_inline = mode == 1;
  /* Mode 3 keeps every segment on the driving thread while a pool
   * exists: the serial path that checks for requests after each system. */
  pc.inline_rows = mode == 2 ? 1 : mode == 3 ? 1u << 30 : 0;
  assert_int_equal(weft_pipeline_configure(r->f.w, &pc), WEFT_OK);
  populate(&r->f, RC_POP, r->heat);
  static const char *const names[RC_SYSTEMS] = {
      "spawner",  "reader",      "tagged", "bystander",
      "splitter", "after_split", "echo",   "echo2"};
  static const weft_system_fn fns[RC_SYSTEMS] = {
      rc_spawner,  rc_reader, rc_rows, rc_rows,
      rc_splitter, rc_rows,   rc_rows, rc_rows};
  for (uint32_t i = 0; i < RC_SYSTEMS; i++) {
    rc_users[ask][mode][i] = (rc_user_t){r, i};
    weft_system_desc_t d = sys_desc(names[i], WEFT_PHASE_FIXED_UPDATE, fns[i],
                                    &rc_users[ask][mode][i]);
    switch (i) {
    case SPAWNER:
      d.before[0] = "reader";
      break;
    case READER:
      d.query.include[0] = r->f.pos;
      d.query.include[1] = r->f.mark;
      d.term_access[0] = WEFT_ACCESS_READ;
      d.term_access[1] = WEFT_ACCESS_READ;
      d.before[0] = "tagged";
      break;
    case TAGGED:
      d.query.include[0] = r->f.pos;
      d.query.include[1] = r->f.tag;
      d.term_access[0] = WEFT_ACCESS_READ;
      d.term_access[1] = WEFT_ACCESS_NONE;
      break;
    case BYSTANDER:
      d.query.include[0] = r->f.vel;
      d.term_access[0] = WEFT_ACCESS_READ;
      break;
    case SPLITTER:
      d.query.include[0] = r->heat;
      d.term_access[0] = WEFT_ACCESS_WRITE;
      d.batch = 64;
      break;
    case AFTER_SPLIT: /* it reads what the splitter writes */
      d.query.include[0] = r->heat;
      d.query.include[1] = r->tag2;
      d.term_access[0] = WEFT_ACCESS_READ;
      d.term_access[1] = WEFT_ACCESS_NONE;
      break;
    case ECHO: /* the spawner's second dependent, a task */
      d.after[0] = "spawner";
      break;
    default: /* echo2: reachable from the spawner through echo alone */
      d.query.include[0] = r->f.pos;
      d.query.include[1] = r->f.mark;
      d.term_access[0] = WEFT_ACCESS_READ;
      d.term_access[1] = WEFT_ACCESS_READ;
      d.after[0] = "echo";
      break;
    }
    r->ids[i] = sys_add(r->f.w, &d);
  }
  assert_int_equal(weft_schedule_build(r->f.w), WEFT_OK);
  /* One segment: only requests put sync points inside it. */
  for (uint32_t i = 0; i < RC_SYSTEMS; i++)
    assert_int_equal(sinfo(r->f.w, r->ids[i]).segment, 0);
  assert_true(weft_system_edge(r->f.w, r->ids[SPLITTER], r->ids[AFTER_SPLIT]));
}

static void rc_run(rc_run_t *r, uint32_t mode, bool ask) {
  rc_build(r, mode, ask);
  for (uint32_t f = 0; f < RC_FRAMES; f++) {
    atomic_store(&r->frame, f);
    progress_ok(r->f.w, FIXED);
    r->digest[f] = weft_world_digest(r->f.w);
    r->version[f] = weft_world_change_version(r->f.w);
    r->split_jobs[f] = sstats(r->f.w, r->ids[SPLITTER]).jobs;
  }
  r->fixed = phstats(r->f.w, WEFT_PHASE_FIXED_UPDATE);
  assert_int_equal(atomic_load(&r->bad), 0);
}

static void rc_same(const rc_run_t *a, const rc_run_t *b) {
  for (uint32_t f = 0; f < RC_FRAMES; f++) {
    assert_int_equal(a->digest[f], b->digest[f]);
    assert_int_equal(a->version[f], b->version[f]);
    for (uint32_t i = 0; i < RC_SYSTEMS; i++)
      if (atomic_load(&a->rows[i][f]) != atomic_load(&b->rows[i][f]))
        fail_msg("frame %u, system %u: %u rows against %u", f, i,
                 atomic_load(&a->rows[i][f]), atomic_load(&b->rows[i][f]));
  }
  assert_int_equal(a->fixed.sync_points, b->fixed.sync_points);
  assert_int_equal(a->fixed.commands, b->fixed.commands);
  for (uint32_t i = 0; i < RC_SYSTEMS; i++) {
    weft_system_stats_t sa = sstats(a->f.w, a->ids[i]);
    weft_system_stats_t sb = sstats(b->f.w, b->ids[i]);
    assert_int_equal(sa.runs, RC_FRAMES);
    assert_int_equal(sa.runs, sb.runs);
    assert_int_equal(sa.entities, sb.entities);
    assert_int_equal(sa.chunks, sb.chunks);
  }
}

/* What each system must see, from a model of the rules. */
static void rc_oracle(const rc_run_t *r) {
  uint32_t tagged = 0, tagged2 = 0;
  for (uint32_t f = 0; f < RC_FRAMES; f++) {
    bool s_asked = r->ask && rc_spawner_asks(f);
    bool r_asked = r->ask && rc_reader_asks(f);
    bool x_asked = r->ask && rc_splitter_asks(f);
    uint32_t reader = 3 * f + (s_asked ? 3 : 0);
    if (rc_reader_asks(f) && r_asked)
      tagged = reader; /* the reader tags all it sees */
    uint32_t split = atomic_load(&r->split_tagged[f]);
    if (x_asked)
      tagged2 += split;
    const uint32_t want[RC_SYSTEMS] = {0,      reader,  tagged, RC_POP + 3 * f,
                                       RC_POP, tagged2, 0,      reader};
    for (uint32_t i = 0; i < RC_SYSTEMS; i++)
      if (atomic_load(&r->rows[i][f]) != want[i])
        fail_msg("ask %d, frame %u, system %u: %u rows, expected %u",
                 (int)r->ask, f, i, atomic_load(&r->rows[i][f]), want[i]);
    /* Without a request the tags land at the frame's end. */
    if (rc_reader_asks(f) && !r_asked)
      tagged = reader;
    if (!x_asked)
      tagged2 += split;
  }
}

/* Requests make the structure visible to the held systems in the same
 * frame, and only to them; all four ways agree, and without requests
 * every frame has its one sync point, as before. */
static void test_run_commit_holds_dependents_until_a_sync_point(void **state) {
  (void)state;
  static rc_run_t runs[2][RC_MODES];
  for (uint32_t ask = 0; ask < 2; ask++) {
    for (uint32_t m = 0; m < RC_MODES; m++)
      rc_run(&runs[ask][m], m, ask);
    for (uint32_t m = 1; m < RC_MODES; m++)
      rc_same(&runs[ask][0], &runs[ask][m]);
    rc_oracle(&runs[ask][0]);
  }
  /* The splitter tagged something on its frames (the oracle relies on
   * it), and on the pool it ran as several jobs. */
  assert_true(atomic_load(&runs[1][0].split_tagged[1]) > 0);
  assert_true(sstats(runs[1][2].f.w, runs[1][2].ids[SPLITTER]).jobs >
              RC_FRAMES);
  /* Without requests: one sync point a frame (the spawner always
   * spawns). With them: more. */
  assert_int_equal(runs[0][0].fixed.sync_points, RC_FRAMES);
  assert_true(runs[1][0].fixed.sync_points > RC_FRAMES);
  /* Mode 3 dispatched its first frame, where its tasks, not yet
   * measured, count as expensive; after that everything ran inline (the
   * splitter took no more jobs), so those frames' requests went through
   * the serial path's check. */
  const rc_run_t *inl = &runs[1][3];
  assert_int_equal(inl->split_jobs[RC_FRAMES - 1], inl->split_jobs[1]);
  for (uint32_t ask = 0; ask < 2; ask++)
    for (uint32_t m = 0; m < RC_MODES; m++)
      fx_free(&runs[ask][m].f);
}

static weft_sysctx_t rc_kept;

static int rc_keep(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)it;
  rc_kept = *ctx;
  return 0;
}

/* Bad input: outside a running system a request is refused. */
static void test_run_commit_outside_a_system_is_refused(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  assert_int_equal(weft_sysctx_commit(NULL), WEFT_EINVAL);
  weft_sysctx_t forged;
  memset(&forged, 0, sizeof forged);
  assert_int_equal(weft_sysctx_commit(&forged), WEFT_EINVAL);
  forged.world = f.w;
  assert_int_equal(weft_sysctx_commit(&forged), WEFT_EINVAL);
  assert_non_null(strstr(weft_world_last_error(f.w), "not a system"));
  weft_system_desc_t d =
      sys_desc("keep", WEFT_PHASE_FIXED_UPDATE, rc_keep, NULL);
  sys_add(f.w, &d);
  progress_ok(f.w, FIXED);
  /* The context of a run that ended. */
  assert_int_equal(weft_sysctx_commit(&rc_kept), WEFT_EINVAL);
  assert_non_null(strstr(weft_world_last_error(f.w), "no frame"));
  /* Nothing was left pending: the next frame has no extra sync point. */
  progress_ok(f.w, FIXED);
  assert_int_equal(phstats(f.w, WEFT_PHASE_FIXED_UPDATE).sync_points, 0);
  fx_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_run_commit_holds_dependents_until_a_sync_point),
      cmocka_unit_test(test_run_commit_outside_a_system_is_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
