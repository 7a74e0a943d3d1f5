/* SPDX-License-Identifier: MIT */
/*
 * Many client sessions in one thread: WebSocket connections to one
 * server in a single libwebsockets context, each with its own mirror.
 * One context rather than one per connection (weft_net_conn_t) because
 * servicing a context costs a poll over its descriptors and a wake-up:
 * a thousand contexts would cost a thousand polls per round, one context
 * one poll. A session applies every packet as it completes (so it holds
 * one message at a time), acknowledges it unless the caller does, and
 * runs the view check that weft-client and the load bench end with.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libwebsockets.h>

#include "net/net_internal.h"

#define CLIENT_RING 64u
#define CLIENT_MSG 256u
/* Digest requests a check sends at most, and the packets it waits for a
 * reply before asking again. */
#define CHECK_ASKS 5u
#define CHECK_PATIENCE 30u

typedef struct client_session {
  weft_net_client_t *set;
  uint32_t index;
  struct lws *wsi;
  bool connected, failed;
  weft_net_mirror_t *mirror;
  uint8_t *in; /* the message being received */
  size_t in_len, in_cap;
  /* Outgoing messages: a ring of fixed slots with libwebsockets' head
   * room in front of each. */
  uint8_t (*ring)[LWS_PRE + CLIENT_MSG];
  uint16_t ring_len[CLIENT_RING];
  uint32_t head, count;
  weft_net_client_state_t st;
  uint64_t ask_tick;   /* the mirror's tick when the check last asked */
  uint32_t ask_packet; /* packets applied then */
  char error[128];
} client_session;

struct weft_net_client_t {
  weft_net_client_config_t cfg;
  char host[64];
  struct lws_context *ctx;
  struct lws_protocols protocols[2];
  client_session *s; /* [sessions] */
  uint32_t open;     /* sessions connected and not closed */
};

static void session_fail(client_session *s, const char *why, const void *in,
                         size_t len) {
  if (s->failed)
    return;
  if (s->connected)
    s->set->open--;
  s->failed = true;
  s->st.status = WEFT_EIO;
  int n = (int)(len < 64 ? len : 64);
  if (in && n)
    snprintf(s->error, sizeof s->error, "%s: %.*s", why, n, (const char *)in);
  else
    snprintf(s->error, sizeof s->error, "%s", why);
}

static int queue(client_session *s, const void *msg, size_t len) {
  if (s->failed)
    return WEFT_EIO;
  if (s->count == CLIENT_RING)
    return WEFT_ELIMIT;
  uint32_t i = (s->head + s->count++) % CLIENT_RING;
  memcpy(s->ring[i] + LWS_PRE, msg, len);
  s->ring_len[i] = (uint16_t)len;
  if (s->connected && s->wsi)
    lws_callback_on_writable(s->wsi);
  return 0;
}

static int send_msg(client_session *s, const weft_net_client_msg_t *m) {
  uint8_t buf[WEFT_NET_MAX_CLIENT_MESSAGE];
  int n = weft_net_encode_client(m, buf, sizeof buf);
  return n < 0 ? n : queue(s, buf, (size_t)n);
}

static int ask_digest(client_session *s) {
  s->st.asked++;
  s->ask_tick = weft_net_mirror_tick(s->mirror);
  s->ask_packet = s->st.packets;
  weft_net_client_msg_t m = {.type = WEFT_NET_DIGEST_REQ};
  return send_msg(s, &m);
}

/* After a packet: compare the mirror with a digest reply newer than the
 * request, or ask again (a reply that differs means items were still
 * waiting for room; a reply can also be lost with a packet the server
 * replaced unsent). */
static int check_step(client_session *s) {
  if (s->st.check != WEFT_NET_CHECK_PENDING)
    return 0;
  weft_net_digest_reply_t d;
  weft_net_mirror_last_digest(s->mirror, &d);
  bool replied = d.tick > s->ask_tick && d.entity == WEFT_ENTITY_NULL;
  if (replied) {
    s->st.digest = weft_net_mirror_digest(s->mirror, &s->st.count);
    s->st.server_digest = d.digest;
    s->st.server_count = d.count;
    if (s->st.digest == d.digest && s->st.count == d.count) {
      s->st.check = WEFT_NET_CHECK_MATCH;
      return 0;
    }
  } else if (s->st.packets - s->ask_packet <= CHECK_PATIENCE) {
    return 0;
  }
  if (s->st.asked >= CHECK_ASKS) {
    s->st.check = WEFT_NET_CHECK_DIFFER;
    return 0;
  }
  return ask_digest(s);
}

