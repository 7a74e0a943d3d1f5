/* SPDX-License-Identifier: MIT */
/*
 * weft_world_apply(): the deterministic merge that turns a set of command
 * buffers into one transaction (txn.c), and weft_cmd_resolve().
 *
 * Merge order is (key, position in the buffer). A buffer whose segments
 * were recorded in non-decreasing key order (the usual case: a job walks
 * its chunks in order) is merged as it is; otherwise its segments are
 * sorted first, stably, with scratch memory the buffer keeps. Several
 * buffers merge k-way, ties going to the buffer listed first, so the
 * order depends on keys, not on which thread recorded what.
 */
#include <string.h>

#include "core/check.h"
#include "core/cmdbuf.h"
#include "core/relation.h"
#include "core/stage.h"
#include "core/world.h"

/*
 * Puts a buffer whose segments were not opened in key order into merge
 * order: a stable bottom-up merge sort of its segments by key (a handful
 * per job, not one entry per command), then order[] lists the command
 * indices segment by segment, and each key record's n becomes the merge
 * position of the next key record.
 */
static int sort_buffer(weft_cmdbuf_t *b) {
  if (weft__cmdbuf_order_room(b, b->ncmds))
    return WEFT_ENOMEM;
  uint32_t nseg = b->nsegs;
  weft__cmd_t *c = b->cmds;
  uint32_t *src = b->order, *dst = b->scratch;
  for (uint32_t s = 0, p = 0; s < nseg; s++, p = c[p].n)
    src[s] = p; /* the key records, in recording order */
  for (uint32_t width = 1; width < nseg; width *= 2) {
    for (uint32_t lo = 0; lo < nseg; lo += 2 * width) {
      uint32_t mid = lo + width < nseg ? lo + width : nseg;
      uint32_t hi = lo + 2 * width < nseg ? lo + 2 * width : nseg;
      uint32_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi)
        dst[k++] = c[src[j]].e < c[src[i]].e ? src[j++] : src[i++];
      while (i < mid)
        dst[k++] = src[i++];
      while (j < hi)
        dst[k++] = src[j++];
    }
    uint32_t *tmp = src;
    src = dst;
    dst = tmp;
  }
  /* The sorted segments go to scratch; order[] receives the positions. */
  if (src != b->scratch)
    memcpy(b->scratch, src, nseg * sizeof(uint32_t));
  uint32_t p = 0;
  for (uint32_t s = 0; s < nseg; s++) {
    uint32_t c0 = b->scratch[s], len = c[c0].n - c0;
    for (uint32_t j = 0; j < len; j++)
      b->order[p + j] = c0 + j;
    p += len;
    c[c0].n = p;
  }
  return 0;
}

/*
 * A k-way merge over the buffers' commands in (key, position) order, handed
 * out as spans: positions [p0, p1) of one buffer that come next in merge
 * order, one after the other. Buffers usually hold disjoint key ranges (one
 * job's chunks each), so a span is usually a whole buffer and the commands
 * in it are walked as a plain array. A span is whole segments: it starts at
 * a key record, and a buffer's position always sits on one.
 */
typedef struct merge_t {
  weft_cmdbuf_t *const *bufs;
  uint32_t n;
  uint32_t *pos; /* per buffer */
} merge_t;

/* The command at merge position p of a buffer. */
static inline const weft__cmd_t *cmd_at(const weft_cmdbuf_t *b, uint32_t p) {
  return &b->cmds[b->sorted ? p : b->order[p]];
}

/* True if buffer a's head (key ka) comes before buffer b's (key kb). */
static inline bool before(uint64_t ka, uint32_t a, uint64_t kb, uint32_t b) {
  return ka < kb || (ka == kb && a < b);
}

/* The next span in merge order; false when every buffer is spent. Ties on
 * the key go to the buffer listed first. */
