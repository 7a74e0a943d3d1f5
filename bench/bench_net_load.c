/* SPDX-License-Identifier: MIT */
/*
 * net/load/<clients>: weft::net serving weft-sim's arena (100k entities,
 * 10k with --quick) to 1,000 WebSocket clients (100 with --quick) over
 * loopback, on a pool of two workers.
 *
 * The server is this thread. Each tick it runs the simulation tick
 * (weft_world_progress(): the baseline side), copies the moved positions
 * into the replicated component (the adapter weft-sim --serve has too:
 * the arena's positions are SoA and not tracked; timed apart, on neither
 * side), then the NetworkTick (the work side): weft_net_stamp(),
 * weft_net_build() with the sessions on the pool and the
 * weft_net_serve_run() that writes the packets (its wall time, with this
 * thread's CPU time in it printed beside). The two sides alternate
 * tick by tick; the row's ratio is the median of the per-tick
 * NetworkTick / sim-tick ratios, target <= 1 (the "NetworkTick
 * with 1,000 sessions costs less than the simulation tick itself on two
 * workers"). Its value is the NetworkTick per session, the baseline's the
 * sim tick per session.
 *
 * The clients are one weft_net_client_t set on a thread of their own:
 * every session applies each packet to its mirror and acknowledges it,
 * and moves its view (radius 32 over cells of 16, about 260 entities)
 * by a seeded random step every 4 packets. Between
 * ticks, untimed, the server services the sockets until every client has
 * applied the tick (the idle part of a real server's frame), so the
 * clients' work overlaps the timed sides as little as it can on two
 * CPUs. That wait's CPU time on this thread (the clients' acks and
 * views applied, and the polls of a thousand sockets every half
 * millisecond while it waits) is printed beside the row, on neither
 * side. At the end every
 * client asks for its view's digest and compares it with its mirror: the row
 * prints "mirrors matched K/N" and exits 1 when one diverged.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <weft.h>
#include <weft/net.h>

#include "bench_systems.h"
#include "harness.h"

#define LOAD_DT (1.0 / 60.0)
#define LOAD_CELL 16.0f
#define LOAD_RADIUS 32.0f
#define LOAD_MOVE_EVERY 4u

/* The replicated state of an arena entity: where it is. */
typedef struct load_net_t {
  float x, y;
} load_net_t;

typedef struct load_row_t {
  weft_entity_t e;
  float x, y;
} load_row_t;

/* Samples of one tick, in nanoseconds: wall clock, but for the wait,
 * which is this thread's CPU time servicing the sockets between ticks
 * (its sleeps do not count). */
typedef struct load_tick_t {
  double sim, sync, stamp, build, serve, wait_cpu, serve_cpu;
} load_tick_t;

typedef struct load_t {
  /* server side (this thread) */
  bench_arena_side_t arena;
  weft_component_t net_c;
  weft_query_t *fresh, *moved;
  load_row_t *rows;
  size_t nrows, cap;
  weft_net_t *net;
  weft_net_serve_t *srv;
  uint64_t tick;
  /* client side (its thread) */
  uint32_t clients;
  uint16_t port;
  float side;
  float *vx, *vy; /* each client's view centre */
  uint64_t rng;
  weft_net_client_t *set;
  /* between the two */
  _Atomic uint64_t min_tick; /* the oldest tick any open client holds */
  _Atomic uint32_t open;     /* client sessions open */
  _Atomic int phase;         /* 0 move, 1 check, 2 stop */
  _Atomic int checked;       /* 1 once every check is decided */
  _Atomic uint32_t matched, differed, lost;
  _Atomic int failed; /* the client thread could not start */
} load_t;

static double cpu_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ---- the replicated copy of the positions ------------------------------ */

static void rows_push(load_t *l, weft_entity_t e, float x, float y) {
  if (l->nrows == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 4096;
    load_row_t *p = realloc(l->rows, cap * sizeof *p);
    if (!p)
      bench_die("growing the sync rows", WEFT_ENOMEM);
    l->rows = p;
    l->cap = cap;
  }
  l->rows[l->nrows++] = (load_row_t){e, x, y};
}

/* Rows of @p q whose replicated copy is missing (@p moved false) or
 * differs from the position. */
