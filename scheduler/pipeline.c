/* SPDX-License-Identifier: MIT */
/*
 * Running the schedule: phases, sync segments, and the dispatch of each
 * system's chunks as jobs on the pool, and the frame loop that runs the
 * phases (fixed steps, network ticks, interpolation alpha): one file, so
 * that a frame of empty phases costs no call into another unit per phase.
 *
 * A segment is prepared on the driving thread, in the phase's order: run
 * conditions are evaluated, change versions handed out, and every active
 * system's chunk list cut into jobs. That work decides everything a run can
 * observe, so the parallel part that follows only changes timing: each
 * system starts when its same-segment predecessors finished, its jobs go to
 * the workers of their chunk's node, and the worker finishing a system's last
 * job starts the successors it unblocked. The segment ends with a sync
 * point that applies every worker's command buffer in key order.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/check.h"
#include "core/query_internal.h"
#include "core/resource_internal.h"
#include "core/world_view.h"
#include "weft/dirty.h"
#include "scheduler/clock.h"
#include "scheduler/context.h"
#include "scheduler/cost.h"
#include "scheduler/pool_internal.h"
#include "scheduler/sched.h"
#include "scheduler/visits.h"

/* ---- running chunks ------------------------------------------------------ */

/* Keeps the failure with the lowest chunk sequence. The code is kept as
 * its 32 bits, not negated: a callback may return any int, INT_MIN
 * included. */
static void record_error(weft__sys_t *y, int rc, uint32_t seq) {
  uint64_t mine = (uint64_t)(seq + 1) << 32 | (uint32_t)rc;
  uint64_t cur = atomic_load_explicit(&y->err, memory_order_relaxed);
  while ((cur == 0 || mine < cur) &&
         !atomic_compare_exchange_weak_explicit(
             &y->err, &cur, mine, memory_order_relaxed, memory_order_relaxed))
    ;
}

/* Runs visits [first, *end) of y (a task when y has no query) on slot k.
 * With @p split, before each chunk the back half of what is left goes to
 * an idle worker when there is one (lazy halving), shrinking *end. */
static void run_visits(weft__sched_t *s, weft__sys_t *y, uint32_t first,
                       uint32_t *end, uint32_t k, uint32_t split);

/* No splitting: the run stays on this thread. */
#define NO_SPLIT (UINT32_MAX - 1)

static void run_range(weft__sched_t *s, weft__sys_t *y, uint32_t first,
                      uint32_t count, uint32_t k) {
  uint32_t end = first + count;
  run_visits(s, y, first, &end, k, NO_SPLIT);
}

static void note_time(weft__sys_t *y, uint64_t t0, uint64_t t1) {
  uint64_t cur = atomic_load_explicit(&y->start_ns, memory_order_relaxed);
  while ((cur == 0 || t0 < cur) &&
         !atomic_compare_exchange_weak_explicit(&y->start_ns, &cur, t0,
                                                memory_order_relaxed,
                                                memory_order_relaxed))
    ;
  cur = atomic_load_explicit(&y->end_ns, memory_order_relaxed);
  while (t1 > cur &&
         !atomic_compare_exchange_weak_explicit(
             &y->end_ns, &cur, t1, memory_order_relaxed, memory_order_relaxed))
    ;
  atomic_fetch_add_explicit(&y->busy_ns, t1 - t0, memory_order_relaxed);
}

/* ---- parallel dispatch --------------------------------------------------- */

static void launch(weft__sched_t *s, weft__sys_t *y, uint32_t self);

/*
 * Run-time commits (weft_sysctx_commit()). A request from system y holds
 * y's dependents in its segment (its successors there, transitively): they
 * do not run in this round. When the round ends, the driving thread
 * applies a sync point and runs the held systems as the segment's next
 * round (run_segment()), where a request may hold further systems. The
 * held set is a system's descendants, fixed by the graph and by what the
 * callbacks asked, never by which worker ran what or when, so every path
 * (plain, serial, pool) runs the same systems in the same rounds; systems
 * of the segment that do not depend on the requester are not held.
 */
enum { HELD = 1, HELD_ACTIVE = 2 }; /* weft__sys_t.held */

/* Holds y's descendants in its segment at once, from the thread that
 * asked: weft_sysctx_commit() while the segment runs serially (no pool,
 * or run_serial()), where no other system runs and none of y's
 * dependents has run yet. An active one stops being active for this
 * round; HELD_ACTIVE remembers it. */
void weft__sched_hold(weft__sys_t *y) {
  for (uint32_t i = 0; i < y->nsucc; i++) {
    weft__sys_t *t = y->succ[i];
    if (t->segment != y->segment ||
        atomic_load_explicit(&t->held, memory_order_relaxed))
      continue;
    atomic_store_explicit(&t->held, t->active ? HELD_ACTIVE : HELD,
                          memory_order_relaxed);
    t->active = false;
    weft__sched_hold(t);
  }
}

/* A system finished: start the same-segment successors it unblocked, or
 * hold them when it asked for a commit or another predecessor held them.
 * The mark is stored before the decrement (acq_rel), so whichever
 * predecessor brings the count to zero sees it. */
static void hold(weft__sched_t *s, weft__sys_t *t, uint32_t self);

/* Successor t of a finished system lost its last predecessor. */
static inline void unblocked(weft__sched_t *s, weft__sys_t *t, uint32_t self) {
  if (WEFT__UNLIKELY(atomic_load_explicit(&t->held, memory_order_relaxed)))
    hold(s, t, self);
  else
    launch(s, t, self);
}

/* complete() for a system that asked for a commit: its successors in the
 * segment are marked held before they are counted down. */
static WEFT__NOINLINE void complete_asked(weft__sched_t *s, weft__sys_t *y,
                                          uint32_t self) {
  for (uint32_t i = 0; i < y->nsucc; i++) {
    weft__sys_t *t = y->succ[i];
    if (t->segment != y->segment)
      continue;
    atomic_store_explicit(&t->held, HELD, memory_order_relaxed);
    if (atomic_fetch_sub_explicit(&t->preds_left, 1, memory_order_acq_rel) == 1)
      unblocked(s, t, self);
  }
  atomic_fetch_sub_explicit(&s->pending.pending, 1, memory_order_release);
}

/* Inlined into its callers, as it was before requests existed: it runs
 * once per system and frame on the pool. */
static inline __attribute__((always_inline)) void
complete(weft__sched_t *s, weft__sys_t *y, uint32_t self) {
  if (WEFT__UNLIKELY(
          atomic_load_explicit(&y->commit_req, memory_order_relaxed))) {
    complete_asked(s, y, self);
    return;
  }
  for (uint32_t i = 0; i < y->nsucc; i++) {
    weft__sys_t *t = y->succ[i];
    if (t->segment == y->segment &&
        atomic_fetch_sub_explicit(&t->preds_left, 1, memory_order_acq_rel) == 1)
      unblocked(s, t, self);
  }
  atomic_fetch_sub_explicit(&s->pending.pending, 1, memory_order_release);
}