static bool merge_span(merge_t *m, const weft_cmdbuf_t **out, uint32_t *p0,
                       uint32_t *p1) {
  uint32_t best = UINT32_MAX, second = UINT32_MAX;
  uint64_t best_key = 0, second_key = 0;
  for (uint32_t i = 0; i < m->n; i++) {
    const weft_cmdbuf_t *b = m->bufs[i];
    if (m->pos[i] >= b->ncmds)
      continue;
    uint64_t k = cmd_at(b, m->pos[i])->e; /* a key record */
    if (best == UINT32_MAX || k < best_key) {
      second = best;
      second_key = best_key;
      best = i;
      best_key = k;
    } else if (second == UINT32_MAX || k < second_key) {
      second = i;
      second_key = k;
    }
  }
  if (best == UINT32_MAX)
    return false;
  const weft_cmdbuf_t *b = m->bufs[best];
  uint32_t p = m->pos[best], end = b->ncmds;
  if (second != UINT32_MAX) {
    /* The buffer keeps winning while its head stays before the
     * runner-up's (the others' heads do not move meanwhile): segment by
     * segment, as keys do not decrease in merge order. */
    uint32_t q = cmd_at(b, p)->n;
    while (q < end && before(cmd_at(b, q)->e, best, second_key, second))
      q = cmd_at(b, q)->n;
    end = q;
  }
  m->pos[best] = end;
  *out = b;
  *p0 = p;
  *p1 = end;
  return true;
}

/* Starts (or restarts) a merge over the buffers. */
static void merge_start(merge_t *m) {
  memset(m->pos, 0, m->n * sizeof(*m->pos));
}

/* The buffer that issued pending handle e (NULL if none of this world),
 * with the handle's epoch and sequence. */
static weft_cmdbuf_t *pending_buffer(const weft_world_t *w, weft_entity_t e,
                                     uint32_t *epoch, uint32_t *seq) {
  uint32_t id = (uint32_t)(e >> WEFT__CMD_ID_SHIFT) & WEFT__CMD_FIELD_MASK;
  *epoch = (uint32_t)(e >> WEFT__CMD_EPOCH_SHIFT) & WEFT__CMD_FIELD_MASK;
  *seq = (uint32_t)e & 0x7fffffffu;
  if ((e & UINT64_C(0xff00000000000000)) != w->index.tag || id >= w->txn.nbufs)
    return NULL;
  return w->txn.bufs[id];
}

/* The real handle a command names: itself, or what its pending spawn
 * became in this apply. 0 when stale. */
static weft_entity_t target_of(weft_world_t *w, weft_entity_t e) {
  if (!weft_entity_is_pending(e))
    return e;
  uint32_t epoch, seq;
  const weft_cmdbuf_t *b = pending_buffer(w, e, &epoch, &seq);
  if (!b || !b->applying || b->epoch != epoch || seq >= b->nspawns)
    return 0;
  return b->spawned[seq];
}

/* Pass 0 over one span: its pending spawns get their slots and stages. */
static int place_span(weft_world_t *w, const weft_cmdbuf_t *sb, uint32_t p0,
                      uint32_t p1, int err) {
  for (uint32_t p = p0; p < p1; p++) {
    const weft__cmd_t *c = cmd_at(sb, p);
    if (c->op != WEFT__OP_SPAWN)
      continue;
    uint32_t epoch, seq;
    weft_cmdbuf_t *b = pending_buffer(w, c->e, &epoch, &seq);
    const weft__spawn_run_t *r = c->data;
    for (uint32_t j = 0; j < r->count; j++) {
      weft_entity_t e = 0;
      int rc = err ? err : weft__reserve_slot(w, &e);
      if (rc == 0)
        rc = weft__stage_spawn(w, e);
      if (rc) {
        if (e)
          weft__unreserve_slot(w,
                               (uint32_t)e); /* could not stage: give it back */
        e = 0;
        w->txn.dropped++;
        err = rc;
      }
      b->spawned[r->seq0 + j] = e;
    }
  }
  return err;
}

/* Pass 0: every pending spawn gets its slot and a stage, in merge order. */
static int place_pending(weft_world_t *w, merge_t *m) {
  int err = 0;
  const weft_cmdbuf_t *b;
  uint32_t p0, p1;
  while (merge_span(m, &b, &p0, &p1))
    err = place_span(w, b, p0, p1, err);
  return err;
}

/* A spawn run in pass 1: on the fast path it is queued for the drain; on
 * the staged path (pass 0 made the stages) its values become ADD ops. */
