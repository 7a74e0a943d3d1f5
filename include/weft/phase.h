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
  WEFT_PHASE_PRE_RENDER         /**< once per frame, last */
};

/** Phases per world, built-in ones included. */
#define WEFT_MAX_PHASES 64u

/**
 * Registers a phase that runs right after phase @p after each time that one
 * runs (so within the fixed loop when @p after is a fixed phase), after the
 * phases registered earlier with the same anchor. Owner thread, not while a
 * frame runs. WEFT_EINVAL, WEFT_EEXIST, WEFT_ENONAME, WEFT_ETOOMANY.
 */
int weft_phase_register(weft_world_t *world, const char *name,
                        weft_phase_t after, weft_phase_t *out);

/** Finds a phase by name (built-ins: "PreUpdate", "FixedUpdate",
 * "PostFixedUpdate", "NetworkTick", "PreRender"). Owner thread.
 * WEFT_ENONAME. */
int weft_phase_lookup(const weft_world_t *world, const char *name,
                      weft_phase_t *out);

/** Enables or disables a whole phase. Owner thread. WEFT_ENONAME. */
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
