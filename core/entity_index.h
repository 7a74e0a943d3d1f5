/* SPDX-License-Identifier: MIT */
/*
 * The entity index: one 4-byte record per slot, in pages that never move.
 *
 * A live entity's record holds only its location: LOC, then the chunk id
 * and the row (weft__chunk_row_bits() splits the other 31 bits). Its
 * generation lives in the handle the chunk's entity column stores at that
 * row, so a handle is valid exactly when its tag is the world's, its index
 * is below the high-water mark, its record says LOC, and the handle stored
 * at that location is the handle itself. Live rows hold distinct live
 * handles, so a stale or forged handle never matches. The design is the
 * sparse set's (EnTT): a 4-byte sparse record, the versioned handle in the
 * dense column.
 *
 * Any other record holds a generation: the last one issued (0 for a slot
 * never issued), with RETIRED for a slot whose generations are exhausted,
 * or RESERVED for a slot issued to a staged spawn that has no row yet.
 * Free slots are kept on a LIFO stack of indices beside the pages. The
 * stack grows when it is full, so it costs memory only for slots that are
 * free now or were free at once before.
 */
#ifndef WEFT_CORE_ENTITY_INDEX_H
#define WEFT_CORE_ENTITY_INDEX_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/alloc.h"
#include "core/chunk.h"
#include "weft/entity.h"

#define WEFT__PAGE_BITS 12u
#define WEFT__PAGE_SIZE (1u << WEFT__PAGE_BITS)
#define WEFT__PAGE_MASK (WEFT__PAGE_SIZE - 1u)

#define WEFT__GEN_MASK 0x00ffffffu
#define WEFT__REC_LOC 0x80000000u
#define WEFT__REC_RETIRED 0x40000000u
#define WEFT__REC_RESERVED 0x20000000u
#define WEFT__TAG_MASK UINT64_C(0xff00000000000000)

typedef struct weft__record_t {
  uint32_t v; /* LOC | chunk id << row_bits | row, or flags | generation */
} weft__record_t;

typedef struct weft__index_t {
  /* The fields every spawn, despawn and lookup reads share one cache line
   * (the world keeps the index first, on a line of its own). The first
   * six are what the public header's inline weft_get() reads
   * (weft_get_view_t_; see the assertions in world.c). */
  weft__record_t **pages;
  /* The chunk store's table, here for lookups (add_segment() in
   * archetype.c keeps the two in step). */
  const weft__chunk_slot_t *table;
  uint32_t hwm; /* slots ever handed out */
  /* The low bits of a LOC record that hold the row, less 6: what a
   * record shifts right by to become its chunk table entry's byte offset
   * (kept so, the lookups' one shift; weft__index_row_bits() adds the 6
   * back). */
  uint32_t slot_shift;
  uint32_t row_mask;
  /* A LOC record's chunk table entry, as a byte offset into the table:
   * v >> slot_shift & slot_mask, which drops LOC and the row. */
  uint32_t slot_mask;
  uint32_t *free; /* free slots, the next one to issue last */
  uint64_t tag;   /* world tag, pre-shifted to bits 56..63 */
  uint32_t free_n;
  uint32_t free_cap;
  uint32_t alive;
  uint32_t retired;
  uint32_t capacity;
  uint32_t max_gen;
  uint32_t sweep;      /* slots in [sweep, sweep_end) are free or retired: */
  uint32_t sweep_end;  /* the ones the last clear released, not reused yet */
  uint32_t page_count; /* pages allocated */
  uint32_t page_slots; /* entries in pages[] */
  uint32_t nblocks;
  uint32_t block_cap;
  void **blocks; /* allocations the pages were carved from */
} weft__index_t;

/* The low bits of a LOC record that hold the row. */
static inline uint32_t weft__index_row_bits(const weft__index_t *ix) {
  return ix->slot_shift + 6u;
}

static inline uint32_t weft__rec_chunk(const weft__index_t *ix,
                                       const weft__record_t *r) {
  return (r->v & ~WEFT__REC_LOC) >> weft__index_row_bits(ix);
}
static inline uint32_t weft__rec_row(const weft__index_t *ix,
                                     const weft__record_t *r) {
  return r->v & ix->row_mask;
}
static inline void weft__rec_set_loc(const weft__index_t *ix, weft__record_t *r,
                                     uint32_t chunk_id, uint32_t row) {
  r->v = WEFT__REC_LOC | chunk_id << weft__index_row_bits(ix) | row;
}

