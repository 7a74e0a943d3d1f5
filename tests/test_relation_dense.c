/* SPDX-License-Identifier: MIT */
/* Unit tests for dense relations: sources placed in archetypes by their
 * (relation, target) pairs, pair query terms, the payload column, moves
 * on re-parenting, deaths, cascades, commands, rollback and clear. */
#include "support/relation_test.h"

#include "core/archetype.h" /* weft__archetype_pair_target_dead */
#include "core/world.h"     /* w->alloc.fail_in, w->archs */

typedef struct slot_t {
  int32_t a;
  int32_t b;
} slot_t;

/* A query over one pair (and optionally one excluded pair). */
static weft_query_t *pair_query(weft_world_t *w, weft_component_t rel,
                                weft_entity_t tgt, weft_component_t xrel,
                                weft_entity_t xtgt) {
  weft_query_desc_t d;
  memset(&d, 0, sizeof d);
  d.pairs[0] = (weft_pair_t){.rel = rel, .target = tgt};
  d.exclude_pairs[0] = (weft_pair_t){.rel = xrel, .target = xtgt};
  weft_query_t *q = NULL;
  int rc = weft_query_create(w, &d, &q);
  if (rc)
    fail_msg("pair query: %s", weft_world_last_error(w));
  return q;
}

/* Iterates q, checking that every chunk's target of rel is want (when
 * not NULL); returns the rows and sums their entity indices in *sum. */
static uint32_t rows_of(const weft_query_t *q, weft_component_t rel,
                        weft_entity_t want, uint64_t *sum) {
  weft_iter_t it;
  uint32_t n = 0;
  uint64_t s = 0;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    if (want != WEFT_ENTITY_NULL)
      assert_true(weft_iter_target(&it, rel) == want);
    for (uint32_t i = 0; i < it.count; i++)
      s += weft_entity_index(it.entities[i]);
    n += it.count;
  }
  if (sum)
    *sum = s;
  return n;
}

static void test_relation_dense_register_rules(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_relation_desc_t d = {.name = "Slot", .size = sizeof(slot_t)};
  weft_component_t r;
  /* A dense payload is a column, one cell per source. */
  assert_int_equal(weft_relation_register(w, &d, &r), WEFT_EINVAL);
  d.flags = WEFT_RELATION_SPARSE;
  assert_int_equal(weft_relation_register(w, &d, &r), WEFT_OK);
  d.name = "Slot2";
  d.flags = WEFT_RELATION_EXCLUSIVE;
  assert_int_equal(weft_relation_register(w, &d, &r), WEFT_OK);
  weft_component_info_t info;
  assert_int_equal(weft_component_info(w, r, &info), WEFT_OK);
  assert_int_equal(info.size, sizeof(slot_t)); /* the column */
  weft_world_destroy(w);
}

/* Pair terms select one target's sources; exclusion and the wildcard
 * bit agree with the edge store; a query made before the edges picks up
 * the pair archetypes made later. */
static void test_relation_dense_pair_queries(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t pos = wt_register(w, "Pos", 4, 4);
  weft_component_t child = wt_rel(w, "ChildOf", 0, WEFT_RELATION_EXCLUSIVE);
  weft_component_t likes = wt_rel(w, "Likes", 0, 0);
  weft_entity_t p1 = wt_spawn(w), p2 = wt_spawn(w);
  weft_query_t *q1 = pair_query(w, child, p1, 0, 0);
  weft_query_t *q2 = pair_query(w, child, p2, 0, 0);
  weft_component_t comps[] = {pos, 0};
  weft_entity_t c[6];
  uint64_t want1 = 0, want2 = 0;
  for (int i = 0; i < 6; i++) {
    c[i] = wt_spawn_with(w, comps, NULL);
    float v = (float)i;
    assert_int_equal(weft_set(w, c[i], pos, &v), WEFT_OK);
    weft_entity_t p = i < 4 ? p1 : p2;
    assert_int_equal(weft_relation_add(w, c[i], child, p, NULL), WEFT_OK);
    *(i < 4 ? &want1 : &want2) += weft_entity_index(c[i]);
  }
  uint64_t sum;
  assert_int_equal(rows_of(q1, child, p1, &sum), 4);
  assert_int_equal(sum, want1);
  assert_int_equal(rows_of(q2, child, p2, &sum), 2);
  assert_int_equal(sum, want2);
  /* Different targets, different archetypes. */
  assert_int_not_equal(weft_archetype_of(w, c[0]), weft_archetype_of(w, c[5]));
  assert_int_equal(weft_archetype_of(w, c[0]), weft_archetype_of(w, c[1]));
  /* The wildcard and an excluded pair. */
  weft_query_desc_t d;
  memset(&d, 0, sizeof d);
  d.include[0] = child;
  weft_query_t *all = NULL;
  assert_int_equal(weft_query_create(w, &d, &all), WEFT_OK);
  assert_int_equal(rows_of(all, child, WEFT_ENTITY_NULL, NULL), 6);
  d.include[0] = pos;
  d.exclude_pairs[0] = (weft_pair_t){.rel = child, .target = p1};
  weft_query_t *notp1 = NULL;
  assert_int_equal(weft_query_create(w, &d, &notp1), WEFT_OK);
  assert_int_equal(rows_of(notp1, child, WEFT_ENTITY_NULL, &sum), 2);
  assert_int_equal(sum, want2);
  /* Several pairs of a non-exclusive relation: both must be there. */
  assert_int_equal(weft_relation_add(w, c[0], likes, p2, NULL), WEFT_OK);
  assert_int_equal(weft_relation_add(w, c[0], likes, p1, NULL), WEFT_OK);
  assert_int_equal(weft_relation_add(w, c[1], likes, p1, NULL), WEFT_OK);
  memset(&d, 0, sizeof d);
  d.pairs[0] = (weft_pair_t){.rel = likes, .target = p1};
  d.pairs[1] = (weft_pair_t){.rel = likes, .target = p2};
  weft_query_t *both = NULL;
  assert_int_equal(weft_query_create(w, &d, &both), WEFT_OK);
  assert_int_equal(rows_of(both, likes, WEFT_ENTITY_NULL, &sum), 1);
  assert_int_equal(sum, weft_entity_index(c[0]));
  /* The first target in ascending order. */
  weft_iter_t it;
  weft_query_iter(both, &it);
  assert_true(weft_iter_next(&it));
  assert_true(weft_iter_target(&it, likes) == (p1 < p2 ? p1 : p2));
  assert_true(weft_iter_target(&it, pos) == WEFT_ENTITY_NULL);
  assert_false(weft_iter_next(&it));
  /* Edges still read from the store. */
  assert_int_equal(weft_relation_count(w, c[0], likes), 2);
  assert_true(weft_relation_has(w, c[0], likes, p1));
  assert_int_equal(weft_relation_remove(w, c[0], likes, p2), WEFT_OK);
  assert_int_equal(rows_of(both, likes, WEFT_ENTITY_NULL, NULL), 0);
  assert_int_equal(weft_relation_remove(w, c[0], likes, p1), WEFT_OK);
  assert_false(weft_has(w, c[0], likes)); /* the last pair took the bit */
  assert_int_equal(weft_archetype_of(w, c[0]), weft_archetype_of(w, c[2]));
  weft_world_destroy(w);
}

