/* SPDX-License-Identifier: MIT */
/*
 * The private layout of a query: its term masks and the archetypes it has
 * matched so far, each with the per-term array offsets resolved once.
 */
#ifndef WEFT_CORE_QUERY_INTERNAL_H
#define WEFT_CORE_QUERY_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>

#include "core/archetype.h"
#include "core/bitset.h"
#include "weft/query.h"

typedef struct weft__match_t {
  /* For an SoA include term: its first field's array index and its field
   * count (0: not SoA). First, and in this order: an iterator's soa_
   * points here (see weft_iter_fields() in weft/query.h). */
  uint16_t soa_first[WEFT_QUERY_MAX_TERMS];
  uint16_t soa_count[WEFT_QUERY_MAX_TERMS];
  const weft__archetype_t *arch;
  /* Array index + 1 of include term t in this archetype; 0 when the term
   * has no plain array (tags, SoA components). */
  uint32_t term_array[WEFT_QUERY_MAX_TERMS];
  /* Its group_by group (0 without group_by): the matches are sorted by
   * (group, archetype id). */
  uint64_t group;
} weft__match_t;

_Static_assert(offsetof(weft__match_t, soa_first) == 0 &&
                   offsetof(weft__match_t, soa_count) ==
                       WEFT_QUERY_MAX_TERMS * sizeof(uint16_t),
               "weft_iter_t.soa_ reads the SoA layout from a match's start");

/* Points an iterator's inline field access at chunk c of match m. */
static inline void weft__iter_soa(weft_iter_t *it, const weft__match_t *m,
                                  const weft__chunk_t *c) {
  it->bases_ = (void *const *)c->bases;
  it->soa_ = m->soa_first;
}

struct weft_query_t {
  weft_world_t *world;
  weft__mask_t include;
  weft__mask_t exclude;
  weft__mask_t any;
  weft__mask_t disabled;
  /* Pair terms (core/relation_dense.c): each relation's bit is in
   * `include` too, so the masks reject most archetypes first. */
  uint32_t npairs;
  uint32_t nxpairs;
  weft__pair_t pairs[WEFT_QUERY_MAX_TERMS];
  weft__pair_t xpairs[WEFT_QUERY_MAX_TERMS];
  uint32_t flags;
  uint32_t nterms;
  weft_component_t terms[WEFT_QUERY_MAX_TERMS];
  weft__match_t *matches;
  uint32_t nmatches;
  uint32_t cap;
  /* group_by: matches are kept sorted by (group, creation order), so every
   * walk over them (iteration, the flat cache, a system's visits,
   * query-wide commands) goes group by group (query_group.c). */
  weft_group_fn group_by;
  void *group_ctx;
  /* A temporary query (weft_query_create_temp): not in the world's query
   * list, but in its list of temporary ones (w->temps, linked here), which
   * only an archetype rollback walks. */
  bool temp;
  struct weft_query_t *temp_prev;
  struct weft_query_t *temp_next;
  /*
   * The flat cache: one slot (weft_iter_slot_t_, then nterms column
   * pointers) per chunk, or run of chunks, that holds rows, in match order,
   * so that weft_iter_next() hands out a chunk with a few loads from one
   * place. Rebuilt lazily by weft_query_iter() when the world's structural
   * version moved on. Readers may start iterations at once: the one that
   * takes flat_lock rebuilds, the others walk the matches meanwhile. The
   * capacity is grown on the owner thread only (as archetypes gain chunks),
   * so a rebuild never allocates; a cache that cannot hold the chunks
   * leaves iteration to the walk over the matches.
   */
  unsigned char *flat;
  uint32_t flat_count; /* slots built */
  uint32_t flat_cap;   /* slots allocated */
  uint64_t flat_bound; /* at least the chunks of the matched archetypes */
  /* World version + 1 the slots describe; 0: none (stale). Published with
   * release after a rebuild. */
  _Atomic uint64_t flat_version;
  atomic_flag flat_lock;
  /* Iterations of this query that hold their scope and were opened while
   * another was open (the first one is the world's solo_query, txn.h):
   * weft_query_destroy() refuses while any is open. Readers iterate
   * concurrently: atomic. */
  _Atomic uint32_t iters;
};

/* Whether an iterator was invalidated: the world changed structurally
 * since it started, which can happen to an open iteration only after
 * weft_world_unwind() (which counts as such a change). Its slots, and
 * the chunks and queries they name, may be gone. */
static inline bool weft__iter_stale(const weft_iter_t *it) {
  return it->world_version_ && *it->world_version_ != it->version_;
}

/* Bytes of one flat-cache slot of a query with nterms include terms. */
static inline size_t weft__flat_slot_bytes(uint32_t nterms) {
  return sizeof(weft_iter_slot_t_) + (nterms ? nterms : 1) * sizeof(void *);
}

/* The flat-cache slot an iterator handed out last, or NULL (not on the
 * flat cache, or before its first chunk). */
static inline const weft_iter_slot_t_ *weft__iter_slot(const weft_iter_t *it) {
  return it->slot_ != it->slot0_
             ? (const weft_iter_slot_t_ *)((const unsigned char *)it->slot_ -
                                           it->slot_bytes_)
             : NULL;
}

/* The chunk an iterator or view is on (a weft__chunk_t), or NULL (also
 * for an invalidated iterator). */
static inline void *weft__iter_chunk(const weft_iter_t *it) {
  if (weft__iter_stale(it))
    return NULL;
  if (it->chunk_)
    return it->chunk_;
  const weft_iter_slot_t_ *s = weft__iter_slot(it);
  return s ? s->chunk : NULL;
}

/*
 * Fills a view of rows [row0, row0 + k) of chunk c for the given include
 * terms, as a batch spawn's fill callback and observers see them. The view
 * supports weft_iter_field() and the other accessors; it holds no scope.
 */
void weft__iter_view(const weft_world_t *w, weft__chunk_t *c, uint32_t row0,
                     uint32_t k, const weft_component_t *terms, uint32_t nterms,
                     weft_iter_t *v);

/* Reads a descriptor's pair terms into q (core/relation_dense.c). */
int weft__query_pairs_parse(weft_world_t *w, const weft_query_desc_t *d,
                            weft_query_t *q);

/* Whether a holds every pair q includes and none it excludes. */
bool weft__query_pairs_match(const weft_query_t *q, const weft__archetype_t *a);

/* True if archetype a satisfies the query's terms. */
bool weft__query_matches(const weft_query_t *q, const weft__archetype_t *a);

/* Grouped queries (query_group.c). */

/* Archetype a's group in query q: group_by's answer (0 without one). */
uint64_t weft__query_group_of(const weft_query_t *q,
                              const weft__archetype_t *a);

/* Where a new match of group g goes: after every match of groups up to g
 * (archetypes are matched in creation order, so it is the newest of its
 * group). */
uint32_t weft__query_group_end(const weft_query_t *q, uint64_t g);

/* The matches [*lo, *hi) of group g (empty when the query has none). */
void weft__query_group_range(const weft_query_t *q, uint64_t g, uint32_t *lo,
                             uint32_t *hi);

/* Drops the matches of archetypes marked gone (removed, archetype.c),
 * wherever they sit in the list, keeping the others' order; true if any
 * went. Grouped or not. */
bool weft__query_group_drop(weft_query_t *q);

#endif /* WEFT_CORE_QUERY_INTERNAL_H */
