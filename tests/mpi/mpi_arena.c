/* SPDX-License-Identifier: MIT */
/*
 * mpi_arena: weft-sim's distributed arena (tools/sim_mpi.c,
 * tools/sim_mpi_arena.c) in the set-ups the mpi tests need, with weft-sim's
 * output (one line per rank, the global digest, the arena's figures):
 *
 *   mpirun -n R mpi_arena CASE ENTITIES TICKS THREADS SEED
 *
 * CASE: plain (the arena as built), turrets (every turret near a cut of
 * the 2-4 rank regions, dying of its own bursts while earlier projectiles
 * flew to another rank), squads (the first squads' units in deadly pairs
 * across those cuts: squads split between ranks whose members all die).
 * tests/mpi/run_mpi.cmake checks that 1-4 ranks x 1-2 threads print one
 * digest and, with WEFT_MATCH, that the case happened.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/sim_mpi.h"
#include "tools/sim_mpi_arena.h"

int main(int argc, char **argv) {
  static const char *const cases[] = {"plain", "turrets", "squads"};
  int kase = -1;
  for (int k = 0; argc == 6 && k < 3; k++)
    if (strcmp(argv[1], cases[k]) == 0)
      kase = k;
  if (kase < 0) {
    fprintf(stderr, "usage: mpi_arena plain|turrets|squads ENTITIES TICKS "
                    "THREADS SEED\n");
    return 2;
  }
  sim_mpi_args_t a = {.kind = SIM_ARENA,
                      .entities = (uint32_t)strtoul(argv[2], NULL, 10),
                      .ticks = (uint32_t)strtoul(argv[3], NULL, 10),
                      .threads = (int32_t)strtol(argv[4], NULL, 10),
                      .seed = strtoull(argv[5], NULL, 10),
                      .dt = 1.0 / 60.0,
                      .arena_case = kase};
  return sim_mpi_run(&a, &argc, &argv);
}