/* Re-parenting moves the row between pair archetypes, values along. */
static void test_relation_dense_reparent_moves(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t pos = wt_register(w, "Pos", 4, 4);
  weft_component_t child = wt_rel(w, "ChildOf", 0, WEFT_RELATION_EXCLUSIVE);
  weft_entity_t p1 = wt_spawn(w), p2 = wt_spawn(w);
  weft_query_t *q1 = pair_query(w, child, p1, 0, 0);
  weft_query_t *q2 = pair_query(w, child, p2, 0, 0);
  weft_component_t comps[] = {pos, 0};
  weft_entity_t c[8];
  for (int i = 0; i < 8; i++) {
    c[i] = wt_spawn_with(w, comps, NULL);
    float v = (float)(10 + i);
    assert_int_equal(weft_set(w, c[i], pos, &v), WEFT_OK);
    assert_int_equal(weft_relation_add(w, c[i], child, p1, NULL), WEFT_OK);
  }
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < 8; i += 2) {
      weft_entity_t to = round % 2 == 0 ? p2 : p1;
      assert_int_equal(weft_relation_add(w, c[i], child, to, NULL), WEFT_OK);
      weft_entity_t first;
      assert_int_equal(weft_relation_first(w, c[i], child, &first), WEFT_OK);
      assert_true(first == to);
      assert_int_equal(weft_relation_count(w, c[i], child), 1);
    }
    uint32_t moved = round % 2 == 0 ? 4 : 0;
    assert_int_equal(rows_of(q1, child, p1, NULL), 8 - moved);
    assert_int_equal(rows_of(q2, child, p2, NULL), moved);
  }
  for (int i = 0; i < 8; i++) {
    const float *v = weft_get(w, c[i], pos);
    assert_non_null(v);
    assert_true(*v == (float)(10 + i));
  }
  assert_int_equal(weft_relation_edge_count(w), 8);
  weft_world_destroy(w);
}

/* An exclusive dense payload is a column: the query's, weft_get's and
 * weft_relation_get's cell are one, and an exclusive replacement takes
 * the new value. */
