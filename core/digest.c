/* SPDX-License-Identifier: MIT */
/*
 * weft_world_digest(): one 64-bit hash of everything that makes up a
 * world's state, so that tests and tools can compare two worlds (say, the
 * same program run on 1 and on 8 threads) in one number: entities and
 * components, resources, event channels and random streams, each part
 * selectable through weft_world_digest_ex().
 *
 * The walk is in a fixed order (chunks in order, rows in order, arrays in
 * layout order, then the entity index; resources and channels by id), so
 * equal states hash equal; the archetypes that hold rows are summed, in no
 * order, and live entity records count without their chunk ids. Component and
 * resource bytes are hashed raw: padding inside a struct counts, so programs
 * that want equal digests write their values with padding zeroed (as a
 * zero-initialised struct is). What does not depend on the state but on
 * where or how it was made is left out or summed over in an order-free
 * way: scratch resources' bytes (addresses), the worker slot an event was
 * staged in, the order random streams were created in.
 */
#include <string.h>

#include "core/relation.h"
#include "core/resource_state.h"
#include "core/world.h"

#define DIGEST_K UINT64_C(0x9e3779b97f4a7c15)

static inline uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v;
  h *= DIGEST_K;
  return h ^ (h >> 29);
}

static uint64_t mix_bytes(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  /* Four independent lanes so the multiplies overlap. */
  uint64_t l0 = h, l1 = h ^ 1, l2 = h ^ 2, l3 = h ^ 3;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    uint64_t v[4];
    memcpy(v, b + i, 32);
    l0 = mix(l0, v[0]);
    l1 = mix(l1, v[1]);
    l2 = mix(l2, v[2]);
    l3 = mix(l3, v[3]);
  }
  h = mix(mix(mix(mix(h, l0), l1), l2), l3);
  for (; i + 8 <= n; i += 8) {
    uint64_t v;
    memcpy(&v, b + i, 8);
    h = mix(h, v);
  }
  if (i < n) {
    uint64_t v = 0;
    memcpy(&v, b + i, n - i);
    h = mix(h, v);
  }
  return mix(h, n);
}

static uint64_t mask_hash(uint64_t h, const weft__mask_t *m) {
  return mix_bytes(h, m, sizeof(*m));
}

static uint64_t archetype_hash(uint64_t h, const weft__archetype_t *a) {
  h = mask_hash(h, &a->present);
  h = mask_hash(h, &a->disabled);
  /* Dense relation pairs (handles, not ids); none adds nothing. */
  for (uint32_t i = 0; i < a->npairs; i++)
    h = mix(mix(h, a->pairs[i].rel), a->pairs[i].target);
  h = mix(h, a->count);
  for (uint32_t c = 0; c < a->nchunks; c++) {
    const weft__chunk_t *ch = a->chunks[c];
    h = mix(h, ch->count);
    h = mix_bytes(h, ch->entities, (size_t)ch->count * sizeof(weft_entity_t));
    /* Values only: dirty bytes are bookkeeping, not state. */
    for (uint32_t i = 0; i < a->narrays - a->ndirty; i++)
      h = mix_bytes(h, ch->bases[i], (size_t)ch->count * a->arrays[i].elem);
  }
  return h;
}

/*
 * The records of slots [base, base + n) of one page. A live record names
 * where its row is (chunk id and row), which depends on how chunks were
 * allocated, trimmed and rebuilt, not on the state: the archetypes' rows
 * already say where each entity is, so a live record counts as live only.
 */
static uint64_t records_hash(uint64_t h, const weft__record_t *page,
                             uint32_t n) {
  enum { BLOCK = 512 };
  uint32_t buf[BLOCK];
  for (uint32_t i = 0; i < n; i += BLOCK) {
    uint32_t k = n - i < BLOCK ? n - i : BLOCK;
    for (uint32_t j = 0; j < k; j++) {
      uint32_t v = page[i + j].v;
      buf[j] = (v & WEFT__REC_LOC) ? WEFT__REC_LOC : v;
    }
    h = mix_bytes(h, buf, (size_t)k * sizeof(*buf));
  }
  return h;
}

