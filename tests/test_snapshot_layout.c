/* SPDX-License-Identifier: MIT */
/*
 * Snapshots of worlds whose layout the later modules changed: dense
 * relations (pairs in archetype signatures, payload columns) beside
 * sparse ones, archetype ids with holes left by weft_world_compact() and
 * reused out of creation order, chunk ids reissued from the free stack,
 * shrunk chunk lists, and all-rows-dirty flags. A loaded world must equal
 * the saved one (digest, handles, query rows and their order) and go on
 * exactly as it would have, checked against a model of the edges.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#define XXH_INLINE_ALL
#include <xxhash.h>
#include "support/snapshot_test.h"
#include "support/weft_test.h"
#include "weft.h"

#include "core/world.h" /* w->alloc: the world's heap */

/* ---- the world: a component, a tracked one, four relations -------------- */

typedef struct pos_t {
  float x, y, z;
} pos_t;

typedef struct rx_t {
  weft_world_t *w;
  weft_component_t pos, hp, owns, follows, childof, likes;
} rx_t;

static weft_component_t relation(weft_world_t *w, const char *name,
                                 uint32_t size, uint32_t flags) {
  weft_relation_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.size = size;
  d.alignment = size ? size : 0;
  d.flags = flags;
  weft_component_t id = 0;
  assert_int_equal(weft_relation_register(w, &d, &id), WEFT_OK);
  return id;
}

static rx_t rx_new(uint8_t tag) {
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.world_tag = tag;
  cfg.chunk_size = 4096;
  rx_t x;
  x.w = wt_world_new(&cfg);
  static const weft_field_desc_t pf[] = {
      {"x", offsetof(pos_t, x), 4, WEFT_FIELD_F32},
      {"y", offsetof(pos_t, y), 4, WEFT_FIELD_F32},
      {"z", offsetof(pos_t, z), 4, WEFT_FIELD_F32}};
  weft_component_desc_t d = {.name = "pos",
                             .size = sizeof(pos_t),
                             .alignment = 4,
                             .fields = pf,
                             .field_count = 3};
  assert_int_equal(weft_component_register(x.w, &d, &x.pos), WEFT_OK);
  weft_component_desc_t h = {.name = "hp",
                             .size = 4,
                             .alignment = 4,
                             .flags = WEFT_COMPONENT_TRACK_DIRTY};
  assert_int_equal(weft_component_register(x.w, &h, &x.hp), WEFT_OK);
  x.owns = relation(x.w, "owns", 0, 0);
  x.follows = relation(x.w, "follows", 4, WEFT_RELATION_EXCLUSIVE);
  x.childof = relation(x.w, "childof", 0, WEFT_RELATION_EXCLUSIVE);
  x.likes = relation(x.w, "likes", 8, WEFT_RELATION_SPARSE);
  return x;
}

/* ---- the model ------------------------------------------------------------
 */

#define NE 240u  /* entity slots of the model */
#define NHUB 12u /* the first NHUB are the targets */

typedef struct model_t {
  weft_entity_t e[NE];
  bool alive[NE];
  uint16_t owns[NE];  /* hub bits */
  uint16_t likes[NE]; /* hub bits; the payload is src * 1000 + hub */
  int8_t follows[NE]; /* hub, or -1 */
  uint32_t weight[NE];
  int8_t child[NE]; /* hub, or -1 */
} model_t;

static weft_entity_t spawn_in(rx_t *x, uint32_t i) {
  weft_component_t comps[] = {x->pos, x->hp, 0};
  pos_t p = {(float)i, 1.0f, 2.0f};
  uint32_t hp = 100 + i;
  const void *vals[] = {&p, &hp};
  return wt_spawn_with(x->w, comps, vals);
}

/* Spawns into model slot i in every world: the same handle each. */
static void spawn_all(rx_t *x, uint32_t nw, model_t *m, uint32_t i) {
  m->e[i] = spawn_in(&x[0], i);
  for (uint32_t k = 1; k < nw; k++)
    assert_int_equal(spawn_in(&x[k], i), m->e[i]);
  m->alive[i] = true;
  m->owns[i] = m->likes[i] = 0;
  m->follows[i] = m->child[i] = -1;
}

static void model_init(rx_t *x, uint32_t nw, model_t *m) {
  memset(m, 0, sizeof *m);
  for (uint32_t i = 0; i < NE; i++)
    spawn_all(x, nw, m, i);
}

/* Entity i died: its edges go, and every edge to it if it is a hub. */
static void model_kill(model_t *m, uint32_t i) {
  m->alive[i] = false;
  for (uint32_t s = 0; i < NHUB && s < NE; s++) {
    m->owns[s] &= (uint16_t) ~(1u << i);
    m->likes[s] &= (uint16_t) ~(1u << i);
    if (m->follows[s] == (int8_t)i)
      m->follows[s] = -1;
    if (m->child[s] == (int8_t)i)
      m->child[s] = -1;
  }
}

