/* SPDX-License-Identifier: MIT */
/* Unit tests for command buffers, deferred scopes and iteration scopes: the
 * mutation model of weft/command.h (recording, deterministic merge,
 * per-entity folding, query-wide commands, scopes, errors, allocation). */
#include "support/weft_test.h"

#include <stdlib.h>

/* --- fixture ------------------------------------------------------------- */

/* A world with three 8-byte components a, b, c and a tag t. */
typedef struct fx_t {
  weft_world_t *w;
  weft_component_t a, b, c, t;
} fx_t;

static fx_t fx_new_cfg(weft_world_config_t *cfg) {
  fx_t f;
  memset(&f, 0, sizeof f);
  f.w = wt_world_new(cfg);
  f.a = wt_register(f.w, "a", sizeof(uint64_t), 0);
  f.b = wt_register(f.w, "b", sizeof(uint64_t), 0);
  f.c = wt_register(f.w, "c", sizeof(uint64_t), 0);
  f.t = wt_register_tag(f.w, "t");
  return f;
}

/* capacity 0: default; tag 0: a fresh tag. */
static fx_t fx_new(uint32_t capacity, uint8_t tag) {
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.capacity = capacity;
  cfg.world_tag = tag;
  return fx_new_cfg(&cfg);
}

/* The uint64_t value of component c of e; fails when it cannot be read. */
static uint64_t val(const weft_world_t *w, weft_entity_t e,
                    weft_component_t c) {
  const uint64_t *p = weft_get(w, e, c);
  assert_non_null(p);
  return *p;
}

/* Spawns an entity with up to three components and their values. */
static weft_entity_t spawn3(weft_world_t *w, weft_component_t c0, uint64_t v0,
                            weft_component_t c1, uint64_t v1,
                            weft_component_t c2, uint64_t v2) {
  const weft_component_t comps[] = {c0, c1, c2, 0};
  const void *values[] = {&v0, &v1, &v2};
  return wt_spawn_with(w, comps, values);
}

static weft_entity_t spawn1(weft_world_t *w, weft_component_t c0, uint64_t v0) {
  return spawn3(w, c0, v0, 0, 0, 0, 0);
}

static weft_cmdbuf_t *buf_new(weft_world_t *w) {
  weft_cmdbuf_t *b = NULL;
  assert_int_equal(weft_cmdbuf_create(w, &b), WEFT_OK);
  assert_non_null(b);
  return b;
}

/* Records a spawn with up to two components (0 ends the list). */
static weft_entity_t cmd_spawn2(weft_cmdbuf_t *b, weft_component_t c0,
                                uint64_t v0, weft_component_t c1, uint64_t v1) {
  const weft_component_t comps[] = {c0, c1, 0};
  const void *values[] = {&v0, &v1};
  weft_entity_t p = WEFT_ENTITY_NULL;
  assert_int_equal(weft_cmd_spawn(b, comps, values, &p), WEFT_OK);
  assert_true(weft_entity_is_pending(p));
  return p;
}

static void cmd_set(weft_cmdbuf_t *b, weft_entity_t e, weft_component_t c,
                    uint64_t v) {
  assert_int_equal(weft_cmd_set(b, e, c, &v), WEFT_OK);
}

static void cmd_add(weft_cmdbuf_t *b, weft_entity_t e, weft_component_t c,
                    uint64_t v) {
  assert_int_equal(weft_cmd_add(b, e, c, &v), WEFT_OK);
}

static void apply1(weft_world_t *w, weft_cmdbuf_t *b) {
  assert_int_equal(weft_world_apply(w, &b, 1), WEFT_OK);
}

static weft_entity_t resolve_ok(const weft_world_t *w, weft_entity_t p) {
  weft_entity_t e = WEFT_ENTITY_NULL;
  assert_int_equal(weft_cmd_resolve(w, p, &e), WEFT_OK);
  assert_false(weft_entity_is_pending(e));
  assert_true(weft_is_alive(w, e));
  return e;
}

static void resolve_stale(const weft_world_t *w, weft_entity_t p) {
  weft_entity_t e = 12345;
  assert_int_equal(weft_cmd_resolve(w, p, &e), WEFT_ESTALE);
  assert_int_equal(e, WEFT_ENTITY_NULL);
}

static weft_query_t *query1(weft_world_t *w, weft_component_t inc) {
  weft_query_desc_t d;
  memset(&d, 0, sizeof d);
  d.include[0] = inc;
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(w, &d, &q), WEFT_OK);
  return q;
}

/* Observer that counts deliveries (and row-less ones) per event kind. */
typedef struct ev_count_t {
  int by_kind[6];
  int rowless;
} ev_count_t;

static void count_events(weft_world_t *w, const weft_event_t *ev, void *user) {
  (void)w;
  ev_count_t *n = user;
  for (int k = 0; k < 6; k++) {
    if (ev->kind == (1u << k)) {
      n->by_kind[k] += (int)ev->count;
    }
  }
  if (ev->rows == NULL) {
    n->rowless++;
  }
}

static int ev_total(const ev_count_t *n) {
  int sum = 0;
  for (int k = 0; k < 6; k++) {
    sum += n->by_kind[k];
  }
  return sum;
}

/* --- recording and resolving -------------------------------------------- */

static void test_command_spawn_returns_pending_handle(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  weft_cmdbuf_t *b = buf_new(f.w);
  uint64_t va = 41, vb = 42;
  const weft_component_t comps[] = {f.a, f.b, 0};
  const void *values[] = {&va, &vb};
  weft_entity_t p = WEFT_ENTITY_NULL;
  assert_int_equal(weft_cmd_spawn(b, comps, values, &p), WEFT_OK);
  va = 1000; /* values are copied when recorded */
  vb = 2000;
  assert_true(weft_entity_is_pending(p));
  assert_false(weft_is_alive(f.w, p));
  assert_null(weft_get(f.w, p, f.a));
  assert_false(weft_has(f.w, p, f.a));
  assert_true(weft_cmdbuf_count(b) > 0);
  assert_int_equal(weft_world_count(f.w), 0);
  resolve_stale(f.w, p); /* recorded, not applied */

  apply1(f.w, b);
  assert_int_equal(weft_cmdbuf_count(b), 0);
  assert_int_equal(weft_world_count(f.w), 1);
  weft_entity_t e = resolve_ok(f.w, p);
  assert_int_not_equal(e, p);
  assert_int_equal(weft_entity_tag(e), weft_world_tag(f.w));
  assert_int_equal(val(f.w, e, f.a), 41);
  assert_int_equal(val(f.w, e, f.b), 42);
  assert_false(weft_has(f.w, e, f.c));
  /* A non-pending handle resolves to itself. */
  weft_entity_t same = WEFT_ENTITY_NULL;
  assert_int_equal(weft_cmd_resolve(f.w, e, &same), WEFT_OK);
  assert_int_equal(same, e);
  wt_check_slot_invariant(f.w);
  weft_world_destroy(f.w); /* destroys the buffer too */
}

static void test_command_resolve_rejects_stale_pending(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  weft_cmdbuf_t *b = buf_new(f.w);
  /* A spawn cancelled in its own transaction. */
  weft_entity_t cancelled = cmd_spawn2(b, f.a, 1, 0, 0);
  assert_int_equal(weft_cmd_despawn(b, cancelled), WEFT_OK);
  weft_entity_t kept = cmd_spawn2(b, f.a, 2, 0, 0);
  apply1(f.w, b);
  resolve_stale(f.w, cancelled);
  weft_entity_t e = resolve_ok(f.w, kept);
  assert_int_equal(val(f.w, e, f.a), 2);
  assert_int_equal(weft_world_count(f.w), 1);

  /* The next transaction of the buffer makes the older handles stale. */
  weft_entity_t next = cmd_spawn2(b, f.a, 3, 0, 0);
  resolve_stale(f.w, next);                   /* not applied yet */
  assert_int_equal(resolve_ok(f.w, kept), e); /* still the last apply's */
  apply1(f.w, b);
  resolve_stale(f.w, kept); /* an older transaction */
  weft_entity_t e2 = resolve_ok(f.w, next);
  assert_int_equal(val(f.w, e2, f.a), 3);
  assert_true(weft_is_alive(f.w, e)); /* the entity itself lives on */

  /* A resolved entity that died since resolves no more. */
  assert_int_equal(weft_despawn(f.w, e2), WEFT_OK);
  resolve_stale(f.w, next);
  weft_world_destroy(f.w);
}

static void test_command_clear_drops_commands(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  weft_entity_t live = spawn1(f.w, f.a, 5);
  weft_cmdbuf_t *b = buf_new(f.w);
  weft_cmdbuf_t *other = buf_new(f.w);
  weft_entity_t p = cmd_spawn2(b, f.a, 6, 0, 0);
  cmd_set(b, live, f.a, 7);
  assert_int_equal(weft_cmd_despawn(b, live), WEFT_OK);
  assert_int_not_equal(weft_cmdbuf_count(b), 0);
  uint64_t digest0 = weft_world_digest(f.w);

  weft_cmdbuf_clear(b);
  assert_int_equal(weft_cmdbuf_count(b), 0);
  /* An empty apply changes nothing. */
  apply1(f.w, b);
  assert_int_equal(weft_world_digest(f.w), digest0);
  resolve_stale(f.w, p);

  /* Cleared again before it applies: the handle of the dropped spawn must
   * not come to name the spawn recorded after the clear. */
  weft_entity_t q = cmd_spawn2(b, f.a, 6, 0, 0);
  weft_cmdbuf_clear(b);
  weft_entity_t p2 = cmd_spawn2(b, f.a, 8, 0, 0);
  assert_int_not_equal(p2, q);
  cmd_add(other, q, f.b, 1); /* names the dropped spawn: a stale no-op */
  weft_world_stats_t s0 = wt_stats(f.w);
  weft_cmdbuf_t *both[] = {b, other};
  assert_int_equal(weft_world_apply(f.w, both, 2), WEFT_OK);
  weft_world_stats_t s1 = wt_stats(f.w);
  assert_int_equal(s1.commands_stale, s0.commands_stale + 1);
  assert_int_equal(s1.spawns, s0.spawns + 1);
  weft_entity_t e2 = resolve_ok(f.w, p2);
  assert_int_equal(val(f.w, e2, f.a), 8);
  assert_false(weft_has(f.w, e2, f.b));
  resolve_stale(f.w, q);
  resolve_stale(f.w, p);
  assert_true(weft_is_alive(f.w, live));
  assert_int_equal(val(f.w, live, f.a), 5);
  assert_int_equal(weft_world_count(f.w), 2);
  wt_check_slot_invariant(f.w);
  weft_world_destroy(f.w);
}

static void test_command_pending_handle_across_buffers(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  weft_cmdbuf_t *ba = buf_new(f.w);
  weft_cmdbuf_t *bb = buf_new(f.w);
  weft_entity_t p = cmd_spawn2(ba, f.a, 10, 0, 0);
  cmd_add(bb, p, f.b, 20);
  cmd_set(bb, p, f.c, 30);
  weft_world_stats_t s0 = wt_stats(f.w);
  /* B is listed first and records with the same key: the spawn of A is
   * still the one B's commands build on. */
  weft_cmdbuf_t *list[] = {bb, ba};
  assert_int_equal(weft_world_apply(f.w, list, 2), WEFT_OK);
  weft_world_stats_t s1 = wt_stats(f.w);
  weft_entity_t e = resolve_ok(f.w, p);
  assert_int_equal(val(f.w, e, f.a), 10);
  assert_int_equal(val(f.w, e, f.b), 20);
  assert_int_equal(val(f.w, e, f.c), 30);
  assert_int_equal(s1.spawns, s0.spawns + 1);
  assert_int_equal(s1.moves, s0.moves); /* placed in its final archetype */
  assert_int_equal(weft_world_count(f.w), 1);

  /* A pending handle of a buffer that is not part of the apply names
   * nothing, not even what that buffer's previous spawn became. */
  weft_entity_t p2 = cmd_spawn2(ba, f.a, 11, 0, 0);
  cmd_add(bb, p2, f.b, 21);
  cmd_set(bb, e, f.a, 12);
  s0 = wt_stats(f.w);
  apply1(f.w, bb);
  s1 = wt_stats(f.w);
  assert_int_equal(s1.commands_stale, s0.commands_stale + 1);
  assert_int_equal(val(f.w, e, f.a), 12);
  assert_int_equal(val(f.w, e, f.b), 20);
  assert_int_equal(weft_world_count(f.w), 1);
  resolve_stale(f.w, p2);
  apply1(f.w, ba); /* the spawn itself still applies with its buffer */
  weft_entity_t e2 = resolve_ok(f.w, p2);
  assert_int_equal(val(f.w, e2, f.a), 11);
  assert_false(weft_has(f.w, e2, f.b));
  weft_cmdbuf_destroy(ba);
  weft_cmdbuf_destroy(bb);
  weft_world_destroy(f.w);
}

