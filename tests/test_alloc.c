/* SPDX-License-Identifier: MIT */
/* Zero-allocation proof for weft's hot paths.
 *
 * Two independent counters watch for allocations:
 *  - stats.allocs, the world's own count of the heap allocations it made;
 *  - the per-thread allocated-bytes counter of weft's private jemalloc
 *    ("thread.allocatedp"), which sees every block weft takes from it on
 *    this thread, whatever world it is for.
 * Builds without jemalloc (-DWEFT_JEMALLOC=OFF, sanitizers) have no such
 * counter; there only stats.allocs is checked.
 */
#define _GNU_SOURCE 1 /* dladdr(), RTLD_DEFAULT */
#include "support/relation_test.h"

#include <dlfcn.h>
#include <malloc.h> /* mallinfo2(): glibc's own allocator's statistics */
#include <stdlib.h>

#include <weft/builtin.h>

#include "core/world.h" /* w->alloc.fail_in: injected allocation failures */
#include "scheduler/sched.h" /* the pipeline's command buffers */
#include "support/health_test.h"

typedef struct p3_t {
  float x, y, z;
} p3_t;

typedef struct v2_t {
  double dx, dy;
} v2_t;

typedef struct soa_t {
  uint32_t a;
  uint32_t b;
} soa_t;

typedef struct meter_t {
  const uint64_t *counter;
  uint64_t bytes0;
  uint64_t allocs0;
  uint64_t alloc_bytes0;
} meter_t;

static meter_t meter_start(const weft_world_t *w) {
  meter_t m;
  m.counter = wt_thread_allocated();
  weft_world_stats_t s;
  weft_world_stats(w, &s);
  m.allocs0 = s.allocs;
  m.alloc_bytes0 = s.alloc_bytes;
  m.bytes0 = m.counter != NULL ? *m.counter : 0;
  return m;
}

/* Bytes jemalloc saw this thread allocate since meter_start (0 when the
 * counter is unavailable). */
static uint64_t meter_bytes(const meter_t *m) {
  return m->counter != NULL ? *m->counter - m->bytes0 : 0;
}

static uint64_t meter_allocs(const meter_t *m, const weft_world_t *w) {
  weft_world_stats_t s;
  weft_world_stats(w, &s);
  return s.allocs - m->allocs0;
}

typedef struct big_world_t {
  weft_world_t *w;
  weft_component_t p, v, s, t;
  weft_query_t *q_pv, *q_s, *q_any;
  weft_entity_t *es;
  uint32_t n;
} big_world_t;

static p3_t p3_for(uint32_t k) {
  p3_t p = {(float)k, 1.0f, (float)(k & 7u)};
  return p;
}

static void fill_big(void *user, const weft_iter_t *view, uint32_t first) {
  (void)user;
  p3_t *p = view->columns[0];
  v2_t *v = view->columns[1];
  uint32_t *sa = weft_iter_field(view, 2, 0);
  uint32_t *sb = weft_iter_field(view, 2, 1);
  for (uint32_t r = 0; r < view->count; r++) {
    p[r] = p3_for(first + r);
    v[r].dx = 1.0;
    v[r].dy = 2.0;
    sa[r] = first + r;
    sb[r] = ~(first + r);
  }
}

static big_world_t big_world_new(uint32_t n) {
  big_world_t b;
  memset(&b, 0, sizeof b);
  b.n = n;
  b.w = wt_world_new(NULL);
  b.p = wt_register(b.w, "p", sizeof(p3_t), 0);
  b.v = wt_register(b.w, "v", sizeof(v2_t), 0);
  static const weft_field_desc_t sf[] = {WEFT_FIELD(soa_t, a),
                                         WEFT_FIELD(soa_t, b)};
  weft_component_desc_t d = WEFT_COMPONENT_DESC(soa_t);
  d.fields = sf;
  d.field_count = 2;
  d.flags = WEFT_COMPONENT_SOA;
  assert_int_equal(weft_component_register(b.w, &d, &b.s), WEFT_OK);
  b.t = wt_register_tag(b.w, "t");
  b.es = calloc(n, sizeof *b.es);
  assert_non_null(b.es);
  const weft_component_t pvs[] = {b.p, b.v, b.s, 0};
  assert_int_equal(weft_spawn_batch(b.w, n, pvs, fill_big, NULL, b.es),
                   WEFT_OK);
  /* A second archetype: every 16th entity also carries the tag. */
  for (uint32_t k = 0; k < n; k += 16) {
    assert_int_equal(weft_add(b.w, b.es[k], b.t, NULL), WEFT_OK);
  }
  weft_query_desc_t q;
  memset(&q, 0, sizeof q);
  q.include[0] = b.p;
  q.include[1] = b.v;
  assert_int_equal(weft_query_create(b.w, &q, &b.q_pv), WEFT_OK);
  memset(&q, 0, sizeof q);
  q.include[0] = b.s;
  assert_int_equal(weft_query_create(b.w, &q, &b.q_s), WEFT_OK);
  memset(&q, 0, sizeof q);
  q.include[0] = b.p;
  q.any[0] = b.t;
  q.any[1] = b.v;
  assert_int_equal(weft_query_create(b.w, &q, &b.q_any), WEFT_OK);
  return b;
}

static void big_world_free(big_world_t *b) {
  weft_query_destroy(b->q_pv);
  weft_query_destroy(b->q_s);
  weft_query_destroy(b->q_any);
  weft_world_destroy(b->w);
  free(b->es);
}

/* One pass of every iteration path; returns rows visited. */
static uint64_t iterate_all(big_world_t *b) {
  uint64_t rows = 0;
  weft_iter_t it;
  weft_query_iter(b->q_pv, &it);
  while (weft_iter_next(&it)) {
    p3_t *p = it.columns[0];
    const v2_t *v = it.columns[1];
    for (uint32_t r = 0; r < it.count; r++) {
      p[r].y += (float)v[r].dx; /* a real system-style write */
    }
    rows += it.count;
  }
  weft_query_iter(b->q_s, &it);
  while (weft_iter_next(&it)) {
    const uint32_t *sa = weft_iter_field(&it, 0, 0);
    const uint32_t *sb = weft_iter_field(&it, 0, 1);
    for (uint32_t r = 0; r < it.count; r++) {
      assert_int_equal(sa[r], ~sb[r]);
    }
    rows += it.count;
  }
  weft_query_iter(b->q_any, &it);
  while (weft_iter_next(&it)) {
    const v2_t *v = weft_iter_column_of(&it, b->v);
    assert_non_null(v);
    assert_true(weft_iter_enabled(&it, b->p));
    rows += it.count + (uint64_t)weft_iter_enabled(&it, b->t);
  }
  return rows;
}

