/* SPDX-License-Identifier: MIT */
/*
 * XXH3-64 for snapshots (snapshot_hash.h), from Debian's xxhash.h used
 * header-only: libweft.a carries the code, its users link nothing more.
 * The bulk of a snapshot is hashed by the AVX-512 or AVX2 build of the
 * same code (snapshot_hash_avx512.c, snapshot_hash_avx2.c) when the CPU
 * has them: the loader hashes every byte it reads, so the hash is a good
 * part of a load's time.
 */
#include "core/snapshot_hash.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

_Static_assert(sizeof(XXH3_state_t) <= sizeof(weft__xxh3_state_t) &&
                   _Alignof(XXH3_state_t) <= 64,
               "weft__xxh3_state_t holds an XXH3_state_t");

#if defined(__x86_64__) && defined(WEFT__XXH3_AVX2)
#define HAVE_AVX2() __builtin_cpu_supports("avx2")
#else
#define HAVE_AVX2() 0
#endif
#if defined(__x86_64__) && defined(WEFT__XXH3_AVX512)
#define HAVE_AVX512() __builtin_cpu_supports("avx512f")
#else
#define HAVE_AVX512() 0
#endif

uint64_t weft__xxh3(const void *p, size_t n) {
#if defined(__x86_64__) && defined(WEFT__XXH3_AVX512)
  if (n >= 1024 && HAVE_AVX512())
    return weft__xxh3_avx512(p, n);
#endif
#if defined(__x86_64__) && defined(WEFT__XXH3_AVX2)
  if (n >= 1024 && HAVE_AVX2())
    return weft__xxh3_avx2(p, n);
#endif
  return XXH3_64bits(p, n);
}

void weft__xxh3_reset(weft__xxh3_state_t *s) {
  XXH3_INITSTATE((XXH3_state_t *)s->b);
  XXH3_64bits_reset((XXH3_state_t *)s->b);
}

void weft__xxh3_update(weft__xxh3_state_t *s, const void *p, size_t n) {
#if defined(__x86_64__) && defined(WEFT__XXH3_AVX512)
  if (n >= 1024 && HAVE_AVX512()) {
    weft__xxh3_update_avx512(s, p, n);
    return;
  }
#endif
#if defined(__x86_64__) && defined(WEFT__XXH3_AVX2)
  if (n >= 1024 && HAVE_AVX2()) {
    weft__xxh3_update_avx2(s, p, n);
    return;
  }
#endif
  XXH3_64bits_update((XXH3_state_t *)s->b, p, n);
}

uint64_t weft__xxh3_digest(const weft__xxh3_state_t *s) {
  return XXH3_64bits_digest((const XXH3_state_t *)s->b);
}
