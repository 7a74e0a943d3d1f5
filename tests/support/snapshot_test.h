/* SPDX-License-Identifier: MIT */
/*
 * What the snapshot tests share: a growing memory sink for
 * weft_snapshot_save() (that can fail after a given size, for the
 * writer-error tests), a save into it and a load from it that fail the
 * test with the library's message. Header-only; every function is static.
 */
#ifndef WEFT_TEST_SNAPSHOT_TEST_H
#define WEFT_TEST_SNAPSHOT_TEST_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "support/weft_test.h"

typedef struct mem_t {
  uint8_t *p;
  size_t n;
  size_t cap;
  size_t fail_after; /* 0: never */
} mem_t;

static inline int mem_write(void *user, const void *data, size_t n) {
  mem_t *m = user;
  if (m->fail_after && m->n + n > m->fail_after)
    return WEFT_EIO;
  if (m->n + n > m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 4096;
    while (cap < m->n + n)
      cap *= 2;
    m->p = realloc(m->p, cap);
    assert_non_null(m->p);
    m->cap = cap;
  }
  memcpy(m->p + m->n, data, n);
  m->n += n;
  return 0;
}

/* A snapshot of w in memory (free m.p). */
static inline mem_t save(weft_world_t *w) {
  mem_t m = {0};
  weft_snapshot_writer_t wr = {mem_write, &m};
  weft_snapshot_error_t err;
  if (weft_snapshot_save(w, &wr, &err))
    fail_msg("save: %s", err.message);
  return m;
}

/* Loads m into w, failing the test with the loader's message. */
static inline void load_ok(weft_world_t *w, const mem_t *m) {
  weft_snapshot_error_t err;
  int rc = weft_snapshot_load_memory(w, m->p, m->n, &err);
  if (rc)
    fail_msg("load: %d %s at %llu: %s", rc, err.section,
             (unsigned long long)err.offset, err.message);
}

#endif /* WEFT_TEST_SNAPSHOT_TEST_H */
