/* SPDX-License-Identifier: MIT */
/*
 * The transform hierarchy (systems/transform.c) against an oracle: a
 * random forest kept in plain arrays (each node's parent index), whose
 * world transforms the oracle computes by composing down each node's
 * chain from its root. The same forest runs through
 * weft_hierarchy_update() and through the system on no pool and on a pool
 * of two workers; reparenting, a cascade despawn, disabled transforms,
 * nodes without transforms and a cycle change the forest between runs.
 */
#include "support/weft_test.h"

#include <math.h>

#include <weft/builtin.h>
#include <weft/relation.h>

#define XF_NODES 3000u
#define XF_NONE UINT32_MAX

typedef struct xf_fx_t {
  weft_world_t *w;
  weft_pool_t *pool;
  weft_hierarchy_t *h;
  weft_hierarchy_ids_t ids;
  weft_entity_t e[XF_NODES];
  uint32_t parent[XF_NODES]; /* XF_NONE: a root */
  bool plain[XF_NODES];      /* no transforms at all */
  weft_transform2_t local[XF_NODES];
  bool alive[XF_NODES];
} xf_fx_t;

static weft_transform2_t xf_random_local(wt_rng_t *r) {
  float a = (float)wt_below(r, 6283) / 1000.0f;
  weft_transform2_t t = {(float)wt_below(r, 2001) / 100.0f - 10.0f,
                         (float)wt_below(r, 2001) / 100.0f - 10.0f, cosf(a),
                         sinf(a), 0.5f + (float)wt_below(r, 100) / 100.0f};
  return t;
}

/* The oracle's composition, written out independently of the system's. */
static weft_transform2_t xf_oracle_compose(weft_transform2_t p,
                                           weft_transform2_t l) {
  weft_transform2_t o;
  o.x = p.x + p.scale * p.c * l.x - p.scale * p.s * l.y;
  o.y = p.y + p.scale * p.s * l.x + p.scale * p.c * l.y;
  o.c = p.c * l.c - p.s * l.s;
  o.s = p.s * l.c + p.c * l.s;
  o.scale = p.scale * l.scale;
  return o;
}

/* A node takes part when it is alive and has transforms. */
static bool xf_part(const xf_fx_t *f, uint32_t i) {
  return f->alive[i] && !f->plain[i];
}

/* The oracle's world transform of node i (depth out), or false when a
 * cycle keeps it from any root. */
static bool xf_oracle(const xf_fx_t *f, uint32_t i, weft_transform2_t *out,
                      uint32_t *depth) {
  uint32_t chain[XF_NODES], n = 0;
  for (uint32_t k = i;; k = f->parent[k]) {
    if (n == XF_NODES)
      return false; /* a cycle */
    chain[n++] = k;
    uint32_t p = f->parent[k];
    if (p == XF_NONE || !xf_part(f, p))
      break;
  }
  weft_transform2_t t = f->local[chain[n - 1]];
  for (uint32_t k = n - 1; k-- > 0;)
    t = xf_oracle_compose(t, f->local[chain[k]]);
  *out = t;
  *depth = n - 1;
  return true;
}

static void xf_build(xf_fx_t *f, uint32_t workers, uint64_t seed,
                     bool with_system) {
  memset(f, 0, sizeof *f);
  f->w = wt_world_pooled(workers, 4096, &f->pool);
  assert_int_equal(weft_hierarchy_create(f->w, NULL, &f->h), WEFT_OK);
  weft_hierarchy_ids(f->h, &f->ids);
  if (with_system)
    assert_int_equal(weft_sys_transform(f->w, f->h, NULL), WEFT_OK);
  wt_rng_t r = wt_rng(seed);
  for (uint32_t i = 0; i < XF_NODES; i++) {
    f->local[i] = xf_random_local(&r);
    f->plain[i] = wt_chance(&r, 1, 50);
    f->alive[i] = true;
    weft_transform2_t zero = {0, 0, 1, 0, 1};
    if (f->plain[i]) {
      f->e[i] = wt_spawn(f->w);
    } else {
      weft_component_t comps[] = {f->ids.local, f->ids.world, 0};
      const void *vals[] = {&f->local[i], &zero};
      assert_int_equal(weft_spawn_with(f->w, comps, vals, &f->e[i]), WEFT_OK);
    }
    /* A forest: about 1 in 20 nodes is a root, others hang under an
     * earlier node, so depths reach past 8. */
    f->parent[i] = i && !wt_chance(&r, 1, 20)
                       ? i - 1 - wt_below(&r, i < 4 ? i : 4)
                       : XF_NONE;
    if (f->parent[i] != XF_NONE)
      assert_int_equal(weft_relation_add(f->w, f->e[i], f->ids.child_of,
                                         f->e[f->parent[i]], NULL),
                       WEFT_OK);
  }
}

