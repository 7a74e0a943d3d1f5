/* SPDX-License-Identifier: MIT */
/* Unit tests for chunk storage: archetypes, chunk sizing, field-level SoA,
 * alignment, swap-remove density and empty-chunk pooling, observed through
 * weft_world_stats() and iteration. */
#include "support/weft_test.h"

#include <stdlib.h>

typedef struct p3_t {
  float x, y, z;
} p3_t;

/* Fields of different sizes with padding between them. */
typedef struct mixed_t {
  uint8_t a;
  uint16_t b;
  uint64_t c;
  uint32_t d;
} mixed_t;

static weft_query_t *query_of(weft_world_t *w, weft_component_t c) {
  weft_query_desc_t d;
  memset(&d, 0, sizeof d);
  d.include[0] = c;
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(w, &d, &q), WEFT_OK);
  return q;
}

static p3_t p3_for(uint32_t k) {
  p3_t p = {(float)k, (float)k * -2.0f, (float)k + 0.5f};
  return p;
}

/* Registers p3_t as @p name with fields x, y and z, stored as @p flags
 * says (WEFT_COMPONENT_SOA: one array per field). */
static weft_component_t register_p3(weft_world_t *w, const char *name,
                                    uint32_t flags) {
  static const weft_field_desc_t fields[] = {
      WEFT_FIELD(p3_t, x), WEFT_FIELD(p3_t, y), WEFT_FIELD(p3_t, z)};
  weft_component_desc_t d = WEFT_COMPONENT_DESC(p3_t);
  d.name = name;
  d.fields = fields;
  d.field_count = 3;
  d.flags = flags;
  weft_component_t c = 0;
  assert_int_equal(weft_component_register(w, &d, &c), WEFT_OK);
  return c;
}

/* True if [a, a+na) and [b, b+nb) do not overlap. */
static bool disjoint(const void *a, size_t na, const void *b, size_t nb) {
  uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
  return pa + na <= pb || pb + nb <= pa;
}

/* The circular distance between two addresses modulo 4096. */
static uint32_t page_gap(const void *a, const void *b) {
  uint32_t d = (uint32_t)(((uintptr_t)a - (uintptr_t)b) & 4095u);
  return d < 4096u - d ? d : 4096u - d;
}

/* A segment of many chunks staggers its regions within 4 KiB: in every
 * chunk of a 40,000-entity world of two SoA components of three floats
 * (seven regions with the handles), the six field arrays start at least
 * eight lines apart modulo 4096, so a loop that stores one array and
 * loads another at the same index never aliases in the low 12 bits
 * (unstaggered, 512-row float arrays start 2 KiB apart: every other one at
 * the same offset). The handles, whose chunks lie 4 KiB apart where the
 * floats' lie 2 KiB apart, keep their place only in even chunks; loops
 * store fields, not handles. The values are intact all the same. */
static void test_storage_arrays_staggered_in_pages(void **state) {
  (void)state;
  const uint32_t n = 40000;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t c[3] = {register_p3(w, "P", WEFT_COMPONENT_SOA),
                           register_p3(w, "V", WEFT_COMPONENT_SOA), 0};
  weft_entity_t *es = calloc(n, sizeof *es);
  assert_non_null(es);
  for (uint32_t k = 0; k < n; k++) {
    es[k] = wt_spawn_with(w, c, NULL);
    p3_t v = p3_for(k);
    assert_int_equal(weft_set(w, es[k], c[0], &v), WEFT_OK);
  }
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = c[0];
  qd.include[1] = c[1];
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(w, &qd, &q), WEFT_OK);
  weft_iter_t it;
  uint32_t rows = 0, chunks = 0, staggered = 0;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    const void *at[6];
    for (uint32_t f = 0; f < 3; f++) {
      at[f] = weft_iter_field(&it, 0, f);
      at[3 + f] = weft_iter_field(&it, 1, f);
    }
    uint32_t least = 4096;
    for (uint32_t i = 0; i < 6; i++)
      for (uint32_t j = i + 1; j < 6; j++)
        if (page_gap(at[i], at[j]) < least)
          least = page_gap(at[i], at[j]);
    /* An archetype's first chunks come in segments too small to pad. */
    if (rows >= 4096)
      assert_true(least >= 8 * 64);
    staggered += least >= 8 * 64;
    const float *fy = at[1];
    for (uint32_t r = 0; r < it.count; r++)
      assert_true(fy[r] == (float)(rows + r) * -2.0f);
    rows += it.count;
    chunks++;
  }
  assert_int_equal(rows, n);
  assert_true(chunks > 64);
  assert_true(staggered >= chunks - 8);
  free(es);
  weft_query_destroy(q);
  weft_world_destroy(w);
}

