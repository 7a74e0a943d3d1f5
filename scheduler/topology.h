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

#endif /* WEFT_SCHEDULER_TOPOLOGY_H */
