/* SPDX-License-Identifier: MIT */
/*
 * Domain decomposition (mpi/domain.h): the grid of regions, owners and
 * halo membership, read from the cut arrays.
 */
#include "mpi/domain.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <weft/error.h>

#include "core/alloc.h"
#include "core/platform.h"

void weft__domain_grid(uint32_t ranks, uint32_t *px, uint32_t *py) {
  /* The largest divisor not above the square root gives the most square
   * grid; the longer side goes to x so that slabs are vertical. */
  uint32_t best = 1;
  for (uint32_t f = 1; (uint64_t)f * f <= ranks; f++)
    if (ranks % f == 0)
      best = f;
  *py = ranks ? best : 0;
  *px = ranks ? ranks / best : 0;
}

static int domain_fail(char *msg, size_t cap, const char *fmt, ...)
    WEFT__PRINTF(3, 4);

/* Writes the sentence that explains a refusal; returns WEFT_EINVAL. */
static int domain_fail(char *msg, size_t cap, const char *fmt, ...) {
  if (msg && cap) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, cap, fmt, ap);
    va_end(ap);
  }
  return WEFT_EINVAL;
}

/* The smallest extent of the regions: the halo must stay below it, so
 * that a point is in the halo of the regions next to its owner only. */
static float smallest_extent(const weft__domain_t *d) {
  float m = INFINITY;
  for (uint32_t i = 0; i < d->px; i++)
    m = fminf(m, d->cut_x[i + 1] - d->cut_x[i]);
  for (uint32_t j = 0; j < d->py; j++)
    m = fminf(m, d->cut_y[j + 1] - d->cut_y[j]);
  return m;
}

/* Even cuts of [lo, hi) into n; the last is exactly hi. */
static void cut_evenly(float *cuts, uint32_t n, float lo, float hi) {
  for (uint32_t i = 0; i < n; i++)
    cuts[i] = lo + (float)((double)(hi - lo) * i / n);
  cuts[n] = hi;
}

int weft__domain_init(weft__domain_t *d, uint32_t ranks, weft_vec2_t min,
                      weft_vec2_t max, float halo, char *msg, size_t cap) {
  memset(d, 0, sizeof *d);
  if (ranks == 0)
    return domain_fail(msg, cap, "weft_mpi: no ranks");
  if (!isfinite(min.x) || !isfinite(min.y) || !isfinite(max.x) ||
      !isfinite(max.y) || !(min.x < max.x) || !(min.y < max.y))
    return domain_fail(msg, cap,
                       "weft_mpi: the box (%g, %g) - (%g, %g) must be finite "
                       "with min < max",
                       min.x, min.y, max.x, max.y);
  if (!isfinite(halo) || halo < 0)
    return domain_fail(msg, cap, "weft_mpi: halo %g must be finite and >= 0",
                       halo);
  weft__domain_grid(ranks, &d->px, &d->py);
  d->ranks = ranks;
  d->min = min;
  d->max = max;
  d->halo = halo;
  d->cut_x = weft__alloc(NULL, sizeof(float) * (d->px + 1), 16);
  d->cut_y = weft__alloc(NULL, sizeof(float) * (d->py + 1), 16);
  if (!d->cut_x || !d->cut_y) {
    weft__domain_free(d);
    return WEFT_ENOMEM;
  }
  cut_evenly(d->cut_x, d->px, min.x, max.x);
  cut_evenly(d->cut_y, d->py, min.y, max.y);
  float smallest = smallest_extent(d);
  if (!(halo < smallest)) {
    uint32_t px = d->px, py = d->py;
    weft__domain_free(d);
    return domain_fail(msg, cap,
                       "weft_mpi: halo %g is not below the smallest region "
                       "extent %g (%u x %u regions for %u ranks)",
                       halo, smallest, px, py, ranks);
  }
  return 0;
}

void weft__domain_free(weft__domain_t *d) {
  weft__free(d->cut_x, 0, 0);
  weft__free(d->cut_y, 0, 0);
  memset(d, 0, sizeof *d);
}

uint32_t weft__domain_slot(const float *cuts, uint32_t n, float v) {
  /* The last i with cuts[i] <= v, in [0, n): a point on a cut belongs to
   * the region above it, a point below cuts[0] (or NaN, for which every
   * compare is false) to region 0, one at or past cuts[n] to n - 1. */
  uint32_t lo = 0, hi = n;
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (cuts[mid] <= v)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

uint32_t weft__domain_owner(const weft__domain_t *d, float x, float y) {
  uint32_t ix = weft__domain_slot(d->cut_x, d->px, x);
  uint32_t iy = weft__domain_slot(d->cut_y, d->py, y);
  return iy * d->px + ix;
}

void weft__domain_region(const weft__domain_t *d, uint32_t r, weft_vec2_t *min,
                         weft_vec2_t *max) {
  uint32_t ix = r % d->px, iy = r / d->px;
  *min = (weft_vec2_t){d->cut_x[ix], d->cut_y[iy]};
  *max = (weft_vec2_t){d->cut_x[ix + 1], d->cut_y[iy + 1]};
}

/* Whether v lies in slot i of cuts[0..n] grown by h on both sides; the
 * edge slots reach to infinity outwards, as owners are clamped. */
static int in_grown(const float *cuts, uint32_t n, uint32_t i, float v,
                    float h) {
  float lo = i == 0 ? -INFINITY : cuts[i] - h;
  float hi = i + 1 == n ? INFINITY : cuts[i + 1] + h;
  return v >= lo && v < hi;
}

uint32_t weft__domain_halo_ranks(const weft__domain_t *d, float x, float y,
                                 uint32_t owner, uint32_t out[8]) {
  uint32_t ox = owner % d->px, oy = owner / d->px, n = 0;
  /* Row-major over the 3 x 3 block, so the output is ascending. */
  for (int dy = -1; dy <= 1; dy++) {
    int64_t jy = (int64_t)oy + dy;
    if (jy < 0 || jy >= d->py ||
        !in_grown(d->cut_y, d->py, (uint32_t)jy, y, d->halo))
      continue;
    for (int dx = -1; dx <= 1; dx++) {
      int64_t jx = (int64_t)ox + dx;
      if ((dx == 0 && dy == 0) || jx < 0 || jx >= d->px ||
          !in_grown(d->cut_x, d->px, (uint32_t)jx, x, d->halo))
        continue;
      out[n++] = (uint32_t)jy * d->px + (uint32_t)jx;
    }
  }
  return n;
}

uint32_t weft__domain_neighbours(const weft__domain_t *d, uint32_t r,
                                 uint32_t out[8]) {
  int64_t ox = r % d->px, oy = r / d->px;
  uint32_t n = 0;
  for (int dy = -1; dy <= 1; dy++)
    for (int dx = -1; dx <= 1; dx++) {
      int64_t jx = ox + dx, jy = oy + dy;
      if ((dx || dy) && jx >= 0 && jx < d->px && jy >= 0 && jy < d->py)
        out[n++] = (uint32_t)(jy * d->px + jx);
    }
  return n;
}
