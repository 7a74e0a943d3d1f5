/* SPDX-License-Identifier: MIT */
/*
 * Per-entity operations: spawn, despawn, component add/remove/set/get and
 * enable/disable. Every entry point resolves its handle through the index
 * first, so a stale, forged or foreign handle is a counted miss that reads
 * nothing of the slot's current occupant.
 */
#include <string.h>

#include "core/check.h"
#include "core/observer.h"
#include "core/query_internal.h"
#include "core/world.h"

/* A NULL spawn list means this empty one. */
static const weft_component_t no_components[1] = {WEFT_COMPONENT_NONE};

/* weft__locate(), counting a miss as a stale handle. */
static inline bool resolve(const weft_world_t *w, weft_entity_t e,
                           weft__where_t *at) {
  if (WEFT__LIKELY(weft__locate(w, e, at)))
    return true;
  weft__count_stale(w);
  return false;
}

/* resolve() for the readers by handle: only the chunk table entry and the
 * row, so the chunk header's line stays off the chain of dependent loads
 * between the record and the row. */
static inline bool resolve_slot(const weft_world_t *w, weft_entity_t e,
                                const weft__chunk_slot_t **slot,
                                uint32_t *row) {
  if (WEFT__LIKELY(weft__index_find(&w->index, w->index.table, e, slot, row)))
    return true;
  weft__count_stale(w);
  return false;
}

static inline bool comp_known(const weft_world_t *w, weft_component_t c) {
  return c >= 1 && c <= w->registry.count;
}

/* Fails with ESTALE or ENOCOMP for the mutating entry points. */
#define RESOLVE_OR_FAIL(w, e, at)                                              \
  WEFT_CHECK(w, resolve(w, e, at), WEFT_ESTALE,                                \
             "entity %#llx is not live in this world",                         \
             (unsigned long long)(e))
#define COMP_OR_FAIL(w, c)                                                     \
  WEFT_CHECK(w, comp_known(w, c), WEFT_ENOCOMP, "unknown component id %u",     \
             (unsigned)(c))

/* Stores value (or zeros) in a row's column; AoS copies stay inline. */
static inline void write_or_zero(const weft__archetype_t *a,
                                 const weft__column_t *col,
                                 weft__chunk_t *chunk, uint32_t row,
                                 const void *value) {
  if (value && !col->soa)
    weft__copy_elem(weft__chunk_at(chunk, col->first_array, col->size, row),
                    value, col->size);
  else if (value)
    weft__column_write(a, col, chunk, row, value);
  else
    weft__column_zero(a, col, chunk, row);
}

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

/* A call that failed after creating archetypes (the world had mark of them
 * before it) drops them again, so that it leaves nothing behind. Inline,
 * so that callers see it return their nonzero rc. */
static inline int rolled_back(weft_world_t *w, uint32_t mark, int rc) {
  weft__archetypes_rollback(w, mark);
  return rc;
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
  WEFT_CHECK(w, rc != WEFT_EINVAL, rc, "component %u is listed twice",
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
  uint32_t n, mark = w->arch_count;
  int rc = spawn_archetype(w, comps, WEFT__SPAWN_MAX, &a, &n, &memo);
  if (rc)
    return rc;
  weft__chunk_t *chunk;
  uint32_t row;
  rc = spawn_into(w, a, out, &chunk, &row);
  if (rc)
    return rolled_back(w, mark, rc);
  for (uint32_t i = 0; i < n; i++) {
    const weft__column_t *col =
        memo ? memo->cols[i] : weft__archetype_col(a, comps[i]);
    if (col)
      write_or_zero(a, col, chunk, row, values ? values[i] : NULL);
  }
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
static inline bool spawn_fast(weft_world_t *w, const weft_component_t *comps,
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
  if (WEFT__LIKELY(spawn_fast(w, comps, values, out)))
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
  uint32_t ncomps, mark = w->arch_count;
  const weft__spawn_memo_t *memo;
  int rc = spawn_archetype(w, comps, WEFT_QUERY_MAX_TERMS, &a, &ncomps, &memo);
  if (rc || n == 0)
    return rc;
  rc = batch_reserve(w, a, n);
  if (rc)
    return rolled_back(w, mark, rc);
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
    for (uint32_t i = 0; i < a->narrays; i++) {
      const weft__array_t *ar = &a->arrays[i];
      memset(weft__chunk_at(c, i, ar->elem, row0), 0, (size_t)k * ar->elem);
    }
    if (fill) {
      weft_iter_t view;
      weft__iter_view(w, c, row0, k, comps, ncomps, &view);
      fill(user, &view, done);
    }
    /* Batch spawns report query membership as ranges, no SPAWN events. */
    if (WEFT__UNLIKELY(w->obs_events & WEFT_EVENT_ENTER))
      weft__obs_enter_range(w, c, row0, k);
    done += k;
  }
  w->spawns += n;
  weft__scope_close(w);
  return weft__txn_settle(w);
}

int weft_despawn(weft_world_t *w, weft_entity_t e) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  if (WEFT__UNLIKELY(weft__routing(w)))
    return weft__staged_despawn(w, e);
  weft__where_t at;
  RESOLVE_OR_FAIL(w, e, &at);
  /* Kill first: the row copy that follows then needs only the archetype,
   * chunk and row, which keeps its loop out of spilled registers. The
   * moved row is never e's, so the order changes nothing else. */
  weft__index_kill_entity(&w->index, &w->alloc, at.rec, e);
  weft__row_remove(w, at.arch, at.chunk, at.row);
  w->despawns++;
  w->version++;
  return 0;
}

