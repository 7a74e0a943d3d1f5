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

/*
 * Moves resolved entity e's row along @p edge, found by the caller: a row
 * in the edge's archetype, the copies of its plan and its default writes;
 * at is updated to the new row. Observers are not told. Every row move of
 * the world goes through here, so that each settles its chunk's
 * all-rows-dirty flags before the plan copies the dirty bytes.
 */
static inline __attribute__((always_inline)) int
weft__move_row(weft_world_t *w, weft_entity_t e, weft__where_t *at,
               const weft__edge_t *edge) {
  weft__archetype_t *b = edge->to;
  weft__chunk_t *dc;
  uint32_t dr;
  int rc = weft__archetype_push(w, b, e, &dc, &dr);
  if (rc)
    return rc;
  if (WEFT__UNLIKELY(at->arch->ndirty)) /* the plan copies its dirty bytes */
    weft__dirty_settle(at->chunk);
  for (uint32_t i = 0; i < edge->plan_len; i++) {
    const weft__copy_t *p = &edge->plan[i];
    weft__copy_elem(weft__chunk_at(dc, p->dst, p->elem, dr),
                    weft__chunk_at(at->chunk, p->src, p->elem, at->row),
                    p->elem);
  }
  /* An add that brings requirements along writes their defaults. */
  if (WEFT__UNLIKELY(edge->ndefaults))
    weft__req_write_defaults(b, weft__edge_defaults(edge), edge->ndefaults, dc,
                             dr);
  weft__rec_set_loc(&w->index, at->rec, dc->id, dr);
  weft__row_remove(w, at->arch, at->chunk, at->row);
  at->chunk = dc;
  at->row = dr;
  at->arch = b;
  w->moves++;
  w->version++;
  return 0;
}

/*
 * Moves resolved entity e along the edge op/c; at is updated to the new row
 * and *taken to the edge followed. Observers are not told (callers that
 * have them do that around it). Inline: structural.c's calls and the
 * relation fast paths (relation.c) sit on per-entity hot paths.
 */
static inline __attribute__((always_inline)) int
weft__move_along(weft_world_t *w, weft_entity_t e, weft__where_t *at,
                 uint32_t op, weft_component_t c, const weft__edge_t **taken) {
  const weft__edge_t *edge;
  const uint32_t mark = weft__archetypes_mark(w);
  int rc = weft__archetype_edge(w, at->arch, op, c, &edge);
  if (!rc)
    rc = weft__move_row(w, e, at, edge);
  if (rc)
    return weft__rolled_back(w, mark, rc);
  *taken = edge;
  return 0;
}

#endif /* WEFT_CORE_ENTITY_OPS_H */
