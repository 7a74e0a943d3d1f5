/* SPDX-License-Identifier: MIT */
/*
 * weft-sim: the main demo. Runs one of the built-in scenarios (arena,
 * boids, particles; see sim_scenarios.c) on a pool of workers for a number
 * of fixed ticks, then prints a per-phase and per-system timing table,
 * entity updates per second, worker utilisation and steals, sync points and
 * the final world digest (all of the state: entities, resources, pending
 * events, random streams) — the same digest for any --threads.
 *
 *   weft-sim [--scenario arena|boids|particles] [--entities N] [--threads T]
 *            [--ticks K] [--warmup W] [--seed S] [--trace FILE.json]
 *            [--json FILE] [--frames DIR [--frame-every N] [--frame-size PX]]
 *            [--checkpoint FILE [--checkpoint-every N]] [--restore FILE]
 *   weft-sim --help | --version
 *
 * --frames writes a PNG of the world every N ticks (sim_frames.c); the
 * time spent drawing is left out of the figures.
 *
 * --warmup runs W untimed ticks first, because the first ticks pay what
 * later ones do not: page faults on fresh memory (which on a VM whose host
 * has yet to back that memory cost the 1M-entity arena 0.5 s), the
 * schedule's build, arrays growing to size. Every figure printed, and the
 * trace, covers the K timed ticks only; the digest covers all W + K.
 *
 * Bad arguments (an unknown option, a value out of range, an output file
 * that cannot be written) print a message and exit with status 2 before
 * anything runs.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <weft.h>

#include "core/json.h"
#include "sim_frames.h"
#include "sim_scenarios.h"
#ifdef WEFT_SIM_MPI
#include "sim_mpi.h"
#endif
#include "sim_serve.h"
#include "weft_tools_version.h"

#define SIM_DT (1.0 / 60.0)
#define SIM_MAX_SYSTEMS 256u
#define SIM_NPHASES (WEFT_PHASE_PRE_RENDER + 1)

typedef struct sim_args_t {
  sim_kind_t kind;
  uint32_t entities;
  int32_t threads; /* -1: one worker per core; 0: no pool */
  uint32_t ticks;
  uint32_t warmup; /* untimed ticks before the timed ones */
  uint64_t seed;
  const char *trace;
  const char *json;
  const char *frames;        /* folder for PNG frames, or NULL */
  uint32_t frame_every;      /* ticks between frames */
  uint32_t frame_size;       /* pixels a side */
  const char *checkpoint;    /* snapshot file written during/after the run */
  uint32_t checkpoint_every; /* ticks between checkpoints; 0: at the end */
  const char *restore;       /* snapshot to continue from, or NULL */
  bool mpi;                  /* distributed over MPI ranks (tools/sim_mpi.c) */
  sim_serve_opts_t serve;    /* --serve and its bounds (sim_serve.c) */
  uint32_t balance;          /* --mpi: rebalance by time every N ticks */
} sim_args_t;

/* The default --frame-every: six pictures a simulated second at 60 Hz,
 * enough to follow a projectile, few enough to keep the folder small. */
#define SIM_FRAME_EVERY 10u

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: weft-sim [--scenario arena|boids|particles] [--entities N]\n"
      "                [--threads T] [--ticks K] [--warmup W] [--seed S]\n"
      "                [--trace FILE.json] [--json FILE]\n"
      "                [--frames DIR [--frame-every N] [--frame-size PX]]\n"
      "                [--checkpoint FILE [--checkpoint-every N]]\n"
      "                [--restore FILE] [--mpi [--balance N]]\n"
      "                [--serve PORT [--serve-ticks N] [--serve-seconds S]\n"
      "                 [--serve-max-sessions N] [--serve-idle S]\n"
      "                 [--serve-web DIR] [--serve-bind ADDR]]\n"
      "       weft-sim --help | --version\n"
      "  -s, --scenario S  arena (default): units, turrets, projectiles,\n"
      "                    collisions and damage; boids: flocking over a\n"
      "                    grid; particles: gravity and bouncing walls\n"
      "  -e, --entities N  initial entities (default 100000)\n"
      "  -t, --threads T   workers, the calling thread included (default:\n"
      "                    one per core; 0: no pool, everything inline)\n"
      "  -k, --ticks K     fixed ticks of 1/60 s to run (default 200)\n"
      "  --warmup W        untimed ticks to run first (default 0): the\n"
      "                    figures cover the K ticks after them only\n"
      "  --seed S          initial-state seed (default 1)\n"
      "  --trace FILE      write a Chrome trace of the run (Perfetto)\n"
      "  --json FILE       write the results as JSON\n"
      "  --frames DIR      write a top-down PNG of the world to\n"
      "                    DIR/frame-TICK.png before the first tick and\n"
      "                    every N ticks (warm-up included); DIR is made\n"
      "                    if missing. Turrets orange, projectiles\n"
      "                    yellow, units blue (red when hurt), boids and\n"
      "                    particles coloured by heading\n"
      "  --frame-every N   ticks between frames (default 10)\n"
      "  --frame-size PX   the pictures' side in pixels (default 800)\n"
      "  --checkpoint FILE write a snapshot of the world to FILE at the\n"
      "                    end (atomically: FILE.tmp, fsync, rename)\n"
      "  --checkpoint-every N  and every N fixed ticks (counted from the\n"
      "                    first run, restored runs included)\n"
      "  --restore FILE    continue from a snapshot written by a run of the\n"
      "                    same --scenario, --entities and --seed; --ticks\n"
      "                    more ticks run after it\n"
      "  --mpi             run distributed over MPI ranks (implied under\n"
      "                    mpirun): every scenario; prints one line\n"
      "                    per rank and the global digest; there\n"
      "                    --checkpoint and --restore name a distributed\n"
      "                    checkpoint (PREFIX.index, PREFIX.R), which a run\n"
      "                    on any rank count continues\n"
      "  --balance N       with --mpi: move the region cuts by the ranks'\n"
      "                    measured CPU time in their ticks every N ticks\n"
      "                    (prints the tick-time imbalance before and\n"
      "                    after the first)\n"
      "  --serve PORT      serve the run to weft::net clients (weft-client)\n"
      "                    over WebSocket on 127.0.0.1:PORT (0: a free\n"
      "                    port, printed) at 60 ticks a second instead of\n"
      "                    the timed run; until --serve-ticks N ticks or\n"
      "                    --serve-seconds S (default: until SIGINT)\n"
      "  --serve-max-sessions N  clients at most (default 64)\n"
      "  --serve-idle S    close clients silent for S seconds (default 10)\n"
      "  --serve-web DIR   the live view's page (default: tools/web);\n"
      "                    open http://127.0.0.1:PORT/ in a browser\n"
      "  --serve-bind ADDR listen on ADDR (default 127.0.0.1)\n"
      "  -h, --help        this text\n"
      "  -V, --version     weft's version (and git commit)\n"
      "Values may follow their option as '--ticks 50' or '--ticks=50'.\n");
}

