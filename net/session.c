/* SPDX-License-Identifier: MIT */
/*
 * Sessions: what one client knows, and its packet of each network tick.
 *
 * A session's table holds the entities it knows or is forgetting, each in
 * one of three states: LEARNING (in the view; its full state goes out in
 * every packet until a packet carrying it is acknowledged), KNOWN (the
 * client holds it as of the acknowledged tick `acked`; a delta carries the
 * components stamped after that) and FORGETTING (left the view; a forget
 * goes out until acknowledged). These are the seed's known set and pending
 * learns and forgets, "pending" meaning "not yet acknowledged", with its
 * cancellation rules: a learn cancels a forget not yet sent (the client
 * never stopped holding the entity), a forget cancels a learn not yet sent
 * (the client never heard of it).
 *
 * Every packet is a complete diff against what the client acknowledged,
 * so a lost packet needs no resend: the next one covers it. Each entry
 * keeps one bit per recent packet saying whether its item went out whole
 * in it (an entry that did not fit a full packet waits), and an ack of a
 * packet moves exactly the entries whose bit is set (at the next build's
 * scan, before anything else it does with the entry: the acks in between
 * only record which packets they name). A client that falls
 * more than max_behind packets behind starts a new epoch: the table is
 * dropped and the view learned afresh.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "net/net_internal.h"

static uint32_t entity_hash(weft_entity_t e) {
  return (uint32_t)((e * 0x9e3779b97f4a7c15ull) >> 32);
}

int weft__net_session_init(weft_net_t *net, weft__net_session *s) {
  uint32_t gen = s->gen;
  memset(s, 0, sizeof *s);
  s->gen = gen;
  uint32_t known = net->cfg.max_known;
  /* Room for the known set and half as many entities being forgotten,
   * at a load of at most three quarters. */
  s->limit = known + known / 2;
  uint32_t cap = 16;
  while (cap / 4 * 3 < s->limit)
    cap *= 2;
  s->table_max = cap;
  s->table_cap = cap < WEFT__NET_TABLE_START ? cap : WEFT__NET_TABLE_START;
  s->table = weft__calloc(&net->alloc, cap * sizeof *s->table, 16);
  s->stage = weft__alloc(&net->alloc, cap / 2 * sizeof *s->stage, 16);
  s->packet = weft__alloc(&net->alloc,
                          WEFT__NET_PACKET_HEADROOM + net->cfg.max_packet, 16);
  if (s->packet)
    s->packet += WEFT__NET_PACKET_HEADROOM;
  s->scratch = weft__alloc(&net->alloc,
                           weft__net_values_size(&net->schema, ~0ull) + 1, 16);
  if (!s->table || !s->stage || !s->packet || !s->scratch) {
    weft__net_session_free(s);
    return WEFT_ENOMEM;
  }
  s->last_ack_build = net->builds;
  return 0;
}

void weft__net_session_free(weft__net_session *s) {
  weft__free(s->table, 0, 16);
  weft__free(s->stage, 0, 16);
  if (s->packet)
    weft__free(s->packet - WEFT__NET_PACKET_HEADROOM, 0, 16);
  weft__free(s->scratch, 0, 16);
  s->table = NULL;
  s->stage = NULL;
  s->packet = NULL;
  s->scratch = NULL;
  s->table_count = 0;
}

weft__net_entry *weft__net_session_find(const weft__net_session *s,
                                        weft_entity_t e) {
  uint32_t m = s->table_cap - 1;
  for (uint32_t i = entity_hash(e) & m;; i = (i + 1) & m) {
    weft__net_entry *x = &s->table[i];
    if (x->e == e)
      return x;
    if (x->e == 0)
      return NULL;
  }
}

/* Removes entry @p x, shifting back the entries of its probe run (no
 * tombstones). Only outside scans of the table, or at a position the
 * scan revisits (see scan_entries). */
static void erase(weft__net_session *s, weft__net_entry *x) {
  uint32_t m = s->table_cap - 1;
  uint32_t i = (uint32_t)(x - s->table);
  uint32_t j = i;
  for (;;) {
    j = (j + 1) & m;
    if (s->table[j].e == 0)
      break;
    uint32_t home = entity_hash(s->table[j].e) & m;
    /* Entry j may move to i when i lies on its probe path. */
    if (((j - home) & m) >= ((j - i) & m)) {
      s->table[i] = s->table[j];
      i = j;
    }
  }
  memset(&s->table[i], 0, sizeof s->table[i]);
  s->table_count--;
}

