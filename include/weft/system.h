/* SPDX-License-Identifier: MIT */
/**
 * @file system.h
 * Systems, phases, the dependency graph and the frame pipeline.
 *
 * A **system** is a callback plus a declaration of what it touches: the
 * query whose chunks it processes, the components it reads and writes, the
 * resources it reads and writes, the components its commands may add or
 * remove, and the event channels it emits and receives. From those sets the
 * scheduler builds, per phase, a dependency graph:
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
 * changes the results (see below).
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
 * explicitly.
 *
 * **Change versions.** The world keeps a change version that the scheduler
 * advances around every system run. A system stamps the chunks it runs on
 * with its version for every component it writes; structural changes stamp
 * the chunks that received rows. A system with `changed` terms skips the
 * chunks where none of those components changed since its previous run
 * (Unity's DidChange).
 *
 * Every other write path stamps the chunk it writes, with the world's
 * version at the time: weft_set(), weft_get_mut(), weft_get_field(),
 * commands applied (weft_cmd_set() and the rest), and weft_get_many_ex()
 * for the components of its `write` mask. A `changed` reader sees such a
 * write at its next run, or, for a write made while the reader's own
 * segment runs, at its run after that (its chunks were chosen before the
 * segment started). Writes through pointers these paths do
 * not hand out (weft_get() cast to non-const, a query iterated by hand)
 * are not seen, with one safety net: for a system with a `write` list the
 * scheduler stamps, before each run, every chunk holding a component of
 * that list, unless the system declares WEFT_SYSTEM_TRACKED_WRITES (its
 * writes to them all go through the paths above).
 *
 * **Threads.** Everything here is owner-thread API (the thread that owns
 * the world), except what a callback receives: its context and chunk, and
 * the functions documented as callable from callbacks.
 */
#ifndef WEFT_SYSTEM_H
#define WEFT_SYSTEM_H

#include <stdbool.h>
#include <stdint.h>

#include "weft/command.h"
#include "weft/component.h"
#include "weft/query.h"
#include "weft/resource.h"
#include "weft/runif.h"
#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A system id; 0 is never valid. Ids are not reused after removal. */
typedef uint32_t weft_system_t;

/** A phase id; 0 is never valid. */
typedef uint32_t weft_phase_t;

/** The built-in phases (seed 000), in frame order. */
enum {
  WEFT_PHASE_PRE_UPDATE = 1,    /**< once per frame, first */
  WEFT_PHASE_FIXED_UPDATE,      /**< once per fixed step */
  WEFT_PHASE_POST_FIXED_UPDATE, /**< after each fixed step; events clear */
  WEFT_PHASE_NETWORK_TICK,      /**< inside the fixed loop, at net_dt */
  WEFT_PHASE_PRE_RENDER         /**< once per frame, last */
};

/** Phases per world, built-in ones included. */
#define WEFT_MAX_PHASES 64u
/** Systems registered at once per world. */
#define WEFT_MAX_SYSTEMS 4096u
/** Entries in each access list of a descriptor. */
#define WEFT_SYSTEM_MAX_ACCESS 16u
/** Names in each of `before` and `after`. */
#define WEFT_SYSTEM_MAX_ORDER 8u
/** Rows per job when the descriptor gives no batch hint. */
#define WEFT_SYSTEM_BATCH_DEFAULT 8192u

/** Access to an include term of a system's query (term_access[i]). */
enum {
  WEFT_ACCESS_DEFAULT = 0, /**< read and write */
  WEFT_ACCESS_READ,        /**< read only */
  WEFT_ACCESS_WRITE,       /**< written (and maybe read) */
  WEFT_ACCESS_NONE         /**< a filter: the data is not touched */
};

/** System flags. */
enum {
  /** Every chunk runs on the thread that drives the pipeline. */
  WEFT_SYSTEM_MAIN_THREAD = 1u << 0,
  /** Runs alone, on the driving thread, between two sync points, with
   * direct access to the world (structural calls are applied when its
   * callback returns). */
  WEFT_SYSTEM_EXCLUSIVE = 1u << 1,
  /** A sync point right before the system. */
  WEFT_SYSTEM_COMMIT_BEFORE = 1u << 2,
  /** A sync point right after the system. */
  WEFT_SYSTEM_COMMIT_AFTER = 1u << 3,
  /** Its commands may despawn entities its query matches. */
  WEFT_SYSTEM_DESPAWNS = 1u << 4,
  /** Registered disabled. */
  WEFT_SYSTEM_DISABLED = 1u << 5,
  /** Every write to a component of its `write` list goes through a call
   * that stamps change versions (see "Change versions" above), so the
   * scheduler need not stamp every chunk holding those components for
   * each run. */
  WEFT_SYSTEM_TRACKED_WRITES = 1u << 6
};

