/* SPDX-License-Identifier: MIT */
/*
 * Worker-pool torture: millions of tiny jobs submitted from outside and
 * from inside jobs (each must run exactly once), parallel-for nested three
 * deep, dependency chains and diamonds by the hundred, four outside threads
 * submitting and waiting while parallel-fors run, and hundreds of stop/start
 * cycles with jobs in flight and an outsider submitting across them. Every
 * result is checked against a serial computation.
 *
 * Sizes fit a ThreadSanitizer build on two cores (about 15 s); the
 * environment variable WEFT_POOL_SCALE (a positive integer, default 1)
 * multiplies them.
 */
#include "support/weft_test.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

/* --- helpers ------------------------------------------------------------- */

static uint32_t scale(void) {
  static uint32_t s;
  if (s == 0) {
    const char *e = getenv("WEFT_POOL_SCALE");
    long v = e ? strtol(e, NULL, 10) : 1;
    s = v >= 1 && v <= 1000 ? (uint32_t)v : 1;
  }
  return s;
}

static weft_pool_t *pool_of(uint32_t workers) {
  weft_pool_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.placement.workers = workers;
  weft_pool_t *p = NULL;
  assert_int_equal(weft_pool_create(&cfg, &p), WEFT_OK);
  assert_non_null(p);
  return p;
}

static void counter_init(weft_counter_t *c) {
  memset(c, 0, sizeof *c);
  atomic_init(&c->pending, 0);
}

/* The workers' summed stats, printed for the record. */
static void report(const char *what, weft_pool_t *p, double t0) {
  uint64_t jobs = 0, inl = 0, steals = 0, sleeps = 0;
  for (uint32_t w = 0; w < weft_pool_workers(p); w++) {
    weft_worker_stats_t s;
    assert_int_equal(weft_pool_worker_stats(p, w, &s), WEFT_OK);
    jobs += s.jobs;
    inl += s.inline_jobs;
    steals += s.local_steals + s.remote_steals;
    sleeps += s.sleeps;
  }
  print_message("%s: %.2f s; worker jobs %llu, inline %llu, steals %llu, "
                "sleeps %llu\n",
                what, wt_now_s() - t0, (unsigned long long)jobs,
                (unsigned long long)inl, (unsigned long long)steals,
                (unsigned long long)sleeps);
}

/* --- millions of tiny jobs ----------------------------------------------- */

/* hits[i] counts runs of job i. Parents run on workers (or on the waiting
 * test thread) and submit their children as whichever worker they got. */
typedef struct tiny_t {
  weft_pool_t *pool;
  weft_counter_t *done;
  _Atomic uint8_t *hits;
  uint32_t children;
} tiny_t;

static tiny_t tiny;

static void tiny_leaf(void *arg, uint32_t worker) {
  (void)worker;
  atomic_fetch_add_explicit((_Atomic uint8_t *)arg, 1, memory_order_relaxed);
}

/* arg: the first child's index, disguised as a pointer (never NULL). */
static void tiny_parent(void *arg, uint32_t worker) {
  uint32_t first = (uint32_t)((uintptr_t)arg - 1);
  for (uint32_t k = 0; k < tiny.children; k++)
    weft_pool_submit(tiny.pool, worker, tiny_leaf, &tiny.hits[first + k],
                     tiny.done, k & 1 ? 0 : WEFT_WORKER_EXTERNAL);
}

static void tiny_range(void *arg, uint32_t b, uint32_t e, uint32_t worker) {
  (void)worker;
  _Atomic uint8_t *hits = arg;
  for (uint32_t i = b; i < e; i++)
    atomic_fetch_add_explicit(&hits[i], 1, memory_order_relaxed);
}

