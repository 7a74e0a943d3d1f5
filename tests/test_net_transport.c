/* SPDX-License-Identifier: MIT */
/*
 * weft::net's socket transport (net/serve.c, net/conn.c) in one process:
 * a server on a loopback port the kernel picks and WebSocket clients
 * serviced by the same thread, turn about. Mirrors over real sockets
 * match the server's digest; a malformed message, a text frame and an
 * oversized message close their session only; connections beyond
 * max_sessions are refused; a silent client is closed after the idle
 * timeout; closing everything frees everything (ASan's leak check).
 */
#include "support/net_test.h"

#define CLIENTS 4u

typedef struct tclient {
  weft_net_conn_t *conn;
  weft_net_mirror_t *mirror;
  bool quiet;    /* applies nothing, acknowledges nothing */
  int closed;    /* weft_net_conn_run() said WEFT_EIO */
  uint32_t msgs; /* messages received */
} tclient;

typedef struct tnet {
  nt_world x;
  weft_net_serve_t *srv;
  tclient c[CLIENTS];
  weft_entity_t e[64];
  wt_rng_t rng;
} tnet;

static int on_message(void *user, const void *msg, size_t len) {
  tclient *c = user;
  c->msgs++;
  if (c->quiet)
    return 0;
  if (!c->mirror)
    return weft_net_mirror_new(msg, len, 4096, &c->mirror);
  uint8_t ack[WEFT_NET_MAX_CLIENT_MESSAGE];
  size_t n = 0;
  int rc = weft_net_mirror_apply(c->mirror, msg, len, ack, &n);
  if (rc)
    return rc;
  return n ? weft_net_conn_send(c->conn, ack, n) : 0;
}

static void send_msg(tclient *c, const weft_net_client_msg_t *m) {
  uint8_t buf[WEFT_NET_MAX_CLIENT_MESSAGE];
  int n = weft_net_encode_client(m, buf, sizeof buf);
  assert_true(n > 0);
  assert_int_equal(weft_net_conn_send(c->conn, buf, (size_t)n), WEFT_OK);
}

static void tnet_open(tnet *t, const weft_net_serve_config_t *cfg) {
  memset(t, 0, sizeof *t);
  nt_open(&t->x, NULL);
  t->rng = wt_rng(7);
  for (uint32_t i = 0; i < 64; i++)
    t->e[i] = nt_spawn(&t->x, (float)(i % 8) * 12.0f + 1.0f,
                       (float)(i / 8) * 12.0f + 1.0f, (int32_t)i);
  assert_int_equal(weft_net_serve_create(t->x.net, cfg, &t->srv), WEFT_OK);
  assert_true(weft_net_serve_port(t->srv) > 0);
}

/* Client @p i connects; a good one says HELLO and sets a view. */
static void tnet_connect(tnet *t, uint32_t i, bool good) {
  tclient *c = &t->c[i];
  c->quiet = !good;
  assert_int_equal(weft_net_conn_open("127.0.0.1", weft_net_serve_port(t->srv),
                                      0, on_message, c, &c->conn),
                   WEFT_OK);
  if (!good)
    return;
  weft_net_client_msg_t m = {.type = WEFT_NET_HELLO,
                             .version = WEFT_NET_PROTOCOL_VERSION};
  send_msg(c, &m);
  m = (weft_net_client_msg_t){.type = WEFT_NET_VIEW,
                              .x = 20.0f + 15.0f * (float)i,
                              .y = 40,
                              .radius = 30};
  send_msg(c, &m);
}

/* One tick: some entities move, the server stamps and builds, then the
 * server and every client do their I/O. */
static void tnet_tick(tnet *t, bool move) {
  for (uint32_t k = 0; move && k < 8; k++) {
    weft_entity_t e = t->e[wt_below(&t->rng, 64)];
    nt_pos p = {(float)wt_below(&t->rng, 100), (float)wt_below(&t->rng, 100)};
    assert_int_equal(weft_set(t->x.w, e, t->x.pos, &p), WEFT_OK);
  }
  nt_step(&t->x, true);
  for (uint32_t round = 0; round < 4; round++) {
    assert_int_equal(weft_net_serve_run(t->srv, 1), WEFT_OK);
    for (uint32_t i = 0; i < CLIENTS; i++)
      if (t->c[i].conn && !t->c[i].closed &&
          weft_net_conn_run(t->c[i].conn, 1) == WEFT_EIO)
        t->c[i].closed = 1;
  }
}

static void tnet_close(tnet *t) {
  for (uint32_t i = 0; i < CLIENTS; i++) {
    weft_net_conn_close(t->c[i].conn);
    weft_net_mirror_free(t->c[i].mirror);
  }
  weft_net_serve_destroy(t->srv);
  nt_close(&t->x);
}

static weft_net_serve_stats_t stats_of(const tnet *t) {
  weft_net_serve_stats_t st;
  assert_int_equal(weft_net_serve_stats(t->srv, &st), WEFT_OK);
  return st;
}

/* Every client's mirror, after moves and a quiet stretch, equals the
 * digest the server sends for its view, which is not empty. */