bool weft_is_alive(const weft_world_t *w, weft_entity_t e) {
  return w && weft__lookup(w, e) != NULL;
}

/*
 * Moves resolved entity e along the edge op/c; at is updated to the new row
 * and *taken to the edge followed.
 */
static inline __attribute__((always_inline)) int
move_along(weft_world_t *w, weft_entity_t e, weft__where_t *at, uint32_t op,
           weft_component_t c, const weft__edge_t **taken) {
  const weft__edge_t *edge;
  const uint32_t mark = w->arch_count;
  int rc = weft__archetype_edge(w, at->arch, op, c, &edge);
  if (rc)
    return rolled_back(w, mark, rc);
  weft__archetype_t *b = edge->to;
  weft__chunk_t *dc;
  uint32_t dr;
  rc = weft__archetype_push(w, b, e, &dc, &dr);
  if (rc)
    return rolled_back(w, mark, rc);
  for (uint32_t i = 0; i < edge->plan_len; i++) {
    const weft__copy_t *p = &edge->plan[i];
    weft__copy_elem(weft__chunk_at(dc, p->dst, p->elem, dr),
                    weft__chunk_at(at->chunk, p->src, p->elem, at->row),
                    p->elem);
  }
  weft__rec_set_loc(&w->index, at->rec, dc->id, dr);
  weft__row_remove(w, at->arch, at->chunk, at->row);
  at->chunk = dc;
  at->row = dr;
  at->arch = b;
  w->moves++;
  w->version++;
  *taken = edge;
  return 0;
}

int weft_add(weft_world_t *w, weft_entity_t e, weft_component_t c,
             const void *value) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  COMP_OR_FAIL(w, c);
  if (WEFT__UNLIKELY(weft__routing(w)))
    return weft__staged_op(w, WEFT__OP_ADD, e, c, value);
  weft__where_t at;
  RESOLVE_OR_FAIL(w, e, &at);
  if (weft__mask_test(&at.arch->present, c))
    return 0;
  const weft__edge_t *edge;
  int rc = move_along(w, e, &at, WEFT__EDGE_ADD, c, &edge);
  if (rc)
    return rc;
  if (edge->col)
    write_or_zero(at.arch, edge->col, at.chunk, at.row, value);
  return 0;
}

int weft_remove(weft_world_t *w, weft_entity_t e, weft_component_t c) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  COMP_OR_FAIL(w, c);
  if (WEFT__UNLIKELY(weft__routing(w)))
    return weft__staged_op(w, WEFT__OP_REMOVE, e, c, NULL);
  weft__where_t at;
  RESOLVE_OR_FAIL(w, e, &at);
  if (!weft__mask_test(&at.arch->present, c))
    return 0;
  const weft__edge_t *edge;
  return move_along(w, e, &at, WEFT__EDGE_REMOVE, c, &edge);
}

