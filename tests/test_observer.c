/* SPDX-License-Identifier: MIT */
/* Unit tests for observers: lifecycle, component and membership events. */
#include "support/weft_test.h"

#include <stdlib.h>

/* --- the event log ------------------------------------------------------- */

#define LOG_MAX 512u
/* "No value": a NULL column or a failed weft_get(). */
#define NOV INT32_MIN

typedef struct rec_t {
  uint32_t obs; /* the recording observer's id */
  uint32_t kind;
  weft_component_t comp;
  weft_entity_t e;
  uint32_t first_row;
  uint32_t count;
  bool has_rows;
  uint32_t rows_count;
  bool rows_entity_ok; /* rows->entities[0] == ev->entity */
  int32_t col0;        /* rows->columns[0][0], read during the callback */
  int32_t get;         /* weft_get(probe) of ev->entity during the callback */
  bool alive;          /* weft_is_alive(ev->entity) during the callback */
  bool has;            /* weft_has(ev->entity, ev->component) */
  bool enabled;        /* weft_is_enabled(ev->entity, probe) */
  const weft_query_t *query;
} rec_t;

typedef struct log_t {
  rec_t r[LOG_MAX];
  uint32_t n;
} log_t;

struct obs_ctx_t;
typedef void (*action_fn)(weft_world_t *w, const weft_event_t *ev,
                          struct obs_ctx_t *x);

/* One observer's user data: where to log and what to read. */
typedef struct obs_ctx_t {
  log_t *log;
  uint32_t id;
  weft_component_t probe; /* read with weft_get() for every event */
  action_fn action;       /* optional, runs after recording */
  weft_component_t comp2; /* for actions */
  weft_entity_t made[128];
  bool made_alive[128]; /* weft_is_alive(made[i]) right after making it */
  uint32_t nmade;
  int rc; /* the last rc an action saw */
} obs_ctx_t;

static log_t *log_new(void) {
  log_t *l = calloc(1, sizeof *l);
  assert_non_null(l);
  return l;
}

static int32_t read_i32(const void *p) {
  if (!p) {
    return NOV;
  }
  int32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

static void record(weft_world_t *w, const weft_event_t *ev, void *user) {
  obs_ctx_t *x = user;
  log_t *l = x->log;
  assert_true(l->n < LOG_MAX);
  rec_t *r = &l->r[l->n++];
  memset(r, 0, sizeof *r);
  r->obs = x->id;
  r->kind = ev->kind;
  r->comp = ev->component;
  r->e = ev->entity;
  r->first_row = ev->first_row;
  r->count = ev->count;
  r->has_rows = ev->rows != NULL;
  r->col0 = NOV;
  if (ev->rows) {
    r->rows_count = ev->rows->count;
    r->rows_entity_ok = ev->rows->entities[0] == ev->entity;
    r->col0 = read_i32(ev->rows->columns[0]);
  }
  r->get = x->probe ? read_i32(weft_get(w, ev->entity, x->probe)) : NOV;
  r->alive = weft_is_alive(w, ev->entity);
  r->has = ev->component && weft_has(w, ev->entity, ev->component);
  r->enabled = x->probe && weft_is_enabled(w, ev->entity, x->probe);
  r->query = ev->query;
  if (x->action) {
    x->action(w, ev, x);
  }
}

static weft_observer_t *add_obs(weft_world_t *w, uint32_t events,
                                weft_component_t comp, const weft_query_t *q,
                                obs_ctx_t *x) {
  weft_observer_desc_t d = {
      .events = events, .component = comp, .query = q, .fn = record, .user = x};
  weft_observer_t *o = NULL;
  assert_int_equal(weft_observer_create(w, &d, &o), WEFT_OK);
  assert_non_null(o);
  return o;
}

static weft_query_t *make_query(weft_world_t *w, const weft_query_desc_t *d) {
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(w, d, &q), WEFT_OK);
  assert_non_null(q);
  return q;
}

static weft_cmdbuf_t *make_buf(weft_world_t *w) {
  weft_cmdbuf_t *b = NULL;
  assert_int_equal(weft_cmdbuf_create(w, &b), WEFT_OK);
  return b;
}

static weft_entity_t resolve(weft_world_t *w, weft_entity_t pending) {
  weft_entity_t e = WEFT_ENTITY_NULL;
  assert_int_equal(weft_cmd_resolve(w, pending, &e), WEFT_OK);
  assert_true(weft_is_alive(w, e));
  return e;
}

/* Checks the identifying fields of log entry i. */
static void expect(const log_t *l, uint32_t i, uint32_t obs, uint32_t kind,
                   weft_component_t comp, weft_entity_t e) {
  assert_true(i < l->n);
  const rec_t *r = &l->r[i];
  assert_int_equal(r->obs, obs);
  assert_int_equal(r->kind, kind);
  assert_int_equal(r->comp, comp);
  assert_int_equal(r->e, e);
}

/* A one-row event with readable rows for entity e. */
static void expect_row(const log_t *l, uint32_t i) {
  const rec_t *r = &l->r[i];
  assert_true(r->has_rows);
  assert_int_equal(r->count, 1);
  assert_int_equal(r->rows_count, 1);
  assert_true(r->rows_entity_ok);
}

static uint64_t waves(const weft_world_t *w) {
  return wt_stats(w).drain_waves;
}

/* --- SPAWN --------------------------------------------------------------- */

static void test_observer_spawn_with_fires_inline_with_values(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 4, 4);
  weft_component_t b = wt_register(w, "b", 4, 4);
  log_t *log = log_new();
  obs_ctx_t x = {.log = log, .id = 1, .probe = a};
  obs_ctx_t y = {.log = log, .id = 2, .probe = b};
  add_obs(w, WEFT_EVENT_SPAWN, 0, NULL, &x);
  add_obs(w, WEFT_EVENT_SPAWN, 0, NULL, &y);

  int32_t va = 7, vb = 9;
  weft_entity_t e = wt_spawn_with(w, (weft_component_t[]){a, b, 0},
                                  (const void *[]){&va, &vb});
  /* Delivered before weft_spawn_with() returned, placed and readable. */
  assert_int_equal(log->n, 2);
  expect(log, 0, 1, WEFT_EVENT_SPAWN, 0, e);
  expect(log, 1, 2, WEFT_EVENT_SPAWN, 0, e);
  expect_row(log, 0);
  expect_row(log, 1);
  assert_true(log->r[0].alive);
  assert_int_equal(log->r[0].get, 7);
  assert_int_equal(log->r[1].get, 9);
  assert_int_equal(log->r[0].first_row, 0);

  va = 17;
  vb = 19;
  weft_entity_t e2 = wt_spawn_with(w, (weft_component_t[]){a, b, 0},
                                   (const void *[]){&va, &vb});
  assert_int_equal(log->n, 4);
  expect(log, 2, 1, WEFT_EVENT_SPAWN, 0, e2);
  assert_int_equal(log->r[2].first_row, 1);
  assert_int_equal(log->r[2].get, 17);
  assert_int_equal(log->r[3].get, 19);

  /* weft_spawn() too, with no components. */
  weft_entity_t e3 = wt_spawn(w);
  assert_int_equal(log->n, 6);
  expect(log, 4, 1, WEFT_EVENT_SPAWN, 0, e3);
  assert_true(log->r[4].alive);
  assert_int_equal(log->r[4].get, NOV);
  wt_check_slot_invariant(w);
  free(log);
  weft_world_destroy(w);
}

static void test_observer_spawn_from_command_buffer(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 4, 4);
  log_t *log = log_new();
  obs_ctx_t x = {.log = log, .id = 1, .probe = a};
  add_obs(w, WEFT_EVENT_SPAWN, 0, NULL, &x);
  weft_cmdbuf_t *buf = make_buf(w);

  int32_t v1 = 31, v2 = 32;
  weft_entity_t p1, p2;
  assert_int_equal(weft_cmd_spawn(buf, (weft_component_t[]){a, 0},
                                  (const void *[]){&v1}, &p1),
                   WEFT_OK);
  assert_int_equal(weft_cmd_spawn(buf, (weft_component_t[]){a, 0},
                                  (const void *[]){&v2}, &p2),
                   WEFT_OK);
  assert_int_equal(log->n, 0); /* recording fires nothing */
  uint64_t w0 = waves(w);
  assert_int_equal(weft_world_apply(w, &buf, 1), WEFT_OK);
  assert_int_equal(waves(w) - w0, 1);
  weft_entity_t e1 = resolve(w, p1), e2 = resolve(w, p2);
  assert_int_equal(log->n, 2);
  expect(log, 0, 1, WEFT_EVENT_SPAWN, 0, e1);
  expect(log, 1, 1, WEFT_EVENT_SPAWN, 0, e2);
  expect_row(log, 0);
  expect_row(log, 1);
  assert_true(log->r[0].alive && log->r[1].alive);
  assert_int_equal(log->r[0].get, 31);
  assert_int_equal(log->r[1].get, 32);
  assert_false(weft_entity_is_pending(log->r[0].e));
  free(log);
  weft_world_destroy(w);
}

