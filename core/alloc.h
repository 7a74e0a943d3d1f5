/* SPDX-License-Identifier: MIT */
/*
 * The world's allocator.
 *
 * A world's memory comes through here so that one counter per world proves
 * that steady-state operations allocate nothing, and so that chunk memory
 * can come from jemalloc (NUMA arenas, scheduler/numa.c). The jemalloc is
 * weft's private, renamed copy (core/jemalloc.h), never the host program's
 * malloc. Builds with -DWEFT_JEMALLOC=OFF, and sanitizer builds (where ASan
 * and TSan must see every block), use libc's malloc instead.
 *
 * Memory that belongs to no world does not come through here: the thread
 * pool and its parts (scheduler/pool.c, deque.c, crew.c, plan.c,
 * topology.c, cgroup.c) call libc's malloc, calloc, posix_memalign and
 * free directly, because a pool is made once, may serve several worlds
 * and outlives them, so no world's counter could account for it.
 */
#ifndef WEFT_CORE_ALLOC_H
#define WEFT_CORE_ALLOC_H

#include <stddef.h>
#include <stdint.h>

/* Counters kept by the allocator; one per world. */
typedef struct weft__alloc_stats_t {
  uint64_t allocs;
  uint64_t bytes;
  /* Fault injection for tests (tests/test_alloc.c): when nonzero, each
   * allocation through these stats counts it down, and the one that
   * brings it to zero fails as if memory had run out. */
  uint64_t fail_in;
} weft__alloc_stats_t;

/* Allocates size bytes aligned to align (a power of two); NULL on failure. */
void *weft__alloc(weft__alloc_stats_t *st, size_t size, size_t align);
/* Allocates zeroed memory. */
void *weft__calloc(weft__alloc_stats_t *st, size_t size, size_t align);
/* Grows or shrinks a block allocated with alignment <= 16. */
void *weft__realloc(weft__alloc_stats_t *st, void *p, size_t old_size,
                    size_t new_size);
/* Maps whole pages for size bytes, aligned to align (a power of two; at
 * least a page), straight from the kernel: memory that nothing else shares,
 * so that a NUMA binding of it binds nothing else. Counted in st like
 * weft__alloc(). NULL on failure. Free with weft__free_pages(). */
void *weft__alloc_pages(weft__alloc_stats_t *st, size_t size, size_t align);
/* Unmaps a block from weft__alloc_pages() (size as allocated). */
void weft__free_pages(void *p, size_t size);
/* Asks the kernel to back a large block with transparent huge pages where
 * it can (a hint: failure and small blocks are ignored). */
void weft__advise_huge(void *p, size_t bytes);

/* The out-of-line part of weft__grow(): the array is too small. */
int weft__grow_slow(weft__alloc_stats_t *st, void *arrayp, uint32_t *cap,
                    uint32_t need, size_t elem, uint32_t first);

/*
 * Grows the array whose pointer is stored at *arrayp (elem bytes per entry,
 * *cap entries) so that it holds at least need entries, doubling from
 * first. The array may move. 0 or WEFT_ENOMEM (the array is unchanged).
 * Inline for the usual case, room already there: hot paths (staging an
 * event, recording a command) call it for every item, where a call would
 * be a large share of their work.
 */
static inline int weft__grow(weft__alloc_stats_t *st, void *arrayp,
                             uint32_t *cap, uint32_t need, size_t elem,
                             uint32_t first) {
  if (__builtin_expect(need <= *cap, 1))
    return 0;
  return weft__grow_slow(st, arrayp, cap, need, elem, first);
}

/* Frees a block; size and align are those it was allocated with. */
void weft__free(void *p, size_t size, size_t align);

/*
 * The counter of bytes the calling thread allocated from weft's jemalloc
 * (jemalloc's "thread.allocatedp"; it counts weft's allocations only, as
 * nothing else uses that jemalloc), or NULL in builds without it. The
 * pointer is valid while the thread lives. For tests: a steady-state tick
 * must leave it unchanged.
 */
const uint64_t *weft__alloc_thread_counter(void);

/* How many arenas weft's jemalloc has (0 in builds without it). */
unsigned weft__alloc_arenas(void);

#endif /* WEFT_CORE_ALLOC_H */
