/* SPDX-License-Identifier: MIT */
/**
 * @file weft/relation.h
 * @brief Relationships: edges from a source entity to a target entity.
 *
 * A relationship (ChildOf, OwnedBy, Follows) is registered once per world
 * and named by a component id from the same registry as components, so
 * the id works as a query term: every entity with at least one edge of the
 * relation has the relation's bit in its archetype, and a query that
 * includes the id matches entities with any edge of it (a wildcard), one
 * that excludes it matches entities with none.
 *
 * Edges live in the world's edge store, the one source of truth for every
 * edge: per source, its edges sorted by (relation, target); per target,
 * the reverse list of its sources, so that a target's death removes its
 * incoming edges (or, for a CASCADE relation, despawns its sources) without
 * a scan. An edge may carry a payload of the size the relation declares.
 *
 * Storage. A relation is dense by default: each source also lives in an
 * archetype whose signature holds the (relation, target) pair of each of
 * its edges, so that sources of different targets are in different
 * archetypes and a query's pair term (weft_query_desc_t.pairs, and
 * exclude_pairs) selects one target's sources as whole chunks, with
 * weft_iter_target() naming the chunk's target. Every edge change of a
 * dense relation is a row move (one cached transition plus the copies).
 * A dense relation with a payload must be EXCLUSIVE: its payload is a
 * column of the relation's id in the source's archetype (one cell per
 * source), which queries read like any column (include the relation id)
 * and weft_relation_get() returns; weft_get() of the relation id reads
 * that cell too, and a direct weft_set() of it on a source that has the
 * edge writes it (staged, weft_set() of a relation id stays refused, and
 * without the edge it is WEFT_EINVAL). Each target makes its own
 * archetypes, which stay, empty, after the target dies (until
 * weft_world_compact()): relations with many or short-lived targets
 * (every unit's squad of thousands, every projectile's owner) should be
 * WEFT_RELATION_SPARSE, where edges live in the store only and the
 * relation's archetype bit (the wildcard) is the only placement.
 *
 * Mutations follow weft_add(): direct on the owner thread outside scopes,
 * staged inside a deferred or iteration scope or a drain (applied at the
 * drain, in call order, after the wave's spawns, despawns and moves), and
 * recorded through command buffers with weft_cmd_relation_add() and
 * weft_cmd_relation_remove(), merged deterministically like every command.
 * Plain weft_add(), weft_set(), weft_enable() and weft_disable() of a
 * relation id fail with WEFT_EINVAL (an edge needs a target); weft_remove()
 * of a relation id removes every edge of that relation from the entity.
 * Stale, forged or foreign handles, as source or target, are checked
 * misses: WEFT_ESTALE from the direct calls, a counted drop from staged
 * ones.
 */
#ifndef WEFT_RELATION_H
#define WEFT_RELATION_H

#include <stdbool.h>
#include <stdint.h>

#include "weft/command.h"
#include "weft/component.h"
#include "weft/entity.h"
#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A source holds at most one edge of the relation: adding one replaces
 * the previous edge (its payload too). */
#define WEFT_RELATION_EXCLUSIVE 0x1u
/** Edges stored in the edge store only: no (relation, target) archetypes
 * are made, pair query terms refuse the relation, and payloads of
 * non-exclusive relations are allowed. Without it a relation is dense
 * (see the file's description). */
#define WEFT_RELATION_SPARSE 0x2u
/** Despawning a target despawns its sources, recursively, in the same
 * sync point. Requires WEFT_RELATION_EXCLUSIVE. */
#define WEFT_RELATION_CASCADE 0x4u

/** Depth limit of weft_relation_walk_up() when 0 is given. */
#define WEFT_RELATION_DEPTH_DEFAULT 100u

/** Describes a relation to weft_relation_register(). Zero means default. */
typedef struct weft_relation_desc_t {
  const char *name;   /**< unique among components and relations */
  uint32_t size;      /**< payload bytes per edge; 0: a plain edge */
  uint32_t alignment; /**< payload alignment, a power of two <=
                           WEFT_ALIGN_MAX; 0 means the largest power of two
                           dividing size, capped at 16 */
  uint32_t flags;     /**< WEFT_RELATION_* */
} weft_relation_desc_t;

/**
 * Called for each edge by weft_relation_each() and weft_relation_sources():
 * @p source and @p target are the edge's ends, @p payload its payload
 * (NULL for a relation without one; writable, valid during the call).
 * Return false to stop. The callback must not add or remove edges nor
 * despawn entities (not checked: the calls that take it keep no state, so
 * that systems on workers may make them).
 */
