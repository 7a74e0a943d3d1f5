/* SPDX-License-Identifier: MIT */
/*
 * The worker pool through its public API: creation and bad configs, a
 * synthetic placement, jobs from outside and from inside jobs (each runs
 * exactly once), parallel-for sums and its worker-independent split,
 * nesting, dependency chains and diamonds, stop/start, inline submission
 * on a stopped or full pool, per-worker stats, sleeping when idle, and the
 * calling thread as worker 0. Every test builds and destroys its own pool.
 * Long threaded torture is in stress_pool.c.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "support/weft_test.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

/* --- helpers ------------------------------------------------------------- */

static weft_pool_t *pool_new(const weft_pool_config_t *cfg) {
  weft_pool_t *p = NULL;
  assert_int_equal(weft_pool_create(cfg, &p), WEFT_OK);
  assert_non_null(p);
  return p;
}

static weft_pool_t *pool_of(uint32_t workers) {
  weft_pool_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.placement.workers = workers;
  weft_pool_t *p = pool_new(&cfg);
  assert_int_equal(weft_pool_workers(p), workers);
  return p;
}

static void counter_init(weft_counter_t *c) {
  memset(c, 0, sizeof *c);
  atomic_init(&c->pending, 0);
}

static uint32_t pending(weft_counter_t *c) {
  return atomic_load(&c->pending);
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* Bound on waits for other threads, in 1 ms polls: a hang guard, not a
 * timing bound (a busy machine may keep a worker off its CPU for a long
 * while, and that must not fail a test). */
#define HANG_MS 60000

/* Waits for a counter without running jobs, so that only the workers run
 * them (and do their in-job waits as workers). Fails on a hang. */
static void await_workers(weft_counter_t *c) {
  for (int ms = 0; pending(c) != 0; ms++) {
    assert_true(ms < HANG_MS);
    sleep_ms(1);
  }
}

static weft_worker_stats_t stats_of(const weft_pool_t *p, uint32_t w) {
  weft_worker_stats_t s;
  memset(&s, 0xa5, sizeof s);
  assert_int_equal(weft_pool_worker_stats(p, w, &s), WEFT_OK);
  return s;
}

/* Sum of every worker's stats. */
static weft_worker_stats_t stats_sum(const weft_pool_t *p) {
  weft_worker_stats_t t;
  memset(&t, 0, sizeof t);
  for (uint32_t w = 0; w < weft_pool_workers(p); w++) {
    weft_worker_stats_t s = stats_of(p, w);
    t.jobs += s.jobs;
    t.inline_jobs += s.inline_jobs;
    t.local_steals += s.local_steals;
    t.remote_steals += s.remote_steals;
    t.sleeps += s.sleeps;
    t.busy_ns += s.busy_ns;
    t.idle_ns += s.idle_ns;
  }
  return t;
}

/* A job whose argument is its own hit counter. */
static void hit_job(void *arg, uint32_t worker) {
  (void)worker;
  atomic_fetch_add((_Atomic uint32_t *)arg, 1);
}

#define HITS 1000
static _Atomic uint32_t hits[HITS];

static void hits_reset(void) {
  for (uint32_t i = 0; i < HITS; i++)
    atomic_store(&hits[i], 0);
}

static void hits_expect(uint32_t n, uint32_t times) {
  for (uint32_t i = 0; i < n; i++)
    assert_int_equal(atomic_load(&hits[i]), times);
  for (uint32_t i = n; i < HITS; i++)
    assert_int_equal(atomic_load(&hits[i]), 0);
}

/* Submits jobs 0..n-1 of hits[] from outside and waits for them. */
static void run_hits(weft_pool_t *p, uint32_t n) {
  weft_counter_t done;
  counter_init(&done);
  for (uint32_t i = 0; i < n; i++)
    weft_pool_submit(p, WEFT_WORKER_EXTERNAL, hit_job, &hits[i], &done,
                     WEFT_WORKER_EXTERNAL);
  weft_pool_wait(p, WEFT_WORKER_EXTERNAL, &done);
  assert_int_equal(pending(&done), 0);
}

/* A parallel-for body summing its items and counting its calls. */
typedef struct sum_t {
  _Atomic uint64_t sum;
  _Atomic uint32_t calls;
  _Atomic uint32_t widest; /* largest range handed out */
  _Atomic uint32_t bad;    /* ranges outside [lo, hi) or empty */
  uint32_t lo, hi;
  uint32_t workers; /* the pool's, to check the worker argument */
  _Atomic uint32_t bad_worker;
} sum_t;

static void sum_body(void *arg, uint32_t b, uint32_t e, uint32_t worker) {
  sum_t *s = arg;
  uint64_t local = 0;
  for (uint32_t i = b; i < e; i++)
    local += i;
  atomic_fetch_add(&s->sum, local);
  atomic_fetch_add(&s->calls, 1);
  uint32_t w = atomic_load(&s->widest);
  while (e - b > w && !atomic_compare_exchange_weak(&s->widest, &w, e - b)) {
  }
  if (b >= e || b < s->lo || e > s->hi)
    atomic_fetch_add(&s->bad, 1);
  if (worker != WEFT_WORKER_EXTERNAL && worker >= s->workers)
    atomic_fetch_add(&s->bad_worker, 1);
}

static uint64_t serial_sum(uint32_t b, uint32_t e) {
  uint64_t t = 0;
  for (uint32_t i = b; i < e; i++)
    t += i;
  return t;
}

/* --- creation ------------------------------------------------------------ */

static void test_pool_create_with_defaults(void **state) {
  (void)state;
  weft_pool_t *p = pool_new(NULL);
  assert_true(weft_pool_workers(p) >= 1);
  assert_non_null(weft_pool_plan(p));
  assert_int_equal(weft_plan_workers(weft_pool_plan(p)), weft_pool_workers(p));
  weft_pool_destroy(p);

  weft_pool_config_t zero;
  memset(&zero, 0, sizeof zero);
  p = pool_new(&zero);
  assert_true(weft_pool_workers(p) >= 1);
  hits_reset();
  run_hits(p, 100);
  hits_expect(100, 1);
  weft_pool_destroy(p);
  weft_pool_destroy(NULL); /* no-op */
}

static void test_pool_create_with_explicit_workers(void **state) {
  (void)state;
  static const uint32_t counts[] = {1, 2, 5}; /* 5 > this machine's cores */
  for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
    weft_pool_t *p = pool_of(counts[k]);
    assert_int_equal(weft_plan_workers(weft_pool_plan(p)), counts[k]);
    hits_reset();
    run_hits(p, 200);
    hits_expect(200, 1);
    weft_pool_destroy(p);
  }
}

