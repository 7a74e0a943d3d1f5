/* SPDX-License-Identifier: MIT */
/*
 * The uniform spatial grid: a snapshot of every entity with Position,
 * bucketed by cell and, within a cell, ordered by handle. This file makes,
 * frees and answers for a grid; grid_build.c rebuilds it every run of its
 * builder system.
 *
 * The grid's memory is its own, not the world's (weft's allocator with no
 * world's counters: core/alloc.h); the builder's
 * queries belong to the world, which is why the grid must be destroyed
 * before the world.
 */
#define _DEFAULT_SOURCE 1 /* MADV_HUGEPAGE */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <weft.h>
#include <weft/builtin.h>

#include "core/alloc.h"
#include "grid_internal.h"
#include "builtin_internal.h"

/* Arrays at least this big ask for transparent huge pages (below). */
#define GRID_HUGE_MIN (4u << 20)
#define GRID_HUGE_PAGE (2u << 20)

/*
 * The grid's arrays: the rebuild scatters into them and the neighbour
 * lookups read them at random, so with 4 KiB pages nearly every such
 * access at 1M entities (a 25 MB cell table, 40 MB of items) would also
 * miss the TLB, and the first rebuild would take a page fault every 4 KiB.
 * The whole 2 MiB pages inside a large array are advised as huge pages
 * before anything touches them (best effort). Zeroing a fresh large block
 * is free (weft__calloc leaves it to the allocator, which knows new pages
 * are zero), so the cell tables still cost nothing until used.
 */
