/* SPDX-License-Identifier: MIT */
/*
 * weft::net sessions (net/session.c): the learn/forget bookkeeping against
 * an oracle of the seed's rules over random operation sequences; mirrors
 * that equal the server's view (digest) after a run over a link that
 * loses, delays and reorders packets and acks; a client that falls behind
 * and is reset; stale handles and stale session ids in late messages as
 * checked misses; malformed messages refused with a reason; the same
 * packets built on a pool as inline; session teardown freeing everything.
 */
#include "support/net_test.h"

#include <stdatomic.h>

#include "net/net_internal.h"

/* --- the seed's Session, as sets over a small universe ------------------ */

#define U 64u

/* The seed's knownEntities, pendingLearns, pendingForgets. One fix: its
 * learnEntity, cancelling a pending forget, returned without putting the
 * entity back in knownEntities, although the client still holds it (the
 * forget never went out), so that it would get no more deltas; here it is
 * known again. */
typedef struct oracle {
  bool known[U], learn[U], forget[U];
} oracle;

static void oracle_learn(oracle *o, uint32_t e) {
  if (o->forget[e]) {
    o->forget[e] = false;
    o->known[e] = true;
    return;
  }
  o->known[e] = true;
  o->learn[e] = true;
}

static void oracle_forget(oracle *o, uint32_t e) {
  if (o->learn[e]) {
    o->learn[e] = false;
    o->known[e] = false;
    return;
  }
  o->known[e] = false;
  o->forget[e] = true;
}

/* A packet went out: nothing is pending any more. */
static void oracle_send(oracle *o) {
  memset(o->learn, 0, sizeof o->learn);
  memset(o->forget, 0, sizeof o->forget);
}

static void check_against(const weft__net_session *s, const oracle *o,
                          const weft_entity_t *ids) {
  for (uint32_t e = 0; e < U; e++) {
    const weft__net_entry *x = weft__net_session_find(s, ids[e]);
    bool known = x && x->state != WEFT__NET_FORGETTING;
    bool learn = x && x->state == WEFT__NET_LEARNING && !x->sent_ever;
    bool forget = x && x->state == WEFT__NET_FORGETTING && !x->sent_ever;
    if (known != o->known[e] || learn != o->learn[e] || forget != o->forget[e])
      fail_msg("entity %u: known %d/%d pending learn %d/%d forget %d/%d", e,
               known, o->known[e], learn, o->learn[e], forget, o->forget[e]);
  }
}

static void test_net_session_learn_forget_oracle(void **state) {
  (void)state;
  nt_world x;
  nt_open(&x, NULL);
  weft__net_session s;
  memset(&s, 0, sizeof s);
  assert_int_equal(weft__net_session_init(x.net, &s), WEFT_OK);
  weft_entity_t ids[U];
  for (uint32_t e = 0; e < U; e++)
    ids[e] = wt_handle(e + 1, 2 * e + 1, 0);
  for (uint64_t seed = 1; seed <= 40; seed++) {
    wt_rng_t rng = wt_rng(seed);
    oracle o;
    memset(&o, 0, sizeof o);
    memset(s.table, 0, s.table_cap * sizeof *s.table);
    s.table_count = 0;
    for (uint32_t step = 0; step < 2000; step++) {
      uint32_t e = wt_below(&rng, U), op = wt_below(&rng, 10);
      weft__net_entry *xe = weft__net_session_find(&s, ids[e]);
      if (op < 4 && !o.known[e]) {
        /* Entered the view (the view pass learns what it does not know). */
        weft__net_session_learn(&s, xe, ids[e], 0);
        oracle_learn(&o, e);
      } else if (op < 8 && o.known[e]) {
        weft__net_session_forget(&s, xe);
        oracle_forget(&o, e);
      } else if (op == 9) {
        /* A packet: every entry's item goes out. */
        for (uint32_t i = 0; i < s.table_cap; i++)
          if (s.table[i].e)
            s.table[i].sent_ever = 1;
        oracle_send(&o);
      }
      check_against(&s, &o, ids);
    }
  }
  weft__net_session_free(&s);
  nt_close(&x);
}

/* --- end to end over a lossy link ---------------------------------------- */

#define N 300u
#define SESSIONS 3u

