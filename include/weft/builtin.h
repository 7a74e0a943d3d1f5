/* SPDX-License-Identifier: MIT */
/**
 * @file weft/builtin.h
 * Built-in simulation systems (2D), written against the public API only.
 *
 * weft_std_register() registers the standard components, resources and the
 * collision channel the built-in systems share; each weft_sys_*()
 * registers one or more systems with their access declared, so they
 * schedule like any user system (system.h). Positions and velocities are
 * stored field-level SoA (x and y are separate arrays), so the arithmetic
 * systems are branch-free loops over columns that the compiler vectorizes;
 * control flow (collisions, health, spawning) lives in callbacks.
 *
 * Every system is deterministic: the same world gives the same digest on
 * any number of workers (random draws use weft_sysctx_random(), events and
 * commands are keyed per chunk).
 *
 * Keyed mode: an entity with the standard Key component (weft_key_t) is
 * known to the systems by its key instead of its handle wherever the
 * handle served as an order or a random-stream id: grid cells, boids'
 * neighbour sums, collision pairs, random draws and the keys of spawned
 * projectiles. Two worlds holding the same keyed entities with the same
 * values then give each of them bit-identical results, whatever their
 * handles, rows, chunks or spawn order (the systems' settings, grid
 * included, being the same). Without Key an entity's handle is its key,
 * and the systems behave, bit for bit, as they did before keys existed.
 *
 * Ghosts: an entity with the standard Ghost tag is a read-only copy of an
 * entity another world owns (a neighbouring region's boundary). Grids hold
 * ghosts, so boids neighbours and collision partners include them, but no
 * built-in system writes a ghost's components or records commands or
 * effects for it: whoever owns the original computes those. A world split
 * in regions then steps each owned entity as one world holding all does
 * when every world's grid has the same settings, each ghost carries its
 * original's Key and standard components (enabled or not) as they are at
 * the start of the tick, and ghosts cover every entity within reach of an
 * owned one (the boids radius, two collider reaches); weft_sys_health()
 * says what its keyed rule adds.
 *
 * Threads: every function here is owner-thread API. Objects created here
 * (grids) belong to the caller and must outlive the systems that use them.
 */
#ifndef WEFT_BUILTIN_H
#define WEFT_BUILTIN_H

#include <stdbool.h>
#include <stdint.h>

#include "weft/component.h"
#include "weft/phase.h"
#include "weft/resource.h"
#include "weft/system.h"
#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A 2D vector; Position and Velocity values have this layout. */
typedef struct weft_vec2_t {
  float x, y;
} weft_vec2_t;

/** Collider shapes. */
enum { WEFT_SHAPE_CIRCLE = 0, WEFT_SHAPE_BOX = 1 };

/** Collider: a circle of radius `r` or an axis-aligned box of half extents
 * (hx, hy), centred on the Position. Colliders collide when their
 * `layer & other.mask` or `other.layer & mask` is nonzero (0 and 0: no
 * filtering). */
typedef struct weft_collider_t {
  uint32_t shape; /**< WEFT_SHAPE_* */
  float r;        /**< circle radius */
  float hx, hy;   /**< box half extents */
  uint32_t layer;
  uint32_t mask;
} weft_collider_t;

/** Health: dies (gets the Dead tag) when hp reaches 0. */
typedef struct weft_health_t {
  float hp;
  float max_hp;
} weft_health_t;

/** Armor: flat reduction of each hit, then a fraction (0..1) of the rest. */
typedef struct weft_armor_t {
  float flat;
  float fraction;
} weft_armor_t;

/** Damage dealt by this entity to what it touches, per contact event. */
typedef struct weft_damage_t {
  float amount;
} weft_damage_t;

/** Seconds left before the entity is despawned. */
typedef struct weft_lifetime_t {
  float remaining;
} weft_lifetime_t;

/** A spawner fires `burst` projectiles every `interval` seconds in random
 * directions at `speed`; each projectile gets a circle collider of
 * `radius`, `damage`, and `lifetime` seconds. */
