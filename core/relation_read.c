/* SPDX-License-Identifier: MIT */
/*
 * Relations, the reading side: lookups of one source's edges, the reverse
 * index (sources of a target), the depth-first traversal, walking up the
 * first edge, the digest of the edge store, and recording edge commands.
 * Mutations are in relation.c.
 */
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "core/cmdbuf.h"
#include "core/relation.h"
#include "core/world.h"

/* The out-vector of live source e, or NULL (counted as stale when e is
 * not live). *rel gets c's store index; NULL too when c is no relation. */
static const weft__rel_vec_t *out_of(const weft_world_t *w, weft_entity_t e,
                                     weft_component_t c, uint32_t *rel) {
  const weft__rel_def_t *d = w ? weft__rel_def(w->rel, c) : NULL;
  if (!d)
    return NULL;
  if (!weft__lookup(w, e)) {
    weft__count_stale(w);
    return NULL;
  }
  *rel = (uint32_t)(d - w->rel->defs);
  uint32_t s = (uint32_t)e;
  static const weft__rel_vec_t empty = {0};
  return s < w->rel->nslots ? &w->rel->out[s] : &empty;
}

/* The range [*lo, *hi) of relation rel's edges in v. */
static void rel_range(const weft__rel_vec_t *v, uint32_t rel, uint32_t *lo,
                      uint32_t *hi) {
  const weft__rel_edge_t *e = weft__rel_v(v);
  uint32_t a = 0, b = v->n;
  while (a < b) { /* the first edge of rel or above */
    uint32_t m = a + (b - a) / 2;
    if (e[m].rel < rel)
      a = m + 1;
    else
      b = m;
  }
  *lo = a;
  b = v->n;
  while (a < b) { /* the first edge above rel */
    uint32_t m = a + (b - a) / 2;
    if (e[m].rel <= rel)
      a = m + 1;
    else
      b = m;
  }
  *hi = a;
}

/* The payload of out-edge x of source src, or NULL: a slab cell, or a
 * dense payload's cell in src's row (relation_dense.c). */
static void *payload_of(const weft_world_t *w, weft_entity_t src,
                        const weft__rel_edge_t *x) {
  const weft__rel_def_t *d = &w->rel->defs[x->rel];
  if (x->slot != WEFT__REL_NOSLOT)
    return d->slab + (size_t)x->slot * d->stride;
  return d->size ? weft__dense_payload(w, src, d->comp) : NULL;
}

/* The edge (rel, tgt) of out-vector v, or NULL. */
static const weft__rel_edge_t *vec_edge(const weft__rel_vec_t *v, uint32_t rel,
                                        weft_entity_t tgt) {
  const weft__rel_edge_t *e = weft__rel_v(v);
  uint32_t lo, hi;
  rel_range(v, rel, &lo, &hi);
  while (lo < hi) {
    uint32_t m = lo + (hi - lo) / 2;
    if (e[m].other < tgt)
      lo = m + 1;
    else
      hi = m;
  }
  return lo < v->n && e[lo].rel == rel && e[lo].other == tgt ? &e[lo] : NULL;
}

/* The out-edge (rel, tgt) of source e, or NULL. */
static const weft__rel_edge_t *edge_of(const weft_world_t *w, weft_entity_t e,
                                       weft_component_t c, weft_entity_t tgt) {
  uint32_t rel;
  const weft__rel_vec_t *v = out_of(w, e, c, &rel);
  return v ? vec_edge(v, rel, tgt) : NULL;
}

/* Target t's reverse entries of relation rel, [*lo, *hi) of the returned
 * vector in ascending source order, or NULL when t's slot never held an
 * edge. Sorts the vector first when a direct change left it unsorted:
 * only the owner outside phases finds it so (systems run after
 * weft__rel_settle_order), so the sort is the owner's write. */
static const weft__rel_vec_t *sources_of(weft__relations_t *r, weft_entity_t t,
                                         uint32_t rel, uint32_t *lo,
                                         uint32_t *hi) {
  uint32_t s = (uint32_t)t;
  if (s >= r->nslots)
    return NULL;
  if (!r->in[s].sorted && r->in[s].n > 1)
    weft__rel_in_sorted(r, t);
  rel_range(&r->in[s], rel, lo, hi);
  return &r->in[s];
}

bool weft_relation_has(const weft_world_t *w, weft_entity_t src,
                       weft_component_t c, weft_entity_t tgt) {
  return edge_of(w, src, c, tgt) != NULL;
}

