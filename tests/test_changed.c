/* SPDX-License-Identifier: MIT */
/*
 * Change tracking on every write path (system.h, "Change versions"): a
 * system with a `changed` filter must visit exactly the chunks written
 * since its previous run, whichever call wrote them: weft_set(),
 * weft_get_mut(), weft_get_field(), a set staged in a scope, commands
 * applied between frames or at a sync point (weft_cmd_set(),
 * weft_cmd_set_query()), weft_get_many_ex() with a write mask (also from
 * several pool workers at once), a system writing while its reader's
 * segment runs, the built-in health system, and the stamps the scheduler
 * makes for a `write` list it cannot see the writes of. After one visit a
 * chunk is skipped again until the next write.
 *
 * Callbacks that may run on pool workers never call cmocka's asserts (they
 * jump); they count in atomics that the test checks after the frame.
 */
#include "support/weft_test.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>

#include <weft/builtin.h>

#define FIXED 0.1
#define N 2000u /* entities of Pos and Hp: 8 chunks of 4 KiB */

typedef struct vec_t {
  float x, y;
} vec_t;

/* A `changed` reader: chunks and rows visited, and the chunks among them
 * holding one of the targets. */
typedef struct reader_t {
  const weft_entity_t *targets;
  uint32_t ntargets;
  _Atomic uint32_t chunks, rows, hits;
} reader_t;

typedef struct cx_t {
  weft_world_t *w;
  weft_pool_t *pool;
  weft_component_t pos, hp, mark, src;
  weft_entity_t es[N];
  weft_query_t *all; /* Pos */
  reader_t rd;
} cx_t;

static void cx_configure(cx_t *c, uint32_t inline_rows) {
  weft_pipeline_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.fixed_dt = FIXED;
  pc.max_steps = 8;
  pc.net_dt = -1.0;
  pc.inline_rows = inline_rows;
  assert_int_equal(weft_pipeline_configure(c->w, &pc), WEFT_OK);
}

/* A world of N entities with Pos (fields x, y) and Hp, in 4 KiB chunks. */
static cx_t *cx_new(uint32_t workers) {
  cx_t *c = calloc(1, sizeof *c);
  assert_non_null(c);
  c->w = wt_world_pooled(workers, 4096, &c->pool);
  cx_configure(c, 0);
  const weft_field_desc_t fields[2] = {WEFT_FIELD(vec_t, x),
                                       WEFT_FIELD(vec_t, y)};
  weft_component_desc_t d = WEFT_COMPONENT_DESC(vec_t);
  d.name = "Pos";
  d.fields = fields;
  d.field_count = 2;
  assert_int_equal(weft_component_register(c->w, &d, &c->pos), WEFT_OK);
  c->hp = wt_register(c->w, "Hp", sizeof(float), 0);
  c->mark = wt_register(c->w, "Mark", sizeof(uint32_t), 0);
  c->src = wt_register_tag(c->w, "Src");
  const weft_component_t comps[] = {c->pos, c->hp, 0};
  assert_int_equal(weft_spawn_batch(c->w, N, comps, NULL, NULL, c->es),
                   WEFT_OK);
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = c->pos;
  assert_int_equal(weft_query_create(c->w, &qd, &c->all), WEFT_OK);
  return c;
}

static void cx_free(cx_t *c) {
  weft_world_destroy(c->w); /* before the pool it uses */
  if (c->pool)
    weft_pool_destroy(c->pool);
  free(c);
}

static void progress_ok(weft_world_t *w) {
  int rc = weft_world_progress(w, FIXED);
  if (rc != WEFT_OK)
    fail_msg("progress: %s (%s)", weft_strerror(rc), weft_world_last_error(w));
}

static bool holds_target(const reader_t *r, const weft_iter_t *it) {
  for (uint32_t i = 0; i < it->count; i++)
    for (uint32_t t = 0; t < r->ntargets; t++)
      if (it->entities[i] == r->targets[t])
        return true;
  return false;
}

