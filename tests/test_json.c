/* SPDX-License-Identifier: MIT */
/*
 * The shared JSON writer (core/json.h): strings round-trip through a strict
 * parser (support/json_parse.h) byte for byte when they are UTF-8 and as
 * their Latin-1 reading when they are not; doubles round-trip bit for bit;
 * NaN and infinities become null; nesting balances or is reported.
 */
#define _POSIX_C_SOURCE 200809L
#include "support/weft_test.h"

#include <locale.h>
#include <math.h>
#include <stdlib.h>

#include "core/json.h"
#include "support/json_parse.h"

/* A writer into memory; wt_json_close() returns the text. */
typedef struct wt_json_t {
  weft__json_t j;
  FILE *f;
  char *text;
  size_t len;
} wt_json_t;

static void wt_json_open(wt_json_t *w, uint32_t indent) {
  memset(w, 0, sizeof *w);
  w->f = open_memstream(&w->text, &w->len);
  assert_non_null(w->f);
  weft__json_init(&w->j, w->f, indent);
}

static int wt_json_close(wt_json_t *w) {
  int rc = weft__json_finish(&w->j);
  assert_int_equal(fclose(w->f), 0);
  return rc;
}

/* Writes @p s as the only value of a document and parses it back. */
static jp_value_t *round_trip_string(const char *s) {
  wt_json_t w;
  wt_json_open(&w, 0);
  weft__json_array(&w.j);
  weft__json_str(&w.j, s);
  weft__json_end(&w.j);
  assert_int_equal(wt_json_close(&w), 0);
  jp_value_t *v = jp_parse(w.text, w.len);
  if (!v)
    fail_msg("not valid JSON: %s", w.text);
  free(w.text);
  assert_int_equal(v->type, JP_ARRAY);
  assert_int_equal(v->n, 1);
  assert_int_equal(v->items[0]->type, JP_STRING);
  return v;
}

static void expect_json_string(const char *in, const char *want) {
  jp_value_t *v = round_trip_string(in);
  assert_int_equal(v->items[0]->len, strlen(want));
  assert_memory_equal(v->items[0]->text, want, strlen(want));
  jp_free(v);
}

static void test_json_escapes_quotes_backslashes_controls(void **state) {
  (void)state;
  expect_json_string("plain", "plain");
  expect_json_string("say \"hi\"", "say \"hi\"");
  expect_json_string("C:\\dir\\", "C:\\dir\\");
  expect_json_string("tab\tnew\nret\r", "tab\tnew\nret\r");
  expect_json_string("\x01\x1f\x7f end", "\x01\x1f\x7f end");
  expect_json_string("", "");
  /* Every control character alone, escaped and read back. */
  for (int c = 1; c < 0x20; c++) {
    char s[2] = {(char)c, 0};
    expect_json_string(s, s);
  }
}

static void test_json_passes_valid_utf8(void **state) {
  (void)state;
  const char *valid[] = {"caf\xc3\xa9", "\xe2\x82\xac 5",
                         "\xf0\x9f\x90\xa6 boid", "\xef\xbf\xbf",
                         "\xf4\x8f\xbf\xbf"};
  for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++) {
    expect_json_string(valid[i], valid[i]);
    /* Passed through as bytes, not escaped. */
    wt_json_t w;
    wt_json_open(&w, 0);
    weft__json_str(&w.j, valid[i]);
    assert_int_equal(wt_json_close(&w), 0);
    assert_non_null(strstr(w.text, valid[i]));
    free(w.text);
  }
}

/* The Latin-1 reading of @p s: each byte as the code point of its value. */
static void latin1(const char *s, char *out) {
  for (; *s; s++) {
    unsigned c = (unsigned char)*s;
    if (c < 0x80) {
      *out++ = (char)c;
    } else {
      *out++ = (char)(0xc0 | c >> 6);
      *out++ = (char)(0x80 | (c & 0x3f));
    }
  }
  *out = 0;
}

static void test_json_escapes_invalid_utf8(void **state) {
  (void)state;
  /* A lone continuation byte, a truncated sequence, an overlong '/', a
   * surrogate, a code point past U+10FFFF, bytes never valid. */
  const char *invalid[] = {
      "\x80",    "a\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
      "\xfe\xff"};
  for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
    char want[32];
    latin1(invalid[i], want);
    expect_json_string(invalid[i], want);
  }
  /* Mixed: the valid sequence survives next to the invalid byte. */
  expect_json_string("\xc3\xa9\xff", "\xc3\xa9\xc3\xbf");
}

/* Length of a valid UTF-8 sequence at @p s, by the table of RFC 3629
 * section 4 (a second reading, independent of the writer's), or 0. */
