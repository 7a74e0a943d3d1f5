/* SPDX-License-Identifier: MIT */
/*
 * The transform hierarchy: world transforms computed from local ones down a
 * tree of exclusive "child of" edges, parents before children.
 *
 * A hierarchy keeps a plan: every entity with both transforms, in
 * breadth-first order from the roots, cut into depth levels, each entry
 * holding the addresses of its own world transform, its local transform
 * and its parent's world transform. A run checks the world's structure
 * version; while it stands still the addresses hold (weft_get's pointers
 * live until the next structural change) and the run is only the
 * arithmetic, one level after the other, each level split over the pool.
 * When the version moved the plan is rebuilt first, reusing its arrays, so
 * a steady world allocates nothing and a world whose edges change every
 * tick allocates only when it outgrows its largest tree.
 *
 * Order. Roots are the entities with both transforms and no edge, or
 * whose parent lacks a world transform, in query order (archetype
 * creation, chunk, row). Children follow their parent level by level in
 * ascending handle order (weft_relation_sources()). Each entry's result
 * depends only on its parent's result and its own local transform, so
 * the digest is the same on any number of workers. Entities on a cycle of
 * edges have no root above them: they are not reached and keep their
 * world transform.
 */
#include <stdlib.h>
#include <string.h>

#include <weft.h>
#include <weft/builtin.h>
#include <weft/relation.h>

#include "builtin_internal.h"

/* One entity of the plan. */
typedef struct xf_item_t {
  weft_transform2_t *out;          /* its world transform */
  const weft_transform2_t *local;  /* its local transform */
  const weft_transform2_t *parent; /* the parent's world; NULL: a root */
} xf_item_t;

struct weft_hierarchy_t {
  weft_world_t *world;
  weft_hierarchy_ids_t ids;
  weft_phase_t phase;
  uint32_t grain;
  weft_query_t *all; /* every entity with both transforms */
  bool registered;   /* the system was registered (one per hierarchy) */
  bool planned;      /* the plan matches version */
  uint64_t version;  /* weft_world_structure_version() of the plan */
  xf_item_t *items;  /* breadth-first */
  weft_entity_t *ents;
  uint32_t count, cap;
  uint32_t *level_end; /* items of level d end at level_end[d] */
  uint32_t levels, level_cap;
};

/* ---- the plan ------------------------------------------------------------ */

static int xf_grow(weft_hierarchy_t *h) {
  uint32_t cap = h->cap ? h->cap * 2 : 1024;
  xf_item_t *items = realloc(h->items, (size_t)cap * sizeof *items);
  if (!items)
    return WEFT_ENOMEM;
  h->items = items;
  weft_entity_t *ents = realloc(h->ents, (size_t)cap * sizeof *ents);
  if (!ents)
    return WEFT_ENOMEM;
  h->ents = ents;
  h->cap = cap;
  return 0;
}

static int xf_push(weft_hierarchy_t *h, weft_entity_t e,
                   const weft_transform2_t *parent) {
  if (h->count == h->cap) {
    int rc = xf_grow(h);
    if (rc)
      return rc;
  }
  weft_world_t *w = h->world;
  xf_item_t *it = &h->items[h->count];
  it->out = weft_get_mut(w, e, h->ids.world);
  it->local = weft_get(w, e, h->ids.local);
  it->parent = parent;
  /* Both present, one of them disabled: the entity is skipped (with its
   * subtree), like a query that does not match disabled components. */
  if (it->out && it->local && weft_is_enabled(w, e, h->ids.world) &&
      weft_is_enabled(w, e, h->ids.local))
    h->ents[h->count++] = e;
  return 0;
}

static int xf_end_level(weft_hierarchy_t *h) {
  if (h->levels == h->level_cap) {
    uint32_t cap = h->level_cap ? h->level_cap * 2 : 16;
    uint32_t *ends = realloc(h->level_end, (size_t)cap * sizeof *ends);
    if (!ends)
      return WEFT_ENOMEM;
    h->level_end = ends;
    h->level_cap = cap;
  }
  h->level_end[h->levels++] = h->count;
  return 0;
}

/* True when e is a root: no edge, or a parent without a world transform. */
static bool xf_is_root(const weft_hierarchy_t *h, weft_entity_t e) {
  weft_entity_t parent;
  if (weft_relation_first(h->world, e, h->ids.child_of, &parent) != 0)
    return true;
  return !weft_has(h->world, parent, h->ids.world) ||
         !weft_has(h->world, parent, h->ids.local);
}

