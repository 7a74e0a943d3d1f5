/* SPDX-License-Identifier: MIT */
/*
 * stress_structure.c: requirements and relationships together, against an
 * oracle.
 *
 * Test 1 drives one world with random operations over three data
 * components and two relations: C requires A (default 3), A requires B
 * (default 7), so adding C brings A and B along in the same move; R is
 * exclusive and cascading, P carries an int payload. Operations: spawns
 * naming a random subset of the components with explicit values, adds
 * (weft_add: a present component keeps its value), sets, removes, edge
 * adds and removes, and despawns (which kill R's subtree first). A model
 * of plain arrays applies the documented rules: the closure of what is
 * added arrives with its defaults unless named, explicit values win,
 * removing a component leaves its requirements, adding a component that is
 * present adds nothing (requirements are addition rules), a death removes
 * the edges
 * of both ends. After every batch it compares every live entity's
 * components, values and edges (ascending targets, payloads), the sources
 * of every target, and the world's counts. R is dense (its sources sit in
 * per-parent archetypes) and every eighth check ends with a
 * weft_world_compact(), which must leave the digest alone.
 *
 * Test 2 records the same kind of program as commands from a system
 * (adds and sets that bring requirements, edges naming pending spawns,
 * cascading despawns) and requires one digest on 1, 2, 3, 4 and 8
 * workers.
 *
 * Environment: WEFT_STRUCT_SEED (default 0x57c0de), WEFT_STRUCT_OPS
 * (operations of test 1; default 2,000,000, 400,000 in sanitizer
 * builds).
 */
#include "support/weft_test.h"

#include <inttypes.h>

#define N 160u
#define BATCH 500u
#ifdef WEFT_SYSTEM_MALLOC
#define DEFAULT_OPS 400000u
#else
#define DEFAULT_OPS 2000000u
#endif

enum { CA, CB, CC, NCOMP };
enum { RR, RP, NREL };

typedef struct st_model_t {
  weft_world_t *w;
  weft_component_t comp[NCOMP];
  weft_component_t rel[NREL];
  weft_entity_t h[N];
  bool alive[N];
  bool has[N][NCOMP];
  int32_t val[N][NCOMP];
  bool edge[NREL][N][N];
  int32_t pay[N][N];
  uint64_t rng;
} st_model_t;

static const int32_t st_default_a = 3, st_default_b = 7;

/* Adds what component k requires and model entity i lacks, with the
 * defaults: C brings A (3), A brings B (7), C's closure both. */
static void st_closure(st_model_t *m, uint32_t i, uint32_t k) {
  if (k == CC && !m->has[i][CA]) {
    m->has[i][CA] = true;
    m->val[i][CA] = st_default_a;
  }
  if ((k == CC || k == CA) && !m->has[i][CB]) {
    m->has[i][CB] = true;
    m->val[i][CB] = st_default_b;
  }
}

/* Adds component k with value v to model entity i, with its closure. A
 * component already present keeps its value and adds nothing: requirements
 * are addition rules, and nothing is added. */
static void st_model_add(st_model_t *m, uint32_t i, uint32_t k, int32_t v) {
  if (m->has[i][k])
    return;
  m->has[i][k] = true;
  m->val[i][k] = v;
  st_closure(m, i, k);
}

static uint32_t st_pick(st_model_t *m, bool alive) {
  for (uint32_t tries = 0; tries < 4 * N; tries++) {
    uint32_t i = wt_draw_below(&m->rng, N);
    if (m->alive[i] == alive)
      return i;
  }
  return UINT32_MAX;
}

