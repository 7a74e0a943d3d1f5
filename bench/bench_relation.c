/* SPDX-License-Identifier: MIT */
/*
 * relation: the costs of relationships, each against a same-run baseline.
 *
 *   relation/add_remove_pair  add then remove one edge (ChildOf, target)
 *                             per entity, vs weft_add + weft_remove of a
 *                             plain tag on the same entities (target 1.2x)
 *   relation/query_wildcard   iterate a query that includes the relation
 *                             (any target) and sums a column, vs a raw C
 *                             loop over an array of the same values
 *   relation/query_target     visit the sources of one target (the reverse
 *                             index) and read their payloads, vs a raw C
 *                             loop over an array of payloads
 *   relation/traverse         depth-first weft_relation_traverse() over a
 *                             tree, ns per visited entity, vs a raw C
 *                             depth-first walk of child arrays
 *   relation/cascade/100k     despawn the root of a 100k-entity CASCADE
 *                             subtree, vs despawning 100k plain entities
 *                             one by one
 *   relation/dense_add_remove_pair
 *                             add_remove_pair with a dense relation (each
 *                             change a row move between pair archetypes),
 *                             vs the same plain tag baseline
 *   relation/query_pair       iterate a pair query (dense relation, one
 *                             target of two) and sum its payload column,
 *                             vs a raw C loop over as many values
 *
 * The other rows' relations are SPARSE: they measure the edge store.
 */
#include <stdint.h>
#include <string.h>

#include <weft.h>

#include "harness.h"

typedef struct rel_state_t {
  uint32_t n;
  weft_world_t *world;
  weft_component_t pos, tag, child, link;
  weft_component_t dense, dlink; /* dense: plain; dlink: exclusive payload */
  weft_entity_t *e;
  weft_entity_t hub;
  float *raw;     /* the baselines' values */
  uint32_t *kids; /* raw tree: children of node i at kid0[i].. */
  uint32_t *kid0; /* n + 1 offsets */
  weft_query_t *q;
} rel_state_t;

/* --- add_remove_pair ----------------------------------------------------- */

static uint64_t pair_edges(rel_state_t *s, weft_component_t rel,
                           uint64_t reps) {
  for (uint64_t r = 0; r < reps; r++) {
    for (uint32_t i = 0; i < s->n; i++)
      bench_check(weft_relation_add(s->world, s->e[i], rel, s->hub, NULL),
                  "weft_relation_add");
    for (uint32_t i = 0; i < s->n; i++)
      bench_check(weft_relation_remove(s->world, s->e[i], rel, s->hub),
                  "weft_relation_remove");
    bench_clobber();
  }
  return weft_world_count(s->world);
}

static uint64_t pair_weft(void *p, uint64_t reps) {
  rel_state_t *s = p;
  return pair_edges(s, s->child, reps);
}

static uint64_t pair_dense(void *p, uint64_t reps) {
  rel_state_t *s = p;
  return pair_edges(s, s->dense, reps);
}

static uint64_t pair_tag(void *p, uint64_t reps) {
  rel_state_t *s = p;
  for (uint64_t r = 0; r < reps; r++) {
    for (uint32_t i = 0; i < s->n; i++)
      bench_check(weft_add(s->world, s->e[i], s->tag, NULL), "weft_add");
    for (uint32_t i = 0; i < s->n; i++)
      bench_check(weft_remove(s->world, s->e[i], s->tag), "weft_remove");
    bench_clobber();
  }
  return weft_world_count(s->world);
}

/* --- the query rows ------------------------------------------------------ */

static uint64_t wild_weft(void *p, uint64_t reps) {
  rel_state_t *s = p;
  float sum = 0;
  for (uint64_t r = 0; r < reps; r++) {
    weft_iter_t it;
    weft_query_iter(s->q, &it);
    while (weft_iter_next(&it)) {
      const float *v = it.columns[0];
      for (uint32_t i = 0; i < it.count; i++)
        sum += v[i];
    }
    bench_clobber();
  }
  return (uint64_t)sum;
}

static uint64_t raw_sum(void *p, uint64_t reps) {
  rel_state_t *s = p;
  float sum = 0;
  for (uint64_t r = 0; r < reps; r++) {
    for (uint32_t i = 0; i < s->n; i++)
      sum += s->raw[i];
    bench_clobber();
  }
  return (uint64_t)sum;
}

