/* SPDX-License-Identifier: MIT */
/*
 * The system and phase registry: descriptors are validated and copied into
 * weft__sys_t records, access lists become masks, and any change marks the
 * schedule dirty so that graph.c rebuilds it before the next dispatch.
 */
#include <string.h>

#include "core/check.h"
#include "core/query_internal.h"
#include "core/resource_internal.h"
#include "core/world_view.h"
#include "scheduler/pool_internal.h"
#include "scheduler/sched.h"

static const char *const builtin_names[] = {
    NULL,          "PreUpdate", "FixedUpdate", "PostFixedUpdate",
    "NetworkTick", "PreRender", "Startup",     "Shutdown"};
_Static_assert(sizeof(builtin_names) / sizeof(builtin_names[0]) ==
                   WEFT__PHASE_BUILTINS + 1,
               "a name for every built-in phase");

static char *dupname(weft_world_t *w, const char *s) {
  size_t n = strlen(s) + 1;
  char *d = weft__alloc(&w->alloc, n, 1);
  if (d)
    memcpy(d, s, n);
  return d;
}

static void freename(char *s) {
  if (s)
    weft__free(s, strlen(s) + 1, 1);
}

/* Slots: one per pool worker plus the driving thread, each with its own
 * command buffer. */
static int make_slots(weft_world_t *w, weft__sched_t *s) {
  uint32_t workers = s->pool ? weft_pool_workers(s->pool) : 0;
  s->nslots = workers + 1;
  s->slots = weft__calloc(&w->alloc, s->nslots * sizeof(*s->slots), 64);
  if (!s->slots)
    return WEFT_ENOMEM;
  s->bufs = weft__calloc(&w->alloc, s->nslots * sizeof(*s->bufs), 16);
  if (!s->bufs)
    return WEFT_ENOMEM;
  for (uint32_t k = 0; k < s->nslots; k++) {
    uint32_t live = w->txn.live_bufs;
    int rc = weft_cmdbuf_create(w, &s->slots[k].cmd);
    /* Ids are a world-wide table: say what the scheduler needed. */
    WEFT_CHECK(w, rc != WEFT_ELIMIT, WEFT_ELIMIT,
               "the scheduler needs %u command buffers (one per worker slot) "
               "but the world already holds %u of at most WEFT_CMDBUF_MAX "
               "(%u)",
               s->nslots, live - k, WEFT_CMDBUF_MAX);
    if (rc)
      return rc;
    weft__cmdbuf_own(s->slots[k].cmd); /* ctx->cmd: not the user's to free */
    s->bufs[k] = s->slots[k].cmd;
  }
  if (weft__events_slots(w, s->nslots))
    return WEFT_ENOMEM;
  s->main_self = WEFT_WORKER_EXTERNAL;
  if (s->pool && s->pool->first_thread)
    s->main_self = 0; /* the caller is worker 0 */
  return 0;
}

int weft__sched_open(weft_world_t *w, weft__sched_t **out) {
  *out = weft__sched_of(w);
  if (*out)
    return 0;
  weft__sched_t *s = weft__calloc(&w->alloc, sizeof(*s), 64);
  WEFT_CHECK(w, s, WEFT_ENOMEM, "out of memory creating the scheduler");
  weft__world_ext_set(w, WEFT__EXT_SCHED, s, weft__sched_fini);
  s->pool = w->pool;
  int rc = 0;
  for (uint32_t p = 1; p <= WEFT__PHASE_BUILTINS && !rc; p++) {
    s->phases[p].name = dupname(w, builtin_names[p]);
    s->phases[p].enabled = true;
    if (s->phases[p].name)
      s->nphases = p; /* what weft__sched_fini() frees */
    else
      rc = WEFT_ENOMEM;
  }
  weft__clock_start(&s->clock);
  s->cfg = (weft_pipeline_config_t){
      1.0 / 60.0, 8, WEFT_OVERLOAD_DROP, 1.0 / 30.0, 4096, false, false};
  s->dirty = true;
  if (!rc)
    rc = make_slots(w, s);
  if (!rc)
    rc = weft__pipeline_snapshot_register(w);
  if (rc) {
    weft__sched_fini(w);
    if (rc == WEFT_ENOMEM)
      weft__fail(w, rc, WEFT__FILE, WEFT__LINE,
                 "out of memory creating the scheduler");
    return rc;
  }
  *out = s;
  return 0;
}

