/* SPDX-License-Identifier: MIT */
/*
 * The private layout of the pool, shared by pool.c (workers and jobs) and
 * numa.c (chunk memory per NUMA group).
 */
#ifndef WEFT_SCHEDULER_POOL_INTERNAL_H
#define WEFT_SCHEDULER_POOL_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/hooks.h"
#include "core/platform.h"
#include "scheduler/deque.h"
#include "weft/pool.h"

/*
 * Who writes what. Every struct below groups its fields by writer, and
 * each group starts a cache line (WEFT__LINE_ALIGNED), so that one
 * writer's stores never invalidate a line another thread only reads:
 *   set once: before the workers start (weft_pool_create(), crew.c);
 *             afterwards only read, so the line stays shared in every
 *             cache;
 *   owner:    one thread alone (a worker, the pool's owner);
 *   any:      any thread, atomically or under the group's lock.
 * The static asserts after the structs hold the groups to their lines.
 */

/* A queued job of the pool (not the pipeline's weft__job_t, a run of a
 * system's chunks, which a pool job may carry as its argument). Range jobs
 * carry their range; plain jobs leave it empty. */
typedef struct weft__pool_job_t {
  _Atomic uint32_t state; /* 0: free, 1: queued */
  uint32_t begin, end, grain;
  weft_job_fn fn;
  weft_range_fn range_fn;
  void *arg;
  weft_counter_t *done;
} weft__pool_job_t;

/* A slot of a worker's ring: one job per line. The owner writes a slot
 * while a thief copies out and frees the one before it; sharing a line,
 * each would pull it from the other. */
typedef struct weft__job_slot_t {
  WEFT__LINE_ALIGNED weft__pool_job_t job;
} weft__job_slot_t;

/* Counters the owning worker updates and anyone may read. */
typedef struct weft__worker_stats_t {
  _Atomic uint64_t jobs, inline_jobs, local_steals, remote_steals, sleeps;
  _Atomic uint64_t rescues;
  _Atomic uint64_t busy_ns, idle_ns; /* closed periods */
  _Atomic uint64_t since;            /* start of the open period, 0: none */
  _Atomic uint32_t busy;             /* the open period is busy */
  /* Odd while the worker switches periods: readers retry, so that two
   * snapshots never see the time go backwards. */
  _Atomic uint32_t seq;
} weft__worker_stats_t;

typedef struct weft__worker_t {
  /* Its deque, whose indices have lines of their own (deque.h): bottom
   * the owner's, top any thief's. */
  weft__deque_t dq;
  /* Set once (make_workers()); thread and started by the pool's owner
   * while the worker does not run. Thieves read group. */
  WEFT__LINE_ALIGNED weft__job_slot_t *ring;
  struct weft_pool_t *pool;
  uint32_t index;
  uint32_t group;
  uint32_t crew; /* the workers it shares CPUs with (see weft__crew_t) */
  bool started;
  pthread_t thread;
  /* Owner: the worker's own thread alone writes these. Other threads
   * read only stats, now and then (pool_stats.c, crew.c's rescues). */
  WEFT__LINE_ALIGNED uint32_t ring_next;
  /* Finished jobs not yet subtracted from their counter, all of them on
   * owed (see weft__pool_pay() below). */
  uint32_t owed_n;
  weft_counter_t *owed;
  /* The last steal (see weft__steal_patient() in steal.h): when, how many
   * jobs it brought (0: judged already), and no stealing before
   * steal_after. */
  uint64_t stole_at, steal_after;
  uint32_t stole_n;
  weft__worker_stats_t stats;
} weft__worker_t;

/* A queue for jobs submitted by threads outside the pool, one per NUMA
 * group; jobs are stored by value, so a slot is free once popped. */
typedef struct weft__inject_t {
  /* Any: submitters and takers under mu; size also read without it. */
  WEFT__LINE_ALIGNED pthread_mutex_t mu;
  uint32_t head, count;
  _Atomic uint32_t size; /* count, readable without the lock */
  /* Set once (make_workers()). */
  WEFT__LINE_ALIGNED weft__pool_job_t *jobs;
  uint32_t cap;
} weft__inject_t;