/* --- deterministic merge -------------------------------------------------- */

enum { M_SPAWN, M_SET, M_ADD, M_REMOVE, M_DESPAWN };

#define M_GROUPS 6
#define M_BASE 6
#define M_PENDING 4

/* One command of the logical sequence. Targets >= 0 name base entities,
 * negative ones pending spawn -(target + 1). A spawn creates pending spawn
 * `target` (>= 0) with component `comp` and, when comp2 is set, comp2. */
typedef struct mcmd_t {
  int group;
  int kind;
  int target;
  int comp;  /* 0: a, 1: b, 2: c */
  int comp2; /* spawns: -1 or a second component */
  uint64_t value;
} mcmd_t;

static const mcmd_t merge_cmds[] = {
    {0, M_SPAWN, 0, 0, -1, 100}, {0, M_SET, 0, 0, -1, 11},
    {1, M_SET, 0, 0, -1, 12},    {1, M_ADD, 1, 1, -1, 5},
    {1, M_SPAWN, 1, 0, 1, 101},  {2, M_DESPAWN, 2, 0, -1, 0},
    {2, M_ADD, -1, 2, -1, 300},  {2, M_REMOVE, 3, 0, -1, 0},
    {3, M_SET, -2, 0, -1, 102},  {3, M_SPAWN, 2, 2, -1, 7},
    {3, M_DESPAWN, 4, 0, -1, 0}, {4, M_SET, 0, 0, -1, 13},
    {4, M_ADD, 2, 2, -1, 9},     {4, M_SET, -1, 0, -1, 111},
    {5, M_SPAWN, 3, 0, 1, 400},  {5, M_DESPAWN, -3, 0, -1, 0},
    {5, M_REMOVE, 5, 1, -1, 0},  {5, M_SET, 5, 1, -1, 55},
};

typedef struct split_t {
  uint32_t nbufs;
  uint32_t buf_of[M_GROUPS]; /* group -> buffer */
  uint32_t order[3];         /* buffers as listed to weft_world_apply */
  uint64_t key[M_GROUPS];    /* group -> key */
} split_t;

typedef struct merge_out_t {
  uint64_t digest;
  int rc[M_PENDING];
  weft_entity_t resolved[M_PENDING];
  uint64_t base0_a;
  uint32_t count;
} merge_out_t;

static merge_out_t run_merge(const split_t *sp) {
  fx_t f = fx_new(0, 77);
  const weft_component_t comp[3] = {f.a, f.b, f.c};
  weft_entity_t base[M_BASE];
  for (uint32_t i = 0; i < M_BASE; i++) {
    base[i] = i < 3 ? spawn1(f.w, f.a, i) : spawn3(f.w, f.a, i, f.b, i, 0, 0);
  }
  weft_cmdbuf_t *bufs[3];
  for (uint32_t i = 0; i < sp->nbufs; i++) {
    bufs[i] = buf_new(f.w);
  }
  weft_entity_t pend[M_PENDING];
  memset(pend, 0, sizeof pend);
  /* Record group by group, in key order, each into its buffer. */
  int by_key[M_GROUPS];
  for (int g = 0; g < M_GROUPS; g++) {
    int k = g;
    for (; k > 0 && sp->key[by_key[k - 1]] > sp->key[g]; k--) {
      by_key[k] = by_key[k - 1];
    }
    by_key[k] = g;
  }
  for (int g = 0; g < M_GROUPS; g++) {
    int gg = by_key[g];
    weft_cmdbuf_t *b = bufs[sp->buf_of[gg]];
    weft_cmd_key(b, sp->key[gg]);
    for (size_t i = 0; i < sizeof merge_cmds / sizeof merge_cmds[0]; i++) {
      const mcmd_t *m = &merge_cmds[i];
      if (m->group != gg) {
        continue;
      }
      weft_entity_t e = m->target >= 0 ? base[m->target] : pend[-m->target - 1];
      switch (m->kind) {
      case M_SPAWN:
        pend[m->target] =
            cmd_spawn2(b, comp[m->comp], m->value,
                       m->comp2 >= 0 ? comp[m->comp2] : 0, m->value + 1000);
        break;
      case M_SET:
        cmd_set(b, e, comp[m->comp], m->value);
        break;
      case M_ADD:
        cmd_add(b, e, comp[m->comp], m->value);
        break;
      case M_REMOVE:
        assert_int_equal(weft_cmd_remove(b, e, comp[m->comp]), WEFT_OK);
        break;
      default:
        assert_int_equal(weft_cmd_despawn(b, e), WEFT_OK);
        break;
      }
    }
  }
  weft_cmdbuf_t *list[3];
  for (uint32_t i = 0; i < sp->nbufs; i++) {
    list[i] = bufs[sp->order[i]];
  }
  assert_int_equal(weft_world_apply(f.w, list, sp->nbufs), WEFT_OK);
  merge_out_t out;
  memset(&out, 0, sizeof out);
  out.digest = weft_world_digest(f.w);
  for (uint32_t i = 0; i < M_PENDING; i++) {
    out.rc[i] = weft_cmd_resolve(f.w, pend[i], &out.resolved[i]);
  }
  out.base0_a = val(f.w, base[0], f.a);
  out.count = weft_world_count(f.w);
  /* The expected outcome of the sequence (by key order). */
  if (sp->key[4] > sp->key[1]) {
    assert_int_equal(val(f.w, base[0], f.a), 13);
    assert_int_equal(val(f.w, base[1], f.b), 5);
    assert_false(weft_is_alive(f.w, base[2]));
    assert_false(weft_has(f.w, base[3], f.a));
    assert_int_equal(val(f.w, base[3], f.b), 3);
    assert_false(weft_is_alive(f.w, base[4]));
    assert_int_equal(val(f.w, base[5], f.b), 55);
    assert_int_equal(out.rc[0], WEFT_OK);
    assert_int_equal(val(f.w, out.resolved[0], f.a), 111);
    assert_int_equal(val(f.w, out.resolved[0], f.c), 300);
    assert_int_equal(out.rc[1], WEFT_OK);
    assert_int_equal(val(f.w, out.resolved[1], f.a), 102);
    assert_int_equal(val(f.w, out.resolved[1], f.b), 1101);
    assert_int_equal(out.rc[2], WEFT_ESTALE);
    assert_int_equal(out.rc[3], WEFT_OK);
    assert_int_equal(val(f.w, out.resolved[3], f.b), 1400);
    assert_int_equal(out.count, M_BASE - 2 + 3);
  }
  wt_check_slot_invariant(f.w);
  weft_world_destroy(f.w);
  return out;
}

static void test_command_merge_is_deterministic(void **state) {
  (void)state;
  static const split_t splits[] = {
      {1, {0, 0, 0, 0, 0, 0}, {0}, {10, 20, 30, 40, 50, 60}},
      {2, {0, 1, 0, 1, 0, 1}, {0, 1}, {10, 20, 30, 40, 50, 60}},
      {2, {0, 1, 0, 1, 0, 1}, {1, 0}, {10, 20, 30, 40, 50, 60}},
      {2, {1, 1, 1, 0, 0, 0}, {0, 1}, {10, 20, 30, 40, 50, 60}},
      {3, {0, 1, 2, 0, 1, 2}, {2, 0, 1}, {10, 20, 30, 40, 50, 60}},
      {3, {2, 2, 1, 1, 0, 0}, {1, 2, 0}, {10, 20, 30, 40, 50, 60}},
      {3, {1, 0, 0, 2, 1, 2}, {2, 1, 0}, {10, 20, 30, 40, 50, 60}},
  };
  const size_t n = sizeof splits / sizeof splits[0];
  merge_out_t ref = run_merge(&splits[0]);
  for (size_t i = 1; i < n; i++) {
    merge_out_t o = run_merge(&splits[i]);
    assert_int_equal(o.digest, ref.digest);
    for (uint32_t k = 0; k < M_PENDING; k++) {
      assert_int_equal(o.rc[k], ref.rc[k]);
      assert_int_equal(o.resolved[k], ref.resolved[k]);
    }
  }
  /* The digest tells orders apart: moving group 4 (set base0.a = 13) before
   * group 1 (set base0.a = 12) changes the result. */
  split_t moved = splits[4];
  moved.key[4] = 15;
  merge_out_t o = run_merge(&moved);
  assert_int_equal(o.base0_a, 12);
  assert_int_not_equal(o.digest, ref.digest);
}

static void test_command_unsorted_buffer_is_sorted_stably(void **state) {
  (void)state;
  /* The same commands, recorded with decreasing keys in one world and in
   * (key, record) order in the other. */
  weft_entity_t res[2][3];
  uint64_t digest[2];
  for (int sorted = 0; sorted < 2; sorted++) {
    fx_t f = fx_new(0, 91);
    weft_entity_t e = spawn1(f.w, f.a, 0);
    weft_entity_t free_slot = wt_spawn(f.w);
    assert_int_equal(weft_despawn(f.w, free_slot), WEFT_OK);
    weft_cmdbuf_t *b = buf_new(f.w);
    weft_entity_t p[3];
    if (!sorted) {
      weft_cmd_key(b, 5);
      p[0] = cmd_spawn2(b, f.a, 500, 0, 0);
      cmd_set(b, e, f.a, 50);
      weft_cmd_key(b, 3);
      cmd_set(b, e, f.b, 31);
      p[1] = cmd_spawn2(b, f.a, 300, 0, 0);
      weft_cmd_key(b, 1);
      cmd_set(b, e, f.a, 10);
      p[2] = cmd_spawn2(b, f.a, 100, 0, 0);
      weft_cmd_key(b, 3);
      cmd_set(b, e, f.b, 32); /* same key as 31: recorded later, wins */
    } else {
      weft_cmd_key(b, 1);
      cmd_set(b, e, f.a, 10);
      p[2] = cmd_spawn2(b, f.a, 100, 0, 0);
      weft_cmd_key(b, 3);
      cmd_set(b, e, f.b, 31);
      p[1] = cmd_spawn2(b, f.a, 300, 0, 0);
      cmd_set(b, e, f.b, 32);
      weft_cmd_key(b, 5);
      p[0] = cmd_spawn2(b, f.a, 500, 0, 0);
      cmd_set(b, e, f.a, 50);
    }
    apply1(f.w, b);
    assert_int_equal(val(f.w, e, f.a), 50);
    assert_int_equal(val(f.w, e, f.b), 32);
    for (int i = 0; i < 3; i++) {
      res[sorted][i] = resolve_ok(f.w, p[i]);
    }
    assert_int_equal(val(f.w, res[sorted][0], f.a), 500);
    assert_int_equal(val(f.w, res[sorted][1], f.a), 300);
    assert_int_equal(val(f.w, res[sorted][2], f.a), 100);
    /* The lowest key spawns first and takes the freed slot. */
    assert_int_equal(weft_entity_index(res[sorted][2]),
                     weft_entity_index(free_slot));
    digest[sorted] = weft_world_digest(f.w);
    weft_world_destroy(f.w);
  }
  assert_int_equal(digest[0], digest[1]);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(res[0][i], res[1][i]);
  }
}

/* --- folding per entity --------------------------------------------------- */

static void test_command_coalesces_into_one_move(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  weft_entity_t e = spawn1(f.w, f.c, 9);
  weft_entity_t other = spawn1(f.w, f.c, 10);
  weft_cmdbuf_t *b = buf_new(f.w);
  cmd_add(b, e, f.a, 1);
  cmd_add(b, e, f.b, 2);
  assert_int_equal(weft_cmd_remove(b, e, f.c), WEFT_OK);
  weft_world_stats_t s0 = wt_stats(f.w);
  apply1(f.w, b);
  weft_world_stats_t s1 = wt_stats(f.w);
  assert_int_equal(s1.moves - s0.moves, 1);
  assert_int_equal(val(f.w, e, f.a), 1);
  assert_int_equal(val(f.w, e, f.b), 2);
  assert_false(weft_has(f.w, e, f.c));
  assert_int_equal(val(f.w, other, f.c), 10);
  assert_false(weft_has(f.w, other, f.a));
  weft_world_destroy(f.w);
}