weft__sched_t *weft__sched_get(weft_world_t *w) {
  weft__sched_t *s = NULL;
  return weft__sched_open(w, &s) == 0 ? s : NULL;
}

static void sys_free(weft_world_t *w, weft__sys_t *y) {
  freename(y->name);
  for (uint32_t i = 0; i < WEFT_SYSTEM_MAX_ORDER; i++) {
    freename(y->before[i]);
    freename(y->after[i]);
  }
  weft_query_destroy(y->query);
  weft__free(y->succ, 0, 16);
  weft__free(y->visits, 0, 16);
  weft__free(y->jobs, 0, 16);
  weft__free(y->arch, 0, 16);
  weft__free(y->views, 0, 16);
  weft__free(y, sizeof(*y), 64);
  (void)w;
}

void weft__sched_fini(weft_world_t *w) {
  weft__sched_shutdown(w);
  weft__sched_t *s = weft__sched_of(w);
  if (!s)
    return;
  weft__graph_fini(w, s);
  weft__trace_fini(w, s);
  for (uint32_t i = 0; i < s->nsys; i++)
    if (s->sys[i])
      sys_free(w, s->sys[i]);
  weft__free(s->sys, 0, 16);
  for (uint32_t p = 1; p <= s->nphases; p++)
    freename(s->phases[p].name);
  for (uint32_t k = 0; s->slots && k < s->nslots; k++)
    if (s->slots[k].cmd)
      weft__cmdbuf_free(s->slots[k].cmd);
  weft__free(s->slots, 0, 64);
  weft__free(s->bufs, 0, 16);
  weft__free(s, sizeof(*s), 64);
  weft__world_ext_set(w, WEFT__EXT_SCHED, NULL, NULL);
}

/* ---- descriptors -------------------------------------------------------- */

static bool query_empty(const weft_query_desc_t *q) {
  return !q->include[0] && !q->any[0] && !q->disabled[0] && !q->exclude[0];
}

/* Adds a zero-terminated component list to a mask. */
static int comp_list(weft_world_t *w, const weft_component_t *l,
                     weft__mask_t *m, const char *what) {
  for (uint32_t i = 0; i < WEFT_SYSTEM_MAX_ACCESS && l[i]; i++) {
    WEFT_CHECK(w, weft__registry_get(&w->registry, l[i]), WEFT_ENOCOMP,
               "system %s list names unknown component %u", what, l[i]);
    weft__mask_set(m, l[i]);
  }
  WEFT_CHECK(w, l[WEFT_SYSTEM_MAX_ACCESS] == 0, WEFT_ETOOMANY,
             "system %s list is not zero-terminated", what);
  return 0;
}

static int res_list(weft_world_t *w, const uint32_t *l, weft__mask_t *m,
                    bool channel, const char *what) {
  for (uint32_t i = 0; i < WEFT_SYSTEM_MAX_ACCESS && l[i]; i++) {
    bool ok = channel ? weft__channel_exists(w, l[i])
                      : weft_resource_size(w, l[i]) != 0;
    WEFT_CHECK(w, ok, WEFT_ENONAME, "system %s list names unknown id %u", what,
               l[i]);
    weft__mask_set(m, l[i]);
  }
  WEFT_CHECK(w, l[WEFT_SYSTEM_MAX_ACCESS] == 0, WEFT_ETOOMANY,
             "system %s list is not zero-terminated", what);
  return 0;
}