static void test_storage_soa_fields_are_separate_arrays(void **state) {
  (void)state;
  const uint32_t n = 3000;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t p = register_p3(w, "p3_t", WEFT_COMPONENT_SOA);
  weft_entity_t *es = calloc(n, sizeof *es);
  assert_non_null(es);
  const weft_component_t comps[] = {p, 0};
  assert_int_equal(weft_spawn_batch(w, n, comps, NULL, NULL, es), WEFT_OK);
  for (uint32_t k = 0; k < n; k++) {
    p3_t v = p3_for(k);
    assert_int_equal(weft_set(w, es[k], p, &v), WEFT_OK);
  }
  uint32_t *slot_to_k = calloc(wt_stats(w).slots_used, sizeof *slot_to_k);
  assert_non_null(slot_to_k);
  for (uint32_t k = 0; k < n; k++) {
    slot_to_k[weft_entity_index(es[k])] = k;
  }
  weft_query_t *q = query_of(w, p);
  weft_iter_t it;
  uint32_t rows = 0, chunks = 0;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    chunks++;
    assert_null(it.columns[0]);
    assert_null(weft_iter_column(&it, 0));
    assert_null(weft_iter_column_of(&it, p));
    float *fx = weft_iter_field(&it, 0, 0);
    float *fy = weft_iter_field(&it, 0, 1);
    float *fz = weft_iter_field(&it, 0, 2);
    assert_non_null(fx);
    assert_non_null(fy);
    assert_non_null(fz);
    assert_true(wt_aligned(fx, 64));
    assert_true(wt_aligned(fy, 64));
    assert_true(wt_aligned(fz, 64));
    size_t bytes = (size_t)it.count * sizeof(float);
    assert_true(disjoint(fx, bytes, fy, bytes));
    assert_true(disjoint(fx, bytes, fz, bytes));
    assert_true(disjoint(fy, bytes, fz, bytes));
    assert_true(
        disjoint(fx, bytes, it.entities, it.count * sizeof(weft_entity_t)));
    for (uint32_t r = 0; r < it.count; r++) {
      uint32_t k = slot_to_k[weft_entity_index(it.entities[r])];
      assert_true(it.entities[r] == es[k]);
      p3_t want = p3_for(k);
      assert_true(fx[r] == want.x);
      assert_true(fy[r] == want.y);
      assert_true(fz[r] == want.z);
      /* The per-entity field accessor points into the same arrays. */
      assert_ptr_equal(weft_get_field(w, es[k], p, 1), &fy[r]);
    }
    rows += it.count;
  }
  assert_int_equal(rows, n);
  assert_true(chunks >= 1);
  free(slot_to_k);
  free(es);
  weft_query_destroy(q);
  weft_world_destroy(w);
}

static void test_storage_soa_mixed_field_sizes(void **state) {
  (void)state;
  const uint32_t n = 700;
  weft_world_t *w = wt_world_sized(0, WEFT_CHUNK_SIZE_MIN);
  static const weft_field_desc_t fields[] = {
      WEFT_FIELD(mixed_t, a), WEFT_FIELD(mixed_t, b), WEFT_FIELD(mixed_t, c),
      WEFT_FIELD(mixed_t, d)};
  const uint32_t fsize[] = {1, 2, 8, 4};
  weft_component_desc_t d = WEFT_COMPONENT_DESC(mixed_t);
  d.fields = fields;
  d.field_count = 4;
  d.flags = WEFT_COMPONENT_SOA;
  weft_component_t m = 0;
  assert_int_equal(weft_component_register(w, &d, &m), WEFT_OK);
  weft_entity_t *es = calloc(n, sizeof *es);
  assert_non_null(es);
  for (uint32_t k = 0; k < n; k++) {
    mixed_t v;
    memset(&v, 0xee, sizeof v); /* padding must not matter */
    v.a = (uint8_t)k;
    v.b = (uint16_t)(k * 3u);
    v.c = (uint64_t)k << 40 | k;
    v.d = k * 7u;
    const weft_component_t comps[] = {m, 0};
    const void *vals[] = {&v};
    es[k] = wt_spawn_with(w, comps, vals);
  }
  weft_query_t *q = query_of(w, m);
  weft_iter_t it;
  uint32_t rows = 0, chunks = 0;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    chunks++;
    char *f[4];
    for (uint32_t j = 0; j < 4; j++) {
      f[j] = weft_iter_field(&it, 0, j);
      assert_non_null(f[j]);
      assert_true(wt_aligned(f[j], 64));
      for (uint32_t i = 0; i < j; i++) {
        assert_true(disjoint(f[i], (size_t)it.count * fsize[i], f[j],
                             (size_t)it.count * fsize[j]));
      }
    }
    for (uint32_t r = 0; r < it.count; r++) {
      for (uint32_t j = 0; j < 4; j++) {
        assert_ptr_equal(weft_get_field(w, it.entities[r], m, j),
                         f[j] + (size_t)r * fsize[j]);
      }
      mixed_t v;
      assert_int_equal(weft_read(w, it.entities[r], m, &v), WEFT_OK);
      assert_int_equal(((uint8_t *)f[0])[r], v.a);
      assert_int_equal(((uint16_t *)f[1])[r], v.b);
      assert_int_equal(((uint64_t *)f[2])[r], v.c);
      assert_int_equal(((uint32_t *)f[3])[r], v.d);
      assert_int_equal(v.b, (uint16_t)(v.d / 7u * 3u));
    }
    rows += it.count;
  }
  assert_int_equal(rows, n);
  /* 700 rows of 15 data bytes plus a handle cannot fit one 4 KiB chunk. */
  assert_true(chunks >= 2);
  for (uint32_t k = 0; k < n; k++) {
    mixed_t v;
    assert_int_equal(weft_read(w, es[k], m, &v), WEFT_OK);
    assert_int_equal(v.a, (uint8_t)k);
    assert_int_equal(v.b, (uint16_t)(k * 3u));
    assert_int_equal(v.c, (uint64_t)k << 40 | k);
    assert_int_equal(v.d, k * 7u);
  }
  free(es);
  weft_query_destroy(q);
  weft_world_destroy(w);
}

