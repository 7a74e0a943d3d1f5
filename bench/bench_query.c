/* SPDX-License-Identifier: MIT */
/*
 * query: what grouped and temporary queries cost against plain ones.
 *
 * query/group_iter: 26 archetypes (Data plus one of 26 tags) of
 * QUERY_ROWS entities each, iterated by a query whose group_by puts them
 * in reverse creation order, against an ungrouped query over the same
 * rows (which visits them in creation order). A grouped query keeps its
 * matches sorted by group, so both walk the same kind of flat cache: the
 * ratio should sit at 1 (target 1.05x). Same kernel as frag_iter. Unit:
 * ns per entity.
 *
 * query/temp_create: creating and destroying a temporary query against a
 * cached one, in a world of QUERY_ARCHS archetypes of which half match.
 * The temporary query matches the same archetypes but registers nowhere
 * and reserves no flat cache. Unit: ns per query (create + destroy).
 */
#include <stdint.h>

#include <weft.h>

#include "harness.h"

enum { QUERY_KINDS = 26, QUERY_ARCHS = 256 };

typedef struct query_data_t {
  float v;
} query_data_t;

typedef struct query_state_t {
  weft_world_t *world;
  weft_query_t *grouped;
  weft_query_t *plain;
  weft_query_desc_t desc; /* temp_create: what both sides create */
} query_state_t;

/* The kernel of both sides: the frag_iter one. */
static inline void query_scale(uint32_t n, float *restrict d) {
  for (uint32_t i = 0; i < n; ++i)
    d[i] *= 2.0f;
}

static inline uint64_t query_walk(const weft_query_t *q, uint64_t reps) {
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    weft_iter_t it;
    weft_query_iter(q, &it);
    while (weft_iter_next(&it)) {
      query_scale(it.count, weft_iter_column(&it, 0));
      sum += it.count;
    }
    bench_clobber();
  }
  return sum;
}

static uint64_t query_grouped(void *p, uint64_t reps) {
  return query_walk(((query_state_t *)p)->grouped, reps);
}

static uint64_t query_plain(void *p, uint64_t reps) {
  return query_walk(((query_state_t *)p)->plain, reps);
}

/* Reverse creation order: the later an archetype, the lower its group. */
static uint64_t query_reverse(weft_world_t *w, const weft_archetype_view_t *a,
                              void *ctx) {
  (void)w;
  (void)ctx;
  return UINT32_MAX - a->id;
}

static void query_group_iter(bench_ctx_t *ctx) {
  const char *name = "query/group_iter";
  if (!bench_selected(ctx, name))
    return;
  const uint32_t rows = ctx->quick ? 256 : 4096;
  query_state_t s = {0};
  bench_check(weft_world_create(NULL, &s.world), "weft_world_create");
  weft_component_desc_t dd = WEFT_COMPONENT_DESC(query_data_t);
  dd.name = "Data";
  weft_component_t data;
  bench_check(weft_component_register(s.world, &dd, &data), "registering Data");
  for (int k = 0; k < QUERY_KINDS; ++k) {
    char tag_name[2] = {(char)('A' + k), '\0'};
    weft_component_desc_t td = {.name = tag_name};
    weft_component_t tag;
    bench_check(weft_component_register(s.world, &td, &tag),
                "registering a tag");
    weft_component_t comps[3] = {data, tag, WEFT_COMPONENT_NONE};
    bench_check(weft_spawn_batch(s.world, rows, comps, NULL, NULL, NULL),
                "weft_spawn_batch");
  }
  weft_query_desc_t qd = {.include = {data}};
  bench_check(weft_query_create(s.world, &qd, &s.plain), "weft_query_create");
  qd.group_by = query_reverse;
  bench_check(weft_query_create(s.world, &qd, &s.grouped),
              "weft_query_create (grouped)");
  uint32_t n = QUERY_KINDS * rows;
  if (weft_query_count(s.grouped) != n || weft_query_count(s.plain) != n ||
      weft_query_groups(s.grouped, NULL, 0) != QUERY_KINDS)
    bench_die("query/group_iter setup (wrong query match)", WEFT_EINVAL);
  bench_case_t c = {
      .name = name,
      .unit = "ns/entity",
      .n = n,
      .work = {"weft_grouped", query_grouped, &s, n},
      .base = {"weft_ungrouped", query_plain, &s, n},
      .target_kind = BENCH_TARGET_RATIO,
      .target = 1.05,
  };
  bench_compare(ctx, &c);
  weft_world_destroy(s.world);
}

static uint64_t query_make(void *p, uint64_t reps, bool temp) {
  query_state_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    weft_query_t *q = NULL;
    int rc = temp ? weft_query_create_temp(s->world, &s->desc, &q)
                  : weft_query_create(s->world, &s->desc, &q);
    if (rc)
      bench_die("query/temp_create: creating a query", rc);
    sum += weft_query_archetype_count(q);
    weft_query_destroy(q);
    bench_clobber();
  }
  return sum;
}

static uint64_t query_temp(void *p, uint64_t reps) {
  return query_make(p, reps, true);
}

static uint64_t query_cached(void *p, uint64_t reps) {
  return query_make(p, reps, false);
}

static void query_temp_create(bench_ctx_t *ctx) {
  const char *name = "query/temp_create";
  if (!bench_selected(ctx, name))
    return;
  query_state_t s = {0};
  bench_check(weft_world_create(NULL, &s.world), "weft_world_create");
  weft_component_desc_t dd = WEFT_COMPONENT_DESC(query_data_t);
  dd.name = "Data";
  weft_component_t data;
  bench_check(weft_component_register(s.world, &dd, &data), "registering Data");
  /* 8 tags make 256 signatures; those with tag 0 carry Data. */
  weft_component_t tags[8];
  for (int k = 0; k < 8; ++k) {
    char tag_name[3] = {'T', (char)('0' + k), '\0'};
    weft_component_desc_t td = {.name = tag_name};
    bench_check(weft_component_register(s.world, &td, &tags[k]),
                "registering a tag");
  }
  for (uint32_t m = 0; m < QUERY_ARCHS; ++m) {
    weft_component_t comps[10];
    uint32_t n = 0;
    if (m & 1)
      comps[n++] = data;
    for (int k = 1; k < 8; ++k)
      if (m >> k & 1)
        comps[n++] = tags[k];
    comps[n++] = tags[0];
    comps[n] = WEFT_COMPONENT_NONE;
    bench_check(weft_spawn_batch(s.world, 4, comps, NULL, NULL, NULL),
                "weft_spawn_batch");
  }
  s.desc = (weft_query_desc_t){.include = {data}};
  bench_case_t c = {
      .name = name,
      .unit = "ns/query",
      .n = QUERY_ARCHS / 2,
      .work = {"weft_temp", query_temp, &s, 1},
      .base = {"weft_cached", query_cached, &s, 1},
      .target_kind = BENCH_TARGET_RATIO,
      .target = 1.0,
  };
  bench_compare(ctx, &c);
  weft_world_destroy(s.world);
}

void bench_query(bench_ctx_t *ctx) {
  query_group_iter(ctx);
  query_temp_create(ctx);
}
