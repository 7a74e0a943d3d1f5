/* SPDX-License-Identifier: MIT */
/*
 * Plain segments (pipeline.c, run_plain()): a world without a pool runs a
 * segment with no `changed` filter, run condition, `write` list or
 * exclusive system on a shorter path, and plans of few visits keep their
 * iterators. These tests run one program three ways, on that path (no
 * pool), on the general serial path (no pool, time_inline) and on a pool
 * of two workers, and require the same world, the same change versions
 * and the same counters from all three, frame after frame, while the
 * program changes the world's structure, enables and disables systems
 * from callbacks and removes one.
 */
#define _GNU_SOURCE /* nanosleep (support/pipeline_test.h) */
#include "support/weft_test.h"

#include "support/pipeline_test.h"

#define PL_FRAMES 24u
#define PL_SYSTEMS 8u

/* What one run of the program observed. Callbacks may run on workers:
 * atomics, checked after each frame. */
typedef struct pl_run_t {
  fx_t f;
  weft_system_t ids[PL_SYSTEMS];
  _Atomic uint32_t frame;
  /* The change version each system's callbacks saw in each frame (0: did
   * not run), and whether its chunks disagreed on it. */
  _Atomic uint32_t version[PL_SYSTEMS][PL_FRAMES];
  _Atomic uint32_t last_run[PL_SYSTEMS][PL_FRAMES];
  _Atomic uint32_t mixed;
  /* Rows each system saw per frame. */
  _Atomic uint64_t rows[PL_SYSTEMS][PL_FRAMES];
  bool victim_removed;
  /* After each frame: the world's digest and change version, and each
   * system's counters (victim's stay zero once it is gone). */
  uint64_t digest[PL_FRAMES];
  uint32_t change_version[PL_FRAMES];
  weft_system_stats_t stats[PL_FRAMES][PL_SYSTEMS];
} pl_run_t;

typedef struct pl_user_t {
  pl_run_t *run;
  uint32_t index;
} pl_user_t;

static pl_user_t pl_users[3][PL_SYSTEMS];

static void pl_note(weft_sysctx_t *ctx, uint64_t rows) {
  pl_user_t *u = ctx->user;
  pl_run_t *r = u->run;
  uint32_t f = atomic_load(&r->frame);
  uint32_t prev = 0;
  if (!atomic_compare_exchange_strong(&r->version[u->index][f], &prev,
                                      ctx->version) &&
      prev != ctx->version)
    atomic_fetch_add(&r->mixed, 1);
  atomic_store(&r->last_run[u->index][f], ctx->last_run);
  atomic_fetch_add(&r->rows[u->index][f], rows);
}

/* Pos += Vel * dt. */
static int pl_move(weft_sysctx_t *ctx, const weft_iter_t *it) {
  pos_t *p = it->columns[0];
  const vel_t *v = it->columns[1];
  for (uint32_t i = 0; i < it->count; i++) {
    p[i].x += v[i].dx * ctx->dt;
    p[i].y += v[i].dy * ctx->dt;
  }
  pl_note(ctx, it->count);
  return 0;
}

/* Mark = a function of Pos. */
static int pl_mark(weft_sysctx_t *ctx, const weft_iter_t *it) {
  const pos_t *p = it->columns[0];
  uint32_t *m = it->columns[1];
  for (uint32_t i = 0; i < it->count; i++)
    m[i] = (uint32_t)(int64_t)(p[i].x * 3.0) % 101u;
  pl_note(ctx, it->count);
  return 0;
}

/* Tags every entity whose Mark is a multiple of 4 (commands). */
static int pl_tag(weft_sysctx_t *ctx, const weft_iter_t *it) {
  const uint32_t *m = it->columns[0];
  pl_user_t *u = ctx->user;
  for (uint32_t i = 0; i < it->count; i++)
    if (m[i] % 4 == 0 &&
        weft_cmd_add(ctx->cmd, it->entities[i], u->run->f.tag, NULL) != 0)
      return WEFT_ENOMEM;
  pl_note(ctx, it->count);
  return 0;
}

/* Untags the tagged entities whose Mark is odd, despawns those past 90. */
static int pl_untag(weft_sysctx_t *ctx, const weft_iter_t *it) {
  const uint32_t *m = it->columns[0];
  pl_user_t *u = ctx->user;
  weft_component_t tag = u->run->f.tag;
  for (uint32_t i = 0; i < it->count; i++) {
    int rc = 0;
    if (m[i] > 90)
      rc = weft_cmd_despawn(ctx->cmd, it->entities[i]);
    else if (m[i] % 2)
      rc = weft_cmd_remove(ctx->cmd, it->entities[i], tag);
    if (rc)
      return rc;
  }
  pl_note(ctx, it->count);
  return 0;
}

/* A task in the segment of `mark` and `victim`: toggles `mark` and
 * removes `victim` at frame 9, from the driving thread. */
