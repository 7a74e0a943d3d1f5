/* SPDX-License-Identifier: MIT */
/*
 * Planning a system's run: the chunks its query matches become visits
 * (runs of contiguous chunks with WEFT_QUERY_CHUNK_RUNS), the visits are
 * cut into jobs at every change of home node and into one part per
 * worker of that node, and the columns the system writes are stamped
 * with its version. A plan is kept from run to run while the world has
 * not changed structurally, so a steady-state frame plans nothing.
 */
#include <string.h>

#include "core/archetype.h"
#include "core/query_internal.h"
#include "core/world_view.h"
#include "scheduler/pool_internal.h"
#include "scheduler/visits.h"

bool weft__visits_chunk_changed(const weft__sys_t *y, const weft__chunk_t *c) {
  if (c->sversion > y->last_run)
    return true;
  for (uint32_t i = 0; i < y->nchanged; i++) {
    const weft__column_t *col = weft__archetype_col(c->arch, y->changed[i]);
    if (col && c->versions[col - c->arch->cols] > y->last_run)
      return true;
  }
  return false;
}

static int push_visit(weft_world_t *w, weft__sys_t *y, weft__chunk_t *c,
                      uint32_t seq, uint32_t ai, uint32_t rows, uint32_t nch) {
  if (y->nvisits == y->visits_cap &&
      weft__grow(&w->alloc, &y->visits, &y->visits_cap, y->nvisits + 1,
                 sizeof(*y->visits), 16))
    return WEFT_ENOMEM;
  y->visits[y->nvisits++] =
      (weft__visit_t){c, seq, ai, (uint32_t)y->rows, rows, nch};
  y->rows += rows;
  return 0;
}

/* How many chunks from a->chunks[k] one visit covers: with CHUNK_RUNS,
 * full chunks whose arrays continue each other, up to `batch` rows (so
 * that lazy halving still has something to split); else one. */
static uint32_t run_length(const weft__sys_t *y, const weft__archetype_t *a,
                           uint32_t k, uint32_t *rows) {
  const weft__chunk_t *cur = a->chunks[k];
  uint32_t n = 1;
  *rows = cur->count;
  if (!(y->query->flags & WEFT_QUERY_CHUNK_RUNS) || !a->contiguous ||
      y->nchanged)
    return 1;
  while (k + n < a->nchunks && cur->count == a->row_cap) {
    const weft__chunk_t *next = a->chunks[k + n];
    if (next->entities != cur->entities + a->row_cap ||
        *rows + next->count > y->batch)
      break;
    *rows += next->count;
    cur = next;
    n++;
  }
  return n;
}

/* Records archetype match m for the visits that follow: its arrays and the
 * columns the system stamps, resolved once per archetype, not per chunk. */
static int push_arch(weft_world_t *w, weft__sys_t *y, uint32_t mi) {
  const weft__match_t *m = &y->query->matches[mi];
  if (y->narch == y->arch_cap && weft__grow(&w->alloc, &y->arch, &y->arch_cap,
                                            y->narch + 1, sizeof(*y->arch), 8))
    return WEFT_ENOMEM;
  weft__ainfo_t *ai = &y->arch[y->narch++];
  ai->match = mi;
  ai->nstamp = 0;
  ai->ndirty = 0;
  for (uint32_t i = 0; i < y->nwcols; i++) {
    const weft__column_t *col = weft__archetype_col(m->arch, y->wcols[i]);
    if (col)
      ai->stamp[ai->nstamp++] = (uint16_t)(col - m->arch->cols);
    if (col && col->dirty && weft__mask_test(&y->dwrites, y->wcols[i]))
      ai->dirty[ai->ndirty++] = (uint16_t)(col->dirty - 1u);
  }
  return 0;
}

void weft__visits_mark_dirty(const weft__sys_t *y, const weft__visit_t *vi) {
  const weft__ainfo_t *ai = &y->arch[vi->ai];
  const weft__archetype_t *a = vi->chunk->arch;
  const uint32_t first = a->narrays - a->ndirty;
  const uint64_t tick = y->world->tick;
  for (uint32_t c = 0; c < vi->nch; c++) {
    weft__chunk_t *ch = a->chunks[vi->chunk->index + c];
    for (uint32_t i = 0; i < ai->ndirty; i++) {
      uint32_t k = ai->dirty[i];
      /* The chunk's all-rows-dirty flag, not a byte per row (core/dirty.c);
       * no reader or other writer of the column runs meanwhile. */
      if (k < WEFT__ALL_DIRTY_COLS)
        __atomic_store_n(&ch->all_dirty[k], (uint8_t)WEFT__ALL_DIRTY,
                         __ATOMIC_RELAXED);
      else
        memset(ch->bases[first + k], 1, ch->count);
      /* Relaxed: a callback's weft_get_mut() may stamp it too. */
      if (__atomic_load_n(&ch->ticks[k], __ATOMIC_RELAXED) != tick)
        __atomic_store_n(&ch->ticks[k], tick, __ATOMIC_RELAXED);
    }
  }
}

