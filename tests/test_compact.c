/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for weft_world_compact() (weft/compact.h): pruning empty
 * archetypes (WEFT_COMPACT_EMPTY_ARCHETYPES), ids reused lowest first
 * without renumbering survivors, queries (cached, grouped, temporary),
 * systems and observers after a prune, busy refusals, values and dirty
 * bits across a shrink, the digest, and the memory a shrink gives back.
 */
#include "support/weft_test.h"

#include "core/archetype.h" /* a rollback of an archetype at a reused id */
#include "core/world_view.h"

typedef struct cw_t {
  weft_world_t *w;
  weft_component_t a, b, c, d, t;
} cw_t;

static cw_t cw_new(uint32_t chunk_size) {
  cw_t f;
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.world_tag = 42; /* equal handles across worlds: digests compare */
  cfg.chunk_size = chunk_size;
  f.w = wt_world_new(&cfg);
  f.a = wt_register(f.w, "a", sizeof(uint32_t), 0);
  f.b = wt_register(f.w, "b", sizeof(uint64_t), 0);
  f.c = wt_register(f.w, "c", sizeof(uint32_t), 0);
  f.d = wt_register(f.w, "d", sizeof(uint16_t), 0);
  f.t = wt_register_tag(f.w, "t");
  return f;
}

static const weft_compact_config_t prune_all = {
    .flags = WEFT_COMPACT_EMPTY_ARCHETYPES};

static weft_compact_stats_t compact(weft_world_t *w,
                                    const weft_compact_config_t *cfg) {
  weft_compact_stats_t st;
  memset(&st, 0xa5, sizeof st);
  int rc = weft_world_compact(w, cfg, &st);
  if (rc)
    print_message("compact: %s\n", weft_world_last_error(w));
  assert_int_equal(rc, WEFT_OK);
  return st;
}

/* Spawns one entity with the zero-terminated list and value v for every
 * data component (values up to 8 bytes, truncated to the size). */
static weft_entity_t spawn_v(cw_t *f, const weft_component_t *comps,
                             uint64_t v) {
  const void *vals[8];
  uint64_t copy[8];
  uint32_t n = 0;
  for (; comps[n]; n++) {
    copy[n] = v;
    vals[n] = &copy[n];
  }
  return wt_spawn_with(f->w, comps, vals);
}

/* The archetype id (public, from 1) of live entity e. */
static uint32_t arch_of(const cw_t *f, weft_entity_t e) {
  uint32_t id = weft_archetype_of(f->w, e);
  assert_int_not_equal(id, 0);
  return id;
}

/* Sum of component a over a query's rows, and their count. */
static uint64_t sum_a(const weft_query_t *q, uint32_t *rows) {
  weft_iter_t it;
  uint64_t s = 0;
  *rows = 0;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    const uint32_t *a = weft_iter_column(&it, 0);
    for (uint32_t r = 0; r < it.count; r++)
      s += a[r];
    *rows += it.count;
  }
  return s;
}

/* Without the flag nothing ordinary is pruned; with it, every empty
 * archetype but the empty signature's, and the rows stay. */
static void test_compact_prunes_empty_archetypes_with_flag(void **state) {
  (void)state;
  cw_t f = cw_new(0);
  const weft_component_t ab[] = {f.a, f.b, 0}, ac[] = {f.a, f.c, 0},
                         abc[] = {f.a, f.b, f.c, 0}, a[] = {f.a, 0};
  weft_entity_t e1 = spawn_v(&f, a, 1);
  weft_entity_t e2 = spawn_v(&f, ab, 2);
  weft_entity_t e3 = spawn_v(&f, ac, 3);
  weft_entity_t e4 = spawn_v(&f, abc, 4);
  weft_entity_t root = wt_spawn(f.w); /* the empty signature, kept */
  assert_int_equal(weft_despawn(f.w, root), WEFT_OK);
  assert_int_equal(weft_despawn(f.w, e2), WEFT_OK);
  assert_int_equal(weft_despawn(f.w, e4), WEFT_OK);
  const uint32_t before = wt_stats(f.w).archetypes;
  assert_int_equal(before, 5);
  /* By default the emptied archetypes (and the empty signature's) stay
   * but give back their spare chunks. */
  const weft_world_stats_t s0 = wt_stats(f.w);
  weft_compact_stats_t st = compact(f.w, NULL);
  assert_int_equal(st.pruned, 0);
  assert_int_equal(st.rebuilt, 3);
  assert_int_equal(st.chunks_released, 3);
  assert_int_equal(wt_stats(f.w).chunk_bytes + st.bytes_released,
                   s0.chunk_bytes);
  assert_int_equal(wt_stats(f.w).archetypes, before);
  st = compact(f.w, &prune_all);
  assert_int_equal(st.pruned, 2);
  assert_int_equal(st.rebuilt, 0);
  assert_int_equal(wt_stats(f.w).archetypes, before - 2);
  uint32_t v = 0;
  assert_int_equal(weft_read(f.w, e1, f.a, &v), WEFT_OK);
  assert_int_equal(v, 1);
  assert_int_equal(weft_read(f.w, e3, f.c, &v), WEFT_OK);
  assert_int_equal(v, 3);
  /* Nothing left to prune: a second call is a no-op. */
  st = compact(f.w, &prune_all);
  assert_int_equal(st.pruned, 0);
  assert_int_equal(st.rebuilt, 0);
  /* The pruned signatures come back on demand. */
  weft_entity_t e5 = spawn_v(&f, abc, 5);
  assert_int_equal(weft_add(f.w, e1, f.b, NULL), WEFT_OK);
  assert_true(weft_has(f.w, e1, f.b));
  assert_int_equal(weft_read(f.w, e5, f.c, &v), WEFT_OK);
  assert_int_equal(v, 5);
  assert_int_equal(wt_stats(f.w).archetypes, before);
  weft_world_destroy(f.w);
}

/* Dense relations: by default a compaction prunes exactly the empty
 * (relation, target) archetypes whose target died, a pair query made
 * before keeps working (and matches a new target's archetype at a reused
 * id), and re-parenting afterwards follows fresh transitions. */
