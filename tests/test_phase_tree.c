/* SPDX-License-Identifier: MIT */
/*
 * Phase trees (phase.h, weft_phase_register_child()): a phase runs its own
 * systems, then its children in registration order (each with its
 * subtree), then the phases anchored to it; disabling a phase disables its
 * subtree; weft_world_run_phase() on a parent runs the subtree. The
 * program runs three ways, as in test_plain.c: the plain path (no pool),
 * the general serial path (time_inline) and a pool of two workers that
 * takes every system, with the same logs and digests.
 */
#define _GNU_SOURCE /* nanosleep (support/pipeline_test.h) */
#include "support/weft_test.h"

#include "support/pipeline_test.h"

#define PT_LOG 512u
#define PT_NODES 7u

typedef struct pt_run_t {
  fx_t f;
  /* The order the phases' systems ran in, by node code. */
  _Atomic uint32_t n;
  _Atomic uint32_t code[PT_LOG];
  /* Rows node B's reader saw in its last run. */
  _Atomic uint32_t b_rows;
  /* Node ids: Tree, A, A1, B, After (anchored to Tree), Physics (child of
   * FixedUpdate); [6] FixedUpdate itself. */
  weft_phase_t ph[PT_NODES];
  weft_system_t sys[PT_NODES];
} pt_run_t;

typedef struct pt_user_t {
  pt_run_t *run;
  uint32_t code;
} pt_user_t;

static pt_user_t pt_users[3][PT_NODES];

static void pt_note(pt_user_t *u) {
  uint32_t i = atomic_fetch_add(&u->run->n, 1);
  if (i < PT_LOG)
    atomic_store(&u->run->code[i], u->code);
}

/* A's system: spawns two entities with Pos and Vel. */
static int pt_spawn(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)it;
  pt_user_t *u = ctx->user;
  const weft_component_t comps[3] = {u->run->f.pos, u->run->f.vel, 0};
  for (uint32_t k = 0; k < 2; k++) {
    pos_t p = {(double)k, 2.0};
    vel_t v = {1.0, 0.5};
    const void *vals[2] = {&p, &v};
    weft_entity_t e;
    if (weft_cmd_spawn(ctx->cmd, comps, vals, &e))
      return WEFT_ENOMEM;
  }
  pt_note(u);
  return 0;
}

/* B's system: a task that counts the entities with Pos (A's sync point
 * came before it). */
static int pt_count(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)it;
  pt_user_t *u = ctx->user;
  weft_world_stats_t st;
  weft_world_stats(ctx->world, &st);
  atomic_store(&u->run->b_rows, st.alive);
  pt_note(u);
  return 0;
}

/* The others: move by Vel (Physics) or just note. */
static int pt_move(weft_sysctx_t *ctx, const weft_iter_t *it) {
  pos_t *p = it->columns[0];
  const vel_t *v = it->columns[1];
  for (uint32_t i = 0; i < it->count; i++) {
    p[i].x += v[i].dx * ctx->dt;
    p[i].y += v[i].dy * ctx->dt;
  }
  if (it->count && ctx->chunk == 0)
    pt_note(ctx->user);
  return 0;
}

static int pt_plain(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)it;
  pt_note(ctx->user);
  return 0;
}

static void pt_build(pt_run_t *r, uint32_t mode) {
  memset(r, 0, sizeof *r);
  r->f = fx_new_mode(mode);
  populate(&r->f, 10, 0);
  weft_world_t *w = r->f.w;
  weft_phase_t *ph = r->ph;
  assert_int_equal(
      weft_phase_register(w, "Tree", WEFT_PHASE_PRE_UPDATE, &ph[0]), WEFT_OK);
  assert_int_equal(weft_phase_register_child(w, ph[0], "A", &ph[1]), WEFT_OK);
  /* The anchored phase first: it still runs after the whole subtree. */
  assert_int_equal(weft_phase_register(w, "After", ph[0], &ph[4]), WEFT_OK);
  assert_int_equal(weft_phase_register_child(w, ph[0], "B", &ph[3]), WEFT_OK);
  assert_int_equal(weft_phase_register_child(w, ph[1], "A1", &ph[2]), WEFT_OK);
  assert_int_equal(
      weft_phase_register_child(w, WEFT_PHASE_FIXED_UPDATE, "Physics", &ph[5]),
      WEFT_OK);
  ph[6] = WEFT_PHASE_FIXED_UPDATE;
  static const char *const names[PT_NODES] = {"tree",  "a",       "a1",   "b",
                                              "after", "physics", "fixed"};
  for (uint32_t i = 0; i < PT_NODES; i++) {
    pt_users[mode][i] = (pt_user_t){r, i + 1};
    weft_system_fn fn = i == 1 ? pt_spawn : i == 3 ? pt_count : pt_plain;
    weft_system_desc_t d = sys_desc(names[i], ph[i], fn, &pt_users[mode][i]);
    if (i == 1) {
      d.cmd_write[0] = r->f.pos;
      d.cmd_write[1] = r->f.vel;
    }
    if (i == 5) {
      d.run = pt_move;
      d.query.include[0] = r->f.pos;
      d.query.include[1] = r->f.vel;
      d.term_access[1] = WEFT_ACCESS_READ;
    }
    r->sys[i] = sys_add(w, &d);
  }
}