int weft_set(weft_world_t *w, weft_entity_t e, weft_component_t c,
             const void *value) {
  WEFT_CHECK(w, w && value, WEFT_EINVAL, "world and value must not be NULL");
  COMP_OR_FAIL(w, c);
  if (WEFT__UNLIKELY(weft__routing(w)))
    return weft__staged_op(w, WEFT__OP_SET, e, c, value);
  weft__where_t at;
  RESOLVE_OR_FAIL(w, e, &at);
  if (!weft__mask_test(&at.arch->present, c))
    return weft_add(w, e, c, value);
  const weft__column_t *col = weft__archetype_col(at.arch, c);
  if (col) {
    write_or_zero(at.arch, col, at.chunk, at.row, value);
    weft__stamp_write(w, at.chunk, col);
  }
  return 0;
}

/* Shared classification for the read-only accessors. */
static int locate(const weft_world_t *w, weft_entity_t e, weft_component_t c,
                  weft__where_t *at, const weft__column_t **col) {
  if (!w)
    return WEFT_EINVAL;
  if (!resolve(w, e, at))
    return WEFT_ESTALE;
  if (!comp_known(w, c))
    return WEFT_ENOCOMP;
  if (!weft__mask_test(&at->arch->present, c))
    return WEFT_ENOTFOUND;
  *col = weft__archetype_col(at->arch, c);
  return *col ? 0 : WEFT_ETAG;
}

int weft_read(const weft_world_t *w, weft_entity_t e, weft_component_t c,
              void *out) {
  if (!out)
    return WEFT_EINVAL;
  weft__where_t at;
  const weft__column_t *col;
  int rc = locate(w, e, c, &at, &col);
  if (rc == 0)
    weft__column_read(at.arch, col, at.chunk, at.row, out);
  return rc;
}

int weft_try_get(const weft_world_t *w, weft_entity_t e, weft_component_t c,
                 const void **out) {
  if (!out)
    return WEFT_EINVAL;
  *out = NULL;
  weft__where_t at;
  const weft__column_t *col;
  int rc = locate(w, e, c, &at, &col);
  if (rc)
    return rc;
  if (col->soa)
    return WEFT_ESOA;
  *out = weft__chunk_at(at.chunk, col->first_array, col->size, at.row);
  return 0;
}

/* row_ptr() for an AoS column whose base the chunk table entry does not
 * hold (a late array, a value of 64 KiB or more), or for none: colmap. */
static WEFT__NOINLINE const void *
row_ptr_cold(const weft__chunk_slot_t *slot, uint32_t row, weft_component_t c) {
  const weft__column_t *col = weft__archetype_col(slot->arch, c);
  if (!col || col->soa)
    return NULL;
  return slot->chunk->bases[col->first_array] + (size_t)row * col->size;
}

/* The base a getmap entry names in a chunk table entry, or 0. */
static inline uintptr_t slot_base(const weft__chunk_slot_t *slot,
                                  weft__getcol_t g) {
  return (uintptr_t) * (uint8_t *const *)((const uint8_t *)slot + g.off);
}

/*
 * The address of component c in row `row` of a chunk, or NULL when the
 * archetype stores no AoS column for it (absent, a tag, SoA). Two loads
 * after the entry: the archetype's getmap, then the base it names in the
 * entry's own line. No branch on whether the component is there (absent
 * reads the entry's NULL base with size 0): with mixed archetypes in a
 * batch such a branch mispredicts often.
 */
static inline const void *row_ptr(const weft__chunk_slot_t *slot, uint32_t row,
                                  weft_component_t c) {
  const weft__getcol_t g = slot->arch->getmap[c <= WEFT_MAX_COMPONENTS ? c : 0];
  if (WEFT__UNLIKELY(g.size & WEFT__GETCOL_COLD))
    return row_ptr_cold(slot, row, c);
  return (const void *)(slot_base(slot, g) + (uintptr_t)row * g.size);
}

const void *weft_get_slow_(const weft_world_t *w, weft_entity_t e,
                           weft_component_t c) {
  const weft__chunk_slot_t *slot;
  uint32_t row;
  if (WEFT__UNLIKELY(!w || !resolve_slot(w, e, &slot, &row)))
    return NULL;
  return row_ptr(slot, row, c);
}

