/* SPDX-License-Identifier: MIT */
/*
 * weft::net replication state (net/replicate.c) and packet contents: a
 * delta carries exactly the components stamped after the client's ack
 * (writes, adds, removes), with their values; an unacknowledged change
 * goes again in the next packet; a despawn is a forget; steady network
 * ticks allocate nothing (the server's counter and weft's jemalloc
 * counter); configurations out of range are refused with a reason.
 */
#include "support/net_test.h"

#include <math.h>

/* The packet's items, collected. */
typedef struct items {
  weft_net_item_t it[64];
  uint32_t n;
  uint64_t tick;
} items;

static void read_packet(nt_world *x, uint32_t id, items *out) {
  const void *wel, *p;
  size_t wlen, len;
  weft_net_schema_t s;
  assert_int_equal(weft_net_welcome(x->net, &wel, &wlen), WEFT_OK);
  assert_int_equal(weft_net_decode_welcome(wel, wlen, &s, NULL), WEFT_OK);
  assert_int_equal(weft_net_packet(x->net, id, &p, &len), WEFT_OK);
  weft_net_reader_t r;
  assert_int_equal(weft_net_packet_open(&r, &s, p, len, NULL), WEFT_OK);
  out->n = 0;
  out->tick = r.tick;
  int rc;
  while ((rc = weft_net_packet_next(&r, &out->it[out->n], NULL)) == 1) {
    out->n++;
    assert_true(out->n < 64);
  }
  assert_int_equal(rc, 0);
}

static void ack(nt_world *x, uint32_t id, uint64_t tick) {
  weft_net_client_msg_t a = {.type = WEFT_NET_ACK, .tick = tick};
  nt_send(x, id, &a);
}

static const weft_net_item_t *item_of(const items *in, weft_entity_t e) {
  for (uint32_t i = 0; i < in->n; i++)
    if (in->it[i].entity == e)
      return &in->it[i];
  return NULL;
}

static void test_net_replicate_delta_carries_exactly_the_changes(void **state) {
  (void)state;
  nt_world x;
  nt_open(&x, NULL);
  weft_entity_t a = nt_spawn(&x, 1, 1, 10), b = nt_spawn(&x, 3, 3, 20);
  uint32_t id = nt_session(&x, 0, 0, 10);
  items in;
  nt_step(&x, true);
  read_packet(&x, id, &in);
  assert_int_equal(in.n, 2);
  const weft_net_item_t *ia = item_of(&in, a);
  assert_non_null(ia);
  assert_int_equal(ia->kind, WEFT_NET_ITEM_LEARN);
  assert_int_equal(ia->mask, 0x7); /* Pos, Vel, Hp */
  assert_int_equal(ia->values_len, 8 + 8 + 4);
  ack(&x, id, in.tick);
  /* Nothing changed: nothing to send. */
  nt_step(&x, true);
  read_packet(&x, id, &in);
  assert_int_equal(in.n, 0);
  ack(&x, id, in.tick);
  /* One write of Hp on a, the tag added to b and its Vel removed. */
  int32_t hp = 11;
  assert_int_equal(weft_set(x.w, a, x.hp, &hp), WEFT_OK);
  assert_int_equal(weft_add(x.w, b, x.mark, NULL), WEFT_OK);
  assert_int_equal(weft_remove(x.w, b, x.vel), WEFT_OK);
  nt_step(&x, true);
  read_packet(&x, id, &in);
  assert_int_equal(in.n, 2);
  ia = item_of(&in, a);
  assert_int_equal(ia->kind, WEFT_NET_ITEM_DELTA);
  assert_int_equal(ia->mask, 1u << NT_HP);
  assert_int_equal(ia->present, 1u << NT_HP);
  assert_int_equal(ia->values_len, 4);
  int32_t got;
  memcpy(&got, ia->values, 4);
  assert_int_equal(got, 11);
  const weft_net_item_t *ib = item_of(&in, b);
  assert_int_equal(ib->kind, WEFT_NET_ITEM_DELTA);
  assert_int_equal(ib->mask, 1u << NT_VEL | 1u << NT_MARK);
  assert_int_equal(ib->present, 1u << NT_MARK);
  assert_int_equal(ib->values_len, 0);
  /* Not acknowledged: the next packet carries the same diff (and a new
   * write to a's position joins it). */
  nt_pos p = {2, 2};
  assert_int_equal(weft_set(x.w, a, x.pos, &p), WEFT_OK);
  uint64_t lost = in.tick;
  nt_step(&x, true);
  read_packet(&x, id, &in);
  ia = item_of(&in, a);
  assert_int_equal(ia->mask, 1u << NT_HP | 1u << NT_POS);
  ib = item_of(&in, b);
  assert_int_equal(ib->mask, 1u << NT_VEL | 1u << NT_MARK);
  /* The late ack of the lost packet covers b and a's Hp only. */
  ack(&x, id, lost);
  nt_step(&x, true);
  read_packet(&x, id, &in);
  assert_int_equal(in.n, 1);
  assert_int_equal(in.it[0].entity, a);
  assert_int_equal(in.it[0].mask, 1u << NT_POS);
  ack(&x, id, in.tick);
  /* A despawn is a forget; once acknowledged, nothing more. */
  assert_int_equal(weft_despawn(x.w, b), WEFT_OK);
  nt_step(&x, true);
  read_packet(&x, id, &in);
  assert_int_equal(in.n, 1);
  assert_int_equal(in.it[0].kind, WEFT_NET_ITEM_FORGET);
  assert_int_equal(in.it[0].entity, b);
  ack(&x, id, in.tick);
  nt_step(&x, true);
  read_packet(&x, id, &in);
  assert_int_equal(in.n, 0);
  nt_close(&x);
}

