/* SPDX-License-Identifier: MIT */
/* Unit tests for relations: the edge store, queries on the relation's bit,
 * traversals, deaths and cascades, staging, commands and the digest. */
#include "support/relation_test.h"

#include "core/relation.h" /* the vector header's layout */

typedef struct pay_t {
  int32_t a;
  int32_t b;
} pay_t;

static weft_component_t reg_rel(weft_world_t *w, const char *name,
                                uint32_t size, uint32_t flags) {
  /* A dense relation's payload is a column, one per source: the tests of
   * payloads on non-exclusive relations run them sparse. Every other
   * relation here is dense (the default). */
  if (size && !(flags & WEFT_RELATION_EXCLUSIVE))
    flags |= WEFT_RELATION_SPARSE;
  return wt_rel(w, name, size, flags);
}

/* Collects callback arguments. */
typedef struct seen_t {
  weft_entity_t e[64];
  uint32_t depth[64];
  int32_t pay[64];
  uint32_t n;
  uint32_t stop_after; /* 0: never */
} seen_t;

static bool on_edge(weft_entity_t src, weft_entity_t tgt, void *payload,
                    void *user) {
  seen_t *s = user;
  (void)src;
  if (s->n < 64) {
    s->e[s->n] = tgt;
    s->pay[s->n] = payload ? ((pay_t *)payload)->a : -1;
  }
  s->n++;
  return s->stop_after == 0 || s->n < s->stop_after;
}

static bool on_source(weft_entity_t src, weft_entity_t tgt, void *payload,
                      void *user) {
  (void)tgt;
  seen_t *s = user;
  if (s->n < 64) {
    s->e[s->n] = src;
    s->pay[s->n] = payload ? ((pay_t *)payload)->a : -1;
  }
  s->n++;
  return true;
}

static bool on_visit(weft_entity_t e, uint32_t depth, void *user) {
  seen_t *s = user;
  if (s->n < 64) {
    s->e[s->n] = e;
    s->depth[s->n] = depth;
  }
  s->n++;
  return s->stop_after == 0 || s->n < s->stop_after;
}

static uint32_t query_count(weft_world_t *w, weft_component_t inc,
                            weft_component_t exc) {
  weft_query_desc_t d;
  memset(&d, 0, sizeof d);
  d.include[0] = inc;
  d.exclude[0] = exc;
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(w, &d, &q), WEFT_OK);
  uint32_t n = weft_query_count(q);
  assert_int_equal(weft_query_destroy(q), WEFT_OK);
  return n;
}

static void test_relation_register_rejects_bad_input(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t r = 0;
  weft_relation_desc_t d = {.name = "R"};
  assert_int_equal(weft_relation_register(NULL, &d, &r), WEFT_EINVAL);
  assert_int_equal(weft_relation_register(w, NULL, &r), WEFT_EINVAL);
  assert_int_equal(weft_relation_register(w, &d, NULL), WEFT_EINVAL);
  d.flags = WEFT_RELATION_CASCADE;
  assert_int_equal(weft_relation_register(w, &d, &r), WEFT_EINVAL);
  assert_non_null(strstr(weft_world_last_error(w), "EXCLUSIVE"));
  d.flags = 0x80;
  assert_int_equal(weft_relation_register(w, &d, &r), WEFT_EINVAL);
  d.flags = 0;
  d.size = 6;
  d.alignment = 4;
  assert_int_equal(weft_relation_register(w, &d, &r), WEFT_ELAYOUT);
  d.size = 64;
  d.alignment = 32;
  assert_int_equal(weft_relation_register(w, &d, &r), WEFT_ELAYOUT);
  d.alignment = 0;
  d.name = "";
  assert_int_equal(weft_relation_register(w, &d, &r), WEFT_EINVAL);
  assert_int_equal(weft_component_count(w), 0); /* nothing registered */
  d.name = "R";
  /* A dense payload is a column: one edge per source. */
  assert_int_equal(weft_relation_register(w, &d, &r), WEFT_EINVAL);
  d.flags = WEFT_RELATION_EXCLUSIVE;
  assert_int_equal(weft_relation_register(w, &d, &r), WEFT_OK);
  assert_int_equal(weft_relation_register(w, &d, &r), WEFT_EEXIST);
  wt_register(w, "Plain", 4, 4);
  d.name = "Plain";
  assert_int_equal(weft_relation_register(w, &d, &r), WEFT_EEXIST);
  weft_component_info_t info;
  weft_component_t id = 0;
  assert_int_equal(weft_component_lookup(w, "R", &id), WEFT_OK);
  assert_int_equal(weft_component_info(w, id, &info), WEFT_OK);
  assert_true(info.flags & WEFT_COMPONENT_RELATION);
  weft_world_destroy(w);
}

static void test_relation_add_has_first_each_sources(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t likes = reg_rel(w, "Likes", sizeof(pay_t), 0);
  weft_entity_t a = wt_spawn(w), t[4];
  for (int i = 0; i < 4; i++)
    t[i] = wt_spawn(w);
  /* Added out of order: read back in ascending target order. */
  int order[4] = {2, 0, 3, 1};
  for (int i = 0; i < 4; i++) {
    pay_t p = {order[i] * 10, 0};
    assert_int_equal(weft_relation_add(w, a, likes, t[order[i]], &p), WEFT_OK);
  }
  assert_int_equal(weft_relation_count(w, a, likes), 4);
  assert_int_equal(weft_relation_edge_count(w), 4);
  assert_true(weft_relation_has(w, a, likes, t[3]));
  assert_false(weft_relation_has(w, t[3], likes, a));
  weft_entity_t first = 0;
  assert_int_equal(weft_relation_first(w, a, likes, &first), WEFT_OK);
  assert_int_equal(first, t[0]);
  assert_int_equal(weft_relation_first(w, t[0], likes, &first), WEFT_ENOTFOUND);
  assert_int_equal(first, WEFT_ENTITY_NULL);
  seen_t s = {0};
  assert_int_equal(weft_relation_each(w, a, likes, on_edge, &s), WEFT_OK);
  assert_int_equal(s.n, 4);
  for (uint32_t i = 0; i < 4; i++) {
    assert_int_equal(s.e[i], t[i]);
    assert_int_equal(s.pay[i], (int32_t)i * 10);
  }
  memset(&s, 0, sizeof s);
  s.stop_after = 2;
  assert_int_equal(weft_relation_each(w, a, likes, on_edge, &s), WEFT_OK);
  assert_int_equal(s.n, 2);
  /* An existing edge takes the new payload and stays one edge. */
  pay_t p = {77, 1};
  assert_int_equal(weft_relation_add(w, a, likes, t[1], &p), WEFT_OK);
  assert_int_equal(weft_relation_count(w, a, likes), 4);
  pay_t *got = weft_relation_get(w, a, likes, t[1]);
  assert_non_null(got);
  assert_int_equal(got->a, 77);
  got->b = 5; /* payloads are writable in place */
  assert_int_equal(((pay_t *)weft_relation_get(w, a, likes, t[1]))->b, 5);
  assert_null(weft_relation_get(w, t[1], likes, a));
  /* NULL value zero-fills. */
  weft_entity_t b = wt_spawn(w);
  assert_int_equal(weft_relation_add(w, b, likes, t[1], NULL), WEFT_OK);
  assert_int_equal(((pay_t *)weft_relation_get(w, b, likes, t[1]))->a, 0);
  /* Sources of t[1], ascending. */
  memset(&s, 0, sizeof s);
  assert_int_equal(weft_relation_sources(w, t[1], likes, on_source, &s),
                   WEFT_OK);
  assert_int_equal(s.n, 2);
  assert_int_equal(s.e[0], a);
  assert_int_equal(s.e[1], b);
  assert_int_equal(s.pay[0], 77);
  /* Remove one, then a missing one (a no-op). */
  assert_int_equal(weft_relation_remove(w, a, likes, t[1]), WEFT_OK);
  assert_int_equal(weft_relation_remove(w, a, likes, t[1]), WEFT_OK);
  assert_false(weft_relation_has(w, a, likes, t[1]));
  assert_int_equal(weft_relation_count(w, a, likes), 3);
  assert_int_equal(weft_relation_edge_count(w), 4);
  weft_world_destroy(w);
}

