/*
 * Transactions: staging structural changes and draining them in waves.
 *
 * Staging folds every command for one entity into its stage (see txn.h).
 * The drain then applies a wave of stages in three passes, the order the
 * mutation model prescribes: despawns first (freeing rows), then spawns
 * (which reuse those rows), then moves; query-wide set/remove run last, in
 * call order. Observers run inside the drain, so whatever they stage lands
 * in the next wave. Stages are applied in creation order, which is the
 * deterministic merge order, so the resulting world does not depend on how
 * the commands were spread over threads.
 */
#include "core/txn.h"

#include <stddef.h>
#include <string.h>

#include "core/bulk.h"
#include "core/check.h"
#include "core/observer.h"
#include "core/stage.h"
#include "core/world.h"

#define WEFT__MAX_WAVES 64u

/* ---- arena -------------------------------------------------------------- */

#define WEFT__ARENA_FIRST (64u << 10)
#define WEFT__ARENA_MAX_BLOCK (16u << 20)

void *weft__arena_alloc(weft__arena_t *a, weft__alloc_stats_t *st, size_t n) {
  n = (n + 7) & ~(size_t)7;
  /* Blocks too small for this request are skipped, not freed: the next
   * transaction of the same shape reuses every block as it is. */
  while (a->cur && a->used + n > a->cur->size) {
    a->cur = a->cur->next;
    a->used = 0;
  }
  if (!a->cur) {
    size_t size = a->tail ? a->tail->size * 2 : WEFT__ARENA_FIRST;
    if (size > WEFT__ARENA_MAX_BLOCK)
      size = WEFT__ARENA_MAX_BLOCK;
    if (size < n)
      size = n;
    weft__ablock_t *b = weft__alloc(st, sizeof(*b) + size, 16);
    if (!b)
      return NULL;
    b->next = NULL;
    b->size = size;
    if (a->tail)
      a->tail->next = b;
    else
      a->head = b;
    a->tail = b;
    a->cur = b;
    a->used = 0;
  }
  void *p = a->cur->data + a->used;
  a->used += n;
  a->taken += n;
  return p;
}

int weft__arena_reserve(weft__arena_t *a, weft__alloc_stats_t *st,
                        size_t bytes) {
  bytes = (bytes + 7) & ~(size_t)7;
  for (weft__ablock_t *b = a->head; b; b = b->next)
    if (b->size >= bytes)
      return 0;
  /* One block that holds it all, at the tail: the requests walk the
   * smaller blocks first and finish in it. */
  weft__ablock_t *b = weft__alloc(st, sizeof(*b) + bytes, 16);
  if (!b)
    return WEFT_ENOMEM;
  b->next = NULL;
  b->size = bytes;
  if (a->tail)
    a->tail->next = b;
  else
    a->head = a->cur = b;
  a->tail = b;
  return 0;
}

void weft__arena_reset(weft__arena_t *a) {
  a->cur = a->head;
  a->used = 0;
  a->taken = 0;
}

void weft__arena_fini(weft__arena_t *a) {
  for (weft__ablock_t *b = a->head, *next; b; b = next) {
    next = b->next;
    weft__free(b, sizeof(*b) + b->size, 16);
  }
  memset(a, 0, sizeof(*a));
}

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
  weft__free(t->bufs, 0, 16);
  weft__free(t->buf_epochs, 0, 16);
  weft__free(t->fast, 0, 16);
  weft__free(t->group_runs, 0, 16);
  weft__arena_fini(&t->arena);
  weft__free(t->merge_pos, 0, 16);
  memset(t, 0, sizeof(*t));
}

/* ---- slots of staged spawns ---------------------------------------------- */

int weft__reserve_slot(weft_world_t *w, weft_entity_t *out) {
  weft__index_t *ix = &w->index;
  /* A batch spawn that is running (its fill callback or observers staged
   * this) keeps the slots it has yet to issue. */
  uint32_t hold = w->txn.batch_hold;
  int rc = weft__index_check_room(ix, 1 + hold);
  WEFT_CHECK(w, rc == 0, rc, "cannot spawn: capacity %u, alive %u, retired %u",
             ix->capacity, ix->alive, ix->retired);
  rc = weft__index_reserve(ix, &w->alloc, ix->hwm + 1 + hold);
  WEFT_CHECK(w, rc == 0, rc, "out of memory growing the entity index");
  weft_entity_t e = weft__index_issue_reserved(ix);
  w->txn.reserved++;
  *out = e;
  return 0;
}

