/* SPDX-License-Identifier: MIT */
/* Archetype creation, chunk layout, the archetype graph and row moves. */
#include "core/archetype.h"

#include <stddef.h>
#include <string.h>

#include "core/check.h"
#include "core/hooks.h"
#include "core/observer.h"
#include "core/world.h"

#define WEFT__ALIGN64(x) (((x) + 63u) & ~63u)

/* Bytes one chunk's rows take: its handles plus every array. */
static uint64_t chunk_bytes_for(const weft__archetype_t *a, uint32_t cap) {
  uint64_t n = WEFT__ALIGN64((uint64_t)cap * sizeof(weft_entity_t));
  for (uint32_t i = 0; i < a->narrays; i++)
    n += WEFT__ALIGN64((uint64_t)a->arrays[i].elem * cap);
  return n;
}

/*
 * Picks rows per chunk: as many as fit the chunk size, rounded down to a
 * multiple of 64 when there are that many, so that every array of every
 * chunk starts on a cache line and consecutive chunks' arrays touch.
 */
static int layout(weft_world_t *w, weft__archetype_t *a) {
  uint64_t row = sizeof(weft_entity_t);
  for (uint32_t i = 0; i < a->narrays; i++)
    row += a->arrays[i].elem;
  uint64_t cap = w->chunk_size / row;
  if (cap > WEFT_CHUNK_ROWS_MAX)
    cap = WEFT_CHUNK_ROWS_MAX;
  if (cap >= 64)
    cap &= ~(uint64_t)63;
  while (cap > 0 && chunk_bytes_for(a, (uint32_t)cap) > w->chunk_size)
    cap--;
  WEFT_CHECK(w, cap > 0, WEFT_ELAYOUT,
             "a row of %llu bytes does not fit a %u-byte chunk",
             (unsigned long long)row, w->chunk_size);
  a->row_cap = (uint32_t)cap;
  a->entity_stride =
      WEFT__ALIGN64(a->row_cap * (uint32_t)sizeof(weft_entity_t));
  /* Chunks of a segment continue each other's arrays exactly when no array
   * needs padding at a chunk's end. */
  a->contiguous = a->entity_stride == a->row_cap * sizeof(weft_entity_t);
  for (uint32_t i = 0; i < a->narrays; i++) {
    a->arrays[i].stride = WEFT__ALIGN64(a->arrays[i].elem * a->row_cap);
    a->contiguous &= a->arrays[i].stride == a->arrays[i].elem * a->row_cap;
  }
  return 0;
}

/* Counts components, columns, arrays and tracked columns of a signature
 * (a tracked column adds its dirty array to the arrays). */
static void count_shape(const weft_world_t *w, const weft__mask_t *present,
                        uint32_t *ncomps, uint32_t *ncols, uint32_t *narrays,
                        uint32_t *ndirty) {
  *ncomps = *ncols = *narrays = *ndirty = 0;
  WEFT__MASK_FOREACH(present, id) {
    const weft__component_t *c = weft__registry_get(&w->registry, id);
    (*ncomps)++;
    if (c->size == 0)
      continue;
    (*ncols)++;
    *narrays += (c->flags & WEFT_COMPONENT_SOA) ? c->field_count : 1;
    *ndirty += (c->flags & WEFT_COMPONENT_TRACK_DIRTY) != 0;
  }
  *narrays += *ndirty;
}

static void fill_columns(const weft_world_t *w, weft__archetype_t *a) {
  uint32_t ci = 0, ai = 0, k = 0, di = 0;
  WEFT__MASK_FOREACH(&a->present, id) {
    const weft__component_t *c = weft__registry_get(&w->registry, id);
    a->comps[k++] = id;
    if (c->size == 0)
      continue;
    weft__column_t *col = &a->cols[ci];
    col->comp = id;
    col->size = c->size;
    col->soa = (c->flags & WEFT_COMPONENT_SOA) != 0;
    if (c->flags & WEFT_COMPONENT_TRACK_DIRTY)
      col->dirty = (uint16_t)++di;
    col->first_array = (uint16_t)ai;
    col->array_count = (uint16_t)(col->soa ? c->field_count : 1);
    for (uint32_t f = 0; f < col->array_count; f++, ai++) {
      a->arrays[ai].elem = col->soa ? c->fields[f].size : c->size;
      a->arrays[ai].value_off = col->soa ? c->fields[f].offset : 0;
    }
    a->colmap[id] = (uint16_t)(++ci);
    if (col->soa)
      continue;
    weft__getcol_t *g = &a->getmap[id];
    if (col->first_array < WEFT__SLOT_BASES && c->size < WEFT__GETCOL_COLD) {
      g->off = (uint16_t)(offsetof(weft__chunk_slot_t, base) +
                          col->first_array * sizeof(uint8_t *));
      g->size = (uint16_t)c->size;
    } else {
      g->size = WEFT__GETCOL_COLD;
    }
  }
  /* The dirty arrays come last, one byte per row each, so that the data
   * arrays keep their places (and the chunk table's inline bases). */
  for (uint32_t d = 0; d < a->ndirty; d++, ai++)
    a->arrays[ai] = (weft__array_t){.elem = 1};
}

/* Frees a segment's chunk memory the way it was allocated. */
static void free_segment_mem(struct weft_pool_t *pool, void *mem,
                             size_t bytes) {
  if (pool)
    weft__pool_hooks(pool)->free_on(pool, mem, bytes);
  else
    weft__free(mem, bytes, 64);
}