static void test_relation_exclusive_replaces(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t child =
      reg_rel(w, "ChildOf", sizeof(pay_t), WEFT_RELATION_EXCLUSIVE);
  weft_entity_t c = wt_spawn(w), p1 = wt_spawn(w), p2 = wt_spawn(w);
  pay_t v1 = {1, 1}, v2 = {2, 2};
  assert_int_equal(weft_relation_add(w, c, child, p2, &v2), WEFT_OK);
  assert_int_equal(weft_relation_add(w, c, child, p1, &v1), WEFT_OK);
  assert_int_equal(weft_relation_count(w, c, child), 1);
  assert_false(weft_relation_has(w, c, child, p2));
  assert_true(weft_relation_has(w, c, child, p1));
  assert_int_equal(((pay_t *)weft_relation_get(w, c, child, p1))->a, 1);
  seen_t s = {0};
  assert_int_equal(weft_relation_sources(w, p2, child, on_source, &s), WEFT_OK);
  assert_int_equal(s.n, 0); /* the reverse entry went too */
  assert_int_equal(weft_relation_edge_count(w), 1);
  /* Still in the relation's archetype. */
  assert_true(weft_has(w, c, child));
  weft_world_destroy(w);
}

static void test_relation_plain_calls_are_refused(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t rel = reg_rel(w, "R", 0, 0);
  weft_component_t tag = wt_register_tag(w, "Tag");
  weft_entity_t a = wt_spawn(w), b = wt_spawn(w), c = wt_spawn(w);
  assert_int_equal(weft_add(w, a, rel, NULL), WEFT_EINVAL);
  assert_false(weft_has(w, a, rel));
  assert_int_equal(weft_set(w, a, rel, &b), WEFT_EINVAL);
  assert_int_equal(weft_relation_add(w, a, rel, b, NULL), WEFT_OK);
  assert_int_equal(weft_relation_add(w, a, rel, c, NULL), WEFT_OK);
  assert_int_equal(weft_add(w, a, rel, NULL), WEFT_EINVAL);
  assert_int_equal(weft_disable(w, a, rel), WEFT_EINVAL);
  assert_true(weft_is_enabled(w, a, rel));
  /* Not a relation. */
  assert_int_equal(weft_relation_add(w, a, tag, b, NULL), WEFT_EINVAL);
  assert_int_equal(weft_relation_add(w, a, 999, b, NULL), WEFT_EINVAL);
  assert_int_equal(weft_relation_add(w, a, rel, WEFT_ENTITY_NULL, NULL),
                   WEFT_EINVAL);
  weft_entity_t t = 0;
  assert_int_equal(weft_relation_first(w, a, tag, &t), WEFT_EINVAL);
  assert_int_equal(weft_relation_each(w, a, rel, NULL, NULL), WEFT_EINVAL);
  /* Spawn lists cannot name a relation: an edge needs a target. */
  weft_component_t list[] = {tag, rel, 0};
  weft_entity_t x = 0;
  assert_int_equal(weft_spawn_with(w, list, NULL, &x), WEFT_EINVAL);
  assert_non_null(strstr(weft_world_last_error(w), "relation"));
  /* weft_remove of the relation removes every edge of it. */
  assert_int_equal(weft_remove(w, a, rel), WEFT_OK);
  assert_int_equal(weft_relation_count(w, a, rel), 0);
  assert_false(weft_has(w, a, rel));
  assert_int_equal(weft_relation_edge_count(w), 0);
  /* Commands refuse non-relations and NULL targets at record time. */
  weft_cmdbuf_t *buf = NULL;
  assert_int_equal(weft_cmdbuf_create(w, &buf), WEFT_OK);
  assert_int_equal(weft_cmd_relation_add(buf, a, tag, b, NULL), WEFT_EINVAL);
  assert_int_equal(weft_cmd_relation_add(buf, a, rel, 0, NULL), WEFT_EINVAL);
  assert_int_equal(weft_cmd_relation_add(NULL, a, rel, b, NULL), WEFT_EINVAL);
  assert_int_equal(weft_cmd_spawn(buf, list, NULL, &x), WEFT_EINVAL);
  /* A plain command on a relation fails when applied, changing nothing. */
  assert_int_equal(weft_cmd_add(buf, a, rel, NULL), WEFT_OK);
  assert_int_equal(weft_world_apply(w, &buf, 1), WEFT_EINVAL);
  assert_false(weft_has(w, a, rel));
  assert_int_equal(weft_cmdbuf_destroy(buf), WEFT_OK);
  weft_world_destroy(w);
}

static void test_relation_wildcard_queries(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t pos = wt_register(w, "Pos", 4, 4);
  weft_component_t rel = reg_rel(w, "Follows", 0, WEFT_RELATION_SPARSE);
  /* Created before any entity has the relation: it must see the
   * archetypes the edges create later. */
  weft_query_desc_t d;
  memset(&d, 0, sizeof d);
  d.include[0] = pos;
  d.include[1] = rel;
  weft_query_t *with = NULL;
  assert_int_equal(weft_query_create(w, &d, &with), WEFT_OK);
  weft_component_t comps[] = {pos, 0};
  weft_entity_t e[6];
  for (int i = 0; i < 6; i++)
    e[i] = wt_spawn_with(w, comps, NULL);
  assert_int_equal(weft_query_count(with), 0);
  assert_int_equal(weft_relation_add(w, e[0], rel, e[5], NULL), WEFT_OK);
  assert_int_equal(weft_relation_add(w, e[1], rel, e[5], NULL), WEFT_OK);
  assert_int_equal(weft_relation_add(w, e[1], rel, e[4], NULL), WEFT_OK);
  assert_int_equal(weft_query_count(with), 2);
  assert_int_equal(query_count(w, pos, rel), 4);
  /* Iterate: the rows are the sources. */
  weft_iter_t it;
  uint32_t rows = 0;
  weft_query_iter(with, &it);
  while (weft_iter_next(&it))
    for (uint32_t i = 0; i < it.count; i++) {
      assert_true(it.entities[i] == e[0] || it.entities[i] == e[1]);
      rows++;
    }
  assert_int_equal(rows, 2);
  /* Removing one of two edges keeps the bit; the last one drops it. */
  assert_int_equal(weft_relation_remove(w, e[1], rel, e[5]), WEFT_OK);
  assert_int_equal(weft_query_count(with), 2);
  assert_int_equal(weft_relation_remove(w, e[1], rel, e[4]), WEFT_OK);
  assert_int_equal(weft_query_count(with), 1);
  assert_int_equal(query_count(w, pos, rel), 5);
  assert_int_equal(weft_query_destroy(with), WEFT_OK);
  weft_world_destroy(w);
}