/* Doubles the part of the table in use once it is more than 5/8 full:
 * the table's memory is allocated whole when the session opens (no
 * allocation on a tick), but scans and acks cover only the part in use,
 * which follows what the session knows rather than its max_known. The
 * entries move through the stage, then hash into the larger part. */
static void table_grow(weft__net_session *s) {
  if (s->table_cap >= s->table_max || s->table_count <= s->table_cap / 8 * 5)
    return;
  uint32_t n = 0;
  for (uint32_t i = 0; i < s->table_cap; i++)
    if (s->table[i].e)
      s->stage[n++] = s->table[i];
  memset(s->table, 0, (size_t)s->table_cap * sizeof *s->table);
  s->table_cap *= 2;
  uint32_t m = s->table_cap - 1;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t i = entity_hash(s->stage[k].e) & m;
    while (s->table[i].e)
      i = (i + 1) & m;
    s->table[i] = s->stage[k];
  }
}

static weft__net_entry *insert(weft__net_session *s, weft_entity_t e) {
  /* The session's memory bound, or the part in use three quarters full
   * (it grows at the next build): the entity waits. */
  if (s->table_count >= s->limit || s->table_count >= s->table_cap / 4 * 3)
    return NULL;
  uint32_t m = s->table_cap - 1;
  uint32_t i = entity_hash(e) & m;
  while (s->table[i].e)
    i = (i + 1) & m;
  weft__net_entry *x = &s->table[i];
  memset(x, 0, sizeof *x);
  x->e = e;
  x->state = WEFT__NET_LEARNING;
  s->table_count++;
  return x;
}

/* The seed's learnEntity: an entity entered (or is still in) the view. */
void weft__net_session_learn(weft__net_session *s, weft__net_entry *x,
                             weft_entity_t e, uint32_t build) {
  if (!x) {
    if (s->table_count >= s->limit - s->limit / 3)
      return; /* known set full: leave room for forgets */
    x = insert(s, e);
    if (!x)
      return;
  } else if (x->state == WEFT__NET_FORGETTING) {
    /* Cancel the forget. Not yet sent: the client still holds the entity
     * as it did. Sent: it may have dropped it, so learn afresh. */
    bool restore = !x->sent_ever;
    x->state = restore ? x->prev : WEFT__NET_LEARNING;
    x->sent = 0;
    /* A restored state's item went out before the forget (a LEARNING
     * entry is only forgotten, rather than erased, once its learn went
     * out), and a LEARNING entry goes on being sent until acknowledged. */
    x->sent_ever = restore;
  }
  x->seen = build;
}

/* The seed's forgetEntity: an entity left the view (or died). Returns
 * whether the entry is gone. */
bool weft__net_session_forget(weft__net_session *s, weft__net_entry *x) {
  if (x->state == WEFT__NET_LEARNING && !x->sent_ever) {
    erase(s, x);
    return true;
  }
  x->prev = x->state;
  x->state = WEFT__NET_FORGETTING;
  x->sent = 0;
  x->sent_ever = 0;
  return false;
}

static int32_t cell_clamp(float v, float size) {
  float c = floorf(v / size);
  if (!(c >= -1e9f)) /* NaN too, though views are checked finite */
    return -1000000000;
  if (c > 1e9f)
    return 1000000000;
  return (int32_t)c;
}

/* Learns every entity in the cells the view touches. */
static void view_pass(weft_net_t *net, weft__net_session *s, uint32_t build) {
  if (!s->has_view)
    return;
  float cs = net->cfg.cell_size;
  int32_t x0 = cell_clamp(s->x - s->radius, cs);
  int32_t x1 = cell_clamp(s->x + s->radius, cs);
  int32_t y0 = cell_clamp(s->y - s->radius, cs);
  int32_t y1 = cell_clamp(s->y + s->radius, cs);
  const weft__net_repl *r = &net->repl;
  for (int64_t cy = y0; cy <= y1; cy++)
    for (int64_t cx = x0; cx <= x1; cx++) {
      uint32_t b = weft__net_cell_bucket(r, (int32_t)cx, (int32_t)cy);
      for (uint32_t j = r->bucket[b]; j < r->bucket[b + 1]; j++) {
        const weft__net_grid_item *g = &r->grid[j];
        if (g->cx != cx || g->cy != cy)
          continue; /* another cell in the same bucket */
        weft_entity_t e = g->e;
        weft__net_session_learn(s, weft__net_session_find(s, e), e, build);
      }
    }
}

