/* SPDX-License-Identifier: MIT */
/* Unit tests for resources, event channels and staged (per-worker) event
 * emission. */
#include "support/weft_test.h"

#include <pthread.h>
#include <stdlib.h>

#include <weft/component.h> /* WEFT_NAME_MAX */
#include <weft/resource.h>

/* The scheduler's staging API; not public, self-contained. */
#include "../core/resource_internal.h"

typedef struct rpos_t {
  float x, y, z;
} rpos_t;

static weft_resource_t res_reg(weft_world_t *w, const char *name, size_t size,
                               size_t align, const void *init) {
  weft_resource_t id = 0;
  assert_int_equal(weft_resource_register(w, name, size, align, init, &id),
                   WEFT_OK);
  assert_int_not_equal(id, 0);
  return id;
}

static weft_channel_t chan_reg(weft_world_t *w, const char *name, size_t size) {
  weft_channel_t id = 0;
  assert_int_equal(weft_channel_register(w, name, size, &id), WEFT_OK);
  assert_int_not_equal(id, 0);
  return id;
}

/* --- resources ------------------------------------------------------------ */

static void test_resource_register_lookup_get_set_size(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  rpos_t init = {1.0f, 2.0f, 3.0f};
  weft_resource_t a = res_reg(w, "gravity", sizeof init, 0, &init);
  weft_resource_t b = res_reg(w, "dt", sizeof(double), 8, NULL);
  assert_int_equal(a, 1);
  assert_int_equal(b, 2);

  weft_resource_t found = 0;
  assert_int_equal(weft_resource_lookup(w, "gravity", &found), WEFT_OK);
  assert_int_equal(found, a);
  assert_int_equal(weft_resource_lookup(w, "dt", &found), WEFT_OK);
  assert_int_equal(found, b);
  assert_int_equal(weft_resource_lookup(w, "nope", &found), WEFT_ENONAME);
  assert_int_equal(weft_resource_lookup(w, NULL, &found), WEFT_EINVAL);
  assert_int_equal(weft_resource_lookup(w, "dt", NULL), WEFT_EINVAL);

  assert_int_equal(weft_resource_size(w, a), sizeof(rpos_t));
  assert_int_equal(weft_resource_size(w, b), sizeof(double));

  rpos_t *g = weft_resource_get(w, a);
  assert_non_null(g);
  assert_true(g->x == 1.0f && g->y == 2.0f && g->z == 3.0f);
  rpos_t next = {-4.0f, 5.5f, 0.25f};
  assert_int_equal(weft_resource_set(w, a, &next), WEFT_OK);
  assert_ptr_equal(weft_resource_get(w, a), g);
  assert_memory_equal(g, &next, sizeof next);
  g->x = 9.0f; /* writes through the pointer are the resource */
  assert_true(((rpos_t *)weft_resource_get(w, a))->x == 9.0f);

  double *dt = weft_resource_get(w, b);
  assert_true(*dt == 0.0);
  double v = 1.0 / 60.0;
  assert_int_equal(weft_resource_set(w, b, &v), WEFT_OK);
  assert_true(*dt == v);
  assert_int_equal(weft_resource_set(w, b, NULL), WEFT_EINVAL);

  /* out may be NULL; the id is still the next one. */
  assert_int_equal(weft_resource_register(w, "third", 4, 0, NULL, NULL),
                   WEFT_OK);
  assert_int_equal(weft_resource_lookup(w, "third", &found), WEFT_OK);
  assert_int_equal(found, 3);
  weft_world_destroy(w);
}

static void test_resource_addresses_stable_across_registrations(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  enum { N = 200 };
  void *ptrs[N];
  for (uint32_t i = 0; i < N; i++) {
    char name[32];
    snprintf(name, sizeof name, "res%u", i);
    uint32_t size = 4 + (i % 13) * 12;
    weft_resource_t id = res_reg(w, name, size, 0, NULL);
    assert_int_equal(id, i + 1);
    ptrs[i] = weft_resource_get(w, id);
    assert_non_null(ptrs[i]);
    memset(ptrs[i], (int)(i & 0xff), size);
    /* Every earlier pointer is still the resource's, with its bytes. */
    for (uint32_t j = 0; j <= i; j += 1 + i / 8) {
      assert_ptr_equal(weft_resource_get(w, j + 1), ptrs[j]);
      assert_int_equal(((unsigned char *)ptrs[j])[0], j & 0xff);
    }
  }
  for (uint32_t i = 0; i < N; i++) {
    assert_ptr_equal(weft_resource_get(w, i + 1), ptrs[i]);
    uint32_t size = 4 + (i % 13) * 12;
    assert_int_equal(weft_resource_size(w, i + 1), size);
    for (uint32_t k = 0; k < size; k++)
      assert_int_equal(((unsigned char *)ptrs[i])[k], i & 0xff);
  }
  weft_world_destroy(w);
}

