/* SPDX-License-Identifier: MIT */
/*
 * bandwidth: how much of the machine's memory bandwidth a streaming system
 * gets. 2^26 (64 Mi) entities with Position and Velocity, both {x, y, z}
 * floats stored field-level SoA (WEFT_COMPONENT_SOA), so a chunk holds six
 * float arrays; 2^20 with --quick. One system in FixedUpdate does
 * pos += vel * dt, with WEFT_QUERY_CHUNK_RUNS (one call per run of chunks
 * whose arrays continue each other) and term access read-write for
 * Position, read for Velocity. Its batch hint is 65,536 rows (1,024 jobs'
 * worth at 64 Mi entities, plenty for lazy halving): with the default
 * 8,192 a call covers 32 KiB of each array, and each call's chunk headers,
 * base pointers and version stamps, evicted by the stream, cost cache
 * misses that made the system 10-15% slower on one worker. One
 * repetition is one weft_world_run_phase(world, FixedUpdate, 1/60), sync
 * point included. Unit: ns per entity.
 *
 * Bytes per entity: 36, counted as STREAM counts them: Position's three
 * floats read and written back (12 + 12) and Velocity's three read (12).
 * A read-modify-write needs no extra write-allocate read, since the line
 * was just read; the entity handles are not touched. GB/s = 36 / (ns per
 * entity).
 *
 * Baseline: a STREAM-like triad with the same bytes per element,
 * a[i] = a[i] + s * b[i] for each of three components, over six plain
 * 64-byte aligned arrays of n floats (on transparent huge pages like
 * weft's segments, each array offset by a further 16 KiB + 64 B so that
 * the six streams spread over the cache sets, again like weft's
 * segments). Both sides call the same kernel
 * (bench_integrate_soa in harness.h, restrict pointers): weft once per run of
 * chunks, OpenMP once per thread over its static share in a `parallel` region
 * of as many threads as weft has workers. The shares are what schedule(static)
 * hands out (one contiguous block per thread), cut at multiples of 16 floats so
 * that each starts on a cache line; calling the kernel on a share, rather
 * than an `omp for` over the loop body, keeps restrict (it does not survive
 * outlining) so the loop vectorizes without an alias check. gcc 12 -O3
 * -fopt-info-vec-optimized (x86-64 baseline ISA): "loop vectorized using
 * 16 byte vectors" for bench_integrate_soa where it is inlined, into the weft
 * callback and into the baseline's parallel region, neither versioned for
 * aliasing.
 *
 * Placement: the baseline's arrays are allocated without being touched
 * and first written in a parallel region with the same shares and thread
 * count as the timed loop, so each thread's pages are local to it (first
 * touch). weft's chunk memory is placed by the world (its pool's NUMA
 * groups, world.h); on a one-node machine both are plain memory.
 *
 * Rows: bandwidth/<w>w for w = 1, 2, 4, ... up to the online CPUs (at least
 * 2, the count itself included), each a pool of w workers with
 * caller_participates (the calling thread is worker 0) and inline_rows 1
 * against OpenMP on w threads; a fresh world and fresh baseline arrays per
 * row. The ratio is time over time, so the fraction of the reference's
 * bandwidth that weft reaches is 1 / ratio. bandwidth/2w has the target:
 * at least 85% of the reference, ratio <= 1 / 0.85; the other rows have
 * none. GB/s and the fraction are printed with the progress and go into
 * the JSON (gbps, baseline_gbps). Run with OMP_WAIT_POLICY=passive.
 */
#define _DEFAULT_SOURCE 1 /* MADV_HUGEPAGE */

#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <weft.h>

#include "bench_systems.h"
#include "bench_omp.h"
#include "harness.h"

#define BW_DT (1.0 / 60.0)
#define BW_BYTES 36.0 /* per entity: see above */
#define BW_TARGET_FRACTION 0.85
#define BW_MAX_ROWS 16u
#define BW_BATCH (1u << 16)
#define BW_HUGE_PAGE ((size_t)2 << 20)
#define BW_GAP ((size_t)16384)