static void st_spawn(st_model_t *m) {
  uint32_t i = st_pick(m, false);
  if (i == UINT32_MAX)
    return;
  weft_component_t comps[NCOMP + 1] = {0};
  const void *vals[NCOMP];
  int32_t v[NCOMP];
  uint32_t n = 0;
  memset(m->has[i], 0, sizeof m->has[i]);
  for (uint32_t k = 0; k < NCOMP; k++)
    if (wt_draw_below(&m->rng, 2)) {
      v[n] = (int32_t)wt_draw_below(&m->rng, 1000) + 100;
      comps[n] = m->comp[k];
      vals[n] = &v[n];
      m->has[i][k] = true;
      m->val[i][k] = v[n];
      n++;
    }
  /* Explicit values first, then the closure of what was named. */
  for (uint32_t k = NCOMP; k-- > 0;)
    if (m->has[i][k])
      st_closure(m, i, k);
  assert_int_equal(weft_spawn_with(m->w, comps, n ? vals : NULL, &m->h[i]),
                   WEFT_OK);
  m->alive[i] = true;
  for (uint32_t r = 0; r < NREL; r++)
    for (uint32_t t = 0; t < N; t++)
      m->edge[r][i][t] = m->edge[r][t][i] = false;
}

/* Kills i and, first, every entity whose R edge leads to it. */
static void st_kill(st_model_t *m, uint32_t i) {
  if (!m->alive[i])
    return;
  m->alive[i] = false;
  for (uint32_t s = 0; s < N; s++)
    if (m->alive[s] && m->edge[RR][s][i])
      st_kill(m, s);
  for (uint32_t r = 0; r < NREL; r++)
    for (uint32_t t = 0; t < N; t++)
      m->edge[r][i][t] = m->edge[r][t][i] = false;
}

static void st_despawn(st_model_t *m) {
  uint32_t i = st_pick(m, true);
  if (i == UINT32_MAX)
    return;
  assert_int_equal(weft_despawn(m->w, m->h[i]), WEFT_OK);
  st_kill(m, i);
}

static void st_component_op(st_model_t *m) {
  uint32_t i = st_pick(m, true);
  if (i == UINT32_MAX)
    return;
  uint32_t k = wt_draw_below(&m->rng, NCOMP), what = wt_draw_below(&m->rng, 3);
  int32_t v = (int32_t)wt_draw_below(&m->rng, 1000) + 2000;
  weft_component_t c = m->comp[k];
  if (what == 0) {
    assert_int_equal(weft_add(m->w, m->h[i], c, &v), WEFT_OK);
    st_model_add(m, i, k, v);
  } else if (what == 1) {
    assert_int_equal(weft_set(m->w, m->h[i], c, &v), WEFT_OK);
    bool had = m->has[i][k];
    st_model_add(m, i, k, v);
    if (had)
      m->val[i][k] = v;
  } else {
    assert_int_equal(weft_remove(m->w, m->h[i], c), WEFT_OK);
    m->has[i][k] = false;
  }
}

static void st_edge_op(st_model_t *m) {
  uint32_t s = st_pick(m, true), t = st_pick(m, true);
  if (s == UINT32_MAX || t == UINT32_MAX)
    return;
  uint32_t r = wt_draw_below(&m->rng, NREL);
  if (wt_draw_below(&m->rng, 3)) {
    int32_t v = (int32_t)wt_draw_below(&m->rng, 1000);
    assert_int_equal(weft_relation_add(m->w, m->h[s], m->rel[r], m->h[t],
                                       r == RP ? &v : NULL),
                     WEFT_OK);
    if (r == RR)
      for (uint32_t x = 0; x < N; x++)
        m->edge[RR][s][x] = false;
    m->edge[r][s][t] = true;
    if (r == RP)
      m->pay[s][t] = v;
  } else {
    assert_int_equal(weft_relation_remove(m->w, m->h[s], m->rel[r], m->h[t]),
                     WEFT_OK);
    m->edge[r][s][t] = false;
  }
}

typedef struct st_list_t {
  weft_entity_t e[N];
  int32_t pay[N];
  uint32_t n;
} st_list_t;

static bool st_collect(weft_entity_t s, weft_entity_t t, void *p, void *u) {
  (void)s;
  st_list_t *l = u;
  assert_true(l->n < N);
  l->pay[l->n] = p ? *(const int32_t *)p : -1;
  l->e[l->n++] = t;
  return true;
}

