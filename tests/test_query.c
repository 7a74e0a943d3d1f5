/* SPDX-License-Identifier: MIT */
/* Unit tests for cached queries and chunk iteration. */
#include "support/weft_test.h"

#include <pthread.h>
#include <stdlib.h>

#include "core/query_internal.h" /* the flat cache, to force the fallback */

static weft_query_desc_t empty_desc(void) {
  weft_query_desc_t d;
  memset(&d, 0, sizeof d);
  return d;
}

static weft_query_t *make_query(weft_world_t *w, const weft_query_desc_t *d) {
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(w, d, &q), WEFT_OK);
  assert_non_null(q);
  return q;
}

/* Iterates @p q and returns the number of rows, checking every chunk. */
static uint32_t iter_rows(const weft_query_t *q) {
  weft_iter_t it;
  uint32_t rows = 0;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    assert_true(it.count > 0);
    assert_true(it.count <= WEFT_CHUNK_ROWS_MAX);
    assert_non_null(it.entities);
    rows += it.count;
  }
  return rows;
}

/* Returns true if @p q yields @p e. */
static bool query_yields(const weft_query_t *q, weft_entity_t e) {
  weft_iter_t it;
  bool found = false;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    for (uint32_t r = 0; r < it.count; r++) {
      found |= it.entities[r] == e;
    }
  }
  return found;
}

static void test_query_create_rejects_invalid(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  enum { N = WEFT_QUERY_MAX_TERMS + 1 };
  weft_component_t c[N];
  char name[16];
  for (uint32_t i = 0; i < N; i++) {
    snprintf(name, sizeof name, "c%u", i);
    c[i] = wt_register(w, name, 4, 0);
  }
  weft_component_t unknown = weft_component_count(w) + 1;
  weft_query_t *q = NULL;

  weft_query_desc_t d = empty_desc();
  assert_int_equal(weft_query_create(w, &d, &q), WEFT_EINVAL);
  d.exclude[0] = c[0]; /* exclude alone selects nothing definite */
  assert_int_equal(weft_query_create(w, &d, &q), WEFT_EINVAL);
  d = empty_desc();
  d.include[0] = c[0];
  d.include[1] = c[1];
  d.exclude[0] = c[2];
  d.exclude[1] = c[1]; /* included and excluded */
  assert_int_equal(weft_query_create(w, &d, &q), WEFT_EINVAL);

  d = empty_desc();
  d.include[0] = unknown;
  assert_int_equal(weft_query_create(w, &d, &q), WEFT_ENOCOMP);
  d = empty_desc();
  d.include[0] = c[0];
  d.exclude[0] = unknown;
  assert_int_equal(weft_query_create(w, &d, &q), WEFT_ENOCOMP);
  d = empty_desc();
  d.any[0] = c[0];
  d.any[1] = 0xffffffffu;
  assert_int_equal(weft_query_create(w, &d, &q), WEFT_ENOCOMP);
  d = empty_desc();
  d.disabled[0] = unknown;
  assert_int_equal(weft_query_create(w, &d, &q), WEFT_ENOCOMP);

  /* A list with no terminator inside its WEFT_QUERY_MAX_TERMS + 1 slots. */
  d = empty_desc();
  for (uint32_t i = 0; i < N; i++) {
    d.include[i] = c[i];
  }
  assert_int_equal(weft_query_create(w, &d, &q), WEFT_ETOOMANY);
  assert_int_equal(wt_stats(w).queries, 0);

  /* The largest legal list works and exposes all its columns. */
  d.include[WEFT_QUERY_MAX_TERMS] = 0;
  q = make_query(w, &d);
  assert_int_equal(wt_stats(w).queries, 1);
  weft_component_t comps[WEFT_QUERY_MAX_TERMS + 1];
  uint32_t vals[WEFT_QUERY_MAX_TERMS];
  const void *pv[WEFT_QUERY_MAX_TERMS];
  for (uint32_t i = 0; i < WEFT_QUERY_MAX_TERMS; i++) {
    comps[i] = c[i];
    vals[i] = 1000u + i;
    pv[i] = &vals[i];
  }
  comps[WEFT_QUERY_MAX_TERMS] = 0;
  weft_entity_t e = wt_spawn_with(w, comps, pv);
  weft_iter_t it;
  weft_query_iter(q, &it);
  assert_true(weft_iter_next(&it));
  assert_int_equal(it.count, 1);
  assert_true(it.entities[0] == e);
  for (uint32_t i = 0; i < WEFT_QUERY_MAX_TERMS; i++) {
    const uint32_t *col = weft_iter_column(&it, i);
    assert_non_null(col);
    assert_int_equal(col[0], vals[i]);
  }
  assert_false(weft_iter_next(&it));
  weft_query_destroy(q);
  assert_int_equal(wt_stats(w).queries, 0);
  weft_world_destroy(w);
}

/* Hand-checked example of the documented matching rules. */
static void test_query_disabled_rules(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t x = wt_register(w, "x", 4, 0);
  weft_component_t y = wt_register(w, "y", 4, 0);
  weft_component_t z = wt_register_tag(w, "z");
  const weft_component_t xy[] = {x, y, 0};
  const weft_component_t yz[] = {y, z, 0};
  weft_entity_t on = wt_spawn_with(w, xy, NULL);   /* x enabled */
  weft_entity_t off = wt_spawn_with(w, xy, NULL);  /* x disabled */
  weft_entity_t none = wt_spawn_with(w, yz, NULL); /* no x */
  assert_int_equal(weft_disable(w, off, x), WEFT_OK);

  struct {
    weft_query_desc_t d;
    bool on, off, none;
  } cases[8];
  memset(cases, 0, sizeof cases);
  int n = 0;
  /* include x: a disabled x counts as absent... */
  cases[n].d.include[0] = x;
  cases[n].on = true;
  n++;
  /* ...unless MATCH_DISABLED, where presence counts. */
  cases[n].d.include[0] = x;
  cases[n].d.flags = WEFT_QUERY_MATCH_DISABLED;
  cases[n].on = cases[n].off = true;
  n++;
  /* disabled x: present and disabled. */
  cases[n].d.disabled[0] = x;
  cases[n].off = true;
  n++;
  /* exclude x: a disabled x is absent, so `off` passes. */
  cases[n].d.include[0] = y;
  cases[n].d.exclude[0] = x;
  cases[n].off = cases[n].none = true;
  n++;
  /* exclude x with MATCH_DISABLED: presence excludes. */
  cases[n].d.include[0] = y;
  cases[n].d.exclude[0] = x;
  cases[n].d.flags = WEFT_QUERY_MATCH_DISABLED;
  cases[n].none = true;
  n++;
  /* any {x, z}. */
  cases[n].d.any[0] = x;
  cases[n].d.any[1] = z;
  cases[n].on = cases[n].none = true;
  n++;
  cases[n].d.any[0] = x;
  cases[n].d.any[1] = z;
  cases[n].d.flags = WEFT_QUERY_MATCH_DISABLED;
  cases[n].on = cases[n].off = cases[n].none = true;
  n++;
  /* include y, disabled x. */
  cases[n].d.include[0] = y;
  cases[n].d.disabled[0] = x;
  cases[n].off = true;
  n++;

  for (int i = 0; i < n; i++) {
    weft_query_t *q = make_query(w, &cases[i].d);
    uint32_t want = (uint32_t)cases[i].on + (uint32_t)cases[i].off +
                    (uint32_t)cases[i].none;
    assert_int_equal(weft_query_count(q), want);
    assert_int_equal(iter_rows(q), want);
    assert_int_equal(query_yields(q, on), cases[i].on);
    assert_int_equal(query_yields(q, off), cases[i].off);
    assert_int_equal(query_yields(q, none), cases[i].none);
    weft_query_destroy(q);
  }
  /* Re-enabling moves `off` back to the plain include. */
  weft_query_desc_t d = empty_desc();
  d.include[0] = x;
  weft_query_t *q = make_query(w, &d);
  assert_false(query_yields(q, off));
  assert_int_equal(weft_enable(w, off, x), WEFT_OK);
  assert_true(query_yields(q, off));
  assert_int_equal(weft_query_count(q), 2);
  weft_query_destroy(q);
  weft_world_destroy(w);
}

/* --- brute-force oracle ------------------------------------------------- */

enum { OC = 8, OC_AOS = 6, OC_TAG = 6, OC_SOA = 7 };

