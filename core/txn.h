/* SPDX-License-Identifier: MIT */
/*
 * Transactions: the staged state of structural changes between a deferred
 * scope's start (or an apply) and the drain that makes them real.
 *
 * Each entity a transaction touches gets one stage: staged spawn, staged
 * mutate or staged despawn (or a spawn cancelled by a despawn), with the
 * list of component operations recorded for it in order. The drain folds a
 * stage's operations into one target archetype and performs one row move.
 * Stages live in one array in creation order, which is the deterministic
 * merge order, and a slot -> stage map (checked sparse-set style, so it is
 * never cleared) finds an entity's stage in O(1).
 */
#ifndef WEFT_CORE_TXN_H
#define WEFT_CORE_TXN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/alloc.h"
#include "core/archetype.h"
#include "weft/command.h"
#include "weft/entity.h"
#include "weft/error.h"

struct weft_world_t;
struct weft__archetype_t;

/* Bump allocator over a list of blocks that are kept for reuse, so that
 * steady-state recording allocates nothing and pointers stay valid until
 * the arena is reset. */
typedef struct weft__ablock_t {
  struct weft__ablock_t *next;
  size_t size;
  _Alignas(16) unsigned char data[];
} weft__ablock_t;

typedef struct weft__arena_t {
  weft__ablock_t *head;
  weft__ablock_t *tail;
  weft__ablock_t *cur;
  size_t used;  /* bytes used in cur */
  size_t taken; /* bytes handed out since the last reset, all blocks */
} weft__arena_t;

void *weft__arena_alloc(weft__arena_t *a, weft__alloc_stats_t *st, size_t n);

/* weft__arena_alloc() with the common case (room in the current block)
 * inline: recording copies a value per command. */
static inline void *weft__arena_take(weft__arena_t *a, weft__alloc_stats_t *st,
                                     size_t n) {
  n = (n + 7) & ~(size_t)7; /* values are copied with memcpy: 8 is enough */
  if (a->cur && a->used + n <= a->cur->size) {
    void *p = a->cur->data + a->used;
    a->used += n;
    a->taken += n;
    return p;
  }
  return weft__arena_alloc(a, st, n);
}

/* Makes sure that, after a reset, @p bytes in requests of at most that
 * size fit without allocating: some block holds @p bytes. */
int weft__arena_reserve(weft__arena_t *a, weft__alloc_stats_t *st,
                        size_t bytes);

/* A copy of a size-byte component value in an arena: *out is NULL when
 * there is nothing to copy (no value, or a tag). 0 or WEFT_ENOMEM. */
static inline int weft__arena_dup(weft__arena_t *a, weft__alloc_stats_t *st,
                                  const void *value, uint32_t size,
                                  const void **out) {
  *out = NULL;
  if (!value || !size)
    return 0;
  void *p = weft__arena_take(a, st, size);
  if (!p)
    return WEFT_ENOMEM;
  weft__copy_elem(p, value, size);
  *out = p;
  return 0;
}
void weft__arena_reset(weft__arena_t *a);
void weft__arena_fini(weft__arena_t *a);

/* Operations, as recorded and as staged. */
enum {
  WEFT__OP_SPAWN = 1,
  WEFT__OP_DESPAWN,
  WEFT__OP_ADD,
  WEFT__OP_SET,
  WEFT__OP_REMOVE,
  WEFT__OP_ENABLE,
  WEFT__OP_DISABLE,
  WEFT__OP_SET_Q,
  WEFT__OP_REMOVE_Q,
  WEFT__OP_DESPAWN_Q,
  WEFT__OP_KEY, /* a command buffer's key record (command.c) */
  /* Edge commands (relation_read.c): e the source, data the target and
   * the value, n 1 when a value follows the target. */
  WEFT__OP_REL_ADD,
  WEFT__OP_REL_REMOVE
};

/* Stage kinds. */
enum {
  WEFT__ST_SPAWN = 1,
  WEFT__ST_MUTATE,
  WEFT__ST_DESPAWN,
  WEFT__ST_CANCELLED /* a staged spawn despawned in the same transaction */
};

#define WEFT__TXN_NIL 0xffffffffu

/*
 * A run of recorded spawns with one component list, stored by column: the
 * values of component i for spawns [0, count) are cols[i][0..count) (zero
 * where no value was given), so the drain copies whole column slices.
 */