typedef struct weft_spawner_t {
  float interval;
  float timer; /**< seconds until the next burst */
  float speed;
  float lifetime;
  float damage;
  float radius;
  uint32_t burst;
  uint32_t layer; /**< collider layer/mask of the projectiles */
  uint32_t mask;
} weft_spawner_t;

/**
 * A stable identity for an entity, independent of its handle (Key, keyed
 * mode: see the file comment), held by the standard component "weft.Key"
 * (weft_std_t.key). Ids must be unique within a world; UINT64_MAX is
 * reserved (the systems' merges use it as an end mark).
 */
typedef struct weft_key_t {
  uint64_t id;
} weft_key_t;

/**
 * The key of child @p n of @p parent: a collision-resistant mix of the
 * two (the splitmix64 finalizer over parent and a golden-ratio multiple
 * of n + 1, applied twice), never UINT64_MAX. weft_sys_spawners() keys
 * projectile n of the burst a keyed spawner fires in tick t as
 * weft_key_derive(weft_key_derive(spawner key, t), n). Any thread.
 */
static inline uint64_t weft_key_derive(uint64_t parent, uint64_t n) {
  uint64_t h = parent;
  for (int i = 0; i < 2; i++) {
    h += (n + 1) * 0x9e3779b97f4a7c15u;
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9u;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebu;
    h ^= h >> 31;
  }
  return h == UINT64_MAX ? h - 1 : h;
}

/** A collision event: a < b (key order, keyed mode: see the file comment;
 * handle order for entities without Key), the normal points from a to b,
 * depth is the overlap. Published in the std collisions channel. */
typedef struct weft_collision_t {
  weft_entity_t a, b;
  float nx, ny;
  float depth;
} weft_collision_t;

/** Integration bounds modes. */
typedef enum weft_bounds_mode_t {
  WEFT_BOUNDS_NONE = 0, /**< no bounds system */
  WEFT_BOUNDS_WRAP,     /**< leaving one side re-enters on the other */
  WEFT_BOUNDS_CLAMP,    /**< clamped to the box, velocity kept */
  WEFT_BOUNDS_BOUNCE    /**< clamped, and the velocity component reversed */
} weft_bounds_mode_t;

/** Ids of the standard components, resources and channel. */
typedef struct weft_std_t {
  weft_component_t position; /**< weft_vec2_t, SoA fields x, y */
  weft_component_t velocity; /**< weft_vec2_t, SoA fields x, y */
  weft_component_t collider; /**< weft_collider_t */
  weft_component_t health;   /**< weft_health_t */
  weft_component_t armor;    /**< weft_armor_t */
  weft_component_t damage;   /**< weft_damage_t */
  weft_component_t lifetime; /**< weft_lifetime_t */
  weft_component_t spawner;  /**< weft_spawner_t */
  weft_component_t boid;     /**< tag: takes part in flocking */
  weft_component_t dead;     /**< tag: added when health reaches 0 */
  weft_channel_t collisions; /**< weft_collision_t events */
  /** Relation "weft.OwnedBy" (exclusive, sparse, cascading): from a
   * projectile to the spawner that fired it, so that despawning the
   * spawner despawns its projectiles in the same sync point. */
  weft_component_t owned_by;
  weft_component_t key;   /**< weft_key_t ("weft.Key"): keyed mode */
  weft_component_t ghost; /**< tag ("weft.Ghost"): a read-only copy */
} weft_std_t;

/**
 * Registers the standard components ("weft.Position", "weft.Velocity",
 * ...), the "weft.OwnedBy" relation and the "weft.collisions" channel, or looks
 * them up when a previous call registered them. Owner thread. Returns 0 or the
 * registration's error (WEFT_ETOOMANY, WEFT_ENOMEM).
 */
int weft_std_register(weft_world_t *world, weft_std_t *out);

/* ---- integration -------------------------------------------------------- */

/** Integration settings; zero means default for every field. */
typedef struct weft_integrate_config_t {
  weft_phase_t phase;      /**< 0: WEFT_PHASE_FIXED_UPDATE */
  weft_vec2_t gravity;     /**< added to velocity per second; 0: none */
  float damping;           /**< velocity *= max(0, 1 - damping * dt);
                                0: none */
  weft_bounds_mode_t mode; /**< bounds behaviour; NONE: no bounds system */
  weft_vec2_t min, max;    /**< the bounds box (mode != NONE) */
} weft_integrate_config_t;

