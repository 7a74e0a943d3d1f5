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
  /* The owner's heap (weft__alloc_heap_open()): the jemalloc arena that
   * its blocks of heap_min bytes or more come from; 0: none, every block
   * comes from jemalloc's own arenas (and always in builds without
   * jemalloc). */
  unsigned heap;
  size_t heap_min;
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

/*
 * A world's heap: a jemalloc arena of weft's own for the world's large
 * blocks (chunk segments, command arrays, index blocks), which never
 * gives memory back to the kernel by itself. jemalloc's own arenas do:
 * freed pages are purged after a decay time (10 s), and blocks of 8 MiB
 * or more come from an arena that purges at once, so a block freed and
 * allocated again (a command buffer destroyed and made anew, an array
 * that moved when it grew) was faulted in again page by page, a stall in
 * the frame that did it (docs/performance-notes.md, "Stalls from memory
 * handling"). The heap's decay is off (-1) and only its owner purges it:
 * weft_world_trim() and weft_world_destroy(). The host's arenas and
 * settings are not touched. Blocks below heap_min (which is above
 * jemalloc's thread-cache limit, so no thread cache ever holds a heap
 * block and the heap can be destroyed) keep coming from the default
 * arenas. Builds without jemalloc have no heap; these calls do nothing
 * there.
 */

/* Opens a heap for st (the owner thread, before st allocates anything it
 * should cover). Without one (no jemalloc, or jemalloc refused) st goes
 * on as before: that is not an error. */
void weft__alloc_heap_open(weft__alloc_stats_t *st);
/* Gives st's heap back to jemalloc, with every page it holds. Every block
 * that came from it must have been freed. st loses its heap. */
void weft__alloc_heap_close(weft__alloc_stats_t *st);
/* Returns the pages of freed blocks in st's heap to the kernel. */
void weft__alloc_heap_purge(const weft__alloc_stats_t *st);

/* What jemalloc says of a heap, for tests and diagnostics. */
typedef struct weft__heap_info_t {
  int64_t dirty_decay_ms; /* -1: never purged by time */
  int64_t muzzy_decay_ms;
  uint64_t purges; /* purge sweeps so far (dirty and muzzy) */
  uint64_t purged; /* pages purged so far */
  uint64_t dirty;  /* pages of freed blocks, still resident */
  uint64_t active; /* pages of blocks in use */
} weft__heap_info_t;

/* Fills out for st's heap: 0, or WEFT_ENOTFOUND (no heap, or a jemalloc
 * without statistics). */
int weft__alloc_heap_info(const weft__alloc_stats_t *st,
                          weft__heap_info_t *out);

#endif /* WEFT_CORE_ALLOC_H */
