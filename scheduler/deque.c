/* SPDX-License-Identifier: MIT */
/*
 * Chase-Lev work-stealing deque with the C11 orderings of Le et al. (PPoPP
 * 2013, fig. 1), minus the resizing: the buffer is fixed at init.
 *
 * Items live in [top, bottom). The owner moves bottom; thieves advance top
 * with a CAS; the owner joins that CAS only for the last item. Every slot is
 * an atomic so that a thief's read of a slot the owner is about to reuse is
 * a race the model defines (and TSan accepts), not undefined behaviour.
 */
#include "scheduler/deque.h"

#include <assert.h>
#include <stdlib.h>

#include "weft/error.h"

/*
 * ThreadSanitizer ignores atomic_thread_fence, so it cannot see that push's
 * release fence orders the job's contents before the bottom store, and it
 * would report the thief's reads of a stolen job as races. Under TSan, and
 * only there, that store is a release store too, which is strictly stronger
 * and gives TSan the edge it can follow.
 */
#if defined(__SANITIZE_THREAD__)
#define WEFT__DEQUE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WEFT__DEQUE_TSAN 1
#endif
#endif

#ifdef WEFT__DEQUE_TSAN
#define WEFT__DEQUE_PUBLISH memory_order_release
#else
#define WEFT__DEQUE_PUBLISH memory_order_relaxed
#endif

int weft__deque_init(weft__deque_t *d, uint32_t capacity_pow2) {
  atomic_init(&d->top, 0);
  atomic_init(&d->bottom, 0);
  d->top_seen = 0;
  d->buf = NULL;
  d->mask = 0;
  if (capacity_pow2 == 0 || capacity_pow2 > WEFT__DEQUE_MAX_CAPACITY ||
      (capacity_pow2 & (capacity_pow2 - 1)) != 0)
    return WEFT_EINVAL;
  /* The buffer starts on its own cache line so that the slots the owner
   * writes do not share a line with unrelated data. */
  void *mem = NULL;
  if (posix_memalign(&mem, 64, (size_t)capacity_pow2 * sizeof(*d->buf)) != 0)
    return WEFT_ENOMEM;
  d->buf = mem;
  for (uint32_t i = 0; i < capacity_pow2; i++)
    atomic_init(&d->buf[i], NULL);
  d->mask = capacity_pow2 - 1;
  return 0;
}

void weft__deque_fini(weft__deque_t *d) {
  free(d->buf);
  d->buf = NULL;
  d->mask = 0;
  atomic_store_explicit(&d->top, 0, memory_order_relaxed);
  atomic_store_explicit(&d->bottom, 0, memory_order_relaxed);
  d->top_seen = 0;
}

bool weft__deque_push(weft__deque_t *d, void *item) {
  assert(item != NULL); /* NULL is how pop and steal say "empty" */
  int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed);
  if (b - d->top_seen > (int64_t)d->mask) {
    /* Acquire pairs with the thieves' CAS on top (every later CAS carries
     * its release sequence on): a thief that took slot b - capacity
     * finished reading it before we overwrite it below. That holds for
     * any top loaded this way since, so a stale top_seen is safe; it only
     * makes the deque look fuller than it is. */
    d->top_seen = atomic_load_explicit(&d->top, memory_order_acquire);
    if (b - d->top_seen > (int64_t)d->mask)
      return false;
  }
  atomic_store_explicit(&d->buf[b & d->mask], item, memory_order_relaxed);
  /* Release: the slot (and the job behind it) before the new bottom, for
   * the thief whose acquire load of bottom sees it. */
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&d->bottom, b + 1, WEFT__DEQUE_PUBLISH);
  return true;
}

void *weft__deque_pop(weft__deque_t *d) {
  int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed) - 1;
  atomic_store_explicit(&d->bottom, b, memory_order_relaxed);
  /* Claim slot b before reading top: with the matching fence in steal,
   * either we see the thief's top or the thief sees our bottom, so the
   * two cannot both take the same item without meeting at the CAS. */
  atomic_thread_fence(memory_order_seq_cst);
  int64_t t = atomic_load_explicit(&d->top, memory_order_relaxed);
  if (t > b) {
    /* Empty: undo the claim. */
    atomic_store_explicit(&d->bottom, b + 1, memory_order_relaxed);
    return NULL;
  }
  void *x = atomic_load_explicit(&d->buf[b & d->mask], memory_order_relaxed);
  if (t == b) {
    /* The last item: thieves may be after it too, so take it the way they
     * do, by moving top; the loser sees the deque empty. */
    if (!atomic_compare_exchange_strong_explicit(
            &d->top, &t, t + 1, memory_order_seq_cst, memory_order_relaxed))
      x = NULL;
    atomic_store_explicit(&d->bottom, b + 1, memory_order_relaxed);
  }
  return x;
}

void *weft__deque_steal(weft__deque_t *d, bool *contended) {
  if (contended)
    *contended = false;
  int64_t t = atomic_load_explicit(&d->top, memory_order_acquire);
  /* Read top before bottom, in the single total order pop's fence is also
   * in (see weft__deque_pop). */
  atomic_thread_fence(memory_order_seq_cst);
  /* Acquire pairs with push's release fence: the slot below bottom, and
   * the job it points to, are visible once we see that bottom. */
  int64_t b = atomic_load_explicit(&d->bottom, memory_order_acquire);
  if (t >= b)
    return NULL;
  /* Read before the CAS: once top moves past t the owner may reuse the
   * slot. If the CAS fails, what we read is discarded. */
  void *x = atomic_load_explicit(&d->buf[t & d->mask], memory_order_relaxed);
  if (!atomic_compare_exchange_strong_explicit(
          &d->top, &t, t + 1, memory_order_seq_cst, memory_order_relaxed)) {
    if (contended)
      *contended = true;
    return NULL;
  }
  return x;
}

uint32_t weft__deque_size(const weft__deque_t *d) {
  /* Two independent loads: a pop in flight makes bottom - top briefly -1,
   * and a racing push and steal can make it stale either way. */
  int64_t t = atomic_load_explicit(&d->top, memory_order_relaxed);
  int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed);
  int64_t n = b - t;
  if (n <= 0)
    return 0;
  if (n > (int64_t)d->mask + 1)
    return d->mask + 1;
  return (uint32_t)n;
}
