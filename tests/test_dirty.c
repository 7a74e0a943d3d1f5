/* SPDX-License-Identifier: MIT */
/*
 * Dirty tracking (weft/dirty.h): every write path marks exactly the rows it
 * writes in tracked components, untracked components report nothing, the
 * bits move with their rows (swap-removes, archetype moves), systems'
 * declared writes mark the chunks they visit, the pipeline clears at the
 * end of each fixed step unless told not to, and the bits are the same on
 * one worker and two.
 *
 * Callbacks that may run on pool workers never call cmocka's asserts (they
 * jump); they count in atomics that the test checks after the frame.
 */
#include "support/weft_test.h"

#include <stdatomic.h>
#include <stdlib.h>

#define FIXED 0.1
#define N 600u /* several 4 KiB chunks of T + U */

typedef struct pair_t {
  int32_t a, b;
} pair_t;

typedef struct dx_t {
  weft_world_t *w;
  weft_pool_t *pool;
  weft_component_t t;   /* tracked, fields a and b */
  weft_component_t u;   /* untracked */
  weft_component_t s;   /* tracked, SoA */
  weft_component_t tag; /* a tag */
  weft_entity_t es[N];
  weft_query_t *q; /* T */
} dx_t;

static void dx_pipeline(dx_t *x, bool manual) {
  weft_pipeline_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.fixed_dt = FIXED;
  pc.net_dt = -1.0;
  pc.inline_rows = 1; /* every system goes to the pool, when there is one */
  pc.manual_clear = manual;
  assert_int_equal(weft_pipeline_configure(x->w, &pc), WEFT_OK);
}

/* N entities of T and U in 4 KiB chunks, every bit cleared. */
static dx_t *dx_new(uint32_t workers) {
  dx_t *x = calloc(1, sizeof *x);
  assert_non_null(x);
  x->w = wt_world_pooled(workers, 4096, &x->pool);
  dx_pipeline(x, false);
  const weft_field_desc_t f[2] = {WEFT_FIELD(pair_t, a), WEFT_FIELD(pair_t, b)};
  weft_component_desc_t d = WEFT_COMPONENT_DESC(pair_t);
  d.name = "T";
  d.fields = f;
  d.field_count = 2;
  d.flags = WEFT_COMPONENT_TRACK_DIRTY;
  assert_int_equal(weft_component_register(x->w, &d, &x->t), WEFT_OK);
  d.name = "S";
  d.flags = WEFT_COMPONENT_TRACK_DIRTY | WEFT_COMPONENT_SOA;
  assert_int_equal(weft_component_register(x->w, &d, &x->s), WEFT_OK);
  x->u = wt_register(x->w, "U", sizeof(int32_t), 0);
  x->tag = wt_register_tag(x->w, "Tag");
  const weft_component_t comps[] = {x->t, x->u, 0};
  assert_int_equal(weft_spawn_batch(x->w, N, comps, NULL, NULL, x->es),
                   WEFT_OK);
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = x->t;
  assert_int_equal(weft_query_create(x->w, &qd, &x->q), WEFT_OK);
  assert_int_equal(weft_world_clear_dirty(x->w), WEFT_OK);
  return x;
}

static void dx_free(dx_t *x) {
  weft_world_destroy(x->w); /* before the pool it uses */
  if (x->pool)
    weft_pool_destroy(x->pool);
  free(x);
}

/* How many of the N entities have T dirty. */
static uint32_t dirty_count(const dx_t *x, weft_component_t c) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < N; i++)
    n += weft_is_dirty(x->w, x->es[i], c);
  return n;
}

/* Asserts that exactly the entities of es[] listed in idx have T dirty. */
static void expect_dirty(const dx_t *x, const uint32_t *idx, uint32_t n) {
  for (uint32_t i = 0; i < N; i++) {
    bool want = false;
    for (uint32_t k = 0; k < n; k++)
      want |= idx[k] == i;
    if (weft_is_dirty(x->w, x->es[i], x->t) != want)
      fail_msg("entity %u: dirty %d, expected %d", i, !want, want);
  }
}

