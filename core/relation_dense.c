/* SPDX-License-Identifier: MIT */
/*
 * Dense relations: the archetype placement of their sources, and the pair
 * terms of queries.
 *
 * The edge store (relation.c) stays the one source of truth for which
 * edges exist; a dense relation adds, for each source, placement: its
 * archetype's signature holds the (relation, target) pair of each of its
 * edges (core/archetype_pair.c). Every edge change of a dense relation is
 * therefore a row move along a cached pair transition, made before the
 * store changes, so that a failed move leaves both as they were. An
 * exclusive dense relation's payload is a column of the relation's
 * component in those archetypes: the one cell per source that queries read
 * as a column and weft_relation_get() returns.
 */
#include <string.h>

#include "core/check.h"
#include "core/entity_ops.h"
#include "core/observer.h"
#include "core/query_internal.h"
#include "core/relation.h"
#include "core/world.h"

int weft__dense_move(weft_world_t *w, weft_entity_t e, weft__where_t *at,
                     uint32_t op, weft_component_t rel, weft_entity_t tgt,
                     const void *value) {
  weft__where_t loc;
  if (!at) {
    if (!weft__locate(w, e, &loc))
      return 0;
    at = &loc;
  }
  const uint32_t mark = w->arch_count;
  const weft__edge_t *edge;
  int rc = weft__archetype_pair_edge(w, at->arch, op, rel, tgt, &edge);
  if (rc)
    return weft__rolled_back(w, mark, rc);
  weft__archetype_t *from = at->arch, *to = edge->to;
  if (w->obs_events) {
    /* Inside a drain, with observers: they see the move like any other.
     * Their own changes are staged, so e stays where it was. */
    weft__obs_move_out(w, from, to, at->chunk, at->row);
    if (!weft__locate(w, e, at))
      return 0;
    if (at->arch != from) {
      rc = weft__archetype_pair_edge(w, at->arch, op, rel, tgt, &edge);
      if (rc)
        return weft__rolled_back(w, mark, rc);
    }
  }
  rc = weft__move_row(w, e, at, edge);
  if (rc)
    return weft__rolled_back(w, mark, rc);
  if (edge->col) {
    weft__write_or_zero(edge->to, edge->col, at->chunk, at->row, value);
    weft__mark_write(w, at->chunk, edge->col, at->row);
  }
  if (w->obs_events)
    weft__obs_move_in(w, from, edge->to, at->chunk, at->row);
  return 0;
}

void *weft__dense_payload(const weft_world_t *w, weft_entity_t src,
                          weft_component_t rel) {
  weft__where_t at;
  if (!weft__locate(w, src, &at))
    return NULL;
  const weft__column_t *col = weft__archetype_col(at.arch, rel);
  return col ? weft__chunk_at(at.chunk, col->first_array, col->size, at.row)
             : NULL;
}

void weft__write_dense(weft_world_t *w, weft_entity_t src, weft_component_t rel,
                       const void *value) {
  weft__where_t at;
  if (!weft__locate(w, src, &at))
    return;
  const weft__column_t *col = weft__archetype_col(at.arch, rel);
  if (!col)
    return;
  weft__write_or_zero(at.arch, col, at.chunk, at.row, value);
  weft__mark_write(w, at.chunk, col, at.row);
}

/* ---- queries --------------------------------------------------------------
 */

/* Reads one zero-terminated pair list into out (sorted by (rel, target)
 * so that matching can walk it with the archetype's). */
static int read_pairs(weft_world_t *w, const weft_pair_t *list,
                      weft__pair_t *out, uint32_t *count) {
  uint32_t n = 0;
  while (n <= WEFT_QUERY_MAX_TERMS && list[n].rel)
    n++;
  WEFT_CHECK(w, n <= WEFT_QUERY_MAX_TERMS, WEFT_ETOOMANY,
             "a query pair list holds at most %u pairs", WEFT_QUERY_MAX_TERMS);
  for (uint32_t i = 0; i < n; i++) {
    const weft__rel_def_t *d = weft__rel_def(w->rel, list[i].rel);
    WEFT_CHECK(w, d && weft__rel_dense(d), WEFT_EINVAL,
               "pair term %u: component id %u is not a dense relation", i,
               (unsigned)list[i].rel);
    if (!weft__lookup(w, list[i].target)) {
      weft__count_stale(w);
      return weft__fail(w, WEFT_ESTALE, WEFT__FILE, WEFT__LINE,
                        "pair term %u: target %#llx is not live", i,
                        (unsigned long long)list[i].target);
    }
    weft__pair_t p = {.target = list[i].target, .rel = list[i].rel};
    uint32_t j = i;
    for (; j > 0 && (out[j - 1].rel > p.rel ||
                     (out[j - 1].rel == p.rel && out[j - 1].target > p.target));
         j--)
      out[j] = out[j - 1];
    out[j] = p;
  }
  *count = n;
  return 0;
}

int weft__query_pairs_parse(weft_world_t *w, const weft_query_desc_t *d,
                            weft_query_t *q) {
  int rc = read_pairs(w, d->pairs, q->pairs, &q->npairs);
  if (!rc)
    rc = read_pairs(w, d->exclude_pairs, q->xpairs, &q->nxpairs);
  if (rc)
    return rc;
  /* The wildcard bit of each included pair's relation: the masks then
   * turn away most archetypes before the pairs are looked at. */
  for (uint32_t i = 0; i < q->npairs; i++)
    weft__mask_set(&q->include, q->pairs[i].rel);
  return 0;
}

bool weft__query_pairs_match(const weft_query_t *q,
                             const weft__archetype_t *a) {
  for (uint32_t i = 0; i < q->npairs; i++)
    if (!weft__archetype_has_pair(a, q->pairs[i].rel, q->pairs[i].target))
      return false;
  for (uint32_t i = 0; i < q->nxpairs; i++)
    if (weft__archetype_has_pair(a, q->xpairs[i].rel, q->xpairs[i].target))
      return false;
  return true;
}

weft_entity_t weft_iter_target(const weft_iter_t *it, weft_component_t rel) {
  const weft__chunk_t *c = it ? weft__iter_chunk(it) : NULL;
  return c ? weft__archetype_pair_first(c->arch, rel) : WEFT_ENTITY_NULL;
}
