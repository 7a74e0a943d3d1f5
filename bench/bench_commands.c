/* SPDX-License-Identifier: MIT */
/*
 * commands: structural changes recorded into command buffers and applied
 * with weft_world_apply(), 1M entities (100k with --quick) with Position
 * and Velocity (vec3 each). Recording walks the chunks with a query and
 * sets one ordering key per chunk, WEFT_CMD_KEY(0, chunk, 0), as a system
 * job does. Every timed repetition includes recording and applying.
 *
 * add_remove/1t: one buffer records weft_cmd_add(B) for every entity, one
 * apply; then weft_cmd_remove(B) for every entity, one apply. Unit: ns per
 * command (2n per repetition); target <= 15 ns (absolute).
 *
 * add_remove/2t: the same, recorded by two persistent worker threads into
 * two buffers at once (worker t takes the t-th half of the chunks), then one
 * apply of both buffers on the owner thread. The workers are created once,
 * outside the timing, and are released and collected with two barriers per
 * recording phase; that hand-off (two barrier waits, a few microseconds) is
 * inside the timing. Same unit and target.
 *
 * The baseline of both is the least an archetype move costs, as in
 * add_remove.c: two plain tables (entity | pos | vel) and (entity | pos |
 * vel | B) of 64-byte aligned column arrays and an entity -> row index; each
 * move appends the row to the other table and swap-removes it from its
 * table. It moves rows in the order the commands name them (creation order,
 * which the swap-removes keep).
 *
 * spawn2: one buffer records n weft_cmd_spawn() with both components and
 * their values, one apply, then weft_world_clear(). Unit: ns per spawn,
 * against weft_spawn_batch() of the same n entities with the values written
 * by the fill callback, then weft_world_clear(), in the same world; the
 * clear is inside the timing on both sides. No target: recording is there.
 *
 * spawn2/apply: the same, but only the apply is timed (recording and the
 * clear run outside the timing; the sides time themselves), against the
 * batch spawn alone. This is the target: applying a batch of
 * same-archetype spawns costs <= 2x batch spawn.
 *
 * noop: one buffer records weft_cmd_remove(B) for every entity, none of
 * which has B, then one apply: the cost of the command pipeline alone
 * (recording, merge, staging, drain) with no archetype move. Unit: ns per
 * command; no target. The baseline is a plain command queue: append a
 * (key, entity, component, op) record per entity, then walk the queue and
 * test each entity's has-B flag (all no-ops).
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <weft.h>

#include "harness.h"

enum { CMD_ADD = 1, CMD_REMOVE, CMD_QUIT };

/* Rows per baseline "chunk" for the keys of the plain command queue: what
 * a 16 KiB chunk of (entity | pos | vel) holds, give or take. */
#define CMD_BASE_CHUNK 256u

typedef struct cmd_b_t {
  float v;
} cmd_b_t;

/* One plain table: entity ids and columns (b is NULL in the table without
 * B). */
typedef struct cmd_table_t {
  uint32_t *entity;
  bench_vec3_t *pos;
  bench_vec3_t *vel;
  float *b;
  uint32_t count;
} cmd_table_t;

/* A plain queued command (noop baseline). */
typedef struct cmd_rec_t {
  uint64_t key;
  uint32_t e;
  uint16_t comp;
  uint8_t op;
  uint8_t pad_;
} cmd_rec_t;

typedef struct cmd_state_t cmd_state_t;

typedef struct cmd_worker_t {
  cmd_state_t *s;
  pthread_t thread;
  uint32_t id;
  int rc;
} cmd_worker_t;