static void test_dirty_write_paths_mark_only_their_rows(void **state) {
  (void)state;
  dx_t *x = dx_new(0);
  weft_world_t *w = x->w;
  assert_int_equal(dirty_count(x, x->t), 0);
  pair_t v = {7, 8};
  int32_t iv = 3;
  /* weft_set, and on the untracked U: nothing. */
  assert_int_equal(weft_set(w, x->es[1], x->t, &v), WEFT_OK);
  assert_int_equal(weft_set(w, x->es[2], x->u, &iv), WEFT_OK);
  expect_dirty(x, (const uint32_t[]){1}, 1);
  assert_int_equal(dirty_count(x, x->u), 0);
  /* weft_get_mut, weft_get_field. */
  assert_non_null(weft_get_mut(w, x->es[10], x->t));
  assert_non_null(weft_get_field(w, x->es[20], x->t, 1));
  /* weft_get_many_ex with a write mask: only the masked component. */
  const weft_component_t two[] = {x->t, x->u};
  const void *out[2];
  weft_get_many_opts_t o;
  memset(&o, 0, sizeof o);
  o.write = 1u; /* T */
  assert_int_equal(weft_get_many_ex(w, &x->es[30], 1, two, 2, out, &o), 2);
  /* A read, a weft_get(), marks nothing. */
  assert_non_null(weft_get(w, x->es[40], x->t));
  expect_dirty(x, (const uint32_t[]){1, 10, 20, 30}, 4);
  /* A staged set (a scope), and a command set. */
  weft_world_defer_begin(w);
  assert_int_equal(weft_set(w, x->es[50], x->t, &v), WEFT_OK);
  assert_int_equal(weft_world_defer_end(w), WEFT_OK);
  weft_cmdbuf_t *b;
  assert_int_equal(weft_cmdbuf_create(w, &b), WEFT_OK);
  assert_int_equal(weft_cmd_set(b, x->es[60], x->t, &v), WEFT_OK);
  assert_int_equal(weft_world_apply(w, &b, 1), WEFT_OK);
  expect_dirty(x, (const uint32_t[]){1, 10, 20, 30, 50, 60}, 6);
  /* A query-wide set marks every member. */
  assert_int_equal(weft_cmd_set_query(b, x->q, x->t, &v), WEFT_OK);
  assert_int_equal(weft_world_apply(w, &b, 1), WEFT_OK);
  assert_int_equal(dirty_count(x, x->t), N);
  assert_int_equal(weft_cmdbuf_destroy(b), WEFT_OK);
  /* The clear point: all clean again, values kept. */
  assert_int_equal(weft_world_clear_dirty(w), WEFT_OK);
  assert_int_equal(dirty_count(x, x->t), 0);
  const pair_t *p = weft_get(w, x->es[5], x->t);
  assert_int_equal(p->a, 7);
  /* Stale handles, unknown and untracked components are no hits. */
  weft_entity_t gone = x->es[N - 1];
  assert_int_equal(weft_set(w, gone, x->t, &v), WEFT_OK);
  assert_int_equal(weft_despawn(w, gone), WEFT_OK);
  assert_false(weft_is_dirty(w, gone, x->t));
  assert_false(weft_is_dirty(w, x->es[0], 999));
  assert_false(weft_is_dirty(w, x->es[0], x->tag));
  assert_false(weft_is_dirty(NULL, x->es[0], x->t));
  dx_free(x);
}

static void test_dirty_spawns_and_adds_mark_new_values(void **state) {
  (void)state;
  dx_t *x = dx_new(0);
  weft_world_t *w = x->w;
  /* A spawn with values, and without: every tracked component is new. */
  const weft_component_t ts[] = {x->t, x->s, 0};
  weft_entity_t e = wt_spawn_with(w, ts, NULL);
  assert_true(weft_is_dirty(w, e, x->t));
  assert_true(weft_is_dirty(w, e, x->s));
  /* Adding a tracked component marks it, and only it. */
  weft_entity_t f = wt_spawn(w);
  assert_int_equal(weft_add(w, f, x->u, NULL), WEFT_OK);
  assert_int_equal(weft_world_clear_dirty(w), WEFT_OK);
  pair_t v = {1, 2};
  assert_int_equal(weft_add(w, f, x->t, &v), WEFT_OK);
  assert_true(weft_is_dirty(w, f, x->t));
  assert_false(weft_is_dirty(w, f, x->s));
  /* Commands that spawn mark the new rows too. */
  weft_cmdbuf_t *b;
  assert_int_equal(weft_cmdbuf_create(w, &b), WEFT_OK);
  weft_entity_t pending;
  assert_int_equal(weft_cmd_spawn(b, ts, NULL, &pending), WEFT_OK);
  assert_int_equal(weft_world_apply(w, &b, 1), WEFT_OK);
  weft_entity_t g;
  assert_int_equal(weft_cmd_resolve(w, pending, &g), WEFT_OK);
  assert_true(weft_is_dirty(w, g, x->s));
  assert_int_equal(weft_cmdbuf_destroy(b), WEFT_OK);
  dx_free(x);
}