static void test_compact_prunes_dead_target_pairs(void **state) {
  (void)state;
  cw_t f = cw_new(0);
  weft_component_t child_of;
  weft_relation_desc_t rd = {.name = "ChildOf",
                             .flags = WEFT_RELATION_EXCLUSIVE};
  assert_int_equal(weft_relation_register(f.w, &rd, &child_of), WEFT_OK);
  const weft_component_t a[] = {f.a, 0};
  enum { P = 6, K = 4 };
  weft_entity_t parents[P], kids[P][K];
  for (uint32_t p = 0; p < P; p++) {
    parents[p] = spawn_v(&f, a, 100 + p);
    for (uint32_t k = 0; k < K; k++) {
      kids[p][k] = spawn_v(&f, a, p * K + k);
      assert_int_equal(
          weft_relation_add(f.w, kids[p][k], child_of, parents[p], NULL),
          WEFT_OK);
    }
  }
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = f.a;
  qd.pairs[0] = (weft_pair_t){.rel = child_of, .target = parents[1]};
  weft_query_t *q1 = NULL;
  assert_int_equal(weft_query_create(f.w, &qd, &q1), WEFT_OK);
  const uint32_t before = wt_stats(f.w).archetypes;
  /* Parents 0, 2 and 4 die: their children lose the edge and move out. */
  for (uint32_t p = 0; p < P; p += 2)
    assert_int_equal(weft_despawn(f.w, parents[p]), WEFT_OK);
  assert_int_equal(wt_stats(f.w).archetypes, before);
  uint64_t d0 = weft_world_digest(f.w);
  weft_compact_stats_t st = compact(f.w, NULL);
  assert_int_equal(st.pruned, 3);
  assert_int_equal(wt_stats(f.w).archetypes, before - 3);
  assert_int_equal(weft_world_digest(f.w), d0);
  /* Nothing else goes, even empty: a second call prunes nothing. */
  assert_int_equal(compact(f.w, NULL).pruned, 0);
  uint32_t rows = 0;
  assert_int_equal(sum_a(q1, &rows),
                   1 * K + 0 + 1 * K + 1 + 1 * K + 2 + 1 * K + 3);
  assert_int_equal(rows, K);
  /* A new parent's archetype takes a freed id; the survivors' kids move
   * there and back. */
  weft_entity_t np = spawn_v(&f, a, 999);
  for (uint32_t k = 0; k < K; k++) {
    assert_int_equal(weft_relation_add(f.w, kids[1][k], child_of, np, NULL),
                     WEFT_OK);
    weft_entity_t t = WEFT_ENTITY_NULL;
    assert_int_equal(weft_relation_first(f.w, kids[1][k], child_of, &t),
                     WEFT_OK);
    assert_true(t == np);
  }
  assert_int_equal(sum_a(q1, &rows), 0);
  assert_int_equal(rows, 0);
  for (uint32_t k = 0; k < K; k++)
    assert_int_equal(
        weft_relation_add(f.w, kids[1][k], child_of, parents[1], NULL),
        WEFT_OK);
  assert_int_equal(sum_a(q1, &rows), 4 * K + 6);
  assert_int_equal(rows, K);
  /* The orphans (kids of dead parents) are where plain moves put them. */
  for (uint32_t k = 0; k < K; k++)
    assert_false(weft_has(f.w, kids[0][k], child_of));
  weft_world_destroy(f.w);
}

/* Freed ids are reused lowest first; survivors keep theirs. */
static void test_compact_reuses_ids_lowest_first(void **state) {
  (void)state;
  cw_t f = cw_new(0);
  const weft_component_t l1[] = {f.a, 0}, l2[] = {f.b, 0}, l3[] = {f.c, 0},
                         l4[] = {f.d, 0}, l5[] = {f.a, f.b, 0},
                         n1[] = {f.a, f.c, 0}, n2[] = {f.a, f.d, 0},
                         n3[] = {f.b, f.c, 0};
  weft_entity_t e[5] = {spawn_v(&f, l1, 1), spawn_v(&f, l2, 2),
                        spawn_v(&f, l3, 3), spawn_v(&f, l4, 4),
                        spawn_v(&f, l5, 5)};
  uint32_t id[5];
  for (int i = 0; i < 5; i++)
    id[i] = arch_of(&f, e[i]);
  assert_int_equal(id[0], 2); /* 1 is the empty signature */
  assert_int_equal(id[4], 6);
  /* Empty the 2nd, 4th and last. */
  assert_int_equal(weft_despawn(f.w, e[1]), WEFT_OK);
  assert_int_equal(weft_despawn(f.w, e[3]), WEFT_OK);
  assert_int_equal(weft_despawn(f.w, e[4]), WEFT_OK);
  /* Pruning alone frees each one's spare chunk. */
  const uint64_t bytes = wt_stats(f.w).chunk_bytes;
  weft_compact_stats_t st = compact(
      f.w, &(weft_compact_config_t){.flags = WEFT_COMPACT_EMPTY_ARCHETYPES |
                                             WEFT_COMPACT_NO_SHRINK});
  assert_int_equal(st.pruned, 3);
  assert_int_equal(st.rebuilt, 0);
  assert_int_equal(st.chunks_released, 3);
  assert_int_equal(wt_stats(f.w).chunk_bytes + st.bytes_released, bytes);
  assert_int_equal(wt_stats(f.w).chunks_spare, 0);
  assert_int_equal(arch_of(&f, e[0]), id[0]);
  assert_int_equal(arch_of(&f, e[2]), id[2]);
  /* New signatures take the freed ids, lowest first, then the next. */
  weft_entity_t x1 = spawn_v(&f, n1, 6), x2 = spawn_v(&f, n2, 7),
                x3 = spawn_v(&f, n3, 8), x4 = spawn_v(&f, l2, 9);
  assert_int_equal(arch_of(&f, x1), id[1]);
  assert_int_equal(arch_of(&f, x2), id[3]);
  assert_int_equal(arch_of(&f, x3), id[4]);
  assert_int_equal(arch_of(&f, x4), id[4] + 1);
  assert_int_equal(arch_of(&f, e[0]), id[0]);
  assert_int_equal(arch_of(&f, e[2]), id[2]);
  weft_world_destroy(f.w);
}