/* Parses an unsigned decimal in [lo, hi]; false when it is not one. */
static bool parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
  char *end;
  errno = 0;
  if (!s || !*s || *s == '-' || *s == '+')
    return false;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || v < lo || v > hi)
    return false;
  *out = v;
  return true;
}

static int bad(const char *opt, const char *val, const char *why) {
  fprintf(stderr, "weft-sim: %s%s%s: %s\n", opt, val ? " " : "", val ? val : "",
          why);
  usage(stderr);
  return 2;
}

/* True when @p path can be opened for writing; it is created if missing
 * (and written in full after the run) but not truncated here. errno says
 * why not. */
static bool writable(const char *path) {
  FILE *f = fopen(path, "a");
  if (!f)
    return false;
  return fclose(f) == 0;
}

/* Long options; the most used have a short form too. */
enum {
  OPT_WARMUP = 256,
  OPT_SEED,
  OPT_TRACE,
  OPT_JSON,
  OPT_FRAMES,
  OPT_FRAME_EVERY,
  OPT_FRAME_SIZE,
  OPT_CHECKPOINT,
  OPT_CHECKPOINT_EVERY,
  OPT_RESTORE,
  OPT_MPI,
  OPT_BALANCE,
  OPT_SERVE /* --serve*: sim_serve_option() parses them */
};
static const struct option sim_options[] = {
    {"scenario", required_argument, NULL, 's'},
    {"entities", required_argument, NULL, 'e'},
    {"threads", required_argument, NULL, 't'},
    {"ticks", required_argument, NULL, 'k'},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"seed", required_argument, NULL, OPT_SEED},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"json", required_argument, NULL, OPT_JSON},
    {"frames", required_argument, NULL, OPT_FRAMES},
    {"frame-every", required_argument, NULL, OPT_FRAME_EVERY},
    {"frame-size", required_argument, NULL, OPT_FRAME_SIZE},
    {"checkpoint", required_argument, NULL, OPT_CHECKPOINT},
    {"checkpoint-every", required_argument, NULL, OPT_CHECKPOINT_EVERY},
    {"restore", required_argument, NULL, OPT_RESTORE},
    {"mpi", no_argument, NULL, OPT_MPI},
    {"balance", required_argument, NULL, OPT_BALANCE},
    {"serve", required_argument, NULL, OPT_SERVE},
    {"serve-ticks", required_argument, NULL, OPT_SERVE},
    {"serve-seconds", required_argument, NULL, OPT_SERVE},
    {"serve-max-sessions", required_argument, NULL, OPT_SERVE},
    {"serve-idle", required_argument, NULL, OPT_SERVE},
    {"serve-web", required_argument, NULL, OPT_SERVE},
    {"serve-bind", required_argument, NULL, OPT_SERVE},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0}};

/* "--name" of option code @p c into @p buf, for messages. */
static const char *opt_name(int c, char *buf, size_t size) {
  snprintf(buf, size, "?");
  for (const struct option *o = sim_options; o->name; o++)
    if (o->val == c)
      snprintf(buf, size, "--%s", o->name);
  return buf;
}