static int read_changed(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  reader_t *r = ctx->user;
  atomic_fetch_add(&r->chunks, 1);
  atomic_fetch_add(&r->rows, chunk->count);
  if (holds_target(r, chunk))
    atomic_fetch_add(&r->hits, 1);
  return 0;
}

/* Registers the reader of @p comp's changes in @p phase. */
static void add_reader(cx_t *c, weft_component_t comp, weft_phase_t phase) {
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "changed.reader";
  d.phase = phase;
  d.query.include[0] = comp;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.changed[0] = comp;
  d.run = read_changed;
  d.user = &c->rd;
  weft_system_t id;
  assert_int_equal(weft_system_register(c->w, &d, &id), WEFT_OK);
}

/* The chunks of `all` (as weft_query_iter hands them out, one by one)
 * that hold one of the targets: what a reader must visit. */
static uint32_t chunks_holding(const cx_t *c, const weft_entity_t *t,
                               uint32_t n) {
  reader_t r = {t, n, 0, 0, 0};
  uint32_t k = 0;
  weft_iter_t it;
  weft_query_iter(c->all, &it);
  while (weft_iter_next(&it))
    k += holds_target(&r, &it);
  return k;
}

/* Runs one frame and returns the chunks the reader visited, after
 * checking that each held a target. */
static uint32_t frame(cx_t *c) {
  atomic_store(&c->rd.chunks, 0);
  atomic_store(&c->rd.rows, 0);
  atomic_store(&c->rd.hits, 0);
  progress_ok(c->w);
  uint32_t n = atomic_load(&c->rd.chunks);
  assert_int_equal(atomic_load(&c->rd.hits), n);
  return n;
}

/* A reader of Pos after FixedUpdate, run until it is quiet: the first
 * frame visits every chunk (no previous run), the second none. */
static void settle(cx_t *c, const weft_entity_t *targets, uint32_t n) {
  c->rd.targets = targets;
  c->rd.ntargets = n;
  add_reader(c, c->pos, WEFT_PHASE_POST_FIXED_UPDATE);
  atomic_store(&c->rd.chunks, 0);
  progress_ok(c->w);
  assert_int_equal(atomic_load(&c->rd.rows), N);
  assert_int_equal(frame(c), 0);
}

/* After a write to the targets between frames: the next frame visits
 * exactly their chunks, the one after nothing. */
static void expect_once(cx_t *c, const weft_entity_t *targets, uint32_t n) {
  uint32_t want = chunks_holding(c, targets, n);
  assert_true(want >= 1);
  assert_int_equal(frame(c), want);
  assert_int_equal(frame(c), 0);
}

static const vec_t one = {1.0f, 2.0f};

static void test_changed_sees_set(void **state) {
  (void)state;
  cx_t *c = cx_new(0);
  weft_entity_t t[2] = {c->es[3], c->es[1500]};
  settle(c, t, 2);
  for (uint32_t i = 0; i < 2; i++)
    assert_int_equal(weft_set(c->w, t[i], c->pos, &one), WEFT_OK);
  expect_once(c, t, 2);
  /* A write to another component of the same chunks is not a change of
   * Pos. */
  const float hp = 5.0f;
  assert_int_equal(weft_set(c->w, t[0], c->hp, &hp), WEFT_OK);
  assert_int_equal(frame(c), 0);
  cx_free(c);
}

static void test_changed_sees_get_mut(void **state) {
  (void)state;
  cx_t *c = cx_new(0);
  weft_entity_t t[1] = {c->es[777]};
  settle(c, t, 1);
  vec_t *p = weft_get_mut(c->w, t[0], c->pos);
  assert_non_null(p);
  p->x = 3.0f;
  expect_once(c, t, 1);
  /* A read-only lookup marks nothing. */
  assert_non_null(weft_get(c->w, c->es[5], c->pos));
  assert_int_equal(frame(c), 0);
  cx_free(c);
}

