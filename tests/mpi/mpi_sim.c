/* SPDX-License-Identifier: MIT */
/*
 * The distributed test program (tests/mpi/run_mpi.cmake runs it under
 * mpirun at several rank and thread counts and compares what it prints).
 *
 *   mpi_sim SCENARIO ENTITIES TICKS THREADS SEED [save:PREFIX|load:PREFIX]
 *
 * Every rank builds the same world description and spawns, from
 * counter-based draws by spawn index, only the entities whose position it
 * owns (weft.Key = the index), then runs TICKS distributed ticks and
 * prints its count and the global digest:
 *
 *   rank R local N
 *   digest 0x... entities N        (rank 0 only)
 *
 * save:PREFIX writes a distributed checkpoint after the ticks
 * (weft_mpi_checkpoint()); load:PREFIX starts from one instead of
 * spawning (weft_mpi_restore(), any rank count).
 *
 * Scenarios:
 *   particles  gravity, damping, bouncing walls (weft_sys_integrate)
 *   cross      velocities of one to two regions per tick: entities cross
 *              boundaries (and skip regions) every tick
 *   empty      everything drifts to the left wall (clamped): the regions
 *              on the right empty out; their ranks print local 0
 *   neighbours particles plus a system of this program that reads the
 *              neighbours within a radius (ghosts included) in key order
 *   dying      neighbours, and every entity dies after a lifetime drawn
 *              from its index (weft_sys_lifetime): the ghosts of the dead
 *              must go, or the neighbour sums differ
 *   crowd      particles that all start in the left quarter of the box,
 *              rebalanced every 5 ticks (weft_mpi_rebalance): the same
 *              digest, and the ranks share the entities ("imbalance X",
 *              the largest rank's count over the mean, on rank 0)
 *   costly     particles rebalanced every 5 ticks by cost
 *              (WEFT_MPI_BALANCE_TIME) with injected costs: rank 0's
 *              entities cost 8 times the others'; prints "share S even
 *              E", rank 0's share of the box against 1 / ranks (the
 *              cuts must have moved away from the costly rank), and the
 *              digest must still be the one-rank run's
 *   drawn      particles kicked every tick by counter-based draws keyed
 *              by the world seed, the key and the pipeline's tick, and by
 *              a wind that a named stream moves each tick and a resource
 *              keeps: with load:, the restart takes the seed, the stream,
 *              the resource and the clock from the checkpoint (the
 *              program seeds the world only when it spawns)
 *   steady     particles fast enough to migrate often: the last 40
 *              ticks must allocate nothing (the world's counters
 *              and this thread's jemalloc counter); prints
 *              "rank R steady allocs A bytes B" and fails otherwise
 *   boids      the built-in flock (weft_sys_grid, weft_sys_boids) in a
 *              wrapping box, crowded enough that every boid near a cut
 *              has neighbours across it; the exchange runs inside the
 *              tick, between "weft.bounds" and the grid's rebuild, so
 *              that ghosts enter the grid moved, as owned boids do
 *   boidsteady boids, and the last 40 ticks must allocate nothing, as in
 *              steady
 *   boidsfail  boids, and a PreUpdate system fails on the last rank at
 *              its fourth run, so that rank's tick ends before the
 *              in-tick exchange: every rank returns an error from the
 *              same step (prints "error: ...") instead of waiting in the
 *              exchange
 *   crossfail  cross with the exchange inside the tick (after
 *              "weft.bounds"), and the failing PreUpdate system of
 *              boidsfail: the other ranks fail in a round where ranks
 *              send outside their 3 x 3 block (the far round)
 *   boidsoverlap boids with the exchange split (exchange_overlap): the
 *              system "test.work" counts, in a component of its own that
 *              migrants carry, while the ghosts fly; a migrant encoded
 *              before it ran would arrive a count behind
 *   boidsoverlapsteady that, and the last 40 ticks allocate nothing
 * Every rank also checks that its pool's workers are placed on CPUs the
 * rank is bound to (mpirun --bind-to, a batch scheduler's binding): the
 * pool plans within the process's CPU set.
 *
 *   failtick   the last rank's tick fails at its fourth step: every rank
 *              returns that error from the same weft_mpi_step() and
 *              prints it ("error: ...")
 *   badhalo    a halo wider than a region: every rank prints the error
 *              ("error: ...") and exits 0 when weft_mpi_new() refused it
 *   differ     rank 1's halo differs from the others': the same
 *   layout     rank 1 registers one more component than the others (its
 *              migrant records would not mean the same): the same
 */