void weft__unreserve_slot(weft_world_t *w, uint32_t slot) {
  weft__record_t *r = weft__index_rec(&w->index, slot);
  weft__index_kill(&w->index, &w->alloc, r, slot, r->v & WEFT__GEN_MASK);
  w->txn.reserved--;
}

/* ---- staging (the per-entity primitives are in stage.h) ------------------ */

int weft__stage_dropped(weft_world_t *w, const char *what) {
  w->txn.dropped++;
  return weft__fail(w, WEFT_ENOMEM, WEFT__FILE, WEFT__LINE,
                    "out of memory staging %s: dropped", what);
}

int weft__stage_batch(weft_world_t *w, uint32_t op, weft_component_t c,
                      const void *value, const weft_entity_t *members,
                      uint32_t n) {
  weft__txn_t *t = &w->txn;
  if (weft__grow(&w->alloc, &t->batches, &t->batches_cap, t->nbatches + 1,
                 sizeof(*t->batches), 16))
    return WEFT_ENOMEM;
  t->batches[t->nbatches++] = (weft__batch_t){.members = members,
                                              .value = value,
                                              .n = n,
                                              .comp = (uint16_t)c,
                                              .op = (uint8_t)op};
  t->commands++;
  return 0;
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
  int rc = fold_ops(w, base, first, &target);
  if (rc)
    return rc;
  if (target != base) {
    weft__obs_move_out(w, base, target, at.chunk, at.row);
    /* Observers cannot move rows (their structural calls stage), but
     * they may have written values: look the row up again anyway. */
    weft__locate(w, e, &at);
    weft__chunk_t *dc;
    uint32_t dr;
    rc = move_row(w, at.rec, at.chunk, at.row, target, &dc, &dr);
    if (rc)
      return rc;
    write_values(w, target, dc, dr, first);
    weft__obs_move_in(w, base, target, dc, dr);
  } else {
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
    weft__locate(w, s.e, &at);
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
  return weft__archetype_get(w, &m, &none, target);
}

static int place_spawn(weft_world_t *w, weft_entity_t e, weft__op_t *first) {
  weft__archetype_t *target;
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
    return rc;
  }
  for (uint32_t i = 0; i < target->narrays; i++) {
    uint32_t elem = target->arrays[i].elem;
    memset(weft__chunk_at(c, i, elem, row), 0, elem);
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
  /* Decide before collecting: trying again from every stage of a run
   * must not cost a scan of the whole run. */
  if (fold_ops(w, a, &t->stages[i].op0, &b))
    return 0;
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
    k += m;
    nruns += nr;
    if (i + k < end || end == s1)
      break; /* the group ended */
  }
  if (k)
    weft__move_group_close(w, a, k, t->group_runs, nruns);
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

static int phase_batches(weft_world_t *w, uint32_t b0, uint32_t b1) {
  weft__txn_t *t = &w->txn;
  int err = 0;
  for (uint32_t i = b0; i < b1; i++) {
    weft__batch_t b = t->batches[i];
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

/*
 * Takes the slots for a fast-path run in the order weft__reserve_slot()
 * would take them one at a time, and notes them in f. Consecutive slots
 * (the sweep range after a clear, fresh slots above the high-water mark)
 * are only counted here: their records are written once, when the drain
 * places the rows. That is safe because nothing can name these handles
 * before then (the fast path runs only when no command names a pending
 * handle and no observer exists). Returns how many got a slot.
 */
static uint32_t reserve_slots(weft_world_t *w, weft__fast_spawn_t *f) {
  weft__index_t *ix = &w->index;
  uint32_t n = f->run->count, i = 0;
  f->nsweep = f->nsingle = 0;
  if (ix->free_n == 0 && ix->retired == 0 && ix->sweep < ix->sweep_end) {
    /* Nothing retired and no free list: the sweep range is consecutive
     * free slots. */
    uint32_t k = ix->sweep_end - ix->sweep;
    f->nsweep = i = k < n ? k : n;
    f->sweep0 = ix->sweep;
    ix->sweep += i;
    ix->alive += i;
    w->txn.reserved += i;
  }
  while (i < n && (ix->free_n || weft__index_sweep_next(ix))) {
    if (weft__reserve_slot(w, &f->out[i]))
      return i;
    f->nsingle++;
    i++;
  }
  uint32_t fresh = ix->capacity - ix->hwm, left = weft__index_remaining(ix);
  uint32_t k = n - i;
  if (k > fresh)
    k = fresh;
  if (k > left)
    k = left;
  if (k && weft__index_reserve(ix, &w->alloc, ix->hwm + k))
    return i;
  f->fresh0 = ix->hwm;
  ix->hwm += k;
  ix->alive += k;
  w->txn.reserved += k;
  return i + k;
}

/* The slot of spawn r of a fast entry, and whether its handle was issued
 * already (free-list slots) or is made at placement. */
static uint32_t fast_slot(const weft__fast_spawn_t *f, uint32_t r,
                          bool *issued) {
  *issued = false;
  if (r < f->nsweep)
    return f->sweep0 + r;
  if (r < f->nsweep + f->nsingle) {
    *issued = true;
    return (uint32_t)f->out[r];
  }
  return f->fresh0 + (r - f->nsweep - f->nsingle);
}

int weft__txn_fast_spawn(weft_world_t *w, const weft__spawn_run_t *run,
                         weft_entity_t *out) {
  weft__txn_t *t = &w->txn;
  if (WEFT__UNLIKELY(t->nfast == t->fast_cap) &&
      weft__grow(&w->alloc, &t->fast, &t->fast_cap, t->nfast + 1,
                 sizeof(*t->fast), 256)) {
    memset(out, 0, run->count * sizeof(*out));
    t->dropped += run->count;
    return WEFT_ENOMEM;
  }
  /* Slots are taken now, in merge order, exactly as staged spawns take
   * them: which path a spawn takes never changes its handle. */
  weft__fast_spawn_t *f = &t->fast[t->nfast++];
  *f = (weft__fast_spawn_t){.run = run, .out = out};
  f->got = reserve_slots(w, f);
  t->commands += run->count;
  if (f->got == run->count)
    return 0;
  memset(out + f->got, 0, (run->count - f->got) * sizeof(*out));
  t->dropped += run->count - f->got;
  int rc = weft__index_check_room(&w->index, run->count - f->got);
  return weft__fail(w, rc ? rc : WEFT_ENOMEM, WEFT__FILE, WEFT__LINE,
                    "%u spawns did not fit and were dropped",
                    run->count - f->got);
}

static bool same_list(const weft__spawn_run_t *a, const weft__spawn_run_t *b) {
  return a->comps == b->comps ||
         (a->n == b->n &&
          memcmp(a->comps, b->comps, a->n * sizeof(*a->comps)) == 0);
}

/* The archetype of a spawn list (validated when it was recorded). */
static int list_archetype(weft_world_t *w, const weft__spawn_run_t *run,
                          weft__archetype_t **out) {
  weft__mask_t m = {{0}}, none = {{0}};
  for (uint32_t i = 0; i < run->n; i++)
    weft__mask_set(&m, run->comps[i]);
  return weft__archetype_get(w, &m, &none, out);
}

/*
 * Makes n consecutive slots idx.. (one index page) live at rows row0.. of
 * chunk c and writes their handles to the chunk and to out. A slot taken
 * off the free list comes alone, with its handle (issued).
 */
static void place_records(weft_world_t *w, weft__chunk_t *c, uint32_t row0,
                          uint32_t idx, uint32_t n, weft_entity_t issued,
                          weft_entity_t *restrict out) {
  weft__index_t *ix = &w->index;
  weft__record_t *restrict rec = weft__index_rec(ix, idx);
  weft_entity_t *restrict ents = c->entities + row0;
  const uint32_t loc0 = WEFT__REC_LOC | c->id << ix->row_bits | row0;
  for (uint32_t j = 0; j < n; j++) {
    uint32_t gen = issued ? weft_entity_generation(issued)
                          : (rec[j].v & WEFT__GEN_MASK) + 1;
    rec[j].v = loc0 + j;
    weft_entity_t e = ix->tag | ((uint64_t)gen << 32) | (idx + j);
    ents[j] = e;
    out[j] = e;
  }
}

/* Copies spawns [s, s + m) of a run into rows [row0, row0 + m) of c, an
 * archetype a chunk: their reserved slots go live, their values are
 * copied as column slices. */
static void place_slice(weft_world_t *w, weft__archetype_t *a, weft__chunk_t *c,
                        uint32_t row0, const weft__fast_spawn_t *f, uint32_t s,
                        uint32_t m, const weft__column_t *const *cols) {
  const weft__spawn_run_t *run = f->run;
  /* Each record is written whole: counted slots were left untouched (see
   * reserve_slots), free-list ones carry the reserved mark. */
  for (uint32_t r = 0; r < m;) {
    bool issued;
    uint32_t idx = fast_slot(f, s + r, &issued);
    /* The longest stretch of consecutive slots from here, within one
     * index page. */
    uint32_t span = 1;
    if (!issued) {
      uint32_t seg_end = s + r < f->nsweep ? f->nsweep : f->got;
      uint32_t page_left = WEFT__PAGE_SIZE - (idx & WEFT__PAGE_MASK);
      span = seg_end - (s + r);
      if (span > m - r)
        span = m - r;
      if (span > page_left)
        span = page_left;
    }
    place_records(w, c, row0 + r, idx, span, issued ? f->out[s + r] : 0,
                  f->out + s + r);
    r += span;
  }
  /* No zero fill: the archetype is exactly the run's component list, and
   * every column of the run is written below (zeros where no value was
   * recorded). */
  for (uint32_t v = 0; v < run->n; v++) {
    const weft__column_t *col = cols[v];
    if (!col)
      continue; /* a tag */
    const uint8_t *src = run->cols[v] + (size_t)s * run->sizes[v];
    if (!col->soa) {
      memcpy(weft__chunk_at(c, col->first_array, col->size, row0), src,
             (size_t)m * col->size);
      continue;
    }
    for (uint32_t r = 0; r < m; r++)
      weft__column_write(a, col, c, row0 + r, src + (size_t)r * col->size);
  }
}

/* Places runs [i, j) of the fast list, which share a component list, into
 * archetype a (room reserved). */
static void fast_place(weft_world_t *w, weft__archetype_t *a, uint32_t i,
                       uint32_t j) {
  weft__txn_t *t = &w->txn;
  const weft__spawn_run_t *run0 = t->fast[i].run;
  const weft__column_t *cols[64];
  for (uint32_t v = 0; v < run0->n; v++)
    cols[v] = weft__archetype_col(a, run0->comps[v]);
  uint32_t total = 0;
  for (uint32_t f = i; f < j; f++) {
    uint32_t k = t->fast[f].got;
    for (uint32_t done = 0; done < k;) {
      weft__chunk_t *c;
      uint32_t row0, m;
      weft__archetype_push_range(w, a, k - done, &c, &row0, &m);
      place_slice(w, a, c, row0, &t->fast[f], done, m, cols);
      done += m;
    }
    total += k;
  }
  t->reserved -= total;
  w->spawns += total;
  w->version++;
}

/* Places the fast list, run by run of equal component lists. */
static int place_fast(weft_world_t *w) {
  weft__txn_t *t = &w->txn;
  int err = 0;
  for (uint32_t i = 0; i < t->nfast;) {
    uint32_t j = i + 1, rows = t->fast[i].got;
    while (j < t->nfast && same_list(t->fast[j].run, t->fast[i].run))
      rows += t->fast[j++].got;
    weft__archetype_t *a = NULL;
    int rc = list_archetype(w, t->fast[i].run, &a);
    if (rc == 0)
      rc = weft__archetype_reserve_rows(w, a, rows);
    if (rc == 0) {
      fast_place(w, a, i, j);
    } else {
      /* No memory for the rows: drop these spawns, give their slots back. */
      for (uint32_t f = i; f < j; f++) {
        weft__fast_spawn_t *fs = &t->fast[f];
        for (uint32_t q = 0; q < fs->got; q++) {
          bool issued;
          uint32_t idx = fast_slot(fs, q, &issued);
          weft__unreserve_slot(w, idx);
          fs->out[q] = WEFT_ENTITY_NULL;
        }
        t->dropped += fs->got;
      }
      if (!err)
        err = rc;
    }
    i = j;
  }
  t->nfast = 0;
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
         t->nfast) {
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
    if (kinds[WEFT__ST_DESPAWN] || kinds[WEFT__ST_CANCELLED])
      phase_despawns(w, s0, s1);
    int rc = t->nfast ? place_fast(w) : 0;
    if (kinds[WEFT__ST_SPAWN]) {
      int rs = phase_spawns(w, s0, s1);
      rc = rc ? rc : rs;
    }
    int rc2 = kinds[WEFT__ST_MUTATE] ? phase_moves(w, s0, s1) : 0;
    int rc3 = phase_batches(w, b0, b1);
    if (!err)
      err = rc ? rc : rc2 ? rc2 : rc3;
    waves++;
    t->waves++;
  }
  t->nstages = t->nops = t->nbatches = t->nfast = 0;
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
  if (weft__txn_in_scope(t) || t->draining || !(t->nstages || t->nbatches))
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
   * the scope of an iterator started after this. */
  w->txn.unwinds++;
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

void weft__txn_iter_enter(const weft_world_t *w) {
  atomic_fetch_add_explicit(&((weft_world_t *)w)->txn.route, 1,
                            memory_order_relaxed);
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
      (w->txn.nstages || w->txn.nbatches))
    weft__txn_drain(w);
}

/* ---- the staged forms of the entity.h calls --------------------------------
 */

/* Runs a staged call; outside any scope (observers force the staged path)
 * the call gets its own scope and drains at once. */
#define STAGED_CALL(w, body)                                                   \
  do {                                                                         \
    bool outer_ = !weft__txn_in_scope(&(w)->txn) && !(w)->txn.draining;        \
    if (outer_)                                                                \
      weft__scope_open(w);                                                     \
    int rc_ = (body);                                                          \
    if (outer_) {                                                              \
      weft__scope_close(w);                                                    \
      int drc_ = weft__txn_drain(w);                                           \
      if (!rc_)                                                                \
        rc_ = drc_;                                                            \
    }                                                                          \
    return rc_;                                                                \
  } while (0)

/* A copy of a component value in the transaction's arena. */
static int copy_value(weft_world_t *w, weft_component_t c, const void *value,
                      const void **out) {
  int rc = weft__arena_dup(&w->txn.arena, &w->alloc, value,
                           w->registry.items[c - 1].size, out);
  WEFT_CHECK(w, rc == 0, rc, "out of memory staging a value");
  return 0;
}

/* Checks that e is live or a staged spawn of this transaction. */
static int check_target(weft_world_t *w, weft_entity_t e) {
  if (weft__lookup(w, e) || weft__index_is_reserved(&w->index, e))
    return 0;
  weft__count_stale(w);
  return weft__fail(w, WEFT_ESTALE, WEFT__FILE, WEFT__LINE,
                    "entity %#llx is not live in this world",
                    (unsigned long long)e);
}

static int do_staged_op(weft_world_t *w, uint32_t op, weft_entity_t e,
                        weft_component_t c, const void *value) {
  int rc = check_target(w, e);
  if (rc)
    return rc;
  /* A set on a committed entity that has the component and nothing
   * staged writes through at once. */
  if (op == WEFT__OP_SET && !weft__stage_find(&w->txn, (uint32_t)e)) {
    weft__where_t at;
    if (weft__locate(w, e, &at) && weft__mask_test(&at.arch->present, c)) {
      const weft__column_t *col = weft__archetype_col(at.arch, c);
      if (col)
        weft__column_write(at.arch, col, at.chunk, at.row, value);
      return 0;
    }
  }
  const void *copy;
  rc = copy_value(w, c, value, &copy);
  if (rc)
    return rc;
  rc = weft__stage_op(w, e, op, c, copy);
  WEFT_CHECK(w, rc == 0, rc, "out of memory staging a change");
  return 0;
}

int weft__staged_op(weft_world_t *w, uint32_t op, weft_entity_t e,
                    weft_component_t c, const void *value) {
  STAGED_CALL(w, do_staged_op(w, op, e, c, value));
}

static int do_staged_despawn(weft_world_t *w, weft_entity_t e) {
  int rc = check_target(w, e);
  if (rc)
    return rc;
  rc = weft__stage_despawn(w, e);
  WEFT_CHECK(w, rc == 0, rc, "out of memory staging a despawn");
  return 0;
}

int weft__staged_despawn(weft_world_t *w, weft_entity_t e) {
  STAGED_CALL(w, do_staged_despawn(w, e));
}

static int do_staged_spawn(weft_world_t *w, const weft_component_t *comps,
                           const void *const *values, weft_entity_t *out) {
  weft__mask_t seen;
  uint32_t n;
  int rc = weft__list_mask(w, comps, WEFT__SPAWN_MAX, &seen, &n);
  if (rc)
    return rc;
  weft_entity_t e;
  rc = weft__reserve_slot(w, &e);
  if (rc)
    return rc;
  rc = weft__stage_spawn(w, e);
  if (rc) {
    weft__unreserve_slot(w, (uint32_t)e);
    return weft__fail(w, rc, WEFT__FILE, WEFT__LINE,
                      "out of memory staging a spawn");
  }
  for (uint32_t i = 0; i < n; i++) {
    const void *copy;
    rc = copy_value(w, comps[i], values ? values[i] : NULL, &copy);
    if (rc == 0)
      rc = weft__stage_op(w, e, WEFT__OP_ADD, comps[i], copy);
    if (rc) {
      /* All or nothing: the staged spawn is cancelled (its stage exists,
       * so this allocates nothing) and its slot goes back at the drain. */
      (void)weft__stage_despawn(w, e);
      *out = WEFT_ENTITY_NULL;
      return weft__fail(w, rc, WEFT__FILE, WEFT__LINE,
                        "out of memory staging a spawn's values");
    }
  }
  *out = e;
  return 0;
}

int weft__staged_spawn(weft_world_t *w, const weft_component_t *comps,
                       const void *const *values, weft_entity_t *out) {
  STAGED_CALL(w, do_staged_spawn(w, comps, values, out));
}