/* One random operation, done in every world (every draw comes first). */
static void step(rx_t *x, uint32_t nw, model_t *m, wt_rng_t *r) {
  uint32_t i = NHUB + wt_below(r, NE - NHUB), h = wt_below(r, NHUB);
  uint32_t op = wt_below(r, 12);
  if (op == 8 && wt_below(r, 64) != 0)
    op = 9; /* hubs die rarely: a few of them in a run */
  if (!m->alive[i]) {
    spawn_all(x, nw, m, i);
    return;
  }
  const bool hub = m->alive[h];
  const weft_entity_t s = m->e[i], t = m->e[h];
  const uint16_t bit = (uint16_t)(1u << h);
  const uint32_t weight = i * 7 + h + op;
  const uint64_t like = (uint64_t)i * 1000 + h;
  for (uint32_t k = 0; k < nw; k++) {
    weft_world_t *w = x[k].w;
    const rx_t *c = &x[k];
    if (op == 0 && hub)
      assert_int_equal(weft_relation_add(w, s, c->owns, t, NULL), WEFT_OK);
    else if (op == 1 && (m->owns[i] & bit))
      assert_int_equal(weft_relation_remove(w, s, c->owns, t), WEFT_OK);
    else if (op == 2 && hub)
      assert_int_equal(weft_relation_add(w, s, c->follows, t, &weight),
                       WEFT_OK);
    else if (op == 3 && m->follows[i] == (int8_t)h)
      assert_int_equal(weft_relation_remove(w, s, c->follows, t), WEFT_OK);
    else if (op == 4 && hub)
      assert_int_equal(weft_relation_add(w, s, c->childof, t, NULL), WEFT_OK);
    else if (op == 5 && hub)
      assert_int_equal(weft_relation_add(w, s, c->likes, t, &like), WEFT_OK);
    else if (op == 6 && (m->likes[i] & bit))
      assert_int_equal(weft_relation_remove(w, s, c->likes, t), WEFT_OK);
    else if (op == 7)
      assert_int_equal(weft_despawn(w, s), WEFT_OK);
    else if (op == 8 && hub)
      assert_int_equal(weft_despawn(w, t), WEFT_OK);
    else if (op == 9)
      assert_int_equal(weft_set(w, s, c->hp, &weight), WEFT_OK);
  }
  if (op == 0 && hub)
    m->owns[i] |= bit;
  else if (op == 1)
    m->owns[i] &= (uint16_t)~bit;
  else if (op == 2 && hub) {
    m->follows[i] = (int8_t)h;
    m->weight[i] = weight;
  } else if (op == 3 && m->follows[i] == (int8_t)h)
    m->follows[i] = -1;
  else if (op == 4 && hub)
    m->child[i] = (int8_t)h;
  else if (op == 5 && hub)
    m->likes[i] |= bit;
  else if (op == 6)
    m->likes[i] &= (uint16_t)~bit;
  else if (op == 7)
    model_kill(m, i);
  else if (op == 8 && hub)
    model_kill(m, h);
}

/* Rows of pair query (rel, target) in iteration order, hashed with their
 * payloads (rel with a payload column); *n gets the row count. */
static uint64_t pair_rows(weft_world_t *w, weft_component_t rel,
                          weft_entity_t t, bool payload, uint32_t *n) {
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.pairs[0].rel = rel;
  qd.pairs[0].target = t;
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(w, &qd, &q), WEFT_OK);
  weft_iter_t it;
  weft_query_iter(q, &it);
  uint64_t hash = 1469598103934665603ull;
  *n = 0;
  while (weft_iter_next(&it)) {
    const uint32_t *col = payload ? weft_iter_column_of(&it, rel) : NULL;
    if (payload)
      assert_non_null(col);
    for (uint32_t r = 0; r < it.count; r++) {
      hash = (hash ^ it.entities[r]) * 1099511628211ull;
      if (col)
        hash = (hash ^ col[r]) * 1099511628211ull;
    }
    *n += it.count;
  }
  weft_query_destroy(q);
  return hash;
}

/* Checks world w against the model; returns a hash of every pair query's
 * rows in order, so that two worlds can be compared row for row. */
static uint64_t check_model(const rx_t *x, const model_t *m) {
  weft_world_t *w = x->w;
  uint64_t all = 0;
  for (uint32_t h = 0; h < NHUB; h++) {
    if (!m->alive[h])
      continue;
    uint32_t want[3] = {0, 0, 0}, got[3];
    for (uint32_t i = NHUB; i < NE; i++) {
      if (!m->alive[i])
        continue;
      want[0] += (m->owns[i] >> h) & 1u;
      want[1] += m->follows[i] == (int8_t)h;
      want[2] += m->child[i] == (int8_t)h;
    }
    all = all * 31 + pair_rows(w, x->owns, m->e[h], false, &got[0]);
    all = all * 31 + pair_rows(w, x->follows, m->e[h], true, &got[1]);
    all = all * 31 + pair_rows(w, x->childof, m->e[h], false, &got[2]);
    for (int k = 0; k < 3; k++)
      if (want[k] != got[k])
        fail_msg("hub %u relation %d: %u rows, the model has %u", h, k, got[k],
                 want[k]);
  }
  for (uint32_t i = NHUB; i < NE; i++) {
    if (!m->alive[i])
      continue;
    for (uint32_t h = 0; h < NHUB; h++) {
      weft_entity_t s = m->e[i], t = m->e[h];
      bool alive = m->alive[h];
      assert_int_equal(weft_relation_has(w, s, x->owns, t),
                       alive && ((m->owns[i] >> h) & 1u));
      assert_int_equal(weft_relation_has(w, s, x->childof, t),
                       alive && m->child[i] == (int8_t)h);
      bool likes = alive && ((m->likes[i] >> h) & 1u);
      assert_int_equal(weft_relation_has(w, s, x->likes, t), likes);
      const uint64_t *lv = weft_relation_get(w, s, x->likes, t);
      if (likes)
        assert_int_equal(*lv, (uint64_t)i * 1000 + h);
      bool follows = alive && m->follows[i] == (int8_t)h;
      assert_int_equal(weft_relation_has(w, s, x->follows, t), follows);
      const uint32_t *fv = weft_relation_get(w, s, x->follows, t);
      if (follows) {
        assert_non_null(fv);
        assert_int_equal(*fv, m->weight[i]);
      }
    }
  }
  return all;
}

static void compact(weft_world_t *w, uint32_t flags) {
  weft_compact_config_t c = {.flags = flags};
  assert_int_equal(weft_world_compact(w, &c, NULL), WEFT_OK);
}

/* Dense relations with and without payload, exclusive and not, beside a
 * sparse one, after compactions that pruned the archetypes of dead
 * targets: the loaded world has the digest, the edges, the pair query
 * rows in their order, and the same future under the same operations. */
