/* SPDX-License-Identifier: MIT */
/*
 * Placement plans: a pure function from (topology, configuration) to where
 * each worker runs, which workers share a NUMA node and in which order each
 * worker looks for work to steal.
 *
 * Workers take cores first and hardware threads second, so that a pool of
 * one worker per core never puts two workers on one core; within a round
 * they alternate between the allowed NUMA nodes, so that a pool smaller
 * than the machine still has workers next to every node's memory.
 *
 * A steal order sorts the other workers by (class, distance, rotation):
 * class 0 shares the thief's core, 1 its L3, 2 its node, 3 none of them;
 * distance is the NUMA distance between the two nodes; rotation is
 * (victim - thief) mod workers, which spreads the thieves of one class
 * over its victims. Stored whole, the orders would take workers^2 entries
 * (17 GB at 65536 workers), so the plan keeps, per core, L3 group and node,
 * the list of its workers in ascending order, and per node the distinct
 * distances to the others; an order is then a walk over a few of those
 * lists, each started right after the thief and wrapped around, with a
 * filter for the class and the distance (weft_plan_steal_next()). Only the
 * first victims of each order are stored, for the pool's stealing loop.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/topology.h"
#include "weft/error.h"

/* A steal order's stages, in the order a thief walks them. */
enum { STAGE_CORE, STAGE_L3, STAGE_NODE, STAGE_FAR, STAGE_END };

#define ANY_TIER UINT32_MAX

/* Plans with at most this many steal-order entries (workers x (workers -
 * 1)) store every order whole; bigger ones store this many in all, and at
 * least STEAL_PREFIX_MIN per worker. */
#define STEAL_STORED_MAX (UINT32_C(1) << 20)
#define STEAL_PREFIX_MIN 16u

/* ---- slots: the order in which workers take PUs -------------------------- */

/* The rank of each allowed PU within its core (0 for the first PU), or
 * UINT32_MAX for PUs outside the node mask. Returns the largest rank + 1,
 * or 0 when out of memory or nothing is allowed. */
static uint32_t pu_ranks(const weft_topology_t *t, uint64_t mask,
                         uint32_t *rank) {
  uint32_t *seen = calloc(t->info.cores + 1, sizeof(uint32_t));
  if (!seen)
    return 0;
  uint32_t rounds = 0;
  for (uint32_t i = 0; i < t->npus; i++) {
    const weft_pu_info_t *p = &t->pus[i];
    rank[i] = UINT32_MAX;
    if (mask && !(p->node < 64 && (mask >> p->node & 1)))
      continue;
    rank[i] = seen[p->core]++;
    if (rank[i] + 1 > rounds)
      rounds = rank[i] + 1;
  }
  free(seen);
  return rounds;
}

/*
 * Lists the allowed PUs in the order workers take them: round r holds the
 * r-th PU of every core; inside a round, nodes take turns, each in its own
 * core order. Returns the number of slots (0 when out of memory).
 */
static uint32_t make_slots(const weft_topology_t *t, const uint32_t *rank,
                           uint32_t rounds, uint32_t *slots) {
  uint32_t nodes = t->info.numa_nodes;
  size_t buckets = (size_t)rounds * nodes;
  /* PUs bucketed by (round, node), in PU order within a bucket. */
  uint32_t *start = calloc(buckets + 1, sizeof(uint32_t));
  uint32_t *sorted = malloc(sizeof(uint32_t) * (t->npus + 1));
  uint32_t *active = malloc(sizeof(uint32_t) * (nodes + 1));
  uint32_t *cursor = malloc(sizeof(uint32_t) * (nodes + 1));
  uint32_t n = 0;
  if (!start || !sorted || !active || !cursor)
    goto out;
  for (uint32_t i = 0; i < t->npus; i++)
    if (rank[i] != UINT32_MAX)
      start[(size_t)rank[i] * nodes + t->pus[i].node + 1]++;
  for (size_t b = 0; b < buckets; b++)
    start[b + 1] += start[b];
  for (uint32_t i = 0; i < t->npus; i++)
    if (rank[i] != UINT32_MAX) {
      size_t b = (size_t)rank[i] * nodes + t->pus[i].node;
      /* start[b] moves up as its bucket fills; put back below. */
      sorted[start[b]++] = i;
    }
  for (size_t b = buckets; b > 0; b--)
    start[b] = start[b - 1];
  start[0] = 0;
  for (uint32_t r = 0; r < rounds; r++) {
    const uint32_t *s = start + (size_t)r * nodes;
    uint32_t live = 0;
    for (uint32_t node = 0; node < nodes; node++)
      if (s[node + 1] > s[node]) {
        active[live] = node;
        cursor[live++] = s[node];
      }
    /* Each pass gives every node that has PUs left its next one; nodes
     * that ran out drop from the list, so a round costs its PUs. */
    while (live) {
      uint32_t kept = 0;
      for (uint32_t k = 0; k < live; k++) {
        uint32_t node = active[k];
        slots[n++] = sorted[cursor[k]++];
        if (cursor[k] < s[node + 1]) {
          active[kept] = node;
          cursor[kept++] = cursor[k];
        }
      }
      live = kept;
    }
  }
out:
  free(start);
  free(sorted);
  free(active);
  free(cursor);
  return n;
}