static bool st_collect_src(weft_entity_t s, weft_entity_t t, void *p, void *u) {
  (void)t;
  (void)p;
  st_list_t *l = u;
  assert_true(l->n < N);
  l->e[l->n++] = s;
  return true;
}

/* The model's entities, in handle order, for ascending comparisons. */
static uint32_t st_sorted(const st_model_t *m, uint32_t *out) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < N; i++)
    if (m->alive[i])
      out[n++] = i;
  for (uint32_t a = 1; a < n; a++)
    for (uint32_t b = a; b > 0 && m->h[out[b - 1]] > m->h[out[b]]; b--) {
      uint32_t x = out[b];
      out[b] = out[b - 1];
      out[b - 1] = x;
    }
  return n;
}

static void st_check(st_model_t *m) {
  uint32_t order[N], n = st_sorted(m, order);
  assert_int_equal(weft_world_count(m->w), n);
  uint64_t edges = 0;
  for (uint32_t a = 0; a < n; a++) {
    uint32_t i = order[a];
    weft_entity_t e = m->h[i];
    assert_true(weft_is_alive(m->w, e));
    for (uint32_t k = 0; k < NCOMP; k++) {
      if (weft_has(m->w, e, m->comp[k]) != m->has[i][k])
        fail_msg("entity %u: component %c %s, the model says %s", i, "ABC"[k],
                 weft_has(m->w, e, m->comp[k]) ? "present" : "absent",
                 m->has[i][k] ? "present" : "absent");
      if (m->has[i][k]) {
        const int32_t *v = weft_get(m->w, e, m->comp[k]);
        assert_non_null(v);
        if (*v != m->val[i][k])
          fail_msg("entity %u component %u: %d, model %d", i, k, *v,
                   m->val[i][k]);
      }
    }
    for (uint32_t r = 0; r < NREL; r++) {
      st_list_t got = {.n = 0}, src = {.n = 0};
      assert_int_equal(weft_relation_each(m->w, e, m->rel[r], st_collect, &got),
                       WEFT_OK);
      assert_int_equal(
          weft_relation_sources(m->w, e, m->rel[r], st_collect_src, &src),
          WEFT_OK);
      uint32_t ng = 0, ns = 0;
      for (uint32_t b = 0; b < n; b++) {
        uint32_t t = order[b];
        if (m->edge[r][i][t]) {
          assert_true(ng < got.n);
          assert_true(got.e[ng] == m->h[t]);
          if (r == RP)
            assert_int_equal(got.pay[ng], m->pay[i][t]);
          ng++;
        }
        if (m->edge[r][t][i]) {
          assert_true(ns < src.n);
          assert_true(src.e[ns] == m->h[t]);
          ns++;
        }
      }
      assert_int_equal(got.n, ng);
      assert_int_equal(src.n, ns);
      assert_int_equal(weft_has(m->w, e, m->rel[r]), ng > 0);
      edges += ng;
    }
  }
  assert_int_equal(weft_relation_edge_count(m->w), edges);
}

