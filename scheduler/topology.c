/*
 * Topology snapshots (read once with hwloc) and placement plans.
 *
 * Loading flattens hwloc's tree into one record per PU (its core, L3 group,
 * NUMA node and package, by logical index) plus a node distance matrix.
 * Planning then works on those arrays alone, which keeps it a pure and
 * testable function: the same topology and configuration always give the
 * same plan, on any machine, synthetic ones included.
 */
#include "scheduler/topology.h"

#include <hwloc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/error.h"

/* ---- loading ------------------------------------------------------------- */

/* The logical index of pu's ancestor of a type, or fallback. */
static uint32_t ancestor(hwloc_topology_t hw, hwloc_obj_t pu,
                         hwloc_obj_type_t type, uint32_t fallback) {
  hwloc_obj_t a = hwloc_get_ancestor_obj_by_type(hw, type, pu);
  return a ? a->logical_index : fallback;
}

/* The logical NUMA node whose CPUs include pu (hwloc 2 hangs nodes off
 * the tree as memory children, so look them up by cpuset). */
static uint32_t node_of(hwloc_topology_t hw, hwloc_obj_t pu) {
  hwloc_obj_t n = NULL;
  while ((n = hwloc_get_next_obj_by_type(hw, HWLOC_OBJ_NUMANODE, n)))
    if (n->cpuset && hwloc_bitmap_isset(n->cpuset, pu->os_index))
      return n->logical_index;
  return 0;
}

/* Reads a decimal number (at most 2^20); false when there is none. */
static bool read_cpu(const char **s, unsigned *out) {
  const char *p = *s;
  unsigned v = 0;
  if (*p < '0' || *p > '9')
    return false;
  while (*p >= '0' && *p <= '9') {
    v = v * 10 + (unsigned)(*p++ - '0');
    if (v > (1u << 20))
      return false;
  }
  *s = p;
  *out = v;
  return true;
}

/*
 * Parses a decimal CPU list ("0-5,8,10-11") into set. Done here rather than
 * with hwloc_bitmap_list_sscanf(), which reads numbers in any base and
 * skips stray characters: "010" would mean CPU 8, and a typo must be an
 * error, not a different CPU.
 */
static bool parse_list(const char *s, hwloc_bitmap_t set) {
  for (;;) {
    unsigned a, b;
    if (!read_cpu(&s, &a))
      return false;
    b = a;
    if (*s == '-') {
      s++;
      if (!read_cpu(&s, &b) || b < a)
        return false;
    }
    hwloc_bitmap_set_range(set, a, (int)b);
    if (*s == 0)
      return true;
    if (*s++ != ',')
      return false;
  }
}

static int restrict_to(hwloc_topology_t hw, const char *list) {
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (!set)
    return WEFT_ENOMEM;
  int rc = parse_list(list, set) ? 0 : WEFT_EINVAL;
  if (rc == 0)
    hwloc_bitmap_and(set, set, hwloc_topology_get_topology_cpuset(hw));
  if (rc == 0 && hwloc_bitmap_iszero(set))
    rc = WEFT_EINVAL;
  if (rc == 0 && hwloc_topology_restrict(hw, set, 0) != 0)
    rc = WEFT_EINVAL;
  hwloc_bitmap_free(set);
  return rc;
}

/* Renumbers the values f(pu) densely in order of first appearance, so that
 * counts and indices stay small after a restriction removed objects. */
static uint32_t densify(weft_pu_info_t *pus, uint32_t n, size_t field) {
  uint32_t *map = malloc(sizeof(uint32_t) * (n + 1));
  uint32_t *seen = malloc(sizeof(uint32_t) * (n + 1));
  uint32_t count = 0;
  if (!map || !seen) {
    free(map);
    free(seen);
    return 0;
  }
  for (uint32_t i = 0; i < n; i++) {
    uint32_t *v = (uint32_t *)((char *)&pus[i] + field);
    uint32_t k = 0;
    while (k < count && seen[k] != *v)
      k++;
    if (k == count)
      seen[count++] = *v;
    *v = k;
  }
  free(map);
  free(seen);
  return count;
}

static void fill_distances(weft_topology_t *t, const uint32_t *node_os,
                           const uint32_t *node_pkg) {
  uint32_t n = t->info.numa_nodes;
  for (uint32_t a = 0; a < n; a++)
    for (uint32_t b = 0; b < n; b++)
      t->dist[a * n + b] = a == b ? 10 : node_pkg[a] == node_pkg[b] ? 16 : 20;
  /* The machine's own report wins where there is one. */
  unsigned nr = 1;
  struct hwloc_distances_s *d = NULL;
  if (hwloc_distances_get_by_type(t->hw, HWLOC_OBJ_NUMANODE, &nr, &d,
                                  HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) != 0 ||
      nr == 0)
    return;
  /* Scaled so that a node's distance to itself reads 10. */
  unsigned nb = d->nbobjs;
  for (uint32_t a = 0; a < n; a++)
    for (uint32_t b = 0; b < n; b++)
      for (unsigned i = 0; i < nb; i++)
        for (unsigned j = 0; j < nb; j++)
          if (node_os[a] == d->objs[i]->os_index &&
              node_os[b] == d->objs[j]->os_index && d->values[i * nb + i])
            t->dist[a * n + b] =
                (uint32_t)(d->values[i * nb + j] * 10 / d->values[i * nb + i]);
  hwloc_distances_release(t->hw, d);
}

