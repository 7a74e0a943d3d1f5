/* SPDX-License-Identifier: MIT */
/* Unit tests for entity handles and per-entity operations. */
#include "support/weft_test.h"

#include <stdlib.h>

/* --- component types and fixture ----------------------------------------- */

typedef struct pos_t {
  float x, y, z;
} pos_t;

typedef struct vel_t {
  double dx;
  int32_t tick;
  int32_t pad;
} vel_t;

/* Stored field-level SoA. */
typedef struct soa_t {
  float a;
  uint32_t b;
  uint64_t c;
} soa_t;

typedef struct fixture_t {
  weft_world_t *w;
  weft_component_t pos; /* AoS with fields x, y, z */
  weft_component_t vel; /* AoS without fields */
  weft_component_t soa; /* SoA with fields a, b, c */
  weft_component_t tag; /* size 0 */
} fixture_t;

static void register_components(fixture_t *f) {
  static const weft_field_desc_t pos_fields[] = {
      WEFT_FIELD(pos_t, x), WEFT_FIELD(pos_t, y), WEFT_FIELD(pos_t, z)};
  static const weft_field_desc_t soa_fields[] = {
      WEFT_FIELD(soa_t, a), WEFT_FIELD(soa_t, b), WEFT_FIELD(soa_t, c)};
  weft_component_desc_t d = WEFT_COMPONENT_DESC(pos_t);
  d.fields = pos_fields;
  d.field_count = 3;
  assert_int_equal(weft_component_register(f->w, &d, &f->pos), WEFT_OK);
  d = WEFT_COMPONENT_DESC(vel_t);
  assert_int_equal(weft_component_register(f->w, &d, &f->vel), WEFT_OK);
  d = WEFT_COMPONENT_DESC(soa_t);
  d.fields = soa_fields;
  d.field_count = 3;
  d.flags = WEFT_COMPONENT_SOA;
  assert_int_equal(weft_component_register(f->w, &d, &f->soa), WEFT_OK);
  f->tag = wt_register_tag(f->w, "tag");
}

static fixture_t fixture_new(const weft_world_config_t *cfg) {
  fixture_t f;
  memset(&f, 0, sizeof f);
  f.w = wt_world_new(cfg);
  register_components(&f);
  return f;
}

static pos_t pos_for(uint32_t k) {
  pos_t p = {(float)k + 0.25f, (float)k * 2.0f + 1.0f, -(float)k};
  return p;
}

static vel_t vel_for(uint32_t k) {
  vel_t v = {(double)k * 0.5 + 3.0, (int32_t)(k * 3u + 1u), 0};
  return v;
}

static soa_t soa_for(uint32_t k) {
  soa_t s = {(float)k * 4.0f + 0.5f, k ^ 0xa5a5a5a5u,
             ((uint64_t)k << 33) | 0x1234u};
  return s;
}

static bool pos_eq(const pos_t *a, const pos_t *b) {
  return a->x == b->x && a->y == b->y && a->z == b->z;
}

static bool vel_eq(const vel_t *a, const vel_t *b) {
  return a->dx == b->dx && a->tick == b->tick;
}

static bool soa_eq(const soa_t *a, const soa_t *b) {
  return a->a == b->a && a->b == b->b && a->c == b->c;
}

static void expect_pos(weft_world_t *w, weft_entity_t e, weft_component_t c,
                       const pos_t *want) {
  const pos_t *p = weft_get(w, e, c);
  assert_non_null(p);
  assert_true(pos_eq(p, want));
  pos_t r;
  memset(&r, 0xcc, sizeof r);
  assert_int_equal(weft_read(w, e, c, &r), WEFT_OK);
  assert_true(pos_eq(&r, want));
}

static void expect_vel(weft_world_t *w, weft_entity_t e, weft_component_t c,
                       const vel_t *want) {
  const vel_t *p = weft_get(w, e, c);
  assert_non_null(p);
  assert_true(vel_eq(p, want));
}

static void expect_soa(weft_world_t *w, weft_entity_t e, weft_component_t c,
                       const soa_t *want) {
  soa_t r;
  memset(&r, 0xcc, sizeof r);
  assert_int_equal(weft_read(w, e, c, &r), WEFT_OK);
  assert_true(soa_eq(&r, want));
}

/* Runs one call that must be rejected for a stale handle and checks that
 * the world's stale counter moved by exactly one (mutating calls) or at
 * most one (reader calls on a const world). */
#define STALE_EXACT(w, call)                                                   \
  do {                                                                         \
    uint64_t stale0_ = wt_stats(w).stale;                                      \
    call;                                                                      \
    assert_int_equal(wt_stats(w).stale, stale0_ + 1);                          \
  } while (0)

#define STALE_ATMOST(w, call)                                                  \
  do {                                                                         \
    uint64_t stale0_ = wt_stats(w).stale;                                      \
    call;                                                                      \
    assert_true(wt_stats(w).stale - stale0_ <= 1);                             \
  } while (0)

/* --- handles ------------------------------------------------------------- */

static void test_entity_null_handle_never_live(void **state) {
  (void)state;
  fixture_t f = fixture_new(NULL);
  assert_false(weft_is_alive(f.w, WEFT_ENTITY_NULL));
  assert_int_equal(weft_despawn(f.w, WEFT_ENTITY_NULL), WEFT_ESTALE);
  for (int i = 0; i < 100; i++) {
    pos_t p = pos_for((uint32_t)i);
    const weft_component_t comps[] = {f.pos, 0};
    const void *vals[] = {&p};
    weft_entity_t e = wt_spawn_with(f.w, comps, vals);
    assert_true(e != WEFT_ENTITY_NULL);
    assert_true(weft_entity_generation(e) >= 1);
    assert_true(weft_entity_tag(e) >= 1);
  }
  assert_false(weft_is_alive(f.w, WEFT_ENTITY_NULL));
  assert_false(weft_has(f.w, WEFT_ENTITY_NULL, f.pos));
  assert_null(weft_get(f.w, WEFT_ENTITY_NULL, f.pos));
  assert_int_equal(weft_add(f.w, WEFT_ENTITY_NULL, f.vel, NULL), WEFT_ESTALE);
  assert_int_equal(weft_despawn(f.w, WEFT_ENTITY_NULL), WEFT_ESTALE);
  assert_int_equal(weft_world_count(f.w), 100);
  weft_world_destroy(f.w);
}

static void test_entity_handle_decode(void **state) {
  (void)state;
  wt_rng_t rng = wt_rng(1);
  for (int i = 0; i < 1000; i++) {
    uint32_t index = (uint32_t)wt_next(&rng);
    uint32_t gen = (uint32_t)wt_next(&rng) & 0x00ffffffu;
    uint32_t tag = (uint32_t)wt_next(&rng) & 0xffu;
    weft_entity_t e = wt_handle(index, gen, tag);
    assert_int_equal(weft_entity_index(e), index);
    assert_int_equal(weft_entity_generation(e), gen);
    assert_int_equal(weft_entity_tag(e), tag);
  }
  /* Decoding a spawned handle gives this world's tag and a fresh slot's
   * first generation (1). */
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.world_tag = 200;
  weft_world_t *w = wt_world_new(&cfg);
  weft_entity_t e = wt_spawn(w);
  assert_int_equal(weft_entity_tag(e), 200);
  assert_int_equal(weft_entity_generation(e), 1);
  assert_true(weft_entity_index(e) < wt_stats(w).slots_used);
  weft_world_destroy(w);
}

static void test_entity_spawned_handles_unique(void **state) {
  (void)state;
  const uint32_t n = 2000;
  weft_world_t *w = wt_world_new(NULL);
  weft_entity_t *es = calloc(n, sizeof *es);
  assert_non_null(es);
  uint8_t tag = weft_world_tag(w);
  for (uint32_t i = 0; i < n; i++) {
    es[i] = wt_spawn(w);
    assert_int_equal(weft_entity_tag(es[i]), tag);
  }
  assert_int_equal(weft_world_count(w), n);
  /* Indices are distinct among live entities (sort-free check with a map). */
  uint32_t used = wt_stats(w).slots_used;
  assert_true(used >= n);
  uint8_t *seen = calloc(used, 1);
  assert_non_null(seen);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t idx = weft_entity_index(es[i]);
    assert_true(idx < used);
    assert_int_equal(seen[idx], 0);
    seen[idx] = 1;
  }
  free(seen);
  free(es);
  weft_world_destroy(w);
}

/* The stale handle of a despawned entity whose slot now holds a new entity
 * is rejected by every function, and nothing of the new occupant leaks. */
static void test_entity_stale_handle_rejected(void **state) {
  (void)state;
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.capacity = 1; /* forces the slot to be reused */
  fixture_t f = fixture_new(&cfg);
  weft_world_t *w = f.w;
  const weft_component_t comps[] = {f.pos, f.soa, f.tag, 0};
  pos_t p1 = pos_for(1), p2 = pos_for(2), p3 = pos_for(3);
  soa_t s1 = soa_for(1), s2 = soa_for(2), s3 = soa_for(3);
  const void *v1[] = {&p1, &s1, NULL};
  const void *v2[] = {&p2, &s2, NULL};
  weft_entity_t old = wt_spawn_with(w, comps, v1);
  assert_int_equal(weft_despawn(w, old), WEFT_OK);
  weft_entity_t cur = wt_spawn_with(w, comps, v2);
  assert_int_equal(weft_entity_index(cur), weft_entity_index(old));
  assert_true(weft_entity_generation(cur) > weft_entity_generation(old));
  assert_true(cur != old);

  /* Mutating calls: exactly one stale rejection each. */
  STALE_EXACT(w, assert_int_equal(weft_despawn(w, old), WEFT_ESTALE));
  STALE_EXACT(w, assert_int_equal(weft_add(w, old, f.vel, NULL), WEFT_ESTALE));
  STALE_EXACT(w, assert_int_equal(weft_add(w, old, f.pos, &p3), WEFT_ESTALE));
  STALE_EXACT(w, assert_int_equal(weft_remove(w, old, f.pos), WEFT_ESTALE));
  STALE_EXACT(w, assert_int_equal(weft_remove(w, old, f.tag), WEFT_ESTALE));
  STALE_EXACT(w, assert_int_equal(weft_set(w, old, f.pos, &p3), WEFT_ESTALE));
  STALE_EXACT(w, assert_int_equal(weft_set(w, old, f.soa, &s3), WEFT_ESTALE));
  vel_t v3 = vel_for(3);
  STALE_EXACT(w, assert_int_equal(weft_set(w, old, f.vel, &v3), WEFT_ESTALE));
  STALE_EXACT(w, assert_null(weft_get_mut(w, old, f.pos)));
  STALE_EXACT(w, assert_null(weft_get_field(w, old, f.pos, 0)));
  STALE_EXACT(w, assert_null(weft_get_field(w, old, f.soa, 1)));
  STALE_EXACT(w, assert_int_equal(weft_disable(w, old, f.pos), WEFT_ESTALE));
  STALE_EXACT(w, assert_int_equal(weft_enable(w, old, f.pos), WEFT_ESTALE));

  /* Reader calls. */
  STALE_ATMOST(w, assert_false(weft_is_alive(w, old)));
  STALE_ATMOST(w, assert_null(weft_get(w, old, f.pos)));
  STALE_ATMOST(w, assert_false(weft_has(w, old, f.pos)));
  STALE_ATMOST(w, assert_false(weft_has(w, old, f.tag)));
  STALE_ATMOST(w, assert_false(weft_is_enabled(w, old, f.pos)));
  pos_t rp;
  memset(&rp, 0x5a, sizeof rp);
  pos_t sentinel;
  memset(&sentinel, 0x5a, sizeof sentinel);
  STALE_ATMOST(w, assert_int_equal(weft_read(w, old, f.pos, &rp), WEFT_ESTALE));
  assert_memory_equal(&rp, &sentinel, sizeof rp);
  soa_t rs;
  memset(&rs, 0x5a, sizeof rs);
  soa_t ssent;
  memset(&ssent, 0x5a, sizeof ssent);
  STALE_ATMOST(w, assert_int_equal(weft_read(w, old, f.soa, &rs), WEFT_ESTALE));
  assert_memory_equal(&rs, &ssent, sizeof rs);
  const void *out = &sentinel;
  STALE_ATMOST(
      w, assert_int_equal(weft_try_get(w, old, f.pos, &out), WEFT_ESTALE));
  assert_true(out == &sentinel || out == NULL);

  /* The current occupant is untouched by all of the above. */
  assert_true(weft_is_alive(w, cur));
  expect_pos(w, cur, f.pos, &p2);
  expect_soa(w, cur, f.soa, &s2);
  assert_true(weft_has(w, cur, f.tag));
  assert_false(weft_has(w, cur, f.vel));
  assert_true(weft_is_enabled(w, cur, f.pos));
  assert_int_equal(weft_world_count(w), 1);
  wt_check_slot_invariant(w);
  weft_world_destroy(w);
}

