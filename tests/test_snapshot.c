/* SPDX-License-Identifier: MIT */
/*
 * Snapshots (weft/snapshot.h): round trips that keep the digest and the
 * handles later spawns get, loads into used worlds, migration by field
 * name, rejections case by case, transient components, named sections,
 * files, and every truncation and single-bit flip of a snapshot refused
 * with the world left as it was.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "support/snapshot_test.h"
#include "support/weft_test.h"
#include "support/sim_test.h"
#include "weft.h"

/* ---- the test program's components --------------------------------------- */

typedef struct pos_t {
  float x, y, z;
} pos_t;

typedef struct vel_t {
  float dx, dy;
} vel_t;

typedef struct link_t {
  weft_entity_t target;
  uint32_t n;
  uint32_t pad_;
} link_t;

typedef struct ids_t {
  weft_component_t pos, vel, link, hp, tag, cache;
} ids_t;

static weft_component_t reg(weft_world_t *w, const char *name, uint32_t size,
                            uint32_t align, const weft_field_desc_t *f,
                            uint32_t nf, uint32_t flags) {
  weft_component_desc_t d = {.name = name,
                             .size = size,
                             .alignment = align,
                             .fields = f,
                             .field_count = nf,
                             .flags = flags};
  weft_component_t id = 0;
  assert_int_equal(weft_component_register(w, &d, &id), WEFT_OK);
  return id;
}

static ids_t register_all(weft_world_t *w) {
  static const weft_field_desc_t pf[] = {
      {"x", offsetof(pos_t, x), 4, WEFT_FIELD_F32},
      {"y", offsetof(pos_t, y), 4, WEFT_FIELD_F32},
      {"z", offsetof(pos_t, z), 4, WEFT_FIELD_F32}};
  static const weft_field_desc_t vf[] = {
      {"dx", offsetof(vel_t, dx), 4, WEFT_FIELD_F32},
      {"dy", offsetof(vel_t, dy), 4, WEFT_FIELD_F32}};
  static const weft_field_desc_t lf[] = {
      {"target", offsetof(link_t, target), 8, WEFT_FIELD_ENTITY},
      {"n", offsetof(link_t, n), 4, WEFT_FIELD_U32}};
  ids_t ids;
  ids.pos = reg(w, "pos", sizeof(pos_t), 4, pf, 3, 0);
  ids.vel = reg(w, "vel", sizeof(vel_t), 4, vf, 2, WEFT_COMPONENT_SOA);
  ids.link = reg(w, "link", sizeof(link_t), 8, lf, 2, 0);
  ids.hp = reg(w, "hp", 4, 4, NULL, 0, WEFT_COMPONENT_TRACK_DIRTY);
  ids.tag = reg(w, "tag", 0, 0, NULL, 0, 0);
  ids.cache = reg(w, "cache", 8, 8, NULL, 0, WEFT_COMPONENT_TRANSIENT);
  return ids;
}

static weft_world_t *world_new(uint8_t tag) {
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.world_tag = tag;
  cfg.chunk_size = 4096; /* small chunks: many of them */
  return wt_world_new(&cfg);
}

/* Random churn over the components: spawns, adds, removes, disables,
 * despawns, and a trim now and then, all from one seed. */
