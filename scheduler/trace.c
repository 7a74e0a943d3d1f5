/* SPDX-License-Identifier: MIT */
/*
 * Frame traces: each worker slot records spans (system jobs, inline runs,
 * sync points) into its own preallocated array, so recording takes no lock
 * and allocates nothing; weft_trace_write() turns them into Chrome
 * trace-event JSON with one lane per slot and the gaps between spans of a
 * frame shown as idle.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "core/world.h"
#include "scheduler/sched.h"

/* Gaps longer than this are between frames, not idle time inside one. */
#define IDLE_GAP_MAX_NS 5000000u

void weft__trace_record(weft__sched_t *s, uint32_t k, uint32_t kind,
                        uint32_t id, uint32_t n, uint64_t t0, uint64_t t1) {
  weft__slot_t *sl = &s->slots[k];
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
  if (w && w->sched)
    w->sched->tracing = false;
}

static const char *span_name(const weft__sched_t *s, const weft__span_t *sp) {
  if (sp->kind == WEFT__SPAN_SYNC)
    return "sync";
  const weft__sys_t *y = weft__sched_sys(s, sp->id);
  return y ? y->name : "(removed system)";
}

/* Writes a JSON string, escaping what JSON requires. */
static void put_str(FILE *f, const char *str) {
  fputc('"', f);
  for (const unsigned char *c = (const unsigned char *)str; *c; c++) {
    if (*c == '"' || *c == '\\')
      fprintf(f, "\\%c", *c);
    else if (*c < 0x20)
      fprintf(f, "\\u%04x", *c);
    else
      fputc(*c, f);
  }
  fputc('"', f);
}

static void put_span(FILE *f, bool *first, const char *name, const char *cat,
                     uint32_t tid, uint64_t t0, uint64_t t1, uint64_t base,
                     uint32_t n, double ns) {
  fprintf(f, "%s\n{\"name\":", *first ? "" : ",");
  *first = false;
  put_str(f, name);
  fprintf(f,
          ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%u,"
          "\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"n\":%u}}",
          cat, tid, (double)(t0 - base) * ns / 1e3,
          (double)(t1 - t0) * ns / 1e3, n);
}

static void write_slot(FILE *f, const weft__sched_t *s, uint32_t k, bool *first,
                       double ns) {
  const weft__slot_t *sl = &s->slots[k];
  fprintf(f,
          "%s\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,"
          "\"tid\":%u,\"args\":{\"name\":\"%s %u\"}}",
          *first ? "" : ",", k, k + 1 == s->nslots ? "driver" : "worker", k);
  *first = false;
  for (uint32_t i = 0; i < sl->nspans; i++) {
    const weft__span_t *sp = &sl->spans[i];
    uint64_t t0 = sp->t0 < s->trace_t0 ? s->trace_t0 : sp->t0;
    if (i > 0) {
      uint64_t prev = sl->spans[i - 1].t1;
      if (t0 > prev && (double)(t0 - prev) * ns < IDLE_GAP_MAX_NS)
        put_span(f, first, "idle", "idle", k, prev, t0, s->trace_t0, 0, ns);
    }
    const char *cat = sp->kind == WEFT__SPAN_SYNC     ? "sync"
                      : sp->kind == WEFT__SPAN_INLINE ? "inline"
                                                      : "job";
    put_span(f, first, span_name(s, sp), cat, k, t0, sp->t1, s->trace_t0, sp->n,
             ns);
  }
}

int weft_trace_write(weft_world_t *w, const char *path) {
  WEFT_CHECK(w, w && path, WEFT_EINVAL, "NULL argument");
  const weft__sched_t *s = w->sched;
  WEFT_CHECK(w, s && s->trace_cap, WEFT_EINVAL,
             "no trace was started (weft_trace_start)");
  FILE *f = fopen(path, "w");
  WEFT_CHECK(w, f, WEFT_EIO, "cannot open %s: %s", path, strerror(errno));
  bool first = true;
  uint64_t dropped = 0;
  fputs("{\"traceEvents\":[", f);
  double ns = weft__ns_per_tick(s);
  for (uint32_t k = 0; k < s->nslots; k++) {
    write_slot(f, s, k, &first, ns);
    dropped += s->slots[k].dropped;
  }
  fprintf(f,
          "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"dropped\":%llu}}\n",
          (unsigned long long)dropped);
  int bad = ferror(f);
  bad |= fclose(f) != 0;
  WEFT_CHECK(w, !bad, WEFT_EIO, "cannot write %s", path);
  return 0;
}