struct cmd_state_t {
  uint32_t n;
  weft_world_t *world;
  weft_component_t comps[3]; /* Position, Velocity, 0 */
  weft_component_t b;
  weft_query_t *query; /* include Position, Velocity */
  weft_cmdbuf_t *bufs[2];
  /* add_remove/2t */
  cmd_worker_t workers[2];
  pthread_barrier_t start, done;
  uint32_t phase;   /* CMD_ADD, CMD_REMOVE or CMD_QUIT: read after start */
  uint32_t nchunks; /* chunks of this phase: read after start */
  bool threads;
  /* baselines */
  cmd_table_t t1, t2;
  uint32_t *row;  /* entity -> row in its table */
  uint8_t *has_b; /* noop baseline: entity -> has B */
  cmd_rec_t *queue;
};

static const bench_vec3_t cmd_vel0 = {1.0f, 0.0f, 0.0f};

static inline bench_vec3_t cmd_pos0(uint32_t i) {
  float f = (float)i;
  return (bench_vec3_t){f, f, f};
}

/* ---- weft side ------------------------------------------------------------
 */

/*
 * Records @p op (CMD_ADD or CMD_REMOVE of B) for every entity in the
 * non-empty chunks [lo, hi) of the query's iteration order into @p buf, one
 * key per chunk. Safe on any reader thread.
 */
static int cmd_record(cmd_state_t *s, weft_cmdbuf_t *buf, uint32_t op,
                      uint32_t lo, uint32_t hi) {
  static const cmd_b_t bv = {1.0f};
  const weft_component_t b = s->b;
  weft_iter_t it;
  uint32_t chunk = 0;
  int rc = 0;
  weft_query_iter(s->query, &it);
  while (weft_iter_next(&it)) {
    uint32_t ci = chunk++;
    if (ci < lo)
      continue;
    if (ci >= hi)
      break;
    weft_cmd_key(buf, WEFT_CMD_KEY(0, ci, 0));
    const weft_entity_t *ents = it.entities;
    if (op == CMD_ADD) {
      for (uint32_t i = 0; i < it.count && rc == 0; ++i)
        rc = weft_cmd_add(buf, ents[i], b, &bv);
    } else {
      for (uint32_t i = 0; i < it.count && rc == 0; ++i)
        rc = weft_cmd_remove(buf, ents[i], b);
    }
    if (rc)
      break;
  }
  weft_iter_close(&it); /* a no-op after the end */
  return rc;
}

static uint32_t cmd_count_chunks(const cmd_state_t *s) {
  weft_iter_t it;
  uint32_t k = 0;
  weft_query_iter(s->query, &it);
  while (weft_iter_next(&it))
    ++k;
  return k;
}

static void cmd_apply(cmd_state_t *s, uint32_t nbufs) {
  int rc = weft_world_apply(s->world, s->bufs, nbufs);
  if (rc != 0)
    bench_die("weft_world_apply", rc);
}

static uint64_t cmd_weft_ar_1t(void *p, uint64_t reps) {
  cmd_state_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    bench_check(cmd_record(s, s->bufs[0], CMD_ADD, 0, UINT32_MAX),
                "weft_cmd_add");
    cmd_apply(s, 1);
    bench_check(cmd_record(s, s->bufs[0], CMD_REMOVE, 0, UINT32_MAX),
                "weft_cmd_remove");
    cmd_apply(s, 1);
    bench_clobber();
    sum += weft_world_count(s->world);
  }
  return sum;
}

static void *cmd_worker_main(void *p) {
  cmd_worker_t *wk = p;
  cmd_state_t *s = wk->s;
  for (;;) {
    pthread_barrier_wait(&s->start);
    uint32_t phase = s->phase;
    if (phase == CMD_QUIT)
      return NULL;
    uint32_t lo = (uint32_t)((uint64_t)s->nchunks * wk->id / 2);
    uint32_t hi = (uint32_t)((uint64_t)s->nchunks * (wk->id + 1) / 2);
    wk->rc = cmd_record(s, s->bufs[wk->id], phase, lo, hi);
    pthread_barrier_wait(&s->done);
  }
}