static void churn(weft_world_t *w, const ids_t *ids, uint64_t seed,
                  uint32_t steps) {
  wt_rng_t r = wt_rng(seed);
  weft_entity_t *live = malloc(sizeof(*live) * (steps + 1));
  uint32_t n = 0;
  const weft_component_t all[] = {ids->pos, ids->vel, ids->link,
                                  ids->hp,  ids->tag, ids->cache};
  for (uint32_t s = 0; s < steps; s++) {
    uint32_t op = wt_below(&r, 10);
    if (op < 4 || n == 0) {
      weft_component_t comps[4] = {0};
      uint32_t k = 0;
      comps[k++] = ids->pos;
      if (wt_chance(&r, 1, 2))
        comps[k++] = ids->vel;
      if (wt_chance(&r, 1, 3))
        comps[k++] = ids->tag;
      assert_int_equal(weft_spawn_with(w, comps, NULL, &live[n]), WEFT_OK);
      pos_t p = {(float)s, (float)n, 1.5f};
      assert_int_equal(weft_set(w, live[n], ids->pos, &p), WEFT_OK);
      n++;
      continue;
    }
    uint32_t i = wt_below(&r, n);
    weft_entity_t e = live[i];
    weft_component_t c = all[wt_below(&r, 6)];
    if (op == 4) {
      assert_int_equal(weft_despawn(w, e), WEFT_OK);
      live[i] = live[--n];
    } else if (op == 5) {
      if (weft_has(w, e, c))
        assert_int_equal(weft_remove(w, e, c), WEFT_OK);
    } else if (op == 6 || op == 7) {
      if (!weft_has(w, e, c)) {
        assert_int_equal(weft_add(w, e, c, NULL), WEFT_OK);
        if (c == ids->link) {
          link_t l = {live[wt_below(&r, n)], s, 0};
          assert_int_equal(weft_set(w, e, c, &l), WEFT_OK);
        } else if (c == ids->hp || c == ids->cache) {
          uint64_t v = s;
          assert_int_equal(weft_set(w, e, c, &v), WEFT_OK);
        } else if (c == ids->vel) {
          vel_t v = {(float)s, -(float)s};
          assert_int_equal(weft_set(w, e, c, &v), WEFT_OK);
        }
      }
    } else if (op == 8) {
      if (weft_has(w, e, c) && c != ids->pos)
        assert_int_equal(weft_disable(w, e, c), WEFT_OK);
    } else if (s % 97 == 0) {
      weft_world_trim(w);
    }
  }
  free(live);
}

/* Spawns a few entities the same way in both worlds and checks that they
 * get the same handles and the worlds stay equal. */
static void same_future(weft_world_t *a, const ids_t *ia, weft_world_t *b,
                        const ids_t *ib) {
  for (uint32_t i = 0; i < 50; i++) {
    weft_component_t ca[2] = {ia->pos, 0}, cb[2] = {ib->pos, 0};
    weft_entity_t ea, eb;
    assert_int_equal(weft_spawn_with(a, ca, NULL, &ea), WEFT_OK);
    assert_int_equal(weft_spawn_with(b, cb, NULL, &eb), WEFT_OK);
    assert_int_equal(ea, eb);
  }
  assert_int_equal(weft_world_digest(a), weft_world_digest(b));
}

/* Zeroes the transient component in every entity that has it, so a world
 * compares with one loaded from its snapshot. */
static void zero_cache(weft_world_t *w, const ids_t *ids) {
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = ids->cache;
  qd.flags = WEFT_QUERY_MATCH_DISABLED;
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(w, &qd, &q), WEFT_OK);
  weft_iter_t it;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    uint64_t *c = weft_iter_column(&it, 0);
    if (c)
      memset(c, 0, it.count * sizeof(*c));
  }
  weft_query_destroy(q);
}

static void test_snapshot_round_trip_keeps_digest_and_handles(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 4; seed++) {
    weft_world_t *a = world_new(7);
    ids_t ia = register_all(a);
    churn(a, &ia, seed, 3000);
    mem_t m = save(a);
    zero_cache(a, &ia);
    /* A fresh world with another tag: the snapshot's tag is adopted. */
    weft_world_t *b = world_new(0);
    ids_t ib = register_all(b);
    weft_snapshot_error_t err;
    int rc = weft_snapshot_load_memory(b, m.p, m.n, &err);
    if (rc)
      fail_msg("load: %s at %s+%llu", err.message, err.section,
               (unsigned long long)err.offset);
    assert_int_equal(weft_world_tag(b), 7);
    assert_int_equal(weft_world_digest(a), weft_world_digest(b));
    assert_int_equal(weft_world_count(a), weft_world_count(b));
    same_future(a, &ia, b, &ib);
    free(m.p);
    weft_world_destroy(a);
    weft_world_destroy(b);
  }
}

/* Every built-in scenario: save after some ticks, load into a world that
 * built the same scenario from another seed, compare digests; then both
 * run on and stay equal (the split run of weft-sim, in one process). */
