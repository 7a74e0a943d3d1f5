/* SPDX-License-Identifier: MIT */
/* World lifetime, configuration, clear/reserve, stats and error reporting. */
#include "core/relation.h"
#include "core/world.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/observer.h"
#include "core/query_internal.h"

/* The layout world.h promises: the index's hot fields on the first line,
 * the routing word on the second. */
_Static_assert(offsetof(weft__index_t, retired) + sizeof(uint32_t) <= 64,
               "the index's hot fields fit one cache line");
_Static_assert(offsetof(weft_world_t, txn) + sizeof(uint32_t) <= 128,
               "the routing word sits on the second line");

/* What the public header's inline weft_get() reads (weft_get_view_t_,
 * weft_get_slot_t_, weft_get_col_t_) is where it reads it. */
#define WEFT__SAME_FIELD(a, fa, b, fb)                                         \
  (offsetof(a, fa) == offsetof(b, fb) &&                                       \
   sizeof(((a *)0)->fa) == sizeof(((b *)0)->fb))
_Static_assert(offsetof(weft_world_t, index) == 0, "the index comes first");
_Static_assert(
    WEFT__SAME_FIELD(weft__index_t, pages, weft_get_view_t_, pages_) &&
        WEFT__SAME_FIELD(weft__index_t, table, weft_get_view_t_, table_) &&
        WEFT__SAME_FIELD(weft__index_t, hwm, weft_get_view_t_, hwm_) &&
        WEFT__SAME_FIELD(weft__index_t, slot_shift, weft_get_view_t_,
                         slot_shift_) &&
        WEFT__SAME_FIELD(weft__index_t, row_mask, weft_get_view_t_,
                         row_mask_) &&
        WEFT__SAME_FIELD(weft__index_t, slot_mask, weft_get_view_t_,
                         slot_mask_),
    "weft_get_view_t_ mirrors the index");
_Static_assert(WEFT__SAME_FIELD(weft__chunk_slot_t, entities, weft_get_slot_t_,
                                entities_) &&
                   WEFT__SAME_FIELD(weft__chunk_slot_t, arch, weft_get_slot_t_,
                                    cols_) &&
                   sizeof(weft__chunk_slot_t) == 1u << WEFT_GET_SLOT_BITS_,
               "weft_get_slot_t_ mirrors a chunk table entry");
_Static_assert(offsetof(weft__archetype_t, getmap) == 0 &&
                   sizeof(weft__getcol_t) == sizeof(weft_get_col_t_) &&
                   WEFT__SAME_FIELD(weft__getcol_t, off, weft_get_col_t_,
                                    off_) &&
                   WEFT__SAME_FIELD(weft__getcol_t, size, weft_get_col_t_,
                                    size_),
               "weft_get_col_t_ mirrors a getmap entry");
_Static_assert(WEFT__PAGE_BITS == WEFT_GET_PAGE_BITS_ &&
                   WEFT__REC_LOC == WEFT_GET_REC_LOC_,
               "weft_get() decodes records as the index writes them");
#undef WEFT__SAME_FIELD

/* The one piece of process-wide state: a counter handing out world tags so
 * that two worlds in one process reject each other's handles by default. */
static _Atomic uint32_t weft__next_tag = 0;

static uint8_t pick_tag(uint8_t wanted) {
  if (wanted)
    return wanted;
  uint32_t n =
      atomic_fetch_add_explicit(&weft__next_tag, 1, memory_order_relaxed);
  return (uint8_t)(1 + n % 255u);
}

static bool is_pow2(uint32_t v) {
  return v && !(v & (v - 1));
}

static int check_config(const weft_world_config_t *c) {
  if (c->chunk_size &&
      (!is_pow2(c->chunk_size) || c->chunk_size < WEFT_CHUNK_SIZE_MIN ||
       c->chunk_size > WEFT_CHUNK_SIZE_MAX))
    return weft__fail(NULL, WEFT_EINVAL, WEFT__FILE, WEFT__LINE,
                      "chunk_size %u is not a power of two in [%u, %u]",
                      c->chunk_size, WEFT_CHUNK_SIZE_MIN, WEFT_CHUNK_SIZE_MAX);
  if (c->capacity > WEFT_ENTITY_MAX || c->max_generation > WEFT_GENERATION_MAX)
    return WEFT_EINVAL;
  if (c->checked > WEFT_CHECKED_OFF)
    return WEFT_EINVAL;
  return 0;
}

static void default_panic(void *user, const char *file, int line,
                          const char *msg) {
  (void)user;
  fprintf(stderr, "weft: checked mode: %s:%d: %s\n", file, line, msg);
  abort();
}