static void test_alloc_iteration_allocates_nothing(void **state) {
  (void)state;
  const uint32_t n = 60000;
  big_world_t b = big_world_new(n);
  uint64_t warm = iterate_all(&b); /* warm-up */
  assert_true(warm >= 3ull * n);

  meter_t m = meter_start(b.w);
  uint64_t rows = 0;
  for (int pass = 0; pass < 3; pass++) {
    rows += iterate_all(&b);
    rows += weft_query_count(b.q_pv) + weft_query_count(b.q_s) +
            weft_query_count(b.q_any);
  }
  assert_int_equal(meter_bytes(&m), 0);
  assert_int_equal(meter_allocs(&m, b.w), 0);
  assert_int_equal(rows, 3 * (warm + 3ull * n));
  /* Every p.y was incremented once per pass: 1 + 4 passes of dx = 1. */
  const p3_t *p = weft_get(b.w, b.es[n / 2], b.p);
  assert_non_null(p);
  assert_true(p->y == 5.0f);
  big_world_free(&b);
}

static void test_alloc_entity_access_allocates_nothing(void **state) {
  (void)state;
  const uint32_t n = 60000, probes = 20000;
  big_world_t b = big_world_new(n);
  uint32_t *pick = calloc(probes, sizeof *pick);
  assert_non_null(pick);
  wt_rng_t rng = wt_rng(8);
  for (uint32_t i = 0; i < probes; i++) {
    pick[i] = wt_below(&rng, n);
  }
  for (int pass = 0; pass < 2; pass++) { /* pass 0 is the warm-up */
    meter_t m = meter_start(b.w);
    for (uint32_t i = 0; i < probes; i++) {
      uint32_t k = pick[i];
      weft_entity_t e = b.es[k];
      assert_true(weft_is_alive(b.w, e));
      assert_true(weft_has(b.w, e, b.p));
      assert_int_equal(weft_has(b.w, e, b.t), k % 16 == 0);
      assert_true(weft_is_enabled(b.w, e, b.v));
      const p3_t *gp = weft_get(b.w, e, b.p);
      assert_non_null(gp);
      p3_t *mp = weft_get_mut(b.w, e, b.p);
      assert_ptr_equal(mp, gp);
      const void *tp = NULL;
      assert_int_equal(weft_try_get(b.w, e, b.v, &tp), WEFT_OK);
      p3_t np = p3_for(k + 1u + (uint32_t)pass);
      assert_int_equal(weft_set(b.w, e, b.p, &np), WEFT_OK);
      p3_t rp;
      assert_int_equal(weft_read(b.w, e, b.p, &rp), WEFT_OK);
      assert_true(rp.x == np.x && rp.y == np.y && rp.z == np.z);
      soa_t sv = {k * 3u, ~(k * 3u)};
      assert_int_equal(weft_set(b.w, e, b.s, &sv), WEFT_OK);
      soa_t rs;
      assert_int_equal(weft_read(b.w, e, b.s, &rs), WEFT_OK);
      assert_int_equal(rs.a, sv.a);
      assert_int_equal(rs.b, sv.b);
      uint32_t *fa = weft_get_field(b.w, e, b.s, 0);
      assert_non_null(fa);
      assert_int_equal(*fa, sv.a);
    }
    /* Batched random access resolves through the same index. */
    enum { BLOCK = 64 };
    weft_entity_t hs[BLOCK];
    const void *ps[BLOCK];
    for (uint32_t i = 0; i + BLOCK <= probes; i += BLOCK) {
      for (uint32_t j = 0; j < BLOCK; j++)
        hs[j] = b.es[pick[i + j]];
      assert_int_equal(weft_get_many(b.w, hs, BLOCK, b.p, ps), BLOCK);
      assert_ptr_equal(ps[BLOCK - 1], weft_get(b.w, hs[BLOCK - 1], b.p));
    }
    weft_world_stats_t s;
    weft_world_stats(b.w, &s);
    assert_int_equal(s.alive, n);
    assert_int_equal(weft_world_count(b.w), n);
    if (pass == 1) {
      assert_int_equal(meter_bytes(&m), 0);
      assert_int_equal(meter_allocs(&m, b.w), 0);
    }
  }
  free(pick);
  big_world_free(&b);
}

/* The meters are live: operations that must allocate are seen. */
static void test_alloc_counter_detects_allocation(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t a = wt_register(w, "a", 8, 0);
  weft_component_t b = wt_register(w, "b", 64, 0);
  const weft_component_t only_a[] = {a, 0};
  wt_spawn_with(w, only_a, NULL);

  meter_t m = meter_start(w);
  /* A new archetype needs its tables and a first chunk. */
  const weft_component_t ab[] = {a, b, 0};
  wt_spawn_with(w, ab, NULL);
  uint64_t allocs = meter_allocs(&m, w);
  assert_true(allocs > 0);
  weft_world_stats_t s;
  weft_world_stats(w, &s);
  assert_true(s.alloc_bytes > m.alloc_bytes0);
  if (m.counter != NULL) {
    assert_true(meter_bytes(&m) > 0);
  }

  /* So does a query. */
  m = meter_start(w);
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = b;
  weft_query_t *q = NULL;
  assert_int_equal(weft_query_create(w, &qd, &q), WEFT_OK);
  assert_true(meter_allocs(&m, w) > 0);
  if (m.counter != NULL) {
    assert_true(meter_bytes(&m) > 0);
  }
  weft_query_destroy(q);
  weft_world_destroy(w);
}

/* ---- the host's allocator is untouched ---------------------------------- */

/* Bytes glibc's malloc has handed out and not taken back, all threads. */
static uint64_t glibc_in_use(void) {
  struct mallinfo2 mi = mallinfo2();
  return (uint64_t)mi.uordblks + (uint64_t)mi.hblkhd;
}

