/* SPDX-License-Identifier: MIT */
/*
 * The streaming JSON writer (core/json.h): escaping, numbers and the
 * bookkeeping of commas and nesting.
 */
#include "core/json.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at @p s (1..4), or 0 when the bytes
 * there are not one: overlong forms, surrogates and code points above
 * U+10FFFF are not valid (RFC 3629). */
static size_t utf8_len(const unsigned char *s) {
  unsigned c = s[0];
  size_t n;
  uint32_t cp, min;
  if (c < 0x80)
    return 1;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2, cp = c & 0x1f, min = 0x80;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3, cp = c & 0x0f, min = 0x800;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4, cp = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xc0) != 0x80) /* also stops at the terminating 0 */
      return 0;
    cp = cp << 6 | (s[i] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return n;
}

void weft__json_put_string(FILE *f, const char *str) {
  fputc('"', f);
  const unsigned char *s = (const unsigned char *)str;
  while (*s) {
    unsigned c = *s;
    size_t n = utf8_len(s);
    if (c == '"' || c == '\\') {
      fputc('\\', f);
      fputc((int)c, f);
    } else if (c == '\n') {
      fputs("\\n", f);
    } else if (c == '\t') {
      fputs("\\t", f);
    } else if (c == '\r') {
      fputs("\\r", f);
    } else if (c < 0x20 || c == 0x7f || n == 0) {
      /* Control characters, and bytes outside valid UTF-8 as the code
       * point of the same value. */
      fprintf(f, "\\u%04x", c);
      n = 1;
    } else {
      fwrite(s, 1, n, f);
    }
    s += n ? n : 1;
  }
  fputc('"', f);
}

void weft__json_format_double(char *buf, size_t size, double v) {
  if (!isfinite(v)) {
    snprintf(buf, size, "null");
    return;
  }
  /* The shortest of 15, 16, 17 significant digits that reads back as the
   * same double (17 always does). */
  for (int digits = 15; digits <= 17; digits++) {
    snprintf(buf, size, "%.*g", digits, v);
    if (strtod(buf, NULL) == v)
      break;
  }
  /* A locale whose decimal point is not '.' (a host program may have set
   * one) must not leak into JSON. */
  for (char *p = buf; *p; p++)
    if (!strchr("0123456789+-eE", *p))
      *p = '.';
}

void weft__json_init(weft__json_t *j, FILE *f, uint32_t indent_depth) {
  memset(j, 0, sizeof *j);
  j->f = f;
  j->indent_depth = indent_depth;
}

/* Writes what comes before a value: the comma and the line break. */
static void before_value(weft__json_t *j) {
  if (j->after_key) {
    j->after_key = false;
    return;
  }
  if (j->depth == 0)
    return;
  if (!j->empty[j->depth - 1])
    fputc(',', j->f);
  j->empty[j->depth - 1] = false;
  if (j->depth <= j->indent_depth)
    fprintf(j->f, "\n%*s", (int)(2 * j->depth), "");
}

static void open_container(weft__json_t *j, char c, char closer) {
  before_value(j);
  if (j->depth == WEFT__JSON_MAX_DEPTH) {
    j->bad = true;
    return;
  }
  fputc(c, j->f);
  j->close[j->depth] = closer;
  j->empty[j->depth++] = true;
}

void weft__json_object(weft__json_t *j) {
  open_container(j, '{', '}');
}

void weft__json_array(weft__json_t *j) {
  open_container(j, '[', ']');
}

void weft__json_end(weft__json_t *j) {
  if (j->depth == 0 || j->after_key) {
    j->bad = true;
    return;
  }
  j->depth--;
  if (!j->empty[j->depth] && j->depth < j->indent_depth)
    fprintf(j->f, "\n%*s", (int)(2 * j->depth), "");
  fputc(j->close[j->depth], j->f);
}

void weft__json_key(weft__json_t *j, const char *key) {
  /* A key belongs in an object, and not right after another key. */
  if (j->depth == 0 || j->close[j->depth - 1] != '}' || j->after_key || !key) {
    j->bad = true;
    return;
  }
  before_value(j);
  weft__json_put_string(j->f, key);
  fputc(':', j->f);
  j->after_key = true;
}

/* A value inside an object needs its key first. */
static void before_scalar(weft__json_t *j) {
  if (j->depth > 0 && j->close[j->depth - 1] == '}' && !j->after_key)
    j->bad = true;
  before_value(j);
}

void weft__json_str(weft__json_t *j, const char *s) {
  before_scalar(j);
  if (s)
    weft__json_put_string(j->f, s);
  else
    fputs("null", j->f);
}

void weft__json_u64(weft__json_t *j, uint64_t v) {
  before_scalar(j);
  fprintf(j->f, "%" PRIu64, v);
}

void weft__json_i64(weft__json_t *j, int64_t v) {
  before_scalar(j);
  fprintf(j->f, "%" PRId64, v);
}

void weft__json_double(weft__json_t *j, double v) {
  char buf[40];
  weft__json_format_double(buf, sizeof buf, v);
  before_scalar(j);
  fputs(buf, j->f);
}

void weft__json_bool(weft__json_t *j, bool v) {
  before_scalar(j);
  fputs(v ? "true" : "false", j->f);
}

void weft__json_null(weft__json_t *j) {
  before_scalar(j);
  fputs("null", j->f);
}

void weft__json_number_text(weft__json_t *j, const char *text) {
  before_scalar(j);
  fputs(text, j->f);
}

void weft__json_kstr(weft__json_t *j, const char *key, const char *s) {
  weft__json_key(j, key);
  weft__json_str(j, s);
}

void weft__json_ku64(weft__json_t *j, const char *key, uint64_t v) {
  weft__json_key(j, key);
  weft__json_u64(j, v);
}

void weft__json_ki64(weft__json_t *j, const char *key, int64_t v) {
  weft__json_key(j, key);
  weft__json_i64(j, v);
}

void weft__json_kdouble(weft__json_t *j, const char *key, double v) {
  weft__json_key(j, key);
  weft__json_double(j, v);
}

void weft__json_kbool(weft__json_t *j, const char *key, bool v) {
  weft__json_key(j, key);
  weft__json_bool(j, v);
}

int weft__json_finish(weft__json_t *j) {
  if (j->depth != 0 || j->after_key)
    j->bad = true;
  fputc('\n', j->f);
  if (fflush(j->f) != 0 || ferror(j->f))
    return -2;
  return j->bad ? -1 : 0;
}
