/* SPDX-License-Identifier: MIT */
/* Unit tests for the world: configuration, stats, reserve, clear, tags. */
#include "support/weft_test.h"

#include <stdlib.h>

typedef struct wvalue_t {
  uint64_t id;
  uint32_t salt;
  uint32_t pad;
} wvalue_t;

static void test_world_create_null_config_uses_defaults(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_world_stats_t s = wt_stats(w);
  assert_int_equal(s.capacity, WEFT_ENTITY_MAX);
  assert_int_equal(s.chunk_size, WEFT_CHUNK_SIZE_DEFAULT);
  assert_int_equal(s.alive, 0);
  assert_int_equal(s.retired, 0);
  assert_int_equal(s.remaining, WEFT_ENTITY_MAX);
  assert_int_equal(s.components, 0);
  assert_int_equal(s.queries, 0);
  assert_int_equal(s.chunks_live, 0);
  assert_int_equal(s.spawns, 0);
  assert_int_equal(s.despawns, 0);
  assert_int_equal(s.stale, 0);
  assert_int_equal(weft_world_count(w), 0);
  assert_int_equal(weft_component_count(w), 0);
  uint8_t tag = weft_world_tag(w);
  assert_true(tag >= 1);
  wt_check_slot_invariant(w);
  weft_world_destroy(w);
}

static void test_world_zeroed_config_equals_null_config(void **state) {
  (void)state;
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  weft_world_t *a = wt_world_new(&cfg);
  weft_world_t *b = wt_world_new(NULL);
  weft_world_stats_t sa = wt_stats(a), sb = wt_stats(b);
  assert_int_equal(sa.capacity, sb.capacity);
  assert_int_equal(sa.chunk_size, sb.chunk_size);
  assert_int_equal(sa.remaining, sb.remaining);
  assert_int_equal(weft_world_checked(a), weft_world_checked(b));
  weft_world_destroy(a);
  weft_world_destroy(b);
}

static void test_world_create_rejects_bad_chunk_size(void **state) {
  (void)state;
  const uint32_t bad[] = {1u,
                          1000u,
                          2048u,
                          WEFT_CHUNK_SIZE_MIN / 2,
                          4097u,
                          5000u,
                          12288u,
                          WEFT_CHUNK_SIZE_MAX - 1,
                          3u * 4096u,
                          WEFT_CHUNK_SIZE_MAX * 2,
                          WEFT_CHUNK_SIZE_MAX + 4096,
                          1u << 31,
                          0xffffffffu};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    weft_world_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.chunk_size = bad[i];
    weft_world_t *w = NULL;
    assert_int_equal(weft_world_create(&cfg, &w), WEFT_EINVAL);
  }
}

static void test_world_create_accepts_valid_chunk_sizes(void **state) {
  (void)state;
  for (uint32_t size = WEFT_CHUNK_SIZE_MIN; size <= WEFT_CHUNK_SIZE_MAX;
       size *= 2) {
    weft_world_t *w = wt_world_sized(0, size);
    assert_int_equal(wt_stats(w).chunk_size, size);
    weft_world_destroy(w);
  }
}

static void test_world_create_rejects_bad_max_generation(void **state) {
  (void)state;
  const uint32_t bad[] = {WEFT_GENERATION_MAX + 1u, WEFT_GENERATION_MAX * 2u,
                          0x80000000u, 0xffffffffu};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    weft_world_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.max_generation = bad[i];
    weft_world_t *w = NULL;
    assert_int_equal(weft_world_create(&cfg, &w), WEFT_EINVAL);
  }
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.max_generation = WEFT_GENERATION_MAX;
  weft_world_t *w = wt_world_new(&cfg);
  weft_world_destroy(w);
}

static void test_world_create_rejects_bad_capacity(void **state) {
  (void)state;
  const uint32_t bad[] = {WEFT_ENTITY_MAX + 1u, 0xffffffffu};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    weft_world_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.capacity = bad[i];
    weft_world_t *w = NULL;
    assert_int_equal(weft_world_create(&cfg, &w), WEFT_EINVAL);
  }
  weft_world_t *w = wt_world_sized(17, 0);
  weft_world_stats_t s = wt_stats(w);
  assert_int_equal(s.capacity, 17);
  assert_int_equal(s.remaining, 17);
  weft_world_destroy(w);
}

