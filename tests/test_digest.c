/* SPDX-License-Identifier: MIT */
/*
 * weft_world_digest() covers the whole state (world.h): two worlds built
 * alike digest alike; a difference in a resource's bytes, in an event
 * channel's pending events (published or staged), or in the world seed or
 * a random stream's state changes the digest, while scratch resources
 * (addresses, plans), the worker slot an event was staged in and the order
 * streams were created in do not. weft_world_digest_ex() hashes the parts
 * it is asked for, each part alone. Every test builds and destroys its own
 * worlds.
 */
#include "support/weft_test.h"

#include <weft/builtin.h>

#include "core/resource_internal.h" /* staging events as workers do */

typedef struct dx_t {
  weft_world_t *w;
  weft_component_t c;
  weft_resource_t res, scratch;
  weft_channel_t ch;
} dx_t;

/* The same world every time: ten entities, a resource, a scratch resource
 * and a channel of 8-byte events. */
static dx_t dx_new(void) {
  dx_t d;
  d.w = wt_world_pooled(0, 0, &(weft_pool_t *){NULL});
  d.c = wt_register(d.w, "c", 8, 0);
  const weft_component_t comps[] = {d.c, 0};
  for (uint64_t i = 0; i < 10; i++) {
    const void *vals[] = {&i};
    wt_spawn_with(d.w, comps, vals);
  }
  const uint64_t zero = 0;
  assert_int_equal(weft_resource_register(d.w, "res", 8, 0, &zero, &d.res),
                   WEFT_OK);
  assert_int_equal(
      weft_resource_register(d.w, "scratch", 8, 0, &zero, &d.scratch), WEFT_OK);
  assert_int_equal(
      weft_resource_set_flags(d.w, d.scratch, WEFT_RESOURCE_SCRATCH), WEFT_OK);
  assert_int_equal(weft_channel_register(d.w, "ch", 8, &d.ch), WEFT_OK);
  return d;
}

/* Digests of a and b: all of it, and each part alone. */
static void expect_same(const dx_t *a, const dx_t *b) {
  assert_int_equal(weft_world_digest(a->w), weft_world_digest(b->w));
  for (uint32_t p = 1; p <= WEFT_DIGEST_ALL; p <<= 1)
    assert_int_equal(weft_world_digest_ex(a->w, p),
                     weft_world_digest_ex(b->w, p));
}

/* a and b differ in part `part` only. */
static void expect_differ_in(const dx_t *a, const dx_t *b, uint32_t part) {
  assert_int_not_equal(weft_world_digest(a->w), weft_world_digest(b->w));
  for (uint32_t p = 1; p <= WEFT_DIGEST_ALL; p <<= 1) {
    uint64_t da = weft_world_digest_ex(a->w, p);
    uint64_t db = weft_world_digest_ex(b->w, p);
    if (p == part)
      assert_int_not_equal(da, db);
    else
      assert_int_equal(da, db);
  }
}

static void test_digest_equal_worlds_are_equal(void **state) {
  (void)state;
  dx_t a = dx_new(), b = dx_new();
  expect_same(&a, &b);
  assert_int_equal(weft_world_digest(a.w),
                   weft_world_digest_ex(a.w, WEFT_DIGEST_ALL));
  assert_int_not_equal(weft_world_digest_ex(a.w, WEFT_DIGEST_ENTITIES),
                       weft_world_digest_ex(a.w, WEFT_DIGEST_RESOURCES));
  assert_int_equal(weft_world_digest(NULL), 0);
  weft_world_destroy(a.w);
  weft_world_destroy(b.w);
}

static void test_digest_covers_resources(void **state) {
  (void)state;
  dx_t a = dx_new(), b = dx_new();
  const uint64_t v = 7;
  assert_int_equal(weft_resource_set(a.w, a.res, &v), WEFT_OK);
  expect_differ_in(&a, &b, WEFT_DIGEST_RESOURCES);
  assert_int_equal(weft_resource_set(b.w, b.res, &v), WEFT_OK);
  expect_same(&a, &b);
  /* A scratch resource's bytes are not state. */
  const uint64_t addr = (uint64_t)(uintptr_t)&a;
  assert_int_equal(weft_resource_set(a.w, a.scratch, &addr), WEFT_OK);
  expect_same(&a, &b);
  /* Nor is a bad flag accepted. */
  assert_int_equal(weft_resource_set_flags(a.w, a.res, 0x2u), WEFT_EINVAL);
  assert_int_equal(weft_resource_set_flags(a.w, 99, 0), WEFT_ENONAME);
  assert_int_equal(weft_resource_set_flags(NULL, a.res, 0), WEFT_EINVAL);
  weft_world_destroy(a.w);
  weft_world_destroy(b.w);
}

/* The built-in systems keep pointers in their state resources, marked
 * scratch: two worlds with the same systems digest alike. */
static void test_digest_ignores_system_scratch(void **state) {
  (void)state;
  dx_t d[2] = {dx_new(), dx_new()};
  for (int k = 0; k < 2; k++) {
    weft_std_t s;
    weft_system_t sys;
    assert_int_equal(weft_std_register(d[k].w, &s), WEFT_OK);
    assert_int_equal(weft_sys_health(d[k].w, &s, WEFT_PHASE_FIXED_UPDATE, &sys),
                     WEFT_OK);
  }
  expect_same(&d[0], &d[1]);
  assert_int_equal(weft_world_progress(d[0].w, 0.1), WEFT_OK);
  assert_int_equal(weft_world_progress(d[1].w, 0.1), WEFT_OK);
  expect_same(&d[0], &d[1]);
  weft_world_destroy(d[0].w);
  weft_world_destroy(d[1].w);
}