/*
 * weft_get_many() works in blocks of WEFT__GET_BLOCK handles (a power of
 * two), three blocks at once: it prefetches the records of the block two
 * ahead, finds the places of the block one ahead (reading the records
 * prefetched a block before and prefetching the rows), and validates the
 * current block (whose rows were prefetched a block before). Each stage
 * is a tight loop of its own, which keeps the world's fields in
 * registers.
 */
#define WEFT__GET_BLOCK 128u

/* Where weft_get_many_ex()'s write mask rides in get_many()'s address_only
 * word (k is at most WEFT_GET_MANY_MAX, so the lower half holds the rest). */
#define WEFT__GET_WRITE_SHIFT 16u

/* What weft_get_many() needs of the world, copied into locals: its stores
 * to `out` may alias the world as far as the compiler knows, which made it
 * load every one of these again for every handle. */
typedef struct get_ctx_t {
  weft__record_t *const *pages;
  const weft__chunk_slot_t *table;
  uint32_t hwm, slot_shift, slot_mask, row_mask;
} get_ctx_t;

static inline const weft__record_t *get_rec(const get_ctx_t *g, uint32_t idx) {
  return weft__pages_rec(g->pages, idx);
}

/*
 * The hint of weft_get_many()'s prefetches: into L2 and the levels below
 * it (prefetcht1), not L1. A lookup fetches three lines (record, stored
 * handle, value) where a plain two-level walk fetches two, and with all
 * three asked for L1 they outnumbered what L1 keeps in flight; the lines
 * are read a block later, from L2. (The non-temporal hint was worse still
 * in the host's slow state: such a line was evicted before its read and
 * fetched twice.)
 */
#define WEFT__GET_PF_LOCALITY 2

/* Stage 1: prefetches the records of handles[0..n). */
static inline void prefetch_records(const get_ctx_t *g,
                                    const weft_entity_t *handles, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    uint32_t idx = (uint32_t)handles[i];
    if (idx < g->hwm)
      __builtin_prefetch(get_rec(g, idx), 0, WEFT__GET_PF_LOCALITY);
  }
}

/*
 * Stage 2: reads the (prefetched) records of handles[0..n) and keeps the
 * chunk table entry each names in slots[] (NULL: no place), its row in
 * rows[] and the addresses of the k components' values in it in ptrs[],
 * k per handle, prefetching the handle stored at the row, which
 * validation reads, and those values (but those whose bit is set in @p
 * address_only). Unvalidated: a stale handle costs useless prefetches at
 * most. The rare value that row_ptr() would look up out of line is
 * looked up after the loop instead, so that the loop makes no call and
 * keeps the world's fields in registers.
 */
/* find_rows()' addresses again, through row_ptr(), for a block in which
 * some component had no inline base. */
static WEFT__NOINLINE void find_rows_cold(const weft__chunk_slot_t **slots,
                                          const uint32_t *rows, uint32_t n,
                                          const weft_component_t *comps,
                                          uint32_t k, const void **ptrs) {
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t j = 0; slots[i] && j < k; j++)
      ptrs[(size_t)i * k + j] = row_ptr(slots[i], rows[i], comps[j]);
}

static inline __attribute__((always_inline)) void
find_rows(const get_ctx_t *gp, const weft_entity_t *handles, uint32_t n,
          const weft_component_t *comps, uint32_t k, uint32_t address_only,
          const weft__chunk_slot_t **slots, uint32_t *rows, const void **ptrs) {
  /* In registers: the stores below may alias *gp as far as the compiler
   * knows. */
  const get_ctx_t g = *gp;
  uint32_t cold = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t idx = (uint32_t)handles[i];
    const weft__chunk_slot_t *s = NULL;
    uint32_t v = 0;
    if (idx < g.hwm)
      v = get_rec(&g, idx)->v;
    if (v & WEFT__REC_LOC) {
      s = (const weft__chunk_slot_t *)((const unsigned char *)g.table +
                                       (v >> g.slot_shift & g.slot_mask));
      const uint32_t r = v & g.row_mask;
      __builtin_prefetch(s->entities + r, 0, WEFT__GET_PF_LOCALITY);
      for (uint32_t j = 0; j < k; j++) {
        const weft__getcol_t gc = s->arch->getmap[comps[j]];
        cold |= gc.size;
        const void *p =
            (const void *)(slot_base(s, gc) + (uintptr_t)r * gc.size);
        ptrs[(size_t)i * k + j] = p;
        /* A NULL or (cold) wrong address too: a prefetch never faults. */
        if (!(address_only >> j & 1))
          __builtin_prefetch(p, 0, WEFT__GET_PF_LOCALITY);
      }
      rows[i] = r;
    }
    slots[i] = s;
  }
  if (WEFT__UNLIKELY(cold & WEFT__GETCOL_COLD))
    find_rows_cold(slots, rows, n, comps, k, ptrs);
}

