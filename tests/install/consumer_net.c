/* SPDX-License-Identifier: MIT */
/*
 * A minimal weft::net program written against an installed weft:
 * <weft/net.h>, linked through `pkg-config weft-net` or the weft::net
 * CMake target (tests/install/run_install_test.cmake builds it both
 * ways). One entity, one session, one packet applied to a mirror; it
 * exits 0 when the mirror's digest equals the server's view.
 */
#include <stdio.h>
#include <string.h>

#include <weft.h>
#include <weft/net.h>

typedef struct pos_t {
  float x, y;
} pos_t;

int main(void) {
  weft_world_t *w = NULL;
  weft_net_t *net = NULL;
  weft_net_mirror_t *m = NULL;
  weft_component_t pos = 0;
  weft_component_desc_t d = WEFT_COMPONENT_DESC(pos_t);
  d.flags = WEFT_COMPONENT_TRACK_DIRTY;
  int rc = weft_world_create(NULL, &w);
  if (!rc)
    rc = weft_component_register(w, &d, &pos);
  weft_net_config_t c = {.components = &pos,
                         .component_count = 1,
                         .position = pos,
                         .cell_size = 8,
                         .max_radius = 32,
                         .max_sessions = 2,
                         .max_known = 64,
                         .max_behind = 8,
                         .max_packet = 4096};
  if (!rc)
    rc = weft_net_create(w, &c, &net);
  pos_t p = {3, 4};
  weft_entity_t e;
  if (!rc)
    rc = weft_spawn_with(w, (weft_component_t[]){pos, 0}, (const void *[]){&p},
                         &e);
  uint32_t id = 0;
  if (!rc)
    rc = weft_net_session_open(net, &id);
  weft_net_client_msg_t msgs[2] = {
      {.type = WEFT_NET_HELLO, .version = WEFT_NET_PROTOCOL_VERSION},
      {.type = WEFT_NET_VIEW, .x = 0, .y = 0, .radius = 16}};
  for (int i = 0; i < 2 && !rc; i++) {
    unsigned char buf[WEFT_NET_MAX_CLIENT_MESSAGE];
    int n = weft_net_encode_client(&msgs[i], buf, sizeof buf);
    rc = n < 0 ? n : weft_net_receive(net, id, buf, (size_t)n);
  }
  if (!rc)
    rc = weft_net_stamp(net, 1);
  if (!rc)
    rc = weft_net_build(net, 1);
  const void *wel = NULL, *pk = NULL;
  size_t wlen = 0, plen = 0, alen = 0;
  unsigned char ack[WEFT_NET_MAX_CLIENT_MESSAGE];
  if (!rc)
    rc = weft_net_welcome(net, &wel, &wlen);
  if (!rc)
    rc = weft_net_mirror_new(wel, wlen, 64, &m);
  if (!rc)
    rc = weft_net_packet(net, id, &pk, &plen);
  if (!rc)
    rc = weft_net_mirror_apply(m, pk, plen, ack, &alen);
  uint64_t ds = 0;
  uint32_t ns = 0, nm = 0;
  if (!rc)
    rc = weft_net_session_digest(net, id, &ds, &ns);
  int ok = !rc && ns == 1 && weft_net_mirror_digest(m, &nm) == ds && nm == 1;
  if (!ok)
    fprintf(stderr, "consumer_net: %s\n",
            rc ? weft_strerror(rc) : "mirror differs");
  else
    printf("consumer_net: weft::net OK, digest 0x%016llx\n",
           (unsigned long long)ds);
  weft_net_mirror_free(m);
  weft_net_destroy(net);
  weft_world_destroy(w);
  return ok ? 0 : 1;
}