static void stress_pool_millions_of_tiny_jobs(void **state) {
  (void)state;
  double t0 = wt_now_s();
  /* Half submitted from outside one by one, half by parent jobs. */
  const uint32_t children = 255;
  const uint32_t direct = 1000000u * scale();
  const uint32_t parents = (direct + children - 1) / children;
  const uint32_t n = direct + parents * children;
  _Atomic uint8_t *hits = calloc(n, sizeof *hits);
  assert_non_null(hits);
  weft_pool_t *p = pool_of(0);
  weft_counter_t done;
  counter_init(&done);
  tiny = (tiny_t){p, &done, hits, children};
  for (uint32_t i = 0; i < parents; i++) {
    weft_pool_submit(p, WEFT_WORKER_EXTERNAL, tiny_parent,
                     (void *)(uintptr_t)(direct + i * children + 1), &done,
                     WEFT_WORKER_EXTERNAL);
    /* Interleave the direct jobs with the parents. */
    uint32_t lo = (uint32_t)((uint64_t)direct * i / parents);
    uint32_t hi = (uint32_t)((uint64_t)direct * (i + 1) / parents);
    for (uint32_t j = lo; j < hi; j++)
      weft_pool_submit(p, WEFT_WORKER_EXTERNAL, tiny_leaf, &hits[j], &done,
                       j & 1 ? 0 : WEFT_WORKER_EXTERNAL);
  }
  weft_pool_wait(p, WEFT_WORKER_EXTERNAL, &done);
  assert_int_equal(atomic_load(&done.pending), 0);
  uint32_t wrong = 0;
  for (uint32_t i = 0; i < n; i++)
    wrong += atomic_load_explicit(&hits[i], memory_order_relaxed) != 1;
  assert_int_equal(wrong, 0);
  char what[64];
  snprintf(what, sizeof what, "%u tiny jobs", n);
  report(what, p, t0);
  weft_pool_destroy(p);
  free(hits);
}

/* --- tiny queues --------------------------------------------------------- */

/* Rings, deques and injection queues of four: slots are reused constantly
 * (a thief frees one while the owner wraps around to it) and overflow runs
 * inline, while every job still runs exactly once. */
static void stress_pool_tiny_queues(void **state) {
  (void)state;
  double t0 = wt_now_s();
  const uint32_t children = 63;
  const uint32_t parents = 4000 * scale();
  const uint32_t n = parents * children;
  _Atomic uint8_t *hits = calloc(n, sizeof *hits);
  assert_non_null(hits);
  weft_pool_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.placement.workers = 3;
  cfg.queue_capacity = 4;
  weft_pool_t *p = NULL;
  assert_int_equal(weft_pool_create(&cfg, &p), WEFT_OK);
  weft_counter_t done;
  counter_init(&done);
  tiny = (tiny_t){p, &done, hits, children};
  for (uint32_t i = 0; i < parents; i++)
    weft_pool_submit(p, WEFT_WORKER_EXTERNAL, tiny_parent,
                     (void *)(uintptr_t)(i * children + 1), &done,
                     WEFT_WORKER_EXTERNAL);
  weft_pool_wait(p, WEFT_WORKER_EXTERNAL, &done);
  uint32_t wrong = 0;
  for (uint32_t i = 0; i < n; i++)
    wrong += atomic_load_explicit(&hits[i], memory_order_relaxed) != 1;
  assert_int_equal(wrong, 0);
  /* Parallel-for with a grain of 1 overflows at every level. */
  memset(hits, 0, n);
  for (uint32_t r = 0; r < 4 * scale(); r++)
    weft_pool_parallel_for(p, WEFT_WORKER_EXTERNAL, 0, 50000, 1, tiny_range,
                           hits);
  for (uint32_t i = 0; i < 50000; i++)
    wrong +=
        atomic_load_explicit(&hits[i], memory_order_relaxed) != 4 * scale();
  assert_int_equal(wrong, 0);
  report("tiny queues", p, t0);
  weft_pool_destroy(p);
  free(hits);
}

/* --- parallel-for three deep --------------------------------------------- */

enum { NA = 16, NB = 16, NC = 128 };

typedef struct nest_t {
  weft_pool_t *pool;
  _Atomic uint8_t cells[NA * NB * NC]; /* runs of each innermost item */
  _Atomic uint64_t sum;
} nest_t;

typedef struct nest_arg_t {
  nest_t *n;
  uint32_t i, j;
} nest_arg_t;

static void nest_inner(void *arg, uint32_t b, uint32_t e, uint32_t worker) {
  (void)worker;
  nest_arg_t *a = arg;
  uint64_t local = 0;
  for (uint32_t k = b; k < e; k++) {
    uint32_t cell = (a->i * NB + a->j) * NC + k;
    atomic_fetch_add_explicit(&a->n->cells[cell], 1, memory_order_relaxed);
    local += (uint64_t)cell * cell;
  }
  atomic_fetch_add(&a->n->sum, local);
}