/* One option's value into @p a; 0 or bad()'s status. */
static int parse_one(int c, const char *val, sim_args_t *a) {
  char name[32];
  const char *opt = opt_name(c, name, sizeof name);
  uint64_t v;
  switch (c) {
  case 's':
    if (!sim_kind_parse(val, &a->kind))
      return bad(opt, val, "unknown scenario");
    break;
  case 'e':
    if (!parse_u64(val, 1, 50000000, &v))
      return bad(opt, val, "expected 1..50000000");
    a->entities = (uint32_t)v;
    break;
  case 't':
    if (!parse_u64(val, 0, 1024, &v))
      return bad(opt, val, "expected 0..1024");
    a->threads = (int32_t)v;
    break;
  case 'k':
  case OPT_WARMUP:
    if (!parse_u64(val, 0, 10000000, &v))
      return bad(opt, val, "expected 0..10000000");
    *(c == 'k' ? &a->ticks : &a->warmup) = (uint32_t)v;
    break;
  case OPT_SEED:
    if (!parse_u64(val, 0, UINT64_MAX, &v))
      return bad(opt, val, "expected an unsigned 64-bit integer");
    a->seed = v;
    break;
  case OPT_TRACE:
    a->trace = val;
    break;
  case OPT_JSON:
    a->json = val;
    break;
  case OPT_FRAMES:
    if (!*val)
      return bad(opt, val, "expected a folder");
    a->frames = val;
    break;
  case OPT_FRAME_EVERY:
    if (!parse_u64(val, 1, 10000000, &v))
      return bad(opt, val, "expected 1..10000000");
    a->frame_every = (uint32_t)v;
    break;
  case OPT_CHECKPOINT:
  case OPT_RESTORE:
    if (!*val)
      return bad(opt, val, "expected a file");
    *(c == OPT_RESTORE ? &a->restore : &a->checkpoint) = val;
    break;
  case OPT_BALANCE:
    if (!parse_u64(val, 1, 10000000, &v))
      return bad(opt, val, "expected 1..10000000");
    a->balance = (uint32_t)v;
    break;
  case OPT_CHECKPOINT_EVERY:
    if (!parse_u64(val, 1, 10000000, &v))
      return bad(opt, val, "expected 1..10000000");
    a->checkpoint_every = (uint32_t)v;
    break;
  default: /* OPT_FRAME_SIZE */
    if (!parse_u64(val, SIM_FRAME_MIN_SIZE, SIM_FRAME_MAX_SIZE, &v))
      return bad(opt, val, "expected 16..4096");
    a->frame_size = (uint32_t)v;
    break;
  }
  return 0;
}

static int parse_args(int argc, char **argv, sim_args_t *a) {
  *a = (sim_args_t){
      SIM_ARENA,       100000,         -1,   200, 0,    1,     NULL, NULL, NULL,
      SIM_FRAME_EVERY, SIM_FRAME_SIZE, NULL, 0,   NULL, false, {0},  0};
  opterr = 0; /* our messages, not getopt's */
  int c, rc;
  bool frame_opt = false;
  int li = -1;
  while ((c = getopt_long(argc, argv, ":s:e:t:k:hV", sim_options, &li)) != -1) {
    if (c == OPT_SERVE) {
      const char *why =
          sim_serve_option(sim_options[li].name, optarg, &a->serve);
      if (why)
        return bad(argv[optind - 1], optarg, why);
      continue;
    }
    if (c == 'h') {
      usage(stdout);
      exit(0);
    }
    if (c == 'V') {
      printf("weft-sim (weft) %s\n", WEFT_TOOLS_VERSION);
      exit(0);
    }
    if (c == ':')
      return bad(argv[optind - 1], NULL, "needs a value");
    if (c == '?') {
      /* An unknown short option is optopt; a long one the word getopt
       * just passed. */
      char opt[3] = {'-', (char)optopt, 0};
      return bad(optopt ? opt : argv[optind - 1], NULL, "unknown option");
    }
    if (c == OPT_MPI) {
      a->mpi = true;
      continue;
    }
    if ((rc = parse_one(c, optarg, a)) != 0)
      return rc;
    frame_opt |= c == OPT_FRAME_EVERY || c == OPT_FRAME_SIZE;
  }
  if (optind < argc)
    return bad(argv[optind], NULL, "unknown option");
  if (!a->frames && frame_opt)
    return bad("--frame-every/--frame-size", NULL, "need --frames DIR");
  if (a->checkpoint_every && !a->checkpoint)
    return bad("--checkpoint-every", NULL, "needs --checkpoint FILE");
  /* Output files are checked now, not after a run that may take minutes:
   * a path that cannot be written is a bad argument like any other. */
  if (a->trace && !writable(a->trace))
    return bad("--trace", a->trace, strerror(errno));
  if (a->json && !writable(a->json))
    return bad("--json", a->json, strerror(errno));
  return 0;
}

/* A progress bar on stderr when it is a terminal; nothing otherwise. */
static void progress(bool tty, uint32_t done, uint32_t total, double t0) {
  if (!tty || total == 0)
    return;
  if (done != total && done % (total / 100 + 1) != 0)
    return;
  int width = 40, filled = (int)((uint64_t)done * width / total);
  fprintf(stderr, "\r  [%.*s%*s] %3u%%  tick %u/%u  %.1f s", filled,
          "########################################", width - filled, "",
          (unsigned)((uint64_t)done * 100 / total), done, total, now_s() - t0);
  if (done == total)
    fputc('\n', stderr);
  fflush(stderr);
}

/*
 * Every counter the report prints. The library's counters are cumulative,
 * so the figures of the timed ticks are a snapshot taken after them minus
 * one taken before them (after the warm-up).
 */
typedef struct sim_stats_t {
  uint32_t nsys;
  weft_system_t ids[SIM_MAX_SYSTEMS];
  weft_phase_t phase_of[SIM_MAX_SYSTEMS];
  weft_system_info_t info[SIM_MAX_SYSTEMS];
  weft_system_stats_t sys[SIM_MAX_SYSTEMS];
  weft_phase_stats_t phase[SIM_NPHASES];
  uint32_t nworkers;
  weft_worker_stats_t *workers; /* nworkers of them */
  weft_pool_stats_t pool;
  uint64_t sync_points, builds;
} sim_stats_t;