typedef struct weft__spawn_run_t {
  const weft_component_t *comps; /* zero-terminated, shared by runs */
  uint32_t n;                    /* components */
  uint32_t count;                /* spawns recorded */
  uint32_t cap;                  /* spawns the columns hold */
  uint32_t seq0;                 /* pending sequence of the first spawn */
  const uint32_t *sizes;         /* n value sizes (0: tag) */
  uint8_t *cols[];               /* n columns, NULL for tags */
} weft__spawn_run_t;

/* A spawn run placed in bulk by the drain, with the reserved handles of
 * its spawns (out[0..run->count)). */
typedef struct weft__fast_spawn_t {
  const weft__spawn_run_t *run;
  weft_entity_t *out; /* where the handles go (the buffer's results) */
  uint32_t got;       /* spawns [0, got) have a slot */
  /* The slots, in the order weft__index_issue() takes them: spawns
   * [0, nsweep) take sweep0.., the next nsingle came off the free list one
   * by one (their handles are in out[]), the rest take fresh0.. */
  uint32_t sweep0;
  uint32_t nsweep;
  uint32_t nsingle;
  uint32_t fresh0;
} weft__fast_spawn_t;

/* One component operation of a stage. */
typedef struct weft__op_t {
  /* Bytes to write (NULL zero-fills), or with WEFT__OPF_INLINE the bytes
   * themselves: a value of at most 8 bytes recorded in a command rides
   * here, so the drain does not read the command again. */
  const void *value;
  uint32_t next; /* next op of the stage or WEFT__TXN_NIL */
  uint16_t comp;
  uint8_t op;
  uint8_t flags; /* WEFT__OPF_* */
} weft__op_t;

#define WEFT__OPF_LIVE 1u   /* set by the drain: this op's write survives */
#define WEFT__OPF_INLINE 2u /* value holds the bytes */
/* A stage's op0 also carries the stage's kind, in these bits. */
#define WEFT__OPF_KIND_SHIFT 2u
#define WEFT__OPF_KIND (7u << WEFT__OPF_KIND_SHIFT)

static inline bool weft__op_live(const weft__op_t *op) {
  return (op->flags & WEFT__OPF_LIVE) != 0;
}

static inline void weft__op_set_live(weft__op_t *op, bool live) {
  op->flags =
      (uint8_t)((op->flags & ~WEFT__OPF_LIVE) | (live ? WEFT__OPF_LIVE : 0u));
}

/* The bytes an op writes, or NULL to zero-fill. */
static inline const void *weft__op_value(const weft__op_t *op) {
  return (op->flags & WEFT__OPF_INLINE) ? (const void *)&op->value : op->value;
}

/*
 * A stage, 24 bytes: a big apply writes one per entity and reads it back,
 * so its size is memory traffic. The kind rides in op0's flags.
 */
typedef struct weft__stage_t {
  weft_entity_t e; /* the real handle (alive, or reserved for a spawn) */
  /* The first op, inline (op 0: none yet). Most stages hold one op; the
   * others form a ring in the txn's op array: op0.next is the last one
   * (WEFT__TXN_NIL: op0 only), whose next is the second op, so appending
   * needs no tail field. weft__op_after() walks them in order. */
  weft__op_t op0;
} weft__stage_t;

_Static_assert(sizeof(weft__stage_t) == 24, "a stage is 24 bytes");

static inline uint32_t weft__stage_kind(const weft__stage_t *s) {
  return (s->op0.flags & WEFT__OPF_KIND) >> WEFT__OPF_KIND_SHIFT;
}

/* op0's flags for a stage of kind `kind` whose op0 has flags `flags`. */
static inline uint8_t weft__kind_flags(uint32_t kind, uint32_t flags) {
  return (uint8_t)((flags & ~WEFT__OPF_KIND) | (kind << WEFT__OPF_KIND_SHIFT));
}

/* The op after op in the ops of a stage whose op0 is first (or a copy of
 * it), in recording order; NULL after the last. */
static inline weft__op_t *
weft__op_after(weft__op_t *ops, const weft__op_t *first, const weft__op_t *op) {
  uint32_t last = first->next;
  if (last == WEFT__TXN_NIL || op == &ops[last])
    return NULL;
  return op == first ? &ops[ops[last].next] : &ops[op->next];
}

