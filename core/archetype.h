/* SPDX-License-Identifier: MIT */
/*
 * Archetypes: the tables that hold every entity with one exact component
 * signature (present components plus which of them are disabled).
 *
 * Rows are dense across the archetype's chunks: every chunk is full except
 * the last, so row r lives in chunk r / row_cap. Removal swap-removes the
 * archetype's last row into the hole. The archetype graph caches each
 * add/remove/enable/disable transition with a precomputed copy plan, so a
 * move costs one lookup plus the copies.
 */
#ifndef WEFT_CORE_ARCHETYPE_H
#define WEFT_CORE_ARCHETYPE_H

#include <stddef.h>
#include <stdint.h>

#include "core/bitset.h"
#include "core/chunk.h"
#include "core/require.h"

struct weft_world_t;

/* One array in a chunk: a whole AoS component or one field of an SoA one. */
typedef struct weft__array_t {
  uint32_t elem;      /* bytes per row */
  uint32_t stride;    /* bytes per chunk: row_cap * elem, 64-byte rounded */
  uint32_t value_off; /* where the bytes sit inside the component value */
} weft__array_t;

/* One data component of an archetype (tags have no column). */
typedef struct weft__column_t {
  weft_component_t comp;
  uint32_t size;        /* component value size */
  uint16_t first_array; /* into the archetype's arrays */
  uint16_t array_count; /* 1 for AoS, field count for SoA */
  uint16_t soa;         /* nonzero when stored field-level SoA */
  /* Tracked (WEFT_COMPONENT_TRACK_DIRTY): k + 1 for the archetype's k-th
   * dirty array (core/dirty.h); 0: untracked. */
  uint16_t dirty;
} weft__column_t;

/* One array copy of a move: source array, destination array, bytes. */
typedef struct weft__copy_t {
  uint32_t src;
  uint32_t dst;
  uint32_t elem;
} weft__copy_t;

/* A block of consecutive chunks allocated at once, column-major: every
 * array of all its chunks back to back (see chunk.h). */
typedef struct weft__segment_t {
  uint8_t *mem;
  size_t bytes;
  /* The pool mem came from (its hooks' alloc_on), NULL for weft__alloc. */
  struct weft_pool_t *pool;
  weft__chunk_t *headers; /* the segment's chunk headers */
  uint8_t **bases;        /* nchunks * narrays base pointers */
  uint32_t nchunks;
} weft__segment_t;

enum {
  WEFT__EDGE_ADD = 1,
  WEFT__EDGE_REMOVE,
  WEFT__EDGE_DISABLE,
  WEFT__EDGE_ENABLE,
  /* A relation's tag entering or leaving (relation.c): the same moves as
   * ADD and REMOVE under keys the public calls never follow, so that
   * those can refuse relation ids on the cold path that builds edges. */
  WEFT__EDGE_REL_ADD,
  WEFT__EDGE_REL_REMOVE
};

struct weft__archetype_t;
struct weft__column_t;

/* One (relation, target) pair of a dense relation in an archetype's
 * signature (core/archetype_pair.c). Pairs are kept sorted by (rel,
 * target); the relation's own bit in `present` stays the wildcard. */
typedef struct weft__pair_t {
  weft_entity_t target;
  uint32_t rel; /* the relation's component id */
  uint32_t pad;
} weft__pair_t;

/* Pair transitions (core/archetype_pair.c): add (rel, target); replace
 * every pair of rel with (rel, target) (an exclusive relation's new
 * target); remove (rel, target); remove every pair of rel. */
enum {
  WEFT__PAIR_ADD = 1,
  WEFT__PAIR_SET,
  WEFT__PAIR_REMOVE,
  WEFT__PAIR_REMOVE_ALL
};

typedef struct weft__edge_t {
  uint32_t key; /* op << 16 | component; 0 = empty slot */
  uint16_t plan_len;
  /* ADD edges of a component with requirements (core/require.h): the
   * default writes of the components the edge adds besides it, stored
   * after the plan (weft__edge_defaults()). 0 for every other edge. */
  uint16_t ndefaults;
  struct weft__archetype_t *to;
  weft__copy_t *plan; /* arrays both archetypes share */
  /* ADD edges: the added component's column in the target (NULL for a
   * tag), so that writing its value needs no column lookup. */
  const struct weft__column_t *col;
} weft__edge_t;