static void test_command_add_keeps_existing_value(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  weft_entity_t e = spawn1(f.w, f.a, 1);
  weft_cmdbuf_t *b = buf_new(f.w);
  cmd_add(b, e, f.a, 2); /* present already: no-op */
  cmd_add(b, e, f.b, 3); /* added */
  cmd_add(b, e, f.b, 4); /* present by then: no-op */
  weft_entity_t p = cmd_spawn2(b, f.a, 5, 0, 0);
  cmd_add(b, p, f.a, 6);
  apply1(f.w, b);
  assert_int_equal(val(f.w, e, f.a), 1);
  assert_int_equal(val(f.w, e, f.b), 3);
  assert_int_equal(val(f.w, resolve_ok(f.w, p), f.a), 5);
  /* The staged form of weft_add inside a scope behaves the same. */
  assert_int_equal(weft_world_defer_begin(f.w), 1);
  assert_int_equal(weft_add(f.w, e, f.a, &(uint64_t){7}), WEFT_OK);
  assert_int_equal(weft_add(f.w, e, f.c, &(uint64_t){8}), WEFT_OK);
  assert_int_equal(weft_add(f.w, e, f.c, &(uint64_t){9}), WEFT_OK);
  assert_int_equal(weft_world_defer_end(f.w), WEFT_OK);
  assert_int_equal(val(f.w, e, f.a), 1);
  assert_int_equal(val(f.w, e, f.c), 8);
  weft_world_destroy(f.w);
}

static void test_command_last_write_wins(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  weft_entity_t e = spawn1(f.w, f.a, 0);
  weft_cmdbuf_t *x = buf_new(f.w);
  weft_cmdbuf_t *y = buf_new(f.w);
  /* One buffer: set v1, set v2; also on a pending spawn. */
  cmd_set(x, e, f.a, 1);
  cmd_set(x, e, f.a, 2);
  weft_entity_t p = cmd_spawn2(x, f.a, 5, 0, 0);
  cmd_set(x, p, f.a, 6);
  cmd_set(x, p, f.a, 7);
  apply1(f.w, x);
  assert_int_equal(val(f.w, e, f.a), 2);
  weft_entity_t pe = resolve_ok(f.w, p);
  assert_int_equal(val(f.w, pe, f.a), 7);

  /* Across buffers the higher key wins, whatever the buffer order. */
  for (int round = 0; round < 4; round++) {
    uint64_t kx = round & 1 ? 1 : 2;
    uint64_t ky = round & 1 ? 2 : 1;
    weft_cmd_key(x, kx);
    cmd_set(x, e, f.b, 100 + (uint64_t)round);
    weft_cmd_key(y, ky);
    cmd_set(y, e, f.b, 200 + (uint64_t)round);
    weft_cmdbuf_t *list[2] = {x, y};
    if (round >= 2) {
      list[0] = y;
      list[1] = x;
    }
    assert_int_equal(weft_world_apply(f.w, list, 2), WEFT_OK);
    uint64_t want = kx > ky ? 100 + (uint64_t)round : 200 + (uint64_t)round;
    assert_int_equal(val(f.w, e, f.b), want);
  }
  weft_world_destroy(f.w);
}

static void test_command_remove_then_add_keeps_row(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  weft_entity_t es[4];
  for (int i = 0; i < 4; i++) {
    es[i] = spawn3(f.w, f.a, (uint64_t)i, f.b, 10 + (uint64_t)i, 0, 0);
  }
  weft_query_t *qa = query1(f.w, f.a);
  ev_count_t ev;
  memset(&ev, 0, sizeof ev);
  weft_observer_desc_t od;
  memset(&od, 0, sizeof od);
  od.events =
      WEFT_EVENT_ENTER | WEFT_EVENT_LEAVE | WEFT_EVENT_ADD | WEFT_EVENT_REMOVE;
  od.query = qa;
  od.fn = count_events;
  od.user = &ev;
  weft_observer_t *obs = NULL;
  assert_int_equal(weft_observer_create(f.w, &od, &obs), WEFT_OK);

  const void *pa = weft_get(f.w, es[1], f.a);
  const void *pb = weft_get(f.w, es[1], f.b);
  assert_non_null(pa);
  weft_cmdbuf_t *b = buf_new(f.w);
  assert_int_equal(weft_cmd_remove(b, es[1], f.a), WEFT_OK);
  cmd_add(b, es[1], f.a, 77);
  weft_world_stats_t s0 = wt_stats(f.w);
  apply1(f.w, b);
  weft_world_stats_t s1 = wt_stats(f.w);
  assert_int_equal(s1.moves, s0.moves);
  assert_ptr_equal(weft_get(f.w, es[1], f.a), pa);
  assert_ptr_equal(weft_get(f.w, es[1], f.b), pb);
  assert_int_equal(val(f.w, es[1], f.a), 77);
  assert_int_equal(val(f.w, es[1], f.b), 11);
  assert_int_equal(ev_total(&ev), 0); /* net signature unchanged */
  for (int i = 0; i < 4; i++) {
    if (i != 1) {
      assert_int_equal(val(f.w, es[i], f.a), (uint64_t)i);
    }
  }
  /* The observer is live: a real removal is seen. */
  assert_int_equal(weft_cmd_remove(b, es[2], f.a), WEFT_OK);
  apply1(f.w, b);
  assert_true(ev_total(&ev) > 0);
  assert_int_equal(wt_stats(f.w).moves, s1.moves + 1);
  weft_observer_destroy(obs);
  weft_query_destroy(qa);
  weft_world_destroy(f.w);
}

static void test_command_despawn_cancels_staged_work(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  weft_entity_t e = spawn1(f.w, f.a, 1);
  weft_entity_t keep = spawn1(f.w, f.a, 2);
  ev_count_t ev;
  memset(&ev, 0, sizeof ev);
  weft_observer_desc_t od;
  memset(&od, 0, sizeof od);
  od.events = WEFT_EVENT_SPAWN | WEFT_EVENT_DESPAWN;
  od.fn = count_events;
  od.user = &ev;
  weft_observer_t *obs = NULL;
  assert_int_equal(weft_observer_create(f.w, &od, &obs), WEFT_OK);

  weft_cmdbuf_t *b = buf_new(f.w);
  weft_entity_t p = cmd_spawn2(b, f.a, 3, 0, 0);
  cmd_add(b, p, f.b, 4);
  assert_int_equal(weft_cmd_despawn(b, p), WEFT_OK);
  cmd_add(b, e, f.b, 5);
  cmd_set(b, e, f.a, 6);
  assert_int_equal(weft_cmd_remove(b, e, f.a), WEFT_OK);
  assert_int_equal(weft_cmd_despawn(b, e), WEFT_OK);
  weft_world_stats_t s0 = wt_stats(f.w);
  apply1(f.w, b);
  weft_world_stats_t s1 = wt_stats(f.w);
  resolve_stale(f.w, p);
  assert_false(weft_is_alive(f.w, e));
  assert_int_equal(val(f.w, keep, f.a), 2);
  assert_int_equal(weft_world_count(f.w), 1);
  assert_int_equal(s1.moves, s0.moves);
  assert_int_equal(s1.spawns, s0.spawns);
  assert_int_equal(s1.despawns, s0.despawns + 1);
  assert_int_equal(s1.staged_spawns, 0);
  /* The cancelled spawn still reports OnDespawn (without rows). */
  assert_int_equal(ev.by_kind[0], 0);
  assert_int_equal(ev.by_kind[1], 2);
  assert_true(ev.rowless >= 1);
  wt_check_slot_invariant(f.w);
  weft_observer_destroy(obs);
  weft_world_destroy(f.w);
}

static void test_command_despawn_then_set_does_nothing(void **state) {
  (void)state;
  uint64_t digest[2];
  for (int extra = 0; extra < 2; extra++) {
    fx_t f = fx_new(0, 33);
    weft_entity_t e = spawn1(f.w, f.a, 1);
    weft_entity_t o = spawn1(f.w, f.a, 2);
    weft_cmdbuf_t *b = buf_new(f.w);
    assert_int_equal(weft_cmd_despawn(b, e), WEFT_OK);
    if (extra) {
      cmd_set(b, e, f.a, 10);
      cmd_add(b, e, f.b, 11);
      cmd_set(b, e, f.c, 12);
      assert_int_equal(weft_cmd_remove(b, e, f.a), WEFT_OK);
      assert_int_equal(weft_cmd_despawn(b, e), WEFT_OK);
    }
    weft_world_stats_t s0 = wt_stats(f.w);
    apply1(f.w, b);
    weft_world_stats_t s1 = wt_stats(f.w);
    assert_false(weft_is_alive(f.w, e));
    assert_int_equal(val(f.w, o, f.a), 2);
    assert_int_equal(s1.moves, s0.moves);
    assert_int_equal(s1.despawns, s0.despawns + 1);
    assert_int_equal(s1.archetypes, s0.archetypes);
    digest[extra] = weft_world_digest(f.w);
    weft_world_destroy(f.w);
  }
  assert_int_equal(digest[0], digest[1]);
}

static void test_command_stale_handle_is_counted_noop(void **state) {
  (void)state;
  uint64_t digest[2];
  uint64_t stale_delta[2];
  for (int with_stale = 0; with_stale < 2; with_stale++) {
    fx_t f = fx_new(0, 44);
    weft_entity_t live = spawn1(f.w, f.a, 1);
    weft_entity_t dead = spawn1(f.w, f.a, 2);
    assert_int_equal(weft_despawn(f.w, dead), WEFT_OK);
    weft_entity_t forged =
        wt_handle(weft_entity_index(live), weft_entity_generation(live) + 5,
                  weft_entity_tag(live));
    weft_cmdbuf_t *b = buf_new(f.w);
    cmd_set(b, live, f.a, 5);
    if (with_stale) {
      cmd_set(b, dead, f.a, 9);
      cmd_add(b, forged, f.b, 9);
      assert_int_equal(weft_cmd_despawn(b, dead), WEFT_OK);
    }
    cmd_add(b, live, f.c, 6);
    weft_world_stats_t s0 = wt_stats(f.w);
    apply1(f.w, b);
    weft_world_stats_t s1 = wt_stats(f.w);
    stale_delta[with_stale] = s1.commands_stale - s0.commands_stale;
    assert_int_equal(val(f.w, live, f.a), 5);
    assert_int_equal(val(f.w, live, f.c), 6);
    assert_false(weft_has(f.w, live, f.b));
    digest[with_stale] = weft_world_digest(f.w);
    weft_world_destroy(f.w);
  }
  assert_int_equal(stale_delta[0], 0);
  assert_int_equal(stale_delta[1], 3);
  assert_int_equal(digest[0], digest[1]);
}

static void test_command_recycled_slot_is_not_revived(void **state) {
  (void)state;
  fx_t f = fx_new(4, 0);
  weft_entity_t es[4];
  for (int i = 0; i < 4; i++) {
    es[i] = spawn1(f.w, f.a, (uint64_t)i);
  }
  weft_cmdbuf_t *b = buf_new(f.w);
  cmd_set(b, es[0], f.a, 99);
  cmd_add(b, es[0], f.b, 98);
  assert_int_equal(weft_cmd_remove(b, es[0], f.a), WEFT_OK);
  /* Between recording and applying, the slot gets a new occupant. */
  assert_int_equal(weft_despawn(f.w, es[0]), WEFT_OK);
  weft_entity_t n = spawn1(f.w, f.a, 50); /* capacity 4: reuses the slot */
  assert_int_equal(weft_entity_index(n), weft_entity_index(es[0]));
  assert_int_not_equal(n, es[0]);
  weft_world_stats_t s0 = wt_stats(f.w);
  apply1(f.w, b);
  weft_world_stats_t s1 = wt_stats(f.w);
  assert_int_equal(s1.commands_stale - s0.commands_stale, 3);
  assert_int_equal(val(f.w, n, f.a), 50);
  assert_false(weft_has(f.w, n, f.b));
  assert_int_equal(s1.moves, s0.moves);

  /* The same inside one transaction: the old handle next to the new one. */
  cmd_set(b, n, f.a, 51);
  cmd_set(b, es[0], f.a, 52);
  assert_int_equal(weft_cmd_despawn(b, es[0]), WEFT_OK);
  apply1(f.w, b);
  assert_true(weft_is_alive(f.w, n));
  assert_int_equal(val(f.w, n, f.a), 51);
  /* And through a deferred scope. */
  assert_int_equal(weft_world_defer_begin(f.w), 1);
  assert_int_equal(weft_set(f.w, es[0], f.a, &(uint64_t){53}), WEFT_ESTALE);
  assert_int_equal(weft_despawn(f.w, es[0]), WEFT_ESTALE);
  assert_int_equal(weft_world_defer_end(f.w), WEFT_OK);
  assert_true(weft_is_alive(f.w, n));
  assert_int_equal(val(f.w, n, f.a), 51);
  wt_check_slot_invariant(f.w);
  weft_world_destroy(f.w);
}

