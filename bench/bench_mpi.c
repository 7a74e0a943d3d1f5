/* SPDX-License-Identifier: MIT */
/*
 * mpi/halo (weft-bench built with weft::mpi; run it under mpirun, e.g.
 * `mpirun -n 2 weft-bench --filter mpi/`): one weft_mpi_exchange() of a
 * steady world against a raw MPI exchange of the same bytes, in the same
 * run. mpi/migrate: the same world, but before each exchange a pass moves
 * every owned entity one region width right (wrapping round the box), so
 * that every entity migrates: nanoseconds per migrant (encode, messages,
 * despawn, decode and spawn, and the pass), against the raw exchange of
 * the same bytes; no target yet.
 *
 * Every rank owns 20,000 entities (Position, Velocity, weft.Key) spread
 * evenly over its region of a 1000 x 1000 box, still, with a halo of 25:
 * each exchange finds no migrant and refreshes the same ghosts (Position
 * and Velocity) on the neighbours. The baseline does the communication
 * the exchange does, and nothing else: to each neighbour of the 3 x 3
 * block one message of the ghosts' bytes and one of the migrants' (empty
 * or not), received by probing for their size (MPI_Improbe, MPI_Mrecv)
 * as they arrive, a non-blocking all-reduce of two words beside them (the
 * exchange's agreement) and the closing all-reduce of the verdict. The
 * ratio is then what the exchange adds to the messages: the pass over the
 * owned entities, packing the records, and refreshing the ghosts. Target
 * (issue 32): <= 1.3x. Unit: microseconds per exchange.
 *
 * Why this baseline is fair (issue 32): plain MPI code that exchanges
 * halos of sizes not known in advance needs the sizes too, in a round of
 * its own or by probing; the exchange probes, and so does the baseline,
 * with the same messages and bytes.
 *
 * mpi/overlap: one tick of a world whose FixedUpdate has a system of
 * per-entity work on the owned entities (a component no ghost carries)
 * and the exchange inside the tick: split (config exchange_overlap), the
 * work runs between the post and the completion while the ghosts fly,
 * against the same work placed before an unsplit exchange. Below 1.0 the
 * overlap hides waiting behind the work. Unit: microseconds per tick.
 *
 * The ranks must make the same calls in the same order, so both sides
 * time themselves (harness.h, self_timed) and report the slowest rank's
 * time, which every rank then calibrates with alike. Ranks other than 0
 * print nothing. Outside mpirun, or on one rank, the row is skipped.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft.h>
#include <weft/mpi.h>

#include "harness.h"
#include "mpi_ranks.h"
#include "mpi/dist.h" /* the exchange's message sizes, for the baseline */

enum { OWNED = 20000 };

typedef struct halo_state_t {
  weft_world_t *w;
  weft_mpi_t *mpi;
  uint32_t ranks;
  /* mpi/migrate: every exchange follows a pass that moves every owned
   * entity one region width right (wrapping), so all of them migrate. */
  weft_query_t *movers;
  float shift, side;
  /* The baseline's messages: per neighbour, the ghosts' and migrants'
   * bytes the exchange sent, from buffers of those sizes, and receive
   * buffers as large as what it received. */
  uint32_t nbr[8], nbr_n;
  size_t out_len[16];
  uint8_t *out[16], *in[16];
  size_t in_cap[16];
  MPI_Request reqs[16];
} halo_state_t;

/* Moves every owned entity one region width right, wrapping. */
static void shift_all(halo_state_t *s) {
  weft_iter_t it;
  for (weft_query_iter(s->movers, &it); weft_iter_next(&it);) {
    float *x = weft_iter_field(&it, 0, 0);
    for (uint32_t i = 0; i < it.count; i++) {
      x[i] += s->shift;
      if (x[i] >= s->side)
        x[i] -= s->side;
    }
  }
}

