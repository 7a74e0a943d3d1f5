/*
 * The entity index: one 8-byte record per slot, in pages that never move.
 *
 * A record holds the slot's generation with two flag bits, and either the
 * entity's location (chunk id and a 16-bit row) while it is alive, or the
 * next free slot while it is on the free list. The row's low 10 bits share
 * the loc word with the 22-bit chunk id; its high 6 bits sit in the spare
 * bits 24..29 of the generation word. A handle is valid exactly when its tag
 * is the world's, its index is below the high-water mark and its record
 * says ALIVE with the handle's generation; the check reads nothing else.
 */
#ifndef WEFT_CORE_ENTITY_INDEX_H
#define WEFT_CORE_ENTITY_INDEX_H

#include <stdbool.h>
#include <stdint.h>

#include "core/alloc.h"
#include "weft/entity.h"

#define WEFT__PAGE_BITS 12u
#define WEFT__PAGE_SIZE (1u << WEFT__PAGE_BITS)
#define WEFT__PAGE_MASK (WEFT__PAGE_SIZE - 1u)

#define WEFT__GEN_MASK 0x00ffffffu
#define WEFT__REC_ROWHI 0x3f000000u
#define WEFT__REC_ALIVE 0x80000000u
#define WEFT__REC_RETIRED 0x40000000u
#define WEFT__NIL 0xffffffffu

/* Row bits kept in the loc word; the rest of it is the chunk id. */
#define WEFT__ROW_BITS 10u
#define WEFT__ROW_MASK ((1u << WEFT__ROW_BITS) - 1u)

typedef struct weft__record_t {
  uint32_t gen; /* generation | row bits 10..15 | ALIVE | RETIRED */
  uint32_t loc; /* alive: chunk id << 10 | row bits 0..9; free: next free */
} weft__record_t;

static inline uint32_t weft__rec_chunk(const weft__record_t *r) {
  return r->loc >> WEFT__ROW_BITS;
}
static inline uint32_t weft__rec_row(const weft__record_t *r) {
  return (r->loc & WEFT__ROW_MASK) | ((r->gen & WEFT__REC_ROWHI) >> 14);
}
static inline void weft__rec_set_loc(weft__record_t *r, uint32_t chunk_id,
                                     uint32_t row) {
  r->loc = chunk_id << WEFT__ROW_BITS | (row & WEFT__ROW_MASK);
  r->gen = (r->gen & ~WEFT__REC_ROWHI) | ((row << 14) & WEFT__REC_ROWHI);
}

typedef struct weft__index_t {
  weft__record_t **pages;
  uint32_t page_count; /* pages allocated */
  uint32_t page_slots; /* entries in pages[] */
  void **blocks;       /* allocations the pages were carved from */
  uint32_t nblocks;
  uint32_t block_cap;
  uint32_t hwm;       /* slots ever handed out */
  uint32_t sweep;     /* slots in [sweep, sweep_end) are free or retired: */
  uint32_t sweep_end; /* the ones the last clear released, not reused yet */
  uint32_t free_head; /* first free slot or WEFT__NIL */
  uint32_t alive;
  uint32_t retired;
  uint32_t capacity;
  uint32_t max_gen;
  uint64_t tag; /* world tag, pre-shifted to bits 56..63 */
} weft__index_t;

void weft__index_init(weft__index_t *ix, uint32_t capacity, uint32_t max_gen,
                      uint8_t tag);
void weft__index_fini(weft__index_t *ix);

/* Ensures pages exist for slots [0, slots). 0 or WEFT_ENOMEM. */
int weft__index_reserve(weft__index_t *ix, weft__alloc_stats_t *st,
                        uint32_t slots);

static inline weft__record_t *weft__index_rec(const weft__index_t *ix,
                                              uint32_t idx) {
  return &ix->pages[idx >> WEFT__PAGE_BITS][idx & WEFT__PAGE_MASK];
}

/* The record of a live handle, or NULL for a stale/forged/foreign one. */
static inline weft__record_t *weft__index_lookup(const weft__index_t *ix,
                                                 weft_entity_t e) {
  uint32_t idx = (uint32_t)e;
  if ((e & UINT64_C(0xff00000000000000)) != ix->tag || idx >= ix->hwm)
    return 0;
  weft__record_t *r = weft__index_rec(ix, idx);
  uint32_t want = WEFT__REC_ALIVE | ((uint32_t)(e >> 32) & WEFT__GEN_MASK);
  return (r->gen & ~WEFT__REC_ROWHI) == want ? r : 0;
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
         (weft__index_rec(ix, ix->sweep)->gen & WEFT__REC_RETIRED))
    ix->sweep++;
  return ix->sweep < ix->sweep_end;
}

/*
 * Issues a slot (pages must be reserved: the caller reserves hwm+1 first).
 * prefer_fresh takes a slot above the high-water mark even when the free
 * list is not empty (batch spawns use it to hand out contiguous ids).
 * The record is marked alive at location (chunk_id, row). Returns the
 * handle.
 */
