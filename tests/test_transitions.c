/* SPDX-License-Identifier: MIT */
/*
 * The transition log (weft/transition.h): records in the order changes are
 * applied, the same on one worker and two, readable by systems after the
 * sync point, cleared at the end of each fixed step, nothing recorded while
 * off, and no allocation in steady state with the log on.
 *
 * Callbacks that may run on pool workers never call cmocka's asserts (they
 * jump); they count in atomics that the test checks after the frame.
 */
#include "support/weft_test.h"

#include <stdatomic.h>
#include <stdlib.h>

#define FIXED 0.1
#define N 256u

typedef struct tx_t {
  weft_world_t *w;
  weft_pool_t *pool;
  weft_component_t a, b, tag;
  weft_entity_t es[N];
  weft_query_t *qa; /* A */
} tx_t;

static tx_t *tx_new(uint32_t workers, bool manual) {
  tx_t *x = calloc(1, sizeof *x);
  assert_non_null(x);
  x->w = wt_world_pooled(workers, 4096, &x->pool);
  weft_pipeline_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.fixed_dt = FIXED;
  pc.net_dt = -1.0;
  pc.inline_rows = 1;
  pc.manual_clear = manual;
  assert_int_equal(weft_pipeline_configure(x->w, &pc), WEFT_OK);
  x->a = wt_register(x->w, "A", sizeof(int32_t), 0);
  x->b = wt_register(x->w, "B", sizeof(int64_t), 0);
  x->tag = wt_register_tag(x->w, "Tag");
  const weft_component_t comps[] = {x->a, 0};
  assert_int_equal(weft_spawn_batch(x->w, N, comps, NULL, NULL, x->es),
                   WEFT_OK);
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = x->a;
  assert_int_equal(weft_query_create(x->w, &qd, &x->qa), WEFT_OK);
  return x;
}

static void tx_free(tx_t *x) {
  weft_world_destroy(x->w);
  if (x->pool)
    weft_pool_destroy(x->pool);
  free(x);
}

static weft_transitions_t log_of(const weft_world_t *w) {
  weft_transitions_t v;
  memset(&v, 0xa5, sizeof v);
  assert_int_equal(weft_world_transitions(w, &v), WEFT_OK);
  return v;
}

static void expect_rec(const weft_transitions_t *v, uint32_t i, uint32_t kind,
                       weft_entity_t e, weft_component_t c) {
  if (i >= v->count)
    fail_msg("record %u missing (%u records)", i, v->count);
  const weft_transition_t *r = &v->items[i];
  if (r->kind != kind || r->entity != e || r->component != c)
    fail_msg("record %u: kind %u entity %llx comp %u; expected %u %llx %u", i,
             r->kind, (unsigned long long)r->entity, r->component, kind,
             (unsigned long long)e, c);
}