typedef struct sim_run_t {
  double spawn_s, run_s;
  uint64_t updates; /* rows handed to system callbacks */
  uint64_t digest;
  uint32_t final_entities;
  const sim_stats_t *stats; /* of the timed ticks */
} sim_run_t;

static int fail(const weft_world_t *w, int rc, const char *what) {
  fprintf(stderr, "weft-sim: %s: %s (%s)\n", what, weft_strerror(rc),
          w ? weft_world_last_error(w) : "");
  return 1;
}

/* Every registered system, in phase order. */
static uint32_t all_systems(weft_world_t *w, weft_system_t *ids, uint32_t cap,
                            weft_phase_t *phase_of) {
  uint32_t n = 0;
  for (weft_phase_t p = 1; p <= WEFT_PHASE_PRE_RENDER; p++) {
    weft_system_t tmp[SIM_MAX_SYSTEMS];
    uint32_t k = weft_phase_systems(w, p, tmp, SIM_MAX_SYSTEMS);
    for (uint32_t i = 0; i < k && i < SIM_MAX_SYSTEMS && n < cap; i++) {
      phase_of[n] = p;
      ids[n++] = tmp[i];
    }
  }
  return n;
}

/* Fills @p s with the counters as they are now; a system whose info or
 * counters cannot be read is left out. Returns 0 or WEFT_ENOMEM. */
static int stats_take(weft_world_t *w, weft_pool_t *pool, sim_stats_t *s) {
  memset(s, 0, sizeof *s);
  /* Listed in place, then compacted over the ones left out. */
  uint32_t n = all_systems(w, s->ids, SIM_MAX_SYSTEMS, s->phase_of);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t k = s->nsys;
    if (weft_system_info(w, s->ids[i], &s->info[k]) ||
        weft_system_stats(w, s->ids[i], &s->sys[k]))
      continue;
    s->ids[k] = s->ids[i];
    s->phase_of[k] = s->phase_of[i];
    s->nsys++;
  }
  for (weft_phase_t p = 1; p < SIM_NPHASES; p++)
    if (weft_phase_stats(w, p, &s->phase[p]))
      memset(&s->phase[p], 0, sizeof s->phase[p]);
  s->nworkers = pool ? weft_pool_workers(pool) : 0;
  if (s->nworkers) {
    s->workers = calloc(s->nworkers, sizeof *s->workers);
    if (!s->workers)
      return WEFT_ENOMEM;
    for (uint32_t k = 0; k < s->nworkers; k++)
      (void)weft_pool_worker_stats(pool, k, &s->workers[k]);
    if (weft_pool_stats(pool, &s->pool))
      memset(&s->pool, 0, sizeof s->pool);
  }
  weft_pipeline_state_t ps;
  weft_pipeline_state(w, &ps);
  s->sync_points = ps.sync_points;
  s->builds = ps.builds;
  return 0;
}

static void stats_free(sim_stats_t *s) {
  free(s->workers);
  s->workers = NULL;
}

/* s -= base, counter by counter (systems matched by id). */
static void stats_sub(sim_stats_t *s, const sim_stats_t *base) {
  for (uint32_t i = 0; i < s->nsys; i++)
    for (uint32_t j = 0; j < base->nsys; j++) {
      if (base->ids[j] != s->ids[i])
        continue;
      weft_system_stats_t *a = &s->sys[i];
      const weft_system_stats_t *b = &base->sys[j];
      a->runs -= b->runs;
      a->skipped -= b->skipped;
      a->entities -= b->entities;
      a->chunks -= b->chunks;
      a->jobs -= b->jobs;
      a->wall_ns -= b->wall_ns;
      a->worker_ns -= b->worker_ns;
      break;
    }
  for (weft_phase_t p = 1; p < SIM_NPHASES; p++) {
    weft_phase_stats_t *a = &s->phase[p];
    const weft_phase_stats_t *b = &base->phase[p];
    a->runs -= b->runs;
    a->wall_ns -= b->wall_ns;
    a->worker_ns -= b->worker_ns;
    a->sync_points -= b->sync_points;
    a->commands -= b->commands;
  }
  for (uint32_t k = 0; k < s->nworkers && k < base->nworkers; k++) {
    weft_worker_stats_t *a = &s->workers[k];
    const weft_worker_stats_t *b = &base->workers[k];
    a->jobs -= b->jobs;
    a->inline_jobs -= b->inline_jobs;
    a->local_steals -= b->local_steals;
    a->remote_steals -= b->remote_steals;
    a->sleeps -= b->sleeps;
    a->busy_ns -= b->busy_ns;
    a->idle_ns -= b->idle_ns;
    a->rescues -= b->rescues;
  }
  s->pool.rescues -= base->pool.rescues;
  s->pool.membind_calls -= base->pool.membind_calls;
  s->pool.membind_failures -= base->pool.membind_failures;
  s->sync_points -= base->sync_points;
  s->builds -= base->builds;
}

/* The phases' names, by weft_phase_t (0 is not a phase). */
static const char *const phase_names[SIM_NPHASES] = {
    "",         "PreUpdate", "FixedUpdate", "PostFixedUpdate", "NetworkTick",
    "PreRender"};

/* Worker @p ws's share of its time spent in jobs, in percent; false for
 * the driving thread when the pool does not time it. */
static bool busy_pct(uint32_t k, const weft_worker_stats_t *ws, double *pct) {
  double all = (double)(ws->busy_ns + ws->idle_ns);
  *pct = all > 0 ? 100.0 * (double)ws->busy_ns / all : 0.0;
  return k > 0 || all > 0;
}