static void test_changed_sees_get_field(void **state) {
  (void)state;
  cx_t *c = cx_new(0);
  weft_entity_t t[1] = {c->es[1999]};
  settle(c, t, 1);
  float *y = weft_get_field(c->w, t[0], c->pos, 1);
  assert_non_null(y);
  *y = 4.0f;
  expect_once(c, t, 1);
  cx_free(c);
}

/* A set inside a deferred scope writes a present component through at
 * once (core/stage.c); the same path serves every set while observers
 * exist. */
static void test_changed_sees_set_in_scope(void **state) {
  (void)state;
  cx_t *c = cx_new(0);
  weft_entity_t t[1] = {c->es[600]};
  settle(c, t, 1);
  weft_world_defer_begin(c->w);
  assert_int_equal(weft_set(c->w, t[0], c->pos, &one), WEFT_OK);
  assert_int_equal(weft_world_defer_end(c->w), WEFT_OK);
  expect_once(c, t, 1);
  cx_free(c);
}

/* weft_cmd_set on a component the entity has: the merge writes the row in
 * place, staged per entity and as a one-op group. */
static void test_changed_sees_applied_cmd_set(void **state) {
  (void)state;
  cx_t *c = cx_new(0);
  weft_entity_t t[40];
  for (uint32_t i = 0; i < 40; i++)
    t[i] = c->es[1000 + i * 3];
  settle(c, t, 40);
  weft_cmdbuf_t *b = NULL;
  assert_int_equal(weft_cmdbuf_create(c->w, &b), WEFT_OK);
  assert_int_equal(weft_cmd_set(b, t[0], c->pos, &one), WEFT_OK);
  assert_int_equal(weft_world_apply(c->w, &b, 1), WEFT_OK);
  expect_once(c, t, 1);
  /* Many sets of one component: the group path. */
  for (uint32_t i = 0; i < 40; i++)
    assert_int_equal(weft_cmd_set(b, t[i], c->pos, &one), WEFT_OK);
  assert_int_equal(weft_world_apply(c->w, &b, 1), WEFT_OK);
  expect_once(c, t, 40);
  weft_cmdbuf_destroy(b);
  cx_free(c);
}

static void test_changed_sees_cmd_set_query(void **state) {
  (void)state;
  cx_t *c = cx_new(0);
  /* Five entities tagged Src: the query set writes exactly those. */
  weft_entity_t t[5];
  for (uint32_t i = 0; i < 5; i++) {
    t[i] = c->es[250 * i + 10];
    assert_int_equal(weft_add(c->w, t[i], c->src, NULL), WEFT_OK);
  }
  settle(c, t, 5);
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = c->src;
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(c->w, &qd, &q), WEFT_OK);
  weft_cmdbuf_t *b = NULL;
  assert_int_equal(weft_cmdbuf_create(c->w, &b), WEFT_OK);
  assert_int_equal(weft_cmd_set_query(b, q, c->pos, &one), WEFT_OK);
  assert_int_equal(weft_world_apply(c->w, &b, 1), WEFT_OK);
  expect_once(c, t, 5);
  weft_cmdbuf_destroy(b);
  weft_query_destroy(q);
  cx_free(c);
}

static void test_changed_sees_get_many_write_mask(void **state) {
  (void)state;
  cx_t *c = cx_new(0);
  weft_entity_t t[3] = {c->es[0], c->es[1], c->es[1200]};
  settle(c, t, 3);
  const weft_component_t comps[2] = {c->hp, c->pos};
  const void *out[6];
  /* Without a write mask: a read, nothing changes. */
  assert_int_equal(weft_get_many_ex(c->w, t, 3, comps, 2, out, NULL), 6);
  assert_int_equal(frame(c), 0);
  /* Hp marked written: still no change of Pos. */
  weft_get_many_opts_t o;
  memset(&o, 0, sizeof o);
  o.write = 1u << 0;
  assert_int_equal(weft_get_many_ex(c->w, t, 3, comps, 2, out, &o), 6);
  assert_int_equal(frame(c), 0);
  o.write = 1u << 1;
  assert_int_equal(weft_get_many_ex(c->w, t, 3, comps, 2, out, &o), 6);
  for (uint32_t i = 0; i < 3; i++)
    ((vec_t *)out[2 * i + 1])->x = 7.0f;
  expect_once(c, t, 3);
  cx_free(c);
}

