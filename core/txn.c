/* SPDX-License-Identifier: MIT */
/*
 * Transactions: draining staged structural changes in waves, and the
 * scopes that decide when to drain.
 *
 * Staging (stage.c, stage.h) folds every command for one entity into its
 * stage (see txn.h); spawn runs may take the fast path (spawn_fast.c).
 * The drain then applies a wave of stages in three passes, the order the
 * mutation model prescribes: despawns first (freeing rows), then spawns
 * (which reuse those rows), then moves; query-wide set/remove run last, in
 * call order. Observers run inside the drain, so whatever they stage lands
 * in the next wave. Stages are applied in creation order, which is the
 * deterministic merge order, so the resulting world does not depend on how
 * the commands were spread over threads.
 */
#include "core/relation.h"
#include "core/txn.h"

#include <stddef.h>
#include <string.h>

#include "core/bulk.h"
#include "core/check.h"
#include "core/observer.h"
#include "core/stage.h"
#include "core/world.h"

#define WEFT__MAX_WAVES 64u

/* ---- lifetime ----------------------------------------------------------- */

void weft__txn_init(weft__txn_t *t) {
  memset(t, 0, sizeof(*t));
  atomic_init(&t->route, 0);
}

void weft__txn_fini(weft__txn_t *t) {
  weft__free(t->stages, 0, 16);
  weft__free(t->ops, 0, 16);
  weft__free(t->stage_of, 0, 16);
  weft__free(t->batches, 0, 16);
  weft__free(t->late, 0, 16);
  weft__free(t->bufs, 0, 16);
  weft__free(t->buf_epochs, 0, 16);
  weft__free(t->fast, 0, 16);
  weft__free(t->group_runs, 0, 16);
  weft__arena_fini(&t->arena);
  weft__free(t->merge_pos, 0, 16);
  memset(t, 0, sizeof(*t));
}

/* ---- folding a stage into its target archetype --------------------------- */

/* The op after op in the ops that start at first, or NULL. */
static inline weft__op_t *op_next(weft__txn_t *t, const weft__op_t *first,
                                  const weft__op_t *op) {
  return weft__op_after(t->ops, first, op);
}

/* Clears the write flag of the ops before `until` on component c (a remove
 * undoes them). */
static void kill_writes(weft__txn_t *t, weft__op_t *first,
                        const weft__op_t *until, weft_component_t c) {
  for (weft__op_t *op = first; op != until; op = op_next(t, first, op))
    if (op->comp == c)
      weft__op_set_live(op, false);
}

static int follow(weft_world_t *w, weft__archetype_t **a, uint32_t op,
                  weft_component_t c) {
  const weft__edge_t *edge;
  int rc = weft__archetype_edge(w, *a, op, c, &edge);
  if (rc == 0)
    *a = edge->to;
  return rc;
}

/*
 * Walks the stage's ops from archetype base and returns the archetype the
 * entity ends up in, marking which ops' values survive.
 */
static int fold_ops(weft_world_t *w, weft__archetype_t *base, weft__op_t *first,
                    weft__archetype_t **target) {
  weft__txn_t *t = &w->txn;
  weft__archetype_t *a = base;
  int rc = 0;
  for (weft__op_t *op = first; op && rc == 0; op = op_next(t, first, op)) {
    weft_component_t c = op->comp;
    bool has = weft__mask_test(&a->present, c);
    weft__op_set_live(op, false);
    switch (op->op) {
    case WEFT__OP_ADD:
      weft__op_set_live(op, !has);
      if (!has)
        rc = follow(w, &a, WEFT__EDGE_ADD, c);
      break;
    case WEFT__OP_SET:
      weft__op_set_live(op, true);
      if (!has)
        rc = follow(w, &a, WEFT__EDGE_ADD, c);
      break;
    case WEFT__OP_REMOVE:
      if (has) {
        rc = follow(w, &a, WEFT__EDGE_REMOVE, c);
        kill_writes(t, first, op, c);
      }
      break;
    case WEFT__OP_ENABLE:
      if (has && weft__mask_test(&a->disabled, c))
        rc = follow(w, &a, WEFT__EDGE_ENABLE, c);
      break;
    case WEFT__OP_DISABLE:
      if (has && !weft__mask_test(&a->disabled, c))
        rc = follow(w, &a, WEFT__EDGE_DISABLE, c);
      break;
    default:
      break;
    }
  }
  *target = a;
  return rc;
}

