/* SPDX-License-Identifier: MIT */
/*
 * add_remove: 10k entities with A; add B to all of them, then remove B from
 * all of them: two archetype moves per entity per repetition. Unit: ns per
 * move; target <= 12x a raw two-table move (a ratio rather than
 * nanoseconds, as the host's speed swings).
 *
 * The baseline is what an archetype move costs at the least: two tables
 * (entity | A) and (entity | A | B) as plain column arrays, and an index
 * from entity to row. A move appends the row to the other table, fills the
 * hole it leaves by moving the source table's last row into it
 * (swap-remove) and fixes the index for both entities.
 */
#include <stdint.h>

#include <weft.h>

#include "harness.h"

typedef struct ar_a_t {
  float v;
} ar_a_t;
typedef struct ar_b_t {
  float v;
} ar_b_t;

/* One plain table: entity ids and up to two columns. */
typedef struct ar_table_t {
  uint32_t *entity;
  float *a;
  float *b; /* NULL in the (entity | A) table */
  uint32_t count;
} ar_table_t;

typedef struct ar_state_t {
  uint32_t n;
  weft_world_t *world;
  weft_component_t a, b;
  weft_entity_t *handles;
  ar_table_t t1, t2;
  uint32_t *row; /* baseline index: entity -> row in its table */
} ar_state_t;

static uint64_t ar_weft(void *p, uint64_t reps) {
  ar_state_t *s = p;
  const ar_b_t bv = {1.0f};
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    for (uint32_t i = 0; i < s->n; ++i) {
      int rc = weft_add(s->world, s->handles[i], s->b, &bv);
      if (rc != 0)
        bench_die("weft_add", rc);
    }
    for (uint32_t i = 0; i < s->n; ++i) {
      int rc = weft_remove(s->world, s->handles[i], s->b);
      if (rc != 0)
        bench_die("weft_remove", rc);
    }
    bench_clobber();
    sum += weft_world_count(s->world);
  }
  return sum;
}

/*
 * Moves entity e's row from table src to table dst, writing B from @p bv
 * when dst has it. The direction is a compile-time constant at both call
 * sites, so the B branches fold away. Not vectorizable and not meant to
 * be: each move is a handful of dependent scalar loads and stores through
 * the index (-fopt-info-vec-optimized reports no loop here, as expected).
 */
static inline void ar_move(ar_table_t *restrict src, ar_table_t *restrict dst,
                           uint32_t *restrict row, uint32_t e, float bv,
                           bool to_b) {
  uint32_t from = row[e];
  uint32_t to = dst->count++;
  dst->entity[to] = e;
  dst->a[to] = src->a[from];
  if (to_b)
    dst->b[to] = bv;
  row[e] = to;
  uint32_t last = --src->count;
  if (from != last) {
    uint32_t moved = src->entity[last];
    src->entity[from] = moved;
    src->a[from] = src->a[last];
    if (!to_b)
      src->b[from] = src->b[last];
    row[moved] = from;
  }
}

static uint64_t ar_base(void *p, uint64_t reps) {
  ar_state_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    for (uint32_t e = 0; e < s->n; ++e)
      ar_move(&s->t1, &s->t2, s->row, e, 1.0f, true);
    for (uint32_t e = 0; e < s->n; ++e)
      ar_move(&s->t2, &s->t1, s->row, e, 0.0f, false);
    bench_clobber();
    sum += s->t1.count;
  }
  return sum;
}

void bench_add_remove(bench_ctx_t *ctx) {
  const char *name = "add_remove";
  if (!bench_selected(ctx, name))
    return;

  ar_state_t s = {.n = 10000};
  bench_check(weft_world_create(NULL, &s.world), "weft_world_create");
  weft_component_desc_t d = WEFT_COMPONENT_DESC(ar_a_t);
  d.name = "A";
  bench_check(weft_component_register(s.world, &d, &s.a), "registering A");
  d = WEFT_COMPONENT_DESC(ar_b_t);
  d.name = "B";
  bench_check(weft_component_register(s.world, &d, &s.b), "registering B");
  s.handles = bench_alloc(s.n * sizeof *s.handles);
  weft_component_t comps[2] = {s.a, WEFT_COMPONENT_NONE};
  for (uint32_t i = 0; i < s.n; ++i) {
    ar_a_t av = {(float)i};
    const void *values[1] = {&av};
    bench_check(weft_spawn_with(s.world, comps, values, &s.handles[i]),
                "weft_spawn_with");
  }

  s.t1.entity = bench_alloc(s.n * sizeof(uint32_t));
  s.t1.a = bench_alloc(s.n * sizeof(float));
  s.t2.entity = bench_alloc(s.n * sizeof(uint32_t));
  s.t2.a = bench_alloc(s.n * sizeof(float));
  s.t2.b = bench_alloc(s.n * sizeof(float));
  s.row = bench_alloc(s.n * sizeof(uint32_t));
  for (uint32_t i = 0; i < s.n; ++i) {
    s.t1.entity[i] = i;
    s.t1.a[i] = (float)i;
    s.row[i] = i;
  }
  s.t1.count = s.n;

  bench_case_t c = {
      .name = name,
      .unit = "ns/move",
      .n = s.n,
      .work = {"weft", ar_weft, &s, 2.0 * s.n},
      .base = {"c_two_table_move", ar_base, &s, 2.0 * s.n},
      .target_kind = BENCH_TARGET_RATIO,
      .target = 12.0,
  };
  bench_compare(ctx, &c);

  bench_free(s.t1.entity);
  bench_free(s.t1.a);
  bench_free(s.t2.entity);
  bench_free(s.t2.a);
  bench_free(s.t2.b);
  bench_free(s.row);
  bench_free(s.handles);
  weft_world_destroy(s.world);
}