/**
 * What a callback receives besides its chunk. Built by the scheduler on the
 * running thread's stack; valid during the call only.
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
 * A system callback: called once per matching chunk (or once per run, with
 * @p chunk NULL, for a system without query terms). Any worker thread.
 * Returns 0 on success. Any other value is a failure that makes the frame
 * report WEFT_ESYSTEM (the failing system's other chunks and its phase
 * still run): return a negative WEFT_E* code, which the message names, or
 * any other int (an application's own code; positive values and INT_MIN
 * included), which the message reports as the number it is.
 */
typedef int (*weft_system_fn)(weft_sysctx_t *ctx, const weft_iter_t *chunk);

/** A system descriptor; zero means default for every field. */
typedef struct weft_system_desc_t {
  const char *name;   /**< required, unique in the world; copied */
  weft_phase_t phase; /**< 0: WEFT_PHASE_FIXED_UPDATE */
  /** The chunks to process; all-zero: a task called once per run. With
   * WEFT_QUERY_CHUNK_RUNS in query.flags a call may cover a run of
   * consecutive chunks whose arrays continue each other (up to `batch`
   * rows), so a streaming loop pays the per-call cost once per run. */
  weft_query_desc_t query;
  /** Access of include term i (WEFT_ACCESS_*); default read and write.
   * Entries past the query's include terms must stay 0. */
  uint8_t term_access[WEFT_QUERY_MAX_TERMS];
  /** Further components read / written (zero-terminated lists). Every
   * chunk holding a component of `write` is marked changed for each run
   * unless the flags hold WEFT_SYSTEM_TRACKED_WRITES ("Change versions"
   * above). */
  weft_component_t read[WEFT_SYSTEM_MAX_ACCESS + 1];
  weft_component_t write[WEFT_SYSTEM_MAX_ACCESS + 1];
  /** Resources read / written. */
  weft_resource_t res_read[WEFT_SYSTEM_MAX_ACCESS + 1];
  weft_resource_t res_write[WEFT_SYSTEM_MAX_ACCESS + 1];
  /** Components its commands may add, set, remove or spawn with. */
  weft_component_t cmd_write[WEFT_SYSTEM_MAX_ACCESS + 1];
  /** Channels it emits to / reads. */
  weft_channel_t emit[WEFT_SYSTEM_MAX_ACCESS + 1];
  weft_channel_t receive[WEFT_SYSTEM_MAX_ACCESS + 1];
  /** Skip chunks where none of these changed since the last run. Each
   * must be an include, any or disabled term of the query (a task has no
   * chunks to skip). */
  weft_component_t changed[WEFT_SYSTEM_MAX_ACCESS + 1];
  /** Systems of the same phase this one runs before / after (NULL-ended;
   * unknown names add no edge). */
  const char *before[WEFT_SYSTEM_MAX_ORDER + 1];
  const char *after[WEFT_SYSTEM_MAX_ORDER + 1];
  weft_runif_t *run_if; /**< NULL: always; else one of this world's */
  uint32_t batch; /**< smallest job, in rows; 0: WEFT_SYSTEM_BATCH_DEFAULT */
  uint32_t flags; /**< WEFT_SYSTEM_* */
  weft_system_fn run; /**< required */
  void *user;
} weft_system_desc_t;

/**
 * Registers a system. Owner thread; allowed while a frame runs, from a
 * callback on the driving thread (it joins from the next dispatch).
 * Returns WEFT_EINVAL (no name or callback, bad flags, a term_access value
 * that is no WEFT_ACCESS_* or is given for a term the query lacks, a
 * `changed` component that is no term of the query, a run condition of
 * another world), WEFT_EEXIST (name taken), WEFT_ENONAME (unknown phase,
 * resource or channel), WEFT_ENOCOMP, WEFT_ETOOMANY, WEFT_ENOMEM, or, when
 * this call creates the world's scheduler, WEFT_ELIMIT (it needs one
 * command buffer per worker slot and the world's other buffers leave too
 * few of WEFT_CMDBUF_MAX). The cycle check happens at the next build
 * (weft_schedule_build() or a dispatch).
 */
int weft_system_register(weft_world_t *world, const weft_system_desc_t *desc,
                         weft_system_t *out);

/**
 * Removes a system. Owner thread. Called during a frame (from a
 * callback on the driving thread), the system runs no more in that frame
 * and is removed when the frame ends; from the call on, every function
 * here treats it as removed (weft_system_enable() on it fails, its name is
 * free). WEFT_ENONAME (no such system, or already removed).
 */