/* A DAG: r <- a, r <- b, a <- c, b <- c, c <- d (x <- y: y's edge to x). */
static void test_relation_traverse_dag_once(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t rel = reg_rel(w, "Under", 0, 0);
  weft_entity_t r = wt_spawn(w), a = wt_spawn(w), b = wt_spawn(w),
                c = wt_spawn(w), d = wt_spawn(w);
  assert_int_equal(weft_relation_add(w, b, rel, r, NULL), WEFT_OK);
  assert_int_equal(weft_relation_add(w, a, rel, r, NULL), WEFT_OK);
  assert_int_equal(weft_relation_add(w, c, rel, a, NULL), WEFT_OK);
  assert_int_equal(weft_relation_add(w, c, rel, b, NULL), WEFT_OK);
  assert_int_equal(weft_relation_add(w, d, rel, c, NULL), WEFT_OK);
  assert_int_equal(weft_relation_add(w, r, rel, d, NULL), WEFT_OK); /* cycle */
  seen_t s = {0};
  assert_int_equal(weft_relation_traverse(w, r, rel, on_visit, &s), WEFT_OK);
  /* Pre-order, ascending at each level: a, c, d, then b (c seen). */
  assert_int_equal(s.n, 4);
  weft_entity_t want[4] = {a, c, d, b};
  uint32_t depth[4] = {0, 1, 2, 0};
  for (uint32_t i = 0; i < 4; i++) {
    assert_int_equal(s.e[i], want[i]);
    assert_int_equal(s.depth[i], depth[i]);
  }
  memset(&s, 0, sizeof s);
  s.stop_after = 2;
  assert_int_equal(weft_relation_traverse(w, r, rel, on_visit, &s), WEFT_OK);
  assert_int_equal(s.n, 2);
  memset(&s, 0, sizeof s);
  assert_int_equal(weft_relation_traverse(w, d, rel, on_visit, &s), WEFT_OK);
  assert_int_equal(s.n, 4); /* r, b, a, c around the cycle; d excluded */
  weft_world_destroy(w);
}

static bool try_mutate(weft_entity_t e, uint32_t depth, void *user) {
  (void)depth;
  weft_world_t **wp = user;
  weft_component_t rel = 0;
  assert_int_equal(weft_component_lookup(wp[0], "Up", &rel), WEFT_OK);
  assert_int_equal(weft_relation_add(wp[0], e, rel, e, NULL), WEFT_EBUSY);
  return true;
}

static void test_relation_walk_up_depth_and_cycle(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t up = reg_rel(w, "Up", 0, WEFT_RELATION_EXCLUSIVE);
  weft_entity_t e[8];
  for (int i = 0; i < 8; i++)
    e[i] = wt_spawn(w);
  for (int i = 0; i < 7; i++)
    assert_int_equal(weft_relation_add(w, e[i], up, e[i + 1], NULL), WEFT_OK);
  seen_t s = {0};
  assert_int_equal(weft_relation_walk_up(w, e[0], up, 0, on_visit, &s),
                   WEFT_OK);
  assert_int_equal(s.n, 7);
  for (uint32_t i = 0; i < 7; i++) {
    assert_int_equal(s.e[i], e[i + 1]);
    assert_int_equal(s.depth[i], i + 1);
  }
  uint32_t depth = 99;
  assert_int_equal(weft_relation_depth(w, e[0], up, 0, &depth), WEFT_OK);
  assert_int_equal(depth, 7);
  assert_int_equal(weft_relation_depth(w, e[7], up, 0, &depth), WEFT_OK);
  assert_int_equal(depth, 0);
  assert_int_equal(weft_relation_depth(w, e[0], up, 6, &depth), WEFT_ELIMIT);
  assert_int_equal(depth, 0);
  assert_int_equal(weft_relation_depth(w, e[0], up, 0, NULL), WEFT_EINVAL);
  memset(&s, 0, sizeof s);
  assert_int_equal(weft_relation_walk_up(w, e[0], up, 3, on_visit, &s),
                   WEFT_ELIMIT);
  assert_int_equal(s.n, 3);
  memset(&s, 0, sizeof s);
  s.stop_after = 2;
  assert_int_equal(weft_relation_walk_up(w, e[0], up, 0, on_visit, &s),
                   WEFT_OK);
  assert_int_equal(s.n, 2);
  /* Close a cycle e[7] -> e[4]: an error naming the cycle, not a hang. */
  assert_int_equal(weft_relation_add(w, e[7], up, e[4], NULL), WEFT_OK);
  memset(&s, 0, sizeof s);
  assert_int_equal(weft_relation_walk_up(w, e[0], up, 0, on_visit, &s),
                   WEFT_ECYCLE);
  char want[64];
  snprintf(want, sizeof want, "%#llx", (unsigned long long)e[4]);
  assert_non_null(strstr(weft_world_last_error(w), want));
  snprintf(want, sizeof want, "%#llx", (unsigned long long)e[7]);
  assert_non_null(strstr(weft_world_last_error(w), want));
  assert_int_equal(s.n, 7); /* e[1]..e[7], each once */
  assert_int_equal(weft_relation_depth(w, e[0], up, 0, &depth), WEFT_ECYCLE);
  /* Callbacks cannot change edges. */
  weft_world_t *wp[1] = {w};
  assert_int_equal(weft_relation_walk_up(w, e[5], up, 0, try_mutate, wp),
                   WEFT_ECYCLE);
  weft_world_destroy(w);
}

