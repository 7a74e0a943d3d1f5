/* SPDX-License-Identifier: MIT */
/**
 * @file weft/observer.h
 * @brief Observers: callbacks on spawn, despawn, component add/remove and
 * query membership.
 *
 * Observers run on the owner thread, in registration order, while the
 * world applies a structural change: inline for a direct call (which then
 * takes the staged path), during the drain for staged and buffered work.
 * They see a consistent world. Structural calls an observer makes stage and
 * run in the next drain wave (see command.h).
 *
 * - WEFT_EVENT_SPAWN: after the entity is placed with all its values.
 * - WEFT_EVENT_DESPAWN: before removal; the entity is still alive, readable
 *   and queryable. A staged spawn cancelled by a despawn reports it too,
 *   with no rows.
 * - WEFT_EVENT_ADD / WEFT_EVENT_REMOVE: a component (the observer's, or any
 *   when it names none) joined or left an entity's signature; REMOVE fires
 *   before the entity leaves, with the value still readable. Despawn
 *   reports REMOVE for every component. Enable/disable is not add/remove.
 * - WEFT_EVENT_ENTER / WEFT_EVENT_LEAVE: rows entered or left the
 *   observer's query (disabling a component can make rows leave). Rows come
 *   as ranges of one chunk: LEAVE before they go, readable; ENTER after
 *   they arrived. Batch spawns report ENTER ranges (and no SPAWN events).
 *
 * Archetype events (the observer's archetype, or every one when it names
 * none; archetype ids are those the events and weft_archetype_of() report,
 * from 1, stable for the archetype's life):
 *
 * - WEFT_EVENT_ARCHETYPE_CREATED: a new archetype (signature) exists, with
 *   `components` its component ids, ascending. It fires before any row
 *   lands there, so observers learn of an archetype before its first
 *   ENTER. An archetype created by a call that then fails is dropped again
 *   and its id reused.
 * - WEFT_EVENT_ARCHETYPE_ENTER: rows arrived in `archetype`, from
 *   `other_archetype` (0: spawned); values are readable through `rows`.
 *   Batch spawns report ranges.
 * - WEFT_EVENT_ARCHETYPE_LEAVE: rows are about to leave `archetype` for
 *   `other_archetype` (0: despawned); still readable.
 * - WEFT_EVENT_ARCHETYPE_MOVE: a row moved from `other_archetype` into
 *   `archetype` (an add, remove, enable or disable): one event per move,
 *   after it, for observers that follow migrations and not spawns.
 * - WEFT_EVENT_ARCHETYPE_DELETED: weft_world_compact() pruned `archetype`
 *   (weft/compact.h), with `components` as for CREATED; delivered at the
 *   end of the compaction, to every observer of the event whatever its
 *   filter. The id may be reused by a later archetype; an observer whose
 *   ENTER/LEAVE/MOVE filter named it has its filter retired (it never
 *   fires again). Archetypes a failed call drops again report nothing.
 *
 * For one change, events come in this order: LEAVE, then ENTER and MOVE;
 * observers in registration order. Like every observer, archetype
 * observers make structural calls take the staged path; a world without
 * any pays one test per drained change.
 */
#ifndef WEFT_OBSERVER_H
#define WEFT_OBSERVER_H

#include <stdint.h>

#include "weft/component.h"
#include "weft/entity.h"
#include "weft/query.h"
#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Event kinds, combinable as a mask. */
enum {
  WEFT_EVENT_SPAWN = 1u << 0,
  WEFT_EVENT_DESPAWN = 1u << 1,
  WEFT_EVENT_ADD = 1u << 2,
  WEFT_EVENT_REMOVE = 1u << 3,
  WEFT_EVENT_ENTER = 1u << 4,
  WEFT_EVENT_LEAVE = 1u << 5,
  WEFT_EVENT_ARCHETYPE_CREATED = 1u << 6,
  WEFT_EVENT_ARCHETYPE_ENTER = 1u << 7,
  WEFT_EVENT_ARCHETYPE_LEAVE = 1u << 8,
  WEFT_EVENT_ARCHETYPE_MOVE = 1u << 9,
  WEFT_EVENT_ARCHETYPE_DELETED = 1u << 10
};

/** An opaque observer owned by its world. */
typedef struct weft_observer_t weft_observer_t;

/**
 * One delivery. Valid only during the callback.
 *
 * `rows` views the affected rows of one chunk: rows->count rows starting at
 * `first_row`, rows->entities their handles, and rows->columns[t] the
 * arrays of the observer query's include term t (ENTER/LEAVE) or of the
 * component (ADD/REMOVE, term 0). It is NULL for the OnDespawn of a
 * cancelled staged spawn.
 */
typedef struct weft_event_t {
  uint32_t kind;              /**< one WEFT_EVENT_* bit */
  weft_component_t component; /**< ADD/REMOVE: the component */
  weft_entity_t entity;       /**< first entity of the range */
  uint32_t first_row;         /**< first row in the chunk */
  uint32_t count;             /**< rows in the range (>= 1; 1 if no rows) */
  const weft_iter_t *rows;    /**< the rows, or NULL */
  const weft_query_t *query;  /**< ENTER/LEAVE: the observer's query */
  /** ARCHETYPE_*: the archetype created, entered, left, moved into or
   * deleted. */
  uint32_t archetype;
  /** ARCHETYPE_ENTER/LEAVE/MOVE: where the rows come from or go to; 0 for
   * a spawn or a despawn. */
  uint32_t other_archetype;
  /** ARCHETYPE_CREATED/DELETED: the archetype's component ids, ascending;
   * owned by the world, valid for the archetype's life (DELETED: for the
   * callback). */
  const weft_component_t *components;
  uint32_t ncomponents; /**< entries in components */
} weft_event_t;

/** An observer callback. Owner thread. */
typedef void (*weft_observer_fn)(weft_world_t *world, const weft_event_t *ev,
                                 void *user);

/** What an observer listens to. */
typedef struct weft_observer_desc_t {
  uint32_t events;            /**< mask of WEFT_EVENT_* */
  weft_component_t component; /**< ADD/REMOVE filter; 0 means any */
  const weft_query_t *query;  /**< required for ENTER/LEAVE */
  weft_observer_fn fn;        /**< required */
  void *user;                 /**< passed to fn */
  /** ARCHETYPE_ENTER/LEAVE/MOVE filter: one archetype id; 0 means any. */
  uint32_t archetype;
} weft_observer_desc_t;

/**
 * Registers an observer. Owner thread, outside scopes. *out belongs to the
 * world, lives until weft_observer_destroy() or the world's destruction.
 * WEFT_EINVAL (no events, no fn, ENTER/LEAVE without a query, with
 * another world's query or with a temporary one), WEFT_ENOCOMP,
 * WEFT_EBUSY, WEFT_ENOMEM.
 */
int weft_observer_create(weft_world_t *world, const weft_observer_desc_t *desc,
                         weft_observer_t **out);

/**
 * The archetype id of live entity @p e (as archetype events report it), 0
 * for a stale handle. Owner thread, or any thread while no structural
 * change runs.
 */
uint32_t weft_archetype_of(const weft_world_t *world, weft_entity_t e);

/** Unregisters an observer. Owner thread, outside scopes; NULL is a no-op. */
void weft_observer_destroy(weft_observer_t *obs);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_OBSERVER_H */