/* System t is held: it does not run this round, and neither do its
 * dependents in the segment. It counts as done for the round's wait. */
static void hold(weft__sched_t *s, weft__sys_t *t, uint32_t self) {
  for (uint32_t i = 0; i < t->nsucc; i++) {
    weft__sys_t *u = t->succ[i];
    if (u->segment != t->segment)
      continue;
    atomic_store_explicit(&u->held, HELD, memory_order_relaxed);
    if (atomic_fetch_sub_explicit(&u->preds_left, 1, memory_order_acq_rel) == 1)
      hold(s, u, self);
  }
  atomic_fetch_sub_explicit(&s->pending.pending, 1, memory_order_release);
}

static void job_main(void *arg, uint32_t worker) {
  weft__job_t *j = arg;
  weft__sys_t *y = j->sys;
  weft__sched_t *s = weft__sched_of(y->world);
  uint32_t k = weft__sched_slot(s, worker), end = j->first + j->count;
  uint64_t t0 = weft__ticks();
  run_visits(s, y, j->first, &end, k, worker);
  uint64_t t1 = weft__ticks();
  note_time(y, t0, t1);
  weft__trace_span(s, k, WEFT__SPAN_JOB, y->id, end - j->first, t0, t1);
  if (atomic_fetch_sub_explicit(&y->jobs_left, 1, memory_order_acq_rel) == 1)
    complete(s, y, worker);
}

/* Hands [mid, *end) of y to the pool as a new job when some worker is
 * idle and both halves of [i, *end) hold a batch. Each thread keeps a long
 * forward run of chunks (the prefetchers like that), and a busy pool pays
 * two loads per chunk for splits it does not need. */
static void maybe_split(weft__sched_t *s, weft__sys_t *y, uint32_t i,
                        uint32_t *end, uint32_t worker) {
  if (*end - i < 2 || !weft__pool_hungry(s->pool, worker))
    return;
  uint32_t mid = i + (*end - i) / 2;
  if (weft__visits_rows_before(y, mid) - weft__visits_rows_before(y, i) <
          y->batch ||
      weft__visits_rows_before(y, *end) - weft__visits_rows_before(y, mid) <
          y->batch)
    return;
  uint32_t idx =
      atomic_fetch_add_explicit(&y->job_next, 1, memory_order_relaxed);
  uint32_t node = y->visits[mid].chunk->node;
  /* Plain stores: the deque push in weft_pool_submit() publishes the
   * record to the worker that takes it (see submit()). */
  y->jobs[idx] = (weft__job_t){y, mid, *end - mid, node};
  atomic_fetch_add_explicit(&y->jobs_left, 1, memory_order_relaxed);
  *end = mid;
  weft_pool_submit(s->pool, worker, job_main, &y->jobs[idx], NULL, node);
}

/* A task: one call with no chunk. */
static void run_task(weft__sys_t *y, weft_sysctx_t *ctx) {
  weft__sysctx_key(ctx, y, 0);
  int rc = y->run(ctx, NULL);
  if (rc)
    record_error(y, rc, 0);
}

/* Calls y's callback on visit i through the iterator its plan made. */
static inline void run_view(weft__sys_t *y, weft_sysctx_t *ctx, uint32_t i) {
  const uint32_t seq = y->visits[i].seq;
  weft__sysctx_key(ctx, y, seq);
  int rc = y->run(ctx, &y->views[i]);
  if (WEFT__UNLIKELY(rc))
    record_error(y, rc, seq);
}

/* Runs visits [first, *end) of query system y with context ctx: through
 * the iterators its plan made, or else through iterator it (opened with
 * weft__visits_iter_open(), or left by another system of the segment,
 * whose @p prev_terms columns are cleared here). */
static void run_chunks(weft__sched_t *s, weft__sys_t *y, weft_sysctx_t *ctx,
                       weft_iter_t *it, uint32_t prev_terms, uint32_t first,
                       uint32_t *end, uint32_t split) {
  /* Stamp the whole range first, in one pass over its version rows: stamps
   * written between the callback's calls interleave with a streaming
   * system's loads. A range split off later is stamped again by its job, which
   * is harmless: a stamp only stores this run's version. */
  if (y->stamp_late)
    weft__visits_stamp_range(y, first, *end);
  if (y->nviews) { /* the plan made each visit's iterator */
    for (uint32_t i = first; i < *end; i++) {
      if (split != NO_SPLIT)
        maybe_split(s, y, i, end, split);
      run_view(y, ctx, i);
    }
    return;
  }
  for (uint32_t t = y->nterms; t < prev_terms; t++)
    it->columns[t] = NULL;
  it->terms_ = y->terms;
  it->term_count_ = y->nterms;
  const weft__match_t *matches = y->query->matches;
  for (uint32_t i = first; i < *end; i++) {
    if (split != NO_SPLIT)
      maybe_split(s, y, i, end, split);
    const weft__visit_t *v = &y->visits[i];
    weft__sysctx_key(ctx, y, v->seq);
    weft__visits_view(it, &matches[y->arch[v->ai].match], v->chunk, v->rows,
                      y->nterms);
    int rc = y->run(ctx, it);
    if (WEFT__UNLIKELY(rc))
      record_error(y, rc, v->seq);
  }
}

/* Runs all of system y on this thread with ctx; a query system without
 * plan-made iterators shares iterator it with the segment's other systems
 * (opened on first use; *prev_terms: the columns the last one set). */
static void run_whole(weft__sched_t *s, weft__sys_t *y, weft_sysctx_t *ctx,
                      weft_iter_t *it, bool *opened, uint32_t *prev_terms) {
  if (!y->query) {
    run_task(y, ctx);
    return;
  }
  if (!y->nviews && !*opened) {
    weft__visits_iter_open(it, y->world);
    *opened = true;
  }
  uint32_t end = y->nvisits;
  run_chunks(s, y, ctx, it, *prev_terms, 0, &end, NO_SPLIT);
  if (!y->nviews)
    *prev_terms = y->nterms;
}

static void run_visits(weft__sched_t *s, weft__sys_t *y, uint32_t first,
                       uint32_t *end, uint32_t k, uint32_t split) {
  weft_sysctx_t ctx = weft__sysctx_make(s, y, k);
  if (!y->query) {
    run_task(y, &ctx);
    return;
  }
  weft_iter_t it;
  weft__visits_iter_open(&it, y->world);
  run_chunks(s, y, &ctx, &it, 0, first, end, split);
}

/*
 * Readies system y to run: returns true when its jobs are to be submitted
 * to the pool, false when it completed or ran here, or waits for the
 * driving thread (MAIN_THREAD).
 */