static inline weft_entity_t weft__index_issue(weft__index_t *ix,
                                              bool prefer_fresh,
                                              uint32_t chunk_id, uint32_t row) {
  uint32_t idx;
  weft__record_t *r;
  bool fresh = prefer_fresh && ix->hwm < ix->capacity;
  if (ix->free_head != WEFT__NIL && !fresh) {
    idx = ix->free_head;
    r = weft__index_rec(ix, idx);
    ix->free_head = r->loc;
  } else if (!fresh && weft__index_sweep_next(ix)) {
    /* Slots a clear released, in index order. */
    idx = ix->sweep++;
    r = weft__index_rec(ix, idx);
  } else {
    idx = ix->hwm++;
    r = weft__index_rec(ix, idx);
  }
  uint32_t gen = (r->gen & WEFT__GEN_MASK) + 1;
  r->gen = WEFT__REC_ALIVE | gen | ((row << 14) & WEFT__REC_ROWHI);
  r->loc = chunk_id << WEFT__ROW_BITS | (row & WEFT__ROW_MASK);
  ix->alive++;
  return weft__index_handle(ix, idx, gen);
}

/* Marks slot idx alive at (chunk_id, row) and returns its new handle. */
static inline weft_entity_t weft__index_claim(weft__index_t *ix, uint32_t idx,
                                              uint32_t chunk_id, uint32_t row) {
  weft__record_t *r = weft__index_rec(ix, idx);
  uint32_t gen = (r->gen & WEFT__GEN_MASK) + 1;
  r->gen = WEFT__REC_ALIVE | gen | ((row << 14) & WEFT__REC_ROWHI);
  r->loc = chunk_id << WEFT__ROW_BITS | (row & WEFT__ROW_MASK);
  return weft__index_handle(ix, idx, gen);
}

/*
 * Issues k slots for rows [row0, row0 + k) of one chunk, in the order
 * weft__index_issue(ix, true, ...) would, writing the handles to ents[row0..]
 * and, when out is not NULL, to out[0..k). Runs of fresh or swept slots take
 * a loop without the per-slot choice.
 */
static inline void weft__index_issue_rows(weft__index_t *ix, uint32_t chunk_id,
                                          uint32_t row0, uint32_t k,
                                          weft_entity_t *ents,
                                          weft_entity_t *out) {
  /* The loops keep the index's fields in locals: the record and handle
   * stores could otherwise alias them and force a reload every slot. */
  weft__record_t *const *pages = ix->pages;
  const uint64_t tag = ix->tag;
  uint32_t i = 0;
  if (ix->capacity - ix->hwm >= k) {
    /* All fresh: consecutive indices above the high-water mark. */
    const uint32_t base = ix->hwm;
    for (; i < k; i++) {
      uint32_t idx = base + i, row = row0 + i;
      weft__record_t *r = &pages[idx >> WEFT__PAGE_BITS][idx & WEFT__PAGE_MASK];
      uint32_t gen = (r->gen & WEFT__GEN_MASK) + 1;
      r->gen = WEFT__REC_ALIVE | gen | ((row << 14) & WEFT__REC_ROWHI);
      r->loc = chunk_id << WEFT__ROW_BITS | (row & WEFT__ROW_MASK);
      weft_entity_t e = tag | ((uint64_t)gen << 32) | idx;
      ents[row] = e;
      if (out)
        out[i] = e;
    }
    ix->hwm = base + k;
    ix->alive += k;
    return;
  }
  if (ix->hwm == ix->capacity && ix->free_head == WEFT__NIL) {
    /* No fresh slot and no free list: the sweep range, in order, skipping
     * retired slots. */
    uint32_t s = ix->sweep;
    const uint32_t end = ix->sweep_end;
    for (; i < k; i++) {
      weft__record_t *r = NULL;
      for (; s < end; s++) {
        r = &pages[s >> WEFT__PAGE_BITS][s & WEFT__PAGE_MASK];
        if (!(r->gen & WEFT__REC_RETIRED))
          break;
      }
      if (s == end)
        break;
      uint32_t row = row0 + i;
      uint32_t gen = (r->gen & WEFT__GEN_MASK) + 1;
      r->gen = WEFT__REC_ALIVE | gen | ((row << 14) & WEFT__REC_ROWHI);
      r->loc = chunk_id << WEFT__ROW_BITS | (row & WEFT__ROW_MASK);
      weft_entity_t e = tag | ((uint64_t)gen << 32) | s;
      s++;
      ents[row] = e;
      if (out)
        out[i] = e;
    }
    ix->sweep = s;
    ix->alive += i;
  }
  for (; i < k; i++) {
    weft_entity_t e = weft__index_issue(ix, true, chunk_id, row0 + i);
    ents[row0 + i] = e;
    if (out)
      out[i] = e;
  }
}

/*
 * Ends the life of a live record's occupant. Fail closed: a slot whose
 * generations are exhausted retires for good (returns true); otherwise it
 * stays dead with its last generation (false). Counters are the caller's.
 */
static inline bool weft__rec_release(weft__record_t *r, uint32_t max_gen) {
  uint32_t gen = r->gen & WEFT__GEN_MASK;
  if (gen >= max_gen) {
    r->gen = WEFT__REC_RETIRED | gen;
    r->loc = WEFT__NIL;
    return true;
  }
  r->gen = gen;
  return false;
}

/* Kills a live slot and puts it on the free list unless it retired. */
static inline void weft__index_kill(weft__index_t *ix, weft__record_t *r,
                                    uint32_t idx) {
  ix->alive--;
  if (weft__rec_release(r, ix->max_gen)) {
    ix->retired++;
    return;
  }
  r->loc = ix->free_head;
  ix->free_head = idx;
}

/*
 * Kills every live slot. Instead of threading a free list through every
 * record, the whole range [0, hwm) becomes the sweep range, which issues
 * its non-retired slots in index order before any fresh slot.
 */
void weft__index_clear(weft__index_t *ix);

#endif /* WEFT_CORE_ENTITY_INDEX_H */
