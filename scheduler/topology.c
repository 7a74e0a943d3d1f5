/* SPDX-License-Identifier: MIT */
/*
 * Topology snapshots (read once with hwloc) and placement plans.
 *
 * Loading flattens hwloc's tree into one record per PU (its core, L3 group,
 * NUMA node and package, by dense index) plus, per node, the memory it
 * binds to. Planning then works on those arrays alone, which keeps it a
 * pure and testable function: the same topology and configuration always
 * give the same plan, on any machine, synthetic ones included.
 *
 * weft's nodes are not hwloc's NUMA nodes one for one. A PU may lie in the
 * CPU sets of several NUMA nodes (KNL's DRAM and MCDRAM in SNC modes, HBM,
 * NVM or CXL tiers, Cluster-on-Die exports without groups) or of none (an
 * offline node, a cpuset that left the node's memory out). So each core
 * gets the set of NUMA nodes it should take memory from: the ordinary ones
 * among those local to it, else the local ones other than NVM, else all
 * local ones; the cores with the same set form one weft node, and cores
 * with no local NUMA node form one memoryless node per package. Every
 * count and search here is near-linear: machines of thousands of PUs and
 * hundreds of NUMA nodes load in milliseconds.
 */
#include "scheduler/topology.h"

#include <hwloc.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/error.h"

/* ---- load errors ----------------------------------------------------------
 */

/* Where a failed load says what it rejected (weft_topology_load_ex()); a
 * NULL buffer or size 0 discards the text. */
typedef struct load_err_t {
  char *buf;
  uint32_t size;
} load_err_t;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
say(const load_err_t *err, const char *fmt, ...) {
  if (!err || !err->buf || err->size == 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->buf, err->size, fmt, ap);
  va_end(ap);
}

/* "CPU 5 is" or "CPUs 5-9 are": set as a list, with the verb agreeing. */
static void cpus_text(hwloc_const_bitmap_t set, char *out, size_t size) {
  char list[256];
  if (hwloc_bitmap_list_snprintf(list, sizeof list, set) < 0)
    snprintf(list, sizeof list, "?");
  bool one = hwloc_bitmap_weight(set) == 1;
  snprintf(out, size, "%s %s %s", one ? "CPU" : "CPUs", list,
           one ? "is" : "are");
}

/* Says why restricting to @p want left nothing: none of its CPUs is on the
 * machine (@p machine), or those that are lie outside the CPUs already
 * kept (@p kept: the process's binding). */
static void say_no_cpus(const load_err_t *err, hwloc_const_bitmap_t want,
                        hwloc_const_bitmap_t machine, hwloc_const_bitmap_t kept,
                        bool foreign) {
  char what[320], has[256];
  cpus_text(want, what, sizeof what);
  if (!hwloc_bitmap_intersects(want, machine)) {
    if (hwloc_bitmap_list_snprintf(has, sizeof has, machine) < 0)
      snprintf(has, sizeof has, "?");
    say(err, "%s not %s (it has %s)", what,
        foreign ? "in this topology" : "on this machine", has);
  } else {
    if (hwloc_bitmap_list_snprintf(has, sizeof has, kept) < 0)
      snprintf(has, sizeof has, "?");
    say(err, "%s outside the CPUs this process may run on (%s)", what, has);
  }
}

/* ---- CPU lists ------------------------------------------------------------
 */

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

/* Keeps only the PUs of set (which it may change); WEFT_EINVAL when none
 * would be left. */
static int restrict_set(hwloc_topology_t hw, hwloc_bitmap_t set) {
  hwloc_bitmap_and(set, set, hwloc_topology_get_topology_cpuset(hw));
  if (hwloc_bitmap_iszero(set))
    return WEFT_EINVAL;
  if (hwloc_bitmap_isequal(set, hwloc_topology_get_topology_cpuset(hw)))
    return 0;
  /* A failed restriction leaves hwloc's topology unusable: only memory
   * can make it fail once the set is valid. */
  return hwloc_topology_restrict(hw, set, 0) == 0 ? 0 : WEFT_ENOMEM;
}