static void test_pool_create_rejects_bad_config(void **state) {
  (void)state;
  static const uint32_t bad[] = {3, 6, 100, 4097, UINT32_MAX};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    weft_pool_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.queue_capacity = bad[k];
    weft_pool_t *p = (weft_pool_t *)&cfg; /* must be cleared */
    assert_int_equal(weft_pool_create(&cfg, &p), WEFT_EINVAL);
    assert_null(p);
  }
  assert_int_equal(weft_pool_create(NULL, NULL), WEFT_EINVAL);
  weft_pool_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.placement.pin = (weft_pin_t)99;
  weft_pool_t *p = (weft_pool_t *)&cfg;
  assert_int_equal(weft_pool_create(&cfg, &p), WEFT_EINVAL);
  assert_null(p);
  cfg.placement.pin = WEFT_PIN_CORE;
  cfg.synthetic = "bogus:3";
  p = (weft_pool_t *)&cfg;
  assert_int_equal(weft_pool_create(&cfg, &p), WEFT_EINVAL);
  assert_null(p);
}

/* --- placement ----------------------------------------------------------- */

typedef struct affinity_t {
  _Atomic uint32_t narrowed; /* jobs whose thread had fewer CPUs */
  int cpus;                  /* the test thread's CPU count */
} affinity_t;

static void affinity_job(void *arg, uint32_t worker) {
  (void)worker;
  affinity_t *a = arg;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) != a->cpus)
    atomic_fetch_add(&a->narrowed, 1);
}

static void test_pool_synthetic_placement(void **state) {
  (void)state;
  weft_pool_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.synthetic = "pack:2 numa:2 l3:1 core:2 pu:1";
  cfg.placement.workers = 4;
  weft_pool_t *p = pool_new(&cfg);
  assert_int_equal(weft_pool_workers(p), 4);
  const weft_plan_t *plan = weft_pool_plan(p);
  assert_non_null(plan);
  assert_int_equal(weft_plan_workers(plan), 4);
  /* Nodes are interleaved: four workers land on four different nodes. */
  assert_int_equal(weft_plan_groups(plan), 4);
  uint64_t nodes = 0;
  for (uint32_t w = 0; w < 4; w++) {
    const weft_pu_info_t *pu = weft_plan_place(plan, w);
    assert_non_null(pu);
    assert_true(pu->node < 4);
    nodes |= UINT64_C(1) << pu->node;
    uint32_t g = weft_plan_group_of(plan, w);
    assert_true(g < 4);
    uint32_t gnode = UINT32_MAX;
    const uint32_t *members = NULL;
    assert_int_equal(weft_plan_group(plan, g, &gnode, &members), 1);
    assert_int_equal(gnode, pu->node);
    assert_int_equal(members[0], w);
    const uint32_t *order = NULL;
    assert_int_equal(weft_plan_steal_order(plan, w, &order), 3);
  }
  assert_int_equal(nodes, 0xf);
  assert_null(weft_plan_place(plan, 4));

  /* The threads really are unbound: a synthetic machine is not this one. */
  cpu_set_t set;
  CPU_ZERO(&set);
  assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
  affinity_t a = {.cpus = CPU_COUNT(&set)};
  atomic_init(&a.narrowed, 0);
  weft_counter_t done;
  counter_init(&done);
  for (uint32_t i = 0; i < 64; i++)
    weft_pool_submit(p, WEFT_WORKER_EXTERNAL, affinity_job, &a, &done,
                     WEFT_WORKER_EXTERNAL);
  weft_pool_wait(p, WEFT_WORKER_EXTERNAL, &done);
  assert_int_equal(atomic_load(&a.narrowed), 0);

  /* Jobs aimed at each node (and at no such node) all run. */
  hits_reset();
  counter_init(&done);
  for (uint32_t i = 0; i < 400; i++)
    weft_pool_submit(p, WEFT_WORKER_EXTERNAL, hit_job, &hits[i], &done,
                     i % 5 == 4 ? 17 : i % 5);
  weft_pool_wait(p, WEFT_WORKER_EXTERNAL, &done);
  hits_expect(400, 1);
  weft_pool_destroy(p);

  /* Zero workers: one per core, 2 x 2 x 2 = 8. */
  cfg.placement.workers = 0;
  p = pool_new(&cfg);
  assert_int_equal(weft_pool_workers(p), 8);
  weft_pool_destroy(p);
}

/* Jobs submitted from a worker with a node other than its own go to that
 * node's group; they all run. */
typedef struct away_t {
  weft_pool_t *pool;
  weft_counter_t *done;
} away_t;

static void away_job(void *arg, uint32_t worker) {
  away_t *a = arg;
  uint32_t me = worker == WEFT_WORKER_EXTERNAL
                    ? 0
                    : weft_plan_place(weft_pool_plan(a->pool), worker)->node;
  for (uint32_t k = 0; k < 10; k++)
    weft_pool_submit(a->pool, worker, hit_job, &hits[k], a->done,
                     (me + 1 + k) % 4);
}

static void test_pool_submit_to_other_nodes_from_workers(void **state) {
  (void)state;
  weft_pool_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.synthetic = "pack:2 numa:2 l3:1 core:2 pu:1";
  cfg.placement.workers = 4;
  weft_pool_t *p = pool_new(&cfg);
  weft_counter_t done;
  counter_init(&done);
  away_t a = {p, &done};
  hits_reset();
  for (uint32_t i = 0; i < 20; i++)
    weft_pool_submit(p, WEFT_WORKER_EXTERNAL, away_job, &a, &done, i % 4);
  weft_pool_wait(p, WEFT_WORKER_EXTERNAL, &done);
  hits_expect(10, 20);
  weft_pool_destroy(p);
}

/* --- jobs ---------------------------------------------------------------- */

