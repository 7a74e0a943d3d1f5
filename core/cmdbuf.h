/* SPDX-License-Identifier: MIT */
/*
 * The inside of a command buffer, shared by recording (command.c) and the
 * merge that applies buffers (merge.c).
 */
#ifndef WEFT_CORE_CMDBUF_H
#define WEFT_CORE_CMDBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cmdkey.h"
#include "core/txn.h"
#include "weft/command.h"

/*
 * A recorded command, 24 bytes. The ordering key is not in it: a buffer's
 * commands come in segments of one key, each opened by a key record
 * (WEFT__OP_KEY) that carries the key in e and, in n, the merge position of
 * the next key record (ncmds for the last; set when the next one opens or
 * when the apply starts). A system records one key per chunk, so the key
 * costs a record per chunk instead of 8 bytes per command, and the merge
 * finds where a buffer stops winning by walking key records only.
 */
typedef struct weft__cmd_t {
  weft_entity_t e;  /* target: live or pending handle; a key record: the key */
  const void *data; /* value bytes, or the members of a query command */
  uint32_t n;       /* members of a query command; a key record: see above */
  uint16_t comp;
  uint8_t op;
  uint8_t inl; /* WEFT__OPF_INLINE: the value (8 bytes at most) sits in
                * data itself; 0 otherwise */
} weft__cmd_t;

_Static_assert(sizeof(weft__cmd_t) == 24, "a command is 24 bytes");

/* The value bytes a command carries, or NULL. */
static inline const void *weft__cmd_value(const weft__cmd_t *c) {
  return c->inl ? (const void *)&c->data : c->data;
}

struct weft_cmdbuf_t {
  /* What keying reads and writes, first, so that the scheduler keys a
   * buffer inline through core/cmdkey.h; the same fields by name here. */
  union {
    weft__cmdkey_t keys;
    struct {
      uint64_t key;     /* set by weft_cmd_key() */
      uint64_t seg_key; /* the key of the open segment */
      uint32_t ncmds;
      /* Recording takes the slow path when ncmds reaches this: cmds_cap,
       * or ncmds itself while a key record is due (a new key, an empty
       * buffer). */
      uint32_t cmds_lim;
    };
  };
  weft_world_t *world;
  uint32_t id;       /* 1..WEFT_CMDBUF_MAX, stamped into pending handles */
  uint32_t epoch;    /* 12 bits, advanced by each apply */
  uint32_t seg;      /* its key record */
  uint32_t nsegs;    /* key records */
  bool sorted;       /* segments opened in non-decreasing key order */
  bool refs_pending; /* a command other than a spawn names a pending handle */
  weft__spawn_run_t *run; /* the open spawn run */
  uint32_t run_cmd;       /* its command */
  uint64_t run_key;       /* the key it was recorded under */
  bool applying;          /* part of the running weft_world_apply() */
  bool dead;              /* destroyed: kept in the world's dead list */
  bool owned;             /* the scheduler's: weft_cmdbuf_destroy() refuses */
  struct weft_cmdbuf_t *next_dead;
  weft__cmd_t *cmds;
  uint32_t cmds_cap;
  uint32_t nspawns; /* pending spawns recorded this epoch */
  uint32_t nruns;   /* spawn runs (each one command record) */
  /* Merge order when not sorted: command indices (and scratch for
   * sorting the segments). */
  uint32_t *order;
  uint32_t *scratch;
  uint32_t order_cap;
  /* What the pending spawns became, by sequence. */
  weft_entity_t *spawned;
  uint32_t spawned_cap;
  uint32_t spawned_n;
  uint32_t spawned_epoch;
  bool has_results;
  weft__arena_t arena;
  weft__alloc_stats_t alloc; /* this buffer's own: recording is concurrent */
};

_Static_assert(offsetof(struct weft_cmdbuf_t, keys) == 0 &&
                   offsetof(struct weft_cmdbuf_t, key) ==
                       offsetof(weft__cmdkey_t, key) &&
                   offsetof(struct weft_cmdbuf_t, seg_key) ==
                       offsetof(weft__cmdkey_t, seg_key) &&
                   offsetof(struct weft_cmdbuf_t, ncmds) ==
                       offsetof(weft__cmdkey_t, ncmds) &&
                   offsetof(struct weft_cmdbuf_t, cmds_lim) ==
                       offsetof(weft__cmdkey_t, cmds_lim),
               "weft_cmdbuf_t: the keying fields match weft__cmdkey_t");

#define WEFT__CMD_PENDING_BIT UINT64_C(0x80000000)
#define WEFT__CMD_ID_SHIFT 32
#define WEFT__CMD_EPOCH_SHIFT 44
#define WEFT__CMD_FIELD_MASK 0xfffu

/* Empties a buffer for the next transaction, keeping its memory. A new
 * epoch makes the pending handles it issued so far stale. */
void weft__cmdbuf_restart(weft_cmdbuf_t *b);

/* Grows the order and scratch arrays to n entries. 0 or WEFT_ENOMEM. */
int weft__cmdbuf_order_room(weft_cmdbuf_t *b, uint32_t n);

#endif
