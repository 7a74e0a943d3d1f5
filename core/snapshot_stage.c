/* SPDX-License-Identifier: MIT */
/*
 * Staged rows of a load (snapshot_stage.h): a load into a world that has
 * the snapshot's layout copies the rows into fresh segment memory during
 * validation, and swaps it in once the input is known good.
 *
 * Why stage rather than validate first and copy after: ROWS is most of a
 * snapshot, and validating it means reading all of it (its checksum, its
 * handles). Copying after validation reads it a second time, by then long
 * evicted from the caches. Staging copies each chunk's rows right after
 * they were hashed, from the cache, into memory no chunk uses yet; the
 * world is untouched until the commit, which moves pointers only. The
 * staged memory mirrors a segment byte for byte (same size, alignment and
 * NUMA group), so a chunk's arrays keep their offsets in it: every
 * pointer into the old memory moves by the same distance.
 */
#include "core/snapshot_stage.h"

#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__SSE2__)
#include <immintrin.h>
#define WEFT__SNAP_NT 1
#endif

#include "core/hooks.h"
#include "core/snapshot_read.h"
#include "core/world.h"

/* Segments of at least this many bytes are aligned to (and advised onto)
 * huge pages, as core/archetype.c allocates them. */
#define HUGE_PAGE ((size_t)2 << 20)

#ifdef WEFT__SNAP_NT
/* The non-temporal copy loops, from the widest vector the CPU runs: each
 * store instruction moves a whole line with AVX-512, half with AVX. A
 * staged load copies every row through here, and the narrower loops'
 * instructions (not the memory) were a good part of its time. d is
 * 64-byte aligned; returns the bytes copied (a multiple of 64). */
__attribute__((target("avx512f"))) static size_t
stream_avx512(uint8_t *d, const uint8_t *s, size_t n) {
  size_t k = 0;
  for (; k + 64 <= n; k += 64)
    _mm512_stream_si512((void *)(d + k), _mm512_loadu_si512(s + k));
  return k;
}

__attribute__((target("avx"))) static size_t
stream_avx(uint8_t *d, const uint8_t *s, size_t n) {
  size_t k = 0;
  for (; k + 64 <= n; k += 64) {
    __m256i a = _mm256_loadu_si256((const __m256i *)(s + k));
    __m256i b = _mm256_loadu_si256((const __m256i *)(s + k + 32));
    _mm256_stream_si256((__m256i *)(d + k), a);
    _mm256_stream_si256((__m256i *)(d + k + 32), b);
  }
  return k;
}

static size_t stream_sse2(uint8_t *d, const uint8_t *s, size_t n) {
  size_t k = 0;
  for (; k + 64 <= n; k += 64) {
    __m128i a = _mm_loadu_si128((const __m128i *)(s + k));
    __m128i b = _mm_loadu_si128((const __m128i *)(s + k + 16));
    __m128i c = _mm_loadu_si128((const __m128i *)(s + k + 32));
    __m128i e = _mm_loadu_si128((const __m128i *)(s + k + 48));
    _mm_stream_si128((__m128i *)(d + k), a);
    _mm_stream_si128((__m128i *)(d + k + 16), b);
    _mm_stream_si128((__m128i *)(d + k + 32), c);
    _mm_stream_si128((__m128i *)(d + k + 48), e);
  }
  return k;
}
#endif

void weft__snap_copy(bool stream, void *dst, const void *src, size_t n) {
#ifdef WEFT__SNAP_NT
  if (stream && n >= 256) {
    uint8_t *d = dst;
    const uint8_t *s = src;
    size_t head = (size_t)(-(uintptr_t)d & 63);
    memcpy(d, s, head);
    d += head, s += head, n -= head;
    size_t k = __builtin_cpu_supports("avx512f") ? stream_avx512(d, s, n)
               : __builtin_cpu_supports("avx")   ? stream_avx(d, s, n)
                                                 : stream_sse2(d, s, n);
    memcpy(d + k, s + k, n - k);
    return;
  }
#endif
  (void)stream;
  memcpy(dst, src, n);
}

void weft__snap_copy_fence(void) {
#ifdef WEFT__SNAP_NT
  _mm_sfence();
#endif
}

