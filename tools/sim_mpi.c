/* SPDX-License-Identifier: MIT */
/*
 * weft-sim's distributed mode: `mpirun -n R weft-sim --scenario S ...`.
 *
 * Every rank builds the whole scenario exactly as weft-sim does alone (the
 * same program and seed give every rank the same world, row for row),
 * numbers the entities in storage order as their weft.Key, and keeps only
 * those whose position its region holds. So the global state at tick 0 is
 * the single-process one whatever the rank count, at the price of every
 * rank building all of it once. Then weft_mpi_step() runs the ticks, and
 * rank 0 prints one line per rank (entities, ghosts, time in the tick and
 * in the exchange, bytes sent and received, migrations), the imbalance and
 * the global digest.
 *
 * All three scenarios are rank-count independent: the built-in systems
 * order by weft.Key; boids and arena exchange inside the tick, between
 * the move and the grid; the arena's relations take a key-based form and
 * their rules run collectively at the end of the fixed step
 * (tools/sim_mpi_arena.c), whose squads (on rank 0) are added to the
 * digest.
 *
 * --restore PREFIX starts from a distributed checkpoint instead (the
 * scene is built for its systems, its entities dropped); --checkpoint
 * PREFIX writes one after the ticks. The arena's squads (positionless, on
 * rank 0) and figures travel in the index as its registered section
 * "sim.mpi.arena" (tools/sim_mpi_arena.c); a restore whose index lacks
 * it fails on every rank. --balance N moves the cuts by the ranks' measured CPU
 * time in their ticks every N ticks.
 */
#include "sim_mpi.h"
#include "sim_mpi_arena.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft.h>
#include <weft/mpi.h>

bool sim_mpi_launched(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") ||
         getenv("PMIX_RANK");
}

/* One rank's line of the table; with --balance also its tick seconds
 * before the first rebalance and after it. */
typedef struct rank_row_t {
  double local, ghosts, tick_s, exchange_s, sent, recv, emigrants, immigrants;
  double tick_before, tick_after;
} rank_row_t;

/* Numbers the entities in storage order (the same on every rank) and
 * despawns those another rank owns; @p none: despawns them all (a
 * restart takes its entities from the checkpoint). */
static int key_and_split(weft_world_t *w, weft_mpi_t *mpi,
                         const weft_std_t *std, bool none) {
  weft_component_t key;
  int rc = weft_component_lookup(w, "weft.Key", &key);
  weft_query_t *q = NULL;
  if (!rc)
    rc = weft_query_create(w, &(weft_query_desc_t){.include = {std->position}},
                           &q);
  uint32_t n = rc ? 0 : weft_query_count(q), k = 0;
  weft_entity_t *all = n ? malloc(sizeof *all * n) : NULL;
  if (!rc && n && !all)
    rc = WEFT_ENOMEM;
  weft_iter_t it;
  for (weft_query_iter(q, &it); !rc && weft_iter_next(&it);)
    for (uint32_t i = 0; i < it.count; i++)
      all[k++] = it.entities[i];
  uint32_t me = weft_mpi_rank(mpi);
  for (uint32_t i = 0; i < k && !rc; i++) {
    weft_vec2_t p;
    uint64_t id = i;
    rc = weft_read(w, all[i], std->position, &p);
    if (!rc)
      rc = !none && weft_mpi_owner(mpi, p.x, p.y) == me
               ? weft_add(w, all[i], key, &id)
               : weft_despawn(w, all[i]);
  }
  free(all);
  weft_query_destroy(q);
  return rc;
}

static float halo_for(sim_kind_t kind) {
  /* The longest interaction distance: boids see 4 units around; particles
   * read nobody; the arena's is set by sim_arena_mpi_new(). */
  return kind == SIM_BOIDS ? 4.0f : 1.0f;
}