typedef struct oracle_t {
  weft_world_t *w;
  weft_component_t ids[OC];
  uint32_t n;   /* entities ever spawned */
  uint32_t cap; /* array capacity */
  weft_entity_t *e;
  bool *alive;
  uint8_t *present;   /* n x OC */
  uint8_t *enabled;   /* n x OC */
  uint32_t *value;    /* n x OC */
  uint32_t *by_index; /* slot index -> model entity + 1 */
  uint32_t by_index_cap;
  uint8_t *seen;
} oracle_t;

typedef struct soa2_t {
  uint32_t v;
  uint32_t w;
} soa2_t;

static void oracle_init(oracle_t *o, uint32_t cap) {
  memset(o, 0, sizeof *o);
  o->w = wt_world_new(NULL);
  char name[16];
  for (int c = 0; c < OC_AOS; c++) {
    snprintf(name, sizeof name, "aos%d", c);
    o->ids[c] = wt_register(o->w, name, sizeof(uint32_t), 0);
  }
  o->ids[OC_TAG] = wt_register_tag(o->w, "tag");
  static const weft_field_desc_t f[] = {WEFT_FIELD(soa2_t, v),
                                        WEFT_FIELD(soa2_t, w)};
  weft_component_desc_t d = WEFT_COMPONENT_DESC(soa2_t);
  d.fields = f;
  d.field_count = 2;
  d.flags = WEFT_COMPONENT_SOA;
  assert_int_equal(weft_component_register(o->w, &d, &o->ids[OC_SOA]), WEFT_OK);
  o->cap = cap;
  o->e = calloc(cap, sizeof *o->e);
  o->alive = calloc(cap, sizeof *o->alive);
  o->present = calloc((size_t)cap * OC, 1);
  o->enabled = calloc((size_t)cap * OC, 1);
  o->value = calloc((size_t)cap * OC, sizeof *o->value);
  o->seen = calloc(cap, 1);
  o->by_index_cap = cap * 2u;
  o->by_index = calloc(o->by_index_cap, sizeof *o->by_index);
  assert_non_null(o->e);
  assert_non_null(o->alive);
  assert_non_null(o->present);
  assert_non_null(o->enabled);
  assert_non_null(o->value);
  assert_non_null(o->seen);
  assert_non_null(o->by_index);
}

static void oracle_free(oracle_t *o) {
  weft_world_destroy(o->w);
  free(o->e);
  free(o->alive);
  free(o->present);
  free(o->enabled);
  free(o->value);
  free(o->seen);
  free(o->by_index);
}

static void oracle_spawn(oracle_t *o, wt_rng_t *rng) {
  assert_true(o->n < o->cap);
  uint32_t i = o->n++;
  weft_component_t comps[OC + 1];
  const void *vals[OC];
  soa2_t sv;
  uint32_t k = 0;
  for (int c = 0; c < OC; c++) {
    o->value[i * OC + c] = (i + 1u) * 1000u + (uint32_t)c;
    if (wt_chance(rng, 1, 2)) {
      o->present[i * OC + c] = 1;
      o->enabled[i * OC + c] = 1;
      comps[k] = o->ids[c];
      if (c == OC_SOA) {
        sv.v = o->value[i * OC + c];
        sv.w = ~sv.v;
        vals[k] = &sv;
      } else if (c == OC_TAG) {
        vals[k] = NULL;
      } else {
        vals[k] = &o->value[i * OC + c];
      }
      k++;
    }
  }
  comps[k] = 0;
  o->e[i] = wt_spawn_with(o->w, comps, vals);
  o->alive[i] = true;
  uint32_t idx = weft_entity_index(o->e[i]);
  assert_true(idx < o->by_index_cap);
  o->by_index[idx] = i + 1;
  for (int c = 0; c < OC; c++) {
    if (o->present[i * OC + c] && wt_chance(rng, 1, 4)) {
      assert_int_equal(weft_disable(o->w, o->e[i], o->ids[c]), WEFT_OK);
      o->enabled[i * OC + c] = 0;
    }
  }
}

/* One random structural change against the model. */
static void oracle_mutate(oracle_t *o, wt_rng_t *rng) {
  uint32_t i = wt_below(rng, o->n);
  if (!o->alive[i]) {
    return;
  }
  int c = (int)wt_below(rng, OC);
  weft_component_t id = o->ids[c];
  uint8_t *pr = &o->present[i * OC + c];
  uint8_t *en = &o->enabled[i * OC + c];
  switch (wt_below(rng, 5)) {
  case 0:
    assert_int_equal(weft_despawn(o->w, o->e[i]), WEFT_OK);
    o->alive[i] = false;
    break;
  case 1:
    if (!*pr) {
      if (c == OC_SOA) {
        soa2_t sv = {o->value[i * OC + c], ~o->value[i * OC + c]};
        assert_int_equal(weft_add(o->w, o->e[i], id, &sv), WEFT_OK);
      } else {
        assert_int_equal(weft_add(o->w, o->e[i], id,
                                  c == OC_TAG ? NULL : &o->value[i * OC + c]),
                         WEFT_OK);
      }
      *pr = 1;
      *en = 1;
    }
    break;
  case 2:
    assert_int_equal(weft_remove(o->w, o->e[i], id), WEFT_OK);
    *pr = 0;
    break;
  case 3:
    assert_int_equal(weft_disable(o->w, o->e[i], id),
                     *pr ? WEFT_OK : WEFT_ENOTFOUND);
    *en = 0;
    break;
  default:
    assert_int_equal(weft_enable(o->w, o->e[i], id),
                     *pr ? WEFT_OK : WEFT_ENOTFOUND);
    *en = 1;
    break;
  }
}

typedef struct qspec_t {
  weft_query_desc_t d;
  int inc[OC], exc[OC], any[OC], dis[OC];
  int ni, ne, na, nd;
} qspec_t;

static qspec_t random_spec(wt_rng_t *rng) {
  qspec_t s;
  for (;;) {
    memset(&s, 0, sizeof s);
    int order[OC];
    for (int c = 0; c < OC; c++) {
      order[c] = c;
    }
    for (int c = OC - 1; c > 0; c--) {
      int j = (int)wt_below(rng, (uint32_t)c + 1);
      int t = order[c];
      order[c] = order[j];
      order[j] = t;
    }
    int at = 0;
    s.ni = (int)wt_below(rng, 4);
    for (int k = 0; k < s.ni; k++) {
      s.inc[k] = order[at++];
    }
    s.ne = (int)wt_below(rng, 3);
    if (s.ne > OC - at) {
      s.ne = OC - at;
    }
    for (int k = 0; k < s.ne; k++) {
      s.exc[k] = order[at++];
    }
    s.na = (int)wt_below(rng, 4);
    if (s.na > OC - at) {
      s.na = OC - at;
    }
    for (int k = 0; k < s.na; k++) {
      s.any[k] = order[at++];
    }
    s.nd = (int)wt_below(rng, 2);
    if (s.nd > OC - at) {
      s.nd = OC - at;
    }
    for (int k = 0; k < s.nd; k++) {
      s.dis[k] = order[at++];
    }
    if (s.ni + s.na + s.nd > 0) {
      break;
    }
  }
  s.d.flags = wt_chance(rng, 1, 3) ? WEFT_QUERY_MATCH_DISABLED : 0;
  return s;
}

static void spec_to_desc(const oracle_t *o, qspec_t *s) {
  for (int k = 0; k < s->ni; k++) {
    s->d.include[k] = o->ids[s->inc[k]];
  }
  for (int k = 0; k < s->ne; k++) {
    s->d.exclude[k] = o->ids[s->exc[k]];
  }
  for (int k = 0; k < s->na; k++) {
    s->d.any[k] = o->ids[s->any[k]];
  }
  for (int k = 0; k < s->nd; k++) {
    s->d.disabled[k] = o->ids[s->dis[k]];
  }
}

/* The documented rules applied to one tracked entity. */
static bool oracle_matches(const oracle_t *o, const qspec_t *s, uint32_t i) {
  if (!o->alive[i]) {
    return false;
  }
  const uint8_t *pr = &o->present[i * OC];
  const uint8_t *en = &o->enabled[i * OC];
  bool md = (s->d.flags & WEFT_QUERY_MATCH_DISABLED) != 0;
#define COUNTS_(c) (md ? pr[c] != 0 : (pr[c] && en[c]))
  for (int k = 0; k < s->ni; k++) {
    if (!COUNTS_(s->inc[k])) {
      return false;
    }
  }
  for (int k = 0; k < s->ne; k++) {
    if (COUNTS_(s->exc[k])) {
      return false;
    }
  }
  if (s->na > 0) {
    bool one = false;
    for (int k = 0; k < s->na; k++) {
      one |= COUNTS_(s->any[k]);
    }
    if (!one) {
      return false;
    }
  }
  for (int k = 0; k < s->nd; k++) {
    if (!(pr[s->dis[k]] && !en[s->dis[k]])) {
      return false;
    }
  }
#undef COUNTS_
  return true;
}

