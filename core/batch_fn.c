/* SPDX-License-Identifier: MIT */
/*
 * Query-wide sets with a writer (weft_cmd_set_query_fn): the drain's side.
 *
 * The buffer captured the query's members at the call. In the batch phase
 * of the drain (after the wave's per-entity changes, in call order with
 * the other query-wide commands) the batch first makes sure every member
 * still alive has the component, through the same per-entity op a
 * query-wide set applies (so whatever an add expands to applies here
 * too), then hands the writer the members' rows, one contiguous range of
 * one chunk at a time, in member order. Writers therefore see every write
 * staged before them. A scalar set of the component that merge order puts
 * after the call is staged as a plain add (which adds a missing component
 * zero-filled and leaves a present one alone) and noted (weft__late_t):
 * its value is written once the writer is done, so the writer does not see
 * it and it wins, as its place in the transaction says.
 */
#include <string.h>

#include "core/check.h"
#include "core/query_internal.h"
#include "core/stage.h"
#include "core/world.h"

int weft__batch_fn_note(weft_world_t *w, weft_entity_t e, weft_component_t c,
                        const void *value, bool *noted) {
  *noted = false;
  weft__txn_t *t = &w->txn;
  /* The last writer of c staged so far in the open wave, if any. */
  uint32_t i = t->nbatches;
  while (i > t->batches_from && !(t->batches[i - 1].op == WEFT__OP_SET_FN &&
                                  t->batches[i - 1].comp == c))
    i--;
  if (i == t->batches_from)
    return 0;
  if (weft__grow(&w->alloc, &t->late, &t->late_cap, t->nlate + 1,
                 sizeof(*t->late), 64))
    return weft__stage_dropped(w, "a set after a query-wide writer");
  t->late[t->nlate++] =
      (weft__late_t){.e = e, .value = value, .batch = i - 1, .comp = c};
  *noted = true;
  return 0;
}

/* Makes sure every live member has c: an add, which does nothing to those
 * that have it (they are skipped without a fold). */
static int ensure(weft_world_t *w, const weft__batch_t *b) {
  int err = 0;
  for (uint32_t m = 0; m < b->n; m++) {
    weft__where_t at;
    if (!weft__locate(w, b->members[m], &at)) {
      weft__count_stale_cmd(w);
      continue;
    }
    if (weft__mask_test(&at.arch->present, b->comp))
      continue;
    int rc = weft__txn_batch_op(w, b->members[m], WEFT__OP_ADD, b->comp, NULL);
    if (rc && !err)
      err = rc;
  }
  return err;
}

/* Calls the writer on rows [row0, row0 + k) of chunk c, whose first row is
 * member `first`, and stamps the column written. */
static void write_range(weft_world_t *w, const weft__writer_t *wr,
                        weft_component_t comp, weft__chunk_t *c, uint32_t row0,
                        uint32_t k, uint32_t first) {
  weft_iter_t view;
  weft__iter_view(w, c, row0, k, &comp, 1, &view);
  wr->fn(wr->user, &view, first);
  const weft__column_t *col = weft__archetype_col(c->arch, comp);
  if (col)
    weft__stamp_write(w, c, col);
}

/* Hands the writer the members' rows: consecutive members on consecutive
 * rows of one chunk make one range (consecutive members, so that row r of
 * a range is member first + r). */
static void write_members(weft_world_t *w, const weft__batch_t *b) {
  const weft__writer_t *wr = b->value;
  weft__chunk_t *chunk = NULL;
  uint32_t row0 = 0, k = 0, first = 0;
  for (uint32_t m = 0; m < b->n; m++) {
    weft__where_t at;
    /* Gone (despawned earlier in the transaction), or the add failed. */
    if (!weft__locate(w, b->members[m], &at) ||
        !weft__mask_test(&at.arch->present, b->comp))
      continue;
    if (k && at.chunk == chunk && at.row == row0 + k && m == first + k) {
      k++;
      continue;
    }
    if (k)
      write_range(w, wr, b->comp, chunk, row0, k, first);
    chunk = at.chunk;
    row0 = at.row;
    k = 1;
    first = m;
  }
  if (k)
    write_range(w, wr, b->comp, chunk, row0, k, first);
}

/* Writes the sets noted after batch i again, in their order. */
static void replay_late(weft_world_t *w, uint32_t i) {
  const weft__txn_t *t = &w->txn;
  for (uint32_t j = 0; j < t->nlate; j++) {
    const weft__late_t *l = &t->late[j];
    weft__where_t at;
    if (l->batch != i || !weft__locate(w, l->e, &at))
      continue;
    const weft__column_t *col = weft__archetype_col(at.arch, l->comp);
    if (!col)
      continue; /* removed after all */
    if (col->soa)
      weft__column_write(at.arch, col, at.chunk, at.row, l->value);
    else
      weft__copy_elem(
          weft__chunk_at(at.chunk, col->first_array, col->size, at.row),
          l->value, col->size);
    weft__stamp_write(w, at.chunk, col);
  }
}

int weft__batch_fn_apply(weft_world_t *w, uint32_t i) {
  /* A copy: the writer may stage more batches, which may move the array. */
  weft__batch_t b = w->txn.batches[i];
  int err = ensure(w, &b);
  write_members(w, &b);
  replay_late(w, i);
  return err;
}
