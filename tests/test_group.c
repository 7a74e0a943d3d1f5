/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for grouped queries (group_by): group order, one group alone,
 * counts and the group list, archetypes created later, and systems, whose
 * visits follow the same order on any number of workers.
 */
#include "support/weft_test.h"
#include "support/pipeline_test.h"

#include "core/query_internal.h" /* the flat cache, to force the walk */

/* Groups by tag: g3 -> 30, else g2 -> 20, else g1 -> 10, else 0 (ids in
 * ctx). Counts its calls. */
typedef struct groups_t {
  weft_component_t g1, g2, g3;
  uint32_t calls;
} groups_t;

static bool view_has(const weft_archetype_view_t *v, weft_component_t c) {
  for (uint32_t i = 0; i < v->ncomponents; i++) {
    if (i)
      assert_true(v->components[i - 1] < v->components[i]); /* ascending */
    if (v->components[i] == c)
      return true;
  }
  return false;
}

static uint64_t by_tag(weft_world_t *w, const weft_archetype_view_t *v,
                       void *ctx) {
  (void)w;
  groups_t *g = ctx;
  g->calls++;
  if (view_has(v, g->g3))
    return 30;
  if (view_has(v, g->g2))
    return 20;
  return view_has(v, g->g1) ? 10 : 0;
}

typedef struct gw_t {
  weft_world_t *w;
  weft_component_t a;
  groups_t g;
} gw_t;

static gw_t gw_new(void) {
  gw_t f;
  memset(&f, 0, sizeof f);
  f.w = wt_world_sized(0, WEFT_CHUNK_SIZE_MIN);
  f.a = wt_register(f.w, "a", sizeof(uint32_t), 0);
  f.g.g1 = wt_register_tag(f.w, "g1");
  f.g.g2 = wt_register_tag(f.w, "g2");
  f.g.g3 = wt_register_tag(f.w, "g3");
  return f;
}

/* Writes the batch-relative index plus user's base into a. */
static void fill_a(void *user, const weft_iter_t *view, uint32_t first) {
  uint32_t *a = weft_iter_column(view, 0);
  for (uint32_t r = 0; r < view->count; r++)
    a[r] = *(const uint32_t *)user + first + r;
}

/* Spawns n entities with a and the tags (zero-terminated), a counting up
 * from base. */
static void spawn_n(gw_t *f, uint32_t n, uint32_t base, weft_component_t t1,
                    weft_component_t t2) {
  const weft_component_t comps[] = {f->a, t1, t1 ? t2 : 0, 0};
  assert_int_equal(weft_spawn_batch(f->w, n, comps, fill_a, &base, NULL),
                   WEFT_OK);
}

static weft_query_t *grouped(gw_t *f) {
  weft_query_t *q = NULL;
  weft_query_desc_t d = {
      .include = {f->a}, .group_by = by_tag, .group_ctx = &f->g};
  assert_int_equal(weft_query_create(f->w, &d, &q), WEFT_OK);
  return q;
}

/* The a values an iteration yields, in order. */
static uint32_t collect(weft_iter_t *it, uint32_t *out, uint32_t cap) {
  uint32_t n = 0;
  while (weft_iter_next(it))
    for (uint32_t r = 0; r < it->count; r++) {
      assert_true(n < cap);
      out[n++] = ((const uint32_t *)it->columns[0])[r];
    }
  return n;
}

/* Archetypes made in the order {a,g3}, {a}, {a,g2}, {a,g1}, {a,g1,g3}:
 * a's values are 30000.., 0.., 20000.., 10000.., 31000.. so that the
 * expected order is the sorted one. */
static void populate_groups(gw_t *f) {
  spawn_n(f, 700, 30000, f->g.g3, 0);
  spawn_n(f, 500, 0, 0, 0);
  spawn_n(f, 600, 20000, f->g.g2, 0);
  spawn_n(f, 400, 10000, f->g.g1, 0);
  spawn_n(f, 300, 31000, f->g.g1, f->g.g3);
}