/* Writes the surviving values of a stage's ops into its row, in order, so
 * the last write of a component wins. */
static void write_values(weft_world_t *w, weft__archetype_t *a,
                         weft__chunk_t *c, uint32_t row, weft__op_t *first) {
  weft__txn_t *t = &w->txn;
  for (const weft__op_t *op = first; op; op = op_next(t, first, op)) {
    if (!weft__op_live(op))
      continue;
    const weft__column_t *col = weft__archetype_col(a, op->comp);
    if (!col)
      continue; /* a tag */
    const void *value = weft__op_value(op);
    if (value)
      weft__column_write(a, col, c, row, value);
    else
      weft__column_zero(a, col, c, row);
    /* A set in place (a moved row: harmless). */
    weft__mark_write(w, c, col, row);
  }
}

/*
 * Moves a live row to archetype dst in one step, whatever the difference
 * between the signatures: shared components are copied, new ones zeroed.
 */
static int move_row(weft_world_t *w, weft__record_t *rec, weft__chunk_t *sc,
                    uint32_t sr, weft__archetype_t *dst, weft__chunk_t **dc_out,
                    uint32_t *dr_out) {
  weft__archetype_t *src = sc->arch;
  weft__chunk_t *dc;
  uint32_t dr;
  int rc = weft__archetype_push(w, dst, sc->entities[sr], &dc, &dr);
  if (rc)
    return rc;
  weft__copy_rows(src, dst, sc, sr, dc, dr, 1);
  weft__rec_set_loc(&w->index, rec, dc->id, dr);
  weft__row_remove(w, src, sc, sr);
  w->moves++;
  w->version++;
  *dc_out = dc;
  *dr_out = dr;
  return 0;
}

/* Applies a list of ops to a live entity: one move, then the values. */
static int mutate_entity(weft_world_t *w, weft_entity_t e, weft__op_t *first) {
  weft__where_t at;
  if (!weft__locate(w, e, &at)) {
    weft__count_stale_cmd(w);
    return 0;
  }
  weft__archetype_t *base = at.arch, *target;
  const uint32_t mark = weft__archetypes_mark(w);
  int rc = fold_ops(w, base, first, &target);
  if (rc) {
    weft__archetypes_rollback(w, mark); /* those made on the way go */
    return rc;
  }
  if (target != base) {
    weft__obs_move_out(w, base, target, at.chunk, at.row);
    /* Observers cannot move rows (their structural calls stage), but
     * they may have written values: look the row up again anyway. */
    weft__locate(w, e, &at);
    weft__chunk_t *dc;
    uint32_t dr;
    rc = move_row(w, at.rec, at.chunk, at.row, target, &dc, &dr);
    if (rc) {
      weft__archetypes_rollback(w, mark);
      return rc;
    }
    if (WEFT__UNLIKELY(w->registry.req != NULL))
      weft__req_fill_ops(w, &base->present, first, target, dc, dr);
    write_values(w, target, dc, dr, first);
    weft__obs_move_in(w, base, target, dc, dr);
  } else {
    /* A stage may remove requirements and add their requirer back. */
    if (WEFT__UNLIKELY(w->registry.req != NULL))
      weft__req_fill_ops(w, &base->present, first, target, at.chunk, at.row);
    write_values(w, target, at.chunk, at.row, first);
  }
  return 0;
}

/* ---- the drain ------------------------------------------------------------
 */

static void phase_despawns(weft_world_t *w, uint32_t s0, uint32_t s1) {
  for (uint32_t i = s0; i < s1; i++) {
    weft__stage_t s = w->txn.stages[i];
    uint32_t kind = weft__stage_kind(&s);
    if (kind == WEFT__ST_CANCELLED) {
      weft__obs_cancelled(w, s.e);
      weft__unreserve_slot(w, (uint32_t)s.e);
      continue;
    }
    if (kind != WEFT__ST_DESPAWN)
      continue;
    weft__where_t at;
    if (!weft__locate(w, s.e, &at))
      continue;
    /* OnDespawn sees the entity alive and readable. */
    weft__obs_despawn(w, at.chunk, at.row);
    if (WEFT__UNLIKELY(w->rel != NULL))
      weft__rel_on_despawn(w, s.e); /* its edges; cascades kill here too */
    if (!weft__locate(w, s.e, &at))
      continue; /* a cascade it started came back to it */
    weft__row_remove(w, at.arch, at.chunk, at.row);
    weft__index_kill_entity(&w->index, &w->alloc, at.rec, s.e);
    w->despawns++;
    w->version++;
  }
}

