/* SPDX-License-Identifier: MIT */
/*
 * Reading entities by handle: liveness, has / is_enabled, read, try_get,
 * the inline weft_get()'s slow half, get_mut / get_field, and the
 * weft_get_many() / weft_has_many() pipeline, which resolves blocks of
 * handles in three prefetching stages so that independent misses overlap.
 * None of it changes the world's structure.
 */
#include "core/check.h"
#include "core/entity_ops.h"
#include "core/world.h"

/* weft__resolve() for the readers by handle: only the chunk table entry and the
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

bool weft_is_alive(const weft_world_t *w, weft_entity_t e) {
  return w && weft__lookup(w, e) != NULL;
}

/* Shared classification for the read-only accessors. */
static int locate_column(const weft_world_t *w, weft_entity_t e,
                         weft_component_t c, weft__where_t *at,
                         const weft__column_t **col) {
  if (!w)
    return WEFT_EINVAL;
  if (!weft__resolve(w, e, at))
    return WEFT_ESTALE;
  if (!weft__comp_known(w, c))
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
  int rc = locate_column(w, e, c, &at, &col);
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
  int rc = locate_column(w, e, c, &at, &col);
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
  const bool has_known = has && weft__comp_known(w, has_c);
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
          weft__stamp_row(w, s, rw[i], comps, k,
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
 * in registers (see docs/performance-notes.md, core/lookup.c).
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
    weft__mark_write(w, slot->chunk, weft__archetype_col(slot->arch, c), row);
  return p;
}

void *weft_get_field(weft_world_t *w, weft_entity_t e, weft_component_t c,
                     uint32_t field) {
  weft__where_t at;
  const weft__column_t *col;
  if (locate_column(w, e, c, &at, &col) != 0)
    return NULL;
  const weft__component_t *comp = weft__registry_get(&w->registry, c);
  if (field >= comp->field_count)
    return NULL;
  weft__mark_write(w, at.chunk, col, at.row);
  if (!col->soa)
    return weft__chunk_at(at.chunk, col->first_array, col->size, at.row) +
           comp->fields[field].offset;
  const weft__array_t *ar = &at.arch->arrays[col->first_array + field];
  return weft__chunk_at(at.chunk, col->first_array + field, ar->elem, at.row);
}

bool weft_has(const weft_world_t *w, weft_entity_t e, weft_component_t c) {
  weft__where_t at;
  if (!w || !weft__resolve(w, e, &at) || !weft__comp_known(w, c))
    return false;
  return weft__mask_test(&at.arch->present, c);
}

bool weft_is_enabled(const weft_world_t *w, weft_entity_t e,
                     weft_component_t c) {
  weft__where_t at;
  if (!w || !weft__resolve(w, e, &at) || !weft__comp_known(w, c))
    return false;
  return weft__mask_test(&at.arch->enabled, c);
}