static void test_observer_spawn_in_deferred_scope(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 4, 4);
  log_t *log = log_new();
  obs_ctx_t x = {.log = log, .id = 1, .probe = a};
  add_obs(w, WEFT_EVENT_SPAWN, 0, NULL, &x);

  assert_int_equal(weft_world_defer_begin(w), 1);
  assert_int_equal(weft_world_defer_begin(w), 2);
  int32_t v1 = 11, v2 = 12;
  weft_entity_t e1, e2;
  assert_int_equal(weft_spawn_with(w, (weft_component_t[]){a, 0},
                                   (const void *[]){&v1}, &e1),
                   WEFT_OK);
  assert_int_equal(weft_spawn_with(w, (weft_component_t[]){a, 0},
                                   (const void *[]){&v2}, &e2),
                   WEFT_OK);
  assert_false(weft_is_alive(w, e1));
  assert_int_equal(weft_world_defer_end(w), WEFT_OK); /* inner: no drain */
  assert_int_equal(log->n, 0);
  assert_false(weft_is_alive(w, e1));
  assert_int_equal(weft_world_defer_end(w), WEFT_OK);
  assert_int_equal(log->n, 2);
  expect(log, 0, 1, WEFT_EVENT_SPAWN, 0, e1);
  expect(log, 1, 1, WEFT_EVENT_SPAWN, 0, e2);
  expect_row(log, 0);
  assert_true(log->r[0].alive);
  assert_int_equal(log->r[0].get, 11);
  assert_int_equal(log->r[1].get, 12);
  assert_true(weft_is_alive(w, e1) && weft_is_alive(w, e2));
  wt_check_slot_invariant(w);
  free(log);
  weft_world_destroy(w);
}

/* --- DESPAWN ------------------------------------------------------------- */

static void test_observer_despawn_sees_entity_alive(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 4, 4);
  int32_t v[3] = {5, 6, 7};
  weft_entity_t e[3];
  for (int i = 0; i < 3; i++) {
    e[i] =
        wt_spawn_with(w, (weft_component_t[]){a, 0}, (const void *[]){&v[i]});
  }
  log_t *log = log_new();
  obs_ctx_t x = {.log = log, .id = 1, .probe = a};
  add_obs(w, WEFT_EVENT_DESPAWN, 0, NULL, &x);

  /* Direct call. */
  assert_int_equal(weft_despawn(w, e[0]), WEFT_OK);
  assert_int_equal(log->n, 1);
  expect(log, 0, 1, WEFT_EVENT_DESPAWN, 0, e[0]);
  expect_row(log, 0);
  assert_true(log->r[0].alive);
  assert_int_equal(log->r[0].get, 5);
  assert_false(weft_is_alive(w, e[0]));

  /* Command buffer. */
  weft_cmdbuf_t *buf = make_buf(w);
  assert_int_equal(weft_cmd_despawn(buf, e[1]), WEFT_OK);
  assert_int_equal(weft_world_apply(w, &buf, 1), WEFT_OK);
  assert_int_equal(log->n, 2);
  expect(log, 1, 1, WEFT_EVENT_DESPAWN, 0, e[1]);
  expect_row(log, 1);
  assert_true(log->r[1].alive);
  assert_int_equal(log->r[1].get, 6);
  assert_false(weft_is_alive(w, e[1]));

  /* Deferred scope: nothing until the scope ends. */
  weft_world_defer_begin(w);
  assert_int_equal(weft_despawn(w, e[2]), WEFT_OK);
  assert_int_equal(log->n, 2);
  assert_true(weft_is_alive(w, e[2]));
  assert_int_equal(weft_world_defer_end(w), WEFT_OK);
  assert_int_equal(log->n, 3);
  expect(log, 2, 1, WEFT_EVENT_DESPAWN, 0, e[2]);
  assert_true(log->r[2].alive);
  assert_int_equal(log->r[2].get, 7);
  assert_int_equal(weft_world_count(w), 0);
  wt_check_slot_invariant(w);
  free(log);
  weft_world_destroy(w);
}

static void test_observer_cancelled_spawn_reports_despawn(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 4, 4);
  log_t *log = log_new();
  obs_ctx_t x = {.log = log, .id = 1, .probe = a};
  add_obs(w, WEFT_EVENT_SPAWN | WEFT_EVENT_DESPAWN | WEFT_EVENT_ADD, 0, NULL,
          &x);

  /* Deferred scope: spawn then despawn. */
  int32_t v = 3;
  weft_entity_t e;
  weft_world_defer_begin(w);
  assert_int_equal(
      weft_spawn_with(w, (weft_component_t[]){a, 0}, (const void *[]){&v}, &e),
      WEFT_OK);
  assert_int_equal(weft_despawn(w, e), WEFT_OK);
  assert_int_equal(weft_world_defer_end(w), WEFT_OK);
  assert_int_equal(log->n, 1); /* no SPAWN, no ADD */
  expect(log, 0, 1, WEFT_EVENT_DESPAWN, 0, e);
  assert_false(log->r[0].has_rows);
  assert_int_equal(log->r[0].count, 1);
  assert_false(log->r[0].alive);
  assert_false(weft_is_alive(w, e));
  assert_int_equal(weft_world_count(w), 0);
  assert_int_equal(wt_stats(w).staged_spawns, 0);
  wt_check_slot_invariant(w);

  /* Command buffer: despawn of the pending handle. */
  weft_cmdbuf_t *buf = make_buf(w);
  weft_entity_t p;
  assert_int_equal(
      weft_cmd_spawn(buf, (weft_component_t[]){a, 0}, (const void *[]){&v}, &p),
      WEFT_OK);
  assert_int_equal(weft_cmd_despawn(buf, p), WEFT_OK);
  assert_int_equal(weft_world_apply(w, &buf, 1), WEFT_OK);
  assert_int_equal(log->n, 2);
  assert_int_equal(log->r[1].kind, WEFT_EVENT_DESPAWN);
  assert_false(log->r[1].has_rows);
  assert_int_equal(log->r[1].count, 1);
  assert_int_not_equal(log->r[1].e, WEFT_ENTITY_NULL);
  assert_false(weft_entity_is_pending(log->r[1].e));
  assert_false(weft_is_alive(w, log->r[1].e));
  weft_entity_t out;
  assert_int_equal(weft_cmd_resolve(w, p, &out), WEFT_ESTALE);
  assert_int_equal(weft_world_count(w), 0);
  wt_check_slot_invariant(w);
  free(log);
  weft_world_destroy(w);
}

/* --- ADD / REMOVE -------------------------------------------------------- */

static void test_observer_add_remove_component_filter(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 4, 4);
  weft_component_t b = wt_register(w, "b", 4, 4);
  log_t *log = log_new();
  obs_ctx_t xa = {.log = log, .id = 1, .probe = a};
  obs_ctx_t xany = {.log = log, .id = 2, .probe = a};
  add_obs(w, WEFT_EVENT_ADD | WEFT_EVENT_REMOVE, a, NULL, &xa);
  add_obs(w, WEFT_EVENT_ADD | WEFT_EVENT_REMOVE, 0, NULL, &xany);

  weft_entity_t e = wt_spawn(w);
  assert_int_equal(log->n, 0);

  int32_t v = 5;
  assert_int_equal(weft_add(w, e, a, &v), WEFT_OK);
  assert_int_equal(log->n, 2);
  expect(log, 0, 1, WEFT_EVENT_ADD, a, e);
  expect(log, 1, 2, WEFT_EVENT_ADD, a, e);
  expect_row(log, 0);
  assert_int_equal(log->r[0].col0, 5);
  assert_int_equal(log->r[0].get, 5);
  assert_true(log->r[0].has);
  assert_int_equal(log->r[1].col0, 5);

  v = 6;
  assert_int_equal(weft_add(w, e, b, &v), WEFT_OK);
  assert_int_equal(log->n, 3); /* only the any-observer */
  expect(log, 2, 2, WEFT_EVENT_ADD, b, e);
  assert_int_equal(log->r[2].col0, 6); /* column 0 is b's */
  assert_int_equal(log->r[2].get, 5);

  /* Adding a present component and writing values are not ADD. */
  v = 99;
  assert_int_equal(weft_add(w, e, a, &v), WEFT_OK);
  v = 7;
  assert_int_equal(weft_set(w, e, b, &v), WEFT_OK);
  assert_int_equal(log->n, 3);

  /* REMOVE fires before the move, the old value readable. */
  assert_int_equal(weft_remove(w, e, a), WEFT_OK);
  assert_int_equal(log->n, 5);
  expect(log, 3, 1, WEFT_EVENT_REMOVE, a, e);
  expect(log, 4, 2, WEFT_EVENT_REMOVE, a, e);
  expect_row(log, 3);
  assert_int_equal(log->r[3].col0, 5);
  assert_int_equal(log->r[3].get, 5);
  assert_true(log->r[3].has);
  assert_true(log->r[3].alive);
  assert_int_equal(log->r[4].col0, 5);
  assert_false(weft_has(w, e, a));

  assert_int_equal(weft_remove(w, e, a), WEFT_OK); /* absent: nothing */
  assert_int_equal(log->n, 5);
  assert_int_equal(weft_remove(w, e, b), WEFT_OK);
  assert_int_equal(log->n, 6);
  expect(log, 5, 2, WEFT_EVENT_REMOVE, b, e);
  assert_int_equal(log->r[5].col0, 7);
  assert_true(log->r[5].has);

  /* A spawn adds each component: ascending ids, observers in order. */
  int32_t va = 1, vb = 2;
  weft_entity_t e2 = wt_spawn_with(w, (weft_component_t[]){b, a, 0},
                                   (const void *[]){&vb, &va});
  assert_int_equal(log->n, 9);
  expect(log, 6, 1, WEFT_EVENT_ADD, a, e2);
  expect(log, 7, 2, WEFT_EVENT_ADD, a, e2);
  expect(log, 8, 2, WEFT_EVENT_ADD, b, e2);
  assert_int_equal(log->r[6].col0, 1);
  assert_int_equal(log->r[8].col0, 2);
  free(log);
  weft_world_destroy(w);
}