static void nest_middle(void *arg, uint32_t b, uint32_t e, uint32_t worker) {
  nest_arg_t *a = arg;
  for (uint32_t j = b; j < e; j++) {
    nest_arg_t inner = {a->n, a->i, j};
    weft_pool_parallel_for(a->n->pool, worker, 0, NC, 8, nest_inner, &inner);
  }
}

static void nest_outer(void *arg, uint32_t b, uint32_t e, uint32_t worker) {
  nest_t *n = arg;
  for (uint32_t i = b; i < e; i++) {
    nest_arg_t middle = {n, i, 0};
    weft_pool_parallel_for(n->pool, worker, 0, NB, 2, nest_middle, &middle);
  }
}

static void stress_pool_parallel_for_three_deep(void **state) {
  (void)state;
  double t0 = wt_now_s();
  uint64_t want = 0;
  for (uint64_t c = 0; c < NA * NB * NC; c++)
    want += c * c;
  static nest_t n;
  weft_pool_t *p = pool_of(3);
  const uint32_t rounds = 30 * scale();
  for (uint32_t r = 0; r < rounds; r++) {
    memset(&n, 0, sizeof n);
    n.pool = p;
    weft_pool_parallel_for(p, WEFT_WORKER_EXTERNAL, 0, NA, 1, nest_outer, &n);
    assert_int_equal(atomic_load(&n.sum), want);
    for (uint32_t c = 0; c < NA * NB * NC; c++)
      assert_int_equal(atomic_load(&n.cells[c]), 1);
  }
  report("parallel-for three deep", p, t0);
  weft_pool_destroy(p);
}

/* --- chains and diamonds ------------------------------------------------- */

enum { CHAINS = 8, CHAIN_LEN = 32, DIAMONDS = 16 }; /* CHAINS <= DIAMONDS */

typedef struct chain_t {
  weft_pool_t *pool;
  weft_counter_t *done;
  _Atomic uint32_t next;
  _Atomic uint32_t out_of_order;
  _Atomic uint64_t sum; /* of step * step */
} chain_t;

typedef struct step_t {
  chain_t *chain;
  uint32_t step;
} step_t;

static step_t steps[CHAINS][CHAIN_LEN];

static void chain_job(void *arg, uint32_t worker) {
  step_t *s = arg;
  chain_t *c = s->chain;
  if (atomic_fetch_add(&c->next, 1) != s->step)
    atomic_fetch_add(&c->out_of_order, 1);
  atomic_fetch_add(&c->sum, (uint64_t)s->step * s->step);
  if (s->step + 1 < CHAIN_LEN)
    weft_pool_submit(c->pool, worker, chain_job, s + 1, c->done,
                     WEFT_WORKER_EXTERNAL);
}

typedef struct diamond_t {
  weft_pool_t *pool;
  weft_counter_t *all;
  weft_counter_t mid;
  _Atomic uint32_t a_done, sides_done, d_done;
  _Atomic uint32_t wrong; /* a step that ran before its inputs */
} diamond_t;

static void diamond_side(void *arg, uint32_t worker) {
  (void)worker;
  diamond_t *g = arg;
  if (atomic_load(&g->a_done) != 1)
    atomic_fetch_add(&g->wrong, 1);
  atomic_fetch_add(&g->sides_done, 1);
}

static void diamond_d(void *arg, uint32_t worker) {
  (void)worker;
  diamond_t *g = arg;
  if (atomic_load(&g->sides_done) != 2)
    atomic_fetch_add(&g->wrong, 1);
  atomic_fetch_add(&g->d_done, 1);
}

static void diamond_a(void *arg, uint32_t worker) {
  diamond_t *g = arg;
  atomic_fetch_add(&g->a_done, 1);
  weft_pool_submit(g->pool, worker, diamond_side, g, &g->mid,
                   WEFT_WORKER_EXTERNAL);
  weft_pool_submit(g->pool, worker, diamond_side, g, &g->mid,
                   WEFT_WORKER_EXTERNAL);
  weft_pool_wait(g->pool, worker, &g->mid);
  if (atomic_load(&g->sides_done) != 2)
    atomic_fetch_add(&g->wrong, 1);
  weft_pool_submit(g->pool, worker, diamond_d, g, g->all, WEFT_WORKER_EXTERNAL);
}