static void test_relation_stale_handles_are_misses(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t rel = reg_rel(w, "R", 4, 0);
  weft_entity_t a = wt_spawn(w), b = wt_spawn(w), dead = wt_spawn(w);
  assert_int_equal(weft_despawn(w, dead), WEFT_OK);
  weft_entity_t reuse = wt_spawn(w); /* may take dead's slot */
  weft_entity_t forged = wt_handle(12345, 3, 0);
  uint64_t stale0 = wt_stats(w).stale;
  assert_int_equal(weft_relation_add(w, a, rel, dead, NULL), WEFT_ESTALE);
  assert_int_equal(weft_relation_add(w, dead, rel, a, NULL), WEFT_ESTALE);
  assert_int_equal(weft_relation_add(w, forged, rel, a, NULL), WEFT_ESTALE);
  assert_int_equal(weft_relation_remove(w, a, rel, forged), WEFT_ESTALE);
  /* A removal checks the target only when the edge is missing: either way
   * a dead end is reported, and a missing edge to a live one is not. */
  assert_int_equal(weft_relation_add(w, a, rel, b, NULL), WEFT_OK);
  assert_int_equal(weft_relation_remove(w, a, rel, dead), WEFT_ESTALE);
  assert_int_equal(weft_relation_remove(w, dead, rel, b), WEFT_ESTALE);
  assert_int_equal(weft_relation_remove(w, b, rel, a), WEFT_OK);
  assert_int_equal(weft_relation_remove(w, a, rel, b), WEFT_OK);
  assert_false(weft_has(w, a, rel));
  assert_int_equal(weft_relation_remove(w, a, rel, b), WEFT_OK);
  assert_false(weft_relation_has(w, dead, rel, a));
  assert_null(weft_relation_get(w, dead, rel, a));
  weft_entity_t t = 1;
  assert_int_equal(weft_relation_first(w, dead, rel, &t), WEFT_ESTALE);
  assert_int_equal(weft_relation_sources(w, dead, rel, on_source, NULL),
                   WEFT_ESTALE);
  assert_int_equal(weft_relation_traverse(w, forged, rel, on_visit, NULL),
                   WEFT_ESTALE);
  assert_int_equal(weft_relation_walk_up(w, dead, rel, 0, on_visit, NULL),
                   WEFT_ESTALE);
  assert_true(wt_stats(w).stale > stale0 + 8);
  /* A slot's new occupant does not inherit the old one's edges. */
  assert_int_equal(weft_relation_add(w, a, rel, reuse, NULL), WEFT_OK);
  assert_int_equal(weft_relation_add(w, reuse, rel, b, NULL), WEFT_OK);
  assert_int_equal(weft_despawn(w, reuse), WEFT_OK);
  weft_entity_t again = wt_spawn(w);
  assert_int_equal(weft_relation_count(w, again, rel), 0);
  assert_false(weft_relation_has(w, a, rel, again));
  assert_int_equal(weft_relation_count(w, a, rel), 0);
  assert_false(weft_has(w, a, rel));
  weft_world_destroy(w);
}

static void test_relation_target_death_removes_incoming(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t rel = reg_rel(w, "Owns", 8, 0);
  weft_entity_t t = wt_spawn(w), o = wt_spawn(w), s[5];
  for (int i = 0; i < 5; i++) {
    s[i] = wt_spawn(w);
    assert_int_equal(weft_relation_add(w, s[i], rel, t, NULL), WEFT_OK);
  }
  assert_int_equal(weft_relation_add(w, s[0], rel, o, NULL), WEFT_OK);
  assert_int_equal(weft_relation_add(w, t, rel, o, NULL), WEFT_OK);
  assert_int_equal(weft_relation_edge_count(w), 7);
  assert_int_equal(weft_despawn(w, t), WEFT_OK);
  for (int i = 0; i < 5; i++)
    assert_true(weft_is_alive(w, s[i])); /* not a cascade */
  assert_int_equal(weft_relation_edge_count(w), 1);
  assert_true(weft_has(w, s[0], rel)); /* its edge to o remains */
  assert_false(weft_has(w, s[1], rel));
  seen_t seen = {0};
  assert_int_equal(weft_relation_sources(w, o, rel, on_source, &seen), WEFT_OK);
  assert_int_equal(seen.n, 1); /* t's outgoing edge went with it */
  assert_int_equal(seen.e[0], s[0]);
  /* Source death. */
  assert_int_equal(weft_despawn(w, s[0]), WEFT_OK);
  assert_int_equal(weft_relation_edge_count(w), 0);
  weft_world_destroy(w);
}

/* Builds root <- a1..a3 <- b (3 each) <- c (2 each): 3 levels, 27 below. */
static uint32_t build_tree(weft_world_t *w, weft_component_t rel,
                           weft_entity_t root, weft_entity_t *all) {
  uint32_t n = 0;
  for (int i = 0; i < 3; i++) {
    weft_entity_t a = wt_spawn(w);
    all[n++] = a;
    assert_int_equal(weft_relation_add(w, a, rel, root, NULL), WEFT_OK);
    for (int j = 0; j < 3; j++) {
      weft_entity_t b = wt_spawn(w);
      all[n++] = b;
      assert_int_equal(weft_relation_add(w, b, rel, a, NULL), WEFT_OK);
      for (int k = 0; k < 2; k++) {
        weft_entity_t c = wt_spawn(w);
        all[n++] = c;
        assert_int_equal(weft_relation_add(w, c, rel, b, NULL), WEFT_OK);
      }
    }
  }
  return n;
}

static void check_cascaded(weft_world_t *w, weft_entity_t root,
                           const weft_entity_t *all, uint32_t n,
                           weft_entity_t other) {
  assert_false(weft_is_alive(w, root));
  for (uint32_t i = 0; i < n; i++)
    assert_false(weft_is_alive(w, all[i]));
  assert_true(weft_is_alive(w, other));
  assert_int_equal(weft_world_count(w), 1);
  assert_int_equal(weft_relation_edge_count(w), 0);
  wt_check_slot_invariant(w);
}

static void test_relation_cascade_three_levels(void **state) {
  (void)state;
  for (int mode = 0; mode < 3; mode++) {
    weft_world_t *w = wt_world_new(NULL);
    weft_component_t rel = reg_rel(
        w, "ChildOf", 0, WEFT_RELATION_EXCLUSIVE | WEFT_RELATION_CASCADE);
    weft_component_t link = reg_rel(w, "Link", 0, 0);
    weft_entity_t root = wt_spawn(w), other = wt_spawn(w), all[40];
    uint32_t n = build_tree(w, rel, root, all);
    assert_int_equal(n, 30);
    /* A non-cascading edge into the subtree and one out of it. */
    assert_int_equal(weft_relation_add(w, other, link, all[5], NULL), WEFT_OK);
    assert_int_equal(weft_relation_add(w, all[7], link, other, NULL), WEFT_OK);
    if (mode == 0) {
      assert_int_equal(weft_despawn(w, root), WEFT_OK);
    } else if (mode == 1) {
      assert_int_equal(weft_world_defer_begin(w), 1);
      assert_int_equal(weft_despawn(w, root), WEFT_OK);
      assert_true(weft_is_alive(w, all[0]));
      assert_int_equal(weft_world_defer_end(w), WEFT_OK);
    } else {
      weft_cmdbuf_t *b = NULL;
      assert_int_equal(weft_cmdbuf_create(w, &b), WEFT_OK);
      assert_int_equal(weft_cmd_despawn(b, root), WEFT_OK);
      assert_int_equal(weft_world_apply(w, &b, 1), WEFT_OK);
      assert_int_equal(weft_cmdbuf_destroy(b), WEFT_OK);
    }
    check_cascaded(w, root, all, n, other);
    assert_false(weft_has(w, other, link));
    weft_world_destroy(w);
  }
}