#define _GNU_SOURCE 1 /* sched_getaffinity() */
#include <math.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft.h>
#include <weft/mpi.h>

#include "core/alloc.h" /* weft__alloc_thread_counter() */

#define DT (1.0 / 60.0)

typedef struct args_t {
  const char *scenario;
  uint32_t entities, ticks, threads;
  uint64_t seed;
  const char *save, *load; /* checkpoint prefixes, or NULL */
} args_t;

/* A uniform float in [0, 1) for spawn index i, draw n. */
static float draw(uint64_t seed, uint64_t i, uint32_t n) {
  return (float)(weft_random_at(seed, i, 0, 7, n) >> 40) * (1.0f / 16777216.0f);
}

/* ---- the neighbour-reading system ------------------------------------- */

typedef struct near_t {
  uint64_t key;
  float x, y;
  weft_vec2_t v;
  weft_entity_t e;
  bool owned, hot;
} near_t;

typedef struct neigh_t {
  weft_std_t std;
  weft_component_t key, ghost, hot;
  float side;
  weft_query_t *all;
  near_t *items;
  uint32_t cap;
  float radius;
} neigh_t;

static int by_key(const void *a, const void *b) {
  uint64_t x = ((const near_t *)a)->key, y = ((const near_t *)b)->key;
  return x < y ? -1 : x > y;
}

/* Every owned entity is pushed away from its neighbours within the
 * radius (twice as hard by "hot" ones) and nudged along their velocity,
 * summed in key order, from the state at the start of the tick (ghosts
 * included: position, velocity and the hot tag cross the boundary). Then
 * the owned entities right of the middle become hot and the others stop
 * being (ghosts see the tag come and go), and the integration runs. */
static int neighbour_tick(void *user, weft_world_t *w, double dt) {
  neigh_t *n = user;
  uint32_t count = 0;
  weft_iter_t it;
  for (weft_query_iter(n->all, &it); weft_iter_next(&it);) {
    const uint64_t *keys = it.columns[0];
    const float *px = weft_iter_field(&it, 1, 0);
    const float *py = weft_iter_field(&it, 1, 1);
    for (uint32_t i = 0; i < it.count; i++) {
      if (count == n->cap) {
        n->cap = n->cap ? n->cap * 2 : 1024;
        n->items = realloc(n->items, sizeof *n->items * n->cap);
        if (!n->items)
          abort();
      }
      near_t *o = &n->items[count++];
      *o = (near_t){.key = keys[i],
                    .x = px[i],
                    .y = py[i],
                    .e = it.entities[i],
                    .owned = !weft_has(w, it.entities[i], n->ghost),
                    .hot = weft_has(w, it.entities[i], n->hot)};
      if (weft_read(w, o->e, n->std.velocity, &o->v))
        return WEFT_EINVAL;
    }
  }
  qsort(n->items, count, sizeof *n->items, by_key);
  float r2 = n->radius * n->radius;
  for (uint32_t i = 0; i < count; i++) {
    if (!n->items[i].owned)
      continue;
    float fx = 0, fy = 0;
    for (uint32_t j = 0; j < count; j++) {
      float dx = n->items[i].x - n->items[j].x;
      float dy = n->items[i].y - n->items[j].y;
      float d2 = dx * dx + dy * dy;
      if (j != i && d2 < r2) {
        float k = n->items[j].hot ? 2.0f : 1.0f;
        fx += k * dx / (d2 + 1.0f) + 0.002f * n->items[j].v.x;
        fy += k * dy / (d2 + 1.0f) + 0.002f * n->items[j].v.y;
      }
    }
    weft_vec2_t v = n->items[i].v;
    v.x += fx * 40.0f;
    v.y += fy * 40.0f;
    int rc = weft_set(w, n->items[i].e, n->std.velocity, &v);
    if (rc)
      return rc;
  }
  for (uint32_t i = 0; i < count; i++) {
    if (!n->items[i].owned)
      continue;
    int rc = n->items[i].x > n->side * 0.5f
                 ? weft_add(w, n->items[i].e, n->hot, NULL)
                 : weft_remove(w, n->items[i].e, n->hot);
    if (rc)
      return rc;
  }
  return weft_world_progress(w, dt);
}