/* One recording phase on both workers, then one apply of both buffers. */
static void cmd_phase_2t(cmd_state_t *s, uint32_t phase) {
  s->phase = phase;
  s->nchunks = cmd_count_chunks(s);
  pthread_barrier_wait(&s->start);
  pthread_barrier_wait(&s->done);
  for (uint32_t t = 0; t < 2; ++t)
    bench_check(s->workers[t].rc, "recording on a worker");
  cmd_apply(s, 2);
}

static uint64_t cmd_weft_ar_2t(void *p, uint64_t reps) {
  cmd_state_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    cmd_phase_2t(s, CMD_ADD);
    cmd_phase_2t(s, CMD_REMOVE);
    bench_clobber();
    sum += weft_world_count(s->world);
  }
  return sum;
}

static uint64_t cmd_weft_noop(void *p, uint64_t reps) {
  cmd_state_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    bench_check(cmd_record(s, s->bufs[0], CMD_REMOVE, 0, UINT32_MAX),
                "weft_cmd_remove");
    cmd_apply(s, 1);
    bench_clobber();
    sum += weft_world_count(s->world);
  }
  return sum;
}

/* Records n spawns with both components and their values. */
static void cmd_record_spawns(cmd_state_t *s) {
  for (uint32_t i = 0; i < s->n; ++i) {
    bench_vec3_t pos = cmd_pos0(i);
    const void *values[2] = {&pos, &cmd_vel0};
    weft_entity_t e;
    int rc = weft_cmd_spawn(s->bufs[0], s->comps, values, &e);
    if (rc != 0)
      bench_die("weft_cmd_spawn", rc);
  }
}

static uint64_t cmd_weft_spawn(void *p, uint64_t reps) {
  cmd_state_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    cmd_record_spawns(s);
    cmd_apply(s, 1);
    sum += weft_world_count(s->world);
    bench_check(weft_world_clear(s->world), "weft_world_clear");
    bench_clobber();
  }
  return sum;
}

/* spawn2/apply: records outside the timing, times only the apply; the
 * clear that follows is outside the timing too. Returns nanoseconds. */
static uint64_t cmd_weft_spawn_apply(void *p, uint64_t reps) {
  cmd_state_t *s = p;
  double ns = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    cmd_record_spawns(s);
    double t0 = bench_now_ns();
    cmd_apply(s, 1);
    double t1 = bench_now_ns();
    ns += t1 - t0;
    if (weft_world_count(s->world) != s->n)
      bench_die("spawn2/apply count", WEFT_EINVAL);
    bench_check(weft_world_clear(s->world), "weft_world_clear");
    bench_clobber();
  }
  return (uint64_t)ns;
}

static void cmd_fill(void *user, const weft_iter_t *view, uint32_t first);

/* The baseline of spawn2/apply: the batch spawn alone, the clear outside
 * the timing. Returns nanoseconds. */
static uint64_t cmd_base_batch_spawn_timed(void *p, uint64_t reps) {
  cmd_state_t *s = p;
  double ns = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    double t0 = bench_now_ns();
    int rc = weft_spawn_batch(s->world, s->n, s->comps, cmd_fill, s, NULL);
    double t1 = bench_now_ns();
    if (rc != 0)
      bench_die("weft_spawn_batch", rc);
    ns += t1 - t0;
    bench_check(weft_world_clear(s->world), "weft_world_clear");
    bench_clobber();
  }
  return (uint64_t)ns;
}

/* The values of the batch spawn baseline (and of the setup's spawn), one
 * chunk range at a time. gcc 12 -O3 -fopt-info-vec-optimized: "loop
 * vectorized using 16 byte vectors", no alias versioning. */
static void cmd_fill_rows(uint32_t n, uint32_t first,
                          bench_vec3_t *restrict pos,
                          bench_vec3_t *restrict vel) {
  for (uint32_t i = 0; i < n; ++i) {
    pos[i] = cmd_pos0(first + i);
    vel[i] = cmd_vel0;
  }
}

