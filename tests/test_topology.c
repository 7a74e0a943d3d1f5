/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the topology module: loading synthetic machines (whole,
 * or made asymmetric by a PU restriction) and the real one, placement plans
 * (which PU each worker takes, NUMA groups, steal orders, binding), errors
 * and the accessors' handling of bad indices.
 *
 * Expected values are worked out by hand from the documented policy:
 * workers take the first PU of every core (round 0) before the second PUs
 * (round 1); within a round the NUMA nodes take turns in node order, each
 * in its own core order; more workers than PUs wrap around. Steal order is
 * by class (same core < same L3 < same node < other node), then NUMA
 * distance, then (v - w) mod n. Synthetic machines have no distance matrix:
 * 10 local, 16 same package, 20 other package. Without an L3 level, each
 * core is its own L3 group. In hwloc synthetic machines, PU i has OS
 * number i.
 *
 * Real machines come as hwloc XML exports (tests/data/topologies, with a
 * README saying where they come from): there the tests check which memory
 * each NUMA group binds to, worked out by hand from each machine's lstopo
 * output and from the policy (a node's memory is the ordinary memory among
 * the NUMA nodes local to its PUs, else the local non-NVM ones; PUs that
 * no NUMA node covers form memoryless nodes, one per package).
 *
 * Every topology and plan built here also goes through check_topology() /
 * check_plan(), which assert the invariants that hold for any machine:
 * steal orders are walked whole (for a sample of the workers of big plans)
 * and checked against the policy's sort key.
 */
#define _GNU_SOURCE
#include "support/weft_test.h"

#include <errno.h>
#include <hwloc.h>
#include <malloc.h> /* mallinfo2() */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "scheduler/numa.h"

#ifndef WEFT_TOPOLOGY_DATA
#error "WEFT_TOPOLOGY_DATA must name tests/data/topologies"
#endif

#define COUNT(a) ((uint32_t)(sizeof(a) / sizeof((a)[0])))

/* "pack:2 numa:2 l3:1 core:8 pu:2": PU i is on core i/2, L3 and node i/16,
 * package i/32. */
#define TWO_PACKAGES "pack:2 numa:2 l3:1 core:8 pu:2"

/* ---- invariants --------------------------------------------------------- */

static void check_describe(const weft_topology_t *t, const weft_plan_t *p) {
  int need = weft_plan_describe(t, p, NULL, 0);
  assert_true(need > 0);
  size_t full_size = (size_t)need + 1;
  char *full = malloc(full_size);
  assert_non_null(full);
  assert_int_equal(weft_plan_describe(t, p, full, (uint32_t)full_size), need);
  assert_int_equal(strlen(full), (size_t)need);
  assert_int_equal(full[need - 1], '\n');
  /* Small buffers: the same return value, a terminated prefix of the full
   * text, and nothing written past size. */
  static const uint32_t sizes[] = {1, 2, 7, 16, 64};
  for (uint32_t i = 0; i < COUNT(sizes); i++) {
    char small[80];
    memset(small, 'X', sizeof small);
    uint32_t size = sizes[i];
    assert_int_equal(weft_plan_describe(t, p, small, size), need);
    size_t written = (size_t)need < size ? (size_t)need : size - 1;
    assert_int_equal(strlen(small), written);
    assert_memory_equal(small, full, written);
    for (size_t k = size; k < sizeof small; k++)
      assert_int_equal(small[k], 'X');
  }
  /* Exactly the needed size fits everything. */
  memset(full, 'X', full_size);
  assert_int_equal(weft_plan_describe(t, p, full, (uint32_t)full_size), need);
  assert_int_equal(strlen(full), (size_t)need);
  free(full);
}

/* Holds for any loaded topology. */
static void check_topology(const weft_topology_t *t) {
  weft_topology_info_t in;
  memset(&in, 0xa5, sizeof in);
  weft_topology_info(t, &in);
  assert_true(in.pus >= 1);
  assert_true(in.cores >= 1 && in.cores <= in.pus);
  assert_true(in.numa_nodes >= 1 && in.numa_nodes <= in.cores);
  assert_true(in.l3_groups >= 1 && in.l3_groups <= in.cores);
  assert_true(in.packages >= 1 && in.packages <= in.pus);
  bool *core_seen = calloc(in.cores, sizeof(bool));
  bool *l3_seen = calloc(in.l3_groups, sizeof(bool));
  bool *node_seen = calloc(in.numa_nodes, sizeof(bool));
  bool *pkg_seen = calloc(in.packages, sizeof(bool));
  weft_pu_info_t *core_first = calloc(in.cores, sizeof(weft_pu_info_t));
  assert_true(core_seen && l3_seen && node_seen && pkg_seen && core_first);
  for (uint32_t i = 0; i < in.pus; i++) {
    const weft_pu_info_t *pu = weft_topology_pu(t, i);
    assert_non_null(pu);
    assert_int_equal(pu->pu, i);
    assert_true(pu->core < in.cores);
    assert_true(pu->l3 < in.l3_groups);
    assert_true(pu->node < in.numa_nodes);
    assert_true(pu->package < in.packages);
    /* A core's PUs share its L3, node and package. */
    if (core_seen[pu->core]) {
      assert_int_equal(pu->l3, core_first[pu->core].l3);
      assert_int_equal(pu->node, core_first[pu->core].node);
      assert_int_equal(pu->package, core_first[pu->core].package);
    }
    core_first[pu->core] = *pu;
    core_seen[pu->core] = l3_seen[pu->l3] = node_seen[pu->node] =
        pkg_seen[pu->package] = true;
  }
  assert_null(weft_topology_pu(t, in.pus));
  /* The counts are dense: every index below a count is used. */
  for (uint32_t i = 0; i < in.cores; i++)
    assert_true(core_seen[i]);
  for (uint32_t i = 0; i < in.l3_groups; i++)
    assert_true(l3_seen[i]);
  for (uint32_t i = 0; i < in.numa_nodes; i++)
    assert_true(node_seen[i]);
  for (uint32_t i = 0; i < in.packages; i++)
    assert_true(pkg_seen[i]);
  for (uint32_t a = 0; a < in.numa_nodes; a++) {
    assert_int_equal(weft_topology_distance(t, a, a), 10);
    for (uint32_t b = 0; b < in.numa_nodes; b++)
      assert_true(weft_topology_distance(t, a, b) >= 10 || a != b);
    assert_int_equal(weft_topology_distance(t, a, in.numa_nodes), 0);
    assert_int_equal(weft_topology_distance(t, in.numa_nodes, a), 0);
  }
  /* Every node's memory: OS indices ascending; none means no kind, no
   * size. */
  for (uint32_t d = 0; d < in.numa_nodes; d++) {
    weft_node_memory_t m;
    memset(&m, 0xa5, sizeof m);
    assert_int_equal(weft_topology_node_memory(t, d, &m), WEFT_OK);
    assert_true(m.count == 0 || m.os_index != NULL);
    for (uint32_t i = 1; i < m.count; i++)
      assert_true(m.os_index[i - 1] < m.os_index[i]);
    if (m.count == 0) {
      assert_null(m.kind);
      assert_true(m.bytes == 0);
    }
  }
  weft_node_memory_t none;
  memset(&none, 0xa5, sizeof none);
  assert_int_equal(weft_topology_node_memory(t, in.numa_nodes, &none),
                   WEFT_EINVAL);
  assert_int_equal(none.count, 0);
  assert_null(none.os_index);
  assert_int_equal(weft_topology_node_memory(t, 0, NULL), WEFT_EINVAL);
  free(core_seen);
  free(l3_seen);
  free(node_seen);
  free(pkg_seen);
  free(core_first);
  check_describe(t, NULL);
}

static uint32_t steal_class(const weft_pu_info_t *me, const weft_pu_info_t *o) {
  return o->core == me->core   ? 0
         : o->l3 == me->l3     ? 1
         : o->node == me->node ? 2
                               : 3;
}

static bool in_mask(uint64_t mask, uint32_t node) {
  return mask == 0 || (node < 64 && (mask >> node & 1));
}

/*
 * Walks worker w's whole steal order: every other worker once, sorted by
 * (class, distance, rotation); the walk started after the stored part
 * goes on where the stored part ends.
 */
static void check_order(const weft_topology_t *t, const weft_plan_t *p,
                        uint32_t w, bool *seen) {
  uint32_t n = weft_plan_workers(p);
  const weft_pu_info_t *me = weft_plan_place(p, w);
  memset(seen, 0, n * sizeof(bool));
  const uint32_t *stored = NULL;
  uint32_t count = weft_plan_steal_order(p, w, &stored);
  weft_steal_iter_t it, rest;
  weft_plan_steal_iter(p, w, 0, &it);
  weft_plan_steal_iter(p, w, count, &rest);
  uint32_t prev_cls = 0, prev_dist = 0, prev_rot = 0, i = 0, v;
  for (; weft_plan_steal_next(p, &it, &v); i++) {
    assert_true(i < n - 1);
    assert_true(v < n);
    assert_int_not_equal(v, w);
    assert_false(seen[v]);
    seen[v] = true;
    if (i >= count) {
      uint32_t r = UINT32_MAX;
      assert_true(weft_plan_steal_next(p, &rest, &r));
      assert_int_equal(r, v);
    }
    const weft_pu_info_t *o = weft_plan_place(p, v);
    uint32_t cls = steal_class(me, o);
    uint32_t dist = weft_topology_distance(t, me->node, o->node);
    uint32_t rot = (v + n - w) % n;
    if (i > 0) {
      assert_true(cls >= prev_cls);
      if (cls == prev_cls) {
        assert_true(dist >= prev_dist);
        if (dist == prev_dist)
          assert_true(rot > prev_rot);
      }
    }
    prev_cls = cls;
    prev_dist = dist;
    prev_rot = rot;
  }
  assert_int_equal(i, n - 1);
  assert_false(weft_plan_steal_next(p, &it, &v));
  assert_false(weft_plan_steal_next(p, &rest, &v));
  /* Starting anywhere else skips that many. */
  uint32_t from = (n - 1) / 2;
  weft_plan_steal_iter(p, w, from, &it);
  for (i = from; weft_plan_steal_next(p, &it, &v); i++)
    ;
  assert_int_equal(i, n - 1);
}