static void report(const sim_args_t *a, weft_pool_t *pool, const sim_run_t *r) {
  const sim_stats_t *s = r->stats;
  printf("weft-sim: %s, %u entities, %d threads, %u ticks",
         sim_kind_name(a->kind), a->entities,
         pool ? (int)weft_pool_workers(pool) : 0, a->ticks);
  if (a->warmup)
    printf(" (after %u untimed)", a->warmup);
  printf(", seed %" PRIu64 "\n", a->seed);
  printf("  spawn %.3f s, run %.3f s (%.3f ms/tick), %u entities at the end\n",
         r->spawn_s, r->run_s, a->ticks ? r->run_s * 1e3 / a->ticks : 0.0,
         r->final_entities);
  printf("  %.1f M entity-updates/s\n",
         r->run_s > 0 ? (double)r->updates / r->run_s / 1e6 : 0.0);
  printf("\n  %-16s %6s %12s %12s %9s\n", "phase", "runs", "wall ms",
         "worker ms", "syncs");
  for (weft_phase_t p = 1; p < SIM_NPHASES; p++) {
    const weft_phase_stats_t *ps = &s->phase[p];
    if (ps->runs)
      printf("  %-16s %6" PRIu64 " %12.2f %12.2f %9" PRIu64 "\n",
             phase_names[p], ps->runs, ps->wall_ns / 1e6, ps->worker_ns / 1e6,
             ps->sync_points);
  }
  printf("\n  %-20s %6s %12s %10s %10s %8s %10s\n", "system", "runs",
         "entities", "wall ms", "worker ms", "jobs", "ns/entity");
  for (uint32_t i = 0; i < s->nsys; i++) {
    const weft_system_stats_t *st = &s->sys[i];
    printf("  %-20s %6" PRIu64 " %12" PRIu64 " %10.2f %10.2f %8" PRIu64
           " %10.2f\n",
           s->info[i].name, st->runs, st->entities, st->wall_ns / 1e6,
           st->worker_ns / 1e6, st->jobs,
           st->entities ? (double)st->worker_ns / (double)st->entities : 0.0);
  }
  if (s->nworkers) {
    /* Steals: jobs a worker took from another's deque, on its own NUMA
     * node or (remote) another one. */
    printf("\n  %-8s %10s %10s %8s %8s %8s\n", "worker", "jobs", "busy %",
           "steals", "remote", "sleeps");
    for (uint32_t k = 0; k < s->nworkers; k++) {
      const weft_worker_stats_t *ws = &s->workers[k];
      /* Worker 0 is this thread (it takes part): the pool does not time
       * it, so its share is the frame time the others did not fill. */
      double pct;
      char busy[16] = "driver";
      if (busy_pct(k, ws, &pct))
        snprintf(busy, sizeof busy, "%.1f", pct);
      printf("  %-8u %10" PRIu64 " %10s %8" PRIu64 " %8" PRIu64 " %8" PRIu64
             "\n",
             k, ws->jobs, busy, ws->local_steals + ws->remote_steals,
             ws->remote_steals, ws->sleeps);
    }
    printf("  (steals: jobs taken from other workers' deques; remote: of "
           "those, from another NUMA node)\n");
    /* More workers than CPUs: only one per CPU is kept awake. */
    if (s->pool.cpus && s->pool.cpus < s->nworkers)
      printf("  %u workers on %u CPUs: at most %u awake at once, %" PRIu64
             " rescues\n",
             s->nworkers, s->pool.cpus, s->pool.cpus, s->pool.rescues);
  }
  printf("\n  sync points %" PRIu64 ", schedule builds %" PRIu64 "\n",
         s->sync_points, s->builds);
  printf("  digest %016" PRIx64 "\n", r->digest);
}

/* The version of the --json report's schema (docs/weft-sim-json.md):
 * raised whenever a field changes meaning or goes away. */
#define SIM_JSON_VERSION 1

static void json_args(weft__json_t *j, const sim_args_t *a) {
  weft__json_key(j, "args");
  weft__json_object(j);
  weft__json_kstr(j, "scenario", sim_kind_name(a->kind));
  weft__json_ku64(j, "entities", a->entities);
  weft__json_key(j, "threads"); /* null: one worker per core */
  if (a->threads < 0)
    weft__json_null(j);
  else
    weft__json_i64(j, a->threads);
  weft__json_ku64(j, "ticks", a->ticks);
  weft__json_ku64(j, "warmup", a->warmup);
  weft__json_ku64(j, "seed", a->seed);
  weft__json_kstr(j, "trace", a->trace);
  weft__json_kstr(j, "json", a->json);
  weft__json_end(j);
}

static void json_run(weft__json_t *j, const sim_args_t *a, weft_pool_t *pool,
                     const sim_run_t *r) {
  weft__json_key(j, "run");
  weft__json_object(j);
  weft__json_ku64(j, "threads", pool ? weft_pool_workers(pool) : 0);
  weft__json_kdouble(j, "spawn_s", r->spawn_s);
  weft__json_kdouble(j, "run_s", r->run_s);
  weft__json_kdouble(j, "ms_per_tick",
                     a->ticks ? r->run_s * 1e3 / a->ticks : 0.0);
  weft__json_ku64(j, "updates", r->updates);
  weft__json_kdouble(j, "updates_per_s",
                     r->run_s > 0 ? (double)r->updates / r->run_s : 0.0);
  weft__json_ku64(j, "final_entities", r->final_entities);
  weft__json_end(j);
}

