/* SPDX-License-Identifier: MIT */
/* Unit tests for component registration, lookup and layouts. */
#include "support/weft_test.h"

typedef struct vec3_t {
  float x, y, z;
} vec3_t;

/* Registers @p d expecting failure @p want; checks nothing was registered. */
static void expect_rejected(weft_world_t *w, const weft_component_desc_t *d,
                            int want) {
  uint32_t before = weft_component_count(w);
  weft_component_t id = 0;
  assert_int_equal(weft_component_register(w, d, &id), want);
  assert_int_equal(weft_component_count(w), before);
  assert_int_equal(wt_stats(w).components, before);
  if (d->name != NULL && d->name[0] != '\0' &&
      strlen(d->name) < WEFT_NAME_MAX) {
    weft_component_t found = 0;
    int rc = weft_component_lookup(w, d->name, &found);
    /* Either the name was never registered, or it was registered before
     * this call (EEXIST) and still names the old component. */
    if (want == WEFT_EEXIST) {
      assert_int_equal(rc, WEFT_OK);
      assert_true(found >= 1 && found <= before);
    } else {
      assert_int_equal(rc, WEFT_ENOTFOUND);
    }
  }
  const char *msg = weft_world_last_error(w);
  assert_non_null(msg);
  assert_true(strlen(msg) > 0);
}

static weft_component_desc_t desc(const char *name, uint32_t size,
                                  uint32_t alignment) {
  weft_component_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.size = size;
  d.alignment = alignment;
  return d;
}

static void test_component_register_and_lookup(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  assert_int_equal(weft_component_count(w), 0);
  char names[5][16];
  weft_component_t ids[5];
  const uint32_t sizes[5] = {12, 8, 0, 64, 3};
  for (uint32_t i = 0; i < 5; i++) {
    snprintf(names[i], sizeof names[i], "comp_%u", i);
    weft_component_desc_t d = desc(names[i], sizes[i], 0);
    assert_int_equal(weft_component_register(w, &d, &ids[i]), WEFT_OK);
    /* Ids are dense and start at 1. */
    assert_int_equal(ids[i], i + 1);
    assert_int_equal(weft_component_count(w), i + 1);
  }
  /* The world copied the names: scribbling over ours changes nothing. */
  for (uint32_t i = 0; i < 5; i++) {
    memset(names[i], 'x', sizeof names[i] - 1);
  }
  for (uint32_t i = 0; i < 5; i++) {
    char name[16];
    snprintf(name, sizeof name, "comp_%u", i);
    weft_component_t found = 0;
    assert_int_equal(weft_component_lookup(w, name, &found), WEFT_OK);
    assert_int_equal(found, ids[i]);
    weft_component_info_t info;
    memset(&info, 0, sizeof info);
    assert_int_equal(weft_component_info(w, ids[i], &info), WEFT_OK);
    assert_non_null(info.name);
    assert_string_equal(info.name, name);
    assert_ptr_not_equal(info.name, names[i]);
    assert_int_equal(info.size, sizes[i]);
    assert_int_equal(info.field_count, 0);
    assert_int_equal(info.flags, 0);
  }
  assert_int_equal(wt_stats(w).components, 5);
  weft_world_destroy(w);
}

static void test_component_lookup_missing(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  wt_register(w, "present", 4, 0);
  weft_component_t found = 12345;
  assert_int_equal(weft_component_lookup(w, "absent", &found), WEFT_ENOTFOUND);
  assert_int_equal(weft_component_lookup(w, "presen", &found), WEFT_ENOTFOUND);
  assert_int_equal(weft_component_lookup(w, "present!", &found),
                   WEFT_ENOTFOUND);
  assert_int_equal(weft_component_lookup(w, "present", &found), WEFT_OK);
  assert_int_equal(found, 1);
  weft_world_destroy(w);
}