static void test_relation_staged_in_scope(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t rel = reg_rel(w, "R", sizeof(pay_t), 0);
  weft_entity_t a = wt_spawn(w), b = wt_spawn(w);
  assert_int_equal(weft_world_defer_begin(w), 1);
  weft_entity_t c = 0;
  assert_int_equal(weft_spawn(w, &c), WEFT_OK); /* staged spawn */
  pay_t p = {9, 9};
  assert_int_equal(weft_relation_add(w, a, rel, c, &p), WEFT_OK);
  assert_int_equal(weft_relation_add(w, c, rel, b, NULL), WEFT_OK);
  assert_false(weft_relation_has(w, a, rel, c)); /* not yet */
  assert_int_equal(weft_world_defer_end(w), WEFT_OK);
  assert_true(weft_relation_has(w, a, rel, c));
  assert_int_equal(((pay_t *)weft_relation_get(w, a, rel, c))->a, 9);
  assert_true(weft_relation_has(w, c, rel, b));
  assert_true(weft_has(w, a, rel));
  /* An edge staged to an entity despawned in the same scope is dropped. */
  assert_int_equal(weft_world_defer_begin(w), 1);
  assert_int_equal(weft_relation_add(w, b, rel, a, NULL), WEFT_OK);
  assert_int_equal(weft_despawn(w, a), WEFT_OK);
  assert_int_equal(weft_remove(w, c, rel), WEFT_OK); /* staged remove-all */
  assert_int_equal(weft_world_defer_end(w), WEFT_OK);
  assert_false(weft_is_alive(w, a));
  assert_int_equal(weft_relation_count(w, b, rel), 0);
  assert_int_equal(weft_relation_count(w, c, rel), 0);
  assert_false(weft_has(w, c, rel));
  assert_int_equal(weft_relation_edge_count(w), 0);
  weft_world_destroy(w);
}

static void on_any(weft_world_t *w, const weft_event_t *ev, void *user) {
  (void)w;
  (void)ev;
  (*(uint32_t *)user)++;
}

static void test_relation_with_observers(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t rel = reg_rel(w, "R", 0, 0);
  uint32_t adds = 0;
  weft_observer_desc_t od;
  memset(&od, 0, sizeof od);
  od.events = WEFT_EVENT_ADD;
  od.component = rel;
  od.fn = on_any;
  od.user = &adds;
  weft_observer_t *obs = NULL;
  assert_int_equal(weft_observer_create(w, &od, &obs), WEFT_OK);
  weft_entity_t a = wt_spawn(w), b = wt_spawn(w);
  /* Observers route every structural call through a drain: the edge is
   * there when the call returns, and the observer saw the bit arrive. */
  assert_int_equal(weft_relation_add(w, a, rel, b, NULL), WEFT_OK);
  assert_true(weft_relation_has(w, a, rel, b));
  assert_true(weft_has(w, a, rel));
  assert_int_equal(adds, 1);
  assert_int_equal(weft_despawn(w, b), WEFT_OK);
  assert_false(weft_has(w, a, rel));
  weft_world_destroy(w);
}

static void test_relation_commands_pending_ends(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t rel =
      reg_rel(w, "ChildOf", sizeof(pay_t), WEFT_RELATION_EXCLUSIVE);
  weft_entity_t parent = wt_spawn(w);
  weft_cmdbuf_t *b[2] = {NULL, NULL};
  assert_int_equal(weft_cmdbuf_create(w, &b[0]), WEFT_OK);
  assert_int_equal(weft_cmdbuf_create(w, &b[1]), WEFT_OK);
  weft_entity_t p0 = 0, p1 = 0;
  assert_int_equal(weft_cmd_spawn(b[0], NULL, NULL, &p0), WEFT_OK);
  assert_int_equal(weft_cmd_spawn(b[1], NULL, NULL, &p1), WEFT_OK);
  pay_t v = {3, 4};
  /* p1 (buffer 1) is a child of p0 (buffer 0), p0 of parent. */
  assert_int_equal(weft_cmd_relation_add(b[1], p1, rel, p0, &v), WEFT_OK);
  assert_int_equal(weft_cmd_relation_add(b[0], p0, rel, parent, NULL), WEFT_OK);
  /* Same key: b[0] merges first; b[1]'s later exclusive add wins. */
  assert_int_equal(weft_cmd_relation_add(b[0], p1, rel, parent, NULL), WEFT_OK);
  assert_int_equal(weft_world_apply(w, b, 2), WEFT_OK);
  weft_entity_t e0 = 0, e1 = 0;
  assert_int_equal(weft_cmd_resolve(w, p0, &e0), WEFT_OK);
  assert_int_equal(weft_cmd_resolve(w, p1, &e1), WEFT_OK);
  assert_true(weft_relation_has(w, e0, rel, parent));
  assert_true(weft_relation_has(w, e1, rel, e0));
  assert_false(weft_relation_has(w, e1, rel, parent));
  assert_int_equal(((pay_t *)weft_relation_get(w, e1, rel, e0))->b, 4);
  /* Remove through a command; a stale end is a counted drop. */
  uint64_t stale0 = wt_stats(w).stale;
  assert_int_equal(weft_cmd_relation_remove(b[0], e1, rel, e0), WEFT_OK);
  assert_int_equal(weft_cmd_relation_add(b[0], e0, rel, p0, NULL), WEFT_OK);
  assert_int_equal(weft_world_apply(w, b, 1), WEFT_OK);
  assert_false(weft_relation_has(w, e1, rel, e0));
  assert_true(weft_relation_has(w, e0, rel, parent));
  assert_true(wt_stats(w).stale > stale0);
  assert_int_equal(weft_cmdbuf_destroy(b[0]), WEFT_OK);
  assert_int_equal(weft_cmdbuf_destroy(b[1]), WEFT_OK);
  weft_world_destroy(w);
}

/* --- commands from systems on several workers -------------------------- */

/* Each row links itself to a hub chosen by its index and the frame, or
 * unlinks, through commands. */
static int linker_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  wt_linker_t *l = ctx->user;
  for (uint32_t i = 0; i < chunk->count; i++) {
    weft_entity_t e = chunk->entities[i];
    uint64_t k = (weft_entity_index(e) * 7u + ctx->tick * 3u) % 11u;
    weft_entity_t hub = l->hubs[k % 4];
    int32_t v = (int32_t)(k * 100 + ctx->tick);
    if (k < 6)
      weft_cmd_relation_add(ctx->cmd, e, l->rels[0], hub, &v);
    else if (k < 9)
      weft_cmd_relation_remove(ctx->cmd, e, l->rels[0], hub);
    else
      weft_cmd_relation_add(ctx->cmd, e, l->rels[1], hub, NULL);
  }
  return 0;
}

static uint64_t run_linked(uint32_t workers) {
  wt_linker_t l;
  wt_linker_open(&l, workers);
  l.rels[0] = reg_rel(l.w, "Near", 4, 0);
  l.rels[1] =
      reg_rel(l.w, "Owned", 0, WEFT_RELATION_EXCLUSIVE | WEFT_RELATION_CASCADE);
  wt_linker_start(&l, linker_run);
  wt_linker_frames(&l);
  assert_true(weft_relation_edge_count(l.w) > 100);
  return wt_linker_close(&l);
}

static void test_relation_commands_same_digest_on_workers(void **state) {
  (void)state;
  uint64_t h0 = run_linked(0);
  assert_int_equal(run_linked(1), h0);
  assert_int_equal(run_linked(2), h0);
}

