/* SPDX-License-Identifier: MIT */
/*
 * The weft::net wire format (net/wire.c, docs/protocol.md): client
 * messages and welcomes round-trip; every truncation of a valid client
 * message, welcome and tick packet is refused with a reason; every
 * single-bit flip is refused or decodes to a message that re-encodes to
 * the flipped bytes (so nothing out of range gets through); specific bad
 * fields name themselves. With WEFT_NET_SEEDS=<dir> it writes the fuzz
 * targets' seed corpus there (client messages, and welcome + packet
 * pairs).
 */
#include "support/net_test.h"

#include <math.h>
#include <stdio.h>

static const weft_net_client_msg_t samples[] = {
    {.type = WEFT_NET_HELLO, .version = WEFT_NET_PROTOCOL_VERSION},
    {.type = WEFT_NET_VIEW, .x = -12.5f, .y = 3.0f, .radius = 40.0f},
    {.type = WEFT_NET_ACK, .tick = 0x0102030405060708ull},
    {.type = WEFT_NET_DIGEST_REQ, .entity = 0},
    {.type = WEFT_NET_DIGEST_REQ, .entity = 0x2a00000300000011ull},
};

static void test_net_wire_client_round_trip(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof samples / sizeof *samples; i++) {
    uint8_t buf[WEFT_NET_MAX_CLIENT_MESSAGE];
    int n = weft_net_encode_client(&samples[i], buf, sizeof buf);
    assert_true(n > 0);
    weft_net_client_msg_t m;
    const char *why = NULL;
    assert_int_equal(weft_net_decode_client(buf, (size_t)n, &m, &why), 0);
    assert_memory_equal(&m, &samples[i], sizeof m);
    /* Every truncation fails, and says why. */
    for (int len = 0; len < n; len++) {
      why = NULL;
      assert_int_equal(weft_net_decode_client(buf, (size_t)len, &m, &why),
                       WEFT_EFORMAT);
      assert_non_null(why);
      assert_true(strlen(why) > 0);
    }
    /* A byte more fails too. */
    buf[n] = 0;
    assert_int_equal(weft_net_decode_client(buf, (size_t)n + 1, &m, NULL),
                     WEFT_EFORMAT);
    /* Every bit flip: refused, or a valid message that encodes back to
     * the same bytes. */
    for (int bit = 0; bit < 8 * n; bit++) {
      uint8_t f[WEFT_NET_MAX_CLIENT_MESSAGE];
      memcpy(f, buf, (size_t)n);
      f[bit / 8] ^= (uint8_t)(1u << (bit % 8));
      if (weft_net_decode_client(f, (size_t)n, &m, NULL) != 0)
        continue;
      uint8_t again[WEFT_NET_MAX_CLIENT_MESSAGE];
      int k = weft_net_encode_client(&m, again, sizeof again);
      assert_int_equal(k, n);
      assert_memory_equal(again, f, (size_t)n);
    }
  }
}

static void test_net_wire_client_fields_checked(void **state) {
  (void)state;
  uint8_t buf[WEFT_NET_MAX_CLIENT_MESSAGE];
  weft_net_client_msg_t m = samples[1], out;
  const char *why = NULL;
  m.radius = 0;
  assert_int_equal(weft_net_encode_client(&m, buf, sizeof buf), WEFT_EINVAL);
  /* Written by hand: a NaN radius, an infinite centre, a bad magic. */
  m = samples[1];
  int n = weft_net_encode_client(&m, buf, sizeof buf);
  float nan = NAN, inf = INFINITY;
  memcpy(buf + 9, &nan, 4);
  assert_int_equal(weft_net_decode_client(buf, (size_t)n, &out, &why),
                   WEFT_EFORMAT);
  assert_non_null(strstr(why, "radius"));
  n = weft_net_encode_client(&m, buf, sizeof buf);
  memcpy(buf + 1, &inf, 4);
  assert_int_equal(weft_net_decode_client(buf, (size_t)n, &out, &why),
                   WEFT_EFORMAT);
  assert_non_null(strstr(why, "centre"));
  n = weft_net_encode_client(&samples[0], buf, sizeof buf);
  buf[2] ^= 1;
  assert_int_equal(weft_net_decode_client(buf, (size_t)n, &out, &why),
                   WEFT_EFORMAT);
  assert_non_null(strstr(why, "magic"));
  buf[0] = 9;
  assert_int_equal(weft_net_decode_client(buf, (size_t)n, &out, &why),
                   WEFT_EFORMAT);
  assert_non_null(strstr(why, "unknown"));
  assert_int_equal(weft_net_decode_client(NULL, 3, &out, &why), WEFT_EFORMAT);
}