static int restrict_to(weft_topology_t *t, const char *list,
                       const load_err_t *err) {
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  hwloc_bitmap_t want = hwloc_bitmap_alloc();
  int rc = set && want ? 0 : WEFT_ENOMEM;
  if (!rc && !parse_list(list, set)) {
    say(err,
        "bad CPU list '%s': expected decimal OS CPU numbers and ranges, "
        "such as 0-3,8",
        list);
    rc = WEFT_EINVAL;
  }
  if (!rc && hwloc_bitmap_copy(want, set) != 0)
    rc = WEFT_ENOMEM;
  if (!rc) {
    rc = restrict_set(t->hw, set);
    if (rc == WEFT_EINVAL)
      say_no_cpus(err, want, t->machine,
                  hwloc_topology_get_topology_cpuset(t->hw), t->foreign);
  }
  hwloc_bitmap_free(want);
  hwloc_bitmap_free(set);
  if (rc == 0)
    t->cpus_from = WEFT__CPUS_RESTRICT;
  return rc;
}

/*
 * Keeps only the PUs the process may run on: taskset, numactl, a cgroup
 * cpuset, a batch scheduler's or mpirun's binding. hwloc already drops
 * what the cgroup forbids, but not a narrower affinity mask. The process's
 * binding is the union of its threads' (a pool's pinned workers stay
 * inside it, so a second pool sees the same mask as the first). Where the
 * binding cannot be read, the whole machine is kept.
 */
static int restrict_to_binding(weft_topology_t *t) {
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (!set)
    return WEFT_ENOMEM;
  int rc = 0;
  if (hwloc_get_cpubind(t->hw, set, HWLOC_CPUBIND_PROCESS) == 0) {
    hwloc_bitmap_and(set, set, hwloc_topology_get_topology_cpuset(t->hw));
    /* A binding outside the CPUs hwloc knows (CPUs hot-unplugged since)
     * leaves nothing to restrict to: keep the machine. */
    if (!hwloc_bitmap_iszero(set) &&
        !hwloc_bitmap_isequal(set, hwloc_topology_get_topology_cpuset(t->hw))) {
      rc = restrict_set(t->hw, set);
      if (rc == 0)
        t->cpus_from = WEFT__CPUS_BINDING;
    }
  }
  hwloc_bitmap_free(set);
  return rc;
}

/* ---- dense numbering ------------------------------------------------------
 */

typedef struct keyed_t {
  uint64_t key;
  uint32_t at;
} keyed_t;

static int keyed_cmp(const void *pa, const void *pb) {
  const keyed_t *a = pa, *b = pb;
  if (a->key != b->key)
    return a->key < b->key ? -1 : 1;
  return (a->at > b->at) - (a->at < b->at);
}

static int first_cmp(const void *pa, const void *pb) {
  const keyed_t *a = pa, *b = pb;
  return (a->key > b->key) - (a->key < b->key);
}

/*
 * Numbers the n keys densely in order of first appearance (so that counts
 * and indices stay small after a restriction removed objects): ids[i] is
 * the number of keys[i]. Returns the count of distinct keys, or 0 when out
 * of memory. O(n log n).
 */
static uint32_t densify(const uint64_t *keys, uint32_t n, uint32_t *ids) {
  keyed_t *k = malloc(sizeof(*k) * (n + 1));
  keyed_t *firsts = malloc(sizeof(*firsts) * (n + 1));
  uint32_t *rank = malloc(sizeof(uint32_t) * (n + 1));
  uint32_t groups = 0;
  if (k && firsts && rank) {
    for (uint32_t i = 0; i < n; i++)
      k[i] = (keyed_t){keys[i], i};
    qsort(k, n, sizeof(*k), keyed_cmp);
    /* Each run of one key: its first appearance, and its run number. */
    for (uint32_t i = 0; i < n; i++)
      if (i == 0 || k[i].key != k[i - 1].key) {
        firsts[groups] = (keyed_t){k[i].at, groups};
        groups++;
      }
    qsort(firsts, groups, sizeof(*firsts), first_cmp);
    for (uint32_t g = 0; g < groups; g++)
      rank[firsts[g].at] = g;
    for (uint32_t i = 0, g = 0; i < n; i++) {
      if (i > 0 && k[i].key != k[i - 1].key)
        g++;
      ids[k[i].at] = rank[g];
    }
  }
  free(k);
  free(firsts);
  free(rank);
  return groups;
}

