/* SPDX-License-Identifier: MIT */
/**
 * @file weft/mpi.h
 * One simulation over many MPI ranks (library weft::mpi, libweft_mpi.a,
 * pkg-config weft-mpi). Work in progress (issue 32): decomposition,
 * migration, ghosts, load balance by count or measured time, checkpoints
 * that restart on another rank count and the global digest are here.
 *
 * The simulated space is a 2D box [min, max) cut into px x py regions,
 * one per rank of the communicator (the most square factorisation of the
 * rank count, px >= py: 3 ranks give 3 x 1 slabs). Rank r has the region
 * (r % px, r / px). A rank's world holds the entities it owns, those whose
 * position lies in its region, and read-only *ghost* copies of the
 * entities that other ranks own within the halo width of its region.
 * Every entity carries the component "weft.Key" (a uint64_t id that does
 * not depend on the rank count); ghosts carry the tag "weft.Ghost".
 *
 * weft_mpi_step() runs one tick: entities whose position left the region
 * move to their new owner (encoded with the per-entity codec when weft
 * has it, keeping every saved component and the key), ghosts are
 * refreshed, and then the tick itself runs. See docs/mpi.md.
 *
 * This header includes <mpi.h>; <weft.h> does not include it.
 *
 * Threads: every function here is called by the thread that owns the
 * world (the one that called MPI_Init), on every rank of the
 * communicator where the function says "collective", in the same order.
 */
#ifndef WEFT_MPI_H
#define WEFT_MPI_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "weft/builtin.h"
#include "weft/component.h"
#include "weft/phase.h"
#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Distributed driver of one rank's world; opaque. */
typedef struct weft_mpi_t weft_mpi_t;

/** Most ghost components one configuration lists. */
#define WEFT_MPI_GHOST_MAX 16u

/** Runs one tick of the rank's world; 0 or a negative WEFT_E* code. */
typedef int (*weft_mpi_tick_fn)(void *user, weft_world_t *world, double dt);

/** What weft_mpi_rebalance() evens out between the columns and the rows
 * of regions. */
typedef enum weft_mpi_balance_t {
  /** The owned entities: every entity weighs the same, so the cuts depend
   * only on the positions and are the same in every run (the default). */
  WEFT_MPI_BALANCE_COUNT = 0,
  /** The measured cost: each entity weighs its rank's cost per owned
   * entity since the last rebalance (weft_mpi_config_t.cost; by default
   * the process's CPU seconds in its ticks without the exchange: CPU, not
   * wall time, so that a rank the OS descheduled does not look costly).
   * The cuts move from the ranks that took longer towards the others,
   * half the way to an even split of the cost per rebalance; they differ
   * from run to run, the results do not. */
  WEFT_MPI_BALANCE_TIME = 1,
} weft_mpi_balance_t;

/**
 * A rank's cost since the last rebalance, for WEFT_MPI_BALANCE_TIME: given
 * the CPU seconds its ticks took since then (every thread of the process,
 * without the exchange) and its owned entities now, returns the cost to
 * balance, finite and >= 0 (anything else counts as 0). A program with its
 * own cost model (an interaction count, a test's injected costs) returns
 * that instead. Called on the owner thread of every rank inside
 * weft_mpi_rebalance().
 */
typedef double (*weft_mpi_cost_fn)(void *user, const weft_mpi_t *mpi,
                                   double cpu_s, uint64_t owned);

/** Configuration of weft_mpi_new(); zero means default. Every rank must
 * pass the same values (checked: a difference is WEFT_EINVAL everywhere). */
