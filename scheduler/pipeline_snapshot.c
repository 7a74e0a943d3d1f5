/* SPDX-License-Identifier: MIT */
/*
 * The pipeline's part of a snapshot (weft/snapshot.h): the fixed-step
 * clock (tick, accumulator, alpha, dropped time and steps, frames) and the
 * network-tick accumulator, in a section named "weft.pipeline" that the
 * scheduler registers on every world it runs. A restored world then takes
 * its next fixed step at the tick, and after the time, that the saved one
 * would have. Then the names of the run-once systems (Startup) that
 * already ran: a restored program marks its systems of those names spent,
 * so they do not run a second time.
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
  int rc = weft_snapshot_put(out, v, sizeof v);
  uint32_t nspent = 0;
  for (uint32_t i = 0; i < s->nsys; i++)
    nspent += s->sys[i] && s->sys[i]->spent && !s->sys[i]->removed;
  if (!rc)
    rc = weft_snapshot_put(out, &nspent, 4);
  for (uint32_t i = 0; !rc && i < s->nsys; i++) {
    const weft__sys_t *y = s->sys[i];
    if (!y || !y->spent || y->removed)
      continue;
    uint32_t len = (uint32_t)strlen(y->name);
    rc = weft_snapshot_put(out, &len, 4);
    if (!rc)
      rc = weft_snapshot_put(out, y->name, len);
  }
  return rc;
}

/* Walks the spent names after the clock words: calls mark(s, name, len)
 * for each if s is not NULL; false when the bytes are malformed. */
static bool spent_names(weft__sched_t *s, const uint8_t *p, size_t n) {
  if (n < 4)
    return false;
  uint32_t count;
  memcpy(&count, p, 4);
  size_t at = 4;
  for (uint32_t k = 0; k < count; k++) {
    uint32_t len;
    if (n - at < 4)
      return false;
    memcpy(&len, p + at, 4);
    at += 4;
    if (len == 0 || len > n - at)
      return false;
    for (uint32_t i = 0; s && i < s->nsys; i++) {
      weft__sys_t *y = s->sys[i];
      if (y && !y->removed && strlen(y->name) == len &&
          !memcmp(y->name, p + at, len) && !y->spent) {
        y->spent = true;
        s->dirty = true; /* the schedule drops it at the next build */
      }
    }
    at += len;
  }
  return at == n;
}

static int pipe_check(const weft_world_t *w, void *user, const void *data,
                      size_t n) {
  (void)w;
  (void)user;
  if (n == 0)
    return 0;
  return n >= PIPE_WORDS * 8u &&
                 spent_names(NULL, (const uint8_t *)data + PIPE_WORDS * 8u,
                             n - PIPE_WORDS * 8u)
             ? 0
             : WEFT_EFORMAT;
}

static int pipe_load(weft_world_t *w, void *user, const void *data, size_t n) {
  (void)user;
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
  spent_names(s, (const uint8_t *)data + PIPE_WORDS * 8u, n - PIPE_WORDS * 8u);
  return 0;
}

int weft__pipeline_snapshot_register(weft_world_t *w) {
  weft_snapshot_section_desc_t d = {.name = "weft.pipeline",
                                    .save = pipe_save,
                                    .check = pipe_check,
                                    .load = pipe_load};
  return weft_snapshot_section_register(w, &d);
}
