/* SPDX-License-Identifier: MIT */
/*
 * Component masks: one bit per component id. Masks are value types copied
 * by assignment; an archetype is identified by two of them (present and
 * disabled components).
 */
#ifndef WEFT_CORE_BITSET_H
#define WEFT_CORE_BITSET_H

#include <stdbool.h>
#include <stdint.h>

#include "weft/component.h"

#define WEFT__MASK_WORDS ((WEFT_MAX_COMPONENTS + 64u) / 64u)

typedef struct weft__mask_t {
  uint64_t w[WEFT__MASK_WORDS];
} weft__mask_t;

static inline void weft__mask_set(weft__mask_t *m, uint32_t bit) {
  m->w[bit >> 6] |= UINT64_C(1) << (bit & 63);
}
static inline void weft__mask_clear(weft__mask_t *m, uint32_t bit) {
  m->w[bit >> 6] &= ~(UINT64_C(1) << (bit & 63));
}
static inline bool weft__mask_test(const weft__mask_t *m, uint32_t bit) {
  return (m->w[bit >> 6] >> (bit & 63)) & 1u;
}
static inline bool weft__mask_eq(const weft__mask_t *a, const weft__mask_t *b) {
  uint64_t d = 0;
  for (uint32_t i = 0; i < WEFT__MASK_WORDS; i++)
    d |= a->w[i] ^ b->w[i];
  return d == 0;
}
/* True if every bit of sub is in super. */
static inline bool weft__mask_contains(const weft__mask_t *super,
                                       const weft__mask_t *sub) {
  uint64_t d = 0;
  for (uint32_t i = 0; i < WEFT__MASK_WORDS; i++)
    d |= sub->w[i] & ~super->w[i];
  return d == 0;
}
static inline bool weft__mask_intersects(const weft__mask_t *a,
                                         const weft__mask_t *b) {
  uint64_t d = 0;
  for (uint32_t i = 0; i < WEFT__MASK_WORDS; i++)
    d |= a->w[i] & b->w[i];
  return d != 0;
}
static inline bool weft__mask_empty(const weft__mask_t *m) {
  uint64_t d = 0;
  for (uint32_t i = 0; i < WEFT__MASK_WORDS; i++)
    d |= m->w[i];
  return d == 0;
}
/* a & ~b */
static inline weft__mask_t weft__mask_andnot(const weft__mask_t *a,
                                             const weft__mask_t *b) {
  weft__mask_t r;
  for (uint32_t i = 0; i < WEFT__MASK_WORDS; i++)
    r.w[i] = a->w[i] & ~b->w[i];
  return r;
}
/* A 64-bit hash of two masks (the archetype key). */
static inline uint64_t weft__mask_hash2(const weft__mask_t *a,
                                        const weft__mask_t *b) {
  uint64_t h = UINT64_C(0x9e3779b97f4a7c15);
  for (uint32_t i = 0; i < WEFT__MASK_WORDS; i++) {
    h = (h ^ a->w[i]) * UINT64_C(0xff51afd7ed558ccd);
    h = (h ^ (b->w[i] + (h >> 29))) * UINT64_C(0xc4ceb9fe1a85ec53);
  }
  return h ^ (h >> 32);
}
/* Calls the body with `bit` bound to each set bit in ascending order. */
#define WEFT__MASK_FOREACH(m, bit)                                             \
  for (uint32_t wi_ = 0; wi_ < WEFT__MASK_WORDS; wi_++)                        \
    for (uint64_t word_ = (m)->w[wi_]; word_; word_ &= word_ - 1)              \
      for (uint32_t bit = wi_ * 64u + (uint32_t)__builtin_ctzll(word_),        \
                    k_ = 0;                                                    \
           k_ < 1; k_++)

#endif /* WEFT_CORE_BITSET_H */
