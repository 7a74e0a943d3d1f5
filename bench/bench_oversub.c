/* SPDX-License-Identifier: MIT */
/*
 * oversubscribed: pools with more workers than CPUs, as in a container
 * whose CPU quota is below its CPU count or on a shared node. Every row
 * runs the same work with four threads per CPU the process may run on
 * against one per CPU, in the same rounds; the ratio is how much the extra
 * threads cost (1.0: nothing).
 *
 * oversubscribed/4x: weft-sim's arena scenario (tools/sim_scenarios.c),
 * 300,000 entities (20,000 with --quick), ticks of 1/60 s; the calling
 * thread is worker 0 on both sides. The two worlds are kept in step as in
 * arena/2w/scaling, and must reach the same digest. Target <= 1.5x.
 *
 * oversubscribed/update/4x: a world of 1M entities (64k with --quick)
 * with Position and Velocity and OVS_SYSTEMS systems that each integrate
 * and damp every entity (each writes Position: they run one after the
 * other, each split over the workers). No target; read it against the
 * next row.
 *
 * oversubscribed/omp/4x: the same kernels as plain C under OpenMP, one
 * parallel for (static schedule) per system, at four threads per CPU
 * against one per CPU, threads pinned round-robin to the CPUs as weft
 * pins its workers. OpenMP's waits follow OMP_WAIT_POLICY, which the
 * runtime reads at start-up; the row's name line says which was in
 * effect. No target: it shows what the same oversubscription costs
 * OpenMP. (Run weft-bench with OMP_WAIT_POLICY=passive: active waiters
 * spin on the CPUs the working threads need, and the row measures that.)
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_* */
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft.h>

#include "bench_omp.h"
#include "bench_systems.h"
#include "harness.h"

#define OVS_FACTOR 4u
#define OVS_DT (1.0 / 60.0)
#define OVS_SYSTEMS 6u

/* The CPUs this process may run on, in order; returns how many. */
static uint32_t ovs_cpus(int *cpus, uint32_t cap) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    bench_die("sched_getaffinity", WEFT_EINVAL);
  uint32_t n = 0;
  for (int c = 0; c < CPU_SETSIZE && n < cap; c++)
    if (CPU_ISSET(c, &set))
      cpus[n++] = c;
  return n;
}

/* ---- the arena ------------------------------------------------------------
 */

static void ovs_arena(bench_ctx_t *ctx, uint32_t ncpu) {
  const char *name = "oversubscribed/4x";
  if (!bench_selected(ctx, name))
    return;
  uint32_t n = ctx->quick ? 20000u : 300000u;
  static bench_arena_side_t one, four;
  bench_arena_open(&one, ncpu, true, n);
  bench_arena_open(&four, OVS_FACTOR * ncpu, true, n);
  bench_arena_pair(&one, &four);
  bench_case_t c = {
      .name = name,
      .unit = "ns/entity",
      .n = n,
      .work = {"weft_4x", bench_arena_run, &four, (double)n, true},
      .base = {"weft_1x", bench_arena_run, &one, (double)n, true},
      .target_kind = BENCH_TARGET_RATIO,
      .target = 1.5,
      .workers = OVS_FACTOR * ncpu,
  };
  bench_result_t *r = bench_compare(ctx, &c);
  weft_pool_stats_t st;
  bench_check(weft_pool_stats(four.pool, &st), "weft_pool_stats");
  fprintf(stderr,
          "%-28s    %u workers on %u CPUs (at most %u awake), %llu "
          "rescues; %.2fx\n",
          name, OVS_FACTOR * ncpu, ncpu, st.cpus,
          (unsigned long long)st.rescues, r->ratio);
  bench_arena_same(name, &one, &four);
  /* In reverse order of creation: each pool bound this thread as its
   * worker 0 and puts back the binding it found, so the last one made
   * must go first or the thread stays bound to one CPU for the rows
   * after. */
  bench_arena_close(&four);
  bench_arena_close(&one);
}

/* ---- the update kernels ----------------------------------------------------
 */

