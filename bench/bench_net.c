/* SPDX-License-Identifier: MIT */
/*
 * net: weft::net's packet build (weft/net.h). 8 sessions (4 with --quick)
 * whose views cover the same 4096 entities (1024 with --quick) of three
 * replicated components (a position, a velocity, hit points: 20 bytes),
 * none of them acknowledged: every network tick writes each entity's
 * full state (a learn) into each session's packet, so the row is the
 * per-session, per-entity cost of building packets (the view's grid
 * cells, the session's table, the reads of the values, the item
 * writes).
 *
 * net/packet_build: weft_net_build() against a same-run C loop that
 * writes the same items (kind, handle, mask and the values, memcpy'd from
 * flat arrays) into one buffer per session. No target. Unit: ns per
 * session-entity.
 *
 * net/delta_build: the steady state. Each tick one entity in 8 gets new
 * hit points (untimed, with the stamp and the dirty clear), the packets
 * are built (timed: deltas of that one component) and every session
 * acknowledges (untimed). The baseline is the least a C server does for
 * the same: per session, a walk over the view's entities that tests a
 * changed flag and writes the changed ones' items. No target. Unit: ns
 * per session-entity.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <weft.h>
#include <weft/net.h>

#include "harness.h"

typedef struct net_pos_t {
  float x, y;
} net_pos_t;

typedef struct net_state_t {
  uint32_t n, sessions;
  uint32_t ids[8];
  weft_component_t hp;
  uint8_t *changed; /* n flags, the baseline's dirty bits */
  uint32_t round;
  weft_world_t *w;
  weft_net_t *net;
  uint64_t tick;
  /* The baseline's flat copy of the values and its packet buffers. */
  weft_entity_t *handles;
  uint8_t *values; /* n * 20 bytes */
  uint8_t *out;    /* sessions * n * 37 bytes */
} net_state_t;

#define NET_VALUES 20u
#define NET_ITEM (17u + NET_VALUES)

static uint64_t net_build(void *p, uint64_t reps) {
  net_state_t *s = p;
  for (uint64_t r = 0; r < reps; r++) {
    bench_check(weft_net_build(s->net, ++s->tick), "weft_net_build");
    bench_clobber();
  }
  return s->tick;
}

static uint64_t net_copy(void *p, uint64_t reps) {
  net_state_t *s = p;
  const uint64_t mask = 7;
  for (uint64_t r = 0; r < reps; r++) {
    for (uint32_t k = 0; k < s->sessions; k++) {
      uint8_t *o = s->out + (size_t)k * s->n * NET_ITEM;
      for (uint32_t i = 0; i < s->n; i++, o += NET_ITEM) {
        o[0] = 1;
        memcpy(o + 1, &s->handles[i], 8);
        memcpy(o + 9, &mask, 8);
        memcpy(o + 17, s->values + (size_t)i * NET_VALUES, NET_VALUES);
      }
    }
    bench_clobber();
  }
  return s->out[(size_t)s->sessions * s->n * NET_ITEM - 1];
}

/* One steady tick: writes, stamp and clear (untimed), the build
 * (timed), the acks (untimed). */
static uint64_t net_delta(void *p, uint64_t reps) {
  net_state_t *s = p;
  double ns = 0;
  for (uint64_t r = 0; r < reps; r++) {
    s->round++;
    for (uint32_t i = s->round % 8; i < s->n; i += 8) {
      int32_t hp = (int32_t)(s->round + i);
      bench_check(weft_set(s->w, s->handles[i], s->hp, &hp), "weft_set");
    }
    ++s->tick;
    weft_world_set_tick(s->w, s->tick);
    bench_check(weft_net_stamp(s->net, s->tick), "weft_net_stamp");
    bench_check(weft_world_clear_dirty(s->w), "clear_dirty");
    double t0 = bench_now_ns();
    bench_check(weft_net_build(s->net, s->tick), "weft_net_build");
    ns += bench_now_ns() - t0;
    weft_net_client_msg_t a = {.type = WEFT_NET_ACK, .tick = s->tick};
    uint8_t buf[WEFT_NET_MAX_CLIENT_MESSAGE];
    int n = weft_net_encode_client(&a, buf, sizeof buf);
    for (uint32_t k = 0; k < s->sessions; k++)
      bench_check(weft_net_receive(s->net, s->ids[k], buf, (size_t)n),
                  "weft_net_receive");
  }
  return (uint64_t)ns;
}

/* Baseline: per session, the view's changed entities' items. */
static uint64_t net_delta_copy(void *p, uint64_t reps) {
  net_state_t *s = p;
  double ns = 0;
  for (uint64_t r = 0; r < reps; r++) {
    s->round++;
    for (uint32_t i = 0; i < s->n; i++)
      s->changed[i] = (uint8_t)(i % 8 == s->round % 8);
    double t0 = bench_now_ns();
    for (uint32_t k = 0; k < s->sessions; k++) {
      uint8_t *o = s->out + (size_t)k * s->n * NET_ITEM;
      for (uint32_t i = 0; i < s->n; i++) {
        if (!s->changed[i])
          continue;
        const uint64_t bit = 4;
        o[0] = 2;
        memcpy(o + 1, &s->handles[i], 8);
        memcpy(o + 9, &bit, 8);
        memcpy(o + 17, &bit, 8);
        memcpy(o + 25, s->values + (size_t)i * NET_VALUES + 16, 4);
        o += 29;
      }
    }
    bench_clobber();
    ns += bench_now_ns() - t0;
  }
  return (uint64_t)ns;
}

