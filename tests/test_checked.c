/* SPDX-License-Identifier: MIT */
/* Unit tests for checked mode: misuse is reported to the panic handler. */
#include "support/weft_test.h"

#include <stdlib.h>

typedef struct panic_log_t {
  int calls;
  int line;
  bool had_file;
  char message[256];
} panic_log_t;

/* Records the call and returns, so the API continues (release behaviour). */
static void record_panic(void *user, const char *file, int line,
                         const char *message) {
  panic_log_t *log = user;
  log->calls++;
  log->line = line;
  log->had_file = file != NULL && file[0] != '\0';
  snprintf(log->message, sizeof log->message, "%s",
           message != NULL ? message : "");
}

typedef struct cfix_t {
  weft_world_t *w;
  panic_log_t log;
  weft_component_t a, b;
  weft_entity_t *as; /* entities in archetype {a} */
  uint32_t n_as;
  weft_entity_t ab[2]; /* entities in archetype {a, b} */
  weft_query_t *q;     /* include a: both archetypes, many chunks */
} cfix_t;

static void cfix_init(cfix_t *f, weft_checked_t mode) {
  memset(f, 0, sizeof *f);
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.chunk_size = WEFT_CHUNK_SIZE_MIN;
  cfg.checked = mode;
  cfg.panic = record_panic;
  cfg.panic_user = &f->log;
  f->w = wt_world_new(&cfg);
  f->a = wt_register(f->w, "a", 64, 0);
  f->b = wt_register(f->w, "b", 8, 0);
  f->n_as = 500; /* 64-byte rows in 4 KiB chunks: several chunks */
  f->as = calloc(f->n_as, sizeof *f->as);
  assert_non_null(f->as);
  const weft_component_t only_a[] = {f->a, 0};
  const weft_component_t ab[] = {f->a, f->b, 0};
  assert_int_equal(weft_spawn_batch(f->w, f->n_as, only_a, NULL, NULL, f->as),
                   WEFT_OK);
  /* Leave a free row at the end of {a} so a spawn there needs no chunk. */
  assert_int_equal(weft_despawn(f->w, f->as[f->n_as - 1]), WEFT_OK);
  f->n_as--;
  f->ab[0] = wt_spawn_with(f->w, ab, NULL);
  f->ab[1] = wt_spawn_with(f->w, ab, NULL);
  weft_query_desc_t d;
  memset(&d, 0, sizeof d);
  d.include[0] = f->a;
  assert_int_equal(weft_query_create(f->w, &d, &f->q), WEFT_OK);
  assert_int_equal(f->log.calls, 0);
}

static void cfix_free(cfix_t *f) {
  weft_query_destroy(f->q);
  weft_world_destroy(f->w);
  free(f->as);
}

/* Starts iterating and takes the first chunk. */
static void begin(cfix_t *f, weft_iter_t *it) {
  weft_query_iter(f->q, it);
  assert_true(weft_iter_next(it));
  assert_int_equal(f->log.calls, 0);
}

/* Runs the rest of the loop, checking that no panic is reported and that
 * the staged change stays invisible until the loop ends. Returns the rows
 * handed out after the first chunk. */
typedef bool (*visible_fn)(const cfix_t *f, weft_entity_t e);

static uint32_t finish_loop(cfix_t *f, weft_iter_t *it, visible_fn changed,
                            weft_entity_t e) {
  uint32_t rows = 0;
  assert_true(weft_world_defer_depth(f->w) > 0);
  assert_false(changed(f, e));
  while (weft_iter_next(it)) {
    rows += it->count;
    assert_false(changed(f, e));
  }
  assert_int_equal(f->log.calls, 0);
  assert_int_equal(weft_world_defer_depth(f->w), 0);
  assert_int_equal(weft_world_last_drain(f->w), WEFT_OK);
  return rows;
}