static void test_pool_external_jobs_run_exactly_once(void **state) {
  (void)state;
  weft_pool_t *p = pool_of(2);
  hits_reset();
  run_hits(p, HITS);
  hits_expect(HITS, 1);
  /* A counter is reusable once it reached zero. */
  run_hits(p, HITS / 2);
  for (uint32_t i = 0; i < HITS; i++)
    assert_int_equal(atomic_load(&hits[i]), i < HITS / 2 ? 2 : 1);
  /* Waiting on a zero counter returns at once; NULL arguments are no-ops. */
  weft_counter_t zero;
  counter_init(&zero);
  weft_pool_wait(p, WEFT_WORKER_EXTERNAL, &zero);
  weft_pool_wait(p, WEFT_WORKER_EXTERNAL, NULL);
  weft_pool_submit(p, WEFT_WORKER_EXTERNAL, NULL, NULL, &zero,
                   WEFT_WORKER_EXTERNAL);
  assert_int_equal(pending(&zero), 0);
  /* Jobs without a counter run too (destroy drains them). */
  for (uint32_t i = 0; i < HITS; i++)
    weft_pool_submit(p, WEFT_WORKER_EXTERNAL, hit_job, &hits[i], NULL,
                     WEFT_WORKER_EXTERNAL);
  weft_pool_destroy(p);
  for (uint32_t i = 0; i < HITS; i++)
    assert_int_equal(atomic_load(&hits[i]), i < HITS / 2 ? 3 : 2);
}

/* A job that submits more jobs against the counter it runs under. */
typedef struct spawner_t {
  weft_pool_t *pool;
  weft_counter_t *done;
  uint32_t first, children;
  _Atomic uint32_t bad_worker;
} spawner_t;

static void spawner_job(void *arg, uint32_t worker) {
  spawner_t *s = arg;
  if (worker != WEFT_WORKER_EXTERNAL && worker >= weft_pool_workers(s->pool))
    atomic_fetch_add(&s->bad_worker, 1);
  for (uint32_t k = 0; k < s->children; k++)
    weft_pool_submit(s->pool, worker, hit_job, &hits[s->first + k], s->done,
                     WEFT_WORKER_EXTERNAL);
}

static void test_pool_job_submits_jobs(void **state) {
  (void)state;
  weft_pool_t *p = pool_of(2);
  enum { PARENTS = 20, CHILDREN = 50 };
  spawner_t sp[PARENTS];
  weft_counter_t done;
  counter_init(&done);
  hits_reset();
  for (uint32_t i = 0; i < PARENTS; i++) {
    sp[i] = (spawner_t){
        .pool = p, .done = &done, .first = i * CHILDREN, .children = CHILDREN};
    atomic_init(&sp[i].bad_worker, 0);
  }
  for (uint32_t i = 0; i < PARENTS; i++)
    weft_pool_submit(p, WEFT_WORKER_EXTERNAL, spawner_job, &sp[i], &done,
                     WEFT_WORKER_EXTERNAL);
  weft_pool_wait(p, WEFT_WORKER_EXTERNAL, &done);
  hits_expect(PARENTS * CHILDREN, 1);
  /* Parents the waiting test thread ran itself saw WEFT_WORKER_EXTERNAL and
   * submitted from outside; the rest submitted as the worker they ran on. */
  for (uint32_t i = 0; i < PARENTS; i++)
    assert_int_equal(atomic_load(&sp[i].bad_worker), 0);
  weft_pool_destroy(p);
}

/* Chain: job i checks it runs i-th, then submits job i + 1. */
typedef struct chain_t {
  weft_pool_t *pool;
  weft_counter_t *done;
  _Atomic uint32_t next; /* the step that should run now */
  _Atomic uint32_t out_of_order;
  uint32_t length;
} chain_t;

typedef struct chain_step_t {
  chain_t *chain;
  uint32_t step;
} chain_step_t;

static chain_step_t chain_steps[256];

static void chain_job(void *arg, uint32_t worker) {
  chain_step_t *s = arg;
  chain_t *c = s->chain;
  if (atomic_fetch_add(&c->next, 1) != s->step)
    atomic_fetch_add(&c->out_of_order, 1);
  if (s->step + 1 < c->length)
    weft_pool_submit(c->pool, worker, chain_job, &chain_steps[s->step + 1],
                     c->done, WEFT_WORKER_EXTERNAL);
}

static void test_pool_dependency_chain_runs_in_order(void **state) {
  (void)state;
  weft_pool_t *p = pool_of(2);
  weft_counter_t done;
  counter_init(&done);
  chain_t c = {.pool = p, .done = &done, .length = 256};
  atomic_init(&c.next, 0);
  atomic_init(&c.out_of_order, 0);
  for (uint32_t i = 0; i < 256; i++)
    chain_steps[i] = (chain_step_t){&c, i};
  weft_pool_submit(p, WEFT_WORKER_EXTERNAL, chain_job, &chain_steps[0], &done,
                   WEFT_WORKER_EXTERNAL);
  weft_pool_wait(p, WEFT_WORKER_EXTERNAL, &done);
  assert_int_equal(atomic_load(&c.next), 256);
  assert_int_equal(atomic_load(&c.out_of_order), 0);
  /* Again with the workers alone running every step. */
  atomic_store(&c.next, 0);
  weft_pool_submit(p, WEFT_WORKER_EXTERNAL, chain_job, &chain_steps[0], &done,
                   WEFT_WORKER_EXTERNAL);
  await_workers(&done);
  assert_int_equal(atomic_load(&c.next), 256);
  assert_int_equal(atomic_load(&c.out_of_order), 0);
  weft_pool_destroy(p);
}

/* Diamond: A submits B and C, waits for both inside the job, then submits
 * D. Each stamps the ticket it drew; A < B, C < D. */
typedef struct diamond_t {
  weft_pool_t *pool;
  weft_counter_t *all;
  weft_counter_t mid;
  _Atomic uint32_t ticket;
  _Atomic uint32_t a, b, c, d; /* tickets, 0 = not run */
  _Atomic uint32_t early;      /* B or C ran before A, D before B or C */
} diamond_t;

static uint32_t stamp(diamond_t *g, _Atomic uint32_t *slot) {
  uint32_t t = atomic_fetch_add(&g->ticket, 1) + 1;
  atomic_store(slot, t);
  return t;
}

static void diamond_side(void *arg, uint32_t worker) {
  (void)worker;
  diamond_t *g = arg;
  if (atomic_load(&g->a) == 0)
    atomic_fetch_add(&g->early, 1);
  /* B and C share this body; whichever stamps first is B. */
  uint32_t zero = 0;
  uint32_t t = atomic_fetch_add(&g->ticket, 1) + 1;
  if (!atomic_compare_exchange_strong(&g->b, &zero, t))
    atomic_store(&g->c, t);
}

