/**
 * @file weft/topology.h
 * @brief The machine's topology (via hwloc) and worker placement plans.
 *
 * A placement plan says, for a pool of workers, which processing unit (PU)
 * each worker runs on, which workers form each NUMA group, and in which
 * order each worker steals from the others: same core, then same L3, then
 * same NUMA node, then other nodes nearest first. The plan is a pure
 * function of the topology and the configuration, so it can be computed
 * and tested for any machine: weft_topology_load() accepts an hwloc
 * synthetic description ("pack:2 numa:2 l3:1 core:8 pu:2") in place of the
 * real machine.
 */
#ifndef WEFT_TOPOLOGY_H
#define WEFT_TOPOLOGY_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** An opaque, immutable snapshot of a machine's topology. */
typedef struct weft_topology_t weft_topology_t;

/** An opaque, immutable placement plan. */
typedef struct weft_plan_t weft_plan_t;

/** Counts of the objects a topology has (only the allowed part of it). */
typedef struct weft_topology_info_t {
  uint32_t packages;   /**< sockets */
  uint32_t numa_nodes; /**< NUMA nodes with processing units */
  uint32_t l3_groups;  /**< L3 caches (nodes, when the machine has none) */
  uint32_t cores;      /**< physical cores */
  uint32_t pus;        /**< hardware threads */
} weft_topology_info_t;

/** Where a PU sits: logical indices of its core, L3 group, node, package. */
typedef struct weft_pu_info_t {
  uint32_t pu;      /**< logical PU index */
  uint32_t os_pu;   /**< the operating system's CPU number */
  uint32_t core;    /**< logical core index */
  uint32_t l3;      /**< L3 group index */
  uint32_t node;    /**< logical NUMA node index */
  uint32_t package; /**< logical package index */
} weft_pu_info_t;

/** How workers are bound to the machine. */
typedef enum weft_pin_t {
  WEFT_PIN_CORE = 0, /**< default: each worker bound to its core's PUs */
  WEFT_PIN_PU,       /**< each worker bound to one PU */
  WEFT_PIN_NONE      /**< no binding (the plan still says where) */
} weft_pin_t;

/** The most NUMA nodes a node mask can name. */
#define WEFT_TOPOLOGY_MAX_NODES 64u

/** Pool placement settings; zero means default for every field. */
typedef struct weft_placement_config_t {
  /** Workers; 0 means one per physical core of the allowed nodes. More
   * workers than cores take the cores' other PUs, then wrap around. */
  uint32_t workers;
  /** Binding policy. */
  weft_pin_t pin;
  /** Allowed NUMA nodes, bit i = logical node i; 0 means all. */
  uint64_t node_mask;
  /** The calling thread is worker 0 (it is placed, but bound only with
   * bind_caller). */
  bool caller_participates;
  /** With caller_participates and a pin policy other than NONE: the thread
   * acting as worker 0 (waiting on the pool, running a parallel-for or a
   * world's frame) is bound to worker 0's place the first time it does,
   * as the pool's own threads are bound to theirs. Without it the kernel
   * may run that thread on a core a bound worker owns, and the two then
   * share it while another core idles. The pool restores the thread's
   * previous binding when that thread destroys the pool. Off by default:
   * threads it starts while bound inherit the binding. */
  bool bind_caller;
} weft_placement_config_t;

/**
 * Loads a topology. @p synthetic is an hwloc synthetic description, or
 * NULL for this machine. @p restrict_pus, when not NULL, keeps only the
 * listed OS CPU numbers (decimal, "0-5,8"), which also makes asymmetric
 * machines out
 * of synthetic ones. Any thread. *out is owned by the caller until
 * weft_topology_destroy(). Returns WEFT_EINVAL (a description or list hwloc
 * rejects, or nothing left after the restriction), WEFT_ELIMIT (more than
 * WEFT_TOPOLOGY_MAX_NODES nodes) or WEFT_ENOMEM.
 */
int weft_topology_load(const char *synthetic, const char *restrict_pus,
                       weft_topology_t **out);

/** Frees a topology. NULL is a no-op. The thread that owns it, once no
 * plan or call uses it. */
void weft_topology_destroy(weft_topology_t *topo);

/** Fills @p out with the topology's counts. Any thread. */
void weft_topology_info(const weft_topology_t *topo, weft_topology_info_t *out);

/** The @p i-th PU (logical order), or NULL past the end. Any thread; the
 * pointer lives as long as the topology. */
const weft_pu_info_t *weft_topology_pu(const weft_topology_t *topo, uint32_t i);

/** The NUMA distance between two logical nodes (10 = local), as the
 * machine reports it or, without such a report, 10 / 16 (same package) /
 * 20. Any thread. */
uint32_t weft_topology_distance(const weft_topology_t *topo, uint32_t a,
                                uint32_t b);

/**
 * Computes a placement plan. Any thread; a pure function of its inputs.
 * *out is owned by the caller until weft_plan_destroy(). Returns
 * WEFT_EINVAL (NULL topology or out, bad pin policy, more than 65536
 * workers, or a node mask that leaves no PU) or WEFT_ENOMEM.
 */
int weft_plan_compute(const weft_topology_t *topo,
                      const weft_placement_config_t *config, weft_plan_t **out);

/** Frees a plan. NULL is a no-op. The thread that owns it, once nothing
 * uses it (a pool keeps its own). */
void weft_plan_destroy(weft_plan_t *plan);

/** Workers in the plan. Any thread. */
uint32_t weft_plan_workers(const weft_plan_t *plan);

/** Where worker @p w runs (its PU and that PU's core, L3, node, package),
 * or NULL for a bad index. Any thread; owned by the plan and lives as long
 * as it. */
const weft_pu_info_t *weft_plan_place(const weft_plan_t *plan, uint32_t w);

/** True if worker @p w is bound (pin policy not NONE, and not the calling
 * thread unless the placement asked for bind_caller). */
bool weft_plan_bound(const weft_plan_t *plan, uint32_t w);

/** Number of NUMA groups: nodes with at least one worker. Any thread. */
uint32_t weft_plan_groups(const weft_plan_t *plan);

/**
 * Group @p g: its logical node and its workers (ascending). Returns the
 * number of workers and sets *workers; 0 for a bad index. Any thread; the
 * array is owned by the plan and lives as long as it.
 */
uint32_t weft_plan_group(const weft_plan_t *plan, uint32_t g, uint32_t *node,
                         const uint32_t **workers);

/** The group of worker @p w (UINT32_MAX for a bad index). Any thread. */
uint32_t weft_plan_group_of(const weft_plan_t *plan, uint32_t w);

/**
 * The order in which worker @p w steals: every other worker, nearest
 * first. Returns the count (workers - 1) and sets *order. Any thread; the
 * array is owned by the plan and lives as long as it.
 */
uint32_t weft_plan_steal_order(const weft_plan_t *plan, uint32_t w,
                               const uint32_t **order);

/**
 * Writes a human-readable description of the topology and the plan (plan
 * may be NULL) to @p buf, at most @p size bytes with the terminator.
 * Returns the length the full text needs, like snprintf (buf may be NULL
 * when size is 0); 0 for a NULL topology or a NULL buf with a size. Any
 * thread; the caller owns @p buf.
 */
int weft_plan_describe(const weft_topology_t *topo, const weft_plan_t *plan,
                       char *buf, uint32_t size);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_TOPOLOGY_H */