/* A query-wide set or remove, applied after the per-entity stages. */
typedef struct weft__batch_t {
  const weft_entity_t *members;
  const void *value;
  uint32_t n;
  uint16_t comp;
  uint8_t op;
} weft__batch_t;

typedef struct weft__txn_t {
  /* First, so that it shares a cache line with the entity index's cold
   * fields and the chunk table (see weft_world_t). The routing word, read
   * once by every structural call: open iteration scopes in the low bits
   * (changed by any reading thread), plus WEFT__ROUTE_OWNER while the
   * owner's state (deferred scopes, a drain, observers) sends structural
   * calls down the staged path. */
  _Atomic uint32_t route;
  weft__stage_t *stages;
  uint32_t nstages;
  uint32_t stages_cap;
  uint32_t open_from; /* stages below this belong to a wave being drained */
  uint32_t kinds[5];  /* open stages by kind, for skipping empty phases */
  bool fast_spawns;   /* this apply places its spawns in bulk */
  weft__fast_spawn_t *fast; /* those spawns, in merge order */
  uint32_t nfast;
  uint32_t fast_cap;
  weft__op_t *ops;
  uint32_t nops;
  uint32_t ops_cap;
  uint32_t *stage_of; /* slot -> stage index, valid if it points back */
  uint32_t stage_of_cap;
  weft__batch_t *batches;
  uint32_t nbatches;
  uint32_t batches_cap;
  uint32_t batches_from;
  struct weft__group_run_t *group_runs; /* scratch of group moves */
  uint32_t group_cap;
  weft__arena_t arena; /* values staged through scopes and observers */
  uint32_t *merge_pos; /* weft_world_apply() cursors beyond 64 buffers */
  uint32_t merge_pos_cap;
  uint32_t reserved;   /* slots held by staged spawns */
  uint32_t batch_hold; /* slots a running batch spawn still needs */
  uint32_t depth;      /* open deferred scopes */
  bool draining;       /* a drain is running */
  int last_error;      /* the last drain's result */
  uint32_t
      unwinds; /* unwinds so far: iterators opened before one hold no scope */
  uint64_t commands; /* commands applied */
  uint64_t stale;    /* commands dropped for a stale handle */
  uint64_t dropped;  /* stages dropped by a cascade or full world */
  uint64_t waves;    /* drain waves run */
  /* The buffers of this world by id (index 0 unused). */
  struct weft_cmdbuf_t **bufs;
  uint32_t nbufs;
  uint32_t bufs_cap;
  uint32_t live_bufs;
  uint16_t *buf_epochs; /* next epoch for a buffer that reuses an id */
  uint32_t buf_epochs_cap;
  /* Destroyed buffers: their memory stays with the world (reused by
   * weft_cmdbuf_create(), freed with the world), so that a second destroy
   * or a record into one finds a dead buffer, not freed memory. */
  struct weft_cmdbuf_t *dead_bufs;
  /* The query of the iteration that opened the first iteration scope, while
   * it is open (0 otherwise): iterations started while another is open
   * count in their query instead (weft_query_t.iters), so a lone one pays
   * no read-modify-write for weft_query_destroy()'s check. Relaxed
   * atomic: reader threads set it. */
  _Atomic uintptr_t solo_query;
} weft__txn_t;

void weft__txn_init(weft__txn_t *t);
void weft__txn_fini(weft__txn_t *t);

#define WEFT__ROUTE_OWNER 0x80000000u
#define WEFT__ROUTE_ITERS 0x7fffffffu

/* Open iteration scopes. */
static inline uint32_t weft__txn_iters(const weft__txn_t *t) {
  return atomic_load_explicit(&t->route, memory_order_relaxed) &
         WEFT__ROUTE_ITERS;
}

/* True inside any scope (deferred or iteration). */
static inline bool weft__txn_in_scope(const weft__txn_t *t) {
  return t->depth != 0 || weft__txn_iters(t) != 0;
}

/* Brings WEFT__ROUTE_OWNER up to date after the owner changed depth,
 * draining or its observers (txn.c). */
void weft__route_sync(struct weft_world_t *w);

/* Opens / closes one level of deferred scope, keeping the routing word in
 * step; closing clamps at zero and does not drain. Owner thread. */
