/* SPDX-License-Identifier: MIT */
/*
 * Building the schedule: per phase, the dependency graph of its systems
 * (explicit before/after edges plus conflict edges), the cycle check, a
 * deterministic dependency order and the sync segments.
 *
 * Conflict edges are directed by a linear order of the explicit graph
 * (earliest registered first among the ready), not by bare registration
 * order: then an explicit `before` can reverse the default direction of a
 * conflict without creating a cycle, and every cycle the build reports is
 * one the user wrote.
 */
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "core/world_view.h"
#include "scheduler/sched.h"

/* A square bit matrix over a phase's systems. */
typedef struct bits_t {
  uint64_t *w;
  uint32_t n, words; /* words per row */
} bits_t;

static bool bit(const bits_t *m, uint32_t i, uint32_t j) {
  return m->w[(size_t)i * m->words + j / 64] >> (j % 64) & 1;
}

static void setbit(bits_t *m, uint32_t i, uint32_t j) {
  m->w[(size_t)i * m->words + j / 64] |= 1ull << (j % 64);
}

static int bits_new(weft_world_t *w, bits_t *m, uint32_t n) {
  m->n = n;
  m->words = (n + 63) / 64;
  m->w = weft__calloc(&w->alloc, (size_t)n * m->words * 8 + 8, 16);
  return m->w ? 0 : WEFT_ENOMEM;
}

static void bits_free(bits_t *m) {
  weft__free(m->w, 0, 16);
  m->w = NULL;
}

static bool meets(const weft__mask_t *a, const weft__mask_t *b) {
  return weft__mask_intersects(a, b);
}

/* Queries that can never match the same archetype (With/Without). */
static bool disjoint(const weft__sys_t *a, const weft__sys_t *b) {
  return a->query && b->query &&
         (meets(&a->q_include, &b->q_exclude) ||
          meets(&b->q_include, &a->q_exclude));
}

/* Read/write or write/write on something both touch. */
static bool rw(const weft__mask_t *ar, const weft__mask_t *aw,
               const weft__mask_t *br, const weft__mask_t *bw) {
  return meets(aw, br) || meets(aw, bw) || meets(bw, ar);
}

static bool conflict(const weft__sys_t *a, const weft__sys_t *b) {
  if ((a->flags | b->flags) & WEFT_SYSTEM_EXCLUSIVE)
    return true;
  if (rw(&a->res_read, &a->res_write, &b->res_read, &b->res_write))
    return true;
  if (meets(&a->emit, &b->receive) || meets(&b->emit, &a->receive))
    return true;
  /* Access through the extra lists may reach any entity: no exemption.
   * Only data access counts; a filter term (WEFT_ACCESS_NONE) reads none. */
  if (meets(&a->xwrites, &b->reads) || meets(&a->xwrites, &b->writes) ||
      meets(&b->xwrites, &a->reads) || meets(&b->xwrites, &a->writes) ||
      meets(&a->writes, &b->xreads) || meets(&b->writes, &a->xreads))
    return true;
  return rw(&a->reads, &a->writes, &b->reads, &b->writes) && !disjoint(a, b);
}

/* True when b must see what a's commands or events change. */
static bool needs_sync(const weft__sys_t *a, const weft__sys_t *b) {
  if (meets(&a->cmd, &b->touch) || meets(&a->emit, &b->receive))
    return true;
  return (a->flags & WEFT_SYSTEM_DESPAWNS) && !disjoint(a, b) &&
         meets(&a->q_include, &b->touch);
}

static weft__sys_t *find(weft__sys_t **l, uint32_t n, const char *name) {
  for (uint32_t i = 0; i < n; i++)
    if (strcmp(l[i]->name, name) == 0)
      return l[i];
  return NULL;
}

/*
 * Kahn's algorithm over matrix m (i -> j), taking the earliest registered
 * ready system each time. Fills out[0..n) and returns how many it placed:
 * fewer than n means a cycle among the rest.
 */
static uint32_t toposort(const bits_t *m, uint32_t *indeg, uint32_t *out) {
  uint32_t n = m->n, placed = 0;
  for (uint32_t j = 0; j < n; j++) {
    indeg[j] = 0;
    for (uint32_t i = 0; i < n; i++)
      indeg[j] += bit(m, i, j);
  }
  for (;;) {
    uint32_t pick = n;
    for (uint32_t j = 0; j < n && pick == n; j++)
      if (indeg[j] == 0)
        pick = j;
    if (pick == n)
      return placed;
    indeg[pick] = UINT32_MAX; /* placed */
    out[placed++] = pick;
    for (uint32_t j = 0; j < n; j++)
      if (bit(m, pick, j) && indeg[j] != UINT32_MAX)
        indeg[j]--;
  }
}

