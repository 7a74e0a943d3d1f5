/* SPDX-License-Identifier: MIT */
/*
 * Load balance (weft_mpi_rebalance()): the cuts move so that every column
 * and every row of regions holds the same share of the owned entities,
 * or of their measured cost.
 *
 * Every rank bins the x and the y of its owned entities over the box
 * (WEFT__BALANCE_BINS bins an axis), each entity with a weight; one
 * MPI_Allreduce sums the bins, and every rank then places the same cuts
 * at the same quantiles of the global histograms, interpolating inside a
 * bin. No region may end up narrower than the halo (the decomposition's
 * rule): each keeps at least the halo and a hundredth of the even width's
 * excess over it. The next exchange then moves the entities that changed
 * owner, and the ghosts follow. The results do not depend on where the
 * cuts are, only the balance does.
 *
 * WEFT_MPI_BALANCE_COUNT weighs every entity 1. WEFT_MPI_BALANCE_TIME
 * weighs each entity its rank's cost per owned entity since the last
 * rebalance (the process's CPU seconds in its ticks, without the
 * exchange, or the configuration's cost function): a rank that took longer per
 * entity than its neighbours gets a narrower region. The weights are fixed
 * point (the largest rank's weight is 2^16), because the bins must sum to the
 * same values on every rank whatever order MPI adds them in: floating-point
 * sums may round differently per rank, and ranks that disagreed on a cut would
 * disagree on owners. The cuts then move half the way to the weighted
 * quantiles: the cost was measured under the old cuts, and a noisy
 * measurement followed the whole way would swing the cuts to and fro.
 */
#include <math.h>
#include <string.h>
#include <time.h>

#include <weft.h>

#include "mpi/dist.h"

/* The largest rank's weight per entity in the time-weighted bins. */
#define WEIGHT_ONE 65536.0

/* How far a time-weighted rebalance moves a cut towards its target. */
#define TIME_DAMPING 0.5

/* Adds this rank's owned entities, each weighing @p weight, to the
 * histograms. */
static void bin_owned(weft_mpi_t *m, uint64_t *hx, uint64_t *hy,
                      uint64_t weight) {
  const weft__domain_t *d = &m->dom;
  const double sx = WEFT__BALANCE_BINS / ((double)d->max.x - d->min.x);
  const double sy = WEFT__BALANCE_BINS / ((double)d->max.y - d->min.y);
  weft_iter_t it;
  for (weft_query_iter(m->owned, &it); weft_iter_next(&it);) {
    const float *px, *py;
    uint32_t stride = 1;
    if (m->position_soa) {
      px = weft_iter_field(&it, 1, 0);
      py = weft_iter_field(&it, 1, 1);
    } else {
      px = it.columns[1];
      py = px + 1;
      stride = 2;
    }
    for (uint32_t i = 0; i < it.count; i++) {
      double bx = ((double)px[i * stride] - d->min.x) * sx;
      double by = ((double)py[i * stride] - d->min.y) * sy;
      /* Outside the box (and NaN) counts in the edge bins, as owners do. */
      uint32_t ix = bx >= WEFT__BALANCE_BINS ? WEFT__BALANCE_BINS - 1
                    : bx > 0                 ? (uint32_t)bx
                                             : 0;
      uint32_t iy = by >= WEFT__BALANCE_BINS ? WEFT__BALANCE_BINS - 1
                    : by > 0                 ? (uint32_t)by
                                             : 0;
      hx[ix] += weight;
      hy[iy] += weight;
    }
  }
}

/* Moves the n - 1 inner cuts of [lo, hi] by @p damp of the way to the
 * quantiles of hist (1: all the way), then keeps every slot at least
 * minw wide. cuts[0] and cuts[n] stay. */