static void test_entity_forged_handles_rejected(void **state) {
  (void)state;
  enum { LIVE = 64 };
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.world_tag = 9;
  fixture_t f = fixture_new(&cfg);
  weft_world_t *w = f.w;
  weft_entity_t live[LIVE];
  for (uint32_t i = 0; i < LIVE; i++) {
    pos_t p = pos_for(i);
    const weft_component_t comps[] = {f.pos, 0};
    const void *vals[] = {&p};
    live[i] = wt_spawn_with(w, comps, vals);
  }
  /* Churn a few slots so that some generations are above 1. */
  for (uint32_t i = 0; i < LIVE; i += 8) {
    assert_int_equal(weft_despawn(w, live[i]), WEFT_OK);
    pos_t p = pos_for(i);
    const weft_component_t comps[] = {f.pos, 0};
    const void *vals[] = {&p};
    live[i] = wt_spawn_with(w, comps, vals);
  }
  uint32_t hwm = wt_stats(w).slots_used;

  enum { MAXF = 3000 };
  weft_entity_t *forged = calloc(MAXF, sizeof *forged);
  assert_non_null(forged);
  uint32_t nf = 0;
  wt_rng_t rng = wt_rng(99);
  for (int i = 0; i < 2000; i++) {
    forged[nf++] = (weft_entity_t)wt_next(&rng);
  }
  for (uint32_t k = 0; k < 50; k++) {
    forged[nf++] = wt_handle(hwm + k, 1, 9);            /* beyond HWM */
    forged[nf++] = wt_handle(hwm + k * 1000003u, 1, 9); /* far beyond */
  }
  forged[nf++] = wt_handle(0xffffffffu, 1, 9);
  forged[nf++] = wt_handle(WEFT_ENTITY_MAX, 1, 9);
  for (uint32_t i = 0; i < LIVE; i++) {
    uint32_t idx = weft_entity_index(live[i]);
    uint32_t gen = weft_entity_generation(live[i]);
    forged[nf++] = wt_handle(idx, 0, 9);                   /* generation 0 */
    forged[nf++] = wt_handle(idx, gen + 1, 9);             /* future gen */
    forged[nf++] = wt_handle(idx, WEFT_GENERATION_MAX, 9); /* far future */
    forged[nf++] = wt_handle(idx, gen, 10);                /* wrong tag */
    forged[nf++] = wt_handle(idx, gen, 0);                 /* no tag */
    forged[nf++] = wt_handle(idx, gen, 255);               /* wrong tag */
  }
  assert_true(nf <= MAXF);
  /* Drop any forged value that happens to equal a live handle. */
  uint32_t kept = 0;
  for (uint32_t i = 0; i < nf; i++) {
    bool is_live = false;
    for (uint32_t j = 0; j < LIVE; j++) {
      is_live |= forged[i] == live[j];
    }
    if (!is_live) {
      forged[kept++] = forged[i];
    }
  }
  nf = kept;
  assert_true(nf > 2000);

  for (uint32_t i = 0; i < nf; i++) {
    weft_entity_t e = forged[i];
    assert_false(weft_is_alive(w, e));
    assert_null(weft_get(w, e, f.pos));
    assert_false(weft_has(w, e, f.pos));
    assert_false(weft_is_enabled(w, e, f.pos));
    pos_t r;
    assert_int_equal(weft_read(w, e, f.pos, &r), WEFT_ESTALE);
  }
  uint64_t stale0 = wt_stats(w).stale;
  pos_t evil = {-1.0f, -1.0f, -1.0f};
  for (uint32_t i = 0; i < nf; i++) {
    weft_entity_t e = forged[i];
    assert_int_equal(weft_despawn(w, e), WEFT_ESTALE);
    assert_int_equal(weft_set(w, e, f.pos, &evil), WEFT_ESTALE);
    assert_int_equal(weft_add(w, e, f.vel, NULL), WEFT_ESTALE);
    assert_int_equal(weft_remove(w, e, f.pos), WEFT_ESTALE);
    assert_null(weft_get_mut(w, e, f.pos));
  }
  assert_int_equal(wt_stats(w).stale, stale0 + 5ull * nf);

  assert_int_equal(weft_world_count(w), LIVE);
  for (uint32_t i = 0; i < LIVE; i++) {
    pos_t p = pos_for(i);
    expect_pos(w, live[i], f.pos, &p);
    assert_false(weft_has(w, live[i], f.vel));
  }
  free(forged);
  weft_world_destroy(w);
}

static void test_entity_foreign_world_handle_rejected(void **state) {
  (void)state;
  enum { N = 16 };
  weft_world_config_t c1, c2;
  memset(&c1, 0, sizeof c1);
  memset(&c2, 0, sizeof c2);
  c1.world_tag = 1;
  c2.world_tag = 2;
  fixture_t f1 = fixture_new(&c1);
  fixture_t f2 = fixture_new(&c2);
  assert_int_equal(f1.pos, f2.pos); /* same registration order */
  weft_entity_t e1[N], e2[N];
  for (uint32_t i = 0; i < N; i++) {
    pos_t p1 = pos_for(i), p2 = pos_for(100 + i);
    const weft_component_t comps[] = {f1.pos, f1.tag, 0};
    const void *v1[] = {&p1, NULL};
    const void *v2[] = {&p2, NULL};
    e1[i] = wt_spawn_with(f1.w, comps, v1);
    e2[i] = wt_spawn_with(f2.w, comps, v2);
  }
  weft_world_t *w = f2.w;
  for (uint32_t i = 0; i < N; i++) {
    /* A world-1 handle carrying exactly the index and generation of a live
     * world-2 entity, and world 1's real handles. */
    weft_entity_t forged =
        wt_handle(weft_entity_index(e2[i]), weft_entity_generation(e2[i]), 1);
    const weft_entity_t foreign[] = {forged, e1[i]};
    for (size_t k = 0; k < 2; k++) {
      weft_entity_t e = foreign[k];
      if (e == e2[i]) {
        fail_msg("world tags 1 and 2 produced identical handles");
      }
      pos_t r;
      const void *out = NULL;
      assert_false(weft_is_alive(w, e));
      assert_null(weft_get(w, e, f2.pos));
      assert_false(weft_has(w, e, f2.pos));
      assert_false(weft_has(w, e, f2.tag));
      assert_false(weft_is_enabled(w, e, f2.pos));
      assert_int_equal(weft_read(w, e, f2.pos, &r), WEFT_ESTALE);
      assert_int_equal(weft_try_get(w, e, f2.pos, &out), WEFT_ESTALE);
      STALE_EXACT(w, assert_null(weft_get_mut(w, e, f2.pos)));
      STALE_EXACT(w, assert_null(weft_get_field(w, e, f2.pos, 0)));
      pos_t evil = {-5.0f, -5.0f, -5.0f};
      STALE_EXACT(w,
                  assert_int_equal(weft_set(w, e, f2.pos, &evil), WEFT_ESTALE));
      STALE_EXACT(w,
                  assert_int_equal(weft_add(w, e, f2.vel, NULL), WEFT_ESTALE));
      STALE_EXACT(w, assert_int_equal(weft_remove(w, e, f2.pos), WEFT_ESTALE));
      STALE_EXACT(w, assert_int_equal(weft_disable(w, e, f2.pos), WEFT_ESTALE));
      STALE_EXACT(w, assert_int_equal(weft_enable(w, e, f2.pos), WEFT_ESTALE));
      STALE_EXACT(w, assert_int_equal(weft_despawn(w, e), WEFT_ESTALE));
    }
  }
  assert_int_equal(weft_world_count(w), N);
  for (uint32_t i = 0; i < N; i++) {
    pos_t p2 = pos_for(100 + i);
    expect_pos(w, e2[i], f2.pos, &p2);
    assert_true(weft_is_enabled(w, e2[i], f2.pos));
    assert_false(weft_has(w, e2[i], f2.vel));
    /* And world 1's own handles still work in world 1. */
    pos_t p1 = pos_for(i);
    expect_pos(f1.w, e1[i], f1.pos, &p1);
  }
  weft_world_destroy(f1.w);
  weft_world_destroy(f2.w);
}

/* --- generation rollover and capacity ---------------------------------- */

enum slot_state_t { SLOT_UNUSED, SLOT_ALIVE, SLOT_FREE, SLOT_RETIRED };

static void test_entity_generation_rollover_fail_closed(void **state) {
  (void)state;
  enum { CAP = 4, MAXGEN = 3, MAXISSUED = CAP * MAXGEN };
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.capacity = CAP;
  cfg.max_generation = MAXGEN;
  weft_world_t *w = wt_world_new(&cfg);
  uint8_t tag = weft_world_tag(w);

  enum slot_state_t st[CAP];
  uint32_t last_gen[CAP];
  weft_entity_t handle[CAP];
  for (int i = 0; i < CAP; i++) {
    st[i] = SLOT_UNUSED;
    last_gen[i] = 0;
    handle[i] = 0;
  }
  weft_entity_t issued[MAXISSUED + 1];
  uint32_t n_issued = 0, alive = 0, retired = 0;
  bool saw_full = false, saw_retired = false;
  wt_rng_t rng = wt_rng(3);

  for (int step = 0; step < 10000 && !(retired == CAP); step++) {
    bool do_spawn = alive == 0 || wt_chance(&rng, 3, 5);
    if (do_spawn) {
      weft_entity_t e = WEFT_ENTITY_NULL;
      int rc = weft_spawn(w, &e);
      if (alive + retired == CAP) {
        int want = retired == 0 ? WEFT_EFULL : WEFT_ERETIRED;
        assert_int_equal(rc, want);
        saw_full |= want == WEFT_EFULL;
        saw_retired |= want == WEFT_ERETIRED;
        const char *msg = weft_world_last_error(w);
        assert_non_null(msg);
        assert_true(strlen(msg) > 0);
      } else {
        assert_int_equal(rc, WEFT_OK);
        uint32_t idx = weft_entity_index(e);
        uint32_t gen = weft_entity_generation(e);
        assert_true(idx < CAP);
        assert_int_equal(weft_entity_tag(e), tag);
        /* Never a live or retired slot, never an old handle. */
        assert_true(st[idx] == SLOT_UNUSED || st[idx] == SLOT_FREE);
        assert_true(gen > last_gen[idx]);
        assert_true(gen <= MAXGEN);
        for (uint32_t j = 0; j < n_issued; j++) {
          assert_true(issued[j] != e);
        }
        assert_true(n_issued < MAXISSUED);
        issued[n_issued++] = e;
        st[idx] = SLOT_ALIVE;
        last_gen[idx] = gen;
        handle[idx] = e;
        alive++;
      }
    } else {
      /* Despawn a random live slot. */
      uint32_t pick = wt_below(&rng, alive), idx = 0;
      for (uint32_t i = 0; i < CAP; i++) {
        if (st[i] == SLOT_ALIVE) {
          if (pick == 0) {
            idx = i;
            break;
          }
          pick--;
        }
      }
      assert_int_equal(st[idx], SLOT_ALIVE);
      assert_int_equal(weft_despawn(w, handle[idx]), WEFT_OK);
      alive--;
      if (last_gen[idx] == MAXGEN) {
        st[idx] = SLOT_RETIRED;
        retired++;
      } else {
        st[idx] = SLOT_FREE;
      }
    }
    /* The invariant and the model after every operation. */
    weft_world_stats_t s = wt_stats(w);
    assert_int_equal(s.alive, alive);
    assert_int_equal(s.retired, retired);
    assert_int_equal(s.remaining, CAP - alive - retired);
    assert_int_equal(s.capacity, CAP);
    wt_check_slot_invariant(w);
    /* Every issued handle that is not live is rejected. */
    for (uint32_t j = 0; j < n_issued; j++) {
      uint32_t idx = weft_entity_index(issued[j]);
      bool live = st[idx] == SLOT_ALIVE && handle[idx] == issued[j];
      assert_int_equal(weft_is_alive(w, issued[j]), live);
    }
  }
  assert_int_equal(retired, CAP);
  assert_true(saw_full || saw_retired);
  /* Each slot issued exactly max_generation generations, then retired. */
  assert_int_equal(n_issued, CAP * MAXGEN);
  weft_entity_t e;
  assert_int_equal(weft_spawn(w, &e), WEFT_ERETIRED);
  const weft_component_t none[] = {0};
  assert_int_equal(weft_spawn_with(w, none, NULL, &e), WEFT_ERETIRED);
  assert_int_equal(weft_spawn_batch(w, 1, none, NULL, NULL, NULL),
                   WEFT_ERETIRED);
  wt_check_slot_invariant(w);
  assert_int_equal(wt_stats(w).remaining, 0);
  weft_world_destroy(w);
}

