/* SPDX-License-Identifier: MIT */
/*
 * simple_iter: pos += vel * dt over every entity with Position and
 * Velocity (vec3 of floats), at 10k, 1M and 16M entities (10k, 100k and 1M
 * with --quick), in worlds with the default 16 KiB chunks and, for the
 * large sizes, with 1 MiB chunks ("/chunk1M") or iterating runs of
 * contiguous chunks (WEFT_QUERY_CHUNK_RUNS, "/runs"). Unit: ns per entity.
 *
 * soa: both components are registered WEFT_COMPONENT_SOA with fields x, y,
 * z, so each chunk hands out six float arrays; the baseline is six plain
 * float arrays. aos: plain components (one array of vec3 per chunk), whose
 * update is an element-wise loop over 3 * count floats; the baseline is two
 * plain vec3 arrays updated the same way. Both sides run the same kernel:
 * weft once per chunk, the baseline once over the whole array, so the ratio
 * is exactly what chunked iteration costs.
 *
 * system: the soa work through a registered system (FixedUpdate, the
 * position term written, the velocity term read) and one
 * weft_world_progress() per repetition on a world without a pool,
 * configured so that each frame runs exactly one fixed step: what the
 * default system path costs on top of the loop (per-call dispatch, change
 * stamping, command keys, the frame's phases), against the same six
 * plain float arrays.
 */
#include <stdint.h>
#include <stdio.h>

#include <weft.h>

#include "harness.h"

#define ITER_DT (1.0f / 60.0f)

_Static_assert(sizeof(bench_vec3_t) == 3 * sizeof(float),
               "vec3 must be three packed floats");

typedef struct iter_state_t {
  uint32_t n;
  uint32_t chunk; /* world chunk size, 0 for the default */
  uint32_t flags; /* query flags (WEFT_QUERY_CHUNK_RUNS) */
  bool soa;
  bool sys; /* through a system and weft_world_progress() */
  weft_world_t *world;
  weft_query_t *query;
  uint32_t pf[3], vf[3]; /* field indices of x, y, z (soa) */
  float *b[6];           /* baseline: px py pz vx vy vz, or pos vel (aos) */
} iter_state_t;

static uint64_t iter_weft_soa(void *p, uint64_t reps) {
  iter_state_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    weft_iter_t it;
    weft_query_iter(s->query, &it);
    while (weft_iter_next(&it)) {
      /* Both components list fields x, y, z in that order (pf/vf). */
      void *pos[WEFT_MAX_FIELDS], *vel[WEFT_MAX_FIELDS];
      weft_iter_fields(&it, 0, pos);
      weft_iter_fields(&it, 1, vel);
      bench_integrate_soa(it.count, pos[s->pf[0]], pos[s->pf[1]], pos[s->pf[2]],
                          vel[s->vf[0]], vel[s->vf[1]], vel[s->vf[2]], ITER_DT);
      sum += bench_f32_bits(((const float *)pos[s->pf[0]])[0]);
    }
    bench_clobber();
  }
  return sum;
}

static int iter_system(weft_sysctx_t *ctx, const weft_iter_t *it) {
  const iter_state_t *s = ctx->user;
  void *pos[WEFT_MAX_FIELDS], *vel[WEFT_MAX_FIELDS];
  weft_iter_fields(it, 0, pos);
  weft_iter_fields(it, 1, vel);
  bench_integrate_soa(it->count, pos[s->pf[0]], pos[s->pf[1]], pos[s->pf[2]],
                      vel[s->vf[0]], vel[s->vf[1]], vel[s->vf[2]], ITER_DT);
  return 0;
}

static uint64_t iter_weft_system(void *p, uint64_t reps) {
  iter_state_t *s = p;
  for (uint64_t r = 0; r < reps; ++r) {
    int rc = weft_world_progress(s->world, ITER_DT);
    if (rc != 0)
      bench_die("weft_world_progress", rc);
    bench_clobber();
  }
  weft_pipeline_state_t st;
  weft_pipeline_state(s->world, &st);
  return st.tick;
}

static uint64_t iter_weft_aos(void *p, uint64_t reps) {
  iter_state_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    weft_iter_t it;
    weft_query_iter(s->query, &it);
    while (weft_iter_next(&it)) {
      float *pos = weft_iter_column(&it, 0);
      const float *vel = weft_iter_column(&it, 1);
      bench_integrate_flat(3 * it.count, pos, vel, ITER_DT);
      sum += bench_f32_bits(pos[0]);
    }
    bench_clobber();
  }
  return sum;
}

