/* SPDX-License-Identifier: MIT */
/* The entity index: paged records and the free stack. */
#include "core/entity_index.h"

#include <string.h>

#include "weft/error.h"

void weft__index_init(weft__index_t *ix, uint32_t capacity, uint32_t max_gen,
                      uint8_t tag, uint32_t chunk_size) {
  memset(ix, 0, sizeof(*ix));
  const uint32_t row_bits = weft__chunk_row_bits(chunk_size);
  ix->slot_shift = row_bits - 6u;
  ix->row_mask = (1u << row_bits) - 1u;
  /* weft__index_slot() shifts right by row_bits - 6: chunks of at least
   * WEFT_CHUNK_SIZE_MIN bytes have row_bits >= 9. */
  _Static_assert(sizeof(weft__chunk_slot_t) == 1u << 6, "64-byte entries");
  _Static_assert(WEFT_CHUNK_SIZE_MIN / sizeof(weft_entity_t) >= 1u << 6,
                 "row_bits >= 6");
  ix->slot_mask = ((1u << (31u - row_bits)) - 1u) << 6;
  ix->capacity = capacity;
  ix->max_gen = max_gen;
  ix->tag = (uint64_t)tag << 56;
}

void weft__index_fini(weft__index_t *ix) {
  for (uint32_t b = 0; b < ix->nblocks; b++)
    weft__free(ix->blocks[b], 0, 64);
  weft__free(ix->blocks, ix->block_cap * sizeof(*ix->blocks), 16);
  weft__free(ix->pages, ix->page_slots * sizeof(*ix->pages), 16);
  weft__free(ix->free, ix->free_cap * sizeof(*ix->free), 16);
  memset(ix, 0, sizeof(*ix));
}

uint64_t weft__index_bytes(const weft__index_t *ix) {
  return (uint64_t)ix->page_count * WEFT__PAGE_SIZE * sizeof(weft__record_t) +
         (uint64_t)ix->free_cap * sizeof(*ix->free);
}

int weft__index_reserve_free(weft__index_t *ix, weft__alloc_stats_t *st,
                             uint32_t n) {
  /* A page's worth, then doubling: the stack follows the peak number of
   * free slots, which a steady churn reaches early. */
  return weft__grow(st, &ix->free, &ix->free_cap, n, sizeof(*ix->free),
                    WEFT__PAGE_SIZE)
             ? WEFT_ENOMEM
             : 0;
}

#define WEFT__PAGE_BYTES (WEFT__PAGE_SIZE * sizeof(weft__record_t))
#define WEFT__HUGE_BYTES (2u << 20)

static int grow_directory(weft__index_t *ix, weft__alloc_stats_t *st,
                          uint32_t need) {
  /* The page directory may move; the pages themselves never do. */
  if (weft__grow(st, &ix->pages, &ix->page_slots, need, sizeof(*ix->pages), 16))
    return WEFT_ENOMEM;
  return weft__grow(st, &ix->blocks, &ix->block_cap, ix->nblocks + 1,
                    sizeof(*ix->blocks), 8);
}

