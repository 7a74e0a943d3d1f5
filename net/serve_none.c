/* SPDX-License-Identifier: MIT */
/*
 * The socket transport's entry points in a weft::net built without
 * libwebsockets: each says so and fails, so that programs link either way
 * and report the missing transport at run time.
 */
#include <stdio.h>

#include "net/net_internal.h"

int weft_net_transport_available(void) {
  return 0;
}

int weft_net_serve_create(weft_net_t *net, const weft_net_serve_config_t *cfg,
                          weft_net_serve_t **out) {
  (void)cfg;
  if (out)
    *out = NULL;
  if (net)
    snprintf(net->error, sizeof net->error,
             "weft_net_serve: weft::net was built without libwebsockets");
  return net && out ? WEFT_EIO : WEFT_EINVAL;
}

uint16_t weft_net_serve_port(const weft_net_serve_t *s) {
  (void)s;
  return 0;
}

int weft_net_serve_run(weft_net_serve_t *s, uint32_t wait_ms) {
  (void)s;
  (void)wait_ms;
  return WEFT_EINVAL;
}

int weft_net_serve_stats(const weft_net_serve_t *s,
                         weft_net_serve_stats_t *out) {
  (void)s;
  (void)out;
  return WEFT_EINVAL;
}

void weft_net_serve_destroy(weft_net_serve_t *s) {
  (void)s;
}

int weft_net_conn_open(const char *host, uint16_t port, uint32_t max_message,
                       weft_net_conn_fn on_message, void *user,
                       weft_net_conn_t **out) {
  (void)host;
  (void)port;
  (void)max_message;
  (void)on_message;
  (void)user;
  if (out)
    *out = NULL;
  return WEFT_EIO;
}

int weft_net_conn_send(weft_net_conn_t *c, const void *msg, size_t len) {
  (void)c;
  (void)msg;
  (void)len;
  return WEFT_EINVAL;
}

int weft_net_conn_run(weft_net_conn_t *c, uint32_t wait_ms) {
  (void)c;
  (void)wait_ms;
  return WEFT_EINVAL;
}

const char *weft_net_conn_error(const weft_net_conn_t *c) {
  (void)c;
  return "weft::net was built without libwebsockets";
}

void weft_net_conn_close(weft_net_conn_t *c) {
  (void)c;
}

int weft_net_client_new(const weft_net_client_config_t *cfg,
                        weft_net_client_t **out) {
  (void)cfg;
  if (out)
    *out = NULL;
  return WEFT_EIO;
}

int weft_net_client_run(weft_net_client_t *c, uint32_t wait_ms) {
  (void)c;
  (void)wait_ms;
  return WEFT_EINVAL;
}

int weft_net_client_send(weft_net_client_t *c, uint32_t session,
                         const weft_net_client_msg_t *m) {
  (void)c;
  (void)session;
  (void)m;
  return WEFT_EINVAL;
}

int weft_net_client_send_raw(weft_net_client_t *c, uint32_t session,
                             const void *bytes, size_t len) {
  (void)c;
  (void)session;
  (void)bytes;
  (void)len;
  return WEFT_EINVAL;
}

int weft_net_client_check(weft_net_client_t *c, uint32_t session) {
  (void)c;
  (void)session;
  return WEFT_EINVAL;
}

int weft_net_client_state(const weft_net_client_t *c, uint32_t session,
                          weft_net_client_state_t *out) {
  (void)c;
  (void)session;
  (void)out;
  return WEFT_EINVAL;
}

const weft_net_mirror_t *weft_net_client_mirror(const weft_net_client_t *c,
                                                uint32_t session) {
  (void)c;
  (void)session;
  return NULL;
}

const char *weft_net_client_error(const weft_net_client_t *c,
                                  uint32_t session) {
  (void)c;
  (void)session;
  return "weft::net was built without libwebsockets";
}

void weft_net_client_free(weft_net_client_t *c) {
  (void)c;
}