static void xf_free(xf_fx_t *f) {
  weft_hierarchy_destroy(f->h);
  weft_world_destroy(f->w);
  if (f->pool)
    weft_pool_destroy(f->pool);
}

static bool xf_close(float a, float b) {
  return fabsf(a - b) <= 1e-3f * (1.0f + fabsf(b));
}

/* Every node with transforms has the oracle's world transform; nodes the
 * oracle cannot reach keep @p stale. Returns the levels the oracle saw. */
static void xf_check(const xf_fx_t *f, const weft_transform2_t *stale) {
  uint32_t oracle_levels[512] = {0}, nlev = 0;
  for (uint32_t i = 0; i < XF_NODES; i++) {
    if (!xf_part(f, i)) {
      if (!f->alive[i])
        assert_false(weft_is_alive(f->w, f->e[i]));
      continue;
    }
    const weft_transform2_t *got = weft_get(f->w, f->e[i], f->ids.world);
    assert_non_null(got);
    weft_transform2_t want;
    uint32_t depth;
    if (!xf_oracle(f, i, &want, &depth)) {
      assert_non_null(stale);
      assert_memory_equal(got, stale, sizeof *got);
      continue;
    }
    if (!xf_close(got->x, want.x) || !xf_close(got->y, want.y) ||
        !xf_close(got->c, want.c) || !xf_close(got->s, want.s) ||
        !xf_close(got->scale, want.scale))
      fail_msg("node %u (depth %u): got (%g %g %g %g %g), want (%g %g %g %g "
               "%g)",
               i, depth, got->x, got->y, got->c, got->s, got->scale, want.x,
               want.y, want.c, want.s, want.scale);
    assert_true(depth < 512);
    oracle_levels[depth]++;
    if (depth + 1 > nlev)
      nlev = depth + 1;
  }
  uint32_t levels[512];
  assert_int_equal(weft_hierarchy_levels(f->h, levels, 512), nlev);
  for (uint32_t d = 0; d < nlev; d++)
    assert_int_equal(levels[d], oracle_levels[d]);
}

static void test_transform_matches_oracle(void **state) {
  (void)state;
  xf_fx_t *f = calloc(1, sizeof *f);
  xf_build(f, 0, 11, false);
  assert_int_equal(weft_hierarchy_update(f->h), WEFT_OK);
  xf_check(f, NULL);
  uint32_t levels[64];
  assert_true(weft_hierarchy_levels(f->h, levels, 64) > 8);
  xf_free(f);
  free(f);
}

/* Local changes without structural ones reuse the plan and still land. */
static void test_transform_follows_local_changes(void **state) {
  (void)state;
  xf_fx_t *f = calloc(1, sizeof *f);
  xf_build(f, 0, 12, false);
  assert_int_equal(weft_hierarchy_update(f->h), WEFT_OK);
  uint64_t v = weft_world_structure_version(f->w);
  wt_rng_t r = wt_rng(99);
  for (uint32_t k = 0; k < 200; k++) {
    uint32_t i = wt_below(&r, XF_NODES);
    if (f->plain[i])
      continue;
    f->local[i] = xf_random_local(&r);
    assert_int_equal(weft_set(f->w, f->e[i], f->ids.local, &f->local[i]),
                     WEFT_OK);
  }
  assert_true(weft_world_structure_version(f->w) == v);
  assert_int_equal(weft_hierarchy_update(f->h), WEFT_OK);
  xf_check(f, NULL);
  xf_free(f);
  free(f);
}