/*
 * The archetype of a staged spawn whose ops only add or set: straight from
 * the signature, like a bulk-placed spawn, so that neither path creates
 * archetypes the other would not (walking the graph from the root creates
 * every intermediate one). Marks the writes that survive. 1 when the ops
 * do something else and need fold_ops.
 */
static int spawn_target(weft_world_t *w, weft__op_t *first,
                        weft__archetype_t **target) {
  weft__txn_t *t = &w->txn;
  weft__mask_t m = {{0}}, none = {{0}};
  if (first->op == 0) { /* no ops: the empty archetype */
    *target = w->root;
    return 0;
  }
  for (weft__op_t *op = first; op; op = op_next(t, first, op))
    if (op->op != WEFT__OP_ADD && op->op != WEFT__OP_SET)
      return 1;
  for (weft__op_t *op = first; op; op = op_next(t, first, op)) {
    bool has = weft__mask_test(&m, op->comp);
    weft__op_set_live(op, op->op == WEFT__OP_SET || !has);
    weft__mask_set(&m, op->comp);
  }
  /* What the listed components require joins them (their defaults are
   * written before the values, which win). */
  if (WEFT__UNLIKELY(w->registry.req != NULL))
    for (weft__op_t *op = first; op; op = op_next(t, first, op))
      weft__req_expand_list(&w->registry, &(weft_component_t){op->comp}, 1, &m);
  return weft__archetype_get(w, &m, &none, target);
}

static int place_spawn(weft_world_t *w, weft_entity_t e, weft__op_t *first) {
  weft__archetype_t *target;
  const uint32_t mark = weft__archetypes_mark(w);
  int rc = spawn_target(w, first, &target);
  if (rc == 1)
    rc = fold_ops(w, w->root, first, &target);
  weft__chunk_t *c;
  uint32_t row;
  if (rc == 0)
    rc = weft__archetype_push(w, target, e, &c, &row);
  if (rc) {
    weft__unreserve_slot(w, (uint32_t)e);
    w->txn.dropped++;
    weft__archetypes_rollback(w, mark); /* those made for it go */
    return rc;
  }
  /* Not the dirty bytes: the row arrived dirty (weft__dirty_arrive()). */
  for (uint32_t i = 0; i < target->narrays - target->ndirty; i++) {
    uint32_t elem = target->arrays[i].elem;
    memset(weft__chunk_at(c, i, elem, row), 0, elem);
  }
  if (WEFT__UNLIKELY(w->registry.req != NULL)) {
    const weft__mask_t none = {{0}};
    weft__req_fill_ops(w, &none, first, target, c, row);
  }
  write_values(w, target, c, row, first);
  weft__index_place(&w->index, (uint32_t)e, c->id, row);
  w->txn.reserved--;
  w->spawns++;
  w->version++;
  weft__obs_spawn(w, c, row);
  return 0;
}

static int phase_spawns(weft_world_t *w, uint32_t s0, uint32_t s1) {
  int err = 0;
  for (uint32_t i = s0; i < s1; i++) {
    weft__stage_t s = w->txn.stages[i];
    if (weft__stage_kind(&s) != WEFT__ST_SPAWN)
      continue;
    int rc = place_spawn(w, s.e, &s.op0);
    if (rc && !err)
      err = rc;
  }
  return err;
}

/* A stage with exactly one op, the shape a group move handles. */
static const weft__op_t *single_op(const weft__stage_t *s) {
  if (weft__stage_kind(s) != WEFT__ST_MUTATE || s->op0.op == 0 ||
      s->op0.next != WEFT__TXN_NIL)
    return NULL;
  return &s->op0;
}

