/* SPDX-License-Identifier: MIT */
/**
 * @file weft/context.h
 * @brief The system context: what a running system's callback receives
 * and may call.
 *
 * A callback (weft_system_fn, system.h) gets a context built for its call
 * and the chunk it processes. Through the context it records commands
 * (`ctx->cmd`, applied at the next sync point: schedule.h), emits events,
 * draws random numbers keyed by entity and tick, and may split its own
 * work on the world's pool.
 *
 * Threads: the functions here are for the thread running a callback (or
 * one of its parts), as each comment says; none is owner-thread API.
 */
#ifndef WEFT_CONTEXT_H
#define WEFT_CONTEXT_H

#include <stdint.h>

#include "weft/command.h"
#include "weft/entity.h"
#include "weft/resource.h"
#include "weft/system.h"
#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * What a callback receives besides its chunk. Built by the scheduler on the
 * running thread's stack; valid during the call only. The callback reads
 * it and passes it to the weft_sysctx_* calls, but does not write its
 * fields: the scheduler hands the same context to the next callbacks it
 * runs on that thread, setting only what differs.
 */
typedef struct weft_sysctx_t {
  weft_world_t *world;
  /** This worker's command buffer, keyed for the current chunk. */
  weft_cmdbuf_t *cmd;
  void *user;           /**< the descriptor's user pointer */
  double dt;            /**< the phase's delta time (fixed_dt in fixed ones) */
  uint64_t tick;        /**< fixed steps completed before this one */
  weft_system_t system; /**< the running system */
  uint32_t worker;      /**< worker slot: 0 .. weft_pipeline_slots() - 1 */
  uint32_t chunk;       /**< the chunk's sequence number in this run */
  uint32_t version;     /**< this run's change version */
  uint32_t last_run;    /**< the version of the previous run (0: none) */
  /* Private. */
  uint64_t key_;
  void *sys_;
} weft_sysctx_t;

/**
 * Emits @p event to channel @p ch from a callback. It becomes readable at
 * the next sync point, in key order (system, chunk, emission order), the
 * same on any number of threads. The calling callback's thread. Returns 0,
 * WEFT_EINVAL (NULL @p ctx or @p event, or a context the scheduler did not
 * make: only the contexts callbacks receive, and parts of them, emit),
 * WEFT_ENONAME or WEFT_ENOMEM.
 */
int weft_sysctx_emit(weft_sysctx_t *ctx, weft_channel_t ch, const void *event);

/**
 * A context for part @p part of a task's work, for a task that splits its
 * work on the pool (weft_pool_parallel_for() with
 * weft_sysctx_pool_worker()) and emits from the pieces. @p worker is the
 * worker index the parallel-for body received. The events emitted through
 * @p out sort after the task's own and after those of lower parts, in
 * emission order within a part; a part must run on one thread at a time.
 * Parts numbered by the work, not by the thread, therefore publish the
 * same events in the same order on any number of threads. @p out->cmd is
 * NULL: a part records no commands (the task records them through its own
 * context). The thread running the part, while the task's callback runs;
 * @p out is valid as long as @p task. Returns 0, WEFT_EINVAL (NULL
 * argument, a context the scheduler did not make, not a task's context,
 * or a worker index the pipeline does not have) or WEFT_ELIMIT (@p part
 * >= WEFT_SYSCTX_PARTS).
 */
int weft_sysctx_part(const weft_sysctx_t *task, uint32_t worker, uint32_t part,
                     weft_sysctx_t *out);

/**
 * Counts @p rows toward the running system's entity count
 * (weft_system_stats().entities, which otherwise counts the rows handed to
 * the callback): for a task that processes entities it finds itself, such
 * as the items of a grid. Any thread running the system's callback or one
 * of its parts (weft_sysctx_part()), also while the owner registers
 * systems; NULL or a context the scheduler did not make is ignored.
 */
void weft_sysctx_count(weft_sysctx_t *ctx, uint64_t rows);

/**
 * Requests a sync point right after the running system, for its
 * dependents in its segment: the run-time form of WEFT_SYSTEM_COMMIT_AFTER
 * (system.h), for a barrier needed only when the system did something
 * (seed 004's enqueueCommit). The systems of the segment that depend on
 * it (its successors in the graph, schedule.h, and theirs) then do not
 * run with the segment: once the rest of the segment has run, the command
 * buffers are applied and staged events published (a sync point, counted
 * in the phase's stats), and the held systems run after it, planned
 * again, so that they see what the request's system (and every other
 * system of the segment) recorded; a request from one of them holds its
 * own dependents for one more round. Systems of the segment that do not
 * depend on it run as usual, and the segment still ends with its sync
 * point, so a system with no dependents in its segment changes nothing by
 * asking. Several requests from one run (from any of its chunks, jobs or
 * parts, on any worker) count as one. Which systems are held depends only
 * on the graph and on which systems asked, not on the thread count, so
 * the world stays the same on any number of workers. The request lasts
 * for the current run only.
 *
 * The thread running the system's callback, or one of its parts
 * (weft_sysctx_part()), while the callback runs. Returns 0 or WEFT_EINVAL:
 * NULL @p ctx or a context without a world (no message), a context the
 * scheduler did not make, or a call outside a frame (a message on the
 * world; during a frame a worker may be the caller, so there is none).
 */
int weft_sysctx_commit(weft_sysctx_t *ctx);

/** Parts a task's work may have (weft_sysctx_part()). */
#define WEFT_SYSCTX_PARTS 0xffffffu

/**
 * The pool worker index of the thread running this callback, as
 * weft_pool_submit() and weft_pool_parallel_for() take it (with the
 * world's pool, weft_world_pool()): a callback may split its own work on
 * the pool, nested parallel-fors being fine. WEFT_WORKER_EXTERNAL for the
 * driving thread when it is not one of the pool's workers, and for NULL
 * or a context the scheduler did not make. Callback threads.
 */
uint32_t weft_sysctx_pool_worker(const weft_sysctx_t *ctx);

/**
 * A counter-based random draw for @p entity in this tick on stream
 * @p stream (see weft_random_at()), keyed by the world seed, so it is the
 * same on any thread. Callback threads. 0 for a NULL @p ctx or one
 * without a world.
 */
uint64_t weft_sysctx_random(const weft_sysctx_t *ctx, weft_entity_t entity,
                            uint32_t stream, uint32_t n);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_CONTEXT_H */