/* Rows per chunk of archetype {a} (from a throwaway world). */
static uint32_t rows_per_chunk_a(void) {
  fx_t f = fx_new(0, 0);
  const weft_component_t comps[] = {f.a, 0};
  assert_int_equal(weft_spawn_batch(f.w, 4096, comps, NULL, NULL, NULL),
                   WEFT_OK);
  weft_query_t *q = query1(f.w, f.a);
  weft_iter_t it;
  weft_query_iter(q, &it);
  assert_true(weft_iter_next(&it));
  uint32_t rows = it.count;
  weft_iter_close(&it);
  assert_true(rows < 4096);
  weft_query_destroy(q);
  weft_world_destroy(f.w);
  return rows;
}

static void test_command_despawns_precede_spawns(void **state) {
  (void)state;
  uint32_t rows = rows_per_chunk_a();
  /* Twice: once in one apply (spawn recorded before despawn), once as
   * spawn then despawn in two applies (the control, which must grow). */
  uint64_t growth[2];
  for (int split = 0; split < 2; split++) {
    fx_t f = fx_new(0, 0);
    weft_entity_t first = WEFT_ENTITY_NULL;
    for (uint32_t i = 0; i < rows; i++) {
      weft_entity_t e = spawn1(f.w, f.a, i);
      if (i == 0) {
        first = e;
      }
    }
    weft_world_stats_t s0 = wt_stats(f.w);
    weft_cmdbuf_t *b = buf_new(f.w);
    weft_entity_t p = cmd_spawn2(b, f.a, 999, 0, 0);
    if (split) {
      apply1(f.w, b);
    }
    weft_cmd_key(b, 1);
    assert_int_equal(weft_cmd_despawn(b, first), WEFT_OK);
    apply1(f.w, b);
    weft_world_stats_t s1 = wt_stats(f.w);
    assert_false(weft_is_alive(f.w, first));
    assert_int_equal(weft_world_count(f.w), rows);
    if (!split) {
      assert_int_equal(val(f.w, resolve_ok(f.w, p), f.a), 999);
      assert_int_equal(s1.chunks_live, s0.chunks_live);
      assert_int_equal(s1.chunks_spare, s0.chunks_spare);
    }
    growth[split] = s1.chunk_bytes - s0.chunk_bytes;
    weft_world_destroy(f.w);
  }
  assert_int_equal(growth[0], 0);
  assert_true(growth[1] > 0);
}

/* --- query-wide commands ---------------------------------------------------
 */

typedef struct qfix_t {
  fx_t f;
  weft_query_t *qa;
  weft_entity_t m[4]; /* members of qa: {a, b} */
  weft_entity_t out;  /* not a member: {c} */
} qfix_t;

static qfix_t qfix_new(void) {
  qfix_t q;
  memset(&q, 0, sizeof q);
  q.f = fx_new(0, 0);
  for (int i = 0; i < 4; i++) {
    q.m[i] = spawn3(q.f.w, q.f.a, (uint64_t)i, q.f.b, 10 + (uint64_t)i, 0, 0);
  }
  q.out = spawn1(q.f.w, q.f.c, 5);
  q.qa = query1(q.f.w, q.f.a);
  assert_int_equal(weft_query_count(q.qa), 4);
  return q;
}

static void qfix_free(qfix_t *q) {
  weft_query_destroy(q->qa);
  weft_world_destroy(q->f.w);
}

static void test_command_set_query_captures_members(void **state) {
  (void)state;
  qfix_t q = qfix_new();
  fx_t f = q.f;
  weft_cmdbuf_t *b = buf_new(f.w);
  uint64_t v = 500;
  assert_int_equal(weft_cmd_set_query(b, q.qa, f.c, &v), WEFT_OK);
  v = 1; /* copied at record time */
  /* Joins after recording: a direct spawn and a later pending spawn. */
  weft_entity_t late = spawn1(f.w, f.a, 7);
  weft_entity_t p = cmd_spawn2(b, f.a, 8, 0, 0);
  apply1(f.w, b);
  for (int i = 0; i < 4; i++) {
    assert_int_equal(val(f.w, q.m[i], f.c), 500);
    assert_int_equal(val(f.w, q.m[i], f.a), (uint64_t)i);
  }
  assert_false(weft_has(f.w, late, f.c));
  assert_false(weft_has(f.w, resolve_ok(f.w, p), f.c));
  assert_int_equal(val(f.w, q.out, f.c), 5);
  qfix_free(&q);
}

static void test_command_remove_query_captures_members(void **state) {
  (void)state;
  qfix_t q = qfix_new();
  fx_t f = q.f;
  weft_cmdbuf_t *b = buf_new(f.w);
  assert_int_equal(weft_cmd_remove_query(b, q.qa, f.b), WEFT_OK);
  weft_entity_t late = spawn3(f.w, f.a, 7, f.b, 70, 0, 0);
  apply1(f.w, b);
  for (int i = 0; i < 4; i++) {
    assert_false(weft_has(f.w, q.m[i], f.b));
    assert_int_equal(val(f.w, q.m[i], f.a), (uint64_t)i);
  }
  assert_int_equal(val(f.w, late, f.b), 70);
  qfix_free(&q);
}

static void test_command_despawn_query_captures_members(void **state) {
  (void)state;
  qfix_t q = qfix_new();
  fx_t f = q.f;
  weft_cmdbuf_t *b = buf_new(f.w);
  assert_int_equal(weft_cmd_despawn_query(b, q.qa), WEFT_OK);
  weft_entity_t late = spawn1(f.w, f.a, 7);
  weft_entity_t p = cmd_spawn2(b, f.a, 8, 0, 0);
  apply1(f.w, b);
  for (int i = 0; i < 4; i++) {
    assert_false(weft_is_alive(f.w, q.m[i]));
  }
  assert_true(weft_is_alive(f.w, late));
  assert_true(weft_is_alive(f.w, q.out));
  resolve_ok(f.w, p);
  assert_int_equal(weft_query_count(q.qa), 2);
  assert_int_equal(weft_world_count(f.w), 3);
  qfix_free(&q);
}

static void
test_command_query_commands_run_after_entity_commands(void **state) {
  (void)state;
  qfix_t q = qfix_new();
  fx_t f = q.f;
  weft_cmdbuf_t *b = buf_new(f.w);
  uint64_t v1 = 50, v2 = 60;
  /* Recorded first, with the lowest key, yet applied after the
   * per-entity commands of the transaction. */
  assert_int_equal(weft_cmd_set_query(b, q.qa, f.a, &v1), WEFT_OK);
  assert_int_equal(weft_cmd_remove_query(b, q.qa, f.c), WEFT_OK);
  assert_int_equal(weft_cmd_set_query(b, q.qa, f.a, &v2), WEFT_OK);
  weft_cmd_key(b, 1);
  cmd_set(b, q.m[0], f.a, 7);
  cmd_add(b, q.m[1], f.c, 8);
  assert_int_equal(weft_cmd_despawn(b, q.m[2]), WEFT_OK);
  weft_world_stats_t s0 = wt_stats(f.w);
  apply1(f.w, b);
  weft_world_stats_t s1 = wt_stats(f.w);
  assert_int_equal(val(f.w, q.m[0], f.a), 60); /* query sets in call order */
  assert_int_equal(val(f.w, q.m[1], f.a), 60);
  assert_false(weft_has(f.w, q.m[1], f.c));
  assert_false(weft_is_alive(f.w, q.m[2])); /* skipped: no longer alive */
  assert_int_equal(val(f.w, q.m[3], f.a), 60);
  assert_int_equal(val(f.w, q.m[3], f.b), 13);
  assert_int_equal(val(f.w, q.out, f.c), 5);
  assert_int_equal(s1.despawns, s0.despawns + 1);
  qfix_free(&q);
}

/* --- deferred scopes -------------------------------------------------------
 */

static void test_command_defer_scopes_nest(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  assert_int_equal(weft_world_defer_depth(f.w), 0);
  assert_int_equal(weft_world_defer_begin(f.w), 1);
  assert_int_equal(weft_world_defer_begin(f.w), 2);
  assert_int_equal(weft_world_defer_depth(f.w), 2);
  weft_entity_t e = WEFT_ENTITY_NULL;
  uint64_t v = 3;
  const weft_component_t comps[] = {f.a, 0};
  const void *values[] = {&v};
  assert_int_equal(weft_spawn_with(f.w, comps, values, &e), WEFT_OK);
  assert_false(weft_entity_is_pending(e));
  assert_int_equal(weft_entity_tag(e), weft_world_tag(f.w));
  assert_false(weft_is_alive(f.w, e));
  assert_null(weft_get(f.w, e, f.a));
  assert_int_equal(weft_world_count(f.w), 0);
  /* A staged spawn holds its slot: remaining excludes it. */
  weft_world_stats_t s = wt_stats(f.w);
  assert_int_equal(s.staged_spawns, 1);
  assert_int_equal(s.alive, 0);
  assert_int_equal((uint64_t)s.alive + s.retired + s.remaining +
                       s.staged_spawns,
                   s.capacity);
  /* A later staged call may use the handle. */
  assert_int_equal(weft_add(f.w, e, f.b, &(uint64_t){4}), WEFT_OK);
  assert_int_equal(weft_world_defer_end(f.w), WEFT_OK);
  assert_int_equal(weft_world_defer_depth(f.w), 1);
  assert_false(weft_is_alive(f.w, e)); /* only the outermost end applies */
  assert_int_equal(weft_world_defer_end(f.w), WEFT_OK);
  assert_int_equal(weft_world_defer_depth(f.w), 0);
  assert_true(weft_is_alive(f.w, e));
  assert_int_equal(val(f.w, e, f.a), 3);
  assert_int_equal(val(f.w, e, f.b), 4);
  assert_int_equal(wt_stats(f.w).staged_spawns, 0);
  /* Extra ends clamp at zero. */
  assert_int_equal(weft_world_defer_end(f.w), WEFT_OK);
  assert_int_equal(weft_world_defer_depth(f.w), 0);
  assert_int_equal(weft_world_defer_begin(f.w), 1);
  assert_int_equal(weft_world_defer_end(f.w), WEFT_OK);
  assert_int_equal(weft_world_defer_depth(f.w), 0);
  wt_check_slot_invariant(f.w);
  weft_world_destroy(f.w);
}

static void test_command_defer_hides_structural_changes(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  weft_entity_t e = spawn1(f.w, f.a, 1);
  weft_entity_t d = spawn1(f.w, f.a, 2);
  weft_query_t *qa = query1(f.w, f.a);
  weft_query_t *qb = query1(f.w, f.b);
  weft_world_stats_t s0 = wt_stats(f.w);
  assert_int_equal(weft_world_defer_begin(f.w), 1);
  assert_int_equal(weft_add(f.w, e, f.b, &(uint64_t){5}), WEFT_OK);
  assert_int_equal(weft_remove(f.w, e, f.a), WEFT_OK);
  assert_int_equal(weft_despawn(f.w, d), WEFT_OK);
  assert_false(weft_has(f.w, e, f.b));
  assert_true(weft_has(f.w, e, f.a));
  assert_int_equal(val(f.w, e, f.a), 1);
  assert_true(weft_is_alive(f.w, d));
  assert_int_equal(val(f.w, d, f.a), 2);
  assert_int_equal(weft_query_count(qa), 2);
  assert_int_equal(weft_query_count(qb), 0);
  assert_int_equal(weft_world_count(f.w), 2);
  assert_int_equal(wt_stats(f.w).moves, s0.moves);
  assert_int_equal(weft_world_defer_end(f.w), WEFT_OK);
  assert_false(weft_has(f.w, e, f.a));
  assert_int_equal(val(f.w, e, f.b), 5);
  assert_false(weft_is_alive(f.w, d));
  assert_int_equal(weft_query_count(qa), 0);
  assert_int_equal(weft_query_count(qb), 1);
  assert_int_equal(wt_stats(f.w).moves, s0.moves + 1);
  weft_query_destroy(qa);
  weft_query_destroy(qb);
  weft_world_destroy(f.w);
}

