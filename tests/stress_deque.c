/* SPDX-License-Identifier: MIT */
/*
 * The work-stealing deque under real concurrency: one owner pushing and
 * popping at random while three thieves steal, then a phase built to make
 * the owner's pop and the thieves' steals collide on the last item. Every
 * item carries a plain (non-atomic) payload the owner writes before pushing
 * it, and every take bumps the item's counter; at the end each counter must
 * be exactly 1 and every payload read must have matched. A lost ordering
 * shows up as a duplicate or lost item here, or as a data race on the
 * payload under TSan.
 *
 * WEFT_DEQUE_ITEMS scales the run (default 2^21 items in the random phase,
 * a fortieth of that in rounds of the last-item phase).
 */
#include "support/weft_test.h"

#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "scheduler/deque.h"

#define THIEVES 3u
#define DEFAULT_ITEMS (UINT32_C(1) << 21)

typedef struct shared_t {
  weft__deque_t d; /* first: the struct is allocated 64-byte aligned */
  uint32_t n;
  _Atomic uint32_t *taken; /* per item: how many times it was taken */
  uint64_t *payload;       /* per item: written by the owner before push */
  _Atomic bool done;
  /* Last-item phase: the owner publishes round r after pushing its items;
   * each thief acknowledges once it has found the deque empty. */
  _Atomic uint32_t round;
  _Atomic uint32_t acks;
} shared_t;

typedef struct taker_t {
  shared_t *s;
  wt_rng_t rng;
  uint64_t taken, contended, errors;
} taker_t;

typedef struct thief_t {
  taker_t t;
  pthread_t th;
} thief_t;

static uint64_t payload_of(uint32_t i) {
  return ((uint64_t)i * 0x9e3779b97f4a7c15ull) ^ 0x5eed;
}

static void *item(uint32_t i) {
  return (void *)((uintptr_t)i + 1);
}

/* Records that p was taken; counts anything out of range or whose payload
 * is not what the owner wrote. */
static void take(taker_t *k, void *p) {
  uintptr_t i = (uintptr_t)p - 1;
  if (i >= k->s->n) {
    k->errors++;
    return;
  }
  k->errors += k->s->payload[i] != payload_of((uint32_t)i);
  atomic_fetch_add_explicit(&k->s->taken[i], 1, memory_order_relaxed);
  k->taken++;
}

/* Sometimes waits a little, so the threads meet at different points. */
static void jitter(taker_t *k) {
  uint32_t r = wt_below(&k->rng, 64);
  if (r == 0) {
    sched_yield();
  } else if (r < 4) {
    volatile uint32_t spin = wt_below(&k->rng, 256);
    while (spin > 0)
      spin = spin - 1;
  }
}

static uint32_t env_items(void) {
  const char *s = getenv("WEFT_DEQUE_ITEMS");
  if (s == NULL || *s == '\0')
    return DEFAULT_ITEMS;
  char *end = NULL;
  unsigned long v = strtoul(s, &end, 0);
  if (end == s || *end != '\0' || v < 1000 || v > (UINT32_C(1) << 28)) {
    print_error("stress_deque: ignoring WEFT_DEQUE_ITEMS=%s\n", s);
    return DEFAULT_ITEMS;
  }
  return (uint32_t)v;
}

static shared_t *shared_new(uint32_t cap, uint32_t n) {
  shared_t *s = aligned_alloc(64, sizeof(shared_t));
  assert_non_null(s);
  memset(s, 0, sizeof *s);
  assert_int_equal(weft__deque_init(&s->d, cap), 0);
  s->n = n;
  s->taken = calloc(n, sizeof(*s->taken));
  s->payload = calloc(n, sizeof(*s->payload));
  assert_non_null(s->taken);
  assert_non_null(s->payload);
  atomic_init(&s->done, false);
  atomic_init(&s->round, 0);
  atomic_init(&s->acks, 0);
  return s;
}