static void json_phases(weft__json_t *j, const sim_stats_t *s) {
  weft__json_key(j, "phases");
  weft__json_array(j);
  for (weft_phase_t p = 1; p < SIM_NPHASES; p++) {
    const weft_phase_stats_t *ps = &s->phase[p];
    weft__json_object(j);
    weft__json_kstr(j, "name", phase_names[p]);
    weft__json_ku64(j, "id", p);
    weft__json_ku64(j, "runs", ps->runs);
    weft__json_ku64(j, "wall_ns", ps->wall_ns);
    weft__json_ku64(j, "worker_ns", ps->worker_ns);
    weft__json_ku64(j, "sync_points", ps->sync_points);
    weft__json_ku64(j, "commands", ps->commands);
    weft__json_end(j);
  }
  weft__json_end(j);
}

static void json_systems(weft__json_t *j, const sim_stats_t *s) {
  weft__json_key(j, "systems");
  weft__json_array(j);
  for (uint32_t i = 0; i < s->nsys; i++) {
    const weft_system_stats_t *st = &s->sys[i];
    weft__json_object(j);
    weft__json_kstr(j, "name", s->info[i].name);
    weft__json_kstr(j, "phase", phase_names[s->phase_of[i]]);
    weft__json_ku64(j, "runs", st->runs);
    weft__json_ku64(j, "skipped", st->skipped);
    weft__json_ku64(j, "entities", st->entities);
    weft__json_ku64(j, "chunks", st->chunks);
    weft__json_ku64(j, "jobs", st->jobs);
    weft__json_ku64(j, "wall_ns", st->wall_ns);
    weft__json_ku64(j, "worker_ns", st->worker_ns);
    weft__json_kdouble(
        j, "ns_per_entity",
        st->entities ? (double)st->worker_ns / (double)st->entities : 0.0);
    weft__json_end(j);
  }
  weft__json_end(j);
}

static void json_workers(weft__json_t *j, const sim_stats_t *s) {
  weft__json_key(j, "workers");
  weft__json_array(j);
  for (uint32_t k = 0; k < s->nworkers; k++) {
    const weft_worker_stats_t *ws = &s->workers[k];
    double pct;
    bool timed = busy_pct(k, ws, &pct);
    weft__json_object(j);
    weft__json_ku64(j, "index", k);
    weft__json_ku64(j, "jobs", ws->jobs);
    weft__json_ku64(j, "inline_jobs", ws->inline_jobs);
    weft__json_key(j, "busy_pct"); /* null: the untimed driving thread */
    if (timed)
      weft__json_double(j, pct);
    else
      weft__json_null(j);
    weft__json_ku64(j, "busy_ns", ws->busy_ns);
    weft__json_ku64(j, "idle_ns", ws->idle_ns);
    weft__json_ku64(j, "steals", ws->local_steals + ws->remote_steals);
    weft__json_ku64(j, "remote_steals", ws->remote_steals);
    weft__json_ku64(j, "sleeps", ws->sleeps);
    weft__json_ku64(j, "rescues", ws->rescues);
    weft__json_end(j);
  }
  weft__json_end(j);
  weft__json_key(j, "pool"); /* null without a pool */
  if (!s->nworkers) {
    weft__json_null(j);
    return;
  }
  weft__json_object(j);
  weft__json_ku64(j, "workers", s->nworkers);
  weft__json_key(j, "awake_limit"); /* null: no limit (foreign topology) */
  if (s->pool.cpus)
    weft__json_u64(j, s->pool.cpus);
  else
    weft__json_null(j);
  weft__json_kbool(j, "oversubscribed",
                   s->pool.cpus && s->pool.cpus < s->nworkers);
  weft__json_ku64(j, "crews", s->pool.crews);
  weft__json_ku64(j, "rescues", s->pool.rescues);
  weft__json_ku64(j, "membind_calls", s->pool.membind_calls);
  weft__json_ku64(j, "membind_failures", s->pool.membind_failures);
  weft__json_end(j);
}

/* Writes the report as JSON (the schema is docs/weft-sim-json.md). */
static int write_json(const sim_args_t *a, weft_pool_t *pool,
                      const sim_run_t *r) {
  FILE *f = fopen(a->json, "w");
  if (!f) {
    fprintf(stderr, "weft-sim: cannot write %s: %s\n", a->json,
            strerror(errno));
    return 1;
  }
  const sim_stats_t *s = r->stats;
  weft__json_t j;
  weft__json_init(&j, f, 2);
  weft__json_object(&j);
  weft__json_kstr(&j, "format", "weft-sim");
  weft__json_ku64(&j, "version", SIM_JSON_VERSION);
  char version[32];
  snprintf(version, sizeof version, "%d.%d.%d", WEFT_VERSION_MAJOR,
           WEFT_VERSION_MINOR, WEFT_VERSION_PATCH);
  weft__json_kstr(&j, "weft_version", version);
  json_args(&j, a);
  json_run(&j, a, pool, r);
  json_phases(&j, s);
  json_systems(&j, s);
  json_workers(&j, s);
  weft__json_ku64(&j, "sync_points", s->sync_points);
  weft__json_ku64(&j, "schedule_builds", s->builds);
  char digest[24];
  snprintf(digest, sizeof digest, "%016" PRIx64, r->digest);
  weft__json_kstr(&j, "digest", digest);
  weft__json_end(&j);
  bool ok = weft__json_finish(&j) == 0;
  ok &= fclose(f) == 0;
  if (!ok)
    fprintf(stderr, "weft-sim: cannot write %s\n", a->json);
  return ok ? 0 : 1;
}

