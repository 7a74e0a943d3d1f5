/* SPDX-License-Identifier: MIT */
/*
 * stress_relation.c: randomized test of relations against an oracle.
 *
 * Test 1 drives one world with random operations (spawn, despawn, edge
 * add with a payload, edge remove, weft_remove of a whole relation, adds
 * naming dead handles) over three relations: a plain one with a payload,
 * an exclusive one and an exclusive cascading one. A model (plain arrays:
 * who is alive, an adjacency matrix per relation, payloads) applies the
 * same operations with the documented rules: an exclusive add replaces
 * the source's edge, a death removes the edges of both ends and first
 * kills every entity that reaches it through the cascading relation.
 * Every fourth batch runs inside a deferred scope: the calls stage, and
 * the model applies them at the scope's end as the drain does (despawns
 * and their cascades first, then the edge operations in call order, an
 * operation whose end died dropped). After every batch the test compares, for
 * every live entity and relation, the edges in ascending target order with
 * their payloads, the sources in ascending order, the relation's archetype bit,
 * the wildcard queries' counts and the world's edge count. Test 1b runs
 * the same with the exclusive relations dense (the cascading one too),
 * checking after every batch that each live entity's archetype holds the
 * pair of its edge and, now and then, that pair queries over a few
 * targets return exactly their model sources; every eighth batch ends
 * with a weft_world_compact() that must prune every dead target's empty
 * archetypes and leave the digest alone.
 *
 * Test 2 runs one program of edge commands recorded by a system (adds,
 * removes, despawns of cascade roots, spawns that edges name while
 * pending; the exclusive relations dense) on 1, 2, 3, 4 and 8 workers and
 * asserts equal digests.
 *
 * Environment:
 *   WEFT_REL_SEED  PRNG seed (default 0x5eed0fed9e5)
 *   WEFT_REL_OPS   operations of test 1 (default 1000000; 200000 in
 *                  sanitizer builds)
 */
#include "support/weft_test.h"

#include <inttypes.h>

#include "core/archetype.h" /* the pairs of an entity's archetype */
#include "core/world.h"

#define N 192u     /* model entity slots */
#define NREL 3u    /* plain+payload, exclusive, exclusive cascade */
#define BATCH 600u /* operations between full checks */
#ifdef WEFT_SYSTEM_MALLOC
#define DEFAULT_OPS 200000u
#else
#define DEFAULT_OPS 1000000u
#endif

enum { P_DESPAWN = 1, P_ADD, P_REMOVE, P_REMOVE_ALL };

typedef struct pend_t {
  uint32_t kind, r, s, t;
  int32_t v;
} pend_t;

typedef struct model_t {
  weft_world_t *w;
  weft_component_t rel[NREL];
  weft_entity_t h[N]; /* handle of model entity i (when alive) */
  bool alive[N];
  bool edge[NREL][N][N];  /* edge[r][s][t] */
  int32_t pay[N][N];      /* payload of relation 0's edge s -> t */
  weft_entity_t dead[64]; /* recent dead handles, for stale checks */
  bool dense;             /* relations 1 and 2 dense (else sparse) */
  uint64_t pruned;        /* archetypes weft_world_compact() pruned */
  uint32_t ndead;
  uint64_t rng;
  /* A deferred batch: the calls stage, the model records them and applies
   * them at the scope's end the way the drain does. */
  bool deferred;
  pend_t pend[BATCH];
  uint32_t npend;
} model_t;

static uint32_t pick_alive(model_t *m) {
  for (int tries = 0; tries < 64; tries++) {
    uint32_t i = wt_draw_below(&m->rng, N);
    if (m->alive[i])
      return i;
  }
  for (uint32_t i = 0; i < N; i++)
    if (m->alive[i])
      return i;
  return UINT32_MAX;
}

static void model_spawn(model_t *m) {
  uint32_t i = wt_draw_below(&m->rng, N);
  if (m->alive[i])
    return;
  assert_int_equal(weft_spawn(m->w, &m->h[i]), WEFT_OK);
  m->alive[i] = true;
}

