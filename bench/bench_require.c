/* SPDX-License-Identifier: MIT */
/*
 * require/add: 10k entities with X; give each A, B and C and take them
 * away again. The weft side registers A as requiring B and C (with
 * defaults), so one weft_add() moves the row once and writes the three
 * values; the baseline adds plain A, B and C by hand, three weft_add()
 * calls with values. Both sides then remove A, B and C (three moves: a
 * removal leaves requirements in place, so they go one by one). Unit: ns
 * per entity and cycle; target <= 1.1x the baseline: a requirement costs
 * no more than adding what it requires by hand (it costs less: one move
 * instead of three).
 *
 * The baseline is weft too, not plain C: the question this row answers is
 * what requirements cost against the code a user would write without
 * them (add_remove measures a move against plain arrays).
 */
#include <stdint.h>

#include <weft.h>

#include "harness.h"

typedef struct rq_val_t {
  float v;
} rq_val_t;

typedef struct rq_side_t {
  weft_world_t *world;
  weft_component_t x, a, b, c;
  weft_entity_t *handles;
} rq_side_t;

typedef struct rq_state_t {
  uint32_t n;
  rq_side_t req, plain;
} rq_state_t;

static void rq_remove_all(const rq_side_t *s, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) {
    int rc = weft_remove(s->world, s->handles[i], s->a);
    rc = rc ? rc : weft_remove(s->world, s->handles[i], s->b);
    rc = rc ? rc : weft_remove(s->world, s->handles[i], s->c);
    if (rc != 0)
      bench_die("weft_remove", rc);
  }
}

static uint64_t rq_weft(void *p, uint64_t reps) {
  rq_state_t *st = p;
  const rq_side_t *s = &st->req;
  const rq_val_t av = {1.0f};
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    for (uint32_t i = 0; i < st->n; ++i) {
      int rc = weft_add(s->world, s->handles[i], s->a, &av);
      if (rc != 0)
        bench_die("weft_add", rc);
    }
    rq_remove_all(s, st->n);
    bench_clobber();
    sum += weft_world_count(s->world);
  }
  return sum;
}

static uint64_t rq_base(void *p, uint64_t reps) {
  rq_state_t *st = p;
  const rq_side_t *s = &st->plain;
  const rq_val_t av = {1.0f}, bv = {2.0f}, cv = {3.0f};
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    for (uint32_t i = 0; i < st->n; ++i) {
      int rc = weft_add(s->world, s->handles[i], s->a, &av);
      rc = rc ? rc : weft_add(s->world, s->handles[i], s->b, &bv);
      rc = rc ? rc : weft_add(s->world, s->handles[i], s->c, &cv);
      if (rc != 0)
        bench_die("weft_add", rc);
    }
    rq_remove_all(s, st->n);
    bench_clobber();
    sum += weft_world_count(s->world);
  }
  return sum;
}

/* A world with X, A, B, C and n entities with X; with requirements, A
 * requires B and C. */
static void rq_side_init(rq_side_t *s, uint32_t n, bool require) {
  bench_check(weft_world_create(NULL, &s->world), "weft_world_create");
  weft_component_t *ids[4] = {&s->x, &s->a, &s->b, &s->c};
  const char *names[4] = {"X", "A", "B", "C"};
  for (int k = 0; k < 4; ++k) {
    weft_component_desc_t d = WEFT_COMPONENT_DESC(rq_val_t);
    d.name = names[k];
    bench_check(weft_component_register(s->world, &d, ids[k]), "registering");
  }
  if (require) {
    const rq_val_t bv = {2.0f}, cv = {3.0f};
    bench_check(weft_component_require(s->world, s->a, s->b, &bv),
                "A requires B");
    bench_check(weft_component_require(s->world, s->a, s->c, &cv),
                "A requires C");
  }
  s->handles = bench_alloc(n * sizeof *s->handles);
  weft_component_t comps[2] = {s->x, WEFT_COMPONENT_NONE};
  for (uint32_t i = 0; i < n; ++i) {
    rq_val_t xv = {(float)i};
    const void *values[1] = {&xv};
    bench_check(weft_spawn_with(s->world, comps, values, &s->handles[i]),
                "weft_spawn_with");
  }
}

static void rq_side_fini(rq_side_t *s) {
  bench_free(s->handles);
  weft_world_destroy(s->world);
}

void bench_require(bench_ctx_t *ctx) {
  const char *name = "require/add";
  if (!bench_selected(ctx, name))
    return;
  rq_state_t s = {.n = 10000};
  rq_side_init(&s.req, s.n, true);
  rq_side_init(&s.plain, s.n, false);
  bench_case_t c = {
      .name = name,
      .unit = "ns/entity",
      .n = s.n,
      .work = {"weft_require", rq_weft, &s, (double)s.n},
      .base = {"weft_plain_abc", rq_base, &s, (double)s.n},
      .target_kind = BENCH_TARGET_RATIO,
      .target = 1.1,
  };
  bench_compare(ctx, &c);
  rq_side_fini(&s.req);
  rq_side_fini(&s.plain);
}