/* --- writes made during frames -------------------------------------------
 */

typedef struct writer_t {
  cx_t *c;
  weft_entity_t target;
  uint64_t on_tick; /* writes on this tick only */
  bool by_command;
} writer_t;

static int write_target(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  writer_t *wr = ctx->user;
  if (ctx->tick != wr->on_tick)
    return 0;
  if (wr->by_command)
    return weft_cmd_set(ctx->cmd, wr->target, wr->c->pos, &one);
  vec_t *p = weft_get_mut(ctx->world, wr->target, wr->c->pos);
  if (!p)
    return WEFT_ESTALE;
  p->y = 9.0f;
  return 0;
}

static void add_writer(cx_t *c, writer_t *wr, weft_phase_t phase,
                       uint32_t flags) {
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "writer";
  d.phase = phase;
  if (wr->by_command)
    d.cmd_write[0] = c->pos;
  else
    d.write[0] = c->pos;
  d.flags = flags;
  d.run = write_target;
  d.user = wr;
  weft_system_t id;
  assert_int_equal(weft_system_register(c->w, &d, &id), WEFT_OK);
}

/* A command recorded by a system is applied at the sync point after its
 * segment: a reader in a later phase sees the chunk in the same frame,
 * then never again. */
static void test_changed_sees_command_from_system(void **state) {
  (void)state;
  cx_t *c = cx_new(0);
  writer_t wr = {c, c->es[1234], 2, true};
  add_writer(c, &wr, WEFT_PHASE_FIXED_UPDATE, 0);
  settle(c, &wr.target, 1);      /* ticks 0 and 1 */
  expect_once(c, &wr.target, 1); /* tick 2 writes */
  cx_free(c);
}

/* A system writes through weft_get_mut() while the reader's segment runs,
 * ordered before the reader: the reader's chunks were chosen before the
 * segment started, so it sees the write at its next run, once. */
static void test_changed_sees_write_in_own_segment(void **state) {
  (void)state;
  cx_t *c = cx_new(0);
  writer_t wr = {c, c->es[42], 2, false};
  add_writer(c, &wr, WEFT_PHASE_FIXED_UPDATE, WEFT_SYSTEM_TRACKED_WRITES);
  c->rd.targets = &wr.target;
  c->rd.ntargets = 1;
  add_reader(c, c->pos, WEFT_PHASE_FIXED_UPDATE);
  progress_ok(c->w); /* tick 0: every chunk */
  assert_int_equal(atomic_load(&c->rd.rows), N);
  assert_int_equal(frame(c), 0); /* tick 1 */
  assert_int_equal(frame(c), 0); /* tick 2: the write, after planning */
  assert_int_equal(frame(c), 1); /* tick 3: seen */
  assert_int_equal(frame(c), 0); /* tick 4 */
  cx_free(c);
}

/* A system with a `write` list whose writes the scheduler cannot see
 * (here: none at all) gets every chunk holding the component stamped for
 * each run; with WEFT_SYSTEM_TRACKED_WRITES only what it writes. */
