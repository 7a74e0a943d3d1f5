/* SPDX-License-Identifier: MIT */
/*
 * Grouped queries: a query with group_by keeps its matches sorted by
 * (group, creation order). Everything that walks a query's matches in order
 * (the flat cache, the walk over the matches, a system's visits and their
 * command keys, query-wide commands) then goes group by group without
 * knowing about groups, and a query without group_by pays nothing: its
 * matches are in creation order, every group 0, as before.
 *
 * One group is a contiguous range of the matches, found by binary search;
 * its chunks are a contiguous range of the flat cache's slots, found the
 * same way (a slot names its match, and slots follow match order).
 */
#include <string.h>

#include "core/query_internal.h"
#include "core/world.h"

uint64_t weft__query_group_of(const weft_query_t *q,
                              const weft__archetype_t *a) {
  if (!q->group_by)
    return 0;
  weft_archetype_view_t v = {a->id, a->ncomps, a->comps};
  return q->group_by(q->world, &v, q->group_ctx);
}

/* The first match whose group is above g (strict) or at least g. */
static uint32_t bound(const weft_query_t *q, uint64_t g, bool strict) {
  uint32_t lo = 0, hi = q->nmatches;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    uint64_t mg = q->matches[mid].group;
    if (strict ? mg <= g : mg < g)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

uint32_t weft__query_group_end(const weft_query_t *q, uint64_t g) {
  return bound(q, g, true);
}

void weft__query_group_range(const weft_query_t *q, uint64_t g, uint32_t *lo,
                             uint32_t *hi) {
  *lo = bound(q, g, false);
  *hi = bound(q, g, true);
}

bool weft__query_group_drop(weft_query_t *q) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < q->nmatches; i++)
    if (!q->matches[i].arch->gone)
      q->matches[n++] = q->matches[i];
  bool dropped = n != q->nmatches;
  q->nmatches = n;
  return dropped;
}

uint32_t weft_query_group_count(const weft_query_t *q, uint64_t group) {
  if (!q)
    return 0;
  uint32_t lo, hi, n = 0;
  weft__query_group_range(q, group, &lo, &hi);
  for (uint32_t i = lo; i < hi; i++)
    n += q->matches[i].arch->count;
  return n;
}

uint32_t weft_query_groups(const weft_query_t *q, uint64_t *out, uint32_t cap) {
  uint32_t n = 0;
  for (uint32_t i = 0; q && i < q->nmatches;) {
    /* One group: the matches up to the next group's first. */
    uint64_t g = q->matches[i].group;
    uint32_t end = q->group_by ? weft__query_group_end(q, g) : q->nmatches;
    uint32_t rows = 0;
    for (; i < end; i++)
      rows += q->matches[i].arch->count;
    if (rows) {
      if (n < cap && out)
        out[n] = g;
      n++;
    }
  }
  return n;
}
