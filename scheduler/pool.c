/* SPDX-License-Identifier: MIT */
/*
 * The worker pool: threads placed by a plan, a Chase–Lev deque and a fixed
 * ring of job slots per worker, injection queues for threads outside the
 * pool, the worker loop, dependency counters and parallel-for. Finding
 * and stealing work is in steal.c, sleeping and waking (a protocol that
 * never loses a wake-up) in crew.c, the per-worker counters in
 * pool_stats.c.
 *
 * A job slot belongs to the worker that submitted it. It is freed (its
 * state set back to 0) by whichever thread takes the job, right after
 * copying it out, so a ring is reusable as soon as its jobs have started;
 * when the next slot is still taken, the ring is full and the job runs
 * inline. Nothing is allocated after the pool starts.
 */
#include "weft/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/platform.h"
#include "scheduler/deque.h"
#include "scheduler/numa.h"
#include "scheduler/pool_internal.h"
#include "scheduler/pool_stats.h"
#include "scheduler/steal.h"
#include "scheduler/topology.h"
#include "weft/error.h"

/* Core reads a pool's hook table through the opaque pointer. */
_Static_assert(offsetof(struct weft_pool_t, hooks) == 0,
               "the hook table must be a pool's first member");

#define WEFT__POOL_CAP_DEFAULT 4096u
#define WEFT__SPIN_US_DEFAULT 50u

/* ---- running jobs ----------------------------------------------------------
 */

static void run_range(weft_pool_t *p, uint32_t self, weft_range_fn fn,
                      void *arg, uint32_t b, uint32_t e, uint32_t grain,
                      weft_counter_t *done);

/* Runs a job taken from a queue (already copied out of its slot). With
 * owe (the worker struct of self, in a pool loop) its completion is owed,
 * otherwise paid at once. */
static void run_job(weft_pool_t *p, uint32_t self, const weft__pool_job_t *j,
                    weft__worker_t *owe) {
  if (owe && owe->owed_n && owe->owed != j->done)
    weft__pool_pay(owe);
  if (j->range_fn)
    run_range(p, self, j->range_fn, j->arg, j->begin, j->end, j->grain,
              j->done);
  else
    j->fn(j->arg, self);
  if (!j->done)
    return;
  if (owe) {
    owe->owed = j->done;
    owe->owed_n++;
  } else {
    atomic_fetch_sub_explicit(&j->done->pending, 1, memory_order_acq_rel);
  }
}

WEFT__COLD void weft__pool_run_now(weft_pool_t *p, uint32_t self,
                                   const weft__pool_job_t *j) {
  run_job(p, self, j, NULL);
}

static bool inject_push(weft__inject_t *q, const weft__pool_job_t *j) {
  pthread_mutex_lock(&q->mu);
  bool ok = q->count < q->cap;
  if (ok) {
    q->jobs[(q->head + q->count) % q->cap] = *j;
    q->count++;
    atomic_store_explicit(&q->size, q->count, memory_order_relaxed);
  }
  pthread_mutex_unlock(&q->mu);
  return ok;
}

/* Queues a job for worker self (or an injection queue for outsiders);
 * false when there is no room, and the caller runs it inline. */
static bool enqueue(weft_pool_t *p, uint32_t self, const weft__pool_job_t *j,
                    uint32_t node) {
  /* A job meant for another node goes to that node's group; outsiders
   * always use the injection queues. */
  bool elsewhere = self < p->nworkers && node != UINT32_MAX &&
                   weft_plan_place(p->plan, self)->node != node;
  if (self >= p->nworkers || elsewhere) {
    uint32_t g = UINT32_MAX;
    for (uint32_t k = 0; node != UINT32_MAX && k < p->ngroups; k++) {
      uint32_t gn;
      weft_plan_group(p->plan, k, &gn, NULL);
      if (gn == node)
        g = k;
    }
    if (g == UINT32_MAX)
      g = atomic_fetch_add_explicit(&p->next_inject, 1, memory_order_relaxed) %
          p->ngroups;
    return inject_push(&p->inject[g], j);
  }
  weft__worker_t *w = &p->workers[self];
  weft__pool_job_t *slot = &w->ring[w->ring_next].job;
  if (atomic_load_explicit(&slot->state, memory_order_acquire) != 0)
    return false; /* the ring is full */
  *slot = *j;
  atomic_store_explicit(&slot->state, 1, memory_order_relaxed);
  if (!weft__deque_push(&w->dq, slot)) {
    atomic_store_explicit(&slot->state, 0, memory_order_relaxed);
    return false;
  }
  w->ring_next = (w->ring_next + 1) & (p->cap - 1);
  return true;
}

