/* SPDX-License-Identifier: MIT */
/* Component requirements: declaration, closures and default writes. */
#include "core/require.h"

#include <string.h>

#include "core/check.h"
#include "core/txn.h"
#include "core/world.h"
#include "weft/require.h"

/* ---- the table ---- */

static void comp_free(const weft__registry_t *reg, weft__req_comp_t *rc) {
  for (uint32_t i = 0; i < rc->ndirect; i++) {
    const weft__component_t *c = weft__registry_get(reg, rc->direct[i].comp);
    weft__free((void *)rc->direct[i].value, c ? c->size : 0, 16);
  }
  weft__free(rc->direct, rc->direct_cap * sizeof(*rc->direct), 16);
  weft__free(rc->closure, 0, 16);
  memset(rc, 0, sizeof(*rc));
}

void weft__requires_fini(weft__registry_t *reg) {
  weft__requires_t *r = reg->req;
  if (!r)
    return;
  for (uint32_t i = 0; i < r->cap; i++)
    comp_free(reg, &r->items[i]);
  weft__free(r->items, r->cap * sizeof(*r->items), 64);
  weft__free(r, sizeof(*r), 16);
  reg->req = NULL;
}

/* Makes the table cover ids [0, n). */
static int table_reserve(weft_world_t *w, uint32_t n) {
  weft__registry_t *reg = &w->registry;
  if (!reg->req) {
    reg->req = weft__calloc(&w->alloc, sizeof(*reg->req), 16);
    if (!reg->req)
      return WEFT_ENOMEM;
  }
  weft__requires_t *r = reg->req;
  if (n <= r->cap)
    return 0;
  /* Room for every id the world can register: the table is small next to
   * the archetypes it describes, and it never has to move again. */
  uint32_t cap = WEFT_MAX_COMPONENTS + 1;
  weft__req_comp_t *items = weft__calloc(&w->alloc, cap * sizeof(*items), 64);
  if (!items)
    return WEFT_ENOMEM;
  if (r->items)
    memcpy(items, r->items, r->cap * sizeof(*items));
  weft__free(r->items, r->cap * sizeof(*r->items), 64);
  r->items = items;
  r->cap = cap;
  return 0;
}

/* ---- closures ---- */

/*
 * The closure of root: breadth-first over the direct requirements, in
 * declaration order, each component once and root never (so cycles end);
 * a component's default is that of the first requirement reaching it.
 * queue has room for every component id.
 */
static uint32_t closure_of(const weft__requires_t *r, weft_component_t root,
                           weft__req_entry_t *queue, weft__mask_t *seen) {
  memset(seen, 0, sizeof(*seen));
  weft__mask_set(seen, root);
  uint32_t n = 0;
  const weft__req_comp_t *rc = &r->items[root];
  for (uint32_t i = 0; i < rc->ndirect; i++) {
    if (!weft__mask_test(seen, rc->direct[i].comp)) {
      weft__mask_set(seen, rc->direct[i].comp);
      queue[n++] = rc->direct[i];
    }
  }
  for (uint32_t head = 0; head < n; head++) {
    const weft__req_comp_t *next = &r->items[queue[head].comp];
    for (uint32_t i = 0; i < next->ndirect; i++) {
      if (weft__mask_test(seen, next->direct[i].comp))
        continue;
      weft__mask_set(seen, next->direct[i].comp);
      queue[n++] = next->direct[i];
    }
  }
  weft__mask_clear(seen, root);
  return n;
}

/*
 * Recomputes every closure. All or nothing: the new lists are built
 * first, and only swapped in when every allocation succeeded.
 */
static int closures_rebuild(weft_world_t *w) {
  weft__requires_t *r = w->registry.req;
  uint32_t ncomp = w->registry.count;
  weft__req_entry_t queue[WEFT_MAX_COMPONENTS];
  weft__req_entry_t **lists =
      weft__calloc(&w->alloc, (ncomp + 1) * sizeof(*lists), 16);
  if (!lists)
    return WEFT_ENOMEM;
  int rc = 0;
  for (uint32_t id = 1; id <= ncomp && rc == 0; id++) {
    weft__mask_t seen;
    uint32_t n = closure_of(r, id, queue, &seen);
    if (!n)
      continue;
    lists[id] = weft__alloc(&w->alloc, n * sizeof(*queue), 16);
    if (!lists[id])
      rc = WEFT_ENOMEM;
    else
      memcpy(lists[id], queue, n * sizeof(*queue));
  }
  for (uint32_t id = 1; id <= ncomp; id++) {
    if (rc) {
      weft__free(lists[id], 0, 16);
      continue;
    }
    weft__req_comp_t *c = &r->items[id];
    weft__free(c->closure, 0, 16);
    c->closure = lists[id];
    c->nclosure = lists[id] ? closure_of(r, id, queue, &c->mask) : 0;
    if (!lists[id])
      memset(&c->mask, 0, sizeof(c->mask));
  }
  weft__free(lists, (ncomp + 1) * sizeof(*lists), 16);
  return rc;
}

/* ---- declaring ---- */

/*
 * WEFT_EBUSY when some archetype holds a component whose closure a new
 * requirement of comp changes: comp itself or anything that reaches it.
 */