static void test_relation_digest_covers_edges(void **state) {
  (void)state;
  uint64_t h[4];
  for (int v = 0; v < 4; v++) {
    weft_world_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.world_tag = 7;
    weft_world_t *w = wt_world_new(&cfg);
    weft_component_t rel = reg_rel(w, "R", 4, 0);
    weft_entity_t a = wt_spawn(w), b = wt_spawn(w), c = wt_spawn(w);
    int32_t x = v == 3 ? 2 : 1;
    /* v 0 and 1 add the same edges in different orders. */
    if (v == 1) {
      assert_int_equal(weft_relation_add(w, a, rel, c, &x), WEFT_OK);
      assert_int_equal(weft_relation_add(w, a, rel, b, &x), WEFT_OK);
    } else {
      assert_int_equal(weft_relation_add(w, a, rel, b, &x), WEFT_OK);
      assert_int_equal(weft_relation_add(w, a, rel, v == 2 ? a : c, &x),
                       WEFT_OK);
    }
    h[v] = weft_world_digest(w);
    weft_world_destroy(w);
  }
  assert_int_equal(h[0], h[1]);
  assert_int_not_equal(h[0], h[2]); /* another target */
  assert_int_not_equal(h[0], h[3]); /* another payload */
}

static void test_relation_clear_forgets_edges(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t rel = reg_rel(w, "R", 4, 0);
  weft_entity_t a = wt_spawn(w), b = wt_spawn(w);
  assert_int_equal(weft_relation_add(w, a, rel, b, NULL), WEFT_OK);
  assert_int_equal(weft_world_clear(w), WEFT_OK);
  assert_int_equal(weft_relation_edge_count(w), 0);
  a = wt_spawn(w);
  b = wt_spawn(w);
  assert_int_equal(weft_relation_count(w, a, rel), 0);
  assert_int_equal(weft_relation_add(w, a, rel, b, NULL), WEFT_OK);
  assert_int_equal(weft_relation_edge_count(w), 1);
  weft_world_destroy(w);
}

/* Adding and removing edges every tick allocates nothing after warm-up,
 * directly and through command buffers. */
static void test_relation_steady_state_allocates_nothing(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t rel = reg_rel(w, "R", sizeof(pay_t), 0);
  weft_component_t ex = reg_rel(w, "X", 0, WEFT_RELATION_EXCLUSIVE);
  weft_entity_t e[256];
  for (int i = 0; i < 256; i++)
    e[i] = wt_spawn(w);
  weft_cmdbuf_t *buf = NULL;
  assert_int_equal(weft_cmdbuf_create(w, &buf), WEFT_OK);
  wt_alloc_probe_t probe;
  for (int tick = 0; tick < 40; tick++) {
    if (tick == 20)
      probe = wt_alloc_probe(w);
    for (int i = 0; i < 256; i++) {
      pay_t p = {tick, i};
      weft_entity_t t = e[(i * 5 + tick) % 256];
      assert_int_equal(weft_relation_add(w, e[i], rel, t, &p), WEFT_OK);
      assert_int_equal(weft_relation_add(w, e[i], ex, t, NULL), WEFT_OK);
      assert_int_equal(
          weft_cmd_relation_add(buf, e[(i + 1) % 256], rel, e[i], &p), WEFT_OK);
    }
    int rc = weft_world_apply(w, &buf, 1);
    if (rc)
      fail_msg("tick %d: %s", tick, weft_world_last_error(w));
    seen_t s = {0};
    rc = weft_relation_traverse(w, e[0], ex, on_visit, &s);
    if (rc)
      fail_msg("tick %d: %s", tick, weft_world_last_error(w));
    for (int i = 0; i < 256; i++) {
      weft_entity_t t = e[(i * 5 + tick) % 256];
      assert_int_equal(weft_relation_remove(w, e[i], rel, t), WEFT_OK);
      assert_int_equal(
          weft_cmd_relation_remove(buf, e[(i + 1) % 256], rel, e[i]), WEFT_OK);
    }
    assert_int_equal(weft_world_apply(w, &buf, 1), WEFT_OK);
  }
  wt_assert_no_alloc(w, &probe, "20 ticks of adding and removing edges");
  assert_int_equal(weft_relation_edge_count(w), 256); /* the exclusive ones */
  assert_int_equal(weft_cmdbuf_destroy(buf), WEFT_OK);
  weft_world_destroy(w);
}

/* Sources of t under rel, ascending, into out; returns how many. */
static uint32_t sources_of(weft_world_t *w, weft_entity_t t,
                           weft_component_t rel, weft_entity_t *out) {
  seen_t s = {0};
  assert_int_equal(weft_relation_sources(w, t, rel, on_source, &s), WEFT_OK);
  assert_true(s.n <= 64);
  memcpy(out, s.e, s.n * sizeof *out);
  return s.n;
}

/*
 * The direct first-edge add and only-edge remove (relation.c's fast
 * paths) against the general ones: a hub's sources swap-removed in an
 * order that moves entries of one-edge and many-edge sources, a self
 * edge, payloads reused, a source with other edges taking the general
 * path, and the archetype bit following the edges.
 */
static void test_relation_first_and_only_edges(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t likes = reg_rel(w, "Likes", sizeof(pay_t), 0);
  weft_component_t tag = reg_rel(w, "Tagged", 0, 0);
  /* other below hub: e[7]'s edge to hub is its second. */
  weft_entity_t other = wt_spawn(w), hub = wt_spawn(w), e[8];
  for (int i = 0; i < 8; i++)
    e[i] = wt_spawn(w);
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < 8; i++) {
      pay_t p = {round * 100 + i, i};
      assert_int_equal(weft_relation_add(w, e[i], likes, hub, &p), WEFT_OK);
      assert_true(weft_has(w, e[i], likes));
    }
    /* e[7] has a second edge: its hub entry is found by search when the
     * hub's last entry moves. */
    assert_int_equal(weft_relation_add(w, e[7], likes, other, NULL), WEFT_OK);
    /* e[0] goes: e[7]'s entry fills its hole, and e[7]'s edge learns its
     * new place, which the general removal that follows (no read between:
     * a read sorts the entries and fixes every place) relies on. */
    assert_int_equal(weft_relation_remove(w, e[0], likes, hub), WEFT_OK);
    assert_int_equal(weft_relation_remove(w, e[7], likes, hub), WEFT_OK);
    assert_true(weft_has(w, e[7], likes));
    assert_true(weft_relation_has(w, e[7], likes, other));
    for (int i = 0; i < 7; i += 2) {
      if (i)
        assert_int_equal(weft_relation_remove(w, e[i], likes, hub), WEFT_OK);
      assert_false(weft_relation_has(w, e[i], likes, hub));
      assert_false(weft_has(w, e[i], likes));
    }
    weft_entity_t got[64];
    assert_int_equal(sources_of(w, hub, likes, got), 3);
    for (int k = 0; k < 3; k++) {
      assert_int_equal(got[k], e[2 * k + 1]);
      pay_t *p = weft_relation_get(w, e[2 * k + 1], likes, hub);
      assert_non_null(p);
      assert_int_equal(p->a, round * 100 + 2 * k + 1);
    }
    assert_int_equal(weft_relation_remove(w, e[7], likes, other), WEFT_OK);
    assert_false(weft_has(w, e[7], likes));
    for (int i = 1; i < 7; i += 2)
      assert_int_equal(weft_relation_remove(w, e[i], likes, hub), WEFT_OK);
    assert_int_equal(sources_of(w, hub, likes, got), 0);
    /* A self edge, removed by its only-edge path. */
    assert_int_equal(weft_relation_add(w, hub, tag, hub, NULL), WEFT_OK);
    assert_true(weft_relation_has(w, hub, tag, hub));
    assert_int_equal(sources_of(w, hub, tag, got), 1);
    assert_int_equal(got[0], hub);
    assert_int_equal(weft_relation_remove(w, hub, tag, hub), WEFT_OK);
    assert_false(weft_has(w, hub, tag));
    assert_int_equal(weft_relation_edge_count(w), 0);
  }
  /* A removal of a missing edge, with a dead target, is still refused. */
  weft_entity_t dead = wt_spawn(w);
  assert_int_equal(weft_despawn(w, dead), WEFT_OK);
  assert_int_equal(weft_relation_remove(w, e[0], likes, dead), WEFT_ESTALE);
  assert_int_equal(weft_relation_add(w, e[0], likes, dead, NULL), WEFT_ESTALE);
  assert_int_equal(weft_relation_edge_count(w), 0);
  weft_world_destroy(w);
}