static int spawn_ops(weft_world_t *w, const weft__cmd_t *c) {
  uint32_t epoch, seq;
  weft_cmdbuf_t *b = pending_buffer(w, c->e, &epoch, &seq);
  const weft__spawn_run_t *r = c->data;
  if (w->txn.fast_spawns)
    return weft__txn_fast_spawn(w, r, &b->spawned[r->seq0]);
  int err = 0;
  for (uint32_t j = 0; j < r->count; j++) {
    weft_entity_t e = b->spawned[r->seq0 + j];
    for (uint32_t i = 0; e && i < r->n; i++) {
      int rc = weft__stage_op(w, e, WEFT__OP_ADD, r->comps[i],
                              r->sizes[i] ? r->cols[i] + (size_t)j * r->sizes[i]
                                          : NULL);
      if (rc && !err)
        err = rc;
    }
  }
  return err;
}

/* An edge command: both ends resolved (either may be a pending spawn of
 * this apply), then staged for the drain's edge phase. */
static int rel_dispatch(weft_world_t *w, const weft__cmd_t *c) {
  const weft_entity_t *blk = c->data;
  weft_entity_t src = target_of(w, c->e), tgt = target_of(w, blk[0]);
  if (!src || !tgt) {
    w->txn.stale++;
    weft__count_stale(w);
    return 0;
  }
  return weft__rel_queue(
      w, c->op == WEFT__OP_REL_ADD ? WEFT__RELOP_ADD : WEFT__RELOP_REMOVE, src,
      c->comp, tgt, c->n ? blk + 1 : NULL);
}

static int dispatch(weft_world_t *w, const weft__cmd_t *c,
                    const weft__cmd_t *next) {
  switch (c->op) {
  case WEFT__OP_DESPAWN_Q: {
    int err = 0;
    for (uint32_t i = 0; i < c->n; i++) {
      int rc = weft__stage_despawn(w, ((const weft_entity_t *)c->data)[i]);
      if (rc && !err)
        err = rc;
    }
    return err;
  }
  case WEFT__OP_SET_Q:
    return weft__stage_batch(w, WEFT__OP_SET, c->comp, c->data, next->data,
                             next->n);
  case WEFT__OP_REMOVE_Q:
    return weft__stage_batch(w, WEFT__OP_REMOVE, c->comp, NULL, c->data, c->n);
  case WEFT__OP_SPAWN:
    return spawn_ops(w, c);
  case WEFT__OP_REL_ADD:
  case WEFT__OP_REL_REMOVE:
    return rel_dispatch(w, c);
  case 0:
    return 0; /* the members slot of a query set */
  case WEFT__OP_KEY:
    return 0;
  default:
    break;
  }
  weft_entity_t e = target_of(w, c->e);
  if (!e) {
    w->txn.stale++;
    weft__count_stale(w);
    return 0;
  }
  if (c->op == WEFT__OP_DESPAWN)
    return weft__stage_despawn(w, e);
  return weft__stage_op(w, e, c->op, c->comp, weft__cmd_value(c));
}

/*
 * Stages commands [p, p1) of a span as long as each is a component op on a
 * live entity that has no open stage yet: a new stage with that one op.
 * That is the usual apply (one command per entity), so the loop keeps the
 * transaction's state and a copy of the index header in locals, which the
 * stores to the stages cannot alias. `order` is NULL for a sorted buffer;
 * inlined once for each case. Returns the position of the first command it
 * left for dispatch().
 */
