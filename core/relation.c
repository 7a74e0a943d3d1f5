/* SPDX-License-Identifier: MIT */
/*
 * Relations: registration, the edge store's mutations (add, remove, the
 * deaths of sources and targets, cascades) and the staged operations the
 * drain applies. Reads and traversals are in relation_read.c. See
 * core/relation.h for the store's layout and why it keeps a reverse index.
 */
#include <stddef.h>
#include <string.h>

#include "core/check.h"
#include "core/entity_ops.h"
#include "core/observer.h"
#include "core/relation.h"
#include "core/stage.h"
#include "core/world.h"
#include "weft/transition.h"

/* ---- the store ------------------------------------------------------------
 */

static weft__relations_t *store_get(weft_world_t *w) {
  if (w->rel)
    return w->rel;
  weft__relations_t *r = weft__calloc(&w->alloc, sizeof(*r), 16);
  w->rel = r;
  return r;
}

void weft__rel_fini(weft_world_t *w) {
  weft__relations_t *r = w->rel;
  if (!r)
    return;
  for (uint32_t i = 0; i < r->ndefs; i++) {
    weft__free(r->defs[i].slab, 0, 16);
    weft__free(r->defs[i].free, 0, 16);
  }
  /* Vectors past their inline edge own heap memory. */
  for (uint32_t s = 0; s < r->nslots; s++) {
    if (r->out[s].cap > WEFT__REL_INLINE)
      weft__free(r->out[s].heap, 0, 16);
    if (r->in[s].cap > WEFT__REL_INLINE)
      weft__free(r->in[s].heap, 0, 16);
  }
  weft__free(r->defs, 0, 16);
  weft__free(r->out, 0, 16);
  weft__free(r->in, 0, 16);
  weft__free(r->unsorted, 0, 16);
  weft__free(r->mark, 0, 16);
  weft__free(r->stack, 0, 16);
  weft__free(r->list, 0, 16);
  weft__free(r->ops, 0, 16);
  weft__free(r->bytes, 0, 16);
  weft__free(r->dval, 0, 16);
  weft__free(r, sizeof(*r), 16);
  w->rel = NULL;
}

void weft__rel_clear(weft_world_t *w) {
  weft__relations_t *r = w->rel;
  if (!r)
    return;
  for (uint32_t s = 0; s < r->nslots; s++) {
    r->out[s].n = r->in[s].n = 0;
    r->in[s].queued = 0;
    weft__rel_vec_settle(r, &r->out[s]);
    weft__rel_vec_settle(r, &r->in[s]);
  }
  for (uint32_t i = 0; i < r->ndefs; i++)
    r->defs[i].slab_n = r->defs[i].nfree = 0;
  r->edges = 0;
  r->nunsorted = 0;
  r->nops = r->ops_from = r->nbytes = 0;
}

_Static_assert(sizeof(weft__rel_vec_t) == 32,
               "a vector header is one edge (or a pointer) and two words");

/* Empty vectors a[from..to), each with its inline edge as storage. */
static void vecs_init(weft__rel_vec_t *a, uint32_t from, uint32_t to) {
  memset(a + from, 0, (size_t)(to - from) * sizeof(*a));
  for (uint32_t s = from; s < to; s++)
    a[s].cap = WEFT__REL_INLINE;
}

/* Makes the per-slot vectors cover slot s. A failure leaves the vectors
 * that were there as they were; an inline edge moves with its header. */
static int slots_cover(weft_world_t *w, weft__relations_t *r, uint32_t s) {
  if (s < r->nslots)
    return 0;
  const uint32_t need = s + 1;
  if (weft__grow(&w->alloc, &r->out, &r->out_cap, need, sizeof(*r->out), 256) ||
      weft__grow(&w->alloc, &r->in, &r->in_cap, need, sizeof(*r->in), 256) ||
      weft__grow(&w->alloc, &r->unsorted, &r->unsorted_cap, need,
                 sizeof(*r->unsorted), 256))
    return WEFT_ENOMEM;
  vecs_init(r->out, r->nslots, need);
  vecs_init(r->in, r->nslots, need);
  r->nslots = need;
  return 0;
}

/* Orders edges by (relation, other handle). */
static inline bool edge_less(const weft__rel_edge_t *a, uint32_t rel,
                             weft_entity_t other) {
  return a->rel < rel || (a->rel == rel && a->other < other);
}