static void diamond_d(void *arg, uint32_t worker) {
  (void)worker;
  diamond_t *g = arg;
  if (atomic_load(&g->b) == 0 || atomic_load(&g->c) == 0)
    atomic_fetch_add(&g->early, 1);
  stamp(g, &g->d);
}

static void diamond_a(void *arg, uint32_t worker) {
  diamond_t *g = arg;
  stamp(g, &g->a);
  weft_pool_submit(g->pool, worker, diamond_side, g, &g->mid,
                   WEFT_WORKER_EXTERNAL);
  weft_pool_submit(g->pool, worker, diamond_side, g, &g->mid,
                   WEFT_WORKER_EXTERNAL);
  weft_pool_wait(g->pool, worker, &g->mid);
  weft_pool_submit(g->pool, worker, diamond_d, g, g->all, WEFT_WORKER_EXTERNAL);
}

static void run_diamonds(weft_pool_t *p, bool test_thread_helps) {
  enum { N = 32 };
  static diamond_t gs[N];
  weft_counter_t all;
  counter_init(&all);
  for (uint32_t i = 0; i < N; i++) {
    memset(&gs[i], 0, sizeof gs[i]);
    gs[i].pool = p;
    gs[i].all = &all;
    counter_init(&gs[i].mid);
  }
  for (uint32_t i = 0; i < N; i++)
    weft_pool_submit(p, WEFT_WORKER_EXTERNAL, diamond_a, &gs[i], &all,
                     WEFT_WORKER_EXTERNAL);
  if (test_thread_helps)
    weft_pool_wait(p, WEFT_WORKER_EXTERNAL, &all);
  else
    await_workers(&all);
  for (uint32_t i = 0; i < N; i++) {
    diamond_t *g = &gs[i];
    uint32_t a = atomic_load(&g->a), b = atomic_load(&g->b);
    uint32_t c = atomic_load(&g->c), d = atomic_load(&g->d);
    assert_int_equal(atomic_load(&g->early), 0);
    assert_int_equal(a, 1);
    assert_true(b > a && c > a && b != c);
    assert_true(d > b && d > c);
    assert_int_equal(d, 4);
    assert_int_equal(pending(&g->mid), 0);
  }
}

static void test_pool_diamond_runs_in_order(void **state) {
  (void)state;
  weft_pool_t *p = pool_of(2);
  run_diamonds(p, true);
  run_diamonds(p, false); /* every wait inside a job is a worker's */
  weft_pool_destroy(p);
}

/* --- parallel-for -------------------------------------------------------- */

static void check_parallel_for(weft_pool_t *p, uint32_t self, uint32_t b,
                               uint32_t e, uint32_t grain) {
  sum_t s;
  memset(&s, 0, sizeof s);
  s.lo = b;
  s.hi = e;
  s.workers = weft_pool_workers(p);
  weft_pool_parallel_for(p, self, b, e, grain, sum_body, &s);
  assert_int_equal(atomic_load(&s.sum), serial_sum(b, e));
  assert_int_equal(atomic_load(&s.bad), 0);
  assert_int_equal(atomic_load(&s.bad_worker), 0);
  if (e <= b) {
    assert_int_equal(atomic_load(&s.calls), 0);
    return;
  }
  uint32_t n = e - b;
  uint32_t g = grain ? grain : (n + 255) / 256;
  assert_true(atomic_load(&s.widest) <= g);
  /* Halving stops as soon as a range fits, so ranges are more than half
   * the grain (or the whole range); at least n / g of them. */
  uint32_t calls = atomic_load(&s.calls);
  assert_true(calls >= (n + g - 1) / g);
  if (n <= g)
    assert_int_equal(calls, 1);
}

static void test_pool_parallel_for_matches_serial_sum(void **state) {
  (void)state;
  static const uint32_t cases[][3] = {
      {0, 1000, 0},     /* default grain: (1000 + 255) / 256 = 4 */
      {0, 1000, 1},     /* one item per call */
      {0, 100000, 0},   /* default grain 391 */
      {7, 7, 1},        /* empty */
      {9, 3, 1},        /* end before begin: empty */
      {0, 7, 100},      /* smaller than the grain: one call */
      {100, 101, 0},    /* one item */
      {3, 70003, 64},   /* odd bounds */
      {0, 4096, 4096},  /* exactly the grain */
      {0, 4097, 4096},  /* one more than the grain: two calls */
      {0, 1u << 20, 0}, /* big default grain */
  };
  uint32_t workers[] = {1, 4};
  for (size_t k = 0; k < 2; k++) {
    weft_pool_t *p = pool_of(workers[k]);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
      check_parallel_for(p, WEFT_WORKER_EXTERNAL, cases[i][0], cases[i][1],
                         cases[i][2]);
    weft_pool_destroy(p);
  }
}

/* Records every range a parallel-for hands out. */
#define MAX_RANGES 4096
typedef struct ranges_t {
  uint64_t pairs[MAX_RANGES]; /* begin << 32 | end */
  _Atomic uint32_t n;
} ranges_t;

