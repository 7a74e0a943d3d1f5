/* SPDX-License-Identifier: MIT */
/*
 * Spawning with given handles: a saved world restored handle for handle
 * has the original's digest, every rejection leaves the world as it was,
 * and the free list stays consistent (checked against a model over random
 * spawns, despawns, clears and spawn_at calls).
 */
#include "support/weft_test.h"

#include <stdlib.h>

typedef struct rt_world_t {
  weft_world_t *w;
  weft_component_t pos, vel, tag;
} rt_world_t;

typedef struct pos_t {
  float x, y;
} pos_t;

static const int32_t VEL_DEFAULT = 9;

/* A world with tag 42, Pos (8 bytes), Vel (int32) and a tag; Pos
 * requires Vel (default 9). */
static rt_world_t rt_world(uint32_t capacity, uint32_t max_gen) {
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.world_tag = 42;
  cfg.capacity = capacity;
  cfg.max_generation = max_gen;
  rt_world_t r;
  r.w = wt_world_new(&cfg);
  r.pos = wt_register(r.w, "Pos", 8, 4);
  r.vel = wt_register(r.w, "Vel", 4, 4);
  r.tag = wt_register_tag(r.w, "Tag");
  assert_int_equal(weft_component_require(r.w, r.pos, r.vel, &VEL_DEFAULT), 0);
  return r;
}

/* What a save holds of one entity. */
typedef struct saved_t {
  weft_entity_t e;
  uint32_t list; /* which of the lists below */
  pos_t pos;
  int32_t vel;
} saved_t;

static void lists(const rt_world_t *r, weft_component_t out[3][3]) {
  const weft_component_t l[3][3] = {
      {r->pos, 0, 0}, {r->pos, r->tag, 0}, {r->vel, 0, 0}};
  memcpy(out, l, sizeof(l));
}

static void test_spawn_at_round_trip_same_digest(void **state) {
  (void)state;
  enum { N = 2000 };
  rt_world_t a = rt_world(0, 0);
  weft_component_t la[3][3];
  lists(&a, la);
  saved_t *save = calloc(N, sizeof(*save));
  assert_non_null(save);
  wt_rng_t rng = wt_rng(7);
  for (uint32_t i = 0; i < N; i++) {
    saved_t *s = &save[i];
    s->list = wt_below(&rng, 3);
    s->pos = (pos_t){(float)i, (float)(i * 2)};
    const void *vals[] = {s->list < 2 ? (const void *)&s->pos : NULL, NULL};
    if (s->list == 2) {
      int32_t v = (int32_t)i;
      vals[0] = &v;
      assert_int_equal(weft_spawn_with(a.w, la[2], vals, &s->e), 0);
    } else {
      assert_int_equal(weft_spawn_with(a.w, la[s->list], vals, &s->e), 0);
    }
    s->vel = *(const int32_t *)weft_get(a.w, s->e, a.vel);
  }
  /* A save keeps handles and values; the restore spawns them back. */
  rt_world_t b = rt_world(0, 0);
  for (uint32_t i = 0; i < N; i++) {
    const saved_t *s = &save[i];
    const void *vals[] = {s->list < 2 ? (const void *)&s->pos : &s->vel, NULL};
    weft_entity_t got;
    assert_int_equal(weft_spawn_at(b.w, s->e, la[s->list], vals, &got), 0);
    assert_int_equal(got, s->e);
  }
  assert_int_equal(weft_world_digest(b.w), weft_world_digest(a.w));
  for (uint32_t i = 0; i < N; i++)
    assert_int_equal(*(const int32_t *)weft_get(b.w, save[i].e, b.vel),
                     save[i].vel);
  free(save);
  weft_world_destroy(a.w);
  weft_world_destroy(b.w);
}

typedef struct fill_pos_t {
  uint32_t base;
} fill_pos_t;