static void test_digest_covers_published_events(void **state) {
  (void)state;
  dx_t a = dx_new(), b = dx_new();
  const uint64_t ev = 5, other = 6;
  assert_int_equal(weft_event_push(a.w, a.ch, &ev), WEFT_OK);
  expect_differ_in(&a, &b, WEFT_DIGEST_EVENTS);
  assert_int_equal(weft_event_push(b.w, b.ch, &other), WEFT_OK);
  expect_differ_in(&a, &b, WEFT_DIGEST_EVENTS);
  weft_event_clear(b.w, b.ch);
  assert_int_equal(weft_event_push(b.w, b.ch, &ev), WEFT_OK);
  expect_same(&a, &b);
  weft_event_clear(a.w, 0);
  weft_event_clear(b.w, 0);
  expect_same(&a, &b);
  weft_world_destroy(a.w);
  weft_world_destroy(b.w);
}

/* Events staged for the next sync point count, whichever worker slot
 * holds them. */
static void test_digest_covers_staged_events(void **state) {
  (void)state;
  dx_t a = dx_new(), b = dx_new();
  assert_int_equal(weft__events_slots(a.w, 2), WEFT_OK);
  assert_int_equal(weft__events_slots(b.w, 2), WEFT_OK);
  expect_same(&a, &b);
  const uint64_t e1 = 1, e2 = 2;
  assert_int_equal(weft__event_stage(a.w, 0, 10, a.ch, &e1), WEFT_OK);
  expect_differ_in(&a, &b, WEFT_DIGEST_EVENTS);
  assert_int_equal(weft__event_stage(b.w, 1, 10, b.ch, &e2), WEFT_OK);
  expect_differ_in(&a, &b, WEFT_DIGEST_EVENTS);
  /* The same two events in the other slots. */
  assert_int_equal(weft__event_stage(a.w, 1, 11, a.ch, &e2), WEFT_OK);
  assert_int_equal(weft__event_stage(b.w, 0, 11, b.ch, &e1), WEFT_OK);
  expect_differ_in(&a, &b, WEFT_DIGEST_EVENTS); /* keys swapped */
  weft_world_destroy(b.w);
  b = dx_new();
  assert_int_equal(weft__events_slots(b.w, 2), WEFT_OK);
  assert_int_equal(weft__event_stage(b.w, 1, 10, b.ch, &e1), WEFT_OK);
  assert_int_equal(weft__event_stage(b.w, 0, 11, b.ch, &e2), WEFT_OK);
  expect_same(&a, &b);
  /* Published, they are the same events in the same order. */
  assert_int_equal(weft__events_reserve(a.w, 0), WEFT_OK);
  assert_int_equal(weft__events_reserve(b.w, 0), WEFT_OK);
  assert_int_equal(weft__events_publish(a.w, NULL, WEFT_WORKER_EXTERNAL), 2);
  assert_int_equal(weft__events_publish(b.w, NULL, WEFT_WORKER_EXTERNAL), 2);
  expect_same(&a, &b);
  weft_world_destroy(a.w);
  weft_world_destroy(b.w);
}

static void test_digest_covers_random_streams(void **state) {
  (void)state;
  dx_t a = dx_new(), b = dx_new();
  weft_rng_t *x[2], *y[2];
  /* Created in either order: the same streams. */
  assert_int_equal(weft_random_stream(a.w, "x", &x[0]), WEFT_OK);
  assert_int_equal(weft_random_stream(a.w, "y", &y[0]), WEFT_OK);
  assert_int_equal(weft_random_stream(b.w, "y", &y[1]), WEFT_OK);
  assert_int_equal(weft_random_stream(b.w, "x", &x[1]), WEFT_OK);
  expect_same(&a, &b);
  (void)weft_rng_next(x[0]);
  expect_differ_in(&a, &b, WEFT_DIGEST_RANDOM);
  (void)weft_rng_next(y[1]); /* a draw from the other stream */
  expect_differ_in(&a, &b, WEFT_DIGEST_RANDOM);
  (void)weft_rng_next(x[1]);
  (void)weft_rng_next(y[0]);
  expect_same(&a, &b);
  /* The world seed, which later streams and weft_random_at() derive
   * from. */
  weft_random_seed(a.w, 99);
  weft_random_seed(b.w, 98);
  expect_differ_in(&a, &b, WEFT_DIGEST_RANDOM);
  weft_random_seed(b.w, 99);
  expect_same(&a, &b);
  weft_world_destroy(a.w);
  weft_world_destroy(b.w);
}

static void test_digest_entities_part_is_the_old_digest(void **state) {
  (void)state;
  dx_t a = dx_new(), b = dx_new();
  const weft_component_t comps[] = {a.c, 0};
  const uint64_t v = 3;
  const void *vals[] = {&v};
  wt_spawn_with(a.w, comps, vals);
  expect_differ_in(&a, &b, WEFT_DIGEST_ENTITIES);
  assert_int_equal(weft_world_digest_ex(a.w, 0), weft_world_digest_ex(b.w, 0));
  weft_world_destroy(a.w);
  weft_world_destroy(b.w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_digest_equal_worlds_are_equal),
      cmocka_unit_test(test_digest_covers_resources),
      cmocka_unit_test(test_digest_ignores_system_scratch),
      cmocka_unit_test(test_digest_covers_published_events),
      cmocka_unit_test(test_digest_covers_staged_events),
      cmocka_unit_test(test_digest_covers_random_streams),
      cmocka_unit_test(test_digest_entities_part_is_the_old_digest),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
