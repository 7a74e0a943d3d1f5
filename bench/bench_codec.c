/* SPDX-License-Identifier: MIT */
/*
 * codec: the per-entity codec (weft/entity_codec.h), what moving an
 * entity between MPI ranks costs on either side. 4096 entities (1024 with
 * --quick) of three components: Position (vec3, AoS), Velocity (two
 * floats, field-level SoA, gathered per row) and a u32 Health; each
 * record is 35 bytes.
 *
 * codec/encode writes every entity's record with weft_entity_encode()
 * into one buffer; codec/decode_into writes the records back into the
 * entities of a second world, which registers the components in another
 * order and has them already (a ghost refresh: weft_entity_decode_into()).
 * Both are measured against a same-run memcpy of the same bytes, one
 * record at a time (the least that moving the records costs); no target.
 * Unit: ns per entity.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <weft.h>

#include "harness.h"

typedef struct codec_state_t {
  uint32_t n;
  weft_world_t *src, *dst;
  weft_entity_codec_t *enc, *dec;
  weft_entity_t *from, *to;
  uint8_t *recs; /* n records of `len` bytes */
  uint8_t *copy; /* the baseline's destination */
  size_t len;
} codec_state_t;

static uint64_t codec_encode(void *p, uint64_t reps) {
  codec_state_t *s = p;
  size_t len = 0;
  for (uint64_t r = 0; r < reps; r++) {
    for (uint32_t i = 0; i < s->n; i++)
      bench_check(weft_entity_encode(s->enc, s->from[i], s->recs + i * s->len,
                                     s->len, &len),
                  "weft_entity_encode");
    bench_clobber();
  }
  return len + s->recs[s->n * s->len - 1];
}

static uint64_t codec_decode_into(void *p, uint64_t reps) {
  codec_state_t *s = p;
  for (uint64_t r = 0; r < reps; r++) {
    for (uint32_t i = 0; i < s->n; i++)
      bench_check(weft_entity_decode_into(s->dec, s->to[i],
                                          s->recs + i * s->len, s->len),
                  "weft_entity_decode_into");
    bench_clobber();
  }
  return weft_world_count(s->dst);
}

/* Baseline: each record's bytes copied on their own. */
static uint64_t codec_copy(void *p, uint64_t reps) {
  codec_state_t *s = p;
  for (uint64_t r = 0; r < reps; r++) {
    for (uint32_t i = 0; i < s->n; i++) {
      memcpy(s->copy + i * s->len, s->recs + i * s->len, s->len);
      bench_clobber();
    }
  }
  return s->copy[s->n * s->len - 1];
}

typedef struct vel_t {
  float vx, vy;
} vel_t;

/* Registers the three components, Health first when `reversed`. */
static void codec_world(weft_world_t **out, bool reversed,
                        weft_component_t ids[3]) {
  weft_world_config_t wc = {.world_tag = reversed ? 2 : 1};
  bench_check(weft_world_create(&wc, out), "weft_world_create");
  static const weft_field_desc_t pf[] = {{"x", 0, 4, WEFT_FIELD_F32},
                                         {"y", 4, 4, WEFT_FIELD_F32},
                                         {"z", 8, 4, WEFT_FIELD_F32}};
  static const weft_field_desc_t vf[] = {{"vx", 0, 4, WEFT_FIELD_F32},
                                         {"vy", 4, 4, WEFT_FIELD_F32}};
  weft_component_desc_t d[3] = {
      {.name = "Position", .size = 12, .fields = pf, .field_count = 3},
      {.name = "Velocity",
       .size = 8,
       .fields = vf,
       .field_count = 2,
       .flags = WEFT_COMPONENT_SOA},
      {.name = "Health", .size = 4},
  };
  for (int k = 0; k < 3; k++) {
    int i = reversed ? 2 - k : k;
    bench_check(weft_component_register(*out, &d[i], &ids[i]),
                "weft_component_register");
  }
}

void bench_codec(bench_ctx_t *ctx) {
  const char *rows[] = {"codec/encode", "codec/decode_into"};
  if (!bench_selected(ctx, rows[0]) && !bench_selected(ctx, rows[1]))
    return;
  codec_state_t s;
  memset(&s, 0, sizeof s);
  s.n = ctx->quick ? 1024 : 4096;
  weft_component_t a[4] = {0}, b[4] = {0};
  codec_world(&s.src, false, a);
  codec_world(&s.dst, true, b);
  s.from = bench_alloc(s.n * sizeof(*s.from));
  s.to = bench_alloc(s.n * sizeof(*s.to));
  for (uint32_t i = 0; i < s.n; i++) {
    bench_vec3_t pos = {(float)i, 1.0f, 2.0f};
    vel_t vel = {0.5f, (float)i};
    uint32_t hp = i;
    const void *vals[] = {&pos, &vel, &hp};
    bench_check(weft_spawn_with(s.src, a, vals, &s.from[i]), "spawn");
    bench_check(weft_spawn_with(s.dst, b, NULL, &s.to[i]), "spawn");
  }
  bench_check(weft_entity_codec_new(s.src, NULL, &s.enc), "codec_new");
  bench_check(weft_entity_codec_new(s.dst, NULL, &s.dec), "codec_new");
  uint8_t table[1024];
  size_t tlen = 0;
  bench_check(weft_entity_codec_table(s.enc, table, sizeof table, &tlen),
              "codec_table");
  bench_check(weft_entity_codec_bind(s.dec, table, tlen), "codec_bind");
  bench_check(weft_entity_encode(s.enc, s.from[0], NULL, 0, &s.len) ==
                      WEFT_ELIMIT
                  ? 0
                  : WEFT_EINVAL,
              "sizing a record");
  s.recs = bench_alloc(s.n * s.len);
  s.copy = bench_alloc(s.n * s.len);
  codec_encode(&s, 1);

  bench_case_t enc = {
      .name = rows[0],
      .unit = "ns/entity",
      .n = s.n,
      .work = {"weft", codec_encode, &s, s.n, false},
      .base = {"c_memcpy", codec_copy, &s, s.n, false},
  };
  if (bench_selected(ctx, rows[0]))
    bench_compare(ctx, &enc);
  bench_case_t dec = enc;
  dec.name = rows[1];
  dec.work = (bench_side_t){"weft", codec_decode_into, &s, s.n, false};
  if (bench_selected(ctx, rows[1]))
    bench_compare(ctx, &dec);

  weft_entity_codec_free(s.enc);
  weft_entity_codec_free(s.dec);
  bench_free(s.recs);
  bench_free(s.copy);
  bench_free(s.from);
  bench_free(s.to);
  weft_world_destroy(s.src);
  weft_world_destroy(s.dst);
}