static void test_dirty_bits_move_with_their_rows(void **state) {
  (void)state;
  dx_t *x = dx_new(0);
  weft_world_t *w = x->w;
  pair_t v = {4, 5};
  /* The archetype's last row is swapped into a despawned row's place and
   * keeps its bit; its neighbours keep theirs. */
  weft_entity_t last = x->es[N - 1];
  assert_int_equal(weft_set(w, last, x->t, &v), WEFT_OK);
  assert_int_equal(weft_despawn(w, x->es[0]), WEFT_OK);
  assert_true(weft_is_dirty(w, last, x->t));
  assert_false(weft_is_dirty(w, x->es[1], x->t));
  assert_false(weft_is_dirty(w, x->es[N - 2], x->t));
  /* Moves to other archetypes (adding a tag, disabling, removing U) carry
   * both a set and a clear bit; nothing new is marked. */
  assert_int_equal(weft_set(w, x->es[3], x->t, &v), WEFT_OK);
  for (uint32_t i = 2; i <= 3; i++) {
    assert_int_equal(weft_add(w, x->es[i], x->tag, NULL), WEFT_OK);
    assert_int_equal(weft_remove(w, x->es[i], x->u), WEFT_OK);
    assert_int_equal(weft_disable(w, x->es[i], x->t), WEFT_OK);
  }
  assert_false(weft_is_dirty(w, x->es[2], x->t));
  assert_true(weft_is_dirty(w, x->es[3], x->t));
  /* The same through the drain (a scope), row by row and in a group. */
  weft_world_defer_begin(w);
  for (uint32_t i = 100; i < 200; i++)
    assert_int_equal(weft_add(w, x->es[i], x->tag, NULL), WEFT_OK);
  assert_int_equal(weft_world_defer_end(w), WEFT_OK);
  assert_true(weft_is_dirty(w, last, x->t));
  for (uint32_t i = 100; i < 200; i++)
    assert_false(weft_is_dirty(w, x->es[i], x->t));
  assert_int_equal(weft_set(w, x->es[150], x->t, &v), WEFT_OK);
  weft_world_defer_begin(w);
  for (uint32_t i = 100; i < 200; i++)
    assert_int_equal(weft_remove(w, x->es[i], x->tag), WEFT_OK);
  assert_int_equal(weft_world_defer_end(w), WEFT_OK);
  for (uint32_t i = 100; i < 200; i++)
    assert_int_equal(weft_is_dirty(w, x->es[i], x->t), i == 150);
  dx_free(x);
}

static void test_dirty_iterates_bytes_and_ticks(void **state) {
  (void)state;
  dx_t *x = dx_new(0);
  weft_world_t *w = x->w;
  weft_world_set_tick(w, 5);
  pair_t v = {1, 1};
  assert_int_equal(weft_set(w, x->es[7], x->t, &v), WEFT_OK);
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = x->u;
  qd.include[1] = x->t;
  weft_query_t *q;
  assert_int_equal(weft_query_create(w, &qd, &q), WEFT_OK);
  weft_iter_t it;
  uint32_t seen = 0, chunks = 0, ticked = 0;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    chunks++;
    assert_null(weft_iter_dirty(&it, 0)); /* U is untracked */
    assert_int_equal(weft_iter_dirty_tick(&it, 0), 0);
    const uint8_t *d = weft_iter_dirty(&it, 1);
    assert_non_null(d);
    bool here = false;
    for (uint32_t i = 0; i < it.count; i++) {
      assert_int_equal(d[i] != 0, weft_is_dirty(w, it.entities[i], x->t));
      seen += d[i] != 0;
      here |= it.entities[i] == x->es[7];
    }
    /* Only the written chunk carries the write's tick. */
    uint64_t tick = weft_iter_dirty_tick(&it, 1);
    if (here)
      assert_int_equal(tick, 5);
    ticked += tick == 5;
    assert_null(weft_iter_dirty(&it, 2)); /* no such term */
  }
  assert_int_equal(seen, 1);
  assert_int_equal(ticked, 1);
  assert_true(chunks > 1);
  assert_null(weft_iter_dirty(NULL, 0));
  dx_free(x);
}