static void test_command_defer_set_writes_through(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  weft_entity_t e = spawn1(f.w, f.a, 1);
  weft_entity_t g = spawn1(f.w, f.a, 1);
  weft_entity_t h = spawn1(f.w, f.a, 1);
  assert_int_equal(weft_world_defer_begin(f.w), 1);
  /* Committed, has the component, nothing staged: immediate. */
  assert_int_equal(weft_set(f.w, e, f.a, &(uint64_t){2}), WEFT_OK);
  assert_int_equal(val(f.w, e, f.a), 2);
  /* After a staged structural change, values wait for the drain. */
  assert_int_equal(weft_add(f.w, g, f.b, &(uint64_t){7}), WEFT_OK);
  assert_int_equal(weft_set(f.w, g, f.a, &(uint64_t){3}), WEFT_OK);
  assert_int_equal(val(f.w, g, f.a), 1);
  /* A set that adds the component is structural: it waits too. */
  assert_int_equal(weft_set(f.w, h, f.c, &(uint64_t){4}), WEFT_OK);
  assert_false(weft_has(f.w, h, f.c));
  assert_int_equal(weft_world_defer_end(f.w), WEFT_OK);
  assert_int_equal(val(f.w, e, f.a), 2);
  assert_int_equal(val(f.w, g, f.a), 3);
  assert_int_equal(val(f.w, g, f.b), 7);
  assert_int_equal(val(f.w, h, f.c), 4);
  weft_world_destroy(f.w);
}

static void test_command_unwind_closes_every_scope(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  weft_entity_t e = spawn1(f.w, f.a, 1);
  weft_query_t *qa = query1(f.w, f.a);
  assert_int_equal(weft_world_defer_begin(f.w), 1);
  assert_int_equal(weft_world_defer_begin(f.w), 2);
  weft_iter_t it;
  weft_query_iter(qa, &it);
  assert_true(weft_iter_next(&it)); /* left open: the loop "threw" */
  assert_int_equal(weft_world_defer_depth(f.w), 3);
  weft_entity_t n = WEFT_ENTITY_NULL;
  assert_int_equal(weft_spawn(f.w, &n), WEFT_OK);
  assert_int_equal(weft_add(f.w, e, f.b, &(uint64_t){2}), WEFT_OK);
  assert_false(weft_is_alive(f.w, n));
  assert_int_equal(weft_world_unwind(f.w), WEFT_OK);
  assert_int_equal(weft_world_defer_depth(f.w), 0);
  assert_true(weft_is_alive(f.w, n));
  assert_int_equal(val(f.w, e, f.b), 2);
  /* Closing the iterator after the unwind is safe. */
  weft_iter_close(&it);
  assert_int_equal(weft_world_defer_depth(f.w), 0);
  /* Later calls apply at once again. */
  assert_int_equal(weft_despawn(f.w, n), WEFT_OK);
  assert_false(weft_is_alive(f.w, n));
  weft_query_destroy(qa);
  weft_world_destroy(f.w);
}

static void test_command_defer_rejects_apply_clear_batch(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  weft_entity_t e = spawn1(f.w, f.a, 1);
  weft_cmdbuf_t *b = buf_new(f.w);
  weft_entity_t p = cmd_spawn2(b, f.a, 2, 0, 0);
  uint32_t recorded = weft_cmdbuf_count(b);
  const weft_component_t comps[] = {f.a, 0};
  weft_entity_t out[2];
  assert_int_equal(weft_world_defer_begin(f.w), 1);
  assert_int_equal(weft_world_apply(f.w, &b, 1), WEFT_EBUSY);
  assert_int_equal(weft_cmdbuf_count(b), recorded);
  assert_int_equal(weft_world_clear(f.w), WEFT_EBUSY);
  assert_int_equal(weft_spawn_batch(f.w, 2, comps, NULL, NULL, out),
                   WEFT_EBUSY);
  assert_true(weft_is_alive(f.w, e));
  assert_int_equal(weft_world_count(f.w), 1);
  assert_int_equal(weft_world_defer_end(f.w), WEFT_OK);
  assert_int_equal(weft_world_count(f.w), 1);
  resolve_stale(f.w, p);
  /* After the scope the same calls work. */
  apply1(f.w, b);
  assert_int_equal(val(f.w, resolve_ok(f.w, p), f.a), 2);
  assert_int_equal(weft_spawn_batch(f.w, 2, comps, NULL, NULL, out), WEFT_OK);
  assert_int_equal(weft_world_count(f.w), 4);
  assert_int_equal(weft_world_clear(f.w), WEFT_OK);
  assert_int_equal(weft_world_count(f.w), 0);
  weft_world_destroy(f.w);
}

/* --- iteration scopes ------------------------------------------------------
 */

static void test_command_iteration_stages_structural_calls(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  enum { N = 64 };
  weft_entity_t es[N];
  for (uint32_t i = 0; i < N; i++) {
    es[i] = spawn1(f.w, f.a, i);
  }
  weft_query_t *qa = query1(f.w, f.a);
  weft_entity_t spawned[N];
  uint32_t nspawned = 0, rows = 0;
  weft_iter_t it;
  weft_query_iter(qa, &it);
  while (weft_iter_next(&it)) {
    assert_int_equal(weft_world_defer_depth(f.w), 1);
    for (uint32_t r = 0; r < it.count; r++) {
      weft_entity_t e = it.entities[r];
      uint64_t v = ((const uint64_t *)it.columns[0])[r];
      if (v % 2 == 0) {
        assert_int_equal(weft_despawn(f.w, e), WEFT_OK);
        assert_true(weft_is_alive(f.w, e));
      } else {
        assert_int_equal(weft_add(f.w, e, f.b, &v), WEFT_OK);
        assert_false(weft_has(f.w, e, f.b));
      }
      if (v % 8 == 0) {
        uint64_t nv = 1000 + v;
        const weft_component_t comps[] = {f.a, 0};
        const void *values[] = {&nv};
        assert_int_equal(
            weft_spawn_with(f.w, comps, values, &spawned[nspawned]), WEFT_OK);
        assert_false(weft_is_alive(f.w, spawned[nspawned]));
        nspawned++;
      }
    }
    rows += it.count;
    assert_int_equal(weft_query_count(qa), N);
  }
  assert_int_equal(rows, N);
  assert_int_equal(weft_world_defer_depth(f.w), 0);
  assert_int_equal(weft_world_last_drain(f.w), WEFT_OK);
  assert_int_equal(nspawned, N / 8);
  for (uint32_t i = 0; i < N; i++) {
    if (i % 2 == 0) {
      assert_false(weft_is_alive(f.w, es[i]));
    } else {
      assert_int_equal(val(f.w, es[i], f.b), i);
    }
  }
  for (uint32_t k = 0; k < nspawned; k++) {
    assert_int_equal(val(f.w, spawned[k], f.a), 1000 + 8 * k);
  }
  assert_int_equal(weft_query_count(qa), N / 2 + N / 8);
  weft_iter_close(&it); /* after the end: harmless */
  assert_int_equal(weft_world_defer_depth(f.w), 0);
  weft_query_destroy(qa);
  weft_world_destroy(f.w);
}

static void test_command_iteration_break_keeps_staging(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  weft_entity_t x = spawn1(f.w, f.a, 1);
  weft_entity_t y = spawn1(f.w, f.a, 2);
  weft_entity_t z = spawn1(f.w, f.a, 3);
  weft_query_t *qa = query1(f.w, f.a);
  weft_iter_t it;
  weft_query_iter(qa, &it);
  while (weft_iter_next(&it)) {
    assert_int_equal(weft_despawn(f.w, x), WEFT_OK);
    break;
  }
  /* The loop left early: its scope is still open. */
  assert_int_equal(weft_world_defer_depth(f.w), 1);
  assert_true(weft_is_alive(f.w, x));
  assert_int_equal(weft_despawn(f.w, y), WEFT_OK);
  assert_true(weft_is_alive(f.w, y));
  weft_iter_close(&it);
  assert_int_equal(weft_world_defer_depth(f.w), 0);
  assert_false(weft_is_alive(f.w, x));
  assert_false(weft_is_alive(f.w, y));
  weft_iter_close(&it); /* twice: safe, no effect */
  assert_int_equal(weft_world_defer_depth(f.w), 0);
  assert_true(weft_is_alive(f.w, z));
  /* Nested iterations: only the outermost close applies. */
  weft_iter_t outer, inner;
  weft_query_iter(qa, &outer);
  assert_true(weft_iter_next(&outer));
  weft_query_iter(qa, &inner);
  assert_true(weft_iter_next(&inner));
  assert_int_equal(weft_world_defer_depth(f.w), 2);
  assert_int_equal(weft_add(f.w, z, f.b, &(uint64_t){9}), WEFT_OK);
  weft_iter_close(&inner);
  assert_false(weft_has(f.w, z, f.b));
  weft_iter_close(&outer);
  assert_int_equal(val(f.w, z, f.b), 9);
  assert_int_equal(weft_world_defer_depth(f.w), 0);
  weft_query_destroy(qa);
  weft_world_destroy(f.w);
}

/* --- errors ----------------------------------------------------------------
 */

static void test_command_rejects_null_arguments(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  weft_entity_t e = spawn1(f.w, f.a, 1);
  weft_query_t *qa = query1(f.w, f.a);
  weft_cmdbuf_t *b = NULL;
  assert_int_equal(weft_cmdbuf_create(NULL, &b), WEFT_EINVAL);
  assert_int_equal(weft_cmdbuf_create(f.w, NULL), WEFT_EINVAL);
  b = buf_new(f.w);
  const weft_component_t comps[] = {f.a, 0};
  uint64_t v = 1;
  weft_entity_t p = WEFT_ENTITY_NULL;
  assert_int_equal(weft_cmd_spawn(NULL, comps, NULL, &p), WEFT_EINVAL);
  assert_int_equal(weft_cmd_spawn(b, comps, NULL, NULL), WEFT_EINVAL);
  assert_int_equal(weft_cmd_despawn(NULL, e), WEFT_EINVAL);
  assert_int_equal(weft_cmd_add(NULL, e, f.a, &v), WEFT_EINVAL);
  assert_int_equal(weft_cmd_set(NULL, e, f.a, &v), WEFT_EINVAL);
  assert_int_equal(weft_cmd_set(b, e, f.a, NULL), WEFT_EINVAL);
  assert_int_equal(weft_cmd_remove(NULL, e, f.a), WEFT_EINVAL);
  assert_int_equal(weft_cmd_enable(NULL, e, f.a), WEFT_EINVAL);
  assert_int_equal(weft_cmd_disable(NULL, e, f.a), WEFT_EINVAL);
  assert_int_equal(weft_cmd_set_query(NULL, qa, f.a, &v), WEFT_EINVAL);
  assert_int_equal(weft_cmd_set_query(b, NULL, f.a, &v), WEFT_EINVAL);
  assert_int_equal(weft_cmd_set_query(b, qa, f.a, NULL), WEFT_EINVAL);
  assert_int_equal(weft_cmd_remove_query(b, NULL, f.a), WEFT_EINVAL);
  assert_int_equal(weft_cmd_despawn_query(b, NULL), WEFT_EINVAL);
  assert_int_equal(weft_cmd_despawn_query(NULL, qa), WEFT_EINVAL);
  assert_int_equal(weft_cmdbuf_count(b), 0);
  assert_int_equal(weft_cmdbuf_count(NULL), 0);
  weft_cmd_key(NULL, 1);
  weft_cmdbuf_clear(NULL);
  weft_cmdbuf_destroy(NULL);
  assert_int_equal(weft_world_apply(NULL, &b, 1), WEFT_EINVAL);
  assert_int_equal(weft_world_apply(f.w, NULL, 1), WEFT_EINVAL);
  weft_cmdbuf_t *with_null[] = {b, NULL};
  cmd_set(b, e, f.a, 2);
  assert_int_equal(weft_world_apply(f.w, with_null, 2), WEFT_EINVAL);
  assert_int_equal(val(f.w, e, f.a), 1);
  assert_int_equal(weft_cmdbuf_count(b), 1);
  weft_entity_t out = WEFT_ENTITY_NULL;
  assert_int_equal(weft_cmd_resolve(NULL, e, &out), WEFT_EINVAL);
  assert_int_equal(weft_cmd_resolve(f.w, e, NULL), WEFT_EINVAL);
  assert_int_equal(weft_world_defer_begin(NULL), WEFT_EINVAL);
  assert_int_equal(weft_world_defer_end(NULL), WEFT_EINVAL);
  assert_int_equal(weft_world_unwind(NULL), WEFT_EINVAL);
  assert_int_equal(weft_world_defer_depth(NULL), 0);
  assert_int_equal(weft_world_defer_depth(f.w), 0);
  /* Nothing above changed the world; the buffer still applies. */
  assert_int_equal(weft_world_apply(f.w, NULL, 0), WEFT_OK);
  apply1(f.w, b);
  assert_int_equal(val(f.w, e, f.a), 2);
  weft_query_destroy(qa);
  weft_world_destroy(f.w);
}

