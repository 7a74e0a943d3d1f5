/* SPDX-License-Identifier: MIT */
/*
 * The private layout of the pool, shared by pool.c (workers and jobs) and
 * numa.c (chunk memory per NUMA group).
 */
#ifndef WEFT_SCHEDULER_POOL_INTERNAL_H
#define WEFT_SCHEDULER_POOL_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/platform.h"
#include "scheduler/deque.h"
#include "weft/pool.h"

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
  weft__deque_t dq;
  weft__pool_job_t *ring;
  uint32_t ring_next; /* owner only */
  /* Finished jobs not yet subtracted from their counter, all of them on
   * owed (owner only; see weft__pool_pay() below). */
  uint32_t owed_n;
  weft_counter_t *owed;
  /* The last steal (owner only; see weft__steal_patient() in steal.h): when,
   * how many jobs it brought (0: judged already), and no stealing before
   * steal_after. */
  uint64_t stole_at, steal_after;
  uint32_t stole_n;
  uint32_t index;
  uint32_t group;
  uint32_t crew; /* the workers it shares CPUs with (see weft__crew_t) */
  bool started;
  pthread_t thread;
  struct weft_pool_t *pool;
  weft__worker_stats_t stats;
} weft__worker_t;

/* A queue for jobs submitted by threads outside the pool, one per NUMA
 * group; jobs are stored by value, so a slot is free once popped. */
typedef struct weft__inject_t {
  pthread_mutex_t mu;
  weft__pool_job_t *jobs;
  uint32_t head, count, cap;
  _Atomic uint32_t size; /* count, readable without the lock */
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
 * weft__crews_wake(), which skips crews that are full or have nobody asleep. A
 * waker counts the sleeper it wakes as awake at once and leaves it a ticket, so
 * that a burst of jobs wakes no more sleepers than there are CPUs to spare.
 */
typedef struct weft__crew_t {
  WEFT__LINE_ALIGNED _Atomic uint32_t awake;
  _Atomic uint32_t sleepers;
  uint32_t tickets; /* wake-ups given and not yet taken */
  uint32_t cpus;    /* UINT32_MAX: never full (a foreign topology) */
  uint32_t nworkers;
  uint32_t *members; /* nworkers, ascending (into the pool's crew_members) */
  pthread_mutex_t mu;
  pthread_cond_t cv;
} weft__crew_t;

struct weft_pool_t {
  weft_topology_t *topo;
  weft_plan_t *plan;
  weft__worker_t *workers;
  uint32_t nworkers;
  uint32_t first_thread; /* 1 when worker 0 is the caller */
  /* With bind_caller: the thread last bound as worker 0 (pthread_self(),
   * 0 for none) and its binding before, restored when it destroys the
   * pool (see caller_enter()). */
  _Atomic uintptr_t caller_thread;
  void *caller_saved;
  uint32_t cap;
  uint64_t spin_ns;
  weft__inject_t *inject; /* one per group */
  uint32_t ngroups;
  _Atomic uint32_t next_inject; /* round-robin for "anywhere" jobs */
  _Atomic bool stopping;
  bool running;
  /* Sleep and wake: see weft__crew_sleep() and weft__crews_wake() (crew.c).
   * sleepers counts the sleepers of every crew, so that a pool with none pays
   * one load per job; oversubscribed: some crew has more workers than CPUs. */
  weft__crew_t *crews;
  uint32_t ncrews;
  uint32_t *crew_members;
  /* The most workers awake at once over all crews (the CPU limit;
   * UINT32_MAX: none) and how many are (under no lock: wakers reserve a
   * place with a compare-and-swap). */
  uint32_t awake_cap;
  _Atomic uint32_t awake_all;
  bool oversubscribed;
  _Atomic uint32_t sleepers;
  /* Threads of the pool looking for work (spinning, asleep, or waiting on
   * a counter with nothing to run): splitting a range pays only if some
   * are. */
  _Atomic uint32_t idle;
  /* NUMA-local chunk memory (numa.c): a jemalloc arena per group, made on
   * first use (0: not yet). */
  pthread_mutex_t arena_mu;
  unsigned *arenas;
  /* Chunk memory bindings (numa.c): attempted, refused, the last errno. */
  _Atomic uint64_t membind_calls, membind_failures;
  _Atomic int membind_errno;
};

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