/* Holds for any plan computed from t with cfg. */
static void check_plan(const weft_topology_t *t, const weft_plan_t *p,
                       const weft_placement_config_t *cfg) {
  weft_topology_info_t in;
  weft_topology_info(t, &in);
  uint32_t n = weft_plan_workers(p);
  assert_true(n >= 1);

  /* Allowed PUs and cores (the slots workers take before wrapping). */
  uint32_t allowed_pus = 0, allowed_cores = 0;
  bool *core_allowed = calloc(in.cores, sizeof(bool));
  assert_non_null(core_allowed);
  for (uint32_t i = 0; i < in.pus; i++) {
    const weft_pu_info_t *pu = weft_topology_pu(t, i);
    if (!in_mask(cfg->node_mask, pu->node))
      continue;
    allowed_pus++;
    if (!core_allowed[pu->core])
      allowed_cores++;
    core_allowed[pu->core] = true;
  }
  free(core_allowed);
  assert_true(allowed_pus >= 1);
  assert_int_equal(n, cfg->workers ? cfg->workers : allowed_cores);

  bool *pu_used = calloc(in.pus, sizeof(bool));
  bool *core_used = calloc(in.cores, sizeof(bool));
  assert_true(pu_used && core_used);
  for (uint32_t w = 0; w < n; w++) {
    const weft_pu_info_t *pl = weft_plan_place(p, w);
    assert_non_null(pl);
    const weft_pu_info_t *pu = weft_topology_pu(t, pl->pu);
    assert_non_null(pu);
    assert_memory_equal(pl, pu, sizeof *pu);
    assert_true(in_mask(cfg->node_mask, pl->node));
    if (w < allowed_pus) {
      /* Every allowed PU once before any is reused... */
      assert_false(pu_used[pl->pu]);
      pu_used[pl->pu] = true;
    } else {
      /* ...then the list wraps around. */
      assert_int_equal(pl->pu, weft_plan_place(p, w % allowed_pus)->pu);
    }
    if (w < allowed_cores) {
      /* Cores before hardware threads. */
      assert_false(core_used[pl->core]);
      core_used[pl->core] = true;
    }
    bool bound = cfg->pin != WEFT_PIN_NONE && !(cfg->caller_participates && !w);
    assert_int_equal(weft_plan_bound(p, w), bound);
  }
  free(pu_used);
  free(core_used);
  assert_null(weft_plan_place(p, n));
  assert_false(weft_plan_bound(p, n));
  assert_int_equal(weft_plan_group_of(p, n), UINT32_MAX);
  const uint32_t *order = NULL;
  assert_int_equal(weft_plan_steal_order(p, n, &order), 0);
  weft_steal_iter_t none;
  uint32_t victim = 77;
  weft_plan_steal_iter(p, n, 0, &none);
  assert_false(weft_plan_steal_next(p, &none, &victim));
  weft_plan_steal_iter(p, 0, n, &none);
  assert_false(weft_plan_steal_next(p, &none, &victim));
  assert_int_equal(victim, 77);

  /* Steal orders: a permutation of the other workers, sorted by the
   * policy's key; the stored part is its start, and the walk from there
   * is its rest. Walked whole for every worker of plans up to 512
   * workers, for about 64 of bigger ones. */
  bool *seen = calloc(n, sizeof(bool));
  assert_non_null(seen);
  uint32_t step = n <= 512 ? 1 : n / 64 + 1;
  for (uint32_t w = 0; w < n; w++) {
    const uint32_t *stored = NULL;
    uint32_t count = weft_plan_steal_order(p, w, &stored);
    assert_true(count <= n - 1);
    assert_true(count == n - 1 || count >= 16);
    assert_true(count == 0 || stored != NULL);
    if (n <= 1024)
      assert_int_equal(count, n - 1);
    weft_steal_iter_t it;
    uint32_t v = UINT32_MAX;
    weft_plan_steal_iter(p, w, 0, &it);
    for (uint32_t i = 0; i < count; i++) {
      assert_true(weft_plan_steal_next(p, &it, &v));
      assert_int_equal(v, stored[i]);
    }
    if (w % step == 0 || w == n - 1)
      check_order(t, p, w, seen);
  }
  free(seen);

  /* Groups: one per node that has workers, in node order, partitioning the
   * workers; members ascending; group_of agrees. */
  uint32_t groups = weft_plan_groups(p), total = 0;
  assert_true(groups >= 1 && groups <= in.numa_nodes);
  seen = calloc(n, sizeof(bool));
  assert_non_null(seen);
  uint32_t nodes_with_workers = 0;
  for (uint32_t node = 0; node < in.numa_nodes; node++)
    for (uint32_t w = 0; w < n; w++)
      if (weft_plan_place(p, w)->node == node) {
        nodes_with_workers++;
        break;
      }
  assert_int_equal(groups, nodes_with_workers);
  for (uint32_t g = 0; g < groups; g++) {
    uint32_t node = UINT32_MAX;
    const uint32_t *ws = NULL;
    uint32_t count = weft_plan_group(p, g, &node, &ws);
    assert_true(count >= 1);
    assert_non_null(ws);
    assert_true(node < in.numa_nodes);
    if (g > 0) {
      uint32_t prev_node = UINT32_MAX;
      weft_plan_group(p, g - 1, &prev_node, NULL);
      assert_true(prev_node < node);
    }
    assert_int_equal(weft_plan_group(p, g, NULL, NULL), count);
    for (uint32_t i = 0; i < count; i++) {
      uint32_t w = ws[i];
      assert_true(w < n);
      assert_false(seen[w]);
      seen[w] = true;
      if (i > 0)
        assert_true(ws[i - 1] < w);
      assert_int_equal(weft_plan_place(p, w)->node, node);
      assert_int_equal(weft_plan_group_of(p, w), g);
    }
    total += count;
  }
  assert_int_equal(total, n);
  assert_int_equal(weft_plan_group(p, groups, NULL, NULL), 0);
  free(seen);
  /* check_describe() writes the text 8 times: big plans check theirs
   * once, in their test. */
  if (n <= 4096)
    check_describe(t, p);
}

/* ---- helpers ------------------------------------------------------------ */

static weft_topology_t *load(const char *synthetic, const char *restrict_pus) {
  weft_topology_t *t = NULL;
  assert_int_equal(weft_topology_load(synthetic, restrict_pus, &t), WEFT_OK);
  assert_non_null(t);
  check_topology(t);
  return t;
}

static weft_plan_t *plan_cfg(const weft_topology_t *t,
                             const weft_placement_config_t *cfg) {
  weft_plan_t *p = NULL;
  assert_int_equal(weft_plan_compute(t, cfg, &p), WEFT_OK);
  assert_non_null(p);
  check_plan(t, p, cfg);
  return p;
}

static weft_plan_t *plan(const weft_topology_t *t, uint32_t workers,
                         weft_pin_t pin, uint64_t node_mask) {
  weft_placement_config_t cfg = {0};
  cfg.workers = workers;
  cfg.pin = pin;
  cfg.node_mask = node_mask;
  return plan_cfg(t, &cfg);
}

static void expect_info(const weft_topology_t *t, uint32_t packages,
                        uint32_t nodes, uint32_t l3, uint32_t cores,
                        uint32_t pus) {
  weft_topology_info_t in;
  weft_topology_info(t, &in);
  assert_int_equal(in.packages, packages);
  assert_int_equal(in.numa_nodes, nodes);
  assert_int_equal(in.l3_groups, l3);
  assert_int_equal(in.cores, cores);
  assert_int_equal(in.pus, pus);
}

static void expect_u32s(const char *what, uint32_t index, const uint32_t *got,
                        uint32_t ngot, const uint32_t *want, uint32_t nwant) {
  bool same = ngot == nwant;
  for (uint32_t i = 0; same && i < nwant; i++)
    same = got[i] == want[i];
  if (same)
    return;
  print_error("%s %u: got", what, index);
  for (uint32_t i = 0; i < ngot; i++)
    print_error(" %u", got[i]);
  print_error("\n%s %u: want", what, index);
  for (uint32_t i = 0; i < nwant; i++)
    print_error(" %u", want[i]);
  print_error("\n");
  fail();
}

/* Workers 0..n-1 are on these PUs (logical indices). */
static void expect_pus(const weft_plan_t *p, const uint32_t *pus, uint32_t n) {
  assert_true(weft_plan_workers(p) >= n);
  uint32_t got[128];
  assert_true(n <= COUNT(got));
  for (uint32_t w = 0; w < n; w++)
    got[w] = weft_plan_place(p, w)->pu;
  expect_u32s("PUs of workers", 0, got, n, pus, n);
}

/* Worker w's steal order starts with (all, when n is the full count) these
 * workers. */
static void expect_steal_prefix(const weft_plan_t *p, uint32_t w,
                                const uint32_t *want, uint32_t n) {
  const uint32_t *order = NULL;
  uint32_t count = weft_plan_steal_order(p, w, &order);
  assert_true(count >= n);
  expect_u32s("steal order of worker", w, order, n, want, n);
}

static void expect_steal(const weft_plan_t *p, uint32_t w, const uint32_t *want,
                         uint32_t n) {
  assert_int_equal(weft_plan_steal_order(p, w, NULL), n);
  expect_steal_prefix(p, w, want, n);
}

static void expect_group(const weft_plan_t *p, uint32_t g, uint32_t node,
                         const uint32_t *want, uint32_t n) {
  uint32_t got_node = UINT32_MAX;
  const uint32_t *ws = NULL;
  uint32_t count = weft_plan_group(p, g, &got_node, &ws);
  assert_int_equal(got_node, node);
  expect_u32s("members of group", g, ws, count, want, n);
}

static void expect_place(const weft_plan_t *p, uint32_t w, uint32_t pu,
                         uint32_t core, uint32_t l3, uint32_t node,
                         uint32_t package) {
  const weft_pu_info_t *pl = weft_plan_place(p, w);
  assert_non_null(pl);
  assert_int_equal(pl->pu, pu);
  assert_int_equal(pl->core, core);
  assert_int_equal(pl->l3, l3);
  assert_int_equal(pl->node, node);
  assert_int_equal(pl->package, package);
}

/* ---- small machines ----------------------------------------------------- */

static void test_topology_single_core(void **state) {
  (void)state;
  weft_topology_t *t = load("core:1 pu:1", NULL);
  expect_info(t, 1, 1, 1, 1, 1);
  const weft_pu_info_t *pu = weft_topology_pu(t, 0);
  assert_int_equal(pu->os_pu, 0);
  assert_int_equal(pu->core, 0);
  assert_int_equal(pu->l3, 0);
  assert_int_equal(pu->node, 0);
  assert_int_equal(pu->package, 0);
  assert_int_equal(weft_topology_distance(t, 0, 0), 10);

  weft_plan_t *p = plan(t, 0, WEFT_PIN_CORE, 0);
  assert_int_equal(weft_plan_workers(p), 1);
  expect_place(p, 0, 0, 0, 0, 0, 0);
  assert_true(weft_plan_bound(p, 0));
  assert_int_equal(weft_plan_steal_order(p, 0, NULL), 0);
  assert_int_equal(weft_plan_groups(p), 1);
  expect_group(p, 0, 0, (const uint32_t[]){0}, 1);
  assert_int_equal(weft_plan_group_of(p, 0), 0);
  weft_plan_destroy(p);

  /* Three workers share the one PU; (v - w) mod 3 orders the thieves. */
  p = plan(t, 3, WEFT_PIN_CORE, 0);
  expect_pus(p, (const uint32_t[]){0, 0, 0}, 3);
  expect_steal(p, 0, (const uint32_t[]){1, 2}, 2);
  expect_steal(p, 1, (const uint32_t[]){2, 0}, 2);
  expect_steal(p, 2, (const uint32_t[]){0, 1}, 2);
  expect_group(p, 0, 0, (const uint32_t[]){0, 1, 2}, 3);
  weft_plan_destroy(p);
  weft_topology_destroy(t);
}

static void test_topology_two_cores(void **state) {
  (void)state;
  weft_topology_t *t = load("core:2 pu:1", NULL);
  /* No L3: each core is its own L3 group. */
  expect_info(t, 1, 1, 2, 2, 2);
  assert_int_equal(weft_topology_pu(t, 1)->core, 1);
  assert_int_equal(weft_topology_pu(t, 1)->os_pu, 1);

  weft_plan_t *p = plan(t, 0, WEFT_PIN_CORE, 0);
  assert_int_equal(weft_plan_workers(p), 2);
  expect_place(p, 0, 0, 0, 0, 0, 0);
  expect_place(p, 1, 1, 1, 1, 0, 0);
  expect_steal(p, 0, (const uint32_t[]){1}, 1);
  expect_steal(p, 1, (const uint32_t[]){0}, 1);
  assert_int_equal(weft_plan_groups(p), 1);
  expect_group(p, 0, 0, (const uint32_t[]){0, 1}, 2);
  weft_plan_destroy(p);

  /* Five workers on two PUs: 0 1 0 1 0; worker 0 steals from its core
   * (2, 4) before the other core (1, 3). */
  p = plan(t, 5, WEFT_PIN_PU, 0);
  expect_pus(p, (const uint32_t[]){0, 1, 0, 1, 0}, 5);
  expect_steal(p, 0, (const uint32_t[]){2, 4, 1, 3}, 4);
  /* Worker 3: same core 1 (rot 3), then 4, 0, 2 (rot 1, 2, 4). */
  expect_steal(p, 3, (const uint32_t[]){1, 4, 0, 2}, 4);
  weft_plan_destroy(p);
  weft_topology_destroy(t);
}