/*
 * Where weft_get() finds a component's value through a chunk table entry:
 * the entry's byte at `off` holds the base of the component's array (NULL
 * when the entry has no inline base for it), `size` bytes per row. No AoS
 * column (absent, a tag, SoA): the NULL base and size 0, so the address
 * computes to NULL. An AoS column that is not inline (array
 * WEFT__SLOT_BASES or later, or a value of WEFT__GETCOL_COLD bytes or
 * more): the NULL base and size WEFT__GETCOL_COLD, which sends the lookup
 * to colmap. The public header's weft_get_col_t_ mirrors it.
 */
typedef struct weft__getcol_t {
  uint16_t off;
  uint16_t size;
} weft__getcol_t;

#define WEFT__GETCOL_COLD 0x8000u

typedef struct weft__archetype_t {
  /* First, so that a chunk table entry's owner pointer is the getmap's
   * address too: the inline weft_get() indexes it directly. */
  weft__getcol_t getmap[WEFT_MAX_COMPONENTS + 1];
  uint32_t id;
  /* Creation stamp (weft_world_t.arch_born when made): creation order,
   * which ids no longer follow once freed ids are reused. */
  uint32_t born;
  /* Marked for removal (weft__archetypes_remove()). */
  bool gone;
  uint32_t row_cap; /* rows per chunk */
  uint32_t count;   /* rows in all chunks */
  uint32_t ncols;
  uint32_t narrays;
  uint32_t ncomps; /* present components, tags included */
  /* Tracked columns: the last ndirty arrays are their dirty bytes, one per
   * row, in column order (core/dirty.h). 0 for most archetypes. */
  uint32_t ndirty;
  weft__mask_t present;  /* components the rows have */
  weft__mask_t disabled; /* subset of present that is disabled */
  weft__mask_t enabled;  /* present & ~disabled */
  weft__column_t *cols;
  weft__array_t *arrays;
  weft_component_t *comps; /* ncomps ids, ascending */
  uint32_t entity_stride;  /* bytes of handles per chunk */
  bool contiguous;        /* chunks of a segment continue each other's arrays */
  weft__chunk_t **chunks; /* [0, nchunks) hold rows; the rest are spares */
  /* chunks[nchunks - 1], or NULL: one load instead of two dependent ones
   * on the path of every spawn, move and despawn. Kept by add_chunk, the
   * swap-remove that empties a chunk, the bulk compaction and clear. */
  weft__chunk_t *tail;
  uint32_t nchunks;
  uint32_t chunk_total; /* chunks allocated in segments */
  uint32_t chunk_cap;
  weft__segment_t *segs;
  uint32_t nsegs;
  uint32_t seg_cap;
  weft__edge_t *edges; /* open addressing, edge_cap a power of two */
  uint32_t edge_cap;
  uint32_t edge_count;
  const weft__edge_t *last_edge; /* the edge followed last (NULL: none) */
  /* The world's change version, stamped on chunks that receive rows. */
  const uint32_t *change_version;
  uint16_t colmap[WEFT_MAX_COMPONENTS + 1]; /* id -> column + 1, 0: none */
  /* Dense relation pairs, part of the signature (core/archetype_pair.c):
   * npairs entries sorted by (rel, target); NULL and 0 for most. */
  weft__pair_t *pairs;
  uint32_t npairs;
  /* The cached pair transitions, keyed by (op, rel, target): open
   * addressing kept apart from `edges`, so that the component graph's
   * lookup stays as it is. */
  uint32_t pedge_cap;
  uint32_t pedge_count;
  struct weft__pair_edge_t *pedges;
} weft__archetype_t;

/* A cached pair transition: the target handle, then an ordinary edge
 * whose key is op << 16 | rel (never 0). */
