/* SPDX-License-Identifier: MIT */
/*
 * weft::net's client set (net/client.c): many sessions in one
 * libwebsockets context against a server in the same process, serviced
 * turn about by one thread. Bad settings are refused; every session's
 * view check matches the server; the packet callback sees every applied
 * packet and, with manual acks, only its acks reach the server; a raw
 * malformed message closes its own session only, with the server's
 * reason; bad indices are checked misses; freeing frees everything
 * (ASan's leak check).
 */
#include "support/net_test.h"

#define SESSIONS 5u

typedef struct cnet {
  nt_world x;
  weft_net_serve_t *srv;
  weft_net_client_t *set;
  weft_entity_t e[80];
  wt_rng_t rng;
  uint32_t calls[SESSIONS]; /* on_packet calls per session */
  uint64_t last[SESSIONS];  /* the tick each call named */
  bool ack_by_hand;         /* on_packet acknowledges */
} cnet;

static int on_packet(void *user, uint32_t i, uint64_t tick) {
  cnet *t = user;
  assert_true(i < SESSIONS);
  assert_true(tick > t->last[i]);
  t->calls[i]++;
  t->last[i] = tick;
  if (!t->ack_by_hand)
    return 0;
  weft_net_client_msg_t m = {.type = WEFT_NET_ACK, .tick = tick};
  return weft_net_client_send(t->set, i, &m);
}

static void cnet_open(cnet *t, bool manual_ack) {
  memset(t, 0, sizeof *t);
  nt_open(&t->x, NULL);
  t->rng = wt_rng(11);
  for (uint32_t i = 0; i < 80; i++)
    t->e[i] = nt_spawn(&t->x, (float)(i % 10) * 10.0f + 1.0f,
                       (float)(i / 10) * 10.0f + 1.0f, (int32_t)i);
  weft_net_serve_config_t sc = {.log = NULL};
  assert_int_equal(weft_net_serve_create(t->x.net, &sc, &t->srv), WEFT_OK);
  t->ack_by_hand = manual_ack;
  weft_net_client_config_t cc = {.port = weft_net_serve_port(t->srv),
                                 .sessions = SESSIONS,
                                 .max_entities = 4096,
                                 .manual_ack = manual_ack,
                                 .on_packet = on_packet,
                                 .user = t};
  assert_int_equal(weft_net_client_new(&cc, &t->set), WEFT_OK);
  for (uint32_t i = 0; i < SESSIONS; i++) {
    weft_net_client_msg_t m = {.type = WEFT_NET_HELLO,
                               .version = WEFT_NET_PROTOCOL_VERSION};
    assert_int_equal(weft_net_client_send(t->set, i, &m), WEFT_OK);
    m = (weft_net_client_msg_t){.type = WEFT_NET_VIEW,
                                .x = 15.0f + 15.0f * (float)i,
                                .y = 40,
                                .radius = 30};
    assert_int_equal(weft_net_client_send(t->set, i, &m), WEFT_OK);
  }
}

/* One tick: some entities move, the server stamps and builds, then the
 * server and the set do their I/O. */
static void cnet_tick(cnet *t, bool move) {
  for (uint32_t k = 0; move && k < 8; k++) {
    weft_entity_t e = t->e[wt_below(&t->rng, 80)];
    nt_pos p = {(float)wt_below(&t->rng, 100), (float)wt_below(&t->rng, 100)};
    assert_int_equal(weft_set(t->x.w, e, t->x.pos, &p), WEFT_OK);
  }
  nt_step(&t->x, true);
  for (uint32_t round = 0; round < 4; round++) {
    assert_int_equal(weft_net_serve_run(t->srv, 1), WEFT_OK);
    assert_true(weft_net_client_run(t->set, 1) >= 0);
  }
}

static void cnet_close(cnet *t) {
  weft_net_client_free(t->set);
  weft_net_serve_destroy(t->srv);
  nt_close(&t->x);
}

static weft_net_client_state_t state_of(const cnet *t, uint32_t i) {
  weft_net_client_state_t st;
  assert_int_equal(weft_net_client_state(t->set, i, &st), WEFT_OK);
  return st;
}

/* Runs ticks until every session's check is decided (bounded). */
static void cnet_check_all(cnet *t) {
  for (uint32_t i = 0; i < SESSIONS; i++)
    assert_int_equal(weft_net_client_check(t->set, i), WEFT_OK);
  for (uint32_t k = 0; k < 200; k++) {
    uint32_t decided = 0;
    for (uint32_t i = 0; i < SESSIONS; i++)
      decided += state_of(t, i).check >= WEFT_NET_CHECK_MATCH;
    if (decided == SESSIONS)
      break;
    cnet_tick(t, true);
  }
}