bool weft__snap_same_layout(const weft_world_t *w,
                            const weft__snap_plan_t *pl) {
  if (w->arch_count != pl->narch || w->chunks.count != pl->chunk_count ||
      w->arch_born != pl->arch_born || w->chunks.nfree != pl->chunk_nfree ||
      (pl->chunk_nfree &&
       memcmp(w->chunks.free, pl->chunk_free, (size_t)pl->chunk_nfree * 4)))
    return false;
  for (uint32_t i = 0; i < pl->narch; i++) {
    const weft__archetype_t *a = w->archs[i];
    const weft__snap_arch_t *sa = &pl->archs[i];
    if ((a == &w->arch_vacant) != sa->vacant)
      return false;
    if (sa->vacant)
      continue;
    if (a->born != sa->born || a->npairs != sa->npairs ||
        (a->npairs &&
         memcmp(a->pairs, sa->pairs, a->npairs * sizeof(*a->pairs))) ||
        !weft__mask_eq(&a->present, &sa->present) ||
        !weft__mask_eq(&a->disabled, &sa->disabled) ||
        a->row_cap != sa->row_cap || a->chunk_total != sa->chunk_total)
      return false;
  }
  uint32_t *next = calloc(pl->narch, sizeof(*next));
  bool same = next != NULL;
  const uint8_t *p = pl->segs;
  for (uint32_t s = 0; same && s < pl->nsegs; s++) {
    uint32_t ai = weft__snap_u32(p), n = weft__snap_u32(p + 4);
    const weft__archetype_t *a = w->archs[ai];
    const weft__segment_t *sg = next[ai] < a->nsegs ? &a->segs[next[ai]++] : 0;
    same = sg && sg->nchunks == n;
    for (uint32_t k = 0; same && k < n; k++)
      same = sg->headers[k].id == weft__snap_u32(p + 8 + 4 * (size_t)k);
    p += 8 + 4 * (size_t)n;
  }
  free(next);
  return same;
}

/* The segment of archetype a that holds chunk c, or a->nsegs. */
static uint32_t segment_of(const weft__archetype_t *a, const weft__chunk_t *c) {
  uintptr_t at = (uintptr_t)c;
  for (uint32_t s = 0; s < a->nsegs; s++) {
    uintptr_t h = (uintptr_t)a->segs[s].headers;
    if (at >= h && at < h + (uintptr_t)a->segs[s].nchunks * sizeof(*c))
      return s;
  }
  return a->nsegs;
}

/* Memory for a copy of segment sg, as core/archetype.c allocated it:
 * same size and alignment, from the same pool group (the one homed on
 * the node its chunks record) when it came from a pool. */
static uint8_t *alloc_like(weft_world_t *w, const weft__segment_t *sg) {
  size_t align = sg->bytes >= HUGE_PAGE ? HUGE_PAGE : 64;
  uint8_t *mem;
  if (sg->pool) {
    const weft__pool_hooks_t *hk = weft__pool_hooks(sg->pool);
    uint32_t g = 0, groups = hk->node_groups(sg->pool);
    while (g + 1 < groups && hk->group_node(sg->pool, g) != sg->headers[0].node)
      g++;
    mem = hk->alloc_on(sg->pool, g, &w->alloc, sg->bytes, align);
  } else {
    mem = weft__alloc(&w->alloc, sg->bytes, align);
  }
  weft__advise_huge(mem, sg->bytes);
  return mem;
}

/* Frees segment memory the way alloc_like() (or core/archetype.c) got it. */
static void free_like(struct weft_pool_t *pool, void *mem, size_t bytes) {
  if (!mem)
    return;
  if (pool)
    weft__pool_hooks(pool)->free_on(pool, mem, bytes);
  else
    weft__free(mem, bytes, 64);
}

/* Stages the segments that hold saved chunks of archetype i; false when
 * out of memory. */
static bool begin_arch(weft__snap_stage_t *st, const weft__snap_plan_t *pl,
                       uint32_t i) {
  const weft__snap_arch_t *sa = &pl->archs[i];
  if (sa->vacant || sa->nchunks == 0)
    return true;
  const weft__archetype_t *a = st->w->archs[i];
  weft__snap_stage_arch_t *t = &st->archs[i];
  t->segs = calloc(a->nsegs ? a->nsegs : 1, sizeof(*t->segs));
  t->seg = malloc(sa->nchunks * sizeof(*t->seg));
  if (!t->segs || !t->seg)
    return false;
  t->nsegs = a->nsegs;
  for (uint32_t k = 0; k < sa->nchunks; k++) {
    uint32_t s = segment_of(a, a->chunks[k]);
    if (s == a->nsegs)
      return false; /* a chunk outside the segments: do not stage */
    t->seg[k] = s;
    if (t->segs[s].mem)
      continue;
    t->segs[s] = (weft__snap_stage_seg_t){alloc_like(st->w, &a->segs[s]),
                                          a->segs[s].bytes, a->segs[s].pool};
    if (!t->segs[s].mem)
      return false;
  }
  return true;
}

