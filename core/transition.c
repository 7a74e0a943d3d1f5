/* SPDX-License-Identifier: MIT */
/*
 * The transition log (weft/transition.h). It records from the observer
 * dispatch points (core/observer.c): the drain calls them around every
 * change it applies, in its deterministic order, and a world with the log
 * on routes every structural call through the drain, as observers do. The
 * log is an internal event bit (WEFT__EVENT_LOG) in the world's event
 * mask, so that worlds without it pay what they paid before: nothing on
 * the direct paths, one test per drained change.
 */
#include "weft/transition.h"

#include "core/check.h"
#include "core/observer.h"
#include "core/world.h"

void weft__tlog_push(weft_world_t *w, weft_entity_t e, weft_component_t comp,
                     uint32_t kind) {
  /* The storage only grows, and is kept across clears: once it holds a
   * tick's worth of records, the log allocates nothing. */
  if (w->tlog_n == w->tlog_cap &&
      weft__grow(&w->alloc, &w->tlog, &w->tlog_cap, w->tlog_n + 1,
                 sizeof(*w->tlog), 256)) {
    w->tlog_dropped++; /* reported in the view; the drain goes on */
    return;
  }
  w->tlog[w->tlog_n++] = (weft_transition_t){.entity = e,
                                             .tick = w->tick,
                                             .component = comp,
                                             .kind = kind,
                                             .target = WEFT_ENTITY_NULL};
}

void weft__tlog_edge(weft_world_t *w, weft_entity_t src, weft_component_t rel,
                     weft_entity_t tgt, uint32_t kind) {
  uint32_t n = w->tlog_n;
  weft__tlog_push(w, src, rel, kind);
  if (w->tlog_n != n)
    w->tlog[n].target = tgt;
}

int weft_world_log_transitions(weft_world_t *w, bool on) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  WEFT_CHECK(w, !weft__txn_in_scope(&w->txn) && !w->txn.draining, WEFT_EBUSY,
             "the transition log cannot change while a scope or drain is "
             "open");
  if (on) {
    w->obs_internal |= WEFT__EVENT_LOG;
  } else {
    w->obs_internal &= ~WEFT__EVENT_LOG;
    w->tlog_n = 0;
    w->tlog_dropped = 0;
  }
  weft__obs_recompute(w);
  return 0;
}

int weft_world_transitions(const weft_world_t *w, weft_transitions_t *out) {
  WEFT_CHECK((weft_world_t *)w, w && out, WEFT_EINVAL, "NULL argument");
  *out = (weft_transitions_t){w->tlog, w->tlog_n, w->tlog_dropped};
  return 0;
}

/* Frees the log's storage (world teardown). */
void weft__tlog_fini(weft_world_t *w) {
  weft__free(w->tlog, 0, 16);
  w->tlog = NULL;
  w->tlog_n = w->tlog_cap = 0;
}