static void cmd_fill(void *user, const weft_iter_t *view, uint32_t first) {
  (void)user;
  cmd_fill_rows(view->count, first, view->columns[0], view->columns[1]);
}

static uint64_t cmd_base_batch_spawn(void *p, uint64_t reps) {
  cmd_state_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    int rc = weft_spawn_batch(s->world, s->n, s->comps, cmd_fill, s, NULL);
    if (rc != 0)
      bench_die("weft_spawn_batch", rc);
    sum += weft_world_count(s->world);
    bench_check(weft_world_clear(s->world), "weft_world_clear");
    bench_clobber();
  }
  return sum;
}

/* ---- plain C baselines ------------------------------------------------------
 */

/*
 * Moves entity e's row from table src to table dst (append, then
 * swap-remove), writing B when dst has it. The direction is a compile-time
 * constant at both call sites, so the B branches fold away. Scalar by
 * nature: a few dependent loads and stores through the index per row
 * (-fopt-info-vec reports no vectorized loop here, as expected).
 */
static inline void cmd_move(cmd_table_t *restrict src,
                            cmd_table_t *restrict dst, uint32_t *restrict row,
                            uint32_t e, float bv, bool to_b) {
  uint32_t from = row[e];
  uint32_t to = dst->count++;
  dst->entity[to] = e;
  dst->pos[to] = src->pos[from];
  dst->vel[to] = src->vel[from];
  if (to_b)
    dst->b[to] = bv;
  row[e] = to;
  uint32_t last = --src->count;
  if (from != last) {
    uint32_t moved = src->entity[last];
    src->entity[from] = moved;
    src->pos[from] = src->pos[last];
    src->vel[from] = src->vel[last];
    if (!to_b)
      src->b[from] = src->b[last];
    row[moved] = from;
  }
}

static uint64_t cmd_base_move(void *p, uint64_t reps) {
  cmd_state_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    for (uint32_t e = 0; e < s->n; ++e)
      cmd_move(&s->t1, &s->t2, s->row, e, 1.0f, true);
    for (uint32_t e = 0; e < s->n; ++e)
      cmd_move(&s->t2, &s->t1, s->row, e, 0.0f, false);
    bench_clobber();
    sum += s->t1.count;
  }
  return sum;
}

/* Appends one record per row of @p t, a key per CMD_BASE_CHUNK rows.
 * Vectorized (16 byte vectors); the apply below is a byte gather through
 * the entity ids and stays scalar. */
static uint32_t cmd_queue_record(const cmd_table_t *restrict t,
                                 cmd_rec_t *restrict q, uint16_t comp) {
  const uint32_t *restrict ent = t->entity;
  uint32_t n = t->count;
  for (uint32_t i = 0; i < n; ++i) {
    q[i].key = (uint64_t)(i / CMD_BASE_CHUNK) << 16;
    q[i].e = ent[i];
    q[i].comp = comp;
    q[i].op = CMD_REMOVE;
    q[i].pad_ = 0;
  }
  return n;
}

/* Removes nothing: no entity has B. Counts the would-be removals. */
static uint32_t cmd_queue_apply(const cmd_rec_t *restrict q, uint32_t n,
                                const uint8_t *restrict has_b) {
  uint32_t hits = 0;
  for (uint32_t k = 0; k < n; ++k)
    hits += has_b[q[k].e];
  return hits;
}

static uint64_t cmd_base_queue(void *p, uint64_t reps) {
  cmd_state_t *s = p;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; ++r) {
    uint32_t n = cmd_queue_record(&s->t1, s->queue, 3);
    bench_clobber();
    sum += cmd_queue_apply(s->queue, n, s->has_b) + n;
    bench_clobber();
  }
  return sum;
}

/* ---- setup ------------------------------------------------------------------
 */