static inline __attribute__((always_inline)) uint32_t
stage_fresh_in(weft_world_t *w, const weft__cmd_t *cmds, const uint32_t *order,
               uint32_t p, uint32_t p1) {
  weft__txn_t *t = &w->txn;
  const weft__index_t ix = w->index;
  const weft__chunk_slot_t *table = w->chunks.table;
  const uint32_t n0 = t->nstages;
  /* Stages of a wave being drained never exist here (apply runs outside
   * drains): every stage found is open. The slot map covers every live
   * slot, so the lookup's bound check covers the map's too. */
  if (t->open_from != 0 || weft__stage_of_reserve(w, ix.hwm))
    return p;
  if (p1 - p > t->stages_cap - n0)
    p1 = p + (t->stages_cap - n0); /* dispatch() grows the stages */
  weft__stage_t *stages = t->stages;
  uint32_t *stage_of = t->stage_of;
  uint32_t n = n0;
  for (; p < p1; p++) {
    const weft__cmd_t *c = order ? &cmds[order[p]] : &cmds[p];
    uint32_t op = c->op;
    weft_entity_t e = c->e;
    uint32_t slot = (uint32_t)e;
    /* Pending handles fail the lookup (their index has the top bit set)
     * and go through dispatch(), as do stale and reserved ones. */
    if (op < WEFT__OP_ADD || op > WEFT__OP_DISABLE ||
        !weft__index_lookup(&ix, table, e))
      break;
    uint32_t i = stage_of[slot];
    if (i < n && (uint32_t)stages[i].e == slot)
      break; /* the entity has a stage: add to it */
    /* The stage array is written ahead of any read: ask for its lines
     * early, or the store waits for each one. */
    __builtin_prefetch(&stages[n + 16], 1);
    stage_of[slot] = n;
    /* An inline value moves into the stage with the command's bytes.
     * Field by field: fewer instructions than a whole-struct store. */
    weft__stage_t *s = &stages[n++];
    s->e = e;
    s->op0.value = c->data;
    s->op0.next = WEFT__TXN_NIL;
    s->op0.comp = c->comp;
    s->op0.op = (uint8_t)op;
    s->op0.flags =
        (uint8_t)(c->inl | (WEFT__ST_MUTATE << WEFT__OPF_KIND_SHIFT));
  }
  t->nstages = n;
  t->kinds[WEFT__ST_MUTATE] += n - n0;
  t->commands += n - n0;
  return p;
}

static __attribute__((noinline)) uint32_t
stage_fresh_sorted(weft_world_t *w, const weft_cmdbuf_t *b, uint32_t p,
                   uint32_t p1) {
  return stage_fresh_in(w, b->cmds, NULL, p, p1);
}

static __attribute__((noinline)) uint32_t
stage_fresh_ordered(weft_world_t *w, const weft_cmdbuf_t *b, uint32_t p,
                    uint32_t p1) {
  return stage_fresh_in(w, b->cmds, b->order, p, p1);
}

static uint32_t stage_fresh(weft_world_t *w, const weft_cmdbuf_t *b, uint32_t p,
                            uint32_t p1) {
  return b->sorted ? stage_fresh_sorted(w, b, p, p1)
                   : stage_fresh_ordered(w, b, p, p1);
}

/* Pass 1 over one span. */
static int stage_span(weft_world_t *w, const weft_cmdbuf_t *b, uint32_t p,
                      uint32_t p1) {
  int err = 0;
  while ((p = stage_fresh(w, b, p, p1)) < p1) {
    const weft__cmd_t *c = cmd_at(b, p++);
    /* A query set's members sit in the slot right after it, in the same
     * buffer and with the same key, so they are in the same span. */
    const weft__cmd_t *next = NULL;
    if (c->op == WEFT__OP_SET_Q) {
      if (p == p1)
        break; /* cannot happen: recording pushes both or neither */
      next = cmd_at(b, p++);
    }
    int rc = dispatch(w, c, next);
    if (rc && !err)
      err = rc;
  }
  return err;
}

/* Pass 1: every other command, in merge order. */
static int stage_all(weft_world_t *w, merge_t *m) {
  int err = 0;
  const weft_cmdbuf_t *b;
  uint32_t p0, p1;
  while (merge_span(m, &b, &p0, &p1)) {
    int rc = stage_span(w, b, p0, p1);
    if (rc && !err)
      err = rc;
  }
  return err;
}

