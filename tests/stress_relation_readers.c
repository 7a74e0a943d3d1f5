/* SPDX-License-Identifier: MIT */
/*
 * stress_relation_readers.c: relation reads from worker threads.
 *
 * A pooled world (3 workers, every system dispatched to the pool) holds
 * HUBS targets and NSRC sources. Between frames the owner thread changes
 * edges directly: an exclusive, payload-carrying "Member" edge from each
 * source to a hub (added, replaced, removed) and plain "Link" edges to any
 * number of hubs, and now and then despawns a source and spawns its
 * replacement. Removals from a hub with many sources swap-remove its
 * reverse entries, so the sort at the end of each change is exercised on
 * every frame. During the frame two systems that declare both relations in
 * their read list run on the workers: one checks every source's
 * weft_relation_first/get/count/has/each against the model, the other
 * every hub's weft_relation_sources (ascending handles, the model's set,
 * the payloads); the first also reads its hub's sources, so that all
 * workers read the same hubs at once. Mismatches and checks are counted with
 * atomics; the test asserts no mismatch and that every entity was checked every
 * frame. Run under TSan, the frame's reads and the owner's changes must not
 * race.
 *
 * Environment:
 *   WEFT_REL_SEED  PRNG seed (default 0x5eed0fed9e5)
 */
#include "support/weft_test.h"

#include <inttypes.h>
#include <stdatomic.h>

#define HUBS 12u
#define NSRC 600u
#define FRAMES 40u
#define CHANGES 400u /* owner edge changes between frames */

typedef struct readers_t {
  weft_world_t *w;
  weft_component_t member, link, src_c, hub_c;
  weft_entity_t src[NSRC], hub[HUBS];
  int32_t member_of[NSRC]; /* hub index, or -1 */
  int32_t pay[NSRC];       /* the Member edge's payload */
  bool link_to[NSRC][HUBS];
  uint64_t rng;
  atomic_uint bad;
  atomic_uint checked;
  atomic_uint first_bad; /* 1 + source or 1000 + hub of the first miss */
} readers_t;

static uint32_t next(readers_t *m) {
  m->rng ^= m->rng << 13;
  m->rng ^= m->rng >> 7;
  m->rng ^= m->rng << 17;
  return (uint32_t)(m->rng >> 11);
}

static void miss(readers_t *m, uint32_t what) {
  unsigned zero = 0;
  atomic_fetch_add(&m->bad, 1);
  atomic_compare_exchange_strong(&m->first_bad, &zero, what);
}

/* Collects targets or sources of one call. */
typedef struct seen_t {
  weft_entity_t e[NSRC];
  int32_t pay[NSRC];
  uint32_t n;
} seen_t;

static bool collect_target(weft_entity_t s, weft_entity_t t, void *payload,
                           void *user) {
  (void)s;
  (void)payload;
  seen_t *c = user;
  if (c->n < NSRC)
    c->e[c->n] = t;
  c->n++;
  return true;
}

static bool collect_source(weft_entity_t s, weft_entity_t t, void *payload,
                           void *user) {
  (void)t;
  seen_t *c = user;
  if (c->n < NSRC) {
    c->e[c->n] = s;
    c->pay[c->n] = payload ? *(const int32_t *)payload : INT32_MIN;
  }
  c->n++;
  return true;
}

/* One source's edges against the model. */
static bool source_ok(readers_t *m, uint32_t i) {
  weft_world_t *w = m->w;
  weft_entity_t e = m->src[i], t = 0;
  int32_t h = m->member_of[i];
  int rc = weft_relation_first(w, e, m->member, &t);
  if (h < 0) {
    if (rc != WEFT_ENOTFOUND || weft_relation_count(w, e, m->member) != 0)
      return false;
  } else {
    const int32_t *p = weft_relation_get(w, e, m->member, m->hub[h]);
    if (rc != 0 || t != m->hub[h] || !p || *p != m->pay[i] ||
        !weft_relation_has(w, e, m->member, m->hub[h]))
      return false;
    /* The hub's sources, read by every worker at once: a reader that
     * wrote (sorting on demand) would race here. */
    static _Thread_local seen_t c;
    c.n = 0;
    if (weft_relation_sources(w, m->hub[h], m->member, collect_source, &c))
      return false;
    bool found = false;
    for (uint32_t j = 0; j < c.n && j < NSRC; j++)
      found |= c.e[j] == e && c.pay[j] == m->pay[i];
    if (!found)
      return false;
  }
  seen_t c = {.n = 0};
  if (weft_relation_each(w, e, m->link, collect_target, &c) != 0)
    return false;
  uint32_t want = 0;
  for (uint32_t k = 0; k < HUBS; k++)
    want += m->link_to[i][k];
  if (c.n != want || weft_relation_count(w, e, m->link) != want)
    return false;
  for (uint32_t j = 0; j < c.n; j++) {
    if (j && c.e[j - 1] >= c.e[j])
      return false; /* ascending targets */
    bool found = false;
    for (uint32_t k = 0; k < HUBS; k++)
      found |= m->hub[k] == c.e[j] && m->link_to[i][k];
    if (!found)
      return false;
  }
  return true;
}

