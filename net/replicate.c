/* SPDX-License-Identifier: MIT */
/*
 * Replication state: per entity slot and replicated component, the tick
 * it last changed, stamped once per fixed step from the dirty bits (a
 * write) and from the change of the entity's component mask (an add, a
 * remove, a spawn, a slot reused by a new generation); a despawned
 * entity's slot is cleared when a stamp no longer finds it. The same pass
 * files every replicated entity in a grid of cells, which sessions read
 * for their views. The arrays grow with the world and are reused, so a
 * stamp allocates nothing once the world stops growing.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "net/net_internal.h"
#include "weft/dirty.h"

/* Grows every per-slot array to hold @p need slots (doubling). */
static int repl_grow(weft__net_repl *r, uint32_t need) {
  weft__alloc_stats_t *st = r->alloc;
  uint32_t cap = r->cap ? r->cap : 1024;
  while (cap < need)
    cap *= 2;
  size_t n = cap;
#define GROW(field, count)                                                     \
  do {                                                                         \
    void *p = weft__realloc(st, r->field,                                      \
                            (size_t)r->cap * (count) / n * sizeof *r->field,   \
                            (count) * sizeof *r->field);                       \
    if (!p)                                                                    \
      return WEFT_ENOMEM;                                                      \
    r->field = p;                                                              \
  } while (0)
  GROW(handle, n);
  GROW(next_mask, n);
  GROW(seen, n);
  GROW(cell, n * 2);
  GROW(stamped, n);
  GROW(grid, n);
  GROW(rec, n * r->rstride);
#undef GROW
  /* New slots hold no entity. */
  size_t old = r->cap;
  memset(r->handle + old, 0, (n - old) * sizeof *r->handle);
  memset(r->seen + old, 0, (n - old) * sizeof *r->seen);
  memset(r->rec + old * r->rstride, 0, (n - old) * r->rstride);
  r->cap = cap;
  /* About four entities per bucket when every slot is used. */
  uint32_t nb = 64;
  while (nb < cap / 4)
    nb *= 2;
  if (nb != r->nbuckets) {
    void *p = weft__realloc(
        st, r->bucket, (r->bucket ? r->nbuckets + 1 : 0) * sizeof *r->bucket,
        (nb + 1) * sizeof *r->bucket);
    if (!p)
      return WEFT_ENOMEM;
    r->bucket = p;
    r->nbuckets = nb;
  }
  return 0;
}

int weft__net_repl_init(weft_net_t *net) {
  weft__net_repl *r = &net->repl;
  memset(r, 0, sizeof *r);
  r->alloc = &net->alloc;
  r->ncomp = net->cfg.component_count;
  uint32_t off = 0;
  for (uint32_t k = 0; k < r->ncomp; k++) {
    weft_component_info_t info;
    if (weft_component_info(net->world, net->comps[k], &info) == 0 &&
        (info.flags & WEFT_COMPONENT_SOA))
      r->soa |= 1ull << k;
    r->voff[k] = off;
    off += net->schema.sizes[k];
  }
  /* The record: mask, versions, then the values, 8-byte aligned. */
  r->vbase = 8 + 4 * r->ncomp;
  r->rstride = (r->vbase + off + 7) & ~7u;
  int rc = repl_grow(r, 1024);
  if (rc)
    return rc;
  memset(r->bucket, 0, (r->nbuckets + 1) * sizeof *r->bucket);
  return 0;
}

void weft__net_repl_free(weft__net_repl *r) {
  weft__free(r->handle, 0, 16);
  weft__free(r->next_mask, 0, 16);
  weft__free(r->seen, 0, 16);
  weft__free(r->cell, 0, 16);
  weft__free(r->stamped, 0, 16);
  weft__free(r->grid, 0, 16);
  weft__free(r->bucket, 0, 16);
  weft__free(r->rec, 0, 16);
  memset(r, 0, sizeof *r);
}

static uint32_t cell_bucket(const weft__net_repl *r, int32_t cx, int32_t cy) {
  return weft__net_cell_bucket(r, cx, cy);
}

/* A coordinate's cell, clamped so that far-off or non-finite positions
 * land in an edge cell instead of overflowing. */
static int32_t cell_of(float v, float size) {
  float c = floorf(v / size);
  if (!(c > -1e9f))
    return -1000000000;
  if (c > 1e9f)
    return 1000000000;
  return (int32_t)c;
}

/* First pass: every entity with a position, its slot claimed (a new
 * handle restarts the slot's versions at this tick) and its cell. */
static int stamp_positions(weft_net_t *net, uint32_t tick) {
  weft__net_repl *r = &net->repl;
  float size = net->cfg.cell_size;
  uint32_t stride = net->repl.ncomp;
  weft_iter_t it;
  weft_query_iter(net->pos_query, &it);
  while (weft_iter_next(&it)) {
    const uint8_t *pos = it.columns[0];
    uint32_t psize = net->pos_size;
    for (uint32_t i = 0; i < it.count; i++) {
      weft_entity_t e = it.entities[i];
      uint32_t slot = weft_entity_index(e);
      if (slot >= r->cap && repl_grow(r, slot + 1)) {
        weft_iter_close(&it);
        return WEFT_ENOMEM;
      }
      if (r->handle[slot] != e) {
        r->handle[slot] = e;
        *weft__net_rec_mask(r, slot) = 0;
        uint32_t *v = weft__net_rec_versions(r, slot);
        for (uint32_t k = 0; k < stride; k++)
          v[k] = tick;
      }
      float xy[2];
      memcpy(xy, pos + (size_t)i * psize, sizeof xy);
      r->cell[2 * (size_t)slot] = cell_of(xy[0], size);
      r->cell[2 * (size_t)slot + 1] = cell_of(xy[1], size);
      r->seen[slot] = r->stamp_no;
      r->next_mask[slot] = 0;
      r->stamped[r->count++] = slot;
    }
  }
  return 0;
}

