/*
 * "weft.health": collision events become damage, damage becomes death.
 *
 * A task (no query: one call per run, chunk NULL) that walks the
 * collisions channel in its published order, which the scheduler makes
 * the same on any number of threads, so hp values and the order of the
 * death commands are deterministic. Health is written in place under the
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

typedef struct health_cfg_t {
  weft_std_t std;
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
 * Events are taken in blocks: weft_get_many resolves the block's parties
 * first, so that the cache misses of a block's random lookups overlap
 * instead of being taken one after another (an arena tick has tens of
 * thousands of events over a million entities, and this system runs on one
 * thread). The pointers stay valid for the whole run: structural changes
 * only go to the command buffer. Values are read through them when an
 * event is handled, so earlier events of the block are seen.
 */
#define HEALTH_BLOCK 128u

typedef struct health_block_t {
  weft_entity_t e[2][HEALTH_BLOCK];    /* parties a and b */
  const void *health[2][HEALTH_BLOCK]; /* weft_health_t or NULL */
  const void *damage[2][HEALTH_BLOCK]; /* weft_damage_t or NULL */
  const void *armor[2][HEALTH_BLOCK];  /* weft_armor_t or NULL */
} health_block_t;

static void resolve_block(weft_world_t *w, const weft_std_t *s,
                          const weft_collision_t *ev, uint32_t k,
                          health_block_t *b) {
  for (uint32_t j = 0; j < k; j++) {
    b->e[0][j] = ev[j].a;
    b->e[1][j] = ev[j].b;
  }
  for (int p = 0; p < 2; p++) {
    weft_get_many(w, b->e[p], k, s->health, b->health[p]);
    weft_get_many(w, b->e[p], k, s->damage, b->damage[p]);
    weft_get_many(w, b->e[p], k, s->armor, b->armor[p]);
  }
}

/* Alive for the purpose of this system: live handle, no Dead tag, and not
 * out of hp. @p h is the party's Health, NULL if it has none. */
static bool alive(weft_world_t *w, const weft_std_t *s, weft_entity_t e,
                  const weft_health_t *h) {
  if (!weft_is_alive(w, e) || weft_has(w, e, s->dead))
    return false;
  return !h || h->hp > 0.0f;
}

/* Party @p from of event j of the block hits the other one (both alive at
 * the event). Returns 0 or a command error. */
static int hit(weft_sysctx_t *ctx, const weft_std_t *s, const health_block_t *b,
               uint32_t j, int from) {
  const weft_damage_t *d = b->damage[from][j];
  int to = 1 - from;
  /* Health is the declared write; the row is the one get_many found. */
  weft_health_t *h = (weft_health_t *)b->health[to][j];
  if (!d || !h || !(h->hp > 0.0f))
    return 0;
  h->hp -= mitigate(d->amount, b->armor[to][j]);
  if (h->hp > 0.0f)
    return 0;
  weft_entity_t e = b->e[to][j];
  int rc = weft_cmd_add(ctx->cmd, e, s->dead, NULL);
  if (!rc)
    rc = weft_cmd_disable(ctx->cmd, e, s->velocity);
  if (!rc)
    rc = weft_cmd_disable(ctx->cmd, e, s->collider);
  return rc;
}

static int health_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  const health_cfg_t *cfg = ctx->user;
  const weft_std_t *s = &cfg->std;
  weft_world_t *w = ctx->world;
  uint32_t n = 0;
  const weft_collision_t *ev = weft_event_read(w, s->collisions, &n);
  health_block_t b;
  for (uint32_t base = 0; base < n; base += HEALTH_BLOCK) {
    uint32_t k = n - base < HEALTH_BLOCK ? n - base : HEALTH_BLOCK;
    resolve_block(w, s, ev + base, k, &b);
    for (uint32_t j = 0; j < k; j++) {
      if (b.e[0][j] == b.e[1][j])
        continue; /* not a contact */
      bool la = alive(w, s, b.e[0][j], b.health[0][j]);
      bool lb = alive(w, s, b.e[1][j], b.health[1][j]);
      if (!la || !lb)
        continue;
      int rc = hit(ctx, s, &b, j, 0);
      if (!rc)
        rc = hit(ctx, s, &b, j, 1);
      if (rc)
        return rc;
    }
  }
  return 0;
}

int weft_sys_health(weft_world_t *world, const weft_std_t *std,
                    weft_phase_t phase, weft_system_t *out) {
  if (!world || !std)
    return WEFT_EINVAL;
  weft_system_t sys = 0;
  if (weft_system_lookup(world, HEALTH_NAME, &sys) == 0)
    return WEFT_EEXIST;
  health_cfg_t init;
  memset(&init, 0, sizeof init);
  init.std = *std;
  /* The ids live in the world: the resource outlives any caller's copy. A
   * previous, removed registration left the resource; reuse it. */
  weft_resource_t res = 0;
  int rc = weft__sys_state(world, HEALTH_CONFIG, &init, sizeof init, &res);
  if (rc)
    return rc;

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
  d.user = weft_resource_get(world, res);
  rc = weft_system_register(world, &d, &sys);
  if (rc)
    return rc;
  if (out)
    *out = sys;
  return 0;
}