static void collect(load_t *l, weft_query_t *q, bool moved) {
  weft_iter_t it;
  l->nrows = 0;
  for (weft_query_iter(q, &it); weft_iter_next(&it);) {
    const float *x = weft_iter_field(&it, 0, 0);
    const float *y = weft_iter_field(&it, 0, 1);
    const load_net_t *n = moved ? it.columns[1] : NULL;
    for (uint32_t i = 0; i < it.count; i++)
      if (!n || n[i].x != x[i] || n[i].y != y[i])
        rows_push(l, it.entities[i], x[i], y[i]);
  }
}

/* Copies the positions into the replicated component, writing only the
 * rows that moved so that their dirty bits are the tick's changes. */
static void sync_net(load_t *l) {
  weft_world_t *w = l->arena.world;
  collect(l, l->fresh, false);
  for (size_t i = 0; i < l->nrows; i++) {
    load_net_t v = {l->rows[i].x, l->rows[i].y};
    bench_check(weft_add(w, l->rows[i].e, l->net_c, &v), "weft_add");
  }
  collect(l, l->moved, true);
  for (size_t i = 0; i < l->nrows; i++) {
    load_net_t *v = weft_get_mut(w, l->rows[i].e, l->net_c);
    if (v) {
      v->x = l->rows[i].x;
      v->y = l->rows[i].y;
    }
  }
}

/* ---- the clients' thread ------------------------------------------------ */

static float load_step(load_t *l) {
  return (float)(bench_rng_next(&l->rng) % 17) - 8.0f;
}

static float clamp_view(const load_t *l, float v) {
  float lo = LOAD_RADIUS, hi = l->side - LOAD_RADIUS;
  return v < lo ? lo : v > hi ? hi : v;
}

static int send_view(load_t *l, uint32_t i) {
  weft_net_client_msg_t m = {.type = WEFT_NET_VIEW,
                             .x = l->vx[i],
                             .y = l->vy[i],
                             .radius = LOAD_RADIUS};
  return weft_net_client_send(l->set, i, &m);
}

/* After each packet: every LOAD_MOVE_EVERY packets the view takes a
 * step of its random walk (while the run moves). */
static int on_packet(void *user, uint32_t i, uint64_t tick) {
  load_t *l = user;
  if (tick % LOAD_MOVE_EVERY != i % LOAD_MOVE_EVERY ||
      atomic_load_explicit(&l->phase, memory_order_relaxed) != 0)
    return 0;
  l->vx[i] = clamp_view(l, l->vx[i] + load_step(l));
  l->vy[i] = clamp_view(l, l->vy[i] + load_step(l));
  return send_view(l, i);
}

/* Publishes the oldest tick the open clients hold; counts the checks. */
static bool clients_scan(load_t *l, bool checking) {
  uint64_t min = UINT64_MAX;
  uint32_t open = 0, match = 0, differ = 0, lost = 0;
  for (uint32_t i = 0; i < l->clients; i++) {
    weft_net_client_state_t st;
    weft_net_client_state(l->set, i, &st);
    if (st.status == 1) {
      open++;
      if (st.welcomed && st.tick < min)
        min = st.tick;
    }
    match += st.check == WEFT_NET_CHECK_MATCH;
    differ += st.check == WEFT_NET_CHECK_DIFFER;
    lost += st.status < 0;
  }
  atomic_store(&l->open, open);
  atomic_store(&l->min_tick, min == UINT64_MAX ? 0 : min);
  if (!checking)
    return false;
  atomic_store(&l->matched, match);
  atomic_store(&l->differed, differ);
  atomic_store(&l->lost, lost);
  return match + differ + lost == l->clients;
}

