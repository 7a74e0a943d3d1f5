/* SPDX-License-Identifier: MIT */
/*
 * weft-sim's scenarios: each builds a world of the built-in systems
 * (include/weft/builtin.h) and spawns its initial entities from a seed.
 */
#ifndef WEFT_TOOLS_SIM_SCENARIOS_H
#define WEFT_TOOLS_SIM_SCENARIOS_H

#include <stdint.h>

#include <weft.h>

typedef enum sim_kind_t { SIM_ARENA = 0, SIM_BOIDS, SIM_PARTICLES } sim_kind_t;

/* A scenario's world, its grid (if any) and what it registered. */
typedef struct sim_scene_t {
  sim_kind_t kind;
  weft_world_t *world;
  weft_grid_t *grid; /* owned; destroyed by sim_scene_free() */
  weft_std_t std;
  float side; /* the square arena is [0, side)^2 */
  /* arena: the squad component and the unit -> squad relation */
  weft_component_t squad, member_of;
  /* Keyed arena (sim_scene_build_keyed()) only, else 0 / NULL: the
   * key-based forms of the two relations, "sim.Owner" (a projectile's
   * turret's weft.Key, a uint64_t) and "sim.SquadOf" (a unit's squad
   * index, a uint32_t), and the squads by index (owned by the scene). */
  weft_component_t owner, squad_of;
  weft_entity_t *squads;
  uint32_t squad_count, turret_count;
} sim_scene_t;

/* The scenario's name ("arena", ...), or NULL for an unknown kind. */
const char *sim_kind_name(sim_kind_t kind);

/* Parses a scenario name; false when unknown. */
bool sim_kind_parse(const char *name, sim_kind_t *out);

/*
 * Registers the scenario's systems on @p world and spawns @p entities
 * initial entities drawn from @p seed. Returns 0 or a weft error (the
 * world's last error says more).
 */
int sim_scene_build(sim_scene_t *scene, weft_world_t *world, sim_kind_t kind,
                    uint32_t entities, uint64_t seed);

/*
 * sim_scene_build() for a distributed run (tools/sim_mpi_arena.c): the
 * same entities, but the arena keeps no relation edges that would have to
 * cross ranks. Units carry their squad's index ("sim.SquadOf") instead of
 * a MemberOf edge, "sim.Owner" is registered for the projectiles' owner
 * keys, and sim.wreckage and sim.squads are not registered: the
 * distributed driver applies their rules (by key) at the end of the
 * fixed step. Other scenarios are built as sim_scene_build() builds them.
 */
int sim_scene_build_keyed(sim_scene_t *scene, weft_world_t *world,
                          sim_kind_t kind, uint32_t entities, uint64_t seed);

/* Frees what the scene owns (not the world). */
void sim_scene_free(sim_scene_t *scene);

#endif /* WEFT_TOOLS_SIM_SCENARIOS_H */
