/* SPDX-License-Identifier: MIT */
/* Unit tests for the error module: weft_strerror and weft_strerror_name. */
#include "support/weft_test.h"

#include <limits.h>

typedef struct error_row_t {
  int code;
  const char *name; /* "WEFT_" #name, built from the X-macro */
  const char *message;
} error_row_t;

static const error_row_t error_table[] = {
#define ROW_(name, value, msg) {value, "WEFT_" #name, msg},
    WEFT_ERRORS(ROW_)
#undef ROW_
};

#define ERROR_ROWS (sizeof error_table / sizeof error_table[0])

static void test_error_every_code_has_message_and_name(void **state) {
  (void)state;
  for (size_t i = 0; i < ERROR_ROWS; i++) {
    const error_row_t *row = &error_table[i];
    const char *msg = weft_strerror(row->code);
    const char *name = weft_strerror_name(row->code);
    assert_non_null(msg);
    assert_non_null(name);
    assert_true(strlen(msg) > 0);
    assert_string_equal(msg, row->message);
    assert_string_not_equal(msg, "unknown error");
    assert_string_equal(name, row->name);
  }
}

static void test_error_messages_and_names_are_distinct(void **state) {
  (void)state;
  for (size_t i = 0; i < ERROR_ROWS; i++) {
    for (size_t j = i + 1; j < ERROR_ROWS; j++) {
      assert_int_not_equal(error_table[i].code, error_table[j].code);
      assert_string_not_equal(weft_strerror(error_table[i].code),
                              weft_strerror(error_table[j].code));
      assert_string_not_equal(weft_strerror_name(error_table[i].code),
                              weft_strerror_name(error_table[j].code));
    }
  }
}

static void test_error_unknown_codes(void **state) {
  (void)state;
  int lowest = 0;
  for (size_t i = 0; i < ERROR_ROWS; i++) {
    if (error_table[i].code < lowest) {
      lowest = error_table[i].code;
    }
  }
  const int unknown[] = {1, 2, 42, lowest - 1, lowest - 100, INT_MIN, INT_MAX};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    const char *msg = weft_strerror(unknown[i]);
    const char *name = weft_strerror_name(unknown[i]);
    assert_non_null(msg);
    assert_non_null(name);
    assert_string_equal(msg, "unknown error");
    assert_string_equal(name, "WEFT_E?");
  }
}

static void test_error_strings_are_static(void **state) {
  (void)state;
  /* The same pointer comes back every time: the storage is static. */
  for (size_t i = 0; i < ERROR_ROWS; i++) {
    assert_ptr_equal(weft_strerror(error_table[i].code),
                     weft_strerror(error_table[i].code));
    assert_ptr_equal(weft_strerror_name(error_table[i].code),
                     weft_strerror_name(error_table[i].code));
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_error_every_code_has_message_and_name),
      cmocka_unit_test(test_error_messages_and_names_are_distinct),
      cmocka_unit_test(test_error_unknown_codes),
      cmocka_unit_test(test_error_strings_are_static),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
