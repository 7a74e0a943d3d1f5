/* SPDX-License-Identifier: MIT */
/*
 * Traces as Perfetto reads them: weft-sim's scenarios run on a pool with a
 * trace, the file is parsed by a strict JSON parser and, lane by lane,
 * every complete event must nest in the ones around it (Perfetto drops one
 * that starts inside another and ends after it), every lane must be named
 * and hold slices, and the process must be named. Times are read the way
 * Perfetto reads them (microseconds times 1000, rounded) and must also be
 * whole nanoseconds as written.
 */
#define _POSIX_C_SOURCE 200809L
#include "support/weft_test.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "support/json_parse.h"
#include "support/sim_test.h"
#include "support/pipeline_test.h"

#define TRACE_MAX_LANES 64u

typedef struct trace_slice_t {
  int64_t t0, t1;
} trace_slice_t;

typedef struct trace_lane_t {
  uint64_t tid;
  bool named;
  trace_slice_t *slices;
  size_t n, cap;
} trace_lane_t;

typedef struct trace_check_t {
  trace_lane_t lanes[TRACE_MAX_LANES];
  size_t nlanes;
  size_t process_names;
  size_t slices;
} trace_check_t;

static trace_lane_t *lane_of(trace_check_t *c, uint64_t tid) {
  for (size_t i = 0; i < c->nlanes; i++)
    if (c->lanes[i].tid == tid)
      return &c->lanes[i];
  assert_true(c->nlanes < TRACE_MAX_LANES);
  trace_lane_t *l = &c->lanes[c->nlanes++];
  memset(l, 0, sizeof *l);
  l->tid = tid;
  return l;
}

/* A time field in nanoseconds, as Perfetto computes it from microseconds;
 * it must also be exactly the nanoseconds written (three decimals). */
static int64_t time_ns(const jp_value_t *ev, const char *key) {
  const jp_value_t *v = jp_get(ev, key);
  assert_non_null(v);
  assert_int_equal(v->type, JP_NUMBER);
  int64_t ns = (int64_t)llround(v->number * 1000.0);
  const char *dot = strchr(v->text, '.');
  assert_non_null(dot);
  assert_int_equal(strlen(dot), 4);
  int64_t exact =
      strtoll(v->text, NULL, 10) * 1000 + strtoll(dot + 1, NULL, 10);
  assert_int_equal(ns, exact);
  assert_true(ns >= 0);
  return ns;
}

static void add_event(trace_check_t *c, const jp_value_t *ev) {
  assert_int_equal(ev->type, JP_OBJECT);
  const jp_value_t *ph = jp_get(ev, "ph"), *name = jp_get(ev, "name");
  assert_non_null(ph);
  assert_non_null(name);
  assert_int_equal(name->type, JP_STRING);
  assert_true(name->len > 0);
  const jp_value_t *args = jp_get(ev, "args");
  if (strcmp(ph->text, "M") == 0) {
    if (strcmp(name->text, "process_name") == 0) {
      assert_non_null(jp_get(args, "name"));
      assert_true(jp_get(args, "name")->len > 0);
      c->process_names++;
    } else if (strcmp(name->text, "thread_name") == 0) {
      const jp_value_t *tn = jp_get(args, "name");
      assert_non_null(tn);
      assert_true(tn->len > 0);
      trace_lane_t *l = lane_of(c, (uint64_t)jp_get(ev, "tid")->number);
      assert_false(l->named); /* one name a lane */
      l->named = true;
    }
    return;
  }
  assert_string_equal(ph->text, "X");
  trace_lane_t *l = lane_of(c, (uint64_t)jp_get(ev, "tid")->number);
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 256;
    l->slices = realloc(l->slices, l->cap * sizeof *l->slices);
    assert_non_null(l->slices);
  }
  int64_t t0 = time_ns(ev, "ts");
  l->slices[l->n++] = (trace_slice_t){t0, t0 + time_ns(ev, "dur")};
  c->slices++;
}

static int slice_cmp(const void *a, const void *b) {
  const trace_slice_t *x = a, *y = b;
  if (x->t0 != y->t0)
    return x->t0 < y->t0 ? -1 : 1;
  return (x->t1 < y->t1) - (x->t1 > y->t1); /* the longer first */
}

