/* SPDX-License-Identifier: MIT */
/*
 * The private state of the system scheduler: registered systems and phases
 * (system.c), the built per-phase schedule (graph.c) and the per-frame run
 * state (pipeline.c, trace.c).
 */
#ifndef WEFT_SCHEDULER_SCHED_H
#define WEFT_SCHEDULER_SCHED_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/bitset.h"
#include "core/platform.h"
#include "core/chunk.h"
#include "core/txn.h"
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
} weft__ainfo_t;

typedef struct weft__sys_t {
  weft_system_t id; /* index + 1 into sched->sys */
  weft_world_t *world;
  char *name;
  weft_phase_t phase;
  uint32_t flags;
  bool enabled;
  bool removed; /* weft_system_remove() during a frame: gone at its end */
  weft_query_t *query; /* NULL: a task */
  weft_component_t terms[WEFT_QUERY_MAX_TERMS];
  uint32_t nterms;
  /* Access, as masks over component / resource / channel ids. */
  weft__mask_t reads, writes;   /* data access (query terms included) */
  weft__mask_t xreads, xwrites; /* the part from the read/write lists */
  weft__mask_t touch;           /* reads | writes | every query term */
  weft__mask_t cmd;             /* components its commands may change */
  weft__mask_t q_include, q_exclude;
  weft__mask_t res_read, res_write, emit, receive;
  weft_component_t wcols[WEFT_QUERY_MAX_TERMS + WEFT_SYSTEM_MAX_ACCESS];
  uint32_t nwcols; /* components whose chunk versions it stamps */
  bool stamp_late; /* this run's jobs stamp their visits (prepare()) */
  weft_component_t changed[WEFT_SYSTEM_MAX_ACCESS];
  uint32_t nchanged;
  char *before[WEFT_SYSTEM_MAX_ORDER];
  char *after[WEFT_SYSTEM_MAX_ORDER];
  weft_runif_t *run_if;
  uint32_t batch;
  weft_system_fn run;
  void *user;
  uint32_t last_run; /* change version of the previous run */
  uint32_t version;  /* of the current run */

  /* Built (graph.c), for the phase's current schedule. */
  uint32_t order;   /* position in the phase's final order */
  uint32_t segment; /* sync segment in its phase */
  /* Direct successors, any segment; pointers, because a registration
   * during a frame may move the id table while workers follow them. */
  struct weft__sys_t **succ;
  uint32_t nsucc, succ_cap;
  uint32_t npred; /* direct predecessors in the same segment */

  /* Per run. */
  bool active; /* enabled and its condition held */
  bool retire; /* an after() condition fired: remove after the frame */
  weft__visit_t *visits;
  uint32_t nvisits, visits_cap;
  weft__ainfo_t *arch;
  uint32_t narch, arch_cap;
  weft__job_t *jobs; /* planned jobs, then the splits of this run */
  uint32_t njobs, jobs_cap;
  uint32_t nplanned;     /* jobs the plan made */
  uint64_t plan_version; /* the world's structural version it was made at */
  uint32_t plan_matches; /* and the query's cache size then */
  bool planned;
  bool dispatched;           /* this run went to the pool */
  _Atomic uint32_t job_next; /* next free job record (splits) */
  uint64_t rows;             /* rows this run visits */
  _Atomic uint64_t counted;  /* rows a task counted (weft_sysctx_count) */
  _Atomic uint32_t preds_left;
  _Atomic uint32_t jobs_left;
  /* The failure with the lowest chunk sequence: (seq + 1) << 32 | -code;
   * 0 when none, so that the report does not depend on timing. */
  _Atomic uint64_t err;
  _Atomic uint64_t start_ns; /* first job start (0: none yet) */
  _Atomic uint64_t end_ns;
  _Atomic uint64_t busy_ns;
  _Atomic bool main_ready; /* a main-thread system whose turn came */
  weft_system_stats_t stats;

  /* What a run costs, for the inline-or-dispatch decision (pipeline.c,
   * estimate()). Driving thread only. */
  double est_ns;         /* this run's estimate (prepare()) */
  double cost_ns;        /* a task's measured time per run; 0: none yet */
  double row_ns;         /* a query system's measured time per row; 0: none */
  double last_ns;        /* the previous sample (per run, or per row) */
  uint64_t sample_ticks; /* a sampled inline run's time (run_serial()) */
} weft__sys_t;