int weft__index_reserve(weft__index_t *ix, weft__alloc_stats_t *st,
                        uint32_t slots) {
  uint32_t need =
      (uint32_t)(((uint64_t)slots + WEFT__PAGE_SIZE - 1) >> WEFT__PAGE_BITS);
  if (need <= ix->page_count)
    return 0;
  /* Pages come in blocks: what was asked for, but at least as many as
   * exist already (up to one 2 MiB block), so that one-by-one growth makes
   * few allocations; never past the capacity. */
  uint32_t max_pages =
      (uint32_t)(((uint64_t)ix->capacity + WEFT__PAGE_SIZE - 1) >>
                 WEFT__PAGE_BITS);
  uint32_t n = need - ix->page_count;
  uint32_t geo = ix->page_count ? ix->page_count : 1;
  if (geo > WEFT__HUGE_BYTES / WEFT__PAGE_BYTES)
    geo = WEFT__HUGE_BYTES / WEFT__PAGE_BYTES;
  if (n < geo)
    n = geo;
  if (n > max_pages - ix->page_count)
    n = max_pages - ix->page_count;
  if (ix->page_count + n < need)
    n = need - ix->page_count;
  int rc = grow_directory(ix, st, ix->page_count + n);
  if (rc)
    return rc;
  size_t bytes = (size_t)n * WEFT__PAGE_BYTES;
  bool huge = bytes >= WEFT__HUGE_BYTES;
  uint8_t *block = weft__alloc(st, bytes, huge ? WEFT__HUGE_BYTES : 64);
  if (!block)
    return WEFT_ENOMEM;
  weft__advise_huge(block, bytes);
  /* gen 0, not alive: never-issued slots. */
  memset(block, 0, bytes);
  ix->blocks[ix->nblocks++] = block;
  for (uint32_t i = 0; i < n; i++)
    ix->pages[ix->page_count++] =
        (weft__record_t *)(block + (size_t)i * WEFT__PAGE_BYTES);
  return 0;
}

int weft__index_check_room(const weft__index_t *ix, uint32_t n) {
  if (n <= weft__index_remaining(ix))
    return 0;
  /* Not enough: blame retirement only if live entities alone leave room. */
  return (uint64_t)ix->alive + n <= ix->capacity ? WEFT_ERETIRED : WEFT_EFULL;
}

void weft__index_release_rows(weft__index_t *ix, const weft_entity_t *ents,
                              uint32_t n) {
  /* Rows filled by a batch spawn hold consecutive handles of one
   * generation: such a run releases to one record value, stored in a
   * loop the compiler vectorizes. Any other row is a run of one. */
  weft__record_t *const *pages = ix->pages;
  const uint32_t max_gen = ix->max_gen;
  uint32_t retired = 0;
  for (uint32_t i = 0; i < n;) {
    const weft_entity_t e0 = ents[i];
    const uint32_t off = (uint32_t)e0 & WEFT__PAGE_MASK;
    const uint32_t lim =
        n - i < WEFT__PAGE_SIZE - off ? n - i : WEFT__PAGE_SIZE - off;
    uint32_t k = 1;
    while (k < lim && ents[i + k] == e0 + k)
      k++;
    const uint32_t v =
        weft__rec_dead((uint32_t)(e0 >> 32) & WEFT__GEN_MASK, max_gen);
    weft__record_t *restrict r = pages[(uint32_t)e0 >> WEFT__PAGE_BITS] + off;
    for (uint32_t j = 0; j < k; j++)
      r[j].v = v;
    retired += v & WEFT__REC_RETIRED ? k : 0;
    i += k;
  }
  ix->alive -= n;
  ix->retired += retired;
}

void weft__index_clear(weft__index_t *ix) {
  /* Live slots were released by their rows; what is still counted alive
   * is reserved by staged spawns, found by a walk over the records. */
  const uint32_t max_gen = ix->max_gen;
  for (uint32_t base = 0; ix->alive && base < ix->hwm;
       base += WEFT__PAGE_SIZE) {
    weft__record_t *page = ix->pages[base >> WEFT__PAGE_BITS];
    uint32_t n =
        ix->hwm - base < WEFT__PAGE_SIZE ? ix->hwm - base : WEFT__PAGE_SIZE;
    for (uint32_t i = 0; i < n; i++) {
      uint32_t v = page[i].v;
      if (!(v & WEFT__REC_RESERVED))
        continue;
      page[i].v = weft__rec_dead(v & WEFT__GEN_MASK, max_gen);
      ix->retired += (page[i].v & WEFT__REC_RETIRED) != 0;
      ix->alive--;
    }
  }
  /* A cleared world issues the same handles in the same order every time:
   * the sweep hands out slots 0, 1, 2, ... skipping retired ones. */
  ix->free_n = 0;
  ix->sweep = 0;
  ix->sweep_end = ix->hwm;
}