static void test_world_destroy_null_is_noop(void **state) {
  (void)state;
  weft_world_destroy(NULL);
  /* Still able to create and destroy a world afterwards. */
  weft_world_t *w = wt_world_new(NULL);
  weft_world_destroy(w);
}

static void test_world_tag_explicit_and_automatic(void **state) {
  (void)state;
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.world_tag = 77;
  weft_world_t *w = wt_world_new(&cfg);
  assert_int_equal(weft_world_tag(w), 77);
  weft_entity_t e = wt_spawn(w);
  assert_int_equal(weft_entity_tag(e), 77);
  weft_world_destroy(w);

  /* Automatic tags come from a counter: two worlds created one after the
   * other get different non-zero tags, stamped into their handles. */
  weft_world_t *a = wt_world_new(NULL);
  weft_world_t *b = wt_world_new(NULL);
  uint8_t ta = weft_world_tag(a), tb = weft_world_tag(b);
  assert_true(ta >= 1);
  assert_true(tb >= 1);
  assert_int_not_equal(ta, tb);
  weft_entity_t ea = wt_spawn(a), eb = wt_spawn(b);
  assert_int_equal(weft_entity_tag(ea), ta);
  assert_int_equal(weft_entity_tag(eb), tb);
  weft_world_destroy(a);
  weft_world_destroy(b);
}

static void test_world_checked_default_follows_ndebug(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
#ifdef NDEBUG
  assert_false(weft_world_checked(w));
#else
  assert_true(weft_world_checked(w));
#endif
  weft_world_destroy(w);
}

static void test_world_reserve_grows_index(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_world_stats_t s0 = wt_stats(w);
  /* Ask for more than whatever a fresh world pre-reserves. */
  const uint32_t n = s0.slots_reserved + 100000u;
  assert_int_equal(weft_world_reserve(w, n), WEFT_OK);
  weft_world_stats_t s1 = wt_stats(w);
  assert_true(s1.slots_reserved >= n);
  assert_true(s1.index_bytes > s0.index_bytes);
  assert_int_equal(s1.alive, 0);
  wt_check_slot_invariant(w);

  /* Reserving less than what is already reserved changes nothing. */
  assert_int_equal(weft_world_reserve(w, n / 2), WEFT_OK);
  assert_int_equal(wt_stats(w).slots_reserved, s1.slots_reserved);
  assert_int_equal(wt_stats(w).index_bytes, s1.index_bytes);

  /* Spawning the reserved number of entities allocates no index memory. */
  for (uint32_t i = 0; i < n; i++) {
    weft_entity_t e;
    assert_int_equal(weft_spawn(w, &e), WEFT_OK);
  }
  weft_world_stats_t s2 = wt_stats(w);
  assert_int_equal(s2.alive, n);
  assert_int_equal(s2.index_bytes, s1.index_bytes);
  assert_int_equal(s2.slots_reserved, s1.slots_reserved);
  assert_true(s2.slots_used >= n);
  assert_true(s2.slots_used <= s2.slots_reserved);
  weft_world_destroy(w);
}

static void test_world_reserve_beyond_capacity_fails(void **state) {
  (void)state;
  weft_world_t *w = wt_world_sized(100, 0);
  weft_world_stats_t s0 = wt_stats(w);
  assert_int_equal(weft_world_reserve(w, 101), WEFT_EFULL);
  assert_int_equal(weft_world_reserve(w, 0xffffffffu), WEFT_EFULL);
  weft_world_stats_t s1 = wt_stats(w);
  assert_int_equal(s1.slots_reserved, s0.slots_reserved);
  assert_int_equal(s1.index_bytes, s0.index_bytes);
  const char *msg = weft_world_last_error(w);
  assert_non_null(msg);
  assert_true(strlen(msg) > 0);

  assert_int_equal(weft_world_reserve(w, 100), WEFT_OK);
  assert_true(wt_stats(w).slots_reserved >= 100);
  weft_world_destroy(w);
}

/* Counts the rows a query yields. */
static uint32_t count_query(const weft_query_t *q) {
  weft_iter_t it;
  uint32_t n = 0;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    assert_true(it.count > 0);
    n += it.count;
  }
  return n;
}