static int push_job(weft_world_t *w, weft__sys_t *y, uint32_t first,
                    uint32_t count) {
  if (y->njobs == y->jobs_cap && weft__grow(&w->alloc, &y->jobs, &y->jobs_cap,
                                            y->njobs + 1, sizeof(*y->jobs), 8))
    return WEFT_ENOMEM;
  uint32_t node = count ? y->visits[first].chunk->node : WEFT_WORKER_EXTERNAL;
  y->jobs[y->njobs++] = (weft__job_t){y, first, count, node};
  return 0;
}

/*
 * The safety net for the `write` list (system.h, "Change versions"): a
 * system may write those components in any entity, through pointers that
 * stamp nothing, so every chunk that holds one is stamped with the run's
 * version, when the run is planned, as a query system's own chunks are.
 * Skipped for WEFT_SYSTEM_TRACKED_WRITES, whose writes stamp exactly the
 * chunks they touch.
 */
static void stamp_write_list(weft_world_t *w, const weft__sys_t *y) {
  if (!y->list_stamps)
    return;
  for (uint32_t i = 0; i < y->nwcols; i++) {
    const weft_component_t comp = y->wcols[i];
    if (!weft__mask_test(&y->xwrites, comp))
      continue; /* written through the query's own chunks only */
    for (uint32_t a = 0; a < w->arch_count; a++) {
      const weft__archetype_t *arch = w->archs[a];
      const weft__column_t *col = weft__archetype_col(arch, comp);
      for (uint32_t k = 0; col && k < arch->nchunks; k++)
        weft__chunk_stamp(arch->chunks[k], (uint32_t)(col - arch->cols),
                          y->version);
    }
  }
}

/* A task makes one call; its one job never changes. */
int weft__visits_plan_task(weft_world_t *w, weft__sys_t *y) {
  stamp_write_list(w, y);
  y->nvisits = 0;
  y->ncalls = 1;
  y->rows = 0;
  y->one_view = false;
  if (!y->jobs_cap && push_job(w, y, 0, 0))
    return WEFT_ENOMEM;
  y->njobs = 1;
  y->plan_version = w->version;
  y->plan_archs = w->arch_born;
  return 0;
}

/*
 * Stamps every chunk the run visits, when the run is planned: before any
 * system of the segment runs, so that a later system's `changed` filter,
 * planned at the same time, sees the writes. Segments with no such filter
 * leave the stamps to the jobs instead (stamp_late, see graph.c), each
 * job its own range before its first call (run_visits()): one header line
 * and a few stores per visit, which on the serial path before anything
 * runs leave the workers idle.
 */
static void stamp_at_plan(weft__sys_t *y) {
  if (!y->nwcols || y->stamp_late)
    return;
  weft__visits_stamp_range(y, 0, y->nvisits);
}

/* The number of workers in the pool's group on NUMA node @p node. */
static uint32_t node_workers(const weft_pool_t *pool, uint32_t node) {
  const weft_plan_t *plan = weft_pool_plan(pool);
  for (uint32_t g = 0, n = weft_plan_groups(plan); g < n; g++) {
    uint32_t gn;
    uint32_t k = weft_plan_group(plan, g, &gn, NULL);
    if (gn == node)
      return k;
  }
  return 0;
}

/*
 * Cuts visits [first, end), all on one home node, into jobs: one part per
 * worker of that node's group, of nearly equal rows (fewer parts when one
 * would hold less than a batch; one job without a pool). At the start of
 * a run every idle worker can take a whole part at once, where one job
 * per system had to be halved again and again (a steal and a split per
 * halving) before all workers were busy.
 * Which worker takes which part is the launch's business (pipeline.c,
 * launch()): in segments without a main-thread system, part k stays with
 * worker k from frame to frame. Part k is not routed to worker k through
 * mailboxes: a worker then
 * waited for its own part instead of taking whichever was left.
 */
static int push_parts(weft_world_t *w, weft__sys_t *y, uint32_t first,
                      uint32_t end) {
  const weft_pool_t *pool = w->pool;
  uint32_t parts = pool ? node_workers(pool, y->visits[first].chunk->node) : 0;
  const uint64_t base = weft__visits_rows_before(y, first);
  const uint64_t rows = weft__visits_rows_before(y, end) - base;
  if (parts > rows / y->batch)
    parts = (uint32_t)(rows / y->batch);
  if (parts < 2)
    return push_job(w, y, first, end - first);
  for (uint32_t k = 0, a = first; k < parts && a < end; k++) {
    uint32_t b = end;
    if (k + 1 < parts) {
      const uint64_t to = base + rows * (k + 1) / parts;
      for (b = a + 1; b < end && weft__visits_rows_before(y, b) < to;)
        b++;
    }
    if (push_job(w, y, a, b - a))
      return WEFT_ENOMEM;
    a = b;
  }
  return 0;
}

