/* SPDX-License-Identifier: MIT */
/*
 * A worker's busy and idle time as a seqlock: the owning worker switches
 * periods (the one writer), any thread takes a snapshot.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/platform.h"
#include "scheduler/pool_internal.h"
#include "scheduler/pool_stats.h"
#include "weft/error.h"
#include "weft/pool.h"

/* Closes the open busy or idle period and opens the other kind (or none,
 * at exit), so that a stats reader can add the open period's time. */
void weft__stats_switch(weft__worker_stats_t *s, bool busy, bool open) {
  /* A seqlock write (the worker is the only writer). The clock is read
   * inside it, as the reader reads its own: a snapshot taken before the
   * switch then never counts time past the switch. That needs the odd
   * count visible before the clock is read, a store then a load: only a
   * full fence orders them. With a release fence the store could wait in
   * the store buffer while the clock was read, a reader could count time
   * past the switch, and its next snapshot showed less busy time
   * (stress_pool_stats_never_go_back caught that within a second). */
  uint32_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
  atomic_store_explicit(&s->seq, q + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_seq_cst);
  uint64_t t = weft__now_ns();
  uint64_t since = atomic_load_explicit(&s->since, memory_order_relaxed);
  if (since)
    weft__stats_bump(atomic_load_explicit(&s->busy, memory_order_relaxed)
                         ? &s->busy_ns
                         : &s->idle_ns,
                     t - since);
  atomic_store_explicit(&s->busy, busy, memory_order_relaxed);
  atomic_store_explicit(&s->since, open ? t : 0, memory_order_relaxed);
  atomic_store_explicit(&s->seq, q + 2, memory_order_release);
}

int weft_pool_worker_stats(const weft_pool_t *p, uint32_t w,
                           weft_worker_stats_t *out) {
  if (!p || !out || w >= p->nworkers)
    return WEFT_EINVAL;
  const weft__worker_stats_t *s = &p->workers[w].stats;
  uint32_t q0, q1;
  uint64_t busy_ns, idle_ns, since, t;
  bool busy;
  do { /* a consistent snapshot of the period counters (seqlock read) */
    q0 = atomic_load_explicit(&s->seq, memory_order_acquire);
    busy_ns = atomic_load_explicit(&s->busy_ns, memory_order_relaxed);
    idle_ns = atomic_load_explicit(&s->idle_ns, memory_order_relaxed);
    since = atomic_load_explicit(&s->since, memory_order_relaxed);
    busy = atomic_load_explicit(&s->busy, memory_order_relaxed);
    t = weft__now_ns();
    /* The clock before the second count (see weft__stats_switch()). */
    atomic_thread_fence(memory_order_seq_cst);
    q1 = atomic_load_explicit(&s->seq, memory_order_relaxed);
  } while ((q0 & 1) || q0 != q1);
  out->jobs = atomic_load_explicit(&s->jobs, memory_order_relaxed);
  out->inline_jobs =
      atomic_load_explicit(&s->inline_jobs, memory_order_relaxed);
  out->local_steals =
      atomic_load_explicit(&s->local_steals, memory_order_relaxed);
  out->remote_steals =
      atomic_load_explicit(&s->remote_steals, memory_order_relaxed);
  out->sleeps = atomic_load_explicit(&s->sleeps, memory_order_relaxed);
  out->rescues = atomic_load_explicit(&s->rescues, memory_order_relaxed);
  out->busy_ns = busy_ns;
  out->idle_ns = idle_ns;
  /* Add the period in progress. */
  if (since && t > since) {
    if (busy)
      out->busy_ns += t - since;
    else
      out->idle_ns += t - since;
  }
  return 0;
}