/** The systems weft_sys_integrate() registered (0 where not registered). */
typedef struct weft_integrate_systems_t {
  weft_system_t gravity, damping, move, bounds;
} weft_integrate_systems_t;

/**
 * Registers, in this order: "weft.gravity" (velocity += gravity * dt, only
 * when gravity is nonzero), "weft.damping" (only when damping > 0),
 * "weft.move" (position += velocity * dt) and "weft.bounds" (mode !=
 * NONE). Entities need Position and Velocity; a disabled Velocity stops
 * them, and ghosts are left alone. Each entity's step depends on its own
 * values alone, so keyed or not, it is the same in any world. @p config (NULL:
 * all defaults) is copied into a resource
 * ("weft.integrate.N") that the systems read. Returns 0, WEFT_EINVAL (bad
 * config: min >= max, negative damping, a value that is not finite, an
 * unknown mode; the box is ignored with mode NONE), WEFT_EEXIST (the
 * systems exist already), or a registration error; on error no system
 * stays registered. Owner thread.
 */
int weft_sys_integrate(weft_world_t *world, const weft_std_t *std,
                       const weft_integrate_config_t *config,
                       weft_integrate_systems_t *out);

/* ---- the spatial grid ---------------------------------------------------- */

/** An opaque uniform spatial hash grid, rebuilt each tick by its system. */
typedef struct weft_grid_t weft_grid_t;

/** Grid settings; zero means default. */
typedef struct weft_grid_config_t {
  float cell;           /**< cell size; 0: 1.0. Must be >= the largest
                             interaction distance (collider diameter,
                             boids radius) for 3x3 neighbourhoods to be
                             complete. */
  weft_vec2_t min, max; /**< the area covered; positions outside fall in
                             the border cells. Required: min < max. */
  uint32_t max_cells;   /**< the most cells the area may cut into; 0:
                             WEFT_GRID_CELLS_DEFAULT. A cell costs 4 bytes
                             of table, which every rebuild clears and
                             scans, so the default catches a cell far too
                             small for the area; a world of millions of
                             entities at one per few cells needs more (at
                             most WEFT_GRID_CELLS_MAX). */
} weft_grid_config_t;

/** The default cell limit of a grid: 2^24 cells, a 64 MiB table. */
#define WEFT_GRID_CELLS_DEFAULT (1u << 24)
/** The largest cell limit a grid accepts: 2^30 cells, a 4 GiB table. */
#define WEFT_GRID_CELLS_MAX (1u << 30)

/** One entity in the grid: a snapshot taken when the grid was built. */
typedef struct weft_grid_item_t {
  weft_entity_t e;
  uint64_t key;             /**< its Key's id, or its handle without Key */
  float x, y;               /**< position */
  float vx, vy;             /**< velocity (0 without Velocity) */
  weft_collider_t collider; /**< zero when the entity has none (absent,
                                 disabled, or the entity has the Dead tag) */
} weft_grid_item_t;

/**
 * Creates a grid for @p world. The caller owns it (weft_grid_destroy())
 * and must keep it alive while systems using it are registered. It
 * registers a resource ("weft.grid.N", N = 1, 2, ... the first free
 * number) that its builder writes and its readers read, which orders them.
 * Returns WEFT_EINVAL (min >= max, a cell that is not positive and finite,
 * more cells than max_cells, max_cells above WEFT_GRID_CELLS_MAX),
 * WEFT_ENOMEM or the resource's registration error; weft_world_last_error()
 * says which.
 */
int weft_grid_create(weft_world_t *world, const weft_grid_config_t *config,
                     weft_grid_t **out);

/** Frees a grid and the queries its builder made. Owner thread; NULL is a
 * no-op. Destroy it before its world (the queries belong to the world),
 * and run no frame after it while systems using it are registered. */
void weft_grid_destroy(weft_grid_t *grid);

/** The resource that orders the grid's builder before its readers. */
weft_resource_t weft_grid_resource(const weft_grid_t *grid);