static bool launch_prepare(weft__sched_t *s, weft__sys_t *y, uint32_t self) {
  if (!y->active || y->njobs == 0) {
    complete(s, y, self);
    return false;
  }
  if (y->flags & WEFT_SYSTEM_MAIN_THREAD) {
    atomic_store_explicit(&y->main_ready, true, memory_order_release);
    return false;
  }
  atomic_store_explicit(&y->jobs_left, y->njobs, memory_order_relaxed);
  atomic_store_explicit(&y->job_next, y->njobs, memory_order_relaxed);
  if (y->njobs == 1 && y->est_ns < weft__cost_inline_ns(s)) {
    /* Too small to be worth a queue round trip: run it here. */
    job_main(&y->jobs[0], self);
    return false;
  }
  y->dispatched = true;
  return true;
}

/*
 * The job-publication edge. A job record (y->jobs[j]) and everything its
 * run reads (the system's visits, archetype entries, version, the slots'
 * buffers) are written with plain stores: by the driving thread in
 * prepare(), or by the splitting worker in maybe_split(). No atomic of
 * this file publishes them; weft_pool_submit() does. It copies the record's
 * address into a ring slot and pushes the slot on the submitting worker's
 * deque, and weft__deque_push() (scheduler/deque.c) issues a release fence
 * before it stores the new bottom; a thief's weft__deque_steal() loads
 * bottom with acquire, so every store made before the push is visible to
 * the worker that runs the job (Chase-Lev with the orderings of Le et al.;
 * under TSan the bottom store is itself a release). The owner popping its
 * own push needs no edge, and a job that goes to an injection queue (the
 * driving thread outside the pool, or a job for another node) is published
 * by that queue's mutex instead. A successor launched by a worker in
 * complete() sees prepare()'s stores through the chain of such edges and
 * the acq_rel decrements of preds_left and jobs_left.
 */
static void submit(weft__sched_t *s, weft__sys_t *y, uint32_t j,
                   uint32_t self) {
  weft_pool_submit(s->pool, self, job_main, &y->jobs[j], NULL, y->jobs[j].node);
}

/* The part of a system cut into @p parts that worker @p self keeps: parts
 * are cut one per worker of a node, in worker order. */
static inline uint32_t own_part(uint32_t self, uint32_t parts) {
  return self < parts ? self : self % parts;
}

/*
 * Submits the jobs of the n systems in l from worker @p self, to self's
 * deque, in affine order: the other workers' parts of every system first
 * (the last parts first, part j of every system before part j - 1 of
 * any), then self's own part of each. Self pops its own parts back (the
 * owner takes the bottom) while thieves take the others from the top, and
 * with two workers the thief takes part 1 of every system rather than both
 * parts of the first: worker k then runs part k of every system, frame
 * after frame, and its rows stay in its caches.
 */
static void submit_affine(weft__sched_t *s, weft__sys_t *const *l, uint32_t n,
                          uint32_t self) {
  uint32_t parts = 0;
  for (uint32_t r = 0; r < n; r++)
    if (l[r]->njobs > parts)
      parts = l[r]->njobs;
  for (uint32_t j = parts; j-- > 0;)
    for (uint32_t r = 0; r < n; r++)
      if (j < l[r]->njobs && j != own_part(self, l[r]->njobs))
        submit(s, l[r], j, self);
  for (uint32_t r = 0; r < n; r++)
    submit(s, l[r], own_part(self, l[r]->njobs), self);
}

/*
 * Launches system y from worker @p self: its jobs go to self's deque, in
 * affine order in an affine segment. Otherwise the parts go in order, and
 * a thief tends to take a whole system (the top and, with it, half of the
 * rest).
 */
static void launch(weft__sched_t *s, weft__sys_t *y, uint32_t self) {
  if (!launch_prepare(s, y, self))
    return;
  if (s->affine) {
    submit_affine(s, &y, 1, self);
    return;
  }
  for (uint32_t j = 0; j < y->njobs; j++)
    submit(s, y, j, self);
}

/* Root systems launch_roots() orders at once; more launch one by one. */
#define LAUNCH_ROOTS_MAX 64u

/*
 * Launches the systems of a segment that wait for nobody. In an affine
 * segment their jobs are submitted together (submit_affine()), so that
 * the order holds across systems and not only within each.
 */
static void launch_roots(weft__sched_t *s, weft__sys_t **l, uint32_t n) {
  weft__sys_t *roots[LAUNCH_ROOTS_MAX];
  const uint32_t self = s->main_self;
  uint32_t nr = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (l[i]->npred != 0)
      continue;
    if (!s->affine || nr == LAUNCH_ROOTS_MAX)
      launch(s, l[i], self);
    else if (launch_prepare(s, l[i], self))
      roots[nr++] = l[i];
  }
  submit_affine(s, roots, nr, self);
}

/* Runs a whole system on the driving thread. */
static void run_inline(weft__sched_t *s, weft__sys_t *y) {
  uint32_t k = weft__sched_slot(s, s->main_self);
  uint64_t t0 = weft__ticks();
  run_range(s, y, 0, y->nvisits, k);
  uint64_t t1 = weft__ticks();
  note_time(y, t0, t1);
  weft__trace_span(s, k, WEFT__SPAN_INLINE, y->id, y->nvisits, t0, t1);
}

/* Runs a segment's systems one after the other with a timestamp per
 * system, from @p t0 (each run ends where the next begins): to the stats
 * and the trace when @p timed, else to the cost estimates only. */
static void run_timed(weft__sched_t *s, weft__sys_t **l, uint32_t n, bool timed,
                      uint64_t t0) {
  uint32_t k = weft__sched_slot(s, s->main_self);
  for (uint32_t i = 0; i < n; i++) {
    weft__sys_t *y = l[i];
    if (!y->active || !y->njobs)
      continue;
    run_range(s, y, 0, y->nvisits, k);
    uint64_t t1 = weft__ticks();
    if (timed) {
      note_time(y, t0, t1);
      weft__trace_span(s, k, WEFT__SPAN_INLINE, y->id, y->nvisits, t0, t1);
    } else {
      y->sample_ticks = t1 - t0;
    }
    t0 = t1;
  }
}

/*
 * Runs a segment's systems one after the other on slot k, untimed: one
 * iterator for them all, each system setting only what is its own, since
 * a frame of small systems spends its time on exactly this.
 */
static void run_untimed(weft__sched_t *s, weft__sys_t **l, uint32_t n,
                        uint32_t k) {
  weft_iter_t it;
  bool opened = false;
  uint32_t prev_terms = 0;
  for (uint32_t i = 0; i < n; i++) {
    weft__sys_t *y = l[i];
    if (!y->active || !y->njobs)
      continue;
    weft_sysctx_t ctx = weft__sysctx_make(s, y, k);
    run_whole(s, y, &ctx, &it, &opened, &prev_terms);
  }
}

