/*
 * weft-sim: the main demo. Runs one of the built-in scenarios (arena,
 * boids, particles; see sim_scenarios.c) on a pool of workers for a number
 * of fixed ticks, then prints a per-phase and per-system timing table,
 * entity updates per second, worker utilisation and steals, sync points and
 * the final world digest — the same digest for any --threads.
 *
 *   weft-sim [--scenario arena|boids|particles] [--entities N] [--threads T]
 *            [--ticks K] [--seed S] [--trace FILE.json] [--json FILE]
 *
 * Bad arguments (an unknown option, a value out of range, an output file
 * that cannot be written) print a message and exit with status 2 before
 * anything runs.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <weft.h>

#include "sim_scenarios.h"

#define SIM_DT (1.0 / 60.0)

typedef struct sim_args_t {
  sim_kind_t kind;
  uint32_t entities;
  int32_t threads; /* -1: one worker per core; 0: no pool */
  uint32_t ticks;
  uint64_t seed;
  const char *trace;
  const char *json;
} sim_args_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: weft-sim [--scenario arena|boids|particles] [--entities N]\n"
          "                [--threads T] [--ticks K] [--seed S]\n"
          "                [--trace FILE.json] [--json FILE]\n"
          "  --scenario S   arena (default): units, turrets, projectiles,\n"
          "                 collisions and damage; boids: flocking over a\n"
          "                 grid; particles: gravity and bouncing walls\n"
          "  --entities N   initial entities (default 100000)\n"
          "  --threads T    workers, the calling thread included (default:\n"
          "                 one per core; 0: no pool, everything inline)\n"
          "  --ticks K      fixed ticks of 1/60 s to run (default 200)\n"
          "  --seed S       initial-state seed (default 1)\n"
          "  --trace FILE   write a Chrome trace of the run (Perfetto)\n"
          "  --json FILE    write the results as JSON\n");
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