/* The first position whose edge is not below (rel, other). */
static uint32_t lower_bound(const weft__rel_vec_t *v, uint32_t rel,
                            weft_entity_t other) {
  const weft__rel_edge_t *e = weft__rel_v(v);
  uint32_t lo = 0, hi = v->n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (edge_less(&e[mid], rel, other))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Where (rel, other) is in v, or UINT32_MAX. */
static uint32_t vec_find(const weft__rel_vec_t *v, uint32_t rel,
                         weft_entity_t other) {
  const weft__rel_edge_t *e = weft__rel_v(v);
  uint32_t p = lower_bound(v, rel, other);
  return p < v->n && e[p].rel == rel && e[p].other == other ? p : UINT32_MAX;
}

/* Covers the slots of src and tgt, then finds where edge (rel, tgt) is or
 * goes in src's out vector: *at, and *found when it is there already. */
static int edge_place(weft_world_t *w, weft__relations_t *r, weft_entity_t src,
                      uint32_t rel, weft_entity_t tgt, uint32_t *at,
                      bool *found) {
  uint32_t s = (uint32_t)src, t = (uint32_t)tgt;
  int rc = slots_cover(w, r, s > t ? s : t);
  if (rc)
    return rc;
  const weft__rel_vec_t *out = &r->out[s];
  uint32_t p = lower_bound(out, rel, tgt);
  *at = p;
  *found = p < out->n && weft__rel_v(out)[p].rel == rel &&
           weft__rel_v(out)[p].other == tgt;
  return 0;
}

void weft__rel_vec_settle(weft__relations_t *r, weft__rel_vec_t *v) {
  (void)r;
  (void)v;
}

/* Grows full vector v by one edge: past its inline edge, to heap memory
 * that the vector keeps (a popular target keeps its capacity). */
static int vec_grow(weft_world_t *w, weft__rel_vec_t *v) {
  if (v->cap == WEFT__REL_INLINE) {
    weft__rel_edge_t *big = weft__alloc(&w->alloc, 4u * sizeof(*big), 16);
    if (!big)
      return WEFT_ENOMEM;
    memcpy(big, &v->one, (size_t)v->n * sizeof(*big));
    v->heap = big;
    v->cap = 4u;
    return 0;
  }
  uint32_t cap = v->cap; /* a bit field has no address */
  if (v->n >= WEFT__REL_CAP_MAX ||
      weft__grow(&w->alloc, &v->heap, &cap, v->n + 1, sizeof(*v->heap), 4))
    return WEFT_ENOMEM;
  v->cap = cap > WEFT__REL_CAP_MAX ? WEFT__REL_CAP_MAX : cap;
  return 0;
}

/* Room for one more edge in v. Inline because it is almost always there:
 * the call is kept for the growth. */
static inline int vec_room(weft_world_t *w, weft__rel_vec_t *v) {
  return v->n < v->cap ? 0 : vec_grow(w, v);
}

/* Inserts at p; the room is there (vec_room). An append (the usual case:
 * one edge per source) skips the memmove call. */
static void vec_insert(weft__rel_vec_t *v, uint32_t p, weft__rel_edge_t e) {
  weft__rel_edge_t *x = weft__rel_v(v);
  if (p < v->n)
    memmove(&x[p + 1], &x[p], (size_t)(v->n - p) * sizeof(*x));
  x[p] = e;
  v->n++;
}

static void vec_erase(weft__rel_vec_t *v, uint32_t p) {
  weft__rel_edge_t *x = weft__rel_v(v);
  if (p + 1 < v->n)
    memmove(&x[p], &x[p + 1], (size_t)(v->n - p - 1) * sizeof(*x));
  v->n--;
}

/* Whether v holds an edge of relation rel. */
static bool vec_has_rel(const weft__rel_vec_t *v, uint32_t rel) {
  uint32_t p = lower_bound(v, rel, 0);
  return p < v->n && weft__rel_v(v)[p].rel == rel;
}

/* Makes sure one more payload slot of d can be taken without failing. */
static int slab_room(weft_world_t *w, weft__rel_def_t *d) {
  if (!d->stride || d->nfree)
    return 0;
  uint8_t *slab = d->slab;
  uint32_t cap = d->slab_cap;
  if (d->slab_n < cap)
    return 0;
  uint32_t ncap = cap ? cap * 2 : 64;
  uint8_t *p = weft__realloc(&w->alloc, slab, (size_t)cap * d->stride,
                             (size_t)ncap * d->stride);
  if (!p)
    return WEFT_ENOMEM;
  d->slab = p;
  d->slab_cap = ncap;
  /* The free list never holds more than slab_cap slots. */
  return weft__grow(&w->alloc, &d->free, &d->free_cap, ncap, sizeof(uint32_t),
                    64)
             ? WEFT_ENOMEM
             : 0;
}

static void payload_write(weft__rel_def_t *d, uint32_t slot,
                          const void *value) {
  uint8_t *p = d->slab + (size_t)slot * d->stride;
  if (value)
    memcpy(p, value, d->size);
  else
    memset(p, 0, d->size);
}

static uint32_t payload_take(weft__rel_def_t *d, const void *value) {
  if (!d->stride)
    return WEFT__REL_NOSLOT;
  uint32_t slot = d->nfree ? d->free[--d->nfree] : d->slab_n++;
  payload_write(d, slot, value);
  return slot;
}

static void payload_give(weft__rel_def_t *d, uint32_t slot) {
  if (slot != WEFT__REL_NOSLOT)
    d->free[d->nfree++] = slot;
}

/* Removes reverse entry pos of target t: the last entry takes its place
 * and the edge it mirrors learns its new position. */
/* Marks target t's `in` unsorted, queueing it once for
 * weft__rel_sort_pending(); the list has room for every slot. */
static void in_unsorted(weft__relations_t *r, weft_entity_t t) {
  weft__rel_vec_t *in = &r->in[(uint32_t)t];
  in->sorted = 0;
  if (!in->queued) {
    in->queued = 1;
    r->unsorted[r->nunsorted++] = t;
  }
}

static void reverse_erase(weft__relations_t *r, weft_entity_t t, uint32_t pos) {
  weft__rel_vec_t *in = &r->in[(uint32_t)t];
  uint32_t last = --in->n;
  if (pos == last) {
    weft__rel_vec_settle(r, in);
    return;
  }
  weft__rel_edge_t *e = weft__rel_v(in);
  e[pos] = e[last];
  const weft__rel_edge_t *m = &e[pos];
  weft__rel_vec_t *o = &r->out[(uint32_t)m->other];
  weft__rel_v(o)[vec_find(o, m->rel, t)].back = pos;
  in_unsorted(r, t);
}

static bool in_less(const weft__rel_edge_t *a, const weft__rel_edge_t *b) {
  return a->rel < b->rel || (a->rel == b->rel && a->other < b->other);
}

/* Heap sort: in place and O(n log n) whatever the order, where qsort()
 * may allocate. */
static void sift(weft__rel_edge_t *v, uint32_t i, uint32_t n) {
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= n)
      return;
    if (c + 1 < n && in_less(&v[c], &v[c + 1]))
      c++;
    if (!in_less(&v[i], &v[c]))
      return;
    weft__rel_edge_t t = v[i];
    v[i] = v[c];
    v[c] = t;
    i = c;
  }
}

void weft__rel_in_sorted(weft__relations_t *r, weft_entity_t t) {
  weft__rel_vec_t *in = &r->in[(uint32_t)t];
  if (in->sorted || in->n < 2) {
    in->sorted = 1;
    return;
  }
  weft__rel_edge_t *v = weft__rel_v(in);
  uint32_t n = in->n;
  for (uint32_t i = n / 2; i-- > 0;)
    sift(v, i, n);
  for (uint32_t end = n; end-- > 1;) {
    weft__rel_edge_t tmp = v[0];
    v[0] = v[end];
    v[end] = tmp;
    sift(v, 0, end);
  }
  for (uint32_t j = 0; j < n; j++) {
    weft__rel_vec_t *o = &r->out[(uint32_t)v[j].other];
    weft__rel_v(o)[vec_find(o, v[j].rel, t)].back = j;
  }
  in->sorted = 1;
}

void weft__rel_settle_order(weft_world_t *w) {
  if (w->rel && w->rel->nunsorted)
    weft__rel_sort_pending(w->rel);
}

/* The live handle of the target in slot t, read from the out-edge that
 * mirrors its first reverse entry: the handle queued may be a dead
 * occupant's, the slot reused since. */
static weft_entity_t slot_target(const weft__relations_t *r, uint32_t t) {
  const weft__rel_edge_t *x = &weft__rel_v(&r->in[t])[0];
  const weft__rel_vec_t *o = &r->out[(uint32_t)x->other];
  const weft__rel_edge_t *e = weft__rel_v(o);
  for (uint32_t j = 0; j < o->n; j++)
    if (e[j].rel == x->rel && (uint32_t)e[j].other == t)
      return e[j].other;
  return WEFT_ENTITY_NULL; /* not reached: every entry has its edge */
}

void weft__rel_sort_pending(weft__relations_t *r) {
  for (uint32_t i = 0; i < r->nunsorted; i++) {
    uint32_t t = (uint32_t)r->unsorted[i];
    weft__rel_vec_t *in = &r->in[t];
    in->queued = 0;
    if (in->n > 1 && !in->sorted)
      weft__rel_in_sorted(r, slot_target(r, t));
  }
  r->nunsorted = 0;
}

/* Removes out-edge p of source src (both sides, the payload). */
static void edge_drop(weft__relations_t *r, weft_entity_t src, uint32_t p) {
  weft__rel_vec_t *out = &r->out[(uint32_t)src];
  weft__rel_edge_t e = weft__rel_v(out)[p];
  reverse_erase(r, e.other, e.back);
  payload_give(&r->defs[e.rel], e.slot);
  vec_erase(out, p);
  r->edges--;
}

/* ---- registration ---------------------------------------------------------
 */

static bool is_pow2(uint32_t v) {
  return v && !(v & (v - 1));
}