static void test_world_clear_makes_handles_stale(void **state) {
  (void)state;
  const uint32_t n = 300;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", sizeof(wvalue_t), 0);
  weft_component_t tag = wt_register_tag(w, "tag");
  weft_entity_t *old = calloc(n, sizeof *old);
  assert_non_null(old);
  for (uint32_t i = 0; i < n; i++) {
    wvalue_t v = {i, i * 7u, 0};
    const weft_component_t comps[] = {a, (i % 2) ? tag : 0, 0};
    const void *vals[] = {&v, NULL};
    old[i] = wt_spawn_with(w, comps, vals);
  }
  weft_world_clear(w);
  weft_world_stats_t s = wt_stats(w);
  assert_int_equal(weft_world_count(w), 0);
  assert_int_equal(s.alive, 0);
  wt_check_slot_invariant(w);
  for (uint32_t i = 0; i < n; i++) {
    assert_false(weft_is_alive(w, old[i]));
    assert_null(weft_get(w, old[i], a));
    assert_false(weft_has(w, old[i], a));
  }
  uint64_t stale0 = wt_stats(w).stale;
  for (uint32_t i = 0; i < n; i++) {
    assert_int_equal(weft_despawn(w, old[i]), WEFT_ESTALE);
  }
  assert_int_equal(wt_stats(w).stale, stale0 + n);

  /* New entities get handles that were never issued before. */
  for (uint32_t i = 0; i < n; i++) {
    weft_entity_t e = wt_spawn(w);
    for (uint32_t j = 0; j < n; j++) {
      assert_true(e != old[j]);
    }
  }
  assert_int_equal(weft_world_count(w), n);
  free(old);
  weft_world_destroy(w);
}

static void test_world_clear_keeps_memory_and_queries(void **state) {
  (void)state;
  const uint32_t n = 2000;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", sizeof(wvalue_t), 0);
  weft_component_t b = wt_register(w, "b", sizeof(uint32_t), 0);
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = a;
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(w, &qd, &q), WEFT_OK);

  const weft_component_t comps[] = {a, b, 0};
  assert_int_equal(weft_spawn_batch(w, n, comps, NULL, NULL, NULL), WEFT_OK);
  assert_int_equal(weft_query_count(q), n);
  weft_world_stats_t before = wt_stats(w);
  assert_true(before.chunks_live > 0);

  weft_world_clear(w);
  weft_world_stats_t after = wt_stats(w);
  assert_int_equal(after.alive, 0);
  assert_int_equal(after.chunks_live, 0);
  assert_int_equal(after.chunk_bytes, before.chunk_bytes);
  assert_int_equal(after.chunks_spare,
                   before.chunks_spare + before.chunks_live);
  assert_int_equal(after.components, before.components);
  assert_int_equal(after.queries, 1);
  assert_int_equal(after.archetypes, before.archetypes);
  assert_int_equal(weft_query_count(q), 0);
  assert_int_equal(count_query(q), 0);

  /* Components survive: lookup still finds them. */
  weft_component_t found = 0;
  assert_int_equal(weft_component_lookup(w, "a", &found), WEFT_OK);
  assert_int_equal(found, a);

  /* New spawns work and the surviving query sees exactly them. */
  const uint32_t m = 123;
  weft_entity_t fresh[123];
  for (uint32_t i = 0; i < m; i++) {
    wvalue_t v = {1000u + i, i, 0};
    const void *vals[] = {&v, NULL};
    fresh[i] = wt_spawn_with(w, comps, vals);
  }
  assert_int_equal(weft_query_count(q), m);
  weft_iter_t it;
  uint32_t seen = 0;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    const wvalue_t *col = it.columns[0];
    assert_non_null(col);
    for (uint32_t r = 0; r < it.count; r++) {
      uint32_t k = (uint32_t)(col[r].id - 1000u);
      assert_true(k < m);
      assert_true(it.entities[r] == fresh[k]);
      seen++;
    }
  }
  assert_int_equal(seen, m);
  /* Re-spawning into spare chunks does not grow chunk memory. */
  assert_int_equal(wt_stats(w).chunk_bytes, before.chunk_bytes);
  weft_query_destroy(q);
  weft_world_destroy(w);
}