static void test_snapshot_scenarios_round_trip_and_run_on(void **state) {
  (void)state;
  for (uint32_t kind = SIM_ARENA; kind <= SIM_PARTICLES; kind++)
    for (uint32_t workers = 0; workers <= 2; workers += 2) {
      wt_sim_t a, b;
      wt_sim_open(&a, (sim_kind_t)kind, workers, 3000, 11);
      for (int t = 0; t < 10; t++)
        wt_sim_tick(&a);
      mem_t m = save(a.w);
      wt_sim_open(&b, (sim_kind_t)kind, workers, 2000, 99);
      for (int t = 0; t < 3; t++)
        wt_sim_tick(&b);
      weft_snapshot_error_t err;
      int rc = weft_snapshot_load_memory(b.w, m.p, m.n, &err);
      if (rc)
        fail_msg("%s: load: %s", sim_kind_name((sim_kind_t)kind), err.message);
      assert_int_equal(weft_world_digest(a.w), weft_world_digest(b.w));
      weft_pipeline_state_t sa, sb;
      weft_pipeline_state(a.w, &sa);
      weft_pipeline_state(b.w, &sb);
      assert_int_equal(sa.tick, sb.tick);
      for (int t = 0; t < 10; t++) {
        wt_sim_tick(&a);
        wt_sim_tick(&b);
        if (weft_world_digest(a.w) != weft_world_digest(b.w))
          fail_msg("%s, %u workers: digests part at tick %d after load",
                   sim_kind_name((sim_kind_t)kind), workers, t);
      }
      free(m.p);
      wt_sim_close(&a);
      wt_sim_close(&b);
    }
}

/* A used world (other entities, other archetypes) is emptied first. */
static void test_snapshot_load_replaces_a_used_world(void **state) {
  (void)state;
  weft_world_t *a = world_new(7);
  ids_t ia = register_all(a);
  churn(a, &ia, 5, 2000);
  mem_t m = save(a);
  zero_cache(a, &ia);
  weft_world_t *b = world_new(7);
  ids_t ib = register_all(b);
  churn(b, &ib, 77, 4000);
  assert_int_equal(weft_snapshot_load_memory(b, m.p, m.n, NULL), WEFT_OK);
  assert_int_equal(weft_world_digest(a), weft_world_digest(b));
  same_future(a, &ia, b, &ib);
  free(m.p);
  weft_world_destroy(a);
  weft_world_destroy(b);
}

/* A snapshot of a small world, and that world's digest. */
static mem_t small_snapshot(weft_world_t **out, uint64_t seed) {
  weft_world_t *w = world_new(9);
  ids_t ids = register_all(w);
  churn(w, &ids, seed, 120);
  mem_t m = save(w);
  *out = w;
  return m;
}

/* Every truncation and every single-bit flip is refused with an error,
 * and the world it was loaded into keeps its digest. */
static void test_snapshot_truncations_and_bit_flips_are_refused(void **state) {
  (void)state;
  weft_world_t *src;
  mem_t m = small_snapshot(&src, 3);
  weft_world_t *w = world_new(9);
  ids_t ids = register_all(w);
  churn(w, &ids, 8, 50);
  const uint64_t before = weft_world_digest(w);
  uint8_t *copy = malloc(m.n);
  for (size_t n = 0; n < m.n; n++) {
    weft_snapshot_error_t err;
    int rc = weft_snapshot_load_memory(w, m.p, n, &err);
    if (rc >= 0)
      fail_msg("truncation to %zu of %zu bytes was accepted", n, m.n);
    assert_int_equal(err.code, rc);
  }
  assert_int_equal(weft_world_digest(w), before);
  for (size_t bit = 0; bit < m.n * 8; bit++) {
    memcpy(copy, m.p, m.n);
    copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    int rc = weft_snapshot_load_memory(w, copy, m.n, NULL);
    if (rc >= 0)
      fail_msg("flip of bit %zu was accepted", bit);
  }
  assert_int_equal(weft_world_digest(w), before);
  /* And the intact snapshot still loads. */
  assert_int_equal(weft_snapshot_load_memory(w, m.p, m.n, NULL), WEFT_OK);
  free(copy);
  free(m.p);
  weft_world_destroy(src);
  weft_world_destroy(w);
}

/* The error names the section and offset of a damaged byte. */
static void test_snapshot_error_says_where(void **state) {
  (void)state;
  weft_world_t *src;
  mem_t m = small_snapshot(&src, 4);
  weft_world_t *w = world_new(9);
  register_all(w);
  weft_snapshot_error_t err;
  m.p[m.n - 40] ^= 1; /* inside the last sections */
  assert_int_equal(weft_snapshot_load_memory(w, m.p, m.n, &err), WEFT_EFORMAT);
  assert_true(err.section[0] != 0);
  assert_non_null(strstr(err.message, "checksum"));
  m.p[m.n - 40] ^= 1;
  /* A changed version without its checksum is damage... */
  m.p[8] = 2;
  assert_int_equal(weft_snapshot_load_memory(w, m.p, m.n, &err), WEFT_EFORMAT);
  assert_non_null(strstr(err.message, "header checksum"));
  /* ...with it, a newer format: its own error. */
  uint64_t h = XXH3_64bits(m.p, 24);
  memcpy(m.p + 24, &h, 8);
  assert_int_equal(weft_snapshot_load_memory(w, m.p, m.n, &err), WEFT_EVERSION);
  assert_non_null(strstr(err.message, "format version 2"));
  free(m.p);
  weft_world_destroy(src);
  weft_world_destroy(w);
}