/* A rollback of an archetype made at a reused id gives the id back. */
static void test_compact_rollback_returns_reused_id(void **state) {
  (void)state;
  cw_t f = cw_new(0);
  const weft_component_t l1[] = {f.a, 0}, l2[] = {f.b, 0}, l3[] = {f.c, 0};
  weft_entity_t e1 = spawn_v(&f, l1, 1), e2 = spawn_v(&f, l2, 2);
  spawn_v(&f, l3, 3);
  const uint32_t freed = arch_of(&f, e2);
  assert_int_equal(weft_despawn(f.w, e2), WEFT_OK);
  assert_int_equal(compact(f.w, &prune_all).pruned, 1);
  const uint32_t count = wt_stats(f.w).archetypes;
  const uint32_t mark = f.w->arch_born;
  weft__mask_t present = {{0}}, none = {{0}};
  weft__mask_set(&present, f.d);
  weft__archetype_t *arch = NULL;
  assert_int_equal(weft__archetype_get(f.w, &present, &none, &arch), WEFT_OK);
  assert_int_equal(arch->id + 1, freed);
  assert_int_equal(wt_stats(f.w).archetypes, count + 1);
  weft__archetypes_rollback(f.w, mark);
  assert_int_equal(wt_stats(f.w).archetypes, count);
  /* The id is free again, and the next archetype takes it. */
  weft_entity_t x = spawn_v(&f, (const weft_component_t[]){f.a, f.d, 0}, 4);
  assert_int_equal(arch_of(&f, x), freed);
  assert_int_equal(arch_of(&f, e1), 2);
  weft_world_destroy(f.w);
}

/* A query made before compaction keeps its matches and order, adopts a
 * new archetype at a reused id, and one made after walks the same
 * archetypes in the same (creation) order. */
static void test_compact_queries_survive_and_adopt(void **state) {
  (void)state;
  cw_t f = cw_new(WEFT_CHUNK_SIZE_MIN);
  const weft_component_t ab[] = {f.a, f.b, 0}, ac[] = {f.a, f.c, 0},
                         ad[] = {f.a, f.d, 0}, abt[] = {f.a, f.b, f.t, 0};
  weft_query_t *q = NULL;
  assert_int_equal(
      weft_query_create(f.w, &(weft_query_desc_t){.include = {f.a}}, &q),
      WEFT_OK);
  weft_entity_t gone = spawn_v(&f, ab, 1000);
  for (uint32_t i = 0; i < 300; i++)
    spawn_v(&f, ac, i);
  assert_int_equal(weft_despawn(f.w, gone), WEFT_OK);
  assert_int_equal(weft_query_archetype_count(q), 2);
  assert_int_equal(compact(f.w, &prune_all).pruned, 1);
  assert_int_equal(weft_query_archetype_count(q), 1);
  uint32_t rows;
  assert_int_equal(sum_a(q, &rows), 299u * 300u / 2u);
  assert_int_equal(rows, 300);
  /* {a, d} takes the freed id and joins the old query. */
  weft_entity_t x = spawn_v(&f, ad, 7);
  assert_int_equal(weft_query_archetype_count(q), 2);
  assert_int_equal(sum_a(q, &rows), 299u * 300u / 2u + 7u);
  assert_int_equal(rows, 301);
  spawn_v(&f, abt, 11); /* a new id */
  /* The old query walks {a, c} then {a, d} then {a, b, t}: creation
   * order. A new one too, though {a, d} has the lowest id. */
  weft_query_t *q2 = NULL;
  assert_int_equal(
      weft_query_create(f.w, &(weft_query_desc_t){.include = {f.a}}, &q2),
      WEFT_OK);
  weft_iter_t i1, i2;
  weft_query_iter(q, &i1);
  weft_query_iter(q2, &i2);
  uint32_t chunks = 0;
  for (;;) {
    bool n1 = weft_iter_next(&i1), n2 = weft_iter_next(&i2);
    assert_int_equal(n1, n2);
    if (!n1)
      break;
    assert_int_equal(i1.count, i2.count);
    assert_ptr_equal(i1.entities, i2.entities);
    chunks++;
  }
  assert_true(chunks >= 3);
  assert_int_equal(weft_query_count(q2), 302);
  assert_true(weft_is_alive(f.w, x));
  weft_world_destroy(f.w);
}

static uint64_t by_tag(weft_world_t *w, const weft_archetype_view_t *v,
                       void *ctx) {
  (void)w;
  const weft_component_t t = *(const weft_component_t *)ctx;
  for (uint32_t i = 0; i < v->ncomponents; i++)
    if (v->components[i] == t)
      return 1;
  return 2;
}

/* Grouped queries drop pruned archetypes from their groups and place a
 * reused id's archetype in its group, last (creation order). */
static void test_compact_group_by(void **state) {
  (void)state;
  cw_t f = cw_new(0);
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(f.w,
                                     &(weft_query_desc_t){.include = {f.a},
                                                          .group_by = by_tag,
                                                          .group_ctx = &f.t},
                                     &q),
                   WEFT_OK);
  const weft_component_t at[] = {f.a, f.t, 0}, abt[] = {f.a, f.b, f.t, 0},
                         a[] = {f.a, 0}, ab[] = {f.a, f.b, 0},
                         act[] = {f.a, f.c, f.t, 0};
  spawn_v(&f, at, 1);
  weft_entity_t g = spawn_v(&f, abt, 2);
  spawn_v(&f, a, 3);
  spawn_v(&f, ab, 4);
  assert_int_equal(weft_despawn(f.w, g), WEFT_OK);
  assert_int_equal(compact(f.w, &prune_all).pruned, 1);
  assert_int_equal(weft_query_group_count(q, 1), 1);
  assert_int_equal(weft_query_group_count(q, 2), 2);
  weft_entity_t x = spawn_v(&f, act, 5); /* group 1, the freed id */
  assert_int_equal(weft_query_group_count(q, 1), 2);
  uint64_t groups[4];
  assert_int_equal(weft_query_groups(q, groups, 4), 2);
  assert_int_equal(groups[0], 1);
  assert_int_equal(groups[1], 2);
  /* Iteration goes group by group, x's archetype last of group 1. */
  weft_iter_t it;
  weft_query_iter(q, &it);
  uint32_t seen[8], n = 0;
  while (weft_iter_next(&it)) {
    const uint32_t *v = weft_iter_column(&it, 0);
    for (uint32_t r = 0; r < it.count && n < 8; r++)
      seen[n++] = v[r];
  }
  assert_int_equal(n, 4);
  assert_int_equal(seen[0], 1);
  assert_int_equal(seen[1], 5);
  assert_int_equal(seen[2], 3);
  assert_int_equal(seen[3], 4);
  assert_true(weft_is_alive(f.w, x));
  weft_world_destroy(f.w);
}

