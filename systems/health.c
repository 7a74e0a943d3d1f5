/*
 * "weft.health": collision events become damage, damage becomes death.
 *
 * A task (no query: one call per run, chunk NULL) that applies the
 * collisions channel's events in their published order (after planning
 * them on every worker, below), which the scheduler makes the same on any
 * number of threads, so hp values and the order of the death commands are
 * deterministic. Health is written in place under the
 * declared write access; death is structural and goes through ctx->cmd:
 * add Dead, disable Velocity and Collider.
 *
 * Rules, per event (a, b), in order:
 * - a party that is stale, has the Dead tag, or was killed by an earlier
 *   event of this run neither deals nor takes damage (a corpse does not
 *   hurt);
 * - otherwise a hurts b when a has Damage and b has Health, and b hurts a
 *   likewise; both hits of one event are simultaneous (liveness is taken
 *   before either applies);
 * - a hit deals max(0, amount - flat) * (1 - fraction) with the target's
 *   Armor (none: flat 0, fraction 0; the fraction is clamped to [0, 1] so
 *   armour never heals); hp is not floored;
 * - a target takes damage only while hp > 0, and the hit that brings hp
 *   from above 0 to 0 or below kills it (once). "Killed earlier in this
 *   run" is exactly "hp <= 0", so no per-run set is needed; an entity that
 *   has Health with hp <= 0 but no Dead tag counts as dead already.
 *
 * The system keeps its component ids in a world resource
 * ("weft.health.config"), so the caller's weft_std_t may be temporary.
 */
#include <stddef.h>
#include <string.h>

#include <weft.h>
#include <weft/systems.h>

#include "sys_internal.h"

#define HEALTH_NAME "weft.health"
#define HEALTH_CONFIG "weft.health.config"

typedef struct health_plan_t health_plan_t;

typedef struct health_cfg_t {
  weft_std_t std;
  health_plan_t *plan; /* 2 * HEALTH_BLOCK_EVENTS entries, a resource */
} health_cfg_t;

/* The damage @p armor lets through of a hit of @p amount. */
static float mitigate(float amount, const weft_armor_t *armor) {
  float flat = armor ? armor->flat : 0.0f;
  float frac = armor ? armor->fraction : 0.0f;
  if (!(frac > 0.0f)) /* NaN counts as no fraction */
    frac = 0.0f;
  if (frac > 1.0f)
    frac = 1.0f;
  float rest = amount - flat;
  if (!(rest > 0.0f))
    return 0.0f;
  return rest * (1.0f - frac);
}

/*
 * The run has two steps per block of events, so that the expensive part
 * runs on every worker while the outcome stays that of the serial rules:
 *
 * 1. Plan, in parallel over ranges of the block: each event's parties are
 *    resolved (live, no Dead tag, their Health row) and the damage each
 *    would deal the other is worked out. That reads only what no event
 *    changes during the run: liveness and Dead are structural (commands
 *    apply after the run), Damage and Armor are read-only here, and hp is
 *    not read at all (only the address of its row).
 * 2. Apply, on the calling thread, in event order: the only state events
 *    share is hp, so this pass reads and writes hp through the planned
 *    rows and records deaths, exactly as the rules above say.
 *
 * With a pool the two overlap: while the calling thread applies block k,
 * the other workers plan block k + 1 into the other half of the plan (the
 * caller joins them when it is done). So the workers never run out of
 * work between blocks: when they did, with a plan-then-apply loop over
 * blocks of 4,096 events, they fell asleep during each apply, woke too late
 * to take their share of the next plan, and planning barely scaled.
 *
 * The plan lives in a world resource ("weft.health.plan", two blocks), so
 * steady-state runs allocate nothing. Within a range, weft_get_many_n
 * resolves batches of parties at once, each party once for its three
 * components, so that the cache misses of independent lookups overlap.
 */