/* Derives the data access masks from the query terms and the lists. */
static int fill_access(weft_world_t *w, weft__sys_t *y,
                       const weft_system_desc_t *d) {
  const weft_query_desc_t *q = &d->query;
  uint32_t nincl = 0;
  while (nincl < WEFT_QUERY_MAX_TERMS && q->include[nincl])
    nincl++;
  /* An access given for a term the query does not have applies to
   * nothing: a term was dropped or the index is off by one. */
  for (uint32_t t = 0; t < WEFT_QUERY_MAX_TERMS; t++) {
    uint8_t acc = d->term_access[t];
    WEFT_CHECK(w, acc <= WEFT_ACCESS_NONE, WEFT_EINVAL,
               "system %s: term_access[%u] is %u, not a WEFT_ACCESS_* value",
               d->name, t, acc);
    WEFT_CHECK(w, t < nincl || acc == WEFT_ACCESS_DEFAULT, WEFT_EINVAL,
               "system %s: term_access[%u] is set but the query has %u "
               "include terms",
               d->name, t, nincl);
  }
  for (uint32_t t = 0; t < nincl; t++) {
    weft_component_t c = q->include[t];
    uint8_t acc = d->term_access[t];
    /* The masks are indexed by the id: check it before the query does. */
    WEFT_CHECK(w, weft__registry_get(&w->registry, c), WEFT_ENOCOMP,
               "system %s: query names unknown component %u", d->name, c);
    weft__mask_set(&y->q_include, c);
    weft__mask_set(&y->touch, c);
    if (acc == WEFT_ACCESS_DEFAULT || acc == WEFT_ACCESS_READ)
      weft__mask_set(&y->reads, c);
    if (acc == WEFT_ACCESS_DEFAULT || acc == WEFT_ACCESS_WRITE)
      weft__mask_set(&y->writes, c);
  }
  /* any/disabled terms are read through column_of: read and write. */
  for (uint32_t t = 0; t < WEFT_QUERY_MAX_TERMS; t++) {
    const weft_component_t ids[3] = {q->any[t], q->disabled[t], q->exclude[t]};
    for (uint32_t k = 0; k < 3; k++)
      WEFT_CHECK(w, !ids[k] || weft__registry_get(&w->registry, ids[k]),
                 WEFT_ENOCOMP, "system %s: query names unknown component %u",
                 d->name, ids[k]);
    if (q->any[t]) {
      weft__mask_set(&y->reads, q->any[t]);
      weft__mask_set(&y->writes, q->any[t]);
    }
    if (q->disabled[t]) {
      weft__mask_set(&y->reads, q->disabled[t]);
      weft__mask_set(&y->writes, q->disabled[t]);
      weft__mask_set(&y->q_include, q->disabled[t]);
    }
    if (q->exclude[t])
      weft__mask_set(&y->q_exclude, q->exclude[t]);
  }
  weft__mask_t ch = {{0}};
  int rc = comp_list(w, d->read, &y->xreads, "read");
  if (!rc)
    rc = comp_list(w, d->write, &y->xwrites, "write");
  if (!rc)
    rc = comp_list(w, d->cmd_write, &y->cmd, "cmd_write");
  if (!rc)
    rc = comp_list(w, d->changed, &ch, "changed");
  if (!rc)
    rc = res_list(w, d->res_read, &y->res_read, false, "res_read");
  if (!rc)
    rc = res_list(w, d->res_write, &y->res_write, false, "res_write");
  if (!rc)
    rc = res_list(w, d->emit, &y->emit, true, "emit");
  if (!rc)
    rc = res_list(w, d->receive, &y->receive, true, "receive");
  if (rc)
    return rc;
  const bool tracked = d->flags & WEFT_SYSTEM_TRACKED_WRITES;
  for (uint32_t i = 0; i < WEFT__MASK_WORDS; i++) {
    y->dwrites.w[i] = y->writes.w[i] | (tracked ? 0 : y->xwrites.w[i]);
    y->reads.w[i] |= y->xreads.w[i];
    y->writes.w[i] |= y->xwrites.w[i];
    y->touch.w[i] |= y->reads.w[i] | y->writes.w[i];
  }
  /* A `changed` filter reads the versions of the chunks the query visits:
   * a component outside the query's terms has none there to compare. */
  for (uint32_t i = 0; i < WEFT_SYSTEM_MAX_ACCESS && d->changed[i]; i++) {
    weft_component_t c = d->changed[i];
    bool in_query = false;
    for (uint32_t t = 0; t < WEFT_QUERY_MAX_TERMS; t++)
      in_query |= q->include[t] == c || q->any[t] == c || q->disabled[t] == c;
    WEFT_CHECK(w, in_query, WEFT_EINVAL,
               "system %s: changed[%u] names component %u, which is not a "
               "term of its query",
               d->name, i, c);
    y->changed[y->nchanged++] = c;
  }
  /* The components whose chunk versions a run stamps: written data
   * components (tags have no column). */
  for (uint32_t c = 1; c <= w->registry.count; c++)
    if (weft__mask_test(&y->writes, c) && w->registry.items[c - 1].size != 0 &&
        y->nwcols < WEFT_QUERY_MAX_TERMS + WEFT_SYSTEM_MAX_ACCESS)
      y->wcols[y->nwcols++] = (weft_component_t)c;
  /* Whether a run stamps the `write` list's components in every chunk
   * (visits.c, stamp_write_list()): decided once here, not per run. */
  for (uint32_t i = 0; i < y->nwcols; i++)
    y->list_stamps |= !(d->flags & WEFT_SYSTEM_TRACKED_WRITES) &&
                      weft__mask_test(&y->xwrites, y->wcols[i]);
  return 0;
}

