/* SPDX-License-Identifier: MIT */
/*
 * The wire format's encoders and decoders (docs/protocol.md). Decoders
 * read bytes from the other side of a network: every length is checked
 * against what is left before a byte is read, every field against its
 * range, and nothing is allocated, so that malformed input can only ever
 * produce an error code and a message naming what was wrong.
 */
#define XXH_INLINE_ALL
#include <math.h>
#include <xxhash.h>

#include "net/wire.h"
#include "weft/error.h"

/* Client message sizes, by type (index 0 unused). */
static const uint8_t client_size[5] = {0, 7, 13, 9, 9};

/* Sets *why (when asked for) and returns WEFT_EFORMAT. */
static int bad(const char **why, const char *msg) {
  if (why)
    *why = msg;
  return WEFT_EFORMAT;
}

int weft_net_encode_client(const weft_net_client_msg_t *msg, void *buf,
                           size_t cap) {
  if (!msg || !buf || cap < WEFT_NET_MAX_CLIENT_MESSAGE || msg->type < 1 ||
      msg->type > WEFT_NET_DIGEST_REQ)
    return WEFT_EINVAL;
  weft__net_w w = {buf, (uint8_t *)buf + cap};
  weft__net_u8(&w, msg->type);
  switch (msg->type) {
  case WEFT_NET_HELLO:
    if (msg->version > 0xffffu)
      return WEFT_EINVAL;
    weft__net_u32(&w, WEFT__NET_MAGIC);
    weft__net_u16(&w, msg->version);
    break;
  case WEFT_NET_VIEW:
    if (!isfinite(msg->x) || !isfinite(msg->y) || !isfinite(msg->radius) ||
        !(msg->radius > 0))
      return WEFT_EINVAL;
    weft__net_f32(&w, msg->x);
    weft__net_f32(&w, msg->y);
    weft__net_f32(&w, msg->radius);
    break;
  case WEFT_NET_ACK:
    weft__net_u64(&w, msg->tick);
    break;
  default:
    weft__net_u64(&w, msg->entity);
    break;
  }
  return (int)(w.p - (uint8_t *)buf);
}

int weft_net_decode_client(const void *buf, size_t len,
                           weft_net_client_msg_t *out, const char **why) {
  if (!buf || !out)
    return bad(why, "weft_net: NULL message");
  const uint8_t *p = buf;
  if (len == 0)
    return bad(why, "weft_net: empty client message");
  if (p[0] < WEFT_NET_HELLO || p[0] > WEFT_NET_DIGEST_REQ)
    return bad(why, "weft_net: unknown client message type");
  if (len != client_size[p[0]])
    return bad(why, "weft_net: client message of the wrong length");
  memset(out, 0, sizeof *out);
  out->type = p[0];
  switch (p[0]) {
  case WEFT_NET_HELLO:
    if (weft__net_get32(p + 1) != WEFT__NET_MAGIC)
      return bad(why, "weft_net: HELLO without the protocol's magic");
    out->version = weft__net_get16(p + 5);
    if (out->version == 0)
      return bad(why, "weft_net: HELLO with protocol version 0");
    break;
  case WEFT_NET_VIEW:
    out->x = weft__net_getf(p + 1);
    out->y = weft__net_getf(p + 5);
    out->radius = weft__net_getf(p + 9);
    if (!isfinite(out->x) || !isfinite(out->y))
      return bad(why, "weft_net: VIEW centre is not finite");
    if (!isfinite(out->radius) || !(out->radius > 0))
      return bad(why, "weft_net: VIEW radius is not a finite positive number");
    break;
  case WEFT_NET_ACK:
    out->tick = weft__net_get64(p + 1);
    break;
  default:
    out->entity = weft__net_get64(p + 1);
    break;
  }
  return 0;
}

size_t weft__net_welcome_size(const weft_net_schema_t *s) {
  return 1 + 4 + 2 + 2 + 4 + 4 + 4 * (size_t)s->component_count + 4 +
         s->table_len;
}

void weft__net_welcome_write(weft__net_w *w, const weft_net_schema_t *s) {
  weft__net_u8(w, WEFT__NET_WELCOME);
  weft__net_u32(w, WEFT__NET_MAGIC);
  weft__net_u16(w, s->version);
  weft__net_u16(w, s->component_count);
  weft__net_u32(w, s->max_packet);
  weft__net_f32(w, s->cell_size);
  for (uint32_t i = 0; i < s->component_count; i++)
    weft__net_u32(w, s->sizes[i]);
  weft__net_u32(w, s->table_len);
  weft__net_bytes(w, s->table, s->table_len);
}