#define WEFT__GROUP_MIN 16u
/* Stages collected and moved at a time (their records, runs and stages
 * stay in cache in between). */
#define WEFT__GROUP_SLICE 2048u

/* The record of live entity e if it is in archetype a, else NULL. Reads
 * the owner from the chunk table entry, not from the chunk header. */
static inline weft__record_t *live_in(const weft_world_t *w, weft_entity_t e,
                                      const weft__archetype_t *a) {
  const weft__chunk_slot_t *slot;
  uint32_t row;
  weft__record_t *r =
      weft__index_find(&w->index, w->chunks.table, e, &slot, &row);
  return r && slot->arch == a ? r : NULL;
}

/*
 * Consumes the run of stages from i that make the same change as stage i,
 * one that leaves rows of archetype a where they are and writes nothing
 * (removing a component the rows lack, adding one they have): each only
 * needs its entity to be alive.
 */
static uint32_t noop_run(weft_world_t *w, uint32_t i, uint32_t s1,
                         const weft__archetype_t *a) {
  weft__txn_t *t = &w->txn;
  const weft__op_t *op0 = &t->stages[i].op0;
  uint32_t j = i;
  for (; j < s1; j++) {
    const weft__op_t *op = single_op(&t->stages[j]);
    if (!op || op->op != op0->op || op->comp != op0->comp ||
        !live_in(w, t->stages[j].e, a))
      break;
  }
  return j - i;
}

/* Makes the group scratch hold n runs. */
static int group_scratch(weft_world_t *w, uint32_t n) {
  weft__txn_t *t = &w->txn;
  if (n <= t->group_cap)
    return 0;
  return weft__grow(&w->alloc, &t->group_runs, &t->group_cap, n,
                    sizeof(*t->group_runs), 1024)
             ? WEFT_ENOMEM
             : 0;
}

/* The bytes of op after its value with the write flags cleared: equal for
 * two ops of the same kind of stage, with the same next, component and
 * op. One compare instead of four in the group scan. */
static inline uint64_t op_shape(const weft__op_t *op) {
  static const weft__op_t mask = {.next = WEFT__TXN_NIL,
                                  .comp = 0xffff,
                                  .op = 0xff,
                                  .flags = (uint8_t)WEFT__OPF_KIND};
  const size_t at = offsetof(weft__op_t, next);
  uint64_t v, m;
  memcpy(&v, (const unsigned char *)op + at, sizeof(v));
  memcpy(&m, (const unsigned char *)&mask + at, sizeof(m));
  return v & m;
}

_Static_assert(offsetof(weft__op_t, flags) - offsetof(weft__op_t, next) == 7 &&
                   sizeof(weft__op_t) == 16,
               "op_shape reads next..flags as one word");

/*
 * Collects the part of a group in stages [i, s1): the stages from i on that
 * make op0 (the group's single op) to live entities of archetype a. Their
 * rows go to runs[] as runs of consecutive source rows (*nruns of them).
 * Returns the group's size. The index header is copied to a local that the
 * stores cannot alias, so the loop keeps it in registers; out of line so
 * that it has them to itself.
 */
static __attribute__((noinline)) uint32_t
collect_group(weft_world_t *w, const weft__op_t *op0, uint32_t i, uint32_t s1,
              const weft__archetype_t *a, weft__group_run_t *runs,
              uint32_t *nruns) {
  weft__txn_t *t = &w->txn;
  const weft__index_t ix = w->index;
  const weft__chunk_slot_t *table = w->chunks.table;
  const weft__stage_t *st = t->stages;
  /* op0 is a single op of a mutate stage (see single_op). */
  const uint64_t shape = op_shape(op0);
  uint32_t k = 0, nr = 0, k0 = 0, run_end = 0;
  const weft__chunk_t *run_chunk = NULL;
  for (uint32_t j = i; j < s1; j++, k++) {
    const weft__stage_t *s = &st[j];
    if (op_shape(&s->op0) != shape)
      break;
    const weft__chunk_slot_t *slot;
    uint32_t row;
    if (!weft__index_find(&ix, table, s->e, &slot, &row) || slot->arch != a)
      break;
    weft__chunk_t *ch = slot->chunk;
    if (ch != run_chunk || row != run_end) {
      if (nr)
        runs[nr - 1].n = k - k0;
      runs[nr++] = (weft__group_run_t){ch, row, 0};
      run_chunk = ch;
      k0 = k;
    }
    run_end = row + 1;
  }
  if (nr)
    runs[nr - 1].n = k - k0;
  *nruns = nr;
  return k;
}