static void test_resource_alignment_honoured(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  for (int round = 0; round < 8; round++) {
    for (size_t align = 1; align <= 64; align *= 2) {
      char name[32];
      snprintf(name, sizeof name, "a%zu_%d", align, round);
      weft_resource_t id = res_reg(w, name, 1 + (size_t)round, align, NULL);
      assert_true(wt_aligned(weft_resource_get(w, id), align));
    }
    char name[32];
    snprintf(name, sizeof name, "default%d", round);
    weft_resource_t id = res_reg(w, name, 3, 0, NULL); /* 0 means 16 */
    assert_true(wt_aligned(weft_resource_get(w, id), 16));
    snprintf(name, sizeof name, "line%d", round);
    id = res_reg(w, name, 200, 64, NULL);
    assert_true(wt_aligned(weft_resource_get(w, id), 64));
  }
  weft_world_destroy(w);
}

static void test_resource_init_copied_or_zero_filled(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  unsigned char init[100];
  for (int i = 0; i < 100; i++)
    init[i] = (unsigned char)(i * 7 + 1);
  /* Dirty the heap a little so that zero fill is not luck. */
  for (int i = 0; i < 4; i++) {
    char name[16];
    snprintf(name, sizeof name, "junk%d", i);
    weft_resource_t id = res_reg(w, name, 100, 0, NULL);
    memset(weft_resource_get(w, id), 0xee, 100);
  }
  weft_resource_t copied = res_reg(w, "copied", 100, 4, init);
  weft_resource_t zeroed = res_reg(w, "zeroed", 100, 4, NULL);
  init[0] = 0; /* the copy is the world's own */
  unsigned char *c = weft_resource_get(w, copied);
  unsigned char *z = weft_resource_get(w, zeroed);
  assert_ptr_not_equal(c, init);
  assert_int_equal(c[0], 1);
  assert_memory_equal(c + 1, init + 1, 99);
  for (int i = 0; i < 100; i++)
    assert_int_equal(z[i], 0);
  weft_world_destroy(w);
}

static void test_resource_register_rejects_bad_input(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_resource_t id = 77;
  char longname[WEFT_NAME_MAX + 1];
  memset(longname, 'n', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  char maxname[WEFT_NAME_MAX];
  memset(maxname, 'm', sizeof maxname - 1);
  maxname[sizeof maxname - 1] = '\0';

  assert_int_equal(weft_resource_register(NULL, "x", 4, 0, NULL, &id),
                   WEFT_EINVAL);
  assert_int_equal(weft_resource_register(w, NULL, 4, 0, NULL, &id),
                   WEFT_EINVAL);
  assert_true(strlen(weft_world_last_error(w)) > 0);
  assert_int_equal(weft_resource_register(w, "", 4, 0, NULL, &id), WEFT_EINVAL);
  assert_int_equal(weft_resource_register(w, longname, 4, 0, NULL, &id),
                   WEFT_EINVAL);
  assert_int_equal(weft_resource_register(w, "x", 0, 0, NULL, &id),
                   WEFT_EINVAL);
  assert_int_equal(
      weft_resource_register(w, "x", WEFT_RESOURCE_MAX_SIZE + 1, 0, NULL, &id),
      WEFT_EINVAL);
  assert_int_equal(weft_resource_register(w, "x", SIZE_MAX, 0, NULL, &id),
                   WEFT_EINVAL);
  const size_t bad_align[] = {3, 6, 12, 24, 48, 96, 128, 4096};
  for (size_t i = 0; i < sizeof bad_align / sizeof bad_align[0]; i++)
    assert_int_equal(
        weft_resource_register(w, "x", 64, bad_align[i], NULL, &id),
        WEFT_EINVAL);
  assert_int_equal(id, 77); /* untouched on failure */
  weft_resource_t found;
  assert_int_equal(weft_resource_lookup(w, "x", &found), WEFT_ENONAME);

  /* The limits themselves are accepted. */
  weft_resource_t big = res_reg(w, maxname, WEFT_RESOURCE_MAX_SIZE, 64, NULL);
  assert_int_equal(weft_resource_size(w, big), WEFT_RESOURCE_MAX_SIZE);
  unsigned char *p = weft_resource_get(w, big);
  assert_int_equal(p[WEFT_RESOURCE_MAX_SIZE - 1], 0);

  weft_resource_t x = res_reg(w, "x", 4, 0, NULL);
  id = 77;
  assert_int_equal(weft_resource_register(w, "x", 8, 0, NULL, &id),
                   WEFT_EEXIST);
  assert_non_null(strstr(weft_world_last_error(w), "x"));
  assert_int_equal(id, 77);
  assert_int_equal(weft_resource_size(w, x), 4); /* the first one stays */
  weft_world_destroy(w);
}

static void test_resource_unknown_ids(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  uint32_t v = 5;
  /* Nothing registered yet (no resource state at all). */
  assert_null(weft_resource_get(w, 1));
  assert_int_equal(weft_resource_size(w, 1), 0);
  assert_int_equal(weft_resource_set(w, 1, &v), WEFT_ENONAME);
  weft_resource_t found;
  assert_int_equal(weft_resource_lookup(w, "a", &found), WEFT_ENONAME);

  weft_resource_t a = res_reg(w, "a", sizeof v, 0, &v);
  const weft_resource_t bad[] = {0, a + 1, 1000, UINT32_MAX};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_null(weft_resource_get(w, bad[i]));
    assert_int_equal(weft_resource_size(w, bad[i]), 0);
    assert_int_equal(weft_resource_set(w, bad[i], &v), WEFT_ENONAME);
  }
  assert_null(weft_resource_get(NULL, a));
  assert_int_equal(weft_resource_size(NULL, a), 0);
  assert_int_equal(weft_resource_set(NULL, a, &v), WEFT_EINVAL);
  assert_int_equal(*(uint32_t *)weft_resource_get(w, a), 5);
  weft_world_destroy(w);
}