static void test_relation_dense_payload_column(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t slot =
      wt_rel(w, "Slot", sizeof(slot_t), WEFT_RELATION_EXCLUSIVE);
  weft_entity_t t1 = wt_spawn(w), t2 = wt_spawn(w);
  weft_entity_t s[5];
  for (int i = 0; i < 5; i++) {
    s[i] = wt_spawn(w);
    slot_t v = {i, 100 + i};
    assert_int_equal(weft_relation_add(w, s[i], slot, t1, &v), WEFT_OK);
  }
  weft_query_desc_t d;
  memset(&d, 0, sizeof d);
  d.include[0] = slot;
  d.pairs[0] = (weft_pair_t){.rel = slot, .target = t1};
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(w, &d, &q), WEFT_OK);
  /* Read and write through the column. */
  weft_iter_t it;
  uint32_t rows = 0;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    slot_t *col = it.columns[0];
    assert_ptr_equal(col, weft_iter_column_of(&it, slot));
    for (uint32_t i = 0; i < it.count; i++) {
      uint32_t k = 0;
      while (s[k] != it.entities[i])
        k++;
      assert_int_equal(col[i].a, (int32_t)k);
      assert_int_equal(col[i].b, 100 + (int32_t)k);
      assert_ptr_equal(&col[i], weft_relation_get(w, s[k], slot, t1));
      col[i].b = 200 + (int32_t)k;
      rows++;
    }
  }
  assert_int_equal(rows, 5);
  for (int i = 0; i < 5; i++) {
    slot_t *p = weft_relation_get(w, s[i], slot, t1);
    assert_non_null(p);
    assert_int_equal(p->b, 200 + i);
    assert_null(weft_relation_get(w, s[i], slot, t2));
  }
  /* Writing through weft_relation_get shows in the column. */
  ((slot_t *)weft_relation_get(w, s[0], slot, t1))->a = 77;
  assert_int_equal(((const slot_t *)weft_get(w, s[0], slot))->a, 77);
  /* The same target again updates in place; another replaces. */
  slot_t v = {5, 6};
  assert_int_equal(weft_relation_add(w, s[1], slot, t1, &v), WEFT_OK);
  assert_int_equal(((slot_t *)weft_relation_get(w, s[1], slot, t1))->b, 6);
  v = (slot_t){7, 8};
  assert_int_equal(weft_relation_add(w, s[1], slot, t2, &v), WEFT_OK);
  assert_false(weft_relation_has(w, s[1], slot, t1));
  slot_t *p = weft_relation_get(w, s[1], slot, t2);
  assert_non_null(p);
  assert_int_equal(p->a, 7);
  assert_int_equal(p->b, 8);
  assert_int_equal(rows_of(q, slot, t1, NULL), 4);
  /* NULL zero-fills. */
  assert_int_equal(weft_relation_add(w, s[2], slot, t2, NULL), WEFT_OK);
  p = weft_relation_get(w, s[2], slot, t2);
  assert_int_equal(p->a, 0);
  assert_int_equal(p->b, 0);
  /* A direct weft_set() writes the cell; without the edge it is refused. */
  slot_t z = {42, 43};
  assert_int_equal(weft_set(w, s[3], slot, &z), WEFT_OK);
  assert_int_equal(((slot_t *)weft_relation_get(w, s[3], slot, t1))->a, 42);
  assert_int_equal(weft_set(w, t1, slot, &z), WEFT_EINVAL);
  assert_int_equal(weft_relation_edge_count(w), 5);
  weft_world_destroy(w);
}

/* Bad pair terms: a sparse relation, a plain component, a dead target,
 * too many; stale ends of an edge. */
static void test_relation_dense_bad_terms_and_stale(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t pos = wt_register(w, "Pos", 4, 4);
  weft_component_t sp = wt_rel(w, "Sp", 0, WEFT_RELATION_SPARSE);
  weft_component_t dn = wt_rel(w, "Dn", 0, 0);
  weft_entity_t t = wt_spawn(w), dead = wt_spawn(w), s = wt_spawn(w);
  assert_int_equal(weft_despawn(w, dead), WEFT_OK);
  weft_query_desc_t d;
  weft_query_t *q = NULL;
  memset(&d, 0, sizeof d);
  d.pairs[0] = (weft_pair_t){.rel = sp, .target = t};
  assert_int_equal(weft_query_create(w, &d, &q), WEFT_EINVAL);
  d.pairs[0] = (weft_pair_t){.rel = pos, .target = t};
  assert_int_equal(weft_query_create(w, &d, &q), WEFT_EINVAL);
  d.pairs[0] = (weft_pair_t){.rel = dn, .target = dead};
  assert_int_equal(weft_query_create(w, &d, &q), WEFT_ESTALE);
  d.pairs[0] = (weft_pair_t){.rel = dn, .target = t};
  d.exclude_pairs[0] = (weft_pair_t){.rel = dn, .target = dead};
  assert_int_equal(weft_query_create(w, &d, &q), WEFT_ESTALE);
  memset(&d, 0, sizeof d);
  for (uint32_t i = 0; i <= WEFT_QUERY_MAX_TERMS; i++)
    d.pairs[i] = (weft_pair_t){.rel = dn, .target = t};
  assert_int_equal(weft_query_create(w, &d, &q), WEFT_ETOOMANY);
  assert_null(q);
  /* Stale ends change nothing. */
  uint32_t archs = wt_stats(w).archetypes;
  assert_int_equal(weft_relation_add(w, s, dn, dead, NULL), WEFT_ESTALE);
  assert_int_equal(weft_relation_add(w, dead, dn, t, NULL), WEFT_ESTALE);
  assert_int_equal(weft_relation_remove(w, s, dn, dead), WEFT_ESTALE);
  assert_int_equal(wt_stats(w).archetypes, archs);
  assert_int_equal(weft_relation_edge_count(w), 0);
  /* Plain calls are refused for a dense relation too. */
  assert_int_equal(weft_add(w, s, dn, NULL), WEFT_EINVAL);
  assert_int_equal(weft_relation_add(w, s, dn, t, NULL), WEFT_OK);
  assert_int_equal(weft_remove(w, s, dn), WEFT_OK); /* all its edges */
  assert_false(weft_relation_has(w, s, dn, t));
  assert_false(weft_has(w, s, dn));
  weft_world_destroy(w);
}

/* A target's death moves its sources out of the pair's archetype, which
 * stays, empty and marked prunable; a cascade kills the sources. */