/* A value's bytes, with the common sizes as fixed-size copies (inline
 * moves instead of a call into a variable-length memcpy per value). */
static inline void copy_value(uint8_t *dst, const void *src, uint32_t size) {
  switch (size) {
  case 4:
    memcpy(dst, src, 4);
    break;
  case 8:
    memcpy(dst, src, 8);
    break;
  case 12:
    memcpy(dst, src, 12);
    break;
  case 16:
    memcpy(dst, src, 16);
    break;
  default:
    memcpy(dst, src, size);
  }
}

/* The values of @p mask as of the last stamp, packed in component
 * order; inline, since every item of every packet copies them. */
static inline uint32_t read_values(const weft_net_t *net, uint32_t slot,
                                   uint64_t mask, uint8_t *dst) {
  const weft__net_repl *r = &net->repl;
  const uint8_t *src = weft__net_rec_values(r, slot);
  uint32_t n = 0;
  while (mask) {
    uint32_t k = (uint32_t)__builtin_ctzll(mask);
    uint32_t size = net->schema.sizes[k];
    copy_value(dst + n, src + r->voff[k], size);
    n += size;
    mask &= mask - 1;
  }
  return n;
}

uint32_t weft__net_read_values(const weft_net_t *net, uint32_t slot,
                               uint64_t mask, uint8_t *dst) {
  return read_values(net, slot, mask, dst);
}

/* The changed components of a known entity: stamped after `acked`. */
static uint64_t changed_since(const weft__net_repl *r, uint32_t slot,
                              uint32_t acked) {
  const uint32_t *v = weft__net_rec_versions(r, slot);
  uint64_t changed = 0;
  for (uint32_t k = 0; k < r->ncomp; k++)
    if (v[k] > acked)
      changed |= 1ull << k;
  return changed;
}

/* Writes @p x's item; returns whether it went out whole. */
static bool write_entry(weft_net_t *net, weft__net_w *w, weft__net_entry *x,
                        uint32_t *count) {
  const weft__net_repl *r = &net->repl;
  if (x->state == WEFT__NET_FORGETTING) {
    if (!weft__net_fits(w, WEFT__NET_FORGET_SIZE))
      return false;
    weft__net_u8(w, WEFT_NET_ITEM_FORGET);
    weft__net_u64(w, x->e);
    ++*count;
    return true;
  }
  /* Not forgetting means seen by this build's view pass, which found the
   * handle in the last stamp's grid: its slot holds it, and the check of
   * the handle (a read from one more array per item) is not repeated. */
  uint32_t slot = weft_entity_index(x->e);
  if (slot >= r->cap)
    return false; /* cannot happen: see above */
  uint64_t mask = *weft__net_rec_mask(r, slot);
  if (x->state == WEFT__NET_LEARNING) {
    if (!weft__net_fits(w, WEFT__NET_LEARN_HEADER +
                               weft__net_values_size(&net->schema, mask)))
      return false;
    weft__net_u8(w, WEFT_NET_ITEM_LEARN);
    weft__net_u64(w, x->e);
    weft__net_u64(w, mask);
    w->p += read_values(net, slot, mask, w->p);
    ++*count;
    return true;
  }
  uint64_t changed = changed_since(r, slot, x->acked);
  if (!changed)
    return true; /* nothing new: the client's copy is whole */
  uint64_t present = changed & mask;
  if (!weft__net_fits(w, WEFT__NET_DELTA_HEADER +
                             weft__net_values_size(&net->schema, present)))
    return false;
  weft__net_u8(w, WEFT_NET_ITEM_DELTA);
  weft__net_u64(w, x->e);
  weft__net_u64(w, changed);
  weft__net_u64(w, present);
  w->p += read_values(net, slot, present, w->p);
  ++*count;
  return true;
}