static weft_component_t net_component(weft_world_t *w, const char *name,
                                      uint32_t size) {
  weft_component_desc_t d = {.name = name,
                             .size = size,
                             .alignment = 4,
                             .flags = WEFT_COMPONENT_TRACK_DIRTY};
  weft_component_t id = 0;
  bench_check(weft_component_register(w, &d, &id), "register");
  return id;
}

static void net_send(net_state_t *s, uint32_t id,
                     const weft_net_client_msg_t *m) {
  uint8_t buf[WEFT_NET_MAX_CLIENT_MESSAGE];
  int n = weft_net_encode_client(m, buf, sizeof buf);
  bench_check(n < 0 ? n : weft_net_receive(s->net, id, buf, (size_t)n),
              "weft_net_receive");
}

/* Called by bench/main.c, where weft::net is built (WEFT_BENCH_NET). */
void bench_net(bench_ctx_t *ctx);
void bench_net(bench_ctx_t *ctx) {
  const char *row = "net/packet_build", *row2 = "net/delta_build";
  if (!bench_selected(ctx, row) && !bench_selected(ctx, row2))
    return;
  net_state_t s;
  memset(&s, 0, sizeof s);
  s.n = ctx->quick ? 1024 : 4096;
  s.sessions = ctx->quick ? 4 : 8;
  bench_check(weft_world_create(NULL, &s.w), "weft_world_create");
  weft_component_t c[3] = {net_component(s.w, "Pos", 8),
                           net_component(s.w, "Vel", 8),
                           net_component(s.w, "Hp", 4)};
  s.handles = bench_alloc(s.n * sizeof *s.handles);
  s.values = bench_alloc((size_t)s.n * NET_VALUES);
  s.out = bench_alloc((size_t)s.sessions * s.n * NET_ITEM);
  s.changed = bench_alloc(s.n);
  s.hp = c[2];
  for (uint32_t i = 0; i < s.n; i++) {
    net_pos_t p = {(float)(i % 64), (float)(i / 64)};
    net_pos_t v = {1.0f, (float)i};
    int32_t hp = (int32_t)i;
    const void *vals[] = {&p, &v, &hp};
    weft_component_t list[4] = {c[0], c[1], c[2], 0};
    bench_check(weft_spawn_with(s.w, list, vals, &s.handles[i]), "spawn");
    memcpy(s.values + (size_t)i * NET_VALUES, &p, 8);
    memcpy(s.values + (size_t)i * NET_VALUES + 8, &v, 8);
    memcpy(s.values + (size_t)i * NET_VALUES + 16, &hp, 4);
  }
  weft_net_config_t cfg = {.components = c,
                           .component_count = 3,
                           .position = c[0],
                           .cell_size = 8,
                           .max_radius = 64,
                           .max_sessions = s.sessions,
                           .max_known = s.n,
                           .max_behind = 63,
                           .max_packet = s.n * NET_ITEM + 1024};
  bench_check(weft_net_create(s.w, &cfg, &s.net), "weft_net_create");
  for (uint32_t k = 0; k < s.sessions; k++) {
    uint32_t id = 0;
    bench_check(weft_net_session_open(s.net, &id), "session_open");
    s.ids[k] = id;
    weft_net_client_msg_t m = {.type = WEFT_NET_HELLO,
                               .version = WEFT_NET_PROTOCOL_VERSION};
    net_send(&s, id, &m);
    m = (weft_net_client_msg_t){
        .type = WEFT_NET_VIEW, .x = 32, .y = 32, .radius = 40};
    net_send(&s, id, &m);
  }
  bench_check(weft_net_stamp(s.net, ++s.tick), "weft_net_stamp");
  net_build(&s, 2); /* the tables fill once */

  double ops = (double)s.n * s.sessions;
  bench_case_t bc = {
      .name = row,
      .unit = "ns/session-entity",
      .n = s.n,
      .work = {"weft", net_build, &s, ops, false},
      .base = {"c_memcpy", net_copy, &s, ops, false},
  };
  if (bench_selected(ctx, row))
    bench_compare(ctx, &bc);
  if (bench_selected(ctx, row2)) {
    net_delta(&s, 2); /* every entity acknowledged: deltas from here */
    bench_case_t dc = bc;
    dc.name = row2;
    dc.work = (bench_side_t){"weft", net_delta, &s, ops, true};
    dc.base = (bench_side_t){"c_memcpy", net_delta_copy, &s, ops, true};
    bench_compare(ctx, &dc);
  }
  weft_net_destroy(s.net);
  bench_free(s.changed);
  bench_free(s.handles);
  bench_free(s.values);
  bench_free(s.out);
  weft_world_destroy(s.w);
}
