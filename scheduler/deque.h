/* SPDX-License-Identifier: MIT */
/*
 * The scheduler's per-worker work-stealing deque (Chase-Lev).
 *
 * One owner thread pushes and pops jobs at the bottom; any thread may steal
 * from the top. The memory orderings are those of the C11 version proven
 * correct by Le, Pop, Cohen and Zappa Nardelli, "Correct and Efficient
 * Work-Stealing for Weak Memory Models" (PPoPP 2013, fig. 1); deque.c notes
 * which edge each ordering provides, so do not weaken one without reading
 * that first.
 *
 * The capacity is fixed at init and the deque never grows: a worker whose
 * deque is full runs the job inline instead, which bounds memory and keeps
 * the steady state allocation-free. Items are opaque non-NULL pointers
 * (jobs); the deque never dereferences them. Whatever the owner wrote to a
 * job before pushing it is visible to the thread that steals it.
 */
#ifndef WEFT_SCHEDULER_DEQUE_H
#define WEFT_SCHEDULER_DEQUE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/platform.h"

/* Largest capacity weft__deque_init accepts. */
#define WEFT__DEQUE_MAX_CAPACITY (UINT32_C(1) << 30)

/*
 * Thieves CAS top while the owner stores bottom on every push and pop, so
 * each index gets its own cache line; the buffer pointer and mask, written
 * only by init, get a third line that stays shared in every cache. Indices
 * are signed 64-bit so that pop's bottom - 1 on an empty deque is -1, not a
 * wrapped huge value, and so that they never wrap in practice.
 *
 * The struct is over-aligned: embed it in an object allocated with 64-byte
 * alignment (or a static/automatic one), not in plain malloc memory.
 */
typedef struct weft__deque_t {
  WEFT__LINE_ALIGNED _Atomic int64_t top;
  WEFT__LINE_ALIGNED _Atomic int64_t bottom;
  /* Owner only: a value of top that push loaded with acquire. Top never
   * decreases, so this is a lower bound that push trusts until the deque
   * looks full; push then does not pull the thieves' line on every call. */
  int64_t top_seen;
  WEFT__LINE_ALIGNED _Atomic(void *) *buf;
  uint32_t mask; /* capacity - 1 */
} weft__deque_t;

/*
 * Initialises an empty deque holding up to capacity_pow2 items (a power of
 * two in [1, WEFT__DEQUE_MAX_CAPACITY]). Returns 0, WEFT_EINVAL for a bad
 * capacity or WEFT_ENOMEM; on failure *d is left safe to pass to fini.
 * Not thread-safe: publish the deque to other threads after it returns.
 */
int weft__deque_init(weft__deque_t *d, uint32_t capacity_pow2);

/* Frees the buffer. No other thread may use the deque any more; items still
 * in it are dropped (the deque does not own them). Calling it again, or on
 * a deque whose init failed, is harmless. */
void weft__deque_fini(weft__deque_t *d);

/* Owner thread only. Pushes a non-NULL item at the bottom; false when the
 * deque is full (the item is not stored and stays the caller's). */
bool weft__deque_push(weft__deque_t *d, void *item);

/* Owner thread only. Takes the most recently pushed item (LIFO); NULL when
 * the deque is empty or a thief won the race for its last item. */
void *weft__deque_pop(weft__deque_t *d);

/*
 * Any thread, owner included. Takes the oldest item (FIFO); NULL when the
 * deque is empty or another thread took that item first. *contended
 * (contended may be NULL) is set to true only in the second case, where the
 * deque may still hold items and retrying is worthwhile; false otherwise.
 */
void *weft__deque_steal(weft__deque_t *d, bool *contended);

/* Any thread. The number of items, read without synchronisation: exact
 * only when no other thread is using the deque, a hint otherwise. */
uint32_t weft__deque_size(const weft__deque_t *d);

#endif /* WEFT_SCHEDULER_DEQUE_H */
