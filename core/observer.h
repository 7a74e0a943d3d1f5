/* SPDX-License-Identifier: MIT */
/*
 * Observer dispatch. The drain (txn.c) and batch spawns call these around
 * each structural change; every one returns at once when the world has no
 * observer for the event, so worlds without observers pay one branch.
 */
#ifndef WEFT_CORE_OBSERVER_H
#define WEFT_CORE_OBSERVER_H

#include <stdint.h>

#include "weft/observer.h"

struct weft_world_t;
struct weft__archetype_t;
struct weft__chunk_t;

/* Internal event bits kept in the world's obs_events beside the observers'
 * (weft_world_t.obs_internal): the transition log's (core/transition.c).
 * Set, they route structural calls through the drain like observers do. */
#define WEFT__EVENT_LOG (1u << 31)

/* Appends a record to the transition log (transition.c). */
void weft__tlog_push(struct weft_world_t *w, weft_entity_t e,
                     weft_component_t comp, uint32_t kind);

/* Appends an EDGE_ADD or EDGE_REMOVE record of edge (rel, tgt) of src
 * (transition.c); callers test WEFT__EVENT_LOG first. */
void weft__tlog_edge(struct weft_world_t *w, weft_entity_t src,
                     weft_component_t rel, weft_entity_t tgt, uint32_t kind);

/* Frees the transition log's storage (world teardown, transition.c). */
void weft__tlog_fini(struct weft_world_t *w);

/* After archetype a was created and registered: ARCHETYPE_CREATED. */
void weft__obs_archetype_created(struct weft_world_t *w,
                                 const struct weft__archetype_t *a);

/* After weft_world_compact() pruned archetype a, whose id was @p id (a is
 * detached, not yet freed): ARCHETYPE_DELETED. */
void weft__obs_archetype_deleted(struct weft_world_t *w,
                                 const struct weft__archetype_t *a,
                                 uint32_t id);

/* Archetype id @p id was pruned: observers filtering on it never fire
 * again, not for an archetype that reuses the id either. */
void weft__obs_retire_archetype(struct weft_world_t *w, uint32_t id);

/* Recomputes the world's event mask (observers' and internal bits) and its
 * routing. */
void weft__obs_recompute(struct weft_world_t *w);

struct weft_observer_t {
  struct weft_world_t *world;
  weft_observer_desc_t desc;
};

/* Before a despawn: DESPAWN, REMOVE for every component, LEAVE. */
void weft__obs_despawn(struct weft_world_t *w, struct weft__chunk_t *c,
                       uint32_t row);
/* A staged spawn was cancelled: DESPAWN without rows. */
void weft__obs_cancelled(struct weft_world_t *w, weft_entity_t e);
/* After a spawn was placed: SPAWN, ADD for every component, ENTER. */
void weft__obs_spawn(struct weft_world_t *w, struct weft__chunk_t *c,
                     uint32_t row);
/* Before a row moves from `from` to `to`: REMOVE and LEAVE. */
void weft__obs_move_out(struct weft_world_t *w,
                        const struct weft__archetype_t *from,
                        const struct weft__archetype_t *to,
                        struct weft__chunk_t *c, uint32_t row);
/* After a row moved from `from` into chunk c: ADD and ENTER. */
void weft__obs_move_in(struct weft_world_t *w,
                       const struct weft__archetype_t *from,
                       const struct weft__archetype_t *to,
                       struct weft__chunk_t *c, uint32_t row);
/* After a batch spawn filled rows [row0, row0 + n) of c: ENTER. */
void weft__obs_enter_range(struct weft_world_t *w, struct weft__chunk_t *c,
                           uint32_t row0, uint32_t n);
/* Destroys the observers watching query q (the query is going away). */
void weft__obs_forget_query(struct weft_world_t *w, const weft_query_t *q);
/* Destroys every observer (world teardown). */
void weft__obs_fini(struct weft_world_t *w);

#endif /* WEFT_CORE_OBSERVER_H */
