/* SPDX-License-Identifier: MIT */
/*
 * The replication server: its configuration checks, the welcome it gives
 * clients, its sessions' lifetimes, the client messages it accepts (the
 * only input a client has: its view, its acks, a digest request) and the
 * network tick that builds every session's packet on the pool.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "net/net_internal.h"

/* Records a runtime error in the server's last error and returns code. */
static int net_fail(weft_net_t *net, int code, const char *msg) {
  snprintf(net->error, sizeof net->error, "%s", msg);
  return code;
}

static int check_components(weft_world_t *world, const weft_net_config_t *c,
                            weft_component_info_t *pos) {
  if (!c->components || c->component_count < 1 ||
      c->component_count > WEFT_NET_MAX_COMPONENTS)
    return weft_world_fail(world, WEFT_EINVAL,
                           "weft_net: 1 to 64 replicated components");
  for (uint32_t i = 0; i < c->component_count; i++) {
    weft_component_info_t info;
    if (weft_component_info(world, c->components[i], &info) != 0)
      return weft_world_fail(world, WEFT_ENOCOMP,
                             "weft_net: replicated component %u is unknown",
                             c->components[i]);
    if (info.flags & WEFT_COMPONENT_RELATION)
      return weft_world_fail(world, WEFT_EINVAL,
                             "weft_net: relation '%s' cannot be replicated",
                             info.name);
    if (info.size && !(info.flags & WEFT_COMPONENT_TRACK_DIRTY))
      return weft_world_fail(world, WEFT_EINVAL,
                             "weft_net: '%s' is not WEFT_COMPONENT_TRACK_DIRTY",
                             info.name);
    for (uint32_t j = 0; j < i; j++)
      if (c->components[j] == c->components[i])
        return weft_world_fail(world, WEFT_EINVAL,
                               "weft_net: '%s' is listed twice", info.name);
  }
  if (weft_component_info(world, c->position, pos) != 0)
    return weft_world_fail(world, WEFT_ENOCOMP,
                           "weft_net: the position component is unknown");
  if (pos->size < 8 || (pos->flags & WEFT_COMPONENT_SOA))
    return weft_world_fail(world, WEFT_EINVAL,
                           "weft_net: the position needs floats x, y first "
                           "(8 bytes or more, not SoA)");
  return 0;
}

static int check_limits(weft_world_t *world, const weft_net_config_t *c) {
  if (!isfinite(c->cell_size) || !(c->cell_size > 0) ||
      !isfinite(c->max_radius) || !(c->max_radius > 0))
    return weft_world_fail(world, WEFT_EINVAL,
                           "weft_net: cell size and max radius must be "
                           "finite and positive");
  double side = 2.0 * c->max_radius / c->cell_size + 2.0;
  if (side * side > 65536.0)
    return weft_world_fail(world, WEFT_EINVAL,
                           "weft_net: a view of max radius would touch more "
                           "than 65536 cells");
  if (c->max_sessions < 1 || c->max_sessions > 65535 || c->max_known < 1 ||
      c->max_known > (1u << 24) || c->max_behind < 1 ||
      c->max_behind > WEFT_NET_MAX_BEHIND || c->max_packet < 256 ||
      c->max_packet > WEFT_NET_MAX_PACKET)
    return weft_world_fail(world, WEFT_EINVAL,
                           "weft_net: max_sessions 1..65535, max_known "
                           "1..2^24, max_behind 1..63, max_packet 256..16 MiB");
  return 0;
}

/* The welcome: schema sizes plus the entity codec table of the
 * replicated components, for the client's layout check. */
