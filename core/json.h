/* SPDX-License-Identifier: MIT */
/*
 * A streaming JSON writer: the one place that knows how weft escapes
 * strings and prints numbers in the JSON it writes.
 *
 * Internal, not installed, but shared on purpose: the trace
 * (scheduler/trace.c) writes with it, and so do the layers above the
 * library, weft-sim (tools/) and weft-bench (bench/), which link libweft
 * anyway and include this header from the source tree. Keeping one writer
 * keeps the three outputs' escaping and numbers the same.
 *
 * Strings: '"', '\\' and control characters are escaped; valid UTF-8 passes
 * through unchanged; a byte that is not part of a valid UTF-8 sequence is
 * written as \u00XX, the code point of the same value (its Latin-1
 * reading), so the output is always valid JSON and no byte is lost.
 * Numbers: integers exactly; doubles in the fewest significant digits
 * (15 to 17) that read back to the same double, whatever the C locale's
 * decimal point; NaN and infinities as null.
 *
 * A writer belongs to one thread. Errors (a write that failed, a
 * container closed that was not open, nesting deeper than
 * WEFT__JSON_MAX_DEPTH) are sticky and reported by weft__json_finish().
 */
#ifndef WEFT_CORE_JSON_H
#define WEFT_CORE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WEFT__JSON_MAX_DEPTH 32u

typedef struct weft__json_t {
  FILE *f;
  uint32_t depth;        /* open containers */
  uint32_t indent_depth; /* values in containers this deep start a line */
  bool after_key;        /* a key was written; its value comes next */
  bool bad;              /* misuse: unbalanced or too deep */
  bool empty[WEFT__JSON_MAX_DEPTH]; /* no value yet in this container */
  char close[WEFT__JSON_MAX_DEPTH]; /* '}' or ']': what closes it */
} weft__json_t;

/* Starts writing to @p f (owned by the caller, who closes it). Values in
 * containers at most @p indent_depth deep start on a new line, indented
 * two spaces a level; 0 writes everything on one line. */
void weft__json_init(weft__json_t *j, FILE *f, uint32_t indent_depth);

void weft__json_object(weft__json_t *j); /* { */
void weft__json_array(weft__json_t *j);  /* [ */
void weft__json_end(weft__json_t *j);    /* } or ], whichever is open */

/* The key of the next value; only inside an object. */
void weft__json_key(weft__json_t *j, const char *key);

void weft__json_str(weft__json_t *j, const char *s); /* NULL: null */
void weft__json_u64(weft__json_t *j, uint64_t v);
void weft__json_i64(weft__json_t *j, int64_t v);
void weft__json_double(weft__json_t *j, double v);
void weft__json_bool(weft__json_t *j, bool v);
void weft__json_null(weft__json_t *j);
/* A number already formatted by the caller (digits, '.', '-', 'e'). */
void weft__json_number_text(weft__json_t *j, const char *text);

/* Key and value in one call. */
void weft__json_kstr(weft__json_t *j, const char *key, const char *s);
void weft__json_ku64(weft__json_t *j, const char *key, uint64_t v);
void weft__json_ki64(weft__json_t *j, const char *key, int64_t v);
void weft__json_kdouble(weft__json_t *j, const char *key, double v);
void weft__json_kbool(weft__json_t *j, const char *key, bool v);

/* Writes the escaped, quoted form of @p s to @p f (no writer state). */
void weft__json_put_string(FILE *f, const char *s);
/* Formats @p v as weft__json_double() would into @p buf (at least 32
 * bytes); "null" when it is not finite. */
void weft__json_format_double(char *buf, size_t size, double v);

/* Ends the document with a newline. Returns 0, -1 when the containers do
 * not balance (or nest too deep), or -2 when a write failed (errno says
 * why). Does not close the file. */
int weft__json_finish(weft__json_t *j);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_CORE_JSON_H */
