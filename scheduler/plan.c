/*
 * Placement plans: a pure function from (topology, configuration) to where
 * each worker runs, which workers share a NUMA node and in which order each
 * worker looks for work to steal.
 *
 * Workers take cores first and hardware threads second, so that a pool of
 * one worker per core never puts two workers on one core; within a round
 * they alternate between the allowed NUMA nodes, so that a pool smaller
 * than the machine still has workers next to every node's memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/topology.h"
#include "weft/error.h"

/* ---- slots: the order in which workers take PUs -------------------------- */

/* The rank of each allowed PU within its core (0 for the first PU), or
 * UINT32_MAX for PUs outside the node mask. Returns the largest rank + 1. */
static uint32_t pu_ranks(const weft_topology_t *t, uint64_t mask,
                         uint32_t *rank) {
  uint32_t rounds = 0;
  for (uint32_t i = 0; i < t->npus; i++) {
    const weft_pu_info_t *p = &t->pus[i];
    rank[i] = UINT32_MAX;
    if (mask && !(p->node < 64 && (mask >> p->node & 1)))
      continue;
    uint32_t r = 0;
    for (uint32_t j = 0; j < i; j++)
      r += rank[j] != UINT32_MAX && t->pus[j].core == p->core;
    rank[i] = r;
    if (r + 1 > rounds)
      rounds = r + 1;
  }
  return rounds;
}

/*
 * Lists the allowed PUs in the order workers take them: round r holds the
 * r-th PU of every core; inside a round, nodes take turns, each in its own
 * core order. Returns the number of slots.
 */
static uint32_t make_slots(const weft_topology_t *t, const uint32_t *rank,
                           uint32_t rounds, uint32_t *slots) {
  uint32_t n = 0, nodes = t->info.numa_nodes;
  uint32_t *cursor = calloc(nodes ? nodes : 1, sizeof(uint32_t));
  if (!cursor)
    return 0;
  for (uint32_t r = 0; r < rounds; r++) {
    memset(cursor, 0, nodes * sizeof(uint32_t));
    for (bool any = true; any;) {
      any = false;
      for (uint32_t node = 0; node < nodes; node++) {
        /* This node's next PU of rank r, from where it stopped. */
        uint32_t i = cursor[node];
        while (i < t->npus && !(t->pus[i].node == node && rank[i] == r))
          i++;
        cursor[node] = i < t->npus ? i + 1 : t->npus;
        if (i < t->npus) {
          slots[n++] = i;
          any = true;
        }
      }
    }
  }
  free(cursor);
  return n;
}

/* ---- steal order -----------------------------------------------------------
 */

typedef struct steal_key_t {
  uint32_t cls;  /* 0 same core, 1 same L3, 2 same node, 3 another node */
  uint32_t dist; /* NUMA distance */
  uint32_t rot;  /* (v - w) mod n: spreads thieves over victims */
  uint32_t v;
} steal_key_t;

static int key_cmp(const void *pa, const void *pb) {
  const steal_key_t *a = pa, *b = pb;
  if (a->cls != b->cls)
    return a->cls < b->cls ? -1 : 1;
  if (a->dist != b->dist)
    return a->dist < b->dist ? -1 : 1;
  return (a->rot > b->rot) - (a->rot < b->rot);
}

static void steal_order(const weft_topology_t *t, const weft_plan_t *p,
                        uint32_t w, steal_key_t *keys, uint32_t *out) {
  const weft_pu_info_t *me = &p->place[w];
  uint32_t n = p->workers, k = 0, nodes = t->info.numa_nodes;
  for (uint32_t v = 0; v < n; v++) {
    if (v == w)
      continue;
    const weft_pu_info_t *o = &p->place[v];
    steal_key_t *key = &keys[k++];
    key->cls = o->core == me->core   ? 0
               : o->l3 == me->l3     ? 1
               : o->node == me->node ? 2
                                     : 3;
    key->dist = t->dist[me->node * nodes + o->node];
    key->rot = (v + n - w) % n;
    key->v = v;
  }
  qsort(keys, k, sizeof(*keys), key_cmp);
  for (uint32_t i = 0; i < k; i++)
    out[i] = keys[i].v;
}

/* ---- groups
 * ------------------------------------------------------------------ */

static int make_groups(const weft_topology_t *t, weft_plan_t *p) {
  uint32_t nodes = t->info.numa_nodes, n = p->workers;
  p->group_node = calloc(nodes, sizeof(uint32_t));
  p->group_start = calloc(nodes + 1, sizeof(uint32_t));
  p->group_members = calloc(n, sizeof(uint32_t));
  if (!p->group_node || !p->group_start || !p->group_members)
    return WEFT_ENOMEM;
  uint32_t m = 0;
  for (uint32_t node = 0; node < nodes; node++) {
    uint32_t first = m;
    for (uint32_t w = 0; w < n; w++)
      if (p->place[w].node == node) {
        p->group_members[m++] = w;
        p->group_of[w] = p->ngroups;
      }
    if (m > first) {
      p->group_node[p->ngroups] = node;
      p->group_start[p->ngroups++] = first;
    }
  }
  p->group_start[p->ngroups] = m;
  return 0;
}

