/* SPDX-License-Identifier: MIT */
/*
 * NUMA affinity of system jobs: on a synthetic two-node machine, chunk
 * memory alternates between the nodes' arenas, a system's jobs never mix
 * chunks of two nodes, and a job for a node waits in that node's queue,
 * which the node's workers serve before any other. How many jobs the
 * node's workers end up running depends on timing (on a loaded machine a
 * worker finds its node's queue empty and steals more): that share is
 * weft-bench's affinity/home_node/4w row, not a test.
 */
#include "support/weft_test.h"

#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include <weft.h>

#define ROWS 60000u
#define MAX_CHUNKS 4096u

typedef struct probe_t {
  const weft_plan_t *plan;
  uint32_t workers;
  _Atomic uint32_t local;
  _Atomic uint32_t remote;
  _Atomic uint32_t by_driver;
  _Atomic uint32_t nodes_seen; /* bit per home node */
  _Atomic uint32_t calls;
  uint32_t chunk_node[MAX_CHUNKS]; /* by chunk sequence, + 1 */
} probe_t;

static int visit(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  probe_t *p = ctx->user;
  atomic_fetch_or(&p->nodes_seen, 1u << (chunk->home_node & 31));
  atomic_fetch_add(&p->calls, 1);
  if (ctx->chunk < MAX_CHUNKS)
    p->chunk_node[ctx->chunk] = chunk->home_node + 1;
  if (ctx->worker >= p->workers) {
    atomic_fetch_add(&p->by_driver, 1);
    return 0;
  }
  const weft_pu_info_t *pu = weft_plan_place(p->plan, ctx->worker);
  if (pu && pu->node == chunk->home_node)
    atomic_fetch_add(&p->local, 1);
  else
    atomic_fetch_add(&p->remote, 1);
  return 0;
}

static weft_pool_t *two_node_pool(void) {
  weft_pool_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.synthetic = "numa:2 core:2 pu:1";
  cfg.placement.workers = 4;
  weft_pool_t *pool = NULL;
  assert_int_equal(weft_pool_create(&cfg, &pool), 0);
  return pool;
}

static void test_affinity_every_chunk_runs_once(void **state) {
  (void)state;
  weft_pool_t *pool = two_node_pool();
  weft_world_config_t wc;
  memset(&wc, 0, sizeof wc);
  wc.pool = pool;
  wc.chunk_size = 4096; /* many chunks, several segments */
  weft_world_t *w = NULL;
  assert_int_equal(weft_world_create(&wc, &w), 0);
  weft_component_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "v";
  d.size = 8;
  weft_component_t v;
  assert_int_equal(weft_component_register(w, &d, &v), 0);
  weft_component_t list[] = {v, 0};
  for (uint32_t i = 0; i < ROWS; i++) {
    weft_entity_t e;
    assert_int_equal(weft_spawn_with(w, list, NULL, &e), 0);
  }
  static probe_t p;
  weft_pipeline_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.inline_rows = 1; /* always dispatch */
  assert_int_equal(weft_pipeline_configure(w, &pc), 0);
  weft_system_desc_t sd;
  memset(&sd, 0, sizeof sd);
  sd.name = "visit";
  sd.query.include[0] = v;
  sd.batch = 1; /* jobs split down to one chunk */
  sd.run = visit;
  sd.user = &p;
  weft_system_t sys;
  assert_int_equal(weft_system_register(w, &sd, &sys), 0);
  /* Every chunk visited once, by a worker or the driving thread; which of
   * them is timing. */
  for (int run = 0; run < 3; run++) {
    memset(&p, 0, sizeof p);
    p.plan = weft_pool_plan(pool);
    p.workers = weft_pool_workers(pool);
    weft_system_stats_t st0;
    assert_int_equal(weft_system_stats(w, sys, &st0), 0);
    assert_int_equal(weft_world_run_phase(w, WEFT_PHASE_FIXED_UPDATE, 0.01), 0);
    /* Chunk memory came from both nodes. */
    assert_int_equal(atomic_load(&p.nodes_seen), 3u);
    uint32_t calls = atomic_load(&p.calls);
    weft_system_stats_t st;
    assert_int_equal(weft_system_stats(w, sys, &st), 0);
    assert_int_equal(st.chunks - st0.chunks, calls);
    /* A job per node run at first; idle workers split them, at most down
     * to one chunk. */
    assert_true(st.jobs - st0.jobs >= 2 && st.jobs - st0.jobs <= calls);
    assert_int_equal(st.entities - st0.entities, ROWS);
    uint32_t local = atomic_load(&p.local), remote = atomic_load(&p.remote);
    assert_int_equal(local + remote + atomic_load(&p.by_driver), calls);
  }
  weft_world_destroy(w);
  weft_pool_destroy(pool);
}

