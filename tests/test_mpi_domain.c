/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for weft::mpi's pieces that need no mpirun: the domain
 * decomposition (mpi/domain.h) and the ghost map (mpi/keymap.h), each
 * against a simple oracle over random points and operations.
 */
#include "support/weft_test.h"

#include <math.h>
#include <stdlib.h>

#include <weft/mpi.h>
#include <weft/random.h>

#include "mpi/domain.h"
#include "mpi/keymap.h"

/* A uniform float in [lo, hi) from draw n. */
static float unit(uint64_t n, float lo, float hi) {
  return lo + (hi - lo) * (float)(weft_random_at(11, n, 0, 0, 0) >> 40) *
                  (1.0f / 16777216.0f);
}

static void test_mpi_domain_grid_most_square(void **state) {
  (void)state;
  for (uint32_t n = 1; n <= 200; n++) {
    uint32_t px, py;
    assert_int_equal(weft_mpi_grid(n, &px, &py), 0);
    assert_int_equal(px * py, n);
    assert_true(px >= py);
    /* Oracle: no factor pair px' >= py' is more square. */
    for (uint32_t f = py + 1; f * f <= n; f++)
      assert_true(n % f != 0);
  }
  uint32_t px, py;
  weft_mpi_grid(3, &px, &py);
  assert_true(px == 3 && py == 1);
  weft_mpi_grid(12, &px, &py);
  assert_true(px == 4 && py == 3);
  assert_int_equal(weft_mpi_grid(0, &px, &py), WEFT_EINVAL);
}

/* The owner by brute force: the region whose half-open box holds the
 * point, outside points clamped to the edge regions. */
static uint32_t oracle_owner(const weft__domain_t *d, float x, float y) {
  for (uint32_t r = 0; r < d->ranks; r++) {
    weft_vec2_t lo, hi;
    weft__domain_region(d, r, &lo, &hi);
    uint32_t ix = r % d->px, iy = r / d->px;
    bool inx = (ix == 0 || x >= lo.x) && (ix + 1 == d->px || x < hi.x);
    bool iny = (iy == 0 || y >= lo.y) && (iy + 1 == d->py || y < hi.y);
    if (inx && iny)
      return r;
  }
  return UINT32_MAX;
}

static void test_mpi_domain_owner_half_open(void **state) {
  (void)state;
  for (uint32_t ranks = 1; ranks <= 12; ranks++) {
    weft__domain_t d;
    char msg[256];
    assert_int_equal(weft__domain_init(&d, ranks, (weft_vec2_t){-5, 10},
                                       (weft_vec2_t){95, 60}, 0.5f, msg,
                                       sizeof msg),
                     0);
    for (uint64_t i = 0; i < 4000; i++) {
      float x = unit(2 * i, -20, 110), y = unit(2 * i + 1, 0, 70);
      assert_int_equal(weft__domain_owner(&d, x, y), oracle_owner(&d, x, y));
    }
    /* A point on a cut belongs to the region above it. */
    for (uint32_t ix = 1; ix < d.px; ix++)
      assert_int_equal(weft__domain_owner(&d, d.cut_x[ix], 10) % d.px, ix);
    /* The max edges and beyond: the last column and row. */
    assert_int_equal(weft__domain_owner(&d, 95, 60), ranks - 1);
    assert_int_equal(weft__domain_owner(&d, NAN, NAN), 0);
    weft__domain_free(&d);
  }
}

static void test_mpi_domain_halo_ranks_match_oracle(void **state) {
  (void)state;
  for (uint32_t ranks = 1; ranks <= 9; ranks++) {
    weft__domain_t d;
    char msg[256];
    float halo = 3.0f;
    assert_int_equal(weft__domain_init(&d, ranks, (weft_vec2_t){0, 0},
                                       (weft_vec2_t){100, 40}, halo, msg,
                                       sizeof msg),
                     0);
    for (uint64_t i = 0; i < 3000; i++) {
      float x = unit(2 * i, -5, 105), y = unit(2 * i + 1, -5, 45);
      uint32_t owner = weft__domain_owner(&d, x, y), got[8];
      uint32_t n = weft__domain_halo_ranks(&d, x, y, owner, got);
      /* Oracle: every other region whose box grown by the halo (edge
       * regions unbounded outwards) holds the point, ascending. */
      uint32_t want = 0;
      for (uint32_t r = 0; r < ranks; r++) {
        weft_vec2_t lo, hi;
        weft__domain_region(&d, r, &lo, &hi);
        uint32_t ix = r % d.px, iy = r / d.px;
        bool inx = (ix == 0 || x >= lo.x - halo) &&
                   (ix + 1 == d.px || x < hi.x + halo);
        bool iny = (iy == 0 || y >= lo.y - halo) &&
                   (iy + 1 == d.py || y < hi.y + halo);
        if (r != owner && inx && iny) {
          assert_true(want < n);
          assert_int_equal(got[want], r);
          want++;
        }
      }
      assert_int_equal(n, want);
    }
    uint32_t nb[8];
    uint32_t count = weft__domain_neighbours(&d, 0, nb);
    assert_int_equal(count, (d.px > 1) + (d.py > 1) + (d.px > 1 && d.py > 1));
    weft__domain_free(&d);
  }
}

