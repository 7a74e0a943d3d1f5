/* SPDX-License-Identifier: MIT */
/*
 * The edge store behind weft/relation.h: every edge of every relation,
 * indexed both ways, and the relation operations staged for the drain.
 * Private to core/.
 *
 * Per entity slot there are two vectors: `out`, the slot's edges as a
 * source, sorted by (relation, target handle), and `in`, the reverse
 * index, (relation, source handle) pairs sorted the same way. The reverse
 * index is always kept, whatever the relation's flags: a target's death
 * must remove its incoming edges (or despawn their sources, for CASCADE),
 * and without it that would be a scan of every edge in the world. Vectors
 * keep their capacity when edges go and when their slot's entity dies, and
 * payloads sit in a per-relation slab with a free list, so that adding and
 * removing edges every tick allocates nothing once the vectors have grown.
 * Every edge's ends are live: a death removes the edges of both ends.
 */
#ifndef WEFT_CORE_RELATION_H
#define WEFT_CORE_RELATION_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/archetype.h"
#include "weft/relation.h"

struct weft_world_t;
struct weft_cmdbuf_t;

/* One edge as a source holds it (other = target, slot = its payload, or
 * WEFT__REL_NOSLOT, back = the position of its reverse entry in the
 * target's `in`) or as the target's reverse entry (other = source, slot
 * the same payload slot: a slot stays with its edge until the edge goes,
 * so weft_relation_sources() reads payloads without visiting each
 * source's vector; back = the target's own handle's high word, see
 * weft__rel_in_entry()). */
typedef struct weft__rel_edge_t {
  weft_entity_t other;
  uint32_t rel; /* the relation's index in the store */
  uint32_t slot;
  uint32_t back;
  uint32_t pad;
} weft__rel_edge_t;

#define WEFT__REL_NOSLOT 0xffffffffu

/* Target tgt's reverse entry for the edge from src. Its `back` holds
 * tgt's high word (generation and world tag): every edge's ends are live
 * and a death empties its slot's vectors, so a slot whose `in` holds an
 * entry with a handle's high word holds that live handle's sources, and
 * the direct add to a target with sources (a hub) skips the target's
 * lookup in the entity index. */
static inline weft__rel_edge_t weft__rel_in_entry(weft_entity_t src,
                                                  uint32_t rel, uint32_t slot,
                                                  weft_entity_t tgt) {
  return (weft__rel_edge_t){src, rel, slot, (uint32_t)(tgt >> 32), 0};
}

/* In sparse_by_comp: the relation's payloads live in its slab (a def
 * index never reaches this bit: there are at most WEFT_MAX_COMPONENTS). */
#define WEFT__REL_SLAB_BIT 0x8000u

/* A vector's first edge lives inside its header (`one`, with cap 1):
 * most sources hold one edge and most targets one source, and an edge
 * that shares its header's cache line costs one miss where a separate
 * block cost two. A second edge moves the vector to heap memory its slot
 * keeps (`heap`, which then overlays `one`). Code reads the edges through
 * weft__rel_v(), so that it need not know where they are. */
#define WEFT__REL_INLINE 1u
/* Bits of a vector's capacity: at most 2^30 - 1 edges per slot. */
#define WEFT__REL_CAP_BITS 30
#define WEFT__REL_CAP_MAX ((1u << WEFT__REL_CAP_BITS) - 1u)

/* A slot's `out` is always sorted. Its `in` is sorted only when `sorted`
 * says so: reverse entries are appended and swap-removed (through the
 * out-edges' back positions), because a popular target (every unit's
 * squad, every child's parent) has thousands of sources, and keeping them
 * sorted on every change would move them all (a sort per direct removal
 * from a 10k-source hub costs 1.5M instructions). A target whose `in`
 * loses its order is queued once (`queued`) on the store's `unsorted`
 * list; the list is sorted at the end of each drain's edge phase and
 * before each segment of systems runs (weft__rel_settle_order), so systems
 * on workers read sorted vectors and write nothing. Owner-thread readers
 * outside phases sort a queued target on demand. The unsorted order is a
 * function of the operations alone, the same on any number of workers.
 *
 * The header is 32 bytes, two to a 64-byte line and never across two:
 * the inline edge and the heap pointer share their bytes (the capacity
 * says which is there; 0 only in an empty placeholder), and the capacity
 * and the two `in` flags share a word of bit fields. Every direct edge change
 * reads two headers, and reads that touch many slots (traversals) pay for every
 * byte of them. */
