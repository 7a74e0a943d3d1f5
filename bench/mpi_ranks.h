/* SPDX-License-Identifier: MIT */
/*
 * What the MPI benches share: starting MPI once per process, and agreeing
 * on repetitions and times across ranks, so that every rank runs the same
 * rounds and reports the slowest rank's time.
 */
#ifndef WEFT_BENCH_MPI_RANKS_H
#define WEFT_BENCH_MPI_RANKS_H

#include <stdint.h>

/* MPI_Init once, if this process has not already (several MPI benches may
 * run in one weft-bench), with MPI_Finalize at exit; ranks above 0 are
 * silenced so that only rank 0 prints rows. */
void bench_mpi_start(void);

/* The slowest rank's nanoseconds, the same on every rank. Collective. */
uint64_t bench_mpi_slowest(double ns);

/* The most repetitions any rank asked for, the same on every rank.
 * Collective. */
uint64_t bench_mpi_agreed_reps(uint64_t reps);

#endif