/* Entries ahead of the scan whose records it prefetches. */
#define SCAN_AHEAD 8u

static inline void prefetch_record(const weft__net_repl *r, weft_entity_t e) {
  uint32_t slot = weft_entity_index(e);
  if (e && slot < r->cap) {
    const uint8_t *p = r->rec + (size_t)slot * r->rstride;
    __builtin_prefetch(p);
    __builtin_prefetch(p + r->rstride - 1); /* a record across two lines */
  }
}

/* Brings the part of the table in use into the cache in one sequential
 * sweep before the view pass probes it at random places (the scan reads
 * all of it next anyway): the prefetches overlap, the probes' misses
 * would not. */
static void prefetch_table(const weft__net_session *s) {
  const uint8_t *p = (const uint8_t *)s->table;
  size_t bytes = (size_t)s->table_cap * sizeof *s->table;
  for (size_t off = 0; off < bytes; off += 64)
    __builtin_prefetch(p + off, 1);
}

/* The acks since the last build that name a packet @p x went out whole
 * in: a forget acknowledged is done (the entry is erased: returns true),
 * anything else is held by the client as of the newest such packet. */
static bool apply_ack(const weft_net_t *net, weft__net_session *s,
                      weft__net_entry *x) {
  if (x->state == WEFT__NET_FORGETTING) {
    erase(s, x);
    return true;
  }
  uint32_t age = (uint32_t)__builtin_ctzll(x->sent & s->ack_pending);
  x->state = WEFT__NET_KNOWN;
  x->acked = (uint32_t)net->build_ticks[(net->builds - 1 - age) & 63];
  return false;
}

/* One scan over the table: entries the view pass did not see are
 * forgotten, every entry's history moves one packet on, and its item is
 * written. An erase shifts later entries back into the current position,
 * which is then looked at again. */
static void scan_entries(weft_net_t *net, weft__net_session *s, weft__net_w *w,
                         uint32_t build, uint32_t *count) {
  uint8_t mark = (uint8_t)(2 | (build & 1));
  uint32_t m = s->table_cap - 1;
  for (uint32_t i = 0; i < s->table_cap; i++) {
    /* The records of the entities a few entries on: the scan's order is
     * known, their slots are not in any order, so each would otherwise
     * be a wait on memory. */
    prefetch_record(&net->repl, s->table[(i + SCAN_AHEAD) & m].e);
    weft__net_entry *x = &s->table[i];
    if (x->e == 0 || x->scanned == mark)
      continue; /* empty, or moved here by an erase and already done */
    if ((x->sent & s->ack_pending) && apply_ack(net, s, x)) {
      i--; /* erased: an entry from further on may sit here now */
      continue;
    }
    if (x->state != WEFT__NET_FORGETTING && x->seen != build &&
        weft__net_session_forget(s, x)) {
      i--; /* an entry from further on may sit here now */
      continue;
    }
    x->sent <<= 1;
    if (write_entry(net, w, x, count)) {
      x->sent |= 1;
      x->sent_ever = 1;
    }
    /* Marks the entry done, so that an erase that shifts it across the
     * table's end back to the scan's position does not handle it twice. */
    x->scanned = mark;
  }
}

/* Whether the client holds (or is being sent) the entity. */
static bool knows(const weft__net_session *s, weft_entity_t e) {
  if (e == WEFT_ENTITY_NULL)
    return false;
  const weft__net_entry *x = weft__net_session_find(s, e);
  return x && x->state != WEFT__NET_FORGETTING;
}

/* The tick's replicated events that touch an entity the session knows.
 * Events go once: an event that does not fit is dropped for this
 * session. */
static void write_events(weft_net_t *net, const weft__net_session *s,
                         weft__net_w *w, uint32_t *count) {
  for (uint32_t i = 0; i < net->event_count; i++) {
    const weft__net_event *ev = &net->events[i];
    if (!knows(s, ev->a) && !knows(s, ev->b))
      continue;
    if (!weft__net_fits(w, WEFT__NET_EVENT_HEADER + ev->len))
      continue;
    weft__net_u8(w, WEFT_NET_ITEM_EVENT);
    weft__net_u64(w, ev->a);
    weft__net_u64(w, ev->b);
    weft__net_u32(w, ev->type);
    weft__net_u16(w, ev->len);
    weft__net_bytes(w, net->event_bytes + ev->offset, ev->len);
    ++*count;
  }
}

