/* SPDX-License-Identifier: MIT */
/*
 * The socket server: WebSocket over TCP through libwebsockets, serviced
 * from the owner thread between ticks (no I/O thread, so nothing here is
 * shared across threads). Each WebSocket connection is one session of
 * the weft_net_t: it gets the welcome, then the packet of every build,
 * and its messages go to weft_net_receive(). A packet is written from
 * the session's own buffer, where the build left it (libwebsockets puts
 * the frame header in the headroom before it): a packet not yet written
 * when the next build replaces it is not sent, the newer one is, since
 * packets are cumulative. What a connection can make the server hold is
 * bounded: its message buffer (max_message) and what libwebsockets keeps
 * of the packet being written (at most max_outgoing).
 * Connections beyond max_sessions, malformed messages and idle
 * connections close that connection only, with a logged reason.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libwebsockets.h>

#include "net/net_internal.h"

/* The frame header goes in the packet's headroom (conn_writable). */
_Static_assert(LWS_PRE <= WEFT__NET_PACKET_HEADROOM,
               "libwebsockets needs more room before a packet");

/* One WebSocket connection: libwebsockets' per-session data. */
typedef struct serve_conn {
  struct weft_net_serve_t *srv;
  struct lws *wsi;
  uint32_t slot;      /* index in srv->conns; UINT32_MAX: none */
  uint32_t session;   /* the weft_net session id */
  uint32_t in_len;    /* bytes of the message being received */
  uint8_t *in;        /* [max_message] */
  bool welcome_due;   /* the welcome is not written yet */
  bool out_due;       /* the session's packet is not written yet */
  const char *close;  /* why to close at the next writable, or NULL */
  double last_rx;     /* when the client last sent a message */
  uint32_t last_sent; /* the build whose packet was last queued */
} serve_conn;

struct weft_net_serve_t {
  weft_net_t *net;
  weft_net_serve_config_t cfg;
  char bind[64];
  char root[512];
  struct lws_context *ctx;
  struct lws_vhost *vhost;
  struct lws_protocols protocols[3];
  struct lws_http_mount mount;
  serve_conn **conns; /* [max_sessions] */
  uint8_t *welcome;   /* LWS_PRE + the welcome */
  size_t welcome_len;
  uint32_t flushed; /* the build handed to the connections last */
  weft_net_serve_stats_t stats;
};

