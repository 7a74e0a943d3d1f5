/* SPDX-License-Identifier: MIT */
/*
 * create_destroy: 2^20 entities (2^16 with --quick) with two components,
 * Position and Velocity (vec3 each). Unit: ns per entity, creation and
 * destruction together.
 *
 * single: weft_spawn_with() one by one, then weft_despawn() one by one in
 * creation order; target <= 8x the raw pool's create and destroy, a ratio
 * rather than nanoseconds, as the host's speed swings. batch: one
 * weft_spawn_batch() filling the values chunk by chunk, then
 * weft_world_clear(); target <= 3 ns.
 *
 * The baseline is a raw pool: two plain component arrays plus a free list
 * of slot indices (LIFO, like weft's). single creates and destroys one slot
 * at a time; batch writes all slots in two vectorized passes and resets the
 * pool. The worlds are capped at n slots so that slots are recycled rather
 * than the index growing without bound.
 */
#include <stdint.h>

#include <weft.h>

#include "harness.h"

#define CD_NIL UINT32_MAX

typedef struct cd_pool_t {
  bench_vec3_t *pos;
  bench_vec3_t *vel;
  uint32_t *next; /* free list links */
  uint32_t free_head;
  uint32_t hwm;
} cd_pool_t;

typedef struct cd_state_t {
  uint32_t n;
  weft_world_t *world;
  weft_component_t comps[3];
  weft_entity_t *handles;
  cd_pool_t pool;
  uint32_t *slots; /* the pool's "handles" */
} cd_state_t;

static const bench_vec3_t cd_vel0 = {1.0f, 0.0f, 0.0f};

static inline bench_vec3_t cd_pos0(uint32_t i) {
  float f = (float)i;
  return (bench_vec3_t){f, f, f};
}

static uint64_t cd_weft_single(void *p, uint64_t reps) {
  cd_state_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    for (uint32_t i = 0; i < s->n; ++i) {
      bench_vec3_t pos = cd_pos0(i);
      const void *values[2] = {&pos, &cd_vel0};
      int rc = weft_spawn_with(s->world, s->comps, values, &s->handles[i]);
      if (rc != 0)
        bench_die("weft_spawn_with", rc);
    }
    for (uint32_t i = 0; i < s->n; ++i) {
      int rc = weft_despawn(s->world, s->handles[i]);
      if (rc != 0)
        bench_die("weft_despawn", rc);
    }
    bench_clobber();
    sum += s->handles[0];
  }
  return sum;
}

/* Raw pool create/destroy: scalar by nature (a dependent free-list pop and
 * push per entity); -fopt-info-vec-optimized reports no loop, as expected. */
static inline uint32_t cd_pool_create(cd_pool_t *restrict pool,
                                      bench_vec3_t pos, bench_vec3_t vel) {
  uint32_t slot = pool->free_head;
  if (slot != CD_NIL)
    pool->free_head = pool->next[slot];
  else
    slot = pool->hwm++;
  pool->pos[slot] = pos;
  pool->vel[slot] = vel;
  return slot;
}

static inline void cd_pool_destroy(cd_pool_t *restrict pool, uint32_t slot) {
  pool->next[slot] = pool->free_head;
  pool->free_head = slot;
}

static uint64_t cd_base_single(void *p, uint64_t reps) {
  cd_state_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    for (uint32_t i = 0; i < s->n; ++i)
      s->slots[i] = cd_pool_create(&s->pool, cd_pos0(i), cd_vel0);
    for (uint32_t i = 0; i < s->n; ++i)
      cd_pool_destroy(&s->pool, s->slots[i]);
    bench_clobber();
    sum += s->slots[0];
  }
  return sum;
}

static void cd_fill(void *user, const weft_iter_t *view, uint32_t first) {
  (void)user;
  bench_vec3_t *restrict pos = view->columns[0];
  bench_vec3_t *restrict vel = view->columns[1];
  for (uint32_t i = 0; i < view->count; ++i) {
    pos[i] = cd_pos0(first + i);
    vel[i] = cd_vel0;
  }
}