static int check_rel_desc(weft_world_t *w, const weft_relation_desc_t *d,
                          uint32_t *align) {
  WEFT_CHECK(w, d && d->name, WEFT_EINVAL, "relation descriptor or name NULL");
  const uint32_t known =
      WEFT_RELATION_EXCLUSIVE | WEFT_RELATION_SPARSE | WEFT_RELATION_CASCADE;
  WEFT_CHECK(w, (d->flags & ~known) == 0, WEFT_EINVAL,
             "relation '%s': unknown flags 0x%x", d->name, d->flags);
  WEFT_CHECK(w,
             !(d->flags & WEFT_RELATION_CASCADE) ||
                 (d->flags & WEFT_RELATION_EXCLUSIVE),
             WEFT_EINVAL,
             "relation '%s': CASCADE requires EXCLUSIVE (a cascade follows "
             "each source's one edge)",
             d->name);
  uint32_t a = d->alignment;
  if (!a) {
    a = 1;
    while (a < 16 && d->size % (a * 2) == 0 && d->size)
      a *= 2;
  }
  WEFT_CHECK(w, is_pow2(a) && a <= 16 && d->size % a == 0, WEFT_ELAYOUT,
             "relation '%s': payload alignment %u must be a power of two up "
             "to 16 that divides the size %u",
             d->name, a, d->size);
  WEFT_CHECK(w, d->size <= 65536u, WEFT_ELAYOUT,
             "relation '%s': payload of %u bytes is above 64 KiB", d->name,
             d->size);
  /* A dense payload is a column of the source's archetype: one cell per
   * source, so one edge per source. */
  WEFT_CHECK(w,
             !d->size ||
                 (d->flags & (WEFT_RELATION_SPARSE | WEFT_RELATION_EXCLUSIVE)),
             WEFT_EINVAL,
             "relation '%s': a dense relation with a payload must be "
             "EXCLUSIVE (or SPARSE)",
             d->name);
  *align = a;
  return 0;
}

int weft_relation_register(weft_world_t *w, const weft_relation_desc_t *d,
                           weft_component_t *out) {
  WEFT_CHECK(w, w && out, WEFT_EINVAL, "world and out must not be NULL");
  uint32_t align = 0;
  int rc = check_rel_desc(w, d, &align);
  if (rc)
    return rc;
  weft__relations_t *r = store_get(w);
  WEFT_CHECK(w, r, WEFT_ENOMEM, "out of memory creating the edge store");
  rc = weft__grow(&w->alloc, &r->defs, &r->defs_cap, r->ndefs + 1,
                  sizeof(*r->defs), 8);
  WEFT_CHECK(w, rc == 0, WEFT_ENOMEM, "out of memory registering a relation");
  bool column = d->size && !(d->flags & WEFT_RELATION_SPARSE);
  if (column && d->size > r->dval_cap) {
    rc = weft__grow(&w->alloc, &r->dval, &r->dval_cap, d->size, 1, 16);
    WEFT_CHECK(w, rc == 0, WEFT_ENOMEM, "out of memory registering a relation");
  }
  /* The relation's bit in archetype masks is a tag component (a dense
   * payload's column): the name checks (valid, unique) are the
   * registry's. */
  weft_component_t c;
  rc = weft_component_register(
      w,
      &(weft_component_desc_t){.name = d->name,
                               .size = column ? d->size : 0,
                               .alignment = column ? align : 0},
      &c);
  if (rc)
    return rc;
  w->registry.items[c - 1].flags |= WEFT_COMPONENT_RELATION;
  weft__rel_def_t *def = &r->defs[r->ndefs];
  memset(def, 0, sizeof(*def));
  def->comp = c;
  def->size = d->size;
  def->stride = d->size && !column ? (d->size + align - 1) / align * align : 0;
  def->flags = d->flags;
  r->by_comp[c] = (uint16_t)(++r->ndefs);
  if (d->flags & WEFT_RELATION_SPARSE)
    r->sparse_by_comp[c] =
        (uint16_t)(r->by_comp[c] | (def->stride ? WEFT__REL_SLAB_BIT : 0));
  else
    r->dense_by_comp[c] = r->by_comp[c];
  if (d->flags & WEFT_RELATION_CASCADE)
    r->cascades++;
  *out = c;
  return 0;
}

/* ---- direct mutations -----------------------------------------------------
 */

/* Logs an edge transition when the transition log is on (it routes every
 * edge change through the drain, so direct paths never log). */
static inline void log_edge(weft_world_t *w, weft_entity_t src, uint32_t rel,
                            weft_entity_t tgt, uint32_t kind) {
  if (__builtin_expect((w->obs_events & WEFT__EVENT_LOG) != 0, 0))
    weft__tlog_edge(w, src, w->rel->defs[rel].comp, tgt, kind);
}

/* Adds edge (rel, tgt) to live src; both ends checked by the caller. */
static int apply_add(weft_world_t *w, weft_entity_t src, weft__where_t *at,
                     uint32_t rel, weft_entity_t tgt, const void *value) {
  weft__relations_t *r = w->rel;
  weft__rel_def_t *d = &r->defs[rel];
  uint32_t s = (uint32_t)src, t = (uint32_t)tgt, p;
  bool found;
  int rc = edge_place(w, r, src, rel, tgt, &p, &found);
  if (rc)
    return rc;
  weft__rel_vec_t *out = &r->out[s];
  if (found) {
    if (d->stride)
      payload_write(d, weft__rel_v(out)[p].slot, value);
    else if (d->size)
      weft__write_dense(w, src, d->comp, value);
    return 0;
  }
  bool had = p < out->n && weft__rel_v(out)[p].rel == rel;
  if (!had && p > 0 && weft__rel_v(out)[p - 1].rel == rel)
    had = true;
  /* Everything that can fail comes first, so that a failure changes
   * nothing: the room, then the move into the relation's archetype. */
  if (vec_room(w, out) || vec_room(w, &r->in[t]) || slab_room(w, d))
    return WEFT_ENOMEM;
  /* The value is copied before the move: observers of the move may stage
   * edges, which can move the staged values it points into. */
  uint32_t slot = payload_take(d, value);
  if (weft__rel_dense(d)) {
    /* Every edge is a pair of the signature: the move comes each time. */
    const void *v = value && d->size ? memcpy(r->dval, value, d->size) : NULL;
    uint32_t op = had && (d->flags & WEFT_RELATION_EXCLUSIVE) ? WEFT__PAIR_SET
                                                              : WEFT__PAIR_ADD;
    rc = weft__dense_move(w, src, at, op, d->comp, tgt, v);
    if (rc)
      return rc;
  } else if (!had) {
    rc = weft__tag_move_at(w, src, at, d->comp, true);
    if (rc) {
      payload_give(d, slot);
      return rc;
    }
  }
  if (had && (d->flags & WEFT_RELATION_EXCLUSIVE)) {
    uint32_t old = lower_bound(out, rel, 0); /* the one edge it had */
    log_edge(w, src, rel, weft__rel_v(out)[old].other,
             WEFT_TRANSITION_EDGE_REMOVE);
    edge_drop(r, src, old);
    p = lower_bound(out, rel, tgt);
  }
  weft__rel_vec_t *in = &r->in[t];
  vec_insert(out, p, (weft__rel_edge_t){tgt, rel, slot, in->n, 0});
  /* Appended: still sorted when it comes after the last entry. */
  weft__rel_edge_t x = weft__rel_in_entry(src, rel, slot, tgt);
  bool ordered =
      in->n == 0 || (in->sorted && in_less(&weft__rel_v(in)[in->n - 1], &x));
  weft__rel_v(in)[in->n++] = x;
  if (ordered)
    in->sorted = 1;
  else
    in_unsorted(r, tgt);
  r->edges++;
  w->version++; /* weft_world_structure_version(): edges changed */
  log_edge(w, src, rel, tgt, WEFT_TRANSITION_EDGE_ADD);
  return 0;
}