static void test_component_register_rejects_bad_names(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  wt_register(w, "first", 4, 0);
  weft_component_desc_t d = desc(NULL, 4, 0);
  expect_rejected(w, &d, WEFT_EINVAL);
  d = desc("", 4, 0);
  expect_rejected(w, &d, WEFT_EINVAL);
  char longest[WEFT_NAME_MAX + 8];
  memset(longest, 'n', sizeof longest);
  longest[WEFT_NAME_MAX] = '\0'; /* WEFT_NAME_MAX chars: one too many */
  d = desc(longest, 4, 0);
  expect_rejected(w, &d, WEFT_EINVAL);
  longest[WEFT_NAME_MAX + 7] = '\0';
  memset(longest, 'm', WEFT_NAME_MAX + 7);
  d = desc(longest, 4, 0);
  expect_rejected(w, &d, WEFT_EINVAL);
  /* The longest legal name: WEFT_NAME_MAX - 1 characters. */
  longest[WEFT_NAME_MAX - 1] = '\0';
  d = desc(longest, 4, 0);
  weft_component_t id = 0;
  assert_int_equal(weft_component_register(w, &d, &id), WEFT_OK);
  weft_component_t found = 0;
  assert_int_equal(weft_component_lookup(w, longest, &found), WEFT_OK);
  assert_int_equal(found, id);
  /* Unknown flags. */
  d = desc("flags", 4, 0);
  d.flags = 0x8u;
  expect_rejected(w, &d, WEFT_EINVAL);
  d.flags = 0x80000000u;
  expect_rejected(w, &d, WEFT_EINVAL);
  assert_int_equal(weft_component_count(w), 2);
  weft_world_destroy(w);
}

static void test_component_register_rejects_duplicates(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "dup", 8, 0);
  weft_component_desc_t d = desc("dup", 16, 0);
  expect_rejected(w, &d, WEFT_EEXIST);
  d = desc("dup", 0, 0); /* a tag with the same name: still a duplicate */
  expect_rejected(w, &d, WEFT_EEXIST);
  weft_component_info_t info;
  assert_int_equal(weft_component_info(w, a, &info), WEFT_OK);
  assert_int_equal(info.size, 8); /* the original is untouched */
  /* Names are per world. */
  weft_world_t *w2 = wt_world_new(NULL);
  weft_component_t b = wt_register(w2, "dup", 16, 0);
  assert_int_equal(weft_component_info(w2, b, &info), WEFT_OK);
  assert_int_equal(info.size, 16);
  weft_world_destroy(w2);
  weft_world_destroy(w);
}

static void test_component_register_rejects_bad_layout(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL); /* default 16 KiB chunks */
  wt_register(w, "existing", 4, 0);
  const uint32_t quarter = WEFT_CHUNK_SIZE_DEFAULT / 4;

  /* Size / alignment. */
  weft_component_desc_t d = desc("bad", 6, 4);
  expect_rejected(w, &d, WEFT_ELAYOUT);
  d = desc("bad", 12, 8);
  expect_rejected(w, &d, WEFT_ELAYOUT);
  d = desc("bad", 4, 8);
  expect_rejected(w, &d, WEFT_ELAYOUT);
  d = desc("bad", 12, 3);
  expect_rejected(w, &d, WEFT_ELAYOUT);
  d = desc("bad", 12, 6);
  expect_rejected(w, &d, WEFT_ELAYOUT);
  d = desc("bad", 128, 128);
  expect_rejected(w, &d, WEFT_ELAYOUT);
  d = desc("bad", 256, 256);
  expect_rejected(w, &d, WEFT_ELAYOUT);
  d = desc("bad", quarter + 16, 0); /* too large for a quarter chunk */
  expect_rejected(w, &d, WEFT_ELAYOUT);
  d = desc("bad", 0x80000000u, 0);
  expect_rejected(w, &d, WEFT_ELAYOUT);

  /* Fields. */
  const weft_field_desc_t out_of_range[] = {{"a", 0, 4, 0}, {"b", 8, 8, 0}};
  const weft_field_desc_t past_end[] = {{"a", 12, 1, 0}};
  const weft_field_desc_t wraps[] = {{"a", 0xfffffff0u, 0x20u, 0}};
  const weft_field_desc_t overlap[] = {{"a", 0, 8, 0}, {"b", 4, 4, 0}};
  const weft_field_desc_t overlap_rev[] = {{"b", 8, 4, 0}, {"a", 4, 8, 0}};
  const weft_field_desc_t same_name[] = {{"a", 0, 4, 0}, {"a", 4, 4, 0}};
  const weft_field_desc_t zero_size[] = {{"a", 0, 4, 0}, {"b", 4, 0, 0}};
  const weft_field_desc_t unnamed[] = {{"a", 0, 4, 0}, {NULL, 4, 4, 0}};
  struct {
    const weft_field_desc_t *fields;
    uint32_t count;
  } bad_fields[] = {{out_of_range, 2}, {past_end, 1},    {wraps, 1},
                    {overlap, 2},      {overlap_rev, 2}, {same_name, 2},
                    {zero_size, 2},    {unnamed, 2}};
  for (size_t i = 0; i < sizeof bad_fields / sizeof bad_fields[0]; i++) {
    d = desc("bad", 12, 4);
    d.fields = bad_fields[i].fields;
    d.field_count = bad_fields[i].count;
    expect_rejected(w, &d, WEFT_ELAYOUT);
    d.flags = WEFT_COMPONENT_SOA; /* same verdict when stored SoA */
    expect_rejected(w, &d, WEFT_ELAYOUT);
  }

  /* SoA without fields; fields or SoA on a tag. */
  d = desc("bad", 12, 4);
  d.flags = WEFT_COMPONENT_SOA;
  expect_rejected(w, &d, WEFT_ELAYOUT);
  const weft_field_desc_t one[] = {{"a", 0, 4, 0}};
  d = desc("bad", 0, 0);
  d.fields = one;
  d.field_count = 1;
  expect_rejected(w, &d, WEFT_ELAYOUT);
  d = desc("bad", 0, 0);
  d.flags = WEFT_COMPONENT_SOA;
  expect_rejected(w, &d, WEFT_ELAYOUT);

  /* Nothing was registered under the name: a good layout now succeeds. */
  const weft_field_desc_t good[] = {
      {"a", 0, 4, 0}, {"b", 4, 4, 0}, {"c", 8, 4, 0}};
  d = desc("bad", 12, 4);
  d.fields = good;
  d.field_count = 3;
  d.flags = WEFT_COMPONENT_SOA;
  weft_component_t id = 0;
  assert_int_equal(weft_component_register(w, &d, &id), WEFT_OK);
  assert_int_equal(id, 2);
  assert_int_equal(weft_component_count(w), 2);
  weft_world_destroy(w);
}

