/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the built-in systems (the files of systems/), on top
 * of the public API: registering a system, keeping its settings in the
 * world, and spreading a task's work over the pool (builtin.c). Their
 * prefix, weft__builtin_, is theirs alone: the scheduler's records are
 * weft__sys_*.
 */
#ifndef WEFT_SYSTEMS_BUILTIN_INTERNAL_H
#define WEFT_SYSTEMS_BUILTIN_INTERNAL_H

#include <stddef.h>

#include <weft.h>

#include "core/platform.h"

/*
 * The descriptor a built-in system starts from: zero (every default) but
 * for its name, phase, callback and user pointer. The caller adds the
 * query and the access sets, then registers it with
 * weft__builtin_register().
 */
weft_system_desc_t weft__builtin_desc(const char *name, weft_phase_t phase,
                                      weft_system_fn run, void *user);

/*
 * Fails with WEFT_EEXIST, the message naming the public function @p fn,
 * when the world has a system called @p name; 0 otherwise. A built-in
 * system checks this before it makes anything (resources, queries), so
 * that a refused registration leaves the world as it was.
 */
int weft__builtin_unique(weft_world_t *world, const char *fn, const char *name);

/*
 * Registers @p desc and, when that succeeds and @p out is not NULL,
 * stores the system's id there; returns weft_system_register()'s result.
 */
int weft__builtin_register(weft_world_t *world, const weft_system_desc_t *desc,
                           weft_system_t *out);

/*
 * Stores a system's settings in the world resource @p name (the callback's
 * user pointer is then weft_resource_get() of *res, which lives as long
 * as the world): registered with @p init, or overwritten when an earlier,
 * since removed, registration left it. A NULL @p init asks for scratch
 * memory: zero-filled when new, left as it is when reused. Either way the
 * resource is marked WEFT_RESOURCE_SCRATCH (the digest skips its bytes,
 * which hold addresses or per-run plans). WEFT_EEXIST
 * when the name holds a resource of another size; otherwise 0 or the
 * registration's error.
 */
int weft__builtin_state(weft_world_t *world, const char *name, const void *init,
                        size_t size, weft_resource_t *res);

/*
 * Runs @p fn over [0, n) in ranges of at most @p grain items on the
 * world's pool when there is one (nested in the calling task's job, which
 * takes part), else inline on this thread. The ranges depend only on n and
 * the grain, never on the number of workers.
 */
void weft__builtin_split(weft_sysctx_t *ctx, uint32_t n, uint32_t grain,
                         weft_range_fn fn, void *arg);

/*
 * Submits fn(arg) as up to @p max jobs to the world's pool, at most one per
 * worker besides the calling one (none without a pool), counted on
 * @p done, and returns how many it submitted. The calling thread does its
 * own share meanwhile, then waits with weft__builtin_join(): a task that
 * fans out over the pool this way keeps its shared state in its own frame.
 */
uint32_t weft__builtin_helpers(weft_sysctx_t *ctx, weft_job_fn fn, void *arg,
                               uint32_t max, weft_counter_t *done);

/* Waits for the @p n jobs weft__builtin_helpers() submitted on @p done,
 * running pool jobs meanwhile; nothing when n is 0. */
void weft__builtin_join(weft_sysctx_t *ctx, weft_counter_t *done, uint32_t n);

#endif /* WEFT_SYSTEMS_BUILTIN_INTERNAL_H */
