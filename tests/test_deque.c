/* SPDX-License-Identifier: MIT */
/*
 * The scheduler's work-stealing deque, single-threaded: order at each end,
 * the full and empty edges, capacity validation, the last-item handoff
 * between pop and steal, and a randomized run against a plain array model
 * that wraps the ring many times. Threaded races are in stress_deque.c.
 */
#include "support/weft_test.h"

#include <stdalign.h>

#include "scheduler/deque.h"

/* Items are small integers disguised as pointers; 0 would be NULL. */
static void *item(uintptr_t i) {
  return (void *)(i + 1);
}

static uintptr_t index_of(void *p) {
  return (uintptr_t)p - 1;
}

static void test_deque_init_validates_capacity(void **state) {
  (void)state;
  static const uint32_t bad[] = {
      0, 3, 6, 100, (UINT32_C(1) << 30) + 1, UINT32_C(1) << 31, UINT32_MAX};
  weft__deque_t d;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(weft__deque_init(&d, bad[i]), WEFT_EINVAL);
    assert_null(d.buf);
    weft__deque_fini(&d); /* safe after a failed init */
  }
  static const uint32_t good[] = {1, 2, 64, 4096};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    assert_int_equal(weft__deque_init(&d, good[i]), 0);
    assert_int_equal(d.mask + 1, good[i]);
    assert_true(wt_aligned(d.buf, 64));
    assert_int_equal(weft__deque_size(&d), 0);
    weft__deque_fini(&d);
    weft__deque_fini(&d); /* and twice */
  }
}

static void test_deque_layout_separates_indices(void **state) {
  (void)state;
  weft__deque_t d;
  assert_true(alignof(weft__deque_t) >= 64);
  assert_true(wt_aligned(&d, 64));
  uintptr_t top = (uintptr_t)&d.top, bottom = (uintptr_t)&d.bottom;
  uintptr_t buf = (uintptr_t)&d.buf;
  assert_true(top / 64 != bottom / 64);
  assert_true(buf / 64 != top / 64 && buf / 64 != bottom / 64);
}

static void test_deque_empty_returns_null(void **state) {
  (void)state;
  weft__deque_t d;
  assert_int_equal(weft__deque_init(&d, 8), 0);
  bool contended = true;
  assert_null(weft__deque_pop(&d));
  assert_null(weft__deque_steal(&d, &contended));
  assert_false(contended);
  assert_null(weft__deque_steal(&d, NULL));
  assert_int_equal(weft__deque_size(&d), 0);
  /* Emptied again after use, from either end. */
  assert_true(weft__deque_push(&d, item(1)));
  assert_true(weft__deque_push(&d, item(2)));
  assert_ptr_equal(weft__deque_pop(&d), item(2));
  assert_ptr_equal(weft__deque_steal(&d, &contended), item(1));
  assert_false(contended);
  assert_null(weft__deque_pop(&d));
  assert_null(weft__deque_pop(&d)); /* a failed pop leaves bottom intact */
  assert_null(weft__deque_steal(&d, &contended));
  assert_false(contended);
  assert_int_equal(weft__deque_size(&d), 0);
  assert_true(weft__deque_push(&d, item(3)));
  assert_int_equal(weft__deque_size(&d), 1);
  assert_ptr_equal(weft__deque_pop(&d), item(3));
  weft__deque_fini(&d);
}

static void test_deque_pop_is_lifo(void **state) {
  (void)state;
  weft__deque_t d;
  assert_int_equal(weft__deque_init(&d, 64), 0);
  for (uintptr_t i = 0; i < 50; i++) {
    assert_true(weft__deque_push(&d, item(i)));
    assert_int_equal(weft__deque_size(&d), i + 1);
  }
  for (uintptr_t i = 50; i-- > 0;) {
    assert_ptr_equal(weft__deque_pop(&d), item(i));
    assert_int_equal(weft__deque_size(&d), i);
  }
  assert_null(weft__deque_pop(&d));
  weft__deque_fini(&d);
}

static void test_deque_steal_is_fifo(void **state) {
  (void)state;
  weft__deque_t d;
  assert_int_equal(weft__deque_init(&d, 64), 0);
  for (uintptr_t i = 0; i < 50; i++)
    assert_true(weft__deque_push(&d, item(i)));
  for (uintptr_t i = 0; i < 50; i++) {
    bool contended = true;
    assert_ptr_equal(weft__deque_steal(&d, &contended), item(i));
    assert_false(contended);
    assert_int_equal(weft__deque_size(&d), 49 - i);
  }
  assert_null(weft__deque_steal(&d, NULL));
  weft__deque_fini(&d);
}