/* Where the symbol at @p fn lives: its shared object's path, or "". */
static const char *object_of(void *fn) {
  Dl_info info;
  memset(&info, 0, sizeof info);
  if (dladdr(fn, &info) == 0 || info.dli_fname == NULL)
    return "";
  return info.dli_fname;
}

/* A program linking weft keeps glibc's malloc and free: weft's jemalloc is
 * a private, renamed copy, so the process defines no jemalloc API, the
 * malloc the program calls is libc's, and a malloc is seen by glibc's
 * statistics, not by weft's jemalloc. (Linking Debian's unprefixed
 * libjemalloc, as weft once did, made it every caller's malloc.) */
static void test_alloc_host_malloc_is_libc(void **state) {
  (void)state;
  void *(*volatile host_malloc)(size_t) = malloc;
  void (*volatile host_free)(void *) = free;
  static const char *const api[] = {"mallocx", "dallocx", "mallctl",
                                    "malloc_stats_print", "je_malloc"};
  for (size_t i = 0; i < sizeof api / sizeof api[0]; i++)
    if (dlsym(RTLD_DEFAULT, api[i]) != NULL)
      fail_msg("the process defines jemalloc's %s (from %s)", api[i],
               object_of(dlsym(RTLD_DEFAULT, api[i])));
  const char *where[] = {object_of((void *)host_malloc),
                         object_of((void *)host_free),
                         object_of((void *)calloc), object_of((void *)realloc)};
  for (size_t i = 0; i < sizeof where / sizeof where[0]; i++) {
    if (strstr(where[i], "jemalloc") != NULL)
      fail_msg("malloc family member %zu comes from %s", i, where[i]);
#ifndef WEFT_SYSTEM_MALLOC
    /* Sanitizers put their own malloc first; otherwise it is libc's. */
    if (strstr(where[i], "libc.so") == NULL)
      fail_msg("malloc family member %zu comes from '%s', not libc", i,
               where[i]);
#endif
  }
#ifndef WEFT_SYSTEM_MALLOC
  const uint64_t *je = wt_thread_allocated();
  uint64_t je0 = je ? *je : 0;
  uint64_t in_use0 = glibc_in_use();
  enum { BLOCK = 6000 };
  char *p = host_malloc(BLOCK);
  assert_non_null(p);
  memset(p, 0x5a, BLOCK);
  assert_true(glibc_in_use() >= in_use0 + BLOCK);
  if (je)
    assert_true(*je == je0); /* weft's jemalloc saw none of it */
  host_free(p);
#endif
}

/* weft's own memory, its chunks included, still comes from its jemalloc
 * where the build has one; without, from glibc. */
static void test_alloc_weft_memory_from_its_allocator(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(&(weft_world_config_t){.chunk_size = 16384});
  weft_component_t c = wt_register(w, "c", 64, 0);
  meter_t m = meter_start(w);
  uint64_t in_use0 = glibc_in_use();
  weft_world_stats_t s0;
  weft_world_stats(w, &s0);
  const weft_component_t only_c[] = {c, 0};
  for (uint32_t i = 0; i < 4000; i++)
    wt_spawn_with(w, only_c, NULL);
  weft_world_stats_t s;
  weft_world_stats(w, &s);
  uint64_t bytes = s.alloc_bytes - s0.alloc_bytes;
  assert_true(s.chunk_bytes - s0.chunk_bytes >= 4000u * 64u);
  assert_true(bytes >= s.chunk_bytes - s0.chunk_bytes);
#ifdef WEFT_JEMALLOC
  /* Every byte the world asked for came from weft's jemalloc (which rounds
   * sizes up), and the world has arenas there. */
  assert_non_null(m.counter);
  assert_true(meter_bytes(&m) >= bytes);
  assert_int_not_equal(weft__alloc_arenas(), 0);
  (void)in_use0;
#else
  assert_null(m.counter);
  assert_int_equal(weft__alloc_arenas(), 0);
#ifndef WEFT_SYSTEM_MALLOC
  assert_true(glibc_in_use() >= in_use0 + (s.chunk_bytes - s0.chunk_bytes));
#else
  (void)in_use0;
#endif
#endif
  weft_world_destroy(w);
}

/* ---- injected allocation failures -------------------------------------- */

/* Spawns n entities of component @p c (8 bytes) holding 100 + i. */
static void spawn_numbered(weft_world_t *w, weft_component_t c, uint32_t n,
                           weft_entity_t *out) {
  const weft_component_t comps[] = {c, 0};
  for (uint32_t i = 0; i < n; i++) {
    uint64_t v = 100 + i;
    const void *vals[1] = {&v};
    out[i] = wt_spawn_with(w, comps, vals);
  }
}

/* A world for the failure loops: components a (8 bytes) and b (12), and
 * ten entities of a holding 100 + i. */
typedef struct fail_world_t {
  weft_world_t *w;
  weft_component_t a, b;
  weft_entity_t es[10];
} fail_world_t;

/* ... on @p pool (NULL: none). */
static fail_world_t fail_world_on(weft_pool_t *pool) {
  fail_world_t f;
  weft_world_config_t wc;
  memset(&wc, 0, sizeof wc);
  wc.pool = pool;
  wc.world_tag = 7; /* fixed, so that two such worlds' digests compare */
  f.w = wt_world_new(&wc);
  f.a = wt_register(f.w, "a", 8, 0);
  f.b = wt_register(f.w, "b", 12, 4);
  spawn_numbered(f.w, f.a, 10, f.es);
  return f;
}

static fail_world_t fail_world_new(void) {
  return fail_world_on(NULL);
}

/* Ends an injection into @p st: true when no failure came, because k
 * passed the last allocation of the calls under test (the loops stop
 * there). */
static bool fail_stats_never_came(weft__alloc_stats_t *st) {
  bool none = st->fail_in != 0;
  st->fail_in = 0;
  return none;
}

/* ... into the world's own allocations. */
static bool fail_never_came(weft_world_t *w) {
  return fail_stats_never_came(&w->alloc);
}

/* After a failure: the slot counts agree, the first @p keep entities hold
 * their values, and the world still takes a batch. Destroys the world. */
static void fail_world_check_free(fail_world_t *f, uint32_t keep) {
  wt_check_slot_invariant(f->w);
  for (uint32_t i = 0; i < keep; i++)
    assert_int_equal(*(const uint64_t *)weft_get(f->w, f->es[i], f->a),
                     100 + i);
  const weft_component_t ab[] = {f->a, f->b, 0};
  assert_int_equal(weft_spawn_batch(f->w, 100, ab, NULL, NULL, NULL), WEFT_OK);
  weft_world_destroy(f->w);
}

