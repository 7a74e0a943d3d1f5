/* SPDX-License-Identifier: MIT */
/*
 * frame: what one frame of the pipeline costs when the systems do nothing.
 * Each repetition is one weft_world_progress(world, fixed_dt) on a world
 * configured with fixed_dt = 1/60, so every frame runs PreUpdate, exactly
 * one fixed step (FixedUpdate, PostFixedUpdate), NetworkTick on every
 * second frame (net_dt = 1/30) and PreRender. No pool: everything runs on
 * the calling thread (with a pool these frames would run inline as well
 * once the tasks are measured: together they cost far less than
 * inline_rows rows' worth). Unit: ns per frame.
 *
 * frame/empty: no system registered.
 * frame/100_tasks: 100 tasks in FixedUpdate (no query; the callback
 * returns 0), no access declared, so no edges between them.
 * frame/100_systems: 100 systems in FixedUpdate whose query (one read-only
 * term on a component no entity has) matches no entity, so they plan no
 * job; 1000 entities of another archetype exist in the world.
 * frame/100_systems_1e: 100 systems in FixedUpdate, each matching one
 * entity of an archetype of its own (Position plus a tag component of its
 * own, read-only), so each callback runs once per frame: what peers
 * measure as "100 systems".
 *
 * Baseline (all three): 100 calls to a no-op function through a table of
 * function pointers read through a volatile lvalue, so the calls cannot be
 * elided or inlined. The 100-system rows' target is that ratio: at most
 * 5x the 100 raw calls. frame/100_tasks keeps an absolute target, at most
 * 3000 ns per frame.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <weft.h>

#include "bench_systems.h"
#include "harness.h"

#define FRAME_SYSTEMS 100u
#define FRAME_FIXED_DT (1.0 / 60.0)

typedef void (*frame_fn)(void);

typedef struct frame_state_t {
  weft_world_t *world;
  frame_fn volatile table[FRAME_SYSTEMS]; /* the baseline's calls */
} frame_state_t;

typedef enum frame_kind_t {
  FRAME_EMPTY = 0,
  FRAME_TASKS,
  FRAME_SYSTEMS_NO_MATCH,
  FRAME_SYSTEMS_ONE_ENTITY
} frame_kind_t;

typedef struct frame_pos_t {
  float x, y;
} frame_pos_t;

__attribute__((noinline)) static void frame_noop(void) {
  __asm__ volatile("");
}

static int frame_noop_system(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)ctx;
  (void)chunk;
  return 0;
}

static uint64_t frame_weft(void *p, uint64_t reps) {
  frame_state_t *s = p;
  for (uint64_t r = 0; r < reps; ++r) {
    int rc = weft_world_progress(s->world, FRAME_FIXED_DT);
    if (rc != 0)
      bench_die("weft_world_progress", rc);
  }
  weft_pipeline_state_t st;
  weft_pipeline_state(s->world, &st);
  return st.tick;
}

static uint64_t frame_base(void *p, uint64_t reps) {
  frame_state_t *s = p;
  for (uint64_t r = 0; r < reps; ++r)
    for (uint32_t i = 0; i < FRAME_SYSTEMS; ++i)
      s->table[i]();
  return reps;
}

static void frame_setup(frame_state_t *s, frame_kind_t kind) {
  memset(s, 0, sizeof *s);
  for (uint32_t i = 0; i < FRAME_SYSTEMS; ++i)
    s->table[i] = frame_noop;
  bench_check(weft_world_create(NULL, &s->world), "weft_world_create");
  weft_pipeline_config_t pc = {.fixed_dt = FRAME_FIXED_DT};
  bench_check(weft_pipeline_configure(s->world, &pc),
              "weft_pipeline_configure");
  if (kind == FRAME_EMPTY)
    return;

  weft_component_t unused = 0, pos = 0;
  if (kind == FRAME_SYSTEMS_NO_MATCH) {
    weft_component_desc_t d = WEFT_COMPONENT_DESC(frame_pos_t);
    d.name = "Unused";
    bench_check(weft_component_register(s->world, &d, &unused),
                "registering Unused");
    d.name = "Position";
    bench_check(weft_component_register(s->world, &d, &pos),
                "registering Position");
    weft_component_t comps[2] = {pos, WEFT_COMPONENT_NONE};
    bench_check(weft_spawn_batch(s->world, 1000, comps, NULL, NULL, NULL),
                "weft_spawn_batch");
  }
  if (kind == FRAME_SYSTEMS_ONE_ENTITY) {
    weft_component_desc_t d = WEFT_COMPONENT_DESC(frame_pos_t);
    d.name = "Position";
    bench_check(weft_component_register(s->world, &d, &pos),
                "registering Position");
  }
  for (uint32_t i = 0; i < FRAME_SYSTEMS; ++i) {
    char name[32];
    snprintf(name, sizeof name, "noop%u", i);
    weft_system_desc_t d = {.name = name, .run = frame_noop_system};
    if (kind == FRAME_SYSTEMS_NO_MATCH) {
      d.query.include[0] = unused;
      d.term_access[0] = WEFT_ACCESS_READ;
    } else if (kind == FRAME_SYSTEMS_ONE_ENTITY) {
      /* A tag of its own, so that each entity has an archetype of its own
       * and each system matches one chunk with one row. */
      char tname[32];
      snprintf(tname, sizeof tname, "Tag%u", i);
      weft_component_desc_t td = {.name = tname};
      weft_component_t tag = 0;
      bench_check(weft_component_register(s->world, &td, &tag),
                  "registering a tag");
      weft_component_t comps[3] = {pos, tag, WEFT_COMPONENT_NONE};
      bench_check(weft_spawn_batch(s->world, 1, comps, NULL, NULL, NULL),
                  "weft_spawn_batch");
      d.query.include[0] = tag;
      d.query.include[1] = pos;
      d.term_access[0] = WEFT_ACCESS_READ;
      d.term_access[1] = WEFT_ACCESS_READ;
    }
    weft_system_t id;
    bench_check(weft_system_register(s->world, &d, &id),
                "weft_system_register");
  }
  bench_check(weft_schedule_build(s->world), "weft_schedule_build");
}

static void frame_run(bench_ctx_t *ctx, const char *name, frame_kind_t kind,
                      bench_target_kind_t tk, double target) {
  if (!bench_selected(ctx, name))
    return;
  frame_state_t s;
  frame_setup(&s, kind);
  bench_case_t c = {
      .name = name,
      .unit = "ns/frame",
      .n = kind == FRAME_EMPTY ? 0 : FRAME_SYSTEMS,
      .work = {"weft", frame_weft, &s, 1.0, false},
      .base = {"c_100_indirect_calls", frame_base, &s, 1.0, false},
      .target_kind = tk,
      .target = target,
  };
  bench_compare(ctx, &c);
  weft_world_destroy(s.world);
}

void bench_frame(bench_ctx_t *ctx) {
  frame_run(ctx, "frame/empty", FRAME_EMPTY, BENCH_TARGET_NONE, 0.0);
  frame_run(ctx, "frame/100_tasks", FRAME_TASKS, BENCH_TARGET_VALUE, 3000.0);
  frame_run(ctx, "frame/100_systems", FRAME_SYSTEMS_NO_MATCH,
            BENCH_TARGET_RATIO, 5.0);
  frame_run(ctx, "frame/100_systems_1e", FRAME_SYSTEMS_ONE_ENTITY,
            BENCH_TARGET_RATIO, 5.0);
}