enum { ALL = 2500 };

/* The values in group order: each group's archetypes in creation order. */
static bool in_group_order(const uint32_t *v, uint32_t n) {
  for (uint32_t i = 1; i < n; i++)
    if (v[i] != v[i - 1] + 1 && v[i] < v[i - 1])
      return false;
  return true;
}

static void test_group_iteration_is_in_group_order(void **state) {
  (void)state;
  for (int walk = 0; walk < 2; walk++) {
    gw_t f = gw_new();
    populate_groups(&f);
    weft_query_t *q = grouped(&f);
    assert_int_equal(f.g.calls, weft_query_archetype_count(q));
    assert_int_equal(weft_query_archetype_count(q), 5);
    if (walk)
      q->flat_cap = 0; /* no flat cache: the walk over the matches */
    static uint32_t v[ALL];
    weft_iter_t it;
    weft_query_iter(q, &it);
    assert_int_equal(collect(&it, v, ALL), ALL);
    assert_true(in_group_order(v, ALL));
    /* The groups' first values, in order: 0, 10000, 20000, 30000, and
     * inside group 30 the older archetype ({a,g3}) first. */
    assert_int_equal(v[0], 0);
    assert_int_equal(v[500], 10000);
    assert_int_equal(v[900], 20000);
    assert_int_equal(v[1500], 30000);
    assert_int_equal(v[2200], 31000);
    /* An ungrouped query keeps creation order. */
    weft_query_t *plain = NULL;
    assert_int_equal(
        weft_query_create(f.w, &(weft_query_desc_t){.include = {f.a}}, &plain),
        WEFT_OK);
    weft_query_iter(plain, &it);
    assert_int_equal(collect(&it, v, ALL), ALL);
    assert_int_equal(v[0], 30000);
    assert_false(in_group_order(v, ALL));
    weft_world_destroy(f.w);
  }
}

static void test_group_iter_group_visits_one_group(void **state) {
  (void)state;
  for (int walk = 0; walk < 2; walk++) {
    gw_t f = gw_new();
    populate_groups(&f);
    weft_query_t *q = grouped(&f);
    if (walk)
      q->flat_cap = 0;
    static uint32_t v[ALL];
    weft_iter_t it;
    const uint64_t groups[] = {0, 10, 20, 30};
    const uint32_t first[] = {0, 10000, 20000, 30000};
    const uint32_t rows[] = {500, 400, 600, 1000};
    for (uint32_t g = 0; g < 4; g++) {
      weft_query_iter_group(q, groups[g], &it);
      uint32_t n = collect(&it, v, ALL);
      assert_int_equal(n, rows[g]);
      assert_int_equal(v[0], first[g]);
      assert_true(in_group_order(v, n));
      for (uint32_t i = 0; i < n; i++) /* nothing of another group */
        assert_true(v[i] >= first[g] && v[i] < first[g] + 10000);
      assert_int_equal(weft_query_group_count(q, groups[g]), rows[g]);
    }
    /* A group the query lacks yields nothing, and the scope closes. */
    weft_query_iter_group(q, 15, &it);
    assert_false(weft_iter_next(&it));
    assert_int_equal(weft_world_defer_depth(f.w), 0);
    assert_int_equal(weft_query_group_count(q, 15), 0);
    /* Nested group iterations are independent. */
    weft_iter_t outer, inner;
    uint32_t pairs = 0;
    weft_query_iter_group(q, 10, &outer);
    while (weft_iter_next(&outer)) {
      weft_query_iter_group(q, 20, &inner);
      while (weft_iter_next(&inner))
        pairs++;
    }
    assert_true(pairs > 0);
    assert_int_equal(weft_world_defer_depth(f.w), 0);
    weft_world_destroy(f.w);
  }
}