/* --- systems and the pipeline ---------------------------------------- */

typedef struct sys_count_t {
  const dx_t *x;
  _Atomic uint32_t dirty; /* dirty bytes seen */
  _Atomic uint32_t rows;
  _Atomic uint32_t bad; /* weft_iter_dirty() returned NULL */
} sys_count_t;

static int count_dirty(weft_sysctx_t *ctx, const weft_iter_t *it) {
  sys_count_t *c = ctx->user;
  const uint8_t *d = weft_iter_dirty(it, 0);
  if (!d) {
    atomic_fetch_add(&c->bad, 1);
    return 0;
  }
  uint32_t n = 0;
  for (uint32_t i = 0; i < it->count; i++)
    n += d[i] != 0;
  atomic_fetch_add(&c->dirty, n);
  atomic_fetch_add(&c->rows, it->count);
  return 0;
}

static int write_nothing(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)ctx;
  (void)it;
  return 0;
}

static void add_system(dx_t *x, const char *name, weft_phase_t phase,
                       weft_component_t c, weft_component_t with,
                       uint8_t access, weft_system_fn fn, void *user) {
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.phase = phase;
  d.query.include[0] = c;
  d.query.include[1] = with;
  d.term_access[0] = access;
  if (with)
    d.term_access[1] = WEFT_ACCESS_READ;
  d.run = fn;
  d.user = user;
  weft_system_t id;
  assert_int_equal(weft_system_register(x->w, &d, &id), WEFT_OK);
}

static void progress_ok(weft_world_t *w) {
  int rc = weft_world_progress(w, FIXED);
  if (rc != WEFT_OK)
    fail_msg("progress: %s (%s)", weft_strerror(rc), weft_world_last_error(w));
}

static void test_dirty_system_writes_mark_visited_chunks(void **state) {
  (void)state;
  dx_t *x = dx_new(2);
  dx_pipeline(x, true); /* look at the bits after the frame */
  /* The tag on the first 100 entities: the writer visits their chunks. */
  for (uint32_t i = 0; i < 100; i++)
    assert_int_equal(weft_add(x->w, x->es[i], x->tag, NULL), WEFT_OK);
  assert_int_equal(weft_world_clear_dirty(x->w), WEFT_OK);
  add_system(x, "dirty.reader", WEFT_PHASE_FIXED_UPDATE, x->t, 0,
             WEFT_ACCESS_READ, write_nothing, NULL);
  add_system(x, "dirty.writer", WEFT_PHASE_FIXED_UPDATE, x->t, x->tag,
             WEFT_ACCESS_WRITE, write_nothing, NULL);
  progress_ok(x->w);
  /* The writer's archetype (T, U, Tag) holds exactly the 100: all of
   * them marked, nothing else, whatever the reader did. */
  for (uint32_t i = 0; i < N; i++)
    if (weft_is_dirty(x->w, x->es[i], x->t) != (i < 100))
      fail_msg("entity %u", i);
  dx_free(x);
}

static void test_dirty_pipeline_clears_after_each_fixed_step(void **state) {
  (void)state;
  dx_t *x = dx_new(0);
  sys_count_t seen = {x, 0, 0, 0};
  add_system(x, "dirty.writer", WEFT_PHASE_FIXED_UPDATE, x->t, 0,
             WEFT_ACCESS_WRITE, write_nothing, NULL);
  add_system(x, "dirty.counter", WEFT_PHASE_POST_FIXED_UPDATE, x->t, 0,
             WEFT_ACCESS_READ, count_dirty, &seen);
  progress_ok(x->w);
  /* PostFixedUpdate saw every row the writer marked... */
  assert_int_equal(atomic_load(&seen.bad), 0);
  assert_int_equal(atomic_load(&seen.rows), N);
  assert_int_equal(atomic_load(&seen.dirty), N);
  /* ...and the step's end cleared them. */
  assert_int_equal(dirty_count(x, x->t), 0);
  /* With manual_clear they stay until weft_world_clear_dirty(). */
  dx_pipeline(x, true);
  progress_ok(x->w);
  assert_int_equal(dirty_count(x, x->t), N);
  assert_int_equal(weft_world_clear_dirty(x->w), WEFT_OK);
  assert_int_equal(dirty_count(x, x->t), 0);
  /* Writes stamp the pipeline's tick. */
  weft_pipeline_state_t st;
  weft_pipeline_state(x->w, &st);
  progress_ok(x->w);
  weft_iter_t it;
  weft_query_iter(x->q, &it);
  assert_true(weft_iter_next(&it));
  assert_int_equal(weft_iter_dirty_tick(&it, 0), st.tick);
  weft_iter_close(&it);
  dx_free(x);
}

