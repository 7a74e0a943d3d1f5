/* SPDX-License-Identifier: MIT */
/* The world's chunk id table. Chunk memory itself is owned by archetypes
 * (see archetype.c), which lay their chunks out in column-major segments. */
#include "core/chunk.h"

#include <string.h>

#include "weft/error.h"

void weft__chunks_init(weft__chunk_store_t *cs, uint32_t chunk_size) {
  memset(cs, 0, sizeof(*cs));
  cs->chunk_size = chunk_size;
  cs->id_max = 1u << (31u - weft__chunk_row_bits(chunk_size));
}

void weft__chunks_fini(weft__chunk_store_t *cs) {
  weft__free(cs->table, cs->cap * sizeof(*cs->table), 16);
  weft__free(cs->free, cs->free_cap * sizeof(*cs->free), 16);
  memset(cs, 0, sizeof(*cs));
}

int weft__chunks_register(weft__chunk_store_t *cs, weft__alloc_stats_t *st,
                          struct weft__archetype_t *a, uint32_t narrays,
                          weft__chunk_t *chunks, uint32_t n) {
  if (n > cs->id_max - weft__chunks_used(cs))
    return WEFT_ELIMIT;
  const uint32_t reused = n < cs->nfree ? n : cs->nfree;
  const uint32_t fresh = n - reused;
  if (weft__grow(st, &cs->table, &cs->cap, cs->count + fresh,
                 sizeof(*cs->table), 64) ||
      weft__grow(st, &cs->free, &cs->free_cap, cs->count + fresh,
                 sizeof(*cs->free), 64))
    return WEFT_ENOMEM;
  for (uint32_t i = 0; i < n; i++) {
    chunks[i].id = i < reused ? cs->free[--cs->nfree] : cs->count++;
    weft__chunk_slot_t *slot = &cs->table[chunks[i].id];
    *slot = (weft__chunk_slot_t){
        .entities = chunks[i].entities, .arch = a, .chunk = &chunks[i]};
    for (uint32_t k = 0; k < narrays && k < WEFT__SLOT_BASES; k++)
      slot->base[k] = chunks[i].bases[k];
  }
  return 0;
}

void weft__chunks_release(weft__chunk_store_t *cs, uint32_t id) {
  cs->table[id] = (weft__chunk_slot_t){0};
  cs->free[cs->nfree++] = id; /* room for every issued id: see register */
}