static void cmd_setup(cmd_state_t *s, bool populate) {
  weft_world_config_t cfg = {.capacity = s->n};
  bench_check(weft_world_create(&cfg, &s->world), "weft_world_create");
  weft_component_desc_t d = WEFT_COMPONENT_DESC(bench_vec3_t);
  bench_register_pos_vel(s->world, d, s->comps);
  s->comps[2] = WEFT_COMPONENT_NONE;
  d = WEFT_COMPONENT_DESC(cmd_b_t);
  d.name = "B";
  bench_check(weft_component_register(s->world, &d, &s->b), "registering B");
  bench_check(weft_world_reserve(s->world, s->n), "weft_world_reserve");
  weft_query_desc_t qd = {.include = {s->comps[0], s->comps[1]}};
  bench_check(weft_query_create(s->world, &qd, &s->query), "weft_query_create");
  for (uint32_t t = 0; t < 2; ++t)
    bench_check(weft_cmdbuf_create(s->world, &s->bufs[t]),
                "weft_cmdbuf_create");
  if (populate)
    bench_check(weft_spawn_batch(s->world, s->n, s->comps, cmd_fill, s, NULL),
                "weft_spawn_batch");
}

static void cmd_setup_tables(cmd_state_t *s) {
  size_t n = s->n;
  s->t1.entity = bench_alloc(n * sizeof(uint32_t));
  s->t1.pos = bench_alloc(n * sizeof(bench_vec3_t));
  s->t1.vel = bench_alloc(n * sizeof(bench_vec3_t));
  s->t2.entity = bench_alloc(n * sizeof(uint32_t));
  s->t2.pos = bench_alloc(n * sizeof(bench_vec3_t));
  s->t2.vel = bench_alloc(n * sizeof(bench_vec3_t));
  s->t2.b = bench_alloc(n * sizeof(float));
  s->row = bench_alloc(n * sizeof(uint32_t));
  s->has_b = bench_alloc(n);
  s->queue = bench_alloc(n * sizeof(cmd_rec_t));
  for (uint32_t i = 0; i < s->n; ++i) {
    s->t1.entity[i] = i;
    s->t1.pos[i] = cmd_pos0(i);
    s->t1.vel[i] = cmd_vel0;
    s->row[i] = i;
  }
  s->t1.count = s->n;
}

static void cmd_start_workers(cmd_state_t *s) {
  if (pthread_barrier_init(&s->start, NULL, 3) != 0 ||
      pthread_barrier_init(&s->done, NULL, 3) != 0)
    bench_die("pthread_barrier_init", WEFT_ENOMEM);
  for (uint32_t t = 0; t < 2; ++t) {
    s->workers[t] = (cmd_worker_t){.s = s, .id = t};
    if (pthread_create(&s->workers[t].thread, NULL, cmd_worker_main,
                       &s->workers[t]) != 0)
      bench_die("pthread_create", WEFT_ENOMEM);
  }
  s->threads = true;
}

static void cmd_teardown(cmd_state_t *s) {
  if (s->threads) {
    s->phase = CMD_QUIT;
    pthread_barrier_wait(&s->start);
    for (uint32_t t = 0; t < 2; ++t)
      pthread_join(s->workers[t].thread, NULL);
    pthread_barrier_destroy(&s->start);
    pthread_barrier_destroy(&s->done);
  }
  bench_free(s->t1.entity);
  bench_free(s->t1.pos);
  bench_free(s->t1.vel);
  bench_free(s->t2.entity);
  bench_free(s->t2.pos);
  bench_free(s->t2.vel);
  bench_free(s->t2.b);
  bench_free(s->row);
  bench_free(s->has_b);
  bench_free(s->queue);
  weft_world_destroy(s->world); /* owns the query and the buffers */
}

/* Checks once, untimed, that an add_remove workload does what it claims:
 * one repetition makes 2n archetype moves with no stale command and leaves
 * every entity without B. */