/* Each run sets T on the rows whose a is a multiple of the tick + 2. */
static int write_some(weft_sysctx_t *ctx, const weft_iter_t *it) {
  const weft_component_t t = *(const weft_component_t *)ctx->user;
  for (uint32_t i = 0; i < it->count; i++) {
    uint32_t k = weft_entity_index(it->entities[i]);
    if (k % (uint32_t)(ctx->tick + 3) == 0) {
      pair_t *q = weft_get_mut(ctx->world, it->entities[i], t);
      if (q)
        q->a++;
    }
  }
  return 0;
}

/* The dirty bytes of T for every entity, after a frame of writes from
 * callbacks (on the pool when there is one) and commands. */
static void bits_after_frame(uint32_t workers, uint8_t *bits) {
  dx_t *x = dx_new(workers);
  dx_pipeline(x, true);
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "dirty.some";
  d.query.include[0] = x->u;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.write[0] = x->t;
  d.flags = WEFT_SYSTEM_TRACKED_WRITES;
  d.batch = 64; /* several jobs, spread over the workers */
  d.run = write_some;
  d.user = &x->t;
  weft_system_t id;
  assert_int_equal(weft_system_register(x->w, &d, &id), WEFT_OK);
  progress_ok(x->w);
  for (uint32_t i = 0; i < N; i++)
    bits[i] = weft_is_dirty(x->w, x->es[i], x->t);
  dx_free(x);
}

static void test_dirty_same_bits_on_one_and_two_workers(void **state) {
  (void)state;
  uint8_t one[N], two[N];
  bits_after_frame(0, one);
  bits_after_frame(2, two);
  uint32_t n = 0;
  for (uint32_t i = 0; i < N; i++)
    n += one[i];
  if (!(n > 0 && n < N))
    fail_msg("%u of %u dirty", n, N);
  assert_memory_equal(one, two, N);
}

static void test_dirty_steady_frames_allocate_nothing(void **state) {
  (void)state;
  dx_t *x = dx_new(2);
  assert_int_equal(weft_world_log_transitions(x->w, true), WEFT_OK);
  add_system(x, "dirty.writer", WEFT_PHASE_FIXED_UPDATE, x->t, 0,
             WEFT_ACCESS_WRITE, write_nothing, NULL);
  pair_t v = {1, 2};
  for (uint32_t frame = 0; frame < 12; frame++) {
    wt_alloc_probe_t p = wt_alloc_probe(x->w);
    /* Writes, moves and a frame that marks and clears every row. */
    for (uint32_t i = 0; i < 64; i++) {
      assert_int_equal(weft_set(x->w, x->es[i], x->t, &v), WEFT_OK);
      assert_int_equal(weft_add(x->w, x->es[i], x->tag, NULL), WEFT_OK);
    }
    for (uint32_t i = 0; i < 64; i++)
      assert_int_equal(weft_remove(x->w, x->es[i], x->tag), WEFT_OK);
    progress_ok(x->w);
    assert_int_equal(dirty_count(x, x->t), 0);
    if (frame >= 4) /* warm */
      wt_assert_no_alloc(x->w, &p, "a frame with dirty tracking");
  }
  dx_free(x);
}

/* --- the all-rows-dirty flag --------------------------------------------- */

#define CAP 4096u /* entity index slots the oracle follows */

/* What the oracle knows: which entity index is alive with T, its handle,
 * whether T is dirty, whether it has the tag. */
typedef struct flag_model_t {
  weft_entity_t h[CAP];
  bool alive[CAP], dirty[CAP], tagged[CAP];
} flag_model_t;

static void model_spawned(flag_model_t *m, weft_entity_t e) {
  uint32_t i = weft_entity_index(e);
  assert_true(i < CAP);
  m->h[i] = e;
  m->alive[i] = m->dirty[i] = true; /* a spawn's components are new */
  m->tagged[i] = false;
}