void weft__archetype_free(weft__archetype_t *a) {
  if (!a)
    return;
  for (uint32_t i = 0; i < a->edge_cap; i++)
    weft__free(a->edges[i].plan, 0, 16);
  for (uint32_t i = 0; i < a->nsegs; i++) {
    free_segment_mem(a->segs[i].pool, a->segs[i].mem, a->segs[i].bytes);
    weft__free(a->segs[i].headers, 0, 64);
  }
  weft__free(a->segs, 0, 16);
  weft__free(a->edges, 0, 16);
  weft__free(a->chunks, 0, 16);
  weft__free(a->cols, 0, 16);
  weft__free(a->arrays, 0, 16);
  weft__free(a->comps, 0, 16);
  weft__archetype_pair_edges_drop(a, 0);
  weft__free(a->pairs, 0, 16);
  weft__free(a, sizeof(*a), 64);
}

static weft__archetype_t *archetype_new(weft_world_t *w,
                                        const weft__mask_t *present,
                                        const weft__mask_t *disabled,
                                        const weft__pair_t *pairs,
                                        uint32_t npairs) {
  weft__archetype_t *a = weft__calloc(&w->alloc, sizeof(*a), 64);
  if (!a)
    return NULL;
  if (npairs) {
    a->pairs = weft__alloc(&w->alloc, npairs * sizeof(*pairs), 16);
    if (!a->pairs) {
      weft__free(a, sizeof(*a), 64);
      return NULL;
    }
    memcpy(a->pairs, pairs, npairs * sizeof(*pairs));
    a->npairs = npairs;
  }
  a->present = *present;
  a->disabled = *disabled;
  a->change_version = &w->change_version;
  a->enabled = weft__mask_andnot(present, disabled);
  for (uint32_t c = 0; c <= WEFT_MAX_COMPONENTS; c++)
    a->getmap[c].off = offsetof(weft__chunk_slot_t, none);
  count_shape(w, present, &a->ncomps, &a->ncols, &a->narrays, &a->ndirty);
  a->cols = weft__calloc(&w->alloc, (a->ncols + 1) * sizeof(*a->cols), 16);
  a->arrays =
      weft__calloc(&w->alloc, (a->narrays + 1) * sizeof(*a->arrays), 16);
  a->comps = weft__calloc(&w->alloc, (a->ncomps + 1) * sizeof(*a->comps), 16);
  if (!a->cols || !a->arrays || !a->comps) {
    weft__archetype_free(a);
    return NULL;
  }
  fill_columns(w, a);
  return a;
}

/* Whether a's pairs are exactly these. */
static bool pairs_eq(const weft__archetype_t *a, const weft__pair_t *pairs,
                     uint32_t npairs) {
  return a->npairs == npairs &&
         (!npairs || memcmp(a->pairs, pairs, npairs * sizeof(*pairs)) == 0);
}

/* Slot of a signature in the open-addressing table (found or empty). A
 * signature without pairs hashes as it always did. */
static uint32_t table_slot(const weft_world_t *w, const weft__mask_t *present,
                           const weft__mask_t *disabled,
                           const weft__pair_t *pairs, uint32_t npairs) {
  uint32_t mask = w->arch_table_cap - 1;
  uint64_t h = weft__mask_hash2(present, disabled);
  if (WEFT__UNLIKELY(npairs != 0))
    h ^= weft__pairs_hash(pairs, npairs);
  uint32_t i = (uint32_t)h & mask;
  for (;; i = (i + 1) & mask) {
    uint32_t id = w->arch_table[i];
    if (!id)
      return i;
    const weft__archetype_t *a = w->archs[id - 1];
    if (weft__mask_eq(&a->present, present) &&
        weft__mask_eq(&a->disabled, disabled) && pairs_eq(a, pairs, npairs))
      return i;
  }
}

static int table_grow(weft_world_t *w) {
  uint32_t n = w->arch_table_cap ? w->arch_table_cap * 2 : 64;
  uint32_t *t = weft__calloc(&w->alloc, n * sizeof(*t), 16);
  if (!t)
    return WEFT_ENOMEM;
  weft__free(w->arch_table, 0, 16);
  w->arch_table = t;
  w->arch_table_cap = n;
  for (uint32_t id = 0; id < w->arch_count; id++) {
    const weft__archetype_t *a = w->archs[id];
    /* A freed id's slot holds the vacant archetype, whose empty signature
     * would take the root's place in the table. */
    if (a != &w->arch_vacant)
      w->arch_table[table_slot(w, &a->present, &a->disabled, a->pairs,
                               a->npairs)] = id + 1;
  }
  return 0;
}

/* Makes room for ids up to n - 1 in the list and the table, and for every
 * id in the free list, so that removing archetypes cannot fail. */
static int reserve_ids(weft_world_t *w, uint32_t n) {
  if (weft__grow(&w->alloc, &w->archs, &w->arch_cap, n, sizeof(*w->archs), 32))
    return WEFT_ENOMEM;
  if (weft__grow(&w->alloc, &w->arch_free, &w->arch_free_cap, n,
                 sizeof(*w->arch_free), 32))
    return WEFT_ENOMEM;
  while (n * 2 > w->arch_table_cap)
    if (table_grow(w))
      return WEFT_ENOMEM;
  return 0;
}

/* Whether archetype a can go: it holds no row and owns no chunk id. */
static bool droppable(const weft__archetype_t *a) {
  return a->count == 0 && a->chunk_total == 0;
}

/* Removes the edge in slot i of a's table, moving later entries of its
 * probe run back (linear probing needs no tombstones then). */
static void edge_delete(weft__archetype_t *a, uint32_t i) {
  const uint32_t mask = a->edge_cap - 1;
  weft__free(a->edges[i].plan, 0, 16);
  for (uint32_t j = (i + 1) & mask; a->edges[j].key; j = (j + 1) & mask) {
    uint32_t home = weft__edge_hash(a->edges[j].key, a->edge_cap);
    /* Entry j may fill the hole at i unless its home lies cyclically in
     * (i, j]. */
    if (((j - home) & mask) >= ((j - i) & mask)) {
      a->edges[i] = a->edges[j];
      i = j;
    }
  }
  a->edges[i] = (weft__edge_t){0};
  a->edge_count--;
  a->last_edge = NULL; /* it may have pointed at a moved entry */
}

