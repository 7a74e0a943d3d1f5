/* SPDX-License-Identifier: MIT */
/*
 * Planning a system's run (visits.c): the chunks it visits, cut into jobs
 * per home node and per worker, and the change stamps of the columns it
 * writes. pipeline.c plans every system of a segment before any runs,
 * then dispatches the jobs.
 */
#ifndef WEFT_SCHEDULER_VISITS_H
#define WEFT_SCHEDULER_VISITS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/archetype.h"
#include "core/query_internal.h"
#include "core/world_view.h"
#include "scheduler/sched.h"

/* The most visits whose iterators a plan makes (weft__sys_t, views). */
#define WEFT__VIEWS_MAX 32u

/* Readies an iterator for a system's calls: the fields that are the same
 * for every chunk (weft__visits_view() fills the others). */
static inline void weft__visits_iter_open(weft_iter_t *it, weft_world_t *w) {
  memset(it, 0, sizeof *it);
  it->world_ = w;
  it->world_version_ = &w->version;
  it->version_ = w->version;
}

/* Points a callback's view at chunk c through its cached match m: the
 * same fields a query iterator fills, so weft_iter_field() and friends take
 * their fast paths. */
static inline void weft__visits_view(weft_iter_t *it, const weft__match_t *m,
                                     weft__chunk_t *c, uint32_t rows,
                                     uint32_t nterms) {
  it->count = rows;
  it->home_node = c->node;
  it->entities = c->entities;
  it->chunk_ = c;
  it->match_ = m;
  it->chunks_ = (void *const *)m->arch->chunks;
  it->nchunks_ = m->arch->nchunks;
  it->chunk_index_ = c->index + 1; /* nonzero: "on a chunk" */
  weft__iter_soa(it, m, c);
  for (uint32_t t = 0; t < nterms; t++) {
    uint32_t k = m->term_array[t];
    it->columns[t] = k ? c->bases[k - 1] : NULL;
  }
}

/* Whether chunk c changed since system y last ran: a structural change,
 * or a write to a column of its `changed` filter. */
bool weft__visits_chunk_changed(const weft__sys_t *y, const weft__chunk_t *c);

/* Plans a task (a system without a query): one job, one call. */
int weft__visits_plan_task(weft_world_t *w, weft__sys_t *y);

/* Plans a query system's run: its visits and jobs (see visits.c). Returns
 * 0 or WEFT_ENOMEM, which leaves the system unplanned. */
int weft__visits_plan_system(weft_world_t *w, weft__sys_t *y);

/* Marks every row of the chunks of visit vi dirty for the tracked columns
 * the system writes (weft/dirty.h): a chunk's all-rows-dirty flag per
 * column (core/dirty.c), a memset for columns past the flags. */
void weft__visits_mark_dirty(const weft__sys_t *y, const weft__visit_t *vi);

/* Stamps the columns the system writes, in the chunks of visit vi, with
 * its version, and marks their rows dirty where they are tracked. */
static inline void weft__visits_stamp(const weft__sys_t *y,
                                      const weft__visit_t *vi) {
  /* Locals: every stamp is a uint32_t store, which may alias the
   * system's and the visits' uint32_t fields, so the loops below would
   * otherwise reload them for each chunk. */
  const weft__ainfo_t *ai = &y->arch[vi->ai];
  if (__builtin_expect(ai->ndirty != 0, 0))
    weft__visits_mark_dirty(y, vi);
  const uint32_t version = y->version, ns = ai->nstamp;
  /* The chunks of a visit are consecutive chunks of one segment, whose
   * version rows are consecutive too (ncols words each): no chunk header
   * but the first is read. */
  uint32_t *vers = vi->chunk->versions;
  const uint32_t ncols = vi->chunk->arch->ncols, nch = vi->nch;
  /* Relaxed atomic stores (plain moves): a callback of the same run may
   * stamp these words from another worker (weft_get_many_ex() with a write
   * mask) with the world's newer version. A late stamp (stamp_late) may
   * then put this run's version back over it, which is harmless: stamps
   * are late only in segments without `changed` readers, so no reader's
   * last run lies between the two. */
  if (ns == 1) { /* the common case: a system writes one component */
    const uint32_t k = ai->stamp[0];
    for (uint32_t c = 0; c < nch; c++)
      __atomic_store_n(&vers[(size_t)c * ncols + k], version, __ATOMIC_RELAXED);
    return;
  }
  uint16_t st[WEFT_QUERY_MAX_TERMS + WEFT_SYSTEM_MAX_ACCESS];
  memcpy(st, ai->stamp, ns * sizeof st[0]);
  for (uint32_t c = 0; c < nch; c++, vers += ncols)
    for (uint32_t i = 0; i < ns; i++)
      __atomic_store_n(&vers[st[i]], version, __ATOMIC_RELAXED);
}

/* Stamps visits [first, end) of y. */
static inline void weft__visits_stamp_range(const weft__sys_t *y,
                                            uint32_t first, uint32_t end) {
  for (uint32_t v = first; v < end; v++)
    weft__visits_stamp(y, &y->visits[v]);
}

/* The rows of visits before visit i (all of them at i == nvisits). */
static inline uint64_t weft__visits_rows_before(const weft__sys_t *y,
                                                uint32_t i) {
  return i < y->nvisits ? y->visits[i].cum : y->rows;
}

/* Whether query system y's last plan still holds: the world has not
 * changed structurally, the query matched no new archetype, and it has no
 * `changed` filter (whose plan lasts one run). */
static inline bool weft__visits_plan_holds(const weft_world_t *w,
                                           const weft__sys_t *y) {
  return y->planned && y->plan_version == w->version && !y->nchanged &&
         y->plan_matches == y->query->nmatches;
}

/*
 * Plans system y's run (a task or a query system). The steady state, a
 * query system whose plan still holds and with no `write` list to stamp
 * everywhere, is decided here, inline: the driving thread asks once per
 * system and segment.
 */
static inline int weft__visits_plan(weft_world_t *w, weft__sys_t *y) {
  if (y->query && !y->list_stamps && weft__visits_plan_holds(w, y)) {
    y->njobs = y->nplanned;       /* drop last run's splits */
    y->plan_archs = w->arch_born; /* no new archetype matched */
    if (y->nwcols && !y->stamp_late)
      weft__visits_stamp_range(y, 0, y->nvisits);
    return 0;
  }
  return y->query ? weft__visits_plan_system(w, y)
                  : weft__visits_plan_task(w, y);
}

#endif /* WEFT_SCHEDULER_VISITS_H */
