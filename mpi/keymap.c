/* SPDX-License-Identifier: MIT */
/*
 * The ghost map (mpi/keymap.h).
 */
#include "mpi/keymap.h"

#include <string.h>

#include <weft/error.h>

#include "core/alloc.h"

/* Keys are often consecutive, so they are mixed before masking. */
static uint32_t home(const weft__keymap_t *m, uint64_t key) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdull;
  key ^= key >> 33;
  return (uint32_t)key & (m->cap - 1);
}

void weft__keymap_free(weft__keymap_t *m) {
  weft__free(m->slots, 0, 0);
  memset(m, 0, sizeof *m);
}

weft__keyslot_t *weft__keymap_find(weft__keymap_t *m, uint64_t key) {
  if (m->count == 0)
    return NULL;
  for (uint32_t i = home(m, key);; i = (i + 1) & (m->cap - 1)) {
    weft__keyslot_t *s = &m->slots[i];
    if (s->ghost == WEFT_ENTITY_NULL)
      return NULL;
    if (s->key == key)
      return s;
  }
}

static void place(weft__keymap_t *m, const weft__keyslot_t *e) {
  uint32_t i = home(m, e->key);
  while (m->slots[i].ghost != WEFT_ENTITY_NULL)
    i = (i + 1) & (m->cap - 1);
  m->slots[i] = *e;
}

int weft__keymap_reserve(weft__keymap_t *m) {
  if ((uint64_t)(m->count + 1) * 2 <= m->cap)
    return 0;
  uint32_t cap = m->cap ? m->cap * 2 : 64;
  if (cap == 0 || cap > (1u << 30))
    return WEFT_ENOMEM;
  weft__keyslot_t *slots = weft__calloc(NULL, sizeof *slots * cap, 16);
  if (!slots)
    return WEFT_ENOMEM;
  weft__keymap_t old = *m;
  m->slots = slots;
  m->cap = cap;
  for (uint32_t i = 0; i < old.cap; i++)
    if (old.slots[i].ghost != WEFT_ENTITY_NULL)
      place(m, &old.slots[i]);
  weft__free(old.slots, 0, 0);
  return 0;
}

weft__keyslot_t *weft__keymap_put(weft__keymap_t *m, uint64_t key,
                                  weft_entity_t ghost) {
  uint32_t i = home(m, key);
  while (m->slots[i].ghost != WEFT_ENTITY_NULL)
    i = (i + 1) & (m->cap - 1);
  m->slots[i] = (weft__keyslot_t){key, ghost, 0};
  m->count++;
  return &m->slots[i];
}

void weft__keymap_erase(weft__keymap_t *m, weft__keyslot_t *slot) {
  /* Backward shift: pull later entries of the probe run into the hole
   * when their home does not lie (cyclically) after the hole. */
  uint32_t mask = m->cap - 1, hole = (uint32_t)(slot - m->slots);
  for (uint32_t j = (hole + 1) & mask;; j = (j + 1) & mask) {
    weft__keyslot_t *s = &m->slots[j];
    if (s->ghost == WEFT_ENTITY_NULL)
      break;
    uint32_t h = home(m, s->key);
    if (((j - h) & mask) >= ((j - hole) & mask)) {
      m->slots[hole] = *s;
      hole = j;
    }
  }
  m->slots[hole] = (weft__keyslot_t){0, WEFT_ENTITY_NULL, 0};
  m->count--;
}
