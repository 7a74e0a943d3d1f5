/* SPDX-License-Identifier: MIT */
/*
 * The client side of the socket transport: one WebSocket connection in
 * its own libwebsockets context, serviced by the thread that owns it.
 * Received messages are handed to the caller's callback from inside the
 * service call as they complete, so the connection holds one message at
 * a time (at most max_message bytes); outgoing messages wait in a small
 * fixed ring.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libwebsockets.h>

#include "net/net_internal.h"

#define CONN_RING 64u
#define CONN_MSG 256u

struct weft_net_conn_t {
  struct lws_context *ctx;
  struct lws *wsi;
  struct lws_protocols protocols[2];
  bool connected, failed;
  weft_net_conn_fn on_message;
  void *user;
  uint8_t *in; /* the message being received */
  size_t in_len, in_cap, max_message;
  uint8_t ring[CONN_RING][LWS_PRE + CONN_MSG];
  uint16_t ring_len[CONN_RING];
  uint32_t head, count;
  char error[128];
};

static void conn_fail(weft_net_conn_t *c, const char *why, const void *in,
                      size_t len) {
  if (c->failed)
    return;
  c->failed = true;
  int n = (int)(len < 64 ? len : 64);
  if (in && n)
    snprintf(c->error, sizeof c->error, "%s: %.*s", why, n, (const char *)in);
  else
    snprintf(c->error, sizeof c->error, "%s", why);
}

/* One fragment; a complete message goes to the callback. */
static int conn_rx(weft_net_conn_t *c, const void *in, size_t len) {
  if (len > c->max_message - c->in_len) {
    conn_fail(c, "a message over max_message", NULL, 0);
    return -1;
  }
  if (c->in_len + len > c->in_cap) {
    size_t cap = c->in_cap ? c->in_cap : 4096;
    while (cap < c->in_len + len)
      cap *= 2;
    uint8_t *p = realloc(c->in, cap);
    if (!p) {
      conn_fail(c, "out of memory", NULL, 0);
      return -1;
    }
    c->in = p;
    c->in_cap = cap;
  }
  memcpy(c->in + c->in_len, in, len);
  c->in_len += len;
  if (!lws_is_final_fragment(c->wsi) || lws_remaining_packet_payload(c->wsi))
    return 0;
  size_t n = c->in_len;
  c->in_len = 0;
  if (c->on_message(c->user, c->in, n) != 0) {
    conn_fail(c, "closed by the client", NULL, 0);
    return -1;
  }
  return 0;
}

/* Writes the oldest queued message. */
static int conn_tx(weft_net_conn_t *c) {
  if (!c->count)
    return 0;
  uint32_t i = c->head;
  int n = c->ring_len[i];
  if (lws_write(c->wsi, c->ring[i] + LWS_PRE, (size_t)n, LWS_WRITE_BINARY) <
      n) {
    conn_fail(c, "the socket failed", NULL, 0);
    return -1;
  }
  c->head = (c->head + 1) % CONN_RING;
  if (--c->count)
    lws_callback_on_writable(c->wsi);
  return 0;
}

static int conn_callback(struct lws *wsi, enum lws_callback_reasons reason,
                         void *user, void *in, size_t len) {
  (void)user;
  weft_net_conn_t *c = lws_context_user(lws_get_context(wsi));
  switch (reason) {
  case LWS_CALLBACK_CLIENT_ESTABLISHED:
    c->connected = true;
    if (c->count)
      lws_callback_on_writable(wsi);
    return 0;
  case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
    conn_fail(c, "cannot connect", in, in ? strlen(in) : 0);
    c->wsi = NULL;
    return 0;
  case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
    /* The close frame: a 2-byte status, then the server's reason. */
    conn_fail(c, "closed by the server", len > 2 ? (const char *)in + 2 : NULL,
              len > 2 ? len - 2 : 0);
    return 0;
  case LWS_CALLBACK_CLIENT_CLOSED:
    conn_fail(c, "closed", NULL, 0);
    c->wsi = NULL;
    return 0;
  case LWS_CALLBACK_CLIENT_RECEIVE:
    return conn_rx(c, in, len);
  case LWS_CALLBACK_CLIENT_WRITEABLE:
    return conn_tx(c);
  default:
    return 0;
  }
}