static void test_snapshot_layout_dense_relations_round_trip(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 3; seed++) {
    rx_t a = rx_new(3);
    model_t *m = calloc(1, sizeof *m);
    assert_non_null(m);
    model_init(&a, 1, m);
    wt_rng_t r = wt_rng(seed);
    for (uint32_t s = 0; s < 4000; s++) {
      step(&a, 1, m, &r);
      if (s % 700 == 699)
        compact(a.w, s % 1400 == 699 ? WEFT_COMPACT_EMPTY_ARCHETYPES : 0);
    }
    uint32_t hubs = 0;
    for (uint32_t h = 0; h < NHUB; h++)
      hubs += m->alive[h];
    assert_true(hubs > 0 && hubs < NHUB); /* dead targets' archetypes too */
    uint64_t rows_a = check_model(&a, m);
    mem_t snap = save(a.w);
    rx_t x[2] = {a, rx_new(5)};
    load_ok(x[1].w, &snap);
    assert_int_equal(check_model(&x[1], m), rows_a);
    assert_int_equal(weft_world_digest(x[1].w), weft_world_digest(a.w));
    /* The same operations, compactions included, in both worlds. */
    for (uint32_t s = 0; s < 2000; s++) {
      step(x, 2, m, &r);
      if (s % 500 == 499) {
        compact(x[0].w, WEFT_COMPACT_EMPTY_ARCHETYPES);
        compact(x[1].w, WEFT_COMPACT_EMPTY_ARCHETYPES);
      }
      /* Every step: a target's death walks its sources in the saved
       * order, which only the rows' order afterwards shows. */
      if (weft_world_digest(x[0].w) != weft_world_digest(x[1].w))
        fail_msg("seed %llu: the worlds part at step %u",
                 (unsigned long long)seed, s);
    }
    assert_int_equal(check_model(&x[0], m), check_model(&x[1], m));
    assert_int_equal(weft_world_digest(x[0].w), weft_world_digest(x[1].w));
    /* A rewind: a world loads its own past (chunks refilled in place when
     * the layout is unchanged, rebuilt otherwise). */
    uint64_t before = weft_world_digest(x[1].w);
    mem_t past = save(x[1].w);
    model_t *m2 = malloc(sizeof *m2);
    assert_non_null(m2);
    memcpy(m2, m, sizeof *m);
    for (uint32_t s = 0; s < 40; s++)
      step(&x[1], 1, m2, &r);
    load_ok(x[1].w, &past);
    assert_int_equal(weft_world_digest(x[1].w), before);
    assert_int_equal(check_model(&x[1], m), check_model(&x[0], m));
    free(m2);
    free(past.p);
    free(snap.p);
    free(m);
    weft_world_destroy(x[0].w);
    weft_world_destroy(x[1].w);
  }
}

/* ---- ids with holes --------------------------------------------------------
 */

#define NTAGS 6u

typedef struct tx_t {
  weft_world_t *w;
  weft_component_t pos;
  weft_component_t tags[NTAGS];
} tx_t;

static tx_t tx_new(uint8_t tag) {
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.world_tag = tag;
  cfg.chunk_size = 4096;
  tx_t x;
  x.w = wt_world_new(&cfg);
  x.pos = wt_register(x.w, "pos", sizeof(pos_t), 4);
  char name[8];
  for (uint32_t k = 0; k < NTAGS; k++) {
    name[0] = 't';
    name[1] = (char)('0' + k);
    name[2] = 0;
    x.tags[k] = wt_register_tag(x.w, name);
  }
  return x;
}

/* Spawns n entities of the signature pos + the tags of bits sig. */
static void spawn_sig(tx_t *x, uint32_t nw, uint32_t sig, uint32_t n,
                      weft_entity_t *out) {
  for (uint32_t k = 0; k < nw; k++) {
    weft_component_t comps[NTAGS + 2] = {x[k].pos};
    uint32_t c = 1;
    for (uint32_t b = 0; b < NTAGS; b++)
      if (sig >> b & 1u)
        comps[c++] = x[k].tags[b];
    for (uint32_t i = 0; i < n; i++) {
      weft_entity_t e = wt_spawn_with(x[k].w, comps, NULL);
      if (k == 0)
        out[i] = e;
      else
        assert_int_equal(e, out[i]);
    }
  }
}

/* Entities of tag t0 in iteration order (creation order of archetypes). */
static uint64_t t0_order(const tx_t *x) {
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = x->tags[0];
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(x->w, &qd, &q), WEFT_OK);
  weft_iter_t it;
  weft_query_iter(q, &it);
  uint64_t h = 7;
  while (weft_iter_next(&it))
    for (uint32_t r = 0; r < it.count; r++)
      h = (h ^ it.entities[r]) * 1099511628211ull;
  weft_query_destroy(q);
  return h;
}

/* Despawns every entity of signature sig (handles from spawn_sig). */
static void kill_all(tx_t *x, uint32_t nw, const weft_entity_t *es,
                     uint32_t n) {
  for (uint32_t k = 0; k < nw; k++)
    for (uint32_t i = 0; i < n; i++)
      assert_int_equal(weft_despawn(x[k].w, es[i]), WEFT_OK);
}

/* Every world has a's digest, archetype count and t0 iteration order. */
static void same_worlds(const tx_t *x, uint32_t nw) {
  for (uint32_t k = 1; k < nw; k++) {
    assert_int_equal(weft_world_digest(x[k].w), weft_world_digest(x[0].w));
    assert_int_equal(wt_stats(x[k].w).archetypes, wt_stats(x[0].w).archetypes);
    assert_int_equal(t0_order(&x[k]), t0_order(&x[0]));
  }
}

#define NSIG (1u << NTAGS)
#define PER_SIG 24u

/* Archetypes pruned and their ids reused out of creation order, chunk ids
 * reissued from the free stack, chunk lists shrunk: a load reproduces the
 * ids and creation stamps, so that later spawns land where they would
 * have (digest, handles, iteration order), loaded into a fresh world and
 * into a used one. */