typedef struct ovs_vec2_t {
  float x, y;
} ovs_vec2_t;

/* One system's work on n entities: integrate, damp, bounce off the box. */
static inline void ovs_kernel(uint32_t n, float *restrict pos,
                              float *restrict vel, float dt) {
  for (uint32_t i = 0; i < 2 * n; i++) {
    float v = vel[i] * 0.999f;
    float p = pos[i] + v * dt;
    v = p > 1000.0f || p < -1000.0f ? -v : v;
    vel[i] = v;
    pos[i] = p;
  }
}

typedef struct ovs_update_t {
  weft_pool_t *pool;
  weft_world_t *world;
  weft_component_t pos, vel;
  uint32_t n;
  /* The OpenMP side's arrays (64-byte aligned), its thread count and the
   * CPUs to pin them to. */
  float *restrict apos, *restrict avel;
  uint32_t threads;
  const int *cpus;
  uint32_t ncpu;
} ovs_update_t;

static int ovs_sys(weft_sysctx_t *ctx, const weft_iter_t *ch) {
  ovs_kernel(ch->count, ch->columns[0], ch->columns[1], (float)ctx->dt);
  return 0;
}

static ovs_vec2_t ovs_initial(uint32_t i, bool vel) {
  float a = (float)(i % 1000) - 500.0f, b = (float)(i / 1000 % 1000) - 500.0f;
  return vel ? (ovs_vec2_t){a * 0.01f + 1.0f, b * 0.01f - 1.0f}
             : (ovs_vec2_t){a, b};
}

static void ovs_fill(void *user, const weft_iter_t *view, uint32_t first) {
  (void)user;
  ovs_vec2_t *p = view->columns[0], *v = view->columns[1];
  for (uint32_t i = 0; i < view->count; i++) {
    p[i] = ovs_initial(first + i, false);
    v[i] = ovs_initial(first + i, true);
  }
}

static void ovs_update_open(ovs_update_t *s, uint32_t workers, uint32_t n) {
  memset(s, 0, sizeof *s);
  s->n = n;
  s->pool = bench_pool_new(workers, true);
  weft_world_config_t wc = {.pool = s->pool};
  bench_check(weft_world_create(&wc, &s->world), "weft_world_create");
  weft_component_desc_t d = WEFT_COMPONENT_DESC(ovs_vec2_t);
  d.name = "Position";
  bench_check(weft_component_register(s->world, &d, &s->pos), "Position");
  d.name = "Velocity";
  bench_check(weft_component_register(s->world, &d, &s->vel), "Velocity");
  weft_component_t comps[] = {s->pos, s->vel, WEFT_COMPONENT_NONE};
  bench_check(weft_world_reserve(s->world, n), "weft_world_reserve");
  bench_check(weft_spawn_batch(s->world, n, comps, ovs_fill, NULL, NULL),
              "weft_spawn_batch");
  for (uint32_t k = 0; k < OVS_SYSTEMS; k++) {
    char name[32];
    snprintf(name, sizeof name, "Integrate%u", k);
    weft_system_desc_t sd = {.name = name, .run = ovs_sys};
    sd.query.flags = WEFT_QUERY_CHUNK_RUNS;
    sd.query.include[0] = s->pos;
    sd.query.include[1] = s->vel;
    weft_system_t id;
    bench_check(weft_system_register(s->world, &sd, &id), name);
  }
  bench_check(weft_schedule_build(s->world), "weft_schedule_build");
}

static void ovs_update_close(ovs_update_t *s) {
  weft_world_destroy(s->world);
  weft_pool_destroy(s->pool);
}

static uint64_t ovs_update_weft(void *p, uint64_t reps) {
  ovs_update_t *s = p;
  return bench_fixed_phases(s->world, OVS_DT, reps);
}

/* Pins each OpenMP thread of an s->threads team to a CPU, round-robin (the
 * runtime keeps a team's threads, so this holds for the regions after). */
static void ovs_omp_pin(const ovs_update_t *s) {
#pragma omp parallel num_threads(s->threads)
  {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(s->cpus[(uint32_t)omp_get_thread_num() % s->ncpu], &set);
    (void)sched_setaffinity(0, sizeof set, &set);
  }
}

