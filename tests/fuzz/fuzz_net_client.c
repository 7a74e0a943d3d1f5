/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the server's side of client bytes (weft/net.h).
 *
 * First the decoder (weft_net_decode_client()) on the whole input:
 * whatever it is, the decoder returns 0 or WEFT_EFORMAT with a reason, and
 * a message it accepts has every field in range and encodes back to the
 * same bytes.
 *
 * Then a live server: the input, read as messages each preceded by a
 * length byte, goes to one new session of a small world (HELLO, views
 * anywhere, acks of any tick, digest requests for any handle), with a
 * network tick after each message. Whatever the client says, the server
 * refuses or applies it without crashing, its packets always decode, a
 * mirror applying them never fails, and closing the session frees what it
 * held. The world and server are made once per process (the fuzzer's
 * inputs share them, as a server's clients do).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "weft/dirty.h"
#include "weft/net.h"

static void check_decoder(const uint8_t *data, size_t size) {
  weft_net_client_msg_t m;
  const char *why = NULL;
  int rc = weft_net_decode_client(data, size, &m, &why);
  if (rc != 0) {
    FUZZ_CHECK(rc == WEFT_EFORMAT);
    FUZZ_CHECK(why && *why);
    return;
  }
  FUZZ_CHECK(size <= WEFT_NET_MAX_CLIENT_MESSAGE);
  if (m.type == WEFT_NET_VIEW)
    FUZZ_CHECK(isfinite(m.x) && isfinite(m.y) && isfinite(m.radius) &&
               m.radius > 0);
  if (m.type == WEFT_NET_HELLO)
    FUZZ_CHECK(m.version > 0 && m.version <= 0xffffu);
  uint8_t again[WEFT_NET_MAX_CLIENT_MESSAGE];
  int n = weft_net_encode_client(&m, again, sizeof again);
  FUZZ_CHECK(n > 0 && (size_t)n == size);
  FUZZ_CHECK(memcmp(again, data, size) == 0);
}

typedef struct server_t {
  weft_world_t *w;
  weft_net_t *net;
  weft_component_t pos, hp;
  weft_entity_t es[64];
  uint64_t tick;
} server_t;

/* The world every input's session joins: 64 entities on a 40 x 40 field,
 * made on the first input and kept (freed at exit by the OS). */
static server_t *server(void) {
  static server_t s;
  if (s.net)
    return &s;
  FUZZ_CHECK(weft_world_create(NULL, &s.w) == 0);
  weft_component_desc_t d = {.name = "Pos",
                             .size = 8,
                             .alignment = 4,
                             .flags = WEFT_COMPONENT_TRACK_DIRTY};
  FUZZ_CHECK(weft_component_register(s.w, &d, &s.pos) == 0);
  d.name = "Hp";
  d.size = 4;
  FUZZ_CHECK(weft_component_register(s.w, &d, &s.hp) == 0);
  for (uint32_t i = 0; i < 64; i++) {
    float p[2] = {(float)(i % 8) * 5, (float)(i / 8) * 5};
    int32_t hp = (int32_t)i;
    const void *vals[] = {p, &hp};
    weft_component_t comps[3] = {s.pos, s.hp, 0};
    FUZZ_CHECK(weft_spawn_with(s.w, comps, vals, &s.es[i]) == 0);
  }
  weft_component_t list[2] = {s.pos, s.hp};
  weft_net_config_t c = {.components = list,
                         .component_count = 2,
                         .position = s.pos,
                         .cell_size = 4,
                         .max_radius = 30,
                         .max_sessions = 2,
                         .max_known = 32,
                         .max_behind = 4,
                         .max_packet = 1024};
  FUZZ_CHECK(weft_net_create(s.w, &c, &s.net) == 0);
  return &s;
}

/* One network tick: a change, a stamp, a build; the packet must decode
 * and apply. */
static void tick(server_t *s, uint32_t id, weft_net_mirror_t *m) {
  s->tick++;
  weft_world_set_tick(s->w, s->tick);
  int32_t hp = (int32_t)s->tick;
  FUZZ_CHECK(weft_set(s->w, s->es[s->tick % 64], s->hp, &hp) == 0);
  FUZZ_CHECK(weft_net_stamp(s->net, s->tick) == 0);
  FUZZ_CHECK(weft_world_clear_dirty(s->w) == 0);
  FUZZ_CHECK(weft_net_build(s->net, s->tick) == 0);
  const void *p;
  size_t len, ack_len;
  uint8_t ack[WEFT_NET_MAX_CLIENT_MESSAGE];
  FUZZ_CHECK(weft_net_packet(s->net, id, &p, &len) == 0);
  FUZZ_CHECK(weft_net_mirror_apply(m, p, len, ack, &ack_len) == 0);
}

static void check_server(const uint8_t *data, size_t size) {
  server_t *s = server();
  uint32_t id = 0;
  FUZZ_CHECK(weft_net_session_open(s->net, &id) == 0);
  const void *wel;
  size_t wlen;
  FUZZ_CHECK(weft_net_welcome(s->net, &wel, &wlen) == 0);
  weft_net_mirror_t *m = NULL;
  FUZZ_CHECK(weft_net_mirror_new(wel, wlen, 64, &m) == 0);
  for (size_t at = 0; at < size;) {
    size_t n = data[at++];
    if (n > size - at)
      n = size - at;
    int rc = weft_net_receive(s->net, id, data + at, n);
    FUZZ_CHECK(rc == 0 || rc == WEFT_EFORMAT || rc == WEFT_EVERSION);
    if (rc)
      FUZZ_CHECK(*weft_net_last_error(s->net));
    at += n;
    tick(s, id, m);
  }
  weft_net_mirror_free(m);
  FUZZ_CHECK(weft_net_session_close(s->net, id) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check_decoder(data, size);
  check_server(data, size);
  return 0;
}