/* Writes the defaults an add brought along into the last m rows of b, a
 * group just moved there from a by op0. */
static void group_defaults(weft_world_t *w, weft__archetype_t *a,
                           const weft__archetype_t *b, const weft__op_t *op0,
                           uint32_t m) {
  const weft__edge_t *edge;
  if ((op0->op != WEFT__OP_ADD && op0->op != WEFT__OP_SET) ||
      weft__mask_test(&a->present, op0->comp) ||
      weft__archetype_edge(w, a, WEFT__EDGE_ADD, op0->comp, &edge))
    return; /* the edge was followed by fold_ops: the lookup is a hit */
  if (edge->ndefaults)
    weft__req_write_tail(b, weft__edge_defaults(edge), edge->ndefaults, m);
}

/*
 * Moves a run of stages starting at i as one group when they all apply the
 * same single op to entities of the same archetype (so they all land in
 * the same target) and no observer needs per-entity events. Returns the
 * number of stages consumed, 0 to take the per-entity path.
 */
static uint32_t group_moves(weft_world_t *w, uint32_t i, uint32_t s1,
                            int *err) {
  weft__txn_t *t = &w->txn;
  const weft__op_t *op0 = single_op(&t->stages[i]);
  if (w->obs_events || !op0 || s1 - i < WEFT__GROUP_MIN ||
      group_scratch(w, s1 - i))
    return 0;
  weft__where_t at;
  if (!weft__locate(w, t->stages[i].e, &at))
    return 0;
  weft__archetype_t *a = at.arch, *b;
  const uint32_t mark = weft__archetypes_mark(w);
  /* Decide before collecting: trying again from every stage of a run
   * must not cost a scan of the whole run. */
  if (fold_ops(w, a, &t->stages[i].op0, &b)) {
    weft__archetypes_rollback(w, mark); /* the per-entity path reports it */
    return 0;
  }
  if (b == a)
    return weft__op_live(&t->stages[i].op0) ? 0 : noop_run(w, i, s1, a);
  /* Slice by slice, so that a slice's records and stages are still in
   * cache when its rows move; a's holes are closed once, at the end. */
  uint32_t k = 0, nruns = 0;
  for (;;) {
    uint32_t end =
        s1 - (i + k) > WEFT__GROUP_SLICE ? i + k + WEFT__GROUP_SLICE : s1;
    /* The runs of every slice are kept: the close needs them all. */
    weft__group_run_t *runs = t->group_runs + nruns;
    uint32_t nr;
    uint32_t m = collect_group(w, op0, i + k, end, a, runs, &nr);
    if (k == 0 && m < WEFT__GROUP_MIN)
      return 0;
    /* fold_ops marked whether the op writes; every op of the group is the
     * same kind on the same component, so the answer holds for all. The
     * values sit in the stages' inline ops, one stage apart. */
    weft__group_values_t vals = {NULL, NULL, 0};
    if (weft__op_live(&t->stages[i].op0)) {
      vals.col = weft__archetype_col(b, op0->comp);
      vals.base = (const unsigned char *)&t->stages[i + k].op0;
      vals.stride = sizeof(weft__stage_t);
    }
    int rc = m ? weft__move_group_rows(w, a, b, m, runs, &vals) : 0;
    if (rc) {
      *err = rc;
      break;
    }
    if (WEFT__UNLIKELY(w->registry.req != NULL) && m)
      group_defaults(w, a, b, op0, m);
    k += m;
    nruns += nr;
    if (i + k < end || end == s1)
      break; /* the group ended */
  }
  if (k)
    weft__move_group_close(w, a, k, t->group_runs, nruns);
  else
    weft__archetypes_rollback(w, mark); /* b is empty: nothing moved */
  return k;
}