/* Kills i in the model, cascading first (sources via relation 2). */
static void model_kill(model_t *m, uint32_t root) {
  uint32_t list[N], n = 0;
  bool in[N] = {false};
  list[n++] = root;
  in[root] = true;
  for (uint32_t k = 0; k < n; k++)
    for (uint32_t s = 0; s < N; s++)
      if (m->alive[s] && !in[s] && m->edge[2][s][list[k]]) {
        in[s] = true;
        list[n++] = s;
      }
  for (uint32_t k = 0; k < n; k++) {
    uint32_t x = list[k];
    m->alive[x] = false;
    for (uint32_t r = 0; r < NREL; r++)
      for (uint32_t j = 0; j < N; j++)
        m->edge[r][x][j] = m->edge[r][j][x] = false;
    m->dead[m->ndead++ % 64] = m->h[x];
  }
}

/* The model's side of one operation, now or (deferred) at the end. */
static void model_do(model_t *m, pend_t p) {
  if (m->deferred) {
    m->pend[m->npend++] = p;
    return;
  }
  switch (p.kind) {
  case P_DESPAWN:
    if (m->alive[p.s])
      model_kill(m, p.s);
    break;
  case P_ADD:
    if (p.r != 0)
      memset(m->edge[p.r][p.s], 0, sizeof m->edge[p.r][p.s]);
    m->edge[p.r][p.s][p.t] = true;
    if (p.r == 0)
      m->pay[p.s][p.t] = p.v;
    break;
  case P_REMOVE:
    m->edge[p.r][p.s][p.t] = false;
    break;
  default:
    memset(m->edge[p.r][p.s], 0, sizeof m->edge[p.r][p.s]);
    break;
  }
}

/*
 * Closes a deferred batch. The drain's order: the despawns (with their
 * cascades, over the edges as they were), then the edge operations in
 * call order, each dropped when an end died.
 */
static void model_settle(model_t *m) {
  assert_int_equal(weft_world_defer_end(m->w), WEFT_OK);
  m->deferred = false;
  for (uint32_t i = 0; i < m->npend; i++)
    if (m->pend[i].kind == P_DESPAWN)
      model_do(m, m->pend[i]);
  for (uint32_t i = 0; i < m->npend; i++) {
    pend_t p = m->pend[i];
    if (p.kind != P_DESPAWN && m->alive[p.s] &&
        (p.kind == P_REMOVE_ALL || m->alive[p.t]))
      model_do(m, p);
  }
  m->npend = 0;
}

static void model_despawn(model_t *m) {
  uint32_t i = pick_alive(m);
  if (i == UINT32_MAX)
    return;
  assert_int_equal(weft_despawn(m->w, m->h[i]), WEFT_OK);
  model_do(m, (pend_t){P_DESPAWN, 0, i, 0, 0});
}

static void model_add(model_t *m) {
  uint32_t s = pick_alive(m), t = pick_alive(m);
  if (s == UINT32_MAX)
    return;
  /* Cascading edges are the rarest: a despawn takes whole trees. */
  uint32_t roll = wt_draw_below(&m->rng, 12);
  uint32_t r = roll < 6 ? 0 : roll < 10 ? 1 : 2;
  int32_t v = (int32_t)wt_draw_below(&m->rng, 1000000);
  assert_int_equal(
      weft_relation_add(m->w, m->h[s], m->rel[r], m->h[t], r == 0 ? &v : NULL),
      WEFT_OK);
  model_do(m, (pend_t){P_ADD, r, s, t, v});
}

static void model_remove(model_t *m) {
  uint32_t s = pick_alive(m);
  if (s == UINT32_MAX)
    return;
  uint32_t r = wt_draw_below(&m->rng, NREL);
  if (wt_draw_below(&m->rng, 8) == 0) {
    assert_int_equal(weft_remove(m->w, m->h[s], m->rel[r]), WEFT_OK);
    model_do(m, (pend_t){P_REMOVE_ALL, r, s, 0, 0});
    return;
  }
  /* Mostly an existing edge, sometimes any target. */
  uint32_t t = pick_alive(m);
  for (uint32_t j = 0; j < N; j++)
    if (m->edge[r][s][j] && wt_draw_below(&m->rng, 2)) {
      t = j;
      break;
    }
  assert_int_equal(weft_relation_remove(m->w, m->h[s], m->rel[r], m->h[t]),
                   WEFT_OK);
  model_do(m, (pend_t){P_REMOVE, r, s, t, 0});
}

