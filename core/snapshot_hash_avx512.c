/* SPDX-License-Identifier: MIT */
/*
 * The AVX-512 build of XXH3-64 (snapshot_hash.h): this file alone is
 * compiled with -mavx512f (CMakeLists.txt) and called only on CPUs (and
 * kernels) that run AVX-512. A load hashes the whole input and most of it
 * straight from memory; the wider build keeps up with memory where the
 * AVX2 one falls behind. The state layout is the same in every build of
 * xxhash.h, so a stream may mix calls of the builds.
 */
#include "core/snapshot_hash.h"

#if defined(__x86_64__) && defined(__AVX512F__)
#define XXH_INLINE_ALL
#define XXH_VECTOR XXH_AVX512
#include <xxhash.h>

uint64_t weft__xxh3_avx512(const void *p, size_t n) {
  return XXH3_64bits(p, n);
}

void weft__xxh3_update_avx512(weft__xxh3_state_t *s, const void *p, size_t n) {
  XXH3_64bits_update((XXH3_state_t *)s->b, p, n);
}
#endif
