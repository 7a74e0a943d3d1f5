/* SPDX-License-Identifier: MIT */
/*
 * Domain decomposition: the box [min, max) cut into px x py regions, one
 * per rank. Plain geometry, no MPI, so that it is tested without mpirun.
 *
 * The cuts are arrays (px + 1 x positions, py + 1 y positions), not
 * computed from the rank's index on every lookup: load balancing will
 * move them by measured cost, and every lookup (owner, halo ranks) reads
 * the arrays only. The outer cuts are the box's edges.
 */
#ifndef WEFT_MPI_DOMAIN_H
#define WEFT_MPI_DOMAIN_H

#include <stddef.h>
#include <stdint.h>

#include <weft/builtin.h>

typedef struct weft__domain_t {
  weft_vec2_t min, max; /* the box */
  float halo;           /* ghost width */
  uint32_t px, py;      /* regions per row and per column */
  uint32_t ranks;       /* px * py; rank = iy * px + ix */
  float *cut_x;         /* px + 1 ascending cuts, cut_x[0] = min.x */
  float *cut_y;         /* py + 1 ascending cuts, cut_y[0] = min.y */
} weft__domain_t;

/* The most square px x py = ranks with px >= py. */
void weft__domain_grid(uint32_t ranks, uint32_t *px, uint32_t *py);

/*
 * Cuts the box evenly for @p ranks and checks it: a finite box with
 * min < max, a finite halo >= 0 and below the smallest region extent.
 * Returns 0, WEFT_EINVAL with a sentence in msg (cap bytes), or
 * WEFT_ENOMEM. On error *d is left empty (free is still safe).
 */
int weft__domain_init(weft__domain_t *d, uint32_t ranks, weft_vec2_t min,
                      weft_vec2_t max, float halo, char *msg, size_t cap);

void weft__domain_free(weft__domain_t *d);

/* The column (row) of coordinate v among n regions cut at cuts[0..n]. */
uint32_t weft__domain_slot(const float *cuts, uint32_t n, float v);

/* The rank that owns (x, y): half-open regions, outside points clamped to
 * the edge regions, NaN to column (row) 0. */
uint32_t weft__domain_owner(const weft__domain_t *d, float x, float y);

/* The region of rank r. */
void weft__domain_region(const weft__domain_t *d, uint32_t r, weft_vec2_t *min,
                         weft_vec2_t *max);

/*
 * The ranks other than @p owner (the owner of (x, y)) whose region grown
 * by the halo holds (x, y), ascending, into out (at most 8: the halo is
 * below every region's extent, so only the 3 x 3 regions around the
 * owner's can). Edge regions reach to infinity on the box's outer sides.
 * Returns the count.
 */
uint32_t weft__domain_halo_ranks(const weft__domain_t *d, float x, float y,
                                 uint32_t owner, uint32_t out[8]);

/* The ranks whose regions touch rank r's (sides and corners), ascending,
 * into out; returns the count (at most 8). */
uint32_t weft__domain_neighbours(const weft__domain_t *d, uint32_t r,
                                 uint32_t out[8]);

#endif /* WEFT_MPI_DOMAIN_H */