/* Reparenting (an exclusive edge replaced), a cascade despawn and a
 * disabled transform all change the plan. */
static void test_transform_replans(void **state) {
  (void)state;
  xf_fx_t *f = calloc(1, sizeof *f);
  xf_build(f, 0, 13, false);
  assert_int_equal(weft_hierarchy_update(f->h), WEFT_OK);
  wt_rng_t r = wt_rng(7);
  for (uint32_t k = 0; k < 100; k++) {
    uint32_t i = 1 + wt_below(&r, XF_NODES - 1), p = wt_below(&r, i);
    f->parent[i] = p;
    assert_int_equal(
        weft_relation_add(f->w, f->e[i], f->ids.child_of, f->e[p], NULL),
        WEFT_OK);
  }
  assert_int_equal(weft_hierarchy_update(f->h), WEFT_OK);
  xf_check(f, NULL);
  /* weft.ChildOf cascades: despawning a node takes its subtree. */
  uint32_t victim = 5;
  assert_int_equal(weft_despawn(f->w, f->e[victim]), WEFT_OK);
  for (uint32_t i = 0; i < XF_NODES; i++) {
    bool gone = false;
    for (uint32_t k = i; !gone && k != XF_NONE; k = f->parent[k])
      gone = k == victim;
    if (gone)
      f->alive[i] = false;
  }
  for (uint32_t i = 0; i < XF_NODES; i++)
    assert_true(weft_is_alive(f->w, f->e[i]) == f->alive[i]);
  assert_int_equal(weft_hierarchy_update(f->h), WEFT_OK);
  xf_check(f, NULL);
  xf_free(f);
  free(f);
}

/* A cycle of edges is not reached, does not hang, keeps its values. */
static void test_transform_cycle_left_alone(void **state) {
  (void)state;
  weft_world_t *w = wt_world_sized(0, 0);
  weft_hierarchy_t *h;
  assert_int_equal(weft_hierarchy_create(w, NULL, &h), WEFT_OK);
  weft_hierarchy_ids_t ids;
  weft_hierarchy_ids(h, &ids);
  weft_transform2_t l = {1, 2, 1, 0, 1}, mark = {7, 7, 7, 7, 7};
  weft_component_t comps[] = {ids.local, ids.world, 0};
  const void *vals[] = {&l, &mark};
  weft_entity_t a, b, root;
  assert_int_equal(weft_spawn_with(w, comps, vals, &a), WEFT_OK);
  assert_int_equal(weft_spawn_with(w, comps, vals, &b), WEFT_OK);
  assert_int_equal(weft_spawn_with(w, comps, vals, &root), WEFT_OK);
  assert_int_equal(weft_relation_add(w, a, ids.child_of, b, NULL), WEFT_OK);
  assert_int_equal(weft_relation_add(w, b, ids.child_of, a, NULL), WEFT_OK);
  assert_int_equal(weft_hierarchy_update(h), WEFT_OK);
  assert_memory_equal(weft_get(w, a, ids.world), &mark, sizeof mark);
  assert_memory_equal(weft_get(w, b, ids.world), &mark, sizeof mark);
  assert_memory_equal(weft_get(w, root, ids.world), &l, sizeof l);
  uint32_t levels[4];
  assert_int_equal(weft_hierarchy_levels(h, levels, 4), 1);
  assert_int_equal(levels[0], 1);
  weft_hierarchy_destroy(h);
  weft_world_destroy(w);
}

/* The system gives the oracle's result and the same digest on no pool and
 * on two workers, frame after frame, while edges change between frames. */