/* One entity's digest term, or false when the session does not know a
 * live replicated entity by that handle (a stale handle is a miss). */
static bool entity_term(const weft_net_t *net, const weft__net_session *s,
                        weft_entity_t e, uint64_t *term, uint8_t *scratch) {
  uint32_t slot = weft__net_repl_slot(&net->repl, e);
  if (slot == UINT32_MAX || !knows(s, e))
    return false;
  uint64_t mask = *weft__net_rec_mask(&net->repl, slot);
  uint32_t n = weft__net_read_values(net, slot, mask, scratch);
  *term = weft__net_entity_hash(e, mask, scratch, n);
  return true;
}

uint64_t weft__net_view_digest(const weft_net_t *net,
                               const weft__net_session *s, uint32_t *count) {
  uint8_t *scratch = s->scratch;
  uint64_t sum = 0;
  uint32_t n = 0;
  for (uint32_t i = 0; i < s->table_cap; i++) {
    uint64_t term;
    if (s->table[i].e && entity_term(net, s, s->table[i].e, &term, scratch)) {
      sum += term;
      n++;
    }
  }
  *count = n;
  return sum;
}

static void write_digest(weft_net_t *net, weft__net_session *s, weft__net_w *w,
                         uint32_t *count) {
  if (!s->digest_pending || !weft__net_fits(w, WEFT__NET_DIGEST_SIZE))
    return;
  uint64_t digest = 0;
  uint32_t n = 0, flags = 0;
  if (s->digest_entity == WEFT_ENTITY_NULL) {
    digest = weft__net_view_digest(net, s, &n);
  } else if (entity_term(net, s, s->digest_entity, &digest, s->scratch)) {
    n = 1;
  } else {
    flags = WEFT_NET_DIGEST_MISS;
  }
  weft__net_u8(w, WEFT_NET_ITEM_DIGEST);
  weft__net_u8(w, flags);
  weft__net_u64(w, s->digest_entity);
  weft__net_u64(w, digest);
  weft__net_u32(w, n);
  ++*count;
  s->digest_pending = false;
}

void weft__net_session_build(weft_net_t *net, weft__net_session *s,
                             uint64_t tick) {
  uint32_t build = net->builds;
  if (build - s->last_ack_build > net->cfg.max_behind) {
    /* Too far behind: forget what the client was thought to hold, and
     * tell it to do the same with a new epoch. */
    memset(s->table, 0, (size_t)s->table_cap * sizeof *s->table);
    s->table_count = 0;
    s->epoch = (s->epoch + 1) & 0xffffu;
    s->last_ack_build = build;
    s->ack_pending = 0;
  }
  table_grow(s);
  prefetch_table(s);
  view_pass(net, s, build);
  weft__net_w w = {s->packet, s->packet + net->cfg.max_packet};
  weft__net_tick_begin(&w, tick, s->epoch);
  uint32_t count = 0;
  scan_entries(net, s, &w, build, &count);
  s->ack_pending = 0;
  write_events(net, s, &w, &count);
  write_digest(net, s, &w, &count);
  weft__net_tick_finish(s->packet, count);
  s->packet_len = (size_t)(w.p - s->packet);
}

void weft__net_session_ack(weft_net_t *net, weft__net_session *s,
                           uint64_t tick) {
  if (s->last_ack && tick <= s->last_ack)
    return; /* older than an ack already applied: packets are cumulative */
  uint32_t age = 0, depth = net->builds < 64 ? net->builds : 64;
  while (age < depth && net->build_ticks[(net->builds - 1 - age) & 63] != tick)
    age++;
  if (age == depth)
    return; /* a tick never sent, or out of the history: a checked miss */
  uint32_t build = net->builds - 1 - age;
  if ((int32_t)(build - s->last_ack_build) < 0)
    return; /* sent before the session's current epoch */
  s->last_ack = tick;
  s->last_ack_build = build;
  s->ack_pending |= 1ull << age;
}