static void model_stale(model_t *m) {
  uint32_t s = pick_alive(m);
  if (s == UINT32_MAX || m->ndead == 0)
    return;
  weft_entity_t d =
      m->dead[wt_draw_below(&m->rng, m->ndead < 64 ? m->ndead : 64)];
  if (weft_is_alive(m->w, d))
    return;
  assert_int_equal(weft_relation_add(m->w, m->h[s], m->rel[0], d, NULL),
                   WEFT_ESTALE);
  assert_int_equal(weft_relation_add(m->w, d, m->rel[1], m->h[s], NULL),
                   WEFT_ESTALE);
}

typedef struct collect_t {
  weft_entity_t e[N];
  int32_t pay[N];
  uint32_t n;
} collect_t;

static bool collect_tgt(weft_entity_t s, weft_entity_t t, void *p, void *u) {
  (void)s;
  collect_t *c = u;
  c->pay[c->n] = p ? *(int32_t *)p : 0;
  c->e[c->n++] = t;
  return true;
}

static bool collect_src(weft_entity_t s, weft_entity_t t, void *p, void *u) {
  (void)t;
  collect_t *c = u;
  c->pay[c->n] = p ? *(int32_t *)p : 0;
  c->e[c->n++] = s;
  return true;
}

static int cmp_handle(const void *a, const void *b) {
  weft_entity_t x = *(const weft_entity_t *)a, y = *(const weft_entity_t *)b;
  return x < y ? -1 : x > y;
}

/* The model index of live handle e. */
static uint32_t index_of(const model_t *m, weft_entity_t e) {
  for (uint32_t i = 0; i < N; i++)
    if (m->alive[i] && m->h[i] == e)
      return i;
  fail_msg("handle %#" PRIx64 " is not a live model entity", e);
  return 0;
}

static void check_entity(model_t *m, uint32_t s, uint32_t r, uint32_t *with) {
  weft_entity_t want[N];
  uint32_t n = 0;
  for (uint32_t t = 0; t < N; t++)
    if (m->edge[r][s][t])
      want[n++] = m->h[t];
  qsort(want, n, sizeof want[0], cmp_handle);
  collect_t c = {.n = 0};
  assert_int_equal(
      weft_relation_each(m->w, m->h[s], m->rel[r], collect_tgt, &c), WEFT_OK);
  if (c.n != n)
    fail_msg("entity %u relation %u: %u edges, model %u", s, r, c.n, n);
  for (uint32_t k = 0; k < n; k++) {
    assert_int_equal(c.e[k], want[k]);
    if (r == 0)
      assert_int_equal(c.pay[k], m->pay[s][index_of(m, want[k])]);
  }
  assert_int_equal(weft_relation_count(m->w, m->h[s], m->rel[r]), n);
  assert_int_equal(weft_has(m->w, m->h[s], m->rel[r]), n > 0);
  *with += n > 0;
  /* Sources of s. */
  n = 0;
  for (uint32_t x = 0; x < N; x++)
    if (m->edge[r][x][s])
      want[n++] = m->h[x];
  qsort(want, n, sizeof want[0], cmp_handle);
  c.n = 0;
  assert_int_equal(
      weft_relation_sources(m->w, m->h[s], m->rel[r], collect_src, &c),
      WEFT_OK);
  assert_int_equal(c.n, n);
  for (uint32_t k = 0; k < n; k++) {
    assert_int_equal(c.e[k], want[k]);
    if (r == 0)
      assert_int_equal(c.pay[k], m->pay[index_of(m, want[k])][s]);
  }
}