static void test_snapshot_layout_compacted_ids_round_trip(void **state) {
  (void)state;
  tx_t x[3] = {tx_new(4), tx_new(6), tx_new(4)};
  weft_entity_t(*es)[PER_SIG + 600] = calloc(NSIG, sizeof(*es));
  assert_non_null(es);
  for (uint32_t sig = 0; sig < NSIG; sig++)
    spawn_sig(x, 1, sig, PER_SIG, es[sig]);
  /* One long list, mostly emptied: compaction shrinks it. */
  spawn_sig(x, 1, 0, 600, es[0] + PER_SIG);
  kill_all(x, 1, es[0] + 40, 560);
  /* A third of the signatures emptied and pruned, one of them long. */
  spawn_sig(x, 1, 4, 600, es[4] + PER_SIG);
  kill_all(x, 1, es[4] + PER_SIG, 600);
  for (uint32_t sig = 1; sig < NSIG; sig += 3)
    kill_all(x, 1, es[sig], PER_SIG);
  weft_compact_stats_t st;
  weft_compact_config_t cc = {.flags = WEFT_COMPACT_EMPTY_ARCHETYPES};
  assert_int_equal(weft_world_compact(x[0].w, &cc, &st), WEFT_OK);
  assert_true(st.pruned >= NSIG / 3);
  assert_true(st.rebuilt >= 1);
  /* Some come back, newest first: they take the lowest free ids, so ids
   * no longer follow creation order, and holes remain above them. */
  for (uint32_t sig = NSIG - 2; sig > NSIG / 2; sig -= 9)
    spawn_sig(x, 1, sig, PER_SIG, es[sig]);
  /* A long list again: its segments take ids off the free stack, top
   * first, so a segment's ids are not consecutive. */
  spawn_sig(x, 1, 7, 600, es[7] + PER_SIG);
  /* The used world: other signatures, other rows, its own compaction. */
  for (uint32_t sig = 0; sig < NSIG; sig += 5)
    spawn_sig(&x[2], 1, sig, 3 + sig, es[0] + PER_SIG);
  compact(x[2].w, WEFT_COMPACT_EMPTY_ARCHETYPES);

  mem_t m = save(x[0].w);
  load_ok(x[1].w, &m);
  load_ok(x[2].w, &m);
  same_worlds(x, 3);
  /* The same future: new signatures and old ones, deaths, compactions. */
  wt_rng_t r = wt_rng(17);
  for (uint32_t round = 0; round < 12; round++) {
    uint32_t sig = wt_below(&r, NSIG);
    if (wt_chance(&r, 1, 2))
      spawn_sig(x, 3, sig, PER_SIG, es[sig]);
    else
      kill_all(x, 3, es[sig], weft_is_alive(x[0].w, es[sig][0]) ? 1 : 0);
    if (round % 4 == 3)
      for (uint32_t k = 0; k < 3; k++)
        compact(x[k].w, WEFT_COMPACT_EMPTY_ARCHETYPES);
    same_worlds(x, 3);
  }
  /* A rewind of the loaded world to its own past. */
  mem_t past = save(x[1].w);
  const uint64_t before = weft_world_digest(x[1].w);
  kill_all(&x[1], 1, es[NSIG - 2], 3);
  load_ok(x[1].w, &past);
  assert_int_equal(weft_world_digest(x[1].w), before);
  same_worlds(x, 2);
  free(past.p);
  free(m.p);
  free(es);
  for (uint32_t k = 0; k < 3; k++)
    weft_world_destroy(x[k].w);
}

static int write_hp(weft_sysctx_t *ctx, const weft_iter_t *it) {
  (void)ctx;
  (void)it;
  return 0;
}

/* A system that writes a tracked component marks whole chunks dirty with
 * a flag per chunk; a load (into that world, whose chunks are refilled in
 * place, and into a fresh one) leaves no row dirty. */
static void test_snapshot_layout_loaded_rows_are_clean(void **state) {
  (void)state;
  rx_t x[2] = {rx_new(3), rx_new(3)};
  weft_pipeline_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.fixed_dt = 0.1;
  pc.net_dt = -1.0;
  pc.manual_clear = true;
  assert_int_equal(weft_pipeline_configure(x[0].w, &pc), WEFT_OK);
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "snap.write_hp";
  d.phase = WEFT_PHASE_FIXED_UPDATE;
  d.query.include[0] = x[0].hp;
  d.term_access[0] = WEFT_ACCESS_WRITE;
  d.run = write_hp;
  weft_system_t sys;
  assert_int_equal(weft_system_register(x[0].w, &d, &sys), WEFT_OK);
  weft_entity_t es[600];
  for (uint32_t i = 0; i < 600; i++)
    es[i] = spawn_in(&x[0], i);
  assert_int_equal(weft_world_clear_dirty(x[0].w), WEFT_OK);
  mem_t m = save(x[0].w);
  assert_int_equal(weft_world_run_phase(x[0].w, WEFT_PHASE_FIXED_UPDATE, 0.1),
                   WEFT_OK);
  for (uint32_t i = 0; i < 600; i++)
    assert_true(weft_is_dirty(x[0].w, es[i], x[0].hp));
  load_ok(x[0].w, &m);
  load_ok(x[1].w, &m);
  for (uint32_t k = 0; k < 2; k++)
    for (uint32_t i = 0; i < 600; i++) {
      assert_true(weft_is_alive(x[k].w, es[i]));
      assert_false(weft_is_dirty(x[k].w, es[i], x[k].hp));
    }
  assert_int_equal(weft_world_digest(x[0].w), weft_world_digest(x[1].w));
  free(m.p);
  weft_world_destroy(x[0].w);
  weft_world_destroy(x[1].w);
}

