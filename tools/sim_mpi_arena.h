/* SPDX-License-Identifier: MIT */
/*
 * weft-sim's distributed arena (tools/sim_mpi_arena.c): the arena's two
 * relations in a form that crosses ranks, and the collective system that
 * applies their rules at the same point of every fixed step on every rank
 * count. Internal to the tools; see docs/mpi.md, "The arena".
 */
#ifndef WEFT_TOOLS_SIM_MPI_ARENA_H
#define WEFT_TOOLS_SIM_MPI_ARENA_H

#include <stdint.h>

#include <mpi.h>
#include <weft/mpi.h>

#include "sim_scenarios.h"

/* Set-ups of the distributed arena that the mpi tests need (applied to
 * the built scene before it is split). Owner thread throughout. */
typedef enum sim_arena_case_t {
  SIM_ARENA_PLAIN = 0, /* the arena as built */
  /* Every turret sits near a cut of the 2-, 3- and 4-rank regions with
   * little health: turrets die of their own bursts while earlier
   * projectiles have flown to another rank. */
  SIM_ARENA_TURRETS_DIE,
  /* The units of the first squads stand in overlapping pairs across the
   * same cuts, hurting each other to death: those squads' members are
   * split between ranks and all die, and the squads disband. */
  SIM_ARENA_SQUADS_DIE,
  /* Turrets that never die: the arena fires and expires projectiles for
   * as long as it runs (the steady-state test). */
  SIM_ARENA_FIRING
} sim_arena_case_t;

/* Figures of the arena's structure rule, this rank's since creation. */
typedef struct sim_arena_stats_t {
  uint64_t turrets_died;     /* owned turrets despawned as wreckage */
  uint64_t orphans;          /* projectiles despawned by their owner's key */
  uint64_t squads_disbanded; /* rank 0 only */
} sim_arena_stats_t;

typedef struct sim_arena_mpi_t sim_arena_mpi_t;

/*
 * Applies @p kase to @p scene (built by sim_scene_build_keyed(), not yet
 * split). Owner thread. Returns 0 or a weft error.
 */
int sim_arena_case_apply(sim_scene_t *scene, sim_arena_case_t kase);

/*
 * Registers "sim.mpi.arena", the exclusive system that applies the
 * arena's wreckage, ownership and squad rules by key on @p comm, and
 * fills @p mc's ghosts, halo and exchange placement for the arena. Call
 * it after sim_scene_build_keyed() and before weft_mpi_new(); every rank
 * of @p comm must. *out belongs to the caller until sim_arena_mpi_free(),
 * after the world's last tick. Returns 0, WEFT_ENOMEM, WEFT_EIO (the
 * communicator could not be duplicated) or a registration's
 * error. Collective (it duplicates @p comm).
 */
int sim_arena_mpi_new(sim_scene_t *scene, MPI_Comm comm, weft_mpi_config_t *mc,
                      sim_arena_mpi_t **out);

/*
 * Keeps the squads (positionless, so neither owned by a region nor in
 * weft_mpi_digest()) on rank 0 only, which applies the squad rule. Call
 * once, after the entities were split between the ranks. Owner thread.
 */
int sim_arena_mpi_split(sim_arena_mpi_t *a);

/* The squads' share of the global digest and their count: nonzero on rank
 * 0 only, to be added to weft_mpi_digest()'s. Owner thread. */
void sim_arena_mpi_digest(const sim_arena_mpi_t *a, uint64_t *hash,
                          uint64_t *count);

/* This rank's figures. Owner thread. */
void sim_arena_mpi_stats(const sim_arena_mpi_t *a, sim_arena_stats_t *out);

/*
 * Sums every rank's figures on rank 0 for the checkpoint's arena section
 * (the squads and the figures, registered by sim_arena_mpi_new() and
 * written by rank 0 into the index). Call just before
 * weft_mpi_checkpoint(). Collective. Returns 0 or WEFT_EIO.
 */
int sim_arena_mpi_checkpoint_prepare(sim_arena_mpi_t *a);

/*
 * After weft_mpi_restore() succeeded: 0 when every rank loaded the
 * arena's section, else WEFT_EFORMAT with a message naming
 * PREFIX.index (on every rank). Collective.
 */
int sim_arena_mpi_restored(sim_arena_mpi_t *a, const char *prefix);

/*
 * After a restore: links each owned projectile to its turret by an
 * OwnedBy edge where this rank owns the turret too, as the spawner had
 * (edges are not in a checkpoint), so that a turret's death cascades to
 * them as in an uninterrupted run; the others go by key. Owner thread,
 * between ticks. Returns 0, WEFT_ENOMEM or a relation's error.
 */
int sim_arena_mpi_relink(sim_arena_mpi_t *a);

/* Why the arena's section of a checkpoint was refused ("" when it was
 * not); the driver's, valid until sim_arena_mpi_free(). Owner thread. */
const char *sim_arena_mpi_refused(const sim_arena_mpi_t *a);

/* Frees the driver's buffers and communicator (the system stays
 * registered: call it after the last tick). Collective. NULL is a no-op. */
void sim_arena_mpi_free(sim_arena_mpi_t *a);

#endif /* WEFT_TOOLS_SIM_MPI_ARENA_H */