typedef struct weft__phase_t {
  char *name;
  weft_phase_t anchor; /* runs after this phase (0: built-in) */
  bool enabled;
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

/* One span of a trace. */
typedef struct weft__span_t {
  uint64_t t0, t1;
  uint32_t kind; /* WEFT__SPAN_* */
  uint32_t id;   /* system id or phase id */
  uint32_t n;    /* chunks (jobs) or commands (syncs) */
} weft__span_t;

enum { WEFT__SPAN_JOB = 1, WEFT__SPAN_INLINE, WEFT__SPAN_SYNC };

/* A worker slot: one per pool worker plus one for the driving thread.
 * Written by one thread at a time; padded apart. */
typedef struct weft__slot_t {
  WEFT__LINE_ALIGNED weft_cmdbuf_t *cmd;
  weft__span_t *spans;
  uint32_t nspans;
  uint64_t dropped;
} weft__slot_t;

typedef struct weft__sched_t {
  /* By id - 1; NULL once removed. Owner thread only: a registration
   * during a frame may move it while workers run, so code running on a
   * worker reaches its system through the pointer in its context. */
  weft__sys_t **sys;
  uint32_t nsys, sys_cap;
  uint32_t live;
  weft__phase_t phases[WEFT_MAX_PHASES + 1]; /* by id; [0] unused */
  uint32_t nphases;
  bool dirty; /* the schedule must be rebuilt */
  int build_rc;
  bool running; /* a dispatch is in progress */

  weft_pipeline_config_t cfg;
  weft_pipeline_state_t state;
  double net_acc;

  weft_pool_t *pool;
  uint32_t main_self; /* the driving thread's pool worker index */
  bool affine;        /* this segment's launches keep each worker on its rows
                         (pipeline.c, launch()); written before any launch */
  weft__slot_t *slots;
  weft_cmdbuf_t **bufs;      /* the slots' buffers, for weft_world_apply() */
  weft__cmdbuf_usage_t high; /* the most one segment recorded, all slots */
  uint32_t nslots;

  uint64_t cal_ns, cal_ticks; /* clock and ticks at creation */
  double ns_per_tick;         /* cached once calibrated over 1 s */
  double tick_ns;             /* ns_per_tick, or a first guess until it is
                                 known; for cost estimates (pipeline.c) */

  bool tracing;
  uint32_t trace_cap;
  uint64_t trace_t0;

  /* The segment being dispatched. */
  weft_counter_t pending;
  double dt;
  uint64_t tick;
} weft__sched_t;

/* System @p id of @p s, or NULL for 0, an unknown id or a removed one. */
static inline weft__sys_t *weft__sched_sys(const weft__sched_t *s,
                                           weft_system_t id) {
  return s && id && id <= s->nsys ? s->sys[id - 1] : NULL;
}

/* The scheduler of w, created on first use: 0, or WEFT_ENOMEM or
 * WEFT_ELIMIT (no command buffer ids left for its slots) with a message on
 * the world. */
int weft__sched_open(weft_world_t *w, weft__sched_t **out);

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

/* Frees the built arrays of the phases and systems (graph.c). */
void weft__graph_fini(weft_world_t *w, weft__sched_t *s);

/*
 * A cheap timestamp for per-system timing: the TSC on x86-64 (about 8 ns,
 * against about 50 ns for clock_gettime() in a VM), else nanoseconds.
 * Counters and trace spans keep ticks; weft__ns_per_tick() converts when
 * they are read.
 */
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline uint64_t weft__ticks(void) {
  return __rdtsc();
}
#define WEFT__TICKS_ARE_NS 0
#else
static inline uint64_t weft__ticks(void) {
  return weft__now_ns();
}
#define WEFT__TICKS_ARE_NS 1
#endif

/* Nanoseconds per tick, calibrated against the clock since the scheduler
 * was created (waits up to 2 ms on the first call). */
double weft__ns_per_tick(const weft__sched_t *s);

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
