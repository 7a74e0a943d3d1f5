/*
 * The private layout of a query: its term masks and the archetypes it has
 * matched so far, each with the per-term array offsets resolved once.
 */
#ifndef WEFT_CORE_QUERY_INTERNAL_H
#define WEFT_CORE_QUERY_INTERNAL_H

#include "core/archetype.h"
#include "core/bitset.h"
#include "weft/query.h"

typedef struct weft__match_t {
  const weft__archetype_t *arch;
  /* Array index + 1 of include term t in this archetype; 0 when the term
   * has no plain array (tags, SoA components). */
  uint32_t term_array[WEFT_QUERY_MAX_TERMS];
  /* For an SoA include term: its first field's array index and its field
   * count (0: not SoA). */
  uint16_t soa_first[WEFT_QUERY_MAX_TERMS];
  uint16_t soa_count[WEFT_QUERY_MAX_TERMS];
} weft__match_t;

struct weft_query_t {
  weft_world_t *world;
  weft__mask_t include;
  weft__mask_t exclude;
  weft__mask_t any;
  weft__mask_t disabled;
  uint32_t flags;
  uint32_t nterms;
  weft_component_t terms[WEFT_QUERY_MAX_TERMS];
  weft__match_t *matches;
  uint32_t nmatches;
  uint32_t cap;
};

/*
 * Fills a view of rows [row0, row0 + k) of chunk c for the given include
 * terms, as a batch spawn's fill callback and observers see them. The view
 * supports weft_iter_field() and the other accessors; it holds no scope.
 */
void weft__iter_view(const weft_world_t *w, weft__chunk_t *c, uint32_t row0,
                     uint32_t k, const weft_component_t *terms, uint32_t nterms,
                     weft_iter_t *v);

/* True if archetype a satisfies the query's terms. */
bool weft__query_matches(const weft_query_t *q, const weft__archetype_t *a);

#endif /* WEFT_CORE_QUERY_INTERNAL_H */