int weft_world_create(const weft_world_config_t *config, weft_world_t **out) {
  weft_world_config_t cfg = {0};
  if (config)
    cfg = *config;
  if (!out)
    return WEFT_EINVAL;
  int rc = check_config(&cfg);
  if (rc)
    return rc;
  weft__alloc_stats_t st = {0};
  weft_world_t *w = weft__calloc(&st, sizeof(*w), 64);
  if (!w)
    return WEFT_ENOMEM;
  w->alloc = st;
  /* The world's large blocks stay resident until it trims or goes (see
   * weft__alloc_heap_open()). */
  weft__alloc_heap_open(&w->alloc);
  w->chunk_size = cfg.chunk_size ? cfg.chunk_size : WEFT_CHUNK_SIZE_DEFAULT;
  w->tag = pick_tag(cfg.world_tag);
  weft__index_init(&w->index, cfg.capacity ? cfg.capacity : WEFT_ENTITY_MAX,
                   cfg.max_generation ? cfg.max_generation
                                      : WEFT_GENERATION_MAX,
                   w->tag, w->chunk_size);
  weft__chunks_init(&w->chunks, w->chunk_size);
  weft__txn_init(&w->txn);
#ifdef NDEBUG
  w->checked = cfg.checked == WEFT_CHECKED_ON;
#else
  w->checked = cfg.checked != WEFT_CHECKED_OFF;
#endif
  w->pool = cfg.pool;
  w->change_version = 1;
  w->panic = cfg.panic ? cfg.panic : default_panic;
  w->panic_user = cfg.panic_user;
  weft__mask_t none = {{0}};
  rc = weft__archetype_get(w, &none, &none, &w->root);
  if (rc) {
    weft_world_destroy(w);
    return rc;
  }
  *out = w;
  return 0;
}

void weft_world_destroy(weft_world_t *w) {
  if (!w)
    return;
  /* Buffers first (they belong to the world), then observers, which
   * reference queries. */
  /* The layers above (the scheduler owns command buffers and queries) go
   * first, in slot order. */
  for (uint32_t i = 0; i < WEFT__WORLD_EXTS; i++) {
    if (w->ext[i].fini)
      w->ext[i].fini(w);
    w->ext[i] = (weft__world_ext_t){NULL, NULL};
  }
  weft__resources_fini(w);
  weft__random_fini(w);
  weft__snapshot_fini(w);
  weft__rel_fini(w);
  weft__cmdbufs_fini(w);
  weft__obs_fini(w);
  weft__tlog_fini(w);
  weft__txn_fini(&w->txn);
  while (w->query_count)
    weft__query_free(w->queries[w->query_count - 1]);
  while (w->temps)
    weft__query_free(w->temps);
  weft__free(w->queries, 0, 16);
  for (uint32_t i = 0; i < w->arch_count; i++)
    if (w->archs[i] != &w->arch_vacant)
      weft__archetype_free(w->archs[i]);
  weft__free(w->archs, 0, 16);
  weft__free(w->arch_free, 0, 16);
  weft__free(w->arch_table, 0, 16);
  weft__chunks_fini(&w->chunks);
  weft__index_fini(&w->index);
  weft__registry_fini(&w->registry);
  weft__alloc_stats_t st = w->alloc;
  weft__free(w, sizeof(*w), 64);
  weft__alloc_heap_close(&st);
}

int weft_world_reserve(weft_world_t *w, uint32_t entities) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  WEFT_CHECK(w, entities <= w->index.capacity, WEFT_EFULL,
             "cannot reserve %u slots: capacity is %u", entities,
             w->index.capacity);
  int rc = weft__index_reserve(&w->index, &w->alloc, entities);
  if (rc == 0)
    rc = weft__index_reserve_free(&w->index, &w->alloc, entities);
  WEFT_CHECK(w, rc == 0, WEFT_ENOMEM, "out of memory reserving %u slots",
             entities);
  return 0;
}

int weft_world_clear(weft_world_t *w) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world is NULL");
  WEFT_CHECK(w, !weft__txn_in_scope(&w->txn) && !w->txn.draining, WEFT_EBUSY,
             "cannot clear while a deferred or iteration scope is open");
  /* Every chunk becomes a spare of its archetype: the memory stays. */
  for (uint32_t i = 0; i < w->arch_count; i++) {
    weft__archetype_t *a = w->archs[i];
    for (uint32_t c = 0; c < a->nchunks; c++) {
      /* Live generations are in the rows' handles. */
      weft__index_release_rows(&w->index, a->chunks[c]->entities,
                               a->chunks[c]->count);
      a->chunks[c]->count = 0;
    }
    w->chunks_live -= a->nchunks;
    w->chunks_spare += a->nchunks;
    a->nchunks = 0;
    a->tail = NULL;
    a->count = 0;
  }
  weft__index_clear(&w->index);
  weft__rel_clear(w);
  w->version++;
  return 0;
}