static int make_welcome(weft_net_t *net) {
  weft_entity_codec_t *codec = NULL;
  weft_entity_codec_config_t cc = {net->comps, net->cfg.component_count};
  int rc = weft_entity_codec_new(net->world, &cc, &codec);
  size_t tlen = 0;
  if (!rc) {
    /* Asked with no room, it says the size (and WEFT_ELIMIT). */
    rc = weft_entity_codec_table(codec, NULL, 0, &tlen);
    if (rc == WEFT_ELIMIT && tlen > 0)
      rc = 0;
  }
  void *table = rc ? NULL : malloc(tlen ? tlen : 1);
  if (!rc && !table)
    rc = WEFT_ENOMEM;
  if (!rc)
    rc = weft_entity_codec_table(codec, table, tlen, &tlen);
  weft_entity_codec_free(codec);
  if (!rc) {
    net->schema.table = table;
    net->schema.table_len = (uint32_t)tlen;
    net->welcome_len = weft__net_welcome_size(&net->schema);
    net->welcome = weft__alloc(&net->alloc, net->welcome_len, 16);
    if (!net->welcome)
      rc = WEFT_ENOMEM;
  }
  if (!rc) {
    weft__net_w w = {net->welcome, net->welcome + net->welcome_len};
    weft__net_welcome_write(&w, &net->schema);
    net->schema.table = net->welcome + net->welcome_len - tlen;
  }
  free(table);
  return rc;
}

static int make_queries(weft_net_t *net) {
  weft_query_desc_t d;
  memset(&d, 0, sizeof d);
  d.include[0] = net->cfg.position;
  int rc = weft_query_create(net->world, &d, &net->pos_query);
  for (uint32_t k = 0; !rc && k < net->cfg.component_count; k++) {
    memset(&d, 0, sizeof d);
    d.include[0] = net->comps[k];
    if (net->comps[k] != net->cfg.position)
      d.include[1] = net->cfg.position;
    rc = weft_query_create(net->world, &d, &net->comp_query[k]);
  }
  return rc;
}

int weft_net_create(weft_world_t *world, const weft_net_config_t *cfg,
                    weft_net_t **out) {
  if (!world || !cfg || !out)
    return WEFT_EINVAL;
  *out = NULL;
  weft_component_info_t pos;
  int rc = check_components(world, cfg, &pos);
  if (!rc)
    rc = check_limits(world, cfg);
  if (rc)
    return rc;
  weft_net_t *net = calloc(1, sizeof *net);
  if (!net)
    return WEFT_ENOMEM;
  net->world = world;
  net->cfg = *cfg;
  net->pos_size = pos.size;
  memcpy(net->comps, cfg->components,
         cfg->component_count * sizeof *cfg->components);
  net->cfg.components = net->comps;
  net->schema.version = WEFT_NET_PROTOCOL_VERSION;
  net->schema.component_count = cfg->component_count;
  net->schema.max_packet = cfg->max_packet;
  net->schema.cell_size = cfg->cell_size;
  for (uint32_t k = 0; k < cfg->component_count; k++) {
    weft_component_info_t info;
    weft_component_info(world, net->comps[k], &info);
    net->schema.sizes[k] = info.size;
  }
  uint32_t all = weft__net_values_size(&net->schema, ~0ull);
  if (all > 0xffff * 64u || (uint64_t)all + WEFT__NET_TICK_HEADER +
                                    WEFT__NET_LEARN_HEADER +
                                    WEFT__NET_DIGEST_SIZE >
                                cfg->max_packet) {
    free(net);
    return weft_world_fail(world, WEFT_EINVAL,
                           "weft_net: max_packet %u cannot hold one learn of "
                           "every replicated component",
                           cfg->max_packet);
  }
  net->sessions =
      weft__calloc(&net->alloc, cfg->max_sessions * sizeof *net->sessions, 16);
  net->events =
      weft__calloc(&net->alloc, WEFT__NET_MAX_EVENTS * sizeof *net->events, 16);
  net->event_bytes = weft__alloc(&net->alloc, WEFT__NET_EVENT_BYTES, 16);
  rc = (!net->sessions || !net->events || !net->event_bytes) ? WEFT_ENOMEM : 0;
  if (!rc)
    rc = weft__net_repl_init(net);
  if (!rc)
    rc = make_welcome(net);
  if (!rc)
    rc = make_queries(net);
  if (rc) {
    weft_net_destroy(net);
    return rc;
  }
  *out = net;
  return 0;
}

