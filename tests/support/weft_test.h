/* SPDX-License-Identifier: MIT */
/*
 * Shared helpers for the weft cmocka unit and stress tests: a
 * deterministic RNG, a monotonic clock, numbers from the environment,
 * world construction with assertions, handle forging and stats
 * invariants. Header-only; every function is static inline.
 */
#ifndef WEFT_TEST_SUPPORT_H
#define WEFT_TEST_SUPPORT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft.h>

#include "core/alloc.h" /* weft__alloc_thread_counter() */

/* --- deterministic RNG (splitmix64) ------------------------------------ */

typedef struct wt_rng_t {
  uint64_t state;
} wt_rng_t;

static inline wt_rng_t wt_rng(uint64_t seed) {
  wt_rng_t r = {seed ^ 0x9e3779b97f4a7c15ull};
  return r;
}

/* One splitmix64 step on a bare state word: the generator behind wt_next()
 * and the stress models' streams (whose printed seeds must go on
 * reproducing a failure). */
static inline uint64_t wt_splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static inline uint64_t wt_next(wt_rng_t *r) {
  return wt_splitmix64(&r->state);
}

/* Uniform in [0, n); n > 0. */
static inline uint32_t wt_below(wt_rng_t *r, uint32_t n) {
  return (uint32_t)(wt_next(r) % n);
}

/* True with probability num/den. */
static inline bool wt_chance(wt_rng_t *r, uint32_t num, uint32_t den) {
  return wt_below(r, den) < num;
}

/* Uniform in [0, n) from a bare splitmix64 state, by multiply-shift of the
 * draw's high 32 bits (n > 0): the stress models' draw. */
static inline uint32_t wt_draw_below(uint64_t *state, uint32_t n) {
  return (uint32_t)(((wt_splitmix64(state) >> 32) * (uint64_t)n) >> 32);
}

/* --- clock and environment ----------------------------------------------- */

/* CLOCK_MONOTONIC in nanoseconds and in seconds: for hang limits, spins
 * and reported durations, never for asserting on wall time. */
static inline uint64_t wt_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline double wt_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The environment variable @p name as an unsigned number (strtoull base 0:
 * decimal, 0x hex or 0 octal), or @p def when it is unset or empty; a
 * malformed value is reported, as "<prog>: ignoring malformed NAME=value",
 * and @p def returned. */
static inline uint64_t wt_env_u64(const char *prog, const char *name,
                                  uint64_t def) {
  const char *s = getenv(name);
  char *end = NULL;
  unsigned long long v;
  if (s == NULL || *s == '\0') {
    return def;
  }
  v = strtoull(s, &end, 0);
  if (end == s || *end != '\0') {
    print_error("%s: ignoring malformed %s=%s\n", prog, name, s);
    return def;
  }
  return (uint64_t)v;
}

/* --- worlds -------------------------------------------------------------- */

static inline weft_world_t *wt_world_new(const weft_world_config_t *cfg) {
  weft_world_t *w = NULL;
  assert_int_equal(weft_world_create(cfg, &w), WEFT_OK);
  assert_non_null(w);
  return w;
}

/* A world with default settings except the given capacity and chunk size
 * (0 keeps the default). */
static inline weft_world_t *wt_world_sized(uint32_t capacity,
                                           uint32_t chunk_size) {
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.capacity = capacity;
  cfg.chunk_size = chunk_size;
  return wt_world_new(&cfg);
}

/*
 * A world for tests that compare runs on different worker counts: world
 * tag 42 (equal handles across worlds, so digests compare) and the given
 * chunk size (0 keeps the default). With @p workers > 0 it gets a new pool
 * of that many workers, returned in *pool (destroy it after the world);
 * with 0, *pool is NULL and everything runs inline.
 */
static inline weft_world_t *
wt_world_pooled(uint32_t workers, uint32_t chunk_size, weft_pool_t **pool) {
  *pool = NULL;
  if (workers) {
    weft_pool_config_t pc;
    memset(&pc, 0, sizeof pc);
    pc.placement.workers = workers;
    assert_int_equal(weft_pool_create(&pc, pool), WEFT_OK);
    assert_int_equal(weft_pool_workers(*pool), workers);
  }
  weft_world_config_t wc;
  memset(&wc, 0, sizeof wc);
  wc.world_tag = 42;
  wc.chunk_size = chunk_size;
  wc.pool = *pool;
  return wt_world_new(&wc);
}

/* Configures @p w's pipeline with inline_rows 1 and every other setting
 * at its default, so that no stretch of rows is small enough to run
 * inline: every system goes to the pool. */
static inline void wt_dispatch_everything(weft_world_t *w) {
  weft_pipeline_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.inline_rows = 1;
  assert_int_equal(weft_pipeline_configure(w, &pc), WEFT_OK);
}

static inline weft_world_stats_t wt_stats(const weft_world_t *w) {
  weft_world_stats_t s;
  memset(&s, 0xa5, sizeof s); /* make unfilled fields obvious */
  weft_world_stats(w, &s);
  return s;
}