static void test_relation_dense_target_death_and_cascade(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t pos = wt_register(w, "Pos", 4, 4);
  weft_component_t likes = wt_rel(w, "Likes", 0, 0);
  weft_component_t owned =
      wt_rel(w, "Owned", 0, WEFT_RELATION_EXCLUSIVE | WEFT_RELATION_CASCADE);
  weft_component_t comps[] = {pos, 0};
  weft_entity_t hub = wt_spawn(w), other = wt_spawn(w);
  weft_entity_t s[6];
  for (int i = 0; i < 6; i++) {
    s[i] = wt_spawn_with(w, comps, NULL);
    assert_int_equal(weft_relation_add(w, s[i], likes, hub, NULL), WEFT_OK);
    assert_int_equal(weft_relation_add(w, s[i], likes, other, NULL), WEFT_OK);
  }
  weft_query_t *qh = pair_query(w, likes, hub, 0, 0);
  weft_query_t *qo = pair_query(w, likes, other, 0, 0);
  assert_int_equal(rows_of(qh, likes, WEFT_ENTITY_NULL, NULL), 6);
  uint32_t pair_arch = weft_archetype_of(w, s[0]);
  assert_int_equal(weft_despawn(w, hub), WEFT_OK);
  assert_int_equal(rows_of(qh, likes, WEFT_ENTITY_NULL, NULL), 0);
  assert_int_equal(rows_of(qo, likes, other, NULL), 6);
  for (int i = 0; i < 6; i++) {
    assert_true(weft_is_alive(w, s[i]));
    assert_int_equal(weft_relation_count(w, s[i], likes), 1);
  }
  /* The emptied archetype stays, its target dead. */
  const weft__archetype_t *a = w->archs[pair_arch - 1]; /* ids from 1 */
  assert_int_equal(a->count, 0);
  assert_true(weft__archetype_pair_target_dead(w, a));
  assert_false(weft__archetype_pair_target_dead(
      w, w->archs[weft_archetype_of(w, s[0]) - 1]));
  /* Cascade: a chain root <- s0 <- s1, and s2 <- s1. */
  weft_entity_t root = wt_spawn(w);
  assert_int_equal(weft_relation_add(w, s[0], owned, root, NULL), WEFT_OK);
  assert_int_equal(weft_relation_add(w, s[1], owned, s[0], NULL), WEFT_OK);
  assert_int_equal(weft_relation_add(w, s[2], owned, s[1], NULL), WEFT_OK);
  weft_query_t *qs1 = pair_query(w, owned, s[1], 0, 0);
  assert_int_equal(rows_of(qs1, owned, s[1], NULL), 1);
  assert_int_equal(weft_despawn(w, root), WEFT_OK);
  for (int i = 0; i < 6; i++)
    assert_int_equal(weft_is_alive(w, s[i]), i >= 3);
  assert_int_equal(rows_of(qs1, owned, WEFT_ENTITY_NULL, NULL), 0);
  assert_int_equal(rows_of(qo, likes, other, NULL), 3);
  assert_int_equal(weft_relation_edge_count(w), 3);
  weft_world_destroy(w);
}

/* Staged edges (a scope) apply at the drain with their moves; observers
 * see pair moves as entering and leaving a pair query. */
typedef struct counts_t {
  uint32_t enter;
  uint32_t leave;
  uint32_t created;
  uint32_t moved;
} counts_t;

static void on_event(weft_world_t *w, const weft_event_t *ev, void *user) {
  (void)w;
  counts_t *c = user;
  if (ev->kind == WEFT_EVENT_ENTER)
    c->enter += ev->count;
  else if (ev->kind == WEFT_EVENT_LEAVE)
    c->leave += ev->count;
  else if (ev->kind == WEFT_EVENT_ARCHETYPE_CREATED)
    c->created++;
  else if (ev->kind == WEFT_EVENT_ARCHETYPE_MOVE)
    c->moved += ev->count;
}

static void test_relation_dense_staged_and_observed(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t slot =
      wt_rel(w, "Slot", sizeof(slot_t), WEFT_RELATION_EXCLUSIVE);
  weft_entity_t t1 = wt_spawn(w), t2 = wt_spawn(w);
  weft_query_t *q1 = pair_query(w, slot, t1, 0, 0);
  counts_t c = {0};
  weft_observer_t *obs = NULL;
  weft_observer_desc_t od = {.events = WEFT_EVENT_ENTER | WEFT_EVENT_LEAVE,
                             .query = q1,
                             .fn = on_event,
                             .user = &c};
  assert_int_equal(weft_observer_create(w, &od, &obs), WEFT_OK);
  counts_t ac = {0};
  weft_observer_t *aobs = NULL;
  weft_observer_desc_t ad = {.events = WEFT_EVENT_ARCHETYPE_CREATED |
                                       WEFT_EVENT_ARCHETYPE_MOVE,
                             .fn = on_event,
                             .user = &ac};
  assert_int_equal(weft_observer_create(w, &ad, &aobs), WEFT_OK);
  weft_entity_t s[4];
  for (int i = 0; i < 4; i++)
    s[i] = wt_spawn(w);
  weft_world_defer_begin(w);
  for (int i = 0; i < 4; i++) {
    slot_t v = {i, i};
    assert_int_equal(weft_relation_add(w, s[i], slot, t1, &v), WEFT_OK);
  }
  assert_int_equal(rows_of(q1, slot, t1, NULL), 0); /* staged */
  assert_int_equal(weft_world_defer_end(w), WEFT_OK);
  assert_int_equal(rows_of(q1, slot, t1, NULL), 4);
  assert_int_equal(c.enter, 4);
  assert_int_equal(ac.created, 1); /* the (Slot, t1) archetype */
  assert_int_equal(ac.moved, 4);
  slot_t v = {9, 9};
  assert_int_equal(weft_relation_add(w, s[0], slot, t2, &v), WEFT_OK);
  assert_int_equal(c.leave, 1);
  assert_int_equal(ac.created, 2); /* (Slot, t2) */
  assert_int_equal(ac.moved, 5);
  assert_int_equal(((slot_t *)weft_relation_get(w, s[0], slot, t2))->a, 9);
  for (int i = 1; i < 4; i++)
    assert_int_equal(((slot_t *)weft_relation_get(w, s[i], slot, t1))->a, i);
  weft_observer_destroy(obs);
  weft_observer_destroy(aobs);
  weft_world_destroy(w);
}

