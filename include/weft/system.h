/* SPDX-License-Identifier: MIT */
/**
 * @file weft/system.h
 * @brief Systems: what a system declares, registering it, its counters.
 *
 * A **system** is a callback plus a declaration of what it touches: the
 * query whose chunks it processes, the components it reads and writes, the
 * resources it reads and writes, the components its commands may add or
 * remove, and the event channels it emits and receives. From those sets the
 * scheduler builds, per phase, a dependency graph and the sync points
 * between its systems (schedule.h). The pipeline runs the phases
 * (phase.h) frame by frame (pipeline.h); a callback works through its
 * context (context.h).
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
 * the functions documented as callable from callbacks (context.h).
 */
#ifndef WEFT_SYSTEM_H
#define WEFT_SYSTEM_H

#include <stdbool.h>
#include <stdint.h>

#include "weft/component.h"
#include "weft/phase.h"
#include "weft/query.h"
#include "weft/resource.h"
#include "weft/runif.h"
#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A system id; 0 is never valid. Ids are not reused after removal. */
typedef uint32_t weft_system_t;

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

/* Defined in context.h, which includes this header. */
struct weft_sysctx_t;

/**
 * A system callback: called once per matching chunk (or once per run, with
 * @p chunk NULL, for a system without query terms). Any worker thread.
 * Returns 0 on success. Any other value is a failure that makes the frame
 * report WEFT_ESYSTEM (the failing system's other chunks and its phase
 * still run): return a negative WEFT_E* code, which the message names, or
 * any other int (an application's own code; positive values and INT_MIN
 * included), which the message reports as the number it is.
 */
typedef int (*weft_system_fn)(struct weft_sysctx_t *ctx,
                              const weft_iter_t *chunk);

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

#ifdef __cplusplus
}
#endif

#endif /* WEFT_SYSTEM_H */
