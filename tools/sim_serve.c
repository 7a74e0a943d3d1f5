/* SPDX-License-Identifier: MIT */
/*
 * weft-sim --serve: the scenario replicated to weft::net clients.
 *
 * weft::net replicates tracked-dirty, array-of-structs components, and
 * the scenarios' positions are SoA and untracked: each tick, after the
 * fixed step, this file copies every position into a replicated
 * "weft-sim.Net" component (x, y and what the entity is, for the
 * colours), writing only the rows that moved so that their dirty bits
 * are the changes. Then it stamps and builds the tick's packets
 * (sessions in parallel on the world's pool) and services the sockets
 * until the next tick is due (ticks at the simulation's rate, 60 a
 * second).
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft.h>

#include "sim_serve.h"

static bool parse_u(const char *s, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = s && *s ? strtod(s, &end) : NAN;
  if (!s || !*s || errno || *end || !(v >= lo && v <= hi))
    return false;
  *out = v;
  return true;
}

const char *sim_serve_option(const char *name, const char *val,
                             sim_serve_opts_t *o) {
  double v;
  bool whole = parse_u(val, 0, 1e7, &v) && v == floor(v);
  if (!strcmp(name, "serve")) {
    if (!whole || v > 65535)
      return "expected a port, 0..65535 (0: any free port)";
    o->on = true;
    o->port = (uint16_t)v;
  } else if (!strcmp(name, "serve-ticks")) {
    if (!whole)
      return "expected 0..10000000";
    o->ticks = (uint32_t)v;
  } else if (!strcmp(name, "serve-seconds")) {
    if (!parse_u(val, 0, 1e7, &v))
      return "expected 0..10000000 seconds";
    o->seconds = v;
  } else if (!strcmp(name, "serve-max-sessions")) {
    if (!whole || v < 1 || v > 65535)
      return "expected 1..65535";
    o->max_sessions = (uint32_t)v;
  } else if (!strcmp(name, "serve-web")) {
    if (!*val)
      return "expected a folder";
    o->web = val;
  } else if (!strcmp(name, "serve-bind")) {
    if (!*val)
      return "expected an address";
    o->bind = val;
  } else { /* serve-idle */
    if (!whole || v < 1 || v > 86400)
      return "expected 1..86400 seconds";
    o->idle_s = (uint32_t)v;
  }
  return NULL;
}

#ifdef WEFT_SIM_SERVE
#include <weft/net.h>

#ifndef SIM_WEB_DIR
#define SIM_WEB_DIR NULL
#endif

/* The replicated state of an entity. */
typedef struct sim_net_t {
  float x, y;
  uint32_t kind; /* 0 other, 1 unit, 2 turret, 3 projectile */
} sim_net_t;

/* A pending copy: an entity and its position. */
typedef struct sim_row_t {
  weft_entity_t e;
  float x, y;
} sim_row_t;

typedef struct sim_serve_t {
  sim_scene_t *scene;
  weft_world_t *w;
  weft_component_t net_c;
  weft_query_t *fresh; /* {position} without net_c */
  weft_query_t *moved; /* {position, net_c} */
  sim_row_t *rows;
  size_t nrows, cap;
} sim_serve_t;

/* SIGINT/SIGTERM: stop serving and clean up (a signal handler can only
 * reach a static). */
static volatile sig_atomic_t sim_stop;