/* The payload of section `tag` in snapshot m (its length in *len). */
static uint8_t *section(const mem_t *m, const char *tag, uint64_t *len) {
  size_t at = 32;
  while (at + 16 <= m->n) {
    uint64_t n;
    memcpy(&n, m->p + at + 8, 8);
    if (!memcmp(m->p + at, tag, 4)) {
      *len = n;
      return m->p + at + 16;
    }
    at += 16 + ((n + 7) & ~(uint64_t)7) + 8;
  }
  fail_msg("no section %s", tag);
  return NULL;
}

/* Recomputes the checksum of the section whose payload is at p. */
static void reseal(uint8_t *p, uint64_t len) {
  uint64_t h = XXH3_64bits(p - 16, 16 + len);
  memcpy(p + ((len + 7) & ~(uint64_t)7), &h, 8);
}

/* Loads a damaged copy: refused with WEFT_EFORMAT, the world unchanged. */
static void refused(weft_world_t *w, const mem_t *m) {
  const uint64_t before = weft_world_digest(w);
  weft_snapshot_error_t err;
  assert_int_equal(weft_snapshot_load_memory(w, m->p, m->n, &err),
                   WEFT_EFORMAT);
  assert_string_equal(err.section, "EDGE");
  assert_int_equal(weft_world_digest(w), before);
}

/* Edges that disagree with the rows (a dense edge whose source's row has
 * another pair, reverse positions that are no permutation, an edge whose
 * source lacks the relation) are refused before the world changes,
 * checksums intact. */
static void test_snapshot_layout_edges_must_fit_rows(void **state) {
  (void)state;
  rx_t a = rx_new(3), b = rx_new(3);
  weft_entity_t s = spawn_in(&a, 0), t = spawn_in(&a, 1), u = spawn_in(&a, 2);
  uint32_t v = 5;
  assert_int_equal(weft_relation_add(a.w, s, a.follows, t, &v), WEFT_OK);
  assert_int_equal(weft_relation_add(a.w, u, a.owns, t, NULL), WEFT_OK);
  mem_t m = save(a.w);
  load_ok(b.w, &m);
  assert_int_equal(weft_world_digest(b.w), weft_world_digest(a.w));
  /* EDGE: u64 n, then per edge u64 src, u64 tgt, u32 comp, u32 back, u32
   * size, payload. The first edge is s -> t (slot order). */
  uint64_t len = 0;
  uint8_t *e = section(&m, "EDGE", &len);
  uint64_t n;
  memcpy(&n, e, 8);
  assert_int_equal(n, 2);
  enum {
    EDGE_BYTES = 8 + 32 + 28
  }; /* the count, s -> t (4-byte payload),
        u -> t */
  assert_int_equal(len, EDGE_BYTES);
  uint8_t saved[EDGE_BYTES];
  memcpy(saved, e, EDGE_BYTES);
  memcpy(e + 16, &u, 8); /* s -> u: s's row has the pair (follows, t) */
  reseal(e, len);
  refused(b.w, &m);
  memcpy(e, saved, EDGE_BYTES);
  uint32_t back = 1; /* both edges claim t's reverse position 1 */
  memcpy(e + 8 + 20, &back, 4);
  reseal(e, len);
  refused(b.w, &m);
  memcpy(e, saved, EDGE_BYTES);
  /* The second edge (u owns t) becomes s owns t: s's row lacks owns. */
  memcpy(e + 8 + 32, &s, 8);
  reseal(e, len);
  refused(b.w, &m);
  memcpy(e, saved, EDGE_BYTES);
  reseal(e, len);
  load_ok(b.w, &m);
  assert_int_equal(weft_world_digest(b.w), weft_world_digest(a.w));
  free(m.p);
  weft_world_destroy(a.w);
  weft_world_destroy(b.w);
}

/* ROWS is hashed and its handles checked in one pass: a forged handle
 * under a good checksum is named at its own offset, the same bytes under
 * a stale checksum are damage (reported at the section, as before), and
 * neither changes the world. */
static void test_snapshot_layout_rows_checked_in_one_pass(void **state) {
  (void)state;
  rx_t a = rx_new(3), b = rx_new(3);
  for (uint32_t i = 0; i < 40; i++)
    spawn_in(&a, i % 3);
  mem_t m = save(a.w);
  load_ok(b.w, &m);
  const uint64_t before = weft_world_digest(b.w);
  uint64_t len = 0;
  uint8_t *rows = section(&m, "ROWS", &len);
  assert_true(len >= 8);
  uint8_t saved[8];
  memcpy(saved, rows, 8); /* the first row's handle */
  rows[7] ^= 0x40;        /* another world's tag */
  weft_snapshot_error_t err;
  assert_int_equal(weft_snapshot_load_memory(b.w, m.p, m.n, &err),
                   WEFT_EFORMAT);
  assert_string_equal(err.section, "ROWS");
  assert_non_null(strstr(err.message, "checksum"));
  assert_int_equal(err.offset, (uint64_t)(rows - 16 - m.p));
  assert_int_equal(weft_world_digest(b.w), before);
  reseal(rows, len);
  assert_int_equal(weft_snapshot_load_memory(b.w, m.p, m.n, &err),
                   WEFT_EFORMAT);
  assert_string_equal(err.section, "ROWS");
  assert_non_null(strstr(err.message, "handle"));
  assert_int_equal(err.offset, (uint64_t)(rows - m.p));
  assert_int_equal(weft_world_digest(b.w), before);
  /* Damage after the forged handle still reads as damage. */
  rows[len - 1] ^= 1;
  assert_int_equal(weft_snapshot_load_memory(b.w, m.p, m.n, &err),
                   WEFT_EFORMAT);
  assert_non_null(strstr(err.message, "checksum"));
  assert_int_equal(weft_world_digest(b.w), before);
  rows[len - 1] ^= 1;
  memcpy(rows, saved, 8);
  reseal(rows, len);
  load_ok(b.w, &m);
  assert_int_equal(weft_world_digest(b.w), weft_world_digest(a.w));
  free(m.p);
  weft_world_destroy(a.w);
  weft_world_destroy(b.w);
}

