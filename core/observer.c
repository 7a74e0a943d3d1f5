/* SPDX-License-Identifier: MIT */
/*
 * Observers: registration and dispatch of spawn, despawn, add/remove and
 * query enter/leave events. Dispatch walks observers in registration order,
 * which makes the order of callbacks deterministic. While observers run,
 * the world is inside a drain (or a scope), so a structural call an
 * observer makes is staged for the next wave rather than moving the rows
 * the observer is looking at.
 */
#include "core/observer.h"

#include <string.h>

#include "core/check.h"
#include "core/query_internal.h"
#include "core/world.h"

int weft_observer_create(weft_world_t *w, const weft_observer_desc_t *d,
                         weft_observer_t **out) {
  WEFT_CHECK(w, w && d && out, WEFT_EINVAL, "NULL argument");
  const uint32_t all = WEFT_EVENT_SPAWN | WEFT_EVENT_DESPAWN | WEFT_EVENT_ADD |
                       WEFT_EVENT_REMOVE | WEFT_EVENT_ENTER | WEFT_EVENT_LEAVE;
  WEFT_CHECK(w, d->fn && d->events && !(d->events & ~all), WEFT_EINVAL,
             "an observer needs a callback and a valid event mask");
  bool membership = d->events & (WEFT_EVENT_ENTER | WEFT_EVENT_LEAVE);
  WEFT_CHECK(w, !membership || (d->query && d->query->world == w), WEFT_EINVAL,
             "ENTER/LEAVE observers need a query of this world");
  WEFT_CHECK(w, !membership || !d->query->temp, WEFT_EINVAL,
             "a temporary query cannot serve ENTER/LEAVE observers: its "
             "archetypes are frozen, membership is not");
  WEFT_CHECK(w, d->component == 0 || d->component <= w->registry.count,
             WEFT_ENOCOMP, "unknown component id %u", (unsigned)d->component);
  WEFT_CHECK(w, !weft__txn_in_scope(&w->txn) && !w->txn.draining, WEFT_EBUSY,
             "observers cannot change while a scope or drain is open");
  int rc = weft__grow(&w->alloc, &w->obs, &w->obs_cap, w->nobs + 1,
                      sizeof(*w->obs), 4);
  WEFT_CHECK(w, rc == 0, WEFT_ENOMEM, "out of memory adding an observer");
  weft_observer_t *o = weft__alloc(&w->alloc, sizeof(*o), 16);
  WEFT_CHECK(w, o != NULL, WEFT_ENOMEM, "out of memory adding an observer");
  o->world = w;
  o->desc = *d;
  w->obs[w->nobs++] = o;
  w->obs_events |= d->events;
  weft__route_sync(w);
  *out = o;
  return 0;
}

static void recompute_events(weft_world_t *w) {
  w->obs_events = 0;
  for (uint32_t i = 0; i < w->nobs; i++)
    w->obs_events |= w->obs[i]->desc.events;
  weft__route_sync(w);
}

static void remove_at(weft_world_t *w, uint32_t i) {
  weft__free(w->obs[i], sizeof(weft_observer_t), 16);
  /* Keep registration order: later observers shift down. */
  memmove(&w->obs[i], &w->obs[i + 1], (w->nobs - i - 1) * sizeof(*w->obs));
  w->nobs--;
}

void weft_observer_destroy(weft_observer_t *o) {
  if (!o)
    return;
  weft_world_t *w = o->world;
  if (weft__txn_in_scope(&w->txn) || w->txn.draining) {
    weft__panic(w, __FILE__, __LINE__,
                "observer destroyed while a scope or drain is open");
    return;
  }
  for (uint32_t i = 0; i < w->nobs; i++)
    if (w->obs[i] == o) {
      remove_at(w, i);
      break;
    }
  recompute_events(w);
}

void weft__obs_forget_query(weft_world_t *w, const weft_query_t *q) {
  for (uint32_t i = w->nobs; i-- > 0;)
    if (w->obs[i]->desc.query == q)
      remove_at(w, i);
  recompute_events(w);
}

void weft__obs_fini(weft_world_t *w) {
  while (w->nobs)
    remove_at(w, w->nobs - 1);
  weft__free(w->obs, 0, 16);
  w->obs = NULL;
  w->obs_cap = 0;
  w->obs_events = 0;
  weft__route_sync(w);
}

/* Delivers one event for rows [row, row + n) of chunk c. */
static void deliver(weft_world_t *w, const weft_observer_t *o, uint32_t kind,
                    weft_component_t comp, weft__chunk_t *c, uint32_t row,
                    uint32_t n) {
  weft_iter_t view;
  const weft_component_t *terms = NULL;
  uint32_t nterms = 0;
  if (kind & (WEFT_EVENT_ENTER | WEFT_EVENT_LEAVE)) {
    terms = o->desc.query->terms;
    nterms = o->desc.query->nterms;
  } else if (kind & (WEFT_EVENT_ADD | WEFT_EVENT_REMOVE)) {
    terms = &comp; /* the observer's filter, or any component: this one */
    nterms = 1;
  }
  weft__iter_view(w, c, row, n, terms, nterms, &view);
  weft_event_t ev = {
      .kind = kind,
      .component = comp,
      .entity = c->entities[row],
      .first_row = row,
      .count = n,
      .rows = &view,
      .query =
          (kind & (WEFT_EVENT_ENTER | WEFT_EVENT_LEAVE)) ? o->desc.query : NULL,
  };
  o->desc.fn(w, &ev, o->desc.user);
}

