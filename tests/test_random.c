/* SPDX-License-Identifier: MIT */
/* Unit tests for randomness: xoshiro256**, named streams, counter draws. */
#include "support/weft_test.h"

#include <stdlib.h>

#include <weft/random.h>

/* --- references written from the papers, independent of the library ----- */

/* xoshiro256** as in Blackman & Vigna, "Scrambled linear pseudorandom
 * number generators" (prng.di.unimi.it/xoshiro256starstar.c). */
static uint64_t ref_rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

static uint64_t ref_xoshiro(uint64_t s[4]) {
  const uint64_t result = ref_rotl(s[1] * 5, 7) * 9;
  const uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = ref_rotl(s[3], 45);
  return result;
}

/* splitmix64 (prng.di.unimi.it/splitmix64.c). */
static uint64_t ref_splitmix(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

static int popcount64(uint64_t x) {
  int n = 0;
  for (; x; x &= x - 1)
    n++;
  return n;
}

static weft_rng_t *stream(weft_world_t *w, const char *name) {
  weft_rng_t *rng = NULL;
  assert_int_equal(weft_random_stream(w, name, &rng), WEFT_OK);
  assert_non_null(rng);
  return rng;
}

#define SEQ 64

static void draw(weft_rng_t *rng, uint64_t out[SEQ]) {
  for (int i = 0; i < SEQ; i++)
    out[i] = weft_rng_next(rng);
}

/* --- named streams -------------------------------------------------------- */

static void test_random_stream_same_name_same_pointer(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_rng_t *a = stream(w, "game.loot");
  weft_rng_t *b = stream(w, "game.ai");
  assert_ptr_not_equal(a, b);
  assert_ptr_equal(stream(w, "game.loot"), a);
  assert_ptr_equal(stream(w, "game.ai"), b);
  /* A prefix or extension of a name is another stream. */
  assert_ptr_not_equal(stream(w, "game.loo"), a);
  assert_ptr_not_equal(stream(w, "game.loot2"), a);
  weft_world_destroy(w);
}

static void test_random_stream_copies_name(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  char name[16];
  strcpy(name, "physics");
  weft_rng_t *a = stream(w, name);
  memset(name, 'x', sizeof name - 1);
  name[sizeof name - 1] = '\0';
  assert_ptr_equal(stream(w, "physics"), a);
  assert_ptr_not_equal(stream(w, name), a);
  weft_world_destroy(w);
}

static void test_random_stream_address_stable_as_streams_grow(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_rng_t *first = stream(w, "first");
  (void)weft_rng_next(first);
  weft_rng_t saved = *first;
  weft_rng_t *ptrs[300];
  for (int i = 0; i < 300; i++) {
    char name[32];
    snprintf(name, sizeof name, "s%d", i);
    ptrs[i] = stream(w, name);
    (void)weft_rng_next(ptrs[i]);
  }
  assert_ptr_equal(stream(w, "first"), first);
  assert_memory_equal(first->s, saved.s, sizeof saved.s);
  for (int i = 0; i < 300; i++) {
    char name[32];
    snprintf(name, sizeof name, "s%d", i);
    assert_ptr_equal(stream(w, name), ptrs[i]);
  }
  weft_world_destroy(w);
}

static void test_random_stream_lookup_allocates_nothing(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  uint64_t before = wt_stats(w).allocs;
  (void)stream(w, "a");
  (void)stream(w, "b");
  uint64_t created = wt_stats(w).allocs;
  assert_true(created > before);
  for (int i = 0; i < 100; i++) {
    (void)stream(w, "a");
    (void)stream(w, "b");
  }
  assert_int_equal(wt_stats(w).allocs, created);
  weft_world_destroy(w);
}

static void test_random_stream_same_seed_same_sequence(void **state) {
  (void)state;
  weft_world_t *a = wt_world_new(NULL);
  weft_world_t *b = wt_world_new(NULL);
  uint64_t sa[SEQ], sb[SEQ];
  draw(stream(a, "game.loot"), sa);
  draw(stream(b, "game.loot"), sb);
  assert_memory_equal(sa, sb, sizeof sa);
  /* And with an explicit seed, set before the stream exists. */
  weft_random_seed(a, 42);
  weft_random_seed(b, 42);
  draw(stream(a, "x"), sa);
  draw(stream(b, "x"), sb);
  assert_memory_equal(sa, sb, sizeof sa);
  weft_world_destroy(a);
  weft_world_destroy(b);
}

static void test_random_stream_independent_of_other_streams(void **state) {
  (void)state;
  uint64_t alone[SEQ], after_b[SEQ], interleaved[SEQ];

  weft_world_t *w1 = wt_world_new(NULL);
  draw(stream(w1, "a"), alone);
  weft_world_destroy(w1);

  /* "b" is created first and draws a lot before "a" exists. */
  weft_world_t *w2 = wt_world_new(NULL);
  weft_rng_t *b = stream(w2, "b");
  for (int i = 0; i < 1000; i++)
    (void)weft_rng_next(b);
  for (int i = 0; i < 20; i++) {
    char name[16];
    snprintf(name, sizeof name, "other%d", i);
    (void)weft_rng_next(stream(w2, name));
  }
  draw(stream(w2, "a"), after_b);
  weft_world_destroy(w2);

  /* "b" draws between every draw of "a". */
  weft_world_t *w3 = wt_world_new(NULL);
  weft_rng_t *a3 = stream(w3, "a");
  weft_rng_t *b3 = stream(w3, "b");
  for (int i = 0; i < SEQ; i++) {
    for (int j = 0; j <= i % 3; j++)
      (void)weft_rng_next(b3);
    interleaved[i] = weft_rng_next(a3);
  }
  weft_world_destroy(w3);

  assert_memory_equal(alone, after_b, sizeof alone);
  assert_memory_equal(alone, interleaved, sizeof alone);
}

static void test_random_stream_names_differ(void **state) {
  (void)state;
  static const char *names[] = {"a",         "b",          "ab",  "ba",
                                "game.loot", "game.loot2", "A",   "a ",
                                "physics",   "ai",         "\x01"};
  enum { N = sizeof names / sizeof names[0] };
  weft_world_t *w = wt_world_new(NULL);
  uint64_t seq[N][SEQ];
  for (int i = 0; i < N; i++)
    draw(stream(w, names[i]), seq[i]);
  for (int i = 0; i < N; i++)
    for (int j = i + 1; j < N; j++) {
      int same = 0;
      for (int k = 0; k < SEQ; k++)
        same += seq[i][k] == seq[j][k];
      assert_int_equal(same, 0);
    }
  weft_world_destroy(w);
}

static void test_random_stream_depends_on_world_seed(void **state) {
  (void)state;
  weft_world_t *a = wt_world_new(NULL);
  weft_world_t *b = wt_world_new(NULL);
  weft_random_seed(b, WEFT_RANDOM_SEED_DEFAULT + 1);
  uint64_t sa[SEQ], sb[SEQ];
  draw(stream(a, "game.loot"), sa);
  draw(stream(b, "game.loot"), sb);
  for (int k = 0; k < SEQ; k++)
    assert_true(sa[k] != sb[k]);
  weft_world_destroy(a);
  weft_world_destroy(b);
}

static void test_random_seed_restarts_streams_in_place(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  assert_int_equal(weft_random_world_seed(w), WEFT_RANDOM_SEED_DEFAULT);
  weft_rng_t *a = stream(w, "a");
  weft_rng_t *b = stream(w, "b");
  uint64_t old_a[SEQ];
  draw(a, old_a);
  for (int i = 0; i < 37; i++)
    (void)weft_rng_next(b);

  weft_random_seed(w, 99);
  assert_int_equal(weft_random_world_seed(w), 99);
  assert_ptr_equal(stream(w, "a"), a);
  assert_ptr_equal(stream(w, "b"), b);
  uint64_t new_a[SEQ], new_b[SEQ];
  draw(a, new_a);
  draw(b, new_b);

  /* A fresh world seeded 99 gives the same sequences. */
  weft_world_t *f = wt_world_new(NULL);
  weft_random_seed(f, 99);
  uint64_t fresh_a[SEQ], fresh_b[SEQ];
  draw(stream(f, "b"), fresh_b);
  draw(stream(f, "a"), fresh_a);
  assert_memory_equal(new_a, fresh_a, sizeof new_a);
  assert_memory_equal(new_b, fresh_b, sizeof new_b);
  assert_memory_not_equal(new_a, old_a, sizeof new_a);

  /* Back to the default seed: "a" starts over from its first draw. */
  weft_random_seed(w, WEFT_RANDOM_SEED_DEFAULT);
  uint64_t again[SEQ];
  draw(a, again);
  assert_memory_equal(again, old_a, sizeof again);
  weft_world_destroy(f);
  weft_world_destroy(w);
}

static void test_random_world_seed_default_without_streams(void **state) {
  (void)state;
  /* A world that never touches randomness reports the default seed and
   * destroys cleanly. */
  weft_world_t *w = wt_world_new(NULL);
  assert_int_equal(weft_random_world_seed(w), WEFT_RANDOM_SEED_DEFAULT);
  weft_world_destroy(w);
  assert_int_equal(weft_random_world_seed(NULL), WEFT_RANDOM_SEED_DEFAULT);
  weft_random_seed(NULL, 5); /* does nothing */
}

static void test_random_stream_rejects_bad_input(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_rng_t *rng = (weft_rng_t *)(uintptr_t)1;
  assert_int_equal(weft_random_stream(w, NULL, &rng), WEFT_EINVAL);
  assert_null(rng);
  assert_true(strlen(weft_world_last_error(w)) > 0);
  rng = (weft_rng_t *)(uintptr_t)1;
  assert_int_equal(weft_random_stream(w, "", &rng), WEFT_EINVAL);
  assert_null(rng);
  assert_int_equal(weft_random_stream(w, "a", NULL), WEFT_EINVAL);
  assert_int_equal(weft_random_stream(NULL, "a", &rng), WEFT_EINVAL);
  assert_null(rng);
  /* Nothing was created by the failed calls. */
  uint64_t allocs = wt_stats(w).allocs;
  assert_int_equal(weft_random_stream(w, "", &rng), WEFT_EINVAL);
  assert_int_equal(wt_stats(w).allocs, allocs);
  weft_world_destroy(w);
}

/* --- the generator -------------------------------------------------------- */

static void test_random_xoshiro_reference_values(void **state) {
  (void)state;
  /* Published first outputs of xoshiro256** from state {1, 2, 3, 4}; the
   * first three follow by hand: rotl(2 * 5, 7) * 9 = 11520, then s[1]
   * becomes 0, then rotl(262149 * 5, 7) * 9. */
  static const uint64_t published[10] = {11520u,
                                         0u,
                                         1509978240u,
                                         1215971899390074240u,
                                         1216172134540287360u,
                                         607988272756665600u,
                                         16172922978634559625u,
                                         8476171486693032832u,
                                         10595114339597558777u,
                                         2904607092377533576u};
  uint64_t ref[4] = {1, 2, 3, 4};
  weft_rng_t rng = {{1, 2, 3, 4}};
  for (int i = 0; i < 10; i++) {
    assert_int_equal(ref_xoshiro(ref), published[i]);
    assert_int_equal(weft_rng_next(&rng), published[i]);
  }
}

static void test_random_xoshiro_matches_reference(void **state) {
  (void)state;
  uint64_t ref[4] = {0x0123456789abcdefu, 0xfedcba9876543210u,
                     0x0f1e2d3c4b5a6978u, 0x8796a5b4c3d2e1f0u};
  weft_rng_t rng;
  memcpy(rng.s, ref, sizeof ref);
  for (int i = 0; i < 1000; i++)
    assert_int_equal(weft_rng_next(&rng), ref_xoshiro(ref));
  assert_memory_equal(rng.s, ref, sizeof ref);
}

static void test_random_seed_is_splitmix_expansion(void **state) {
  (void)state;
  static const uint64_t seeds[] = {
      0, 1, 2, WEFT_RANDOM_SEED_DEFAULT, 0x9e3779b97f4a7c15u, UINT64_MAX};
  for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
    weft_rng_t rng;
    memset(&rng, 0, sizeof rng);
    weft_rng_seed(&rng, seeds[i]);
    uint64_t x = seeds[i];
    for (int k = 0; k < 4; k++)
      assert_int_equal(rng.s[k], ref_splitmix(&x));
  }
  /* Never the all-zero state xoshiro cannot leave. */
  for (uint64_t seed = 0; seed < 10000; seed++) {
    weft_rng_t rng;
    weft_rng_seed(&rng, seed * 0x9e3779b97f4a7c15u);
    assert_true((rng.s[0] | rng.s[1] | rng.s[2] | rng.s[3]) != 0);
  }
  /* Same seed, same sequence; seeds one apart, unrelated sequences. */
  weft_rng_t a, b, c;
  weft_rng_seed(&a, 7);
  weft_rng_seed(&b, 7);
  weft_rng_seed(&c, 8);
  for (int i = 0; i < 100; i++) {
    uint64_t x = weft_rng_next(&a);
    assert_int_equal(x, weft_rng_next(&b));
    assert_int_not_equal(x, weft_rng_next(&c));
  }
}