static void test_storage_aos_columns_aligned(void **state) {
  (void)state;
  const uint32_t n = 1000;
  weft_world_t *w = wt_world_sized(0, WEFT_CHUNK_SIZE_MIN);
  const uint32_t sizes[] = {1, 3, 8, 24, 64, 12};
  const uint32_t aligns[] = {1, 1, 8, 8, 64, 4};
  enum { NC = 6 };
  weft_component_t ids[NC + 1];
  char name[16];
  for (uint32_t c = 0; c < NC; c++) {
    snprintf(name, sizeof name, "c%u", c);
    ids[c] = wt_register(w, name, sizes[c], aligns[c]);
  }
  ids[NC] = 0;
  assert_int_equal(weft_spawn_batch(w, n, ids, NULL, NULL, NULL), WEFT_OK);
  weft_query_desc_t d;
  memset(&d, 0, sizeof d);
  for (uint32_t c = 0; c < NC; c++) {
    d.include[c] = ids[c];
  }
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(w, &d, &q), WEFT_OK);
  weft_iter_t it;
  uint32_t rows = 0, chunks = 0;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    chunks++;
    for (uint32_t c = 0; c < NC; c++) {
      char *col = it.columns[c];
      assert_non_null(col);
      assert_true(wt_aligned(col, 64));
      for (uint32_t i = 0; i < c; i++) {
        assert_true(disjoint(it.columns[i], (size_t)it.count * sizes[i], col,
                             (size_t)it.count * sizes[c]));
      }
      for (uint32_t r = 0; r < it.count; r++) {
        assert_ptr_equal(weft_get(w, it.entities[r], ids[c]),
                         col + (size_t)r * sizes[c]);
      }
    }
    rows += it.count;
  }
  assert_int_equal(rows, n);
  /* 112 bytes per row: 1000 rows need many 4 KiB chunks. */
  assert_true(chunks >=
              (n * 112u + WEFT_CHUNK_SIZE_MIN - 1) / WEFT_CHUNK_SIZE_MIN);
  weft_query_destroy(q);
  weft_world_destroy(w);
}

static void test_storage_aos_fields_have_no_arrays(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t p = register_p3(w, "p3_t", 0);
  p3_t v = p3_for(5);
  const weft_component_t comps[] = {p, 0};
  const void *vals[] = {&v};
  weft_entity_t e = wt_spawn_with(w, comps, vals);
  weft_query_t *q = query_of(w, p);
  weft_iter_t it;
  weft_query_iter(q, &it);
  assert_true(weft_iter_next(&it));
  const p3_t *col = it.columns[0];
  assert_non_null(col);
  assert_true(wt_aligned(col, 64));
  assert_true(it.entities[0] == e);
  assert_true(col[0].y == v.y);
  for (uint32_t j = 0; j < 3; j++) {
    assert_null(weft_iter_field(&it, 0, j));
  }
  /* But the per-entity field accessor works on AoS too. */
  assert_ptr_equal(weft_get_field(w, e, p, 1), &col[0].y);
  assert_false(weft_iter_next(&it));
  weft_query_destroy(q);
  weft_world_destroy(w);
}

