/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for query-wide sets with a writer (weft_cmd_set_query_fn):
 * the ranges cover exactly the members held at the call, once each and in
 * order; later members are not selected; writers see earlier staged writes
 * and later sets win; bad input is refused; the result is the same on any
 * number of workers.
 */
#include "support/weft_test.h"
#include "support/pipeline_test.h"

typedef struct bw_t {
  weft_world_t *w;
  weft_component_t a, c, t;
  weft_query_t *q; /* include a */
  weft_cmdbuf_t *b;
} bw_t;

static bw_t bw_new(void) {
  bw_t f;
  f.w = wt_world_sized(0, WEFT_CHUNK_SIZE_MIN);
  f.a = wt_register(f.w, "a", sizeof(uint32_t), 0);
  f.c = wt_register(f.w, "c", sizeof(uint64_t), 0);
  f.t = wt_register_tag(f.w, "t");
  f.q = NULL;
  assert_int_equal(
      weft_query_create(f.w, &(weft_query_desc_t){.include = {f.a}}, &f.q),
      WEFT_OK);
  f.b = NULL;
  assert_int_equal(weft_cmdbuf_create(f.w, &f.b), WEFT_OK);
  return f;
}

enum { LOG_MAX = 8192 };

/* What the writer saw: every row's handle and c value on arrival, in call
 * order, and each call's range. */
typedef struct wlog_t {
  weft_entity_t e[LOG_MAX];
  uint64_t before[LOG_MAX];
  uint32_t n;
  uint32_t calls;
  uint32_t firsts[LOG_MAX];
  uint64_t base; /* written: base + member index */
} wlog_t;

static void writer(void *user, const weft_iter_t *view, uint32_t first) {
  wlog_t *l = user;
  uint64_t *c = weft_iter_column(view, 0);
  assert_non_null(c);
  assert_true(view->count > 0);
  l->firsts[l->calls++] = first;
  for (uint32_t r = 0; r < view->count; r++) {
    assert_true(l->n < LOG_MAX);
    l->e[l->n] = view->entities[r];
    l->before[l->n++] = c[r];
    c[r] = l->base + first + r;
  }
}

/* The query's members now, in iteration order. */
static uint32_t members(const weft_query_t *q, weft_entity_t *out) {
  weft_iter_t it;
  uint32_t n = 0;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it))
    for (uint32_t r = 0; r < it.count; r++)
      out[n++] = it.entities[r];
  return n;
}

static uint64_t c_of(const bw_t *f, weft_entity_t e) {
  uint64_t v = UINT64_MAX;
  assert_int_equal(weft_read(f->w, e, f->c, &v), WEFT_OK);
  return v;
}

static void test_batch_set_ranges_cover_members_once_in_order(void **state) {
  (void)state;
  bw_t f = bw_new();
  /* Three archetypes, several chunks each; {a, c} already has c. */
  const weft_component_t a[] = {f.a, 0}, at[] = {f.a, f.t, 0},
                         ac[] = {f.a, f.c, 0};
  assert_int_equal(weft_spawn_batch(f.w, 900, a, NULL, NULL, NULL), WEFT_OK);
  assert_int_equal(weft_spawn_batch(f.w, 700, at, NULL, NULL, NULL), WEFT_OK);
  assert_int_equal(weft_spawn_batch(f.w, 500, ac, NULL, NULL, NULL), WEFT_OK);
  static weft_entity_t held[LOG_MAX];
  uint32_t n = members(f.q, held);
  assert_int_equal(n, 2100);
  static wlog_t l;
  memset(&l, 0, sizeof l);
  l.base = 1000;
  assert_int_equal(weft_cmd_set_query_fn(f.b, f.q, f.c, writer, &l), WEFT_OK);
  assert_int_equal(l.calls, 0); /* nothing before the sync point */
  assert_int_equal(weft_world_apply(f.w, &f.b, 1), WEFT_OK);
  /* Every held member once, in the order held. */
  assert_int_equal(l.n, n);
  assert_memory_equal(l.e, held, n * sizeof held[0]);
  /* Ranges are contiguous runs of rows: more than one per archetype
   * (chunks), far fewer than rows; each starts where the last ended. */
  assert_true(l.calls >= 3 && l.calls < 100);
  for (uint32_t i = 1; i < l.calls; i++)
    assert_true(l.firsts[i] > l.firsts[i - 1]);
  for (uint32_t i = 0; i < n; i++) {
    assert_int_equal(c_of(&f, held[i]), 1000 + i);
    assert_int_equal(l.before[i], 0); /* zero-filled, or never written */
  }
  assert_int_equal(weft_query_count(f.q), n);
  weft_world_destroy(f.w);
}