/*
 * Runs a segment's systems one after the other on the driving thread,
 * timed one by one when asked for (time_inline, a trace) or with
 * @p sample (then for the cost estimates only, see finish()). A timestamp
 * costs more than a small system, so otherwise none
 * is taken, except, with a pool, one around the whole segment: when it
 * took longer than the threshold, the next run of phase @p p samples.
 */
static void run_serial(weft__sched_t *s, weft__phase_t *p, weft__sys_t **l,
                       uint32_t n, bool sample) {
  uint32_t k = weft__sched_slot(s, s->main_self);
  const bool timed = s->cfg.time_inline || s->tracing;
  const uint64_t start = s->pool ? weft__ticks() : 0;
  s->serial = true; /* commit requests hold dependents themselves */
  if (!timed && !sample) {
    run_untimed(s, l, n, k);
  } else {
    run_timed(s, l, n, timed, s->pool ? start : weft__ticks());
  }
  s->serial = false;
  if (s->pool && (double)(weft__ticks() - start) * s->clock.tick_ns >=
                     weft__cost_inline_ns(s))
    p->sample_next = true;
}

static void run_parallel(weft__sched_t *s, weft__sys_t **l, uint32_t n) {
  bool mains = false;
  atomic_store_explicit(&s->pending.pending, n, memory_order_relaxed);
  for (uint32_t i = 0; i < n; i++) {
    atomic_store_explicit(&l[i]->preds_left, l[i]->npred, memory_order_relaxed);
    atomic_store_explicit(&l[i]->main_ready, false, memory_order_relaxed);
    mains |= (l[i]->flags & WEFT_SYSTEM_MAIN_THREAD) != 0;
  }
  /* A main-thread system ties work to the driving thread, which then
   * cannot also take its full share of rows: there workers take whole
   * systems as they come. */
  s->affine = !mains;
  launch_roots(s, l, n);
  if (!mains) {
    weft_pool_wait(s->pool, s->main_self, &s->pending);
    return;
  }
  while (atomic_load_explicit(&s->pending.pending, memory_order_acquire)) {
    bool ran = false;
    for (uint32_t i = 0; i < n; i++)
      if ((l[i]->flags & WEFT_SYSTEM_MAIN_THREAD) &&
          atomic_exchange_explicit(&l[i]->main_ready, false,
                                   memory_order_acq_rel)) {
        run_inline(s, l[i]);
        complete(s, l[i], s->main_self);
        ran = true;
      }
    if (!ran && !weft__pool_help(s->pool, s->main_self))
      weft__pool_relax(s->pool, s->main_self);
  }
}

/* ---- segments and sync points -------------------------------------------- */

/* Evaluates conditions, hands out versions and plans jobs, in order. */
static int prepare(weft_world_t *w, weft__sched_t *s, weft__phase_t *p,
                   weft__sys_t **l, uint32_t n, double *cost) {
  double total = 0; /* a local: *cost might alias the systems' doubles */
  for (uint32_t i = 0; i < n; i++) {
    weft__sys_t *y = l[i];
    bool active = p->enabled && y->enabled;
    if (active && y->run_if) {
      bool retire = false;
      active = weft_runif_eval(y->run_if, s->dt, &retire);
      y->retire |= retire;
      s->retiring |= retire;
    }
    y->active = active;
    if (!active) {
      y->stats.skipped += p->enabled && y->enabled;
      continue;
    }
    /* err, start_ns, end_ns and busy_ns are zero here: finish() reset
     * what the previous run set. */
    y->version = ++w->change_version;
    if (WEFT__UNLIKELY(weft__visits_plan(w, y)))
      return weft__fail(w, WEFT_ENOMEM, WEFT__FILE, WEFT__LINE,
                        "out of memory planning system %s", y->name);
    if (s->pool)
      total += y->est_ns = weft__cost_estimate(y);
  }
  /* Writes made while the segment runs (weft_get_mut(), weft_set(),
   * weft_get_many_ex() with a write mask, drained structural calls) stamp
   * the world's version: above every version just handed out, so that
   * each of these systems, reader or writer, sees them at its next run. */
  w->change_version++;
  *cost = total;
  return 0;
}

/* The code a callback returned, from the 32 bits record_error() kept. */
static int returned(uint64_t e) {
  uint32_t bits = (uint32_t)e;
  return bits <= INT32_MAX ? (int)bits : -(int)(~bits) - 1;
}

/* Reports the failure @p e of system y as WEFT_ESYSTEM. */
static int report(weft_world_t *w, const weft__sys_t *y, uint64_t e) {
  int code = returned(e);
  uint32_t chunk = (uint32_t)(e >> 32) - 1;
  if (code < 0 && strcmp(weft_strerror_name(code), "WEFT_E?") != 0)
    return weft__fail(w, WEFT_ESYSTEM, WEFT__FILE, WEFT__LINE,
                      "system %s failed on chunk %u: %s (%s)", y->name, chunk,
                      weft_strerror(code), weft_strerror_name(code));
  return weft__fail(w, WEFT_ESYSTEM, WEFT__FILE, WEFT__LINE,
                    "system %s failed on chunk %u: its callback returned %d, "
                    "which is not a WEFT_E* code",
                    y->name, chunk, code);
}

/* Folds what timed the run of y (its jobs, or a sampled or timed inline
 * run) into its counters and estimate, and clears it for the next run;
 * returns the worker time. */
static uint64_t finish_timing(weft__sched_t *s, weft__sys_t *y) {
  uint64_t t0 = atomic_load_explicit(&y->start_ns, memory_order_relaxed);
  uint64_t t1 = atomic_load_explicit(&y->end_ns, memory_order_relaxed);
  uint64_t busy = atomic_load_explicit(&y->busy_ns, memory_order_relaxed);
  if (y->dispatched)
    y->stats.jobs += atomic_load_explicit(&y->job_next, memory_order_relaxed);
  y->dispatched = false;
  y->stats.wall_ns += t1 > t0 ? t1 - t0 : 0;
  y->stats.worker_ns += busy;
  if (s->pool && (busy || y->sample_ticks))
    weft__cost_learn(s, y, busy ? busy : y->sample_ticks);
  y->sample_ticks = 0;
  atomic_store_explicit(&y->start_ns, 0, memory_order_relaxed);
  atomic_store_explicit(&y->end_ns, 0, memory_order_relaxed);
  atomic_store_explicit(&y->busy_ns, 0, memory_order_relaxed);
  return busy;
}

/*
 * Folds the finished run of y into its counters; the first failure goes to
 * *rc (a later one only clears). The atomics a run sets are cleared here,
 * after they are read, so that the next prepare() need not touch them.
 * Without @p timed (a segment run inline, untimed, where the common small
 * system runs) no run set them, and the timing is skipped.
 */