static int copy_names(weft_world_t *w, char **dst, const char *const *src) {
  for (uint32_t i = 0; i < WEFT_SYSTEM_MAX_ORDER && src[i]; i++)
    if (!(dst[i] = dupname(w, src[i])))
      return WEFT_ENOMEM;
  WEFT_CHECK(w, src[WEFT_SYSTEM_MAX_ORDER] == NULL, WEFT_ETOOMANY,
             "before/after lists hold at most %u names", WEFT_SYSTEM_MAX_ORDER);
  return 0;
}

static int check_desc(weft_world_t *w, weft__sched_t *s,
                      const weft_system_desc_t *d) {
  WEFT_CHECK(w, d->name && d->name[0], WEFT_EINVAL, "a system needs a name");
  WEFT_CHECK(w, d->run, WEFT_EINVAL, "system %s has no callback", d->name);
  weft_system_t dup;
  WEFT_CHECK(w, weft_system_lookup(w, d->name, &dup) != 0, WEFT_EEXIST,
             "a system named %s exists", d->name);
  weft_phase_t ph = d->phase ? d->phase : WEFT_PHASE_FIXED_UPDATE;
  WEFT_CHECK(w, ph <= s->nphases, WEFT_ENONAME, "system %s: unknown phase %u",
             d->name, ph);
  WEFT_CHECK(w, (d->flags & ~0x7fu) == 0, WEFT_EINVAL,
             "system %s: unknown flags 0x%x", d->name, d->flags);
  WEFT_CHECK(w, s->live < WEFT_MAX_SYSTEMS, WEFT_ETOOMANY, "at most %u systems",
             WEFT_MAX_SYSTEMS);
  /* A condition lives as long as its world: another world's would be
   * evaluated after that world freed it. */
  WEFT_CHECK(w, !d->run_if || weft__runif_owned(w, d->run_if), WEFT_EINVAL,
             "system %s: its run condition belongs to another world", d->name);
  /* A run-once system has no turn to skip: a condition that said no
   * would either drop its one run or keep the phase running every frame
   * to ask again. Gate on the callback's own state instead. */
  WEFT_CHECK(w, !d->run_if || !weft__phase_once(ph), WEFT_EINVAL,
             "system %s: a %s system runs once and takes no run condition",
             d->name, builtin_names[ph]);
  return 0;
}