static uint64_t iter_base_soa(void *p, uint64_t reps) {
  iter_state_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    bench_integrate_soa(s->n, s->b[0], s->b[1], s->b[2], s->b[3], s->b[4],
                        s->b[5], ITER_DT);
    bench_clobber();
    sum += bench_f32_bits(s->b[0][0]);
  }
  return sum;
}

static uint64_t iter_base_aos(void *p, uint64_t reps) {
  iter_state_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    bench_integrate_flat(3 * s->n, s->b[0], s->b[1], ITER_DT);
    bench_clobber();
    sum += bench_f32_bits(s->b[0][0]);
  }
  return sum;
}

/* Initial values of entity i. */
static inline bench_vec3_t iter_pos0(uint32_t i) {
  float f = (float)i;
  return (bench_vec3_t){f, 0.5f * f, 0.25f * f};
}
static const bench_vec3_t iter_vel0 = {1.0f, 2.0f, 3.0f};

static void iter_fill_soa(void *user, const weft_iter_t *view, uint32_t first) {
  const iter_state_t *s = user;
  float *p[3], *v[3];
  for (int k = 0; k < 3; ++k) {
    p[k] = weft_iter_field(view, 0, s->pf[k]);
    v[k] = weft_iter_field(view, 1, s->vf[k]);
  }
  for (uint32_t i = 0; i < view->count; ++i) {
    bench_vec3_t q = iter_pos0(first + i);
    p[0][i] = q.x;
    p[1][i] = q.y;
    p[2][i] = q.z;
    v[0][i] = iter_vel0.x;
    v[1][i] = iter_vel0.y;
    v[2][i] = iter_vel0.z;
  }
}

static void iter_fill_aos(void *user, const weft_iter_t *view, uint32_t first) {
  (void)user;
  bench_vec3_t *pos = view->columns[0], *vel = view->columns[1];
  for (uint32_t i = 0; i < view->count; ++i) {
    pos[i] = iter_pos0(first + i);
    vel[i] = iter_vel0;
  }
}

static void iter_setup(iter_state_t *s) {
  weft_world_config_t cfg = {.chunk_size = s->chunk};
  bench_check(weft_world_create(&cfg, &s->world), "weft_world_create");
  static const char *const fields[3] = {"x", "y", "z"};
  weft_field_desc_t fd[3] = {WEFT_FIELD(bench_vec3_t, x),
                             WEFT_FIELD(bench_vec3_t, y),
                             WEFT_FIELD(bench_vec3_t, z)};
  weft_component_desc_t d = WEFT_COMPONENT_DESC(bench_vec3_t);
  if (s->soa) {
    d.fields = fd;
    d.field_count = 3;
    d.flags = WEFT_COMPONENT_SOA;
  }
  weft_component_t comps[3] = {0, 0, WEFT_COMPONENT_NONE};
  bench_register_pos_vel(s->world, d, comps);
  if (s->soa) {
    for (int k = 0; k < 3; ++k) {
      bench_check(
          weft_component_field(s->world, comps[0], fields[k], &s->pf[k]),
          "weft_component_field");
      bench_check(
          weft_component_field(s->world, comps[1], fields[k], &s->vf[k]),
          "weft_component_field");
    }
  }
  bench_check(weft_world_reserve(s->world, s->n), "weft_world_reserve");
  bench_check(weft_spawn_batch(s->world, s->n, comps,
                               s->soa ? iter_fill_soa : iter_fill_aos, s, NULL),
              "weft_spawn_batch");
  weft_query_desc_t qd = {.include = {comps[0], comps[1]}, .flags = s->flags};
  bench_check(weft_query_create(s->world, &qd, &s->query), "weft_query_create");
  if (weft_query_count(s->query) != s->n)
    bench_die("weft_query_count (wrong entity count)", WEFT_EINVAL);
  if (s->sys) {
    weft_pipeline_config_t pc = {.fixed_dt = ITER_DT};
    bench_check(weft_pipeline_configure(s->world, &pc),
                "weft_pipeline_configure");
    weft_system_desc_t sd = {
        .name = "integrate",
        .query = qd,
        .term_access = {WEFT_ACCESS_WRITE, WEFT_ACCESS_READ},
        .run = iter_system,
        .user = s};
    weft_system_t id;
    bench_check(weft_system_register(s->world, &sd, &id),
                "weft_system_register");
    bench_check(weft_schedule_build(s->world), "weft_schedule_build");
  }

  if (s->soa) {
    for (int k = 0; k < 6; ++k)
      s->b[k] = bench_alloc((size_t)s->n * sizeof(float));
    for (uint32_t i = 0; i < s->n; ++i) {
      bench_vec3_t q = iter_pos0(i);
      s->b[0][i] = q.x;
      s->b[1][i] = q.y;
      s->b[2][i] = q.z;
      s->b[3][i] = iter_vel0.x;
      s->b[4][i] = iter_vel0.y;
      s->b[5][i] = iter_vel0.z;
    }
  } else {
    bench_vec3_t *pos = bench_alloc((size_t)s->n * sizeof *pos);
    bench_vec3_t *vel = bench_alloc((size_t)s->n * sizeof *vel);
    for (uint32_t i = 0; i < s->n; ++i) {
      pos[i] = iter_pos0(i);
      vel[i] = iter_vel0;
    }
    s->b[0] = &pos[0].x;
    s->b[1] = &vel[0].x;
  }
}