#define HEALTH_PLAN "weft.health.plan"
#define HEALTH_BLOCK_EVENTS 8192u /* events per block; the plan holds two */
#define HEALTH_GRAIN 512u         /* events per planning job */
#define HEALTH_JOBS (HEALTH_BLOCK_EVENTS / HEALTH_GRAIN)
#define HEALTH_BATCH 128u /* parties per weft_get_many_n call */
/* How far ahead the apply pass prefetches the Health rows (events) and the
 * plan entries (events). On two workers most plan entries were written on
 * the other core, whose lines take about 215 ns to come over on this VM:
 * 32 and 64 made the apply 19% faster than 8 and none on two workers, and
 * 11% faster on one (alternated run by run on one world). */
#define HEALTH_AHEAD 32u
#define HEALTH_PLAN_AHEAD 64u

/* Plan flags: the party may take part (live, no Dead tag, not a self
 * contact), and the other party deals it damage (it has Health, the other
 * has Damage). */
enum { PLAN_OK_A = 1, PLAN_OK_B = 2, PLAN_HIT_A = 4, PLAN_HIT_B = 8 };

struct health_plan_t {
  weft_health_t *h[2]; /* Health of a and b, or NULL */
  float dmg[2];        /* damage a takes from b, b takes from a */
  uint32_t flags;
};

/* One block of events and its half of the plan. */
typedef struct health_run_t {
  weft_world_t *w;
  const weft_std_t *s;
  const weft_collision_t *ev; /* the block's first event */
  uint32_t n;                 /* events in the block */
  health_plan_t *plan;
} health_run_t;

/* A planning job: events [begin, end) of a block. */
typedef struct plan_job_t {
  const health_run_t *r;
  uint32_t begin, end;
} plan_job_t;

/* Plans events [lo, lo + k) of the block, k <= HEALTH_BATCH. */
static void plan_batch(const health_run_t *r, uint32_t lo, uint32_t k) {
  enum { HP, DMG, ARM, NCOMP };
  weft_entity_t e[2][HEALTH_BATCH];
  const void *got[2][HEALTH_BATCH * NCOMP];
  const weft_component_t comps[NCOMP] = {r->s->health, r->s->damage,
                                         r->s->armor};
  const weft_collision_t *ev = r->ev + lo;
  for (uint32_t j = 0; j < k; j++) {
    e[0][j] = ev[j].a;
    e[1][j] = ev[j].b;
  }
  bool dead[2][HEALTH_BATCH];
  for (int p = 0; p < 2; p++) {
    weft_get_many_n(r->w, e[p], k, comps, NCOMP, got[p]);
    /* Pipelined too: one weft_has() per party, a chain of dependent
     * misses each, was most of the planning's time. */
    weft_has_many(r->w, e[p], k, r->s->dead, dead[p]);
  }
  for (uint32_t j = 0; j < k; j++) {
    health_plan_t *pl = &r->plan[lo + j];
    const void *const *g[2] = {got[0] + j * NCOMP, got[1] + j * NCOMP};
    pl->flags = 0;
    pl->dmg[0] = pl->dmg[1] = 0.0f;
    for (int p = 0; p < 2; p++)
      pl->h[p] = (weft_health_t *)g[p][HP];
    if (e[0][j] == e[1][j])
      continue; /* not a contact */
    for (int p = 0; p < 2; p++) {
      /* A party with none of the three can neither deal nor take damage,
       * so the event does nothing whether it lives or not; otherwise it
       * is live, and takes part unless tagged Dead. */
      bool some = g[p][HP] || g[p][DMG] || g[p][ARM];
      if (some && !dead[p][j])
        pl->flags |= PLAN_OK_A << p;
      const weft_damage_t *d = g[1 - p][DMG]; /* what hits party p */
      if (d && pl->h[p]) {
        pl->flags |= PLAN_HIT_A << p;
        pl->dmg[p] = mitigate(d->amount, g[p][ARM]);
      }
    }
  }
}

/* Plans events [begin, end) of block r. */
static void plan_range(const health_run_t *r, uint32_t begin, uint32_t end) {
  for (uint32_t lo = begin; lo < end; lo += HEALTH_BATCH)
    plan_batch(r, lo, end - lo < HEALTH_BATCH ? end - lo : HEALTH_BATCH);
}

static void plan_job(void *arg, uint32_t worker) {
  (void)worker;
  const plan_job_t *j = arg;
  plan_range(j->r, j->begin, j->end);
}

/* Hands block r's planning to the pool in jobs of HEALTH_GRAIN events,
 * counted on @p done; without a pool, plans it here. */