static void test_batch_set_later_members_are_not_selected(void **state) {
  (void)state;
  bw_t f = bw_new();
  const weft_component_t a[] = {f.a, 0}, t[] = {f.t, 0};
  assert_int_equal(weft_spawn_batch(f.w, 100, a, NULL, NULL, NULL), WEFT_OK);
  weft_entity_t outsider = wt_spawn_with(f.w, t, NULL);
  static weft_entity_t held[LOG_MAX];
  uint32_t n = members(f.q, held);
  static wlog_t l;
  memset(&l, 0, sizeof l);
  assert_int_equal(weft_cmd_set_query_fn(f.b, f.q, f.c, writer, &l), WEFT_OK);
  /* In the same transaction, after the call: a new member by spawn, one
   * by an add, and the despawn of a held member. */
  weft_entity_t pending;
  assert_int_equal(weft_cmd_spawn(f.b, a, NULL, &pending), WEFT_OK);
  assert_int_equal(weft_cmd_add(f.b, outsider, f.a, NULL), WEFT_OK);
  assert_int_equal(weft_cmd_despawn(f.b, held[7]), WEFT_OK);
  assert_int_equal(weft_world_apply(f.w, &f.b, 1), WEFT_OK);
  weft_entity_t spawned;
  assert_int_equal(weft_cmd_resolve(f.w, pending, &spawned), WEFT_OK);
  assert_true(weft_has(f.w, spawned, f.a));
  assert_false(weft_has(f.w, spawned, f.c));
  assert_true(weft_has(f.w, outsider, f.a));
  assert_false(weft_has(f.w, outsider, f.c));
  assert_false(weft_is_alive(f.w, held[7]));
  assert_int_equal(l.n, n - 1);
  for (uint32_t i = 0; i < l.n; i++)
    assert_true(l.e[i] != held[7]);
  /* Row r of a range is member first + r, even where a despawned member
   * left its row to another (held[8] lands right after held[6]). */
  for (uint32_t i = 0; i < n; i++)
    if (i != 7)
      assert_int_equal(c_of(&f, held[i]), i);
  weft_world_destroy(f.w);
}

/* Writers see what was staged before them; sets after them win. */
static void test_batch_set_orders_with_scalar_sets(void **state) {
  (void)state;
  bw_t f = bw_new();
  const weft_component_t a[] = {f.a, 0};
  weft_entity_t e[4];
  assert_int_equal(weft_spawn_batch(f.w, 4, a, NULL, NULL, e), WEFT_OK);
  static wlog_t l1, l2;
  memset(&l1, 0, sizeof l1);
  memset(&l2, 0, sizeof l2);
  l1.base = 100;
  l2.base = 200;
  weft_cmdbuf_t *other = NULL;
  assert_int_equal(weft_cmdbuf_create(f.w, &other), WEFT_OK);
  uint64_t v5 = 5, v6 = 6, v7 = 7, v8 = 8, v9 = 9;
  /* e0: set before the first writer; e1: set between the writers; e2:
   * set after both; e3: after the first in another buffer, keyed after;
   * plus a constant query-wide set between the writers. */
  assert_int_equal(weft_cmd_set(f.b, e[0], f.c, &v5), WEFT_OK);
  assert_int_equal(weft_cmd_set_query_fn(f.b, f.q, f.c, writer, &l1), WEFT_OK);
  assert_int_equal(weft_cmd_set(f.b, e[1], f.c, &v6), WEFT_OK);
  assert_int_equal(weft_cmd_set_query(f.b, f.q, f.c, &v9), WEFT_OK);
  assert_int_equal(weft_cmd_set_query_fn(f.b, f.q, f.c, writer, &l2), WEFT_OK);
  assert_int_equal(weft_cmd_set(f.b, e[2], f.c, &v7), WEFT_OK);
  weft_cmd_key(other, 1);
  assert_int_equal(weft_cmd_set(other, e[3], f.c, &v8), WEFT_OK);
  weft_cmdbuf_t *bufs[2] = {f.b, other};
  assert_int_equal(weft_world_apply(f.w, bufs, 2), WEFT_OK);
  /* The first writer saw e0's earlier set; e1's later one was not there
   * yet (it lands after the writer). */
  assert_int_equal(l1.n, 4);
  assert_int_equal(l1.before[0], 5);
  assert_int_equal(l1.before[1], 0);
  /* The second writer saw e1's set then the constant over everything. */
  for (uint32_t i = 0; i < 4; i++)
    assert_int_equal(l2.before[i], 9);
  assert_int_equal(c_of(&f, e[0]), 200);
  assert_int_equal(c_of(&f, e[1]), 201);
  assert_int_equal(c_of(&f, e[2]), 7); /* after both writers */
  assert_int_equal(c_of(&f, e[3]), 8); /* key 1: after everything at 0 */
  weft_world_destroy(f.w);
}

