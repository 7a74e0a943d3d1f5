/* SPDX-License-Identifier: MIT */
/*
 * What a system's run costs, for the inline-or-dispatch decision of the
 * dispatcher (pipeline.c): the estimate before a run and what a measured
 * run teaches it. Static inline: pipeline.c calls them once per system and
 * segment, on the driving thread or the worker launching a system.
 */
#ifndef WEFT_SCHEDULER_COST_H
#define WEFT_SCHEDULER_COST_H

#include <math.h>
#include <stdint.h>

#include "scheduler/sched.h"

/*
 * Inline or dispatch: a system, or a segment's systems together, whose
 * estimated time is below inline_rows rows' worth (WEFT__COST_ROW_NS a
 * row) runs on the driving thread (or the worker launching it) without a
 * queue round trip; anything else goes to the pool. A query system is
 * estimated from its rows, at the time per row measured in its earlier
 * runs but never below WEFT__COST_ROW_NS, so that what matched many rows
 * is dispatched as it always was and a few heavy rows are too. A task is
 * estimated from its measured time; until it has one, it is dispatched
 * (unknown counts as heavy), since a task's rows say nothing about it.
 *
 * Runs on the pool are always timed. A timestamp costs about as much as a
 * tiny system, so a segment run inline is timed as a
 * whole (two timestamps); when it took longer than the threshold, the
 * next run of its phase times each of its systems (pipeline.c,
 * run_serial()), as does the first run of a phase after a registration.
 * Each estimate takes the smaller of the last two samples, so that one run
 * slowed by preemption on a loaded machine does not flip the decision.
 * Only timing depends on this: commands and events are keyed by system
 * and chunk, so results are the same whichever way it goes.
 */
#define WEFT__COST_ROW_NS 5.0

static inline double weft__cost_inline_ns(const weft__sched_t *s) {
  return (double)s->cfg.inline_rows * WEFT__COST_ROW_NS;
}

/* The estimated time of y's run this time, in ns (planned: rows known). */
static inline double weft__cost_estimate(const weft__sys_t *y) {
  if (y->query)
    return (double)y->rows *
           (y->row_ns > WEFT__COST_ROW_NS ? y->row_ns : WEFT__COST_ROW_NS);
  return y->cost_ns > 0 ? y->cost_ns : INFINITY;
}

/* Folds a run of y that took @p ticks into its estimate. */
static inline void weft__cost_learn(const weft__sched_t *s, weft__sys_t *y,
                                    uint64_t ticks) {
  double ns = (double)ticks * s->clock.tick_ns;
  if (y->query) {
    if (!y->rows)
      return; /* says nothing about a row */
    ns /= (double)y->rows;
  }
  double prev = y->last_ns;
  y->last_ns = ns;
  if (prev > 0 && prev < ns)
    ns = prev;
  if (y->query)
    y->row_ns = ns;
  else
    y->cost_ns = ns;
}

#endif /* WEFT_SCHEDULER_COST_H */