/* Queues a job already counted on its counter (or runs it inline). */
static void submit_counted(weft_pool_t *p, uint32_t self,
                           const weft__pool_job_t *j, uint32_t node) {
  if (atomic_load_explicit(&p->stopping, memory_order_relaxed) ||
      !enqueue(p, self, j, node)) {
    /* No room (or no workers): run it here; never fail. */
    if (self < p->nworkers)
      weft__stats_bump(&p->workers[self].stats.inline_jobs, 1);
    run_job(p, self, j, NULL);
    return;
  }
  weft__crews_wake(p, self < p->nworkers ? p->workers[self].crew : 0);
}

static void submit_job(weft_pool_t *p, uint32_t self, const weft__pool_job_t *j,
                       uint32_t node) {
  if (j->done)
    atomic_fetch_add_explicit(&j->done->pending, 1, memory_order_relaxed);
  submit_counted(p, self, j, node);
}

void weft_pool_submit(weft_pool_t *p, uint32_t self, weft_job_fn fn, void *arg,
                      weft_counter_t *done, uint32_t node) {
  if (!p || !fn)
    return;
  weft__pool_job_t j = {.fn = fn, .arg = arg, .done = done};
  submit_job(p, self, &j, node);
}

void weft__pool_relax(weft_pool_t *p, uint32_t self) {
  if (p && p->oversubscribed && self < p->nworkers &&
      weft__crew_crowded(p, &p->workers[self])) {
    sched_yield();
    return;
  }
  weft__cpu_relax();
}

/* What worker w (NULL: an outsider) owes to c. */
static uint32_t owed_to(const weft__worker_t *w, const weft_counter_t *c) {
  return w && w->owed == c ? w->owed_n : 0;
}

/*
 * Binds the thread acting as worker 0 to worker 0's place (bind_caller),
 * once per thread: a relaxed load and a compare on every entry after the
 * first. A thread that stops acting as worker 0 keeps its binding; only
 * the last one's earlier binding is kept for weft_pool_destroy().
 */
static __attribute__((noinline)) void bind_caller(weft_pool_t *p,
                                                  uintptr_t me) {
  void *saved = NULL;
  if (weft__plan_bind_caller(p->topo, p->plan, &saved) != 0)
    saved = NULL; /* refused: the thread runs where it is */
  weft__plan_saved_free(p->caller_saved);
  p->caller_saved = saved;
  atomic_store_explicit(&p->caller_thread, me, memory_order_relaxed);
}

static inline void caller_enter(weft_pool_t *p, uint32_t self) {
  if (self != 0 || !p->first_thread || !p->plan->bind_caller)
    return;
  uintptr_t me = (uintptr_t)pthread_self();
  if (atomic_load_explicit(&p->caller_thread, memory_order_relaxed) != me)
    bind_caller(p, me);
}

void weft_pool_wait(weft_pool_t *p, uint32_t self, weft_counter_t *c) {
  if (!p || !c)
    return;
  caller_enter(p, self);
  weft__worker_t *w = self < p->nworkers ? &p->workers[self] : NULL;
  if (w)
    weft__pool_pay(w); /* owed by the job that waits: pay before it may stall */
  weft__pool_job_t j;
  bool idle = false; /* counted in p->idle while nothing to run */
  /* The jobs this thread owes to c are finished: done when they are all
   * that is left. */
  while (atomic_load_explicit(&c->pending, memory_order_acquire) !=
         owed_to(w, c)) {
    if (weft__pool_find_work(p, self, &j, true)) {
      if (idle)
        atomic_fetch_sub_explicit(&p->idle, 1, memory_order_relaxed);
      idle = false;
      if (w)
        weft__stats_bump(&w->stats.jobs, 1);
      run_job(p, self, &j, w);
    } else {
      if (w)
        weft__pool_pay(
            w); /* nothing to run: let the others see what we finished */
      if (!idle)
        atomic_fetch_add_explicit(&p->idle, 1, memory_order_relaxed);
      idle = true;
      weft__pool_relax(p, self);
    }
  }
  if (w)
    weft__pool_pay(w);
  if (idle)
    atomic_fetch_sub_explicit(&p->idle, 1, memory_order_relaxed);
}