/**
 * Registers "weft.grid.build" (name suffixed with the grid's number for
 * grids after the first): a task that rebuilds @p grid from every entity
 * with Position matching @p with (an extra include component, 0: none),
 * in @p phase (0: FixedUpdate), ghosts included. Entities are stored by
 * cell in key order (weft_grid_item_t.key, then handle), so the grid does
 * not depend on chunk order or thread count, nor, for keyed entities, on
 * their handles. The
 * rebuild allocates only when the grid must grow. WEFT_EEXIST when the
 * grid already has a builder.
 */
int weft_sys_grid(weft_world_t *world, const weft_std_t *std, weft_grid_t *grid,
                  weft_component_t with, weft_phase_t phase,
                  weft_system_t *out);

/** Cell size. Reader threads. */
float weft_grid_cell_size(const weft_grid_t *grid);
/** Dimensions: cells along x and y. Reader threads. */
void weft_grid_dims(const weft_grid_t *grid, int32_t *nx, int32_t *ny);

/** The cell holding point (x, y) (clamped to the grid). Reader threads. */
void weft_grid_cell_of(const weft_grid_t *grid, float x, float y, int32_t *cx,
                       int32_t *cy);

/**
 * The items of cell (cx, cy) in key order, *n of them; NULL with *n = 0
 * outside the grid. Valid until the next rebuild. Any thread while no
 * rebuild runs (systems that declare the grid's resource as read).
 */
const weft_grid_item_t *weft_grid_cell(const weft_grid_t *grid, int32_t cx,
                                       int32_t cy, uint32_t *n);

/**
 * The items of cells x0..x1 (clamped to the grid) of row cy, as one array:
 * cell by cell, each cell in key order; *n of them. Cells are stored
 * row-major, so a row's stretch is contiguous: a 3x3 neighbourhood is
 * three calls instead of nine. NULL with *n = 0 when empty. Same lifetime
 * and threads as weft_grid_cell().
 */
const weft_grid_item_t *weft_grid_row(const weft_grid_t *grid, int32_t x0,
                                      int32_t x1, int32_t cy, uint32_t *n);

/** Items in the grid after the last rebuild. Same threads as
 * weft_grid_cell(). */
uint32_t weft_grid_count(const weft_grid_t *grid);

/* ---- collisions ---------------------------------------------------------- */

/**
 * Registers "weft.collide", a task over @p grid's snapshot: for every pair
 * of grid items (a, b) in neighbouring cells (3x3) whose layers match and
 * whose shapes overlap (circle/circle, circle/box, box/box) it emits one
 * weft_collision_t to std->collisions, a being the smaller key
 * (weft_grid_item_t.key: the Key's id, or the handle) and the normal
 * pointing from a to b. Each pair is reported once per tick; a pair of
 * two ghosts is not reported (their owner reports it). Items
 * whose collider is zero (no Collider, a disabled one, or the Dead tag)
 * take no part, and neither do entities the grid does not hold, so build
 * the grid with `with` 0 or Collider. A collider whose layer and mask are
 * both 0 matches every other. The pairs are complete when the grid's cell
 * is at least twice the largest circle radius or box half extent.
 *
 * The task runs after the grid's builder (it reads the grid's resource)
 * and splits the grid's rows over the world's pool, emitting in cell order
 * through part contexts (weft_sysctx_part()): the events, and their order,
 * are the same on any number of threads, and for keyed entities the
 * same in any world with the same grid settings (cells in order, keys
 * within a cell). Positions are the ones the grid saw when it was built. Owner
 * thread, not while a frame runs. Returns 0, WEFT_EINVAL, WEFT_EEXIST when
 * "weft.collide" is registered already, or what weft_system_register() returns.
 */
int weft_sys_collide(weft_world_t *world, const weft_std_t *std,
                     weft_grid_t *grid, weft_phase_t phase, weft_system_t *out);

/**
 * The narrowphase used by weft_sys_collide(), exposed for tests and custom
 * systems: true when colliders @p a at (ax, ay) and @p b at (bx, by)
 * overlap (depth > 0: touching is no contact), with the unit normal from a
 * to b and the depth. Box/box and a circle centred inside a box separate
 * along the axis of least overlap; a zero delta on that axis takes its
 * sign from the other axis, and coincident centres give (1, 0). Shapes
 * without area (radius or a half extent <= 0, so a zeroed collider) never
 * overlap; layers are not looked at. Any thread. The out-pointers may be
 * NULL.
 */
