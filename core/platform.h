/* SPDX-License-Identifier: MIT */
/*
 * The one home of what weft needs from the compiler and the CPU: branch
 * hints and function attributes, the cache-line size and the macro that
 * aligns a field group to it, the spin-wait hint and the monotonic clock.
 * Internal; every layer may include it.
 */
#ifndef WEFT_CORE_PLATFORM_H
#define WEFT_CORE_PLATFORM_H

#include <stdalign.h>
#include <stdint.h>
#include <time.h>

#if defined(__GNUC__)
#define WEFT__LIKELY(x) __builtin_expect(!!(x), 1)
#define WEFT__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define WEFT__PRINTF(a, b) __attribute__((format(printf, a, b)))
#define WEFT__COLD __attribute__((cold, noinline))
#define WEFT__NOINLINE __attribute__((noinline))
#else
#define WEFT__LIKELY(x) (x)
#define WEFT__UNLIKELY(x) (x)
#define WEFT__PRINTF(a, b)
#define WEFT__COLD
#define WEFT__NOINLINE
#endif

/* The line size weft pads shared structures to (x86-64 and most arm64). */
#define WEFT__CACHE_LINE 64

/*
 * Starts a new cache line at this field. Shared structures group their
 * fields by writer (the owner before dispatch, any worker atomically, one
 * worker alone) and put this on the first field of each group, so that a
 * write by one group's writer never invalidates a line another reads.
 */
#define WEFT__LINE_ALIGNED alignas(WEFT__CACHE_LINE)

/* Tells the CPU this thread is spinning (x86's pause), so that a waiting
 * loop yields the core's shared resources to its sibling. */
static inline void weft__cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* Nanoseconds on CLOCK_MONOTONIC: never jumps, comparable across threads. */
static inline uint64_t weft__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif /* WEFT_CORE_PLATFORM_H */
