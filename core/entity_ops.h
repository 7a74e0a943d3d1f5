/* SPDX-License-Identifier: MIT */
/*
 * What the per-entity entry points share: spawn.c (creating entities),
 * structural.c (despawn, add, remove, set, enable, disable) and lookup.c
 * (reads by handle, get_many / has_many). Every entry point resolves its
 * handle through the index first, so a stale, forged or foreign handle is
 * a counted miss that reads nothing of the slot's current occupant. The
 * helpers are static inline because they sit on every per-entity call.
 * Private to core/.
 */
#ifndef WEFT_CORE_ENTITY_OPS_H
#define WEFT_CORE_ENTITY_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/world.h"

/* weft__locate(), counting a miss as a stale handle. */
static inline bool weft__resolve(const weft_world_t *w, weft_entity_t e,
                                 weft__where_t *at) {
  if (WEFT__LIKELY(weft__locate(w, e, at)))
    return true;
  weft__count_stale(w);
  return false;
}

/* Whether c names a component registered in w. */
static inline bool weft__comp_known(const weft_world_t *w, weft_component_t c) {
  return c >= 1 && c <= w->registry.count;
}

/* Stores value (or zeros) in a row's column; AoS copies stay inline. */
static inline void weft__write_or_zero(const weft__archetype_t *a,
                                       const weft__column_t *col,
                                       weft__chunk_t *chunk, uint32_t row,
                                       const void *value) {
  if (value && !col->soa)
    weft__copy_elem(weft__chunk_at(chunk, col->first_array, col->size, row),
                    value, col->size);
  else if (value)
    weft__column_write(a, col, chunk, row, value);
  else
    weft__column_zero(a, col, chunk, row);
}

/* A call that failed after creating archetypes (the world had mark of them
 * before it) drops them again, so that it leaves nothing behind. Inline,
 * so that callers see it return their nonzero rc. */
static inline int weft__rolled_back(weft_world_t *w, uint32_t mark, int rc) {
  weft__archetypes_rollback(w, mark);
  return rc;
}

#endif /* WEFT_CORE_ENTITY_OPS_H */
