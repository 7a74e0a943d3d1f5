/* SPDX-License-Identifier: MIT */
/* Bulk archetype moves (see bulk.h). */
#include "core/bulk.h"

#include <string.h>

#include "core/platform.h"
#include "core/world.h"

void weft__copy_rows(const weft__archetype_t *a, const weft__archetype_t *b,
                     const weft__chunk_t *sc, uint32_t sr, weft__chunk_t *dc,
                     uint32_t dr, uint32_t run) {
  memcpy(dc->entities + dr, sc->entities + sr, run * sizeof(weft_entity_t));
  for (uint32_t j = 0; j < b->ncols; j++) {
    const weft__column_t *dcol = &b->cols[j];
    const weft__column_t *scol = weft__archetype_col(a, dcol->comp);
    for (uint32_t f = 0; f < dcol->array_count; f++) {
      uint32_t da = dcol->first_array + f;
      uint32_t elem = b->arrays[da].elem;
      uint8_t *d = weft__chunk_at(dc, da, elem, dr);
      if (scol)
        memcpy(d, weft__chunk_at(sc, scol->first_array + f, elem, sr),
               (size_t)run * elem);
      else
        memset(d, 0, (size_t)run * elem);
    }
  }
  /* A tracked column the rows had keeps their dirty bytes; a new one stays
   * dirty, as the rows arrived (weft__dirty_arrive()). One test per call
   * for archetypes that track nothing. */
  if (WEFT__UNLIKELY(b->ndirty)) {
    /* The source's all-dirty flags become bytes first: expanding writes
     * sc's dirty bytes and header, which the copy itself only reads. */
    if (a->ndirty)
      weft__dirty_settle((weft__chunk_t *)sc);
    for (uint32_t j = 0; j < b->ncols; j++) {
      const weft__column_t *dcol = &b->cols[j];
      const weft__column_t *scol = weft__archetype_col(a, dcol->comp);
      if (dcol->dirty && scol)
        memcpy(weft__chunk_at(dc, weft__dirty_array(b, dcol), 1, dr),
               weft__chunk_at(sc, weft__dirty_array(a, scol), 1, sr), run);
    }
  }
}

/* Writes the group's values for rows [m0, m0 + n) of the group, which
 * landed at rows dr.. of chunk dc. */
static void write_run(const weft_world_t *w, const weft__archetype_t *b,
                      weft__chunk_t *dc, uint32_t dr, uint32_t m0, uint32_t n,
                      const weft__group_values_t *v) {
  const weft__column_t *col = v->col;
  const unsigned char *src = v->base + (size_t)m0 * v->stride;
  size_t stride = v->stride;
  if (WEFT__UNLIKELY(col->dirty))
    for (uint32_t q = 0; q < n; q++)
      if (weft__op_value((const weft__op_t *)(src + q * stride)))
        weft__dirty_mark(w, dc, col, dr + q);
  if (col->soa) {
    for (uint32_t q = 0; q < n; q++) {
      const void *val = weft__op_value((const weft__op_t *)(src + q * stride));
      if (val)
        weft__column_write(b, col, dc, dr + q, val);
    }
    return;
  }
  uint32_t size = col->size;
  uint8_t *dst = weft__chunk_at(dc, col->first_array, size, dr);
  for (uint32_t q = 0; q < n; q++) {
    const void *val = weft__op_value((const weft__op_t *)(src + q * stride));
    if (val)
      weft__copy_elem(dst + (size_t)q * size, val, size);
  }
}

/* Appends the rows to b, run by run, and points their records there. */
static void append_rows(weft_world_t *w, const weft__archetype_t *a,
                        weft__archetype_t *b, uint32_t k,
                        const weft__group_run_t *runs,
                        const weft__group_values_t *vals) {
  const weft__group_run_t *run = runs;
  uint32_t off = 0; /* rows of *run already appended */
  for (uint32_t done = 0; done < k;) {
    weft__chunk_t *dc;
    uint32_t dr0, m;
    /* Cannot fail: the caller reserved the rows. */
    weft__archetype_push_range(w, b, k - done, &dc, &dr0, &m);
    /* The destination range ends mid-run or a run ends mid-range: copy
     * the overlap of each. */
    for (uint32_t i = 0; i < m;) {
      const weft__chunk_t *sc = run->chunk;
      uint32_t sr = run->row + off, len = run->n - off;
      if (len > m - i)
        len = m - i;
      weft__copy_rows(a, b, sc, sr, dc, dr0 + i, len);
      if (vals && vals->col)
        write_run(w, b, dc, dr0 + i, done + i, len, vals);
      i += len;
      off += len;
      if (off == run->n) {
        run++;
        off = 0;
      }
    }
    /* The records are found again through the handles just copied (in
     * cache, as are the records the caller read to collect the group):
     * cheaper than keeping a pointer per row in memory. */
    const weft_entity_t *ents = dc->entities + dr0;
    uint32_t cid = dc->id;
    for (uint32_t i = 0; i < m; i++)
      weft__index_place(&w->index, (uint32_t)ents[i], cid, dr0 + i);
    done += m;
  }
}