/* Acks wait for the next build to move the entries (session.c): two
 * acks between builds leave each entry held as of the newer packet that
 * carried it, so the next packet carries only what changed after that
 * one; with the newer ack lost, it carries the change made before it. */
static void
test_net_replicate_acks_between_builds_hold_the_newest(void **state) {
  (void)state;
  for (int lose = 0; lose < 2; lose++) {
    nt_world x;
    nt_open(&x, NULL);
    weft_entity_t a = nt_spawn(&x, 1, 1, 10), b = nt_spawn(&x, 3, 3, 20);
    uint32_t id = nt_session(&x, 0, 0, 10);
    items in;
    nt_step(&x, true);
    read_packet(&x, id, &in);
    assert_int_equal(in.n, 2);
    uint64_t t1 = in.tick;
    int32_t hp = 11;
    assert_int_equal(weft_set(x.w, a, x.hp, &hp), WEFT_OK);
    nt_step(&x, true);
    read_packet(&x, id, &in);
    /* Not acknowledged yet: both learned in full again. */
    assert_int_equal(in.n, 2);
    assert_int_equal(item_of(&in, a)->kind, WEFT_NET_ITEM_LEARN);
    uint64_t t2 = in.tick;
    ack(&x, id, t1);
    if (!lose)
      ack(&x, id, t2);
    nt_step(&x, true);
    read_packet(&x, id, &in);
    if (!lose) {
      assert_int_equal(in.n, 0);
    } else {
      /* Held as of t1: a's Hp (written at t2) goes out, b has nothing. */
      assert_int_equal(in.n, 1);
      assert_int_equal(in.it[0].entity, a);
      assert_int_equal(in.it[0].kind, WEFT_NET_ITEM_DELTA);
      assert_int_equal(in.it[0].mask, 1u << NT_HP);
    }
    assert_null(item_of(&in, b));
    nt_close(&x);
  }
}

/* Events go once, to the sessions that know one of their entities. */
static uint32_t events_in(const items *in, uint32_t type) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < in->n; i++)
    if (in->it[i].kind == WEFT_NET_ITEM_EVENT && in->it[i].event_type == type)
      n++;
  return n;
}

