/* SPDX-License-Identifier: MIT */
/*
 * Crews: the pool's workers sorted by the CPUs they are bound to, how many
 * of each crew may be awake at once, and the pool-wide CPU limit a cgroup
 * quota sets (see weft__crew_t in pool_internal.h), and the sleeping and
 * waking that keep to these counts.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scheduler/cgroup.h"
#include "scheduler/pool_internal.h"
#include "scheduler/pool_stats.h"
#include "scheduler/steal.h"
#include "scheduler/topology.h"
#include "weft/error.h"

/* A crew's lock and condition variable, the latter on the monotonic
 * clock (see weft__crew_sleep()). */
static int init_crew_sync(weft__crew_t *c) {
  pthread_condattr_t a;
  if (pthread_condattr_init(&a) != 0)
    return WEFT_ENOMEM;
  int rc = pthread_condattr_setclock(&a, CLOCK_MONOTONIC) == 0 &&
                   pthread_cond_init(&c->cv, &a) == 0
               ? 0
               : WEFT_ENOMEM;
  pthread_condattr_destroy(&a);
  if (!rc && pthread_mutex_init(&c->mu, NULL) != 0) {
    pthread_cond_destroy(&c->cv);
    rc = WEFT_ENOMEM;
  }
  return rc;
}

/* The crew key of a PU: its core, or itself under WEFT_PIN_PU; 0 for
 * unbound workers, who all share one crew. */
static uint32_t key_of(const weft_pool_t *p, bool bound,
                       const weft_pu_info_t *u) {
  return !bound ? 0 : p->plan->pin == WEFT_PIN_PU ? u->pu : u->core;
}

/*
 * Numbers the crews in the order of their first worker (crew of each
 * worker) and sets each crew's CPUs: the topology's PUs with its key.
 * keys bounds every key (workers sit on PUs of the topology).
 */
static int assign_crews(weft_pool_t *p, bool bound, bool foreign,
                        uint32_t keys) {
  uint32_t *index = malloc((size_t)keys * sizeof(*index));
  uint32_t *cpus = calloc(keys, sizeof(*cpus));
  int rc = index && cpus ? 0 : WEFT_ENOMEM;
  if (!rc) {
    memset(index, 0xff, (size_t)keys * sizeof(*index));
    for (uint32_t i = 0; i < p->topo->npus; i++)
      cpus[key_of(p, bound, &p->topo->pus[i])]++;
    for (uint32_t i = 0; i < p->nworkers; i++) {
      uint32_t k = key_of(p, bound, &p->plan->place[i]);
      if (index[k] == UINT32_MAX)
        index[k] = p->ncrews++;
      p->workers[i].crew = index[k];
    }
    void *mem = NULL;
    if (posix_memalign(&mem, 64, (size_t)p->ncrews * sizeof(weft__crew_t)) != 0)
      rc = WEFT_ENOMEM;
    else
      p->crews = memset(mem, 0, (size_t)p->ncrews * sizeof(weft__crew_t));
  }
  for (uint32_t k = 0; !rc && k < keys; k++)
    if (index[k] != UINT32_MAX)
      p->crews[index[k]].cpus = foreign ? UINT32_MAX : cpus[k] ? cpus[k] : 1;
  free(index);
  free(cpus);
  return rc;
}

/* Lists each crew's workers (members, ascending) and counts them all
 * awake: threads start awake. */
static int list_members(weft_pool_t *p) {
  p->crew_members = malloc((size_t)p->nworkers * sizeof(uint32_t));
  if (!p->crew_members)
    return WEFT_ENOMEM;
  for (uint32_t i = 0; i < p->nworkers; i++)
    p->crews[p->workers[i].crew].nworkers++;
  for (uint32_t c = 0, at = 0; c < p->ncrews; c++) {
    weft__crew_t *crew = &p->crews[c];
    crew->members = p->crew_members + at;
    at += crew->nworkers;
    atomic_init(&crew->awake, crew->nworkers);
    p->oversubscribed |= crew->nworkers > crew->cpus;
    crew->nworkers = 0; /* the cursor of the loop below */
  }
  for (uint32_t i = 0; i < p->nworkers; i++) {
    weft__crew_t *crew = &p->crews[p->workers[i].crew];
    crew->members[crew->nworkers++] = i;
  }
  atomic_init(&p->awake_all, p->nworkers);
  p->oversubscribed |= p->nworkers > p->awake_cap;
  return 0;
}