static void test_transitions_records_changes_in_order(void **state) {
  (void)state;
  tx_t *x = tx_new(0, true);
  weft_world_t *w = x->w;
  /* Off: nothing is recorded. */
  assert_int_equal(weft_add(w, x->es[0], x->tag, NULL), WEFT_OK);
  assert_int_equal(log_of(w).count, 0);
  assert_int_equal(weft_world_log_transitions(w, true), WEFT_OK);
  weft_world_set_tick(w, 9);
  const weft_component_t ab[] = {x->b, x->a, 0};
  weft_entity_t e = wt_spawn_with(w, ab, NULL);
  int64_t bv = 5;
  assert_int_equal(weft_set(w, e, x->b, &bv), WEFT_OK); /* no record */
  assert_int_equal(weft_add(w, e, x->tag, NULL), WEFT_OK);
  assert_int_equal(weft_disable(w, e, x->a), WEFT_OK);
  assert_int_equal(weft_enable(w, e, x->a), WEFT_OK);
  assert_int_equal(weft_remove(w, e, x->b), WEFT_OK);
  assert_int_equal(weft_despawn(w, x->es[3]), WEFT_OK);
  /* A scope applies its changes in order at its end, several ops of one
   * entity as one move: their records in ascending component id. */
  weft_world_defer_begin(w);
  assert_int_equal(weft_remove(w, e, x->tag), WEFT_OK);
  assert_int_equal(weft_add(w, e, x->b, &bv), WEFT_OK);
  assert_int_equal(weft_despawn(w, x->es[4]), WEFT_OK);
  assert_int_equal(weft_world_defer_end(w), WEFT_OK);
  weft_transitions_t v = log_of(w);
  uint32_t i = 0;
  expect_rec(&v, i++, WEFT_TRANSITION_SPAWN, e, 0);
  expect_rec(&v, i++, WEFT_TRANSITION_ADD, e, x->a); /* ascending ids */
  expect_rec(&v, i++, WEFT_TRANSITION_ADD, e, x->b);
  expect_rec(&v, i++, WEFT_TRANSITION_ADD, e, x->tag);
  expect_rec(&v, i++, WEFT_TRANSITION_DISABLE, e, x->a);
  expect_rec(&v, i++, WEFT_TRANSITION_ENABLE, e, x->a);
  expect_rec(&v, i++, WEFT_TRANSITION_REMOVE, e, x->b);
  expect_rec(&v, i++, WEFT_TRANSITION_DESPAWN, x->es[3], 0);
  /* The drain applies despawns before changes. */
  expect_rec(&v, i++, WEFT_TRANSITION_DESPAWN, x->es[4], 0);
  expect_rec(&v, i++, WEFT_TRANSITION_ADD, e, x->b);
  expect_rec(&v, i++, WEFT_TRANSITION_REMOVE, e, x->tag);
  assert_int_equal(v.count, i);
  assert_int_equal(v.dropped, 0);
  for (uint32_t k = 0; k < v.count; k++)
    assert_int_equal(v.items[k].tick, 9);
  /* The clear empties it; turning it off empties it and stops it. */
  assert_int_equal(weft_world_clear_dirty(w), WEFT_OK);
  assert_int_equal(log_of(w).count, 0);
  assert_int_equal(weft_add(w, x->es[5], x->tag, NULL), WEFT_OK);
  assert_int_equal(log_of(w).count, 1);
  assert_int_equal(weft_world_log_transitions(w, false), WEFT_OK);
  assert_int_equal(log_of(w).count, 0);
  assert_int_equal(weft_add(w, x->es[6], x->tag, NULL), WEFT_OK);
  assert_int_equal(log_of(w).count, 0);
  /* Bad input. */
  assert_int_equal(weft_world_transitions(w, NULL), WEFT_EINVAL);
  assert_int_equal(weft_world_log_transitions(NULL, true), WEFT_EINVAL);
  weft_world_defer_begin(w);
  assert_int_equal(weft_world_log_transitions(w, true), WEFT_EBUSY);
  assert_int_equal(weft_world_defer_end(w), WEFT_OK);
  tx_free(x);
}

static void test_transitions_batch_spawns_and_commands(void **state) {
  (void)state;
  tx_t *x = tx_new(0, true);
  weft_world_t *w = x->w;
  assert_int_equal(weft_world_log_transitions(w, true), WEFT_OK);
  const weft_component_t ab[] = {x->a, x->b, 0};
  weft_entity_t made[3];
  assert_int_equal(weft_spawn_batch(w, 3, ab, NULL, NULL, made), WEFT_OK);
  weft_cmdbuf_t *b;
  assert_int_equal(weft_cmdbuf_create(w, &b), WEFT_OK);
  assert_int_equal(weft_cmd_remove(b, made[1], x->b), WEFT_OK);
  assert_int_equal(weft_cmd_despawn(b, made[2]), WEFT_OK);
  assert_int_equal(weft_world_apply(w, &b, 1), WEFT_OK);
  assert_int_equal(weft_cmdbuf_destroy(b), WEFT_OK);
  weft_transitions_t v = log_of(w);
  uint32_t i = 0;
  for (uint32_t k = 0; k < 3; k++) {
    expect_rec(&v, i++, WEFT_TRANSITION_SPAWN, made[k], 0);
    expect_rec(&v, i++, WEFT_TRANSITION_ADD, made[k], x->a);
    expect_rec(&v, i++, WEFT_TRANSITION_ADD, made[k], x->b);
  }
  expect_rec(&v, i++, WEFT_TRANSITION_DESPAWN, made[2], 0);
  expect_rec(&v, i++, WEFT_TRANSITION_REMOVE, made[1], x->b);
  assert_int_equal(v.count, i);
  tx_free(x);
}

/* --- systems ------------------------------------------------------------ */

/* Tags the entities whose index is a multiple of 3 and removes A from
 * those that are a multiple of 5, by command, chunk by chunk. */