static void test_mpi_domain_refuses_bad_config(void **state) {
  (void)state;
  weft__domain_t d;
  char msg[256] = "";
  /* 4 ranks: 2 x 2 regions of 50 x 20; a halo of 20 is not below 20. */
  assert_int_equal(weft__domain_init(&d, 4, (weft_vec2_t){0, 0},
                                     (weft_vec2_t){100, 40}, 20.0f, msg,
                                     sizeof msg),
                   WEFT_EINVAL);
  assert_non_null(strstr(msg, "halo 20 is not below the smallest region "
                              "extent 20 (2 x 2 regions for 4 ranks)"));
  assert_int_equal(weft__domain_init(&d, 4, (weft_vec2_t){0, 0},
                                     (weft_vec2_t){100, 40}, 19.5f, msg,
                                     sizeof msg),
                   0);
  weft__domain_free(&d);
  assert_int_equal(weft__domain_init(&d, 2, (weft_vec2_t){0, 0},
                                     (weft_vec2_t){0, 40}, 1, msg, sizeof msg),
                   WEFT_EINVAL);
  assert_non_null(strstr(msg, "min < max"));
  assert_int_equal(weft__domain_init(&d, 2, (weft_vec2_t){0, 0},
                                     (weft_vec2_t){INFINITY, 40}, 1, msg,
                                     sizeof msg),
                   WEFT_EINVAL);
  assert_int_equal(weft__domain_init(&d, 2, (weft_vec2_t){0, 0},
                                     (weft_vec2_t){10, 40}, NAN, msg,
                                     sizeof msg),
                   WEFT_EINVAL);
  assert_non_null(strstr(msg, "finite and >= 0"));
  assert_int_equal(weft__domain_init(&d, 0, (weft_vec2_t){0, 0},
                                     (weft_vec2_t){10, 40}, 1, msg, sizeof msg),
                   WEFT_EINVAL);
  weft__domain_free(&d); /* safe on a refused domain */
}

/* The ghost map against an array oracle: random puts, finds and erases
 * over a small key space, so that probe runs collide and wrap. */
static void test_mpi_domain_keymap_matches_oracle(void **state) {
  (void)state;
  enum { KEYS = 700 };
  weft_entity_t *oracle = calloc(KEYS, sizeof *oracle);
  assert_non_null(oracle);
  weft__keymap_t m = {0};
  for (uint64_t step = 0; step < 60000; step++) {
    uint64_t r = weft_random_at(3, step, 0, 0, 0);
    uint64_t key = (r >> 8) % KEYS * 0x10000;
    weft__keyslot_t *s = weft__keymap_find(&m, key);
    uint64_t slot = key / 0x10000;
    assert_int_equal(s != NULL, oracle[slot] != 0);
    if (s)
      assert_true(s->ghost == oracle[slot]);
    if (!s && (r & 3) != 0) {
      assert_int_equal(weft__keymap_reserve(&m), 0);
      weft__keymap_put(&m, key, step + 1);
      oracle[slot] = step + 1;
    } else if (s && (r & 3) == 0) {
      weft__keymap_erase(&m, s);
      oracle[slot] = 0;
    }
  }
  uint32_t live = 0;
  for (uint32_t k = 0; k < KEYS; k++) {
    live += oracle[k] != 0;
    weft__keyslot_t *s = weft__keymap_find(&m, (uint64_t)k * 0x10000);
    assert_int_equal(s != NULL, oracle[k] != 0);
  }
  assert_int_equal(m.count, live);
  weft__keymap_free(&m);
  free(oracle);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mpi_domain_grid_most_square),
      cmocka_unit_test(test_mpi_domain_owner_half_open),
      cmocka_unit_test(test_mpi_domain_halo_ranks_match_oracle),
      cmocka_unit_test(test_mpi_domain_refuses_bad_config),
      cmocka_unit_test(test_mpi_domain_keymap_matches_oracle),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
