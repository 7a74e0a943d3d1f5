/* SPDX-License-Identifier: MIT */
/*
 * get: random access by handle. 1M entities (100k with --quick) with one
 * 16-byte component; a shuffled array of their handles is walked and the
 * id field of each entity's component, fetched with weft_get(), is summed.
 * Unit: ns per get. Its baseline is get_floor's walk (below), run in the
 * same rounds, so the ratio is get over its floor, round by round; target
 * <= 3x. (A two-level lookup cannot come near a one-level array read, so
 * its target is set against the least a validated lookup costs.)
 *
 * get_many: the same walk through weft_get_many() in blocks of
 * GET_BLOCK handles (resolve a block, then sum it), the API meant for
 * random access at scale: it overlaps the misses of independent lookups.
 * Its baseline is get_floor_pf's walk; target <= 1.5x.
 *
 * has_many: the same walk through weft_has_many() in blocks of GET_BLOCK
 * handles, counting the entities that have the component: a batch of
 * validated lookups that reads no value. Against get_floor_pf's walk, as
 * get_many; no target; read it against get_many.
 *
 * get_floor: no weft at all. The least a validated handle lookup costs:
 * the same walk through an 8-byte record per entity that holds the
 * generation and the row, then the row's data, as plain C, against the
 * plain one-level walk: the sum of the same field of an array of structs
 * through the same shuffled permutation of plain indices. Both loads miss
 * at 1M, and the second depends on the first, so this ratio is what a
 * second level costs on this machine; no target. (weft's 4-byte records
 * trade a third line per lookup, the handle stored at the row, for 4
 * bytes less per entity.)
 *
 * get_floor_pf: get_floor with the pipelining get_many does: each
 * lookup prefetches the record GET_PF_RECORDS handles ahead and the row
 * GET_PF_ROWS ahead, so the dependent misses of many lookups overlap. It
 * reads two lines per lookup where the one-level walk reads one; against
 * that walk, no target.
 */
#include <stdint.h>
#include <stdio.h>

#include <weft.h>

#include "harness.h"

#define GET_SEED UINT64_C(0x5eed0f6e7)
#define GET_BLOCK 256u
#define GET_PF_RECORDS 64u
#define GET_PF_ROWS 16u

typedef struct get_data_t {
  uint32_t id;
  float x, y, z;
} get_data_t;

typedef struct get_state_t {
  uint32_t n;
  weft_world_t *world;
  weft_component_t comp;
  weft_entity_t *handles; /* shuffled */
  get_data_t *data;       /* baseline array of structs */
  uint32_t *order;        /* baseline: the same shuffled permutation */
  uint64_t *records;      /* get_floor: entity -> row, 8 bytes each */
} get_state_t;

/* The walk over locals, as the floors' walks take their arrays as
 * arguments: through s, every call on the miss path would make the
 * compiler load s's fields again for the next handle. */
static uint64_t get_walk_weft(const weft_world_t *w,
                              const weft_entity_t *restrict handles, uint32_t n,
                              weft_component_t c) {
  uint64_t sum = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const get_data_t *d = weft_get(w, handles[i], c);
    if (!d)
      bench_die("weft_get", WEFT_ESTALE);
    sum += d->id;
  }
  return sum;
}

static uint64_t get_weft(void *p, uint64_t reps) {
  get_state_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    sum += get_walk_weft(s->world, s->handles, s->n, s->comp);
    bench_clobber();
  }
  return sum;
}

static uint64_t get_weft_many(void *p, uint64_t reps) {
  get_state_t *s = p;
  uint64_t sum = 0;
  const void *ptrs[GET_BLOCK];
  for (uint64_t r = 0; r < reps; ++r) {
    for (uint32_t i = 0; i < s->n; i += GET_BLOCK) {
      uint32_t k = s->n - i < GET_BLOCK ? s->n - i : GET_BLOCK;
      if (weft_get_many(s->world, s->handles + i, k, s->comp, ptrs) != k)
        bench_die("weft_get_many", WEFT_ESTALE);
      for (uint32_t j = 0; j < k; ++j)
        sum += ((const get_data_t *)ptrs[j])->id;
    }
    bench_clobber();
  }
  return sum;
}