static void oracle_check_query(oracle_t *o, const qspec_t *s,
                               const weft_query_t *q) {
  uint32_t want = 0;
  for (uint32_t i = 0; i < o->n; i++) {
    want += oracle_matches(o, s, i);
  }
  memset(o->seen, 0, o->n);
  assert_int_equal(weft_query_count(q), want);
  weft_iter_t it;
  uint32_t got = 0;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    assert_true(it.count > 0);
    assert_true(it.count <= WEFT_CHUNK_ROWS_MAX);
    /* Chunk-level facts, identical for every row of the chunk. */
    bool chunk_enabled[OC];
    const uint32_t *chunk_col[OC];
    for (int c = 0; c < OC; c++) {
      chunk_enabled[c] = weft_iter_enabled(&it, o->ids[c]);
      chunk_col[c] = weft_iter_column_of(&it, o->ids[c]);
    }
    for (uint32_t r = 0; r < it.count; r++) {
      uint32_t idx = weft_entity_index(it.entities[r]);
      assert_true(idx < o->by_index_cap);
      uint32_t i1 = o->by_index[idx];
      assert_true(i1 > 0);
      uint32_t i = i1 - 1;
      assert_true(it.entities[r] == o->e[i]);
      assert_true(o->alive[i]);
      assert_int_equal(o->seen[i], 0);
      o->seen[i] = 1;
      got++;
      assert_true(oracle_matches(o, s, i));
      const uint8_t *pr = &o->present[i * OC];
      const uint8_t *en = &o->enabled[i * OC];
      for (int c = 0; c < OC; c++) {
        assert_int_equal(chunk_enabled[c], pr[c] && en[c]);
        bool has_column = c < OC_AOS && pr[c];
        assert_int_equal(chunk_col[c] != NULL, has_column);
        if (has_column) {
          assert_int_equal(chunk_col[c][r], o->value[i * OC + c]);
        }
      }
      for (int k = 0; k < s->ni; k++) {
        int c = s->inc[k];
        const uint32_t *col = weft_iter_column(&it, (uint32_t)k);
        if (c < OC_AOS) {
          assert_non_null(col);
          assert_true(wt_aligned(col, 64));
          assert_int_equal(col[r], o->value[i * OC + c]);
        } else {
          assert_null(col);
        }
        if (c == OC_SOA) {
          const uint32_t *fv = weft_iter_field(&it, (uint32_t)k, 0);
          const uint32_t *fw = weft_iter_field(&it, (uint32_t)k, 1);
          assert_non_null(fv);
          assert_non_null(fw);
          assert_int_equal(fv[r], o->value[i * OC + c]);
          assert_int_equal(fw[r], ~o->value[i * OC + c]);
        }
      }
    }
  }
  assert_int_equal(got, want);
}

static void test_query_matches_brute_force_oracle(void **state) {
  (void)state;
  enum { POP = 2000, QUERIES = 40, MUTATIONS = 1500, EXTRA = 300 };
  oracle_t o;
  oracle_init(&o, POP + EXTRA);
  wt_rng_t rng = wt_rng(0x5eed);

  /* Half of the queries exist before any entity (and archetype). */
  qspec_t *specs = calloc(QUERIES, sizeof *specs);
  weft_query_t **qs = calloc(QUERIES, sizeof *qs);
  assert_non_null(specs);
  assert_non_null(qs);
  for (int k = 0; k < QUERIES / 2; k++) {
    specs[k] = random_spec(&rng);
    spec_to_desc(&o, &specs[k]);
    qs[k] = make_query(o.w, &specs[k].d);
  }
  for (uint32_t i = 0; i < POP; i++) {
    oracle_spawn(&o, &rng);
  }
  for (uint32_t i = 0; i < POP; i++) {
    if (wt_chance(&rng, 1, 10)) {
      assert_int_equal(weft_despawn(o.w, o.e[i]), WEFT_OK);
      o.alive[i] = false;
    }
  }
  for (int k = QUERIES / 2; k < QUERIES; k++) {
    specs[k] = random_spec(&rng);
    spec_to_desc(&o, &specs[k]);
    qs[k] = make_query(o.w, &specs[k].d);
  }
  for (int k = 0; k < QUERIES; k++) {
    oracle_check_query(&o, &specs[k], qs[k]);
  }
  /* Mutate (new archetypes appear) and check the same cached queries. */
  for (int m = 0; m < MUTATIONS; m++) {
    oracle_mutate(&o, &rng);
  }
  for (uint32_t i = 0; i < EXTRA; i++) {
    oracle_spawn(&o, &rng);
  }
  for (int k = 0; k < QUERIES; k++) {
    oracle_check_query(&o, &specs[k], qs[k]);
    weft_query_destroy(qs[k]);
  }
  assert_int_equal(wt_stats(o.w).queries, 0);
  free(qs);
  free(specs);
  oracle_free(&o);
}

static void test_query_created_before_archetypes(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 8, 0);
  weft_component_t b = wt_register(w, "b", 4, 0);
  weft_query_desc_t d = empty_desc();
  d.include[0] = a;
  weft_query_t *q = make_query(w, &d);
  assert_int_equal(weft_query_count(q), 0);
  assert_int_equal(iter_rows(q), 0);
  uint32_t cached0 = weft_query_archetype_count(q);

  const weft_component_t only_a[] = {a, 0};
  const weft_component_t ab[] = {a, b, 0};
  const weft_component_t only_b[] = {b, 0};
  for (int i = 0; i < 10; i++) {
    wt_spawn_with(w, only_a, NULL);
  }
  assert_int_equal(weft_query_count(q), 10);
  assert_int_equal(iter_rows(q), 10);
  uint32_t cached1 = weft_query_archetype_count(q);
  assert_true(cached1 > cached0);
  for (int i = 0; i < 7; i++) {
    wt_spawn_with(w, ab, NULL);
    wt_spawn_with(w, only_b, NULL);
  }
  assert_int_equal(weft_query_count(q), 17);
  assert_int_equal(iter_rows(q), 17);
  assert_true(weft_query_archetype_count(q) > cached1);
  /* Emptied archetypes stay cached but yield no rows. */
  uint32_t cached2 = weft_query_archetype_count(q);
  weft_query_desc_t db = empty_desc();
  db.include[0] = b;
  weft_query_t *qb = make_query(w, &db);
  assert_int_equal(weft_query_count(qb), 14);
  weft_iter_t it;
  weft_entity_t doomed[32];
  uint32_t nd = 0;
  weft_query_iter(qb, &it);
  while (weft_iter_next(&it)) {
    for (uint32_t r = 0; r < it.count; r++) {
      doomed[nd++] = it.entities[r];
    }
  }
  assert_int_equal(nd, 14);
  for (uint32_t i = 0; i < nd; i++) {
    assert_int_equal(weft_despawn(w, doomed[i]), WEFT_OK);
  }
  assert_int_equal(weft_query_count(q), 10);
  assert_int_equal(iter_rows(q), 10);
  assert_int_equal(weft_query_count(qb), 0);
  assert_int_equal(iter_rows(qb), 0);
  assert_int_equal(weft_query_archetype_count(q), cached2);
  weft_query_destroy(qb);
  weft_query_destroy(q);
  weft_world_destroy(w);
}