typedef struct weft__pair_edge_t {
  weft_entity_t target;
  weft__edge_t e;
} weft__pair_edge_t;

/* The archetype with exactly this signature, created if needed. */
int weft__archetype_get(struct weft_world_t *w, const weft__mask_t *present,
                        const weft__mask_t *disabled, weft__archetype_t **out);

/* weft__archetype_get() for a signature with dense relation pairs (n
 * sorted pairs, copied). */
int weft__archetype_get_pairs(struct weft_world_t *w,
                              const weft__mask_t *present,
                              const weft__mask_t *disabled,
                              const weft__pair_t *pairs, uint32_t npairs,
                              weft__archetype_t **out);

/*
 * Snapshot loads (core/snapshot.c): creates the archetype of a signature
 * the world does not hold with id `id` (a vacant one, or one at or past
 * the id bound: the ids skipped become vacant and free) and creation
 * stamp `born` (not below the world's next one, which then follows it).
 * Created in stamp order, the archetypes of a saved world come back with
 * its ids and stamps. Owner thread.
 */
int weft__archetype_restore(struct weft_world_t *w, uint32_t id, uint32_t born,
                            const weft__mask_t *present,
                            const weft__mask_t *disabled,
                            const weft__pair_t *pairs, uint32_t npairs,
                            weft__archetype_t **out);

/* Builds edge e's copy plan from a to b (and, for an ADD of component
 * `added`, the defaults of its requirements); archetype.c's, shared with
 * the pair transitions. */
int weft__archetype_plan(struct weft_world_t *w, const weft__archetype_t *a,
                         const weft__archetype_t *b, weft__edge_t *e,
                         weft_component_t added);

/* Follows (or creates) the pair transition op (rel, target) from a
 * (core/archetype_pair.c). The edge's `col` is rel's column in the
 * target archetype for ADD and SET (a dense payload), else NULL. */
int weft__archetype_pair_edge(struct weft_world_t *w, weft__archetype_t *a,
                              uint32_t op, weft_component_t rel,
                              weft_entity_t target, const weft__edge_t **out);

/* Whether a's signature holds the pair (rel, target). */
bool weft__archetype_has_pair(const weft__archetype_t *a, weft_component_t rel,
                              weft_entity_t target);

/* The first target (ascending) of a's pairs of rel, or WEFT_ENTITY_NULL. */
weft_entity_t weft__archetype_pair_first(const weft__archetype_t *a,
                                         weft_component_t rel);

/* True when some pair of a names a target that is not live: no row can
 * enter such an archetype again (an edge needs a live target), and a
 * target's death moves its sources out, so weft_world_compact() may
 * prune it once it holds no row (a death whose move ran out of memory
 * may have left one behind: check a->count too). */
bool weft__archetype_pair_target_dead(const struct weft_world_t *w,
                                      const weft__archetype_t *a);

/* A hash of a's pairs (0 without pairs), mixed into the signature's. */
uint64_t weft__pairs_hash(const weft__pair_t *pairs, uint32_t n);

/* Forgets a's pair transitions into archetypes with ids from keep on
 * (an archetype rollback), and frees them all when keep is 0. */
void weft__archetype_pair_edges_drop(weft__archetype_t *a, uint32_t keep);

/* Whether archetype `to` is going away (weft__archetype_pair_edges_drop_if). */
typedef bool (*weft__archetype_gone_fn)(const weft__archetype_t *to, void *ctx);

/* Forgets a's pair transitions into archetypes for which gone() is true:
 * for weft_world_compact(), which prunes archetypes anywhere in the list
 * (a rollback drops the newest ones with weft__archetype_pair_edges_drop). */
void weft__archetype_pair_edges_drop_if(weft__archetype_t *a,
                                        weft__archetype_gone_fn gone,
                                        void *ctx);

/*
 * Undoes the archetypes created since @p mark (weft__archetypes_mark()),
 * when the call that created them failed before any row landed there:
 * they are removed as weft__archetypes_remove() does, so that the failed
 * call leaves nothing observable behind (the digest, archetype counts).
 * Only the newest archetypes that hold no row and own no chunk go. Owner
 * thread.
 */