static uint64_t get_weft_has_many(void *p, uint64_t reps) {
  get_state_t *s = p;
  uint64_t sum = 0;
  bool has[GET_BLOCK];
  for (uint64_t r = 0; r < reps; ++r) {
    for (uint32_t i = 0; i < s->n; i += GET_BLOCK) {
      uint32_t k = s->n - i < GET_BLOCK ? s->n - i : GET_BLOCK;
      if (weft_has_many(s->world, s->handles + i, k, s->comp, has) != k)
        bench_die("weft_has_many", WEFT_ESTALE);
      for (uint32_t j = 0; j < k; j++)
        sum += has[j];
    }
    bench_clobber();
  }
  return sum;
}

/*
 * The baseline: an indexed load per element. gcc 12 -O3
 * -fopt-info-vec-optimized: "loop vectorized using 16 byte vectors" (an
 * emulated gather: scalar loads feeding 64-bit vector adds). Measured on
 * its own at 1M that form is ~2x faster than -fno-tree-vectorize (more
 * cache misses in flight), so it is the one we compare against.
 */
static uint64_t get_sum(uint32_t n, const get_data_t *restrict data,
                        const uint32_t *restrict order) {
  uint64_t sum = 0;
  for (uint32_t i = 0; i < n; ++i)
    sum += data[order[i]].id;
  return sum;
}

/* The floor: entity -> record -> row. gcc 12 -O3 -fopt-info-vec-all: "not
 * vectorized: no vectype for stmt" (the load indexed by a load indexed by
 * a load has no emulated gather), so it stays scalar; its loads overlap
 * only as far as the out-of-order window reaches. */
static uint64_t get_two_level(uint32_t n, const get_data_t *restrict data,
                              const uint64_t *restrict records,
                              const uint32_t *restrict order) {
  uint64_t sum = 0;
  for (uint32_t i = 0; i < n; ++i)
    sum += data[(uint32_t)records[order[i]]].id;
  return sum;
}

/* The pipelined floor: get_two_level's loads, with the prefetches that
 * overlap them across lookups. Scalar, as get_two_level ("control flow in
 * loop"). */
static uint64_t get_two_level_pf(uint32_t n, const get_data_t *restrict data,
                                 const uint64_t *restrict records,
                                 const uint32_t *restrict order) {
  uint64_t sum = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (i + GET_PF_RECORDS < n)
      __builtin_prefetch(&records[order[i + GET_PF_RECORDS]]);
    if (i + GET_PF_ROWS < n)
      __builtin_prefetch(&data[(uint32_t)records[order[i + GET_PF_ROWS]]]);
    sum += data[(uint32_t)records[order[i]]].id;
  }
  return sum;
}

/* One of the floors' walks, over the state's arrays. */
typedef uint64_t (*get_walk_fn)(uint32_t n, const get_data_t *restrict data,
                                const uint64_t *restrict records,
                                const uint32_t *restrict order);

static uint64_t get_walks(const get_state_t *s, uint64_t reps,
                          get_walk_fn walk) {
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    sum += walk(s->n, s->data, s->records, s->order);
    bench_clobber();
  }
  return sum;
}

static uint64_t get_floor(void *p, uint64_t reps) {
  return get_walks(p, reps, get_two_level);
}

static uint64_t get_floor_pf(void *p, uint64_t reps) {
  return get_walks(p, reps, get_two_level_pf);
}

static uint64_t get_base(void *p, uint64_t reps) {
  get_state_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    sum += get_sum(s->n, s->data, s->order);
    bench_clobber();
  }
  return sum;
}

static void get_fill(void *user, const weft_iter_t *view, uint32_t first) {
  (void)user;
  get_data_t *d = view->columns[0];
  for (uint32_t i = 0; i < view->count; ++i)
    d[i] = (get_data_t){first + i, 1.0f, 2.0f, 3.0f};
}

