/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for temporary queries: a frozen archetype set with live rows,
 * no subscription, cheap destruction, and safety when an archetype they
 * hold is rolled back.
 */
#include "support/weft_test.h"

#include "core/archetype.h" /* to make and roll back an empty archetype */
#include "core/query_internal.h"
#include "core/world_view.h"

typedef struct tw_t {
  weft_world_t *w;
  weft_component_t a, b, t;
} tw_t;

static tw_t tw_new(void) {
  tw_t f;
  f.w = wt_world_sized(0, WEFT_CHUNK_SIZE_MIN);
  f.a = wt_register(f.w, "a", sizeof(uint32_t), 0);
  f.b = wt_register(f.w, "b", sizeof(uint64_t), 0);
  f.t = wt_register_tag(f.w, "t");
  return f;
}

static weft_query_t *temp_of(weft_world_t *w, const weft_query_desc_t *d) {
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create_temp(w, d, &q), WEFT_OK);
  assert_non_null(q);
  assert_true(weft_query_is_temp(q));
  return q;
}

/* Rows an iteration yields; true in *saw if it yielded e. */
static uint32_t rows_of(const weft_query_t *q, weft_entity_t e, bool *saw) {
  weft_iter_t it;
  uint32_t n = 0;
  *saw = false;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    for (uint32_t r = 0; r < it.count; r++)
      *saw |= it.entities[r] == e;
    n += it.count;
  }
  return n;
}

static void test_query_temp_freezes_archetypes(void **state) {
  (void)state;
  tw_t f = tw_new();
  const weft_component_t a[] = {f.a, 0}, ab[] = {f.a, f.b, 0},
                         at[] = {f.a, f.t, 0};
  assert_int_equal(weft_spawn_batch(f.w, 600, a, NULL, NULL, NULL), WEFT_OK);
  assert_int_equal(weft_spawn_batch(f.w, 300, ab, NULL, NULL, NULL), WEFT_OK);
  weft_query_desc_t d = {.include = {f.a}};
  weft_query_t *tq = temp_of(f.w, &d);
  weft_query_t *cq = NULL;
  assert_int_equal(weft_query_create(f.w, &d, &cq), WEFT_OK);
  assert_false(weft_query_is_temp(cq));
  assert_false(weft_query_is_temp(NULL));
  assert_int_equal(weft_query_archetype_count(tq), 2);
  /* A new matching archetype: the cached query takes it, the temporary
   * one does not. */
  weft_entity_t late = wt_spawn_with(f.w, at, NULL);
  assert_int_equal(weft_query_archetype_count(tq), 2);
  assert_int_equal(weft_query_archetype_count(cq), 3);
  bool saw;
  assert_int_equal(rows_of(tq, late, &saw), 900);
  assert_false(saw);
  assert_int_equal(weft_query_count(tq), 900);
  assert_int_equal(rows_of(cq, late, &saw), 901);
  assert_true(saw);
  /* Moving an entity into the new archetype takes it out of the
   * temporary query's rows. */
  weft_iter_t it;
  weft_query_iter(tq, &it);
  assert_true(weft_iter_next(&it));
  weft_entity_t mover = it.entities[0];
  weft_iter_close(&it);
  assert_int_equal(weft_add(f.w, mover, f.t, NULL), WEFT_OK);
  assert_int_equal(rows_of(tq, mover, &saw), 899);
  assert_false(saw);
  assert_int_equal(weft_query_destroy(tq), WEFT_OK);
  assert_int_equal(weft_query_destroy(cq), WEFT_OK);
  weft_world_destroy(f.w);
}