void weft__archetypes_rollback(weft_world_t *w, uint32_t mark) {
  if (w->arch_born == mark)
    return; /* nothing was created since: the common case, one test */
  bool any = false;
  for (;;) {
    /* The newest archetype made since mark and not yet marked: reused ids
     * put new archetypes anywhere in the list, so their stamps decide. */
    weft__archetype_t *newest = NULL;
    for (uint32_t id = 1; id < w->arch_count; id++) {
      weft__archetype_t *a = w->archs[id];
      if (a->born >= mark && !a->gone && a != &w->arch_vacant &&
          (!newest || a->born > newest->born))
        newest = a;
    }
    if (!newest || !droppable(newest))
      break;
    newest->gone = true;
    any = true;
  }
  if (any)
    weft__archetypes_remove(w, true);
}

/* Puts id on the free list, kept descending (room was reserved when the
 * id was issued: see reserve_one). */
static void free_id_push(weft_world_t *w, uint32_t id) {
  uint32_t i = w->arch_free_n;
  while (i > 0 && w->arch_free[i - 1] < id) {
    w->arch_free[i] = w->arch_free[i - 1];
    i--;
  }
  w->arch_free[i] = id;
  w->arch_free_n++;
}

static size_t segment_header_bytes(const weft__archetype_t *a, uint32_t n);

/* Gives back the chunk ids and memory of a removed archetype's chunks (all
 * spares: it holds no row). */
static void release_chunks(weft_world_t *w, weft__archetype_t *a) {
  for (uint32_t i = 0; i < a->nsegs; i++) {
    const weft__segment_t *s = &a->segs[i];
    for (uint32_t k = 0; k < s->nchunks; k++)
      weft__chunks_release(&w->chunks, s->headers[k].id);
    w->chunk_bytes -= s->bytes + segment_header_bytes(a, s->nchunks);
  }
  w->chunks_spare -= a->chunk_total;
}

/* Whether a transition's target is being removed (pair transitions). */
static bool to_gone(const weft__archetype_t *to, void *ctx) {
  (void)ctx;
  return to->gone;
}

void weft__archetypes_remove(weft_world_t *w, bool free_them) {
  weft__queries_drop_archetypes(w);
  for (uint32_t id = 0; id < w->arch_count; id++) {
    weft__archetype_t *a = w->archs[id];
    for (uint32_t i = 0; !a->gone && i < a->edge_cap;)
      if (a->edges[i].key && a->edges[i].to->gone)
        edge_delete(a, i); /* slot i may hold a moved entry now */
      else
        i++;
    if (!a->gone && a->pedge_count)
      weft__archetype_pair_edges_drop_if(a, to_gone, NULL);
  }
  for (uint32_t i = 0; i < WEFT__SPAWN_CACHE; i++)
    if (w->spawn_cache[i].arch && w->spawn_cache[i].arch->gone)
      memset(&w->spawn_cache[i], 0, sizeof(w->spawn_cache[i]));
  if (w->spawn_last && !w->spawn_last->arch)
    w->spawn_last = NULL;
  w->arch_vacant.id = UINT32_MAX;
  for (uint32_t id = 1; id < w->arch_count; id++) {
    weft__archetype_t *a = w->archs[id];
    if (!a->gone)
      continue;
    release_chunks(w, a);
    w->archs[id] = &w->arch_vacant;
    free_id_push(w, id);
    if (free_them)
      weft__archetype_free(a);
  }
  /* Free ids at the top leave the list: a rollback of appended archetypes
   * restores the count it found. The highest free id is the first. */
  while (w->arch_free_n && w->arch_free[0] == w->arch_count - 1) {
    memmove(w->arch_free, w->arch_free + 1,
            (w->arch_free_n - 1) * sizeof(*w->arch_free));
    w->arch_free_n--;
    w->arch_count--;
  }
  /* The signature table keeps its size: refill it with the survivors. */
  memset(w->arch_table, 0, w->arch_table_cap * sizeof(*w->arch_table));
  for (uint32_t id = 0; id < w->arch_count; id++) {
    const weft__archetype_t *a = w->archs[id];
    if (a != &w->arch_vacant)
      w->arch_table[table_slot(w, &a->present, &a->disabled, a->pairs,
                               a->npairs)] = id + 1;
  }
}

int weft__archetype_get(weft_world_t *w, const weft__mask_t *present,
                        const weft__mask_t *disabled, weft__archetype_t **out) {
  return weft__archetype_get_pairs(w, present, disabled, NULL, 0, out);
}

/* Takes free id `id` (below arch_count, vacant) off the free list, or,
 * at or past arch_count, extends the list to it, the ids between vacant
 * and free. Room was reserved (reserve_ids). */
static void take_id(weft_world_t *w, uint32_t id) {
  while (w->arch_count < id) {
    w->archs[w->arch_count] = &w->arch_vacant;
    free_id_push(w, w->arch_count++);
  }
  if (id == w->arch_count) {
    w->arch_count++;
    return;
  }
  uint32_t i = 0;
  while (w->arch_free[i] != id)
    i++;
  memmove(w->arch_free + i, w->arch_free + i + 1,
          (w->arch_free_n - i - 1) * sizeof(*w->arch_free));
  w->arch_free_n--;
}

/* Creates the archetype of a signature the table does not hold, with id
 * `want` (UINT32_MAX: the lowest free one, else the next). */