static void test_checked_mode_reflects_config(void **state) {
  (void)state;
  const weft_checked_t modes[] = {WEFT_CHECKED_ON, WEFT_CHECKED_OFF,
                                  WEFT_CHECKED_DEFAULT};
#ifdef NDEBUG
  const bool want[] = {true, false, false};
#else
  const bool want[] = {true, false, true};
#endif
  for (int i = 0; i < 3; i++) {
    weft_world_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.checked = modes[i];
    weft_world_t *w = wt_world_new(&cfg);
    assert_int_equal(weft_world_checked(w), want[i]);
    weft_world_destroy(w);
  }
}

static bool is_alive(const cfix_t *f, weft_entity_t e) {
  return weft_is_alive(f->w, e);
}

static bool is_dead(const cfix_t *f, weft_entity_t e) {
  return !weft_is_alive(f->w, e);
}

static bool has_b(const cfix_t *f, weft_entity_t e) {
  return weft_has(f->w, e, f->b);
}

static bool lacks_b(const cfix_t *f, weft_entity_t e) {
  return !weft_has(f->w, e, f->b);
}

static bool b_enabled(const cfix_t *f, weft_entity_t e) {
  return weft_is_enabled(f->w, e, f->b);
}

static bool b_disabled(const cfix_t *f, weft_entity_t e) {
  return !weft_is_enabled(f->w, e, f->b);
}

/* Structural calls during iteration stage: no panic, nothing visible until
 * the loop ends, then applied. */
static void test_checked_spawn_during_iteration_stages(void **state) {
  (void)state;
  cfix_t f;
  cfix_init(&f, WEFT_CHECKED_ON);
  weft_iter_t it;
  begin(&f, &it);
  uint32_t rows = it.count;
  const weft_component_t only_a[] = {f.a, 0};
  weft_entity_t e;
  assert_int_equal(weft_spawn_with(f.w, only_a, NULL, &e), WEFT_OK);
  assert_int_equal(weft_query_count(f.q), f.n_as + 2);
  rows += finish_loop(&f, &it, is_alive, e);
  assert_int_equal(rows, f.n_as + 2); /* the new entity was not visited */
  assert_true(weft_is_alive(f.w, e));
  assert_true(weft_has(f.w, e, f.a));
  assert_int_equal(weft_query_count(f.q), f.n_as + 3);
  cfix_free(&f);
}

static void test_checked_unrelated_spawn_during_iteration_stages(void **state) {
  (void)state;
  /* Also a change the query does not match. */
  cfix_t f;
  cfix_init(&f, WEFT_CHECKED_ON);
  weft_entity_t warm = wt_spawn(f.w); /* the empty archetype has room */
  weft_iter_t it;
  begin(&f, &it);
  weft_entity_t e;
  assert_int_equal(weft_spawn(f.w, &e), WEFT_OK);
  assert_int_equal(weft_world_count(f.w), f.n_as + 3);
  (void)finish_loop(&f, &it, is_alive, e);
  assert_true(weft_is_alive(f.w, e));
  assert_true(weft_is_alive(f.w, warm));
  assert_int_equal(weft_world_count(f.w), f.n_as + 4);
  cfix_free(&f);
}

static void test_checked_despawn_during_iteration_stages(void **state) {
  (void)state;
  cfix_t f;
  cfix_init(&f, WEFT_CHECKED_ON);
  weft_iter_t it;
  begin(&f, &it);
  uint32_t rows = it.count;
  assert_int_equal(weft_despawn(f.w, f.as[3]), WEFT_OK);
  assert_non_null(weft_get(f.w, f.as[3], f.a)); /* still readable */
  rows += finish_loop(&f, &it, is_dead, f.as[3]);
  assert_int_equal(rows, f.n_as + 2); /* every row, the despawned one too */
  assert_false(weft_is_alive(f.w, f.as[3]));
  assert_int_equal(weft_query_count(f.q), f.n_as + 1);
  cfix_free(&f);
}

static void test_checked_add_during_iteration_stages(void **state) {
  (void)state;
  cfix_t f;
  cfix_init(&f, WEFT_CHECKED_ON);
  weft_iter_t it;
  begin(&f, &it);
  assert_int_equal(weft_add(f.w, f.as[5], f.b, NULL), WEFT_OK);
  (void)finish_loop(&f, &it, has_b, f.as[5]);
  assert_true(weft_has(f.w, f.as[5], f.b));
  cfix_free(&f);
}