static uint64_t index_hash(uint64_t h, const weft__index_t *ix) {
  h = mix(h, ix->hwm);
  h = mix(h, ix->alive);
  h = mix(h, ix->retired);
  h = mix(h, ix->free_n);
  h = mix_bytes(h, ix->free, (size_t)ix->free_n * sizeof(*ix->free));
  h = mix(h, ix->sweep);
  h = mix(h, ix->sweep_end);
  for (uint32_t base = 0; base < ix->hwm; base += WEFT__PAGE_SIZE) {
    uint32_t n =
        ix->hwm - base < WEFT__PAGE_SIZE ? ix->hwm - base : WEFT__PAGE_SIZE;
    h = records_hash(h, ix->pages[base >> WEFT__PAGE_BITS], n);
  }
  return h;
}

static uint64_t entities_hash(uint64_t h, const weft_world_t *w) {
  h = mix(h, w->registry.count);
  for (uint32_t c = 0; c < w->registry.count; c++) {
    const weft__component_t *comp = &w->registry.items[c];
    h = mix_bytes(h, comp->name, strlen(comp->name));
    h = mix(h, comp->size);
  }
  /* Archetypes that hold rows, summed in no order: ids and creation
   * order depend on history (compaction frees ids, later archetypes reuse
   * them), and an empty archetype holds no state. */
  uint64_t sum = 0, held = 0;
  for (uint32_t i = 0; i < w->arch_count; i++)
    if (w->archs[i]->count) {
      sum += archetype_hash(DIGEST_K, w->archs[i]);
      held++;
    }
  h = mix(mix(h, held), sum);
  /* Edges are entity state too; a world that never registered a relation
   * hashes as it did before relations existed. */
  if (w->rel)
    h = mix(h, weft__rel_digest(w));
  return index_hash(h, &w->index);
}

static uint64_t resources_hash(uint64_t h, const weft__resources_t *r) {
  uint32_t n = r ? r->nres : 0;
  h = mix(h, n);
  for (uint32_t i = 0; i < n; i++) {
    const weft__res_t *res = &r->res[i];
    h = mix_bytes(h, res->name, strlen(res->name));
    h = mix(h, res->size);
    if (!(res->flags & WEFT_RESOURCE_SCRATCH))
      h = mix_bytes(h, res->value, res->size);
  }
  return h;
}

/* Published events channel by channel, in order; then the staged ones,
 * which a sync point will publish in key order whichever slots hold them:
 * their hashes are summed, so the slots' split does not count. */
static uint64_t events_hash(uint64_t h, const weft__resources_t *r) {
  uint32_t n = r ? r->nchans : 0;
  h = mix(h, n);
  for (uint32_t i = 0; i < n; i++) {
    const weft__chan_t *c = &r->chans[i];
    h = mix_bytes(h, c->name, strlen(c->name));
    h = mix(h, c->elem);
    h = mix_bytes(h, c->data, (size_t)c->count * c->elem);
  }
  uint64_t staged = 0, sum = 0;
  for (uint32_t k = 0; r && k < r->nslots; k++) {
    const weft__event_slot_t *sl = &r->slots[k];
    for (uint32_t i = 0; i < sl->count; i++) {
      const weft__event_rec_t *e = &sl->recs[i];
      uint64_t x = mix(mix(DIGEST_K, e->key), e->ch);
      sum += mix_bytes(x, sl->bytes + e->off, r->chans[e->ch - 1].elem);
    }
    staged += sl->count;
  }
  return mix(mix(h, staged), sum);
}

uint64_t weft_world_digest_ex(const weft_world_t *w, uint32_t parts) {
  if (!w)
    return 0;
  uint64_t h = mix(DIGEST_K, parts & WEFT_DIGEST_ALL);
  if (parts & WEFT_DIGEST_ENTITIES)
    h = entities_hash(h, w);
  if (parts & WEFT_DIGEST_RESOURCES)
    h = resources_hash(h, w->resources);
  if (parts & WEFT_DIGEST_EVENTS)
    h = events_hash(h, w->resources);
  if (parts & WEFT_DIGEST_RANDOM)
    h = mix(h, weft__random_digest(w));
  return h;
}

uint64_t weft_world_digest(const weft_world_t *w) {
  return weft_world_digest_ex(w, WEFT_DIGEST_ALL);
}