/* A despawn whose free-stack push cannot get memory retires the slot
 * (fail closed): the handle dies, nothing else changes, and the slot is
 * never issued again. With memory back, slots are reused as usual. */
static void test_alloc_free_stack_failure_retires_slot(void **state) {
  (void)state;
  enum { N = 8 };
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t c = wt_register(w, "c", 8, 0);
  weft_entity_t es[N];
  spawn_numbered(w, c, N, es);

  w->alloc.fail_in = 1; /* the first despawn grows the free stack */
  assert_int_equal(weft_despawn(w, es[0]), WEFT_OK);
  assert_int_equal(w->alloc.fail_in, 0); /* the failure did happen */
  weft_world_stats_t s = wt_stats(w);
  assert_int_equal(s.retired, 1);
  assert_int_equal(s.alive, N - 1);
  wt_check_slot_invariant(w);
  assert_false(weft_is_alive(w, es[0]));
  for (uint32_t i = 1; i < N; i++) {
    const uint64_t *v = weft_get(w, es[i], c);
    assert_non_null(v);
    assert_int_equal(*v, 100 + i);
  }

  assert_int_equal(weft_despawn(w, es[1]), WEFT_OK);
  assert_int_equal(wt_stats(w).retired, 1);
  weft_entity_t again = wt_spawn(w);
  assert_int_equal(weft_entity_index(again), weft_entity_index(es[1]));
  assert_int_equal(weft_entity_generation(again),
                   weft_entity_generation(es[1]) + 1);
  for (uint32_t i = 0; i < 100; i++)
    assert_int_not_equal(weft_entity_index(wt_spawn(w)),
                         weft_entity_index(es[0]));
  wt_check_slot_invariant(w);
  weft_world_destroy(w);
}

/* Every allocation of a reserve, a spawn into a new archetype, a batch
 * spawn, an add that moves an entity into a new archetype and a query
 * creation is made to fail in turn: each call returns WEFT_ENOMEM with no
 * entity added or changed, or succeeds without what it could not get (a
 * query's optional chunk cache), and the world keeps working (ASan checks
 * that nothing leaks on the way). */
static void test_alloc_every_failure_point_is_clean(void **state) {
  (void)state;
  enum { N = 3000 };
  weft_entity_t *batch = malloc(N * sizeof *batch);
  assert_non_null(batch);
  for (int op = 0; op < 5; op++) {
    bool succeeded = false;
    for (uint64_t k = 1; !succeeded; k++) {
      assert_true(k < 1000);
      fail_world_t f = fail_world_new();
      weft_world_t *w = f.w;
      uint64_t before = wt_stats(w).index_bytes;
      const weft_component_t ab[] = {f.a, f.b, 0};
      w->alloc.fail_in = k;
      int rc;
      if (op == 0) {
        rc = weft_world_reserve(w, 100000);
      } else if (op == 1) {
        weft_entity_t e;
        rc = weft_spawn_with(w, ab, NULL, &e);
      } else if (op == 2) {
        rc = weft_spawn_batch(w, N, ab, NULL, NULL, batch);
      } else if (op == 3) {
        const float v[3] = {1, 2, 3};
        rc = weft_add(w, f.es[3], f.b, v);
      } else {
        weft_query_desc_t qd;
        memset(&qd, 0, sizeof qd);
        qd.include[0] = f.a;
        weft_query_t *q = NULL;
        rc = weft_query_create(w, &qd, &q);
        assert_true(rc == WEFT_OK ? q != NULL : q == NULL);
        /* Its chunk cache is optional: without it, iteration walks. */
        uint32_t rows = 0;
        weft_iter_t it;
        weft_query_iter(q, &it);
        while (q && weft_iter_next(&it))
          rows += it.count;
        weft_iter_close(&it);
        assert_int_equal(rows, q ? 10 : 0);
        weft_query_destroy(q);
      }
      succeeded = fail_never_came(w);
      if (succeeded) {
        assert_int_equal(rc, WEFT_OK);
      } else if (rc != WEFT_OK) {
        assert_int_equal(rc, WEFT_ENOMEM);
        assert_int_equal(weft_world_count(w), 10);
        if (op != 0)
          assert_int_equal(wt_stats(w).index_bytes, before);
        assert_false(weft_has(w, f.es[3], f.b)); /* the add did not happen */
      }
      fail_world_check_free(&f, 10);
    }
  }
  free(batch);
}

/* A source's first edge whose move into the relation's archetype cannot
 * get memory (a new archetype, its transition, a chunk): the direct fast
 * path takes its edge back and hands the call to the general path, which
 * (the one injected failure spent) adds it. With each allocation failing
 * in turn, in a fresh world each time, the world ends with exactly that
 * one edge: one reverse entry, its payload, the relation's bit. */
static void test_alloc_relation_first_edge_move_failure(void **state) {
  (void)state;
  uint32_t k = 1;
  for (;; k++) {
    fail_world_t f = fail_world_new();
    weft_relation_desc_t rd = {
        .name = "Owner", .size = 8, .flags = WEFT_RELATION_SPARSE};
    weft_component_t rel = 0;
    assert_int_equal(weft_relation_register(f.w, &rd, &rel), WEFT_OK);
    const weft_component_t ab[] = {f.a, f.b, 0};
    weft_entity_t x = wt_spawn_with(f.w, ab, NULL);
    /* Cover x's slot (an edge to it, removed): the fast path then
     * needs memory only for x's move into a new archetype. */
    assert_int_equal(weft_relation_add(f.w, f.es[0], rel, x, NULL), WEFT_OK);
    assert_int_equal(weft_relation_remove(f.w, f.es[0], rel, x), WEFT_OK);
    uint64_t v = 77;
    f.w->alloc.fail_in = k;
    assert_int_equal(weft_relation_add(f.w, x, rel, f.es[1], &v), WEFT_OK);
    bool done = fail_never_came(f.w);
    assert_int_equal(weft_relation_edge_count(f.w), 1);
    assert_int_equal(weft_relation_count(f.w, x, rel), 1);
    assert_true(weft_has(f.w, x, rel));
    const uint64_t *p = weft_relation_get(f.w, x, rel, f.es[1]);
    assert_non_null(p);
    assert_int_equal(*p, 77);
    uint32_t n = 0;
    assert_int_equal(
        weft_relation_sources(f.w, f.es[1], rel, wt_count_edge, &n), WEFT_OK);
    assert_int_equal(n, 1);
    assert_int_equal(weft_relation_remove(f.w, x, rel, f.es[1]), WEFT_OK);
    assert_false(weft_has(f.w, x, rel));
    assert_int_equal(weft_relation_edge_count(f.w), 0);
    fail_world_check_free(&f, 10);
    if (done)
      break;
  }
  assert_true(k > 1); /* the move did allocate */
}

