/* SPDX-License-Identifier: MIT */
/*
 * The grid's layout, for the systems that read it in their inner loops
 * (collide.c, boids.c): a neighbour lookup per entity is a few
 * instructions when inlined, against a call and its checks through the
 * public weft_grid_row(). Only grid.c and grid_build.c write a grid.
 */
#ifndef WEFT_SYSTEMS_GRID_INTERNAL_H
#define WEFT_SYSTEMS_GRID_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <weft.h>
#include <weft/builtin.h>

/* Most bands of cells a rebuild is split into (GRID_BANDS_PER_WORKER per
 * worker, grid_build.c); each band's sort is one job that reads only its own
 * items. The output does not depend on the number. */
#define GRID_BANDS 64u

struct grid_piece_t;

struct weft_grid_t {
  weft_world_t *world;
  weft_resource_t res;
  uint32_t number; /* 1 for the world's first grid, then 2, ... */
  float cell, inv_cell;
  float minx, miny;
  int32_t nx, ny;
  uint32_t ncells;
  uint32_t *starts; /* ncells + 1 offsets into items (during a rebuild:
                       counts, then scatter cursors) */
  weft_grid_item_t *items;
  weft_grid_item_t *scratch; /* gathered items, before the sort */
  uint32_t *cells; /* cell index of scratch[i]; its slot once placed */
  /* Per band, from its first item on: (first item, count) of each of its
   * cells that holds more than one item, the ones that need sorting. A
   * band has at most half as many of those as items. */
  uint32_t *multi;
  uint32_t count, cap;
  /* The rebuild's pieces of chunk runs, gathered in parallel (build()). */
  struct grid_piece_t *pieces;
  uint32_t npieces, pieces_cap;
  uint32_t band_total[GRID_BANDS], band_base[GRID_BANDS];
  uint32_t nbands;
  /* Band b's cells are [band_lo[b], band_lo[b + 1]): whole rows of cells,
   * so that an item's band follows from its row alone, through row_band
   * (ny entries; filled for nbands_filled bands). */
  uint32_t band_lo[GRID_BANDS + 1];
  /* The pool worker that sorted band b in the last rebuild, where its
   * items are in cache (WEFT_WORKER_EXTERNAL: sorted inline). Collide
   * runs a band's rows there first. */
  uint32_t band_worker[GRID_BANDS];
  uint8_t *row_band;
  uint32_t nbands_filled;
  /* Per piece, nbands words: its items in each band (band_precount),
   * then where the gather puts its next item of that band. */
  uint32_t *at;
  /* Rebuilds so far: what a consumer derived from the items (boids'
   * plan) is current while the number it noted is this one. */
  uint64_t builds;
  /* Scratch one consumer of the grid keeps beside it (boids.c's plan),
   * blocks grown by weft__grid_aux() and freed with the grid. */
  void *aux[2];
  size_t aux_bytes[2];
  /* Set by weft_sys_grid(). */
  weft_query_t *still;  /* Position, no (enabled) Velocity */
  weft_query_t *moving; /* Position and Velocity */
  weft_component_t collider, dead, key;
};

/* Block @p k (0 or 1) of the grid's scratch for its consumer (see
 * weft_grid_t.aux), at least @p bytes, 64-byte aligned; what it held is
 * lost when it grows. NULL when out of memory (the old block is kept as
 * it was). Only while no job reads the block. */
void *weft__grid_aux(weft_grid_t *g, uint32_t k, size_t bytes);

/* malloc (calloc when @p zero) for the grid's large arrays, advised as
 * transparent huge pages from GRID_HUGE_MIN bytes on (grid.c); free()
 * releases it. NULL when out of memory. Any thread. */
void *weft__grid_alloc(size_t bytes, bool zero);

/*
 * The clamped cell coordinate of offset d along an axis whose last cell
 * is top (as a float), branch-free: NaN and -inf land in cell 0, +inf in cell n
 * - 1 (the comparisons are written so that a NaN fails them), and the value is
 * in [0, top] before the conversion.
 */
static inline int32_t weft__grid_axis_top(float d, float inv, float top) {
  float f = d * inv;
  f = f > 0.0f ? f : 0.0f;
  f = f < top ? f : top;
  return (int32_t)f;
}

/* The same for an axis of n cells; loops over many positions compute the
 * top cell, (float)(n - 1), once and call weft__grid_axis_top(). */
