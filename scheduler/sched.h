/* SPDX-License-Identifier: MIT */
/*
 * The private state of the system scheduler: registered systems and phases
 * (system.c), the built per-phase schedule (graph.c) and the per-frame run
 * state (pipeline.c, trace.c).
 */
#ifndef WEFT_SCHEDULER_SCHED_H
#define WEFT_SCHEDULER_SCHED_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/bitset.h"
#include "core/platform.h"
#include "core/chunk.h"
#include "core/txn.h"
#include "core/world_view.h"
#include "scheduler/clock.h"
#include "weft/context.h"
#include "weft/pipeline.h"
#include "weft/pool.h"
#include "weft/schedule.h"
#include "weft/system.h"
#include "weft/trace.h"

/* One job: a run of a system's chunk list. */
typedef struct weft__job_t {
  struct weft__sys_t *sys;
  uint32_t first; /* into sys->chunks */
  uint32_t count;
  uint32_t node; /* home node of the first chunk */
} weft__job_t;

/* A chunk a system will visit this run, with its sequence number. */
typedef struct weft__visit_t {
  weft__chunk_t *chunk;
  uint32_t seq;  /* among all the chunks the query matches */
  uint32_t ai;   /* its archetype's entry in sys->arch */
  uint32_t cum;  /* rows of the visits before it */
  uint32_t rows; /* rows it covers */
  uint32_t nch;  /* chunks it covers: more than one for a run of chunks
                    whose arrays continue each other (CHUNK_RUNS) */
} weft__visit_t;

/* An archetype a system visits: its query cache entry, and the columns
 * of the components the system stamps that the archetype has. */
typedef struct weft__ainfo_t {
  uint32_t match;  /* index into the query's cache (which may move) */
  uint32_t nstamp; /* columns in stamp */
  uint16_t stamp[WEFT_QUERY_MAX_TERMS + WEFT_SYSTEM_MAX_ACCESS];
  /* Of those, the tracked ones (weft/dirty.h): their dirty arrays, marked
   * for every row of every chunk visited. */
  uint32_t ndirty;
  uint16_t dirty[WEFT_QUERY_MAX_TERMS + WEFT_SYSTEM_MAX_ACCESS];
} weft__ainfo_t;

/*
 * A registered system. Its fields are grouped by who writes them, each
 * group on lines of its own (WEFT__LINE_ALIGNED), so that the atomics the
 * workers update during a run never share a line with what every worker
 * reads: the owner's fields, written only outside the parallel part and
 * read by workers during it; the workers' atomics; the owner's counters
 * and cost samples, which workers never touch.
 */