/* Leaves the relation's archetype when src has no edge of rel left (a
 * dense relation's pair (rel, tgt) in any case). */
static int tag_if_last(weft_world_t *w, weft_entity_t src, uint32_t rel,
                       weft_entity_t tgt) {
  weft__relations_t *r = w->rel;
  if (weft__rel_dense(&r->defs[rel]))
    return weft__dense_move(w, src, NULL, WEFT__PAIR_REMOVE, r->defs[rel].comp,
                            tgt, NULL);
  if (vec_has_rel(&r->out[(uint32_t)src], rel))
    return 0;
  return weft__tag_move(w, src, r->defs[rel].comp, false);
}

/* apply_remove() found no such edge (not an error, but mutate() has to
 * check the target it did not look up). */
#define REL_NO_EDGE 1

static int apply_remove(weft_world_t *w, weft_entity_t src, weft__where_t *at,
                        uint32_t rel, weft_entity_t tgt) {
  weft__relations_t *r = w->rel;
  uint32_t s = (uint32_t)src;
  if (s >= r->nslots)
    return REL_NO_EDGE;
  weft__rel_vec_t *out = &r->out[s];
  uint32_t p = vec_find(out, rel, tgt);
  if (p == UINT32_MAX)
    return REL_NO_EDGE;
  /* Logged before the relation id's REMOVE that the move may log; taken
   * back when the move fails. */
  uint32_t logged = w->tlog_n;
  log_edge(w, src, rel, tgt, WEFT_TRANSITION_EDGE_REMOVE);
  if (weft__rel_dense(&r->defs[rel])) {
    /* The move first: when it fails, the edge stays with its pair. */
    int rc = weft__dense_move(w, src, at, WEFT__PAIR_REMOVE, r->defs[rel].comp,
                              tgt, NULL);
    if (rc) {
      w->tlog_n = logged;
      return rc;
    }
    edge_drop(r, src, vec_find(out, rel, tgt));
    weft__rel_vec_settle(r, out);
    w->version++;
    return 0;
  }
  edge_drop(r, src, p);
  weft__rel_vec_settle(r, out);
  w->version++;
  /* Dropping edges moves no row: src is still where it was located. The
   * only edge gone (the usual case), nothing is left to search. */
  if (out->n && vec_has_rel(out, rel))
    return 0;
  return weft__tag_move_at(w, src, at, r->defs[rel].comp, false);
}

static int apply_remove_all(weft_world_t *w, weft_entity_t src,
                            weft__where_t *at, uint32_t rel) {
  weft__relations_t *r = w->rel;
  uint32_t s = (uint32_t)src;
  if (s >= r->nslots)
    return 0;
  weft__rel_vec_t *out = &r->out[s];
  uint32_t p = lower_bound(out, rel, 0);
  if (p == out->n || weft__rel_v(out)[p].rel != rel)
    return 0;
  uint32_t logged = w->tlog_n;
  for (uint32_t q = p; q < out->n && weft__rel_v(out)[q].rel == rel; q++)
    log_edge(w, src, rel, weft__rel_v(out)[q].other,
             WEFT_TRANSITION_EDGE_REMOVE);
  if (weft__rel_dense(&r->defs[rel])) {
    int rc = weft__dense_move(w, src, at, WEFT__PAIR_REMOVE_ALL,
                              r->defs[rel].comp, WEFT_ENTITY_NULL, NULL);
    if (rc) {
      w->tlog_n = logged;
      return rc;
    }
    at = NULL; /* moved already: the tag move below finds nothing to do */
  }
  while (p < out->n && weft__rel_v(out)[p].rel == rel)
    edge_drop(r, src, p);
  weft__rel_vec_settle(r, out);
  w->version++;
  return at ? weft__tag_move_at(w, src, at, r->defs[rel].comp, false) : 0;
}

/* ---- deaths ---------------------------------------------------------------
 */

/* A fresh visit epoch over every slot; the marks restart from zero when
 * the counter wraps. */
int weft__rel_epoch(weft_world_t *w, weft__relations_t *r) {
  if (r->mark_cap < r->nslots) {
    uint32_t ncap = r->nslots > 256 ? r->nslots : 256;
    uint32_t *m =
        weft__realloc(&w->alloc, r->mark, (size_t)r->mark_cap * sizeof(*m),
                      (size_t)ncap * sizeof(*m));
    if (!m)
      return WEFT_ENOMEM;
    memset(m + r->mark_cap, 0, (size_t)(ncap - r->mark_cap) * sizeof(*m));
    r->mark = m;
    r->mark_cap = ncap;
  }
  if (++r->epoch == 0) {
    memset(r->mark, 0, (size_t)r->mark_cap * sizeof(*r->mark));
    r->epoch = 1;
  }
  return 0;
}

/* Pushes e onto the cascade list. */
static int list_push(weft_world_t *w, weft__relations_t *r, uint32_t *n,
                     weft_entity_t e) {
  if (weft__grow(&w->alloc, &r->list, &r->list_cap, *n + 1, sizeof(*r->list),
                 64))
    return WEFT_ENOMEM;
  r->list[(*n)++] = e;
  return 0;
}

/*
 * Collects, breadth-first, the sources of e's CASCADE relations, their
 * sources, and so on (each once, e excluded) into r->list: the whole
 * subtree at once, so that a deep cascade costs one pass, not one drain
 * wave per level (the 64-wave limit stays for observers' cascades).
 */
static int cascade_collect(weft_world_t *w, weft__relations_t *r,
                           weft_entity_t e, uint32_t *n) {
  int rc = weft__rel_epoch(w, r);
  if (rc)
    return rc;
  weft__rel_visit(r, (uint32_t)e);
  *n = 0;
  /* The list doubles as the work queue: entry i's sources are appended
   * when i is reached, so every entity comes after its target. */
  rc = list_push(w, r, n, e);
  for (uint32_t i = 0; rc == 0 && i < *n; i++) {
    uint32_t s = (uint32_t)r->list[i];
    if (s >= r->nslots)
      continue;
    const weft__rel_vec_t *in = &r->in[s];
    for (uint32_t j = 0; rc == 0 && j < in->n; j++) {
      const weft__rel_edge_t *x = &weft__rel_v(in)[j];
      if (!(r->defs[x->rel].flags & WEFT_RELATION_CASCADE) ||
          !weft__rel_visit(r, (uint32_t)x->other))
        continue;
      rc = list_push(w, r, n, x->other);
    }
  }
  return rc;
}

/* Kills x, a member of a cascade: observers first (inside a drain), then
 * its edges, then its row. */
static void cascade_kill(weft_world_t *w, weft_entity_t x) {
  weft__where_t at;
  if (!weft__locate(w, x, &at))
    return;
  if (w->txn.draining) {
    weft__obs_despawn(w, at.chunk, at.row); /* sees x alive, edges too */
    if (!weft__locate(w, x, &at))
      return;
  }
  weft__rel_on_despawn(w, x);
  weft__locate(w, x, &at); /* tag moves of its sources may have moved it */
  weft__index_kill_entity(&w->index, &w->alloc, at.rec, x);
  weft__row_remove(w, at.arch, at.chunk, at.row);
  w->despawns++;
  w->version++;
}