/* A temporary query drops the pruned archetypes and never adopts one that
 * reuses their ids; it reads the same rows as before. */
static void test_compact_temp_query(void **state) {
  (void)state;
  cw_t f = cw_new(0);
  const weft_component_t a[] = {f.a, 0}, ab[] = {f.a, f.b, 0},
                         ac[] = {f.a, f.c, 0};
  spawn_v(&f, a, 1);
  weft_entity_t g = spawn_v(&f, ab, 2);
  spawn_v(&f, ac, 3);
  assert_int_equal(weft_despawn(f.w, g), WEFT_OK);
  weft_query_t *tq = NULL;
  assert_int_equal(
      weft_query_create_temp(f.w, &(weft_query_desc_t){.include = {f.a}}, &tq),
      WEFT_OK);
  assert_int_equal(weft_query_archetype_count(tq), 3);
  assert_int_equal(compact(f.w, &prune_all).pruned, 1);
  assert_int_equal(weft_query_archetype_count(tq), 2);
  uint32_t rows;
  assert_int_equal(sum_a(tq, &rows), 4);
  assert_int_equal(rows, 2);
  /* {a, d} takes the freed id: the temporary query stays frozen. */
  weft_entity_t x = spawn_v(&f, (const weft_component_t[]){f.a, f.d, 0}, 9);
  assert_true(weft_is_alive(f.w, x));
  assert_int_equal(weft_query_archetype_count(tq), 2);
  assert_int_equal(sum_a(tq, &rows), 4);
  spawn_v(&f, a, 10); /* live rows of a frozen archetype still show */
  assert_int_equal(sum_a(tq, &rows), 14);
  assert_int_equal(weft_query_destroy(tq), WEFT_OK);
  weft_world_destroy(f.w);
}

typedef struct busy_t {
  int rc;
  uint32_t calls;
} busy_t;

static int compact_from_system(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  busy_t *b = ctx->user;
  b->rc = weft_world_compact(ctx->world, &prune_all, NULL);
  b->calls++;
  return 0;
}

static void compact_from_observer(weft_world_t *w, const weft_event_t *ev,
                                  void *user) {
  (void)ev;
  busy_t *b = user;
  b->rc = weft_world_compact(w, NULL, NULL);
  b->calls++;
}

/* Inside an iteration, a deferred scope, a system or an observer (a
 * drain) compaction refuses and changes nothing. Bad configs: EINVAL. */
static void test_compact_busy_and_bad_input(void **state) {
  (void)state;
  cw_t f = cw_new(0);
  const weft_component_t a[] = {f.a, 0}, ab[] = {f.a, f.b, 0};
  spawn_v(&f, a, 1);
  weft_entity_t g = spawn_v(&f, ab, 2);
  assert_int_equal(weft_despawn(f.w, g), WEFT_OK);
  const uint32_t n = wt_stats(f.w).archetypes;
  weft_query_t *q = NULL;
  assert_int_equal(
      weft_query_create(f.w, &(weft_query_desc_t){.include = {f.a}}, &q),
      WEFT_OK);
  weft_iter_t it;
  weft_query_iter(q, &it);
  assert_true(weft_iter_next(&it));
  assert_int_equal(weft_world_compact(f.w, &prune_all, NULL), WEFT_EBUSY);
  while (weft_iter_next(&it)) {
  }
  assert_int_equal(weft_world_defer_begin(f.w), 1); /* the depth */
  assert_int_equal(weft_world_compact(f.w, &prune_all, NULL), WEFT_EBUSY);
  assert_int_equal(weft_world_defer_end(f.w), WEFT_OK);
  assert_int_equal(wt_stats(f.w).archetypes, n);
  /* A task system and an exclusive one, both inside a frame. */
  busy_t sys = {0, 0}, xsys = {0, 0}, obs = {0, 0};
  weft_system_t id = 0;
  assert_int_equal(
      weft_system_register(f.w,
                           &(weft_system_desc_t){.name = "compact",
                                                 .phase = WEFT_PHASE_PRE_UPDATE,
                                                 .run = compact_from_system,
                                                 .user = &sys},
                           &id),
      WEFT_OK);
  assert_int_equal(
      weft_system_register(f.w,
                           &(weft_system_desc_t){.name = "compact_x",
                                                 .phase = WEFT_PHASE_PRE_UPDATE,
                                                 .flags = WEFT_SYSTEM_EXCLUSIVE,
                                                 .run = compact_from_system,
                                                 .user = &xsys},
                           &id),
      WEFT_OK);
  assert_int_equal(weft_world_run_phase(f.w, WEFT_PHASE_PRE_UPDATE, 0.0),
                   WEFT_OK);
  assert_int_equal(sys.calls, 1);
  assert_int_equal(sys.rc, WEFT_EBUSY);
  assert_int_equal(xsys.calls, 1);
  assert_int_equal(xsys.rc, WEFT_EBUSY);
  weft_observer_t *o = NULL;
  assert_int_equal(
      weft_observer_create(f.w,
                           &(weft_observer_desc_t){.events = WEFT_EVENT_SPAWN,
                                                   .fn = compact_from_observer,
                                                   .user = &obs},
                           &o),
      WEFT_OK);
  spawn_v(&f, a, 3);
  assert_int_equal(obs.calls, 1);
  assert_int_equal(obs.rc, WEFT_EBUSY);
  weft_observer_destroy(o);
  assert_int_equal(wt_stats(f.w).archetypes, n);
  assert_int_equal(
      weft_world_compact(f.w, &(weft_compact_config_t){.flags = 1u << 9}, NULL),
      WEFT_EINVAL);
  assert_int_equal(
      weft_world_compact(f.w, &(weft_compact_config_t){.shrink_percent = 101},
                         NULL),
      WEFT_EINVAL);
  assert_int_equal(weft_world_compact(NULL, NULL, NULL), WEFT_EINVAL);
  assert_int_equal(wt_stats(f.w).archetypes, n);
  /* Outside all of them it works. */
  assert_int_equal(compact(f.w, &prune_all).pruned, 1);
  weft_world_destroy(f.w);
}