static void test_net_client_refuses_bad_settings(void **state) {
  (void)state;
  weft_net_client_t *c = (weft_net_client_t *)1;
  weft_net_client_config_t cc = {.port = 0, .sessions = 1};
  assert_int_equal(weft_net_client_new(&cc, &c), WEFT_EINVAL);
  assert_null(c);
  cc = (weft_net_client_config_t){.port = 1, .sessions = 0};
  assert_int_equal(weft_net_client_new(&cc, &c), WEFT_EINVAL);
  cc = (weft_net_client_config_t){.port = 1, .sessions = 70000};
  assert_int_equal(weft_net_client_new(&cc, &c), WEFT_EINVAL);
  assert_int_equal(weft_net_client_new(NULL, &c), WEFT_EINVAL);
  assert_int_equal(weft_net_client_new(&cc, NULL), WEFT_EINVAL);
  assert_int_equal(weft_net_client_run(NULL, 0), WEFT_EINVAL);
  weft_net_client_state_t st;
  assert_int_equal(weft_net_client_state(NULL, 0, &st), WEFT_EINVAL);
  assert_null(weft_net_client_mirror(NULL, 0));
  assert_string_equal(weft_net_client_error(NULL, 0), "");
  weft_net_client_free(NULL);
}

/* Every session's mirror, after moves, matches the server's view; the
 * callback saw every packet applied, in tick order. */
static void test_net_client_checks_match(void **state) {
  (void)state;
  cnet *t = calloc(1, sizeof *t);
  assert_non_null(t);
  cnet_open(t, false);
  for (uint32_t k = 0; k < 40; k++)
    cnet_tick(t, true);
  cnet_check_all(t);
  weft_net_serve_stats_t sst;
  assert_int_equal(weft_net_serve_stats(t->srv, &sst), WEFT_OK);
  assert_int_equal(sst.accepted, SESSIONS);
  assert_int_equal(sst.malformed, 0);
  for (uint32_t i = 0; i < SESSIONS; i++) {
    weft_net_client_state_t st = state_of(t, i);
    assert_int_equal(st.status, 1);
    assert_true(st.welcomed);
    assert_int_equal(st.check, WEFT_NET_CHECK_MATCH);
    assert_true(st.count > 0);
    assert_int_equal(st.count, st.server_count);
    assert_true(st.digest == st.server_digest);
    assert_int_equal(t->calls[i], st.packets);
    assert_true(st.tick == t->last[i]);
    assert_true(st.bytes > 0);
    /* The mirror is the set's, and says the same. */
    const weft_net_mirror_t *m = weft_net_client_mirror(t->set, i);
    assert_non_null(m);
    uint32_t count;
    assert_true(weft_net_mirror_digest(m, &count) == st.digest);
    assert_string_equal(weft_net_client_error(t->set, i), "");
  }
  cnet_close(t);
  free(t);
}

/* With manual acks the set sends none: acks from the callback alone
 * keep the sessions in step, and the checks still match. */
static void test_net_client_manual_acks(void **state) {
  (void)state;
  cnet *t = calloc(1, sizeof *t);
  assert_non_null(t);
  cnet_open(t, true);
  for (uint32_t k = 0; k < 30; k++)
    cnet_tick(t, true);
  cnet_check_all(t);
  for (uint32_t i = 0; i < SESSIONS; i++)
    assert_int_equal(state_of(t, i).check, WEFT_NET_CHECK_MATCH);
  cnet_close(t);
  free(t);
}

/* A raw malformed message closes its own session, with the server's
 * reason; the others keep getting packets. Bad indices are misses. */
static void test_net_client_raw_garbage_closes_one(void **state) {
  (void)state;
  cnet *t = calloc(1, sizeof *t);
  assert_non_null(t);
  cnet_open(t, false);
  for (uint32_t k = 0; k < 5; k++)
    cnet_tick(t, true);
  uint8_t junk[9];
  memset(junk, 0x7f, sizeof junk);
  assert_int_equal(weft_net_client_send_raw(t->set, 1, junk, sizeof junk),
                   WEFT_OK);
  for (uint32_t k = 0; k < 50 && state_of(t, 1).status >= 0; k++)
    cnet_tick(t, true);
  assert_int_equal(state_of(t, 1).status, WEFT_EIO);
  assert_non_null(strstr(weft_net_client_error(t->set, 1), "malformed"));
  weft_net_client_msg_t m = {.type = WEFT_NET_DIGEST_REQ};
  assert_int_equal(weft_net_client_send(t->set, 1, &m), WEFT_EIO);
  assert_int_equal(weft_net_client_check(t->set, 1), WEFT_EIO);
  uint64_t before = state_of(t, 0).tick;
  for (uint32_t k = 0; k < 5; k++)
    cnet_tick(t, true);
  assert_true(state_of(t, 0).tick > before);
  assert_int_equal(weft_net_client_run(t->set, 0), (int)SESSIONS - 1);
  assert_int_equal(weft_net_client_send(t->set, SESSIONS, &m), WEFT_EINVAL);
  assert_int_equal(weft_net_client_send_raw(t->set, 0, junk, 0), WEFT_EINVAL);
  assert_int_equal(weft_net_client_check(t->set, SESSIONS), WEFT_EINVAL);
  weft_net_client_state_t st;
  assert_int_equal(weft_net_client_state(t->set, SESSIONS, &st), WEFT_EINVAL);
  assert_null(weft_net_client_mirror(t->set, SESSIONS));
  cnet_close(t);
  free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_net_client_refuses_bad_settings),
      cmocka_unit_test(test_net_client_checks_match),
      cmocka_unit_test(test_net_client_manual_acks),
      cmocka_unit_test(test_net_client_raw_garbage_closes_one),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
