/* SPDX-License-Identifier: MIT */
/*
 * weft-bench harness: measurement, result table, JSON output and filtering.
 *
 * Method. The machines this runs on swing between a fast and a slow CPU
 * state every 10-60 s by up to 1.8x, so comparing a weft run against a
 * baseline run taken seconds apart says little. Instead every workload is
 * paired with a baseline written in plain C over plain arrays (restrict
 * pointers, 64-byte aligned storage, loops the compiler vectorizes) and the
 * two are sampled alternately: A B, B A, A B, ... for N rounds (16 by
 * default, 4 with --quick; an odd N is rounded up). Each side of a round
 * repeats its operation enough times to last at least ~20 ms (calibrated
 * once after a warm-up run), timed with clock_gettime(CLOCK_MONOTONIC).
 * Because both halves of a round run within ~50 ms of each other they see
 * the same CPU state, so ratios are stable even when the absolute numbers
 * drift.
 *
 * In that order the side that opens a round has just run (it closed the
 * round before) and finds part of its data still in the caches, while the
 * side that follows it starts cold. Workloads of tens of MB, partly cache
 * resident on this machine, show it plainly: update/2sys/st read about
 * 0.87x in rounds that weft opened and 1.08x in rounds the baseline
 * opened, and simple_iter/soa/1M 1.00-1.05x against 1.10-1.23x, so a
 * median of single rounds fell on whichever order had one round more. So
 * the rounds are taken in pairs, (A B, B A), in which each side opens once
 * and follows once, and a pair's value, baseline value and ratio are the
 * geometric means of its two rounds'; an untimed run of A before the
 * first round makes that round's opener warm like every later one. The
 * reported value, baseline value and ratio are the medians of the
 * per-pair numbers, and the ratio's extremes are those of the pairs.
 *
 * A workload's rounds all fall within a second or so, which is shorter
 * than one of the host's fast or slow stretches: a whole row could land in
 * a slow stretch, and that shifts absolute values (ns per move) and the
 * ratios of workloads that a slow stretch does not slow as much as their
 * baselines. So the suite runs in passes (3 by default, 1 with --quick):
 * every pass runs every selected workload, from setup to teardown, for N
 * rounds, and a workload's medians are taken over the pairs of all
 * passes. Its samples then come from windows a whole pass (about a
 * minute) apart, and one slow stretch decides at most a third of them.
 * (Splitting the same rounds over the passes instead would cut each
 * pass's run short: several workloads' first rounds after setup run a few
 * percent slow, and the arena would stop at an earlier, smaller world.)
 *
 * Every operation returns a checksum that the harness folds into a volatile
 * sink, so the compiler cannot discard the work; bench_clobber() between
 * repetitions stops it from merging repetitions.
 *
 * Targets are either absolute (value <= target, e.g. ns per move),
 * relative (ratio <= target) or a floor (value >= target, e.g. a share in
 * percent); misses are printed but do not change the exit code.
 */
#ifndef WEFT_BENCH_HARNESS_H
#define WEFT_BENCH_HARNESS_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <weft.h>

/* A vec3 of floats, shared by several scenarios. */
typedef struct bench_vec3_t {
  float x, y, z;
} bench_vec3_t;

/*
 * One timed operation, repeated @p reps times: returns a checksum of what it
 * computed. The function loops itself so that no indirect call sits inside
 * the measurement.
 */
typedef uint64_t (*bench_fn)(void *state, uint64_t reps);

typedef enum bench_target_kind_t {
  BENCH_TARGET_NONE = 0,
  BENCH_TARGET_VALUE, /* value <= target (absolute, in the unit) */
  BENCH_TARGET_RATIO, /* ratio <= target (relative to the baseline) */
  BENCH_TARGET_MIN    /* value >= target (absolute, in the unit) */
} bench_target_kind_t;

/* One row of the report. NaN marks a number that does not apply. */
typedef struct bench_result_t {
  char name[64];
  char baseline[48]; /* empty: no baseline */
  const char *unit;
  uint64_t n;            /* entities the workload ran on */
  uint32_t rounds;       /* timed rounds, all passes; 0: computed value */
  double value;          /* median of per-pair workload values */
  double baseline_value; /* median of per-pair baseline values */
  double ratio;          /* median of per-pair workload/baseline ratios */
  double ratio_min;
  double ratio_max;
  bench_target_kind_t target_kind;
  double target;
  uint32_t workers;  /* parallel workloads only; 0: not set */
  double efficiency; /* parallel workloads only; emitted when workers > 0 */
  double bytes;      /* memory traffic per operation; > 0: the JSON adds GB/s */
  /* Per-round samples of every pass so far (timed rows only), in round
   * order, so rounds 2k and 2k + 1 make pair k: workload values, baseline
   * values and ratios, three blocks of cap_samples. Owned by the
   * context. */
  double *samples;
  uint32_t nsamples;
  uint32_t cap_samples;
} bench_result_t;

