/* SPDX-License-Identifier: MIT */
/* NUMA-local chunk memory (see numa.h). */
#include "scheduler/numa.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h> /* ssize_t, jemalloc's decay times */
#include <stdlib.h>
#include <string.h>

#ifdef WEFT_JEMALLOC
#include "core/jemalloc.h"
#endif

#include "scheduler/pool_internal.h"
#include "scheduler/topology.h"
#include "weft/error.h"

uint32_t weft__pool_node_groups(const weft_pool_t *p) {
  return p && p->ngroups ? p->ngroups : 1;
}

uint32_t weft__pool_group_node(const weft_pool_t *p, uint32_t g) {
  uint32_t node = 0;
  if (p && g < p->ngroups)
    weft_plan_group(p->plan, g, &node, NULL);
  return node;
}

#ifdef WEFT_JEMALLOC
/* mallctl on "arena.<a>.<what>", writing new; 0 or jemalloc's error. */
static int arena_ctl(unsigned a, const char *what, void *new, size_t newlen) {
  char name[64];
  snprintf(name, sizeof name, "arena.%u.%s", a, what);
  return mallctl(name, NULL, NULL, new, newlen);
}

/*
 * The arena of group g, created on first use; 0 means "the default". Its
 * pages stay resident while chunks use them: jemalloc would otherwise
 * purge freed pages on its decay timer and re-fault them when a segment
 * is allocated again (docs/performance-notes.md, "Stalls from memory
 * handling"), so decay is off and weft__pool_free_on() purges instead,
 * when a world trims or goes.
 */
static unsigned group_arena(weft_pool_t *p, uint32_t g) {
  pthread_mutex_lock(&p->arena_mu);
  unsigned a = p->arenas[g];
  if (a == 0) {
    size_t sz = sizeof(a);
    if (mallctl("arenas.create", &a, &sz, NULL, 0) != 0)
      a = 0; /* no arena: use the default one */
    ssize_t never = -1;
    if (a) {
      (void)arena_ctl(a, "dirty_decay_ms", &never, sizeof never);
      (void)arena_ctl(a, "muzzy_decay_ms", &never, sizeof never);
    }
    p->arenas[g] = a;
  }
  pthread_mutex_unlock(&p->arena_mu);
  return a;
}

/* Purges arena a if it is one of p's group arenas (a block of group
 * memory may come from a default arena when creating one failed: those
 * are jemalloc's to purge). */
static void purge_group_arena(weft_pool_t *p, unsigned a) {
  bool ours = false;
  pthread_mutex_lock(&p->arena_mu);
  for (uint32_t g = 0; a && g < p->ngroups; g++)
    ours |= p->arenas[g] == a;
  pthread_mutex_unlock(&p->arena_mu);
  if (ours)
    (void)arena_ctl(a, "purge", NULL, 0);
}
#endif

/*
 * Binds memory to group g's node memory when planning on the real machine.
 * The nodeset is the one the topology chose for the node (weft's node
 * numbers are not hwloc's logical indices: a node may have several hwloc
 * nodes, or none, and then nothing is bound). The binding is hwloc's
 * non-strict one, a preference: a full node spills over instead of failing
 * the allocation. A refusal is counted in the pool's stats.
 */
static void bind_to_node(weft_pool_t *p, uint32_t g, void *mem, size_t size) {
  if (p->topo->foreign)
    return;
  hwloc_const_nodeset_t set =
      weft__topology_node_mem(p->topo, weft__pool_group_node(p, g));
  if (hwloc_bitmap_iszero(set))
    return;
  atomic_fetch_add_explicit(&p->membind_calls, 1, memory_order_relaxed);
  errno = 0;
  if (hwloc_set_area_membind(p->topo->hw, mem, size, set, HWLOC_MEMBIND_BIND,
                             HWLOC_MEMBIND_BYNODESET) != 0) {
    atomic_store_explicit(&p->membind_errno, errno ? errno : EINVAL,
                          memory_order_relaxed);
    atomic_fetch_add_explicit(&p->membind_failures, 1, memory_order_relaxed);
  }
}

void *weft__pool_alloc_on(weft_pool_t *p, uint32_t g, weft__alloc_stats_t *st,
                          size_t size, size_t align) {
  /* One group: nothing to place, and no arena to pay for. */
  if (!p || p->ngroups <= 1 || g >= p->ngroups)
    return weft__alloc(st, size, align);
  void *mem;
#if defined(WEFT_SYSTEM_MALLOC)
  /* Sanitizer builds: ordinary blocks, which ASan and TSan watch. */
  mem = weft__alloc(st, size, align);
#elif !defined(WEFT_JEMALLOC)
  /* Without jemalloc: pages of weft's own, so that binding them to the
   * node binds none of the host's heap. */
  mem = weft__alloc_pages(st, size, align);
#else
  unsigned arena = group_arena(p, g);
  int flags = MALLOCX_ALIGN(align < sizeof(void *) ? sizeof(void *) : align);
  if (arena)
    flags |= MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE;
  mem = mallocx(size ? size : 1, flags);
  if (mem && st) {
    st->allocs++;
    st->bytes += size;
  }
#endif
  if (mem)
    bind_to_node(p, g, mem, size);
  return mem;
}

void weft__pool_free_on(weft_pool_t *p, void *mem, size_t size) {
#if !defined(WEFT_JEMALLOC) && !defined(WEFT_SYSTEM_MALLOC)
  if (p && p->ngroups > 1) {
    weft__free_pages(mem, size);
    return;
  }
#elif defined(WEFT_JEMALLOC)
  /* Segments are freed when a world trims or goes, which is when their
   * pages should go back to the kernel: the group arena never purges by
   * itself (group_arena()). */
  unsigned a = 0;
  size_t sz = sizeof a;
  if (mem && p && p->ngroups > 1 &&
      mallctl("arenas.lookup", &a, &sz, &mem, sizeof mem) == 0) {
    weft__free(mem, size, 0);
    purge_group_arena(p, a);
    return;
  }
#else
  (void)p;
#endif
  weft__free(mem, size, 0);
}

const weft__pool_hooks_t weft__pool_core_hooks = {
    weft__pool_node_groups, weft__pool_group_node, weft__pool_alloc_on,
    weft__pool_free_on,     weft_pool_workers,     weft_pool_parallel_for,
};

int weft_pool_stats(const weft_pool_t *p, weft_pool_stats_t *out) {
  if (!p || !out)
    return WEFT_EINVAL;
  out->membind_calls =
      atomic_load_explicit(&p->membind_calls, memory_order_relaxed);
  out->membind_failures =
      atomic_load_explicit(&p->membind_failures, memory_order_relaxed);
  out->membind_errno =
      atomic_load_explicit(&p->membind_errno, memory_order_relaxed);
  out->cpus = 0;
  out->crews = p->ncrews;
  out->rescues = 0;
  for (uint32_t c = 0; c < p->ncrews; c++)
    if (p->crews[c].cpus != UINT32_MAX)
      out->cpus += p->crews[c].cpus < p->crews[c].nworkers
                       ? p->crews[c].cpus
                       : p->crews[c].nworkers;
  if (p->awake_cap != UINT32_MAX)
    out->cpus =
        out->cpus && out->cpus < p->awake_cap ? out->cpus : p->awake_cap;
  for (uint32_t i = 0; i < p->nworkers; i++)
    out->rescues += atomic_load_explicit(&p->workers[i].stats.rescues,
                                         memory_order_relaxed);
  return 0;
}
