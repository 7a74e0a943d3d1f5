/* SPDX-License-Identifier: MIT */
/*
 * Component requirements: closures (transitive, cyclic, breadth-first),
 * every path that adds components expanding them in one move, explicit
 * values winning over defaults, removal leaving requirements in place,
 * the errors, a randomized comparison of the immediate, staged and
 * command-buffer paths, and allocation-free add/remove cycles.
 */
#include "support/weft_test.h"

#include <stdlib.h>

typedef struct req_world_t {
  weft_world_t *w;
  weft_component_t a, b, c, d, t; /* A -> B -> C; D unrelated; T a tag */
} req_world_t;

static const int32_t B_DEFAULT = 5;
static const int64_t C_DEFAULT = 7;

/* A (int32) requires B (int32, default 5), B requires C (int64, default
 * 7) and the tag T. D (int32) requires nothing. */
static req_world_t req_world(void) {
  req_world_t r;
  r.w = wt_world_new(NULL);
  r.a = wt_register(r.w, "A", 4, 4);
  r.b = wt_register(r.w, "B", 4, 4);
  r.c = wt_register(r.w, "C", 8, 8);
  r.d = wt_register(r.w, "D", 4, 4);
  r.t = wt_register_tag(r.w, "T");
  assert_int_equal(weft_component_require(r.w, r.a, r.b, &B_DEFAULT), WEFT_OK);
  assert_int_equal(weft_component_require(r.w, r.b, r.c, &C_DEFAULT), WEFT_OK);
  assert_int_equal(weft_component_require(r.w, r.b, r.t, NULL), WEFT_OK);
  return r;
}

static int32_t get_i32(const weft_world_t *w, weft_entity_t e,
                       weft_component_t c) {
  const int32_t *p = weft_get(w, e, c);
  assert_non_null(p);
  return *p;
}

static int64_t get_i64(const weft_world_t *w, weft_entity_t e,
                       weft_component_t c) {
  const int64_t *p = weft_get(w, e, c);
  assert_non_null(p);
  return *p;
}

/* e has A = a, and B, C and T with the values given. */
static void assert_full(const req_world_t *r, weft_entity_t e, int32_t a,
                        int32_t b, int64_t c) {
  assert_true(weft_is_alive(r->w, e));
  assert_int_equal(get_i32(r->w, e, r->a), a);
  assert_int_equal(get_i32(r->w, e, r->b), b);
  assert_int_equal(get_i64(r->w, e, r->c), c);
  assert_true(weft_has(r->w, e, r->t));
}

static void test_require_closure_transitive_and_cyclic(void **state) {
  (void)state;
  req_world_t r = req_world();
  weft_component_t out[8];
  uint32_t n = 99;
  assert_int_equal(weft_component_requirements(r.w, r.a, out, 8, &n), 0);
  assert_int_equal(n, 3);
  assert_int_equal(out[0], r.b); /* breadth-first: B, then B's own */
  assert_int_equal(out[1], r.c);
  assert_int_equal(out[2], r.t);
  assert_int_equal(weft_component_requirements(r.w, r.b, out, 8, &n), 0);
  assert_int_equal(n, 2);
  assert_int_equal(weft_component_requirements(r.w, r.d, out, 8, &n), 0);
  assert_int_equal(n, 0);
  /* A cycle X -> Y -> Z -> X: each reaches the two others, never itself. */
  weft_component_t x = wt_register(r.w, "X", 4, 4);
  weft_component_t y = wt_register(r.w, "Y", 4, 4);
  weft_component_t z = wt_register(r.w, "Z", 4, 4);
  assert_int_equal(weft_component_require(r.w, x, y, NULL), 0);
  assert_int_equal(weft_component_require(r.w, y, z, NULL), 0);
  assert_int_equal(weft_component_require(r.w, z, x, NULL), 0);
  assert_int_equal(weft_component_requirements(r.w, y, out, 8, &n), 0);
  assert_int_equal(n, 2);
  assert_int_equal(out[0], z);
  assert_int_equal(out[1], x);
  /* Only the length when there is no room. */
  assert_int_equal(weft_component_requirements(r.w, x, NULL, 0, &n), 0);
  assert_int_equal(n, 2);
  /* Adding one member of the cycle adds all three, in one move. */
  weft_entity_t e = wt_spawn(r.w);
  uint64_t moves = wt_stats(r.w).moves;
  int32_t v = 3;
  assert_int_equal(weft_add(r.w, e, y, &v), 0);
  assert_int_equal(wt_stats(r.w).moves, moves + 1);
  assert_int_equal(get_i32(r.w, e, y), 3);
  assert_int_equal(get_i32(r.w, e, x), 0);
  assert_int_equal(get_i32(r.w, e, z), 0);
  weft_world_destroy(r.w);
}