static int xf_roots(weft_hierarchy_t *h) {
  weft_iter_t it;
  int rc = 0;
  for (weft_query_iter(h->all, &it); weft_iter_next(&it);)
    for (uint32_t i = 0; !rc && i < it.count; i++)
      if (xf_is_root(h, it.entities[i]))
        rc = xf_push(h, it.entities[i], NULL);
  weft_iter_close(&it);
  return rc;
}

typedef struct xf_visit_t {
  weft_hierarchy_t *h;
  const weft_transform2_t *parent;
  int rc;
} xf_visit_t;

static bool xf_child(weft_entity_t source, weft_entity_t target, void *payload,
                     void *user) {
  (void)target;
  (void)payload;
  xf_visit_t *v = user;
  weft_hierarchy_t *h = v->h;
  if (!weft_has(h->world, source, h->ids.world) ||
      !weft_has(h->world, source, h->ids.local))
    return true;
  v->rc = xf_push(h, source, v->parent);
  return v->rc == 0;
}

/* Rebuilds the plan: roots, then each level's children in handle order. */
static int xf_plan(weft_hierarchy_t *h) {
  h->count = 0;
  h->levels = 0;
  h->planned = false;
  int rc = xf_roots(h);
  if (!rc && h->count)
    rc = xf_end_level(h);
  for (uint32_t begin = 0; !rc && begin < h->count;) {
    uint32_t end = h->count;
    for (uint32_t i = begin; !rc && i < end; i++) {
      xf_visit_t v = {h, h->items[i].out, 0};
      rc = weft_relation_sources(h->world, h->ents[i], h->ids.child_of,
                                 xf_child, &v);
      if (!rc)
        rc = v.rc;
    }
    if (!rc && h->count > end)
      rc = xf_end_level(h);
    begin = end;
  }
  if (rc)
    return weft_world_fail(h->world, rc, "weft.transform: cannot plan: %s",
                           weft_strerror(rc));
  h->version = weft_world_structure_version(h->world);
  h->planned = true;
  return 0;
}

/* ---- the arithmetic ------------------------------------------------------ */

/* out = parent * local: rotate and scale the local offset into the
 * parent's frame, then compose rotations and scales. */
static inline void xf_compose(weft_transform2_t *restrict out,
                              const weft_transform2_t *restrict p,
                              const weft_transform2_t *restrict l) {
  float ox = p->scale * (p->c * l->x - p->s * l->y);
  float oy = p->scale * (p->s * l->x + p->c * l->y);
  weft_transform2_t r = {p->x + ox, p->y + oy, p->c * l->c - p->s * l->s,
                         p->s * l->c + p->c * l->s, p->scale * l->scale};
  *out = r;
}

static void xf_range(void *arg, uint32_t begin, uint32_t end, uint32_t worker) {
  (void)worker;
  const xf_item_t *items = arg;
  for (uint32_t i = begin; i < end; i++) {
    const xf_item_t *it = &items[i];
    if (it->parent)
      xf_compose(it->out, it->parent, it->local);
    else
      *it->out = *it->local;
  }
}

static void xf_levels(weft_hierarchy_t *h, weft_sysctx_t *ctx) {
  uint32_t begin = 0;
  for (uint32_t d = 0; d < h->levels; d++) {
    uint32_t end = h->level_end[d];
    if (ctx)
      weft__builtin_split(ctx, end - begin, h->grain, xf_range,
                          h->items + begin);
    else
      xf_range(h->items + begin, 0, end - begin, WEFT_WORKER_EXTERNAL);
    begin = end;
  }
}

static int xf_run(weft_hierarchy_t *h, weft_sysctx_t *ctx) {
  if (!h->planned || h->version != weft_world_structure_version(h->world)) {
    int rc = xf_plan(h);
    if (rc)
      return rc;
  }
  xf_levels(h, ctx);
  if (ctx)
    weft_sysctx_count(ctx, h->count);
  return 0;
}

static int transform_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  return xf_run(ctx->user, ctx);
}

/* ---- public -------------------------------------------------------------- */

static int xf_register_components(weft_world_t *w, weft_hierarchy_ids_t *ids) {
  static const weft_field_desc_t fields[] = {
      {"x", offsetof(weft_transform2_t, x), sizeof(float), WEFT_FIELD_F32},
      {"y", offsetof(weft_transform2_t, y), sizeof(float), WEFT_FIELD_F32},
      {"c", offsetof(weft_transform2_t, c), sizeof(float), WEFT_FIELD_F32},
      {"s", offsetof(weft_transform2_t, s), sizeof(float), WEFT_FIELD_F32},
      {"scale", offsetof(weft_transform2_t, scale), sizeof(float),
       WEFT_FIELD_F32}};
  const char *names[2] = {"weft.LocalTransform", "weft.WorldTransform"};
  weft_component_t *out[2] = {&ids->local, &ids->world};
  for (int i = 0; i < 2; i++) {
    if (weft_component_lookup(w, names[i], out[i]) == 0)
      continue;
    weft_component_desc_t d = {.name = names[i],
                               .size = sizeof(weft_transform2_t),
                               .fields = fields,
                               .field_count = 5};
    int rc = weft_component_register(w, &d, out[i]);
    if (rc)
      return rc;
  }
  return 0;
}