static void test_world_clear_retires_exhausted_slots(void **state) {
  (void)state;
  const uint32_t cap = 4, maxgen = 2;
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.capacity = cap;
  cfg.max_generation = maxgen;
  weft_world_t *w = wt_world_new(&cfg);
  weft_entity_t issued[16];
  uint32_t n_issued = 0;
  /* Each clear kills every live entity; a slot whose generation reached
   * max_generation must retire rather than reissue a handle. */
  for (uint32_t round = 0; round < maxgen; round++) {
    for (uint32_t i = 0; i < cap; i++) {
      weft_entity_t e;
      assert_int_equal(weft_spawn(w, &e), WEFT_OK);
      assert_true(weft_entity_generation(e) >= 1);
      assert_true(weft_entity_generation(e) <= maxgen);
      for (uint32_t j = 0; j < n_issued; j++) {
        assert_true(e != issued[j]);
      }
      issued[n_issued++] = e;
      wt_check_slot_invariant(w);
    }
    weft_world_clear(w);
    wt_check_slot_invariant(w);
  }
  weft_world_stats_t s = wt_stats(w);
  assert_int_equal(s.alive, 0);
  assert_int_equal(s.retired, cap);
  assert_int_equal(s.remaining, 0);
  weft_entity_t e = WEFT_ENTITY_NULL;
  assert_int_equal(weft_spawn(w, &e), WEFT_ERETIRED);
  for (uint32_t j = 0; j < n_issued; j++) {
    assert_false(weft_is_alive(w, issued[j]));
  }
  weft_world_destroy(w);
}

/* After a clear, slots come back in index order, skipping retired ones,
 * each with its generation advanced; a despawn after the clear is reused
 * first. Two worlds driven the same way issue identical handles. */
static void test_world_clear_reissues_slots_in_order(void **state) {
  (void)state;
  weft_world_config_t cfg = {.max_generation = 3, .world_tag = 9};
  weft_world_t *w = wt_world_new(&cfg);
  enum { N = 12 };
  weft_entity_t e[N], again[N];
  for (uint32_t i = 0; i < N; i++)
    assert_int_equal(weft_spawn(w, &e[i]), 0);
  /* Slots 3 and 7 reach generation 3 (the last one) before the clear. */
  uint32_t last_gen[2] = {3, 7};
  for (uint32_t k = 0; k < 2; k++) {
    uint32_t s = last_gen[k];
    for (uint32_t g = 2; g <= 3; g++) {
      assert_int_equal(weft_despawn(w, e[s]), 0);
      assert_int_equal(weft_spawn(w, &e[s]), 0);
      assert_int_equal(weft_entity_index(e[s]), s);
      assert_int_equal(weft_entity_generation(e[s]), g);
    }
  }
  weft_world_clear(w);
  assert_int_equal(wt_stats(w).retired, 2);
  uint32_t want = 0;
  for (uint32_t i = 0; i < N - 2; i++, want++) {
    if (want == 3 || want == 7)
      want++;
    assert_int_equal(weft_spawn(w, &again[i]), 0);
    assert_int_equal(weft_entity_index(again[i]), want);
    assert_int_equal(weft_entity_generation(again[i]), 2);
    assert_false(weft_is_alive(w, e[want]));
  }
  /* The sweep is spent: the next spawn is fresh, unless a slot was freed. */
  assert_int_equal(weft_despawn(w, again[4]), 0);
  weft_entity_t r;
  assert_int_equal(weft_spawn(w, &r), 0);
  assert_int_equal(weft_entity_index(r), weft_entity_index(again[4]));
  assert_int_equal(weft_spawn(w, &r), 0);
  assert_int_equal(weft_entity_index(r), N);
  wt_check_slot_invariant(w);
  weft_world_destroy(w);
}