typedef struct weft__sys_t {
  /* The run line: what a frame reads and writes for every system it runs
   * (pipeline.c, run_plain()), so that a frame of a hundred small systems
   * touches two lines of each (this one and the counters'). Written by the
   * owner thread between runs; read by workers during the run. */
  WEFT__LINE_ALIGNED weft_system_t id; /* index + 1 into sched->sys */
  uint32_t version;                    /* of the current run */
  uint32_t last_run;                   /* change version of the previous run */
  uint32_t plan_archs; /* the world's archetypes created at the plan */
  weft_system_fn run;
  void *user;
  /* The iterator each visit hands its callback, made with the plan when
   * it has at most WEFT__VIEWS_MAX visits (nviews = nvisits), so that a
   * small system's steady-state run fills none; else nviews is 0 and each
   * call fills one. */
  weft_iter_t *views;
  uint64_t plan_version; /* the world's structural version it was made at;
                            UINT64_MAX while there is none */
  uint64_t key0;         /* the command key of its first visit */
  uint32_t ncalls;       /* callback calls it makes: nvisits, or 1 for a task */
  bool enabled;
  bool active;     /* enabled and its condition held */
  bool stamp_late; /* its runs' jobs stamp their visits (graph.c) */
  /* Planned: one visit, through the iterator the plan made, stamping
   * nothing as it runs, so a plain segment calls it keyed by key0. */
  bool one_view;

  /* The counters line. Written by the owner thread after the run
   * (finish()) or on the driving thread alone (run_serial()); workers read
   * rows (splitting). */
  WEFT__LINE_ALIGNED weft_system_stats_t stats;
  uint64_t rows; /* rows this run visits */

  /* Written by the owner thread: at registration, at a schedule build, and
   * before each run's dispatch (prepare(), visits.c); read by workers
   * during the run. */
  WEFT__LINE_ALIGNED weft_world_t *world;
  char *name;
  weft_phase_t phase;
  uint32_t flags;
  bool removed;     /* weft_system_remove() during a frame: gone at its end */
  bool retire;      /* an after() condition fired: remove after the frame */
  bool list_stamps; /* a run stamps its `write` list in every chunk */
  bool planned;     /* visits and jobs hold a plan */
  bool seg_plain;   /* its segment may run plain (graph.c, pipeline.c) */
  bool spent; /* a run-once phase's system that ran: out of the schedule */
  weft_query_t *query; /* NULL: a task */
  uint32_t nterms;
  uint32_t nwcols; /* components whose chunk versions it stamps */
  uint32_t nchanged;
  uint32_t batch;
  weft_runif_t *run_if;
  weft__visit_t *visits;
  uint32_t nvisits, visits_cap;
  uint32_t nviews, views_cap;
  weft__ainfo_t *arch;
  uint32_t narch, arch_cap;
  weft__job_t *jobs; /* planned jobs, then the splits of this run */
  uint32_t njobs, jobs_cap;
  uint32_t nplanned;     /* jobs the plan made */
  uint32_t plan_matches; /* the query's cache size at the plan */
  /* This run's estimate (prepare()); launch_prepare() reads it. */
  double est_ns;

  /* Built (graph.c), for the phase's current schedule. */
  uint32_t order;    /* position in the phase's final order */
  uint32_t segment;  /* sync segment in its phase */
  uint64_t key_base; /* WEFT_CMD_KEY(order, 0, 0) */
  /* Direct successors, any segment; pointers, because a registration
   * during a frame may move the id table while workers follow them. */
  struct weft__sys_t **succ;
  uint32_t nsucc, succ_cap;
  uint32_t npred; /* direct predecessors in the same segment */

  /* Written during the run by any worker, atomically, and dispatched by
   * the one thread that launches the run (launch_prepare(), which also
   * sets jobs_left and job_next). The owner clears the others after the
   * run, once it read them (finish()). */
  WEFT__LINE_ALIGNED _Atomic uint32_t job_next; /* next free job record
                                                   (splits) */
  _Atomic uint32_t preds_left;
  _Atomic uint32_t jobs_left;
  _Atomic bool main_ready; /* a main-thread system whose turn came */
  bool dispatched;         /* this run went to the pool */
  /* weft_sysctx_commit() ran for this run (any worker); the dispatcher
   * clears it when it holds the system's dependents (pipeline.c). */
  _Atomic bool commit_req;
  /* Held by an ancestor's commit request: runs after the extra sync
   * point, in a later round of its segment (pipeline.c, hold()); 0, or
   * pipeline.c's HELD / HELD_ACTIVE. */
  _Atomic uint8_t held;
  _Atomic uint64_t counted; /* rows a task counted (weft_sysctx_count) */
  /* The failure with the lowest chunk sequence: (seq + 1) << 32 | -code;
   * 0 when none, so that the report does not depend on timing. */
  _Atomic uint64_t err;
  _Atomic uint64_t start_ns; /* first job start (0: none yet) */
  _Atomic uint64_t end_ns;
  _Atomic uint64_t busy_ns;

  /* What a run costs, for the inline-or-dispatch decision (cost.h,
   * weft__cost_estimate()). Driving thread only. */
  WEFT__LINE_ALIGNED double cost_ns; /* a task's measured time per run;
                                        0: none yet */
  double row_ns;         /* a query system's measured time per row; 0: none */
  double last_ns;        /* the previous sample (per run, or per row) */
  uint64_t sample_ticks; /* a sampled inline run's time (run_serial()) */

  /* Written by the owner thread at registration and at a schedule build;
   * read by workers during the run (wcols, the masks). Arrays, read
   * through their counts above. */
  weft_component_t terms[WEFT_QUERY_MAX_TERMS];
  /* Access, as masks over component / resource / channel ids. */
  weft__mask_t reads, writes;   /* data access (query terms included) */
  weft__mask_t xreads, xwrites; /* the part from the read/write lists */
  /* Written components whose dirty bytes a run marks in the chunks it
   * visits (weft/dirty.h): its written terms, and its `write` list unless
   * WEFT_SYSTEM_TRACKED_WRITES says those writes mark rows themselves. */
  weft__mask_t dwrites;
  weft__mask_t touch; /* reads | writes | every query term */
  weft__mask_t cmd;   /* components its commands may change */
  weft__mask_t q_include, q_exclude;
  weft__mask_t res_read, res_write, emit, receive;
  weft_component_t wcols[WEFT_QUERY_MAX_TERMS + WEFT_SYSTEM_MAX_ACCESS];
  weft_component_t changed[WEFT_SYSTEM_MAX_ACCESS];
  char *before[WEFT_SYSTEM_MAX_ORDER];
  char *after[WEFT_SYSTEM_MAX_ORDER];
} weft__sys_t;

