/* SPDX-License-Identifier: MIT */
/* The world's allocator: jemalloc in normal builds, libc under sanitizers. */
#define _DEFAULT_SOURCE 1 /* MADV_HUGEPAGE */
#include "core/alloc.h"

#include "weft/error.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifndef WEFT_SYSTEM_MALLOC
#include <jemalloc/jemalloc.h>
#include <strings.h> /* ffs(), used by MALLOCX_ALIGN */
#endif

/* True when the injected failure is due (see weft__alloc_stats_t). */
static inline int injected_failure(weft__alloc_stats_t *st) {
  return st && st->fail_in && --st->fail_in == 0;
}

void *weft__alloc(weft__alloc_stats_t *st, size_t size, size_t align) {
  if (injected_failure(st))
    return NULL;
  if (size == 0)
    size = 1;
  if (align < sizeof(void *))
    align = sizeof(void *);
  void *p;
#ifdef WEFT_SYSTEM_MALLOC
  if (posix_memalign(&p, align, size) != 0)
    p = NULL;
#else
  p = mallocx(size, MALLOCX_ALIGN(align));
#endif
  if (p && st) {
    st->allocs++;
    st->bytes += size;
  }
  return p;
}

void *weft__calloc(weft__alloc_stats_t *st, size_t size, size_t align) {
  void *p = weft__alloc(st, size, align);
  if (p)
    memset(p, 0, size);
  return p;
}

void *weft__realloc(weft__alloc_stats_t *st, void *p, size_t old_size,
                    size_t new_size) {
  if (!p)
    return weft__alloc(st, new_size, 16);
  (void)old_size;
  if (injected_failure(st))
    return NULL;
  void *q;
#ifdef WEFT_SYSTEM_MALLOC
  q = realloc(p, new_size ? new_size : 1);
#else
  q = rallocx(p, new_size ? new_size : 1, MALLOCX_ALIGN(16));
#endif
  if (q && st) {
    st->allocs++;
    st->bytes += new_size;
  }
  return q;
}

void weft__free(void *p, size_t size, size_t align) {
  if (!p)
    return;
  (void)size;
  (void)align;
#ifdef WEFT_SYSTEM_MALLOC
  free(p);
#else
  dallocx(p, 0);
#endif
}

void weft__advise_huge(void *p, size_t bytes) {
#ifdef MADV_HUGEPAGE
  if (p && bytes >= (2u << 20))
    (void)madvise(p, bytes, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

int weft__grow_slow(weft__alloc_stats_t *st, void *arrayp, uint32_t *cap,
                    uint32_t need, size_t elem, uint32_t first) {
  uint64_t n = *cap ? *cap : (first ? first : 1);
  while (n < need)
    n *= 2;
  if (n > UINT32_MAX)
    n = UINT32_MAX;
  /* The array pointer is passed by address as void * so that one helper
   * serves every element type; memcpy keeps that free of aliasing traps. */
  void *old;
  memcpy(&old, arrayp, sizeof old);
  void *p = weft__realloc(st, old, (size_t)*cap * elem, (size_t)n * elem);
  if (!p)
    return WEFT_ENOMEM;
  memcpy(arrayp, &p, sizeof p);
  *cap = (uint32_t)n;
  return 0;
}
