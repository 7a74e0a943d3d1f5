/* SPDX-License-Identifier: MIT */
/*
 * mpi/scale (weft-bench built with weft::mpi; run it under mpirun, e.g.
 * `mpirun --oversubscribe -n 4 weft-bench --filter mpi/scale`): strong and
 * weak scaling of the particles and the boids of the built-in systems
 * (systems/: weft_sys_integrate, weft_sys_grid, weft_sys_boids), one
 * thread a rank. Unit: milliseconds per tick of the whole simulation.
 *
 *   mpi/scale/<scenario>/strong/<R>r  a fixed total over R ranks
 *   mpi/scale/<scenario>/weak/<R>r    a fixed count per rank: the box
 *                                     grows with the rank count, each
 *                                     region as large as the one-rank box
 *
 * The baseline is one plain world on rank 0 (no driver, no MPI), sampled
 * alternately with the distributed tick in the same run: the same
 * systems over the whole strong total, or over one rank's share for weak
 * scaling. So a strong row's ratio is T(R ranks) / T(1 world), ideally
 * 1/R, and a weak row's T(R ranks, R shares) / T(1 world, one share),
 * ideally 1. (A plain C loop of the same physics would measure weft's
 * systems too, which other rows do; this one measures what distribution
 * adds.) While the baseline runs, the other ranks wait on a non-blocking
 * barrier with sleeps, so they take no CPU from it. On a machine with
 * fewer cores than ranks (the 2-vCPU development VM) the ranks share
 * cores: the rows measure overhead there, not speed-up.
 *
 * Both sides time themselves and report the slowest rank's time, so that
 * every rank calibrates alike and makes the same collective calls (as
 * bench_mpi.c does). Ranks other than 0 print nothing. Outside mpirun the
 * rows are skipped (`mpirun -n 1` gives the one-rank rows: the driver's
 * own cost with no neighbour).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft.h>
#include <weft/mpi.h>

#include "harness.h"
#include "mpi_ranks.h"

#define DT (1.0 / 60.0)
/* The boids' radius, the grid's cell and the halo that covers it. */
#define BOIDS_RADIUS 4.0f

/* One scenario's sizes: the strong total, the weak share per rank, the
 * box side for the strong total (the weak share's box keeps the
 * density), the halo and the initial speed. */
typedef struct scale_scene_t {
  const char *name;
  bool boids;
  uint32_t strong, weak;
  float side, halo, speed;
} scale_scene_t;

static const scale_scene_t scenes[] = {
    /* Particles read nobody: the halo only has to be positive. */
    {"particles", false, 40000, 10000, 1000.0f, 1.0f, 20.0f},
    /* About one boid per 10 units^2, a few neighbours each (as the mpi
     * tests' flock). */
    {"boids", true, 6000, 1500, 245.0f, BOIDS_RADIUS, 5.0f},
};

/* One simulated world: the rank's part (mpi set) or the baseline's. */
typedef struct scale_world_t {
  weft_world_t *w;
  weft_mpi_t *mpi;
  weft_grid_t *grid;
} scale_world_t;

typedef struct scale_state_t {
  scale_world_t dist; /* every rank */
  scale_world_t one;  /* rank 0 only: the plain world */
  int rank;
} scale_state_t;

/* Waits for every rank without spinning: a rank that waits here leaves
 * its core to the one that works. */
static void idle_barrier(void) {
  MPI_Request req;
  int done = 0;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  for (MPI_Test(&req, &done, MPI_STATUS_IGNORE); !done;
       MPI_Test(&req, &done, MPI_STATUS_IGNORE)) {
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
  }
}

static uint64_t scale_dist(void *p, uint64_t reps) {
  scale_state_t *s = p;
  reps = bench_mpi_agreed_reps(reps);
  double t0 = bench_now_ns();
  for (uint64_t r = 0; r < reps; r++)
    bench_check(weft_mpi_step(s->dist.mpi, DT), "weft_mpi_step");
  return bench_mpi_slowest(bench_now_ns() - t0);
}

