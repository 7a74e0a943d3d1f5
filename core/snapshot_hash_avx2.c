/* SPDX-License-Identifier: MIT */
/*
 * The AVX2 build of XXH3-64 (snapshot_hash.h): this file alone is
 * compiled with -mavx2 (CMakeLists.txt) and called only on CPUs that
 * have AVX2. The state layout is the same in every build of xxhash.h, so
 * a stream may mix calls of both builds.
 */
#include "core/snapshot_hash.h"

#if defined(__x86_64__) && defined(__AVX2__)
#define XXH_INLINE_ALL
#define XXH_VECTOR XXH_AVX2
#include <xxhash.h>

uint64_t weft__xxh3_avx2(const void *p, size_t n) {
  return XXH3_64bits(p, n);
}

void weft__xxh3_update_avx2(weft__xxh3_state_t *s, const void *p, size_t n) {
  XXH3_64bits_update((XXH3_state_t *)s->b, p, n);
}
#endif