static int churn(weft_sysctx_t *ctx, const weft_iter_t *it) {
  const tx_t *x = ctx->user;
  for (uint32_t i = 0; i < it->count; i++) {
    uint32_t k = weft_entity_index(it->entities[i]);
    if (k % 3 == 0)
      weft_cmd_add(ctx->cmd, it->entities[i], x->tag, NULL);
    if (k % 5 == 0)
      weft_cmd_remove(ctx->cmd, it->entities[i], x->a);
  }
  return 0;
}

typedef struct seen_t {
  _Atomic uint32_t count; /* records a later system saw */
} seen_t;

static int read_log(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)it; /* a task: no chunk */
  seen_t *s = ctx->user;
  weft_transitions_t v;
  if (weft_world_transitions(ctx->world, &v) == WEFT_OK)
    atomic_store(&s->count, v.count);
  return 0;
}

static void add_churn(tx_t *x) {
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "tx.churn";
  d.query.include[0] = x->a;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.cmd_write[0] = x->tag;
  d.cmd_write[1] = x->a;
  d.batch = 32; /* several jobs */
  d.run = churn;
  d.user = x;
  weft_system_t id;
  assert_int_equal(weft_system_register(x->w, &d, &id), WEFT_OK);
}

/* The log after one frame of churn on a world with @p workers, copied. */
static uint32_t churn_log(uint32_t workers, weft_transition_t *out,
                          uint32_t max) {
  tx_t *x = tx_new(workers, true);
  assert_int_equal(weft_world_log_transitions(x->w, true), WEFT_OK);
  add_churn(x);
  assert_int_equal(weft_world_progress(x->w, FIXED), WEFT_OK);
  weft_transitions_t v = log_of(x->w);
  assert_true(v.count <= max);
  memcpy(out, v.items, v.count * sizeof *out);
  uint32_t n = v.count;
  tx_free(x);
  return n;
}

static void expect_edge(const weft_transitions_t *v, uint32_t i, uint32_t kind,
                        weft_entity_t e, weft_component_t rel,
                        weft_entity_t tgt) {
  expect_rec(v, i, kind, e, rel);
  if (v->items[i].target != tgt)
    fail_msg("record %u: target %llx, expected %llx", i,
             (unsigned long long)v->items[i].target, (unsigned long long)tgt);
}

/* Edges log EDGE_ADD / EDGE_REMOVE with their target, around the relation
 * id's own ADD and REMOVE; an exclusive replacement logs the old edge's
 * removal first; a target's death logs each living source's loss; plain
 * component records carry no target. */
static void test_transitions_records_edges(void **state) {
  (void)state;
  tx_t *x = tx_new(0, true);
  weft_world_t *w = x->w;
  weft_component_t likes, owner;
  weft_relation_desc_t rd = {.name = "Likes"};
  assert_int_equal(weft_relation_register(w, &rd, &likes), WEFT_OK);
  rd = (weft_relation_desc_t){.name = "Owner",
                              .size = sizeof(int32_t),
                              .flags = WEFT_RELATION_EXCLUSIVE};
  assert_int_equal(weft_relation_register(w, &rd, &owner), WEFT_OK);
  weft_entity_t s = x->es[0], t1 = x->es[1], t2 = x->es[2], t3 = x->es[3];
  assert_int_equal(weft_world_log_transitions(w, true), WEFT_OK);
  int32_t pay = 7;
  assert_int_equal(weft_relation_add(w, s, likes, t1, NULL), WEFT_OK);
  assert_int_equal(weft_relation_add(w, s, likes, t2, NULL), WEFT_OK);
  assert_int_equal(weft_relation_add(w, s, owner, t1, &pay), WEFT_OK);
  pay = 8; /* a payload change only: no record */
  assert_int_equal(weft_relation_add(w, s, owner, t1, &pay), WEFT_OK);
  assert_int_equal(weft_relation_add(w, s, owner, t3, &pay), WEFT_OK);
  assert_int_equal(weft_relation_remove(w, s, likes, t2), WEFT_OK);
  assert_int_equal(weft_relation_remove(w, s, likes, t2), WEFT_OK); /* none */
  assert_int_equal(weft_add(w, t2, x->tag, NULL), WEFT_OK);
  assert_int_equal(weft_despawn(w, t1), WEFT_OK); /* s loses its Likes */
  assert_int_equal(weft_remove(w, s, owner), WEFT_OK);
  weft_transitions_t v = log_of(w);
  uint32_t i = 0;
  expect_rec(&v, i++, WEFT_TRANSITION_ADD, s, likes);
  expect_edge(&v, i++, WEFT_TRANSITION_EDGE_ADD, s, likes, t1);
  expect_edge(&v, i++, WEFT_TRANSITION_EDGE_ADD, s, likes, t2);
  expect_rec(&v, i++, WEFT_TRANSITION_ADD, s, owner);
  expect_edge(&v, i++, WEFT_TRANSITION_EDGE_ADD, s, owner, t1);
  expect_edge(&v, i++, WEFT_TRANSITION_EDGE_REMOVE, s, owner, t1);
  expect_edge(&v, i++, WEFT_TRANSITION_EDGE_ADD, s, owner, t3);
  expect_edge(&v, i++, WEFT_TRANSITION_EDGE_REMOVE, s, likes, t2);
  expect_edge(&v, i++, WEFT_TRANSITION_ADD, t2, x->tag, WEFT_ENTITY_NULL);
  expect_rec(&v, i++, WEFT_TRANSITION_DESPAWN, t1, 0);
  expect_edge(&v, i++, WEFT_TRANSITION_EDGE_REMOVE, s, likes, t1);
  expect_rec(&v, i++, WEFT_TRANSITION_REMOVE, s, likes);
  expect_edge(&v, i++, WEFT_TRANSITION_EDGE_REMOVE, s, owner, t3);
  expect_rec(&v, i++, WEFT_TRANSITION_REMOVE, s, owner);
  assert_int_equal(v.count, i);
  int32_t *got = weft_relation_get(w, s, owner, t3);
  assert_null(got);
  tx_free(x);
}