/* ---- costs and draws (costly, drawn) --------------------------------- */

/* costly: rank 0's entities cost 8 times the others'. */
static double injected_cost(void *user, const weft_mpi_t *mpi, double cpu_s,
                            uint64_t owned) {
  (void)user;
  (void)cpu_s;
  return (double)owned * (weft_mpi_rank(mpi) == 0 ? 8.0 : 1.0);
}

typedef struct drawn_t {
  weft_component_t velocity, key, ghost;
  weft_query_t *owned;
  weft_resource_t wind; /* a weft_vec2_t */
  weft_rng_t *gust;     /* the stream "test.gust" */
} drawn_t;

/* drawn: the wind moves by the stream's draw (the same on every rank:
 * one draw a tick), and every owned entity gets it plus a kick drawn from
 * (world seed, key, tick); then the tick. */
static int drawn_tick(void *user, weft_world_t *w, double dt) {
  drawn_t *d = user;
  weft_vec2_t *wind = weft_resource_get(w, d->wind);
  wind->x += (float)weft_rng_uniform(d->gust, -1.0, 1.0);
  wind->y += (float)weft_rng_uniform(d->gust, -1.0, 1.0);
  weft_pipeline_state_t st;
  weft_pipeline_state(w, &st);
  uint64_t seed = weft_random_world_seed(w);
  weft_iter_t it;
  for (weft_query_iter(d->owned, &it); weft_iter_next(&it);) {
    const uint64_t *keys = it.columns[0];
    float *vx = weft_iter_field(&it, 1, 0), *vy = weft_iter_field(&it, 1, 1);
    for (uint32_t i = 0; i < it.count; i++) {
      uint64_t r = weft_random_at(seed, keys[i], st.tick, 11, 0);
      vx[i] += wind->x + (float)((r & 0xffff) / 65536.0 - 0.5) * 4.0f;
      vy[i] += wind->y + (float)((r >> 16 & 0xffff) / 65536.0 - 0.5) * 4.0f;
    }
  }
  return weft_world_progress(w, dt);
}

/* The last rank's tick fails at its fourth tick (failtick). */
static int failing_tick(void *user, weft_world_t *w, double dt) {
  (void)user;
  static int ticks;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank == size - 1 && ++ticks == 4)
    return weft_world_fail(w, WEFT_ESYSTEM, "test: the tick failed here");
  return weft_world_progress(w, dt);
}

/* "test.fail": fails on the last rank at its fourth run (boidsfail). */
static int failing_system(weft_sysctx_t *ctx, const weft_iter_t *none) {
  (void)none;
  int *runs = ctx->user, rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank == size - 1 && ++*runs == 4)
    return weft_world_fail(ctx->world, WEFT_ESYSTEM,
                           "test: the tick failed here");
  return 0;
}

/* Registers "test.fail" in PreUpdate: its failure ends the frame before
 * the fixed steps, so the failing rank never reaches the exchange. (A
 * failure in the exchange's own phase would not keep it from running.) */