static void iter_teardown(iter_state_t *s) {
  for (int k = 0; k < 6; ++k)
    bench_free(s->b[k]);
  weft_world_destroy(s->world); /* frees the query too */
}

static void iter_run_ex(bench_ctx_t *ctx, uint32_t n, bool soa, bool sys,
                        uint32_t chunk, uint32_t flags, double target) {
  char label[16], name[64];
  bench_size_label(label, sizeof label, n);
  snprintf(name, sizeof name, "simple_iter/%s/%s%s%s",
           sys   ? "system"
           : soa ? "soa"
                 : "aos",
           label, chunk ? "/chunk1M" : "",
           (flags & WEFT_QUERY_CHUNK_RUNS) ? "/runs" : "");
  if (!bench_selected(ctx, name))
    return;

  iter_state_t s = {
      .n = n, .soa = soa, .sys = sys, .chunk = chunk, .flags = flags};
  iter_setup(&s);
  bench_case_t c = {
      .name = name,
      .unit = "ns/entity",
      .n = n,
      .work = {"weft",
               sys   ? iter_weft_system
               : soa ? iter_weft_soa
                     : iter_weft_aos,
               &s, n},
      .base = {soa ? "c_soa_arrays" : "c_aos_arrays",
               soa ? iter_base_soa : iter_base_aos, &s, n},
      .target_kind = target > 0 ? BENCH_TARGET_RATIO : BENCH_TARGET_NONE,
      .target = target,
  };
  bench_compare(ctx, &c);
  iter_teardown(&s);
}

static void iter_run(bench_ctx_t *ctx, uint32_t n, bool soa, uint32_t chunk,
                     uint32_t flags, double target) {
  iter_run_ex(ctx, n, soa, false, chunk, flags, target);
}

void bench_simple_iter(bench_ctx_t *ctx) {
  const uint32_t small = 10000;
  const uint32_t mid = ctx->quick ? 100000 : 1000000;
  const uint32_t big = ctx->quick ? 1000000 : 16000000;
  /* The default 16 KiB chunks carry the targets; worlds configured with
   * 1 MiB chunks are shown for comparison (chunks of one archetype are
   * laid out column-major, so the chunk size should barely matter). */
  iter_run(ctx, small, true, 0, 0, 1.1);
  iter_run(ctx, mid, true, 0, 0, 1.05);
  iter_run(ctx, big, true, 0, 0, 1.05);
  iter_run(ctx, mid, true, WEFT_CHUNK_SIZE_MAX, 0, 0.0);
  iter_run(ctx, big, true, WEFT_CHUNK_SIZE_MAX, 0, 0.0);
  iter_run(ctx, mid, true, 0, WEFT_QUERY_CHUNK_RUNS, 0.0);
  iter_run(ctx, big, true, 0, WEFT_QUERY_CHUNK_RUNS, 0.0);
  iter_run(ctx, mid, false, 0, 0, 0.0); /* informational: no target */
  iter_run_ex(ctx, small, true, true, 0, 0, 1.15);
  iter_run_ex(ctx, mid, true, true, 0, 0, 1.03);
  /* The same system handed runs of chunks: what the default path is
   * measured against (issue: "as cheap as the best one"). */
  iter_run_ex(ctx, small, true, true, 0, WEFT_QUERY_CHUNK_RUNS, 0.0);
}