/* Copies row (sc, sr) of a over row (dc, dr) of a. */
static void copy_row(const weft__archetype_t *a, const weft__chunk_t *sc,
                     uint32_t sr, weft__chunk_t *dc, uint32_t dr) {
  if (WEFT__UNLIKELY(a->ndirty)) {
    weft__dirty_settle((weft__chunk_t *)sc); /* as in weft__copy_rows() */
    weft__dirty_settle(dc);
  }
  for (uint32_t i = 0; i < a->narrays; i++) {
    uint32_t n = a->arrays[i].elem;
    weft__copy_elem(weft__chunk_at(dc, i, n, dr), weft__chunk_at(sc, i, n, sr),
                    n);
  }
  dc->entities[dr] = sc->entities[sr];
}

/* Fills hole h of a (below its new count) with the first row from *t on
 * that stays (its record still points at it), and moves *t past it. */
static void fill_hole(weft_world_t *w, weft__archetype_t *a, uint32_t h,
                      uint32_t *t) {
  uint32_t cap = a->row_cap;
  weft__chunk_t *tc;
  uint32_t tr;
  weft__record_t *rec;
  for (;; ++*t) {
    tc = a->chunks[*t / cap];
    tr = *t % cap;
    rec = weft__index_rec(&w->index, (uint32_t)tc->entities[tr]);
    if (weft__rec_chunk(&w->index, rec) == tc->id &&
        weft__rec_row(&w->index, rec) == tr)
      break; /* a row that stays */
  }
  weft__chunk_t *hc = a->chunks[h / cap];
  copy_row(a, tc, tr, hc, h % cap);
  hc->sversion = w->change_version; /* a row moved in */
  weft__rec_set_loc(&w->index, rec, hc->id, h % cap);
  ++*t;
}

/*
 * Closes the holes the moved rows left in a: the runs they were taken
 * from, in order. Rows at or above the new count that stayed fill the
 * holes below it, in order; then a is truncated. Holes at or above the
 * new count need nothing, so a group that took whole chunks at the end of
 * a, or every row, costs no per-row work here.
 */
static void compact(weft_world_t *w, weft__archetype_t *a,
                    const weft__group_run_t *runs, uint32_t nruns, uint32_t k) {
  uint32_t cap = a->row_cap, n2 = a->count - k, t = n2;
  for (uint32_t i = 0; n2 && i < nruns; i++) {
    uint32_t h = runs[i].chunk->index * cap + runs[i].row;
    uint32_t end = h + runs[i].n < n2 ? h + runs[i].n : n2;
    for (; h < end; h++)
      fill_hole(w, a, h, &t);
  }
  uint32_t keep = (n2 + cap - 1) / cap;
  for (uint32_t c = keep; c < a->nchunks; c++)
    a->chunks[c]->count = 0;
  w->chunks_live -= a->nchunks - keep;
  w->chunks_spare += a->nchunks - keep;
  if (keep)
    a->chunks[keep - 1]->count = n2 - (keep - 1) * cap;
  a->nchunks = keep;
  a->tail = keep ? a->chunks[keep - 1] : NULL;
  a->count = n2;
}

int weft__move_group_rows(weft_world_t *w, weft__archetype_t *a,
                          weft__archetype_t *b, uint32_t k,
                          const weft__group_run_t *runs,
                          const weft__group_values_t *vals) {
  int rc = weft__archetype_reserve_rows(w, b, k);
  if (rc)
    return rc;
  append_rows(w, a, b, k, runs, vals);
  w->moves += k;
  return 0;
}

void weft__move_group_close(weft_world_t *w, weft__archetype_t *a, uint32_t k,
                            const weft__group_run_t *runs, uint32_t nruns) {
  compact(w, a, runs, nruns, k);
  w->version++;
}
