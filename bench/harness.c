/* SPDX-License-Identifier: MIT */
/*
 * weft-bench harness: alternating-round measurement, the result table, the
 * JSON report and the workload filter. See harness.h for the method.
 */
#define _POSIX_C_SOURCE 200809L

#include "harness.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft.h>

#include "core/json.h"

enum {
  BENCH_ROUNDS_FULL = 16,
  BENCH_ROUNDS_QUICK = 4,
  BENCH_MAX_ROUNDS = 1000,
  BENCH_PASSES_FULL = 3,
  BENCH_PASSES_QUICK = 1
};

#define BENCH_ROUND_NS_FULL 20e6
#define BENCH_ROUND_NS_QUICK 1e6

double bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

void bench_ctx_init(bench_ctx_t *ctx, bool quick, uint32_t rounds,
                    uint32_t passes) {
  memset(ctx, 0, sizeof *ctx);
  ctx->quick = quick;
  ctx->rounds =
      rounds ? rounds : (quick ? BENCH_ROUNDS_QUICK : BENCH_ROUNDS_FULL);
  if (ctx->rounds > BENCH_MAX_ROUNDS)
    ctx->rounds = BENCH_MAX_ROUNDS;
  ctx->rounds += ctx->rounds % 2; /* whole pairs (harness.h) */
  ctx->passes =
      passes ? passes : (quick ? BENCH_PASSES_QUICK : BENCH_PASSES_FULL);
  ctx->round_ns = quick ? BENCH_ROUND_NS_QUICK : BENCH_ROUND_NS_FULL;
}

int bench_ctx_set_filter(bench_ctx_t *ctx, const char *pattern, char *err,
                         size_t err_size) {
  if (ctx->has_filter) {
    regfree(&ctx->filter);
    ctx->has_filter = false;
  }
  int rc = regcomp(&ctx->filter, pattern, REG_EXTENDED | REG_NOSUB);
  if (rc != 0) {
    regerror(rc, &ctx->filter, err, err_size);
    regfree(&ctx->filter);
    return -1;
  }
  ctx->has_filter = true;
  return 0;
}

void bench_ctx_free(bench_ctx_t *ctx) {
  if (ctx->has_filter)
    regfree(&ctx->filter);
  for (size_t i = 0; i < ctx->count; ++i)
    free(ctx->results[i].samples);
  free(ctx->results);
  ctx->results = NULL;
  ctx->count = ctx->cap = 0;
  ctx->has_filter = false;
}

bool bench_selected(bench_ctx_t *ctx, const char *name) {
  if (ctx->has_filter && regexec(&ctx->filter, name, 0, NULL, 0) != 0)
    return false;
  if (ctx->list_only) {
    printf("%s\n", name);
    return false;
  }
  return true;
}

/* The result named @p name from an earlier pass, or NULL. */
static bench_result_t *find_result(bench_ctx_t *ctx, const char *name) {
  for (size_t i = 0; i < ctx->count; ++i)
    if (strcmp(ctx->results[i].name, name) == 0)
      return &ctx->results[i];
  return NULL;
}

/* Appends a result; returns it. */
static bench_result_t *push_result(bench_ctx_t *ctx, const bench_result_t *r) {
  if (ctx->count == ctx->cap) {
    size_t cap = ctx->cap ? ctx->cap * 2 : 16;
    bench_result_t *p = realloc(ctx->results, cap * sizeof *p);
    if (!p)
      bench_die("recording a result", WEFT_ENOMEM);
    ctx->results = p;
    ctx->cap = cap;
  }
  ctx->results[ctx->count] = *r;
  return &ctx->results[ctx->count++];
}

void bench_record(bench_ctx_t *ctx, const bench_result_t *r) {
  bench_result_t *old = find_result(ctx, r->name);
  if (!old) {
    push_result(ctx, r);
    return;
  }
  free(old->samples);
  *old = *r;
  old->samples = NULL;
  old->nsamples = old->cap_samples = 0;
}

