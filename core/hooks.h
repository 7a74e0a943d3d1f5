/* SPDX-License-Identifier: MIT */
/*
 * What core asks of the layers above it, in core's own terms.
 *
 * Core sits at the bottom (core <- scheduler <- systems): it includes no
 * header of a higher layer and calls none of its functions. Where it needs
 * something only the scheduler has, it defines here the shape of what it
 * needs, and the scheduler fills it in:
 *
 * - A thread pool (weft_world_config_t.pool, opaque to core) begins with a
 *   pointer to a weft__pool_hooks_t: chunk memory homed on the pool's NUMA
 *   groups, and a parallel for, used by the event publish. Core reads the
 *   table through the opaque pointer (weft__pool_hooks()); the scheduler
 *   asserts that the table pointer is the pool's first member.
 * - A world carries a few extension slots: state of a higher layer (the
 *   scheduler's systems and phases, its run conditions), each with the
 *   function that frees it, which weft_world_destroy() calls without
 *   knowing what it frees. The layers above number the slots.
 *
 * Every call through these tables is per chunk allocation, per segment
 * freed or per publish, never per row.
 */
#ifndef WEFT_CORE_HOOKS_H
#define WEFT_CORE_HOOKS_H

#include <stddef.h>
#include <stdint.h>

#include "core/alloc.h"

struct weft_pool_t;
struct weft_world_t;

/* A body of the pool's parallel for (same shape as weft_range_fn). */
typedef void (*weft__range_fn)(void *arg, uint32_t begin, uint32_t end,
                               uint32_t worker);

/*
 * What core uses of a thread pool. The functions are the scheduler's; the
 * table is static and lives as long as the program.
 */
typedef struct weft__pool_hooks_t {
  /* NUMA groups of the pool (1 for a one-node machine). */
  uint32_t (*node_groups)(const struct weft_pool_t *pool);
  /* The node (weft's numbering) of group g. */
  uint32_t (*group_node)(const struct weft_pool_t *pool, uint32_t g);
  /* Chunk memory homed on group g, counted in st; NULL on failure. */
  void *(*alloc_on)(struct weft_pool_t *pool, uint32_t g,
                    weft__alloc_stats_t *st, size_t size, size_t align);
  /* Frees memory from alloc_on (same pool and size). */
  void (*free_on)(struct weft_pool_t *pool, void *mem, size_t size);
  /* Workers of the pool, the caller included when it takes part. */
  uint32_t (*workers)(const struct weft_pool_t *pool);
  /* weft_pool_parallel_for(): fn over [begin, end) in ranges of grain. */
  void (*parallel_for)(struct weft_pool_t *pool, uint32_t self, uint32_t begin,
                       uint32_t end, uint32_t grain, weft__range_fn fn,
                       void *arg);
} weft__pool_hooks_t;

/* The hook table of a pool (not NULL): the pool's first member. Any
 * thread; lives as long as the program. */
static inline const weft__pool_hooks_t *
weft__pool_hooks(const struct weft_pool_t *pool) {
  return *(const weft__pool_hooks_t *const *)(const void *)pool;
}

/* Extension slots of a world; the layers above number them (sched.h). */
#define WEFT__WORLD_EXTS 4u

/* Frees a higher layer's state in a world; called once, from
 * weft_world_destroy(), before core frees anything of its own. */
typedef void (*weft__ext_fini_fn)(struct weft_world_t *w);

/* One extension slot: the state (NULL: none) and what frees it. */
typedef struct weft__world_ext_t {
  void *state;
  weft__ext_fini_fn fini;
} weft__world_ext_t;

#endif /* WEFT_CORE_HOOKS_H */