static void cmd_verify(cmd_state_t *s, uint64_t (*fn)(void *, uint64_t)) {
  weft_world_stats_t before, after;
  weft_world_stats(s->world, &before);
  fn(s, 1);
  weft_world_stats(s->world, &after);
  uint64_t moves = after.moves - before.moves;
  if (moves != 2ull * s->n || after.commands_stale != before.commands_stale ||
      weft_world_count(s->world) != s->n)
    bench_die("checking the add/remove commands", WEFT_EINVAL);
  weft_iter_t it;
  weft_query_iter(s->query, &it);
  while (weft_iter_next(&it))
    if (weft_has(s->world, it.entities[0], s->b))
      bench_die("checking the removes", WEFT_EINVAL);
}

/* ---- cases ------------------------------------------------------------------
 */

static void cmd_run_add_remove(bench_ctx_t *ctx, uint32_t n, bool two) {
  const char *name = two ? "commands/add_remove/2t" : "commands/add_remove/1t";
  if (!bench_selected(ctx, name))
    return;
  cmd_state_t s = {.n = n};
  cmd_setup(&s, true);
  cmd_setup_tables(&s);
  if (two)
    cmd_start_workers(&s);
  bench_fn fn = two ? cmd_weft_ar_2t : cmd_weft_ar_1t;
  cmd_verify(&s, fn);
  bench_case_t c = {
      .name = name,
      .unit = "ns/command",
      .n = n,
      .work = {"weft", fn, &s, 2.0 * n},
      .base = {"c_two_table_move", cmd_base_move, &s, 2.0 * n},
      .target_kind = BENCH_TARGET_VALUE,
      .target = 15.0,
  };
  bench_compare(ctx, &c);
  cmd_teardown(&s);
}

/* spawn2 (record + apply, no target) or, with apply_only, spawn2/apply:
 * the target is on applying, so there recording stays out of the
 * timing, and the clear after each repetition too (on both sides). */
static void cmd_run_spawn(bench_ctx_t *ctx, uint32_t n, bool apply_only) {
  const char *name = apply_only ? "commands/spawn2/apply" : "commands/spawn2";
  if (!bench_selected(ctx, name))
    return;
  cmd_state_t s = {.n = n};
  cmd_setup(&s, false);
  cmd_weft_spawn(&s, 1);
  bench_case_t c = {
      .name = name,
      .unit = "ns/spawn",
      .n = n,
      .work = {"weft", apply_only ? cmd_weft_spawn_apply : cmd_weft_spawn, &s,
               n, apply_only},
      .base = {"weft_spawn_batch",
               apply_only ? cmd_base_batch_spawn_timed : cmd_base_batch_spawn,
               &s, n, apply_only},
      .target_kind = apply_only ? BENCH_TARGET_RATIO : BENCH_TARGET_NONE,
      .target = apply_only ? 2.0 : 0.0,
  };
  bench_compare(ctx, &c);
  cmd_teardown(&s);
}

static void cmd_run_noop(bench_ctx_t *ctx, uint32_t n) {
  const char *name = "commands/noop";
  if (!bench_selected(ctx, name))
    return;
  cmd_state_t s = {.n = n};
  cmd_setup(&s, true);
  cmd_setup_tables(&s);
  bench_case_t c = {
      .name = name,
      .unit = "ns/command",
      .n = n,
      .work = {"weft", cmd_weft_noop, &s, n},
      .base = {"c_cmd_queue", cmd_base_queue, &s, n},
      .target_kind = BENCH_TARGET_NONE,
  };
  bench_compare(ctx, &c);
  cmd_teardown(&s);
}

void bench_commands(bench_ctx_t *ctx) {
  uint32_t n = ctx->quick ? 100000 : 1000000;
  cmd_run_add_remove(ctx, n, false);
  cmd_run_add_remove(ctx, n, true);
  cmd_run_spawn(ctx, n, false);
  cmd_run_spawn(ctx, n, true);
  cmd_run_noop(ctx, n);
}
