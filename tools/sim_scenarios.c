/* SPDX-License-Identifier: MIT */
/*
 * weft-sim's scenarios, built from the built-in systems only:
 *
 * - particles: gravity, movement and bouncing walls — the streaming,
 *   memory-bound case;
 * - boids: flocking over a spatial grid — compute-heavy, every boid reads
 *   its neighbours;
 * - arena: units wandering a walled arena, turrets firing projectiles,
 *   collisions through the grid, damage and armor, deaths, projectile
 *   lifetimes — every kind of structural change, every tick. Two
 *   relations give it structure: each projectile is OwnedBy its turret
 *   (cascading: a destroyed turret's projectiles vanish with it), and
 *   units belong to squads of SQUAD_SIZE (MemberOf); a squad whose
 *   members are all dead disbands, which removes their edges. The keyed
 *   build (sim_scene_build_keyed(), for weft-sim --mpi) gives the two
 *   relations a key-based form instead and leaves their rules to
 *   tools/sim_mpi_arena.c.
 *
 * Initial values are counter-based draws keyed by the seed and the spawn
 * index, so a scenario's world does not depend on how it is run.
 */
#include "sim_scenarios.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {"arena", "boids", "particles"};

const char *sim_kind_name(sim_kind_t kind) {
  return (unsigned)kind < 3 ? names[kind] : NULL;
}

bool sim_kind_parse(const char *name, sim_kind_t *out) {
  for (unsigned k = 0; name && k < 3; k++)
    if (strcmp(name, names[k]) == 0) {
      *out = (sim_kind_t)k;
      return true;
    }
  return false;
}

/* A uniform float in [0, 1) for spawn index i, draw n. */
static float draw(uint64_t seed, uint32_t i, uint32_t n) {
  return (float)(weft_random_at(seed, i, 0, 7, n) >> 40) * (1.0f / 16777216.0f);
}

typedef struct fill_t {
  const sim_scene_t *scene;
  uint64_t seed;
  float speed; /* initial speed range: [-speed, speed) per axis */
  /* Every `every`-th spawn (0: none) becomes a turret (arena). */
  uint32_t every;
  uint32_t base; /* spawn index of the batch's first entity */
} fill_t;

/* Fills Position (term 0) and Velocity (term 1) of a batch range. */
static void fill_motion(void *user, const weft_iter_t *v, uint32_t first) {
  const fill_t *f = user;
  float *px = weft_iter_field(v, 0, 0), *py = weft_iter_field(v, 0, 1);
  float *vx = weft_iter_field(v, 1, 0), *vy = weft_iter_field(v, 1, 1);
  float side = f->scene->side;
  for (uint32_t i = 0; i < v->count; i++) {
    uint32_t k = f->base + first + i;
    px[i] = draw(f->seed, k, 0) * side;
    py[i] = draw(f->seed, k, 1) * side;
    vx[i] = (draw(f->seed, k, 2) * 2 - 1) * f->speed;
    vy[i] = (draw(f->seed, k, 3) * 2 - 1) * f->speed;
  }
}

static int particles(sim_scene_t *s, uint32_t n, uint64_t seed) {
  s->side = 1000.0f;
  weft_integrate_config_t ic = {.gravity = {0.0f, -9.81f},
                                .damping = 0.01f,
                                .mode = WEFT_BOUNDS_BOUNCE,
                                .min = {0, 0},
                                .max = {s->side, s->side}};
  weft_integrate_systems_t is;
  int rc = weft_sys_integrate(s->world, &s->std, &ic, &is);
  if (rc)
    return rc;
  fill_t f = {s, seed, 20.0f, 0, 0};
  return weft_spawn_batch(
      s->world, n, (weft_component_t[]){s->std.position, s->std.velocity, 0},
      fill_motion, &f, NULL);
}

/* The cell limit a square grid of side `side` cut in cells of size `cell`
 * needs: its density grows with the entity count, so a large run needs
 * more than the grid's default. */
static uint32_t cells_for(float side, float cell) {
  double per_side = ceil((double)side / (double)cell);
  double need = per_side * per_side;
  return need > (double)WEFT_GRID_CELLS_DEFAULT ? (uint32_t)need : 0;
}