static inline int32_t weft__grid_axis(float d, float inv, int32_t n) {
  return weft__grid_axis_top(d, inv, (float)(n - 1));
}

/* The cell of (x, y), clamped into the grid. */
static inline void weft__grid_cell_xy(const weft_grid_t *g, float x, float y,
                                      int32_t *cx, int32_t *cy) {
  *cx = weft__grid_axis(x - g->minx, g->inv_cell, g->nx);
  *cy = weft__grid_axis(y - g->miny, g->inv_cell, g->ny);
}

/* weft_grid_row() for a valid grid: the items of cells x0..x1 (clamped)
 * of row cy, one stretch, and their count in *n (0 off the grid). */
static inline const weft_grid_item_t *weft__grid_row(const weft_grid_t *g,
                                                     int32_t x0, int32_t x1,
                                                     int32_t cy, uint32_t *n) {
  *n = 0;
  if (cy < 0 || cy >= g->ny || !g->items)
    return NULL;
  x0 = x0 < 0 ? 0 : x0;
  x1 = x1 >= g->nx ? g->nx - 1 : x1;
  if (x0 > x1)
    return NULL;
  /* Cells are stored cell-major, row by row: cells x0..x1 of one row are
   * one stretch of the items array. */
  const uint32_t *row = g->starts + (uint32_t)cy * (uint32_t)g->nx;
  uint32_t first = row[x0];
  *n = row[x1 + 1] - first;
  return g->items + first;
}

/* The first cell of the 3-cell stretch around column cx in row cy, or -1
 * when the row is off the grid. */
static inline int64_t weft__grid_stretch(const weft_grid_t *g, int32_t cx,
                                         int32_t cy) {
  if (cy < 0 || cy >= g->ny)
    return -1;
  return (int64_t)cy * g->nx + (cx > 0 ? cx - 1 : 0);
}

/*
 * Prefetch hints for a 3x3 neighbourhood lookup around (x, y), for loops
 * that visit entities in an order unrelated to space (chunk order), where
 * every row lookup would otherwise miss: stage 1 fetches the three rows'
 * cell offsets, stage 2 (a few entities later, once those arrived) the
 * items of each row's 3-cell stretch, up to WEFT__GRID_PREFETCH_LINES
 * lines a row. They change nothing.
 */
static inline void weft__grid_prefetch_rows_at(const weft_grid_t *g, int32_t cx,
                                               int32_t cy) {
  for (int32_t dy = -1; dy <= 1; dy++) {
    int64_t c = weft__grid_stretch(g, cx, cy + dy);
    if (c >= 0)
      __builtin_prefetch(g->starts + c, 0, 0);
  }
}

/* Lines of each row's stretch weft__grid_prefetch_items_at() fetches: a
 * 3x3 neighbourhood of a few items a cell spans a few lines a row, and
 * fetching only the first left the others to miss (see
 * docs/performance-notes.md, systems/grid_internal.h). */
#define WEFT__GRID_PREFETCH_LINES 4u

static inline void weft__grid_prefetch_items_at(const weft_grid_t *g,
                                                int32_t cx, int32_t cy) {
  if (!g->items)
    return;
  for (int32_t dy = -1; dy <= 1; dy++) {
    int64_t c = weft__grid_stretch(g, cx, cy + dy);
    if (c < 0)
      continue;
    /* The stretch's cells end at c + 3 or at the row's end. */
    int64_t row_end = (int64_t)(cy + dy + 1) * g->nx;
    int64_t e = c + 3 < row_end ? c + 3 : row_end;
    const char *p = (const char *)(g->items + g->starts[c]);
    const char *end = (const char *)(g->items + g->starts[e]);
    for (uint32_t k = 0; k < WEFT__GRID_PREFETCH_LINES && p < end; k++, p += 64)
      __builtin_prefetch(p, 0, 0);
  }
}

/* The same for a position. */
static inline void weft__grid_prefetch_rows(const weft_grid_t *g, float x,
                                            float y) {
  int32_t cx, cy;
  weft__grid_cell_xy(g, x, y, &cx, &cy);
  weft__grid_prefetch_rows_at(g, cx, cy);
}

static inline void weft__grid_prefetch_items(const weft_grid_t *g, float x,
                                             float y) {
  int32_t cx, cy;
  weft__grid_cell_xy(g, x, y, &cx, &cy);
  weft__grid_prefetch_items_at(g, cx, cy);
}

#endif /* WEFT_SYSTEMS_GRID_INTERNAL_H */
