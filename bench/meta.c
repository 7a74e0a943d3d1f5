/* SPDX-License-Identifier: MIT */
/*
 * Run metadata for weft-bench's JSON: what a reader needs to know before
 * comparing two reports' figures. The commit and build come from headers
 * the build generates (bench_commit.h at build time, bench_build.h at
 * configure time); the machine from /proc/cpuinfo and weft's topology; the
 * run's settings from the context.
 */
#define _POSIX_C_SOURCE 200809L
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <weft.h>

#include "bench_build.h"
#include "bench_commit.h"
#include "core/json.h"
#include "harness.h"

/* The CPU's model from /proc/cpuinfo ("model name" on x86, "Model" or
 * "Hardware" elsewhere) into @p buf; "unknown" when there is none. */
static void cpu_model(char *buf, size_t size) {
  snprintf(buf, size, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f)
    return;
  static const char *const keys[] = {"model name", "Model", "Hardware"};
  char line[512];
  int best = 3; /* the rank of the key found so far */
  while (fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':');
    if (!colon)
      continue;
    for (int k = 0; k < best; k++) {
      size_t n = strlen(keys[k]);
      if (strncmp(line, keys[k], n) != 0 ||
          strspn(line + n, " \t") != (size_t)(colon - line - (ptrdiff_t)n))
        continue;
      char *v = colon + 1 + strspn(colon + 1, " \t");
      v[strcspn(v, "\n")] = 0;
      if (*v) {
        snprintf(buf, size, "%s", v);
        best = k;
      }
      break;
    }
  }
  fclose(f);
}

/* The machine: CPU model, online and usable CPUs, physical cores. */
static void write_machine(weft__json_t *j) {
  char model[256];
  cpu_model(model, sizeof model);
  weft__json_kstr(j, "cpu_model", model);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  weft__json_ki64(j, "cpus_online", online > 0 ? online : 0);
  cpu_set_t set;
  CPU_ZERO(&set);
  weft__json_key(j, "cpus_allowed"); /* the process's CPU mask */
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    weft__json_i64(j, CPU_COUNT(&set));
  else
    weft__json_null(j);
  weft_topology_t *topo = NULL;
  weft__json_key(j, "cores"); /* physical cores in that mask */
  if (weft_topology_load(NULL, NULL, &topo) == 0) {
    weft_topology_info_t info;
    weft_topology_info(topo, &info);
    weft__json_u64(j, info.cores);
    weft_topology_destroy(topo);
  } else {
    weft__json_null(j);
  }
}

void bench_write_meta(weft__json_t *j, const bench_ctx_t *ctx) {
  weft__json_key(j, "meta");
  weft__json_object(j);
  weft__json_kstr(j, "commit", BENCH_COMMIT);
  char version[32];
  snprintf(version, sizeof version, "%d.%d.%d", WEFT_VERSION_MAJOR,
           WEFT_VERSION_MINOR, WEFT_VERSION_PATCH);
  weft__json_kstr(j, "weft_version", version);
  weft__json_kstr(j, "compiler", BENCH_COMPILER);
  weft__json_kstr(j, "flags", BENCH_FLAGS);
  weft__json_kstr(j, "build_type", BENCH_BUILD_TYPE);
  write_machine(j);
  weft__json_kbool(j, "quick", ctx->quick);
  weft__json_ku64(j, "rounds", ctx->rounds);
  weft__json_ku64(j, "passes", ctx->passes);
  /* The baselines' OpenMP threads spin or sleep by this; null: unset. */
  weft__json_kstr(j, "omp_wait_policy", getenv("OMP_WAIT_POLICY"));
  weft__json_kstr(j, "omp_num_threads", getenv("OMP_NUM_THREADS"));
  char when[32] = "";
  time_t now = time(NULL);
  struct tm tm;
  if (gmtime_r(&now, &tm))
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  weft__json_kstr(j, "written_utc", when);
  weft__json_end(j);
}