/* ---- the NUMA nodes a core takes memory from ------------------------------
 */

/* Ordinary memory: hwloc's default nodeset where this hwloc has one, else
 * the nodes hwloc calls DRAM or gives no kind (ordinary memory, on
 * machines with one kind). */
static bool *ordinary_nodes(hwloc_topology_t hw, uint32_t nnodes) {
  bool *ord = calloc(nnodes + 1, sizeof(bool));
  if (!ord)
    return NULL;
#if HWLOC_API_VERSION >= 0x00020c00
  hwloc_nodeset_t def = hwloc_bitmap_alloc();
  if (def && hwloc_topology_get_default_nodeset(hw, def, 0) == 0) {
    hwloc_obj_t n = NULL;
    while ((n = hwloc_get_next_obj_by_type(hw, HWLOC_OBJ_NUMANODE, n)))
      ord[n->logical_index] = hwloc_bitmap_isset(def, n->os_index);
    hwloc_bitmap_free(def);
    return ord;
  }
  hwloc_bitmap_free(def);
#endif
  hwloc_obj_t n = NULL;
  while ((n = hwloc_get_next_obj_by_type(hw, HWLOC_OBJ_NUMANODE, n)))
    ord[n->logical_index] = !n->subtype || !strcmp(n->subtype, "DRAM");
  return ord;
}

static bool slow_node(hwloc_obj_t n) {
  return n->subtype && !strcmp(n->subtype, "NVM");
}

/* A candidate key for a weft node: the NUMA nodes (logical indices,
 * ascending), or none and the package. */
typedef struct node_key_t {
  const uint32_t *nodes;
  uint32_t count;
  uint32_t package; /* only for count == 0 */
} node_key_t;

static uint64_t key_hash(const node_key_t *k) {
  uint64_t h = 1469598103934665603ull ^ k->count;
  for (uint32_t i = 0; i < k->count; i++)
    h = (h ^ k->nodes[i]) * 1099511628211ull;
  if (k->count == 0)
    h = (h ^ k->package) * 1099511628211ull;
  return h ^ (h >> 29);
}

/* Work space for flatten(): what every PU's local NUMA nodes are. */
typedef struct locals_t {
  uint32_t *start; /* per PU (logical), + 1 */
  uint32_t *nodes; /* NUMA node logical indices, ascending per PU */
  hwloc_obj_t *node_obj;
  uint32_t nnodes;
} locals_t;

static void locals_free(locals_t *l) {
  free(l->start);
  free(l->nodes);
  free(l->node_obj);
}

/* Every PU's local NUMA nodes: those whose CPU set holds it. Costs the
 * sum of the nodes' CPU counts. */
static int find_locals(const weft_topology_t *t, const uint32_t *os_to_pu,
                       uint32_t max_os, locals_t *l) {
  hwloc_topology_t hw = t->hw;
  int nn = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_NUMANODE);
  l->nnodes = nn > 0 ? (uint32_t)nn : 0;
  l->start = calloc((size_t)t->npus + 1, sizeof(uint32_t));
  l->node_obj = calloc((size_t)l->nnodes + 1, sizeof(hwloc_obj_t));
  if (!l->start || !l->node_obj)
    return WEFT_ENOMEM;
  /* Two passes: count, then fill (nodes in logical order, so that each
   * PU's list comes out ascending). */
  for (int pass = 0; pass < 2; pass++) {
    uint32_t *fill = NULL;
    if (pass == 1) {
      for (uint32_t i = 0; i < t->npus; i++)
        l->start[i + 1] += l->start[i];
      l->nodes = malloc(sizeof(uint32_t) * (l->start[t->npus] + 1));
      fill = calloc((size_t)t->npus + 1, sizeof(uint32_t));
      if (!l->nodes || !fill) {
        free(fill);
        return WEFT_ENOMEM;
      }
    }
    hwloc_obj_t n = NULL;
    while ((n = hwloc_get_next_obj_by_type(hw, HWLOC_OBJ_NUMANODE, n))) {
      l->node_obj[n->logical_index] = n;
      if (!n->cpuset)
        continue;
      int os;
      hwloc_bitmap_foreach_begin(os, n->cpuset) {
        if ((unsigned)os > max_os)
          break;
        uint32_t pu = os_to_pu[os];
        if (pu == UINT32_MAX)
          continue;
        if (pass == 0)
          l->start[pu + 1]++;
        else
          l->nodes[l->start[pu] + fill[pu]++] = n->logical_index;
      }
      hwloc_bitmap_foreach_end();
    }
    free(fill);
  }
  return 0;
}