/* Entity events (SPAWN / DESPAWN) for every observer of that kind. */
static void entity_event(weft_world_t *w, uint32_t kind, weft__chunk_t *c,
                         uint32_t row) {
  if (!(w->obs_events & kind))
    return;
  for (uint32_t i = 0; i < w->nobs; i++)
    if (w->obs[i]->desc.events & kind)
      deliver(w, w->obs[i], kind, 0, c, row, 1);
}

/*
 * Component events for the components in `have` but not in `other` (NULL:
 * all of `have`), in ascending id order, observers in registration order.
 */
static void comp_events(weft_world_t *w, uint32_t kind,
                        const weft__archetype_t *have,
                        const weft__archetype_t *other, weft__chunk_t *c,
                        uint32_t row) {
  if (!(w->obs_events & kind))
    return;
  for (uint32_t k = 0; k < have->ncomps; k++) {
    weft_component_t comp = have->comps[k];
    if (other && weft__mask_test(&other->present, comp))
      continue;
    for (uint32_t i = 0; i < w->nobs; i++) {
      const weft_observer_t *o = w->obs[i];
      if ((o->desc.events & kind) &&
          (o->desc.component == 0 || o->desc.component == comp))
        deliver(w, o, kind, comp, c, row, 1);
    }
  }
}

/* Membership events for queries `in` matches and `out` (NULL: nothing)
 * does not. */
static void query_events(weft_world_t *w, uint32_t kind,
                         const weft__archetype_t *in,
                         const weft__archetype_t *out, weft__chunk_t *c,
                         uint32_t row, uint32_t n) {
  if (!(w->obs_events & kind))
    return;
  for (uint32_t i = 0; i < w->nobs; i++) {
    const weft_observer_t *o = w->obs[i];
    if (!(o->desc.events & kind))
      continue;
    const weft_query_t *q = o->desc.query;
    if (weft__query_matches(q, in) && !(out && weft__query_matches(q, out)))
      deliver(w, o, kind, 0, c, row, n);
  }
}

void weft__obs_despawn(weft_world_t *w, weft__chunk_t *c, uint32_t row) {
  if (!w->obs_events)
    return;
  entity_event(w, WEFT_EVENT_DESPAWN, c, row);
  comp_events(w, WEFT_EVENT_REMOVE, c->arch, NULL, c, row);
  query_events(w, WEFT_EVENT_LEAVE, c->arch, NULL, c, row, 1);
}

void weft__obs_cancelled(weft_world_t *w, weft_entity_t e) {
  if (!(w->obs_events & WEFT_EVENT_DESPAWN))
    return;
  weft_event_t ev = {.kind = WEFT_EVENT_DESPAWN, .entity = e, .count = 1};
  for (uint32_t i = 0; i < w->nobs; i++)
    if (w->obs[i]->desc.events & WEFT_EVENT_DESPAWN)
      w->obs[i]->desc.fn(w, &ev, w->obs[i]->desc.user);
}

void weft__obs_spawn(weft_world_t *w, weft__chunk_t *c, uint32_t row) {
  if (!w->obs_events)
    return;
  entity_event(w, WEFT_EVENT_SPAWN, c, row);
  comp_events(w, WEFT_EVENT_ADD, c->arch, NULL, c, row);
  query_events(w, WEFT_EVENT_ENTER, c->arch, NULL, c, row, 1);
}

void weft__obs_move_out(weft_world_t *w, const weft__archetype_t *from,
                        const weft__archetype_t *to, weft__chunk_t *c,
                        uint32_t row) {
  if (!w->obs_events)
    return;
  comp_events(w, WEFT_EVENT_REMOVE, from, to, c, row);
  query_events(w, WEFT_EVENT_LEAVE, from, to, c, row, 1);
}

void weft__obs_move_in(weft_world_t *w, const weft__archetype_t *from,
                       const weft__archetype_t *to, weft__chunk_t *c,
                       uint32_t row) {
  if (!w->obs_events)
    return;
  comp_events(w, WEFT_EVENT_ADD, to, from, c, row);
  query_events(w, WEFT_EVENT_ENTER, to, from, c, row, 1);
}

void weft__obs_enter_range(weft_world_t *w, weft__chunk_t *c, uint32_t row0,
                           uint32_t n) {
  query_events(w, WEFT_EVENT_ENTER, c->arch, NULL, c, row0, n);
}
