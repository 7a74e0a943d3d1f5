/* SPDX-License-Identifier: MIT */
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
 *   has Health with hp <= 0 but no Dead tag counts as dead already;
 * - keyed mode (both parties have Key, builtin.h): a party deals damage
 *   whatever its hp now (it was live and not Dead when the run started)
 *   and takes it while hp > 0, so that the hits an entity takes follow
 *   from its own events and its partners' state at the start of the run,
 *   which is what a ghost copy of a partner holds in a split world;
 * - a ghost takes no damage (its owner applies it) and a ghost whose
 *   Lifetime runs out this step counts as gone (plan_keyed()).
 *
 * The system keeps its component ids in a world resource
 * ("weft.health.config"), so the caller's weft_std_t may be temporary.
 */
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include <weft.h>
#include <weft/builtin.h>

#include "core/platform.h"
#include "builtin_internal.h"

#define HEALTH_NAME "weft.health"
#define HEALTH_CONFIG "weft.health.config"

typedef struct health_plan_t health_plan_t;

typedef struct health_cfg_t {
  weft_std_t std;
  health_plan_t *plan;  /* the ring: HEALTH_RING blocks, a resource */
  weft_query_t *ghosts; /* the world's ghosts, counted once a run */
  weft_query_t *keyed;  /* the world's keyed entities, likewise */
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
 * 1. Plan, on any worker: each event's parties are resolved (live, no
 *    Dead tag, their Health row) and the damage each would deal the other
 *    is worked out. That reads only what no event changes during the run:
 *    liveness and Dead are structural (commands apply after the run),
 *    Damage and Armor are read-only here, and hp is not read at all (only
 *    the address of its row).
 * 2. Apply, on the thread running the system, in block order and event
 *    order: the only state events share is hp, so this pass reads and
 *    writes hp through the planned rows and records deaths (into this
 *    thread's command buffer), exactly as the rules above say.
 *
 * Planning takes nearly all the time, so the blocks are small and planned
 * without a barrier between them: every worker takes the next block as soon as
 * it is done with one, and the system's thread applies each block as soon as it
 * is planned, planning blocks itself while the next one to apply is not ready.
 * The plan is a ring of HEALTH_RING blocks; a block is taken only when its
 * place in the ring has been applied, and once taken it is planned without
 * waiting on anything, so the block the apply waits for is always in progress
 * on a running thread, and no block waits on a barrier that nothing overlaps.
 *
 * The plan lives in a world resource ("weft.health.plan"), so steady-state
 * runs allocate nothing. Within a block, weft_get_many_ex resolves batches
 * of parties at once, each party once for its three components and the
 * Dead tag, so that the cache misses of independent lookups overlap.
 */
#define HEALTH_PLAN "weft.health.plan"
#define HEALTH_BLOCK_EVENTS 1024u /* events per block */
#define HEALTH_RING 16u           /* blocks the plan holds */
#define HEALTH_BATCH 128u         /* parties per weft_get_many_n call */
/* How far ahead the apply pass prefetches the Health rows (events) and the
 * plan entries (events). On two workers most plan entries were written on
 * the other core, whose lines are slow to come over (see
 * docs/performance-notes.md, systems/health.c). */
#define HEALTH_AHEAD 32u
#define HEALTH_PLAN_AHEAD 64u

/* Plan flags: the party may take part (live, no Dead tag, not a self
 * contact), and the other party deals it damage (it has Health, the other
 * has Damage). */
enum {
  PLAN_OK_A = 1,
  PLAN_OK_B = 2,
  PLAN_HIT_A = 4,
  PLAN_HIT_B = 8,
  PLAN_KEYED = 16 /* both parties keyed: the keyed rule (see apply()) */
};

struct health_plan_t {
  weft_health_t *h[2]; /* Health of a and b, or NULL */
  float dmg[2];        /* damage a takes from b, b takes from a */
  uint32_t flags;
};

/* One block of events and its place in the ring. */
typedef struct health_run_t {
  weft_world_t *w;
  const weft_std_t *s;
  const weft_collision_t *ev; /* the block's first event */
  uint32_t n;                 /* events in the block */
  health_plan_t *plan;
  bool ghosts; /* the world holds ghosts: look the parties' tags up */
  bool keyed;  /* the world holds keyed entities: likewise */
  float dt;    /* the run's step, as weft.lifetime counts it */
} health_run_t;

/*
 * A run's shared state. `next` is taken by every planner, `applied`
 * written by the applying thread and read by the planners, and each ready
 * flag written by one planner and read by the applier: each on a line of
 * its own, so that no thread's stores slow another's loads of the rest.
 */
typedef struct health_pipe_t {
  weft_world_t *w;
  const health_cfg_t *cfg;
  const weft_collision_t *ev;
  uint32_t n, nblocks;
  bool ghosts, keyed;
  float dt;
  WEFT__LINE_ALIGNED _Atomic uint32_t next;    /* the next block to take */
  WEFT__LINE_ALIGNED _Atomic uint32_t applied; /* blocks applied */
  WEFT__LINE_ALIGNED _Atomic uint32_t stop;    /* nonzero: the apply failed */
  /* ready[k % HEALTH_RING] == k + 1: block k is planned. */
  struct {
    WEFT__LINE_ALIGNED _Atomic uint32_t k1;
  } ready[HEALTH_RING];
} health_pipe_t;

/*
 * What keyed mode and ghosts add to a batch's plan, in worlds that hold
 * them (one or two more lookup passes over the n parties; none in other
 * worlds). ghost[i]: 0 for an owned party, 1 for a ghost, 2 for a ghost
 * whose Lifetime runs out in this step: its owner's "weft.lifetime"
 * despawns it at the sync point before this run, where it is stale, so
 * here it counts as gone too. keyed[i]: the party has a Key.
 */
static void plan_keyed(const health_run_t *r, const weft_entity_t *e,
                       uint32_t n, uint8_t *ghost, bool *keyed) {
  if (r->ghosts) {
    const weft_component_t lifetime[1] = {r->s->lifetime};
    const void *lt[2 * HEALTH_BATCH];
    bool is[2 * HEALTH_BATCH];
    weft_get_many_opts_t o = {.has = r->s->ghost, .has_out = is};
    weft_get_many_ex(r->w, e, n, lifetime, 1, lt, &o);
    for (uint32_t i = 0; i < n; i++) {
      const weft_lifetime_t *l = lt[i];
      /* The owner's test, on the same float values (lifetime.c). */
      ghost[i] = !is[i] ? 0 : l && !(l->remaining - r->dt > 0.0f) ? 2 : 1;
    }
  }
  if (r->keyed) {
    weft_get_many_opts_t o = {.has = r->s->key, .has_out = keyed};
    weft_get_many_ex(r->w, e, n, NULL, 0, NULL, &o);
  }
}

/* Plans events [lo, lo + k) of the block, k <= HEALTH_BATCH. */
static void plan_batch(const health_run_t *r, uint32_t lo, uint32_t k) {
  enum { HP, DMG, ARM, NCOMP };
  /* Party p of event j is handle 2j + p: both parties of all k events go
   * to one lookup call, whose software pipeline fills and drains once
   * for 2k handles rather than twice for k. */
  weft_entity_t e[2 * HEALTH_BATCH];
  const void *got[2 * HEALTH_BATCH * NCOMP];
  bool dead[2 * HEALTH_BATCH];
  const weft_component_t comps[NCOMP] = {r->s->health, r->s->damage,
                                         r->s->armor};
  const weft_collision_t *ev = r->ev + lo;
  for (uint32_t j = 0; j < k; j++) {
    e[2 * j] = ev[j].a;
    e[2 * j + 1] = ev[j].b;
  }
  /* Dead from the same lookups (pipelined: one weft_has() per party, a
   * chain of dependent misses each, or a second pass over the handles,
   * would cost more). The
   * Health rows are only addressed here: the apply reads and writes them,
   * often on another core, and a copy prefetched into this core's cache
   * only made that core fetch it from here. The apply writes hp through them:
   * the write mask stamps their chunks' change versions, so `changed` readers
   * of Health see the hits. */
  weft_get_many_opts_t o = {.address_only = 1u << HP,
                            .has = r->s->dead,
                            .has_out = dead,
                            .write = 1u << HP};
  weft_get_many_ex(r->w, e, 2 * k, comps, NCOMP, got, &o);
  uint8_t ghost[2 * HEALTH_BATCH];
  bool keyed[2 * HEALTH_BATCH];
  plan_keyed(r, e, 2 * k, ghost, keyed);
  for (uint32_t j = 0; j < k; j++) {
    health_plan_t *pl = &r->plan[lo + j];
    const void *const *g[2] = {got + 2 * j * NCOMP, got + (2 * j + 1) * NCOMP};
    pl->flags = 0;
    pl->dmg[0] = pl->dmg[1] = 0.0f;
    for (int p = 0; p < 2; p++)
      pl->h[p] = (weft_health_t *)g[p][HP];
    if (e[2 * j] == e[2 * j + 1])
      continue; /* not a contact */
    if (r->keyed && keyed[2 * j] && keyed[2 * j + 1])
      pl->flags |= PLAN_KEYED;
    for (int p = 0; p < 2; p++) {
      /* A party with none of the three can neither deal nor take damage,
       * so the event does nothing whether it lives or not; otherwise it
       * is live, and takes part unless tagged Dead. */
      bool some = g[p][HP] || g[p][DMG] || g[p][ARM];
      if (some && !dead[2 * j + p] && !(r->ghosts && ghost[2 * j + p] == 2))
        pl->flags |= PLAN_OK_A << p;
      const weft_damage_t *d = g[1 - p][DMG]; /* what hits party p */
      if (d && pl->h[p] && !(r->ghosts && ghost[2 * j + p])) {
        pl->flags |= PLAN_HIT_A << p;
        pl->dmg[p] = mitigate(d->amount, g[p][ARM]);
      }
    }
  }
}

/* Plans block r. */
static void plan_block(const health_run_t *r) {
  for (uint32_t lo = 0; lo < r->n; lo += HEALTH_BATCH)
    plan_batch(r, lo, r->n - lo < HEALTH_BATCH ? r->n - lo : HEALTH_BATCH);
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
 * a; between keyed parties, each hit needs only its target to stand (the
 * keyed rule, at the top of the file). This is the serial step of the system
 * (planning runs on every worker), so the loop reads each plan entry once and
 * keeps its values in registers, where a call per party would reload the entry.
 * Party a's hp need not be checked again before b hits it: a and b are
 * different entities, so b's hit left it as it was.
 *
 * A block was most likely planned on another core: before the loop, whose
 * prefetches run ahead within the block, the block's first plan entries
 * and the Health rows they name are prefetched, so that the start of each
 * block does not take those misses one by one.
 */
static int apply(weft_sysctx_t *ctx, const health_run_t *r) {
  const uint32_t both = PLAN_OK_A | PLAN_OK_B;
  const health_plan_t *plan = r->plan;
  const uint32_t k = r->n;
  for (uint32_t j = 0; j < HEALTH_PLAN_AHEAD && j < k; j++)
    __builtin_prefetch(&plan[j], 0);
  for (uint32_t j = 0; j < HEALTH_AHEAD && j < k; j++) {
    __builtin_prefetch(plan[j].h[0], 1);
    __builtin_prefetch(plan[j].h[1], 1);
  }
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
    const bool sa = !ha || ha->hp > 0.0f, sb = !hb || hb->hp > 0.0f;
    if (!(f & PLAN_KEYED) && !(sa && sb))
      continue;
    int rc = 0;
    if ((f & PLAN_HIT_B) && sb) /* a hits b */
      rc = hit(ctx, r->s, hb, plan[j].dmg[1], r->ev[j].b);
    if (!rc && (f & PLAN_HIT_A) && sa) /* then b hits a */
      rc = hit(ctx, r->s, ha, plan[j].dmg[0], r->ev[j].a);
    if (rc)
      return rc;
  }
  return 0;
}

/* Block @p k of the run: its events and its place in the ring. */
static health_run_t block_at(const health_pipe_t *p, uint32_t k) {
  uint32_t base = k * HEALTH_BLOCK_EVENTS;
  return (health_run_t){p->w,
                        &p->cfg->std,
                        p->ev + base,
                        p->n - base < HEALTH_BLOCK_EVENTS ? p->n - base
                                                          : HEALTH_BLOCK_EVENTS,
                        p->cfg->plan + (k % HEALTH_RING) * HEALTH_BLOCK_EVENTS,
                        p->ghosts,
                        p->keyed,
                        p->dt};
}

/*
 * Takes the next block when there is one and its place in the ring is
 * free (the block HEALTH_RING before it applied), plans it and marks it
 * ready. Returns false when there was none to take. The acquire load of
 * `applied` orders this block's plan stores after the apply's reads of
 * the block that used its place before.
 */
static bool plan_next(health_pipe_t *p, bool *more) {
  uint32_t k = atomic_load_explicit(&p->next, memory_order_relaxed);
  *more =
      k < p->nblocks && !atomic_load_explicit(&p->stop, memory_order_relaxed);
  if (!*more ||
      k >= atomic_load_explicit(&p->applied, memory_order_acquire) +
               HEALTH_RING ||
      !atomic_compare_exchange_weak_explicit(
          &p->next, &k, k + 1, memory_order_relaxed, memory_order_relaxed))
    return false;
  health_run_t r = block_at(p, k);
  plan_block(&r);
  atomic_store_explicit(&p->ready[k % HEALTH_RING].k1, k + 1,
                        memory_order_release);
  return true;
}

/* A worker's share: plans blocks until none is left to take. It waits
 * only for room in the ring, which the applying thread frees. */
static void plan_job(void *arg, uint32_t worker) {
  (void)worker;
  health_pipe_t *p = arg;
  bool more = true;
  while (more)
    if (!plan_next(p, &more) && more)
      weft__cpu_relax();
}

/*
 * The applying thread: applies the blocks in order, each as soon as it is
 * planned, and plans blocks itself while the next one is not ready.
 * Returns 0 or the first command error, after which nothing more is
 * applied or taken.
 */
static int apply_all(weft_sysctx_t *ctx, health_pipe_t *p) {
  for (uint32_t k = 0; k < p->nblocks;) {
    if (atomic_load_explicit(&p->ready[k % HEALTH_RING].k1,
                             memory_order_acquire) == k + 1) {
      health_run_t r = block_at(p, k);
      int rc = apply(ctx, &r);
      if (rc) {
        atomic_store_explicit(&p->stop, 1, memory_order_relaxed);
        return rc;
      }
      atomic_store_explicit(&p->applied, ++k, memory_order_release);
      continue;
    }
    bool more;
    if (!plan_next(p, &more))
      weft__cpu_relax(); /* block k is being planned elsewhere */
  }
  return 0;
}

static int health_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  const health_cfg_t *cfg = ctx->user;
  uint32_t n = 0;
  const weft_collision_t *ev =
      weft_event_read(ctx->world, cfg->std.collisions, &n);
  if (n == 0)
    return 0;
  weft_sysctx_count(ctx, n);      /* its stats count the events it applied */
  health_pipe_t pipe, *p = &pipe; /* the helpers are done before return */
  p->w = ctx->world;
  p->cfg = cfg;
  p->ev = ev;
  p->n = n;
  p->ghosts = cfg->ghosts && weft_query_count(cfg->ghosts) > 0;
  p->keyed = cfg->keyed && weft_query_count(cfg->keyed) > 0;
  p->dt = (float)ctx->dt;
  p->nblocks = (n - 1) / HEALTH_BLOCK_EVENTS + 1;
  atomic_init(&p->next, 0);
  atomic_init(&p->applied, 0);
  atomic_init(&p->stop, 0);
  for (uint32_t i = 0; i < HEALTH_RING; i++)
    atomic_init(&p->ready[i].k1, 0);
  weft_counter_t done;
  uint32_t helpers =
      weft__builtin_helpers(ctx, plan_job, p, p->nblocks - 1, &done);
  int rc = apply_all(ctx, p);
  /* The helpers read the pipe: wait for them even after an error. */
  weft__builtin_join(ctx, &done, helpers);
  return rc;
}

