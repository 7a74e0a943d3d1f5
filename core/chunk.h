/*
 * Chunks: fixed-size, cache-line aligned blocks that hold an archetype's
 * rows. A 64-byte header is followed by the entity handle array and one
 * 64-byte aligned array per component (or per field for SoA components).
 * Every chunk has a world-unique id so that an entity record can name its
 * chunk in 22 bits; empty chunks go to a per-world pool and keep their id.
 */
#ifndef WEFT_CORE_CHUNK_H
#define WEFT_CORE_CHUNK_H

#include <stdint.h>

#include "core/alloc.h"
#include "weft/entity.h"

#define WEFT__CHUNK_HEADER 64u
#define WEFT__CHUNK_ID_MAX (1u << 22u)

struct weft__archetype_t;

typedef struct weft__chunk_t {
  struct weft__archetype_t *arch; /* owner, NULL while pooled */
  struct weft__chunk_t *next_free;
  uint32_t count; /* rows in use */
  uint32_t id;    /* world-unique, index into the chunk table */
  uint32_t index; /* position in the archetype's chunk list */
  uint32_t node;  /* home NUMA node of the memory */
  uint8_t pad_[WEFT__CHUNK_HEADER - 2 * sizeof(void *) - 4 * sizeof(uint32_t)];
} weft__chunk_t;

_Static_assert(sizeof(weft__chunk_t) == WEFT__CHUNK_HEADER,
               "chunk header must be one cache line");

/* A chunk table entry. The owner sits beside the chunk pointer so that a
 * lookup by handle reaches the archetype without touching the chunk's
 * header line: one cache miss fewer on a random get. */
typedef struct weft__chunk_slot_t {
  weft__chunk_t *chunk;
  struct weft__archetype_t *arch; /* NULL while pooled */
} weft__chunk_slot_t;

/* A block of consecutive chunks allocated at once. */
typedef struct weft__slab_t {
  void *mem;
  size_t bytes;
} weft__slab_t;

typedef struct weft__chunk_store_t {
  weft__chunk_slot_t *table; /* id -> chunk and owner */
  uint32_t count;            /* ids issued */
  uint32_t cap;
  weft__slab_t *slabs;
  uint32_t nslabs;
  uint32_t slab_cap;
  weft__chunk_t *free_list;
  uint32_t free_count;
  uint32_t chunk_size;
} weft__chunk_store_t;

static inline uint8_t *weft__chunk_bytes(weft__chunk_t *c) {
  return (uint8_t *)c;
}

/* The handle array of a chunk (it follows the header). */
static inline weft_entity_t *weft__chunk_entities(weft__chunk_t *c) {
  return (weft_entity_t *)(weft__chunk_bytes(c) + WEFT__CHUNK_HEADER);
}

void weft__chunks_init(weft__chunk_store_t *cs, uint32_t chunk_size);
void weft__chunks_fini(weft__chunk_store_t *cs);

/*
 * A chunk from the pool, or from a newly allocated slab; NULL when memory
 * or chunk ids run out (*err says which). Slabs grow geometrically up to
 * 2 MiB, and 2 MiB slabs are aligned for transparent huge pages, so that
 * an archetype's chunks are mostly consecutive in memory and a scan over
 * them costs few TLB misses.
 */
weft__chunk_t *weft__chunk_acquire(weft__chunk_store_t *cs,
                                   weft__alloc_stats_t *st, int *err);

/* Makes sure the pool holds at least n chunks. */
int weft__chunks_reserve(weft__chunk_store_t *cs, weft__alloc_stats_t *st,
                         uint32_t n);

/* Returns an empty chunk to the pool. */
void weft__chunk_release(weft__chunk_store_t *cs, weft__chunk_t *c);

#endif /* WEFT_CORE_CHUNK_H */