static void test_batch_set_rejects_bad_input(void **state) {
  (void)state;
  bw_t f = bw_new();
  static wlog_t l;
  assert_int_equal(weft_cmd_set_query_fn(NULL, f.q, f.c, writer, &l),
                   WEFT_EINVAL);
  assert_int_equal(weft_cmd_set_query_fn(f.b, NULL, f.c, writer, &l),
                   WEFT_EINVAL);
  assert_int_equal(weft_cmd_set_query_fn(f.b, f.q, f.c, NULL, &l), WEFT_EINVAL);
  assert_int_equal(weft_cmd_set_query_fn(f.b, f.q, 0, writer, &l),
                   WEFT_ENOCOMP);
  assert_int_equal(weft_cmd_set_query_fn(f.b, f.q, 999, writer, &l),
                   WEFT_ENOCOMP);
  assert_int_equal(weft_cmd_set_query_fn(f.b, f.q, f.t, writer, &l), WEFT_ETAG);
  /* Another world's query. */
  bw_t g = bw_new();
  assert_int_equal(weft_cmd_set_query_fn(f.b, g.q, f.c, writer, &l),
                   WEFT_EINVAL);
  weft_world_destroy(g.w);
  assert_int_equal(weft_cmdbuf_count(f.b), 0); /* nothing recorded */
  /* A destroyed buffer. */
  weft_cmdbuf_t *dead = NULL;
  assert_int_equal(weft_cmdbuf_create(f.w, &dead), WEFT_OK);
  assert_int_equal(weft_cmdbuf_destroy(dead), WEFT_OK);
  assert_int_equal(weft_cmd_set_query_fn(dead, f.q, f.c, writer, &l),
                   WEFT_EINVAL);
  weft_world_destroy(f.w);
}

/* An SoA component: the writer reaches its fields through the view. */
typedef struct pair_t {
  float x;
  float y;
} pair_t;

static void soa_writer(void *user, const weft_iter_t *view, uint32_t first) {
  (void)user;
  assert_null(weft_iter_column(view, 0));
  float *x = weft_iter_field(view, 0, 0), *y = weft_iter_field(view, 0, 1);
  assert_non_null(x);
  assert_non_null(y);
  for (uint32_t r = 0; r < view->count; r++) {
    x[r] = (float)(first + r);
    y[r] = -(float)(first + r);
  }
}

static void test_batch_set_writes_soa_fields(void **state) {
  (void)state;
  bw_t f = bw_new();
  const weft_field_desc_t fields[] = {
      {"x", offsetof(pair_t, x), sizeof(float), 0},
      {"y", offsetof(pair_t, y), sizeof(float), 0}};
  weft_component_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "pair";
  d.size = sizeof(pair_t);
  d.fields = fields;
  d.field_count = 2;
  d.flags = WEFT_COMPONENT_SOA;
  weft_component_t p = 0;
  assert_int_equal(weft_component_register(f.w, &d, &p), WEFT_OK);
  const weft_component_t a[] = {f.a, 0};
  assert_int_equal(weft_spawn_batch(f.w, 600, a, NULL, NULL, NULL), WEFT_OK);
  static weft_entity_t held[LOG_MAX];
  uint32_t n = members(f.q, held);
  assert_int_equal(weft_cmd_set_query_fn(f.b, f.q, p, soa_writer, NULL),
                   WEFT_OK);
  assert_int_equal(weft_world_apply(f.w, &f.b, 1), WEFT_OK);
  for (uint32_t i = 0; i < n; i++) {
    pair_t v;
    assert_int_equal(weft_read(f.w, held[i], p, &v), WEFT_OK);
    assert_true(v.x == (float)i && v.y == -(float)i);
  }
  weft_world_destroy(f.w);
}

