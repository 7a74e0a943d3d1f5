/* SPDX-License-Identifier: MIT */
/*
 * Oversubscription torture: pools with four workers per CPU the process
 * may run on, as in a container whose CPU quota is below its CPU count.
 *
 * - A crew (the workers bound to the same CPUs) never runs more jobs at
 *   once than it has CPUs, except for the jobs its sleepers took as
 *   rescues: checked on bursts of short jobs, against the pool's own
 *   count of rescues. Before crews, every sleeper woke for the burst and
 *   four jobs ran at once on one CPU. Likewise a pool under a CPU limit
 *   (a cgroup quota) runs no more jobs at once than the limit.
 * - Every job still runs exactly once: nested parallel-fors and outside
 *   submitters on an oversubscribed pool, checked against a serial sum.
 * - When the awake workers of every crew are held up outside the pool
 *   (a job blocked in the kernel), their sleepers take the queued jobs
 *   (rescues) instead of waiting for them.
 *
 * Nothing here asserts on time: a loaded machine only makes it slower.
 * These tests need this machine's topology (they bind threads); with
 * HWLOC_XMLFILE or HWLOC_SYNTHETIC set they are skipped.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "support/weft_test.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "scheduler/pool_internal.h"

#define OVERSUB_FACTOR 4u
/* A test that waits longer than this for something that must happen calls
 * it a hang and fails. */
#define OVERSUB_HANG_S 60.0

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

static bool foreign_machine(void) {
  return getenv("HWLOC_XMLFILE") || getenv("HWLOC_SYNTHETIC");
}

/* A pool of OVERSUB_FACTOR workers per CPU of this process, none of them
 * the caller; *cpus gets the CPUs the workers are bound to. */
static weft_pool_t *oversub_pool(uint32_t *cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
  uint32_t n = (uint32_t)CPU_COUNT(&set);
  weft_pool_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.placement.workers = OVERSUB_FACTOR * n;
  weft_pool_t *p = NULL;
  assert_int_equal(weft_pool_create(&cfg, &p), WEFT_OK);
  weft_pool_stats_t st;
  assert_int_equal(weft_pool_stats(p, &st), WEFT_OK);
  /* Workers are bound per core: at most one awake per core's PU. */
  assert_true(st.cpus >= 1 && st.cpus <= n);
  assert_true(st.crews >= 1 && st.crews <= st.cpus);
  *cpus = st.cpus;
  return p;
}

/* Waits until every worker has gone to sleep once with nothing queued:
 * from then on a worker is awake only when woken, rescued or busy. */
static void wait_all_asleep(weft_pool_t *p) {
  double t0 = wt_now_s();
  for (uint32_t w = 0; w < weft_pool_workers(p); w++) {
    weft_worker_stats_t s;
    for (;;) {
      assert_int_equal(weft_pool_worker_stats(p, w, &s), WEFT_OK);
      if (s.sleeps > 0)
        break;
      if (wt_now_s() - t0 > OVERSUB_HANG_S)
        fail_msg("worker %u never went to sleep", w);
      sleep_us(1000);
    }
  }
}

/* ---- a crew runs at most one job per CPU ----------------------------------
 */

typedef struct crowd_t {
  weft_pool_t *pool;
  _Atomic uint32_t *running;              /* per crew */
  _Atomic uint32_t *most;                 /* per crew: the most seen at once */
  _Atomic uint32_t running_all, most_all; /* the same over the pool */
  _Atomic uint64_t ran;
} crowd_t;

static void raise_to(_Atomic uint32_t *most, uint32_t now) {
  uint32_t seen = atomic_load(most);
  while (now > seen && !atomic_compare_exchange_weak(most, &seen, now))
    ;
}

/* Busy for 100 us of wall time (preempted time included, so that jobs
 * sharing a CPU overlap as they would on a crowded one). */
static void spin_a_little(void) {
  double until = wt_now_s() + 100e-6;
  while (wt_now_s() < until)
    ;
}

/* Crew k's rescues so far. */
static uint64_t crew_rescues(weft_pool_t *p, uint32_t k) {
  uint64_t n = 0;
  for (uint32_t i = 0; i < p->crews[k].nworkers; i++) {
    weft_worker_stats_t s;
    assert_int_equal(weft_pool_worker_stats(p, p->crews[k].members[i], &s),
                     WEFT_OK);
    n += s.rescues;
  }
  return n;
}

static void crowd_range(void *arg, uint32_t b, uint32_t e, uint32_t self) {
  crowd_t *c = arg;
  for (uint32_t i = b; i < e; i++) {
    if (self < c->pool->nworkers) {
      uint32_t k = c->pool->workers[self].crew;
      raise_to(&c->most[k], atomic_fetch_add(&c->running[k], 1) + 1);
      raise_to(&c->most_all, atomic_fetch_add(&c->running_all, 1) + 1);
      spin_a_little();
      atomic_fetch_sub(&c->running_all, 1);
      atomic_fetch_sub(&c->running[k], 1);
    } else {
      spin_a_little(); /* the test thread helping: in no crew */
    }
    atomic_fetch_add(&c->ran, 1);
  }
}