static void test_group_list_and_counts(void **state) {
  (void)state;
  gw_t f = gw_new();
  populate_groups(&f);
  weft_query_t *q = grouped(&f);
  uint64_t out[8];
  assert_int_equal(weft_query_groups(q, NULL, 0), 4);
  assert_int_equal(weft_query_groups(q, out, 8), 4);
  assert_int_equal(out[0], 0);
  assert_int_equal(out[1], 10);
  assert_int_equal(out[2], 20);
  assert_int_equal(out[3], 30);
  /* A short array gets the lowest ones; the count is still all of them. */
  memset(out, 0xff, sizeof out);
  assert_int_equal(weft_query_groups(q, out, 2), 4);
  assert_int_equal(out[1], 10);
  assert_int_equal(out[2], UINT64_MAX);
  assert_int_equal(weft_query_count(q), ALL);
  /* An emptied group is no longer listed, and counts 0. */
  weft_query_t *g2 = NULL;
  assert_int_equal(
      weft_query_create(f.w, &(weft_query_desc_t){.include = {f.g.g2}}, &g2),
      WEFT_OK);
  weft_cmdbuf_t *b = NULL;
  assert_int_equal(weft_cmdbuf_create(f.w, &b), WEFT_OK);
  assert_int_equal(weft_cmd_despawn_query(b, g2), WEFT_OK);
  assert_int_equal(weft_world_apply(f.w, &b, 1), WEFT_OK);
  assert_int_equal(weft_query_group_count(q, 20), 0);
  assert_int_equal(weft_query_groups(q, out, 8), 3);
  assert_int_equal(out[2], 30);
  /* An ungrouped query has one group, 0. */
  weft_query_t *plain = NULL;
  assert_int_equal(
      weft_query_create(f.w, &(weft_query_desc_t){.include = {f.a}}, &plain),
      WEFT_OK);
  assert_int_equal(weft_query_groups(plain, out, 8), 1);
  assert_int_equal(out[0], 0);
  assert_int_equal(weft_query_group_count(plain, 0), ALL - 600);
  assert_int_equal(weft_query_groups(NULL, out, 8), 0);
  assert_int_equal(weft_query_group_count(NULL, 0), 0);
  weft_world_destroy(f.w);
}

/* Archetypes created after the query join their group at its end. */
static void test_group_new_archetypes_join_their_group(void **state) {
  (void)state;
  gw_t f = gw_new();
  weft_component_t x = wt_register_tag(f.w, "x");
  weft_query_t *q = grouped(&f);
  assert_int_equal(weft_query_archetype_count(q), 0);
  populate_groups(&f);
  /* Group 10 gains a third archetype, made last: it goes after the
   * others of group 10, before group 20. */
  const weft_component_t comps[] = {f.a, f.g.g1, x, 0};
  uint32_t base = 15000;
  assert_int_equal(weft_spawn_batch(f.w, 200, comps, fill_a, &base, NULL),
                   WEFT_OK);
  assert_int_equal(weft_query_archetype_count(q), 6);
  static uint32_t v[ALL + 200];
  weft_iter_t it;
  weft_query_iter(q, &it);
  assert_int_equal(collect(&it, v, ALL + 200), ALL + 200);
  assert_true(in_group_order(v, ALL + 200));
  assert_int_equal(v[500], 10000);
  assert_int_equal(v[900], 15000);
  assert_int_equal(v[1100], 20000);
  assert_int_equal(weft_query_group_count(q, 10), 600);
  weft_world_destroy(f.w);
}

/* --- systems --------------------------------------------------------------
 */

enum { SYS_SEQ = 4096 };

typedef struct seen_t {
  uint32_t first[SYS_SEQ]; /* a of the chunk's first row, by sequence */
  uint32_t rows[SYS_SEQ];
  weft_component_t b;
} seen_t;

/* Notes each chunk under its sequence number (one slot each, so workers
 * never share one) and stamps its rows through a command keyed by the
 * chunk: b = a, in visit order. */