/* The sum of n / 2 values: the selected half of query_pair. */
static uint64_t raw_half(void *p, uint64_t reps) {
  rel_state_t *s = p;
  float sum = 0;
  for (uint64_t r = 0; r < reps; r++) {
    for (uint32_t i = 0; i < s->n / 2; i++)
      sum += s->raw[i];
    bench_clobber();
  }
  return (uint64_t)sum;
}

static bool add_payload(weft_entity_t src, weft_entity_t tgt, void *payload,
                        void *user) {
  (void)src;
  (void)tgt;
  *(float *)user += *(const float *)payload;
  return true;
}

static uint64_t target_weft(void *p, uint64_t reps) {
  rel_state_t *s = p;
  float sum = 0;
  for (uint64_t r = 0; r < reps; r++) {
    bench_check(
        weft_relation_sources(s->world, s->hub, s->link, add_payload, &sum),
        "weft_relation_sources");
    bench_clobber();
  }
  return (uint64_t)sum;
}

/* --- traverse ------------------------------------------------------------ */

static bool count_visit(weft_entity_t e, uint32_t depth, void *user) {
  (void)e;
  *(uint64_t *)user += depth + 1;
  return true;
}

static uint64_t trav_weft(void *p, uint64_t reps) {
  rel_state_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; r++) {
    bench_check(
        weft_relation_traverse(s->world, s->e[0], s->child, count_visit, &sum),
        "weft_relation_traverse");
    bench_clobber();
  }
  return sum;
}

/* A raw pre-order walk with an explicit stack, like weft's. */
static uint64_t trav_raw(void *p, uint64_t reps) {
  rel_state_t *s = p;
  uint64_t sum = 0;
  uint32_t *stack = (uint32_t *)s->raw; /* n entries of scratch */
  uint32_t *depth = stack + s->n;
  for (uint64_t r = 0; r < reps; r++) {
    uint32_t top = 0;
    for (uint32_t k = s->kid0[1]; k-- > s->kid0[0];) {
      stack[top] = s->kids[k];
      depth[top++] = 0;
    }
    while (top) {
      uint32_t x = stack[--top], d = depth[top];
      sum += d + 1;
      for (uint32_t k = s->kid0[x + 1]; k-- > s->kid0[x];) {
        stack[top] = s->kids[k];
        depth[top++] = d + 1;
      }
    }
    bench_clobber();
  }
  return sum;
}

/* Builds a tree of n entities over s->e (e[0] the root, node i's parent
 * (i - 1) / 8) with ChildOf edges, and the same tree as child arrays. */
static void build_tree(rel_state_t *s) {
  for (uint32_t i = 1; i < s->n; i++)
    bench_check(
        weft_relation_add(s->world, s->e[i], s->child, s->e[(i - 1) / 8], NULL),
        "weft_relation_add");
  for (uint32_t i = 0; i <= s->n; i++)
    s->kid0[i] = 0;
  for (uint32_t i = 1; i < s->n; i++)
    s->kid0[(i - 1) / 8 + 1]++;
  for (uint32_t i = 0; i < s->n; i++)
    s->kid0[i + 1] += s->kid0[i];
  for (uint32_t i = 1; i < s->n; i++)
    s->kids[i - 1] = i; /* children of each node are consecutive ids */
}

/* --- cascade ------------------------------------------------------------- */

static uint64_t cascade_weft(void *p, uint64_t reps) {
  rel_state_t *s = p;
  double ns = 0;
  for (uint64_t r = 0; r < reps; r++) {
    weft_component_t comps[] = {s->pos, 0};
    for (uint32_t i = 0; i < s->n; i++)
      bench_check(weft_spawn_with(s->world, comps, NULL, &s->e[i]),
                  "weft_spawn_with");
    for (uint32_t i = 1; i < s->n; i++)
      bench_check(weft_relation_add(s->world, s->e[i], s->child,
                                    s->e[(i - 1) / 8], NULL),
                  "weft_relation_add");
    double t0 = bench_now_ns();
    bench_check(weft_despawn(s->world, s->e[0]), "weft_despawn");
    ns += bench_now_ns() - t0;
    if (weft_world_count(s->world) != 0)
      bench_die("the cascade left entities", -1);
  }
  return (uint64_t)ns;
}