/* Bursts of short jobs from the test thread (in no crew) on pool p. */
static void crowd_run(crowd_t *c, weft_pool_t *p) {
  memset(c, 0, sizeof *c);
  c->pool = p;
  c->running = calloc(p->ncrews, sizeof *c->running);
  c->most = calloc(p->ncrews, sizeof *c->most);
  assert_non_null(c->running);
  assert_non_null(c->most);
  wait_all_asleep(p);
  const uint32_t rounds = 100, jobs = 64;
  for (uint32_t r = 0; r < rounds; r++) {
    weft_pool_parallel_for(p, UINT32_MAX, 0, jobs, 1, crowd_range, c);
    if (r % 10 == 0)
      sleep_us(5000); /* let everyone sleep again between bursts */
  }
  assert_int_equal(atomic_load(&c->ran), (uint64_t)rounds * jobs);
}

static void test_oversub_crew_runs_one_job_per_cpu(void **state) {
  (void)state;
  if (foreign_machine())
    skip();
  uint32_t cpus;
  weft_pool_t *p = oversub_pool(&cpus);
  crowd_t c;
  crowd_run(&c, p);
  weft_pool_stats_t st;
  assert_int_equal(weft_pool_stats(p, &st), WEFT_OK);
  uint32_t most_any = 0;
  for (uint32_t k = 0; k < p->ncrews; k++) {
    uint32_t most = atomic_load(&c.most[k]);
    uint64_t rescues = crew_rescues(p, k);
    most_any = most > most_any ? most : most_any;
    if (most > p->crews[k].cpus + rescues)
      fail_msg("crew %u (%u CPUs, %u workers) ran %u jobs at once with "
               "%llu rescues",
               k, p->crews[k].cpus, p->crews[k].nworkers, most,
               (unsigned long long)rescues);
  }
  print_message("%u crews, %u CPUs, %u workers: at most %u jobs at once in "
                "a crew, %llu rescues\n",
                p->ncrews, cpus, weft_pool_workers(p), most_any,
                (unsigned long long)st.rescues);
  free(c.running);
  free(c.most);
  weft_pool_destroy(p);
}

/* A CPU limit (a cgroup quota) below the CPUs: the whole pool runs at
 * most that many jobs at once, besides its rescues. */
static void test_oversub_cpu_limit_caps_the_pool(void **state) {
  (void)state;
  if (foreign_machine())
    skip();
  weft_pool_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.placement.workers = 4;
  cfg.cpu_limit = 1;
  weft_pool_t *p = NULL;
  assert_int_equal(weft_pool_create(&cfg, &p), WEFT_OK);
  weft_pool_stats_t st;
  assert_int_equal(weft_pool_stats(p, &st), WEFT_OK);
  assert_int_equal(st.cpus, 1);
  crowd_t c;
  crowd_run(&c, p);
  assert_int_equal(weft_pool_stats(p, &st), WEFT_OK);
  uint32_t most = atomic_load(&c.most_all);
  if (most > 1 + st.rescues)
    fail_msg("a pool limited to 1 CPU ran %u jobs at once with %llu rescues",
             most, (unsigned long long)st.rescues);
  print_message("limit 1 CPU, 4 workers: at most %u jobs at once, %llu "
                "rescues\n",
                most, (unsigned long long)st.rescues);
  free(c.running);
  free(c.most);
  weft_pool_destroy(p);
}

/* ---- every job runs once --------------------------------------------------
 */

typedef struct sum_t {
  weft_pool_t *pool;
  _Atomic uint8_t *hits;
  uint32_t n, inner;
} sum_t;

static void sum_inner(void *arg, uint32_t b, uint32_t e, uint32_t self) {
  (void)self;
  sum_t *s = arg;
  for (uint32_t i = b; i < e; i++)
    atomic_fetch_add(&s->hits[i], 1);
}

/* Each outer index runs a nested parallel-for over its own block. */
static void sum_outer(void *arg, uint32_t b, uint32_t e, uint32_t self) {
  sum_t *s = arg;
  for (uint32_t i = b; i < e; i++)
    weft_pool_parallel_for(s->pool, self, i * s->inner, (i + 1) * s->inner, 8,
                           sum_inner, s);
}

typedef struct outsider_t {
  weft_pool_t *pool;
  _Atomic uint64_t done;
  uint32_t jobs;
} outsider_t;

static void outsider_job(void *arg, uint32_t self) {
  (void)self;
  outsider_t *o = arg;
  atomic_fetch_add(&o->done, 1);
}