/* A live entity index picked at random, or CAP when none is. */
static uint32_t model_pick(const flag_model_t *m, uint64_t *rng) {
  for (int tries = 0; tries < 64; tries++) {
    uint32_t i = wt_draw_below(rng, CAP);
    if (m->alive[i])
      return i;
  }
  for (uint32_t i = 0; i < CAP; i++)
    if (m->alive[i])
      return i;
  return CAP;
}

/* Every live entity's is_dirty, and with `iterate` both queries' bytes
 * (chunk by chunk and in runs of chunks), against the oracle. */
static void model_check(const dx_t *x, const flag_model_t *m,
                        weft_query_t *const *qs, bool iterate, int op) {
  for (uint32_t i = 0; i < CAP; i++)
    if (m->alive[i] && weft_is_dirty(x->w, m->h[i], x->t) != m->dirty[i])
      fail_msg("op %d: entity %u dirty %d, expected %d", op, i, !m->dirty[i],
               m->dirty[i]);
  /* Either query first: the first reader expands what it reads. */
  for (uint32_t j = 0; iterate && j < 2; j++) {
    const uint32_t k = j ^ ((uint32_t)op / 8u & 1u);
    weft_iter_t it;
    uint32_t rows = 0, live = 0;
    weft_query_iter(qs[k], &it);
    while (weft_iter_next(&it)) {
      const uint8_t *d = weft_iter_dirty(&it, 0);
      assert_non_null(d);
      for (uint32_t r = 0; r < it.count; r++) {
        uint32_t i = weft_entity_index(it.entities[r]);
        if ((d[r] != 0) != m->dirty[i])
          fail_msg("op %d, query %u: entity %u byte %u, expected %d", op, k, i,
                   d[r], m->dirty[i]);
      }
      rows += it.count;
    }
    for (uint32_t i = 0; i < CAP; i++)
      live += m->alive[i];
    assert_int_equal(rows, live);
  }
}

/* Adds (or removes) the tag on up to 40 entities through a command
 * buffer: the drain moves them as groups (core/bulk.c). */
static void model_group_move(dx_t *x, flag_model_t *m, uint64_t *rng,
                             bool add) {
  weft_cmdbuf_t *b;
  assert_int_equal(weft_cmdbuf_create(x->w, &b), WEFT_OK);
  for (uint32_t n = 0; n < 40; n++) {
    uint32_t i = model_pick(m, rng);
    if (i == CAP || m->tagged[i] == add)
      continue;
    m->tagged[i] = add;
    assert_int_equal(add ? weft_cmd_add(b, m->h[i], x->tag, NULL)
                         : weft_cmd_remove(b, m->h[i], x->tag),
                     WEFT_OK);
  }
  assert_int_equal(weft_world_apply(x->w, &b, 1), WEFT_OK);
  assert_int_equal(weft_cmdbuf_destroy(b), WEFT_OK);
}

/*
 * A system's whole-chunk mark sets the chunks' all-dirty flags instead of
 * writing bytes; then row writes, clears, despawns (rows swapped out of
 * and into flagged chunks), archetype moves one by one and in groups,
 * spawns, and reads through weft_is_dirty() and weft_iter_dirty() (chunk
 * by chunk and over runs of chunks, which expand the flags) all agree with
 * an oracle that marks every row the system visits.
 */
