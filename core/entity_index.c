/* The entity index: paged generational records and the free list. */
#include "core/entity_index.h"

#include <string.h>

#include "weft/error.h"

void weft__index_init(weft__index_t *ix, uint32_t capacity, uint32_t max_gen,
                      uint8_t tag) {
  memset(ix, 0, sizeof(*ix));
  ix->free_head = WEFT__NIL;
  ix->capacity = capacity;
  ix->max_gen = max_gen;
  ix->tag = (uint64_t)tag << 56;
}

void weft__index_fini(weft__index_t *ix) {
  for (uint32_t b = 0; b < ix->nblocks; b++)
    weft__free(ix->blocks[b], 0, 64);
  weft__free(ix->blocks, ix->block_cap * sizeof(*ix->blocks), 16);
  weft__free(ix->pages, ix->page_slots * sizeof(*ix->pages), 16);
  memset(ix, 0, sizeof(*ix));
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

void weft__index_clear(weft__index_t *ix) {
  /* Counters live in locals and pages are walked whole: the record stores
   * could otherwise alias the index's fields and force reloads. */
  uint32_t alive = ix->alive, retired = ix->retired;
  const uint32_t max_gen = ix->max_gen;
  for (uint32_t base = 0; base < ix->hwm; base += WEFT__PAGE_SIZE) {
    weft__record_t *page = ix->pages[base >> WEFT__PAGE_BITS];
    uint32_t n =
        ix->hwm - base < WEFT__PAGE_SIZE ? ix->hwm - base : WEFT__PAGE_SIZE;
    for (uint32_t i = 0; i < n; i++) {
      if (!(page[i].gen & WEFT__REC_ALIVE))
        continue; /* free and retired slots stay as they are */
      alive--;
      retired += weft__rec_release(&page[i], max_gen);
    }
  }
  ix->alive = alive;
  ix->retired = retired;
  /* A cleared world issues the same handles in the same order every time:
   * the sweep hands out slots 0, 1, 2, ... skipping retired ones. */
  ix->free_head = WEFT__NIL;
  ix->sweep = 0;
  ix->sweep_end = ix->hwm;
}
