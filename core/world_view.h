/* SPDX-License-Identifier: MIT */
/*
 * The world's layout: what the layers above core (the scheduler) may use of
 * the world. They include this header, not core/world.h, so that core's
 * own internal functions (structural changes, queries, the spawn cache...)
 * are not declared for them. The struct itself is complete here: the
 * scheduler reads a few fields directly (the allocator stats, the
 * structural and change versions, the registry, the live buffer count, the
 * state, the archetype list, the pool and the extension slots), some of
 * them on per-job paths where an accessor call would cost.
 */
#ifndef WEFT_CORE_WORLD_VIEW_H
#define WEFT_CORE_WORLD_VIEW_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/alloc.h"
#include "core/archetype.h"
#include "core/chunk.h"
#include "core/component.h"
#include "core/entity_index.h"
#include "core/hooks.h"
#include "core/txn.h"
#include "weft/query.h"
#include "weft/world.h"

#define WEFT__SPAWN_CACHE 64u
#define WEFT__SPAWN_FAST 8u
/* The largest element the one-by-one spawn copies inline. */
#define WEFT__SPAWN_SMALL 16u

/* A validated spawn list (ids in the caller's order) and its archetype. */
typedef struct weft__spawn_memo_t {
  weft__archetype_t *arch;
  uint32_t n;
  weft_component_t ids[WEFT__SPAWN_FAST + 1]; /* and a 0 after the n ids */
  /* The column of ids[i] in arch (NULL for tags), in list order. */
  const weft__column_t *cols[WEFT__SPAWN_FAST];
  /* For plain lists, the array and element size of ids[i]: the one-by-one
   * spawn fast path writes values through them without the column. */
  uint32_t arr[WEFT__SPAWN_FAST];
  uint32_t size[WEFT__SPAWN_FAST];
  bool plain; /* every id is a data component stored array-of-structs */
  bool small; /* plain, and every element 4, 8, 12 or 16 bytes */
} weft__spawn_memo_t;

struct weft_world_t {
  /* What every spawn, despawn and handle lookup reads fills the first two
   * cache lines (see the assertions in world.c): the index's hot fields
   * (the chunk table's address among them), then its cold ones and the
   * transaction's routing word. The index comes first: the public
   * header's inline weft_get() reads the world's first bytes. */
  weft__index_t index;
  weft__txn_t txn; /* staged changes, scopes, buffers; routing word first */
  weft__chunk_store_t chunks;
  weft__alloc_stats_t alloc;
  weft__registry_t registry;

  weft__archetype_t **archs; /* by id (creation order until ids are reused) */
  uint32_t arch_count;
  uint32_t arch_cap;
  uint32_t *arch_table; /* open addressing: archetype id + 1, 0 empty */
  uint32_t arch_table_cap;
  weft__archetype_t *root; /* the empty signature */
  /* Ids of removed archetypes (core/compact.c, rollbacks), descending, so
   * that the lowest is taken first from the end; their archs slots hold
   * &arch_vacant. */
  uint32_t *arch_free;
  uint32_t arch_free_n;
  uint32_t arch_free_cap;
  /* Archetypes ever created: the next one's creation stamp (born). Names
   * the archetype set for plans and rollbacks, as ids no longer do. */
  uint32_t arch_born;

  /* Spawn lists seen recently -> their archetype; see spawn_cache_find. */
  weft__spawn_memo_t spawn_cache[WEFT__SPAWN_CACHE];
  const weft__spawn_memo_t *spawn_last; /* the entry that hit last */

  weft_query_t **queries;
  uint32_t query_count;
  uint32_t query_cap;
  /* Temporary queries (weft_query_create_temp), linked through the
   * queries: told only when archetypes are rolled back (query.c). */
  weft_query_t *temps;

  uint32_t chunk_size;
  uint32_t chunks_live;  /* chunks holding rows, all archetypes */
  uint32_t chunks_spare; /* empty chunks kept by their archetypes */
  uint64_t chunk_bytes;  /* memory of all segments, headers included */
  uint64_t version;      /* bumped by every structural change */
  uint64_t spawns;
  uint64_t despawns;
  uint64_t moves;
  _Atomic uint64_t stale;

  struct weft_observer_t **obs; /* registration order */
  uint32_t nobs;
  uint32_t obs_cap;
  uint32_t obs_events; /* union of the observers' event masks */

  /* NUMA homes for chunk memory, or NULL; opaque to core, which uses it
   * through its hook table (core/hooks.h). */
  struct weft_pool_t *pool;

  /* Parts created on first use; each module frees its own in
   * weft_world_destroy() through the hooks below. */
  struct weft__random_t *random;       /* named streams (core/random.c) */
  struct weft__resources_t *resources; /* resources, channels (resource.c) */
  struct weft__relations_t *rel;       /* the edge store (relation.c) */
  struct weft__snap_reg_t *snap;       /* snapshot sections (snapshot.c) */
  /* Parts of the layers above (the scheduler's systems and phases, its
   * run conditions), numbered by them; each freed by its own fini. */
  weft__world_ext_t ext[WEFT__WORLD_EXTS];
  _Atomic uint32_t state; /* weft_world_state() */
  /* Change versions (system.h): stamped on chunks by writes and
   * structural changes; bumped by the scheduler around each system. */
  uint32_t change_version;
  /* The pipeline's fixed tick, stamped on tracked columns by their writes
   * (core/dirty.c); set by the scheduler before each phase it runs. */
  uint64_t tick;
  /* Tracked components registered: nonzero makes the clear walk them. */
  uint32_t dirty_comps;
  /* Internal observer-event bits (core/observer.h) kept in obs_events
   * whatever the user's observers are: the transition log's. */
  uint32_t obs_internal;
  /* The transition log (core/transition.c): records of this tick. */
  struct weft_transition_t *tlog;
  uint32_t tlog_dropped;
  uint32_t tlog_n;
  uint32_t tlog_cap;

  bool checked;
  /* A frame or phase runs (set by the scheduler), weft_world_compact()
   * runs: compaction refuses inside either. */
  bool dispatching;
  bool compacting;
  uint8_t tag;
  weft_panic_fn panic;
  void *panic_user;
  char errbuf[320];
  /* What an archs slot of a free id points at: an archetype with no
   * component, no row and no chunk, which every walk over the archetypes
   * passes over without a test and no query matches. Last: it is large. */
  weft__archetype_t arch_vacant;
};

/* Sets extension slot @p slot (below WEFT__WORLD_EXTS) to @p state, freed
 * by @p fini when the world is destroyed. Owner thread. */
static inline void weft__world_ext_set(weft_world_t *w, uint32_t slot,
                                       void *state, weft__ext_fini_fn fini) {
  w->ext[slot].state = state;
  w->ext[slot].fini = fini;
}

/* Sorts the reverse edge indices that direct edge changes left unsorted
 * (relation.c), when there are any. The scheduler calls it before a
 * segment's systems run and after a mid-segment sync point, so that
 * systems on workers read sorted indices and write nothing. Owner thread. */
void weft__rel_settle_order(weft_world_t *w);

#endif /* WEFT_CORE_WORLD_VIEW_H */
