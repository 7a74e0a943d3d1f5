/* SPDX-License-Identifier: MIT */
/*
 * Finding work: a worker's own deque and its group's injection queue
 * first, then stealing from the others in the plan's steal order (several
 * jobs at once within a group), then the other groups' injection queues;
 * and the backoff after a steal of jobs too small to be worth moving.
 * What the worker loop calls on every turn (weft__pool_find_own(),
 * weft__steal_patient()) is inline here; the steal itself is
 * weft__pool_find_work() in steal.c.
 */
#ifndef WEFT_SCHEDULER_STEAL_H
#define WEFT_SCHEDULER_STEAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/platform.h"
#include "scheduler/deque.h"
#include "scheduler/pool_internal.h"

/* Stolen jobs that ran faster than this each (moving them included) were
 * not worth moving; and the least a thief then waits before it steals
 * again. See weft__steal_patient(). */
#define WEFT__TINY_JOB_NS 500u
#define WEFT__STEAL_BACKOFF_NS 2000u

/* Copies a job out of its ring slot and frees the slot. */
static inline weft__pool_job_t weft__pool_take(weft__pool_job_t *slot) {
  weft__pool_job_t j = *slot;
  atomic_store_explicit(&slot->state, 0, memory_order_release);
  return j;
}

/* Takes the oldest job of an injection queue into *out; false when it is
 * empty. Looks at the size without the lock first, so that an empty queue
 * costs one load. */
static inline bool weft__inject_pop(weft__inject_t *q, weft__pool_job_t *out) {
  if (atomic_load_explicit(&q->size, memory_order_relaxed) == 0)
    return false;
  pthread_mutex_lock(&q->mu);
  bool ok = q->count > 0;
  if (ok) {
    *out = q->jobs[q->head];
    q->head = (q->head + 1) % q->cap;
    q->count--;
    atomic_store_explicit(&q->size, q->count, memory_order_relaxed);
  }
  pthread_mutex_unlock(&q->mu);
  return ok;
}

/* A job from worker w's own deque or its group's injection queue. */
static inline bool weft__pool_find_own(weft_pool_t *p, weft__worker_t *w,
                                       weft__pool_job_t *out) {
  weft__pool_job_t *slot = weft__deque_pop(&w->dq);
  if (slot) {
    *out = weft__pool_take(slot);
    return true;
  }
  return weft__inject_pop(&p->inject[w->group], out);
}

/*
 * True while worker w, out of work of its own, should not steal yet.
 * Stealing a job costs its submitter too: the job's ring slot, the deque
 * slot and index lines move between cores, and the submitter pays to get
 * them back when it queues the next job. For jobs that run in less time
 * than that (many tiny jobs from one thread), a thief that keeps taking
 * them, or worse keeps up and takes each as it appears, makes the
 * submitter slower than running them all itself. So when the last batch
 * ran faster than WEFT__TINY_JOB_NS a job, the thief waits as long as it
 * took (WEFT__STEAL_BACKOFF_NS at least) before the next steal: jobs pile
 * up meanwhile, run by their submitter or taken together later, and the
 * thief moves at most half of them. Bigger jobs are stolen at once.
 */
static inline bool weft__steal_patient(weft__worker_t *w) {
  if (w->stole_n) { /* the batch just ran out: judge it */
    uint64_t t = weft__now_ns(), dt = t - w->stole_at;
    w->steal_after = 0;
    if (dt < (uint64_t)w->stole_n * WEFT__TINY_JOB_NS)
      w->steal_after =
          t + (dt > WEFT__STEAL_BACKOFF_NS ? dt : WEFT__STEAL_BACKOFF_NS);
    w->stole_n = 0;
  }
  return w->steal_after && weft__now_ns() < w->steal_after;
}

/*
 * Takes a job for worker self (an outsider: self >= the pool's workers)
 * into *out; false when there is none anywhere. See steal.c.
 */
bool weft__pool_find_work(weft_pool_t *p, uint32_t self, weft__pool_job_t *out,
                          bool batch);

/* Runs a job at once and pays its counter (pool.c's run_job() without a
 * debt): for the one job a steal could not keep. */
void weft__pool_run_now(weft_pool_t *p, uint32_t self,
                        const weft__pool_job_t *j);

#endif /* WEFT_SCHEDULER_STEAL_H */