typedef struct e2e {
  nt_world x;
  weft_entity_t es[N];
  uint32_t ids[SESSIONS];
  weft_net_mirror_t *mirror[SESSIONS];
  nt_link down[SESSIONS], up[SESSIONS];
  wt_rng_t rng;
} e2e;

/* Spawns the entities and opens the sessions of a run of @p seed. */
static void e2e_fill(e2e *t, uint64_t seed) {
  t->rng = wt_rng(seed);
  for (uint32_t i = 0; i < N; i++)
    t->es[i] = nt_spawn(&t->x, (float)wt_below(&t->rng, 200),
                        (float)wt_below(&t->rng, 200), (int32_t)i);
  for (uint32_t s = 0; s < SESSIONS; s++) {
    t->ids[s] = nt_session(&t->x, 50.0f + 50.0f * (float)s, 100.0f, 40.0f);
    t->mirror[s] = nt_mirror(&t->x);
    t->down[s].rng = wt_rng(seed * 31 + s);
    t->up[s].rng = wt_rng(seed * 37 + s);
  }
}

static void e2e_open_with(e2e *t, uint64_t seed, weft_pool_t *pool,
                          uint32_t max_packet) {
  memset(t, 0, sizeof *t);
  nt_open_with(&t->x, pool, max_packet);
  e2e_fill(t, seed);
}

static void e2e_open(e2e *t, uint64_t seed, weft_pool_t *pool) {
  e2e_open_with(t, seed, pool, 0);
}

static void e2e_close(e2e *t) {
  for (uint32_t s = 0; s < SESSIONS; s++) {
    nt_link_free(&t->down[s]);
    nt_link_free(&t->up[s]);
    weft_net_mirror_free(t->mirror[s]);
    assert_int_equal(weft_net_session_close(t->x.net, t->ids[s]), WEFT_OK);
  }
  nt_close(&t->x);
}

/* One tick of random changes: moves, writes, tags added and removed,
 * despawns and spawns (a despawned slot's handle comes back newer). */
static void e2e_mutate(e2e *t) {
  weft_world_t *w = t->x.w;
  for (uint32_t k = 0; k < 40; k++) {
    uint32_t i = wt_below(&t->rng, N);
    weft_entity_t e = t->es[i];
    switch (wt_below(&t->rng, 6)) {
    case 0:
    case 1: {
      nt_pos p;
      assert_int_equal(weft_read(w, e, t->x.pos, &p), WEFT_OK);
      p.x += (float)wt_below(&t->rng, 21) - 10.0f;
      p.y += (float)wt_below(&t->rng, 21) - 10.0f;
      assert_int_equal(weft_set(w, e, t->x.pos, &p), WEFT_OK);
      break;
    }
    case 2: {
      int32_t hp = (int32_t)wt_below(&t->rng, 1000);
      assert_int_equal(weft_set(w, e, t->x.hp, &hp), WEFT_OK);
      break;
    }
    case 3:
      if (weft_add(w, e, t->x.mark, NULL) != WEFT_OK)
        assert_int_equal(weft_remove(w, e, t->x.mark), WEFT_OK);
      break;
    case 4:
      if (weft_remove(w, e, t->x.vel) != WEFT_OK) {
        nt_vel v = {1, 2};
        assert_int_equal(weft_add(w, e, t->x.vel, &v), WEFT_OK);
      }
      break;
    default:
      assert_int_equal(weft_despawn(w, e), WEFT_OK);
      t->es[i] = nt_spawn(&t->x, (float)wt_below(&t->rng, 200),
                          (float)wt_below(&t->rng, 200), 7);
      break;
    }
  }
}

/* Delivers what is due both ways: packets to mirrors (whose acks go up),
 * acks to the server. */
static void e2e_deliver(e2e *t) {
  uint64_t now = t->x.tick;
  for (uint32_t s = 0; s < SESSIONS; s++) {
    nt_msg m;
    while (nt_link_pop(&t->down[s], now, &m)) {
      uint8_t ack[WEFT_NET_MAX_CLIENT_MESSAGE];
      size_t ack_len = 0;
      int rc =
          weft_net_mirror_apply(t->mirror[s], m.bytes, m.len, ack, &ack_len);
      if (rc)
        fail_msg("mirror: %s", weft_net_mirror_last_error(t->mirror[s]));
      if (ack_len)
        nt_link_push(&t->up[s], now, ack, ack_len);
      free(m.bytes);
    }
    while (nt_link_pop(&t->up[s], now, &m)) {
      assert_int_equal(weft_net_receive(t->x.net, t->ids[s], m.bytes, m.len),
                       WEFT_OK);
      free(m.bytes);
    }
  }
}