static bool hungry(weft_pool_t *p, uint32_t self);

bool weft__pool_hungry(weft_pool_t *p, uint32_t self) {
  return p && hungry(p, self);
}

bool weft__pool_help(weft_pool_t *p, uint32_t self) {
  caller_enter(p, self);
  if (self < p->nworkers)
    weft__pool_pay(&p->workers[self]);
  weft__pool_job_t j;
  if (!weft__pool_find_work(p, self, &j, true))
    return false;
  if (self < p->nworkers)
    weft__stats_bump(&p->workers[self].stats.jobs, 1);
  run_job(p, self, &j, NULL);
  return true;
}

/* ---- parallel-for ---------------------------------------------------------
 */

/* True when some thread is looking for work and worker self holds no
 * queued job it could take already, so that queueing a half is worth its
 * cost. */
static bool hungry(weft_pool_t *p, uint32_t self) {
  if (atomic_load_explicit(&p->idle, memory_order_relaxed) == 0)
    return false; /* nobody would take it */
  return self >= p->nworkers || weft__deque_size(&p->workers[self].dq) == 0;
}

/*
 * Runs [b, e) as the leaves of its halving tree: a range larger than the
 * grain splits at its midpoint, and fn runs on each leaf. The leaves depend
 * only on b, e and grain. Splitting is lazy: the upper half is queued only
 * when this worker has nothing queued for thieves already, otherwise both
 * halves run here in order. A parallel-for thus makes about as many jobs
 * as there are steals, not one per leaf.
 */
static void run_range(weft_pool_t *p, uint32_t self, weft_range_fn fn,
                      void *arg, uint32_t b, uint32_t e, uint32_t grain,
                      weft_counter_t *done) {
  if (e - b <= grain) {
    fn(arg, b, e, self);
    return;
  }
  uint32_t mid = b + (e - b) / 2;
  if (hungry(p, self)) {
    weft__pool_job_t half = {.range_fn = fn,
                             .arg = arg,
                             .begin = mid,
                             .end = e,
                             .grain = grain,
                             .done = done};
    submit_job(p, self, &half, UINT32_MAX);
    run_range(p, self, fn, arg, b, mid, grain, done);
    return;
  }
  run_range(p, self, fn, arg, b, mid, grain, done);
  run_range(p, self, fn, arg, mid, e, grain, done);
}

void weft_pool_parallel_for(weft_pool_t *p, uint32_t self, uint32_t begin,
                            uint32_t end, uint32_t grain, weft_range_fn fn,
                            void *arg) {
  if (!p || !fn || end <= begin)
    return;
  caller_enter(p, self);
  if (grain == 0)
    grain = (end - begin + 255) / 256;
  weft_counter_t done;
  memset(&done, 0, sizeof(done));
  atomic_init(&done.pending, 1);
  run_range(p, self, fn, arg, begin, end, grain, &done);
  atomic_fetch_sub_explicit(&done.pending, 1, memory_order_acq_rel);
  weft_pool_wait(p, self, &done);
}

/* ---- workers --------------------------------------------------------------
 */