static void test_require_add_and_set_expand_in_one_move(void **state) {
  (void)state;
  req_world_t r = req_world();
  weft_entity_t e = wt_spawn(r.w), f = wt_spawn(r.w);
  weft_world_stats_t s0 = wt_stats(r.w);
  int32_t a = 11;
  assert_int_equal(weft_add(r.w, e, r.a, &a), 0);
  weft_world_stats_t s1 = wt_stats(r.w);
  assert_int_equal(s1.moves, s0.moves + 1);
  /* One archetype ({A, B, C, T}), no intermediate one per requirement. */
  assert_int_equal(s1.archetypes, s0.archetypes + 1);
  assert_full(&r, e, 11, B_DEFAULT, C_DEFAULT);
  a = 12;
  assert_int_equal(weft_set(r.w, f, r.a, &a), 0);
  assert_int_equal(wt_stats(r.w).moves, s0.moves + 2);
  assert_int_equal(wt_stats(r.w).archetypes, s1.archetypes);
  assert_full(&r, f, 12, B_DEFAULT, C_DEFAULT);
  /* Adding B alone brings C and T, not A. */
  weft_entity_t g = wt_spawn(r.w);
  assert_int_equal(weft_add(r.w, g, r.b, NULL), 0);
  assert_false(weft_has(r.w, g, r.a));
  assert_int_equal(get_i32(r.w, g, r.b), 0);
  assert_int_equal(get_i64(r.w, g, r.c), C_DEFAULT);
  assert_true(weft_has(r.w, g, r.t));
  weft_world_destroy(r.w);
}

static void test_require_explicit_values_win(void **state) {
  (void)state;
  req_world_t r = req_world();
  /* An entity that has B keeps its value when A is added. */
  int32_t b = 99;
  const weft_component_t lb[] = {r.b, 0};
  const void *vb[] = {&b};
  weft_entity_t e = wt_spawn_with(r.w, lb, vb);
  assert_int_equal(weft_add(r.w, e, r.a, NULL), 0);
  assert_full(&r, e, 0, 99, C_DEFAULT);
  /* A spawn naming A and B keeps B's value, in either order, and twice
   * (the second spawn of a list takes the memoised path). */
  int32_t a = 1, b2 = 42;
  int64_t c = 1234;
  const weft_component_t lab[] = {r.a, r.b, 0}, lba[] = {r.b, r.a, 0};
  const void *vab[] = {&a, &b2}, *vba[] = {&b2, &a};
  for (int i = 0; i < 2; i++) {
    assert_full(&r, wt_spawn_with(r.w, lab, vab), 1, 42, C_DEFAULT);
    assert_full(&r, wt_spawn_with(r.w, lba, vba), 1, 42, C_DEFAULT);
  }
  /* A listed component without a value is zero, not the default. */
  const weft_component_t lac[] = {r.a, r.c, 0};
  const void *vac[] = {&a, NULL};
  assert_full(&r, wt_spawn_with(r.w, lac, vac), 1, B_DEFAULT, 0);
  const void *vac2[] = {&a, &c};
  assert_full(&r, wt_spawn_with(r.w, lac, vac2), 1, B_DEFAULT, 1234);
  /* No values at all: defaults for what was not named. */
  const weft_component_t la[] = {r.a, 0};
  for (int i = 0; i < 3; i++)
    assert_full(&r, wt_spawn_with(r.w, la, NULL), 0, B_DEFAULT, C_DEFAULT);
  weft_world_destroy(r.w);
}