static void test_structure_oracle(void **state) {
  (void)state;
  uint64_t seed =
      wt_env_u64("stress_structure", "WEFT_STRUCT_SEED", UINT64_C(0x57c0de));
  uint64_t ops = wt_env_u64("stress_structure", "WEFT_STRUCT_OPS", DEFAULT_OPS);
  print_message("stress_structure: seed %#" PRIx64 ", %" PRIu64 " ops\n", seed,
                ops);
  st_model_t *m = calloc(1, sizeof *m);
  assert_non_null(m);
  m->rng = seed;
  m->w = wt_world_new(NULL);
  static const char *names[NCOMP] = {"A", "B", "C"};
  for (uint32_t k = 0; k < NCOMP; k++)
    m->comp[k] = wt_register(m->w, names[k], 4, 4);
  assert_int_equal(
      weft_component_require(m->w, m->comp[CA], m->comp[CB], &st_default_b),
      WEFT_OK);
  assert_int_equal(
      weft_component_require(m->w, m->comp[CC], m->comp[CA], &st_default_a),
      WEFT_OK);
  weft_relation_desc_t d[NREL] = {
      {.name = "R", /* dense: a compaction prunes dead parents' archetypes */
       .flags = WEFT_RELATION_EXCLUSIVE | WEFT_RELATION_CASCADE},
      {.name = "P", .size = 4, .flags = WEFT_RELATION_SPARSE}};
  for (uint32_t r = 0; r < NREL; r++)
    assert_int_equal(weft_relation_register(m->w, &d[r], &m->rel[r]), WEFT_OK);
  uint64_t with_c = 0, edge_sum = 0, checks = 0, pruned = 0;
  for (uint64_t i = 0; i < ops; i++) {
    uint32_t k = wt_draw_below(&m->rng, 100);
    if (k < 12)
      st_spawn(m);
    else if (k < 16)
      st_despawn(m);
    else if (k < 50)
      st_component_op(m);
    else
      st_edge_op(m);
    if ((i + 1) % BATCH == 0 || i + 1 == ops) {
      st_check(m);
      if (checks % 8 == 7) {
        /* Compaction changes no value nor the digest; it keeps the dense
         * relation's per-parent archetypes to the living parents'. */
        const uint64_t d0 = weft_world_digest(m->w);
        weft_compact_stats_t cs;
        assert_int_equal(weft_world_compact(m->w, NULL, &cs), WEFT_OK);
        assert_int_equal(weft_world_digest(m->w), d0);
        pruned += cs.pruned;
      }
      for (uint32_t e = 0; e < N; e++)
        with_c += m->alive[e] && m->has[e][CC];
      edge_sum += weft_relation_edge_count(m->w);
      checks++;
    }
  }
  print_message("stress_structure: %" PRIu64 " checks, on average %" PRIu64
                " edges and %" PRIu64 " entities with C\n",
                checks, edge_sum / checks, with_c / checks);
  /* A model that never builds up would prove little. */
  assert_true(edge_sum / checks > 20);
  assert_true(with_c / checks > 5);
  print_message("stress_structure: %" PRIu64 " archetypes pruned, %u left\n",
                pruned, wt_stats(m->w).archetypes);
  assert_true(pruned > 0);
  weft_world_destroy(m->w);
  free(m);
}

/* --- the same program on several workers -------------------------------- */

typedef struct st_prog_t {
  weft_component_t pos, comp[NCOMP], rel[NREL];
  uint64_t seed;
} st_prog_t;

static int st_prog_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  const st_prog_t *p = ctx->user;
  for (uint32_t i = 0; i < chunk->count; i++) {
    weft_entity_t e = chunk->entities[i];
    uint64_t st =
        p->seed ^ (e * UINT64_C(0x9e3779b97f4a7c15)) ^ (ctx->tick << 40);
    uint32_t k = wt_draw_below(&st, 100);
    weft_entity_t t = chunk->entities[wt_draw_below(&st, chunk->count)];
    uint32_t c = wt_draw_below(&st, NCOMP), r = wt_draw_below(&st, NREL);
    int32_t v = (int32_t)wt_draw_below(&st, 1000);
    int rc = 0;
    if (k < 25)
      rc = weft_cmd_add(ctx->cmd, e, p->comp[c], &v);
    else if (k < 40)
      rc = weft_cmd_set(ctx->cmd, e, p->comp[c], &v);
    else if (k < 50)
      rc = weft_cmd_remove(ctx->cmd, e, p->comp[c]);
    else if (k < 75)
      rc =
          weft_cmd_relation_add(ctx->cmd, e, p->rel[r], t, r == RP ? &v : NULL);
    else if (k < 88)
      rc = weft_cmd_relation_remove(ctx->cmd, e, p->rel[r], t);
    else if (k < 91)
      rc = weft_cmd_despawn(ctx->cmd, e);
    else if (k < 96) {
      weft_component_t comps[] = {p->pos, p->comp[CC], 0};
      int32_t pos = 0;
      const void *vals[] = {&pos, &v};
      weft_entity_t child = 0;
      rc = weft_cmd_spawn(ctx->cmd, comps, vals, &child);
      if (!rc)
        rc = weft_cmd_relation_add(ctx->cmd, child, p->rel[RR], e, NULL);
    }
    if (rc)
      return rc;
  }
  return 0;
}