/* One network tick: build, send every session's packet down. */
static void e2e_tick(e2e *t, bool build) {
  nt_step(&t->x, build);
  if (!build)
    return;
  for (uint32_t s = 0; s < SESSIONS; s++) {
    const void *p;
    size_t len;
    assert_int_equal(weft_net_packet(t->x.net, t->ids[s], &p, &len), WEFT_OK);
    nt_link_push(&t->down[s], t->x.tick - 1, p, len);
  }
  e2e_deliver(t);
}

/* Whether every mirror equals its session's view; with @p report, fails
 * naming the first that does not. */
static bool e2e_digests_equal(e2e *t, bool report) {
  for (uint32_t s = 0; s < SESSIONS; s++) {
    uint64_t d_server = 0;
    uint32_t n_server = 0, n_mirror = 0;
    assert_int_equal(
        weft_net_session_digest(t->x.net, t->ids[s], &d_server, &n_server),
        WEFT_OK);
    uint64_t d_mirror = weft_net_mirror_digest(t->mirror[s], &n_mirror);
    if (report && (n_server != n_mirror || d_server != d_mirror))
      fail_msg("session %u: server %u entities %016llx, mirror %u %016llx", s,
               n_server, (unsigned long long)d_server, n_mirror,
               (unsigned long long)d_mirror);
    if (n_server != n_mirror || d_server != d_mirror)
      return false;
    assert_true(n_server > 0); /* the views hold entities */
  }
  return true;
}

static void e2e_check_digests(e2e *t) {
  (void)e2e_digests_equal(t, true);
}

/* Runs @p ticks of chaos (network tick every second fixed step), then
 * makes the links lossless and prompt. */
static void e2e_run_chaos(e2e *t, uint32_t ticks, uint32_t loss,
                          uint32_t delay) {
  for (uint32_t s = 0; s < SESSIONS; s++) {
    t->down[s].loss_pct = t->up[s].loss_pct = loss;
    t->down[s].delay = t->up[s].delay = delay;
  }
  for (uint32_t i = 0; i < ticks; i++) {
    e2e_mutate(t);
    if (i % 17 == 0) {
      /* Views move too. */
      uint32_t s = wt_below(&t->rng, SESSIONS);
      weft_net_client_msg_t m = {.type = WEFT_NET_VIEW,
                                 .x = (float)wt_below(&t->rng, 200),
                                 .y = (float)wt_below(&t->rng, 200),
                                 .radius =
                                     20.0f + (float)wt_below(&t->rng, 30)};
      nt_send(&t->x, t->ids[s], &m);
    }
    e2e_tick(t, i % 2 == 1);
  }
  for (uint32_t s = 0; s < SESSIONS; s++) {
    t->down[s].loss_pct = t->up[s].loss_pct = 0;
    t->down[s].delay = t->up[s].delay = 0;
  }
}

/* Chaos, then calm: what is in flight lands, then one lossless packet
 * each, after which every mirror equals its view. */
static void e2e_run(e2e *t, uint32_t ticks, uint32_t loss, uint32_t delay) {
  e2e_run_chaos(t, ticks, loss, delay);
  for (uint32_t i = 0; i <= delay + 1; i++)
    e2e_tick(t, true); /* no changes: the stamps see none */
  e2e_check_digests(t);
}

static void test_net_session_mirror_equals_view_after_loss(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 4; seed++) {
    e2e *t = calloc(1, sizeof *t);
    assert_non_null(t);
    e2e_open(t, seed, NULL);
    e2e_run(t, 200, 25, 3);
    e2e_close(t);
    free(t);
  }
}

/* Packets too small for a view's changes: what does not fit waits (it is
 * not marked sent), and calm ticks catch up in a few packets. */
static void test_net_session_small_packets_catch_up(void **state) {
  (void)state;
  e2e *t = calloc(1, sizeof *t);
  assert_non_null(t);
  e2e_open_with(t, 11, NULL, 1024);
  e2e_run_chaos(t, 120, 20, 2);
  uint32_t calm = 0;
  while (!e2e_digests_equal(t, false)) {
    assert_true(++calm < 60);
    e2e_tick(t, true);
  }
  assert_true(calm > 1); /* it did take several packets */
  e2e_close(t);
  free(t);
}