static int add_one(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)ctx;
  uint32_t *a = weft_iter_column(chunk, 0);
  for (uint32_t r = 0; r < chunk->count; r++)
    a[r]++;
  return 0;
}

/* A query system keeps running over the right rows after a prune and a
 * shrink, including rows in an archetype at a reused id. */
static void test_compact_systems_survive(void **state) {
  (void)state;
  cw_t f = cw_new(WEFT_CHUNK_SIZE_MIN);
  weft_system_t id = 0;
  assert_int_equal(
      weft_system_register(f.w,
                           &(weft_system_desc_t){.name = "inc",
                                                 .phase = WEFT_PHASE_PRE_UPDATE,
                                                 .query.include = {f.a},
                                                 .run = add_one},
                           &id),
      WEFT_OK);
  const weft_component_t a[] = {f.a, 0}, ab[] = {f.a, f.b, 0},
                         ad[] = {f.a, f.d, 0};
  weft_entity_t es[2000];
  for (uint32_t i = 0; i < 2000; i++)
    es[i] = spawn_v(&f, a, 0);
  weft_entity_t g = spawn_v(&f, ab, 0);
  assert_int_equal(weft_world_run_phase(f.w, WEFT_PHASE_PRE_UPDATE, 0.0),
                   WEFT_OK);
  assert_int_equal(weft_despawn(f.w, g), WEFT_OK);
  for (uint32_t i = 100; i < 2000; i++)
    assert_int_equal(weft_despawn(f.w, es[i]), WEFT_OK);
  weft_compact_stats_t st = compact(f.w, &prune_all);
  assert_int_equal(st.pruned, 1);
  assert_true(st.rebuilt >= 1);
  weft_entity_t x = spawn_v(&f, ad, 50);
  assert_int_equal(weft_world_run_phase(f.w, WEFT_PHASE_PRE_UPDATE, 0.0),
                   WEFT_OK);
  uint32_t v = 0;
  for (uint32_t i = 0; i < 100; i++) {
    assert_int_equal(weft_read(f.w, es[i], f.a, &v), WEFT_OK);
    assert_int_equal(v, 2);
  }
  assert_int_equal(weft_read(f.w, x, f.a, &v), WEFT_OK);
  assert_int_equal(v, 51);
  weft_world_destroy(f.w);
}

typedef struct seen_t {
  uint32_t deleted[8];
  uint32_t ndeleted;
  uint32_t ncomps;
  uint32_t entered;
} seen_t;

static void on_deleted(weft_world_t *w, const weft_event_t *ev, void *user) {
  (void)w;
  seen_t *s = user;
  assert_int_equal(ev->kind, WEFT_EVENT_ARCHETYPE_DELETED);
  if (s->ndeleted < 8)
    s->deleted[s->ndeleted++] = ev->archetype;
  s->ncomps += ev->ncomponents;
}

static void on_enter(weft_world_t *w, const weft_event_t *ev, void *user) {
  (void)w;
  (void)ev;
  ((seen_t *)user)->entered++;
}

/* ARCHETYPE_DELETED names each pruned archetype; an observer filtering on
 * a pruned id never fires for the archetype that reuses it. */
static void test_compact_observer_events(void **state) {
  (void)state;
  cw_t f = cw_new(0);
  const weft_component_t a[] = {f.a, 0}, ab[] = {f.a, f.b, 0},
                         abc[] = {f.a, f.b, f.c, 0};
  spawn_v(&f, a, 1);
  weft_entity_t g1 = spawn_v(&f, ab, 2), g2 = spawn_v(&f, abc, 3);
  const uint32_t id1 = arch_of(&f, g1), id2 = arch_of(&f, g2);
  seen_t s;
  memset(&s, 0, sizeof s);
  weft_observer_t *od = NULL, *oe = NULL;
  assert_int_equal(
      weft_observer_create(
          f.w,
          &(weft_observer_desc_t){.events = WEFT_EVENT_ARCHETYPE_DELETED,
                                  .fn = on_deleted,
                                  .user = &s},
          &od),
      WEFT_OK);
  assert_int_equal(
      weft_observer_create(
          f.w,
          &(weft_observer_desc_t){.events = WEFT_EVENT_ARCHETYPE_ENTER,
                                  .fn = on_enter,
                                  .user = &s,
                                  .archetype = id1},
          &oe),
      WEFT_OK);
  assert_int_equal(weft_despawn(f.w, g1), WEFT_OK);
  assert_int_equal(weft_despawn(f.w, g2), WEFT_OK);
  assert_int_equal(compact(f.w, &prune_all).pruned, 2);
  assert_int_equal(s.ndeleted, 2);
  assert_int_equal(s.deleted[0], id1);
  assert_int_equal(s.deleted[1], id2);
  assert_int_equal(s.ncomps, 5);
  weft_entity_t x = spawn_v(&f, (const weft_component_t[]){f.c, 0}, 4);
  assert_int_equal(arch_of(&f, x), id1);
  assert_int_equal(s.entered, 0);
  weft_observer_destroy(oe);
  weft_observer_destroy(od);
  weft_world_destroy(f.w);
}

/* Values and dirty bits of a tracked component survive a shrink that
 * moves rows into a new segment. */
