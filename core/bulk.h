/* SPDX-License-Identifier: MIT */
/*
 * Bulk archetype moves: many rows of one archetype to another in one pass.
 *
 * The staged path applies transactions that often move thousands of rows
 * the same way (add B to everything a system touched). Moving them one by
 * one pays a push, a swap-remove and a record update per row; moving them
 * as a group copies contiguous source runs with memcpy and closes the
 * holes they leave with one compaction pass.
 */
#ifndef WEFT_CORE_BULK_H
#define WEFT_CORE_BULK_H

#include <stdint.h>

#include "core/chunk.h"
#include "core/entity_index.h"

struct weft_world_t;
struct weft__archetype_t;

/*
 * Copies `run` consecutive rows (handles and data) from rows sr.. of chunk
 * sc, of archetype a, to rows dr.. of chunk dc, of archetype b: every array
 * b has, zero-filled where a lacks the component.
 */
void weft__copy_rows(const struct weft__archetype_t *a,
                     const struct weft__archetype_t *b,
                     const struct weft__chunk_t *sc, uint32_t sr,
                     struct weft__chunk_t *dc, uint32_t dr, uint32_t run);

/* Values to write into one column of the moved rows: the value of row m
 * is that of the op (core/txn.h) at base + m * stride (none: keep the zero
 * fill). */
typedef struct weft__group_values_t {
  const struct weft__column_t *col; /* NULL: nothing to write */
  const unsigned char *base;
  size_t stride;
} weft__group_values_t;

/* Consecutive rows of a group that sit next to each other in their source
 * chunk: rows [row, row + n) of chunk. The caller finds them while it
 * collects the group, so the move copies them without looking again. */
typedef struct weft__group_run_t {
  const struct weft__chunk_t *chunk;
  uint32_t row;
  uint32_t n;
} weft__group_run_t;

/*
 * Moves k live rows of archetype a to archetype b (b != a), in two steps so
 * that a caller can move a long group slice by slice while the slice is in
 * cache.
 *
 * weft__move_group_rows() appends them: runs (their n add up to k) are the
 * rows in order, as runs of consecutive source rows. They become b's last
 * k rows in that order and their records point there; components b has and
 * a lacks are zero-filled; vals, when not NULL, gives values to write into
 * them. Their old places in a become holes (a's rows are not touched). 0,
 * or WEFT_ENOMEM / WEFT_ELIMIT with nothing moved.
 *
 * weft__move_group_close() then closes the holes of all k rows appended
 * since the last close, runs[0..nruns) their source runs (still as
 * collected: a's chunks have not changed): rows of a left behind keep a
 * dense; holes below the new count are filled from the tail in order.
 */
int weft__move_group_rows(struct weft_world_t *w, struct weft__archetype_t *a,
                          struct weft__archetype_t *b, uint32_t k,
                          const weft__group_run_t *runs,
                          const weft__group_values_t *vals);
void weft__move_group_close(struct weft_world_t *w, struct weft__archetype_t *a,
                            uint32_t k, const weft__group_run_t *runs,
                            uint32_t nruns);

#endif /* WEFT_CORE_BULK_H */