static int create(weft_world_t *w, const weft__mask_t *present,
                  const weft__mask_t *disabled, const weft__pair_t *pairs,
                  uint32_t npairs, uint32_t want, weft__archetype_t **out) {
  uint32_t bound = want != UINT32_MAX && want >= w->arch_count
                       ? want + 1
                       : w->arch_count + 1;
  int rc = reserve_ids(w, bound);
  WEFT_CHECK(w, rc == 0, rc, "out of memory growing the archetype table");
  weft__archetype_t *a = archetype_new(w, present, disabled, pairs, npairs);
  WEFT_CHECK(w, a, WEFT_ENOMEM, "out of memory creating an archetype");
  rc = layout(w, a);
  if (rc == 0) {
    /* The lowest free id first, so that ids follow from the program alone;
     * none free: the next one. */
    if (want != UINT32_MAX) {
      take_id(w, want);
      a->id = want;
    } else {
      a->id = w->arch_free_n ? w->arch_free[--w->arch_free_n] : w->arch_count++;
    }
    a->born = w->arch_born++;
    w->archs[a->id] = a;
    w->arch_table[table_slot(w, present, disabled, pairs, npairs)] = a->id + 1;
    rc = weft__queries_on_archetype(w, a);
    /* A query that failed to record the archetype would miss its rows:
     * the archetype goes again, and the failure is reported. */
    if (rc == 0) {
      *out = a;
      weft__obs_archetype_created(w, a);
      return 0;
    }
    weft__archetypes_rollback(w, a->born);
    return rc;
  }
  weft__archetype_free(a);
  return rc;
}

int weft__archetype_get_pairs(weft_world_t *w, const weft__mask_t *present,
                              const weft__mask_t *disabled,
                              const weft__pair_t *pairs, uint32_t npairs,
                              weft__archetype_t **out) {
  if (w->arch_table_cap) {
    uint32_t id =
        w->arch_table[table_slot(w, present, disabled, pairs, npairs)];
    if (id) {
      *out = w->archs[id - 1];
      return 0;
    }
  }
  return create(w, present, disabled, pairs, npairs, UINT32_MAX, out);
}

int weft__archetype_restore(weft_world_t *w, uint32_t id, uint32_t born,
                            const weft__mask_t *present,
                            const weft__mask_t *disabled,
                            const weft__pair_t *pairs, uint32_t npairs,
                            weft__archetype_t **out) {
  WEFT_CHECK(w, id > 0 && born >= w->arch_born, WEFT_EINVAL,
             "archetype %u (stamp %u) cannot be restored", id, born);
  WEFT_CHECK(w, id >= w->arch_count || w->archs[id] == &w->arch_vacant,
             WEFT_EBUSY, "archetype id %u is taken", id);
  if (w->arch_table_cap)
    WEFT_CHECK(w,
               !w->arch_table[table_slot(w, present, disabled, pairs, npairs)],
               WEFT_EBUSY, "archetype %u's signature exists", id);
  w->arch_born = born;
  return create(w, present, disabled, pairs, npairs, id, out);
}

/* The signature an edge leads to. An add brings c's requirements along
 * (core/require.h). */
static void edge_signature(const weft_world_t *w, const weft__archetype_t *a,
                           uint32_t op, weft_component_t c,
                           weft__mask_t *present, weft__mask_t *disabled) {
  *present = a->present;
  *disabled = a->disabled;
  switch (op) {
  case WEFT__EDGE_ADD:
  case WEFT__EDGE_REL_ADD:
    weft__mask_set(present, c);
    weft__req_expand_list(&w->registry, &c, 1, present);
    break;
  case WEFT__EDGE_REMOVE:
  case WEFT__EDGE_REL_REMOVE:
    weft__mask_clear(present, c);
    weft__mask_clear(disabled, c);
    break;
  case WEFT__EDGE_DISABLE:
    weft__mask_set(disabled, c);
    break;
  default:
    weft__mask_clear(disabled, c);
    break;
  }
}

/* The copies a move from a to b performs: every array both share, and the
 * dirty bytes of the tracked columns both share (a tracked component is
 * tracked in every archetype); for an ADD edge of a component with
 * requirements, then the default writes of the components it brings along
 * (after the copies, see weft__edge_defaults()). */
int weft__archetype_plan(weft_world_t *w, const weft__archetype_t *a,
                         const weft__archetype_t *b, weft__edge_t *e,
                         weft_component_t added) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < b->ncols; i++)
    if (weft__archetype_col(a, b->cols[i].comp))
      n += b->cols[i].array_count + (b->cols[i].dirty != 0);
  const weft__req_comp_t *rq = added ? weft__req_of(&w->registry, added) : NULL;
  size_t copies = ((size_t)(n + 1) * sizeof(*e->plan) + 7u) & ~(size_t)7;
  size_t defaults = rq ? rq->nclosure * sizeof(weft__edge_default_t) : 0;
  e->plan = weft__alloc(&w->alloc, copies + defaults, 16);
  if (!e->plan)
    return WEFT_ENOMEM;
  e->plan_len = (uint16_t)n;
  if (rq)
    e->ndefaults = (uint16_t)weft__req_edge_defaults(
        &w->registry, a, b, added,
        (weft__edge_default_t *)weft__edge_defaults(e));
  uint32_t k = 0;
  for (uint32_t i = 0; i < b->ncols; i++) {
    const weft__column_t *dc = &b->cols[i];
    const weft__column_t *sc = weft__archetype_col(a, dc->comp);
    if (!sc)
      continue;
    for (uint32_t f = 0; f < dc->array_count; f++) {
      e->plan[k].src = sc->first_array + f;
      e->plan[k].dst = dc->first_array + f;
      e->plan[k].elem = b->arrays[dc->first_array + f].elem;
      k++;
    }
    if (dc->dirty) {
      e->plan[k].src = weft__dirty_array(a, sc);
      e->plan[k].dst = weft__dirty_array(b, dc);
      e->plan[k].elem = 1;
      k++;
    }
  }
  return 0;
}