/* The workers' atomics share no line with the fields around them. */
/* The run line and the counters line are one line each; the workers'
 * atomics share no line with the fields around them. */
_Static_assert(offsetof(weft__sys_t, stats) == WEFT__CACHE_LINE &&
                   offsetof(weft__sys_t, world) == 2 * WEFT__CACHE_LINE,
               "weft__sys_t: the run line and the counters line");
_Static_assert(offsetof(weft__sys_t, job_next) % WEFT__CACHE_LINE == 0 &&
                   offsetof(weft__sys_t, cost_ns) -
                           offsetof(weft__sys_t, job_next) ==
                       WEFT__CACHE_LINE,
               "weft__sys_t: the workers' atomics fill one line");

typedef struct weft__phase_t {
  char *name;
  weft_phase_t anchor; /* runs after this phase (0: built-in, or a child) */
  bool enabled;
  /* The phase tree (weft_phase_register_child()): children run after
   * the phase's own systems, in registration order, while it is enabled.
   * Ids below WEFT_MAX_PHASES, in bytes that were padding, so that the
   * record keeps its 96 bytes (the frame indexes it for every phase). */
  uint8_t parent, first_child, next_sibling;
  /* Built: systems in final order (segment, then dependency order). */
  weft__sys_t **order;
  uint32_t n, cap;
  uint32_t *seg_end; /* segment k is order[seg_end[k-1] .. seg_end[k]) */
  uint32_t nseg, seg_cap;
  weft_phase_stats_t stats;
  /* Time each system of the serial segments in this run / the next one
   * (pipeline.c, run_serial()). */
  bool sample_now, sample_next;
} weft__phase_t;

_Static_assert(WEFT_MAX_PHASES <= UINT8_MAX, "phase tree links are bytes");
_Static_assert(sizeof(weft__phase_t) == 96, "weft__phase_t: 96 bytes");

/* One span of a trace. */
typedef struct weft__span_t {
  uint64_t t0, t1;
  uint32_t kind; /* WEFT__SPAN_* */
  uint32_t id;   /* system id or phase id */
  uint32_t n;    /* chunks (jobs) or commands (syncs) */
} weft__span_t;

enum { WEFT__SPAN_JOB = 1, WEFT__SPAN_INLINE, WEFT__SPAN_SYNC };

/* A command slot: what one thread records while a segment runs, its
 * command buffer and its trace spans. One per pool worker plus one for the
 * driving thread (weft_pipeline_slots()); not core's weft__slot_t, the
 * event slots. Written by one thread at a time; padded apart. */
typedef struct weft__cmdslot_t {
  WEFT__LINE_ALIGNED weft_cmdbuf_t *cmd;
  weft__span_t *spans;
  uint32_t nspans;
  uint64_t dropped;
  /* weft_sysctx_count() ran on this slot since the driving thread last
   * looked (run_plain(), which then folds the counts in). */
  bool counted;
} weft__cmdslot_t;