static void test_topology_one_core_two_threads(void **state) {
  (void)state;
  weft_topology_t *t = load("core:1 pu:2", NULL);
  expect_info(t, 1, 1, 1, 1, 2);
  assert_int_equal(weft_topology_pu(t, 0)->core, 0);
  assert_int_equal(weft_topology_pu(t, 1)->core, 0);

  /* One core, so one worker by default. */
  weft_plan_t *p = plan(t, 0, WEFT_PIN_CORE, 0);
  assert_int_equal(weft_plan_workers(p), 1);
  expect_place(p, 0, 0, 0, 0, 0, 0);
  weft_plan_destroy(p);

  p = plan(t, 2, WEFT_PIN_PU, 0);
  expect_place(p, 0, 0, 0, 0, 0, 0);
  expect_place(p, 1, 1, 0, 0, 0, 0);
  expect_steal(p, 0, (const uint32_t[]){1}, 1);
  expect_steal(p, 1, (const uint32_t[]){0}, 1);
  assert_true(weft_plan_bound(p, 0));
  assert_true(weft_plan_bound(p, 1));
  assert_int_equal(weft_plan_groups(p), 1);
  expect_group(p, 0, 0, (const uint32_t[]){0, 1}, 2);
  weft_plan_destroy(p);
  weft_topology_destroy(t);
}

/* ---- two packages, four nodes ------------------------------------------- */

static void test_topology_two_packages_counts_and_distances(void **state) {
  (void)state;
  weft_topology_t *t = load(TWO_PACKAGES, NULL);
  expect_info(t, 2, 4, 4, 32, 64);
  for (uint32_t i = 0; i < 64; i++) {
    const weft_pu_info_t *pu = weft_topology_pu(t, i);
    assert_int_equal(pu->os_pu, i);
    assert_int_equal(pu->core, i / 2);
    assert_int_equal(pu->l3, i / 16);
    assert_int_equal(pu->node, i / 16);
    assert_int_equal(pu->package, i / 32);
  }
  static const uint32_t dist[4][4] = {
      {10, 16, 20, 20}, {16, 10, 20, 20}, {20, 20, 10, 16}, {20, 20, 16, 10}};
  for (uint32_t a = 0; a < 4; a++)
    for (uint32_t b = 0; b < 4; b++)
      assert_int_equal(weft_topology_distance(t, a, b), dist[a][b]);

  /* The description's first lines say the same. */
  char text[256];
  assert_true(weft_plan_describe(t, NULL, text, sizeof text) > 0);
  assert_non_null(strstr(text, "2 package(s), 4 NUMA node(s), 4 L3 group(s), "
                               "32 core(s), 64 PU(s)"));
  assert_non_null(strstr(text,
                         "distances: 10 16 20 20 | 16 10 20 20 | 20 20 10 16 | "
                         "20 20 16 10\n"));
  weft_topology_destroy(t);
}

static void test_topology_two_packages_default_plan(void **state) {
  (void)state;
  weft_topology_t *t = load(TWO_PACKAGES, NULL);
  weft_plan_t *p = plan(t, 0, WEFT_PIN_CORE, 0);
  assert_int_equal(weft_plan_workers(p), 32);
  /* Round 0, nodes taking turns: node 0 core 0, node 1 core 8, node 2
   * core 16, node 3 core 24, node 0 core 1, ... */
  expect_pus(p, (const uint32_t[]){0, 16, 32, 48, 2, 18, 34, 50}, 8);
  for (uint32_t w = 0; w < 32; w++) {
    uint32_t node = w % 4, core = 8 * node + w / 4;
    expect_place(p, w, 2 * core, core, node, node, node / 2);
  }
  assert_int_equal(weft_plan_groups(p), 4);
  for (uint32_t g = 0; g < 4; g++) {
    uint32_t members[8];
    for (uint32_t i = 0; i < 8; i++)
      members[i] = g + 4 * i;
    expect_group(p, g, g, members, 8);
  }
  /* Worker 0: its node (same L3), node 1 (distance 16), then nodes 2 and 3
   * (both 20, so by rotation). */
  expect_steal(p, 0,
               (const uint32_t[]){4,  8,  12, 16, 20, 24, 28, 1,  5,  9,  13,
                                  17, 21, 25, 29, 2,  3,  6,  7,  10, 11, 14,
                                  15, 18, 19, 22, 23, 26, 27, 30, 31},
               31);
  /* Worker 5 (node 1): rotation starts after 5 in every class. */
  expect_steal(p, 5,
               (const uint32_t[]){9,  13, 17, 21, 25, 29, 1,  8,  12, 16, 20,
                                  24, 28, 0,  4,  6,  7,  10, 11, 14, 15, 18,
                                  19, 22, 23, 26, 27, 30, 31, 2,  3},
               31);
  /* Worker 2 (node 2, package 1): node 3 is its package's other node. */
  expect_steal(p, 2,
               (const uint32_t[]){6,  10, 14, 18, 22, 26, 30, 3, 7,  11, 15,
                                  19, 23, 27, 31, 4,  5,  8,  9, 12, 13, 16,
                                  17, 20, 21, 24, 25, 28, 29, 0, 1},
               31);
  weft_plan_destroy(p);

  /* A NULL config is the default config. */
  weft_plan_t *q = NULL;
  assert_int_equal(weft_plan_compute(t, NULL, &q), WEFT_OK);
  assert_int_equal(weft_plan_workers(q), 32);
  expect_pus(q, (const uint32_t[]){0, 16, 32, 48, 2, 18, 34, 50}, 8);
  assert_true(weft_plan_bound(q, 0));
  weft_plan_destroy(q);
  weft_topology_destroy(t);
}

static void test_topology_two_packages_every_thread(void **state) {
  (void)state;
  weft_topology_t *t = load(TWO_PACKAGES, NULL);
  weft_plan_t *p = plan(t, 64, WEFT_PIN_PU, 0);
  /* Round 1 repeats round 0 on the second PUs. */
  for (uint32_t w = 0; w < 64; w++) {
    uint32_t node = w % 4, core = 8 * node + (w % 32) / 4;
    expect_place(p, w, 2 * core + w / 32, core, node, node, node / 2);
  }
  expect_place(p, 32, 1, 0, 0, 0, 0);
  /* Same core first, then the node's 14 others, then node 1. */
  expect_steal_prefix(p, 0,
                      (const uint32_t[]){32, 4, 8, 12, 16, 20, 24, 28, 36, 40,
                                         44, 48, 52, 56, 60, 1},
                      16);
  /* From worker 32, rotation puts 36..60 before 4..28. */
  expect_steal_prefix(p, 32,
                      (const uint32_t[]){0, 36, 40, 44, 48, 52, 56, 60, 4, 8,
                                         12, 16, 20, 24, 28, 33},
                      16);
  assert_int_equal(weft_plan_groups(p), 4);
  uint32_t members[16];
  for (uint32_t i = 0; i < 16; i++)
    members[i] = 4 * i;
  expect_group(p, 0, 0, members, 16);
  weft_plan_destroy(p);
  weft_topology_destroy(t);
}

static void test_topology_more_workers_than_pus_wrap(void **state) {
  (void)state;
  weft_topology_t *t = load(TWO_PACKAGES, NULL);
  weft_plan_t *p = plan(t, 65, WEFT_PIN_CORE, 0);
  expect_place(p, 64, 0, 0, 0, 0, 0);
  expect_place(p, 63, 63, 31, 3, 3, 1);
  expect_steal_prefix(p, 0, (const uint32_t[]){32, 64, 4}, 3);
  /* Worker 64: same core 0 (rot 1) and 32 (rot 33). */
  expect_steal_prefix(p, 64, (const uint32_t[]){0, 32, 4}, 3);
  uint32_t members[17];
  for (uint32_t i = 0; i < 17; i++)
    members[i] = 4 * i;
  expect_group(p, 0, 0, members, 17);
  weft_plan_destroy(p);
  weft_topology_destroy(t);
}

/* ---- other shapes ---------------------------------------------------------
 */

static void test_topology_nodes_without_l3(void **state) {
  (void)state;
  /* No L3 is reported, so none is made up: each core is its own L3 group,
   * and same-node workers steal from each other as class 2. */
  weft_topology_t *t = load("numa:4 core:16 pu:1", NULL);
  expect_info(t, 1, 4, 64, 64, 64);
  for (uint32_t i = 0; i < 64; i++) {
    const weft_pu_info_t *pu = weft_topology_pu(t, i);
    assert_int_equal(pu->core, i);
    assert_int_equal(pu->node, i / 16);
    assert_int_equal(pu->l3, i);
    assert_int_equal(pu->package, 0);
  }
  for (uint32_t a = 0; a < 4; a++)
    for (uint32_t b = 0; b < 4; b++)
      assert_int_equal(weft_topology_distance(t, a, b), a == b ? 10 : 16);

  weft_plan_t *p = plan(t, 0, WEFT_PIN_CORE, 0);
  assert_int_equal(weft_plan_workers(p), 64);
  weft_plan_destroy(p);

  p = plan(t, 6, WEFT_PIN_CORE, 0);
  expect_pus(p, (const uint32_t[]){0, 16, 32, 48, 1, 17}, 6);
  assert_int_equal(weft_plan_groups(p), 4);
  expect_group(p, 0, 0, (const uint32_t[]){0, 4}, 2);
  expect_group(p, 1, 1, (const uint32_t[]){1, 5}, 2);
  expect_group(p, 2, 2, (const uint32_t[]){2}, 1);
  expect_group(p, 3, 3, (const uint32_t[]){3}, 1);
  expect_steal(p, 0, (const uint32_t[]){4, 1, 2, 3, 5}, 5);
  expect_steal(p, 2, (const uint32_t[]){3, 4, 5, 0, 1}, 5);
  expect_steal(p, 5, (const uint32_t[]){1, 0, 2, 3, 4}, 5);
  weft_plan_destroy(p);
  weft_topology_destroy(t);
}

static void test_topology_l3_inside_node(void **state) {
  (void)state;
  /* Two L3 caches per node: same L3 < same node < other node. */
  weft_topology_t *t = load("numa:2 l3:2 core:2 pu:1", NULL);
  expect_info(t, 1, 2, 4, 8, 8);
  weft_plan_t *p = plan(t, 0, WEFT_PIN_CORE, 0);
  expect_pus(p, (const uint32_t[]){0, 4, 1, 5, 2, 6, 3, 7}, 8);
  expect_place(p, 3, 5, 5, 2, 1, 0);
  expect_steal(p, 0, (const uint32_t[]){2, 4, 6, 1, 3, 5, 7}, 7);
  expect_steal(p, 3, (const uint32_t[]){1, 5, 7, 4, 6, 0, 2}, 7);
  weft_plan_destroy(p);
  weft_topology_destroy(t);
}

/* ---- asymmetric machines (restrictions) --------------------------------- */