/* find_rows() out of line, one function for each common k (and for no
 * address_only bits): such a loop has every register to itself instead
 * of what the caller's loop keeps live, and spills nothing. */
#define WEFT__FIND_ROWS(name, K, ADDR_ONLY)                                    \
  static WEFT__NOINLINE void name(                                             \
      const get_ctx_t *g, const weft_entity_t *handles, uint32_t n,            \
      const weft_component_t *comps, uint32_t k, uint32_t address_only,        \
      const weft__chunk_slot_t **slots, uint32_t *rows, const void **ptrs) {   \
    (void)k;                                                                   \
    (void)address_only;                                                        \
    find_rows(g, handles, n, comps, K, ADDR_ONLY, slots, rows, ptrs);          \
  }
WEFT__FIND_ROWS(find_rows_0, 0, 0)
WEFT__FIND_ROWS(find_rows_1, 1, 0)
WEFT__FIND_ROWS(find_rows_2, 2, address_only)
WEFT__FIND_ROWS(find_rows_3, 3, address_only)
WEFT__FIND_ROWS(find_rows_any, k, address_only)
#undef WEFT__FIND_ROWS

static inline void find_rows_k(const get_ctx_t *g, const weft_entity_t *handles,
                               uint32_t n, const weft_component_t *comps,
                               uint32_t k, uint32_t address_only,
                               const weft__chunk_slot_t **slots, uint32_t *rows,
                               const void **ptrs) {
  void (*fn)(const get_ctx_t *, const weft_entity_t *, uint32_t,
             const weft_component_t *, uint32_t, uint32_t,
             const weft__chunk_slot_t **, uint32_t *, const void **) =
      k == 0                                ? find_rows_0
      : k == 1 && !(address_only & 0xffffu) ? find_rows_1
      : k == 2                              ? find_rows_2
      : k == 3                              ? find_rows_3
                                            : find_rows_any;
  fn(g, handles, n, comps, k, address_only, slots, rows, ptrs);
}

/*
 * weft_get_many() for k components: each handle is resolved once, then
 * its k columns are read, in three stages a block apart (see
 * WEFT__GET_BLOCK), so that the misses of independent lookups overlap.
 * Stage 3, here, validates against the handle the row stores (a live
 * handle is the one stored at the place its record names: that equality
 * also checks the world tag, as stored handles carry it). Inlined into
 * every caller, so k = 1 compiles to the one-component loops. Rows of the
 * components whose bit is set in @p address_only are not prefetched; its
 * upper half (from WEFT__GET_WRITE_SHIFT) is weft_get_many_ex()'s write
 * mask, whose components' chunks are stamped (weft__stamp_row()).
 */