static void test_require_removal_keeps_requirements(void **state) {
  (void)state;
  req_world_t r = req_world();
  weft_entity_t e = wt_spawn(r.w);
  int32_t a = 3, b = 8;
  assert_int_equal(weft_add(r.w, e, r.a, &a), 0);
  assert_int_equal(weft_set(r.w, e, r.b, &b), 0);
  assert_int_equal(weft_remove(r.w, e, r.a), 0);
  assert_false(weft_has(r.w, e, r.a));
  assert_int_equal(get_i32(r.w, e, r.b), 8);
  assert_int_equal(get_i64(r.w, e, r.c), C_DEFAULT);
  /* Removing a requirement by hand sticks while A is present. */
  assert_int_equal(weft_add(r.w, e, r.a, &a), 0);
  assert_int_equal(weft_remove(r.w, e, r.c), 0);
  a = 4;
  assert_int_equal(weft_set(r.w, e, r.a, &a), 0);
  assert_int_equal(weft_add(r.w, e, r.d, NULL), 0);
  assert_false(weft_has(r.w, e, r.c));
  /* Removing and adding A again expands it again: B has a value, C gets
   * its default back. */
  assert_int_equal(weft_remove(r.w, e, r.a), 0);
  assert_int_equal(weft_add(r.w, e, r.a, &a), 0);
  assert_full(&r, e, 4, 8, C_DEFAULT);
  weft_world_destroy(r.w);
}

typedef struct fill_ctx_t {
  req_world_t *r;
  uint32_t calls;
} fill_ctx_t;

/* Writes A = row index and checks that the requirement defaults are
 * already in place when the fill runs. */
static void fill_a(void *user, const weft_iter_t *view, uint32_t first) {
  fill_ctx_t *f = user;
  int32_t *a = view->columns[0];
  for (uint32_t i = 0; i < view->count; i++) {
    a[i] = (int32_t)(first + i);
    assert_int_equal(get_i32(f->r->w, view->entities[i], f->r->b), B_DEFAULT);
    assert_int_equal(get_i64(f->r->w, view->entities[i], f->r->c), C_DEFAULT);
  }
  f->calls++;
}

static void test_require_spawn_batch_expands(void **state) {
  (void)state;
  req_world_t r = req_world();
  enum { N = 3000 };
  weft_entity_t *out = calloc(N, sizeof(*out));
  assert_non_null(out);
  const weft_component_t la[] = {r.a, 0};
  fill_ctx_t f = {&r, 0};
  assert_int_equal(weft_spawn_batch(r.w, N, la, fill_a, &f, out), 0);
  assert_true(f.calls > 1);
  for (uint32_t i = 0; i < N; i++)
    assert_full(&r, out[i], (int32_t)i, B_DEFAULT, C_DEFAULT);
  /* Without a fill: zeros for A, defaults for the rest. */
  assert_int_equal(weft_spawn_batch(r.w, 10, la, NULL, NULL, out), 0);
  for (uint32_t i = 0; i < 10; i++)
    assert_full(&r, out[i], 0, B_DEFAULT, C_DEFAULT);
  free(out);
  weft_world_destroy(r.w);
}

/* Counts ADD events of one component. */
static void count_event(weft_world_t *w, const weft_event_t *ev, void *user) {
  (void)w;
  (void)ev;
  ++*(uint32_t *)user;
}