/* A failing allocation in an edge change leaves the edge, the row and
 * the archetype count as they were. */
static void test_relation_dense_rollback_on_failure(void **state) {
  (void)state;
  for (int op = 0; op < 3; op++) {
    bool done = false;
    uint32_t failed = 0;
    for (uint64_t k = 1; !done; k++) {
      assert_true(k < 200);
      weft_world_t *w = wt_world_new(NULL);
      weft_component_t pos = wt_register(w, "Pos", 4, 4);
      weft_component_t slot =
          wt_rel(w, "Slot", sizeof(slot_t), WEFT_RELATION_EXCLUSIVE);
      weft_component_t comps[] = {pos, 0};
      weft_entity_t t1 = wt_spawn(w), t2 = wt_spawn(w);
      weft_entity_t s = wt_spawn_with(w, comps, NULL);
      slot_t v = {1, 2};
      assert_int_equal(weft_relation_add(w, s, slot, t1, &v), WEFT_OK);
      weft_query_t *q2 = pair_query(w, slot, t2, 0, 0);
      const uint64_t digest = weft_world_digest(w);
      const uint32_t archs = wt_stats(w).archetypes;
      w->alloc.fail_in = k;
      slot_t nv = {3, 4};
      int rc = op == 0   ? weft_relation_add(w, s, slot, t2, &nv)
               : op == 1 ? weft_relation_remove(w, s, slot, t1)
                         : weft_remove(w, s, slot);
      /* Some allocations may fail without failing the call (a query's
       * flat cache is optional); the call succeeds or changes nothing. */
      done = w->alloc.fail_in != 0;
      w->alloc.fail_in = 0;
      if (rc == WEFT_OK) {
        assert_int_equal(rc, WEFT_OK);
        assert_int_equal(weft_relation_has(w, s, slot, t2), op == 0);
        assert_int_equal(rows_of(q2, slot, WEFT_ENTITY_NULL, NULL), op == 0);
      } else {
        assert_int_equal(rc, WEFT_ENOMEM);
        failed++;
        assert_true(weft_relation_has(w, s, slot, t1));
        assert_false(weft_relation_has(w, s, slot, t2));
        assert_int_equal(((slot_t *)weft_relation_get(w, s, slot, t1))->b, 2);
        assert_int_equal(wt_stats(w).archetypes, archs);
        assert_int_equal(weft_world_digest(w), digest);
        assert_int_equal(rows_of(q2, slot, WEFT_ENTITY_NULL, NULL), 0);
      }
      weft_world_destroy(w);
    }
    assert_true(failed > 0);
  }
}

/* Commands from systems on any number of workers: the same world. */
static int linker_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  wt_linker_t *l = ctx->user;
  for (uint32_t i = 0; i < chunk->count; i++) {
    weft_entity_t e = chunk->entities[i];
    uint64_t k = (weft_entity_index(e) * 7u + ctx->tick * 3u) % 11u;
    weft_entity_t hub = l->hubs[k % 4];
    slot_t v = {(int32_t)k, (int32_t)ctx->tick};
    if (k < 6)
      weft_cmd_relation_add(ctx->cmd, e, l->rels[0], hub, &v);
    else if (k < 8)
      weft_cmd_relation_remove(ctx->cmd, e, l->rels[0], hub);
    else
      weft_cmd_relation_add(ctx->cmd, e, l->rels[1], hub, NULL);
  }
  return 0;
}

static uint64_t run_linked(uint32_t workers, uint32_t *rows) {
  wt_linker_t l;
  wt_linker_open(&l, workers);
  l.rels[0] = wt_rel(l.w, "Slot", sizeof(slot_t), WEFT_RELATION_EXCLUSIVE);
  l.rels[1] =
      wt_rel(l.w, "Owned", 0, WEFT_RELATION_EXCLUSIVE | WEFT_RELATION_CASCADE);
  wt_linker_start(&l, linker_run);
  weft_query_t *q0 = pair_query(l.w, l.rels[0], l.hubs[0], 0, 0);
  wt_linker_frames(&l);
  /* The pair query agrees with the reverse index. */
  uint32_t n = rows_of(q0, l.rels[0], l.hubs[0], NULL);
  uint32_t srcs = 0;
  weft_iter_t it;
  weft_query_iter(q0, &it);
  while (weft_iter_next(&it))
    for (uint32_t i = 0; i < it.count; i++)
      srcs += weft_relation_has(l.w, it.entities[i], l.rels[0], l.hubs[0]);
  assert_int_equal(n, srcs);
  assert_true(n > 0);
  *rows = n;
  return wt_linker_close(&l);
}

static void test_relation_dense_commands_same_digest_on_workers(void **state) {
  (void)state;
  uint32_t r0, r;
  uint64_t h0 = run_linked(0, &r0);
  const uint32_t workers[] = {1, 2, 3};
  for (uint32_t i = 0; i < 3; i++) {
    assert_int_equal(run_linked(workers[i], &r), h0);
    assert_int_equal(r, r0);
  }
}