static void fill_pos(void *user, const weft_iter_t *view, uint32_t first) {
  const fill_pos_t *f = user;
  pos_t *p = view->columns[0];
  for (uint32_t i = 0; i < view->count; i++)
    p[i] = (pos_t){(float)(f->base + first + i), 1.0f};
}

/* Batches: a world with despawned and respawned slots (generations above
 * 1) restored with weft_spawn_batch_at() has the same entities and
 * values; two restores of the same save have the same digest. */
static void test_spawn_at_batch_round_trip(void **state) {
  (void)state;
  enum { N = 1500 };
  rt_world_t a = rt_world(0, 0);
  const weft_component_t lp[] = {a.pos, 0};
  weft_entity_t *h = calloc(N, sizeof(*h));
  assert_non_null(h);
  fill_pos_t f = {0};
  assert_int_equal(weft_spawn_batch(a.w, N, lp, fill_pos, &f, h), 0);
  for (uint32_t i = 0; i < N; i += 3)
    assert_int_equal(weft_despawn(a.w, h[i]), 0);
  f.base = 100000;
  weft_entity_t again[N / 3 + 1];
  assert_int_equal(weft_spawn_batch(a.w, N / 3, lp, fill_pos, &f, again), 0);
  /* The save: every live handle, with its Pos. */
  weft_entity_t *saved = calloc(N, sizeof(*saved));
  pos_t *vals = calloc(N, sizeof(*vals));
  uint32_t n = 0;
  for (uint32_t i = 0; i < N; i++) {
    weft_entity_t e = i % 3 ? h[i] : again[i / 3];
    if (!weft_is_alive(a.w, e))
      continue;
    saved[n] = e;
    vals[n] = *(const pos_t *)weft_get(a.w, e, a.pos);
    n++;
  }
  uint64_t digest = 0;
  for (int k = 0; k < 2; k++) {
    rt_world_t b = rt_world(0, 0);
    weft_entity_t *out = calloc(n, sizeof(*out));
    assert_int_equal(weft_spawn_batch_at(b.w, n, saved, lp, NULL, NULL, out),
                     0);
    for (uint32_t i = 0; i < n; i++) {
      assert_int_equal(out[i], saved[i]);
      assert_int_equal(weft_set(b.w, saved[i], b.pos, &vals[i]), 0);
      assert_int_equal(*(const int32_t *)weft_get(b.w, saved[i], b.vel),
                       VEL_DEFAULT);
    }
    assert_int_equal(weft_world_count(b.w), weft_world_count(a.w));
    wt_check_slot_invariant(b.w);
    if (k == 0)
      digest = weft_world_digest(b.w);
    else
      assert_int_equal(weft_world_digest(b.w), digest);
    free(out);
    weft_world_destroy(b.w);
  }
  free(saved);
  free(vals);
  free(h);
  weft_world_destroy(a.w);
}

/* The fill callback sees its rows, and spawns it stages never take one of
 * the batch's slots. */
static void fill_and_spawn(void *user, const weft_iter_t *view,
                           uint32_t first) {
  weft_world_t *w = user;
  (void)first;
  for (uint32_t i = 0; i < view->count; i++) {
    weft_entity_t e;
    assert_int_equal(weft_spawn(w, &e), 0);
  }
}

static void test_spawn_at_batch_fill_spawns_elsewhere(void **state) {
  (void)state;
  rt_world_t r = rt_world(0, 0);
  /* Slots 0..9 free on the free list, then a batch claims 2, 5 and 30. */
  weft_entity_t e[10];
  for (int i = 0; i < 10; i++)
    e[i] = wt_spawn(r.w);
  for (int i = 0; i < 10; i++)
    assert_int_equal(weft_despawn(r.w, e[i]), 0);
  const weft_entity_t hs[] = {wt_handle(2, 3, 0), wt_handle(5, 2, 0),
                              wt_handle(30, 1, 0)};
  const weft_component_t lp[] = {r.pos, 0};
  assert_int_equal(
      weft_spawn_batch_at(r.w, 3, hs, lp, fill_and_spawn, r.w, NULL), 0);
  assert_int_equal(weft_world_count(r.w), 6);
  for (int i = 0; i < 3; i++)
    assert_true(weft_is_alive(r.w, (hs[i] & ~(0xffull << 56)) |
                                       ((weft_entity_t)42 << 56)));
  wt_check_slot_invariant(r.w);
  weft_world_destroy(r.w);
}

