/* SPDX-License-Identifier: MIT */
/*
 * Staging primitives: finding or creating an entity's stage and appending
 * an operation to it. Inline because weft_world_apply() runs them once per
 * command; shared by stage.c (the staged calls), txn.c (the drain) and
 * merge.c (the merge).
 */
#ifndef WEFT_CORE_STAGE_H
#define WEFT_CORE_STAGE_H

#include <string.h>

#include "core/world.h"

static inline weft__stage_t *weft__stage_find(weft__txn_t *t, uint32_t slot) {
  if (slot >= t->stage_of_cap)
    return NULL;
  uint32_t i = t->stage_of[slot];
  if (i >= t->open_from && i < t->nstages && (uint32_t)t->stages[i].e == slot)
    return &t->stages[i];
  return NULL;
}

/* Makes the slot -> stage map cover slots [0, slots). 0 or WEFT_ENOMEM. */
static inline int weft__stage_of_reserve(weft_world_t *w, uint32_t slots) {
  weft__txn_t *t = &w->txn;
  if (slots <= t->stage_of_cap)
    return 0;
  uint32_t old = t->stage_of_cap;
  if (weft__grow(&w->alloc, &t->stage_of, &t->stage_of_cap, slots,
                 sizeof(*t->stage_of), 1024))
    return WEFT_ENOMEM;
  /* Any value works (entries are checked against the stage), but defined
   * memory keeps memory checkers quiet. */
  memset(t->stage_of + old, 0xff,
         (size_t)(t->stage_of_cap - old) * sizeof(*t->stage_of));
  return 0;
}

static inline __attribute__((always_inline)) int
weft__stage_new(weft_world_t *w, weft_entity_t e, uint32_t kind,
                weft__stage_t **out) {
  weft__txn_t *t = &w->txn;
  uint32_t slot = (uint32_t)e;
  if (WEFT__UNLIKELY(slot >= t->stage_of_cap) &&
      weft__stage_of_reserve(w, slot + 1))
    return WEFT_ENOMEM;
  if (WEFT__UNLIKELY(t->nstages == t->stages_cap) &&
      weft__grow(&w->alloc, &t->stages, &t->stages_cap, t->nstages + 1,
                 sizeof(*t->stages), 256))
    return WEFT_ENOMEM;
  t->stage_of[slot] = t->nstages;
  weft__stage_t *s = &t->stages[t->nstages++];
  s->e = e;
  s->op0 = (weft__op_t){
      .value = NULL, .next = WEFT__TXN_NIL, .flags = weft__kind_flags(kind, 0)};
  t->kinds[kind]++;
  *out = s;
  return 0;
}

/* Stale handles in commands are counted no-ops. */
static inline void weft__count_stale_cmd(weft_world_t *w) {
  w->txn.stale++;
  weft__count_stale(w);
}

/* The open stage of e, created as `kind` if e is live or reserved; NULL
 * with *stale set when e names no entity. */
static inline __attribute__((always_inline)) int
weft__stage_of_entity(weft_world_t *w, weft_entity_t e, uint32_t kind,
                      weft__stage_t **out) {
  *out = NULL;
  weft__stage_t *s = weft__stage_find(&w->txn, (uint32_t)e);
  if (s) {
    if (s->e != e) {
      weft__count_stale_cmd(w); /* an older occupant's handle */
      return 0;
    }
    *out = s;
    return 0;
  }
  /* A reserved slot without an open stage belongs to a spawn of the wave
   * being drained: it is placed before the next wave runs. */
  if (!weft__lookup(w, e) && !weft__index_is_reserved(&w->index, e)) {
    weft__count_stale_cmd(w);
    return 0;
  }
  return weft__stage_new(w, e, kind, out);
}

/* A command that could not get memory for its stage: counts it as dropped
 * and reports it (returns WEFT_ENOMEM), so it is never lost silently.
 * @p what names it ("a change"). Out of line (stage.c). */
int weft__stage_dropped(weft_world_t *w, const char *what) WEFT__COLD;

static inline int weft__stage_spawn(weft_world_t *w, weft_entity_t reserved) {
  weft__stage_t *s;
  return weft__stage_new(w, reserved, WEFT__ST_SPAWN, &s);
}

/*
 * Stages a despawn of e (a counted no-op for a stale handle). WEFT_ENOMEM
 * when e needs a stage and none can be made: the command is then counted
 * as dropped, never lost silently.
 */
static inline int weft__stage_despawn(weft_world_t *w, weft_entity_t e) {
  weft__stage_t *s;
  if (WEFT__UNLIKELY(weft__stage_of_entity(w, e, WEFT__ST_DESPAWN, &s)))
    return weft__stage_dropped(w, "a despawn");
  if (!s)
    return 0;
  w->txn.commands++;
  uint32_t kind = weft__stage_kind(s), to = kind;
  if (kind == WEFT__ST_SPAWN)
    to = WEFT__ST_CANCELLED;
  else if (kind == WEFT__ST_MUTATE)
    to = WEFT__ST_DESPAWN;
  w->txn.kinds[kind]--;
  w->txn.kinds[to]++;
  /* Despawn cancels every staged change of the entity. */
  s->op0 = (weft__op_t){
      .value = NULL, .next = WEFT__TXN_NIL, .flags = weft__kind_flags(to, 0)};
  return 0;
}

/*
 * Appends operation op (component c, value) to e's stage (a counted no-op
 * for a stale handle). WEFT_ENOMEM when there is no memory for the stage
 * or the op: the command is then counted as dropped.
 */
static inline int weft__stage_op(weft_world_t *w, weft_entity_t e, uint32_t op,
                                 weft_component_t c, const void *value) {
  weft__stage_t *s;
  if (WEFT__UNLIKELY(weft__stage_of_entity(w, e, WEFT__ST_MUTATE, &s)))
    return weft__stage_dropped(w, "a change");
  if (!s)
    return 0;
  w->txn.commands++;
  uint32_t kind = weft__stage_kind(s);
  if (kind == WEFT__ST_DESPAWN || kind == WEFT__ST_CANCELLED)
    return 0; /* a staged despawn ignores later changes */
  weft__txn_t *t = &w->txn;
  weft__op_t op_rec = {.value = value,
                       .next = WEFT__TXN_NIL,
                       .comp = (uint16_t)c,
                       .op = (uint8_t)op,
                       .flags = weft__kind_flags(kind, 0)};
  if (s->op0.op == 0) {
    s->op0 = op_rec; /* no other ops yet */
    return 0;
  }
  if (WEFT__UNLIKELY(t->nops == t->ops_cap) &&
      weft__grow(&w->alloc, &t->ops, &t->ops_cap, t->nops + 1, sizeof(*t->ops),
                 256))
    return weft__stage_dropped(w, "a change");
  /* k becomes the last op of the ring: it points at the second op (itself
   * when it is the second), the old last points at it. */
  uint32_t k = t->nops++, last = s->op0.next;
  op_rec.flags = 0;
  op_rec.next = last == WEFT__TXN_NIL ? k : t->ops[last].next;
  t->ops[k] = op_rec;
  if (last != WEFT__TXN_NIL)
    t->ops[last].next = k;
  s->op0.next = k;
  return 0;
}

#endif /* WEFT_CORE_STAGE_H */