static inline __attribute__((always_inline)) uint32_t
get_many(const weft_world_t *w, const weft_entity_t *handles, uint32_t n,
         const weft_component_t *comps, uint32_t k, uint32_t address_only,
         const void **out, bool *has, weft_component_t has_c) {
  /* With `has` (weft_has_many(), weft_get_many_ex()): whether each entity
   * has has_c. */
  const bool has_known = has && comp_known(w, has_c);
  const get_ctx_t g = {w->index.pages,     w->index.table,
                       w->index.hwm,       w->index.slot_shift,
                       w->index.slot_mask, w->index.row_mask};
  /* Out of range ids read the empty entry 0 (row_ptr() does the same),
   * here once instead of per handle. */
  weft_component_t cs[WEFT_GET_MANY_MAX];
  for (uint32_t j = 0; j < k; j++)
    cs[j] = comps[j] <= WEFT_MAX_COMPONENTS ? comps[j] : 0;
  /* Two blocks of places: the one validated now, the one found ahead. */
  const weft__chunk_slot_t *slots[2 * WEFT__GET_BLOCK];
  uint32_t rows[2 * WEFT__GET_BLOCK];
  const void *ptrs[2 * WEFT__GET_BLOCK * WEFT_GET_MANY_MAX];
  const uint32_t B = WEFT__GET_BLOCK;
  uint32_t hits = 0, stale = 0;
  prefetch_records(&g, handles, n < 2 * B ? n : 2 * B);
  find_rows_k(&g, handles, n < B ? n : B, cs, k, address_only, slots, rows,
              ptrs);
  for (uint32_t b = 0; b < n; b += B) {
    const uint32_t m = n - b < B ? n - b : B;
    /* This block's places are in half h of the arrays. */
    const uint32_t h = (b / B & 1) * B;
    if (b + 2 * B < n)
      prefetch_records(&g, handles + b + 2 * B,
                       n - b - 2 * B < B ? n - b - 2 * B : B);
    if (b + B < n)
      find_rows_k(&g, handles + b + B, n - b - B < B ? n - b - B : B, cs, k,
                  address_only, slots + (B - h), rows + (B - h),
                  ptrs + (size_t)(B - h) * k);
    const weft__chunk_slot_t *const *sl = slots + h;
    const uint32_t *rw = rows + h;
    const void *const *pt = ptrs + (size_t)h * k;
    const weft_entity_t *hd = handles + b;
    for (uint32_t i = 0; i < m; i++, out += k, pt += k) {
      const weft__chunk_slot_t *s = sl[i];
      if (WEFT__UNLIKELY(!s || s->entities[rw[i]] != hd[i])) {
        for (uint32_t j = 0; j < k; j++)
          out[j] = NULL;
        if (has)
          has[b + i] = false;
        stale++;
      } else {
        for (uint32_t j = 0; j < k; j++) {
          hits += pt[j] != NULL;
          out[j] = pt[j];
        }
        if (WEFT__UNLIKELY(address_only >> WEFT__GET_WRITE_SHIFT))
          weft__stamp_row(w, s, comps, k,
                          address_only >> WEFT__GET_WRITE_SHIFT);
        if (has) {
          has[b + i] = has_known && weft__mask_test(&s->arch->present, has_c);
          hits += has[b + i];
        }
      }
    }
  }
  if (stale)
    weft__count_stale_n(w, stale);
  return hits;
}

uint32_t weft_get_many(const weft_world_t *w, const weft_entity_t *handles,
                       uint32_t n, weft_component_t c, const void **out) {
  if (!w || !handles || !out)
    return 0;
  return get_many(w, handles, n, &c, 1, 0, out, NULL, 0);
}

/*
 * get_many() with the number of components a constant for the common
 * counts, so that its loops over them unroll and the row addresses stay
 * in registers: health's lookups (three components and a has answer)
 * took 174 instructions a handle with k a variable, 153 with it a
 * constant (callgrind, the 200k-entity arena, ten ticks).
 */
static uint32_t get_many_k(const weft_world_t *w, const weft_entity_t *handles,
                           uint32_t n, const weft_component_t *comps,
                           uint32_t k, uint32_t address_only, const void **out,
                           bool *has, weft_component_t has_c) {
  switch (k) {
  case 1:
    return get_many(w, handles, n, comps, 1, address_only, out, has, has_c);
  case 2:
    return get_many(w, handles, n, comps, 2, address_only, out, has, has_c);
  case 3:
    return get_many(w, handles, n, comps, 3, address_only, out, has, has_c);
  case 4:
    return get_many(w, handles, n, comps, 4, address_only, out, has, has_c);
  default:
    return get_many(w, handles, n, comps, k, address_only, out, has, has_c);
  }
}

uint32_t weft_get_many_n(const weft_world_t *w, const weft_entity_t *handles,
                         uint32_t n, const weft_component_t *comps, uint32_t k,
                         const void **out) {
  if (!w || !handles || !comps || !out || k == 0 || k > WEFT_GET_MANY_MAX)
    return 0;
  return get_many_k(w, handles, n, comps, k, 0, out, NULL, 0);
}