static void test_world_last_error_describes_failure(void **state) {
  (void)state;
  weft_world_t *w = wt_world_sized(1, 0);
  wt_register(w, "dup", 4, 0);
  weft_component_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "dup";
  d.size = 4;
  weft_component_t id;
  assert_int_equal(weft_component_register(w, &d, &id), WEFT_EEXIST);
  const char *m1 = weft_world_last_error(w);
  assert_non_null(m1);
  assert_true(strlen(m1) > 0);

  wt_spawn(w);
  weft_entity_t e;
  assert_int_equal(weft_spawn(w, &e), WEFT_EFULL);
  const char *m2 = weft_world_last_error(w);
  assert_non_null(m2);
  assert_true(strlen(m2) > 0);
  weft_world_destroy(w);
}

/* weft_world_fail() records "NAME: message" (printf-formatted, cut to the
 * buffer) and returns the code; a NULL world or format records nothing. */
static void test_world_fail_records_a_message(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  assert_int_equal(weft_world_fail(w, WEFT_EINVAL, "cell %d of %s", 7, "x"),
                   WEFT_EINVAL);
  assert_string_equal(weft_world_last_error(w), "WEFT_EINVAL: cell 7 of x");
  assert_int_equal(weft_world_fail(w, WEFT_ENOMEM, NULL), WEFT_ENOMEM);
  assert_string_equal(weft_world_last_error(w), "WEFT_EINVAL: cell 7 of x");
  assert_int_equal(weft_world_fail(NULL, WEFT_EFULL, "gone"), WEFT_EFULL);
  char big[2048];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  assert_int_equal(weft_world_fail(w, WEFT_EFULL, "%s", big), WEFT_EFULL);
  const char *m = weft_world_last_error(w);
  assert_true(strncmp(m, "WEFT_EFULL: aaaa", 16) == 0);
  assert_true(strlen(m) < sizeof big - 1); /* cut, terminated */
  weft_world_destroy(w);
}

static void test_world_stats_track_lifecycle(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  wt_rng_t rng = wt_rng(11);
  weft_component_t a = wt_register(w, "a", 8, 0);
  weft_component_t b = wt_register(w, "b", 16, 0);
  assert_int_equal(wt_stats(w).components, 2);

  weft_entity_t live[256];
  uint32_t n_live = 0;
  uint64_t spawns = 0, despawns = 0;
  for (int step = 0; step < 2000; step++) {
    if (n_live < 256 && (n_live == 0 || wt_chance(&rng, 3, 5))) {
      weft_component_t comps[3] = {0, 0, 0};
      uint32_t k = 0;
      if (wt_chance(&rng, 1, 2)) {
        comps[k++] = a;
      }
      if (wt_chance(&rng, 1, 2)) {
        comps[k++] = b;
      }
      live[n_live++] = wt_spawn_with(w, comps, NULL);
      spawns++;
    } else {
      uint32_t i = wt_below(&rng, n_live);
      assert_int_equal(weft_despawn(w, live[i]), WEFT_OK);
      live[i] = live[--n_live];
      despawns++;
    }
    if (step % 97 == 0) {
      weft_world_stats_t s = wt_stats(w);
      assert_int_equal(s.alive, n_live);
      assert_int_equal(s.spawns, spawns);
      assert_int_equal(s.despawns, despawns);
      assert_true(s.slots_used >= n_live);
      wt_check_slot_invariant(w);
    }
  }
  /* Batch spawns count every entity. */
  const weft_component_t ab[] = {a, b, 0};
  assert_int_equal(weft_spawn_batch(w, 50, ab, NULL, NULL, NULL), WEFT_OK);
  spawns += 50;
  weft_world_stats_t s = wt_stats(w);
  assert_int_equal(s.spawns, spawns);
  assert_int_equal(s.despawns, despawns);
  assert_int_equal(s.alive, n_live + 50);

  /* Query count follows create/destroy. */
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = a;
  weft_query_t *q1 = NULL, *q2 = NULL;
  assert_int_equal(weft_query_create(w, &qd, &q1), WEFT_OK);
  assert_int_equal(wt_stats(w).queries, 1);
  qd.include[0] = b;
  assert_int_equal(weft_query_create(w, &qd, &q2), WEFT_OK);
  assert_int_equal(wt_stats(w).queries, 2);
  weft_query_destroy(q1);
  assert_int_equal(wt_stats(w).queries, 1);
  weft_query_destroy(q2);
  assert_int_equal(wt_stats(w).queries, 0);
  weft_query_destroy(NULL);
  weft_world_destroy(w);
}