static void test_resource_too_many(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  char name[32];
  for (uint32_t i = 0; i < WEFT_MAX_RESOURCES; i++) {
    snprintf(name, sizeof name, "r%u", i);
    assert_int_equal(res_reg(w, name, 8, 0, NULL), i + 1);
  }
  weft_resource_t id = 0;
  assert_int_equal(weft_resource_register(w, "one_more", 8, 0, NULL, &id),
                   WEFT_ETOOMANY);
  assert_int_equal(id, 0);
  /* A taken name is still reported as taken. */
  assert_int_equal(weft_resource_register(w, "r0", 8, 0, NULL, &id),
                   WEFT_EEXIST);
  assert_null(weft_resource_get(w, WEFT_MAX_RESOURCES + 1));
  assert_non_null(weft_resource_get(w, WEFT_MAX_RESOURCES));
  weft_world_destroy(w);
}

/* --- channels ------------------------------------------------------------- */

typedef struct hit_t {
  uint32_t target;
  int32_t damage;
} hit_t;

static void test_channel_push_read_order(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_channel_t hits = chan_reg(w, "hits", sizeof(hit_t));
  weft_channel_t bytes = chan_reg(w, "bytes", 1);
  assert_int_equal(hits, 1);
  assert_int_equal(bytes, 2);
  weft_channel_t found = 0;
  assert_int_equal(weft_channel_lookup(w, "bytes", &found), WEFT_OK);
  assert_int_equal(found, bytes);

  uint32_t n = 99;
  assert_null(weft_event_read(w, hits, &n));
  assert_int_equal(n, 0);
  for (uint32_t i = 0; i < 1000; i++) {
    hit_t h = {i, -(int32_t)i * 3};
    assert_int_equal(weft_event_push(w, hits, &h), WEFT_OK);
    if (i % 3 == 0) {
      unsigned char b = (unsigned char)i;
      assert_int_equal(weft_event_push(w, bytes, &b), WEFT_OK);
    }
  }
  const hit_t *hs = weft_event_read(w, hits, &n);
  assert_non_null(hs);
  assert_int_equal(n, 1000);
  for (uint32_t i = 0; i < n; i++) {
    assert_int_equal(hs[i].target, i);
    assert_int_equal(hs[i].damage, -(int32_t)i * 3);
  }
  const unsigned char *bs = weft_event_read(w, bytes, &n);
  assert_int_equal(n, 334);
  for (uint32_t i = 0; i < n; i++)
    assert_int_equal(bs[i], (unsigned char)(i * 3));
  /* count may be NULL. */
  assert_ptr_equal(weft_event_read(w, bytes, NULL), bs);
  assert_int_equal(weft_event_push(w, hits, NULL), WEFT_EINVAL);
  weft_world_destroy(w);
}

static void test_channel_clear_keeps_memory(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_channel_t ch = chan_reg(w, "hits", sizeof(hit_t));
  weft_channel_t other = chan_reg(w, "other", sizeof(uint64_t));
  for (uint32_t i = 0; i < 500; i++) {
    hit_t h = {i, 1};
    assert_int_equal(weft_event_push(w, ch, &h), WEFT_OK);
  }
  uint64_t x = 42;
  assert_int_equal(weft_event_push(w, other, &x), WEFT_OK);
  uint32_t n = 0;
  const void *before = weft_event_read(w, ch, &n);
  assert_int_equal(n, 500);

  weft_event_clear(w, ch);
  assert_null(weft_event_read(w, ch, &n));
  assert_int_equal(n, 0);
  assert_non_null(weft_event_read(w, other, &n)); /* only ch was cleared */
  assert_int_equal(n, 1);

  uint64_t allocs = wt_stats(w).allocs;
  for (int round = 0; round < 3; round++) {
    for (uint32_t i = 0; i < 500; i++) {
      hit_t h = {i + 7, 2};
      assert_int_equal(weft_event_push(w, ch, &h), WEFT_OK);
    }
    const hit_t *hs = weft_event_read(w, ch, &n);
    assert_ptr_equal(hs, before); /* the kept memory */
    assert_int_equal(n, 500);
    assert_int_equal(hs[0].target, 7);
    assert_int_equal(hs[499].target, 506);
    weft_event_clear(w, ch);
  }
  assert_int_equal(wt_stats(w).allocs, allocs);
  weft_world_destroy(w);
}