void weft_net_destroy(weft_net_t *net) {
  if (!net)
    return;
  weft__net_uninstall(net);
  for (uint32_t i = 0; net->sessions && i < net->cfg.max_sessions; i++)
    weft__net_session_free(&net->sessions[i]);
  if (net->pos_query)
    weft_query_destroy(net->pos_query);
  for (uint32_t k = 0; k < net->cfg.component_count; k++)
    if (net->comp_query[k])
      weft_query_destroy(net->comp_query[k]);
  weft__net_repl_free(&net->repl);
  weft__free(net->sessions, 0, 16);
  weft__free(net->events, 0, 16);
  weft__free(net->event_bytes, 0, 16);
  weft__free(net->welcome, 0, 16);
  free(net);
}

int weft_net_welcome(const weft_net_t *net, const void **data, size_t *len) {
  if (!net || !data || !len)
    return WEFT_EINVAL;
  *data = net->welcome;
  *len = net->welcome_len;
  return 0;
}

int weft_net_stamp(weft_net_t *net, uint64_t tick) {
  if (!net)
    return WEFT_EINVAL;
  /* A stamp after a build must be newer than it: an ack of that build
   * would otherwise cover a change it never carried. */
  if (net->built && tick <= net->last_build)
    return net_fail(net, WEFT_EINVAL,
                    "weft_net_stamp: tick not after the last build");
  if (net->stamped && tick < net->last_stamp)
    return net_fail(net, WEFT_EINVAL, "weft_net_stamp: tick went back");
  int rc = weft__net_repl_stamp(net, (uint32_t)tick);
  if (rc)
    return net_fail(net, rc, "weft_net_stamp: out of memory");
  net->last_stamp = tick;
  net->stamped = true;
  return 0;
}

/* The open session named by @p id, or NULL (a stale id). */
static weft__net_session *session_of(const weft_net_t *net, uint32_t id) {
  uint32_t index = id & 0xffffu, gen = id >> 16;
  if (index >= net->cfg.max_sessions)
    return NULL;
  weft__net_session *s = &net->sessions[index];
  return (s->gen & 1) && s->gen == gen ? s : NULL;
}

int weft_net_session_open(weft_net_t *net, uint32_t *id) {
  if (!net || !id)
    return WEFT_EINVAL;
  if (net->open >= net->cfg.max_sessions)
    return net_fail(net, WEFT_ELIMIT, "weft_net: max_sessions are open");
  uint32_t i = 0;
  while (net->sessions[i].gen & 1)
    i++;
  weft__net_session *s = &net->sessions[i];
  int rc = weft__net_session_init(net, s);
  if (rc)
    return net_fail(net, rc, "weft_net: out of memory for a session");
  s->gen = (s->gen + 1) & 0xffffu; /* odd: open */
  net->open++;
  *id = s->gen << 16 | i;
  return 0;
}

int weft_net_session_close(weft_net_t *net, uint32_t id) {
  weft__net_session *s = net ? session_of(net, id) : NULL;
  if (!s)
    return net ? net_fail(net, WEFT_ESTALE, "weft_net: stale session id")
               : WEFT_EINVAL;
  weft__net_session_free(s);
  s->gen = (s->gen + 1) & 0xffffu;
  net->open--;
  return 0;
}

int weft_net_receive(weft_net_t *net, uint32_t id, const void *msg,
                     size_t len) {
  if (!net)
    return WEFT_EINVAL;
  weft__net_session *s = session_of(net, id);
  if (!s)
    return net_fail(net, WEFT_ESTALE, "weft_net: stale session id");
  weft_net_client_msg_t m;
  const char *why = "";
  int rc = weft_net_decode_client(msg, len, &m, &why);
  if (rc)
    return net_fail(net, rc, why);
  if (!s->hello && m.type != WEFT_NET_HELLO)
    return net_fail(net, WEFT_EFORMAT, "weft_net: message before HELLO");
  switch (m.type) {
  case WEFT_NET_HELLO:
    if (m.version != WEFT_NET_PROTOCOL_VERSION)
      return net_fail(net, WEFT_EVERSION,
                      "weft_net: HELLO of another protocol version");
    s->hello = true;
    break;
  case WEFT_NET_VIEW:
    if (m.radius > net->cfg.max_radius)
      return net_fail(net, WEFT_EFORMAT,
                      "weft_net: VIEW radius over the server's limit");
    s->x = m.x;
    s->y = m.y;
    s->radius = m.radius;
    s->has_view = true;
    break;
  case WEFT_NET_ACK:
    weft__net_session_ack(net, s, m.tick);
    break;
  default:
    s->digest_pending = true;
    s->digest_entity = m.entity;
    break;
  }
  return 0;
}