static int count_jobs(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  probe_t *p = ctx->user;
  if (ctx->chunk < MAX_CHUNKS)
    p->chunk_node[ctx->chunk] = chunk->home_node + 1;
  atomic_fetch_add(&p->calls, 1);
  return 0;
}

/* With a batch as large as the world no job splits: there is exactly one
 * job per run of chunks with the same home node. */
static void test_affinity_jobs_cut_at_node_change(void **state) {
  (void)state;
  weft_pool_t *pool = two_node_pool();
  weft_world_config_t wc;
  memset(&wc, 0, sizeof wc);
  wc.pool = pool;
  wc.chunk_size = 4096;
  weft_world_t *w = NULL;
  assert_int_equal(weft_world_create(&wc, &w), 0);
  weft_component_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "v";
  d.size = 8;
  weft_component_t v;
  assert_int_equal(weft_component_register(w, &d, &v), 0);
  weft_component_t list[] = {v, 0};
  for (uint32_t i = 0; i < ROWS; i++) {
    weft_entity_t e;
    assert_int_equal(weft_spawn_with(w, list, NULL, &e), 0);
  }
  static probe_t p;
  memset(&p, 0, sizeof p);
  weft_pipeline_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.inline_rows = 1;
  assert_int_equal(weft_pipeline_configure(w, &pc), 0);
  weft_system_desc_t sd;
  memset(&sd, 0, sizeof sd);
  sd.name = "count";
  sd.query.include[0] = v;
  sd.batch = ROWS; /* as big as the world: only node changes cut */
  sd.run = count_jobs;
  sd.user = &p;
  weft_system_t sys;
  assert_int_equal(weft_system_register(w, &sd, &sys), 0);
  assert_int_equal(weft_world_run_phase(w, WEFT_PHASE_FIXED_UPDATE, 0.01), 0);
  uint32_t calls = atomic_load(&p.calls), changes = 0;
  assert_true(calls > 2 && calls <= MAX_CHUNKS);
  for (uint32_t c = 1; c < calls; c++) {
    assert_int_not_equal(p.chunk_node[c], 0);
    changes += p.chunk_node[c] != p.chunk_node[c - 1];
  }
  assert_true(changes >= 1); /* both nodes hold chunks */
  weft_system_stats_t st;
  assert_int_equal(weft_system_stats(w, sys, &st), 0);
  assert_int_equal(st.jobs, changes + 1);
  weft_world_destroy(w);
  weft_pool_destroy(pool);
}

/* ---- the queue a job waits in ---------------------------------------------
 */

/* A wait that only a hang would make fail: the other thread has to be
 * scheduled once, whatever else the machine runs. */
#define HANG_NS (60ull * 1000000000ull)

#define HOLD_WORKERS 4u
#define TAGGED 8u /* jobs per node */

typedef struct hold_t {
  _Atomic uint32_t held;
  _Atomic uint32_t release[HOLD_WORKERS];
  _Atomic uint32_t runs;                /* tagged jobs run so far */
  _Atomic uint32_t node_of[2 * TAGGED]; /* by run order: node + 1 */
  _Atomic uint32_t worker_of[2 * TAGGED];
  _Atomic uint32_t bad; /* a hold on no worker, or one that waited in vain */
} hold_t;

typedef struct tagged_t {
  hold_t *h;
  uint32_t node;
} tagged_t;