static void test_query_temp_reads_live_rows(void **state) {
  (void)state;
  tw_t f = tw_new();
  const weft_component_t ab[] = {f.a, f.b, 0};
  weft_entity_t first = wt_spawn_with(f.w, ab, NULL);
  weft_query_t *tq = temp_of(f.w, &(weft_query_desc_t){.include = {f.a, f.b}});
  /* Spawns into a frozen archetype are seen, despawns leave, writes are
   * read where they are. */
  weft_entity_t e[1000];
  assert_int_equal(weft_spawn_batch(f.w, 1000, ab, NULL, NULL, e), WEFT_OK);
  bool saw;
  assert_int_equal(rows_of(tq, e[999], &saw), 1001);
  assert_true(saw);
  assert_int_equal(weft_despawn(f.w, e[999]), WEFT_OK);
  assert_int_equal(rows_of(tq, e[999], &saw), 1000);
  assert_false(saw);
  uint32_t v = 77;
  assert_int_equal(weft_set(f.w, first, f.a, &v), WEFT_OK);
  weft_iter_t it;
  uint32_t found = 0;
  weft_query_iter(tq, &it);
  while (weft_iter_next(&it))
    for (uint32_t r = 0; r < it.count; r++)
      if (it.entities[r] == first)
        found = ((const uint32_t *)weft_iter_column(&it, 0))[r];
  assert_int_equal(found, 77);
  weft_world_destroy(f.w); /* frees the temporary query too (ASan) */
}

/* No subscription: the world's query list does not hold it, and new
 * archetypes never call into it. */
static void test_query_temp_registers_no_subscription(void **state) {
  (void)state;
  tw_t f = tw_new();
  const weft_component_t a[] = {f.a, 0};
  wt_spawn_with(f.w, a, NULL);
  uint32_t before = wt_stats(f.w).queries;
  weft_query_t *tq[8];
  for (int i = 0; i < 8; i++)
    tq[i] = temp_of(f.w, &(weft_query_desc_t){.include = {f.a}});
  assert_int_equal(wt_stats(f.w).queries, before);
  assert_int_equal(f.w->query_count, before);
  /* Destroy in a mixed order: the list unlinks each in place. */
  const int order[] = {3, 0, 7, 5, 1, 2, 6, 4};
  for (int i = 0; i < 8; i++) {
    assert_int_equal(weft_query_destroy(tq[order[i]]), WEFT_OK);
    uint32_t left = 0;
    for (const weft_query_t *q = f.w->temps; q; q = q->temp_next)
      left++;
    assert_int_equal(left, 7 - i);
  }
  assert_null(f.w->temps);
  weft_world_destroy(f.w);
}

static void test_query_temp_destroy_rules(void **state) {
  (void)state;
  tw_t f = tw_new();
  const weft_component_t a[] = {f.a, 0};
  assert_int_equal(weft_spawn_batch(f.w, 10, a, NULL, NULL, NULL), WEFT_OK);
  weft_query_t *tq = temp_of(f.w, &(weft_query_desc_t){.include = {f.a}});
  weft_iter_t it;
  weft_query_iter(tq, &it);
  assert_true(weft_iter_next(&it));
  assert_int_equal(weft_query_destroy(tq), WEFT_EBUSY);
  weft_iter_close(&it);
  assert_int_equal(weft_query_destroy(tq), WEFT_OK);
  /* Bad descriptors fail as for cached queries. */
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create_temp(f.w, &(weft_query_desc_t){0}, &q),
                   WEFT_EINVAL);
  assert_int_equal(
      weft_query_create_temp(f.w, &(weft_query_desc_t){.include = {999}}, &q),
      WEFT_ENOCOMP);
  assert_int_equal(weft_query_create_temp(f.w, NULL, &q), WEFT_EINVAL);
  assert_null(f.w->temps);
  weft_world_destroy(f.w);
}

static void noop_observer(weft_world_t *w, const weft_event_t *ev, void *u) {
  (void)w;
  (void)ev;
  (void)u;
}

static void test_query_temp_rejects_membership_observer(void **state) {
  (void)state;
  tw_t f = tw_new();
  weft_query_t *tq = temp_of(f.w, &(weft_query_desc_t){.include = {f.a}});
  weft_observer_t *o = NULL;
  weft_observer_desc_t od = {
      .events = WEFT_EVENT_LEAVE, .query = tq, .fn = noop_observer};
  assert_int_equal(weft_observer_create(f.w, &od, &o), WEFT_EINVAL);
  assert_non_null(strstr(weft_world_last_error(f.w), "temporary"));
  /* Other events need no query: fine beside a temporary one. */
  od.events = WEFT_EVENT_SPAWN;
  assert_int_equal(weft_observer_create(f.w, &od, &o), WEFT_OK);
  weft_world_destroy(f.w);
}

/* An archetype rolled back (freed: the call that made it failed) leaves
 * every temporary query that holds it, grouped or not. */