static uint64_t cd_weft_batch(void *p, uint64_t reps) {
  cd_state_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    int rc = weft_spawn_batch(s->world, s->n, s->comps, cd_fill, s, NULL);
    if (rc != 0)
      bench_die("weft_spawn_batch", rc);
    sum += weft_world_count(s->world);
    weft_world_clear(s->world);
    bench_clobber();
  }
  return sum;
}

/*
 * Batch baseline: the pool hands out slots 0..n-1 and the values are
 * written in two passes. gcc 12 -O3 -fopt-info-vec-optimized: both loops
 * "vectorized using 16 byte vectors" (interleaved groups of 3 floats).
 */
static void cd_pool_fill(uint32_t n, bench_vec3_t *restrict pos,
                         bench_vec3_t *restrict vel) {
  for (uint32_t i = 0; i < n; ++i) {
    float f = (float)i;
    pos[i].x = f;
    pos[i].y = f;
    pos[i].z = f;
  }
  for (uint32_t i = 0; i < n; ++i) {
    vel[i].x = 1.0f;
    vel[i].y = 0.0f;
    vel[i].z = 0.0f;
  }
}

static uint64_t cd_base_batch(void *p, uint64_t reps) {
  cd_state_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    cd_pool_fill(s->n, s->pool.pos, s->pool.vel);
    s->pool.hwm = s->n;
    bench_clobber();
    sum += s->pool.hwm;
    s->pool.hwm = 0; /* clear: every slot free again */
    s->pool.free_head = CD_NIL;
  }
  return sum;
}

static void cd_setup(cd_state_t *s) {
  weft_world_config_t cfg = {.capacity = s->n};
  bench_check(weft_world_create(&cfg, &s->world), "weft_world_create");
  weft_component_desc_t d = WEFT_COMPONENT_DESC(bench_vec3_t);
  bench_register_pos_vel(s->world, d, s->comps);
  s->comps[2] = WEFT_COMPONENT_NONE;
  bench_check(weft_world_reserve(s->world, s->n), "weft_world_reserve");
  s->handles = bench_alloc((size_t)s->n * sizeof *s->handles);
  s->pool.pos = bench_alloc((size_t)s->n * sizeof *s->pool.pos);
  s->pool.vel = bench_alloc((size_t)s->n * sizeof *s->pool.vel);
  s->pool.next = bench_alloc((size_t)s->n * sizeof *s->pool.next);
  s->pool.free_head = CD_NIL;
  s->slots = bench_alloc((size_t)s->n * sizeof *s->slots);
}

static void cd_teardown(cd_state_t *s) {
  bench_free(s->handles);
  bench_free(s->pool.pos);
  bench_free(s->pool.vel);
  bench_free(s->pool.next);
  bench_free(s->slots);
  weft_world_destroy(s->world);
}

static void cd_run(bench_ctx_t *ctx, uint32_t n, bool batch) {
  const char *name = batch ? "create_destroy/batch" : "create_destroy/single";
  if (!bench_selected(ctx, name))
    return;
  cd_state_t s = {.n = n};
  cd_setup(&s);
  bench_case_t c = {
      .name = name,
      .unit = "ns/entity",
      .n = n,
      .work = {"weft", batch ? cd_weft_batch : cd_weft_single, &s, n},
      .base = {batch ? "c_pool_bulk" : "c_pool_freelist",
               batch ? cd_base_batch : cd_base_single, &s, n},
      .target_kind = batch ? BENCH_TARGET_VALUE : BENCH_TARGET_RATIO,
      .target = batch ? 3.0 : 8.0,
  };
  bench_compare(ctx, &c);
  cd_teardown(&s);
}

void bench_create_destroy(bench_ctx_t *ctx) {
  uint32_t n = ctx->quick ? (1u << 16) : (1u << 20);
  cd_run(ctx, n, false);
  cd_run(ctx, n, true);
}