static void test_require_staged_calls_expand(void **state) {
  (void)state;
  req_world_t r = req_world();
  weft_entity_t e = wt_spawn(r.w), s = WEFT_ENTITY_NULL;
  /* In a deferred scope: an add and a spawn. */
  assert_true(weft_world_defer_begin(r.w) > 0);
  int32_t a = 6;
  assert_int_equal(weft_add(r.w, e, r.a, &a), 0);
  const weft_component_t la[] = {r.a, 0};
  assert_int_equal(weft_spawn_with(r.w, la, NULL, &s), 0);
  assert_false(weft_has(r.w, e, r.b));
  assert_int_equal(weft_world_defer_end(r.w), 0);
  assert_full(&r, e, 6, B_DEFAULT, C_DEFAULT);
  assert_full(&r, s, 0, B_DEFAULT, C_DEFAULT);
  /* With an observer every call is staged and drained at once. */
  uint32_t adds = 0;
  weft_observer_desc_t od = {0};
  od.events = WEFT_EVENT_ADD;
  od.component = r.c;
  od.fn = count_event;
  od.user = &adds;
  weft_observer_t *obs = NULL;
  assert_int_equal(weft_observer_create(r.w, &od, &obs), 0);
  weft_entity_t g = wt_spawn(r.w);
  uint64_t moves = wt_stats(r.w).moves;
  assert_int_equal(weft_set(r.w, g, r.a, &a), 0);
  assert_int_equal(wt_stats(r.w).moves, moves + 1);
  assert_full(&r, g, 6, B_DEFAULT, C_DEFAULT);
  assert_int_equal(adds, 1); /* C arrived with the move */
  weft_observer_destroy(obs);
  weft_world_destroy(r.w);
}

/* Staged ops on one entity apply in order, as the immediate calls do. */
static void test_require_staged_order(void **state) {
  (void)state;
  req_world_t r = req_world();
  weft_entity_t e1 = wt_spawn(r.w), e2 = wt_spawn(r.w), e3 = wt_spawn(r.w);
  int32_t b = 3;
  weft_world_defer_begin(r.w);
  /* add A, then set B: the set wins. */
  weft_add(r.w, e1, r.a, NULL);
  weft_set(r.w, e1, r.b, &b);
  /* add A, then add B: B is present by then, the add keeps the default. */
  weft_add(r.w, e2, r.a, NULL);
  weft_add(r.w, e2, r.b, &b);
  /* set B, remove B, add A: the removed value is gone, A's default
   * comes in. */
  weft_set(r.w, e3, r.b, &b);
  weft_remove(r.w, e3, r.b);
  weft_add(r.w, e3, r.a, NULL);
  assert_int_equal(weft_world_defer_end(r.w), 0);
  assert_full(&r, e1, 0, 3, C_DEFAULT);
  assert_full(&r, e2, 0, B_DEFAULT, C_DEFAULT);
  assert_full(&r, e3, 0, B_DEFAULT, C_DEFAULT);
  /* A spawn in the scope, then an add of B: B counts as named by the
   * spawn, so its value (zeros) wins over A's default. */
  weft_entity_t sp;
  const weft_component_t la[] = {r.a, 0};
  weft_world_defer_begin(r.w);
  assert_int_equal(weft_spawn_with(r.w, la, NULL, &sp), 0);
  assert_int_equal(weft_add(r.w, sp, r.b, NULL), 0);
  assert_int_equal(weft_world_defer_end(r.w), 0);
  assert_full(&r, sp, 0, 0, C_DEFAULT);
  /* add A, remove C: C stays away, B keeps its default. */
  weft_entity_t e4 = wt_spawn(r.w);
  weft_world_defer_begin(r.w);
  weft_add(r.w, e4, r.a, NULL);
  weft_remove(r.w, e4, r.c);
  assert_int_equal(weft_world_defer_end(r.w), 0);
  assert_int_equal(get_i32(r.w, e4, r.b), B_DEFAULT);
  assert_false(weft_has(r.w, e4, r.c));
  weft_world_destroy(r.w);
}