/* Expects @p rc == @p code with the digest unchanged. */
#define EXPECT_REJECT(w, call, code)                                           \
  do {                                                                         \
    uint64_t d0_ = weft_world_digest(w);                                       \
    weft_world_stats_t s0_ = wt_stats(w);                                      \
    assert_int_equal((call), (code));                                          \
    assert_int_equal(weft_world_digest(w), d0_);                               \
    assert_int_equal(wt_stats(w).alive, s0_.alive);                            \
    assert_int_equal(wt_stats(w).archetypes, s0_.archetypes);                  \
  } while (0)

static void test_spawn_at_rejections_change_nothing(void **state) {
  (void)state;
  rt_world_t r = rt_world(100, 3);
  const weft_component_t lp[] = {r.pos, 0};
  weft_entity_t live = wt_spawn_with(r.w, lp, NULL);
  weft_entity_t dead = wt_spawn(r.w);
  assert_int_equal(weft_despawn(r.w, dead), 0);
  /* Slot 1 retires: generations 1..3 used up. */
  for (int i = 0; i < 2; i++) {
    weft_entity_t x = wt_spawn(r.w);
    assert_int_equal(weft_entity_index(x), 1);
    assert_int_equal(weft_despawn(r.w, x), 0);
  }
  assert_int_equal(wt_stats(r.w).retired, 1);
  weft_entity_t p;
  EXPECT_REJECT(r.w, weft_spawn_at(r.w, wt_handle(1, 3, 42), lp, NULL, &p),
                WEFT_ESTALE);
  EXPECT_REJECT(r.w, weft_spawn_at(r.w, live, lp, NULL, &p), WEFT_EEXIST);
  EXPECT_REJECT(r.w, weft_spawn_at(r.w, wt_handle(5, 0, 42), lp, NULL, &p),
                WEFT_EINVAL);
  EXPECT_REJECT(r.w, weft_spawn_at(r.w, wt_handle(5, 4, 42), lp, NULL, &p),
                WEFT_EINVAL);
  EXPECT_REJECT(r.w, weft_spawn_at(r.w, wt_handle(100, 1, 42), lp, NULL, &p),
                WEFT_EINVAL);
  const weft_component_t bad[] = {999, 0};
  EXPECT_REJECT(r.w, weft_spawn_at(r.w, wt_handle(5, 1, 42), bad, NULL, &p),
                WEFT_ENOCOMP);
  const weft_component_t twice[] = {r.pos, r.pos, 0};
  EXPECT_REJECT(r.w, weft_spawn_at(r.w, wt_handle(5, 1, 42), twice, NULL, &p),
                WEFT_EINVAL);
  /* A generation not newer than the slot's last: the handle a user may
   * still hold, or an older one. */
  for (int i = 0; i < 2; i++) {
    weft_entity_t d2 = wt_spawn(r.w);
    assert_int_equal(weft_entity_index(d2), 2);
    assert_int_equal(weft_despawn(r.w, d2), 0);
  }
  EXPECT_REJECT(r.w, weft_spawn_at(r.w, wt_handle(2, 2, 42), lp, NULL, &p),
                WEFT_ESTALE);
  EXPECT_REJECT(r.w, weft_spawn_at(r.w, wt_handle(2, 1, 42), lp, NULL, &p),
                WEFT_ESTALE);
  /* Batches: one bad handle, or a slot named twice, stops all of them. */
  const weft_entity_t good_bad[] = {wt_handle(10, 1, 42), wt_handle(11, 1, 42),
                                    live};
  EXPECT_REJECT(r.w,
                weft_spawn_batch_at(r.w, 3, good_bad, lp, NULL, NULL, NULL),
                WEFT_EEXIST);
  const weft_entity_t dup[] = {wt_handle(10, 1, 42), wt_handle(12, 1, 42),
                               wt_handle(10, 2, 42)};
  EXPECT_REJECT(r.w, weft_spawn_batch_at(r.w, 3, dup, lp, NULL, NULL, NULL),
                WEFT_EINVAL);
  EXPECT_REJECT(r.w, weft_spawn_batch_at(r.w, 1, NULL, lp, NULL, NULL, NULL),
                WEFT_EINVAL);
  /* Inside a scope: the batch refuses; a single spawn_at stages, and a
   * second one of the same slot sees it taken. */
  weft_world_defer_begin(r.w);
  EXPECT_REJECT(r.w,
                weft_spawn_batch_at(r.w, 1, good_bad, lp, NULL, NULL, NULL),
                WEFT_EBUSY);
  assert_int_equal(weft_spawn_at(r.w, wt_handle(20, 2, 42), lp, NULL, &p), 0);
  assert_false(weft_is_alive(r.w, p));
  assert_int_equal(weft_spawn_at(r.w, wt_handle(20, 3, 42), lp, NULL, NULL),
                   WEFT_EEXIST);
  assert_int_equal(weft_world_defer_end(r.w), 0);
  assert_true(weft_is_alive(r.w, p));
  assert_int_equal(p, wt_handle(20, 2, 42));
  assert_int_equal(*(const int32_t *)weft_get(r.w, p, r.vel), VEL_DEFAULT);
  wt_check_slot_invariant(r.w);
  weft_world_destroy(r.w);
}

