/* SPDX-License-Identifier: MIT */
/*
 * Structural operations on one entity outside a scope: despawn, add,
 * remove, set, enable and disable. Each moves the entity's row along an
 * edge of the archetype graph (or removes it), or, while calls are routed
 * (a scope, a drain, observers), stages the operation instead.
 */
#include "core/check.h"
#include "core/entity_ops.h"
#include "core/observer.h"
#include "core/relation.h"
#include "core/world.h"

/* Whether c is a relation's id (its edges need a target). Only on cold
 * branches: routed calls and the no-op cases. */
static inline bool is_relation(const weft_world_t *w, weft_component_t c) {
  return (w->registry.items[c - 1].flags & WEFT_COMPONENT_RELATION) != 0;
}

#define NOT_RELATION(w, c)                                                     \
  WEFT_CHECK(w, !is_relation(w, c), WEFT_EINVAL,                               \
             "'%s' is a relation: its edges need a target (use "               \
             "weft_relation_add)",                                             \
             w->registry.items[c - 1].name)

/* Fails with ESTALE or ENOCOMP for the mutating entry points. */
#define RESOLVE_OR_FAIL(w, e, at)                                              \
  WEFT_CHECK(w, weft__resolve(w, e, at), WEFT_ESTALE,                          \
             "entity %#llx is not live in this world",                         \
             (unsigned long long)(e))
#define COMP_OR_FAIL(w, c)                                                     \
  WEFT_CHECK(w, weft__comp_known(w, c), WEFT_ENOCOMP,                          \
             "unknown component id %u", (unsigned)(c))

int weft_despawn(weft_world_t *w, weft_entity_t e) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  if (WEFT__UNLIKELY(weft__routing(w)))
    return weft__staged_despawn(w, e);
  /* Its edges go first (and, for CASCADE relations, its sources die):
   * moves of its sources may move its row. */
  if (WEFT__UNLIKELY(w->rel != NULL)) {
    int rrc = weft__rel_on_despawn(w, e);
    if (rrc)
      return rrc;
  }
  weft__where_t at;
  RESOLVE_OR_FAIL(w, e, &at);
  /* Kill first: the row copy that follows then needs only the archetype,
   * chunk and row, which keeps its loop out of spilled registers. The
   * moved row is never e's, so the order changes nothing else. */
  weft__index_kill_entity(&w->index, &w->alloc, at.rec, e);
  weft__row_remove(w, at.arch, at.chunk, at.row);
  w->despawns++;
  w->version++;
  return 0;
}

int weft_add(weft_world_t *w, weft_entity_t e, weft_component_t c,
             const void *value) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  COMP_OR_FAIL(w, c);
  if (WEFT__UNLIKELY(weft__routing(w))) {
    NOT_RELATION(w, c);
    return weft__staged_op(w, WEFT__OP_ADD, e, c, value);
  }
  weft__where_t at;
  RESOLVE_OR_FAIL(w, e, &at);
  if (weft__mask_test(&at.arch->present, c)) {
    NOT_RELATION(w, c);
    return 0;
  }
  const weft__edge_t *edge;
  int rc = weft__move_along(w, e, &at, WEFT__EDGE_ADD, c, &edge);
  if (rc)
    return rc;
  if (edge->col)
    weft__write_or_zero(at.arch, edge->col, at.chunk, at.row, value);
  return 0;
}

int weft_remove(weft_world_t *w, weft_entity_t e, weft_component_t c) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  COMP_OR_FAIL(w, c);
  if (WEFT__UNLIKELY(weft__routing(w))) {
    if (is_relation(w, c))
      return weft__rel_remove_all(w, e, c);
    return weft__staged_op(w, WEFT__OP_REMOVE, e, c, NULL);
  }
  weft__where_t at;
  RESOLVE_OR_FAIL(w, e, &at);
  if (!weft__mask_test(&at.arch->present, c))
    return 0;
  const weft__edge_t *edge;
  int rc = weft__move_along(w, e, &at, WEFT__EDGE_REMOVE, c, &edge);
  /* The archetype graph refuses to remove a relation's bit (see
   * weft__archetype_edge_slow): removing the relation removes its edges. */
  if (WEFT__UNLIKELY(rc) && is_relation(w, c))
    return weft__rel_remove_all(w, e, c);
  return rc;
}