/* Copies row @p i of the chunk's component k into @p slot's values. */
static void keep_value(weft_net_t *net, const weft_iter_t *it, uint32_t k,
                       uint32_t i, uint32_t slot) {
  weft__net_repl *r = &net->repl;
  uint32_t size = net->schema.sizes[k];
  uint8_t *dst = weft__net_rec_values(r, slot) + r->voff[k];
  if (!(r->soa >> k & 1))
    memcpy(dst, (const uint8_t *)it->columns[0] + (size_t)i * size, size);
  else if (weft_read(net->world, it->entities[i], net->comps[k], dst) != 0)
    memset(dst, 0, size);
}

/* Second pass, one query per component: membership, the tick on the rows
 * the dirty bytes mark, and the values of those rows and of the rows
 * that just gained the component. */
static void stamp_component(weft_net_t *net, uint32_t k, uint32_t tick) {
  weft__net_repl *r = &net->repl;
  uint64_t bit = 1ull << k;
  bool sized = net->schema.sizes[k] > 0;
  weft_iter_t it;
  weft_query_iter(net->comp_query[k], &it);
  while (weft_iter_next(&it)) {
    const uint8_t *dirty = weft_iter_dirty(&it, 0);
    for (uint32_t i = 0; i < it.count; i++) {
      uint32_t slot = weft_entity_index(it.entities[i]);
      r->next_mask[slot] |= bit;
      bool written = !dirty || dirty[i];
      if (dirty && dirty[i])
        weft__net_rec_versions(r, slot)[k] = tick;
      if (sized && (written || !(*weft__net_rec_mask(r, slot) & bit)))
        keep_value(net, &it, k, i, slot);
    }
  }
}

/* Components that joined or left since the last stamp change then; slots
 * no longer stamped (despawned, or without a position) are cleared. */
static void stamp_masks(weft__net_repl *r, uint32_t tick) {
  for (uint32_t j = 0; j < r->count; j++) {
    uint32_t slot = r->stamped[j];
    uint64_t *mask = weft__net_rec_mask(r, slot);
    uint64_t changed = *mask ^ r->next_mask[slot];
    while (changed) {
      uint32_t k = (uint32_t)__builtin_ctzll(changed);
      weft__net_rec_versions(r, slot)[k] = tick;
      changed &= changed - 1;
    }
    *mask = r->next_mask[slot];
  }
  for (uint32_t slot = 0; slot < r->cap; slot++)
    if (r->handle[slot] && r->seen[slot] != r->stamp_no) {
      r->handle[slot] = 0;
      *weft__net_rec_mask(r, slot) = 0;
    }
}

/* Counting sort of the stamped slots by cell bucket. */
static void build_grid(weft__net_repl *r) {
  memset(r->bucket, 0, (r->nbuckets + 1) * sizeof *r->bucket);
  for (uint32_t j = 0; j < r->count; j++) {
    uint32_t s = r->stamped[j];
    r->bucket[cell_bucket(r, r->cell[2 * (size_t)s],
                          r->cell[2 * (size_t)s + 1]) +
              1]++;
  }
  for (uint32_t b = 0; b < r->nbuckets; b++)
    r->bucket[b + 1] += r->bucket[b];
  /* next_mask is free again: it serves as the fill cursor. */
  for (uint32_t j = 0; j < r->count; j++) {
    uint32_t s = r->stamped[j];
    uint32_t b =
        cell_bucket(r, r->cell[2 * (size_t)s], r->cell[2 * (size_t)s + 1]);
    uint32_t at = r->bucket[b] + (uint32_t)r->next_mask[b];
    r->next_mask[b]++;
    r->grid[at] = (weft__net_grid_item){r->handle[s], r->cell[2 * (size_t)s],
                                        r->cell[2 * (size_t)s + 1]};
  }
}

int weft__net_repl_stamp(weft_net_t *net, uint32_t tick) {
  weft__net_repl *r = &net->repl;
  r->stamp_no++;
  r->count = 0;
  int rc = stamp_positions(net, tick);
  if (rc)
    return rc;
  for (uint32_t k = 0; k < r->ncomp; k++)
    stamp_component(net, k, tick);
  stamp_masks(r, tick);
  /* The grid's fill cursors use next_mask (nbuckets < cap). */
  memset(r->next_mask, 0, r->nbuckets * sizeof *r->next_mask);
  build_grid(r);
  return 0;
}

uint32_t weft__net_repl_slot(const weft__net_repl *r, weft_entity_t e) {
  uint32_t slot = weft_entity_index(e);
  if (e == WEFT_ENTITY_NULL || slot >= r->cap || r->handle[slot] != e)
    return UINT32_MAX;
  return slot;
}