static uint64_t halo_weft(void *p, uint64_t reps) {
  halo_state_t *s = p;
  reps = bench_mpi_agreed_reps(reps);
  double t0 = bench_now_ns();
  for (uint64_t r = 0; r < reps; r++) {
    if (s->movers)
      shift_all(s);
    bench_check(weft_mpi_exchange(s->mpi), "weft_mpi_exchange");
  }
  return bench_mpi_slowest(bench_now_ns() - t0);
}

/* Receives the 2 x nbr_n messages of one round as they arrive. */
static void raw_receive(halo_state_t *s) {
  uint32_t n = s->nbr_n, left = 2 * n;
  bool got[16] = {false};
  while (left)
    for (uint32_t i = 0; i < 2 * n; i++) {
      int flag = 0, count = 0;
      MPI_Message msg;
      MPI_Status st;
      if (got[i])
        continue;
      MPI_Improbe((int)s->nbr[i % n], i < n ? 2 : 1, MPI_COMM_WORLD, &flag,
                  &msg, &st);
      if (!flag)
        continue;
      MPI_Get_count(&st, MPI_BYTE, &count);
      if ((size_t)count > s->in_cap[i])
        bench_die("baseline receive buffer", WEFT_ELIMIT);
      MPI_Mrecv(s->in[i], count, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
      got[i] = true;
      left--;
    }
}

static uint64_t halo_raw(void *p, uint64_t reps) {
  halo_state_t *s = p;
  uint32_t n = s->nbr_n;
  reps = bench_mpi_agreed_reps(reps);
  double t0 = bench_now_ns();
  for (uint64_t k = 0; k < reps; k++) {
    uint64_t flags[2] = {UINT64_MAX, 1}, all[2];
    MPI_Request agree;
    MPI_Iallreduce(flags, all, 2, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD,
                   &agree);
    for (uint32_t i = 0; i < 2 * n; i++) /* ghosts (tag 2), migrants (1) */
      MPI_Isend(s->out[i], (int)s->out_len[i], MPI_BYTE, (int)s->nbr[i % n],
                i < n ? 2 : 1, MPI_COMM_WORLD, &s->reqs[i]);
    raw_receive(s);
    MPI_Waitall((int)(2 * n), s->reqs, MPI_STATUSES_IGNORE);
    MPI_Wait(&agree, MPI_STATUS_IGNORE);
    int v = 0, verdict = 0;
    MPI_Allreduce(&v, &verdict, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  }
  return bench_mpi_slowest(bench_now_ns() - t0);
}

/* Spawns this rank's entities, evenly over its region. */
static void spawn_region(halo_state_t *s, const weft_std_t *std,
                         weft_component_t key, weft_component_t work) {
  weft_vec2_t lo, hi;
  uint32_t me = weft_mpi_rank(s->mpi);
  bench_check(weft_mpi_region(s->mpi, me, &lo, &hi), "weft_mpi_region");
  for (uint32_t i = 0; i < OWNED; i++) {
    uint64_t k = (uint64_t)me * OWNED + i;
    float u = (float)(weft_random_at(5, k, 0, 0, 0) >> 40) / 16777216.0f;
    float v = (float)(weft_random_at(5, k, 0, 0, 1) >> 40) / 16777216.0f;
    weft_vec2_t p = {lo.x + u * (hi.x - lo.x), lo.y + v * (hi.y - lo.y)};
    weft_vec2_t vel = {0, 0};
    float f = u;
    weft_entity_t e;
    bench_check(weft_spawn_with(s->w,
                                (weft_component_t[]){
                                    std->position, std->velocity, key, work, 0},
                                (const void *[]){&p, &vel, &k, &f}, &e),
                "spawn");
  }
}

/* The baseline's buffers, sized as the exchange's last messages. */
static void copy_sizes(halo_state_t *s) {
  const weft_mpi_t *m = s->mpi;
  s->nbr_n = m->nbr_n;
  memcpy(s->nbr, m->nbr, sizeof s->nbr);
  for (uint32_t i = 0; i < 2 * s->nbr_n; i++) {
    uint32_t r = s->nbr[i % s->nbr_n];
    bool ghosts = i < s->nbr_n;
    s->out_len[i] = ghosts ? m->out_ghost[r].len : m->out_mig[r].len;
    s->in_cap[i] = ghosts ? m->in_ghost[r].len : m->in_mig[r].len;
    s->out[i] = calloc(1, s->out_len[i] + 1);
    s->in[i] = calloc(1, s->in_cap[i] + 1);
    if (!s->out[i] || !s->in[i])
      bench_die("baseline buffers", WEFT_ENOMEM);
  }
}

static void halo_free(halo_state_t *s) {
  for (uint32_t i = 0; i < 16; i++) {
    free(s->out[i]);
    free(s->in[i]);
  }
  weft_mpi_free(s->mpi);
  weft_world_destroy(s->w);
}

/* Runs one row: mpi/halo (still entities) or mpi/migrate (all move). */
static void run_row(bench_ctx_t *ctx, const char *row, bool migrate) {
  halo_state_t s;
  memset(&s, 0, sizeof s);
  weft_std_t std;
  weft_component_t key;
  bench_check(weft_world_create(NULL, &s.w), "weft_world_create");
  bench_check(weft_std_register(s.w, &std), "weft_std_register");
  weft_mpi_config_t mc = {.min = {0, 0},
                          .max = {1000, 1000},
                          .halo = 25,
                          .ghost_components = {std.velocity},
                          .ghost_count = 1};
  bench_check(weft_mpi_new(s.w, MPI_COMM_WORLD, &mc, &s.mpi), "weft_mpi_new");
  bench_check(weft_component_lookup(s.w, "weft.Key", &key), "weft.Key");
  s.ranks = weft_mpi_size(s.mpi);
  spawn_region(&s, &std, key, 0);
  /* The first exchange spawns the ghosts; the timed ones refresh them. */
  bench_check(weft_mpi_exchange(s.mpi), "weft_mpi_exchange");
  double ops = 1e3; /* mpi/halo: microseconds an exchange */
  if (migrate) {
    /* The owned entities: ghosts follow their owners' records. */
    weft_component_t ghost;
    bench_check(weft_component_lookup(s.w, "weft.Ghost", &ghost), "weft.Ghost");
    weft_query_desc_t q = {.include = {std.position, key}, .exclude = {ghost}};
    bench_check(weft_query_create(s.w, &q, &s.movers), "weft_query_create");
    s.side = 1000;
    s.shift = 1000.0f / (float)s.mpi->dom.px;
    shift_all(&s); /* one round untimed: the sizes of a migrating one */
    bench_check(weft_mpi_exchange(s.mpi), "weft_mpi_exchange");
    ops = (double)OWNED; /* nanoseconds per migrant: all of them move */
  }
  copy_sizes(&s);
  char name[64];
  snprintf(name, sizeof name, "raw MPI, %u rank%s", s.ranks,
           s.ranks == 1 ? "" : "s");
  bench_case_t c = {
      .name = row,
      .unit = migrate ? "ns/migrant" : "us/exch",
      .n = (uint64_t)OWNED * s.ranks,
      .work = {"weft_mpi_exchange", halo_weft, &s, ops, true},
      .base = {name, halo_raw, &s, ops, true},
      .target_kind = migrate ? BENCH_TARGET_NONE : BENCH_TARGET_RATIO,
      .target = 1.3,
  };
  bench_compare(ctx, &c);
  if (s.movers)
    weft_query_destroy(s.movers);
  halo_free(&s);
}

/* "bench.work": a few dependent square roots per owned entity, on a
 * component no ghost carries. */
static int work_run(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)ctx;
  float *v = it->columns[0];
  for (uint32_t i = 0; i < it->count; i++) {
    float x = v[i];
    for (int k = 0; k < 8; k++)
      x = x * 0.999f + sqrtf(x + 1.0f) * 0.001f;
    v[i] = x;
  }
  return 0;
}

/* One side of mpi/overlap: the halo row's world and entities, with the
 * work system and the exchange in FixedUpdate, split around the work or
 * after it. */
static void overlap_side(halo_state_t *s, bool split) {
  weft_std_t std;
  weft_component_t key, work, ghost;
  memset(s, 0, sizeof *s);
  bench_check(weft_world_create(NULL, &s->w), "weft_world_create");
  bench_check(weft_std_register(s->w, &std), "weft_std_register");
  weft_pipeline_config_t pc = {.fixed_dt = 1.0 / 60.0, .time_inline = true};
  bench_check(weft_pipeline_configure(s->w, &pc), "pipeline");
  weft_component_desc_t wd = {.name = "bench.Work", .size = 4};
  weft_component_desc_t gd = {.name = "weft.Ghost"};
  bench_check(weft_component_register(s->w, &wd, &work), "bench.Work");
  if (weft_component_lookup(s->w, gd.name, &ghost) != 0)
    bench_check(weft_component_register(s->w, &gd, &ghost), "weft.Ghost");
  weft_system_desc_t sd = {.name = "bench.work",
                           .query = {.include = {work}, .exclude = {ghost}},
                           .run = work_run};
  weft_system_t id;
  bench_check(weft_system_register(s->w, &sd, &id), "bench.work");
  weft_mpi_config_t mc = {.min = {0, 0},
                          .max = {1000, 1000},
                          .halo = 25,
                          .ghost_components = {std.velocity},
                          .ghost_count = 1};
  if (split)
    mc.exchange_overlap[0] = "bench.work";
  else
    mc.exchange_after[0] = "bench.work";
  bench_check(weft_mpi_new(s->w, MPI_COMM_WORLD, &mc, &s->mpi), "weft_mpi_new");
  bench_check(weft_component_lookup(s->w, "weft.Key", &key), "weft.Key");
  s->ranks = weft_mpi_size(s->mpi);
  spawn_region(s, &std, key, work);
  for (int t = 0; t < 2; t++) /* ghosts spawned, buffers grown */
    bench_check(weft_mpi_step(s->mpi, 1.0 / 60.0), "weft_mpi_step");
}

static uint64_t overlap_tick(void *p, uint64_t reps) {
  halo_state_t *s = p;
  reps = bench_mpi_agreed_reps(reps);
  double t0 = bench_now_ns();
  for (uint64_t r = 0; r < reps; r++)
    bench_check(weft_mpi_step(s->mpi, 1.0 / 60.0), "weft_mpi_step");
  return bench_mpi_slowest(bench_now_ns() - t0);
}

static void run_overlap(bench_ctx_t *ctx) {
  halo_state_t split, serial;
  overlap_side(&split, true);
  overlap_side(&serial, false);
  char name[64];
  snprintf(name, sizeof name, "work, then the exchange, %u ranks",
           serial.ranks);
  bench_case_t c = {
      .name = "mpi/overlap",
      .unit = "us/tick",
      .n = (uint64_t)OWNED * split.ranks,
      .work = {"work while the ghosts fly", overlap_tick, &split, 1e3, true},
      .base = {name, overlap_tick, &serial, 1e3, true},
      .target_kind = BENCH_TARGET_NONE,
  };
  bench_compare(ctx, &c);
  halo_free(&split);
  halo_free(&serial);
}

void bench_mpi(bench_ctx_t *ctx) {
  bool halo = bench_selected(ctx, "mpi/halo");
  bool migrate = bench_selected(ctx, "mpi/migrate");
  bool overlap = bench_selected(ctx, "mpi/overlap");
  if (!halo && !migrate && !overlap)
    return;
  /* One rank has no neighbour: nothing to compare. Outside mpirun the
   * rows are skipped without starting MPI at all. */
  int size = 1;
  if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") ||
      getenv("PMIX_RANK")) {
    bench_mpi_start();
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
  if (size < 2) {
    fprintf(stderr, "mpi/*: skipped (run weft-bench under mpirun -n 2 "
                    "or more)\n");
    return;
  }
  if (halo)
    run_row(ctx, "mpi/halo", false);
  if (migrate)
    run_row(ctx, "mpi/migrate", true);
  if (overlap)
    run_overlap(ctx);
}
