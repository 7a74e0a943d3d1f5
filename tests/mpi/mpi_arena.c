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
 * across those cuts: squads split between ranks whose members all die),
 * steady (turrets that never die, and the last 40 ticks must allocate
 * nothing: the world's counters and weft's jemalloc thread counter; exit
 * status 1 otherwise). A seventh argument save:PREFIX writes a distributed
 * checkpoint after the ticks, load:PREFIX starts from one (the restart
 * tests, tests/mpi/run_mpi.cmake's "restart").
 * tests/mpi/run_mpi.cmake checks that 1-4 ranks x 1-2 threads print one
 * digest and, with WEFT_MATCH, that the case happened.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h" /* weft__alloc_thread_counter() */
#include "tools/sim_mpi.h"
#include "tools/sim_mpi_arena.h"

/* The steady case's probe: the counters at the start of the measured
 * ticks, and what they moved by at the end. */
typedef struct steady_t {
  uint32_t from, last;
  uint64_t allocs, bytes, allocated;
} steady_t;

static void probe(void *user, weft_world_t *w, uint32_t tick) {
  steady_t *s = user;
  weft_world_stats_t st;
  weft_world_stats(w, &st);
  const uint64_t *counter = weft__alloc_thread_counter();
  uint64_t bytes = counter ? *counter : 0;
  if (tick == s->from) {
    s->allocs = st.allocs;
    s->bytes = bytes;
  } else if (tick == s->last) {
    s->allocs = st.allocs - s->allocs;
    s->bytes = bytes - s->bytes;
    s->allocated = s->allocs || s->bytes;
    printf("steady allocs %llu bytes %llu\n", (unsigned long long)s->allocs,
           (unsigned long long)s->bytes);
  }
}

int main(int argc, char **argv) {
  static const char *const cases[] = {"plain", "turrets", "squads", "steady"};
  int kase = -1;
  bool ck = argc == 7 && (strncmp(argv[6], "save:", 5) == 0 ||
                          strncmp(argv[6], "load:", 5) == 0);
  for (int k = 0; (argc == 6 || ck) && k < 4; k++)
    if (strcmp(argv[1], cases[k]) == 0)
      kase = k;
  if (kase < 0) {
    fprintf(stderr, "usage: mpi_arena plain|turrets|squads|steady ENTITIES "
                    "TICKS THREADS SEED [save:PREFIX|load:PREFIX]\n");
    return 2;
  }
  sim_mpi_args_t a = {.kind = SIM_ARENA,
                      .entities = (uint32_t)strtoul(argv[2], NULL, 10),
                      .ticks = (uint32_t)strtoul(argv[3], NULL, 10),
                      .threads = (int32_t)strtol(argv[4], NULL, 10),
                      .seed = strtoull(argv[5], NULL, 10),
                      .dt = 1.0 / 60.0,
                      .arena_case = kase == 3 ? SIM_ARENA_FIRING : kase};
  if (ck)
    *(argv[6][0] == 's' ? &a.checkpoint : &a.restore) = argv[6] + 5;
  steady_t steady = {0};
  if (kase == 3) {
    steady.last = a.ticks;
    steady.from = a.ticks > 40 ? a.ticks - 40 : 0;
    a.after_tick = probe;
    a.user = &steady;
  }
  int out = sim_mpi_run(&a, &argc, &argv);
  return out ? out : steady.allocated ? 1 : 0;
}