int weft_set(weft_world_t *w, weft_entity_t e, weft_component_t c,
             const void *value) {
  WEFT_CHECK(w, w && value, WEFT_EINVAL, "world and value must not be NULL");
  COMP_OR_FAIL(w, c);
  if (WEFT__UNLIKELY(weft__routing(w))) {
    NOT_RELATION(w, c);
    return weft__staged_op(w, WEFT__OP_SET, e, c, value);
  }
  weft__where_t at;
  RESOLVE_OR_FAIL(w, e, &at);
  if (!weft__mask_test(&at.arch->present, c))
    return weft_add(w, e, c, value);
  const weft__column_t *col = weft__archetype_col(at.arch, c);
  if (col) {
    weft__write_or_zero(at.arch, col, at.chunk, at.row, value);
    weft__mark_write(w, at.chunk, col, at.row);
  } else {
    NOT_RELATION(w, c); /* a tag: a relation's is not set this way */
  }
  return 0;
}

/* Shared body of enable/disable. */
static int toggle(weft_world_t *w, weft_entity_t e, weft_component_t c,
                  bool enable) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  COMP_OR_FAIL(w, c);
  if (WEFT__UNLIKELY(weft__routing(w)))
    return weft__staged_op(w, enable ? WEFT__OP_ENABLE : WEFT__OP_DISABLE, e, c,
                           NULL);
  weft__where_t at;
  RESOLVE_OR_FAIL(w, e, &at);
  WEFT_CHECK(w, weft__mask_test(&at.arch->present, c), WEFT_ENOTFOUND,
             "entity %#llx does not have component '%s'", (unsigned long long)e,
             w->registry.items[c - 1].name);
  if (weft__mask_test(&at.arch->enabled, c) == enable)
    return 0;
  const weft__edge_t *edge;
  return weft__move_along(
      w, e, &at, enable ? WEFT__EDGE_ENABLE : WEFT__EDGE_DISABLE, c, &edge);
}

int weft_disable(weft_world_t *w, weft_entity_t e, weft_component_t c) {
  return toggle(w, e, c, false);
}

int weft_enable(weft_world_t *w, weft_entity_t e, weft_component_t c) {
  return toggle(w, e, c, true);
}

int weft__tag_move(weft_world_t *w, weft_entity_t e, weft_component_t c,
                   bool add) {
  weft__where_t at;
  if (!weft__locate(w, e, &at))
    return 0;
  return weft__tag_move_at(w, e, &at, c, add);
}

int weft__tag_move_at(weft_world_t *w, weft_entity_t e,
                      struct weft__where_t *where, weft_component_t c,
                      bool add) {
  weft__where_t at = *where;
  if (weft__mask_test(&at.arch->present, c) == add)
    return 0;
  uint32_t op = add ? WEFT__EDGE_REL_ADD : WEFT__EDGE_REL_REMOVE;
  const weft__edge_t *edge;
  if (!w->obs_events)
    return weft__move_along(w, e, &at, op, c, &edge);
  /* Inside a drain, with observers: they see the move like any other. */
  const uint32_t mark = weft__archetypes_mark(w);
  int rc = weft__archetype_edge(w, at.arch, op, c, &edge);
  if (rc)
    return weft__rolled_back(w, mark, rc);
  weft__archetype_t *from = at.arch, *to = edge->to;
  weft__obs_move_out(w, from, to, at.chunk, at.row);
  if (!weft__locate(w, e, &at))
    return 0;
  rc = weft__move_along(w, e, &at, op, c, &edge);
  if (rc == 0)
    weft__obs_move_in(w, from, to, at.chunk, at.row);
  return rc;
}