/* Pearson's chi-square of counts against a uniform expectation. */
static double chi_square(const uint32_t *counts, int buckets, uint32_t total) {
  double expect = (double)total / buckets, chi = 0;
  for (int i = 0; i < buckets; i++) {
    double d = counts[i] - expect;
    chi += d * d / expect;
  }
  return chi;
}

static void test_random_below_in_range(void **state) {
  (void)state;
  weft_rng_t rng;
  weft_rng_seed(&rng, 1);
  static const uint32_t ns[] = {
      1, 2, 3, 7, 10, 1000, 1u << 31, 0x80000001u, 0xC0000000u, UINT32_MAX};
  for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
    for (int k = 0; k < 10000; k++)
      assert_true(weft_rng_below(&rng, ns[i]) < ns[i]);
  /* n = 0 gives 0 and draws nothing. */
  weft_rng_t before = rng;
  for (int k = 0; k < 10; k++)
    assert_int_equal(weft_rng_below(&rng, 0), 0);
  assert_memory_equal(rng.s, before.s, sizeof rng.s);
  /* Every value of a small range shows up. */
  uint32_t seen = 0;
  for (int k = 0; k < 1000; k++)
    seen |= 1u << weft_rng_below(&rng, 7);
  assert_int_equal(seen, 0x7f);
}

