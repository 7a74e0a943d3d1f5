/* SPDX-License-Identifier: MIT */
/*
 * The client's mirror: a flat table of the entities of its view, keyed by
 * handle (the wire id), each with its component mask and its values at
 * fixed offsets. Packets are cumulative diffs against what the client
 * acknowledged, so the mirror applies only packets newer than the last it
 * applied (a late or duplicated one carries nothing the newer one did
 * not) and acknowledges each. A packet is checked whole before any of it
 * is applied.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "net/wire.h"

typedef struct mirror_entry {
  weft_entity_t e; /* 0: empty */
  uint64_t mask;
} mirror_entry;

struct weft_net_mirror_t {
  weft__alloc_stats_t alloc;
  weft_net_schema_t schema;
  uint8_t *welcome; /* copy: schema.table points into it */
  uint32_t offset[WEFT_NET_MAX_COMPONENTS];
  uint32_t stride; /* one entity's values, every component */
  mirror_entry *table;
  uint8_t *values; /* [table_cap * stride], moved with their entries */
  uint8_t *scratch;
  uint32_t table_cap, count, limit;
  uint64_t tick;
  uint32_t epoch;
  bool applied; /* a packet was applied (tick, epoch valid) */
  weft_net_digest_reply_t digest;
  uint64_t events;
  char error[160];
};

static int mirror_fail(weft_net_mirror_t *m, int code, const char *msg) {
  snprintf(m->error, sizeof m->error, "%s", msg);
  return code;
}

int weft_net_mirror_new(const void *welcome, size_t len, uint32_t max_entities,
                        weft_net_mirror_t **out) {
  if (!welcome || !out || max_entities < 1 || max_entities > (1u << 24))
    return WEFT_EINVAL;
  *out = NULL;
  weft_net_schema_t s;
  int rc = weft_net_decode_welcome(welcome, len, &s, NULL);
  if (rc)
    return rc;
  weft_net_mirror_t *m = calloc(1, sizeof *m);
  if (!m)
    return WEFT_ENOMEM;
  m->schema = s;
  for (uint32_t k = 0; k < s.component_count; k++) {
    m->offset[k] = m->stride;
    m->stride += s.sizes[k];
  }
  m->limit = max_entities;
  m->table_cap = 16;
  while (m->table_cap / 4 * 3 < max_entities)
    m->table_cap *= 2;
  m->welcome = weft__alloc(&m->alloc, len, 16);
  m->table = weft__calloc(&m->alloc, m->table_cap * sizeof *m->table, 16);
  m->values = weft__calloc(&m->alloc,
                           (size_t)m->table_cap * ((size_t)m->stride + 1), 16);
  m->scratch = weft__alloc(&m->alloc, (size_t)m->stride + 1, 16);
  if (!m->welcome || !m->table || !m->values || !m->scratch) {
    weft_net_mirror_free(m);
    return WEFT_ENOMEM;
  }
  memcpy(m->welcome, welcome, len);
  m->schema.table =
      m->welcome + ((const uint8_t *)s.table - (const uint8_t *)welcome);
  *out = m;
  return 0;
}

void weft_net_mirror_free(weft_net_mirror_t *m) {
  if (!m)
    return;
  weft__free(m->welcome, 0, 16);
  weft__free(m->table, 0, 16);
  weft__free(m->values, 0, 16);
  weft__free(m->scratch, 0, 16);
  free(m);
}

static uint32_t hash_of(weft_entity_t e) {
  return (uint32_t)((e * 0x9e3779b97f4a7c15ull) >> 32);
}

static mirror_entry *find(const weft_net_mirror_t *m, weft_entity_t e) {
  uint32_t mk = m->table_cap - 1;
  for (uint32_t i = hash_of(e) & mk;; i = (i + 1) & mk) {
    if (m->table[i].e == e)
      return &m->table[i];
    if (m->table[i].e == 0)
      return NULL;
  }
}

static uint8_t *values_of(const weft_net_mirror_t *m, const mirror_entry *x) {
  return m->values + (size_t)(x - m->table) * m->stride;
}

static mirror_entry *insert(weft_net_mirror_t *m, weft_entity_t e) {
  if (m->count >= m->limit)
    return NULL;
  uint32_t mk = m->table_cap - 1;
  uint32_t i = hash_of(e) & mk;
  while (m->table[i].e)
    i = (i + 1) & mk;
  m->table[i].e = e;
  m->table[i].mask = 0;
  m->count++;
  return &m->table[i];
}

/* Backward-shift erase: entries (and their values) of the probe run move
 * back into the hole. */
static void erase(weft_net_mirror_t *m, mirror_entry *x) {
  uint32_t mk = m->table_cap - 1;
  uint32_t i = (uint32_t)(x - m->table), j = i;
  for (;;) {
    j = (j + 1) & mk;
    if (m->table[j].e == 0)
      break;
    uint32_t home = hash_of(m->table[j].e) & mk;
    if (((j - home) & mk) >= ((j - i) & mk)) {
      m->table[i] = m->table[j];
      memcpy(m->values + (size_t)i * m->stride,
             m->values + (size_t)j * m->stride, m->stride);
      i = j;
    }
  }
  m->table[i].e = 0;
  m->table[i].mask = 0;
  m->count--;
}