/* Returns how many slices on @p l start inside another and end after it. */
static size_t partial_overlaps(trace_lane_t *l) {
  qsort(l->slices, l->n, sizeof *l->slices, slice_cmp);
  int64_t *open = malloc((l->n + 1) * sizeof *open);
  assert_non_null(open);
  size_t depth = 0, bad = 0;
  for (size_t i = 0; i < l->n; i++) {
    while (depth > 0 && open[depth - 1] <= l->slices[i].t0)
      depth--;
    if (depth > 0 && l->slices[i].t1 > open[depth - 1])
      bad++;
    open[depth++] = l->slices[i].t1;
  }
  free(open);
  return bad;
}

/* Parses the trace at @p path and checks it; returns the lanes seen. */
static size_t check_trace_file(const char *path) {
  size_t len = 0;
  char *text = jp_read_file(path, &len);
  assert_non_null(text);
  jp_value_t *root = jp_parse(text, len);
  if (!root)
    fail_msg("%s is not valid JSON", path);
  free(text);
  const jp_value_t *events = jp_get(root, "traceEvents");
  assert_non_null(events);
  assert_int_equal(events->type, JP_ARRAY);
  const jp_value_t *other = jp_get(root, "otherData");
  assert_non_null(jp_get(other, "dropped"));
  assert_true(jp_get(other, "dropped")->number == 0);
  trace_check_t c;
  memset(&c, 0, sizeof c);
  for (size_t i = 0; i < events->n; i++)
    add_event(&c, events->items[i]);
  assert_int_equal(c.process_names, 1);
  assert_true(c.slices > 0);
  for (size_t i = 0; i < c.nlanes; i++) {
    trace_lane_t *l = &c.lanes[i];
    if (!l->named || l->n == 0)
      fail_msg("lane %llu: %s, %zu slices", (unsigned long long)l->tid,
               l->named ? "named" : "no name", l->n);
    size_t bad = partial_overlaps(l);
    if (bad)
      fail_msg("lane %llu: %zu of %zu slices overlap a neighbour partially",
               (unsigned long long)l->tid, bad, l->n);
    free(l->slices);
  }
  jp_free(root);
  return c.nlanes;
}

/* Runs @p ticks of scenario @p kind on @p workers with a trace, writes it
 * and checks it. Returns the lanes the trace had. */
static size_t trace_scenario(sim_kind_t kind, uint32_t workers,
                             uint32_t ticks) {
  wt_sim_t s;
  wt_sim_open(&s, kind, workers, 6000, 11);
  wt_sim_tick(&s); /* the schedule's build, outside the trace */
  assert_int_equal(weft_trace_start(s.w, 1u << 16), WEFT_OK);
  for (uint32_t t = 0; t < ticks; t++)
    wt_sim_tick(&s);
  weft_trace_stop(s.w);
  char path[] = "/tmp/weft-trace-check-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(weft_trace_write(s.w, path), WEFT_OK);
  size_t lanes = check_trace_file(path);
  unlink(path);
  wt_sim_close(&s);
  return lanes;
}

static void test_trace_boids_slices_nest_on_every_lane(void **state) {
  (void)state;
  /* The workers and the driving thread (which runs the syncs). */
  size_t lanes = trace_scenario(SIM_BOIDS, 2, 40);
  assert_true(lanes >= 2 && lanes <= 3);
}

static void test_trace_arena_slices_nest_on_every_lane(void **state) {
  (void)state;
  size_t lanes = trace_scenario(SIM_ARENA, 3, 40);
  assert_true(lanes >= 2 && lanes <= 4);
}

/* Without a pool everything runs inline on the driving thread: one lane,
 * and no empty worker lanes beside it. */
static void test_trace_without_pool_has_one_lane(void **state) {
  (void)state;
  assert_int_equal(trace_scenario(SIM_PARTICLES, 0, 20), 1);
}

/* --- traces through the pipeline ------------------------------------- */