/* A client whose acks never arrive is reset (a new epoch) after
 * max_behind packets, and its mirror, starting over, still converges. */
static void test_net_session_falls_behind_and_relearns(void **state) {
  (void)state;
  e2e *t = calloc(1, sizeof *t);
  assert_non_null(t);
  e2e_open(t, 9, NULL);
  e2e_run(t, 10, 0, 0);
  t->up[0].loss_pct = 100;
  uint32_t epoch0 = 0;
  for (uint32_t i = 0; i < 2 * 16 + 4; i++) {
    e2e_mutate(t);
    e2e_tick(t, true);
    t->up[0].loss_pct = 100;
  }
  const void *p;
  size_t len;
  assert_int_equal(weft_net_packet(t->x.net, t->ids[0], &p, &len), WEFT_OK);
  const void *wel;
  size_t wlen;
  weft_net_schema_t schema;
  assert_int_equal(weft_net_welcome(t->x.net, &wel, &wlen), WEFT_OK);
  assert_int_equal(weft_net_decode_welcome(wel, wlen, &schema, NULL), WEFT_OK);
  weft_net_reader_t r;
  assert_int_equal(weft_net_packet_open(&r, &schema, p, len, NULL), WEFT_OK);
  assert_true(r.epoch > epoch0); /* reset at least once */
  e2e_run(t, 20, 0, 0);
  e2e_close(t);
  free(t);
}

/* Builds on a pool of two workers write the same bytes as inline. */
static void test_net_session_pool_builds_same_packets(void **state) {
  (void)state;
  weft_pool_t *pool = NULL;
  weft_world_t *pw = wt_world_pooled(2, 0, &pool);
  weft_world_destroy(pw);
  e2e *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
  assert_non_null(a);
  assert_non_null(b);
  e2e_open(a, 5, NULL);
  e2e_open(b, 5, pool);
  for (uint32_t i = 0; i < 30; i++) {
    e2e_mutate(a);
    e2e_mutate(b);
    e2e_tick(a, true);
    e2e_tick(b, true);
    for (uint32_t s = 0; s < SESSIONS; s++) {
      const void *pa, *pb;
      size_t la, lb;
      assert_int_equal(weft_net_packet(a->x.net, a->ids[s], &pa, &la), 0);
      assert_int_equal(weft_net_packet(b->x.net, b->ids[s], &pb, &lb), 0);
      assert_int_equal(la, lb);
      assert_memory_equal(pa, pb, la);
    }
  }
  e2e_close(a);
  e2e_close(b);
  free(a);
  free(b);
  weft_pool_destroy(pool);
}

/* A read-only system over the hit points, spread over the pool: the
 * pipeline's jobs that run just before a build on the same pool. */
static int hp_reader(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  const int32_t *hp = chunk->columns[0];
  int32_t sum = 0;
  for (uint32_t i = 0; i < chunk->count; i++)
    sum += hp[i];
  atomic_uint *runs = ctx->user;
  atomic_fetch_add_explicit(runs, 1u + (sum == INT32_MIN),
                            memory_order_relaxed);
  return 0;
}

/* weft-sim --serve's setup: the world's pool takes the driving thread as
 * worker 0 (caller_participates, as weft-sim makes it), and the packets
 * are built on that pool from the same thread right after a pipeline
 * tick ran its jobs there. The bytes equal a serial build's. */
