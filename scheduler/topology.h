/* SPDX-License-Identifier: MIT */
/*
 * The private layout of topologies and plans, and the binding of threads
 * to a plan's places (used by the pool).
 */
#ifndef WEFT_SCHEDULER_TOPOLOGY_H
#define WEFT_SCHEDULER_TOPOLOGY_H

#include <hwloc.h>
#include <stdbool.h>
#include <stdint.h>

#include "weft/topology.h"

/* How the topology's CPUs were chosen (for weft_plan_describe). */
typedef enum weft__cpus_from_t {
  WEFT__CPUS_ALL = 0,  /* every CPU hwloc allows */
  WEFT__CPUS_BINDING,  /* the process's binding (taskset, cpusets, ...) */
  WEFT__CPUS_RESTRICT, /* the caller's restrict_pus list */
} weft__cpus_from_t;

struct weft_topology_t {
  hwloc_topology_t hw;
  /* Not this machine (a synthetic description, an XML export): threads
   * and memory are never bound to it. */
  bool foreign;
  bool synthetic; /* loaded from an hwloc synthetic description */
  weft__cpus_from_t cpus_from;
  hwloc_bitmap_t cpus;    /* the PUs kept (OS numbers) */
  hwloc_bitmap_t machine; /* the PUs hwloc allowed before restrictions */
  weft_topology_info_t info;
  weft_pu_info_t *pus; /* npus, logical order */
  uint32_t npus;
  /* Per node (info.numa_nodes): its package, and its memory: the hwloc
   * NUMA nodes (OS indices, ascending) mem_os[mem_start[n] ..
   * mem_start[n + 1]), also as a nodeset (empty: no memory of its own,
   * never bound), their total size and hwloc's name for their kind. */
  uint32_t *node_package;
  uint32_t *mem_start;
  uint32_t *mem_os;
  hwloc_bitmap_t *node_mem;
  uint64_t *node_bytes;
  const char **node_kind; /* hwloc's subtype strings, owned by hw */
  /* numa_nodes x numa_nodes when the machine reports distances; NULL
   * otherwise (weft_topology_distance() then derives them from packages). */
  uint32_t *dist;
};

/*
 * A plan. Steal orders are not stored whole (that would be workers^2):
 * each is produced on demand from the members of the thief's core, L3 and
 * node and from its node's distance tiers (weft_plan_steal_next()), and
 * only its first `prefix` victims are kept per worker, with the iterator
 * state that follows them.
 */
struct weft_plan_t {
  const weft_topology_t *topo; /* outlives the plan (see topology.h) */
  uint32_t workers;
  weft_pin_t pin;
  bool caller;           /* worker 0 is the calling thread */
  bool bind_caller;      /* ... and is bound when it first acts as such */
  weft_pu_info_t *place; /* per worker */
  uint32_t *group_of;    /* per worker */
  uint32_t ngroups;
  uint32_t *group_node;    /* per group */
  uint32_t *group_start;   /* ngroups + 1 offsets into group_members */
  uint32_t *group_members; /* workers, grouped, ascending within a group */
  /* Workers per core and per L3 group of the topology, ascending (CSR). */
  uint32_t *core_start, *core_members;
  uint32_t *l3_start, *l3_members;
  uint8_t *l3_spans; /* per L3 group: its workers are on several nodes */
  /* Per group, the distinct NUMA distances ascending: to every group
   * (near_*, itself included) and to the other groups (far_*). */
  uint32_t *near_start, *near_dist;
  uint32_t *far_start, *far_dist;
  /* The first `prefix` victims of every worker (workers x prefix) and the
   * iterator state right after them. */
  uint32_t prefix;
  uint32_t *steal;
  weft_steal_iter_t *resume;
};

/* The hwloc nodeset weft binds node n's memory to (empty: not bound). */
static inline hwloc_const_nodeset_t
weft__topology_node_mem(const weft_topology_t *t, uint32_t n) {
  return t->node_mem[n];
}

/*
 * Binds the calling thread to worker w's place (its core or PU, by the
 * plan's policy). Does nothing for unbound workers or foreign
 * topologies. Returns 0 or WEFT_EINVAL when the OS refused.
 */
int weft__plan_bind(const weft_topology_t *topo, const weft_plan_t *plan,
                    uint32_t w);

/*
 * weft__plan_bind() for worker 0 when it is the caller (bind_caller), first
 * saving the thread's binding into *saved (NULL when nothing was bound):
 * weft__plan_unbind() puts it back. Returns 0, WEFT_ENOMEM or WEFT_EINVAL.
 */
int weft__plan_bind_caller(const weft_topology_t *topo, const weft_plan_t *plan,
                           void **saved);

/* Restores the binding weft__plan_bind_caller() saved on the calling
 * thread (if any), if the thread is still bound to worker 0's place of
 * @p plan, and frees it. */
void weft__plan_unbind(const weft_topology_t *topo, const weft_plan_t *plan,
                       void *saved);

/* Frees a saved binding without restoring it. */
void weft__plan_saved_free(void *saved);

#endif /* WEFT_SCHEDULER_TOPOLOGY_H */
