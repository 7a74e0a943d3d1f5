/* SPDX-License-Identifier: MIT */
/*
 * weft-sim's distributed mode (tools/sim_mpi.c, built where weft::mpi
 * is): one scenario over the ranks of MPI_COMM_WORLD.
 */
#ifndef WEFT_TOOLS_SIM_MPI_H
#define WEFT_TOOLS_SIM_MPI_H

#include <stdbool.h>
#include <stdint.h>

#include <weft.h>

#include "sim_scenarios.h"

typedef struct sim_mpi_args_t {
  sim_kind_t kind;
  uint32_t entities;
  int32_t threads; /* per rank; -1: one per core the rank may use */
  uint32_t ticks, warmup;
  uint64_t seed;
  double dt;
  int arena_case; /* a sim_arena_case_t (sim_mpi_arena.h); 0: plain */
  /* Called on the owner thread after every tick (tick counted from 1,
   * warm-up included) when set: the tests' probe. */
  void (*after_tick)(void *user, weft_world_t *world, uint32_t tick);
  void *user;
  /* A distributed checkpoint to write after the ticks, and one to start
   * from instead of the scene's entities (prefixes; NULL: none). */
  const char *checkpoint, *restore;
  uint32_t balance_every; /* rebalance by time every N ticks; 0: never */
} sim_mpi_args_t;

/* Whether this process was started by mpirun (Open MPI's or a PMI
 * launcher's environment). */
bool sim_mpi_launched(void);

/* Runs the scenario distributed and prints the global table and digest
 * (rank 0). Calls MPI_Init and MPI_Finalize. Returns the exit status. */
int sim_mpi_run(const sim_mpi_args_t *args, int *argc, char ***argv);

#endif /* WEFT_TOOLS_SIM_MPI_H */