static int boids(sim_scene_t *s, uint32_t n, uint64_t seed) {
  const float radius = 4.0f;
  s->side = ceilf(sqrtf((float)n * 16.0f)); /* ~1 boid per 16 units^2 */
  weft_integrate_config_t ic = {
      .mode = WEFT_BOUNDS_WRAP, .min = {0, 0}, .max = {s->side, s->side}};
  weft_integrate_systems_t is;
  int rc = weft_sys_integrate(s->world, &s->std, &ic, &is);
  weft_grid_config_t gc = {.cell = radius,
                           .min = {0, 0},
                           .max = {s->side, s->side},
                           .max_cells = cells_for(s->side, radius)};
  if (!rc)
    rc = weft_grid_create(s->world, &gc, &s->grid);
  weft_system_t id;
  if (!rc)
    rc = weft_sys_grid(s->world, &s->std, s->grid, s->std.boid, 0, &id);
  weft_boids_config_t bc = {.radius = radius, .max_speed = 10.0f};
  if (!rc)
    rc = weft_sys_boids(s->world, &s->std, s->grid, &bc, &id);
  if (rc)
    return rc;
  fill_t f = {s, seed, 5.0f, 0, 0};
  return weft_spawn_batch(
      s->world, n,
      (weft_component_t[]){s->std.position, s->std.velocity, s->std.boid, 0},
      fill_motion, &f, NULL);
}

/* ---- arena structure: wreckage and squads -------------------------------- */

#define SQUAD_SIZE 64u

/* A squad: its living members, counted each tick. */
typedef struct sim_squad_t {
  uint32_t members;
  uint32_t ticks; /* ticks it has existed */
} sim_squad_t;

/* Despawns dead turrets; OwnedBy cascades to their projectiles. */
static int wreckage_run(weft_sysctx_t *ctx, const weft_iter_t *it) {
  for (uint32_t i = 0; i < it->count; i++) {
    int rc = weft_cmd_despawn(ctx->cmd, it->entities[i]);
    if (rc)
      return rc;
  }
  return 0;
}

/* What the squads system reads, kept in a world resource so that it lives
 * as long as the system. */
typedef struct squad_ids_t {
  weft_component_t member_of, dead;
} squad_ids_t;

typedef struct squad_count_t {
  const weft_world_t *world;
  weft_component_t dead;
  uint32_t alive;
} squad_count_t;

static bool squad_member(weft_entity_t source, weft_entity_t target,
                         void *payload, void *user) {
  (void)target;
  (void)payload;
  squad_count_t *c = user;
  c->alive += !weft_has(c->world, source, c->dead);
  return true;
}

/* Counts each squad's living members (ascending handle order through the
 * reverse index); a squad with none disbands. */
static int squads_run(weft_sysctx_t *ctx, const weft_iter_t *it) {
  const squad_ids_t *ids = ctx->user;
  sim_squad_t *sq = it->columns[0];
  for (uint32_t i = 0; i < it->count; i++) {
    squad_count_t c = {ctx->world, ids->dead, 0};
    int rc = weft_relation_sources(ctx->world, it->entities[i], ids->member_of,
                                   squad_member, &c);
    if (rc)
      return rc;
    sq[i].members = c.alive;
    sq[i].ticks++;
    if (!c.alive && (rc = weft_cmd_despawn(ctx->cmd, it->entities[i])))
      return rc;
  }
  return 0;
}

/* The keyed arena's key-based forms of the relations (sim_scenarios.h). */
static int arena_keyed_components(sim_scene_t *s) {
  weft_component_desc_t od = {.name = "sim.Owner",
                              .size = sizeof(uint64_t),
                              .alignment = _Alignof(uint64_t)};
  weft_component_desc_t qd = {.name = "sim.SquadOf",
                              .size = sizeof(uint32_t),
                              .alignment = _Alignof(uint32_t)};
  int rc = weft_component_register(s->world, &od, &s->owner);
  return rc ? rc : weft_component_register(s->world, &qd, &s->squad_of);
}