static void test_entity_full_versus_retired(void **state) {
  (void)state;
  enum { CAP = 4 };
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.capacity = CAP;
  cfg.max_generation = 1; /* every despawn retires its slot */
  weft_world_t *w = wt_world_new(&cfg);
  weft_entity_t es[CAP];
  for (int i = 0; i < CAP; i++) {
    es[i] = wt_spawn(w);
    wt_check_slot_invariant(w);
  }
  weft_entity_t e;
  assert_int_equal(weft_spawn(w, &e), WEFT_EFULL);
  assert_true(strlen(weft_world_last_error(w)) > 0);
  assert_int_equal(weft_despawn(w, es[1]), WEFT_OK);
  assert_int_equal(weft_despawn(w, es[2]), WEFT_OK);
  weft_world_stats_t s = wt_stats(w);
  assert_int_equal(s.alive, 2);
  assert_int_equal(s.retired, 2);
  assert_int_equal(s.remaining, 0);
  wt_check_slot_invariant(w);
  assert_int_equal(weft_spawn(w, &e), WEFT_ERETIRED);
  assert_true(strlen(weft_world_last_error(w)) > 0);
  assert_false(weft_is_alive(w, es[1]));
  assert_true(weft_is_alive(w, es[0]));
  assert_true(weft_is_alive(w, es[3]));
  weft_world_destroy(w);
}

static void test_entity_capacity_full(void **state) {
  (void)state;
  enum { CAP = 8 };
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.capacity = CAP;
  fixture_t f = fixture_new(&cfg);
  weft_entity_t es[CAP];
  for (int i = 0; i < CAP; i++) {
    es[i] = wt_spawn(f.w);
    wt_check_slot_invariant(f.w);
  }
  uint64_t spawns = wt_stats(f.w).spawns;
  weft_entity_t e = WEFT_ENTITY_NULL;
  assert_int_equal(weft_spawn(f.w, &e), WEFT_EFULL);
  const char *msg = weft_world_last_error(f.w);
  assert_non_null(msg);
  assert_true(strlen(msg) > 0);
  const weft_component_t comps[] = {f.pos, 0};
  assert_int_equal(weft_spawn_with(f.w, comps, NULL, &e), WEFT_EFULL);
  assert_int_equal(weft_spawn_batch(f.w, 1, comps, NULL, NULL, NULL),
                   WEFT_EFULL);
  weft_world_stats_t s = wt_stats(f.w);
  assert_int_equal(s.alive, CAP);
  assert_int_equal(s.remaining, 0);
  assert_int_equal(s.spawns, spawns);
  assert_int_equal(weft_world_count(f.w), CAP);
  /* Freeing a slot makes room again. */
  assert_int_equal(weft_despawn(f.w, es[3]), WEFT_OK);
  e = wt_spawn(f.w);
  assert_int_equal(weft_entity_index(e), weft_entity_index(es[3]));
  assert_int_equal(weft_spawn(f.w, &e), WEFT_EFULL);
  wt_check_slot_invariant(f.w);
  weft_world_destroy(f.w);
}

/* --- spawning with values ------------------------------------------------ */

static void test_entity_spawn_with_values(void **state) {
  (void)state;
  fixture_t f = fixture_new(NULL);
  const weft_component_t comps[] = {f.pos, f.vel, f.soa, f.tag, 0};
  pos_t p = pos_for(5);
  vel_t v = vel_for(6);
  soa_t s = soa_for(7);
  const void *vals[] = {&p, &v, &s, NULL};
  weft_entity_t e = wt_spawn_with(f.w, comps, vals);
  expect_pos(f.w, e, f.pos, &p);
  expect_vel(f.w, e, f.vel, &v);
  expect_soa(f.w, e, f.soa, &s);
  assert_true(weft_has(f.w, e, f.tag));
  for (int i = 0; i < 4; i++) {
    assert_true(weft_is_enabled(f.w, e, comps[i]));
  }

  /* Dirty the rows, then spawn with NULL values / NULL entries: the
   * components must come back zero-filled. */
  assert_int_equal(weft_despawn(f.w, e), WEFT_OK);
  const pos_t pz = {0};
  const vel_t vz = {0};
  const soa_t sz = {0};
  weft_entity_t z1 = wt_spawn_with(f.w, comps, NULL);
  expect_pos(f.w, z1, f.pos, &pz);
  expect_vel(f.w, z1, f.vel, &vz);
  expect_soa(f.w, z1, f.soa, &sz);
  assert_int_equal(weft_despawn(f.w, z1), WEFT_OK);
  e = wt_spawn_with(f.w, comps, vals);
  const void *partial[] = {NULL, &v, NULL, NULL};
  weft_entity_t z2 = wt_spawn_with(f.w, comps, partial);
  expect_pos(f.w, z2, f.pos, &pz);
  expect_vel(f.w, z2, f.vel, &v);
  expect_soa(f.w, z2, f.soa, &sz);
  expect_pos(f.w, e, f.pos, &p);

  /* An empty list spawns a bare entity. */
  const weft_component_t none[] = {0};
  weft_entity_t bare = wt_spawn_with(f.w, none, NULL);
  for (int i = 0; i < 4; i++) {
    assert_false(weft_has(f.w, bare, comps[i]));
  }
  weft_world_destroy(f.w);
}

/* Bytes of value k for a component of size bytes: never zero. */
static void fast_value(uint8_t *out, uint32_t size, uint32_t k) {
  for (uint32_t b = 0; b < size; b++)
    out[b] = (uint8_t)(k * 37u + b * 11u + 1u) | 1u;
}

/* Checks e's components of list ids (sizes in sizes) against vals[i]
 * (NULL: zero). */
static void expect_fast_row(weft_world_t *w, weft_entity_t e,
                            const weft_component_t *ids, const uint32_t *sizes,
                            const void *const *vals) {
  static const uint8_t zero[64];
  for (uint32_t i = 0; ids[i]; i++) {
    const void *got = weft_get(w, e, ids[i]);
    assert_non_null(got);
    assert_memory_equal(got, vals[i] ? vals[i] : zero, sizes[i]);
  }
}

/*
 * One-by-one spawns of the list spawned last, into a chunk with room, take
 * a fast path: one for lists whose elements are all 4, 8, 12 or 16 bytes
 * (inline copies, NULL values read zeros) and one for other sizes. An
 * anchor keeps the archetype's chunk, and each round's row still holds
 * the bytes of the round before, so a value that is not written shows.
 */
static void test_entity_spawn_fast_paths_write_every_size(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  const uint32_t sizes[] = {4, 8, 12, 16, 24, 20};
  weft_component_t c[6];
  for (uint32_t i = 0; i < 6; i++) {
    char name[16];
    snprintf(name, sizeof name, "s%u", sizes[i]);
    c[i] = wt_register(w, name, sizes[i], 4);
  }
  /* Small: every size inline. Plain: a 24- and a 20-byte element too. */
  const weft_component_t small[] = {c[3], c[0], c[2], c[1], 0};
  const uint32_t small_sizes[] = {16, 4, 12, 8};
  const weft_component_t plain[] = {c[0], c[4], c[2], c[5], 0};
  const uint32_t plain_sizes[] = {4, 24, 12, 20};
  const weft_component_t *lists[] = {small, plain};
  const uint32_t *list_sizes[] = {small_sizes, plain_sizes};
  uint8_t store[4][64];
  for (uint32_t l = 0; l < 2; l++) {
    const weft_component_t *ids = lists[l];
    const uint32_t *sz = list_sizes[l];
    const void *vals[4];
    for (uint32_t i = 0; i < 4; i++) {
      fast_value(store[i], sz[i], i + l * 16);
      vals[i] = store[i];
    }
    /* The anchor keeps the chunk; the second spawn makes the list the
     * last one spawned, and its row is the one every round reuses. */
    weft_entity_t anchor = wt_spawn_with(w, ids, vals);
    assert_int_equal(weft_despawn(w, wt_spawn_with(w, ids, vals)), WEFT_OK);
    for (uint32_t round = 1; round <= 3; round++) {
      for (uint32_t i = 0; i < 4; i++) {
        fast_value(store[i], sz[i], round * 4 + i + l * 16);
        vals[i] = store[i];
      }
      /* Round 1 writes values, round 2 none, round 3 every other one. */
      for (uint32_t i = 0; i < 4; i++)
        if (round == 2 || (round == 3 && i % 2 == 0))
          vals[i] = NULL;
      weft_entity_t e = wt_spawn_with(w, ids, vals);
      expect_fast_row(w, e, ids, sz, vals);
      assert_int_equal(weft_despawn(w, e), WEFT_OK);
    }
    assert_int_equal(weft_despawn(w, anchor), WEFT_OK);
  }
  assert_int_equal(weft_world_count(w), 0);
  weft_world_destroy(w);
}

static void test_entity_spawn_with_rejects_bad_lists(void **state) {
  (void)state;
  fixture_t f = fixture_new(NULL);
  weft_entity_t keep = wt_spawn(f.w);
  weft_world_stats_t s0 = wt_stats(f.w);
  weft_entity_t e = WEFT_ENTITY_NULL;
  const weft_component_t dup[] = {f.pos, f.vel, f.pos, 0};
  assert_true(weft_spawn_with(f.w, dup, NULL, &e) < 0);
  const weft_component_t unknown[] = {f.pos, weft_component_count(f.w) + 1, 0};
  assert_int_equal(weft_spawn_with(f.w, unknown, NULL, &e), WEFT_ENOCOMP);
  const weft_component_t huge[] = {f.vel, 0xffffffffu, 0};
  assert_int_equal(weft_spawn_with(f.w, huge, NULL, &e), WEFT_ENOCOMP);
  weft_world_stats_t s1 = wt_stats(f.w);
  assert_int_equal(s1.alive, s0.alive);
  assert_int_equal(s1.spawns, s0.spawns);
  assert_int_equal(weft_world_count(f.w), 1);
  assert_true(weft_is_alive(f.w, keep));
  wt_check_slot_invariant(f.w);
  weft_world_destroy(f.w);
}

static void test_entity_spawn_with_64_components(void **state) {
  (void)state;
  enum { N = 65 };
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t ids[N + 1];
  uint32_t vals_store[N];
  const void *vals[N];
  for (uint32_t i = 0; i < N; i++) {
    char name[16];
    snprintf(name, sizeof name, "c%u", i);
    ids[i] = wt_register(w, name, sizeof(uint32_t), 0);
    vals_store[i] = i * 31u + 7u;
    vals[i] = &vals_store[i];
  }
  ids[N] = 0;
  /* 65 ids are too many: nothing is spawned. */
  weft_entity_t e = WEFT_ENTITY_NULL;
  assert_true(weft_spawn_with(w, ids, vals, &e) < 0);
  assert_int_equal(weft_world_count(w), 0);
  /* 64 are fine. */
  ids[64] = 0;
  e = wt_spawn_with(w, ids, vals);
  for (uint32_t i = 0; i < 64; i++) {
    const uint32_t *p = weft_get(w, e, ids[i]);
    assert_non_null(p);
    assert_int_equal(*p, vals_store[i]);
  }
  assert_false(weft_has(w, e, ids[64]));
  weft_world_destroy(w);
}

/* --- add / set / remove -------------------------------------------------- */