/* Dense relations (1 and 2) place sources by their pairs: every live
 * entity's archetype holds the pair of its one edge (or none), and every
 * 64th check a pair query over a few live targets, picked by the check's
 * number (not the operation stream's generator), returns exactly their
 * sources in the model. Temporary queries match every archetype, and
 * those of dead targets stay until weft_world_compact(): hence few. */
static void check_pairs(model_t *m, uint64_t check) {
  for (uint32_t s = 0; s < N; s++) {
    if (!m->alive[s])
      continue;
    const weft__archetype_t *a =
        m->w->archs[weft_archetype_of(m->w, m->h[s]) - 1];
    for (uint32_t r = 1; r < NREL; r++) {
      weft_entity_t want = WEFT_ENTITY_NULL;
      for (uint32_t t = 0; t < N && !want; t++)
        if (m->edge[r][s][t])
          want = m->h[t];
      assert_true(weft__archetype_pair_first(a, m->rel[r]) == want);
    }
  }
  if (check % 64)
    return;
  for (uint32_t r = 1; r < NREL; r++) {
    for (uint32_t k = 0; k < 3; k++) {
      uint32_t t = (uint32_t)((check * 7u + k * 61u + r * 31u) % N);
      if (!m->alive[t])
        continue;
      weft_query_desc_t qd;
      memset(&qd, 0, sizeof qd);
      qd.pairs[0] = (weft_pair_t){.rel = m->rel[r], .target = m->h[t]};
      weft_query_t *q = NULL;
      assert_int_equal(weft_query_create_temp(m->w, &qd, &q), WEFT_OK);
      uint32_t rows = 0, want = 0;
      weft_iter_t it;
      weft_query_iter(q, &it);
      while (weft_iter_next(&it)) {
        assert_true(weft_iter_target(&it, m->rel[r]) == m->h[t]);
        for (uint32_t i = 0; i < it.count; i++)
          assert_true(m->edge[r][index_of(m, it.entities[i])][t]);
        rows += it.count;
      }
      for (uint32_t x = 0; x < N; x++)
        want += m->alive[x] && m->edge[r][x][t];
      assert_int_equal(rows, want);
      assert_int_equal(weft_query_destroy(q), WEFT_OK);
    }
  }
}

/* weft_world_compact() between checks: it prunes every empty archetype
 * whose pair names a dead target and nothing that holds rows (the next
 * checks see every entity where the model says), and the digest does not
 * move. */
static void compact_check(model_t *m) {
  const uint64_t d0 = weft_world_digest(m->w);
  weft_compact_stats_t st;
  assert_int_equal(weft_world_compact(m->w, NULL, &st), WEFT_OK);
  m->pruned += st.pruned;
  assert_int_equal(weft_world_digest(m->w), d0);
  for (uint32_t id = 0; id < m->w->arch_count; id++) {
    const weft__archetype_t *a = m->w->archs[id];
    assert_false(a->count == 0 && weft__archetype_pair_target_dead(m->w, a));
  }
}

static void check_all(model_t *m, weft_query_t *const *q) {
  uint64_t edges = 0;
  uint32_t alive = 0;
  for (uint32_t s = 0; s < N; s++) {
    if (!m->alive[s])
      continue;
    alive++;
    for (uint32_t r = 0; r < NREL; r++)
      for (uint32_t t = 0; t < N; t++)
        edges += m->edge[r][s][t];
  }
  for (uint32_t r = 0; r < NREL; r++) {
    uint32_t with = 0;
    for (uint32_t s = 0; s < N; s++)
      if (m->alive[s])
        check_entity(m, s, r, &with);
    assert_int_equal(weft_query_count(q[r]), with);
  }
  assert_int_equal(weft_world_count(m->w), alive);
  assert_int_equal(weft_relation_edge_count(m->w), edges);
}