static void *worker_main(void *arg) {
  weft__worker_t *w = arg;
  weft_pool_t *p = w->pool;
  weft__plan_bind(p->topo, p->plan, w->index);
  weft__stats_switch(&w->stats, false, true);
  atomic_fetch_add_explicit(&p->idle, 1, memory_order_relaxed);
  bool busy = false;
  weft__pool_job_t j;
  for (bool have = false;;) {
    if (have || weft__pool_find_own(p, w, &j) ||
        (!weft__steal_patient(w) &&
         weft__pool_find_work(p, w->index, &j, true))) {
      have = false;
      if (!busy) {
        atomic_fetch_sub_explicit(&p->idle, 1, memory_order_relaxed);
        weft__stats_switch(&w->stats, true, true);
        busy = true;
      }
      weft__stats_bump(&w->stats.jobs, 1);
      run_job(p, w->index, &j, w);
      continue;
    }
    weft__pool_pay(w); /* out of work: before spinning or sleeping */
    if (busy) {
      weft__stats_switch(&w->stats, false, true);
      atomic_fetch_add_explicit(&p->idle, 1, memory_order_relaxed);
      busy = false;
    }
    if (atomic_load_explicit(&p->stopping, memory_order_acquire))
      break;
    if (weft__steal_patient(w)) {
      /* Wait the backoff out polling only its own queues, so that work
       * sent to this worker starts at once and the submitter's lines stay
       * where they are. Not nanosleep: its timer slack is much longer than
       * the backoff, and pipelines of small systems feel the stall. */
      while (!have && weft__now_ns() < w->steal_after) {
        for (int k = 0; k < 32; k++)
          weft__pool_relax(p, w->index);
        have = weft__pool_find_own(p, w, &j);
      }
      continue;
    }
    /* Spin a little, polling the queues: work often arrives right
     * behind. Then sleep. Not in a crowded crew: there the spin would
     * take the CPU from a thread with work. */
    uint64_t until = weft__crew_crowded(p, w) ? 0 : weft__now_ns() + p->spin_ns;
    while (!have && weft__now_ns() < until) {
      for (int k = 0; k < 32; k++)
        weft__cpu_relax();
      have = weft__pool_find_work(p, w->index, &j, true);
    }
    if (!have)
      have = weft__crew_sleep(p, w, &j);
  }
  weft__stats_switch(&w->stats, false, false);
  atomic_fetch_sub_explicit(&p->idle, 1, memory_order_relaxed);
  return NULL;
}

static int start_threads(weft_pool_t *p) {
  atomic_store(&p->stopping, false);
  for (uint32_t i = p->first_thread; i < p->nworkers; i++) {
    weft__worker_t *w = &p->workers[i];
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
      weft_pool_stop(p);
      return WEFT_ELIMIT;
    }
    w->started = true;
  }
  p->running = true;
  return 0;
}

void weft_pool_stop(weft_pool_t *p) {
  if (!p)
    return;
  atomic_store(&p->stopping, true);
  for (uint32_t c = 0; c < p->ncrews; c++) {
    pthread_mutex_lock(&p->crews[c].mu);
    pthread_cond_broadcast(&p->crews[c].cv);
    pthread_mutex_unlock(&p->crews[c].mu);
  }
  for (uint32_t i = p->first_thread; i < p->nworkers; i++) {
    weft__worker_t *w = &p->workers[i];
    if (w->started)
      pthread_join(w->thread, NULL);
    w->started = false;
  }
  /* Whatever is still queued (jobs worker 0 queued while nobody ran
   * them, outsiders' jobs that raced the stop) runs here. */
  weft__pool_job_t j;
  for (uint32_t s = 0; s < p->nworkers; s++)
    while (weft__pool_find_work(p, s, &j, false))
      run_job(p, s, &j, NULL);
  p->running = false;
}

int weft_pool_start(weft_pool_t *p) {
  if (!p)
    return WEFT_EINVAL;
  return p->running ? 0 : start_threads(p);
}

/* ---- lifetime ---------------------------------------------------------------
 */

/* n zeroed elements of a struct made of whole cache lines (see
 * pool_internal.h): plain calloc does not align them to a line. */
static void *calloc_lines(size_t n, size_t size) {
  void *mem = NULL;
  if (posix_memalign(&mem, WEFT__CACHE_LINE, n * size) != 0)
    return NULL;
  return memset(mem, 0, n * size);
}