int weft_net_decode_welcome(const void *buf, size_t len, weft_net_schema_t *out,
                            const char **why) {
  const uint8_t *p = buf, *end = p + len;
  if (!buf || !out)
    return bad(why, "weft_net: NULL welcome");
  if (len < 17 || p[0] != WEFT__NET_WELCOME)
    return bad(why, "weft_net: not a welcome packet");
  if (weft__net_get32(p + 1) != WEFT__NET_MAGIC)
    return bad(why, "weft_net: welcome without the protocol's magic");
  memset(out, 0, sizeof *out);
  out->version = weft__net_get16(p + 5);
  if (out->version > WEFT_NET_PROTOCOL_VERSION) {
    if (why)
      *why = "weft_net: welcome of a newer protocol version";
    return WEFT_EVERSION;
  }
  if (out->version == 0)
    return bad(why, "weft_net: welcome with protocol version 0");
  out->component_count = weft__net_get16(p + 7);
  out->max_packet = weft__net_get32(p + 9);
  out->cell_size = weft__net_getf(p + 13);
  if (out->component_count < 1 ||
      out->component_count > WEFT_NET_MAX_COMPONENTS)
    return bad(why, "weft_net: welcome component count outside 1..64");
  if (out->max_packet < 256 || out->max_packet > WEFT_NET_MAX_PACKET)
    return bad(why, "weft_net: welcome packet limit outside 256..16 MiB");
  if (!isfinite(out->cell_size) || !(out->cell_size > 0))
    return bad(why, "weft_net: welcome cell size is not finite positive");
  p += 17;
  if ((size_t)(end - p) < 4 * (size_t)out->component_count + 4)
    return bad(why, "weft_net: welcome truncated in its sizes");
  uint64_t total = 0;
  for (uint32_t i = 0; i < out->component_count; i++, p += 4) {
    out->sizes[i] = weft__net_get32(p);
    if (out->sizes[i] > 0xffffu)
      return bad(why, "weft_net: welcome component size over 65535");
    total += out->sizes[i];
  }
  /* A learn of every component must fit a packet. */
  if (total + WEFT__NET_TICK_HEADER + WEFT__NET_LEARN_HEADER > out->max_packet)
    return bad(why, "weft_net: welcome components do not fit a packet");
  out->table_len = weft__net_get32(p);
  p += 4;
  if ((size_t)(end - p) != out->table_len)
    return bad(why, "weft_net: welcome table length disagrees with its size");
  out->table = p;
  return 0;
}

void weft__net_tick_begin(weft__net_w *w, uint64_t tick, uint32_t epoch) {
  weft__net_u8(w, WEFT__NET_TICK);
  weft__net_u8(w, 0);
  weft__net_u16(w, epoch);
  weft__net_u32(w, 0);
  weft__net_u64(w, tick);
}

void weft__net_tick_finish(uint8_t *packet, uint32_t count) {
  weft__net_w w = {packet + 4, packet + 8};
  weft__net_u32(&w, count);
}

int weft_net_packet_open(weft_net_reader_t *r, const weft_net_schema_t *schema,
                         const void *buf, size_t len, const char **why) {
  if (!r || !schema || !buf)
    return bad(why, "weft_net: NULL packet");
  if (len > schema->max_packet) {
    if (why)
      *why = "weft_net: packet longer than the server's limit";
    return WEFT_ELIMIT;
  }
  const uint8_t *p = buf;
  if (len < WEFT__NET_TICK_HEADER || p[0] != WEFT__NET_TICK)
    return bad(why, "weft_net: not a tick packet");
  if (p[1] != 0)
    return bad(why, "weft_net: tick packet with unknown flags");
  r->epoch = weft__net_get16(p + 2);
  r->count = weft__net_get32(p + 4);
  r->tick = weft__net_get64(p + 8);
  /* The smallest item is a forget: more items than that cannot fit. */
  if (r->count > (len - WEFT__NET_TICK_HEADER) / WEFT__NET_FORGET_SIZE)
    return bad(why, "weft_net: tick packet counts more items than fit");
  r->p_ = p + WEFT__NET_TICK_HEADER;
  r->end_ = p + len;
  r->schema_ = schema;
  r->left_ = r->count;
  return 0;
}

