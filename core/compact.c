/* SPDX-License-Identifier: MIT */
/*
 * weft_world_compact(): pruning archetypes no row can reach any more and
 * rebuilding chunk lists whose rows are mostly gone (weft/compact.h).
 *
 * The work itself belongs to archetype.c, which owns the tables it edits:
 * weft__archetypes_remove() (the rollback's removal, generalised to any
 * set of archetypes) and weft__archetype_rebuild(). This file decides what
 * goes, keeps the call's contract (owner thread, nothing open), counts,
 * and tells observers once the world is whole again.
 */
#include <string.h>

#include "core/archetype.h"
#include "core/check.h"
#include "core/observer.h"
#include "core/world.h"
#include "weft/compact.h"

#define WEFT__COMPACT_FLAGS                                                    \
  (WEFT_COMPACT_EMPTY_ARCHETYPES | WEFT_COMPACT_NO_SHRINK |                    \
   WEFT_COMPACT_KEEP_PAGES)
#define WEFT__SHRINK_DEFAULT 50u

/* The dense relationship criterion: a per-(relation, target) archetype
 * whose target is dead can never receive a row again (handles are never
 * reissued), so it goes even without WEFT_COMPACT_EMPTY_ARCHETYPES. */
static bool dense_target_dead(const weft_world_t *w,
                              const weft__archetype_t *a) {
  return a->npairs && weft__archetype_pair_target_dead(w, a);
}

/* Whether archetype a goes: it holds no row, it is not the empty
 * signature's, and no row can reach it again (or the caller asked for
 * every empty archetype). */
static bool prunable(const weft_world_t *w, const weft__archetype_t *a,
                     uint32_t flags) {
  if (a->count != 0 || a == w->root || a == &w->arch_vacant)
    return false;
  if (dense_target_dead(w, a))
    return true;
  return (flags & WEFT_COMPACT_EMPTY_ARCHETYPES) != 0;
}

/* Chunks the world holds, live and spare. */
static uint64_t chunks_held(const weft_world_t *w) {
  return (uint64_t)w->chunks_live + w->chunks_spare;
}

/*
 * Marks the prunable archetypes gone and removes them, keeping them (in
 * id order) in *out, an allocation of the world's, for their events. No
 * allocation, no change: WEFT_ENOMEM.
 */
static int prune(weft_world_t *w, uint32_t flags, weft__archetype_t ***out,
                 uint32_t *n) {
  uint32_t k = 0;
  for (uint32_t id = 1; id < w->arch_count; id++)
    k += prunable(w, w->archs[id], flags);
  *out = NULL;
  *n = 0;
  if (k == 0)
    return 0;
  weft__archetype_t **list = weft__alloc(&w->alloc, k * sizeof(*list), 16);
  WEFT_CHECK(w, list, WEFT_ENOMEM, "out of memory listing %u archetypes", k);
  k = 0;
  for (uint32_t id = 1; id < w->arch_count; id++) {
    weft__archetype_t *a = w->archs[id];
    if (prunable(w, a, flags)) {
      a->gone = true;
      list[k++] = a;
      weft__obs_retire_archetype(w, id);
    }
  }
  weft__archetypes_remove(w, false);
  *out = list;
  *n = k;
  return 0;
}

/* Whether archetype a's rows use at most pct percent of its chunks. */
static bool shrinkable(const weft__archetype_t *a, uint32_t pct) {
  return a->chunk_total > a->nchunks &&
         (uint64_t)a->nchunks * 100u <= (uint64_t)a->chunk_total * pct;
}

/* Shrinks every shrinkable chunk list: trailing spare segments are freed
 * first, and rows move only when the list still holds too many spares
 * (they sit in a segment that also holds rows). Stops at the first
 * failure. */
static int shrink(weft_world_t *w, uint32_t pct, uint32_t *rebuilt) {
  for (uint32_t id = 0; id < w->arch_count; id++) {
    weft__archetype_t *a = w->archs[id];
    if (!shrinkable(a, pct))
      continue;
    uint64_t freed = weft__archetype_trim(w, a);
    if (shrinkable(a, pct)) {
      int rc = weft__archetype_rebuild(w, a, &freed);
      if (rc)
        return rc;
    }
    (*rebuilt)++;
  }
  return 0;
}

int weft_world_compact(weft_world_t *w, const weft_compact_config_t *cfg,
                       weft_compact_stats_t *out) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  weft_compact_config_t c = cfg ? *cfg : (weft_compact_config_t){0};
  WEFT_CHECK(w, (c.flags & ~WEFT__COMPACT_FLAGS) == 0, WEFT_EINVAL,
             "unknown compaction flags 0x%x", c.flags);
  WEFT_CHECK(w, c.shrink_percent <= 100, WEFT_EINVAL,
             "shrink_percent is %u, at most 100", c.shrink_percent);
  WEFT_CHECK(w, !w->dispatching && !w->compacting, WEFT_EBUSY,
             "cannot compact inside a frame, a phase or a compaction");
  WEFT_CHECK(w, !weft__txn_in_scope(&w->txn) && !w->txn.draining, WEFT_EBUSY,
             "cannot compact while a scope, an iteration or a drain is open");
  if (out)
    memset(out, 0, sizeof(*out));
  const uint32_t pct =
      c.shrink_percent ? c.shrink_percent : WEFT__SHRINK_DEFAULT;
  const uint64_t chunks0 = chunks_held(w), bytes0 = w->chunk_bytes;
  w->compacting = true;
  weft__archetype_t **pruned;
  uint32_t npruned, rebuilt = 0;
  int rc = prune(w, c.flags, &pruned, &npruned);
  if (rc == 0 && !(c.flags & WEFT_COMPACT_NO_SHRINK))
    rc = shrink(w, pct, &rebuilt);
  if (npruned || rebuilt)
    w->version++; /* chunks and match lists moved: caches rebuild */
  if (w->chunk_bytes < bytes0 && !(c.flags & WEFT_COMPACT_KEEP_PAGES))
    weft__alloc_heap_purge(&w->alloc); /* the pages go back too */
  if (out) {
    out->pruned = npruned;
    out->rebuilt = rebuilt;
    out->chunks_released = chunks0 - chunks_held(w);
    out->bytes_released = bytes0 > w->chunk_bytes ? bytes0 - w->chunk_bytes : 0;
  }
  /* The world is whole again: observers may look at it, and at the pruned
   * archetypes' components, which live until the last event. */
  for (uint32_t i = 0; i < npruned; i++)
    weft__obs_archetype_deleted(w, pruned[i], pruned[i]->id);
  for (uint32_t i = 0; i < npruned; i++)
    weft__archetype_free(pruned[i]);
  weft__free(pruned, npruned * sizeof(*pruned), 16);
  w->compacting = false;
  return rc;
}