/* Names the systems of a cycle among the unplaced ones (indeg not MAX). */
static int cycle_error(weft_world_t *w, const weft__phase_t *p, weft__sys_t **l,
                       const bits_t *m, const uint32_t *indeg, uint32_t *walk) {
  uint32_t n = m->n, v = 0;
  while (indeg[v] == UINT32_MAX)
    v++;
  /* Every unplaced system has an unplaced predecessor: walk back until a
   * system repeats; the stretch from its first visit is a cycle. */
  uint32_t len = 0;
  for (;;) {
    for (uint32_t k = 0; k < len; k++)
      if (walk[k] == v) {
        char msg[200];
        size_t at = 0;
        msg[0] = 0;
        for (uint32_t q = len; q > k && at < sizeof(msg); q--)
          at += (size_t)snprintf(msg + at, sizeof(msg) - at, "%s -> ",
                                 l[walk[q - 1]]->name);
        if (at < sizeof(msg))
          snprintf(msg + at, sizeof(msg) - at, "%s", l[walk[len - 1]]->name);
        return weft__fail(w, WEFT_ECYCLE, WEFT__FILE, WEFT__LINE,
                          "phase %s: systems ordered in a cycle: %s", p->name,
                          msg);
      }
    walk[len++] = v;
    uint32_t u = 0;
    while (u < n && !(indeg[u] != UINT32_MAX && bit(m, u, v)))
      u++;
    v = u;
  }
}

/* Explicit before/after edges among the phase's systems. */
static void explicit_edges(weft__sys_t **l, uint32_t n, bits_t *m) {
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t k = 0; k < WEFT_SYSTEM_MAX_ORDER; k++) {
      weft__sys_t *b = l[i]->before[k] ? find(l, n, l[i]->before[k]) : NULL;
      weft__sys_t *a = l[i]->after[k] ? find(l, n, l[i]->after[k]) : NULL;
      for (uint32_t j = 0; j < n; j++) {
        if (b == l[j] && j != i)
          setbit(m, i, j);
        if (a == l[j] && j != i)
          setbit(m, j, i);
      }
    }
}

/* Sync segments in dependency order (see schedule.h for the rules). */
static uint32_t segments(weft__sys_t **l, const bits_t *m, const bits_t *anc,
                         const uint32_t *topo) {
  uint32_t n = m->n, floor = 0, top = 0, nseg = n ? 1 : 0;
  for (uint32_t t = 0; t < n; t++) {
    uint32_t v = topo[t];
    weft__sys_t *b = l[v];
    uint32_t seg = floor;
    for (uint32_t u = 0; u < n; u++) {
      if (!bit(anc, v, u))
        continue;
      uint32_t need = l[u]->segment + (needs_sync(l[u], b) ? 1 : 0);
      if (need > seg)
        seg = need;
    }
    bool alone = b->flags & WEFT_SYSTEM_EXCLUSIVE;
    if ((alone || (b->flags & WEFT_SYSTEM_COMMIT_BEFORE)) && t > 0 &&
        top + 1 > seg)
      seg = top + 1;
    b->segment = seg;
    if (seg > top)
      top = seg;
    if (alone || (b->flags & WEFT_SYSTEM_COMMIT_AFTER))
      floor = seg + 1;
    if (seg + 1 > nseg)
      nseg = seg + 1;
  }
  return nseg;
}

/* A system phase @p ph schedules: a spent one (a run-once phase's system
 * that ran) is out, so its phase never visits it again. */
static bool member(const weft__sys_t *y, weft_phase_t ph) {
  return y && y->phase == ph && !y->spent;
}