/* Joins the thieves and checks that every item was taken exactly once. */
static void finish(shared_t *s, taker_t *owner, thief_t *th, const char *what) {
  uint64_t total = owner->taken, stolen = 0, contended = 0;
  assert_int_equal(owner->errors, 0);
  for (uint32_t i = 0; i < THIEVES; i++) {
    assert_int_equal(pthread_join(th[i].th, NULL), 0);
    assert_int_equal(th[i].t.errors, 0);
    stolen += th[i].t.taken;
    contended += th[i].t.contended;
  }
  total += stolen;
  uint32_t bad = 0, first_bad = 0, bad_count = 0;
  for (uint32_t i = 0; i < s->n; i++) {
    uint32_t c = atomic_load_explicit(&s->taken[i], memory_order_relaxed);
    if (c != 1 && bad++ == 0) {
      first_bad = i;
      bad_count = c;
    }
  }
  if (bad != 0)
    print_error("stress_deque %s: %" PRIu32 " items not taken exactly once"
                " (item %" PRIu32 " taken %" PRIu32 " times)\n",
                what, bad, first_bad, bad_count);
  assert_int_equal(bad, 0);
  assert_int_equal(total, s->n);
  assert_int_equal(weft__deque_size(&s->d), 0);
  print_message("stress_deque %s: capacity %" PRIu32 ", %" PRIu32
                " items, %" PRIu64 " stolen, %" PRIu64 " lost CAS races\n",
                what, s->d.mask + 1, s->n, stolen, contended);
  weft__deque_fini(&s->d);
  free(s->taken);
  free(s->payload);
  free(s);
}

/* --- random phase -------------------------------------------------------- */

static void *random_thief(void *arg) {
  taker_t *k = arg;
  for (;;) {
    bool contended;
    void *p = weft__deque_steal(&k->s->d, &contended);
    if (p != NULL) {
      take(k, p);
    } else if (contended) {
      k->contended++;
      continue; /* someone else got it; there may be more */
    } else if (atomic_load_explicit(&k->s->done, memory_order_acquire)) {
      /* done is set only after the owner saw the deque empty with every
       * item pushed, so nothing can appear any more. */
      break;
    } else {
      sched_yield();
    }
    jitter(k);
  }
  return NULL;
}

/* The owner pushes in random bursts and pops in random bursts, running an
 * item itself when the deque is full, the way the scheduler will. */
static void run_random(uint32_t cap, uint32_t n, uint64_t seed) {
  shared_t *s = shared_new(cap, n);
  thief_t th[THIEVES];
  for (uint32_t i = 0; i < THIEVES; i++) {
    th[i].t = (taker_t){.s = s, .rng = wt_rng(seed + 1 + i)};
    assert_int_equal(pthread_create(&th[i].th, NULL, random_thief, &th[i].t),
                     0);
  }
  taker_t owner = {.s = s, .rng = wt_rng(seed)};
  uint32_t next = 0;
  while (next < n) {
    uint32_t burst = 1 + wt_below(&owner.rng, 2 * cap < 64 ? 2 * cap : 64);
    if (wt_chance(&owner.rng, 2, 3)) {
      for (uint32_t k = 0; k < burst && next < n; k++, next++) {
        s->payload[next] = payload_of(next);
        if (!weft__deque_push(&s->d, item(next)))
          take(&owner, item(next)); /* full: run it inline */
      }
    } else {
      for (uint32_t k = 0; k < burst; k++) {
        void *p = weft__deque_pop(&s->d);
        if (p == NULL)
          break;
        take(&owner, p);
      }
    }
    jitter(&owner);
  }
  for (void *p; (p = weft__deque_pop(&s->d)) != NULL;)
    take(&owner, p);
  atomic_store_explicit(&s->done, true, memory_order_release);
  finish(s, &owner, th, "random");
}