static uint64_t by_b(weft_world_t *w, const weft_archetype_view_t *v,
                     void *ctx) {
  (void)w;
  const weft_component_t *b = ctx;
  for (uint32_t i = 0; i < v->ncomponents; i++)
    if (v->components[i] == *b)
      return 1;
  return 2;
}

static void test_query_temp_forgets_rolled_back_archetype(void **state) {
  (void)state;
  tw_t f = tw_new();
  const weft_component_t a[] = {f.a, 0}, at[] = {f.a, f.t, 0};
  wt_spawn_with(f.w, a, NULL);
  wt_spawn_with(f.w, at, NULL);
  const uint32_t mark = f.w->arch_count;
  const uint32_t born = f.w->arch_born; /* the rollback mark */
  /* An empty archetype {a, b}, as a failed call would leave it before
   * its rollback. */
  weft__mask_t present = {{0}}, none = {{0}};
  weft__mask_set(&present, f.a);
  weft__mask_set(&present, f.b);
  weft__archetype_t *arch = NULL;
  assert_int_equal(weft__archetype_get(f.w, &present, &none, &arch), WEFT_OK);
  assert_int_equal(arch->id, mark);
  weft_query_t *plain = temp_of(f.w, &(weft_query_desc_t){.include = {f.a}});
  weft_query_t *grp =
      temp_of(f.w, &(weft_query_desc_t){
                       .include = {f.a}, .group_by = by_b, .group_ctx = &f.b});
  assert_int_equal(weft_query_archetype_count(plain), 3);
  assert_int_equal(weft_query_archetype_count(grp), 3);
  /* Grouped: {a, b} is group 1, first, ahead of the older ones. */
  assert_ptr_equal(grp->matches[0].arch, arch);
  weft__archetypes_rollback(f.w, born);
  assert_int_equal(f.w->arch_count, mark);
  assert_int_equal(weft_query_archetype_count(plain), 2);
  assert_int_equal(weft_query_archetype_count(grp), 2);
  for (uint32_t i = 0; i < 2; i++) {
    assert_true(plain->matches[i].arch->id < mark);
    assert_true(grp->matches[i].arch->id < mark);
  }
  bool saw;
  assert_int_equal(rows_of(plain, 0, &saw), 2);
  assert_int_equal(rows_of(grp, 0, &saw), 2);
  /* A later archetype with the reused id does not join them. */
  wt_spawn_with(f.w, (const weft_component_t[]){f.a, f.b, 0}, NULL);
  assert_int_equal(f.w->archs[mark]->count, 1);
  assert_int_equal(weft_query_archetype_count(plain), 2);
  assert_int_equal(rows_of(grp, 0, &saw), 2);
  weft_world_destroy(f.w);
}

/* A query-wide command takes a temporary query's members. */
static void test_query_temp_serves_query_commands(void **state) {
  (void)state;
  tw_t f = tw_new();
  const weft_component_t a[] = {f.a, 0};
  assert_int_equal(weft_spawn_batch(f.w, 50, a, NULL, NULL, NULL), WEFT_OK);
  weft_query_t *tq = temp_of(f.w, &(weft_query_desc_t){.include = {f.a}});
  weft_cmdbuf_t *b = NULL;
  assert_int_equal(weft_cmdbuf_create(f.w, &b), WEFT_OK);
  uint64_t v = 5;
  assert_int_equal(weft_cmd_set_query(b, tq, f.b, &v), WEFT_OK);
  assert_int_equal(weft_world_apply(f.w, &b, 1), WEFT_OK);
  /* Every member moved to {a, b}, which the temporary query never saw. */
  assert_int_equal(weft_query_count(tq), 0);
  weft_query_t *ab = temp_of(f.w, &(weft_query_desc_t){.include = {f.b}});
  assert_int_equal(weft_query_count(ab), 50);
  weft_world_destroy(f.w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_query_temp_freezes_archetypes),
      cmocka_unit_test(test_query_temp_reads_live_rows),
      cmocka_unit_test(test_query_temp_registers_no_subscription),
      cmocka_unit_test(test_query_temp_destroy_rules),
      cmocka_unit_test(test_query_temp_rejects_membership_observer),
      cmocka_unit_test(test_query_temp_forgets_rolled_back_archetype),
      cmocka_unit_test(test_query_temp_serves_query_commands),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