static void plan_submit(weft_sysctx_t *ctx, const health_run_t *r,
                        plan_job_t *jobs, weft_counter_t *done) {
  weft_pool_t *pool = weft_world_pool(ctx->world);
  if (!pool) {
    plan_range(r, 0, r->n);
    return;
  }
  uint32_t self = weft_sysctx_pool_worker(ctx), k = 0;
  for (uint32_t lo = 0; lo < r->n; lo += HEALTH_GRAIN, k++) {
    jobs[k] = (plan_job_t){r, lo,
                           r->n - lo < HEALTH_GRAIN ? r->n : lo + HEALTH_GRAIN};
    weft_pool_submit(pool, self, plan_job, &jobs[k], done,
                     WEFT_WORKER_EXTERNAL);
  }
}

/* Waits for the jobs counted on @p done, running them here meanwhile. */
static void plan_wait(weft_sysctx_t *ctx, weft_counter_t *done) {
  weft_pool_t *pool = weft_world_pool(ctx->world);
  if (pool)
    weft_pool_wait(pool, weft_sysctx_pool_worker(ctx), done);
}

/* Records the death of @p e: add Dead, disable Velocity and Collider.
 * Returns 0 or the first command error; each record call is all or
 * nothing, so on an error *tagged says whether Dead was recorded. */
static int kill(weft_sysctx_t *ctx, const weft_std_t *s, weft_entity_t e,
                bool *tagged) {
  int rc = weft_cmd_add(ctx->cmd, e, s->dead, NULL);
  *tagged = rc == 0;
  if (!rc)
    rc = weft_cmd_disable(ctx->cmd, e, s->velocity);
  if (!rc)
    rc = weft_cmd_disable(ctx->cmd, e, s->collider);
  return rc;
}

/* Health @p h, above 0, takes a hit of @p dmg; the hit that brings it to
 * 0 or below records the death of @p e. Returns 0 or a command error. */
static int hit(weft_sysctx_t *ctx, const weft_std_t *s, weft_health_t *h,
               float dmg, weft_entity_t e) {
  const float before = h->hp;
  h->hp = before - dmg;
  if (h->hp > 0.0f)
    return 0;
  bool tagged;
  int rc = kill(ctx, s, e, &tagged);
  /* A death that could not be recorded at all undoes its hit, so that
   * after the failed run hp <= 0 still means "tagged Dead". Once Dead is
   * recorded the entity dies, even if disabling its Velocity or Collider
   * failed. */
  if (rc && !tagged)
    h->hp = before;
  return rc;
}

/*
 * Applies block r's planned events in order: an event whose parties both
 * take part and stand (hp above 0, or no Health) lets a hit b, then b hit
 * a. This is the serial step of the system (planning runs on every
 * worker), so the loop reads each plan entry once and keeps its values in
 * registers: 54 instructions an event under callgrind (200k-entity arena),
 * where a call per party that reloaded the entry took 115. Party a's hp
 * need not be checked again before b hits it: a and b are different
 * entities, so b's hit left it as it was.
 */
static int apply(weft_sysctx_t *ctx, const health_run_t *r) {
  const uint32_t both = PLAN_OK_A | PLAN_OK_B;
  const health_plan_t *plan = r->plan;
  const uint32_t k = r->n;
  for (uint32_t j = 0; j < k; j++) {
    if (j + HEALTH_PLAN_AHEAD < k)
      __builtin_prefetch(&plan[j + HEALTH_PLAN_AHEAD], 0);
    if (j + HEALTH_AHEAD < k) {
      const health_plan_t *ahead = &plan[j + HEALTH_AHEAD];
      __builtin_prefetch(ahead->h[0], 1);
      __builtin_prefetch(ahead->h[1], 1);
    }
    const uint32_t f = plan[j].flags;
    if ((f & both) != both)
      continue;
    weft_health_t *ha = plan[j].h[0], *hb = plan[j].h[1];
    if ((ha && !(ha->hp > 0.0f)) || (hb && !(hb->hp > 0.0f)))
      continue;
    int rc = 0;
    if (f & PLAN_HIT_B) /* a hits b */
      rc = hit(ctx, r->s, hb, plan[j].dmg[1], r->ev[j].b);
    if (!rc && (f & PLAN_HIT_A)) /* then b hits a */
      rc = hit(ctx, r->s, ha, plan[j].dmg[0], r->ev[j].a);
    if (rc)
      return rc;
  }
  return 0;
}