static weft__edge_t *edge_find(const weft__archetype_t *a, uint32_t key) {
  if (!a->edge_cap)
    return NULL;
  uint32_t mask = a->edge_cap - 1;
  for (uint32_t i = weft__edge_hash(key, a->edge_cap);; i = (i + 1) & mask) {
    if (a->edges[i].key == key || a->edges[i].key == 0)
      return &a->edges[i];
  }
}

static int edges_grow(weft_world_t *w, weft__archetype_t *a) {
  uint32_t n = a->edge_cap ? a->edge_cap * 2 : 8;
  weft__edge_t *old = a->edges;
  uint32_t old_cap = a->edge_cap;
  a->edges = weft__calloc(&w->alloc, n * sizeof(*a->edges), 16);
  if (!a->edges) {
    a->edges = old;
    return WEFT_ENOMEM;
  }
  a->edge_cap = n;
  a->last_edge = NULL; /* it pointed into the old table */
  for (uint32_t i = 0; i < old_cap; i++)
    if (old[i].key)
      *edge_find(a, old[i].key) = old[i];
  weft__free(old, 0, 16);
  return 0;
}

int weft__archetype_edge_slow(weft_world_t *w, weft__archetype_t *a,
                              uint32_t op, weft_component_t comp,
                              const weft__edge_t **out) {
  uint32_t key = op << 16 | comp;
  weft__edge_t *e = edge_find(a, key);
  if (e && e->key == key) {
    *out = e;
    return 0;
  }
  /* A relation's bit means "has an edge": only the edge store moves it.
   * Checked here, where edges are built, so that the cached moves of
   * every other component pay nothing for it. */
  const weft__component_t *ci = weft__registry_get(&w->registry, comp);
  WEFT_CHECK(w,
             op >= WEFT__EDGE_REL_ADD || !ci ||
                 !(ci->flags & WEFT_COMPONENT_RELATION),
             WEFT_EINVAL,
             "'%s' is a relation: its edges need a target (use "
             "weft_relation_add / weft_relation_remove)",
             ci->name);
  /* Build the target and its copy plan, then cache both. */
  if ((a->edge_count + 1) * 2 > a->edge_cap) {
    int rc = edges_grow(w, a);
    WEFT_CHECK(w, rc == 0, rc, "out of memory growing archetype edges");
  }
  weft__mask_t present, disabled;
  edge_signature(w, a, op, comp, &present, &disabled);
  weft__archetype_t *b;
  /* The pairs of dense relations ride along every component move. */
  int rc = weft__archetype_get_pairs(w, &present, &disabled, a->pairs,
                                     a->npairs, &b);
  if (rc)
    return rc;
  weft__edge_t tmp = {.key = key, .to = b};
  if (op == WEFT__EDGE_ADD)
    tmp.col = weft__archetype_col(b, comp);
  rc = weft__archetype_plan(w, a, b, &tmp, op == WEFT__EDGE_ADD ? comp : 0);
  WEFT_CHECK(w, rc == 0, rc, "out of memory building a move plan");
  e = edge_find(a, key);
  *e = tmp;
  a->edge_count++;
  *out = e;
  return 0;
}

static int grow_chunk_list(weft_world_t *w, weft__archetype_t *a,
                           uint32_t need) {
  return weft__grow(&w->alloc, &a->chunks, &a->chunk_cap, need,
                    sizeof(*a->chunks), 4);
}

/* Largest segment allocated for one-by-one growth; batch reservations get
 * exactly what they need. */
#define WEFT__SEGMENT_MAX (8u << 20)
#define WEFT__HUGE_PAGE (2u << 20)
#define WEFT__SEGMENT_GAP 16384u
#define WEFT__SEGMENT_GAP_MIN (256u << 10)
#define WEFT__STAGGER_MIN (16u << 10)

/*
 * Bytes of padding before region r of a segment of n chunks (region 0
 * holds the handles, region 1 + i array i), which would start, unpadded,
 * at byte `at` of the segment (64-byte aligned, as the segment is).
 *
 * Two reasons to pad. Regions sized in multiples of 4 KiB put element r
 * of every array at the same address modulo 4096, and a CPU checks
 * whether a load depends on an earlier store by those low 12 bits only:
 * a loop that stores x[r] and then loads y[r] stalls on every load ("4K
 * aliasing"). With 16 KiB chunks, 512-row arrays of floats are 2 KiB, so
 * every segment of an even number of chunks was laid out that way (see
 * docs/performance-notes.md, core/archetype.c). So each region
 * of a segment of at least WEFT__STAGGER_MIN bytes of handles starts at
 * its own share of the 4 KiB, in whole lines: of R regions, region r at
 * line r * 64 / R of the 64 modulo 4096.
 * And regions sized in multiples of a big power of two put element r of
 * every array in the same L2 cache set, so the streams of one loop evict
 * each other: in a large
 * segment every region moves a further 16 KiB on. Small segments stay
 * packed: an archetype's first chunks take no padding.
 */
static size_t region_pad(const weft__archetype_t *a, uint32_t n, uint32_t r,
                         size_t at) {
  size_t handles = (size_t)a->entity_stride * n, pad = 0;
  if (r > 0 && handles >= WEFT__SEGMENT_GAP_MIN)
    pad += WEFT__SEGMENT_GAP;
  if (handles >= WEFT__STAGGER_MIN) {
    size_t want = (size_t)r * 64u / (a->narrays + 1u) * 64u; /* a line */
    pad += (want - (at + pad)) & 4095u;
  }
  return pad;
}