static void test_storage_large_component_spans_chunks(void **state) {
  (void)state;
  const uint32_t n = 200, size = 512, chunk = WEFT_CHUNK_SIZE_MIN;
  weft_world_t *w = wt_world_sized(0, chunk);
  weft_component_t big = wt_register(w, "big", size, 0);
  weft_entity_t *es = calloc(n, sizeof *es);
  assert_non_null(es);
  const weft_component_t comps[] = {big, 0};
  assert_int_equal(weft_spawn_batch(w, n, comps, NULL, NULL, es), WEFT_OK);
  for (uint32_t k = 0; k < n; k++) {
    uint8_t *p = weft_get_mut(w, es[k], big);
    assert_non_null(p);
    memset(p, (int)(k & 0xff), size);
  }
  weft_query_t *q = query_of(w, big);
  weft_iter_t it;
  uint32_t rows = 0, chunks = 0;
  const uint32_t max_rows = chunk / size; /* data alone caps a chunk */
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    chunks++;
    assert_true(it.count <= WEFT_CHUNK_ROWS_MAX);
    assert_true(it.count <= max_rows);
    const uint8_t *col = it.columns[0];
    for (uint32_t r = 0; r < it.count; r++) {
      const uint8_t *v = col + (size_t)r * size;
      uint8_t first = v[0];
      for (uint32_t b = 1; b < size; b++) {
        assert_int_equal(v[b], first);
      }
    }
    rows += it.count;
  }
  assert_int_equal(rows, n);
  assert_true(chunks >= (n + max_rows - 1) / max_rows);
  weft_world_stats_t s = wt_stats(w);
  assert_int_equal(s.chunk_size, chunk);
  assert_int_equal(s.chunks_live, chunks);
  /* Chunk memory covers the rows' payload and handles, and no chunk costs
   * more than its nominal size plus a header line and base pointers. */
  uint64_t chunks_owned = (uint64_t)s.chunks_live + s.chunks_spare;
  assert_true(s.chunk_bytes >= (uint64_t)n * (size + sizeof(weft_entity_t)));
  assert_true(s.chunk_bytes <= chunks_owned * (chunk + 128));
  free(es);
  weft_query_destroy(q);
  weft_world_destroy(w);
}

static void test_storage_rows_capped_per_chunk(void **state) {
  (void)state;
  const uint32_t n = 5000;
  weft_world_t *w = wt_world_sized(0, WEFT_CHUNK_SIZE_MAX);
  weft_component_t tiny = wt_register(w, "tiny", 1, 0);
  weft_component_t tag = wt_register_tag(w, "tag");
  const weft_component_t comps[] = {tiny, tag, 0};
  assert_int_equal(weft_spawn_batch(w, n, comps, NULL, NULL, NULL), WEFT_OK);
  weft_query_t *q = query_of(w, tag);
  weft_iter_t it;
  uint32_t rows = 0, chunks = 0;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    chunks++;
    assert_true(it.count <= WEFT_CHUNK_ROWS_MAX);
    assert_null(it.columns[0]); /* tag */
    assert_non_null(weft_iter_column_of(&it, tiny));
    rows += it.count;
  }
  assert_int_equal(rows, n);
  assert_true(chunks >= (n + WEFT_CHUNK_ROWS_MAX - 1) / WEFT_CHUNK_ROWS_MAX);
  weft_query_destroy(q);
  weft_world_destroy(w);
}

/* Despawning rows from the middle keeps an archetype's rows packed: the
 * live chunk count stays the minimum for the live row count. */
static void test_storage_swap_remove_keeps_chunks_dense(void **state) {
  (void)state;
  const uint32_t n = 2000, size = 64;
  weft_world_t *w = wt_world_sized(0, WEFT_CHUNK_SIZE_MIN);
  weft_component_t c = wt_register(w, "c", size, 0);
  weft_entity_t *es = calloc(n, sizeof *es);
  bool *alive = calloc(n, sizeof *alive);
  assert_non_null(es);
  assert_non_null(alive);
  const weft_component_t comps[] = {c, 0};
  for (uint32_t k = 0; k < n; k++) {
    uint64_t v[8];
    for (int j = 0; j < 8; j++) {
      v[j] = (uint64_t)k * 8u + (uint64_t)j;
    }
    const void *vals[] = {v};
    es[k] = wt_spawn_with(w, comps, vals);
    alive[k] = true;
  }
  weft_query_t *q = query_of(w, c);
  /* Observe the rows per full chunk. */
  weft_iter_t it;
  uint32_t rows_per_chunk = 0;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    if (it.count > rows_per_chunk) {
      rows_per_chunk = it.count;
    }
  }
  assert_true(rows_per_chunk > 0);
  assert_true(rows_per_chunk <= WEFT_CHUNK_SIZE_MIN / size);

  wt_rng_t rng = wt_rng(17);
  uint32_t n_alive = n;
  for (int round = 0; round < 3; round++) {
    for (uint32_t k = 0; k < n; k++) {
      if (alive[k] && wt_chance(&rng, 1, 3)) {
        assert_int_equal(weft_despawn(w, es[k]), WEFT_OK);
        alive[k] = false;
        n_alive--;
      }
    }
    uint32_t rows = 0, chunks = 0;
    weft_query_iter(q, &it);
    while (weft_iter_next(&it)) {
      chunks++;
      const uint64_t *col = it.columns[0];
      for (uint32_t r = 0; r < it.count; r++) {
        /* Every row is a live entity holding its own value. */
        assert_true(weft_is_alive(w, it.entities[r]));
        uint64_t k = col[(size_t)r * 8] / 8u;
        assert_true(k < n);
        assert_true(alive[k]);
        assert_true(es[k] == it.entities[r]);
        for (int j = 0; j < 8; j++) {
          assert_int_equal(col[(size_t)r * 8 + (size_t)j],
                           k * 8u + (uint64_t)j);
        }
      }
      rows += it.count;
    }
    assert_int_equal(rows, n_alive);
    uint32_t min_chunks = (n_alive + rows_per_chunk - 1) / rows_per_chunk;
    assert_int_equal(chunks, min_chunks);
    weft_world_stats_t s = wt_stats(w);
    assert_int_equal(s.chunks_live, min_chunks);
    assert_int_equal(s.alive, n_alive);
  }
  free(alive);
  free(es);
  weft_query_destroy(q);
  weft_world_destroy(w);
}