typedef bool (*weft_relation_edge_fn)(weft_entity_t source,
                                      weft_entity_t target, void *payload,
                                      void *user);

/**
 * Called for each entity by weft_relation_traverse() and
 * weft_relation_walk_up(), with its depth. Return false to stop. The same
 * restrictions as weft_relation_edge_fn apply.
 */
typedef bool (*weft_relation_visit_fn)(weft_entity_t e, uint32_t depth,
                                       void *user);

/**
 * Registers a relation. Owner thread, before or between structural use
 * (like weft_component_register()).
 *
 * Fails, changing nothing, with WEFT_EINVAL (NULL argument, bad or long
 * name, unknown flags, CASCADE without EXCLUSIVE, a payload on a dense
 * relation that is not EXCLUSIVE), WEFT_EEXIST (the name
 * is taken by a component or relation), WEFT_ELAYOUT (alignment not a
 * power of two or above WEFT_ALIGN_MAX, size not a multiple of it, size
 * above 64 KiB), WEFT_ETOOMANY (the component registry is full) or
 * WEFT_ENOMEM. On success *out receives the relation's component id.
 */
int weft_relation_register(weft_world_t *world,
                           const weft_relation_desc_t *desc,
                           weft_component_t *out);

/**
 * Adds the edge (@p rel, @p target) to @p source, with payload @p value
 * (copied; NULL zero-fills). An existing edge to the same target keeps its
 * place and takes the new payload; for an EXCLUSIVE relation, an edge to
 * another target is replaced. A source may target itself. For a dense
 * relation the source moves to the archetype with the new pair (and
 * without the replaced one).
 *
 * Owner thread. Direct outside scopes; staged (applied at the drain)
 * inside a deferred or iteration scope, a drain or while observers exist.
 * Returns 0, WEFT_EINVAL (NULL world, @p rel not a relation, target
 * WEFT_ENTITY_NULL), WEFT_ESTALE (source or target not live; direct path
 * only: staged edges with a dead end are dropped and counted as stale),
 * WEFT_EBUSY (inside a weft_relation_traverse() or walk callback) or
 * WEFT_ENOMEM.
 */
int weft_relation_add(weft_world_t *world, weft_entity_t source,
                      weft_component_t rel, weft_entity_t target,
                      const void *value);

/**
 * Removes the edge (@p rel, @p target) from @p source; removing an edge
 * that does not exist is a successful no-op. When the source has no edge
 * of @p rel left, it leaves the relation's archetype bit. Threads, staging
 * and errors as weft_relation_add().
 */
int weft_relation_remove(weft_world_t *world, weft_entity_t source,
                         weft_component_t rel, weft_entity_t target);

/**
 * Whether live @p source has the edge (@p rel, @p target) now (staged
 * edges are not yet visible). False for stale handles (counted) and for
 * ids that are not relations. Owner thread, or readers while the owner
 * makes no structural change.
 */
bool weft_relation_has(const weft_world_t *world, weft_entity_t source,
                       weft_component_t rel, weft_entity_t target);

/**
 * Stores in *target the first target of @p source's edges of @p rel in
 * ascending handle order (the only one for an EXCLUSIVE relation).
 * Returns 0, WEFT_ENOTFOUND (no edge; *target = WEFT_ENTITY_NULL),
 * WEFT_ESTALE or WEFT_EINVAL. Threads as weft_relation_has().
 */
int weft_relation_first(const weft_world_t *world, weft_entity_t source,
                        weft_component_t rel, weft_entity_t *target);

/**
 * The payload of edge (@p rel, @p target) of @p source, writable, or NULL
 * when there is no such edge, the relation has no payload or a handle is
 * stale. The pointer stays valid until the next edge is added in the
 * world or the edge goes; for a dense relation it is the source's cell of
 * the payload column, valid until the next structural change. Threads as
 * weft_relation_has().
 */
void *weft_relation_get(const weft_world_t *world, weft_entity_t source,
                        weft_component_t rel, weft_entity_t target);

/**
 * Number of edges of @p rel that @p source has (0 for a stale handle or
 * an id that is not a relation). Threads as weft_relation_has().
 */
uint32_t weft_relation_count(const weft_world_t *world, weft_entity_t source,
                             weft_component_t rel);

