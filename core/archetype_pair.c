/* SPDX-License-Identifier: MIT */
/*
 * Dense relation pairs in archetype signatures, and the cached pair
 * transitions of the archetype graph.
 *
 * A dense relation places each source in an archetype whose signature
 * holds the (relation, target) pairs of its edges besides the two masks,
 * so that a query term (rel, target) matches exactly the archetypes that
 * hold the pair. Moving between pair sets keeps every column, and a
 * re-parent goes along one cached transition keyed by (op, rel, target),
 * kept in a table of its own: the component graph's key (op << 16 |
 * component) and lookup stay as they were, so moves of plain components
 * pay nothing for pairs.
 */
#include <string.h>

#include "core/archetype.h"
#include "core/check.h"
#include "core/relation.h"
#include "core/require.h"
#include "core/world.h"

static inline bool pair_less(const weft__pair_t *p, uint32_t rel,
                             weft_entity_t t) {
  return p->rel < rel || (p->rel == rel && p->target < t);
}

/* The first pair of a not below (rel, t). */
static uint32_t pair_lower(const weft__pair_t *pairs, uint32_t n, uint32_t rel,
                           weft_entity_t t) {
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (pair_less(&pairs[mid], rel, t))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

bool weft__archetype_has_pair(const weft__archetype_t *a, weft_component_t rel,
                              weft_entity_t target) {
  uint32_t p = pair_lower(a->pairs, a->npairs, rel, target);
  return p < a->npairs && a->pairs[p].rel == rel &&
         a->pairs[p].target == target;
}

weft_entity_t weft__archetype_pair_first(const weft__archetype_t *a,
                                         weft_component_t rel) {
  uint32_t p = pair_lower(a->pairs, a->npairs, rel, 0);
  return p < a->npairs && a->pairs[p].rel == rel ? a->pairs[p].target
                                                 : WEFT_ENTITY_NULL;
}

bool weft__archetype_pair_target_dead(const weft_world_t *w,
                                      const weft__archetype_t *a) {
  for (uint32_t i = 0; i < a->npairs; i++)
    if (!weft__lookup(w, a->pairs[i].target))
      return true;
  return false;
}

uint64_t weft__pairs_hash(const weft__pair_t *pairs, uint32_t n) {
  uint64_t h = UINT64_C(0x2545f4914f6cdd1d) ^ n;
  for (uint32_t i = 0; i < n; i++) {
    h = (h ^ pairs[i].rel) * UINT64_C(0xff51afd7ed558ccd);
    h = (h ^ pairs[i].target) * UINT64_C(0xc4ceb9fe1a85ec53);
    h ^= h >> 31;
  }
  return h;
}

/* ---- the transition table -------------------------------------------------
 */

/* The slot of (key, t) in a's table: the entry, or the empty slot where
 * it would go. The table is never full (grown at half). */
static weft__pair_edge_t *pedge_find(const weft__archetype_t *a, uint32_t key,
                                     weft_entity_t t) {
  uint32_t mask = a->pedge_cap - 1;
  for (uint32_t i = weft__pedge_hash(key, t, a->pedge_cap);;
       i = (i + 1) & mask) {
    weft__pair_edge_t *e = &a->pedges[i];
    if (e->e.key == 0 || (e->e.key == key && e->target == t))
      return e;
  }
}

static int pedges_grow(weft_world_t *w, weft__archetype_t *a) {
  uint32_t n = a->pedge_cap ? a->pedge_cap * 2 : 8;
  weft__pair_edge_t *old = a->pedges;
  uint32_t old_cap = a->pedge_cap;
  weft__pair_edge_t *fresh = weft__calloc(&w->alloc, n * sizeof(*fresh), 16);
  if (!fresh)
    return WEFT_ENOMEM;
  a->pedges = fresh;
  a->pedge_cap = n;
  for (uint32_t i = 0; i < old_cap; i++)
    if (old[i].e.key)
      *pedge_find(a, old[i].e.key, old[i].target) = old[i];
  weft__free(old, 0, 16);
  return 0;
}

/* Removes slot i, moving later entries of its probe run back (linear
 * probing without tombstones, as the component graph does). */
static void pedge_delete(weft__archetype_t *a, uint32_t i) {
  const uint32_t mask = a->pedge_cap - 1;
  weft__free(a->pedges[i].e.plan, 0, 16);
  for (uint32_t j = (i + 1) & mask; a->pedges[j].e.key; j = (j + 1) & mask) {
    uint32_t home =
        weft__pedge_hash(a->pedges[j].e.key, a->pedges[j].target, a->pedge_cap);
    if (((j - home) & mask) >= ((j - i) & mask)) {
      a->pedges[i] = a->pedges[j];
      i = j;
    }
  }
  memset(&a->pedges[i], 0, sizeof(a->pedges[i]));
  a->pedge_count--;
}

void weft__archetype_pair_edges_drop_if(weft__archetype_t *a,
                                        weft__archetype_gone_fn gone,
                                        void *ctx) {
  for (uint32_t i = 0; i < a->pedge_cap;)
    if (a->pedges[i].e.key && gone(a->pedges[i].e.to, ctx))
      pedge_delete(a, i); /* slot i may hold a moved entry now */
    else
      i++;
}

void weft__archetype_pair_edges_drop(weft__archetype_t *a, uint32_t keep) {
  if (keep == 0) {
    for (uint32_t i = 0; i < a->pedge_cap; i++)
      weft__free(a->pedges[i].e.plan, 0, 16);
    weft__free(a->pedges, 0, 16);
    a->pedges = NULL;
    a->pedge_cap = a->pedge_count = 0;
    return;
  }
  for (uint32_t i = 0; i < a->pedge_cap;)
    if (a->pedges[i].e.key && a->pedges[i].e.to->id >= keep)
      pedge_delete(a, i); /* slot i may hold a moved entry now */
    else
      i++;
}

/* ---- building a transition ------------------------------------------------
 */

/* The signature op (rel, t) leads to from a: the masks in *present and
 * *disabled, the pairs in out (room for a->npairs + 1), their number
 * returned. */
static uint32_t pair_signature(const weft_world_t *w,
                               const weft__archetype_t *a, uint32_t op,
                               weft_component_t rel, weft_entity_t t,
                               weft__mask_t *present, weft__mask_t *disabled,
                               weft__pair_t *out) {
  *present = a->present;
  *disabled = a->disabled;
  uint32_t n = 0;
  bool inserted = op != WEFT__PAIR_ADD && op != WEFT__PAIR_SET;
  bool kept = false; /* a pair of rel stays */
  for (uint32_t i = 0; i <= a->npairs; i++) {
    const weft__pair_t *p = i < a->npairs ? &a->pairs[i] : NULL;
    if (!inserted && (!p || !pair_less(p, rel, t))) {
      out[n++] = (weft__pair_t){.target = t, .rel = rel};
      inserted = true;
    }
    if (!p)
      break;
    bool drop =
        p->rel == rel &&
        (op == WEFT__PAIR_SET || op == WEFT__PAIR_REMOVE_ALL || p->target == t);
    if (drop)
      continue;
    kept |= p->rel == rel;
    out[n++] = *p;
  }
  if (op == WEFT__PAIR_ADD || op == WEFT__PAIR_SET) {
    weft__mask_set(present, rel);
    weft__req_expand_list(&w->registry, &rel, 1, present);
  } else if (!kept) {
    weft__mask_clear(present, rel);
    weft__mask_clear(disabled, rel);
  }
  return n;
}

/* Builds and caches the transition op (rel, t) from a. */
static int pair_edge_slow(weft_world_t *w, weft__archetype_t *a, uint32_t op,
                          weft_component_t rel, weft_entity_t t,
                          const weft__edge_t **out) {
  if ((a->pedge_count + 1) * 2 > a->pedge_cap) {
    int rc = pedges_grow(w, a);
    WEFT_CHECK(w, rc == 0, rc, "out of memory growing pair transitions");
  }
  weft__pair_t *pairs =
      weft__alloc(&w->alloc, (a->npairs + 1) * sizeof(*pairs), 16);
  WEFT_CHECK(w, pairs, WEFT_ENOMEM, "out of memory building a pair signature");
  weft__mask_t present, disabled;
  uint32_t n = pair_signature(w, a, op, rel, t, &present, &disabled, pairs);
  weft__archetype_t *b;
  int rc = weft__archetype_get_pairs(w, &present, &disabled, pairs, n, &b);
  weft__free(pairs, (a->npairs + 1) * sizeof(*pairs), 16);
  if (rc)
    return rc;
  bool adds = op == WEFT__PAIR_ADD || op == WEFT__PAIR_SET;
  weft__edge_t tmp = {.key = op << 16 | rel, .to = b};
  if (adds)
    tmp.col = weft__archetype_col(b, rel);
  /* Requirements' defaults only when the relation's bit arrives. */
  weft_component_t added = adds && !weft__mask_test(&a->present, rel) ? rel : 0;
  rc = weft__archetype_plan(w, a, b, &tmp, added);
  WEFT_CHECK(w, rc == 0, rc, "out of memory building a move plan");
  weft__pair_edge_t *e = pedge_find(a, tmp.key, t);
  e->target = t;
  e->e = tmp;
  a->pedge_count++;
  *out = &e->e;
  return 0;
}

int weft__archetype_pair_edge(weft_world_t *w, weft__archetype_t *a,
                              uint32_t op, weft_component_t rel,
                              weft_entity_t target, const weft__edge_t **out) {
  const weft__edge_t *e = weft__pair_edge_cached(a, op, rel, target);
  if (e) {
    *out = e;
    return 0;
  }
  return pair_edge_slow(w, a, op, rel, target, out);
}
