/* SPDX-License-Identifier: MIT */
/*
 * Lifetimes and spawners: the two built-in systems that change the
 * world's structure, both through commands, so that their effects land at
 * the phase's sync point in key order (system, chunk, row) and the world
 * comes out the same on any number of workers.
 *
 * Neither uses WEFT_QUERY_CHUNK_RUNS: their work per row is control flow
 * (a despawn, a burst of spawns), not a streaming loop.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <weft.h>
#include <weft/builtin.h>
#include <weft/relation.h>

#include "builtin_internal.h"

/* ---- lifetime ------------------------------------------------------------ */

static int lifetime_run(weft_sysctx_t *ctx, const weft_iter_t *it) {
  weft_lifetime_t *lt = it->columns[0];
  float dt = (float)ctx->dt;
  for (uint32_t i = 0; i < it->count; i++)
    lt[i].remaining -= dt;
  for (uint32_t i = 0; i < it->count; i++) {
    if (lt[i].remaining > 0.0f)
      continue;
    int rc = weft_cmd_despawn(ctx->cmd, it->entities[i]);
    if (rc)
      return rc;
  }
  return 0;
}

int weft_sys_lifetime(weft_world_t *w, const weft_std_t *std,
                      weft_phase_t phase, weft_system_t *out) {
  if (!w || !std)
    return weft_world_fail(w, WEFT_EINVAL, "weft_sys_lifetime: std is NULL");
  weft_system_desc_t d =
      weft__builtin_desc("weft.lifetime", phase, lifetime_run, NULL);
  d.query.include[0] = std->lifetime;
  d.query.exclude[0] = std->ghost; /* its owner counts a ghost's down */
  d.term_access[0] = WEFT_ACCESS_WRITE;
  d.flags = WEFT_SYSTEM_DESPAWNS;
  return weft__builtin_register(w, &d, out);
}

/* ---- spawners ------------------------------------------------------------ */

/* What a projectile is spawned with, in this order (zero-terminated). The
 * list lives in a resource so that it outlives the caller's weft_std_t. */
enum {
  P_POS,
  P_VEL,
  P_LIFETIME,
  P_COLLIDER,
  P_DAMAGE,
  P_COUNT,
  P_KEY = P_COUNT
};

typedef struct spawn_list_t {
  weft_component_t comps[P_COUNT + 1];
  weft_component_t owned_by; /* projectile -> spawner; 0: no edge */
} spawn_list_t;

/* The system's user data: the list, and the list with Key for the
 * projectiles of a keyed spawner (keyed[P_KEY] 0: no Key id). A scratch
 * resource of its own, beside the list's, so that a world without keys
 * keeps the digest it had before keyed mode existed. */
typedef struct spawn_user_t {
  const spawn_list_t *list;
  weft_component_t keyed[P_COUNT + 2];
} spawn_user_t;

/*
 * Records one burst of spawner @p s at (x, y) for entity @p e, whose Key
 * is @p key (NULL: none). A keyed spawner draws its directions by its key
 * and gives each projectile a key derived from its own, the tick and the
 * projectile's number in the burst: a spawner fires at most once a tick,
 * so the keys are distinct, and they depend on nothing a world's layout
 * or the spawner's handle could change.
 */
static int burst(weft_sysctx_t *ctx, const spawn_user_t *u, weft_entity_t e,
                 const weft_key_t *key, const weft_spawner_t *s, float x,
                 float y) {
  const spawn_list_t *l = u->list;
  weft_vec2_t pos = {x, y};
  weft_lifetime_t lt = {s->lifetime};
  weft_collider_t col;
  memset(&col, 0, sizeof col);
  col.shape = WEFT_SHAPE_CIRCLE;
  col.r = s->radius;
  col.layer = s->layer;
  col.mask = s->mask;
  weft_damage_t dmg = {s->damage};
  /* weft_sysctx_random() keys a draw by any 64-bit id: the handle, or
   * the key in keyed mode. */
  const uint64_t id = key ? key->id : e;
  const uint64_t tick_key = key ? weft_key_derive(key->id, ctx->tick) : 0;
  for (uint32_t n = 0; n < s->burst; n++) {
    /* The draw is keyed by (spawner, tick, n): the same on every thread. */
    uint64_t r = weft_sysctx_random(ctx, id, WEFT_SPAWNER_STREAM, n);
    double a = 6.283185307179586 * ((double)(r >> 11) * 0x1.0p-53);
    weft_vec2_t vel = {(float)(s->speed * cos(a)), (float)(s->speed * sin(a))};
    weft_key_t pk = {weft_key_derive(tick_key, n)};
    const void *values[P_COUNT + 1] = {&pos, &vel, &lt, &col, &dmg, &pk};
    weft_entity_t p;
    int rc = weft_cmd_spawn(ctx->cmd, key ? u->keyed : l->comps, values, &p);
    if (!rc && l->owned_by)
      rc = weft_cmd_relation_add(ctx->cmd, p, l->owned_by, e, NULL);
    if (rc)
      return rc;
  }
  return 0;
}

