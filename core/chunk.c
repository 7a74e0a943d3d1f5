/* Chunk allocation, the chunk id table and the per-world empty-chunk pool. */
#include "core/chunk.h"

#include <string.h>

#include "weft/error.h"

void weft__chunks_init(weft__chunk_store_t *cs, uint32_t chunk_size) {
  memset(cs, 0, sizeof(*cs));
  cs->chunk_size = chunk_size;
}

void weft__chunks_fini(weft__chunk_store_t *cs) {
  for (uint32_t i = 0; i < cs->count; i++)
    weft__free(cs->table[i].chunk, cs->chunk_size, 64);
  weft__free(cs->table, cs->cap * sizeof(*cs->table), 16);
  memset(cs, 0, sizeof(*cs));
}

weft__chunk_t *weft__chunk_acquire(weft__chunk_store_t *cs,
                                   weft__alloc_stats_t *st, int *err) {
  weft__chunk_t *c = cs->free_list;
  if (c) {
    cs->free_list = c->next_free;
    cs->free_count--;
    c->next_free = NULL;
    return c;
  }
  if (cs->count >= WEFT__CHUNK_ID_MAX) {
    *err = WEFT_ELIMIT;
    return NULL;
  }
  if (cs->count == cs->cap) {
    uint32_t n = cs->cap ? cs->cap * 2 : 64;
    void *t = weft__realloc(st, cs->table, cs->cap * sizeof(*cs->table),
                            n * sizeof(*cs->table));
    if (!t) {
      *err = WEFT_ENOMEM;
      return NULL;
    }
    cs->table = t;
    cs->cap = n;
  }
  c = weft__alloc(st, cs->chunk_size, 64);
  if (!c) {
    *err = WEFT_ENOMEM;
    return NULL;
  }
  memset(c, 0, sizeof(*c));
  c->id = cs->count;
  cs->table[cs->count].chunk = c;
  cs->table[cs->count++].arch = NULL;
  return c;
}

void weft__chunk_release(weft__chunk_store_t *cs, weft__chunk_t *c) {
  c->arch = NULL;
  c->count = 0;
  cs->table[c->id].arch = NULL;
  c->next_free = cs->free_list;
  cs->free_list = c;
  cs->free_count++;
}