static void test_channel_clear_zero_clears_all(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_event_clear(w, 0); /* nothing registered: a no-op */
  weft_channel_t ids[5];
  for (int i = 0; i < 5; i++) {
    char name[16];
    snprintf(name, sizeof name, "ch%d", i);
    ids[i] = chan_reg(w, name, 4 + (size_t)i);
    unsigned char ev[8] = {0};
    for (int k = 0; k <= i; k++)
      assert_int_equal(weft_event_push(w, ids[i], ev), WEFT_OK);
  }
  uint32_t n = 0;
  for (int i = 0; i < 5; i++) {
    assert_non_null(weft_event_read(w, ids[i], &n));
    assert_int_equal(n, (uint32_t)i + 1);
  }
  uint64_t allocs = wt_stats(w).allocs;
  weft_event_clear(w, 0);
  for (int i = 0; i < 5; i++) {
    assert_null(weft_event_read(w, ids[i], &n));
    assert_int_equal(n, 0);
  }
  unsigned char ev[8] = {1};
  assert_int_equal(weft_event_push(w, ids[4], ev), WEFT_OK);
  assert_non_null(weft_event_read(w, ids[4], &n));
  assert_int_equal(n, 1);
  assert_int_equal(wt_stats(w).allocs, allocs);
  weft_event_clear(NULL, 0);
  weft_world_destroy(w);
}

static void test_channel_unknown_id(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  uint32_t ev = 1, n = 55;
  assert_int_equal(weft_event_push(w, 1, &ev), WEFT_ENONAME);
  assert_null(weft_event_read(w, 1, &n));
  assert_int_equal(n, 0);
  weft_channel_t found = 0;
  assert_int_equal(weft_channel_lookup(w, "c", &found), WEFT_ENONAME);
  assert_int_equal(weft_channel_lookup(w, NULL, &found), WEFT_EINVAL);

  weft_channel_t c = chan_reg(w, "c", sizeof ev);
  assert_int_equal(weft_event_push(w, c, &ev), WEFT_OK);
  const weft_channel_t bad[] = {0, c + 1, 999, UINT32_MAX};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(weft_event_push(w, bad[i], &ev), WEFT_ENONAME);
    n = 55;
    assert_null(weft_event_read(w, bad[i], &n));
    assert_int_equal(n, 0);
  }
  weft_event_clear(w, c + 1); /* unknown: changes nothing, says so */
  assert_non_null(strstr(weft_world_last_error(w), "channel"));
  assert_non_null(weft_event_read(w, c, &n));
  assert_int_equal(n, 1);
  assert_int_equal(weft_event_push(NULL, c, &ev), WEFT_EINVAL);
  assert_null(weft_event_read(NULL, c, &n));
  assert_int_equal(n, 0);
  weft_world_destroy(w);
}

static void test_channel_register_limits(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_channel_t id = 77;
  assert_int_equal(weft_channel_register(w, "z", 0, &id), WEFT_EINVAL);
  assert_int_equal(weft_channel_register(w, "z", WEFT_EVENT_MAX_SIZE + 1, &id),
                   WEFT_EINVAL);
  assert_int_equal(weft_channel_register(w, NULL, 4, &id), WEFT_EINVAL);
  assert_int_equal(weft_channel_register(w, "", 4, &id), WEFT_EINVAL);
  assert_int_equal(weft_channel_register(NULL, "z", 4, &id), WEFT_EINVAL);
  assert_int_equal(id, 77);

  weft_channel_t one = chan_reg(w, "one", 1);
  weft_channel_t max = chan_reg(w, "max", WEFT_EVENT_MAX_SIZE);
  unsigned char big[WEFT_EVENT_MAX_SIZE];
  for (uint32_t i = 0; i < WEFT_EVENT_MAX_SIZE; i++)
    big[i] = (unsigned char)(i ^ 0x5a);
  assert_int_equal(weft_event_push(w, max, big), WEFT_OK);
  assert_int_equal(weft_event_push(w, one, big), WEFT_OK);
  uint32_t n = 0;
  assert_memory_equal(weft_event_read(w, max, &n), big, sizeof big);
  assert_int_equal(n, 1);
  assert_int_equal(*(const unsigned char *)weft_event_read(w, one, &n), big[0]);

  assert_int_equal(weft_channel_register(w, "one", 8, &id), WEFT_EEXIST);
  /* Resource and channel names are separate namespaces. */
  weft_resource_t r = res_reg(w, "one", 4, 0, NULL);
  assert_int_equal(r, 1);

  char name[32];
  for (uint32_t i = 2; i < WEFT_MAX_CHANNELS; i++) {
    snprintf(name, sizeof name, "c%u", i);
    assert_int_equal(chan_reg(w, name, 4), i + 1);
  }
  assert_int_equal(weft_channel_register(w, "past", 4, &id), WEFT_ETOOMANY);
  assert_int_equal(id, 77);
  weft_world_destroy(w);
}

/* --- staged emission ------------------------------------------------------ */

/* Every staged test event starts with a unique 64-bit id; the rest of its
 * bytes are a pattern derived from the id. */