uint32_t weft_get_many_ex(const weft_world_t *w, const weft_entity_t *handles,
                          uint32_t n, const weft_component_t *comps, uint32_t k,
                          const void **out, const weft_get_many_opts_t *opts) {
  bool *has = opts ? opts->has_out : NULL;
  if (!w || !handles || k > WEFT_GET_MANY_MAX || (k && (!comps || !out)) ||
      (!k && !has))
    return 0;
  const void *none[1]; /* k = 0: no pointer is written */
  uint32_t flags = opts ? (opts->address_only & 0xffffu) |
                              (opts->write & 0xffffu) << WEFT__GET_WRITE_SHIFT
                        : 0;
  return get_many_k(w, handles, n, comps, k, flags, k ? out : none, has,
                    has ? opts->has : 0);
}

uint32_t weft_has_many(const weft_world_t *w, const weft_entity_t *handles,
                       uint32_t n, weft_component_t c, bool *out) {
  if (!w || !handles || !out)
    return 0;
  const void *none[1]; /* k = 0: no pointer is written */
  return get_many(w, handles, n, NULL, 0, 0, none, out, c);
}

void *weft_get_mut(weft_world_t *w, weft_entity_t e, weft_component_t c) {
  const weft__chunk_slot_t *slot;
  uint32_t row;
  if (WEFT__UNLIKELY(!w || !resolve_slot(w, e, &slot, &row)))
    return NULL;
  void *p = (void *)row_ptr(slot, row, c);
  if (p) /* the caller may write: `changed` readers must see the chunk */
    weft__stamp_write(w, slot->chunk, weft__archetype_col(slot->arch, c));
  return p;
}

void *weft_get_field(weft_world_t *w, weft_entity_t e, weft_component_t c,
                     uint32_t field) {
  weft__where_t at;
  const weft__column_t *col;
  if (locate(w, e, c, &at, &col) != 0)
    return NULL;
  const weft__component_t *comp = weft__registry_get(&w->registry, c);
  if (field >= comp->field_count)
    return NULL;
  weft__stamp_write(w, at.chunk, col);
  if (!col->soa)
    return weft__chunk_at(at.chunk, col->first_array, col->size, at.row) +
           comp->fields[field].offset;
  const weft__array_t *ar = &at.arch->arrays[col->first_array + field];
  return weft__chunk_at(at.chunk, col->first_array + field, ar->elem, at.row);
}

bool weft_has(const weft_world_t *w, weft_entity_t e, weft_component_t c) {
  weft__where_t at;
  if (!w || !resolve(w, e, &at) || !comp_known(w, c))
    return false;
  return weft__mask_test(&at.arch->present, c);
}

bool weft_is_enabled(const weft_world_t *w, weft_entity_t e,
                     weft_component_t c) {
  weft__where_t at;
  if (!w || !resolve(w, e, &at) || !comp_known(w, c))
    return false;
  return weft__mask_test(&at.arch->enabled, c);
}

/* Shared body of enable/disable. */
static int toggle(weft_world_t *w, weft_entity_t e, weft_component_t c,
                  bool enable) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  COMP_OR_FAIL(w, c);
  if (WEFT__UNLIKELY(weft__routing(w)))
    return weft__staged_op(w, enable ? WEFT__OP_ENABLE : WEFT__OP_DISABLE, e, c,
                           NULL);
  weft__where_t at;
  RESOLVE_OR_FAIL(w, e, &at);
  WEFT_CHECK(w, weft__mask_test(&at.arch->present, c), WEFT_ENOTFOUND,
             "entity %#llx does not have component '%s'", (unsigned long long)e,
             w->registry.items[c - 1].name);
  if (weft__mask_test(&at.arch->enabled, c) == enable)
    return 0;
  const weft__edge_t *edge;
  return move_along(w, e, &at, enable ? WEFT__EDGE_ENABLE : WEFT__EDGE_DISABLE,
                    c, &edge);
}

int weft_disable(weft_world_t *w, weft_entity_t e, weft_component_t c) {
  return toggle(w, e, c, false);
}

int weft_enable(weft_world_t *w, weft_entity_t e, weft_component_t c) {
  return toggle(w, e, c, true);
}