static int arena_structure(sim_scene_t *s, bool keyed) {
  weft_world_t *w = s->world;
  weft_component_desc_t sd = {.name = "sim.Squad", .size = sizeof(sim_squad_t)};
  int rc = weft_component_register(w, &sd, &s->squad);
  weft_relation_desc_t md = {.name = "sim.MemberOf",
                             .flags = WEFT_RELATION_EXCLUSIVE |
                                      WEFT_RELATION_SPARSE};
  if (!rc)
    rc = weft_relation_register(w, &md, &s->member_of);
  /* Keyed: the distributed driver applies wreckage and squads by key. */
  if (keyed)
    return rc ? rc : arena_keyed_components(s);
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "sim.wreckage";
  d.phase = WEFT_PHASE_FIXED_UPDATE;
  d.query.include[0] = s->std.spawner;
  d.query.include[1] = s->std.dead;
  d.term_access[0] = WEFT_ACCESS_NONE;
  d.term_access[1] = WEFT_ACCESS_NONE;
  d.flags = WEFT_SYSTEM_DESPAWNS;
  d.after[0] = "weft.health";
  d.run = wreckage_run;
  weft_system_t id;
  if (!rc)
    rc = weft_system_register(w, &d, &id);
  squad_ids_t ids = {s->member_of, s->std.dead};
  weft_resource_t res = 0;
  if (!rc)
    rc = weft_resource_register(w, "sim.squads", sizeof ids,
                                _Alignof(squad_ids_t), &ids, &res);
  memset(&d, 0, sizeof d);
  d.name = "sim.squads";
  d.phase = WEFT_PHASE_FIXED_UPDATE;
  d.query.include[0] = s->squad;
  d.term_access[0] = WEFT_ACCESS_WRITE;
  d.read[0] = s->member_of;
  d.read[1] = s->std.dead;
  /* weft_relation_sources() writes nothing: the chunks may run on workers,
   * the relation being in the read list. */
  d.flags = WEFT_SYSTEM_DESPAWNS;
  d.after[0] = "weft.health";
  d.run = squads_run;
  d.res_read[0] = res;
  d.user = rc ? NULL : weft_resource_get(w, res);
  return rc ? rc : weft_system_register(w, &d, &id);
}

/* Spawns one squad per SQUAD_SIZE units, in spawn order, and joins each
 * unit to its squad: by a MemberOf edge, or in the keyed arena by its
 * squad's index in sim.SquadOf (the scene keeps the squads by index). */
static int arena_squads(sim_scene_t *s, const weft_entity_t *units,
                        uint32_t n) {
  int rc = 0;
  weft_entity_t squad = 0;
  const uint32_t count = (n + SQUAD_SIZE - 1) / SQUAD_SIZE;
  if (s->squad_of && count) {
    s->squads = calloc(count, sizeof *s->squads);
    if (!s->squads)
      return WEFT_ENOMEM;
    s->squad_count = count;
  }
  for (uint32_t k = 0; !rc && k < n; k++) {
    if (k % SQUAD_SIZE == 0) {
      sim_squad_t v = {n - k < SQUAD_SIZE ? n - k : SQUAD_SIZE, 0};
      weft_component_t c[] = {s->squad, 0};
      const void *vals[] = {&v};
      rc = weft_spawn_with(s->world, c, vals, &squad);
      if (!rc && s->squads)
        s->squads[k / SQUAD_SIZE] = squad;
    }
    if (rc)
      break;
    if (s->squad_of) {
      uint32_t *of = weft_get_mut(s->world, units[k], s->squad_of);
      if (!of)
        return WEFT_EINVAL;
      *of = k / SQUAD_SIZE;
    } else {
      rc = weft_relation_add(s->world, units[k], s->member_of, squad, NULL);
    }
  }
  return rc;
}

/* Arena values for units and turrets, written after the motion fill. */
typedef struct arena_vals_t {
  weft_collider_t unit_col, turret_col;
  weft_health_t unit_hp, turret_hp;
  weft_armor_t unit_armor, turret_armor;
  weft_damage_t unit_dmg;
  weft_spawner_t turret;
} arena_vals_t;