/* Holds its worker until the test lets that worker go. */
static void hold_job(void *arg, uint32_t worker) {
  hold_t *h = arg;
  if (worker >= HOLD_WORKERS) {
    atomic_fetch_add(&h->bad, 1);
    return;
  }
  atomic_fetch_add(&h->held, 1);
  uint64_t t0 = wt_now_ns();
  while (!atomic_load(&h->release[worker])) {
    sched_yield();
    if (wt_now_ns() - t0 > HANG_NS) {
      atomic_fetch_add(&h->bad, 1);
      return;
    }
  }
}

static void tagged_job(void *arg, uint32_t worker) {
  tagged_t *t = arg;
  uint32_t k = atomic_fetch_add(&t->h->runs, 1);
  if (k < 2 * TAGGED) {
    atomic_store(&t->h->node_of[k], t->node + 1);
    atomic_store(&t->h->worker_of[k], worker);
  }
}

/* Polls *v from the test thread until it reaches want (or a hang). */
static void await_at_least(_Atomic uint32_t *v, uint32_t want) {
  uint64_t t0 = wt_now_ns();
  while (atomic_load(v) < want) {
    assert_true(wt_now_ns() - t0 < HANG_NS);
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
}

/*
 * With every worker held in a job, jobs for node 1 and then jobs for node
 * 0 are queued from outside. One worker of node 0, let go alone, runs all
 * of node 0's jobs before any of node 1's, although those were queued
 * first: a job for a node waits in that node's queue, and a worker serves
 * its own node's queue before the others'. (Nothing else runs meanwhile,
 * so the order is exact.)
 */
static void test_affinity_workers_serve_their_node_first(void **state) {
  (void)state;
  weft_pool_t *pool = two_node_pool();
  const weft_plan_t *plan = weft_pool_plan(pool);
  assert_int_equal(weft_pool_workers(pool), HOLD_WORKERS);
  static hold_t h;
  memset(&h, 0, sizeof h);
  weft_counter_t held_done, done;
  memset(&held_done, 0, sizeof held_done);
  memset(&done, 0, sizeof done);
  for (uint32_t i = 0; i < HOLD_WORKERS; i++)
    weft_pool_submit(pool, WEFT_WORKER_EXTERNAL, hold_job, &h, &held_done,
                     WEFT_WORKER_EXTERNAL);
  await_at_least(&h.held, HOLD_WORKERS); /* one held job per worker */
  static tagged_t tags[2 * TAGGED];
  for (uint32_t i = 0; i < 2 * TAGGED; i++) {
    tags[i] = (tagged_t){&h, i < TAGGED ? 1u : 0u};
    weft_pool_submit(pool, WEFT_WORKER_EXTERNAL, tagged_job, &tags[i], &done,
                     tags[i].node);
  }
  uint32_t first = HOLD_WORKERS;
  for (uint32_t w = 0; w < HOLD_WORKERS && first == HOLD_WORKERS; w++)
    if (weft_plan_place(plan, w)->node == 0)
      first = w;
  assert_true(first < HOLD_WORKERS);
  atomic_store(&h.release[first], 1);
  await_at_least(&h.runs, 2 * TAGGED);
  for (uint32_t k = 0; k < 2 * TAGGED; k++) {
    uint32_t node = atomic_load(&h.node_of[k]) - 1;
    if (node != (k < TAGGED ? 0u : 1u) || atomic_load(&h.worker_of[k]) != first)
      fail_msg("job %u to run was for node %u, on worker %u (worker %u of "
               "node 0 was let go alone)",
               k, node, atomic_load(&h.worker_of[k]), first);
  }
  for (uint32_t w = 0; w < HOLD_WORKERS; w++)
    atomic_store(&h.release[w], 1);
  weft_pool_wait(pool, WEFT_WORKER_EXTERNAL, &held_done);
  weft_pool_wait(pool, WEFT_WORKER_EXTERNAL, &done);
  assert_int_equal(atomic_load(&h.bad), 0);
  weft_pool_destroy(pool);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_affinity_every_chunk_runs_once),
      cmocka_unit_test(test_affinity_workers_serve_their_node_first),
      cmocka_unit_test(test_affinity_jobs_cut_at_node_change),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