/* Points @p r at block @p b of the @p n events: its events and its half
 * of the plan. */
static void block_at(health_run_t *r, const health_cfg_t *cfg,
                     const weft_collision_t *ev, uint32_t n, uint32_t b) {
  uint32_t base = b * HEALTH_BLOCK_EVENTS;
  r->ev = ev + base;
  r->n = n - base < HEALTH_BLOCK_EVENTS ? n - base : HEALTH_BLOCK_EVENTS;
  r->plan = cfg->plan + (b % 2) * HEALTH_BLOCK_EVENTS;
}

static int health_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  const health_cfg_t *cfg = ctx->user;
  uint32_t n = 0;
  const weft_collision_t *ev =
      weft_event_read(ctx->world, cfg->std.collisions, &n);
  if (n == 0)
    return 0;
  weft_sysctx_count(ctx, n); /* its stats count the events it applied */
  uint32_t nblocks = (n - 1) / HEALTH_BLOCK_EVENTS + 1;
  health_run_t r[2] = {{ctx->world, &cfg->std, NULL, 0, NULL},
                       {ctx->world, &cfg->std, NULL, 0, NULL}};
  plan_job_t jobs[HEALTH_JOBS];
  weft_counter_t done;
  memset(&done, 0, sizeof done);
  block_at(&r[0], cfg, ev, n, 0);
  plan_submit(ctx, &r[0], jobs, &done);
  plan_wait(ctx, &done);
  int rc = 0;
  for (uint32_t b = 0; b < nblocks && !rc; b++) {
    health_run_t *cur = &r[b % 2], *next = &r[(b + 1) % 2];
    bool more = b + 1 < nblocks;
    if (more) { /* planned by the others while this thread applies */
      block_at(next, cfg, ev, n, b + 1);
      plan_submit(ctx, next, jobs, &done);
    }
    rc = apply(ctx, cur);
    if (more) /* the jobs point into this frame: wait even after an error */
      plan_wait(ctx, &done);
  }
  return rc;
}

int weft_sys_health(weft_world_t *world, const weft_std_t *std,
                    weft_phase_t phase, weft_system_t *out) {
  if (!world || !std)
    return weft_world_fail(world, WEFT_EINVAL, "weft_sys_health: std is NULL");
  weft_system_t sys = 0;
  if (weft_system_lookup(world, HEALTH_NAME, &sys) == 0)
    return weft_world_fail(world, WEFT_EEXIST,
                           "weft_sys_health: '%s' exists already", HEALTH_NAME);
  /* The ids and the plan live in the world: the resources outlive any
   * caller's copy. A previous, removed registration left them; reuse. The
   * small one first: when the world runs out of resources between the two,
   * what stays behind is the small one, and a later call reuses it. */
  health_cfg_t init;
  memset(&init, 0, sizeof init);
  init.std = *std;
  weft_resource_t res = 0, plan = 0;
  int rc = weft__sys_state(world, HEALTH_CONFIG, &init, sizeof init, &res);
  if (!rc)
    rc =
        weft__sys_state(world, HEALTH_PLAN, NULL,
                        2 * HEALTH_BLOCK_EVENTS * sizeof(health_plan_t), &plan);
  if (rc)
    return rc;
  health_cfg_t *cfg = weft_resource_get(world, res);
  cfg->plan = weft_resource_get(world, plan);

  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = HEALTH_NAME;
  d.phase = phase;
  d.write[0] = std->health;
  d.read[0] = std->damage;
  d.read[1] = std->armor;
  d.read[2] = std->dead;
  d.cmd_write[0] = std->dead;
  d.cmd_write[1] = std->velocity;
  d.cmd_write[2] = std->collider;
  d.receive[0] = std->collisions;
  d.run = health_run;
  d.user = cfg;
  rc = weft_system_register(world, &d, &sys);
  if (rc)
    return rc;
  if (out)
    *out = sys;
  return 0;
}
