/* SPDX-License-Identifier: MIT */
/*
 * The world's state beside its rows (core/snapshot_state.h,
 * weft__snap_globals_save / weft__snap_globals_load), which a distributed
 * checkpoint (weft::mpi) carries in its index: the pipeline's clock, the
 * world seed, random streams and resources round-trip into a fresh world,
 * and damaged bytes are refused without changing the world.
 */
#include "support/weft_test.h"

#include "core/snapshot_state.h"

typedef struct globals_world_t {
  weft_world_t *w;
  weft_resource_t res;
  weft_rng_t *rng;
} globals_world_t;

/* A world with the pipeline, a resource and a stream registered. */
static void make(globals_world_t *g) {
  assert_int_equal(weft_world_create(NULL, &g->w), 0);
  weft_pipeline_config_t pc = {.fixed_dt = 1.0 / 60.0, .time_inline = true};
  assert_int_equal(weft_pipeline_configure(g->w, &pc), 0);
  uint64_t zero = 0;
  assert_int_equal(weft_resource_register(g->w, "test.Count", sizeof zero, 8,
                                          &zero, &g->res),
                   0);
  assert_int_equal(weft_random_stream(g->w, "test.s", &g->rng), 0);
}

/* Runs @p ticks fixed steps, drawing from the stream and counting in the
 * resource each, under seed @p seed. */
static void advance(globals_world_t *g, uint64_t seed, uint32_t ticks) {
  weft_random_seed(g->w, seed);
  for (uint32_t t = 0; t < ticks; t++) {
    *(uint64_t *)weft_resource_get(g->w, g->res) += weft_rng_next(g->rng);
    assert_int_equal(weft_world_progress(g->w, 1.0 / 60.0), 0);
  }
}

static uint64_t tick_of(weft_world_t *w) {
  weft_pipeline_state_t st;
  weft_pipeline_state(w, &st);
  return st.tick;
}

/* Every entry's end offset in the blob (the only lengths a cut leaves
 * whole): u32 tag, u32 0, u64 length, the bytes. */
static uint32_t entry_ends(const uint8_t *p, size_t n, size_t *ends,
                           uint32_t cap) {
  uint32_t k = 0;
  for (size_t at = 0; at + 16 <= n && k < cap;) {
    uint64_t len;
    memcpy(&len, p + at + 8, 8);
    at += 16 + len;
    ends[k++] = at;
  }
  return k;
}

static void test_snapshot_globals_round_trip(void **state) {
  (void)state;
  globals_world_t a, b;
  make(&a);
  make(&b);
  advance(&a, 1234, 7);
  uint8_t *data = NULL;
  size_t n = 0;
  assert_int_equal(weft__snap_globals_save(a.w, &data, &n), 0);
  weft__snap_why_t why;
  assert_int_equal(weft__snap_globals_load(b.w, data, n, &why), 0);
  /* The oracle: the saved world itself, stepped on beside the restored. */
  assert_int_equal(tick_of(b.w), tick_of(a.w));
  assert_int_equal(weft_random_world_seed(b.w), 1234);
  assert_memory_equal(b.rng->s, a.rng->s, sizeof a.rng->s);
  assert_int_equal(*(uint64_t *)weft_resource_get(b.w, b.res),
                   *(uint64_t *)weft_resource_get(a.w, a.res));
  for (uint32_t t = 0; t < 3; t++) {
    assert_int_equal(weft_rng_next(b.rng), weft_rng_next(a.rng));
    assert_int_equal(weft_world_progress(a.w, 1.0 / 60.0), 0);
    assert_int_equal(weft_world_progress(b.w, 1.0 / 60.0), 0);
    assert_int_equal(tick_of(b.w), tick_of(a.w));
  }
  free(data);
  weft_world_destroy(a.w);
  weft_world_destroy(b.w);
}

/* Every cut of the bytes inside an entry, and a wrong tag, are refused
 * with WEFT_EFORMAT, and the world keeps its seed, clock and stream; a cut
 * between entries loads the entries before it. */
static void test_snapshot_globals_damage_refused(void **state) {
  (void)state;
  globals_world_t a;
  make(&a);
  advance(&a, 99, 5);
  uint8_t *data = NULL;
  size_t n = 0;
  assert_int_equal(weft__snap_globals_save(a.w, &data, &n), 0);
  size_t ends[64];
  uint32_t nends = entry_ends(data, n, ends, 64);
  assert_true(nends >= 3); /* resources, random, the pipeline's section */
  assert_int_equal(ends[nends - 1], n);
  for (size_t cut = 0; cut < n; cut++) {
    globals_world_t c;
    make(&c);
    weft_rng_t before = *c.rng;
    bool whole = cut == 0;
    for (uint32_t k = 0; k < nends; k++)
      whole = whole || ends[k] == cut;
    weft__snap_why_t why;
    int rc = weft__snap_globals_load(c.w, data, cut, &why);
    if (whole) {
      assert_int_equal(rc, 0);
    } else {
      assert_int_equal(rc, WEFT_EFORMAT);
      assert_true(why.msg[0] != 0);
      assert_int_equal(weft_random_world_seed(c.w), WEFT_RANDOM_SEED_DEFAULT);
      assert_int_equal(tick_of(c.w), 0);
      assert_memory_equal(c.rng->s, before.s, sizeof before.s);
    }
    weft_world_destroy(c.w);
  }
  /* A tag no entry has. */
  data[0] ^= 0x5a;
  globals_world_t c;
  make(&c);
  weft__snap_why_t why;
  assert_int_equal(weft__snap_globals_load(c.w, data, n, &why), WEFT_EFORMAT);
  assert_int_equal(weft_random_world_seed(c.w), WEFT_RANDOM_SEED_DEFAULT);
  weft_world_destroy(c.w);
  free(data);
  weft_world_destroy(a.w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_snapshot_globals_round_trip),
      cmocka_unit_test(test_snapshot_globals_damage_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
