/* SPDX-License-Identifier: MIT */
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
 * real machine, and weft_topology_load_xml() an hwloc XML export of one.
 *
 * weft's NUMA nodes are the sets of PUs that share the same local memory.
 * A node's memory is the ordinary memory (DRAM) among the hwloc NUMA nodes
 * whose CPUs include the node's PUs; other kinds (HBM, MCDRAM, NVM, CXL)
 * are used only where a PU has no ordinary memory of its own. PUs that no
 * NUMA node covers form nodes of their own, one per package, with no
 * memory (their chunks are not bound). See weft_topology_node_memory().
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
  uint32_t numa_nodes; /**< weft's NUMA nodes (see the file comment) */
  uint32_t l3_groups;  /**< L3 caches (a core without one is its own) */
  uint32_t cores;      /**< physical cores */
  uint32_t pus;        /**< hardware threads */
} weft_topology_info_t;

/** Where a PU sits: logical indices of its core, L3 group, node, package. */
typedef struct weft_pu_info_t {
  uint32_t pu;      /**< logical PU index */
  uint32_t os_pu;   /**< the operating system's CPU number */
  uint32_t core;    /**< logical core index */
  uint32_t l3;      /**< L3 group index (its core's when it has no L3) */
  uint32_t node;    /**< weft's NUMA node index */
  uint32_t package; /**< logical package index */
} weft_pu_info_t;

/** How workers are bound to the machine. */
typedef enum weft_pin_t {
  WEFT_PIN_CORE = 0, /**< default: each worker bound to its core's PUs */
  WEFT_PIN_PU,       /**< each worker bound to one PU */
  WEFT_PIN_NONE      /**< no binding (the plan still says where) */
} weft_pin_t;

/** The most NUMA nodes a node mask can name (nodes 0 to 63). Topologies,
 * plans and pools take any number of nodes. */
#define WEFT_TOPOLOGY_MAX_NODES 64u

/** Pool placement settings; zero means default for every field. */
typedef struct weft_placement_config_t {
  /** Workers; 0 means one per physical core of the allowed nodes. More
   * workers than cores take the cores' other PUs, then wrap around. */
  uint32_t workers;
  /** Binding policy. */
  weft_pin_t pin;
  /** Allowed NUMA nodes, bit i = node i; 0 means all. Nodes from
   * WEFT_TOPOLOGY_MAX_NODES on cannot be named: a mask other than 0 leaves
   * them out. */
  uint64_t node_mask;
  /** The calling thread is worker 0 (it is placed, but bound only with
   * bind_caller). */
  bool caller_participates;
  /** With caller_participates and a pin policy other than NONE: the thread
   * acting as worker 0 (waiting on the pool, running a parallel-for or a
   * world's frame) is bound to worker 0's place the first time it does,
   * as the pool's own threads are bound to theirs. Without it the kernel
   * may run that thread on a core a bound worker owns, and the two then
   * share it while another core idles. When that thread destroys the
   * pool, the pool restores the binding the thread had before, if the
   * thread is still bound to worker 0's place (a binding the program
   * changed since is left alone; a thread that drove several such pools
   * gets back the binding it had before the first, whatever order they
   * are destroyed in, when they bound it to the same place). Off by
   * default: threads it starts while bound inherit the binding. */
  bool bind_caller;
} weft_placement_config_t;

/**
 * Loads a topology. @p synthetic is an hwloc synthetic description, or
 * NULL for this machine. This machine's topology holds only the PUs the
 * process may run on when it is loaded (the union of its threads' CPU
 * bindings: taskset, numactl, cgroup cpusets, a batch scheduler's or
 * mpirun's binding), so that a default plan uses one worker per allowed
 * core and never pins outside them. @p restrict_pus, when not NULL, keeps
 * only the listed OS CPU numbers (decimal, "0-5,8"), which also makes
 * asymmetric machines out of synthetic ones. Any thread. *out is owned by
 * the caller until weft_topology_destroy(). Returns WEFT_EINVAL (a
 * description or list hwloc rejects, or nothing left after the
 * restriction) or WEFT_ENOMEM.
 */
int weft_topology_load(const char *synthetic, const char *restrict_pus,
                       weft_topology_t **out);