/*
 * Chooses pu's memory among its local nodes into out (returns the count):
 * the ordinary ones, else all but the slow (NVM) ones, else all.
 */
static uint32_t choose_memory(const locals_t *l, const bool *ordinary,
                              uint32_t pu, uint32_t *out) {
  const uint32_t *loc = l->nodes + l->start[pu];
  uint32_t n = l->start[pu + 1] - l->start[pu], k = 0;
  for (uint32_t i = 0; i < n; i++)
    if (ordinary[loc[i]])
      out[k++] = loc[i];
  for (uint32_t i = 0; k == 0 && i < n; i++)
    if (!slow_node(l->node_obj[loc[i]]))
      out[k++] = loc[i];
  for (uint32_t i = 0; k == 0 && i < n; i++)
    out[k++] = loc[i];
  return k;
}

static int u32_cmp(const void *pa, const void *pb) {
  uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
  return (a > b) - (a < b);
}

/*
 * Numbers weft's nodes: one per distinct memory choice of a core, in
 * order of first appearance. node_of_core[c] gets core c's node; the
 * nodes' hwloc NUMA nodes (logical) land in *dom_start / *dom_nodes.
 * Returns the node count, or 0 when out of memory.
 */
static uint32_t number_nodes(const weft_topology_t *t, const locals_t *l,
                             const bool *ordinary, const uint32_t *core_first,
                             uint32_t cores, uint32_t *node_of_core,
                             uint32_t **dom_start, uint32_t **dom_nodes) {
  uint32_t cap = 16;
  while (cap < 2 * cores + 2)
    cap *= 2;
  uint32_t *table = malloc(sizeof(uint32_t) * cap);
  uint32_t *start = calloc((size_t)cores + 2, sizeof(uint32_t));
  uint32_t *nodes = malloc(sizeof(uint32_t) * (l->start[t->npus] + 1));
  uint32_t *pkg = malloc(sizeof(uint32_t) * ((size_t)cores + 1));
  uint32_t *pick = malloc(sizeof(uint32_t) * (l->nnodes + 1));
  uint32_t count = 0;
  if (!table || !start || !nodes || !pkg || !pick)
    goto out;
  memset(table, 0xff, sizeof(uint32_t) * cap);
  for (uint32_t c = 0; c < cores; c++) {
    uint32_t pu = core_first[c];
    node_key_t k = {pick, choose_memory(l, ordinary, pu, pick),
                    t->pus[pu].package};
    uint32_t slot = (uint32_t)key_hash(&k) & (cap - 1), found = UINT32_MAX;
    for (; table[slot] != UINT32_MAX; slot = (slot + 1) & (cap - 1)) {
      uint32_t d = table[slot], dn = start[d + 1] - start[d];
      if (dn == k.count &&
          (dn ? !memcmp(nodes + start[d], k.nodes, dn * sizeof(uint32_t))
              : pkg[d] == k.package)) {
        found = d;
        break;
      }
    }
    if (found == UINT32_MAX) {
      found = count++;
      table[slot] = found;
      memcpy(nodes + start[found], k.nodes, k.count * sizeof(uint32_t));
      start[found + 1] = start[found] + k.count;
      pkg[found] = k.package;
    }
    node_of_core[c] = found;
  }
out:
  free(table);
  free(pkg);
  free(pick);
  if (count == 0) {
    free(start);
    free(nodes);
    return 0;
  }
  *dom_start = start;
  *dom_nodes = nodes;
  return count;
}