static void stress_pool_chains_and_diamonds(void **state) {
  (void)state;
  double t0 = wt_now_s();
  static chain_t chains[CHAINS];
  static diamond_t diamonds[DIAMONDS];
  uint64_t want = 0;
  for (uint64_t s = 0; s < CHAIN_LEN; s++)
    want += s * s;
  weft_pool_t *p = pool_of(3);
  const uint32_t rounds = 300 * scale();
  for (uint32_t r = 0; r < rounds; r++) {
    weft_counter_t all;
    counter_init(&all);
    for (uint32_t c = 0; c < CHAINS; c++) {
      memset(&chains[c], 0, sizeof chains[c]);
      chains[c].pool = p;
      chains[c].done = &all;
      for (uint32_t s = 0; s < CHAIN_LEN; s++)
        steps[c][s] = (step_t){&chains[c], s};
    }
    for (uint32_t d = 0; d < DIAMONDS; d++) {
      memset(&diamonds[d], 0, sizeof diamonds[d]);
      diamonds[d].pool = p;
      diamonds[d].all = &all;
      counter_init(&diamonds[d].mid);
    }
    for (uint32_t k = 0; k < DIAMONDS; k++) {
      if (k < CHAINS)
        weft_pool_submit(p, WEFT_WORKER_EXTERNAL, chain_job, &steps[k][0], &all,
                         WEFT_WORKER_EXTERNAL);
      weft_pool_submit(p, WEFT_WORKER_EXTERNAL, diamond_a, &diamonds[k], &all,
                       WEFT_WORKER_EXTERNAL);
    }
    weft_pool_wait(p, WEFT_WORKER_EXTERNAL, &all);
    for (uint32_t c = 0; c < CHAINS; c++) {
      assert_int_equal(atomic_load(&chains[c].next), CHAIN_LEN);
      assert_int_equal(atomic_load(&chains[c].out_of_order), 0);
      assert_int_equal(atomic_load(&chains[c].sum), want);
    }
    for (uint32_t d = 0; d < DIAMONDS; d++) {
      assert_int_equal(atomic_load(&diamonds[d].a_done), 1);
      assert_int_equal(atomic_load(&diamonds[d].sides_done), 2);
      assert_int_equal(atomic_load(&diamonds[d].d_done), 1);
      assert_int_equal(atomic_load(&diamonds[d].wrong), 0);
    }
  }
  report("chains and diamonds", p, t0);
  weft_pool_destroy(p);
}

/* --- outside submitters next to parallel-fors ---------------------------- */

enum { SUBMITTERS = 4, SUB_JOBS = 512, SUB_FANOUT = 8 };

typedef struct submitter_t submitter_t;

typedef struct fan_t {
  submitter_t *s;
  uint32_t first;
} fan_t;

struct submitter_t {
  weft_pool_t *pool;
  pthread_t thread;
  uint32_t rounds;
  weft_counter_t done;
  _Atomic uint32_t hits[SUB_JOBS * SUB_FANOUT];
  fan_t fans[SUB_JOBS];
  _Atomic uint32_t wrong;
};

static void sub_leaf(void *arg, uint32_t worker) {
  (void)worker;
  atomic_fetch_add_explicit((_Atomic uint32_t *)arg, 1, memory_order_relaxed);
}

static void sub_fan(void *arg, uint32_t worker) {
  fan_t *f = arg;
  for (uint32_t k = 1; k < SUB_FANOUT; k++)
    weft_pool_submit(f->s->pool, worker, sub_leaf, &f->s->hits[f->first + k],
                     &f->s->done, WEFT_WORKER_EXTERNAL);
  sub_leaf(&f->s->hits[f->first], worker);
}