/* The world's heap: its active pages, or false where there is no heap (no
 * jemalloc: sanitizer builds, where LeakSanitizer finds what leaks). */
static bool heap_active(weft_world_t *w, uint64_t *active) {
  weft__heap_info_t h;
  int rc = weft__alloc_heap_info(&w->alloc, &h);
#ifdef WEFT_JEMALLOC
  assert_int_equal(rc, WEFT_OK);
  *active = h.active;
  return true;
#else
  assert_int_equal(rc, WEFT_ENOTFOUND);
  *active = 0;
  return false;
#endif
}

/* Loads a damaged m into w (a world of m's layout): refused in ROWS with
 * `what` in the message; the digest, the chunk memory and the heap's
 * active pages as they were, though the load staged rows (the world
 * allocated). */
static void staged_refused(weft_world_t *w, const mem_t *m, const char *what) {
  const uint64_t digest = weft_world_digest(w);
  weft_world_stats_t s0, s1;
  weft_world_stats(w, &s0);
  uint64_t a0 = 0, a1 = 0;
  bool heap = heap_active(w, &a0);
  weft_snapshot_error_t err;
  assert_int_equal(weft_snapshot_load_memory(w, m->p, m->n, &err),
                   WEFT_EFORMAT);
  assert_string_equal(err.section, "ROWS");
  assert_non_null(strstr(err.message, what));
  weft_world_stats(w, &s1);
  assert_true(s1.allocs > s0.allocs); /* the rows were staged */
  assert_int_equal(s1.chunk_bytes, s0.chunk_bytes);
  assert_int_equal(s1.chunks_live, s0.chunks_live);
  if (heap) {
    heap_active(w, &a1);
    assert_int_equal(a1, a0); /* and the staged memory freed */
  }
  assert_int_equal(weft_world_digest(w), digest);
}

/* A load into a world of the snapshot's layout stages the rows in fresh
 * segment memory while it validates them. A snapshot damaged in its last
 * rows, or with a forged first handle under a good checksum, leaves the
 * world as it was and frees what was staged; a sound one is swapped in:
 * digest, lookups through the chunk table and later changes are the
 * saving world's. */
static void test_snapshot_layout_staged_load_frees_or_swaps(void **state) {
  (void)state;
  enum { N = 900 };
  rx_t a = rx_new(3), b = rx_new(3);
  weft_entity_t e[N];
  for (uint32_t i = 0; i < N; i++)
    e[i] = spawn_in(&a, i);
  uint32_t v = 9;
  for (uint32_t i = 1; i < N; i += 7)
    assert_int_equal(weft_relation_add(a.w, e[i], a.follows, e[0], &v),
                     WEFT_OK);
  for (uint32_t i = 2; i < N; i += 5)
    assert_int_equal(weft_relation_add(a.w, e[i], a.owns, e[1], NULL), WEFT_OK);
  mem_t m1 = save(a.w);
  load_ok(b.w, &m1); /* b now has a's layout */
  assert_int_equal(weft_world_digest(b.w), weft_world_digest(a.w));
  /* New values, the same layout. */
  for (uint32_t i = 0; i < N; i += 3) {
    pos_t p = {-(float)i, 5.0f, 6.0f};
    assert_int_equal(weft_set(a.w, e[i], a.pos, &p), WEFT_OK);
  }
  mem_t m2 = save(a.w);
  const uint64_t want = weft_world_digest(a.w);
  assert_int_not_equal(weft_world_digest(b.w), want);

  uint64_t len = 0;
  uint8_t *rows = section(&m2, "ROWS", &len);
  rows[len - 1] ^= 1; /* the last chunk's last column */
  staged_refused(b.w, &m2, "checksum");
  rows[len - 1] ^= 1;
  uint8_t saved[8];
  memcpy(saved, rows, 8);
  rows[7] ^= 0x40; /* another world's tag in the first handle */
  reseal(rows, len);
  staged_refused(b.w, &m2, "handle");
  memcpy(rows, saved, 8);
  reseal(rows, len);

  load_ok(b.w, &m2);
  assert_int_equal(weft_world_digest(b.w), want);
  for (uint32_t i = 0; i < N; i++) {
    const pos_t *pa = weft_get(a.w, e[i], a.pos);
    const pos_t *pb = weft_get(b.w, e[i], b.pos);
    assert_non_null(pb);
    assert_memory_equal(pa, pb, sizeof *pa);
  }
  /* Both go on alike. */
  for (uint32_t i = 0; i < N; i += 11) {
    assert_int_equal(weft_despawn(a.w, e[i]), WEFT_OK);
    assert_int_equal(weft_despawn(b.w, e[i]), WEFT_OK);
  }
  assert_int_equal(spawn_in(&b, 7), spawn_in(&a, 7));
  assert_int_equal(weft_world_digest(b.w), weft_world_digest(a.w));
  free(m1.p);
  free(m2.p);
  weft_world_destroy(a.w);
  weft_world_destroy(b.w);
}

/* The home nodes of w's chunks of pos, in query order (at most max). */
static uint32_t home_nodes(weft_world_t *w, weft_component_t pos, uint32_t *out,
                           uint32_t max) {
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = pos;
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(w, &qd, &q), WEFT_OK);
  weft_iter_t it;
  weft_query_iter(q, &it);
  uint32_t n = 0;
  while (weft_iter_next(&it)) {
    assert_true(n < max);
    out[n++] = it.home_node;
  }
  weft_query_destroy(q);
  return n;
}

/* In a world whose chunk memory a two-node pool homes, staged segments
 * are taken from the pool (for the group of the segment they replace) and
 * given back to it: a refused load frees them, a sound one gives the
 * saved digest and every chunk keeps its home node. */