/*
 * Sorts the workers into crews by the CPUs they are bound to (see
 * weft__crew_t). Unbound workers on this machine form one crew of all the CPUs
 * the process may use; on a foreign topology (a synthetic or XML
 * description, never bound) one crew that is never full, since nothing
 * says how many CPUs stand behind it.
 */
int weft__crews_make(weft_pool_t *p) {
  const bool foreign = p->topo->foreign;
  const bool bound = !foreign && p->plan->pin != WEFT_PIN_NONE;
  uint32_t keys = 1;
  for (uint32_t i = 0; i < p->topo->npus; i++) {
    uint32_t k = key_of(p, bound, &p->topo->pus[i]);
    keys = k >= keys ? k + 1 : keys;
  }
  int rc = assign_crews(p, bound, foreign, keys);
  if (!rc)
    rc = list_members(p);
  if (rc)
    p->ncrews = 0; /* no lock or condition variable made yet */
  for (uint32_t c = 0; !rc && c < p->ncrews; c++)
    if ((rc = init_crew_sync(&p->crews[c])) != 0)
      p->ncrews = c; /* weft__crews_free() destroys those before it */
  return rc;
}

void weft__crews_free(weft_pool_t *p) {
  for (uint32_t c = 0; p->crews && c < p->ncrews; c++) {
    pthread_mutex_destroy(&p->crews[c].mu);
    pthread_cond_destroy(&p->crews[c].cv);
  }
  free(p->crews);
  free(p->crew_members);
  p->crews = NULL;
  p->crew_members = NULL;
  p->ncrews = 0;
}

/*
 * Sets the pool's CPU limit (weft_pool_config_t::cpu_limit): the caller's,
 * or the cgroup's quota rounded up on this machine. A default worker
 * count (one per core) shrinks to it: more workers than the quota lets
 * run would only sleep.
 */
void weft__crews_limit(weft_pool_t *p, weft_pool_config_t *cfg) {
  uint32_t cap = cfg->cpu_limit;
  if (cap == 0 && !p->topo->foreign) {
    double q = weft__cgroup_cpu_limit(NULL);
    cap = q <= 0 ? 0 : q >= 65536.0 ? 65536u : (uint32_t)q;
    cap += q > 0 && (double)cap < q; /* rounded up */
  }
  p->awake_cap = cap == 0 || cap == WEFT_POOL_NO_CPU_LIMIT ? UINT32_MAX : cap;
  if (cfg->placement.workers == 0 && p->awake_cap < p->topo->info.cores)
    cfg->placement.workers = p->awake_cap;
}

/* ---- waking ------------------------------------------------------------- */

/* Counts one more worker awake pool-wide, unless that would pass the CPU
 * limit. */
static bool reserve_awake(weft_pool_t *p) {
  uint32_t n = atomic_load_explicit(&p->awake_all, memory_order_relaxed);
  do {
    if (n >= p->awake_cap)
      return false;
  } while (!atomic_compare_exchange_weak_explicit(
      &p->awake_all, &n, n + 1, memory_order_relaxed, memory_order_relaxed));
  return true;
}

/*
 * Tells a sleeping worker that work arrived: one in a crew with a CPU to
 * spare, looking first at crew @p from (the submitter's) and then at the
 * ones after it. The job is queued before the fence and the counts are
 * read after it; a worker going to sleep counts itself asleep, fences,
 * and looks at the queues once more (under its crew's lock) before it
 * waits. One of the two sees the other, so no wake-up is lost, and a pool
 * with no sleeper pays one fence and one load per job.
 *
 * When every crew with sleepers is full (or the pool has as many workers
 * awake as its CPU limit allows), nobody is woken: each awake worker
 * looks at every queue before it sleeps, so the job runs as soon as one
 * of their CPUs is free, which is as soon as a woken thread could have
 * run it. (A sleeper of an oversubscribed crew still looks now and then,
 * see weft__crew_sleep(), in case an awake thread is held up outside the
 * pool.)
 */