static void ev_fill(unsigned char *ev, size_t size, uint64_t id) {
  memset(ev, 0, size);
  memcpy(ev, &id, size < 8 ? size : 8);
  for (size_t i = 8; i < size; i++)
    ev[i] = (unsigned char)(id * 31 + i);
}

static uint64_t ev_id(const unsigned char *ev) {
  uint64_t id;
  memcpy(&id, ev, 8);
  return id;
}

/* Checks that channel ch holds exactly ids[0, n) in order, as events of
 * size bytes. */
static void check_channel(const weft_world_t *w, weft_channel_t ch, size_t size,
                          const uint64_t *ids, uint32_t n) {
  uint32_t count = 0;
  const unsigned char *evs = weft_event_read(w, ch, &count);
  assert_int_equal(count, n);
  unsigned char want[WEFT_EVENT_MAX_SIZE];
  for (uint32_t i = 0; i < n; i++) {
    assert_int_equal(ev_id(evs + i * size), ids[i]);
    ev_fill(want, size, ids[i]);
    assert_memory_equal(evs + i * size, want, size);
  }
}

typedef struct oracle_t {
  uint64_t key;
  uint32_t slot;
  uint32_t seq;
  uint32_t ch; /* index into the test's channel table */
  uint64_t id;
} oracle_t;

static int oracle_cmp(const void *pa, const void *pb) {
  const oracle_t *a = pa, *b = pb;
  if (a->key != b->key)
    return a->key < b->key ? -1 : 1;
  if (a->slot != b->slot)
    return a->slot < b->slot ? -1 : 1;
  return a->seq < b->seq ? -1 : (a->seq > b->seq);
}

enum { NCH = 3 };
static const size_t ch_size[NCH] = {8, 24, WEFT_EVENT_MAX_SIZE};

/* How the keys of one oracle round are drawn. */
typedef enum keys_t {
  KEYS_TIES,   /* 40 distinct keys: ties within and across slots */
  KEYS_WIDE,   /* wide random keys; slots 0 and 1 staged in key order */
  KEYS_OWNED,  /* each slot a key range of its own, like workers' jobs */
  KEYS_ONE,    /* every event in one slot, in key order */
  KEYS_ROUNDS, /* number of kinds */
} keys_t;

/* Stages n random events of every kind of round over nslots slots and
 * publishes them (with @p pool: on it, after reserving @p parts merges),
 * checking each channel against a sort of the staged events. */
static void oracle_rounds(weft_pool_t *pool, uint32_t parts, uint32_t nslots,
                          uint32_t n, uint64_t seed) {
  weft_world_t *w = wt_world_new(NULL);
  weft_channel_t ch[NCH];
  for (int c = 0; c < NCH; c++) {
    char name[16];
    snprintf(name, sizeof name, "ch%d", c);
    ch[c] = chan_reg(w, name, ch_size[c]);
  }
  assert_int_equal(weft__events_slots(w, nslots), WEFT_OK);
  oracle_t *orc = calloc(n, sizeof *orc);
  uint64_t *want = calloc(n, sizeof *want);
  uint32_t *seq = calloc(nslots, sizeof *seq);
  assert_non_null(orc);
  assert_non_null(want);
  assert_non_null(seq);
  wt_rng_t rng = wt_rng(seed);
  /* Each kind of keys twice: events of random channels, then each slot's
   * events of one channel (the publish counts those without reading them). */
  for (int round = 0; round < 2 * KEYS_ROUNDS; round++) {
    const bool per_slot = round >= KEYS_ROUNDS;
    memset(seq, 0, nslots * sizeof *seq);
    for (uint32_t i = 0; i < n; i++) {
      oracle_t *o = &orc[i];
      o->slot =
          round % KEYS_ROUNDS == KEYS_ONE ? nslots - 1 : wt_below(&rng, nslots);
      switch ((keys_t)(round % KEYS_ROUNDS)) {
      case KEYS_TIES:
        o->key = wt_below(&rng, 40);
        break;
      case KEYS_WIDE:
        o->key =
            o->slot < 2 ? (uint64_t)i * 1000 + o->slot : wt_next(&rng) >> 3;
        break;
      case KEYS_OWNED:
        o->key = (uint64_t)o->slot << 40 | wt_below(&rng, 1u << 20);
        break;
      default:
        o->key = i / 3;
        break;
      }
      o->seq = seq[o->slot]++;
      o->ch = per_slot ? o->slot % NCH : wt_below(&rng, NCH);
      o->id = ((uint64_t)round << 32) | i;
      unsigned char ev[WEFT_EVENT_MAX_SIZE];
      ev_fill(ev, ch_size[o->ch], o->id);
      assert_int_equal(weft__event_stage(w, o->slot, o->key, ch[o->ch], ev),
                       WEFT_OK);
    }
    assert_int_equal(weft__events_staged(w), n);
    qsort(orc, n, sizeof *orc, oracle_cmp);
    if (pool)
      assert_int_equal(weft__events_reserve(w, parts), WEFT_OK);
    assert_int_equal(weft__events_publish(w, pool, WEFT_WORKER_EXTERNAL), n);
    assert_int_equal(weft__events_staged(w), 0);
    for (int c = 0; c < NCH; c++) {
      uint32_t k = 0;
      for (uint32_t i = 0; i < n; i++)
        if (orc[i].ch == (uint32_t)c)
          want[k++] = orc[i].id;
      check_channel(w, ch[c], ch_size[c], want, k);
    }
    weft_event_clear(w, 0);
  }
  /* Nothing staged: publishing is a no-op. */
  assert_int_equal(weft__events_publish(w, pool, WEFT_WORKER_EXTERNAL), 0);
  free(orc);
  free(want);
  free(seq);
  weft_world_destroy(w);
}

