/* SPDX-License-Identifier: MIT */
/*
 * hierarchy: transform propagation down a tree (systems/transform.c).
 * 12 roots, each with 4 children per node down to depth 8: 1,048,572
 * entities (3 roots, 262,140 with --quick), spawned breadth-first with a
 * LocalTransform and a WorldTransform and a weft.ChildOf edge to their
 * parent. One repetition is weft_hierarchy_update() on a world without a
 * pool: the plan stands (no structural change between repetitions), so it
 * is the propagation itself, level after level. Unit: ns per entity.
 *
 * Baseline: plain C over three arrays in the same breadth-first order
 * (local and world transforms, 64-byte aligned, and each node's parent
 * index), roots copied, every other node composed from its parent's world
 * transform, the same arithmetic in the same order. Target <= 1.5x.
 */
#include <stdint.h>
#include <stdio.h>

#include <weft.h>
#include <weft/builtin.h>
#include <weft/relation.h>

#include "harness.h"

#define HIER_FANOUT 4u
#define HIER_DEPTH 8u

typedef struct hier_state_t {
  uint32_t n, roots;
  weft_world_t *world;
  weft_hierarchy_t *h;
  weft_hierarchy_ids_t ids;
  weft_entity_t last;
  weft_transform2_t *local, *wt; /* baseline, breadth-first */
  uint32_t *parent;
} hier_state_t;

static weft_transform2_t hier_local(uint32_t i) {
  /* A small rotation and a scale near 1 keep values finite at depth 8. */
  float a = (float)(i % 13) * 0.01f;
  weft_transform2_t t = {(float)(i % 7), (float)(i % 5), 1.0f - a * a * 0.5f, a,
                         1.0f + (float)(i % 3) * 0.01f};
  return t;
}

BENCH_KERNEL static void hier_propagate(uint32_t n, uint32_t roots,
                                        const uint32_t *restrict parent,
                                        const weft_transform2_t *restrict l,
                                        weft_transform2_t *restrict w) {
  for (uint32_t i = 0; i < roots; i++)
    w[i] = l[i];
  for (uint32_t i = roots; i < n; i++) {
    const weft_transform2_t *p = &w[parent[i]], *q = &l[i];
    float ox = p->scale * (p->c * q->x - p->s * q->y);
    float oy = p->scale * (p->s * q->x + p->c * q->y);
    weft_transform2_t r = {p->x + ox, p->y + oy, p->c * q->c - p->s * q->s,
                           p->s * q->c + p->c * q->s, p->scale * q->scale};
    w[i] = r;
  }
}

static uint64_t hier_base(void *state, uint64_t reps) {
  hier_state_t *s = state;
  for (uint64_t r = 0; r < reps; r++) {
    hier_propagate(s->n, s->roots, s->parent, s->local, s->wt);
    bench_clobber();
  }
  return bench_f32_bits(s->wt[s->n - 1].x);
}

static uint64_t hier_weft(void *state, uint64_t reps) {
  hier_state_t *s = state;
  for (uint64_t r = 0; r < reps; r++) {
    bench_check(weft_hierarchy_update(s->h), "weft_hierarchy_update");
    bench_clobber();
  }
  const weft_transform2_t *t = weft_get(s->world, s->last, s->ids.world);
  return t ? bench_f32_bits(t->x) : 0;
}

typedef struct hier_fill_t {
  uint32_t base;
} hier_fill_t;

static void hier_fill(void *user, const weft_iter_t *v, uint32_t first) {
  const hier_fill_t *f = user;
  weft_transform2_t *l = v->columns[0], *w = v->columns[1];
  for (uint32_t i = 0; i < v->count; i++) {
    l[i] = hier_local(f->base + first + i);
    w[i] = (weft_transform2_t){0, 0, 1, 0, 1};
  }
}

void bench_hierarchy(bench_ctx_t *ctx) {
  hier_state_t s = {.roots = ctx->quick ? 3u : 12u};
  uint32_t per_root = 0, width = 1;
  for (uint32_t d = 0; d <= HIER_DEPTH; d++, width *= HIER_FANOUT)
    per_root += width;
  s.n = s.roots * per_root;
  char label[16], name[64];
  bench_size_label(label, sizeof label, s.n);
  snprintf(name, sizeof name, "hierarchy/propagate/%s", label);
  if (!bench_selected(ctx, name))
    return;

  s.local = bench_alloc((size_t)s.n * sizeof *s.local);
  s.wt = bench_alloc((size_t)s.n * sizeof *s.wt);
  s.parent = bench_alloc((size_t)s.n * sizeof *s.parent);
  /* Breadth-first numbering: node k's children follow the previous
   * nodes' children, so node i >= roots has parent (i - roots) / fanout. */
  for (uint32_t i = 0; i < s.n; i++) {
    s.local[i] = hier_local(i);
    s.parent[i] = i < s.roots ? UINT32_MAX : (i - s.roots) / HIER_FANOUT;
  }

  bench_check(weft_world_create(NULL, &s.world), "weft_world_create");
  bench_check(weft_hierarchy_create(s.world, NULL, &s.h),
              "weft_hierarchy_create");
  weft_hierarchy_ids(s.h, &s.ids);
  weft_entity_t *e = bench_alloc((size_t)s.n * sizeof *e);
  weft_component_t comps[] = {s.ids.local, s.ids.world, 0};
  hier_fill_t f = {0};
  bench_check(weft_world_reserve(s.world, s.n), "weft_world_reserve");
  bench_check(weft_spawn_batch(s.world, s.n, comps, hier_fill, &f, e),
              "weft_spawn_batch");
  for (uint32_t i = s.roots; i < s.n; i++)
    bench_check(
        weft_relation_add(s.world, e[i], s.ids.child_of, e[s.parent[i]], NULL),
        "weft_relation_add");
  s.last = e[s.n - 1];
  bench_free(e);
  bench_check(weft_hierarchy_update(s.h), "weft_hierarchy_update");
  uint32_t levels[HIER_DEPTH + 2];
  if (weft_hierarchy_levels(s.h, levels, HIER_DEPTH + 2) != HIER_DEPTH + 1)
    bench_die("hierarchy: the plan's depth", WEFT_EINVAL);
  hier_base(&s, 1);
  const weft_transform2_t *t = weft_get(s.world, s.last, s.ids.world);
  if (!t || bench_f32_bits(t->x) != bench_f32_bits(s.wt[s.n - 1].x))
    bench_die("hierarchy: weft and the baseline disagree", WEFT_EINVAL);

  bench_case_t c = {
      .name = name,
      .unit = "ns/entity",
      .n = s.n,
      .work = {"weft_hierarchy", hier_weft, &s, s.n, false},
      .base = {"c_bfs_arrays", hier_base, &s, s.n, false},
      .target_kind = BENCH_TARGET_RATIO,
      .target = 1.5,
  };
  bench_compare(ctx, &c);

  weft_hierarchy_destroy(s.h);
  weft_world_destroy(s.world);
  bench_free(s.local);
  bench_free(s.wt);
  bench_free(s.parent);
}
