/*
 * The private layout of a query: its term masks and the archetypes it has
 * matched so far, each with the per-term array offsets resolved once.
 */
#ifndef WEFT_CORE_QUERY_INTERNAL_H
#define WEFT_CORE_QUERY_INTERNAL_H

#include "core/archetype.h"
#include "core/bitset.h"
#include "weft/query.h"

/* Arrays per match whose heads iteration prefetches. */
#define WEFT__PREFETCH_ARRAYS 16u

typedef struct weft__match_t {
  const weft__archetype_t *arch;
  /* Array offset of include term t in this archetype's chunks; 0 when the
   * term has no plain array (tags, SoA components). */
  uint32_t offsets[WEFT_QUERY_MAX_TERMS];
  /* Offsets of every array the include terms own (SoA fields included),
   * for prefetching the heads of upcoming chunks. */
  uint32_t prefetch[WEFT__PREFETCH_ARRAYS];
  uint32_t nprefetch;
  /* For an SoA include term, where its field arrays sit in prefetch[]
   * (count 0: not SoA, or not all of its fields fit). */
  uint8_t soa_first[WEFT_QUERY_MAX_TERMS];
  uint8_t soa_count[WEFT_QUERY_MAX_TERMS];
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

/* True if archetype a satisfies the query's terms. */
bool weft__query_matches(const weft_query_t *q, const weft__archetype_t *a);

#endif /* WEFT_CORE_QUERY_INTERNAL_H */
