/* SPDX-License-Identifier: MIT */
/*
 * The fast path for spawn runs from command buffers (merge.c): when no
 * command names a pending handle and no observer exists, a run of spawns
 * with one component list skips the per-entity stages. Its slots are
 * taken at merge time, in merge order, exactly as staged spawns take
 * them, and the drain's first wave places whole runs as column slices.
 */
#include "core/txn.h"

#include <string.h>

#include "core/check.h"
#include "core/world.h"

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
  weft__req_expand_list(&w->registry, run->comps, run->n, &m);
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
  const uint32_t loc0 =
      WEFT__REC_LOC | c->id << weft__index_row_bits(ix) | row0;
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
      /* Requirements the list brought along get their defaults. */
      if (a->ncomps != run0->n)
        weft__req_fill_list(w, a, c, row0, m, run0->comps, run0->n);
      done += m;
    }
    total += k;
  }
  t->reserved -= total;
  w->spawns += total;
  w->version++;
}

int weft__txn_place_fast(weft_world_t *w) {
  weft__txn_t *t = &w->txn;
  int err = 0;
  for (uint32_t i = 0; i < t->nfast;) {
    uint32_t j = i + 1, rows = t->fast[i].got;
    while (j < t->nfast && same_list(t->fast[j].run, t->fast[i].run))
      rows += t->fast[j++].got;
    weft__archetype_t *a = NULL;
    const uint32_t mark = weft__archetypes_mark(w);
    int rc = list_archetype(w, t->fast[i].run, &a);
    if (rc == 0)
      rc = weft__archetype_reserve_rows(w, a, rows);
    if (rc == 0) {
      fast_place(w, a, i, j);
    } else {
      weft__archetypes_rollback(w, mark); /* one made for them goes */
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