int weft_net_transport_available(void) {
  return 1;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void serve_log(weft_net_serve_t *s, const char *fmt, ...) {
  char line[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (s->cfg.log)
    s->cfg.log(s->cfg.log_user, line);
  else
    fprintf(stderr, "weft-net: %s\n", line);
}

/* Marks @p c to be closed with @p why at its next writable callback
 * (libwebsockets closes a connection only from inside its callbacks). */
static void conn_doom(serve_conn *c, const char *why) {
  if (!c->close)
    c->close = why;
  lws_callback_on_writable(c->wsi);
}

/* A new WebSocket connection: a free slot, a session, its buffers. */
static int conn_open(weft_net_serve_t *s, serve_conn *c, struct lws *wsi) {
  memset(c, 0, sizeof *c);
  c->srv = s;
  c->wsi = wsi;
  c->slot = UINT32_MAX;
  uint32_t i = 0;
  while (i < s->cfg.max_sessions && s->conns[i])
    i++;
  if (i == s->cfg.max_sessions ||
      weft_net_session_open(s->net, &c->session) != 0) {
    s->stats.refused++;
    serve_log(s, "connection refused: the server is full");
    return -1;
  }
  c->in = malloc(s->cfg.max_message);
  if (!c->in) {
    weft_net_session_close(s->net, c->session);
    serve_log(s, "connection refused: out of memory");
    return -1;
  }
  c->slot = i;
  s->conns[i] = c;
  c->welcome_due = true;
  c->last_rx = now_s();
  c->last_sent = s->flushed;
  s->stats.accepted++;
  s->stats.open++;
  serve_log(s, "session %08x opened", c->session);
  lws_callback_on_writable(wsi);
  return 0;
}

static void conn_closed(weft_net_serve_t *s, serve_conn *c) {
  /* libwebsockets zeroes the per-session data: srv is NULL for a
   * connection that never reached ESTABLISHED. */
  if (!c->srv || c->slot == UINT32_MAX)
    return; /* refused, or never opened */
  serve_log(s, "session %08x closed: %s", c->session,
            c->close ? c->close : "the client left");
  weft_net_session_close(s->net, c->session);
  s->conns[c->slot] = NULL;
  c->slot = UINT32_MAX;
  free(c->in);
  c->in = NULL;
  s->stats.open--;
  s->stats.closed++;
}

/* One fragment of a client message; the whole message goes to the
 * session's decoder. Returns nonzero to close the connection. */
static int conn_receive(weft_net_serve_t *s, serve_conn *c, const void *in,
                        size_t len) {
  struct lws *wsi = c->wsi;
  if (c->close)
    return 0; /* closing: the rest is ignored */
  if (!lws_frame_is_binary(wsi)) {
    s->stats.malformed++;
    conn_doom(c, "a text frame (messages are binary)");
    return 0;
  }
  if (len > s->cfg.max_message - c->in_len) {
    s->stats.malformed++;
    conn_doom(c, "a message over max_message");
    return 0;
  }
  memcpy(c->in + c->in_len, in, len);
  c->in_len += (uint32_t)len;
  if (!lws_is_final_fragment(wsi) || lws_remaining_packet_payload(wsi))
    return 0;
  c->last_rx = now_s();
  uint32_t n = c->in_len;
  c->in_len = 0;
  if (weft_net_receive(s->net, c->session, c->in, n) != 0) {
    /* The reason lives in the net's buffer until the next call: copy it
     * into the log now and close with a fixed one. */
    s->stats.malformed++;
    serve_log(s, "session %08x: %s", c->session, weft_net_last_error(s->net));
    conn_doom(c, "a malformed message");
  }
  return 0;
}

/* Writes the welcome, then the waiting packet; one write per callback,
 * as libwebsockets asks. Returns nonzero to close the connection. */
static int conn_writable(weft_net_serve_t *s, serve_conn *c) {
  if (c->close) {
    lws_close_reason(c->wsi, LWS_CLOSE_STATUS_POLICY_VIOLATION,
                     (unsigned char *)c->close, strlen(c->close));
    return -1;
  }
  uint8_t *p;
  size_t n;
  if (c->welcome_due) {
    p = s->welcome + LWS_PRE;
    n = s->welcome_len;
    c->welcome_due = false;
  } else if (c->out_due) {
    /* The session's newest packet, written in place: its data has
     * WEFT__NET_PACKET_HEADROOM writable bytes before it. A build since
     * the flush made it newer, and it counts as sent for that build. */
    const void *data;
    c->out_due = false;
    if (weft_net_packet(s->net, c->session, &data, &n) != 0 || !n)
      return 0;
    if (n > s->cfg.max_outgoing) {
      conn_doom(c, "a packet over max_outgoing");
      return 0;
    }
    p = (uint8_t *)(uintptr_t)data;
    c->last_sent = s->net->builds;
    s->stats.packets++;
  } else {
    return 0;
  }
  if (lws_write(c->wsi, p, n, LWS_WRITE_BINARY) < (int)n) {
    c->close = "the socket failed";
    return -1;
  }
  s->stats.bytes_out += n;
  if (c->out_due)
    lws_callback_on_writable(c->wsi);
  return 0;
}

static int serve_callback(struct lws *wsi, enum lws_callback_reasons reason,
                          void *user, void *in, size_t len) {
  struct lws_vhost *vh = lws_get_vhost(wsi);
  weft_net_serve_t *s = vh ? lws_get_vhost_user(vh) : NULL;
  serve_conn *c = user;
  if (!s)
    return 0;
  switch (reason) {
  case LWS_CALLBACK_ESTABLISHED:
    return conn_open(s, c, wsi);
  case LWS_CALLBACK_CLOSED:
    conn_closed(s, c);
    return 0;
  case LWS_CALLBACK_RECEIVE:
    return conn_receive(s, c, in, len);
  case LWS_CALLBACK_SERVER_WRITEABLE:
    return !c->srv || c->slot == UINT32_MAX ? -1 : conn_writable(s, c);
  default:
    return 0;
  }
}

/* Hands the last build's packet to every session that has not had it. */
static void serve_flush(weft_net_serve_t *s) {
  weft_net_stats_t st;
  weft_net_stats(s->net, &st);
  if (st.builds == s->flushed)
    return;
  s->flushed = st.builds;
  for (uint32_t i = 0; i < s->cfg.max_sessions; i++) {
    serve_conn *c = s->conns[i];
    const void *data;
    size_t len;
    if (!c || c->close || c->last_sent == st.builds ||
        weft_net_packet(s->net, c->session, &data, &len) != 0 || !len)
      continue;
    c->last_sent = st.builds;
    if (len > s->cfg.max_outgoing) {
      conn_doom(c, "a packet over max_outgoing");
      continue;
    }
    s->stats.replaced += c->out_due;
    c->out_due = true;
    lws_callback_on_writable(c->wsi);
  }
}

/* Closes the sessions that have sent nothing for idle_timeout_s. */
static void serve_idle(weft_net_serve_t *s) {
  double t = now_s();
  for (uint32_t i = 0; i < s->cfg.max_sessions; i++) {
    serve_conn *c = s->conns[i];
    if (c && !c->close && t - c->last_rx > (double)s->cfg.idle_timeout_s) {
      s->stats.idle++;
      conn_doom(c, "idle");
    }
  }
}

/* Whether a connection has something to write and a socket that takes
 * it. */
static bool serve_writes_due(const weft_net_serve_t *s) {
  for (uint32_t i = 0; i < s->cfg.max_sessions; i++) {
    const serve_conn *c = s->conns[i];
    if (c && (c->out_due || c->welcome_due || c->close) &&
        !lws_send_pipe_choked(c->wsi))
      return true;
  }
  return false;
}

int weft_net_serve_run(weft_net_serve_t *s, uint32_t wait_ms) {
  if (!s)
    return WEFT_EINVAL;
  serve_flush(s);
  serve_idle(s);
  weft__net_service(s->ctx, wait_ms);
  /* A tick that ran late leaves no wait: more rounds, while a connection
   * whose socket takes bytes still has a packet to write, so that the
   * tick's packets go out before the next build replaces them. */
  for (uint32_t round = 0; round < 16 && serve_writes_due(s); round++)
    weft__net_service(s->ctx, 0);
  return 0;
}

/* The configuration with its defaults filled in; 0 or WEFT_EINVAL. */
static int serve_config(weft_net_serve_t *s,
                        const weft_net_serve_config_t *in) {
  if (in)
    s->cfg = *in;
  weft_net_serve_config_t *c = &s->cfg;
  const weft_net_config_t *nc = &s->net->cfg;
  if (!c->max_sessions || c->max_sessions > nc->max_sessions)
    c->max_sessions = nc->max_sessions;
  if (!c->max_message)
    c->max_message = WEFT_NET_MAX_CLIENT_MESSAGE;
  if (!c->max_outgoing)
    c->max_outgoing = nc->max_packet;
  if (!c->idle_timeout_s)
    c->idle_timeout_s = 10;
  snprintf(s->bind, sizeof s->bind, "%s", c->bind ? c->bind : "127.0.0.1");
  c->bind = s->bind;
  if (c->http_root) {
    if (strlen(c->http_root) >= sizeof s->root)
      return WEFT_EINVAL;
    snprintf(s->root, sizeof s->root, "%s", c->http_root);
    c->http_root = s->root;
  }
  return c->max_message > WEFT_NET_MAX_CLIENT_MESSAGE * 64u ? WEFT_EINVAL : 0;
}

/* The protocols: HTTP files (when asked), then "weft-net". */
static void serve_protocols(weft_net_serve_t *s,
                            struct lws_context_creation_info *ci) {
  s->protocols[0] =
      (struct lws_protocols){"http", lws_callback_http_dummy, 0, 0, 0, NULL, 0};
  /* tx_packet_size: libwebsockets writes in pieces of this size (of
   * rx_buffer_size, the small client message bound, when zero). */
  s->protocols[1] = (struct lws_protocols){
      "weft-net", serve_callback, sizeof(serve_conn), s->cfg.max_message, 0,
      NULL,       65536};
  ci->protocols = s->protocols;
  if (s->cfg.http_root) {
    s->mount.mountpoint = "/";
    s->mount.mountpoint_len = 1;
    s->mount.origin = s->root;
    s->mount.def = "index.html";
    s->mount.origin_protocol = LWSMPRO_FILE;
    ci->mounts = &s->mount;
  }
}

int weft_net_serve_create(weft_net_t *net, const weft_net_serve_config_t *cfg,
                          weft_net_serve_t **out) {
  if (!net || !out)
    return WEFT_EINVAL;
  *out = NULL;
  weft_net_serve_t *s = calloc(1, sizeof *s);
  if (!s)
    return WEFT_ENOMEM;
  s->net = net;
  int rc = serve_config(s, cfg);
  if (rc) {
    free(s);
    snprintf(net->error, sizeof net->error,
             "weft_net_serve: http_root or max_message out of range");
    return rc;
  }
  const void *wel;
  weft_net_welcome(net, &wel, &s->welcome_len);
  s->conns = calloc(s->cfg.max_sessions, sizeof *s->conns);
  s->welcome = malloc(LWS_PRE + s->welcome_len);
  if (!s->conns || !s->welcome) {
    weft_net_serve_destroy(s);
    return WEFT_ENOMEM;
  }
  memcpy(s->welcome + LWS_PRE, wel, s->welcome_len);
  weft_net_stats_t st;
  weft_net_stats(net, &st);
  s->flushed = st.builds;
  weft__net_lws_log();
  struct lws_context_creation_info ci;
  memset(&ci, 0, sizeof ci);
  ci.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS;
  /* Every connection is a descriptor: the table's size bounds them (with
   * room for the listener and connections still in their handshake). */
  ci.fd_limit_per_thread = s->cfg.max_sessions + 16u;
  ci.timeout_secs = s->cfg.idle_timeout_s;
  ci.pt_serv_buf_size = 65536;
  s->ctx = lws_create_context(&ci);
  if (!s->ctx) {
    weft_net_serve_destroy(s);
    snprintf(net->error, sizeof net->error,
             "weft_net_serve: cannot create the libwebsockets context");
    return WEFT_EIO;
  }
  ci.port = s->cfg.port;
  ci.iface = s->cfg.bind;
  ci.user = s;
  ci.vhost_name = "weft";
  serve_protocols(s, &ci);
  s->vhost = lws_create_vhost(s->ctx, &ci);
  if (!s->vhost) {
    weft_net_serve_destroy(s);
    snprintf(net->error, sizeof net->error,
             "weft_net_serve: cannot listen on %s:%u",
             cfg && cfg->bind ? cfg->bind : "127.0.0.1", cfg ? cfg->port : 0u);
    return WEFT_EIO;
  }
  *out = s;
  return 0;
}

uint16_t weft_net_serve_port(const weft_net_serve_t *s) {
  return s && s->vhost ? (uint16_t)lws_get_vhost_listen_port(s->vhost) : 0;
}

int weft_net_serve_stats(const weft_net_serve_t *s,
                         weft_net_serve_stats_t *out) {
  if (!s || !out)
    return WEFT_EINVAL;
  *out = s->stats;
  return 0;
}

void weft_net_serve_destroy(weft_net_serve_t *s) {
  if (!s)
    return;
  /* Destroying the context closes every connection through the callback,
   * which closes their sessions. */
  if (s->ctx)
    lws_context_destroy(s->ctx);
  for (uint32_t i = 0; s->conns && i < s->cfg.max_sessions; i++)
    if (s->conns[i])
      conn_closed(s, s->conns[i]);
  free(s->conns);
  free(s->welcome);
  free(s);
}