static void test_net_session_pool_build_after_pipeline(void **state) {
  (void)state;
  weft_pool_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.placement.workers = 2;
  pc.placement.caller_participates = true;
  weft_pool_t *pool = NULL;
  assert_int_equal(weft_pool_create(&pc, &pool), WEFT_OK);
  weft_world_config_t wc;
  memset(&wc, 0, sizeof wc);
  wc.world_tag = 42;
  wc.pool = pool;
  e2e *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
  assert_non_null(a);
  assert_non_null(b);
  e2e_open(a, 9, NULL);
  nt_open_world(&b->x, wt_world_new(&wc), pool, 0);
  e2e_fill(b, 9);
  weft_pipeline_config_t pl;
  memset(&pl, 0, sizeof pl);
  pl.fixed_dt = 0.1;
  pl.inline_rows = 1; /* every system to the pool */
  assert_int_equal(weft_pipeline_configure(b->x.w, &pl), WEFT_OK);
  atomic_uint runs;
  atomic_init(&runs, 0);
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "hp_reader";
  d.phase = WEFT_PHASE_FIXED_UPDATE;
  d.query.include[0] = b->x.hp;
  d.read[0] = b->x.hp;
  d.run = hp_reader;
  d.user = &runs;
  weft_system_t sys = 0;
  assert_int_equal(weft_system_register(b->x.w, &d, &sys), WEFT_OK);
  for (uint32_t i = 0; i < 30; i++) {
    e2e_mutate(a);
    e2e_mutate(b);
    e2e_tick(a, true);
    /* b: the stamp, a pipeline tick on the pool (it writes nothing
     * replicated), then the build on the pool from this thread. */
    assert_int_equal(weft_net_stamp(b->x.net, b->x.tick), WEFT_OK);
    assert_int_equal(weft_world_clear_dirty(b->x.w), WEFT_OK);
    assert_int_equal(weft_world_progress(b->x.w, 0.1), WEFT_OK);
    assert_int_equal(weft_net_build(b->x.net, b->x.tick), WEFT_OK);
    b->x.tick++;
    weft_world_set_tick(b->x.w, b->x.tick);
    for (uint32_t s = 0; s < SESSIONS; s++) {
      const void *pa, *pb;
      size_t la, lb;
      assert_int_equal(weft_net_packet(a->x.net, a->ids[s], &pa, &la), 0);
      assert_int_equal(weft_net_packet(b->x.net, b->ids[s], &pb, &lb), 0);
      assert_int_equal(la, lb);
      assert_memory_equal(pa, pb, la);
      nt_link_push(&b->down[s], b->x.tick - 1, pb, lb);
    }
    e2e_deliver(b);
  }
  /* The pipeline did run its jobs in between. */
  assert_true(atomic_load(&runs) > 0);
  e2e_check_digests(a);
  e2e_check_digests(b);
  e2e_close(a);
  e2e_close(b);
  free(a);
  free(b);
  weft_pool_destroy(pool);
}

/* Late client messages naming things that are gone: a digest request for
 * a despawned entity (its slot reused) is answered with a miss, an ack of
 * a tick never sent changes nothing, a closed session's id is stale. */
static void test_net_session_stale_handles_are_misses(void **state) {
  (void)state;
  nt_world x;
  nt_open(&x, NULL);
  weft_entity_t e = nt_spawn(&x, 5, 5, 1);
  uint32_t id = nt_session(&x, 5, 5, 20);
  weft_net_mirror_t *m = nt_mirror(&x);
  uint8_t ack[WEFT_NET_MAX_CLIENT_MESSAGE];
  size_t ack_len;
  const void *p;
  size_t len;
  nt_step(&x, true);
  assert_int_equal(weft_net_packet(x.net, id, &p, &len), WEFT_OK);
  assert_int_equal(weft_net_mirror_apply(m, p, len, ack, &ack_len), WEFT_OK);
  assert_int_equal(weft_net_receive(x.net, id, ack, ack_len), WEFT_OK);
  /* The entity dies; a new one takes its slot. */
  assert_int_equal(weft_despawn(x.w, e), WEFT_OK);
  weft_entity_t e2 = nt_spawn(&x, 5, 5, 2);
  assert_int_equal(weft_entity_index(e2), weft_entity_index(e));
  assert_true(e2 != e);
  weft_net_client_msg_t q = {.type = WEFT_NET_DIGEST_REQ, .entity = e};
  nt_send(&x, id, &q);
  /* An ack of a tick the server never built: ignored. */
  weft_net_client_msg_t bogus = {.type = WEFT_NET_ACK, .tick = 999999};
  nt_send(&x, id, &bogus);
  nt_step(&x, true);
  assert_int_equal(weft_net_packet(x.net, id, &p, &len), WEFT_OK);
  assert_int_equal(weft_net_mirror_apply(m, p, len, ack, &ack_len), WEFT_OK);
  weft_net_digest_reply_t d;
  weft_net_mirror_last_digest(m, &d);
  assert_int_equal(d.entity, e);
  assert_int_equal(d.flags, WEFT_NET_DIGEST_MISS);
  /* The mirror followed: the old handle is gone, the new one there. */
  int32_t hp = 0;
  assert_int_equal(weft_net_mirror_read(m, e, NT_HP, &hp), WEFT_ESTALE);
  assert_int_equal(weft_net_mirror_read(m, e2, NT_HP, &hp), WEFT_OK);
  assert_int_equal(hp, 2);
  /* The live one answers. */
  q.entity = e2;
  nt_send(&x, id, &q);
  nt_step(&x, true);
  assert_int_equal(weft_net_packet(x.net, id, &p, &len), WEFT_OK);
  assert_int_equal(weft_net_mirror_apply(m, p, len, ack, &ack_len), WEFT_OK);
  weft_net_mirror_last_digest(m, &d);
  assert_int_equal(d.flags, 0);
  assert_int_equal(d.count, 1);
  /* A closed session's id is a checked miss everywhere. */
  assert_int_equal(weft_net_session_close(x.net, id), WEFT_OK);
  assert_int_equal(weft_net_receive(x.net, id, ack, ack_len), WEFT_ESTALE);
  assert_int_equal(weft_net_packet(x.net, id, &p, &len), WEFT_ESTALE);
  assert_int_equal(weft_net_session_close(x.net, id), WEFT_ESTALE);
  weft_net_mirror_free(m);
  nt_close(&x);
}