static void test_topology_asymmetric_packages(void **state) {
  (void)state;
  /* Package 0 whole (cores 0-3), package 1 down to one core (PUs 8-9). */
  weft_topology_t *t = load("pack:2 numa:1 core:4 pu:2", "0-7,8-9");
  expect_info(t, 2, 2, 5, 5, 10);
  for (uint32_t i = 0; i < 10; i++) {
    const weft_pu_info_t *pu = weft_topology_pu(t, i);
    assert_int_equal(pu->os_pu, i);
    assert_int_equal(pu->core, i / 2);
    assert_int_equal(pu->node, i / 8);
    assert_int_equal(pu->l3, i / 2);
    assert_int_equal(pu->package, i / 8);
  }
  assert_int_equal(weft_topology_distance(t, 0, 1), 20);

  /* Node 1 runs out after its one core; node 0 takes the rest. */
  weft_plan_t *p = plan(t, 0, WEFT_PIN_CORE, 0);
  assert_int_equal(weft_plan_workers(p), 5);
  expect_pus(p, (const uint32_t[]){0, 8, 2, 4, 6}, 5);
  assert_int_equal(weft_plan_groups(p), 2);
  expect_group(p, 0, 0, (const uint32_t[]){0, 2, 3, 4}, 4);
  expect_group(p, 1, 1, (const uint32_t[]){1}, 1);
  expect_steal(p, 0, (const uint32_t[]){2, 3, 4, 1}, 4);
  expect_steal(p, 1, (const uint32_t[]){2, 3, 4, 0}, 4);
  expect_steal(p, 4, (const uint32_t[]){0, 2, 3, 1}, 4);
  weft_plan_destroy(p);

  p = plan(t, 10, WEFT_PIN_PU, 0);
  expect_pus(p, (const uint32_t[]){0, 8, 2, 4, 6, 1, 9, 3, 5, 7}, 10);
  expect_steal_prefix(p, 1, (const uint32_t[]){6, 2, 3, 4}, 4);
  weft_plan_destroy(p);
  weft_topology_destroy(t);
}

static void test_topology_asymmetric_nodes(void **state) {
  (void)state;
  /* Nodes of 3 cores each (OS PUs 0-2, 3-5, 6-8, 9-11), restricted to
   * 3, 1, 2 and 0 cores: node 3 has no PU left and does not count. */
  weft_topology_t *t = load("pack:2 numa:2 core:3 pu:1", "0-2,3,6-7");
  expect_info(t, 2, 3, 6, 6, 6);
  static const uint32_t os[6] = {0, 1, 2, 3, 6, 7};
  static const uint32_t node[6] = {0, 0, 0, 1, 2, 2};
  for (uint32_t i = 0; i < 6; i++) {
    const weft_pu_info_t *pu = weft_topology_pu(t, i);
    assert_int_equal(pu->os_pu, os[i]);
    assert_int_equal(pu->core, i);
    assert_int_equal(pu->node, node[i]);
    assert_int_equal(pu->package, node[i] / 2);
  }
  static const uint32_t dist[3][3] = {{10, 16, 20}, {16, 10, 20}, {20, 20, 10}};
  for (uint32_t a = 0; a < 3; a++)
    for (uint32_t b = 0; b < 3; b++)
      assert_int_equal(weft_topology_distance(t, a, b), dist[a][b]);

  weft_plan_t *p = plan(t, 0, WEFT_PIN_CORE, 0);
  expect_pus(p, (const uint32_t[]){0, 3, 4, 1, 5, 2}, 6);
  assert_int_equal(weft_plan_groups(p), 3);
  expect_group(p, 0, 0, (const uint32_t[]){0, 3, 5}, 3);
  expect_group(p, 1, 1, (const uint32_t[]){1}, 1);
  expect_group(p, 2, 2, (const uint32_t[]){2, 4}, 2);
  expect_steal(p, 1, (const uint32_t[]){3, 5, 0, 2, 4}, 5);
  expect_steal(p, 2, (const uint32_t[]){4, 3, 5, 0, 1}, 5);
  weft_plan_destroy(p);

  /* Only node 2: its two cores. */
  p = plan(t, 0, WEFT_PIN_CORE, UINT64_C(1) << 2);
  expect_pus(p, (const uint32_t[]){4, 5}, 2);
  assert_int_equal(weft_plan_groups(p), 1);
  expect_group(p, 0, 2, (const uint32_t[]){0, 1}, 2);
  weft_plan_destroy(p);

  /* Nodes 0 and 2: groups skip node 1. */
  p = plan(t, 4, WEFT_PIN_CORE, UINT64_C(0x5));
  expect_pus(p, (const uint32_t[]){0, 4, 1, 5}, 4);
  assert_int_equal(weft_plan_groups(p), 2);
  expect_group(p, 0, 0, (const uint32_t[]){0, 2}, 2);
  expect_group(p, 1, 2, (const uint32_t[]){1, 3}, 2);
  weft_plan_destroy(p);

  /* Node 3 is gone, so a mask naming only it leaves nothing. */
  p = (weft_plan_t *)&p;
  weft_placement_config_t cfg = {.node_mask = UINT64_C(1) << 3};
  assert_int_equal(weft_plan_compute(t, &cfg, &p), WEFT_EINVAL);
  assert_null(p);
  weft_topology_destroy(t);
}

static void test_topology_restriction_drops_middle_node(void **state) {
  (void)state;
  /* Node 1 (OS PUs 3-5) removed: old nodes 0, 2, 3 become 0, 1, 2, and the
   * distances follow them (node 0 is alone in package 0). */
  weft_topology_t *t = load("pack:2 numa:2 core:3 pu:1", "0-2,6-11");
  expect_info(t, 2, 3, 9, 9, 9);
  static const uint32_t dist[3][3] = {{10, 20, 20}, {20, 10, 16}, {20, 16, 10}};
  for (uint32_t a = 0; a < 3; a++)
    for (uint32_t b = 0; b < 3; b++)
      assert_int_equal(weft_topology_distance(t, a, b), dist[a][b]);
  assert_int_equal(weft_topology_pu(t, 3)->os_pu, 6);
  assert_int_equal(weft_topology_pu(t, 3)->node, 1);
  assert_int_equal(weft_topology_pu(t, 3)->package, 1);

  weft_plan_t *p = plan(t, 0, WEFT_PIN_CORE, 0);
  expect_pus(p, (const uint32_t[]){0, 3, 6, 1, 4, 7, 2, 5, 8}, 9);
  expect_steal(p, 1, (const uint32_t[]){4, 7, 2, 5, 8, 3, 6, 0}, 8);
  weft_plan_destroy(p);
  weft_topology_destroy(t);
}

/* ---- configuration --------------------------------------------------------
 */

static void test_topology_node_mask_limits_workers(void **state) {
  (void)state;
  weft_topology_t *t = load(TWO_PACKAGES, NULL);
  /* Nodes 0 and 2: one worker per core of those nodes, alternating. */
  weft_plan_t *p = plan(t, 0, WEFT_PIN_CORE, UINT64_C(0x5));
  assert_int_equal(weft_plan_workers(p), 16);
  for (uint32_t w = 0; w < 16; w++) {
    uint32_t node = 2 * (w % 2), core = 8 * node + w / 2;
    expect_place(p, w, 2 * core, core, node, node, node / 2);
  }
  assert_int_equal(weft_plan_groups(p), 2);
  expect_group(p, 0, 0, (const uint32_t[]){0, 2, 4, 6, 8, 10, 12, 14}, 8);
  expect_group(p, 1, 2, (const uint32_t[]){1, 3, 5, 7, 9, 11, 13, 15}, 8);
  expect_steal(
      p, 0,
      (const uint32_t[]){2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15},
      15);
  weft_plan_destroy(p);

  /* Node 1 only, with 20 workers: its 8 cores, its 8 second PUs, wrap. */
  p = plan(t, 20, WEFT_PIN_PU, UINT64_C(0x2));
  expect_pus(p, (const uint32_t[]){16, 18, 20, 22, 24, 26, 28, 30, 17, 19,
                                   21, 23, 25, 27, 29, 31, 16, 18, 20, 22},
             20);
  weft_plan_destroy(p);

  /* Masks naming no node with PUs. */
  static const uint64_t empty[] = {UINT64_C(1) << 4, UINT64_C(1) << 63,
                                   UINT64_C(0xf0)};
  for (uint32_t i = 0; i < COUNT(empty); i++) {
    weft_placement_config_t cfg = {.node_mask = empty[i]};
    p = (weft_plan_t *)&p;
    assert_int_equal(weft_plan_compute(t, &cfg, &p), WEFT_EINVAL);
    assert_null(p);
  }
  weft_topology_destroy(t);
}

static void test_topology_caller_participates(void **state) {
  (void)state;
  weft_topology_t *t = load(TWO_PACKAGES, NULL);
  static const weft_pin_t pins[] = {WEFT_PIN_CORE, WEFT_PIN_PU, WEFT_PIN_NONE};
  for (uint32_t i = 0; i < COUNT(pins); i++) {
    for (int caller = 0; caller < 2; caller++) {
      weft_placement_config_t cfg = {0};
      cfg.workers = 8;
      cfg.pin = pins[i];
      cfg.caller_participates = caller != 0;
      weft_plan_t *p = plan_cfg(t, &cfg);
      /* The caller is placed like any worker 0. */
      expect_pus(p, (const uint32_t[]){0, 16, 32, 48, 2, 18, 34, 50}, 8);
      for (uint32_t w = 0; w < 8; w++) {
        bool bound = pins[i] != WEFT_PIN_NONE && !(caller && w == 0);
        assert_int_equal(weft_plan_bound(p, w), bound);
      }
      char text[2048];
      assert_true(weft_plan_describe(t, p, text, sizeof text) <
                  (int)sizeof text);
      assert_int_equal(strstr(text, "caller is worker 0") != NULL, caller);
      weft_plan_destroy(p);
    }
  }
  weft_topology_destroy(t);
}

static void test_topology_plan_is_deterministic(void **state) {
  (void)state;
  weft_topology_t *t = load("pack:2 numa:1 core:4 pu:2", "0-7,8-9");
  weft_plan_t *a = plan(t, 13, WEFT_PIN_PU, 0);
  weft_plan_t *b = plan(t, 13, WEFT_PIN_PU, 0);
  for (uint32_t w = 0; w < 13; w++) {
    assert_memory_equal(weft_plan_place(a, w), weft_plan_place(b, w),
                        sizeof(weft_pu_info_t));
    const uint32_t *oa, *ob;
    assert_int_equal(weft_plan_steal_order(a, w, &oa), 12);
    assert_int_equal(weft_plan_steal_order(b, w, &ob), 12);
    assert_memory_equal(oa, ob, 12 * sizeof(uint32_t));
  }
  weft_plan_destroy(a);
  weft_plan_destroy(b);
  weft_topology_destroy(t);
}

static void test_topology_node_limit(void **state) {
  (void)state;
  weft_topology_t *t = load("numa:64 pu:1", NULL);
  expect_info(t, 1, 64, 64, 64, 64);
  /* The last node a mask can name. */
  weft_plan_t *p = plan(t, 0, WEFT_PIN_CORE, UINT64_C(1) << 63);
  assert_int_equal(weft_plan_workers(p), 1);
  expect_place(p, 0, 63, 63, 63, 63, 0);
  weft_plan_destroy(p);
  weft_topology_destroy(t);
}

/* More than 64 NUMA nodes work (the load used to fail with WEFT_ELIMIT);
 * a node mask names the first 64 and leaves the others out. */