static void test_require_command_buffers_expand(void **state) {
  (void)state;
  req_world_t r = req_world();
  enum { N = 64 };
  weft_entity_t ents[N];
  const weft_component_t ld[] = {r.d, 0};
  for (uint32_t i = 0; i < N; i++)
    ents[i] = wt_spawn_with(r.w, ld, NULL);
  weft_cmdbuf_t *cb = NULL;
  assert_int_equal(weft_cmdbuf_create(r.w, &cb), 0);
  /* cmd_add to N entities of one archetype: the group move. */
  for (uint32_t i = 0; i < N; i++) {
    int32_t a = (int32_t)i;
    assert_int_equal(weft_cmd_add(cb, ents[i], r.a, &a), 0);
  }
  /* A run of spawns (the fast path: nothing names a pending handle). */
  weft_entity_t sp[N];
  const weft_component_t la[] = {r.a, 0};
  for (uint32_t i = 0; i < N; i++) {
    int32_t a = 1000 + (int32_t)i;
    const void *va[] = {&a};
    assert_int_equal(weft_cmd_spawn(cb, la, va, &sp[i]), 0);
  }
  uint64_t moves = wt_stats(r.w).moves;
  assert_int_equal(weft_world_apply(r.w, &cb, 1), 0);
  assert_int_equal(wt_stats(r.w).moves, moves + N); /* one move each */
  for (uint32_t i = 0; i < N; i++) {
    assert_full(&r, ents[i], (int32_t)i, B_DEFAULT, C_DEFAULT);
    weft_entity_t e;
    assert_int_equal(weft_cmd_resolve(r.w, sp[i], &e), 0);
    assert_full(&r, e, 1000 + (int32_t)i, B_DEFAULT, C_DEFAULT);
  }
  /* A spawn whose pending handle a later command names (the staged
   * spawn path), and a cmd_set on a plain entity (the per-entity path). */
  weft_entity_t p, q = wt_spawn(r.w), pe;
  int32_t b = 77;
  assert_int_equal(weft_cmd_spawn(cb, la, NULL, &p), 0);
  assert_int_equal(weft_cmd_set(cb, p, r.b, &b), 0);
  assert_int_equal(weft_cmd_set(cb, q, r.a, &b), 0);
  assert_int_equal(weft_world_apply(r.w, &cb, 1), 0);
  assert_int_equal(weft_cmd_resolve(r.w, p, &pe), 0);
  assert_full(&r, pe, 0, 77, C_DEFAULT);
  assert_full(&r, q, 77, B_DEFAULT, C_DEFAULT);
  /* A query-wide set adds A to everything with D lacking it. */
  weft_entity_t plain[20];
  for (uint32_t i = 0; i < 20; i++) {
    plain[i] = wt_spawn_with(r.w, ld, NULL);
  }
  weft_query_desc_t qd = {0};
  qd.include[0] = r.d;
  qd.exclude[0] = r.a;
  weft_query_t *qy = NULL;
  assert_int_equal(weft_query_create(r.w, &qd, &qy), 0);
  assert_int_equal(weft_query_count(qy), 20);
  int32_t a = 55;
  assert_int_equal(weft_cmd_set_query(cb, qy, r.a, &a), 0);
  assert_int_equal(weft_world_apply(r.w, &cb, 1), 0);
  for (uint32_t i = 0; i < 20; i++)
    assert_full(&r, plain[i], 55, B_DEFAULT, C_DEFAULT);
  assert_int_equal(weft_query_count(qy), 0);
  weft_cmdbuf_destroy(cb);
  weft_world_destroy(r.w);
}