static void test_checked_other_structural_changes_stage(void **state) {
  (void)state;
  for (int kind = 0; kind < 3; kind++) {
    cfix_t f;
    cfix_init(&f, WEFT_CHECKED_ON);
    if (kind == 2) {
      assert_int_equal(weft_disable(f.w, f.ab[0], f.b), WEFT_OK);
    }
    weft_iter_t it;
    begin(&f, &it);
    switch (kind) {
    case 0:
      assert_int_equal(weft_remove(f.w, f.ab[1], f.b), WEFT_OK);
      (void)finish_loop(&f, &it, lacks_b, f.ab[1]);
      assert_false(weft_has(f.w, f.ab[1], f.b));
      break;
    case 1:
      assert_int_equal(weft_disable(f.w, f.ab[1], f.b), WEFT_OK);
      (void)finish_loop(&f, &it, b_disabled, f.ab[1]);
      assert_false(weft_is_enabled(f.w, f.ab[1], f.b));
      assert_true(weft_has(f.w, f.ab[1], f.b));
      break;
    default:
      assert_int_equal(weft_enable(f.w, f.ab[0], f.b), WEFT_OK);
      (void)finish_loop(&f, &it, b_enabled, f.ab[0]);
      assert_true(weft_is_enabled(f.w, f.ab[0], f.b));
      break;
    }
    cfix_free(&f);
  }
}

static void test_checked_set_during_iteration_is_fine(void **state) {
  (void)state;
  cfix_t f;
  cfix_init(&f, WEFT_CHECKED_ON);
  uint8_t value[64];
  memset(value, 0x3c, sizeof value);
  uint32_t rows = 0;
  weft_iter_t it;
  weft_query_iter(f.q, &it);
  while (weft_iter_next(&it)) {
    for (uint32_t r = 0; r < it.count; r++) {
      /* Overwriting present components is not structural. */
      assert_int_equal(weft_set(f.w, it.entities[r], f.a, value), WEFT_OK);
      uint8_t *p = weft_get_mut(f.w, it.entities[r], f.a);
      assert_non_null(p);
      p[0] = (uint8_t)r;
    }
    rows += it.count;
  }
  assert_int_equal(f.log.calls, 0);
  assert_int_equal(rows, f.n_as + 2);
  cfix_free(&f);
}

static void test_checked_change_between_iterations_is_fine(void **state) {
  (void)state;
  cfix_t f;
  cfix_init(&f, WEFT_CHECKED_ON);
  weft_iter_t it;
  uint32_t rows = 0;
  weft_query_iter(f.q, &it);
  while (weft_iter_next(&it)) {
    rows += it.count;
  }
  assert_int_equal(rows, f.n_as + 2);
  /* The iteration is over: structural changes are allowed again. */
  const weft_component_t only_a[] = {f.a, 0};
  wt_spawn_with(f.w, only_a, NULL);
  assert_int_equal(weft_despawn(f.w, f.as[0]), WEFT_OK);
  rows = 0;
  weft_query_iter(f.q, &it);
  while (weft_iter_next(&it)) {
    rows += it.count;
  }
  assert_int_equal(rows, f.n_as + 2);
  assert_int_equal(f.log.calls, 0);
  cfix_free(&f);
}

typedef struct s3_t {
  float x, y, z;
} s3_t;