static void
test_observer_despawn_reports_remove_for_every_component(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 4, 4);
  weft_component_t b = wt_register(w, "b", 4, 4);
  weft_component_t t = wt_register_tag(w, "t");
  int32_t va = 1, vb = 2;
  weft_entity_t e = wt_spawn_with(w, (weft_component_t[]){a, b, t, 0},
                                  (const void *[]){&va, &vb, NULL});
  assert_int_equal(weft_disable(w, e, b), WEFT_OK);
  log_t *log = log_new();
  obs_ctx_t xd = {.log = log, .id = 1, .probe = a};
  obs_ctx_t xr = {.log = log, .id = 2, .probe = a};
  add_obs(w, WEFT_EVENT_DESPAWN, 0, NULL, &xd);
  add_obs(w, WEFT_EVENT_REMOVE, 0, NULL, &xr);

  assert_int_equal(weft_despawn(w, e), WEFT_OK);
  assert_int_equal(log->n, 4);
  expect(log, 0, 1, WEFT_EVENT_DESPAWN, 0, e);
  expect(log, 1, 2, WEFT_EVENT_REMOVE, a, e);
  expect(log, 2, 2, WEFT_EVENT_REMOVE, b, e); /* disabled, still removed */
  expect(log, 3, 2, WEFT_EVENT_REMOVE, t, e);
  for (uint32_t i = 0; i < 4; i++) {
    expect_row(log, i);
    assert_true(log->r[i].alive);
    assert_int_equal(log->r[i].get, 1);
  }
  assert_true(log->r[1].has && log->r[2].has && log->r[3].has);
  assert_int_equal(log->r[1].col0, 1);
  assert_int_equal(log->r[2].col0, 2);
  assert_int_equal(log->r[3].col0, NOV); /* a tag has no column */
  assert_false(weft_is_alive(w, e));
  free(log);
  weft_world_destroy(w);
}

static void test_observer_enable_disable_is_not_add_remove(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 4, 4);
  int32_t v = 4;
  weft_entity_t e =
      wt_spawn_with(w, (weft_component_t[]){a, 0}, (const void *[]){&v});
  log_t *log = log_new();
  obs_ctx_t x = {.log = log, .id = 1, .probe = a};
  add_obs(w, WEFT_EVENT_ADD | WEFT_EVENT_REMOVE, 0, NULL, &x);
  add_obs(w, WEFT_EVENT_ADD | WEFT_EVENT_REMOVE, a, NULL, &x);

  uint64_t moves0 = wt_stats(w).moves;
  assert_int_equal(weft_disable(w, e, a), WEFT_OK);
  assert_false(weft_is_enabled(w, e, a));
  assert_int_equal(weft_enable(w, e, a), WEFT_OK);
  assert_true(weft_is_enabled(w, e, a));
  weft_cmdbuf_t *buf = make_buf(w);
  assert_int_equal(weft_cmd_disable(buf, e, a), WEFT_OK);
  assert_int_equal(weft_world_apply(w, &buf, 1), WEFT_OK);
  assert_false(weft_is_enabled(w, e, a));
  assert_int_equal(weft_cmd_enable(buf, e, a), WEFT_OK);
  assert_int_equal(weft_world_apply(w, &buf, 1), WEFT_OK);
  assert_true(weft_is_enabled(w, e, a));
  assert_int_equal(wt_stats(w).moves - moves0, 4); /* the rows did move */
  assert_int_equal(log->n, 0);
  assert_int_equal(read_i32(weft_get(w, e, a)), 4);
  free(log);
  weft_world_destroy(w);
}

/* --- ENTER / LEAVE ------------------------------------------------------- */

static void test_observer_enter_leave_query(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 4, 4);
  weft_component_t b = wt_register(w, "b", 4, 4);
  weft_component_t c = wt_register(w, "c", 4, 4);
  weft_query_t *q = make_query(w, &(weft_query_desc_t){.include = {a}});
  log_t *log = log_new();
  obs_ctx_t x = {.log = log, .id = 1, .probe = a};
  add_obs(w, WEFT_EVENT_ENTER | WEFT_EVENT_LEAVE, 0, q, &x);

  weft_entity_t e = wt_spawn_with(w, (weft_component_t[]){b, 0}, NULL);
  assert_int_equal(log->n, 0);

  int32_t v = 3;
  assert_int_equal(weft_add(w, e, a, &v), WEFT_OK); /* enters on add */
  assert_int_equal(log->n, 1);
  expect(log, 0, 1, WEFT_EVENT_ENTER, 0, e);
  expect_row(log, 0);
  assert_int_equal(log->r[0].col0, 3);
  assert_int_equal(log->r[0].get, 3); /* after arriving */
  assert_ptr_equal(log->r[0].query, q);

  assert_int_equal(weft_disable(w, e, a), WEFT_OK); /* leaves on disable */
  assert_int_equal(log->n, 2);
  expect(log, 1, 1, WEFT_EVENT_LEAVE, 0, e);
  expect_row(log, 1);
  assert_int_equal(log->r[1].col0, 3);
  assert_true(log->r[1].enabled); /* before it goes */
  assert_ptr_equal(log->r[1].query, q);
  assert_int_equal(weft_query_count(q), 0);

  assert_int_equal(weft_enable(w, e, a), WEFT_OK); /* enters on enable */
  assert_int_equal(log->n, 3);
  expect(log, 2, 1, WEFT_EVENT_ENTER, 0, e);
  assert_int_equal(log->r[2].col0, 3);
  assert_true(log->r[2].enabled);

  /* A move that keeps membership reports nothing. */
  assert_int_equal(weft_add(w, e, c, NULL), WEFT_OK);
  assert_int_equal(weft_remove(w, e, b), WEFT_OK);
  assert_int_equal(log->n, 3);

  assert_int_equal(weft_remove(w, e, a), WEFT_OK); /* leaves on remove */
  assert_int_equal(log->n, 4);
  expect(log, 3, 1, WEFT_EVENT_LEAVE, 0, e);
  expect_row(log, 3);
  assert_int_equal(log->r[3].col0, 3); /* LEAVE rows readable */
  assert_int_equal(log->r[3].get, 3);
  assert_false(weft_has(w, e, a));

  v = 4;
  weft_entity_t e2 =
      wt_spawn_with(w, (weft_component_t[]){a, 0}, (const void *[]){&v});
  assert_int_equal(log->n, 5);
  expect(log, 4, 1, WEFT_EVENT_ENTER, 0, e2);
  assert_int_equal(log->r[4].col0, 4);
  assert_int_equal(weft_despawn(w, e2), WEFT_OK);
  assert_int_equal(log->n, 6);
  expect(log, 5, 1, WEFT_EVENT_LEAVE, 0, e2);
  assert_int_equal(log->r[5].col0, 4);
  assert_true(log->r[5].alive);
  free(log);
  weft_world_destroy(w);
}

static void test_observer_remove_add_same_component_keeps_row(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 4, 4);
  weft_component_t b = wt_register(w, "b", 4, 4);
  weft_query_t *q = make_query(w, &(weft_query_desc_t){.include = {a}});
  int32_t v1 = 1, v2 = 2;
  weft_entity_t e = wt_spawn_with(w, (weft_component_t[]){a, b, 0},
                                  (const void *[]){&v1, &v2});
  /* A second row after e, so that any move would change e's row. */
  weft_entity_t other = wt_spawn_with(w, (weft_component_t[]){a, b, 0},
                                      (const void *[]){&v2, &v1});
  log_t *log = log_new();
  obs_ctx_t x = {.log = log, .id = 1, .probe = a};
  add_obs(w, WEFT_EVENT_ADD | WEFT_EVENT_REMOVE, 0, NULL, &x);
  add_obs(w, WEFT_EVENT_ENTER | WEFT_EVENT_LEAVE, 0, q, &x);

  const void *row = weft_get(w, e, a);
  uint64_t moves0 = wt_stats(w).moves;
  int32_t nv = 9;
  weft_world_defer_begin(w);
  assert_int_equal(weft_remove(w, e, a), WEFT_OK);
  assert_int_equal(weft_add(w, e, a, &nv), WEFT_OK);
  assert_int_equal(weft_world_defer_end(w), WEFT_OK);
  assert_int_equal(log->n, 0);
  assert_ptr_equal(weft_get(w, e, a), row);
  assert_int_equal(read_i32(row), 9); /* the add's value */
  assert_int_equal(wt_stats(w).moves, moves0);

  weft_cmdbuf_t *buf = make_buf(w);
  nv = 10;
  assert_int_equal(weft_cmd_remove(buf, e, a), WEFT_OK);
  assert_int_equal(weft_cmd_add(buf, e, a, &nv), WEFT_OK);
  assert_int_equal(weft_world_apply(w, &buf, 1), WEFT_OK);
  assert_int_equal(log->n, 0);
  assert_ptr_equal(weft_get(w, e, a), row);
  assert_int_equal(read_i32(row), 10);
  assert_int_equal(wt_stats(w).moves, moves0);
  assert_int_equal(weft_query_count(q), 2);
  assert_int_equal(read_i32(weft_get(w, other, a)), 2);
  free(log);
  weft_world_destroy(w);
}