/* What finish_one() does in the rare runs that counted rows themselves
 * (weft_sysctx_count()) or failed (@p e). */
static WEFT__NOINLINE void finish_rare(weft_world_t *w, weft__sys_t *y,
                                       uint64_t counted, uint64_t e, int *rc) {
  y->stats.entities += counted;
  atomic_store_explicit(&y->counted, 0, memory_order_relaxed);
  if (e) {
    atomic_store_explicit(&y->err, 0, memory_order_relaxed);
    if (!*rc)
      *rc = report(w, y, e);
  }
}

static inline void finish_one(weft_world_t *w, weft__sched_t *s, weft__sys_t *y,
                              bool timed, uint64_t *worker, int *rc) {
  y->stats.runs++;
  y->stats.chunks += y->ncalls;
  y->stats.entities += y->rows;
  uint64_t counted = atomic_load_explicit(&y->counted, memory_order_relaxed);
  uint64_t e = atomic_load_explicit(&y->err, memory_order_relaxed);
  if (WEFT__UNLIKELY(counted | e))
    finish_rare(w, y, counted, e, rc);
  if (timed)
    *worker += finish_timing(s, y);
  y->last_run = y->version;
}

/* Folds a finished segment into the counters, the worker time into phase
 * p's; returns the first failure. */
static int finish(weft_world_t *w, weft__phase_t *p, weft__sys_t **l,
                  uint32_t n, bool timed) {
  weft__sched_t *s = weft__sched_of(w);
  int rc = 0;
  uint64_t worker = 0;
  for (uint32_t i = 0; i < n; i++)
    if (l[i]->active)
      finish_one(w, s, l[i], timed, &worker, &rc);
  p->stats.worker_ns += worker;
  return rc;
}

/*
 * A plain segment (graph.c: no `changed` filter, run condition, `write`
 * list or exclusive system) run without a pool and untimed: the steady
 * state of a frame of small systems. One pass decides which systems run
 * and hands out their versions, as prepare() does, before any callback
 * (which may enable or disable systems) runs; a second plans, runs and
 * counts each system in turn, so that a system's record is visited twice
 * rather than four times. Plans are the same as prepare()'s, made before
 * or after other callbacks ran: nothing a callback does changes one
 * (structural calls stage). A plan that fails for want of memory stops
 * the segment there, after the systems before it ran.
 */
static void prepare_plain(weft_world_t *w, weft__phase_t *p, weft__sys_t **l,
                          uint32_t n) {
  const bool phase_on = p->enabled;
  /* No callback runs here: the counter lives in a register meanwhile. */
  uint32_t version = w->change_version;
  for (uint32_t i = 0; i < n; i++) {
    weft__sys_t *y = l[i];
    y->active = phase_on && y->enabled;
    if (y->active)
      y->version = ++version;
  }
  w->change_version = version + 1; /* as prepare() does */
}

/* Folds a plain run of y into its counters. Its atomics are read only when
 * the run may have set them: @p check (a failure, or a run that records
 * its failures there), or a weft_sysctx_count() on the slot. A commit
 * request needs nothing here: without a pool weft_sysctx_commit() holds
 * the dependents itself (weft__sched_hold()). */
static inline void finish_plain(weft_world_t *w, weft__sys_t *y, bool check,
                                weft__cmdslot_t *slot, int *rc) {
  y->stats.runs++;
  y->stats.chunks += y->ncalls;
  y->stats.entities += y->rows;
  if (WEFT__UNLIKELY(check || slot->counted)) {
    slot->counted = false;
    uint64_t counted = atomic_load_explicit(&y->counted, memory_order_relaxed);
    uint64_t e = atomic_load_explicit(&y->err, memory_order_relaxed);
    if (counted | e)
      finish_rare(w, y, counted, e, rc);
  }
  y->last_run = y->version;
}

static int run_plain(weft_world_t *w, weft__sched_t *s, weft__sys_t **l,
                     uint32_t n) {
  const uint32_t k = weft__sched_slot(s, s->main_self);
  weft__cmdslot_t *slot = &s->slots[k];
  weft__cmdkey_t *keys = weft__cmdbuf_keys(slot->cmd);
  /* One context for the segment, each system setting what is its own
   * (context.h: callbacks do not write theirs). */
  weft_sysctx_t ctx = weft__sysctx_make(s, l[0], k);
  weft_iter_t it;
  bool opened = false;
  uint32_t prev_terms = 0;
  int rc = 0;
  for (uint32_t i = 0; i < n; i++) {
    weft__sys_t *y = l[i];
    if (!y->active)
      continue;
    /* The plan holds while the world's structure and its archetype set
     * are those it was made for (removing archetypes moves the structure
     * version, so the creation count names the set). */
    if (WEFT__UNLIKELY(y->plan_version != w->version ||
                       y->plan_archs != w->arch_born) &&
        weft__visits_plan(w, y)) {
      for (uint32_t j = i; j < n; j++)
        l[j]->active = false; /* not run: not counted */
      int err = weft__fail(w, WEFT_ENOMEM, WEFT__FILE, WEFT__LINE,
                           "out of memory planning system %s", y->name);
      return rc ? rc : err;
    }
    bool check = false;
    if (y->ncalls) {
      weft__sysctx_switch(&ctx, y);
      if (y->one_view) { /* the common tiny system */
        const uint32_t seq = (uint32_t)(y->key0 >> 16) & 0xffffffu;
        ctx.chunk = seq;
        ctx.key_ = y->key0;
        weft__cmdkey_set(keys, y->key0);
        int r = y->run(&ctx, y->views);
        if (WEFT__UNLIKELY(r)) {
          record_error(y, r, seq);
          check = true;
        }
      } else {
        run_whole(s, y, &ctx, &it, &opened, &prev_terms);
        check = true;
      }
    }
    finish_plain(w, y, check, slot, &rc);
  }
  return rc;
}

/*
 * True when this segment's commands, summed over the slots, exceed what
 * every slot has room for; the high-water mark is then raised. The sum
 * does not depend on timing, its split over the slots does: giving every
 * slot room for the sum is what makes steady-state frames allocation-free.
 */
static bool usage_grew(weft__sched_t *s) {
  weft__cmdbuf_usage_t sum = {0, 0, 0};
  for (uint32_t k = 0; k < s->nslots; k++) {
    weft__cmdbuf_usage_t u;
    weft__cmdbuf_usage(s->bufs[k], &u);
    sum.cmds += u.cmds;
    sum.spawns += u.spawns;
    sum.bytes += u.bytes;
  }
  bool grew = sum.cmds > s->high.cmds || sum.spawns > s->high.spawns ||
              sum.bytes > s->high.bytes;
  if (sum.cmds > s->high.cmds)
    s->high.cmds = sum.cmds;
  if (sum.spawns > s->high.spawns)
    s->high.spawns = sum.spawns;
  if (sum.bytes > s->high.bytes)
    s->high.bytes = sum.bytes;
  return grew;
}

