/*
 * NUMA affinity of system jobs: on a synthetic two-node machine, chunk
 * memory alternates between the nodes' arenas, a system's jobs never mix
 * chunks of two nodes, and the workers of a chunk's node run most of its
 * jobs (the rest are steals at the tail of a phase).
 */
#include "support/weft_test.h"

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
  /* Long enough that every worker is awake and takes from its own node's
   * queue first. */
  struct timespec ts = {0, 200000};
  nanosleep(&ts, NULL);
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

static void test_affinity_jobs_go_home(void **state) {
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
  /* Where jobs run depends on timing: on a loaded machine a worker may
   * find its node's queue empty and steal more. Locality must show in at
   * least one of a few runs (unloaded, about 95% is local; placement that
   * ignored nodes would give about half). */
  double best = 0;
  for (int attempt = 0; attempt < 8 && best < 0.6; attempt++) {
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
    if (local + remote > 0 && (double)local / (local + remote) > best)
      best = (double)local / (local + remote);
  }
  /* Workers take their own node's queue first. */
  assert_true(best >= 0.6);
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_affinity_jobs_go_home),
      cmocka_unit_test(test_affinity_jobs_cut_at_node_change),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