typedef struct weft__rel_vec_t {
  union {
    weft__rel_edge_t one;   /* the edges while cap is WEFT__REL_INLINE */
    weft__rel_edge_t *heap; /* the edges past the inline one */
  };
  uint32_t n;
  /* The flags come first, so that the capacity is its word's high bits
   * and "inline" (cap 1) reads as one comparison of the whole word, on
   * the direct paths' every vector. */
  uint32_t sorted : 1; /* `in` only: entries in (relation, source) order */
  uint32_t queued : 1; /* `in` only: the slot is on the unsorted list */
  uint32_t cap : WEFT__REL_CAP_BITS;
} weft__rel_vec_t;

/* The edges of x, v[0..x->n). The pointer is as writable as the caller's
 * vector: const readers only read through it. It lives until x grows or
 * its slot array moves (slots_cover). */
static inline weft__rel_edge_t *weft__rel_v(const weft__rel_vec_t *x) {
  return x->cap <= WEFT__REL_INLINE ? (weft__rel_edge_t *)&x->one : x->heap;
}

/* The edges of x when it holds exactly n of them, else NULL. An inline
 * vector without flags (every source's `out` that never held two edges)
 * is recognised by one comparison of its two words, n and the capacity's
 * (flags in the low bits, then the capacity: the bit fields' order on
 * little-endian targets, checked by test_relation_vec_header_words): the
 * direct paths test two sources' vectors a call this way, as cheaply as a
 * pointer's load. */
static inline weft__rel_edge_t *weft__rel_v_n(const weft__rel_vec_t *x,
                                              uint32_t n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint64_t words;
  memcpy(&words, &x->n, sizeof(words));
  if (words == ((uint64_t)WEFT__REL_INLINE << 34 | n))
    return (weft__rel_edge_t *)&x->one;
#endif
  return x->n == n ? weft__rel_v(x) : NULL;
}

typedef struct weft__rel_def_t {
  weft_component_t comp;
  uint32_t size;   /* payload bytes, 0: none */
  uint32_t stride; /* slab bytes per payload; 0: none, or a dense payload,
                      which is the relation's column (relation_dense.c) */
  uint32_t flags;  /* WEFT_RELATION_* */
  uint8_t *slab;   /* payloads, stride bytes each */
  uint32_t slab_n; /* slots handed out (live or free) */
  uint32_t slab_cap;
  uint32_t *free; /* released slots */
  uint32_t nfree;
  uint32_t free_cap;
} weft__rel_def_t;

/* A relation operation staged for the drain. */
typedef struct weft__rel_op_t {
  weft_entity_t src;
  weft_entity_t tgt; /* WEFT_ENTITY_NULL with REMOVE_ALL */
  uint32_t rel;
  uint32_t op;   /* WEFT__RELOP_* */
  uint32_t voff; /* value bytes in the store's byte buffer, or NOVALUE */
} weft__rel_op_t;

enum { WEFT__RELOP_ADD = 1, WEFT__RELOP_REMOVE, WEFT__RELOP_REMOVE_ALL };
#define WEFT__REL_NOVALUE 0xffffffffu

/* A scratch entry of a traversal: an entity and its depth. */
typedef struct weft__rel_visit_t {
  weft_entity_t e;
  uint32_t depth;
  uint32_t pad;
} weft__rel_visit_t;