void *weft_relation_get(const weft_world_t *w, weft_entity_t src,
                        weft_component_t c, weft_entity_t tgt) {
  const weft__rel_edge_t *x = edge_of(w, src, c, tgt);
  return x ? payload_of(w, src, x) : NULL;
}

uint32_t weft_relation_count(const weft_world_t *w, weft_entity_t src,
                             weft_component_t c) {
  uint32_t rel, lo, hi;
  const weft__rel_vec_t *v = out_of(w, src, c, &rel);
  if (!v)
    return 0;
  rel_range(v, rel, &lo, &hi);
  return hi - lo;
}

uint64_t weft_relation_edge_count(const weft_world_t *w) {
  return w && w->rel ? w->rel->edges : 0;
}

/* Checks a read call's world, relation and handle: 0, WEFT_EINVAL or
 * WEFT_ESTALE, with the message on the world. */
static int check_read(const weft_world_t *w, weft_entity_t e,
                      weft_component_t c) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  WEFT_CHECK(w, weft__rel_def(w->rel, c), WEFT_EINVAL,
             "component id %u is not a relation", (unsigned)c);
  if (weft__lookup(w, e))
    return 0;
  weft__count_stale(w);
  return weft__fail(w, WEFT_ESTALE, WEFT__FILE, WEFT__LINE,
                    "entity %#llx is not live in this world",
                    (unsigned long long)e);
}

int weft_relation_first(const weft_world_t *w, weft_entity_t src,
                        weft_component_t c, weft_entity_t *tgt) {
  WEFT_CHECK(w, tgt, WEFT_EINVAL, "target out-pointer is NULL");
  *tgt = WEFT_ENTITY_NULL;
  int rc = check_read(w, src, c);
  if (rc)
    return rc;
  uint32_t rel, lo, hi;
  const weft__rel_vec_t *v = out_of(w, src, c, &rel);
  rel_range(v, rel, &lo, &hi);
  if (lo == hi)
    return WEFT_ENOTFOUND;
  *tgt = weft__rel_v(v)[lo].other;
  return 0;
}

int weft_relation_each(weft_world_t *w, weft_entity_t src, weft_component_t c,
                       weft_relation_edge_fn fn, void *user) {
  WEFT_CHECK(w, fn, WEFT_EINVAL, "callback is NULL");
  int rc = check_read(w, src, c);
  if (rc)
    return rc;
  uint32_t rel, lo, hi;
  const weft__rel_vec_t *v = out_of(w, src, c, &rel);
  rel_range(v, rel, &lo, &hi);
  for (uint32_t i = lo; i < hi; i++)
    if (!fn(src, weft__rel_v(v)[i].other,
            payload_of(w, src, &weft__rel_v(v)[i]), user))
      break;
  return 0;
}

int weft_relation_sources(weft_world_t *w, weft_entity_t tgt,
                          weft_component_t c, weft_relation_edge_fn fn,
                          void *user) {
  WEFT_CHECK(w, fn, WEFT_EINVAL, "callback is NULL");
  int rc = check_read(w, tgt, c);
  if (rc)
    return rc;
  weft__relations_t *r = w->rel;
  uint32_t rel = r->by_comp[c] - 1u, lo, hi;
  const weft__rel_vec_t *in = sources_of(r, tgt, rel, &lo, &hi);
  for (uint32_t i = lo; in && i < hi; i++) {
    /* The reverse entry holds the edge's payload slot too: the sources'
     * vectors stay untouched. */
    const weft__rel_edge_t *x = &weft__rel_v(in)[i];
    if (!fn(x->other, tgt, payload_of(w, x->other, x), user))
      break;
  }
  return 0;
}

/* Pushes the sources of relation rel of slot s, highest first, so that
 * the stack pops them in ascending order. */
static int push_sources(weft_world_t *w, weft__relations_t *r, weft_entity_t t,
                        uint32_t rel, uint32_t depth, uint32_t *n) {
  uint32_t lo, hi;
  /* Most entities of a tree are leaves: no search, no growth check. */
  if ((uint32_t)t >= r->nslots || r->in[(uint32_t)t].n == 0)
    return 0;
  const weft__rel_vec_t *in = sources_of(r, t, rel, &lo, &hi);
  if (weft__grow(&w->alloc, &r->stack, &r->stack_cap, *n + (hi - lo),
                 sizeof(*r->stack), 64))
    return WEFT_ENOMEM;
  const weft__rel_edge_t *e = weft__rel_v(in);
  for (uint32_t i = hi; i-- > lo;)
    r->stack[(*n)++] = (weft__rel_visit_t){e[i].other, depth, 0};
  return 0;
}