/* After a reserve, despawning and respawning that many entities allocates
 * nothing (the free stack was reserved too), and slots come back LIFO. */
static void test_world_reserve_covers_despawns(void **state) {
  (void)state;
  enum { N = 20000 }; /* more than the free stack's first growth step */
  weft_world_t *w = wt_world_new(NULL);
  assert_int_equal(weft_world_reserve(w, N), WEFT_OK);
  weft_entity_t *es = malloc(N * sizeof *es);
  weft_entity_t *again = malloc(N * sizeof *again);
  assert_non_null(es);
  assert_non_null(again);
  for (uint32_t i = 0; i < N; i++)
    es[i] = wt_spawn(w);
  uint64_t index_bytes = wt_stats(w).index_bytes;
  const uint64_t *allocated = wt_thread_allocated();
  uint64_t before = allocated ? *allocated : 0;
  for (uint32_t i = 0; i < N; i++)
    assert_int_equal(weft_despawn(w, es[i]), WEFT_OK);
  for (uint32_t i = 0; i < N; i++)
    assert_int_equal(weft_spawn(w, &again[i]), WEFT_OK);
  if (allocated)
    assert_int_equal(*allocated - before, 0);
  assert_int_equal(wt_stats(w).index_bytes, index_bytes);
  for (uint32_t i = 0; i < N; i++) {
    /* The last slot freed is the first one issued, one generation on. */
    weft_entity_t old = es[N - 1 - i];
    assert_int_equal(weft_entity_index(again[i]), weft_entity_index(old));
    assert_int_equal(weft_entity_generation(again[i]),
                     weft_entity_generation(old) + 1);
    assert_false(weft_is_alive(w, old));
    assert_true(weft_is_alive(w, again[i]));
  }
  wt_check_slot_invariant(w);
  free(es);
  free(again);
  weft_world_destroy(w);
}

/* Per-entity memory beyond the component bytes (handle column, index
 * record, chunk headers, padding) stays within 16 bytes at scale. */
static void test_world_memory_overhead_per_entity(void **state) {
  (void)state;
  enum { N = 200000 };
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t comps[3] = {wt_register(w, "Position", 12, 4),
                               wt_register(w, "Velocity", 12, 4),
                               WEFT_COMPONENT_NONE};
  assert_int_equal(weft_spawn_batch(w, N, comps, NULL, NULL, NULL), WEFT_OK);
  weft_world_stats_t s = wt_stats(w);
  assert_int_equal(s.alive, N);
  double per = (double)(s.chunk_bytes + s.index_bytes) / N - 24.0;
  assert_true(per > 8.0); /* the handle column alone is 8 bytes */
  assert_true(per <= 16.0);
  weft_world_destroy(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_world_create_null_config_uses_defaults),
      cmocka_unit_test(test_world_zeroed_config_equals_null_config),
      cmocka_unit_test(test_world_create_rejects_bad_chunk_size),
      cmocka_unit_test(test_world_create_accepts_valid_chunk_sizes),
      cmocka_unit_test(test_world_create_rejects_bad_max_generation),
      cmocka_unit_test(test_world_create_rejects_bad_capacity),
      cmocka_unit_test(test_world_destroy_null_is_noop),
      cmocka_unit_test(test_world_tag_explicit_and_automatic),
      cmocka_unit_test(test_world_checked_default_follows_ndebug),
      cmocka_unit_test(test_world_reserve_grows_index),
      cmocka_unit_test(test_world_reserve_beyond_capacity_fails),
      cmocka_unit_test(test_world_clear_makes_handles_stale),
      cmocka_unit_test(test_world_clear_keeps_memory_and_queries),
      cmocka_unit_test(test_world_clear_retires_exhausted_slots),
      cmocka_unit_test(test_world_clear_reissues_slots_in_order),
      cmocka_unit_test(test_world_last_error_describes_failure),
      cmocka_unit_test(test_world_fail_records_a_message),
      cmocka_unit_test(test_world_stats_track_lifecycle),
      cmocka_unit_test(test_world_reserve_covers_despawns),
      cmocka_unit_test(test_world_memory_overhead_per_entity),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