void weft__archetypes_rollback(struct weft_world_t *w, uint32_t mark);

/*
 * Removes every archetype marked `gone` (none of them the empty
 * signature): they leave the signature table, the queries' matches
 * (temporary queries' too), the edges of the others that lead to them and
 * the spawn memos; their chunk ids leave the chunk table; their ids go to
 * the free list that weft__archetype_get() takes the lowest of, and the
 * other archetypes keep theirs. The marked archetypes are detached, not
 * freed: the caller frees them (weft__archetype_free()). Cannot fail.
 * Owner thread.
 */
void weft__archetypes_remove(struct weft_world_t *w, bool free_them);

/*
 * Rebuilds archetype a's chunk list into one segment of exactly the chunks
 * its rows use, rows in place: each used chunk keeps its id, count and
 * stamps, so that entity records stay valid. The old segments are freed;
 * *freed gets the bytes released (net). WEFT_ENOMEM leaves a as it was.
 * Owner thread, outside iterations and drains.
 */
int weft__archetype_rebuild(struct weft_world_t *w, weft__archetype_t *a,
                            uint64_t *freed);

/* Creates the transition edge op/comp from a (cold path of the lookup). */
int weft__archetype_edge_slow(struct weft_world_t *w, weft__archetype_t *a,
                              uint32_t op, weft_component_t comp,
                              const weft__edge_t **out);

/* Where an edge's default writes start: after its plan, 8-aligned. */
static inline const weft__edge_default_t *
weft__edge_defaults(const weft__edge_t *e) {
  size_t at = ((size_t)e->plan_len * sizeof(weft__copy_t) + 7u) & ~(size_t)7;
  return (const weft__edge_default_t *)((const unsigned char *)e->plan + at);
}

/* The edge slot a key hashes to first. */
static inline uint32_t weft__edge_hash(uint32_t key, uint32_t cap) {
  return (key * 0x9e3779b1u) >> 16 & (cap - 1);
}

/* Follows (or creates) the transition edge op/comp from a. */
static inline int weft__archetype_edge(struct weft_world_t *w,
                                       weft__archetype_t *a, uint32_t op,
                                       weft_component_t comp,
                                       const weft__edge_t **out) {
  uint32_t key = op << 16 | comp;
  /* Runs of the same change (add B to every entity of a query) follow the
   * same edge again and again: try the last one first. */
  if (a->last_edge && a->last_edge->key == key) {
    *out = a->last_edge;
    return 0;
  }
  if (a->edge_cap) {
    uint32_t mask = a->edge_cap - 1;
    for (uint32_t i = weft__edge_hash(key, a->edge_cap);; i = (i + 1) & mask) {
      const weft__edge_t *e = &a->edges[i];
      if (e->key == key) {
        a->last_edge = e;
        *out = e;
        return 0;
      }
      if (e->key == 0)
        break;
    }
  }
  return weft__archetype_edge_slow(w, a, op, comp, out);
}

void weft__archetype_free(weft__archetype_t *a);

/* The array that holds tracked column col's dirty bytes in a. */
static inline uint32_t weft__dirty_array(const weft__archetype_t *a,
                                         const weft__column_t *col) {
  return a->narrays - a->ndirty + col->dirty - 1u;
}

/* The column of a component in a, or NULL (absent or tag). */
static inline const weft__column_t *
weft__archetype_col(const weft__archetype_t *a, weft_component_t c) {
  uint16_t k = c <= WEFT_MAX_COMPONENTS ? a->colmap[c] : 0;
  return k ? &a->cols[k - 1] : 0;
}

/*
 * Appends a row (taking a spare chunk, or a new one, when the last one is full)
 * and stores e in it. The row's data is uninitialised. Returns 0 or an
 * error, with *chunk and *row set.
 */
int weft__archetype_push_slow(struct weft_world_t *w, weft__archetype_t *a,
                              weft_entity_t e, weft__chunk_t **chunk,
                              uint32_t *row);

