/* SPDX-License-Identifier: MIT */
/* The world's allocator: weft's private jemalloc (WEFT_JEMALLOC), or libc
 * (builds with -DWEFT_JEMALLOC=OFF and sanitizer builds). */
#define _DEFAULT_SOURCE 1 /* MADV_HUGEPAGE */
#include "core/alloc.h"

#include "weft/error.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef WEFT_JEMALLOC
#include "core/jemalloc.h"
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
#ifndef WEFT_JEMALLOC
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

/* The allocator zeroes: it knows when fresh pages are zero already, so a
 * large zeroed block costs nothing until touched. */
void *weft__calloc(weft__alloc_stats_t *st, size_t size, size_t align) {
  if (injected_failure(st))
    return NULL;
  if (size == 0)
    size = 1;
  void *p;
#ifdef WEFT_JEMALLOC
  if (align < sizeof(void *))
    align = sizeof(void *);
  p = mallocx(size, MALLOCX_ALIGN(align) | MALLOCX_ZERO);
#else
  if (align <= alignof(max_align_t)) {
    p = calloc(1, size);
  } else if (posix_memalign(&p, align, size) == 0) {
    memset(p, 0, size);
  } else {
    p = NULL;
  }
#endif
  if (p && st) {
    st->allocs++;
    st->bytes += size;
  }
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
#ifndef WEFT_JEMALLOC
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
#ifndef WEFT_JEMALLOC
  free(p);
#else
  dallocx(p, 0);
#endif
}

void *weft__alloc_pages(weft__alloc_stats_t *st, size_t size, size_t align) {
  if (injected_failure(st))
    return NULL;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (align < page)
    align = page;
  size_t bytes = (size ? size + page - 1 : page) / page * page;
  /* mmap aligns to pages only: map align - page bytes more and give back
   * the ends, so that the block starts on an align boundary. */
  size_t span = bytes + align - page;
  if (span < bytes)
    return NULL;
  uint8_t *m = mmap(NULL, span, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED)
    return NULL;
  uint8_t *p =
      (uint8_t *)(((uintptr_t)m + align - 1) & ~(uintptr_t)(align - 1));
  if (p > m)
    (void)munmap(m, (size_t)(p - m));
  if (m + span > p + bytes)
    (void)munmap(p + bytes, (size_t)(m + span - (p + bytes)));
  if (st) {
    st->allocs++;
    st->bytes += size;
  }
  return p;
}

void weft__free_pages(void *p, size_t size) {
  if (!p)
    return;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  (void)munmap(p, (size ? size + page - 1 : page) / page * page);
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

const uint64_t *weft__alloc_thread_counter(void) {
#ifdef WEFT_JEMALLOC
  uint64_t *p = NULL;
  size_t sz = sizeof p;
  if (mallctl("thread.allocatedp", &p, &sz, NULL, 0) != 0)
    return NULL;
  return p;
#else
  return NULL;
#endif
}

unsigned weft__alloc_arenas(void) {
#ifdef WEFT_JEMALLOC
  unsigned n = 0;
  size_t sz = sizeof n;
  if (mallctl("arenas.narenas", &n, &sz, NULL, 0) != 0)
    return 0;
  return n;
#else
  return 0;
#endif
}