typedef struct build_ctx {
  weft_net_t *net;
  uint64_t tick;
} build_ctx;

static void build_range(void *arg, uint32_t begin, uint32_t end,
                        uint32_t worker) {
  (void)worker;
  build_ctx *b = arg;
  for (uint32_t i = begin; i < end; i++)
    if (b->net->sessions[i].gen & 1)
      weft__net_session_build(b->net, &b->net->sessions[i], b->tick);
}

int weft_net_build(weft_net_t *net, uint64_t tick) {
  if (!net)
    return WEFT_EINVAL;
  return weft__net_build_on(net, tick, WEFT_WORKER_EXTERNAL);
}

int weft__net_build_on(weft_net_t *net, uint64_t tick, uint32_t self) {
  if ((net->built && tick <= net->last_build) ||
      (net->stamped && tick < net->last_stamp))
    return net_fail(net, WEFT_EINVAL,
                    "weft_net_build: tick not after the last build, or "
                    "before the last stamp");
  build_ctx b = {net, tick};
  if (net->cfg.pool)
    weft_pool_parallel_for(net->cfg.pool, self, 0, net->cfg.max_sessions, 1,
                           build_range, &b);
  else
    build_range(&b, 0, net->cfg.max_sessions, 0);
  /* Recorded after the sessions' builds: their scans apply the acks of
   * the last 64 packets, whose ticks the slot of this one would replace
   * (the oldest's). */
  net->build_ticks[net->builds & 63] = tick;
  net->builds++;
  net->last_build = tick;
  net->built = true;
  net->event_count = 0;
  net->event_used = 0;
  return 0;
}

int weft_net_packet(const weft_net_t *net, uint32_t id, const void **data,
                    size_t *len) {
  const weft__net_session *s = net ? session_of(net, id) : NULL;
  if (!s || !data || !len)
    return s ? WEFT_EINVAL : WEFT_ESTALE;
  *data = s->packet;
  *len = s->packet_len;
  return 0;
}

int weft_net_session_digest(const weft_net_t *net, uint32_t id,
                            uint64_t *digest, uint32_t *count) {
  const weft__net_session *s = net ? session_of(net, id) : NULL;
  if (!s || !digest || !count)
    return s ? WEFT_EINVAL : WEFT_ESTALE;
  *digest = weft__net_view_digest(net, s, count);
  return 0;
}

int weft_net_event(weft_net_t *net, weft_entity_t a, weft_entity_t b,
                   uint32_t type, const void *payload, uint32_t len) {
  if (!net || (len && !payload) || len > WEFT_NET_MAX_EVENT)
    return WEFT_EINVAL;
  if (net->event_count == WEFT__NET_MAX_EVENTS ||
      WEFT__NET_EVENT_BYTES - net->event_used < len)
    return net_fail(net, WEFT_ELIMIT,
                    "weft_net_event: the tick's buffer is full");
  weft__net_event *ev = &net->events[net->event_count++];
  ev->a = a;
  ev->b = b;
  ev->type = type;
  ev->len = len;
  ev->offset = net->event_used;
  if (len)
    memcpy(net->event_bytes + net->event_used, payload, len);
  net->event_used += len;
  return 0;
}

int weft_net_stats(const weft_net_t *net, weft_net_stats_t *out) {
  if (!net || !out)
    return WEFT_EINVAL;
  memset(out, 0, sizeof *out);
  out->allocs = net->alloc.allocs;
  out->alloc_bytes = net->alloc.bytes;
  out->sessions = net->open;
  out->builds = net->builds;
  out->replicated = net->repl.count;
  return 0;
}

const char *weft_net_last_error(const weft_net_t *net) {
  return net ? net->error : "";
}