bool weft_collide_test(const weft_collider_t *a, float ax, float ay,
                       const weft_collider_t *b, float bx, float by, float *nx,
                       float *ny, float *depth);

/* ---- health and damage -------------------------------------------------- */

/**
 * Registers "weft.health": reads the collision events published since its
 * last run; for each event, an entity with Damage hurts the other one if
 * it has Health (after Armor: max(0, amount - flat) * (1 - fraction)).
 * Events are applied in their published order. An entity whose hp reaches
 * 0 gets the Dead tag and its Velocity and Collider disabled through
 * commands, once. Stale handles, entities with
 * the Dead tag and entities at hp <= 0 (killed earlier in the run) neither
 * take nor deal damage; the two hits of one event are simultaneous; the
 * fraction is clamped to [0, 1] and hp is not floored. The events are the
 * channel's contents at the run: the pipeline clears channels after each
 * fixed tick. With a pool, the lookups and damage of a run's events are
 * worked out on every worker and then applied in order on one thread, so
 * the outcome is the same on any number of threads.
 *
 * Keyed mode (both parties have Key): a party deals its damage as long as
 * it is live and not tagged Dead when the run starts, even after an
 * earlier event of the run killed it, and takes damage while its hp is
 * above 0; so an entity's hits depend only on its own events and on its
 * partners' state at the start of the run, which a ghost copy holds.
 * Ghosts take no damage and are never killed here (their owner does
 * that), but deal theirs; a ghost whose Lifetime has at most the step's
 * dt left counts as gone, as its original is where weft.lifetime's
 * despawn is applied before this run (the usual schedule: health waits
 * for collide's events behind a sync point, lifetime does not). Worlds
 * without keys or ghosts pay for none of this.
 *
 * When a death cannot be recorded (out of memory), the run fails (the tick
 * returns WEFT_ESYSTEM naming it) and that death's hit is undone, so hp <= 0
 * still goes with the Dead tag; earlier events of the run keep their effect, as
 * any failed system's work does. Its weft_system_stats() count the
 * events it read (each involves two entities). The system keeps its
 * ids in the resource "weft.health.config" and its plan (two blocks of
 * 8,192 events, 512 KiB) in "weft.health.plan"; both live as long as the
 * world. Owner
 * thread, not while systems run. WEFT_EEXIST when "weft.health" is
 * registered already, or when those resource names hold something else;
 * otherwise 0 or the error of a registration (WEFT_ETOOMANY,
 * WEFT_ENOMEM).
 */
int weft_sys_health(weft_world_t *world, const weft_std_t *std,
                    weft_phase_t phase, weft_system_t *out);

/* ---- lifetime and spawners ---------------------------------------------- */

/**
 * Registers "weft.lifetime": remaining -= dt; entities whose lifetime ran
 * out (remaining <= 0) are despawned through commands. Ghosts are left
 * alone (their owner despawns the original). WEFT_EINVAL (NULL
 * argument), WEFT_EEXIST, or a registration error. Owner thread.
 */
int weft_sys_lifetime(weft_world_t *world, const weft_std_t *std,
                      weft_phase_t phase, weft_system_t *out);

/** The weft_sysctx_random() stream of the spawners' directions. */
#define WEFT_SPAWNER_STREAM 0x53504157u

/**
 * Registers "weft.spawners": each entity with Spawner and Position counts
 * its timer down and, when it expires, spawns `burst` projectiles through
 * commands (Position, Velocity in a direction drawn with
 * weft_sysctx_random(), Lifetime, Collider, Damage) and restarts the
 * timer. Dead spawners (with the Dead tag) and ghosts do not fire.
 * Projectile n (0 .. burst - 1) of a burst flies at angle 2 pi u, where u
 * is the top 53 bits of weft_sysctx_random(ctx, id, WEFT_SPAWNER_STREAM,
 * n) scaled to [0, 1), id being the spawner's handle or, for a spawner
 * with Key, its key. A keyed spawner's projectiles get a Key too, in the
 * spawn command: weft_key_derive(weft_key_derive(spawner key, tick), n),
 * tick being the context's (the fixed steps done before this one), so a
 * projectile's key and direction do not depend on the spawner's handle or
 * place. The timer restarts at timer + interval, or at interval when
 * that is still <= 0. WEFT_EINVAL (NULL argument), WEFT_EEXIST, or a
 * registration error. Owner thread.
 */
