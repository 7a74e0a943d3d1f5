/* SPDX-License-Identifier: MIT */
/*
 * Staged rows of a load (snapshot_stage.c). When the world already has
 * the snapshot's archetypes and chunk segments (a world rewound to its
 * own past), the validator copies each chunk's handles and same-layout
 * columns into fresh segment memory right after hashing and checking
 * them, while they are in cache, so that ROWS is read from memory once.
 * The staged memory belongs to no chunk until the whole input is valid;
 * then weft__snap_stage_commit() points the chunks at it and frees their
 * old memory. A refused load frees it with weft__snap_stage_free() and
 * the world never saw it. The price: while a load runs, the world's
 * staged segments are allocated twice.
 */
#ifndef WEFT_CORE_SNAPSHOT_STAGE_H
#define WEFT_CORE_SNAPSHOT_STAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/snapshot_format.h"

/* Rows beyond this many bytes are copied with non-temporal stores: the
 * loaded rows no longer fit the caches, so ordinary stores would first
 * read every destination line only to evict it again. */
#define WEFT__SNAP_STREAM_MIN ((uint64_t)8 << 20)

/* A staged copy of a segment: what freeing it takes, so that it can be
 * freed whatever became of the world. */
typedef struct weft__snap_stage_seg_t {
  uint8_t *mem; /* NULL: not staged, or the world's since the commit */
  size_t bytes;
  struct weft_pool_t *pool;
} weft__snap_stage_seg_t;

/* One archetype's staged segments. */
typedef struct weft__snap_stage_arch_t {
  weft__snap_stage_seg_t *segs; /* per segment of the archetype */
  uint32_t nsegs;
  uint32_t *seg; /* per saved chunk: the segment its chunk lies in */
} weft__snap_stage_arch_t;

typedef struct weft__snap_stage_t {
  weft_world_t *w;
  bool on;     /* staging: set by weft__snap_stage_begin() */
  bool stream; /* staged copies bypass the caches */
  uint32_t narch;
  weft__snap_stage_arch_t *archs;
  /* Per slot (the validator's scratch): its index record as the load
   * restores it: the saved record, or for a slot a row holds, the row's
   * place, written as the handles are checked. The commit copies the
   * index from here instead of placing every row again from the input. */
  uint32_t *loc;
} weft__snap_stage_t;

/* Whether w already has the snapshot's archetypes and chunk segments, id
 * for id (then its chunks are refilled where they are). */
bool weft__snap_same_layout(const weft_world_t *w, const weft__snap_plan_t *pl);

/* Called by the validator once the ARCH section is read: when the world
 * has the snapshot's layout, allocates staged memory for every segment
 * that will receive rows and sets st->on. Out of memory is no error: the
 * load goes on unstaged (the rows are copied after validation). */
void weft__snap_stage_begin(weft__snap_stage_t *st,
                            const weft__snap_plan_t *pl);

/* The index record of row 0 of saved chunk k of archetype i once staged
 * (its chunk keeps its id): the validator writes each row's into st->loc
 * as it checks the handles. */
uint32_t weft__snap_stage_place(const weft__snap_stage_t *st, uint32_t i,
                                uint32_t k);

/* Copies saved chunk k of archetype i (n rows at p, already hashed and
 * their handles checked) into its staged memory: handles and the columns
 * stored as the program stores them (WEFT__SNAP_SAME). */
void weft__snap_stage_chunk(const weft__snap_stage_t *st,
                            const weft__snap_plan_t *pl, uint32_t i, uint32_t k,
                            const uint8_t *p, uint32_t n);

/* The input is valid: the staged segments replace the old ones (chunk
 * headers, base pointers and chunk table entries follow), whose memory is
 * freed. Cannot fail. st stays on (its loc records are still to be
 * restored) until weft__snap_stage_free(). */
void weft__snap_stage_commit(weft__snap_stage_t *st);

/* Frees what st holds (staged memory not committed included). */
void weft__snap_stage_free(weft__snap_stage_t *st);

/* memcpy, with non-temporal stores when stream is set and n is large (the
 * caller fences before the bytes are published). Same bytes either way. */
void weft__snap_copy(bool stream, void *dst, const void *src, size_t n);

/* Ends the non-temporal stores of weft__snap_copy(). */
void weft__snap_copy_fence(void);

#endif /* WEFT_CORE_SNAPSHOT_STAGE_H */