/* Runs call `op` of test_alloc_failure_leaves_no_archetype on fail world
 * f (with its query q over b): each would create archetype {a, b} or
 * {a disabled}. */
static int archetype_op(fail_world_t *f, int op, weft_entity_t *batch) {
  weft_world_t *w = f->w;
  const weft_component_t ab[] = {f->a, f->b, 0};
  const float v[3] = {1, 2, 3};
  weft_entity_t e;
  weft_cmdbuf_t *buf = NULL;
  int rc;
  switch (op) {
  case 0:
    return weft_spawn_with(w, ab, NULL, &e);
  case 1:
    return weft_spawn_batch(w, 300, ab, NULL, NULL, batch);
  case 2:
    return weft_add(w, f->es[3], f->b, v);
  case 3:
    return weft_disable(w, f->es[3], f->a);
  case 4: /* staged in a scope, placed by the drain */
    weft_world_defer_begin(w);
    rc = weft_spawn_with(w, ab, NULL, &e);
    return rc ? (weft_world_defer_end(w), rc) : weft_world_defer_end(w);
  default: /* from a command buffer: a spawn run and an add */
    w->alloc.fail_in = 0;
    assert_int_equal(weft_cmdbuf_create(w, &buf), WEFT_OK);
    assert_int_equal(weft_cmd_spawn(buf, ab, NULL, &e), WEFT_OK);
    assert_int_equal(weft_cmd_add(buf, f->es[3], f->b, v), WEFT_OK);
    return WEFT_OK;
  }
}

/* A spawn, batch spawn, add, disable, staged spawn or apply that runs out
 * of memory after it created the archetype it needed leaves no archetype
 * behind: the archetype count (and for the direct calls the digest) is
 * that of before, and a query over the new signature has not gained a
 * match (a query on b takes part, so that recording the archetype in it
 * fails too). */
static void test_alloc_failure_leaves_no_archetype(void **state) {
  (void)state;
  weft_entity_t *batch = malloc(300 * sizeof *batch);
  assert_non_null(batch);
  for (int op = 0; op < 6; op++) {
    uint32_t failed = 0;
    bool succeeded = false;
    for (uint64_t k = 1; !succeeded; k++) {
      assert_true(k < 1000);
      fail_world_t f = fail_world_new();
      weft_world_t *w = f.w;
      weft_query_desc_t qd;
      memset(&qd, 0, sizeof qd);
      qd.include[0] = f.b;
      weft_query_t *q = NULL;
      assert_int_equal(weft_query_create(w, &qd, &q), WEFT_OK);
      weft_cmdbuf_t *buf = NULL;
      if (op == 5) {
        archetype_op(&f, op, batch);
        buf = w->txn.bufs[1];
      }
      const uint64_t digest = weft_world_digest(w);
      const uint32_t archetypes = wt_stats(w).archetypes;
      w->alloc.fail_in = k;
      int rc =
          op == 5 ? weft_world_apply(w, &buf, 1) : archetype_op(&f, op, batch);
      succeeded = fail_never_came(w);
      if (succeeded) {
        assert_int_equal(rc, WEFT_OK);
        assert_true(wt_stats(w).archetypes > archetypes);
      } else if (rc != WEFT_OK) {
        assert_int_equal(rc, WEFT_ENOMEM);
        failed++;
        /* The apply's other command may have succeeded: every archetype
         * made since holds rows. */
        for (uint32_t i = archetypes; i < w->arch_count; i++)
          if (w->archs[i]->count == 0)
            fail_msg("op %d, allocation %llu: archetype %u is empty", op,
                     (unsigned long long)k, i);
        if (op < 5) {
          assert_int_equal(wt_stats(w).archetypes, archetypes);
          assert_int_equal(weft_query_archetype_count(q), 0);
        }
        /* A staged spawn that fails gives its reserved slot back to the
         * free list, which the digest tells apart: whole digests only
         * for the direct calls. */
        if (op < 4 && weft_world_digest(w) != digest)
          fail_msg("op %d, allocation %llu: the digest changed", op,
                   (unsigned long long)k);
      }
      weft_cmdbuf_destroy(buf);
      weft_query_destroy(q);
      fail_world_check_free(&f, 10);
    }
    assert_true(failed > 0);
  }
  free(batch);
}

/* Every allocation of a command apply (spawns, an add into a new archetype,
 * a despawn, all from one buffer) is made to fail in turn: apply returns
 * WEFT_ENOMEM or succeeds, the slot counts stay consistent, entities the
 * commands did not name keep their values, and the next apply works. */
