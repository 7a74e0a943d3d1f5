/* SPDX-License-Identifier: MIT */
/*
 * simple_insert: 10k entities with Transform (float[16]), Position,
 * Rotation and Velocity (vec3 each). weft spawns them one by one with
 * weft_spawn_with() and then clears the world (chunks become spares,
 * so later repetitions allocate nothing); the baseline writes the same
 * values into four preallocated arrays. Unit: ns per entity.
 */
#include <stdint.h>

#include <weft.h>

#include "harness.h"

typedef struct bench_transform_t {
  float m[16];
} bench_transform_t;

typedef struct insert_state_t {
  uint32_t n;
  weft_world_t *world;
  weft_component_t comps[5]; /* zero-terminated */
  bench_transform_t *tf;     /* baseline arrays, 64-byte aligned */
  bench_vec3_t *pos;
  bench_vec3_t *rot;
  bench_vec3_t *vel;
} insert_state_t;

/* The transform of entity i: identity with translation (i, i, i). */
static inline bench_transform_t insert_transform(float f) {
  bench_transform_t t = {{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, f, f, f, 1}};
  return t;
}

static uint64_t insert_weft(void *p, uint64_t reps) {
  insert_state_t *s = p;
  uint64_t sum = 0;
  const bench_vec3_t unit_x = {1.0f, 0.0f, 0.0f};
  for (uint64_t r = 0; r < reps; ++r) {
    for (uint32_t i = 0; i < s->n; ++i) {
      float f = (float)i;
      bench_transform_t tf = insert_transform(f);
      bench_vec3_t pos = {f, f, f};
      const void *values[4] = {&tf, &pos, &unit_x, &unit_x};
      weft_entity_t e;
      int rc = weft_spawn_with(s->world, s->comps, values, &e);
      if (rc != 0)
        bench_die("weft_spawn_with", rc);
      sum += e;
    }
    weft_world_clear(s->world);
    bench_clobber();
  }
  return sum;
}

/*
 * Baseline: one pass per array, each a straight store stream.
 * Checked with gcc 12 -O3 -fopt-info-vec-optimized: all four loops are
 * vectorized ("loop vectorized using 16 byte vectors"; the transform and
 * the vec3 loops store interleaved groups of 16 and 3 floats).
 */
static void insert_arrays(uint32_t n, bench_transform_t *restrict tf,
                          bench_vec3_t *restrict pos,
                          bench_vec3_t *restrict rot,
                          bench_vec3_t *restrict vel) {
  for (uint32_t i = 0; i < n; ++i)
    tf[i] = insert_transform((float)i);
  for (uint32_t i = 0; i < n; ++i) {
    float f = (float)i;
    pos[i].x = f;
    pos[i].y = f;
    pos[i].z = f;
  }
  for (uint32_t i = 0; i < n; ++i) {
    rot[i].x = 1.0f;
    rot[i].y = 0.0f;
    rot[i].z = 0.0f;
  }
  for (uint32_t i = 0; i < n; ++i) {
    vel[i].x = 1.0f;
    vel[i].y = 0.0f;
    vel[i].z = 0.0f;
  }
}

static uint64_t insert_base(void *p, uint64_t reps) {
  insert_state_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    insert_arrays(s->n, s->tf, s->pos, s->rot, s->vel);
    bench_clobber();
    sum += bench_f32_bits(s->pos[s->n - 1].x) + s->n;
  }
  return sum;
}

static void insert_register(weft_world_t *w, weft_component_desc_t d,
                            weft_component_t *out) {
  bench_check(weft_component_register(w, &d, out), "registering component");
}

void bench_simple_insert(bench_ctx_t *ctx) {
  const char *name = "simple_insert";
  if (!bench_selected(ctx, name))
    return;

  insert_state_t s = {.n = 10000};
  bench_check(weft_world_create(NULL, &s.world), "weft_world_create");
  weft_component_desc_t t = WEFT_COMPONENT_DESC(bench_transform_t);
  t.name = "Transform";
  insert_register(s.world, t, &s.comps[0]);
  weft_component_desc_t d = WEFT_COMPONENT_DESC(bench_vec3_t);
  d.name = "Position";
  insert_register(s.world, d, &s.comps[1]);
  d.name = "Rotation";
  insert_register(s.world, d, &s.comps[2]);
  d.name = "Velocity";
  insert_register(s.world, d, &s.comps[3]);
  s.comps[4] = WEFT_COMPONENT_NONE;
  bench_check(weft_world_reserve(s.world, s.n), "weft_world_reserve");

  s.tf = bench_alloc(s.n * sizeof *s.tf);
  s.pos = bench_alloc(s.n * sizeof *s.pos);
  s.rot = bench_alloc(s.n * sizeof *s.rot);
  s.vel = bench_alloc(s.n * sizeof *s.vel);

  bench_case_t c = {
      .name = name,
      .unit = "ns/entity",
      .n = s.n,
      .work = {"weft", insert_weft, &s, s.n},
      .base = {"c_arrays_write", insert_base, &s, s.n},
  };
  bench_compare(ctx, &c);

  bench_free(s.tf);
  bench_free(s.pos);
  bench_free(s.rot);
  bench_free(s.vel);
  weft_world_destroy(s.world);
}