static void *clients_main(void *arg) {
  load_t *l = arg;
  weft_net_client_config_t cc = {.port = l->port,
                                 .sessions = l->clients,
                                 .max_entities = 4096,
                                 .on_packet = on_packet,
                                 .user = l};
  if (weft_net_client_new(&cc, &l->set) != 0) {
    atomic_store(&l->failed, 1);
    return NULL;
  }
  weft_net_client_msg_t hello = {.type = WEFT_NET_HELLO,
                                 .version = WEFT_NET_PROTOCOL_VERSION};
  for (uint32_t i = 0; i < l->clients; i++) {
    l->vx[i] = clamp_view(l, (float)(bench_rng_next(&l->rng) % 100000) * 1e-5f *
                                 l->side);
    l->vy[i] = clamp_view(l, (float)(bench_rng_next(&l->rng) % 100000) * 1e-5f *
                                 l->side);
    if (weft_net_client_send(l->set, i, &hello) || send_view(l, i))
      atomic_store(&l->failed, 1);
  }
  bool asked = false;
  while (atomic_load(&l->phase) < 2) {
    weft_net_client_run(l->set, 1);
    bool checking = atomic_load(&l->phase) == 1;
    if (checking && !asked) {
      for (uint32_t i = 0; i < l->clients; i++)
        (void)weft_net_client_check(l->set, i); /* a closed one: lost */
      asked = true;
    }
    if (clients_scan(l, checking))
      atomic_store(&l->checked, 1);
  }
  weft_net_client_free(l->set);
  return NULL;
}

/* ---- the server --------------------------------------------------------- */

/* Descriptors: two per client (both ends are in this process), and room
 * for the rest. Raised to the hard limit when the soft one is short. */
static void load_fds(uint32_t clients) {
  struct rlimit rl;
  rlim_t need = 2u * clients + 256u;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= need)
    return;
  rl.rlim_cur = rl.rlim_max < need ? rl.rlim_max : need;
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < need) {
    fprintf(stderr,
            "weft-bench: net/load needs %llu descriptors, RLIMIT_NOFILE "
            "allows %llu (raise the hard limit: ulimit -Hn)\n",
            (unsigned long long)need, (unsigned long long)rl.rlim_cur);
    exit(1);
  }
}

/* The server's session lines: a thousand opens and closes say nothing the
 * row does not. */
static void load_log(void *user, const char *line) {
  (void)user;
  (void)line;
}

static void load_open(load_t *l, uint32_t n, uint32_t clients) {
  memset(l, 0, sizeof *l);
  load_fds(clients);
  bench_arena_open(&l->arena, 2, false, n);
  weft_world_t *w = l->arena.world;
  weft_field_desc_t f[] = {WEFT_FIELD(load_net_t, x),
                           WEFT_FIELD(load_net_t, y)};
  weft_component_desc_t d = WEFT_COMPONENT_DESC(load_net_t);
  d.name = "bench.NetPos";
  d.fields = f;
  d.field_count = 2;
  d.flags = WEFT_COMPONENT_TRACK_DIRTY;
  bench_check(weft_component_register(w, &d, &l->net_c), "register");
  weft_query_desc_t q = {.include = {l->arena.scene.std.position},
                         .exclude = {l->net_c}};
  bench_check(weft_query_create(w, &q, &l->fresh), "query");
  q = (weft_query_desc_t){.include = {l->arena.scene.std.position, l->net_c}};
  bench_check(weft_query_create(w, &q, &l->moved), "query");
  l->side = l->arena.scene.side;
  weft_net_config_t nc = {.components = &l->net_c,
                          .component_count = 1,
                          .position = l->net_c,
                          .cell_size = LOAD_CELL,
                          .max_radius = LOAD_RADIUS,
                          .max_sessions = clients + 16,
                          .max_known = 1024,
                          .max_behind = 32,
                          .max_packet = 1u << 20,
                          .pool = l->arena.pool};
  bench_check(weft_net_create(w, &nc, &l->net), "weft_net_create");
  weft_net_serve_config_t sc = {
      .max_sessions = clients + 16, .idle_timeout_s = 600, .log = load_log};
  int rc = weft_net_serve_create(l->net, &sc, &l->srv);
  if (rc) {
    fprintf(stderr, "weft-bench: net/load: %s\n", weft_net_last_error(l->net));
    bench_die("weft_net_serve_create", rc);
  }
  l->port = weft_net_serve_port(l->srv);
  l->clients = clients;
  l->vx = calloc(clients, sizeof *l->vx);
  l->vy = calloc(clients, sizeof *l->vy);
  if (!l->vx || !l->vy)
    bench_die("client views", WEFT_ENOMEM);
  l->rng = 0x5eed;
}

static void load_close(load_t *l) {
  weft_net_serve_destroy(l->srv);
  weft_net_destroy(l->net);
  weft_query_destroy(l->fresh);
  weft_query_destroy(l->moved);
  free(l->rows);
  free(l->vx);
  free(l->vy);
  bench_arena_close(&l->arena);
}

