/* SPDX-License-Identifier: MIT */
/*
 * Staging: how structural calls become staged work for the drain
 * (txn.c). The transaction's arena keeps copies of staged values; staged
 * spawns take their slots here, at staging time, so a handle does not
 * depend on when the drain runs; and the entity.h calls made inside a
 * scope (iteration, deferral, observers) come here in their staged forms.
 * The per-entity primitives (finding a stage, appending an op) are inline
 * in stage.h, because weft_world_apply() runs them once per command.
 */
#include "core/txn.h"

#include <stddef.h>
#include <string.h>

#include "core/bulk.h"
#include "core/check.h"
#include "core/stage.h"
#include "core/world.h"

/* ---- arena -------------------------------------------------------------- */

#define WEFT__ARENA_FIRST (64u << 10)
#define WEFT__ARENA_MAX_BLOCK (16u << 20)

/* Allocates a block of size bytes and links it at the arena's tail. */
static weft__ablock_t *append_block(weft__arena_t *a, weft__alloc_stats_t *st,
                                    size_t size) {
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
  return b;
}

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
    weft__ablock_t *b = append_block(a, st, size);
    if (!b)
      return NULL;
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
  weft__ablock_t *b = append_block(a, st, bytes);
  if (!b)
    return WEFT_ENOMEM;
  if (a->head == b)
    a->cur = b; /* the first block */
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
      if (col) {
        weft__column_write(at.arch, col, at.chunk, at.row, value);
        weft__mark_write(w, at.chunk, col, at.row);
      }
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

/* Stages a spawn into e, a slot reserved for it, with the n components of
 * a checked list. */
static int stage_spawn_into(weft_world_t *w, weft_entity_t e,
                            const weft_component_t *comps, uint32_t n,
                            const void *const *values, weft_entity_t *out) {
  int rc = weft__stage_spawn(w, e);
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
  return stage_spawn_into(w, e, comps, n, values, out);
}

int weft__staged_spawn(weft_world_t *w, const weft_component_t *comps,
                       const void *const *values, weft_entity_t *out) {
  STAGED_CALL(w, do_staged_spawn(w, comps, values, out));
}

int weft__staged_spawn_into(weft_world_t *w, weft_entity_t e,
                            const weft_component_t *comps, uint32_t n,
                            const void *const *values) {
  weft_entity_t out;
  STAGED_CALL(w, stage_spawn_into(w, e, comps, n, values, &out));
}