/* --- the same on any number of workers ------------------------------------
 */

typedef struct sysw_t {
  weft_query_t *q;
  weft_component_t c;
} sysw_t;

static void counter_writer(void *user, const weft_iter_t *view,
                           uint32_t first) {
  (void)user;
  uint64_t *c = weft_iter_column(view, 0);
  for (uint32_t r = 0; r < view->count; r++)
    c[r] = c[r] * 31 + first + r + view->entities[r];
}

/* A task that records a writer over the query each run. */
static int record_writer(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  const sysw_t *s = ctx->user;
  return weft_cmd_set_query_fn(ctx->cmd, s->q, s->c, counter_writer, NULL);
}

static uint64_t run_writer_frames(uint32_t workers) {
  fx_t fx = fx_new(workers, WEFT_CHUNK_SIZE_MIN);
  static sysw_t s;
  s.c = wt_register(fx.w, "c", sizeof(uint64_t), 0);
  populate(&fx, 3000, 0);
  populate(&fx, 1000, fx.tag);
  assert_int_equal(
      weft_query_create(fx.w, &(weft_query_desc_t){.include = {fx.pos}}, &s.q),
      WEFT_OK);
  weft_system_desc_t d =
      sys_desc("writer", WEFT_PHASE_PRE_UPDATE, record_writer, &s);
  d.cmd_write[0] = s.c;
  sys_add(fx.w, &d);
  /* Another system moves rows around meanwhile, in parallel. */
  for (int k = 0; k < 5; k++)
    progress_ok(fx.w, 0.016);
  uint64_t digest = weft_world_digest(fx.w);
  assert_int_equal(weft_query_count(s.q), 4000);
  fx_free(&fx);
  return digest;
}

static void test_batch_set_same_on_one_and_two_workers(void **state) {
  (void)state;
  assert_int_equal(run_writer_frames(0), run_writer_frames(2));
}

/* Once warm, recording and applying a writer every frame allocates
 * nothing. */
static void test_batch_set_steady_state_allocates_nothing(void **state) {
  (void)state;
  bw_t f = bw_new();
  const weft_component_t a[] = {f.a, 0};
  weft_entity_t e[1000];
  assert_int_equal(weft_spawn_batch(f.w, 1000, a, NULL, NULL, e), WEFT_OK);
  static wlog_t l;
  uint64_t v = 3;
  for (int round = 0; round < 6; round++) {
    wt_alloc_probe_t p = wt_alloc_probe(f.w);
    memset(&l, 0, sizeof l);
    assert_int_equal(weft_cmd_set_query_fn(f.b, f.q, f.c, writer, &l), WEFT_OK);
    for (uint32_t i = 0; i < 1000; i += 10) /* later sets, noted */
      assert_int_equal(weft_cmd_set(f.b, e[i], f.c, &v), WEFT_OK);
    assert_int_equal(weft_world_apply(f.w, &f.b, 1), WEFT_OK);
    assert_int_equal(l.n, 1000);
    assert_int_equal(c_of(&f, e[10]), 3);
    /* The writer's value (its member index) where no set came after. */
    uint32_t at = 0;
    while (at < l.n && l.e[at] != e[11])
      at++;
    assert_int_equal(c_of(&f, e[11]), at);
    if (round >= 2)
      wt_assert_no_alloc(f.w, &p, "a warm query-wide writer");
  }
  weft_world_destroy(f.w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_batch_set_ranges_cover_members_once_in_order),
      cmocka_unit_test(test_batch_set_later_members_are_not_selected),
      cmocka_unit_test(test_batch_set_orders_with_scalar_sets),
      cmocka_unit_test(test_batch_set_rejects_bad_input),
      cmocka_unit_test(test_batch_set_writes_soa_fields),
      cmocka_unit_test(test_batch_set_same_on_one_and_two_workers),
      cmocka_unit_test(test_batch_set_steady_state_allocates_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