/* ---- migration ------------------------------------------------------------
 */

typedef struct v1_t {
  float x, y, z;
  uint32_t id;
} v1_t;

/* v2: y dropped, z moved first, w added, id kept. */
typedef struct v2_t {
  float z;
  uint32_t id;
  double w;
  float x;
  uint32_t pad_;
} v2_t;

static weft_component_t reg_v1(weft_world_t *w, uint32_t flags) {
  static const weft_field_desc_t f[] = {
      {"x", offsetof(v1_t, x), 4, WEFT_FIELD_F32},
      {"y", offsetof(v1_t, y), 4, WEFT_FIELD_F32},
      {"z", offsetof(v1_t, z), 4, WEFT_FIELD_F32},
      {"id", offsetof(v1_t, id), 4, WEFT_FIELD_U32}};
  return reg(w, "body", sizeof(v1_t), 4, f, 4, flags);
}

static weft_component_t reg_v2(weft_world_t *w, uint32_t flags) {
  static const weft_field_desc_t f[] = {
      {"z", offsetof(v2_t, z), 4, WEFT_FIELD_F32},
      {"id", offsetof(v2_t, id), 4, WEFT_FIELD_U32},
      {"w", offsetof(v2_t, w), 8, WEFT_FIELD_F64},
      {"x", offsetof(v2_t, x), 4, WEFT_FIELD_F32}};
  return reg(w, "body", sizeof(v2_t), 8, f, 4, flags);
}

static void test_snapshot_migrates_fields_by_name(void **state) {
  (void)state;
  for (uint32_t mode = 0; mode < 4; mode++) {
    uint32_t f1 = mode & 1 ? WEFT_COMPONENT_SOA : 0;
    uint32_t f2 = mode & 2 ? WEFT_COMPONENT_SOA : 0;
    weft_world_t *a = world_new(5);
    weft_component_t b1 = reg_v1(a, f1);
    weft_entity_t es[700];
    for (uint32_t i = 0; i < 700; i++) {
      weft_component_t c[2] = {b1, 0};
      assert_int_equal(weft_spawn_with(a, c, NULL, &es[i]), WEFT_OK);
      v1_t v = {(float)i, -1.0f, (float)i * 2, i + 1};
      assert_int_equal(weft_set(a, es[i], b1, &v), WEFT_OK);
    }
    mem_t m = save(a);
    weft_world_t *b = world_new(5);
    weft_component_t b2 = reg_v2(b, f2);
    weft_snapshot_error_t err;
    int rc = weft_snapshot_load_memory(b, m.p, m.n, &err);
    if (rc)
      fail_msg("mode %u: %s", mode, err.message);
    assert_int_equal(weft_world_count(b), 700);
    for (uint32_t i = 0; i < 700; i++) {
      v2_t v;
      assert_int_equal(weft_read(b, es[i], b2, &v), WEFT_OK);
      assert_true(v.x == (float)i && v.z == (float)i * 2);
      assert_int_equal(v.id, i + 1);
      assert_true(v.w == 0.0);
    }
    free(m.p);
    weft_world_destroy(a);
    weft_world_destroy(b);
  }
}