static void test_entity_add_zero_fills(void **state) {
  (void)state;
  fixture_t f = fixture_new(NULL);
  /* Leave non-zero bytes behind in the {pos}, {vel} and {soa} rows. */
  for (uint32_t i = 0; i < 8; i++) {
    pos_t p = pos_for(i + 1);
    vel_t v = vel_for(i + 1);
    soa_t s = soa_for(i + 1);
    const weft_component_t comps[] = {f.pos, f.vel, f.soa, 0};
    const void *vals[] = {&p, &v, &s};
    weft_entity_t d = wt_spawn_with(f.w, comps, vals);
    assert_int_equal(weft_despawn(f.w, d), WEFT_OK);
  }
  weft_entity_t e = wt_spawn(f.w);
  assert_int_equal(weft_add(f.w, e, f.pos, NULL), WEFT_OK);
  assert_int_equal(weft_add(f.w, e, f.vel, NULL), WEFT_OK);
  assert_int_equal(weft_add(f.w, e, f.soa, NULL), WEFT_OK);
  assert_int_equal(weft_add(f.w, e, f.tag, NULL), WEFT_OK);
  const pos_t pz = {0};
  const vel_t vz = {0};
  const soa_t sz = {0};
  expect_pos(f.w, e, f.pos, &pz);
  expect_vel(f.w, e, f.vel, &vz);
  expect_soa(f.w, e, f.soa, &sz);
  assert_true(weft_has(f.w, e, f.tag));
  /* Adding with a value copies it. */
  weft_entity_t g = wt_spawn(f.w);
  pos_t p = pos_for(42);
  soa_t s = soa_for(42);
  assert_int_equal(weft_add(f.w, g, f.pos, &p), WEFT_OK);
  assert_int_equal(weft_add(f.w, g, f.soa, &s), WEFT_OK);
  expect_pos(f.w, g, f.pos, &p);
  expect_soa(f.w, g, f.soa, &s);
  expect_pos(f.w, e, f.pos, &pz);
  weft_world_destroy(f.w);
}

static void test_entity_add_is_idempotent(void **state) {
  (void)state;
  fixture_t f = fixture_new(NULL);
  weft_entity_t e = wt_spawn(f.w);
  pos_t p1 = pos_for(1), p2 = pos_for(2);
  soa_t s1 = soa_for(1), s2 = soa_for(2);
  assert_int_equal(weft_add(f.w, e, f.pos, &p1), WEFT_OK);
  assert_int_equal(weft_add(f.w, e, f.soa, &s1), WEFT_OK);
  uint64_t moves = wt_stats(f.w).moves;
  assert_int_equal(weft_add(f.w, e, f.pos, &p2), WEFT_OK);
  assert_int_equal(weft_add(f.w, e, f.pos, NULL), WEFT_OK);
  assert_int_equal(weft_add(f.w, e, f.soa, &s2), WEFT_OK);
  expect_pos(f.w, e, f.pos, &p1);
  expect_soa(f.w, e, f.soa, &s1);
  assert_int_equal(wt_stats(f.w).moves, moves);
  weft_world_destroy(f.w);
}

static void test_entity_set_adds_and_overwrites(void **state) {
  (void)state;
  fixture_t f = fixture_new(NULL);
  weft_entity_t e = wt_spawn(f.w);
  weft_entity_t other = wt_spawn(f.w);
  pos_t p1 = pos_for(1), p2 = pos_for(2);
  soa_t s1 = soa_for(1), s2 = soa_for(2);
  vel_t v1 = vel_for(1);
  assert_false(weft_has(f.w, e, f.pos));
  assert_int_equal(weft_set(f.w, e, f.pos, &p1), WEFT_OK);
  assert_true(weft_has(f.w, e, f.pos));
  expect_pos(f.w, e, f.pos, &p1);
  assert_int_equal(weft_set(f.w, e, f.soa, &s1), WEFT_OK);
  expect_soa(f.w, e, f.soa, &s1);
  assert_int_equal(weft_set(f.w, other, f.pos, &p2), WEFT_OK);
  assert_int_equal(weft_set(f.w, other, f.vel, &v1), WEFT_OK);

  uint64_t moves = wt_stats(f.w).moves;
  assert_int_equal(weft_set(f.w, e, f.pos, &p2), WEFT_OK);
  assert_int_equal(weft_set(f.w, e, f.soa, &s2), WEFT_OK);
  expect_pos(f.w, e, f.pos, &p2);
  expect_soa(f.w, e, f.soa, &s2);
  /* Overwriting a present component is not a structural move. */
  assert_int_equal(wt_stats(f.w).moves, moves);
  expect_pos(f.w, other, f.pos, &p2);
  expect_vel(f.w, other, f.vel, &v1);
  assert_false(weft_has(f.w, other, f.soa));
  weft_world_destroy(f.w);
}

static void test_entity_remove_is_idempotent(void **state) {
  (void)state;
  fixture_t f = fixture_new(NULL);
  const weft_component_t comps[] = {f.pos, f.vel, f.soa, f.tag, 0};
  pos_t p = pos_for(3);
  vel_t v = vel_for(3);
  soa_t s = soa_for(3);
  const void *vals[] = {&p, &v, &s, NULL};
  weft_entity_t e = wt_spawn_with(f.w, comps, vals);
  assert_int_equal(weft_remove(f.w, e, f.pos), WEFT_OK);
  assert_false(weft_has(f.w, e, f.pos));
  assert_null(weft_get(f.w, e, f.pos));
  uint64_t moves = wt_stats(f.w).moves;
  assert_int_equal(weft_remove(f.w, e, f.pos), WEFT_OK);
  assert_int_equal(wt_stats(f.w).moves, moves);
  expect_vel(f.w, e, f.vel, &v);
  expect_soa(f.w, e, f.soa, &s);
  assert_true(weft_has(f.w, e, f.tag));
  assert_int_equal(weft_remove(f.w, e, f.tag), WEFT_OK);
  assert_false(weft_has(f.w, e, f.tag));
  assert_int_equal(weft_remove(f.w, e, f.soa), WEFT_OK);
  assert_false(weft_has(f.w, e, f.soa));
  expect_vel(f.w, e, f.vel, &v);
  assert_true(weft_is_alive(f.w, e));
  /* Re-adding after remove starts from zero, not the old value. */
  assert_int_equal(weft_add(f.w, e, f.pos, NULL), WEFT_OK);
  const pos_t pz = {0};
  expect_pos(f.w, e, f.pos, &pz);
  weft_world_destroy(f.w);
}

/* --- accessors ----------------------------------------------------------- */

static void test_entity_read_get_try_get_agree(void **state) {
  (void)state;
  fixture_t f = fixture_new(NULL);
  pos_t p = pos_for(8);
  const weft_component_t comps[] = {f.pos, 0};
  const void *vals[] = {&p};
  weft_entity_t e = wt_spawn_with(f.w, comps, vals);
  const pos_t *g = weft_get(f.w, e, f.pos);
  assert_non_null(g);
  pos_t *m = weft_get_mut(f.w, e, f.pos);
  assert_ptr_equal(g, m);
  const void *t = NULL;
  assert_int_equal(weft_try_get(f.w, e, f.pos, &t), WEFT_OK);
  assert_ptr_equal(t, g);
  assert_true(wt_aligned(g, _Alignof(pos_t)));
  /* Writing through get_mut is seen by read and get. */
  pos_t q = pos_for(99);
  *m = q;
  expect_pos(f.w, e, f.pos, &q);

  /* Absent component. */
  vel_t rv;
  assert_null(weft_get(f.w, e, f.vel));
  assert_null(weft_get_mut(f.w, e, f.vel));
  assert_int_equal(weft_try_get(f.w, e, f.vel, &t), WEFT_ENOTFOUND);
  assert_int_equal(weft_read(f.w, e, f.vel, &rv), WEFT_ENOTFOUND);
  assert_false(weft_has(f.w, e, f.vel));
  assert_false(weft_is_enabled(f.w, e, f.vel));
  weft_world_destroy(f.w);
}

/* weft_get() serves every AoS column, wherever it sits: the first arrays
 * of a chunk (inline), arrays past the first four (a wide archetype, SoA
 * fields taking arrays too) and values of 32 KiB or more, in several
 * chunks; weft_get_many_n() and weft_try_get() agree, and a stale handle
 * is one counted miss for each. */
static void test_entity_get_every_column_of_wide_archetypes(void **state) {
  (void)state;
  weft_world_config_t cfg = {.chunk_size = WEFT_CHUNK_SIZE_MAX};
  fixture_t f = fixture_new(&cfg);
  weft_world_t *w = f.w;
  enum { BIG = 40000, N = 100 };
  weft_component_desc_t d = {.name = "u32", .size = 4};
  weft_component_t u32, big;
  assert_int_equal(weft_component_register(w, &d, &u32), WEFT_OK);
  d = (weft_component_desc_t){.name = "big", .size = BIG};
  assert_int_equal(weft_component_register(w, &d, &big), WEFT_OK);
  /* pos, vel, soa (three arrays), u32 and big: seven arrays. */
  const weft_component_t wide[] = {f.pos, f.vel, f.soa, u32, big, 0};
  const weft_component_t alone[] = {big, 0};
  static unsigned char bigval[BIG];
  weft_entity_t h[2 * N];
  for (uint32_t i = 0; i < 2 * N; i++) {
    pos_t p = pos_for(i);
    vel_t v = vel_for(i);
    soa_t sv = soa_for(i);
    uint32_t x = i * 2654435761u;
    memset(bigval, (int)(i & 0xff), sizeof bigval);
    const void *vals[] = {&p, &v, &sv, &x, bigval};
    const void *vals_alone[] = {bigval};
    h[i] = wt_spawn_with(w, i % 2 ? alone : wide, i % 2 ? vals_alone : vals);
  }
  const weft_component_t comps[] = {f.pos, f.vel, f.soa, u32, big, f.tag};
  enum { K = sizeof comps / sizeof comps[0] };
  static const void *got[2 * N * K];
  uint32_t hits = 0;
  for (uint32_t i = 0; i < 2 * N; i++) {
    const bool is_wide = i % 2 == 0;
    for (uint32_t j = 0; j < K; j++) {
      const void *g = weft_get(w, h[i], comps[j]);
      const void *t = NULL;
      int rc = weft_try_get(w, h[i], comps[j], &t);
      assert_ptr_equal(g, rc == WEFT_OK ? t : NULL);
      hits += g != NULL;
    }
    const unsigned char *b = weft_get(w, h[i], big);
    assert_non_null(b);
    assert_int_equal(b[0], i & 0xff);
    assert_int_equal(b[BIG - 1], i & 0xff);
    if (!is_wide) {
      assert_null(weft_get(w, h[i], u32));
      continue;
    }
    pos_t p = pos_for(i);
    vel_t v = vel_for(i);
    expect_pos(w, h[i], f.pos, &p);
    expect_vel(w, h[i], f.vel, &v);
    assert_null(weft_get(w, h[i], f.soa));
    const uint32_t *x = weft_get(w, h[i], u32);
    assert_non_null(x);
    assert_int_equal(*x, i * 2654435761u);
  }
  /* Wide: pos, vel, u32, big; alone: big. */
  assert_int_equal(hits, N * 4 + N);
  assert_int_equal(weft_get_many_n(w, h, 2 * N, comps, K, got), hits);
  for (uint32_t i = 0; i < 2 * N; i++)
    for (uint32_t j = 0; j < K; j++)
      assert_ptr_equal(got[i * K + j], weft_get(w, h[i], comps[j]));
  /* Stale handles: one counted miss per call, whatever the column. */
  weft_entity_t old_wide = h[0], old_alone = h[1];
  assert_int_equal(weft_despawn(w, old_wide), WEFT_OK);
  assert_int_equal(weft_despawn(w, old_alone), WEFT_OK);
  for (uint32_t j = 0; j < K; j++) {
    STALE_EXACT(w, assert_null(weft_get(w, old_wide, comps[j])));
    STALE_EXACT(w, assert_null(weft_get(w, old_alone, comps[j])));
  }
  weft_world_destroy(w);
}

/* The chunk table moves as it grows; lookups follow it. Small chunks, so
 * that one-by-one spawns register hundreds of them (the table starts
 * with room for 64), and every entity is read back after each growth. */