static void test_compact_values_and_dirty_survive(void **state) {
  (void)state;
  cw_t f = cw_new(WEFT_CHUNK_SIZE_MIN);
  weft_component_t tr = wt_register_tracked(f.w, "tracked", sizeof(uint32_t));
  const weft_component_t l[] = {f.a, tr, 0};
  enum { N = 5000 };
  static weft_entity_t es[N];
  /* One segment for all: the survivors' rows must move to shrink it. */
  assert_int_equal(weft_spawn_batch(f.w, N, l, NULL, NULL, es), WEFT_OK);
  for (uint32_t i = 0; i < N; i++) {
    assert_int_equal(weft_set(f.w, es[i], f.a, &i), WEFT_OK);
    assert_int_equal(weft_set(f.w, es[i], tr, &i), WEFT_OK);
  }
  assert_int_equal(weft_world_clear_dirty(f.w), WEFT_OK);
  wt_rng_t r = wt_rng(7);
  static bool alive[N], dirty[N];
  for (uint32_t i = 0; i < N; i++) {
    alive[i] = !wt_chance(&r, 9, 10);
    if (!alive[i])
      assert_int_equal(weft_despawn(f.w, es[i]), WEFT_OK);
  }
  for (uint32_t i = 0; i < N; i++) {
    dirty[i] = alive[i] && wt_chance(&r, 1, 3);
    uint32_t v = i * 3u;
    if (dirty[i])
      assert_int_equal(weft_set(f.w, es[i], tr, &v), WEFT_OK);
  }
  const uint64_t digest = weft_world_digest(f.w);
  uint32_t k = 0;
  while (!alive[k])
    k++;
  const void *at = weft_get(f.w, es[k], f.a);
  assert_non_null(at);
  weft_compact_stats_t st = compact(f.w, NULL);
  assert_int_equal(st.pruned, 0);
  assert_int_equal(st.rebuilt, 1);
  assert_int_equal(weft_world_digest(f.w), digest);
  assert_ptr_not_equal(weft_get(f.w, es[k], f.a), at); /* rows moved */
  for (uint32_t i = 0; i < N; i++) {
    assert_int_equal(weft_is_alive(f.w, es[i]), alive[i]);
    if (!alive[i])
      continue;
    uint32_t a = 0, t = 0;
    assert_int_equal(weft_read(f.w, es[i], f.a, &a), WEFT_OK);
    assert_int_equal(weft_read(f.w, es[i], tr, &t), WEFT_OK);
    assert_int_equal(a, i);
    assert_int_equal(t, dirty[i] ? i * 3u : i);
    assert_int_equal(weft_is_dirty(f.w, es[i], tr), dirty[i]);
  }
  weft_world_destroy(f.w);
}

/* Rows a system marked dirty as whole chunks (one flag per chunk, not a
 * byte per row) stay dirty when a shrink moves their chunks. */
static void test_compact_chunk_dirty_flags_survive(void **state) {
  (void)state;
  cw_t f = cw_new(WEFT_CHUNK_SIZE_MIN);
  weft_component_t tr = wt_register_tracked(f.w, "tracked", sizeof(uint32_t));
  wt_touch_system(f.w, tr);
  const weft_component_t l[] = {f.a, tr, 0};
  enum { N = 5000, KEEP = N / 10 };
  static weft_entity_t es[N];
  assert_int_equal(weft_spawn_batch(f.w, N, l, NULL, NULL, es), WEFT_OK);
  assert_int_equal(weft_world_clear_dirty(f.w), WEFT_OK);
  assert_false(weft_is_dirty(f.w, es[0], tr));
  assert_int_equal(weft_world_run_phase(f.w, WEFT_PHASE_PRE_UPDATE, 0.0),
                   WEFT_OK);
  /* From the back: the first chunks keep their rows and their flags. */
  for (uint32_t i = N; i-- > KEEP;)
    assert_int_equal(weft_despawn(f.w, es[i]), WEFT_OK);
  weft_compact_stats_t st = compact(f.w, NULL);
  assert_int_equal(st.rebuilt, 1);
  for (uint32_t i = 0; i < KEEP; i++)
    assert_true(weft_is_dirty(f.w, es[i], tr));
  assert_int_equal(weft_world_clear_dirty(f.w), WEFT_OK);
  for (uint32_t i = 0; i < KEEP; i++)
    assert_false(weft_is_dirty(f.w, es[i], tr));
  weft_world_destroy(f.w);
}

/* After a mass despawn a shrink releases chunk memory; the world keeps
 * working (spawns, reads, queries) and grows again. */
static void test_compact_shrink_releases_memory(void **state) {
  (void)state;
  cw_t f = cw_new(WEFT_CHUNK_SIZE_MIN);
  const weft_component_t l[] = {f.a, f.b, 0};
  enum { N = 60000 };
  weft_entity_t *es = malloc(N * sizeof(*es));
  assert_non_null(es);
  assert_int_equal(weft_spawn_batch(f.w, N, l, NULL, NULL, es), WEFT_OK);
  for (uint32_t i = 0; i < N; i++) {
    uint32_t v = i;
    assert_int_equal(weft_set(f.w, es[i], f.a, &v), WEFT_OK);
  }
  for (uint32_t i = 0; i < N; i++)
    if (i % 10 != 0)
      assert_int_equal(weft_despawn(f.w, es[i]), WEFT_OK);
  const weft_world_stats_t s0 = wt_stats(f.w);
  const uint64_t digest = weft_world_digest(f.w);
  /* NO_SHRINK: nothing moves. */
  weft_compact_stats_t st =
      compact(f.w, &(weft_compact_config_t){.flags = WEFT_COMPACT_NO_SHRINK});
  assert_int_equal(st.rebuilt, 0);
  assert_int_equal(st.bytes_released, 0);
  st = compact(f.w, NULL);
  const weft_world_stats_t s1 = wt_stats(f.w);
  assert_int_equal(st.rebuilt, 1);
  assert_int_equal(s1.chunk_bytes + st.bytes_released, s0.chunk_bytes);
  assert_true(s1.chunk_bytes * 4 < s0.chunk_bytes);
  assert_int_equal(s1.chunks_spare, 0);
  assert_int_equal(s1.chunks_live, s0.chunks_live);
  assert_int_equal(st.chunks_released, s0.chunks_spare);
  assert_int_equal(weft_world_digest(f.w), digest);
  weft_query_t *q = NULL;
  assert_int_equal(
      weft_query_create(f.w, &(weft_query_desc_t){.include = {f.a}}, &q),
      WEFT_OK);
  uint32_t rows;
  uint64_t expect = 0;
  for (uint32_t i = 0; i < N; i += 10)
    expect += i;
  assert_int_equal(sum_a(q, &rows), expect);
  assert_int_equal(rows, N / 10);
  /* Grows again past its old size. */
  assert_int_equal(weft_spawn_batch(f.w, N, l, NULL, NULL, es), WEFT_OK);
  assert_int_equal(weft_query_count(q), N + N / 10);
  for (uint32_t i = 0; i < N; i += 997)
    assert_int_equal(weft_despawn(f.w, es[i]), WEFT_OK);
  wt_check_slot_invariant(f.w);
  free(es);
  weft_world_destroy(f.w);
}

