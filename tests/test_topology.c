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
 * 10 local, 16 same package, 20 other package. Without an L3 level, the
 * node is the L3 group. In hwloc synthetic machines, PU i has OS number i.
 *
 * Every topology and plan built here also goes through check_topology() /
 * check_plan(), which assert the invariants that hold for any machine.
 */
#include "support/weft_test.h"

#include <stdlib.h>

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

  /* Steal orders: a permutation of the other workers, sorted by the
   * policy's key. */
  bool *seen = calloc(n, sizeof(bool));
  assert_non_null(seen);
  for (uint32_t w = 0; w < n; w++) {
    const weft_pu_info_t *me = weft_plan_place(p, w);
    order = NULL;
    assert_int_equal(weft_plan_steal_order(p, w, &order), n - 1);
    assert_true(n == 1 || order != NULL);
    memset(seen, 0, n * sizeof(bool));
    uint32_t prev_cls = 0, prev_dist = 0, prev_rot = 0;
    for (uint32_t i = 0; i + 1 < n; i++) {
      uint32_t v = order[i];
      assert_true(v < n);
      assert_int_not_equal(v, w);
      assert_false(seen[v]);
      seen[v] = true;
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
  }

  /* Groups: one per node that has workers, in node order, partitioning the
   * workers; members ascending; group_of agrees. */
  uint32_t groups = weft_plan_groups(p), total = 0;
  assert_true(groups >= 1 && groups <= in.numa_nodes);
  memset(seen, 0, n * sizeof(bool));
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
  expect_info(t, 1, 1, 1, 2, 2);
  assert_int_equal(weft_topology_pu(t, 1)->core, 1);
  assert_int_equal(weft_topology_pu(t, 1)->os_pu, 1);

  weft_plan_t *p = plan(t, 0, WEFT_PIN_CORE, 0);
  assert_int_equal(weft_plan_workers(p), 2);
  expect_place(p, 0, 0, 0, 0, 0, 0);
  expect_place(p, 1, 1, 1, 0, 0, 0);
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
  weft_topology_t *t = load("numa:4 core:16 pu:1", NULL);
  expect_info(t, 1, 4, 4, 64, 64);
  for (uint32_t i = 0; i < 64; i++) {
    const weft_pu_info_t *pu = weft_topology_pu(t, i);
    assert_int_equal(pu->core, i);
    assert_int_equal(pu->node, i / 16);
    assert_int_equal(pu->l3, i / 16);
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
  expect_info(t, 2, 2, 2, 5, 10);
  for (uint32_t i = 0; i < 10; i++) {
    const weft_pu_info_t *pu = weft_topology_pu(t, i);
    assert_int_equal(pu->os_pu, i);
    assert_int_equal(pu->core, i / 2);
    assert_int_equal(pu->node, i / 8);
    assert_int_equal(pu->l3, i / 8);
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
  expect_info(t, 2, 3, 3, 6, 6);
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
  expect_info(t, 2, 3, 3, 9, 9);
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

  t = (weft_topology_t *)&t;
  assert_int_equal(weft_topology_load("numa:65 pu:1", NULL, &t), WEFT_ELIMIT);
  assert_null(t);
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
  expect_info(t, 1, 1, 1, 2, 2);
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

int main(void) {
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
      cmocka_unit_test(test_topology_load_rejects_bad_input),
      cmocka_unit_test(test_topology_plan_rejects_bad_input),
      cmocka_unit_test(test_topology_accessors_reject_bad_indices),
      cmocka_unit_test(test_topology_real_machine),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