static size_t valid_utf8(const unsigned char *s) {
  static const struct {
    unsigned char lo0, hi0, lo1, hi1;
    size_t n;
  } rows[] = {{0x01, 0x7f, 0, 0, 1},       {0xc2, 0xdf, 0x80, 0xbf, 2},
              {0xe0, 0xe0, 0xa0, 0xbf, 3}, {0xe1, 0xec, 0x80, 0xbf, 3},
              {0xed, 0xed, 0x80, 0x9f, 3}, {0xee, 0xef, 0x80, 0xbf, 3},
              {0xf0, 0xf0, 0x90, 0xbf, 4}, {0xf1, 0xf3, 0x80, 0xbf, 4},
              {0xf4, 0xf4, 0x80, 0x8f, 4}};
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    if (s[0] < rows[r].lo0 || s[0] > rows[r].hi0)
      continue;
    if (rows[r].n == 1)
      return 1;
    if (s[1] < rows[r].lo1 || s[1] > rows[r].hi1)
      return 0;
    for (size_t i = 2; i < rows[r].n; i++)
      if (s[i] < 0x80 || s[i] > 0xbf)
        return 0;
    return rows[r].n;
  }
  return 0;
}

/* What the writer promises a reader gets back for @p s. */
static void expected_reading(const char *s, char *out) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    size_t n = valid_utf8(p);
    if (n) {
      memcpy(out, p, n);
      out += n, p += n;
    } else {
      *out++ = (char)(0xc0 | *p >> 6);
      *out++ = (char)(0x80 | (*p & 0x3f));
      p++;
    }
  }
  *out = 0;
}

/* Random byte strings: valid JSON every time, and they read back as the
 * writer promises (valid sequences as they are, other bytes as Latin-1). */
static void test_json_random_strings_round_trip(void **state) {
  (void)state;
  wt_rng_t rng = wt_rng(27);
  for (int round = 0; round < 2000; round++) {
    char s[24];
    size_t n = (size_t)wt_below(&rng, sizeof s - 1);
    for (size_t i = 0; i < n; i++) {
      uint32_t r = (uint32_t)wt_below(&rng, 4);
      /* Bias towards UTF-8 lead and continuation bytes. */
      s[i] = (char)(r == 0   ? 0x80 + wt_below(&rng, 0x80)
                    : r == 1 ? 0xc0 + wt_below(&rng, 0x40)
                             : 1 + wt_below(&rng, 0xff));
    }
    s[n] = 0;
    char want[3 * sizeof s];
    expected_reading(s, want);
    jp_value_t *v = round_trip_string(s);
    assert_int_equal(v->items[0]->len, strlen(want));
    assert_memory_equal(v->items[0]->text, want, strlen(want));
    jp_free(v);
  }
}

static void expect_double(double d) {
  wt_json_t w;
  wt_json_open(&w, 0);
  weft__json_array(&w.j);
  weft__json_double(&w.j, d);
  weft__json_end(&w.j);
  assert_int_equal(wt_json_close(&w), 0);
  jp_value_t *v = jp_parse(w.text, w.len);
  if (!v)
    fail_msg("not valid JSON: %s", w.text);
  if (isfinite(d)) {
    assert_int_equal(v->items[0]->type, JP_NUMBER);
    double back = v->items[0]->number;
    if (memcmp(&back, &d, sizeof d) != 0)
      fail_msg("%.17g came back as %.17g (%s)", d, back, w.text);
    /* The shortest form that round-trips: 0.1 is "0.1". */
    assert_true(v->items[0]->len <= 24);
  } else {
    assert_int_equal(v->items[0]->type, JP_NULL);
  }
  jp_free(v);
  free(w.text);
}

static void test_json_doubles_round_trip(void **state) {
  (void)state;
  const double fixed[] = {
      0.0,         -0.0,      0.1,      1.0 / 3.0,
      1e300,       -2.5e-308, 5e-324,   1.7976931348623157e308,
      123456789.0, NAN,       INFINITY, -INFINITY};
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    expect_double(fixed[i]);
  wt_rng_t rng = wt_rng(9);
  for (int i = 0; i < 5000; i++) {
    uint64_t bits = wt_next(&rng);
    double d;
    memcpy(&d, &bits, sizeof d);
    expect_double(d);
  }
  char buf[40];
  weft__json_format_double(buf, sizeof buf, 0.1);
  assert_string_equal(buf, "0.1");
}

/* A host program may set a locale whose decimal point is a comma; the
 * JSON must still say 0.5. */
