/* SPDX-License-Identifier: MIT */
/*
 * The state behind resources, channels and staged events (w->resources),
 * shared by core/resource.c (registration, staging) and core/publish.c
 * (the merge at sync points). Private to core/.
 */
#ifndef WEFT_CORE_RESOURCE_STATE_H
#define WEFT_CORE_RESOURCE_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/platform.h"
#include "core/alloc.h"
#include "weft/component.h" /* WEFT_NAME_MAX */
#include "weft/resource.h"
#include "weft/world.h"

typedef struct weft__res_t {
  void *value; /* its own block, so it never moves */
  size_t size;
  size_t align;
  uint32_t flags; /* WEFT_RESOURCE_* */
  char name[WEFT_NAME_MAX];
} weft__res_t;

typedef struct weft__chan_t {
  uint8_t *data; /* count events of elem bytes, 16-aligned */
  uint32_t count;
  uint32_t cap;
  uint32_t elem;
  uint32_t pending; /* publish only: staged events bound here */
  bool drop;        /* publish only: could not grow, drop them */
  char name[WEFT_NAME_MAX];
} weft__chan_t;

/* One staged event; its bytes are in the slot's arena at off. */
typedef struct weft__event_rec_t {
  uint64_t key;
  uint32_t ch;
  uint32_t seq; /* order staged within the slot */
  uint32_t off;
} weft__event_rec_t;

/*
 * One worker's event slot: the events it staged since the last publish.
 * Written by one thread at a time, so each slot has its own cache lines;
 * its allocations are counted here and folded into the world's counters
 * by the owner at publish, because the world's counters are not atomic.
 */
typedef struct weft__event_slot_t {
  WEFT__LINE_ALIGNED weft__event_rec_t *recs;
  uint32_t count;
  uint32_t cap;
  uint8_t *bytes;
  uint32_t used;
  uint32_t bytes_cap;
  /* Kept as records are staged, so that a publish need not scan for
   * them: a record came with a smaller key than the one before it (the
   * slot must be sorted; rare: a worker ran jobs out of key order), and
   * the channel every record names (0 when they name several). */
  bool disorder;
  weft_channel_t only_ch;
  weft__alloc_stats_t alloc;
} weft__event_slot_t;

typedef struct weft__resources_t weft__resources_t;

struct weft__resources_t {
  weft__res_t *res; /* id - 1 */
  uint32_t nres;
  uint32_t res_cap;
  weft__chan_t *chans; /* id - 1 */
  uint32_t nchans;
  uint32_t chan_cap;
  weft__event_slot_t *slots;
  uint32_t nslots;
  uint32_t *merge; /* publish, one merge: 3 * nslots words (merge_t) */
  weft__event_rec_t *scratch; /* publish: merge sort buffer; only grows */
  uint32_t scratch_cap;
  /* publish, in parallel: par_parts blocks of par_stride words, one per
   * key range (see publish_parallel()), sized for par_slots slots and
   * par_chans channels; from weft__events_reserve(). */
  uint32_t *par;
  uint32_t par_parts, par_slots, par_chans, par_stride;
};

/* Makes room for `more` events after channel c's current ones: 0 or
 * WEFT_ENOMEM. Owner thread. */
int weft__chan_reserve(weft_world_t *w, weft__chan_t *c, uint32_t more);

#endif /* WEFT_CORE_RESOURCE_STATE_H */