static void test_net_replicate_events_reach_who_knows(void **state) {
  (void)state;
  nt_world x;
  nt_open(&x, NULL);
  weft_entity_t a = nt_spawn(&x, 5, 5, 1), b = nt_spawn(&x, 105, 5, 2);
  weft_entity_t far = nt_spawn(&x, 500, 500, 3);
  uint32_t s1 = nt_session(&x, 5, 5, 10), s2 = nt_session(&x, 105, 5, 10);
  nt_step(&x, true); /* both learn their entity */
  const uint8_t payload[3] = {1, 2, 3};
  assert_int_equal(weft_net_event(x.net, a, WEFT_ENTITY_NULL, 1, payload, 3),
                   WEFT_OK);
  assert_int_equal(weft_net_event(x.net, a, b, 2, NULL, 0), WEFT_OK);
  assert_int_equal(weft_net_event(x.net, far, WEFT_ENTITY_NULL, 3, NULL, 0),
                   WEFT_OK);
  nt_step(&x, true);
  items in;
  read_packet(&x, s1, &in);
  assert_int_equal(events_in(&in, 1), 1);
  assert_int_equal(events_in(&in, 2), 1);
  assert_int_equal(events_in(&in, 3), 0);
  for (uint32_t i = 0; i < in.n; i++)
    if (in.it[i].kind == WEFT_NET_ITEM_EVENT && in.it[i].event_type == 1) {
      assert_int_equal(in.it[i].entity, a);
      assert_int_equal(in.it[i].values_len, 3);
      assert_memory_equal(in.it[i].values, payload, 3);
    }
  read_packet(&x, s2, &in);
  assert_int_equal(events_in(&in, 1), 0);
  assert_int_equal(events_in(&in, 2), 1);
  assert_int_equal(events_in(&in, 3), 0);
  /* Once: the next packet has none. */
  nt_step(&x, true);
  read_packet(&x, s1, &in);
  assert_int_equal(events_in(&in, 1) + events_in(&in, 2), 0);
  /* The tick's buffer is bounded. */
  int rc = 0;
  uint32_t queued = 0;
  while ((rc = weft_net_event(x.net, a, b, 9, NULL, 0)) == WEFT_OK)
    queued++;
  assert_int_equal(rc, WEFT_ELIMIT);
  assert_true(queued > 0);
  assert_non_null(strstr(weft_net_last_error(x.net), "full"));
  uint8_t big[WEFT_NET_MAX_EVENT + 1] = {0};
  assert_int_equal(weft_net_event(x.net, a, b, 9, big, sizeof big),
                   WEFT_EINVAL);
  nt_close(&x);
}

/* Stamps and builds go backwards only with an error. */
static void test_net_replicate_ticks_move_forward(void **state) {
  (void)state;
  nt_world x;
  nt_open(&x, NULL);
  assert_int_equal(weft_net_stamp(x.net, 5), WEFT_OK);
  assert_int_equal(weft_net_build(x.net, 5), WEFT_OK);
  assert_int_equal(weft_net_stamp(x.net, 5), WEFT_EINVAL);
  assert_non_null(strstr(weft_net_last_error(x.net), "after the last build"));
  assert_int_equal(weft_net_build(x.net, 5), WEFT_EINVAL);
  assert_int_equal(weft_net_stamp(x.net, 6), WEFT_OK);
  assert_int_equal(weft_net_build(x.net, 7), WEFT_OK);
  nt_close(&x);
}

static void test_net_replicate_config_checked(void **state) {
  (void)state;
  nt_world x;
  nt_open(&x, NULL);
  weft_component_t untracked = wt_register(x.w, "Plain", 4, 4);
  weft_net_config_t c = nt_config(&x);
  weft_net_t *net = NULL;
  weft_component_t bad[2] = {x.hp, untracked};
  c.components = bad;
  c.component_count = 2;
  assert_int_equal(weft_net_create(x.w, &c, &net), WEFT_EINVAL);
  assert_non_null(strstr(weft_world_last_error(x.w), "TRACK_DIRTY"));
  bad[1] = x.hp;
  assert_int_equal(weft_net_create(x.w, &c, &net), WEFT_EINVAL);
  assert_non_null(strstr(weft_world_last_error(x.w), "twice"));
  bad[1] = 999;
  assert_int_equal(weft_net_create(x.w, &c, &net), WEFT_ENOCOMP);
  c = nt_config(&x);
  c.position = x.hp; /* 4 bytes: no x, y */
  assert_int_equal(weft_net_create(x.w, &c, &net), WEFT_EINVAL);
  c = nt_config(&x);
  c.max_radius = 1e6f;
  assert_int_equal(weft_net_create(x.w, &c, &net), WEFT_EINVAL);
  c = nt_config(&x);
  c.max_behind = 64;
  assert_int_equal(weft_net_create(x.w, &c, &net), WEFT_EINVAL);
  c = nt_config(&x);
  c.cell_size = NAN;
  assert_int_equal(weft_net_create(x.w, &c, &net), WEFT_EINVAL);
  assert_null(net);
  nt_close(&x);
}

