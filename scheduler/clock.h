/* SPDX-License-Identifier: MIT */
/*
 * The scheduler's clock (clock.c): cheap ticks for per-system timing and
 * their calibration against the monotonic clock, which converts counters
 * and trace spans to nanoseconds when they are read, and measured ticks to
 * nanoseconds for the inline-or-dispatch cost estimates (pipeline.c).
 */
#ifndef WEFT_SCHEDULER_CLOCK_H
#define WEFT_SCHEDULER_CLOCK_H

#include <stdint.h>

#include "core/platform.h"

/*
 * A cheap timestamp for per-system timing: the TSC on x86-64 (a few times
 * cheaper than clock_gettime() in a VM), else nanoseconds.
 * Counters and trace spans keep ticks; weft__ns_per_tick() converts when
 * they are read.
 */
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline uint64_t weft__ticks(void) {
  return __rdtsc();
}
#define WEFT__TICKS_ARE_NS 0
#else
static inline uint64_t weft__ticks(void) {
  return weft__now_ns();
}
#define WEFT__TICKS_ARE_NS 1
#endif

/* The calibration of ticks against the clock. Written and read by the
 * scheduler's owner thread only (the driving thread, and the owner-thread
 * stats and trace calls). */
typedef struct weft__clock_t {
  uint64_t cal_ns, cal_ticks; /* clock and ticks at creation */
  double ns_per_tick;         /* cached once calibrated over 1 s */
  double tick_ns;             /* ns_per_tick, or a first guess until it is
                                 known; for cost estimates (pipeline.c) */
} weft__clock_t;

/* Starts the calibration of @p c: now is its reference point, and the cost
 * estimates take a tick for a nanosecond until 2 ms have passed. */
void weft__clock_start(weft__clock_t *c);

/* Nanoseconds per tick, calibrated against the clock since the scheduler
 * was created (waits up to 2 ms on the first call). Caches the result in
 * @p c once it rests on more than 1 s. */
double weft__ns_per_tick(weft__clock_t *c);

/* Keeps c->tick_ns calibrated for the cost estimates (clock.c). */
void weft__clock_refresh(weft__clock_t *c);

#endif /* WEFT_SCHEDULER_CLOCK_H */