static int build_phase(weft_world_t *w, weft__sched_t *s, weft_phase_t ph) {
  weft__phase_t *p = &s->phases[ph];
  uint32_t n = 0;
  for (uint32_t i = 0; i < s->nsys; i++)
    if (member(s->sys[i], ph))
      n++;
  p->n = 0;
  p->nseg = 0;
  if (n == 0)
    return 0;
  int rc = weft__grow(&w->alloc, &p->order, &p->cap, n, sizeof(*p->order), 8);
  if (!rc)
    rc = weft__grow(&w->alloc, &p->seg_end, &p->seg_cap, n, sizeof(*p->seg_end),
                    8);
  WEFT_CHECK(w, rc == 0, rc, "out of memory building the schedule");
  weft__sys_t **l = p->order; /* registration order first */
  for (uint32_t i = 0; i < s->nsys; i++)
    if (member(s->sys[i], ph))
      l[p->n++] = s->sys[i];
  bits_t m = {0}, anc = {0};
  uint32_t *scratch = weft__alloc(&w->alloc, (size_t)n * 3 * 4, 16);
  rc = scratch ? bits_new(w, &m, n) : WEFT_ENOMEM;
  if (!rc)
    rc = bits_new(w, &anc, n);
  if (rc) {
    weft__free(scratch, 0, 16);
    bits_free(&m);
    return weft__fail(w, WEFT_ENOMEM, WEFT__FILE, WEFT__LINE,
                      "out of memory building the schedule");
  }
  uint32_t *indeg = scratch, *topo = scratch + n, *pos = scratch + 2 * n;
  explicit_edges(l, n, &m);
  if (toposort(&m, indeg, topo) < n) {
    rc = cycle_error(w, p, l, &m, indeg, topo);
    p->n = 0;
    goto out;
  }
  for (uint32_t t = 0; t < n; t++)
    pos[topo[t]] = t;
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t j = i + 1; j < n; j++)
      if (conflict(l[i], l[j])) {
        if (pos[i] < pos[j])
          setbit(&m, i, j);
        else
          setbit(&m, j, i);
      }
  toposort(&m, indeg, topo);         /* acyclic: every edge follows pos */
  for (uint32_t t = 0; t < n; t++) { /* ancestors, in dependency order */
    uint32_t v = topo[t];
    for (uint32_t u = 0; u < n; u++)
      if (bit(&m, u, v)) {
        setbit(&anc, v, u);
        for (uint32_t q = 0; q < anc.words; q++)
          anc.w[(size_t)v * anc.words + q] |= anc.w[(size_t)u * anc.words + q];
      }
  }
  p->nseg = segments(l, &m, &anc, topo);
  /* Successor lists (ids) and same-segment predecessor counts. */
  for (uint32_t i = 0; i < n && !rc; i++) {
    weft__sys_t *a = l[i];
    a->nsucc = 0;
    a->npred = 0;
    for (uint32_t j = 0; j < n && !rc; j++) {
      if (!bit(&m, i, j))
        continue;
      rc = weft__grow(&w->alloc, &a->succ, &a->succ_cap, a->nsucc + 1,
                      sizeof(*a->succ), 4);
      if (!rc)
        a->succ[a->nsucc++] = l[j];
    }
    for (uint32_t j = 0; j < n; j++)
      a->npred += bit(&m, j, i) && l[j]->segment == a->segment;
  }
  if (rc) {
    rc = weft__fail(w, rc, WEFT__FILE, WEFT__LINE, "out of memory");
    p->n = 0;
    goto out;
  }
  /* Final order: by segment, then dependency order. */
  weft__sys_t **tmp = (weft__sys_t **)(void *)anc.w; /* n pointers fit */
  for (uint32_t t = 0; t < n; t++)
    tmp[t] = l[topo[t]];
  uint32_t k = 0;
  for (uint32_t g = 0; g < p->nseg; g++) {
    for (uint32_t t = 0; t < n; t++)
      if (tmp[t]->segment == g) {
        tmp[t]->order = k;
        tmp[t]->key_base = WEFT_CMD_KEY(k, 0, 0);
        /* Its plan holds a key made for the old order. */
        tmp[t]->planned = false;
        tmp[t]->plan_version = UINT64_MAX;
        l[k++] = tmp[t];
      }
    p->seg_end[g] = k;
  }
  /* Without a `changed` filter in a segment, nothing reads a run's stamps
   * before its jobs end: the jobs stamp the chunks they visit (visits.c,
   * stamp_at_plan()). A segment is plain (pipeline.c, run_plain()) when,
   * moreover, no system has a run condition, a `write` list to stamp
   * everywhere, or runs exclusive. Decided here, once per build. */
  for (uint32_t g = 0, b = 0; g < p->nseg; b = p->seg_end[g++]) {
    bool changed = false, plain = true;
    for (uint32_t i = b; i < p->seg_end[g]; i++) {
      changed |= l[i]->nchanged != 0;
      plain &= !l[i]->run_if && !l[i]->list_stamps &&
               !(l[i]->flags & WEFT_SYSTEM_EXCLUSIVE);
    }
    for (uint32_t i = b; i < p->seg_end[g]; i++) {
      l[i]->stamp_late = !changed && l[i]->nwcols;
      l[i]->seg_plain = plain && !changed;
    }
  }
out:
  bits_free(&m);
  bits_free(&anc);
  weft__free(scratch, 0, 16);
  return rc;
}

int weft__sched_build(weft_world_t *w, weft__sched_t *s) {
  if (!s)
    return WEFT_ENOMEM;
  /* A frame keeps the schedule it started with: changes apply from the
   * next dispatch. */
  if (!s->dirty || s->running)
    return s->build_rc;
  int rc = 0;
  s->state.builds++;
  for (weft_phase_t ph = 1; ph <= s->nphases && !rc; ph++)
    rc = build_phase(w, s, ph);
  if (rc)
    for (weft_phase_t ph = 1; ph <= s->nphases; ph++)
      s->phases[ph].n = 0; /* nothing runs until the cycle is gone */
  s->build_rc = rc;
  s->dirty = rc == WEFT_ENOMEM; /* retry after a memory failure */
  return rc;
}

int weft__graph_build_phase(weft_world_t *w, weft__sched_t *s,
                            weft_phase_t ph) {
  /* A subset of a graph that built is acyclic: only memory can fail. */
  int rc = build_phase(w, s, ph);
  if (rc)
    s->dirty = true;
  return rc;
}

void weft__graph_fini(weft_world_t *w, weft__sched_t *s) {
  (void)w;
  for (weft_phase_t ph = 1; ph <= s->nphases; ph++) {
    weft__phase_t *p = &s->phases[ph];
    weft__free(p->order, 0, 16);
    weft__free(p->seg_end, 0, 16);
    p->order = NULL;
    p->seg_end = NULL;
    p->n = p->cap = p->nseg = p->seg_cap = 0;
  }
  s->dirty = true;
}