void weft__index_init(weft__index_t *ix, uint32_t capacity, uint32_t max_gen,
                      uint8_t tag, uint32_t chunk_size);
void weft__index_fini(weft__index_t *ix);

/* Ensures pages exist for slots [0, slots). 0 or WEFT_ENOMEM. */
int weft__index_reserve(weft__index_t *ix, weft__alloc_stats_t *st,
                        uint32_t slots);

/* Bytes the index owns: its pages and its free stack. */
uint64_t weft__index_bytes(const weft__index_t *ix);

/* The record of slot idx in a page table (loops that keep the index's
 * page table in a local use this; the rest go through weft__index_rec). */
static inline weft__record_t *weft__pages_rec(weft__record_t *const *pages,
                                              uint32_t idx) {
  return &pages[idx >> WEFT__PAGE_BITS][idx & WEFT__PAGE_MASK];
}

static inline weft__record_t *weft__index_rec(const weft__index_t *ix,
                                              uint32_t idx) {
  return weft__pages_rec(ix->pages, idx);
}

/* Records that the live entity in slot idx now sits at (chunk_id, row). */
static inline void weft__index_place(const weft__index_t *ix, uint32_t idx,
                                     uint32_t chunk_id, uint32_t row) {
  weft__rec_set_loc(ix, weft__index_rec(ix, idx), chunk_id, row);
}

/* The chunk table entry LOC record v names. */
static inline const weft__chunk_slot_t *
weft__index_slot(const weft__index_t *ix, const weft__chunk_slot_t *table,
                 uint32_t v) {
  return (const weft__chunk_slot_t *)((const unsigned char *)table +
                                      (v >> ix->slot_shift & ix->slot_mask));
}

/*
 * The record of a live handle, or NULL for a stale/forged/foreign one; on
 * a hit, *slot and *row say where the entity is. Reads the record, the
 * chunk table entry and the handle stored at the row. The tag needs no
 * test of its own: the stored handle carries this world's, so a foreign
 * handle never equals it.
 */
static inline weft__record_t *weft__index_find(const weft__index_t *ix,
                                               const weft__chunk_slot_t *table,
                                               weft_entity_t e,
                                               const weft__chunk_slot_t **slot,
                                               uint32_t *row) {
  uint32_t idx = (uint32_t)e;
  if (idx >= ix->hwm)
    return 0;
  weft__record_t *r = weft__index_rec(ix, idx);
  uint32_t v = r->v;
  if (!(v & WEFT__REC_LOC))
    return 0;
  const weft__chunk_slot_t *s = weft__index_slot(ix, table, v);
  uint32_t at = v & ix->row_mask;
  if (s->entities[at] != e)
    return 0;
  *slot = s;
  *row = at;
  return r;
}

/* The record of a live handle, or NULL for a stale/forged/foreign one. */
static inline weft__record_t *
weft__index_lookup(const weft__index_t *ix, const weft__chunk_slot_t *table,
                   weft_entity_t e) {
  const weft__chunk_slot_t *slot;
  uint32_t row;
  return weft__index_find(ix, table, e, &slot, &row);
}

/* True if e is the handle a staged spawn holds: issued, no row yet. */
static inline bool weft__index_is_reserved(const weft__index_t *ix,
                                           weft_entity_t e) {
  uint32_t idx = (uint32_t)e;
  if ((e & WEFT__TAG_MASK) != ix->tag || idx >= ix->hwm)
    return false;
  uint32_t want = WEFT__REC_RESERVED | ((uint32_t)(e >> 32) & WEFT__GEN_MASK);
  return weft__index_rec(ix, idx)->v == want;
}

static inline weft_entity_t weft__index_handle(const weft__index_t *ix,
                                               uint32_t idx, uint32_t gen) {
  return ix->tag | ((uint64_t)gen << 32) | idx;
}

/* Slots that can still be issued: capacity - alive - retired. */
static inline uint32_t weft__index_remaining(const weft__index_t *ix) {
  return ix->capacity - ix->alive - ix->retired;
}