static int xf_child_of(weft_world_t *w, weft_component_t given,
                       weft_component_t *out) {
  weft_component_info_t info;
  if (given) {
    int rc = weft_component_info(w, given, &info);
    if (rc)
      return weft_world_fail(w, rc, "weft_hierarchy_create: child_of %u: %s",
                             given, weft_strerror(rc));
    if (!(info.flags & WEFT_COMPONENT_RELATION) ||
        !(info.flags & WEFT_RELATION_EXCLUSIVE))
      return weft_world_fail(w, WEFT_EINVAL,
                             "weft_hierarchy_create: child_of '%s' is not an "
                             "exclusive relation",
                             info.name);
    *out = given;
    return 0;
  }
  if (weft_component_lookup(w, "weft.ChildOf", out) == 0)
    return xf_child_of(w, *out, out);
  weft_relation_desc_t d = {.name = "weft.ChildOf",
                            .flags = WEFT_RELATION_EXCLUSIVE |
                                     WEFT_RELATION_SPARSE |
                                     WEFT_RELATION_CASCADE};
  return weft_relation_register(w, &d, out);
}

int weft_hierarchy_create(weft_world_t *w,
                          const weft_hierarchy_config_t *config,
                          weft_hierarchy_t **out) {
  if (!w || !out)
    return weft_world_fail(w, WEFT_EINVAL, "weft_hierarchy_create: NULL");
  *out = NULL;
  weft_hierarchy_config_t c = config ? *config : (weft_hierarchy_config_t){0};
  weft_hierarchy_t *h = calloc(1, sizeof *h);
  if (!h)
    return weft_world_fail(w, WEFT_ENOMEM, "weft_hierarchy_create: no memory");
  h->world = w;
  h->phase = c.phase ? c.phase : WEFT_PHASE_POST_FIXED_UPDATE;
  h->grain = c.grain ? c.grain : 4096;
  int rc = xf_child_of(w, c.child_of, &h->ids.child_of);
  if (!rc)
    rc = xf_register_components(w, &h->ids);
  if (!rc)
    rc = weft_query_create(
        w, &(weft_query_desc_t){.include = {h->ids.local, h->ids.world}},
        &h->all);
  if (rc) {
    free(h);
    return rc;
  }
  *out = h;
  return 0;
}

void weft_hierarchy_destroy(weft_hierarchy_t *h) {
  if (!h)
    return;
  weft_query_destroy(h->all);
  free(h->items);
  free(h->ents);
  free(h->level_end);
  free(h);
}

void weft_hierarchy_ids(const weft_hierarchy_t *h, weft_hierarchy_ids_t *out) {
  *out = h->ids;
}

int weft_hierarchy_update(weft_hierarchy_t *h) {
  if (!h)
    return WEFT_EINVAL;
  return xf_run(h, NULL);
}

uint32_t weft_hierarchy_levels(const weft_hierarchy_t *h, uint32_t *counts,
                               uint32_t cap) {
  if (!h || !h->planned)
    return 0;
  for (uint32_t d = 0; d < h->levels && d < cap; d++)
    counts[d] = h->level_end[d] - (d ? h->level_end[d - 1] : 0);
  return h->levels;
}

int weft_sys_transform(weft_world_t *w, weft_hierarchy_t *h,
                       weft_system_t *out) {
  if (!w || !h || h->world != w)
    return weft_world_fail(w, WEFT_EINVAL,
                           "weft_sys_transform: no hierarchy of this world");
  if (h->registered)
    return weft_world_fail(w, WEFT_EEXIST,
                           "weft_sys_transform: the hierarchy has a system");
  int rc = weft__builtin_unique(w, "weft_sys_transform", "weft.transform");
  if (rc)
    return rc;
  weft_system_desc_t d =
      weft__builtin_desc("weft.transform", h->phase, transform_run, h);
  d.read[0] = h->ids.local;
  d.read[1] = h->ids.child_of;
  d.write[0] = h->ids.world;
  /* The plan is rebuilt with weft_get_mut(), an owner-thread call; the
   * levels still spread over the pool from there. */
  d.flags = WEFT_SYSTEM_MAIN_THREAD;
  rc = weft__builtin_register(w, &d, out);
  if (!rc)
    h->registered = true;
  return rc;
}