static void on_signal(int sig) {
  (void)sig;
  sim_stop = 1;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int rows_push(sim_serve_t *s, weft_entity_t e, float x, float y) {
  if (s->nrows == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 4096;
    sim_row_t *p = realloc(s->rows, cap * sizeof *p);
    if (!p)
      return WEFT_ENOMEM;
    s->rows = p;
    s->cap = cap;
  }
  s->rows[s->nrows++] = (sim_row_t){e, x, y};
  return 0;
}

/* What an entity is, for the page's colours. */
static uint32_t kind_of(const sim_serve_t *s, weft_entity_t e) {
  const weft_std_t *d = &s->scene->std;
  if (weft_has(s->w, e, d->spawner))
    return 2;
  if (weft_has(s->w, e, d->lifetime))
    return 3;
  return weft_has(s->w, e, d->health) ? 1 : 0;
}

/* Collects the rows of @p q (position term 0, net_c term 1 when @p moved)
 * whose replicated copy is missing or differs. */
static int collect(sim_serve_t *s, weft_query_t *q, bool moved) {
  weft_iter_t it;
  s->nrows = 0;
  for (weft_query_iter(q, &it); weft_iter_next(&it);) {
    const float *x = weft_iter_field(&it, 0, 0);
    const float *y = weft_iter_field(&it, 0, 1);
    const sim_net_t *n = moved ? it.columns[1] : NULL;
    for (uint32_t i = 0; i < it.count; i++)
      if ((!n || n[i].x != x[i] || n[i].y != y[i]) &&
          rows_push(s, it.entities[i], x[i], y[i]))
        return WEFT_ENOMEM;
  }
  return 0;
}

/* Copies the positions into the replicated component (after the step). */
static int sync_net(sim_serve_t *s) {
  int rc = collect(s, s->fresh, false);
  for (size_t i = 0; i < s->nrows && !rc; i++) {
    sim_row_t *r = &s->rows[i];
    sim_net_t v = {r->x, r->y, kind_of(s, r->e)};
    rc = weft_add(s->w, r->e, s->net_c, &v);
  }
  if (!rc)
    rc = collect(s, s->moved, true);
  for (size_t i = 0; i < s->nrows && !rc; i++) {
    sim_row_t *r = &s->rows[i];
    sim_net_t *v = weft_get_mut(s->w, r->e, s->net_c);
    if (v) {
      v->x = r->x;
      v->y = r->y;
    }
  }
  return rc;
}

static int setup(sim_serve_t *s, sim_scene_t *scene) {
  s->scene = scene;
  s->w = scene->world;
  weft_field_desc_t f[] = {WEFT_FIELD(sim_net_t, x), WEFT_FIELD(sim_net_t, y),
                           WEFT_FIELD(sim_net_t, kind)};
  weft_component_desc_t d = WEFT_COMPONENT_DESC(sim_net_t);
  d.name = "weft-sim.Net";
  d.fields = f;
  d.field_count = 3;
  d.flags = WEFT_COMPONENT_TRACK_DIRTY;
  int rc = weft_component_register(s->w, &d, &s->net_c);
  weft_query_desc_t q = {.include = {scene->std.position},
                         .exclude = {s->net_c}};
  if (!rc)
    rc = weft_query_create(s->w, &q, &s->fresh);
  q = (weft_query_desc_t){.include = {scene->std.position, s->net_c}};
  if (!rc)
    rc = weft_query_create(s->w, &q, &s->moved);
  return rc;
}

static void print_stats(weft_net_serve_t *srv, uint32_t ticks) {
  weft_net_serve_stats_t st;
  weft_net_serve_stats(srv, &st);
  printf("weft-sim: served %u ticks: %llu sessions (%llu refused, %llu "
         "malformed, %llu idle), %llu packets, %llu bytes, %llu replaced "
         "unsent\n",
         ticks, (unsigned long long)st.accepted, (unsigned long long)st.refused,
         (unsigned long long)st.malformed, (unsigned long long)st.idle,
         (unsigned long long)st.packets, (unsigned long long)st.bytes_out,
         (unsigned long long)st.replaced);
}

/* The tick loop: step, copy, stamp, build, serve until the next tick. */
static int serve_loop(const sim_serve_opts_t *o, sim_serve_t *s,
                      weft_net_t *net, weft_net_serve_t *srv, double dt) {
  double t0 = now_s(), next = t0;
  uint32_t tick = 0;
  int rc = 0;
  while (!sim_stop && (!o->ticks || tick < o->ticks) &&
         (o->seconds <= 0 || now_s() - t0 < o->seconds)) {
    rc = weft_world_progress(s->w, dt);
    if (!rc)
      rc = sync_net(s);
    if (!rc)
      rc = weft_net_stamp(net, tick + 1);
    if (!rc)
      rc = weft_net_build(net, tick + 1);
    if (rc) {
      fprintf(stderr, "weft-sim: serving failed at tick %u: %s (%s)\n", tick,
              weft_strerror(rc), weft_net_last_error(net));
      break;
    }
    tick++;
    next += dt;
    double wait = next - now_s();
    weft_net_serve_run(srv, wait > 0 ? (uint32_t)(wait * 1000.0) : 0);
  }
  print_stats(srv, tick);
  return rc ? 1 : 0;
}

int sim_serve_run(const sim_serve_opts_t *o, sim_scene_t *scene, double dt) {
  sim_serve_t s = {0};
  int rc = setup(&s, scene);
  float side = scene->side > 0 ? scene->side : 1000.0f;
  weft_net_config_t nc = {.components = &s.net_c,
                          .component_count = 1,
                          .position = s.net_c,
                          .cell_size = side / 32.0f,
                          .max_radius = side,
                          .max_sessions =
                              o->max_sessions ? o->max_sessions : 64,
                          .max_known = 1u << 16,
                          .max_behind = 32,
                          .max_packet = 4u << 20,
                          /* Sessions build on the world's pool, from this
                           * thread between frames: as an external caller
                           * (weft_net_build()), which is safe whether or
                           * not this thread is the pool's worker 0 in the
                           * frames, since no frame runs meanwhile
                           * (test_net_session's pool_build_after_pipeline). */
                          .pool = weft_world_pool(scene->world)};
  weft_net_t *net = NULL;
  weft_net_serve_t *srv = NULL;
  if (!rc)
    rc = weft_net_create(s.w, &nc, &net);
  /* The page (tools/web) is served from the source tree unless
   * --serve-web names another folder. */
  weft_net_serve_config_t sc = {.port = o->port,
                                .bind = o->bind,
                                .idle_timeout_s = o->idle_s,
                                .http_root = o->web ? o->web : SIM_WEB_DIR};
  if (!rc)
    rc = weft_net_serve_create(net, &sc, &srv);
  int out = 1;
  if (rc) {
    fprintf(stderr, "weft-sim: cannot serve: %s (%s)\n", weft_strerror(rc),
            net ? weft_net_last_error(net) : weft_world_last_error(s.w));
  } else {
    printf("weft-sim: serving %s (side %g) on %s:%u\n",
           sim_kind_name(scene->kind), (double)side,
           o->bind ? o->bind : "127.0.0.1", weft_net_serve_port(srv));
    fflush(stdout);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    out = serve_loop(o, &s, net, srv, dt);
  }
  weft_net_serve_destroy(srv);
  weft_net_destroy(net);
  if (s.fresh)
    weft_query_destroy(s.fresh);
  if (s.moved)
    weft_query_destroy(s.moved);
  free(s.rows);
  return out;
}
#else

int sim_serve_run(const sim_serve_opts_t *o, sim_scene_t *scene, double dt) {
  (void)o;
  (void)scene;
  (void)dt;
  fprintf(stderr, "weft-sim: --serve needs weft::net (built with "
                  "-DWEFT_NET=OFF)\n");
  return 1;
}
#endif /* WEFT_SIM_SERVE */