/* Fills the nodes' memory records from their hwloc NUMA nodes. */
static int fill_memory(weft_topology_t *t, const locals_t *l,
                       const uint32_t *dom_start, const uint32_t *dom_nodes) {
  uint32_t nodes = t->info.numa_nodes, total = dom_start[nodes];
  t->mem_start = malloc(sizeof(uint32_t) * (nodes + 1));
  t->mem_os = malloc(sizeof(uint32_t) * (total + 1));
  t->node_mem = calloc(nodes, sizeof(hwloc_bitmap_t));
  t->node_bytes = calloc(nodes, sizeof(uint64_t));
  t->node_kind = calloc(nodes, sizeof(char *));
  if (!t->mem_start || !t->mem_os || !t->node_mem || !t->node_bytes ||
      !t->node_kind)
    return WEFT_ENOMEM;
  memcpy(t->mem_start, dom_start, sizeof(uint32_t) * (nodes + 1));
  for (uint32_t d = 0; d < nodes; d++) {
    if (!(t->node_mem[d] = hwloc_bitmap_alloc()))
      return WEFT_ENOMEM;
    uint32_t *os = t->mem_os + dom_start[d],
             n = dom_start[d + 1] - dom_start[d];
    for (uint32_t i = 0; i < n; i++) {
      hwloc_obj_t obj = l->node_obj[dom_nodes[dom_start[d] + i]];
      os[i] = obj->os_index;
      hwloc_bitmap_set(t->node_mem[d], obj->os_index);
      t->node_bytes[d] += obj->attr ? obj->attr->numanode.local_memory : 0;
    }
    qsort(os, n, sizeof(uint32_t), u32_cmp);
    /* The kind of the first by OS index, as os_index[0] names it. */
    for (uint32_t i = 0; i < n; i++) {
      hwloc_obj_t obj = l->node_obj[dom_nodes[dom_start[d] + i]];
      if (obj->os_index == os[0])
        t->node_kind[d] = obj->subtype;
    }
  }
  return 0;
}

static uint32_t fallback_distance(const weft_topology_t *t, uint32_t a,
                                  uint32_t b) {
  return a == b ? 10 : t->node_package[a] == t->node_package[b] ? 16 : 20;
}

/*
 * The machine's NUMA distances, where it reports them, between weft's
 * nodes: for nodes of several hwloc nodes, their nearest pair, scaled so
 * that a hwloc node's distance to itself reads 10. Pairs the report does
 * not cover (memoryless nodes) keep the package-based fallback.
 */
static int fill_distances(weft_topology_t *t, const locals_t *l,
                          const uint32_t *dom_start,
                          const uint32_t *dom_nodes) {
  unsigned nr = 1;
  struct hwloc_distances_s *d = NULL;
  if (hwloc_distances_get_by_type(t->hw, HWLOC_OBJ_NUMANODE, &nr, &d,
                                  HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) != 0 ||
      nr == 0)
    return 0;
  uint32_t n = t->info.numa_nodes;
  unsigned nb = d->nbobjs;
  uint32_t *idx = malloc(sizeof(uint32_t) * (l->nnodes + 1));
  t->dist = malloc(sizeof(uint32_t) * ((size_t)n * n + 1));
  if (!idx || !t->dist) {
    free(idx);
    hwloc_distances_release(t->hw, d);
    return WEFT_ENOMEM;
  }
  /* hwloc node (logical) -> row of the report, UINT32_MAX if absent. */
  memset(idx, 0xff, sizeof(uint32_t) * (l->nnodes + 1));
  for (unsigned i = 0; i < nb; i++)
    if (d->objs[i] && d->objs[i]->logical_index < l->nnodes)
      idx[d->objs[i]->logical_index] = i;
  for (uint32_t a = 0; a < n; a++)
    for (uint32_t b = 0; b < n; b++) {
      uint64_t best = UINT64_MAX;
      for (uint32_t i = dom_start[a]; a != b && i < dom_start[a + 1]; i++)
        for (uint32_t j = dom_start[b]; j < dom_start[b + 1]; j++) {
          uint32_t ri = idx[dom_nodes[i]], rj = idx[dom_nodes[j]];
          if (ri == UINT32_MAX || rj == UINT32_MAX || !d->values[ri * nb + ri])
            continue;
          uint64_t v = d->values[ri * nb + rj] * 10 / d->values[ri * nb + ri];
          if (v < best)
            best = v;
        }
      t->dist[(size_t)a * n + b] = best != UINT64_MAX && best <= UINT32_MAX
                                       ? (uint32_t)best
                                       : fallback_distance(t, a, b);
    }
  free(idx);
  hwloc_distances_release(t->hw, d);
  return 0;
}