static void test_events_publish_matches_oracle(void **state) {
  (void)state;
  oracle_rounds(NULL, 0, 5, 6000, 0x5eedu);
}

/* On a pool, a publish large enough runs as parallel merges over ranges
 * of keys; whatever the number of ranges and slots, and however the keys
 * spread over the slots, the channels get what the oracle says. */
static void test_events_parallel_publish_matches_oracle(void **state) {
  (void)state;
  weft_pool_t *pool = NULL;
  weft_pool_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.placement.workers = 3;
  assert_int_equal(weft_pool_create(&pc, &pool), WEFT_OK);
  const uint32_t parts[] = {2, 3, 8, 64, 200 /* capped at 64 */};
  for (uint32_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    oracle_rounds(pool, parts[i], 1 + i % 4, 20000, 77 + i);
  oracle_rounds(pool, 6, 40, 30000, 5);
  weft_pool_destroy(pool);
}

/* Stages the same logical events over nslots slots, each key owned by one
 * slot (by key range), and returns what each channel received (ids). */
static void publish_over(uint32_t nslots, const uint64_t *keys,
                         const uint32_t *chs, uint32_t n, uint64_t keyspace,
                         uint64_t *out, uint32_t *out_n) {
  weft_world_t *w = wt_world_new(NULL);
  weft_channel_t ch[NCH];
  for (int c = 0; c < NCH; c++) {
    char name[16];
    snprintf(name, sizeof name, "ch%d", c);
    ch[c] = chan_reg(w, name, ch_size[c]);
  }
  assert_int_equal(weft__events_slots(w, nslots), WEFT_OK);
  /* An event pushed before is kept ahead of the published ones. */
  unsigned char ev[WEFT_EVENT_MAX_SIZE];
  ev_fill(ev, ch_size[0], UINT64_MAX);
  assert_int_equal(weft_event_push(w, ch[0], ev), WEFT_OK);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t slot = (uint32_t)(keys[i] * nslots / keyspace);
    ev_fill(ev, ch_size[chs[i]], i);
    assert_int_equal(weft__event_stage(w, slot, keys[i], ch[chs[i]], ev),
                     WEFT_OK);
  }
  assert_int_equal(weft__events_publish(w, NULL, WEFT_WORKER_EXTERNAL), n);
  uint32_t total = 0;
  for (int c = 0; c < NCH; c++) {
    uint32_t count = 0;
    const unsigned char *evs = weft_event_read(w, ch[c], &count);
    for (uint32_t i = 0; i < count; i++) {
      ev_fill(ev, ch_size[c], ev_id(evs + i * ch_size[c]));
      assert_memory_equal(evs + i * ch_size[c], ev, ch_size[c]);
      out[total++] = ev_id(evs + i * ch_size[c]);
    }
    out[total++] = UINT64_MAX - 1 - (uint64_t)c; /* channel separator */
  }
  *out_n = total;
  weft_world_destroy(w);
}

static void test_events_same_order_on_any_slot_count(void **state) {
  (void)state;
  enum { N = 3000, KEYSPACE = 500 };
  uint64_t keys[N];
  uint32_t chs[N];
  wt_rng_t rng = wt_rng(42);
  for (uint32_t i = 0; i < N; i++) {
    keys[i] = wt_below(&rng, KEYSPACE); /* ties: same key, same slot */
    chs[i] = wt_below(&rng, NCH);
  }
  static uint64_t base[N + 8], got[N + 8];
  uint32_t nbase = 0, ngot = 0;
  publish_over(1, keys, chs, N, KEYSPACE, base, &nbase);
  assert_int_equal(nbase, N + 1 + NCH);
  assert_int_equal(base[0], UINT64_MAX); /* the pushed event first */
  const uint32_t counts[] = {2, 3, 8};
  for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
    publish_over(counts[k], keys, chs, N, KEYSPACE, got, &ngot);
    assert_int_equal(ngot, nbase);
    assert_memory_equal(got, base, nbase * sizeof(uint64_t));
  }
  /* And that order is by key, then staging order. */
  uint64_t prev_key = 0, prev_id = 0;
  for (uint32_t i = 1; i < nbase && base[i] < N; i++) {
    uint64_t key = keys[base[i]];
    if (i > 1) {
      assert_true(key >= prev_key);
      if (key == prev_key)
        assert_true(base[i] > prev_id);
    }
    prev_key = key;
    prev_id = base[i];
  }
}