static void test_storage_empty_chunks_kept_spare_and_reused(void **state) {
  (void)state;
  const uint32_t n = 4000;
  weft_world_t *w = wt_world_sized(0, WEFT_CHUNK_SIZE_MIN);
  weft_component_t c = wt_register(w, "c", 32, 0);
  weft_entity_t *es = calloc(n, sizeof *es);
  assert_non_null(es);
  const weft_component_t comps[] = {c, 0};
  assert_int_equal(weft_spawn_batch(w, n, comps, NULL, NULL, es), WEFT_OK);
  weft_world_stats_t full = wt_stats(w);
  assert_true(full.chunks_live > 1);
  assert_true(full.chunk_bytes >= (uint64_t)n * (32 + sizeof(weft_entity_t)));
  assert_true(full.chunk_bytes <=
              ((uint64_t)full.chunks_live + full.chunks_spare) *
                  (full.chunk_size + 128));

  for (uint32_t k = 0; k < n; k++) {
    assert_int_equal(weft_despawn(w, es[k]), WEFT_OK);
  }
  weft_world_stats_t empty = wt_stats(w);
  assert_int_equal(empty.alive, 0);
  assert_int_equal(empty.chunks_live, 0);
  assert_true(empty.chunks_spare > 0);
  assert_int_equal(empty.chunks_spare, full.chunks_spare + full.chunks_live);
  assert_int_equal(empty.chunk_bytes, full.chunk_bytes);

  /* Re-spawning the same population reuses spare chunks. */
  assert_int_equal(weft_spawn_batch(w, n, comps, NULL, NULL, es), WEFT_OK);
  weft_world_stats_t again = wt_stats(w);
  assert_int_equal(again.chunk_bytes, full.chunk_bytes);
  assert_int_equal(again.chunks_live, full.chunks_live);
  assert_int_equal(again.chunks_spare, full.chunks_spare);
  assert_int_equal(again.alive, n);

  /* Partial emptying pools only the chunks that became empty. */
  for (uint32_t k = 0; k < n / 2; k++) {
    assert_int_equal(weft_despawn(w, es[k]), WEFT_OK);
  }
  weft_world_stats_t half = wt_stats(w);
  assert_true(half.chunks_live > 0);
  assert_true(half.chunks_live < full.chunks_live);
  assert_int_equal(half.chunks_live + half.chunks_spare,
                   full.chunks_live + full.chunks_spare);
  assert_int_equal(half.chunk_bytes, full.chunk_bytes);
  free(es);
  weft_world_destroy(w);
}

static void test_storage_archetypes_counted(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 4, 0);
  weft_component_t b = wt_register(w, "b", 8, 0);
  weft_component_t t = wt_register_tag(w, "t");
  const weft_component_t ab[] = {a, b, 0};
  const weft_component_t ba[] = {b, a, 0};
  wt_spawn_with(w, ab, NULL);
  uint32_t n0 = wt_stats(w).archetypes;
  assert_true(n0 >= 1);
  /* The same set, in any order, is the same archetype. */
  wt_spawn_with(w, ab, NULL);
  weft_entity_t e = wt_spawn_with(w, ba, NULL);
  assert_int_equal(wt_stats(w).archetypes, n0);
  /* A new set creates at least one archetype... */
  assert_int_equal(weft_add(w, e, t, NULL), WEFT_OK);
  uint32_t n1 = wt_stats(w).archetypes;
  assert_true(n1 > n0);
  /* ...and moving back to a known set creates none. */
  assert_int_equal(weft_remove(w, e, t), WEFT_OK);
  assert_int_equal(weft_add(w, e, t, NULL), WEFT_OK);
  assert_int_equal(wt_stats(w).archetypes, n1);
  const weft_component_t abt[] = {t, b, a, 0};
  wt_spawn_with(w, abt, NULL);
  assert_int_equal(wt_stats(w).archetypes, n1);
  weft_world_destroy(w);
}