static void test_query_column_of_and_enabled(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 4, 0);
  weft_component_t b = wt_register(w, "b", 8, 0);
  weft_component_t t = wt_register_tag(w, "t");
  weft_component_t unused = wt_register(w, "unused", 4, 0);
  uint32_t va = 1;
  uint64_t vb = 2;
  const void *vals[] = {&va, &vb, NULL};
  const weft_component_t ab[] = {a, b, 0};
  const weft_component_t at[] = {a, t, 0};
  const weft_component_t abt[] = {a, b, t, 0};
  weft_entity_t e_ab = wt_spawn_with(w, ab, vals);
  vb = 3;
  weft_entity_t e_at = wt_spawn_with(w, at, vals);
  weft_entity_t e_abt = wt_spawn_with(w, abt, vals);
  vb = 4;
  weft_entity_t e_off = wt_spawn_with(w, abt, vals);
  assert_int_equal(weft_disable(w, e_off, b), WEFT_OK);
  assert_true(weft_is_alive(w, e_abt));

  weft_query_desc_t d = empty_desc();
  d.include[0] = a;
  d.any[0] = b;
  d.any[1] = t;
  weft_query_t *q = make_query(w, &d);
  assert_int_equal(weft_query_count(q), 4);
  weft_iter_t it;
  uint32_t rows = 0;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    for (uint32_t r = 0; r < it.count; r++) {
      weft_entity_t e = it.entities[r];
      const uint64_t *cb = weft_iter_column_of(&it, b);
      const uint32_t *ca = weft_iter_column_of(&it, a);
      assert_ptr_equal(ca, it.columns[0]);
      assert_null(weft_iter_column_of(&it, t));
      assert_null(weft_iter_column_of(&it, unused));
      assert_null(weft_iter_column_of(&it, 0));
      assert_null(weft_iter_column_of(&it, 9999));
      assert_false(weft_iter_enabled(&it, unused));
      assert_true(weft_iter_enabled(&it, a));
      const uint64_t *gb = weft_get(w, e, b);
      if (e == e_at) {
        assert_null(cb);
        assert_false(weft_iter_enabled(&it, b));
        assert_true(weft_iter_enabled(&it, t));
      } else {
        /* Present (even disabled) components have a column. */
        assert_non_null(cb);
        assert_non_null(gb);
        assert_ptr_equal(&cb[r], gb);
        assert_int_equal(weft_iter_enabled(&it, b), e != e_off);
        assert_int_equal(weft_iter_enabled(&it, t), e != e_ab);
      }
      rows++;
    }
  }
  assert_int_equal(rows, 4);
  weft_query_destroy(q);
  weft_world_destroy(w);
}

static void test_query_columns_are_writable(void **state) {
  (void)state;
  const uint32_t n = 5000;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", sizeof(uint64_t), 0);
  weft_component_t b = wt_register(w, "b", sizeof(uint32_t), 0);
  weft_entity_t *es = calloc(n, sizeof *es);
  assert_non_null(es);
  const weft_component_t ab[] = {a, b, 0};
  assert_int_equal(weft_spawn_batch(w, n, ab, NULL, NULL, es), WEFT_OK);
  weft_query_desc_t d = empty_desc();
  d.include[0] = b;
  d.include[1] = a;
  weft_query_t *q = make_query(w, &d);
  weft_iter_t it;
  uint32_t chunks = 0;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    uint32_t *cb = it.columns[0];
    uint64_t *ca = it.columns[1];
    for (uint32_t r = 0; r < it.count; r++) {
      ca[r] = it.entities[r] * 3u;
      cb[r] = weft_entity_index(it.entities[r]) + 7u;
    }
    chunks++;
  }
  assert_true(chunks >= 1);
  for (uint32_t i = 0; i < n; i++) {
    const uint64_t *pa = weft_get(w, es[i], a);
    const uint32_t *pb = weft_get(w, es[i], b);
    assert_non_null(pa);
    assert_non_null(pb);
    assert_true(*pa == es[i] * 3u);
    assert_int_equal(*pb, weft_entity_index(es[i]) + 7u);
  }
  /* Two iterators may run at once over the same query. */
  weft_iter_t outer, inner;
  uint32_t outer_rows = 0, inner_rows = 0;
  weft_query_iter(q, &outer);
  while (weft_iter_next(&outer)) {
    outer_rows += outer.count;
    weft_query_iter(q, &inner);
    while (weft_iter_next(&inner)) {
      inner_rows += inner.count;
    }
  }
  assert_int_equal(outer_rows, n);
  assert_int_equal(inner_rows, (uint64_t)n * chunks);
  free(es);
  weft_query_destroy(q);
  weft_world_destroy(w);
}

static void test_query_skips_empty_chunks(void **state) {
  (void)state;
  const uint32_t n = 3000;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 16, 0);
  weft_entity_t *es = calloc(n, sizeof *es);
  assert_non_null(es);
  const weft_component_t only_a[] = {a, 0};
  assert_int_equal(weft_spawn_batch(w, n, only_a, NULL, NULL, es), WEFT_OK);
  weft_query_desc_t d = empty_desc();
  d.include[0] = a;
  weft_query_t *q = make_query(w, &d);
  assert_int_equal(iter_rows(q), n);
  /* Despawn all but a handful scattered through the archetype. */
  uint32_t left = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (i % 701 == 0) {
      left++;
      continue;
    }
    assert_int_equal(weft_despawn(w, es[i]), WEFT_OK);
  }
  assert_int_equal(weft_query_count(q), left);
  assert_int_equal(iter_rows(q), left);
  for (uint32_t i = 0; i < n; i += 701) {
    assert_true(query_yields(q, es[i]));
    assert_int_equal(weft_despawn(w, es[i]), WEFT_OK);
  }
  weft_iter_t it;
  weft_query_iter(q, &it);
  assert_false(weft_iter_next(&it));
  assert_int_equal(weft_query_count(q), 0);
  free(es);
  weft_query_destroy(q);
  weft_world_destroy(w);
}

/* NULL queries and iterators are inert, never a crash. */
static void test_query_null_iterators_are_inert(void **state) {
  (void)state;
  weft_iter_t it;
  memset(&it, 0x5a, sizeof it);
  weft_query_iter(NULL, &it);
  assert_false(weft_iter_next(&it));
  assert_int_equal(it.count, 0);
  assert_false(weft_iter_next(NULL));
  assert_null(weft_iter_field(NULL, 0, 0));
  assert_null(weft_iter_column_of(NULL, 1));
  assert_false(weft_iter_enabled(NULL, 1));
  weft_query_iter(NULL, NULL);
  assert_int_equal(weft_query_count(NULL), 0);
  weft_query_destroy(NULL);
}

/* Walks q, checking that every row's column value names its entity, and
 * returns the rows seen; *most gets the largest single hand-out. */
static uint32_t walk_runs(weft_world_t *w, weft_query_t *q, weft_component_t c,
                          uint32_t *most) {
  weft_iter_t it;
  uint32_t rows = 0;
  *most = 0;
  for (weft_query_iter(q, &it); weft_iter_next(&it);) {
    const uint64_t *v = it.columns[0];
    for (uint32_t r = 0; r < it.count; r++) {
      assert_int_equal(v[r], weft_entity_index(it.entities[r]));
      assert_ptr_equal(weft_get(w, it.entities[r], c), &v[r]);
    }
    rows += it.count;
    *most = it.count > *most ? it.count : *most;
  }
  return rows;
}

static void fill_index(void *user, const weft_iter_t *view, uint32_t first) {
  (void)user;
  (void)first;
  uint64_t *v = view->columns[0];
  for (uint32_t r = 0; r < view->count; r++)
    v[r] = weft_entity_index(view->entities[r]);
}

/* With WEFT_QUERY_CHUNK_RUNS, contiguous chunks come out as one run whose
 * arrays are valid across chunk borders; the rows seen are the same. */
static void test_query_chunk_runs_cover_contiguous_chunks(void **state) {
  (void)state;
  weft_world_t *w = wt_world_sized(0, WEFT_CHUNK_SIZE_MIN);
  weft_component_t c = wt_register(w, "id", 8, 0);
  enum { N = 20000 };
  static weft_entity_t es[N];
  assert_int_equal(
      weft_spawn_batch(w, N, (weft_component_t[]){c, 0}, fill_index, NULL, es),
      WEFT_OK);
  for (uint32_t k = 0; k < N; k += 7) /* holes, refilled by swap-remove */
    assert_int_equal(weft_despawn(w, es[k]), WEFT_OK);
  uint32_t alive = N - (N + 6) / 7;
  weft_query_t *plain, *runs;
  assert_int_equal(
      weft_query_create(w, &(weft_query_desc_t){.include = {c}}, &plain), 0);
  assert_int_equal(
      weft_query_create(
          w,
          &(weft_query_desc_t){.include = {c}, .flags = WEFT_QUERY_CHUNK_RUNS},
          &runs),
      0);
  uint32_t most_plain, most_runs;
  assert_int_equal(walk_runs(w, plain, c, &most_plain), alive);
  assert_int_equal(walk_runs(w, runs, c, &most_runs), alive);
  assert_true(most_runs > most_plain); /* runs span chunks */
  assert_int_equal(most_runs, alive);  /* one batch: one segment */
  weft_world_destroy(w);
}