/* The bytes of region r of a segment of n chunks. */
static size_t region_bytes(const weft__archetype_t *a, uint32_t n, uint32_t r) {
  return (size_t)n * (r ? a->arrays[r - 1].stride : a->entity_stride);
}

/* The bytes of a segment of n chunks, padding included. */
static size_t segment_bytes(const weft__archetype_t *a, uint32_t n) {
  size_t at = 0;
  for (uint32_t r = 0; r <= a->narrays; r++) {
    at += region_pad(a, n, r, at);
    at += region_bytes(a, n, r);
  }
  return at;
}

/* Bytes of the headers and base pointers of n chunks of archetype a. */
static size_t segment_header_bytes(const weft__archetype_t *a, uint32_t n) {
  return (size_t)n *
         (sizeof(weft__chunk_t) +
          (a->narrays ? a->narrays : 1) * sizeof(uint8_t *) +
          a->ndirty * sizeof(uint64_t) + a->ncols * sizeof(uint32_t));
}

/*
 * Points n new chunk headers at their rows in segment memory mem: the
 * handles of all n chunks first, then each array of all n chunks in turn,
 * and appends the chunks to the archetype's list.
 */
static void carve_segment(weft__archetype_t *a, uint8_t *mem,
                          weft__chunk_t *headers, uint8_t **bases, uint32_t n) {
  size_t at = region_pad(a, n, 0, 0);
  for (uint32_t k = 0; k < n; k++) {
    weft__chunk_t *c = &headers[k];
    c->arch = a;
    c->bases = bases + (size_t)k * a->narrays;
    c->entities = (weft_entity_t *)(mem + at + (size_t)k * a->entity_stride);
    c->index = a->chunk_total + k;
    a->chunks[c->index] = c;
  }
  at += region_bytes(a, n, 0);
  for (uint32_t i = 0; i < a->narrays; i++) {
    at += region_pad(a, n, 1 + i, at);
    for (uint32_t k = 0; k < n; k++)
      headers[k].bases[i] = mem + at + (size_t)k * a->arrays[i].stride;
    at += region_bytes(a, n, 1 + i);
  }
}

/*
 * Allocates a segment of n chunks and appends them to the archetype as
 * spares. The segment's memory is column-major: the handles of all n
 * chunks, then array 0 of all n chunks, then array 1, and so on.
 */
static int add_segment(weft_world_t *w, weft__archetype_t *a, uint32_t n) {
  size_t bytes = segment_bytes(a, n);
  size_t hdr = (size_t)n * sizeof(weft__chunk_t);
  size_t ptrs = segment_header_bytes(a, n) - hdr;
  int rc = grow_chunk_list(w, a, a->chunk_total + n);
  if (!rc)
    rc = weft__grow(&w->alloc, &a->segs, &a->seg_cap, a->nsegs + 1,
                    sizeof(*a->segs), 4);
  WEFT_CHECK(w, rc == 0, rc, "out of memory growing chunk lists");
  bool huge = bytes >= WEFT__HUGE_PAGE;
  size_t align = huge ? WEFT__HUGE_PAGE : 64;
  /* With a pool, segments take its NUMA groups in turn: at scale every
   * segment has the maximum size, so an archetype spreads evenly. */
  uint32_t node = 0;
  uint8_t *mem;
  struct weft_pool_t *pool = w->pool;
  if (pool) {
    const weft__pool_hooks_t *hk = weft__pool_hooks(pool);
    uint32_t g = a->nsegs % hk->node_groups(pool);
    node = hk->group_node(pool, g);
    mem = hk->alloc_on(pool, g, &w->alloc, bytes, align);
  } else {
    mem = weft__alloc(&w->alloc, bytes, align);
  }
  weft__chunk_t *headers = weft__alloc(&w->alloc, hdr + ptrs, 64);
  if (!mem || !headers) {
    free_segment_mem(pool, mem, bytes);
    weft__free(headers, hdr + ptrs, 64);
    return weft__fail(w, WEFT_ENOMEM, WEFT__FILE, WEFT__LINE,
                      "out of memory allocating %u chunks", n);
  }
  weft__advise_huge(mem, bytes);
  memset(headers, 0, hdr);
  /* Carved first, so that the chunk table copies the finished pointers;
   * until chunk_total grows below, the carved chunks are not the
   * archetype's, and a failed registration leaves it as it was. */
  uint8_t **bases = (uint8_t **)((uint8_t *)headers + hdr);
  carve_segment(a, mem, headers, bases, n);
  rc = weft__chunks_register(&w->chunks, &w->alloc, a, a->narrays, headers, n);
  w->index.table = w->chunks.table; /* it may have moved */
  if (rc) {
    free_segment_mem(pool, mem, bytes);
    weft__free(headers, hdr + ptrs, 64);
    return weft__fail(w, rc, WEFT__FILE, WEFT__LINE,
                      "cannot add %u chunks (%s)", n, weft_strerror(rc));
  }
  /* Column change versions follow the base pointers, one row of ncols
   * words per chunk, in chunk order: the scheduler stamps a run of chunks
   * by walking them (scheduler/pipeline.c). Zero = never. */
  /* The dirty ticks of tracked columns (core/dirty.h) sit between the
   * bases and the versions, where they stay 8-byte aligned. */
  uint64_t *ticks =
      (uint64_t *)(bases + (size_t)n * (a->narrays ? a->narrays : 1));
  uint32_t *vers = (uint32_t *)(ticks + (size_t)n * a->ndirty);
  memset(ticks, 0, (size_t)n * a->ndirty * sizeof(uint64_t));
  memset(vers, 0, (size_t)n * a->ncols * sizeof(uint32_t));
  for (uint32_t k = 0; k < n; k++) {
    headers[k].node = node;
    headers[k].versions = vers + (size_t)k * a->ncols;
    headers[k].ticks = a->ndirty ? ticks + (size_t)k * a->ndirty : NULL;
    memset(headers[k].all_dirty, 0, sizeof(headers[k].all_dirty));
  }
  a->segs[a->nsegs++] = (weft__segment_t){mem, bytes, pool, headers, bases, n};
  a->chunk_total += n;
  w->chunks_spare += n;
  w->chunk_bytes += bytes + hdr + ptrs;
  weft__queries_on_chunks(w, a, n);
  return 0;
}

