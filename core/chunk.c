/* Chunk allocation, the chunk id table and the per-world empty-chunk pool. */
#include "core/chunk.h"

#include <string.h>

#include "weft/error.h"

void weft__chunks_init(weft__chunk_store_t *cs, uint32_t chunk_size) {
  memset(cs, 0, sizeof(*cs));
  cs->chunk_size = chunk_size;
}

void weft__chunks_fini(weft__chunk_store_t *cs) {
  for (uint32_t i = 0; i < cs->nslabs; i++)
    weft__free(cs->slabs[i].mem, cs->slabs[i].bytes, 64);
  weft__free(cs->slabs, cs->slab_cap * sizeof(*cs->slabs), 16);
  weft__free(cs->table, cs->cap * sizeof(*cs->table), 16);
  memset(cs, 0, sizeof(*cs));
}

#define WEFT__SLAB_MAX (2u << 20)

/* Chunks in the next slab: as many as already exist (doubling), from 4 up
 * to a 2 MiB slab, and never past the chunk id space. */
static uint32_t next_slab_chunks(const weft__chunk_store_t *cs) {
  uint32_t max = WEFT__SLAB_MAX / cs->chunk_size;
  if (max < 1)
    max = 1;
  uint32_t n = cs->count < 4 ? 4 : cs->count;
  if (n > max)
    n = max;
  if (n > WEFT__CHUNK_ID_MAX - cs->count)
    n = WEFT__CHUNK_ID_MAX - cs->count;
  return n;
}

/* Allocates a slab of at least min chunks and puts its chunks in the pool,
 * lowest address first out, so that an archetype filling up takes them in
 * address order. */
static int add_slab(weft__chunk_store_t *cs, weft__alloc_stats_t *st,
                    uint32_t min) {
  uint32_t n = next_slab_chunks(cs);
  if (n < min && min <= WEFT__CHUNK_ID_MAX - cs->count)
    n = min;
  if (n == 0 || n < min)
    return WEFT_ELIMIT;
  size_t bytes = (size_t)n * cs->chunk_size;
  if (weft__grow(st, &cs->slabs, &cs->slab_cap, cs->nslabs + 1,
                 sizeof(*cs->slabs), 16) ||
      weft__grow(st, &cs->table, &cs->cap, cs->count + n, sizeof(*cs->table),
                 64))
    return WEFT_ENOMEM;
  /* Slabs of 2 MiB and more start on a huge-page boundary; the kernel backs
   * every whole 2 MiB page of the slab with a huge page when it can. */
  bool huge = bytes >= WEFT__SLAB_MAX;
  uint8_t *mem = weft__alloc(st, bytes, huge ? WEFT__SLAB_MAX : 64);
  if (!mem)
    return WEFT_ENOMEM;
  weft__advise_huge(mem, bytes);
  cs->slabs[cs->nslabs++] = (weft__slab_t){mem, bytes};
  for (uint32_t i = n; i-- > 0;) {
    weft__chunk_t *c = (weft__chunk_t *)(mem + (size_t)i * cs->chunk_size);
    memset(c, 0, sizeof(*c));
    c->id = cs->count + i;
    cs->table[c->id] = (weft__chunk_slot_t){c, NULL};
    c->next_free = cs->free_list;
    cs->free_list = c;
  }
  cs->count += n;
  cs->free_count += n;
  return 0;
}

int weft__chunks_reserve(weft__chunk_store_t *cs, weft__alloc_stats_t *st,
                         uint32_t n) {
  /* One slab for the whole shortfall: a batch gets consecutive chunks and
   * no slack beyond what it asked for. */
  if (cs->free_count < n)
    return add_slab(cs, st, n - cs->free_count);
  return 0;
}

weft__chunk_t *weft__chunk_acquire(weft__chunk_store_t *cs,
                                   weft__alloc_stats_t *st, int *err) {
  if (!cs->free_list) {
    int rc = add_slab(cs, st, 1);
    if (rc) {
      *err = rc;
      return NULL;
    }
  }
  weft__chunk_t *c = cs->free_list;
  cs->free_list = c->next_free;
  cs->free_count--;
  c->next_free = NULL;
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