/* Flattens the loaded hwloc topology into per-PU records. */
static int flatten(weft_topology_t *t) {
  hwloc_topology_t hw = t->hw;
  int n = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_PU);
  if (n <= 0)
    return WEFT_EINVAL;
  t->pus = calloc((size_t)n, sizeof(*t->pus));
  uint32_t *node_os = calloc((size_t)n, sizeof(uint32_t));
  uint32_t *node_pkg = calloc((size_t)n, sizeof(uint32_t));
  if (!t->pus || !node_os || !node_pkg) {
    free(node_os);
    free(node_pkg);
    return WEFT_ENOMEM;
  }
  t->npus = (uint32_t)n;
  for (int i = 0; i < n; i++) {
    hwloc_obj_t pu = hwloc_get_obj_by_type(hw, HWLOC_OBJ_PU, (unsigned)i);
    weft_pu_info_t *p = &t->pus[i];
    p->pu = (uint32_t)i;
    p->os_pu = pu->os_index;
    p->node = node_of(hw, pu);
    p->package = ancestor(hw, pu, HWLOC_OBJ_PACKAGE, 0);
    p->core = ancestor(hw, pu, HWLOC_OBJ_CORE, pu->logical_index);
    /* Without an L3 cache, the node is the nearest shared level. */
    p->l3 = ancestor(hw, pu, HWLOC_OBJ_L3CACHE, UINT32_MAX);
    if (p->l3 == UINT32_MAX)
      p->l3 = 0x80000000u | p->node;
  }
  /* Keep each node's OS index (for distances) before renumbering. */
  hwloc_obj_t node = NULL;
  uint32_t raw_nodes = 0;
  while ((node = hwloc_get_next_obj_by_type(hw, HWLOC_OBJ_NUMANODE, node)))
    raw_nodes++;
  uint32_t *raw_os = calloc(raw_nodes + 1, sizeof(uint32_t));
  if (!raw_os) {
    free(node_os);
    free(node_pkg);
    return WEFT_ENOMEM;
  }
  node = NULL;
  for (uint32_t k = 0;
       (node = hwloc_get_next_obj_by_type(hw, HWLOC_OBJ_NUMANODE, node)); k++)
    raw_os[k] = node->os_index;
  uint32_t *raw_node = calloc((size_t)n, sizeof(uint32_t));
  if (!raw_node) {
    free(raw_os);
    free(node_os);
    free(node_pkg);
    return WEFT_ENOMEM;
  }
  for (int i = 0; i < n; i++)
    raw_node[i] = t->pus[i].node;
  t->info.pus = (uint32_t)n;
  t->info.cores = densify(t->pus, t->npus, offsetof(weft_pu_info_t, core));
  t->info.l3_groups = densify(t->pus, t->npus, offsetof(weft_pu_info_t, l3));
  t->info.numa_nodes = densify(t->pus, t->npus, offsetof(weft_pu_info_t, node));
  t->info.packages =
      densify(t->pus, t->npus, offsetof(weft_pu_info_t, package));
  for (int i = 0; i < n; i++) {
    node_os[t->pus[i].node] = raw_os[raw_node[i]];
    node_pkg[t->pus[i].node] = t->pus[i].package;
  }
  free(raw_os);
  free(raw_node);
  int rc = 0;
  if (t->info.numa_nodes > WEFT_TOPOLOGY_MAX_NODES)
    rc = WEFT_ELIMIT;
  t->dist = rc ? NULL
               : calloc((size_t)t->info.numa_nodes * t->info.numa_nodes,
                        sizeof(uint32_t));
  if (!rc && !t->dist)
    rc = WEFT_ENOMEM;
  if (!rc)
    fill_distances(t, node_os, node_pkg);
  free(node_os);
  free(node_pkg);
  return rc;
}

int weft_topology_load(const char *synthetic, const char *restrict_pus,
                       weft_topology_t **out) {
  if (!out)
    return WEFT_EINVAL;
  *out = NULL;
  weft_topology_t *t = calloc(1, sizeof(*t));
  if (!t)
    return WEFT_ENOMEM;
  int rc = hwloc_topology_init(&t->hw) == 0 ? 0 : WEFT_ENOMEM;
  if (rc) {
    free(t);
    return rc;
  }
  if (synthetic && hwloc_topology_set_synthetic(t->hw, synthetic) != 0)
    rc = WEFT_EINVAL;
  if (!rc && hwloc_topology_load(t->hw) != 0)
    rc = WEFT_EINVAL;
  t->synthetic = synthetic != NULL;
  if (!rc && restrict_pus)
    rc = restrict_to(t->hw, restrict_pus);
  if (!rc)
    rc = flatten(t);
  if (rc) {
    weft_topology_destroy(t);
    return rc;
  }
  *out = t;
  return 0;
}

void weft_topology_destroy(weft_topology_t *t) {
  if (!t)
    return;
  if (t->hw)
    hwloc_topology_destroy(t->hw);
  free(t->pus);
  free(t->dist);
  free(t);
}

void weft_topology_info(const weft_topology_t *t, weft_topology_info_t *out) {
  if (!out)
    return;
  memset(out, 0, sizeof(*out));
  if (t)
    *out = t->info;
}

const weft_pu_info_t *weft_topology_pu(const weft_topology_t *t, uint32_t i) {
  return t && i < t->npus ? &t->pus[i] : NULL;
}

uint32_t weft_topology_distance(const weft_topology_t *t, uint32_t a,
                                uint32_t b) {
  uint32_t n = t ? t->info.numa_nodes : 0;
  if (a >= n || b >= n)
    return 0;
  return t->dist[a * n + b];
}