static int phase_moves(weft_world_t *w, uint32_t s0, uint32_t s1) {
  int err = 0;
  for (uint32_t i = s0; i < s1; i++) {
    uint32_t grouped = group_moves(w, i, s1, &err);
    if (grouped) {
      i += grouped - 1;
      continue;
    }
    weft__stage_t s = w->txn.stages[i];
    if (weft__stage_kind(&s) != WEFT__ST_MUTATE || s.op0.op == 0)
      continue;
    int rc = mutate_entity(w, s.e, &s.op0);
    if (rc) {
      w->txn.dropped++;
      if (!err)
        err = rc;
    }
  }
  return err;
}

int weft__txn_batch_op(weft_world_t *w, weft_entity_t e, uint32_t op,
                       weft_component_t c, const void *value) {
  weft__op_t o = {
      .value = value, .next = WEFT__TXN_NIL, .comp = (uint16_t)c, .op = op};
  return mutate_entity(w, e, &o);
}

static int phase_batches(weft_world_t *w, uint32_t b0, uint32_t b1) {
  weft__txn_t *t = &w->txn;
  int err = 0;
  for (uint32_t i = b0; i < b1; i++) {
    weft__batch_t b = t->batches[i];
    if (b.op == WEFT__OP_SET_FN) {
      int rc = weft__batch_fn_apply(w, i);
      if (rc && !err)
        err = rc;
      continue;
    }
    for (uint32_t m = 0; m < b.n; m++) {
      /* One op for the member: fold_ops writes its live flag. */
      weft__op_t op = {
          .value = b.value, .next = WEFT__TXN_NIL, .comp = b.comp, .op = b.op};
      int rc = mutate_entity(w, b.members[m], &op);
      if (rc && !err)
        err = rc;
    }
  }
  return err;
}

/* Drops whatever is still staged (after a cascade), keeping the world
 * consistent: reserved slots of unplaced spawns go back. */
static void drop_pending(weft_world_t *w) {
  weft__txn_t *t = &w->txn;
  for (uint32_t i = t->open_from; i < t->nstages; i++) {
    uint32_t kind = weft__stage_kind(&t->stages[i]);
    if (kind == WEFT__ST_SPAWN || kind == WEFT__ST_CANCELLED)
      weft__unreserve_slot(w, (uint32_t)t->stages[i].e);
    t->dropped++;
  }
  t->dropped += t->nbatches - t->batches_from;
  weft__rel_drop(w);
}

int weft__txn_drain(weft_world_t *w) {
  weft__txn_t *t = &w->txn;
  if (t->draining)
    return 0; /* the running drain picks new work up in its next wave */
  t->draining = true;
  weft__scope_open(w); /* observers' structural calls stage for the next wave */
  int err = 0;
  uint32_t waves = 0;
  while (t->open_from < t->nstages || t->batches_from < t->nbatches ||
         t->nfast || weft__rel_pending(w->rel)) {
    if (waves == WEFT__MAX_WAVES) {
      drop_pending(w);
      err = weft__fail(w, WEFT_ECASCADE, WEFT__FILE, WEFT__LINE,
                       "observer cascade: work still staged after %u drain "
                       "waves; the rest was dropped",
                       WEFT__MAX_WAVES);
      break;
    }
    uint32_t s0 = t->open_from, s1 = t->nstages;
    uint32_t b0 = t->batches_from, b1 = t->nbatches;
    uint32_t kinds[5];
    memcpy(kinds, t->kinds, sizeof(kinds));
    memset(t->kinds, 0, sizeof(t->kinds));
    t->open_from = s1;
    t->batches_from = b1;
    t->fn_open = 0; /* sets staged from here on follow every writer */
    if (kinds[WEFT__ST_DESPAWN] || kinds[WEFT__ST_CANCELLED])
      phase_despawns(w, s0, s1);
    int rc = t->nfast ? weft__txn_place_fast(w) : 0;
    if (kinds[WEFT__ST_SPAWN]) {
      int rs = phase_spawns(w, s0, s1);
      rc = rc ? rc : rs;
    }
    int rc2 = kinds[WEFT__ST_MUTATE] ? phase_moves(w, s0, s1) : 0;
    int rc3 = phase_batches(w, b0, b1);
    /* Edges last: their ends' spawns, despawns and moves of this wave are
     * done, and a tag move they make happens in place. */
    int rc4 = weft__rel_pending(w->rel) ? weft__rel_phase(w) : 0;
    if (!err)
      err = rc ? rc : rc2 ? rc2 : rc3 ? rc3 : rc4;
    waves++;
    t->waves++;
  }
  t->nstages = t->nops = t->nbatches = t->nfast = t->nlate = 0;
  t->fn_open = 0;
  t->fast_spawns = false;
  t->open_from = t->batches_from = 0;
  memset(t->kinds, 0, sizeof(t->kinds));
  weft__arena_reset(&t->arena);
  t->draining = false;
  weft__scope_close(w);
  t->last_error = err;
  return err;
}

