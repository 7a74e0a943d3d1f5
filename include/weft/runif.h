/* SPDX-License-Identifier: MIT */
/**
 * @file runif.h
 * Run conditions: predicates that decide, each time a system's turn comes,
 * whether it runs.
 *
 * A condition is an object owned by the world, built by the factories
 * below and attached to systems through `weft_system_desc_t.run_if`. Each
 * timer factory creates state for one use; attaching the same condition to
 * two systems shares that state.
 *
 * Semantics:
 * - Timers consume the phase's delta time only when they are evaluated. A
 *   disabled system or phase never evaluates its condition.
 * - every(interval) fires when the time it accumulated reaches the
 *   interval, keeps the excess, and fires at most once per evaluation.
 *   With jitter, the first interval is the base one; each later interval is
 *   base + uniform(-jitter, +jitter) drawn from the given generator,
 *   clamped to at least 1% of the base.
 * - after(delay) fires once, when the accumulated time reaches the delay;
 *   its system is then removed from the schedule (taking effect at the next
 *   dispatch), so that one run is its only run.
 * - cooldown(period) starts ready: it fires on its first evaluation, then
 *   again once the time accumulated since reaches the period; firing
 *   discards the excess.
 * - in_state(s) is true while weft_world_state() equals s.
 * - both/either short-circuit: the second operand is not evaluated (its
 *   timers do not advance) when the first decides. negate inverts.
 */
#ifndef WEFT_RUNIF_H
#define WEFT_RUNIF_H

#include <stdbool.h>
#include <stdint.h>

#include "weft/random.h"
#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An opaque run condition owned by its world. */
typedef struct weft_runif_t weft_runif_t;

/** A user predicate: @p dt is the phase's delta time. */
typedef bool (*weft_runif_fn)(weft_world_t *world, double dt, void *user);

/**
 * Each factory: owner thread; *out belongs to the world and lives until the
 * world is destroyed (there is no per-condition destroy). An interval or
 * period of 0 fires at every evaluation. Returns WEFT_EINVAL (NULL
 * world/out, a negative or non-finite time or jitter, a NULL operand, fn or
 * rng, an operand of another world) or WEFT_ENOMEM; *out is unchanged on
 * failure.
 */
int weft_runif_every(weft_world_t *world, double interval, weft_runif_t **out);

/** every() whose later intervals are jittered by ±@p jitter from @p rng
 * (which must outlive the condition, e.g. a world stream). Owner thread;
 * *out as every factory's. */
int weft_runif_every_jitter(weft_world_t *world, double interval, double jitter,
                            weft_rng_t *rng, weft_runif_t **out);

/** Fires once after @p delay seconds of evaluated time. Owner thread. */
int weft_runif_after(weft_world_t *world, double delay, weft_runif_t **out);

/** Fires at most once per @p period seconds, starting ready. Owner
 * thread. */
int weft_runif_cooldown(weft_world_t *world, double period, weft_runif_t **out);

/** True while the world's state (weft_world_set_state()) is @p state.
 * Owner thread. */
int weft_runif_in_state(weft_world_t *world, uint32_t state,
                        weft_runif_t **out);

/** @p a and then, only if it was true, @p b. Owner thread. */
int weft_runif_both(weft_world_t *world, weft_runif_t *a, weft_runif_t *b,
                    weft_runif_t **out);

/** @p a or else, only if it was false, @p b. Owner thread. */
int weft_runif_either(weft_world_t *world, weft_runif_t *a, weft_runif_t *b,
                      weft_runif_t **out);

/** Not @p a. Owner thread. */
int weft_runif_negate(weft_world_t *world, weft_runif_t *a, weft_runif_t **out);

/** A user predicate called with @p user (on the thread that evaluates
 * conditions: the one driving the frame). Owner thread. */
int weft_runif_custom(weft_world_t *world, weft_runif_fn fn, void *user,
                      weft_runif_t **out);

/**
 * Evaluates @p cond with delta time @p dt, advancing its timers, as the
 * scheduler does at a system's turn. *retire (optional; initialise it to
 * false) is set to true when an after() condition was evaluated and fired,
 * also through combinators, meaning its system must be removed; it is
 * never set back to false. A negative or non-finite @p dt panics in checked
 * mode and otherwise counts as 0. A NULL @p cond is false. Owner thread.
 * Exposed for tests and custom pipelines.
 */
bool weft_runif_eval(weft_runif_t *cond, double dt, bool *retire);

/** Sets the world's state value that in_state() conditions compare. Any
 * thread (a relaxed store: it orders no other memory). */
void weft_world_set_state(weft_world_t *world, uint32_t state);

/** The world's state value (0 at creation). Any thread. */
uint32_t weft_world_state(const weft_world_t *world);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_RUNIF_H */
