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

struct weft_topology_t {
  hwloc_topology_t hw;
  bool synthetic; /* not this machine: never bind to it */
  weft_topology_info_t info;
  weft_pu_info_t *pus; /* npus, logical order */
  uint32_t npus;
  uint32_t *dist; /* numa_nodes x numa_nodes */
};

struct weft_plan_t {
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
  uint32_t *steal;         /* workers x (workers - 1) */
};

/*
 * Binds the calling thread to worker w's place (its core or PU, by the
 * plan's policy). Does nothing for unbound workers or synthetic
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
 * thread (if any) and frees it. */
void weft__plan_unbind(const weft_topology_t *topo, void *saved);

/* Frees a saved binding without restoring it. */
void weft__plan_saved_free(void *saved);

#endif /* WEFT_SCHEDULER_TOPOLOGY_H */
