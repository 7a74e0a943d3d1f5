/* SPDX-License-Identifier: MIT */
/**
 * @file weft/command.h
 * @brief Command buffers, deferred scopes and the deterministic merge.
 *
 * Structural changes made while chunks are being read (by one thread or
 * many) are recorded and applied later, at a sync point, in one
 * transaction. Two ways in:
 *
 * - **Command buffers** (weft_cmdbuf_t), one per recording thread. Any
 *   number of buffers record at once without locks; recording reads the
 *   world but never writes it. weft_world_apply() merges a set of buffers
 *   and applies them as one transaction.
 * - **Deferred scopes** for code on the owner thread:
 *   weft_world_defer_begin() / weft_world_defer_end(). While a scope is
 *   open (query iteration opens one too), the ordinary structural calls of
 *   entity.h stage instead of applying, and the outermost end applies them.
 *
 * **Ordering.** Every command carries a 64-bit key set with weft_cmd_key()
 * (0 by default) plus its position in its buffer. The merge orders all
 * commands by key, then by position, so the result does not depend on how
 * commands were spread over buffers or threads as long as each key is
 * recorded by one buffer. WEFT_CMD_KEY() builds the usual key: a context
 * order (a system's declared order), a chunk index and a row.
 *
 * **Transaction semantics** (the mutation model). Within one transaction
 * each entity is committed, staged spawn, staged mutate or staged despawn.
 * Commands for one entity fold into one net change: add A, add B, remove C
 * is one archetype move; the last write of a component wins; remove then
 * add of the same component keeps the row and fires no membership event;
 * despawn cancels everything staged for the entity (a cancelled spawn
 * still reports OnDespawn). A command naming a stale handle is a counted
 * no-op. The drain runs in waves: despawns, then spawns (which reuse the
 * rows the despawns freed), then moves, then query-wide set/remove in call
 * order. Commands that observers record start another wave; after 64 waves
 * the drain stops with WEFT_ECASCADE and drops what is left, leaving the
 * world consistent.
 *
 * **Pending handles.** weft_cmd_spawn() returns a pending handle at once.
 * Any command of the same transaction, in any buffer, may name it; the
 * spawn exists for the whole transaction, so a command that comes before
 * the spawn in merge order still applies to it. After the apply,
 * weft_cmd_resolve() gives the entity it became. Entity functions reject a
 * pending handle (WEFT_ESTALE; is_alive is false). Pending handles stored
 * inside component values are not rewritten. A pending handle carries a
 * 12-bit epoch of its buffer: it is meaningful until the buffer's next
 * apply or clear and rejected after that, for 4095 further applies (keep
 * the resolved handle, not the pending one). Spawns staged through a
 * deferred scope (weft_spawn() in a scope) return the real handle at once
 * instead; it becomes visible when the scope drains.
 */
#ifndef WEFT_COMMAND_H
#define WEFT_COMMAND_H

#include <stdbool.h>
#include <stdint.h>

#include "weft/component.h"
#include "weft/entity.h"
#include "weft/query.h"
#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An opaque command buffer owned by its world. */
typedef struct weft_cmdbuf_t weft_cmdbuf_t;

/** Buffers per world. */
#define WEFT_CMDBUF_MAX 4095u

/** Pending spawns per buffer per transaction. */
#define WEFT_CMD_SPAWNS_MAX 0x7fffffffu

/**
 * An ordering key from a context order (< 2^24, such as a system's place in
 * its phase), a chunk index (< 2^24) and a row (< 2^16).
 */
#define WEFT_CMD_KEY(order, chunk, row)                                        \
  (((uint64_t)(order) << 40) | ((uint64_t)((chunk)&0xffffffu) << 16) |         \
   (uint64_t)((row)&0xffffu))

/** True for a handle returned by weft_cmd_spawn(). Any thread (reads only
 * the handle's bits). */
static inline bool weft_entity_is_pending(weft_entity_t e) {
  return (e & 0x80000000u) != 0;
}

/**
 * Creates a command buffer. Owner thread. *out belongs to the world and
 * lives until weft_cmdbuf_destroy() or the world's destruction. Returns
 * WEFT_ELIMIT past WEFT_CMDBUF_MAX buffers, or WEFT_ENOMEM.
 */