/* One hub's sources against the model. */
static bool hub_ok(readers_t *m, uint32_t h) {
  static _Thread_local seen_t c;
  c.n = 0;
  if (weft_relation_sources(m->w, m->hub[h], m->member, collect_source, &c))
    return false;
  uint32_t want = 0;
  for (uint32_t i = 0; i < NSRC; i++)
    want += m->member_of[i] == (int32_t)h;
  if (c.n != want)
    return false;
  for (uint32_t j = 0; j < c.n; j++) {
    if (j && c.e[j - 1] >= c.e[j])
      return false; /* ascending sources */
    uint32_t i = 0;
    while (i < NSRC && m->src[i] != c.e[j])
      i++;
    if (i == NSRC || m->member_of[i] != (int32_t)h || c.pay[j] != m->pay[i])
      return false;
  }
  return true;
}

static int check_sources(weft_sysctx_t *ctx, const weft_iter_t *it) {
  readers_t *m = ctx->user;
  const uint32_t *idx = it->columns[0];
  for (uint32_t r = 0; r < it->count; r++) {
    if (!source_ok(m, idx[r]))
      miss(m, 1 + idx[r]);
    atomic_fetch_add(&m->checked, 1);
  }
  return 0;
}

static int check_hubs(weft_sysctx_t *ctx, const weft_iter_t *it) {
  readers_t *m = ctx->user;
  const uint32_t *idx = it->columns[0];
  for (uint32_t r = 0; r < it->count; r++) {
    if (!hub_ok(m, idx[r]))
      miss(m, 1000 + idx[r]);
    atomic_fetch_add(&m->checked, 1);
  }
  return 0;
}

static void register_reader(readers_t *m, const char *name, weft_component_t c,
                            weft_system_fn fn) {
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.query.include[0] = c;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.read[0] = m->member;
  d.read[1] = m->link;
  d.batch = 16;
  d.run = fn;
  d.user = m;
  weft_system_t id;
  assert_int_equal(weft_system_register(m->w, &d, &id), WEFT_OK);
}

static void spawn_source(readers_t *m, uint32_t i) {
  weft_component_t c[] = {m->src_c, 0};
  const void *v[] = {&i};
  assert_int_equal(weft_spawn_with(m->w, c, v, &m->src[i]), WEFT_OK);
  m->member_of[i] = -1;
  memset(m->link_to[i], 0, sizeof m->link_to[i]);
}

/* One random direct change by the owner, applied to the model too. */
static void change(readers_t *m, int32_t stamp) {
  weft_world_t *w = m->w;
  uint32_t i = next(m) % NSRC, h = next(m) % HUBS, k = next(m) % 100;
  weft_entity_t e = m->src[i];
  if (k < 45) {
    int32_t v = stamp + (int32_t)i;
    assert_int_equal(weft_relation_add(w, e, m->member, m->hub[h], &v),
                     WEFT_OK);
    m->member_of[i] = (int32_t)h;
    m->pay[i] = v;
  } else if (k < 70) {
    int32_t o = m->member_of[i];
    if (o >= 0)
      assert_int_equal(weft_relation_remove(w, e, m->member, m->hub[o]),
                       WEFT_OK);
    m->member_of[i] = -1;
  } else if (k < 83) {
    assert_int_equal(weft_relation_add(w, e, m->link, m->hub[h], NULL),
                     WEFT_OK);
    m->link_to[i][h] = true;
  } else if (k < 97) {
    assert_int_equal(weft_relation_remove(w, e, m->link, m->hub[h]), WEFT_OK);
    m->link_to[i][h] = false;
  } else {
    assert_int_equal(weft_despawn(w, e), WEFT_OK);
    spawn_source(m, i);
  }
}

static void test_relation_readers_on_workers(void **state) {
  (void)state;
  static readers_t m;
  memset(&m, 0, sizeof m);
  m.rng = wt_env_u64("stress_relation_readers", "WEFT_REL_SEED",
                     UINT64_C(0x5eed0fed9e5)) |
          1;
  weft_pool_t *pool = NULL;
  m.w = wt_world_pooled(3, 0, &pool);
  wt_dispatch_everything(m.w);
  m.src_c = wt_register(m.w, "Src", 4, 4);
  m.hub_c = wt_register(m.w, "Hub", 4, 4);
  weft_relation_desc_t md = {
      .name = "Member", .size = 4, .flags = WEFT_RELATION_EXCLUSIVE};
  weft_relation_desc_t ld = {.name = "Link"};
  assert_int_equal(weft_relation_register(m.w, &md, &m.member), WEFT_OK);
  assert_int_equal(weft_relation_register(m.w, &ld, &m.link), WEFT_OK);
  for (uint32_t h = 0; h < HUBS; h++) {
    weft_component_t c[] = {m.hub_c, 0};
    const void *v[] = {&h};
    assert_int_equal(weft_spawn_with(m.w, c, v, &m.hub[h]), WEFT_OK);
  }
  for (uint32_t i = 0; i < NSRC; i++)
    spawn_source(&m, i);
  register_reader(&m, "check.sources", m.src_c, check_sources);
  register_reader(&m, "check.hubs", m.hub_c, check_hubs);
  for (uint32_t f = 0; f < FRAMES; f++) {
    for (uint32_t k = 0; k < CHANGES; k++)
      change(&m, (int32_t)(f * 100000u));
    atomic_store(&m.checked, 0);
    int rc = weft_world_run_phase(m.w, WEFT_PHASE_FIXED_UPDATE, 0.016);
    if (rc)
      fail_msg("frame %u: %s", f, weft_world_last_error(m.w));
    if (atomic_load(&m.bad))
      fail_msg("frame %u: %u reads differ from the model (first: %u)", f,
               atomic_load(&m.bad), atomic_load(&m.first_bad));
    assert_int_equal(atomic_load(&m.checked), NSRC + HUBS);
  }
  weft_world_destroy(m.w);
  weft_pool_destroy(pool);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_relation_readers_on_workers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