static void oracle_run(bool dense) {
  uint64_t seed =
      wt_env_u64("stress_relation", "WEFT_REL_SEED", UINT64_C(0x5eed0fed9e5));
  uint64_t ops = wt_env_u64("stress_relation", "WEFT_REL_OPS", DEFAULT_OPS);
  print_message("stress_relation: %s, seed %#" PRIx64 ", %" PRIu64 " ops\n",
                dense ? "dense" : "sparse", seed, ops);
  model_t *m = calloc(1, sizeof *m);
  assert_non_null(m);
  m->rng = seed;
  m->dense = dense;
  m->w = wt_world_new(NULL);
  const uint32_t sp = dense ? 0 : WEFT_RELATION_SPARSE;
  weft_relation_desc_t d[NREL] = {
      {.name = "Pay", .size = 4, .flags = WEFT_RELATION_SPARSE},
      {.name = "Excl", .flags = WEFT_RELATION_EXCLUSIVE | sp},
      {.name = "Cascade",
       .flags = WEFT_RELATION_EXCLUSIVE | WEFT_RELATION_CASCADE | sp}};
  weft_query_t *q[NREL];
  for (uint32_t r = 0; r < NREL; r++) {
    assert_int_equal(weft_relation_register(m->w, &d[r], &m->rel[r]), WEFT_OK);
    weft_query_desc_t qd;
    memset(&qd, 0, sizeof qd);
    qd.include[0] = m->rel[r];
    assert_int_equal(weft_query_create(m->w, &qd, &q[r]), WEFT_OK);
  }
  uint64_t alive_sum = 0, edge_sum = 0, checks = 0;
  for (uint64_t i = 0; i < ops; i++) {
    /* Every fourth batch runs inside a deferred scope. */
    if (i % BATCH == 0 && (i / BATCH) % 4 == 3) {
      assert_int_equal(weft_world_defer_begin(m->w), 1);
      m->deferred = true;
    }
    uint32_t k = wt_draw_below(&m->rng, 100);
    if (k < 14)
      model_spawn(m);
    else if (k < 17)
      model_despawn(m);
    else if (k < 66)
      model_add(m);
    else if (k < 96)
      model_remove(m);
    else
      model_stale(m);
    if ((i + 1) % BATCH == 0 || i + 1 == ops) {
      if (m->deferred)
        model_settle(m);
      check_all(m, q);
      if (dense)
        check_pairs(m, checks);
      if (dense && checks % 8 == 7)
        compact_check(m);
      alive_sum += weft_world_count(m->w);
      edge_sum += weft_relation_edge_count(m->w);
      checks++;
    }
  }
  print_message("stress_relation: %" PRIu64 " checks, on average %" PRIu64
                " entities and %" PRIu64 " edges\n",
                checks, alive_sum / checks, edge_sum / checks);
  print_message("stress_relation: %u archetypes, %" PRIu64 " pruned\n",
                wt_stats(m->w).archetypes, m->pruned);
  if (dense) /* targets die all the time: compaction must have had work */
    assert_true(m->pruned > 0);
  /* A model that never builds up would prove little. */
  assert_true(edge_sum / checks > 50);
  for (uint32_t r = 0; r < NREL; r++)
    assert_int_equal(weft_query_destroy(q[r]), WEFT_OK);
  weft_world_destroy(m->w);
  free(m);
}

static void test_relation_oracle(void **state) {
  (void)state;
  oracle_run(false);
}

/* Dense placement against the same model, with a weft_world_compact()
 * every eighth check: every target handle ever used makes archetypes that
 * stay (empty, once the target died) until a compaction prunes them. */
static void test_relation_oracle_dense(void **state) {
  (void)state;
  oracle_run(true);
}

/* --- the same program on several workers -------------------------------- */

typedef struct prog_t {
  weft_component_t pos;
  weft_component_t rel[NREL];
  uint64_t seed;
} prog_t;

