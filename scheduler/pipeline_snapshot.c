/* SPDX-License-Identifier: MIT */
/*
 * The pipeline's part of a snapshot (weft/snapshot.h): the fixed-step
 * clock (tick, accumulator, alpha, dropped time and steps, frames) and the
 * network-tick accumulator, in a section named "weft.pipeline" that the
 * scheduler registers on every world it runs. A restored world then takes
 * its next fixed step at the tick, and after the time, that the saved one
 * would have. Not restored: which Startup systems already ran (a restored
 * program runs its pending Startup systems again).
 */
#include <string.h>

#include "scheduler/sched.h"
#include "weft/snapshot.h"

#define PIPE_WORDS 8u

static int pipe_save(weft_world_t *w, void *user, weft_snapshot_out_t *out) {
  (void)user;
  const weft__sched_t *s = weft__sched_of(w);
  if (!s)
    return 0; /* the scheduler failed to start: an empty section */
  const weft_pipeline_state_t *st = &s->state;
  uint64_t v[PIPE_WORDS];
  memcpy(&v[0], &st->accumulator, 8);
  memcpy(&v[1], &st->alpha, 8);
  memcpy(&v[2], &st->time_dropped, 8);
  v[3] = st->steps_dropped;
  v[4] = st->tick;
  v[5] = st->frames;
  v[6] = st->sync_points;
  memcpy(&v[7], &s->net_acc, 8);
  return weft_snapshot_put(out, v, sizeof v);
}

static int pipe_check(const weft_world_t *w, void *user, const void *data,
                      size_t n) {
  (void)w;
  (void)user;
  (void)data;
  return n == PIPE_WORDS * 8u || n == 0 ? 0 : WEFT_EFORMAT;
}

static int pipe_load(weft_world_t *w, void *user, const void *data, size_t n) {
  (void)user;
  (void)n;
  weft__sched_t *s = weft__sched_of(w);
  if (!s || n == 0)
    return 0;
  uint64_t v[PIPE_WORDS];
  memcpy(v, data, sizeof v);
  weft_pipeline_state_t *st = &s->state;
  memcpy(&st->accumulator, &v[0], 8);
  memcpy(&st->alpha, &v[1], 8);
  memcpy(&st->time_dropped, &v[2], 8);
  st->steps_dropped = v[3];
  st->tick = v[4];
  st->frames = v[5];
  st->sync_points = v[6];
  memcpy(&s->net_acc, &v[7], 8);
  s->tick = st->tick;
  return 0;
}

int weft__pipeline_snapshot_register(weft_world_t *w) {
  weft_snapshot_section_desc_t d = {.name = "weft.pipeline",
                                    .save = pipe_save,
                                    .check = pipe_check,
                                    .load = pipe_load};
  return weft_snapshot_section_register(w, &d);
}