void *weft__grid_alloc(size_t bytes, bool zero) {
  void *p = zero ? weft__calloc(NULL, bytes, 16) : weft__alloc(NULL, bytes, 64);
#ifdef MADV_HUGEPAGE
  if (p && bytes >= GRID_HUGE_MIN) {
    uintptr_t lo =
        ((uintptr_t)p + GRID_HUGE_PAGE - 1) & ~(uintptr_t)(GRID_HUGE_PAGE - 1);
    uintptr_t hi = ((uintptr_t)p + bytes) & ~(uintptr_t)(GRID_HUGE_PAGE - 1);
    if (hi > lo)
      (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
  }
#endif
  return p;
}

int weft_grid_create(weft_world_t *world, const weft_grid_config_t *config,
                     weft_grid_t **out) {
  if (!world || !config || !out)
    return weft_world_fail(world, WEFT_EINVAL, "weft_grid_create: %s is NULL",
                           !config ? "config" : "out");
  float cell = config->cell == 0.0f ? 1.0f : config->cell;
  const weft_vec2_t lo = config->min, hi = config->max;
  /* Written so that NaN fails every test. */
  if (!(cell > 0.0f) || !isfinite(cell))
    return weft_world_fail(world, WEFT_EINVAL,
                           "weft_grid_create: cell %g is not positive and "
                           "finite",
                           (double)cell);
  if (!isfinite(lo.x) || !isfinite(lo.y) || !isfinite(hi.x) ||
      !isfinite(hi.y) || !(lo.x < hi.x) || !(lo.y < hi.y))
    return weft_world_fail(world, WEFT_EINVAL,
                           "weft_grid_create: the area (%g, %g)..(%g, %g) "
                           "is not finite with min < max",
                           (double)lo.x, (double)lo.y, (double)hi.x,
                           (double)hi.y);
  uint32_t max_cells =
      config->max_cells ? config->max_cells : WEFT_GRID_CELLS_DEFAULT;
  if (max_cells > WEFT_GRID_CELLS_MAX)
    return weft_world_fail(world, WEFT_EINVAL,
                           "weft_grid_create: max_cells %u is above "
                           "WEFT_GRID_CELLS_MAX (%u)",
                           max_cells, WEFT_GRID_CELLS_MAX);
  double fx = ceil(((double)hi.x - (double)lo.x) / (double)cell);
  double fy = ceil(((double)hi.y - (double)lo.y) / (double)cell);
  if (fx < 1.0)
    fx = 1.0;
  if (fy < 1.0)
    fy = 1.0;
  if (fx * fy > (double)max_cells)
    return weft_world_fail(world, WEFT_EINVAL,
                           "weft_grid_create: %.0f x %.0f cells of size %g "
                           "is more than max_cells (%u): use larger cells "
                           "or raise max_cells",
                           fx, fy, (double)cell, max_cells);

  weft_grid_t *g = weft__calloc(NULL, sizeof *g, 16);
  if (!g)
    return weft_world_fail(world, WEFT_ENOMEM,
                           "weft_grid_create: out of memory");
  g->world = world;
  g->cell = cell;
  g->inv_cell = 1.0f / cell;
  g->minx = lo.x;
  g->miny = lo.y;
  g->nx = (int32_t)fx;
  g->ny = (int32_t)fy;
  g->ncells = (uint32_t)g->nx * (uint32_t)g->ny;
  g->starts =
      weft__grid_alloc(((size_t)g->ncells + 1) * sizeof *g->starts, true);
  g->row_band = weft__alloc(NULL, (size_t)g->ny, 16);
  if (!g->starts || !g->row_band) {
    uint32_t ncells = g->ncells;
    weft__free(g->starts, 0, 0);
    weft__free(g->row_band, 0, 0);
    weft__free(g, 0, 0);
    return weft_world_fail(world, WEFT_ENOMEM,
                           "weft_grid_create: out of memory for %u cells",
                           ncells);
  }

  /* The first free "weft.grid.N": resources are never unregistered, so a
   * destroyed grid's number stays taken and names never repeat. */
  char name[WEFT_NAME_MAX];
  int rc = WEFT_ETOOMANY;
  for (uint32_t n = 1; n <= WEFT_MAX_RESOURCES + 1; n++) {
    weft_resource_t found;
    snprintf(name, sizeof name, "weft.grid.%u", n);
    if (weft_resource_lookup(world, name, &found) == 0)
      continue;
    uint64_t zero = 0;
    rc = weft_resource_register(world, name, sizeof zero, 0, &zero, &g->res);
    g->number = n;
    break;
  }
  if (rc) {
    weft__free(g->starts, 0, 0);
    weft__free(g->row_band, 0, 0);
    weft__free(g, 0, 0);
    return rc;
  }
  *out = g;
  return 0;
}

void weft_grid_destroy(weft_grid_t *g) {
  if (!g)
    return;
  weft_query_destroy(g->still);
  weft_query_destroy(g->moving);
  weft__free(g->starts, 0, 0);
  weft__free(g->pieces, 0, 0);
  weft__free(g->items, 0, 0);
  weft__free(g->scratch, 0, 0);
  weft__free(g->cells, 0, 0);
  weft__free(g->multi, 0, 0);
  weft__free(g->at, 0, 0);
  weft__free(g->row_band, 0, 0);
  weft__free(g->aux[0], 0, 0);
  weft__free(g->aux[1], 0, 0);
  weft__free(g, 0, 0);
}

void *weft__grid_aux(weft_grid_t *g, uint32_t k, size_t bytes) {
  if (bytes <= g->aux_bytes[k])
    return g->aux[k];
  /* A quarter more than asked, so that a slowly growing need does not
   * allocate every run; a multiple of the alignment. */
  size_t want = (bytes + bytes / 4 + 63) & ~(size_t)63;
  void *p = weft__alloc(NULL, want, 64);
  if (!p)
    return NULL;
  weft__free(g->aux[k], 0, 0);
  g->aux[k] = p;
  g->aux_bytes[k] = want;
  return p;
}

weft_resource_t weft_grid_resource(const weft_grid_t *g) {
  return g ? g->res : 0;
}

float weft_grid_cell_size(const weft_grid_t *g) {
  return g ? g->cell : 0.0f;
}

void weft_grid_dims(const weft_grid_t *g, int32_t *nx, int32_t *ny) {
  if (nx)
    *nx = g ? g->nx : 0;
  if (ny)
    *ny = g ? g->ny : 0;
}

void weft_grid_cell_of(const weft_grid_t *g, float x, float y, int32_t *cx,
                       int32_t *cy) {
  int32_t a = 0, b = 0;
  if (g)
    weft__grid_cell_xy(g, x, y, &a, &b);
  if (cx)
    *cx = a;
  if (cy)
    *cy = b;
}

const weft_grid_item_t *weft_grid_cell(const weft_grid_t *g, int32_t cx,
                                       int32_t cy, uint32_t *n) {
  return weft_grid_row(g, cx, cx, cy, n); /* a row of one cell */
}

const weft_grid_item_t *weft_grid_row(const weft_grid_t *g, int32_t x0,
                                      int32_t x1, int32_t cy, uint32_t *n) {
  uint32_t k = 0;
  const weft_grid_item_t *p = g ? weft__grid_row(g, x0, x1, cy, &k) : NULL;
  if (n)
    *n = k;
  return p;
}

uint32_t weft_grid_count(const weft_grid_t *g) {
  return g ? g->count : 0;
}
