/* SPDX-License-Identifier: MIT */
/*
 * weft::net under load, small (labels net, stress): weft-sim's arena of
 * 5,000 entities on a pool of two workers served to 64 WebSocket clients
 * of one weft_net_client_t over loopback, the packets built on the pool
 * from this thread right after each pipeline tick, the clients moving
 * their views on a seeded random walk. After 20 ticks every client checks
 * its mirror against the server's digest of its view: all must match.
 * The same run as weft-bench's net/load rows, without timing; the server
 * and the clients take turns on this thread.
 */
#include "support/weft_test.h"

#include "support/sim_test.h"
#include "weft/net.h"

#define CLIENTS 64u
#define ENTITIES 5000u
#define TICKS 20u
#define RADIUS 24.0f

typedef struct ld_pos {
  float x, y;
} ld_pos;

typedef struct load {
  wt_sim_t sim;
  weft_component_t net_c;
  weft_query_t *q; /* {position}: copied into net_c every tick */
  weft_net_t *net;
  weft_net_serve_t *srv;
  weft_net_client_t *set;
  float vx[CLIENTS], vy[CLIENTS];
  wt_rng_t rng;
  uint64_t tick;
  bool moving;
} load;

static float clampf(float v, float lo, float hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

static void send_view(load *l, uint32_t i) {
  weft_net_client_msg_t m = {
      .type = WEFT_NET_VIEW, .x = l->vx[i], .y = l->vy[i], .radius = RADIUS};
  assert_int_equal(weft_net_client_send(l->set, i, &m), WEFT_OK);
}

/* Every third packet the view takes a random step. */
static int on_packet(void *user, uint32_t i, uint64_t tick) {
  load *l = user;
  if (!l->moving || tick % 3 != i % 3)
    return 0;
  float side = l->sim.scene.side;
  l->vx[i] = clampf(l->vx[i] + (float)wt_below(&l->rng, 17) - 8.0f, RADIUS,
                    side - RADIUS);
  l->vy[i] = clampf(l->vy[i] + (float)wt_below(&l->rng, 17) - 8.0f, RADIUS,
                    side - RADIUS);
  send_view(l, i);
  return 0;
}

/* Copies every position into the replicated component, writing only the
 * rows that moved (their dirty bits are the tick's changes). Entities
 * without it yet get it first. */
static void sync_net(load *l) {
  weft_world_t *w = l->sim.w;
  const weft_std_t *d = &l->sim.scene.std;
  uint32_t n = 0;
  weft_entity_t *es = calloc(weft_world_count(w) + 1, sizeof *es);
  assert_non_null(es);
  weft_iter_t it;
  for (weft_query_iter(l->q, &it); weft_iter_next(&it);)
    for (uint32_t i = 0; i < it.count; i++)
      es[n++] = it.entities[i];
  for (uint32_t k = 0; k < n; k++) {
    weft_vec2_t p;
    assert_int_equal(weft_read(w, es[k], d->position, &p), WEFT_OK);
    ld_pos v = {p.x, p.y};
    const ld_pos *old = weft_get(w, es[k], l->net_c);
    if (!old)
      assert_int_equal(weft_add(w, es[k], l->net_c, &v), WEFT_OK);
    else if (old->x != v.x || old->y != v.y)
      assert_int_equal(weft_set(w, es[k], l->net_c, &v), WEFT_OK);
  }
  free(es);
}

static void load_open(load *l) {
  memset(l, 0, sizeof *l);
  wt_sim_open(&l->sim, SIM_ARENA, 2, ENTITIES, 3);
  weft_world_t *w = l->sim.w;
  weft_field_desc_t f[] = {WEFT_FIELD(ld_pos, x), WEFT_FIELD(ld_pos, y)};
  weft_component_desc_t d = WEFT_COMPONENT_DESC(ld_pos);
  d.name = "test.NetPos";
  d.fields = f;
  d.field_count = 2;
  d.flags = WEFT_COMPONENT_TRACK_DIRTY;
  assert_int_equal(weft_component_register(w, &d, &l->net_c), WEFT_OK);
  weft_query_desc_t q;
  memset(&q, 0, sizeof q);
  q.include[0] = l->sim.scene.std.position;
  assert_int_equal(weft_query_create(w, &q, &l->q), WEFT_OK);
  weft_net_config_t nc = {.components = &l->net_c,
                          .component_count = 1,
                          .position = l->net_c,
                          .cell_size = 8.0f,
                          .max_radius = RADIUS,
                          .max_sessions = CLIENTS,
                          .max_known = 4096,
                          .max_behind = 32,
                          .max_packet = 1u << 20,
                          .pool = l->sim.pool};
  assert_int_equal(weft_net_create(w, &nc, &l->net), WEFT_OK);
  weft_net_serve_config_t sc = {.idle_timeout_s = 120};
  assert_int_equal(weft_net_serve_create(l->net, &sc, &l->srv), WEFT_OK);
  l->rng = wt_rng(99);
  l->moving = true;
  weft_net_client_config_t cc = {.port = weft_net_serve_port(l->srv),
                                 .sessions = CLIENTS,
                                 .on_packet = on_packet,
                                 .user = l};
  assert_int_equal(weft_net_client_new(&cc, &l->set), WEFT_OK);
  float side = l->sim.scene.side;
  for (uint32_t i = 0; i < CLIENTS; i++) {
    weft_net_client_msg_t m = {.type = WEFT_NET_HELLO,
                               .version = WEFT_NET_PROTOCOL_VERSION};
    assert_int_equal(weft_net_client_send(l->set, i, &m), WEFT_OK);
    l->vx[i] = RADIUS + (float)wt_below(&l->rng, (uint32_t)(side - 2 * RADIUS));
    l->vy[i] = RADIUS + (float)wt_below(&l->rng, (uint32_t)(side - 2 * RADIUS));
    send_view(l, i);
  }
}

static void load_close(load *l) {
  weft_net_client_free(l->set);
  weft_net_serve_destroy(l->srv);
  weft_net_destroy(l->net);
  weft_query_destroy(l->q);
  wt_sim_close(&l->sim);
}

/* The server and the clients take turns until every open client holds
 * this tick (bounded in rounds). */
static void load_io(load *l) {
  for (uint32_t round = 0; round < 400; round++) {
    assert_int_equal(weft_net_serve_run(l->srv, 0), WEFT_OK);
    assert_true(weft_net_client_run(l->set, 1) >= 0);
    bool behind = false;
    for (uint32_t i = 0; i < CLIENTS && !behind; i++) {
      weft_net_client_state_t st;
      assert_int_equal(weft_net_client_state(l->set, i, &st), WEFT_OK);
      behind = st.status >= 0 && st.tick < l->tick;
    }
    if (!behind)
      return;
  }
}

/* One tick: the pipeline's fixed step on the pool, the copy, then the
 * stamp and the build on the same pool from this thread. */
static void load_tick(load *l) {
  assert_int_equal(weft_world_progress(l->sim.w, WT_SIM_DT), WEFT_OK);
  sync_net(l);
  ++l->tick;
  assert_int_equal(weft_net_stamp(l->net, l->tick), WEFT_OK);
  assert_int_equal(weft_net_build(l->net, l->tick), WEFT_OK);
  load_io(l);
}

static void test_net_load_mirrors_match(void **state) {
  (void)state;
  load *l = calloc(1, sizeof *l);
  assert_non_null(l);
  load_open(l);
  sync_net(l);
  /* Every client connects and is welcomed (bounded). */
  for (uint32_t k = 0; k < 2000; k++) {
    weft_net_serve_run(l->srv, 1);
    if (weft_net_client_run(l->set, 1) == (int)CLIENTS) {
      weft_net_serve_stats_t st;
      weft_net_serve_stats(l->srv, &st);
      if (st.open == CLIENTS)
        break;
    }
  }
  for (uint32_t k = 0; k < TICKS; k++)
    load_tick(l);
  l->moving = false;
  for (uint32_t i = 0; i < CLIENTS; i++)
    assert_int_equal(weft_net_client_check(l->set, i), WEFT_OK);
  uint32_t matched = 0;
  for (uint32_t k = 0; k < 200 && matched < CLIENTS; k++) {
    load_tick(l);
    matched = 0;
    for (uint32_t i = 0; i < CLIENTS; i++) {
      weft_net_client_state_t st;
      assert_int_equal(weft_net_client_state(l->set, i, &st), WEFT_OK);
      assert_int_equal(st.status, 1);
      if (st.check == WEFT_NET_CHECK_DIFFER)
        fail_msg("client %u: mirror %016llx over %u, server %016llx over %u", i,
                 (unsigned long long)st.digest, st.count,
                 (unsigned long long)st.server_digest, st.server_count);
      matched += st.check == WEFT_NET_CHECK_MATCH;
    }
  }
  assert_int_equal(matched, CLIENTS);
  /* The views held entities, and the server replicated the arena. */
  weft_net_stats_t ns;
  assert_int_equal(weft_net_stats(l->net, &ns), WEFT_OK);
  assert_int_equal(ns.sessions, CLIENTS);
  assert_true(ns.replicated >= ENTITIES / 2);
  uint32_t seen = 0;
  for (uint32_t i = 0; i < CLIENTS; i++) {
    weft_net_client_state_t st;
    assert_int_equal(weft_net_client_state(l->set, i, &st), WEFT_OK);
    seen += st.count > 0;
  }
  assert_true(seen > CLIENTS / 2);
  load_close(l);
  free(l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_net_load_mirrors_match),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
