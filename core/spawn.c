/* SPDX-License-Identifier: MIT */
/*
 * Spawning entities one by one and in batches, outside a scope (inside
 * one, spawns are staged: stage.c; command-buffer runs: spawn_fast.c).
 * Spawn lists are memoised per world (w->spawn_cache, w->spawn_last), so
 * that code spawning the same list over and over skips its validation and
 * archetype lookup and writes its values inline.
 */
#include <string.h>

#include "core/check.h"
#include "core/entity_ops.h"
#include "core/observer.h"
#include "core/query_internal.h"
#include "core/world.h"

/* A NULL spawn list means this empty one. */
static const weft_component_t no_components[1] = {WEFT_COMPONENT_NONE};

/* The slow half of room_for_one: no room, or a new index page needed. */
static WEFT__COLD int room_slow(weft_world_t *w) {
  int rc = weft__index_check_room(&w->index, 1);
  WEFT_CHECK(w, rc == 0, rc, "cannot spawn: capacity %u, alive %u, retired %u",
             w->index.capacity, w->index.alive, w->index.retired);
  rc = weft__index_reserve(&w->index, &w->alloc, w->index.hwm + 1);
  WEFT_CHECK(w, rc == 0, rc, "out of memory growing the entity index");
  return 0;
}

/* Whether the index can issue one more slot without growing. */
static inline bool index_has_room(const weft__index_t *ix) {
  bool room = weft__index_remaining(ix) > 0;
  bool paged = ix->free_n || ix->hwm < ix->page_count << WEFT__PAGE_BITS;
  return room && paged;
}

/* Makes sure the index can issue one more slot without failing. */
static inline int room_for_one(weft_world_t *w) {
  return WEFT__LIKELY(index_has_room(&w->index)) ? 0 : room_slow(w);
}

/* Places a new entity in archetype a; its row data is left to the caller. */
static int spawn_into(weft_world_t *w, weft__archetype_t *a, weft_entity_t *e,
                      weft__chunk_t **chunk, uint32_t *row) {
  int rc = room_for_one(w);
  if (rc)
    return rc;
  rc = weft__archetype_push(w, a, WEFT_ENTITY_NULL, chunk, row);
  if (rc)
    return rc;
  *e = weft__index_issue(&w->index, false, (*chunk)->id, *row);
  (*chunk)->entities[*row] = *e;
  w->spawns++;
  w->version++;
  return 0;
}

int weft_spawn(weft_world_t *w, weft_entity_t *out) {
  WEFT_CHECK(w, w && out, WEFT_EINVAL, "NULL argument");
  if (WEFT__UNLIKELY(weft__routing(w)))
    return weft__staged_spawn(w, NULL, NULL, out);
  weft__chunk_t *chunk;
  uint32_t row;
  return spawn_into(w, w->root, out, &chunk, &row);
}

int weft__list_mask(weft_world_t *w, const weft_component_t *comps,
                    uint32_t max, weft__mask_t *m, uint32_t *count) {
  int rc = weft__list_check(&w->registry, comps, max, m, count);
  WEFT_CHECK(w, rc != WEFT_ETOOMANY, rc,
             "a component list holds at most %u ids", max);
  WEFT_CHECK(w, rc != WEFT_ENOCOMP, rc, "unknown component id %u",
             (unsigned)comps[*count]);
  WEFT_CHECK(w, rc != WEFT_EINVAL, rc,
             "component %u is listed twice or is a relation (spawn, then "
             "weft_relation_add)",
             (unsigned)comps[*count]);
  return rc;
}

/* A NULL value in a small list copies from here. */
static const uint8_t spawn_zeros[WEFT__SPAWN_SMALL];

/* Whether a column's element fits the small list's inline copies. */
static inline bool spawn_small_size(uint32_t size) {
  return size == 4 || size == 8 || size == 12 || size == 16;
}