static void test_deque_random_owner_and_thieves(void **state) {
  (void)state;
  uint32_t items = env_items();
  /* A tiny ring keeps the full edge and slot reuse hot; a big one lets the
   * thieves fall far behind the owner. */
  run_random(4, items / 4, 11);
  run_random(64, items / 4, 22);
  run_random(1024, items - 2 * (items / 4), 33);
}

/* --- last-item phase ----------------------------------------------------- */

static void *last_item_thief(void *arg) {
  taker_t *k = arg;
  shared_t *s = k->s;
  for (uint32_t seen = 0;;) {
    uint32_t r;
    while ((r = atomic_load_explicit(&s->round, memory_order_acquire)) ==
           seen) {
      if (atomic_load_explicit(&s->done, memory_order_acquire))
        return NULL;
      sched_yield();
    }
    seen = r;
    for (;;) {
      bool contended;
      void *p = weft__deque_steal(&s->d, &contended);
      if (p != NULL)
        take(k, p);
      else if (contended)
        k->contended++;
      else
        break;
    }
    atomic_fetch_add_explicit(&s->acks, 1, memory_order_acq_rel);
  }
}

/* Each round the owner pushes one item (sometimes two), lets the thieves
 * go, and pops at once, so that pop's CAS on the last item meets theirs. */
static void test_deque_pop_races_steal_on_last_item(void **state) {
  (void)state;
  /* Every round hands the CPUs around (the threads yield in lockstep),
   * so rounds cost microseconds each: keep the default count modest. */
  uint32_t rounds = env_items() / 320;
  shared_t *s = shared_new(2, 2 * rounds);
  thief_t th[THIEVES];
  for (uint32_t i = 0; i < THIEVES; i++) {
    th[i].t = (taker_t){.s = s, .rng = wt_rng(100 + i)};
    assert_int_equal(pthread_create(&th[i].th, NULL, last_item_thief, &th[i].t),
                     0);
  }
  taker_t owner = {.s = s, .rng = wt_rng(99)};
  uint32_t next = 0;
  uint64_t thief_rounds = 0; /* rounds in which a thief got an item */
  uint32_t window = 64;
  for (uint32_t r = 1; r <= rounds; r++) {
    uint32_t k = wt_chance(&owner.rng, 1, 4) ? 2 : 1;
    for (uint32_t j = 0; j < k; j++, next++) {
      s->payload[next] = payload_of(next);
      assert_true(weft__deque_push(&s->d, item(next)));
    }
    atomic_store_explicit(&s->round, r, memory_order_release);
    /* Wait a random while before popping, in a window that adapts so the
     * thieves win a fair share of rounds whatever the machine's (or the
     * sanitizer's) speed: the interesting case is both ends in take at
     * once. */
    volatile uint32_t spin = wt_below(&owner.rng, window + 1);
    while (spin > 0)
      spin = spin - 1;
    uint32_t got = 0;
    for (void *p; (p = weft__deque_pop(&s->d)) != NULL; got++)
      take(&owner, p);
    thief_rounds += got < k;
    if (got < k)
      window -= window / 4;
    else if (window < (UINT32_C(1) << 16))
      window += window / 8 + 1;
    while (atomic_load_explicit(&s->acks, memory_order_acquire) < r * THIEVES)
      sched_yield();
  }
  /* Rounds with one item leave the tail of the item range unused; mark it
   * taken so that finish() checks the rest exactly. */
  for (uint32_t i = next; i < s->n; i++)
    atomic_store_explicit(&s->taken[i], 1, memory_order_relaxed);
  owner.taken += s->n - next;
  atomic_store_explicit(&s->done, true, memory_order_release);
  print_message("stress_deque last-item: %" PRIu32 " rounds, a thief won"
                " %" PRIu64 " of them\n",
                rounds, thief_rounds);
  finish(s, &owner, th, "last-item");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_deque_random_owner_and_thieves),
      cmocka_unit_test(test_deque_pop_races_steal_on_last_item),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