static void test_entity_get_follows_growing_chunk_table(void **state) {
  (void)state;
  weft_world_config_t cfg = {.chunk_size = WEFT_CHUNK_SIZE_MIN};
  fixture_t f = fixture_new(&cfg);
  weft_world_t *w = f.w;
  enum { N = 60000 };
  static weft_entity_t h[N];
  const weft_component_t comps[] = {f.pos, f.vel, 0};
  uint32_t checked_at = 0;
  for (uint32_t i = 0; i < N; i++) {
    pos_t p = pos_for(i);
    vel_t v = vel_for(i);
    const void *vals[] = {&p, &v};
    h[i] = wt_spawn_with(w, comps, vals);
    /* Every 8192 spawns (some 50 new chunks): read them all back. */
    if ((i + 1) % 8192 == 0 || i + 1 == N) {
      for (uint32_t k = 0; k <= i; k++) {
        pos_t pk = pos_for(k);
        const pos_t *g = weft_get(w, h[k], f.pos);
        assert_non_null(g);
        assert_true(pos_eq(g, &pk));
      }
      checked_at++;
    }
  }
  assert_true(checked_at >= 7);
  assert_true(wt_stats(w).chunks_live > 256);
  weft_world_destroy(w);
}

static void test_entity_tag_component_access(void **state) {
  (void)state;
  fixture_t f = fixture_new(NULL);
  const weft_component_t comps[] = {f.tag, 0};
  weft_entity_t e = wt_spawn_with(f.w, comps, NULL);
  weft_entity_t plain = wt_spawn(f.w);
  assert_true(weft_has(f.w, e, f.tag));
  assert_true(weft_is_enabled(f.w, e, f.tag));
  assert_false(weft_has(f.w, plain, f.tag));
  assert_null(weft_get(f.w, e, f.tag));
  assert_null(weft_get_mut(f.w, e, f.tag));
  assert_null(weft_get_field(f.w, e, f.tag, 0));
  const void *t = &t;
  assert_int_equal(weft_try_get(f.w, e, f.tag, &t), WEFT_ETAG);
  char buf[8];
  assert_int_equal(weft_read(f.w, e, f.tag, buf), WEFT_ETAG);
  /* set on a tag adds it (there is no data to copy). */
  assert_int_equal(weft_set(f.w, plain, f.tag, buf), WEFT_OK);
  assert_true(weft_has(f.w, plain, f.tag));
  weft_world_destroy(f.w);
}

static void test_entity_soa_component_access(void **state) {
  (void)state;
  fixture_t f = fixture_new(NULL);
  soa_t s = soa_for(11);
  const weft_component_t comps[] = {f.soa, 0};
  const void *vals[] = {&s};
  weft_entity_t e = wt_spawn_with(f.w, comps, vals);
  assert_null(weft_get(f.w, e, f.soa));
  assert_null(weft_get_mut(f.w, e, f.soa));
  const void *t = NULL;
  assert_int_equal(weft_try_get(f.w, e, f.soa, &t), WEFT_ESOA);
  expect_soa(f.w, e, f.soa, &s);
  /* Fields are reachable one by one. */
  float *fa = weft_get_field(f.w, e, f.soa, 0);
  uint32_t *fb = weft_get_field(f.w, e, f.soa, 1);
  uint64_t *fc = weft_get_field(f.w, e, f.soa, 2);
  assert_non_null(fa);
  assert_non_null(fb);
  assert_non_null(fc);
  assert_true(*fa == s.a);
  assert_int_equal(*fb, s.b);
  assert_int_equal(*fc, s.c);
  /* Writes through fields show up in read; set scatters into fields. */
  *fb = 77u;
  soa_t want = s;
  want.b = 77u;
  expect_soa(f.w, e, f.soa, &want);
  soa_t s2 = soa_for(12);
  assert_int_equal(weft_set(f.w, e, f.soa, &s2), WEFT_OK);
  fa = weft_get_field(f.w, e, f.soa, 0);
  fb = weft_get_field(f.w, e, f.soa, 1);
  fc = weft_get_field(f.w, e, f.soa, 2);
  assert_true(*fa == s2.a);
  assert_int_equal(*fb, s2.b);
  assert_int_equal(*fc, s2.c);
  assert_null(weft_get_field(f.w, e, f.soa, 3));
  weft_world_destroy(f.w);
}

static void test_entity_get_field_aos_and_soa(void **state) {
  (void)state;
  fixture_t f = fixture_new(NULL);
  pos_t p = pos_for(21);
  vel_t v = vel_for(21);
  soa_t s = soa_for(21);
  const weft_component_t comps[] = {f.pos, f.vel, f.soa, 0};
  const void *vals[] = {&p, &v, &s};
  weft_entity_t e = wt_spawn_with(f.w, comps, vals);
  char *base = weft_get_mut(f.w, e, f.pos);
  assert_non_null(base);
  const uint32_t offs[] = {offsetof(pos_t, x), offsetof(pos_t, y),
                           offsetof(pos_t, z)};
  const float want[] = {p.x, p.y, p.z};
  for (uint32_t i = 0; i < 3; i++) {
    float *fp = weft_get_field(f.w, e, f.pos, i);
    assert_ptr_equal(fp, base + offs[i]);
    assert_true(*fp == want[i]);
  }
  float *fz = weft_get_field(f.w, e, f.pos, 2);
  *fz = 1234.5f;
  pos_t pw = p;
  pw.z = 1234.5f;
  expect_pos(f.w, e, f.pos, &pw);
  /* Out-of-range fields and field-less components miss. */
  assert_null(weft_get_field(f.w, e, f.pos, 3));
  assert_null(weft_get_field(f.w, e, f.pos, 0xffffffffu));
  assert_null(weft_get_field(f.w, e, f.vel, 0));
  assert_null(weft_get_field(f.w, e, f.soa, 3));
  /* Absent component. */
  weft_entity_t bare = wt_spawn(f.w);
  assert_null(weft_get_field(f.w, bare, f.pos, 0));
  assert_null(weft_get_field(f.w, bare, f.soa, 0));
  expect_soa(f.w, e, f.soa, &s);
  weft_world_destroy(f.w);
}

static void test_entity_disable_enable_keep_value(void **state) {
  (void)state;
  fixture_t f = fixture_new(NULL);
  enum { N = 10 };
  weft_entity_t es[N];
  const weft_component_t comps[] = {f.pos, f.soa, f.tag, 0};
  for (uint32_t i = 0; i < N; i++) {
    pos_t p = pos_for(i);
    soa_t s = soa_for(i);
    const void *vals[] = {&p, &s, NULL};
    es[i] = wt_spawn_with(f.w, comps, vals);
  }
  weft_entity_t e = es[4];
  assert_int_equal(weft_disable(f.w, e, f.pos), WEFT_OK);
  assert_int_equal(weft_disable(f.w, e, f.soa), WEFT_OK);
  assert_int_equal(weft_disable(f.w, e, f.tag), WEFT_OK);
  for (int k = 0; k < 3; k++) {
    assert_true(weft_has(f.w, e, comps[k]));
    assert_false(weft_is_enabled(f.w, e, comps[k]));
  }
  /* Disabled values stay readable. */
  pos_t p4 = pos_for(4);
  soa_t s4 = soa_for(4);
  expect_pos(f.w, e, f.pos, &p4);
  expect_soa(f.w, e, f.soa, &s4);
  /* Disabling twice is a no-op. */
  assert_int_equal(weft_disable(f.w, e, f.pos), WEFT_OK);
  assert_false(weft_is_enabled(f.w, e, f.pos));
  expect_pos(f.w, e, f.pos, &p4);
  /* Absent components cannot be toggled. */
  assert_int_equal(weft_disable(f.w, e, f.vel), WEFT_ENOTFOUND);
  assert_int_equal(weft_enable(f.w, e, f.vel), WEFT_ENOTFOUND);
  assert_false(weft_has(f.w, e, f.vel));
  /* Enabling restores the flag, value unchanged. */
  assert_int_equal(weft_enable(f.w, e, f.pos), WEFT_OK);
  assert_int_equal(weft_enable(f.w, e, f.soa), WEFT_OK);
  assert_true(weft_is_enabled(f.w, e, f.pos));
  assert_true(weft_is_enabled(f.w, e, f.soa));
  assert_false(weft_is_enabled(f.w, e, f.tag));
  expect_pos(f.w, e, f.pos, &p4);
  expect_soa(f.w, e, f.soa, &s4);
  assert_int_equal(weft_enable(f.w, e, f.pos), WEFT_OK);
  assert_true(weft_is_enabled(f.w, e, f.pos));
  /* Neighbours are untouched. */
  for (uint32_t i = 0; i < N; i++) {
    pos_t p = pos_for(i);
    soa_t s = soa_for(i);
    expect_pos(f.w, es[i], f.pos, &p);
    expect_soa(f.w, es[i], f.soa, &s);
    assert_int_equal(weft_is_enabled(f.w, es[i], f.tag), i != 4);
  }
  weft_world_destroy(f.w);
}

static void test_entity_unknown_component_rejected(void **state) {
  (void)state;
  fixture_t f = fixture_new(NULL);
  pos_t p = pos_for(1);
  const weft_component_t comps[] = {f.pos, f.tag, 0};
  const void *vals[] = {&p, NULL};
  weft_entity_t e = wt_spawn_with(f.w, comps, vals);
  const weft_component_t bad[] = {
      WEFT_COMPONENT_NONE, weft_component_count(f.w) + 1,
      weft_component_count(f.w) + 100, WEFT_MAX_COMPONENTS + 1, 0xffffffffu};
  uint64_t moves = wt_stats(f.w).moves;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    weft_component_t c = bad[i];
    char buf[64];
    const void *t = NULL;
    assert_int_equal(weft_add(f.w, e, c, NULL), WEFT_ENOCOMP);
    assert_int_equal(weft_add(f.w, e, c, buf), WEFT_ENOCOMP);
    assert_int_equal(weft_remove(f.w, e, c), WEFT_ENOCOMP);
    assert_int_equal(weft_set(f.w, e, c, buf), WEFT_ENOCOMP);
    assert_int_equal(weft_read(f.w, e, c, buf), WEFT_ENOCOMP);
    assert_int_equal(weft_try_get(f.w, e, c, &t), WEFT_ENOCOMP);
    assert_int_equal(weft_disable(f.w, e, c), WEFT_ENOCOMP);
    assert_int_equal(weft_enable(f.w, e, c), WEFT_ENOCOMP);
    assert_null(weft_get(f.w, e, c));
    assert_null(weft_get_mut(f.w, e, c));
    assert_null(weft_get_field(f.w, e, c, 0));
    assert_false(weft_has(f.w, e, c));
    assert_false(weft_is_enabled(f.w, e, c));
  }
  assert_int_equal(wt_stats(f.w).moves, moves);
  expect_pos(f.w, e, f.pos, &p);
  assert_true(weft_has(f.w, e, f.tag));
  weft_world_destroy(f.w);
}

static void test_entity_despawn_removes_entity(void **state) {
  (void)state;
  fixture_t f = fixture_new(NULL);
  const weft_component_t comps[] = {f.pos, f.soa, f.tag, 0};
  weft_entity_t e = wt_spawn_with(f.w, comps, NULL);
  weft_entity_t g = wt_spawn_with(f.w, comps, NULL);
  assert_int_equal(weft_world_count(f.w), 2);
  assert_int_equal(weft_despawn(f.w, e), WEFT_OK);
  assert_false(weft_is_alive(f.w, e));
  assert_false(weft_has(f.w, e, f.pos));
  assert_int_equal(weft_world_count(f.w), 1);
  assert_int_equal(weft_despawn(f.w, e), WEFT_ESTALE);
  assert_int_equal(weft_world_count(f.w), 1);
  assert_true(weft_is_alive(f.w, g));
  assert_int_equal(wt_stats(f.w).despawns, 1);
  weft_world_destroy(f.w);
}

/* --- survivors of swap-removes ------------------------------------------- */