/* One tick: the sim tick, the copy, the NetworkTick; then, untimed, the
 * sockets until every open client holds this tick (or 0.5 s passed). */
static void load_tick(load_t *l, load_tick_t *t) {
  double t0 = bench_now_ns();
  bench_check(weft_world_progress(l->arena.world, LOAD_DT), "progress");
  double t1 = bench_now_ns();
  sync_net(l);
  double t2 = bench_now_ns();
  ++l->tick;
  bench_check(weft_net_stamp(l->net, l->tick), "weft_net_stamp");
  double t3 = bench_now_ns();
  bench_check(weft_net_build(l->net, l->tick), "weft_net_build");
  double t4 = bench_now_ns(), s0 = cpu_now_ns();
  bench_check(weft_net_serve_run(l->srv, 0), "weft_net_serve_run");
  double t5 = bench_now_ns(), s1 = cpu_now_ns();
  double c0 = cpu_now_ns();
  double until = bench_now_ns() + 5e8;
  while (atomic_load(&l->min_tick) < l->tick && bench_now_ns() < until)
    weft_net_serve_run(l->srv, 1);
  if (t)
    *t = (load_tick_t){t1 - t0, t2 - t1,           t3 - t2, t4 - t3,
                       t5 - t4, cpu_now_ns() - c0, s1 - s0};
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n ? (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2])) : 0;
}

/* Every pass's ticks, for the medians over all of them. */
static load_tick_t *load_samples;
static size_t load_nsamples, load_cap;

static void load_keep(const load_tick_t *t, size_t n) {
  if (load_nsamples + n > load_cap) {
    size_t cap = (load_nsamples + n) * 2;
    load_tick_t *p = realloc(load_samples, cap * sizeof *p);
    if (!p)
      bench_die("samples", WEFT_ENOMEM);
    load_samples = p;
    load_cap = cap;
  }
  memcpy(load_samples + load_nsamples, t, n * sizeof *t);
  load_nsamples += n;
}

/* Starts the clients and waits until all are connected and welcomed. */
static pthread_t load_connect(load_t *l, const char *name) {
  pthread_t th;
  if (pthread_create(&th, NULL, clients_main, l) != 0)
    bench_die("starting the client thread", WEFT_ENOMEM);
  double until = bench_now_ns() + 60e9;
  weft_net_serve_stats_t st;
  do {
    weft_net_serve_run(l->srv, 5);
    weft_net_serve_stats(l->srv, &st);
  } while ((st.open < l->clients || atomic_load(&l->open) < l->clients) &&
           !atomic_load(&l->failed) && bench_now_ns() < until);
  if (st.open < l->clients || atomic_load(&l->failed)) {
    fprintf(stderr,
            "\nweft-bench: %s: %u of %u clients connected (%llu refused)\n",
            name, st.open, l->clients, (unsigned long long)st.refused);
    exit(1);
  }
  return th;
}

/* The end: every client checks its mirror while ticks go on. Exits
 * unless every mirror matched. */
static void load_check(load_t *l, pthread_t th, const char *name) {
  atomic_store(&l->phase, 1);
  for (uint32_t k = 0; k < 600 && !atomic_load(&l->checked); k++)
    load_tick(l, NULL);
  atomic_store(&l->phase, 2);
  pthread_join(th, NULL);
  uint32_t m = atomic_load(&l->matched);
  fprintf(stderr, "%-28s    mirrors matched %u/%u\n", name, m, l->clients);
  if (m != l->clients) {
    fprintf(stderr,
            "\nweft-bench: %s: MIRRORS DIVERGED: %u differ, %u lost, %u "
            "undecided\n",
            name, atomic_load(&l->differed), atomic_load(&l->lost),
            l->clients - m - atomic_load(&l->differed) - atomic_load(&l->lost));
    exit(1);
  }
}

/* Records the row from every pass's ticks and prints where the time
 * goes. */