/* Chunks whose arrays need padding never merge into runs. */
static void test_query_chunk_runs_respect_padding(void **state) {
  (void)state;
  weft_world_t *w = wt_world_sized(0, WEFT_CHUNK_SIZE_MIN);
  weft_component_t c = wt_register(w, "id", 8, 0);
  weft_component_t big = wt_register(w, "big", 512, 0); /* few rows/chunk */
  enum { N = 300 };
  static weft_entity_t es[N];
  assert_int_equal(weft_spawn_batch(w, N, (weft_component_t[]){c, big, 0},
                                    fill_index, NULL, es),
                   WEFT_OK);
  weft_query_t *plain, *runs;
  assert_int_equal(
      weft_query_create(w, &(weft_query_desc_t){.include = {c, big}}, &plain),
      0);
  assert_int_equal(
      weft_query_create(w,
                        &(weft_query_desc_t){.include = {c, big},
                                             .flags = WEFT_QUERY_CHUNK_RUNS},
                        &runs),
      0);
  uint32_t most_plain, most_runs;
  assert_int_equal(walk_runs(w, plain, c, &most_plain), N);
  assert_int_equal(walk_runs(w, runs, c, &most_runs), N);
  assert_int_equal(most_runs, most_plain);
  weft_world_destroy(w);
}

/* ---- the flat cache of chunks ------------------------------------------ */

/*
 * Iteration hands out chunks from a per-query cache rebuilt when the world
 * changes structurally. A model of the world is compared with every
 * iteration while spawns, despawns, moves, batch spawns and trims change
 * it, in checked mode (every chunk through the out-of-line path, with its
 * version check) and unchecked (the inline path).
 */

typedef struct fc_pair_t {
  uint32_t lo;
  uint32_t hi;
} fc_pair_t;

enum { FC_MAX = 6000, FC_INDEX = 1u << 16, FC_QUERIES = 5 };

typedef struct fc_world_t {
  weft_world_t *w;
  weft_component_t a, s, t, b; /* a: u64 id, s: SoA pair, t: tag, b: u32 */
  weft_query_t *q[FC_QUERIES];
  weft_entity_t live[FC_MAX];
  uint32_t n;
  uint32_t seen[FC_INDEX]; /* by entity index: pass that saw it */
  uint32_t pass;
} fc_world_t;

static void fc_panic(void *user, const char *file, int line, const char *msg) {
  (void)user;
  fail_msg("unexpected panic at %s:%d: %s", file, line, msg);
}

static void fc_fill(void *user, const weft_iter_t *view, uint32_t first) {
  (void)user;
  (void)first;
  uint64_t *a = view->columns[0];
  uint32_t *lo = weft_iter_field(view, 1, 0);
  uint32_t *hi = weft_iter_field(view, 1, 1);
  for (uint32_t r = 0; r < view->count; r++) {
    uint32_t idx = weft_entity_index(view->entities[r]);
    a[r] = idx;
    lo[r] = idx;
    hi[r] = ~idx;
  }
}

/* Registers "s", a pair of fields stored field by field (SoA). */
static weft_component_t fc_register_pair(weft_world_t *w) {
  weft_field_desc_t fields[2] = {WEFT_FIELD(fc_pair_t, lo),
                                 WEFT_FIELD(fc_pair_t, hi)};
  weft_component_desc_t sd = {.name = "s",
                              .size = sizeof(fc_pair_t),
                              .fields = fields,
                              .field_count = 2,
                              .flags = WEFT_COMPONENT_SOA};
  weft_component_t id = WEFT_COMPONENT_NONE;
  assert_int_equal(weft_component_register(w, &sd, &id), WEFT_OK);
  return id;
}

static void fc_init(fc_world_t *f, weft_checked_t checked) {
  memset(f, 0, sizeof *f);
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.chunk_size = WEFT_CHUNK_SIZE_MIN; /* many chunks */
  cfg.checked = checked;
  cfg.panic = fc_panic;
  f->w = wt_world_new(&cfg);
  f->a = wt_register(f->w, "a", sizeof(uint64_t), 0);
  f->s = fc_register_pair(f->w);
  f->t = wt_register_tag(f->w, "t");
  f->b = wt_register(f->w, "b", sizeof(uint32_t), 0);
  /* Two queries before any archetype exists, the rest later. */
  f->q[0] = make_query(f->w, &(weft_query_desc_t){.include = {f->a}});
  f->q[1] =
      make_query(f->w, &(weft_query_desc_t){.include = {f->a, f->s},
                                            .flags = WEFT_QUERY_CHUNK_RUNS});
}

static bool fc_member(const fc_world_t *f, uint32_t qi, weft_entity_t e) {
  bool a = weft_has(f->w, e, f->a), s = weft_has(f->w, e, f->s);
  bool t = weft_has(f->w, e, f->t), b = weft_has(f->w, e, f->b);
  switch (qi) {
  case 0:
    return a;
  case 1:
    return a && s;
  case 2:
    return s && !t;
  case 3:
    return t;
  default:
    return b && (a || t);
  }
}

/* Checks one handed-out chunk of query qi against the model. */
static uint32_t fc_check_chunk(fc_world_t *f, uint32_t qi,
                               const weft_iter_t *it) {
  assert_true(it->count > 0);
  const uint64_t *a = NULL;
  const uint32_t *lo = NULL, *hi = NULL;
  if (qi == 0 || qi == 1 || qi == 4) {
    a = qi == 4 ? weft_iter_column_of(it, f->a) : it->columns[0];
    if (qi == 4)
      assert_ptr_equal(weft_iter_column(it, 0), it->columns[0]);
  }
  if (qi == 1 || qi == 2) {
    uint32_t term = qi == 1 ? 1 : 0;
    void *fs[WEFT_MAX_FIELDS];
    assert_int_equal(weft_iter_fields(it, term, fs), 2);
    lo = weft_iter_field(it, term, 0);
    hi = weft_iter_field(it, term, 1);
    assert_ptr_equal(fs[0], lo);
    assert_ptr_equal(fs[1], hi);
    assert_null(it->columns[term]); /* SoA: no plain array */
  }
  if (qi == 3)
    assert_null(it->columns[0]); /* a tag */
  for (uint32_t r = 0; r < it->count; r++) {
    weft_entity_t e = it->entities[r];
    uint32_t idx = weft_entity_index(e);
    assert_true(weft_is_alive(f->w, e));
    assert_true(fc_member(f, qi, e));
    assert_true(idx < FC_INDEX);
    assert_int_not_equal(f->seen[idx], f->pass); /* once per pass */
    f->seen[idx] = f->pass;
    if (a) {
      assert_int_equal(a[r], idx);
      assert_ptr_equal(&a[r], weft_get(f->w, e, f->a));
    }
    if (lo) {
      assert_int_equal(lo[r], idx);
      assert_int_equal(hi[r], ~idx);
      assert_ptr_equal(&lo[r], weft_get_field(f->w, e, f->s, 0));
    }
    assert_int_equal(weft_iter_enabled(it, f->t), weft_has(f->w, e, f->t));
  }
  return it->count;
}

/* Walks every query (the first ones twice at once, interleaved) and
 * compares what they hand out with the model. */
static void fc_check(fc_world_t *f) {
  for (uint32_t qi = 0; qi < FC_QUERIES; qi++) {
    if (!f->q[qi])
      continue;
    uint32_t expect = 0;
    for (uint32_t i = 0; i < f->n; i++)
      expect += fc_member(f, qi, f->live[i]);
    assert_int_equal(weft_query_count(f->q[qi]), expect);
    f->pass++;
    uint32_t rows = 0, chunks = 0, rows2 = 0;
    weft_iter_t it, it2;
    weft_query_iter(f->q[qi], &it);
    weft_query_iter(f->q[qi], &it2); /* a second walk, in lockstep */
    while (weft_iter_next(&it)) {
      rows += fc_check_chunk(f, qi, &it);
      chunks++;
      if (weft_iter_next(&it2)) {
        assert_int_equal(it2.count, it.count);
        assert_ptr_equal(it2.entities, it.entities);
        assert_ptr_equal(it2.columns[0], it.columns[0]);
        assert_int_equal(it2.home_node, it.home_node);
        rows2 += it2.count;
      }
    }
    assert_false(weft_iter_next(&it2));
    assert_false(weft_iter_next(&it)); /* stays at the end */
    assert_int_equal(it.count, 0);
    assert_int_equal(rows, expect);
    assert_int_equal(rows2, expect);
    (void)chunks;
  }
  assert_int_equal(weft_world_defer_depth(f->w), 0); /* every scope closed */
}