/* alive + retired + remaining == capacity, and alive == weft_world_count. */
static inline void wt_check_slot_invariant(const weft_world_t *w) {
  weft_world_stats_t s = wt_stats(w);
  assert_int_equal((uint64_t)s.alive + s.retired + s.remaining, s.capacity);
  assert_int_equal(s.alive, weft_world_count(w));
}

/* --- components ---------------------------------------------------------- */

static inline weft_component_t wt_register(weft_world_t *w, const char *name,
                                           uint32_t size, uint32_t alignment) {
  weft_component_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.size = size;
  d.alignment = alignment;
  weft_component_t id = WEFT_COMPONENT_NONE;
  assert_int_equal(weft_component_register(w, &d, &id), WEFT_OK);
  assert_int_not_equal(id, WEFT_COMPONENT_NONE);
  return id;
}

static inline weft_component_t wt_register_tag(weft_world_t *w,
                                               const char *name) {
  return wt_register(w, name, 0, 0);
}

/* A data component registered with WEFT_COMPONENT_TRACK_DIRTY. */
static inline weft_component_t
wt_register_tracked(weft_world_t *w, const char *name, uint32_t size) {
  weft_component_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.size = size;
  d.flags = WEFT_COMPONENT_TRACK_DIRTY;
  weft_component_t id = WEFT_COMPONENT_NONE;
  assert_int_equal(weft_component_register(w, &d, &id), WEFT_OK);
  return id;
}

static inline int wt_touch_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)ctx;
  (void)chunk; /* the declared write marks every row it visits */
  return 0;
}

/* Registers a PreUpdate system that declares a write of @p c and writes
 * nothing: running it marks every chunk it visits dirty as a whole (one
 * flag per chunk, not a byte per row). */
static inline void wt_touch_system(weft_world_t *w, weft_component_t c) {
  weft_system_desc_t sd;
  memset(&sd, 0, sizeof sd);
  sd.name = "touch";
  sd.phase = WEFT_PHASE_PRE_UPDATE;
  sd.query.include[0] = c;
  sd.term_access[0] = WEFT_ACCESS_WRITE;
  sd.run = wt_touch_run;
  weft_system_t id = 0;
  assert_int_equal(weft_system_register(w, &sd, &id), WEFT_OK);
}

/* --- handles ------------------------------------------------------------- */

/* Builds a handle from its documented bit layout (index bits 0-31,
 * generation bits 32-55, tag bits 56-63). */
static inline weft_entity_t wt_handle(uint32_t index, uint32_t generation,
                                      uint32_t tag) {
  return (weft_entity_t)index |
         ((weft_entity_t)(generation & 0x00ffffffu) << 32) |
         ((weft_entity_t)(tag & 0xffu) << 56);
}

static inline weft_entity_t wt_spawn(weft_world_t *w) {
  weft_entity_t e = WEFT_ENTITY_NULL;
  assert_int_equal(weft_spawn(w, &e), WEFT_OK);
  assert_true(weft_is_alive(w, e));
  return e;
}

/* Spawns with a zero-terminated list of up to 8 ids and optional values. */
static inline weft_entity_t wt_spawn_with(weft_world_t *w,
                                          const weft_component_t *comps,
                                          const void *const *values) {
  weft_entity_t e = WEFT_ENTITY_NULL;
  assert_int_equal(weft_spawn_with(w, comps, values, &e), WEFT_OK);
  assert_true(weft_is_alive(w, e));
  return e;
}

static inline bool wt_aligned(const void *p, uintptr_t alignment) {
  return ((uintptr_t)p & (alignment - 1)) == 0;
}

/* The counter of bytes this thread allocated from weft's private jemalloc,
 * or NULL in builds without it (-DWEFT_JEMALLOC=OFF, sanitizers), where the
 * world's own counters are the check. It sees weft's allocations only: the
 * host's malloc is not jemalloc. */
static inline const uint64_t *wt_thread_allocated(void) {
  const uint64_t *p = weft__alloc_thread_counter();
#ifdef WEFT_JEMALLOC
  assert_non_null(p);
#endif
  return p;
}

/* What a steady-state check compares: the world's allocation count and
 * this thread's jemalloc counter (when there is one) at its start. */
typedef struct wt_alloc_probe_t {
  uint64_t allocs;
  const uint64_t *counter;
  uint64_t bytes;
} wt_alloc_probe_t;

static inline wt_alloc_probe_t wt_alloc_probe(const weft_world_t *w) {
  wt_alloc_probe_t p;
  p.allocs = wt_stats(w).allocs;
  p.counter = wt_thread_allocated();
  p.bytes = p.counter ? *p.counter : 0;
  return p;
}

/* Fails, naming @p what, when the world or this thread allocated since
 * @p p was taken. */
static inline void wt_assert_no_alloc(const weft_world_t *w,
                                      const wt_alloc_probe_t *p,
                                      const char *what) {
  uint64_t allocs = wt_stats(w).allocs - p->allocs;
  uint64_t bytes = p->counter ? *p->counter - p->bytes : 0;
  if (allocs)
    fail_msg("%llu world allocations in %s", (unsigned long long)allocs, what);
  if (bytes)
    fail_msg("%llu bytes allocated on this thread in %s",
             (unsigned long long)bytes, what);
}

#endif /* WEFT_TEST_SUPPORT_H */
