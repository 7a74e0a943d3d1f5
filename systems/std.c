/* SPDX-License-Identifier: MIT */
/*
 * The standard components, resources and channel the built-in systems
 * share. Registering twice looks the first registration up, so every
 * module (and the user) can call weft_std_register() without coordination.
 */
#include <stddef.h>
#include <string.h>

#include <weft.h>
#include <weft/builtin.h>

#include "sys_internal.h"

/* Registers a component or, when the name is taken, finds it. */
static int comp(weft_world_t *w, const weft_component_desc_t *d,
                weft_component_t *out) {
  if (weft_component_lookup(w, d->name, out) == 0)
    return 0;
  return weft_component_register(w, d, out);
}

/* Position and Velocity: x and y as separate arrays (field-level SoA), so
 * the integration loops stream one float column at a time. */
static int vec2(weft_world_t *w, const char *name, weft_component_t *out) {
  static const weft_field_desc_t xy[] = {WEFT_FIELD(weft_vec2_t, x),
                                         WEFT_FIELD(weft_vec2_t, y)};
  weft_component_desc_t d = WEFT_COMPONENT_DESC(weft_vec2_t);
  d.name = name;
  d.fields = xy;
  d.field_count = 2;
  d.flags = WEFT_COMPONENT_SOA;
  return comp(w, &d, out);
}

static int plain(weft_world_t *w, const char *name, uint32_t size,
                 uint32_t align, weft_component_t *out) {
  weft_component_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.size = size;
  d.alignment = align;
  return comp(w, &d, out);
}

int weft_std_register(weft_world_t *w, weft_std_t *out) {
  if (!w || !out)
    return weft_world_fail(w, WEFT_EINVAL, "weft_std_register: out is NULL");
  weft_std_t s;
  memset(&s, 0, sizeof s);
  int rc = vec2(w, "weft.Position", &s.position);
  if (!rc)
    rc = vec2(w, "weft.Velocity", &s.velocity);
  if (!rc)
    rc = plain(w, "weft.Collider", sizeof(weft_collider_t), 4, &s.collider);
  if (!rc)
    rc = plain(w, "weft.Health", sizeof(weft_health_t), 4, &s.health);
  if (!rc)
    rc = plain(w, "weft.Armor", sizeof(weft_armor_t), 4, &s.armor);
  if (!rc)
    rc = plain(w, "weft.Damage", sizeof(weft_damage_t), 4, &s.damage);
  if (!rc)
    rc = plain(w, "weft.Lifetime", sizeof(weft_lifetime_t), 4, &s.lifetime);
  if (!rc)
    rc = plain(w, "weft.Spawner", sizeof(weft_spawner_t), 4, &s.spawner);
  if (!rc)
    rc = plain(w, "weft.Boid", 0, 0, &s.boid);
  if (!rc)
    rc = plain(w, "weft.Dead", 0, 0, &s.dead);
  if (!rc && weft_channel_lookup(w, "weft.collisions", &s.collisions) != 0)
    rc = weft_channel_register(w, "weft.collisions", sizeof(weft_collision_t),
                               &s.collisions);
  if (rc)
    return rc;
  *out = s;
  return 0;
}

int weft__sys_state(weft_world_t *w, const char *name, const void *init,
                    size_t size, weft_resource_t *res) {
  int rc;
  if (weft_resource_lookup(w, name, res) == 0) {
    if (weft_resource_size(w, *res) != size)
      return WEFT_EEXIST;
    rc = init ? weft_resource_set(w, *res, init) : 0;
  } else {
    rc = weft_resource_register(w, name, size, 0, init, res);
  }
  /* Settings with pointers in them, plans and caches: not world state
   * for the digest (the world's own parts hold the state they describe). */
  return rc ? rc : weft_resource_set_flags(w, *res, WEFT_RESOURCE_SCRATCH);
}

void weft__sys_split(weft_sysctx_t *ctx, uint32_t n, uint32_t grain,
                     weft_range_fn fn, void *arg) {
  weft_pool_t *pool = weft_world_pool(ctx->world);
  if (pool && n > grain)
    weft_pool_parallel_for(pool, weft_sysctx_pool_worker(ctx), 0, n, grain, fn,
                           arg);
  else if (n)
    fn(arg, 0, n, WEFT_WORKER_EXTERNAL);
}

uint32_t weft__sys_helpers(weft_sysctx_t *ctx, weft_job_fn fn, void *arg,
                           uint32_t max, weft_counter_t *done) {
  memset(done, 0, sizeof *done);
  weft_pool_t *pool = weft_world_pool(ctx->world);
  uint32_t n = pool ? weft_pool_workers(pool) - 1 : 0;
  if (n > max)
    n = max;
  uint32_t self = weft_sysctx_pool_worker(ctx);
  for (uint32_t i = 0; i < n; i++)
    weft_pool_submit(pool, self, fn, arg, done, WEFT_WORKER_EXTERNAL);
  return n;
}

void weft__sys_join(weft_sysctx_t *ctx, weft_counter_t *done, uint32_t n) {
  if (n)
    weft_pool_wait(weft_world_pool(ctx->world), weft_sysctx_pool_worker(ctx),
                   done);
}