static char *read_all(const char *path, size_t *len) {
  FILE *fp = fopen(path, "rb");
  assert_non_null(fp);
  assert_int_equal(fseek(fp, 0, SEEK_END), 0);
  long n = ftell(fp);
  assert_true(n > 0);
  rewind(fp);
  char *buf = malloc((size_t)n + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
  buf[n] = 0;
  fclose(fp);
  *len = (size_t)n;
  return buf;
}

/* Braces and brackets balance outside strings, and strings close. */
static bool json_balanced(const char *s) {
  char stack[64];
  int depth = 0;
  bool in_str = false;
  for (; *s; s++) {
    if (in_str) {
      if (*s == '\\' && s[1])
        s++;
      else if (*s == '"')
        in_str = false;
      continue;
    }
    if (*s == '"') {
      in_str = true;
    } else if (*s == '{' || *s == '[') {
      if (depth == 64)
        return false;
      stack[depth++] = *s;
    } else if (*s == '}' || *s == ']') {
      if (depth == 0 || stack[depth - 1] != (*s == '}' ? '{' : '['))
        return false;
      depth--;
    }
  }
  return depth == 0 && !in_str;
}

static void test_trace_write(void **state) {
  (void)state;
  fx_t f = fx_new(2, 0);
  sim_t s;
  sim_setup(&f, &s);
  assert_int_equal(weft_trace_start(f.w, 4096), WEFT_OK);
  for (uint32_t i = 0; i < 3; i++)
    progress_ok(f.w, 0.1);
  weft_trace_stop(f.w);
  progress_ok(f.w, 0.1); /* not recorded */
  char path[] = "/tmp/weft-trace-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(weft_trace_write(f.w, path), WEFT_OK);
  size_t len = 0;
  char *text = read_all(path, &len);
  assert_non_null(strstr(text, "\"traceEvents\":["));
  assert_non_null(strstr(text, "\"sim.move\""));
  assert_non_null(strstr(text, "\"sim.spawn\""));
  assert_non_null(strstr(text, "\"sync\""));
  assert_non_null(strstr(text, "driver"));
  assert_non_null(strstr(text, "\"dropped\":0"));
  assert_true(json_balanced(text));
  assert_true(len > 2 && text[len - 2] == '}');
  free(text);
  /* A tiny trace drops spans and says so. */
  assert_int_equal(weft_trace_start(f.w, 2), WEFT_OK);
  for (uint32_t i = 0; i < 3; i++)
    progress_ok(f.w, 0.1);
  assert_int_equal(weft_trace_write(f.w, path), WEFT_OK);
  text = read_all(path, &len);
  assert_true(json_balanced(text));
  assert_null(strstr(text, "\"dropped\":0\n"));
  assert_non_null(strstr(text, "\"dropped\":"));
  free(text);
  unlink(path);
  fx_free(&f);
}

static void test_trace_errors(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  /* No scheduler, then a scheduler but no trace. */
  assert_int_equal(weft_trace_write(f.w, "/tmp/weft-never.json"), WEFT_EINVAL);
  probe_t *pr = calloc(1, sizeof *pr);
  assert_non_null(pr);
  weft_system_desc_t d = sys_desc("t", WEFT_PHASE_PRE_UPDATE, probe_run, pr);
  sys_add(f.w, &d);
  progress_ok(f.w, 0.1);
  assert_int_equal(weft_trace_write(f.w, "/tmp/weft-never.json"), WEFT_EINVAL);
  assert_int_equal(access("/tmp/weft-never.json", F_OK), -1);
  assert_int_equal(weft_trace_start(f.w, 0), WEFT_EINVAL);
  assert_int_equal(weft_trace_start(f.w, 64), WEFT_OK);
  progress_ok(f.w, 0.1);
  const char *bad = "/nonexistent-weft-dir/sub/trace.json";
  assert_int_equal(weft_trace_write(f.w, bad), WEFT_EIO);
  assert_non_null(strstr(weft_world_last_error(f.w), bad));
  assert_int_equal(weft_trace_write(f.w, "/"), WEFT_EIO);
  assert_int_equal(weft_trace_write(f.w, NULL), WEFT_EINVAL);
  free(pr);
  fx_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_trace_boids_slices_nest_on_every_lane),
      cmocka_unit_test(test_trace_arena_slices_nest_on_every_lane),
      cmocka_unit_test(test_trace_without_pool_has_one_lane),
      cmocka_unit_test(test_trace_write),
      cmocka_unit_test(test_trace_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