/* --- batch spawns -------------------------------------------------------- */

typedef struct big_t {
  int32_t v;
  char pad[60];
} big_t;

#define BATCH_N 200u

typedef struct range_log_t {
  uint32_t first_row[16];
  uint32_t count[16];
  uint32_t n;
  weft_entity_t ents[BATCH_N];
  int32_t vals[BATCH_N];
  uint32_t rows;
  uint32_t bad; /* inconsistencies seen inside the callback */
  weft_component_t comp;
} range_log_t;

static void on_range(weft_world_t *w, const weft_event_t *ev, void *user) {
  range_log_t *r = user;
  assert_int_equal(ev->kind, WEFT_EVENT_ENTER);
  assert_true(r->n < 16);
  assert_non_null(ev->rows);
  r->first_row[r->n] = ev->first_row;
  r->count[r->n] = ev->count;
  r->n++;
  const weft_iter_t *it = ev->rows;
  r->bad += it->count != ev->count;
  r->bad += it->entities[0] != ev->entity;
  const big_t *col = it->columns[0];
  for (uint32_t i = 0; i < it->count; i++) {
    assert_true(r->rows < BATCH_N);
    r->ents[r->rows] = it->entities[i];
    r->vals[r->rows] = col[i].v;
    /* The range views the entity's own row. */
    r->bad += weft_get(w, it->entities[i], r->comp) != (const void *)&col[i];
    r->rows++;
  }
}

static void fill_big(void *user, const weft_iter_t *view, uint32_t first) {
  (void)user;
  big_t *col = view->columns[0];
  for (uint32_t i = 0; i < view->count; i++) {
    col[i].v = (int32_t)(1000 + first + i);
  }
}

static void test_observer_batch_spawn_enter_ranges(void **state) {
  (void)state;
  weft_world_t *w = wt_world_sized(0, WEFT_CHUNK_SIZE_MIN);
  weft_component_t big = wt_register(w, "big", sizeof(big_t), 4);
  weft_component_t other = wt_register(w, "other", 4, 4);
  const weft_component_t comps[] = {big, 0};
  /* Ten rows already in the first chunk before the observers exist. */
  assert_int_equal(weft_spawn_batch(w, 10, comps, NULL, NULL, NULL), WEFT_OK);
  weft_query_t *q = make_query(w, &(weft_query_desc_t){.include = {big}});
  weft_query_t *q_other =
      make_query(w, &(weft_query_desc_t){.include = {other}});
  range_log_t *rl = calloc(1, sizeof *rl);
  assert_non_null(rl);
  rl->comp = big;
  weft_observer_t *o = NULL;
  assert_int_equal(
      weft_observer_create(w,
                           &(weft_observer_desc_t){.events = WEFT_EVENT_ENTER,
                                                   .query = q,
                                                   .fn = on_range,
                                                   .user = rl},
                           &o),
      WEFT_OK);
  log_t *log = log_new();
  obs_ctx_t x = {.log = log, .id = 1, .probe = big};
  add_obs(w, WEFT_EVENT_SPAWN | WEFT_EVENT_DESPAWN, 0, NULL, &x);
  add_obs(w, WEFT_EVENT_ENTER | WEFT_EVENT_LEAVE, 0, q_other, &x);

  static weft_entity_t out[BATCH_N];
  assert_int_equal(weft_spawn_batch(w, BATCH_N, comps, fill_big, NULL, out),
                   WEFT_OK);
  assert_int_equal(log->n, 0); /* no SPAWN; the other query is untouched */
  assert_int_equal(rl->bad, 0);
  assert_true(rl->n >= 3);
  assert_int_equal(rl->rows, BATCH_N);
  uint32_t total = 0;
  for (uint32_t i = 0; i < rl->n; i++) {
    assert_true(rl->count[i] >= 1);
    assert_int_equal(rl->first_row[i], i == 0 ? 10 : 0);
    total += rl->count[i];
  }
  assert_int_equal(total, BATCH_N);
  /* Exactly the new rows, in order, with their filled values. */
  for (uint32_t i = 0; i < BATCH_N; i++) {
    assert_int_equal(rl->ents[i], out[i]);
    assert_int_equal(rl->vals[i], (int32_t)(1000 + i));
  }
  /* One range per chunk: compare with the chunks iteration hands out. */
  weft_iter_t it;
  uint32_t nchunks = 0, seen = 0;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    assert_true(nchunks < rl->n);
    assert_int_equal(it.count, rl->count[nchunks] + (nchunks == 0 ? 10u : 0u));
    uint32_t skip = nchunks == 0 ? 10 : 0;
    assert_int_equal(it.entities[skip], out[seen]);
    seen += it.count - skip;
    nchunks++;
  }
  assert_int_equal(nchunks, rl->n);
  assert_int_equal(seen, BATCH_N);
  free(rl);
  free(log);
  weft_world_destroy(w);
}

/* --- ordering ------------------------------------------------------------ */

static void test_observer_fire_in_registration_order(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 4, 4);
  weft_query_t *q = make_query(w, &(weft_query_desc_t){.include = {a}});
  log_t *log = log_new();
  obs_ctx_t x[5];
  weft_observer_t *o[5];
  for (uint32_t i = 1; i <= 3; i++) {
    x[i] = (obs_ctx_t){.log = log, .id = i, .probe = a};
  }
  /* Mixed kinds: registration order, not kind, decides. */
  o[1] = add_obs(w, WEFT_EVENT_ENTER, 0, q, &x[1]);
  o[2] = add_obs(w, WEFT_EVENT_ENTER | WEFT_EVENT_SPAWN, 0, q, &x[2]);
  o[3] = add_obs(w, WEFT_EVENT_ENTER, 0, q, &x[3]);
  (void)o;
  weft_entity_t e = wt_spawn_with(w, (weft_component_t[]){a, 0}, NULL);
  assert_int_equal(log->n, 4);
  expect(log, 0, 2, WEFT_EVENT_SPAWN, 0, e); /* the only SPAWN observer */
  expect(log, 1, 1, WEFT_EVENT_ENTER, 0, e);
  expect(log, 2, 2, WEFT_EVENT_ENTER, 0, e);
  expect(log, 3, 3, WEFT_EVENT_ENTER, 0, e);

  weft_observer_destroy(o[2]);
  x[4] = (obs_ctx_t){.log = log, .id = 4, .probe = a};
  o[4] = add_obs(w, WEFT_EVENT_ENTER, 0, q, &x[4]);
  log->n = 0;
  weft_entity_t e2 = wt_spawn_with(w, (weft_component_t[]){a, 0}, NULL);
  assert_int_equal(log->n, 3);
  expect(log, 0, 1, WEFT_EVENT_ENTER, 0, e2);
  expect(log, 1, 3, WEFT_EVENT_ENTER, 0, e2);
  expect(log, 2, 4, WEFT_EVENT_ENTER, 0, e2);
  free(log);
  weft_world_destroy(w);
}