/* Whether slot s has an incoming edge of a CASCADE relation. */
static bool has_cascade_in(const weft__relations_t *r, uint32_t s) {
  const weft__rel_vec_t *in = &r->in[s];
  for (uint32_t j = 0; j < in->n; j++)
    if (r->defs[weft__rel_v(in)[j].rel].flags & WEFT_RELATION_CASCADE)
      return true;
  return false;
}

static int cascade(weft_world_t *w, weft__relations_t *r, weft_entity_t e) {
  uint32_t n = 0;
  int rc = cascade_collect(w, r, e, &n);
  if (rc)
    return weft__fail(w, rc, WEFT__FILE, WEFT__LINE,
                      "out of memory collecting the cascade of %#llx",
                      (unsigned long long)e);
  /* Deepest first (the list reversed): each entity dies after its
   * sources, so no source leaves the relation's archetype only to die. The
   * flag keeps the kills from collecting cascades again: their sources
   * are in the list, and dead by the time they die. */
  r->cascading = true;
  for (uint32_t i = n; i-- > 1;)
    cascade_kill(w, r->list[i]);
  r->cascading = false;
  return 0;
}

int weft__rel_on_despawn(weft_world_t *w, weft_entity_t e) {
  weft__relations_t *r = w->rel;
  uint32_t s = (uint32_t)e;
  if (!r || s >= r->nslots || !weft__lookup(w, e))
    return 0;
  int err = 0;
  if (r->cascades && !r->cascading && has_cascade_in(r, s))
    err = cascade(w, r, e);
  /* Outgoing: the targets' reverse entries and the payloads go; e's tag
   * goes with its row. */
  weft__rel_vec_t *out = &r->out[s];
  const weft__rel_edge_t *oe = weft__rel_v(out); /* fixed: nothing grows */
  for (uint32_t j = 0; j < out->n; j++) {
    reverse_erase(r, oe[j].other, oe[j].back);
    payload_give(&r->defs[oe[j].rel], oe[j].slot);
  }
  r->edges -= out->n;
  out->n = 0;
  weft__rel_vec_settle(r, out);
  /* Incoming, from the back: each source loses its edge to e, and the
   * relation's archetype when that was its last one. */
  weft__rel_vec_t *in = &r->in[s];
  while (in->n) {
    weft__rel_edge_t x = weft__rel_v(in)[--in->n];
    uint32_t xs = (uint32_t)x.other;
    uint32_t p = vec_find(&r->out[xs], x.rel, e);
    if (p == UINT32_MAX)
      continue;
    log_edge(w, x.other, x.rel, e, WEFT_TRANSITION_EDGE_REMOVE);
    payload_give(&r->defs[x.rel], weft__rel_v(&r->out[xs])[p].slot);
    vec_erase(&r->out[xs], p);
    weft__rel_vec_settle(r, &r->out[xs]);
    r->edges--;
    int rc = tag_if_last(w, x.other, x.rel, e);
    if (rc && !err)
      err = rc;
  }
  weft__rel_vec_settle(r, in);
  return err;
}

/* ---- the public calls and their staging -----------------------------------
 */

/* Whether c is a relation of w; its store index in *rel. */
static int rel_of(weft_world_t *w, weft_component_t c, uint32_t *rel) {
  const weft__rel_def_t *d = weft__rel_def(w->rel, c);
  WEFT_CHECK(w, d, WEFT_EINVAL, "component id %u is not a relation",
             (unsigned)c);
  *rel = (uint32_t)(d - w->rel->defs);
  return 0;
}

/* Stages an operation; the value is copied into the store's bytes. */
static int queue_op(weft_world_t *w, uint32_t op, weft_entity_t src,
                    uint32_t rel, weft_entity_t tgt, const void *value) {
  weft__relations_t *r = w->rel;
  uint32_t size = r->defs[rel].size, voff = WEFT__REL_NOVALUE;
  if (weft__grow(&w->alloc, &r->ops, &r->ops_cap, r->nops + 1, sizeof(*r->ops),
                 64))
    return weft__fail(w, WEFT_ENOMEM, WEFT__FILE, WEFT__LINE,
                      "out of memory staging an edge");
  if (value && size && op == WEFT__RELOP_ADD) {
    if (weft__grow(&w->alloc, &r->bytes, &r->bytes_cap, r->nbytes + size, 1,
                   1024))
      return weft__fail(w, WEFT_ENOMEM, WEFT__FILE, WEFT__LINE,
                        "out of memory staging an edge's value");
    voff = r->nbytes;
    memcpy(r->bytes + voff, value, size);
    r->nbytes += size;
  }
  r->ops[r->nops++] = (weft__rel_op_t){src, tgt, rel, op, voff};
  return 0;
}

int weft__rel_queue(weft_world_t *w, uint32_t op, weft_entity_t src,
                    weft_component_t c, weft_entity_t tgt, const void *value) {
  uint32_t rel = 0;
  int rc = rel_of(w, c, &rel);
  return rc ? rc : queue_op(w, op, src, rel, tgt, value);
}

/* Whether e is live, or a staged spawn that the drain will place. */
static bool end_ok(const weft_world_t *w, weft_entity_t e) {
  return weft__lookup(w, e) || weft__index_is_reserved(&w->index, e);
}

/* The shared body of the three mutating calls. */
/* The error for an edge with an end that is not live. */
static int stale_end(weft_world_t *w, weft_entity_t src, weft_entity_t tgt) {
  weft__count_stale(w);
  return weft__fail(w, WEFT_ESTALE, WEFT__FILE, WEFT__LINE,
                    "edge %#llx -> %#llx: an end is not live in this world",
                    (unsigned long long)src, (unsigned long long)tgt);
}

static int mutate(weft_world_t *w, uint32_t op, weft_entity_t src,
                  weft_component_t c, weft_entity_t tgt, const void *value) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  uint32_t rel = 0;
  int rc = rel_of(w, c, &rel);
  if (rc)
    return rc;
  weft__relations_t *r = w->rel;
  WEFT_CHECK(w, !r->busy, WEFT_EBUSY,
             "edges cannot change inside a relation callback");
  WEFT_CHECK(w, op == WEFT__RELOP_REMOVE_ALL || tgt != WEFT_ENTITY_NULL,
             WEFT_EINVAL, "the target of an edge must not be NULL");
  bool staged = weft__routing(w);
  /* The direct path locates the source once and hands the row to the
   * archetype move; the target only has to be live. */
  weft__where_t at;
  /* A direct removal leaves the target unchecked while the edge is
   * there: edges to a dead handle are dropped when it dies, so an edge
   * found names a live target. */
  bool ok = staged ? end_ok(w, src) &&
                         (op == WEFT__RELOP_REMOVE_ALL || end_ok(w, tgt))
                   : weft__locate(w, src, &at) &&
                         (op != WEFT__RELOP_ADD || weft__lookup(w, tgt));
  if (!ok)
    return stale_end(w, src, tgt);
  if (staged) {
    rc = queue_op(w, op, src, rel, tgt, value);
    /* Routed only because observers exist: the call is its own scope. */
    if (rc == 0 && !weft__txn_in_scope(&w->txn) && !w->txn.draining)
      rc = weft__txn_drain(w);
    return rc;
  }
  switch (op) {
  case WEFT__RELOP_ADD:
    rc = apply_add(w, src, &at, rel, tgt, value);
    break;
  case WEFT__RELOP_REMOVE:
    rc = apply_remove(w, src, &at, rel, tgt);
    if (rc == REL_NO_EDGE)
      return weft__lookup(w, tgt) ? 0 : stale_end(w, src, tgt);
    break;
  default:
    rc = apply_remove_all(w, src, &at, rel);
    break;
  }
  WEFT_CHECK(w, rc == 0, rc, "edge %#llx -> %#llx could not be changed",
             (unsigned long long)src, (unsigned long long)tgt);
  return 0;
}