static uint64_t scale_one(void *p, uint64_t reps) {
  scale_state_t *s = p;
  reps = bench_mpi_agreed_reps(reps);
  idle_barrier();
  double t0 = bench_now_ns(), ns = 0;
  if (s->rank == 0) {
    for (uint64_t r = 0; r < reps; r++)
      bench_check(weft_world_progress(s->one.w, DT), "weft_world_progress");
    ns = bench_now_ns() - t0;
  }
  idle_barrier();
  return bench_mpi_slowest(ns);
}

/* A uniform float in [0, 1) for entity k, draw n. */
static float draw(uint64_t k, uint32_t n) {
  return (float)(weft_random_at(9, k, 0, 3, n) >> 40) * (1.0f / 16777216.0f);
}

/*
 * Builds a world of the scenario over the box [0, sx) x [0, sy) with
 * @p total entities (key = spawn index); @p distributed: the driver is
 * made and this rank keeps the entities it owns.
 */
static void build(scale_world_t *o, const scale_scene_t *sc, uint32_t total,
                  float sx, float sy, bool distributed) {
  memset(o, 0, sizeof *o);
  weft_std_t std;
  weft_component_t key;
  weft_integrate_systems_t is;
  weft_pipeline_config_t pc = {.fixed_dt = DT, .time_inline = true};
  weft_integrate_config_t ic = {.min = {0, 0}, .max = {sx, sy}};
  if (sc->boids) {
    ic.mode = WEFT_BOUNDS_WRAP;
  } else {
    ic.gravity = (weft_vec2_t){0.0f, -9.81f};
    ic.damping = 0.01f;
    ic.mode = WEFT_BOUNDS_BOUNCE;
  }
  bench_check(weft_world_create(NULL, &o->w), "weft_world_create");
  bench_check(weft_std_register(o->w, &std), "weft_std_register");
  bench_check(weft_pipeline_configure(o->w, &pc), "weft_pipeline_configure");
  bench_check(weft_sys_integrate(o->w, &std, &ic, &is), "weft_sys_integrate");
  if (sc->boids) {
    weft_grid_config_t gc = {
        .cell = BOIDS_RADIUS, .min = ic.min, .max = ic.max};
    weft_boids_config_t bc = {.radius = BOIDS_RADIUS, .max_speed = 10.0f};
    weft_system_t id;
    bench_check(weft_grid_create(o->w, &gc, &o->grid), "weft_grid_create");
    bench_check(weft_sys_grid(o->w, &std, o->grid, std.boid, 0, &id),
                "weft_sys_grid");
    bench_check(weft_sys_boids(o->w, &std, o->grid, &bc, &id),
                "weft_sys_boids");
  }
  if (distributed) {
    weft_mpi_config_t mc = {.min = ic.min,
                            .max = ic.max,
                            .halo = sc->halo,
                            .ghost_components = {std.velocity, std.boid},
                            .ghost_count = 2};
    if (sc->boids) {
      /* Between the move and the grid, the grid's readers named
       * (docs/mpi.md, "boids"). */
      mc.exchange_after[0] = "weft.bounds";
      mc.exchange_before[0] = "weft.grid.build";
      mc.exchange_before[1] = "weft.boids.plan";
      mc.exchange_before[2] = "weft.boids";
    }
    bench_check(weft_mpi_new(o->w, MPI_COMM_WORLD, &mc, &o->mpi),
                "weft_mpi_new");
  }
  /* weft_std_register() has "weft.Key": the plain world's boids order by
   * it as the distributed ones do. */
  bench_check(weft_component_lookup(o->w, "weft.Key", &key), "weft.Key");
  uint32_t me = o->mpi ? weft_mpi_rank(o->mpi) : 0;
  for (uint64_t k = 0; k < total; k++) {
    weft_vec2_t p = {draw(k, 0) * sx, draw(k, 1) * sy};
    if (o->mpi && weft_mpi_owner(o->mpi, p.x, p.y) != me)
      continue;
    weft_vec2_t v = {(draw(k, 2) * 2 - 1) * sc->speed,
                     (draw(k, 3) * 2 - 1) * sc->speed};
    weft_entity_t e;
    bench_check(
        weft_spawn_with(o->w,
                        (weft_component_t[]){std.position, std.velocity, key,
                                             sc->boids ? std.boid : 0, 0},
                        (const void *[]){&p, &v, &k}, &e),
        "spawn");
  }
  if (o->mpi) /* the ghosts, before the timed ticks */
    bench_check(weft_mpi_exchange(o->mpi), "weft_mpi_exchange");
}

