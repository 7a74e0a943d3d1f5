/* SPDX-License-Identifier: MIT */
/**
 * @file weft/transition.h
 * @brief The transition log: the structural changes of the current tick.
 *
 * Once turned on (weft_world_log_transitions()), the world records every
 * structural change it applies as a weft_transition_t: spawns, despawns,
 * components added and removed, components enabled and disabled. Records
 * are appended in the order the changes are applied (the drain's order:
 * sync points merge buffers by their keys, so the log is identical on any
 * number of workers), the records of one change in ascending component
 * id. A spawn logs SPAWN and then ADD for each component it starts with; a
 * despawn logs DESPAWN only. Batch spawns log SPAWN and ADDs per entity
 * too. Relationship edges (weft/relation.h) log EDGE_ADD and EDGE_REMOVE
 * with their target: a source's first edge of a relation logs the
 * relation id's ADD first, its last edge's EDGE_REMOVE comes before the
 * relation id's REMOVE, an exclusive add that replaces an edge logs the
 * old edge's EDGE_REMOVE before the new one's EDGE_ADD, and a target's
 * DESPAWN is followed by EDGE_REMOVE for each living source that loses an
 * edge to it (a dying entity's own edges go with its DESPAWN, unlogged).
 * Changing an existing edge's payload is a value write, not a transition.
 *
 * Systems read the log after the sync point that applied the changes
 * (weft_world_transitions() from a later segment, or a task). The log is
 * emptied with the dirty bits (weft_world_clear_dirty(), at the end of
 * every fixed step by default) and keeps its storage: a world whose log
 * has reached its working size allocates nothing more.
 *
 * While the log is on, structural calls take the staged path, as they do
 * when observers exist: the log sees every change in one place. A world
 * that never turns it on pays nothing.
 */
#ifndef WEFT_TRANSITION_H
#define WEFT_TRANSITION_H

#include <stdbool.h>
#include <stdint.h>

#include "weft/component.h"
#include "weft/entity.h"
#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What a transition record reports. */
typedef enum weft_transition_kind_t {
  WEFT_TRANSITION_SPAWN = 1, /**< the entity was created (component 0) */
  WEFT_TRANSITION_DESPAWN,   /**< the entity was destroyed (component 0) */
  WEFT_TRANSITION_ADD,       /**< the component joined the entity */
  WEFT_TRANSITION_REMOVE,    /**< the component left the entity */
  WEFT_TRANSITION_ENABLE,    /**< the component was enabled */
  WEFT_TRANSITION_DISABLE,   /**< the component was disabled */
  /** The entity gained the edge (component = the relation, target). */
  WEFT_TRANSITION_EDGE_ADD,
  /** The entity lost the edge (component = the relation, target): removed,
   * replaced by an exclusive add, or gone with its target. */
  WEFT_TRANSITION_EDGE_REMOVE
} weft_transition_kind_t;

/** One structural change. */
typedef struct weft_transition_t {
  weft_entity_t entity;       /**< the entity (stale after a despawn) */
  uint64_t tick;              /**< weft_pipeline_state_t.tick at the time */
  weft_component_t component; /**< 0 for SPAWN and DESPAWN */
  uint32_t kind;              /**< a weft_transition_kind_t */
  /** The edge's target for EDGE_ADD and EDGE_REMOVE, else
   * WEFT_ENTITY_NULL (possibly stale once the target died). */
  weft_entity_t target;
} weft_transition_t;

/** A view of the log. */
typedef struct weft_transitions_t {
  const weft_transition_t *items; /**< count records, oldest first */
  uint32_t count;
  /** Records lost for want of memory since the last clear (0 normally). */
  uint32_t dropped;
} weft_transitions_t;

/**
 * Turns the log on or off. Turning it off empties it (and releases
 * nothing: the storage stays for a later turn on). Owner thread, outside
 * scopes, drains and frames: WEFT_EINVAL (NULL world), WEFT_EBUSY.
 */
int weft_world_log_transitions(weft_world_t *world, bool on);

/**
 * Points @p out at the log: valid until the next structural change
 * applied, clear or turn off. The records belong to the world. Owner
 * thread, or a system's callback while no sync point runs (the log only
 * grows at sync points). WEFT_EINVAL (NULL argument).
 */
int weft_world_transitions(const weft_world_t *world, weft_transitions_t *out);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_TRANSITION_H */