static void record_body(void *arg, uint32_t b, uint32_t e, uint32_t worker) {
  (void)worker;
  ranges_t *r = arg;
  uint32_t i = atomic_fetch_add(&r->n, 1);
  if (i < MAX_RANGES)
    r->pairs[i] = (uint64_t)b << 32 | e;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void ranges_of(weft_pool_t *p, uint32_t b, uint32_t e, uint32_t grain,
                      ranges_t *r) {
  memset(r, 0, sizeof *r);
  weft_pool_parallel_for(p, WEFT_WORKER_EXTERNAL, b, e, grain, record_body, r);
  uint32_t n = atomic_load(&r->n);
  assert_true(n <= MAX_RANGES);
  qsort(r->pairs, n, sizeof r->pairs[0], cmp_u64);
  /* The ranges tile [b, e) exactly. */
  uint32_t at = b;
  for (uint32_t i = 0; i < n; i++) {
    assert_int_equal(r->pairs[i] >> 32, at);
    at = (uint32_t)r->pairs[i];
  }
  assert_int_equal(at, e);
}

static void test_pool_parallel_for_split_ignores_worker_count(void **state) {
  (void)state;
  static const uint32_t cases[][3] = {
      {0, 1000, 7}, {0, 1000, 0}, {17, 5017, 33}, {0, 1024, 1}, {5, 6, 1}};
  enum { CASES = sizeof cases / sizeof cases[0] };
  static ranges_t want[CASES], got;
  weft_pool_t *p = pool_of(1);
  for (size_t i = 0; i < CASES; i++)
    ranges_of(p, cases[i][0], cases[i][1], cases[i][2], &want[i]);
  weft_pool_destroy(p);
  static const uint32_t more[] = {2, 4};
  for (size_t k = 0; k < 2; k++) {
    p = pool_of(more[k]);
    for (size_t i = 0; i < CASES; i++) {
      ranges_of(p, cases[i][0], cases[i][1], cases[i][2], &got);
      assert_int_equal(atomic_load(&got.n), atomic_load(&want[i].n));
      assert_memory_equal(got.pairs, want[i].pairs,
                          atomic_load(&want[i].n) * sizeof got.pairs[0]);
    }
    weft_pool_destroy(p);
  }
}

/* The outer body runs an inner parallel-for as the worker it received. */
typedef struct nested_t {
  weft_pool_t *pool;
  sum_t inner;
} nested_t;

static void outer_body(void *arg, uint32_t b, uint32_t e, uint32_t worker) {
  nested_t *n = arg;
  for (uint32_t i = b; i < e; i++)
    weft_pool_parallel_for(n->pool, worker, 0, 100, 7, sum_body, &n->inner);
}

static void test_pool_nested_parallel_for(void **state) {
  (void)state;
  uint32_t workers[] = {1, 3};
  for (size_t k = 0; k < 2; k++) {
    weft_pool_t *p = pool_of(workers[k]);
    nested_t n;
    memset(&n, 0, sizeof n);
    n.pool = p;
    n.inner.lo = 0;
    n.inner.hi = 100;
    n.inner.workers = weft_pool_workers(p);
    weft_pool_parallel_for(p, WEFT_WORKER_EXTERNAL, 0, 64, 1, outer_body, &n);
    assert_int_equal(atomic_load(&n.inner.sum), 64 * serial_sum(0, 100));
    assert_int_equal(atomic_load(&n.inner.bad), 0);
    assert_int_equal(atomic_load(&n.inner.bad_worker), 0);
    weft_pool_destroy(p);
  }
}

/* --- stop and start ------------------------------------------------------ */

static void test_pool_stop_then_start_runs_again(void **state) {
  (void)state;
  weft_pool_t *p = pool_of(2);
  hits_reset();
  run_hits(p, 100);
  weft_pool_stop(p);
  weft_pool_stop(p); /* twice is harmless */
  assert_int_equal(weft_pool_start(p), WEFT_OK);
  assert_int_equal(weft_pool_start(p), WEFT_OK); /* already running */
  run_hits(p, 100);
  hits_expect(100, 2);
  check_parallel_for(p, WEFT_WORKER_EXTERNAL, 0, 10000, 16);
  /* Jobs queued before a stop run before it returns. */
  for (uint32_t i = 0; i < HITS; i++)
    weft_pool_submit(p, WEFT_WORKER_EXTERNAL, hit_job, &hits[i], NULL,
                     WEFT_WORKER_EXTERNAL);
  weft_pool_stop(p);
  for (uint32_t i = 0; i < HITS; i++)
    assert_int_equal(atomic_load(&hits[i]), i < 100 ? 3 : 1);
  assert_int_equal(weft_pool_start(p), WEFT_OK);
  weft_pool_destroy(p);
  assert_int_equal(weft_pool_start(NULL), WEFT_EINVAL);
}

typedef struct inline_t {
  pthread_t caller;
  _Atomic uint32_t ran;
  _Atomic uint32_t other_thread;
} inline_t;

static void inline_job(void *arg, uint32_t worker) {
  (void)worker;
  inline_t *t = arg;
  if (!pthread_equal(pthread_self(), t->caller))
    atomic_fetch_add(&t->other_thread, 1);
  atomic_fetch_add(&t->ran, 1);
}

static void test_pool_submit_after_stop_runs_inline(void **state) {
  (void)state;
  weft_pool_t *p = pool_of(2);
  weft_pool_stop(p);
  inline_t t = {.caller = pthread_self()};
  atomic_init(&t.ran, 0);
  atomic_init(&t.other_thread, 0);
  weft_counter_t done;
  counter_init(&done);
  for (uint32_t i = 0; i < 10; i++) {
    weft_pool_submit(p, WEFT_WORKER_EXTERNAL, inline_job, &t, &done,
                     WEFT_WORKER_EXTERNAL);
    assert_int_equal(atomic_load(&t.ran), i + 1); /* before submit returned */
    assert_int_equal(pending(&done), 0);
  }
  assert_int_equal(atomic_load(&t.other_thread), 0);
  /* A parallel-for on a stopped pool runs on the caller too. */
  check_parallel_for(p, WEFT_WORKER_EXTERNAL, 0, 1000, 3);
  assert_int_equal(weft_pool_start(p), WEFT_OK);
  hits_reset();
  run_hits(p, 100);
  hits_expect(100, 1);
  weft_pool_destroy(p);
}

/* --- stats --------------------------------------------------------------- */

typedef struct by_worker_t {
  _Atomic uint32_t by_workers; /* jobs a worker ran (not the test thread) */
  _Atomic uint32_t total;
} by_worker_t;

static void count_job(void *arg, uint32_t worker) {
  by_worker_t *c = arg;
  if (worker != WEFT_WORKER_EXTERNAL)
    atomic_fetch_add(&c->by_workers, 1);
  atomic_fetch_add(&c->total, 1);
}

static void test_pool_worker_stats_count_jobs(void **state) {
  (void)state;
  weft_pool_t *p = pool_of(2);
  weft_worker_stats_t before = stats_sum(p);
  assert_int_equal(before.jobs, 0);
  by_worker_t c;
  atomic_init(&c.by_workers, 0);
  atomic_init(&c.total, 0);
  weft_counter_t done;
  counter_init(&done);
  for (uint32_t i = 0; i < 2000; i++)
    weft_pool_submit(p, WEFT_WORKER_EXTERNAL, count_job, &c, &done,
                     WEFT_WORKER_EXTERNAL);
  weft_pool_wait(p, WEFT_WORKER_EXTERNAL, &done);
  assert_int_equal(atomic_load(&c.total), 2000);
  weft_worker_stats_t after = stats_sum(p);
  assert_true(after.jobs >= atomic_load(&c.by_workers));
  assert_true(after.jobs <= 2000);
  /* Stats only grow. */
  weft_worker_stats_t again = stats_sum(p);
  assert_true(again.jobs >= after.jobs && again.sleeps >= after.sleeps &&
              again.busy_ns >= after.busy_ns && again.idle_ns >= after.idle_ns);

  weft_worker_stats_t s;
  assert_int_equal(weft_pool_worker_stats(p, 2, &s), WEFT_EINVAL);
  assert_int_equal(weft_pool_worker_stats(p, UINT32_MAX, &s), WEFT_EINVAL);
  assert_int_equal(weft_pool_worker_stats(p, 0, NULL), WEFT_EINVAL);
  assert_int_equal(weft_pool_worker_stats(NULL, 0, &s), WEFT_EINVAL);
  weft_pool_destroy(p);
}

/* Each job holds its worker until every worker holds one, then snapshots
 * that worker's stats from inside (where they cannot move). */
enum { IDLE_WORKERS = 2 };
typedef struct idle_t {
  weft_pool_t *pool;
  _Atomic uint32_t arrived, finished;
  uint64_t sleeps_in_job[IDLE_WORKERS];
  _Atomic uint32_t bad_worker;
} idle_t;

static void idle_job(void *arg, uint32_t worker) {
  idle_t *t = arg;
  if (worker >= IDLE_WORKERS) {
    atomic_fetch_add(&t->bad_worker, 1);
    atomic_fetch_add(&t->finished, 1);
    return;
  }
  atomic_fetch_add(&t->arrived, 1);
  for (long spins = 0; atomic_load(&t->arrived) < IDLE_WORKERS; spins++) {
    if (spins > 1000) {
      sleep_ms(1);
      if (spins > 1000 + HANG_MS) { /* the other worker never came */
        atomic_fetch_add(&t->bad_worker, 1);
        break;
      }
    }
  }
  weft_worker_stats_t s;
  weft_pool_worker_stats(t->pool, worker, &s);
  t->sleeps_in_job[worker] = s.sleeps;
  atomic_fetch_add(&t->finished, 1);
}

static void test_pool_idle_pool_sleeps(void **state) {
  (void)state;
  weft_pool_t *p = pool_of(IDLE_WORKERS);
  idle_t t;
  memset(&t, 0, sizeof t);
  t.pool = p;
  /* No counter and no wait: only the workers run these, one each (a job
   * does not return before both are held). */
  for (uint32_t i = 0; i < IDLE_WORKERS; i++)
    weft_pool_submit(p, WEFT_WORKER_EXTERNAL, idle_job, &t, NULL,
                     WEFT_WORKER_EXTERNAL);
  for (int ms = 0; atomic_load(&t.finished) < IDLE_WORKERS; ms++) {
    assert_true(ms < HANG_MS); /* the workers never woke */
    sleep_ms(1);
  }
  assert_int_equal(atomic_load(&t.bad_worker), 0);
  /* Every worker goes to sleep again after its job (poll: slow machines). */
  for (int tries = 0;; tries++) {
    sleep_ms(tries == 0 ? 50 : 10);
    uint32_t asleep = 0;
    for (uint32_t w = 0; w < IDLE_WORKERS; w++)
      asleep += stats_of(p, w).sleeps > t.sleeps_in_job[w];
    if (asleep == IDLE_WORKERS)
      break;
    assert_true(tries < HANG_MS / 10);
  }
  /* Asleep, no busy time and no jobs accrue, and the idle time includes
   * the period in progress: 50 ms per worker at least. */
  weft_worker_stats_t a = stats_sum(p);
  sleep_ms(50);
  weft_worker_stats_t b = stats_sum(p);
  assert_int_equal(b.busy_ns, a.busy_ns);
  assert_int_equal(b.jobs, a.jobs);
  assert_true(b.sleeps >= a.sleeps);
  assert_true(a.busy_ns > 0);
  assert_true(b.idle_ns - a.idle_ns >= IDLE_WORKERS * 50 * 1000000ull);
  /* Stopping closes the periods: nothing is lost or counted twice. */
  weft_pool_stop(p);
  weft_worker_stats_t c = stats_sum(p);
  assert_int_equal(c.busy_ns, b.busy_ns);
  assert_true(c.idle_ns >= b.idle_ns);
  weft_worker_stats_t d = stats_sum(p);
  assert_int_equal(d.idle_ns, c.idle_ns); /* stopped: nothing open */
  weft_pool_destroy(p);
}

/* --- the caller as worker 0 ---------------------------------------------- */

typedef struct seen_t {
  _Atomic uint32_t mask; /* bit w: worker w ran a range; bit 31: other */
  _Atomic uint64_t sum;
} seen_t;

static pthread_t test_thread;

static void seen_body(void *arg, uint32_t b, uint32_t e, uint32_t worker) {
  seen_t *s = arg;
  atomic_fetch_or(&s->mask, worker < 31 ? 1u << worker : 1u << 31);
  /* Worker 0 is the test thread and no other. */
  if ((worker == 0) != (pthread_equal(pthread_self(), test_thread) != 0))
    atomic_fetch_or(&s->mask, 1u << 30);
  uint64_t local = 0;
  for (uint32_t i = b; i < e; i++)
    local += i;
  atomic_fetch_add(&s->sum, local);
}

static void test_pool_caller_participates_as_worker_zero(void **state) {
  (void)state;
  weft_pool_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.placement.workers = 2;
  cfg.placement.caller_participates = true;
  test_thread = pthread_self();
  weft_pool_t *p = pool_new(&cfg);
  assert_int_equal(weft_pool_workers(p), 2);
  assert_false(weft_plan_bound(weft_pool_plan(p), 0));
  for (int round = 0; round < 20; round++) {
    seen_t s;
    atomic_init(&s.mask, 0);
    atomic_init(&s.sum, 0);
    weft_pool_parallel_for(p, 0, 0, 20000, 8, seen_body, &s);
    assert_int_equal(atomic_load(&s.sum), serial_sum(0, 20000));
    uint32_t mask = atomic_load(&s.mask);
    assert_true(mask & 1u); /* the caller ran the first leaf itself */
    assert_int_equal(mask & ~3u, 0);
  }
  /* Jobs submitted as worker 0 and waited for as worker 0. */
  hits_reset();
  weft_counter_t done;
  counter_init(&done);
  for (uint32_t i = 0; i < HITS; i++)
    weft_pool_submit(p, 0, hit_job, &hits[i], &done, WEFT_WORKER_EXTERNAL);
  weft_pool_wait(p, 0, &done);
  hits_expect(HITS, 1);
  /* Outsiders' jobs still run (worker 1 is a thread). */
  run_hits(p, HITS);
  hits_expect(HITS, 2);
  weft_pool_stop(p);
  assert_int_equal(weft_pool_start(p), WEFT_OK);
  weft_pool_destroy(p);

  /* Alone, the caller has no thread: nothing runs until it waits, or until
   * stop runs what is still queued. */
  cfg.placement.workers = 1;
  p = pool_new(&cfg);
  hits_reset();
  counter_init(&done);
  for (uint32_t i = 0; i < 100; i++)
    weft_pool_submit(p, 0, hit_job, &hits[i], &done, WEFT_WORKER_EXTERNAL);
  for (uint32_t i = 100; i < 200; i++)
    weft_pool_submit(p, WEFT_WORKER_EXTERNAL, hit_job, &hits[i], &done,
                     WEFT_WORKER_EXTERNAL);
  sleep_ms(20);
  assert_int_equal(pending(&done), 200);
  hits_expect(0, 0);
  weft_pool_wait(p, 0, &done);
  hits_expect(200, 1);
  for (uint32_t i = 0; i < 100; i++)
    weft_pool_submit(p, 0, hit_job, &hits[i], NULL, WEFT_WORKER_EXTERNAL);
  for (uint32_t i = 100; i < 200; i++)
    weft_pool_submit(p, WEFT_WORKER_EXTERNAL, hit_job, &hits[i], NULL,
                     WEFT_WORKER_EXTERNAL);
  weft_pool_stop(p);
  hits_expect(200, 2);
  weft_pool_destroy(p);
}

/* The calling thread's CPU set. */
static cpu_set_t my_cpus(void) {
  cpu_set_t set;
  CPU_ZERO(&set);
  assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
  return set;
}

/*
 * With bind_caller, the thread acting as worker 0 is bound to worker 0's
 * place (one PU here) the first time it waits or runs a parallel-for, and
 * gets its own binding back when it destroys the pool; without it, the
 * caller is never bound.
 */
static void test_pool_bind_caller_binds_worker_zero(void **state) {
  (void)state;
  const cpu_set_t before = my_cpus();
  for (int bind = 0; bind < 2; bind++) {
    weft_pool_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.placement.workers = 2;
    cfg.placement.pin = WEFT_PIN_PU;
    cfg.placement.caller_participates = true;
    cfg.placement.bind_caller = bind != 0;
    weft_pool_t *p = pool_new(&cfg);
    const weft_plan_t *plan = weft_pool_plan(p);
    assert_int_equal(weft_plan_bound(plan, 0), bind != 0);
    assert_true(weft_plan_bound(plan, 1));
    cpu_set_t now = my_cpus();
    assert_true(CPU_EQUAL(&now, &before)); /* not at creation */
    check_parallel_for(p, 0, 0, 1000, 10);
    cpu_set_t want;
    CPU_ZERO(&want);
    CPU_SET(weft_plan_place(plan, 0)->os_pu, &want);
    now = my_cpus();
    assert_true(CPU_EQUAL(&now, bind ? &want : &before));
    weft_counter_t done;
    counter_init(&done);
    weft_pool_submit(p, 0, hit_job, &hits[0], &done, WEFT_WORKER_EXTERNAL);
    weft_pool_wait(p, 0, &done); /* again: still bound, once */
    now = my_cpus();
    assert_true(CPU_EQUAL(&now, bind ? &want : &before));
    weft_pool_destroy(p);
    now = my_cpus();
    assert_true(CPU_EQUAL(&now, &before));
  }
}

/* Two pools binding the same caller, destroyed in either order, leave it
 * with the binding it had before both; one the program made after the
 * pool bound it stays. (The second pool used to restore the first pool's
 * binding when it was first used last and destroyed last: weft-bench's
 * main thread then ran every later row on one CPU.) */
static weft_pool_t *bound_pool(void) {
  weft_pool_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.placement.workers = 2;
  cfg.placement.pin = WEFT_PIN_PU;
  cfg.placement.caller_participates = true;
  cfg.placement.bind_caller = true;
  return pool_new(&cfg);
}

static void test_pool_bind_caller_restores_in_any_order(void **state) {
  (void)state;
  const cpu_set_t before = my_cpus();
  for (int order = 0; order < 4; order++) {
    weft_pool_t *a = bound_pool(), *b = bound_pool();
    /* First use (which binds) a then b, or b then a. */
    weft_pool_t *first = order & 1 ? b : a, *second = order & 1 ? a : b;
    check_parallel_for(first, 0, 0, 100, 10);
    check_parallel_for(second, 0, 0, 100, 10);
    weft_pool_destroy(order & 2 ? b : a);
    weft_pool_destroy(order & 2 ? a : b);
    cpu_set_t now = my_cpus();
    assert_true(CPU_EQUAL(&now, &before));
  }
  /* A binding the program made after the pool's is left alone: the last
   * CPU of the mask, unless that is where the pool put the thread (one
   * CPU: nothing to tell apart). */
  weft_pool_t *p = bound_pool();
  check_parallel_for(p, 0, 0, 100, 10);
  const uint32_t at = weft_plan_place(weft_pool_plan(p), 0)->os_pu;
  cpu_set_t mine;
  CPU_ZERO(&mine);
  for (int c = CPU_SETSIZE - 1; c >= 0; c--)
    if (CPU_ISSET(c, &before)) {
      CPU_SET(c, &mine);
      break;
    }
  const bool differs = !CPU_ISSET(at, &mine);
  assert_int_equal(sched_setaffinity(0, sizeof mine, &mine), 0);
  weft_pool_destroy(p);
  cpu_set_t now = my_cpus();
  if (differs)
    assert_true(CPU_EQUAL(&now, &mine));
  assert_int_equal(sched_setaffinity(0, sizeof before, &before), 0);
}

/* --- full queues --------------------------------------------------------- */

static void test_pool_tiny_queue_runs_overflow_inline(void **state) {
  (void)state;
  weft_pool_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.queue_capacity = 2;
  /* The caller alone (no threads): its ring of 2 must overflow, always. */
  cfg.placement.workers = 1;
  cfg.placement.caller_participates = true;
  weft_pool_t *p = pool_new(&cfg);
  check_parallel_for(p, 0, 0, 1000, 1);
  hits_reset();
  weft_counter_t done;
  counter_init(&done);
  for (uint32_t i = 0; i < HITS; i++)
    weft_pool_submit(p, 0, hit_job, &hits[i], &done, WEFT_WORKER_EXTERNAL);
  weft_pool_wait(p, 0, &done);
  hits_expect(HITS, 1);
  weft_worker_stats_t s = stats_of(p, 0);
  assert_true(s.inline_jobs > 0);
  weft_pool_destroy(p);

  /* Two threads, rings and injection queues of 2: everything still runs. */
  cfg.placement.workers = 2;
  cfg.placement.caller_participates = false;
  p = pool_new(&cfg);
  hits_reset();
  run_hits(p, HITS);
  hits_expect(HITS, 1);
  check_parallel_for(p, WEFT_WORKER_EXTERNAL, 0, 5000, 1);
  nested_t n;
  memset(&n, 0, sizeof n);
  n.pool = p;
  n.inner.hi = 100;
  n.inner.workers = 2;
  weft_pool_parallel_for(p, WEFT_WORKER_EXTERNAL, 0, 64, 1, outer_body, &n);
  assert_int_equal(atomic_load(&n.inner.sum), 64 * serial_sum(0, 100));
  weft_pool_destroy(p);
}

/* --- NUMA homes for chunk memory ---------------------------------------- */

/* Spawns n entities one by one and returns the home node of every chunk
 * in iteration order (at most max). */
static uint32_t chunk_homes(weft_world_t *w, uint32_t n, uint32_t *homes,
                            uint32_t max) {
  weft_component_t c = wt_register(w, "v", 16, 0);
  const weft_component_t comps[] = {c, 0};
  for (uint32_t i = 0; i < n; i++)
    wt_spawn_with(w, comps, NULL);
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = c;
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(w, &qd, &q), WEFT_OK);
  uint32_t k = 0;
  weft_iter_t it;
  for (weft_query_iter(q, &it); weft_iter_next(&it);)
    if (k < max)
      homes[k++] = it.home_node;
  weft_query_destroy(q);
  return k;
}