static int spawners_run(weft_sysctx_t *ctx, const weft_iter_t *it) {
  const spawn_user_t *u = ctx->user;
  weft_spawner_t *sp = it->columns[0];
  void *f[WEFT_MAX_FIELDS];
  if (weft_iter_fields(it, 1, f) != 2)
    return WEFT_EINVAL;
  const float *px = f[0], *py = f[1];
  const weft_key_t *keys =
      u->keyed[P_KEY] ? weft_iter_column_of(it, u->keyed[P_KEY]) : NULL;
  float dt = (float)ctx->dt;
  for (uint32_t i = 0; i < it->count; i++) {
    weft_spawner_t *s = &sp[i];
    s->timer -= dt;
    if (s->timer > 0.0f)
      continue;
    int rc =
        burst(ctx, u, it->entities[i], keys ? &keys[i] : NULL, s, px[i], py[i]);
    if (rc)
      return rc;
    s->timer += s->interval;
    if (s->timer <= 0.0f) /* more than one interval late: no catching up */
      s->timer = s->interval;
  }
  return 0;
}

/* Copies the projectile's component list into a fresh resource
 * "weft.spawners.N"; the world keeps it alive as long as the system. */
static int keep_list(weft_world_t *w, const weft_std_t *std,
                     weft_resource_t *res, const spawn_list_t **kept,
                     spawn_user_t **user) {
  spawn_list_t l;
  memset(&l, 0, sizeof l);
  l.comps[P_POS] = std->position;
  l.comps[P_VEL] = std->velocity;
  l.comps[P_LIFETIME] = std->lifetime;
  l.comps[P_COLLIDER] = std->collider;
  l.comps[P_DAMAGE] = std->damage;
  l.owned_by = std->owned_by;
  char name[48];
  weft_resource_t r;
  for (uint32_t n = 0;; n++) {
    snprintf(name, sizeof name, "weft.spawners.%u", n);
    if (weft_resource_lookup(w, name, &r) != 0)
      break;
  }
  int rc =
      weft_resource_register(w, name, sizeof l, _Alignof(spawn_list_t), &l, &r);
  if (rc)
    return rc;
  *res = r;
  *kept = weft_resource_get(w, r);
  if (!*kept)
    return WEFT_ENOMEM;
  spawn_user_t u;
  memset(&u, 0, sizeof u);
  u.list = *kept;
  memcpy(u.keyed, l.comps, sizeof l.comps);
  u.keyed[P_KEY] = std->key;
  char uname[64];
  snprintf(uname, sizeof uname, "%s.keyed", name);
  weft_resource_t ur;
  rc = weft__builtin_state(w, uname, &u, sizeof u, &ur);
  if (rc)
    return rc;
  *user = weft_resource_get(w, ur);
  return *user ? 0 : WEFT_ENOMEM;
}

int weft_sys_spawners(weft_world_t *w, const weft_std_t *std,
                      weft_phase_t phase, weft_system_t *out) {
  if (!w || !std)
    return weft_world_fail(w, WEFT_EINVAL, "weft_sys_spawners: std is NULL");
  /* Before keep_list(), which makes a resource. */
  int rc = weft__builtin_unique(w, "weft_sys_spawners", "weft.spawners");
  if (rc)
    return rc;
  weft_resource_t res;
  const spawn_list_t *l;
  spawn_user_t *u;
  rc = keep_list(w, std, &res, &l, &u);
  if (rc)
    return rc;
  weft_system_desc_t d =
      weft__builtin_desc("weft.spawners", phase, spawners_run, u);
  d.query.include[0] = std->spawner;
  d.query.include[1] = std->position;
  d.query.exclude[0] = std->dead;
  d.query.exclude[1] = std->ghost; /* its owner fires it */
  d.term_access[0] = WEFT_ACCESS_WRITE;
  d.term_access[1] = WEFT_ACCESS_READ;
  d.read[0] = std->key;
  uint32_t nw = 0;
  for (uint32_t i = 0; i < P_COUNT; i++)
    d.cmd_write[nw++] = l->comps[i];
  if (l->owned_by)
    d.cmd_write[nw++] = l->owned_by;
  if (u->keyed[P_KEY])
    d.cmd_write[nw++] = u->keyed[P_KEY];
  d.res_read[0] = res;
  return weft__builtin_register(w, &d, out);
}