static void test_transitions_same_log_on_one_and_two_workers(void **state) {
  (void)state;
  static weft_transition_t one[2 * N], two[2 * N];
  uint32_t n1 = churn_log(0, one, 2 * N);
  uint32_t n2 = churn_log(2, two, 2 * N);
  /* Every third entity tagged, every fifth losing A. */
  assert_int_equal(n1, (N + 2) / 3 + (N + 4) / 5);
  assert_int_equal(n1, n2);
  assert_memory_equal(one, two, n1 * sizeof one[0]);
}

static void test_transitions_read_after_sync_and_cleared(void **state) {
  (void)state;
  tx_t *x = tx_new(2, false);
  assert_int_equal(weft_world_log_transitions(x->w, true), WEFT_OK);
  add_churn(x);
  seen_t seen = {0};
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "tx.reader";
  d.phase = WEFT_PHASE_POST_FIXED_UPDATE;
  d.run = read_log;
  d.user = &seen;
  weft_system_t id;
  assert_int_equal(weft_system_register(x->w, &d, &id), WEFT_OK);
  assert_int_equal(weft_world_progress(x->w, FIXED), WEFT_OK);
  /* The reader saw the churn's records; the step's end cleared them. */
  assert_int_equal(atomic_load(&seen.count), (N + 2) / 3 + (N + 4) / 5);
  assert_int_equal(log_of(x->w).count, 0);
  tx_free(x);
}

static void test_transitions_steady_state_allocates_nothing(void **state) {
  (void)state;
  tx_t *x = tx_new(0, false);
  weft_world_t *w = x->w;
  assert_int_equal(weft_world_log_transitions(w, true), WEFT_OK);
  /* Each tick tags every entity and untags it again, through the drain. */
  for (uint32_t round = 0; round < 8; round++) {
    wt_alloc_probe_t p = wt_alloc_probe(w);
    for (uint32_t i = 0; i < N; i++)
      assert_int_equal(weft_add(w, x->es[i], x->tag, NULL), WEFT_OK);
    for (uint32_t i = 0; i < N; i++)
      assert_int_equal(weft_remove(w, x->es[i], x->tag), WEFT_OK);
    assert_int_equal(log_of(w).count, 2 * N);
    assert_int_equal(weft_world_clear_dirty(w), WEFT_OK);
    if (round >= 2) /* warm: the log and the archetypes have their room */
      wt_assert_no_alloc(w, &p, "a tick with the transition log on");
  }
  tx_free(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_transitions_records_changes_in_order),
      cmocka_unit_test(test_transitions_records_edges),
      cmocka_unit_test(test_transitions_batch_spawns_and_commands),
      cmocka_unit_test(test_transitions_same_log_on_one_and_two_workers),
      cmocka_unit_test(test_transitions_read_after_sync_and_cleared),
      cmocka_unit_test(test_transitions_steady_state_allocates_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