/* ---- flattening -----------------------------------------------------------
 */

/* Sets *key to the logical index of pu's ancestor of a type; false when
 * it has none. */
static bool ancestor(hwloc_topology_t hw, hwloc_obj_t pu, hwloc_obj_type_t type,
                     uint64_t *key) {
  hwloc_obj_t a = hwloc_get_ancestor_obj_by_type(hw, type, pu);
  if (a)
    *key = a->logical_index;
  return a != NULL;
}

typedef struct flat_t {
  uint64_t *keys;
  uint32_t *ids;
  uint32_t *os_to_pu;
  uint32_t *core_first;
  uint32_t *node_of_core;
  uint32_t *dom_start, *dom_nodes;
  bool *ordinary;
  locals_t locals;
} flat_t;

static void flat_free(flat_t *f) {
  free(f->keys);
  free(f->ids);
  free(f->os_to_pu);
  free(f->core_first);
  free(f->node_of_core);
  free(f->dom_start);
  free(f->dom_nodes);
  free(f->ordinary);
  locals_free(&f->locals);
}

/* Renumbers one field of every PU from f->keys; false when out of memory. */
static bool number_field(weft_topology_t *t, flat_t *f, size_t field,
                         uint32_t *count) {
  *count = densify(f->keys, t->npus, f->ids);
  for (uint32_t i = 0; i < t->npus; i++)
    *(uint32_t *)((char *)&t->pus[i] + field) = f->ids[i];
  return *count != 0;
}

static int flatten_pus(weft_topology_t *t, flat_t *f) {
  hwloc_topology_t hw = t->hw;
  uint32_t n = t->npus;
  /* Packages, cores, L3 groups: hwloc's logical indices, numbered densely.
   * A PU without a core is its own core, and a core without an L3 its own
   * L3 group: no cache is shared that the machine did not report. */
  static const uint64_t own = UINT64_C(1) << 40;
  for (uint32_t i = 0; i < n; i++) {
    hwloc_obj_t pu = hwloc_get_obj_by_type(hw, HWLOC_OBJ_PU, i);
    if (!ancestor(hw, pu, HWLOC_OBJ_PACKAGE, &f->keys[i]))
      f->keys[i] = 0;
  }
  if (!number_field(t, f, offsetof(weft_pu_info_t, package), &t->info.packages))
    return WEFT_ENOMEM;
  for (uint32_t i = 0; i < n; i++) {
    hwloc_obj_t pu = hwloc_get_obj_by_type(hw, HWLOC_OBJ_PU, i);
    if (!ancestor(hw, pu, HWLOC_OBJ_CORE, &f->keys[i]))
      f->keys[i] = own | pu->logical_index;
  }
  if (!number_field(t, f, offsetof(weft_pu_info_t, core), &t->info.cores))
    return WEFT_ENOMEM;
  for (uint32_t i = 0; i < n; i++) {
    hwloc_obj_t pu = hwloc_get_obj_by_type(hw, HWLOC_OBJ_PU, i);
    if (!ancestor(hw, pu, HWLOC_OBJ_L3CACHE, &f->keys[i]))
      f->keys[i] = own | t->pus[i].core;
  }
  if (!number_field(t, f, offsetof(weft_pu_info_t, l3), &t->info.l3_groups))
    return WEFT_ENOMEM;
  return 0;
}