static void test_dirty_all_rows_flag_against_oracle(void **state) {
  (void)state;
  dx_t *x = dx_new(0);
  dx_pipeline(x, true);
  weft_world_t *w = x->w;
  add_system(x, "dirty.all", WEFT_PHASE_FIXED_UPDATE, x->t, 0,
             WEFT_ACCESS_WRITE, write_nothing, NULL);
  add_system(x, "dirty.tagged", WEFT_PHASE_POST_FIXED_UPDATE, x->t, x->tag,
             WEFT_ACCESS_WRITE, write_nothing, NULL);
  weft_query_t *qs[2];
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = x->t;
  assert_int_equal(weft_query_create(w, &qd, &qs[0]), WEFT_OK);
  qd.flags = WEFT_QUERY_CHUNK_RUNS;
  assert_int_equal(weft_query_create(w, &qd, &qs[1]), WEFT_OK);
  flag_model_t *m = calloc(1, sizeof *m);
  assert_non_null(m);
  for (uint32_t i = 0; i < N; i++) {
    model_spawned(m, x->es[i]);
    m->dirty[weft_entity_index(x->es[i])] = false; /* dx_new() cleared */
  }
  uint64_t rng = 0xa11d1e7;
  const weft_component_t tu[] = {x->t, x->u, 0};
  for (int op = 0; op < 600; op++) {
    uint32_t i = model_pick(m, &rng);
    switch (wt_draw_below(&rng, 10)) {
    case 0: /* every row of T, in every chunk */
      assert_int_equal(weft_world_run_phase(w, WEFT_PHASE_FIXED_UPDATE, FIXED),
                       WEFT_OK);
      for (uint32_t k = 0; k < CAP; k++)
        m->dirty[k] |= m->alive[k];
      break;
    case 1: /* the tagged rows' chunks only */
      assert_int_equal(
          weft_world_run_phase(w, WEFT_PHASE_POST_FIXED_UPDATE, FIXED),
          WEFT_OK);
      for (uint32_t k = 0; k < CAP; k++)
        m->dirty[k] |= m->alive[k] && m->tagged[k];
      break;
    case 2: { /* one row */
      pair_t v = {op, 0};
      if (i < CAP) {
        assert_int_equal(weft_set(w, m->h[i], x->t, &v), WEFT_OK);
        m->dirty[i] = true;
      }
      break;
    }
    case 3:
      if (wt_draw_below(&rng, 3) == 0) {
        assert_int_equal(weft_world_clear_dirty(w), WEFT_OK);
        memset(m->dirty, 0, sizeof m->dirty);
      }
      break;
    case 4: /* the archetype's last row fills the hole */
      if (i < CAP) {
        assert_int_equal(weft_despawn(w, m->h[i]), WEFT_OK);
        m->alive[i] = false;
      }
      break;
    case 5:
      model_spawned(m, wt_spawn_with(w, tu, NULL));
      break;
    case 6: /* a move that carries T's bit */
      if (i < CAP) {
        assert_int_equal(m->tagged[i] ? weft_remove(w, m->h[i], x->tag)
                                      : weft_add(w, m->h[i], x->tag, NULL),
                         WEFT_OK);
        m->tagged[i] = !m->tagged[i];
      }
      break;
    case 7:
      model_group_move(x, m, &rng, wt_draw_below(&rng, 2) == 0);
      break;
    default:
      break; /* reads only */
    }
    model_check(x, m, qs, op % 8 == 0 || op == 599, op);
  }
  free(m);
  weft_query_destroy(qs[0]);
  weft_query_destroy(qs[1]);
  dx_free(x);
}

/*
 * A clean row moving into a flagged chunk stays clean, and a flagged
 * chunk's rows moving out stay dirty: a despawn's swap-remove and a
 * group's hole filling (core/bulk.c) both take the archetype's last rows,
 * which here are clean, into flagged chunks.
 */
static void test_dirty_clean_rows_into_flagged_chunks(void **state) {
  (void)state;
  dx_t *x = dx_new(0);
  dx_pipeline(x, true);
  weft_world_t *w = x->w;
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "dirty.untagged";
  d.phase = WEFT_PHASE_FIXED_UPDATE;
  d.query.include[0] = x->t;
  d.query.exclude[0] = x->tag;
  d.term_access[0] = WEFT_ACCESS_WRITE;
  d.run = write_nothing;
  weft_system_t id;
  assert_int_equal(weft_system_register(w, &d, &id), WEFT_OK);
  /* Ten entities wait, clean, in the tagged archetype while the writer
   * flags every chunk of the untagged one. */
  for (uint32_t i = 0; i < 10; i++)
    assert_int_equal(weft_add(w, x->es[N - 1 - i], x->tag, NULL), WEFT_OK);
  assert_int_equal(weft_world_clear_dirty(w), WEFT_OK);
  assert_int_equal(weft_world_run_phase(w, WEFT_PHASE_FIXED_UPDATE, FIXED),
                   WEFT_OK);
  /* Back untagged: they arrive at the tail, clean. */
  for (uint32_t i = 0; i < 10; i++)
    assert_int_equal(weft_remove(w, x->es[N - 1 - i], x->tag), WEFT_OK);
  /* A despawn in the first chunk takes the tail's last row. */
  assert_int_equal(weft_despawn(w, x->es[0]), WEFT_OK);
  /* A group leaves the first chunk: the tail's rows fill the holes. */
  weft_cmdbuf_t *b;
  assert_int_equal(weft_cmdbuf_create(w, &b), WEFT_OK);
  for (uint32_t i = 1; i < 9; i++)
    assert_int_equal(weft_cmd_add(b, x->es[i], x->tag, NULL), WEFT_OK);
  assert_int_equal(weft_world_apply(w, &b, 1), WEFT_OK);
  assert_int_equal(weft_cmdbuf_destroy(b), WEFT_OK);
  for (uint32_t i = 1; i < N; i++) {
    bool clean = i >= N - 10;
    if (weft_is_dirty(w, x->es[i], x->t) == clean)
      fail_msg("entity %u: dirty %d", i, clean);
  }
  weft_iter_t it;
  uint32_t dirty = 0;
  weft_query_iter(x->q, &it);
  while (weft_iter_next(&it)) {
    const uint8_t *bytes = weft_iter_dirty(&it, 0);
    for (uint32_t r = 0; r < it.count; r++) {
      assert_int_equal(bytes[r] != 0, weft_is_dirty(w, it.entities[r], x->t));
      dirty += bytes[r] != 0;
    }
  }
  assert_int_equal(dirty, N - 11);
  dx_free(x);
}