/* ---- the direct fast paths -----------------------------------------------
 *
 * The usual direct change is a source's first edge going in or its only
 * edge going out (every child's ChildOf, every unit's squad). These paths
 * do that with the fewest loads and calls, and decline (REL_SLOW) anything
 * else: errors, staging, payload growth, a source with other edges, a
 * vector or pool that needs memory, a dense relation whose pair
 * transition is not cached yet. mutate() then does the general work,
 * checks and error reports included, from the start: a declined call has
 * changed nothing.
 */

/* A fast path declined; mutate() takes over. */
#define REL_SLOW 2

/* Whether the direct paths may run for component c: a world with a
 * store, no traversal running, calls not routed, c in range. Observer
 * events (the transition log) must decline too, the fast moves telling
 * nobody, and they do: calls are routed while any are set
 * (weft__route_sync() follows every change of obs_events), so the
 * routing test covers them. The public calls test it once, before any
 * path saves a register. */
static inline bool fast_ok(const weft_world_t *w, weft_component_t c) {
  const weft__relations_t *r = w ? w->rel : NULL;
  return r && c <= WEFT_MAX_COMPONENTS && !r->busy && !weft__routing(w);
}

/* weft__tag_move_at() inlined for the fast paths, which run only where
 * there are no observer events to tell (fast_ok()): the tag of relation
 * comp goes on (add) or off live e, located at *at. */
static inline __attribute__((always_inline)) int
fast_move(weft_world_t *w, weft_entity_t e, weft__where_t *at,
          weft_component_t comp, bool add) {
  if (weft__mask_test(&at->arch->present, comp) == add)
    return 0;
  const weft__edge_t *edge;
  return weft__move_along(
      w, e, at, add ? WEFT__EDGE_REL_ADD : WEFT__EDGE_REL_REMOVE, comp, &edge);
}

_Static_assert(sizeof(weft__rel_edge_t) == 24 &&
                   offsetof(weft__rel_edge_t, slot) == 12 &&
                   offsetof(weft__rel_edge_t, pad) == 20,
               "an edge is a handle and two words of two fields");

/* Writes edge (other, rel, slot, back), pad 0, as three 8-byte words: the
 * first-edge path writes two edges a call, which compilers otherwise
 * store field by field. */
static inline void edge_put(weft__rel_edge_t *e, weft_entity_t other,
                            uint32_t rel, uint32_t slot, uint32_t back) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  const uint64_t rs = (uint64_t)slot << 32 | rel, bp = back;
  unsigned char *p = (unsigned char *)e;
  memcpy(p, &other, 8);
  memcpy(p + 8, &rs, 8);
  memcpy(p + 16, &bp, 8);
#else
  *e = (weft__rel_edge_t){other, rel, slot, back, 0};
#endif
}

/* The store's side of a first edge: src's only edge, to tgt, into its
 * empty edges oe, and the last of tgt's reverse entries (in has room, so
 * that with an entry already there they are past the inline one). */
static inline __attribute__((always_inline)) void
first_edge_put(weft__relations_t *r, weft__rel_vec_t *out, weft__rel_edge_t *oe,
               weft__rel_vec_t *in, uint32_t rel, uint32_t slot,
               weft_entity_t src, weft_entity_t tgt) {
  const uint32_t back = in->n;
  edge_put(oe, tgt, rel, slot, back);
  out->n = 1;
  /* Appended: still sorted when it comes after the last entry. */
  weft__rel_edge_t *x;
  if (back == 0) {
    x = weft__rel_v(in);
    in->sorted = 1;
  } else {
    x = &in->heap[back];
    if (!in->sorted || !edge_less(x - 1, rel, src))
      in_unsorted(r, tgt);
  }
  edge_put(x, src, rel, slot, (uint32_t)(tgt >> 32)); /* weft__rel_in_entry */
  in->n = back + 1;
  r->edges++;
}

/* Edge (rel, tgt) of out-vector o, one of several, learns that its
 * reverse entry is now at pos: out of line, so that the usual source (one
 * edge) keeps nothing across a call. */
static __attribute__((noinline)) void
back_set(weft__rel_vec_t *o, uint32_t rel, weft_entity_t tgt, uint32_t pos) {
  weft__rel_v(o)[vec_find(o, rel, tgt)].back = pos;
}

/* The store's side of an only edge going: out's edge, to tgt, whose
 * reverse entry is at pos, and that entry, whose place the last entry
 * takes (the caller gives its payload slot back). */
static inline __attribute__((always_inline)) void
only_edge_drop(weft__relations_t *r, weft__rel_vec_t *out, uint32_t pos,
               weft_entity_t tgt) {
  out->n = 0;
  weft__rel_vec_t *in = &r->in[(uint32_t)tgt];
  const uint32_t last = --in->n;
  if (pos != last) {
    /* The edge the moved entry mirrors learns where it went (found at
     * once when its source has one edge). Two entries or more: they are
     * past the inline one. */
    weft__rel_edge_t *e = in->heap;
    const weft__rel_edge_t m = e[pos] = e[last];
    weft__rel_vec_t *o = &r->out[(uint32_t)m.other];
    weft__rel_edge_t *oe = weft__rel_v_n(o, 1);
    if (oe)
      oe->back = pos;
    else
      back_set(o, m.rel, tgt, pos);
    in_unsorted(r, tgt);
  }
  r->edges--;
}

/* Whether tgt, whose slot's reverse entries are in, is live: vouched for
 * by its last entry when it has sources (weft__rel_in_entry()), looked up
 * when it has none. in has room, so that entries there are past the
 * inline one. */
static inline __attribute__((always_inline)) bool
target_vouched(const weft_world_t *w, const weft__rel_vec_t *in,
               weft_entity_t tgt) {
  return (in->n && in->heap[in->n - 1].back == (uint32_t)(tgt >> 32)) ||
         weft__lookup(w, tgt);
}

/* Takes back the edge add_first() put in when its move failed: every
 * value it needs is in the store, so none lives across the move. */
static __attribute__((noinline, cold)) void
add_first_undo(weft__relations_t *r, weft_entity_t src, weft_entity_t tgt) {
  weft__rel_vec_t *out = &r->out[(uint32_t)src];
  const weft__rel_edge_t e = weft__rel_v(out)[0];
  out->n = 0;
  r->in[(uint32_t)tgt].n--;
  payload_give(&r->defs[e.rel], e.slot);
  r->edges--;
}

/* add_first() for a dense relation (fast_ok() holds): the row moves along
 * the cached pair transition first, so that a failed move has changed
 * nothing, then the store takes the edge. A payload goes into the
 * relation's column as weft__dense_move() writes it; with no observers
 * nothing can move the caller's value before it is copied. */