/* Makes the iterator of each visit when there are few (sched.h, views):
 * the plan outlives many runs, and a small system's run then fills none.
 * Not with a `changed` filter, whose plan lasts one run. */
static int make_views(weft_world_t *w, weft__sys_t *y) {
  y->nviews = 0;
  if (y->nvisits > WEFT__VIEWS_MAX || y->nchanged)
    return 0;
  if (y->nvisits > y->views_cap &&
      weft__grow(&w->alloc, &y->views, &y->views_cap, y->nvisits,
                 sizeof(*y->views), 16))
    return WEFT_ENOMEM;
  const weft__match_t *matches = y->query->matches;
  for (uint32_t i = 0; i < y->nvisits; i++) {
    const weft__visit_t *v = &y->visits[i];
    weft_iter_t *it = &y->views[i];
    weft__visits_iter_open(it, w);
    it->terms_ = y->terms;
    it->term_count_ = y->nterms;
    weft__visits_view(it, &matches[y->arch[v->ai].match], v->chunk, v->rows,
                      y->nterms);
  }
  y->nviews = y->nvisits;
  return 0;
}

/*
 * Lists the chunks the system visits this run and cuts them into jobs at
 * every change of home node, and each such run into one part per worker
 * (push_parts()); a job splits further, in halves down to
 * `batch` rows, only while some worker is idle (job_main). Every cut falls
 * between chunks, and commands and events are keyed per chunk, so where
 * the cuts fall never changes the result. A plan is kept while the world
 * has not changed structurally (and the system has no `changed` filter).
 * Allocates only when the world grew.
 */
int weft__visits_plan_system(weft_world_t *w, weft__sys_t *y) {
  stamp_write_list(w, y);
  if (weft__visits_plan_holds(w, y)) {
    y->njobs = y->nplanned;       /* drop last run's splits */
    y->plan_archs = w->arch_born; /* no new archetype matched */
    stamp_at_plan(y);
    return 0;
  }
  y->planned = false;
  y->plan_version = UINT64_MAX; /* holds for no world version */
  y->nviews = 0;
  y->nvisits = y->njobs = y->narch = y->ncalls = 0;
  y->rows = 0;
  const weft_query_t *q = y->query;
  uint32_t seq = 0;
  for (uint32_t m = 0; m < q->nmatches; m++) {
    const weft__archetype_t *a = q->matches[m].arch;
    if (!a->count) {
      seq += a->nchunks;
      continue;
    }
    if (push_arch(w, y, m))
      return WEFT_ENOMEM;
    for (uint32_t k = 0, n; k < a->nchunks; k += n, seq += n) {
      weft__chunk_t *c = a->chunks[k];
      n = 1;
      if (c->count == 0 || (y->nchanged && !weft__visits_chunk_changed(y, c)))
        continue;
      uint32_t rows;
      n = run_length(y, a, k, &rows);
      if (push_visit(w, y, c, seq, y->narch - 1, rows, n))
        return WEFT_ENOMEM;
    }
  }
  /* Room for every split: at most one job per visit. */
  if (y->nvisits > y->jobs_cap && weft__grow(&w->alloc, &y->jobs, &y->jobs_cap,
                                             y->nvisits, sizeof(*y->jobs), 8))
    return WEFT_ENOMEM;
  uint32_t first = 0;
  for (uint32_t i = 0; i < y->nvisits; i++)
    if (i + 1 == y->nvisits ||
        y->visits[i + 1].chunk->node != y->visits[first].chunk->node) {
      if (push_parts(w, y, first, i + 1))
        return WEFT_ENOMEM;
      first = i + 1;
    }
  y->ncalls = y->nvisits;
  if (make_views(w, y))
    return WEFT_ENOMEM;
  /* One visit through its iterator; its key, the chunk's sequence in
   * bits 16-39, must hold the whole sequence for ctx->chunk. */
  y->one_view =
      y->nviews == 1 && !y->stamp_late && y->visits[0].seq <= 0xffffffu;
  y->key0 = y->key_base | WEFT_CMD_KEY(0, y->nvisits ? y->visits[0].seq : 0, 0);
  y->nplanned = y->njobs;
  y->plan_version = w->version;
  y->plan_archs = w->arch_born;
  y->plan_matches = q->nmatches;
  y->planned = true;
  stamp_at_plan(y);
  return 0;
}
