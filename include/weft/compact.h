/* SPDX-License-Identifier: MIT */
/**
 * @file weft/compact.h
 * @brief Compaction: pruning archetypes that can hold no more rows and
 * giving back chunk memory whose rows are gone.
 *
 * A world that churns through many signatures, or that despawned most of
 * its entities, keeps every archetype it ever made and every chunk its
 * archetypes ever held. weft_world_compact() hands back what a committed
 * world no longer needs, between frames, without changing its state: the
 * digest (weft_world_digest()) is the same before and after, and a program
 * that compacts ends with the digest of one that does not.
 *
 * - Pruning. An empty archetype (no row) goes when it is a dense
 *   relationship archetype whose target is dead (no row can ever land
 *   there again), or, with WEFT_COMPACT_EMPTY_ARCHETYPES, when it is any
 *   empty archetype but the empty signature's. It leaves the signature
 *   table, every query's match list and group table, the other
 *   archetypes' transition edges and the spawn memos; its chunks are
 *   freed and its id goes on a free list: the next new archetype takes the
 *   lowest free id. The other archetypes keep their ids. Observers of
 *   WEFT_EVENT_ARCHETYPE_DELETED hear of each pruned archetype, and an
 *   observer whose archetype filter named it never fires for an archetype
 *   that later reuses the id.
 * - Shrinking. An archetype whose rows use at most shrink_percent of the
 *   chunks it holds (its high-water mark) is rebuilt: its rows move, in
 *   order, into one segment of just the chunks they need, and the old
 *   segments are freed. Rows keep their chunk and row numbers, so handles
 *   and values are untouched, but column pointers and iterator views taken
 *   before are not valid after (reacquire them).
 * - Pages. With weft's jemalloc a world keeps the pages it frees; when the
 *   compaction freed chunk memory it hands them back to the kernel as
 *   weft_world_trim() does, unless WEFT_COMPACT_KEEP_PAGES.
 *
 * Values, dirty bits, change versions, systems and queries survive; a
 * query's matches keep their order, and one created later walks the
 * archetypes in creation order as it would have without compaction. A
 * temporary query (weft_query_create_temp()) drops the pruned archetypes
 * from its frozen list (they were empty: it reads the same rows) and never
 * adopts an archetype that reuses their ids. A pruned archetype that is
 * needed again (only possible with WEFT_COMPACT_EMPTY_ARCHETYPES: a dense
 * archetype whose target died is never needed again) is created anew,
 * after the others in query order. Its rows then come later in
 * iterations than they would have without the compaction: the digest
 * does not see it, but a program whose results follow iteration order
 * (commands keyed by chunk, sums of floats) may then differ from one
 * that did not compact.
 */
#ifndef WEFT_COMPACT_H
#define WEFT_COMPACT_H

#include <stdint.h>

#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Flags of weft_compact_config_t. */
enum {
  /** Also prune every ordinary empty archetype except the empty
   * signature's: for worlds that pass through many signatures once. */
  WEFT_COMPACT_EMPTY_ARCHETYPES = 1u << 0,
  /** Prune only: leave every chunk list as it is. */
  WEFT_COMPACT_NO_SHRINK = 1u << 1,
  /** Keep the freed pages resident with the world, for its next growth,
   * instead of handing them back to the kernel (weft_world_trim()). */
  WEFT_COMPACT_KEEP_PAGES = 1u << 2
};

/** What weft_world_compact() does. Zero-initialise: zero means default. */
typedef struct weft_compact_config_t {
  /** WEFT_COMPACT_* flags; 0: prune dead relationship archetypes and
   * shrink. */
  uint32_t flags;
  /** Rebuild an archetype's chunk list when the chunks its rows use are at
   * most this percent of the chunks it holds; 0 means 50, 100 rebuilds
   * every list with a spare chunk. At most 100. */
  uint32_t shrink_percent;
} weft_compact_config_t;

/** What one weft_world_compact() call did. */
typedef struct weft_compact_stats_t {
  uint32_t pruned;          /**< archetypes pruned */
  uint32_t rebuilt;         /**< chunk lists rebuilt into fewer chunks */
  uint64_t chunks_released; /**< chunks freed (pruned and spare ones) */
  uint64_t bytes_released;  /**< chunk memory freed, net of what rebuilding
                                 allocated, headers included */
} weft_compact_stats_t;

/**
 * Prunes and shrinks as described above (@p config NULL: all defaults)
 * and fills @p out (may be NULL). Owner thread, on a committed world:
 * WEFT_EBUSY, changing nothing, inside a frame or phase (from a system),
 * a deferred or iteration scope (an open iterator), a drain (from an
 * observer), or another compaction. WEFT_EINVAL for unknown flags or a
 * shrink_percent above 100. WEFT_ENOMEM when the list of pruned
 * archetypes or a rebuilt segment cannot be allocated: what was done
 * before stays done, *out counts it, and the world is consistent.
 * Counts as a structural change (weft_world_structure_version()) when it
 * did anything.
 */
int weft_world_compact(weft_world_t *world, const weft_compact_config_t *config,
                       weft_compact_stats_t *out);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_COMPACT_H */