static void test_command_rejects_unknown_component(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  weft_entity_t e = spawn1(f.w, f.a, 1);
  weft_query_t *qa = query1(f.w, f.a);
  weft_cmdbuf_t *b = buf_new(f.w);
  const weft_component_t unknown = f.t + 100;
  const weft_component_t comps[] = {f.a, unknown, 0};
  uint64_t v = 1;
  weft_entity_t p = WEFT_ENTITY_NULL;
  assert_int_equal(weft_cmd_spawn(b, comps, NULL, &p), WEFT_ENOCOMP);
  assert_int_equal(weft_cmd_add(b, e, unknown, &v), WEFT_ENOCOMP);
  assert_int_equal(weft_cmd_add(b, e, 0, &v), WEFT_ENOCOMP);
  assert_int_equal(weft_cmd_set(b, e, unknown, &v), WEFT_ENOCOMP);
  assert_int_equal(weft_cmd_remove(b, e, unknown), WEFT_ENOCOMP);
  assert_int_equal(weft_cmd_enable(b, e, unknown), WEFT_ENOCOMP);
  assert_int_equal(weft_cmd_disable(b, e, unknown), WEFT_ENOCOMP);
  assert_int_equal(weft_cmd_set_query(b, qa, unknown, &v), WEFT_ENOCOMP);
  assert_int_equal(weft_cmd_remove_query(b, qa, unknown), WEFT_ENOCOMP);
  assert_int_equal(weft_cmdbuf_count(b), 0);
  /* The staged forms of entity.h inside a scope reject it as well. */
  assert_int_equal(weft_world_defer_begin(f.w), 1);
  assert_int_equal(weft_spawn_with(f.w, comps, NULL, &p), WEFT_ENOCOMP);
  assert_int_equal(weft_add(f.w, e, unknown, &v), WEFT_ENOCOMP);
  assert_int_equal(weft_world_defer_end(f.w), WEFT_OK);
  assert_int_equal(weft_world_count(f.w), 1);
  wt_check_slot_invariant(f.w);
  weft_query_destroy(qa);
  weft_world_destroy(f.w);
}

static void test_command_rejects_duplicate_spawn_component(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  weft_cmdbuf_t *b = buf_new(f.w);
  const weft_component_t dup[] = {f.a, f.b, f.a, 0};
  weft_entity_t p = WEFT_ENTITY_NULL;
  assert_int_equal(weft_cmd_spawn(b, dup, NULL, &p), WEFT_EINVAL);
  assert_int_equal(weft_cmdbuf_count(b), 0);
  /* Nothing half-recorded: a good spawn afterwards gets the first seq. */
  weft_entity_t q = cmd_spawn2(b, f.a, 1, 0, 0);
  apply1(f.w, b);
  assert_int_equal(weft_world_count(f.w), 1);
  assert_int_equal(val(f.w, resolve_ok(f.w, q), f.a), 1);
  /* In a scope, too. */
  assert_int_equal(weft_world_defer_begin(f.w), 1);
  assert_int_equal(weft_spawn_with(f.w, dup, NULL, &p), WEFT_EINVAL);
  assert_int_equal(wt_stats(f.w).staged_spawns, 0);
  assert_int_equal(weft_world_defer_end(f.w), WEFT_OK);
  assert_int_equal(weft_world_count(f.w), 1);
  wt_check_slot_invariant(f.w);
  weft_world_destroy(f.w);
}

static void test_command_apply_rejects_foreign_buffer(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  fx_t g = fx_new(0, 0);
  weft_entity_t e = spawn1(f.w, f.a, 1);
  weft_cmdbuf_t *mine = buf_new(f.w);
  weft_cmdbuf_t *theirs = buf_new(g.w);
  weft_entity_t p = cmd_spawn2(mine, f.a, 2, 0, 0);
  cmd_set(mine, e, f.a, 3);
  weft_entity_t gp = cmd_spawn2(theirs, g.a, 4, 0, 0);
  uint64_t digest_f = weft_world_digest(f.w);
  uint64_t digest_g = weft_world_digest(g.w);
  weft_cmdbuf_t *list[] = {mine, theirs};
  assert_int_equal(weft_world_apply(f.w, list, 2), WEFT_EINVAL);
  assert_int_equal(weft_world_digest(f.w), digest_f);
  assert_int_equal(weft_world_digest(g.w), digest_g);
  assert_int_equal(val(f.w, e, f.a), 1);
  assert_int_equal(weft_world_count(f.w), 1);
  resolve_stale(f.w, p);
  /* Listing one buffer twice is refused the same way. */
  weft_cmdbuf_t *twice[] = {mine, mine};
  assert_int_equal(weft_world_apply(f.w, twice, 2), WEFT_EINVAL);
  assert_int_equal(weft_world_digest(f.w), digest_f);
  /* Both buffers kept their commands and apply to their own worlds. */
  apply1(f.w, mine);
  apply1(g.w, theirs);
  assert_int_equal(val(f.w, resolve_ok(f.w, p), f.a), 2);
  assert_int_equal(val(f.w, e, f.a), 3);
  assert_int_equal(val(g.w, resolve_ok(g.w, gp), g.a), 4);
  /* A pending handle of another world is stale here. */
  resolve_stale(f.w, gp);
  weft_world_destroy(g.w);
  weft_world_destroy(f.w);
}

static void test_command_apply_full_world_drops_excess_spawns(void **state) {
  (void)state;
  enum { CAP = 8, EXTRA = 5 };
  fx_t f = fx_new(CAP, 0);
  weft_cmdbuf_t *b = buf_new(f.w);
  weft_entity_t p[CAP + EXTRA];
  for (uint32_t i = 0; i < CAP + EXTRA; i++) {
    p[i] = cmd_spawn2(b, f.a, 100 + i, 0, 0);
  }
  cmd_add(b, p[CAP + EXTRA - 1], f.b, 1); /* names a spawn that won't fit */
  weft_world_stats_t s0 = wt_stats(f.w);
  assert_int_equal(weft_world_apply(f.w, &b, 1), WEFT_EFULL);
  weft_world_stats_t s1 = wt_stats(f.w);
  assert_int_equal(weft_world_count(f.w), CAP);
  uint32_t placed = 0;
  for (uint32_t i = 0; i < CAP + EXTRA; i++) {
    weft_entity_t e = WEFT_ENTITY_NULL;
    int rc = weft_cmd_resolve(f.w, p[i], &e);
    if (i < CAP) {
      /* Merge order decides which fit: the first ones recorded. */
      assert_int_equal(rc, WEFT_OK);
      assert_int_equal(val(f.w, e, f.a), 100 + i);
      placed++;
    } else {
      assert_int_equal(rc, WEFT_ESTALE);
    }
  }
  assert_int_equal(placed, CAP);
  assert_int_equal(s1.commands_dropped - s0.commands_dropped, EXTRA);
  assert_int_equal(s1.staged_spawns, 0);
  assert_int_equal(s1.spawns - s0.spawns, CAP);
  assert_int_equal(s1.alive, CAP);
  assert_int_equal(s1.remaining, 0);
  wt_check_slot_invariant(f.w);
  assert_true(strlen(weft_world_last_error(f.w)) > 0);
  /* The world stays usable: free one slot and spawn into it. */
  assert_int_equal(weft_despawn(f.w, resolve_ok(f.w, p[0])), WEFT_OK);
  weft_entity_t again = cmd_spawn2(b, f.a, 7, 0, 0);
  apply1(f.w, b);
  assert_int_equal(val(f.w, resolve_ok(f.w, again), f.a), 7);
  assert_int_equal(weft_world_count(f.w), CAP);
  wt_check_slot_invariant(f.w);
  weft_world_destroy(f.w);
}

/* --- allocation ------------------------------------------------------------
 */

enum { AR_SPAWNS = 48, AR_FIXED = 32 };

typedef struct alloc_round_t {
  fx_t f;
  weft_query_t *qa;
  weft_cmdbuf_t *bufs[2];
  weft_entity_t fixed[AR_FIXED];
  weft_entity_t prev[AR_SPAWNS]; /* spawned by the last round */
  weft_entity_t scoped;          /* spawned in the last round's scope */
  uint64_t tick;
} alloc_round_t;

/* One frame of commands of a fixed shape: spawns, despawns of the last
 * frame's spawns, sets, add/remove pairs, a query-wide set, a deferred
 * scope and an iteration that stages. Returns the first failure code. */
static int alloc_round(alloc_round_t *r) {
  int rc = 0;
  weft_world_t *w = r->f.w;
  uint64_t t = ++r->tick;
  weft_entity_t pend[AR_SPAWNS];
  const weft_component_t comps[] = {r->f.a, r->f.b, 0};
  uint64_t va = t, vb = t + 1;
  const void *values[] = {&va, &vb};
  weft_cmdbuf_t *b0 = r->bufs[0], *b1 = r->bufs[1];
  for (uint32_t i = 0; i < AR_SPAWNS; i++) {
    weft_cmd_key(b0, WEFT_CMD_KEY(1, 0, i));
    rc |= weft_cmd_spawn(b0, comps, values, &pend[i]);
    rc |= weft_cmd_set(b0, pend[i], r->f.c, &va);
    weft_cmd_key(b1, WEFT_CMD_KEY(2, 0, i));
    if (r->prev[i]) {
      rc |= weft_cmd_despawn(b1, r->prev[i]);
    }
  }
  for (uint32_t i = 0; i < AR_FIXED; i++) {
    /* b1 records keys out of order to exercise the sort. */
    weft_cmd_key(b1, WEFT_CMD_KEY(0, 1, AR_FIXED - i));
    rc |= weft_cmd_set(b1, r->fixed[i], r->f.a, &va);
    rc |= weft_cmd_add(b1, r->fixed[i], r->f.c, &vb);
    rc |= weft_cmd_remove(b1, r->fixed[i], r->f.c);
  }
  weft_cmd_key(b0, WEFT_CMD_KEY(3, 0, 0));
  rc |= weft_cmd_set_query(b0, r->qa, r->f.b, &vb);
  rc |= weft_world_apply(w, r->bufs, 2);
  for (uint32_t i = 0; i < AR_SPAWNS; i++) {
    rc |= weft_cmd_resolve(w, pend[i], &r->prev[i]);
  }
  /* A deferred scope. */
  weft_world_defer_begin(w);
  if (r->scoped) {
    rc |= weft_despawn(w, r->scoped);
  }
  rc |= weft_spawn_with(w, comps, values, &r->scoped);
  rc |= weft_set(w, r->fixed[0], r->f.a, &vb);
  rc |= weft_add(w, r->fixed[1], r->f.t, NULL);
  rc |= weft_remove(w, r->fixed[1], r->f.t);
  rc |= weft_world_defer_end(w);
  /* An iteration that stages a change per chunk. */
  weft_iter_t it;
  weft_query_iter(r->qa, &it);
  while (weft_iter_next(&it)) {
    rc |= weft_add(w, it.entities[0], r->f.t, NULL);
    rc |= weft_remove(w, it.entities[0], r->f.t);
  }
  rc |= weft_world_last_drain(w);
  /* The bulk paths: spawns nothing names (placed as runs), a group move of
   * every fixed entity and back, and a despawn of the bulk spawns. */
  weft_entity_t bulk[AR_SPAWNS];
  for (uint32_t i = 0; i < AR_SPAWNS; i++)
    rc |= weft_cmd_spawn(b0, comps, values, &bulk[i]);
  rc |= weft_world_apply(w, &b0, 1);
  for (uint32_t i = 0; i < AR_FIXED; i++)
    rc |= weft_cmd_add(b1, r->fixed[i], r->f.t, NULL);
  rc |= weft_world_apply(w, &b1, 1);
  for (uint32_t i = 0; i < AR_FIXED; i++)
    rc |= weft_cmd_remove(b1, r->fixed[i], r->f.t);
  for (uint32_t i = 0; i < AR_SPAWNS; i++) {
    weft_entity_t e = WEFT_ENTITY_NULL;
    rc |= weft_cmd_resolve(w, bulk[i], &e);
    rc |= weft_cmd_despawn(b1, e);
  }
  rc |= weft_world_apply(w, &b1, 1);
  return rc;
}

