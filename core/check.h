/* SPDX-License-Identifier: MIT */
/*
 * Precondition checks and failure reporting.
 *
 * Every public function validates its input through WEFT_CHECK so that bad
 * input becomes an error code plus a message on the world, never a crash.
 * In debug builds the message names the file and line of the failed check.
 *
 * Misuse that would corrupt memory is caught in every build when the
 * check is cheap (a flag, a count, a version compare per chunk: destroyed
 * or scheduler-owned command buffers, destroying an iterated query,
 * iterators orphaned by weft_world_unwind()), and in checked mode only
 * (WEFT_ASSERT_CHECKED) when it would cost the hot loops more; see
 * DEVELOPERS.md, "Misuse checks", for the list.
 */
#ifndef WEFT_CORE_CHECK_H
#define WEFT_CORE_CHECK_H

#include "core/platform.h"
#include "weft/error.h"
#include "weft/world.h"

#ifdef NDEBUG
#define WEFT__FILE ((const char *)0)
#define WEFT__LINE 0
#else
#define WEFT__FILE __FILE__
#define WEFT__LINE __LINE__
#endif

/*
 * Records a failure on the world (message, file, line) and returns code.
 * World may be NULL (the message then goes nowhere). Cold path.
 */
int weft__fail(const weft_world_t *world, int code, const char *file, int line,
               const char *fmt, ...) WEFT__PRINTF(5, 6) WEFT__COLD;

/*
 * Reports misuse caught by checked mode through the world's panic handler.
 * Does nothing when checked mode is off. Returns so that callers can fall
 * back to their release behaviour when the handler returns.
 */
void weft__panic(const weft_world_t *world, const char *file, int line,
                 const char *msg) WEFT__COLD;

/* Returns code from the enclosing function, with a message, when cond fails. */
#define WEFT_CHECK(world, cond, code, ...)                                     \
  do {                                                                         \
    if (WEFT__UNLIKELY(!(cond)))                                               \
      return weft__fail((world), (code), WEFT__FILE, WEFT__LINE, __VA_ARGS__); \
  } while (0)

/* Panics (checked mode only) when cond fails; evaluates to cond. */
#define WEFT_ASSERT_CHECKED(world, cond, msg)                                  \
  (WEFT__LIKELY(cond) ? 1                                                      \
                      : (weft__panic((world), __FILE__, __LINE__, (msg)), 0))

#endif /* WEFT_CORE_CHECK_H */