/*
 * Rows [row0, row0 + n) of chunk c just arrived: every tracked column is
 * dirty for them (a move's copy plan then carries the bits of the columns
 * the row had). Only for archetypes with tracked columns (core/dirty.c).
 */
void weft__dirty_arrive(struct weft_world_t *w, weft__archetype_t *a,
                        weft__chunk_t *c, uint32_t row0, uint32_t n);

/* Writes chunk c's all-rows-dirty flags into its dirty bytes and drops
 * them (core/dirty.c). Any thread that may read the chunk. */
void weft__dirty_expand(weft__chunk_t *c);

/*
 * Before rows of chunk c are copied out or overwritten (a swap-remove, a
 * move, a hole fill): its dirty bytes must say what its flags say. One
 * test of the header's flag word for a chunk without flags. Owner thread,
 * while no system runs.
 */
static inline void weft__dirty_settle(weft__chunk_t *c) {
  uint32_t any = 0;
  for (uint32_t k = 0; k < WEFT__ALL_DIRTY_COLS; k++)
    any |= c->all_dirty[k];
  if (__builtin_expect(any != 0, 0))
    weft__dirty_expand(c);
}

static inline int weft__archetype_push(struct weft_world_t *w,
                                       weft__archetype_t *a, weft_entity_t e,
                                       weft__chunk_t **chunk, uint32_t *row) {
  weft__chunk_t *c = a->tail;
  if (__builtin_expect(!c || c->count == a->row_cap, 0))
    return weft__archetype_push_slow(w, a, e, chunk, row);
  uint32_t r = c->count++;
  a->count++;
  c->sversion = *a->change_version;
  c->entities[r] = e;
  if (__builtin_expect(a->ndirty != 0, 0))
    weft__dirty_arrive(w, a, c, r, 1);
  *chunk = c;
  *row = r;
  return 0;
}

/*
 * Appends up to max rows at once to the last chunk (or a fresh one) and
 * returns the chunk, the first new row and the number of rows appended.
 * Handles and data of the new rows are uninitialised.
 */
int weft__archetype_push_range(struct weft_world_t *w, weft__archetype_t *a,
                               uint32_t max, weft__chunk_t **chunk,
                               uint32_t *row0, uint32_t *n);

/* Makes sure n more rows fit without allocating (pre-acquires chunks). */
int weft__archetype_reserve_rows(struct weft_world_t *w, weft__archetype_t *a,
                                 uint32_t n);

/* Byte address of row `row` of array i in chunk c. */
static inline uint8_t *weft__chunk_at(const weft__chunk_t *c, uint32_t i,
                                      uint32_t elem, uint32_t row) {
  return c->bases[i] + (size_t)row * elem;
}

/* Frees trailing segments whose chunks are all empty; returns bytes. */
uint64_t weft__archetype_trim(struct weft_world_t *w, weft__archetype_t *a);

/* Copies a component value into a row (scattering SoA fields). */
void weft__column_write(const weft__archetype_t *a, const weft__column_t *col,
                        weft__chunk_t *chunk, uint32_t row, const void *value);

/* Copies a row's component value out (gathering SoA fields). */
void weft__column_read(const weft__archetype_t *a, const weft__column_t *col,
                       const weft__chunk_t *chunk, uint32_t row, void *out);

/* Zero-fills one component of a row. */
void weft__column_zero(const weft__archetype_t *a, const weft__column_t *col,
                       weft__chunk_t *chunk, uint32_t row);

/* Copies n bytes of one element; specialised for the common sizes. */
static inline void weft__copy_elem(uint8_t *dst, const uint8_t *src,
                                   uint32_t n) {
  switch (n) {
  case 4:
    __builtin_memcpy(dst, src, 4);
    break;
  case 8:
    __builtin_memcpy(dst, src, 8);
    break;
  case 12:
    __builtin_memcpy(dst, src, 12);
    break;
  case 16:
    __builtin_memcpy(dst, src, 16);
    break;
  default:
    __builtin_memcpy(dst, src, n);
    break;
  }
}

#endif /* WEFT_CORE_ARCHETYPE_H */