/* Times @p reps repetitions of one side; returns nanoseconds. */
static double run_side(bench_ctx_t *ctx, const bench_side_t *s, uint64_t reps) {
  double t0 = bench_now_ns();
  uint64_t sum = s->fn(s->state, reps);
  double t1 = bench_now_ns();
  if (s->self_timed)
    return (double)sum;
  ctx->sink ^= sum;
  return t1 - t0;
}

/* Warms a side up, then finds how many repetitions last one round. */
static uint64_t calibrate(bench_ctx_t *ctx, const bench_side_t *s) {
  uint64_t reps = 1;
  run_side(ctx, s, 1);
  for (;;) {
    double t = run_side(ctx, s, reps);
    if (t >= ctx->round_ns)
      return reps;
    double scale = t > 0.0 ? ctx->round_ns * 1.15 / t : 1e9;
    if (scale > 16.0) {
      reps *= 16; /* too short to extrapolate from: measure again */
      continue;
    }
    return (uint64_t)ceil((double)reps * scale);
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median of @p n values; sorts them in place. */
static double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Makes room for @p more samples in each of @p r's three blocks. */
static void reserve_samples(bench_result_t *r, uint32_t more) {
  uint32_t need = r->nsamples + more;
  if (need <= r->cap_samples)
    return;
  uint32_t cap = need > 2 * r->cap_samples ? need : 2 * r->cap_samples;
  double *p = malloc(3 * (size_t)cap * sizeof *p);
  if (!p)
    bench_die("allocating round samples", WEFT_ENOMEM);
  for (int k = 0; k < 3; ++k)
    if (r->nsamples)
      memcpy(p + (size_t)k * cap, r->samples + (size_t)k * r->cap_samples,
             r->nsamples * sizeof *p);
  free(r->samples);
  r->samples = p;
  r->cap_samples = cap;
}

/* Pair k's number from per-round numbers @p v: the geometric mean of
 * rounds 2k and 2k + 1 (harness.h). */
static inline double pair_mean(const double *v, uint32_t k) {
  return sqrt(v[2 * k] * v[2 * k + 1]);
}

/* Sets @p r's medians and extremes from all its samples, pair by pair. */
static void summarize(bench_result_t *r) {
  uint32_t pairs = r->nsamples / 2;
  double *tmp = malloc((size_t)pairs * sizeof *tmp);
  if (!tmp)
    bench_die("summarizing round samples", WEFT_ENOMEM);
  double *out[3] = {&r->value, &r->baseline_value, &r->ratio};
  for (int k = 0; k < 3; ++k) {
    const double *v = r->samples + (size_t)k * r->cap_samples;
    for (uint32_t i = 0; i < pairs; ++i)
      tmp[i] = pair_mean(v, i);
    *out[k] = median(tmp, pairs); /* sorts tmp: the ratios' extremes follow */
  }
  r->ratio_min = tmp[0];
  r->ratio_max = tmp[pairs - 1];
  r->rounds = r->nsamples;
  free(tmp);
}

/* The result a comparison's samples go to: the earlier passes' one, or a
 * new one. */
static bench_result_t *case_result(bench_ctx_t *ctx, const bench_case_t *c) {
  bench_result_t *r = find_result(ctx, c->name);
  if (r)
    return r;
  bench_result_t res;
  memset(&res, 0, sizeof res);
  snprintf(res.name, sizeof res.name, "%s", c->name);
  snprintf(res.baseline, sizeof res.baseline, "%s", c->base.name);
  res.unit = c->unit;
  res.n = c->n;
  res.target_kind = c->target_kind;
  res.target = c->target;
  res.workers = c->workers;
  res.efficiency = NAN;
  return push_result(ctx, &res);
}

bench_result_t *bench_compare(bench_ctx_t *ctx, const bench_case_t *c) {
  uint32_t rounds = ctx->rounds;
  fprintf(stderr, "%-28s vs %-20s", c->name, c->base.name);
  fflush(stderr);
  uint64_t reps_w = calibrate(ctx, &c->work);
  uint64_t reps_b = calibrate(ctx, &c->base);
  /* The first round's opener runs warm, as in every later round. */
  run_side(ctx, &c->work, reps_w);
  bench_result_t *res = case_result(ctx, c);
  reserve_samples(res, rounds);
  double *w = res->samples + res->nsamples;
  double *b = w + res->cap_samples, *q = b + res->cap_samples;
  for (uint32_t r = 0; r < rounds; ++r) {
    double tw, tb;
    if (r % 2 == 0) {
      tw = run_side(ctx, &c->work, reps_w);
      tb = run_side(ctx, &c->base, reps_b);
    } else {
      tb = run_side(ctx, &c->base, reps_b);
      tw = run_side(ctx, &c->work, reps_w);
    }
    w[r] = tw / ((double)reps_w * c->work.ops);
    b[r] = tb / ((double)reps_b * c->base.ops);
    q[r] = w[r] / b[r];
  }
  res->nsamples += rounds;
  summarize(res);

  fprintf(stderr, " %8.3f %s  ratio %.3f [%.3f..%.3f]", res->value, res->unit,
          res->ratio, res->ratio_min, res->ratio_max);
  if (ctx->passes > 1)
    fprintf(stderr, "  (%u rounds so far)", res->nsamples);
  fputs("\n", stderr);
  return res;
}

static bool target_met(const bench_result_t *r) {
  switch (r->target_kind) {
  case BENCH_TARGET_VALUE:
    return r->value <= r->target;
  case BENCH_TARGET_RATIO:
    return r->ratio <= r->target;
  case BENCH_TARGET_MIN:
    return r->value >= r->target;
  case BENCH_TARGET_NONE:
    break;
  }
  return true;
}

/* Formats a number with three significant-ish digits, "-" for NaN. */
static void fmt_num(char *buf, size_t size, double v) {
  if (isnan(v))
    snprintf(buf, size, "-");
  else if (fabs(v) >= 100.0)
    snprintf(buf, size, "%.1f", v);
  else if (fabs(v) >= 10.0)
    snprintf(buf, size, "%.2f", v);
  else
    snprintf(buf, size, "%.3f", v);
}

static void fmt_target(char *buf, size_t size, const bench_result_t *r) {
  char num[24];
  fmt_num(num, sizeof num, r->target);
  switch (r->target_kind) {
  case BENCH_TARGET_VALUE:
    snprintf(buf, size, "<=%s", num);
    return;
  case BENCH_TARGET_RATIO:
    snprintf(buf, size, "<=%sx", num);
    return;
  case BENCH_TARGET_MIN:
    snprintf(buf, size, ">=%s", num);
    return;
  case BENCH_TARGET_NONE:
    break;
  }
  snprintf(buf, size, "-");
}

const char *bench_verdict(const bench_ctx_t *ctx, const bench_result_t *r) {
  if (r->target_kind == BENCH_TARGET_NONE)
    return NULL;
  if (ctx->quick)
    return "indicative";
  return target_met(r) ? "pass" : "miss";
}

size_t bench_print_table(const bench_ctx_t *ctx, FILE *out) {
  size_t misses = 0;
  fprintf(out, "%-26s %9s %-10s %9s %7s  %-8s %s\n", "name", "value", "unit",
          "baseline", "ratio", "target", "mark");
  for (size_t i = 0; i < ctx->count; ++i) {
    const bench_result_t *r = &ctx->results[i];
    char value[32], base[32], ratio[32], target[48];
    fmt_num(value, sizeof value, r->value);
    fmt_num(base, sizeof base, r->baseline_value);
    fmt_num(ratio, sizeof ratio, r->ratio);
    if (!isnan(r->ratio))
      strncat(ratio, "x", sizeof ratio - strlen(ratio) - 1);
    fmt_target(target, sizeof target, r);
    const char *verdict = bench_verdict(ctx, r), *mark = "";
    if (verdict) {
      mark = !strcmp(verdict, "pass")   ? "PASS"
             : !strcmp(verdict, "miss") ? "MISS"
                                        : "indicative";
      misses += !strcmp(verdict, "miss");
    }
    fprintf(out, "%-26s %9s %-10s %9s %7s  %-8s %s\n", r->name, value, r->unit,
            base, ratio, target, mark);
  }
  if (ctx->quick)
    fprintf(out, "\n--quick: targets are indicative; a few short rounds "
                 "cannot pass or miss them\n");
  if (misses) {
    fprintf(out, "\n%zu target%s missed:\n", misses, misses == 1 ? "" : "s");
    for (size_t i = 0; i < ctx->count; ++i) {
      const bench_result_t *r = &ctx->results[i];
      if (r->target_kind == BENCH_TARGET_NONE || target_met(r))
        continue;
      if (r->target_kind == BENCH_TARGET_VALUE ||
          r->target_kind == BENCH_TARGET_MIN)
        fprintf(out, "  %s: %.3f %s, target %s %.3g %s\n", r->name, r->value,
                r->unit,
                r->target_kind == BENCH_TARGET_MIN ? ">=" : "<=", r->target,
                r->unit);
      else
        fprintf(out, "  %s: %.3fx %s, target <= %.3gx\n", r->name, r->ratio,
                r->baseline, r->target);
    }
  }
  return misses;
}

int bench_fclose(FILE *f) {
  int bad = ferror(f);
  if (fclose(f) != 0 || bad) {
    if (!errno)
      errno = EIO;
    return -1;
  }
  return 0;
}

/* The version of the --json report's layout: raised whenever a field
 * changes meaning or goes away (README, "Traces and JSON reports"). */
#define BENCH_JSON_VERSION 1

static const char *target_kind_name(bench_target_kind_t k) {
  return k == BENCH_TARGET_VALUE   ? "value"
         : k == BENCH_TARGET_RATIO ? "ratio"
                                   : "min";
}

static void write_row(weft__json_t *j, const bench_ctx_t *ctx,
                      const bench_result_t *r) {
  weft__json_object(j);
  weft__json_kstr(j, "name", r->name);
  weft__json_kstr(j, "unit", r->unit);
  weft__json_kdouble(j, "value", r->value);
  weft__json_kstr(j, "baseline", r->baseline[0] ? r->baseline : NULL);
  weft__json_kdouble(j, "baseline_value", r->baseline_value);
  weft__json_kdouble(j, "ratio", r->ratio);
  weft__json_kdouble(j, "ratio_min", r->ratio_min);
  weft__json_kdouble(j, "ratio_max", r->ratio_max);
  weft__json_ku64(j, "rounds", r->rounds);
  weft__json_ku64(j, "n", r->n);
  const char *verdict = bench_verdict(ctx, r);
  if (verdict) {
    weft__json_kdouble(j, "target", r->target);
    weft__json_kstr(j, "target_kind", target_kind_name(r->target_kind));
    /* pass: true or false in a full run, null when only indicative. */
    weft__json_key(j, "pass");
    if (ctx->quick)
      weft__json_null(j);
    else
      weft__json_bool(j, target_met(r));
    weft__json_kstr(j, "verdict", verdict);
  }
  if (r->nsamples > 0) {
    /* In round order, pass after pass (shows warm-up, host swings and
     * the opener's advantage), then the pairs the medians come from. */
    const double *q = r->samples + 2 * (size_t)r->cap_samples;
    weft__json_key(j, "round_ratios");
    weft__json_array(j);
    for (uint32_t k = 0; k < r->nsamples; ++k)
      weft__json_double(j, q[k]);
    weft__json_end(j);
    weft__json_key(j, "pair_ratios");
    weft__json_array(j);
    for (uint32_t k = 0; k < r->nsamples / 2; ++k)
      weft__json_double(j, pair_mean(q, k));
    weft__json_end(j);
  }
  if (r->workers > 0) {
    weft__json_ku64(j, "workers", r->workers);
    weft__json_kdouble(j, "efficiency", r->efficiency);
  }
  if (r->bytes > 0) {
    weft__json_kdouble(j, "gbps", r->bytes / r->value);
    weft__json_kdouble(j, "baseline_gbps", r->bytes / r->baseline_value);
  }
  weft__json_end(j);
}

int bench_write_json(const bench_ctx_t *ctx, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  weft__json_t j;
  weft__json_init(&j, f, 2); /* one row a line */
  weft__json_object(&j);
  weft__json_kstr(&j, "format", "weft-bench");
  weft__json_ku64(&j, "version", BENCH_JSON_VERSION);
  bench_write_meta(&j, ctx);
  weft__json_key(&j, "results");
  weft__json_array(&j);
  for (size_t i = 0; i < ctx->count; ++i)
    write_row(&j, ctx, &ctx->results[i]);
  weft__json_end(&j);
  weft__json_end(&j);
  int rc = weft__json_finish(&j);
  if (bench_fclose(f) != 0)
    return -1;
  if (rc != 0 && !errno)
    errno = EIO;
  return rc ? -1 : 0;
}

/*
 * Baselines stream several arrays side by side (pos and vel, x y z), and a
 * CPU checks a load against earlier stores by the low 12 address bits:
 * arrays that start at the same offset modulo 4096 make every load of one
 * wait on the store to another at the same index (4K aliasing).
 * aligned_alloc() placed large blocks at whatever offset the allocator
 * chose (jemalloc randomises it), so a baseline's arrays now and then
 * aliased and the baseline ran slow in that run. Each block starts a
 * chosen line into a page instead: block k at line 1 + (11 * k) % 63, so
 * up to 63 consecutive blocks take different lines. The page-aligned
 * allocation keeps the block's real start just before it.
 */
static unsigned bench_alloc_seq;

void *bench_alloc(size_t bytes) {
  size_t size = (bytes + 63u) & ~(size_t)63u;
  if (size == 0)
    size = 64;
  size_t off = bench_page_line(bench_alloc_seq++);
  /* C11's aligned_alloc wants a multiple of the alignment. */
  unsigned char *raw =
      aligned_alloc(4096, (size + 2 * 4096 - 1) & ~(size_t)4095u);
  if (!raw)
    bench_die("aligned_alloc", WEFT_ENOMEM);
  unsigned char *p = raw + off;
  memcpy(p - sizeof raw, &raw, sizeof raw);
  memset(p, 0, size);
  return p;
}

void bench_free(void *p) {
  if (!p)
    return;
  unsigned char *raw;
  memcpy(&raw, (unsigned char *)p - sizeof raw, sizeof raw);
  free(raw);
}

_Noreturn void bench_die(const char *what, int rc) {
  fprintf(stderr, "\nweft-bench: %s failed: %s (%s)\n", what,
          weft_strerror_name(rc), weft_strerror(rc));
  exit(1);
}

void bench_size_label(char *buf, size_t size, uint64_t n) {
  if (n >= 1000000 && n % 1000000 == 0)
    snprintf(buf, size, "%lluM", (unsigned long long)(n / 1000000));
  else if (n >= 1000 && n % 1000 == 0)
    snprintf(buf, size, "%lluk", (unsigned long long)(n / 1000));
  else
    snprintf(buf, size, "%llu", (unsigned long long)n);
}

uint64_t bench_rng_next(uint64_t *state) {
  uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

void bench_shuffle_u32(uint32_t *a, size_t n, uint64_t seed) {
  uint64_t s = seed;
  for (size_t i = n; i > 1; --i) {
    size_t j = (size_t)(bench_rng_next(&s) % i);
    uint32_t t = a[i - 1];
    a[i - 1] = a[j];
    a[j] = t;
  }
}

uint64_t bench_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

uint64_t bench_fixed_phases(weft_world_t *world, double dt, uint64_t reps) {
  for (uint64_t r = 0; r < reps; ++r)
    bench_check(weft_world_run_phase(world, WEFT_PHASE_FIXED_UPDATE, dt),
                "weft_world_run_phase");
  return reps;
}

weft_pool_t *bench_pool_new(uint32_t workers, bool bind_caller) {
  weft_pool_config_t pc = {0};
  pc.placement.workers = workers;
  pc.placement.caller_participates = true;
  pc.placement.bind_caller = bind_caller;
  weft_pool_t *p = NULL;
  bench_check(weft_pool_create(&pc, &p), "weft_pool_create");
  return p;
}

void bench_register_pos_vel(weft_world_t *world, weft_component_desc_t d,
                            weft_component_t out[2]) {
  d.name = "Position";
  bench_check(weft_component_register(world, &d, &out[0]),
              "registering Position");
  d.name = "Velocity";
  bench_check(weft_component_register(world, &d, &out[1]),
              "registering Velocity");
}