/* Whether the remembered list m is comps, terminator included. Reads
 * nothing past comps' terminator: ids are nonzero, so a shorter list
 * differs at its terminator at the latest. One test per id, against the
 * memo's own terminator rather than its count. */
static inline bool memo_is(const weft__spawn_memo_t *m,
                           const weft_component_t *comps) {
  for (uint32_t i = 0;; i++) {
    const weft_component_t id = m->ids[i];
    if (comps[i] != id)
      return false;
    if (id == WEFT_COMPONENT_NONE)
      return true;
  }
}

/* Short lists hash to a memo slot; longer ones take the slow path. */
static inline uint32_t spawn_cache_slot(const weft_component_t *comps,
                                        uint32_t *n) {
  uint32_t h = 0x811c9dc5u, k = 0;
  for (; k <= WEFT__SPAWN_FAST && comps[k]; k++)
    h = (h ^ comps[k]) * 0x01000193u;
  *n = k;
  return (h ^ (h >> 15)) & (WEFT__SPAWN_CACHE - 1);
}

/*
 * The archetype of a spawn list, from the memo. Only lists that passed
 * validation are memoised, and a hit must match the stored list id for id,
 * so a colliding list can never pick the wrong archetype.
 */
static inline const weft__spawn_memo_t *
spawn_cache_find(const weft_world_t *w, const weft_component_t *comps,
                 uint32_t slot, uint32_t n) {
  const weft__spawn_memo_t *m = &w->spawn_cache[slot];
  if (m->n != n || n > WEFT__SPAWN_FAST || !m->arch)
    return NULL;
  for (uint32_t i = 0; i < n; i++)
    if (m->ids[i] != comps[i])
      return NULL;
  return m;
}

/*
 * The archetype a spawn list names (no disabled components). *memo_out is
 * the list's memo entry, or NULL for lists too long to memoise.
 */
static inline int spawn_archetype(weft_world_t *w,
                                  const weft_component_t *comps, uint32_t max,
                                  weft__archetype_t **out, uint32_t *count,
                                  const weft__spawn_memo_t **memo_out) {
  /* Bulk code spawns the same list over and over: try the last entry
   * before hashing. It matches only if it names the same ids and then the
   * list's terminator. */
  const weft__spawn_memo_t *last = w->spawn_last;
  if (last && memo_is(last, comps)) {
    *out = last->arch;
    *count = last->n;
    *memo_out = last;
    return 0;
  }
  uint32_t n, slot = spawn_cache_slot(comps, &n);
  const weft__spawn_memo_t *hit = spawn_cache_find(w, comps, slot, n);
  if (WEFT__LIKELY(hit != NULL)) {
    w->spawn_last = hit;
    *out = hit->arch;
    *count = n;
    *memo_out = hit;
    return 0;
  }
  *memo_out = NULL;
  weft__mask_t m, none = {{0}};
  int rc = weft__list_mask(w, comps, max, &m, count);
  /* What the listed components require joins them (core/require.h). */
  if (!rc && WEFT__UNLIKELY(w->registry.req != NULL))
    weft__req_expand_list(&w->registry, comps, *count, &m);
  if (!rc)
    rc = weft__archetype_get(w, &m, &none, out);
  if (!rc && *count <= WEFT__SPAWN_FAST) {
    weft__spawn_memo_t *memo = &w->spawn_cache[slot];
    memo->arch = *out;
    memo->n = *count;
    memo->plain = true;
    memo->small = true;
    for (uint32_t i = 0; i < *count; i++) {
      const weft__column_t *col = weft__archetype_col(*out, comps[i]);
      memo->ids[i] = comps[i];
      memo->cols[i] = col;
      memo->plain = memo->plain && col && !col->soa;
      memo->small = memo->small && col && spawn_small_size(col->size);
      memo->arr[i] = col ? col->first_array : 0;
      memo->size[i] = col ? col->size : 0;
    }
    memo->ids[*count] = WEFT_COMPONENT_NONE;
    /* A list whose archetype has more components than it names brings
     * requirements along: their defaults take the general path. */
    if ((*out)->ncomps != *count)
      memo->plain = memo->small = false;
    *memo_out = memo;
  }
  return rc;
}