typedef struct weft__relations_t {
  weft__rel_def_t *defs;
  uint32_t ndefs;
  uint32_t defs_cap;
  uint16_t by_comp[WEFT_MAX_COMPONENTS + 1]; /* component -> def + 1 */
  /* component -> def + 1 for SPARSE relations only, with
   * WEFT__REL_SLAB_BIT set for those with slab payloads: the direct fast
   * paths' one lookup (dense edges are pair moves). */
  uint16_t sparse_by_comp[WEFT_MAX_COMPONENTS + 1];
  /* The same for dense relations: their direct fast paths (pair moves
   * along cached transitions) are relation.c's too. */
  uint16_t dense_by_comp[WEFT_MAX_COMPONENTS + 1];
  uint32_t cascades;    /* CASCADE relations */
  weft__rel_vec_t *out; /* by slot, nslots entries */
  weft__rel_vec_t *in;
  uint32_t nslots;
  uint32_t out_cap;
  uint32_t in_cap;
  uint32_t *mark; /* by slot: the epoch that visited it */
  uint32_t mark_cap;
  uint32_t epoch;
  weft__rel_visit_t *stack; /* traversal scratch */
  uint32_t stack_cap;
  weft_entity_t *list; /* cascade and walk scratch */
  uint32_t list_cap;
  weft__rel_op_t *ops; /* staged operations, in call / merge order */
  uint32_t nops;
  uint32_t ops_cap;
  uint32_t ops_from; /* ops below belong to a wave being applied */
  uint8_t *bytes;    /* staged values */
  uint32_t nbytes;
  uint32_t bytes_cap;
  /* Targets whose `in` lost its order during the change in progress, each
   * once; capacity follows the slots, so that a push never fails. */
  weft_entity_t *unsorted;
  uint32_t nunsorted;
  uint32_t unsorted_cap;
  /* A dense payload's value, copied before the move that places it:
   * observers of the move may stage edges, which can move the staged
   * value (sized at registration to the largest dense payload). */
  uint8_t *dval;
  uint32_t dval_cap;
  uint64_t edges; /* live edges */
  uint32_t busy;  /* traversals running (owner thread): edge changes are
                     refused */
  bool cascading; /* a cascade's kills run: their own cascades are done */
} weft__relations_t;

/* The store's def for relation component c, or NULL. */
static inline const weft__rel_def_t *weft__rel_def(const weft__relations_t *r,
                                                   weft_component_t c) {
  if (!r || c > WEFT_MAX_COMPONENTS || !r->by_comp[c])
    return 0;
  return &r->defs[r->by_comp[c] - 1];
}

/* Whether d is dense: its sources are placed by (relation, target) pairs
 * (core/relation_dense.c). */
static inline bool weft__rel_dense(const weft__rel_def_t *d) {
  return !(d->flags & WEFT_RELATION_SPARSE);
}

/* Where the pair transition (key, t) hashes to first in an archetype's
 * table of cap slots (core/archetype_pair.c). */
static inline uint32_t weft__pedge_hash(uint32_t key, weft_entity_t t,
                                        uint32_t cap) {
  uint64_t h = (t ^ ((uint64_t)key << 40)) * UINT64_C(0x9e3779b97f4a7c15);
  return (uint32_t)(h >> 40) & (cap - 1);
}

/* The cached pair transition op (rel, t) from a, or NULL when there is
 * none yet. It builds nothing, so it cannot fail: the direct fast paths
 * follow it inline and leave the building (weft__archetype_pair_edge())
 * to the general path. */
static inline const weft__edge_t *
weft__pair_edge_cached(const weft__archetype_t *a, uint32_t op,
                       weft_component_t rel, weft_entity_t t) {
  if (!a->pedge_cap)
    return NULL;
  const uint32_t key = op << 16 | rel, mask = a->pedge_cap - 1;
  for (uint32_t i = weft__pedge_hash(key, t, a->pedge_cap);;
       i = (i + 1) & mask) {
    const weft__pair_edge_t *e = &a->pedges[i];
    if (e->e.key == key && e->target == t)
      return &e->e;
    if (e->e.key == 0)
      return NULL;
  }
}

/* Moves live e (located at *at, or looked up when at is NULL; *at follows
 * the row) along the pair transition op (rel, tgt), observers told as for
 * any move. For ADD and SET of a relation with a payload column, the
 * column takes value (zeros for NULL). Owner thread. 0 or an error, with
 * nothing changed and archetypes created for it rolled back. */
struct weft__where_t;
int weft__dense_move(struct weft_world_t *w, weft_entity_t e,
                     struct weft__where_t *at, uint32_t op,
                     weft_component_t rel, weft_entity_t tgt,
                     const void *value);

/* The payload cell of dense relation rel (with a payload column) of live
 * source src, or NULL. */
void *weft__dense_payload(const struct weft_world_t *w, weft_entity_t src,
                          weft_component_t rel);

/* Writes value (zeros for NULL) into live source src's payload cell of
 * dense relation rel, marking the write (change versions, dirty bits). */
void weft__write_dense(struct weft_world_t *w, weft_entity_t src,
                       weft_component_t rel, const void *value);