static void test_observer_events_follow_stage_order(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 4, 4);
  weft_component_t b = wt_register(w, "b", 4, 4);
  weft_entity_t e[4];
  for (int32_t i = 0; i < 4; i++) {
    e[i] = wt_spawn_with(w, (weft_component_t[]){a, 0}, (const void *[]){&i});
  }
  log_t *log = log_new();
  obs_ctx_t x = {.log = log, .id = 1, .probe = a};
  add_obs(w, WEFT_EVENT_SPAWN | WEFT_EVENT_DESPAWN | WEFT_EVENT_ADD, b, NULL,
          &x);

  /* Recorded out of key order into one buffer. */
  weft_cmdbuf_t *buf = make_buf(w);
  int32_t v10 = 10, v11 = 11, v20 = 20, v21 = 21;
  weft_entity_t p4, p1;
  weft_cmd_key(buf, 4);
  assert_int_equal(weft_cmd_spawn(buf, (weft_component_t[]){a, 0},
                                  (const void *[]){&v20}, &p4),
                   WEFT_OK);
  weft_cmd_key(buf, 3);
  assert_int_equal(weft_cmd_add(buf, e[1], b, &v11), WEFT_OK);
  weft_cmd_key(buf, 5);
  assert_int_equal(weft_cmd_despawn(buf, e[0]), WEFT_OK);
  weft_cmd_key(buf, 1);
  assert_int_equal(weft_cmd_spawn(buf, (weft_component_t[]){a, 0},
                                  (const void *[]){&v21}, &p1),
                   WEFT_OK);
  weft_cmd_key(buf, 2);
  assert_int_equal(weft_cmd_add(buf, e[2], b, &v10), WEFT_OK);
  weft_cmd_key(buf, 0);
  assert_int_equal(weft_cmd_add(buf, e[3], b, &v10), WEFT_OK);
  assert_int_equal(weft_world_apply(w, &buf, 1), WEFT_OK);

  weft_entity_t s1 = resolve(w, p1), s4 = resolve(w, p4);
  /* Despawns, then spawns, then moves; each phase in key order. */
  assert_int_equal(log->n, 6);
  expect(log, 0, 1, WEFT_EVENT_DESPAWN, 0, e[0]);
  expect(log, 1, 1, WEFT_EVENT_SPAWN, 0, s1);
  expect(log, 2, 1, WEFT_EVENT_SPAWN, 0, s4);
  expect(log, 3, 1, WEFT_EVENT_ADD, b, e[3]);
  expect(log, 4, 1, WEFT_EVENT_ADD, b, e[2]);
  expect(log, 5, 1, WEFT_EVENT_ADD, b, e[1]);
  assert_int_equal(log->r[0].get, 0);
  assert_int_equal(log->r[1].get, 21);
  assert_int_equal(log->r[2].get, 20);
  assert_int_equal(log->r[3].col0, 10);
  assert_int_equal(log->r[5].col0, 11);
  assert_int_equal(log->r[5].get, 1);
  free(log);
  weft_world_destroy(w);
}

/* The same commands over nbufs buffers; fills the log, returns the digest. */
static uint64_t run_split(uint32_t nbufs, log_t *log) {
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.world_tag = 0x42;
  weft_world_t *w = wt_world_new(&cfg);
  weft_component_t a = wt_register(w, "a", 4, 4);
  weft_component_t b = wt_register(w, "b", 4, 4);
  weft_component_t c = wt_register(w, "c", 4, 4);
  enum { NE = 8 };
  weft_entity_t e[NE];
  for (int32_t i = 0; i < NE; i++) {
    e[i] = wt_spawn_with(w, (weft_component_t[]){a, 0}, (const void *[]){&i});
  }
  weft_query_t *q = make_query(w, &(weft_query_desc_t){.include = {a}});
  obs_ctx_t x1 = {.log = log, .id = 1, .probe = a};
  obs_ctx_t x2 = {.log = log, .id = 2, .probe = a};
  obs_ctx_t x3 = {.log = log, .id = 3, .probe = a};
  add_obs(w, WEFT_EVENT_SPAWN | WEFT_EVENT_DESPAWN, 0, NULL, &x1);
  add_obs(w, WEFT_EVENT_ADD | WEFT_EVENT_REMOVE, 0, NULL, &x2);
  add_obs(w, WEFT_EVENT_ENTER | WEFT_EVENT_LEAVE, 0, q, &x3);

  weft_cmdbuf_t *bufs[3];
  for (uint32_t i = 0; i < nbufs; i++) {
    bufs[i] = make_buf(w);
  }
  /* Op k gets key perm[k] and buffer k % nbufs; recording runs backwards so
   * every buffer needs sorting. */
  static const uint32_t perm[12] = {7, 2, 11, 0, 5, 9, 1, 10, 3, 8, 6, 4};
  weft_entity_t pend[12] = {0};
  static const int32_t vals[12] = {100, 101, 102, 103, 104, 105,
                                   106, 107, 108, 109, 110, 111};
  for (uint32_t k = 12; k-- > 0;) {
    weft_cmdbuf_t *buf = bufs[k % nbufs];
    weft_cmd_key(buf, WEFT_CMD_KEY(1, 0, perm[k]));
    switch (k) {
    case 0:
    case 1:
    case 2:
      assert_int_equal(weft_cmd_add(buf, e[k], b, &vals[k]), WEFT_OK);
      break;
    case 3:
    case 4:
      assert_int_equal(weft_cmd_remove(buf, e[k], a), WEFT_OK);
      break;
    case 5:
    case 6:
      assert_int_equal(weft_cmd_despawn(buf, e[k]), WEFT_OK);
      break;
    case 7:
      assert_int_equal(weft_cmd_disable(buf, e[k], a), WEFT_OK);
      break;
    default: /* 8..11: spawns */
      assert_int_equal(weft_cmd_spawn(buf, (weft_component_t[]){a, c, 0},
                                      (const void *[]){&vals[k], &vals[k]},
                                      &pend[k]),
                       WEFT_OK);
      break;
    }
  }
  assert_int_equal(weft_world_apply(w, bufs, nbufs), WEFT_OK);
  uint64_t digest = weft_world_digest(w);
  weft_world_destroy(w);
  return digest;
}

static void test_observer_same_log_for_one_or_three_buffers(void **state) {
  (void)state;
  log_t *l1 = log_new(), *l3 = log_new();
  uint64_t d1 = run_split(1, l1);
  uint64_t d3 = run_split(3, l3);
  assert_int_equal(d1, d3);
  /* 4 spawns (SPAWN, ADD a, ADD c, ENTER), 3 adds, 2 removes (REMOVE,
   * LEAVE), 2 despawns (DESPAWN, REMOVE a, LEAVE), 1 disable (LEAVE). */
  assert_int_equal(l1->n, 4 * 4 + 3 + 2 * 2 + 2 * 3 + 1);
  assert_int_equal(l3->n, l1->n);
  for (uint32_t i = 0; i < l1->n; i++) {
    const rec_t *r1 = &l1->r[i], *r3 = &l3->r[i];
    assert_int_equal(r1->obs, r3->obs);
    assert_int_equal(r1->kind, r3->kind);
    assert_int_equal(r1->comp, r3->comp);
    assert_int_equal(r1->e, r3->e);
    assert_int_equal(r1->first_row, r3->first_row);
    assert_int_equal(r1->count, r3->count);
    assert_int_equal(r1->col0, r3->col0);
    assert_int_equal(r1->get, r3->get);
    assert_int_equal(r1->alive, r3->alive);
  }
  /* Despawns lead; the first is the entity whose key is lower (e[6]). */
  assert_int_equal(l1->r[0].kind, WEFT_EVENT_DESPAWN);
  assert_int_equal(l1->r[0].get, 6);
  free(l1);
  free(l3);
}

/* --- observers that stage work ------------------------------------------- */

static void act_add_b(weft_world_t *w, const weft_event_t *ev, obs_ctx_t *x) {
  int32_t v = read_i32(ev->rows->columns[0]) + 100;
  x->rc = weft_add(w, ev->entity, x->comp2, &v);
  /* Staged for the next wave, not applied yet. */
  x->made_alive[x->nmade++] = weft_has(w, ev->entity, x->comp2);
}

static void test_observer_add_observer_stages_add(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 4, 4);
  weft_component_t b = wt_register(w, "b", 4, 4);
  weft_component_t c = wt_register(w, "c", 4, 4);
  weft_entity_t e1 = wt_spawn(w), e2 = wt_spawn(w);
  log_t *log = log_new();
  obs_ctx_t xa = {
      .log = log, .id = 1, .probe = b, .action = act_add_b, .comp2 = b};
  obs_ctx_t xany = {.log = log, .id = 2, .probe = b};
  add_obs(w, WEFT_EVENT_ADD, a, NULL, &xa);
  add_obs(w, WEFT_EVENT_ADD, 0, NULL, &xany);

  /* Baseline: nothing staged by observers, one wave. */
  weft_cmdbuf_t *buf = make_buf(w);
  assert_int_equal(weft_cmd_add(buf, e1, c, NULL), WEFT_OK);
  uint64_t w0 = waves(w);
  assert_int_equal(weft_world_apply(w, &buf, 1), WEFT_OK);
  assert_int_equal(waves(w) - w0, 1);
  assert_int_equal(log->n, 1);
  log->n = 0;

  int32_t v = 5;
  assert_int_equal(weft_cmd_add(buf, e1, a, &v), WEFT_OK);
  w0 = waves(w);
  assert_int_equal(weft_world_apply(w, &buf, 1), WEFT_OK);
  assert_int_equal(waves(w) - w0, 2);
  assert_int_equal(xa.rc, WEFT_OK);
  assert_int_equal(xa.nmade, 1);
  assert_false(xa.made_alive[0]); /* b not there during the callback */
  assert_int_equal(log->n, 3);
  expect(log, 0, 1, WEFT_EVENT_ADD, a, e1);
  expect(log, 1, 2, WEFT_EVENT_ADD, a, e1);
  expect(log, 2, 2, WEFT_EVENT_ADD, b, e1);
  assert_int_equal(log->r[0].get, NOV);
  assert_int_equal(log->r[2].col0, 105);
  assert_int_equal(log->r[2].get, 105);
  assert_int_equal(read_i32(weft_get(w, e1, b)), 105);

  /* A direct call drains the observer's work before returning. */
  v = 7;
  w0 = waves(w);
  assert_int_equal(weft_add(w, e2, a, &v), WEFT_OK);
  assert_int_equal(waves(w) - w0, 2);
  assert_int_equal(read_i32(weft_get(w, e2, b)), 107);
  assert_int_equal(log->n, 6);
  expect(log, 5, 2, WEFT_EVENT_ADD, b, e2);
  free(log);
  weft_world_destroy(w);
}