/* Any spawn outside a scope: looks up the list, makes room, writes. */
static WEFT__NOINLINE int spawn_general(weft_world_t *w,
                                        const weft_component_t *comps,
                                        const void *const *values,
                                        weft_entity_t *out) {
  weft__archetype_t *a;
  const weft__spawn_memo_t *memo;
  uint32_t n, mark = weft__archetypes_mark(w);
  int rc = spawn_archetype(w, comps, WEFT__SPAWN_MAX, &a, &n, &memo);
  if (rc)
    return rc;
  weft__chunk_t *chunk;
  uint32_t row;
  rc = spawn_into(w, a, out, &chunk, &row);
  if (rc)
    return weft__rolled_back(w, mark, rc);
  for (uint32_t i = 0; i < n; i++) {
    const weft__column_t *col =
        memo ? memo->cols[i] : weft__archetype_col(a, comps[i]);
    if (col)
      weft__write_or_zero(a, col, chunk, row, values ? values[i] : NULL);
  }
  if (WEFT__UNLIKELY(a->ncomps != n)) /* requirements came along */
    weft__req_fill_list(w, a, chunk, row, 1, comps, n);
  return 0;
}

/*
 * Writes a small list's values (or zeros) to a new row. Every case is an
 * inline copy and a NULL value reads zeros instead of branching to
 * memset, so the loop has no call: the compiler unrolls it over the
 * list's bounded length and keeps it in scratch registers.
 */
static inline void spawn_write_small(const weft__spawn_memo_t *m,
                                     const weft__chunk_t *c, uint32_t row,
                                     const void *const *values) {
  /* Locals: every byte store may alias the memo and the header. */
  uint8_t *const *bases = c->bases;
  for (uint32_t i = 0, n = m->n; i < n; i++) {
    uint8_t *dst = bases[m->arr[i]] + (size_t)row * m->size[i];
    const void *v = values[i] ? values[i] : spawn_zeros;
    switch (m->size[i]) {
    case 4:
      __builtin_memcpy(dst, v, 4);
      break;
    case 8:
      __builtin_memcpy(dst, v, 8);
      break;
    case 12:
      __builtin_memcpy(dst, v, 12);
      break;
    default: /* 16, by spawn_small_size() */
      __builtin_memcpy(dst, v, 16);
      break;
    }
  }
}

/* Writes a plain list's values (or zeros) of any size to a new row. */
static WEFT__NOINLINE void spawn_write_plain(const weft__spawn_memo_t *m,
                                             const weft__chunk_t *c,
                                             uint32_t row,
                                             const void *const *values) {
  for (uint32_t i = 0; i < m->n; i++) {
    uint8_t *dst = weft__chunk_at(c, m->arr[i], m->size[i], row);
    if (values[i])
      weft__copy_elem(dst, values[i], m->size[i]);
    else
      memset(dst, 0, m->size[i]);
  }
}

/*
 * The one-by-one spawn as code that spawns in a loop makes it: the list it
 * spawned last, every column array-of-structs, room in the archetype's last
 * chunk and a slot the index can issue without growing. Everything else
 * returns false and takes the general path, which handles it all.
 */
static inline bool spawn_repeat(weft_world_t *w, const weft_component_t *comps,
                                const void *const *values, weft_entity_t *out) {
  const weft__spawn_memo_t *m = w->spawn_last;
  if (!m || !m->plain || !values || !memo_is(m, comps))
    return false;
  weft__archetype_t *a = m->arch;
  weft__chunk_t *c = a->tail;
  /* A non-empty free stack alone proves room: a dead slot that is not
   * retired lies below the high-water mark, on a page that exists. */
  const weft__index_t *ix = &w->index;
  if (WEFT__UNLIKELY(!c || c->count == a->row_cap ||
                     (ix->free_n == 0 && !index_has_room(ix))))
    return false;
  uint32_t row = c->count++;
  a->count++;
  c->sversion = *a->change_version;
  weft_entity_t e = weft__index_issue(&w->index, false, c->id, row);
  c->entities[row] = e;
  if (WEFT__LIKELY(m->small))
    spawn_write_small(m, c, row, values);
  else
    spawn_write_plain(m, c, row, values);
  w->spawns++;
  w->version++;
  *out = e;
  return true;
}