static int check_unused(weft_world_t *w, weft_component_t comp) {
  weft__mask_t affected = {{0}};
  weft__mask_set(&affected, comp);
  const weft__requires_t *r = w->registry.req;
  for (uint32_t id = 1; r && id <= w->registry.count && id < r->cap; id++)
    if (weft__mask_test(&r->items[id].mask, comp))
      weft__mask_set(&affected, id);
  for (uint32_t i = 0; i < w->arch_count; i++) {
    const weft__archetype_t *a = w->archs[i];
    if (!weft__mask_intersects(&a->present, &affected))
      continue;
    WEFT__MASK_FOREACH(&affected, id) {
      WEFT_CHECK(w, !weft__mask_test(&a->present, id), WEFT_EBUSY,
                 "cannot change what '%s' requires: archetypes with '%s' "
                 "exist already (declare requirements before the first "
                 "entity gets the component)",
                 w->registry.items[comp - 1].name,
                 w->registry.items[id - 1].name);
    }
  }
  return 0;
}

/* A copy of a default value, or NULL for none. */
static int copy_default(weft_world_t *w, weft_component_t required,
                        const void *value, void **out) {
  *out = NULL;
  uint32_t size = w->registry.items[required - 1].size;
  if (!value)
    return 0;
  *out = weft__alloc(&w->alloc, size, 16);
  if (!*out)
    return WEFT_ENOMEM;
  memcpy(*out, value, size);
  return 0;
}

int weft_component_require(weft_world_t *w, weft_component_t comp,
                           weft_component_t required, const void *value) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  uint32_t n = w->registry.count;
  WEFT_CHECK(w, comp >= 1 && comp <= n, WEFT_ENOCOMP, "unknown component id %u",
             comp);
  WEFT_CHECK(w, required >= 1 && required <= n, WEFT_ENOCOMP,
             "unknown component id %u", required);
  const char *name = w->registry.items[comp - 1].name;
  WEFT_CHECK(w, comp != required, WEFT_EINVAL,
             "component '%s' cannot require itself", name);
  /* A relation's bit means "has an edge": an add cannot bring one along,
   * and adding a relation is no add that could bring others. */
  WEFT_CHECK(w,
             !((w->registry.items[comp - 1].flags |
                w->registry.items[required - 1].flags) &
               WEFT_COMPONENT_RELATION),
             WEFT_EINVAL,
             "'%s' requires '%s': relations take no part in requirements", name,
             w->registry.items[required - 1].name);
  WEFT_CHECK(w, !value || w->registry.items[required - 1].size, WEFT_ETAG,
             "'%s' requires tag '%s', which takes no value", name,
             w->registry.items[required - 1].name);
  WEFT_CHECK(w, !w->txn.draining, WEFT_EBUSY,
             "cannot declare requirements during a drain");
  int rc = check_unused(w, comp);
  if (rc)
    return rc;
  rc = table_reserve(w, n + 1);
  WEFT_CHECK(w, rc == 0, rc, "out of memory for the requirement table");
  weft__req_comp_t *rq = &w->registry.req->items[comp];
  void *copy;
  rc = copy_default(w, required, value, &copy);
  WEFT_CHECK(w, rc == 0, rc, "out of memory copying a default value");
  uint32_t size = w->registry.items[required - 1].size;
  for (uint32_t i = 0; i < rq->ndirect; i++) {
    if (rq->direct[i].comp != required)
      continue;
    /* The same pair again: a new default, nothing else changes (no edge
     * holds the old one: check_unused passed). */
    const void *old = rq->direct[i].value;
    rq->direct[i].value = copy;
    rc = closures_rebuild(w);
    if (rc) {
      rq->direct[i].value = old;
      weft__free(copy, size, 16);
      return weft__fail(w, rc, WEFT__FILE, WEFT__LINE,
                        "out of memory computing requirement closures");
    }
    weft__free((void *)old, size, 16);
    return 0;
  }
  rc = weft__grow(&w->alloc, &rq->direct, &rq->direct_cap, rq->ndirect + 1,
                  sizeof(*rq->direct), 4);
  if (rc == 0) {
    rq->direct[rq->ndirect++] = (weft__req_entry_t){required, copy};
    rc = closures_rebuild(w);
    if (rc)
      rq->ndirect--;
  }
  if (rc) {
    weft__free(copy, size, 16);
    return weft__fail(w, WEFT_ENOMEM, WEFT__FILE, WEFT__LINE,
                      "out of memory declaring a requirement of '%s'", name);
  }
  return 0;
}

int weft_component_requirements(const weft_world_t *w, weft_component_t comp,
                                weft_component_t *out, uint32_t cap,
                                uint32_t *count) {
  WEFT_CHECK(w, w && count, WEFT_EINVAL, "world and count must not be NULL");
  WEFT_CHECK(w, comp >= 1 && comp <= w->registry.count, WEFT_ENOCOMP,
             "unknown component id %u", comp);
  WEFT_CHECK(w, cap == 0 || out, WEFT_EINVAL, "out is NULL but cap is %u", cap);
  const weft__req_comp_t *rq = weft__req_of(&w->registry, comp);
  uint32_t n = rq ? rq->nclosure : 0;
  for (uint32_t i = 0; i < n && i < cap; i++)
    out[i] = rq->closure[i].comp;
  *count = n;
  return 0;
}