/* Scatters packed values of @p mask into an entity's fixed offsets. */
static void scatter(const weft_net_mirror_t *m, uint8_t *dst, uint64_t mask,
                    const uint8_t *src) {
  while (mask) {
    uint32_t k = (uint32_t)__builtin_ctzll(mask);
    memcpy(dst + m->offset[k], src, m->schema.sizes[k]);
    src += m->schema.sizes[k];
    mask &= mask - 1;
  }
}

static int apply_item(weft_net_mirror_t *m, const weft_net_item_t *it) {
  mirror_entry *x =
      it->kind == WEFT_NET_ITEM_EVENT || it->kind == WEFT_NET_ITEM_DIGEST
          ? NULL
          : find(m, it->entity);
  switch (it->kind) {
  case WEFT_NET_ITEM_LEARN:
    if (!x && !(x = insert(m, it->entity)))
      return mirror_fail(m, WEFT_ELIMIT, "weft_net_mirror: mirror is full");
    memset(values_of(m, x), 0, m->stride);
    x->mask = it->mask;
    scatter(m, values_of(m, x), it->mask, it->values);
    break;
  case WEFT_NET_ITEM_DELTA:
    if (!x)
      break; /* never learned: the server learns it afresh */
    x->mask = (x->mask & ~it->mask) | it->present;
    scatter(m, values_of(m, x), it->present, it->values);
    break;
  case WEFT_NET_ITEM_FORGET:
    if (x)
      erase(m, x);
    break;
  case WEFT_NET_ITEM_EVENT:
    m->events++;
    break;
  default:
    m->digest.tick = m->tick;
    m->digest.digest = it->digest;
    m->digest.entity = it->entity;
    m->digest.count = it->digest_count;
    m->digest.flags = it->flags;
    break;
  }
  return 0;
}

int weft_net_mirror_apply(weft_net_mirror_t *m, const void *packet, size_t len,
                          void *ack, size_t *ack_len) {
  if (!m || !packet || !ack || !ack_len)
    return WEFT_EINVAL;
  *ack_len = 0;
  weft_net_reader_t r;
  weft_net_item_t it;
  const char *why = "";
  int rc = weft_net_packet_open(&r, &m->schema, packet, len, &why);
  /* The whole packet is checked before any of it is applied. */
  while (rc == 0 && (rc = weft_net_packet_next(&r, &it, &why)) == 1)
    rc = 0;
  if (rc < 0)
    return mirror_fail(m, rc, why);
  if (m->applied && r.tick <= m->tick)
    return 0; /* late or duplicated: the newer packet had all of it */
  if (m->applied && r.epoch != m->epoch) {
    /* The server dropped what it knew we hold: start over. */
    memset(m->table, 0, (size_t)m->table_cap * sizeof *m->table);
    m->count = 0;
  }
  m->applied = true;
  m->tick = r.tick;
  m->epoch = r.epoch;
  weft_net_packet_open(&r, &m->schema, packet, len, NULL);
  while (weft_net_packet_next(&r, &it, NULL) == 1)
    if ((rc = apply_item(m, &it)) != 0)
      break;
  weft_net_client_msg_t a = {.type = WEFT_NET_ACK, .tick = r.tick};
  int n = weft_net_encode_client(&a, ack, WEFT_NET_MAX_CLIENT_MESSAGE);
  *ack_len = n > 0 ? (size_t)n : 0;
  return rc;
}

/* Packs an entity's present values in component order, as the server
 * reads them for its digest. */
static uint32_t gather(const weft_net_mirror_t *m, const mirror_entry *x,
                       uint8_t *dst) {
  const uint8_t *src = values_of(m, x);
  uint32_t n = 0;
  for (uint64_t mask = x->mask; mask; mask &= mask - 1) {
    uint32_t k = (uint32_t)__builtin_ctzll(mask);
    memcpy(dst + n, src + m->offset[k], m->schema.sizes[k]);
    n += m->schema.sizes[k];
  }
  return n;
}

uint64_t weft_net_mirror_digest(const weft_net_mirror_t *m, uint32_t *count) {
  uint64_t sum = 0;
  uint32_t n = 0;
  for (uint32_t i = 0; m && i < m->table_cap; i++) {
    const mirror_entry *x = &m->table[i];
    if (!x->e)
      continue;
    uint32_t len = gather(m, x, m->scratch);
    sum += weft__net_entity_hash(x->e, x->mask, m->scratch, len);
    n++;
  }
  if (count)
    *count = n;
  return sum;
}

int weft_net_mirror_read(const weft_net_mirror_t *m, weft_entity_t e,
                         uint32_t index, void *out) {
  if (!m || !out || index >= m->schema.component_count)
    return WEFT_EINVAL;
  const mirror_entry *x = e ? find(m, e) : NULL;
  if (!x)
    return WEFT_ESTALE;
  if (!((x->mask >> index) & 1))
    return WEFT_ENOTFOUND;
  memcpy(out, values_of(m, x) + m->offset[index], m->schema.sizes[index]);
  return 0;
}

void weft_net_mirror_last_digest(const weft_net_mirror_t *m,
                                 weft_net_digest_reply_t *out) {
  if (out)
    *out = m ? m->digest : (weft_net_digest_reply_t){0};
}

uint64_t weft_net_mirror_tick(const weft_net_mirror_t *m) {
  return m && m->applied ? m->tick : 0;
}

const char *weft_net_mirror_last_error(const weft_net_mirror_t *m) {
  return m ? m->error : "";
}
