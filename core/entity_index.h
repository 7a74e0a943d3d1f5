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
#include <string.h>

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

/*
 * Issues k slots for rows [row0, row0 + k) of one chunk, in the order
 * weft__index_issue(ix, true, ...) would, writing the handles to ents[row0..]
 * and, when out is not NULL, to out[0..k). Runs of fresh or swept slots take
 * a loop without the per-slot choice.
 */
/*
 * Claims the m consecutive slots idx0.. whose records start at recs (one
 * index page at most) for consecutive rows row0.. of chunk chunk_id. A
 * straight loop over plain arrays, which the compiler vectorizes.
 */
static inline void weft__index_claim_run(weft__record_t *restrict recs,
                                         uint32_t idx0, uint32_t m,
                                         uint32_t chunk_id, uint32_t row0,
                                         uint64_t tag,
                                         weft_entity_t *restrict ents) {
  for (uint32_t j = 0; j < m; j++) {
    uint32_t row = row0 + j;
    uint32_t gen = (recs[j].gen & WEFT__GEN_MASK) + 1;
    recs[j].gen = WEFT__REC_ALIVE | gen | ((row << 14) & WEFT__REC_ROWHI);
    recs[j].loc = chunk_id << WEFT__ROW_BITS | (row & WEFT__ROW_MASK);
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
    weft__index_claim_run(weft__index_rec(ix, idx), idx, m, chunk_id, row0,
                          ix->tag, ents);
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
  } else if (ix->hwm == ix->capacity && ix->free_head == WEFT__NIL &&
             ix->retired == 0) {
    /* No fresh slot, no free list and no retired slot: the sweep range is
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