/* In the pipeline (weft_net_install()): a system writes hit points every
 * fixed step, the stamp and the build run as systems, with sessions built
 * on the world's pool; packets go out after each frame over a lossy link,
 * and the mirrors equal their views once the link is calm. */
static int hp_writer(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  int32_t *hp = chunk->columns[0];
  for (uint32_t i = 0; i < chunk->count; i++)
    if ((chunk->entities[i] + ctx->tick) % 7 == 0)
      hp[i] += 1;
  return 0;
}

static void test_net_session_runs_in_the_pipeline(void **state) {
  (void)state;
  weft_pool_t *pool = NULL;
  weft_world_t *w = wt_world_pooled(2, 0, &pool);
  e2e *t = calloc(1, sizeof *t);
  assert_non_null(t);
  nt_open_world(&t->x, w, pool, 0);
  weft_pipeline_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.fixed_dt = 0.1;
  pc.net_dt = 0.2;
  assert_int_equal(weft_pipeline_configure(w, &pc), WEFT_OK);
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "hp";
  d.phase = WEFT_PHASE_FIXED_UPDATE;
  d.query.include[0] = t->x.hp;
  d.run = hp_writer;
  weft_system_t sys = 0;
  assert_int_equal(weft_system_register(w, &d, &sys), WEFT_OK);
  assert_int_equal(weft_net_install(t->x.net), WEFT_OK);
  assert_int_equal(weft_net_install(t->x.net), WEFT_EINVAL);
  t->rng = wt_rng(21);
  for (uint32_t i = 0; i < N; i++)
    t->es[i] = nt_spawn(&t->x, (float)wt_below(&t->rng, 200),
                        (float)wt_below(&t->rng, 200), (int32_t)i);
  for (uint32_t s = 0; s < SESSIONS; s++) {
    t->ids[s] = nt_session(&t->x, 60.0f * (float)s + 40, 100.0f, 45.0f);
    t->mirror[s] = nt_mirror(&t->x);
    t->down[s].rng = wt_rng(100 + s);
    t->up[s].rng = wt_rng(200 + s);
  }
  for (uint32_t frame = 0; frame < 60; frame++) {
    bool calm = frame >= 50;
    for (uint32_t s = 0; s < SESSIONS; s++) {
      t->down[s].loss_pct = t->up[s].loss_pct = calm ? 0 : 20;
      t->down[s].delay = t->up[s].delay = calm ? 0 : 2;
    }
    if (!calm)
      e2e_mutate(t);
    weft_net_stats_t st0, st1;
    assert_int_equal(weft_net_stats(t->x.net, &st0), WEFT_OK);
    assert_int_equal(weft_world_progress(w, 0.2), WEFT_OK);
    assert_int_equal(weft_net_stats(t->x.net, &st1), WEFT_OK);
    assert_int_equal(st1.builds - st0.builds, 1); /* one network tick */
    t->x.tick++;
    for (uint32_t s = 0; s < SESSIONS; s++) {
      const void *p;
      size_t len;
      assert_int_equal(weft_net_packet(t->x.net, t->ids[s], &p, &len), 0);
      nt_link_push(&t->down[s], t->x.tick, p, len);
    }
    e2e_deliver(t);
  }
  e2e_check_digests(t);
  e2e_close(t); /* the server's destroy removes its systems */
  weft_pool_destroy(pool);
  free(t);
}