static void test_random_below_chi_square(void **state) {
  (void)state;
  enum { DRAWS = 100000 };
  weft_rng_t rng;
  weft_rng_seed(&rng, 2024);
  /* 10 buckets, 9 degrees of freedom: p = 0.001 is at 27.9. */
  uint32_t counts[10] = {0};
  for (int k = 0; k < DRAWS; k++)
    counts[weft_rng_below(&rng, 10)]++;
  assert_true(chi_square(counts, 10, DRAWS) < 40.0);

  /* n = 3 * 2^30 makes both classic biases huge: modulo reduction would
   * put half the mass below 2^30, and multiply-shift without rejection
   * would give multiples of 3 twice the weight of the other residues. */
  const uint32_t n = 0xC0000000u;
  uint32_t third[3] = {0}, residue[3] = {0};
  for (int k = 0; k < DRAWS; k++) {
    uint32_t v = weft_rng_below(&rng, n);
    third[v >> 30]++;
    residue[v % 3]++;
  }
  /* 2 degrees of freedom: p = 0.001 is at 13.8. */
  assert_true(chi_square(third, 3, DRAWS) < 20.0);
  assert_true(chi_square(residue, 3, DRAWS) < 20.0);
}

static void test_random_double_in_unit_interval(void **state) {
  (void)state;
  enum { DRAWS = 100000 };
  weft_rng_t rng, copy;
  weft_rng_seed(&rng, 3);
  copy = rng;
  double sum = 0, lo = 1, hi = 0;
  for (int k = 0; k < DRAWS; k++) {
    double d = weft_rng_double(&rng);
    assert_true(d >= 0.0 && d < 1.0);
    /* The documented 53-bit construction. */
    assert_true(d == (double)(weft_rng_next(&copy) >> 11) * 0x1.0p-53);
    sum += d;
    lo = d < lo ? d : lo;
    hi = d > hi ? d : hi;
  }
  double mean = sum / DRAWS;
  assert_true(mean > 0.49 && mean < 0.51);
  assert_true(lo < 0.001 && hi > 0.999);

  /* The largest possible output stays below 1. */
  assert_true((double)(UINT64_MAX >> 11) * 0x1.0p-53 < 1.0);
}