static void test_alloc_apply_failure_keeps_world_consistent(void **state) {
  (void)state;
  bool succeeded = false;
  for (uint64_t k = 1; !succeeded; k++) {
    assert_true(k < 1000);
    fail_world_t f = fail_world_new();
    weft_world_t *w = f.w;
    weft_cmdbuf_t *buf = NULL;
    assert_int_equal(weft_cmdbuf_create(w, &buf), WEFT_OK);
    const weft_component_t ab[] = {f.a, f.b, 0};
    for (uint32_t i = 0; i < 50; i++) {
      uint64_t va = 1000 + i;
      const float vb[3] = {1, 2, 3};
      const void *vals[2] = {&va, vb};
      weft_entity_t pending;
      assert_int_equal(weft_cmd_spawn(buf, ab, vals, &pending), WEFT_OK);
    }
    const float v[3] = {4, 5, 6};
    assert_int_equal(weft_cmd_add(buf, f.es[8], f.b, v), WEFT_OK);
    assert_int_equal(weft_cmd_despawn(buf, f.es[9]), WEFT_OK);

    w->alloc.fail_in = k;
    int rc = weft_world_apply(w, &buf, 1);
    succeeded = fail_never_came(w);
    if (succeeded)
      assert_int_equal(rc, WEFT_OK);
    if (rc == WEFT_OK) { /* everything applied, if without an extra */
      assert_int_equal(weft_world_count(w), 10 + 50 - 1);
      assert_true(weft_has(w, f.es[8], f.b));
      assert_false(weft_is_alive(w, f.es[9]));
    } else { /* what did not apply is counted as dropped */
      assert_int_equal(rc, WEFT_ENOMEM);
      assert_true(wt_stats(w).commands_dropped > 0);
      assert_true(weft_world_count(w) >= 9);
    }
    /* The buffer is empty and usable. */
    assert_int_equal(weft_cmdbuf_count(buf), 0);
    weft_entity_t pending;
    assert_int_equal(weft_cmd_spawn(buf, ab, NULL, &pending), WEFT_OK);
    uint32_t n = weft_world_count(w);
    assert_int_equal(weft_world_apply(w, &buf, 1), WEFT_OK);
    assert_int_equal(weft_world_count(w), n + 1);
    weft_cmdbuf_destroy(buf);
    fail_world_check_free(&f, 8);
  }
}

/* One command of the recording script below; @p st (NULL: none) gets
 * failures injected. A call that fails must fail with WEFT_ENOMEM and
 * record nothing: the retry with memory back then leaves the buffer as a
 * run without failures would. Returns the failures seen (0 or 1). */
static uint32_t rec_step(weft__alloc_stats_t *st, uint32_t step,
                         fail_world_t *f, weft_cmdbuf_t *buf,
                         weft_entity_t *pend, uint32_t *npend) {
  const weft_component_t ab[] = {f->a, f->b, 0};
  const weft_component_t only_b[] = {f->b, 0};
  uint64_t va = 5000 + step;
  const float vb[3] = {(float)step, 0.5f, -1.0f};
  const void *vals[2] = {&va, vb};
  weft_entity_t live = f->es[step % 8];
  weft_entity_t some = *npend ? pend[step % *npend] : live;
  uint32_t failures = 0;
  for (;;) {
    int rc;
    weft_entity_t e = 0;
    weft_cmd_key(buf, step / 7); /* a new segment every seventh command */
    switch (step % 6) {
    case 0: /* spawns with values: runs, their columns, a new run per key */
      rc = weft_cmd_spawn(buf, step % 12 ? ab : only_b,
                          step % 12 ? vals : vals + 1, &e);
      break;
    case 1: /* a 12-byte value: copied to the arena */
      rc = weft_cmd_add(buf, some, f->b, vb);
      break;
    case 2: /* an 8-byte value: rides in the command */
      rc = weft_cmd_set(buf, live, f->a, &va);
      break;
    case 3:
      rc = weft_cmd_remove(buf, some, f->b);
      break;
    case 4:
      rc = weft_cmd_add(buf, live, f->b, vb);
      break;
    default:
      rc = step % 30 == 5 && *npend ? weft_cmd_despawn(buf, some)
                                    : weft_cmd_set(buf, some, f->a, &va);
      break;
    }
    if (rc == WEFT_OK) {
      if (e)
        pend[(*npend)++] = e;
      return failures;
    }
    assert_int_equal(rc, WEFT_ENOMEM);
    assert_non_null(st);
    assert_int_equal(st->fail_in, 0); /* the injected failure, no other */
    failures++;
    assert_int_equal(failures, 1);
  }
}

/* Recording that cannot get memory fails with WEFT_ENOMEM and records
 * nothing of that call: with every allocation of a 3000-command script
 * failing in turn (the command array, value copies, spawn runs and their
 * columns), retrying the failed call and applying gives the world a run
 * without failures gives, digest for digest. */
static void test_alloc_recording_failure_records_nothing(void **state) {
  (void)state;
  enum { STEPS = 3000 };
  weft_entity_t pend[STEPS];
  /* The reference: the same script, no failures. */
  fail_world_t ref = fail_world_new();
  weft_cmdbuf_t *rbuf = NULL;
  assert_int_equal(weft_cmdbuf_create(ref.w, &rbuf), WEFT_OK);
  uint32_t npend = 0;
  for (uint32_t step = 0; step < STEPS; step++)
    assert_int_equal(rec_step(NULL, step, &ref, rbuf, pend, &npend), 0);
  assert_int_equal(weft_world_apply(ref.w, &rbuf, 1), WEFT_OK);
  const uint64_t want = weft_world_digest(ref.w);
  const uint32_t want_count = weft_world_count(ref.w);
  assert_true(want_count > 10 + STEPS / 12);
  weft_cmdbuf_destroy(rbuf);
  weft_world_destroy(ref.w);

  uint32_t failed_rounds = 0;
  for (uint64_t k = 1;; k++) {
    assert_true(k < 1000);
    fail_world_t f = fail_world_new();
    weft_cmdbuf_t *buf = NULL;
    assert_int_equal(weft_cmdbuf_create(f.w, &buf), WEFT_OK);
    weft__alloc_stats_t *st = weft__cmdbuf_alloc(buf);
    st->fail_in = k;
    uint32_t failures = 0;
    npend = 0;
    for (uint32_t step = 0; step < STEPS; step++)
      failures += rec_step(st, step, &f, buf, pend, &npend);
    bool none = fail_stats_never_came(st);
    assert_int_equal(failures, none ? 0u : 1u);
    assert_int_equal(weft_world_apply(f.w, &buf, 1), WEFT_OK);
    assert_int_equal(weft_world_count(f.w), want_count);
    if (weft_world_digest(f.w) != want)
      fail_msg("allocation %llu failed: the world differs",
               (unsigned long long)k);
    weft_cmdbuf_destroy(buf);
    weft_world_destroy(f.w);
    if (none)
      break;
    failed_rounds++;
  }
  /* The command array grew twice and the arena took blocks. */
  assert_true(failed_rounds >= 4);
}

/* The same for calls staged in a deferred scope: each call and the drain
 * return WEFT_OK or WEFT_ENOMEM, a call that failed has no effect, and
 * when everything succeeded everything took effect. */