/* Chunks the next one-by-one segment gets: doubling, within the cap. */
static uint32_t next_segment_chunks(const weft__archetype_t *a,
                                    uint32_t chunk_size) {
  uint32_t max = WEFT__SEGMENT_MAX / chunk_size;
  uint32_t n = a->chunk_total ? a->chunk_total : 1;
  return n < max ? n : (max ? max : 1);
}

/* Puts the next chunk in use: a spare if there is one, else a new one. */
static int add_chunk(weft_world_t *w, weft__archetype_t *a) {
  if (a->nchunks == a->chunk_total) {
    int rc = add_segment(w, a, next_segment_chunks(a, w->chunk_size));
    if (rc)
      return rc;
  }
  weft__chunk_t *c = a->chunks[a->nchunks++];
  a->tail = c;
  c->count = 0;
  w->chunks_live++;
  w->chunks_spare--;
  return 0;
}

int weft__archetype_push_slow(weft_world_t *w, weft__archetype_t *a,
                              weft_entity_t e, weft__chunk_t **chunk,
                              uint32_t *row) {
  uint32_t one;
  int rc = weft__archetype_push_range(w, a, 1, chunk, row, &one);
  if (rc == 0)
    (*chunk)->entities[*row] = e;
  return rc;
}

int weft__archetype_push_range(weft_world_t *w, weft__archetype_t *a,
                               uint32_t max, weft__chunk_t **chunk,
                               uint32_t *row0, uint32_t *n) {
  weft__chunk_t *c = a->nchunks ? a->chunks[a->nchunks - 1] : NULL;
  if (!c || c->count == a->row_cap) {
    int rc = add_chunk(w, a);
    if (rc)
      return rc;
    c = a->chunks[a->nchunks - 1];
  }
  uint32_t k = a->row_cap - c->count;
  if (k > max)
    k = max;
  *chunk = c;
  *row0 = c->count;
  *n = k;
  c->count += k;
  c->sversion = *a->change_version;
  a->count += k;
  if (a->ndirty)
    weft__dirty_arrive(w, a, c, *row0, k);
  return 0;
}

uint64_t weft__archetype_trim(weft_world_t *w, weft__archetype_t *a) {
  uint64_t freed = 0;
  while (a->nsegs) {
    weft__segment_t *s = &a->segs[a->nsegs - 1];
    if (a->chunk_total - s->nchunks < a->nchunks)
      break; /* some chunk of the last segment holds rows */
    for (uint32_t k = 0; k < s->nchunks; k++)
      weft__chunks_release(&w->chunks, s->headers[k].id);
    uint64_t hdr = segment_header_bytes(a, s->nchunks);
    freed += s->bytes + hdr;
    free_segment_mem(s->pool, s->mem, s->bytes);
    weft__free(s->headers, (size_t)hdr, 64);
    w->chunks_spare -= s->nchunks;
    w->chunk_bytes -= s->bytes + hdr;
    a->chunk_total -= s->nchunks;
    a->nsegs--;
  }
  return freed;
}

/* Copies used chunk o into fresh chunk c of the same archetype: rows,
 * stamps and id; the chunk table entry of the id then names c. */
static void move_chunk(weft_world_t *w, const weft__archetype_t *a,
                       const weft__chunk_t *o, weft__chunk_t *c) {
  memcpy(c->entities, o->entities, (size_t)o->count * sizeof(weft_entity_t));
  for (uint32_t i = 0; i < a->narrays; i++)
    memcpy(c->bases[i], o->bases[i], (size_t)o->count * a->arrays[i].elem);
  memcpy(c->versions, o->versions, a->ncols * sizeof(*c->versions));
  if (a->ndirty)
    memcpy(c->ticks, o->ticks, a->ndirty * sizeof(*c->ticks));
  c->count = o->count;
  c->sversion = o->sversion;
  c->id = o->id;
  /* The dirty bytes came along as arrays; the all-rows flags with them
   * (owner thread, no reader running: a plain copy). */
  memcpy(c->all_dirty, o->all_dirty, sizeof(c->all_dirty));
  weft__chunk_slot_t *slot = &w->chunks.table[c->id];
  *slot = (weft__chunk_slot_t){
      .entities = c->entities, .arch = (weft__archetype_t *)a, .chunk = c};
  for (uint32_t k = 0; k < a->narrays && k < WEFT__SLOT_BASES; k++)
    slot->base[k] = c->bases[k];
}