static int add_failing(weft_world_t *w, int *runs) {
  weft_system_desc_t d = {.name = "test.fail",
                          .phase = WEFT_PHASE_PRE_UPDATE,
                          .run = failing_system,
                          .user = runs};
  weft_system_t id;
  return weft_system_register(w, &d, &id);
}

/* ---- the overlap's work (boidsoverlap) -------------------------------- */

/* "test.work": every owned entity's count goes up by one a tick. */
static int work_run(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)ctx;
  uint32_t *n = it->columns[0];
  for (uint32_t i = 0; i < it->count; i++)
    n[i] = n[i] * 3u + 1u;
  return 0;
}

/* Registers "test.Work" and "test.work" over the owned entities (the
 * ghost tag excluded, registered here first if need be). */
static int add_work(weft_world_t *w, weft_component_t *work) {
  weft_component_desc_t d = {.name = "test.Work", .size = 4, .alignment = 4};
  weft_component_desc_t g = {.name = "weft.Ghost"};
  weft_component_t ghost;
  int rc = weft_component_register(w, &d, work);
  if (!rc && weft_component_lookup(w, g.name, &ghost) != 0)
    rc = weft_component_register(w, &g, &ghost);
  weft_system_desc_t s = {.name = "test.work",
                          .query = {.include = {*work}, .exclude = {ghost}},
                          .run = work_run};
  weft_system_t id;
  return rc ? rc : weft_system_register(w, &s, &id);
}

/* ---- building the world ---------------------------------------------- */

typedef struct scene_t {
  float side, speed, halo;
  bool neighbours, dying, crowd, boids, steady, fail_early, overlap, costly,
      drawn;
  weft_integrate_config_t ic;
} scene_t;

/* The boids' radius (and the grid's cell): the halo must cover it. */
#define BOIDS_RADIUS 4.0f

static int scene_for(const char *name, scene_t *s) {
  memset(s, 0, sizeof *s);
  s->side = 1000.0f;
  s->speed = 20.0f;
  s->halo = 10.0f;
  s->ic = (weft_integrate_config_t){
      .gravity = {0.0f, -9.81f}, .damping = 0.01f, .mode = WEFT_BOUNDS_BOUNCE};
  if (strcmp(name, "cross") == 0) {
    s->side = 400.0f;
    s->speed = 12000.0f; /* up to 200 units a tick, regions of 100+ */
    s->ic.gravity = (weft_vec2_t){0, 0};
  } else if (strcmp(name, "crossfail") == 0) {
    s->side = 400.0f;
    s->speed = 12000.0f;
    s->ic.gravity = (weft_vec2_t){0, 0};
    s->fail_early = true;
  } else if (strncmp(name, "boidsoverlap", 12) == 0) {
    s->side = 120.0f;
    s->speed = 5.0f;
    s->halo = BOIDS_RADIUS;
    s->boids = s->overlap = true;
    s->steady = strcmp(name, "boidsoverlapsteady") == 0;
  } else if (strcmp(name, "failtick") == 0) {
  } else if (strcmp(name, "crowd") == 0) {
    s->crowd = true;
  } else if (strcmp(name, "costly") == 0) {
    s->costly = true;
  } else if (strcmp(name, "drawn") == 0) {
    s->drawn = true;
  } else if (strcmp(name, "steady") == 0) {
    s->side = 400.0f;
    s->speed = 300.0f;
    s->steady = true;
  } else if (strcmp(name, "boids") == 0 || strcmp(name, "boidsteady") == 0) {
    /* About one boid per 10 units^2 for the 1,500 of the test: a few
     * neighbours each within the radius. */
    s->side = 120.0f;
    s->speed = 5.0f;
    s->halo = BOIDS_RADIUS;
    s->boids = true;
    s->steady = strcmp(name, "boidsteady") == 0;
  } else if (strcmp(name, "boidsfail") == 0) {
    s->side = 120.0f;
    s->speed = 5.0f;
    s->halo = BOIDS_RADIUS;
    s->boids = s->fail_early = true;
    s->ic = (weft_integrate_config_t){.mode = WEFT_BOUNDS_WRAP};
  } else if (strcmp(name, "empty") == 0) {
    s->side = 400.0f;
    s->speed = 0.0f;
    s->ic.gravity = (weft_vec2_t){-4000.0f, 0.0f};
    s->ic.mode = WEFT_BOUNDS_CLAMP;
  } else if (strcmp(name, "neighbours") == 0 || strcmp(name, "dying") == 0) {
    s->side = 200.0f;
    s->halo = 8.0f;
    s->neighbours = true;
    s->dying = strcmp(name, "dying") == 0;
  } else if (strcmp(name, "badhalo") == 0) {
    s->halo = s->side; /* no region is wider than the box */
  } else if (strcmp(name, "differ") == 0 || strcmp(name, "layout") == 0) {
    s->halo = 10.0f;
  } else if (strcmp(name, "particles") != 0) {
    return -1;
  }
  s->ic.min = (weft_vec2_t){0, 0};
  s->ic.max = (weft_vec2_t){s->side, s->side};
  return 0;
}