/* The arena's structure figures, summed over the ranks (rank 0 prints). */
static void print_arena(const sim_arena_mpi_t *arena, int rank) {
  sim_arena_stats_t st;
  sim_arena_mpi_stats(arena, &st);
  uint64_t mine[3] = {st.turrets_died, st.orphans, st.squads_disbanded},
           all[3] = {0, 0, 0};
  MPI_Reduce(mine, all, 3, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("arena: turrets died %llu, projectiles despawned by their "
           "turret's key on another rank %llu, squads disbanded %llu\n",
           (unsigned long long)all[0], (unsigned long long)all[1],
           (unsigned long long)all[2]);
}

static void print_table(const sim_mpi_args_t *a, const rank_row_t *rows,
                        int size, const weft_mpi_digest_t *d, uint32_t ticks) {
  double sum_local = 0, max_local = 0, sum_t = 0, max_t = 0;
  printf("weft-sim: %s, %u entities, %d ranks x %d threads, %u ticks\n",
         sim_kind_name(a->kind), a->entities, size, a->threads, ticks);
  for (int r = 0; r < size; r++) {
    const rank_row_t *x = &rows[r];
    printf("rank %d local %.0f ghosts %.0f tick_ms %.1f exchange_ms %.1f "
           "sent_kib %.1f recv_kib %.1f emigrants %.0f immigrants %.0f\n",
           r, x->local, x->ghosts, x->tick_s * 1e3, x->exchange_s * 1e3,
           x->sent / 1024, x->recv / 1024, x->emigrants, x->immigrants);
    sum_local += x->local;
    max_local = x->local > max_local ? x->local : max_local;
    double t = x->tick_s + x->exchange_s;
    sum_t += t;
    max_t = t > max_t ? t : max_t;
  }
  printf("imbalance: entities max/mean %.2f, time max/mean %.2f\n",
         sum_local > 0 ? max_local * size / sum_local : 0,
         sum_t > 0 ? max_t * size / sum_t : 0);
  if (a->balance_every) {
    /* The ticks' own time (the exchange's is mostly waiting for the
     * slowest rank), before the first rebalance and after it. */
    double sb = 0, mb = 0, sa = 0, ma = 0;
    for (int r = 0; r < size; r++) {
      sb += rows[r].tick_before;
      mb = rows[r].tick_before > mb ? rows[r].tick_before : mb;
      sa += rows[r].tick_after;
      ma = rows[r].tick_after > ma ? rows[r].tick_after : ma;
    }
    printf("balance by time every %u ticks: tick time max/mean before %.2f, "
           "after %.2f\n",
           a->balance_every, sb > 0 ? mb * size / sb : 0,
           sa > 0 ? ma * size / sa : 0);
  }
  printf("digest 0x%016llx entities %llu\n", (unsigned long long)d->digest,
         (unsigned long long)d->entities);
}

/* Builds, splits and runs the scenario on this rank's world. */
static int run(const sim_mpi_args_t *a, weft_world_t *w) {
  weft_pipeline_config_t pc = {.fixed_dt = a->dt, .time_inline = true};
  sim_scene_t scene;
  memset(&scene, 0, sizeof scene);
  sim_arena_mpi_t *arena = NULL;
  int rc = weft_pipeline_configure(w, &pc);
  if (!rc)
    rc = sim_scene_build_keyed(&scene, w, a->kind, a->entities, a->seed);
  weft_mpi_config_t mc = {
      .min = {0, 0},
      .max = {scene.side, scene.side},
      .halo = halo_for(a->kind),
      .ghost_components = {scene.std.velocity, scene.std.boid},
      .ghost_count = 2,
      .balance_every = a->balance_every,
      .balance_by = WEFT_MPI_BALANCE_TIME};
  if (!rc && a->kind == SIM_ARENA)
    rc = sim_arena_case_apply(&scene, (sim_arena_case_t)a->arena_case);
  if (!rc && a->kind == SIM_ARENA)
    rc = sim_arena_mpi_new(&scene, MPI_COMM_WORLD, &mc, &arena);
  if (rc) {
    fprintf(stderr, "weft-sim: %s\n", weft_world_last_error(w));
    sim_scene_free(&scene);
    return 1;
  }
  if (a->kind == SIM_BOIDS) {
    /* The grid is built after the move: the exchange goes between them,
     * so that ghosts enter the grid moved like the owned boids. The
     * grid's readers are named too: registered before the exchange and
     * ordered against it by nothing explicit, they would run ahead of it,
     * on the previous tick's grid (docs/mpi.md, "boids"). */
    mc.exchange_after[0] = "weft.bounds";
    mc.exchange_before[0] = "weft.grid.build";
    mc.exchange_before[1] = "weft.boids.plan";
    mc.exchange_before[2] = "weft.boids";
  }
  weft_mpi_t *mpi = NULL;
  rc = weft_mpi_new(w, MPI_COMM_WORLD, &mc, &mpi);
  if (!rc) {
    /* Every rank goes on to the collective steps, or none does. */
    int mine = key_and_split(w, mpi, &scene.std, a->restore != NULL), worst = 0;
    if (!mine && arena)
      mine = sim_arena_mpi_split(arena);
    MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    rc = mine ? mine : worst;
  }
  /* A restart: the entities, the clock and the random streams are the
   * checkpoint's, on whatever rank count this is. */
  if (!rc && a->restore)
    rc = weft_mpi_restore(mpi, a->restore);
  if (!rc && a->restore && arena)
    rc = sim_arena_mpi_restored(arena, a->restore);
  if (!rc && a->restore && arena) {
    int mine = sim_arena_mpi_relink(arena), worst = 0;
    MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    rc = mine ? mine : worst;
  }
  double before = 0;
  for (uint32_t t = 0; t < a->warmup + a->ticks && !rc; t++) {
    rc = weft_mpi_step(mpi, a->dt);
    if (!rc && a->after_tick)
      a->after_tick(a->user, w, t + 1);
    weft_mpi_stats_t st;
    weft_mpi_stats(mpi, &st);
    if (t + 1 == a->balance_every)
      before = st.tick_s;
  }
  if (!rc && a->checkpoint && arena)
    rc = sim_arena_mpi_checkpoint_prepare(arena);
  if (!rc && a->checkpoint)
    rc = weft_mpi_checkpoint(mpi, a->checkpoint);
  weft_mpi_digest_t d = {0};
  if (!rc)
    rc = weft_mpi_digest(mpi, &d);
  if (!rc && arena) {
    /* The squads (rank 0 only): counted once. */
    uint64_t h = 0, n = 0;
    sim_arena_mpi_digest(arena, &h, &n);
    d.digest += h;
    d.entities += n;
    d.local += n;
  }
  if (rc)
    fprintf(stderr, "weft-sim: rank %u: %s%s%s\n", weft_mpi_rank(mpi),
            weft_world_last_error(w),
            arena && *sim_arena_mpi_refused(arena) ? ": " : "",
            arena ? sim_arena_mpi_refused(arena) : "");
  if (!rc) {
    weft_mpi_stats_t st;
    weft_mpi_stats(mpi, &st);
    rank_row_t mine = {
        (double)d.local,      (double)st.ghosts,     st.tick_s,
        st.exchange_s,        (double)st.bytes_sent, (double)st.bytes_recv,
        (double)st.emigrants, (double)st.immigrants, before,
        st.tick_s - before};
    int size = (int)weft_mpi_size(mpi);
    rank_row_t *rows = malloc(sizeof *rows * (size_t)size);
    MPI_Gather(&mine, sizeof mine / sizeof(double), MPI_DOUBLE, rows,
               sizeof mine / sizeof(double), MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (weft_mpi_rank(mpi) == 0 && rows)
      print_table(a, rows, size, &d, a->warmup + a->ticks);
    free(rows);
    if (arena)
      print_arena(arena, (int)weft_mpi_rank(mpi));
  }
  weft_mpi_free(mpi);
  sim_arena_mpi_free(arena);
  sim_scene_free(&scene);
  return rc ? 1 : 0;
}

int sim_mpi_run(const sim_mpi_args_t *a, int *argc, char ***argv) {
  MPI_Init(argc, argv);
  int out = 0;
  weft_pool_t *pool = NULL;
  weft_world_t *w = NULL;
  if (!out && a->threads != 0) {
    weft_pool_config_t pc = {0};
    pc.placement.workers = a->threads > 0 ? (uint32_t)a->threads : 0;
    pc.placement.caller_participates = true;
    if (weft_pool_create(&pc, &pool) != 0)
      out = 1;
  }
  if (!out && weft_world_create(&(weft_world_config_t){.pool = pool}, &w))
    out = 1;
  if (!out)
    out = run(a, w);
  weft_world_destroy(w);
  weft_pool_destroy(pool);
  fflush(stdout);
  MPI_Finalize();
  return out;
}