static int prepare(weft_world_t *w, weft_cmdbuf_t *const *bufs, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    weft_cmdbuf_t *b = bufs[i];
    WEFT_CHECK(w, b && b->world == w, WEFT_EINVAL,
               "buffer %u is NULL or belongs to another world", i);
    WEFT_CHECK(w, !b->dead, WEFT_EINVAL, "buffer %u was destroyed", i);
    WEFT_CHECK(w, !b->applying, WEFT_EINVAL, "buffer %u is listed twice", i);
    b->applying = true;
  }
  for (uint32_t i = 0; i < n; i++) {
    weft_cmdbuf_t *b = bufs[i];
    if (b->ncmds)
      b->cmds[b->seg].n = b->ncmds; /* the last segment ends the buffer */
    int rc = b->sorted ? 0 : sort_buffer(b);
    if (rc == 0 && b->nspawns > b->spawned_cap)
      rc = weft__grow(&b->alloc, &b->spawned, &b->spawned_cap, b->nspawns,
                      sizeof(*b->spawned), 256);
    WEFT_CHECK(w, rc == 0, WEFT_ENOMEM, "out of memory merging buffers");
  }
  return 0;
}

static void finish(weft_cmdbuf_t *const *bufs, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    weft_cmdbuf_t *b = bufs[i];
    if (!b || !b->applying)
      continue;
    b->spawned_n = b->nspawns;
    b->spawned_epoch = b->epoch;
    b->has_results = true;
    b->applying = false;
    weft__cmdbuf_restart(b);
  }
}

int weft_world_apply(weft_world_t *w, weft_cmdbuf_t *const *bufs, uint32_t n) {
  WEFT_CHECK(w, w && (bufs || n == 0), WEFT_EINVAL, "NULL argument");
  WEFT_CHECK(w, !weft__txn_in_scope(&w->txn) && !w->txn.draining, WEFT_EBUSY,
             "cannot apply buffers inside a deferred or iteration scope");
  WEFT_CHECK(w, n <= WEFT_CMDBUF_MAX, WEFT_EINVAL, "too many buffers");
  uint32_t pos[64];
  uint32_t *cursor = pos;
  if (n > 64) { /* kept by the world: a big pool applies every frame */
    int grc = weft__grow(&w->alloc, &w->txn.merge_pos, &w->txn.merge_pos_cap, n,
                         sizeof(uint32_t), 128);
    WEFT_CHECK(w, grc == 0, WEFT_ENOMEM, "out of memory merging");
    cursor = w->txn.merge_pos;
  }
  int rc = prepare(w, bufs, n);
  if (rc) {
    for (uint32_t i = 0; i < n; i++)
      if (bufs[i] && bufs[i]->world == w)
        bufs[i]->applying = false; /* nothing applied, nothing dropped */
  } else {
    merge_t m = {bufs, n, cursor};
    uint64_t spawns = 0;
    for (uint32_t i = 0; i < n; i++)
      spawns += bufs[i]->nspawns;
    /* Spawns nothing else names, in a world without observers, are
     * placed in bulk by the drain; otherwise each gets a stage now. */
    bool refs = false;
    for (uint32_t i = 0; i < n; i++)
      refs |= bufs[i]->refs_pending;
    w->txn.fast_spawns = spawns && !refs && !w->obs_events;
    merge_start(&m);
    int err = spawns && !w->txn.fast_spawns ? place_pending(w, &m) : 0;
    merge_start(&m);
    int err2 = stage_all(w, &m);
    int err3 = weft__txn_drain(w);
    rc = err ? err : err2 ? err2 : err3;
    if (err && err != err3)
      weft__fail(w, err, WEFT__FILE, WEFT__LINE,
                 "%u spawns did not fit and were dropped",
                 (unsigned)w->txn.dropped);
  }
  finish(bufs, n);
  return rc;
}

int weft_cmd_resolve(const weft_world_t *w, weft_entity_t e,
                     weft_entity_t *out) {
  if (!w || !out)
    return WEFT_EINVAL;
  *out = WEFT_ENTITY_NULL;
  if (!weft_entity_is_pending(e)) {
    *out = e;
    return 0;
  }
  uint32_t epoch, seq;
  const weft_cmdbuf_t *b = pending_buffer(w, e, &epoch, &seq);
  if (!b || !b->has_results || b->spawned_epoch != epoch ||
      seq >= b->spawned_n || !weft__lookup(w, b->spawned[seq]))
    return WEFT_ESTALE;
  *out = b->spawned[seq];
  return 0;
}