/* One side (workload or baseline) of a comparison. */
typedef struct bench_side_t {
  const char *name;
  bench_fn fn;
  void *state;
  double ops; /* operations per repetition (entities, moves, ...) */
  /* fn times itself: it returns the nanoseconds of the part that counts
   * (setup between repetitions, such as recording commands before an
   * apply, stays out), not a checksum. */
  bool self_timed;
} bench_side_t;

/* A comparison to run: a workload against its baseline. */
typedef struct bench_case_t {
  const char *name;
  const char *unit;
  uint64_t n;
  bench_side_t work;
  bench_side_t base;
  bench_target_kind_t target_kind;
  double target;
  /* Threads the workload side runs on (the pool's workers, 1 for a world
   * without a pool); 0: not a parallel workload. Copied into the result;
   * --svg charts rows named .../<w>w (or .../st for 1) by it. */
  uint32_t workers;
} bench_case_t;

/* Run-wide settings and the collected results. Owned by main(). */
typedef struct bench_ctx_t {
  bool quick;
  bool list_only;  /* --list: print selected names, run nothing */
  uint32_t rounds; /* rounds per workload in one pass; even */
  uint32_t passes; /* the suite runs this many times */
  uint32_t pass;   /* the pass running now, from 0 */
  double round_ns; /* minimum duration of one side of a round */
  bool has_filter;
  regex_t filter;
  bench_result_t *results;
  size_t count;
  size_t cap;
  volatile uint64_t sink;
} bench_ctx_t;

/* A monotonic clock in nanoseconds, for self-timed sides. */
double bench_now_ns(void);

/* Scenario entry points, one per bench_<scenario>.c. */
void bench_simple_insert(bench_ctx_t *ctx);
void bench_simple_iter(bench_ctx_t *ctx);
void bench_frag_iter(bench_ctx_t *ctx);
void bench_query(bench_ctx_t *ctx);
void bench_add_remove(bench_ctx_t *ctx);
void bench_require(bench_ctx_t *ctx);
void bench_stalls(bench_ctx_t *ctx);
void bench_create_destroy(bench_ctx_t *ctx);
void bench_commands(bench_ctx_t *ctx);
void bench_get(bench_ctx_t *ctx);
void bench_dirty(bench_ctx_t *ctx);
void bench_hierarchy(bench_ctx_t *ctx);
void bench_memory(bench_ctx_t *ctx);
void bench_jobs(bench_ctx_t *ctx);
void bench_relation(bench_ctx_t *ctx);
void bench_compact(bench_ctx_t *ctx);
void bench_snapshot(bench_ctx_t *ctx);
void bench_codec(bench_ctx_t *ctx);
/* Built where weft::mpi is (WEFT_BENCH_MPI); run under mpirun. */
void bench_mpi(bench_ctx_t *ctx);
void bench_mpi_scale(bench_ctx_t *ctx);

/* Sets defaults (full or quick); 0 rounds or passes keeps the mode's
 * default. */
void bench_ctx_init(bench_ctx_t *ctx, bool quick, uint32_t rounds,
                    uint32_t passes);
/* Compiles @p pattern (POSIX extended); returns 0 or writes the reason to
 * @p err and returns -1. */
int bench_ctx_set_filter(bench_ctx_t *ctx, const char *pattern, char *err,
                         size_t err_size);
void bench_ctx_free(bench_ctx_t *ctx);

/* True if the workload @p name passes the filter and should run now. In
 * --list mode prints the name and returns false. */
bool bench_selected(bench_ctx_t *ctx, const char *name);

/* Runs this pass's rounds of a comparison with the alternating method and
 * merges them into the workload's result (created in the first pass).
 * Returns the result, valid until the next bench_compare or bench_record:
 * its medians cover every pass so far, so derived numbers (efficiency)
 * are set from it again in every pass. */
bench_result_t *bench_compare(bench_ctx_t *ctx, const bench_case_t *c);

/* Records a computed result (no timing); a later pass's value replaces
 * the earlier one of the same name. */
void bench_record(bench_ctx_t *ctx, const bench_result_t *r);

/* Prints the table; returns the number of missed targets. */
size_t bench_print_table(const bench_ctx_t *ctx, FILE *out);

/* Writes the report as JSON: {"format": "weft-bench", "version", "meta",
 * "results": [one object per row]}. 0 or -1 (errno set). */
int bench_write_json(const bench_ctx_t *ctx, const char *path);

/* How a row fares against its target: "pass" or "miss", "indicative" in a
 * --quick run (a few noisy rounds prove nothing either way), NULL for a
 * row without a target. */
const char *bench_verdict(const bench_ctx_t *ctx, const bench_result_t *r);