static void test_entity_swap_remove_keeps_other_values(void **state) {
  (void)state;
  enum { N = 600 };
  fixture_t f = fixture_new(NULL);
  weft_entity_t es[N];
  bool alive[N], has_vel[N], has_tag[N];
  const weft_component_t comps[] = {f.pos, f.vel, f.soa, 0};
  for (uint32_t i = 0; i < N; i++) {
    pos_t p = pos_for(i);
    vel_t v = vel_for(i);
    soa_t s = soa_for(i);
    const void *vals[] = {&p, &v, &s};
    es[i] = wt_spawn_with(f.w, comps, vals);
    alive[i] = true;
    has_vel[i] = true;
    has_tag[i] = false;
  }
  /* Despawn from the middle, move some out, move some others in. */
  for (uint32_t i = 1; i < N; i += 3) {
    assert_int_equal(weft_despawn(f.w, es[i]), WEFT_OK);
    alive[i] = false;
  }
  for (uint32_t i = 0; i < N; i += 5) {
    if (alive[i]) {
      assert_int_equal(weft_remove(f.w, es[i], f.vel), WEFT_OK);
      has_vel[i] = false;
    }
  }
  for (uint32_t i = 0; i < N; i += 7) {
    if (alive[i]) {
      assert_int_equal(weft_add(f.w, es[i], f.tag, NULL), WEFT_OK);
      has_tag[i] = true;
    }
  }
  uint32_t n_alive = 0;
  for (uint32_t i = 0; i < N; i++) {
    if (!alive[i]) {
      assert_false(weft_is_alive(f.w, es[i]));
      continue;
    }
    n_alive++;
    pos_t p = pos_for(i);
    vel_t v = vel_for(i);
    soa_t s = soa_for(i);
    expect_pos(f.w, es[i], f.pos, &p);
    expect_soa(f.w, es[i], f.soa, &s);
    assert_int_equal(weft_has(f.w, es[i], f.vel), has_vel[i]);
    if (has_vel[i]) {
      expect_vel(f.w, es[i], f.vel, &v);
    }
    assert_int_equal(weft_has(f.w, es[i], f.tag), has_tag[i]);
  }
  assert_int_equal(weft_world_count(f.w), n_alive);
  weft_world_destroy(f.w);
}

/* A randomized run of every per-entity operation against a plain model. */
typedef struct model_ent_t {
  weft_entity_t e;
  bool alive;
  bool present[4];
  bool enabled[4];
  pos_t pos;
  vel_t vel;
  soa_t soa;
} model_ent_t;

static void model_check(const fixture_t *f, const model_ent_t *m) {
  const weft_component_t ids[4] = {f->pos, f->vel, f->soa, f->tag};
  assert_true(weft_is_alive(f->w, m->e));
  for (int c = 0; c < 4; c++) {
    assert_int_equal(weft_has(f->w, m->e, ids[c]), m->present[c]);
    assert_int_equal(weft_is_enabled(f->w, m->e, ids[c]),
                     m->present[c] && m->enabled[c]);
  }
  if (m->present[0]) {
    expect_pos(f->w, m->e, f->pos, &m->pos);
  }
  if (m->present[1]) {
    expect_vel(f->w, m->e, f->vel, &m->vel);
  }
  if (m->present[2]) {
    expect_soa(f->w, m->e, f->soa, &m->soa);
  }
}

static void test_entity_random_ops_match_model(void **state) {
  (void)state;
  enum { MAXE = 300, STEPS = 6000 };
  fixture_t f = fixture_new(NULL);
  const weft_component_t ids[4] = {f.pos, f.vel, f.soa, f.tag};
  model_ent_t *ms = calloc(MAXE, sizeof *ms);
  assert_non_null(ms);
  weft_entity_t *dead = calloc(STEPS, sizeof *dead);
  assert_non_null(dead);
  uint32_t n = 0, n_dead = 0, n_alive = 0;
  wt_rng_t rng = wt_rng(2024);
  uint32_t serial = 1;

  for (uint32_t step = 0; step < STEPS; step++) {
    uint32_t op = wt_below(&rng, 10);
    if (n_alive == 0 || (op == 0 && n < MAXE)) {
      if (n == MAXE) {
        continue;
      }
      model_ent_t *m = &ms[n];
      memset(m, 0, sizeof *m);
      weft_component_t comps[5];
      const void *vals[4];
      uint32_t k = 0;
      m->pos = pos_for(serial);
      m->vel = vel_for(serial);
      m->soa = soa_for(serial);
      serial++;
      const void *src[4] = {&m->pos, &m->vel, &m->soa, NULL};
      for (int c = 0; c < 4; c++) {
        if (wt_chance(&rng, 1, 2)) {
          comps[k] = ids[c];
          vals[k] = src[c];
          k++;
          m->present[c] = true;
          m->enabled[c] = true;
        }
      }
      comps[k] = 0;
      m->e = wt_spawn_with(f.w, comps, vals);
      m->alive = true;
      n++;
      n_alive++;
      continue;
    }
    /* Pick a live entity. */
    uint32_t i;
    do {
      i = wt_below(&rng, n);
    } while (!ms[i].alive);
    model_ent_t *m = &ms[i];
    int c = (int)wt_below(&rng, 4);
    weft_component_t id = ids[c];
    switch (op) {
    case 1: /* despawn, rarely */
      if (wt_chance(&rng, 1, 3)) {
        assert_int_equal(weft_despawn(f.w, m->e), WEFT_OK);
        m->alive = false;
        dead[n_dead++] = m->e;
        n_alive--;
      }
      break;
    case 2: { /* add with a value, or NULL (zero) */
      pos_t p = pos_for(serial);
      vel_t v = vel_for(serial);
      soa_t s = soa_for(serial);
      serial++;
      bool zero = wt_chance(&rng, 1, 3);
      const void *src[4] = {&p, &v, &s, NULL};
      assert_int_equal(weft_add(f.w, m->e, id, zero ? NULL : src[c]), WEFT_OK);
      if (!m->present[c]) {
        m->present[c] = true;
        m->enabled[c] = true;
        if (zero) {
          memset(&p, 0, sizeof p);
          memset(&v, 0, sizeof v);
          memset(&s, 0, sizeof s);
        }
        if (c == 0) {
          m->pos = p;
        } else if (c == 1) {
          m->vel = v;
        } else if (c == 2) {
          m->soa = s;
        }
      }
      break;
    }
    case 3:
    case 4:
      assert_int_equal(weft_remove(f.w, m->e, id), WEFT_OK);
      m->present[c] = false;
      break;
    case 5:
    case 6: { /* set */
      pos_t p = pos_for(serial);
      vel_t v = vel_for(serial);
      soa_t s = soa_for(serial);
      serial++;
      /* A tag has no data; any pointer will do. */
      const void *src[4] = {&p, &v, &s, &p};
      assert_int_equal(weft_set(f.w, m->e, id, src[c]), WEFT_OK);
      if (!m->present[c]) {
        m->present[c] = true;
        m->enabled[c] = true;
      }
      if (c == 0) {
        m->pos = p;
      } else if (c == 1) {
        m->vel = v;
      } else if (c == 2) {
        m->soa = s;
      }
      break;
    }
    case 7:
      assert_int_equal(weft_disable(f.w, m->e, id),
                       m->present[c] ? WEFT_OK : WEFT_ENOTFOUND);
      if (m->present[c]) {
        m->enabled[c] = false;
      }
      break;
    case 8:
      assert_int_equal(weft_enable(f.w, m->e, id),
                       m->present[c] ? WEFT_OK : WEFT_ENOTFOUND);
      if (m->present[c]) {
        m->enabled[c] = true;
      }
      break;
    default: /* write in place */
      if (c == 0 && m->present[0]) {
        pos_t *p = weft_get_mut(f.w, m->e, f.pos);
        assert_non_null(p);
        p->y += 1.0f;
        m->pos.y += 1.0f;
      } else if (c == 2 && m->present[2]) {
        uint32_t *b = weft_get_field(f.w, m->e, f.soa, 1);
        assert_non_null(b);
        *b += 3u;
        m->soa.b += 3u;
      }
      break;
    }
    if (step % 500 == 499) {
      for (uint32_t j = 0; j < n; j++) {
        if (ms[j].alive) {
          model_check(&f, &ms[j]);
        }
      }
      assert_int_equal(weft_world_count(f.w), n_alive);
    }
  }
  for (uint32_t j = 0; j < n; j++) {
    if (ms[j].alive) {
      model_check(&f, &ms[j]);
    }
  }
  for (uint32_t j = 0; j < n_dead; j++) {
    assert_false(weft_is_alive(f.w, dead[j]));
    assert_int_equal(weft_despawn(f.w, dead[j]), WEFT_ESTALE);
  }
  assert_int_equal(weft_world_count(f.w), n_alive);
  wt_check_slot_invariant(f.w);
  free(dead);
  free(ms);
  weft_world_destroy(f.w);
}

/* --- batch spawn --------------------------------------------------------- */

typedef struct fill_ctx_t {
  uint32_t n;
  uint32_t calls;
  uint32_t rows;
  uint8_t *covered;
  weft_entity_t *seen;
} fill_ctx_t;

static void fill_values(void *user, const weft_iter_t *view, uint32_t first) {
  fill_ctx_t *ctx = user;
  ctx->calls++;
  assert_true(view->count > 0);
  assert_true((uint64_t)first + view->count <= ctx->n);
  assert_non_null(view->entities);
  pos_t *pos = view->columns[0];
  assert_non_null(pos);
  assert_null(view->columns[1]); /* SoA */
  assert_null(view->columns[2]); /* tag */
  float *fa = weft_iter_field(view, 1, 0);
  uint32_t *fb = weft_iter_field(view, 1, 1);
  uint64_t *fc = weft_iter_field(view, 1, 2);
  assert_non_null(fa);
  assert_non_null(fb);
  assert_non_null(fc);
  for (uint32_t r = 0; r < view->count; r++) {
    uint32_t k = first + r;
    ctx->covered[k]++;
    ctx->seen[k] = view->entities[r];
    pos[r] = pos_for(k);
    soa_t s = soa_for(k);
    fa[r] = s.a;
    fb[r] = s.b;
    fc[r] = s.c;
  }
  ctx->rows += view->count;
}

static void test_entity_batch_spawn_fill_values(void **state) {
  (void)state;
  const uint32_t n = 3000;
  fixture_t f = fixture_new(NULL);
  fill_ctx_t ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.n = n;
  ctx.covered = calloc(n, 1);
  ctx.seen = calloc(n, sizeof *ctx.seen);
  weft_entity_t *out = calloc(n, sizeof *out);
  assert_non_null(ctx.covered);
  assert_non_null(ctx.seen);
  assert_non_null(out);
  const weft_component_t comps[] = {f.pos, f.soa, f.tag, 0};
  assert_int_equal(weft_spawn_batch(f.w, n, comps, fill_values, &ctx, out),
                   WEFT_OK);
  assert_int_equal(weft_world_count(f.w), n);
  assert_int_equal(ctx.rows, n);
  assert_true(ctx.calls >= 1);
  for (uint32_t k = 0; k < n; k++) {
    assert_int_equal(ctx.covered[k], 1);
    assert_true(out[k] == ctx.seen[k]);
    assert_true(weft_is_alive(f.w, out[k]));
    /* Fresh world: the ids are contiguous. */
    assert_int_equal(weft_entity_index(out[k]), weft_entity_index(out[0]) + k);
    pos_t p = pos_for(k);
    soa_t s = soa_for(k);
    expect_pos(f.w, out[k], f.pos, &p);
    expect_soa(f.w, out[k], f.soa, &s);
    assert_true(weft_has(f.w, out[k], f.tag));
    assert_false(weft_has(f.w, out[k], f.vel));
  }
  free(out);
  free(ctx.seen);
  free(ctx.covered);
  weft_world_destroy(f.w);
}

static void test_entity_batch_spawn_null_out_and_fill(void **state) {
  (void)state;
  const uint32_t n = 1500;
  fixture_t f = fixture_new(NULL);
  /* Leave garbage in spare chunk memory first. */
  const weft_component_t comps[] = {f.pos, f.vel, 0};
  for (uint32_t i = 0; i < 64; i++) {
    pos_t p = pos_for(i + 1);
    vel_t v = vel_for(i + 1);
    const void *vals[] = {&p, &v};
    weft_entity_t d = wt_spawn_with(f.w, comps, vals);
    assert_int_equal(weft_despawn(f.w, d), WEFT_OK);
  }
  assert_int_equal(weft_spawn_batch(f.w, n, comps, NULL, NULL, NULL), WEFT_OK);
  assert_int_equal(weft_world_count(f.w), n);
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = f.pos;
  qd.include[1] = f.vel;
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(f.w, &qd, &q), WEFT_OK);
  assert_int_equal(weft_query_count(q), n);
  weft_iter_t it;
  uint32_t rows = 0;
  const pos_t pz = {0};
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    const pos_t *p = it.columns[0];
    const vel_t *v = it.columns[1];
    for (uint32_t r = 0; r < it.count; r++) {
      assert_true(pos_eq(&p[r], &pz));
      assert_true(v[r].dx == 0.0 && v[r].tick == 0);
    }
    rows += it.count;
  }
  assert_int_equal(rows, n);
  weft_query_destroy(q);
  weft_world_destroy(f.w);
}