int weft_system_register(weft_world_t *w, const weft_system_desc_t *d,
                         weft_system_t *out) {
  WEFT_CHECK(w, w && d && out, WEFT_EINVAL, "NULL argument");
  weft__sched_t *s;
  int open_rc = weft__sched_open(w, &s);
  if (open_rc)
    return open_rc;
  int rc = check_desc(w, s, d);
  if (rc)
    return rc;
  rc = weft__grow(&w->alloc, &s->sys, &s->sys_cap, s->nsys + 1, sizeof(*s->sys),
                  16);
  WEFT_CHECK(w, rc == 0, rc, "out of memory registering a system");
  weft__sys_t *y = weft__calloc(&w->alloc, sizeof(*y), 64);
  WEFT_CHECK(w, y, WEFT_ENOMEM, "out of memory registering a system");
  y->plan_version = UINT64_MAX; /* not planned (visits.c) */
  y->name = dupname(w, d->name);
  rc = y->name ? fill_access(w, y, d) : WEFT_ENOMEM;
  if (!rc)
    rc = copy_names(w, y->before, d->before);
  if (!rc)
    rc = copy_names(w, y->after, d->after);
  if (!rc && !query_empty(&d->query)) {
    rc = weft_query_create(w, &d->query, &y->query);
    if (!rc) {
      y->nterms = y->query->nterms;
      memcpy(y->terms, y->query->terms, sizeof(y->terms));
    }
  }
  if (rc) {
    sys_free(w, y);
    return rc == WEFT_ENOMEM
               ? weft__fail(w, rc, WEFT__FILE, WEFT__LINE,
                            "out of memory registering system %s", d->name)
               : rc;
  }
  y->phase = d->phase ? d->phase : WEFT_PHASE_FIXED_UPDATE;
  y->flags = d->flags;
  y->enabled = !(d->flags & WEFT_SYSTEM_DISABLED);
  y->run_if = d->run_if;
  y->batch = d->batch ? d->batch : WEFT_SYSTEM_BATCH_DEFAULT;
  y->run = d->run;
  y->user = d->user;
  y->id = s->nsys + 1;
  y->world = w;
  s->sys[s->nsys++] = y;
  s->live++;
  s->dirty = true;
  /* Its phase's next run times its inline systems one by one, so that
   * the newcomer's cost is known early (pipeline.c, run_serial()). */
  s->phases[y->phase].sample_next = true;
  *out = y->id;
  return 0;
}

/* A live system: not removed, also not during the frame that removed it. */
static weft__sys_t *sys_of(const weft_world_t *w, weft_system_t id) {
  weft__sys_t *y = weft__sched_sys(w ? weft__sched_of(w) : NULL, id);
  return y && !y->removed ? y : NULL;
}

/* Fails with WEFT_ENONAME unless @p id names a live system. */
#define CHECK_LIVE(w, id, y)                                                   \
  WEFT_CHECK(w, y, WEFT_ENONAME,                                               \
             weft__sched_sys((w) ? weft__sched_of(w) : NULL, id)               \
                 ? "system %u was removed during this frame"                   \
                 : "no system %u",                                             \
             id)

void weft__sched_drop(weft_world_t *w, weft__sys_t *y) {
  weft__sched_t *s = weft__sched_of(w);
  s->sys[y->id - 1] = NULL;
  s->live--;
  s->dirty = true;
  weft__graph_fini(w, s); /* the built order points at it */
  sys_free(w, y);
}

int weft_system_remove(weft_world_t *w, weft_system_t id) {
  weft__sys_t *y = sys_of(w, id);
  CHECK_LIVE(w, id, y);
  if (weft__sched_of(w)->running) {
    /* During a frame (from a callback): the system stops running now and
     * goes when the frame ends: removals affect the remaining dispatches
     * at once, and the running schedule keeps its record. From
     * here on it is gone for every call but the frame's own
     * bookkeeping. */
    y->enabled = false;
    y->retire = true;
    y->removed = true;
    weft__sched_of(w)->retiring = true;
    return 0;
  }
  weft__sched_drop(w, y);
  return 0;
}

int weft_system_enable(weft_world_t *w, weft_system_t id, bool enabled) {
  weft__sys_t *y = sys_of(w, id);
  CHECK_LIVE(w, id, y);
  y->enabled = enabled;
  return 0;
}

int weft_system_lookup(const weft_world_t *w, const char *name,
                       weft_system_t *out) {
  if (!w || !name || !out)
    return WEFT_EINVAL;
  const weft__sched_t *s = weft__sched_of(w);
  for (uint32_t i = 0; s && i < s->nsys; i++)
    if (s->sys[i] && !s->sys[i]->removed &&
        strcmp(s->sys[i]->name, name) == 0) {
      *out = s->sys[i]->id;
      return 0;
    }
  return WEFT_ENONAME;
}