static inline __attribute__((always_inline)) int
add_first_dense(weft_world_t *w, weft_entity_t src, weft_component_t c,
                weft_entity_t tgt, const void *value) {
  weft__relations_t *r = w->rel;
  const uint32_t rel = r->dense_by_comp[c] - 1u;
  const uint32_t s = (uint32_t)src, t = (uint32_t)tgt;
  if (rel == UINT32_MAX || tgt == WEFT_ENTITY_NULL ||
      (s > t ? s : t) >= r->nslots)
    return REL_SLOW;
  weft__rel_vec_t *in = &r->in[t];
  if (in->n == in->cap)
    return REL_SLOW;
  if (!target_vouched(w, in, tgt))
    return REL_SLOW;
  weft__where_t at;
  if (!weft__locate(w, src, &at))
    return REL_SLOW;
  weft__rel_vec_t *out = &r->out[s];
  if (out->n)
    return REL_SLOW;
  const weft__edge_t *edge =
      weft__pair_edge_cached(at.arch, WEFT__PAIR_ADD, c, tgt);
  if (!edge || weft__move_row(w, src, &at, edge))
    return REL_SLOW; /* mutate() builds the transition, or fails the same */
  if (edge->col) {
    weft__write_or_zero(edge->to, edge->col, at.chunk, at.row, value);
    weft__mark_write(w, at.chunk, edge->col, at.row);
  }
  /* Its edges found after the move: nothing lives across it. */
  first_edge_put(r, out, weft__rel_v(out), in, rel, WEFT__REL_NOSLOT, src, tgt);
  return 0;
}

/* remove_only() for a dense relation (fast_ok() holds): the move along
 * the cached pair transition first, then the store. */
static inline __attribute__((always_inline)) int
remove_only_dense(weft_world_t *w, weft_entity_t src, weft_component_t c,
                  weft_entity_t tgt) {
  weft__relations_t *r = w->rel;
  const uint32_t rel = r->dense_by_comp[c] - 1u;
  weft__where_t at;
  if (rel == UINT32_MAX || !weft__locate(w, src, &at) ||
      (uint32_t)src >= r->nslots)
    return REL_SLOW;
  weft__rel_vec_t *out = &r->out[(uint32_t)src];
  const weft__rel_edge_t *e = weft__rel_v_n(out, 1);
  if (!e || e->rel != rel || e->other != tgt)
    return REL_SLOW;
  const weft__edge_t *edge =
      weft__pair_edge_cached(at.arch, WEFT__PAIR_REMOVE, c, tgt);
  if (!edge || weft__move_row(w, src, &at, edge))
    return REL_SLOW;
  only_edge_drop(r, out, e->back, tgt);
  return 0;
}

/* The first edge of src, to tgt, of sparse relation c (store index rel):
 * apply_add() for a source without edges, with room at the target and,
 * for a payload, in the slab. The edge goes in before the move into the
 * relation's archetype, so that little has to live across it, and comes
 * out again when the move fails. */
static inline __attribute__((always_inline)) int
add_first(weft_world_t *w, weft_entity_t src, weft_component_t c,
          weft_entity_t tgt, const void *value, uint32_t kind, bool slab) {
  weft__relations_t *r = w->rel;
  const uint32_t rel = (slab ? kind & ~WEFT__REL_SLAB_BIT : kind) - 1u;
  const uint32_t s = (uint32_t)src, t = (uint32_t)tgt;
  if (tgt == WEFT_ENTITY_NULL || (s > t ? s : t) >= r->nslots)
    return REL_SLOW;
  /* The target first, while little else is live: one with sources is
   * live when their entries carry its high word (weft__rel_in_entry()),
   * one without is looked up. */
  weft__rel_vec_t *in = &r->in[t];
  const uint32_t back = in->n;
  if (back == in->cap)
    return REL_SLOW;
  if (!target_vouched(w, in, tgt))
    return REL_SLOW;
  weft__where_t at;
  if (!weft__locate(w, src, &at))
    return REL_SLOW;
  weft__rel_vec_t *out = &r->out[s];
  weft__rel_edge_t *oe = weft__rel_v_n(out, 0);
  if (!oe)
    return REL_SLOW;
  uint32_t slot = WEFT__REL_NOSLOT;
  if (slab) {
    weft__rel_def_t *d = &r->defs[rel];
    if (!d->nfree && d->slab_n == d->slab_cap)
      return REL_SLOW;
    slot = payload_take(d, value);
  }
  /* The sorted flag stays right if the move fails: the entries before
   * stay as they were, and a queued target is only sorted again. */
  first_edge_put(r, out, oe, in, rel, slot, src, tgt);
  /* The move also moves weft_world_structure_version(), as every edge
   * change must. */
  if (__builtin_expect(fast_move(w, src, &at, c, true) != 0, 0)) {
    add_first_undo(w->rel, src, tgt);
    return REL_SLOW; /* mutate() fails the same way and says why */
  }
  return 0;
}

/* Removes the only edge of src, when it is (c, tgt) of sparse relation c
 * (store index rel): apply_remove() for a source with one edge. */
static inline __attribute__((always_inline)) int
remove_only(weft_world_t *w, weft_entity_t src, weft_component_t c,
            weft_entity_t tgt, uint32_t kind) {
  weft__relations_t *r = w->rel;
  const uint32_t rel = (kind & ~WEFT__REL_SLAB_BIT) - 1u;
  weft__where_t at;
  if (!weft__locate(w, src, &at) || (uint32_t)src >= r->nslots)
    return REL_SLOW;
  weft__rel_vec_t *out = &r->out[(uint32_t)src];
  const weft__rel_edge_t *e = weft__rel_v_n(out, 1);
  if (!e || e->rel != rel || e->other != tgt)
    return REL_SLOW;
  const uint32_t slot = e->slot;
  only_edge_drop(r, out, e->back, tgt);
  payload_give(&r->defs[rel], slot);
  int rc = fast_move(w, src, &at, c, false); /* moves the version too */
  WEFT_CHECK(w, rc == 0, rc, "edge %#llx -> %#llx could not be changed",
             (unsigned long long)src, (unsigned long long)tgt);
  return 0;
}

int weft__rel_restore_edge(weft_world_t *w, weft_entity_t src,
                           weft_component_t c, weft_entity_t tgt,
                           const void *value, uint32_t back) {
  weft__relations_t *r = w->rel;
  const weft__rel_def_t *cd = weft__rel_def(r, c);
  if (!cd)
    return WEFT_ENOCOMP;
  uint32_t rel = (uint32_t)(cd - r->defs);
  weft__rel_def_t *d = &r->defs[rel];
  uint32_t s = (uint32_t)src, t = (uint32_t)tgt, p;
  bool found;
  int rc = edge_place(w, r, src, rel, tgt, &p, &found);
  if (rc)
    return rc;
  weft__rel_vec_t *out = &r->out[s];
  if (found)
    return WEFT_EEXIST;
  if ((d->flags & WEFT_RELATION_EXCLUSIVE) && vec_has_rel(out, rel))
    return WEFT_EEXIST; /* a second edge of an exclusive relation */
  if (vec_room(w, out) || vec_room(w, &r->in[t]) || slab_room(w, d))
    return WEFT_ENOMEM;
  /* The rows were restored with their tags, pairs and dense payload
   * columns: only the store's side of the edge is missing. */
  uint32_t slot = payload_take(d, value);
  weft__rel_vec_t *in = &r->in[t];
  vec_insert(out, p, (weft__rel_edge_t){tgt, rel, slot, in->n, 0});
  /* Where the reverse entry belongs waits in its pad for
   * weft__rel_restore_finish(). */
  weft__rel_edge_t x = weft__rel_in_entry(src, rel, slot, tgt);
  x.pad = back;
  weft__rel_v(in)[in->n++] = x;
  r->edges++;
  return 0;
}

