/* SPDX-License-Identifier: MIT */
/*
 * XXH3-64 for snapshot checksums (snapshot_hash.c): one-shot and
 * streaming, with the widest vector code the CPU runs (AVX-512 or AVX2
 * where they exist, from snapshot_hash_avx512.c and snapshot_hash_avx2.c;
 * SSE2 otherwise), chosen per call.
 */
#ifndef WEFT_CORE_SNAPSHOT_HASH_H
#define WEFT_CORE_SNAPSHOT_HASH_H

#include <stddef.h>
#include <stdint.h>

/* Room for an XXH3_state_t (checked where xxhash.h is seen). */
typedef struct weft__xxh3_state_t {
  _Alignas(64) unsigned char b[640];
} weft__xxh3_state_t;

uint64_t weft__xxh3(const void *p, size_t n);
void weft__xxh3_reset(weft__xxh3_state_t *s);
void weft__xxh3_update(weft__xxh3_state_t *s, const void *p, size_t n);
uint64_t weft__xxh3_digest(const weft__xxh3_state_t *s);

/* The same, compiled for AVX2 (x86-64 only; call only when the CPU has
 * it). */
uint64_t weft__xxh3_avx2(const void *p, size_t n);
void weft__xxh3_update_avx2(weft__xxh3_state_t *s, const void *p, size_t n);

/* And for AVX-512 (x86-64 only; call only when the CPU and the kernel run
 * it). */
uint64_t weft__xxh3_avx512(const void *p, size_t n);
void weft__xxh3_update_avx512(weft__xxh3_state_t *s, const void *p, size_t n);

#endif /* WEFT_CORE_SNAPSHOT_HASH_H */