int weft_sys_spawners(weft_world_t *world, const weft_std_t *std,
                      weft_phase_t phase, weft_system_t *out);

/* ---- boids -------------------------------------------------------------- */

/** Flocking settings; zero means default. */
typedef struct weft_boids_config_t {
  weft_phase_t phase; /**< 0: FixedUpdate */
  float radius;       /**< neighbour radius; 0: the grid's cell size */
  float separation;   /**< weights; all three 0: 1.5, 1.0, 1.0 */
  float alignment;
  float cohesion;
  float min_distance; /**< separation acts closer than this; 0: radius/2 */
  float max_speed;    /**< 0: 10 */
} weft_boids_config_t;

/**
 * Registers "weft.boids": for every entity with Position, Velocity and
 * the Boid tag, reads its neighbours within `radius` from @p grid (the
 * snapshot taken at the grid's rebuild, so every boid sees the same
 * state), and sets velocity += dt * (separation + alignment + cohesion
 * steering), clamped to max_speed. The neighbour sums run in key order
 * (weft_grid_item_t.key), so the result does not depend on threads, nor,
 * for keyed neighbours, on handles, rows or chunks: a boid with the same
 * neighbours (same keys and values) gets the same bits in any world.
 * Ghosts are neighbours but are not steered. Neighbours are the
 * grid's items (those its builder's `with` admits) strictly closer than
 * the radius, self excluded; self's own position and velocity are read
 * from its chunk. Register the grid's builder (weft_sys_grid()) first, so
 * that it runs before.
 *
 * Two systems do it, registered in this order: "weft.boids.plan", a task
 * that steers every item of the grid in the grid's cell order (where
 * neighbourhoods are in cache) into scratch the grid keeps, and
 * "weft.boids" (the id *out receives), which copies each boid's planned
 * step, or works the step out itself for a boid the plan holds none for
 * made from its current position and velocity. The results are the same
 * bit for bit either way. The plan skips a grid of more than twice as many
 * items as boids. A plan system left by an earlier registration is
 * replaced. Owner thread, between frames; what it registers lives until
 * removed or the world is destroyed, and @p grid must outlive both
 * systems: removing "weft.boids" leaves "weft.boids.plan" registered (and
 * running), so remove both (weft_system_lookup() by name) before
 * destroying the grid.
 * Returns WEFT_EINVAL (NULL argument, a radius above the grid's cell size
 * or not positive, a negative min_distance or max_speed, a value that is
 * not finite), WEFT_EEXIST ("weft.boids" registered already), or a
 * registration error.
 */
int weft_sys_boids(weft_world_t *world, const weft_std_t *std,
                   weft_grid_t *grid, const weft_boids_config_t *config,
                   weft_system_t *out);

/**
 * One boid's velocity after a step, computed from its neighbours: the
 * kernel of weft_sys_boids(), exposed for tests and custom systems.
 * @p self is the boid; @p nb its @p n neighbours within the radius (self
 * excluded), in key order (any fixed order gives a deterministic result;
 * the system uses ascending weft_grid_item_t.key). With d = self - other:
 * separation sums d / |d|^2 over the neighbours with 0 < |d| < min_distance,
 * alignment is the mean neighbour velocity minus self's, cohesion the mean of
 * (other - self); v' = v + dt * (weighted sum), scaled down to max_speed.
 * Defaults as in weft_boids_config_t, except that a zero radius stays 0
 * here (there is no grid), so a zero min_distance then means none. Any
 * thread.
 */
weft_vec2_t weft_boids_steer(const weft_boids_config_t *config,
                             const weft_grid_item_t *self,
                             const weft_grid_item_t *nb, uint32_t n, float dt);