static void *submitter_main(void *arg) {
  submitter_t *s = arg;
  fan_t *fans = s->fans;
  for (uint32_t r = 0; r < s->rounds; r++) {
    counter_init(&s->done);
    /* Odd jobs fan out from inside the pool; even ones are submitted one
     * by one from here. */
    for (uint32_t j = 0; j < SUB_JOBS; j++) {
      if (j & 1) {
        fans[j] = (fan_t){s, j * SUB_FANOUT};
        weft_pool_submit(s->pool, WEFT_WORKER_EXTERNAL, sub_fan, &fans[j],
                         &s->done, r & 1 ? 0 : WEFT_WORKER_EXTERNAL);
      } else {
        for (uint32_t k = 0; k < SUB_FANOUT; k++)
          weft_pool_submit(s->pool, WEFT_WORKER_EXTERNAL, sub_leaf,
                           &s->hits[j * SUB_FANOUT + k], &s->done,
                           WEFT_WORKER_EXTERNAL);
      }
    }
    weft_pool_wait(s->pool, WEFT_WORKER_EXTERNAL, &s->done);
    for (uint32_t i = 0; i < SUB_JOBS * SUB_FANOUT; i++)
      if (atomic_load(&s->hits[i]) != r + 1)
        atomic_fetch_add(&s->wrong, 1);
  }
  return NULL;
}

typedef struct psum_t {
  _Atomic uint64_t sum;
} psum_t;

static void psum_body(void *arg, uint32_t b, uint32_t e, uint32_t worker) {
  (void)worker;
  uint64_t local = 0;
  for (uint32_t i = b; i < e; i++)
    local += (uint64_t)i * 3 + 1;
  atomic_fetch_add(&((psum_t *)arg)->sum, local);
}

static void stress_pool_outside_submitters_and_parallel_for(void **state) {
  (void)state;
  double t0 = wt_now_s();
  static submitter_t subs[SUBMITTERS];
  weft_pool_t *p = pool_of(2);
  for (uint32_t i = 0; i < SUBMITTERS; i++) {
    memset(&subs[i], 0, sizeof subs[i]);
    subs[i].pool = p;
    subs[i].rounds = 40 * scale();
    assert_int_equal(
        pthread_create(&subs[i].thread, NULL, submitter_main, &subs[i]), 0);
  }
  /* Parallel-fors from this thread meanwhile, a fixed number of them so
   * that the test ends; the submitters overlap most of them. */
  const uint32_t range = 20000;
  uint64_t want = 0;
  for (uint64_t i = 0; i < range; i++)
    want += i * 3 + 1;
  const uint32_t fors = 100 * scale();
  for (uint32_t k = 0; k < fors; k++) {
    psum_t s;
    atomic_init(&s.sum, 0);
    weft_pool_parallel_for(p, WEFT_WORKER_EXTERNAL, 0, range, k % 4 * 64,
                           psum_body, &s);
    assert_int_equal(atomic_load(&s.sum), want);
  }
  for (uint32_t i = 0; i < SUBMITTERS; i++) {
    assert_int_equal(pthread_join(subs[i].thread, NULL), 0);
    assert_int_equal(atomic_load(&subs[i].wrong), 0);
    assert_int_equal(atomic_load(&subs[i].done.pending), 0);
  }
  report("outside submitters with parallel-for", p, t0);
  weft_pool_destroy(p);
}

/* --- batched completions ------------------------------------------------- */

/*
 * Workers subtract the jobs they finish from the jobs' counter in batches.
 * Rounds of jobs on two interleaved counters, some of them waiting on
 * counters of their own (nested waits and parallel-fors) or submitting jobs
 * on the other counter, while watcher threads wait on the round's counters
 * from outside: no wait may return before every job of its counter ran
 * (everyone checks), and both counters end at exactly zero.
 */
enum { BAT_JOBS = 2048, BAT_INNER = 16, BAT_WATCHERS = 2 };

typedef struct bat_t {
  weft_pool_t *pool;
  weft_counter_t a, b; /* job i counts on a when i is odd, b otherwise */
  /* Runs of job i, and at BAT_JOBS + i of the job on b that job i
   * submits when i % 8 == 5. */
  _Atomic uint32_t hits[2 * BAT_JOBS];
  _Atomic uint32_t go;       /* rounds released to the watchers */
  _Atomic uint32_t finished; /* watchers' rounds checked */
  _Atomic uint32_t wrong;
  uint32_t rounds;
} bat_t;

static bat_t bat;

static uint64_t bat_sum(uint32_t b, uint32_t e) {
  uint64_t s = 0;
  for (uint32_t i = b; i < e; i++)
    s += i;
  return s;
}

static void bat_hit(void *arg, uint32_t worker) {
  (void)worker;
  atomic_fetch_add_explicit((_Atomic uint32_t *)arg, 1, memory_order_relaxed);
}

