/* SPDX-License-Identifier: MIT */
/*
 * The ghost map: key -> the ghost entity that mirrors it, with the
 * exchange round that last refreshed it, so that ghosts no rank sent
 * this round are found and despawned.
 *
 * Open addressing with linear probing and backward-shift deletion (no
 * tombstones, so lookups stay short however many ghosts come and go). The
 * table doubles at 1/2 load and never shrinks: in a steady run it stops
 * growing once it held the most ghosts the run has, and then inserting
 * and erasing allocate nothing.
 */
#ifndef WEFT_MPI_KEYMAP_H
#define WEFT_MPI_KEYMAP_H

#include <stdint.h>

#include <weft/entity.h>

typedef struct weft__keyslot_t {
  uint64_t key;
  weft_entity_t ghost; /* WEFT_ENTITY_NULL: the slot is empty */
  uint64_t round;      /* the exchange round that last sent it */
} weft__keyslot_t;

typedef struct weft__keymap_t {
  weft__keyslot_t *slots;
  uint32_t cap; /* a power of two, or 0 */
  uint32_t count;
} weft__keymap_t;

void weft__keymap_free(weft__keymap_t *m);

/* The slot of @p key, or NULL. */
weft__keyslot_t *weft__keymap_find(weft__keymap_t *m, uint64_t key);

/* Makes room for one more entry (0 or WEFT_ENOMEM; the map is unchanged
 * on failure). Call before weft__keymap_put(). */
int weft__keymap_reserve(weft__keymap_t *m);

/* Inserts @p key (absent; room reserved) and returns its slot. */
weft__keyslot_t *weft__keymap_put(weft__keymap_t *m, uint64_t key,
                                  weft_entity_t ghost);

/* Erases the entry in @p slot (from find or put). */
void weft__keymap_erase(weft__keymap_t *m, weft__keyslot_t *slot);

#endif /* WEFT_MPI_KEYMAP_H */