static int sync_point(weft_world_t *w, weft__sched_t *s, weft__phase_t *p,
                      weft_phase_t ph) {
  uint32_t cmds = 0;
  for (uint32_t k = 0; k < s->nslots; k++)
    cmds += weft_cmdbuf_count(s->bufs[k]);
  uint32_t events = weft__events_staged(w);
  if (cmds == 0 && events == 0)
    return 0;
  uint64_t t0 = weft__ticks();
  w->change_version++; /* rows the merge moves get a fresh version */
  bool grow = cmds && usage_grew(s);
  int rc = cmds ? weft_world_apply(w, s->bufs, s->nslots) : 0;
  if (grow)
    for (uint32_t k = 0; k < s->nslots && !rc; k++)
      rc = weft__cmdbuf_reserve(s->bufs[k], &s->high);
  /* Two merges per worker, so that one that finishes early takes another. */
  if (events && !rc)
    rc = weft__events_reserve(w, s->pool ? 2 * weft_pool_workers(s->pool) : 0);
  if (events)
    weft__events_publish(w, s->pool, s->main_self);
  p->stats.sync_points++;
  p->stats.commands += cmds;
  s->state.sync_points++;
  weft__trace_span(s, weft__sched_slot(s, s->main_self), WEFT__SPAN_SYNC, ph,
                   cmds, t0, weft__ticks());
  return rc;
}

/* An exclusive system: alone, on this thread, with direct world access. */
static void run_exclusive(weft__sched_t *s, weft__sys_t *y) {
  uint32_t k = weft__sched_slot(s, s->main_self);
  weft_sysctx_t ctx = weft__sysctx_make(s, y, k);
  uint64_t t0 = weft__ticks();
  if (!y->query) {
    run_task(y, &ctx);
  } else {
    /* Iterating opens a scope: structural calls stage until it ends. */
    weft_iter_t it;
    weft_query_iter(y->query, &it);
    for (uint32_t seq = 0; weft_iter_next(&it); seq++) {
      if (y->nchanged && !weft__visits_chunk_changed(y, weft__iter_chunk(&it)))
        continue; /* as the plan decided */
      weft__sysctx_key(&ctx, y, seq);
      int rc = y->run(&ctx, &it);
      if (rc)
        record_error(y, rc, seq);
    }
  }
  uint64_t t1 = weft__ticks();
  note_time(y, t0, t1);
  weft__trace_span(s, k, WEFT__SPAN_INLINE, y->id, 1, t0, t1);
}

/*
 * Ends a round in which some system asked for a commit: clears the
 * requests, and takes the held systems out of this round (a held one that
 * was to run becomes HELD_ACTIVE and inactive, so finish() skips it).
 * Returns whether any held system is to run in a next round.
 */
static WEFT__NOINLINE bool settle_holds(weft__sched_t *s, weft__sys_t **l,
                                        uint32_t n) {
  atomic_store_explicit(&s->commit_asked, false, memory_order_relaxed);
  bool again = false;
  for (uint32_t i = 0; i < n; i++) {
    weft__sys_t *y = l[i];
    atomic_store_explicit(&y->commit_req, false, memory_order_relaxed);
    uint8_t h = atomic_load_explicit(&y->held, memory_order_relaxed);
    if (!h)
      continue;
    if (h == HELD && y->active) /* held on the pool: still marked active */
      h = HELD_ACTIVE;
    atomic_store_explicit(&y->held, h, memory_order_relaxed);
    y->active = false;
    again |= h == HELD_ACTIVE;
  }
  return again;
}

/* Makes the held systems the next round: they alone are active, with the
 * versions prepare() gave them. */
static void release_holds(weft__sys_t **l, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    weft__sys_t *y = l[i];
    y->active = atomic_exchange_explicit(&y->held, 0, memory_order_relaxed) ==
                HELD_ACTIVE;
  }
}

/* Plans the next round's systems again: the sync point may have changed
 * the world's structure under their plans. */
static int replan(weft_world_t *w, weft__sched_t *s, weft__sys_t **l,
                  uint32_t n, double *cost) {
  double total = 0;
  for (uint32_t i = 0; i < n; i++) {
    weft__sys_t *y = l[i];
    if (!y->active)
      continue;
    if (WEFT__UNLIKELY(weft__visits_plan(w, y))) {
      for (uint32_t j = i; j < n; j++)
        l[j]->active = false; /* not run: not counted */
      return weft__fail(w, WEFT_ENOMEM, WEFT__FILE, WEFT__LINE,
                        "out of memory planning system %s", y->name);
    }
    if (s->pool)
      total += y->est_ns = weft__cost_estimate(y);
  }
  *cost = total;
  return 0;
}

/* The sync point between two rounds of a segment; keeps the first
 * failure in *rc. */
static void mid_sync(weft_world_t *w, weft__sched_t *s, weft__phase_t *p,
                     weft_phase_t ph, int *rc) {
  w->change_version++; /* as after a segment */
  int r = sync_point(w, s, p, ph);
  if (r && !*rc)
    *rc = r;
}

/* Runs one round of a prepared segment (general path); returns whether the
 * run may have set the timing atomics. */
static bool run_round(weft_world_t *w, weft__sched_t *s, weft__phase_t *p,
                      weft__sys_t **l, uint32_t n, double cost) {
  if (n == 1 && (l[0]->flags & WEFT_SYSTEM_EXCLUSIVE)) {
    if (l[0]->active)
      run_exclusive(s, l[0]);
    return true;
  }
  bool timed = true;
  /* Structural calls made directly by main-thread callbacks stage
   * instead of moving rows under the chunks being visited. */
  weft_world_defer_begin(w);
  if (!s->pool || cost < weft__cost_inline_ns(s)) {
    run_serial(s, p, l, n, p->sample_now);
    timed = s->cfg.time_inline || s->tracing || p->sample_now;
  } else {
    run_parallel(s, l, n);
  }
  weft_world_defer_end(w);
  return timed;
}