static void bat_inner_range(void *arg, uint32_t b, uint32_t e,
                            uint32_t worker) {
  (void)worker;
  atomic_fetch_add((_Atomic uint64_t *)arg, bat_sum(b, e));
}

static void bat_job(void *arg, uint32_t worker) {
  _Atomic uint32_t *hit = arg;
  uint32_t i = (uint32_t)(hit - bat.hits);
  switch (i % 8) {
  case 1: { /* a nested wait on a counter of its own */
    _Atomic uint32_t inner[BAT_INNER];
    weft_counter_t done;
    counter_init(&done);
    for (uint32_t k = 0; k < BAT_INNER; k++) {
      atomic_init(&inner[k], 0);
      weft_pool_submit(bat.pool, worker, bat_hit, &inner[k], &done,
                       WEFT_WORKER_EXTERNAL);
    }
    weft_pool_wait(bat.pool, worker, &done);
    for (uint32_t k = 0; k < BAT_INNER; k++)
      if (atomic_load(&inner[k]) != 1)
        atomic_fetch_add(&bat.wrong, 1);
    break;
  }
  case 2: { /* a nested parallel-for */
    _Atomic uint64_t sum;
    atomic_init(&sum, 0);
    weft_pool_parallel_for(bat.pool, worker, 0, 256, 8, bat_inner_range, &sum);
    if (atomic_load(&sum) != bat_sum(0, 256))
      atomic_fetch_add(&bat.wrong, 1);
    break;
  }
  case 3: /* a slower one: the window for an early return */
    for (volatile int k = 0; k < 2000; k++)
      ;
    break;
  case 5: /* a job on the other counter */
    weft_pool_submit(bat.pool, worker, bat_hit, &bat.hits[BAT_JOBS + i], &bat.b,
                     WEFT_WORKER_EXTERNAL);
    break;
  default:
    break;
  }
  atomic_fetch_add_explicit(hit, 1, memory_order_relaxed);
}

/* Waits on a, then b, as self, checking after each that round r ran. */
static void bat_check(uint32_t self, uint32_t r) {
  weft_pool_wait(bat.pool, self, &bat.a);
  for (uint32_t i = 1; i < BAT_JOBS; i += 2)
    if (atomic_load(&bat.hits[i]) != r + 1)
      atomic_fetch_add(&bat.wrong, 1);
  weft_pool_wait(bat.pool, self, &bat.b);
  for (uint32_t i = 0; i < BAT_JOBS; i++)
    if (atomic_load(&bat.hits[i]) != r + 1 ||
        (i % 8 == 5 && atomic_load(&bat.hits[BAT_JOBS + i]) != r + 1))
      atomic_fetch_add(&bat.wrong, 1);
}

static void *bat_watcher(void *arg) {
  (void)arg;
  for (uint32_t r = 0; r < bat.rounds; r++) {
    while (atomic_load(&bat.go) <= r)
      sched_yield();
    bat_check(WEFT_WORKER_EXTERNAL, r);
    atomic_fetch_add(&bat.finished, 1);
  }
  return NULL;
}

static void bat_run(weft_pool_t *p, uint32_t self, uint32_t rounds) {
  memset(&bat, 0, sizeof bat);
  bat.pool = p;
  bat.rounds = rounds;
  pthread_t th[BAT_WATCHERS];
  for (uint32_t t = 0; t < BAT_WATCHERS; t++)
    assert_int_equal(pthread_create(&th[t], NULL, bat_watcher, NULL), 0);
  for (uint32_t r = 0; r < rounds; r++) {
    /* Nobody waits on the counters between rounds. */
    while (atomic_load(&bat.finished) < r * BAT_WATCHERS)
      sched_yield();
    counter_init(&bat.a);
    counter_init(&bat.b);
    for (uint32_t i = 0; i < BAT_JOBS; i++)
      weft_pool_submit(p, self, bat_job, &bat.hits[i], i & 1 ? &bat.a : &bat.b,
                       WEFT_WORKER_EXTERNAL);
    atomic_store(&bat.go, r + 1);
    bat_check(self, r);
    assert_int_equal(atomic_load(&bat.a.pending), 0);
  }
  for (uint32_t t = 0; t < BAT_WATCHERS; t++)
    assert_int_equal(pthread_join(th[t], NULL), 0);
  assert_int_equal(atomic_load(&bat.wrong), 0);
  assert_int_equal(atomic_load(&bat.a.pending), 0);
  assert_int_equal(atomic_load(&bat.b.pending), 0);
}