/* ---- scopes ------------------------------------------------------------- */

void weft__route_sync(weft_world_t *w) {
  const weft__txn_t *t = &w->txn;
  uint32_t want =
      (t->depth || t->draining || w->obs_events) ? WEFT__ROUTE_OWNER : 0;
  uint32_t r = atomic_load_explicit(&w->txn.route, memory_order_relaxed);
  /* Readers change the low bits concurrently: swap in the owner bit
   * without losing their counts. */
  while ((r & WEFT__ROUTE_OWNER) != want &&
         !atomic_compare_exchange_weak_explicit(
             &w->txn.route, &r, (r & WEFT__ROUTE_ITERS) | want,
             memory_order_relaxed, memory_order_relaxed))
    ;
}

void weft__scope_open(weft_world_t *w) {
  w->txn.depth++;
  weft__route_sync(w);
}

void weft__scope_close(weft_world_t *w) {
  if (w->txn.depth)
    w->txn.depth--;
  weft__route_sync(w);
}

int weft_world_defer_begin(weft_world_t *w) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  weft__scope_open(w);
  return (int)w->txn.depth;
}

int weft__txn_settle(weft_world_t *w) {
  const weft__txn_t *t = &w->txn;
  if (weft__txn_in_scope(t) || t->draining ||
      !(t->nstages || t->nbatches || weft__rel_pending(w->rel)))
    return 0;
  return weft__txn_drain(w);
}

int weft_world_defer_end(weft_world_t *w) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  weft__scope_close(w);
  return weft__txn_settle(w);
}

int weft_world_unwind(weft_world_t *w) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  w->txn.depth = 0;
  /* Iterators still open no longer hold a scope: their close must not end
   * the scope of an iterator started after this. Nor do they count as
   * their queries' open iterations, and they end at their next step: the
   * structural changes now allowed may free what they walk. */
  w->txn.unwinds++;
  weft__queries_unwound(w);
  w->version++;
  uint32_t r = atomic_load_explicit(&w->txn.route, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(
      &w->txn.route, &r, r & WEFT__ROUTE_OWNER, memory_order_relaxed,
      memory_order_relaxed))
    ;
  weft__route_sync(w);
  return weft__txn_settle(w);
}

uint32_t weft_world_defer_depth(const weft_world_t *w) {
  if (!w)
    return 0;
  return w->txn.depth + weft__txn_iters(&w->txn);
}

int weft_world_last_drain(const weft_world_t *w) {
  return w ? w->txn.last_error : WEFT_EINVAL;
}

uint32_t weft__txn_iter_enter(const weft_world_t *w) {
  return atomic_fetch_add_explicit(&((weft_world_t *)w)->txn.route, 1,
                                   memory_order_relaxed) &
         WEFT__ROUTE_ITERS;
}

void weft__txn_iter_leave(const weft_world_t *cw) {
  weft_world_t *w = (weft_world_t *)cw;
  uint32_t prev =
      atomic_fetch_sub_explicit(&w->txn.route, 1, memory_order_relaxed) &
      WEFT__ROUTE_ITERS;
  if (prev == 0) {
    /* Nothing was open (cannot happen: iterators opened before an unwind
     * do not leave): undo, so the count stays at zero. */
    atomic_fetch_add_explicit(&w->txn.route, 1, memory_order_relaxed);
    return;
  }
  /* Only the owner thread stages work, so staged work here means the
   * owner closed its last iteration: apply it. */
  if (prev == 1 && w->txn.depth == 0 && !w->txn.draining &&
      (w->txn.nstages || w->txn.nbatches || weft__rel_pending(w->rel)))
    weft__txn_drain(w);
}
