/* SPDX-License-Identifier: MIT */
/*
 * weft from C++: <weft.h> compiled as C++17 (-Wall -Wextra -Werror
 * -pedantic) must describe the same ABI as the C library it calls. Every
 * public type has the same size and alignment in both languages, the
 * descriptor macros build the same descriptors, and weft_counter_t's
 * std::atomic is the very counter C's _Atomic updates.
 */
#include <atomic>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <csetjmp>
#include <cstring>

/* cmocka 1.1's header declares its functions without extern "C". */
extern "C" {
#include <cmocka.h>
}

#include "support/cxx_layout.h"

static const cxx_layout_row_t cxx_layout_cpp[] = {
#define WEFT_LAYOUT_TYPE(T) {#T, sizeof(T), alignof(T)},
#include "cxx_layout_list.h"
#undef WEFT_LAYOUT_TYPE
};

static void test_cxx_layout_matches_c(void **state) {
  (void)state;
  const size_t count = sizeof cxx_layout_cpp / sizeof cxx_layout_cpp[0];
  assert_int_equal(count, cxx_layout_c_count);
  /* The generated list found the public types (at least the ones named
   * here), so the comparison is not over an empty table. */
  bool saw_counter = false, saw_iter = false;
  for (size_t i = 0; i < count; i++) {
    const cxx_layout_row_t &cpp = cxx_layout_cpp[i];
    const cxx_layout_row_t &c = cxx_layout_c[i];
    assert_string_equal(cpp.name, c.name);
    if (cpp.size != c.size || cpp.align != c.align) {
      std::fprintf(stderr, "%s: C++ size %zu align %zu, C size %zu align %zu\n",
                   cpp.name, cpp.size, cpp.align, c.size, c.align);
      fail();
    }
    saw_counter |= std::strcmp(cpp.name, "weft_counter_t") == 0;
    saw_iter |= std::strcmp(cpp.name, "weft_iter_t") == 0;
  }
  assert_true(saw_counter);
  assert_true(saw_iter);
  assert_int_equal(sizeof(weft_counter_t), 64);
  assert_int_equal(alignof(weft_counter_t), 64);
}

static void test_cxx_counter_shared_with_c(void **state) {
  (void)state;
  weft_counter_t counter{};
  assert_int_equal(counter.pending.load(), 0);
  cxx_layout_c_counter_add(&counter, 5);
  assert_int_equal(counter.pending.load(), 5);
  counter.pending.fetch_sub(2);
  cxx_layout_c_counter_add(&counter, 1);
  assert_int_equal(counter.pending.load(), 4);
}

static void test_cxx_descriptors_match_c(void **state) {
  (void)state;
  const weft_component_desc_t cpp = WEFT_COMPONENT_DESC(cxx_probe_t);
  const weft_component_desc_t c = cxx_layout_c_probe_desc();
  assert_string_equal(cpp.name, "cxx_probe_t");
  assert_string_equal(cpp.name, c.name);
  assert_int_equal(cpp.size, c.size);
  assert_int_equal(cpp.size, sizeof(cxx_probe_t));
  assert_int_equal(cpp.alignment, c.alignment);
  assert_int_equal(cpp.alignment, alignof(cxx_probe_t));
  assert_null(cpp.fields);
  assert_int_equal(cpp.field_count, c.field_count);
  assert_int_equal(cpp.flags, c.flags);

  const weft_field_desc_t fcpp = WEFT_FIELD(cxx_probe_t, xyz);
  const weft_field_desc_t fc = cxx_layout_c_probe_field();
  assert_string_equal(fcpp.name, "xyz");
  assert_string_equal(fcpp.name, fc.name);
  assert_int_equal(fcpp.offset, offsetof(cxx_probe_t, xyz));
  assert_int_equal(fcpp.offset, fc.offset);
  assert_int_equal(fcpp.size, 3 * sizeof(float));
  assert_int_equal(fcpp.size, fc.size);
}

static void add_job(void *arg, uint32_t) {
  static_cast<std::atomic<int> *>(arg)->fetch_add(1);
}

/* Jobs submitted from C++ against a C++ counter: the pool (C) decrements
 * the std::atomic and weft_pool_wait() sees it reach zero. */
static void test_cxx_pool_waits_on_counter(void **state) {
  (void)state;
  weft_pool_config_t config{};
  config.placement.workers = 2;
  weft_pool_t *pool = nullptr;
  assert_int_equal(weft_pool_create(&config, &pool), WEFT_OK);
  std::atomic<int> ran{0};
  weft_counter_t done{};
  enum { JOBS = 1000 };
  for (int i = 0; i < JOBS; i++) {
    weft_pool_submit(pool, WEFT_WORKER_EXTERNAL, add_job, &ran, &done,
                     WEFT_WORKER_EXTERNAL);
  }
  weft_pool_wait(pool, WEFT_WORKER_EXTERNAL, &done);
  assert_int_equal(ran.load(), JOBS);
  assert_int_equal(done.pending.load(), 0);
  weft_pool_destroy(pool);
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cxx_layout_matches_c),
      cmocka_unit_test(test_cxx_counter_shared_with_c),
      cmocka_unit_test(test_cxx_descriptors_match_c),
      cmocka_unit_test(test_cxx_pool_waits_on_counter),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