/* Codes of one frame with every phase enabled: Tree, A, A1, B, After,
 * then the fixed step: FixedUpdate's own, Physics. */
static const uint32_t pt_frame_codes[] = {1, 2, 3, 4, 5, 7, 6};

static void pt_expect(const pt_run_t *r, uint32_t from, const uint32_t *want,
                      uint32_t n) {
  assert_int_equal(atomic_load(&r->n), from + n);
  for (uint32_t i = 0; i < n; i++)
    if (atomic_load(&r->code[from + i]) != want[i])
      fail_msg("entry %u: %u, expected %u", from + i,
               atomic_load(&r->code[from + i]), want[i]);
}

/* Children run after their parent's systems, in registration order, each
 * with its subtree, before the anchored phases; the same on all paths. */
static void test_phase_tree_children_run_in_order(void **state) {
  (void)state;
  static pt_run_t runs[3];
  uint64_t digest[3][4];
  for (uint32_t m = 0; m < 3; m++) {
    pt_run_t *r = &runs[m];
    pt_build(r, m);
    for (uint32_t f = 0; f < 4; f++) {
      uint32_t at = atomic_load(&r->n);
      progress_ok(r->f.w, FIXED);
      pt_expect(r, at, pt_frame_codes, 7);
      /* B sees A's spawns of this frame: A's sync point came first. */
      assert_int_equal(atomic_load(&r->b_rows), 10 + 2 * (f + 1));
      digest[m][f] = weft_world_digest(r->f.w);
    }
    weft_phase_t parent = 99;
    assert_int_equal(weft_phase_parent(r->f.w, r->ph[2], &parent), WEFT_OK);
    assert_int_equal(parent, r->ph[1]);
    assert_int_equal(weft_phase_parent(r->f.w, r->ph[4], &parent), WEFT_OK);
    assert_int_equal(parent, 0); /* anchored, not a child */
    assert_int_equal(weft_phase_parent(r->f.w, r->ph[5], &parent), WEFT_OK);
    assert_int_equal(parent, WEFT_PHASE_FIXED_UPDATE);
    /* Each phase keeps its own counters. */
    for (uint32_t i = 0; i < 6; i++)
      assert_int_equal(phstats(r->f.w, r->ph[i]).runs, 4);
    weft_phase_stats_t a = phstats(r->f.w, r->ph[1]);
    assert_int_equal(a.commands, 8);
    assert_int_equal(a.sync_points, 4);
    assert_int_equal(phstats(r->f.w, r->ph[0]).commands, 0);
  }
  for (uint32_t f = 0; f < 4; f++) {
    assert_int_equal(digest[0][f], digest[1][f]);
    assert_int_equal(digest[0][f], digest[2][f]);
  }
  assert_int_not_equal(digest[0][0], digest[0][3]);
  for (uint32_t m = 0; m < 3; m++)
    fx_free(&runs[m].f);
}

/* Disabling a phase disables its subtree (not its anchored phases); the
 * children's own flags survive; run_phase on a parent runs the subtree. */
