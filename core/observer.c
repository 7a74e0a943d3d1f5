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
#include "weft/transition.h"

int weft_observer_create(weft_world_t *w, const weft_observer_desc_t *d,
                         weft_observer_t **out) {
  WEFT_CHECK(w, w && d && out, WEFT_EINVAL, "NULL argument");
  const uint32_t all = WEFT_EVENT_SPAWN | WEFT_EVENT_DESPAWN | WEFT_EVENT_ADD |
                       WEFT_EVENT_REMOVE | WEFT_EVENT_ENTER | WEFT_EVENT_LEAVE |
                       WEFT_EVENT_ARCHETYPE_CREATED |
                       WEFT_EVENT_ARCHETYPE_ENTER | WEFT_EVENT_ARCHETYPE_LEAVE |
                       WEFT_EVENT_ARCHETYPE_MOVE | WEFT_EVENT_ARCHETYPE_DELETED;
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

void weft__obs_recompute(weft_world_t *w) {
  w->obs_events = w->obs_internal;
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
  weft__obs_recompute(w);
}

void weft__obs_forget_query(weft_world_t *w, const weft_query_t *q) {
  for (uint32_t i = w->nobs; i-- > 0;)
    if (w->obs[i]->desc.query == q)
      remove_at(w, i);
  weft__obs_recompute(w);
}

void weft__obs_fini(weft_world_t *w) {
  while (w->nobs)
    remove_at(w, w->nobs - 1);
  weft__free(w->obs, 0, 16);
  w->obs = NULL;
  w->obs_cap = 0;
  w->obs_internal = 0;
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

/* The public id of archetype a (weft_archetype_of()), 0 for none. */
static inline uint32_t arch_id(const weft__archetype_t *a) {
  return a ? a->id + 1 : 0;
}

/*
 * Archetype events of one kind for rows [row, row + n) of chunk c, which
 * belong to (or are leaving) c's archetype; `other` is the archetype at
 * the other end of the move, NULL for a spawn or despawn.
 */
static void arch_events(weft_world_t *w, uint32_t kind, weft__chunk_t *c,
                        uint32_t row, uint32_t n,
                        const weft__archetype_t *other) {
  if (!(w->obs_events & kind))
    return;
  const uint32_t id = arch_id(c->arch);
  for (uint32_t i = 0; i < w->nobs; i++) {
    const weft_observer_t *o = w->obs[i];
    if (!(o->desc.events & kind) ||
        (o->desc.archetype && o->desc.archetype != id))
      continue;
    weft_iter_t view;
    weft__iter_view(w, c, row, n, NULL, 0, &view);
    weft_event_t ev = {
        .kind = kind,
        .entity = c->entities[row],
        .first_row = row,
        .count = n,
        .rows = &view,
        .archetype = id,
        .other_archetype = arch_id(other),
    };
    o->desc.fn(w, &ev, o->desc.user);
  }
}

void weft__obs_archetype_created(weft_world_t *w, const weft__archetype_t *a) {
  if (!(w->obs_events & WEFT_EVENT_ARCHETYPE_CREATED))
    return;
  weft_event_t ev = {
      .kind = WEFT_EVENT_ARCHETYPE_CREATED,
      .count = 1,
      .archetype = arch_id(a),
      .components = a->comps,
      .ncomponents = a->ncomps,
  };
  for (uint32_t i = 0; i < w->nobs; i++)
    if (w->obs[i]->desc.events & WEFT_EVENT_ARCHETYPE_CREATED)
      w->obs[i]->desc.fn(w, &ev, w->obs[i]->desc.user);
}

void weft__obs_archetype_deleted(weft_world_t *w, const weft__archetype_t *a,
                                 uint32_t id) {
  if (!(w->obs_events & WEFT_EVENT_ARCHETYPE_DELETED))
    return;
  weft_event_t ev = {
      .kind = WEFT_EVENT_ARCHETYPE_DELETED,
      .count = 1,
      .archetype = id + 1,
      .components = a->comps,
      .ncomponents = a->ncomps,
  };
  for (uint32_t i = 0; i < w->nobs; i++)
    if (w->obs[i]->desc.events & WEFT_EVENT_ARCHETYPE_DELETED)
      w->obs[i]->desc.fn(w, &ev, w->obs[i]->desc.user);
}

void weft__obs_retire_archetype(weft_world_t *w, uint32_t id) {
  for (uint32_t i = 0; i < w->nobs; i++)
    if (w->obs[i]->desc.archetype == id + 1)
      w->obs[i]->desc.archetype = UINT32_MAX;
}

/* Logs a spawn of rows [row, row + n) of c: SPAWN and ADD per component. */
static void log_spawns(weft_world_t *w, const weft__chunk_t *c, uint32_t row,
                       uint32_t n) {
  const weft__archetype_t *a = c->arch;
  for (uint32_t r = row; r < row + n; r++) {
    weft__tlog_push(w, c->entities[r], 0, WEFT_TRANSITION_SPAWN);
    for (uint32_t k = 0; k < a->ncomps; k++)
      weft__tlog_push(w, c->entities[r], a->comps[k], WEFT_TRANSITION_ADD);
  }
}

/* Logs what a move from `from` to `to` changed for entity e, component by
 * component in ascending id: added, removed, enabled or disabled. */
static void log_move(weft_world_t *w, weft_entity_t e,
                     const weft__archetype_t *from,
                     const weft__archetype_t *to) {
  weft__mask_t any = from->present;
  WEFT__MASK_FOREACH(&to->present, id) {
    weft__mask_set(&any, id);
  }
  WEFT__MASK_FOREACH(&any, id) {
    bool had = weft__mask_test(&from->present, id);
    bool has = weft__mask_test(&to->present, id);
    uint32_t kind = 0;
    if (had != has)
      kind = has ? WEFT_TRANSITION_ADD : WEFT_TRANSITION_REMOVE;
    else if (weft__mask_test(&from->disabled, id) !=
             weft__mask_test(&to->disabled, id))
      kind = weft__mask_test(&to->disabled, id) ? WEFT_TRANSITION_DISABLE
                                                : WEFT_TRANSITION_ENABLE;
    if (kind)
      weft__tlog_push(w, e, id, kind);
  }
}

void weft__obs_despawn(weft_world_t *w, weft__chunk_t *c, uint32_t row) {
  if (!w->obs_events)
    return;
  if (w->obs_events & WEFT__EVENT_LOG)
    weft__tlog_push(w, c->entities[row], 0, WEFT_TRANSITION_DESPAWN);
  entity_event(w, WEFT_EVENT_DESPAWN, c, row);
  comp_events(w, WEFT_EVENT_REMOVE, c->arch, NULL, c, row);
  query_events(w, WEFT_EVENT_LEAVE, c->arch, NULL, c, row, 1);
  arch_events(w, WEFT_EVENT_ARCHETYPE_LEAVE, c, row, 1, NULL);
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
  if (w->obs_events & WEFT__EVENT_LOG)
    log_spawns(w, c, row, 1);
  entity_event(w, WEFT_EVENT_SPAWN, c, row);
  comp_events(w, WEFT_EVENT_ADD, c->arch, NULL, c, row);
  query_events(w, WEFT_EVENT_ENTER, c->arch, NULL, c, row, 1);
  arch_events(w, WEFT_EVENT_ARCHETYPE_ENTER, c, row, 1, NULL);
}

void weft__obs_move_out(weft_world_t *w, const weft__archetype_t *from,
                        const weft__archetype_t *to, weft__chunk_t *c,
                        uint32_t row) {
  if (!w->obs_events)
    return;
  comp_events(w, WEFT_EVENT_REMOVE, from, to, c, row);
  query_events(w, WEFT_EVENT_LEAVE, from, to, c, row, 1);
  arch_events(w, WEFT_EVENT_ARCHETYPE_LEAVE, c, row, 1, to);
}

void weft__obs_move_in(weft_world_t *w, const weft__archetype_t *from,
                       const weft__archetype_t *to, weft__chunk_t *c,
                       uint32_t row) {
  if (!w->obs_events)
    return;
  if (w->obs_events & WEFT__EVENT_LOG)
    log_move(w, c->entities[row], from, to);
  comp_events(w, WEFT_EVENT_ADD, to, from, c, row);
  query_events(w, WEFT_EVENT_ENTER, to, from, c, row, 1);
  arch_events(w, WEFT_EVENT_ARCHETYPE_ENTER, c, row, 1, from);
  arch_events(w, WEFT_EVENT_ARCHETYPE_MOVE, c, row, 1, from);
}

void weft__obs_enter_range(weft_world_t *w, weft__chunk_t *c, uint32_t row0,
                           uint32_t n) {
  if (w->obs_events & WEFT__EVENT_LOG)
    log_spawns(w, c, row0, n);
  query_events(w, WEFT_EVENT_ENTER, c->arch, NULL, c, row0, n);
  arch_events(w, WEFT_EVENT_ARCHETYPE_ENTER, c, row0, n, NULL);
}

uint32_t weft_archetype_of(const weft_world_t *w, weft_entity_t e) {
  weft__where_t at;
  if (!w || !weft__locate(w, e, &at))
    return 0;
  return arch_id(at.arch);
}
