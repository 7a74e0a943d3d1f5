/* SPDX-License-Identifier: MIT */
/*
 * Frame traces: each worker slot records spans (system jobs, inline runs,
 * sync points) into its own preallocated array, so recording takes no lock
 * and allocates nothing; weft_trace_write() turns them into Chrome
 * trace-event JSON with one lane per slot that recorded anything and the
 * gaps between spans of a frame shown as idle.
 *
 * Perfetto drops a complete event ("ph":"X") that starts inside another
 * on its lane but ends after it. Rounding each span's start and duration
 * separately made one slice in nine end a nanosecond after the next one
 * began, so the writer works in integer nanoseconds: each end is converted
 * once (a monotonic conversion, so order is kept), durations are the
 * differences, and a span that would still overlap its enclosing one
 * partially (clocks of two kinds, say) is cut at that one's end.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "core/json.h"
#include "core/world_view.h"
#include "scheduler/sched.h"

/* Gaps longer than this are between frames, not idle time inside one. */
#define IDLE_GAP_MAX_NS 5000000u

void weft__trace_record(weft__sched_t *s, uint32_t k, uint32_t kind,
                        uint32_t id, uint32_t n, uint64_t t0, uint64_t t1) {
  weft__cmdslot_t *sl = &s->slots[k];
  if (sl->nspans == s->trace_cap) {
    sl->dropped++;
    return;
  }
  sl->spans[sl->nspans++] = (weft__span_t){t0, t1, kind, id, n};
}

void weft__trace_fini(weft_world_t *w, weft__sched_t *s) {
  (void)w;
  for (uint32_t k = 0; s->slots && k < s->nslots; k++) {
    weft__free(s->slots[k].spans, 0, 64);
    s->slots[k].spans = NULL;
    s->slots[k].nspans = 0;
  }
  s->tracing = false;
  s->trace_cap = 0;
}

int weft_trace_start(weft_world_t *w, uint32_t events_per_worker) {
  WEFT_CHECK(w, w && events_per_worker > 0, WEFT_EINVAL,
             "a trace needs room for at least one span per worker");
  weft__sched_t *s;
  int open_rc = weft__sched_open(w, &s);
  if (open_rc)
    return open_rc;
  WEFT_CHECK(w, !s->running, WEFT_EBUSY, "start a trace between frames");
  weft__trace_fini(w, s);
  for (uint32_t k = 0; k < s->nslots; k++) {
    s->slots[k].spans = weft__alloc(
        &w->alloc, (size_t)events_per_worker * sizeof(weft__span_t), 64);
    s->slots[k].dropped = 0;
    if (!s->slots[k].spans) {
      weft__trace_fini(w, s);
      return weft__fail(w, WEFT_ENOMEM, WEFT__FILE, WEFT__LINE,
                        "out of memory for %u trace spans per worker",
                        events_per_worker);
    }
  }
  s->trace_cap = events_per_worker;
  s->trace_t0 = weft__ticks();
  s->tracing = true;
  return 0;
}

void weft_trace_stop(weft_world_t *w) {
  if (w && weft__sched_of(w))
    weft__sched_of(w)->tracing = false;
}

static const char *span_name(const weft__sched_t *s, const weft__span_t *sp) {
  if (sp->kind == WEFT__SPAN_SYNC)
    return "sync";
  const weft__sys_t *y = weft__sched_sys(s, sp->id);
  return y ? y->name : "(removed system)";
}

/* A span ready to write: bounds in nanoseconds since the trace began. */
typedef struct trace_ev_t {
  uint64_t t0, t1;
  const weft__span_t *sp;
} trace_ev_t;

/* Earlier start first; of two starting together, the longer (the
 * enclosing one) first; ties keep the recorded order. */
static int ev_cmp(const void *a, const void *b) {
  const trace_ev_t *x = a, *y = b;
  if (x->t0 != y->t0)
    return x->t0 < y->t0 ? -1 : 1;
  if (x->t1 != y->t1)
    return x->t1 > y->t1 ? -1 : 1;
  return x->sp < y->sp ? -1 : x->sp > y->sp;
}

/* Ticks since the trace began, in whole nanoseconds. */
static uint64_t to_ns(const weft__sched_t *s, uint64_t t, double ns) {
  return t > s->trace_t0 ? (uint64_t)llround((double)(t - s->trace_t0) * ns)
                         : 0;
}

/* Microseconds with three decimals, exactly @p ns nanoseconds. */
static void put_us(weft__json_t *j, const char *key, uint64_t ns) {
  char buf[32];
  snprintf(buf, sizeof buf, "%llu.%03u", (unsigned long long)(ns / 1000),
           (unsigned)(ns % 1000));
  weft__json_key(j, key);
  weft__json_number_text(j, buf);
}

static void put_slice(weft__json_t *j, const char *name, const char *cat,
                      uint32_t tid, uint64_t t0, uint64_t t1, uint32_t n) {
  weft__json_object(j);
  weft__json_kstr(j, "name", name);
  weft__json_kstr(j, "cat", cat);
  weft__json_kstr(j, "ph", "X");
  weft__json_ku64(j, "pid", 1);
  weft__json_ku64(j, "tid", tid);
  put_us(j, "ts", t0);
  put_us(j, "dur", t1 - t0);
  weft__json_key(j, "args");
  weft__json_object(j);
  weft__json_ku64(j, "n", n);
  weft__json_end(j);
  weft__json_end(j);
}