static int note_chunk(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  seen_t *s = ctx->user;
  if (ctx->chunk >= SYS_SEQ)
    return WEFT_ELIMIT;
  const uint32_t *a = chunk->columns[0];
  s->first[ctx->chunk] = a[0];
  s->rows[ctx->chunk] = chunk->count;
  for (uint32_t r = 0; r < chunk->count; r++)
    if (weft_cmd_set(ctx->cmd, chunk->entities[r], s->b, &a[r]))
      return WEFT_ENOMEM;
  /* A spawn per chunk: handles are issued in merge (visit) order. */
  weft_entity_t e;
  const weft_component_t none[] = {0};
  return weft_cmd_spawn(ctx->cmd, none, NULL, &e);
}

static void run_grouped_system(uint32_t workers, uint64_t *digest,
                               uint32_t *order, uint32_t *norder) {
  fx_t fx = fx_new(workers, WEFT_CHUNK_SIZE_MIN);
  gw_t f;
  memset(&f, 0, sizeof f);
  f.w = fx.w;
  f.a = wt_register(f.w, "a", sizeof(uint32_t), 0);
  f.g.g1 = wt_register_tag(f.w, "g1");
  f.g.g2 = wt_register_tag(f.w, "g2");
  f.g.g3 = wt_register_tag(f.w, "g3");
  static seen_t s;
  memset(&s, 0, sizeof s);
  s.b = wt_register(f.w, "b", sizeof(uint32_t), 0);
  populate_groups(&f);
  weft_system_desc_t d =
      sys_desc("grouped", WEFT_PHASE_PRE_UPDATE, note_chunk, &s);
  d.query = (weft_query_desc_t){
      .include = {f.a}, .group_by = by_tag, .group_ctx = &f.g};
  d.term_access[0] = WEFT_ACCESS_READ;
  d.cmd_write[0] = s.b;
  d.batch = 1; /* let idle workers split the run chunk by chunk */
  sys_add(f.w, &d);
  /* What iterating the same grouped query yields now, chunk by chunk
   * (the frame's commands move every row afterwards). */
  static uint32_t want[SYS_SEQ];
  uint32_t nwant = 0;
  weft_query_t *q = grouped(&f);
  weft_iter_t it;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    assert_true(nwant < SYS_SEQ);
    want[nwant++] = ((const uint32_t *)it.columns[0])[0];
  }
  progress_ok(f.w, 0.016);
  /* The chunks by sequence number: the visit order. */
  uint32_t n = 0, rows = 0;
  for (uint32_t i = 0; i < SYS_SEQ; i++)
    if (s.rows[i]) {
      order[n++] = s.first[i];
      rows += s.rows[i];
    }
  assert_int_equal(rows, ALL);
  *norder = n;
  assert_int_equal(n, nwant);
  assert_memory_equal(order, want, n * sizeof want[0]);
  *digest = weft_world_digest(f.w);
  fx_free(&fx);
}

static void test_group_systems_visit_in_group_order(void **state) {
  (void)state;
  static uint32_t o1[SYS_SEQ], o2[SYS_SEQ];
  uint64_t d1, d2;
  uint32_t n1, n2;
  run_grouped_system(0, &d1, o1, &n1);
  run_grouped_system(2, &d2, o2, &n2);
  assert_int_equal(n1, n2);
  assert_true(n1 > 8); /* several chunks per archetype */
  assert_memory_equal(o1, o2, n1 * sizeof o1[0]);
  assert_true(in_group_order(o1, n1));
  assert_int_equal(d1, d2); /* same world on 1 and 2 workers */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_group_iteration_is_in_group_order),
      cmocka_unit_test(test_group_iter_group_visits_one_group),
      cmocka_unit_test(test_group_list_and_counts),
      cmocka_unit_test(test_group_new_archetypes_join_their_group),
      cmocka_unit_test(test_group_systems_visit_in_group_order),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