static void test_storage_moves_counted(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 4, 0);
  weft_component_t b = wt_register(w, "b", 8, 0);
  const weft_component_t only_a[] = {a, 0};
  uint32_t va = 9;
  const void *vals[] = {&va};
  weft_entity_t e = wt_spawn_with(w, only_a, vals);
  uint64_t m0 = wt_stats(w).moves;
  uint64_t vb = 5;
  assert_int_equal(weft_add(w, e, b, &vb), WEFT_OK);
  assert_int_equal(wt_stats(w).moves, m0 + 1);
  assert_int_equal(weft_add(w, e, b, &vb), WEFT_OK); /* no-op */
  assert_int_equal(wt_stats(w).moves, m0 + 1);
  assert_int_equal(weft_remove(w, e, b), WEFT_OK);
  assert_int_equal(wt_stats(w).moves, m0 + 2);
  assert_int_equal(weft_remove(w, e, b), WEFT_OK); /* no-op */
  assert_int_equal(wt_stats(w).moves, m0 + 2);
  assert_int_equal(weft_set(w, e, b, &vb), WEFT_OK); /* adds */
  assert_int_equal(wt_stats(w).moves, m0 + 3);
  assert_int_equal(weft_set(w, e, b, &vb), WEFT_OK); /* overwrites */
  assert_int_equal(wt_stats(w).moves, m0 + 3);
  const uint32_t *pa = weft_get(w, e, a);
  assert_non_null(pa);
  assert_int_equal(*pa, va);
  weft_world_destroy(w);
}

/* Large chunks hold more than 1024 rows; locations past row 1023 (whose
 * high bits live in the record's generation word) must resolve exactly. */
static void test_storage_large_chunks_locate_high_rows(void **state) {
  (void)state;
  weft_world_t *w = wt_world_sized(0, WEFT_CHUNK_SIZE_MAX);
  weft_component_desc_t d = {.name = "id", .size = 4};
  weft_component_t id;
  assert_int_equal(weft_component_register(w, &d, &id), 0);
  enum { N = 150000 };
  static weft_entity_t h[N];
  for (uint32_t i = 0; i < N; i++) {
    const void *vals[1] = {&i};
    assert_int_equal(
        weft_spawn_with(w, (weft_component_t[]){id, 0}, vals, &h[i]), 0);
  }
  for (uint32_t i = 0; i < N; i += 3)
    assert_int_equal(weft_despawn(w, h[i]), 0);
  for (uint32_t i = 0; i < N; i++) {
    const uint32_t *p = weft_get(w, h[i], id);
    if (i % 3 == 0) {
      assert_null(p);
    } else {
      assert_non_null(p);
      assert_int_equal(*p, i);
    }
  }
  weft_query_t *q;
  assert_int_equal(
      weft_query_create(w, &(weft_query_desc_t){.include = {id}}, &q), 0);
  weft_iter_t it;
  weft_query_iter(q, &it);
  uint32_t seen = 0, biggest = 0;
  while (weft_iter_next(&it)) {
    const uint32_t *vals = it.columns[0];
    for (uint32_t r = 0; r < it.count; r++) {
      /* Each row's handle names the entity whose value sits in the row. */
      assert_int_equal(vals[r], weft_entity_index(it.entities[r]));
      assert_ptr_equal(weft_get(w, it.entities[r], id), &vals[r]);
    }
    seen += it.count;
    biggest = it.count > biggest ? it.count : biggest;
  }
  assert_int_equal(seen, N - (N + 2) / 3);
  assert_true(biggest > 1024);
  assert_true(biggest <= WEFT_CHUNK_ROWS_MAX);
  weft_world_destroy(w);
}

/* Trimming frees only segments without rows, keeps every survivor's value
 * and leaves the world fully usable. */