static void place_cuts(float *cuts, uint32_t n, const uint64_t *hist, float lo,
                       float hi, float minw, double damp) {
  uint64_t total = 0;
  for (uint32_t b = 0; b < WEFT__BALANCE_BINS; b++)
    total += hist[b];
  if (total == 0 || n < 2)
    return; /* nothing to balance: the cuts stay */
  double width = ((double)hi - lo) / WEFT__BALANCE_BINS, seen = 0;
  uint32_t b = 0;
  for (uint32_t i = 1; i < n; i++) {
    double want = (double)total * i / n;
    while (b < WEFT__BALANCE_BINS - 1 && seen + (double)hist[b] < want)
      seen += (double)hist[b++];
    double in = hist[b] ? (want - seen) / (double)hist[b] : 0.5;
    double to = lo + width * (b + (in < 0 ? 0 : in > 1 ? 1 : in));
    cuts[i] = (float)(damp >= 1 ? to : cuts[i] + damp * (to - cuts[i]));
  }
  for (uint32_t i = 1; i < n; i++) /* forwards: room after the cut */
    if (cuts[i] < cuts[i - 1] + minw)
      cuts[i] = cuts[i - 1] + minw;
  for (uint32_t i = n - 1; i >= 1; i--) /* backwards: room before hi */
    if (cuts[i] > cuts[i + 1] - minw)
      cuts[i] = cuts[i + 1] - minw;
}

double weft__cpu_now(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
    return 0;
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* This rank's weight per owned entity in the bins: 1 when counting, else
 * its cost per entity in fixed point against the largest rank's (every
 * rank's the same 1 when nobody measured a cost yet). Collective. */
static int entity_weight(weft_mpi_t *m, uint64_t *out) {
  *out = 1;
  if (m->balance_by != WEFT_MPI_BALANCE_TIME)
    return 0;
  uint64_t owned = weft_query_count(m->owned);
  double cpu_s = m->tick_cpu_s - m->balance_cpu_s;
  double cost = m->cost ? m->cost(m->cost_user, m, cpu_s, owned) : cpu_s;
  double mine = owned && isfinite(cost) && cost > 0 ? cost / (double)owned : 0;
  double most = 0;
  if (MPI_Allreduce(&mine, &most, 1, MPI_DOUBLE, MPI_MAX, m->comm) !=
      MPI_SUCCESS)
    return weft_world_fail(m->world, WEFT_EIO,
                           "weft_mpi: MPI_Allreduce failed");
  /* Every rank computes the same max (a max rounds nothing); a rank that
   * measured nothing still weighs its entities a little, so that its
   * region does not grow without bound. */
  if (most > 0 && isfinite(most)) {
    double q = nearbyint(mine / most * WEIGHT_ONE);
    *out = q < 1 ? 1 : (uint64_t)q;
  }
  return 0;
}

int weft_mpi_rebalance(weft_mpi_t *m) {
  if (!m)
    return WEFT_EINVAL;
  weft__domain_t *d = &m->dom;
  uint64_t *hx = m->hist, *hy = m->hist + WEFT__BALANCE_BINS, weight = 1;
  int rc = entity_weight(m, &weight);
  if (rc)
    return rc;
  memset(m->hist, 0, sizeof *m->hist * 2 * WEFT__BALANCE_BINS);
  bin_owned(m, hx, hy, weight);
  if (MPI_Allreduce(MPI_IN_PLACE, m->hist, 2 * WEFT__BALANCE_BINS, MPI_UINT64_T,
                    MPI_SUM, m->comm) != MPI_SUCCESS)
    return weft_world_fail(m->world, WEFT_EIO,
                           "weft_mpi: MPI_Allreduce failed");
  /* A hundredth of the way from the halo to the even width: strictly
   * above the halo, as weft_mpi_new() checked the even cuts are. */
  float wx = (d->max.x - d->min.x) / (float)d->px;
  float wy = (d->max.y - d->min.y) / (float)d->py;
  double damp = m->balance_by == WEFT_MPI_BALANCE_TIME ? TIME_DAMPING : 1.0;
  place_cuts(d->cut_x, d->px, hx, d->min.x, d->max.x,
             d->halo + 0.01f * (wx - d->halo), damp);
  place_cuts(d->cut_y, d->py, hy, d->min.y, d->max.y,
             d->halo + 0.01f * (wy - d->halo), damp);
  m->balance_cpu_s = m->tick_cpu_s;
  m->stats.rebalances++;
  return 0;
}
