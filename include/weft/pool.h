/* SPDX-License-Identifier: MIT */
/**
 * @file weft/pool.h
 * @brief The worker pool: pinned threads, work-stealing jobs, parallel-for.
 *
 * A pool runs jobs on workers placed by a plan (topology.h). Each worker
 * owns a Chase–Lev deque; it pushes and pops at the bottom, and idle
 * workers steal from the top of the others in their plan's steal order
 * (same core, same L3, same node, then other nodes nearest first). Idle
 * workers spin briefly, then sleep, and wake when work arrives; an idle
 * pool uses no CPU.
 *
 * Calls that submit or wait name the calling thread: the worker index a
 * job received, or WEFT_WORKER_EXTERNAL for any other thread. There is no
 * hidden per-thread state. A thread that waits runs other jobs meanwhile,
 * so nested parallel-for never deadlocks. Submitting allocates nothing: a
 * worker's jobs live in a fixed ring, and when it is full (or the deque
 * is) the job runs inline instead.
 */
#ifndef WEFT_POOL_H
#define WEFT_POOL_H

#include <stdbool.h>
#include <stdint.h>
/* C++ has no _Atomic before C++23: a C++ caller sees weft_counter_t's
 * counter as std::atomic<uint32_t>, which GCC and Clang lay out as C's
 * _Atomic uint32_t (the asserts below hold both to one layout). <atomic>
 * must come before the extern "C" block: it declares templates. */
#ifdef __cplusplus
#include <atomic>
#include <cstddef>
#else
#include <stdatomic.h>
#include <stddef.h>
#endif

#include "weft/topology.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An opaque worker pool. */
typedef struct weft_pool_t weft_pool_t;

/** The worker index of a thread that is not one of the pool's workers. */
#define WEFT_WORKER_EXTERNAL UINT32_MAX

/** weft_pool_config_t::cpu_limit: no limit but the CPUs themselves. */
#define WEFT_POOL_NO_CPU_LIMIT UINT32_MAX

/** Pool settings; zero means default for every field. */
typedef struct weft_pool_config_t {
  /** Workers, binding and NUMA nodes (see topology.h). With
   * caller_participates, worker 0 is whichever thread calls
   * weft_pool_wait() or weft_pool_parallel_for() as worker 0; no thread
   * is started for it. */
  weft_placement_config_t placement;
  /** Plan on this hwloc synthetic description instead of the machine
   * (tests); threads are then never bound. NULL: the real machine, within
   * the CPUs the process may run on when the pool is created (see
   * weft_topology_load()). */
  const char *synthetic;
  /** Jobs each worker's deque and job ring hold: a power of two in
   * [2, 2^24]; 0 means 4096. */
  uint32_t queue_capacity;
  /** Microseconds an idle worker spins looking for work before it sleeps;
   * 0 means 50. */
  uint32_t spin_us;
  /**
   * The most workers awake at once, over the whole pool (see
   * weft_pool_stats_t::cpus). 0 means the CPU quota of the process's
   * cgroup (cgroup v2 cpu.max or v1's CFS quota, the smallest on the
   * path to the root, rounded up: a container or batch job limited to
   * 1.5 CPUs gets 2), or no limit where none is set or the machine is
   * foreign (synthetic, XML); WEFT_POOL_NO_CPU_LIMIT ignores the quota.
   * With the default worker count (placement.workers 0) the pool also
   * starts no more workers than this limit.
   */
  uint32_t cpu_limit;
} weft_pool_config_t;

/** A job: @p worker is the index of the worker running it. */
typedef void (*weft_job_fn)(void *arg, uint32_t worker);

/** A parallel-for body over items [begin, end). */
typedef void (*weft_range_fn)(void *arg, uint32_t begin, uint32_t end,
                              uint32_t worker);

/**
 * A dependency counter: the number of jobs submitted against it that have
 * not finished. Zero-initialise it (`= {0}` in C, `{}` in C++, where the
 * counter is a std::atomic<uint32_t>); any number of jobs may count on it;
 * wait on it with weft_pool_wait(). Padded to its own cache line because
 * workers decrement it concurrently.
 *
 * A worker that runs several jobs of one counter in a row may subtract them
 * together, once it turns to anything else (another counter's job, an
 * empty queue, a wait). So read directly, pending is an upper bound that
 * may lag behind; it reaches zero exactly when every job finished, and
 * weft_pool_wait() never misses that. A job must not wait, other than
 * through weft_pool_wait(), for its own counter to drop.
 */
typedef struct weft_counter_t {
#ifdef __cplusplus
  alignas(64) std::atomic<uint32_t> pending;
#else
  _Alignas(64) _Atomic uint32_t pending;
#endif
  unsigned char pad_[64 - sizeof(uint32_t)];
} weft_counter_t;

/* The C ABI: one cache line, the counter first, in C and in C++ alike. */
#ifdef __cplusplus
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                  alignof(std::atomic<uint32_t>) == alignof(uint32_t),
              "std::atomic<uint32_t> must be laid out as uint32_t");
static_assert(sizeof(weft_counter_t) == 64 && alignof(weft_counter_t) == 64 &&
                  offsetof(weft_counter_t, pending) == 0,
              "weft_counter_t must be one 64-byte line");
#else
_Static_assert(sizeof(_Atomic uint32_t) == sizeof(uint32_t) &&
                   _Alignof(_Atomic uint32_t) == _Alignof(uint32_t),
               "_Atomic uint32_t must be laid out as uint32_t");