static void test_spawn_at_full_world(void **state) {
  (void)state;
  rt_world_t r = rt_world(4, 0);
  for (uint32_t i = 0; i < 4; i++)
    assert_int_equal(
        weft_spawn_at(r.w, wt_handle(3 - i, 5, 42), NULL, NULL, NULL), 0);
  wt_check_slot_invariant(r.w);
  weft_entity_t e;
  assert_int_equal(weft_spawn(r.w, &e), WEFT_EFULL);
  assert_int_equal(weft_despawn(r.w, wt_handle(2, 5, 42)), 0);
  assert_int_equal(weft_spawn(r.w, &e), 0);
  assert_int_equal(e, wt_handle(2, 6, 42));
  weft_world_destroy(r.w);
}

/* The model of one slot. */
typedef struct slot_model_t {
  bool live;
  uint32_t gen; /* last generation issued, 0: never */
} slot_model_t;

/*
 * Random spawns, despawns, clears and spawn_at calls (valid and not)
 * against a model of the slots: spawns never return a live slot, always
 * a generation newer than the slot's last; spawn_at succeeds exactly when
 * the model says the slot is free and the generation newer; in the end
 * every free slot can still be issued.
 */
static void test_spawn_at_free_list_matches_model(void **state) {
  (void)state;
  enum { CAP = 400, OPS = 20000 };
  rt_world_t r = rt_world(CAP, 0);
  slot_model_t *m = calloc(CAP, sizeof(*m));
  assert_non_null(m);
  uint32_t live = 0;
  wt_rng_t rng = wt_rng(2026);
  for (uint32_t op = 0; op < OPS; op++) {
    uint32_t k = wt_below(&rng, 100);
    if (k < 35 && live < CAP) {
      weft_entity_t e;
      assert_int_equal(weft_spawn(r.w, &e), 0);
      uint32_t s = weft_entity_index(e);
      assert_true(s < CAP);
      assert_false(m[s].live);
      assert_int_equal(weft_entity_generation(e), m[s].gen + 1);
      m[s] = (slot_model_t){true, m[s].gen + 1};
      live++;
    } else if (k < 65 && live) {
      uint32_t s = wt_below(&rng, CAP);
      while (!m[s].live)
        s = (s + 1) % CAP;
      assert_int_equal(weft_despawn(r.w, wt_handle(s, m[s].gen, 42)), 0);
      m[s].live = false;
      live--;
    } else if (k < 66) {
      assert_int_equal(weft_world_clear(r.w), 0);
      for (uint32_t s = 0; s < CAP; s++)
        m[s].live = false;
      live = 0;
    } else {
      uint32_t s = wt_below(&rng, CAP);
      uint32_t g = m[s].gen + wt_below(&rng, 3); /* may be stale */
      bool ok = !m[s].live && g > m[s].gen && g >= 1;
      uint64_t d0 = weft_world_digest(r.w);
      int rc = weft_spawn_at(r.w, wt_handle(s, g, 42), NULL, NULL, NULL);
      if (ok) {
        assert_int_equal(rc, 0);
        m[s] = (slot_model_t){true, g};
        live++;
      } else {
        assert_int_not_equal(rc, 0);
        assert_int_equal(weft_world_digest(r.w), d0);
      }
    }
    if (op % 1000 == 0)
      wt_check_slot_invariant(r.w);
    assert_int_equal(weft_world_count(r.w), live);
  }
  for (uint32_t s = 0; s < CAP; s++)
    assert_int_equal(weft_is_alive(r.w, wt_handle(s, m[s].gen, 42)), m[s].live);
  /* Every free slot is issued exactly once by filling the world. */
  while (live < CAP) {
    weft_entity_t e;
    assert_int_equal(weft_spawn(r.w, &e), 0);
    uint32_t s = weft_entity_index(e);
    assert_false(m[s].live);
    assert_int_equal(weft_entity_generation(e), m[s].gen + 1);
    m[s].live = true;
    live++;
  }
  weft_entity_t e;
  assert_int_equal(weft_spawn(r.w, &e), WEFT_EFULL);
  free(m);
  weft_world_destroy(r.w);
}