static void test_snapshot_layout_staged_load_keeps_home_nodes(void **state) {
  (void)state;
  weft_pool_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.synthetic = "numa:2 core:2 pu:1";
  pc.placement.workers = 2;
  weft_pool_t *pool = NULL;
  assert_int_equal(weft_pool_create(&pc, &pool), WEFT_OK);
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.world_tag = 3;
  cfg.chunk_size = 4096;
  cfg.pool = pool;
  weft_world_t *wa = wt_world_new(&cfg), *wb = wt_world_new(&cfg);
  weft_component_desc_t d = {
      .name = "pos", .size = sizeof(pos_t), .alignment = 4};
  weft_component_t pa = 0, pb = 0;
  assert_int_equal(weft_component_register(wa, &d, &pa), WEFT_OK);
  assert_int_equal(weft_component_register(wb, &d, &pb), WEFT_OK);
  enum { N = 3000 };
  weft_entity_t e[N];
  for (uint32_t i = 0; i < N; i++) {
    pos_t p = {(float)i, 0, 0};
    e[i] = wt_spawn_with(wa, (weft_component_t[]){pa, 0}, (const void *[]){&p});
  }
  mem_t m1 = save(wa);
  load_ok(wb, &m1);
  uint32_t na[64], nb[64];
  uint32_t n = home_nodes(wa, pa, na, 64);
  assert_int_equal(home_nodes(wb, pb, nb, 64), n);
  bool two = false;
  for (uint32_t k = 0; k < n; k++)
    two |= na[k] != na[0];
  assert_true(two); /* the segments went to both nodes */
  for (uint32_t i = 0; i < N; i += 2) {
    pos_t p = {-1.0f, (float)i, 0};
    assert_int_equal(weft_set(wa, e[i], pa, &p), WEFT_OK);
  }
  mem_t m2 = save(wa);
  uint64_t len = 0;
  uint8_t *rows = section(&m2, "ROWS", &len);
  rows[len - 1] ^= 1;
  staged_refused(wb, &m2, "checksum");
  rows[len - 1] ^= 1;
  uint32_t before[64];
  assert_int_equal(home_nodes(wb, pb, before, 64), n);
  load_ok(wb, &m2);
  assert_int_equal(weft_world_digest(wb), weft_world_digest(wa));
  assert_int_equal(home_nodes(wb, pb, nb, 64), n);
  assert_memory_equal(nb, before, n * sizeof *nb);
  free(m1.p);
  free(m2.p);
  weft_world_destroy(wa);
  weft_world_destroy(wb);
  weft_pool_destroy(pool);
}

/* Loads m into w: refused in INDX with `what` in the message, w's digest
 * unchanged. */
static void index_refused(weft_world_t *w, const mem_t *m, const char *what) {
  const uint64_t digest = weft_world_digest(w);
  weft_snapshot_error_t err;
  assert_int_equal(weft_snapshot_load_memory(w, m->p, m->n, &err),
                   WEFT_EFORMAT);
  assert_string_equal(err.section, "INDX");
  if (!strstr(err.message, what))
    fail_msg("'%s' does not say '%s'", err.message, what);
  assert_int_equal(weft_world_digest(w), digest);
}

/* The index's records are checked under a good checksum (walked as they
 * are hashed): a dead record with a flag no record has, one with the
 * generation limit, a live record in the sweep range and a retired
 * record the header does not count are each refused, into a fresh world
 * and into one of the snapshot's layout (whose load stages its rows); the
 * restored bytes load again. */
static void test_snapshot_layout_index_records_checked(void **state) {
  (void)state;
  rx_t a = rx_new(3), b = rx_new(3), c = rx_new(3);
  weft_entity_t e[40];
  for (uint32_t i = 0; i < 40; i++)
    e[i] = spawn_in(&a, i);
  for (uint32_t i = 5; i < 40; i += 6)
    assert_int_equal(weft_despawn(a.w, e[i]), WEFT_OK);
  mem_t m = save(a.w);
  load_ok(b.w, &m);
  uint64_t len = 0;
  uint8_t *ix = section(&m, "INDX", &len);
  /* u32 hwm, alive, retired, sweep, sweep_end, free_n; the free list;
   * the records. */
  uint32_t h[6];
  memcpy(h, ix, sizeof h);
  assert_int_equal(h[0], 40);
  assert_true(h[5] > 0);
  assert_int_equal(len, 24 + 4 * ((uint64_t)h[5] + h[0]));
  uint32_t dead;
  memcpy(&dead, ix + 24, 4); /* the free list's first slot */
  uint8_t *rec = ix + 24 + 4 * (size_t)h[5] + 4 * (size_t)dead;
  uint32_t saved, live = 0;
  memcpy(&saved, rec, 4);
  weft_world_t *into[2] = {b.w, c.w};
  const struct {
    uint32_t v;
    const char *what;
  } bad[] = {{0x20000000u | 1u, "not a dead slot's"},
             {0x00ffffffu, "not a dead slot's"},
             {0x40000000u | 1u, "retired records"}};
  for (uint32_t k = 0; k < 3; k++) {
    memcpy(rec, &bad[k].v, 4);
    reseal(ix, len);
    for (uint32_t t = 0; t < 2; t++)
      index_refused(into[t], &m, bad[k].what);
    memcpy(rec, &saved, 4);
  }
  /* A live slot (slot 0's record is live) inside the sweep range. */
  memcpy(&saved, ix + 24 + 4 * (size_t)h[5], 4);
  assert_int_equal(saved, 0x80000000u);
  uint32_t sweep[2] = {live, live + 1};
  memcpy(ix + 12, sweep, 8);
  reseal(ix, len);
  for (uint32_t t = 0; t < 2; t++)
    index_refused(into[t], &m, "sweep range");
  memcpy(ix + 12, &h[3], 8);
  reseal(ix, len);
  load_ok(b.w, &m);
  load_ok(c.w, &m);
  assert_int_equal(weft_world_digest(b.w), weft_world_digest(a.w));
  assert_int_equal(weft_world_digest(c.w), weft_world_digest(a.w));
  free(m.p);
  weft_world_destroy(a.w);
  weft_world_destroy(b.w);
  weft_world_destroy(c.w);
}