static void stress_pool_batched_completions(void **state) {
  (void)state;
  double t0 = wt_now_s();
  /* Submitted and waited for from outside. */
  weft_pool_t *p = pool_of(2);
  bat_run(p, WEFT_WORKER_EXTERNAL, 60 * scale());
  report("batched completions, outside", p, t0);
  weft_pool_destroy(p);
  /* From the caller as worker 0, with small queues: its jobs overflow
   * inline and thieves take a few at a time. */
  t0 = wt_now_s();
  weft_pool_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.placement.workers = 3;
  cfg.placement.caller_participates = true;
  cfg.queue_capacity = 64;
  p = NULL;
  assert_int_equal(weft_pool_create(&cfg, &p), WEFT_OK);
  bat_run(p, 0, 60 * scale());
  report("batched completions, worker 0", p, t0);
  weft_pool_destroy(p);
}

/* --- stop and start with jobs in flight ---------------------------------- */

enum { CYCLE_JOBS = 256 };

typedef struct cycle_t {
  weft_pool_t *pool;
  weft_counter_t *done;
  _Atomic uint32_t hits[CYCLE_JOBS * 2];
} cycle_t;

static cycle_t cyc;

static void cycle_leaf(void *arg, uint32_t worker) {
  (void)worker;
  atomic_fetch_add((_Atomic uint32_t *)arg, 1);
}

/* Job i also submits job CYCLE_JOBS + i, from inside. */
static void cycle_parent(void *arg, uint32_t worker) {
  _Atomic uint32_t *h = arg;
  atomic_fetch_add(h, 1);
  weft_pool_submit(cyc.pool, worker, cycle_leaf, h + CYCLE_JOBS, cyc.done,
                   WEFT_WORKER_EXTERNAL);
}

/* An outsider that keeps submitting and waiting across the stops. */
typedef struct bystander_t {
  weft_pool_t *pool;
  _Atomic bool quit;
  _Atomic uint32_t hits[64];
  _Atomic uint32_t rounds;
  _Atomic uint32_t wrong;
} bystander_t;

static void *bystander_main(void *arg) {
  bystander_t *b = arg;
  uint32_t r = 0;
  while (!atomic_load(&b->quit)) {
    weft_counter_t done;
    counter_init(&done);
    for (uint32_t i = 0; i < 64; i++)
      weft_pool_submit(b->pool, WEFT_WORKER_EXTERNAL, cycle_leaf, &b->hits[i],
                       &done, WEFT_WORKER_EXTERNAL);
    weft_pool_wait(b->pool, WEFT_WORKER_EXTERNAL, &done);
    r++;
    for (uint32_t i = 0; i < 64; i++)
      if (atomic_load(&b->hits[i]) != r)
        atomic_fetch_add(&b->wrong, 1);
  }
  atomic_store(&b->rounds, r);
  return NULL;
}

static void stress_pool_stop_start_with_jobs_in_flight(void **state) {
  (void)state;
  double t0 = wt_now_s();
  weft_pool_t *p = pool_of(2);
  static bystander_t by;
  memset(&by, 0, sizeof by);
  by.pool = p;
  const uint32_t cycles = 200 * scale();
  weft_counter_t done;
  memset(&cyc, 0, sizeof cyc);
  cyc.pool = p;
  cyc.done = &done;
  pthread_t bt;
  for (uint32_t c = 0; c < cycles; c++) {
    /* The second half runs with an outsider submitting and waiting across
     * the stops. */
    bool bystander = c >= cycles / 2;
    if (c == cycles / 2)
      assert_int_equal(pthread_create(&bt, NULL, bystander_main, &by), 0);
    counter_init(&done);
    for (uint32_t i = 0; i < CYCLE_JOBS; i++)
      weft_pool_submit(p, WEFT_WORKER_EXTERNAL, cycle_parent, &cyc.hits[i],
                       &done, WEFT_WORKER_EXTERNAL);
    /* No wait: stop runs whatever is still queued. The outsider's wait may
     * have taken some of these jobs, though; those it finishes itself. */
    weft_pool_stop(p);
    if (bystander)
      weft_pool_wait(p, WEFT_WORKER_EXTERNAL, &done);
    assert_int_equal(atomic_load(&done.pending), 0);
    for (uint32_t i = 0; i < 2 * CYCLE_JOBS; i++)
      assert_int_equal(atomic_load(&cyc.hits[i]), c + 1);
    assert_int_equal(weft_pool_start(p), WEFT_OK);
  }
  atomic_store(&by.quit, true);
  assert_int_equal(pthread_join(bt, NULL), 0);
  assert_int_equal(atomic_load(&by.wrong), 0);
  print_message("bystander rounds: %u\n", atomic_load(&by.rounds));
  report("stop/start cycles", p, t0);
  weft_pool_destroy(p);
}