typedef struct bw_state_t {
  uint32_t n;
  uint32_t workers;
  weft_pool_t *pool;
  weft_world_t *world;
  float *a[3];  /* baseline: "Position" x, y, z */
  float *b[3];  /* baseline: "Velocity" x, y, z */
  void *mem[6]; /* what a and b were carved from */
} bw_state_t;

static int bw_system(weft_sysctx_t *ctx, const weft_iter_t *ch) {
  void *p[WEFT_MAX_FIELDS], *v[WEFT_MAX_FIELDS];
  weft_iter_fields(ch, 0, p);
  weft_iter_fields(ch, 1, v);
  bench_integrate_soa(ch->count, p[0], p[1], p[2], v[0], v[1], v[2],
                      (float)ctx->dt);
  return 0;
}

static uint64_t bw_weft(void *p, uint64_t reps) {
  bw_state_t *s = p;
  return bench_fixed_phases(s->world, BW_DT, reps);
}

static uint64_t bw_base(void *p, uint64_t reps) {
  bw_state_t *s = p;
  const uint32_t n = s->n;
  float *const *a = s->a, *const *b = s->b;
  const float dt = (float)BW_DT;
  for (uint64_t r = 0; r < reps; ++r) {
#pragma omp parallel num_threads(s->workers)
    {
      uint32_t lo, hi;
      bench_omp_share(n, &lo, &hi);
      bench_integrate_soa(hi - lo, a[0] + lo, a[1] + lo, a[2] + lo, b[0] + lo,
                          b[1] + lo, b[2] + lo, dt);
    }
    bench_clobber();
  }
  return bench_f32_bits(a[0][0]) ^ bench_f32_bits(a[2][n - 1]);
}

/* ---- setup ----------------------------------------------------------------
 */

/* Entity i's initial state, the same on both sides. */
static inline float bw_pos0(uint32_t i, uint32_t k) {
  return (float)((i + k) & 1023u);
}
static inline float bw_vel0(uint32_t i, uint32_t k) {
  return 1.0f + (float)((i ^ k) & 7u);
}

static void bw_fill(void *user, const weft_iter_t *view, uint32_t first) {
  (void)user;
  void *p[WEFT_MAX_FIELDS], *v[WEFT_MAX_FIELDS];
  weft_iter_fields(view, 0, p);
  weft_iter_fields(view, 1, v);
  for (uint32_t k = 0; k < 3; ++k) {
    float *pk = p[k], *vk = v[k];
    for (uint32_t i = 0; i < view->count; ++i) {
      pk[i] = bw_pos0(first + i, k);
      vk[i] = bw_vel0(first + i, k);
    }
  }
}

static void bw_world_setup(bw_state_t *s) {
  s->pool = bench_pool_new(s->workers, false);
  s->workers = weft_pool_workers(s->pool); /* OpenMP uses as many */
  weft_world_config_t wc = {.pool = s->pool};
  bench_check(weft_world_create(&wc, &s->world), "weft_world_create");
  weft_pipeline_config_t pl = {.inline_rows = 1};
  bench_check(weft_pipeline_configure(s->world, &pl),
              "weft_pipeline_configure");

  weft_field_desc_t f[3] = {WEFT_FIELD(bench_vec3_t, x),
                            WEFT_FIELD(bench_vec3_t, y),
                            WEFT_FIELD(bench_vec3_t, z)};
  weft_component_t c[3] = {0, 0, WEFT_COMPONENT_NONE};
  static const char *const names[2] = {"Position", "Velocity"};
  for (int k = 0; k < 2; ++k) {
    weft_component_desc_t d = WEFT_COMPONENT_DESC(bench_vec3_t);
    d.name = names[k];
    d.fields = f;
    d.field_count = 3;
    d.flags = WEFT_COMPONENT_SOA;
    bench_check(weft_component_register(s->world, &d, &c[k]), names[k]);
  }
  bench_check(weft_world_reserve(s->world, s->n), "weft_world_reserve");
  bench_check(weft_spawn_batch(s->world, s->n, c, bw_fill, NULL, NULL),
              "weft_spawn_batch");

  weft_system_desc_t sd = {
      .name = "Integrate", .run = bw_system, .batch = BW_BATCH};
  sd.query.include[0] = c[0];
  sd.query.include[1] = c[1];
  sd.query.flags = WEFT_QUERY_CHUNK_RUNS;
  sd.term_access[0] = WEFT_ACCESS_DEFAULT; /* read and written */
  sd.term_access[1] = WEFT_ACCESS_READ;
  weft_system_t id;
  bench_check(weft_system_register(s->world, &sd, &id), "weft_system_register");
  bench_check(weft_schedule_build(s->world), "weft_schedule_build");
}