static weft_entity_t fc_spawn(fc_world_t *f, const weft_component_t *comps) {
  weft_entity_t e = wt_spawn_with(f->w, comps, NULL);
  uint32_t idx = weft_entity_index(e);
  uint64_t a = idx;
  fc_pair_t s = {idx, ~idx};
  if (weft_has(f->w, e, f->a))
    assert_int_equal(weft_set(f->w, e, f->a, &a), WEFT_OK);
  if (weft_has(f->w, e, f->s))
    assert_int_equal(weft_set(f->w, e, f->s, &s), WEFT_OK);
  return e;
}

static void fc_run(weft_checked_t checked, uint64_t seed) {
  static fc_world_t f;
  fc_init(&f, checked);
  wt_rng_t rng = wt_rng(seed);
  const weft_component_t lists[][4] = {
      {f.a, 0},           {f.a, f.s, 0}, {f.s, 0},      {f.s, f.t, 0},
      {f.a, f.s, f.t, 0}, {f.t, f.b, 0}, {f.a, f.b, 0}, {f.b, 0}};
  const uint32_t nlists = sizeof lists / sizeof lists[0];
  fc_check(&f);
  for (uint32_t step = 0; step < 400; step++) {
    uint32_t op = wt_below(&rng, 100);
    if (op < 30 && f.n < FC_MAX) {
      f.live[f.n++] = fc_spawn(&f, lists[wt_below(&rng, nlists)]);
    } else if (op < 34 && f.n + 600 <= FC_MAX) {
      /* A batch: fresh chunks, likely a fresh segment. */
      const weft_component_t as[] = {f.a, f.s, 0};
      uint32_t k = 1 + wt_below(&rng, 600);
      assert_int_equal(
          weft_spawn_batch(f.w, k, as, fc_fill, NULL, &f.live[f.n]), WEFT_OK);
      f.n += k;
    } else if (op < 60 && f.n) {
      /* Despawn a run of entities (emptying chunks and archetypes). */
      uint32_t k = 1 + wt_below(&rng, 40);
      for (uint32_t j = 0; j < k && f.n; j++) {
        uint32_t i = wt_below(&rng, f.n);
        assert_int_equal(weft_despawn(f.w, f.live[i]), WEFT_OK);
        f.live[i] = f.live[--f.n];
      }
    } else if (op < 80 && f.n) {
      /* Moves: add or remove t or b. */
      weft_entity_t e = f.live[wt_below(&rng, f.n)];
      weft_component_t c = wt_chance(&rng, 1, 2) ? f.t : f.b;
      if (weft_has(f.w, e, c))
        assert_int_equal(weft_remove(f.w, e, c), WEFT_OK);
      else
        assert_int_equal(weft_add(f.w, e, c, NULL), WEFT_OK);
    } else if (op < 83) {
      weft_world_trim(f.w); /* frees emptied segments */
    } else if (op < 86) {
      /* Queries created late see archetypes that already have chunks. */
      for (uint32_t qi = 2; qi < FC_QUERIES; qi++) {
        if (f.q[qi])
          continue;
        weft_query_desc_t d = empty_desc();
        if (qi == 2) {
          d.include[0] = f.s;
          d.exclude[0] = f.t;
        } else if (qi == 3) {
          d.include[0] = f.t;
        } else {
          d.include[0] = f.b;
          d.any[0] = f.a;
          d.any[1] = f.t;
        }
        f.q[qi] = make_query(f.w, &d);
        break;
      }
    }
    if (step % 3 == 0)
      fc_check(&f);
  }
  fc_check(&f);
  weft_world_destroy(f.w);
}

static void test_query_cache_follows_changes_unchecked(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 3; seed++)
    fc_run(WEFT_CHECKED_OFF, seed);
}

static void test_query_cache_follows_changes_checked(void **state) {
  (void)state;
  for (uint64_t seed = 11; seed <= 13; seed++)
    fc_run(WEFT_CHECKED_ON, seed);
}

/* Structural calls made during an iteration stage; the next iteration
 * sees them (the cache is rebuilt), in both modes. */
static void test_query_cache_sees_staged_changes(void **state) {
  (void)state;
  for (int mode = 0; mode < 2; mode++) {
    weft_world_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.checked = mode ? WEFT_CHECKED_ON : WEFT_CHECKED_OFF;
    cfg.panic = fc_panic;
    weft_world_t *w = wt_world_new(&cfg);
    weft_component_t a = wt_register(w, "a", 4, 0);
    weft_component_t t = wt_register_tag(w, "t");
    const weft_component_t only_a[] = {a, 0};
    for (int i = 0; i < 10; i++)
      wt_spawn_with(w, only_a, NULL);
    weft_query_t *q = make_query(w, &(weft_query_desc_t){.include = {a}});
    weft_query_t *qt = make_query(w, &(weft_query_desc_t){.include = {t}});
    assert_int_equal(iter_rows(qt), 0);
    weft_iter_t it;
    uint32_t rows = 0;
    weft_query_iter(q, &it);
    while (weft_iter_next(&it)) {
      for (uint32_t r = 0; r < it.count; r++) {
        /* Staged: the walk goes on over what it started with. */
        assert_int_equal(weft_add(w, it.entities[r], t, NULL), WEFT_OK);
        weft_entity_t pending;
        assert_int_equal(weft_spawn_with(w, only_a, NULL, &pending), WEFT_OK);
      }
      rows += it.count;
    }
    assert_int_equal(rows, 10);
    assert_int_equal(iter_rows(q), 20);
    assert_int_equal(iter_rows(qt), 10);
    /* An early exit closes the scope; a change after it shows too. */
    weft_query_iter(q, &it);
    assert_true(weft_iter_next(&it));
    weft_iter_close(&it);
    weft_entity_t e = wt_spawn_with(w, only_a, NULL);
    assert_int_equal(iter_rows(q), 21);
    assert_true(query_yields(q, e));
    assert_int_equal(weft_despawn(w, e), WEFT_OK);
    assert_false(query_yields(q, e));
    assert_int_equal(iter_rows(q), 20);
    weft_world_destroy(w);
  }
}

/* Rebuilding the cache reuses its memory: iterating after changes that
 * need no new chunks allocates nothing. */
static void test_query_cache_rebuild_allocates_nothing(void **state) {
  (void)state;
  weft_world_t *w = wt_world_sized(0, WEFT_CHUNK_SIZE_MIN);
  weft_component_t a = wt_register(w, "a", 8, 0);
  weft_component_t t = wt_register_tag(w, "t");
  const weft_component_t only_a[] = {a, 0};
  const weft_component_t at[] = {a, t, 0};
  enum { N = 3000 };
  static weft_entity_t es[N];
  assert_int_equal(weft_spawn_batch(w, N, only_a, NULL, NULL, es), WEFT_OK);
  weft_query_t *q = make_query(w, &(weft_query_desc_t){.include = {a}});
  weft_entity_t e = wt_spawn_with(w, at, NULL); /* archetype {a, t} */
  assert_int_equal(weft_despawn(w, e), WEFT_OK);
  assert_int_equal(iter_rows(q), N);
  uint64_t allocs = 0;
  for (uint32_t round = 0; round < 50; round++) {
    if (round == 2) /* both archetypes have their chunks now */
      allocs = wt_stats(w).allocs;
    /* Empty chunks and fill them again, in turn with rows of {a} and of
     * {a, t}. */
    for (uint32_t i = 0; i < N; i += 7)
      assert_int_equal(weft_despawn(w, es[i]), WEFT_OK);
    assert_int_equal(iter_rows(q), N - (N + 6) / 7);
    for (uint32_t i = 0; i < N; i += 7)
      es[i] = wt_spawn_with(w, round % 2 ? at : only_a, NULL);
    assert_int_equal(iter_rows(q), N);
  }
  assert_int_equal(wt_stats(w).allocs, allocs);
  weft_world_destroy(w);
}

/* Several threads start iterating a query whose cache is stale at once:
 * one rebuilds it while the others walk the matches, and all agree. The
 * owner thread changes the world between rounds, while no reader runs. */
enum { CT_THREADS = 4, CT_ROUNDS = 60, CT_MAX = 40000 };

typedef struct ct_shared_t {
  weft_world_t *w;
  weft_query_t *q;
  pthread_barrier_t go, done;
  uint64_t expect_sum;
  uint32_t expect_rows;
} ct_shared_t;

typedef struct ct_reader_t {
  ct_shared_t *s;
  uint32_t errors;
} ct_reader_t;