static int make_workers(weft_pool_t *p) {
  p->nworkers = weft_plan_workers(p->plan);
  p->ngroups = weft_plan_groups(p->plan);
  p->workers = calloc_lines(p->nworkers, sizeof(weft__worker_t));
  if (!p->workers)
    return WEFT_ENOMEM;
  p->inject = calloc_lines(p->ngroups, sizeof(*p->inject));
  p->arenas = calloc(p->ngroups, sizeof(*p->arenas));
  if (!p->inject || !p->arenas)
    return WEFT_ENOMEM;
  for (uint32_t g = 0; g < p->ngroups; g++) {
    weft__inject_t *q = &p->inject[g];
    q->cap = p->cap;
    q->jobs = calloc(q->cap, sizeof(weft__pool_job_t));
    if (!q->jobs || pthread_mutex_init(&q->mu, NULL) != 0)
      return WEFT_ENOMEM;
  }
  for (uint32_t i = 0; i < p->nworkers; i++) {
    weft__worker_t *w = &p->workers[i];
    w->index = i;
    w->pool = p;
    w->group = weft_plan_group_of(p->plan, i);
    w->ring = calloc_lines(p->cap, sizeof(weft__job_slot_t));
    if (!w->ring || weft__deque_init(&w->dq, p->cap) != 0)
      return WEFT_ENOMEM;
  }
  return 0;
}

static void free_pool(weft_pool_t *p) {
  for (uint32_t i = 0; p->workers && i < p->nworkers; i++) {
    weft__deque_fini(&p->workers[i].dq);
    free(p->workers[i].ring);
  }
  for (uint32_t g = 0; p->inject && g < p->ngroups; g++) {
    if (p->inject[g].jobs)
      pthread_mutex_destroy(&p->inject[g].mu);
    free(p->inject[g].jobs);
  }
  free(p->inject);
  free(p->arenas);
  pthread_mutex_destroy(&p->arena_mu);
  free(p->workers);
  weft__crews_free(p);
  weft_plan_destroy(p->plan);
  weft_topology_destroy(p->topo);
  free(p);
}

int weft_pool_create(const weft_pool_config_t *config, weft_pool_t **out) {
  if (!out)
    return WEFT_EINVAL;
  *out = NULL;
  weft_pool_config_t cfg = {0};
  if (config)
    cfg = *config;
  uint32_t cap =
      cfg.queue_capacity ? cfg.queue_capacity : WEFT__POOL_CAP_DEFAULT;
  if (cap & (cap - 1) || cap < 2 || cap > (1u << 24))
    return WEFT_EINVAL;
  weft_pool_t *p = calloc_lines(1, sizeof(*p));
  if (!p)
    return WEFT_ENOMEM;
  pthread_mutex_init(&p->arena_mu, NULL);
  p->hooks = &weft__pool_core_hooks;
  p->cap = cap;
  p->spin_ns =
      (uint64_t)(cfg.spin_us ? cfg.spin_us : WEFT__SPIN_US_DEFAULT) * 1000u;
  p->first_thread = cfg.placement.caller_participates ? 1 : 0;
  int rc = weft_topology_load(cfg.synthetic, NULL, &p->topo);
  if (!rc)
    weft__crews_limit(p, &cfg);
  if (!rc)
    rc = weft_plan_compute(p->topo, &cfg.placement, &p->plan);
  if (!rc)
    rc = make_workers(p);
  if (!rc)
    rc = weft__crews_make(p);
  if (!rc)
    rc = start_threads(p);
  if (rc) {
    free_pool(p);
    return rc;
  }
  *out = p;
  return 0;
}

void weft_pool_destroy(weft_pool_t *p) {
  if (!p)
    return;
  weft_pool_stop(p);
  if (atomic_load_explicit(&p->caller_thread, memory_order_relaxed) ==
      (uintptr_t)pthread_self())
    weft__plan_unbind(p->topo, p->plan, p->caller_saved);
  else
    weft__plan_saved_free(p->caller_saved);
  p->caller_saved = NULL;
  free_pool(p);
}

uint32_t weft_pool_workers(const weft_pool_t *p) {
  return p ? p->nworkers : 0;
}

const weft_plan_t *weft_pool_plan(const weft_pool_t *p) {
  return p ? p->plan : NULL;
}