int weft_net_conn_open(const char *host, uint16_t port, uint32_t max_message,
                       weft_net_conn_fn on_message, void *user,
                       weft_net_conn_t **out) {
  if (!host || !port || !on_message || !out)
    return WEFT_EINVAL;
  *out = NULL;
  weft_net_conn_t *c = calloc(1, sizeof *c);
  if (!c)
    return WEFT_ENOMEM;
  c->on_message = on_message;
  c->user = user;
  c->max_message = max_message ? max_message : WEFT_NET_MAX_PACKET;
  c->protocols[0] =
      (struct lws_protocols){"weft-net", conn_callback, 0, 65536, 0, NULL, 0};
  weft__net_lws_log();
  struct lws_context_creation_info ci;
  memset(&ci, 0, sizeof ci);
  ci.port = CONTEXT_PORT_NO_LISTEN;
  ci.protocols = c->protocols;
  ci.user = c;
  ci.fd_limit_per_thread = 8;
  ci.pt_serv_buf_size = 65536;
  c->ctx = lws_create_context(&ci);
  if (!c->ctx) {
    free(c);
    return WEFT_EIO;
  }
  struct lws_client_connect_info cc;
  memset(&cc, 0, sizeof cc);
  cc.context = c->ctx;
  cc.address = host;
  cc.port = port;
  cc.path = "/";
  cc.host = host;
  cc.origin = host;
  cc.protocol = "weft-net";
  cc.pwsi = &c->wsi;
  if (!lws_client_connect_via_info(&cc) && !c->failed)
    conn_fail(c, "cannot connect", NULL, 0);
  if (c->failed) {
    lws_context_destroy(c->ctx);
    free(c);
    return WEFT_EIO;
  }
  *out = c;
  return 0;
}

int weft_net_conn_send(weft_net_conn_t *c, const void *msg, size_t len) {
  if (!c || !msg || !len || len > CONN_MSG)
    return WEFT_EINVAL;
  if (c->count == CONN_RING)
    return WEFT_ELIMIT;
  uint32_t i = (c->head + c->count++) % CONN_RING;
  memcpy(c->ring[i] + LWS_PRE, msg, len);
  c->ring_len[i] = (uint16_t)len;
  if (c->connected && c->wsi)
    lws_callback_on_writable(c->wsi);
  return 0;
}

int weft_net_conn_run(weft_net_conn_t *c, uint32_t wait_ms) {
  if (!c)
    return WEFT_EINVAL;
  if (!c->failed)
    weft__net_service(c->ctx, wait_ms);
  if (c->failed)
    return WEFT_EIO;
  return c->connected ? 1 : 0;
}

/* libwebsockets' service sleeps until an event of its own: a cancel
 * (a byte on its wake pipe) before each call is the event that makes it
 * return at once, after handling what is ready. Between rounds with
 * nothing to do it sleeps 0.5 ms, until the wait is over. */
void weft__net_service(struct lws_context *ctx, uint32_t wait_ms) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    lws_cancel_service(ctx);
    if (lws_service(ctx, 0) < 0)
      return;
    clock_gettime(CLOCK_MONOTONIC, &t);
    double ms = (double)(t.tv_sec - t0.tv_sec) * 1e3 +
                (double)(t.tv_nsec - t0.tv_nsec) * 1e-6;
    if (ms >= (double)wait_ms)
      return;
    /* Buffered input or output still waiting: another round at once. */
    if (lws_service_adjust_timeout(ctx, 1, 0) == 0)
      continue;
    struct timespec nap = {0, 500 * 1000};
    nanosleep(&nap, NULL);
  }
}

/* libwebsockets logs errors only, to stderr; WEFT_LWS_LOG=<lws level
 * bits> (15: up to info) shows its own trace when debugging a transport
 * problem. */
void weft__net_lws_log(void) {
  const char *env = getenv("WEFT_LWS_LOG");
  lws_set_log_level(env ? atoi(env) : LLL_ERR, NULL);
}

const char *weft_net_conn_error(const weft_net_conn_t *c) {
  return c ? c->error : "";
}

void weft_net_conn_close(weft_net_conn_t *c) {
  if (!c)
    return;
  lws_context_destroy(c->ctx);
  free(c->in);
  free(c);
}