/* Malformed and out-of-order messages are refused with a reason; the
 * session stays as it was. */
static void test_net_session_refuses_bad_messages(void **state) {
  (void)state;
  nt_world x;
  nt_open(&x, NULL);
  uint32_t id = 0;
  assert_int_equal(weft_net_session_open(x.net, &id), WEFT_OK);
  uint8_t buf[WEFT_NET_MAX_CLIENT_MESSAGE];
  weft_net_client_msg_t v = {
      .type = WEFT_NET_VIEW, .x = 1, .y = 1, .radius = 5};
  int n = weft_net_encode_client(&v, buf, sizeof buf);
  assert_int_equal(weft_net_receive(x.net, id, buf, (size_t)n), WEFT_EFORMAT);
  assert_non_null(strstr(weft_net_last_error(x.net), "before HELLO"));
  weft_net_client_msg_t h = {.type = WEFT_NET_HELLO, .version = 7};
  n = weft_net_encode_client(&h, buf, sizeof buf);
  assert_int_equal(weft_net_receive(x.net, id, buf, (size_t)n), WEFT_EVERSION);
  h.version = WEFT_NET_PROTOCOL_VERSION;
  nt_send(&x, id, &h);
  v.radius = 1000; /* over max_radius */
  n = weft_net_encode_client(&v, buf, sizeof buf);
  assert_int_equal(weft_net_receive(x.net, id, buf, (size_t)n), WEFT_EFORMAT);
  assert_non_null(strstr(weft_net_last_error(x.net), "radius"));
  const uint8_t junk[3] = {0x77, 1, 2};
  assert_int_equal(weft_net_receive(x.net, id, junk, 3), WEFT_EFORMAT);
  assert_int_equal(weft_net_receive(x.net, id, junk, 0), WEFT_EFORMAT);
  /* Limits: max_sessions. */
  uint32_t more[8];
  uint32_t opened = 0;
  while (opened < 8 && weft_net_session_open(x.net, &more[opened]) == 0)
    opened++;
  assert_int_equal(opened, 7);
  assert_int_equal(weft_net_session_open(x.net, &more[0]), WEFT_ELIMIT);
  nt_close(&x); /* frees the open sessions */
}

/* The per-session memory bound: a view over more entities than max_known
 * gets max_known of them, the mirror agrees with the server on which, and
 * a view moved away forgets them all. */
static void test_net_session_known_set_is_bounded(void **state) {
  (void)state;
  nt_world x;
  nt_open(&x, NULL);
  weft_net_destroy(x.net);
  weft_net_config_t c = nt_config(&x);
  c.max_known = 10;
  assert_int_equal(weft_net_create(x.w, &c, &x.net), WEFT_OK);
  for (uint32_t i = 0; i < 100; i++)
    nt_spawn(&x, (float)(i % 10), (float)(i / 10), (int32_t)i);
  uint32_t id = nt_session(&x, 5, 5, 20);
  weft_net_mirror_t *m = nt_mirror(&x);
  for (uint32_t t = 0; t < 6; t++) {
    if (t == 3) {
      /* Away from everything: all forgotten. */
      weft_net_client_msg_t v = {
          .type = WEFT_NET_VIEW, .x = 500, .y = 500, .radius = 20};
      nt_send(&x, id, &v);
    }
    nt_step(&x, true);
    const void *p;
    size_t len, alen;
    uint8_t ack[WEFT_NET_MAX_CLIENT_MESSAGE];
    assert_int_equal(weft_net_packet(x.net, id, &p, &len), WEFT_OK);
    assert_int_equal(weft_net_mirror_apply(m, p, len, ack, &alen), WEFT_OK);
    assert_int_equal(weft_net_receive(x.net, id, ack, alen), WEFT_OK);
    uint64_t ds;
    uint32_t ns, nm;
    assert_int_equal(weft_net_session_digest(x.net, id, &ds, &ns), WEFT_OK);
    assert_int_equal(weft_net_mirror_digest(m, &nm), ds);
    assert_int_equal(nm, ns);
    assert_int_equal(ns, t < 3 ? 10 : 0);
  }
  weft_net_mirror_free(m);
  nt_close(&x);
}