static void test_deque_full_push_fails(void **state) {
  (void)state;
  static const uint32_t caps[] = {1, 2, 16};
  for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
    uint32_t cap = caps[c];
    weft__deque_t d;
    assert_int_equal(weft__deque_init(&d, cap), 0);
    for (uintptr_t i = 0; i < cap; i++)
      assert_true(weft__deque_push(&d, item(i)));
    assert_int_equal(weft__deque_size(&d), cap);
    assert_false(weft__deque_push(&d, item(999)));
    assert_int_equal(weft__deque_size(&d), cap);
    /* A steal frees the oldest slot; the next push reuses it (wrapping)
     * without disturbing the items around it. */
    assert_ptr_equal(weft__deque_steal(&d, NULL), item(0));
    assert_true(weft__deque_push(&d, item(cap)));
    assert_false(weft__deque_push(&d, item(999)));
    assert_ptr_equal(weft__deque_pop(&d), item(cap));
    assert_true(weft__deque_push(&d, item(cap + 1)));
    for (uintptr_t i = 1; i < cap; i++)
      assert_ptr_equal(weft__deque_steal(&d, NULL), item(i));
    assert_ptr_equal(weft__deque_steal(&d, NULL), item(cap + 1));
    assert_null(weft__deque_steal(&d, NULL));
    assert_null(weft__deque_pop(&d));
    weft__deque_fini(&d);
  }
}

/* One item: whichever end takes it first gets it, the other sees empty,
 * and both indices are left so that the deque works on. */
static void test_deque_last_item_goes_to_one_end(void **state) {
  (void)state;
  weft__deque_t d;
  assert_int_equal(weft__deque_init(&d, 1), 0);
  for (uintptr_t round = 0; round < 8; round++) {
    bool contended = true;
    assert_true(weft__deque_push(&d, item(round)));
    assert_false(weft__deque_push(&d, item(999)));
    if (round % 2 == 0) {
      assert_ptr_equal(weft__deque_pop(&d), item(round));
      assert_null(weft__deque_steal(&d, &contended));
    } else {
      assert_ptr_equal(weft__deque_steal(&d, &contended), item(round));
      assert_false(contended);
      assert_null(weft__deque_pop(&d));
    }
    assert_false(contended);
    assert_int_equal(weft__deque_size(&d), 0);
    assert_int_equal(atomic_load(&d.top), atomic_load(&d.bottom));
  }
  weft__deque_fini(&d);
}

/* Random pushes, pops and steals against a model ring; small capacities so
 * the indices wrap the buffer many times and the full edge comes up. */
static void test_deque_matches_model(void **state) {
  (void)state;
  enum { MAXCAP = 32, OPS = 20000 };
  wt_rng_t rng = wt_rng(0xdec0de);
  static const uint32_t caps[] = {1, 2, 4, 32};
  for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
    uint32_t cap = caps[c];
    weft__deque_t d;
    assert_int_equal(weft__deque_init(&d, cap), 0);
    uintptr_t model[MAXCAP];
    uint32_t head = 0, count = 0; /* model[head] is the oldest item */
    uintptr_t next = 0;
    for (uint32_t op = 0; op < OPS; op++) {
      uint32_t r = wt_below(&rng, 10);
      if (r < 5) {
        bool ok = weft__deque_push(&d, item(next));
        assert_int_equal(ok, count < cap);
        if (ok)
          model[(head + count++) % cap] = next;
        next++;
      } else if (r < 7) {
        void *p = weft__deque_pop(&d);
        if (count == 0) {
          assert_null(p);
        } else {
          assert_non_null(p);
          assert_int_equal(index_of(p), model[(head + --count) % cap]);
        }
      } else {
        bool contended = true;
        void *p = weft__deque_steal(&d, &contended);
        assert_false(contended);
        if (count == 0) {
          assert_null(p);
        } else {
          assert_non_null(p);
          assert_int_equal(index_of(p), model[head]);
          head = (head + 1) % cap;
          count--;
        }
      }
      assert_int_equal(weft__deque_size(&d), count);
    }
    weft__deque_fini(&d);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_deque_init_validates_capacity),
      cmocka_unit_test(test_deque_layout_separates_indices),
      cmocka_unit_test(test_deque_empty_returns_null),
      cmocka_unit_test(test_deque_pop_is_lifo),
      cmocka_unit_test(test_deque_steal_is_fifo),
      cmocka_unit_test(test_deque_full_push_fails),
      cmocka_unit_test(test_deque_last_item_goes_to_one_end),
      cmocka_unit_test(test_deque_matches_model),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