static void test_events_staged_invisible_until_publish(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_channel_t ch = chan_reg(w, "e", 8);
  assert_int_equal(weft__events_slots(w, 2), WEFT_OK);
  uint64_t ev = 1;
  assert_int_equal(weft_event_push(w, ch, &ev), WEFT_OK);
  for (uint64_t i = 0; i < 10; i++) {
    ev = 100 + i;
    assert_int_equal(weft__event_stage(w, (uint32_t)(i & 1), 10 - i, ch, &ev),
                     WEFT_OK);
  }
  uint32_t n = 0;
  const uint64_t *evs = weft_event_read(w, ch, &n);
  assert_int_equal(n, 1);
  assert_int_equal(evs[0], 1);
  assert_int_equal(weft__events_staged(w), 10);
  /* Clearing the channel does not touch what is staged. */
  weft_event_clear(w, 0);
  assert_null(weft_event_read(w, ch, &n));
  assert_int_equal(weft__events_staged(w), 10);
  assert_int_equal(weft__events_publish(w, NULL, WEFT_WORKER_EXTERNAL), 10);
  evs = weft_event_read(w, ch, &n);
  assert_int_equal(n, 10);
  for (uint32_t i = 0; i < 10; i++)
    assert_int_equal(evs[i], 109 - i); /* keys 1..10 */
  weft_world_destroy(w);
}

static void test_events_stage_errors(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  uint64_t ev = 0;
  /* No slots yet. */
  assert_int_equal(weft__event_stage(w, 0, 0, 1, &ev), WEFT_EINVAL);
  assert_int_equal(weft__events_publish(w, NULL, WEFT_WORKER_EXTERNAL), 0);
  assert_int_equal(weft__events_staged(w), 0);
  weft_channel_t ch = chan_reg(w, "e", 8);
  assert_int_equal(weft__events_slots(w, 2), WEFT_OK);
  assert_int_equal(weft__events_slots(w, 1), WEFT_OK); /* never shrinks */
  assert_int_equal(weft__event_stage(w, 1, 0, ch, &ev), WEFT_OK);
  assert_int_equal(weft__event_stage(w, 2, 0, ch, &ev), WEFT_EINVAL);
  assert_int_equal(weft__event_stage(w, 0, 0, ch + 1, &ev), WEFT_ENONAME);
  assert_int_equal(weft__event_stage(w, 0, 0, 0, &ev), WEFT_ENONAME);
  assert_int_equal(weft__event_stage(w, 0, 0, ch, NULL), WEFT_EINVAL);
  assert_int_equal(weft__events_staged(w), 1);
  /* Growing the slot array keeps what is staged. */
  assert_int_equal(weft__events_slots(w, 16), WEFT_OK);
  assert_int_equal(weft__events_staged(w), 1);
  assert_int_equal(weft__events_slots(NULL, 4), WEFT_EINVAL);
  assert_int_equal(weft__events_publish(NULL, NULL, WEFT_WORKER_EXTERNAL), 0);
  assert_int_equal(weft__events_staged(NULL), 0);
  /* Destroying the world with events staged frees them. */
  assert_int_equal(weft__event_stage(w, 15, 3, ch, &ev), WEFT_OK);
  weft_world_destroy(w);
}

/* Rounds of the same load: after the first two, staging and publishing
 * (with @p pool: in parallel merges, reserved as a sync point does)
 * allocate nothing, by the world's counters and jemalloc's for this
 * thread. */
static void steady_rounds(weft_pool_t *pool, uint32_t per_round) {
  weft_world_t *w = wt_world_new(NULL);
  weft_channel_t a = chan_reg(w, "a", 8), b = chan_reg(w, "b", 40);
  assert_int_equal(weft__events_slots(w, 4), WEFT_OK);
  uint64_t allocs0 = wt_stats(w).allocs, allocs = 0;
  wt_alloc_probe_t probe;
  memset(&probe, 0, sizeof probe);
  for (int round = 0; round < 4; round++) {
    wt_rng_t rng = wt_rng(7); /* the same load every round */
    if (round == 2) {
      allocs = wt_stats(w).allocs;
      probe = wt_alloc_probe(w);
    }
    for (uint32_t i = 0; i < per_round; i++) {
      unsigned char ev[40];
      ev_fill(ev, 40, i);
      uint32_t slot = wt_below(&rng, 4);
      weft_channel_t c = wt_chance(&rng, 1, 2) ? a : b;
      assert_int_equal(weft__event_stage(w, slot, wt_next(&rng) % 100, c, ev),
                       WEFT_OK);
    }
    if (pool)
      assert_int_equal(weft__events_reserve(w, 8), WEFT_OK);
    assert_int_equal(weft__events_publish(w, pool, WEFT_WORKER_EXTERNAL),
                     per_round);
    weft_event_clear(w, 0);
  }
  /* Staging grew the slots (counted at publish) in the first rounds. */
  assert_true(allocs > allocs0);
  assert_int_equal(wt_stats(w).allocs, allocs);
  wt_assert_no_alloc(w, &probe, "rounds 2 and 3");
  weft_world_destroy(w);
}