static void test_require_tags_and_soa_defaults(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  typedef struct pair_t {
    float x, y;
  } pair_t;
  weft_field_desc_t fields[] = {{"x", 0, 4, 0}, {"y", 4, 4, 0}};
  weft_component_desc_t d = {0};
  d.name = "S";
  d.size = sizeof(pair_t);
  d.fields = fields;
  d.field_count = 2;
  d.flags = WEFT_COMPONENT_SOA;
  weft_component_t s, t = wt_register_tag(w, "T");
  assert_int_equal(weft_component_register(w, &d, &s), 0);
  weft_component_t k = wt_register_tag(w, "K");
  const pair_t def = {1.5f, -2.0f};
  assert_int_equal(weft_component_require(w, k, s, &def), 0);
  assert_int_equal(weft_component_require(w, k, t, NULL), 0);
  weft_entity_t e = wt_spawn(w);
  assert_int_equal(weft_add(w, e, k, NULL), 0);
  assert_true(weft_has(w, e, t));
  pair_t got = {0, 0};
  assert_int_equal(weft_read(w, e, s, &got), 0);
  assert_true(got.x == 1.5f && got.y == -2.0f);
  const weft_component_t lk[] = {k, 0};
  weft_entity_t f = wt_spawn_with(w, lk, NULL);
  assert_int_equal(weft_read(w, f, s, &got), 0);
  assert_true(got.x == 1.5f && got.y == -2.0f);
  weft_world_destroy(w);
}

static void test_require_errors_change_nothing(void **state) {
  (void)state;
  req_world_t r = req_world();
  weft_component_t out[8];
  uint32_t n;
  int32_t v = 1;
  assert_int_equal(weft_component_require(NULL, r.a, r.b, NULL), WEFT_EINVAL);
  assert_int_equal(weft_component_require(r.w, r.a, r.a, NULL), WEFT_EINVAL);
  assert_int_equal(weft_component_require(r.w, r.a, 999, NULL), WEFT_ENOCOMP);
  assert_int_equal(weft_component_require(r.w, 0, r.a, NULL), WEFT_ENOCOMP);
  assert_int_equal(weft_component_require(r.w, r.d, r.t, &v), WEFT_ETAG);
  /* Relations take no part, on either side. */
  weft_relation_desc_t rd = {.name = "Rel"};
  weft_component_t rel;
  assert_int_equal(weft_relation_register(r.w, &rd, &rel), 0);
  assert_int_equal(weft_component_require(r.w, r.d, rel, NULL), WEFT_EINVAL);
  assert_int_equal(weft_component_require(r.w, rel, r.d, NULL), WEFT_EINVAL);
  assert_non_null(strstr(weft_world_last_error(r.w), "relations"));
  assert_int_equal(weft_component_requirements(r.w, 999, out, 8, &n),
                   WEFT_ENOCOMP);
  assert_int_equal(weft_component_requirements(r.w, r.a, out, 8, NULL),
                   WEFT_EINVAL);
  assert_int_equal(weft_component_requirements(r.w, r.d, out, 8, &n), 0);
  assert_int_equal(n, 0);
  /* Once an archetype holds B (and so C), neither B's requirements nor
   * C's may change, nor those of anything that reaches C; A's and D's
   * still may (no archetype holds them). */
  weft_entity_t e = wt_spawn(r.w);
  assert_int_equal(weft_add(r.w, e, r.b, NULL), 0);
  uint64_t digest = weft_world_digest(r.w);
  assert_int_equal(weft_component_require(r.w, r.b, r.d, NULL), WEFT_EBUSY);
  assert_non_null(strstr(weft_world_last_error(r.w), "'B'"));
  assert_int_equal(weft_component_require(r.w, r.c, r.d, NULL), WEFT_EBUSY);
  assert_int_equal(weft_world_digest(r.w), digest);
  assert_int_equal(weft_component_requirements(r.w, r.b, out, 8, &n), 0);
  assert_int_equal(n, 2);
  /* X requires C: now X reaches C, and a requirement of X is free, but
   * one of C is not. */
  weft_component_t x = wt_register(r.w, "X", 4, 4);
  assert_int_equal(weft_component_require(r.w, x, r.c, NULL), 0);
  assert_int_equal(weft_component_require(r.w, r.c, x, NULL), WEFT_EBUSY);
  assert_int_equal(weft_component_require(r.w, r.d, r.a, NULL), 0);
  assert_int_equal(weft_component_requirements(r.w, r.d, out, 8, &n), 0);
  assert_int_equal(n, 4);
  weft_world_destroy(r.w);
}