static void test_transform_same_on_workers(void **state) {
  (void)state;
  uint64_t digests[2][6];
  for (uint32_t run = 0; run < 2; run++) {
    xf_fx_t *f = calloc(1, sizeof *f);
    xf_build(f, run ? 2 : 0, 14, true);
    if (run)
      wt_dispatch_everything(f->w);
    weft_pipeline_config_t pc;
    memset(&pc, 0, sizeof pc);
    pc.fixed_dt = 1.0 / 60;
    pc.inline_rows = run ? 1 : 0;
    assert_int_equal(weft_pipeline_configure(f->w, &pc), WEFT_OK);
    wt_rng_t r = wt_rng(5);
    for (uint32_t frame = 0; frame < 6; frame++) {
      assert_int_equal(
          weft_world_run_phase(f->w, WEFT_PHASE_POST_FIXED_UPDATE, 1.0 / 60),
          WEFT_OK);
      xf_check(f, NULL);
      digests[run][frame] = weft_world_digest(f->w);
      for (uint32_t k = 0; k < 20; k++) {
        uint32_t i = 1 + wt_below(&r, XF_NODES - 1), p = wt_below(&r, i);
        if (!xf_part(f, i) || !f->alive[p])
          continue;
        f->parent[i] = p;
        assert_int_equal(
            weft_relation_add(f->w, f->e[i], f->ids.child_of, f->e[p], NULL),
            WEFT_OK);
      }
    }
    xf_free(f);
    free(f);
  }
  assert_memory_equal(digests[0], digests[1], sizeof digests[0]);
}

/* A steady hierarchy propagates without allocating. */
static void test_transform_steady_state_allocates_nothing(void **state) {
  (void)state;
  xf_fx_t *f = calloc(1, sizeof *f);
  xf_build(f, 0, 15, true);
  for (uint32_t i = 0; i < 3; i++)
    assert_int_equal(weft_world_progress(f->w, 1.0 / 60), WEFT_OK);
  wt_alloc_probe_t p = wt_alloc_probe(f->w);
  for (uint32_t i = 0; i < 10; i++)
    assert_int_equal(weft_world_progress(f->w, 1.0 / 60), WEFT_OK);
  wt_assert_no_alloc(f->w, &p, "steady transform frames");
  xf_free(f);
  free(f);
}

static void test_transform_rejects_bad_input(void **state) {
  (void)state;
  weft_world_t *w = wt_world_sized(0, 0);
  weft_world_t *other = wt_world_sized(0, 0);
  weft_component_t loose;
  weft_relation_desc_t d = {.name = "Likes"};
  assert_int_equal(weft_relation_register(w, &d, &loose), WEFT_OK);
  weft_hierarchy_t *h = NULL;
  weft_hierarchy_config_t c = {.child_of = loose};
  assert_int_equal(weft_hierarchy_create(w, &c, &h), WEFT_EINVAL);
  assert_null(h);
  c.child_of = wt_register(w, "Plain", 4, 0);
  assert_int_equal(weft_hierarchy_create(w, &c, &h), WEFT_EINVAL);
  c.child_of = 4000;
  assert_int_not_equal(weft_hierarchy_create(w, &c, &h), WEFT_OK);
  assert_int_equal(weft_hierarchy_create(NULL, NULL, &h), WEFT_EINVAL);
  assert_int_equal(weft_hierarchy_create(w, NULL, &h), WEFT_OK);
  assert_int_equal(weft_sys_transform(other, h, NULL), WEFT_EINVAL);
  assert_int_equal(weft_sys_transform(w, h, NULL), WEFT_OK);
  assert_int_equal(weft_sys_transform(w, h, NULL), WEFT_EEXIST);
  assert_int_equal(weft_hierarchy_update(NULL), WEFT_EINVAL);
  weft_hierarchy_destroy(h);
  weft_world_destroy(other);
  weft_world_destroy(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_transform_matches_oracle),
      cmocka_unit_test(test_transform_follows_local_changes),
      cmocka_unit_test(test_transform_replans),
      cmocka_unit_test(test_transform_cycle_left_alone),
      cmocka_unit_test(test_transform_same_on_workers),
      cmocka_unit_test(test_transform_steady_state_allocates_nothing),
      cmocka_unit_test(test_transform_rejects_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