int weft_system_info(weft_world_t *w, weft_system_t id,
                     weft_system_info_t *out) {
  weft__sys_t *y = sys_of(w, id);
  WEFT_CHECK(w, y && out, WEFT_ENONAME, "no system %u", id);
  int rc = weft__sched_build(w, weft__sched_of(w));
  if (rc)
    return rc;
  *out = (weft_system_info_t){
      y->name,    y->phase,   y->order,
      y->segment, y->enabled, (y->flags & WEFT_SYSTEM_EXCLUSIVE) != 0};
  return 0;
}

bool weft_system_edge(weft_world_t *w, weft_system_t a, weft_system_t b) {
  weft__sys_t *x = sys_of(w, a), *y = sys_of(w, b);
  if (!x || !y || weft__sched_build(w, weft__sched_of(w)) != 0)
    return false;
  if (x->phase != y->phase)
    return false;
  for (uint32_t i = 0; i < x->nsucc; i++)
    if (x->succ[i] == y)
      return true;
  return false;
}

int weft_system_stats(const weft_world_t *w, weft_system_t id,
                      weft_system_stats_t *out) {
  const weft__sys_t *y = sys_of(w, id);
  if (!y || !out)
    return WEFT_ENONAME;
  *out = y->stats; /* times are kept in ticks */
  double ns = weft__ns_per_tick(&weft__sched_of(w)->clock);
  out->wall_ns = (uint64_t)((double)out->wall_ns * ns);
  out->worker_ns = (uint64_t)((double)out->worker_ns * ns);
  return 0;
}

/* ---- phases ------------------------------------------------------------- */

/* Adds a user phase named @p name: anchored to @p after, or the last
 * child of @p parent (one of them is 0). */
static int add_phase(weft_world_t *w, const char *name, weft_phase_t after,
                     weft_phase_t parent, weft_phase_t *out) {
  WEFT_CHECK(w, w && name && name[0] && out, WEFT_EINVAL,
             "a phase needs a name");
  weft__sched_t *s;
  int open_rc = weft__sched_open(w, &s);
  if (open_rc)
    return open_rc;
  WEFT_CHECK(w, !s->running, WEFT_EBUSY, "phases register between frames");
  weft_phase_t dup;
  WEFT_CHECK(w, weft_phase_lookup(w, name, &dup) != 0, WEFT_EEXIST,
             "a phase named %s exists", name);
  weft_phase_t on = after ? after : parent;
  WEFT_CHECK(w, on >= 1 && on <= s->nphases, WEFT_ENONAME,
             "phase %s: unknown %s phase %u", name, after ? "anchor" : "parent",
             on);
  /* Startup and Shutdown run only their pending systems, once: a phase
   * hung off them would run once too, or with every frame that finds a
   * pending system, neither of which a phase means. */
  WEFT_CHECK(w, !weft__phase_once(on), WEFT_EINVAL,
             "phase %s: %s runs once and takes no %s", name, builtin_names[on],
             after ? "anchored phase" : "children");
  WEFT_CHECK(w, s->nphases < WEFT_MAX_PHASES, WEFT_ETOOMANY,
             "at most %u phases", WEFT_MAX_PHASES);
  weft_phase_t id = s->nphases + 1;
  weft__phase_t *p = &s->phases[id];
  p->name = dupname(w, name);
  WEFT_CHECK(w, p->name, WEFT_ENOMEM, "out of memory");
  p->anchor = after;
  p->parent = (uint8_t)parent;
  p->enabled = true;
  if (parent) { /* last among its siblings */
    uint8_t *link = &s->phases[parent].first_child;
    while (*link)
      link = &s->phases[*link].next_sibling;
    *link = (uint8_t)id;
  }
  s->nphases = id;
  *out = id;
  s->dirty = true;
  return 0;
}

int weft_phase_register(weft_world_t *w, const char *name, weft_phase_t after,
                        weft_phase_t *out) {
  if (!w)
    return WEFT_EINVAL;
  /* 0 would select the parent form. */
  WEFT_CHECK(w, after, WEFT_ENONAME, "phase %s: unknown anchor phase 0",
             name ? name : "(null)");
  return add_phase(w, name, after, 0, out);
}

int weft_phase_register_child(weft_world_t *w, weft_phase_t parent,
                              const char *name, weft_phase_t *out) {
  if (!w)
    return WEFT_EINVAL;
  WEFT_CHECK(w, parent, WEFT_ENONAME, "phase %s: unknown parent phase 0",
             name ? name : "(null)");
  return add_phase(w, name, 0, parent, out);
}