uint64_t weft_world_trim(weft_world_t *w) {
  uint64_t freed = 0;
  /* Trimming frees chunks an open iteration may still walk. */
  if (w && (weft__txn_in_scope(&w->txn) || w->txn.draining))
    return 0;
  for (uint32_t i = 0; w && i < w->arch_count; i++)
    freed += weft__archetype_trim(w, w->archs[i]);
  /* Destroyed buffers' arrays and the heap's kept pages wait for the
   * next use until asked: trimming is that request. */
  if (w) {
    weft__cmdbufs_trim(w);
    weft__alloc_heap_purge(&w->alloc);
  }
  return freed;
}

uint32_t weft_world_count(const weft_world_t *w) {
  return w ? w->index.alive - w->txn.reserved : 0;
}

uint64_t weft_world_structure_version(const weft_world_t *w) {
  return w ? w->version : 0;
}

void weft_world_stats(const weft_world_t *w, weft_world_stats_t *out) {
  if (!w || !out)
    return;
  memset(out, 0, sizeof(*out));
  const weft__index_t *ix = &w->index;
  out->alive = ix->alive - w->txn.reserved;
  out->staged_spawns = w->txn.reserved;
  out->retired = ix->retired;
  out->remaining = weft__index_remaining(ix);
  out->capacity = ix->capacity;
  out->slots_used = ix->hwm;
  uint64_t reserved = (uint64_t)ix->page_count * WEFT__PAGE_SIZE;
  out->slots_reserved =
      (uint32_t)(reserved < ix->capacity ? reserved : ix->capacity);
  out->components = w->registry.count;
  out->archetypes = w->arch_count - w->arch_free_n;
  out->queries = w->query_count;
  out->chunk_size = w->chunk_size;
  out->chunks_live = w->chunks_live;
  out->chunks_spare = w->chunks_spare;
  out->chunk_bytes = w->chunk_bytes;
  out->index_bytes = weft__index_bytes(ix);
  out->spawns = w->spawns;
  out->despawns = w->despawns;
  out->moves = w->moves;
  out->stale = atomic_load_explicit(&w->stale, memory_order_relaxed);
  out->commands = w->txn.commands;
  out->commands_stale = w->txn.stale;
  out->commands_dropped = w->txn.dropped;
  out->drain_waves = w->txn.waves;
  out->allocs = w->alloc.allocs;
  out->alloc_bytes = w->alloc.bytes;
  weft__cmdbuf_alloc_stats(w, &out->allocs, &out->alloc_bytes);
}

const char *weft_world_last_error(const weft_world_t *w) {
  return w ? w->errbuf : "";
}

bool weft_world_checked(const weft_world_t *w) {
  return w && w->checked;
}

uint8_t weft_world_tag(const weft_world_t *w) {
  return w ? w->tag : 0;
}

/* Writes "NAME: [file:line: ]message" into the world's error buffer. */
static void record(weft_world_t *w, int code, const char *file, int line,
                   const char *fmt, va_list ap) {
  int n = 0;
  if (file)
    n = snprintf(w->errbuf, sizeof(w->errbuf),
                 "%s: %s:%d: ", weft_strerror_name(code), file, line);
  else
    n = snprintf(w->errbuf, sizeof(w->errbuf),
                 "%s: ", weft_strerror_name(code));
  if (n < 0 || (size_t)n >= sizeof(w->errbuf))
    return;
  vsnprintf(w->errbuf + n, sizeof(w->errbuf) - (size_t)n, fmt, ap);
}

int weft__fail(const weft_world_t *cw, int code, const char *file, int line,
               const char *fmt, ...) {
  if (!cw)
    return code;
  /* The error buffer is the one field a failing reader writes; it is
   * documented as owner-thread state. */
  va_list ap;
  va_start(ap, fmt);
  record((weft_world_t *)cw, code, file, line, fmt, ap);
  va_end(ap);
  return code;
}

int weft_world_fail(weft_world_t *w, int code, const char *fmt, ...) {
  if (!w || !fmt)
    return code;
  va_list ap;
  va_start(ap, fmt);
  record(w, code, NULL, 0, fmt, ap);
  va_end(ap);
  return code;
}

void weft__panic(const weft_world_t *w, const char *file, int line,
                 const char *msg) {
  if (w && w->checked)
    w->panic(w->panic_user, file, line, msg);
}

struct weft_pool_t *weft_world_pool(const weft_world_t *w) {
  return w ? w->pool : NULL;
}