static void test_alloc_deferred_failure_keeps_world_consistent(void **state) {
  (void)state;
  bool succeeded = false;
  for (uint64_t k = 1; !succeeded; k++) {
    assert_true(k < 1000);
    fail_world_t f = fail_world_new();
    weft_world_t *w = f.w;
    const weft_component_t ab[] = {f.a, f.b, 0};
    const float v[3] = {4, 5, 6};

    weft_world_defer_begin(w);
    w->alloc.fail_in = k;
    int rc_add = weft_add(w, f.es[8], f.b, v);
    int rc_despawn = weft_despawn(w, f.es[9]);
    int rc_spawn = WEFT_OK;
    uint32_t spawned = 0;
    for (uint32_t i = 0; i < 5 && rc_spawn == WEFT_OK; i++) {
      weft_entity_t e;
      rc_spawn = weft_spawn_with(w, ab, NULL, &e);
      spawned += rc_spawn == WEFT_OK;
    }
    int rc_end = weft_world_defer_end(w);
    succeeded = fail_never_came(w);

    int rcs[4] = {rc_add, rc_despawn, rc_spawn, rc_end};
    bool all_ok = true;
    for (int i = 0; i < 4; i++) {
      assert_true(rcs[i] == WEFT_OK || rcs[i] == WEFT_ENOMEM);
      all_ok &= rcs[i] == WEFT_OK;
    }
    if (succeeded)
      assert_true(all_ok);
    if (all_ok) {
      assert_true(weft_has(w, f.es[8], f.b));
      assert_false(weft_is_alive(w, f.es[9]));
    }
    if (rc_end == WEFT_OK) /* a failed spawn spawned nothing */
      assert_int_equal(weft_world_count(w),
                       10 - (rc_despawn == WEFT_OK) + spawned);
    if (rc_add != WEFT_OK)
      assert_false(weft_has(w, f.es[8], f.b));
    if (rc_despawn != WEFT_OK)
      assert_true(weft_is_alive(w, f.es[9]));
    fail_world_check_free(&f, 8);
  }
}

/* A system for the pipeline loop: bumps a, and tags the entities whose
 * value it made odd, through its command buffer. */
static int bump_and_tag(weft_sysctx_t *ctx, const weft_iter_t *it) {
  const weft_component_t *tag = ctx->user;
  uint64_t *v = it->columns[0];
  for (uint32_t i = 0; i < it->count; i++) {
    v[i]++;
    if (v[i] % 2) {
      int rc = weft_cmd_add(ctx->cmd, it->entities[i], *tag, NULL);
      if (rc)
        return rc;
    }
  }
  return 0;
}

/* The same for a frame of the pipeline (its first: the schedule is built,
 * then a system writes values and records commands applied at the sync
 * point): the frame returns 0, WEFT_ENOMEM or WEFT_ESYSTEM (a callback
 * whose recording failed), the world stays consistent, and the next frame
 * runs the system over every entity. */
static void test_alloc_frame_failure_keeps_world_consistent(void **state) {
  (void)state;
  /* Inline, and on a pool of two workers (per-slot command buffers). */
  for (uint32_t workers = 0; workers <= 2; workers += 2) {
    weft_pool_t *pool = NULL;
    if (workers) {
      weft_pool_config_t pc;
      memset(&pc, 0, sizeof pc);
      pc.placement.workers = workers;
      assert_int_equal(weft_pool_create(&pc, &pool), WEFT_OK);
    }
    bool succeeded = false;
    for (uint64_t k = 1; !succeeded; k++) {
      assert_true(k < 1000);
      fail_world_t f = fail_world_on(pool);
      weft_world_t *w = f.w;
      if (pool) { /* ten rows: without this they would run inline */
        weft_pipeline_config_t pc;
        memset(&pc, 0, sizeof pc);
        pc.inline_rows = 1;
        assert_int_equal(weft_pipeline_configure(w, &pc), WEFT_OK);
      }
      weft_component_t tag = wt_register_tag(w, "tag");
      weft_system_desc_t d;
      memset(&d, 0, sizeof d);
      d.name = "bump";
      d.query.include[0] = f.a;
      d.write[0] = f.a;
      d.cmd_write[0] = tag;
      d.run = bump_and_tag;
      d.user = &tag;
      weft_system_t sys;
      assert_int_equal(weft_system_register(w, &d, &sys), WEFT_OK);

      w->alloc.fail_in = k;
      int rc = weft_world_progress(w, 1.0 / 60.0);
      succeeded = fail_never_came(w);
      if (succeeded)
        assert_int_equal(rc, WEFT_OK);
      assert_true(rc == WEFT_OK || rc == WEFT_ENOMEM || rc == WEFT_ESYSTEM);
      wt_check_slot_invariant(w);
      /* Each value was bumped once or (the frame failed first) not at all,
       * and a tagged entity holds an odd value. */
      uint64_t bumped[10];
      for (uint32_t i = 0; i < 10; i++) {
        bumped[i] = *(const uint64_t *)weft_get(w, f.es[i], f.a) - (100 + i);
        assert_true(bumped[i] <= 1);
        if (weft_has(w, f.es[i], tag))
          assert_true((100 + i + bumped[i]) % 2 == 1);
        if (rc == WEFT_OK)
          assert_int_equal(weft_has(w, f.es[i], tag), (100 + i + 1) % 2 == 1);
      }
      /* The next frame runs the system over every entity. */
      assert_int_equal(weft_world_progress(w, 1.0 / 60.0), WEFT_OK);
      for (uint32_t i = 0; i < 10; i++)
        assert_int_equal(*(const uint64_t *)weft_get(w, f.es[i], f.a),
                         100 + i + bumped[i] + 1);
      wt_check_slot_invariant(w);
      weft_world_destroy(w);
    }
    weft_pool_destroy(pool);
  }
}

typedef struct obs_count_t {
  weft_component_t a;
  uint32_t adds;
} obs_count_t;

/* Counts ADDs of b and stages a write of 777 to the entity's a. */
static void on_add_b(weft_world_t *w, const weft_event_t *ev, void *user) {
  obs_count_t *o = user;
  o->adds++;
  uint64_t v = 777;
  (void)weft_set(w, ev->entity, o->a, &v);
}

