/* SPDX-License-Identifier: MIT */
/*
 * What the weft::net tests share: a world of replicated entities (a
 * position, a velocity, hit points and a tag, all but the tag tracked
 * dirty), its server, the fixed-step drive (writes, stamp, dirty clear,
 * build) and an in-process transport that loses, delays and reorders
 * messages by a seeded random draw. Header-only.
 */
#ifndef WEFT_TEST_NET_TEST_H
#define WEFT_TEST_NET_TEST_H

#include "support/weft_test.h"

#include <stdlib.h>

#include "weft/net.h"

typedef struct nt_pos {
  float x, y;
} nt_pos;
typedef struct nt_vel {
  float vx, vy;
} nt_vel;

typedef struct nt_world {
  weft_world_t *w;
  weft_net_t *net;
  weft_component_t pos, vel, hp, mark;
  weft_component_t list[4]; /* replicated, in this order */
  uint64_t tick;
} nt_world;

/* Replicated component indices (positions in nt_world.list). */
enum { NT_POS, NT_VEL, NT_HP, NT_MARK };

static inline weft_component_t nt_register_pos(weft_world_t *w,
                                               const char *name) {
  const weft_field_desc_t f[2] = {WEFT_FIELD(nt_pos, x), WEFT_FIELD(nt_pos, y)};
  weft_component_desc_t d = WEFT_COMPONENT_DESC(nt_pos);
  d.name = name;
  d.fields = f;
  d.field_count = 2;
  d.flags = WEFT_COMPONENT_TRACK_DIRTY;
  weft_component_t id = 0;
  assert_int_equal(weft_component_register(w, &d, &id), WEFT_OK);
  return id;
}

static inline weft_net_config_t nt_config(const nt_world *x) {
  weft_net_config_t c;
  memset(&c, 0, sizeof c);
  c.components = x->list;
  c.component_count = 4;
  c.position = x->pos;
  c.cell_size = 10.0f;
  c.max_radius = 60.0f;
  c.max_sessions = 8;
  c.max_known = 2048;
  c.max_behind = 16;
  c.max_packet = 256 * 1024;
  return c;
}

/* World @p w given the four components and a server (nt_config(),
 * building on @p pool when not NULL, with packets of at most @p max_packet
 * bytes when not 0). */
static inline void nt_open_world(nt_world *x, weft_world_t *w,
                                 weft_pool_t *pool, uint32_t max_packet) {
  memset(x, 0, sizeof *x);
  x->w = w;
  x->pos = nt_register_pos(x->w, "Pos");
  x->vel = nt_register_pos(x->w, "Vel");
  x->hp = wt_register_tracked(x->w, "Hp", sizeof(int32_t));
  x->mark = wt_register_tag(x->w, "Marked");
  x->list[0] = x->pos;
  x->list[1] = x->vel;
  x->list[2] = x->hp;
  x->list[3] = x->mark;
  weft_net_config_t c = nt_config(x);
  c.pool = pool;
  if (max_packet)
    c.max_packet = max_packet;
  assert_int_equal(weft_net_create(x->w, &c, &x->net), WEFT_OK);
  x->tick = 1;
}

/* The same on a new world (tag 42: equal handles across worlds). */
static inline void nt_open_with(nt_world *x, weft_pool_t *pool,
                                uint32_t max_packet) {
  weft_world_config_t wc;
  memset(&wc, 0, sizeof wc);
  wc.world_tag = 42;
  nt_open_world(x, wt_world_new(&wc), pool, max_packet);
}

static inline void nt_open(nt_world *x, weft_pool_t *pool) {
  nt_open_with(x, pool, 0);
}

static inline void nt_close(nt_world *x) {
  weft_net_destroy(x->net);
  weft_world_destroy(x->w);
}

static inline weft_entity_t nt_spawn(nt_world *x, float px, float py,
                                     int32_t hp) {
  nt_pos p = {px, py};
  nt_vel v = {0, 0};
  weft_component_t comps[4] = {x->pos, x->vel, x->hp, 0};
  const void *vals[3] = {&p, &v, &hp};
  return wt_spawn_with(x->w, comps, vals);
}

