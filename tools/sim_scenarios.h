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

/* Frees what the scene owns (not the world). */
void sim_scene_free(sim_scene_t *scene);

#endif /* WEFT_TOOLS_SIM_SCENARIOS_H */
