/* SPDX-License-Identifier: MIT */
/*
 * Dirty tracking (weft/dirty.h). A tracked column's dirty bytes are one
 * more array of its archetype (weft__dirty_array()), one byte per row, so
 * that everything that moves rows moves them too: the swap-remove's copy
 * loop and the bulk hole filler copy every array, and a move's copy plan
 * names the dirty arrays of the columns both archetypes share. A byte, not
 * a bit, because a byte store needs no read-modify-write: workers that mark
 * different rows of one chunk (weft_get_mut() from callbacks) do not race,
 * and a system's declared write marks a chunk with one memset.
 *
 * A row that arrives in a chunk (a spawn, a move) has all its tracked
 * columns dirty; a move's copies then carry the bits of the columns the row
 * had, so that only a column it gained stays marked.
 */
#include "weft/dirty.h"

#include <string.h>

#include "core/check.h"
#include "core/query_internal.h"
#include "core/world.h"

void weft__dirty_arrive(weft_world_t *w, weft__archetype_t *a, weft__chunk_t *c,
                        uint32_t row0, uint32_t n) {
  const uint32_t first = a->narrays - a->ndirty;
  for (uint32_t d = 0; d < a->ndirty; d++) {
    memset(c->bases[first + d] + row0, 1, n);
    c->ticks[d] = w->tick;
  }
}

bool weft_is_dirty(const weft_world_t *w, weft_entity_t e, weft_component_t c) {
  weft__where_t at;
  if (!w || !weft__locate(w, e, &at))
    return false;
  const weft__column_t *col = weft__archetype_col(at.arch, c);
  if (!col || !col->dirty)
    return false;
  return __atomic_load_n(at.chunk->bases[weft__dirty_array(at.arch, col)] +
                             at.row,
                         __ATOMIC_RELAXED) != 0;
}

/* The tracked column of include term `term` in the iterator's chunk, or
 * NULL; *chunk set when found. */
static const weft__column_t *iter_tracked(const weft_iter_t *it, uint32_t term,
                                          const weft__chunk_t **chunk) {
  if (!it || !it->world_)
    return NULL;
  const weft__chunk_t *c = weft__iter_chunk(it);
  if (!c || term >= it->term_count_ || !it->terms_)
    return NULL;
  const weft__column_t *col = weft__archetype_col(c->arch, it->terms_[term]);
  if (!col || !col->dirty)
    return NULL;
  *chunk = c;
  return col;
}

const uint8_t *weft_iter_dirty(const weft_iter_t *it, uint32_t term) {
  const weft__chunk_t *c;
  const weft__column_t *col = iter_tracked(it, term, &c);
  if (!col)
    return NULL;
  return c->bases[weft__dirty_array(c->arch, col)] + it->row0_;
}

uint64_t weft_iter_dirty_tick(const weft_iter_t *it, uint32_t term) {
  const weft__chunk_t *c;
  const weft__column_t *col = iter_tracked(it, term, &c);
  if (!col)
    return 0;
  return __atomic_load_n(&c->ticks[col->dirty - 1u], __ATOMIC_RELAXED);
}

/* Clears the dirty bytes of every row of every tracked column. */
static void clear_bits(weft_world_t *w) {
  for (uint32_t i = 0; i < w->arch_count; i++) {
    const weft__archetype_t *a = w->archs[i];
    if (!a->ndirty)
      continue;
    const uint32_t first = a->narrays - a->ndirty;
    for (uint32_t k = 0; k < a->nchunks; k++) {
      weft__chunk_t *c = a->chunks[k];
      for (uint32_t d = 0; d < a->ndirty; d++)
        memset(c->bases[first + d], 0, c->count);
    }
  }
}

int weft_world_clear_dirty(weft_world_t *w) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  WEFT_CHECK(w, !w->txn.draining, WEFT_EBUSY,
             "dirty bits cannot be cleared inside a drain");
  /* Worlds that track nothing and log nothing pay two tests. */
  if (w->dirty_comps)
    clear_bits(w);
  w->tlog_n = 0;
  return 0;
}

void weft_world_set_tick(weft_world_t *w, uint64_t tick) {
  if (w)
    w->tick = tick;
}
