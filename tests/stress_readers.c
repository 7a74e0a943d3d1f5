/* SPDX-License-Identifier: MIT */
/*
 * Concurrent readers: the world's read-only entry points (query iteration,
 * weft_get, weft_get_many, weft_has, weft_is_alive, weft_read, stats) are
 * documented as safe from several threads at once while nothing writes.
 * Four threads hammer one world with them, stale and forged handles
 * included, and each checks every value against what it must be. Run under
 * TSan in CI, this is what backs the threading notes in the headers.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include <weft.h>

#define READERS 4u
#define N 20000u
#define PASSES 40u

typedef struct shared_t {
  weft_world_t *w;
  weft_query_t *q;
  weft_component_t val, soa, tag;
  weft_entity_t live[N];
  weft_entity_t dead[N / 4];
  uint64_t expect_sum; /* sum of val over live entities */
} shared_t;

typedef struct reader_t {
  shared_t *s;
  uint32_t id;
  uint64_t errors;
  uint64_t stale_seen;
} reader_t;

typedef struct pair_t {
  uint32_t a, b;
} pair_t;

static uint64_t value_of(weft_entity_t e) {
  return (uint64_t)weft_entity_index(e) * 2654435761u;
}

/* One pass over the query: every row's value and field must match. */
static void check_iteration(reader_t *r) {
  shared_t *s = r->s;
  weft_iter_t it;
  uint64_t sum = 0;
  uint32_t rows = 0;
  for (weft_query_iter(s->q, &it); weft_iter_next(&it);) {
    const uint64_t *v = it.columns[0];
    void *f[WEFT_MAX_FIELDS];
    if (weft_iter_fields(&it, 1, f) != 2)
      r->errors++;
    const uint32_t *fa = f[0], *fb = f[1];
    for (uint32_t i = 0; i < it.count; i++) {
      uint32_t idx = weft_entity_index(it.entities[i]);
      r->errors += v[i] != value_of(it.entities[i]);
      r->errors += fa[i] != idx || fb[i] != ~idx;
      sum += v[i];
    }
    rows += it.count;
  }
  r->errors += rows != N || sum != s->expect_sum;
}

/* Random access by handle, single and batched, live and stale. */
static void check_lookups(reader_t *r, uint32_t pass) {
  shared_t *s = r->s;
  const void *ptrs[64];
  for (uint32_t i = 0; i + 64 <= N; i += 64) {
    uint32_t hits = weft_get_many(s->w, s->live + i, 64, s->val, ptrs);
    r->errors += hits != 64;
    for (uint32_t k = 0; k < 64; k++)
      r->errors += *(const uint64_t *)ptrs[k] != value_of(s->live[i + k]);
  }
  for (uint32_t i = (r->id + pass) % 7; i < N; i += 7) {
    weft_entity_t e = s->live[i];
    const uint64_t *v = weft_get(s->w, e, s->val);
    pair_t p;
    r->errors += !v || *v != value_of(e);
    r->errors += !weft_is_alive(s->w, e) || !weft_has(s->w, e, s->tag);
    r->errors += weft_read(s->w, e, s->soa, &p) != WEFT_OK;
    r->errors += p.a != weft_entity_index(e) || p.b != ~weft_entity_index(e);
  }
  for (uint32_t i = r->id; i < N / 4; i += READERS) {
    weft_entity_t e = s->dead[i];
    r->errors += weft_is_alive(s->w, e) || weft_get(s->w, e, s->val) != NULL;
    r->stale_seen +=
        1; /* weft_get counts a rejected handle; is_alive does not */
  }
}

static void *reader_main(void *arg) {
  reader_t *r = arg;
  for (uint32_t pass = 0; pass < PASSES; pass++) {
    check_iteration(r);
    check_lookups(r, pass);
    weft_world_stats_t st;
    weft_world_stats(r->s->w, &st);
    r->errors += st.alive != N;
  }
  return NULL;
}

static void fill(void *user, const weft_iter_t *view, uint32_t first) {
  (void)user;
  (void)first;
  uint64_t *v = view->columns[0];
  uint32_t *fa = weft_iter_field(view, 1, 0);
  uint32_t *fb = weft_iter_field(view, 1, 1);
  for (uint32_t i = 0; i < view->count; i++) {
    uint32_t idx = weft_entity_index(view->entities[i]);
    v[i] = value_of(view->entities[i]);
    fa[i] = idx;
    fb[i] = ~idx;
  }
}

static void setup(shared_t *s) {
  memset(s, 0, sizeof(*s));
  assert_int_equal(weft_world_create(NULL, &s->w), WEFT_OK);
  weft_component_desc_t dv = {.name = "val", .size = 8};
  weft_field_desc_t fields[2] = {WEFT_FIELD(pair_t, a), WEFT_FIELD(pair_t, b)};
  weft_component_desc_t ds = {.name = "soa",
                              .size = sizeof(pair_t),
                              .fields = fields,
                              .field_count = 2,
                              .flags = WEFT_COMPONENT_SOA};
  weft_component_desc_t dt = {.name = "tag"};
  assert_int_equal(weft_component_register(s->w, &dv, &s->val), WEFT_OK);
  assert_int_equal(weft_component_register(s->w, &ds, &s->soa), WEFT_OK);
  assert_int_equal(weft_component_register(s->w, &dt, &s->tag), WEFT_OK);
  weft_component_t comps[] = {s->val, s->soa, s->tag, 0};
  /* Spawn and despawn a first generation so that stale handles exist. */
  assert_int_equal(weft_spawn_batch(s->w, N / 4, comps, fill, NULL, s->dead),
                   WEFT_OK);
  for (uint32_t i = 0; i < N / 4; i++)
    assert_int_equal(weft_despawn(s->w, s->dead[i]), WEFT_OK);
  assert_int_equal(weft_spawn_batch(s->w, N, comps, fill, NULL, s->live),
                   WEFT_OK);
  for (uint32_t i = 0; i < N; i++)
    s->expect_sum += value_of(s->live[i]);
  weft_query_desc_t qd = {.include = {s->val, s->soa}};
  assert_int_equal(weft_query_create(s->w, &qd, &s->q), WEFT_OK);
}

static void test_readers_concurrent_reads_agree(void **state) {
  (void)state;
  static shared_t s;
  setup(&s);
  weft_world_stats_t before;
  weft_world_stats(s.w, &before);
  pthread_t th[READERS];
  reader_t rd[READERS];
  for (uint32_t i = 0; i < READERS; i++) {
    rd[i] = (reader_t){.s = &s, .id = i};
    assert_int_equal(pthread_create(&th[i], NULL, reader_main, &rd[i]), 0);
  }
  uint64_t stale = 0;
  for (uint32_t i = 0; i < READERS; i++) {
    assert_int_equal(pthread_join(th[i], NULL), 0);
    assert_int_equal(rd[i].errors, 0);
    stale += rd[i].stale_seen;
  }
  /* Every rejected handle was counted, by whichever thread saw it. */
  weft_world_stats_t after;
  weft_world_stats(s.w, &after);
  assert_int_equal(after.stale - before.stale, stale);
  assert_int_equal(after.allocs, before.allocs); /* readers allocate nothing */
  weft_world_destroy(s.w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_readers_concurrent_reads_agree),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