/* Freed chunk ids are issued again: a world that grows and shrinks in
 * cycles, compacting each time, keeps within the ids of one cycle. */
static void test_compact_chunk_ids_reused(void **state) {
  (void)state;
  cw_t f = cw_new(WEFT_CHUNK_SIZE_MIN);
  const weft_component_t l[] = {f.a, f.b, 0}, keep[] = {f.a, 0};
  enum { N = 20000 };
  static weft_entity_t es[N];
  weft_entity_t k = spawn_v(&f, keep, 77);
  uint32_t issued = 0;
  for (uint32_t cycle = 0; cycle < 12; cycle++) {
    assert_int_equal(weft_spawn_batch(f.w, N, l, NULL, NULL, es), WEFT_OK);
    /* Half of the cycles keep a few rows: rows move, not just trim. */
    const uint32_t kept = cycle % 2 ? 500 : 0;
    for (uint32_t i = kept; i < N; i++)
      assert_int_equal(weft_despawn(f.w, es[i]), WEFT_OK);
    /* Pages kept resident or handed back: the same ids either way. */
    weft_compact_stats_t st = compact(
        f.w, &(weft_compact_config_t){
                 .flags = cycle % 3 ? 0u : (uint32_t)WEFT_COMPACT_KEEP_PAGES});
    assert_true(st.chunks_released > 0);
    if (cycle == 1)
      issued = f.w->chunks.count;
    if (cycle > 1)
      assert_int_equal(f.w->chunks.count, issued);
    for (uint32_t i = 0; i < kept; i++)
      assert_int_equal(weft_despawn(f.w, es[i]), WEFT_OK);
  }
  uint32_t v = 0;
  assert_int_equal(weft_read(f.w, k, f.a, &v), WEFT_OK);
  assert_int_equal(v, 77);
  wt_check_slot_invariant(f.w);
  weft_world_destroy(f.w);
}

/*
 * A random program of spawns, adds, removes and despawns over many
 * signatures, with or without compactions in the middle: the digest at
 * each step matches, and so does the end; components, values and a
 * query's count agree with a simple oracle at every compaction.
 */
enum { ORACLE_CAP = 60 };

/* The oracle of run_program(): per live entity its components (bit j for
 * ids[j]) and its value of a. */
typedef struct oracle_t {
  weft_entity_t es[ORACLE_CAP];
  uint8_t mask[ORACLE_CAP];
  uint32_t va[ORACLE_CAP];
  uint32_t n;
} oracle_t;

/* The world agrees with the oracle: components, values of a, and the
 * count of a query over b made before any compaction. */
static void check_oracle(const cw_t *f, const weft_component_t *ids,
                         const oracle_t *o, const weft_query_t *qb) {
  uint32_t with_b = 0;
  for (uint32_t i = 0; i < o->n; i++) {
    for (uint32_t j = 0; j < 5; j++)
      assert_int_equal(weft_has(f->w, o->es[i], ids[j]), o->mask[i] >> j & 1);
    with_b += o->mask[i] >> 1 & 1;
    uint32_t v = 0;
    if (o->mask[i] & 1) {
      assert_int_equal(weft_read(f->w, o->es[i], f->a, &v), WEFT_OK);
      assert_int_equal(v, o->va[i]);
    }
  }
  assert_int_equal(weft_query_count(qb), with_b);
}

static uint64_t run_program(bool compacting, uint64_t *mid) {
  cw_t f = cw_new(WEFT_CHUNK_SIZE_MIN);
  const weft_component_t ids[] = {f.a, f.b, f.c, f.d, f.t};
  /* Few entities over 32 signatures: many archetypes empty out. */
  enum { CAP = ORACLE_CAP, BULK = 3000 };
  static oracle_t o;
  static weft_entity_t bulk[BULK];
  weft_entity_t *es = o.es;
  const weft_component_t ac[] = {f.a, f.c, 0};
  uint32_t n = 0;
  wt_rng_t r = wt_rng(99);
  weft_query_t *qb = NULL;
  assert_int_equal(
      weft_query_create(f.w, &(weft_query_desc_t){.include = {f.b}}, &qb),
      WEFT_OK);
  *mid = 0;
  for (uint32_t step = 0; step < 20000; step++) {
    /* A crowd that mostly goes again: chunk lists for the shrink. */
    if (step % 5000 == 1000)
      assert_int_equal(weft_spawn_batch(f.w, BULK, ac, NULL, NULL, bulk),
                       WEFT_OK);
    if (step % 5000 == 3000)
      for (uint32_t i = 0; i < BULK; i++)
        if (i % 16 != (step / 5000) % 16)
          assert_int_equal(weft_despawn(f.w, bulk[i]), WEFT_OK);
    uint32_t op = wt_below(&r, 10);
    if (op < 4 && n < CAP) {
      weft_component_t l[6];
      uint32_t k = 0;
      for (uint32_t j = 0; j < 5; j++)
        if (wt_chance(&r, 1, 2))
          l[k++] = ids[j];
      l[k] = 0;
      o.mask[n] = 0;
      for (uint32_t j = 0; j < k; j++)
        for (uint32_t b = 0; b < 5; b++)
          o.mask[n] |= (uint8_t)((l[j] == ids[b]) << b);
      o.va[n] = step;
      es[n++] = spawn_v(&f, l, step);
    } else if (op < 7 && n) {
      uint32_t i = wt_below(&r, n), j = wt_below(&r, 5);
      if (o.mask[i] >> j & 1) {
        assert_int_equal(weft_remove(f.w, es[i], ids[j]), WEFT_OK);
      } else {
        assert_int_equal(weft_add(f.w, es[i], ids[j], NULL), WEFT_OK);
        if (j == 0)
          o.va[i] = 0;
      }
      o.mask[i] ^= (uint8_t)(1u << j);
    } else if (n) {
      uint32_t i = wt_below(&r, n);
      assert_int_equal(weft_despawn(f.w, es[i]), WEFT_OK);
      n--;
      es[i] = es[n];
      o.mask[i] = o.mask[n];
      o.va[i] = o.va[n];
    }
    o.n = n;
    if (step % 5000 == 4999) {
      uint64_t before = weft_world_digest(f.w);
      *mid ^= before;
      if (compacting) {
        weft_compact_stats_t st = compact(
            f.w,
            &(weft_compact_config_t){.flags = WEFT_COMPACT_EMPTY_ARCHETYPES,
                                     .shrink_percent = 100});
        assert_true(st.pruned > 0);
        assert_true(st.rebuilt > 0);
        assert_int_equal(weft_world_digest(f.w), before);
      }
      check_oracle(&f, ids, &o, qb);
    }
  }
  check_oracle(&f, ids, &o, qb);
  uint64_t d = weft_world_digest(f.w);
  weft_world_destroy(f.w);
  return d;
}