/* The pictures of a run (--frames); frames NULL for none. */
typedef struct sim_pics_t {
  sim_frames_t *frames;
  const sim_scene_t *scene;
  uint32_t every;
  double seconds; /* spent drawing: left out of the figures */
} sim_pics_t;

/* Writes the picture of tick @p tick when it is one to draw. */
static int picture(sim_pics_t *p, uint64_t tick) {
  if (!p->frames || tick % p->every)
    return 0;
  double t = now_s();
  int rc = sim_frames_write(p->frames, p->scene, tick);
  p->seconds += now_s() - t;
  if (rc)
    fprintf(stderr, "weft-sim: cannot write frame %" PRIu64 ": %s\n", tick,
            rc == WEFT_EIO ? p->frames->why : weft_strerror(rc));
  return rc;
}

/* Writes the checkpoint (--checkpoint) atomically; 0 or an error. */
static int checkpoint(const sim_args_t *a, weft_world_t *w) {
  weft_snapshot_error_t err;
  int rc = weft_snapshot_save_file(w, a->checkpoint, &err);
  if (rc)
    fprintf(stderr, "weft-sim: cannot write checkpoint %s: %s\n", a->checkpoint,
            err.message);
  return rc;
}

/* Writes the checkpoint after a fixed tick that --checkpoint-every names. */
static int checkpoint_due(const sim_args_t *a, weft_world_t *w) {
  if (!a->checkpoint_every)
    return 0;
  weft_pipeline_state_t st;
  weft_pipeline_state(w, &st);
  return st.tick % a->checkpoint_every ? 0 : checkpoint(a, w);
}

/* Runs @p ticks ticks; the bar counts them from @p done0 of @p total. */
static int run_ticks(const sim_args_t *a, weft_world_t *w, uint32_t ticks,
                     bool tty, uint32_t done0, uint32_t total, double t0,
                     sim_pics_t *pics) {
  int rc = 0;
  for (uint32_t k = 0; k < ticks && !rc; k++) {
    rc = weft_world_progress(w, SIM_DT);
    if (!rc)
      rc = picture(pics, (uint64_t)done0 + k + 1);
    if (!rc)
      rc = checkpoint_due(a, w);
    progress(tty, done0 + k + 1, total, t0);
  }
  return rc;
}

/* Runs the scenario's ticks and reports them; the scene is built. */
static int run_scene(const sim_args_t *a, weft_world_t *w, weft_pool_t *pool,
                     sim_pics_t *pics, sim_run_t *r) {
  bool tty = isatty(STDERR_FILENO);
  uint32_t total = a->warmup + a->ticks;
  double t0 = now_s();
  int rc = picture(pics, 0);
  if (!rc)
    rc = run_ticks(a, w, a->warmup, tty, 0, total, t0, pics);
  if (rc)
    return fail(w, rc, "warming up");
  /* st[0]: the counters before the timed ticks; st[1]: after them. */
  sim_stats_t *st = calloc(2, sizeof *st);
  int out = 0;
  if (!st || stats_take(w, pool, &st[0]))
    out = fail(w, WEFT_ENOMEM, "taking the counters");
  else if (a->trace && (rc = weft_trace_start(w, 1u << 16)) != 0)
    out = fail(w, rc, "starting the trace");
  if (!out) {
    double t1 = now_s(), drawn = pics->seconds;
    rc = run_ticks(a, w, a->ticks, tty, a->warmup, total, t0, pics);
    r->run_s = now_s() - t1 - (pics->seconds - drawn);
    if (rc)
      out = fail(w, rc, "running");
    else if (stats_take(w, pool, &st[1]))
      out = fail(w, WEFT_ENOMEM, "taking the counters");
  }
  if (!out) {
    sim_stats_t *now = &st[1];
    stats_sub(now, &st[0]);
    for (uint32_t i = 0; i < now->nsys; i++)
      r->updates += now->sys[i].entities;
    r->stats = now;
    r->digest = weft_world_digest_ex(w, WEFT_DIGEST_ALL);
    r->final_entities = weft_world_count(w);
    report(a, pool, r);
    if (pics->frames)
      printf("  frames: %u written to %s (%.2f s drawing, left out of the "
             "figures)\n",
             pics->frames->written, pics->frames->dir, pics->seconds);
    if (a->checkpoint && checkpoint(a, w))
      out = 1;
    if (a->trace && (rc = weft_trace_write(w, a->trace)) != 0)
      out = fail(w, rc, "writing the trace");
    if (a->json && write_json(a, pool, r))
      out = 1;
  }
  if (st) {
    stats_free(&st[0]);
    stats_free(&st[1]);
  }
  free(st);
  return out;
}

/* The run's identity in its checkpoints: a restore must build the same
 * scenario (its systems and resources depend on these). */
typedef struct sim_ident_t {
  uint32_t kind;
  uint32_t entities;
  uint64_t seed;
} sim_ident_t;

static int ident_save(weft_world_t *w, void *user, weft_snapshot_out_t *out) {
  (void)w;
  const sim_args_t *a = user;
  sim_ident_t id = {(uint32_t)a->kind, a->entities, a->seed};
  return weft_snapshot_put(out, &id, sizeof id);
}