static void test_pool_world_chunks_take_numa_homes(void **state) {
  (void)state;
  /* Four NUMA nodes, one core each. */
  weft_pool_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.synthetic = "pack:2 numa:2 l3:1 core:1 pu:1";
  weft_pool_t *p = NULL;
  assert_int_equal(weft_pool_create(&cfg, &p), WEFT_OK);
  assert_int_equal(weft_plan_groups(weft_pool_plan(p)), 4);
  weft_world_config_t wc;
  memset(&wc, 0, sizeof wc);
  wc.chunk_size = 4096;
  wc.pool = p;
  weft_world_t *w = wt_world_new(&wc);
  uint32_t homes[64];
#ifdef WEFT_JEMALLOC
  /* weft's jemalloc's arena count, to see one arena made per group in use. */
  unsigned narenas0 = weft__alloc_arenas();
  assert_int_not_equal(narenas0, 0);
#endif
  /* An archetype's segments hold 1, 1, 2, 4, 8, 16 chunks (each doubles
   * what exists) and take groups 0, 1, 2, 3, 0, 1 in turn. A row is an
   * 8-byte handle and a 16-byte value; 4096-byte chunks hold 4096 / 24
   * rows, rounded down to a multiple of 64: 128. */
  const uint32_t rows = 128;
  uint32_t n = chunk_homes(w, rows * 31, homes, 64);
  assert_int_equal(n, 31);
  static const uint32_t seg_len[] = {1, 1, 2, 4, 8, 15};
  static const uint32_t seg_node[] = {0, 1, 2, 3, 0, 1};
  uint32_t k = 0;
  for (uint32_t s = 0; s < 6; s++)
    for (uint32_t j = 0; j < seg_len[s]; j++, k++)
      assert_int_equal(homes[k], seg_node[s]);
#ifdef WEFT_JEMALLOC
  assert_int_equal(weft__alloc_arenas() - narenas0, 4);
#endif
  weft_world_destroy(w);
  /* Without a pool every chunk is on node 0. */
  w = wt_world_new(&(weft_world_config_t){.chunk_size = 4096});
  n = chunk_homes(w, rows * 31, homes, 64);
  assert_int_equal(n, 31);
  for (uint32_t i = 0; i < n; i++)
    assert_int_equal(homes[i], 0);
  weft_world_destroy(w);
  weft_pool_destroy(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pool_create_with_defaults),
      cmocka_unit_test(test_pool_create_with_explicit_workers),
      cmocka_unit_test(test_pool_create_rejects_bad_config),
      cmocka_unit_test(test_pool_synthetic_placement),
      cmocka_unit_test(test_pool_submit_to_other_nodes_from_workers),
      cmocka_unit_test(test_pool_external_jobs_run_exactly_once),
      cmocka_unit_test(test_pool_job_submits_jobs),
      cmocka_unit_test(test_pool_dependency_chain_runs_in_order),
      cmocka_unit_test(test_pool_diamond_runs_in_order),
      cmocka_unit_test(test_pool_parallel_for_matches_serial_sum),
      cmocka_unit_test(test_pool_parallel_for_split_ignores_worker_count),
      cmocka_unit_test(test_pool_nested_parallel_for),
      cmocka_unit_test(test_pool_stop_then_start_runs_again),
      cmocka_unit_test(test_pool_submit_after_stop_runs_inline),
      cmocka_unit_test(test_pool_worker_stats_count_jobs),
      cmocka_unit_test(test_pool_idle_pool_sleeps),
      cmocka_unit_test(test_pool_caller_participates_as_worker_zero),
      cmocka_unit_test(test_pool_bind_caller_binds_worker_zero),
      cmocka_unit_test(test_pool_bind_caller_restores_in_any_order),
      cmocka_unit_test(test_pool_tiny_queue_runs_overflow_inline),
      cmocka_unit_test(test_pool_world_chunks_take_numa_homes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