/* Ends a fixed step: stamps it, clears the dirty bits, and (when @p build)
 * builds the packets of this tick. The next tick's writes follow. */
static inline void nt_step(nt_world *x, bool build) {
  assert_int_equal(weft_net_stamp(x->net, x->tick), WEFT_OK);
  assert_int_equal(weft_world_clear_dirty(x->w), WEFT_OK);
  if (build)
    assert_int_equal(weft_net_build(x->net, x->tick), WEFT_OK);
  x->tick++;
  weft_world_set_tick(x->w, x->tick);
}

/* A client message to session @p id, which must be accepted. */
static inline void nt_send(nt_world *x, uint32_t id,
                           const weft_net_client_msg_t *m) {
  uint8_t buf[WEFT_NET_MAX_CLIENT_MESSAGE];
  int n = weft_net_encode_client(m, buf, sizeof buf);
  assert_true(n > 0);
  int rc = weft_net_receive(x->net, id, buf, (size_t)n);
  if (rc)
    fail_msg("receive: %s", weft_net_last_error(x->net));
}

/* Opens a session that said HELLO and set its view. */
static inline uint32_t nt_session(nt_world *x, float cx, float cy, float r) {
  uint32_t id = 0;
  assert_int_equal(weft_net_session_open(x->net, &id), WEFT_OK);
  weft_net_client_msg_t m = {.type = WEFT_NET_HELLO,
                             .version = WEFT_NET_PROTOCOL_VERSION};
  nt_send(x, id, &m);
  m = (weft_net_client_msg_t){
      .type = WEFT_NET_VIEW, .x = cx, .y = cy, .radius = r};
  nt_send(x, id, &m);
  return id;
}

static inline weft_net_mirror_t *nt_mirror(nt_world *x) {
  const void *wel;
  size_t len;
  assert_int_equal(weft_net_welcome(x->net, &wel, &len), WEFT_OK);
  weft_net_mirror_t *m = NULL;
  assert_int_equal(weft_net_mirror_new(wel, len, 4096, &m), WEFT_OK);
  return m;
}

/* --- an in-process lossy link ------------------------------------------ */

#define NT_LINK_CAP 512u
#define NT_MSG_MAX (256u * 1024u)

typedef struct nt_msg {
  uint64_t due; /* tick it may arrive */
  size_t len;
  uint8_t *bytes;
} nt_msg;

/* Messages in flight one way. loss_pct: chance of a drop; delay: up to
 * that many ticks late; due messages arrive in random order. */
typedef struct nt_link {
  nt_msg q[NT_LINK_CAP];
  uint32_t n;
  uint32_t loss_pct, delay;
  wt_rng_t rng;
} nt_link;

static inline void nt_link_push(nt_link *l, uint64_t now, const void *b,
                                size_t len) {
  if (l->loss_pct && wt_below(&l->rng, 100) < l->loss_pct)
    return;
  if (l->n == NT_LINK_CAP)
    return; /* a full link drops, like a lossy one */
  nt_msg *m = &l->q[l->n++];
  m->due = now + (l->delay ? wt_below(&l->rng, l->delay + 1) : 0);
  m->len = len;
  m->bytes = malloc(len ? len : 1);
  assert_non_null(m->bytes);
  memcpy(m->bytes, b, len);
}

/* Pops one due message (random among the due ones) into *out; the caller
 * frees out->bytes. */
static inline bool nt_link_pop(nt_link *l, uint64_t now, nt_msg *out) {
  uint32_t due[NT_LINK_CAP], nd = 0;
  for (uint32_t i = 0; i < l->n; i++)
    if (l->q[i].due <= now)
      due[nd++] = i;
  if (!nd)
    return false;
  uint32_t i = due[wt_below(&l->rng, nd)];
  *out = l->q[i];
  l->q[i] = l->q[--l->n];
  return true;
}

static inline void nt_link_free(nt_link *l) {
  for (uint32_t i = 0; i < l->n; i++)
    free(l->q[i].bytes);
  l->n = 0;
}

#endif /* WEFT_TEST_NET_TEST_H */
