/* SPDX-License-Identifier: MIT */
/* The world's allocator: weft's private jemalloc (WEFT_JEMALLOC), or libc
 * (builds with -DWEFT_JEMALLOC=OFF and sanitizer builds). */
#define _DEFAULT_SOURCE 1 /* MADV_HUGEPAGE */
#include "core/alloc.h"

#include "weft/error.h"

#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h> /* ssize_t, jemalloc's decay times */
#include <unistd.h>

#ifdef WEFT_JEMALLOC
#include "core/jemalloc.h"
#endif

/* True when the injected failure is due (see weft__alloc_stats_t). */
static inline int injected_failure(weft__alloc_stats_t *st) {
  return st && st->fail_in && --st->fail_in == 0;
}

#ifdef WEFT_JEMALLOC
/* The smallest block a heap takes (see weft__alloc_heap_open()). */
#define WEFT__HEAP_MIN (64u << 10)

/* The mallocx flags that put a block of size bytes in st's heap: none
 * for small blocks or without a heap. A heap block bypasses the thread
 * cache (it would not be cached anyway: heap_min is above the cache's
 * limit), so that no thread cache ever holds one when the heap goes. */
static inline int heap_flags(const weft__alloc_stats_t *st, size_t size) {
  if (st && st->heap && size >= st->heap_min)
    return (int)(MALLOCX_ARENA(st->heap) | MALLOCX_TCACHE_NONE);
  return 0;
}
#endif

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
  p = mallocx(size, MALLOCX_ALIGN(align) | heap_flags(st, size));
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
  p = mallocx(size, MALLOCX_ALIGN(align) | MALLOCX_ZERO | heap_flags(st, size));
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
#ifndef WEFT_JEMALLOC
  (void)old_size;
#endif
  if (injected_failure(st))
    return NULL;
  void *q;
#ifndef WEFT_JEMALLOC
  q = realloc(p, new_size ? new_size : 1);
#else
  size_t n = new_size ? new_size : 1;
  int flags = heap_flags(st, n);
  if (!flags && heap_flags(st, old_size)) {
    /* A heap block that shrinks below heap_min leaves the heap: in place
     * it would stay there at a size thread caches keep. */
    q = mallocx(n, MALLOCX_ALIGN(16));
    if (q) {
      memcpy(q, p, old_size < n ? old_size : n);
      dallocx(p, MALLOCX_TCACHE_NONE);
    }
  } else if (flags && !heap_flags(st, old_size)) {
    /* A block that grows to heap_min joins the heap. rallocx() would
     * first try to grow it in place, in the arena it came from, where
     * trimming and the heap's accounting never reach it; whether it can
     * depends on what happens to lie next to it, so the same program
     * kept its command arrays in the heap or not with the library's
     * layout (test_resident). */
    q = mallocx(n, MALLOCX_ALIGN(16) | flags);
    if (q) {
      memcpy(q, p, old_size < n ? old_size : n);
      dallocx(p, 0);
    }
  } else {
    q = rallocx(p, n, MALLOCX_ALIGN(16) | flags);
  }
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

/* ---- heaps --------------------------------------------------------------- */

#ifdef WEFT_JEMALLOC
/* mallctl on "arena.<a>.<what>"; 0 or jemalloc's error. */
static int arena_ctl(unsigned a, const char *what, void *old, size_t *oldlen,
                     void *new, size_t newlen) {
  char name[64];
  snprintf(name, sizeof name, "arena.%u.%s", a, what);
  return mallctl(name, old, oldlen, new, newlen);
}

/* Reads a statistic of arena a ("stats.arenas.<a>.<what>"). */
static int arena_stat(unsigned a, const char *what, void *out, size_t size) {
  char name[64];
  snprintf(name, sizeof name, "stats.arenas.%u.%s", a, what);
  size_t sz = size;
  return mallctl(name, out, &sz, NULL, 0);
}
#endif