/* A metadata event: the process's or a lane's name or sort order. */
static void put_meta(weft__json_t *j, const char *what, uint32_t tid,
                     const char *arg, const char *name, uint32_t order) {
  weft__json_object(j);
  weft__json_kstr(j, "name", what);
  weft__json_kstr(j, "ph", "M");
  weft__json_ku64(j, "pid", 1);
  if (tid)
    weft__json_ku64(j, "tid", tid);
  weft__json_key(j, "args");
  weft__json_object(j);
  if (name)
    weft__json_kstr(j, arg, name);
  else
    weft__json_ku64(j, arg, order);
  weft__json_end(j);
  weft__json_end(j);
}

/*
 * Writes slot @p k's spans in start order, each nested in the ones still
 * open around it, with idle slices in the short gaps between top-level
 * ones. @p ev and @p open have room for the slot's spans.
 */
static void write_spans(weft__json_t *j, const weft__sched_t *s, uint32_t k,
                        uint32_t tid, double ns, trace_ev_t *ev,
                        uint64_t *open) {
  const weft__cmdslot_t *sl = &s->slots[k];
  for (uint32_t i = 0; i < sl->nspans; i++) {
    const weft__span_t *sp = &sl->spans[i];
    uint64_t t0 = to_ns(s, sp->t0, ns), t1 = to_ns(s, sp->t1, ns);
    ev[i] = (trace_ev_t){t0, t1 > t0 ? t1 : t0, sp};
  }
  qsort(ev, sl->nspans, sizeof *ev, ev_cmp);
  uint32_t depth = 0;
  uint64_t top_end = 0; /* end of the last top-level slice */
  for (uint32_t i = 0; i < sl->nspans; i++) {
    trace_ev_t *e = &ev[i];
    while (depth > 0 && open[depth - 1] <= e->t0)
      depth--;
    if (depth > 0 && e->t1 > open[depth - 1])
      e->t1 = open[depth - 1];
    if (depth == 0 && i > 0 && e->t0 > top_end &&
        e->t0 - top_end < IDLE_GAP_MAX_NS)
      put_slice(j, "idle", "idle", tid, top_end, e->t0, 0);
    const weft__span_t *sp = e->sp;
    const char *cat = sp->kind == WEFT__SPAN_SYNC     ? "sync"
                      : sp->kind == WEFT__SPAN_INLINE ? "inline"
                                                      : "job";
    put_slice(j, span_name(s, sp), cat, tid, e->t0, e->t1, sp->n);
    if (depth == 0)
      top_end = e->t1;
    open[depth++] = e->t1;
  }
}

/* Writes every slot that recorded a span as one named lane. Returns 0 or
 * WEFT_ENOMEM. */
static int write_lanes(weft_world_t *w, weft__json_t *j, weft__sched_t *s) {
  uint32_t most = 0;
  for (uint32_t k = 0; k < s->nslots; k++)
    most = s->slots[k].nspans > most ? s->slots[k].nspans : most;
  size_t bytes = (size_t)most * (sizeof(trace_ev_t) + sizeof(uint64_t));
  trace_ev_t *ev = most ? weft__alloc(&w->alloc, bytes, 64) : NULL;
  if (most && !ev)
    return WEFT_ENOMEM;
  uint64_t *open = (uint64_t *)(ev + most);
  double ns = weft__ns_per_tick(&s->clock);
  put_meta(j, "process_name", 0, "name", "weft", 0);
  for (uint32_t k = 0; k < s->nslots; k++) {
    if (!s->slots[k].nspans)
      continue; /* a lane with nothing on it is noise */
    /* tid 0 means "the process" to some readers: lanes count from 1. */
    uint32_t tid = k + 1;
    char name[32];
    if (k + 1 == s->nslots)
      snprintf(name, sizeof name, "driver");
    else
      snprintf(name, sizeof name, "worker %u", k);
    put_meta(j, "thread_name", tid, "name", name, 0);
    put_meta(j, "thread_sort_index", tid, "sort_index", NULL, k);
    write_spans(j, s, k, tid, ns, ev, open);
  }
  if (ev)
    weft__free(ev, bytes, 64);
  return 0;
}

int weft_trace_write(weft_world_t *w, const char *path) {
  WEFT_CHECK(w, w && path, WEFT_EINVAL, "NULL argument");
  weft__sched_t *s = weft__sched_of(w);
  WEFT_CHECK(w, s && s->trace_cap, WEFT_EINVAL,
             "no trace was started (weft_trace_start)");
  FILE *f = fopen(path, "w");
  WEFT_CHECK(w, f, WEFT_EIO, "cannot open %s: %s", path, strerror(errno));
  uint64_t dropped = 0;
  for (uint32_t k = 0; k < s->nslots; k++)
    dropped += s->slots[k].dropped;
  weft__json_t j;
  weft__json_init(&j, f, 2); /* one event a line */
  weft__json_object(&j);
  weft__json_key(&j, "traceEvents");
  weft__json_array(&j);
  int rc = write_lanes(w, &j, s);
  weft__json_end(&j);
  weft__json_kstr(&j, "displayTimeUnit", "ns");
  weft__json_key(&j, "otherData");
  weft__json_object(&j);
  weft__json_ku64(&j, "dropped", dropped);
  weft__json_end(&j);
  weft__json_end(&j);
  int bad = weft__json_finish(&j) != 0;
  bad |= fclose(f) != 0;
  if (rc)
    return weft__fail(w, rc, WEFT__FILE, WEFT__LINE,
                      "out of memory for the trace of %s", path);
  WEFT_CHECK(w, !bad, WEFT_EIO, "cannot write %s", path);
  return 0;
}