static int run_segment(weft_world_t *w, weft__sched_t *s, weft__phase_t *p,
                       weft_phase_t ph, weft__sys_t **l, uint32_t n) {
  /* Direct edge changes since the last sync leave reverse indices to
   * sort: sorted now, the systems' relation reads write nothing. */
  weft__rel_settle_order(w);
  if (l[0]->seg_plain && !s->pool && !s->cfg.time_inline && !s->tracing &&
      !p->sample_now) {
    prepare_plain(w, p, l, n);
    int rc = 0;
    for (;;) {
      weft_world_defer_begin(w);
      int r = run_plain(w, s, l, n);
      weft_world_defer_end(w);
      if (r && !rc)
        rc = r;
      /* One load a segment without a commit request. */
      if (WEFT__LIKELY(
              !atomic_load_explicit(&s->commit_asked, memory_order_relaxed)) ||
          !settle_holds(s, l, n))
        break;
      mid_sync(w, s, p, ph, &rc);
      weft__rel_settle_order(w); /* its despawns may leave some */
      release_holds(l, n);       /* run_plain() plans them again */
    }
    w->change_version++; /* later changes are newer than these runs */
    int src = sync_point(w, s, p, ph);
    return rc ? rc : src;
  }
  double cost = 0;
  int rc = prepare(w, s, p, l, n, &cost);
  if (rc)
    return rc;
  for (;;) {
    bool timed = run_round(w, s, p, l, n, cost);
    bool again = WEFT__UNLIKELY(atomic_load_explicit(&s->commit_asked,
                                                     memory_order_relaxed)) &&
                 settle_holds(s, l, n);
    int r = finish(w, p, l, n, timed);
    if (r && !rc)
      rc = r;
    if (!again)
      break;
    mid_sync(w, s, p, ph, &rc);
    weft__rel_settle_order(w); /* its despawns may leave some */
    release_holds(l, n);
    r = replan(w, s, l, n, &cost);
    if (r) {
      rc = rc ? rc : r;
      break;
    }
  }
  w->change_version++; /* later changes are newer than these runs */
  int src = sync_point(w, s, p, ph);
  return rc ? rc : src;
}

/* What follows phase @p ph's own run: its children, each with its
 * subtree, in registration order, unless @p ph is disabled (a disabled
 * phase disables its subtree); then the user phases anchored to it, in
 * registration order. Stops at the first failure. */
static WEFT__NOINLINE int run_followers(weft_world_t *w, weft__sched_t *s,
                                        weft_phase_t ph, double dt) {
  const weft__phase_t *p = &s->phases[ph];
  int rc = 0;
  if (p->enabled)
    for (weft_phase_t c = p->first_child; c && !rc;
         c = s->phases[c].next_sibling)
      rc = weft__pipeline_run_phase(w, s, c, dt);
  for (weft_phase_t q = WEFT__PHASE_BUILTINS + 1; q <= s->nphases && !rc; q++)
    if (s->phases[q].anchor == ph)
      rc = weft__pipeline_run_phase(w, s, q, dt);
  return rc;
}

/* weft__pipeline_run_phase(), inlined into the frame for its once-a-frame
 * phases: a frame of empty phases is mostly calls. */
static inline __attribute__((always_inline)) int
run_phase(weft_world_t *w, weft__sched_t *s, weft_phase_t ph, double dt) {
  weft__phase_t *p = &s->phases[ph];
  int rc = 0;
  s->dt = dt;
  p->stats.runs++;
  /* A phase without systems has nothing to time: a timestamp costs more
   * than the rest of its run. */
  if (p->nseg) {
    uint64_t t0 = weft__ticks();
    p->sample_now = p->sample_next;
    p->sample_next = false;
    for (uint32_t g = 0, b = 0; g < p->nseg; g++) {
      uint32_t e = p->seg_end[g];
      int r = run_segment(w, s, p, ph, p->order + b, e - b);
      if (r && !rc)
        rc = r;
      b = e;
    }
    p->stats.wall_ns += weft__ticks() - t0;
  }
  /* Children and anchored phases are user phases: a world without any
   * tests one count. */
  if (s->nphases > WEFT__PHASE_BUILTINS && !rc)
    rc = run_followers(w, s, ph, dt);
  return rc;
}

int weft__pipeline_run_phase(weft_world_t *w, weft__sched_t *s, weft_phase_t ph,
                             double dt) {
  return run_phase(w, s, ph, dt);
}

/*
 * Runs the pending systems of run-once phase @p ph (Startup, Shutdown),
 * then takes those that ran out of its schedule: a system is spent once
 * its turn came (enabled, in an enabled phase), whatever its callback
 * returned. A disabled one stays pending for a later run. Its run count
 * says whether it ran: `active` describes only the last round of a
 * segment that a commit request split (run_segment()).
 */
static WEFT__NOINLINE int run_once(weft_world_t *w, weft__sched_t *s,
                                   weft_phase_t ph, double dt) {
  weft__phase_t *p = &s->phases[ph];
  if (p->n == 0)
    return 0;
  int rc = weft__pipeline_run_phase(w, s, ph, dt);
  bool spent = false;
  for (uint32_t i = 0; i < p->n; i++)
    if (p->order[i]->stats.runs) {
      p->order[i]->spent = true;
      spent = true;
    }
  /* A registration since the build rebuilds everything at the next
   * dispatch anyway; otherwise only this phase changes. */
  if (spent && !s->dirty) {
    int b = weft__graph_build_phase(w, s, ph);
    if (!rc)
      rc = b;
  }
  return rc;
}

/* ---- the frame loop ------------------------------------------------------ */

static int enter(weft_world_t *w, weft__sched_t **out, double dt) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  WEFT_CHECK(w, isfinite(dt) && dt >= 0, WEFT_EINVAL,
             "dt must be finite and >= 0");
  weft__sched_t *s;
  int open_rc = weft__sched_open(w, &s);
  if (open_rc)
    return open_rc;
  WEFT_CHECK(w, !s->running, WEFT_EBUSY,
             "a frame is already running (called from a callback?)");
  WEFT_CHECK(w, weft_world_defer_depth(w) == 0, WEFT_EBUSY,
             "a deferred scope or iteration is open");
  int rc = weft__sched_build(w, s);
  if (rc)
    return rc;
  if (s->pool && s->clock.tick_ns != s->clock.ns_per_tick &&
      s->state.frames % 64 == 0)
    weft__clock_refresh(&s->clock);
  s->running = true;
  w->dispatching = true; /* weft_world_compact() refuses meanwhile */
  *out = s;
  return 0;
}

/* Leaves a dispatch: systems whose after() condition fired go now. */
static void leave(weft_world_t *w, weft__sched_t *s) {
  s->running = false;
  w->dispatching = false;
  if (!s->retiring)
    return;
  s->retiring = false;
  for (uint32_t i = 0; i < s->nsys; i++)
    if (s->sys[i] && s->sys[i]->retire)
      weft__sched_drop(w, s->sys[i]);
}

/*
 * Counts @p t seconds as dropped. Any finite dt is accepted, up to
 * DBL_MAX: the step count saturates instead of overflowing a conversion,
 * and so do the sums.
 */
static void drop_time(weft_pipeline_state_t *st, double t, double fixed_dt) {
  double steps = floor(t / fixed_dt);
  uint64_t n = steps < 0x1p64 ? (uint64_t)steps : UINT64_MAX;
  st->steps_dropped =
      n > UINT64_MAX - st->steps_dropped ? UINT64_MAX : st->steps_dropped + n;
  st->time_dropped =
      st->time_dropped <= DBL_MAX - t ? st->time_dropped + t : DBL_MAX;
}