static void test_random_uniform_in_range(void **state) {
  (void)state;
  weft_rng_t rng;
  weft_rng_seed(&rng, 4);
  double sum = 0;
  for (int k = 0; k < 100000; k++) {
    double d = weft_rng_uniform(&rng, -3.0, 5.0);
    assert_true(d >= -3.0 && d < 5.0);
    sum += d;
  }
  assert_true(sum / 100000 > 0.9 && sum / 100000 < 1.1);
  /* A range narrower than the spacing of doubles near hi still never
   * returns hi. */
  double lo = 1.0, hi = 1.0 + 0x1.0p-52;
  for (int k = 0; k < 10000; k++) {
    double d = weft_rng_uniform(&rng, lo, hi);
    assert_true(d >= lo && d < hi);
  }
  /* An empty range gives lo. */
  assert_true(weft_rng_uniform(&rng, 2.0, 2.0) == 2.0);
  assert_true(weft_rng_uniform(&rng, 2.0, 1.0) == 2.0);
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

static void test_random_shuffle_is_permutation(void **state) {
  (void)state;
  enum { N = 257 };
  weft_rng_t rng;
  weft_rng_seed(&rng, 5);
  uint32_t v[N];
  for (uint32_t i = 0; i < N; i++)
    v[i] = i * 3u + 1u;
  weft_rng_shuffle(&rng, v, N, sizeof v[0]);
  uint32_t moved = 0;
  for (uint32_t i = 0; i < N; i++)
    moved += v[i] != i * 3u + 1u;
  assert_true(moved > N / 2);
  qsort(v, N, sizeof v[0], cmp_u32);
  for (uint32_t i = 0; i < N; i++)
    assert_int_equal(v[i], i * 3u + 1u);

  /* 64-byte elements move whole. */
  typedef struct big_t {
    uint32_t key;
    unsigned char fill[60];
  } big_t;
  big_t b[40];
  for (uint32_t i = 0; i < 40; i++) {
    b[i].key = i;
    memset(b[i].fill, (int)i, sizeof b[i].fill);
  }
  weft_rng_shuffle(&rng, b, 40, sizeof b[0]);
  uint32_t seen[40] = {0};
  for (uint32_t i = 0; i < 40; i++) {
    for (size_t k = 0; k < sizeof b[i].fill; k++)
      assert_int_equal(b[i].fill[k], b[i].key);
    seen[b[i].key]++;
  }
  for (uint32_t i = 0; i < 40; i++)
    assert_int_equal(seen[i], 1);

  /* Elements over 64 bytes, and n < 2, leave everything as it was. */
  unsigned char raw[65 * 4], copy[sizeof raw];
  for (size_t i = 0; i < sizeof raw; i++)
    raw[i] = (unsigned char)i;
  memcpy(copy, raw, sizeof raw);
  weft_rng_t before = rng;
  weft_rng_shuffle(&rng, raw, 4, 65);
  weft_rng_shuffle(&rng, raw, 1, 4);
  weft_rng_shuffle(&rng, raw, 0, 4);
  assert_memory_equal(raw, copy, sizeof raw);
  assert_memory_equal(rng.s, before.s, sizeof rng.s);
}

static void test_random_shuffle_orders_equally_likely(void **state) {
  (void)state;
  enum { ROUNDS = 60000 };
  weft_rng_t rng;
  weft_rng_seed(&rng, 6);
  uint32_t counts[6] = {0};
  for (int r = 0; r < ROUNDS; r++) {
    uint8_t v[3] = {0, 1, 2};
    weft_rng_shuffle(&rng, v, 3, 1);
    assert_true(v[0] != v[1] && v[1] != v[2] && v[0] != v[2]);
    /* Lehmer code of the permutation: 0..5. */
    int code = v[0] * 2 + (v[1] > v[2]);
    counts[code]++;
  }
  /* Expect 10000 each (standard deviation about 91). */
  for (int i = 0; i < 6; i++)
    assert_true(counts[i] > 9000 && counts[i] < 11000);
}

/* --- counter-based draws -------------------------------------------------- */

static void test_random_at_deterministic(void **state) {
  (void)state;
  wt_rng_t r = wt_rng(11);
  for (int i = 0; i < 1000; i++) {
    uint64_t seed = wt_next(&r), e = wt_next(&r), t = wt_next(&r);
    uint32_t s = (uint32_t)wt_next(&r), n = (uint32_t)wt_next(&r);
    uint64_t x = weft_random_at(seed, e, t, s, n);
    assert_int_equal(weft_random_at(seed, e, t, s, n), x);
    double d = weft_random_at_double(seed, e, t, s, n);
    assert_true(d == (double)(x >> 11) * 0x1.0p-53);
  }
}

static void test_random_at_each_input_matters(void **state) {
  (void)state;
  wt_rng_t r = wt_rng(12);
  for (int i = 0; i < 1000; i++) {
    uint64_t seed = wt_next(&r), e = wt_next(&r) % 1000, t = wt_next(&r) % 1000;
    uint32_t s = (uint32_t)(wt_next(&r) % 8), n = (uint32_t)(wt_next(&r) % 8);
    if (i == 0)
      seed = e = t = s = n = 0;
    uint64_t x = weft_random_at(seed, e, t, s, n);
    assert_int_not_equal(weft_random_at(seed + 1, e, t, s, n), x);
    assert_int_not_equal(weft_random_at(seed, e + 1, t, s, n), x);
    assert_int_not_equal(weft_random_at(seed, e, t + 1, s, n), x);
    assert_int_not_equal(weft_random_at(seed, e, t, s + 1, n), x);
    assert_int_not_equal(weft_random_at(seed, e, t, s, n + 1), x);
    /* Inputs are not interchangeable. */
    if (e != t)
      assert_int_not_equal(weft_random_at(seed, t, e, s, n), x);
    if (s != n)
      assert_int_not_equal(weft_random_at(seed, e, t, n, s), x);
  }
}

/* Flips one bit of one input; returns how many output bits changed. */
static int flip_distance(const uint64_t in[5], int field, int bit) {
  uint64_t k[5];
  memcpy(k, in, sizeof k);
  k[field] ^= (uint64_t)1 << bit;
  uint64_t a =
      weft_random_at(in[0], in[1], in[2], (uint32_t)in[3], (uint32_t)in[4]);
  uint64_t b = weft_random_at(k[0], k[1], k[2], (uint32_t)k[3], (uint32_t)k[4]);
  return popcount64(a ^ b);
}

static void test_random_at_avalanche(void **state) {
  (void)state;
  enum { TRIALS = 200 };
  static const int bits[5] = {64, 64, 64, 32, 32};
  wt_rng_t r = wt_rng(13);
  /* Small, structured keys (entity indices, tick numbers) are the common
   * case, so half the trials use them. */
  uint64_t keys[TRIALS][5];
  for (int t = 0; t < TRIALS; t++) {
    bool small = t % 2;
    for (int f = 0; f < 5; f++) {
      uint64_t v = wt_next(&r);
      if (f >= 3)
        v = (uint32_t)v;
      keys[t][f] = small && f > 0 ? v % 64 : v;
    }
  }
  double worst_lo = 64, worst_hi = 0;
  for (int f = 0; f < 5; f++) {
    double field_sum = 0;
    for (int b = 0; b < bits[f]; b++) {
      double sum = 0;
      for (int t = 0; t < TRIALS; t++)
        sum += flip_distance(keys[t], f, b);
      double mean = sum / TRIALS;
      field_sum += mean;
      worst_lo = mean < worst_lo ? mean : worst_lo;
      worst_hi = mean > worst_hi ? mean : worst_hi;
    }
    double field_mean = field_sum / bits[f];
    assert_true(field_mean >= 31.0 && field_mean <= 33.0);
  }
  /* Every single input bit, not just the average of a field. */
  assert_true(worst_lo >= 28.0);
  assert_true(worst_hi <= 36.0);
}

static void test_random_at_double_in_unit_interval(void **state) {
  (void)state;
  wt_rng_t r = wt_rng(14);
  double sum = 0;
  for (int i = 0; i < 100000; i++) {
    double d = weft_random_at_double(WEFT_RANDOM_SEED_DEFAULT, (uint64_t)i,
                                     wt_next(&r) % 4, 0, (uint32_t)(i % 3));
    assert_true(d >= 0.0 && d < 1.0);
    sum += d;
  }
  assert_true(sum / 100000 > 0.49 && sum / 100000 < 0.51);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_stream_same_name_same_pointer),
      cmocka_unit_test(test_random_stream_copies_name),
      cmocka_unit_test(test_random_stream_address_stable_as_streams_grow),
      cmocka_unit_test(test_random_stream_lookup_allocates_nothing),
      cmocka_unit_test(test_random_stream_same_seed_same_sequence),
      cmocka_unit_test(test_random_stream_independent_of_other_streams),
      cmocka_unit_test(test_random_stream_names_differ),
      cmocka_unit_test(test_random_stream_depends_on_world_seed),
      cmocka_unit_test(test_random_seed_restarts_streams_in_place),
      cmocka_unit_test(test_random_world_seed_default_without_streams),
      cmocka_unit_test(test_random_stream_rejects_bad_input),
      cmocka_unit_test(test_random_xoshiro_reference_values),
      cmocka_unit_test(test_random_xoshiro_matches_reference),
      cmocka_unit_test(test_random_seed_is_splitmix_expansion),
      cmocka_unit_test(test_random_below_in_range),
      cmocka_unit_test(test_random_below_chi_square),
      cmocka_unit_test(test_random_double_in_unit_interval),
      cmocka_unit_test(test_random_uniform_in_range),
      cmocka_unit_test(test_random_shuffle_is_permutation),
      cmocka_unit_test(test_random_shuffle_orders_equally_likely),
      cmocka_unit_test(test_random_at_deterministic),
      cmocka_unit_test(test_random_at_each_input_matters),
      cmocka_unit_test(test_random_at_avalanche),
      cmocka_unit_test(test_random_at_double_in_unit_interval),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