/*
 * The direct add takes a target's reverse entries as proof that it lives
 * (they carry its handle's high word) instead of looking it up: every
 * other handle of the hub's slot (other generations, another world tag,
 * the slot's former occupant once a new one has sources) must still be a
 * counted miss that adds nothing, with sparse tag and payload edges alike.
 */
static void test_relation_hub_target_handles_are_checked(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t rels[2] = {
      reg_rel(w, "Near", 0, WEFT_RELATION_SPARSE),
      reg_rel(w, "Owes", sizeof(pay_t), WEFT_RELATION_SPARSE)};
  wt_spawn(w); /* the hub's slot is not 0: its handle is never NULL */
  weft_entity_t hub = wt_spawn(w), e[6];
  for (int i = 0; i < 6; i++)
    e[i] = wt_spawn(w);
  const uint32_t idx = (uint32_t)hub, gen = (uint32_t)(hub >> 32) & 0xffffffu;
  const uint32_t tag = (uint32_t)(hub >> 56);
  const weft_entity_t forged[3] = {wt_handle(idx, gen + 1, tag),
                                   wt_handle(idx, gen ^ 0x800000u, tag),
                                   wt_handle(idx, gen, tag ^ 0x5au)};
  /* The store covers every slot here (an edge that came and went), so
   * that each add below meets the direct path's check, not its bounds. */
  assert_int_equal(weft_relation_add(w, e[5], rels[0], e[4], NULL), WEFT_OK);
  assert_int_equal(weft_relation_remove(w, e[5], rels[0], e[4]), WEFT_OK);
  for (int k = 0; k < 2; k++) {
    pay_t p = {7, k};
    /* The hub gets sources first: its entries vouch for it from then on. */
    for (int i = 0; i < 3; i++)
      assert_int_equal(weft_relation_add(w, e[i], rels[k], hub, &p), WEFT_OK);
    for (int f = 0; f < 3; f++) {
      uint64_t stale0 = wt_stats(w).stale;
      assert_int_equal(weft_relation_add(w, e[3], rels[k], forged[f], &p),
                       WEFT_ESTALE);
      assert_true(wt_stats(w).stale > stale0);
      assert_false(weft_has(w, e[3], rels[k]));
      assert_int_equal(weft_relation_count(w, e[3], rels[k]), 0);
    }
    assert_int_equal(weft_relation_count(w, hub, rels[k]), 0);
    assert_int_equal(sources_of(w, hub, rels[k], (weft_entity_t[64]){0}), 3);
  }
  assert_int_equal(weft_relation_edge_count(w), 6);
  /* The hub dies (its incoming edges with it) and a new entity takes its
   * slot and gets sources of its own: the old handle stays dead. */
  assert_int_equal(weft_despawn(w, hub), WEFT_OK);
  assert_int_equal(weft_relation_edge_count(w), 0);
  weft_entity_t heir = wt_spawn(w);
  for (int tries = 0; tries < 64 && (uint32_t)heir != idx; tries++) {
    assert_int_equal(weft_despawn(w, heir), WEFT_OK);
    heir = wt_spawn(w);
  }
  assert_int_equal((uint32_t)heir, idx);
  assert_true(heir != hub);
  for (int k = 0; k < 2; k++) {
    assert_int_equal(weft_relation_add(w, e[0], rels[k], heir, NULL), WEFT_OK);
    assert_int_equal(weft_relation_add(w, e[1], rels[k], hub, NULL),
                     WEFT_ESTALE);
    assert_false(weft_has(w, e[1], rels[k]));
    assert_int_equal(weft_relation_add(w, e[1], rels[k], heir, NULL), WEFT_OK);
    assert_int_equal(sources_of(w, heir, rels[k], (weft_entity_t[64]){0}), 2);
  }
  assert_int_equal(weft_relation_edge_count(w), 4);
  weft_world_destroy(w);
}

/*
 * A vector's first edge lives inside its header, and the headers' arrays
 * grow with the slots: edges held inline by the first entities (at both
 * ends, with payloads, and a vector that went to heap memory and back to
 * one edge) must read the same after every growth, checked against an
 * array of expected targets and payloads.
 */
static void test_relation_inline_edges_survive_slot_growth(void **state) {
  (void)state;
  enum { N = 3000 };
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t link =
      reg_rel(w, "Link", sizeof(pay_t), WEFT_RELATION_SPARSE);
  weft_component_t owns = reg_rel(w, "Owns", 0, WEFT_RELATION_SPARSE);
  static weft_entity_t e[N];
  static uint32_t want[N]; /* index of e[i]'s Link target, or N: none */
  for (uint32_t i = 0; i < N; i++) {
    e[i] = wt_spawn(w);
    want[i] = N;
  }
  /* A two-edge source (heap memory) going back to one edge. */
  assert_int_equal(weft_relation_add(w, e[2], owns, e[0], NULL), WEFT_OK);
  assert_int_equal(weft_relation_add(w, e[2], owns, e[1], NULL), WEFT_OK);
  assert_int_equal(weft_relation_remove(w, e[2], owns, e[0]), WEFT_OK);
  /* Ascending sources: each add reaches a slot the store has not
   * covered, so the per-slot arrays grow many times on the way. */
  for (uint32_t i = 1; i < N; i++) {
    uint32_t t = (uint32_t)(((uint64_t)i * 2654435761u >> 7) % i); /* earlier */
    pay_t p = {(int32_t)i, (int32_t)t};
    assert_int_equal(weft_relation_add(w, e[i], link, e[t], &p), WEFT_OK);
    want[i] = t;
    if (i % 97 == 0) { /* every edge so far, through the inline vectors */
      for (uint32_t j = 1; j <= i; j++) {
        weft_entity_t got = WEFT_ENTITY_NULL;
        assert_int_equal(weft_relation_first(w, e[j], link, &got), WEFT_OK);
        assert_int_equal(got, e[want[j]]);
        pay_t *q = weft_relation_get(w, e[j], link, e[want[j]]);
        assert_non_null(q);
        assert_int_equal(q->a, (int32_t)j);
      }
    }
  }
  assert_true(weft_relation_has(w, e[2], owns, e[1]));
  assert_int_equal(weft_relation_count(w, e[2], owns), 1);
  /* The reverse index agrees with the oracle. */
  static uint32_t nsrc[N];
  memset(nsrc, 0, sizeof nsrc);
  for (uint32_t i = 1; i < N; i++)
    nsrc[want[i]]++;
  for (uint32_t t = 0; t < N; t += 61) {
    uint32_t n = 0;
    assert_int_equal(weft_relation_sources(w, e[t], link, wt_count_edge, &n),
                     WEFT_OK);
    assert_int_equal(n, nsrc[t]);
  }
  /* Every other edge goes, then the rest: the bit follows. */
  for (uint32_t pass = 0; pass < 2; pass++)
    for (uint32_t i = 1 + pass; i < N; i += 2) {
      assert_int_equal(weft_relation_remove(w, e[i], link, e[want[i]]),
                       WEFT_OK);
      assert_false(weft_has(w, e[i], link));
    }
  assert_int_equal(weft_relation_edge_count(w), 1);
  weft_world_destroy(w);
}