/* ---- the transform hierarchy --------------------------------------------- */

/**
 * A 2D transform: rotation (c, s) = (cos a, sin a), uniform scale, then
 * translation (x, y); a point p maps to (x, y) + scale * R(a) p. The
 * LocalTransform of an entity is relative to its parent, its
 * WorldTransform to the world. Fields are plain (AoS) floats.
 */
typedef struct weft_transform2_t {
  float x, y;
  float c, s;
  float scale;
} weft_transform2_t;

/** An opaque transform hierarchy: the components, the child-of relation
 * and the propagation plan its system keeps between runs. */
typedef struct weft_hierarchy_t weft_hierarchy_t;

/** Hierarchy settings; zero means default. */
typedef struct weft_hierarchy_config_t {
  weft_phase_t phase; /**< 0: WEFT_PHASE_POST_FIXED_UPDATE */
  /** An exclusive relation (include/weft/relation.h) from child to parent;
   * 0: "weft.ChildOf", registered exclusive, sparse and cascading (or
   * looked up when registered already). */
  weft_component_t child_of;
  uint32_t grain; /**< entities per job within a level; 0: 4096 */
} weft_hierarchy_config_t;

/** The ids a hierarchy works with. */
typedef struct weft_hierarchy_ids_t {
  weft_component_t local;    /**< "weft.LocalTransform", weft_transform2_t */
  weft_component_t world;    /**< "weft.WorldTransform", weft_transform2_t */
  weft_component_t child_of; /**< the relation from child to parent */
} weft_hierarchy_ids_t;

/**
 * Creates a hierarchy for @p world: registers (or looks up) the two
 * transform components and the child-of relation, and a query of the
 * entities that have both transforms. The caller owns it
 * (weft_hierarchy_destroy()) and keeps it alive while its system is
 * registered. Owner thread. WEFT_EINVAL (NULL, @p config's child_of is no
 * exclusive relation), WEFT_ENOCOMP, WEFT_ENOMEM or a registration error.
 */
int weft_hierarchy_create(weft_world_t *world,
                          const weft_hierarchy_config_t *config,
                          weft_hierarchy_t **out);

/** Frees a hierarchy and its query. Owner thread; NULL is a no-op.
 * Destroy it before its world, after removing its system or running
 * no further frame. */
void weft_hierarchy_destroy(weft_hierarchy_t *hierarchy);

/** Copies the ids of @p hierarchy into @p out. Any thread. */
void weft_hierarchy_ids(const weft_hierarchy_t *hierarchy,
                        weft_hierarchy_ids_t *out);

/**
 * Registers "weft.transform": a task on the driving thread that computes
 * every WorldTransform from the LocalTransforms down the child-of edges,
 * parents before children: roots (both transforms, no edge, or a parent
 * without them) copy local to world; each deeper level composes its
 * parent's world with its own local, one level after the other, each
 * level split over the pool in ranges that do not depend on the number of
 * workers, so the result is the same on any number. Entities with a
 * disabled transform, their subtrees, and entities on a cycle of edges
 * are left as they are. The plan (the breadth-first order and the
 * addresses of the transforms) is rebuilt only when
 * weft_world_structure_version() moved, reusing its memory. Owner thread.
 * WEFT_EINVAL (NULL, a hierarchy of another world), WEFT_EEXIST (the
 * hierarchy or the world has the system already) or a registration error.
 */
int weft_sys_transform(weft_world_t *world, weft_hierarchy_t *hierarchy,
                       weft_system_t *out);

/** Runs the propagation now on the calling thread, without the system:
 * the same result. Owner thread, outside frames. 0, WEFT_EINVAL or
 * WEFT_ENOMEM. */
int weft_hierarchy_update(weft_hierarchy_t *hierarchy);

/**
 * The depth levels of the last propagation's plan: the number of levels,
 * and in counts[d] (for d < @p cap) the entities at depth d (roots at
 * 0). 0 before the first propagation. Owner thread; @p counts is the
 * caller's.
 */
uint32_t weft_hierarchy_levels(const weft_hierarchy_t *hierarchy,
                               uint32_t *counts, uint32_t cap);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_BUILTIN_H */