static int prog_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  prog_t *p = ctx->user;
  for (uint32_t i = 0; i < chunk->count; i++) {
    weft_entity_t e = chunk->entities[i];
    /* Everything from the row's handle and the tick: the same commands
     * whichever worker runs the chunk. */
    uint64_t st =
        p->seed ^ (e * UINT64_C(0x9e3779b97f4a7c15)) ^ (ctx->tick << 40);
    uint32_t k = wt_draw_below(&st, 100);
    /* Another row of the same chunk, as a target. */
    weft_entity_t t = chunk->entities[wt_draw_below(&st, chunk->count)];
    uint32_t r = wt_draw_below(&st, NREL);
    int32_t v = (int32_t)wt_draw_below(&st, 1000);
    if (k < 50) {
      weft_cmd_relation_add(ctx->cmd, e, p->rel[r], t, r == 0 ? &v : NULL);
    } else if (k < 80) {
      weft_cmd_relation_remove(ctx->cmd, e, p->rel[r], t);
    } else if (k < 83) {
      weft_cmd_despawn(ctx->cmd, e); /* cascades through its sources */
    } else if (k < 88) {
      weft_component_t comps[] = {p->pos, 0};
      weft_entity_t child = 0;
      if (weft_cmd_spawn(ctx->cmd, comps, NULL, &child) == 0) {
        weft_cmd_relation_add(ctx->cmd, child, p->rel[2], e, NULL);
        weft_cmd_relation_add(ctx->cmd, e, p->rel[0], child, &v);
      }
    }
  }
  return 0;
}

static uint64_t run_program(uint32_t workers, uint64_t seed) {
  weft_pool_t *pool = NULL;
  weft_world_t *w = wt_world_pooled(workers, 4096, &pool);
  if (workers)
    wt_dispatch_everything(w);
  prog_t p;
  memset(&p, 0, sizeof p);
  p.seed = seed;
  p.pos = wt_register(w, "Pos", 4, 4);
  weft_relation_desc_t d[NREL] = {
      {.name = "Pay", .size = 4, .flags = WEFT_RELATION_SPARSE},
      {.name = "Excl", .flags = WEFT_RELATION_EXCLUSIVE},
      {.name = "Cascade",
       .flags = WEFT_RELATION_EXCLUSIVE | WEFT_RELATION_CASCADE}};
  for (uint32_t r = 0; r < NREL; r++)
    assert_int_equal(weft_relation_register(w, &d[r], &p.rel[r]), WEFT_OK);
  weft_component_t comps[] = {p.pos, 0};
  for (int i = 0; i < 4000; i++)
    wt_spawn_with(w, comps, NULL);
  weft_system_desc_t sd;
  memset(&sd, 0, sizeof sd);
  sd.name = "edges";
  sd.query.include[0] = p.pos;
  sd.batch = 64;
  sd.run = prog_run;
  sd.user = &p;
  for (uint32_t r = 0; r < NREL; r++)
    sd.cmd_write[r] = p.rel[r];
  sd.cmd_write[NREL] = p.pos;
  weft_system_t sys;
  assert_int_equal(weft_system_register(w, &sd, &sys), WEFT_OK);
  for (int f = 0; f < 12; f++) {
    int rc = weft_world_run_phase(w, WEFT_PHASE_FIXED_UPDATE, 0.016);
    if (rc)
      fail_msg("%u workers, frame %d: %s", workers, f,
               weft_world_last_error(w));
  }
  assert_true(weft_relation_edge_count(w) > 500);
  uint64_t h = weft_world_digest(w);
  weft_world_destroy(w);
  weft_pool_destroy(pool);
  return h;
}

static void test_relation_commands_on_workers(void **state) {
  (void)state;
  uint64_t seed =
      wt_env_u64("stress_relation", "WEFT_REL_SEED", UINT64_C(0x5eed0fed9e5));
  uint64_t h1 = run_program(1, seed);
  const uint32_t workers[] = {2, 3, 4, 8};
  for (uint32_t i = 0; i < 4; i++) {
    uint64_t h = run_program(workers[i], seed);
    if (h != h1)
      fail_msg("digest on %u workers %#" PRIx64 " != %#" PRIx64
               " on 1 (seed %#" PRIx64 ")",
               workers[i], h, h1, seed);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_relation_oracle),
      cmocka_unit_test(test_relation_oracle_dense),
      cmocka_unit_test(test_relation_commands_on_workers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