/* Array k of the baseline: n floats, untouched so that the first write
 * places it, on transparent huge pages as weft's segments are, and
 * starting k * BW_GAP bytes and a further line 1 + (11 * k) % 63 of a page
 * into its 2 MiB aligned block, so that the six streams neither share
 * cache sets nor alias modulo 4096 (weft's segments space their arrays the
 * same way). */
static float *bw_alloc_array(bw_state_t *s, uint32_t n, uint32_t k) {
  size_t bytes = (size_t)n * sizeof(float) + 6 * BW_GAP + 4096;
  bytes = (bytes + BW_HUGE_PAGE - 1) & ~(BW_HUGE_PAGE - 1);
  void *p = aligned_alloc(BW_HUGE_PAGE, bytes);
  if (!p)
    bench_die("aligned_alloc", WEFT_ENOMEM);
  (void)madvise(p, bytes, MADV_HUGEPAGE); /* a hint: fine if refused */
  s->mem[k] = p;
  return (float *)((char *)p + k * BW_GAP + bench_page_line(k));
}

static void bw_arrays_setup(bw_state_t *s) {
  const uint32_t n = s->n;
  for (uint32_t k = 0; k < 3; ++k) {
    s->a[k] = bw_alloc_array(s, n, k);
    s->b[k] = bw_alloc_array(s, n, 3 + k);
  }
  float *const *a = s->a, *const *b = s->b;
#pragma omp parallel num_threads(s->workers)
  {
    uint32_t lo, hi;
    bench_omp_share(n, &lo, &hi);
    for (uint32_t k = 0; k < 3; ++k)
      for (uint32_t i = lo; i < hi; ++i) {
        a[k][i] = bw_pos0(i, k);
        b[k][i] = bw_vel0(i, k);
      }
  }
}

static void bw_teardown(bw_state_t *s) {
  weft_world_destroy(s->world);
  weft_pool_destroy(s->pool);
  for (int k = 0; k < 6; ++k)
    free(s->mem[k]);
}

static void bw_run(bench_ctx_t *ctx, const char *name, uint32_t n,
                   uint32_t workers) {
  if (!bench_selected(ctx, name))
    return;
  bw_state_t s;
  memset(&s, 0, sizeof s);
  s.n = n;
  s.workers = workers;
  bw_world_setup(&s);
  bw_arrays_setup(&s);
  bench_case_t c = {
      .name = name,
      .unit = "ns/entity",
      .n = n,
      .work = {"weft", bw_weft, &s, n, false},
      .base = {"stream_triad_omp", bw_base, &s, n, false},
      .target_kind = workers == 2 ? BENCH_TARGET_RATIO : BENCH_TARGET_NONE,
      .target = workers == 2 ? 1.0 / BW_TARGET_FRACTION : 0.0,
      .workers = workers,
  };
  bench_result_t *r = bench_compare(ctx, &c);
  bw_teardown(&s);

  r->bytes = BW_BYTES;
  fprintf(stderr, "%-28s    %.2f GB/s, reference %.2f GB/s, fraction %.3f\n",
          name, BW_BYTES / r->value, BW_BYTES / r->baseline_value,
          1.0 / r->ratio);
}

void bench_bandwidth(bench_ctx_t *ctx) {
  uint32_t n = ctx->quick ? (1u << 20) : (1u << 26);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  uint32_t max = cpus > 2 ? (uint32_t)cpus : 2u;
  uint32_t counts[BW_MAX_ROWS], rows = 0;
  for (uint32_t w = 1; w < max && rows + 1 < BW_MAX_ROWS; w *= 2)
    counts[rows++] = w;
  counts[rows++] = max;
  for (uint32_t i = 0; i < rows; ++i) {
    char name[32];
    snprintf(name, sizeof name, "bandwidth/%uw", counts[i]);
    bw_run(ctx, name, n, counts[i]);
  }
}
