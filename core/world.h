/* SPDX-License-Identifier: MIT */
/*
 * What the core translation units share about the world beyond its layout
 * (core/world_view.h, which the layers above use instead of this header).
 */
#ifndef WEFT_CORE_WORLD_H
#define WEFT_CORE_WORLD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/world_view.h"

/* World-destroy hooks of the optional parts; each accepts a world whose
 * part was never created. */
void weft__random_fini(weft_world_t *w);
void weft__resources_fini(weft_world_t *w);
void weft__snapshot_fini(weft_world_t *w);

/* A hash of the world seed and the named streams' states (random.c), for
 * the digest. */
uint64_t weft__random_digest(const weft_world_t *w);

/* The number of named random streams; for i below it, stream i's name and
 * generator in *name and *rng (creation order; snapshots, random.c). */
struct weft_rng_t;
uint32_t weft__random_stream_at(const weft_world_t *w, uint32_t i,
                                const char **name, struct weft_rng_t **rng);

/* Counts n rejected handles; safe from concurrent readers. */
static inline void weft__count_stale_n(const weft_world_t *w, uint64_t n) {
  atomic_fetch_add_explicit(&((weft_world_t *)w)->stale, n,
                            memory_order_relaxed);
}

/* Counts a rejected handle; safe from concurrent readers. */
static inline void weft__count_stale(const weft_world_t *w) {
  weft__count_stale_n(w, 1);
}

/*
 * True when structural calls must take the staged path: a scope is open, a
 * drain runs, or observers exist (they only ever run inside a drain). One
 * load: this sits on every structural call.
 */
static inline bool weft__routing(const weft_world_t *w) {
  return atomic_load_explicit(&w->txn.route, memory_order_relaxed) != 0;
}

/* A resolved live entity: its record, chunk, row and archetype. */
typedef struct weft__where_t {
  weft__record_t *rec;
  weft__chunk_t *chunk;
  uint32_t row;
  weft__archetype_t *arch;
} weft__where_t;

/* Where live entity e is now; false for a stale, forged or foreign handle
 * (the caller decides whether that is counted). */
static inline bool weft__locate(const weft_world_t *w, weft_entity_t e,
                                weft__where_t *at) {
  const weft__chunk_slot_t *slot;
  weft__record_t *r =
      weft__index_find(&w->index, w->index.table, e, &slot, &at->row);
  if (!r)
    return false;
  at->rec = r;
  at->chunk = slot->chunk;
  at->arch = slot->arch;
  return true;
}

/* The record of live handle e, or NULL for a stale, forged or foreign one. */
static inline weft__record_t *weft__lookup(const weft_world_t *w,
                                           weft_entity_t e) {
  return weft__index_lookup(&w->index, w->index.table, e);
}

/* Where a live entity's row is. */
static inline const weft__chunk_slot_t *
weft__rec_slot(const weft_world_t *w, const weft__record_t *r) {
  return &w->index.table[weft__rec_chunk(&w->index, r)];
}

/*
 * Swap-removes a row: the archetype's last row moves into the hole and its
 * entity's record is updated; an emptied last chunk becomes a spare.
 * Inline because every despawn and every archetype move ends here.
 */
static inline void weft__row_remove(weft_world_t *w, weft__archetype_t *a,
                                    weft__chunk_t *chunk, uint32_t row) {
  weft__chunk_t *last = a->tail;
  uint32_t lrow = last->count - 1;
  if (last != chunk || lrow != row) {
    if (__builtin_expect(a->ndirty != 0, 0)) {
      weft__dirty_settle(last);  /* its last row's bytes move */
      weft__dirty_settle(chunk); /* a row that may be clean moves in */
    }
    /* Locals, because every byte store may alias the archetype and the
     * headers: read through them, the loop would reload all four each
     * round. */
    const weft__array_t *arrays = a->arrays;
    uint8_t *const *dst = chunk->bases, *const *src = last->bases;
    for (uint32_t i = 0, n = a->narrays; i < n; i++) {
      uint32_t elem = arrays[i].elem;
      weft__copy_elem(dst[i] + (size_t)row * elem, src[i] + (size_t)lrow * elem,
                      elem);
    }
    chunk->sversion = w->change_version; /* a row moved in */
    weft_entity_t moved = last->entities[lrow];
    chunk->entities[row] = moved;
    weft__index_place(&w->index, (uint32_t)moved, chunk->id, row);
  }
  last->count--;
  a->count--;
  if (last->count == 0) {
    a->nchunks--; /* the emptied chunk stays with the archetype as a spare */
    a->tail = a->nchunks ? a->chunks[a->nchunks - 1] : NULL;
    w->chunks_live--;
    w->chunks_spare++;
  }
}

/*
 * Stamps the column of component col in chunk c: a write through
 * weft_set(), weft_get_mut(), a command or any other path that changes a
 * value in place. The version is the world's current one, which is above
 * every version a system that has run or is running holds (the pipeline
 * advances it before a segment runs, after it and at each sync point), so
 * every `changed` reader sees the write at its next run and, having run,
 * no longer does. Any thread (a relaxed store).
 */
