/* SPDX-License-Identifier: MIT */
/*
 * Spawning with given handles (weft_spawn_at(), weft_spawn_batch_at()),
 * for restoring saved worlds.
 *
 * A handle names a slot and a generation. The slot must be free (not
 * alive, not reserved by a staged spawn, not retired) and the generation
 * newer than the last one the slot issued: an older handle a user still
 * holds must stay a miss. Claiming a slot keeps the index consistent: a
 * slot on the free stack leaves it, a slot of the sweep range (what a
 * clear released) takes the rest of the range onto the free stack first,
 * and a slot above the high-water mark raises it, the slots skipped going
 * on the free stack, lowest on top. Later spawns then never return a
 * claimed slot, and every other slot stays issuable.
 */
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/entity_ops.h"
#include "core/observer.h"
#include "core/query_internal.h"
#include "core/world.h"

/* Slot and generation of a handle (its tag bits do not count). */
static inline uint32_t slot_of(weft_entity_t h) {
  return (uint32_t)h;
}
static inline uint32_t gen_of(weft_entity_t h) {
  return (uint32_t)(h >> 32) & WEFT__GEN_MASK;
}

/* Checks that handle h can be claimed, describing why not on the world. */
static int check_handle(weft_world_t *w, weft_entity_t h) {
  const weft__index_t *ix = &w->index;
  uint32_t idx = slot_of(h), gen = gen_of(h);
  WEFT_CHECK(w, gen >= 1 && gen <= ix->max_gen, WEFT_EINVAL,
             "handle %#llx: generation %u is outside [1, %u]",
             (unsigned long long)h, gen, ix->max_gen);
  WEFT_CHECK(w, idx < ix->capacity, WEFT_EINVAL,
             "handle %#llx: slot %u is beyond the capacity %u",
             (unsigned long long)h, idx, ix->capacity);
  if (idx >= ix->hwm)
    return 0; /* never issued: any generation is newer */
  uint32_t v = weft__index_rec(ix, idx)->v;
  WEFT_CHECK(w, !(v & (WEFT__REC_LOC | WEFT__REC_RESERVED)), WEFT_EEXIST,
             "handle %#llx: slot %u holds a %s entity", (unsigned long long)h,
             idx, v & WEFT__REC_LOC ? "live" : "staged");
  WEFT_CHECK(w, !(v & WEFT__REC_RETIRED), WEFT_ESTALE,
             "handle %#llx: slot %u is retired", (unsigned long long)h, idx);
  WEFT_CHECK(w, gen > (v & WEFT__GEN_MASK), WEFT_ESTALE,
             "handle %#llx: generation %u is not newer than the slot's "
             "last (%u): its handles must stay stale",
             (unsigned long long)h, gen, v & WEFT__GEN_MASK);
  return 0;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* WEFT_EINVAL when two handles name the same slot. */
static int check_distinct(weft_world_t *w, uint32_t n,
                          const weft_entity_t *handles) {
  if (n < 2)
    return 0;
  uint32_t *slots = weft__alloc(&w->alloc, (size_t)n * sizeof(*slots), 16);
  WEFT_CHECK(w, slots, WEFT_ENOMEM, "out of memory checking %u handles", n);
  for (uint32_t i = 0; i < n; i++)
    slots[i] = slot_of(handles[i]);
  qsort(slots, n, sizeof(*slots), cmp_u32);
  uint32_t dup = UINT32_MAX;
  for (uint32_t i = 1; i < n && dup == UINT32_MAX; i++)
    if (slots[i] == slots[i - 1])
      dup = slots[i];
  weft__free(slots, (size_t)n * sizeof(*slots), 16);
  WEFT_CHECK(w, dup == UINT32_MAX, WEFT_EINVAL, "slot %u is named twice", dup);
  return 0;
}

/*
 * Validates every handle and makes room so that claiming them cannot
 * fail: the slots, index pages up to the highest one and free-stack room
 * for the slots a claim may push there. Changes nothing visible.
 */
static int prepare(weft_world_t *w, uint32_t n, const weft_entity_t *handles) {
  weft__index_t *ix = &w->index;
  uint32_t top = 0;
  bool sweep = false;
  for (uint32_t i = 0; i < n; i++) {
    int rc = check_handle(w, handles[i]);
    if (rc)
      return rc;
    uint32_t idx = slot_of(handles[i]);
    top = idx + 1 > top ? idx + 1 : top;
    sweep |= idx >= ix->sweep && idx < ix->sweep_end;
  }
  int rc = check_distinct(w, n, handles);
  if (rc)
    return rc;
  rc = weft__index_check_room(ix, n + w->txn.batch_hold);
  WEFT_CHECK(w, rc == 0, rc,
             "cannot spawn %u: capacity %u, alive %u, retired %u", n,
             ix->capacity, ix->alive, ix->retired);
  uint32_t gaps = top > ix->hwm ? top - ix->hwm : 0;
  uint32_t swept = sweep ? ix->sweep_end - ix->sweep : 0;
  rc = weft__index_reserve(ix, &w->alloc, top > ix->hwm ? top : ix->hwm);
  if (rc == 0 && ix->free_n + gaps + swept > ix->free_cap)
    rc = weft__index_reserve_free(ix, &w->alloc, ix->free_n + gaps + swept);
  WEFT_CHECK(w, rc == 0, rc, "out of memory growing the entity index");
  return 0;
}

/* Moves the sweep range's free slots onto the free stack, below its
 * entries, so that they still issue after them and in index order. */
static void sweep_to_stack(weft__index_t *ix) {
  uint32_t k = 0;
  for (uint32_t s = ix->sweep; s < ix->sweep_end; s++)
    k += !(weft__index_rec(ix, s)->v & WEFT__REC_RETIRED);
  memmove(ix->free + k, ix->free, (size_t)ix->free_n * sizeof(*ix->free));
  uint32_t j = 0;
  for (uint32_t s = ix->sweep_end; s-- > ix->sweep;)
    if (!(weft__index_rec(ix, s)->v & WEFT__REC_RETIRED))
      ix->free[j++] = s;
  ix->free_n += k;
  ix->sweep = ix->sweep_end;
}

/* Claims slot idx (prepared) with record value v: LOC for a placed
 * entity, RESERVED | generation for a staged spawn. */
static void claim(weft__index_t *ix, uint32_t idx, uint32_t v) {
  if (idx >= ix->sweep && idx < ix->sweep_end)
    sweep_to_stack(ix);
  if (idx >= ix->hwm) {
    /* The slots skipped become free; the lowest issues first. */
    for (uint32_t s = idx; s-- > ix->hwm;)
      ix->free[ix->free_n++] = s;
    ix->hwm = idx + 1;
  }
  weft__index_rec(ix, idx)->v = v;
  ix->alive++;
}

/* Takes the claimed slots (records no longer dead) off the free stack,
 * keeping the order of the others. */
static void drop_claimed(weft__index_t *ix) {
  uint32_t j = 0;
  for (uint32_t i = 0; i < ix->free_n; i++) {
    uint32_t v = weft__index_rec(ix, ix->free[i])->v;
    if (!(v & (WEFT__REC_LOC | WEFT__REC_RESERVED)))
      ix->free[j++] = ix->free[i];
  }
  ix->free_n = j;
}

int weft_spawn_at(weft_world_t *w, weft_entity_t handle,
                  const weft_component_t *comps, const void *const *values,
                  weft_entity_t *out) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  static const weft_component_t none[1] = {WEFT_COMPONENT_NONE};
  weft__mask_t m;
  uint32_t n;
  int rc = weft__list_mask(w, comps ? comps : none, WEFT__SPAWN_MAX, &m, &n);
  if (rc == 0)
    rc = prepare(w, 1, &handle);
  if (rc)
    return rc;
  /* The slot is reserved like a staged spawn's, and the spawn takes the
   * staged path, which expands requirements, runs observers and drains
   * at once outside a scope. */
  weft__index_t *ix = &w->index;
  uint32_t gen = gen_of(handle);
  weft_entity_t e = weft__index_handle(ix, slot_of(handle), gen);
  claim(ix, slot_of(handle), WEFT__REC_RESERVED | gen);
  drop_claimed(ix);
  w->txn.reserved++;
  rc = weft__staged_spawn_into(w, e, comps ? comps : none, n, values);
  if (out)
    *out = rc ? WEFT_ENTITY_NULL : e;
  return rc;
}