static uint64_t cascade_plain(void *p, uint64_t reps) {
  rel_state_t *s = p;
  double ns = 0;
  for (uint64_t r = 0; r < reps; r++) {
    weft_component_t comps[] = {s->pos, 0};
    for (uint32_t i = 0; i < s->n; i++)
      bench_check(weft_spawn_with(s->world, comps, NULL, &s->e[i]),
                  "weft_spawn_with");
    double t0 = bench_now_ns();
    for (uint32_t i = 0; i < s->n; i++)
      bench_check(weft_despawn(s->world, s->e[i]), "weft_despawn");
    ns += bench_now_ns() - t0;
  }
  return (uint64_t)ns;
}

/* --- setup --------------------------------------------------------------- */

static void state_init(rel_state_t *s, uint32_t n) {
  memset(s, 0, sizeof *s);
  s->n = n;
  bench_check(weft_world_create(NULL, &s->world), "weft_world_create");
  weft_component_desc_t d = {.name = "Pos", .size = 4, .alignment = 4};
  bench_check(weft_component_register(s->world, &d, &s->pos), "Pos");
  d = (weft_component_desc_t){.name = "Tag"};
  bench_check(weft_component_register(s->world, &d, &s->tag), "Tag");
  weft_relation_desc_t rd = {.name = "ChildOf",
                             .flags = WEFT_RELATION_EXCLUSIVE |
                                      WEFT_RELATION_CASCADE |
                                      WEFT_RELATION_SPARSE};
  bench_check(weft_relation_register(s->world, &rd, &s->child), "ChildOf");
  rd = (weft_relation_desc_t){
      .name = "Link", .size = 4, .flags = WEFT_RELATION_SPARSE};
  bench_check(weft_relation_register(s->world, &rd, &s->link), "Link");
  rd = (weft_relation_desc_t){.name = "Dense"};
  bench_check(weft_relation_register(s->world, &rd, &s->dense), "Dense");
  rd = (weft_relation_desc_t){
      .name = "DLink", .size = 4, .flags = WEFT_RELATION_EXCLUSIVE};
  bench_check(weft_relation_register(s->world, &rd, &s->dlink), "DLink");
  s->e = bench_alloc((size_t)n * sizeof *s->e);
  s->raw = bench_alloc((size_t)n * 2 * sizeof(float));
  s->kids = bench_alloc((size_t)n * sizeof(uint32_t));
  s->kid0 = bench_alloc((size_t)(n + 1) * sizeof(uint32_t));
  weft_component_t comps[] = {s->pos, 0};
  for (uint32_t i = 0; i < n; i++) {
    float v = (float)(i % 7);
    const void *vals[] = {&v};
    bench_check(weft_spawn_with(s->world, comps, vals, &s->e[i]), "spawn");
    s->raw[i] = v;
  }
  bench_check(weft_spawn(s->world, &s->hub), "spawn hub");
}

static void state_free(rel_state_t *s) {
  if (s->q)
    weft_query_destroy(s->q);
  weft_world_destroy(s->world);
  bench_free(s->e);
  bench_free(s->raw);
  bench_free(s->kids);
  bench_free(s->kid0);
}

