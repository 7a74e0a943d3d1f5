/* SPDX-License-Identifier: MIT */
/**
 * @file random.h
 * Deterministic randomness.
 *
 * Two kinds of generator, both independent of thread count:
 *
 * - **Named streams**:
 *   `weft_random_stream(world, "game.loot", &rng)` gives a generator owned
 *   by the world whose sequence depends only on the world seed and the
 *   stream's name, never on which other streams exist or how much they
 *   drew. Use them from one thread at a time (the
 *   owner thread, or one system that declares the stream as written).
 * - **Counter-based draws**: weft_random_at() is a pure function of
 *   (seed, entity, tick, stream, n). Parallel systems use it to give each
 *   entity its own numbers without shared state, so the result does not
 *   depend on which worker ran which chunk.
 *
 * The generator is xoshiro256** seeded through splitmix64; the counter
 * function is a keyed 64-bit mixer with full avalanche.
 */
#ifndef WEFT_RANDOM_H
#define WEFT_RANDOM_H

#include <stdint.h>

#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The seed every world starts with: a fixed value, never the clock, so
 * that runs repeat. */
#define WEFT_RANDOM_SEED_DEFAULT 0x5EED1234u

/** A xoshiro256** generator. Small and transparent: copy it to fork. */
typedef struct weft_rng_t {
  uint64_t s[4];
} weft_rng_t;

/** Seeds @p rng from one 64-bit word (splitmix64 expansion). Any thread. */
void weft_rng_seed(weft_rng_t *rng, uint64_t seed);

/** The next 64 random bits. The thread that owns @p rng. */
static inline uint64_t weft_rng_next(weft_rng_t *rng) {
  uint64_t *s = rng->s;
  uint64_t x = s[1] * 5u;
  uint64_t r = (x << 7 | x >> 57) * 9u;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = s[3] << 45 | s[3] >> 19;
  return r;
}

/**
 * A uniform integer in [0, n) without modulo bias; 0 (drawing nothing) when
 * n is 0. The thread that owns @p rng.
 */
uint32_t weft_rng_below(weft_rng_t *rng, uint32_t n);

/** A uniform double in [0, 1) with 53 random bits. The thread that owns
 * @p rng. */
double weft_rng_double(weft_rng_t *rng);

/** A uniform double in [lo, hi); lo when hi <= lo. The thread that owns
 * @p rng. */
double weft_rng_uniform(weft_rng_t *rng, double lo, double hi);

/**
 * Shuffles @p n elements of @p size bytes at @p base (Fisher–Yates, back to
 * front). Elements of at most 64 bytes; larger ones return without change.
 * The thread that owns @p rng; @p base stays the caller's.
 */
void weft_rng_shuffle(weft_rng_t *rng, void *base, uint32_t n, uint32_t size);

/**
 * The world's stream named @p name (a non-empty string, copied). The same
 * name returns the same generator, created on first use. Owner thread.
 * *out belongs to the world and lives until the world is destroyed.
 * Returns WEFT_EINVAL (NULL argument or empty name; *out is then NULL) or
 * WEFT_ENOMEM.
 */
int weft_random_stream(weft_world_t *world, const char *name, weft_rng_t **out);

/**
 * Sets the world seed and restarts every existing stream in place (their
 * pointers stay valid); later streams derive from the new seed too.
 * Owner thread, not while systems run. Does nothing for a NULL world; out
 * of memory (first use only) leaves the seed unchanged and records the error
 * for weft_world_last_error().
 */
void weft_random_seed(weft_world_t *world, uint64_t seed);

/**
 * The world's current random seed (WEFT_RANDOM_SEED_DEFAULT until
 * weft_random_seed() sets one). Any thread, but not concurrently with the
 * owner's weft_random_seed() or weft_random_stream() calls.
 */
uint64_t weft_random_world_seed(const weft_world_t *world);

/**
 * A pure, counter-based 64-bit draw keyed by (seed, entity, tick, stream,
 * n): the same inputs always give the same bits, on any thread. Use a
 * different @p n for each number one entity needs in one tick.
 */
static inline uint64_t weft_random_at(uint64_t seed, uint64_t entity,
                                      uint64_t tick, uint32_t stream,
                                      uint32_t n) {
  /* Each input goes through a full-avalanche round before the next is
   * folded in, so nearby keys (entity e and e+1) give unrelated bits. */
  uint64_t k[4] = {entity, tick, (uint64_t)stream << 32 | n, 0};
  uint64_t h = seed ^ 0x9e3779b97f4a7c15u;
  for (int i = 0; i < 3; i++) {
    h ^= k[i] + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2);
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9u;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebu;
    h ^= h >> 31;
  }
  return h;
}

/** weft_random_at() scaled to a double in [0, 1). Any thread. */
static inline double weft_random_at_double(uint64_t seed, uint64_t entity,
                                           uint64_t tick, uint32_t stream,
                                           uint32_t n) {
  return (double)(weft_random_at(seed, entity, tick, stream, n) >> 11) *
         0x1.0p-53;
}

#ifdef __cplusplus
}
#endif

#endif /* WEFT_RANDOM_H */