/*
 * A crew: the workers bound to the same CPUs (a core, a PU, or the whole
 * CPU mask when unbound), of which at most one per CPU stays awake.
 * More would only take turns on those CPUs, and a thread the kernel
 * preempts in the middle of a job holds up everyone waiting for that job.
 * So work wakes a sleeper only in a crew with a CPU to spare, and a
 * worker whose crew has more awake threads than CPUs sleeps instead of
 * spinning. The caller acting as worker 0 counts as always awake.
 * awake, sleepers and tickets change under mu only (wakers and the
 * crew's workers); they are atomic for the unlocked reads of
 * weft__crews_wake(), which skips crews that are full or have nobody
 * asleep. A waker counts the sleeper it wakes as awake at once and leaves
 * it a ticket, so that a burst of jobs wakes no more sleepers than there
 * are CPUs to spare.
 */
typedef struct weft__crew_t {
  /* Set once (weft__crews_make()). */
  WEFT__LINE_ALIGNED uint32_t cpus; /* UINT32_MAX: never full (foreign) */
  uint32_t nworkers;
  uint32_t *members; /* nworkers, ascending (into the pool's crew_members) */
  /* Any: wakers and the crew's workers, under mu. */
  WEFT__LINE_ALIGNED _Atomic uint32_t awake;
  _Atomic uint32_t sleepers;
  uint32_t tickets; /* wake-ups given and not yet taken */
  pthread_mutex_t mu;
  pthread_cond_t cv;
} weft__crew_t;

struct weft_pool_t {
  /* Set once (weft_pool_create(); the crews and awake_cap in crew.c).
   * First the hook table core uses (core/hooks.h), since core finds it
   * through the opaque pointer (weft__pool_hooks()). */
  WEFT__LINE_ALIGNED const weft__pool_hooks_t *hooks;
  weft_topology_t *topo;
  weft_plan_t *plan;
  weft__worker_t *workers;
  uint32_t nworkers;
  uint32_t first_thread; /* 1 when worker 0 is the caller */
  uint32_t cap;
  uint32_t ngroups;
  uint64_t spin_ns;
  weft__inject_t *inject; /* one per group */
  /* Sleep and wake: see weft__crew_sleep() and weft__crews_wake()
   * (crew.c); oversubscribed: some crew has more workers than CPUs. */
  weft__crew_t *crews;
  uint32_t *crew_members;
  uint32_t ncrews;
  /* The most workers awake at once over all crews (the CPU limit;
   * UINT32_MAX: none). */
  uint32_t awake_cap;
  bool oversubscribed;
  /* NUMA-local chunk memory (numa.c): a jemalloc arena per group, made on
   * first use (0: not yet; the entries under arena_mu, below). */
  unsigned *arenas;
  /* Owner: the pool's owner thread (start, stop), while workers run. */
  WEFT__LINE_ALIGNED _Atomic bool stopping;
  bool running;
  /* Owner: the thread acting as worker 0. With bind_caller: the thread
   * last bound as worker 0 (pthread_self(), 0 for none) and its binding
   * before, restored when it destroys the pool (see caller_enter()). */
  WEFT__LINE_ALIGNED _Atomic uintptr_t caller_thread;
  void *caller_saved;
  /* Any worker going to sleep or waking one: how many sleep over every
   * crew, so that a pool with none pays one load per job, and how many
   * are awake (under no lock: wakers reserve a place with a
   * compare-and-swap). */
  WEFT__LINE_ALIGNED _Atomic uint32_t sleepers;
  _Atomic uint32_t awake_all;
  /* Any thread of the pool at its busy/idle switches: those looking for
   * work (spinning, asleep, or waiting on a counter with nothing to run);
   * splitting a range pays only if some are. */
  WEFT__LINE_ALIGNED _Atomic uint32_t idle;
  /* Any outsider submitting: round-robin for "anywhere" jobs. */
  WEFT__LINE_ALIGNED _Atomic uint32_t next_inject;
  /* Any thread allocating chunk memory (numa.c): arenas' entries under
   * arena_mu; bindings attempted, refused, the last errno, atomically. */
  WEFT__LINE_ALIGNED pthread_mutex_t arena_mu;
  _Atomic uint64_t membind_calls, membind_failures;
  _Atomic int membind_errno;
};

/* Each group fits the lines it was given: a field added to one must not
 * push it onto the next group's line unnoticed. */
_Static_assert(sizeof(weft__job_slot_t) == WEFT__CACHE_LINE,
               "a ring slot is one line");
_Static_assert(offsetof(weft__worker_t, ring_next) -
                       offsetof(weft__worker_t, ring) ==
                   WEFT__CACHE_LINE,
               "a worker's set-once fields fit one line");
_Static_assert(sizeof(weft__worker_t) - offsetof(weft__worker_t, ring_next) ==
                   2 * WEFT__CACHE_LINE,
               "a worker's owner fields fit two lines");