static void test_component_size_limit_follows_chunk_size(void **state) {
  (void)state;
  /* The quarter-chunk limit scales with the world's chunk size. */
  weft_world_t *small = wt_world_sized(0, WEFT_CHUNK_SIZE_MIN);
  weft_world_t *big = wt_world_sized(0, WEFT_CHUNK_SIZE_MIN * 16);
  const uint32_t size = WEFT_CHUNK_SIZE_MIN; /* > quarter of small */
  weft_component_desc_t d = desc("large", size, 0);
  expect_rejected(small, &d, WEFT_ELAYOUT);
  weft_component_t id = 0;
  assert_int_equal(weft_component_register(big, &d, &id), WEFT_OK);
  d = desc("medium", WEFT_CHUNK_SIZE_MIN / 8, 0);
  assert_int_equal(weft_component_register(small, &d, &id), WEFT_OK);
  weft_world_destroy(small);
  weft_world_destroy(big);
}

static void test_component_field_count_limit(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  enum { N = WEFT_MAX_FIELDS + 1 };
  weft_field_desc_t fields[N];
  char names[N][8];
  for (uint32_t i = 0; i < N; i++) {
    snprintf(names[i], sizeof names[i], "f%u", i);
    fields[i].name = names[i];
    fields[i].offset = i * 4u;
    fields[i].size = 4u;
    fields[i].type = WEFT_FIELD_RAW;
  }
  weft_component_desc_t d = desc("many", N * 4u, 4);
  d.fields = fields;
  d.field_count = N;
  expect_rejected(w, &d, WEFT_ETOOMANY);
  d.size = WEFT_MAX_FIELDS * 4u;
  d.field_count = WEFT_MAX_FIELDS;
  weft_component_t id = 0;
  assert_int_equal(weft_component_register(w, &d, &id), WEFT_OK);
  weft_component_info_t info;
  assert_int_equal(weft_component_info(w, id, &info), WEFT_OK);
  assert_int_equal(info.field_count, WEFT_MAX_FIELDS);
  for (uint32_t i = 0; i < WEFT_MAX_FIELDS; i++) {
    uint32_t idx = 999;
    assert_int_equal(weft_component_field(w, id, names[i], &idx), WEFT_OK);
    assert_int_equal(idx, i);
  }
  weft_world_destroy(w);
}