/* Readers of T on the pool expanding the writer's flags at once, chunk by
 * chunk and in runs: each sees every row dirty, every frame. */
static void test_dirty_readers_expand_flags_on_workers(void **state) {
  (void)state;
  dx_t *x = dx_new(3);
  sys_count_t seen[3];
  add_system(x, "dirty.writer", WEFT_PHASE_FIXED_UPDATE, x->t, 0,
             WEFT_ACCESS_WRITE, write_nothing, NULL);
  for (uint32_t k = 0; k < 3; k++) {
    seen[k] = (sys_count_t){x, 0, 0, 0};
    weft_system_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = k == 0 ? "dirty.r0" : k == 1 ? "dirty.r1" : "dirty.r2";
    d.phase = WEFT_PHASE_POST_FIXED_UPDATE;
    d.query.include[0] = x->t;
    d.query.flags = k == 2 ? WEFT_QUERY_CHUNK_RUNS : 0;
    d.term_access[0] = WEFT_ACCESS_READ;
    d.batch = 32; /* a job per chunk or so */
    d.run = count_dirty;
    d.user = &seen[k];
    weft_system_t id;
    assert_int_equal(weft_system_register(x->w, &d, &id), WEFT_OK);
  }
  const uint32_t frames = 20;
  for (uint32_t f = 0; f < frames; f++)
    progress_ok(x->w);
  for (uint32_t k = 0; k < 3; k++) {
    assert_int_equal(atomic_load(&seen[k].bad), 0);
    assert_int_equal(atomic_load(&seen[k].rows), frames * N);
    assert_int_equal(atomic_load(&seen[k].dirty), frames * N);
  }
  assert_int_equal(dirty_count(x, x->t), 0); /* each step's end cleared */
  dx_free(x);
}

static void test_dirty_rejects_bad_input(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "TrackedTag";
  d.flags = WEFT_COMPONENT_TRACK_DIRTY;
  weft_component_t id;
  assert_int_equal(weft_component_register(w, &d, &id), WEFT_EINVAL);
  assert_non_null(strstr(weft_world_last_error(w), "TrackedTag"));
  assert_int_equal(weft_world_clear_dirty(NULL), WEFT_EINVAL);
  weft_world_destroy(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dirty_write_paths_mark_only_their_rows),
      cmocka_unit_test(test_dirty_spawns_and_adds_mark_new_values),
      cmocka_unit_test(test_dirty_bits_move_with_their_rows),
      cmocka_unit_test(test_dirty_iterates_bytes_and_ticks),
      cmocka_unit_test(test_dirty_system_writes_mark_visited_chunks),
      cmocka_unit_test(test_dirty_pipeline_clears_after_each_fixed_step),
      cmocka_unit_test(test_dirty_same_bits_on_one_and_two_workers),
      cmocka_unit_test(test_dirty_steady_frames_allocate_nothing),
      cmocka_unit_test(test_dirty_all_rows_flag_against_oracle),
      cmocka_unit_test(test_dirty_clean_rows_into_flagged_chunks),
      cmocka_unit_test(test_dirty_readers_expand_flags_on_workers),
      cmocka_unit_test(test_dirty_rejects_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
