/* SPDX-License-Identifier: MIT */
/*
 * The snapshot sections for relation edges, resources, random streams and
 * events (snapshot_state.c): written after ROWS, checked in a load's first
 * phase, applied in its second.
 */
#ifndef WEFT_CORE_SNAPSHOT_STATE_H
#define WEFT_CORE_SNAPSHOT_STATE_H

#include "core/snapshot_format.h"

/* What a checker found wrong, and where in the payload. */
typedef struct weft__snap_why_t {
  char msg[200];
  uint64_t at;
} weft__snap_why_t;

/* Per slot of the snapshot's index (snapshot_read.c), one byte: its
 * state (0: a dead record, 1: a live record, 2: on the free list, 3:
 * held by a row). A byte, so that the states of a million slots fit a
 * core's cache while the rows' handles are checked against them. */
#define WEFT__SNAP_LIVE_REC 1u
#define WEFT__SNAP_LIVE_FREE 2u
#define WEFT__SNAP_LIVE_ROW 3u
typedef struct weft__snap_live_t {
  uint8_t *v;
  /* Per slot held by a row: its handle's generation and its archetype's
   * index. Edges alone need them (snapshot_state.c), and an edge names a
   * saved relation component: both are NULL when the snapshot saved
   * none. */
  uint32_t *gen;
  uint32_t *arch;
  /* Per slot: room for the record of its row (snapshot_stage.h). */
  uint32_t *loc;
} weft__snap_live_t;

/* The state sections, in file order. */
#define WEFT__SNAP_NSTATE 4u
extern const uint32_t weft__snap_state_tags[WEFT__SNAP_NSTATE];

int weft__snap_state_save(const weft_world_t *w, uint32_t tag,
                          weft_snapshot_out_t *out);
int weft__snap_state_check(const weft_world_t *w, uint32_t tag,
                           const weft__snap_plan_t *pl,
                           const weft__snap_live_t *lv, const uint8_t *p,
                           size_t n, weft__snap_why_t *out);
int weft__snap_state_load(weft_world_t *w, uint32_t tag,
                          const weft__snap_plan_t *pl, const uint8_t *p,
                          size_t n);

/* A distributed checkpoint's world state (weft::mpi): resources, random
 * streams and the registered sections (the pipeline's clock), without
 * rows, edges or events. save: a malloc'd buffer in *data (the caller
 * frees it). load: checks every entry first (a malformed one is
 * WEFT_EFORMAT with the reason in why, and nothing changes), then applies
 * them; entries this world does not register are skipped. */
int weft__snap_globals_save(weft_world_t *w, uint8_t **data, size_t *n);
int weft__snap_globals_load(weft_world_t *w, const uint8_t *data, size_t n,
                            weft__snap_why_t *why);

#endif /* WEFT_CORE_SNAPSHOT_STATE_H */