static inline void weft__stamp_write(const weft_world_t *w, weft__chunk_t *c,
                                     const weft__column_t *col) {
  weft__chunk_stamp(c, (uint32_t)(col - c->arch->cols), w->change_version);
}

/*
 * Marks row `row` of tracked column col in chunk c dirty and stamps the
 * column's tick: the slow half of weft__mark_write(). Several workers may
 * mark rows of one chunk at once (weft_get_mut() from callbacks), so the
 * stores are relaxed atomics, which compile to plain stores.
 */
static inline void weft__dirty_mark(const weft_world_t *w, weft__chunk_t *c,
                                    const weft__column_t *col, uint32_t row) {
  /* Every load comes before the first store: a byte store may alias
   * anything, so the compiler would otherwise load c->arch, col->dirty and
   * w->tick again after it (five instructions of the seventeen a tracked
   * weft_set() added, measured with callgrind). */
  uint8_t *bits = c->bases[weft__dirty_array(c->arch, col)] + row;
  uint64_t *t = &c->ticks[col->dirty - 1u];
  const uint64_t tick = w->tick;
  __atomic_store_n(bits, (uint8_t)1, __ATOMIC_RELAXED);
  if (__atomic_load_n(t, __ATOMIC_RELAXED) != tick)
    __atomic_store_n(t, tick, __ATOMIC_RELAXED);
}

/*
 * weft__stamp_write() for a write to one row: also marks the row dirty
 * when the column is tracked (one test of a field of the column the
 * caller already holds). Any thread.
 */
static inline void weft__mark_write(const weft_world_t *w, weft__chunk_t *c,
                                    const weft__column_t *col, uint32_t row) {
  if (__builtin_expect(col->dirty != 0, 0)) {
    /* Every load before the first store, as in weft__dirty_mark(): after
     * the version stamp's store the compiler would load the archetype and
     * the column again (two of the sixteen instructions a tracked
     * weft_set() added, measured with callgrind). */
    const weft__archetype_t *a = c->arch;
    uint8_t *bits = c->bases[weft__dirty_array(a, col)] + row;
    uint64_t *t = &c->ticks[col->dirty - 1u];
    const uint64_t tick = w->tick;
    weft__chunk_stamp(c, (uint32_t)(col - a->cols), w->change_version);
    __atomic_store_n(bits, (uint8_t)1, __ATOMIC_RELAXED);
    if (__atomic_load_n(t, __ATOMIC_RELAXED) != tick)
      __atomic_store_n(t, tick, __ATOMIC_RELAXED);
    return;
  }
  weft__stamp_write(w, c, col);
}

/*
 * Stamps, in the chunk of a row found through its chunk table entry, the
 * columns of the components comps[j] whose bit j is set in @p write (a
 * weft_get_many_ex() write mask): weft__stamp_write() for a lookup that
 * knows only the slot. Any thread.
 */
static inline void weft__stamp_row(const weft_world_t *w,
                                   const weft__chunk_slot_t *slot, uint32_t row,
                                   const weft_component_t *comps, uint32_t k,
                                   uint32_t write) {
  for (uint32_t j = 0; j < k; j++) {
    weft_component_t c = comps[j];
    uint32_t col = (write >> j & 1) && c <= WEFT_MAX_COMPONENTS
                       ? slot->arch->colmap[c]
                       : 0;
    if (col)
      weft__mark_write(w, slot->chunk, &slot->arch->cols[col - 1], row);
  }
}

/* Components a spawn list may name. */
#define WEFT__SPAWN_MAX 64u

/* weft__list_check() with the failure described on the world (spawn.c). */
int weft__list_mask(weft_world_t *w, const weft_component_t *comps,
                    uint32_t max, weft__mask_t *m, uint32_t *count);

/* Tells every query about a new archetype (query.c). */
int weft__queries_on_archetype(weft_world_t *w, weft__archetype_t *a);

/* Frees a query, open iterations or not: the world's end (query.c). */
void weft__query_free(weft_query_t *q);

/* Forgets every open iteration of the world's queries: after an unwind,
 * the iterators it orphaned no longer count (query.c). */
void weft__queries_unwound(weft_world_t *w);

/* Forgets the archetypes marked `gone` (rolled back or pruned,
 * archetype.c): they leave every query's matches, the temporary queries'
 * too. Cannot fail. */
void weft__queries_drop_archetypes(weft_world_t *w);

/* The mark a call takes before it may create archetypes, for
 * weft__archetypes_rollback() should it fail: the creation count. */
static inline uint32_t weft__archetypes_mark(const weft_world_t *w) {
  return w->arch_born;
}

/* Archetype a gained n chunks: the queries that match it make room for
 * them in their flat caches (query.c). Cannot fail: a query short of room
 * iterates through its matches instead. */
void weft__queries_on_chunks(weft_world_t *w, const weft__archetype_t *a,
                             uint32_t n);

#endif /* WEFT_CORE_WORLD_H */