static void test_entity_batch_spawn_all_or_nothing(void **state) {
  (void)state;
  enum { CAP = 100 };
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.capacity = CAP;
  fixture_t f = fixture_new(&cfg);
  const weft_component_t comps[] = {f.pos, f.tag, 0};
  assert_int_equal(weft_spawn_batch(f.w, 30, comps, NULL, NULL, NULL), WEFT_OK);
  weft_world_stats_t s0 = wt_stats(f.w);
  weft_entity_t out[CAP + 1];
  assert_int_equal(weft_spawn_batch(f.w, CAP - 30 + 1, comps, NULL, NULL, out),
                   WEFT_EFULL);
  assert_true(strlen(weft_world_last_error(f.w)) > 0);
  weft_world_stats_t s1 = wt_stats(f.w);
  assert_int_equal(weft_world_count(f.w), 30);
  assert_int_equal(s1.alive, s0.alive);
  assert_int_equal(s1.spawns, s0.spawns);
  assert_int_equal(s1.remaining, s0.remaining);
  wt_check_slot_invariant(f.w);
  /* Unknown components fail the whole batch too. */
  const weft_component_t bad[] = {f.pos, 999, 0};
  assert_int_equal(weft_spawn_batch(f.w, 5, bad, NULL, NULL, out),
                   WEFT_ENOCOMP);
  assert_int_equal(weft_world_count(f.w), 30);
  /* Exactly the remaining capacity succeeds. */
  assert_int_equal(weft_spawn_batch(f.w, CAP - 30, comps, NULL, NULL, out),
                   WEFT_OK);
  assert_int_equal(weft_world_count(f.w), CAP);
  for (uint32_t i = 0; i < CAP - 30; i++) {
    assert_true(weft_has(f.w, out[i], f.pos));
  }
  wt_check_slot_invariant(f.w);
  weft_world_destroy(f.w);
}

static void test_entity_batch_spawn_reuses_freed_slots(void **state) {
  (void)state;
  enum { CAP = 10 };
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.capacity = CAP;
  fixture_t f = fixture_new(&cfg);
  weft_entity_t es[CAP];
  bool freed[CAP] = {false};
  const weft_component_t comps[] = {f.pos, 0};
  assert_int_equal(weft_spawn_batch(f.w, CAP, comps, NULL, NULL, es), WEFT_OK);
  for (uint32_t i = 0; i < CAP; i += 2) {
    assert_int_equal(weft_despawn(f.w, es[i]), WEFT_OK);
    assert_true(weft_entity_index(es[i]) < CAP);
    freed[weft_entity_index(es[i])] = true;
  }
  weft_entity_t again[CAP / 2];
  assert_int_equal(weft_spawn_batch(f.w, CAP / 2, comps, NULL, NULL, again),
                   WEFT_OK);
  for (uint32_t i = 0; i < CAP / 2; i++) {
    uint32_t idx = weft_entity_index(again[i]);
    assert_true(idx < CAP);
    assert_true(freed[idx]);
    freed[idx] = false; /* each freed slot used once */
    assert_true(weft_is_alive(f.w, again[i]));
  }
  assert_int_equal(weft_world_count(f.w), CAP);
  for (uint32_t i = 0; i < CAP; i += 2) {
    assert_false(weft_is_alive(f.w, es[i]));
  }
  weft_world_destroy(f.w);
}

static void test_entity_batch_spawn_prefers_fresh_slots(void **state) {
  (void)state;
  const uint32_t n = 300;
  fixture_t f = fixture_new(NULL);
  weft_entity_t first[100];
  for (uint32_t i = 0; i < 100; i++) {
    first[i] = wt_spawn(f.w);
  }
  for (uint32_t i = 0; i < 100; i += 2) {
    assert_int_equal(weft_despawn(f.w, first[i]), WEFT_OK);
  }
  /* Freed slots exist, yet a batch takes fresh ones above the high-water
   * mark so that its ids are contiguous. */
  uint32_t hwm = wt_stats(f.w).slots_used;
  weft_entity_t *out = calloc(n, sizeof *out);
  assert_non_null(out);
  const weft_component_t comps[] = {f.pos, 0};
  assert_int_equal(weft_spawn_batch(f.w, n, comps, NULL, NULL, out), WEFT_OK);
  assert_true(weft_entity_index(out[0]) >= hwm);
  for (uint32_t k = 0; k < n; k++) {
    assert_int_equal(weft_entity_index(out[k]), weft_entity_index(out[0]) + k);
    assert_int_equal(weft_entity_generation(out[k]), 1);
  }
  assert_int_equal(wt_stats(f.w).slots_used, hwm + n);
  assert_int_equal(weft_world_count(f.w), 50 + n);
  free(out);
  weft_world_destroy(f.w);
}

/* Shuffles h[0, n) (Fisher-Yates), so that consecutive handles change
 * archetype and chunk often. */
static void shuffle_handles(weft_entity_t *h, uint32_t n, wt_rng_t *rng) {
  for (uint32_t i = n - 1; n && i > 0; i--) {
    uint32_t j = wt_below(rng, i + 1);
    weft_entity_t tmp = h[i];
    h[i] = h[j];
    h[j] = tmp;
  }
}

/* weft_get_many() agrees with weft_get() handle by handle: live entities
 * in several archetypes, entities lacking the component, despawned and
 * forged handles, a live handle of another world, and a tag. Every
 * handle that is not live counts once as stale. */
static void test_entity_get_many_matches_get(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_desc_t dv = {.name = "v", .size = 8};
  weft_component_desc_t dt = {.name = "t"};
  weft_component_desc_t du = {.name = "u", .size = 4};
  weft_component_t v, t, u;
  assert_int_equal(weft_component_register(w, &dv, &v), 0);
  assert_int_equal(weft_component_register(w, &dt, &t), 0);
  assert_int_equal(weft_component_register(w, &du, &u), 0);
  enum { N = 3000 };
  static weft_entity_t h[N + 8];
  /* Another world, whose entities take the same slots and generations as
   * this world's: only the tag tells its handles apart. */
  weft_world_config_t oc = {.world_tag = 200};
  weft_world_t *other = wt_world_new(&oc);
  weft_component_t ov;
  assert_int_equal(weft_component_register(other, &dv, &ov), 0);
  static const void *got[N + 8];
  wt_rng_t rng = wt_rng(42);
  for (uint32_t i = 0; i < N; i++) {
    uint64_t val = (uint64_t)i * 7919u;
    uint32_t kind = wt_below(&rng, 4);
    weft_component_t list[3] = {v, WEFT_COMPONENT_NONE, WEFT_COMPONENT_NONE};
    if (kind == 1)
      list[1] = t;
    else if (kind == 2)
      list[0] = u; /* no v at all */
    else if (kind == 3)
      list[1] = u;
    const void *vals[2] = {list[0] == v ? (const void *)&val : NULL, NULL};
    assert_int_equal(weft_spawn_with(w, list, vals, &h[i]), 0);
  }
  for (uint32_t i = 0; i < N; i += 5)
    assert_int_equal(weft_despawn(w, h[i]), 0);
  h[N] = WEFT_ENTITY_NULL;
  h[N + 1] = ~(weft_entity_t)0;
  h[N + 2] = h[1] + ((weft_entity_t)1 << 32); /* wrong generation */
  for (uint32_t k = 0; k < 2; k++) /* the second takes slot 1, as h[1] did */
    assert_int_equal(
        weft_spawn_with(other, (weft_component_t[]){ov, 0}, NULL, &h[N + 3]),
        0);
  assert_int_equal(weft_entity_index(h[N + 3]), weft_entity_index(h[1]));
  assert_int_equal(weft_entity_generation(h[N + 3]),
                   weft_entity_generation(h[1]));
  assert_true(h[N + 3] != h[1]);
  assert_true(weft_is_alive(w, h[1]));
  uint32_t n = N + 4, expect_hits = 0, expect_stale = 0;
  /* Shuffle so that consecutive handles change archetype often. */
  shuffle_handles(h, n, &rng);
  for (uint32_t i = 0; i < n; i++) {
    expect_hits += weft_get(w, h[i], v) != NULL;
    expect_stale += !weft_is_alive(w, h[i]);
  }
  assert_true(expect_hits > N / 4);
  assert_int_equal(expect_stale, N / 5 + 4);
  weft_world_stats_t before, after;
  weft_world_stats(w, &before);
  assert_int_equal(weft_get_many(w, h, n, v, got), expect_hits);
  weft_world_stats(w, &after);
  assert_int_equal(after.stale - before.stale, expect_stale);
  for (uint32_t i = 0; i < n; i++) {
    assert_ptr_equal(got[i], weft_get(w, h[i], v));
    if (got[i]) {
      uint64_t want = (uint64_t)weft_entity_index(h[i]) * 7919u;
      assert_int_equal(*(const uint64_t *)got[i], want);
    }
  }
  /* A tag has no data: every lookup misses. */
  assert_int_equal(weft_get_many(w, h, n, t, got), 0);
  for (uint32_t i = 0; i < n; i++)
    assert_null(got[i]);
  weft_world_destroy(w);
  weft_world_destroy(other);
}

/* Spawns an entity with a random subset of pos, tag, vel and soa (no
 * values); *first, when asked, receives the subset's first component
 * (WEFT_COMPONENT_NONE for the empty one). */
static weft_entity_t spawn_mixed(const fixture_t *f, wt_rng_t *rng,
                                 weft_component_t *first) {
  weft_component_t list[5];
  uint32_t k = 0;
  const weft_component_t maybe[4] = {f->pos, f->tag, f->vel, f->soa};
  for (uint32_t j = 0; j < 4; j++)
    if (wt_chance(rng, 1, 2))
      list[k++] = maybe[j];
  list[k] = WEFT_COMPONENT_NONE;
  weft_entity_t e;
  assert_int_equal(weft_spawn_with(f->w, list, NULL, &e), 0);
  if (first)
    *first = list[0];
  return e;
}

/* weft_has_many() agrees with weft_has() handle by handle, for a tag, a
 * component, a disabled component, an unknown id and an unused one, over
 * live, despawned, forged and other-world handles in shuffled archetypes;
 * each handle that is not live counts once as stale; bad arguments write
 * nothing. */
static void test_entity_has_many_matches_has(void **state) {
  (void)state;
  fixture_t f = fixture_new(NULL);
  weft_world_t *w = f.w;
  weft_world_config_t oc = {.world_tag = 201};
  weft_world_t *other = wt_world_new(&oc);
  enum { N = 2500 };
  static weft_entity_t h[N + 4];
  static bool got[N + 4];
  wt_rng_t rng = wt_rng(11);
  for (uint32_t i = 0; i < N; i++) {
    weft_component_t first;
    h[i] = spawn_mixed(&f, &rng, &first);
    if (first && wt_chance(&rng, 1, 4))
      assert_int_equal(weft_disable(w, h[i], first), 0);
  }
  for (uint32_t i = 0; i < N; i += 3)
    assert_int_equal(weft_despawn(w, h[i]), 0);
  h[N] = ~(weft_entity_t)0;
  h[N + 1] = h[2] + ((weft_entity_t)1 << 32); /* wrong generation */
  h[N + 2] = WEFT_ENTITY_NULL;
  assert_int_equal(
      weft_spawn_with(other, (weft_component_t[]){0}, NULL, &h[N + 3]), 0);
  uint32_t n = N + 4;
  shuffle_handles(h, n, &rng);
  uint32_t stale = 0;
  for (uint32_t i = 0; i < n; i++)
    stale += !weft_is_alive(w, h[i]);
  assert_int_equal(stale, (N + 2) / 3 + 4);
  const weft_component_t comps[] = {f.tag, f.pos, f.vel,     f.soa,
                                    999,   0,     UINT32_MAX};
  for (uint32_t c = 0; c < sizeof comps / sizeof comps[0]; c++) {
    uint32_t expect = 0;
    for (uint32_t i = 0; i < n; i++)
      expect += weft_has(w, h[i], comps[c]);
    if (comps[c] == f.tag || comps[c] == f.pos)
      assert_true(expect > N / 8);
    weft_world_stats_t before, after;
    weft_world_stats(w, &before);
    memset(got, 0xaa, sizeof got);
    assert_int_equal(weft_has_many(w, h, n, comps[c], got), expect);
    weft_world_stats(w, &after);
    assert_int_equal(after.stale - before.stale, stale);
    for (uint32_t i = 0; i < n; i++)
      if (got[i] != weft_has(w, h[i], comps[c]))
        fail_msg("component %u, handle %#llx: has_many %d, has %d", comps[c],
                 (unsigned long long)h[i], got[i], weft_has(w, h[i], comps[c]));
  }
  /* Bad arguments: nothing written. */
  got[0] = true;
  assert_int_equal(weft_has_many(w, h, n, f.tag, NULL), 0);
  assert_int_equal(weft_has_many(w, NULL, n, f.tag, got), 0);
  assert_int_equal(weft_has_many(NULL, h, n, f.tag, got), 0);
  assert_true(got[0]);
  assert_int_equal(weft_has_many(w, h, 0, f.tag, got), 0);
  assert_true(got[0]);
  weft_world_destroy(w);
  weft_world_destroy(other);
}