static void *outsider_main(void *arg) {
  outsider_t *o = arg;
  weft_counter_t c;
  memset(&c, 0, sizeof c);
  atomic_init(&c.pending, 0);
  for (uint32_t i = 0; i < o->jobs; i++) {
    weft_pool_submit(o->pool, UINT32_MAX, outsider_job, o, &c, UINT32_MAX);
    if (i % 64 == 63)
      weft_pool_wait(o->pool, UINT32_MAX, &c);
  }
  weft_pool_wait(o->pool, UINT32_MAX, &c);
  return NULL;
}

static void test_oversub_every_job_runs_once(void **state) {
  (void)state;
  if (foreign_machine())
    skip();
  uint32_t cpus;
  weft_pool_t *p = oversub_pool(&cpus);
  sum_t s = {.pool = p, .n = 512, .inner = 64};
  s.hits = calloc((size_t)s.n * s.inner, sizeof *s.hits);
  assert_non_null(s.hits);
  outsider_t o = {.pool = p, .jobs = 20000};
  pthread_t th[2];
  for (int t = 0; t < 2; t++)
    assert_int_equal(pthread_create(&th[t], NULL, outsider_main, &o), 0);
  for (uint32_t round = 0; round < 8; round++) {
    weft_pool_parallel_for(p, UINT32_MAX, 0, s.n, 1, sum_outer, &s);
    if (round == 3) { /* a stop and start with outsiders submitting */
      weft_pool_stop(p);
      assert_int_equal(weft_pool_start(p), WEFT_OK);
    }
  }
  for (int t = 0; t < 2; t++)
    assert_int_equal(pthread_join(th[t], NULL), 0);
  for (uint32_t i = 0; i < s.n * s.inner; i++)
    if (atomic_load(&s.hits[i]) != 8)
      fail_msg("item %u ran %u times, not 8", i, atomic_load(&s.hits[i]));
  assert_int_equal(atomic_load(&o.done), 2ull * o.jobs);
  free(s.hits);
  weft_pool_destroy(p);
}

/* ---- sleepers rescue a crew held up outside the pool ----------------------
 */

typedef struct held_t {
  uint32_t shorts;          /* short jobs queued behind the blockers */
  _Atomic uint32_t started; /* blockers running */
  _Atomic uint32_t done;    /* short jobs finished */
  _Atomic uint32_t gave_up; /* blockers that waited in vain */
} held_t;

/* Blocks in the kernel (not on a CPU) until every short job ran: only a
 * rescue can run them while all awake workers sit here. */
static void blocker_job(void *arg, uint32_t self) {
  (void)self;
  held_t *h = arg;
  atomic_fetch_add(&h->started, 1);
  double t0 = wt_now_s();
  while (atomic_load(&h->done) < h->shorts) {
    if (wt_now_s() - t0 > OVERSUB_HANG_S) {
      atomic_fetch_add(&h->gave_up, 1);
      return;
    }
    sleep_us(500);
  }
}

static void short_job(void *arg, uint32_t self) {
  (void)self;
  held_t *h = arg;
  atomic_fetch_add(&h->done, 1);
}

static void test_oversub_sleepers_rescue_a_held_crew(void **state) {
  (void)state;
  if (foreign_machine())
    skip();
  uint32_t cpus;
  weft_pool_t *p = oversub_pool(&cpus);
  wait_all_asleep(p);
  /* One blocker per CPU: every crew's awake workers end up blocked. The
   * test thread never helps (no weft_pool_wait): it polls. */
  held_t h = {.shorts = 32};
  weft_counter_t c;
  memset(&c, 0, sizeof c);
  atomic_init(&c.pending, 0);
  for (uint32_t i = 0; i < cpus; i++)
    weft_pool_submit(p, UINT32_MAX, blocker_job, &h, &c, UINT32_MAX);
  double t0 = wt_now_s();
  while (atomic_load(&h.started) < cpus && wt_now_s() - t0 < OVERSUB_HANG_S)
    sleep_us(200);
  for (uint32_t i = 0; i < h.shorts; i++)
    weft_pool_submit(p, UINT32_MAX, short_job, &h, &c, UINT32_MAX);
  while (atomic_load_explicit(&c.pending, memory_order_acquire) != 0 &&
         wt_now_s() - t0 < 2 * OVERSUB_HANG_S)
    sleep_us(1000);
  assert_int_equal(atomic_load(&h.gave_up), 0);
  assert_int_equal(atomic_load(&h.done), h.shorts);
  weft_pool_stats_t st;
  assert_int_equal(weft_pool_stats(p, &st), WEFT_OK);
  assert_true(st.rescues >= 1);
  print_message("%u blockers, %u short jobs: %llu rescues\n", cpus, h.shorts,
                (unsigned long long)st.rescues);
  weft_pool_destroy(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_oversub_crew_runs_one_job_per_cpu),
      cmocka_unit_test(test_oversub_cpu_limit_caps_the_pool),
      cmocka_unit_test(test_oversub_every_job_runs_once),
      cmocka_unit_test(test_oversub_sleepers_rescue_a_held_crew),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