static void *ct_main(void *arg) {
  ct_reader_t *r = arg;
  ct_shared_t *s = r->s;
  for (uint32_t round = 0; round < CT_ROUNDS; round++) {
    pthread_barrier_wait(&s->go);
    for (uint32_t pass = 0; pass < 2; pass++) {
      uint64_t sum = 0;
      uint32_t rows = 0;
      weft_iter_t it;
      weft_query_iter(s->q, &it);
      while (weft_iter_next(&it)) {
        const uint64_t *a = it.columns[0];
        for (uint32_t i = 0; i < it.count; i++) {
          r->errors += a[i] != weft_entity_index(it.entities[i]);
          sum += a[i];
        }
        rows += it.count;
      }
      r->errors += rows != s->expect_rows;
      r->errors += sum != s->expect_sum;
    }
    pthread_barrier_wait(&s->done);
  }
  return NULL;
}

static void test_query_cache_concurrent_rebuild(void **state) {
  (void)state;
  static ct_shared_t s;
  static weft_entity_t live[CT_MAX];
  uint32_t n = 0;
  memset(&s, 0, sizeof s);
  s.w = wt_world_sized(0, WEFT_CHUNK_SIZE_MIN);
  weft_component_t a = wt_register(s.w, "a", 8, 0);
  weft_component_t t = wt_register_tag(s.w, "t");
  s.q = make_query(s.w, &(weft_query_desc_t){.include = {a}});
  assert_int_equal(pthread_barrier_init(&s.go, NULL, CT_THREADS + 1), 0);
  assert_int_equal(pthread_barrier_init(&s.done, NULL, CT_THREADS + 1), 0);
  pthread_t th[CT_THREADS];
  ct_reader_t rd[CT_THREADS];
  for (uint32_t i = 0; i < CT_THREADS; i++) {
    rd[i] = (ct_reader_t){.s = &s};
    assert_int_equal(pthread_create(&th[i], NULL, ct_main, &rd[i]), 0);
  }
  wt_rng_t rng = wt_rng(5);
  for (uint32_t round = 0; round < CT_ROUNDS; round++) {
    /* Structural changes leave the cache stale for the readers. */
    uint32_t k = wt_below(&rng, 1500);
    if (n + k > CT_MAX)
      k = CT_MAX - n;
    const weft_component_t list[] = {a, round % 2 ? t : 0, 0};
    assert_int_equal(weft_spawn_batch(s.w, k, list, fill_index, NULL, &live[n]),
                     WEFT_OK);
    n += k;
    for (uint32_t j = wt_below(&rng, 600); j && n; j--) {
      uint32_t i = wt_below(&rng, n);
      assert_int_equal(weft_despawn(s.w, live[i]), WEFT_OK);
      live[i] = live[--n];
    }
    s.expect_rows = n;
    s.expect_sum = 0;
    for (uint32_t i = 0; i < n; i++)
      s.expect_sum += weft_entity_index(live[i]);
    uint64_t allocs = wt_stats(s.w).allocs;
    pthread_barrier_wait(&s.go);
    pthread_barrier_wait(&s.done);
    /* Readers allocate nothing, rebuilding included. */
    assert_int_equal(wt_stats(s.w).allocs, allocs);
    assert_int_equal(weft_world_defer_depth(s.w), 0);
  }
  for (uint32_t i = 0; i < CT_THREADS; i++) {
    assert_int_equal(pthread_join(th[i], NULL), 0);
    assert_int_equal(rd[i].errors, 0);
  }
  pthread_barrier_destroy(&s.go);
  pthread_barrier_destroy(&s.done);
  weft_world_destroy(s.w);
}

/* One hand-out of an iterator, for comparing two walks. */
typedef struct fb_out_t {
  uint32_t count;
  const weft_entity_t *entities;
  void *col0;
  void *field1;
} fb_out_t;

/* Walks q, recording up to max hand-outs; *flat tells which way it went. */
static uint32_t fb_walk(weft_query_t *q, weft_component_t tag, fb_out_t *out,
                        uint32_t max, bool *flat) {
  weft_iter_t it;
  uint32_t n = 0;
  weft_query_iter(q, &it);
  *flat = it.slot0_ != NULL;
  while (weft_iter_next(&it)) {
    assert_true(n < max);
    out[n].count = it.count;
    out[n].entities = it.entities;
    out[n].col0 = it.columns[0];
    out[n].field1 = weft_iter_field(&it, 1, 1);
    void *fs[WEFT_MAX_FIELDS];
    assert_int_equal(weft_iter_fields(&it, 1, fs), 2);
    assert_ptr_equal(fs[1], out[n].field1);
    assert_null(weft_iter_column_of(&it, tag));
    assert_ptr_equal(weft_iter_column_of(&it, q->terms[0]), it.columns[0]);
    n++;
  }
  assert_int_equal(weft_world_defer_depth(q->world), 0);
  return n;
}

/*
 * An iterator that cannot use the flat cache (another thread is rebuilding
 * it, or it lacks room after a failed allocation) walks the query's
 * matches instead, handing out exactly the same chunks.
 */
static void test_query_cache_fallback_walks_matches(void **state) {
  (void)state;
  for (int mode = 0; mode < 4; mode++) {
    weft_world_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.chunk_size = WEFT_CHUNK_SIZE_MIN;
    cfg.checked = mode & 1 ? WEFT_CHECKED_ON : WEFT_CHECKED_OFF;
    cfg.panic = fc_panic;
    weft_world_t *w = wt_world_new(&cfg);
    weft_component_t a = wt_register(w, "a", 8, 0);
    weft_component_t sc = fc_register_pair(w);
    weft_component_t t = wt_register_tag(w, "t");
    const weft_component_t as[] = {a, sc, 0}, ast[] = {a, sc, t, 0};
    assert_int_equal(weft_spawn_batch(w, 900, as, NULL, NULL, NULL), WEFT_OK);
    weft_query_t *q = make_query(
        w, &(weft_query_desc_t){.include = {a, sc},
                                .flags = mode & 2 ? WEFT_QUERY_CHUNK_RUNS : 0});
    enum { MAX = 256 };
    static fb_out_t flat[MAX], walk[MAX];
    bool used_flat;
    for (int change = 0; change < 2; change++) {
      /* A structural change makes the cache stale... */
      assert_int_equal(
          weft_spawn_batch(w, 300, change ? as : ast, NULL, NULL, NULL),
          WEFT_OK);
      /* ...and another thread holds the rebuild (or the room is short). */
      uint32_t cap = q->flat_cap;
      if (change)
        q->flat_cap = 0;
      else
        assert_false(atomic_flag_test_and_set(&q->flat_lock));
      uint32_t nw = fb_walk(q, t, walk, MAX, &used_flat);
      assert_false(used_flat);
      uint32_t nw2 = fb_walk(q, t, walk, MAX, &used_flat); /* still stale */
      assert_false(used_flat);
      assert_int_equal(nw2, nw);
      if (change)
        q->flat_cap = cap;
      else
        atomic_flag_clear(&q->flat_lock);
      uint32_t nf = fb_walk(q, t, flat, MAX, &used_flat);
      assert_true(used_flat);
      assert_int_equal(nf, nw);
      uint32_t rows = 0;
      for (uint32_t i = 0; i < nf; i++) {
        assert_int_equal(flat[i].count, walk[i].count);
        assert_ptr_equal(flat[i].entities, walk[i].entities);
        assert_ptr_equal(flat[i].col0, walk[i].col0);
        assert_ptr_equal(flat[i].field1, walk[i].field1);
        assert_non_null(flat[i].field1);
        rows += flat[i].count;
      }
      assert_int_equal(rows, weft_query_count(q));
      if (mode & 2)
        assert_true(nf < 10); /* runs span chunks */
    }
    weft_world_destroy(w);
  }
}

typedef struct bf_state_t {
  weft_query_t *q;
  uint32_t before; /* rows the query had before the batch */
  uint32_t calls;
  uint32_t errors;
} bf_state_t;

static void bf_fill(void *user, const weft_iter_t *view, uint32_t first) {
  bf_state_t *st = user;
  /* Iterating from the fill callback sees every row the batch has placed
   * so far, as weft_query_count() does. */
  uint32_t rows = 0;
  weft_iter_t it;
  for (weft_query_iter(st->q, &it); weft_iter_next(&it);)
    rows += it.count;
  st->errors += rows != st->before + first + view->count;
  st->errors += rows != weft_query_count(st->q);
  st->calls++;
}

/* A batch spawn changes the world between its fill calls: the cache
 * follows within the batch too. */
