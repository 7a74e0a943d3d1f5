/* SPDX-License-Identifier: MIT */
/*
 * Calibrating the scheduler's ticks (clock.h) against the monotonic clock.
 * The calibration state lives in the scheduler and is written by its owner
 * thread only, which is the only thread that converts ticks.
 */
#include "scheduler/clock.h"

void weft__clock_start(weft__clock_t *c) {
  c->cal_ns = weft__now_ns();
  c->cal_ticks = weft__ticks();
  c->tick_ns = 1.0;
}

double weft__ns_per_tick(weft__clock_t *c) {
#if WEFT__TICKS_ARE_NS
  (void)c;
  return 1.0;
#else
  if (c->ns_per_tick > 0)
    return c->ns_per_tick;
  uint64_t n, t;
  do {
    n = weft__now_ns();
    t = weft__ticks();
  } while (n - c->cal_ns < 2000000 || t == c->cal_ticks);
  double f = (double)(n - c->cal_ns) / (double)(t - c->cal_ticks);
  if (n - c->cal_ns > 1000000000u)
    c->ns_per_tick = f; /* good to 1 ppm: keep it */
  return f;
#endif
}

/* Keeps c->tick_ns, which converts measured ticks to ns for the
 * estimates, calibrated: a first guess of 1 until 2 ms after the
 * scheduler was created (ns_per_tick would wait until then), then the
 * running calibration, refreshed every 64 frames (two clock reads) until
 * it is final. */
void weft__clock_refresh(weft__clock_t *c) {
#if !WEFT__TICKS_ARE_NS
  if (c->ns_per_tick > 0)
    c->tick_ns = c->ns_per_tick;
  else if (weft__now_ns() - c->cal_ns >= 2000000u)
    c->tick_ns = weft__ns_per_tick(c);
#else
  (void)c;
#endif
}