/* A server with a few entities in a session's view, its first packet (all
 * learns) and a second with deltas, an event, a forget and a digest. */
typedef struct wire_fx {
  nt_world x;
  uint32_t id;
  weft_net_schema_t schema;
  uint8_t packet[2][4096];
  size_t len[2];
} wire_fx;

static void wire_open(wire_fx *f) {
  nt_open(&f->x, NULL);
  weft_entity_t e[4];
  for (int i = 0; i < 4; i++)
    e[i] = nt_spawn(&f->x, 2.0f * (float)i, 1.0f, i);
  assert_int_equal(weft_add(f->x.w, e[1], f->x.mark, NULL), WEFT_OK);
  f->id = nt_session(&f->x, 0, 0, 15);
  const void *wel, *p;
  size_t wlen;
  assert_int_equal(weft_net_welcome(f->x.net, &wel, &wlen), WEFT_OK);
  assert_int_equal(weft_net_decode_welcome(wel, wlen, &f->schema, NULL), 0);
  nt_step(&f->x, true);
  assert_int_equal(weft_net_packet(f->x.net, f->id, &p, &f->len[0]), 0);
  assert_true(f->len[0] <= sizeof f->packet[0]);
  memcpy(f->packet[0], p, f->len[0]);
  weft_net_client_msg_t a = {.type = WEFT_NET_ACK, .tick = f->x.tick - 1};
  nt_send(&f->x, f->id, &a);
  int32_t hp = 99;
  assert_int_equal(weft_set(f->x.w, e[0], f->x.hp, &hp), WEFT_OK);
  assert_int_equal(weft_remove(f->x.w, e[1], f->x.mark), WEFT_OK);
  assert_int_equal(weft_despawn(f->x.w, e[3]), WEFT_OK);
  const char payload[5] = "boom";
  assert_int_equal(weft_net_event(f->x.net, e[0], e[2], 7, payload, 5), 0);
  weft_net_client_msg_t d = {.type = WEFT_NET_DIGEST_REQ};
  nt_send(&f->x, f->id, &d);
  nt_step(&f->x, true);
  assert_int_equal(weft_net_packet(f->x.net, f->id, &p, &f->len[1]), 0);
  assert_true(f->len[1] <= sizeof f->packet[1]);
  memcpy(f->packet[1], p, f->len[1]);
}

/* Reads a whole packet: 0 (well-formed, *kinds = bit per item kind seen),
 * or the failing code. */
static int read_all(const weft_net_schema_t *s, const void *p, size_t len,
                    uint32_t *kinds) {
  weft_net_reader_t r;
  weft_net_item_t it;
  const char *why = NULL;
  int rc = weft_net_packet_open(&r, s, p, len, &why);
  *kinds = 0;
  while (rc == 0 && (rc = weft_net_packet_next(&r, &it, &why)) == 1) {
    *kinds |= 1u << it.kind;
    assert_true(it.values_len <= len);
    rc = 0;
  }
  if (rc < 0) {
    assert_non_null(why);
    assert_true(strlen(why) > 0);
  }
  return rc;
}