/*
 * The error spawning n more entities would hit, or 0 if they fit. Names the
 * cause: EFULL when live entities fill the capacity, ERETIRED when retired
 * slots are what is missing.
 */
int weft__index_check_room(const weft__index_t *ix, uint32_t n);

/* Skips retired slots of the sweep range; true if a free one is left. */
static inline bool weft__index_sweep_next(weft__index_t *ix) {
  while (ix->sweep < ix->sweep_end &&
         (weft__index_rec(ix, ix->sweep)->v & WEFT__REC_RETIRED))
    ix->sweep++;
  return ix->sweep < ix->sweep_end;
}

/*
 * Takes a slot to issue (pages must be reserved: the caller reserves hwm+1
 * first) and counts it alive: the top of the free stack, else the next
 * slot of the sweep range, else a fresh one above the high-water mark.
 * prefer_fresh takes a fresh slot even when others are free (batch spawns
 * use it to hand out contiguous ids). The caller writes the record.
 */
static inline uint32_t weft__index_take(weft__index_t *ix, bool prefer_fresh) {
  uint32_t idx;
  bool fresh = prefer_fresh && ix->hwm < ix->capacity;
  if (ix->free_n && !fresh)
    idx = ix->free[--ix->free_n];
  else if (!fresh && weft__index_sweep_next(ix))
    idx = ix->sweep++; /* slots a clear released, in index order */
  else
    idx = ix->hwm++;
  ix->alive++;
  return idx;
}

/*
 * Issues a slot whose entity lives at (chunk_id, row); the caller stores
 * the returned handle at that row. Returns the handle.
 */
static inline weft_entity_t weft__index_issue(weft__index_t *ix,
                                              bool prefer_fresh,
                                              uint32_t chunk_id, uint32_t row) {
  uint32_t idx = weft__index_take(ix, prefer_fresh);
  weft__record_t *r = weft__index_rec(ix, idx);
  uint32_t gen = (r->v & WEFT__GEN_MASK) + 1;
  weft__rec_set_loc(ix, r, chunk_id, row);
  return weft__index_handle(ix, idx, gen);
}

/* Issues a slot to a staged spawn: RESERVED until it gets a row. */
static inline weft_entity_t weft__index_issue_reserved(weft__index_t *ix) {
  uint32_t idx = weft__index_take(ix, false);
  weft__record_t *r = weft__index_rec(ix, idx);
  uint32_t gen = (r->v & WEFT__GEN_MASK) + 1;
  r->v = WEFT__REC_RESERVED | gen;
  return weft__index_handle(ix, idx, gen);
}

/*
 * Claims the m consecutive slots idx0.. whose records start at recs (one
 * index page at most) for consecutive rows row0.. of chunk chunk_id. A
 * straight loop over plain arrays, which the compiler vectorizes.
 */
static inline void weft__index_claim_run(const weft__index_t *ix,
                                         weft__record_t *restrict recs,
                                         uint32_t idx0, uint32_t m,
                                         uint32_t chunk_id, uint32_t row0,
                                         weft_entity_t *restrict ents) {
  const uint64_t tag = ix->tag;
  const uint32_t loc0 =
      WEFT__REC_LOC | chunk_id << weft__index_row_bits(ix) | row0;
  for (uint32_t j = 0; j < m; j++) {
    uint32_t gen = (recs[j].v & WEFT__GEN_MASK) + 1;
    recs[j].v = loc0 + j;
    ents[j] = tag | ((uint64_t)gen << 32) | (idx0 + j);
  }
}

/* Claims slots [idx, idx + k) for rows row0.. page by page. */
static inline void weft__index_claim_range(weft__index_t *ix, uint32_t idx,
                                           uint32_t k, uint32_t chunk_id,
                                           uint32_t row0, weft_entity_t *ents) {
  while (k) {
    uint32_t in_page = WEFT__PAGE_SIZE - (idx & WEFT__PAGE_MASK);
    uint32_t m = k < in_page ? k : in_page;
    weft__index_claim_run(ix, weft__index_rec(ix, idx), idx, m, chunk_id, row0,
                          ents);
    idx += m;
    row0 += m;
    ents += m;
    k -= m;
  }
}