_Static_assert(sizeof(weft_counter_t) == 64 && _Alignof(weft_counter_t) == 64 &&
                   offsetof(weft_counter_t, pending) == 0,
               "weft_counter_t must be one 64-byte line");
#endif

/**
 * Per-worker counters, filled by weft_pool_worker_stats(). A participating
 * caller (worker 0) counts only the jobs it runs while waiting; it has no
 * sleeps, busy or idle time.
 */
typedef struct weft_worker_stats_t {
  uint64_t jobs;          /**< jobs taken from a queue and run */
  uint64_t inline_jobs;   /**< jobs run inline because a queue was full */
  uint64_t local_steals;  /**< jobs stolen from a worker of the same node */
  uint64_t remote_steals; /**< jobs stolen from another node */
  uint64_t sleeps;        /**< times the worker went to sleep */
  uint64_t busy_ns;       /**< time spent running jobs, so far */
  uint64_t idle_ns;       /**< time spent looking for work or asleep */
  /** jobs it took, asleep in an oversubscribed crew, because its crew had
   *  finished no job for a while (see weft_pool_stats_t::cpus) */
  uint64_t rescues;
} weft_worker_stats_t;

/**
 * Creates a pool and starts its workers. Any thread. *out is owned by the
 * caller until weft_pool_destroy(). Returns WEFT_EINVAL (bad config),
 * WEFT_ENOMEM, or WEFT_ELIMIT when threads could not be started.
 */
int weft_pool_create(const weft_pool_config_t *config, weft_pool_t **out);

/** Stops the workers (after the jobs already queued ran) and frees the
 * pool. The thread that created it; NULL is a no-op. */
void weft_pool_destroy(weft_pool_t *pool);

/** Stops the workers after they drained the queues. Owner thread;
 * submitting to a stopped pool runs jobs inline. */
void weft_pool_stop(weft_pool_t *pool);

/** Starts the workers again after weft_pool_stop(). Owner thread. Returns
 * 0, or WEFT_ELIMIT when threads could not be started. */
int weft_pool_start(weft_pool_t *pool);

/** Workers in the pool (the caller included when it participates). Any
 * thread. */
uint32_t weft_pool_workers(const weft_pool_t *pool);

/** The pool's placement plan, owned by the pool; lives as long as the
 * pool. Any thread. */
const weft_plan_t *weft_pool_plan(const weft_pool_t *pool);

/**
 * Submits a job. @p self is the calling worker (as a job received it) or
 * WEFT_WORKER_EXTERNAL. @p done, when not NULL, counts the job until it
 * finished. @p node is a NUMA node the job should run near
 * (WEFT_WORKER_EXTERNAL: anywhere): from an external thread the job goes to
 * that node's group first. Any thread. Never fails: with no room it runs
 * the job inline.
 */
void weft_pool_submit(weft_pool_t *pool, uint32_t self, weft_job_fn fn,
                      void *arg, weft_counter_t *done, uint32_t node);

/**
 * Waits until @p counter reaches zero, running other jobs meanwhile.
 * @p self as for weft_pool_submit(). Any thread.
 */
void weft_pool_wait(weft_pool_t *pool, uint32_t self, weft_counter_t *counter);

/**
 * Runs @p fn over [begin, end) split into ranges of at most @p grain items
 * (0: the range / 256, rounded up), and returns when all ran. Ranges split
 * in halves until they fit the grain, so the set of ranges depends only on
 * the range and the grain, never on the number of workers. The calling thread
 * takes part. Nested calls from inside a body are fine. @p self as for
 * weft_pool_submit().
 */
void weft_pool_parallel_for(weft_pool_t *pool, uint32_t self, uint32_t begin,
                            uint32_t end, uint32_t grain, weft_range_fn fn,
                            void *arg);

/** Copies worker @p w's counters (racy snapshot while running). Any
 * thread. Returns WEFT_EINVAL for a bad index. */
int weft_pool_worker_stats(const weft_pool_t *pool, uint32_t w,
                           weft_worker_stats_t *out);

/**
 * Pool-wide counters, filled by weft_pool_stats(). A pool of several NUMA
 * groups on this machine binds each chunk a world allocates for a group to
 * that group's memory (weft_topology_node_memory()); a binding the OS
 * refuses leaves the chunk wherever the kernel put it, and is counted
 * here rather than ignored.
 */
typedef struct weft_pool_stats_t {
  uint64_t membind_calls;    /**< chunk memory bindings attempted */
  uint64_t membind_failures; /**< ...that the OS refused */
  int membind_errno;         /**< errno of the last refusal, 0 for none */
  /**
   * How many workers may be awake at once: one per CPU the workers are
   * bound to (per core or PU; the process's whole CPU mask for unbound
   * workers), 0 on a foreign topology, which sets no limit. A pool with
   * more workers than that (a container whose quota is below its CPU
   * count, a shared node) is oversubscribed: the workers bound to the same
   * CPUs form a crew, work wakes a sleeper only in a crew with a CPU to
   * spare, and the others stay asleep, so that the kernel never preempts
   * a thread in the middle of a job for another that has nothing to do.
   * A CPU limit (weft_pool_config_t::cpu_limit, a cgroup quota) caps it.
   */
  uint32_t cpus;
  uint32_t crews;   /**< groups of workers bound to the same CPUs */
  uint64_t rescues; /**< the workers' rescues, summed */
} weft_pool_stats_t;

/** Copies the pool's counters (a racy snapshot while worlds allocate).
 * Any thread. Returns WEFT_EINVAL for a NULL pool or out. */
int weft_pool_stats(const weft_pool_t *pool, weft_pool_stats_t *out);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_POOL_H */