static int pl_toggler(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)it;
  pl_user_t *u = ctx->user;
  pl_run_t *r = u->run;
  uint32_t f = atomic_load(&r->frame);
  if (f % 4 == 1 && weft_system_enable(ctx->world, r->ids[1], false))
    return WEFT_EINVAL;
  if (f % 4 == 3 && weft_system_enable(ctx->world, r->ids[1], true))
    return WEFT_EINVAL;
  if (f == 9) {
    if (weft_system_remove(ctx->world, r->ids[5]))
      return WEFT_EINVAL;
    r->victim_removed = true;
  }
  pl_note(ctx, 0);
  return 0;
}

/* A task: spawns three entities a frame. */
static int pl_spawner(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)it;
  pl_user_t *u = ctx->user;
  pl_run_t *r = u->run;
  uint32_t f = atomic_load(&r->frame);
  const weft_component_t comps[3] = {r->f.pos, r->f.vel, 0};
  for (uint32_t k = 0; k < 3; k++) {
    pos_t p = {(double)(f * 3 + k), 1.0};
    vel_t v = {0.5 + k, -0.25};
    const void *vals[2] = {&p, &v};
    weft_entity_t e;
    int rc = weft_cmd_spawn(ctx->cmd, comps, vals, &e);
    if (rc)
      return rc;
  }
  pl_note(ctx, 0);
  return 0;
}

/* Reads Pos of the tagged entities (few chunks: the plan's iterators). */
static int pl_reader(weft_sysctx_t *ctx, const weft_iter_t *it) {
  const pos_t *p = it->columns[0];
  volatile double s = 0;
  for (uint32_t i = 0; i < it->count; i++)
    s += p[i].x;
  (void)s;
  pl_note(ctx, it->count);
  return 0;
}

static void pl_build(pl_run_t *r, uint32_t mode) {
  memset(r, 0, sizeof *r);
  /* 4 KiB chunks: Pos, Vel and Mark rows are 44 bytes, so the movers
   * visit more chunks than a plan keeps iterators for, the tagged ones
   * fewer. */
  r->f = fx_new(mode == 2 ? 2 : 0, 4096);
  weft_pipeline_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.fixed_dt = FIXED;
  pc.time_inline = mode == 1;
  pc.inline_rows = mode == 2 ? 1 : 0; /* the pool takes everything */
  assert_int_equal(weft_pipeline_configure(r->f.w, &pc), WEFT_OK);
  populate(&r->f, 4000, r->f.mark);

  static const char *const names[PL_SYSTEMS] = {
      "toggler", "mark", "move", "tag", "untag", "victim", "reader", "spawner"};
  static const weft_system_fn fns[PL_SYSTEMS] = {
      pl_toggler, pl_mark,   pl_move,   pl_tag,
      pl_untag,   pl_reader, pl_reader, pl_spawner};
  for (uint32_t i = 0; i < PL_SYSTEMS; i++) {
    pl_users[mode][i] = (pl_user_t){r, i};
    weft_system_desc_t d =
        sys_desc(names[i], WEFT_PHASE_FIXED_UPDATE, fns[i], &pl_users[mode][i]);
    switch (i) {
    case 0: /* enables and removes systems: the driving thread */
      d.flags = WEFT_SYSTEM_MAIN_THREAD;
      d.before[0] = "mark";
      d.before[1] = "victim";
      break;
    case 7:
      d.cmd_write[0] = r->f.pos;
      d.cmd_write[1] = r->f.vel;
      break;
    case 1:
      d.query.include[0] = r->f.pos;
      d.query.include[1] = r->f.mark;
      d.term_access[0] = WEFT_ACCESS_READ;
      d.term_access[1] = WEFT_ACCESS_WRITE;
      break;
    case 2:
      d.query.include[0] = r->f.pos;
      d.query.include[1] = r->f.vel;
      d.term_access[0] = WEFT_ACCESS_WRITE;
      d.term_access[1] = WEFT_ACCESS_READ;
      break;
    case 3:
      d.query.include[0] = r->f.mark;
      d.query.exclude[0] = r->f.tag;
      d.term_access[0] = WEFT_ACCESS_READ;
      d.cmd_write[0] = r->f.tag;
      break;
    case 4:
      d.query.include[0] = r->f.mark;
      d.query.include[1] = r->f.tag;
      d.term_access[0] = WEFT_ACCESS_READ;
      d.term_access[1] = WEFT_ACCESS_READ;
      d.cmd_write[0] = r->f.tag;
      d.flags = WEFT_SYSTEM_DESPAWNS;
      break;
    default: /* victim, reader: the tagged entities' positions */
      d.query.include[0] = r->f.pos;
      d.query.include[1] = r->f.tag;
      d.term_access[0] = WEFT_ACCESS_READ;
      d.term_access[1] = WEFT_ACCESS_READ;
      break;
    }
    r->ids[i] = sys_add(r->f.w, &d);
  }
  assert_int_equal(weft_schedule_build(r->f.w), WEFT_OK);
  /* The toggler shares a segment with the systems it toggles. */
  assert_int_equal(sinfo(r->f.w, r->ids[0]).segment,
                   sinfo(r->f.w, r->ids[1]).segment);
  assert_int_equal(sinfo(r->f.w, r->ids[0]).segment,
                   sinfo(r->f.w, r->ids[5]).segment);
}