static void test_topology_more_than_64_nodes(void **state) {
  (void)state;
  weft_topology_t *t = load("numa:65 pu:1", NULL);
  expect_info(t, 1, 65, 65, 65, 65);
  assert_int_equal(weft_topology_distance(t, 64, 0), 16);
  weft_node_memory_t m;
  assert_int_equal(weft_topology_node_memory(t, 64, &m), WEFT_OK);
  assert_int_equal(m.count, 1);
  assert_int_equal(m.os_index[0], 64);
  weft_plan_t *p = plan(t, 0, WEFT_PIN_CORE, 0);
  assert_int_equal(weft_plan_workers(p), 65);
  assert_int_equal(weft_plan_groups(p), 65);
  expect_place(p, 64, 64, 64, 64, 64, 0);
  expect_group(p, 64, 64, (const uint32_t[]){64}, 1);
  weft_plan_destroy(p);
  p = plan(t, 0, WEFT_PIN_CORE, UINT64_MAX);
  assert_int_equal(weft_plan_workers(p), 64);
  assert_int_equal(weft_plan_groups(p), 64);
  weft_plan_destroy(p);
  char text[256];
  assert_true(weft_plan_describe(t, NULL, text, sizeof text) > 0);
  assert_non_null(strstr(text, "distances: 65 nodes, not shown\n"));
  weft_topology_destroy(t);

  /* Two packages of 100 nodes: distances by package, 400 workers. */
  t = load("pack:2 numa:100 core:1 pu:2", NULL);
  expect_info(t, 2, 200, 200, 200, 400);
  assert_int_equal(weft_topology_distance(t, 0, 99), 16);
  assert_int_equal(weft_topology_distance(t, 0, 100), 20);
  p = plan(t, 400, WEFT_PIN_PU, 0);
  assert_int_equal(weft_plan_groups(p), 200);
  weft_plan_destroy(p);
  weft_topology_destroy(t);
}

/* ---- L3 groups spanning nodes ----------------------------------------------
 */

static void test_topology_l3_spanning_nodes(void **state) {
  (void)state;
  /* One L3 per package over two nodes (Sub-NUMA Clustering): within the
   * L3 class, nearer nodes first. */
  weft_topology_t *t = load("pack:2 l3:1 numa:2 core:2 pu:1", NULL);
  expect_info(t, 2, 4, 2, 8, 8);
  weft_plan_t *p = plan(t, 0, WEFT_PIN_CORE, 0);
  expect_pus(p, (const uint32_t[]){0, 2, 4, 6, 1, 3, 5, 7}, 8);
  /* Worker 0: its L3 at distance 10 (worker 4), then at 16 (1, 5), then
   * the other package (20) by rotation. */
  expect_steal(p, 0, (const uint32_t[]){4, 1, 5, 2, 3, 6, 7}, 7);
  /* Worker 5 (node 1): 1, then node 0 from after 5 (0, 4), then 6 7 2 3. */
  expect_steal(p, 5, (const uint32_t[]){1, 0, 4, 6, 7, 2, 3}, 7);
  weft_plan_destroy(p);
  weft_topology_destroy(t);
}

/* ---- big plans
 * ---------------------------------------------------------------
 */

/* 65536 workers (the most a plan takes) plan in near-linear time and
 * memory: the steal orders are walked on demand (check_plan() walks about
 * 64 of them whole and checks every stored start). The old plan stored
 * 65536 x 65535 entries (17 GB) and sorted each order. */
static void test_topology_plan_65536_workers(void **state) {
  (void)state;
  weft_topology_t *t = load("pack:2 numa:2 l3:2 core:4 pu:2", NULL);
  weft_plan_t *p = plan(t, 65536, WEFT_PIN_PU, 0);
  assert_int_equal(weft_plan_groups(p), 4);
  assert_int_equal(weft_plan_steal_order(p, 0, NULL), 16);
  int need = weft_plan_describe(t, p, NULL, 0);
  assert_true(need > 0);
  char *text = malloc((size_t)need + 1);
  assert_non_null(text);
  assert_int_equal(weft_plan_describe(t, p, text, (uint32_t)need + 1), need);
  assert_non_null(strstr(text, "plan: 65536 worker(s), pin pu\n"));
  assert_non_null(strstr(text, "and 65519 more\n"));
  free(text);
  weft_plan_destroy(p);
  weft_topology_destroy(t);

  /* One PU: every order is the plain rotation. */
  t = load("core:1 pu:1", NULL);
  p = plan(t, 65536, WEFT_PIN_CORE, 0);
  uint32_t want[16];
  for (uint32_t i = 0; i < 16; i++)
    want[i] = 65530 + 1 + i < 65536 ? 65530 + 1 + i : i - 5;
  expect_steal_prefix(p, 65530, want, 16);
  weft_steal_iter_t it;
  uint32_t v = 0, last = 0, count = 0;
  weft_plan_steal_iter(p, 65530, 16, &it);
  while (weft_plan_steal_next(p, &it, &v)) {
    last = v;
    count++;
  }
  assert_int_equal(count, 65535 - 16);
  assert_int_equal(last, 65529);
  weft_plan_destroy(p);
  weft_topology_destroy(t);
}

/* ---- real machines (hwloc XML exports) -------------------------------------
 */

static void data_path(char *buf, size_t size, const char *file) {
  int n = snprintf(buf, size, "%s/%s", WEFT_TOPOLOGY_DATA, file);
  assert_true(n > 0 && (size_t)n < size);
}

static bool ordinary(hwloc_obj_t n) {
  return !n->subtype || !strcmp(n->subtype, "DRAM");
}

/*
 * Checks t's nodes against the machine's own NUMA nodes (read again with
 * hwloc from path): a node's memory is local to every one of its PUs, is
 * ordinary memory wherever a PU has some, and is none only where no NUMA
 * node covers the PU.
 */
static void check_memory_is_local(const weft_topology_t *t, const char *path) {
  hwloc_topology_t hw;
  assert_int_equal(hwloc_topology_init(&hw), 0);
  assert_int_equal(hwloc_topology_set_xml(hw, path), 0);
  assert_int_equal(hwloc_topology_load(hw), 0);
  weft_topology_info_t in;
  weft_topology_info(t, &in);
  for (uint32_t i = 0; i < in.pus; i++) {
    const weft_pu_info_t *pu = weft_topology_pu(t, i);
    weft_node_memory_t m;
    assert_int_equal(weft_topology_node_memory(t, pu->node, &m), WEFT_OK);
    bool local_any = false, local_ordinary = false;
    hwloc_obj_t n = NULL;
    while ((n = hwloc_get_next_obj_by_type(hw, HWLOC_OBJ_NUMANODE, n)))
      if (n->cpuset && hwloc_bitmap_isset(n->cpuset, pu->os_pu)) {
        local_any = true;
        local_ordinary |= ordinary(n);
      }
    assert_int_equal(m.count != 0, local_any);
    for (uint32_t k = 0; k < m.count; k++) {
      n = hwloc_get_numanode_obj_by_os_index(hw, m.os_index[k]);
      assert_non_null(n);
      assert_true(hwloc_bitmap_isset(n->cpuset, pu->os_pu));
      if (local_ordinary)
        assert_true(ordinary(n));
    }
  }
  hwloc_topology_destroy(hw);
}

static weft_topology_t *load_xml(const char *file, const char *restrict_pus) {
  char path[1024];
  data_path(path, sizeof path, file);
  weft_topology_t *t = NULL;
  assert_int_equal(weft_topology_load_xml(path, restrict_pus, &t), WEFT_OK);
  assert_non_null(t);
  check_topology(t);
  check_memory_is_local(t, path);
  return t;
}

/* Node d's memory is exactly these hwloc nodes (OS indices), of this kind
 * (NULL: hwloc names none) and size. */
static void expect_node_memory(const weft_topology_t *t, uint32_t node,
                               const uint32_t *os, uint32_t count,
                               const char *kind, uint64_t bytes) {
  weft_node_memory_t m;
  assert_int_equal(weft_topology_node_memory(t, node, &m), WEFT_OK);
  expect_u32s("memory of node", node, m.os_index, m.count, os, count);
  if (kind)
    assert_string_equal(m.kind, kind);
  else
    assert_null(m.kind);
  assert_true(m.bytes == bytes);
}

/* The describe text of t and p holds every '|'-separated part of want. */
static void expect_text(const weft_topology_t *t, const weft_plan_t *p,
                        const char *want) {
  int need = weft_plan_describe(t, p, NULL, 0);
  char *text = malloc((size_t)need + 1);
  assert_non_null(text);
  weft_plan_describe(t, p, text, (uint32_t)need + 1);
  char part[256];
  for (const char *s = want; *s;) {
    const char *bar = strchr(s, '|');
    size_t len = bar ? (size_t)(bar - s) : strlen(s);
    assert_true(len < sizeof part);
    memcpy(part, s, len);
    part[len] = 0;
    if (!strstr(text, part)) {
      print_error("missing '%s' in:\n%s", part, text);
      fail();
    }
    s += len + (bar != NULL);
  }
  free(text);
}

#define GIB (UINT64_C(1) << 30)
#define MIB (UINT64_C(1) << 20)

/*
 * KNL in SNC-4 hybrid mode: each quarter's CPUs have a DRAM node (OS 0-3)
 * and an MCDRAM node (OS 7, 4, 5, 6), which hwloc lists in the order
 * DRAM 0, MCDRAM 7, DRAM 1, MCDRAM 4, ... Every group gets its quarter's
 * DRAM. (The old code bound group g to hwloc's node of logical index g:
 * groups 1, 2, 3 went to MCDRAM 7, DRAM 1, MCDRAM 4.)
 */
static void test_topology_xml_knl_snc4_hybrid(void **state) {
  (void)state;
  weft_topology_t *t = load_xml("xml__64intel64-fakeKNL-SNC4-hybrid.xml", NULL);
  expect_info(t, 1, 4, 4, 16, 64);
  for (uint32_t i = 0; i < 64; i++)
    assert_int_equal(weft_topology_pu(t, i)->node, i / 16);
  weft_plan_t *p = plan(t, 0, WEFT_PIN_CORE, 0);
  assert_int_equal(weft_plan_groups(p), 4);
  for (uint32_t g = 0; g < 4; g++) {
    uint32_t node = UINT32_MAX;
    weft_plan_group(p, g, &node, NULL);
    assert_int_equal(node, g);
    expect_node_memory(t, node, (const uint32_t[]){g}, 1, "DRAM", GIB);
  }
  expect_text(t, p,
              "(not this machine)|group 1 (node 1): 1 5 9 13; memory numa 1 "
              "(DRAM, 1.0 GiB)\n|group 3 (node 3): 3 7 11 15; memory numa 3 "
              "(DRAM, 1.0 GiB)\n");
  weft_plan_destroy(p);
  weft_topology_destroy(t);
}

/*
 * DRAM, HBM and NVM tiers: CPUs 0-1 have DRAM 0 and NVM 8, CPUs 2-3 DRAM 1,
 * HBM 4 and NVM 6, CPUs 4-5 only HBM 2 and NVM 9. Ordinary DRAM where
 * there is some, HBM rather than NVM where not; never a node of another
 * group's CPUs. (The old code bound group 1 to NVM 8, on CPUs 0-1, and
 * group 2 to DRAM 1, on CPUs 2-3.)
 */
static void test_topology_xml_heterogeneous_memory_tiers(void **state) {
  (void)state;
  weft_topology_t *t = load_xml("fsroot__fakeheteromemtiers.xml", NULL);
  expect_info(t, 1, 3, 1, 6, 6);
  for (uint32_t i = 0; i < 6; i++)
    assert_int_equal(weft_topology_pu(t, i)->node, i / 2);
  expect_node_memory(t, 0, (const uint32_t[]){0}, 1, "DRAM", 3077521408u);
  expect_node_memory(t, 1, (const uint32_t[]){1}, 1, "DRAM", 1026519040u);
  expect_node_memory(t, 2, (const uint32_t[]){2}, 1, "HBM", 512 * MIB);
  weft_plan_t *p = plan(t, 0, WEFT_PIN_CORE, 0);
  expect_group(p, 1, 1, (const uint32_t[]){1, 4}, 2);
  expect_group(p, 2, 2, (const uint32_t[]){2, 5}, 2);
  expect_text(t, p, "memory numa 2 (HBM, 512 MiB)\n");
  weft_plan_destroy(p);
  weft_topology_destroy(t);
}