/* ---- the plan --------------------------------------------------------------
 */

static int fill_plan(const weft_topology_t *t,
                     const weft_placement_config_t *cfg, weft_plan_t *p) {
  uint32_t *rank = calloc(t->npus, sizeof(uint32_t));
  uint32_t *slots = calloc(t->npus, sizeof(uint32_t));
  int rc = rank && slots ? 0 : WEFT_ENOMEM;
  uint32_t rounds = rc ? 0 : pu_ranks(t, cfg->node_mask, rank);
  uint32_t nslots = rounds ? make_slots(t, rank, rounds, slots) : 0;
  if (!rc && nslots == 0)
    rc = WEFT_EINVAL; /* the node mask leaves nothing */
  if (!rc) {
    /* By default one worker per core: the slots of round 0. */
    uint32_t cores = 0;
    for (uint32_t i = 0; i < t->npus; i++)
      cores += rank[i] == 0;
    p->workers = cfg->workers ? cfg->workers : cores;
    p->place = calloc(p->workers, sizeof(*p->place));
    p->group_of = calloc(p->workers, sizeof(uint32_t));
    p->steal =
        calloc((size_t)p->workers * (p->workers - 1) + 1, sizeof(uint32_t));
    if (!p->place || !p->group_of || !p->steal)
      rc = WEFT_ENOMEM;
  }
  for (uint32_t w = 0; !rc && w < p->workers; w++)
    p->place[w] = t->pus[slots[w % nslots]];
  free(rank);
  free(slots);
  if (!rc)
    rc = make_groups(t, p);
  steal_key_t *keys = rc ? NULL : calloc(p->workers, sizeof(*keys));
  if (!rc && !keys)
    rc = WEFT_ENOMEM;
  for (uint32_t w = 0; !rc && w < p->workers; w++)
    steal_order(t, p, w, keys, p->steal + (size_t)w * (p->workers - 1));
  free(keys);
  return rc;
}

int weft_plan_compute(const weft_topology_t *t,
                      const weft_placement_config_t *config,
                      weft_plan_t **out) {
  if (out)
    *out = NULL;
  if (!t || !out)
    return WEFT_EINVAL;
  weft_placement_config_t cfg = {0};
  if (config)
    cfg = *config;
  if ((unsigned)cfg.pin > WEFT_PIN_NONE || cfg.workers > 65536)
    return WEFT_EINVAL;
  weft_plan_t *p = calloc(1, sizeof(*p));
  if (!p)
    return WEFT_ENOMEM;
  p->pin = cfg.pin;
  p->caller = cfg.caller_participates;
  p->bind_caller = cfg.caller_participates && cfg.bind_caller;
  int rc = fill_plan(t, &cfg, p);
  if (rc) {
    weft_plan_destroy(p);
    return rc;
  }
  *out = p;
  return 0;
}

void weft_plan_destroy(weft_plan_t *p) {
  if (!p)
    return;
  free(p->place);
  free(p->group_of);
  free(p->group_node);
  free(p->group_start);
  free(p->group_members);
  free(p->steal);
  free(p);
}

uint32_t weft_plan_workers(const weft_plan_t *p) {
  return p ? p->workers : 0;
}

const weft_pu_info_t *weft_plan_place(const weft_plan_t *p, uint32_t w) {
  return p && w < p->workers ? &p->place[w] : NULL;
}

bool weft_plan_bound(const weft_plan_t *p, uint32_t w) {
  return p && w < p->workers && p->pin != WEFT_PIN_NONE &&
         !(p->caller && w == 0 && !p->bind_caller);
}

uint32_t weft_plan_groups(const weft_plan_t *p) {
  return p ? p->ngroups : 0;
}

uint32_t weft_plan_group(const weft_plan_t *p, uint32_t g, uint32_t *node,
                         const uint32_t **workers) {
  if (!p || g >= p->ngroups)
    return 0;
  if (node)
    *node = p->group_node[g];
  if (workers)
    *workers = p->group_members + p->group_start[g];
  return p->group_start[g + 1] - p->group_start[g];
}

uint32_t weft_plan_group_of(const weft_plan_t *p, uint32_t w) {
  return p && w < p->workers ? p->group_of[w] : UINT32_MAX;
}