/* Cases a migration refuses, each with its error; the world is kept. */
static void test_snapshot_refuses_incompatible_layouts(void **state) {
  (void)state;
  weft_world_t *a = world_new(5);
  weft_component_t b1 = reg_v1(a, 0);
  weft_component_t c[2] = {b1, 0};
  weft_entity_t e;
  assert_int_equal(weft_spawn_with(a, c, NULL, &e), WEFT_OK);
  mem_t m = save(a);
  static const weft_field_desc_t wide[] = {{"x", 0, 8, WEFT_FIELD_F64}};
  static const weft_field_desc_t retyped[] = {{"id", 0, 4, WEFT_FIELD_I32}};
  static const struct {
    uint32_t size, align, nf, flags;
    const weft_field_desc_t *f;
    int rc;
    const char *says;
  } cases[] = {
      {8, 8, 1, 0, wide, WEFT_EMIGRATE, "field 'x': 4 bytes"},
      {4, 4, 1, 0, retyped, WEFT_EMIGRATE, "field 'id': type"},
      {20, 4, 0, 0, NULL, WEFT_EMIGRATE, "no fields"},
      {0, 0, 0, 0, NULL, WEFT_EMIGRATE, "a tag"},
      {0, 0, 0, 0, NULL, WEFT_ENOCOMP, "not registered"},
  };
  for (uint32_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    weft_world_t *b = world_new(5);
    reg(b, cases[i].rc == WEFT_ENOCOMP ? "other" : "body", cases[i].size,
        cases[i].align, cases[i].f, cases[i].nf, cases[i].flags);
    weft_entity_t x = wt_spawn(b);
    (void)x;
    uint64_t before = weft_world_digest(b);
    weft_snapshot_error_t err;
    assert_int_equal(weft_snapshot_load_memory(b, m.p, m.n, &err), cases[i].rc);
    if (!strstr(err.message, cases[i].says))
      fail_msg("case %u: \"%s\" lacks \"%s\"", i, err.message, cases[i].says);
    assert_int_equal(weft_world_digest(b), before);
    weft_world_destroy(b);
  }
  /* Another chunk size is refused too. */
  weft_world_t *b = wt_world_sized(0, 8192);
  reg_v1(b, 0);
  assert_int_equal(weft_snapshot_load_memory(b, m.p, m.n, NULL), WEFT_ELIMIT);
  weft_world_destroy(b);
  free(m.p);
  weft_world_destroy(a);
}

/* Transient components keep their membership and load zero-filled. */
static void test_snapshot_transient_loads_zeroed(void **state) {
  (void)state;
  weft_world_t *a = world_new(5);
  ids_t ia = register_all(a);
  weft_component_t c[3] = {ia.pos, ia.cache, 0};
  weft_entity_t e;
  assert_int_equal(weft_spawn_with(a, c, NULL, &e), WEFT_OK);
  uint64_t v = 12345;
  assert_int_equal(weft_set(a, e, ia.cache, &v), WEFT_OK);
  mem_t m = save(a);
  weft_world_t *b = world_new(5);
  ids_t ib = register_all(b);
  assert_int_equal(weft_snapshot_load_memory(b, m.p, m.n, NULL), WEFT_OK);
  assert_true(weft_has(b, e, ib.cache));
  uint64_t got = 1;
  assert_int_equal(weft_read(b, e, ib.cache, &got), WEFT_OK);
  assert_int_equal(got, 0);
  /* With a requirement that gives it a default, it loads with that. */
  weft_world_t *wc = world_new(5);
  ids_t ic = register_all(wc);
  uint64_t def = 77;
  assert_int_equal(weft_component_require(wc, ic.pos, ic.cache, &def), WEFT_OK);
  assert_int_equal(weft_snapshot_load_memory(wc, m.p, m.n, NULL), WEFT_OK);
  assert_int_equal(weft_read(wc, e, ic.cache, &got), WEFT_OK);
  assert_int_equal(got, 77);
  weft_world_destroy(wc);
  free(m.p);
  weft_world_destroy(a);
  weft_world_destroy(b);
}

/* ---- sections, resources, random streams, relations -------------------- */

typedef struct hook_t {
  uint64_t value;
  int loads;
} hook_t;

static int hook_save(weft_world_t *w, void *user, weft_snapshot_out_t *out) {
  (void)w;
  return weft_snapshot_put(out, &((hook_t *)user)->value, 8);
}

static int hook_check(const weft_world_t *w, void *user, const void *data,
                      size_t n) {
  (void)w;
  (void)user;
  uint64_t v;
  if (n != 8)
    return WEFT_EFORMAT;
  memcpy(&v, data, 8);
  return v == 666 ? WEFT_EINVAL : 0; /* a value the program refuses */
}

static int hook_load(weft_world_t *w, void *user, const void *data, size_t n) {
  (void)w;
  (void)n;
  hook_t *h = user;
  memcpy(&h->value, data, 8);
  h->loads++;
  return 0;
}

static void add_hook(weft_world_t *w, hook_t *h) {
  weft_snapshot_section_desc_t d = {.name = "test.hook",
                                    .save = hook_save,
                                    .check = hook_check,
                                    .load = hook_load,
                                    .user = h};
  assert_int_equal(weft_snapshot_section_register(w, &d), WEFT_OK);
}