static void test_net_wire_packets_checked(void **state) {
  (void)state;
  wire_fx *f = calloc(1, sizeof *f);
  assert_non_null(f);
  wire_open(f);
  uint32_t kinds;
  assert_int_equal(read_all(&f->schema, f->packet[0], f->len[0], &kinds), 0);
  assert_int_equal(kinds, 1u << WEFT_NET_ITEM_LEARN);
  assert_int_equal(read_all(&f->schema, f->packet[1], f->len[1], &kinds), 0);
  assert_int_equal(kinds,
                   1u << WEFT_NET_ITEM_DELTA | 1u << WEFT_NET_ITEM_FORGET |
                       1u << WEFT_NET_ITEM_EVENT | 1u << WEFT_NET_ITEM_DIGEST);
  for (int k = 0; k < 2; k++) {
    for (size_t len = 0; len < f->len[k]; len++)
      assert_true(read_all(&f->schema, f->packet[k], len, &kinds) < 0);
    /* Flips: refused, or well-formed (a value's bits, a handle's). */
    for (size_t bit = 0; bit < 8 * f->len[k]; bit++) {
      uint8_t g[4096];
      memcpy(g, f->packet[k], f->len[k]);
      g[bit / 8] ^= (uint8_t)(1u << (bit % 8));
      (void)read_all(&f->schema, g, f->len[k], &kinds);
    }
  }
  /* The welcome too. */
  const void *wel;
  size_t wlen;
  assert_int_equal(weft_net_welcome(f->x.net, &wel, &wlen), WEFT_OK);
  weft_net_schema_t s;
  for (size_t len = 0; len < wlen; len++)
    assert_true(weft_net_decode_welcome(wel, len, &s, NULL) < 0);
  uint8_t w2[4096];
  assert_true(wlen <= sizeof w2);
  memcpy(w2, wel, wlen);
  w2[5] = 9; /* protocol version 9 */
  const char *why = NULL;
  assert_int_equal(weft_net_decode_welcome(w2, wlen, &s, &why), WEFT_EVERSION);
  assert_non_null(strstr(why, "newer"));
  /* Seeds for the fuzz targets. */
  const char *dir = getenv("WEFT_NET_SEEDS");
  if (dir) {
    char path[512];
    for (size_t i = 0; i < sizeof samples / sizeof *samples; i++) {
      uint8_t buf[WEFT_NET_MAX_CLIENT_MESSAGE];
      int n = weft_net_encode_client(&samples[i], buf, sizeof buf);
      snprintf(path, sizeof path, "%s/net_client/msg%zu.bin", dir, i);
      FILE *fp = fopen(path, "wb");
      assert_non_null(fp);
      fwrite(buf, 1, (size_t)n, fp);
      fclose(fp);
    }
    /* A packet seed: u32 welcome length, the welcome, the packet. */
    for (int k = 0; k < 2; k++) {
      snprintf(path, sizeof path, "%s/net_packet/packet%d.bin", dir, k);
      FILE *fp = fopen(path, "wb");
      assert_non_null(fp);
      uint8_t l4[4] = {(uint8_t)wlen, (uint8_t)(wlen >> 8),
                       (uint8_t)(wlen >> 16), (uint8_t)(wlen >> 24)};
      fwrite(l4, 1, 4, fp);
      fwrite(wel, 1, wlen, fp);
      fwrite(f->packet[k], 1, f->len[k], fp);
      fclose(fp);
    }
  }
  nt_close(&f->x);
  free(f);
}

/* A mirror refuses a malformed packet whole: nothing of it applies. */
static void test_net_wire_mirror_refuses_whole(void **state) {
  (void)state;
  wire_fx *f = calloc(1, sizeof *f);
  assert_non_null(f);
  wire_open(f);
  weft_net_mirror_t *m = nt_mirror(&f->x);
  uint8_t ack[WEFT_NET_MAX_CLIENT_MESSAGE];
  size_t ack_len = 7;
  /* The first packet with its last byte cut: refused, nothing applied. */
  assert_int_equal(
      weft_net_mirror_apply(m, f->packet[0], f->len[0] - 1, ack, &ack_len),
      WEFT_EFORMAT);
  assert_int_equal(ack_len, 0);
  uint32_t count = 1;
  weft_net_mirror_digest(m, &count);
  assert_int_equal(count, 0);
  assert_true(strlen(weft_net_mirror_last_error(m)) > 0);
  assert_int_equal(
      weft_net_mirror_apply(m, f->packet[0], f->len[0], ack, &ack_len), 0);
  assert_true(ack_len > 0);
  weft_net_mirror_digest(m, &count);
  assert_int_equal(count, 4);
  weft_net_mirror_free(m);
  nt_close(&f->x);
  free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_net_wire_client_round_trip),
      cmocka_unit_test(test_net_wire_client_fields_checked),
      cmocka_unit_test(test_net_wire_packets_checked),
      cmocka_unit_test(test_net_wire_mirror_refuses_whole),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
