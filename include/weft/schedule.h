/* SPDX-License-Identifier: MIT */
/**
 * @file weft/schedule.h
 * @brief The schedule: the dependency graph and sync points built from
 * the systems' declarations, and what it says about them.
 *
 * From the sets a system declares (system.h) the scheduler builds, per
 * phase, a dependency graph:
 *
 * - explicit `before` / `after` edges (names in the same phase; unknown
 *   names and self references add nothing);
 * - an edge between any two systems whose access conflicts (write/write or
 *   read/write on a component, resource or channel), directed by
 *   registration order, unless their queries provably never match the same
 *   archetype (one requires a component the other excludes).
 *
 * A cycle fails the build with WEFT_ECYCLE and a message naming the phase
 * and the systems on the cycle. The graph, its conflict matrix and the sync
 * points are computed once per change of the schedule, never per frame.
 *
 * **Commands and sync points.** A callback must not change the world's
 * structure directly; it records into `ctx->cmd`, a command buffer owned by
 * the worker running it, whose ordering key the scheduler sets to
 * (system's place in the phase, chunk sequence, 0) before each chunk. At a
 * sync point all buffers are applied as one transaction in that key order
 * (command.h), so the world after a frame is bit-identical on 1 or 64
 * threads. Every phase ends with a sync point. Inside a phase the scheduler
 * inserts one before a system that touches (reads, writes or queries)
 * something that an earlier system it depends on may change through
 * commands (`cmd_write`, or any of its query's components with
 * WEFT_SYSTEM_DESPAWNS), or that receives a channel an earlier system
 * emits — and nowhere else. WEFT_SYSTEM_COMMIT_BEFORE / _AFTER request one
 * explicitly, and a running system may ask for one at run time
 * (weft_sysctx_commit(), context.h): its dependents in its segment then
 * run after a sync point of their own.
 *
 * Threads: every function here is owner-thread API.
 */
#ifndef WEFT_SCHEDULE_H
#define WEFT_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

#include "weft/phase.h"
#include "weft/system.h"
#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What weft_system_info() reports. */
typedef struct weft_system_info_t {
  const char *name; /**< owned by the world, lives as long as the system */
  weft_phase_t phase;
  uint32_t order;   /**< position in the phase's dependency order */
  uint32_t segment; /**< sync points before it in its phase */
  bool enabled;
  bool exclusive;
} weft_system_info_t;

/**
 * Describes a system as of the last build (building first if the schedule
 * changed). Owner thread; the name lives as long as the system.
 * WEFT_ENONAME, or the build's WEFT_ECYCLE.
 */
int weft_system_info(weft_world_t *world, weft_system_t sys,
                     weft_system_info_t *out);

/**
 * True when the built graph has an edge a → b (a runs before b), explicit
 * or from a conflict. Owner thread. Builds first if needed.
 */
bool weft_system_edge(weft_world_t *world, weft_system_t a, weft_system_t b);

/**
 * The systems of @p phase in dependency order, at most @p cap of them into
 * @p out; returns how many the phase has. Builds first if needed (0 on a
 * cycle). Owner thread.
 */
uint32_t weft_phase_systems(weft_world_t *world, weft_phase_t phase,
                            weft_system_t *out, uint32_t cap);

/**
 * (Re)builds the schedule now if it changed: graph, conflicts, cycle check,
 * sync points. Dispatches do it by themselves; call this to get the error
 * early. Owner thread. Returns 0, WEFT_ECYCLE (message: the phase and the
 * systems on a cycle), WEFT_ENOMEM, or WEFT_ELIMIT when the scheduler,
 * created on first use, cannot get its command buffers (one per worker
 * slot) because the world holds nearly WEFT_CMDBUF_MAX already (the
 * message says so).
 */
int weft_schedule_build(weft_world_t *world);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_SCHEDULE_H */
