/* SPDX-License-Identifier: MIT */
/*
 * frag_iter: 26 archetypes of 20 entities each; every entity has Data (one
 * float) and one of 26 tags A..Z. One query on Data doubles every value,
 * visiting 26 small chunks. The baseline is 26 separately allocated arrays
 * of 20 floats, each doubled with the same kernel: a plain C program that
 * keeps 26 dynamically sized tables (a pointer and a run-time count each),
 * which is what an archetype store is. A baseline with the count fixed at
 * compile time would measure a different problem (static data), so it is
 * not used. Unit: ns per entity (520 per repetition).
 * The values overflow to infinity after ~128 repetitions; that costs
 * nothing on x86 SSE and both sides see it alike.
 */
#include <stdint.h>

#include <weft.h>

#include "harness.h"

enum { FRAG_KINDS = 26, FRAG_ROWS = 20 };

typedef struct frag_data_t {
  float v;
} frag_data_t;

typedef struct frag_state_t {
  weft_world_t *world;
  weft_query_t *query;
  float *arrays[FRAG_KINDS]; /* baseline */
  uint32_t counts[FRAG_KINDS];
} frag_state_t;

/* The kernel of both sides. gcc 12 -O3 -fopt-info-vec-optimized: "loop
 * vectorized using 16 byte vectors", no alias versioning (restrict). */
static inline void frag_scale(uint32_t n, float *restrict d) {
  for (uint32_t i = 0; i < n; ++i)
    d[i] *= 2.0f;
}

static uint64_t frag_weft(void *p, uint64_t reps) {
  frag_state_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    weft_iter_t it;
    weft_query_iter(s->query, &it);
    while (weft_iter_next(&it)) {
      float *d = weft_iter_column(&it, 0);
      frag_scale(it.count, d);
      sum += it.count;
    }
    bench_clobber();
  }
  return sum;
}

static uint64_t frag_base(void *p, uint64_t reps) {
  frag_state_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    for (int k = 0; k < FRAG_KINDS; ++k) {
      frag_scale(s->counts[k], s->arrays[k]);
      sum += s->counts[k];
    }
    bench_clobber();
  }
  return sum;
}

void bench_frag_iter(bench_ctx_t *ctx) {
  const char *name = "frag_iter";
  if (!bench_selected(ctx, name))
    return;

  frag_state_t s = {0};
  bench_check(weft_world_create(NULL, &s.world), "weft_world_create");
  weft_component_desc_t dd = WEFT_COMPONENT_DESC(frag_data_t);
  dd.name = "Data";
  weft_component_t data;
  bench_check(weft_component_register(s.world, &dd, &data), "registering Data");
  for (int k = 0; k < FRAG_KINDS; ++k) {
    char tag_name[2] = {(char)('A' + k), '\0'};
    weft_component_desc_t td = {.name = tag_name};
    weft_component_t tag;
    bench_check(weft_component_register(s.world, &td, &tag),
                "registering a tag");
    weft_component_t comps[3] = {data, tag, WEFT_COMPONENT_NONE};
    s.arrays[k] = bench_alloc(FRAG_ROWS * sizeof(float));
    s.counts[k] = FRAG_ROWS;
    for (int i = 0; i < FRAG_ROWS; ++i) {
      frag_data_t v = {(float)(k * FRAG_ROWS + i)};
      const void *values[2] = {&v, NULL};
      weft_entity_t e;
      bench_check(weft_spawn_with(s.world, comps, values, &e),
                  "weft_spawn_with");
      s.arrays[k][i] = v.v;
    }
  }
  weft_query_desc_t qd = {.include = {data}};
  bench_check(weft_query_create(s.world, &qd, &s.query), "weft_query_create");
  if (weft_query_count(s.query) != FRAG_KINDS * FRAG_ROWS ||
      weft_query_archetype_count(s.query) != FRAG_KINDS)
    bench_die("frag_iter setup (wrong query match)", WEFT_EINVAL);

  uint32_t n = FRAG_KINDS * FRAG_ROWS;
  bench_case_t c = {
      .name = name,
      .unit = "ns/entity",
      .n = n,
      .work = {"weft", frag_weft, &s, n},
      .base = {"c_26_arrays", frag_base, &s, n},
      .target_kind = BENCH_TARGET_RATIO,
      .target = 2.0,
  };
  bench_compare(ctx, &c);

  for (int k = 0; k < FRAG_KINDS; ++k)
    bench_free(s.arrays[k]);
  weft_world_destroy(s.world);
}
