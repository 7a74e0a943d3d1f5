/* SPDX-License-Identifier: MIT */
/*
 * heavy_compute: ecs_bench_suite's `heavy_compute` workload. 1,000 entities
 * with Transform (a 4x4 float matrix, column-major, initially a rotation
 * of 1.2 rad about x), Position, Rotation and Velocity (vec3, unit x). One
 * system in FixedUpdate, over (Position, Transform): invert the matrix 100
 * times (general 4x4 inverse by cofactors, skipped when singular, as
 * cgmath's invert().unwrap() would stop), then Position = Transform applied
 * to Position as a vector (w = 0). One repetition is one
 * weft_world_run_phase(world, FixedUpdate, 1/60). Unit: ns per entity.
 *
 * The system asks for jobs of 63 rows (1000 / 16, rounded up); the
 * pipeline's inline_rows is set to 1 so that the 1,000 rows do go to the
 * pool. weft runs on a pool of 1 or 2 workers, the calling thread being
 * worker 0; OpenMP runs `parallel for num_threads(1|2)` over the entities
 * with schedule(static) and with schedule(dynamic) (chunk 1). Both sides
 * call the same per-entity kernel (hc_entity) on the same data layout
 * (separate arrays of matrices and positions, like weft's columns), so the
 * ratio is the cost of weft's scheduling. Run with OMP_WAIT_POLICY=passive.
 *
 * heavy_compute/1w: weft on one worker vs OpenMP static on one thread (no
 * target). heavy_compute/2w and /2w/dyn: weft on two workers vs OpenMP
 * static and dynamic on two threads; target <= 1.05x each, which together
 * is "<= 1.05x the better OpenMP schedule". heavy_compute/2w/scaling: weft
 * on two workers against weft on one worker with twice the operations, so
 * the ratio is 2 * t2 / t1 = 1 / parallel efficiency; target <= 1/0.9
 * (efficiency >= 90%); the efficiency itself goes into the JSON
 * (workers 2, efficiency). heavy_compute/omp/scaling: the same for OpenMP
 * static, for the machine's ceiling (no target). A job never splits a
 * chunk, so the batch hint cannot cut below a chunk's rows: with the
 * default 16 KiB chunks the 1,000 entities fill 8 chunks of 128 rows and
 * the system runs as 8 jobs (an even split on two workers, by luck of the
 * row size). The /4k rows repeat 2w and its scaling on worlds with
 * 4 KiB chunks (28 chunks; jobs of two chunks, 14 jobs), no target.
 *
 * gcc 12 -O3 -fopt-info-vec-optimized: hc_invert is straight-line code
 * (SLP vectorized in part); nothing loops over entities in a way that could
 * vectorize (each entity is 100 dependent inversions), on either side.
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <weft.h>

#include "bench_systems.h"
#include "harness.h"

#define HC_DT (1.0 / 60.0)
#define HC_INVERSIONS 100
#define HC_ENTITIES 1000u
#define HC_BATCH ((HC_ENTITIES + 15u) / 16u)

typedef struct hc_mat4_t {
  float m[16]; /* column-major: m[col * 4 + row] */
} hc_mat4_t;

typedef struct hc_world_t {
  weft_pool_t *pool;
  weft_world_t *world;
} hc_world_t;

typedef struct hc_state_t {
  uint32_t n;
  hc_world_t w1, w2; /* 1 and 2 workers */
  hc_mat4_t *mat[3]; /* OpenMP arrays: static 1t, static 2t, dynamic 2t */
  bench_vec3_t *pos[3];
} hc_state_t;

/* ---- the kernel ------------------------------------------------------------
 */