static void test_component_max_components(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  char name[32];
  for (uint32_t i = 0; i < WEFT_MAX_COMPONENTS; i++) {
    snprintf(name, sizeof name, "c%u", i);
    weft_component_desc_t d = desc(name, (i % 3) * 4u, 0);
    weft_component_t id = 0;
    assert_int_equal(weft_component_register(w, &d, &id), WEFT_OK);
    assert_int_equal(id, i + 1);
  }
  assert_int_equal(weft_component_count(w), WEFT_MAX_COMPONENTS);
  snprintf(name, sizeof name, "c%u", WEFT_MAX_COMPONENTS);
  weft_component_desc_t d = desc(name, 4, 0);
  expect_rejected(w, &d, WEFT_ETOOMANY);
  d = desc("another", 0, 0);
  expect_rejected(w, &d, WEFT_ETOOMANY);
  /* Every registered one is still reachable. */
  for (uint32_t i = 0; i < WEFT_MAX_COMPONENTS; i += 37) {
    snprintf(name, sizeof name, "c%u", i);
    weft_component_t found = 0;
    assert_int_equal(weft_component_lookup(w, name, &found), WEFT_OK);
    assert_int_equal(found, i + 1);
  }
  weft_component_t last = 0;
  snprintf(name, sizeof name, "c%u", WEFT_MAX_COMPONENTS - 1);
  assert_int_equal(weft_component_lookup(w, name, &last), WEFT_OK);
  assert_int_equal(last, WEFT_MAX_COMPONENTS);
  /* The last one is usable on an entity. */
  const weft_component_t comps[] = {last, 0};
  weft_entity_t e = wt_spawn_with(w, comps, NULL);
  assert_true(weft_has(w, e, last));
  weft_world_destroy(w);
}

/* Largest power of two dividing n, capped at 16 (n > 0). */
static uint32_t expected_default_alignment(uint32_t n) {
  uint32_t a = n & (~n + 1u);
  return a > 16u ? 16u : a;
}

static void test_component_default_alignment(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  const uint32_t sizes[] = {1,  2,  3,  4,  6,  8,   12,  16,   20,
                            24, 32, 48, 64, 96, 100, 128, 1000, 1024};
  char name[32];
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    snprintf(name, sizeof name, "s%zu", i);
    weft_component_t id = wt_register(w, name, sizes[i], 0);
    weft_component_info_t info;
    assert_int_equal(weft_component_info(w, id, &info), WEFT_OK);
    assert_int_equal(info.size, sizes[i]);
    assert_int_equal(info.alignment, expected_default_alignment(sizes[i]));
  }
  /* Tags default to alignment 1; explicit alignments are kept. */
  weft_component_t tag = wt_register_tag(w, "tag");
  weft_component_info_t info;
  assert_int_equal(weft_component_info(w, tag, &info), WEFT_OK);
  assert_int_equal(info.size, 0);
  assert_int_equal(info.alignment, 1);
  const uint32_t aligns[] = {1, 2, 4, 8, 16, 32, 64};
  for (size_t i = 0; i < sizeof aligns / sizeof aligns[0]; i++) {
    snprintf(name, sizeof name, "a%zu", i);
    weft_component_t id = wt_register(w, name, 64, aligns[i]);
    assert_int_equal(weft_component_info(w, id, &info), WEFT_OK);
    assert_int_equal(info.alignment, aligns[i]);
  }
  /* The convenience macro picks the C type's size and alignment. */
  weft_component_desc_t d = WEFT_COMPONENT_DESC(vec3_t);
  weft_component_t v = 0;
  assert_int_equal(weft_component_register(w, &d, &v), WEFT_OK);
  assert_int_equal(weft_component_info(w, v, &info), WEFT_OK);
  assert_string_equal(info.name, "vec3_t");
  assert_int_equal(info.size, sizeof(vec3_t));
  assert_int_equal(info.alignment, _Alignof(vec3_t));
  weft_world_destroy(w);
}