static void test_events_steady_state_allocates_nothing(void **state) {
  (void)state;
  steady_rounds(NULL, 2000);
  weft_pool_t *pool = NULL;
  weft_pool_config_t pc;
  memset(&pc, 0, sizeof pc);
  pc.placement.workers = 2;
  assert_int_equal(weft_pool_create(&pc, &pool), WEFT_OK);
  steady_rounds(pool, 9000); /* above the parallel threshold */
  weft_pool_destroy(pool);
}

static void test_events_staging_allocations_are_counted(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_channel_t ch = chan_reg(w, "e", 8);
  assert_int_equal(weft__events_slots(w, 2), WEFT_OK);
  /* Give the channel room first, so only staging can allocate below. */
  for (uint64_t i = 0; i < 5000; i++)
    assert_int_equal(weft_event_push(w, ch, &i), WEFT_OK);
  weft_event_clear(w, ch);
  uint64_t allocs = wt_stats(w).allocs;
  for (uint64_t i = 0; i < 5000; i++) /* in key order: no sorting */
    assert_int_equal(weft__event_stage(w, 1, i, ch, &i), WEFT_OK);
  assert_int_equal(weft__events_publish(w, NULL, WEFT_WORKER_EXTERNAL), 5000);
  assert_true(wt_stats(w).allocs > allocs);
  weft_world_destroy(w);
}

/* Four threads stage concurrently, each into its own slot. */
enum { NTHREADS = 4, PER_THREAD = 5000 };

typedef struct stager_t {
  weft_world_t *w;
  weft_channel_t ch;
  uint32_t slot;
  int rc;
} stager_t;

static void *stager_main(void *arg) {
  stager_t *st = arg;
  st->rc = 0;
  for (uint32_t i = 0; i < PER_THREAD; i++) {
    /* Keys disjoint per thread and interleaved across threads; each
     * thread stages its second half before its first. */
    uint32_t j = (i + PER_THREAD / 2) % PER_THREAD;
    uint64_t key = (uint64_t)j * NTHREADS + st->slot;
    uint64_t ev[2] = {key, ~key};
    int rc = weft__event_stage(st->w, st->slot, key, st->ch, ev);
    if (rc != 0 && st->rc == 0)
      st->rc = rc;
  }
  return NULL;
}

static void test_events_threaded_staging(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_channel_t ch = chan_reg(w, "t", 2 * sizeof(uint64_t));
  assert_int_equal(weft__events_slots(w, NTHREADS), WEFT_OK);
  for (int round = 0; round < 3; round++) {
    pthread_t th[NTHREADS];
    stager_t st[NTHREADS];
    for (uint32_t t = 0; t < NTHREADS; t++) {
      st[t] = (stager_t){w, ch, t, -1};
      assert_int_equal(pthread_create(&th[t], NULL, stager_main, &st[t]), 0);
    }
    for (uint32_t t = 0; t < NTHREADS; t++) {
      assert_int_equal(pthread_join(th[t], NULL), 0);
      assert_int_equal(st[t].rc, 0);
    }
    assert_int_equal(weft__events_staged(w), NTHREADS * PER_THREAD);
    assert_int_equal(weft__events_publish(w, NULL, WEFT_WORKER_EXTERNAL),
                     NTHREADS * PER_THREAD);
    uint32_t n = 0;
    const uint64_t *evs = weft_event_read(w, ch, &n);
    assert_int_equal(n, NTHREADS * PER_THREAD);
    for (uint32_t i = 0; i < n; i++) {
      assert_int_equal(evs[2 * i], i);
      assert_int_equal(evs[2 * i + 1], ~(uint64_t)i);
    }
    weft_event_clear(w, ch);
  }
  weft_world_destroy(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_resource_register_lookup_get_set_size),
      cmocka_unit_test(test_resource_addresses_stable_across_registrations),
      cmocka_unit_test(test_resource_alignment_honoured),
      cmocka_unit_test(test_resource_init_copied_or_zero_filled),
      cmocka_unit_test(test_resource_register_rejects_bad_input),
      cmocka_unit_test(test_resource_unknown_ids),
      cmocka_unit_test(test_resource_too_many),
      cmocka_unit_test(test_channel_push_read_order),
      cmocka_unit_test(test_channel_clear_keeps_memory),
      cmocka_unit_test(test_channel_clear_zero_clears_all),
      cmocka_unit_test(test_channel_unknown_id),
      cmocka_unit_test(test_channel_register_limits),
      cmocka_unit_test(test_events_publish_matches_oracle),
      cmocka_unit_test(test_events_parallel_publish_matches_oracle),
      cmocka_unit_test(test_events_same_order_on_any_slot_count),
      cmocka_unit_test(test_events_staged_invisible_until_publish),
      cmocka_unit_test(test_events_stage_errors),
      cmocka_unit_test(test_events_steady_state_allocates_nothing),
      cmocka_unit_test(test_events_staging_allocations_are_counted),
      cmocka_unit_test(test_events_threaded_staging),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
