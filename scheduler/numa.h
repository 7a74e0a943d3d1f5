/* SPDX-License-Identifier: MIT */
/*
 * NUMA-local chunk memory: what a world asks of the pool it is attached to
 * (weft_world_config_t.pool). Each NUMA group of the pool gets its own
 * arena of weft's private jemalloc, created on first use (without jemalloc:
 * pages mapped for the purpose), and memory from it is bound to the
 * memory of the group's node (weft_topology_node_memory(): its hwloc
 * nodeset, none for a memoryless node) when the topology is the real
 * machine; refused bindings are counted in weft_pool_stats(). A pool with
 * one group hands out ordinary memory: the one-node case costs nothing.
 */
#ifndef WEFT_SCHEDULER_NUMA_H
#define WEFT_SCHEDULER_NUMA_H

#include <stddef.h>
#include <stdint.h>

#include "core/alloc.h"
#include "core/hooks.h"
#include "weft/pool.h"

/* NUMA groups of the pool (1 for a one-node machine). */
uint32_t weft__pool_node_groups(const weft_pool_t *pool);

/* The node (weft's numbering, as in weft_pu_info_t.node) of group g. */
uint32_t weft__pool_group_node(const weft_pool_t *pool, uint32_t g);

/*
 * Allocates size bytes (aligned) for chunk memory homed on group g: from
 * the group's arena, bound to its node's memory. NULL on failure. Free with
 * weft__pool_free_on(). Counted in st like weft__alloc(). Any thread that
 * may change the world using the pool.
 */
void *weft__pool_alloc_on(weft_pool_t *pool, uint32_t g,
                          weft__alloc_stats_t *st, size_t size, size_t align);

/* Frees memory from weft__pool_alloc_on() with the same pool (g below the
 * pool's group count) and size. NULL is ignored. */
void weft__pool_free_on(weft_pool_t *pool, void *mem, size_t size);

/* The hook table every pool points to (core/hooks.h): the functions above,
 * weft_pool_workers() and weft_pool_parallel_for(). */
extern const weft__pool_hooks_t weft__pool_core_hooks;

#endif /* WEFT_SCHEDULER_NUMA_H */