/**
 * Calls @p fn for each edge of @p rel of @p source, in ascending target
 * order, until it returns false. Returns 0, WEFT_ESTALE or WEFT_EINVAL.
 * Owner thread, or systems on workers that declare @p rel in their read
 * list (they write nothing: the scheduler sorts the reverse indices before
 * systems run), while the owner makes no structural change.
 */
int weft_relation_each(weft_world_t *world, weft_entity_t source,
                       weft_component_t rel, weft_relation_edge_fn fn,
                       void *user);

/**
 * Calls @p fn for each source with an edge (@p rel, @p target), in
 * ascending source order, until it returns false. Costs the number of
 * sources (the reverse index), not a scan. Returns 0, WEFT_ESTALE or
 * WEFT_EINVAL. Threads as weft_relation_each() (on the owner thread
 * outside phases it may sort the target's reverse index first).
 */
int weft_relation_sources(weft_world_t *world, weft_entity_t target,
                          weft_component_t rel, weft_relation_edge_fn fn,
                          void *user);

/**
 * Depth-first, pre-order walk over the sources of @p rel below @p root:
 * the root's direct sources at depth 0 (ascending), each followed by its
 * own subtree before the next. The root is not visited; each entity is
 * visited once even when several paths (or a cycle) lead to it. Stops
 * when @p fn returns false. Allocates only to grow the world's kept
 * scratch. Returns 0, WEFT_ESTALE, WEFT_EINVAL, WEFT_EBUSY (inside another
 * relation callback) or WEFT_ENOMEM. Owner thread.
 */
int weft_relation_traverse(weft_world_t *world, weft_entity_t root,
                           weft_component_t rel, weft_relation_visit_fn fn,
                           void *user);

/**
 * Follows the first edge (ascending target) of @p rel upwards from @p e:
 * @p fn sees e's first target at depth 1, that target's first target at
 * depth 2, and so on, until an entity without an edge of @p rel (returns
 * 0) or @p fn returns false (0). @p max_depth bounds the walk (0: the
 * default, WEFT_RELATION_DEPTH_DEFAULT); going deeper fails with
 * WEFT_ELIMIT. Reaching an entity already on the path fails with
 * WEFT_ECYCLE, with a message naming the entities of the cycle (the
 * callback has seen each of them once). Also WEFT_ESTALE, WEFT_EINVAL,
 * WEFT_EBUSY. Owner thread.
 */
int weft_relation_walk_up(weft_world_t *world, weft_entity_t e,
                          weft_component_t rel, uint32_t max_depth,
                          weft_relation_visit_fn fn, void *user);

/**
 * Stores in *depth how many first edges (ascending target) of @p rel lead
 * up from @p e to an entity without one: 0 for a root, 1 for its direct
 * sources, and so on; what weft_relation_walk_up() would visit, without a
 * callback. Fails like it: WEFT_ECYCLE (message naming the cycle),
 * WEFT_ELIMIT (deeper than @p max_depth, 0 meaning
 * WEFT_RELATION_DEPTH_DEFAULT), WEFT_ESTALE, WEFT_EINVAL, WEFT_EBUSY; *depth
 * is 0 on failure. Owner thread.
 */
int weft_relation_depth(weft_world_t *world, weft_entity_t e,
                        weft_component_t rel, uint32_t max_depth,
                        uint32_t *depth);

/**
 * Records the edge add (@p rel, @p target) on @p source into a command
 * buffer (see weft_relation_add() for what applying it does). Either end
 * may be a pending handle from weft_cmd_spawn() of any buffer of the same
 * apply. The buffer's thread. Returns 0, WEFT_EINVAL (NULL or destroyed
 * buffer, @p rel not a relation, NULL target) or WEFT_ENOMEM; the value is
 * copied. Ends that are dead when the commands are applied make the
 * command a counted stale drop.
 */
int weft_cmd_relation_add(weft_cmdbuf_t *buf, weft_entity_t source,
                          weft_component_t rel, weft_entity_t target,
                          const void *value);

/** Records the edge removal (@p rel, @p target) from @p source; as
 * weft_cmd_relation_add(). */
int weft_cmd_relation_remove(weft_cmdbuf_t *buf, weft_entity_t source,
                             weft_component_t rel, weft_entity_t target);

/** Live edges in the world, all relations (staged ones not counted).
 * Reader threads while the owner makes no structural change. */
uint64_t weft_relation_edge_count(const weft_world_t *world);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_RELATION_H */
