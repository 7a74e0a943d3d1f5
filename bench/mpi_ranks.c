/* SPDX-License-Identifier: MIT */
/* What the MPI benches share (mpi_ranks.h). */
#include "mpi_ranks.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include <weft.h>

#include "harness.h"

static void finish_mpi(void) {
  int done = 0;
  MPI_Finalized(&done);
  if (!done)
    MPI_Finalize();
}

void bench_mpi_start(void) {
  int up = 0;
  MPI_Initialized(&up);
  if (up)
    return;
  MPI_Init(NULL, NULL);
  atexit(finish_mpi);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0 && (!freopen("/dev/null", "w", stdout) ||
                    !freopen("/dev/null", "w", stderr)))
    bench_die("silencing a rank", WEFT_EIO);
}

uint64_t bench_mpi_slowest(double ns) {
  double all = 0;
  MPI_Allreduce(&ns, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return (uint64_t)all;
}

uint64_t bench_mpi_agreed_reps(uint64_t reps) {
  uint64_t all = 0;
  MPI_Allreduce(&reps, &all, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return all;
}
