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
  for (uint32_t p = 0; p < ix->page_count; p++)
    weft__free(ix->pages[p], WEFT__PAGE_SIZE * sizeof(weft__record_t), 64);
  weft__free(ix->pages, ix->page_slots * sizeof(*ix->pages), 16);
  memset(ix, 0, sizeof(*ix));
}

int weft__index_reserve(weft__index_t *ix, weft__alloc_stats_t *st,
                        uint32_t slots) {
  uint32_t need =
      (uint32_t)(((uint64_t)slots + WEFT__PAGE_SIZE - 1) >> WEFT__PAGE_BITS);
  if (need <= ix->page_count)
    return 0;
  if (need > ix->page_slots) {
    /* The page directory may move; the pages themselves never do. */
    uint32_t n = ix->page_slots ? ix->page_slots : 16;
    while (n < need)
      n *= 2;
    void *p = weft__realloc(st, ix->pages, ix->page_slots * sizeof(*ix->pages),
                            n * sizeof(*ix->pages));
    if (!p)
      return WEFT_ENOMEM;
    ix->pages = p;
    ix->page_slots = n;
  }
  while (ix->page_count < need) {
    weft__record_t *page =
        weft__alloc(st, WEFT__PAGE_SIZE * sizeof(weft__record_t), 64);
    if (!page)
      return WEFT_ENOMEM;
    /* gen 0, not alive: a never-issued slot. */
    memset(page, 0, WEFT__PAGE_SIZE * sizeof(weft__record_t));
    ix->pages[ix->page_count++] = page;
  }
  return 0;
}

int weft__index_check_room(const weft__index_t *ix, uint32_t n) {
  if (n <= weft__index_remaining(ix))
    return 0;
  /* Not enough: blame retirement only if live entities alone leave room. */
  return (uint64_t)ix->alive + n <= ix->capacity ? WEFT_ERETIRED : WEFT_EFULL;
}

void weft__index_clear(weft__index_t *ix) {
  for (uint32_t i = 0; i < ix->hwm; i++) {
    weft__record_t *r = weft__index_rec(ix, i);
    if (!(r->gen & WEFT__REC_ALIVE))
      continue; /* free or retired already */
    uint32_t gen = r->gen & WEFT__GEN_MASK;
    ix->alive--;
    if (gen >= ix->max_gen) {
      r->gen = WEFT__REC_RETIRED | gen;
      r->loc = WEFT__NIL;
      ix->retired++;
    } else {
      r->gen = gen;
    }
  }
  /* A cleared world issues the same handles in the same order every time:
   * the sweep hands out slots 0, 1, 2, ... skipping retired ones. */
  ix->free_head = WEFT__NIL;
  ix->sweep = 0;
  ix->sweep_end = ix->hwm;
}