/**
 * Loads the topology of another machine from an hwloc XML export (lstopo
 * --of xml) at @p path; @p restrict_pus as for weft_topology_load(). Plans
 * on it are computed as for that machine, but nothing is ever bound to it.
 * (An XML named by the HWLOC_XMLFILE environment variable is loaded by
 * weft_topology_load(NULL, ...) the same way.) Any thread. *out is owned
 * by the caller until weft_topology_destroy(). Returns WEFT_EINVAL (no
 * path, a file hwloc cannot read, or nothing left after the restriction)
 * or WEFT_ENOMEM.
 */
int weft_topology_load_xml(const char *path, const char *restrict_pus,
                           weft_topology_t **out);

/** What weft_topology_load_ex() loads; zero loads this machine. */
typedef struct weft_topology_load_config_t {
  /** An hwloc synthetic description, or NULL (see weft_topology_load()). */
  const char *synthetic;
  /** An hwloc XML export, or NULL (see weft_topology_load_xml()); at most
   * one of synthetic and xml. */
  const char *xml;
  /** OS CPU numbers to keep (decimal, "0-5,8"), or NULL for all. */
  const char *restrict_pus;
  /** Optional: where a failed load says, in one line of text, what was
   * rejected (a CPU list's syntax, which listed CPUs the machine lacks, an
   * XML file that cannot be read...). Written only when the load fails
   * and error_size > 0; always NUL-terminated, truncated to error_size.
   * The caller owns it. */
  char *error;
  /** Bytes at error; 0 for no message. */
  uint32_t error_size;
} weft_topology_load_config_t;

/**
 * Loads a topology as weft_topology_load() or weft_topology_load_xml() do,
 * and on failure also writes what was rejected into @p cfg->error (for
 * tools that must tell a person which CPUs do not exist). Any thread. *out
 * is owned by the caller until weft_topology_destroy(). Returns the same
 * codes: WEFT_EINVAL (no cfg or out, both synthetic and xml, a description
 * or XML file hwloc rejects, a malformed list, or nothing left after the
 * restriction) or WEFT_ENOMEM.
 */
int weft_topology_load_ex(const weft_topology_load_config_t *cfg,
                          weft_topology_t **out);

/** Frees a topology. NULL is a no-op. The thread that owns it, once no
 * plan or call uses it. */
void weft_topology_destroy(weft_topology_t *topo);

/** Fills @p out with the topology's counts. Any thread. */
void weft_topology_info(const weft_topology_t *topo, weft_topology_info_t *out);

/** The @p i-th PU (logical order), or NULL past the end. Any thread; the
 * pointer lives as long as the topology. */
const weft_pu_info_t *weft_topology_pu(const weft_topology_t *topo, uint32_t i);

/** The NUMA distance between two nodes (10 = local), as the machine
 * reports it (the nearest pair of their hwloc nodes) or, without such a
 * report, 10 / 16 (same package) / 20. 0 for a bad index. Any thread. */
uint32_t weft_topology_distance(const weft_topology_t *topo, uint32_t a,
                                uint32_t b);

/** The memory of one of weft's NUMA nodes: where a pool binds the chunks
 * of that node's group. */
typedef struct weft_node_memory_t {
  /** hwloc NUMA nodes the memory comes from; 0 when the node has none of
   * its own (its chunks are then not bound). */
  uint32_t count;
  /** Their OS indices (the kernel's node numbers), ascending; owned by the
   * topology. */
  const uint32_t *os_index;
  /** Their kind as hwloc names it ("DRAM", "HBM", "MCDRAM", "NVM",
   * "CXL-DRAM", ...): the first one's, or NULL when hwloc does not say
   * (ordinary memory, usually). Owned by the topology. */
  const char *kind;
  /** Their size in bytes, in total; 0 when unknown. */
  uint64_t bytes;
} weft_node_memory_t;

/**
 * The CPU quota of the cgroup this process runs in, in CPUs (1.5 for a
 * container limited to one and a half CPUs): the smallest one on the path
 * from its cgroup to the root, cgroup v2 (cpu.max) or v1 (CFS quota). 0
 * when none is set or none can be read. A pool keeps no more workers
 * awake than this, rounded up (weft_pool_config_t::cpu_limit), and a
 * default-sized pool starts no more. Any thread; reads /proc and the
 * cgroup tree on every call.
 */
