/* SPDX-License-Identifier: MIT */
/*
 * Memory stays resident in steady state (issue 29, "Stalls from memory
 * handling"). A workload that moves every entity out of its archetype and
 * back every frame, through systems or through an owner-thread command
 * buffer, allocates nothing after warm-up and keeps its chunks (live and
 * spare counts and chunk bytes constant). Where weft allocates from
 * jemalloc, the world's large blocks come from a heap of its own whose
 * decay is off: no page of it is purged while the world runs, and the
 * pages go back only when the world trims or is destroyed. A command
 * buffer destroyed and made anew records into the arrays the last one
 * left, in every build.
 */
#include "support/weft_test.h"

#include "core/world.h" /* w->alloc: the world's heap */

/* Entities in every test: 16 Ki rows of A; with B a command array of
 * 384 KiB, well above the size from which blocks come from the heap. */
#define RES_N (1u << 14)
#define RES_WARMUP 3u
#define RES_FRAMES 20u

typedef struct res_t {
  weft_world_t *w;
  weft_component_t a, b;
  weft_entity_t *handles;
  weft_cmdbuf_t *buf;
} res_t;

static res_t res_new(void) {
  res_t r = {0};
  r.w = wt_world_new(NULL);
  r.a = wt_register(r.w, "A", sizeof(float), 0);
  r.b = wt_register(r.w, "B", sizeof(float), 0);
  r.handles = calloc(RES_N, sizeof *r.handles);
  assert_non_null(r.handles);
  const weft_component_t comps[] = {r.a, 0};
  assert_int_equal(weft_spawn_batch(r.w, RES_N, comps, NULL, NULL, r.handles),
                   WEFT_OK);
  return r;
}

static void res_free(res_t *r) {
  if (r->buf)
    assert_int_equal(weft_cmdbuf_destroy(r->buf), WEFT_OK);
  weft_world_destroy(r->w);
  free(r->handles);
}

static int res_add(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  const res_t *r = ctx->user;
  const float v = 1.0f;
  for (uint32_t i = 0; i < chunk->count; i++) {
    int rc = weft_cmd_add(ctx->cmd, chunk->entities[i], r->b, &v);
    if (rc)
      return rc;
  }
  return 0;
}

static int res_remove(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  const res_t *r = ctx->user;
  for (uint32_t i = 0; i < chunk->count; i++) {
    int rc = weft_cmd_remove(ctx->cmd, chunk->entities[i], r->b);
    if (rc)
      return rc;
  }
  return 0;
}

/* PreUpdate adds B to every entity with A, PreRender removes it. */
static void res_systems(res_t *r) {
  weft_system_t id;
  weft_system_desc_t d = {0};
  d.name = "res.add";
  d.phase = WEFT_PHASE_PRE_UPDATE;
  d.query.include[0] = r->a;
  d.query.exclude[0] = r->b;
  d.term_access[0] = WEFT_ACCESS_NONE;
  d.cmd_write[0] = r->b;
  d.run = res_add;
  d.user = r;
  assert_int_equal(weft_system_register(r->w, &d, &id), WEFT_OK);
  d = (weft_system_desc_t){0};
  d.name = "res.remove";
  d.phase = WEFT_PHASE_PRE_RENDER;
  d.query.include[0] = r->b;
  d.term_access[0] = WEFT_ACCESS_NONE;
  d.cmd_write[0] = r->b;
  d.run = res_remove;
  d.user = r;
  assert_int_equal(weft_system_register(r->w, &d, &id), WEFT_OK);
}

static void frame_systems(res_t *r) {
  assert_int_equal(weft_world_progress(r->w, 1.0 / 60.0), WEFT_OK);
}

/* The owner-thread path: one buffer, applied twice a frame. */
static void frame_owner(res_t *r) {
  const float v = 1.0f;
  for (uint32_t i = 0; i < RES_N; i++)
    assert_int_equal(weft_cmd_add(r->buf, r->handles[i], r->b, &v), WEFT_OK);
  assert_int_equal(weft_world_apply(r->w, &r->buf, 1), WEFT_OK);
  for (uint32_t i = 0; i < RES_N; i++)
    assert_int_equal(weft_cmd_remove(r->buf, r->handles[i], r->b), WEFT_OK);
  assert_int_equal(weft_world_apply(r->w, &r->buf, 1), WEFT_OK);
}

/* The same with a buffer made for the frame and destroyed after it, the
 * pattern that regrows command memory every frame. */
static void frame_fresh_buffer(res_t *r) {
  assert_int_equal(weft_cmdbuf_create(r->w, &r->buf), WEFT_OK);
  frame_owner(r);
  assert_int_equal(weft_cmdbuf_destroy(r->buf), WEFT_OK);
  r->buf = NULL;
}

/* The heap's numbers, or false where there is no heap (no jemalloc). */
static bool heap_info(const res_t *r, weft__heap_info_t *out) {
  int rc = weft__alloc_heap_info(&r->w->alloc, out);
#ifdef WEFT_JEMALLOC
  assert_int_equal(rc, WEFT_OK);
  return true;
#else
  assert_int_equal(rc, WEFT_ENOTFOUND);
  return false;
#endif
}

/* Warms up, then runs RES_FRAMES frames and checks that they allocated
 * nothing, kept every chunk, moved every entity twice a frame and purged
 * no page of the world's heap. */