static void test_changed_write_list_is_stamped_unless_tracked(void **state) {
  (void)state;
  for (int tracked = 0; tracked < 2; tracked++) {
    cx_t *c = cx_new(0);
    writer_t wr = {c, c->es[42], 1000, false}; /* never writes */
    add_writer(c, &wr, WEFT_PHASE_FIXED_UPDATE,
               tracked ? WEFT_SYSTEM_TRACKED_WRITES : 0);
    c->rd.targets = c->es;
    c->rd.ntargets = N;
    add_reader(c, c->pos, WEFT_PHASE_POST_FIXED_UPDATE);
    uint32_t all = chunks_holding(c, c->es, N);
    assert_int_equal(frame(c), all);
    for (int f = 0; f < 3; f++)
      assert_int_equal(frame(c), tracked ? 0 : all);
    cx_free(c);
  }
}

/* --- the health system --------------------------------------------------- */

static void test_changed_sees_health_hits(void **state) {
  (void)state;
  weft_world_t *w = wt_world_sized(0, 4096);
  weft_pipeline_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.fixed_dt = FIXED;
  pc.net_dt = -1.0;
  assert_int_equal(weft_pipeline_configure(w, &pc), WEFT_OK);
  weft_std_t s;
  assert_int_equal(weft_std_register(w, &s), WEFT_OK);
  weft_system_t hs;
  assert_int_equal(weft_sys_health(w, &s, WEFT_PHASE_FIXED_UPDATE, &hs),
                   WEFT_OK);
  /* Units with Health and Damage, over several chunks. */
  enum { UNITS = 1000 };
  weft_entity_t *u = malloc(UNITS * sizeof *u);
  assert_non_null(u);
  const weft_component_t comps[] = {s.health, s.damage, 0};
  const weft_health_t hp = {100.0f, 100.0f};
  const weft_damage_t dmg = {1.0f};
  const void *vals[] = {&hp, &dmg};
  for (uint32_t i = 0; i < UNITS; i++)
    assert_int_equal(weft_spawn_with(w, comps, vals, &u[i]), WEFT_OK);
  cx_t view; /* the reader and chunk counting, over Health */
  memset(&view, 0, sizeof view);
  view.w = w;
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = s.health;
  assert_int_equal(weft_query_create(w, &qd, &view.all), WEFT_OK);
  weft_entity_t t[2] = {u[10], u[900]};
  view.rd.targets = t;
  view.rd.ntargets = 2;
  add_reader(&view, s.health, WEFT_PHASE_POST_FIXED_UPDATE);
  uint32_t all = chunks_holding(&view, u, UNITS);
  assert_true(all >= 4);
  view.rd.targets = u;
  view.rd.ntargets = UNITS;
  assert_int_equal(frame(&view), all);
  view.rd.targets = t;
  view.rd.ntargets = 2;
  assert_int_equal(frame(&view), 0);
  /* One contact: each party hits the other. */
  const weft_collision_t ev = {t[0], t[1], 1.0f, 0.0f, 0.5f};
  assert_int_equal(weft_event_push(w, s.collisions, &ev), WEFT_OK);
  assert_int_equal(frame(&view), chunks_holding(&view, t, 2));
  assert_true(((const weft_health_t *)weft_get(w, t[0], s.health))->hp <
              100.0f);
  assert_int_equal(frame(&view), 0);
  free(u);
  weft_world_destroy(w);
}

/* --- several workers ----------------------------------------------------- */

/* Every row of a source chunk writes the Pos of a target through
 * weft_get_many_ex() with a write mask; targets sit in a few chunks, so
 * the workers stamp the same chunks at once. */
typedef struct many_t {
  cx_t *c;
  const weft_entity_t *targets;
  uint32_t ntargets;
  _Atomic uint32_t misses;
} many_t;