static bool known(const char *opt) {
  static const char *const opts[] = {"--scenario", "--entities", "--threads",
                                     "--ticks",    "--seed",     "--trace",
                                     "--json"};
  for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
    if (!strcmp(opt, opts[i]))
      return true;
  return false;
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

static int parse_args(int argc, char **argv, sim_args_t *a) {
  *a = (sim_args_t){SIM_ARENA, 100000, -1, 200, 1, NULL, NULL};
  for (int i = 1; i < argc; i++) {
    const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    uint64_t v;
    if (!strcmp(opt, "-h") || !strcmp(opt, "--help")) {
      usage(stdout);
      exit(0);
    }
    if (!known(opt))
      return bad(opt, NULL, "unknown option");
    if (!val)
      return bad(opt, NULL, "needs a value");
    if (!strcmp(opt, "--scenario")) {
      if (!sim_kind_parse(val, &a->kind))
        return bad(opt, val, "unknown scenario");
    } else if (!strcmp(opt, "--entities")) {
      if (!parse_u64(val, 1, 50000000, &v))
        return bad(opt, val, "expected 1..50000000");
      a->entities = (uint32_t)v;
    } else if (!strcmp(opt, "--threads")) {
      if (!parse_u64(val, 0, 1024, &v))
        return bad(opt, val, "expected 0..1024");
      a->threads = (int32_t)v;
    } else if (!strcmp(opt, "--ticks")) {
      if (!parse_u64(val, 0, 10000000, &v))
        return bad(opt, val, "expected 0..10000000");
      a->ticks = (uint32_t)v;
    } else if (!strcmp(opt, "--seed")) {
      if (!parse_u64(val, 0, UINT64_MAX, &v))
        return bad(opt, val, "expected an unsigned 64-bit integer");
      a->seed = v;
    } else if (!strcmp(opt, "--trace")) {
      a->trace = val;
    } else {
      a->json = val; /* known() left only --json */
    }
    i++;
  }
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

typedef struct sim_run_t {
  double spawn_s, run_s;
  uint64_t updates; /* rows handed to system callbacks */
  uint64_t digest;
  uint32_t final_entities;
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
    weft_system_t tmp[256];
    uint32_t k = weft_phase_systems(w, p, tmp, 256);
    for (uint32_t i = 0; i < k && i < 256 && n < cap; i++) {
      phase_of[n] = p;
      ids[n++] = tmp[i];
    }
  }
  return n;
}

static void report(const sim_args_t *a, weft_world_t *w, weft_pool_t *pool,
                   const sim_run_t *r) {
  static const char *const phase_names[] = {
      "",         "PreUpdate", "FixedUpdate", "PostFixedUpdate", "NetworkTick",
      "PreRender"};
  printf("weft-sim: %s, %u entities, %d threads, %u ticks, seed %" PRIu64 "\n",
         sim_kind_name(a->kind), a->entities,
         pool ? (int)weft_pool_workers(pool) : 0, a->ticks, a->seed);
  printf("  spawn %.3f s, run %.3f s (%.3f ms/tick), %u entities at the end\n",
         r->spawn_s, r->run_s, a->ticks ? r->run_s * 1e3 / a->ticks : 0.0,
         r->final_entities);
  printf("  %.1f M entity-updates/s\n",
         r->run_s > 0 ? (double)r->updates / r->run_s / 1e6 : 0.0);
  printf("\n  %-16s %6s %12s %12s %9s\n", "phase", "runs", "wall ms",
         "worker ms", "syncs");
  for (weft_phase_t p = 1; p <= WEFT_PHASE_PRE_RENDER; p++) {
    weft_phase_stats_t ps;
    if (weft_phase_stats(w, p, &ps) == 0 && ps.runs)
      printf("  %-16s %6" PRIu64 " %12.2f %12.2f %9" PRIu64 "\n",
             phase_names[p], ps.runs, ps.wall_ns / 1e6, ps.worker_ns / 1e6,
             ps.sync_points);
  }
  weft_system_t ids[256];
  weft_phase_t ph[256];
  uint32_t n = all_systems(w, ids, 256, ph);
  printf("\n  %-20s %6s %12s %10s %10s %8s %10s\n", "system", "runs",
         "entities", "wall ms", "worker ms", "jobs", "ns/entity");
  for (uint32_t i = 0; i < n; i++) {
    weft_system_info_t in;
    weft_system_stats_t st;
    if (weft_system_info(w, ids[i], &in) || weft_system_stats(w, ids[i], &st))
      continue;
    printf("  %-20s %6" PRIu64 " %12" PRIu64 " %10.2f %10.2f %8" PRIu64
           " %10.2f\n",
           in.name, st.runs, st.entities, st.wall_ns / 1e6, st.worker_ns / 1e6,
           st.jobs,
           st.entities ? (double)st.worker_ns / (double)st.entities : 0.0);
  }
  if (pool) {
    /* Steals: jobs a worker took from another's deque, on its own NUMA
     * node or (remote) another one. */
    printf("\n  %-8s %10s %10s %8s %8s %8s\n", "worker", "jobs", "busy %",
           "steals", "remote", "sleeps");
    for (uint32_t k = 0; k < weft_pool_workers(pool); k++) {
      weft_worker_stats_t ws;
      if (weft_pool_worker_stats(pool, k, &ws))
        continue;
      /* Worker 0 is this thread (it takes part): the pool does not time
       * it, so its share is the frame time the others did not fill. */
      double all = (double)(ws.busy_ns + ws.idle_ns);
      char busy[16] = "driver";
      if (k > 0 || all > 0)
        snprintf(busy, sizeof busy, "%.1f",
                 all > 0 ? 100.0 * ws.busy_ns / all : 0.0);
      printf("  %-8u %10" PRIu64 " %10s %8" PRIu64 " %8" PRIu64 " %8" PRIu64
             "\n",
             k, ws.jobs, busy, ws.local_steals + ws.remote_steals,
             ws.remote_steals, ws.sleeps);
    }
    printf("  (steals: jobs taken from other workers' deques; remote: of "
           "those, from another NUMA node)\n");
  }
  weft_pipeline_state_t ps;
  weft_pipeline_state(w, &ps);
  printf("\n  sync points %" PRIu64 ", schedule builds %" PRIu64 "\n",
         ps.sync_points, ps.builds);
  printf("  digest %016" PRIx64 "\n", r->digest);
}

static int write_json(const sim_args_t *a, weft_world_t *w, weft_pool_t *pool,
                      const sim_run_t *r) {
  FILE *f = fopen(a->json, "w");
  if (!f) {
    fprintf(stderr, "weft-sim: cannot write %s: %s\n", a->json,
            strerror(errno));
    return 1;
  }
  fprintf(f,
          "{\"scenario\":\"%s\",\"entities\":%u,\"threads\":%d,"
          "\"ticks\":%u,\"seed\":%" PRIu64 ",\"spawn_s\":%.6f,"
          "\"run_s\":%.6f,\"updates\":%" PRIu64 ",\"updates_per_s\":%.1f,"
          "\"final_entities\":%u,\"digest\":\"%016" PRIx64 "\",\"systems\":[",
          sim_kind_name(a->kind), a->entities,
          pool ? (int)weft_pool_workers(pool) : 0, a->ticks, a->seed,
          r->spawn_s, r->run_s, r->updates,
          r->run_s > 0 ? (double)r->updates / r->run_s : 0.0, r->final_entities,
          r->digest);
  weft_system_t ids[256];
  weft_phase_t ph[256];
  uint32_t n = all_systems(w, ids, 256, ph);
  for (uint32_t i = 0; i < n; i++) {
    weft_system_info_t in;
    weft_system_stats_t st;
    if (weft_system_info(w, ids[i], &in) || weft_system_stats(w, ids[i], &st))
      continue;
    fprintf(f,
            "%s{\"name\":\"%s\",\"phase\":%u,\"runs\":%" PRIu64
            ",\"entities\":%" PRIu64 ",\"wall_ns\":%" PRIu64
            ",\"worker_ns\":%" PRIu64 ",\"jobs\":%" PRIu64 "}",
            i ? "," : "", in.name, ph[i], st.runs, st.entities, st.wall_ns,
            st.worker_ns, st.jobs);
  }
  weft_pipeline_state_t ps;
  weft_pipeline_state(w, &ps);
  fprintf(f, "],\"sync_points\":%" PRIu64 "}\n", ps.sync_points);
  bool ok = !ferror(f);
  ok &= fclose(f) == 0;
  if (!ok)
    fprintf(stderr, "weft-sim: cannot write %s\n", a->json);
  return ok ? 0 : 1;
}

static int simulate(const sim_args_t *a, weft_world_t *w, weft_pool_t *pool) {
  weft_pipeline_config_t pc = {.fixed_dt = SIM_DT, .time_inline = true};
  int rc = weft_pipeline_configure(w, &pc);
  if (rc)
    return fail(w, rc, "configure");
  sim_scene_t scene;
  double t0 = now_s();
  rc = sim_scene_build(&scene, w, a->kind, a->entities, a->seed);
  if (rc) {
    sim_scene_free(&scene);
    return fail(w, rc, "building the scenario");
  }
  sim_run_t r = {.spawn_s = now_s() - t0};
  if (a->trace && (rc = weft_trace_start(w, 1u << 16)) != 0) {
    sim_scene_free(&scene);
    return fail(w, rc, "starting the trace");
  }
  bool tty = isatty(STDERR_FILENO);
  double t1 = now_s();
  for (uint32_t k = 0; k < a->ticks && !rc; k++) {
    rc = weft_world_progress(w, SIM_DT);
    progress(tty, k + 1, a->ticks, t1);
  }
  r.run_s = now_s() - t1;
  if (rc) {
    sim_scene_free(&scene);
    return fail(w, rc, "running");
  }
  weft_system_t ids[256];
  weft_phase_t ph[256];
  uint32_t n = all_systems(w, ids, 256, ph);
  for (uint32_t i = 0; i < n; i++) {
    weft_system_stats_t st;
    if (weft_system_stats(w, ids[i], &st) == 0)
      r.updates += st.entities;
  }
  r.digest = weft_world_digest(w);
  r.final_entities = weft_world_count(w);
  report(a, w, pool, &r);
  int out = 0;
  if (a->trace && (rc = weft_trace_write(w, a->trace)) != 0)
    out = fail(w, rc, "writing the trace");
  if (a->json && write_json(a, w, pool, &r))
    out = 1;
  sim_scene_free(&scene);
  return out;
}

int main(int argc, char **argv) {
  sim_args_t a;
  int rc = parse_args(argc, argv, &a);
  if (rc)
    return rc;
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
    return 1;
  }
  rc = simulate(&a, w, pool);
  weft_world_destroy(w);
  weft_pool_destroy(pool);
  return rc;
}