/*
 * Cluster-on-Die without Group objects: both of a package's nodes cover
 * all its CPUs (0-13: nodes 0 and 1; 14-27: 2 and 3), and no L3 is
 * reported. Package 1's group takes nodes 2 and 3. (The old code bound it
 * to node 1, package 0's memory.)
 */
static void test_topology_xml_cluster_on_die(void **state) {
  (void)state;
  weft_topology_t *t =
      load_xml("xml__28intel64-2p2g7c-CoD.nogroups.v1tov2.xml", NULL);
  expect_info(t, 2, 2, 28, 28, 28);
  for (uint32_t i = 0; i < 28; i++) {
    assert_int_equal(weft_topology_pu(t, i)->node, i / 14);
    assert_int_equal(weft_topology_pu(t, i)->l3, i);
  }
  /* The nearest pair of the two packages' nodes: 31. */
  assert_int_equal(weft_topology_distance(t, 0, 1), 31);
  expect_node_memory(t, 0, (const uint32_t[]){0, 1}, 2, NULL,
                     16899600384u + GIB * 16);
  expect_node_memory(t, 1, (const uint32_t[]){2, 3}, 2, NULL, 32 * GIB);
  weft_plan_t *p = plan(t, 0, WEFT_PIN_CORE, 0);
  uint32_t node = UINT32_MAX;
  weft_plan_group(p, 1, &node, NULL);
  assert_int_equal(node, 1);
  expect_text(t, p,
              "group 1 (node 1): 1 3 5 7 9 11 13 15 17 19 21 23 25 27; "
              "memory numa 2,3 (32.0 GiB)\n");
  weft_plan_destroy(p);
  weft_topology_destroy(t);
}

/*
 * An 8-node Opteron in a cpuset of CPUs 0-3, 5, 6, 12-15 and nodes 1-5:
 * CPUs 0-1 (package 0, node 0 not allowed) and 12-15 (packages 4 and 5,
 * nodes 6 and 7 not allowed) have no NUMA node. They form memoryless
 * nodes, one per package, and share no made-up L3 with other packages
 * (the machine reports none). (The old code put them all in node 0,
 * bound to NUMA node 1, and in one L3 group with CPUs 2-3.)
 */
static void test_topology_xml_cpuset_without_memory(void **state) {
  (void)state;
  weft_topology_t *t = load_xml("xml__16amd64-8n2c-cpusets.xml", NULL);
  expect_info(t, 6, 6, 10, 10, 10);
  static const uint32_t os[10] = {0, 1, 2, 3, 5, 6, 12, 13, 14, 15};
  static const uint32_t node[10] = {0, 0, 1, 1, 2, 3, 4, 4, 5, 5};
  for (uint32_t i = 0; i < 10; i++) {
    const weft_pu_info_t *pu = weft_topology_pu(t, i);
    assert_int_equal(pu->os_pu, os[i]);
    assert_int_equal(pu->node, node[i]);
    assert_int_equal(pu->l3, i);
  }
  expect_node_memory(t, 0, NULL, 0, NULL, 0);
  expect_node_memory(t, 1, (const uint32_t[]){1}, 1, NULL, 8 * GIB);
  expect_node_memory(t, 2, (const uint32_t[]){2}, 1, NULL, 8 * GIB);
  expect_node_memory(t, 3, (const uint32_t[]){3}, 1, NULL, 8 * GIB);
  expect_node_memory(t, 4, NULL, 0, NULL, 0);
  expect_node_memory(t, 5, NULL, 0, NULL, 0);
  weft_plan_t *p = plan(t, 0, WEFT_PIN_CORE, 0);
  assert_int_equal(weft_plan_groups(p), 6);
  expect_group(p, 0, 0, (const uint32_t[]){0, 6}, 2);
  /* Worker 0 (CPU 0): worker 6 (CPU 1, its node), then all others at
   * distance 20, by rotation. */
  expect_steal(p, 0, (const uint32_t[]){6, 1, 2, 3, 4, 5, 7, 8, 9}, 9);
  expect_text(t, p,
              "cpus: 0-3,5-6,12-15\n|group 0 (node 0): 0 6; memory none of "
              "its own (not bound)\n");
  weft_plan_destroy(p);
  weft_topology_destroy(t);
}

/*
 * CPUs 0-3 and NUMA node 0 offline: package 0's online CPUs (4, 6, ...,
 * 20) have no NUMA node; package 1's (5, 7, ..., 19) have node 1. Two
 * nodes, the first without memory. (The old code lumped every PU into
 * one node, bound to node 1.)
 */
static void test_topology_xml_offline_node(void **state) {
  (void)state;
  weft_topology_t *t = load_xml("fsroot__offline-cpu0-node0.xml", NULL);
  expect_info(t, 2, 2, 2, 17, 17);
  for (uint32_t i = 0; i < 17; i++) {
    const weft_pu_info_t *pu = weft_topology_pu(t, i);
    assert_int_equal(pu->node, pu->os_pu % 2);
  }
  expect_node_memory(t, 0, NULL, 0, NULL, 0);
  expect_node_memory(t, 1, (const uint32_t[]){1}, 1, NULL, 64 * GIB);
  weft_plan_t *p = plan(t, 0, WEFT_PIN_CORE, 0);
  assert_int_equal(weft_plan_groups(p), 2);
  expect_text(t, p,
              "group 0 (node 0): 0 2 4 6 8 10 12 14 16; memory none of its "
              "own (not bound)\n|group 1 (node 1): 1 3 5 7 9 11 13 15; memory "
              "numa 1 (64.0 GiB)\n");
  weft_plan_destroy(p);
  weft_topology_destroy(t);
}

/*
 * A cgroup v2 restriction to CPUs 0-5 and nodes 0-5 of a 32-CPU machine:
 * CPUs 0-3 on node 0, 4-5 on node 1, nodes 2-5 without allowed CPUs.
 * Restricted further to CPUs 4-5, node 0 has no CPU left (hwloc keeps it)
 * and the only group takes node 1. (The old code bound it to node 0.)
 */
static void test_topology_xml_cgroup_restricted(void **state) {
  (void)state;
  const char *file = "fsroot__32amd64-4s2n4c-cgroup2-disallowed.xml";
  weft_topology_t *t = load_xml(file, NULL);
  expect_info(t, 1, 2, 2, 6, 6);
  expect_node_memory(t, 0, (const uint32_t[]){0}, 1, NULL, 17177686016u);
  expect_node_memory(t, 1, (const uint32_t[]){1}, 1, NULL, 16 * GIB);
  assert_int_equal(weft_topology_distance(t, 0, 1), 16);
  weft_topology_destroy(t);

  t = load_xml(file, "4-5");
  expect_info(t, 1, 1, 1, 2, 2);
  expect_node_memory(t, 0, (const uint32_t[]){1}, 1, NULL, 16 * GIB);
  weft_plan_t *p = plan(t, 0, WEFT_PIN_CORE, 0);
  expect_group(p, 0, 0, (const uint32_t[]){0, 1}, 2);
  expect_text(t, p,
              "cpus: 4-5 (restricted; the machine has 0-5)\n|group 0 (node "
              "0): 0 1; memory numa 1 (16.0 GiB)\n");
  weft_plan_destroy(p);
  weft_topology_destroy(t);
}

/*
 * Memory with initiators: DRAM nodes 5, 6, 8, 9 on two CPUs each, NVM
 * nodes 7 and 10 on two groups' CPUs. Groups get their DRAM, never the
 * NVM, and distances come from the machine's report. (The old code bound
 * group 2 to NVM node 7.)
 */
static void test_topology_xml_memory_initiators(void **state) {
  (void)state;
  weft_topology_t *t =
      load_xml("fsroot__fakememinitiators-1np2c+1npp+gi.xml", NULL);
  expect_info(t, 2, 4, 8, 8, 8);
  static const uint32_t dram[4] = {5, 6, 8, 9};
  for (uint32_t d = 0; d < 4; d++) {
    weft_node_memory_t m;
    assert_int_equal(weft_topology_node_memory(t, d, &m), WEFT_OK);
    assert_int_equal(m.count, 1);
    assert_int_equal(m.os_index[0], dram[d]);
  }
  assert_int_equal(weft_topology_distance(t, 0, 1), 13);
  assert_int_equal(weft_topology_distance(t, 0, 2), 21);
  assert_int_equal(weft_topology_distance(t, 2, 3), 13);
  weft_plan_t *p = plan(t, 0, WEFT_PIN_CORE, 0);
  /* Worker 0: node 1 (13) before package 1 (21). */
  expect_steal(p, 0, (const uint32_t[]){4, 1, 5, 2, 3, 6, 7}, 7);
  weft_plan_destroy(p);
  weft_topology_destroy(t);
}

/* HWLOC_XMLFILE makes weft_topology_load(NULL, ...) read the same file,
 * as another machine: the same nodes, nothing restricted to this
 * process's binding. */
static void test_topology_xml_from_environment(void **state) {
  (void)state;
  char path[1024];
  data_path(path, sizeof path, "xml__28intel64-2p2g7c-CoD.nogroups.v1tov2.xml");
  assert_int_equal(setenv("HWLOC_XMLFILE", path, 1), 0);
  weft_topology_t *t = NULL;
  int rc = weft_topology_load(NULL, NULL, &t);
  unsetenv("HWLOC_XMLFILE");
  assert_int_equal(rc, WEFT_OK);
  check_topology(t);
  expect_info(t, 2, 2, 28, 28, 28);
  expect_node_memory(t, 1, (const uint32_t[]){2, 3}, 2, NULL, 32 * GIB);
  expect_text(t, NULL, "(not this machine)\ncpus: 0-27\n");
  weft_topology_destroy(t);
}

static void test_topology_load_xml_rejects_bad_input(void **state) {
  (void)state;
  char path[1024];
  weft_topology_t *t = (weft_topology_t *)&t;
  assert_int_equal(weft_topology_load_xml(NULL, NULL, &t), WEFT_EINVAL);
  assert_null(t);
  data_path(path, sizeof path, "fsroot__fakeheteromemtiers.xml");
  assert_int_equal(weft_topology_load_xml(path, NULL, NULL), WEFT_EINVAL);
  /* A list that leaves nothing. */
  t = (weft_topology_t *)&t;
  assert_int_equal(weft_topology_load_xml(path, "6-9", &t), WEFT_EINVAL);
  assert_null(t);
  /* No such file, and a file that is not an hwloc export. */
  data_path(path, sizeof path, "no-such-machine.xml");
  t = (weft_topology_t *)&t;
  assert_int_equal(weft_topology_load_xml(path, NULL, &t), WEFT_EINVAL);
  assert_null(t);
  data_path(path, sizeof path, "README.md");
  t = (weft_topology_t *)&t;
  assert_int_equal(weft_topology_load_xml(path, NULL, &t), WEFT_EINVAL);
  assert_null(t);
}

/* Loads with weft_topology_load_ex(); returns its code, the message in
 * @p why. */