/*
 * The scheduler of a world, grouped by who writes its fields like
 * weft__sys_t: the owner thread's, then the one field workers write.
 */
typedef struct weft__sched_t {
  /* Written by the owner thread only, between frames or before each
   * segment's dispatch; during a run, workers read pool, nslots, slots,
   * cfg.inline_rows, tracing, affine, dt and tick. */
  /* By id - 1; NULL once removed. Owner thread only: a registration
   * during a frame may move it while workers run, so code running on a
   * worker reaches its system through the pointer in its context. */
  WEFT__LINE_ALIGNED weft__sys_t **sys;
  uint32_t nsys, sys_cap;
  uint32_t live;
  weft__phase_t phases[WEFT_MAX_PHASES + 1]; /* by id; [0] unused */
  uint32_t nphases;
  bool dirty; /* the schedule must be rebuilt */
  int build_rc;
  bool running; /* a dispatch is in progress */
  /* A segment runs on the driving thread alone (pipeline.c, run_serial()):
   * weft_sysctx_commit() holds the dependents itself. Callbacks read it,
   * the driving thread writes it before and after their calls. */
  bool serial;
  /* Some system of the running segment called weft_sysctx_commit() (any
   * worker; rare, so it may share this line): the segment takes another
   * round (pipeline.c, run_segment()). */
  _Atomic bool commit_asked;
  bool retiring; /* some system's retire flag is set: leave() drops it */

  weft_pipeline_config_t cfg;
  weft_pipeline_state_t state;
  double net_acc;

  weft_pool_t *pool;
  uint32_t main_self; /* the driving thread's pool worker index */
  weft__cmdslot_t *slots;
  weft_cmdbuf_t **bufs;      /* the slots' buffers, for weft_world_apply() */
  weft__cmdbuf_usage_t high; /* the most one segment recorded, all slots */
  uint32_t nslots;

  weft__clock_t clock; /* ticks to ns (clock.c) */

  bool tracing;
  uint32_t trace_cap;
  uint64_t trace_t0;

  /* The segment being dispatched. */
  double dt;
  uint64_t tick;
  bool affine; /* this segment's launches keep each worker on its rows
                  (pipeline.c, launch()); written before any launch */

  /* Written by any worker, atomically: the segment's systems not yet
   * complete (complete()); the driving thread sets it before the launch
   * and waits on it. */
  WEFT__LINE_ALIGNED weft_counter_t pending;
} weft__sched_t;

_Static_assert(offsetof(weft__sched_t, pending) % WEFT__CACHE_LINE == 0 &&
                   sizeof(weft_counter_t) == WEFT__CACHE_LINE &&
                   sizeof(weft__sched_t) - offsetof(weft__sched_t, pending) ==
                       WEFT__CACHE_LINE,
               "weft__sched_t: pending has its line alone");

/* The slot of a pool worker index (the driving thread gets the last one
 * unless it is worker 0 of a pool it participates in). */
static inline uint32_t weft__sched_slot(const weft__sched_t *s,
                                        uint32_t worker) {
  return worker < s->nslots - 1 ? worker : s->nslots - 1;
}

/* System @p id of @p s, or NULL for 0, an unknown id or a removed one. */
static inline weft__sys_t *weft__sched_sys(const weft__sched_t *s,
                                           weft_system_t id) {
  return s && id && id <= s->nsys ? s->sys[id - 1] : NULL;
}

/* Built-in phases (phase.h): user phases take the ids after them. */
#define WEFT__PHASE_BUILTINS WEFT_PHASE_SHUTDOWN

/* Startup and Shutdown run each of their systems once (phase.h). */
static inline bool weft__phase_once(weft_phase_t ph) {
  return ph == WEFT_PHASE_STARTUP || ph == WEFT_PHASE_SHUTDOWN;
}

/* The world's extension slots the scheduler uses (core/hooks.h). */
enum { WEFT__EXT_SCHED = 0, WEFT__EXT_RUNIF = 1 };