/* ---- member lists ---------------------------------------------------------
 */

/* Workers grouped by key[w] < nkeys, ascending within a key (CSR). */
static int csr(uint32_t n, uint32_t nkeys, const weft_pu_info_t *place,
               size_t field, uint32_t **start_out, uint32_t **members_out) {
  uint32_t *start = calloc((size_t)nkeys + 2, sizeof(uint32_t));
  uint32_t *members = malloc(sizeof(uint32_t) * ((size_t)n + 1));
  *start_out = start;
  *members_out = members;
  if (!start || !members)
    return WEFT_ENOMEM;
#define KEY(w) (*(const uint32_t *)((const char *)&place[w] + field))
  for (uint32_t w = 0; w < n; w++)
    start[KEY(w) + 2]++;
  for (uint32_t k = 0; k < nkeys; k++)
    start[k + 2] += start[k + 1];
  for (uint32_t w = 0; w < n; w++)
    members[start[KEY(w) + 1]++] = w;
#undef KEY
  return 0;
}

static int make_groups(const weft_topology_t *t, weft_plan_t *p) {
  uint32_t nodes = t->info.numa_nodes, n = p->workers;
  uint32_t *start, *members;
  int rc =
      csr(n, nodes, p->place, offsetof(weft_pu_info_t, node), &start, &members);
  p->group_members = members;
  p->group_node = calloc(nodes + 1, sizeof(uint32_t));
  p->group_start = calloc(nodes + 1, sizeof(uint32_t));
  if (rc || !p->group_node || !p->group_start) {
    free(start);
    return WEFT_ENOMEM;
  }
  /* Nodes with workers, in node order; their lists stay where csr() put
   * them, one after the other. */
  for (uint32_t node = 0; node < nodes; node++)
    if (start[node + 1] > start[node]) {
      p->group_node[p->ngroups] = node;
      p->group_start[p->ngroups++] = start[node];
      for (uint32_t i = start[node]; i < start[node + 1]; i++)
        p->group_of[members[i]] = p->ngroups - 1;
    }
  p->group_start[p->ngroups] = n;
  free(start);
  return 0;
}

static int u32_cmp(const void *pa, const void *pb) {
  uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
  return (a > b) - (a < b);
}

/* Sorts and dedups a[0..n); returns the new count. */
static uint32_t unique(uint32_t *a, uint32_t n) {
  qsort(a, n, sizeof(uint32_t), u32_cmp);
  uint32_t k = 0;
  for (uint32_t i = 0; i < n; i++)
    if (k == 0 || a[k - 1] != a[i])
      a[k++] = a[i];
  return k;
}

/*
 * Per group, the distinct distances to every group (near) and to the
 * others (far), ascending. Without a distance report they are 10, 16 (a
 * group of the same package) and 20 (another package), found by counting
 * groups per package; with one, by looking at every pair of groups (as
 * many as the report has entries at most).
 */