struct weft__json_t;
/* Writes the "meta" member: commit, compiler, flags, machine, rounds,
 * passes, --quick, OMP_WAIT_POLICY (meta.c). */
void bench_write_meta(struct weft__json_t *j, const bench_ctx_t *ctx);

/* Closes a file written with stdio: 0, or -1 with errno set (EIO when
 * only the stream's error flag says what went wrong). */
int bench_fclose(FILE *f);

/* Writes an SVG scaling chart of the parallel workloads (svg.c). 0 or -1
 * (errno set). */
int bench_write_svg(const bench_ctx_t *ctx, const char *path);

/* 64-byte aligned, zero-filled (so pages are touched before timing), and
 * each block at its own offset modulo 4096 (a line further on, in steps of
 * eleven lines, than the block before), so that the arrays a baseline
 * streams side by side never alias in the low 12 address bits (see
 * bench_alloc()). Exits on failure. Free with bench_free(). */
void *bench_alloc(size_t bytes);

/* The offset into a page at which the k-th of several arrays streamed side
 * by side starts: line 1 + (11 * k) % 63, so up to 63 arrays take
 * different lines modulo 4096 (bench_alloc()). */
static inline size_t bench_page_line(unsigned k) {
  return 64u * (1u + (11u * k) % 63u);
}
void bench_free(void *p);

/* Exits with a message naming @p what and weft's description of @p rc. */
_Noreturn void bench_die(const char *what, int rc);

static inline void bench_check(int rc, const char *what) {
  if (rc != 0)
    bench_die(what, rc);
}

struct weft_world_t;

/* Runs @p reps FixedUpdate phases of @p world with delta time @p dt (one
 * repetition of the system workloads); exits on an error. Returns reps. */
uint64_t bench_fixed_phases(struct weft_world_t *world, double dt,
                            uint64_t reps);

/* Formats an entity count as 10k, 1M, 16M or a plain number. */
void bench_size_label(char *buf, size_t size, uint64_t n);

/* splitmix64: deterministic pseudo-random numbers. */
uint64_t bench_rng_next(uint64_t *state);
/* Fisher-Yates shuffle of an index permutation. */
void bench_shuffle_u32(uint32_t *a, size_t n, uint64_t seed);

/* The bit pattern of a float, for checksums. */
uint64_t bench_f32_bits(float f);

/* A compiler barrier: memory may have changed, so nothing is cached in
 * registers across it and repetitions cannot be merged. */
static inline void bench_clobber(void) {
  __asm__ volatile("" ::: "memory");
}

/* ---- kernels that baselines and weft sides share --------------------------
 *
 * Static inline so that every scenario's translation unit compiles its own
 * copy, inlined into its baseline loops and weft callbacks with the
 * bench's flags (bench/CMakeLists.txt), exactly as a private copy was.
 */

/*
 * p += v * dt over n entities held as six float arrays (SoA): simple_iter's
 * soa rows and bandwidth. gcc 12 -O3 -fopt-info-vec-optimized: "loop
 * vectorized using 16 byte vectors" with no alias versioning (the restrict
 * qualifiers survive inlining), for the baseline and the weft call alike.
 */
/* A kernel both sides of a row call: one out-of-line copy, 64-byte
 * aligned, so that where the linker puts it cannot favour either side. */
#define BENCH_KERNEL __attribute__((noinline, aligned(64)))

static inline void bench_integrate_soa(uint32_t n, float *restrict px,
                                       float *restrict py, float *restrict pz,
                                       const float *restrict vx,
                                       const float *restrict vy,
                                       const float *restrict vz, float dt) {
  for (uint32_t i = 0; i < n; ++i) {
    px[i] += vx[i] * dt;
    py[i] += vy[i] * dt;
    pz[i] += vz[i] * dt;
  }
}

/* p += v * dt element by element over n floats: simple_iter's aos rows (3
 * per entity) and update's MovementSystem (2 per entity); vectorized
 * likewise. */
static inline void bench_integrate_flat(uint32_t n, float *restrict p,
                                        const float *restrict v, float dt) {
  for (uint32_t i = 0; i < n; ++i)
    p[i] += v[i] * dt;
}

/* ---- setup shared by the scenarios (untimed) ------------------------------
 */

/* A pool of @p workers workers with the calling thread taking part as
 * worker 0 (bound to its place if @p bind_caller). Exits on failure. The
 * caller destroys it, after the worlds that use it. */
weft_pool_t *bench_pool_new(uint32_t workers, bool bind_caller);

/* Registers @p d twice, as "Position" into out[0] and "Velocity" into
 * out[1] (the scenarios' two vec3 components). Exits on failure. */
void bench_register_pos_vel(weft_world_t *world, weft_component_desc_t d,
                            weft_component_t out[2]);

#endif /* WEFT_BENCH_HARNESS_H */
