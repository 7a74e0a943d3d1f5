/* SPDX-License-Identifier: MIT */
/**
 * @file weft/dirty.h
 * @brief Dirty tracking: which rows of which components were written.
 *
 * A component registered with WEFT_COMPONENT_TRACK_DIRTY keeps one dirty
 * byte per row in every chunk that holds it (nonzero: written since the
 * last clear) and, per chunk, the world tick of its last write. Every
 * write path marks the rows it writes: weft_set(), weft_get_mut(),
 * weft_get_field(), weft_get_many_ex() for its `write` mask, commands and
 * staged sets applied at a sync point, spawns (every tracked component of
 * a new entity is dirty), adds (the added component is dirty), and
 * systems that declare write access to the component (an include term
 * with write or default access, or the `write` list unless the system
 * declares WEFT_SYSTEM_TRACKED_WRITES): the scheduler marks every row of
 * every chunk such a system visits, with one all-rows-dirty flag per chunk
 * that the first weft_iter_dirty() of the chunk (or a row copy out of or
 * into it) writes into the bytes. Bits move with their rows (archetype
 * moves and swap-removes). Components without the flag cost nothing.
 *
 * Writes through pointers these paths do not hand out (weft_get() cast to
 * non-const, a query iterated by hand, a system's writes outside the
 * chunks it visits) are not marked.
 *
 * The bits and the transition log (transition.h) are cleared together by
 * weft_world_clear_dirty(), which the pipeline calls at the end of every
 * fixed step (after PostFixedUpdate, before the step's events are
 * cleared) unless weft_pipeline_config_t.manual_clear is set.
 *
 * The tick is the pipeline's fixed-step count (weft_pipeline_state_t.tick)
 * when the write happened: replication can ask "changed since tick T" per
 * chunk with weft_iter_dirty_tick() and keep row precision from the bytes.
 */
#ifndef WEFT_DIRTY_H
#define WEFT_DIRTY_H

#include <stdbool.h>
#include <stdint.h>

#include "weft/component.h"
#include "weft/entity.h"
#include "weft/query.h"
#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Whether component @p c of entity @p e was written since the last clear.
 * False for a stale handle, an unknown, absent or untracked component.
 * Owner thread, or any thread while no write to the entity runs.
 */
bool weft_is_dirty(const weft_world_t *world, weft_entity_t e,
                   weft_component_t c);

/**
 * The dirty bytes of include term @p term for the rows of the iterator's
 * current chunk: it->count bytes, byte i for row i (nonzero: dirty), or
 * NULL when the term's component is not tracked (or a tag), the iterator
 * is on no chunk or was invalidated. A chunk a system marked whole gets
 * its bytes written here, once (concurrent callers wait for the first).
 * The pointer is into the chunk and
 * lives as long as the iterator's chunk does (until the next structural
 * change); the caller must not write through it. Any thread that may read
 * the chunk (a system's callback, the iterating thread).
 */
const uint8_t *weft_iter_dirty(const weft_iter_t *it, uint32_t term);

/**
 * The tick (weft_pipeline_state_t.tick at the time) of the last write to
 * term @p term's component in the iterator's current chunk, rows arriving
 * included; 0 when never written or untracked. A chunk with a tick below
 * T holds no row written at tick T or later. For a run of chunks
 * (WEFT_QUERY_CHUNK_RUNS) it is the first chunk's: use the bytes there.
 * Same threads as weft_iter_dirty().
 */
uint64_t weft_iter_dirty_tick(const weft_iter_t *it, uint32_t term);

/**
 * Clears every dirty byte of every tracked component and empties the
 * transition log (transition.h); the per-chunk ticks stay. The pipeline
 * calls it at the end of each fixed step unless
 * weft_pipeline_config_t.manual_clear is set. Owner thread, while no
 * system runs and outside a drain: WEFT_EINVAL (NULL world), WEFT_EBUSY
 * (inside a drain, an observer callback).
 */
int weft_world_clear_dirty(weft_world_t *world);

/**
 * Sets the tick stamped by writes from now on (the pipeline sets it before
 * each phase to weft_pipeline_state_t.tick; call it when driving a world
 * without the pipeline). Owner thread, while no system runs.
 */
void weft_world_set_tick(weft_world_t *world, uint64_t tick);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_DIRTY_H */