/* An outside thread that submits bursts of tiny jobs with pauses
 * between them, so that the workers keep switching between busy and idle
 * periods. */
typedef struct flipper_t {
  weft_pool_t *p;
  _Atomic bool stop;
} flipper_t;

static void tiny_job(void *arg, uint32_t worker) {
  (void)arg;
  (void)worker;
}

static void *flipper_main(void *arg) {
  flipper_t *f = arg;
  while (!atomic_load(&f->stop)) {
    weft_counter_t done;
    counter_init(&done);
    for (int i = 0; i < 8; i++)
      weft_pool_submit(f->p, WEFT_WORKER_EXTERNAL, tiny_job, NULL, &done,
                       WEFT_WORKER_EXTERNAL);
    weft_pool_wait(f->p, WEFT_WORKER_EXTERNAL, &done);
    for (volatile int k = 0; k < 2000; k++)
      ;
  }
  return NULL;
}

/* Per-worker counters read while the worker switches periods never go
 * back: each snapshot's busy and idle time are at least the last one's.
 * (A worker that read its clock before its seqlock's odd count was
 * visible could close a period at a time before a reader's snapshot of
 * it, and the next snapshot would show less busy time.) */
static void stress_pool_stats_never_go_back(void **state) {
  (void)state;
  weft_pool_t *p = pool_of(2);
  flipper_t f = {p, false};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, flipper_main, &f), 0);
  weft_worker_stats_t last[2];
  memset(last, 0, sizeof last);
  const double t0 = wt_now_s();
  uint64_t reads = 0;
  /* A second at least, and until the workers ran jobs: on a busy machine
   * the submitting thread may run them all itself for a while. (The
   * minute is a hang guard.) */
  while (wt_now_s() - t0 < 1.0 * scale() ||
         (last[0].jobs + last[1].jobs == 0 && wt_now_s() - t0 < 60.0)) {
    for (uint32_t w = 0; w < 2; w++) {
      weft_worker_stats_t s;
      assert_int_equal(weft_pool_worker_stats(p, w, &s), WEFT_OK);
      if (s.busy_ns < last[w].busy_ns || s.idle_ns < last[w].idle_ns ||
          s.jobs < last[w].jobs || s.sleeps < last[w].sleeps)
        fail_msg(
            "worker %u went back after %llu reads: busy %llu -> %llu, "
            "idle %llu -> %llu",
            w, (unsigned long long)reads, (unsigned long long)last[w].busy_ns,
            (unsigned long long)s.busy_ns, (unsigned long long)last[w].idle_ns,
            (unsigned long long)s.idle_ns);
      last[w] = s;
      reads++;
    }
  }
  atomic_store(&f.stop, true);
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_true(last[0].jobs + last[1].jobs > 0);
  weft_pool_destroy(p);
}

int main(void) {
  print_message("WEFT_POOL_SCALE=%u\n", scale());
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(stress_pool_stats_never_go_back),
      cmocka_unit_test(stress_pool_millions_of_tiny_jobs),
      cmocka_unit_test(stress_pool_tiny_queues),
      cmocka_unit_test(stress_pool_parallel_for_three_deep),
      cmocka_unit_test(stress_pool_chains_and_diamonds),
      cmocka_unit_test(stress_pool_outside_submitters_and_parallel_for),
      cmocka_unit_test(stress_pool_batched_completions),
      cmocka_unit_test(stress_pool_stop_start_with_jobs_in_flight),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