/* World with an SoA component (3 fields) and an AoS one with 2 fields. */
static weft_world_t *field_world(weft_checked_t mode, panic_log_t *log,
                                 weft_query_t **q) {
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.checked = mode;
  cfg.panic = record_panic;
  cfg.panic_user = log;
  weft_world_t *w = wt_world_new(&cfg);
  static const weft_field_desc_t sf[] = {
      WEFT_FIELD(s3_t, x), WEFT_FIELD(s3_t, y), WEFT_FIELD(s3_t, z)};
  weft_component_desc_t d = WEFT_COMPONENT_DESC(s3_t);
  d.fields = sf;
  d.field_count = 3;
  d.flags = WEFT_COMPONENT_SOA;
  weft_component_t s = 0;
  assert_int_equal(weft_component_register(w, &d, &s), WEFT_OK);
  static const weft_field_desc_t af[] = {{"lo", 0, 4, 0}, {"hi", 4, 4, 0}};
  weft_component_desc_t da;
  memset(&da, 0, sizeof da);
  da.name = "aos";
  da.size = 8;
  da.fields = af;
  da.field_count = 2;
  weft_component_t a = 0;
  assert_int_equal(weft_component_register(w, &da, &a), WEFT_OK);
  const weft_component_t comps[] = {s, a, 0};
  assert_int_equal(weft_spawn_batch(w, 10, comps, NULL, NULL, NULL), WEFT_OK);
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = s;
  qd.include[1] = a;
  assert_int_equal(weft_query_create(w, &qd, q), WEFT_OK);
  return w;
}

static void test_checked_iter_field_out_of_range_panics(void **state) {
  (void)state;
  panic_log_t log;
  memset(&log, 0, sizeof log);
  weft_query_t *q = NULL;
  weft_world_t *w = field_world(WEFT_CHECKED_ON, &log, &q);
  weft_iter_t it;
  weft_query_iter(q, &it);
  assert_true(weft_iter_next(&it));
  /* In range: no panic. */
  for (uint32_t j = 0; j < 3; j++) {
    assert_non_null(weft_iter_field(&it, 0, j));
  }
  assert_null(weft_iter_field(&it, 1, 0)); /* AoS term: NULL, not misuse */
  assert_null(weft_iter_field(&it, 1, 1));
  assert_int_equal(log.calls, 0);
  /* Out of range: panic and NULL. */
  const uint32_t bad[][2] = {
      {0, 3},          {0, WEFT_MAX_FIELDS},          {0, 0xffffffffu},
      {2, 0},          {WEFT_QUERY_MAX_TERMS - 1, 0}, {WEFT_QUERY_MAX_TERMS, 0},
      {0xffffffffu, 0}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int before = log.calls;
    assert_null(weft_iter_field(&it, bad[i][0], bad[i][1]));
    assert_int_equal(log.calls, before + 1);
    assert_true(strlen(log.message) > 0);
  }
  weft_query_destroy(q);
  weft_world_destroy(w);
}

static void test_checked_off_never_panics(void **state) {
  (void)state;
  panic_log_t log;
  memset(&log, 0, sizeof log);
  weft_query_t *q = NULL;
  weft_world_t *w = field_world(WEFT_CHECKED_OFF, &log, &q);
  assert_false(weft_world_checked(w));
  weft_iter_t it;
  weft_query_iter(q, &it);
  assert_true(weft_iter_next(&it));
  assert_null(weft_iter_field(&it, 0, 3));
  assert_null(weft_iter_field(&it, 2, 0));
  assert_null(weft_iter_field(&it, WEFT_QUERY_MAX_TERMS, 0));
  assert_int_equal(log.calls, 0);
  weft_query_destroy(q);
  weft_world_destroy(w);

  /* A structural change during iteration goes unreported. */
  cfix_t f;
  cfix_init(&f, WEFT_CHECKED_OFF);
  weft_iter_t it2;
  begin(&f, &it2);
  assert_int_equal(weft_despawn(f.w, f.as[1]), WEFT_OK);
  (void)weft_iter_next(&it2);
  assert_int_equal(f.log.calls, 0);
  cfix_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_checked_mode_reflects_config),
      cmocka_unit_test(test_checked_spawn_during_iteration_stages),
      cmocka_unit_test(test_checked_unrelated_spawn_during_iteration_stages),
      cmocka_unit_test(test_checked_despawn_during_iteration_stages),
      cmocka_unit_test(test_checked_add_during_iteration_stages),
      cmocka_unit_test(test_checked_other_structural_changes_stage),
      cmocka_unit_test(test_checked_set_during_iteration_is_fine),
      cmocka_unit_test(test_checked_change_between_iterations_is_fine),
      cmocka_unit_test(test_checked_iter_field_out_of_range_panics),
      cmocka_unit_test(test_checked_off_never_panics),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