/* ---- expanding ---- */

void weft__req_expand_list(const weft__registry_t *reg,
                           const weft_component_t *list, uint32_t n,
                           weft__mask_t *m) {
  for (uint32_t i = 0; i < n; i++) {
    const weft__req_comp_t *rq = weft__req_of(reg, list[i]);
    if (!rq)
      continue;
    for (uint32_t k = 0; k < WEFT__MASK_WORDS; k++)
      m->w[k] |= rq->mask.w[k];
  }
}

/* Writes value (or zeros) into rows [row0, row0 + nrows) of a column. */
static void fill_rows(const weft__archetype_t *a, const weft__column_t *col,
                      weft__chunk_t *c, uint32_t row0, uint32_t nrows,
                      const void *value) {
  for (uint32_t r = 0; r < nrows; r++) {
    if (value)
      weft__column_write(a, col, c, row0 + r, value);
    else
      weft__column_zero(a, col, c, row0 + r);
  }
}

void weft__req_fill_list(const weft_world_t *w, const weft__archetype_t *a,
                         weft__chunk_t *c, uint32_t row0, uint32_t nrows,
                         const weft_component_t *list, uint32_t n) {
  weft__mask_t done = {{0}};
  for (uint32_t i = 0; i < n; i++)
    weft__mask_set(&done, list[i]);
  for (uint32_t i = 0; i < n; i++) {
    const weft__req_comp_t *rq = weft__req_of(&w->registry, list[i]);
    for (uint32_t k = 0; rq && k < rq->nclosure; k++) {
      const weft__req_entry_t *e = &rq->closure[k];
      if (weft__mask_test(&done, e->comp))
        continue;
      weft__mask_set(&done, e->comp);
      const weft__column_t *col = weft__archetype_col(a, e->comp);
      if (col)
        fill_rows(a, col, c, row0, nrows, e->value);
    }
  }
}

void weft__req_fill_ops(weft_world_t *w, const weft__mask_t *base,
                        weft__op_t *first, const weft__archetype_t *target,
                        weft__chunk_t *c, uint32_t row) {
  if (!w->registry.req || first->op == 0)
    return;
  weft__mask_t have = *base;
  for (const weft__op_t *op = first; op;
       op = weft__op_after(w->txn.ops, first, op)) {
    weft_component_t comp = op->comp;
    switch (op->op) {
    case WEFT__OP_ADD:
    case WEFT__OP_SET: {
      if (weft__mask_test(&have, comp))
        break;
      weft__mask_set(&have, comp);
      const weft__req_comp_t *rq = weft__req_of(&w->registry, comp);
      for (uint32_t k = 0; rq && k < rq->nclosure; k++) {
        const weft__req_entry_t *e = &rq->closure[k];
        if (weft__mask_test(&have, e->comp))
          continue;
        weft__mask_set(&have, e->comp);
        /* A requirement removed again later in the stage has no column
         * in the target: nothing to write. */
        const weft__column_t *col = weft__archetype_col(target, e->comp);
        if (col) {
          fill_rows(target, col, c, row, 1, e->value);
          weft__stamp_write(w, c, col); /* a row that did not move */
        }
      }
      break;
    }
    case WEFT__OP_REMOVE:
      weft__mask_clear(&have, comp);
      break;
    default:
      break;
    }
  }
}

/* ---- ADD edges ---- */

uint32_t weft__req_edge_defaults(const weft__registry_t *reg,
                                 const weft__archetype_t *a,
                                 const weft__archetype_t *b, weft_component_t c,
                                 weft__edge_default_t *out) {
  const weft__req_comp_t *rq = weft__req_of(reg, c);
  uint32_t n = 0;
  for (uint32_t k = 0; rq && k < rq->nclosure; k++) {
    const weft__req_entry_t *e = &rq->closure[k];
    const weft__column_t *col = weft__archetype_col(b, e->comp);
    if (col && !weft__mask_test(&a->present, e->comp))
      out[n++] = (weft__edge_default_t){col, e->value};
  }
  return n;
}

void weft__req_write_defaults(const weft__archetype_t *b,
                              const weft__edge_default_t *d, uint32_t n,
                              weft__chunk_t *c, uint32_t row) {
  for (uint32_t i = 0; i < n; i++)
    fill_rows(b, d[i].col, c, row, 1, d[i].value);
}

void weft__req_write_tail(const weft__archetype_t *b,
                          const weft__edge_default_t *d, uint32_t n,
                          uint32_t k) {
  uint32_t row = b->count - k;
  while (k) {
    weft__chunk_t *c = b->chunks[row / b->row_cap];
    uint32_t r = row % b->row_cap;
    uint32_t m = c->count - r < k ? c->count - r : k;
    for (uint32_t i = 0; i < n; i++)
      fill_rows(b, d[i].col, c, r, m, d[i].value);
    row += m;
    k -= m;
  }
}