static int flatten_nodes(weft_topology_t *t, flat_t *f) {
  uint32_t cores = t->info.cores;
  f->core_first = malloc(sizeof(uint32_t) * (cores + 1));
  f->node_of_core = malloc(sizeof(uint32_t) * (cores + 1));
  if (!f->core_first || !f->node_of_core)
    return WEFT_ENOMEM;
  /* Cores are numbered by first appearance: core c's first PU is the
   * first PU whose core is c. */
  for (uint32_t i = t->npus; i-- > 0;)
    f->core_first[t->pus[i].core] = i;
  int rc = find_locals(t, f->os_to_pu, (uint32_t)hwloc_bitmap_last(t->cpus),
                       &f->locals);
  if (rc)
    return rc;
  if (!(f->ordinary = ordinary_nodes(t->hw, f->locals.nnodes)))
    return WEFT_ENOMEM;
  /* A core's PUs take the choice of its first PU, so that a core never
   * straddles two nodes. */
  t->info.numa_nodes =
      number_nodes(t, &f->locals, f->ordinary, f->core_first, cores,
                   f->node_of_core, &f->dom_start, &f->dom_nodes);
  if (t->info.numa_nodes == 0)
    return WEFT_ENOMEM;
  uint32_t nodes = t->info.numa_nodes;
  t->node_package = malloc(sizeof(uint32_t) * (nodes + 1));
  if (!t->node_package)
    return WEFT_ENOMEM;
  for (uint32_t i = 0; i < t->npus; i++)
    t->pus[i].node = f->node_of_core[t->pus[i].core];
  for (uint32_t i = t->npus; i-- > 0;)
    t->node_package[t->pus[i].node] = t->pus[i].package;
  rc = fill_memory(t, &f->locals, f->dom_start, f->dom_nodes);
  if (!rc)
    rc = fill_distances(t, &f->locals, f->dom_start, f->dom_nodes);
  return rc;
}

/* Flattens the loaded hwloc topology into per-PU and per-node records. */
static int flatten(weft_topology_t *t) {
  hwloc_topology_t hw = t->hw;
  int n = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_PU);
  int last = hwloc_bitmap_last(t->cpus);
  if (n <= 0 || last < 0)
    return WEFT_EINVAL;
  t->npus = t->info.pus = (uint32_t)n;
  flat_t f = {0};
  t->pus = calloc((size_t)n, sizeof(*t->pus));
  f.keys = malloc(sizeof(uint64_t) * ((size_t)n + 1));
  f.ids = malloc(sizeof(uint32_t) * ((size_t)n + 1));
  f.os_to_pu = malloc(sizeof(uint32_t) * ((size_t)last + 1));
  int rc = t->pus && f.keys && f.ids && f.os_to_pu ? 0 : WEFT_ENOMEM;
  if (!rc) {
    memset(f.os_to_pu, 0xff, sizeof(uint32_t) * ((size_t)last + 1));
    for (int i = 0; i < n; i++) {
      hwloc_obj_t pu = hwloc_get_obj_by_type(hw, HWLOC_OBJ_PU, (unsigned)i);
      t->pus[i].pu = (uint32_t)i;
      t->pus[i].os_pu = pu->os_index;
      if (pu->os_index <= (unsigned)last)
        f.os_to_pu[pu->os_index] = (uint32_t)i;
    }
    rc = flatten_pus(t, &f);
  }
  if (!rc)
    rc = flatten_nodes(t, &f);
  flat_free(&f);
  return rc;
}

/* ---- loading --------------------------------------------------------------
 */

/* Checks that the XML file can be read, so that a mistyped path is an
 * error naming it rather than whatever hwloc makes of it. */
static int check_xml(const char *xml, const load_err_t *err) {
  FILE *f = fopen(xml, "r");
  if (!f) {
    say(err, "cannot read the XML topology '%s': %s", xml, strerror(errno));
    return WEFT_EINVAL;
  }
  fclose(f);
  return 0;
}