static void test_phase_tree_disable_and_run_subtree(void **state) {
  (void)state;
  static pt_run_t run;
  for (uint32_t m = 0; m < 3; m++) {
    pt_run_t *r = &run;
    pt_build(r, m);
    weft_world_t *w = r->f.w;
    assert_int_equal(weft_phase_enable(w, r->ph[0], false), WEFT_OK);
    uint32_t at = atomic_load(&r->n);
    progress_ok(w, FIXED);
    const uint32_t off[] = {5, 7, 6}; /* After, then the fixed step */
    pt_expect(r, at, off, 3);
    assert_int_equal(phstats(w, r->ph[0]).runs, 1); /* ran, disabled */
    for (uint32_t i = 1; i <= 3; i++)
      assert_int_equal(phstats(w, r->ph[i]).runs, 0);
    assert_int_equal(sstats(w, r->sys[2]).runs, 0);
    /* A disabled child keeps its flag when the parent comes back. */
    assert_int_equal(weft_phase_enable(w, r->ph[1], false), WEFT_OK);
    assert_int_equal(weft_phase_enable(w, r->ph[0], true), WEFT_OK);
    at = atomic_load(&r->n);
    progress_ok(w, FIXED);
    const uint32_t no_a[] = {1, 4, 5, 7, 6};
    pt_expect(r, at, no_a, 5);
    assert_int_equal(phstats(w, r->ph[1]).runs, 1); /* ran, disabled */
    assert_int_equal(phstats(w, r->ph[2]).runs, 0); /* under it: skipped */
    assert_int_equal(weft_phase_enable(w, r->ph[1], true), WEFT_OK);
    /* A FixedUpdate child goes with FixedUpdate. */
    assert_int_equal(weft_phase_enable(w, WEFT_PHASE_FIXED_UPDATE, false),
                     WEFT_OK);
    at = atomic_load(&r->n);
    progress_ok(w, FIXED);
    pt_expect(r, at, pt_frame_codes, 5);
    assert_int_equal(weft_phase_enable(w, WEFT_PHASE_FIXED_UPDATE, true),
                     WEFT_OK);
    /* run_phase on the parent: the subtree, then the anchored phase. */
    at = atomic_load(&r->n);
    assert_int_equal(weft_world_run_phase(w, r->ph[0], FIXED), WEFT_OK);
    pt_expect(r, at, pt_frame_codes, 5);
    /* On a child: its subtree only. */
    at = atomic_load(&r->n);
    assert_int_equal(weft_world_run_phase(w, r->ph[1], FIXED), WEFT_OK);
    const uint32_t a_only[] = {2, 3};
    pt_expect(r, at, a_only, 2);
    fx_free(&r->f);
  }
}

static int pt_register_inside(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)it;
  weft_phase_t out = 0;
  *(int *)ctx->user =
      weft_phase_register_child(ctx->world, WEFT_PHASE_PRE_UPDATE, "x", &out);
  return 0;
}

/* Bad input: clear codes and messages; nothing half-registered. */
static void test_phase_tree_bad_input(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  weft_world_t *w = f.w;
  weft_phase_t ph = 0, out = 0;
  assert_int_equal(weft_phase_register_child(w, 99, "kid", &ph), WEFT_ENONAME);
  assert_non_null(strstr(weft_world_last_error(w), "unknown parent"));
  assert_int_equal(weft_phase_register_child(w, 0, "kid", &ph), WEFT_ENONAME);
  assert_int_equal(
      weft_phase_register_child(w, WEFT_PHASE_PRE_UPDATE, NULL, &ph),
      WEFT_EINVAL);
  assert_int_equal(weft_phase_register_child(w, WEFT_PHASE_PRE_UPDATE, "", &ph),
                   WEFT_EINVAL);
  assert_int_equal(
      weft_phase_register_child(w, WEFT_PHASE_PRE_UPDATE, "kid", NULL),
      WEFT_EINVAL);
  assert_int_equal(weft_phase_register_child(NULL, 1, "kid", &ph), WEFT_EINVAL);
  assert_int_equal(
      weft_phase_register_child(w, WEFT_PHASE_PRE_UPDATE, "FixedUpdate", &ph),
      WEFT_EEXIST);
  assert_int_equal(
      weft_phase_register_child(w, WEFT_PHASE_PRE_UPDATE, "kid", &ph), WEFT_OK);
  assert_int_equal(weft_phase_register_child(w, ph, "kid", &out), WEFT_EEXIST);
  assert_int_equal(weft_phase_parent(w, 99, &out), WEFT_ENONAME);
  assert_int_equal(weft_phase_parent(w, ph, NULL), WEFT_EINVAL);
  /* Not during a frame. */
  int inside = 0;
  weft_system_desc_t d =
      sys_desc("reg", WEFT_PHASE_FIXED_UPDATE, pt_register_inside, &inside);
  sys_add(w, &d);
  progress_ok(w, FIXED);
  assert_int_equal(inside, WEFT_EBUSY);
  /* At most WEFT_MAX_PHASES, children included. */
  char name[32];
  uint32_t made = 0;
  int rc = WEFT_OK;
  for (uint32_t i = 0; rc == WEFT_OK; i++) {
    snprintf(name, sizeof name, "deep%u", i);
    rc = weft_phase_register_child(w, ph, name, &ph);
    made += rc == WEFT_OK;
  }
  assert_int_equal(rc, WEFT_ETOOMANY);
  assert_int_equal(made, WEFT_MAX_PHASES - WEFT_PHASE_SHUTDOWN - 1);
  /* A deep chain still runs, each level once. */
  progress_ok(w, FIXED);
  assert_int_equal(phstats(w, ph).runs, 1);
  fx_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_phase_tree_children_run_in_order),
      cmocka_unit_test(test_phase_tree_disable_and_run_subtree),
      cmocka_unit_test(test_phase_tree_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
