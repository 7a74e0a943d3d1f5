/* SPDX-License-Identifier: MIT */
/*
 * Stealing: where a worker out of work of its own finds more (see
 * steal.h), and how much it takes at once.
 */
#include "scheduler/steal.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/platform.h"
#include "scheduler/deque.h"
#include "scheduler/pool_internal.h"
#include "scheduler/pool_stats.h"
#include "scheduler/topology.h"

/* The most jobs one steal takes (see steal_more()). */
#define WEFT__STEAL_MAX 32u

/*
 * After taking one job from v, moves up to half of what v still holds
 * (WEFT__STEAL_MAX - 1 at most) into w's own deque, one steal at a time: a
 * thief of many small jobs then comes back for more once per batch instead
 * of once per job, and leaves the victim alone meanwhile. The jobs stay
 * stealable where they land, and their slots stay in v's ring (freed by
 * whoever takes them). Only within a group: work does not move across
 * nodes in bulk.
 */
static uint32_t steal_more(weft_pool_t *p, weft__worker_t *w,
                           weft__worker_t *v) {
  uint32_t want = weft__deque_size(&v->dq) / 2;
  if (want > WEFT__STEAL_MAX - 1)
    want = WEFT__STEAL_MAX - 1;
  /* Room: the owner's view of its own deque, never smaller than the
   * truth, so every push below succeeds. */
  uint32_t room = p->cap - weft__deque_size(&w->dq);
  uint32_t n = 0;
  for (; n < want && n < room; n++) {
    weft__pool_job_t *slot = weft__deque_steal(&v->dq, NULL);
    if (!slot)
      break;
    if (!weft__deque_push(&w->dq, slot)) {
      weft__pool_job_t j =
          weft__pool_take(slot); /* cannot happen (see room); never lose it */
      weft__pool_run_now(p, w->index, &j);
    }
  }
  return n;
}

/*
 * Takes a job for worker self: its own deque, its group's injection
 * queue, then the others' deques in the plan's steal order, then the other
 * injection queues. Outsiders (self out of range) steal from everyone.
 * Worker self must be the calling thread (or stopped).
 * With batch, a steal may bring more jobs along (steal_more); never while
 * holding the pool's lock, since a job may run there in the worst case.
 */
bool weft__pool_find_work(weft_pool_t *p, uint32_t self, weft__pool_job_t *out,
                          bool batch) {
  if (self < p->nworkers) {
    weft__worker_t *w = &p->workers[self];
    weft__pool_job_t *slot = weft__deque_pop(&w->dq);
    if (slot) {
      *out = weft__pool_take(slot);
      return true;
    }
    if (weft__inject_pop(&p->inject[w->group], out))
      return true;
    /* Out of local work: what it finished is paid before it goes after
     * others' (so a debt never outlives the jobs at hand). */
    weft__pool_pay(w);
    const uint32_t *order;
    uint32_t n = weft_plan_steal_order(p->plan, self, &order);
    /* Big plans store only the nearest victims; the rest of the order is
     * walked on demand. */
    weft_steal_iter_t rest;
    bool past = n + 1 < p->nworkers;
    if (past)
      weft_plan_steal_iter(p->plan, self, n, &rest);
    for (uint32_t i = 0, vi = 0;
         i < n ? (vi = order[i], true)
               : past && weft_plan_steal_next(p->plan, &rest, &vi);
         i++) {
      weft__worker_t *v = &p->workers[vi];
      bool contended = false;
      slot = weft__deque_steal(&v->dq, &contended);
      if (slot) {
        *out = weft__pool_take(slot);
        bool local = v->group == w->group;
        uint32_t more = batch && local ? steal_more(p, w, v) : 0;
        if (batch && self >= p->first_thread) { /* see weft__steal_patient() */
          w->stole_at = weft__now_ns();
          w->stole_n = 1 + more;
        }
        weft__stats_bump(
            local ? &w->stats.local_steals : &w->stats.remote_steals, 1 + more);
        return true;
      }
    }
  } else {
    for (uint32_t i = 0; i < p->nworkers; i++) {
      bool contended = false;
      weft__pool_job_t *slot = weft__deque_steal(&p->workers[i].dq, &contended);
      if (slot) {
        *out = weft__pool_take(slot);
        return true;
      }
    }
  }
  for (uint32_t g = 0; g < p->ngroups; g++)
    if (weft__inject_pop(&p->inject[g], out))
      return true;
  return false;
}
