/* SPDX-License-Identifier: MIT */
/*
 * The wire format's byte-level pieces (docs/protocol.md): little-endian
 * writers and readers over a bounded cursor, the message tags, and the
 * entity hash both sides' view digests sum. Internal to weft::net.
 */
#ifndef WEFT_NET_WIRE_H
#define WEFT_NET_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "weft/error.h"
#include "weft/net.h"

/* "WFNT" read as a little-endian u32: opens HELLO and WELCOME. */
#define WEFT__NET_MAGIC 0x544e4657u
#define WEFT__NET_WELCOME 0x81u
#define WEFT__NET_TICK 0x82u
/* Fixed part of each message and item (docs/protocol.md). */
#define WEFT__NET_TICK_HEADER 16u
#define WEFT__NET_LEARN_HEADER 17u
#define WEFT__NET_DELTA_HEADER 25u
#define WEFT__NET_FORGET_SIZE 9u
#define WEFT__NET_EVENT_HEADER 23u
#define WEFT__NET_DIGEST_SIZE 22u

/* A write cursor: writes past end are refused by the callers, which size
 * every item before writing it (weft__net_fits). */
typedef struct weft__net_w {
  uint8_t *p, *end;
} weft__net_w;

static inline bool weft__net_fits(const weft__net_w *w, size_t n) {
  return (size_t)(w->end - w->p) >= n;
}
/* The writers work on a local copy of the cursor: a store through a
 * uint8_t pointer may alias the cursor itself, so writing through w->p
 * byte by byte makes the compiler reload it after every byte. On a
 * little-endian host the value's own bytes are the wire's. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define WEFT__NET_LE 1
#else
#define WEFT__NET_LE 0
#endif
static inline void weft__net_u8(weft__net_w *w, uint32_t v) {
  *w->p++ = (uint8_t)v;
}
static inline void weft__net_u16(weft__net_w *w, uint32_t v) {
  uint8_t *p = w->p;
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  w->p = p + 2;
}
static inline void weft__net_u32(weft__net_w *w, uint32_t v) {
  uint8_t *p = w->p;
  if (WEFT__NET_LE) {
    memcpy(p, &v, 4);
  } else {
    for (int i = 0; i < 4; i++)
      p[i] = (uint8_t)(v >> (8 * i));
  }
  w->p = p + 4;
}
static inline void weft__net_u64(weft__net_w *w, uint64_t v) {
  uint8_t *p = w->p;
  if (WEFT__NET_LE) {
    memcpy(p, &v, 8);
  } else {
    for (int i = 0; i < 8; i++)
      p[i] = (uint8_t)(v >> (8 * i));
  }
  w->p = p + 8;
}
static inline void weft__net_f32(weft__net_w *w, float f) {
  uint32_t v;
  memcpy(&v, &f, 4);
  weft__net_u32(w, v);
}
static inline void weft__net_bytes(weft__net_w *w, const void *src, size_t n) {
  if (n)
    memcpy(w->p, src, n);
  w->p += n;
}

/* Readers: the caller checked that the bytes are there. */
static inline uint32_t weft__net_get16(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}
static inline uint32_t weft__net_get32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}
static inline uint64_t weft__net_get64(const uint8_t *p) {
  return (uint64_t)weft__net_get32(p) | (uint64_t)weft__net_get32(p + 4) << 32;
}
static inline float weft__net_getf(const uint8_t *p) {
  uint32_t v = weft__net_get32(p);
  float f;
  memcpy(&f, &v, 4);
  return f;
}

/* The bytes of the values of the components in @p mask. */
static inline uint32_t weft__net_values_size(const weft_net_schema_t *s,
                                             uint64_t mask) {
  uint32_t n = 0;
  while (mask) {
    n += s->sizes[__builtin_ctzll(mask)];
    mask &= mask - 1;
  }
  return n;
}

/* One entity's term of a view digest: a hash of its handle, its component
 * mask and those components' values (packed in component order). The
 * digest is the sum of the terms, so neither side needs an order. */
uint64_t weft__net_entity_hash(weft_entity_t e, uint64_t mask,
                               const void *values, size_t len);

/* Writes the tick packet header; the item count is patched at the end
 * (weft__net_tick_finish). */
void weft__net_tick_begin(weft__net_w *w, uint64_t tick, uint32_t epoch);
void weft__net_tick_finish(uint8_t *packet, uint32_t count);

/* Writes a welcome for @p s (its table included) to @p w; the caller
 * sized the buffer with weft__net_welcome_size. */
size_t weft__net_welcome_size(const weft_net_schema_t *s);
void weft__net_welcome_write(weft__net_w *w, const weft_net_schema_t *s);

#endif /* WEFT_NET_WIRE_H */