int weft_relation_traverse(weft_world_t *w, weft_entity_t root,
                           weft_component_t c, weft_relation_visit_fn fn,
                           void *user) {
  WEFT_CHECK(w, fn, WEFT_EINVAL, "callback is NULL");
  int rc = check_read(w, root, c);
  if (rc)
    return rc;
  weft__relations_t *r = w->rel;
  WEFT_CHECK(w, !r->busy, WEFT_EBUSY,
             "a traversal cannot start inside a relation callback");
  uint32_t rel = r->by_comp[c] - 1u, n = 0;
  rc = weft__rel_epoch(w, r);
  if (rc == 0 && (uint32_t)root < r->nslots) {
    weft__rel_visit(r, (uint32_t)root); /* excluded, even through a cycle */
    rc = push_sources(w, r, root, rel, 0, &n);
  }
  r->busy++;
  while (rc == 0 && n) {
    weft__rel_visit_t v = r->stack[--n];
    if (!weft__rel_visit(r, (uint32_t)v.e))
      continue; /* reached before through another path */
    if (!fn(v.e, v.depth, user))
      break;
    rc = push_sources(w, r, v.e, rel, v.depth + 1, &n);
  }
  r->busy--;
  WEFT_CHECK(w, rc == 0, rc, "out of memory traversing relation '%s'",
             w->registry.items[c - 1].name);
  return 0;
}

/* Fails with WEFT_ECYCLE, naming the path's entities from position at. */
static int cycle_error(weft_world_t *w, weft_component_t c, uint32_t n,
                       uint32_t at) {
  const weft__rel_visit_t *path = w->rel->stack;
  char names[200];
  size_t len = 0;
  names[0] = '\0';
  for (uint32_t i = at; i < n && len + 24 < sizeof(names); i++)
    len +=
        (size_t)snprintf(names + len, sizeof(names) - len, "%s%#llx",
                         i > at ? " -> " : "", (unsigned long long)path[i].e);
  return weft__fail(w, WEFT_ECYCLE, WEFT__FILE, WEFT__LINE,
                    "relation '%s' has a cycle: %s%s -> back to %#llx",
                    w->registry.items[c - 1].name, names,
                    len + 24 >= sizeof(names) ? " ..." : "",
                    (unsigned long long)path[at].e);
}

/* Appends e to the walk's path (the traversal stack: a walk and a
 * traversal never nest, and the cascade list stays untouched for an
 * observer that walks during a cascade). */
static int path_push(weft_world_t *w, weft__relations_t *r, uint32_t *n,
                     weft_entity_t e, uint32_t depth) {
  if (weft__grow(&w->alloc, &r->stack, &r->stack_cap, *n + 1, sizeof(*r->stack),
                 64))
    return WEFT_ENOMEM;
  r->stack[(*n)++] = (weft__rel_visit_t){e, depth, 0};
  return 0;
}

int weft_relation_walk_up(weft_world_t *w, weft_entity_t e, weft_component_t c,
                          uint32_t max_depth, weft_relation_visit_fn fn,
                          void *user) {
  WEFT_CHECK(w, fn, WEFT_EINVAL, "callback is NULL");
  int rc = check_read(w, e, c);
  if (rc)
    return rc;
  weft__relations_t *r = w->rel;
  WEFT_CHECK(w, !r->busy, WEFT_EBUSY,
             "a walk cannot start inside a relation callback");
  if (max_depth == 0)
    max_depth = WEFT_RELATION_DEPTH_DEFAULT;
  uint32_t rel = r->by_comp[c] - 1u, n = 0, depth = 0;
  rc = weft__rel_epoch(w, r);
  if (rc == 0)
    rc = path_push(w, r, &n, e, 0); /* the path, for the message */
  WEFT_CHECK(w, rc == 0, rc, "out of memory walking up relation '%s'",
             w->registry.items[c - 1].name);
  weft_entity_t cur = e;
  if ((uint32_t)e < r->nslots)
    weft__rel_visit(r, (uint32_t)e);
  for (;;) {
    uint32_t s = (uint32_t)cur, lo, hi;
    if (s >= r->nslots)
      return 0;
    rel_range(&r->out[s], rel, &lo, &hi);
    if (lo == hi)
      return 0; /* the top */
    weft_entity_t up = weft__rel_v(&r->out[s])[lo].other;
    if (!weft__rel_visit(r, (uint32_t)up)) {
      uint32_t at = 0;
      while (at < n && r->stack[at].e != up)
        at++;
      return cycle_error(w, c, n, at);
    }
    WEFT_CHECK(w, ++depth <= max_depth, WEFT_ELIMIT,
               "walking up relation '%s' from %#llx passed the depth limit %u",
               w->registry.items[c - 1].name, (unsigned long long)e, max_depth);
    rc = path_push(w, r, &n, up, depth);
    WEFT_CHECK(w, rc == 0, rc, "out of memory walking up relation '%s'",
               w->registry.items[c - 1].name);
    r->busy++;
    bool more = fn(up, depth, user);
    r->busy--;
    if (!more)
      return 0;
    cur = up;
  }
}