/* Steady network ticks: values change, views move, packets go out and
 * acks come back, and neither the server nor weft's allocator (on this
 * thread) allocates. */
static void test_net_replicate_steady_ticks_allocate_nothing(void **state) {
  (void)state;
  nt_world x;
  nt_open(&x, NULL);
  enum { M = 3000, S = 4 };
  weft_entity_t *es = calloc(M, sizeof *es);
  assert_non_null(es);
  wt_rng_t rng = wt_rng(77);
  for (uint32_t i = 0; i < M; i++)
    es[i] =
        nt_spawn(&x, (float)wt_below(&rng, 300), (float)wt_below(&rng, 300), 1);
  uint32_t ids[S];
  weft_net_mirror_t *m[S];
  for (uint32_t s = 0; s < S; s++) {
    ids[s] = nt_session(&x, 150, 150, 50);
    m[s] = nt_mirror(&x);
  }
  wt_alloc_probe_t probe = wt_alloc_probe(x.w);
  weft_net_stats_t st0, st1;
  for (uint32_t round = 0; round < 2; round++) {
    if (round == 1) {
      probe = wt_alloc_probe(x.w);
      assert_int_equal(weft_net_stats(x.net, &st0), WEFT_OK);
    }
    for (uint32_t t = 0; t < 40; t++) {
      for (uint32_t k = 0; k < 200; k++) {
        uint32_t i = wt_below(&rng, M);
        nt_pos p;
        assert_int_equal(weft_read(x.w, es[i], x.pos, &p), WEFT_OK);
        p.x = (float)wt_below(&rng, 300);
        assert_int_equal(weft_set(x.w, es[i], x.pos, &p), WEFT_OK);
      }
      for (uint32_t s = 0; s < S; s++) {
        weft_net_client_msg_t v = {.type = WEFT_NET_VIEW,
                                   .x = (float)(100 + 10 * (t % 10)),
                                   .y = (float)(100 + 25 * s),
                                   .radius = 50};
        nt_send(&x, ids[s], &v);
      }
      nt_step(&x, true);
      for (uint32_t s = 0; s < S; s++) {
        const void *p;
        size_t len;
        uint8_t a[WEFT_NET_MAX_CLIENT_MESSAGE];
        size_t alen;
        assert_int_equal(weft_net_packet(x.net, ids[s], &p, &len), 0);
        assert_int_equal(weft_net_mirror_apply(m[s], p, len, a, &alen), 0);
        if (t % 3) /* some acks are lost */
          assert_int_equal(weft_net_receive(x.net, ids[s], a, alen), 0);
      }
    }
  }
  wt_assert_no_alloc(x.w, &probe, "40 steady network ticks");
  assert_int_equal(weft_net_stats(x.net, &st1), WEFT_OK);
  assert_int_equal(st1.allocs, st0.allocs);
  assert_int_equal(st1.builds - st0.builds, 40);
  assert_int_equal(st1.replicated, M);
  for (uint32_t s = 0; s < S; s++) {
    uint64_t ds;
    uint32_t ns, nm;
    assert_int_equal(weft_net_session_digest(x.net, ids[s], &ds, &ns), 0);
    assert_int_equal(weft_net_mirror_digest(m[s], &nm), ds);
    assert_int_equal(ns, nm);
    assert_true(ns > 50);
    weft_net_mirror_free(m[s]);
  }
  free(es);
  nt_close(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_net_replicate_delta_carries_exactly_the_changes),
      cmocka_unit_test(test_net_replicate_acks_between_builds_hold_the_newest),
      cmocka_unit_test(test_net_replicate_events_reach_who_knows),
      cmocka_unit_test(test_net_replicate_ticks_move_forward),
      cmocka_unit_test(test_net_replicate_config_checked),
      cmocka_unit_test(test_net_replicate_steady_ticks_allocate_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