/* Runs frame f of run r and records what it left. */
static void pl_frame(pl_run_t *r, uint32_t f) {
  atomic_store(&r->frame, f);
  progress_ok(r->f.w, FIXED);
  r->digest[f] = weft_world_digest(r->f.w);
  r->change_version[f] = weft_world_change_version(r->f.w);
  for (uint32_t i = 0; i < PL_SYSTEMS; i++)
    if (!(r->victim_removed && i == 5))
      r->stats[f][i] = sstats(r->f.w, r->ids[i]);
}

/* Runs the program in mode m (0: plain, 1: time_inline, 2: two workers). */
static void pl_run(pl_run_t *r, uint32_t mode) {
  pl_build(r, mode);
  for (uint32_t f = 0; f < PL_FRAMES; f++)
    pl_frame(r, f);
  fx_free(&r->f);
}

static void pl_compare(const pl_run_t *a, const pl_run_t *b) {
  for (uint32_t f = 0; f < PL_FRAMES; f++) {
    assert_int_equal(a->digest[f], b->digest[f]);
    assert_int_equal(a->change_version[f], b->change_version[f]);
    for (uint32_t i = 0; i < PL_SYSTEMS; i++) {
      if (atomic_load(&a->version[i][f]) != atomic_load(&b->version[i][f]))
        fail_msg("frame %u, system %u: version %u against %u", f, i,
                 atomic_load(&a->version[i][f]),
                 atomic_load(&b->version[i][f]));
      assert_int_equal(atomic_load(&a->last_run[i][f]),
                       atomic_load(&b->last_run[i][f]));
      assert_int_equal(atomic_load(&a->rows[i][f]),
                       atomic_load(&b->rows[i][f]));
      const weft_system_stats_t *sa = &a->stats[f][i], *sb = &b->stats[f][i];
      assert_int_equal(sa->runs, sb->runs);
      assert_int_equal(sa->skipped, sb->skipped);
      assert_int_equal(sa->entities, sb->entities);
      assert_int_equal(sa->chunks, sb->chunks);
    }
  }
  assert_int_equal(atomic_load(&a->mixed), 0);
  assert_int_equal(atomic_load(&b->mixed), 0);
}

/* The three ways give the same world, versions and counters. */
static void test_plain_matches_general_and_pooled_paths(void **state) {
  (void)state;
  static pl_run_t runs[3];
  for (uint32_t m = 0; m < 3; m++)
    pl_run(&runs[m], m);
  pl_compare(&runs[0], &runs[1]);
  pl_compare(&runs[0], &runs[2]);
  /* The program did what it is there for. */
  const pl_run_t *r = &runs[0];
  uint32_t mark_off = 0, victim_after = 0;
  for (uint32_t f = 0; f < PL_FRAMES; f++) {
    mark_off += atomic_load(&r->version[1][f]) == 0;
    victim_after += f > 9 && atomic_load(&r->version[5][f]) != 0;
  }
  assert_true(mark_off > 0 && mark_off < PL_FRAMES);
  assert_int_equal(victim_after, 0);
  assert_int_not_equal(atomic_load(&r->version[5][9]), 0); /* ran that frame */
  assert_true(atomic_load(&r->rows[5][9]) > 0);
  assert_true(atomic_load(&r->rows[6][PL_FRAMES - 1]) > 0);
  assert_int_not_equal(r->digest[0], r->digest[PL_FRAMES - 1]);
}

/* A callback that disables a later system of its segment does not stop
 * that system's run in the same segment (every system's turn is decided
 * before any callback runs); the next frame it is off. */
static void test_plain_toggles_apply_from_the_next_segment(void **state) {
  (void)state;
  static pl_run_t run;
  pl_run(&run, 0);
  /* Disabled during frames 1 and 5, re-enabled during 3 and 7, each time
   * from the next frame on. */
  const bool ran[8] = {true, true, false, false, true, true, false, false};
  for (uint32_t f = 0; f < 8; f++)
    if ((atomic_load(&run.version[1][f]) != 0) != ran[f])
      fail_msg("frame %u: mark %s", f, ran[f] ? "did not run" : "ran");
}

/* A phase without systems counts its runs and takes no time. */
static void test_plain_empty_phase_is_counted_untimed(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  configure(f.w, FIXED, 0, WEFT_OVERLOAD_DROP, 0, 0);
  for (uint32_t i = 0; i < 5; i++)
    progress_ok(f.w, FIXED);
  weft_phase_stats_t st = phstats(f.w, WEFT_PHASE_PRE_UPDATE);
  assert_int_equal(st.runs, 5);
  assert_int_equal(st.wall_ns, 0);
  st = phstats(f.w, WEFT_PHASE_FIXED_UPDATE);
  assert_int_equal(st.runs, 5);
  fx_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plain_matches_general_and_pooled_paths),
      cmocka_unit_test(test_plain_toggles_apply_from_the_next_segment),
      cmocka_unit_test(test_plain_empty_phase_is_counted_untimed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
