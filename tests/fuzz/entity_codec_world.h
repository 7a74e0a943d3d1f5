/* SPDX-License-Identifier: MIT */
/*
 * The world the per-entity codec's fuzz target decodes into
 * (fuzz_entity_codec.c), shared with the test that writes its seed corpus
 * (test_entity_codec.c): a component of every kind (AoS with fields,
 * field-level SoA, tracked, tag, transient, one whose requirement brings
 * the transient one with a default) and a relation, a codec of the whole
 * set and one of a subset (a peer's table to bind), and sample entities.
 *
 * An input is one byte saying what to do with the rest: 0 decode it as a
 * record, 1 decode it into an existing entity, 2 bind it as a table.
 * Header-only.
 */
#ifndef WEFT_FUZZ_ENTITY_CODEC_WORLD_H
#define WEFT_FUZZ_ENTITY_CODEC_WORLD_H

#include <stdint.h>
#include <string.h>

#include <weft.h>

enum { FZ_DECODE, FZ_DECODE_INTO, FZ_BIND, FZ_MODES };

typedef struct fz_world_t {
  weft_world_t *w;
  weft_component_t pos, vel, hp, tag, cache, armor, likes;
  weft_entity_codec_t *codec; /* every component */
  weft_entity_codec_t *peer;  /* pos, vel and tag */
  weft_entity_t target;       /* decode_into's entity */
} fz_world_t;

typedef struct fz_pos_t {
  float x, y, z;
} fz_pos_t;

static inline int fz_reg(weft_world_t *w, const char *name, uint32_t size,
                         uint32_t flags, const weft_field_desc_t *f,
                         uint32_t nf, weft_component_t *id) {
  weft_component_desc_t d = {.name = name,
                             .size = size,
                             .fields = f,
                             .field_count = nf,
                             .flags = flags};
  return weft_component_register(w, &d, id);
}

/* Builds the world; 0 or an error code. */
static inline int fz_world_build(fz_world_t *f) {
  static const weft_field_desc_t pf[] = {{"x", 0, 4, WEFT_FIELD_F32},
                                         {"y", 4, 4, WEFT_FIELD_F32},
                                         {"z", 8, 4, WEFT_FIELD_F32}};
  static const weft_field_desc_t vf[] = {{"vx", 0, 4, WEFT_FIELD_F32},
                                         {"vy", 4, 4, WEFT_FIELD_F32}};
  static const uint64_t cache_default = 77;
  memset(f, 0, sizeof(*f));
  weft_world_config_t wc = {.world_tag = 1};
  int rc = weft_world_create(&wc, &f->w);
  if (!rc)
    rc = fz_reg(f->w, "pos", 12, 0, pf, 3, &f->pos);
  if (!rc)
    rc = fz_reg(f->w, "vel", 8, WEFT_COMPONENT_SOA, vf, 2, &f->vel);
  if (!rc)
    rc = fz_reg(f->w, "hp", 4, WEFT_COMPONENT_TRACK_DIRTY, NULL, 0, &f->hp);
  if (!rc)
    rc = fz_reg(f->w, "tag", 0, 0, NULL, 0, &f->tag);
  if (!rc)
    rc = fz_reg(f->w, "cache", 8, WEFT_COMPONENT_TRANSIENT, NULL, 0, &f->cache);
  if (!rc)
    rc = fz_reg(f->w, "armor", 4, 0, NULL, 0, &f->armor);
  if (!rc)
    rc = weft_component_require(f->w, f->armor, f->cache, &cache_default);
  weft_relation_desc_t rd = {.name = "likes"};
  if (!rc)
    rc = weft_relation_register(f->w, &rd, &f->likes);
  if (!rc)
    rc = weft_entity_codec_new(f->w, NULL, &f->codec);
  weft_component_t only[] = {f->pos, f->vel, f->tag};
  weft_entity_codec_config_t pc = {only, 3};
  if (!rc)
    rc = weft_entity_codec_new(f->w, &pc, &f->peer);
  weft_component_t tc[] = {f->pos, f->hp, 0};
  if (!rc)
    rc = weft_spawn_with(f->w, tc, NULL, &f->target);
  return rc;
}

/* Spawns sample entity i (of 16): bit k of i picks the k-th of pos, vel,
 * hp and armor, all with the tag; odd ones have pos disabled. */
static inline int fz_sample(fz_world_t *f, uint32_t i, weft_entity_t *out) {
  fz_pos_t p = {(float)i, 2.0f, -3.5f};
  float v[2] = {0.25f, (float)i};
  uint32_t hp = 100 + i, armor = 7 * i;
  weft_component_t all[] = {f->pos, f->vel, f->hp, f->armor};
  const void *vals[] = {&p, v, &hp, &armor};
  weft_component_t ids[6];
  const void *vs[6];
  uint32_t n = 0;
  for (uint32_t k = 0; k < 4; k++)
    if (i >> k & 1) {
      ids[n] = all[k];
      vs[n++] = vals[k];
    }
  ids[n] = f->tag;
  vs[n++] = NULL;
  ids[n] = 0;
  int rc = weft_spawn_with(f->w, ids, vs, out);
  if (!rc && (i & 1))
    rc = weft_disable(f->w, *out, f->pos);
  return rc;
}

#endif /* WEFT_FUZZ_ENTITY_CODEC_WORLD_H */