/* A complete message: the welcome makes the mirror, packets go into it. */
static int on_message(client_session *s, const uint8_t *msg, size_t len) {
  weft_net_client_t *c = s->set;
  if (!s->mirror) {
    int rc = weft_net_mirror_new(msg, len, c->cfg.max_entities, &s->mirror);
    if (rc) {
      session_fail(s, "bad welcome", NULL, 0);
      return rc;
    }
    s->st.welcomed = true;
    return 0;
  }
  uint8_t ack[WEFT_NET_MAX_CLIENT_MESSAGE];
  size_t ack_len = 0;
  int rc = weft_net_mirror_apply(s->mirror, msg, len, ack, &ack_len);
  if (rc && rc != WEFT_ELIMIT) {
    session_fail(s, "bad packet", weft_net_mirror_last_error(s->mirror),
                 strlen(weft_net_mirror_last_error(s->mirror)));
    return rc;
  }
  if (!ack_len)
    return 0; /* no newer than the last one: dropped */
  s->st.packets++;
  s->st.bytes += len;
  s->st.tick = weft_net_mirror_tick(s->mirror);
  if (!c->cfg.manual_ack && (rc = queue(s, ack, ack_len)) != 0)
    return rc;
  if (c->cfg.on_packet &&
      (rc = c->cfg.on_packet(c->cfg.user, s->index, s->st.tick)) != 0) {
    session_fail(s, "closed by the client", NULL, 0);
    return rc;
  }
  return check_step(s);
}

/* One fragment; a complete message goes to on_message(). */
static int on_rx(client_session *s, const void *in, size_t len) {
  size_t max = s->set->cfg.max_message;
  if (len > max - s->in_len) {
    session_fail(s, "a message over max_message", NULL, 0);
    return -1;
  }
  if (s->in_len + len > s->in_cap) {
    size_t cap = s->in_cap ? s->in_cap : 4096;
    while (cap < s->in_len + len)
      cap *= 2;
    uint8_t *p = realloc(s->in, cap);
    if (!p) {
      session_fail(s, "out of memory", NULL, 0);
      return -1;
    }
    s->in = p;
    s->in_cap = cap;
  }
  memcpy(s->in + s->in_len, in, len);
  s->in_len += len;
  if (!lws_is_final_fragment(s->wsi) || lws_remaining_packet_payload(s->wsi))
    return 0;
  size_t n = s->in_len;
  s->in_len = 0;
  return on_message(s, s->in, n) ? -1 : 0;
}

/* Writes the oldest queued message; one write per callback. */
static int on_writable(client_session *s) {
  if (!s->count)
    return 0;
  uint32_t i = s->head;
  int n = s->ring_len[i];
  if (lws_write(s->wsi, s->ring[i] + LWS_PRE, (size_t)n, LWS_WRITE_BINARY) <
      n) {
    session_fail(s, "the socket failed", NULL, 0);
    return -1;
  }
  s->head = (s->head + 1) % CLIENT_RING;
  if (--s->count)
    lws_callback_on_writable(s->wsi);
  return 0;
}

static int client_callback(struct lws *wsi, enum lws_callback_reasons reason,
                           void *user, void *in, size_t len) {
  (void)user;
  client_session *s = lws_get_opaque_user_data(wsi);
  if (!s)
    return 0;
  switch (reason) {
  case LWS_CALLBACK_CLIENT_ESTABLISHED:
    s->connected = true;
    s->st.status = 1;
    s->set->open++;
    if (s->count)
      lws_callback_on_writable(wsi);
    return 0;
  case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
    session_fail(s, "cannot connect", in, in ? strlen(in) : 0);
    s->wsi = NULL;
    return 0;
  case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
    /* The close frame: a 2-byte status, then the server's reason. */
    session_fail(s, "closed by the server",
                 len > 2 ? (const char *)in + 2 : NULL, len > 2 ? len - 2 : 0);
    return 0;
  case LWS_CALLBACK_CLIENT_CLOSED:
    session_fail(s, "closed", NULL, 0);
    s->wsi = NULL;
    return 0;
  case LWS_CALLBACK_CLIENT_RECEIVE:
    return s->failed ? -1 : on_rx(s, in, len);
  case LWS_CALLBACK_CLIENT_WRITEABLE:
    return s->failed ? -1 : on_writable(s);
  default:
    return 0;
  }
}

static int client_config(weft_net_client_t *c,
                         const weft_net_client_config_t *in) {
  c->cfg = *in;
  if (!in->port || in->sessions < 1 || in->sessions > 65535)
    return WEFT_EINVAL;
  const char *host = in->host ? in->host : "127.0.0.1";
  if (strlen(host) >= sizeof c->host)
    return WEFT_EINVAL;
  snprintf(c->host, sizeof c->host, "%s", host);
  c->cfg.host = c->host;
  if (!c->cfg.max_entities)
    c->cfg.max_entities = 1u << 16;
  if (!c->cfg.max_message || c->cfg.max_message > WEFT_NET_MAX_PACKET)
    c->cfg.max_message = WEFT_NET_MAX_PACKET;
  return 0;
}