void weft__crews_wake(weft_pool_t *p, uint32_t from) {
  atomic_thread_fence(memory_order_seq_cst);
  if (atomic_load_explicit(&p->sleepers, memory_order_relaxed) == 0 ||
      atomic_load_explicit(&p->awake_all, memory_order_relaxed) >= p->awake_cap)
    return;
  for (uint32_t k = 0, i = from; k < p->ncrews; k++, i++) {
    weft__crew_t *c = &p->crews[i < p->ncrews ? i : (i -= p->ncrews)];
    if (atomic_load_explicit(&c->sleepers, memory_order_relaxed) == 0 ||
        atomic_load_explicit(&c->awake, memory_order_relaxed) >= c->cpus)
      continue;
    pthread_mutex_lock(&c->mu);
    bool woke =
        atomic_load_explicit(&c->sleepers, memory_order_relaxed) > c->tickets &&
        atomic_load_explicit(&c->awake, memory_order_relaxed) < c->cpus &&
        reserve_awake(p);
    if (woke) {
      c->tickets++;
      atomic_fetch_add_explicit(&c->awake, 1, memory_order_relaxed);
      pthread_cond_signal(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    if (woke)
      return;
  }
}

/* ---- sleeping ----------------------------------------------------------- */

/* How long a sleeper of an oversubscribed crew waits before it looks at
 * the queues itself, at first and at most (doubling while it finds
 * nothing). */
#define WEFT__RESCUE_NS 2000000u
#define WEFT__RESCUE_MAX_NS 128000000u

static void deadline_in(struct timespec *ts, uint64_t ns) {
  clock_gettime(CLOCK_MONOTONIC, ts);
  ns += (uint64_t)ts->tv_nsec;
  ts->tv_sec += (time_t)(ns / 1000000000u);
  ts->tv_nsec = (long)(ns % 1000000000u);
}

/*
 * Puts worker w to sleep unless work shows up at the last moment (then it
 * is returned in *job and true). See weft__crews_wake() for why nothing is
 * lost.
 *
 * A crew with more workers than CPUs may leave a job queued with all its
 * awake threads busy elsewhere; should one of them be held up outside the
 * pool (a callback blocked on I/O, the caller between frames), its
 * sleepers would wait for it. So they wake now and then and look: after
 * 2 ms, then twice as long each time (128 ms at most). One takes a job
 * only when no worker of its crew (of the pool, under a CPU limit) has
 * started a job since it last looked: taking one while they make
 * progress would only crowd their CPUs.
 */
static uint64_t crew_progress(const weft_pool_t *p, const weft__crew_t *c) {
  /* Under a CPU limit the awake workers may all be in other crews: then
   * the whole pool's progress is what says whether they are held up. */
  const bool all = p->nworkers > p->awake_cap;
  const uint32_t n = all ? p->nworkers : c->nworkers;
  uint64_t jobs = 0;
  for (uint32_t i = 0; i < n; i++)
    jobs += atomic_load_explicit(
        &p->workers[all ? i : c->members[i]].stats.jobs, memory_order_relaxed);
  return jobs;
}

bool weft__crew_sleep(weft_pool_t *p, weft__worker_t *w,
                      weft__pool_job_t *job) {
  weft__crew_t *c = &p->crews[w->crew];
  const bool rescue = c->nworkers > c->cpus || p->nworkers > p->awake_cap;
  uint64_t wait_ns = WEFT__RESCUE_NS;
  pthread_mutex_lock(&c->mu);
  atomic_fetch_add_explicit(&c->sleepers, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&p->sleepers, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&c->awake, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&p->awake_all, 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_seq_cst);
  bool found = weft__pool_find_work(p, w->index, job, false), woken = false;
  if (!found) {
    weft__stats_bump(&w->stats.sleeps, 1);
    uint64_t done = rescue ? crew_progress(p, c) : 0;
    while (!(woken = c->tickets > 0) &&
           !atomic_load_explicit(&p->stopping, memory_order_relaxed)) {
      if (!rescue) {
        pthread_cond_wait(&c->cv, &c->mu);
        continue;
      }
      struct timespec until;
      deadline_in(&until, wait_ns);
      if (pthread_cond_timedwait(&c->cv, &c->mu, &until) != ETIMEDOUT ||
          c->tickets > 0)
        continue;
      uint64_t now_done = crew_progress(p, c);
      if (now_done == done &&
          (found = weft__pool_find_work(p, w->index, job, false))) {
        weft__stats_bump(&w->stats.rescues, 1);
        break;
      }
      done = now_done;
      if (wait_ns < WEFT__RESCUE_MAX_NS)
        wait_ns *= 2;
    }
  }
  if (woken) {
    c->tickets--; /* the waker counted this worker awake */
  } else {
    atomic_fetch_add_explicit(&c->awake, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->awake_all, 1, memory_order_relaxed);
  }
  atomic_fetch_sub_explicit(&p->sleepers, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&c->sleepers, 1, memory_order_relaxed);
  pthread_mutex_unlock(&c->mu);
  return found;
}