/* Inverts m in place by cofactors; leaves it alone when it is singular. */
static inline void hc_invert(hc_mat4_t *restrict mat) {
  const float *m = mat->m;
  float inv[16];
  inv[0] = m[5] * m[10] * m[15] - m[5] * m[11] * m[14] - m[9] * m[6] * m[15] +
           m[9] * m[7] * m[14] + m[13] * m[6] * m[11] - m[13] * m[7] * m[10];
  inv[4] = -m[4] * m[10] * m[15] + m[4] * m[11] * m[14] + m[8] * m[6] * m[15] -
           m[8] * m[7] * m[14] - m[12] * m[6] * m[11] + m[12] * m[7] * m[10];
  inv[8] = m[4] * m[9] * m[15] - m[4] * m[11] * m[13] - m[8] * m[5] * m[15] +
           m[8] * m[7] * m[13] + m[12] * m[5] * m[11] - m[12] * m[7] * m[9];
  inv[12] = -m[4] * m[9] * m[14] + m[4] * m[10] * m[13] + m[8] * m[5] * m[14] -
            m[8] * m[6] * m[13] - m[12] * m[5] * m[10] + m[12] * m[6] * m[9];
  inv[1] = -m[1] * m[10] * m[15] + m[1] * m[11] * m[14] + m[9] * m[2] * m[15] -
           m[9] * m[3] * m[14] - m[13] * m[2] * m[11] + m[13] * m[3] * m[10];
  inv[5] = m[0] * m[10] * m[15] - m[0] * m[11] * m[14] - m[8] * m[2] * m[15] +
           m[8] * m[3] * m[14] + m[12] * m[2] * m[11] - m[12] * m[3] * m[10];
  inv[9] = -m[0] * m[9] * m[15] + m[0] * m[11] * m[13] + m[8] * m[1] * m[15] -
           m[8] * m[3] * m[13] - m[12] * m[1] * m[11] + m[12] * m[3] * m[9];
  inv[13] = m[0] * m[9] * m[14] - m[0] * m[10] * m[13] - m[8] * m[1] * m[14] +
            m[8] * m[2] * m[13] + m[12] * m[1] * m[10] - m[12] * m[2] * m[9];
  inv[2] = m[1] * m[6] * m[15] - m[1] * m[7] * m[14] - m[5] * m[2] * m[15] +
           m[5] * m[3] * m[14] + m[13] * m[2] * m[7] - m[13] * m[3] * m[6];
  inv[6] = -m[0] * m[6] * m[15] + m[0] * m[7] * m[14] + m[4] * m[2] * m[15] -
           m[4] * m[3] * m[14] - m[12] * m[2] * m[7] + m[12] * m[3] * m[6];
  inv[10] = m[0] * m[5] * m[15] - m[0] * m[7] * m[13] - m[4] * m[1] * m[15] +
            m[4] * m[3] * m[13] + m[12] * m[1] * m[7] - m[12] * m[3] * m[5];
  inv[14] = -m[0] * m[5] * m[14] + m[0] * m[6] * m[13] + m[4] * m[1] * m[14] -
            m[4] * m[2] * m[13] - m[12] * m[1] * m[6] + m[12] * m[2] * m[5];
  inv[3] = -m[1] * m[6] * m[11] + m[1] * m[7] * m[10] + m[5] * m[2] * m[11] -
           m[5] * m[3] * m[10] - m[9] * m[2] * m[7] + m[9] * m[3] * m[6];
  inv[7] = m[0] * m[6] * m[11] - m[0] * m[7] * m[10] - m[4] * m[2] * m[11] +
           m[4] * m[3] * m[10] + m[8] * m[2] * m[7] - m[8] * m[3] * m[6];
  inv[11] = -m[0] * m[5] * m[11] + m[0] * m[7] * m[9] + m[4] * m[1] * m[11] -
            m[4] * m[3] * m[9] - m[8] * m[1] * m[7] + m[8] * m[3] * m[5];
  inv[15] = m[0] * m[5] * m[10] - m[0] * m[6] * m[9] - m[4] * m[1] * m[10] +
            m[4] * m[2] * m[9] + m[8] * m[1] * m[6] - m[8] * m[2] * m[5];
  float det = m[0] * inv[0] + m[1] * inv[4] + m[2] * inv[8] + m[3] * inv[12];
  if (det == 0.0f)
    return;
  float r = 1.0f / det;
  for (int i = 0; i < 16; ++i)
    mat->m[i] = inv[i] * r;
}

/* One entity's work: the kernel both sides run. */
static inline void hc_entity(hc_mat4_t *restrict t, bench_vec3_t *restrict p) {
  hc_mat4_t m = *t;
  for (int k = 0; k < HC_INVERSIONS; ++k)
    hc_invert(&m);
  *t = m;
  bench_vec3_t v = *p;
  p->x = m.m[0] * v.x + m.m[4] * v.y + m.m[8] * v.z;
  p->y = m.m[1] * v.x + m.m[5] * v.y + m.m[9] * v.z;
  p->z = m.m[2] * v.x + m.m[6] * v.y + m.m[10] * v.z;
}

static int hc_system(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)ctx;
  bench_vec3_t *pos = chunk->columns[0];
  hc_mat4_t *mat = chunk->columns[1];
  for (uint32_t i = 0; i < chunk->count; ++i)
    hc_entity(&mat[i], &pos[i]);
  return 0;
}

/* ---- sides -----------------------------------------------------------------
 */

static uint64_t hc_weft(weft_world_t *w, uint64_t reps) {
  return bench_fixed_phases(w, HC_DT, reps);
}

static uint64_t hc_weft_1w(void *p, uint64_t reps) {
  return hc_weft(((hc_state_t *)p)->w1.world, reps);
}

static uint64_t hc_weft_2w(void *p, uint64_t reps) {
  return hc_weft(((hc_state_t *)p)->w2.world, reps);
}