/* The most fixed steps' worth of time WEFT_OVERLOAD_ACCUMULATE keeps. */
#define BACKLOG_STEPS 0x1p32

static int fixed_steps(weft_world_t *w, weft__sched_t *s) {
  const weft_pipeline_config_t *c = &s->cfg;
  weft_pipeline_state_t *st = &s->state;
  int rc = 0;
  /* A backlog past BACKLOG_STEPS could never be worked off, and past about
   * 2^53 steps subtracting a step would no longer change it: the excess
   * is dropped, as under WEFT_OVERLOAD_DROP. */
  const double backlog = BACKLOG_STEPS * c->fixed_dt;
  if (c->overload == WEFT_OVERLOAD_ACCUMULATE && st->accumulator > backlog) {
    drop_time(st, st->accumulator - backlog, c->fixed_dt);
    st->accumulator = backlog;
  }
  for (uint32_t steps = 0; !rc && st->accumulator >= c->fixed_dt; steps++) {
    if (steps == c->max_steps) {
      if (c->overload == WEFT_OVERLOAD_DROP) {
        drop_time(st, st->accumulator, c->fixed_dt);
        st->accumulator = 0;
      }
      break;
    }
    s->tick = st->tick;
    w->tick = st->tick;
    rc = weft__pipeline_run_phase(w, s, WEFT_PHASE_FIXED_UPDATE, c->fixed_dt);
    if (!rc)
      rc = weft__pipeline_run_phase(w, s, WEFT_PHASE_POST_FIXED_UPDATE,
                                    c->fixed_dt);
    /* Dirty bits and transitions describe one fixed step (weft/dirty.h). */
    if (!c->manual_clear)
      weft_world_clear_dirty(w);
    weft_event_clear(w, 0); /* events live for one fixed tick */
    st->tick++;
    st->accumulator -= c->fixed_dt;
    if (c->net_dt > 0)
      s->net_acc += c->fixed_dt; /* network time is simulated time */
    if (!rc && c->net_dt > 0 && s->net_acc >= c->net_dt) {
      rc = weft__pipeline_run_phase(w, s, WEFT_PHASE_NETWORK_TICK, c->net_dt);
      s->net_acc -= c->net_dt;
    }
  }
  return rc;
}

int weft_world_progress(weft_world_t *w, double dt) {
  weft__sched_t *s;
  int rc = enter(w, &s, dt);
  if (rc)
    return rc;
  s->tick = s->state.tick;
  w->tick = s->state.tick;
  /* Startup systems not yet run go first (phase.h): one load a frame
   * once they have. */
  if (WEFT__UNLIKELY(s->phases[WEFT_PHASE_STARTUP].n))
    rc = run_once(w, s, WEFT_PHASE_STARTUP, dt);
  if (!rc)
    rc = run_phase(w, s, WEFT_PHASE_PRE_UPDATE, dt);
  s->state.accumulator += dt;
  if (!rc)
    rc = fixed_steps(w, s);
  s->state.alpha = s->state.accumulator / s->cfg.fixed_dt;
  s->tick = s->state.tick;
  w->tick = s->state.tick;
  if (!rc)
    rc = run_phase(w, s, WEFT_PHASE_PRE_RENDER, dt);
  s->state.frames++;
  leave(w, s);
  return rc;
}

int weft_world_run_phase(weft_world_t *w, weft_phase_t phase, double dt) {
  weft__sched_t *s;
  int rc = enter(w, &s, dt);
  if (rc)
    return rc;
  if (phase < 1 || phase > s->nphases) {
    s->running = false;
    w->dispatching = false;
    return weft__fail(w, WEFT_ENONAME, WEFT__FILE, WEFT__LINE, "no phase %u",
                      phase);
  }
  s->tick = s->state.tick;
  w->tick = s->state.tick;
  rc = weft__phase_once(phase) ? run_once(w, s, phase, dt)
                               : weft__pipeline_run_phase(w, s, phase, dt);
  leave(w, s);
  return rc;
}

int weft_world_shutdown(weft_world_t *w) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  if (!weft__sched_of(w))
    return 0; /* no system was ever registered */
  weft__sched_t *s = NULL;
  int rc = enter(w, &s, 0.0);
  if (rc)
    return rc;
  s->tick = s->state.tick;
  rc = run_once(w, s, WEFT_PHASE_SHUTDOWN, 0.0);
  leave(w, s);
  return rc;
}

void weft__sched_shutdown(weft_world_t *w) {
  weft__sched_t *s = weft__sched_of(w);
  /* Destroyed from a callback or inside a scope, nothing can run. */
  if (!s || s->running || weft_world_defer_depth(w) != 0)
    return;
  bool pending = false;
  for (uint32_t i = 0; i < s->nsys && !pending; i++)
    pending = s->sys[i] && !s->sys[i]->removed && !s->sys[i]->spent &&
              s->sys[i]->phase == WEFT_PHASE_SHUTDOWN;
  if (pending)
    (void)weft_world_shutdown(w); /* no one is left to read a failure */
}

int weft_pipeline_configure(weft_world_t *w, const weft_pipeline_config_t *c) {
  WEFT_CHECK(w, w && c, WEFT_EINVAL, "NULL argument");
  weft__sched_t *s;
  int open_rc = weft__sched_open(w, &s);
  if (open_rc)
    return open_rc;
  WEFT_CHECK(w, !s->running, WEFT_EBUSY, "configure between frames");
  WEFT_CHECK(w, isfinite(c->fixed_dt) && c->fixed_dt >= 0, WEFT_EINVAL,
             "fixed_dt must be finite and >= 0");
  WEFT_CHECK(w, isfinite(c->net_dt), WEFT_EINVAL, "net_dt must be finite");
  WEFT_CHECK(w, c->overload <= WEFT_OVERLOAD_ACCUMULATE, WEFT_EINVAL,
             "unknown overload policy %d", (int)c->overload);
  s->cfg.fixed_dt = c->fixed_dt > 0 ? c->fixed_dt : 1.0 / 60.0;
  s->cfg.max_steps = c->max_steps ? c->max_steps : 8;
  s->cfg.overload = c->overload;
  s->cfg.net_dt = c->net_dt != 0 ? c->net_dt : 1.0 / 30.0;
  s->cfg.inline_rows = c->inline_rows ? c->inline_rows : 4096;
  s->cfg.time_inline = c->time_inline;
  s->cfg.manual_clear = c->manual_clear;
  return 0;
}

void weft_pipeline_state(const weft_world_t *w, weft_pipeline_state_t *out) {
  if (!out)
    return;
  *out = (w && weft__sched_of(w)) ? weft__sched_of(w)->state
                                  : (weft_pipeline_state_t){0};
}