static int spawn_owned(weft_world_t *w, weft_mpi_t *mpi, const weft_std_t *std,
                       weft_component_t key, weft_component_t work,
                       const args_t *a, const scene_t *s) {
  uint32_t me = weft_mpi_rank(mpi);
  for (uint64_t i = 0; i < a->entities; i++) {
    weft_vec2_t p = {draw(a->seed, i, 0) * s->side * (s->crowd ? 0.25f : 1),
                     draw(a->seed, i, 1) * s->side};
    if (weft_mpi_owner(mpi, p.x, p.y) != me)
      continue;
    weft_vec2_t v = {(draw(a->seed, i, 2) * 2 - 1) * s->speed,
                     (draw(a->seed, i, 3) * 2 - 1) * s->speed};
    uint64_t k = i;
    weft_lifetime_t life = {0.1f + draw(a->seed, i, 4) * 0.6f};
    weft_entity_t e;
    weft_component_t extra = s->dying   ? std->lifetime
                             : s->boids ? std->boid
                                        : 0;
    uint32_t count = (uint32_t)i;
    int rc = weft_spawn_with(
        w,
        (weft_component_t[]){std->position, std->velocity, key, extra,
                             extra ? work : 0, 0},
        (const void *[]){&p, &v, &k, s->dying ? &life : NULL, &count}, &e);
    if (rc)
      return rc;
  }
  return 0;
}

/* The flock's systems, registered after the integration as weft-sim's
 * boids are: its grid is rebuilt after the move. */
static int add_boids(weft_world_t *w, const weft_std_t *std, const scene_t *s,
                     weft_grid_t **grid) {
  weft_grid_config_t gc = {
      .cell = BOIDS_RADIUS, .min = s->ic.min, .max = s->ic.max};
  weft_boids_config_t bc = {.radius = BOIDS_RADIUS, .max_speed = 10.0f};
  weft_system_t id;
  int rc = weft_grid_create(w, &gc, grid);
  if (!rc)
    rc = weft_sys_grid(w, std, *grid, std->boid, 0, &id);
  if (!rc)
    rc = weft_sys_boids(w, std, *grid, &bc, &id);
  return rc;
}

static int parse(int argc, char **argv, args_t *a) {
  if (argc != 6 && argc != 7)
    return -1;
  a->save = a->load = NULL;
  if (argc == 7 && strncmp(argv[6], "save:", 5) == 0)
    a->save = argv[6] + 5;
  else if (argc == 7 && strncmp(argv[6], "load:", 5) == 0)
    a->load = argv[6] + 5;
  else if (argc == 7)
    return -1;
  a->scenario = argv[1];
  a->entities = (uint32_t)strtoul(argv[2], NULL, 10);
  a->ticks = (uint32_t)strtoul(argv[3], NULL, 10);
  a->threads = (uint32_t)strtoul(argv[4], NULL, 10);
  a->seed = strtoull(argv[5], NULL, 10);
  return 0;
}

