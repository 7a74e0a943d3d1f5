/* SPDX-License-Identifier: MIT */
/**
 * @file weft/phase.h
 * @brief Phases: the built-in ones, user phases, enabling, counters.
 *
 * A phase is a group of systems (system.h) that runs as a whole: its
 * systems in dependency order (schedule.h), ending with a sync point. A
 * frame (weft_world_progress(), pipeline.h) runs the built-in phases in
 * the order of WEFT_PHASE_*: PreUpdate and PreRender once, the others once
 * per fixed step (NetworkTick every net_dt). A user phase runs right after
 * the phase it is anchored to, each time that one runs.
 *
 * **Run-once phases.** Startup and Shutdown run each of their systems once
 * per world. At every weft_world_progress() that finds a Startup system
 * that has not run yet (registered since, or disabled until now), Startup
 * runs first, before PreUpdate, with only those systems, in dependency
 * order, sync point included; a system that ran is spent and leaves the
 * phase's schedule (weft_phase_systems() lists the pending ones, and
 * before/after names of spent systems add no edge). Shutdown runs its
 * pending systems at weft_world_shutdown() and, for those still pending,
 * at weft_world_destroy() (pipeline.h). Neither takes a run condition, an
 * anchored phase or children.
 *
 * **Phase trees.** A phase may have ordered children
 * (weft_phase_register_child()). Running a phase runs its own systems
 * (and its sync point), then its children in registration order, each
 * with its own subtree, then the phases anchored to it. Disabling a phase
 * disables its subtree: its children are then skipped (their runs are not
 * counted), whatever their own flags, which are kept for when the parent
 * is enabled again. weft_world_run_phase() on a parent runs the subtree.
 * Each phase keeps its own counters (weft_phase_stats()). A child is made
 * under an existing phase, so a tree has no cycle. Anchored phases keep
 * their behaviour: they follow their anchor also while it is disabled.
 *
 * Threads: every function here is owner-thread API.
 */
#ifndef WEFT_PHASE_H
#define WEFT_PHASE_H

#include <stdbool.h>
#include <stdint.h>

#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A phase id; 0 is never valid. */
typedef uint32_t weft_phase_t;

/** The built-in phases, in frame order. */
enum {
  WEFT_PHASE_PRE_UPDATE = 1,    /**< once per frame, first */
  WEFT_PHASE_FIXED_UPDATE,      /**< once per fixed step */
  WEFT_PHASE_POST_FIXED_UPDATE, /**< after each fixed step; events clear */
  WEFT_PHASE_NETWORK_TICK,      /**< inside the fixed loop, at net_dt */
  WEFT_PHASE_PRE_RENDER,        /**< once per frame, last */
  WEFT_PHASE_STARTUP, /**< pending systems, before PreUpdate (run once) */
  WEFT_PHASE_SHUTDOWN /**< at weft_world_shutdown() / destroy (run once) */
};

/** Phases per world, built-in ones included. */
#define WEFT_MAX_PHASES 64u

/**
 * Registers a phase that runs right after phase @p after each time that one
 * runs (so within the fixed loop when @p after is a fixed phase), after the
 * phases registered earlier with the same anchor. Owner thread, not while a
 * frame runs (WEFT_EBUSY). @p name is copied. WEFT_EINVAL (no name or
 * @p out, or @p after is Startup or Shutdown), WEFT_EEXIST, WEFT_ENONAME
 * (unknown @p after), WEFT_ETOOMANY, WEFT_ENOMEM.
 */
int weft_phase_register(weft_world_t *world, const char *name,
                        weft_phase_t after, weft_phase_t *out);

/**
 * Registers phase @p name as the last child of phase @p parent: it runs
 * each time @p parent runs, after @p parent's own systems and sync point
 * and after the children registered before it, and not at all while
 * @p parent (or any phase above it) is disabled ("Phase trees" above).
 * Children may have children. Owner thread, not while a frame runs
 * (WEFT_EBUSY). @p name is copied. WEFT_EINVAL (no name or @p out, or
 * @p parent is Startup or Shutdown), WEFT_EEXIST (name taken), WEFT_ENONAME
 * (unknown @p parent), WEFT_ETOOMANY (WEFT_MAX_PHASES), WEFT_ENOMEM.
 */
int weft_phase_register_child(weft_world_t *world, weft_phase_t parent,
                              const char *name, weft_phase_t *out);

/**
 * The parent of phase @p phase (weft_phase_register_child()), 0 for a
 * phase that has none. Owner thread. WEFT_EINVAL (NULL @p out),
 * WEFT_ENONAME (unknown phase).
 */
int weft_phase_parent(const weft_world_t *world, weft_phase_t phase,
                      weft_phase_t *out);

/** Finds a phase by name (built-ins: "PreUpdate", "FixedUpdate",
 * "PostFixedUpdate", "NetworkTick", "PreRender", "Startup", "Shutdown").
 * Owner thread. WEFT_ENONAME. */
int weft_phase_lookup(const weft_world_t *world, const char *name,
                      weft_phase_t *out);

/** Enables or disables a whole phase, and with it its children (see
 * "Phase trees" above). Owner thread. WEFT_ENONAME. */
int weft_phase_enable(weft_world_t *world, weft_phase_t phase, bool enabled);

/** Per-phase counters, cumulative. */
typedef struct weft_phase_stats_t {
  uint64_t runs;
  uint64_t wall_ns;     /**< time inside the phase, sync points included
                             (a run without systems is not timed) */
  uint64_t worker_ns;   /**< job time summed over workers */
  uint64_t sync_points; /**< sync points that applied something */
  uint64_t commands;    /**< commands applied at its sync points */
} weft_phase_stats_t;

/** Copies a phase's counters. Owner thread. WEFT_ENONAME. */
int weft_phase_stats(const weft_world_t *world, weft_phase_t phase,
                     weft_phase_stats_t *out);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_PHASE_H */