void weft__scope_open(struct weft_world_t *w);
void weft__scope_close(struct weft_world_t *w);

/* The staged forms of the entity.h structural calls (stage.c). */
int weft__staged_spawn(struct weft_world_t *w, const weft_component_t *comps,
                       const void *const *values, weft_entity_t *out);
int weft__staged_despawn(struct weft_world_t *w, weft_entity_t e);
int weft__staged_op(struct weft_world_t *w, uint32_t op, weft_entity_t e,
                    weft_component_t c, const void *value);

/* Iteration scopes (query.c): enter on iterator start, leave at its end.
 * Enter returns the number of iteration scopes open before it. */
uint32_t weft__txn_iter_enter(const struct weft_world_t *w);
void weft__txn_iter_leave(const struct weft_world_t *w);

/* Applies everything staged (the outermost scope closed). */
int weft__txn_drain(struct weft_world_t *w);

/* Reserves slots for a spawn run (out[0..count)) in merge order and queues
 * it for bulk placement in the next drain's first wave. */
int weft__txn_fast_spawn(struct weft_world_t *w, const weft__spawn_run_t *run,
                         weft_entity_t *out);
/* Places the queued fast spawn runs, run by run of equal component lists
 * (the drain's first wave; spawn_fast.c). */
int weft__txn_place_fast(struct weft_world_t *w);

/* Drains if no scope is open, no drain runs and something is staged. */
int weft__txn_settle(struct weft_world_t *w);

/* Queues a query-wide set/remove for the drain (stage.h has the rest). */
int weft__stage_batch(struct weft_world_t *w, uint32_t op, weft_component_t c,
                      const void *value, const weft_entity_t *members,
                      uint32_t n);

/* Takes a free slot for a staged spawn: the handle is issued but not live. */
int weft__reserve_slot(struct weft_world_t *w, weft_entity_t *out);
/* Gives a reserved slot back (one a staged spawn holds, or one a bulk spawn
 * counted without touching its record); its handle goes stale. */
void weft__unreserve_slot(struct weft_world_t *w, uint32_t slot);

/* Adds the command buffers' allocation counters (command.c). */
void weft__cmdbuf_alloc_stats(const struct weft_world_t *w, uint64_t *allocs,
                              uint64_t *bytes);

/* A buffer's own allocation counters; tests set fail_in to inject
 * failures into recording (no thread may be recording into it). */
struct weft_cmdbuf_t;
weft__alloc_stats_t *weft__cmdbuf_alloc(struct weft_cmdbuf_t *b);

/* Marks a buffer as the scheduler's (a system's ctx->cmd): the public
 * weft_cmdbuf_destroy() refuses it; weft__cmdbuf_free() frees it. */
void weft__cmdbuf_own(struct weft_cmdbuf_t *b);

/* Destroys any live buffer, the scheduler's included (command.c). */
void weft__cmdbuf_free(struct weft_cmdbuf_t *b);

/* Frees every buffer, live or destroyed: the world's end (command.c). */
void weft__cmdbufs_fini(struct weft_world_t *w);

/* Frees the arrays that destroyed buffers keep for the next buffer made
 * (weft_world_trim(); command.c). */
void weft__cmdbufs_trim(struct weft_world_t *w);

/* What a command buffer holds right now (before its apply). */
typedef struct weft__cmdbuf_usage_t {
  uint32_t cmds;   /* command records */
  uint32_t spawns; /* pending spawns */
  size_t bytes;    /* arena bytes: values, spawn columns, members */
} weft__cmdbuf_usage_t;

struct weft_cmdbuf_t;

/* Reads a buffer's usage. Owner thread, no thread recording into it. */
void weft__cmdbuf_usage(const struct weft_cmdbuf_t *b, weft__cmdbuf_usage_t *u);

/*
 * Grows a buffer so that recording @p u (or less) and applying it later
 * allocates nothing: the scheduler gives every worker's buffer room for a
 * whole segment's commands, because which worker records how much depends
 * on timing. Owner thread. 0 or WEFT_ENOMEM.
 */
int weft__cmdbuf_reserve(struct weft_cmdbuf_t *b,
                         const weft__cmdbuf_usage_t *u);

#endif /* WEFT_CORE_TXN_H */