static int load(const char *synthetic, const char *xml,
                const char *restrict_pus, const load_err_t *err,
                weft_topology_t **out) {
  if (!out)
    return WEFT_EINVAL;
  *out = NULL;
  if (synthetic && xml) {
    say(err, "a synthetic description and an XML file exclude each other");
    return WEFT_EINVAL;
  }
  if (xml && check_xml(xml, err))
    return WEFT_EINVAL;
  weft_topology_t *t = calloc(1, sizeof(*t));
  if (!t)
    return WEFT_ENOMEM;
  if (hwloc_topology_init(&t->hw) != 0) {
    free(t);
    return WEFT_ENOMEM;
  }
  int rc = 0;
  if (synthetic && hwloc_topology_set_synthetic(t->hw, synthetic) != 0) {
    say(err,
        "hwloc rejects the synthetic description '%s' (expected levels "
        "such as 'pack:2 numa:2 l3:1 core:8 pu:2')",
        synthetic);
    rc = WEFT_EINVAL;
  }
  if (xml && hwloc_topology_set_xml(t->hw, xml) != 0) {
    say(err, "hwloc cannot read the XML topology '%s'", xml);
    rc = WEFT_EINVAL;
  }
  if (!rc && hwloc_topology_load(t->hw) != 0) {
    say(err, "hwloc cannot load the topology%s%s", xml ? " from " : "",
        xml ? xml : "");
    rc = WEFT_EINVAL;
  }
  if (!rc) {
    /* hwloc knows whether this is the machine we run on: a synthetic
     * description, an XML file (HWLOC_XMLFILE included) is not, unless
     * HWLOC_THISSYSTEM=1 says otherwise. */
    t->foreign = !hwloc_topology_is_thissystem(t->hw);
    t->synthetic = synthetic != NULL;
    t->machine = hwloc_bitmap_dup(hwloc_topology_get_topology_cpuset(t->hw));
    if (!t->machine)
      rc = WEFT_ENOMEM;
  }
  if (!rc && !synthetic && !xml && !t->foreign)
    rc = restrict_to_binding(t);
  if (!rc && restrict_pus)
    rc = restrict_to(t, restrict_pus, err);
  if (!rc) {
    t->cpus = hwloc_bitmap_dup(hwloc_topology_get_topology_cpuset(t->hw));
    rc = t->cpus ? flatten(t) : WEFT_ENOMEM;
    if (rc == WEFT_EINVAL)
      say(err, "the topology has no CPU");
  }
  if (rc == WEFT_ENOMEM)
    say(err, "out of memory");
  if (rc) {
    weft_topology_destroy(t);
    return rc;
  }
  *out = t;
  return 0;
}

int weft_topology_load(const char *synthetic, const char *restrict_pus,
                       weft_topology_t **out) {
  return load(synthetic, NULL, restrict_pus, NULL, out);
}

int weft_topology_load_ex(const weft_topology_load_config_t *cfg,
                          weft_topology_t **out) {
  if (!cfg) {
    if (out)
      *out = NULL;
    return WEFT_EINVAL;
  }
  load_err_t err = {cfg->error, cfg->error_size};
  if (err.buf && err.size)
    err.buf[0] = 0;
  return load(cfg->synthetic, cfg->xml, cfg->restrict_pus, &err, out);
}

int weft_topology_load_xml(const char *path, const char *restrict_pus,
                           weft_topology_t **out) {
  if (!path) {
    if (out)
      *out = NULL;
    return WEFT_EINVAL;
  }
  return load(NULL, path, restrict_pus, NULL, out);
}

void weft_topology_destroy(weft_topology_t *t) {
  if (!t)
    return;
  for (uint32_t d = 0; t->node_mem && d < t->info.numa_nodes; d++)
    if (t->node_mem[d])
      hwloc_bitmap_free(t->node_mem[d]);
  if (t->hw)
    hwloc_topology_destroy(t->hw);
  if (t->cpus)
    hwloc_bitmap_free(t->cpus);
  if (t->machine)
    hwloc_bitmap_free(t->machine);
  free(t->pus);
  free(t->node_package);
  free(t->mem_start);
  free(t->mem_os);
  free(t->node_mem);
  free(t->node_bytes);
  free(t->node_kind);
  free(t->dist);
  free(t);
}

/* ---- queries --------------------------------------------------------------
 */

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
  return t->dist ? t->dist[(size_t)a * n + b] : fallback_distance(t, a, b);
}

int weft_topology_node_memory(const weft_topology_t *t, uint32_t node,
                              weft_node_memory_t *out) {
  if (!out)
    return WEFT_EINVAL;
  memset(out, 0, sizeof(*out));
  if (!t || node >= t->info.numa_nodes)
    return WEFT_EINVAL;
  out->count = t->mem_start[node + 1] - t->mem_start[node];
  out->os_index = t->mem_os + t->mem_start[node];
  out->kind = t->node_kind[node];
  out->bytes = t->node_bytes[node];
  return 0;
}