static bool count_up(weft_entity_t e, uint32_t depth, void *user) {
  (void)e;
  *(uint32_t *)user = depth;
  return true;
}

int weft_relation_depth(weft_world_t *w, weft_entity_t e, weft_component_t c,
                        uint32_t max_depth, uint32_t *depth) {
  WEFT_CHECK(w, depth, WEFT_EINVAL, "depth out-pointer is NULL");
  uint32_t d = 0;
  int rc = weft_relation_walk_up(w, e, c, max_depth, count_up, &d);
  *depth = rc ? 0 : d;
  return rc;
}

/* ---- the digest -----------------------------------------------------------
 */

static inline uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v;
  h *= UINT64_C(0x9e3779b97f4a7c15);
  return h ^ (h >> 29);
}

uint64_t weft__rel_digest(const weft_world_t *w) {
  const weft__relations_t *r = w->rel;
  uint64_t h = mix(0, r->ndefs);
  for (uint32_t i = 0; i < r->ndefs; i++)
    h = mix(mix(mix(h, r->defs[i].comp), r->defs[i].size), r->defs[i].flags);
  h = mix(h, r->edges);
  /* Slot order, then each source's sorted edges: the same edges hash the
   * same whatever order they were added in. */
  for (uint32_t s = 0; s < r->nslots; s++) {
    const weft__rel_vec_t *v = &r->out[s];
    if (!v->n)
      continue;
    h = mix(mix(h, s), v->n);
    for (uint32_t j = 0; j < v->n; j++) {
      const weft__rel_edge_t *x = &weft__rel_v(v)[j];
      h = mix(mix(h, x->rel), x->other);
      /* Slab payloads; a dense one is its column's, hashed with its row. */
      const uint8_t *p =
          x->slot != WEFT__REL_NOSLOT ? payload_of(w, WEFT_ENTITY_NULL, x) : 0;
      for (uint32_t k = 0; p && k < r->defs[x->rel].size; k++)
        h = mix(h, p[k]);
    }
  }
  return h;
}

/* ---- commands -------------------------------------------------------------
 */

/* Records an edge command: the source rides in the command, the target
 * and the value in the buffer's arena. Recording threads write nothing of
 * the world, so errors are plain codes. */
static int record(weft_cmdbuf_t *b, uint32_t op, weft_entity_t src,
                  weft_component_t c, weft_entity_t tgt, const void *value) {
  if (!b || b->dead || tgt == WEFT_ENTITY_NULL)
    return WEFT_EINVAL;
  const weft__rel_def_t *d = weft__rel_def(b->world->rel, c);
  if (!d)
    return WEFT_EINVAL;
  uint32_t size = op == WEFT__OP_REL_ADD && value ? d->size : 0;
  weft_entity_t *blk =
      weft__arena_take(&b->arena, &b->alloc, sizeof(weft_entity_t) + size);
  if (!blk)
    return WEFT_ENOMEM;
  blk[0] = tgt;
  if (size)
    memcpy(blk + 1, value, size);
  int rc = weft__cmd_push(b, op, src, c, blk, size ? 1u : 0u);
  if (rc == 0)
    b->refs_pending |=
        weft_entity_is_pending(src) || weft_entity_is_pending(tgt);
  return rc;
}

int weft_cmd_relation_add(weft_cmdbuf_t *b, weft_entity_t src,
                          weft_component_t rel, weft_entity_t tgt,
                          const void *value) {
  return record(b, WEFT__OP_REL_ADD, src, rel, tgt, value);
}

int weft_cmd_relation_remove(weft_cmdbuf_t *b, weft_entity_t src,
                             weft_component_t rel, weft_entity_t tgt) {
  return record(b, WEFT__OP_REL_REMOVE, src, rel, tgt, NULL);
}