/* Creates the driver; for the refused scenarios prints the verdict. */
static int make_driver(weft_world_t *w, const args_t *a, const scene_t *s,
                       weft_mpi_config_t *mc, neigh_t *n, drawn_t *dr,
                       weft_mpi_t **out) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  mc->min = s->ic.min;
  mc->max = s->ic.max;
  mc->halo = s->halo;
  mc->balance_every = s->crowd || s->costly ? 5 : 0;
  if (s->costly) {
    mc->balance_by = WEFT_MPI_BALANCE_TIME;
    mc->cost = injected_cost;
  }
  if (s->drawn) {
    mc->tick = drawn_tick;
    mc->tick_user = dr;
  }
  if (strcmp(a->scenario, "differ") == 0 && rank == 1)
    mc->halo = s->halo * 2;
  int layout = strcmp(a->scenario, "layout") == 0;
  if (layout && rank == 1) {
    weft_component_desc_t d = {.name = "test.Extra", .size = 4};
    weft_component_t extra;
    weft_component_register(w, &d, &extra);
  }
  if (s->neighbours) {
    n->radius = s->halo;
    n->side = s->side;
    weft_component_desc_t d = {.name = "test.Hot"};
    if (weft_component_register(w, &d, &n->hot) != 0)
      return 2;
    mc->ghost_components[0] = n->std.velocity;
    mc->ghost_components[1] = n->hot;
    mc->ghost_count = 2;
    mc->tick = neighbour_tick;
    mc->tick_user = n;
  }
  if (s->boids) {
    /* Inside the tick, after the move and before everything that reads
     * the grid (docs/mpi.md, "boids"). */
    mc->ghost_components[0] = n->std.velocity;
    mc->ghost_components[1] = n->std.boid;
    mc->ghost_count = 2;
    mc->exchange_after[0] = "weft.bounds";
    mc->exchange_before[0] = "weft.grid.build";
    mc->exchange_before[1] = "weft.boids.plan";
    mc->exchange_before[2] = "weft.boids";
    if (s->overlap)
      mc->exchange_overlap[0] = "test.work";
  } else if (s->fail_early) {
    mc->exchange_after[0] = "weft.bounds";
  }
  if (strcmp(a->scenario, "failtick") == 0)
    mc->tick = failing_tick;
  int rc = weft_mpi_new(w, MPI_COMM_WORLD, mc, out);
  int refused = strcmp(a->scenario, "badhalo") == 0 ||
                ((strcmp(a->scenario, "differ") == 0 || layout) && size > 1);
  if (refused) {
    printf("rank %d error: %s\n", rank, rc ? weft_world_last_error(w) : "none");
    weft_mpi_free(*out);
    return rc ? 1 : 2; /* 1: refused as expected, stop with status 0 */
  }
  if (rc)
    fprintf(stderr, "rank %d: weft_mpi_new: %s\n", rank,
            weft_world_last_error(w));
  return rc ? 2 : 0;
}

/* Runs @p ticks more and checks that they allocated nothing: 0, a
 * WEFT_E* code from a step, or 1 when they allocated. */
static int run_steady(weft_world_t *w, weft_mpi_t *mpi, uint32_t ticks) {
  weft_world_stats_t s0, s1;
  weft_world_stats(w, &s0);
  const uint64_t *counter = weft__alloc_thread_counter();
  uint64_t b0 = counter ? *counter : 0;
  int rc = 0;
  for (uint32_t t = 0; t < ticks && !rc; t++)
    rc = weft_mpi_step(mpi, DT);
  weft_world_stats(w, &s1);
  uint64_t allocs = s1.allocs - s0.allocs;
  uint64_t bytes = counter ? *counter - b0 : 0;
  printf("rank %u steady allocs %llu bytes %llu\n", weft_mpi_rank(mpi),
         (unsigned long long)allocs, (unsigned long long)bytes);
  return rc ? rc : allocs || bytes ? 1 : 0;
}