static void act_spawn_child(weft_world_t *w, const weft_event_t *ev,
                            obs_ctx_t *x) {
  const int32_t *pa = weft_get(w, ev->entity, x->probe);
  if (!pa) {
    return; /* a child: no grandchildren */
  }
  int32_t v = *pa * 10;
  weft_entity_t child = WEFT_ENTITY_NULL;
  x->rc = weft_spawn_with(w, (weft_component_t[]){x->comp2, 0},
                          (const void *[]){&v}, &child);
  assert_true(x->nmade < 128);
  x->made[x->nmade] = child;
  x->made_alive[x->nmade++] = weft_is_alive(w, child);
}

static void test_observer_spawn_observer_spawns_child(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 4, 4);
  weft_component_t kid = wt_register(w, "kid", 4, 4);
  log_t *log = log_new();
  obs_ctx_t x = {
      .log = log, .id = 1, .probe = a, .action = act_spawn_child, .comp2 = kid};
  add_obs(w, WEFT_EVENT_SPAWN, 0, NULL, &x);

  int32_t v = 5;
  uint64_t w0 = waves(w);
  weft_entity_t parent =
      wt_spawn_with(w, (weft_component_t[]){a, 0}, (const void *[]){&v});
  assert_int_equal(waves(w) - w0, 2);
  assert_int_equal(x.rc, WEFT_OK);
  assert_int_equal(x.nmade, 1);
  assert_false(x.made_alive[0]); /* staged during the callback */
  weft_entity_t child = x.made[0];
  assert_true(weft_is_alive(w, child));
  assert_int_equal(read_i32(weft_get(w, child, kid)), 50);
  assert_int_equal(log->n, 2);
  expect(log, 0, 1, WEFT_EVENT_SPAWN, 0, parent);
  expect(log, 1, 1, WEFT_EVENT_SPAWN, 0, child);
  assert_true(log->r[1].alive);
  assert_int_equal(weft_world_count(w), 2);

  /* From a command buffer: children appear by the end of the apply. */
  weft_cmdbuf_t *buf = make_buf(w);
  int32_t v2 = 6, v3 = 7;
  weft_entity_t p2, p3;
  assert_int_equal(weft_cmd_spawn(buf, (weft_component_t[]){a, 0},
                                  (const void *[]){&v2}, &p2),
                   WEFT_OK);
  assert_int_equal(weft_cmd_spawn(buf, (weft_component_t[]){a, 0},
                                  (const void *[]){&v3}, &p3),
                   WEFT_OK);
  w0 = waves(w);
  assert_int_equal(weft_world_apply(w, &buf, 1), WEFT_OK);
  assert_int_equal(waves(w) - w0, 2);
  assert_int_equal(x.nmade, 3);
  assert_int_equal(log->n, 6);
  expect(log, 2, 1, WEFT_EVENT_SPAWN, 0, resolve(w, p2));
  expect(log, 3, 1, WEFT_EVENT_SPAWN, 0, resolve(w, p3));
  expect(log, 4, 1, WEFT_EVENT_SPAWN, 0, x.made[1]);
  expect(log, 5, 1, WEFT_EVENT_SPAWN, 0, x.made[2]);
  assert_int_equal(read_i32(weft_get(w, x.made[1], kid)), 60);
  assert_int_equal(read_i32(weft_get(w, x.made[2], kid)), 70);
  assert_int_equal(weft_world_count(w), 6);
  wt_check_slot_invariant(w);
  free(log);
  weft_world_destroy(w);
}

/* --- cascade ------------------------------------------------------------- */

static void act_spawn_forever(weft_world_t *w, const weft_event_t *ev,
                              obs_ctx_t *x) {
  (void)ev;
  int32_t v = (int32_t)x->nmade;
  weft_entity_t e = WEFT_ENTITY_NULL;
  x->rc = weft_spawn_with(w, (weft_component_t[]){x->probe, 0},
                          (const void *[]){&v}, &e);
  assert_true(x->nmade < 128);
  x->made[x->nmade++] = e;
}

/* Checks the world after a cascade that placed `placed` entities. */
static void check_after_cascade(weft_world_t *w, const weft_query_t *q,
                                obs_ctx_t *x, uint32_t placed) {
  wt_check_slot_invariant(w);
  assert_int_equal(wt_stats(w).staged_spawns, 0);
  assert_int_equal(weft_world_count(w), placed);
  assert_int_equal(weft_query_count(q), placed);
  weft_iter_t it;
  uint32_t rows = 0;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    rows += it.count;
  }
  assert_int_equal(rows, placed);
  /* The spawn staged in the last wave was dropped. */
  assert_false(weft_is_alive(w, x->made[x->nmade - 1]));
  assert_true(weft_is_alive(w, x->made[x->nmade - 2]));
  assert_int_equal(weft_world_defer_depth(w), 0);
}

static void test_observer_cascade_stops_after_64_waves(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 4, 4);
  weft_query_t *q = make_query(w, &(weft_query_desc_t){.include = {a}});
  log_t *log = log_new();
  obs_ctx_t x = {.log = log, .id = 1, .probe = a, .action = act_spawn_forever};
  weft_observer_t *o = add_obs(w, WEFT_EVENT_SPAWN, 0, NULL, &x);

  weft_cmdbuf_t *buf = make_buf(w);
  weft_entity_t p;
  assert_int_equal(weft_cmd_spawn(buf, (weft_component_t[]){a, 0}, NULL, &p),
                   WEFT_OK);
  weft_world_stats_t s0 = wt_stats(w);
  assert_int_equal(weft_world_apply(w, &buf, 1), WEFT_ECASCADE);
  weft_world_stats_t s1 = wt_stats(w);
  assert_int_equal(s1.drain_waves - s0.drain_waves, 64);
  assert_true(s1.commands_dropped > s0.commands_dropped);
  assert_int_equal(log->n, 64);
  assert_int_equal(x.nmade, 64);
  assert_int_equal(x.rc, WEFT_OK);
  for (uint32_t i = 1; i < 64; i++) {
    expect(log, i, 1, WEFT_EVENT_SPAWN, 0, x.made[i - 1]);
    assert_int_equal(log->r[i].get, (int32_t)(i - 1));
  }
  check_after_cascade(w, q, &x, 64);
  assert_non_null(strstr(weft_world_last_error(w), "cascade"));

  /* The world keeps working. */
  weft_observer_destroy(o);
  weft_entity_t e = wt_spawn_with(w, (weft_component_t[]){a, 0}, NULL);
  assert_int_equal(weft_despawn(w, x.made[0]), WEFT_OK);
  int32_t v = 77;
  assert_int_equal(weft_cmd_set(buf, e, a, &v), WEFT_OK);
  assert_int_equal(weft_cmd_spawn(buf, (weft_component_t[]){a, 0}, NULL, &p),
                   WEFT_OK);
  assert_int_equal(weft_world_apply(w, &buf, 1), WEFT_OK);
  assert_int_equal(read_i32(weft_get(w, e, a)), 77);
  assert_true(weft_is_alive(w, resolve(w, p)));
  assert_int_equal(weft_world_count(w), 65);
  assert_int_equal(weft_query_count(q), 65);
  assert_int_equal(log->n, 64);
  wt_check_slot_invariant(w);
  free(log);
  weft_world_destroy(w);
}

static void test_observer_cascade_in_deferred_scope(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 4, 4);
  weft_query_t *q = make_query(w, &(weft_query_desc_t){.include = {a}});
  log_t *log = log_new();
  obs_ctx_t x = {.log = log, .id = 1, .probe = a, .action = act_spawn_forever};
  weft_observer_t *o = add_obs(w, WEFT_EVENT_SPAWN, 0, NULL, &x);

  weft_world_defer_begin(w);
  weft_entity_t first;
  assert_int_equal(weft_spawn_with(w, (weft_component_t[]){a, 0}, NULL, &first),
                   WEFT_OK);
  weft_world_stats_t s0 = wt_stats(w);
  assert_int_equal(weft_world_defer_end(w), WEFT_ECASCADE);
  weft_world_stats_t s1 = wt_stats(w);
  assert_int_equal(s1.drain_waves - s0.drain_waves, 64);
  assert_true(s1.commands_dropped > s0.commands_dropped);
  assert_int_equal(log->n, 64);
  expect(log, 0, 1, WEFT_EVENT_SPAWN, 0, first);
  check_after_cascade(w, q, &x, 64);

  weft_observer_destroy(o);
  weft_world_defer_begin(w);
  weft_entity_t e;
  assert_int_equal(weft_spawn_with(w, (weft_component_t[]){a, 0}, NULL, &e),
                   WEFT_OK);
  assert_int_equal(weft_world_defer_end(w), WEFT_OK);
  assert_true(weft_is_alive(w, e));
  assert_int_equal(weft_query_count(q), 65);
  wt_check_slot_invariant(w);
  free(log);
  weft_world_destroy(w);
}

