/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the JSON writer (core/json.h), which escapes strings that
 * come from outside (component, system and phase names in weft-sim's
 * --json reports and traces). The input is cut at NUL bytes into strings,
 * written as an array of strings, each followed by the double made of its
 * first eight bytes, inside an object nested as deep as the first byte
 * says. Whatever the bytes, the document must parse as strict JSON with
 * exactly that shape; ASCII strings must come back byte for byte, others
 * at least as long (every byte decodes to one or more); finite doubles
 * come back bit for bit and the rest as null.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "fuzz.h"
#include "support/json_parse.h"

/* Containers the first byte may ask for, below the writer's limit. */
#define NEST_MAX 8u

static bool ascii(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] >= 0x80)
      return false;
  return true;
}

static double double_of(const char *s, size_t n) {
  double d = 0;
  memcpy(&d, s, n < sizeof d ? n : sizeof d);
  return d;
}

/* Checks item k of the parsed array against string s of length n. */
static void check_pair(const jp_value_t *str, const jp_value_t *num,
                       const char *s, size_t n) {
  FUZZ_CHECK(str && str->type == JP_STRING);
  if (ascii(s, n))
    FUZZ_CHECK(str->len == n && memcmp(str->text, s, n) == 0);
  else
    FUZZ_CHECK(str->len >= n);
  double d = double_of(s, n);
  if (isfinite(d)) {
    FUZZ_CHECK(num && num->type == JP_NUMBER);
    FUZZ_CHECK(memcmp(&num->number, &d, sizeof d) == 0 ||
               (d == 0 && num->number == 0)); /* -0 may read back as 0 */
  } else {
    FUZZ_CHECK(num && num->type == JP_NULL);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint32_t nest = size ? data[0] % NEST_MAX : 0;
  /* The strings: the input after the first byte, NUL-terminated pieces. */
  char *text = malloc(size + 1);
  FUZZ_CHECK(text);
  size_t len = size ? size - 1 : 0;
  if (len)
    memcpy(text, data + 1, len);
  text[len] = '\0';
  char *out = NULL;
  size_t out_len = 0;
  FILE *f = open_memstream(&out, &out_len);
  FUZZ_CHECK(f);
  weft__json_t j;
  weft__json_init(&j, f, 2);
  for (uint32_t d = 0; d < nest; d++) {
    weft__json_object(&j);
    weft__json_key(&j, "k");
  }
  weft__json_array(&j);
  size_t pieces = 0;
  for (size_t at = 0; at <= len; pieces++) {
    size_t n = strlen(text + at);
    weft__json_str(&j, text + at);
    weft__json_double(&j, double_of(text + at, n));
    at += n + 1;
  }
  for (uint32_t d = 0; d <= nest; d++)
    weft__json_end(&j);
  FUZZ_CHECK(weft__json_finish(&j) == 0);
  FUZZ_CHECK(fclose(f) == 0);
  jp_value_t *doc = jp_parse(out, out_len);
  FUZZ_CHECK(doc);
  const jp_value_t *v = doc;
  for (uint32_t d = 0; d < nest; d++) {
    FUZZ_CHECK(v->type == JP_OBJECT && v->n == 1);
    v = jp_get(v, "k");
    FUZZ_CHECK(v);
  }
  FUZZ_CHECK(v->type == JP_ARRAY && v->n == 2 * pieces);
  size_t at = 0;
  for (size_t k = 0; k < pieces; k++) {
    size_t n = strlen(text + at);
    check_pair(v->items[2 * k], v->items[2 * k + 1], text + at, n);
    at += n + 1;
  }
  jp_free(doc);
  free(out);
  free(text);
  return 0;
}