static int load_ex(const char *synthetic, const char *xml, const char *list,
                   char *why, uint32_t size, weft_topology_t **out) {
  weft_topology_load_config_t cfg = {.synthetic = synthetic,
                                     .xml = xml,
                                     .restrict_pus = list,
                                     .error = why,
                                     .error_size = size};
  return weft_topology_load_ex(&cfg, out);
}

/* A failed load says in words what it rejected, with the same codes. */
static void test_topology_load_ex_says_what_was_rejected(void **state) {
  (void)state;
  char why[256], path[1024];
  weft_topology_t *t = (weft_topology_t *)&t;
  assert_int_equal(load_ex("core:2 pu:1", NULL, "5-9", why, sizeof why, &t),
                   WEFT_EINVAL);
  assert_null(t);
  assert_string_equal(why, "CPUs 5-9 are not in this topology (it has 0-1)");
  assert_int_equal(load_ex("core:2 pu:1", NULL, "5", why, sizeof why, &t),
                   WEFT_EINVAL);
  assert_string_equal(why, "CPU 5 is not in this topology (it has 0-1)");
  assert_int_equal(load_ex("core:4 pu:1", NULL, "1x2", why, sizeof why, &t),
                   WEFT_EINVAL);
  assert_non_null(strstr(why, "bad CPU list '1x2'"));
  assert_int_equal(load_ex("bogus:3", NULL, NULL, why, sizeof why, &t),
                   WEFT_EINVAL);
  assert_non_null(strstr(why, "synthetic description 'bogus:3'"));
  /* A mistyped XML path names the file and the reason. */
  data_path(path, sizeof path, "no-such-machine.xml");
  assert_int_equal(load_ex(NULL, path, NULL, why, sizeof why, &t), WEFT_EINVAL);
  assert_null(t);
  assert_non_null(strstr(why, "no-such-machine.xml"));
  assert_non_null(strstr(why, strerror(ENOENT)));
  data_path(path, sizeof path, "README.md");
  assert_int_equal(load_ex(NULL, path, NULL, why, sizeof why, &t), WEFT_EINVAL);
  assert_non_null(strstr(why, "README.md"));
  assert_int_equal(load_ex("core:2 pu:1", path, NULL, why, sizeof why, &t),
                   WEFT_EINVAL);
  assert_non_null(strstr(why, "exclude each other"));
  /* A short buffer gets a truncated, terminated message; none at all is
   * fine, and so is a buffer of size 0. */
  assert_int_equal(load_ex("core:2 pu:1", NULL, "5-9", why, 8, &t),
                   WEFT_EINVAL);
  assert_string_equal(why, "CPUs 5-");
  assert_int_equal(load_ex("core:2 pu:1", NULL, "5-9", NULL, 64, &t),
                   WEFT_EINVAL);
  why[0] = 'x';
  assert_int_equal(load_ex("core:2 pu:1", NULL, "5-9", why, 0, &t),
                   WEFT_EINVAL);
  assert_int_equal(why[0], 'x');
  assert_int_equal(weft_topology_load_ex(NULL, &t), WEFT_EINVAL);
  assert_null(t);
  /* Success clears the message and loads as weft_topology_load() does. */
  strcpy(why, "stale");
  assert_int_equal(load_ex("core:4 pu:1", NULL, "1-2", why, sizeof why, &t), 0);
  assert_string_equal(why, "");
  expect_info(t, 1, 1, 2, 2, 2);
  weft_topology_destroy(t);
}

/* ---- the process's CPU mask
 * --------------------------------------------------
 */

/* Parses a decimal CPU list ("0,2-3") into set; false on anything else. */
static bool parse_cpus(const char *s, cpu_set_t *set) {
  CPU_ZERO(set);
  while (*s) {
    char *end;
    unsigned long a = strtoul(s, &end, 10), b = a;
    if (end == s)
      return false;
    if (*end == '-') {
      s = end + 1;
      b = strtoul(s, &end, 10);
      if (end == s || b < a)
        return false;
    }
    for (unsigned long c = a; c <= b && c < CPU_SETSIZE; c++)
      CPU_SET(c, set);
    if (*end && *end != ',')
      return false;
    s = *end ? end + 1 : end;
  }
  return true;
}

typedef struct mask_job_t {
  cpu_set_t mask;
  atomic_uint outside; /* jobs that ran on a thread allowed outside mask */
  atomic_uint ran;
} mask_job_t;

static void mask_job(void *arg, uint32_t worker) {
  (void)worker;
  mask_job_t *j = arg;
  cpu_set_t mine, both;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0)
    atomic_fetch_add(&j->outside, 1);
  CPU_AND(&both, &mine, &j->mask);
  if (!CPU_EQUAL(&both, &mine))
    atomic_fetch_add(&j->outside, 1);
  atomic_fetch_add(&j->ran, 1);
}

/* Runs jobs on the pool: every thread that runs one stays in the mask. */
static void run_mask_jobs(weft_pool_t *pool, const cpu_set_t *mask) {
  static mask_job_t job;
  job.mask = *mask;
  atomic_store(&job.outside, 0);
  atomic_store(&job.ran, 0);
  weft_counter_t done = {0};
  for (int i = 0; i < 64; i++)
    weft_pool_submit(pool, WEFT_WORKER_EXTERNAL, mask_job, &job, &done,
                     WEFT_WORKER_EXTERNAL);
  weft_pool_wait(pool, WEFT_WORKER_EXTERNAL, &done);
  assert_int_equal(atomic_load(&job.ran), 64);
  assert_int_equal(atomic_load(&job.outside), 0);
}

/*
 * This machine's topology holds only the CPUs the process may run on
 * (its affinity mask, e.g. under taskset), and pools stay inside them:
 * one worker per allowed core by default, and more workers than allowed
 * PUs wrap inside the mask. With the mask covering the whole machine
 * nothing is left out. ctest also runs this suite under taskset with one
 * CPU (tests/run_taskset.cmake), naming it in WEFT_TEST_EXPECT_CPUS so
 * that a taskset that did not apply fails. (The old code planned on the
 * whole machine: two workers under taskset -c 0 here, the second pinned
 * to CPU 1.)
 */
static void test_topology_process_mask(void **state) {
  (void)state;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  assert_int_equal(sched_getaffinity(0, sizeof mask, &mask), 0);
  const char *want = getenv("WEFT_TEST_EXPECT_CPUS");
  if (want) {
    cpu_set_t expect;
    assert_true(parse_cpus(want, &expect));
    assert_true(CPU_EQUAL(&expect, &mask));
  }
  /* What hwloc allows on this machine, and of it what the mask allows. */
  hwloc_topology_t hw;
  assert_int_equal(hwloc_topology_init(&hw), 0);
  assert_int_equal(hwloc_topology_load(hw), 0);
  hwloc_const_cpuset_t machine = hwloc_topology_get_topology_cpuset(hw);
  uint32_t in_mask = 0, in_machine = 0;
  int c;
  hwloc_bitmap_foreach_begin(c, machine) {
    in_machine++;
    in_mask += CPU_ISSET(c, &mask) != 0;
  }
  hwloc_bitmap_foreach_end();
  hwloc_topology_destroy(hw);
  assert_true(in_mask >= 1);

  weft_topology_t *t = load(NULL, NULL);
  weft_topology_info_t in;
  weft_topology_info(t, &in);
  assert_int_equal(in.pus, in_mask);
  for (uint32_t i = 0; i < in.pus; i++)
    assert_true(CPU_ISSET(weft_topology_pu(t, i)->os_pu, &mask));
  char text[4096];
  assert_true(weft_plan_describe(t, NULL, text, sizeof text) <
              (int)sizeof text);
  /* The mask is said when it leaves CPUs out, and only then. */
  assert_int_equal(strstr(text, " (the process's CPU binding; the machine "
                                "has ") != NULL,
                   in_mask < in_machine);
  weft_topology_destroy(t);
  /* A CPU the machine has but the mask leaves out (under taskset): a
   * restriction to it says so, in words. */
  int outside = -1;
  assert_int_equal(hwloc_topology_init(&hw), 0);
  assert_int_equal(hwloc_topology_load(hw), 0);
  hwloc_bitmap_foreach_begin(c, hwloc_topology_get_topology_cpuset(hw)) {
    if (outside < 0 && !CPU_ISSET(c, &mask))
      outside = c;
  }
  hwloc_bitmap_foreach_end();
  hwloc_topology_destroy(hw);
  if (outside >= 0) {
    char list[16], why[256];
    snprintf(list, sizeof list, "%d", outside);
    weft_topology_load_config_t lc = {
        .restrict_pus = list, .error = why, .error_size = sizeof why};
    t = (weft_topology_t *)&t;
    assert_int_equal(weft_topology_load_ex(&lc, &t), WEFT_EINVAL);
    assert_null(t);
    char expect[64];
    snprintf(expect, sizeof expect,
             "CPU %d is outside the CPUs this process may run on (", outside);
    assert_non_null(strstr(why, expect));
  }

  /* The default pool: one worker per allowed core, each inside the mask. */
  weft_pool_config_t cfg = {0};
  weft_pool_t *pool = NULL;
  assert_int_equal(weft_pool_create(&cfg, &pool), WEFT_OK);
  const weft_plan_t *pl = weft_pool_plan(pool);
  assert_int_equal(weft_pool_workers(pool), in.cores);
  for (uint32_t w = 0; w < weft_plan_workers(pl); w++)
    assert_true(CPU_ISSET(weft_plan_place(pl, w)->os_pu, &mask));
  run_mask_jobs(pool, &mask);
  weft_pool_destroy(pool);

  /* More workers than allowed PUs, each pinned to one: they wrap inside
   * the mask. */
  cfg.placement.workers = 2 * in.pus + 1;
  cfg.placement.pin = WEFT_PIN_PU;
  assert_int_equal(weft_pool_create(&cfg, &pool), WEFT_OK);
  pl = weft_pool_plan(pool);
  assert_int_equal(weft_plan_workers(pl), 2 * in.pus + 1);
  for (uint32_t w = 0; w < weft_plan_workers(pl); w++)
    assert_true(CPU_ISSET(weft_plan_place(pl, w)->os_pu, &mask));
  run_mask_jobs(pool, &mask);
  weft_pool_destroy(pool);
}

/* ---- chunk memory binding
 * ----------------------------------------------------
 */

/*
 * A refused memory binding is counted in the pool's stats, not ignored.
 * HWLOC_THISSYSTEM=1 makes hwloc take a synthetic machine for this one, so
 * a pool on it binds chunk memory to its nodes: OS indices 4000 and 4001,
 * past any kernel's node limit, so the OS refuses every binding. A pool on
 * a synthetic machine (not this one) binds nothing.
 */