void bench_get(bench_ctx_t *ctx) {
  uint32_t n = ctx->quick ? 100000 : 1000000;
  char label[16], name[64];
  bench_size_label(label, sizeof label, n);
  char many[64], has_name[64], floor_name[64], pf_name[64];
  snprintf(name, sizeof name, "get/%s", label);
  snprintf(many, sizeof many, "get_many/%s", label);
  snprintf(has_name, sizeof has_name, "has_many/%s", label);
  snprintf(floor_name, sizeof floor_name, "get_floor/%s", label);
  snprintf(pf_name, sizeof pf_name, "get_floor_pf/%s", label);
  if (!bench_selected(ctx, name) && !bench_selected(ctx, many) &&
      !bench_selected(ctx, has_name) && !bench_selected(ctx, floor_name) &&
      !bench_selected(ctx, pf_name))
    return;

  get_state_t s = {.n = n};
  bench_check(weft_world_create(NULL, &s.world), "weft_world_create");
  weft_component_desc_t d = WEFT_COMPONENT_DESC(get_data_t);
  d.name = "GetData";
  bench_check(weft_component_register(s.world, &d, &s.comp),
              "registering GetData");
  weft_component_t comps[2] = {s.comp, WEFT_COMPONENT_NONE};
  s.handles = bench_alloc((size_t)n * sizeof *s.handles);
  bench_check(weft_world_reserve(s.world, n), "weft_world_reserve");
  bench_check(weft_spawn_batch(s.world, n, comps, get_fill, NULL, s.handles),
              "weft_spawn_batch");

  s.data = bench_alloc((size_t)n * sizeof *s.data);
  s.order = bench_alloc((size_t)n * sizeof *s.order);
  s.records = bench_alloc((size_t)n * sizeof *s.records);
  for (uint32_t i = 0; i < n; ++i) {
    s.data[i] = (get_data_t){i, 1.0f, 2.0f, 3.0f};
    s.order[i] = i;
    s.records[i] = (uint64_t)1 << 32 | i; /* a generation, and the row */
  }
  /* Shuffle the permutation, then apply it to the handles so that both
   * sides visit entities in the same order. */
  bench_shuffle_u32(s.order, n, GET_SEED);
  weft_entity_t *spawned = s.handles;
  s.handles = bench_alloc((size_t)n * sizeof *s.handles);
  for (uint32_t i = 0; i < n; ++i)
    s.handles[i] = spawned[s.order[i]];
  bench_free(spawned);

  const bench_side_t floor = {"c_two_level", get_floor, &s, n, false};
  const bench_side_t floor_pf = {"c_two_level_pf", get_floor_pf, &s, n, false};
  const bench_side_t one_level = {"c_shuffled_index", get_base, &s, n, false};
  bench_case_t c = {
      .name = name,
      .unit = "ns/get",
      .n = n,
      .work = {"weft", get_weft, &s, n, false},
      .base = floor,
      .target_kind = BENCH_TARGET_RATIO,
      .target = 3.0,
  };
  if (bench_selected(ctx, name))
    bench_compare(ctx, &c);
  if (bench_selected(ctx, many)) {
    c.name = many;
    c.work = (bench_side_t){"weft_get_many", get_weft_many, &s, n, false};
    c.base = floor_pf;
    c.target = 1.5;
    bench_compare(ctx, &c);
  }
  if (bench_selected(ctx, has_name)) {
    c.name = has_name;
    c.unit = "ns/has";
    c.work = (bench_side_t){"weft_has_many", get_weft_has_many, &s, n, false};
    c.base = floor_pf;
    c.target_kind = BENCH_TARGET_NONE;
    bench_compare(ctx, &c);
    c.unit = "ns/get";
  }
  c.base = one_level;
  c.target_kind = BENCH_TARGET_NONE;
  if (bench_selected(ctx, floor_name)) {
    c.name = floor_name;
    c.work = floor;
    bench_compare(ctx, &c);
  }
  if (bench_selected(ctx, pf_name)) {
    c.name = pf_name;
    c.work = floor_pf;
    bench_compare(ctx, &c);
  }

  bench_free(s.handles);
  bench_free(s.data);
  bench_free(s.order);
  bench_free(s.records);
  weft_world_destroy(s.world);
}