static int ident_check(const weft_world_t *w, void *user, const void *data,
                       size_t n) {
  (void)w;
  const sim_args_t *a = user;
  sim_ident_t id = {(uint32_t)a->kind, a->entities, a->seed}, got;
  if (n != sizeof got)
    return WEFT_EFORMAT;
  memcpy(&got, data, sizeof got);
  return memcmp(&id, &got, sizeof got) ? WEFT_EINVAL : 0;
}

static int ident_load(weft_world_t *w, void *user, const void *data, size_t n) {
  (void)w;
  (void)user;
  (void)data;
  (void)n;
  return 0;
}

/* Registers the identity section; loads --restore over the built scene. */
static int restore(const sim_args_t *a, weft_world_t *w) {
  weft_snapshot_section_desc_t d = {.name = "weft-sim.run",
                                    .save = ident_save,
                                    .check = ident_check,
                                    .load = ident_load,
                                    .user = (void *)a};
  int rc = weft_snapshot_section_register(w, &d);
  if (rc || !a->restore)
    return rc ? fail(w, rc, "registering the checkpoint section") : 0;
  weft_snapshot_error_t err;
  rc = weft_snapshot_load_file(w, a->restore, &err);
  if (rc) {
    fprintf(stderr,
            "weft-sim: cannot restore %s: %s (section %s, byte %llu)%s\n",
            a->restore, err.message, err.section[0] ? err.section : "-",
            (unsigned long long)err.offset,
            rc == WEFT_EINVAL ? "; restore with the --scenario, --entities "
                                "and --seed of the run that wrote it"
                              : "");
    return 1;
  }
  weft_pipeline_state_t st;
  weft_pipeline_state(w, &st);
  printf("weft-sim: restored %s at tick %llu (%u entities)\n", a->restore,
         (unsigned long long)st.tick, weft_world_count(w));
  return 0;
}

static int simulate(const sim_args_t *a, weft_world_t *w, weft_pool_t *pool,
                    sim_frames_t *frames) {
  weft_pipeline_config_t pc = {.fixed_dt = SIM_DT, .time_inline = true};
  int rc = weft_pipeline_configure(w, &pc);
  if (rc)
    return fail(w, rc, "configure");
  sim_scene_t scene;
  double t0 = now_s();
  rc = sim_scene_build(&scene, w, a->kind, a->entities, a->seed);
  int out = rc ? fail(w, rc, "building the scenario") : 0;
  if (!out)
    out = restore(a, w);
  sim_run_t r = {.spawn_s = now_s() - t0};
  sim_pics_t pics = {frames, &scene, a->frame_every, 0.0};
  if (!out && a->serve.on)
    out = sim_serve_run(&a->serve, &scene, SIM_DT);
  else if (!out)
    out = run_scene(a, w, pool, &pics, &r);
  sim_scene_free(&scene);
  return out;
}

int main(int argc, char **argv) {
  sim_args_t a;
  int rc = parse_args(argc, argv, &a);
  if (rc)
    return rc;
  if (a.mpi && a.serve.on)
    return bad("--serve", NULL, "a distributed run (--mpi) cannot serve");
#ifdef WEFT_SIM_MPI
  if (a.balance && !a.mpi && !sim_mpi_launched())
    return bad("--balance", NULL, "only a distributed run (--mpi) balances");
  if (a.checkpoint_every && (a.mpi || sim_mpi_launched()))
    return bad("--checkpoint-every", NULL,
               "a distributed run checkpoints once, after its ticks");
  if (a.mpi || sim_mpi_launched())
    return sim_mpi_run(&(sim_mpi_args_t){a.kind, a.entities, a.threads, a.ticks,
                                         a.warmup, a.seed, SIM_DT, 0, NULL,
                                         NULL, a.checkpoint, a.restore,
                                         a.balance},
                       &argc, &argv);
#else
  if (a.mpi || a.balance)
    return bad(a.mpi ? "--mpi" : "--balance", NULL,
               "this weft-sim was built without MPI");
#endif
  /* The frames' folder is made and checked before anything runs. */
  sim_frames_t frames_store, *frames = NULL;
  if (a.frames) {
    rc = sim_frames_init(&frames_store, a.frames, a.frame_size);
    if (rc)
      return bad("--frames", a.frames,
                 rc == WEFT_EIO ? strerror(errno) : weft_strerror(rc));
    frames = &frames_store;
  }
  weft_pool_t *pool = NULL;
  if (a.threads != 0) {
    weft_pool_config_t pc = {0};
    pc.placement.workers = a.threads > 0 ? (uint32_t)a.threads : 0;
    pc.placement.caller_participates = true;
    /* This thread drives every frame as worker 0: bound to its own core,
     * it never shares one with a bound worker. */
    pc.placement.bind_caller = true;
    rc = weft_pool_create(&pc, &pool);
    if (rc) {
      fprintf(stderr, "weft-sim: cannot start %d workers: %s\n", a.threads,
              weft_strerror(rc));
      if (frames)
        sim_frames_free(frames);
      return 1;
    }
  }
  weft_world_t *w = NULL;
  weft_world_config_t wc = {.pool = pool};
  rc = weft_world_create(&wc, &w);
  if (rc) {
    fprintf(stderr, "weft-sim: cannot create the world: %s\n",
            weft_strerror(rc));
    weft_pool_destroy(pool);
    if (frames)
      sim_frames_free(frames);
    return 1;
  }
  rc = simulate(&a, w, pool, frames);
  weft_world_destroy(w);
  weft_pool_destroy(pool);
  if (frames)
    sim_frames_free(frames);
  return rc;
}