static int connect_one(weft_net_client_t *c, client_session *s) {
  struct lws_client_connect_info cc;
  memset(&cc, 0, sizeof cc);
  cc.context = c->ctx;
  cc.address = c->host;
  cc.port = c->cfg.port;
  cc.path = "/";
  cc.host = c->host;
  cc.origin = c->host;
  cc.protocol = "weft-net";
  cc.pwsi = &s->wsi;
  cc.opaque_user_data = s;
  if (!lws_client_connect_via_info(&cc))
    session_fail(s, "cannot connect", NULL, 0);
  return s->failed ? WEFT_EIO : 0;
}

int weft_net_client_new(const weft_net_client_config_t *cfg,
                        weft_net_client_t **out) {
  if (!cfg || !out)
    return WEFT_EINVAL;
  *out = NULL;
  weft_net_client_t *c = calloc(1, sizeof *c);
  if (!c)
    return WEFT_ENOMEM;
  int rc = client_config(c, cfg);
  if (rc) {
    free(c);
    return rc;
  }
  c->s = calloc(cfg->sessions, sizeof *c->s);
  for (uint32_t i = 0; c->s && i < cfg->sessions; i++) {
    c->s[i].set = c;
    c->s[i].index = i;
    c->s[i].ring = malloc(CLIENT_RING * sizeof *c->s[i].ring);
    if (!c->s[i].ring)
      rc = WEFT_ENOMEM;
  }
  if (!c->s || rc) {
    weft_net_client_free(c);
    return WEFT_ENOMEM;
  }
  c->protocols[0] =
      (struct lws_protocols){"weft-net", client_callback, 0, 65536, 0, NULL, 0};
  weft__net_lws_log();
  struct lws_context_creation_info ci;
  memset(&ci, 0, sizeof ci);
  ci.port = CONTEXT_PORT_NO_LISTEN;
  ci.protocols = c->protocols;
  /* Every connection is a descriptor, plus the context's own. */
  ci.fd_limit_per_thread = cfg->sessions + 16u;
  ci.pt_serv_buf_size = 65536;
  c->ctx = lws_create_context(&ci);
  if (!c->ctx) {
    weft_net_client_free(c);
    return WEFT_EIO;
  }
  for (uint32_t i = 0; i < cfg->sessions && !rc; i++)
    rc = connect_one(c, &c->s[i]);
  if (rc) {
    weft_net_client_free(c);
    return rc;
  }
  *out = c;
  return 0;
}

int weft_net_client_run(weft_net_client_t *c, uint32_t wait_ms) {
  if (!c)
    return WEFT_EINVAL;
  weft__net_service(c->ctx, wait_ms);
  return (int)c->open;
}

static client_session *session_at(const weft_net_client_t *c, uint32_t i) {
  return c && i < c->cfg.sessions ? &c->s[i] : NULL;
}

int weft_net_client_send(weft_net_client_t *c, uint32_t session,
                         const weft_net_client_msg_t *m) {
  client_session *s = session_at(c, session);
  if (!s || !m)
    return WEFT_EINVAL;
  return send_msg(s, m);
}

int weft_net_client_send_raw(weft_net_client_t *c, uint32_t session,
                             const void *bytes, size_t len) {
  client_session *s = session_at(c, session);
  if (!s || !bytes || !len || len > CLIENT_MSG)
    return WEFT_EINVAL;
  return queue(s, bytes, len);
}

int weft_net_client_check(weft_net_client_t *c, uint32_t session) {
  client_session *s = session_at(c, session);
  if (!s)
    return WEFT_EINVAL;
  if (s->failed || !s->mirror)
    return WEFT_EIO;
  s->st.check = WEFT_NET_CHECK_PENDING;
  s->st.asked = 0;
  return ask_digest(s);
}

int weft_net_client_state(const weft_net_client_t *c, uint32_t session,
                          weft_net_client_state_t *out) {
  const client_session *s = session_at(c, session);
  if (!s || !out)
    return WEFT_EINVAL;
  *out = s->st;
  return 0;
}

const weft_net_mirror_t *weft_net_client_mirror(const weft_net_client_t *c,
                                                uint32_t session) {
  const client_session *s = session_at(c, session);
  return s ? s->mirror : NULL;
}

const char *weft_net_client_error(const weft_net_client_t *c,
                                  uint32_t session) {
  const client_session *s = session_at(c, session);
  return s ? s->error : "";
}

void weft_net_client_free(weft_net_client_t *c) {
  if (!c)
    return;
  /* Destroying the context closes every connection through the callback
   * (which only marks the sessions closed); then their memory goes. */
  if (c->ctx)
    lws_context_destroy(c->ctx);
  for (uint32_t i = 0; c->s && i < c->cfg.sessions; i++) {
    weft_net_mirror_free(c->s[i].mirror);
    free(c->s[i].in);
    free(c->s[i].ring);
  }
  free(c->s);
  free(c);
}