static int spawn_arena(sim_scene_t *s, uint32_t n, uint64_t seed) {
  const weft_std_t *d = &s->std;
  arena_vals_t a = {.unit_col = {WEFT_SHAPE_CIRCLE, 0.5f, 0, 0, 1, 1 | 2},
                    .turret_col = {WEFT_SHAPE_BOX, 0, 1.0f, 1.0f, 1, 2},
                    .unit_hp = {100.0f, 100.0f},
                    .turret_hp = {400.0f, 400.0f},
                    .unit_armor = {1.0f, 0.1f},
                    .turret_armor = {2.0f, 0.5f},
                    .unit_dmg = {0.25f},
                    .turret = {.interval = 0.5f,
                               .speed = 25.0f,
                               .lifetime = 1.5f,
                               .damage = 12.0f,
                               .radius = 0.25f,
                               .burst = 4,
                               .layer = 2,
                               .mask = 1}};
  uint32_t turrets = n / 200, units = n - turrets;
  s->turret_count = turrets;
  /* Units: moving, colliding, hurting each other a little. The keyed
   * arena's sim.SquadOf ends the list; elsewhere its 0 ends it before. */
  weft_component_t uc[] = {d->position, d->velocity, d->collider, d->health,
                           d->armor,    d->damage,   s->squad_of, 0};
  fill_t f = {s, seed, 3.0f, 0, 0};
  weft_entity_t e;
  weft_entity_t *spawned = malloc((units ? units : 1) * sizeof *spawned);
  if (!spawned)
    return WEFT_ENOMEM;
  int rc = weft_spawn_batch(s->world, units, uc, fill_motion, &f, spawned);
  if (!rc)
    rc = arena_squads(s, spawned, units);
  free(spawned);
  /* The batch zero-filled the rest: set it per entity, in spawn order. */
  weft_query_t *q = NULL;
  if (!rc)
    rc = weft_query_create(
        s->world, &(weft_query_desc_t){.include = {d->collider, d->health}},
        &q);
  if (!rc) {
    weft_iter_t it;
    for (weft_query_iter(q, &it); weft_iter_next(&it);) {
      weft_collider_t *c = weft_iter_column_of(&it, d->collider);
      weft_health_t *h = weft_iter_column_of(&it, d->health);
      weft_armor_t *ar = weft_iter_column_of(&it, d->armor);
      weft_damage_t *dm = weft_iter_column_of(&it, d->damage);
      for (uint32_t i = 0; i < it.count; i++) {
        c[i] = a.unit_col;
        h[i] = a.unit_hp;
        ar[i] = a.unit_armor;
        dm[i] = a.unit_dmg;
      }
    }
    weft_query_destroy(q);
  }
  /* Turrets: static, boxy, firing bursts on staggered timers. */
  for (uint32_t t = 0; !rc && t < turrets; t++) {
    uint32_t k = units + t;
    weft_vec2_t p = {draw(seed, k, 0) * s->side, draw(seed, k, 1) * s->side};
    weft_spawner_t sp = a.turret;
    sp.timer = draw(seed, k, 4) * sp.interval;
    weft_component_t tc[] = {d->position, d->collider, d->health,
                             d->armor,    d->spawner,  0};
    const void *tv[] = {&p, &a.turret_col, &a.turret_hp, &a.turret_armor, &sp};
    rc = weft_spawn_with(s->world, tc, tv, &e);
  }
  return rc;
}

static int arena(sim_scene_t *s, uint32_t n, uint64_t seed, bool keyed) {
  s->side = ceilf(sqrtf((float)n * 25.0f)); /* ~1 entity per 25 units^2 */
  weft_integrate_config_t ic = {
      .mode = WEFT_BOUNDS_BOUNCE, .min = {0, 0}, .max = {s->side, s->side}};
  weft_integrate_systems_t is;
  int rc = weft_sys_integrate(s->world, &s->std, &ic, &is);
  weft_grid_config_t gc = {.cell = 2.0f, /* the largest collider: 2x2 */
                           .min = {0, 0},
                           .max = {s->side, s->side},
                           .max_cells = cells_for(s->side, 2.0f)};
  if (!rc)
    rc = weft_grid_create(s->world, &gc, &s->grid);
  weft_system_t id;
  if (!rc)
    rc = weft_sys_grid(s->world, &s->std, s->grid, s->std.collider, 0, &id);
  if (!rc)
    rc = weft_sys_collide(s->world, &s->std, s->grid, 0, &id);
  if (!rc)
    rc = weft_sys_health(s->world, &s->std, 0, &id);
  if (!rc)
    rc = weft_sys_lifetime(s->world, &s->std, 0, &id);
  if (!rc)
    rc = weft_sys_spawners(s->world, &s->std, 0, &id);
  if (!rc)
    rc = arena_structure(s, keyed);
  return rc ? rc : spawn_arena(s, n, seed);
}

static int build(sim_scene_t *s, weft_world_t *w, sim_kind_t kind,
                 uint32_t entities, uint64_t seed, bool keyed) {
  memset(s, 0, sizeof *s);
  s->kind = kind;
  s->world = w;
  int rc = weft_std_register(w, &s->std);
  if (rc)
    return rc;
  switch (kind) {
  case SIM_PARTICLES:
    return particles(s, entities, seed);
  case SIM_BOIDS:
    return boids(s, entities, seed);
  case SIM_ARENA:
    return arena(s, entities, seed, keyed);
  }
  return WEFT_EINVAL;
}

int sim_scene_build(sim_scene_t *s, weft_world_t *w, sim_kind_t kind,
                    uint32_t entities, uint64_t seed) {
  return build(s, w, kind, entities, seed, false);
}

int sim_scene_build_keyed(sim_scene_t *s, weft_world_t *w, sim_kind_t kind,
                          uint32_t entities, uint64_t seed) {
  return build(s, w, kind, entities, seed, true);
}

void sim_scene_free(sim_scene_t *s) {
  weft_grid_destroy(s->grid);
  s->grid = NULL;
  free(s->squads);
  s->squads = NULL;
  s->squad_count = 0;
}
