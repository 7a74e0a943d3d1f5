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
#include <weft/relation.h>

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
  if (!rc && weft_component_lookup(w, "weft.OwnedBy", &s.owned_by) != 0) {
    weft_relation_desc_t rd = {.name = "weft.OwnedBy",
                               .flags = WEFT_RELATION_EXCLUSIVE |
                                        WEFT_RELATION_SPARSE |
                                        WEFT_RELATION_CASCADE};
    rc = weft_relation_register(w, &rd, &s.owned_by);
  }
  if (!rc && weft_channel_lookup(w, "weft.collisions", &s.collisions) != 0)
    rc = weft_channel_register(w, "weft.collisions", sizeof(weft_collision_t),
                               &s.collisions);
  /* Keyed mode and ghosts (builtin.h), last, so that the ids registered
   * before them are what they were before keyed mode existed: the systems
   * behave, bit for bit, as before for entities that carry neither. */
  if (!rc)
    rc = plain(w, "weft.Key", sizeof(weft_key_t), _Alignof(weft_key_t), &s.key);
  if (!rc)
    rc = plain(w, "weft.Ghost", 0, 0, &s.ghost);
  if (rc)
    return rc;
  *out = s;
  return 0;
}
