/* SPDX-License-Identifier: MIT */
/*
 * Chunks: fixed-size groups of an archetype's rows.
 *
 * A chunk holds row_cap rows (as many as fit the world's chunk size, 16 KiB
 * by default), and inside a chunk every component, or every field of an SoA
 * component, is its own 64-byte aligned array. The arrays do not sit in one
 * block per chunk, though: an archetype allocates its chunks in segments,
 * and a segment lays out each array of all its chunks back to back ("column
 * major"). Chunk k of a segment owns rows [k * row_cap, (k + 1) * row_cap)
 * of every segment-wide array. A scan over consecutive chunks therefore
 * streams long contiguous arrays, which hardware prefetchers follow, while
 * a chunk stays a fixed unit of rows for iteration and (later) scheduling.
 *
 * The header lives apart from the rows and records the chunk's row count,
 * its home NUMA node and a base pointer per array. Every chunk has a
 * world-unique id so that an entity record can name its chunk and row in
 * 31 bits (see weft__chunk_row_bits()).
 */
#ifndef WEFT_CORE_CHUNK_H
#define WEFT_CORE_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "core/alloc.h"
#include "weft/entity.h"

#include "weft/world.h"

/*
 * Bits an entity record spends on the row: enough for the most rows a
 * chunk of this size can hold (a row is at least its 8-byte handle). The
 * other 31 - row_bits name the chunk, so a world has 2^31 row addresses:
 * 16 GiB of chunks at the smallest row, more with larger rows.
 */
static inline uint32_t weft__chunk_row_bits(uint32_t chunk_size) {
  uint32_t rows = chunk_size / (uint32_t)sizeof(weft_entity_t);
  if (rows > WEFT_CHUNK_ROWS_MAX)
    rows = WEFT_CHUNK_ROWS_MAX;
  return 31u - (uint32_t)__builtin_clz(rows); /* chunk sizes are powers of 2 */
}

struct weft__archetype_t;

typedef struct weft__chunk_t {
  struct weft__archetype_t *arch; /* owner, for life */
  uint8_t **bases;                /* array i of the chunk starts at bases[i] */
  weft_entity_t *entities;        /* row_cap handles */
  uint32_t *versions; /* per column: change version of its last write */
  /* Per tracked column (core/dirty.h): the world tick of its last write,
   * 0 never; NULL when the archetype tracks none. */
  uint64_t *ticks;
  uint32_t count;    /* rows in use */
  uint32_t id;       /* world-unique, index into the chunk table */
  uint32_t index;    /* position in the archetype's chunk list */
  uint32_t node;     /* home NUMA node of the memory */
  uint32_t sversion; /* change version of the last structural change */
  /* Per tracked column k below WEFT__ALL_DIRTY_COLS (core/dirty.c): every
   * row of the chunk is dirty whatever its byte says (WEFT__ALL_DIRTY), or
   * a reader is writing that into the bytes (WEFT__ALL_EXPANDING). What
   * fills the header line to 64 bytes. */
  uint8_t all_dirty[64 - 5 * sizeof(void *) - 5 * sizeof(uint32_t)];
} weft__chunk_t;

/* Tracked columns with an all-rows-dirty flag in the chunk header; the
 * others are always marked row by row. */
#define WEFT__ALL_DIRTY_COLS                                                   \
  (64u - 5u * (uint32_t)sizeof(void *) - 5u * (uint32_t)sizeof(uint32_t))
enum { WEFT__ALL_DIRTY = 1, WEFT__ALL_EXPANDING = 2 };

_Static_assert(sizeof(weft__chunk_t) == 64, "a chunk header is one cache line");

/*
 * Stamps column col of chunk c with change version v: the column was (or
 * is about to be) written, so `changed` filters (system.h) see the chunk.
 * Several pool workers may stamp one chunk at once (writes to different
 * rows through weft_get_many_ex()), so the store is a relaxed atomic,
 * which compiles to a plain store; it is skipped when the column already
 * carries v, so that a run of writes into one chunk dirties its version
 * line once.
 */
static inline void weft__chunk_stamp(weft__chunk_t *c, uint32_t col,
                                     uint32_t v) {
  uint32_t *p = &c->versions[col];
  if (__atomic_load_n(p, __ATOMIC_RELAXED) != v)
    __atomic_store_n(p, v, __ATOMIC_RELAXED);
}

/* Array bases a chunk table entry holds itself (the rest stay behind the
 * header's bases pointer). */
#define WEFT__SLOT_BASES 4u

/*
 * A chunk table entry, one cache line. A lookup by handle needs the
 * handle array (to validate), the owner (whose getmap names the array
 * that holds a component) and that array's base (to address the row):
 * they sit here, copied from the header, so that the lookup's dependent
 * chain reads this line and the archetype's getmap, never the header or
 * its bases array. The first WEFT__SLOT_BASES arrays' bases are inline;
 * `none` is always NULL, the base getmap names for a component that has
 * no inline array. A chunk keeps its owner and memory for life. The
 * public header's weft_get_slot_t_ mirrors the first two fields (see the
 * assertions in world.c).
 */
typedef struct weft__chunk_slot_t {
  const weft_entity_t *entities;
  struct weft__archetype_t *arch;
  weft__chunk_t *chunk;
  uint8_t *base[WEFT__SLOT_BASES];
  uint8_t *none;
} weft__chunk_slot_t;

_Static_assert(sizeof(weft__chunk_slot_t) == 64,
               "a chunk table entry is one cache line");

/* The world's chunk id table. */
typedef struct weft__chunk_store_t {
  weft__chunk_slot_t *table; /* id -> chunk and owner */
  uint32_t count;            /* ids issued */
  uint32_t cap;
  uint32_t chunk_size;
  uint32_t id_max; /* ids an entity record can name */
  /* Ids of freed chunks (trimmed, pruned, rebuilt away), reissued before
   * new ones so that a world that grows and shrinks again and again does
   * not run out of ids. A stack with room for every id issued, so that
   * releasing never allocates. */
  uint32_t *free;
  uint32_t nfree;
  uint32_t free_cap;
} weft__chunk_store_t;

void weft__chunks_init(weft__chunk_store_t *cs, uint32_t chunk_size);
void weft__chunks_fini(weft__chunk_store_t *cs);

/*
 * Issues ids for n new chunks of archetype a (headers at chunks[0..n),
 * their bases set: the table entries copy the first narrays of them),
 * freed ids first. WEFT_ELIMIT when the id space is exhausted,
 * WEFT_ENOMEM; nothing is issued on failure.
 */
int weft__chunks_register(weft__chunk_store_t *cs, weft__alloc_stats_t *st,
                          struct weft__archetype_t *a, uint32_t narrays,
                          weft__chunk_t *chunks, uint32_t n);

/* Ids in use: issued and not freed. */
static inline uint32_t weft__chunks_used(const weft__chunk_store_t *cs) {
  return cs->count - cs->nfree;
}

/* Chunk @p id was freed: its table entry is cleared and the id is issued
 * again later. Cannot fail. */
void weft__chunks_release(weft__chunk_store_t *cs, uint32_t id);

#endif /* WEFT_CORE_CHUNK_H */