/* The archetype of a spawn list, requirements included. */
static int list_archetype(weft_world_t *w, const weft_component_t *comps,
                          weft__archetype_t **a, uint32_t *n) {
  weft__mask_t m, none = {{0}};
  int rc = weft__list_mask(w, comps, WEFT_QUERY_MAX_TERMS, &m, n);
  if (rc)
    return rc;
  weft__req_expand_list(&w->registry, comps, *n, &m);
  return weft__archetype_get(w, &m, &none, a);
}

/* Places handles[done, done + k) (claimed) at rows row0.. of chunk c. */
static void place_rows(weft_world_t *w, weft__chunk_t *c, uint32_t row0,
                       uint32_t k, const weft_entity_t *handles,
                       weft_entity_t *out) {
  weft__index_t *ix = &w->index;
  for (uint32_t r = 0; r < k; r++) {
    uint32_t idx = slot_of(handles[r]), gen = gen_of(handles[r]);
    weft_entity_t e = weft__index_handle(ix, idx, gen);
    weft__index_place(ix, idx, c->id, row0 + r);
    c->entities[row0 + r] = e;
    if (out)
      out[r] = e;
  }
}

int weft_spawn_batch_at(weft_world_t *w, uint32_t n,
                        const weft_entity_t *handles,
                        const weft_component_t *comps, weft_fill_fn fill,
                        void *user, weft_entity_t *out) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  WEFT_CHECK(w, n == 0 || handles, WEFT_EINVAL, "handles is NULL");
  WEFT_CHECK(w, !weft__txn_in_scope(&w->txn) && !w->txn.draining, WEFT_EBUSY,
             "batch spawns cannot be staged: close the scope first");
  static const weft_component_t none[1] = {WEFT_COMPONENT_NONE};
  if (!comps)
    comps = none;
  weft__archetype_t *a;
  uint32_t ncomps, mark = weft__archetypes_mark(w);
  int rc = list_archetype(w, comps, &a, &ncomps);
  if (rc == 0)
    rc = prepare(w, n, handles);
  if (rc == 0)
    rc = weft__archetype_reserve_rows(w, a, n);
  if (rc || n == 0)
    return weft__rolled_back(w, mark, rc);
  /* Every slot is claimed (reserved) before the first callback, so that
   * a spawn the fill callback stages cannot take one of them. */
  for (uint32_t i = 0; i < n; i++)
    claim(&w->index, slot_of(handles[i]),
          WEFT__REC_RESERVED | gen_of(handles[i]));
  drop_claimed(&w->index);
  /* A scope, as for weft_spawn_batch(): the fill callback's and the
   * observers' structural calls stage and apply at the end. */
  weft__scope_open(w);
  for (uint32_t done = 0; done < n;) {
    weft__chunk_t *c;
    uint32_t row0, k;
    /* Cannot fail: the rows are reserved. */
    weft__archetype_push_range(w, a, n - done, &c, &row0, &k);
    w->version++;
    place_rows(w, c, row0, k, handles + done, out ? out + done : NULL);
    for (uint32_t i = 0; i < a->narrays; i++) {
      const weft__array_t *ar = &a->arrays[i];
      memset(weft__chunk_at(c, i, ar->elem, row0), 0, (size_t)k * ar->elem);
    }
    if (a->ncomps != ncomps) /* requirements came along: their defaults */
      weft__req_fill_list(w, a, c, row0, k, comps, ncomps);
    if (fill) {
      weft_iter_t view;
      weft__iter_view(w, c, row0, k, comps, ncomps, &view);
      fill(user, &view, done);
    }
    if (WEFT__UNLIKELY(w->obs_events & WEFT_EVENT_ENTER))
      weft__obs_enter_range(w, c, row0, k);
    done += k;
  }
  w->spawns += n;
  weft__scope_close(w);
  return weft__txn_settle(w);
}
