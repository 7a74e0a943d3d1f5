/* SPDX-License-Identifier: MIT */
/*
 * The frame loop: weft_world_progress() runs PreUpdate, then as many fixed
 * steps (FixedUpdate, PostFixedUpdate, and a NetworkTick every net_dt of
 * simulated time) as the accumulated time holds, then PreRender with the
 * interpolation alpha; weft_world_run_phase() runs one phase. Each phase
 * runs through weft__pipeline_run_phase() (pipeline.c).
 */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "core/check.h"
#include "core/world_view.h"
#include "scheduler/clock.h"
#include "scheduler/sched.h"

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
  *out = s;
  return 0;
}

/* Leaves a dispatch: systems whose after() condition fired go now. */
static void leave(weft_world_t *w, weft__sched_t *s) {
  s->running = false;
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
    rc = weft__pipeline_run_phase(w, s, WEFT_PHASE_FIXED_UPDATE, c->fixed_dt);
    if (!rc)
      rc = weft__pipeline_run_phase(w, s, WEFT_PHASE_POST_FIXED_UPDATE,
                                    c->fixed_dt);
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
  rc = weft__pipeline_run_phase(w, s, WEFT_PHASE_PRE_UPDATE, dt);
  s->state.accumulator += dt;
  if (!rc)
    rc = fixed_steps(w, s);
  s->state.alpha = s->state.accumulator / s->cfg.fixed_dt;
  s->tick = s->state.tick;
  if (!rc)
    rc = weft__pipeline_run_phase(w, s, WEFT_PHASE_PRE_RENDER, dt);
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
    return weft__fail(w, WEFT_ENONAME, WEFT__FILE, WEFT__LINE, "no phase %u",
                      phase);
  }
  s->tick = s->state.tick;
  rc = weft__pipeline_run_phase(w, s, phase, dt);
  leave(w, s);
  return rc;
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
  return 0;
}

void weft_pipeline_state(const weft_world_t *w, weft_pipeline_state_t *out) {
  if (!out)
    return;
  *out = (w && weft__sched_of(w)) ? weft__sched_of(w)->state
                                  : (weft_pipeline_state_t){0};
}