static void test_topology_membind_failures_are_counted(void **state) {
  (void)state;
  weft_pool_stats_t st;
  assert_int_equal(weft_pool_stats(NULL, &st), WEFT_EINVAL);
  assert_int_equal(setenv("HWLOC_THISSYSTEM", "1", 1), 0);
  weft_pool_config_t cfg = {0};
  cfg.synthetic = "numa:2(indexes=4000,4001) core:1 pu:1";
  cfg.placement.pin = WEFT_PIN_NONE;
  weft_pool_t *pool = NULL;
  int rc = weft_pool_create(&cfg, &pool);
  unsetenv("HWLOC_THISSYSTEM");
  assert_int_equal(rc, WEFT_OK);
  assert_int_equal(weft_pool_stats(pool, NULL), WEFT_EINVAL);
  memset(&st, 0xa5, sizeof st);
  assert_int_equal(weft_pool_stats(pool, &st), WEFT_OK);
  assert_true(st.membind_calls == 0 && st.membind_failures == 0);
  assert_int_equal(st.membind_errno, 0);
  weft__alloc_stats_t as = {0};
  for (uint32_t g = 0; g < 2; g++) {
    void *mem = weft__pool_alloc_on(pool, g, &as, 1 << 16, 4096);
    assert_non_null(mem);
    memset(mem, 1, 1 << 16);
    weft__pool_free_on(pool, mem, 1 << 16);
  }
  assert_int_equal(weft_pool_stats(pool, &st), WEFT_OK);
  assert_true(st.membind_calls == 2);
  assert_true(st.membind_failures == 2);
  assert_int_not_equal(st.membind_errno, 0);
  weft_pool_destroy(pool);

  cfg.synthetic = "numa:2 core:1 pu:1";
  assert_int_equal(weft_pool_create(&cfg, &pool), WEFT_OK);
  unsigned arenas0 = weft__alloc_arenas();
  uint64_t allocs0 = as.allocs;
  struct mallinfo2 mi0 = mallinfo2();
  void *mem = weft__pool_alloc_on(pool, 1, &as, 1 << 16, 4096);
  struct mallinfo2 mi1 = mallinfo2();
  assert_non_null(mem);
  assert_true(wt_aligned(mem, 4096));
  assert_int_equal(as.allocs, allocs0 + 1);
#if defined(WEFT_JEMALLOC)
  /* The group's memory comes from an arena of weft's jemalloc, made for
   * it on first use. */
  assert_int_equal(weft__alloc_arenas(), arenas0 + 1);
#elif !defined(WEFT_SYSTEM_MALLOC)
  /* Without jemalloc: pages of weft's own (which binding them to a node
   * keeps to weft), not a block of glibc's heap. */
  assert_int_equal(weft__alloc_arenas(), 0);
  assert_true(mi1.uordblks == mi0.uordblks && mi1.hblkhd == mi0.hblkhd);
#endif
  (void)arenas0;
  (void)mi0;
  (void)mi1;
  memset(mem, 1, 1 << 16);
  weft__pool_free_on(pool, mem, 1 << 16);
  assert_int_equal(weft_pool_stats(pool, &st), WEFT_OK);
  assert_true(st.membind_calls == 0 && st.membind_failures == 0);
  weft_pool_destroy(pool);
}

/* ---- errors and bad indices ------------------------------------------------
 */

static void test_topology_load_rejects_bad_input(void **state) {
  (void)state;
  assert_int_equal(weft_topology_load("core:1 pu:1", NULL, NULL), WEFT_EINVAL);
  assert_int_equal(weft_topology_load(NULL, NULL, NULL), WEFT_EINVAL);
  static const char *const descs[] = {"bogus:3", "pack:2 nonsense",
                                      "core:two pu:1"};
  for (uint32_t i = 0; i < COUNT(descs); i++) {
    weft_topology_t *t = (weft_topology_t *)&t;
    assert_int_equal(weft_topology_load(descs[i], NULL, &t), WEFT_EINVAL);
    assert_null(t);
  }
  /* Lists that leave nothing, and lists that are not plain decimal CPU
   * lists (hwloc's own parser would read "0-1x" as "0-1" and "0x3" as 3). */
  static const char *const lists[] = {"4-9", "100",  "",    "abc", "-",   ",",
                                      "1x2", "0-1x", "0x3", "3-1", "0,,1"};
  for (uint32_t i = 0; i < COUNT(lists); i++) {
    weft_topology_t *t = (weft_topology_t *)&t;
    assert_int_equal(weft_topology_load("core:4 pu:1", lists[i], &t),
                     WEFT_EINVAL);
    assert_null(t);
  }
  /* A list reaching past the machine keeps what exists. */
  weft_topology_t *t = load("core:4 pu:1", "2-100");
  expect_info(t, 1, 1, 2, 2, 2);
  assert_int_equal(weft_topology_pu(t, 0)->os_pu, 2);
  weft_topology_destroy(t);
  /* Numbers are decimal: "010" is CPU 10, not CPU 8. */
  t = load("core:16 pu:1", "010");
  expect_info(t, 1, 1, 1, 1, 1);
  assert_int_equal(weft_topology_pu(t, 0)->os_pu, 10);
  weft_topology_destroy(t);
}

static void test_topology_plan_rejects_bad_input(void **state) {
  (void)state;
  weft_topology_t *t = load("core:2 pu:2", NULL);
  weft_placement_config_t cfg = {0};
  weft_plan_t *p = NULL;
  assert_int_equal(weft_plan_compute(NULL, &cfg, &p), WEFT_EINVAL);
  assert_null(p);
  assert_int_equal(weft_plan_compute(t, &cfg, NULL), WEFT_EINVAL);
  static const int pins[] = {3, 7, -1};
  for (uint32_t i = 0; i < COUNT(pins); i++) {
    cfg.pin = (weft_pin_t)pins[i];
    p = (weft_plan_t *)&p;
    assert_int_equal(weft_plan_compute(t, &cfg, &p), WEFT_EINVAL);
    assert_null(p);
  }
  weft_topology_destroy(t);
}

static void test_topology_accessors_reject_bad_indices(void **state) {
  (void)state;
  weft_topology_t *t = load("core:2 pu:2", NULL);
  weft_plan_t *p = plan(t, 3, WEFT_PIN_CORE, 0);

  assert_null(weft_topology_pu(t, 4));
  assert_null(weft_topology_pu(t, UINT32_MAX));
  assert_null(weft_topology_pu(NULL, 0));
  assert_int_equal(weft_topology_distance(t, 1, 0), 0);
  assert_int_equal(weft_topology_distance(t, 0, UINT32_MAX), 0);
  assert_int_equal(weft_topology_distance(NULL, 0, 0), 0);
  weft_topology_info_t in;
  memset(&in, 0xa5, sizeof in);
  weft_topology_info(NULL, &in);
  assert_int_equal(in.pus, 0);
  assert_int_equal(in.cores, 0);
  assert_int_equal(in.numa_nodes, 0);
  weft_topology_info(t, NULL);

  assert_int_equal(weft_plan_workers(NULL), 0);
  assert_int_equal(weft_plan_groups(NULL), 0);
  assert_null(weft_plan_place(p, 3));
  assert_null(weft_plan_place(p, UINT32_MAX));
  assert_null(weft_plan_place(NULL, 0));
  assert_false(weft_plan_bound(p, 3));
  assert_false(weft_plan_bound(NULL, 0));
  assert_int_equal(weft_plan_group_of(p, 3), UINT32_MAX);
  assert_int_equal(weft_plan_group_of(p, UINT32_MAX), UINT32_MAX);
  assert_int_equal(weft_plan_group_of(NULL, 0), UINT32_MAX);
  uint32_t node = 77;
  const uint32_t *ws = (const uint32_t *)&node;
  assert_int_equal(weft_plan_group(p, 1, &node, &ws), 0);
  assert_int_equal(weft_plan_group(p, UINT32_MAX, &node, &ws), 0);
  assert_int_equal(weft_plan_group(NULL, 0, &node, &ws), 0);
  assert_int_equal(node, 77);
  assert_ptr_equal(ws, &node);
  const uint32_t *order = NULL;
  assert_int_equal(weft_plan_steal_order(p, 3, &order), 0);
  assert_int_equal(weft_plan_steal_order(NULL, 0, &order), 0);
  assert_null(order);

  char buf[16] = "unchanged";
  assert_int_equal(weft_plan_describe(NULL, p, buf, sizeof buf), 0);
  assert_string_equal(buf, "unchanged");
  assert_int_equal(weft_plan_describe(t, p, NULL, 8), 0);

  weft_plan_destroy(NULL);
  weft_topology_destroy(NULL);
  weft_plan_destroy(p);
  weft_topology_destroy(t);
}

/* ---- the real machine ------------------------------------------------------
 */

static void test_topology_real_machine(void **state) {
  (void)state;
  weft_topology_t *t = load(NULL, NULL);
  weft_topology_info_t in;
  weft_topology_info(t, &in);
  weft_plan_t *p = plan(t, 0, WEFT_PIN_CORE, 0);
  assert_int_equal(weft_plan_workers(p), in.cores);
  char text[64];
  assert_true(weft_plan_describe(t, p, text, sizeof text) > 0);
  assert_null(strstr(text, "(synthetic)"));
  weft_plan_destroy(p);
  p = plan(t, 2 * in.pus + 1, WEFT_PIN_NONE, 0);
  weft_plan_destroy(p);
  weft_topology_destroy(t);

  /* Restricted to the first PU's OS number: one PU, one worker. */
  t = load(NULL, NULL);
  char list[16];
  snprintf(list, sizeof list, "%u", weft_topology_pu(t, 0)->os_pu);
  weft_topology_destroy(t);
  t = load(NULL, list);
  expect_info(t, 1, 1, 1, 1, 1);
  p = plan(t, 0, WEFT_PIN_CORE, 0);
  assert_int_equal(weft_plan_workers(p), 1);
  weft_plan_destroy(p);
  weft_topology_destroy(t);
}

int main(int argc, char **argv) {
  /* tests/run_taskset.cmake asks for a CPU this process may run on. */
  if (argc == 2 && !strcmp(argv[1], "--first-cpu")) {
    cpu_set_t mask;
    if (sched_getaffinity(0, sizeof mask, &mask) != 0)
      return 1;
    for (int c = 0; c < CPU_SETSIZE; c++)
      if (CPU_ISSET(c, &mask)) {
        printf("%d\n", c);
        return 0;
      }
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_topology_single_core),
      cmocka_unit_test(test_topology_two_cores),
      cmocka_unit_test(test_topology_one_core_two_threads),
      cmocka_unit_test(test_topology_two_packages_counts_and_distances),
      cmocka_unit_test(test_topology_two_packages_default_plan),
      cmocka_unit_test(test_topology_two_packages_every_thread),
      cmocka_unit_test(test_topology_more_workers_than_pus_wrap),
      cmocka_unit_test(test_topology_nodes_without_l3),
      cmocka_unit_test(test_topology_l3_inside_node),
      cmocka_unit_test(test_topology_asymmetric_packages),
      cmocka_unit_test(test_topology_asymmetric_nodes),
      cmocka_unit_test(test_topology_restriction_drops_middle_node),
      cmocka_unit_test(test_topology_node_mask_limits_workers),
      cmocka_unit_test(test_topology_caller_participates),
      cmocka_unit_test(test_topology_plan_is_deterministic),
      cmocka_unit_test(test_topology_node_limit),
      cmocka_unit_test(test_topology_more_than_64_nodes),
      cmocka_unit_test(test_topology_load_rejects_bad_input),
      cmocka_unit_test(test_topology_plan_rejects_bad_input),
      cmocka_unit_test(test_topology_accessors_reject_bad_indices),
      cmocka_unit_test(test_topology_real_machine),
      cmocka_unit_test(test_topology_l3_spanning_nodes),
      cmocka_unit_test(test_topology_plan_65536_workers),
      cmocka_unit_test(test_topology_xml_knl_snc4_hybrid),
      cmocka_unit_test(test_topology_xml_heterogeneous_memory_tiers),
      cmocka_unit_test(test_topology_xml_cluster_on_die),
      cmocka_unit_test(test_topology_xml_cpuset_without_memory),
      cmocka_unit_test(test_topology_xml_offline_node),
      cmocka_unit_test(test_topology_xml_cgroup_restricted),
      cmocka_unit_test(test_topology_xml_memory_initiators),
      cmocka_unit_test(test_topology_xml_from_environment),
      cmocka_unit_test(test_topology_load_xml_rejects_bad_input),
      cmocka_unit_test(test_topology_load_ex_says_what_was_rejected),
      cmocka_unit_test(test_topology_process_mask),
      cmocka_unit_test(test_topology_membind_failures_are_counted),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
