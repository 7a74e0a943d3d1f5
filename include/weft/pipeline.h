/* SPDX-License-Identifier: MIT */
/**
 * @file weft/pipeline.h
 * @brief The frame pipeline: the frame loop, fixed steps, running a
 * phase, and how systems are spread over the pool.
 *
 * **Execution.** Systems whose dependencies are done run concurrently on
 * the world's pool (weft_world_config_t.pool). A system's matching chunks
 * make one job per run of chunks with the same home NUMA node, queued
 * first to that node's workers; while some worker is idle, a job hands the
 * back half of its chunks to it, down to about `batch` rows (lazy
 * halving: each thread keeps long forward runs). Cuts fall only between
 * chunks and commands and events are keyed per chunk, so where they fall
 * never changes the result. Without a pool everything runs inline.
 *
 * **Inline or dispatch.** What goes to the pool depends on what systems
 * cost, not on their rows alone: a stretch of systems (a sync segment)
 * whose estimated time together is below inline_rows × 5 ns
 * (weft_pipeline_config_t.inline_rows; 20 us by default) runs inline on
 * the driving thread without any dispatch, and so does, in a dispatched
 * segment, each single-job system estimated below it. A query system is
 * estimated from its rows at the time per row measured in its earlier
 * runs, never less than 5 ns a row (so before any run: from its rows). A
 * task's estimate is its measured time; a task not measured yet counts as
 * expensive and is dispatched. Runs on the pool are always measured;
 * systems run inline are measured one by one in the first run of their
 * phase after a registration and in the run after their segment, timed
 * as a whole, took longer than the threshold. An estimate takes the smaller of
 * the last two measurements, so one preempted run does not move a
 * system. Independent expensive systems therefore run at the same
 * time, and many tiny ones stay inline. Where a system runs never
 * changes the results (schedule.h, "Commands and sync points").
 *
 * Threads: every function here is owner-thread API unless its comment
 * says otherwise.
 */
#ifndef WEFT_PIPELINE_H
#define WEFT_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "weft/phase.h"
#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Fixed-step overload policies: what a frame does when the accumulator
 * holds more fixed steps than it may run. */
typedef enum weft_overload_t {
  /** Past max_steps, the remaining accumulated time is dropped. */
  WEFT_OVERLOAD_DROP = 0,
  /** Past max_steps, the time stays in the accumulator for later frames,
   * up to 2^32 fixed steps' worth (about 2.3 years at 1/60 s): more could
   * never be worked off, so the excess is dropped and counted as under
   * DROP. */
  WEFT_OVERLOAD_ACCUMULATE
} weft_overload_t;

/** Pipeline settings; zero means default for every field. */
typedef struct weft_pipeline_config_t {
  double fixed_dt;          /**< seconds per fixed step; 0: 1/60 */
  uint32_t max_steps;       /**< fixed steps per frame at most; 0: 8 */
  weft_overload_t overload; /**< beyond max_steps */
  double net_dt;            /**< seconds per NetworkTick; 0: 1/30; < 0: never */
  /** Systems estimated to take less than this many rows' worth of time
   * (5 ns a row) run inline on the calling thread; 0: 4096 (20 us). See
   * "Inline or dispatch" above; 1 dispatches nearly everything. */
  uint32_t inline_rows;
  /** Time systems that run inline too (one TSC read per system, about
   * a few times cheaper than clock_gettime(); flecs and Bevy leave this
   * off by default as well).
   * Jobs on the pool, phases and traced frames are always timed. */
  bool time_inline;
  /** Leave dirty bits and the transition log alone at the end of each
   * fixed step (weft/dirty.h): the caller clears them with
   * weft_world_clear_dirty(). Default (false): cleared after
   * PostFixedUpdate. */
  bool manual_clear;
} weft_pipeline_config_t;

/** Sets the pipeline's settings. Owner, not during a frame. WEFT_EINVAL. */
int weft_pipeline_configure(weft_world_t *world,
                            const weft_pipeline_config_t *config);

/** The fixed-step state: the accumulator and the counters a frame keeps. */
typedef struct weft_pipeline_state_t {
  double accumulator;     /**< time not yet consumed by fixed steps */
  double alpha;           /**< accumulator / fixed_dt after the last frame */
  double time_dropped;    /**< time discarded (saturates at DBL_MAX) */
  uint64_t steps_dropped; /**< whole steps discarded (saturates) */
  uint64_t tick;          /**< fixed steps run so far */
  uint64_t frames;        /**< weft_world_progress() calls */
  uint64_t sync_points;   /**< sync points that applied something */
  uint64_t builds;        /**< schedule (re)builds so far */
} weft_pipeline_state_t;

/** Copies the fixed-step state. Any thread while no frame runs. */
void weft_pipeline_state(const weft_world_t *world, weft_pipeline_state_t *out);

/**
 * Worker slots callbacks may see in ctx->worker: the pool's workers plus
 * one for the driving thread. Owner thread.
 */
uint32_t weft_pipeline_slots(const weft_world_t *world);

/**
 * Runs one frame: Startup when it has a system that has not run yet (its
 * pending systems, once: phase.h); PreUpdate; then, while the
 * accumulator holds a fixed step, FixedUpdate, PostFixedUpdate (after
 * which event channels clear) and, every net_dt, NetworkTick, up to
 * max_steps; the interpolation alpha; PreRender. User phases run after
 * their anchors. @p dt may be any finite number of seconds >= 0, up to
 * DBL_MAX (see weft_overload_t for what a huge one does). Owner thread.
 * Returns 0, WEFT_EINVAL (dt negative, NaN or infinite: nothing runs and
 * the state is unchanged), WEFT_EBUSY (called from a callback or inside a
 * deferred scope), WEFT_ECYCLE, WEFT_ELIMIT (creating the scheduler, as
 * weft_schedule_build()), WEFT_ENOMEM (building the schedule or applying a
 * sync point's commands ran out of memory: what could not be applied is
 * counted in the stats' commands_dropped), or WEFT_ESYSTEM when a callback
 * failed: the phase it failed in still completes (its sync point included),
 * later phases of the frame do not run, and weft_world_last_error() names
 * the system and what its callback returned.
 */
int weft_world_progress(weft_world_t *world, double dt);

/**
 * Runs one phase (its children while it is enabled, and the user phases
 * anchored to it: phase.h) with delta time @p dt, sync point included,
 * outside the frame loop. On Startup or Shutdown it runs their pending
 * systems, which are then spent, as weft_world_progress() and
 * weft_world_shutdown() do. Owner thread; same rules and returns as
 * weft_world_progress(), and WEFT_ENONAME for an unknown phase.
 */
int weft_world_run_phase(weft_world_t *world, weft_phase_t phase, double dt);

/**
 * Runs the Shutdown systems that have not run yet (phase.h), in
 * dependency order, with their sync point: their commands are applied
 * before this returns. Each runs once per world: a second call runs only
 * Shutdown systems registered (or enabled) since. weft_world_destroy()
 * does the same for the ones still pending, but cannot report a failure:
 * call this first to see one. The world stays usable afterwards. Owner
 * thread, not during a frame. Returns 0, WEFT_EINVAL (NULL world),
 * WEFT_EBUSY (from a callback or inside a deferred scope), WEFT_ECYCLE,
 * WEFT_ENOMEM or WEFT_ESYSTEM, as weft_world_progress().
 */
int weft_world_shutdown(weft_world_t *world);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_PIPELINE_H */