/* The scheduler of @p w, or NULL before its first use. One load, as a
 * field of the world would be. */
static inline weft__sched_t *weft__sched_of(const weft_world_t *w) {
  return (weft__sched_t *)w->ext[WEFT__EXT_SCHED].state;
}

/* The run conditions of @p w, newest first (runif.c), or NULL. */
static inline weft_runif_t *weft__runifs(const weft_world_t *w) {
  return (weft_runif_t *)w->ext[WEFT__EXT_RUNIF].state;
}

/* Runs the Shutdown systems still pending, if it can (pipeline.c); the
 * first thing weft__sched_fini() does, so that weft_world_destroy() runs
 * them while the world is whole. */
void weft__sched_shutdown(weft_world_t *w);

/* Frees the scheduler of @p w, if any (the world's extension fini). */
void weft__sched_fini(weft_world_t *w);

/* Frees the run conditions of @p w (the world's extension fini). */
void weft__runif_fini(weft_world_t *w);

/* The scheduler of w, created on first use: 0, or WEFT_ENOMEM or
 * WEFT_ELIMIT (no command buffer ids left for its slots) with a message on
 * the world. */
int weft__sched_open(weft_world_t *w, weft__sched_t **out);

/* Registers the pipeline's snapshot section, "weft.pipeline", on w
 * (pipeline_snapshot.c). Owner thread; 0 or WEFT_ENOMEM. */
int weft__pipeline_snapshot_register(weft_world_t *w);

/* Frees system @p y and its place in the id table; the schedule is rebuilt
 * at the next dispatch. Owner thread, not during a frame (system.c). */
void weft__sched_drop(weft_world_t *w, weft__sys_t *y);

/* weft__sched_open() for callers that need no reason: NULL on failure. */
weft__sched_t *weft__sched_get(weft_world_t *w);

/* True when @p cond is one of @p w's run conditions (runif.c). Compares
 * pointers only: a foreign or forged one is never dereferenced. */
bool weft__runif_owned(const weft_world_t *w, const weft_runif_t *cond);

/* Rebuilds every phase's schedule when dirty (graph.c). */
int weft__sched_build(weft_world_t *w, weft__sched_t *s);

/* Holds the descendants of system @p y in its segment for a later round
 * (pipeline.c): weft_sysctx_commit() while y runs in a segment that runs
 * serially (without a pool, or in run_serial()). */
void weft__sched_hold(weft__sys_t *y);

/* Rebuilds phase @p ph alone, after some of its systems became spent
 * (graph.c): 0 or WEFT_ENOMEM (then the whole schedule is rebuilt at the
 * next dispatch). */
int weft__graph_build_phase(weft_world_t *w, weft__sched_t *s, weft_phase_t ph);

/* Frees the built arrays of the phases and systems (graph.c). */
void weft__graph_fini(weft_world_t *w, weft__sched_t *s);

/* Runs phase @p ph with time step @p dt, then the user phases anchored to
 * it: each sync segment's systems, prepared, dispatched and synced
 * (pipeline.c). Driving thread, inside a frame. Returns 0 or the
 * first failure. */
int weft__pipeline_run_phase(weft_world_t *w, weft__sched_t *s, weft_phase_t ph,
                             double dt);

/* Records a span on slot k (trace.c). */
void weft__trace_record(weft__sched_t *s, uint32_t k, uint32_t kind,
                        uint32_t id, uint32_t n, uint64_t t0, uint64_t t1);

/* Records a span on slot k if tracing. */
static inline void weft__trace_span(weft__sched_t *s, uint32_t k, uint32_t kind,
                                    uint32_t id, uint32_t n, uint64_t t0,
                                    uint64_t t1) {
  if (s->tracing)
    weft__trace_record(s, k, kind, id, n, t0, t1);
}

/* Frees trace buffers (trace.c). */
void weft__trace_fini(weft_world_t *w, weft__sched_t *s);

#endif /* WEFT_SCHEDULER_SCHED_H */