static void test_relation_dense_clear(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t rel = wt_rel(w, "R", 0, 0);
  weft_entity_t a = wt_spawn(w), b = wt_spawn(w);
  assert_int_equal(weft_relation_add(w, a, rel, b, NULL), WEFT_OK);
  weft_query_t *q = pair_query(w, rel, b, 0, 0);
  assert_int_equal(weft_world_clear(w), WEFT_OK);
  assert_int_equal(weft_relation_edge_count(w), 0);
  assert_int_equal(rows_of(q, rel, WEFT_ENTITY_NULL, NULL), 0);
  a = wt_spawn(w);
  b = wt_spawn(w);
  assert_int_equal(weft_relation_add(w, a, rel, b, NULL), WEFT_OK);
  weft_query_t *q2 = pair_query(w, rel, b, 0, 0);
  assert_int_equal(rows_of(q2, rel, b, NULL), 1);
  weft_world_destroy(w);
}

/* Re-parenting every tick among a bounded set of targets, directly and
 * through commands, allocates nothing after warm-up. */
static void test_relation_dense_steady_state_allocates_nothing(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t slot =
      wt_rel(w, "Slot", sizeof(slot_t), WEFT_RELATION_EXCLUSIVE);
  weft_component_t likes = wt_rel(w, "Likes", 0, 0);
  weft_entity_t hub[8], e[256];
  for (int i = 0; i < 8; i++)
    hub[i] = wt_spawn(w);
  for (int i = 0; i < 256; i++)
    e[i] = wt_spawn(w);
  weft_query_t *q = pair_query(w, slot, hub[3], 0, 0);
  weft_cmdbuf_t *buf = NULL;
  assert_int_equal(weft_cmdbuf_create(w, &buf), WEFT_OK);
  wt_alloc_probe_t probe;
  for (int tick = 0; tick < 40; tick++) {
    if (tick == 20)
      probe = wt_alloc_probe(w);
    for (int i = 0; i < 256; i++) {
      slot_t p = {tick, i};
      weft_entity_t t = hub[(i + tick) % 8];
      assert_int_equal(weft_relation_add(w, e[i], slot, t, &p), WEFT_OK);
      assert_int_equal(weft_cmd_relation_add(buf, e[i], likes, t, NULL),
                       WEFT_OK);
    }
    assert_int_equal(weft_world_apply(w, &buf, 1), WEFT_OK);
    assert_int_equal(rows_of(q, slot, hub[3], NULL), 32);
    for (int i = 0; i < 256; i++)
      assert_int_equal(
          weft_cmd_relation_remove(buf, e[i], likes, hub[(i + tick) % 8]),
          WEFT_OK);
    assert_int_equal(weft_world_apply(w, &buf, 1), WEFT_OK);
  }
  wt_assert_no_alloc(w, &probe, "20 ticks of re-parenting dense edges");
  assert_int_equal(weft_relation_edge_count(w), 256);
  assert_int_equal(weft_cmdbuf_destroy(buf), WEFT_OK);
  weft_world_destroy(w);
}

/* weft__archetype_pair_edges_drop_if (for compaction) forgets exactly the
 * transitions into the archetypes it is told are going; a move along a
 * forgotten one builds it again. */
static bool is_arch(const weft__archetype_t *to, void *ctx) {
  return to == ctx;
}

static void test_relation_dense_pair_edges_drop_if(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t child = wt_rel(w, "ChildOf", 0, WEFT_RELATION_EXCLUSIVE);
  weft_entity_t t[3], s = wt_spawn(w);
  for (int i = 0; i < 3; i++)
    t[i] = wt_spawn(w);
  assert_int_equal(weft_relation_add(w, s, child, t[0], NULL), WEFT_OK);
  weft__archetype_t *a0 = w->archs[weft_archetype_of(w, s) - 1];
  for (int i = 1; i < 3; i++) { /* two transitions out of a0 */
    assert_int_equal(weft_relation_add(w, s, child, t[i], NULL), WEFT_OK);
    if (i == 1)
      assert_int_equal(weft_relation_add(w, s, child, t[0], NULL), WEFT_OK);
  }
  weft__archetype_t *a2 = w->archs[weft_archetype_of(w, s) - 1];
  assert_int_equal(a0->pedge_count, 2);
  weft__archetype_pair_edges_drop_if(a0, is_arch, a2);
  assert_int_equal(a0->pedge_count, 1);
  assert_int_equal(weft_relation_add(w, s, child, t[0], NULL), WEFT_OK);
  assert_int_equal(weft_relation_add(w, s, child, t[2], NULL), WEFT_OK);
  assert_int_equal(a0->pedge_count, 2);
  assert_ptr_equal(w->archs[weft_archetype_of(w, s) - 1], a2);
  weft_world_destroy(w);
}

/* A pair move takes a row's dirty state along, also when a system marked
 * its whole chunk (a flag per chunk, not a byte per row). */