/*
 * weft_relation_sources() reads each payload through the reverse entry's
 * copy of the edge's slot: random adds (new edges and rewrites of
 * existing ones), removals and source deaths on a sparse relation with a
 * payload, checked after every step against an array oracle: the sources
 * of the touched target in ascending handle order, each with its latest
 * payload, and every target's now and then.
 */
static void check_sources(weft_world_t *w, weft_component_t rel,
                          weft_entity_t t, const weft_entity_t *s,
                          const int32_t *val, uint32_t ns, uint32_t stride) {
  weft_entity_t want[64];
  int32_t pay[64];
  uint32_t n = 0;
  for (uint32_t i = 0; i < ns; i++) {
    if (val[i * stride] < 0)
      continue;
    uint32_t k = n++; /* insertion sort by handle: the documented order */
    for (; k > 0 && want[k - 1] > s[i]; k--) {
      want[k] = want[k - 1];
      pay[k] = pay[k - 1];
    }
    want[k] = s[i];
    pay[k] = val[i * stride];
  }
  seen_t got = {0};
  assert_int_equal(weft_relation_sources(w, t, rel, on_source, &got), WEFT_OK);
  assert_int_equal(got.n, n);
  for (uint32_t k = 0; k < n; k++) {
    assert_int_equal(got.e[k], want[k]);
    assert_int_equal(got.pay[k], pay[k]);
  }
}

static void test_relation_sources_payloads_follow_edges(void **state) {
  (void)state;
  enum { NS = 24, NT = 4, STEPS = 4000 };
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t link =
      reg_rel(w, "Link", sizeof(pay_t), WEFT_RELATION_SPARSE);
  weft_entity_t t[NT], s[NS];
  int32_t val[NS][NT]; /* the payload's a of edge s[i] -> t[j], -1: none */
  for (uint32_t j = 0; j < NT; j++)
    t[j] = wt_spawn(w);
  for (uint32_t i = 0; i < NS; i++) {
    s[i] = wt_spawn(w);
    for (uint32_t j = 0; j < NT; j++)
      val[i][j] = -1;
  }
  uint64_t x = 0x9e3779b97f4a7c15u;
  for (int32_t step = 0; step < STEPS; step++) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    uint32_t r = (uint32_t)(x >> 33);
    uint32_t i = r % NS, j = r / NS % NT, op = r / NS / NT % 8;
    if (op < 4) {
      pay_t p = {step, (int32_t)i};
      assert_int_equal(weft_relation_add(w, s[i], link, t[j], &p), WEFT_OK);
      val[i][j] = step;
    } else if (op < 7) {
      assert_int_equal(weft_relation_remove(w, s[i], link, t[j]), WEFT_OK);
      val[i][j] = -1;
    } else { /* the source dies with its edges; another takes its place */
      assert_int_equal(weft_despawn(w, s[i]), WEFT_OK);
      s[i] = wt_spawn(w);
      for (uint32_t k = 0; k < NT; k++)
        val[i][k] = -1;
    }
    check_sources(w, link, t[j], s, &val[0][j], NS, NT);
    if (step % 64 == 0)
      for (uint32_t k = 0; k < NT; k++)
        check_sources(w, link, t[k], s, &val[0][k], NS, NT);
  }
  weft_world_destroy(w);
}

/*
 * A vector header's words: the direct paths recognise an inline vector
 * with n edges and no flags by one comparison of its n and capacity words
 * (weft__rel_v_n()), which holds only while the bit fields are laid out
 * flags first. Every combination of n, capacity and flags is checked
 * against the fields read one by one.
 */
static void test_relation_vec_header_words(void **state) {
  (void)state;
  weft__rel_edge_t heap[4];
  for (uint32_t n = 0; n < 3; n++)
    for (uint32_t cap = 1; cap <= 4; cap *= 4)
      for (uint32_t flags = 0; flags < 4; flags++) {
        weft__rel_vec_t v;
        memset(&v, 0, sizeof v);
        if (cap > WEFT__REL_INLINE)
          v.heap = heap;
        v.n = n;
        v.cap = cap;
        v.sorted = flags & 1u;
        v.queued = flags >> 1;
        weft__rel_edge_t *at = cap > WEFT__REL_INLINE ? heap : &v.one;
        assert_ptr_equal(weft__rel_v(&v), at);
        for (uint32_t k = 0; k < 3; k++)
          assert_ptr_equal(weft__rel_v_n(&v, k), k == n ? at : NULL);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        /* The words the comparison reads: flags low, capacity above. */
        uint64_t words;
        memcpy(&words, &v.n, sizeof words);
        assert_true(words == ((uint64_t)(cap << 2 | flags) << 32 | n));
#endif
      }
  assert_int_equal(sizeof(weft__rel_vec_t), 32);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_relation_register_rejects_bad_input),
      cmocka_unit_test(test_relation_add_has_first_each_sources),
      cmocka_unit_test(test_relation_exclusive_replaces),
      cmocka_unit_test(test_relation_first_and_only_edges),
      cmocka_unit_test(test_relation_hub_target_handles_are_checked),
      cmocka_unit_test(test_relation_inline_edges_survive_slot_growth),
      cmocka_unit_test(test_relation_vec_header_words),
      cmocka_unit_test(test_relation_sources_payloads_follow_edges),
      cmocka_unit_test(test_relation_plain_calls_are_refused),
      cmocka_unit_test(test_relation_wildcard_queries),
      cmocka_unit_test(test_relation_traverse_dag_once),
      cmocka_unit_test(test_relation_walk_up_depth_and_cycle),
      cmocka_unit_test(test_relation_stale_handles_are_misses),
      cmocka_unit_test(test_relation_target_death_removes_incoming),
      cmocka_unit_test(test_relation_cascade_three_levels),
      cmocka_unit_test(test_relation_staged_in_scope),
      cmocka_unit_test(test_relation_with_observers),
      cmocka_unit_test(test_relation_commands_pending_ends),
      cmocka_unit_test(test_relation_commands_same_digest_on_workers),
      cmocka_unit_test(test_relation_digest_covers_edges),
      cmocka_unit_test(test_relation_clear_forgets_edges),
      cmocka_unit_test(test_relation_steady_state_allocates_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