static void test_component_info_and_fields(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  const weft_field_desc_t fields[] = {
      WEFT_FIELD(vec3_t, x), WEFT_FIELD(vec3_t, y), WEFT_FIELD(vec3_t, z)};
  weft_component_desc_t d = WEFT_COMPONENT_DESC(vec3_t);
  d.fields = fields;
  d.field_count = 3;
  d.flags = WEFT_COMPONENT_SOA;
  weft_component_t soa = 0;
  assert_int_equal(weft_component_register(w, &d, &soa), WEFT_OK);
  weft_component_t plain = wt_register(w, "plain", 8, 0);

  weft_component_info_t info;
  assert_int_equal(weft_component_info(w, soa, &info), WEFT_OK);
  assert_int_equal(info.field_count, 3);
  assert_int_equal(info.flags, WEFT_COMPONENT_SOA);
  assert_int_equal(info.size, sizeof(vec3_t));

  const char *names[] = {"x", "y", "z"};
  for (uint32_t i = 0; i < 3; i++) {
    uint32_t idx = 999;
    assert_int_equal(weft_component_field(w, soa, names[i], &idx), WEFT_OK);
    assert_int_equal(idx, i);
  }
  uint32_t idx = 0;
  assert_int_equal(weft_component_field(w, soa, "w", &idx), WEFT_ENOTFOUND);
  assert_int_equal(weft_component_field(w, soa, "xx", &idx), WEFT_ENOTFOUND);
  assert_int_equal(weft_component_field(w, plain, "x", &idx), WEFT_ENOTFOUND);
  const weft_component_t bad[] = {0, weft_component_count(w) + 1, 0xffffffffu};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(weft_component_info(w, bad[i], &info), WEFT_ENOCOMP);
    assert_int_equal(weft_component_field(w, bad[i], "x", &idx), WEFT_ENOCOMP);
  }
  weft_world_destroy(w);
}

static void test_component_tag_semantics(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t tag = wt_register_tag(w, "marker");
  weft_component_t val = wt_register(w, "value", 4, 0);
  const weft_component_t comps[] = {tag, val, 0};
  uint32_t v = 17;
  const void *vals[] = {NULL, &v};
  weft_entity_t e = wt_spawn_with(w, comps, vals);
  weft_entity_t bare = wt_spawn(w);
  assert_true(weft_has(w, e, tag));
  assert_false(weft_has(w, bare, tag));
  assert_null(weft_get(w, e, tag));
  uint32_t out = 0;
  assert_int_equal(weft_read(w, e, tag, &out), WEFT_ETAG);
  assert_int_equal(weft_read(w, e, val, &out), WEFT_OK);
  assert_int_equal(out, v);
  const void *p = NULL;
  assert_int_equal(weft_try_get(w, e, tag, &p), WEFT_ETAG);
  assert_int_equal(weft_add(w, bare, tag, NULL), WEFT_OK);
  assert_true(weft_has(w, bare, tag));
  assert_int_equal(weft_remove(w, e, tag), WEFT_OK);
  assert_false(weft_has(w, e, tag));
  assert_int_equal(weft_read(w, e, val, &out), WEFT_OK);
  assert_int_equal(out, v);
  weft_world_destroy(w);
}

static void test_component_register_after_spawn(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 4, 0);
  uint32_t va = 5;
  const weft_component_t comps[] = {a, 0};
  const void *vals[] = {&va};
  weft_entity_t e = wt_spawn_with(w, comps, vals);
  weft_component_t b = wt_register(w, "b", 8, 0);
  uint64_t vb = 0x1122334455667788ull;
  assert_int_equal(weft_add(w, e, b, &vb), WEFT_OK);
  const uint32_t *pa = weft_get(w, e, a);
  const uint64_t *pb = weft_get(w, e, b);
  assert_non_null(pa);
  assert_non_null(pb);
  assert_int_equal(*pa, va);
  assert_int_equal(*pb, vb);
  weft_world_destroy(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_component_register_and_lookup),
      cmocka_unit_test(test_component_lookup_missing),
      cmocka_unit_test(test_component_register_rejects_bad_names),
      cmocka_unit_test(test_component_register_rejects_duplicates),
      cmocka_unit_test(test_component_register_rejects_bad_layout),
      cmocka_unit_test(test_component_size_limit_follows_chunk_size),
      cmocka_unit_test(test_component_field_count_limit),
      cmocka_unit_test(test_component_max_components),
      cmocka_unit_test(test_component_default_alignment),
      cmocka_unit_test(test_component_info_and_fields),
      cmocka_unit_test(test_component_tag_semantics),
      cmocka_unit_test(test_component_register_after_spawn),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