/* Reads a LEARN or DELTA item's masks and values. */
static int read_entity_values(weft_net_reader_t *r, weft_net_item_t *it,
                              const char **why) {
  const weft_net_schema_t *s = r->schema_;
  size_t head = it->kind == WEFT_NET_ITEM_LEARN ? WEFT__NET_LEARN_HEADER
                                                : WEFT__NET_DELTA_HEADER;
  if ((size_t)(r->end_ - r->p_) < head)
    return bad(why, "weft_net: entity item truncated");
  it->entity = weft__net_get64(r->p_ + 1);
  it->mask = weft__net_get64(r->p_ + 9);
  uint64_t values = it->mask;
  if (it->kind == WEFT_NET_ITEM_DELTA) {
    it->present = weft__net_get64(r->p_ + 17);
    if (it->mask == 0)
      return bad(why, "weft_net: delta item changes nothing");
    if (it->present & ~it->mask)
      return bad(why, "weft_net: delta item presents unchanged components");
    values = it->present;
  }
  if (it->entity == WEFT_ENTITY_NULL)
    return bad(why, "weft_net: entity item with the null handle");
  if (s->component_count < 64 && (it->mask >> s->component_count))
    return bad(why, "weft_net: entity item names an unknown component");
  it->values_len = weft__net_values_size(s, values);
  if ((size_t)(r->end_ - r->p_) - head < it->values_len)
    return bad(why, "weft_net: entity item values truncated");
  it->values = r->p_ + head;
  r->p_ += head + it->values_len;
  return 0;
}

static int read_event(weft_net_reader_t *r, weft_net_item_t *it,
                      const char **why) {
  if ((size_t)(r->end_ - r->p_) < WEFT__NET_EVENT_HEADER)
    return bad(why, "weft_net: event item truncated");
  it->entity = weft__net_get64(r->p_ + 1);
  it->other = weft__net_get64(r->p_ + 9);
  it->event_type = weft__net_get32(r->p_ + 17);
  it->values_len = weft__net_get16(r->p_ + 21);
  if (it->values_len > WEFT_NET_MAX_EVENT)
    return bad(why, "weft_net: event payload over its limit");
  if ((size_t)(r->end_ - r->p_) - WEFT__NET_EVENT_HEADER < it->values_len)
    return bad(why, "weft_net: event payload truncated");
  it->values = r->p_ + WEFT__NET_EVENT_HEADER;
  r->p_ += WEFT__NET_EVENT_HEADER + it->values_len;
  return 0;
}

static int read_digest(weft_net_reader_t *r, weft_net_item_t *it,
                       const char **why) {
  if ((size_t)(r->end_ - r->p_) < WEFT__NET_DIGEST_SIZE)
    return bad(why, "weft_net: digest item truncated");
  it->flags = r->p_[1];
  if (it->flags & ~WEFT_NET_DIGEST_MISS)
    return bad(why, "weft_net: digest item with unknown flags");
  it->entity = weft__net_get64(r->p_ + 2);
  it->digest = weft__net_get64(r->p_ + 10);
  it->digest_count = weft__net_get32(r->p_ + 18);
  r->p_ += WEFT__NET_DIGEST_SIZE;
  return 0;
}

int weft_net_packet_next(weft_net_reader_t *r, weft_net_item_t *item,
                         const char **why) {
  if (r->left_ == 0) {
    if (r->p_ != r->end_)
      return bad(why, "weft_net: bytes after the packet's last item");
    return 0;
  }
  if (r->p_ == r->end_)
    return bad(why, "weft_net: packet ends before its last item");
  memset(item, 0, sizeof *item);
  item->kind = r->p_[0];
  int rc;
  switch (item->kind) {
  case WEFT_NET_ITEM_LEARN:
  case WEFT_NET_ITEM_DELTA:
    rc = read_entity_values(r, item, why);
    break;
  case WEFT_NET_ITEM_FORGET:
    if ((size_t)(r->end_ - r->p_) < WEFT__NET_FORGET_SIZE)
      return bad(why, "weft_net: forget item truncated");
    item->entity = weft__net_get64(r->p_ + 1);
    if (item->entity == WEFT_ENTITY_NULL)
      return bad(why, "weft_net: forget item with the null handle");
    r->p_ += WEFT__NET_FORGET_SIZE;
    rc = 0;
    break;
  case WEFT_NET_ITEM_EVENT:
    rc = read_event(r, item, why);
    break;
  case WEFT_NET_ITEM_DIGEST:
    rc = read_digest(r, item, why);
    break;
  default:
    return bad(why, "weft_net: unknown packet item kind");
  }
  if (rc)
    return rc;
  r->left_--;
  return 1;
}

uint64_t weft__net_entity_hash(weft_entity_t e, uint64_t mask,
                               const void *values, size_t len) {
  /* The values' hash seeded with the handle and mask, so that the same
   * bytes under another entity or component set hash differently. */
  uint64_t seed = XXH3_64bits_withSeed(&mask, sizeof mask, e);
  return XXH3_64bits_withSeed(values, len, seed);
}