/*
 * Issues k slots for rows [row0, row0 + k) of one chunk, in the order
 * weft__index_issue(ix, true, ...) would, writing the handles to ents[row0..]
 * and, when out is not NULL, to out[0..k). Runs of fresh slots, and of
 * swept slots while nothing has retired, take a vectorized loop.
 */
static inline void weft__index_issue_rows(weft__index_t *ix, uint32_t chunk_id,
                                          uint32_t row0, uint32_t k,
                                          weft_entity_t *ents,
                                          weft_entity_t *out) {
  uint32_t i = 0;
  if (ix->capacity - ix->hwm >= k) {
    /* All fresh: consecutive indices above the high-water mark. */
    weft__index_claim_range(ix, ix->hwm, k, chunk_id, row0, ents + row0);
    ix->hwm += k;
    ix->alive += k;
    i = k;
  } else if (ix->hwm == ix->capacity && ix->free_n == 0 && ix->retired == 0) {
    /* No fresh slot, no free slot and no retired slot: the sweep range is
     * consecutive free slots. */
    uint32_t m = ix->sweep_end - ix->sweep;
    if (m > k)
      m = k;
    weft__index_claim_range(ix, ix->sweep, m, chunk_id, row0, ents + row0);
    ix->sweep += m;
    ix->alive += m;
    i = m;
  }
  for (uint32_t j = i; j < k; j++)
    ents[row0 + j] = weft__index_issue(ix, true, chunk_id, row0 + j);
  if (out)
    memcpy(out, ents + row0, (size_t)k * sizeof(*out));
}

/*
 * Makes room on the free stack for n slots; WEFT_ENOMEM if it cannot grow
 * (it is unchanged then). Out of line: kills call it only when the free
 * count reaches a new peak, and a reservation calls it once.
 */
int weft__index_reserve_free(weft__index_t *ix, weft__alloc_stats_t *st,
                             uint32_t n);

/* The record of a dead slot whose last handle had generation gen: just the
 * generation, or RETIRED too once generations are exhausted (fail closed). */
static inline uint32_t weft__rec_dead(uint32_t gen, uint32_t max_gen) {
  return (gen >= max_gen ? WEFT__REC_RETIRED : 0) | gen;
}

/*
 * Kills slot idx, whose live (or reserved) handle had generation gen, and
 * pushes it on the free stack. Fail closed: a slot whose generations are
 * exhausted retires for good, and so does one the free stack has no room
 * for when memory runs out (it can then never be issued again, which
 * keeps alive + retired + remaining == capacity and loses nothing else).
 */
static inline void weft__index_kill(weft__index_t *ix, weft__alloc_stats_t *st,
                                    weft__record_t *r, uint32_t idx,
                                    uint32_t gen) {
  ix->alive--;
  if (gen >= ix->max_gen ||
      (ix->free_n == ix->free_cap &&
       weft__index_reserve_free(ix, st, ix->free_n + 1))) {
    r->v = WEFT__REC_RETIRED | gen;
    ix->retired++;
    return;
  }
  r->v = gen;
  ix->free[ix->free_n++] = idx;
}

/* Kills live entity e, whose record is r. */
static inline void weft__index_kill_entity(weft__index_t *ix,
                                           weft__alloc_stats_t *st,
                                           weft__record_t *r, weft_entity_t e) {
  weft__index_kill(ix, st, r, (uint32_t)e,
                   (uint32_t)(e >> 32) & WEFT__GEN_MASK);
}

/*
 * Releases the live slots whose handles a chunk's rows hold: each keeps
 * its generation, or retires if they are exhausted. The first half of a
 * clear, run over every chunk with rows.
 */
void weft__index_release_rows(weft__index_t *ix, const weft_entity_t *ents,
                              uint32_t n);

/*
 * The second half of a clear: releases the slots still reserved by staged
 * spawns. Instead of pushing every released slot on the free stack, the
 * whole range [0, hwm) becomes the sweep range, which issues its
 * non-retired slots in index order before any fresh slot.
 */
void weft__index_clear(weft__index_t *ix);

#endif /* WEFT_CORE_ENTITY_INDEX_H */