int weft_cmdbuf_create(weft_world_t *world, weft_cmdbuf_t **out);

/**
 * Destroys a buffer and drops what it recorded. Owner thread; NULL is a
 * no-op returning 0. The buffer's own memory, its command arrays at their
 * largest size included, stays with the world (a later
 * weft_cmdbuf_create() reuses it, so that a buffer made and destroyed
 * every frame allocates nothing once warm; weft_world_trim() frees the
 * arrays and the world frees the rest), so misuse
 * through a stale pointer is reported, in every build, instead of
 * touching freed memory: destroying a buffer twice returns WEFT_EINVAL, as
 * does recording into a destroyed buffer (nothing is recorded) or
 * applying it; destroying a system's ctx->cmd, which the scheduler owns,
 * returns WEFT_EINVAL; destroying a buffer that weft_world_apply() is
 * applying (from an observer) returns WEFT_EBUSY. Once a later create has
 * reused the memory, the stale pointer names the new buffer.
 */
int weft_cmdbuf_destroy(weft_cmdbuf_t *buf);

/**
 * Drops every recorded command, keeping the memory. Pending handles the
 * buffer issued since its last apply become invalid. Recording thread.
 */
void weft_cmdbuf_clear(weft_cmdbuf_t *buf);

/** Commands recorded since the last apply or clear. Recording thread. */
uint32_t weft_cmdbuf_count(const weft_cmdbuf_t *buf);

/**
 * Sets the ordering key of the commands recorded next (see the file
 * comment). Recording thread: the one thread using this buffer.
 */
void weft_cmd_key(weft_cmdbuf_t *buf, uint64_t key);

/**
 * Records a spawn with the zero-terminated component list @p comps (NULL:
 * none) and optional initial values (values[i] for comps[i], NULL entries
 * or a NULL array zero-fill). Values are copied now. *out receives a
 * pending handle. Recording thread. WEFT_ENOCOMP, WEFT_EINVAL (a component
 * listed twice), WEFT_ETOOMANY, WEFT_ELIMIT, WEFT_ENOMEM.
 */
int weft_cmd_spawn(weft_cmdbuf_t *buf, const weft_component_t *comps,
                   const void *const *values, weft_entity_t *out);

/** Records a despawn of @p e (live or pending). Recording thread. */
int weft_cmd_despawn(weft_cmdbuf_t *buf, weft_entity_t e);

/**
 * Records adding @p c to @p e with @p value (copied now; NULL zero-fills).
 * Adding a component the entity has by then does nothing, as weft_add().
 * Recording thread.
 */
int weft_cmd_add(weft_cmdbuf_t *buf, weft_entity_t e, weft_component_t c,
                 const void *value);

/** Records writing @p value (copied now) to @p c, adding it if missing.
 * Recording thread. */
int weft_cmd_set(weft_cmdbuf_t *buf, weft_entity_t e, weft_component_t c,
                 const void *value);

/** Records removing @p c from @p e. Recording thread. */
int weft_cmd_remove(weft_cmdbuf_t *buf, weft_entity_t e, weft_component_t c);

/** Records enabling @p c on @p e (a no-op if absent by then). Recording
 * thread. */
int weft_cmd_enable(weft_cmdbuf_t *buf, weft_entity_t e, weft_component_t c);

/** Records disabling @p c on @p e (a no-op if absent by then). Recording
 * thread. */
int weft_cmd_disable(weft_cmdbuf_t *buf, weft_entity_t e, weft_component_t c);

/**
 * Records a set of @p c to @p value on every entity @p query matches now
 * (the members are captured at record time). Applied after the
 * transaction's per-entity changes, in call order, to the members still
 * alive. Recording thread; the world must not change structurally while
 * the call runs.
 */
int weft_cmd_set_query(weft_cmdbuf_t *buf, const weft_query_t *query,
                       weft_component_t c, const void *value);