static void test_storage_trim_frees_empty_segments(void **state) {
  (void)state;
  const uint32_t n = 6000;
  weft_world_t *w = wt_world_sized(0, WEFT_CHUNK_SIZE_MIN);
  weft_component_t c = wt_register(w, "c", 8, 0);
  weft_entity_t *es = calloc(n, sizeof *es);
  assert_non_null(es);
  const weft_component_t comps[] = {c, 0};
  for (uint32_t k = 0; k < n; k++) {
    uint64_t v = (uint64_t)k * 31u;
    const void *vals[] = {&v};
    assert_int_equal(weft_spawn_with(w, comps, vals, &es[k]), WEFT_OK);
  }
  weft_world_stats_t full = wt_stats(w);
  assert_int_equal(weft_world_trim(w), 0); /* nothing is empty yet */
  /* Despawning the newest half empties the trailing chunks. */
  for (uint32_t k = n / 2; k < n; k++)
    assert_int_equal(weft_despawn(w, es[k]), WEFT_OK);
  uint64_t freed = weft_world_trim(w);
  weft_world_stats_t half = wt_stats(w);
  assert_true(freed > 0);
  assert_int_equal(half.chunk_bytes, full.chunk_bytes - freed);
  for (uint32_t k = 0; k < n / 2; k++) {
    const uint64_t *p = weft_get(w, es[k], c);
    assert_non_null(p);
    assert_int_equal(*p, (uint64_t)k * 31u);
  }
  /* Empty the world entirely: every segment goes. */
  for (uint32_t k = 0; k < n / 2; k++)
    assert_int_equal(weft_despawn(w, es[k]), WEFT_OK);
  weft_world_trim(w);
  weft_world_stats_t none = wt_stats(w);
  assert_int_equal(none.chunk_bytes, 0);
  assert_int_equal(none.chunks_live + none.chunks_spare, 0);
  /* And it grows again. */
  for (uint32_t k = 0; k < n; k++) {
    uint64_t v = k;
    const void *vals[] = {&v};
    assert_int_equal(weft_spawn_with(w, comps, vals, &es[k]), WEFT_OK);
  }
  for (uint32_t k = 0; k < n; k += 97)
    assert_int_equal(*(const uint64_t *)weft_get(w, es[k], c), k);
  free(es);
  weft_world_destroy(w);
}

/* weft_iter_fields hands out exactly what weft_iter_field does, for query
 * chunks, runs of chunks, system chunks and batch fill views alike, and
 * nothing for plain terms; and the inline paths agree with the out-of-line
 * ones, which resolve through the archetype. */
static void fields_agree(const weft_iter_t *it) {
  void *out[WEFT_MAX_FIELDS], *slow[WEFT_MAX_FIELDS];
  assert_int_equal(weft_iter_fields(it, 0, out), 3);
  assert_int_equal(weft_iter_fields_slow_(it, 0, slow), 3);
  for (uint32_t f = 0; f < 3; f++) {
    assert_non_null(out[f]);
    assert_ptr_equal(out[f], slow[f]);
    assert_ptr_equal(out[f], weft_iter_field(it, 0, f));
    assert_ptr_equal(out[f], weft_iter_field_slow_(it, 0, f));
  }
  assert_int_equal(weft_iter_fields(it, 1, out), 0); /* plain component */
  assert_int_equal(weft_iter_fields_slow_(it, 1, slow), 0);
  assert_null(weft_iter_field(it, 1, 0));
  assert_int_equal(weft_iter_fields(it, 7, out), 0); /* no such term */
  assert_int_equal(weft_iter_fields(it, 0, NULL), 0);
}

static void fields_view_check(void *user, const weft_iter_t *view,
                              uint32_t first) {
  (void)first;
  uint32_t *calls = user;
  fields_agree(view);
  (*calls)++;
}

static int fields_system_check(weft_sysctx_t *ctx, const weft_iter_t *it) {
  fields_agree(it);
  (*(uint32_t *)ctx->user)++;
  return 0;
}

static void test_storage_iter_fields_match_iter_field(void **state) {
  (void)state;
  weft_world_t *w = wt_world_sized(0, WEFT_CHUNK_SIZE_MIN);
  weft_component_t p = register_p3(w, "p3_t", WEFT_COMPONENT_SOA);
  weft_component_t plain = wt_register(w, "plain", 8, 0);
  uint32_t calls = 0;
  const weft_component_t comps[] = {p, plain, 0};
  assert_int_equal(
      weft_spawn_batch(w, 2000, comps, fields_view_check, &calls, NULL),
      WEFT_OK);
  assert_true(calls > 1);
  weft_query_t *q;
  assert_int_equal(
      weft_query_create(w, &(weft_query_desc_t){.include = {p, plain}}, &q),
      WEFT_OK);
  weft_iter_t it;
  void *out[WEFT_MAX_FIELDS];
  /* Before the first chunk there is no chunk to hand fields out of. */
  weft_query_iter(q, &it);
  assert_int_equal(weft_iter_fields(&it, 0, out), 0);
  uint32_t chunks = 0;
  for (; weft_iter_next(&it); chunks++)
    fields_agree(&it);
  assert_int_equal(chunks, calls);
  /* Runs of contiguous chunks: the first chunk's arrays, continued. */
  weft_query_t *runs;
  assert_int_equal(
      weft_query_create(w,
                        &(weft_query_desc_t){.include = {p, plain},
                                             .flags = WEFT_QUERY_CHUNK_RUNS},
                        &runs),
      WEFT_OK);
  uint32_t nruns = 0;
  for (weft_query_iter(runs, &it); weft_iter_next(&it); nruns++)
    fields_agree(&it);
  assert_true(nruns >= 1 && nruns < chunks);
  /* A system's chunks. */
  uint32_t sys_calls = 0;
  weft_system_desc_t sd;
  memset(&sd, 0, sizeof sd);
  sd.name = "fields";
  sd.query.include[0] = p;
  sd.query.include[1] = plain;
  sd.run = fields_system_check;
  sd.user = &sys_calls;
  weft_system_t sys;
  assert_int_equal(weft_system_register(w, &sd, &sys), WEFT_OK);
  assert_int_equal(weft_world_run_phase(w, WEFT_PHASE_FIXED_UPDATE, 0.01),
                   WEFT_OK);
  assert_int_equal(sys_calls, chunks);
  weft_world_destroy(w);
}