static int write_many(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  many_t *m = ctx->user;
  uint32_t *mark = chunk->columns[0];
  weft_entity_t h[512] = {0}; /* all set below; -O3 cannot tell */
  const void *out[512];
  uint32_t n = chunk->count < 512 ? chunk->count : 512;
  for (uint32_t i = 0; i < n; i++) {
    h[i] = m->targets[(mark[i] * 7u) % m->ntargets];
    mark[i]++;
  }
  weft_get_many_opts_t o;
  memset(&o, 0, sizeof o);
  o.write = 1;
  if (weft_get_many_ex(ctx->world, h, n, &m->c->pos, 1, out, &o) != n)
    atomic_fetch_add(&m->misses, 1);
  /* Several rows may name one target: atomic stores keep that no race. */
  for (uint32_t i = 0; i < n; i++)
    __atomic_store_n((uint32_t *)out[i], 0x3f800000u, __ATOMIC_RELAXED);
  return 0;
}

static void test_changed_threaded_get_many_writes(void **state) {
  (void)state;
  cx_t *c = cx_new(2);
  cx_configure(c, 1); /* everything on the pool */
  /* 4000 sources in 32 chunks of Mark + Src. */
  enum { SRC = 4000, TARGETS = 64 };
  weft_entity_t *src = malloc(SRC * sizeof *src);
  assert_non_null(src);
  const weft_component_t sc[] = {c->mark, c->src, 0};
  assert_int_equal(weft_spawn_batch(c->w, SRC, sc, NULL, NULL, src), WEFT_OK);
  for (uint32_t i = 0; i < SRC; i++) {
    const uint32_t v = i;
    assert_int_equal(weft_set(c->w, src[i], c->mark, &v), WEFT_OK);
  }
  /* Targets: rows of a few Pos chunks, at both ends of two runs. */
  weft_entity_t t[TARGETS];
  for (uint32_t i = 0; i < TARGETS; i++)
    t[i] = c->es[i < TARGETS / 2 ? i * 7 : 1024 + i * 7];
  many_t m = {c, t, TARGETS, 0};
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "write.many";
  d.phase = WEFT_PHASE_FIXED_UPDATE;
  d.query.include[0] = c->mark;
  d.query.include[1] = c->src;
  d.term_access[0] = WEFT_ACCESS_WRITE;
  d.term_access[1] = WEFT_ACCESS_NONE;
  d.write[0] = c->pos;
  d.flags = WEFT_SYSTEM_TRACKED_WRITES;
  d.batch = 64;
  d.run = write_many;
  d.user = &m;
  weft_system_t id;
  assert_int_equal(weft_system_register(c->w, &d, &id), WEFT_OK);
  c->rd.targets = c->es;
  c->rd.ntargets = N;
  add_reader(c, c->pos, WEFT_PHASE_POST_FIXED_UPDATE);
  uint32_t all = chunks_holding(c, c->es, N);
  assert_int_equal(frame(c), all); /* the first run */
  c->rd.targets = t;
  c->rd.ntargets = TARGETS;
  uint32_t want = chunks_holding(c, t, TARGETS);
  assert_true(want >= 2 && want < all);
  for (int f = 0; f < 6; f++)
    assert_int_equal(frame(c), want);
  assert_int_equal(atomic_load(&m.misses), 0);
  weft_system_stats_t st;
  assert_int_equal(weft_system_stats(c->w, id, &st), WEFT_OK);
  assert_true(st.jobs > st.runs); /* the runs were split over the pool */
  free(src);
  cx_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_changed_sees_set),
      cmocka_unit_test(test_changed_sees_get_mut),
      cmocka_unit_test(test_changed_sees_get_field),
      cmocka_unit_test(test_changed_sees_set_in_scope),
      cmocka_unit_test(test_changed_sees_applied_cmd_set),
      cmocka_unit_test(test_changed_sees_cmd_set_query),
      cmocka_unit_test(test_changed_sees_get_many_write_mask),
      cmocka_unit_test(test_changed_sees_command_from_system),
      cmocka_unit_test(test_changed_sees_write_in_own_segment),
      cmocka_unit_test(test_changed_write_list_is_stamped_unless_tracked),
      cmocka_unit_test(test_changed_sees_health_hits),
      cmocka_unit_test(test_changed_threaded_get_many_writes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