/* The same with an observer: direct calls take the staged path and the
 * observer's own write runs in a second drain wave. Each call returns 0 or
 * WEFT_ENOMEM; on 0 the change and the observer's write both happened; on
 * WEFT_ENOMEM the change did not happen or something was counted as
 * dropped; the slot counts stay consistent either way. */
static void test_alloc_observed_failure_keeps_world_consistent(void **state) {
  (void)state;
  bool succeeded = false;
  for (uint64_t k = 1; !succeeded; k++) {
    assert_true(k < 1000);
    fail_world_t f = fail_world_new();
    weft_world_t *w = f.w;
    obs_count_t o = {f.a, 0};
    weft_observer_desc_t od;
    memset(&od, 0, sizeof od);
    od.events = WEFT_EVENT_ADD;
    od.component = f.b;
    od.fn = on_add_b;
    od.user = &o;
    weft_observer_t *obs = NULL;
    assert_int_equal(weft_observer_create(w, &od, &obs), WEFT_OK);

    const float v[3] = {4, 5, 6};
    w->alloc.fail_in = k;
    int rc = weft_add(w, f.es[8], f.b, v);
    succeeded = fail_never_came(w);
    if (succeeded)
      assert_int_equal(rc, WEFT_OK);
    bool added = weft_has(w, f.es[8], f.b);
    uint64_t a8 = *(const uint64_t *)weft_get(w, f.es[8], f.a);
    if (rc == WEFT_OK) {
      assert_true(added);
      assert_int_equal(o.adds, 1);
      assert_int_equal(a8, 777);
    } else {
      assert_int_equal(rc, WEFT_ENOMEM);
      assert_true(!added || wt_stats(w).commands_dropped > 0);
      assert_true(a8 == 108 || a8 == 777);
    }
    fail_world_check_free(&f, 8);
  }
}

/* Arms (k > 0) or disarms (k == 0) a failure at the k-th allocation of
 * every command buffer the pipeline records into; returns how many
 * buffers still wait for theirs. */
static uint32_t arm_cmdbufs(hx_t *h, uint32_t k) {
  weft__sched_t *s = weft__sched_get(h->w);
  assert_non_null(s);
  assert_true(s->nslots > 0);
  uint32_t armed = 0;
  for (uint32_t i = 0; i < s->nslots; i++) {
    weft__alloc_stats_t *st = weft__cmdbuf_alloc(s->bufs[i]);
    if (k)
      st->fail_in = k;
    armed += st->fail_in != 0;
    if (!k)
      st->fail_in = 0;
  }
  return armed;
}

/* A death command that cannot be recorded fails the run with a clear
 * error, in the middle of a block, while the workers plan the next one:
 * the run waits for them before it returns (they read job records in its
 * frame), the tick reports WEFT_ESYSTEM naming health, the unrecorded
 * death's hit is undone (hp <= 0 exactly for the units tagged Dead), and
 * the next tick works. Inline and on a pool of three. (The health system
 * records the deaths; its other tests, public API only, are in
 * test_health.c.) */
static void test_alloc_health_record_failure_mid_run(void **state) {
  (void)state;
  for (uint32_t workers = 0; workers <= 3; workers += 3) {
    hx_t h = hx_new(workers, true);
    enum { UNITS = 2000, EVENTS = 40000 };
    static weft_entity_t u[UNITS];
    /* About one hit in 1,000 events each: the first deaths come within
     * the first blocks, well before the last one. */
    float hp = 4.0f, dmg = 1.0f;
    for (uint32_t i = 0; i < UNITS; i++)
      u[i] = spawn_unit(&h, (unit_t){.hp = &hp, .damage = &dmg});
    tick(&h); /* builds the schedule and the slots' buffers */
    wt_rng_t r = wt_rng(9);
    for (uint32_t k = 0; k < EVENTS; k++)
      push(&h, u[wt_below(&r, UNITS)], u[wt_below(&r, UNITS)]);
    uint32_t slots = arm_cmdbufs(&h, 1);
    int rc = weft_world_run_phase(h.w, WEFT_PHASE_FIXED_UPDATE, DT);
    assert_int_equal(rc, WEFT_ESYSTEM);
    assert_non_null(strstr(weft_world_last_error(h.w), "weft.health"));
    assert_int_equal(arm_cmdbufs(&h, 0), slots - 1); /* one failure, here */
    weft_event_clear(h.w, h.s.collisions);
    /* The death that failed to record undid its hit: after the failed
     * run, a unit is out of hp exactly when it is tagged Dead. */
    for (uint32_t i = 0; i < UNITS; i++)
      if ((hp_of(&h, u[i]) <= 0.0f) != weft_has(h.w, u[i], h.s.dead))
        fail_msg("unit %u: hp %g, Dead %d", i, (double)hp_of(&h, u[i]),
                 (int)weft_has(h.w, u[i], h.s.dead));
    /* Disarmed, the next run kills as the rules say. */
    for (uint32_t k = 0; k < EVENTS; k++)
      push(&h, u[wt_below(&r, UNITS)], u[wt_below(&r, UNITS)]);
    tick(&h);
    uint32_t dead = 0;
    for (uint32_t i = 0; i < UNITS; i++)
      dead += weft_has(h.w, u[i], h.s.dead);
    assert_true(dead > UNITS / 2);
    hx_free(&h);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_alloc_iteration_allocates_nothing),
      cmocka_unit_test(test_alloc_entity_access_allocates_nothing),
      cmocka_unit_test(test_alloc_counter_detects_allocation),
      cmocka_unit_test(test_alloc_host_malloc_is_libc),
      cmocka_unit_test(test_alloc_weft_memory_from_its_allocator),
      cmocka_unit_test(test_alloc_free_stack_failure_retires_slot),
      cmocka_unit_test(test_alloc_every_failure_point_is_clean),
      cmocka_unit_test(test_alloc_failure_leaves_no_archetype),
      cmocka_unit_test(test_alloc_relation_first_edge_move_failure),
      cmocka_unit_test(test_alloc_apply_failure_keeps_world_consistent),
      cmocka_unit_test(test_alloc_recording_failure_records_nothing),
      cmocka_unit_test(test_alloc_deferred_failure_keeps_world_consistent),
      cmocka_unit_test(test_alloc_frame_failure_keeps_world_consistent),
      cmocka_unit_test(test_alloc_observed_failure_keeps_world_consistent),
      cmocka_unit_test(test_alloc_health_record_failure_mid_run),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