static void test_relation_dense_moves_keep_dirty_rows(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t hp = wt_register_tracked(w, "hp", sizeof(uint32_t));
  weft_component_t near = wt_rel(w, "Near", 0, WEFT_RELATION_EXCLUSIVE);
  wt_touch_system(w, hp);
  weft_entity_t t1 = wt_spawn(w), t2 = wt_spawn(w);
  const weft_component_t l[] = {hp, 0};
  weft_entity_t s[8];
  for (int i = 0; i < 8; i++) {
    s[i] = wt_spawn_with(w, l, NULL);
    assert_int_equal(weft_relation_add(w, s[i], near, t1, NULL), WEFT_OK);
  }
  assert_int_equal(weft_world_clear_dirty(w), WEFT_OK);
  assert_int_equal(weft_world_run_phase(w, WEFT_PHASE_PRE_UPDATE, 0.0),
                   WEFT_OK);
  /* Re-parent half of them: their rows move to (Near, t2). */
  for (int i = 0; i < 8; i += 2)
    assert_int_equal(weft_relation_add(w, s[i], near, t2, NULL), WEFT_OK);
  for (int i = 0; i < 8; i++)
    assert_true(weft_is_dirty(w, s[i], hp));
  assert_int_equal(weft_world_clear_dirty(w), WEFT_OK);
  for (int i = 0; i < 8; i++)
    assert_false(weft_is_dirty(w, s[i], hp));
  weft_world_destroy(w);
}

/* The sources of t under rel: how many, and whether in ascending order. */
typedef struct order_t {
  weft_entity_t last;
  uint32_t n;
  bool sorted;
} order_t;

static bool on_ordered(weft_entity_t src, weft_entity_t tgt, void *payload,
                       void *user) {
  (void)tgt;
  (void)payload;
  order_t *o = user;
  if (o->n && o->last >= src)
    o->sorted = false;
  o->last = src;
  o->n++;
  return true;
}

static uint32_t sources_sorted(weft_world_t *w, weft_entity_t t,
                               weft_component_t rel) {
  order_t o = {.sorted = true};
  assert_int_equal(weft_relation_sources(w, t, rel, on_ordered, &o), WEFT_OK);
  assert_true(o.sorted);
  return o.n;
}

/*
 * The direct fast paths of dense relations (relation.c: a first edge in
 * and an only edge out, along cached pair transitions) against an
 * oracle: random adds, removals and re-targets of an exclusive relation
 * with a payload column and of a plain dense one, over sources with no,
 * one or several edges (so the fast and the general paths both run),
 * checked after every step: each source's edges, payload and bits, each
 * target's sources in ascending order, and each pair query's rows.
 */
static void test_relation_dense_fast_paths_match_oracle(void **state) {
  (void)state;
  enum { NS = 16, NT = 3, STEPS = 3000 };
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t pos = wt_register(w, "Pos", 4, 4);
  weft_component_t slot =
      wt_rel(w, "Slot", sizeof(slot_t), WEFT_RELATION_EXCLUSIVE);
  weft_component_t likes = wt_rel(w, "Likes", 0, 0);
  weft_component_t comps[] = {pos, 0};
  weft_entity_t t[NT], s[NS];
  weft_query_t *qs[NT], *ql[NT];
  int slot_of[NS];    /* the oracle: s[i]'s Slot target index, -1: none */
  int32_t slot_a[NS]; /* its payload's a */
  bool like[NS][NT];  /* s[i] likes t[j] */
  for (uint32_t j = 0; j < NT; j++) {
    t[j] = wt_spawn(w);
    qs[j] = pair_query(w, slot, t[j], 0, 0);
    ql[j] = pair_query(w, likes, t[j], 0, 0);
  }
  for (uint32_t i = 0; i < NS; i++) {
    s[i] = wt_spawn_with(w, comps, NULL);
    slot_of[i] = -1;
    for (uint32_t j = 0; j < NT; j++)
      like[i][j] = false;
  }
  uint64_t x = 0x2545f4914f6cdd1du;
  for (int32_t step = 0; step < STEPS; step++) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    uint32_t r = (uint32_t)(x >> 33);
    uint32_t i = r % NS, j = r / NS % NT, op = r / NS / NT % 4;
    if (op == 0) {
      slot_t v = {step, (int32_t)i};
      assert_int_equal(weft_relation_add(w, s[i], slot, t[j], &v), WEFT_OK);
      slot_of[i] = (int)j;
      slot_a[i] = step;
    } else if (op == 1) {
      assert_int_equal(weft_relation_remove(w, s[i], slot, t[j]), WEFT_OK);
      if (slot_of[i] == (int)j)
        slot_of[i] = -1;
    } else {
      int rc = op == 2 ? weft_relation_add(w, s[i], likes, t[j], NULL)
                       : weft_relation_remove(w, s[i], likes, t[j]);
      assert_int_equal(rc, WEFT_OK);
      like[i][j] = op == 2;
    }
    for (uint32_t a = 0; a < NS; a++) {
      uint32_t nl = 0;
      for (uint32_t b = 0; b < NT; b++) {
        assert_int_equal(weft_relation_has(w, s[a], slot, t[b]),
                         slot_of[a] == (int)b);
        assert_int_equal(weft_relation_has(w, s[a], likes, t[b]), like[a][b]);
        nl += like[a][b];
      }
      assert_int_equal(weft_relation_count(w, s[a], likes), nl);
      assert_int_equal(weft_has(w, s[a], likes), nl > 0);
      assert_int_equal(weft_has(w, s[a], slot), slot_of[a] >= 0);
      assert_true(weft_has(w, s[a], pos));
      if (slot_of[a] >= 0) {
        const slot_t *p = weft_relation_get(w, s[a], slot, t[slot_of[a]]);
        assert_non_null(p);
        assert_int_equal(p->a, slot_a[a]);
        assert_int_equal(p->b, (int32_t)a);
      }
    }
    for (uint32_t b = 0; b < NT; b++) {
      uint32_t ns = 0, nl = 0;
      for (uint32_t a = 0; a < NS; a++) {
        ns += slot_of[a] == (int)b;
        nl += like[a][b];
      }
      assert_int_equal(rows_of(qs[b], slot, t[b], NULL), ns);
      /* Not the chunks' first target: a source may like several. */
      assert_int_equal(rows_of(ql[b], likes, WEFT_ENTITY_NULL, NULL), nl);
      assert_int_equal(sources_sorted(w, t[b], slot), ns);
      assert_int_equal(sources_sorted(w, t[b], likes), nl);
    }
  }
  for (uint32_t j = 0; j < NT; j++) {
    assert_int_equal(weft_query_destroy(qs[j]), WEFT_OK);
    assert_int_equal(weft_query_destroy(ql[j]), WEFT_OK);
  }
  weft_world_destroy(w);
}