static int run(weft_world_t *w, const args_t *a) {
  scene_t s;
  if (scene_for(a->scenario, &s)) {
    fprintf(stderr, "mpi_sim: unknown scenario %s\n", a->scenario);
    return 2;
  }
  weft_std_t std;
  weft_integrate_systems_t is;
  weft_pipeline_config_t pc = {.fixed_dt = DT, .time_inline = true};
  int rc = weft_std_register(w, &std);
  if (!rc)
    rc = weft_pipeline_configure(w, &pc);
  if (!rc)
    rc = weft_sys_integrate(w, &std, &s.ic, &is);
  weft_system_t life;
  if (!rc && s.dying)
    rc = weft_sys_lifetime(w, &std, WEFT_PHASE_FIXED_UPDATE, &life);
  weft_grid_t *grid = NULL;
  if (!rc && s.boids)
    rc = add_boids(w, &std, &s, &grid);
  weft_component_t work = 0;
  if (!rc && s.overlap)
    rc = add_work(w, &work);
  if (rc) {
    fprintf(stderr, "setup: %s\n", weft_world_last_error(w));
    weft_grid_destroy(grid);
    return 2;
  }
  weft_mpi_config_t mc = {0};
  neigh_t n = {.std = std};
  drawn_t dr = {.velocity = std.velocity};
  weft_vec2_t calm = {0, 0};
  if (s.drawn && (weft_resource_register(w, "test.Wind", sizeof calm, 4, &calm,
                                         &dr.wind) ||
                  weft_random_stream(w, "test.gust", &dr.gust))) {
    fprintf(stderr, "setup: %s\n", weft_world_last_error(w));
    return 2;
  }
  weft_mpi_t *mpi = NULL;
  int v = make_driver(w, a, &s, &mc, &n, &dr, &mpi);
  if (v) {
    weft_grid_destroy(grid);
    return v == 1 ? 0 : 2;
  }
  int fail_runs = 0;
  if (s.fail_early && add_failing(w, &fail_runs)) {
    fprintf(stderr, "setup: %s\n", weft_world_last_error(w));
    weft_mpi_free(mpi);
    weft_grid_destroy(grid);
    return 2;
  }
  weft_component_lookup(w, "weft.Key", &n.key);
  weft_component_lookup(w, "weft.Ghost", &n.ghost);
  weft_query_desc_t q = {.include = {n.key, std.position}};
  rc = weft_query_create(w, &q, &n.all);
  weft_query_desc_t dq = {.include = {n.key, std.velocity},
                          .exclude = {n.ghost}};
  if (!rc && s.drawn)
    rc = weft_query_create(w, &dq, &dr.owned);
  /* A fresh run seeds the world; a restart must get the seed (and the
   * clock, the stream, the wind) from the checkpoint. */
  if (!rc && !a->load)
    weft_random_seed(w, a->seed * 977 + 1);
  if (!rc && a->load) {
    rc = weft_mpi_restore(mpi, a->load);
    if (rc) /* every rank the same error (run_mpi.cmake, damaged) */
      printf("rank %u error: %s\n", weft_mpi_rank(mpi),
             weft_world_last_error(w));
  } else if (!rc) {
    rc = spawn_owned(w, mpi, &std, n.key, work, a, &s);
  }
  int steady = s.steady;
  uint32_t measured = a->ticks < 40 ? a->ticks : 40;
  uint32_t half = steady ? a->ticks - measured : a->ticks;
  for (uint32_t t = 0; t < half && !rc; t++)
    rc = weft_mpi_step(mpi, DT);
  if (strcmp(a->scenario, "failtick") == 0 || s.fail_early) {
    /* Every rank stops at the same step with the same error. */
    printf("rank %u error: %s\n", weft_mpi_rank(mpi),
           rc ? weft_world_last_error(w) : "none");
    free(n.items);
    weft_mpi_free(mpi);
    weft_grid_destroy(grid);
    return rc == WEFT_ESYSTEM ? 0 : 1;
  }
  /* An allocation fails this rank only after the collective calls
   * below, which every rank must still make. */
  int allocated = 0;
  if (steady && !rc) {
    rc = run_steady(w, mpi, a->ticks - half);
    allocated = rc == 1;
    rc = rc == 1 ? 0 : rc;
  }
  if (!rc && a->save)
    rc = weft_mpi_checkpoint(mpi, a->save);
  /* The final positions decide ownership: one more exchange. */
  if (!rc)
    rc = weft_mpi_exchange(mpi);
  weft_mpi_digest_t d;
  int drc = weft_mpi_digest(mpi, &d);
  weft_mpi_stats_t st;
  weft_mpi_stats(mpi, &st);
  if (rc || drc) {
    fprintf(stderr, "rank %u: %s\n", weft_mpi_rank(mpi),
            weft_world_last_error(w));
  } else {
    printf("rank %u local %llu emigrants %llu ghosts %llu far %llu\n",
           weft_mpi_rank(mpi), (unsigned long long)d.local,
           (unsigned long long)st.emigrants, (unsigned long long)st.ghosts,
           (unsigned long long)st.far_rounds);
    uint64_t most = 0;
    MPI_Allreduce(&d.local, &most, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    if (weft_mpi_rank(mpi) == 0)
      printf("digest 0x%016llx entities %llu\nimbalance %.2f\n",
             (unsigned long long)d.digest, (unsigned long long)d.entities,
             d.entities ? (double)most * weft_mpi_size(mpi) / d.entities : 1.0);
  }
  if (!rc && !drc && s.costly) {
    weft_vec2_t lo, hi;
    weft_mpi_region(mpi, 0, &lo, &hi);
    if (weft_mpi_rank(mpi) == 0) {
      double share =
          (double)(hi.x - lo.x) * (hi.y - lo.y) / ((double)s.side * s.side);
      printf("share %.4f even %.4f of it %.3f\n", share,
             1.0 / weft_mpi_size(mpi), share * weft_mpi_size(mpi));
    }
  }
  free(n.items);
  if (dr.owned)
    weft_query_destroy(dr.owned);
  weft_mpi_free(mpi);
  weft_grid_destroy(grid);
  return rc || drc || allocated ? 1 : 0;
}

/* 0 when every worker of the pool is placed on a CPU of this process's
 * affinity mask; otherwise prints the first that is not and returns 1. */
static int check_binding(const weft_pool_t *pool) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return 0; /* nothing to check against */
  const weft_plan_t *plan = weft_pool_plan(pool);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (uint32_t w = 0; plan && w < weft_plan_workers(plan); w++) {
    const weft_pu_info_t *pu = weft_plan_place(plan, w);
    if (pu && !CPU_ISSET(pu->os_pu, &set)) {
      printf("rank %d: worker %u is placed on CPU %u, outside the rank's "
             "binding (%d CPUs)\n",
             rank, w, pu->os_pu, CPU_COUNT(&set));
      return 1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  args_t a;
  if (parse(argc, argv, &a)) {
    fprintf(stderr, "usage: mpi_sim SCENARIO ENTITIES TICKS THREADS SEED "
                    "[save:PREFIX|load:PREFIX]\n");
    MPI_Finalize();
    return 2;
  }
  weft_pool_t *pool = NULL;
  weft_pool_config_t pc = {0};
  pc.placement.workers = a.threads;
  pc.placement.caller_participates = true;
  int rc = weft_pool_create(&pc, &pool);
  weft_world_t *w = NULL;
  if (!rc)
    rc = weft_world_create(&(weft_world_config_t){.pool = pool}, &w);
  int unbound = rc ? 0 : check_binding(pool);
  int out = rc ? 2 : run(w, &a);
  out = out ? out : unbound;
  weft_world_destroy(w);
  weft_pool_destroy(pool);
  fflush(stdout);
  MPI_Finalize();
  return out;
}
