/* SPDX-License-Identifier: MIT */
/*
 * dirty: what dirty tracking (weft/dirty.h) costs the paths that mark.
 * Both sides of each row run weft, on two worlds built alike except that
 * one registers its components with WEFT_COMPONENT_TRACK_DIRTY: the
 * baseline is the untracked world, so the ratio is the price of tracking.
 *
 * dirty/set/<n>: weft_set() of a 16-byte component on each of n entities
 * (100k, 10k with --quick), in a shuffled order, the same handles' order
 * on both sides. Tracking adds a byte store and a tick compare per set.
 * Unit: ns per set; target <= 1.2x.
 *
 * dirty/system_write/<n>: a system that writes Position (p += v * dt) over
 * n entities (1M, 100k with --quick) through weft_world_run_phase() on
 * the calling thread. Tracking adds one memset of a chunk's dirty bytes per
 * chunk visited. Unit: ns per row; target <= 1.05x.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <weft.h>

#include "harness.h"

#define DIRTY_SEED UINT64_C(0xd1e7b175)

typedef struct dirty_val_t {
  float x, y, z, w;
} dirty_val_t;

typedef struct dirty_world_t {
  weft_world_t *world;
  weft_component_t comp;  /* set/: the value; system_write/: Position */
  weft_component_t vel;   /* system_write/: Velocity */
  weft_entity_t *handles; /* set/: shuffled */
  uint32_t n;
} dirty_world_t;

static uint64_t dirty_set(void *p, uint64_t reps) {
  dirty_world_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    dirty_val_t v = {(float)r, 1.0f, 2.0f, 3.0f};
    for (uint32_t i = 0; i < s->n; ++i)
      sum += weft_set(s->world, s->handles[i], s->comp, &v) == 0;
    bench_clobber();
  }
  return sum;
}

/* p += v * dt over a chunk of Position and Velocity (AoS vec3s). */
static int dirty_move(weft_sysctx_t *ctx, const weft_iter_t *ch) {
  bench_integrate_flat(ch->count * 3, ch->columns[0], ch->columns[1],
                       (float)ctx->dt);
  return 0;
}

static uint64_t dirty_run(void *p, uint64_t reps) {
  dirty_world_t *s = p;
  for (uint64_t r = 0; r < reps; ++r) {
    bench_check(weft_world_run_phase(s->world, WEFT_PHASE_FIXED_UPDATE, 0.01),
                "weft_world_run_phase");
    bench_clobber();
  }
  return reps;
}

/* A world of n entities of one 16-byte component, tracked or not. */
static void dirty_set_world(dirty_world_t *s, uint32_t n, bool tracked,
                            const uint32_t *order) {
  s->n = n;
  bench_check(weft_world_create(NULL, &s->world), "weft_world_create");
  weft_component_desc_t d = WEFT_COMPONENT_DESC(dirty_val_t);
  d.name = "Value";
  d.flags = tracked ? WEFT_COMPONENT_TRACK_DIRTY : 0;
  bench_check(weft_component_register(s->world, &d, &s->comp), "register");
  const weft_component_t comps[] = {s->comp, 0};
  weft_entity_t *made = bench_alloc((size_t)n * sizeof *made);
  bench_check(weft_world_reserve(s->world, n), "weft_world_reserve");
  bench_check(weft_spawn_batch(s->world, n, comps, NULL, NULL, made),
              "weft_spawn_batch");
  s->handles = bench_alloc((size_t)n * sizeof *s->handles);
  for (uint32_t i = 0; i < n; ++i)
    s->handles[i] = made[order[i]];
  bench_free(made);
}

/* A world of n entities of Position and Velocity, tracked or not, with a
 * system writing Position in FixedUpdate, all on the calling thread. */
static void dirty_system_world(dirty_world_t *s, uint32_t n, bool tracked) {
  s->n = n;
  bench_check(weft_world_create(NULL, &s->world), "weft_world_create");
  weft_component_desc_t d = WEFT_COMPONENT_DESC(bench_vec3_t);
  d.flags = tracked ? WEFT_COMPONENT_TRACK_DIRTY : 0;
  weft_component_t pv[2];
  bench_register_pos_vel(s->world, d, pv);
  s->comp = pv[0];
  s->vel = pv[1];
  const weft_component_t comps[] = {pv[0], pv[1], 0};
  bench_check(weft_world_reserve(s->world, n), "weft_world_reserve");
  bench_check(weft_spawn_batch(s->world, n, comps, NULL, NULL, NULL),
              "weft_spawn_batch");
  weft_system_desc_t sd;
  memset(&sd, 0, sizeof sd);
  sd.name = "dirty.move";
  sd.query.include[0] = pv[0];
  sd.query.include[1] = pv[1];
  sd.term_access[0] = WEFT_ACCESS_WRITE;
  sd.term_access[1] = WEFT_ACCESS_READ;
  sd.flags = WEFT_SYSTEM_MAIN_THREAD;
  sd.run = dirty_move;
  weft_system_t id;
  bench_check(weft_system_register(s->world, &sd, &id), "register system");
}

static void dirty_world_free(dirty_world_t *s) {
  bench_free(s->handles);
  weft_world_destroy(s->world);
}

void bench_dirty(bench_ctx_t *ctx) {
  uint32_t nset = ctx->quick ? 10000 : 100000;
  uint32_t nsys = ctx->quick ? 100000 : 1000000;
  char label[16], set_name[64], sys_name[64];
  bench_size_label(label, sizeof label, nset);
  snprintf(set_name, sizeof set_name, "dirty/set/%s", label);
  bench_size_label(label, sizeof label, nsys);
  snprintf(sys_name, sizeof sys_name, "dirty/system_write/%s", label);

  if (bench_selected(ctx, set_name)) {
    uint32_t *order = bench_alloc((size_t)nset * sizeof *order);
    for (uint32_t i = 0; i < nset; ++i)
      order[i] = i;
    bench_shuffle_u32(order, nset, DIRTY_SEED);
    dirty_world_t on = {0}, off = {0};
    dirty_set_world(&on, nset, true, order);
    dirty_set_world(&off, nset, false, order);
    bench_case_t c = {
        .name = set_name,
        .unit = "ns/set",
        .n = nset,
        .work = {"weft_tracked", dirty_set, &on, nset, false},
        .base = {"weft_untracked", dirty_set, &off, nset, false},
        .target_kind = BENCH_TARGET_RATIO,
        .target = 1.2,
    };
    bench_compare(ctx, &c);
    dirty_world_free(&on);
    dirty_world_free(&off);
    bench_free(order);
  }
  if (bench_selected(ctx, sys_name)) {
    dirty_world_t on = {0}, off = {0};
    dirty_system_world(&on, nsys, true);
    dirty_system_world(&off, nsys, false);
    bench_case_t c = {
        .name = sys_name,
        .unit = "ns/row",
        .n = nsys,
        .work = {"weft_tracked", dirty_run, &on, nsys, false},
        .base = {"weft_untracked", dirty_run, &off, nsys, false},
        .target_kind = BENCH_TARGET_RATIO,
        .target = 1.05,
    };
    bench_compare(ctx, &c);
    dirty_world_free(&on);
    dirty_world_free(&off);
  }
}