uint32_t weft_plan_steal_order(const weft_plan_t *p, uint32_t w,
                               const uint32_t **order) {
  if (!p || w >= p->workers)
    return 0;
  if (order)
    *order = p->steal + (size_t)w * (p->workers - 1);
  return p->workers - 1;
}

/* ---- binding
 * ----------------------------------------------------------------- */

int weft__plan_bind(const weft_topology_t *t, const weft_plan_t *p,
                    uint32_t w) {
  if (!weft_plan_bound(p, w) || t->synthetic)
    return 0;
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (!set)
    return WEFT_ENOMEM;
  const weft_pu_info_t *me = &p->place[w];
  for (uint32_t i = 0; i < t->npus; i++) {
    bool take = p->pin == WEFT_PIN_PU ? t->pus[i].pu == me->pu
                                      : t->pus[i].core == me->core;
    if (take)
      hwloc_bitmap_set(set, t->pus[i].os_pu);
  }
  int rc = hwloc_set_cpubind(t->hw, set, HWLOC_CPUBIND_THREAD) == 0
               ? 0
               : WEFT_EINVAL;
  hwloc_bitmap_free(set);
  return rc;
}

int weft__plan_bind_caller(const weft_topology_t *t, const weft_plan_t *p,
                           void **saved) {
  *saved = NULL;
  if (!p->bind_caller || !weft_plan_bound(p, 0) || t->synthetic)
    return 0;
  hwloc_bitmap_t prev = hwloc_bitmap_alloc();
  if (!prev)
    return WEFT_ENOMEM;
  if (hwloc_get_cpubind(t->hw, prev, HWLOC_CPUBIND_THREAD) != 0) {
    hwloc_bitmap_free(prev);
    return WEFT_EINVAL;
  }
  int rc = weft__plan_bind(t, p, 0);
  if (rc) {
    hwloc_bitmap_free(prev);
    return rc;
  }
  *saved = prev;
  return 0;
}

void weft__plan_unbind(const weft_topology_t *t, void *saved) {
  if (!saved)
    return;
  (void)hwloc_set_cpubind(t->hw, saved, HWLOC_CPUBIND_THREAD);
  hwloc_bitmap_free(saved);
}

void weft__plan_saved_free(void *saved) {
  if (saved)
    hwloc_bitmap_free(saved);
}

/* ---- description ------------------------------------------------------------
 */

/* snprintf into a running buffer, counting what the full text needs. */
#define OUT(...)                                                               \
  do {                                                                         \
    int n_ = snprintf(buf + (len < size ? len : size),                         \
                      len < size ? size - len : 0, __VA_ARGS__);               \
    if (n_ > 0)                                                                \
      len += (uint32_t)n_;                                                     \
  } while (0)

int weft_plan_describe(const weft_topology_t *t, const weft_plan_t *p,
                       char *buf, uint32_t size) {
  if (!t || (!buf && size))
    return 0;
  uint32_t len = 0;
  const weft_topology_info_t *in = &t->info;
  OUT("topology: %u package(s), %u NUMA node(s), %u L3 group(s), %u core(s), "
      "%u PU(s)%s\n",
      in->packages, in->numa_nodes, in->l3_groups, in->cores, in->pus,
      t->synthetic ? " (synthetic)" : "");
  OUT("distances:");
  for (uint32_t a = 0; a < in->numa_nodes; a++) {
    OUT("%s", a ? " |" : "");
    for (uint32_t b = 0; b < in->numa_nodes; b++)
      OUT(" %u", t->dist[a * in->numa_nodes + b]);
  }
  OUT("\n");
  if (!p)
    return (int)len;
  static const char *const pins[] = {"core", "pu", "none"};
  OUT("plan: %u worker(s), pin %s%s\n", p->workers, pins[p->pin],
      p->bind_caller ? ", caller is worker 0 (bound)"
      : p->caller    ? ", caller is worker 0"
                     : "");
  for (uint32_t w = 0; w < p->workers; w++) {
    const weft_pu_info_t *pl = &p->place[w];
    OUT("  worker %u: pu %u (cpu %u) core %u l3 %u node %u package %u%s; "
        "steals from",
        w, pl->pu, pl->os_pu, pl->core, pl->l3, pl->node, pl->package,
        weft_plan_bound(p, w) ? "" : " (unbound)");
    const uint32_t *order;
    uint32_t n = weft_plan_steal_order(p, w, &order);
    for (uint32_t i = 0; i < n; i++)
      OUT(" %u", order[i]);
    OUT("\n");
  }
  for (uint32_t g = 0; g < p->ngroups; g++) {
    const uint32_t *ws;
    uint32_t node, n = weft_plan_group(p, g, &node, &ws);
    OUT("  group %u (node %u):", g, node);
    for (uint32_t i = 0; i < n; i++)
      OUT(" %u", ws[i]);
    OUT("\n");
  }
  return (int)len;
}