int weft_phase_parent(const weft_world_t *w, weft_phase_t phase,
                      weft_phase_t *out) {
  if (!w || !out)
    return WEFT_EINVAL;
  const weft__sched_t *s = weft__sched_of(w);
  if (phase < 1 || phase > (s ? s->nphases : WEFT__PHASE_BUILTINS))
    return WEFT_ENONAME;
  *out = s ? s->phases[phase].parent : 0;
  return 0;
}

int weft_phase_lookup(const weft_world_t *w, const char *name,
                      weft_phase_t *out) {
  if (!w || !name || !out)
    return WEFT_EINVAL;
  const weft__sched_t *s = weft__sched_of(w);
  for (uint32_t p = 1; p <= WEFT__PHASE_BUILTINS; p++)
    if (strcmp(builtin_names[p], name) == 0) {
      *out = p;
      return 0;
    }
  for (uint32_t p = WEFT__PHASE_BUILTINS + 1; s && p <= s->nphases; p++)
    if (strcmp(s->phases[p].name, name) == 0) {
      *out = p;
      return 0;
    }
  return WEFT_ENONAME;
}

int weft_phase_enable(weft_world_t *w, weft_phase_t phase, bool enabled) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  weft__sched_t *s;
  int open_rc = weft__sched_open(w, &s);
  if (open_rc)
    return open_rc;
  WEFT_CHECK(w, phase >= 1 && phase <= s->nphases, WEFT_ENONAME, "no phase %u",
             phase);
  s->phases[phase].enabled = enabled;
  return 0;
}

uint32_t weft_phase_systems(weft_world_t *w, weft_phase_t phase,
                            weft_system_t *out, uint32_t cap) {
  weft__sched_t *s = w ? weft__sched_get(w) : NULL;
  if (!s || phase < 1 || phase > s->nphases || weft__sched_build(w, s))
    return 0;
  const weft__phase_t *p = &s->phases[phase];
  for (uint32_t i = 0; i < p->n && i < cap && out; i++)
    out[i] = p->order[i]->id;
  return p->n;
}

int weft_phase_stats(const weft_world_t *w, weft_phase_t phase,
                     weft_phase_stats_t *out) {
  weft__sched_t *s = w ? weft__sched_of(w) : NULL;
  if (!out)
    return WEFT_EINVAL;
  if (!w || phase < 1 || phase > (s ? s->nphases : WEFT__PHASE_BUILTINS))
    return WEFT_ENONAME;
  *out = s ? s->phases[phase].stats : (weft_phase_stats_t){0};
  if (s) { /* times are kept in ticks */
    double ns = weft__ns_per_tick(&s->clock);
    out->wall_ns = (uint64_t)((double)out->wall_ns * ns);
    out->worker_ns = (uint64_t)((double)out->worker_ns * ns);
  }
  return 0;
}

int weft_schedule_build(weft_world_t *w) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  weft__sched_t *s;
  int open_rc = weft__sched_open(w, &s);
  if (open_rc)
    return open_rc;
  return weft__sched_build(w, s);
}

/* ---- small accessors ---------------------------------------------------- */

uint32_t weft_pipeline_slots(const weft_world_t *w) {
  if (!w)
    return 0;
  if (weft__sched_of(w))
    return weft__sched_of(w)->nslots;
  return (w->pool ? weft_pool_workers(w->pool) : 0) + 1;
}

uint32_t weft_world_change_version(const weft_world_t *w) {
  return w ? w->change_version : 0;
}

uint32_t weft_iter_version(const weft_iter_t *it, weft_component_t c) {
  const weft__chunk_t *ch = it ? weft__iter_chunk(it) : NULL;
  if (!ch)
    return 0;
  const weft__column_t *col = weft__archetype_col(ch->arch, c);
  if (!col)
    return 0;
  /* Atomic: another worker may stamp it now (chunk.h). */
  uint32_t v =
      __atomic_load_n(&ch->versions[col - ch->arch->cols], __ATOMIC_RELAXED);
  return v > ch->sversion ? v : ch->sversion;
}
