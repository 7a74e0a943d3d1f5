/* SPDX-License-Identifier: MIT */
/*
 * weft-bench: weft's workloads against plain-C baselines.
 *
 *   weft-bench [--quick] [--rounds N] [--passes P] [--filter REGEX]
 *              [--json FILE] [--svg FILE] [--list]
 *
 * Progress goes to stderr, the result table to stdout. Exit status: 0 when
 * every selected workload ran (missed targets are printed, not fatal), 1 on
 * a runtime failure, 2 on bad arguments.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_systems.h"
#include "harness.h"

typedef struct bench_scenario_t {
  const char *name;
  void (*run)(bench_ctx_t *ctx);
} bench_scenario_t;

/* bench_net.c, bench_net_load.c: weft::net's rows, where weft::net is
 * built. */
#ifdef WEFT_BENCH_NET
void bench_net(bench_ctx_t *ctx);
void bench_net_load(bench_ctx_t *ctx);
#endif

/* Every scenario, in the order they run. */
static const bench_scenario_t bench_registry[] = {
    {"simple_insert", bench_simple_insert},
    {"simple_iter", bench_simple_iter},
    {"frag_iter", bench_frag_iter},
    {"query", bench_query},
    {"add_remove", bench_add_remove},
    {"require", bench_require},
    {"stalls", bench_stalls},
    {"create_destroy", bench_create_destroy},
    {"commands", bench_commands},
    {"get", bench_get},
    {"dirty", bench_dirty},
    {"hierarchy", bench_hierarchy},
    {"memory", bench_memory},
    {"jobs", bench_jobs},
    {"schedule", bench_schedule},
    {"affinity", bench_affinity},
    {"heavy_compute", bench_heavy_compute},
    {"frame", bench_frame},
    {"update", bench_update},
    {"bandwidth", bench_bandwidth},
    {"arena", bench_arena},
    {"oversub", bench_oversub},
    {"relation", bench_relation},
    {"compact", bench_compact},
    {"snapshot", bench_snapshot},
    {"codec", bench_codec},
#ifdef WEFT_BENCH_MPI
    {"mpi", bench_mpi},             /* under mpirun: bench_mpi.c */
    {"mpi_scale", bench_mpi_scale}, /* under mpirun: bench_mpi_scale.c */
#endif
#ifdef WEFT_BENCH_NET
    {"net", bench_net},
    {"net_load", bench_net_load},
#endif
};

static void usage(FILE *out) {
  fputs("usage: weft-bench [options]\n"
        "  --quick          fast smoke run: few rounds, small sizes\n"
        "  --rounds N       rounds per workload and pass (1..1000, odd "
        "rounded up;\n"
        "                   default 16, quick 4)\n"
        "  --passes P       run the suite P times (1..1000; default 3, quick "
        "1);\n"
        "                   the medians cover the rounds of every pass\n"
        "  --filter REGEX   run workloads whose name matches the POSIX "
        "extended\n"
        "                   regular expression\n"
        "  --json FILE      also write the results to FILE as JSON\n"
        "  --svg FILE       also write a scaling chart of the parallel "
        "workloads\n"
        "                   to FILE (SVG: time against workers, and the "
        "ideal)\n"
        "  --list           print the selected workload names and exit\n"
        "  --help           show this help\n",
        out);
}

static int bad_usage(const char *fmt, const char *arg) {
  fputs("weft-bench: ", stderr);
  fprintf(stderr, fmt, arg);
  fputs("\n", stderr);
  usage(stderr);
  return 2;
}

/* Takes the value of option @p opt from "--opt=value" or the next argument.
 * Returns NULL if it is missing. */
static const char *option_value(int argc, char **argv, int *i,
                                const char *opt) {
  size_t len = strlen(opt);
  const char *a = argv[*i];
  if (strncmp(a, opt, len) != 0)
    return NULL;
  if (a[len] == '=')
    return a + len + 1;
  if (a[len] != '\0' || *i + 1 >= argc)
    return NULL;
  return argv[++*i];
}

static bool is_option(const char *a, const char *opt) {
  size_t len = strlen(opt);
  return strncmp(a, opt, len) == 0 && (a[len] == '\0' || a[len] == '=');
}

/* Takes the value of count option @p opt (--rounds, --passes), an integer
 * in 1..1000, into *out. Returns 0, or 2 after saying what was wrong. */