/* --- lifetime and errors ------------------------------------------------- */

static void noop(weft_world_t *w, const weft_event_t *ev, void *user) {
  (void)w;
  (void)ev;
  (void)user;
}

static void act_try_create(weft_world_t *w, const weft_event_t *ev,
                           obs_ctx_t *x) {
  (void)ev;
  weft_observer_t *o = NULL;
  x->rc = weft_observer_create(
      w, &(weft_observer_desc_t){.events = WEFT_EVENT_SPAWN, .fn = noop}, &o);
  x->made_alive[x->nmade++] = o == NULL;
}

static void test_observer_create_errors(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_world_t *w2 = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 4, 4);
  weft_component_t a2 = wt_register(w2, "a", 4, 4);
  weft_query_t *q = make_query(w, &(weft_query_desc_t){.include = {a}});
  weft_query_t *q2 = make_query(w2, &(weft_query_desc_t){.include = {a2}});
  weft_observer_t *o = NULL;

  weft_observer_desc_t d = {.events = WEFT_EVENT_SPAWN, .fn = NULL};
  assert_int_equal(weft_observer_create(w, &d, &o), WEFT_EINVAL);
  d = (weft_observer_desc_t){.events = 0, .fn = noop};
  assert_int_equal(weft_observer_create(w, &d, &o), WEFT_EINVAL);
  d = (weft_observer_desc_t){.events = WEFT_EVENT_ENTER, .fn = noop};
  assert_int_equal(weft_observer_create(w, &d, &o), WEFT_EINVAL);
  d.events = WEFT_EVENT_LEAVE;
  assert_int_equal(weft_observer_create(w, &d, &o), WEFT_EINVAL);
  d.query = q2; /* another world's query */
  assert_int_equal(weft_observer_create(w, &d, &o), WEFT_EINVAL);
  d = (weft_observer_desc_t){
      .events = WEFT_EVENT_ADD, .component = a + 1, .fn = noop};
  assert_int_equal(weft_observer_create(w, &d, &o), WEFT_ENOCOMP);
  assert_null(o);

  /* Not inside a deferred scope, an iteration or a drain. */
  d = (weft_observer_desc_t){
      .events = WEFT_EVENT_ENTER, .query = q, .fn = noop};
  weft_world_defer_begin(w);
  assert_int_equal(weft_observer_create(w, &d, &o), WEFT_EBUSY);
  weft_world_defer_end(w);
  assert_null(o);
  wt_spawn_with(w, (weft_component_t[]){a, 0}, NULL);
  weft_iter_t it;
  weft_query_iter(q, &it);
  assert_true(weft_iter_next(&it));
  assert_int_equal(weft_observer_create(w, &d, &o), WEFT_EBUSY);
  weft_iter_close(&it);
  assert_null(o);

  log_t *log = log_new();
  obs_ctx_t x = {.log = log, .id = 1, .action = act_try_create, .rc = 1};
  weft_observer_t *ox = add_obs(w, WEFT_EVENT_SPAWN, 0, NULL, &x);
  wt_spawn(w);
  assert_int_equal(x.nmade, 1);
  assert_int_equal(x.rc, WEFT_EBUSY);
  assert_true(x.made_alive[0]); /* *out untouched */
  weft_observer_destroy(ox);

  /* Valid now. */
  assert_int_equal(weft_observer_create(w, &d, &o), WEFT_OK);
  assert_non_null(o);
  weft_observer_destroy(o);
  weft_observer_destroy(NULL);
  free(log);
  weft_world_destroy(w2);
  weft_world_destroy(w);
}

static void test_observer_destroy_stops_delivery(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 4, 4);
  log_t *log = log_new();
  obs_ctx_t x1 = {.log = log, .id = 1, .probe = a};
  obs_ctx_t x2 = {.log = log, .id = 2, .probe = a};
  weft_observer_t *o1 =
      add_obs(w, WEFT_EVENT_SPAWN | WEFT_EVENT_ADD, 0, NULL, &x1);
  add_obs(w, WEFT_EVENT_DESPAWN, 0, NULL, &x2);
  weft_entity_t e = wt_spawn_with(w, (weft_component_t[]){a, 0}, NULL);
  assert_int_equal(log->n, 2);
  weft_observer_destroy(o1);
  weft_entity_t e2 = wt_spawn_with(w, (weft_component_t[]){a, 0}, NULL);
  assert_int_equal(log->n, 2);
  assert_true(weft_is_alive(w, e2));
  assert_int_equal(weft_despawn(w, e), WEFT_OK); /* the other still fires */
  assert_int_equal(log->n, 3);
  expect(log, 2, 2, WEFT_EVENT_DESPAWN, 0, e);
  free(log);
  weft_world_destroy(w);
}

static void test_observer_query_destroy_removes_observers(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 4, 4);
  weft_query_t *q = make_query(w, &(weft_query_desc_t){.include = {a}});
  weft_query_t *keep = make_query(w, &(weft_query_desc_t){.include = {a}});
  log_t *log = log_new();
  obs_ctx_t x1 = {.log = log, .id = 1, .probe = a};
  obs_ctx_t x2 = {.log = log, .id = 2, .probe = a};
  obs_ctx_t x3 = {.log = log, .id = 3, .probe = a};
  add_obs(w, WEFT_EVENT_ENTER | WEFT_EVENT_LEAVE, 0, q, &x1);
  add_obs(w, WEFT_EVENT_ENTER | WEFT_EVENT_LEAVE, 0, q, &x2);
  add_obs(w, WEFT_EVENT_ENTER | WEFT_EVENT_LEAVE, 0, keep, &x3);
  weft_entity_t e = wt_spawn_with(w, (weft_component_t[]){a, 0}, NULL);
  assert_int_equal(log->n, 3);

  weft_query_destroy(q);
  assert_int_equal(wt_stats(w).queries, 1);
  log->n = 0;
  weft_entity_t e2 = wt_spawn_with(w, (weft_component_t[]){a, 0}, NULL);
  assert_int_equal(weft_remove(w, e, a), WEFT_OK);
  assert_int_equal(log->n, 2); /* only the surviving query's observer */
  expect(log, 0, 3, WEFT_EVENT_ENTER, 0, e2);
  expect(log, 1, 3, WEFT_EVENT_LEAVE, 0, e);

  /* With no observer left, structural calls take the direct path. */
  weft_query_destroy(keep);
  log->n = 0;
  assert_int_equal(weft_despawn(w, e2), WEFT_OK);
  wt_spawn_with(w, (weft_component_t[]){a, 0}, NULL);
  assert_int_equal(log->n, 0);
  free(log);
  weft_world_destroy(w);
}

/* An ENTER observer that spawns during a batch spawn must not push the
 * world past its capacity: the batch keeps the slots it still needs. */
typedef struct batch_spawner_t {
  int calls;
  int rc;
  weft_entity_t extra;
} batch_spawner_t;

static void spawn_on_enter(weft_world_t *w, const weft_event_t *ev,
                           void *user) {
  (void)ev;
  batch_spawner_t *b = user;
  if (b->calls++ == 0)
    b->rc = weft_spawn(w, &b->extra);
}

static void test_observer_batch_spawn_keeps_its_capacity(void **state) {
  (void)state;
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.chunk_size = 4096;
  cfg.capacity = 168;
  weft_world_t *w = wt_world_new(&cfg);
  weft_component_t a = wt_register(w, "a", 64, 0);
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = a;
  weft_query_t *q = make_query(w, &qd);
  batch_spawner_t bs = {0, 99, WEFT_ENTITY_NULL};
  weft_observer_desc_t od = {.events = WEFT_EVENT_ENTER,
                             .query = q,
                             .fn = spawn_on_enter,
                             .user = &bs};
  weft_observer_t *o = NULL;
  assert_int_equal(weft_observer_create(w, &od, &o), WEFT_OK);
  static weft_entity_t out[168];
  const weft_component_t comps[] = {a, 0};
  assert_int_equal(weft_spawn_batch(w, 168, comps, NULL, NULL, out), WEFT_OK);
  assert_true(bs.calls > 1); /* one ENTER range per chunk */
  assert_int_equal(bs.rc, WEFT_EFULL);
  for (int i = 0; i < 168; i++)
    assert_true(weft_is_alive(w, out[i]));
  weft_world_stats_t s = wt_stats(w);
  assert_int_equal(s.alive, 168);
  assert_int_equal(s.remaining, 0);
  assert_int_equal(s.staged_spawns, 0);
  wt_check_slot_invariant(w);
  assert_int_equal(weft_query_count(q), 168);
  weft_world_destroy(w);
}

/* --- archetype events ---------------------------------------------------- */

typedef struct arec_t {
  uint32_t kind, archetype, other, count, first_row;
  weft_entity_t e;
  weft_component_t comps[8];
  uint32_t ncomps;
  int32_t value; /* weft_get(e, probe) during the callback, NOV if none */
  bool rows_ok;  /* rows->entities[0] == entity, count matches */
} arec_t;

typedef struct alog_t {
  arec_t r[64];
  uint32_t n;
  weft_component_t probe;
} alog_t;