static void test_require_redeclare_replaces_default(void **state) {
  (void)state;
  req_world_t r = req_world();
  int32_t b = 21;
  assert_int_equal(weft_component_require(r.w, r.a, r.b, &b), 0);
  weft_component_t out[8];
  uint32_t n;
  assert_int_equal(weft_component_requirements(r.w, r.a, out, 8, &n), 0);
  assert_int_equal(n, 3);
  weft_entity_t e = wt_spawn(r.w);
  assert_int_equal(weft_add(r.w, e, r.a, NULL), 0);
  assert_full(&r, e, 0, 21, C_DEFAULT);
  weft_world_destroy(r.w);
}

/* What one world saw of an entity: a bit per component, and values. */
typedef struct snap_t {
  uint32_t has;
  int32_t a, b, d;
  int64_t c;
} snap_t;

static snap_t snap(const req_world_t *r, weft_entity_t e) {
  snap_t s = {0, 0, 0, 0, 0};
  const weft_component_t ids[] = {r->a, r->b, r->c, r->d, r->t};
  for (uint32_t k = 0; k < 5; k++)
    s.has |= (uint32_t)weft_has(r->w, e, ids[k]) << k;
  if (s.has & 1)
    s.a = get_i32(r->w, e, r->a);
  if (s.has & 2)
    s.b = get_i32(r->w, e, r->b);
  if (s.has & 4)
    s.c = get_i64(r->w, e, r->c);
  if (s.has & 8)
    s.d = get_i32(r->w, e, r->d);
  return s;
}

/*
 * Random adds, sets and removes applied three ways: at once, in a
 * deferred scope, and through a command buffer. Staged changes apply in
 * order, so every entity must end up the same in the three worlds.
 */
static void test_require_random_paths_agree(void **state) {
  (void)state;
  enum { E = 48, ROUNDS = 60, OPS = 200 };
  req_world_t r[3];
  weft_entity_t ents[3][E];
  for (int k = 0; k < 3; k++) {
    r[k] = req_world();
    assert_int_equal(weft_component_require(r[k].w, r[k].d, r[k].a, NULL), 0);
    for (uint32_t i = 0; i < E; i++)
      ents[k][i] = wt_spawn(r[k].w);
  }
  weft_cmdbuf_t *cb = NULL;
  assert_int_equal(weft_cmdbuf_create(r[2].w, &cb), 0);
  wt_rng_t rng = wt_rng(30);
  for (uint32_t round = 0; round < ROUNDS; round++) {
    weft_world_defer_begin(r[1].w);
    for (uint32_t o = 0; o < OPS; o++) {
      uint32_t i = wt_below(&rng, E), which = wt_below(&rng, 4);
      uint32_t kind = wt_below(&rng, 3);
      int64_t v = (int64_t)wt_below(&rng, 1000);
      for (int k = 0; k < 3; k++) {
        const weft_component_t ids[] = {r[k].a, r[k].b, r[k].c, r[k].d};
        weft_component_t c = ids[which];
        int32_t v32 = (int32_t)v;
        const void *val = c == r[k].c ? (const void *)&v : (const void *)&v32;
        weft_entity_t e = ents[k][i];
        int rc;
        if (k < 2)
          rc = kind == 0   ? weft_add(r[k].w, e, c, val)
               : kind == 1 ? weft_set(r[k].w, e, c, val)
                           : weft_remove(r[k].w, e, c);
        else
          rc = kind == 0   ? weft_cmd_add(cb, e, c, val)
               : kind == 1 ? weft_cmd_set(cb, e, c, val)
                           : weft_cmd_remove(cb, e, c);
        assert_int_equal(rc, 0);
      }
    }
    assert_int_equal(weft_world_defer_end(r[1].w), 0);
    assert_int_equal(weft_world_apply(r[2].w, &cb, 1), 0);
    for (uint32_t i = 0; i < E; i++) {
      snap_t s0 = snap(&r[0], ents[0][i]);
      snap_t s1 = snap(&r[1], ents[1][i]);
      snap_t s2 = snap(&r[2], ents[2][i]);
      assert_memory_equal(&s0, &s1, sizeof(s0));
      assert_memory_equal(&s0, &s2, sizeof(s0));
    }
  }
  weft_cmdbuf_destroy(cb);
  for (int k = 0; k < 3; k++)
    weft_world_destroy(r[k].w);
}