static uint64_t st_run_program(uint32_t workers, uint64_t seed) {
  weft_pool_t *pool = NULL;
  weft_world_t *w = wt_world_pooled(workers, 4096, &pool);
  if (workers)
    wt_dispatch_everything(w);
  st_prog_t p;
  memset(&p, 0, sizeof p);
  p.seed = seed;
  p.pos = wt_register(w, "Pos", 4, 4);
  static const char *names[NCOMP] = {"A", "B", "C"};
  for (uint32_t k = 0; k < NCOMP; k++)
    p.comp[k] = wt_register(w, names[k], 4, 4);
  assert_int_equal(
      weft_component_require(w, p.comp[CA], p.comp[CB], &st_default_b), 0);
  assert_int_equal(
      weft_component_require(w, p.comp[CC], p.comp[CA], &st_default_a), 0);
  weft_relation_desc_t d[NREL] = {
      {.name = "R", /* dense: a compaction prunes dead parents' archetypes */
       .flags = WEFT_RELATION_EXCLUSIVE | WEFT_RELATION_CASCADE},
      {.name = "P", .size = 4, .flags = WEFT_RELATION_SPARSE}};
  for (uint32_t r = 0; r < NREL; r++)
    assert_int_equal(weft_relation_register(w, &d[r], &p.rel[r]), WEFT_OK);
  weft_component_t comps[] = {p.pos, 0};
  for (int i = 0; i < 3000; i++)
    wt_spawn_with(w, comps, NULL);
  weft_system_desc_t sd;
  memset(&sd, 0, sizeof sd);
  sd.name = "structure";
  sd.query.include[0] = p.pos;
  sd.batch = 64;
  sd.run = st_prog_run;
  sd.user = &p;
  uint32_t n = 0;
  for (uint32_t k = 0; k < NCOMP; k++)
    sd.cmd_write[n++] = p.comp[k];
  for (uint32_t r = 0; r < NREL; r++)
    sd.cmd_write[n++] = p.rel[r];
  sd.cmd_write[n++] = p.pos;
  weft_system_t sys;
  assert_int_equal(weft_system_register(w, &sd, &sys), WEFT_OK);
  for (int f = 0; f < 10; f++) {
    int rc = weft_world_run_phase(w, WEFT_PHASE_FIXED_UPDATE, 0.016);
    if (rc)
      fail_msg("%u workers, frame %d: %s", workers, f,
               weft_world_last_error(w));
  }
  assert_true(weft_relation_edge_count(w) > 200);
  uint64_t h = weft_world_digest(w);
  weft_world_destroy(w);
  weft_pool_destroy(pool);
  return h;
}

static void test_structure_commands_on_workers(void **state) {
  (void)state;
  uint64_t seed =
      wt_env_u64("stress_structure", "WEFT_STRUCT_SEED", UINT64_C(0x57c0de));
  uint64_t h1 = st_run_program(1, seed);
  const uint32_t workers[] = {2, 3, 4, 8};
  for (uint32_t i = 0; i < 4; i++) {
    uint64_t h = st_run_program(workers[i], seed);
    if (h != h1)
      fail_msg("digest on %u workers %#" PRIx64 " != %#" PRIx64
               " on 1 (seed %#" PRIx64 ")",
               workers[i], h, h1, seed);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_structure_oracle),
      cmocka_unit_test(test_structure_commands_on_workers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