_Static_assert(offsetof(weft__inject_t, jobs) == WEFT__CACHE_LINE &&
                   sizeof(weft__inject_t) == 2 * WEFT__CACHE_LINE,
               "an injection queue's groups fit a line each");
_Static_assert(offsetof(weft__crew_t, awake) == WEFT__CACHE_LINE &&
                   sizeof(weft__crew_t) == 3 * WEFT__CACHE_LINE,
               "a crew's set-once fields fit one line, its lock group two");
_Static_assert(offsetof(weft_pool_t, stopping) == 2 * WEFT__CACHE_LINE,
               "the pool's set-once fields fit two lines");
_Static_assert(offsetof(weft_pool_t, sleepers) -
                       offsetof(weft_pool_t, caller_thread) ==
                   WEFT__CACHE_LINE,
               "the pool's caller group fits one line");
_Static_assert(offsetof(weft_pool_t, idle) - offsetof(weft_pool_t, sleepers) ==
                   WEFT__CACHE_LINE,
               "the pool's sleep counts fit one line");
_Static_assert(sizeof(weft_pool_t) - offsetof(weft_pool_t, arena_mu) ==
                   WEFT__CACHE_LINE,
               "the pool's chunk memory group fits one line");

/*
 * Finished jobs are subtracted from their counter in batches. A thread in
 * the pool's own loops (a worker between jobs, a waiter) owes each finished
 * job to its counter and pays the sum in one atomic later, so that many
 * small jobs on one counter do not move its cache line between cores once
 * per job.
 *
 * A debt never hides zero from a waiter for long: a thread owes to one
 * counter at a time, and pays before anything but one more job on that
 * same counter: before a job of another counter (or of none), when its
 * own queue is empty (before it steals, spins or sleeps), on entering and
 * leaving weft_pool_wait(), in weft__pool_help(). So while a debt is held its
 * thread is either in the pool's non-blocking code or running a job that
 * counts on the owed counter, which that counter's waiters wait for
 * anyway. Jobs run inline by a submit, by an outsider or by stop pay at
 * once: their thread returns to code that may block.
 */
static inline void weft__pool_pay(weft__worker_t *w) {
  if (w->owed_n)
    atomic_fetch_sub_explicit(&w->owed->pending, w->owed_n,
                              memory_order_acq_rel);
  w->owed_n = 0;
  w->owed = NULL;
}

/* True when worker w's crew has more threads awake than CPUs, or the pool
 * more than its CPU limit. */
static inline bool weft__crew_crowded(const weft_pool_t *p,
                                      const weft__worker_t *w) {
  const weft__crew_t *c = &p->crews[w->crew];
  return atomic_load_explicit(&c->awake, memory_order_relaxed) > c->cpus ||
         atomic_load_explicit(&p->awake_all, memory_order_relaxed) >
             p->awake_cap;
}

/* Runs one queued job, if any, as worker self (a waiting thread's help);
 * false when none was found. */
bool weft__pool_help(weft_pool_t *p, uint32_t self);

/* Sets the pool's CPU limit (awake_cap) from config->cpu_limit or the
 * cgroup's quota, shrinking a default worker count to it (crew.c). Before
 * the plan is computed. */
void weft__crews_limit(weft_pool_t *p, weft_pool_config_t *config);

/* Sorts the planned workers into crews and counts them all awake (crew.c).
 * 0 or WEFT_ENOMEM (what was made is freed by weft__crews_free()). */
int weft__crews_make(weft_pool_t *p);

/* Frees the crews (any state weft__crews_make() left). */
void weft__crews_free(weft_pool_t *p);

/* Tells a sleeping worker that work arrived (crew.c): one in a crew with
 * a CPU to spare, looking at crew from first. Any thread, after queueing
 * the job. */
void weft__crews_wake(weft_pool_t *p, uint32_t from);

/* Puts worker w to sleep (crew.c) unless work shows up at the last moment,
 * which it then returns in *job (true). Worker w's own thread only. */
bool weft__crew_sleep(weft_pool_t *p, weft__worker_t *w, weft__pool_job_t *job);

/* Waits a moment in a polling loop of worker self (an outsider:
 * UINT32_MAX): yields the CPU when its crew has more awake threads than
 * CPUs, so that a preempted thread holding a job gets to finish it. */
void weft__pool_relax(weft_pool_t *p, uint32_t self);

/* True when some thread is idle and worker self has no queued job of its
 * own: splitting work now would get it picked up. */
bool weft__pool_hungry(weft_pool_t *p, uint32_t self);

#endif /* WEFT_SCHEDULER_POOL_INTERNAL_H */