typedef struct weft_mpi_config_t {
  weft_vec2_t min, max; /**< the simulated box; required: min < max */
  /** Halo width: entities within this distance of a region are ghosts
   * there. Must be >= the longest interaction distance of any system that
   * reads other entities, and < the smallest region extent. */
  float halo;
  /** Position component (weft_vec2_t layout, AoS or SoA); 0:
   * "weft.Position". */
  weft_component_t position;
  /** Key component (8 bytes, a uint64_t); 0: "weft.Key", registered when
   * missing. */
  weft_component_t key;
  /** Ghost tag; 0: "weft.Ghost", registered when missing. */
  weft_component_t ghost;
  /** The components cross-boundary systems read, copied into ghosts
   * every tick (Position is always copied; listing it is harmless). */
  weft_component_t ghost_components[WEFT_MPI_GHOST_MAX];
  uint32_t ghost_count;
  /**
   * Where the exchange runs. Both lists empty: before the tick, in
   * weft_mpi_step(). Otherwise inside it, as the exclusive system
   * "weft.mpi.exchange" of exchange_phase (0: WEFT_PHASE_FIXED_UPDATE),
   * after every system named in exchange_after and before every one named
   * in exchange_before (up to WEFT_SYSTEM_MAX_ORDER names each, the rest
   * NULL). Use it where the systems that read other entities run after
   * those that move them (weft-sim's boids: the grid is built after
   * "weft.bounds"): ghosts are never written by systems, so they must be
   * refreshed after the move to be read in the same state as the owned
   * entities beside them.
   *
   * Name in exchange_before every system that must see the exchange, not
   * only the first: the scheduler orders a phase by its explicit edges
   * first (earliest registered first among the ready) and directs the
   * conflicts after that, so a reader registered before the exchange and
   * not named here would be put ahead of it, and ahead of the builder it
   * reads (docs/mpi.md, "boids").
   */
  const char *exchange_after[WEFT_SYSTEM_MAX_ORDER];
  const char *exchange_before[WEFT_SYSTEM_MAX_ORDER];
  weft_phase_t exchange_phase;
  /**
   * Systems of exchange_phase that run while the halo's messages fly
   * (docs/mpi.md, "Overlap"). Non-empty: the exchange is split into
   * "weft.mpi.exchange", which decides owners, sends the ghosts and runs
   * after exchange_after and before these, and "weft.mpi.ghosts", which
   * sends the migrants, receives, applies and runs after these and before
   * exchange_before. These systems must not read or write the position
   * or a ghost component, nor spawn or despawn keyed entities: the
   * ghosts were sent before them and the ghosts here are refreshed after
   * them. They may write the owned entities' other components; migrants
   * are encoded after them.
   */
  const char *exchange_overlap[WEFT_SYSTEM_MAX_ORDER];
  /** weft_mpi_step() rebalances (weft_mpi_rebalance()) before every
   * balance_every-th tick; 0: never. */
  uint32_t balance_every;
  /** What a rebalance evens out (WEFT_MPI_BALANCE_COUNT, the default, or
   * WEFT_MPI_BALANCE_TIME). */
  weft_mpi_balance_t balance_by;
  /** The cost WEFT_MPI_BALANCE_TIME weighs; NULL: the measured tick
   * CPU seconds. cost_user is passed to it, not owned. */
  weft_mpi_cost_fn cost;
  void *cost_user;
  /** The tick weft_mpi_step() runs; NULL: weft_world_progress(world,
   * dt). */
  weft_mpi_tick_fn tick;
  void *tick_user;
} weft_mpi_config_t;

/** Figures of one rank, counted since weft_mpi_new(). */
typedef struct weft_mpi_stats_t {
  uint64_t ticks;
  uint64_t emigrants;  /**< entities sent to another rank */
  uint64_t immigrants; /**< entities received from another rank */
  uint64_t ghost_sent; /**< ghost records sent */
  uint64_t ghosts;     /**< ghosts in the world now */
  uint64_t rebalances; /**< weft_mpi_rebalance() calls */
  uint64_t bytes_sent; /**< payload bytes sent (migrants and ghosts) */
  uint64_t bytes_recv; /**< payload bytes received */
  double exchange_s;   /**< seconds in migration and ghost exchange */
  double tick_s;       /**< seconds in the tick itself */
  /** Exchange rounds that took the global step, because some rank sent
   * outside its 3 x 3 block of regions (docs/mpi.md) */
  uint64_t far_rounds;
} weft_mpi_stats_t;

/** The global digest: weft_mpi_digest()'s result. */
typedef struct weft_mpi_digest_t {
  uint64_t digest;     /**< the same on every rank */
  uint64_t entities;   /**< owned entities over all ranks */
  uint64_t local;      /**< this rank's owned entities */
  uint64_t local_hash; /**< this rank's share of the digest */
} weft_mpi_digest_t;

/**
 * Splits a rank count into the most square px x py grid with px >= py
 * (12: 4 x 3, 3: 3 x 1, 1: 1 x 1). Any thread; not collective. Returns 0,
 * or WEFT_EINVAL for 0 ranks or NULL outputs.
 */
int weft_mpi_grid(uint32_t ranks, uint32_t *px, uint32_t *py);

/**
 * Creates the driver of @p world on communicator @p comm (duplicated: the
 * driver's messages never match the caller's). Collective. Validates the
 * configuration on every rank and agrees on the result, so that a bad
 * configuration (halo not below the smallest region extent, an empty or
 * non-finite box, a component that is unknown or of the wrong size, a
 * difference between ranks) returns the same WEFT_EINVAL on every rank,
 * with the same message in the world's last error, and no rank hangs.
 * Registers "weft.Key" and "weft.Ghost" when asked and missing. Call it
 * once every component is registered: migrants carry the components the
 * world has now (the entity codec's set), and every rank must have the
 * same ones.
 * *out belongs to the caller until weft_mpi_free(); it must not outlive
 * the world or the communicator. Returns 0, WEFT_EINVAL, WEFT_ENOMEM or a
 * registration's error.
 */
int weft_mpi_new(weft_world_t *world, MPI_Comm comm,
                 const weft_mpi_config_t *config, weft_mpi_t **out);

/** Frees the driver (not the world, whose entities and ghosts stay).
 * Collective (it frees the duplicated communicator). NULL is a no-op. */
