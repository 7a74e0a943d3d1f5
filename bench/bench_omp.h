/* SPDX-License-Identifier: MIT */
/*
 * bench_omp.h: what the OpenMP baselines share. Only weft-bench includes
 * it; the library never uses OpenMP.
 */
#ifndef WEFT_BENCH_OMP_H
#define WEFT_BENCH_OMP_H

#include <omp.h>
#include <stdint.h>

/* This thread's static share [*lo, *hi) of n items, cut at multiples of 16
 * so that every share starts 64-byte aligned. Call inside a parallel
 * region. */
static inline void bench_omp_share(uint32_t n, uint32_t *lo, uint32_t *hi) {
  uint32_t t = (uint32_t)omp_get_thread_num();
  uint32_t nt = (uint32_t)omp_get_num_threads();
  uint32_t blocks = (n + 15) / 16;
  uint32_t b0 = (uint32_t)((uint64_t)blocks * t / nt);
  uint32_t b1 = (uint32_t)((uint64_t)blocks * (t + 1) / nt);
  *lo = b0 * 16 < n ? b0 * 16 : n;
  *hi = b1 * 16 < n ? b1 * 16 : n;
}

#endif /* WEFT_BENCH_OMP_H */