static void test_compact_digest_unchanged(void **state) {
  (void)state;
  uint64_t mid_plain, mid_compact;
  uint64_t plain = run_program(false, &mid_plain);
  uint64_t compacted = run_program(true, &mid_compact);
  assert_int_equal(mid_plain, mid_compact);
  assert_int_equal(plain, compacted);
}

static int scale_b(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)ctx;
  const uint32_t *a = weft_iter_column(chunk, 0);
  uint64_t *b = weft_iter_column(chunk, 1);
  for (uint32_t r = 0; r < chunk->count; r++)
    b[r] = b[r] * 31u + a[r];
  return 0;
}

/*
 * Frames on a pool of @p workers (0: inline) with systems over many
 * signatures, direct despawns and spawns between frames and, when
 * @p compacting, a compaction every few frames: the final digest.
 */
static uint64_t run_frames(uint32_t workers, bool compacting) {
  weft_pool_t *pool = NULL;
  weft_world_t *w = wt_world_pooled(workers, WEFT_CHUNK_SIZE_MIN, &pool);
  if (workers)
    wt_dispatch_everything(w);
  const weft_component_t a = wt_register(w, "a", sizeof(uint32_t), 0);
  const weft_component_t b = wt_register(w, "b", sizeof(uint64_t), 0);
  weft_component_t tags[6];
  char name[8];
  for (uint32_t i = 0; i < 6; i++) {
    snprintf(name, sizeof name, "t%u", i);
    tags[i] = wt_register_tag(w, name);
  }
  weft_system_t id = 0;
  assert_int_equal(weft_system_register(
                       w,
                       &(weft_system_desc_t){
                           .name = "inc", .query.include = {a}, .run = add_one},
                       &id),
                   WEFT_OK);
  assert_int_equal(weft_system_register(
                       w,
                       &(weft_system_desc_t){.name = "scale",
                                             .query.include = {a, b},
                                             .term_access = {WEFT_ACCESS_READ},
                                             .run = scale_b},
                       &id),
                   WEFT_OK);
  /* Batches: one segment per signature, which a shrink must rebuild. */
  enum { KINDS = 16, PER = 256, N = KINDS * PER };
  static weft_entity_t es[N];
  wt_rng_t r = wt_rng(5);
  for (uint32_t i = 0; i < KINDS; i++) {
    weft_component_t l[9] = {a, b};
    uint32_t k = 2;
    for (uint32_t t = 0; t < 4; t++)
      if (i >> t & 1)
        l[k++] = tags[t];
    l[k] = 0;
    assert_int_equal(weft_spawn_batch(w, PER, l, NULL, NULL, es + i * PER),
                     WEFT_OK);
  }
  uint32_t rebuilt = 0;
  for (uint32_t frame = 0; frame < 12; frame++) {
    assert_int_equal(weft_world_run_phase(w, WEFT_PHASE_FIXED_UPDATE, 0.0),
                     WEFT_OK);
    /* A third of the survivors go; their signatures empty out. */
    for (uint32_t i = 0; i < N; i++)
      if (weft_is_alive(w, es[i]) && wt_chance(&r, 1, 3))
        assert_int_equal(weft_despawn(w, es[i]), WEFT_OK);
    if (frame % 4 == 3) {
      for (uint32_t i = 0; i < 50; i++)
        wt_spawn_with(w, (const weft_component_t[]){a, b, tags[4 + i % 2], 0},
                      NULL);
    }
    if (compacting && frame % 3 == 2)
      rebuilt += compact(w, &prune_all).rebuilt;
  }
  assert_true(!compacting || rebuilt > 0);
  uint64_t d = weft_world_digest(w);
  weft_world_destroy(w);
  if (pool)
    weft_pool_destroy(pool);
  return d;
}

/* Results do not depend on compaction nor on the worker count. */
static void test_compact_pooled_frames(void **state) {
  (void)state;
  const uint64_t plain = run_frames(0, false);
  assert_int_equal(run_frames(0, true), plain);
  assert_int_equal(run_frames(3, true), plain);
  assert_int_equal(run_frames(3, false), plain);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_compact_prunes_empty_archetypes_with_flag),
      cmocka_unit_test(test_compact_prunes_dead_target_pairs),
      cmocka_unit_test(test_compact_reuses_ids_lowest_first),
      cmocka_unit_test(test_compact_rollback_returns_reused_id),
      cmocka_unit_test(test_compact_queries_survive_and_adopt),
      cmocka_unit_test(test_compact_group_by),
      cmocka_unit_test(test_compact_temp_query),
      cmocka_unit_test(test_compact_busy_and_bad_input),
      cmocka_unit_test(test_compact_systems_survive),
      cmocka_unit_test(test_compact_observer_events),
      cmocka_unit_test(test_compact_values_and_dirty_survive),
      cmocka_unit_test(test_compact_chunk_dirty_flags_survive),
      cmocka_unit_test(test_compact_shrink_releases_memory),
      cmocka_unit_test(test_compact_chunk_ids_reused),
      cmocka_unit_test(test_compact_digest_unchanged),
      cmocka_unit_test(test_compact_pooled_frames),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