void weft_mpi_free(weft_mpi_t *mpi);

/** This rank's index and the rank count. Owner thread. */
uint32_t weft_mpi_rank(const weft_mpi_t *mpi);
/** The rank count. Owner thread. */
uint32_t weft_mpi_size(const weft_mpi_t *mpi);

/** The region of @p rank: [*min, *max) (the box's outer edges belong to
 * the edge regions). Owner thread. WEFT_EINVAL for a rank out of range. */
int weft_mpi_region(const weft_mpi_t *mpi, uint32_t rank, weft_vec2_t *min,
                    weft_vec2_t *max);

/**
 * The rank that owns point (x, y). Regions are half-open: a point on a
 * cut belongs to the region above it; points left of or below the box go
 * to the edge region there, points at or past its max edge to the last
 * region, and NaN coordinates to column or row 0. Owner thread.
 */
uint32_t weft_mpi_owner(const weft_mpi_t *mpi, float x, float y);

/**
 * The rank's neighbours: the ranks whose regions touch this one (sides
 * and corners), ascending, at most 8, written to @p out. Returns the
 * count. Owner thread.
 */
uint32_t weft_mpi_neighbours(const weft_mpi_t *mpi, uint32_t out[8]);

/**
 * Migration and ghost exchange without a tick (weft_mpi_step() does this
 * first): after it, this rank owns exactly the entities in its region,
 * with the ghosts of the others' entities within the halo. Collective.
 * Returns 0, or an error that every rank returns (a decode failure on one
 * rank is reported everywhere).
 */
int weft_mpi_exchange(weft_mpi_t *mpi);

/**
 * One distributed tick: weft_mpi_exchange(), then the configured tick
 * with @p dt; or, where the configuration places the exchange inside the
 * tick (exchange_after, exchange_before), the tick alone, whose system
 * "weft.mpi.exchange" exchanges once per fixed step (the same count on
 * every rank, as they run the same pipeline with the same @p dt). A
 * system ahead of that one that fails on one rank only leaves the others
 * waiting in the exchange: in-tick placement is for systems that fail on
 * every rank alike or not at all. Collective. Allocates nothing once the
 * buffers reached the largest size the run needs. Returns 0 or the first
 * error of any rank (the same code on every rank).
 */
int weft_mpi_step(weft_mpi_t *mpi, double dt);

/**
 * Moves the cuts between regions so that every column and every row of
 * regions holds the same share of the owned entities (by their
 * positions, over all ranks), or with WEFT_MPI_BALANCE_TIME moves them
 * half the way towards the same share of the measured cost; no region
 * narrower than the halo allows. The next exchange moves the entities
 * whose owner changed; results do not change, only the balance.
 * Collective. Allocates nothing. Returns 0 or WEFT_EIO.
 */
int weft_mpi_rebalance(weft_mpi_t *mpi);

/**
 * Writes a distributed checkpoint: this rank's owned entities (entity
 * codec records, with their positions) to "PREFIX.R" for rank R, and on
 * rank 0 "PREFIX.index" with the rank count; each file through a
 * temporary and a rename; the index also holds rank 0's world state
 * beside its entities (see weft_mpi_restore()). Collective. Returns 0, or on
 * every rank the lowest failing rank's error (WEFT_EIO with the path in the
 * message).
 */
int weft_mpi_checkpoint(weft_mpi_t *mpi, const char *prefix);

/**
 * Restores a checkpoint written by weft_mpi_checkpoint() on any rank
 * count: every rank reads every rank's file and spawns the entities whose
 * position it owns now, decoded through the file's component table (so a
 * changed layout migrates as a snapshot load does), then gives the world
 * the saved run's state beside its entities: the pipeline's clock (tick,
 * fixed-step accumulator), the world seed and random streams, resources
 * and the other registered snapshot sections, as rank 0 had them (the
 * caller neither seeds nor sets the clock). Call it on a world without
 * the checkpoint's entities, with its systems, resources and pipeline
 * set up, before the first step. Collective. Returns 0, or on every rank the
 * lowest failing rank's error (WEFT_EFORMAT for a missing or damaged file,
 * WEFT_EMIGRATE for a layout that cannot be migrated, a spawn's error).
 */
int weft_mpi_restore(weft_mpi_t *mpi, const char *prefix);

/**
 * The global digest of the owned entities: the sum mod 2^64 of a 64-bit
 * XXH3 hash per entity over its key and the bytes of every component it
 * has (by component name; tags by name only) except the ghost tag,
 * transient components and relations. Independent of the order and rank
 * of the entities, so the same simulation gives the same digest on any
 * rank count. Collective.
 */
int weft_mpi_digest(weft_mpi_t *mpi, weft_mpi_digest_t *out);

/** This rank's figures (not collective). Owner thread. */
void weft_mpi_stats(const weft_mpi_t *mpi, weft_mpi_stats_t *out);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_MPI_H */