/* A view of 1,000 entities: the part of the session's table in use
 * starts small and doubles over the first builds (entities beyond three
 * quarters of it wait a build), without allocating; then the session
 * knows all of them and the mirror equals the server's view. */
static void test_net_session_table_grows_without_allocating(void **state) {
  (void)state;
  nt_world x;
  nt_open(&x, NULL);
  for (uint32_t i = 0; i < 1000; i++)
    nt_spawn(&x, (float)(i % 40) * 2.0f, (float)(i / 40) * 2.0f, (int32_t)i);
  uint32_t id = nt_session(&x, 40, 25, 60);
  weft_net_mirror_t *m = nt_mirror(&x);
  weft_net_stats_t st0, st1;
  assert_int_equal(weft_net_stats(x.net, &st0), WEFT_OK);
  uint32_t counts[8];
  for (uint32_t t = 0; t < 8; t++) {
    nt_step(&x, true);
    const void *p;
    size_t len, alen;
    uint8_t ack[WEFT_NET_MAX_CLIENT_MESSAGE];
    assert_int_equal(weft_net_packet(x.net, id, &p, &len), WEFT_OK);
    assert_int_equal(weft_net_mirror_apply(m, p, len, ack, &alen), WEFT_OK);
    assert_int_equal(weft_net_receive(x.net, id, ack, alen), WEFT_OK);
    uint64_t ds;
    assert_int_equal(weft_net_session_digest(x.net, id, &ds, &counts[t]),
                     WEFT_OK);
    uint32_t nm;
    assert_true(weft_net_mirror_digest(m, &nm) == ds);
    assert_int_equal(nm, counts[t]);
  }
  /* The first build could not take them all; the last ones know all. */
  assert_true(counts[0] < 1000);
  assert_int_equal(counts[7], 1000);
  assert_int_equal(weft_net_stats(x.net, &st1), WEFT_OK);
  assert_int_equal(st1.allocs, st0.allocs);
  assert_int_equal(st1.alloc_bytes, st0.alloc_bytes);
  weft_net_mirror_free(m);
  nt_close(&x);
}

/* Opening, using and closing sessions leaves nothing allocated (ASan's
 * leak check, and the server's counters: a reopened slot allocates the
 * same as the first). */
static void test_net_session_teardown_frees_everything(void **state) {
  (void)state;
  e2e *t = calloc(1, sizeof *t);
  assert_non_null(t);
  e2e_open(t, 3, NULL);
  e2e_run(t, 20, 10, 1);
  for (uint32_t round = 0; round < 3; round++) {
    assert_int_equal(weft_net_session_close(t->x.net, t->ids[1]), WEFT_OK);
    t->ids[1] = nt_session(&t->x, 100, 100, 30);
    weft_net_mirror_free(t->mirror[1]);
    t->mirror[1] = nt_mirror(&t->x);
    nt_link_free(&t->down[1]);
    nt_link_free(&t->up[1]);
    e2e_run(t, 10, 0, 0);
  }
  weft_net_stats_t st;
  assert_int_equal(weft_net_stats(t->x.net, &st), WEFT_OK);
  assert_int_equal(st.sessions, SESSIONS);
  e2e_close(t);
  free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_net_session_learn_forget_oracle),
      cmocka_unit_test(test_net_session_mirror_equals_view_after_loss),
      cmocka_unit_test(test_net_session_small_packets_catch_up),
      cmocka_unit_test(test_net_session_falls_behind_and_relearns),
      cmocka_unit_test(test_net_session_pool_builds_same_packets),
      cmocka_unit_test(test_net_session_pool_build_after_pipeline),
      cmocka_unit_test(test_net_session_runs_in_the_pipeline),
      cmocka_unit_test(test_net_session_stale_handles_are_misses),
      cmocka_unit_test(test_net_session_refuses_bad_messages),
      cmocka_unit_test(test_net_session_known_set_is_bounded),
      cmocka_unit_test(test_net_session_table_grows_without_allocating),
      cmocka_unit_test(test_net_session_teardown_frees_everything),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
