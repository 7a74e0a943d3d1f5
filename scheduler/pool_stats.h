/* SPDX-License-Identifier: MIT */
/*
 * A worker's counters and its busy/idle clock (weft__worker_stats_t in
 * pool_internal.h): the owning worker writes them, any thread reads them
 * (weft_pool_worker_stats() in pool_stats.c). The busy and idle times are
 * a seqlock, so that a reader adding the open period never sees the time
 * go backwards; its writer and reader are in pool_stats.c. The counters'
 * bump is inline: it sits in the worker loop.
 */
#ifndef WEFT_SCHEDULER_POOL_STATS_H
#define WEFT_SCHEDULER_POOL_STATS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/platform.h"
#include "scheduler/pool_internal.h"

/* Adds v to a counter only its owner writes: a plain load and store, no
 * locked instruction, still atomic for readers. */
static inline void weft__stats_bump(_Atomic uint64_t *c, uint64_t v) {
  atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
                        memory_order_relaxed);
}

/* Closes the open busy or idle period of worker stats s and opens the
 * other kind (busy: a busy one), or none at exit (open false), so that a
 * stats reader can add the open period's time. The owning worker only
 * (the seqlock's one writer); pool_stats.c. */
void weft__stats_switch(weft__worker_stats_t *s, bool busy, bool open);

#endif /* WEFT_SCHEDULER_POOL_STATS_H */