static uint64_t hc_omp_static_1t(void *p, uint64_t reps) {
  hc_state_t *s = p;
  uint32_t n = s->n;
  hc_mat4_t *mat = s->mat[0];
  bench_vec3_t *pos = s->pos[0];
  for (uint64_t r = 0; r < reps; ++r) {
#pragma omp parallel for num_threads(1) schedule(static)
    for (uint32_t i = 0; i < n; ++i)
      hc_entity(&mat[i], &pos[i]);
    bench_clobber();
  }
  return bench_f32_bits(pos[0].x);
}

static uint64_t hc_omp_static_2t(void *p, uint64_t reps) {
  hc_state_t *s = p;
  uint32_t n = s->n;
  hc_mat4_t *mat = s->mat[1];
  bench_vec3_t *pos = s->pos[1];
  for (uint64_t r = 0; r < reps; ++r) {
#pragma omp parallel for num_threads(2) schedule(static)
    for (uint32_t i = 0; i < n; ++i)
      hc_entity(&mat[i], &pos[i]);
    bench_clobber();
  }
  return bench_f32_bits(pos[0].x);
}

static uint64_t hc_omp_dynamic_2t(void *p, uint64_t reps) {
  hc_state_t *s = p;
  uint32_t n = s->n;
  hc_mat4_t *mat = s->mat[2];
  bench_vec3_t *pos = s->pos[2];
  for (uint64_t r = 0; r < reps; ++r) {
#pragma omp parallel for num_threads(2) schedule(dynamic)
    for (uint32_t i = 0; i < n; ++i)
      hc_entity(&mat[i], &pos[i]);
    bench_clobber();
  }
  return bench_f32_bits(pos[0].x);
}

/* ---- setup -----------------------------------------------------------------
 */

static hc_mat4_t hc_mat0(void) {
  const float c = 0.36235775f, s = 0.93203909f; /* cos, sin of 1.2 rad */
  hc_mat4_t m = {{1, 0, 0, 0, 0, c, s, 0, 0, -s, c, 0, 0, 0, 0, 1}};
  return m;
}

static void hc_fill(void *user, const weft_iter_t *view, uint32_t first) {
  (void)user;
  (void)first;
  hc_mat4_t *mat = view->columns[0];
  for (uint32_t k = 1; k < 4; ++k) {
    bench_vec3_t *v = view->columns[k];
    for (uint32_t i = 0; i < view->count; ++i)
      v[i] = (bench_vec3_t){1.0f, 0.0f, 0.0f};
  }
  for (uint32_t i = 0; i < view->count; ++i)
    mat[i] = hc_mat0();
}

static void hc_world_setup(hc_world_t *h, uint32_t n, uint32_t workers,
                           uint32_t chunk) {
  h->pool = bench_pool_new(workers, false);
  weft_world_config_t wc = {.chunk_size = chunk, .pool = h->pool};
  bench_check(weft_world_create(&wc, &h->world), "weft_world_create");
  weft_pipeline_config_t pl = {.inline_rows = 1};
  bench_check(weft_pipeline_configure(h->world, &pl),
              "weft_pipeline_configure");

  weft_component_t c[5] = {0, 0, 0, 0, WEFT_COMPONENT_NONE};
  weft_component_desc_t d = WEFT_COMPONENT_DESC(hc_mat4_t);
  d.name = "Transform";
  bench_check(weft_component_register(h->world, &d, &c[0]),
              "registering Transform");
  static const char *const vnames[3] = {"Position", "Rotation", "Velocity"};
  for (int k = 0; k < 3; ++k) {
    d = WEFT_COMPONENT_DESC(bench_vec3_t);
    d.name = vnames[k];
    bench_check(weft_component_register(h->world, &d, &c[k + 1]),
                "registering a vec3 component");
  }
  bench_check(weft_spawn_batch(h->world, n, c, hc_fill, NULL, NULL),
              "weft_spawn_batch");

  weft_system_desc_t sd = {
      .name = "heavy_compute", .run = hc_system, .batch = HC_BATCH};
  sd.query.include[0] = c[1]; /* Position */
  sd.query.include[1] = c[0]; /* Transform */
  weft_system_t id;
  bench_check(weft_system_register(h->world, &sd, &id), "weft_system_register");
  bench_check(weft_schedule_build(h->world), "weft_schedule_build");
}

static void hc_world_teardown(hc_world_t *h) {
  weft_world_destroy(h->world);
  weft_pool_destroy(h->pool);
}

static void hc_setup(hc_state_t *s, uint32_t n, uint32_t chunk) {
  memset(s, 0, sizeof *s);
  s->n = n;
  hc_world_setup(&s->w1, n, 1, chunk);
  hc_world_setup(&s->w2, n, 2, chunk);
  for (int k = 0; k < 3; ++k) {
    s->mat[k] = bench_alloc((size_t)n * sizeof(hc_mat4_t));
    s->pos[k] = bench_alloc((size_t)n * sizeof(bench_vec3_t));
    for (uint32_t i = 0; i < n; ++i) {
      s->mat[k][i] = hc_mat0();
      s->pos[k][i] = (bench_vec3_t){1.0f, 0.0f, 0.0f};
    }
  }
}