/* Puts target t's reverse entries at the positions their pads name (a
 * permutation of [0, n), else WEFT_EFORMAT), and tells the edges they
 * mirror; an unsorted result is queued as the saved world's was. */
static int restore_in(weft__relations_t *r, weft_entity_t t) {
  weft__rel_vec_t *in = &r->in[(uint32_t)t];
  weft__rel_edge_t *v = weft__rel_v(in);
  for (uint32_t k = 0; k < in->n; k++)
    while (v[k].pad != k) {
      uint32_t j = v[k].pad;
      if (j >= in->n || v[j].pad == j)
        return WEFT_EFORMAT; /* out of range, or taken twice */
      weft__rel_edge_t x = v[j];
      v[j] = v[k];
      v[k] = x;
    }
  in->sorted = 1;
  for (uint32_t k = 0; k < in->n; k++) {
    v[k].pad = 0;
    weft__rel_vec_t *o = &r->out[(uint32_t)v[k].other];
    weft__rel_v(o)[vec_find(o, v[k].rel, t)].back = k;
    if (k && !in_less(&v[k - 1], &v[k]))
      in->sorted = 0;
  }
  if (!in->sorted)
    in_unsorted(r, t);
  return 0;
}

int weft__rel_restore_finish(weft_world_t *w) {
  weft__relations_t *r = w->rel;
  for (uint32_t s = 0; r && s < r->nslots; s++) {
    if (!r->in[s].n)
      continue;
    /* The target's handle: any of its sources' out-edges names it. */
    const weft__rel_edge_t *x = &weft__rel_v(&r->in[s])[0];
    const weft__rel_vec_t *o = &r->out[(uint32_t)x->other];
    weft_entity_t t = WEFT_ENTITY_NULL;
    const weft__rel_edge_t *e = weft__rel_v(o);
    for (uint32_t j = 0; j < o->n; j++)
      if ((uint32_t)e[j].other == s && e[j].rel == x->rel)
        t = e[j].other;
    int rc = t == WEFT_ENTITY_NULL ? WEFT_EFORMAT : restore_in(r, t);
    if (rc)
      return rc;
  }
  return 0;
}

/* weft_relation_add() of a dense relation where fast_ok() holds (or of
 * no relation: mutate() says so). */
static __attribute__((noinline)) int
add_other(weft_world_t *w, weft_entity_t src, weft_component_t c,
          weft_entity_t tgt, const void *value) {
  int rc = add_first_dense(w, src, c, tgt, value);
  return rc != REL_SLOW ? rc : mutate(w, WEFT__RELOP_ADD, src, c, tgt, value);
}

static __attribute__((noinline)) int remove_other(weft_world_t *w,
                                                  weft_entity_t src,
                                                  weft_component_t c,
                                                  weft_entity_t tgt) {
  int rc = remove_only_dense(w, src, c, tgt);
  return rc != REL_SLOW ? rc : mutate(w, WEFT__RELOP_REMOVE, src, c, tgt, NULL);
}

/* weft_relation_add() of sparse relation c (its sparse_by_comp entry
 * kind) where fast_ok() holds. */
static __attribute__((noinline)) int
add_slab(weft_world_t *w, weft_entity_t src, weft_component_t c,
         weft_entity_t tgt, const void *value, uint32_t kind) {
  int rc = add_first(w, src, c, tgt, value, kind, true);
  return rc != REL_SLOW ? rc : mutate(w, WEFT__RELOP_ADD, src, c, tgt, value);
}

/* The same for a relation without slab payloads (tag edges: a compiled
 * path of its own, with no payload slot to keep in a register). */
static __attribute__((noinline)) int
add_sparse(weft_world_t *w, weft_entity_t src, weft_component_t c,
           weft_entity_t tgt, const void *value, uint32_t kind) {
  if (__builtin_expect((kind & WEFT__REL_SLAB_BIT) != 0, 0))
    return add_slab(w, src, c, tgt, value, kind);
  int rc = add_first(w, src, c, tgt, value, kind, false);
  return rc != REL_SLOW ? rc : mutate(w, WEFT__RELOP_ADD, src, c, tgt, value);
}

static __attribute__((noinline)) int
remove_sparse(weft_world_t *w, weft_entity_t src, weft_component_t c,
              weft_entity_t tgt, uint32_t kind) {
  int rc = remove_only(w, src, c, tgt, kind);
  return rc != REL_SLOW ? rc : mutate(w, WEFT__RELOP_REMOVE, src, c, tgt, NULL);
}

/* The public calls test fast_ok() and dispatch (the general path, a
 * sparse or a dense one's fast path) without saving a register: each
 * path then saves what it needs once. */
int weft_relation_add(weft_world_t *w, weft_entity_t src, weft_component_t c,
                      weft_entity_t tgt, const void *value) {
  if (!fast_ok(w, c))
    return mutate(w, WEFT__RELOP_ADD, src, c, tgt, value);
  const uint32_t kind = w->rel->sparse_by_comp[c];
  return kind ? add_sparse(w, src, c, tgt, value, kind)
              : add_other(w, src, c, tgt, value);
}

int weft_relation_remove(weft_world_t *w, weft_entity_t src, weft_component_t c,
                         weft_entity_t tgt) {
  if (!fast_ok(w, c))
    return mutate(w, WEFT__RELOP_REMOVE, src, c, tgt, NULL);
  const uint32_t kind = w->rel->sparse_by_comp[c];
  return kind ? remove_sparse(w, src, c, tgt, kind)
              : remove_other(w, src, c, tgt);
}

int weft__rel_remove_all(weft_world_t *w, weft_entity_t e, weft_component_t c) {
  return mutate(w, WEFT__RELOP_REMOVE_ALL, e, c, WEFT_ENTITY_NULL, NULL);
}

int weft__rel_phase(weft_world_t *w) {
  weft__relations_t *r = w->rel;
  uint32_t end = r->nops;
  int err = 0;
  for (uint32_t i = r->ops_from; i < end; i++) {
    weft__rel_op_t op = r->ops[i];
    weft__where_t at;
    if (!weft__locate(w, op.src, &at) ||
        (op.op != WEFT__RELOP_REMOVE_ALL && !weft__lookup(w, op.tgt))) {
      weft__count_stale_cmd(w); /* an end died (or never was) */
      continue;
    }
    int rc;
    if (op.op == WEFT__RELOP_ADD)
      rc = apply_add(w, op.src, &at, op.rel, op.tgt,
                     op.voff == WEFT__REL_NOVALUE ? NULL : r->bytes + op.voff);
    else if (op.op == WEFT__RELOP_REMOVE) {
      rc = apply_remove(w, op.src, &at, op.rel, op.tgt);
      rc = rc == REL_NO_EDGE ? 0 : rc; /* both ends were checked above */
    } else
      rc = apply_remove_all(w, op.src, &at, op.rel);
    if (rc && !err)
      err = weft__fail(w, rc, WEFT__FILE, WEFT__LINE,
                       "staged edge %#llx -> %#llx could not be applied",
                       (unsigned long long)op.src, (unsigned long long)op.tgt);
  }
  weft__rel_sort_pending(r);
  r->ops_from = end;
  if (r->ops_from == r->nops)
    r->nops = r->ops_from = r->nbytes = 0;
  return err;
}

void weft__rel_drop(weft_world_t *w) {
  weft__relations_t *r = w->rel;
  if (!r)
    return;
  w->txn.dropped += r->nops - r->ops_from;
  r->nops = r->ops_from = r->nbytes = 0;
}
