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
  memset(cs, 0, sizeof(*cs));
}

int weft__chunks_register(weft__chunk_store_t *cs, weft__alloc_stats_t *st,
                          struct weft__archetype_t *a, uint32_t narrays,
                          weft__chunk_t *chunks, uint32_t n) {
  if (n > cs->id_max - cs->count)
    return WEFT_ELIMIT;
  if (weft__grow(st, &cs->table, &cs->cap, cs->count + n, sizeof(*cs->table),
                 64))
    return WEFT_ENOMEM;
  for (uint32_t i = 0; i < n; i++) {
    chunks[i].id = cs->count + i;
    weft__chunk_slot_t *slot = &cs->table[cs->count + i];
    *slot = (weft__chunk_slot_t){
        .entities = chunks[i].entities, .arch = a, .chunk = &chunks[i]};
    for (uint32_t k = 0; k < narrays && k < WEFT__SLOT_BASES; k++)
      slot->base[k] = chunks[i].bases[k];
  }
  cs->count += n;
  return 0;
}