static void hc_teardown(hc_state_t *s) {
  hc_world_teardown(&s->w1);
  hc_world_teardown(&s->w2);
  for (int k = 0; k < 3; ++k) {
    bench_free(s->mat[k]);
    bench_free(s->pos[k]);
  }
}

/* Runs one comparison; @p workers > 0 marks a scaling row whose ratio is
 * 1 / efficiency (the baseline side counts twice the operations). */
static void hc_compare(bench_ctx_t *ctx, hc_state_t *s, const char *name,
                       bench_side_t work, bench_side_t base,
                       bench_target_kind_t kind, double target,
                       uint32_t workers) {
  if (!bench_selected(ctx, name))
    return;
  bench_case_t c = {
      .name = name,
      .unit = "ns/entity",
      .n = s->n,
      .work = work,
      .base = base,
      .target_kind = kind,
      .target = target,
      .workers = work.fn == hc_weft_1w ? 1u : 2u, /* all others: 2 */
  };
  bench_result_t *r = bench_compare(ctx, &c);
  if (workers) {
    r->workers = workers;
    r->efficiency = 1.0 / r->ratio;
    fprintf(stderr, "%-28s    parallel efficiency %.1f%%\n", name,
            100.0 * r->efficiency);
  }
}

static bool hc_any_selected(bench_ctx_t *ctx, const char *const *names,
                            size_t count) {
  bool any = false;
  bool list = ctx->list_only;
  for (size_t i = 0; i < count; ++i) {
    if (list) {
      bench_selected(ctx, names[i]); /* prints it */
      continue;
    }
    any |= bench_selected(ctx, names[i]);
  }
  return any;
}

void bench_heavy_compute(bench_ctx_t *ctx) {
  static const char *const main_rows[] = {
      "heavy_compute/1w", "heavy_compute/2w", "heavy_compute/2w/dyn",
      "heavy_compute/2w/scaling", "heavy_compute/omp/scaling"};
  static const char *const small_rows[] = {"heavy_compute/4k/2w",
                                           "heavy_compute/4k/scaling"};
  const double n = HC_ENTITIES;
  hc_state_t s;

  if (hc_any_selected(ctx, main_rows, 5)) {
    hc_setup(&s, HC_ENTITIES, 0);
    bench_side_t w1 = {"weft", hc_weft_1w, &s, n, false};
    bench_side_t w2 = {"weft", hc_weft_2w, &s, n, false};
    bench_side_t w1_half = {"weft_1w_per_2", hc_weft_1w, &s, 2 * n, false};
    bench_side_t os1 = {"omp_static_1t", hc_omp_static_1t, &s, n, false};
    bench_side_t os1_half = {"omp_static_1t_per_2", hc_omp_static_1t, &s, 2 * n,
                             false};
    bench_side_t os2 = {"omp_static_2t", hc_omp_static_2t, &s, n, false};
    bench_side_t od2 = {"omp_dynamic_2t", hc_omp_dynamic_2t, &s, n, false};
    hc_compare(ctx, &s, main_rows[0], w1, os1, BENCH_TARGET_NONE, 0.0, 0);
    hc_compare(ctx, &s, main_rows[1], w2, os2, BENCH_TARGET_RATIO, 1.05, 0);
    hc_compare(ctx, &s, main_rows[2], w2, od2, BENCH_TARGET_RATIO, 1.05, 0);
    hc_compare(ctx, &s, main_rows[3], w2, w1_half, BENCH_TARGET_RATIO,
               1.0 / 0.9, 2);
    hc_compare(ctx, &s, main_rows[4], os2, os1_half, BENCH_TARGET_NONE, 0.0, 2);
    hc_teardown(&s);
  }
  if (hc_any_selected(ctx, small_rows, 2)) {
    hc_setup(&s, HC_ENTITIES, WEFT_CHUNK_SIZE_MIN);
    bench_side_t w1_half = {"weft_1w_per_2", hc_weft_1w, &s, 2 * n, false};
    bench_side_t w2 = {"weft", hc_weft_2w, &s, n, false};
    bench_side_t os2 = {"omp_static_2t", hc_omp_static_2t, &s, n, false};
    hc_compare(ctx, &s, small_rows[0], w2, os2, BENCH_TARGET_NONE, 0.0, 0);
    hc_compare(ctx, &s, small_rows[1], w2, w1_half, BENCH_TARGET_NONE, 0.0, 2);
    hc_teardown(&s);
  }
}