/* weft_get() finds a column in one load from a per-archetype table that
 * packs the column's array index in 12 bits; an AoS column after 4,096
 * field arrays does not fit and is found through the general path. Both
 * paths give the row's own bytes, and NULL for SoA components and tags. */
static void test_storage_get_past_the_packed_arrays(void **state) {
  (void)state;
  enum { NSOA = 256, NF = 16 };
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.chunk_size = WEFT_CHUNK_SIZE_MAX;
  weft_world_t *w = wt_world_new(&cfg);
  static char names[NF][4];
  weft_field_desc_t fields[NF];
  for (uint32_t f = 0; f < NF; f++) {
    snprintf(names[f], sizeof names[f], "f%u", f);
    fields[f] = (weft_field_desc_t){names[f], f, 1, 0};
  }
  /* Registered first, so its array comes before the SoA ones: packed. */
  weft_component_t early = wt_register(w, "early", sizeof(uint64_t), 0);
  weft_component_t soa[NSOA];
  for (uint32_t i = 0; i < NSOA; i++) {
    char name[16];
    snprintf(name, sizeof name, "soa%u", i);
    weft_component_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.size = NF;
    d.alignment = 1;
    d.fields = fields;
    d.field_count = NF;
    d.flags = WEFT_COMPONENT_SOA;
    assert_int_equal(weft_component_register(w, &d, &soa[i]), WEFT_OK);
  }
  weft_component_t late = wt_register(w, "late", sizeof(uint64_t), 0);
  weft_component_t tag = wt_register_tag(w, "tag");
  weft_entity_t e[3];
  for (uint32_t k = 0; k < 3; k++) {
    e[k] = wt_spawn(w);
    for (uint32_t i = 0; i < NSOA; i++)
      assert_int_equal(weft_add(w, e[k], soa[i], NULL), WEFT_OK);
    uint64_t v = 1000 + k, u = 2000 + k;
    assert_int_equal(weft_add(w, e[k], early, &u), WEFT_OK);
    assert_int_equal(weft_add(w, e[k], late, &v), WEFT_OK);
    assert_int_equal(weft_add(w, e[k], tag, NULL), WEFT_OK);
  }
  for (uint32_t k = 0; k < 3; k++) {
    const uint64_t *v = weft_get(w, e[k], late);
    const uint64_t *u = weft_get(w, e[k], early);
    assert_non_null(v);
    assert_non_null(u);
    assert_int_equal(*v, 1000 + k);
    assert_int_equal(*u, 2000 + k);
    assert_ptr_equal(v, weft_get_mut(w, e[k], late));
    assert_null(weft_get(w, e[k], soa[NSOA - 1]));
    assert_null(weft_get(w, e[k], tag));
    assert_null(weft_get(w, e[k], WEFT_MAX_COMPONENTS + 1));
  }
  weft_world_destroy(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_storage_soa_fields_are_separate_arrays),
      cmocka_unit_test(test_storage_arrays_staggered_in_pages),
      cmocka_unit_test(test_storage_get_past_the_packed_arrays),
      cmocka_unit_test(test_storage_large_chunks_locate_high_rows),
      cmocka_unit_test(test_storage_trim_frees_empty_segments),
      cmocka_unit_test(test_storage_iter_fields_match_iter_field),
      cmocka_unit_test(test_storage_soa_mixed_field_sizes),
      cmocka_unit_test(test_storage_aos_columns_aligned),
      cmocka_unit_test(test_storage_aos_fields_have_no_arrays),
      cmocka_unit_test(test_storage_large_component_spans_chunks),
      cmocka_unit_test(test_storage_rows_capped_per_chunk),
      cmocka_unit_test(test_storage_swap_remove_keeps_chunks_dense),
      cmocka_unit_test(test_storage_empty_chunks_kept_spare_and_reused),
      cmocka_unit_test(test_storage_archetypes_counted),
      cmocka_unit_test(test_storage_moves_counted),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