double weft_topology_cpu_quota(void);

/**
 * Fills @p out with the memory of node @p node. Any thread; the pointers
 * live as long as the topology. Returns WEFT_EINVAL for a NULL topology
 * or out, or a bad index (out is then zeroed).
 */
int weft_topology_node_memory(const weft_topology_t *topo, uint32_t node,
                              weft_node_memory_t *out);

/**
 * Computes a placement plan. Any thread; a pure function of its inputs,
 * in time and memory near-linear in the workers and PUs. The plan refers
 * to the topology, which must outlive it. *out is owned by the caller
 * until weft_plan_destroy(). Returns WEFT_EINVAL (NULL topology or out,
 * bad pin policy, more than 65536 workers, or a node mask that leaves no
 * PU) or WEFT_ENOMEM.
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
 * Group @p g: its node and its workers (ascending); the group's chunks
 * go to that node's memory (weft_topology_node_memory()). Returns the
 * number of workers and sets *workers; 0 for a bad index. Any thread; the
 * array is owned by the plan and lives as long as it.
 */
uint32_t weft_plan_group(const weft_plan_t *plan, uint32_t g, uint32_t *node,
                         const uint32_t **workers);

/** The group of worker @p w (UINT32_MAX for a bad index). Any thread. */
uint32_t weft_plan_group_of(const weft_plan_t *plan, uint32_t w);

/**
 * A cursor over a worker's steal order (weft_plan_steal_iter()). Lives
 * on the caller's stack; the fields are private.
 */
typedef struct weft_steal_iter_t {
  const uint32_t *list_; /* the stage's candidates; NULL: every worker */
  uint32_t thief_;
  uint32_t stage_; /* the thief's core, L3, node, then other nodes */
  uint32_t tier_;  /* distance tier within the stage (UINT32_MAX: any) */
  uint32_t len_;   /* candidates in the stage */
  uint32_t pos_;   /* the next candidate */
  uint32_t todo_;  /* candidates of the stage not looked at yet */
  uint32_t left_;  /* victims not returned yet */
} weft_steal_iter_t;

/**
 * The order in which worker @p w steals: every other worker, nearest
 * first (same core, same L3, same node, then other nodes by NUMA
 * distance; within each, starting after @p w and wrapping around). The
 * plan stores only the start of it: all workers - 1 victims for plans of
 * up to 1024 workers, at least the 16 nearest otherwise;
 * weft_plan_steal_iter() walks the whole order. Returns the stored count
 * and sets *order. Any thread; the array is owned by the plan and lives as
 * long as it.
 */
uint32_t weft_plan_steal_order(const weft_plan_t *plan, uint32_t w,
                               const uint32_t **order);

/**
 * Starts @p it at position @p from of worker @p w's steal order (past the
 * end: an empty walk). Starting at 0, or at the count
 * weft_plan_steal_order() returned (the rest of the order), costs O(1);
 * elsewhere O(from). Any thread.
 */
void weft_plan_steal_iter(const weft_plan_t *plan, uint32_t w, uint32_t from,
                          weft_steal_iter_t *it);

/**
 * Sets *victim to the next worker of the order @p it walks and returns
 * true, or returns false at its end. Walking a whole order costs
 * O(workers) per distinct NUMA distance from the thief's node. Any thread.
 */
bool weft_plan_steal_next(const weft_plan_t *plan, weft_steal_iter_t *it,
                          uint32_t *victim);

/**
 * Writes a human-readable description of the topology (its CPUs and where
 * they came from, each node's memory) and the plan (plan may be NULL: each
 * worker's place and the start of its steal order, each group) to @p buf, at
 * most @p size bytes with the terminator. Returns the length the full text
 * needs, like snprintf (buf may be NULL when size is 0); 0 for a NULL topology
 * or a NULL buf with a size. Any thread; the caller owns @p buf.
 */
int weft_plan_describe(const weft_topology_t *topo, const weft_plan_t *plan,
                       char *buf, uint32_t size);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_TOPOLOGY_H */