/* Counts spawn events. */
static void on_spawn(weft_world_t *w, const weft_event_t *ev, void *user) {
  (void)w;
  (void)ev;
  ++*(uint32_t *)user;
}

static void test_spawn_at_with_observers(void **state) {
  (void)state;
  rt_world_t r = rt_world(0, 0);
  uint32_t spawns = 0;
  weft_observer_desc_t od = {0};
  od.events = WEFT_EVENT_SPAWN;
  od.fn = on_spawn;
  od.user = &spawns;
  weft_observer_t *obs = NULL;
  assert_int_equal(weft_observer_create(r.w, &od, &obs), 0);
  pos_t pv = {1, 2};
  const weft_component_t lp[] = {r.pos, 0};
  const void *vals[] = {&pv};
  weft_entity_t e;
  assert_int_equal(weft_spawn_at(r.w, wt_handle(7, 4, 9), lp, vals, &e), 0);
  assert_int_equal(e, wt_handle(7, 4, 42)); /* this world's tag */
  assert_true(weft_is_alive(r.w, e));
  assert_int_equal(spawns, 1);
  const pos_t *got = weft_get(r.w, e, r.pos);
  assert_true(got->x == 1 && got->y == 2);
  assert_int_equal(*(const int32_t *)weft_get(r.w, e, r.vel), VEL_DEFAULT);
  weft_observer_destroy(obs);
  wt_check_slot_invariant(r.w);
  weft_world_destroy(r.w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_spawn_at_round_trip_same_digest),
      cmocka_unit_test(test_spawn_at_batch_round_trip),
      cmocka_unit_test(test_spawn_at_batch_fill_spawns_elsewhere),
      cmocka_unit_test(test_spawn_at_rejections_change_nothing),
      cmocka_unit_test(test_spawn_at_full_world),
      cmocka_unit_test(test_spawn_at_free_list_matches_model),
      cmocka_unit_test(test_spawn_at_with_observers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