static void test_snapshot_state_and_user_sections(void **state) {
  (void)state;
  weft_world_t *a = world_new(5);
  hook_t ha = {42, 0};
  add_hook(a, &ha);
  weft_resource_t ra;
  uint64_t init = 7;
  assert_int_equal(weft_resource_register(a, "res", 8, 0, &init, &ra), 0);
  weft_rng_t *rng;
  weft_random_seed(a, 1234);
  assert_int_equal(weft_random_stream(a, "s1", &rng), WEFT_OK);
  weft_rng_next(rng);
  weft_relation_desc_t rd = {
      .name = "likes", .size = 4, .flags = WEFT_RELATION_SPARSE};
  weft_component_t likes;
  assert_int_equal(weft_relation_register(a, &rd, &likes), WEFT_OK);
  weft_entity_t x = wt_spawn(a), y = wt_spawn(a);
  uint32_t pay = 99;
  assert_int_equal(weft_relation_add(a, x, likes, y, &pay), WEFT_OK);
  *(uint64_t *)weft_resource_get(a, ra) = 8;
  mem_t m = save(a);

  weft_world_t *b = world_new(5);
  hook_t hb = {0, 0};
  add_hook(b, &hb);
  weft_resource_t rb;
  assert_int_equal(weft_resource_register(b, "res", 8, 0, NULL, &rb), 0);
  weft_component_t likes_b;
  assert_int_equal(weft_relation_register(b, &rd, &likes_b), WEFT_OK);
  load_ok(b, &m);
  assert_int_equal(hb.value, 42);
  assert_int_equal(hb.loads, 1);
  assert_int_equal(*(uint64_t *)weft_resource_get(b, rb), 8);
  assert_true(weft_relation_has(b, x, likes_b, y));
  const uint32_t *pb = weft_relation_get(b, x, likes_b, y);
  assert_non_null(pb);
  assert_int_equal(*pb, 99);
  assert_int_equal(weft_random_world_seed(b), 1234);
  weft_rng_t *rb_rng;
  assert_int_equal(weft_random_stream(b, "s1", &rb_rng), WEFT_OK);
  assert_int_equal(weft_rng_next(rb_rng), weft_rng_next(rng));
  assert_int_equal(weft_world_digest(a), weft_world_digest(b));

  /* A section's check refuses its bytes: nothing is loaded. */
  ha.value = 666;
  free(m.p);
  m = save(a);
  hb.loads = 0;
  uint64_t before = weft_world_digest(b);
  weft_snapshot_error_t err;
  assert_int_equal(weft_snapshot_load_memory(b, m.p, m.n, &err), WEFT_EINVAL);
  assert_non_null(strstr(err.message, "test.hook"));
  assert_int_equal(hb.loads, 0);
  assert_int_equal(weft_world_digest(b), before);
  free(m.p);
  weft_world_destroy(a);
  weft_world_destroy(b);
}

/* ---- files ----------------------------------------------------------------
 */

static void test_snapshot_files_are_replaced_atomically(void **state) {
  (void)state;
  char path[] = "/tmp/weft_snap_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  weft_world_t *a = world_new(5);
  ids_t ia = register_all(a);
  churn(a, &ia, 6, 500);
  assert_int_equal(weft_snapshot_save_file(a, path, NULL), WEFT_OK);
  zero_cache(a, &ia);
  uint64_t saved = weft_world_digest(a);
  /* A later save that dies half-way leaves its temporary file behind, not
   * a torn snapshot at the path. */
  char tmp[64];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  assert_non_null(f);
  fputs("WEFTSNP half a snapshot", f);
  fclose(f);
  weft_world_t *b = world_new(5);
  register_all(b);
  assert_int_equal(weft_snapshot_load_file(b, path, NULL), WEFT_OK);
  assert_int_equal(weft_world_digest(b), saved);
  assert_int_equal(weft_snapshot_load_file(b, tmp, NULL), WEFT_EFORMAT);
  assert_int_equal(weft_world_digest(b), saved);
  assert_int_equal(weft_snapshot_load_file(b, "/nonexistent/x", NULL),
                   WEFT_EIO);
  /* A failing sink reports its error. */
  mem_t m = {.fail_after = 100};
  weft_snapshot_writer_t wr = {mem_write, &m};
  assert_int_equal(weft_snapshot_save(a, &wr, NULL), WEFT_EIO);
  free(m.p);
  unlink(path);
  unlink(tmp);
  weft_world_destroy(a);
  weft_world_destroy(b);
}