static void test_json_doubles_ignore_locale(void **state) {
  (void)state;
  const char *names[] = {"de_DE.UTF-8", "fr_FR.UTF-8", "de_DE", "C"};
  const char *set = NULL;
  for (size_t i = 0; i < 4 && !set; i++)
    set = setlocale(LC_NUMERIC, names[i]);
  bool comma = set && strcmp(localeconv()->decimal_point, ".") != 0;
  char buf[40];
  weft__json_format_double(buf, sizeof buf, 0.5);
  setlocale(LC_NUMERIC, "C");
  if (!comma)
    skip(); /* no such locale installed: nothing to prove here */
  assert_string_equal(buf, "0.5");
}

static void test_json_nests_and_indents(void **state) {
  (void)state;
  wt_json_t w;
  wt_json_open(&w, 1);
  weft__json_object(&w.j);
  weft__json_ku64(&w.j, "a", 18446744073709551615u);
  weft__json_ki64(&w.j, "b", -9);
  weft__json_key(&w.j, "list");
  weft__json_array(&w.j);
  weft__json_bool(&w.j, true);
  weft__json_null(&w.j);
  weft__json_object(&w.j);
  weft__json_end(&w.j);
  weft__json_array(&w.j);
  weft__json_end(&w.j);
  weft__json_number_text(&w.j, "1.250");
  weft__json_end(&w.j);
  weft__json_kstr(&w.j, "s", NULL);
  weft__json_kbool(&w.j, "f", false);
  weft__json_kdouble(&w.j, "d", 2.5);
  weft__json_end(&w.j);
  assert_int_equal(wt_json_close(&w), 0);
  assert_string_equal(w.text,
                      "{\n  \"a\":18446744073709551615,\n  \"b\":-9,\n"
                      "  \"list\":[true,null,{},[],1.250],\n"
                      "  \"s\":null,\n  \"f\":false,\n  \"d\":2.5\n}\n");
  jp_value_t *v = jp_parse(w.text, w.len);
  assert_non_null(v);
  assert_int_equal(jp_get(v, "list")->n, 5);
  assert_true(jp_get(v, "list")->items[4]->number == 1.25);
  jp_free(v);
  free(w.text);
}

static void test_json_reports_misuse(void **state) {
  (void)state;
  wt_json_t w;
  /* A container left open. */
  wt_json_open(&w, 0);
  weft__json_array(&w.j);
  assert_int_equal(wt_json_close(&w), -1);
  free(w.text);
  /* One closed that was never opened. */
  wt_json_open(&w, 0);
  weft__json_end(&w.j);
  assert_int_equal(wt_json_close(&w), -1);
  free(w.text);
  /* A value in an object without its key, a key in an array. */
  wt_json_open(&w, 0);
  weft__json_object(&w.j);
  weft__json_u64(&w.j, 1);
  weft__json_end(&w.j);
  assert_int_equal(wt_json_close(&w), -1);
  free(w.text);
  wt_json_open(&w, 0);
  weft__json_array(&w.j);
  weft__json_key(&w.j, "k");
  weft__json_end(&w.j);
  assert_int_equal(wt_json_close(&w), -1);
  free(w.text);
  /* Too deep. */
  wt_json_open(&w, 0);
  for (uint32_t i = 0; i <= WEFT__JSON_MAX_DEPTH; i++)
    weft__json_array(&w.j);
  for (uint32_t i = 0; i < WEFT__JSON_MAX_DEPTH; i++)
    weft__json_end(&w.j);
  assert_int_equal(wt_json_close(&w), -1);
  free(w.text);
}

/* A write that fails (a full device) is reported as -2. */
static void test_json_reports_write_errors(void **state) {
  (void)state;
  FILE *f = fopen("/dev/full", "w");
  if (!f)
    skip();
  weft__json_t j;
  weft__json_init(&j, f, 0);
  weft__json_array(&j);
  for (int i = 0; i < 10000; i++)
    weft__json_str(&j, "filling the buffer until it must be written");
  weft__json_end(&j);
  assert_int_equal(weft__json_finish(&j), -2);
  fclose(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_json_escapes_quotes_backslashes_controls),
      cmocka_unit_test(test_json_passes_valid_utf8),
      cmocka_unit_test(test_json_escapes_invalid_utf8),
      cmocka_unit_test(test_json_random_strings_round_trip),
      cmocka_unit_test(test_json_doubles_round_trip),
      cmocka_unit_test(test_json_doubles_ignore_locale),
      cmocka_unit_test(test_json_nests_and_indents),
      cmocka_unit_test(test_json_reports_misuse),
      cmocka_unit_test(test_json_reports_write_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