/* weft_get_many_n() agrees with weft_get() for every handle and component
 * of the list (present, absent, a tag, repeated, unknown, SoA) over live,
 * despawned and forged handles in shuffled archetypes; bad arguments write
 * nothing. */
static void test_entity_get_many_n_matches_get(void **state) {
  (void)state;
  fixture_t f = fixture_new(NULL);
  weft_world_t *w = f.w;
  enum { N = 2000, K = 6 };
  static weft_entity_t h[N + 2];
  static const void *got[(N + 2) * K];
  wt_rng_t rng = wt_rng(7);
  for (uint32_t i = 0; i < N; i++)
    h[i] = spawn_mixed(&f, &rng, NULL);
  for (uint32_t i = 0; i < N; i += 3)
    assert_int_equal(weft_despawn(w, h[i]), 0);
  h[N] = ~(weft_entity_t)0;
  h[N + 1] = h[2] + ((weft_entity_t)1 << 32); /* wrong generation */
  uint32_t n = N + 2;
  shuffle_handles(h, n, &rng);
  const weft_component_t comps[K] = {f.vel, f.tag, f.pos, f.vel, 999, f.soa};
  for (uint32_t k = 1; k <= K; k++) {
    uint32_t expect = 0;
    for (uint32_t i = 0; i < n; i++)
      for (uint32_t j = 0; j < k; j++)
        expect += weft_get(w, h[i], comps[j]) != NULL;
    assert_true(expect > N / 8);
    assert_int_equal(weft_get_many_n(w, h, n, comps, k, got), expect);
    for (uint32_t i = 0; i < n; i++)
      for (uint32_t j = 0; j < k; j++)
        assert_ptr_equal(got[i * k + j], weft_get(w, h[i], comps[j]));
  }
  /* Bad arguments: nothing written. */
  got[0] = got;
  assert_int_equal(weft_get_many_n(w, h, n, comps, 0, got), 0);
  assert_int_equal(weft_get_many_n(w, h, n, comps, WEFT_GET_MANY_MAX + 1, got),
                   0);
  assert_int_equal(weft_get_many_n(w, h, n, NULL, 1, got), 0);
  assert_int_equal(weft_get_many_n(w, NULL, n, comps, 1, got), 0);
  assert_int_equal(weft_get_many_n(NULL, h, n, comps, 1, got), 0);
  assert_ptr_equal(got[0], got);
  weft_world_destroy(w);
}

/* weft_get_many_ex() gives weft_get_many_n()'s pointers and weft_has()'s
 * answers from one pass, whatever rows it is told not to prefetch: for
 * k = 0 to K components, a tag, a component, an unknown and an unused id
 * as the has term, over live, despawned and forged handles in shuffled
 * archetypes; each handle that is not live counts once as stale; bad
 * arguments write nothing. */
static void test_entity_get_many_ex_matches_get_and_has(void **state) {
  (void)state;
  fixture_t f = fixture_new(NULL);
  weft_world_t *w = f.w;
  enum { N = 2000, K = 4 };
  static weft_entity_t h[N + 2];
  static const void *got[(N + 2) * K];
  static bool has[N + 2];
  wt_rng_t rng = wt_rng(19);
  for (uint32_t i = 0; i < N; i++)
    h[i] = spawn_mixed(&f, &rng, NULL);
  for (uint32_t i = 0; i < N; i += 4)
    assert_int_equal(weft_despawn(w, h[i]), 0);
  h[N] = ~(weft_entity_t)0;
  h[N + 1] = h[1] + ((weft_entity_t)1 << 32); /* wrong generation */
  uint32_t n = N + 2, stale = 0;
  shuffle_handles(h, n, &rng);
  for (uint32_t i = 0; i < n; i++)
    stale += !weft_is_alive(w, h[i]);
  assert_int_equal(stale, N / 4 + 2);
  const weft_component_t comps[K] = {f.pos, f.vel, f.tag, f.soa};
  const weft_component_t has_terms[] = {f.tag, f.vel, 999, 0};
  for (uint32_t k = 0; k <= K; k++) {
    for (uint32_t t = 0; t < sizeof has_terms / sizeof has_terms[0]; t++) {
      weft_get_many_opts_t o = {.address_only = wt_below(&rng, 1u << K),
                                .has = has_terms[t],
                                .has_out = has};
      uint32_t expect = 0;
      for (uint32_t i = 0; i < n; i++) {
        for (uint32_t j = 0; j < k; j++)
          expect += weft_get(w, h[i], comps[j]) != NULL;
        expect += weft_has(w, h[i], has_terms[t]);
      }
      if (k > 0 || t < 2)
        assert_true(expect > N / 8);
      memset(has, 0xaa, sizeof has);
      weft_world_stats_t before, after;
      weft_world_stats(w, &before);
      assert_int_equal(weft_get_many_ex(w, h, n, comps, k, got, &o), expect);
      weft_world_stats(w, &after);
      assert_int_equal(after.stale - before.stale, stale);
      for (uint32_t i = 0; i < n; i++) {
        for (uint32_t j = 0; j < k; j++)
          assert_ptr_equal(got[i * k + j], weft_get(w, h[i], comps[j]));
        if (has[i] != weft_has(w, h[i], has_terms[t]))
          fail_msg("k %u, has %u, handle %#llx: %d, weft_has %d", k,
                   has_terms[t], (unsigned long long)h[i], has[i],
                   weft_has(w, h[i], has_terms[t]));
      }
    }
  }
  /* Without options it is weft_get_many_n(). */
  static const void *plain[(N + 2) * K];
  assert_int_equal(weft_get_many_ex(w, h, n, comps, K, got, NULL),
                   weft_get_many_n(w, h, n, comps, K, plain));
  assert_memory_equal(got, plain, (size_t)n * K * sizeof *got);
  /* Bad arguments: nothing written. */
  weft_get_many_opts_t o = {.has = f.tag, .has_out = has};
  got[0] = got;
  has[0] = true;
  assert_int_equal(weft_get_many_ex(w, h, n, comps, 0, got, NULL), 0);
  assert_int_equal(
      weft_get_many_ex(w, h, n, comps, WEFT_GET_MANY_MAX + 1, got, &o), 0);
  assert_int_equal(weft_get_many_ex(w, h, n, NULL, 1, got, &o), 0);
  assert_int_equal(weft_get_many_ex(w, h, n, comps, 1, NULL, &o), 0);
  assert_int_equal(weft_get_many_ex(w, NULL, n, comps, 1, got, &o), 0);
  assert_int_equal(weft_get_many_ex(NULL, h, n, comps, 1, got, &o), 0);
  assert_ptr_equal(got[0], got);
  assert_true(has[0]);
  weft_world_destroy(w);
}

/* A record packs chunk id and row into 31 bits, split by the chunk size:
 * at every size, rows up to the largest a chunk holds resolve, and swap
 * removal keeps every survivor's value and kills every despawned handle. */
static void test_entity_locations_at_every_chunk_size(void **state) {
  (void)state;
  enum { N = 140000 };
  const uint32_t sizes[] = {WEFT_CHUNK_SIZE_MIN, WEFT_CHUNK_SIZE_DEFAULT,
                            WEFT_CHUNK_SIZE_MAX};
  weft_entity_t *es = malloc(N * sizeof *es);
  assert_non_null(es);
  for (uint32_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    weft_world_t *w = wt_world_sized(0, sizes[k]);
    weft_component_t id = wt_register(w, "Id", 4, 4);
    weft_component_t comps[2] = {id, WEFT_COMPONENT_NONE};
    for (uint32_t i = 0; i < N; i++) {
      if (i % 2) { /* handle-only rows: the most rows a chunk holds */
        es[i] = wt_spawn(w);
      } else {
        const void *v[1] = {&i};
        es[i] = wt_spawn_with(w, comps, v);
      }
    }
    for (uint32_t i = 0; i < N; i += 3)
      assert_int_equal(weft_despawn(w, es[i]), WEFT_OK);
    for (uint32_t i = 0; i < N; i++) {
      bool live = i % 3 != 0;
      assert_int_equal(weft_is_alive(w, es[i]), live);
      const uint32_t *v = weft_get(w, es[i], id);
      if (live && i % 2 == 0) {
        assert_non_null(v);
        assert_int_equal(*v, i);
      } else {
        assert_null(v);
      }
    }
    assert_int_equal(weft_world_count(w), N - (N + 2) / 3);
    wt_check_slot_invariant(w);
    weft_world_destroy(w);
  }
  free(es);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_entity_null_handle_never_live),
      cmocka_unit_test(test_entity_handle_decode),
      cmocka_unit_test(test_entity_spawned_handles_unique),
      cmocka_unit_test(test_entity_stale_handle_rejected),
      cmocka_unit_test(test_entity_forged_handles_rejected),
      cmocka_unit_test(test_entity_foreign_world_handle_rejected),
      cmocka_unit_test(test_entity_generation_rollover_fail_closed),
      cmocka_unit_test(test_entity_full_versus_retired),
      cmocka_unit_test(test_entity_capacity_full),
      cmocka_unit_test(test_entity_spawn_with_values),
      cmocka_unit_test(test_entity_spawn_fast_paths_write_every_size),
      cmocka_unit_test(test_entity_spawn_with_rejects_bad_lists),
      cmocka_unit_test(test_entity_spawn_with_64_components),
      cmocka_unit_test(test_entity_add_zero_fills),
      cmocka_unit_test(test_entity_add_is_idempotent),
      cmocka_unit_test(test_entity_set_adds_and_overwrites),
      cmocka_unit_test(test_entity_remove_is_idempotent),
      cmocka_unit_test(test_entity_read_get_try_get_agree),
      cmocka_unit_test(test_entity_get_every_column_of_wide_archetypes),
      cmocka_unit_test(test_entity_get_follows_growing_chunk_table),
      cmocka_unit_test(test_entity_tag_component_access),
      cmocka_unit_test(test_entity_soa_component_access),
      cmocka_unit_test(test_entity_get_field_aos_and_soa),
      cmocka_unit_test(test_entity_disable_enable_keep_value),
      cmocka_unit_test(test_entity_unknown_component_rejected),
      cmocka_unit_test(test_entity_despawn_removes_entity),
      cmocka_unit_test(test_entity_swap_remove_keeps_other_values),
      cmocka_unit_test(test_entity_random_ops_match_model),
      cmocka_unit_test(test_entity_batch_spawn_fill_values),
      cmocka_unit_test(test_entity_batch_spawn_null_out_and_fill),
      cmocka_unit_test(test_entity_batch_spawn_all_or_nothing),
      cmocka_unit_test(test_entity_batch_spawn_reuses_freed_slots),
      cmocka_unit_test(test_entity_batch_spawn_prefers_fresh_slots),
      cmocka_unit_test(test_entity_get_many_matches_get),
      cmocka_unit_test(test_entity_get_many_n_matches_get),
      cmocka_unit_test(test_entity_has_many_matches_has),
      cmocka_unit_test(test_entity_get_many_ex_matches_get_and_has),
      cmocka_unit_test(test_entity_locations_at_every_chunk_size),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