static int make_tiers(const weft_topology_t *t, weft_plan_t *p) {
  uint32_t g_n = p->ngroups;
  size_t cap = t->dist ? (size_t)g_n * g_n : (size_t)g_n * 3;
  p->near_start = calloc(g_n + 1, sizeof(uint32_t));
  p->far_start = calloc(g_n + 1, sizeof(uint32_t));
  p->near_dist = malloc(sizeof(uint32_t) * (cap + 1));
  p->far_dist = malloc(sizeof(uint32_t) * (cap + 1));
  uint32_t *per_pkg = calloc(t->info.packages + 1, sizeof(uint32_t));
  int rc =
      p->near_start && p->far_start && p->near_dist && p->far_dist && per_pkg
          ? 0
          : WEFT_ENOMEM;
  for (uint32_t g = 0; !rc && g < g_n; g++)
    per_pkg[t->node_package[p->group_node[g]]]++;
  uint32_t nn = 0, nf = 0;
  for (uint32_t g = 0; !rc && g < g_n; g++) {
    uint32_t a = p->group_node[g];
    uint32_t *near = p->near_dist + nn, *far = p->far_dist + nf, k = 0, j = 0;
    if (!t->dist) {
      uint32_t mine = per_pkg[t->node_package[a]];
      near[k++] = 10;
      if (mine > 1)
        near[k++] = far[j++] = 16;
      if (g_n > mine)
        near[k++] = far[j++] = 20;
    } else {
      for (uint32_t h = 0; h < g_n; h++) {
        uint32_t d = weft_topology_distance(t, a, p->group_node[h]);
        near[k++] = d;
        if (h != g)
          far[j++] = d;
      }
      k = unique(near, k);
      j = unique(far, j);
    }
    nn += k;
    nf += j;
    p->near_start[g + 1] = nn;
    p->far_start[g + 1] = nf;
  }
  free(per_pkg);
  return rc;
}

/* ---- steal orders ---------------------------------------------------------
 */