int weft_spawn_with(weft_world_t *w, const weft_component_t *comps,
                    const void *const *values, weft_entity_t *out) {
  WEFT_CHECK(w, w && out, WEFT_EINVAL, "NULL argument");
  if (WEFT__UNLIKELY(weft__routing(w)))
    return weft__staged_spawn(w, comps, values, out);
  if (!comps)
    comps = no_components;
  if (WEFT__LIKELY(spawn_repeat(w, comps, values, out)))
    return 0;
  return spawn_general(w, comps, values, out);
}

/* Reserves index pages and chunks so that a batch cannot fail midway. */
static int batch_reserve(weft_world_t *w, weft__archetype_t *a, uint32_t n) {
  weft__index_t *ix = &w->index;
  int rc = weft__index_check_room(ix, n);
  WEFT_CHECK(w, rc == 0, rc,
             "cannot spawn %u: capacity %u, alive %u, retired %u", n,
             ix->capacity, ix->alive, ix->retired);
  uint32_t fresh = ix->capacity - ix->hwm;
  if (fresh > n)
    fresh = n;
  rc = weft__index_reserve(ix, &w->alloc, ix->hwm + fresh);
  WEFT_CHECK(w, rc == 0, rc, "out of memory growing the entity index");
  return weft__archetype_reserve_rows(w, a, n);
}

int weft_spawn_batch(weft_world_t *w, uint32_t n, const weft_component_t *comps,
                     weft_fill_fn fill, void *user, weft_entity_t *out) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  WEFT_CHECK(w, !weft__txn_in_scope(&w->txn) && !w->txn.draining, WEFT_EBUSY,
             "batch spawns cannot be staged: close the scope first");
  if (!comps)
    comps = no_components;
  weft__archetype_t *a;
  uint32_t ncomps, mark = weft__archetypes_mark(w);
  const weft__spawn_memo_t *memo;
  int rc = spawn_archetype(w, comps, WEFT_QUERY_MAX_TERMS, &a, &ncomps, &memo);
  if (rc || n == 0)
    return rc;
  rc = batch_reserve(w, a, n);
  if (rc)
    return weft__rolled_back(w, mark, rc);
  /* The batch is a scope: structural calls from the fill callback or from
   * observers stage and apply when the batch is complete. */
  weft__scope_open(w);
  w->txn.batch_hold = n;
  for (uint32_t done = 0; done < n;) {
    weft__chunk_t *c;
    uint32_t row0, k;
    /* Cannot fail: batch_reserve made every chunk this needs a spare. */
    weft__archetype_push_range(w, a, n - done, &c, &row0, &k);
    /* Each slice is a structural change of its own: the fill callback and
     * observers may iterate queries, whose caches follow the version. */
    w->version++;
    weft__index_issue_rows(&w->index, c->id, row0, k, c->entities,
                           out ? out + done : NULL);
    w->txn.batch_hold -= k;
    /* Not the dirty bytes: the rows arrived dirty (weft__dirty_arrive()). */
    for (uint32_t i = 0; i < a->narrays - a->ndirty; i++) {
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
    /* Batch spawns report query membership as ranges, no SPAWN events. */
    if (WEFT__UNLIKELY(
            w->obs_events &
            (WEFT_EVENT_ENTER | WEFT_EVENT_ARCHETYPE_ENTER | WEFT__EVENT_LOG)))
      weft__obs_enter_range(w, c, row0, k);
    done += k;
  }
  w->spawns += n;
  weft__scope_close(w);
  return weft__txn_settle(w);
}