int weft__archetype_rebuild(weft_world_t *w, weft__archetype_t *a,
                            uint64_t *freed) {
  const uint32_t n = a->nchunks;
  *freed = 0;
  if (n == 0 || n == a->chunk_total) {
    *freed = weft__archetype_trim(w, a); /* nothing to move */
    return 0;
  }
  /* Everything that can fail first: the segment list keeps one entry. */
  size_t bytes = segment_bytes(a, n);
  size_t hdr = segment_header_bytes(a, n);
  size_t align = bytes >= WEFT__HUGE_PAGE ? WEFT__HUGE_PAGE : 64;
  struct weft_pool_t *pool = w->pool;
  uint32_t node = 0;
  uint8_t *mem;
  if (pool) {
    /* The NUMA group of the node the first rows live on now. */
    const weft__pool_hooks_t *hk = weft__pool_hooks(pool);
    uint32_t g = 0, groups = hk->node_groups(pool);
    while (g + 1 < groups && hk->group_node(pool, g) != a->chunks[0]->node)
      g++;
    if (hk->group_node(pool, g) != a->chunks[0]->node)
      g = 0;
    node = hk->group_node(pool, g);
    mem = hk->alloc_on(pool, g, &w->alloc, bytes, align);
  } else {
    mem = weft__alloc(&w->alloc, bytes, align);
  }
  weft__chunk_t *headers = weft__alloc(&w->alloc, hdr, 64);
  if (!mem || !headers) {
    if (mem)
      free_segment_mem(pool, mem, bytes);
    weft__free(headers, hdr, 64);
    return weft__fail(w, WEFT_ENOMEM, WEFT__FILE, WEFT__LINE,
                      "out of memory rebuilding %u chunks", n);
  }
  weft__advise_huge(mem, bytes);
  memset(headers, 0, hdr);
  /* Laid out as add_segment lays out a new segment (carve_segment files
   * the chunks from chunk_total on: from 0 here). */
  const size_t nhdr = (size_t)n * sizeof(weft__chunk_t);
  uint8_t **bases = (uint8_t **)((uint8_t *)headers + nhdr);
  uint64_t *ticks =
      (uint64_t *)(bases + (size_t)n * (a->narrays ? a->narrays : 1));
  uint32_t *vers = (uint32_t *)(ticks + (size_t)n * a->ndirty);
  weft__chunk_t **old = weft__alloc(&w->alloc, n * sizeof(*old), 16);
  if (!old) {
    free_segment_mem(pool, mem, bytes);
    weft__free(headers, hdr, 64);
    return weft__fail(w, WEFT_ENOMEM, WEFT__FILE, WEFT__LINE,
                      "out of memory rebuilding %u chunks", n);
  }
  memcpy(old, a->chunks, n * sizeof(*old));
  const uint32_t total = a->chunk_total;
  a->chunk_total = 0;
  carve_segment(a, mem, headers, bases, n);
  for (uint32_t k = 0; k < n; k++) {
    headers[k].node = node;
    headers[k].versions = vers + (size_t)k * a->ncols;
    headers[k].ticks = a->ndirty ? ticks + (size_t)k * a->ndirty : NULL;
    move_chunk(w, a, old[k], &headers[k]);
  }
  weft__free(old, n * sizeof(*old), 16);
  /* The old segments go; their spare chunks' ids leave the table. */
  uint64_t gone = 0;
  for (uint32_t i = 0; i < a->nsegs; i++) {
    weft__segment_t *s = &a->segs[i];
    for (uint32_t k = 0; k < s->nchunks; k++)
      if (s->headers[k].index >= n)
        weft__chunks_release(&w->chunks, s->headers[k].id);
    uint64_t h = segment_header_bytes(a, s->nchunks);
    gone += s->bytes + h;
    free_segment_mem(s->pool, s->mem, s->bytes);
    weft__free(s->headers, (size_t)h, 64);
  }
  a->segs[0] = (weft__segment_t){mem, bytes, pool, headers, bases, n};
  a->nsegs = 1;
  a->chunk_total = n;
  a->tail = a->chunks[n - 1];
  w->chunks_spare -= total - n;
  w->chunk_bytes = w->chunk_bytes - gone + bytes + hdr;
  *freed = gone > bytes + hdr ? gone - bytes - hdr : 0;
  return 0;
}

int weft__archetype_reserve_rows(weft_world_t *w, weft__archetype_t *a,
                                 uint32_t n) {
  uint64_t room = 0;
  if (a->nchunks)
    room = a->row_cap - a->chunks[a->nchunks - 1]->count;
  uint64_t need = n > room ? (n - room + a->row_cap - 1) / a->row_cap : 0;
  uint64_t spare = a->chunk_total - a->nchunks;
  if (need <= spare)
    return 0;
  /* One segment for the whole shortfall: a batch gets consecutive chunks
   * and no slack beyond what it asked for. */
  uint64_t fresh = need - spare;
  WEFT_CHECK(w, weft__chunks_used(&w->chunks) + fresh <= w->chunks.id_max,
             WEFT_ELIMIT, "%llu more chunks would exceed the %u chunk ids",
             (unsigned long long)fresh, w->chunks.id_max);
  return add_segment(w, a, (uint32_t)fresh);
}

void weft__column_write(const weft__archetype_t *a, const weft__column_t *col,
                        weft__chunk_t *chunk, uint32_t row, const void *value) {
  const uint8_t *v = value;
  for (uint32_t f = 0; f < col->array_count; f++) {
    const weft__array_t *ar = &a->arrays[col->first_array + f];
    memcpy(weft__chunk_at(chunk, col->first_array + f, ar->elem, row),
           v + ar->value_off, ar->elem);
  }
}

void weft__column_read(const weft__archetype_t *a, const weft__column_t *col,
                       const weft__chunk_t *chunk, uint32_t row, void *out) {
  uint8_t *o = out;
  /* Bytes between SoA fields (padding) read as zero. */
  if (col->soa)
    memset(o, 0, col->size);
  for (uint32_t f = 0; f < col->array_count; f++) {
    const weft__array_t *ar = &a->arrays[col->first_array + f];
    memcpy(o + ar->value_off,
           weft__chunk_at(chunk, col->first_array + f, ar->elem, row),
           ar->elem);
  }
}

void weft__column_zero(const weft__archetype_t *a, const weft__column_t *col,
                       weft__chunk_t *chunk, uint32_t row) {
  for (uint32_t f = 0; f < col->array_count; f++) {
    const weft__array_t *ar = &a->arrays[col->first_array + f];
    memset(weft__chunk_at(chunk, col->first_array + f, ar->elem, row), 0,
           ar->elem);
  }
}