/* The first index of a[0..n) holding a value above x (n if none). */
static uint32_t upper_bound(const uint32_t *a, uint32_t n, uint32_t x) {
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (a[mid] <= x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Points it at stage's candidates, starting after the thief. */
static void enter(const weft_plan_t *p, weft_steal_iter_t *it, uint32_t stage,
                  uint32_t tier) {
  const weft_pu_info_t *me = &p->place[it->thief_];
  uint32_t first = 0, len = p->workers;
  const uint32_t *base = NULL;
  if (stage == STAGE_CORE) {
    first = p->core_start[me->core];
    len = p->core_start[me->core + 1] - first;
    base = p->core_members;
  } else if (stage == STAGE_L3) {
    first = p->l3_start[me->l3];
    len = p->l3_start[me->l3 + 1] - first;
    base = p->l3_members;
  } else if (stage == STAGE_NODE) {
    uint32_t g = p->group_of[it->thief_];
    first = p->group_start[g];
    len = p->group_start[g + 1] - first;
    base = p->group_members;
  }
  it->stage_ = stage;
  it->tier_ = tier;
  it->list_ = base ? base + first : NULL;
  it->len_ = len;
  it->todo_ = len;
  it->pos_ = base ? upper_bound(it->list_, len, it->thief_) : it->thief_ + 1;
  if (it->pos_ >= len)
    it->pos_ = 0;
}

/* Moves it to the next stage or distance tier; false past the last. */
static bool advance(const weft_plan_t *p, weft_steal_iter_t *it) {
  uint32_t g = p->group_of[it->thief_];
  uint32_t near = p->near_start[g + 1] - p->near_start[g];
  uint32_t far = p->far_start[g + 1] - p->far_start[g];
  switch (it->stage_) {
  case STAGE_CORE: {
    /* An L3 shared by several nodes is walked once per distance, so
     * that its nearer nodes come first. */
    bool spans = p->l3_spans[p->place[it->thief_].l3];
    enter(p, it, STAGE_L3, spans ? 0 : ANY_TIER);
    return true;
  }
  case STAGE_L3:
    if (it->tier_ != ANY_TIER && it->tier_ + 1 < near)
      enter(p, it, STAGE_L3, it->tier_ + 1);
    else
      enter(p, it, STAGE_NODE, ANY_TIER);
    return true;
  case STAGE_NODE:
    if (far == 0)
      return false;
    enter(p, it, STAGE_FAR, 0);
    return true;
  case STAGE_FAR:
    if (it->tier_ + 1 >= far)
      return false;
    enter(p, it, STAGE_FAR, it->tier_ + 1);
    return true;
  default:
    return false;
  }
}

/* Whether candidate v belongs to it's stage (and distance tier). */
static bool accept(const weft_plan_t *p, const weft_steal_iter_t *it,
                   uint32_t v) {
  const weft_pu_info_t *me = &p->place[it->thief_], *o = &p->place[v];
  uint32_t g = p->group_of[it->thief_];
  switch (it->stage_) {
  case STAGE_CORE:
    return v != it->thief_;
  case STAGE_L3:
    return o->core != me->core &&
           (it->tier_ == ANY_TIER ||
            weft_topology_distance(p->topo, me->node, o->node) ==
                p->near_dist[p->near_start[g] + it->tier_]);
  case STAGE_NODE:
    return o->l3 != me->l3;
  default:
    return o->node != me->node && o->l3 != me->l3 &&
           weft_topology_distance(p->topo, me->node, o->node) ==
               p->far_dist[p->far_start[g] + it->tier_];
  }
}

bool weft_plan_steal_next(const weft_plan_t *p, weft_steal_iter_t *it,
                          uint32_t *victim) {
  if (!p || !it)
    return false;
  while (it->left_) {
    if (it->todo_ == 0) {
      if (!advance(p, it))
        break; /* cannot happen: the stages cover every worker */
      continue;
    }
    uint32_t v = it->list_ ? it->list_[it->pos_] : it->pos_;
    it->pos_ = it->pos_ + 1 == it->len_ ? 0 : it->pos_ + 1;
    it->todo_--;
    if (accept(p, it, v)) {
      it->left_--;
      if (victim)
        *victim = v;
      return true;
    }
  }
  it->left_ = 0;
  return false;
}

static void iter_start(const weft_plan_t *p, uint32_t w,
                       weft_steal_iter_t *it) {
  memset(it, 0, sizeof(*it));
  it->thief_ = w;
  it->left_ = p->workers - 1;
  enter(p, it, STAGE_CORE, ANY_TIER);
}

void weft_plan_steal_iter(const weft_plan_t *p, uint32_t w, uint32_t from,
                          weft_steal_iter_t *it) {
  if (!it)
    return;
  if (!p || w >= p->workers || from >= p->workers - 1) {
    memset(it, 0, sizeof(*it));
    it->stage_ = STAGE_END;
    return;
  }
  if (from == p->prefix) {
    *it = p->resume[w];
    return;
  }
  iter_start(p, w, it);
  for (uint32_t i = 0; i < from; i++)
    weft_plan_steal_next(p, it, NULL);
}

/* The lists the walks use, and every worker's first victims. */
static int make_orders(const weft_topology_t *t, weft_plan_t *p) {
  uint32_t n = p->workers;
  int rc = csr(n, t->info.cores, p->place, offsetof(weft_pu_info_t, core),
               &p->core_start, &p->core_members);
  if (!rc)
    rc = csr(n, t->info.l3_groups, p->place, offsetof(weft_pu_info_t, l3),
             &p->l3_start, &p->l3_members);
  /* csr() leaves start[k] at the start of key k's members. */
  if (!rc)
    rc = make_tiers(t, p);
  p->l3_spans = rc ? NULL : calloc(t->info.l3_groups + 1, 1);
  if (!rc && !p->l3_spans)
    rc = WEFT_ENOMEM;
  for (uint32_t l3 = 0; !rc && l3 < t->info.l3_groups; l3++)
    for (uint32_t i = p->l3_start[l3] + 1; i < p->l3_start[l3 + 1]; i++)
      if (p->place[p->l3_members[i]].node !=
          p->place[p->l3_members[p->l3_start[l3]]].node)
        p->l3_spans[l3] = 1;
  if (rc)
    return rc;
  uint64_t whole = (uint64_t)n * (n - 1);
  p->prefix = n - 1;
  if (whole > STEAL_STORED_MAX) {
    p->prefix = STEAL_STORED_MAX / n;
    if (p->prefix < STEAL_PREFIX_MIN)
      p->prefix = STEAL_PREFIX_MIN;
    if (p->prefix > n - 1)
      p->prefix = n - 1;
  }
  p->steal = malloc(sizeof(uint32_t) * ((size_t)n * p->prefix + 1));
  p->resume = malloc(sizeof(weft_steal_iter_t) * n);
  if (!p->steal || !p->resume)
    return WEFT_ENOMEM;
  for (uint32_t w = 0; w < n; w++) {
    weft_steal_iter_t it;
    iter_start(p, w, &it);
    uint32_t *out = p->steal + (size_t)w * p->prefix;
    for (uint32_t i = 0; i < p->prefix; i++)
      weft_plan_steal_next(p, &it, &out[i]);
    p->resume[w] = it;
  }
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
    rc = rounds ? WEFT_ENOMEM : WEFT_EINVAL; /* EINVAL: the mask left none */
  if (!rc) {
    /* By default one worker per core: the slots of round 0. */
    uint32_t cores = 0;
    for (uint32_t i = 0; i < t->npus; i++)
      cores += rank[i] == 0;
    p->workers = cfg->workers ? cfg->workers : cores;
    p->place = calloc(p->workers, sizeof(*p->place));
    p->group_of = calloc(p->workers, sizeof(uint32_t));
    if (!p->place || !p->group_of)
      rc = WEFT_ENOMEM;
  }
  for (uint32_t w = 0; !rc && w < p->workers; w++)
    p->place[w] = t->pus[slots[w % nslots]];
  free(rank);
  free(slots);
  if (!rc)
    rc = make_groups(t, p);
  if (!rc)
    rc = make_orders(t, p);
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
  p->topo = t;
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
  free(p->core_start);
  free(p->core_members);
  free(p->l3_start);
  free(p->l3_members);
  free(p->l3_spans);
  free(p->near_start);
  free(p->near_dist);
  free(p->far_start);
  free(p->far_dist);
  free(p->steal);
  free(p->resume);
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
    *order = p->steal + (size_t)w * p->prefix;
  return p->prefix;
}

/* ---- binding
 * ----------------------------------------------------------------- */

/* The PUs worker w is bound to (its core's or its PU), or NULL when out of
 * memory. Only PUs of the topology, which holds only those the process
 * may run on: a worker never leaves the process's CPU mask. */
static hwloc_bitmap_t place_set(const weft_topology_t *t, const weft_plan_t *p,
                                uint32_t w) {
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (!set)
    return NULL;
  const weft_pu_info_t *me = &p->place[w];
  for (uint32_t i = 0; i < t->npus; i++) {
    bool take = p->pin == WEFT_PIN_PU ? t->pus[i].pu == me->pu
                                      : t->pus[i].core == me->core;
    if (take)
      hwloc_bitmap_set(set, t->pus[i].os_pu);
  }
  return set;
}

int weft__plan_bind(const weft_topology_t *t, const weft_plan_t *p,
                    uint32_t w) {
  if (!weft_plan_bound(p, w) || t->foreign)
    return 0;
  hwloc_bitmap_t set = place_set(t, p, w);
  if (!set)
    return WEFT_ENOMEM;
  int rc = hwloc_set_cpubind(t->hw, set, HWLOC_CPUBIND_THREAD) == 0
               ? 0
               : WEFT_EINVAL;
  hwloc_bitmap_free(set);
  return rc;
}

int weft__plan_bind_caller(const weft_topology_t *t, const weft_plan_t *p,
                           void **saved) {
  *saved = NULL;
  if (!p->bind_caller || !weft_plan_bound(p, 0) || t->foreign)
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

void weft__plan_unbind(const weft_topology_t *t, const weft_plan_t *p,
                       void *saved) {
  if (!saved)
    return;
  /* Only while the thread is still bound where the plan put it: a binding
   * the program (or another pool the thread drives) made since is not
   * ours to undo. Two pools that bound the same thread then restore the
   * binding it had before either, whichever is destroyed first. */
  hwloc_bitmap_t now = hwloc_bitmap_alloc();
  hwloc_bitmap_t ours = place_set(t, p, 0);
  if (now && ours && hwloc_get_cpubind(t->hw, now, HWLOC_CPUBIND_THREAD) == 0 &&
      hwloc_bitmap_isequal(now, ours))
    (void)hwloc_set_cpubind(t->hw, saved, HWLOC_CPUBIND_THREAD);
  hwloc_bitmap_free(now);
  hwloc_bitmap_free(ours);
  hwloc_bitmap_free(saved);
}

void weft__plan_saved_free(void *saved) {
  if (saved)
    hwloc_bitmap_free(saved);
}

/* ---- description ------------------------------------------------------------
 */

/* A running snprintf that counts what the full text needs. */
typedef struct out_t {
  char *buf;
  uint32_t size, len;
} out_t;

static void outf(out_t *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void outf(out_t *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(o->buf + (o->len < o->size ? o->len : o->size),
                    o->len < o->size ? o->size - o->len : 0, fmt, ap);
  va_end(ap);
  if (n > 0)
    o->len += (uint32_t)n;
}

static void out_set(out_t *o, hwloc_const_bitmap_t set) {
  char *s = NULL;
  if (hwloc_bitmap_list_asprintf(&s, set) >= 0 && s)
    outf(o, "%s", s);
  else
    outf(o, "?");
  free(s);
}

/* "numa 0,1 (DRAM, 2.0 GiB)", or that the node has no memory. */
static void out_memory(out_t *o, const weft_topology_t *t, uint32_t node) {
  weft_node_memory_t m;
  weft_topology_node_memory(t, node, &m);
  if (m.count == 0) {
    outf(o, "none of its own (not bound)");
    return;
  }
  outf(o, "numa");
  for (uint32_t i = 0; i < m.count; i++)
    outf(o, "%s%u", i ? "," : " ", m.os_index[i]);
  if (!m.kind && !m.bytes)
    return;
  outf(o, " (%s%s", m.kind ? m.kind : "", m.kind && m.bytes ? ", " : "");
  if (m.bytes >= (UINT64_C(1) << 30))
    outf(o, "%.1f GiB)", (double)m.bytes / (double)(UINT64_C(1) << 30));
  else if (m.bytes)
    outf(o, "%.0f MiB)", (double)m.bytes / (double)(UINT64_C(1) << 20));
  else
    outf(o, ")");
}

static void describe_topology(out_t *o, const weft_topology_t *t) {
  const weft_topology_info_t *in = &t->info;
  outf(o,
       "topology: %u package(s), %u NUMA node(s), %u L3 group(s), %u "
       "core(s), %u PU(s)%s\n",
       in->packages, in->numa_nodes, in->l3_groups, in->cores, in->pus,
       t->synthetic ? " (synthetic)"
       : t->foreign ? " (not this machine)"
                    : "");
  outf(o, "cpus: ");
  out_set(o, t->cpus);
  if (t->cpus_from != WEFT__CPUS_ALL) {
    outf(o, t->cpus_from == WEFT__CPUS_BINDING
                ? " (the process's CPU binding; the machine has "
                : " (restricted; the machine has ");
    out_set(o, t->machine);
    outf(o, ")");
  }
  outf(o, "\ndistances:");
  /* A matrix is worth reading for a few nodes; past 64, it is not shown
   * (it would take nodes^2 numbers). */
  if (in->numa_nodes > 64)
    outf(o, " %u nodes, not shown", in->numa_nodes);
  for (uint32_t a = 0; in->numa_nodes <= 64 && a < in->numa_nodes; a++) {
    outf(o, "%s", a ? " |" : "");
    for (uint32_t b = 0; b < in->numa_nodes; b++)
      outf(o, " %u", weft_topology_distance(t, a, b));
  }
  outf(o, "\n");
  for (uint32_t d = 0; d < in->numa_nodes; d++) {
    outf(o, "  node %u (package %u): memory ", d, t->node_package[d]);
    out_memory(o, t, d);
    outf(o, "\n");
  }
}

/* The most victims of a steal order a description lists. */
#define DESCRIBE_VICTIMS 16u

int weft_plan_describe(const weft_topology_t *t, const weft_plan_t *p,
                       char *buf, uint32_t size) {
  if (!t || (!buf && size))
    return 0;
  out_t o = {buf, size, 0};
  describe_topology(&o, t);
  if (!p)
    return (int)o.len;
  static const char *const pins[] = {"core", "pu", "none"};
  outf(&o, "plan: %u worker(s), pin %s%s\n", p->workers, pins[p->pin],
       p->bind_caller ? ", caller is worker 0 (bound)"
       : p->caller    ? ", caller is worker 0"
                      : "");
  for (uint32_t w = 0; w < p->workers; w++) {
    const weft_pu_info_t *pl = &p->place[w];
    outf(&o,
         "  worker %u: pu %u (cpu %u) core %u l3 %u node %u package %u%s; "
         "steals from",
         w, pl->pu, pl->os_pu, pl->core, pl->l3, pl->node, pl->package,
         weft_plan_bound(p, w) ? "" : " (unbound)");
    /* The nearest victims, read from the stored part of the order. */
    const uint32_t *order;
    uint32_t stored = weft_plan_steal_order(p, w, &order);
    uint32_t shown = stored < DESCRIBE_VICTIMS ? stored : DESCRIBE_VICTIMS;
    for (uint32_t i = 0; i < shown; i++)
      outf(&o, " %u", order[i]);
    if (shown < p->workers - 1)
      outf(&o, " and %u more", p->workers - 1 - shown);
    outf(&o, "\n");
  }
  for (uint32_t g = 0; g < p->ngroups; g++) {
    const uint32_t *ws;
    uint32_t node, n = weft_plan_group(p, g, &node, &ws);
    outf(&o, "  group %u (node %u):", g, node);
    for (uint32_t i = 0; i < n; i++)
      outf(&o, " %u", ws[i]);
    outf(&o, "; memory ");
    out_memory(&o, t, node);
    outf(&o, "\n");
  }
  return (int)o.len;
}