static void arch_record(weft_world_t *w, const weft_event_t *ev, void *user) {
  alog_t *l = user;
  assert_true(l->n < 64);
  arec_t *r = &l->r[l->n++];
  memset(r, 0, sizeof *r);
  r->kind = ev->kind;
  r->archetype = ev->archetype;
  r->other = ev->other_archetype;
  r->count = ev->count;
  r->first_row = ev->first_row;
  r->e = ev->entity;
  r->ncomps = ev->ncomponents;
  for (uint32_t i = 0; i < ev->ncomponents && i < 8; i++)
    r->comps[i] = ev->components[i];
  r->value = ev->entity ? read_i32(weft_get(w, ev->entity, l->probe)) : NOV;
  r->rows_ok = ev->rows ? ev->rows->entities[0] == ev->entity &&
                              ev->rows->count == ev->count
                        : ev->kind == WEFT_EVENT_ARCHETYPE_CREATED;
}

static weft_observer_t *arch_observer(weft_world_t *w, uint32_t events,
                                      uint32_t archetype, alog_t *l) {
  weft_observer_desc_t d;
  memset(&d, 0, sizeof d);
  d.events = events;
  d.archetype = archetype;
  d.fn = arch_record;
  d.user = l;
  weft_observer_t *o;
  assert_int_equal(weft_observer_create(w, &d, &o), WEFT_OK);
  return o;
}

static void expect_arec(const alog_t *l, uint32_t i, uint32_t kind,
                        uint32_t archetype, uint32_t other, weft_entity_t e) {
  if (i >= l->n)
    fail_msg("event %u missing (%u events)", i, l->n);
  const arec_t *r = &l->r[i];
  if (r->kind != kind || r->archetype != archetype || r->other != other ||
      r->e != e || !r->rows_ok)
    fail_msg("event %u: kind %#x arch %u other %u e %llx rows %d; expected "
             "%#x %u %u %llx",
             i, r->kind, r->archetype, r->other, (unsigned long long)r->e,
             r->rows_ok, kind, archetype, other, (unsigned long long)e);
}

static void test_observer_archetype_created_before_first_rows(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "A", sizeof(int32_t), 0);
  weft_component_t b = wt_register(w, "B", sizeof(int32_t), 0);
  weft_component_t tag = wt_register_tag(w, "Tag");
  alog_t l = {.probe = a};
  arch_observer(w, WEFT_EVENT_ARCHETYPE_CREATED | WEFT_EVENT_ARCHETYPE_ENTER, 0,
                &l);
  const weft_component_t ba[] = {b, a, 0};
  int32_t va = 11, vb = 22;
  const void *vals[] = {&vb, &va};
  weft_entity_t e = WEFT_ENTITY_NULL;
  assert_int_equal(weft_spawn_with(w, ba, vals, &e), WEFT_OK);
  uint32_t ab = weft_archetype_of(w, e);
  assert_true(ab > 0);
  /* Created (with its ids, ascending) before the rows enter, which come
   * with their values. */
  assert_int_equal(l.n, 2);
  expect_arec(&l, 0, WEFT_EVENT_ARCHETYPE_CREATED, ab, 0, WEFT_ENTITY_NULL);
  assert_int_equal(l.r[0].ncomps, 2);
  assert_int_equal(l.r[0].comps[0], a);
  assert_int_equal(l.r[0].comps[1], b);
  expect_arec(&l, 1, WEFT_EVENT_ARCHETYPE_ENTER, ab, 0, e);
  assert_int_equal(l.r[1].value, 11);
  /* A second spawn there creates nothing. */
  weft_entity_t f = wt_spawn_with(w, ba, vals);
  assert_int_equal(l.n, 3);
  expect_arec(&l, 2, WEFT_EVENT_ARCHETYPE_ENTER, ab, 0, f);
  /* A new signature: created, then entered from the old one. */
  assert_int_equal(weft_add(w, e, tag, NULL), WEFT_OK);
  uint32_t abt = weft_archetype_of(w, e);
  assert_int_not_equal(abt, ab);
  assert_int_equal(l.n, 5);
  expect_arec(&l, 3, WEFT_EVENT_ARCHETYPE_CREATED, abt, 0, WEFT_ENTITY_NULL);
  assert_int_equal(l.r[3].ncomps, 3);
  assert_int_equal(l.r[3].comps[2], tag);
  expect_arec(&l, 4, WEFT_EVENT_ARCHETYPE_ENTER, abt, ab, e);
  assert_int_equal(weft_archetype_of(w, WEFT_ENTITY_NULL), 0);
  weft_world_destroy(w);
}

static void test_observer_archetype_enter_leave_move(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "A", sizeof(int32_t), 0);
  weft_component_t tag = wt_register_tag(w, "Tag");
  const weft_component_t only_a[] = {a, 0};
  int32_t va = 5;
  const void *vals[] = {&va};
  weft_entity_t keep = wt_spawn_with(w, only_a, vals);
  weft_entity_t e = wt_spawn_with(w, only_a, vals);
  assert_int_equal(weft_add(w, keep, tag, NULL), WEFT_OK);
  const uint32_t xa = weft_archetype_of(w, e);
  const uint32_t xat = weft_archetype_of(w, keep);
  alog_t all = {.probe = a}, only = {.probe = a};
  const uint32_t ev = WEFT_EVENT_ARCHETYPE_ENTER | WEFT_EVENT_ARCHETYPE_LEAVE |
                      WEFT_EVENT_ARCHETYPE_MOVE;
  arch_observer(w, ev, 0, &all);
  arch_observer(w, ev, xat, &only);
  /* A move: LEAVE from the old (still readable), then ENTER and MOVE in
   * the new, each naming the other archetype. */
  assert_int_equal(weft_add(w, e, tag, NULL), WEFT_OK);
  assert_int_equal(all.n, 3);
  expect_arec(&all, 0, WEFT_EVENT_ARCHETYPE_LEAVE, xa, xat, e);
  assert_int_equal(all.r[0].value, 5);
  expect_arec(&all, 1, WEFT_EVENT_ARCHETYPE_ENTER, xat, xa, e);
  expect_arec(&all, 2, WEFT_EVENT_ARCHETYPE_MOVE, xat, xa, e);
  assert_int_equal(all.r[2].value, 5);
  /* A despawn: LEAVE with no other archetype, the entity readable. */
  assert_int_equal(weft_despawn(w, e), WEFT_OK);
  assert_int_equal(all.n, 4);
  expect_arec(&all, 3, WEFT_EVENT_ARCHETYPE_LEAVE, xat, 0, e);
  assert_int_equal(all.r[3].value, 5);
  /* A batch spawn enters as one range. */
  weft_entity_t made[3];
  assert_int_equal(weft_spawn_batch(w, 3, only_a, NULL, NULL, made), WEFT_OK);
  assert_int_equal(all.n, 5);
  expect_arec(&all, 4, WEFT_EVENT_ARCHETYPE_ENTER, xa, 0, made[0]);
  assert_int_equal(all.r[4].count, 3);
  /* The filtered observer saw only its archetype's events. */
  assert_int_equal(only.n, 3);
  expect_arec(&only, 0, WEFT_EVENT_ARCHETYPE_ENTER, xat, xa, e);
  expect_arec(&only, 1, WEFT_EVENT_ARCHETYPE_MOVE, xat, xa, e);
  expect_arec(&only, 2, WEFT_EVENT_ARCHETYPE_LEAVE, xat, 0, e);
  weft_world_destroy(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_observer_spawn_with_fires_inline_with_values),
      cmocka_unit_test(test_observer_batch_spawn_keeps_its_capacity),
      cmocka_unit_test(test_observer_spawn_from_command_buffer),
      cmocka_unit_test(test_observer_spawn_in_deferred_scope),
      cmocka_unit_test(test_observer_despawn_sees_entity_alive),
      cmocka_unit_test(test_observer_cancelled_spawn_reports_despawn),
      cmocka_unit_test(test_observer_add_remove_component_filter),
      cmocka_unit_test(
          test_observer_despawn_reports_remove_for_every_component),
      cmocka_unit_test(test_observer_enable_disable_is_not_add_remove),
      cmocka_unit_test(test_observer_enter_leave_query),
      cmocka_unit_test(test_observer_remove_add_same_component_keeps_row),
      cmocka_unit_test(test_observer_batch_spawn_enter_ranges),
      cmocka_unit_test(test_observer_fire_in_registration_order),
      cmocka_unit_test(test_observer_events_follow_stage_order),
      cmocka_unit_test(test_observer_same_log_for_one_or_three_buffers),
      cmocka_unit_test(test_observer_add_observer_stages_add),
      cmocka_unit_test(test_observer_spawn_observer_spawns_child),
      cmocka_unit_test(test_observer_cascade_stops_after_64_waves),
      cmocka_unit_test(test_observer_cascade_in_deferred_scope),
      cmocka_unit_test(test_observer_create_errors),
      cmocka_unit_test(test_observer_destroy_stops_delivery),
      cmocka_unit_test(test_observer_query_destroy_removes_observers),
      cmocka_unit_test(test_observer_archetype_created_before_first_rows),
      cmocka_unit_test(test_observer_archetype_enter_leave_move),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