void bench_relation(bench_ctx_t *ctx) {
  uint32_t n = ctx->quick ? 20000 : 100000;
  rel_state_t s;
  if (bench_selected(ctx, "relation/add_remove_pair")) {
    state_init(&s, n);
    bench_case_t c = {.name = "relation/add_remove_pair",
                      .unit = "ns/op",
                      .n = n,
                      .work = {"weft_edge", pair_weft, &s, 2.0 * n, false},
                      .base = {"weft_tag", pair_tag, &s, 2.0 * n, false},
                      .target_kind = BENCH_TARGET_RATIO,
                      .target = 1.2};
    bench_compare(ctx, &c);
    state_free(&s);
  }
  if (bench_selected(ctx, "relation/query_wildcard")) {
    state_init(&s, n);
    for (uint32_t i = 0; i < n; i++) /* every row has an edge */
      bench_check(weft_relation_add(s.world, s.e[i], s.link, s.e[(i * 7u) % n],
                                    &s.raw[i]),
                  "weft_relation_add");
    weft_query_desc_t qd;
    memset(&qd, 0, sizeof qd);
    qd.include[0] = s.pos;
    qd.include[1] = s.link;
    bench_check(weft_query_create(s.world, &qd, &s.q), "weft_query_create");
    bench_case_t c = {.name = "relation/query_wildcard",
                      .unit = "ns/row",
                      .n = n,
                      .work = {"weft_query", wild_weft, &s, n, false},
                      .base = {"c_loop", raw_sum, &s, n, false}};
    bench_compare(ctx, &c);
    state_free(&s);
  }
  if (bench_selected(ctx, "relation/query_target")) {
    state_init(&s, n);
    for (uint32_t i = 0; i < n; i++)
      bench_check(weft_relation_add(s.world, s.e[i], s.link, s.hub, &s.raw[i]),
                  "weft_relation_add");
    bench_case_t c = {.name = "relation/query_target",
                      .unit = "ns/row",
                      .n = n,
                      .work = {"weft_sources", target_weft, &s, n, false},
                      .base = {"c_loop", raw_sum, &s, n, false}};
    bench_compare(ctx, &c);
    state_free(&s);
  }
  if (bench_selected(ctx, "relation/traverse")) {
    state_init(&s, n);
    build_tree(&s);
    bench_case_t c = {.name = "relation/traverse",
                      .unit = "ns/visit",
                      .n = n,
                      .work = {"weft_traverse", trav_weft, &s, n - 1, false},
                      .base = {"c_dfs", trav_raw, &s, n - 1, false}};
    bench_compare(ctx, &c);
    state_free(&s);
  }
  if (bench_selected(ctx, "relation/dense_add_remove_pair")) {
    state_init(&s, n);
    bench_case_t c = {
        .name = "relation/dense_add_remove_pair",
        .unit = "ns/op",
        .n = n,
        .work = {"weft_dense_edge", pair_dense, &s, 2.0 * n, false},
        .base = {"weft_tag", pair_tag, &s, 2.0 * n, false}};
    bench_compare(ctx, &c);
    state_free(&s);
  }
  if (bench_selected(ctx, "relation/query_pair")) {
    state_init(&s, n);
    weft_entity_t other;
    bench_check(weft_spawn(s.world, &other), "spawn");
    /* Even rows link to the hub, odd ones to another target: the pair
     * query selects the first half of raw's values, the baseline's. */
    for (uint32_t i = 0; i < n; i++) {
      float v = i % 2 ? 0.0f : s.raw[i / 2];
      bench_check(weft_relation_add(s.world, s.e[i], s.dlink,
                                    i % 2 ? other : s.hub, &v),
                  "weft_relation_add");
    }
    weft_query_desc_t qd;
    memset(&qd, 0, sizeof qd);
    qd.include[0] = s.dlink;
    qd.pairs[0] = (weft_pair_t){.rel = s.dlink, .target = s.hub};
    bench_check(weft_query_create(s.world, &qd, &s.q), "weft_query_create");
    if (weft_query_count(s.q) != n / 2)
      bench_die("the pair query selects the wrong rows", -1);
    bench_case_t c = {.name = "relation/query_pair",
                      .unit = "ns/row",
                      .n = n / 2,
                      .work = {"weft_pair_query", wild_weft, &s, n / 2, false},
                      .base = {"c_loop", raw_half, &s, n / 2, false}};
    bench_compare(ctx, &c);
    state_free(&s);
  }
  if (bench_selected(ctx, "relation/cascade/100k")) {
    state_init(&s, 100000);
    /* Empty worlds between repetitions: each side spawns its own. */
    for (uint32_t i = 0; i < s.n; i++)
      bench_check(weft_despawn(s.world, s.e[i]), "weft_despawn");
    bench_check(weft_despawn(s.world, s.hub), "weft_despawn");
    bench_case_t c = {
        .name = "relation/cascade/100k",
        .unit = "ns/entity",
        .n = s.n,
        .work = {"weft_cascade", cascade_weft, &s, s.n, true},
        .base = {"weft_despawn_each", cascade_plain, &s, s.n, true}};
    bench_compare(ctx, &c);
    state_free(&s);
  }
}