/**
 * Records a query-wide set with a writer: at the sync point, every entity
 * @p query matches now (captured at the call, as weft_cmd_set_query(); a
 * temporary query works too) that is still alive gets @p c if it lacks it
 * (zero-filled, through the same add as weft_cmd_set_query(), so an add's
 * other effects apply), then @p fn is called once per contiguous range of
 * those rows: fn(user, view, first) where view->count rows of one chunk,
 * view->entities their handles and weft_iter_column(view, 0) the array of
 * @p c (weft_iter_field() for an SoA component), and @p first the index of
 * the range's first entity among the members captured. Ranges come in the
 * order the members were captured (the query's order: group by group,
 * archetype by archetype, chunk by chunk), each member once; the order,
 * and so the result, is the same on any number of workers.
 *
 * Order in the transaction: like weft_cmd_set_query(), it applies after
 * the transaction's per-entity changes, in call order with the other
 * query-wide commands. The writer sees every write staged before it (an
 * earlier set of @p c, an earlier query-wide set) and none staged after
 * it: a weft_cmd_set() of @p c that merge order puts after this call acts
 * as an add until the writer ran (a missing @p c is added zero-filled, a
 * present one keeps its value) and its value is written after the writer,
 * so it wins. Other per-entity commands (add, remove, despawn) apply
 * before the batch whatever their place, as for weft_cmd_set_query().
 * ADD and ENTER observers see the zero-filled value, before the writer
 * runs.
 *
 * @p fn runs on the thread that applies (the owner, in the drain), inside
 * the drain's scope: it may write through the view and weft_get_mut();
 * its structural calls are staged for the next wave. The view lives for
 * the call. @p user is the caller's and must outlive the apply.
 *
 * Recording thread; the world must not change structurally while the call
 * runs. Returns WEFT_EINVAL (NULL buffer, query or fn; a destroyed buffer;
 * another world's query), WEFT_ENOCOMP, WEFT_ETAG (@p c is a tag: there is
 * nothing to write) or WEFT_ENOMEM.
 */
int weft_cmd_set_query_fn(weft_cmdbuf_t *buf, const weft_query_t *query,
                          weft_component_t c, weft_fill_fn fn, void *user);

/** As weft_cmd_set_query(), removing @p c; same threads. */
int weft_cmd_remove_query(weft_cmdbuf_t *buf, const weft_query_t *query,
                          weft_component_t c);

/** Records a despawn of every entity @p query matches now. Same threads as
 * weft_cmd_set_query(). */
int weft_cmd_despawn_query(weft_cmdbuf_t *buf, const weft_query_t *query);

/**
 * Applies @p n buffers as one transaction in the deterministic merge order,
 * then empties them (their memory is kept). Owner thread, with no other
 * thread recording into these buffers or reading the world. Returns 0,
 * WEFT_EBUSY inside a deferred scope, WEFT_ECASCADE (see the file
 * comment), WEFT_EFULL/WEFT_ERETIRED when spawns exceed the capacity (the
 * spawns that do not fit are dropped and counted), or WEFT_ENOMEM.
 */
int weft_world_apply(weft_world_t *world, weft_cmdbuf_t *const *bufs,
                     uint32_t n);

/**
 * The entity a pending handle became when its buffer was last applied.
 * Owner thread. WEFT_ESTALE when the handle belongs to an older or not yet
 * applied transaction, its spawn was cancelled or dropped, or the entity
 * has died since; a non-pending handle is returned as it is.
 */
int weft_cmd_resolve(const weft_world_t *world, weft_entity_t pending,
                     weft_entity_t *out);

/**
 * Opens a deferred scope. Scopes nest. Owner thread. Returns the new depth.
 */
int weft_world_defer_begin(weft_world_t *world);

/**
 * Closes a scope; closing the outermost one drains everything staged.
 * Extra calls clamp at depth 0. Owner thread. Returns 0 or the drain's
 * error (WEFT_ECASCADE, WEFT_ENOMEM, WEFT_EFULL).
 */
int weft_world_defer_end(weft_world_t *world);

/**
 * Closes every scope, including iteration scopes left open by loops that
 * stopped early, and drains. Use after an error. The iterations it closes
 * are over: their iterators answer nothing more (weft_iter_next() returns
 * false, in every build) and no longer keep their queries from being
 * destroyed. Owner thread.
 */
int weft_world_unwind(weft_world_t *world);

/** Depth of deferred plus iteration scopes. Any thread. */
uint32_t weft_world_defer_depth(const weft_world_t *world);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_COMMAND_H */