int weft_system_remove(weft_world_t *world, weft_system_t sys);

/**
 * Enables or disables a system. A disabled system keeps its place and
 * edges; it does not run and its run condition is not evaluated. Owner
 * thread. WEFT_ENONAME (no such system, or removed, also during the frame
 * that removed it).
 */
int weft_system_enable(weft_world_t *world, weft_system_t sys, bool enabled);

/** Finds a system by name. WEFT_ENONAME. Owner thread. */
int weft_system_lookup(const weft_world_t *world, const char *name,
                       weft_system_t *out);

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

/** Per-system counters, cumulative. */
typedef struct weft_system_stats_t {
  uint64_t runs;      /**< dispatches that ran the callback */
  uint64_t skipped;   /**< turns skipped by the run condition */
  uint64_t entities;  /**< rows handed to the callback */
  uint64_t chunks;    /**< chunk calls (or task calls) */
  uint64_t jobs;      /**< jobs run on the pool, splits included (0: ran
                           inline) */
  uint64_t wall_ns;   /**< first job start to last job end, summed (inline
                           runs only with time_inline or a trace) */
  uint64_t worker_ns; /**< time inside jobs, summed over workers */
} weft_system_stats_t;

/** Copies a system's counters. Owner thread. WEFT_ENONAME. */
int weft_system_stats(const weft_world_t *world, weft_system_t sys,
                      weft_system_stats_t *out);

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

/**
 * The systems of @p phase in dependency order, at most @p cap of them into
 * @p out; returns how many the phase has. Builds first if needed (0 on a
 * cycle). Owner thread.
 */
uint32_t weft_phase_systems(weft_world_t *world, weft_phase_t phase,
                            weft_system_t *out, uint32_t cap);

/** Per-phase counters, cumulative. */
typedef struct weft_phase_stats_t {
  uint64_t runs;
  uint64_t wall_ns;     /**< time inside the phase, sync points included */
  uint64_t worker_ns;   /**< job time summed over workers */
  uint64_t sync_points; /**< sync points that applied something */
  uint64_t commands;    /**< commands applied at its sync points */
} weft_phase_stats_t;

/** Copies a phase's counters. Owner thread. WEFT_ENONAME. */
int weft_phase_stats(const weft_world_t *world, weft_phase_t phase,
                     weft_phase_stats_t *out);

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

/** Fixed-step overload policies (seed 004). */
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
   * 35 ns in a VM; flecs and Bevy leave this off by default as well).
   * Jobs on the pool, phases and traced frames are always timed. */
  bool time_inline;
} weft_pipeline_config_t;

/** Sets the pipeline's settings. Owner, not during a frame. WEFT_EINVAL. */
int weft_pipeline_configure(weft_world_t *world,
                            const weft_pipeline_config_t *config);

/** The fixed-step state (seed 004's pipeline fields). */
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
 * Runs one frame (seed 000's main loop): PreUpdate; then, while the
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
 * Runs one phase (and the user phases anchored to it) with delta time
 * @p dt, sync point included, outside the frame loop. Owner thread; same
 * rules and returns as weft_world_progress().
 */
int weft_world_run_phase(weft_world_t *world, weft_phase_t phase, double dt);

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

/**
 * The change version of component @p c in the iterator's current chunk:
 * the latest of its last write by a system and the chunk's last structural
 * change (0 when the chunk lacks @p c or it is a tag). Reader threads.
 */
uint32_t weft_iter_version(const weft_iter_t *it, weft_component_t c);

/** The world's current change version. Any thread while no frame runs. */
uint32_t weft_world_change_version(const weft_world_t *world);

/**
 * Starts recording a trace of the frames that follow: per worker, at most
 * @p events_per_worker spans (system jobs, inline runs, sync points);
 * later spans are counted but dropped. Memory is taken now, so tracing does
 * not allocate inside frames. Owner thread. WEFT_EINVAL, WEFT_ENOMEM.
 */
int weft_trace_start(weft_world_t *world, uint32_t events_per_worker);

/** Stops recording (the spans recorded stay until the next start).
 * Owner thread. */
void weft_trace_stop(weft_world_t *world);

/**
 * Writes the recorded spans as Chrome trace-event JSON, which Perfetto and
 * chrome://tracing open: a named process, one named lane per worker slot
 * that recorded a span, times in whole nanoseconds, and slices on a lane
 * that never overlap unless one nests in the other. Owner thread.
 * Returns 0, WEFT_EINVAL (no trace), or WEFT_EIO when the file cannot be
 * written (the message names the path).
 */
int weft_trace_write(weft_world_t *world, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_SYSTEM_H */