static void check_resident(res_t *r, void (*frame)(res_t *)) {
  for (uint32_t i = 0; i < RES_WARMUP; i++)
    frame(r);
  weft_world_stats_t s0 = wt_stats(r->w);
  weft__heap_info_t h0, h1;
  bool heap = heap_info(r, &h0);
  const uint64_t *counter = wt_thread_allocated();
  uint64_t bytes0 = counter ? *counter : 0;
  for (uint32_t i = 0; i < RES_FRAMES; i++)
    frame(r);
  uint64_t bytes = counter ? *counter - bytes0 : 0;
  weft_world_stats_t s1 = wt_stats(r->w);
  if (s1.allocs != s0.allocs)
    fail_msg("%llu allocations (%llu bytes) in %u steady frames",
             (unsigned long long)(s1.allocs - s0.allocs),
             (unsigned long long)(s1.alloc_bytes - s0.alloc_bytes), RES_FRAMES);
  if (bytes != 0)
    fail_msg("jemalloc saw %llu bytes allocated on this thread",
             (unsigned long long)bytes);
  assert_int_equal(s1.moves - s0.moves, 2ull * RES_FRAMES * RES_N);
  assert_int_equal(weft_world_count(r->w), RES_N);
  assert_int_equal(s1.chunks_live, s0.chunks_live);
  assert_int_equal(s1.chunks_spare, s0.chunks_spare);
  assert_int_equal(s1.chunk_bytes, s0.chunk_bytes);
  /* Both archetypes keep their chunks: the one the rows left holds them
   * as spares. */
  assert_true(s1.chunks_spare > 0);
  if (heap) {
    heap_info(r, &h1);
    assert_int_equal(h1.dirty_decay_ms, -1);
    assert_int_equal(h1.muzzy_decay_ms, -1);
    assert_int_equal(h1.purges, h0.purges);
    assert_int_equal(h1.purged, h0.purged);
    assert_int_equal(h1.active, h0.active);
    assert_true(h1.active > 0); /* the world's large blocks are there */
  }
}

static void test_resident_system_frames(void **state) {
  (void)state;
  res_t r = res_new();
  res_systems(&r);
  check_resident(&r, frame_systems);
  res_free(&r);
}

static void test_resident_owner_commands(void **state) {
  (void)state;
  res_t r = res_new();
  assert_int_equal(weft_cmdbuf_create(r.w, &r.buf), WEFT_OK);
  check_resident(&r, frame_owner);
  res_free(&r);
}

/*
 * A buffer destroyed and made anew every frame takes the arrays the last
 * one left (a destroyed buffer keeps them for the next): after warm-up
 * such frames allocate nothing either, and the heap neither grows nor
 * purges. Trimming hands the kept arrays and pages back.
 */
static void test_resident_fresh_buffer_reuses_memory(void **state) {
  (void)state;
  res_t r = res_new();
  check_resident(&r, frame_fresh_buffer);
  weft__heap_info_t h0, h1;
  bool heap = heap_info(&r, &h0);
  weft_world_trim(r.w);
  if (heap) {
    heap_info(&r, &h1);
    assert_int_equal(h1.dirty, 0);
    assert_true(h1.purged > h0.purged);
    assert_true(h1.active < h0.active); /* spare segments, command arrays */
  }
  /* A buffer made after the trim grows again and works. */
  weft_world_stats_t s0 = wt_stats(r.w);
  frame_fresh_buffer(&r);
  weft_world_stats_t s1 = wt_stats(r.w);
  assert_true(s1.allocs > s0.allocs);
  assert_int_equal(s1.moves - s0.moves, 2ull * RES_N);
  res_free(&r);
}

/* weft_world_trim() gives the freed segments' pages back at once. */
static void test_resident_trim_returns_pages(void **state) {
  (void)state;
  res_t r = res_new();
  weft__heap_info_t h0, h1;
  bool heap = heap_info(&r, &h0);
  for (uint32_t i = 0; i < RES_N; i++)
    assert_int_equal(weft_despawn(r.w, r.handles[i]), WEFT_OK);
  weft_world_stats_t s = wt_stats(r.w);
  assert_int_equal(s.chunks_live, 0);
  assert_true(s.chunks_spare > 0);
  assert_true(weft_world_trim(r.w) > 0);
  s = wt_stats(r.w);
  assert_int_equal(s.chunks_spare, 0);
  assert_int_equal(s.chunk_bytes, 0);
  if (heap) {
    heap_info(&r, &h1);
    assert_int_equal(h1.dirty, 0);
    assert_true(h1.purged > h0.purged);
    assert_true(h1.active < h0.active);
  }
  res_free(&r);
}

/* A destroyed world gives its heap back: worlds made and destroyed in
 * turn reuse jemalloc's arena ids instead of using them up. */
static void test_resident_destroy_returns_heap(void **state) {
  (void)state;
  weft_world_destroy(wt_world_new(NULL));
  unsigned before = weft__alloc_arenas();
  for (uint32_t i = 0; i < 64; i++) {
    res_t r = res_new();
    frame_fresh_buffer(&r);
    res_free(&r);
  }
  assert_true(weft__alloc_arenas() <= before + 1);
#ifndef WEFT_JEMALLOC
  assert_int_equal(weft__alloc_arenas(), 0);
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_resident_system_frames),
      cmocka_unit_test(test_resident_owner_commands),
      cmocka_unit_test(test_resident_fresh_buffer_reuses_memory),
      cmocka_unit_test(test_resident_trim_returns_pages),
      cmocka_unit_test(test_resident_destroy_returns_heap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