/* Whether relation operations wait for the drain. */
static inline bool weft__rel_pending(const struct weft__relations_t *r) {
  return r && r->ops_from < r->nops;
}

/* Before live (or dead: ignored) entity e dies: its outgoing and incoming
 * edges go, and for CASCADE relations its sources die first. Owner
 * thread, direct or inside the drain. */
int weft__rel_on_despawn(struct weft_world_t *w, weft_entity_t e);

/* Applies the relation operations staged before this wave (txn.c's drain). */
int weft__rel_phase(struct weft_world_t *w);

/* Drops the staged operations (the drain gave up). */
void weft__rel_drop(struct weft_world_t *w);

/* Stages an operation recorded in a command buffer; src and tgt are real
 * handles (the merge resolved pending ones). */
int weft__rel_queue(struct weft_world_t *w, uint32_t op, weft_entity_t src,
                    weft_component_t rel, weft_entity_t tgt, const void *value);

/* Removes every edge of relation c from e (weft_remove() of a relation). */
int weft__rel_remove_all(struct weft_world_t *w, weft_entity_t e,
                         weft_component_t c);

/* Snapshot loads: records edge (c, tgt) of live src in the store alone,
 * the rows already holding what the edge puts there (tags, pairs, a dense
 * payload's column); value is a sparse payload (NULL: zeros); back is the
 * position of its reverse entry in tgt's `in` as saved (the unsorted
 * order is state: a target's death walks it). No move, no log, no
 * observer. WEFT_EEXIST for an edge held already (or a second one of an
 * exclusive relation). Owner thread. */
int weft__rel_restore_edge(struct weft_world_t *w, weft_entity_t src,
                           weft_component_t c, weft_entity_t tgt,
                           const void *value, uint32_t back);

/* After the last weft__rel_restore_edge(): puts every target's reverse
 * entries where they were saved. WEFT_EFORMAT when the positions are no
 * permutation. Owner thread. */
int weft__rel_restore_finish(struct weft_world_t *w);

/* Forgets every edge (weft_world_clear()). */
void weft__rel_clear(struct weft_world_t *w);

/* Frees the store (the world's end). */
void weft__rel_fini(struct weft_world_t *w);

/* A hash of every edge and payload, slot by slot (the digest). */
uint64_t weft__rel_digest(const struct weft_world_t *w);

/* Starts a visit epoch (marks sized to the slots); 0 or WEFT_ENOMEM. */
int weft__rel_epoch(struct weft_world_t *w, weft__relations_t *r);

/* Marks slot s (below nslots) visited in this epoch; false if it was. */
static inline bool weft__rel_visit(weft__relations_t *r, uint32_t s) {
  if (r->mark[s] == r->epoch)
    return false;
  r->mark[s] = r->epoch;
  return true;
}

/* Sorts live target t's reverse entries (a no-op when they are), fixing
 * the back positions of the edges they mirror. Allocates nothing. */
void weft__rel_in_sorted(weft__relations_t *r, weft_entity_t t);

/* Sorts the reverse entries of every target queued on r->unsorted and
 * empties the list: at the end of a drain's edge phase, and before the
 * systems of a segment run (weft__rel_settle_order). */
void weft__rel_sort_pending(weft__relations_t *r);

/* weft__rel_settle_order() is declared in world_view.h (the scheduler's). */

/* Called where a vector may have emptied. Nothing is handed back any
 * more (the first edge is inline, heap memory is kept): a no-op kept for
 * its callers. */
void weft__rel_vec_settle(weft__relations_t *r, weft__rel_vec_t *v);

/* Moves live e to the archetype with (add) or without tag c, along the
 * internal relation edges of the archetype graph (structural.c). */
int weft__tag_move(struct weft_world_t *w, weft_entity_t e, weft_component_t c,
                   bool add);

/* weft__tag_move() for an entity the caller has just located at *where
 * (nothing moved since): the relation paths look each end up once. */
struct weft__where_t;
int weft__tag_move_at(struct weft_world_t *w, weft_entity_t e,
                      struct weft__where_t *where, weft_component_t c,
                      bool add);

/* Records a command with op, handle e, component c and data (command.c). */
int weft__cmd_push(struct weft_cmdbuf_t *b, uint32_t op, weft_entity_t e,
                   weft_component_t c, const void *data, uint32_t n);

#endif /* WEFT_CORE_RELATION_H */