/*
 * A dense first edge whose move fails (out of memory for the pair
 * archetype's next chunk) on the fast path: the path must decline having
 * changed nothing, and the general path then places the edge. Each add
 * runs with its first allocation failing; the world must end as the one
 * built without failures (same digest), every edge and payload in place.
 */
static uint64_t build_dense_fanin(bool inject, uint32_t *injected) {
  enum { N = 3000 };
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.world_tag = 7; /* the same handles in both worlds */
  weft_world_t *w = wt_world_new(&cfg);
  weft_component_t pos = wt_register(w, "Pos", 4, 4);
  weft_component_t slot =
      wt_rel(w, "Slot", sizeof(slot_t), WEFT_RELATION_EXCLUSIVE);
  weft_component_t other = wt_rel(w, "Other", 0, WEFT_RELATION_SPARSE);
  weft_component_t comps[] = {pos, 0};
  weft_entity_t t = wt_spawn(w);
  static weft_entity_t s[N];
  for (uint32_t i = 0; i < N; i++)
    s[i] = wt_spawn_with(w, comps, NULL);
  /* t's reverse vector grows through the sparse relation and keeps its
   * capacity: the dense adds below allocate only in their moves. */
  for (uint32_t i = 0; i < N; i++)
    assert_int_equal(weft_relation_add(w, s[i], other, t, NULL), WEFT_OK);
  for (uint32_t i = 0; i < N; i++)
    assert_int_equal(weft_relation_remove(w, s[i], other, t), WEFT_OK);
  *injected = 0;
  for (uint32_t i = 0; i < N; i++) {
    slot_t v = {(int32_t)i, -(int32_t)i};
    /* The first add builds the transition: the general path's. */
    w->alloc.fail_in = inject && i ? 1 : 0;
    assert_int_equal(weft_relation_add(w, s[i], slot, t, &v), WEFT_OK);
    *injected += inject && i && w->alloc.fail_in == 0;
    w->alloc.fail_in = 0;
  }
  weft_query_t *q = pair_query(w, slot, t, 0, 0);
  assert_int_equal(rows_of(q, slot, t, NULL), N);
  assert_int_equal(sources_sorted(w, t, slot), N);
  assert_int_equal(weft_relation_edge_count(w), N);
  for (uint32_t i = 0; i < N; i++) {
    const slot_t *p = weft_relation_get(w, s[i], slot, t);
    assert_non_null(p);
    assert_int_equal(p->a, (int32_t)i);
    assert_int_equal(p->b, -(int32_t)i);
  }
  uint64_t h = weft_world_digest(w);
  /* The only edges go again, each after the first (which builds the
   * transition) with an allocation set to fail. */
  for (uint32_t i = 0; i < N; i++) {
    w->alloc.fail_in = inject && i ? 1 : 0;
    assert_int_equal(weft_relation_remove(w, s[i], slot, t), WEFT_OK);
    w->alloc.fail_in = 0;
    assert_false(weft_has(w, s[i], slot));
  }
  assert_int_equal(rows_of(q, slot, t, NULL), 0);
  assert_int_equal(weft_relation_edge_count(w), 0);
  assert_int_equal(weft_query_destroy(q), WEFT_OK);
  weft_world_destroy(w);
  return h;
}

static void
test_relation_dense_fast_move_failure_changes_nothing(void **state) {
  (void)state;
  uint32_t injected = 0, none = 0;
  uint64_t want = build_dense_fanin(false, &none);
  assert_int_equal(build_dense_fanin(true, &injected), want);
  assert_true(injected > 0); /* some moves did need a chunk */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_relation_dense_register_rules),
      cmocka_unit_test(test_relation_dense_pair_queries),
      cmocka_unit_test(test_relation_dense_reparent_moves),
      cmocka_unit_test(test_relation_dense_payload_column),
      cmocka_unit_test(test_relation_dense_bad_terms_and_stale),
      cmocka_unit_test(test_relation_dense_target_death_and_cascade),
      cmocka_unit_test(test_relation_dense_staged_and_observed),
      cmocka_unit_test(test_relation_dense_rollback_on_failure),
      cmocka_unit_test(test_relation_dense_commands_same_digest_on_workers),
      cmocka_unit_test(test_relation_dense_clear),
      cmocka_unit_test(test_relation_dense_steady_state_allocates_nothing),
      cmocka_unit_test(test_relation_dense_pair_edges_drop_if),
      cmocka_unit_test(test_relation_dense_moves_keep_dirty_rows),
      cmocka_unit_test(test_relation_dense_fast_paths_match_oracle),
      cmocka_unit_test(test_relation_dense_fast_move_failure_changes_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
