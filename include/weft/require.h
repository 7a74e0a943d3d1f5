/* SPDX-License-Identifier: MIT */
/**
 * @file weft/require.h
 * @brief Component requirements: adding a component adds what it requires.
 *
 * weft_component_require(world, A, B, &b) declares that every entity that
 * gains A also gains B (with the default value b, or zeros) if it lacks B.
 * Requirements are transitive (A requires B requires C: adding A adds B
 * and C) and may form cycles (A requires B, B requires A: adding either
 * adds both, once). They are addition rules, not invariants: removing a
 * component leaves its requirements in place, and a requirement removed
 * by hand stays removed until its requirer is added again.
 *
 * Every path that adds components applies them in the same archetype move
 * (one move, never one per requirement): weft_add(), weft_set(),
 * weft_spawn_with(), weft_spawn_batch(), weft_spawn_at(),
 * weft_spawn_batch_at(), the staged forms of these calls inside scopes and
 * with observers, and the command buffers' weft_cmd_add(), weft_cmd_set(),
 * weft_cmd_spawn() and weft_cmd_set_query(). Explicit values win over
 * defaults: a spawn that lists A and B keeps the value it gives B, and an
 * add of A to an entity that has B keeps B's value. Among defaults, the
 * nearest requirement wins (breadth-first from the component added, in
 * declaration order), and among the components of one spawn list, the
 * earlier component's. Inside one staged change list of a live entity (a
 * scope, a command buffer), adds apply in order, as the immediate calls
 * do: an add of B after an add of A that brought B in keeps A's default
 * for B (weft_add() never overwrites); a set of B overwrites it. For an
 * entity spawned in the same scope or buffer, every component the spawn
 * or a later add names counts as named by the spawn: its value (zeros
 * without one) wins over defaults.
 *
 * Requirements are declared per world, after registration (components
 * register one by one, so a component may require one registered after
 * it). A requirement is fixed once an archetype holds a component whose
 * requirements it would change: the archetype graph caches each add's
 * target, defaults included. Declare requirements before the first entity
 * gets the component (or any component that requires it).
 */
#ifndef WEFT_REQUIRE_H
#define WEFT_REQUIRE_H

#include <stdint.h>

#include "weft/component.h"
#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Declares that component @p comp requires component @p required: adding
 * @p comp to an entity that lacks @p required adds it too, with a copy of
 * @p value (as many bytes as @p required's registered size; NULL: zeros).
 * Declaring the same pair again replaces the default. Owner thread, outside a
 * drain; the world copies @p value, which the caller keeps owning.
 *
 * Returns 0, or: WEFT_EINVAL (NULL world, @p comp == @p required),
 * WEFT_ENOCOMP (unknown id), WEFT_ETAG (a value for a tag),
 * WEFT_EBUSY (during a drain, or an archetype already holds @p comp or a
 * component whose requirements reach @p comp: the moves cached for it
 * would be wrong; the message names the component), WEFT_ENOMEM. On error
 * nothing changes.
 */
int weft_component_require(weft_world_t *world, weft_component_t comp,
                           weft_component_t required, const void *value);

/**
 * Copies the closure of @p comp's requirements (everything adding @p comp
 * adds, @p comp excluded) in the order their defaults are decided:
 * breadth-first from @p comp, in declaration order. Writes at most @p cap
 * ids to @p out (may be NULL when @p cap is 0) and the closure's length to
 * *count. Reader threads. WEFT_EINVAL (NULL world or count), WEFT_ENOCOMP.
 */
int weft_component_requirements(const weft_world_t *world,
                                weft_component_t comp, weft_component_t *out,
                                uint32_t cap, uint32_t *count);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_REQUIRE_H */