/* Each way a row's handle can be forged under a good checksum is refused
 * at that handle, into a fresh world and into a staged one: generation 0,
 * a generation past the limit, a slot past the high-water mark, a dead
 * slot, and a second row with the first row's handle. */
static weft_world_t *gen_world(weft_component_t *pos) {
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.world_tag = 3;
  cfg.max_generation = 100; /* below what 24 bits hold */
  weft_world_t *w = wt_world_new(&cfg);
  weft_component_desc_t d = {
      .name = "pos", .size = sizeof(pos_t), .alignment = 4};
  assert_int_equal(weft_component_register(w, &d, pos), WEFT_OK);
  return w;
}

static void test_snapshot_layout_forged_handles_refused(void **state) {
  (void)state;
  weft_component_t pos = 0;
  weft_world_t *wa = gen_world(&pos), *wb = gen_world(&pos),
               *wc = gen_world(&pos);
  weft_entity_t e[30];
  for (uint32_t i = 0; i < 30; i++) {
    pos_t p = {(float)i, 0, 0};
    e[i] =
        wt_spawn_with(wa, (weft_component_t[]){pos, 0}, (const void *[]){&p});
  }
  assert_int_equal(weft_despawn(wa, e[29]), WEFT_OK);
  mem_t m = save(wa);
  load_ok(wb, &m);
  uint64_t len = 0;
  uint8_t *rows = section(&m, "ROWS", &len);
  uint64_t first, second;
  memcpy(&first, rows, 8);
  memcpy(&second, rows + 8, 8);
  assert_int_equal(first, e[0]);
  assert_int_equal(second, e[1]);
  const uint64_t slot_gen = UINT64_C(0x00ffffff00000000);
  const uint64_t forged[] = {
      first & ~slot_gen,                         /* generation 0 */
      (first & ~slot_gen) | (uint64_t)101 << 32, /* past the limit */
      (first & ~UINT64_C(0xffffffff)) | 40,      /* past the high-water mark */
      (first & ~UINT64_C(0xffffffff)) | 29,      /* a dead slot */
      first,                                     /* as row 0's, in row 1 */
  };
  weft_world_t *into[2] = {wb, wc};
  for (uint32_t k = 0; k < 5; k++) {
    uint32_t row = k == 4 ? 1 : 0;
    memcpy(rows + 8 * row, &forged[k], 8);
    reseal(rows, len);
    for (uint32_t t = 0; t < 2; t++) {
      const uint64_t digest = weft_world_digest(into[t]);
      weft_snapshot_error_t err;
      assert_int_equal(weft_snapshot_load_memory(into[t], m.p, m.n, &err),
                       WEFT_EFORMAT);
      assert_string_equal(err.section, "ROWS");
      assert_non_null(strstr(err.message, "handle"));
      assert_int_equal(err.offset, (uint64_t)(rows + 8 * row - m.p));
      assert_int_equal(weft_world_digest(into[t]), digest);
    }
    memcpy(rows, &first, 8);
    memcpy(rows + 8, &second, 8);
  }
  reseal(rows, len);
  load_ok(wb, &m);
  load_ok(wc, &m);
  assert_int_equal(weft_world_digest(wb), weft_world_digest(wa));
  assert_int_equal(weft_world_digest(wc), weft_world_digest(wa));
  free(m.p);
  weft_world_destroy(wa);
  weft_world_destroy(wb);
  weft_world_destroy(wc);
}

/* A snapshot whose rows pass 8 MiB (where the loader switches to
 * non-temporal stores) loads into a fresh world and back into its own
 * with the digest of the world that saved it. */
static void test_snapshot_layout_large_rows_round_trip(void **state) {
  (void)state;
  enum { N = 400000 }; /* 8-byte handle + 12 + 4 bytes a row: 9.6 MB */
  rx_t a = rx_new(3), b = rx_new(3);
  for (uint32_t i = 0; i < N; i++)
    spawn_in(&a, i);
  mem_t m = save(a.w);
  assert_true(m.n > (size_t)N * 24);
  const uint64_t want = weft_world_digest(a.w);
  load_ok(b.w, &m);
  assert_int_equal(weft_world_digest(b.w), want);
  weft_entity_t e = wt_spawn_with(a.w, (weft_component_t[]){a.hp, 0},
                                  (const void *[]){&(uint32_t){7}});
  assert_true(weft_is_alive(a.w, e));
  assert_int_not_equal(weft_world_digest(a.w), want);
  load_ok(a.w, &m);
  assert_int_equal(weft_world_digest(a.w), want);
  load_ok(b.w, &m); /* same layout: refilled in place */
  assert_int_equal(weft_world_digest(b.w), want);
  free(m.p);
  weft_world_destroy(a.w);
  weft_world_destroy(b.w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_snapshot_layout_dense_relations_round_trip),
      cmocka_unit_test(test_snapshot_layout_compacted_ids_round_trip),
      cmocka_unit_test(test_snapshot_layout_loaded_rows_are_clean),
      cmocka_unit_test(test_snapshot_layout_edges_must_fit_rows),
      cmocka_unit_test(test_snapshot_layout_rows_checked_in_one_pass),
      cmocka_unit_test(test_snapshot_layout_large_rows_round_trip),
      cmocka_unit_test(test_snapshot_layout_staged_load_frees_or_swaps),
      cmocka_unit_test(test_snapshot_layout_staged_load_keeps_home_nodes),
      cmocka_unit_test(test_snapshot_layout_index_records_checked),
      cmocka_unit_test(test_snapshot_layout_forged_handles_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