static void test_net_transport_mirrors_match(void **state) {
  (void)state;
  tnet *t = calloc(1, sizeof *t);
  assert_non_null(t);
  tnet_open(t, NULL);
  for (uint32_t i = 0; i < CLIENTS; i++)
    tnet_connect(t, i, true);
  for (uint32_t k = 0; k < 60; k++)
    tnet_tick(t, true);
  for (uint32_t i = 0; i < CLIENTS; i++) {
    weft_net_client_msg_t m = {.type = WEFT_NET_DIGEST_REQ};
    send_msg(&t->c[i], &m);
  }
  for (uint32_t k = 0; k < 20; k++)
    tnet_tick(t, false);
  for (uint32_t i = 0; i < CLIENTS; i++) {
    tclient *c = &t->c[i];
    assert_false(c->closed);
    assert_non_null(c->mirror);
    weft_net_digest_reply_t d;
    weft_net_mirror_last_digest(c->mirror, &d);
    uint32_t count;
    uint64_t mine = weft_net_mirror_digest(c->mirror, &count);
    assert_true(d.tick > 0);
    assert_true(count > 0);
    assert_int_equal(count, d.count);
    assert_true(mine == d.digest);
  }
  weft_net_serve_stats_t st = stats_of(t);
  assert_int_equal(st.accepted, CLIENTS);
  assert_int_equal(st.open, CLIENTS);
  assert_int_equal(st.malformed, 0);
  tnet_close(t);
  free(t);
}

/* A bad message type, a message over max_message and a message before
 * HELLO each close their own session; the good client keeps getting
 * packets. */
static void test_net_transport_malformed_closes_one(void **state) {
  (void)state;
  tnet *t = calloc(1, sizeof *t);
  assert_non_null(t);
  tnet_open(t, NULL);
  tnet_connect(t, 0, true);
  for (uint32_t i = 1; i < CLIENTS; i++)
    tnet_connect(t, i, false);
  uint8_t junk[200];
  memset(junk, 0x7f, sizeof junk);
  assert_int_equal(weft_net_conn_send(t->c[1].conn, junk, 9), WEFT_OK);
  assert_int_equal(weft_net_conn_send(t->c[2].conn, junk, sizeof junk),
                   WEFT_OK);
  weft_net_client_msg_t ack = {.type = WEFT_NET_ACK, .tick = 1};
  send_msg(&t->c[3], &ack);
  for (uint32_t k = 0; k < 30; k++)
    tnet_tick(t, true);
  uint64_t before = weft_net_mirror_tick(t->c[0].mirror);
  for (uint32_t k = 0; k < 10; k++)
    tnet_tick(t, true);
  assert_true(weft_net_mirror_tick(t->c[0].mirror) > before);
  assert_false(t->c[0].closed);
  for (uint32_t i = 1; i < CLIENTS; i++)
    assert_true(t->c[i].closed);
  weft_net_serve_stats_t st = stats_of(t);
  assert_int_equal(st.malformed, 3);
  assert_int_equal(st.open, 1);
  assert_int_equal(st.closed, 3);
  tnet_close(t);
  free(t);
}

/* Beyond max_sessions connections are refused; closing the open ones
 * frees their places (and everything they held). */
static void test_net_transport_refuses_beyond_max(void **state) {
  (void)state;
  tnet *t = calloc(1, sizeof *t);
  assert_non_null(t);
  weft_net_serve_config_t cfg = {.max_sessions = 2};
  tnet_open(t, &cfg);
  for (uint32_t i = 0; i < CLIENTS; i++)
    tnet_connect(t, i, true);
  for (uint32_t k = 0; k < 20; k++)
    tnet_tick(t, true);
  weft_net_serve_stats_t st = stats_of(t);
  assert_int_equal(st.accepted, 2);
  assert_int_equal(st.refused, CLIENTS - 2);
  assert_int_equal(st.open, 2);
  for (uint32_t i = 0; i < CLIENTS; i++) {
    weft_net_conn_close(t->c[i].conn);
    t->c[i].conn = NULL;
  }
  for (uint32_t k = 0; k < 20 && stats_of(t).open; k++)
    tnet_tick(t, false);
  st = stats_of(t);
  assert_int_equal(st.open, 0);
  assert_int_equal(st.closed, 2);
  weft_net_stats_t ns;
  assert_int_equal(weft_net_stats(t->x.net, &ns), WEFT_OK);
  assert_int_equal(ns.sessions, 0);
  tnet_close(t);
  free(t);
}

/* A client that says nothing is closed after idle_timeout_s (the loop is
 * bounded by ticks, not by time asserted). */
static void test_net_transport_idle_is_closed(void **state) {
  (void)state;
  tnet *t = calloc(1, sizeof *t);
  assert_non_null(t);
  weft_net_serve_config_t cfg = {.idle_timeout_s = 1};
  tnet_open(t, &cfg);
  tnet_connect(t, 0, false);
  for (uint32_t k = 0; k < 2000 && !t->c[0].closed; k++)
    tnet_tick(t, false);
  assert_true(t->c[0].closed);
  weft_net_serve_stats_t st = stats_of(t);
  assert_int_equal(st.idle, 1);
  assert_int_equal(st.open, 0);
  tnet_close(t);
  free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_net_transport_mirrors_match),
      cmocka_unit_test(test_net_transport_malformed_closes_one),
      cmocka_unit_test(test_net_transport_refuses_beyond_max),
      cmocka_unit_test(test_net_transport_idle_is_closed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