void weft__snap_stage_begin(weft__snap_stage_t *st,
                            const weft__snap_plan_t *pl) {
  st->on = false;
  if (!weft__snap_same_layout(st->w, pl))
    return;
  st->archs = calloc(pl->narch, sizeof(*st->archs));
  if (!st->archs)
    return;
  st->narch = pl->narch;
  for (uint32_t i = 0; i < pl->narch; i++)
    if (!begin_arch(st, pl, i)) {
      weft__snap_stage_free(st);
      return;
    }
  st->on = true;
}

/* Where byte p of segment s of archetype a lies in its staged copy. */
static inline uint8_t *staged(const weft__archetype_t *a,
                              const weft__snap_stage_arch_t *t, uint32_t s,
                              const void *p) {
  return t->segs[s].mem + ((const uint8_t *)p - a->segs[s].mem);
}

void weft__snap_stage_chunk(const weft__snap_stage_t *st,
                            const weft__snap_plan_t *pl, uint32_t i, uint32_t k,
                            const uint8_t *p, uint32_t n) {
  const weft__archetype_t *a = st->w->archs[i];
  const weft__snap_arch_t *sa = &pl->archs[i];
  const weft__snap_stage_arch_t *t = &st->archs[i];
  const weft__chunk_t *ch = a->chunks[k];
  uint32_t s = t->seg[k];
  weft__snap_copy(st->stream, staged(a, t, s, ch->entities), p, (size_t)n * 8);
  /* The column blocks follow the handles, each saved component's arrays
   * in turn; only those stored as the program stores them are copied
   * here (the others are rebuilt after validation, from the input). */
  size_t at = (size_t)8 * n;
  for (uint32_t c = 0; c < sa->npresent; c++) {
    const weft__snap_comp_t *sc = &pl->comps[weft__snap_u32(sa->comps + 4 * c)];
    if (sc->mode == WEFT__SNAP_SAME) {
      const weft__column_t *col = weft__archetype_col(a, sc->target);
      size_t off = at;
      for (uint32_t j = 0; j < col->array_count; j++) {
        uint32_t ai = col->first_array + j, elem = a->arrays[ai].elem;
        weft__snap_copy(st->stream, staged(a, t, s, ch->bases[ai]), p + off,
                        (size_t)n * elem);
        off += (size_t)n * elem;
      }
    }
    at += (size_t)n * sc->row_bytes;
  }
}

uint32_t weft__snap_stage_place(const weft__snap_stage_t *st, uint32_t i,
                                uint32_t k) {
  const weft__chunk_t *ch = st->w->archs[i]->chunks[k];
  return WEFT__REC_LOC | ch->id << weft__index_row_bits(&st->w->index);
}

/* Moves every chunk of segment s of archetype a, and its chunk table
 * entry, onto the staged memory m; frees the old memory. */
static void swap_segment(weft_world_t *w, weft__archetype_t *a, uint32_t s,
                         uint8_t *m) {
  weft__segment_t *sg = &a->segs[s];
  uint8_t *old = sg->mem;
  for (uint32_t k = 0; k < sg->nchunks; k++) {
    weft__chunk_t *c = &sg->headers[k];
    c->entities = (weft_entity_t *)(m + ((uint8_t *)c->entities - old));
    for (uint32_t j = 0; j < a->narrays; j++)
      c->bases[j] = m + (c->bases[j] - old);
    weft__chunk_slot_t *slot = &w->chunks.table[c->id];
    if (slot->chunk != c)
      continue;
    slot->entities = c->entities;
    for (uint32_t j = 0; j < a->narrays && j < WEFT__SLOT_BASES; j++)
      slot->base[j] = c->bases[j];
  }
  sg->mem = m;
  free_like(sg->pool, old, sg->bytes);
}

void weft__snap_stage_commit(weft__snap_stage_t *st) {
  weft_world_t *w = st->w;
  for (uint32_t i = 0; st->on && i < st->narch; i++) {
    weft__snap_stage_arch_t *t = &st->archs[i];
    weft__archetype_t *a = w->archs[i];
    for (uint32_t s = 0; s < t->nsegs; s++)
      if (t->segs[s].mem) {
        swap_segment(w, a, s, t->segs[s].mem);
        t->segs[s].mem = NULL; /* the world's now */
      }
  }
}

void weft__snap_stage_free(weft__snap_stage_t *st) {
  /* Touches nothing of the world: after a commit, a load that then
   * failed may have emptied it. */
  for (uint32_t i = 0; st->archs && i < st->narch; i++) {
    weft__snap_stage_arch_t *t = &st->archs[i];
    for (uint32_t s = 0; s < t->nsegs; s++)
      free_like(t->segs[s].pool, t->segs[s].mem, t->segs[s].bytes);
    free(t->segs);
    free(t->seg);
  }
  free(st->archs);
  st->archs = NULL;
  st->narch = 0;
  st->on = false;
}
