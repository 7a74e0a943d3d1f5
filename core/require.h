/* SPDX-License-Identifier: MIT */
/*
 * Component requirements (weft_component_require()): adding a component
 * also adds the components it requires, transitively, in the same move.
 *
 * Each component keeps its direct requirements (in declaration order, each
 * with a copy of its default value) and, recomputed whenever a requirement
 * is declared, its closure: the components reached breadth-first from it,
 * each once, the component itself excluded (so cycles end), with the
 * default of the first requirement that reached it. The structural paths
 * read only the closure:
 *
 * - an ADD edge of the archetype graph leads to the signature plus the
 *   closure and carries the default writes of the components it adds
 *   (archetype.c), so weft_add() stays one edge lookup;
 * - spawn lists widen their archetype by the closures of their components
 *   and then write the defaults of what the list did not name;
 * - the drain replays a stage's ops to write the defaults of the
 *   components each add brought in, before the staged values, so explicit
 *   values win.
 *
 * A component without requirements costs nothing: the table is NULL until
 * the first requirement, and each path tests the component's closure count
 * only where it already branches on something of the same line.
 */
#ifndef WEFT_CORE_REQUIRE_H
#define WEFT_CORE_REQUIRE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/bitset.h"
#include "core/component.h"

struct weft_world_t;
struct weft__archetype_t;
struct weft__column_t;
struct weft__chunk_t;
struct weft__op_t;

/* A required component and the default it gets (NULL: zeros). */
typedef struct weft__req_entry_t {
  weft_component_t comp;
  const void *value; /* owned by the direct entry that declared it */
} weft__req_entry_t;

/* The requirements of one component. */
typedef struct weft__req_comp_t {
  weft__req_entry_t *direct; /* declaration order; values owned here */
  uint32_t ndirect;
  uint32_t direct_cap;
  weft__req_entry_t *closure; /* breadth-first, first reach wins */
  uint32_t nclosure;
  weft__mask_t mask; /* the closure as a mask */
} weft__req_comp_t;

/* The world's requirement table (registry.req), by component id. */
typedef struct weft__requires_t {
  weft__req_comp_t *items; /* index = component id; cap entries */
  uint32_t cap;
} weft__requires_t;

/* The requirements of component c, or NULL when it has none. */
static inline const weft__req_comp_t *weft__req_of(const weft__registry_t *reg,
                                                   weft_component_t c) {
  const weft__requires_t *r = reg->req;
  if (__builtin_expect(r == NULL, 1) || c >= r->cap || !r->items[c].nclosure)
    return NULL;
  return &r->items[c];
}

/* m |= the closures of the components of list[0..n). */
void weft__req_expand_list(const weft__registry_t *reg,
                           const weft_component_t *list, uint32_t n,
                           weft__mask_t *m);

/*
 * Writes the defaults a spawn list brings into rows [row0, row0 + nrows)
 * of chunk c of archetype a (the list's archetype): for each listed
 * component in order, each component of its closure that the list does
 * not name and no earlier closure reached. Tags have nothing to write.
 */
void weft__req_fill_list(const struct weft_world_t *w,
                         const struct weft__archetype_t *a,
                         struct weft__chunk_t *c, uint32_t row0, uint32_t nrows,
                         const weft_component_t *list, uint32_t n);

/*
 * Writes the defaults of a stage's adds into the entity's new row (chunk
 * c, row row of archetype target): replays the ops from the components
 * the entity had before (base), and for each add of a missing component
 * writes the defaults of the closure members still missing at that point
 * that the target has. Run before the stage's own values, which win.
 */
void weft__req_fill_ops(struct weft_world_t *w, const weft__mask_t *base,
                        struct weft__op_t *first,
                        const struct weft__archetype_t *target,
                        struct weft__chunk_t *c, uint32_t row);

/* One default write of an ADD edge: a column of the edge's target. */
typedef struct weft__edge_default_t {
  const struct weft__column_t *col;
  const void *value; /* NULL: zeros */
} weft__edge_default_t;

/*
 * The default writes of the ADD edge from @p a adding @p c to @p b: the
 * closure members of c that a lacks and b stores a column for, written to
 * out (room for the closure's length). Returns how many.
 */
uint32_t weft__req_edge_defaults(const weft__registry_t *reg,
                                 const struct weft__archetype_t *a,
                                 const struct weft__archetype_t *b,
                                 weft_component_t c, weft__edge_default_t *out);

/* Writes n edge defaults into row `row` of chunk `c` of archetype b. */
void weft__req_write_defaults(const struct weft__archetype_t *b,
                              const weft__edge_default_t *d, uint32_t n,
                              struct weft__chunk_t *c, uint32_t row);

/* Writes n edge defaults into the last k rows of archetype b. */
void weft__req_write_tail(const struct weft__archetype_t *b,
                          const weft__edge_default_t *d, uint32_t n,
                          uint32_t k);

/* Frees the table (the registry's end). */
void weft__requires_fini(weft__registry_t *reg);

#endif /* WEFT_CORE_REQUIRE_H */