static void drop(scale_world_t *o) {
  weft_mpi_free(o->mpi);
  weft_grid_destroy(o->grid);
  weft_world_destroy(o->w);
}

static void row_name(char *out, size_t cap, const scale_scene_t *sc, bool weak,
                     int ranks) {
  snprintf(out, cap, "mpi/scale/%s/%s/%dr", sc->name, weak ? "weak" : "strong",
           ranks);
}

/* One row: a scenario, strong or weak, at this run's rank count. */
static void run_row(bench_ctx_t *ctx, const scale_scene_t *sc, bool weak,
                    int ranks, int rank) {
  char row[64], base[48];
  row_name(row, sizeof row, sc, weak, ranks);
  uint32_t px = 1, py = 1;
  bench_check(weft_mpi_grid((uint32_t)ranks, &px, &py), "weft_mpi_grid");
  /* Weak: every region as large as the one-rank box, so the density
   * stays; strong: the one box, cut in R. */
  uint32_t share = weak ? sc->weak : sc->strong;
  float one_side =
      weak ? sc->side * sqrtf((float)sc->weak / (float)sc->strong) : sc->side;
  scale_state_t s = {.rank = rank};
  build(&s.dist, sc, weak ? share * (uint32_t)ranks : share,
        weak ? one_side * (float)px : one_side,
        weak ? one_side * (float)py : one_side, true);
  if (rank == 0)
    build(&s.one, sc, share, one_side, one_side, false);
  snprintf(base, sizeof base, "1 world, %u entities", share);
  bench_case_t c = {
      .name = row,
      .unit = "ms/tick",
      .n = weak ? (uint64_t)share * (uint64_t)ranks : share,
      .work = {"weft_mpi_step", scale_dist, &s, 1e6, true},
      .base = {base, scale_one, &s, 1e6, true},
  };
  bench_compare(ctx, &c);
  drop(&s.dist);
  if (rank == 0)
    drop(&s.one);
}

void bench_mpi_scale(bench_ctx_t *ctx) {
  /* The rank count names the rows; mpirun tells it before MPI starts, so
   * that --list needs no MPI. */
  const char *env = getenv("OMPI_COMM_WORLD_SIZE");
  env = env ? env : getenv("PMI_SIZE");
  int ranks = env ? atoi(env) : 1;
  ranks = ranks > 0 ? ranks : 1;
  enum { ROWS = 2 * sizeof scenes / sizeof scenes[0] };
  bool want[ROWS], any = false;
  for (size_t i = 0; i < ROWS; i++) {
    char row[64];
    row_name(row, sizeof row, &scenes[i / 2], i % 2, ranks);
    want[i] = bench_selected(ctx, row);
    any = any || want[i];
  }
  if (!any)
    return;
  if (!env && !getenv("PMIX_RANK")) {
    fprintf(stderr, "mpi/scale/*: skipped (run weft-bench under mpirun -n "
                    "1 to 4)\n");
    return;
  }
  bench_mpi_start();
  int size = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (size_t i = 0; i < ROWS; i++)
    if (want[i])
      run_row(ctx, &scenes[i / 2], i % 2, size, rank);
}
