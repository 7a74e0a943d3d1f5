/*
 * The world's private layout, shared by the core translation units.
 */
#ifndef WEFT_CORE_WORLD_H
#define WEFT_CORE_WORLD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/alloc.h"
#include "core/archetype.h"
#include "core/chunk.h"
#include "core/component.h"
#include "core/entity_index.h"
#include "weft/query.h"
#include "weft/world.h"

struct weft_world_t {
  weft__alloc_stats_t alloc;
  weft__index_t index;
  weft__registry_t registry;
  weft__chunk_store_t chunks;

  weft__archetype_t **archs; /* by id, creation order */
  uint32_t arch_count;
  uint32_t arch_cap;
  uint32_t *arch_table; /* open addressing: archetype id + 1, 0 empty */
  uint32_t arch_table_cap;
  weft__archetype_t *root; /* the empty signature */

  weft_query_t **queries;
  uint32_t query_count;
  uint32_t query_cap;

  uint32_t chunk_size;
  uint64_t version; /* bumped by every structural change */
  uint64_t spawns;
  uint64_t despawns;
  uint64_t moves;
  _Atomic uint64_t stale;

  bool checked;
  uint8_t tag;
  weft_panic_fn panic;
  void *panic_user;
  char errbuf[320];
};

/* Counts a rejected handle; safe from concurrent readers. */
static inline void weft__count_stale(const weft_world_t *w) {
  atomic_fetch_add_explicit(&((weft_world_t *)w)->stale, 1,
                            memory_order_relaxed);
}

/* Where a live entity's row is. */
static inline weft__chunk_t *weft__loc_chunk(const weft_world_t *w,
                                             uint32_t loc) {
  return w->chunks.table[loc >> WEFT__ROW_BITS];
}
static inline uint32_t weft__loc_row(uint32_t loc) {
  return loc & WEFT__ROW_MASK;
}
static inline uint32_t weft__loc_make(const weft__chunk_t *c, uint32_t row) {
  return (c->id << WEFT__ROW_BITS) | row;
}

/* Tells every query about a new archetype (query.c). */
int weft__queries_on_archetype(weft_world_t *w, weft__archetype_t *a);

#endif /* WEFT_CORE_WORLD_H */