static uint64_t ovs_update_omp(void *p, uint64_t reps) {
  ovs_update_t *s = p;
  /* This thread is the team's thread 0 and gets pinned too: its own
   * binding goes back at the end, or every row after (and the next pass's
   * CPU count) would run on one CPU. */
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0)
    bench_die("sched_getaffinity", WEFT_EINVAL);
  ovs_omp_pin(s);
  const uint32_t n = s->n;
  float *restrict pos = s->apos, *restrict vel = s->avel;
  for (uint64_t r = 0; r < reps; r++) {
    for (uint32_t k = 0; k < OVS_SYSTEMS; k++) {
#pragma omp parallel num_threads(s->threads)
      {
        uint32_t lo, hi;
        bench_omp_share(n, &lo, &hi);
        ovs_kernel(hi - lo, pos + 2 * lo, vel + 2 * lo, (float)OVS_DT);
      }
    }
    bench_clobber();
  }
  (void)sched_setaffinity(0, sizeof mine, &mine);
  return bench_f32_bits(pos[0]);
}

static void ovs_omp_arrays(ovs_update_t *s) {
  s->apos = bench_alloc((size_t)s->n * 2 * sizeof(float));
  s->avel = bench_alloc((size_t)s->n * 2 * sizeof(float));
  for (uint32_t i = 0; i < s->n; i++) {
    ovs_vec2_t a = ovs_initial(i, false), b = ovs_initial(i, true);
    s->apos[2 * i] = a.x;
    s->apos[2 * i + 1] = a.y;
    s->avel[2 * i] = b.x;
    s->avel[2 * i + 1] = b.y;
  }
}

static void ovs_update(bench_ctx_t *ctx, const int *cpus, uint32_t ncpu) {
  uint32_t n = ctx->quick ? (1u << 16) : (1u << 20);
  const char *wname = "oversubscribed/update/4x";
  if (bench_selected(ctx, wname)) {
    static ovs_update_t one, four;
    ovs_update_open(&one, ncpu, n);
    ovs_update_open(&four, OVS_FACTOR * ncpu, n);
    bench_case_t c = {
        .name = wname,
        .unit = "ns/entity",
        .n = n,
        .work = {"weft_4x", ovs_update_weft, &four, n, false},
        .base = {"weft_1x", ovs_update_weft, &one, n, false},
        .workers = OVS_FACTOR * ncpu,
    };
    bench_compare(ctx, &c);
    ovs_update_close(&four); /* reverse order, as above */
    ovs_update_close(&one);
  }
  const char *oname = "oversubscribed/omp/4x";
  if (bench_selected(ctx, oname)) {
    static ovs_update_t one, four;
    memset(&one, 0, sizeof one);
    one.n = n;
    ovs_omp_arrays(&one);
    four = one; /* the same arrays; only the team differs */
    one.threads = ncpu;
    four.threads = OVS_FACTOR * ncpu;
    one.cpus = four.cpus = cpus;
    one.ncpu = four.ncpu = ncpu;
    const char *policy = getenv("OMP_WAIT_POLICY");
    fprintf(stderr, "%-28s    OMP_WAIT_POLICY=%s\n", oname,
            policy ? policy : "(unset: the runtime's default)");
    bench_case_t c = {
        .name = oname,
        .unit = "ns/entity",
        .n = n,
        .work = {"omp_4x", ovs_update_omp, &four, n, false},
        .base = {"omp_1x", ovs_update_omp, &one, n, false},
        .workers = OVS_FACTOR * ncpu,
    };
    bench_compare(ctx, &c);
    bench_free(one.apos);
    bench_free(one.avel);
  }
}

void bench_oversub(bench_ctx_t *ctx) {
  int cpus[CPU_SETSIZE];
  uint32_t ncpu = ovs_cpus(cpus, CPU_SETSIZE);
  ovs_arena(ctx, ncpu);
  ovs_update(ctx, cpus, ncpu);
}