/* Loads bytes into w and checks the outcome: an error leaves the digest
 * as it was, and says so in err. */
static int load_checked(weft_world_t *w, const uint8_t *p, size_t n,
                        const char *what) {
  uint64_t before = weft_world_digest(w);
  weft_snapshot_error_t err;
  int rc = weft_snapshot_load_memory(w, p, n, &err);
  if (rc > 0 || (rc < 0 && err.code != rc))
    fail_msg("%s: returned %d (error code %d)", what, rc, err.code);
  if (rc < 0 && weft_world_digest(w) != before)
    fail_msg("%s: refused (%s) but the world changed", what, err.message);
  return rc;
}

/* The seed corpus: a small snapshot of each scenario as weft-sim writes
 * it; every truncation and single-bit flip is refused, the world kept. */
static void test_snapshot_seed_corpus_damage_is_refused(void **state) {
  (void)state;
  for (uint32_t kind = SIM_ARENA; kind <= SIM_PARTICLES; kind++) {
    wt_sim_t a, b;
    wt_sim_open(&a, (sim_kind_t)kind, 0, 64, 1);
    for (int t = 0; t < 3; t++)
      wt_sim_tick(&a);
    mem_t m = save(a.w);
    wt_sim_open(&b, (sim_kind_t)kind, 0, 64, 2);
    const uint64_t before = weft_world_digest(b.w);
    uint8_t *copy = malloc(m.n);
    for (size_t n = 0; n < m.n; n++)
      assert_true(load_checked(b.w, m.p, n, "truncation") < 0);
    for (size_t bit = 0; bit < m.n * 8; bit++) {
      memcpy(copy, m.p, m.n);
      copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
      if (load_checked(b.w, copy, m.n, "bit flip") >= 0)
        fail_msg("%s: flip of bit %zu accepted",
                 sim_kind_name((sim_kind_t)kind), bit);
    }
    assert_int_equal(weft_world_digest(b.w), before);
    assert_int_equal(weft_snapshot_load_memory(b.w, m.p, m.n, NULL), WEFT_OK);
    assert_int_equal(weft_world_digest(b.w), weft_world_digest(a.w));
    free(copy);
    free(m.p);
    wt_sim_close(&a);
    wt_sim_close(&b);
  }
}

static int count_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  (*(int *)ctx->user)++;
  return 0;
}

/* A Startup system that ran before the save does not run again after the
 * load; the fixed-step clock goes on from the saved tick. */
static void test_snapshot_pipeline_clock_and_startup(void **state) {
  (void)state;
  int ran[2] = {0, 0};
  weft_world_t *w[2];
  for (int k = 0; k < 2; k++) {
    w[k] = world_new(5);
    weft_system_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = "boot";
    d.phase = WEFT_PHASE_STARTUP;
    d.run = count_run;
    d.user = &ran[k];
    weft_system_t id = 0;
    assert_int_equal(weft_system_register(w[k], &d, &id), WEFT_OK);
  }
  for (int t = 0; t < 5; t++)
    assert_int_equal(weft_world_progress(w[0], 1.0 / 60.0), WEFT_OK);
  assert_int_equal(ran[0], 1);
  mem_t m = save(w[0]);
  assert_int_equal(weft_snapshot_load_memory(w[1], m.p, m.n, NULL), WEFT_OK);
  weft_pipeline_state_t s0, s1;
  weft_pipeline_state(w[0], &s0);
  weft_pipeline_state(w[1], &s1);
  assert_int_equal(s0.tick, s1.tick);
  assert_int_equal(s0.frames, s1.frames);
  assert_true(s0.accumulator == s1.accumulator);
  for (int t = 0; t < 3; t++) {
    assert_int_equal(weft_world_progress(w[0], 1.0 / 60.0), WEFT_OK);
    assert_int_equal(weft_world_progress(w[1], 1.0 / 60.0), WEFT_OK);
  }
  assert_int_equal(ran[0], 1);
  assert_int_equal(ran[1], 0);
  weft_pipeline_state(w[0], &s0);
  weft_pipeline_state(w[1], &s1);
  assert_int_equal(s1.tick, s0.tick);
  assert_true(s1.tick >= 5);
  free(m.p);
  weft_world_destroy(w[0]);
  weft_world_destroy(w[1]);
}

/* Components are found by name: a program that registers them in another
 * order (other ids, other archetype masks) loads the same values. */