static int count_option(int argc, char **argv, int *i, const char *opt,
                        uint32_t *out) {
  const char *s = option_value(argc, argv, i, opt);
  if (!s)
    return bad_usage("%s needs a value", opt);
  char *end = (char *)s;
  errno = 0;
  unsigned long v = *s >= '0' && *s <= '9' ? strtoul(s, &end, 10) : 0;
  if (v < 1 || v > 1000 || errno || *end) {
    char msg[160];
    snprintf(msg, sizeof msg, "%s wants an integer in 1..1000, got '%s'", opt,
             s);
    return bad_usage("%s", msg);
  }
  *out = (uint32_t)v;
  return 0;
}

int main(int argc, char **argv) {
  bool quick = false, list = false;
  uint32_t rounds = 0, passes = 0;
  const char *filter = NULL, *json = NULL, *svg = NULL;

  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    if (strcmp(a, "--quick") == 0) {
      quick = true;
    } else if (strcmp(a, "--list") == 0) {
      list = true;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (is_option(a, "--rounds") || is_option(a, "--passes")) {
      bool r = is_option(a, "--rounds");
      if (count_option(argc, argv, &i, r ? "--rounds" : "--passes",
                       r ? &rounds : &passes))
        return 2;
    } else if (is_option(a, "--filter")) {
      filter = option_value(argc, argv, &i, "--filter");
      if (!filter)
        return bad_usage("%s needs a regular expression", "--filter");
    } else if (is_option(a, "--json")) {
      json = option_value(argc, argv, &i, "--json");
      if (!json || !*json)
        return bad_usage("%s needs a file name", "--json");
    } else if (is_option(a, "--svg")) {
      svg = option_value(argc, argv, &i, "--svg");
      if (!svg || !*svg)
        return bad_usage("%s needs a file name", "--svg");
    } else {
      return bad_usage("unknown argument '%s'", a);
    }
  }

  const char *outs[2][2] = {{"--json", json}, {"--svg", svg}};
  for (int k = 0; k < 2 && !list; ++k) {
    if (!outs[k][1])
      continue;
    FILE *f = fopen(outs[k][1], "w"); /* fail now, not after the whole run */
    if (!f) {
      fprintf(stderr, "weft-bench: cannot write %s file %s: %s\n", outs[k][0],
              outs[k][1], strerror(errno));
      return 2;
    }
    fclose(f);
  }

  bench_ctx_t ctx;
  bench_ctx_init(&ctx, quick, rounds, list ? 1 : passes);
  ctx.list_only = list;
  if (filter) {
    char err[256];
    if (bench_ctx_set_filter(&ctx, filter, err, sizeof err) != 0) {
      fprintf(stderr, "weft-bench: bad --filter '%s': %s\n", filter, err);
      bench_ctx_free(&ctx);
      return 2;
    }
  }

  if (!list)
    fprintf(stderr, "weft-bench: %s run, %u rounds per workload in %u pass%s\n",
            quick ? "quick" : "full", ctx.rounds * ctx.passes, ctx.passes,
            ctx.passes == 1 ? "" : "es");
  size_t scenarios = sizeof bench_registry / sizeof bench_registry[0];
  for (ctx.pass = 0; ctx.pass < ctx.passes; ++ctx.pass) {
    if (ctx.passes > 1)
      fprintf(stderr, "\n-- pass %u of %u\n", ctx.pass + 1, ctx.passes);
    for (size_t i = 0; i < scenarios; ++i)
      bench_registry[i].run(&ctx);
    if (ctx.count == 0)
      break; /* nothing selected: the check below says so */
  }

  if (list) {
    bench_ctx_free(&ctx);
    return 0;
  }
  if (ctx.count == 0) {
    fprintf(stderr,
            "weft-bench: --filter '%s' matches no workload "
            "(see --list)\n",
            filter ? filter : "");
    bench_ctx_free(&ctx);
    return 2;
  }

  fputs("\n", stderr);
  size_t misses = bench_print_table(&ctx, stdout);
  /* The table first, whole: with stdout and stderr sent to one file, the
   * messages below would otherwise land inside its buffered tail. */
  fflush(stdout);
  int status = 0;
  if (json && bench_write_json(&ctx, json) != 0) {
    fprintf(stderr, "weft-bench: cannot write %s: %s\n", json, strerror(errno));
    status = 1;
  }
  if (svg && bench_write_svg(&ctx, svg) != 0) {
    fprintf(stderr, "weft-bench: cannot write %s: %s\n", svg, strerror(errno));
    status = 1;
  }
  if (misses)
    fprintf(stderr, "weft-bench: %zu target%s missed (not an error)\n", misses,
            misses == 1 ? "" : "s");
  bench_ctx_free(&ctx);
  return status;
}