static void test_command_steady_state_allocates_nothing(void **state) {
  (void)state;
  alloc_round_t r;
  memset(&r, 0, sizeof r);
  r.f = fx_new(0, 0);
  for (uint32_t i = 0; i < AR_FIXED; i++) {
    r.fixed[i] = spawn3(r.f.w, r.f.a, i, r.f.b, i, 0, 0);
  }
  r.qa = query1(r.f.w, r.f.a);
  r.bufs[0] = buf_new(r.f.w);
  r.bufs[1] = buf_new(r.f.w);
  assert_int_equal(alloc_round(&r), WEFT_OK); /* warm-up */
  const uint64_t *counter = wt_thread_allocated();
  for (int round = 0; round < 3; round++) {
    weft_world_stats_t s0 = wt_stats(r.f.w);
    uint64_t bytes0 = counter ? *counter : 0;
    int rc = alloc_round(&r);
    uint64_t bytes = counter ? *counter - bytes0 : 0;
    weft_world_stats_t s1 = wt_stats(r.f.w);
    assert_int_equal(rc, WEFT_OK);
    assert_int_equal(s1.allocs, s0.allocs);
    assert_int_equal(s1.alloc_bytes, s0.alloc_bytes);
    assert_int_equal(bytes, 0);
    /* The round did its work. */
    assert_int_equal(s1.spawns - s0.spawns, 2 * AR_SPAWNS + 1);
    assert_int_equal(s1.despawns - s0.despawns, 2 * AR_SPAWNS + 1);
    assert_true(s1.moves - s0.moves >= 2 * AR_FIXED); /* the group moves */
    assert_int_equal(weft_world_count(r.f.w), AR_FIXED + AR_SPAWNS + 1);
  }
  assert_int_equal(val(r.f.w, r.prev[0], r.f.c), r.tick);
  assert_int_equal(val(r.f.w, r.prev[0], r.f.b), r.tick + 1);
  assert_int_equal(val(r.f.w, r.fixed[5], r.f.a), r.tick);
  assert_false(weft_has(r.f.w, r.fixed[5], r.f.c));
  weft_query_destroy(r.qa);
  weft_world_destroy(r.f.w);
}

/* A destroyed buffer's id is reused, but its pending handles stay stale. */
static void
test_command_reused_buffer_id_keeps_old_handles_stale(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  weft_cmdbuf_t *a = buf_new(f.w);
  weft_entity_t pa = cmd_spawn2(a, f.a, 1, 0, 0);
  weft_cmdbuf_destroy(a);
  weft_cmdbuf_t *c = buf_new(f.w);
  weft_entity_t pc = cmd_spawn2(c, f.a, 2, 0, 0);
  assert_int_not_equal(pa, pc);
  /* A command in another buffer naming the dead buffer's handle is a
   * stale no-op, not a write to c's spawn. */
  weft_cmdbuf_t *d = buf_new(f.w);
  cmd_set(d, pa, f.a, 99);
  weft_cmdbuf_t *both[] = {c, d};
  uint64_t stale0 = wt_stats(f.w).commands_stale;
  assert_int_equal(weft_world_apply(f.w, both, 2), WEFT_OK);
  assert_int_equal(wt_stats(f.w).commands_stale, stale0 + 1);
  resolve_stale(f.w, pa);
  assert_int_equal(val(f.w, resolve_ok(f.w, pc), f.a), 2);
  weft_world_destroy(f.w);
}

/* After an unwind, closing an iterator opened before it must not close
 * the scope of an iterator opened after it. */
static void test_command_unwind_detaches_old_iterators(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  spawn1(f.w, f.a, 1);
  weft_query_t *q = query1(f.w, f.a);
  weft_iter_t it1, it2;
  weft_query_iter(q, &it1);
  assert_true(weft_iter_next(&it1));
  assert_int_equal(weft_world_unwind(f.w), WEFT_OK);
  assert_int_equal(weft_world_defer_depth(f.w), 0);
  weft_query_iter(q, &it2);
  assert_true(weft_iter_next(&it2));
  assert_int_equal(weft_world_defer_depth(f.w), 1);
  weft_iter_close(&it1);
  assert_int_equal(weft_world_defer_depth(f.w), 1);
  weft_entity_t n = WEFT_ENTITY_NULL;
  assert_int_equal(weft_spawn(f.w, &n), WEFT_OK);
  assert_false(weft_is_alive(f.w, n)); /* still staged: it2 is open */
  weft_iter_close(&it2);
  assert_int_equal(weft_world_defer_depth(f.w), 0);
  assert_true(weft_is_alive(f.w, n));
  weft_world_destroy(f.w);
}

/* Builds a world in a given slot state, then spawns through a buffer,
 * either on the bulk path (nothing names a pending handle) or, with
 * force_staged, on the staged path (one command names each pending handle,
 * writing the value it already has). Returns the digest; handles to out. */
static uint64_t spawn_paths_world(int state, bool force_staged,
                                  weft_entity_t *out, uint32_t n) {
  fx_t f = fx_new(0, 77);
  weft_entity_t pre[40];
  for (uint32_t i = 0; i < 40; i++)
    pre[i] = spawn1(f.w, f.b, i);
  if (state == 1) /* a free list, in a scattered order */
    for (uint32_t i = 0; i < 40; i += 3)
      assert_int_equal(weft_despawn(f.w, pre[(i * 7) % 40]), WEFT_OK);
  if (state == 2) { /* a clear: the sweep range, then fresh slots */
    assert_int_equal(weft_world_clear(f.w), WEFT_OK);
    spawn1(f.w, f.b, 1000);
  }
  weft_cmdbuf_t *b = buf_new(f.w);
  weft_entity_t p[64];
  for (uint32_t i = 0; i < n; i++)
    p[i] = cmd_spawn2(b, f.a, 100 + i, f.c, 200 + i);
  if (force_staged)
    for (uint32_t i = 0; i < n; i++)
      cmd_set(b, p[i], f.a, 100 + i);
  apply1(f.w, b);
  for (uint32_t i = 0; i < n; i++) {
    out[i] = resolve_ok(f.w, p[i]);
    assert_int_equal(val(f.w, out[i], f.a), 100 + i);
    assert_int_equal(val(f.w, out[i], f.c), 200 + i);
  }
  wt_check_slot_invariant(f.w);
  assert_int_equal(wt_stats(f.w).staged_spawns, 0);
  uint64_t d = weft_world_digest(f.w);
  weft_world_destroy(f.w);
  return d;
}

/* Spawns placed in bulk take exactly the slots, rows and values the staged
 * path gives them: after fresh slots, a free list and a clear. */
static void test_command_bulk_spawns_match_staged_spawns(void **state) {
  (void)state;
  for (int st = 0; st < 3; st++) {
    weft_entity_t bulk[64], staged[64];
    uint64_t d1 = spawn_paths_world(st, false, bulk, 64);
    uint64_t d2 = spawn_paths_world(st, true, staged, 64);
    assert_int_equal(d1, d2);
    for (uint32_t i = 0; i < 64; i++)
      assert_int_equal(bulk[i], staged[i]);
  }
}

/* A group move longer than the drain's slices (2048 stages), that leaves
 * rows behind (holes closed from the tail), broken by a stale handle and by
 * an entity with two commands, then undone in reverse order (runs of one
 * row): every entity ends with the right components and values. */
#define GS_N 6000u
static void test_command_long_group_moves_keep_values(void **state) {
  (void)state;
  fx_t f = fx_new(2 * GS_N, 0);
  static weft_entity_t e[GS_N];
  for (uint32_t i = 0; i < GS_N; i++)
    e[i] = spawn1(f.w, f.a, i);
  const uint32_t dead = 3000, twice = 4100, stop = 5000;
  assert_int_equal(weft_despawn(f.w, e[dead]), WEFT_OK);
  weft_cmdbuf_t *b = buf_new(f.w);
  for (uint32_t i = 0; i < stop; i++) {
    uint64_t v = 3 * i + 1;
    assert_int_equal(weft_cmd_add(b, e[i], f.b, &v), WEFT_OK);
  }
  uint64_t v2 = 7;
  assert_int_equal(weft_cmd_set(b, e[twice], f.b, &v2), WEFT_OK);
  weft_world_stats_t s0, s1;
  weft_world_stats(f.w, &s0);
  assert_int_equal(weft_world_apply(f.w, &b, 1), WEFT_OK);
  weft_world_stats(f.w, &s1);
  assert_int_equal(s1.commands_stale - s0.commands_stale, 1);
  assert_int_equal(s1.moves - s0.moves, stop - 1);
  assert_int_equal(weft_world_count(f.w), GS_N - 1);
  for (uint32_t i = 0; i < GS_N; i++) {
    if (i == dead)
      continue;
    assert_int_equal(val(f.w, e[i], f.a), i);
    if (i < stop)
      assert_int_equal(val(f.w, e[i], f.b), i == twice ? 7 : 3 * i + 1);
    else
      assert_false(weft_has(f.w, e[i], f.b));
  }
  for (uint32_t i = GS_N; i-- > 0;)
    assert_int_equal(weft_cmd_remove(b, e[i], f.b), WEFT_OK);
  assert_int_equal(weft_world_apply(f.w, &b, 1), WEFT_OK);
  for (uint32_t i = 0; i < GS_N; i++) {
    if (i == dead)
      continue;
    assert_int_equal(val(f.w, e[i], f.a), i);
    assert_false(weft_has(f.w, e[i], f.b));
  }
  weft_world_destroy(f.w);
}

/* --- key segments, op rings, group moves ---------------------------------- */

/* Spawns recorded under keys take their slots in merge order: returns the
 * index of the slot each pending handle became. */
static uint32_t slot_of(const weft_world_t *w, weft_entity_t p) {
  return weft_entity_index(resolve_ok(w, p));
}

static void test_command_key_segments_merge_in_order(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  weft_cmdbuf_t *x = buf_new(f.w);
  weft_cmdbuf_t *y = buf_new(f.w);
  /* Interleaved keys over two buffers, a repeated key and a key set twice
   * with nothing recorded in between (only the second counts). */
  weft_entity_t p[7];
  weft_cmd_key(x, 1);
  p[0] = cmd_spawn2(x, f.a, 0, 0, 0);
  weft_cmd_key(x, 9);
  weft_cmd_key(x, 3);
  p[2] = cmd_spawn2(x, f.a, 2, 0, 0);
  weft_cmd_key(x, 5);
  p[5] = cmd_spawn2(x, f.b, 5, 0, 0);
  weft_cmd_key(y, 2);
  p[1] = cmd_spawn2(y, f.a, 1, 0, 0);
  weft_cmd_key(y, 4);
  p[3] = cmd_spawn2(y, f.a, 3, 0, 0);
  weft_cmd_key(y, 4);
  p[4] = cmd_spawn2(y, f.b, 4, 0, 0);
  /* A tie on key 5 goes to the buffer listed first (x). */
  weft_cmd_key(y, 5);
  p[6] = cmd_spawn2(y, f.c, 6, 0, 0);
  /* Key records are not commands. */
  assert_int_equal(weft_cmdbuf_count(x), 3);
  assert_int_equal(weft_cmdbuf_count(y), 4);
  weft_cmdbuf_t *list[2] = {x, y};
  assert_int_equal(weft_world_apply(f.w, list, 2), WEFT_OK);
  for (int i = 1; i < 7; i++)
    assert_int_equal(slot_of(f.w, p[i]), slot_of(f.w, p[i - 1]) + 1);

  /* One buffer whose keys go down and up again: its segments are sorted
   * stably, so the later of two key-2 segments wins on the same entity. */
  weft_entity_t e = spawn1(f.w, f.a, 0);
  weft_cmd_key(x, 7);
  cmd_set(x, e, f.a, 70);
  weft_cmd_key(x, 2);
  cmd_set(x, e, f.a, 20);
  cmd_set(x, e, f.b, 21);
  weft_cmd_key(x, 9);
  cmd_set(x, e, f.c, 90);
  weft_cmd_key(x, 2);
  cmd_set(x, e, f.b, 22);
  weft_cmd_key(x, 0);
  cmd_set(x, e, f.c, 1);
  assert_int_equal(weft_cmdbuf_count(x), 6);
  apply1(f.w, x);
  assert_int_equal(val(f.w, e, f.a), 70);
  assert_int_equal(val(f.w, e, f.b), 22);
  assert_int_equal(val(f.w, e, f.c), 90);

  /* The same with a second buffer whose one key falls between them. */
  weft_cmd_key(x, 8);
  cmd_set(x, e, f.a, 80);
  weft_cmd_key(x, 1);
  cmd_set(x, e, f.a, 10);
  weft_cmd_key(y, 6);
  cmd_set(y, e, f.a, 60);
  list[0] = y;
  list[1] = x;
  assert_int_equal(weft_world_apply(f.w, list, 2), WEFT_OK);
  assert_int_equal(val(f.w, e, f.a), 80);
  weft_world_destroy(f.w);
}