static void test_snapshot_matches_components_by_name(void **state) {
  (void)state;
  weft_world_t *a = world_new(5);
  ids_t ia = register_all(a);
  churn(a, &ia, 9, 1500);
  mem_t m = save(a);
  weft_world_t *b = world_new(5);
  weft_component_t other = reg(b, "unrelated", 16, 8, NULL, 0, 0);
  (void)other;
  ids_t ib;
  /* Reverse order. */
  ib.cache = reg(b, "cache", 8, 8, NULL, 0, WEFT_COMPONENT_TRANSIENT);
  ib.tag = reg(b, "tag", 0, 0, NULL, 0, 0);
  ib.hp = reg(b, "hp", 4, 4, NULL, 0, WEFT_COMPONENT_TRACK_DIRTY);
  static const weft_field_desc_t lf[] = {
      {"target", offsetof(link_t, target), 8, WEFT_FIELD_ENTITY},
      {"n", offsetof(link_t, n), 4, WEFT_FIELD_U32}};
  ib.link = reg(b, "link", sizeof(link_t), 8, lf, 2, 0);
  static const weft_field_desc_t vf[] = {
      {"dx", offsetof(vel_t, dx), 4, WEFT_FIELD_F32},
      {"dy", offsetof(vel_t, dy), 4, WEFT_FIELD_F32}};
  ib.vel = reg(b, "vel", sizeof(vel_t), 4, vf, 2, WEFT_COMPONENT_SOA);
  static const weft_field_desc_t pf[] = {
      {"x", offsetof(pos_t, x), 4, WEFT_FIELD_F32},
      {"y", offsetof(pos_t, y), 4, WEFT_FIELD_F32},
      {"z", offsetof(pos_t, z), 4, WEFT_FIELD_F32}};
  ib.pos = reg(b, "pos", sizeof(pos_t), 4, pf, 3, 0);
  weft_snapshot_error_t err;
  if (weft_snapshot_load_memory(b, m.p, m.n, &err))
    fail_msg("load: %s", err.message);
  assert_int_equal(weft_world_count(a), weft_world_count(b));
  /* Every live handle of a has the same components and values in b. */
  weft_world_stats_t st = wt_stats(a);
  uint32_t checked = 0;
  for (uint32_t slot = 0; slot < st.slots_used; slot++)
    for (uint32_t gen = 1; gen < 64; gen++) {
      weft_entity_t e = wt_handle(slot, gen, 5);
      if (!weft_is_alive(a, e))
        continue;
      assert_true(weft_is_alive(b, e));
      const weft_component_t ca[5] = {ia.pos, ia.vel, ia.link, ia.hp, ia.tag};
      const weft_component_t cb[5] = {ib.pos, ib.vel, ib.link, ib.hp, ib.tag};
      const uint32_t size[5] = {sizeof(pos_t), sizeof(vel_t), sizeof(link_t), 4,
                                0};
      for (int k = 0; k < 5; k++) {
        assert_int_equal(weft_has(a, e, ca[k]), weft_has(b, e, cb[k]));
        if (!size[k] || !weft_has(a, e, ca[k]))
          continue;
        uint8_t va[16] = {0}, vb[16] = {0};
        assert_int_equal(weft_read(a, e, ca[k], va), WEFT_OK);
        assert_int_equal(weft_read(b, e, cb[k], vb), WEFT_OK);
        assert_memory_equal(va, vb, size[k]);
      }
      checked++;
    }
  assert_int_equal(checked, weft_world_count(a));
  free(m.p);
  weft_world_destroy(a);
  weft_world_destroy(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_snapshot_round_trip_keeps_digest_and_handles),
      cmocka_unit_test(test_snapshot_scenarios_round_trip_and_run_on),
      cmocka_unit_test(test_snapshot_load_replaces_a_used_world),
      cmocka_unit_test(test_snapshot_truncations_and_bit_flips_are_refused),
      cmocka_unit_test(test_snapshot_error_says_where),
      cmocka_unit_test(test_snapshot_migrates_fields_by_name),
      cmocka_unit_test(test_snapshot_refuses_incompatible_layouts),
      cmocka_unit_test(test_snapshot_transient_loads_zeroed),
      cmocka_unit_test(test_snapshot_state_and_user_sections),
      cmocka_unit_test(test_snapshot_files_are_replaced_atomically),
      cmocka_unit_test(test_snapshot_seed_corpus_damage_is_refused),
      cmocka_unit_test(test_snapshot_pipeline_clock_and_startup),
      cmocka_unit_test(test_snapshot_matches_components_by_name),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