static void test_query_cache_inside_batch_fill(void **state) {
  (void)state;
  for (int mode = 0; mode < 2; mode++) {
    weft_world_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.chunk_size = WEFT_CHUNK_SIZE_MIN;
    cfg.checked = mode ? WEFT_CHECKED_ON : WEFT_CHECKED_OFF;
    cfg.panic = fc_panic;
    weft_world_t *w = wt_world_new(&cfg);
    weft_component_t a = wt_register(w, "a", 8, 0);
    const weft_component_t only_a[] = {a, 0};
    for (int i = 0; i < 10; i++)
      wt_spawn_with(w, only_a, NULL);
    bf_state_t st = {.q = make_query(w, &(weft_query_desc_t){.include = {a}})};
    st.before = iter_rows(st.q); /* the cache is fresh */
    assert_int_equal(st.before, 10);
    assert_int_equal(weft_spawn_batch(w, 2000, only_a, bf_fill, &st, NULL),
                     WEFT_OK);
    assert_true(st.calls > 2);
    assert_int_equal(st.errors, 0);
    assert_int_equal(iter_rows(st.q), 2010);
    weft_world_destroy(w);
  }
}

/* --- misuse: destroying or walking what an iteration needs ---------------- */

typedef struct vxy_t {
  float x, y;
} vxy_t;

typedef struct mx_t {
  weft_world_t *w;
  weft_component_t v; /* SoA x, y */
  weft_query_t *q;
  int panics;
} mx_t;

static void count_panic(void *user, const char *file, int line,
                        const char *msg) {
  (void)file;
  (void)line;
  (void)msg;
  ((mx_t *)user)->panics++;
}

/* 2000 entities of SoA v in 4 KiB chunks, and a query over v. */
static void mx_init(mx_t *m, weft_checked_t checked) {
  memset(m, 0, sizeof *m);
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.chunk_size = 4096;
  cfg.checked = checked;
  cfg.panic = count_panic;
  cfg.panic_user = m;
  m->w = wt_world_new(&cfg);
  const weft_field_desc_t fields[2] = {WEFT_FIELD(vxy_t, x),
                                       WEFT_FIELD(vxy_t, y)};
  weft_component_desc_t d = WEFT_COMPONENT_DESC(vxy_t);
  d.fields = fields;
  d.field_count = 2;
  d.flags = WEFT_COMPONENT_SOA;
  assert_int_equal(weft_component_register(m->w, &d, &m->v), WEFT_OK);
  const weft_component_t comps[] = {m->v, 0};
  assert_int_equal(weft_spawn_batch(m->w, 2000, comps, NULL, NULL, NULL),
                   WEFT_OK);
  weft_query_desc_t qd = empty_desc();
  qd.include[0] = m->v;
  m->q = make_query(m->w, &qd);
}

/* A query is not destroyed while an iteration of it is open, in every
 * build (its iterator walks the query's memory): WEFT_EBUSY until the
 * last one ends, by its end, weft_iter_close() or an unwind. */
static void test_query_destroy_during_iteration_is_refused(void **state) {
  (void)state;
  mx_t m;
  mx_init(&m, WEFT_CHECKED_OFF);
  weft_iter_t it, it2;
  weft_query_iter(m.q, &it);
  assert_true(weft_iter_next(&it));
  weft_query_iter(m.q, &it2);
  assert_int_equal(weft_query_destroy(m.q), WEFT_EBUSY);
  assert_non_null(strstr(weft_world_last_error(m.w), "open iterations"));
  /* Another query, iterated to its end inside this iteration, may go. */
  weft_query_desc_t od = empty_desc();
  od.include[0] = m.v;
  weft_query_t *other = make_query(m.w, &od);
  assert_int_equal(iter_rows(other), 2000);
  assert_int_equal(weft_query_destroy(other), WEFT_OK);
  uint32_t rows = it.count;
  while (weft_iter_next(&it)) /* the query is still whole */
    rows += it.count;
  assert_int_equal(rows, 2000);
  assert_int_equal(weft_query_destroy(m.q), WEFT_EBUSY); /* it2 */
  weft_iter_close(&it2);
  weft_iter_close(&it2); /* twice: counted once */
  assert_int_equal(weft_query_destroy(m.q), WEFT_OK);
  /* The first open iteration of the world counts too, when it outlives
   * one opened after it. */
  weft_query_desc_t qd0 = empty_desc();
  qd0.include[0] = m.v;
  m.q = make_query(m.w, &qd0);
  other = make_query(m.w, &qd0);
  weft_query_iter(m.q, &it);
  weft_query_iter(other, &it2);
  weft_iter_close(&it2);
  assert_int_equal(weft_query_destroy(m.q), WEFT_EBUSY);
  assert_int_equal(weft_query_destroy(other), WEFT_OK);
  weft_iter_close(&it);
  assert_int_equal(weft_query_destroy(m.q), WEFT_OK);
  /* An unwind ends every iteration, counted ones included. */
  weft_query_desc_t qd = empty_desc();
  qd.include[0] = m.v;
  m.q = make_query(m.w, &qd);
  weft_query_iter(m.q, &it);
  assert_true(weft_iter_next(&it));
  assert_int_equal(weft_query_destroy(m.q), WEFT_EBUSY);
  assert_int_equal(weft_world_unwind(m.w), WEFT_OK);
  assert_int_equal(weft_query_destroy(m.q), WEFT_OK);
  assert_false(weft_iter_next(&it)); /* orphaned: ends, reads nothing */
  weft_iter_close(&it);
  assert_int_equal(m.panics, 0);
  weft_world_destroy(m.w);
}

/* An iteration orphaned by weft_world_unwind() ends at its next step, in
 * every build, once the world may have freed what it walks (here: its
 * query's chunk cache, regrown by the spawns the unwind let through), and
 * its accessors answer nothing; checked mode also panics. A new iteration
 * sees the world as it is. */
static void test_query_iteration_ends_after_unwind(void **state) {
  (void)state;
  const weft_checked_t modes[2] = {WEFT_CHECKED_OFF, WEFT_CHECKED_ON};
  for (int k = 0; k < 2; k++) {
    mx_t m;
    mx_init(&m, modes[k]);
    weft_iter_t it;
    weft_query_iter(m.q, &it);
    assert_true(weft_iter_next(&it));
    assert_non_null(weft_iter_field(&it, 0, 1));
    assert_int_equal(weft_world_unwind(m.w), WEFT_OK);
    const weft_component_t comps[] = {m.v, 0};
    for (int i = 0; i < 4000; i++)
      wt_spawn_with(m.w, comps, NULL);
    assert_null(weft_iter_field(&it, 0, 1));
    void *fields[WEFT_MAX_FIELDS];
    assert_int_equal(weft_iter_fields(&it, 0, fields), 0);
    assert_null(weft_iter_column_of(&it, m.v));
    assert_false(weft_iter_next(&it));
    assert_non_null(strstr(weft_world_last_error(m.w), "unwind"));
    assert_false(weft_iter_next(&it));
    weft_iter_close(&it);
    assert_int_equal(m.panics, modes[k] == WEFT_CHECKED_ON ? 1 : 0);
    assert_int_equal(iter_rows(m.q), 6000);
    assert_int_equal(weft_world_defer_depth(m.w), 0);
    assert_int_equal(weft_query_destroy(m.q), WEFT_OK);
    weft_world_destroy(m.w);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_query_chunk_runs_cover_contiguous_chunks),
      cmocka_unit_test(test_query_chunk_runs_respect_padding),
      cmocka_unit_test(test_query_null_iterators_are_inert),
      cmocka_unit_test(test_query_create_rejects_invalid),
      cmocka_unit_test(test_query_disabled_rules),
      cmocka_unit_test(test_query_matches_brute_force_oracle),
      cmocka_unit_test(test_query_created_before_archetypes),
      cmocka_unit_test(test_query_column_of_and_enabled),
      cmocka_unit_test(test_query_columns_are_writable),
      cmocka_unit_test(test_query_skips_empty_chunks),
      cmocka_unit_test(test_query_cache_follows_changes_unchecked),
      cmocka_unit_test(test_query_cache_follows_changes_checked),
      cmocka_unit_test(test_query_cache_sees_staged_changes),
      cmocka_unit_test(test_query_cache_rebuild_allocates_nothing),
      cmocka_unit_test(test_query_cache_concurrent_rebuild),
      cmocka_unit_test(test_query_cache_fallback_walks_matches),
      cmocka_unit_test(test_query_cache_inside_batch_fill),
      cmocka_unit_test(test_query_destroy_during_iteration_is_refused),
      cmocka_unit_test(test_query_iteration_ends_after_unwind),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