static void load_report(bench_ctx_t *ctx, const char *name, load_t *l,
                        double bytes) {
  size_t n = load_nsamples;
  double *v = malloc(9 * n * sizeof *v);
  if (!v)
    bench_die("samples", WEFT_ENOMEM);
  double *sim = v, *net = v + n, *ratio = v + 2 * n, *sync = v + 3 * n,
         *stamp = v + 4 * n, *build = v + 5 * n, *serve = v + 6 * n,
         *wait = v + 7 * n, *serve_cpu = v + 8 * n;
  for (size_t i = 0; i < n; i++) {
    const load_tick_t *t = &load_samples[i];
    sim[i] = t->sim;
    net[i] = t->stamp + t->build + t->serve;
    ratio[i] = net[i] / t->sim;
    sync[i] = t->sync;
    stamp[i] = t->stamp;
    build[i] = t->build;
    serve[i] = t->serve;
    wait[i] = t->wait_cpu;
    serve_cpu[i] = t->serve_cpu;
  }
  weft_net_stats_t ns;
  weft_net_stats(l->net, &ns);
  bench_result_t r;
  memset(&r, 0, sizeof r);
  snprintf(r.name, sizeof r.name, "%s", name);
  snprintf(r.baseline, sizeof r.baseline, "sim_tick_2w");
  r.unit = "ns/session";
  r.n = l->clients;
  r.rounds = (uint32_t)n;
  r.ratio = median(ratio, n);
  r.ratio_min = ratio[0];
  r.ratio_max = ratio[n - 1];
  double net_ns = median(net, n), sim_ns = median(sim, n);
  r.value = net_ns / l->clients;
  r.baseline_value = sim_ns / l->clients;
  r.target_kind = BENCH_TARGET_RATIO;
  r.target = 1.0;
  bench_record(ctx, &r);
  fprintf(stderr,
          "%-28s    NetworkTick %.2f ms (stamp %.2f, build %.2f, serve_run "
          "%.2f, of it %.2f ms this thread's CPU) vs sim tick %.2f ms; copy "
          "to the replicated component %.2f ms (neither side)\n",
          name, net_ns * 1e-6, median(stamp, n) * 1e-6, median(build, n) * 1e-6,
          median(serve, n) * 1e-6, median(serve_cpu, n) * 1e-6, sim_ns * 1e-6,
          median(sync, n) * 1e-6);
  fprintf(stderr,
          "%-28s    %u sessions, %u replicated: %.0f ns/session, %.1f "
          "ns/replicated entity, %.0f bytes/client/tick, %zu ticks; "
          "between ticks %.2f ms of this thread's CPU servicing the "
          "sockets (acks, views, polls; neither side)\n",
          name, l->clients, ns.replicated, net_ns / l->clients,
          net_ns / (ns.replicated ? ns.replicated : 1), bytes, n,
          median(wait, n) * 1e-6);
  free(v);
}

/* Called by bench/main.c where weft::net is built (WEFT_BENCH_NET). */
void bench_net_load(bench_ctx_t *ctx);
void bench_net_load(bench_ctx_t *ctx) {
  uint32_t clients = ctx->quick ? 100u : 1000u;
  uint32_t n = ctx->quick ? 10000u : 100000u;
  uint32_t ticks = ctx->quick ? 30u : 60u;
  char name[48];
  snprintf(name, sizeof name, "net/load/%u", clients);
  if (!bench_selected(ctx, name))
    return;
  if (!weft_net_transport_available()) {
    fprintf(stderr, "weft-bench: %s skipped: weft::net has no transport\n",
            name);
    return;
  }
  static load_t l;
  load_open(&l, n, clients);
  sync_net(&l);
  pthread_t th = load_connect(&l, name);
  for (uint32_t k = 0; k < 5; k++) /* every client learns its view */
    load_tick(&l, NULL);
  weft_net_serve_stats_t s0, s1;
  weft_net_serve_stats(l.srv, &s0);
  load_tick_t *t = calloc(ticks, sizeof *t);
  if (!t)
    bench_die("samples", WEFT_ENOMEM);
  for (uint32_t k = 0; k < ticks; k++)
    load_tick(&l, &t[k]);
  weft_net_serve_stats(l.srv, &s1);
  load_keep(t, ticks);
  free(t);
  double bytes =
      (double)(s1.bytes_out - s0.bytes_out) / ((double)clients * ticks);
  load_check(&l, th, name);
  load_report(ctx, name, &l, bytes);
  load_close(&l);
  if (ctx->pass + 1 == ctx->passes) { /* the last pass: the samples go */
    free(load_samples);
    load_samples = NULL;
    load_nsamples = load_cap = 0;
  }
}