/* Many ops on one entity in one transaction apply in recording order. */
static void test_command_many_ops_fold_in_order(void **state) {
  (void)state;
  for (int scoped = 0; scoped < 2; scoped++) {
    fx_t f = fx_new(0, 0);
    weft_entity_t e = spawn1(f.w, f.a, 0);
    weft_cmdbuf_t *b = buf_new(f.w);
    uint64_t v[] = {1, 2, 3, 4, 5, 6, 7};
    if (scoped) {
      weft_world_defer_begin(f.w);
      assert_int_equal(weft_set(f.w, e, f.a, &v[0]), WEFT_OK);
      assert_int_equal(weft_add(f.w, e, f.b, &v[1]), WEFT_OK);
      assert_int_equal(weft_add(f.w, e, f.c, &v[6]), WEFT_OK);
      assert_int_equal(weft_set(f.w, e, f.a, &v[2]), WEFT_OK);
      assert_int_equal(weft_remove(f.w, e, f.b), WEFT_OK);
      assert_int_equal(weft_remove(f.w, e, f.c), WEFT_OK);
      assert_int_equal(weft_add(f.w, e, f.c, NULL), WEFT_OK);
      assert_int_equal(weft_set(f.w, e, f.a, &v[4]), WEFT_OK);
      assert_int_equal(weft_add(f.w, e, f.b, &v[5]), WEFT_OK);
      assert_int_equal(weft_world_defer_end(f.w), WEFT_OK);
    } else {
      cmd_set(b, e, f.a, 1);
      cmd_add(b, e, f.b, 2);
      cmd_add(b, e, f.c, 7);
      cmd_set(b, e, f.a, 3);
      assert_int_equal(weft_cmd_remove(b, e, f.b), WEFT_OK);
      assert_int_equal(weft_cmd_remove(b, e, f.c), WEFT_OK);
      assert_int_equal(weft_cmd_add(b, e, f.c, NULL), WEFT_OK);
      cmd_set(b, e, f.a, 5);
      cmd_add(b, e, f.b, 6);
      apply1(f.w, b);
    }
    assert_int_equal(val(f.w, e, f.a), 5);
    assert_int_equal(val(f.w, e, f.b), 6);
    assert_int_equal(val(f.w, e, f.c), 0); /* the remove undid the 7 */
    weft_world_destroy(f.w);
  }
}

/* Checks every entity of a group-move test: a = i, b = 2i + 1 when it has
 * b, and whether it has b. */
static void check_ab(const fx_t *f, const weft_entity_t *e, uint32_t n,
                     const bool *has_b) {
  for (uint32_t i = 0; i < n; i++) {
    assert_int_equal(val(f->w, e[i], f->a), i);
    assert_int_equal(weft_has(f->w, e[i], f->b), has_b[i]);
    if (has_b[i])
      assert_int_equal(val(f->w, e[i], f->b), 2 * i + 1);
  }
}

/*
 * Group moves that take part of an archetype: a range from the middle
 * (holes filled from the tail), whole chunks at the end (nothing to fill),
 * every other row (runs of one), and a range longer than one slice. Each
 * one is then undone by a group move back.
 */
static void test_command_group_moves_close_holes(void **state) {
  (void)state;
  enum { N = 5000 };
  static weft_entity_t e[N];
  static bool has_b[N];
  static const struct {
    uint32_t lo, hi, step;
  } cases[] = {{700, 2300, 1}, {1500, N, 1}, {0, N, 2},
               {100, 4900, 1}, {0, N, 1},    {1, N, 3}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    fx_t f = fx_new(2 * N, 0);
    for (uint32_t i = 0; i < N; i++) {
      e[i] = spawn1(f.w, f.a, i);
      has_b[i] = false;
    }
    weft_cmdbuf_t *b = buf_new(f.w);
    uint32_t moved = 0;
    for (uint32_t i = cases[k].lo; i < cases[k].hi; i += cases[k].step) {
      cmd_add(b, e[i], f.b, 2 * i + 1);
      has_b[i] = true;
      moved++;
    }
    weft_world_stats_t s0, s1;
    weft_world_stats(f.w, &s0);
    apply1(f.w, b);
    weft_world_stats(f.w, &s1);
    assert_int_equal(s1.moves - s0.moves, moved);
    check_ab(&f, e, N, has_b);
    /* Back, in reverse order this time. */
    for (uint32_t i = N; i-- > 0;)
      if (has_b[i])
        assert_int_equal(weft_cmd_remove(b, e[i], f.b), WEFT_OK);
    apply1(f.w, b);
    memset(has_b, 0, sizeof has_b);
    check_ab(&f, e, N, has_b);
    assert_int_equal(weft_world_count(f.w), N);
    weft_world_destroy(f.w);
  }
}

/* --- misuse of buffers (command.h) ---------------------------------------- */

/* A second destroy through a stale pointer is refused with a message (it
 * used to free the buffer twice, and the world's destroy then looped), as
 * are recording into and applying a destroyed buffer; the world stays
 * usable and frees everything at its end. */
static void test_command_destroy_twice_is_refused(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  weft_entity_t e = spawn1(f.w, f.a, 1);
  weft_query_t *q = query1(f.w, f.a);
  weft_cmdbuf_t *b = buf_new(f.w);
  cmd_set(b, e, f.a, 2);
  assert_int_equal(weft_cmdbuf_destroy(b), WEFT_OK);
  assert_int_equal(weft_cmdbuf_destroy(b), WEFT_EINVAL);
  assert_non_null(strstr(weft_world_last_error(f.w), "destroyed"));
  assert_int_equal(weft_cmd_set(b, e, f.a, &(uint64_t){3}), WEFT_EINVAL);
  assert_int_equal(weft_cmd_add(b, e, f.b, &(uint64_t){3}), WEFT_EINVAL);
  assert_int_equal(weft_cmd_despawn(b, e), WEFT_EINVAL);
  const weft_component_t comps[] = {f.a, 0};
  weft_entity_t p;
  assert_int_equal(weft_cmd_spawn(b, comps, NULL, &p), WEFT_EINVAL);
  assert_int_equal(weft_cmd_set_query(b, q, f.a, &(uint64_t){4}), WEFT_EINVAL);
  assert_int_equal(weft_cmdbuf_count(b), 0);
  weft_cmdbuf_clear(b);
  assert_int_equal(weft_world_apply(f.w, &b, 1), WEFT_EINVAL);
  assert_int_equal(val(f.w, e, f.a), 1); /* nothing recorded was applied */
  assert_int_equal(weft_cmdbuf_destroy(NULL), WEFT_OK);
  /* Buffers made later work as usual (one may reuse b's memory). */
  weft_cmdbuf_t *c = buf_new(f.w), *d = buf_new(f.w);
  cmd_set(c, e, f.a, 5);
  assert_int_equal(weft_world_apply(f.w, &c, 1), WEFT_OK);
  assert_int_equal(val(f.w, e, f.a), 5);
  assert_int_equal(weft_cmdbuf_destroy(d), WEFT_OK);
  weft_query_destroy(q);
  weft_world_destroy(f.w); /* frees c, and the memory of b and d */
}

typedef struct own_t {
  int destroy_rc;
  int record_rc;
  weft_entity_t e;
  weft_component_t a;
} own_t;

static int destroy_own_cmd(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  own_t *o = ctx->user;
  o->destroy_rc = weft_cmdbuf_destroy(ctx->cmd);
  o->record_rc = weft_cmd_set(ctx->cmd, o->e, o->a, &(uint64_t){9});
  return 0;
}

/* A system's ctx->cmd belongs to the scheduler: a callback that destroys
 * it is refused, and the buffer keeps working. */
static void test_command_system_buffer_is_not_destroyed(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  own_t o = {1, 1, spawn1(f.w, f.a, 1), f.a};
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "destroys.its.cmd";
  d.run = destroy_own_cmd;
  d.user = &o;
  d.cmd_write[0] = f.a;
  weft_system_t id;
  assert_int_equal(weft_system_register(f.w, &d, &id), WEFT_OK);
  assert_int_equal(weft_world_progress(f.w, 1.0 / 60.0), WEFT_OK);
  assert_int_equal(o.destroy_rc, WEFT_EINVAL);
  assert_non_null(strstr(weft_world_last_error(f.w), "scheduler"));
  assert_int_equal(o.record_rc, WEFT_OK);
  assert_int_equal(val(f.w, o.e, f.a), 9);
  assert_int_equal(weft_world_progress(f.w, 1.0 / 60.0), WEFT_OK);
  weft_world_destroy(f.w);
}

typedef struct applying_t {
  weft_cmdbuf_t *b;
  int rc;
} applying_t;

static void destroy_applying(weft_world_t *w, const weft_event_t *ev,
                             void *user) {
  (void)w;
  (void)ev;
  applying_t *a = user;
  a->rc = weft_cmdbuf_destroy(a->b);
}

/* An observer cannot destroy the buffer being applied. */
static void test_command_destroy_while_applied_is_refused(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  applying_t a = {buf_new(f.w), 1};
  weft_observer_desc_t od;
  memset(&od, 0, sizeof od);
  od.events = WEFT_EVENT_SPAWN;
  od.fn = destroy_applying;
  od.user = &a;
  weft_observer_t *obs = NULL;
  assert_int_equal(weft_observer_create(f.w, &od, &obs), WEFT_OK);
  weft_entity_t p = cmd_spawn2(a.b, f.a, 1, 0, 0);
  assert_int_equal(weft_world_apply(f.w, &a.b, 1), WEFT_OK);
  assert_int_equal(a.rc, WEFT_EBUSY);
  weft_entity_t e;
  assert_int_equal(weft_cmd_resolve(f.w, p, &e), WEFT_OK);
  assert_int_equal(val(f.w, e, f.a), 1);
  assert_int_equal(weft_cmdbuf_destroy(a.b), WEFT_OK);
  weft_observer_destroy(obs);
  weft_world_destroy(f.w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_command_spawn_returns_pending_handle),
      cmocka_unit_test(test_command_resolve_rejects_stale_pending),
      cmocka_unit_test(test_command_clear_drops_commands),
      cmocka_unit_test(test_command_pending_handle_across_buffers),
      cmocka_unit_test(test_command_merge_is_deterministic),
      cmocka_unit_test(test_command_unsorted_buffer_is_sorted_stably),
      cmocka_unit_test(test_command_coalesces_into_one_move),
      cmocka_unit_test(test_command_add_keeps_existing_value),
      cmocka_unit_test(test_command_last_write_wins),
      cmocka_unit_test(test_command_remove_then_add_keeps_row),
      cmocka_unit_test(test_command_despawn_cancels_staged_work),
      cmocka_unit_test(test_command_despawn_then_set_does_nothing),
      cmocka_unit_test(test_command_stale_handle_is_counted_noop),
      cmocka_unit_test(test_command_recycled_slot_is_not_revived),
      cmocka_unit_test(test_command_despawns_precede_spawns),
      cmocka_unit_test(test_command_set_query_captures_members),
      cmocka_unit_test(test_command_remove_query_captures_members),
      cmocka_unit_test(test_command_despawn_query_captures_members),
      cmocka_unit_test(test_command_query_commands_run_after_entity_commands),
      cmocka_unit_test(test_command_defer_scopes_nest),
      cmocka_unit_test(test_command_defer_hides_structural_changes),
      cmocka_unit_test(test_command_defer_set_writes_through),
      cmocka_unit_test(test_command_unwind_closes_every_scope),
      cmocka_unit_test(test_command_defer_rejects_apply_clear_batch),
      cmocka_unit_test(test_command_iteration_stages_structural_calls),
      cmocka_unit_test(test_command_iteration_break_keeps_staging),
      cmocka_unit_test(test_command_rejects_null_arguments),
      cmocka_unit_test(test_command_rejects_unknown_component),
      cmocka_unit_test(test_command_rejects_duplicate_spawn_component),
      cmocka_unit_test(test_command_apply_rejects_foreign_buffer),
      cmocka_unit_test(test_command_apply_full_world_drops_excess_spawns),
      cmocka_unit_test(test_command_steady_state_allocates_nothing),
      cmocka_unit_test(test_command_reused_buffer_id_keeps_old_handles_stale),
      cmocka_unit_test(test_command_unwind_detaches_old_iterators),
      cmocka_unit_test(test_command_bulk_spawns_match_staged_spawns),
      cmocka_unit_test(test_command_long_group_moves_keep_values),
      cmocka_unit_test(test_command_key_segments_merge_in_order),
      cmocka_unit_test(test_command_many_ops_fold_in_order),
      cmocka_unit_test(test_command_group_moves_close_holes),
      cmocka_unit_test(test_command_destroy_twice_is_refused),
      cmocka_unit_test(test_command_system_buffer_is_not_destroyed),
      cmocka_unit_test(test_command_destroy_while_applied_is_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