void weft__alloc_heap_open(weft__alloc_stats_t *st) {
#ifdef WEFT_JEMALLOC
  unsigned a = 0;
  size_t sz = sizeof a;
  if (!st || st->heap || mallctl("arenas.create", &a, &sz, NULL, 0) != 0 ||
      a == 0)
    return;
  /* Never purged by time: the owner purges (trim) or destroys it. */
  ssize_t never = -1;
  if (arena_ctl(a, "dirty_decay_ms", NULL, NULL, &never, sizeof never) != 0 ||
      arena_ctl(a, "muzzy_decay_ms", NULL, NULL, &never, sizeof never) != 0) {
    (void)arena_ctl(a, "destroy", NULL, NULL, NULL, 0);
    return;
  }
  /* Above the largest size thread caches keep (32 KiB unless the host's
   * MALLOC_CONF raised it). */
  size_t tmax = 0;
  sz = sizeof tmax;
  if (mallctl("arenas.tcache_max", &tmax, &sz, NULL, 0) != 0)
    tmax = 32u << 10;
  st->heap = a;
  st->heap_min = tmax + 1 > WEFT__HEAP_MIN ? tmax + 1 : WEFT__HEAP_MIN;
#else
  (void)st;
#endif
}

void weft__alloc_heap_close(weft__alloc_stats_t *st) {
#ifdef WEFT_JEMALLOC
  if (!st || !st->heap)
    return;
  /* Purges every page and makes the index reusable by a later
   * arenas.create, so that worlds made and destroyed in turn do not use
   * up jemalloc's arena ids. */
  (void)arena_ctl(st->heap, "destroy", NULL, NULL, NULL, 0);
  st->heap = 0;
  st->heap_min = 0;
#else
  (void)st;
#endif
}

void weft__alloc_heap_purge(const weft__alloc_stats_t *st) {
#ifdef WEFT_JEMALLOC
  if (st && st->heap)
    (void)arena_ctl(st->heap, "purge", NULL, NULL, NULL, 0);
#else
  (void)st;
#endif
}

int weft__alloc_heap_info(const weft__alloc_stats_t *st,
                          weft__heap_info_t *out) {
  memset(out, 0, sizeof(*out));
#ifdef WEFT_JEMALLOC
  if (!st || !st->heap)
    return WEFT_ENOTFOUND;
  unsigned a = st->heap;
  ssize_t dirty_ms = 0, muzzy_ms = 0;
  size_t sz = sizeof dirty_ms;
  if (arena_ctl(a, "dirty_decay_ms", &dirty_ms, &sz, NULL, 0) != 0 ||
      arena_ctl(a, "muzzy_decay_ms", &muzzy_ms, &sz, NULL, 0) != 0)
    return WEFT_ENOTFOUND;
  out->dirty_decay_ms = dirty_ms;
  out->muzzy_decay_ms = muzzy_ms;
  /* Statistics are a snapshot taken when the epoch advances. */
  uint64_t epoch = 1;
  sz = sizeof epoch;
  if (mallctl("epoch", &epoch, &sz, &epoch, sz) != 0)
    return WEFT_ENOTFOUND;
  uint64_t dn = 0, mn = 0, dp = 0, mp = 0;
  size_t pdirty = 0, pactive = 0;
  if (arena_stat(a, "dirty_npurge", &dn, sizeof dn) ||
      arena_stat(a, "muzzy_npurge", &mn, sizeof mn) ||
      arena_stat(a, "dirty_purged", &dp, sizeof dp) ||
      arena_stat(a, "muzzy_purged", &mp, sizeof mp) ||
      arena_stat(a, "pdirty", &pdirty, sizeof pdirty) ||
      arena_stat(a, "pactive", &pactive, sizeof pactive))
    return WEFT_ENOTFOUND;
  out->purges = dn + mn;
  out->purged = dp + mp;
  out->dirty = pdirty;
  out->active = pactive;
  return 0;
#else
  (void)st;
  return WEFT_ENOTFOUND;
#endif
}
