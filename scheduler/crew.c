/* SPDX-License-Identifier: MIT */
/*
 * Crews: the pool's workers sorted by the CPUs they are bound to, how many
 * of each crew may be awake at once, and the pool-wide CPU limit a cgroup
 * quota sets (see weft__crew_t in pool_internal.h; the sleeping and waking that
 * keep to these counts are in pool.c).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scheduler/cgroup.h"
#include "scheduler/pool_internal.h"
#include "scheduler/topology.h"
#include "weft/error.h"

/* A crew's lock and condition variable, the latter on the monotonic
 * clock (see worker_sleep()). */
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