int weft_sys_health(weft_world_t *world, const weft_std_t *std,
                    weft_phase_t phase, weft_system_t *out) {
  if (!world || !std)
    return weft_world_fail(world, WEFT_EINVAL, "weft_sys_health: std is NULL");
  int rc = weft__builtin_unique(world, "weft_sys_health", HEALTH_NAME);
  if (rc)
    return rc;
  /* The ids and the plan live in the world: the resources outlive any
   * caller's copy. A previous, removed registration left them; reuse. The
   * small one first: when the world runs out of resources between the two,
   * what stays behind is the small one, and a later call reuses it. */
  health_cfg_t init;
  memset(&init, 0, sizeof init);
  init.std = *std;
  weft_resource_t res = 0, plan = 0;
  /* A previous, removed registration left its queries: drop them. */
  if (weft_resource_lookup(world, HEALTH_CONFIG, &res) == 0) {
    health_cfg_t *old = weft_resource_get(world, res);
    if (old && weft_resource_size(world, res) == sizeof *old) {
      weft_query_destroy(old->ghosts); /* NULL: nothing */
      weft_query_destroy(old->keyed);
    }
  }
  rc = weft__builtin_state(world, HEALTH_CONFIG, &init, sizeof init, &res);
  if (!rc)
    rc = weft__builtin_state(
        world, HEALTH_PLAN, NULL,
        HEALTH_RING * HEALTH_BLOCK_EVENTS * sizeof(health_plan_t), &plan);
  if (rc)
    return rc;
  health_cfg_t *cfg = weft_resource_get(world, res);
  cfg->plan = weft_resource_get(world, plan);
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = std->ghost;
  if (std->ghost && (rc = weft_query_create(world, &qd, &cfg->ghosts)) != 0)
    return rc;
  qd.include[0] = std->key;
  if (std->key && (rc = weft_query_create(world, &qd, &cfg->keyed)) != 0)
    return rc;

  weft_system_desc_t d =
      weft__builtin_desc(HEALTH_NAME, phase, health_run, cfg);
  d.write[0] = std->health;
  d.read[0] = std->damage;
  d.read[1] = std->armor;
  d.read[2] = std->dead;
  d.read[3] = std->ghost;
  d.read[4] = std->key;
  /* Lifetime is read too, of ghosts only, and not declared: weft.lifetime
   * writes only the Lifetime of entities it owns (it excludes ghosts, in
   * chunks of their own), and a declared read would order health against
   * it, moving lifetime's despawns behind health in every world. */
  d.cmd_write[0] = std->dead;
  d.cmd_write[1] = std->velocity;
  d.cmd_write[2] = std->collider;
  d.receive[0] = std->collisions;
  /* hp is written only through rows resolved with Health in the lookup's
   * write mask, which stamps their chunks (see plan_batch). */
  d.flags = WEFT_SYSTEM_TRACKED_WRITES;
  return weft__builtin_register(world, &d, out);
}