/* Adding and removing a component with requirements (and removing what it
 * brought) allocates nothing once the archetypes and edges exist, at once
 * and through a command buffer. */
static void test_require_add_remove_steady_state(void **state) {
  (void)state;
  req_world_t r = req_world();
  enum { N = 100 };
  weft_entity_t ents[N];
  const weft_component_t ld[] = {r.d, 0};
  for (uint32_t i = 0; i < N; i++)
    ents[i] = wt_spawn_with(r.w, ld, NULL);
  weft_cmdbuf_t *cb = NULL;
  assert_int_equal(weft_cmdbuf_create(r.w, &cb), 0);
  wt_alloc_probe_t probe;
  for (int round = 0; round < 12; round++) {
    if (round == 4)
      probe = wt_alloc_probe(r.w);
    for (uint32_t i = 0; i < N; i++) {
      int32_t a = round;
      assert_int_equal(weft_add(r.w, ents[i], r.a, &a), 0);
      assert_int_equal(get_i64(r.w, ents[i], r.c), C_DEFAULT);
      assert_int_equal(weft_remove(r.w, ents[i], r.a), 0);
      assert_int_equal(weft_remove(r.w, ents[i], r.b), 0);
      assert_int_equal(weft_remove(r.w, ents[i], r.c), 0);
      assert_int_equal(weft_remove(r.w, ents[i], r.t), 0);
    }
    for (uint32_t i = 0; i < N; i++)
      assert_int_equal(weft_cmd_add(cb, ents[i], r.a, NULL), 0);
    assert_int_equal(weft_world_apply(r.w, &cb, 1), 0);
    assert_int_equal(get_i32(r.w, ents[N - 1], r.b), B_DEFAULT);
    for (uint32_t i = 0; i < N; i++) {
      assert_int_equal(weft_cmd_remove(cb, ents[i], r.a), 0);
      assert_int_equal(weft_cmd_remove(cb, ents[i], r.b), 0);
      assert_int_equal(weft_cmd_remove(cb, ents[i], r.c), 0);
      assert_int_equal(weft_cmd_remove(cb, ents[i], r.t), 0);
    }
    assert_int_equal(weft_world_apply(r.w, &cb, 1), 0);
    assert_false(weft_has(r.w, ents[0], r.b));
  }
  wt_assert_no_alloc(r.w, &probe, "add/remove cycles with requirements");
  weft_cmdbuf_destroy(cb);
  weft_world_destroy(r.w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_require_closure_transitive_and_cyclic),
      cmocka_unit_test(test_require_add_and_set_expand_in_one_move),
      cmocka_unit_test(test_require_explicit_values_win),
      cmocka_unit_test(test_require_removal_keeps_requirements),
      cmocka_unit_test(test_require_spawn_batch_expands),
      cmocka_unit_test(test_require_staged_calls_expand),
      cmocka_unit_test(test_require_staged_order),
      cmocka_unit_test(test_require_command_buffers_expand),
      cmocka_unit_test(test_require_tags_and_soa_defaults),
      cmocka_unit_test(test_require_errors_change_nothing),
      cmocka_unit_test(test_require_redeclare_replaces_default),
      cmocka_unit_test(test_require_random_paths_agree),
      cmocka_unit_test(test_require_add_remove_steady_state),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
