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
 *
 * A system's whole-chunk mark does not write the bytes: it sets the
 * column's all-rows-dirty flag in the chunk header (for the first
 * WEFT__ALL_DIRTY_COLS tracked columns of an archetype), one byte instead
 * of one per row, since the bytes are traffic the system's own loop would
 * otherwise share with its data. While the flag is set the bytes may be
 * stale: weft_is_dirty() reads the flag first, and everything that reads
 * the bytes as a whole expands the flags into them first
 * (weft__dirty_expand()): weft_iter_dirty(), and before rows are copied
 * out of or into a chunk, the swap-remove, a move's source, the bulk paths
 * (weft__dirty_settle()) and a row's arrival (weft__dirty_arrive()). A
 * clear drops the flags with the bytes. Readers of one column may run on
 * several workers at once, so expansion is claimed with a compare-and-swap
 * (WEFT__ALL_EXPANDING) and the others wait for it.
 */
#include "weft/dirty.h"

#include <sched.h>
#include <string.h>

#include "core/check.h"
#include "core/query_internal.h"
#include "core/world.h"

/* Writes column k's all-dirty flag of chunk c into its bytes: the caller
 * that swaps the flag from set to expanding writes them, later ones wait
 * until it is done. Any thread that may read the chunk. */
static void expand_col(weft__chunk_t *c, uint32_t k, uint8_t *bytes) {
  uint8_t *f = &c->all_dirty[k];
  uint8_t s = __atomic_load_n(f, __ATOMIC_ACQUIRE);
  while (s != 0) {
    if (s == WEFT__ALL_DIRTY) {
      if (__atomic_compare_exchange_n(f, &s, (uint8_t)WEFT__ALL_EXPANDING,
                                      false, __ATOMIC_ACQUIRE,
                                      __ATOMIC_ACQUIRE)) {
        memset(bytes, 1, c->count);
        __atomic_store_n(f, (uint8_t)0, __ATOMIC_RELEASE);
        return;
      }
      continue; /* s holds what another caller left */
    }
    sched_yield(); /* another caller expands: a memset of one chunk */
    s = __atomic_load_n(f, __ATOMIC_ACQUIRE);
  }
}

void weft__dirty_expand(weft__chunk_t *c) {
  const weft__archetype_t *a = c->arch;
  const uint32_t first = a->narrays - a->ndirty;
  for (uint32_t k = 0; k < a->ndirty && k < WEFT__ALL_DIRTY_COLS; k++)
    expand_col(c, k, c->bases[first + k]);
}

void weft__dirty_arrive(weft_world_t *w, weft__archetype_t *a, weft__chunk_t *c,
                        uint32_t row0, uint32_t n) {
  /* The rows already there keep what their flags say; the new ones are
   * dirty either way. */
  weft__dirty_settle(c);
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
  const uint32_t k = col->dirty - 1u;
  /* Set or being expanded: either way every row is dirty. */
  if (k < WEFT__ALL_DIRTY_COLS &&
      __atomic_load_n(&at.chunk->all_dirty[k], __ATOMIC_ACQUIRE) != 0)
    return true;
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

/* Expands column k's flags in the chunks that rows [row0, row0 + n) of
 * chunk c's archetype span from c on (one chunk, or a run of full ones). */
static void expand_span(const weft__chunk_t *c, uint32_t k, uint32_t row0,
                        uint32_t n) {
  const weft__archetype_t *a = c->arch;
  const uint32_t array = a->narrays - a->ndirty + k;
  for (uint32_t i = c->index; i < a->nchunks; i++) {
    weft__chunk_t *x = a->chunks[i];
    expand_col(x, k, x->bases[array]);
    if (row0 + n <= x->count)
      return;
    n -= x->count - row0;
    row0 = 0;
  }
}

const uint8_t *weft_iter_dirty(const weft_iter_t *it, uint32_t term) {
  const weft__chunk_t *c;
  const weft__column_t *col = iter_tracked(it, term, &c);
  if (!col)
    return NULL;
  if (col->dirty - 1u < WEFT__ALL_DIRTY_COLS)
    expand_span(c, col->dirty - 1u, it->row0_, it->count);
  return c->bases[weft__dirty_array(c->arch, col)] + it->row0_;
}

uint64_t weft_iter_dirty_tick(const weft_iter_t *it, uint32_t term) {
  const weft__chunk_t *c;
  const weft__column_t *col = iter_tracked(it, term, &c);
  if (!col)
    return 0;
  return __atomic_load_n(&c->ticks[col->dirty - 1u], __ATOMIC_RELAXED);
}

/* Clears the dirty bytes of every row of every tracked column, and the
 * chunks' all-dirty flags. */
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
      memset(c->all_dirty, 0, sizeof(c->all_dirty));
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
